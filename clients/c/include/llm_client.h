/*
 * llm_client: a C99 client for the LLM gateway's WebSocket API, for devices.
 *
 * The core knows frames, the session and the device's tools; it knows nothing of sockets.
 * Bytes move through an llm_transport_t (llm_transport_lws.h on Linux and macOS; see
 * README.md to port it). Everything happens inside llm_client_poll(), on the caller's
 * thread: no threads, no timers, no allocation besides cJSON's own while a frame is parsed
 * and the tree a tool handler returns. Outgoing frames are written into one buffer the
 * application owns; a frame that does not fit is refused with LLM_ERR_NO_ROOM, never cut.
 */
#ifndef LLM_CLIENT_H
#define LLM_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef ESP_PLATFORM
#include "cJSON.h"
#else
#include <cjson/cJSON.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes of the fixed buffers inside llm_client_t, terminating NUL included. The gateway's
 * session ids are UUIDs (36 chars); longer ids are refused as CLIENT_BAD_FRAME. */
#define LLM_SESSION_ID_SIZE 65
#define LLM_TURN_ID_SIZE 65
#define LLM_LANGUAGE_SIZE 8
/* Frames nested deeper than this are refused before cJSON sees them: cJSON parses and frees
 * recursively, and a small task stack would not survive a hostile 1000-level frame. */
#define LLM_MAX_JSON_DEPTH 32

/* Results of the library's functions. */
typedef enum {
    LLM_OK = 0,
    LLM_ERR_ARG = -1,       /* bad argument, bad tool table, or text that is not UTF-8 */
    LLM_ERR_STATE = -2,     /* not now: not connected, not ready, or a turn is running */
    LLM_ERR_NO_ROOM = -3,   /* the frame does not fit the send buffer */
    LLM_ERR_NOMEM = -4,     /* cJSON could not allocate */
    LLM_ERR_TRANSPORT = -5, /* the transport failed to connect or to send */
    LLM_ERR_CLOSED = -6,    /* the connection is closed */
    LLM_ERR_TIMEOUT = -7,   /* the transport gave up waiting */
    LLM_ERR_TOO_LARGE = -8  /* transport: a received frame was over its maximum (dropped) */
} llm_result_t;

const char *llm_result_name(int result);

/*
 * How bytes reach the gateway. One connection at a time; every function is called from the
 * thread that calls llm_client_*(). Return LLM_OK or a negative llm_result_t.
 */
typedef struct llm_transport {
    void *ctx;
    /* Bytes the transport may write just before the payload given to send_text (for its own
     * framing, e.g. LWS_PRE); the client reserves them at the start of its send buffer. */
    size_t send_headroom;
    /* Opens a WebSocket to url (ws:// or wss://), sending "Authorization: Bearer <token>" at
     * the upgrade when bearer_token is not NULL. Returns once open, failed, or timed out. */
    int (*connect)(void *ctx, const char *url, const char *bearer_token, uint32_t timeout_ms);
    /* Sends one complete text message; data[len] is a NUL, data[-send_headroom .. -1] is the
     * transport's to write. Returns once the message is handed to the network. */
    int (*send_text)(void *ctx, char *data, size_t len);
    /* Waits up to timeout_ms for one complete text message. Returns 1 with *frame and *len set
     * (valid until the next poll or close), 0 when none came, LLM_ERR_TOO_LARGE when one was
     * over the transport's maximum (it is dropped, *len says how big it was, the connection
     * stays up), LLM_ERR_CLOSED when the peer closed, or another negative result. */
    int (*poll)(void *ctx, const char **frame, size_t *len, uint32_t timeout_ms);
    /* Closes the connection if open; safe to call twice. */
    void (*close)(void *ctx);
} llm_transport_t;

/*
 * A tool the device offers to the model. Called from llm_client_poll() when a tool_callback
 * names it; arguments may be NULL when the gateway sent none. On success return 0 and set
 * *result to a cJSON tree (or leave it NULL for a null result): the client sends it and frees
 * it. On failure return non-zero and write a short UTF-8 message into error (error_size
 * bytes); the model reads it as TOOL_EXECUTION_FAILED.
 */
typedef int (*llm_tool_handler_t)(const cJSON *arguments, cJSON **result, char *error,
                                  size_t error_size, void *user);

/* Who may call a tool. Agents and users reach a device's tools through the gateway's other
 * protocols; the model is the one of this device's own turns. */
typedef enum {
    LLM_VISIBILITY_BOTH = 0, /* the default: not sent */
    LLM_VISIBILITY_AGENTS,   /* never offered to the model: reboot, firmware update */
    LLM_VISIBILITY_MODEL     /* offered only to this device's model */
} llm_tool_visibility_t;

typedef struct {
    const char *name;        /* the spec's rules: [A-Za-z_][A-Za-z0-9_.]*, 1-64, no "..", no trailing "." */
    const char *description; /* the model reads it to decide when to call */
    const char *parameters;  /* JSON Schema of the arguments, an object, as JSON text */
    llm_tool_handler_t handler;
    void *user;
    llm_tool_visibility_t visibility; /* last, so a zeroed or designated initializer means BOTH */
} llm_tool_t;

/* Timings the gateway may put on a final answer; -1 where absent. */
typedef struct {
    int32_t first_token_ms, first_sentence_ms, total_ms, llm_ms, tools_ms;
} llm_timing_t;

typedef enum {
    /* The session is open (resumed or new) and the tools are registered: text may be sent. */
    LLM_EVENT_READY,
    /* An llm_response: a sentence while streaming (is_final 0, seq 0,1,2...), or the answer;
     * with origin_push set, speech the gateway pushed (see llm_event_t). */
    LLM_EVENT_RESPONSE,
    /* The turn is over (status idle, or the connection closed: failed = 1). */
    LLM_EVENT_TURN_END,
    /* An error frame from the gateway, or a CLIENT_* error found here (see README). */
    LLM_EVENT_ERROR,
    /* A status frame not reported otherwise: processing, waiting_for_tools, cancelled, a
     * connected that moved the connection to another session, idle outside a turn. */
    LLM_EVENT_STATUS,
    /* A tool ran: on the server (tool_call), or here (after its tool_result was sent). */
    LLM_EVENT_TOOL,
    LLM_EVENT_PONG,
    /* The connection closed (u.error.code names the transport's result); a TURN_END follows
     * for each turn still open. Call llm_client_connect() again: the session is resumed. */
    LLM_EVENT_CLOSED
} llm_event_type_t;

/* An event; every pointer in it is valid only during the callback. */
typedef struct {
    llm_event_type_t type;
    const char *turn_id; /* the turn the frame belongs to, "" when the gateway sent none */
    union {
        struct { const char *session_id; int resumed; } ready;
        struct {
            const char *content; size_t length; int is_final; int seq; llm_timing_t timing;
            const char *reminder_id; /* on a pushed answer a reminder made; NULL otherwise */
        } response;
        struct { int cancelled; int failed; } turn_end;
        struct { const char *code; const char *message; const char *details; } error;
        struct { const char *status; const char *session_id; const cJSON *data; } status;
        struct { const char *name; int on_device; int success; } tool;
    } u;
    /* 1 on the events of a push (frames with "origin": "push"): speech no text of this client
     * asked for, such as a reminder, under the push's own turn_id. A RESPONSE is to be spoken
     * as any other; STATUS, TOOL and ERROR events say how the pushed turn goes. A push never
     * opens, answers or ends a turn of this client's: it has no TURN_END, its status idle is a
     * STATUS event, and its tool callbacks run the device's tools as a turn's do. */
    int origin_push;
} llm_event_t;

typedef void (*llm_event_handler_t)(const llm_event_t *event, void *user);

typedef struct {
    const llm_transport_t *transport;
    const llm_tool_t *tools; /* kept by pointer: must outlive the client */
    size_t tool_count;
    /* Every outgoing frame is written here (after transport->send_headroom bytes): the
     * largest text, tool result or register_tools frame must fit. */
    char *send_buffer;
    size_t send_buffer_size;
    llm_event_handler_t on_event;
    void *user;
} llm_client_config_t;

/* configure settings; fields left at their LLM_UNSET value are not sent. */
#define LLM_UNSET (-1)
typedef struct {
    double temperature;  /* 0..1, or < 0 for unset */
    int max_tokens;      /* > 0, or LLM_UNSET */
    int enable_context;  /* 0/1: the model sees the session's history */
    int clean_response;  /* 0/1: the gateway strips Markdown and emoji for speech */
    int stream;          /* 0/1: sentence partials before the final answer */
    const char *language; /* e.g. "zh", or NULL */
} llm_settings_t;

/* Settings with every field unset. */
llm_settings_t llm_settings_none(void);

typedef enum {
    LLM_STATE_DISCONNECTED,
    LLM_STATE_CONNECTING, /* connected at the socket, waiting for the session and the tools */
    LLM_STATE_READY,      /* no turn running */
    LLM_STATE_IN_TURN
} llm_state_t;

/* Turns sent and not yet closed by status idle: the running one, plus turns cancelled by a
 * barge-in whose last frames are still arriving. */
#define LLM_MAX_TURNS 4

typedef struct {
    char id[LLM_TURN_ID_SIZE];
    unsigned char confirmed, answered, cancelled, failed;
} llm_turn_t;

/* The client; allocate it anywhere (static, stack), treat the fields as private. */
typedef struct {
    llm_client_config_t cfg;
    llm_state_t state;
    int phase;
    int resume_pending, resumed;
    char session_id[LLM_SESSION_ID_SIZE];
    char fresh_session_id[LLM_SESSION_ID_SIZE];
    llm_turn_t turns[LLM_MAX_TURNS];
    unsigned turn_head, turn_count;
    char ended_turn_id[LLM_TURN_ID_SIZE];
    uint32_t turn_counter;
    int has_settings;
    llm_settings_t settings;
    char language[LLM_LANGUAGE_SIZE];
} llm_client_t;

/* Checks the tool table (names, schemas) and the buffers; nothing is sent. */
int llm_client_init(llm_client_t *client, const llm_client_config_t *config);

/* Opens the connection. The gateway's session, tool registration and any session to resume
 * follow through llm_client_poll(), ending in LLM_EVENT_READY (or LLM_EVENT_ERROR). */
int llm_client_connect(llm_client_t *client, const char *url, const char *bearer_token,
                       uint32_t timeout_ms);

/* Waits up to timeout_ms for one frame and handles it (events, tool calls). Returns 1 when a
 * frame was handled, 0 when none came, LLM_ERR_CLOSED once the connection is gone. */
int llm_client_poll(llm_client_t *client, uint32_t timeout_ms);

/* Sends what the user said. Needs a ready client whose last turn has been answered or
 * cancelled (a barge-in: cancel, then send the new text at once); LLM_ERR_STATE otherwise. */
int llm_client_send_text(llm_client_t *client, const char *text);

/* Stops the latest turn, even one already answered whose audio is still playing; spoken
 * (may be NULL) is the part of the answer actually played, so the session's history holds
 * what the user heard. Responses and tool calls of that turn arriving later are dropped;
 * its status idle still ends it with LLM_EVENT_TURN_END (cancelled = 1). */
int llm_client_cancel(llm_client_t *client, const char *spoken);

/* Sends configure now if ready, and again after every reconnect. */
int llm_client_configure(llm_client_t *client, const llm_settings_t *settings);

int llm_client_ping(llm_client_t *client);

/* Ends the session: the gateway forgets it and gives this connection a new one. */
int llm_client_end_session(llm_client_t *client);

/* The session to resume at the next connect (e.g. one saved across a reboot); NULL or ""
 * forgets it. Resuming needs the same token as the one that created the session. */
int llm_client_set_session(llm_client_t *client, const char *session_id);

/* The current session id, "" before the first connect. */
const char *llm_client_session_id(const llm_client_t *client);

llm_state_t llm_client_state(const llm_client_t *client);

/* Closes the connection; the session id is kept for the next connect. */
void llm_client_close(llm_client_t *client);

#ifdef __cplusplus
}
#endif

#endif /* LLM_CLIENT_H */
