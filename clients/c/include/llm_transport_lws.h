/*
 * The llm_transport_t of Linux and macOS, on libwebsockets (4.x): ws:// and wss://, the
 * bearer token at the upgrade, one connection at a time, serviced only inside the
 * transport's own calls (no thread of its own). Every wait is bounded by its timeout, except
 * name resolution: libwebsockets without LWS_WITH_SYS_ASYNC_DNS (Debian's) resolves host
 * names with a blocking getaddrinfo() inside connect.
 */
#ifndef LLM_TRANSPORT_LWS_H
#define LLM_TRANSPORT_LWS_H

#include <stddef.h>

#include "llm_client.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* Largest frame accepted; a larger one is dropped and reported (LLM_ERR_TOO_LARGE). */
    size_t max_frame;
    /* Largest frame sent; the client's send buffer should be max_send + send_headroom. */
    size_t max_send;
    /* PEM file of the CA to trust for wss:// instead of the system's, or NULL. */
    const char *ca_file;
    /* How long a send may wait for the socket, in ms (0: 5000). */
    unsigned send_timeout_ms;
    /* Non-zero: libwebsockets logs warnings and errors to stderr. */
    int verbose;
} llm_lws_options_t;

/* Allocates the transport and its receive buffer (once, here, never while running). NULL when
 * out of memory or max_frame is 0. */
llm_transport_t *llm_lws_transport_create(const llm_lws_options_t *options);

/* Why the last connect failed (libwebsockets' words, e.g. the HTTP status of a refused
 * upgrade), "" if it did not. */
const char *llm_lws_transport_last_error(const llm_transport_t *transport);

void llm_lws_transport_destroy(llm_transport_t *transport);

#ifdef __cplusplus
}
#endif

#endif
