/*
 * Unit tests of the core over the fake transport: frames in, frames out, events seen. The
 * last group runs the example program's logic (device_app.c) against a scripted fake server.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_app.h"
#include "fake_transport.h"
#include "llm_client.h"
#include "llm_client_internal.h"
#include "llm_json.h"

static int failures;
static const char *current_test;

#define CHECK(cond)                                                                                    \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", __FILE__, __LINE__, current_test, #cond); \
            failures++;                                                                                \
        }                                                                                              \
    } while (0)

#define CHECK_STR(actual, expected)                                                                         \
    do {                                                                                                    \
        const char *a_ = (actual), *e_ = (expected);                                                        \
        if (a_ == NULL || strcmp(a_, e_) != 0) {                                                            \
            fprintf(stderr, "%s:%d: [%s] %s\n    is: %s\n  want: %s\n", __FILE__, __LINE__, current_test, #actual, \
                    a_ != NULL ? a_ : "(null)", e_);                                                        \
            failures++;                                                                                     \
        }                                                                                                   \
    } while (0)

#define CHECK_INT(actual, expected)                                                                       \
    do {                                                                                                  \
        long a_ = (long)(actual), e_ = (long)(expected);                                                  \
        if (a_ != e_) {                                                                                   \
            fprintf(stderr, "%s:%d: [%s] %s is %ld, want %ld\n", __FILE__, __LINE__, current_test, #actual, a_, e_); \
            failures++;                                                                                   \
        }                                                                                                 \
    } while (0)

/* ---- fixture --------------------------------------------------------------------------- */

#define LOG_MAX 64
#define LOG_LINE 600

typedef struct {
    fake_transport_t fake;
    llm_client_t client;
    llm_client_config_t cfg;
    char buffer[FAKE_HEADROOM + 4096];
    char log[LOG_MAX][LOG_LINE];
    size_t logged;
    llm_timing_t timing;
    /* an action run from inside the event callback, as applications do */
    void (*react)(const llm_event_t *ev);
} fixture_t;

static fixture_t F;

/*
 * One line of the event log: "push " first for a pushed event, so the tests compare pushes by
 * their text. A line that does not fit is a failure, never a cut line compared as if whole.
 */
static void logf_(const llm_event_t *ev, const char *fmt, ...)
{
    va_list ap;
    const char *prefix = ev->origin_push ? "push " : "";
    size_t used = strlen(prefix);
    char *line;
    int written;
    if (F.logged == LOG_MAX) {
        fprintf(stderr, "[%s] event log full\n", current_test);
        failures++;
        return;
    }
    line = F.log[F.logged++];
    memcpy(line, prefix, used + 1);
    va_start(ap, fmt);
    written = vsnprintf(line + used, LOG_LINE - used, fmt, ap);
    va_end(ap);
    if (written < 0 || (size_t)written >= LOG_LINE - used) {
        fprintf(stderr, "[%s] event log line over %d bytes: %s...\n", current_test, LOG_LINE - 1, line);
        failures++;
    }
}

static const char *or_dash(const char *s)
{
    return s != NULL ? s : "-";
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static void record(const llm_event_t *ev, void *user)
{
    (void)user;
    switch (ev->type) {
    case LLM_EVENT_READY: logf_(ev, "READY session=%s resumed=%d", ev->u.ready.session_id, ev->u.ready.resumed); break;
    case LLM_EVENT_RESPONSE:
        logf_(ev, "RESPONSE turn=%s final=%d seq=%d content=%s%s%s", ev->turn_id, ev->u.response.is_final, ev->u.response.seq,
              ev->u.response.content, ev->u.response.reminder_id != NULL ? " reminder=" : "",
              or_empty(ev->u.response.reminder_id));
        CHECK_INT(ev->u.response.length, strlen(ev->u.response.content));
        F.timing = ev->u.response.timing;
        break;
    case LLM_EVENT_TURN_END:
        logf_(ev, "TURN_END turn=%s cancelled=%d failed=%d", ev->turn_id, ev->u.turn_end.cancelled, ev->u.turn_end.failed);
        break;
    case LLM_EVENT_ERROR:
        logf_(ev, "ERROR turn=%s code=%s message=%s details=%s", ev->turn_id, ev->u.error.code, ev->u.error.message,
              or_dash(ev->u.error.details));
        break;
    case LLM_EVENT_STATUS:
        logf_(ev, "STATUS turn=%s status=%s session=%s", ev->turn_id, ev->u.status.status, or_dash(ev->u.status.session_id));
        break;
    case LLM_EVENT_TOOL:
        logf_(ev, "TOOL turn=%s name=%s device=%d success=%d", ev->turn_id, ev->u.tool.name, ev->u.tool.on_device,
              ev->u.tool.success);
        break;
    case LLM_EVENT_PONG: logf_(ev, "PONG"); break;
    case LLM_EVENT_CLOSED: logf_(ev, "CLOSED %s", ev->u.error.code); break;
    }
    if (F.react != NULL) F.react(ev);
}

/* Checks the events logged since the last call, in order, then forgets them. */
static void expect_events(int line, ...)
{
    va_list ap;
    size_t i = 0;
    const char *want;
    va_start(ap, line);
    while ((want = va_arg(ap, const char *)) != NULL) {
        if (i >= F.logged) {
            fprintf(stderr, "test_client.c:%d: [%s] missing event: %s\n", line, current_test, want);
            failures++;
        } else if (strcmp(F.log[i], want) != 0) {
            fprintf(stderr, "test_client.c:%d: [%s] event %zu\n    is: %s\n  want: %s\n", line, current_test, i, F.log[i], want);
            failures++;
        }
        i++;
    }
    va_end(ap);
    for (; i < F.logged; i++) {
        fprintf(stderr, "test_client.c:%d: [%s] unexpected event: %s\n", line, current_test, F.log[i]);
        failures++;
    }
    F.logged = 0;
}
#define EXPECT_EVENTS(...) expect_events(__LINE__, __VA_ARGS__, (const char *)NULL)

/* ---- tools ----------------------------------------------------------------------------- */

static int battery_calls;
static int tool_battery(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)args;
    (void)error;
    (void)error_size;
    (void)user;
    battery_calls++;
    *result = cJSON_CreateObject();
    cJSON_AddNumberToObject(*result, "level", 85);
    cJSON_AddBoolToObject(*result, "charging", 0);
    return 0;
}

static int tool_volume(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "volume");
    (void)user;
    if (!cJSON_IsNumber(v) || v->valuedouble > 100) {
        snprintf(error, error_size, "设备连接超时");
        return 1;
    }
    *result = cJSON_CreateObject();
    cJSON_AddNumberToObject(*result, "volume", v->valuedouble);
    return 0;
}

static int tool_huge(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    static char text[6000];
    (void)args;
    (void)error;
    (void)error_size;
    (void)user;
    memset(text, 'x', sizeof text - 1);
    *result = cJSON_CreateString(text);
    return 0;
}

static int tool_not_utf8(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)args;
    (void)error;
    (void)error_size;
    (void)user;
    *result = cJSON_CreateString("\xff\xfe");
    return 0;
}

static int tool_quiet_failure(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)args;
    (void)result;
    (void)error;
    (void)error_size;
    (void)user;
    return 1;
}

static int tool_garbled_failure(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)args;
    (void)result;
    (void)user;
    snprintf(error, error_size, "bad \xc3");
    return 1;
}

static int tool_null(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)args;
    (void)result;
    (void)error;
    (void)error_size;
    (void)user;
    return 0;
}

#define SCHEMA_EMPTY "{\"type\":\"object\",\"properties\":{},\"required\":[]}"
#define SCHEMA_VOLUME "{\"type\":\"object\",\"properties\":{\"volume\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":100}},\"required\":[\"volume\"]}"

static const llm_tool_t TOOLS[] = {
    {"get_battery", "获取设备当前电量百分比", SCHEMA_EMPTY, tool_battery, NULL, LLM_VISIBILITY_BOTH},
    {"set_volume", "设置设备音量", SCHEMA_VOLUME, tool_volume, NULL, LLM_VISIBILITY_BOTH},
    {"dump_log", "returns a lot", SCHEMA_EMPTY, tool_huge, NULL, LLM_VISIBILITY_BOTH},
    {"bad_bytes", "returns bytes that are not UTF-8", SCHEMA_EMPTY, tool_not_utf8, NULL, LLM_VISIBILITY_BOTH},
    {"quiet", "fails without saying why", SCHEMA_EMPTY, tool_quiet_failure, NULL, LLM_VISIBILITY_BOTH},
    {"nothing", "succeeds with no result", SCHEMA_EMPTY, tool_null, NULL, LLM_VISIBILITY_BOTH},
    {"garbled", "fails with a message that is not UTF-8", SCHEMA_EMPTY, tool_garbled_failure, NULL, LLM_VISIBILITY_BOTH},
};
#define TOOL_COUNT (sizeof TOOLS / sizeof TOOLS[0])

static void setup_with(const llm_tool_t *tools, size_t count)
{
    fake_free(&F.fake);
    memset(&F, 0, sizeof F);
    fake_init(&F.fake);
    F.cfg.transport = &F.fake.iface;
    F.cfg.tools = tools;
    F.cfg.tool_count = count;
    F.cfg.send_buffer = F.buffer;
    F.cfg.send_buffer_size = sizeof F.buffer;
    F.cfg.on_event = record;
    CHECK_INT(llm_client_init(&F.client, &F.cfg), LLM_OK);
    battery_calls = 0;
}

static void setup(void)
{
    setup_with(TOOLS, TOOL_COUNT);
}

/* Polls until the fake's inbox is empty. */
static void pump(void)
{
    for (int i = 0; i < 100 && F.fake.in_count > 0; i++) llm_client_poll(&F.client, 0);
    CHECK_INT(F.fake.in_count, 0);
}

static void push(const char *frame)
{
    fake_push(&F.fake, frame);
}

static void connect_ready(const char *session_id)
{
    char frame[256];
    CHECK_INT(llm_client_connect(&F.client, "ws://gateway/", "tok", 1000), LLM_OK);
    snprintf(frame, sizeof frame, "{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"%s\"},\"timestamp\":\"2025-02-21T10:30:00.000Z\"}", session_id);
    push(frame);
    pump();
    push("{\"type\":\"tools_registered\",\"count\":7,\"tools\":[]}");
    pump();
    /* READY is checked here; with an F.react the test checks what followed it too */
    if (F.react == NULL) {
        char ready[256];
        snprintf(ready, sizeof ready, "READY session=%s resumed=0", session_id);
        EXPECT_EVENTS(ready);
    }
}

/* A sent frame, parsed; NULL when absent. */
static cJSON *sent_json(const char *frame)
{
    cJSON *root;
    if (frame == NULL) return NULL;
    root = cJSON_Parse(frame);
    CHECK(cJSON_IsObject(root));
    return root;
}

/* The value at a dotted path as compact JSON text, or "(absent)". */
static const char *at(const cJSON *root, const char *path)
{
    static char out[2048];
    char key[128];
    const cJSON *item = root;
    const char *p = path;
    while (item != NULL && *p != '\0') {
        size_t n = strcspn(p, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        item = cJSON_IsArray(item) ? cJSON_GetArrayItem(item, atoi(key)) : cJSON_GetObjectItemCaseSensitive(item, key);
        p += n;
        if (*p == '.') p++;
    }
    if (item == NULL) return "(absent)";
    if (!cJSON_PrintPreallocated((cJSON *)item, out, sizeof out, 0)) return "(too long)";
    return out;
}

/* ---- init ------------------------------------------------------------------------------ */

static void test_init_checks_tools_and_buffers(void)
{
    llm_client_t c;
    llm_client_config_t cfg;
    llm_tool_t tool = {"get_battery", "d", SCHEMA_EMPTY, tool_battery, NULL, LLM_VISIBILITY_BOTH};
    static const char *bad_names[] = {"", "1tool", "tool.", "tool..name", "has space", "dash-name",
                                      "x123456789012345678901234567890123456789012345678901234567890abcd"};
    static const char *good_names[] = {"get_battery", "_private", "device.light.turn_on",
                                       "x123456789012345678901234567890123456789012345678901234567890abc"};
    static const char *bad_schemas[] = {"", "[]", "\"object\"", "{\"type\":", "{} trailing", "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"};
    char small[FAKE_HEADROOM + 40];

    fake_free(&F.fake);
    memset(&F, 0, sizeof F);
    fake_init(&F.fake);
    memset(&cfg, 0, sizeof cfg);
    cfg.transport = &F.fake.iface;
    cfg.send_buffer = F.buffer;
    cfg.send_buffer_size = sizeof F.buffer;
    cfg.tools = &tool;
    cfg.tool_count = 1;
    CHECK_INT(llm_client_init(&c, &cfg), LLM_OK);
    CHECK_INT(llm_client_state(&c), LLM_STATE_DISCONNECTED);
    CHECK_STR(llm_client_session_id(&c), "");

    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        tool.name = bad_names[i];
        if (llm_client_init(&c, &cfg) != LLM_ERR_ARG) {
            fprintf(stderr, "  accepted bad tool name \"%s\"\n", bad_names[i]);
            failures++;
        }
    }
    for (size_t i = 0; i < sizeof good_names / sizeof good_names[0]; i++) {
        tool.name = good_names[i];
        if (llm_client_init(&c, &cfg) != LLM_OK) {
            fprintf(stderr, "  refused good tool name \"%s\"\n", good_names[i]);
            failures++;
        }
    }
    tool.name = "get_battery";
    for (size_t i = 0; i < sizeof bad_schemas / sizeof bad_schemas[0]; i++) {
        tool.parameters = bad_schemas[i];
        if (llm_client_init(&c, &cfg) != LLM_ERR_ARG) {
            fprintf(stderr, "  accepted bad schema %s\n", bad_schemas[i]);
            failures++;
        }
    }
    tool.parameters = SCHEMA_EMPTY;
    tool.handler = NULL;
    CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_ARG);
    tool.handler = tool_battery;
    tool.description = "";
    CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_ARG);
    tool.description = "\xc3\x28";
    CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_ARG);
    tool.description = "d";

    /* two tools of one name */
    cfg.tools = TOOLS;
    cfg.tool_count = 2;
    CHECK_INT(llm_client_init(&c, &cfg), LLM_OK);
    {
        llm_tool_t twice[2] = {TOOLS[0], TOOLS[0]};
        cfg.tools = twice;
        CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_ARG);
    }

    /* a send buffer the tool table does not fit */
    cfg.tools = TOOLS;
    cfg.tool_count = 2;
    cfg.send_buffer = small;
    cfg.send_buffer_size = sizeof small;
    CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_ARG); /* below headroom + 64 */
    {
        static char medium[FAKE_HEADROOM + 200];
        cfg.send_buffer = medium;
        cfg.send_buffer_size = sizeof medium;
        CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_NO_ROOM);
        cfg.tool_count = 0;
        CHECK_INT(llm_client_init(&c, &cfg), LLM_OK);
    }
    cfg.transport = NULL;
    CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_ARG);
    CHECK_INT(llm_client_init(NULL, &cfg), LLM_ERR_ARG);
}

/* ---- connecting ------------------------------------------------------------------------ */

static void test_connect_registers_tools_then_ready(void)
{
    cJSON *sent;
    setup();
    CHECK_INT(llm_client_send_text(&F.client, "too early"), LLM_ERR_STATE);
    CHECK_INT(llm_client_connect(&F.client, "ws://gateway:9400/", "secret", 1000), LLM_OK);
    CHECK_STR(F.fake.url, "ws://gateway:9400/");
    CHECK_STR(F.fake.token, "secret");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_CONNECTING);
    CHECK_INT(llm_client_connect(&F.client, "ws://gateway:9400/", NULL, 1000), LLM_ERR_STATE);
    CHECK_INT(llm_client_send_text(&F.client, "still early"), LLM_ERR_STATE);
    CHECK_INT(F.fake.sent_count, 0);

    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"abc123-def456\"},\"timestamp\":\"2025-02-21T10:30:00.000Z\"}");
    pump();
    CHECK_STR(llm_client_session_id(&F.client), "abc123-def456");
    CHECK_INT(F.fake.sent_count, 1);
    sent = sent_json(fake_sent(&F.fake, 0));
    CHECK_STR(at(sent, "type"), "\"register_tools\"");
    CHECK_STR(at(sent, "tools.0"), "{\"name\":\"get_battery\",\"description\":\"获取设备当前电量百分比\",\"parameters\":" SCHEMA_EMPTY "}");
    CHECK_STR(at(sent, "tools.1.parameters"), SCHEMA_VOLUME);
    CHECK_STR(at(sent, "tools.5.name"), "\"nothing\"");
    CHECK_STR(at(sent, "tools.7"), "(absent)");
    cJSON_Delete(sent);
    EXPECT_EVENTS(NULL);
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_CONNECTING);

    push("{\"type\":\"tools_registered\",\"count\":2,\"tools\":[{\"name\":\"get_battery\",\"status\":\"registered\"},{\"name\":\"set_volume\",\"status\":\"registered\"}],\"timestamp\":\"x\"}");
    pump();
    EXPECT_EVENTS("READY session=abc123-def456 resumed=0");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
    CHECK_INT(F.fake.sent_count, 1); /* no configure: nothing was configured */
}

static void test_connect_failure_is_returned(void)
{
    setup();
    F.fake.connect_result = LLM_ERR_TRANSPORT;
    CHECK_INT(llm_client_connect(&F.client, "ws://nowhere/", NULL, 10), LLM_ERR_TRANSPORT);
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_DISCONNECTED);
    CHECK_INT(llm_client_poll(&F.client, 0), LLM_ERR_CLOSED);
    CHECK(!F.fake.had_token);
    EXPECT_EVENTS(NULL);
}

static void test_without_tools_ready_on_connected(void)
{
    setup_with(NULL, 0);
    CHECK_INT(llm_client_connect(&F.client, "ws://g/", NULL, 10), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"s0\"}}");
    pump();
    EXPECT_EVENTS("READY session=s0 resumed=0");
    CHECK_INT(F.fake.sent_count, 0);
}

static void test_registration_failures_are_errors_with_their_code(void)
{
    setup();
    CHECK_INT(llm_client_connect(&F.client, "ws://g/", NULL, 10), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"s\"}}");
    push("{\"type\":\"tools_registered\",\"count\":1,\"tools\":[{\"name\":\"get_battery\",\"status\":\"registered\"},"
         "{\"name\":\"set_volume\",\"status\":\"failed\",\"error\":\"Tool name already exists\",\"code\":\"TOOL_REGISTRATION_FAILED\"},"
         "{\"name\":\"dump_log\",\"status\":\"failed\",\"error\":\"Invalid JSON Schema\",\"code\":\"INVALID_TOOL_PARAMETERS\"},"
         "{\"name\":\"quiet\",\"status\":\"failed\"}]}");
    pump();
    EXPECT_EVENTS("ERROR turn= code=TOOL_REGISTRATION_FAILED message=Tool name already exists details=set_volume",
                  "ERROR turn= code=INVALID_TOOL_PARAMETERS message=Invalid JSON Schema details=dump_log",
                  "ERROR turn= code=TOOL_REGISTRATION_FAILED message=Tool registration failed details=quiet",
                  "READY session=s resumed=0");
}

static void test_tools_disabled_error_still_gets_ready(void)
{
    setup();
    CHECK_INT(llm_client_connect(&F.client, "ws://g/", NULL, 10), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"s\"}}");
    push("{\"type\":\"error\",\"code\":\"TOOL_REGISTRATION_FAILED\",\"message\":\"Client tools are disabled on this server\",\"timestamp\":\"x\"}");
    pump();
    EXPECT_EVENTS("ERROR turn= code=TOOL_REGISTRATION_FAILED message=Client tools are disabled on this server details=-",
                  "READY session=s resumed=0");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
}

/* ---- turns ----------------------------------------------------------------------------- */

static void test_text_turn(void)
{
    cJSON *sent;
    setup();
    connect_ready("s1");
    fake_forget_sent(&F.fake);
    CHECK_INT(llm_client_send_text(&F.client, "今天天气怎么样？ \"quoted\"\n\ttab\x01"), LLM_OK);
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_IN_TURN);
    sent = sent_json(fake_sent(&F.fake, 0));
    CHECK_STR(at(sent, "type"), "\"text_input\"");
    CHECK_STR(at(sent, "text"), "\"今天天气怎么样？ \\\"quoted\\\"\\n\\ttab\\u0001\"");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(sent, "text")));
    if (cJSON_IsString(cJSON_GetObjectItem(sent, "text"))) {
        CHECK_STR(cJSON_GetObjectItem(sent, "text")->valuestring, "今天天气怎么样？ \"quoted\"\n\ttab\x01");
    }
    CHECK_STR(at(sent, "session_id"), "\"s1\"");
    CHECK_STR(at(sent, "turn_id"), "\"t1\"");
    cJSON_Delete(sent);
    CHECK_INT(llm_client_send_text(&F.client, "second while the first runs"), LLM_ERR_STATE);

    push("{\"type\":\"status\",\"status\":\"processing\",\"data\":{\"message\":\"Processing your request...\"},\"timestamp\":\"x\"}");
    push("{\"type\":\"tool_call\",\"tool_name\":\"get_weather\",\"arguments\":{\"city\":\"北京\"},\"result\":{\"temperature\":22},\"success\":true,\"duration_ms\":125.5}");
    push("{\"type\":\"llm_response\",\"content\":\"今天天气晴朗。\",\"tool_calls\":[],\"is_final\":true,\"timestamp\":\"x\",\"some_future_field\":{\"a\":[1]}}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{\"session_id\":\"s1\"},\"timestamp\":\"x\"}");
    pump();
    EXPECT_EVENTS("STATUS turn=t1 status=processing session=-",
                  "TOOL turn=t1 name=get_weather device=0 success=1",
                  "RESPONSE turn=t1 final=1 seq=-1 content=今天天气晴朗。",
                  "TURN_END turn=t1 cancelled=0 failed=0");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
    CHECK_INT(F.timing.total_ms, -1);

    CHECK_INT(llm_client_send_text(&F.client, "next"), LLM_OK);
    sent = sent_json(fake_last_of(&F.fake, "text_input"));
    CHECK_STR(at(sent, "turn_id"), "\"t2\"");
    cJSON_Delete(sent);
}

static void test_text_checks(void)
{
    static char long_text[5000];
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "\xe4\xbd"), LLM_ERR_ARG);          /* cut UTF-8 */
    CHECK_INT(llm_client_send_text(&F.client, "\xed\xa0\x80"), LLM_ERR_ARG);      /* a surrogate */
    CHECK_INT(llm_client_send_text(&F.client, "\xc0\xaf"), LLM_ERR_ARG);          /* overlong */
    memset(long_text, 'a', sizeof long_text - 1);
    CHECK_INT(llm_client_send_text(&F.client, long_text), LLM_ERR_NO_ROOM);
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY); /* nothing half-sent, no turn */
    CHECK_INT(fake_count_of(&F.fake, "text_input"), 0);
    CHECK_INT(llm_client_send_text(&F.client, NULL), LLM_ERR_ARG);
    CHECK_INT(llm_client_send_text(&F.client, "😀 ok"), LLM_OK);
}

static void test_send_failure_is_returned(void)
{
    setup();
    connect_ready("s1");
    F.fake.send_result = LLM_ERR_TRANSPORT;
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_ERR_TRANSPORT);
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
    F.fake.send_result = LLM_OK;
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
}

static void test_device_tool_success(void)
{
    cJSON *sent;
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "我的电量还剩多少？"), LLM_OK);
    fake_forget_sent(&F.fake);
    push("{\"type\":\"status\",\"status\":\"waiting_for_tools\",\"data\":{\"pending_tools\":1},\"timestamp\":\"x\"}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"uuid-b1\",\"tool_name\":\"get_battery\",\"arguments\":{},\"timestamp\":\"x\"}");
    pump();
    CHECK_INT(battery_calls, 1);
    CHECK_INT(F.fake.sent_count, 1);
    sent = sent_json(fake_sent(&F.fake, 0));
    CHECK_STR(fake_sent(&F.fake, 0), "{\"type\":\"tool_result\",\"call_id\":\"uuid-b1\",\"success\":true,\"result\":{\"level\":85,\"charging\":false}}");
    cJSON_Delete(sent);
    push("{\"type\":\"llm_response\",\"content\":\"您的设备电量还剩85%\",\"tool_calls\":[{\"call_id\":\"b1\",\"name\":\"get_battery\",\"location\":\"client\",\"success\":true}],\"is_final\":true}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("STATUS turn=t1 status=waiting_for_tools session=-",
                  "TOOL turn=t1 name=get_battery device=1 success=1",
                  "RESPONSE turn=t1 final=1 seq=-1 content=您的设备电量还剩85%",
                  "TURN_END turn=t1 cancelled=0 failed=0");
}

static void test_device_tool_failures(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "把音量调到500"), LLM_OK);
    fake_forget_sent(&F.fake);
    push("{\"type\":\"tool_callback\",\"call_id\":\"v1\",\"tool_name\":\"set_volume\",\"arguments\":{\"volume\":500}}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"v2\",\"tool_name\":\"set_volume\",\"arguments\":{\"volume\":50}}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"x1\",\"tool_name\":\"open_door\",\"arguments\":{}}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"q1\",\"tool_name\":\"quiet\"}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"n1\",\"tool_name\":\"nothing\",\"arguments\":null}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"g1\",\"tool_name\":\"garbled\",\"arguments\":{}}");
    pump();
    CHECK_INT(F.fake.sent_count, 6);
    CHECK_STR(fake_sent(&F.fake, 5), "{\"type\":\"tool_result\",\"call_id\":\"g1\",\"success\":false,\"result\":null,\"error\":\"garbled failed (its message was not UTF-8)\"}");
    CHECK_STR(fake_sent(&F.fake, 0), "{\"type\":\"tool_result\",\"call_id\":\"v1\",\"success\":false,\"result\":null,\"error\":\"设备连接超时\"}");
    CHECK_STR(fake_sent(&F.fake, 1), "{\"type\":\"tool_result\",\"call_id\":\"v2\",\"success\":true,\"result\":{\"volume\":50}}");
    CHECK_STR(fake_sent(&F.fake, 2), "{\"type\":\"tool_result\",\"call_id\":\"x1\",\"success\":false,\"result\":null,\"error\":\"Tool 'open_door' not found\"}");
    CHECK_STR(fake_sent(&F.fake, 3), "{\"type\":\"tool_result\",\"call_id\":\"q1\",\"success\":false,\"result\":null,\"error\":\"quiet failed\"}");
    CHECK_STR(fake_sent(&F.fake, 4), "{\"type\":\"tool_result\",\"call_id\":\"n1\",\"success\":true,\"result\":null}");
    EXPECT_EVENTS("TOOL turn=t1 name=set_volume device=1 success=0", "TOOL turn=t1 name=set_volume device=1 success=1",
                  "TOOL turn=t1 name=open_door device=1 success=0", "TOOL turn=t1 name=quiet device=1 success=0",
                  "TOOL turn=t1 name=nothing device=1 success=1", "TOOL turn=t1 name=garbled device=1 success=0");
}

static void test_tool_result_too_large_or_not_utf8_fails_the_call(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "dump"), LLM_OK);
    fake_forget_sent(&F.fake);
    push("{\"type\":\"tool_callback\",\"call_id\":\"d1\",\"tool_name\":\"dump_log\",\"arguments\":{}}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"d2\",\"tool_name\":\"bad_bytes\",\"arguments\":{}}");
    pump();
    CHECK_INT(F.fake.sent_count, 2);
    CHECK_STR(fake_sent(&F.fake, 0), "{\"type\":\"tool_result\",\"call_id\":\"d1\",\"success\":false,\"result\":null,\"error\":\"tool result does not fit the device's send buffer\"}");
    CHECK_STR(fake_sent(&F.fake, 1), "{\"type\":\"tool_result\",\"call_id\":\"d2\",\"success\":false,\"result\":null,\"error\":\"tool result is not valid UTF-8\"}");
    EXPECT_EVENTS("ERROR turn=t1 code=CLIENT_NO_ROOM message=tool result does not fit the device's send buffer details=dump_log",
                  "TOOL turn=t1 name=dump_log device=1 success=0",
                  "ERROR turn=t1 code=CLIENT_BAD_TOOL_RESULT message=tool result is not valid UTF-8 details=bad_bytes",
                  "TOOL turn=t1 name=bad_bytes device=1 success=0");
}

static void test_error_frame_ends_the_turn_with_its_code(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"processing\",\"data\":{}}");
    push("{\"type\":\"error\",\"code\":\"LLM_ERROR\",\"message\":\"Failed to process request\",\"details\":\"Connection timeout\",\"timestamp\":\"x\"}");
    pump();
    /* answered by its error: a new text may go before idle arrives */
    CHECK_INT(llm_client_send_text(&F.client, "again"), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
    push("{\"type\":\"error\",\"code\":\"RATE_LIMITED\",\"message\":\"Too many requests\",\"turn_id\":\"t2\"}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t2\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("STATUS turn=t1 status=processing session=-",
                  "ERROR turn=t1 code=LLM_ERROR message=Failed to process request details=Connection timeout",
                  "TURN_END turn=t1 cancelled=0 failed=1",
                  "ERROR turn=t2 code=RATE_LIMITED message=Too many requests details=-",
                  "TURN_END turn=t2 cancelled=0 failed=1");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
}

static void test_error_outside_a_turn(void)
{
    setup();
    connect_ready("s1");
    push("{\"type\":\"error\",\"code\":\"INVALID_MESSAGE\",\"message\":\"Unknown or expired call_id \\\"c9\\\"\"}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{\"message\":\"Session ended\"}}");
    pump();
    EXPECT_EVENTS("ERROR turn= code=INVALID_MESSAGE message=Unknown or expired call_id \"c9\" details=-",
                  "STATUS turn= status=idle session=-");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
}

/* ---- streaming and cancel (issue 16) --------------------------------------------------- */

static void test_stream_configure_partials_final_timing(void)
{
    llm_settings_t s = llm_settings_none();
    cJSON *sent;
    setup();
    s.stream = 1;
    s.temperature = 0.5;
    CHECK_INT(llm_client_configure(&F.client, &s), LLM_OK); /* remembered until connected */
    CHECK_INT(F.fake.sent_count, 0);
    connect_ready("s1");
    sent = sent_json(fake_last_of(&F.fake, "configure"));
    CHECK_STR(fake_last_of(&F.fake, "configure"), "{\"type\":\"configure\",\"temperature\":0.5,\"stream\":true}");
    CHECK_INT(F.fake.sent_count, 2); /* register_tools, then configure before READY */
    cJSON_Delete(sent);

    CHECK_INT(llm_client_send_text(&F.client, "讲个故事"), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"processing\",\"turn_id\":\"t1\",\"data\":{}}");
    push("{\"type\":\"llm_response\",\"content\":\"从前有座山。\",\"tool_calls\":[],\"is_final\":false,\"seq\":0,\"turn_id\":\"t1\"}");
    push("{\"type\":\"llm_response\",\"content\":\"山里有座庙。\",\"tool_calls\":[],\"is_final\":false,\"seq\":1,\"turn_id\":\"t1\"}");
    push("{\"type\":\"llm_response\",\"content\":\"从前有座山。山里有座庙。\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"t1\","
         "\"timing\":{\"first_token_ms\":120.4,\"first_sentence_ms\":310,\"total_ms\":900,\"llm_ms\":800,\"tools_ms\":0}}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("STATUS turn=t1 status=processing session=-",
                  "RESPONSE turn=t1 final=0 seq=0 content=从前有座山。",
                  "RESPONSE turn=t1 final=0 seq=1 content=山里有座庙。",
                  "RESPONSE turn=t1 final=1 seq=-1 content=从前有座山。山里有座庙。",
                  "TURN_END turn=t1 cancelled=0 failed=0");
    CHECK_INT(F.timing.first_token_ms, 120);
    CHECK_INT(F.timing.first_sentence_ms, 310);
    CHECK_INT(F.timing.total_ms, 900);
    CHECK_INT(F.timing.llm_ms, 800);
    CHECK_INT(F.timing.tools_ms, 0);

    /* settings merge: a later configure keeps stream */
    s = llm_settings_none();
    s.enable_context = 1;
    s.language = "zh";
    CHECK_INT(llm_client_configure(&F.client, &s), LLM_OK);
    CHECK_STR(fake_last_of(&F.fake, "configure"), "{\"type\":\"configure\",\"temperature\":0.5,\"enable_context\":true,\"stream\":true,\"language\":\"zh\"}");
    s = llm_settings_none();
    s.temperature = 1.5;
    CHECK_INT(llm_client_configure(&F.client, &s), LLM_ERR_ARG);
    s = llm_settings_none();
    s.language = "much-too-long";
    CHECK_INT(llm_client_configure(&F.client, &s), LLM_ERR_ARG);
    s = llm_settings_none();
    s.stream = 2;
    CHECK_INT(llm_client_configure(&F.client, &s), LLM_ERR_ARG);
}

static void test_cancel_drops_the_rest_of_the_turn(void)
{
    cJSON *sent;
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_cancel(&F.client, NULL), LLM_ERR_STATE); /* no turn */
    CHECK_INT(llm_client_send_text(&F.client, "讲个故事"), LLM_OK);
    push("{\"type\":\"llm_response\",\"content\":\"从前有座山。\",\"is_final\":false,\"seq\":0,\"turn_id\":\"t1\"}");
    push("{\"type\":\"llm_response\",\"content\":\"山里有座庙。\",\"is_final\":false,\"seq\":1,\"turn_id\":\"t1\"}");
    pump();
    CHECK_INT(llm_client_cancel(&F.client, "从前有座山。山里"), LLM_OK);
    sent = sent_json(fake_last_of(&F.fake, "cancel"));
    CHECK_STR(at(sent, "turn_id"), "\"t1\"");
    CHECK_STR(at(sent, "spoken"), "\"从前有座山。山里\"");
    cJSON_Delete(sent);
    CHECK_INT(llm_client_cancel(&F.client, NULL), LLM_ERR_STATE); /* once */
    fake_forget_sent(&F.fake);
    /* frames the gateway had sent before it saw the cancel */
    push("{\"type\":\"llm_response\",\"content\":\"庙里有个和尚。\",\"is_final\":false,\"seq\":2,\"turn_id\":\"t1\"}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"late\",\"tool_name\":\"get_battery\",\"arguments\":{},\"turn_id\":\"t1\"}");
    push("{\"type\":\"status\",\"status\":\"cancelled\",\"data\":{\"turn_id\":\"t1\"}}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    pump();
    CHECK_INT(battery_calls, 0);
    CHECK_INT(F.fake.sent_count, 0);
    EXPECT_EVENTS("RESPONSE turn=t1 final=0 seq=0 content=从前有座山。", "RESPONSE turn=t1 final=0 seq=1 content=山里有座庙。",
                  "STATUS turn=t1 status=cancelled session=-", "TURN_END turn=t1 cancelled=1 failed=0");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
}

static void test_barge_in_cancel_then_new_text(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "first"), LLM_OK);
    push("{\"type\":\"llm_response\",\"content\":\"One.\",\"is_final\":false,\"seq\":0,\"turn_id\":\"t1\"}");
    pump();
    CHECK_INT(llm_client_cancel(&F.client, "One."), LLM_OK);
    CHECK_INT(llm_client_send_text(&F.client, "second"), LLM_OK);
    /* the first turn's tail, then the second turn, frames naming their turns */
    push("{\"type\":\"llm_response\",\"content\":\"Two.\",\"is_final\":false,\"seq\":1,\"turn_id\":\"t1\"}");
    push("{\"type\":\"status\",\"status\":\"cancelled\",\"data\":{\"turn_id\":\"t1\"}}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    push("{\"type\":\"llm_response\",\"content\":\"Second answer.\",\"is_final\":true,\"turn_id\":\"t2\"}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t2\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("RESPONSE turn=t1 final=0 seq=0 content=One.", "STATUS turn=t1 status=cancelled session=-",
                  "TURN_END turn=t1 cancelled=1 failed=0", "RESPONSE turn=t2 final=1 seq=-1 content=Second answer.",
                  "TURN_END turn=t2 cancelled=0 failed=0");
}

static void test_barge_in_without_turn_ids(void)
{
    /* Today's gateway names no turns and does not know cancel: it answers the first turn in
     * full, then the second. The first turn's answer must not be played. */
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "first"), LLM_OK);
    CHECK_INT(llm_client_cancel(&F.client, NULL), LLM_OK);
    CHECK_INT(llm_client_send_text(&F.client, "second"), LLM_OK);
    push("{\"type\":\"error\",\"code\":\"UNKNOWN_MESSAGE_TYPE\",\"message\":\"Unknown message type \\\"cancel\\\"\"}");
    push("{\"type\":\"status\",\"status\":\"processing\",\"data\":{}}");
    push("{\"type\":\"llm_response\",\"content\":\"First answer.\",\"is_final\":true}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
    push("{\"type\":\"status\",\"status\":\"processing\",\"data\":{}}");
    push("{\"type\":\"llm_response\",\"content\":\"Second answer.\",\"is_final\":true}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("ERROR turn=t1 code=UNKNOWN_MESSAGE_TYPE message=Unknown message type \"cancel\" details=-",
                  "STATUS turn=t1 status=processing session=-", "TURN_END turn=t1 cancelled=1 failed=1",
                  "STATUS turn=t2 status=processing session=-", "RESPONSE turn=t2 final=1 seq=-1 content=Second answer.",
                  "TURN_END turn=t2 cancelled=0 failed=0");
}

static void test_turn_ids_of_the_gateway_are_adopted(void)
{
    cJSON *sent;
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"processing\",\"turn_id\":\"srv-9\",\"data\":{}}");
    push("{\"type\":\"llm_response\",\"content\":\"Part.\",\"is_final\":false,\"seq\":0,\"turn_id\":\"srv-9\"}");
    pump();
    CHECK_INT(llm_client_cancel(&F.client, "Part."), LLM_OK);
    sent = sent_json(fake_last_of(&F.fake, "cancel"));
    CHECK_STR(at(sent, "turn_id"), "\"srv-9\"");
    cJSON_Delete(sent);
    push("{\"type\":\"status\",\"status\":\"cancelled\",\"data\":{\"turn_id\":\"srv-9\"}}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"srv-9\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("STATUS turn=srv-9 status=processing session=-", "RESPONSE turn=srv-9 final=0 seq=0 content=Part.",
                  "STATUS turn=srv-9 status=cancelled session=-", "TURN_END turn=srv-9 cancelled=1 failed=0");
}

static void test_late_frames_of_an_ended_turn_are_dropped(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "first"), LLM_OK);
    push("{\"type\":\"llm_response\",\"content\":\"First.\",\"is_final\":true,\"turn_id\":\"t1\"}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    pump();
    CHECK_INT(llm_client_send_text(&F.client, "second"), LLM_OK);
    fake_forget_sent(&F.fake);
    push("{\"type\":\"llm_response\",\"content\":\"First, again.\",\"is_final\":true,\"turn_id\":\"t1\"}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"old\",\"tool_name\":\"get_battery\",\"arguments\":{},\"turn_id\":\"t1\"}");
    push("{\"type\":\"llm_response\",\"content\":\"Second.\",\"is_final\":true,\"turn_id\":\"t2\"}");
    pump();
    CHECK_INT(battery_calls, 0);
    CHECK_INT(F.fake.sent_count, 0);
    EXPECT_EVENTS("RESPONSE turn=t1 final=1 seq=-1 content=First.", "TURN_END turn=t1 cancelled=0 failed=0",
                  "RESPONSE turn=t2 final=1 seq=-1 content=Second.");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t2\",\"data\":{}}");
    pump();
    /* two turns on, t1's frames are still not t3's */
    CHECK_INT(llm_client_send_text(&F.client, "third"), LLM_OK);
    push("{\"type\":\"llm_response\",\"content\":\"First, once more.\",\"is_final\":false,\"turn_id\":\"t1\"}");
    push("{\"type\":\"llm_response\",\"content\":\"Third.\",\"is_final\":true,\"turn_id\":\"t3\"}");
    pump();
    EXPECT_EVENTS("TURN_END turn=t2 cancelled=0 failed=0", "RESPONSE turn=t3 final=1 seq=-1 content=Third.");
}

static void test_close_ends_open_turns(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
    llm_client_close(&F.client);
    EXPECT_EVENTS("TURN_END turn=t1 cancelled=0 failed=1");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_DISCONNECTED);
    CHECK_INT(F.fake.closes, 1);
    llm_client_close(&F.client);
    CHECK_INT(F.fake.closes, 1);
}

static void test_cancel_after_the_answer_tells_what_was_heard(void)
{
    cJSON *sent;
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
    push("{\"type\":\"llm_response\",\"content\":\"A long answer.\",\"is_final\":true}");
    pump();
    CHECK_INT(llm_client_cancel(&F.client, "A long"), LLM_OK);
    sent = sent_json(fake_last_of(&F.fake, "cancel"));
    CHECK_STR(at(sent, "spoken"), "\"A long\"");
    cJSON_Delete(sent);
}

static void test_too_many_open_turns(void)
{
    setup();
    connect_ready("s1");
    for (int i = 0; i < LLM_MAX_TURNS; i++) {
        CHECK_INT(llm_client_send_text(&F.client, "x"), LLM_OK);
        CHECK_INT(llm_client_cancel(&F.client, NULL), LLM_OK);
    }
    CHECK_INT(llm_client_send_text(&F.client, "one too many"), LLM_ERR_STATE);
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
    pump();
    CHECK_INT(llm_client_send_text(&F.client, "room again"), LLM_OK);
}

/* ---- sessions -------------------------------------------------------------------------- */

static void test_reconnect_resumes_the_session_and_reregisters(void)
{
    llm_settings_t s = llm_settings_none();
    cJSON *sent;
    setup();
    s.stream = 1;
    CHECK_INT(llm_client_configure(&F.client, &s), LLM_OK);
    connect_ready("first-session");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"processing\",\"data\":{}}");
    fake_push_closed(&F.fake);
    push("{\"type\":\"llm_response\",\"content\":\"never delivered\",\"is_final\":true}");
    CHECK_INT(llm_client_poll(&F.client, 0), 1);
    CHECK_INT(llm_client_poll(&F.client, 0), LLM_ERR_CLOSED);
    EXPECT_EVENTS("STATUS turn=t1 status=processing session=-", "CLOSED LLM_ERR_CLOSED",
                  "TURN_END turn=t1 cancelled=0 failed=1");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_DISCONNECTED);
    CHECK_INT(F.fake.closes, 1);
    CHECK_INT(llm_client_poll(&F.client, 0), LLM_ERR_CLOSED);
    CHECK_INT(llm_client_send_text(&F.client, "x"), LLM_ERR_STATE);
    fake_free(&F.fake); /* drop what the old connection had queued */

    fake_forget_sent(&F.fake);
    CHECK_INT(llm_client_connect(&F.client, "ws://gateway/", "tok", 1000), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"fresh-session\"}}");
    pump();
    CHECK_INT(F.fake.sent_count, 1);
    CHECK_STR(fake_sent(&F.fake, 0), "{\"type\":\"start_session\",\"session_id\":\"first-session\"}");
    CHECK_STR(llm_client_session_id(&F.client), "first-session");
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"first-session\"}}");
    push("{\"type\":\"tools_registered\",\"count\":7,\"tools\":[]}");
    pump();
    CHECK_INT(fake_count_of(&F.fake, "register_tools"), 1);
    CHECK_STR(fake_sent(&F.fake, 2), "{\"type\":\"configure\",\"stream\":true}");
    EXPECT_EVENTS("READY session=first-session resumed=1");
    CHECK_INT(llm_client_send_text(&F.client, "again"), LLM_OK);
    sent = sent_json(fake_last_of(&F.fake, "text_input"));
    CHECK_STR(at(sent, "session_id"), "\"first-session\"");
    cJSON_Delete(sent);
}

static void test_resume_refused_carries_on_in_the_new_session(void)
{
    setup();
    CHECK_INT(llm_client_set_session(&F.client, "expired-session"), LLM_OK);
    CHECK_INT(llm_client_connect(&F.client, "ws://g/", NULL, 10), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"new-one\"}}");
    pump();
    CHECK_STR(fake_sent(&F.fake, 0), "{\"type\":\"start_session\",\"session_id\":\"expired-session\"}");
    push("{\"type\":\"error\",\"code\":\"SESSION_ERROR\",\"message\":\"Session not found\",\"details\":\"expired-session\"}");
    pump();
    CHECK_INT(fake_count_of(&F.fake, "register_tools"), 1);
    push("{\"type\":\"tools_registered\",\"count\":7,\"tools\":[]}");
    pump();
    EXPECT_EVENTS("ERROR turn= code=SESSION_ERROR message=Session not found details=expired-session",
                  "READY session=new-one resumed=0");
    CHECK_STR(llm_client_session_id(&F.client), "new-one");
}

static void test_set_session_rules(void)
{
    char long_id[LLM_SESSION_ID_SIZE + 1];
    setup();
    memset(long_id, 'a', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    CHECK_INT(llm_client_set_session(&F.client, long_id), LLM_ERR_ARG);
    CHECK_INT(llm_client_set_session(&F.client, "kept"), LLM_OK);
    CHECK_INT(llm_client_set_session(&F.client, NULL), LLM_OK);
    CHECK_STR(llm_client_session_id(&F.client), "");
    connect_ready("s1");
    CHECK_INT(llm_client_set_session(&F.client, "x"), LLM_ERR_STATE);
    CHECK_INT(fake_count_of(&F.fake, "start_session"), 0); /* nothing to resume */
}

static void test_session_moved_and_end_session(void)
{
    setup();
    connect_ready("s1");
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"s2\",\"previous_session_id\":\"s1\",\"reason\":\"session_resumed_elsewhere\"}}");
    pump();
    EXPECT_EVENTS("STATUS turn= status=connected session=s2");
    CHECK_STR(llm_client_session_id(&F.client), "s2");

    CHECK_INT(llm_client_end_session(&F.client), LLM_OK);
    CHECK_STR(fake_last_of(&F.fake, "end_session"), "{\"type\":\"end_session\"}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{\"message\":\"Session ended\",\"session_id\":\"s2\"}}");
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"s3\"}}");
    pump();
    EXPECT_EVENTS("STATUS turn= status=idle session=s2", "STATUS turn= status=connected session=s3");
    CHECK_STR(llm_client_session_id(&F.client), "s3");
    CHECK_INT(llm_client_send_text(&F.client, "x"), LLM_OK);
    CHECK_INT(llm_client_end_session(&F.client), LLM_ERR_STATE); /* not during a turn */
}

static void test_ping_pong(void)
{
    setup();
    CHECK_INT(llm_client_ping(&F.client), LLM_ERR_STATE);
    connect_ready("s1");
    CHECK_INT(llm_client_ping(&F.client), LLM_OK);
    CHECK_STR(fake_last_of(&F.fake, "ping"), "{\"type\":\"ping\"}");
    push("{\"type\":\"pong\",\"timestamp\":\"2025-02-21T10:30:00.000Z\"}");
    pump();
    EXPECT_EVENTS("PONG");
}

/* ---- bad input ------------------------------------------------------------------------- */

static void test_bad_frames_are_reported_not_fatal(void)
{
    static char deep[200];
    static char long_session[200];
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
    for (int i = 0; i < 40; i++) deep[i] = '[';
    snprintf(long_session, sizeof long_session,
             "{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"%0100d\"}}", 7);
    push("not json");
    push("[1,2]");
    push("{\"no_type\":1}");
    push("{\"type\":42}");
    push("{\"type\":\"llm_response\",\"is_final\":true}");
    push("{\"type\":\"llm_response\",\"content\":7}");
    push("{\"type\":\"tool_callback\",\"tool_name\":\"get_battery\"}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"\",\"tool_name\":\"get_battery\"}");
    push("{\"type\":\"tool_callback\",\"call_id\":\"c\"}");
    push("{\"type\":\"error\",\"message\":\"no code\"}");
    push("{\"type\":\"status\"}");
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{}}");
    push(long_session);
    push("{\"type\":\"llm_response\",\"content\":\"x\",\"turn_id\":\"0123456789012345678901234567890123456789012345678901234567890123456789\"}");
    push(deep);
    push("{\"type\":\"llm_response\",\"content\":\"x\"");
    push("");
    push("{\"type\":\"something_new\",\"content\":\"ignored\"}");
    push("{\"type\":\"llm_response\",\"content\":\"still works\",\"is_final\":true,\"seq\":\"zero\",\"timing\":{\"total_ms\":\"fast\",\"llm_ms\":-5}}");
    pump();
    CHECK_INT(battery_calls, 0);
    EXPECT_EVENTS("ERROR turn= code=CLIENT_BAD_FRAME message=frame is not JSON details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=frame is not a JSON object details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=frame has no string \"type\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=frame has no string \"type\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=llm_response without a string \"content\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=llm_response without a string \"content\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=tool_callback without a \"call_id\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=tool_callback without a \"call_id\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=tool_callback without a string \"tool_name\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=error frame without a string \"code\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=status frame without a string \"status\" details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=status connected without data.session_id details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=session_id longer than LLM_SESSION_ID_SIZE - 1 details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=turn_id longer than LLM_TURN_ID_SIZE - 1 details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=frame nested deeper than LLM_MAX_JSON_DEPTH details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=frame is not JSON details=-",
                  "ERROR turn= code=CLIENT_BAD_FRAME message=empty frame details=-",
                  "RESPONSE turn=t1 final=1 seq=-1 content=still works");
    CHECK_STR(llm_client_session_id(&F.client), "s1");
    CHECK_INT(F.timing.total_ms, -1);
    CHECK_INT(F.timing.llm_ms, -1);
}

static void test_oversized_frame_is_an_error_and_the_client_goes_on(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "hi"), LLM_OK);
    fake_push_too_large(&F.fake, 2000000);
    push("{\"type\":\"llm_response\",\"content\":\"after\",\"is_final\":true}");
    pump();
    EXPECT_EVENTS("ERROR turn= code=CLIENT_FRAME_TOO_LARGE message=a frame over the transport's maximum was dropped details=2000000 bytes",
                  "RESPONSE turn=t1 final=1 seq=-1 content=after");
}

/* Calls into the client from inside its own callback, as applications will. */
static void react_reentrant(const llm_event_t *ev)
{
    if (ev->type == LLM_EVENT_READY) CHECK_INT(llm_client_send_text(&F.client, "from the callback"), LLM_OK);
    if (ev->type == LLM_EVENT_RESPONSE && !ev->u.response.is_final) CHECK_INT(llm_client_cancel(&F.client, ev->u.response.content), LLM_OK);
    if (ev->type == LLM_EVENT_TURN_END) CHECK_INT(llm_client_send_text(&F.client, "next from the callback"), LLM_OK);
}

static void test_calls_from_inside_callbacks(void)
{
    setup();
    F.react = react_reentrant;
    connect_ready("s1");
    CHECK_INT(fake_count_of(&F.fake, "text_input"), 1);
    push("{\"type\":\"llm_response\",\"content\":\"Part one.\",\"is_final\":false,\"seq\":0}");
    push("{\"type\":\"llm_response\",\"content\":\"Part two.\",\"is_final\":false,\"seq\":1}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
    pump();
    CHECK_INT(fake_count_of(&F.fake, "cancel"), 1);
    CHECK_INT(fake_count_of(&F.fake, "text_input"), 2);
    EXPECT_EVENTS("READY session=s1 resumed=0", "RESPONSE turn=t1 final=0 seq=0 content=Part one.",
                  "TURN_END turn=t1 cancelled=1 failed=0");
}

static void test_json_helpers(void)
{
    char buf[16];
    llm_jw_t w;
    CHECK(llm_utf8_valid("plain", 5));
    CHECK(llm_utf8_valid("\xf0\x9f\x98\x80", 4));
    CHECK(!llm_utf8_valid("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
    CHECK(!llm_utf8_valid("\xe0\x80\xaf", 3));     /* overlong */
    CHECK(!llm_utf8_valid("\x80", 1));
    CHECK(llm_json_depth_ok("[[\"[[[[\"]]", 10, 2));
    CHECK(!llm_json_depth_ok("[[[", 3, 2));
    CHECK(llm_json_depth_ok("\"\\\"[[[\"", 7, 0));
    llm_jw_init(&w, buf, sizeof buf);
    llm_jw_str(&w, "0123456789");
    CHECK_INT(llm_jw_finish(&w), LLM_OK);
    CHECK_STR(buf, "\"0123456789\"");
    llm_jw_str(&w, "abc");
    CHECK_INT(llm_jw_finish(&w), LLM_ERR_NO_ROOM);
    CHECK(strlen(buf) < sizeof buf); /* never past the buffer */
    llm_jw_raw(&w, "x");
    CHECK_INT(llm_jw_finish(&w), LLM_ERR_NO_ROOM); /* overflow sticks */
}

/* ---- pushes: speech no text_input asked for ("origin": "push") ------------------------ */

#define PUSHED(json) "{" json ",\"origin\":\"push\"}"

static void test_push_between_turns_is_spoken_and_opens_no_turn(void)
{
    setup();
    connect_ready("s1");
    push(PUSHED("\"type\":\"llm_response\",\"content\":\"Dinner is ready.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-1\",\"reminder_id\":\"rem-7\""));
    push(PUSHED("\"type\":\"status\",\"status\":\"idle\",\"data\":{\"session_id\":\"s1\"},\"turn_id\":\"push-1\""));
    pump();
    EXPECT_EVENTS("push RESPONSE turn=push-1 final=1 seq=-1 content=Dinner is ready. reminder=rem-7",
                  "push STATUS turn=push-1 status=idle session=s1");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
    CHECK_INT(llm_client_cancel(&F.client, NULL), LLM_ERR_STATE); /* no turn of its own to cancel */
    CHECK_INT(llm_client_send_text(&F.client, "thanks"), LLM_OK);
    push("{\"type\":\"llm_response\",\"content\":\"You are welcome.\",\"is_final\":true,\"turn_id\":\"t1\"}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("RESPONSE turn=t1 final=1 seq=-1 content=You are welcome.", "TURN_END turn=t1 cancelled=0 failed=0");
}

static void test_push_while_a_turn_waits_leaves_that_turn_alone(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "What time is it?"), LLM_OK);
    fake_forget_sent(&F.fake);
    /* The gateway was running a pushed turn, which the text waits behind: every frame of a turn,
     * under the push's id. Before any frame of t1, so t1 would adopt the first id it saw. */
    push(PUSHED("\"type\":\"status\",\"status\":\"processing\",\"data\":{},\"turn_id\":\"push-2\""));
    push(PUSHED("\"type\":\"llm_response\",\"content\":\"Your battery is low.\",\"is_final\":false,\"seq\":0,\"turn_id\":\"push-2\""));
    push(PUSHED("\"type\":\"status\",\"status\":\"waiting_for_tools\",\"data\":{\"pending_tools\":1},\"turn_id\":\"push-2\""));
    push(PUSHED("\"type\":\"tool_callback\",\"call_id\":\"pc1\",\"tool_name\":\"get_battery\",\"arguments\":{},\"turn_id\":\"push-2\""));
    push(PUSHED("\"type\":\"tool_call\",\"tool_name\":\"get_current_time\",\"arguments\":{},\"result\":\"10:00\",\"success\":true,\"duration_ms\":1,\"turn_id\":\"push-2\""));
    push(PUSHED("\"type\":\"llm_response\",\"content\":\"Your battery is low. 85%.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-2\""));
    push(PUSHED("\"type\":\"error\",\"code\":\"LLM_ERROR\",\"message\":\"a pushed turn's error\",\"turn_id\":\"push-2\""));
    pump();
    CHECK_INT(battery_calls, 1);
    CHECK_STR(fake_sent(&F.fake, 0), "{\"type\":\"tool_result\",\"call_id\":\"pc1\",\"success\":true,\"result\":{\"level\":85,\"charging\":false}}");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_IN_TURN);
    CHECK_INT(llm_client_send_text(&F.client, "t1 is not answered yet"), LLM_ERR_STATE);
    push(PUSHED("\"type\":\"status\",\"status\":\"idle\",\"data\":{},\"turn_id\":\"push-2\""));
    pump();
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_IN_TURN);
    push("{\"type\":\"status\",\"status\":\"processing\",\"turn_id\":\"t1\",\"data\":{}}");
    push("{\"type\":\"llm_response\",\"content\":\"It is ten.\",\"is_final\":true,\"turn_id\":\"t1\"}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    pump();
    EXPECT_EVENTS("push STATUS turn=push-2 status=processing session=-",
                  "push RESPONSE turn=push-2 final=0 seq=0 content=Your battery is low.",
                  "push STATUS turn=push-2 status=waiting_for_tools session=-",
                  "push TOOL turn=push-2 name=get_battery device=1 success=1",
                  "push TOOL turn=push-2 name=get_current_time device=0 success=1",
                  "push RESPONSE turn=push-2 final=1 seq=-1 content=Your battery is low. 85%.",
                  "push ERROR turn=push-2 code=LLM_ERROR message=a pushed turn's error details=-",
                  "push STATUS turn=push-2 status=idle session=-",
                  "STATUS turn=t1 status=processing session=-",
                  "RESPONSE turn=t1 final=1 seq=-1 content=It is ten.",
                  "TURN_END turn=t1 cancelled=0 failed=0");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
}

static void test_push_that_interrupts_comes_after_the_cancelled_turn(void)
{
    setup();
    connect_ready("s1");
    CHECK_INT(llm_client_send_text(&F.client, "Tell me a story"), LLM_OK);
    push("{\"type\":\"llm_response\",\"content\":\"Once upon a time.\",\"is_final\":false,\"seq\":0,\"turn_id\":\"t1\"}");
    push("{\"type\":\"status\",\"status\":\"cancelled\",\"turn_id\":\"t1\",\"data\":{\"turn_id\":\"t1\"}}");
    push("{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    push(PUSHED("\"type\":\"llm_response\",\"content\":\"The door is open.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-3\""));
    push(PUSHED("\"type\":\"status\",\"status\":\"idle\",\"data\":{},\"turn_id\":\"push-3\""));
    pump();
    EXPECT_EVENTS("RESPONSE turn=t1 final=0 seq=0 content=Once upon a time.", "STATUS turn=t1 status=cancelled session=-",
                  "TURN_END turn=t1 cancelled=1 failed=0",
                  "push RESPONSE turn=push-3 final=1 seq=-1 content=The door is open.",
                  "push STATUS turn=push-3 status=idle session=-");
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_READY);
}

static void test_pushes_held_for_a_reconnecting_device_do_not_disturb_the_resume(void)
{
    setup();
    CHECK_INT(llm_client_set_session(&F.client, "old"), LLM_OK);
    CHECK_INT(llm_client_connect(&F.client, "ws://g/?device_id=kitchen", NULL, 10), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"fresh\"}}");
    pump();
    CHECK_STR(fake_last_of(&F.fake, "start_session"), "{\"type\":\"start_session\",\"session_id\":\"old\"}");
    /* a push's error while the resume is answered is not the resume failing */
    push(PUSHED("\"type\":\"llm_response\",\"content\":\"You missed a call.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-4\""));
    push(PUSHED("\"type\":\"error\",\"code\":\"SESSION_ERROR\",\"message\":\"not the resume's\",\"turn_id\":\"push-5\""));
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"old\"}}");
    pump();
    CHECK_INT(fake_count_of(&F.fake, "register_tools"), 1);
    /* nor, while the tools are registered, their registration failing */
    push(PUSHED("\"type\":\"error\",\"code\":\"TOOL_REGISTRATION_FAILED\",\"message\":\"not the registration's\",\"turn_id\":\"push-6\""));
    pump();
    CHECK_INT(llm_client_state(&F.client), LLM_STATE_CONNECTING);
    push("{\"type\":\"tools_registered\",\"count\":7,\"tools\":[]}");
    pump();
    EXPECT_EVENTS("push RESPONSE turn=push-4 final=1 seq=-1 content=You missed a call.",
                  "push ERROR turn=push-5 code=SESSION_ERROR message=not the resume's details=-",
                  "push ERROR turn=push-6 code=TOOL_REGISTRATION_FAILED message=not the registration's details=-",
                  "READY session=old resumed=1");
    CHECK_STR(llm_client_session_id(&F.client), "old");
}

static void test_tool_visibility_is_sent_when_not_both(void)
{
    static const llm_tool_t tools[] = {
        {"reboot", "Restarts the device", SCHEMA_EMPTY, tool_null, NULL, LLM_VISIBILITY_AGENTS},
        {"get_mood", "The lights' colour", SCHEMA_EMPTY, tool_null, NULL, LLM_VISIBILITY_MODEL},
        {"get_battery", "Battery level", SCHEMA_EMPTY, tool_battery, NULL, LLM_VISIBILITY_BOTH},
        {.name = "designated", .description = "d", .parameters = SCHEMA_EMPTY, .handler = tool_null},
    };
    llm_tool_t bad = {"odd", "d", SCHEMA_EMPTY, tool_null, NULL, (llm_tool_visibility_t)7};
    cJSON *sent;
    llm_client_t c;
    llm_client_config_t cfg;

    setup_with(tools, sizeof tools / sizeof tools[0]);
    CHECK_INT(llm_client_connect(&F.client, "ws://g/", NULL, 10), LLM_OK);
    push("{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"s\"}}");
    pump();
    sent = sent_json(fake_last_of(&F.fake, "register_tools"));
    CHECK_STR(at(sent, "tools.0"), "{\"name\":\"reboot\",\"description\":\"Restarts the device\",\"parameters\":" SCHEMA_EMPTY ",\"visibility\":\"agents\"}");
    CHECK_STR(at(sent, "tools.1.visibility"), "\"model\"");
    CHECK_STR(at(sent, "tools.2.visibility"), "(absent)");
    CHECK_STR(at(sent, "tools.3.visibility"), "(absent)");
    cJSON_Delete(sent);

    cfg = F.cfg;
    cfg.tools = &bad;
    cfg.tool_count = 1;
    CHECK_INT(llm_client_init(&c, &cfg), LLM_ERR_ARG);
}

/* ---- the example program's logic (device_app.c) over a scripted fake server ------------ */

typedef struct {
    const char *scenario;
    int partials_sent;
} script_t;

static void scripted_server(fake_transport_t *f, const char *frame, void *user)
{
    script_t *s = (script_t *)user;
    cJSON *root = cJSON_Parse(frame);
    const char *type = cJSON_GetObjectItem(root, "type")->valuestring;
    if (strcmp(type, "register_tools") == 0) {
        fake_push(f, "{\"type\":\"tools_registered\",\"count\":2,\"tools\":[{\"name\":\"get_battery\",\"status\":\"registered\"},{\"name\":\"set_volume\",\"status\":\"registered\"}]}");
        if (strcmp(s->scenario, "listen") == 0) {
            /* a reminder held for the device, then an agent's message */
            fake_push(f, PUSHED("\"type\":\"llm_response\",\"content\":\"Take your pills.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-r\",\"reminder_id\":\"r1\""));
            fake_push(f, PUSHED("\"type\":\"status\",\"status\":\"idle\",\"data\":{},\"turn_id\":\"push-r\""));
            fake_push(f, PUSHED("\"type\":\"llm_response\",\"content\":\"Dinner is ready.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-s\""));
            fake_push(f, PUSHED("\"type\":\"status\",\"status\":\"idle\",\"data\":{},\"turn_id\":\"push-s\""));
        }
    } else if (strcmp(type, "start_session") == 0) {
        const char *id = cJSON_GetObjectItem(root, "session_id")->valuestring;
        char reply[256];
        if (strcmp(id, "unknown") == 0) {
            fake_push(f, "{\"type\":\"error\",\"code\":\"SESSION_ERROR\",\"message\":\"Session not found\"}");
        } else {
            snprintf(reply, sizeof reply, "{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"%s\"}}", id);
            fake_push(f, reply);
        }
    } else if (strcmp(type, "text_input") == 0) {
        if (strcmp(s->scenario, "push") == 0) {
            /* the text waits behind a pushed turn that lowers the volume, and a pushed error */
            fake_push(f, PUSHED("\"type\":\"status\",\"status\":\"processing\",\"data\":{},\"turn_id\":\"push-v\""));
            fake_push(f, PUSHED("\"type\":\"tool_callback\",\"call_id\":\"pv\",\"tool_name\":\"set_volume\",\"arguments\":{\"volume\":20},\"turn_id\":\"push-v\""));
            fake_push(f, PUSHED("\"type\":\"llm_response\",\"content\":\"It is late: volume down.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-v\",\"reminder_id\":\"quiet-hours\""));
            fake_push(f, PUSHED("\"type\":\"error\",\"code\":\"LLM_ERROR\",\"message\":\"second push failed\",\"turn_id\":\"push-w\""));
            fake_push(f, PUSHED("\"type\":\"status\",\"status\":\"idle\",\"data\":{},\"turn_id\":\"push-v\""));
            fake_push(f, "{\"type\":\"status\",\"status\":\"processing\",\"data\":{},\"turn_id\":\"t1\"}");
            fake_push(f, "{\"type\":\"llm_response\",\"content\":\"Good night.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"t1\"}");
            fake_push(f, "{\"type\":\"status\",\"status\":\"idle\",\"data\":{},\"turn_id\":\"t1\"}");
            /* a push after the answer: only a run that waits for it reads it */
            fake_push(f, PUSHED("\"type\":\"llm_response\",\"content\":\"Sleep well.\",\"tool_calls\":[],\"is_final\":true,\"turn_id\":\"push-x\""));
            cJSON_Delete(root);
            return;
        }
        fake_push(f, "{\"type\":\"status\",\"status\":\"processing\",\"data\":{}}");
        if (strcmp(s->scenario, "battery") == 0) {
            fake_push(f, "{\"type\":\"status\",\"status\":\"waiting_for_tools\",\"data\":{\"pending_tools\":2}}");
            fake_push(f, "{\"type\":\"tool_callback\",\"call_id\":\"c1\",\"tool_name\":\"get_battery\",\"arguments\":{}}");
            fake_push(f, "{\"type\":\"tool_callback\",\"call_id\":\"c2\",\"tool_name\":\"set_volume\",\"arguments\":{\"volume\":40}}");
        } else if (strcmp(s->scenario, "stream") == 0) {
            fake_push(f, "{\"type\":\"llm_response\",\"content\":\"One.\",\"is_final\":false,\"seq\":0,\"turn_id\":\"t1\"}");
            fake_push(f, "{\"type\":\"llm_response\",\"content\":\"Two.\",\"is_final\":false,\"seq\":1,\"turn_id\":\"t1\"}");
            fake_push(f, "{\"type\":\"llm_response\",\"content\":\"Three.\",\"is_final\":false,\"seq\":2,\"turn_id\":\"t1\"}");
            fake_push(f, "{\"type\":\"llm_response\",\"content\":\"One.Two.Three.\",\"is_final\":true,\"turn_id\":\"t1\"}");
            fake_push(f, "{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
        } else if (strcmp(s->scenario, "error") == 0) {
            fake_push(f, "{\"type\":\"error\",\"code\":\"LLM_ERROR\",\"message\":\"Failed to process request\",\"details\":\"model down\"}");
            fake_push(f, "{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
        } else if (strcmp(s->scenario, "close") == 0) {
            fake_push_closed(f);
        } /* "silent": nothing */
    } else if (strcmp(type, "tool_result") == 0) {
        const char *id = cJSON_GetObjectItem(root, "call_id")->valuestring;
        if (strcmp(id, "c2") == 0) {
            fake_push(f, "{\"type\":\"llm_response\",\"content\":\"电量85%，音量已设为40\",\"tool_calls\":[],\"is_final\":true}");
            fake_push(f, "{\"type\":\"status\",\"status\":\"idle\",\"data\":{}}");
        }
    } else if (strcmp(type, "cancel") == 0) {
        fake_push(f, "{\"type\":\"status\",\"status\":\"cancelled\",\"data\":{\"turn_id\":\"t1\"}}");
        fake_push(f, "{\"type\":\"status\",\"status\":\"idle\",\"turn_id\":\"t1\",\"data\":{}}");
    }
    cJSON_Delete(root);
}

typedef struct {
    int code;
    char out[4096];
    char err[4096];
} app_run_t;

static void read_all(FILE *f, char *buf, size_t size)
{
    size_t n;
    rewind(f);
    n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static app_run_t run_app(const char *scenario, int argc, char **argv)
{
    static app_run_t r;
    static script_t script;
    device_options_t o;
    FILE *out = tmpfile(), *err = tmpfile();
    memset(&r, 0, sizeof r);
    fake_free(&F.fake);
    fake_init(&F.fake);
    script.scenario = scenario;
    script.partials_sent = 0;
    F.fake.server = scripted_server;
    F.fake.server_user = &script;
    if (out == NULL || err == NULL) abort();
    r.code = device_parse_args(argc, argv, &o, err);
    if (r.code == 0) {
        o.timeout_ms = strcmp(scenario, "silent") == 0 ? 300 : 5000;
        /* the connected frame of a new connection */
        fake_push(&F.fake, "{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"new-session\"}}");
        r.code = device_run(&o, &F.fake.iface, NULL, out, err);
    }
    read_all(out, r.out, sizeof r.out);
    read_all(err, r.err, sizeof r.err);
    return r;
}

#define ARGV(...) (char *[]){"llm_device_example", __VA_ARGS__}
#define ARGC(...) ((int)(sizeof((char *[]){"llm_device_example", __VA_ARGS__}) / sizeof(char *)))
#define RUN_APP(scenario, ...) run_app(scenario, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static void test_example_answers_tools_and_prints_the_answer(void)
{
    app_run_t r;
    device_volume = 30;
    r = RUN_APP("battery", "ws://gw/", "--token", "T", "--print-session", "我的电量还剩多少？");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(r.out, "session_id=new-session\n电量85%，音量已设为40\n");
    CHECK_STR(F.fake.token, "T");
    CHECK_STR(fake_sent(&F.fake, 2), "{\"type\":\"tool_result\",\"call_id\":\"c1\",\"success\":true,\"result\":{\"level\":85,\"charging\":false}}");
    CHECK_STR(fake_sent(&F.fake, 3), "{\"type\":\"tool_result\",\"call_id\":\"c2\",\"success\":true,\"result\":{\"volume\":40,\"status\":\"set\"}}");
    CHECK_INT(device_volume, 40);
    CHECK(strstr(r.err, "tool get_battery ran on the device: ok") != NULL);
    CHECK_INT(F.fake.closes, 1);
}

static void test_example_resume_and_context(void)
{
    app_run_t r = RUN_APP("battery", "ws://gw/", "--resume", "old-session", "--print-session", "--context", "again");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(fake_sent(&F.fake, 0), "{\"type\":\"start_session\",\"session_id\":\"old-session\"}");
    CHECK_STR(fake_sent(&F.fake, 2), "{\"type\":\"configure\",\"enable_context\":true}");
    CHECK(strncmp(r.out, "session_id=old-session\n", 23) == 0);
    CHECK(!F.fake.had_token);

    r = RUN_APP("battery", "ws://gw/", "--resume", "unknown", "again");
    CHECK_INT(r.code, DEVICE_EXIT_ERROR_FRAME);
    CHECK(strstr(r.err, "error: SESSION_ERROR: Session not found") != NULL);
}

static void test_example_stream_and_cancel_after_partials(void)
{
    cJSON *sent;
    app_run_t r = RUN_APP("stream", "ws://gw/", "--stream", "讲个故事");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(fake_sent(&F.fake, 1), "{\"type\":\"configure\",\"stream\":true}");
    CHECK_STR(r.out, "One.\nTwo.\nThree.\nOne.Two.Three.\n");
    CHECK_INT(fake_count_of(&F.fake, "cancel"), 0);

    r = RUN_APP("stream", "ws://gw/", "--stream", "--cancel-after-partials", "2", "讲个故事");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(r.out, "One.\nTwo.\ncancelled turn_id=t1\n");
    sent = sent_json(fake_last_of(&F.fake, "cancel"));
    CHECK_STR(at(sent, "turn_id"), "\"t1\"");
    CHECK_STR(at(sent, "spoken"), "\"One.Two.\"");
    cJSON_Delete(sent);

    /* fewer partials than asked: the final answer ends it */
    r = RUN_APP("stream", "ws://gw/", "--stream", "--cancel-after-partials", "5", "讲个故事");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(r.out, "One.\nTwo.\nThree.\nOne.Two.Three.\n");
}

static void test_example_prints_pushes_and_still_ends_on_its_own_answer(void)
{
    app_run_t r;
    device_volume = 30;
    r = RUN_APP("push", "ws://gw/", "Good night");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(r.out, "[push reminder_id=quiet-hours] It is late: volume down.\nGood night.\n");
    CHECK_INT(device_volume, 20);
    CHECK(strstr(r.err, "[push] tool set_volume ran on the device: ok") != NULL);
    CHECK(strstr(r.err, "[push] error: LLM_ERROR: second push failed") != NULL);

    /* waiting for two pushes: the one before the answer, and the one after */
    r = RUN_APP("push", "ws://gw/", "--pushes", "2", "Good night");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(r.out, "[push reminder_id=quiet-hours] It is late: volume down.\nGood night.\n[push] Sleep well.\n");
}

static void test_example_listens_for_pushes_without_a_sentence(void)
{
    app_run_t r = RUN_APP("listen", "ws://gw/", "--pushes", "2");
    CHECK_INT(r.code, DEVICE_EXIT_OK);
    CHECK_STR(r.out, "[push reminder_id=r1] Take your pills.\n[push] Dinner is ready.\n");
    CHECK_INT(fake_count_of(&F.fake, "text_input"), 0);

    r = RUN_APP("silent", "ws://gw/", "--pushes", "1");
    CHECK_INT(r.code, DEVICE_EXIT_TIMEOUT);
    CHECK(strstr(r.err, "error: timeout: 0 of 1 pushed answers") != NULL);
    r = RUN_APP("listen", "ws://gw/", "--pushes", "0");
    CHECK_INT(r.code, DEVICE_EXIT_USAGE);
}

static void test_example_failures_exit_non_zero(void)
{
    app_run_t r = RUN_APP("error", "ws://gw/", "hi");
    CHECK_INT(r.code, DEVICE_EXIT_ERROR_FRAME);
    CHECK_STR(r.err, "error: LLM_ERROR: Failed to process request (model down)\n");
    CHECK_STR(r.out, "");

    r = RUN_APP("silent", "ws://gw/", "hi");
    CHECK_INT(r.code, DEVICE_EXIT_TIMEOUT);
    CHECK(strstr(r.err, "error: timeout") != NULL);

    r = RUN_APP("close", "ws://gw/", "hi");
    CHECK_INT(r.code, DEVICE_EXIT_CONNECTION);
    CHECK(strstr(r.err, "error: the connection closed") != NULL);

    r = RUN_APP("battery", "ws://gw/");
    CHECK_INT(r.code, DEVICE_EXIT_USAGE);
    CHECK(strstr(r.err, "usage:") != NULL);
    r = RUN_APP("battery", "ws://gw/", "--cancel-after-partials", "0", "hi");
    CHECK_INT(r.code, DEVICE_EXIT_USAGE);
    r = RUN_APP("battery", "ws://gw/", "--bogus", "hi");
    CHECK_INT(r.code, DEVICE_EXIT_USAGE);
    r = RUN_APP("battery", "ws://gw/", "hi", "--token");
    CHECK_INT(r.code, DEVICE_EXIT_USAGE);
}

static void test_example_connection_refused(void)
{
    app_run_t r;
    device_options_t o;
    FILE *out = tmpfile(), *err = tmpfile();
    fake_free(&F.fake);
    fake_init(&F.fake);
    F.fake.connect_result = LLM_ERR_TRANSPORT;
    CHECK_INT(device_parse_args(ARGC("ws://gw/", "hi"), ARGV("ws://gw/", "hi"), &o, err), 0);
    r.code = device_run(&o, &F.fake.iface, NULL, out, err);
    read_all(out, r.out, sizeof r.out);
    read_all(err, r.err, sizeof r.err);
    CHECK_INT(r.code, DEVICE_EXIT_CONNECTION);
    CHECK_STR(r.err, "error: could not connect to ws://gw/: LLM_ERR_TRANSPORT\n");
}

/* ---- main ------------------------------------------------------------------------------ */

#define RUN(test)                                                                         \
    do {                                                                                  \
        int before_ = failures;                                                           \
        current_test = #test;                                                             \
        test();                                                                           \
        printf("%s %s\n", failures == before_ ? "ok  " : "FAIL", #test);                  \
    } while (0)

int main(void)
{
    RUN(test_init_checks_tools_and_buffers);
    RUN(test_connect_registers_tools_then_ready);
    RUN(test_connect_failure_is_returned);
    RUN(test_without_tools_ready_on_connected);
    RUN(test_registration_failures_are_errors_with_their_code);
    RUN(test_tools_disabled_error_still_gets_ready);
    RUN(test_text_turn);
    RUN(test_text_checks);
    RUN(test_send_failure_is_returned);
    RUN(test_device_tool_success);
    RUN(test_device_tool_failures);
    RUN(test_tool_result_too_large_or_not_utf8_fails_the_call);
    RUN(test_error_frame_ends_the_turn_with_its_code);
    RUN(test_error_outside_a_turn);
    RUN(test_stream_configure_partials_final_timing);
    RUN(test_cancel_drops_the_rest_of_the_turn);
    RUN(test_barge_in_cancel_then_new_text);
    RUN(test_barge_in_without_turn_ids);
    RUN(test_turn_ids_of_the_gateway_are_adopted);
    RUN(test_late_frames_of_an_ended_turn_are_dropped);
    RUN(test_close_ends_open_turns);
    RUN(test_cancel_after_the_answer_tells_what_was_heard);
    RUN(test_too_many_open_turns);
    RUN(test_reconnect_resumes_the_session_and_reregisters);
    RUN(test_resume_refused_carries_on_in_the_new_session);
    RUN(test_set_session_rules);
    RUN(test_session_moved_and_end_session);
    RUN(test_ping_pong);
    RUN(test_bad_frames_are_reported_not_fatal);
    RUN(test_oversized_frame_is_an_error_and_the_client_goes_on);
    RUN(test_calls_from_inside_callbacks);
    RUN(test_json_helpers);
    RUN(test_push_between_turns_is_spoken_and_opens_no_turn);
    RUN(test_push_while_a_turn_waits_leaves_that_turn_alone);
    RUN(test_push_that_interrupts_comes_after_the_cancelled_turn);
    RUN(test_pushes_held_for_a_reconnecting_device_do_not_disturb_the_resume);
    RUN(test_tool_visibility_is_sent_when_not_both);
    RUN(test_example_answers_tools_and_prints_the_answer);
    RUN(test_example_resume_and_context);
    RUN(test_example_stream_and_cancel_after_partials);
    RUN(test_example_prints_pushes_and_still_ends_on_its_own_answer);
    RUN(test_example_listens_for_pushes_without_a_sentence);
    RUN(test_example_failures_exit_non_zero);
    RUN(test_example_connection_refused);
    fake_free(&F.fake);
    if (failures > 0) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("all tests passed\n");
    return 0;
}
