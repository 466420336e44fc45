#include "fake_transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_FRAME, KIND_CLOSED, KIND_TOO_LARGE };

static char *copy(const char *s, size_t n)
{
    char *d = (char *)malloc(n + 1);
    if (d == NULL) abort();
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int f_connect(void *ctx, const char *url, const char *token, uint32_t timeout_ms)
{
    fake_transport_t *f = (fake_transport_t *)ctx;
    (void)timeout_ms;
    f->connects++;
    snprintf(f->url, sizeof f->url, "%s", url);
    f->had_token = token != NULL;
    snprintf(f->token, sizeof f->token, "%s", token != NULL ? token : "");
    if (f->connect_result != LLM_OK) return f->connect_result;
    f->open = 1;
    return LLM_OK;
}

static int f_send(void *ctx, char *data, size_t len)
{
    fake_transport_t *f = (fake_transport_t *)ctx;
    /* The headroom is the transport's: write all of it, so a client that did not reserve it
     * corrupts memory the sanitizers see. */
    memset(data - FAKE_HEADROOM, 0xA5, FAKE_HEADROOM);
    if (!f->open) return LLM_ERR_CLOSED;
    if (f->send_result != LLM_OK) return f->send_result;
    if (strlen(data) != len) {
        fprintf(stderr, "fake transport: frame length %zu but strlen %zu\n", len, strlen(data));
        abort();
    }
    if (f->sent_count == FAKE_MAX_FRAMES) abort();
    f->sent[f->sent_count++] = copy(data, len);
    if (f->server != NULL) f->server(f, f->sent[f->sent_count - 1], f->server_user);
    return LLM_OK;
}

static int f_poll(void *ctx, const char **frame, size_t *len, uint32_t timeout_ms)
{
    fake_transport_t *f = (fake_transport_t *)ctx;
    int kind;
    (void)timeout_ms;
    f->polls++;
    free(f->delivered);
    f->delivered = NULL;
    if (!f->open) return LLM_ERR_CLOSED;
    if (f->in_count == 0) return 0;
    kind = f->inbox_kind[f->in_head];
    f->delivered = f->inbox[f->in_head];
    *len = f->inbox_sizes[f->in_head];
    f->in_head = (f->in_head + 1) % FAKE_MAX_FRAMES;
    f->in_count--;
    if (kind == KIND_CLOSED) {
        f->open = 0;
        return LLM_ERR_CLOSED;
    }
    if (kind == KIND_TOO_LARGE) return LLM_ERR_TOO_LARGE;
    *frame = f->delivered;
    return 1;
}

static void f_close(void *ctx)
{
    fake_transport_t *f = (fake_transport_t *)ctx;
    f->closes++;
    f->open = 0;
}

void fake_init(fake_transport_t *f)
{
    memset(f, 0, sizeof *f);
    f->iface.ctx = f;
    f->iface.send_headroom = FAKE_HEADROOM;
    f->iface.connect = f_connect;
    f->iface.send_text = f_send;
    f->iface.poll = f_poll;
    f->iface.close = f_close;
    f->connect_result = LLM_OK;
    f->send_result = LLM_OK;
}

void fake_forget_sent(fake_transport_t *f)
{
    for (size_t i = 0; i < f->sent_count; i++) free(f->sent[i]);
    f->sent_count = 0;
}

void fake_free(fake_transport_t *f)
{
    fake_forget_sent(f);
    while (f->in_count > 0) {
        free(f->inbox[f->in_head]);
        f->in_head = (f->in_head + 1) % FAKE_MAX_FRAMES;
        f->in_count--;
    }
    free(f->delivered);
    f->delivered = NULL;
}

static void push(fake_transport_t *f, int kind, char *data, size_t size)
{
    size_t at;
    if (f->in_count == FAKE_MAX_FRAMES) abort();
    at = (f->in_head + f->in_count) % FAKE_MAX_FRAMES;
    f->inbox[at] = data;
    f->inbox_sizes[at] = size;
    f->inbox_kind[at] = kind;
    f->in_count++;
}

void fake_push(fake_transport_t *f, const char *frame)
{
    /* exactly the frame's bytes, no NUL after them: the client must not read past len */
    size_t n = strlen(frame);
    char *d = (char *)malloc(n > 0 ? n : 1);
    if (d == NULL) abort();
    memcpy(d, frame, n);
    push(f, KIND_FRAME, d, n);
}

void fake_push_closed(fake_transport_t *f)
{
    push(f, KIND_CLOSED, NULL, 0);
}

void fake_push_too_large(fake_transport_t *f, size_t size)
{
    push(f, KIND_TOO_LARGE, NULL, size);
}

const char *fake_sent(const fake_transport_t *f, size_t i)
{
    return i < f->sent_count ? f->sent[i] : NULL;
}

static int is_type(const char *frame, const char *type)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "{\"type\":\"%s\"", type);
    return strncmp(frame, prefix, strlen(prefix)) == 0;
}

const char *fake_last_of(const fake_transport_t *f, const char *type)
{
    for (size_t i = f->sent_count; i > 0; i--) {
        if (is_type(f->sent[i - 1], type)) return f->sent[i - 1];
    }
    return NULL;
}

size_t fake_count_of(const fake_transport_t *f, const char *type)
{
    size_t n = 0;
    for (size_t i = 0; i < f->sent_count; i++) n += is_type(f->sent[i], type);
    return n;
}
