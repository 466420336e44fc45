/*
 * libwebsockets transport. lws runs only inside connect, send_text, poll and close, each
 * bounded by a scheduled wake-up (lws_service() itself waits as long as lws likes).
 *
 * Receiving: one buffer of max_frame bytes. When a message is complete, reading from the
 * socket is paused (rx flow control) until the next poll, so the frame handed out stays
 * intact while the client answers it; lws holds back what else arrived meanwhile.
 */
#include "llm_transport_lws.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL_MAX 512
#define AUTH_MAX 1024
#define CLOSE_WAIT_MS 1000

typedef struct {
    llm_transport_t iface;
    llm_lws_options_t opt;
    char ca_file[URL_MAX];

    struct lws_context *context;
    struct lws *wsi;
    lws_sorted_usec_list_t sul, nudge;
    int woken;

    int opened, failed, closed, closing;
    char error[160];
    char url[URL_MAX];
    char path[URL_MAX];
    char auth[AUTH_MAX];

    /* receiving */
    char *rx;
    size_t rx_len;    /* bytes of the message being received (counted past max_frame) */
    int rx_overflow;  /* the message being received is over max_frame */
    int rx_ready;     /* a whole message is in rx */
    int rx_dropped;   /* a message over max_frame ended; rx_len says how big it was */
    int rx_paused;
    int rx_delivered; /* rx was handed out by the last poll */

    /* sending */
    char *tx;
    size_t tx_len;
    int tx_pending, tx_failed;
} lws_transport_t;

static lws_transport_t *of_wsi(struct lws *wsi)
{
    return (lws_transport_t *)lws_context_user(lws_get_context(wsi));
}

static void set_error(lws_transport_t *t, const char *a, const char *b)
{
    snprintf(t->error, sizeof t->error, "%s%s%s", a, b != NULL && b[0] != '\0' ? ": " : "", b != NULL ? b : "");
}

static int on_lws(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    lws_transport_t *t = of_wsi(wsi);
    (void)user;
    if (t == NULL) return 0;

    switch (reason) {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
        if (t->auth[0] != '\0') {
            unsigned char **p = (unsigned char **)in;
            unsigned char *end = *p + len;
            if (lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, (const unsigned char *)t->auth,
                                             (int)strlen(t->auth), p, end)) {
                return -1;
            }
        }
        break;

    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        t->opened = 1;
        break;

    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        char status[48] = "";
        unsigned int http = lws_http_client_http_response(wsi);
        if (http != 0) snprintf(status, sizeof status, " (HTTP %u)", http);
        const char *why = in != NULL ? (const char *)in : "connection failed";
        /* OpenSSL's own words ("error:00000001:lib(0)") do not say what to check */
        const char *hint = strstr(why, "SSL") != NULL ? "TLS handshake failed (is the server's certificate trusted?): " : "";
        snprintf(t->error, sizeof t->error, "%s%s%s", hint, why, status);
        t->failed = 1;
        t->closed = 1;
        t->wsi = NULL;
        break;
    }

    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (lws_frame_is_binary(wsi)) break; /* the protocol is text; nothing to do with binary */
        if (lws_is_first_fragment(wsi)) {
            t->rx_len = 0;
            t->rx_overflow = 0;
        }
        if (t->rx_ready || t->rx_dropped) {
            /* Flow control should make this impossible; never overwrite a frame handed out. */
            set_error(t, "internal", "message received while the previous one was unread");
            t->failed = 1;
            return -1;
        }
        if (!t->rx_overflow && len <= t->opt.max_frame - t->rx_len) {
            memcpy(t->rx + t->rx_len, in, len);
        } else {
            t->rx_overflow = 1;
        }
        t->rx_len += len;
        if (lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0) {
            if (t->rx_overflow) t->rx_dropped = 1;
            else t->rx_ready = 1;
            lws_rx_flow_control(wsi, 0);
            t->rx_paused = 1;
        }
        break;

    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (t->closing) {
            lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
            return -1;
        }
        if (t->tx_pending) {
            int n = lws_write(wsi, (unsigned char *)t->tx, t->tx_len, LWS_WRITE_TEXT);
            t->tx_pending = 0;
            if (n < (int)t->tx_len) {
                t->tx_failed = 1;
                return -1;
            }
        }
        break;

    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (len >= 2) {
            char code[16];
            const unsigned char *b = (const unsigned char *)in;
            snprintf(code, sizeof code, "%u", (unsigned)((b[0] << 8) | b[1]));
            set_error(t, "closed by the server with code", code);
        } else {
            set_error(t, "closed by the server", NULL);
        }
        break;

    case LWS_CALLBACK_CLIENT_CLOSED:
        t->closed = 1;
        t->wsi = NULL;
        break;

    default:
        break;
    }
    return 0;
}

static const struct lws_protocols PROTOCOLS[] = {
    {"llm-gateway", on_lws, 0, 4096, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void nudged(lws_sorted_usec_list_t *sul)
{
    (void)sul;
}

static void wake(lws_sorted_usec_list_t *sul)
{
    lws_transport_t *t = lws_container_of(sul, lws_transport_t, sul);
    t->woken = 1;
    /* lws runs ripe timers before it works out how long to sleep: with this one gone, the
     * same lws_service() call would sleep until lws's next timer of its own (30 s). */
    lws_sul_schedule(t->context, 0, &t->nudge, nudged, LWS_US_PER_MS);
}

static void arm(lws_transport_t *t, uint32_t timeout_ms)
{
    t->woken = 0;
    lws_sul_schedule(t->context, 0, &t->sul, wake, (lws_usec_t)timeout_ms * LWS_US_PER_MS);
}

static void disarm(lws_transport_t *t)
{
    lws_sul_cancel(&t->sul);
    lws_sul_cancel(&t->nudge);
}

/* Services lws until *done, the connection is gone, or timeout_ms passed. */
static void service_until(lws_transport_t *t, const int *done, uint32_t timeout_ms)
{
    arm(t, timeout_ms);
    while (!*done && !t->woken && !t->failed && (t->wsi != NULL || !t->opened)) {
        if (lws_service(t->context, 0) < 0) break;
        if (t->closed) break;
    }
    disarm(t);
}

static void destroy_context(lws_transport_t *t)
{
    if (t->context != NULL) lws_context_destroy(t->context);
    t->context = NULL;
    t->wsi = NULL;
}

static int tr_connect(void *ctx, const char *url, const char *token, uint32_t timeout_ms)
{
    lws_transport_t *t = (lws_transport_t *)ctx;
    struct lws_context_creation_info info;
    struct lws_client_connect_info ci;
    const char *prot = NULL, *ads = NULL, *path = NULL;
    int port = 0;
    int tls;

    if (t->context != NULL) return LLM_ERR_STATE;
    t->error[0] = '\0';
    if (strlen(url) >= sizeof t->url) {
        set_error(t, "URL too long", NULL);
        return LLM_ERR_ARG;
    }
    snprintf(t->url, sizeof t->url, "%s", url);
    if (lws_parse_uri(t->url, &prot, &ads, &port, &path) != 0 || ads == NULL || ads[0] == '\0') {
        set_error(t, "not a ws:// or wss:// URL", url);
        return LLM_ERR_ARG;
    }
    if (strcmp(prot, "ws") == 0) tls = 0;
    else if (strcmp(prot, "wss") == 0) tls = 1;
    else {
        set_error(t, "not a ws:// or wss:// URL", url);
        return LLM_ERR_ARG;
    }
    /* lws_parse_uri drops the path's leading '/', except of a bare "/" */
    if (path == NULL) path = "";
    snprintf(t->path, sizeof t->path, "%s%s", path[0] == '/' ? "" : "/", path);
    t->auth[0] = '\0';
    if (token != NULL && token[0] != '\0') {
        if (strlen(token) + 8 >= sizeof t->auth) {
            set_error(t, "token too long", NULL);
            return LLM_ERR_ARG;
        }
        snprintf(t->auth, sizeof t->auth, "Bearer %s", token);
    }

    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = PROTOCOLS;
    info.gid = (gid_t)-1;
    info.uid = (uid_t)-1;
    info.user = t;
    info.fd_limit_per_thread = 16; /* else lws sizes its tables by the process's fd limit */
    if (tls) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        if (t->ca_file[0] != '\0') info.client_ssl_ca_filepath = t->ca_file;
    }
    t->context = lws_create_context(&info);
    if (t->context == NULL) {
        set_error(t, "could not create the libwebsockets context", NULL);
        return LLM_ERR_TRANSPORT;
    }

    t->opened = t->failed = t->closed = t->closing = 0;
    t->rx_len = 0;
    t->rx_overflow = t->rx_ready = t->rx_dropped = t->rx_paused = t->rx_delivered = 0;
    t->tx_pending = t->tx_failed = 0;

    memset(&ci, 0, sizeof ci);
    ci.context = t->context;
    ci.address = ads;
    ci.port = port;
    ci.path = t->path;
    ci.host = ads;
    ci.origin = ads;
    ci.ssl_connection = tls ? LCCSCF_USE_SSL : 0;
    ci.alpn = "http/1.1";
    ci.local_protocol_name = PROTOCOLS[0].name;
    ci.pwsi = &t->wsi;
    if (lws_client_connect_via_info(&ci) == NULL && !t->failed) {
        set_error(t, "could not start connecting to", url);
        destroy_context(t);
        return LLM_ERR_TRANSPORT;
    }
    service_until(t, &t->opened, timeout_ms);
    if (!t->opened || t->wsi == NULL) {
        int timed_out = !t->failed && !t->closed;
        if (timed_out) set_error(t, "connect timed out", url);
        destroy_context(t);
        return timed_out ? LLM_ERR_TIMEOUT : LLM_ERR_TRANSPORT;
    }
    return LLM_OK;
}

static int tr_send(void *ctx, char *data, size_t len)
{
    lws_transport_t *t = (lws_transport_t *)ctx;
    int done = 0;
    if (t->wsi == NULL || t->closed) return LLM_ERR_CLOSED;
    if (len > t->opt.max_send) return LLM_ERR_NO_ROOM;
    t->tx = data;
    t->tx_len = len;
    t->tx_pending = 1;
    t->tx_failed = 0;
    lws_callback_on_writable(t->wsi);
    arm(t, t->opt.send_timeout_ms);
    while (t->tx_pending && !t->woken && !t->closed && t->wsi != NULL) {
        if (lws_service(t->context, 0) < 0) break;
    }
    disarm(t);
    done = !t->tx_pending && !t->tx_failed;
    t->tx_pending = 0;
    if (done) return LLM_OK;
    if (t->closed || t->wsi == NULL) return LLM_ERR_CLOSED;
    return t->woken ? LLM_ERR_TIMEOUT : LLM_ERR_TRANSPORT;
}

static int tr_poll(void *ctx, const char **frame, size_t *len, uint32_t timeout_ms)
{
    lws_transport_t *t = (lws_transport_t *)ctx;
    int have;

    if (t->context == NULL) return LLM_ERR_CLOSED;
    if (t->rx_delivered || t->rx_dropped) {
        /* the caller is done with the last frame: let lws deliver the next */
        t->rx_delivered = t->rx_ready = t->rx_dropped = 0;
        t->rx_len = 0;
        t->rx_overflow = 0;
    }
    if (t->rx_paused && t->wsi != NULL && !t->rx_ready) {
        t->rx_paused = 0;
        lws_rx_flow_control(t->wsi, 1 | LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
    }
    have = t->rx_ready || t->rx_dropped;
    if (!have && !t->closed) {
        /* wait for a whole message; a message arriving also ends the wait */
        arm(t, timeout_ms);
        while (!t->rx_ready && !t->rx_dropped && !t->woken && !t->closed && t->wsi != NULL) {
            if (lws_service(t->context, 0) < 0) break;
        }
        disarm(t);
    }
    if (t->rx_dropped) {
        *len = t->rx_len;
        return LLM_ERR_TOO_LARGE;
    }
    if (t->rx_ready) {
        t->rx_delivered = 1;
        *frame = t->rx;
        *len = t->rx_len;
        return 1;
    }
    if (t->closed || t->wsi == NULL || t->failed) return LLM_ERR_CLOSED;
    return 0;
}

static void tr_close(void *ctx)
{
    lws_transport_t *t = (lws_transport_t *)ctx;
    if (t->context == NULL) return;
    if (t->wsi != NULL && !t->closed) {
        int gone = 0;
        t->closing = 1;
        if (t->rx_paused) lws_rx_flow_control(t->wsi, 1 | LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
        lws_callback_on_writable(t->wsi);
        service_until(t, &gone, CLOSE_WAIT_MS);
    }
    destroy_context(t);
    t->closed = 1;
}

llm_transport_t *llm_lws_transport_create(const llm_lws_options_t *options)
{
    lws_transport_t *t;
    if (options == NULL || options->max_frame == 0 || options->max_send == 0) return NULL;
    if (options->ca_file != NULL && strlen(options->ca_file) >= URL_MAX) return NULL;
    t = (lws_transport_t *)calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->opt = *options;
    if (t->opt.send_timeout_ms == 0) t->opt.send_timeout_ms = 5000;
    if (options->ca_file != NULL) snprintf(t->ca_file, sizeof t->ca_file, "%s", options->ca_file);
    t->opt.ca_file = NULL;
    t->rx = (char *)malloc(options->max_frame);
    if (t->rx == NULL) {
        free(t);
        return NULL;
    }
    lws_set_log_level(options->verbose ? (LLL_ERR | LLL_WARN) : 0, NULL);
    t->iface.ctx = t;
    t->iface.send_headroom = LWS_PRE;
    t->iface.connect = tr_connect;
    t->iface.send_text = tr_send;
    t->iface.poll = tr_poll;
    t->iface.close = tr_close;
    return &t->iface;
}

const char *llm_lws_transport_last_error(const llm_transport_t *transport)
{
    return transport != NULL ? ((const lws_transport_t *)transport->ctx)->error : "";
}

void llm_lws_transport_destroy(llm_transport_t *transport)
{
    lws_transport_t *t;
    if (transport == NULL) return;
    t = (lws_transport_t *)transport->ctx;
    tr_close(t);
    free(t->rx);
    free(t);
}
