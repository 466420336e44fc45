/* Internal: entry points for the fuzz target and the tests, not for applications. */
#ifndef LLM_CLIENT_INTERNAL_H
#define LLM_CLIENT_INTERNAL_H

#include <stddef.h>

#include "llm_client.h"

/* Handles one received frame as llm_client_poll() does: events, tool calls, replies. */
int llm_client_handle_frame(llm_client_t *client, const char *data, size_t len);

#endif
