/* Internal: a received frame, parsed and checked, with typed views into its cJSON tree. */
#ifndef LLM_FRAME_H
#define LLM_FRAME_H

#include <stddef.h>

#include "llm_client.h"

typedef enum {
    LLM_FRAME_UNKNOWN, /* a type this client does not know: ignored, as the spec asks */
    LLM_FRAME_STATUS,
    LLM_FRAME_RESPONSE,
    LLM_FRAME_TOOL_CALL,
    LLM_FRAME_TOOL_CALLBACK,
    LLM_FRAME_TOOLS_REGISTERED,
    LLM_FRAME_ERROR,
    LLM_FRAME_PONG
} llm_frame_type_t;

typedef struct {
    cJSON *root;
    llm_frame_type_t type;
    const char *turn_id; /* "" when absent */
    int push;            /* "origin": "push": a frame of speech the gateway pushed */
    /* status */
    const char *status;
    const char *session_id; /* data.session_id, NULL when absent */
    const cJSON *data;
    /* llm_response */
    const char *content;
    int is_final;
    int seq; /* -1 when absent */
    llm_timing_t timing;
    const char *reminder_id; /* NULL when absent */
    /* tool_call, tool_callback */
    const char *tool_name;
    int success;
    const char *call_id;
    const cJSON *arguments;
    /* tools_registered */
    const cJSON *tools;
    /* error */
    const char *code;
    const char *message;
    const char *details;
} llm_frame_t;

/* LLM_OK with *frame filled (release it); LLM_ERR_NOMEM; or LLM_ERR_ARG with *problem saying
 * why the bytes are not a frame this client can use (nothing to release then). */
int llm_frame_parse(const char *data, size_t len, llm_frame_t *frame, const char **problem);
void llm_frame_release(llm_frame_t *frame);

#endif
