/* A transport for tests: frames the client sends are recorded, frames the test (or a
 * scripted server reacting to what was sent) queues are handed out by poll. */
#ifndef FAKE_TRANSPORT_H
#define FAKE_TRANSPORT_H

#include <stddef.h>

#include "llm_client.h"

#define FAKE_MAX_FRAMES 256
#define FAKE_HEADROOM 16

typedef struct fake_transport fake_transport_t;

/* Called with every frame the client sends, to queue the server's answers. */
typedef void (*fake_server_t)(fake_transport_t *fake, const char *frame, void *user);

struct fake_transport {
    llm_transport_t iface;
    /* set by the test */
    int connect_result;   /* returned by connect (LLM_OK by default) */
    int send_result;      /* returned by send_text when not LLM_OK */
    fake_server_t server;
    void *server_user;
    /* recorded */
    int connects, closes, polls;
    int open;
    char url[256];
    char token[256];
    int had_token;
    char *sent[FAKE_MAX_FRAMES];
    size_t sent_count;
    /* queued; an entry may be a marker (see fake_push_closed, fake_push_too_large) */
    char *inbox[FAKE_MAX_FRAMES];
    size_t inbox_sizes[FAKE_MAX_FRAMES];
    int inbox_kind[FAKE_MAX_FRAMES];
    size_t in_head, in_count;
    char *delivered; /* the frame last handed out, freed at the next poll */
};

void fake_init(fake_transport_t *fake);
void fake_free(fake_transport_t *fake);
/* Queues a frame for poll. */
void fake_push(fake_transport_t *fake, const char *frame);
/* Queues the peer closing the connection. */
void fake_push_closed(fake_transport_t *fake);
/* Queues a frame over the transport's maximum, of size bytes. */
void fake_push_too_large(fake_transport_t *fake, size_t size);
/* The i-th frame sent (0-based), or NULL. */
const char *fake_sent(const fake_transport_t *fake, size_t i);
/* The last frame sent whose type is type, or NULL. */
const char *fake_last_of(const fake_transport_t *fake, const char *type);
size_t fake_count_of(const fake_transport_t *fake, const char *type);
void fake_forget_sent(fake_transport_t *fake);

#endif
