/*
 * Fuzz target: received frames, through the parser and the client's state machine.
 *
 * The input is split at NUL bytes into frames, fed one after another to a client that is
 * connected, has its tools registered and a turn running, so tool callbacks, responses,
 * cancels and turn ends all get exercised. Oracles besides the sanitizers: every frame the
 * client sends must be valid JSON and valid UTF-8, and every event's strings readable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_client.h"
#include "llm_client_internal.h"
#include "llm_frame.h"
#include "llm_json.h"

#define HEADROOM 8

static int sink_connect(void *ctx, const char *url, const char *token, uint32_t timeout_ms)
{
    (void)ctx;
    (void)url;
    (void)token;
    (void)timeout_ms;
    return LLM_OK;
}

static int sink_send(void *ctx, char *data, size_t len)
{
    cJSON *parsed;
    (void)ctx;
    memset(data - HEADROOM, 0, HEADROOM);
    if (strlen(data) != len || !llm_utf8_valid(data, len)) abort();
    parsed = cJSON_ParseWithLength(data, len);
    if (!cJSON_IsObject(parsed)) {
        fprintf(stderr, "client sent a frame that is not a JSON object: %s\n", data);
        abort();
    }
    cJSON_Delete(parsed);
    return LLM_OK;
}

static int sink_poll(void *ctx, const char **frame, size_t *len, uint32_t timeout_ms)
{
    (void)ctx;
    (void)frame;
    (void)len;
    (void)timeout_ms;
    return 0;
}

static void sink_close(void *ctx)
{
    (void)ctx;
}

static const llm_transport_t SINK = {NULL, HEADROOM, sink_connect, sink_send, sink_poll, sink_close};

/* Echoes its arguments back as the result, so fuzzed JSON goes out again. */
static int echo(const cJSON *arguments, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)user;
    if (cJSON_GetObjectItemCaseSensitive(arguments, "fail") != NULL) {
        snprintf(error, error_size, "asked to fail \"quoted\"\n");
        return 1;
    }
    *result = arguments != NULL ? cJSON_Duplicate(arguments, 1) : NULL;
    return 0;
}

static const llm_tool_t TOOLS[] = {
    {"get_battery", "battery", "{\"type\":\"object\"}", echo, NULL, LLM_VISIBILITY_BOTH},
    {"set_volume", "volume", "{\"type\":\"object\",\"properties\":{\"volume\":{\"type\":\"integer\"}}}", echo, NULL, LLM_VISIBILITY_BOTH},
};

static size_t touched;

static void touch(const char *s)
{
    if (s != NULL) touched += strlen(s);
}

static void on_event(const llm_event_t *ev, void *user)
{
    (void)user;
    touch(ev->turn_id);
    switch (ev->type) {
    case LLM_EVENT_READY: touch(ev->u.ready.session_id); break;
    case LLM_EVENT_RESPONSE:
        if (strlen(ev->u.response.content) != ev->u.response.length) abort();
        touch(ev->u.response.reminder_id);
        break;
    case LLM_EVENT_ERROR:
        touch(ev->u.error.code);
        touch(ev->u.error.message);
        touch(ev->u.error.details);
        break;
    case LLM_EVENT_STATUS:
        touch(ev->u.status.status);
        touch(ev->u.status.session_id);
        break;
    case LLM_EVENT_TOOL: touch(ev->u.tool.name); break;
    default: break;
    }
}

static const char *const HANDSHAKE[] = {
    "{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"s1\"}}",
    "{\"type\":\"tools_registered\",\"count\":2,\"tools\":[]}",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char buffer[HEADROOM + 2048];
    llm_client_t client;
    llm_client_config_t cfg;
    llm_frame_t frame;
    const char *problem;
    size_t start = 0;

    /* the parser alone, on the whole input */
    if (llm_frame_parse((const char *)data, size, &frame, &problem) == LLM_OK) llm_frame_release(&frame);

    memset(&cfg, 0, sizeof cfg);
    cfg.transport = &SINK;
    cfg.tools = TOOLS;
    cfg.tool_count = 2;
    cfg.send_buffer = buffer;
    cfg.send_buffer_size = sizeof buffer;
    cfg.on_event = on_event;
    if (llm_client_init(&client, &cfg) != LLM_OK) abort();
    if (size > 0 && (data[0] & 1)) llm_client_set_session(&client, "previous-session");
    if (llm_client_connect(&client, "ws://fuzz/", NULL, 0) != LLM_OK) abort();
    for (size_t i = 0; i < sizeof HANDSHAKE / sizeof HANDSHAKE[0]; i++) {
        llm_client_handle_frame(&client, HANDSHAKE[i], strlen(HANDSHAKE[i]));
    }
    llm_client_send_text(&client, "hello");

    while (start <= size) {
        const uint8_t *nul = start < size ? memchr(data + start, 0, size - start) : NULL;
        size_t end = nul != NULL ? (size_t)(nul - data) : size;
        size_t n = end - start;
        /* copy: the client must not rely on anything past the frame's length */
        char *copy = (char *)malloc(n > 0 ? n : 1);
        if (copy == NULL) abort();
        if (n > 0) memcpy(copy, data + start, n);
        llm_client_handle_frame(&client, copy, n);
        free(copy);
        /* between frames, what a device does: barge in, or ask again */
        if (n % 7 == 3) llm_client_cancel(&client, n % 2 ? "played part" : NULL);
        if (n % 5 == 1) llm_client_send_text(&client, "again");
        if (n % 11 == 4) llm_client_ping(&client);
        start = end + 1;
    }
    llm_client_close(&client);
    return 0;
}
