/*
 * What a turn with two device tools costs: the client's own size, the largest frames each
 * way, the high-water mark of cJSON's heap (a counting allocator through cJSON_InitHooks),
 * and the stack the client used (a painted thread stack). The frames are the ones the
 * gateway sends for such a turn. Fails on a leak, or if the heap peak passes a bound.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_transport.h"
#include "llm_client.h"

/* ---- counting allocator ---------------------------------------------------------------- */

typedef union {
    size_t size;
    long double align_ld;
    void *align_p;
    long long align_ll;
} header_t;

static size_t live_bytes, live_blocks, peak_bytes, peak_blocks, total_allocations;

static void *count_malloc(size_t size)
{
    header_t *h = (header_t *)malloc(sizeof(header_t) + size);
    if (h == NULL) return NULL;
    h->size = size;
    live_bytes += size;
    live_blocks++;
    total_allocations++;
    if (live_bytes > peak_bytes) {
        peak_bytes = live_bytes;
        peak_blocks = live_blocks;
    }
    return h + 1;
}

static void count_free(void *p)
{
    header_t *h;
    if (p == NULL) return;
    h = (header_t *)p - 1;
    live_bytes -= h->size;
    live_blocks--;
    free(h);
}

/* ---- the device -------------------------------------------------------------------------- */

static int get_battery(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)args;
    (void)error;
    (void)error_size;
    (void)user;
    *result = cJSON_CreateObject();
    cJSON_AddNumberToObject(*result, "level", 85);
    cJSON_AddBoolToObject(*result, "charging", 0);
    return 0;
}

static int set_volume(const cJSON *args, cJSON **result, char *error, size_t error_size, void *user)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "volume");
    (void)user;
    if (!cJSON_IsNumber(v)) {
        snprintf(error, error_size, "volume must be a number");
        return 1;
    }
    *result = cJSON_CreateObject();
    cJSON_AddNumberToObject(*result, "volume", v->valuedouble);
    cJSON_AddStringToObject(*result, "status", "set");
    return 0;
}

static const llm_tool_t TOOLS[] = {
    {"get_battery", "获取设备当前电量百分比", "{\"type\":\"object\",\"properties\":{},\"required\":[]}", get_battery, NULL, LLM_VISIBILITY_BOTH},
    {"set_volume", "设置设备音量",
     "{\"type\":\"object\",\"properties\":{\"volume\":{\"type\":\"integer\",\"description\":\"音量值 0-100\","
     "\"minimum\":0,\"maximum\":100}},\"required\":[\"volume\"]}",
     set_volume, NULL, LLM_VISIBILITY_BOTH},
};

/* What the gateway sends for: connect, register both tools, "电量多少？顺便把音量调到40", the
 * model calling both tools in one round, then answering. */
static const char *const FRAMES[] = {
    "{\"type\":\"status\",\"status\":\"connected\",\"data\":{\"session_id\":\"6f1c2a9e-7d4b-4c1e-9a53-0b8e2f61d7c4\"},\"timestamp\":\"2025-02-21T10:30:00.000Z\"}",
    "{\"type\":\"tools_registered\",\"count\":2,\"tools\":[{\"name\":\"get_battery\",\"status\":\"registered\"},{\"name\":\"set_volume\",\"status\":\"registered\"}],\"timestamp\":\"2025-02-21T10:30:00.010Z\"}",
    "{\"type\":\"status\",\"status\":\"processing\",\"data\":{\"message\":\"Processing your request...\"},\"timestamp\":\"2025-02-21T10:30:01.000Z\"}",
    "{\"type\":\"status\",\"status\":\"waiting_for_tools\",\"data\":{\"pending_tools\":2},\"timestamp\":\"2025-02-21T10:30:01.400Z\"}",
    "{\"type\":\"tool_callback\",\"call_id\":\"3b2f9c1e-52a4-4f0e-8d7b-91c0a6e4f2d8\",\"tool_name\":\"get_battery\",\"arguments\":{},\"timestamp\":\"2025-02-21T10:30:01.401Z\"}",
    "{\"type\":\"tool_callback\",\"call_id\":\"9a7e4d2c-1b6f-4e3a-b5c8-0d2f7e9a1c64\",\"tool_name\":\"set_volume\",\"arguments\":{\"volume\":40},\"timestamp\":\"2025-02-21T10:30:01.402Z\"}",
    "{\"type\":\"llm_response\",\"content\":\"您的设备电量还剩85%，没有在充电。音量已经调到40了。\",\"tool_calls\":["
    "{\"call_id\":\"call_1_0\",\"name\":\"get_battery\",\"arguments\":{},\"location\":\"client\",\"success\":true},"
    "{\"call_id\":\"call_1_1\",\"name\":\"set_volume\",\"arguments\":{\"volume\":40},\"location\":\"client\",\"success\":true}],"
    "\"is_final\":true,\"timestamp\":\"2025-02-21T10:30:02.500Z\"}",
    "{\"type\":\"status\",\"status\":\"idle\",\"data\":{\"session_id\":\"6f1c2a9e-7d4b-4c1e-9a53-0b8e2f61d7c4\"},\"timestamp\":\"2025-02-21T10:30:02.501Z\"}",
};
#define FRAME_COUNT (sizeof FRAMES / sizeof FRAMES[0])

static int answered, ended, errors;

static void on_event(const llm_event_t *ev, void *user)
{
    (void)user;
    if (ev->type == LLM_EVENT_READY) {
        if (llm_client_send_text((llm_client_t *)user, "电量多少？顺便把音量调到40") != LLM_OK) errors++;
    }
    if (ev->type == LLM_EVENT_RESPONSE && ev->u.response.is_final) answered++;
    if (ev->type == LLM_EVENT_TURN_END) ended++;
    if (ev->type == LLM_EVENT_ERROR) {
        fprintf(stderr, "unexpected error event: %s %s\n", ev->u.error.code, ev->u.error.message);
        errors++;
    }
}

static fake_transport_t fake;
static char send_buffer[FAKE_HEADROOM + 2048];
static llm_client_t client;
static size_t largest_received;

static void *run_turn(void *unused)
{
    llm_client_config_t cfg;
    (void)unused;
    memset(&cfg, 0, sizeof cfg);
    cfg.transport = &fake.iface;
    cfg.tools = TOOLS;
    cfg.tool_count = 2;
    cfg.send_buffer = send_buffer;
    cfg.send_buffer_size = sizeof send_buffer;
    cfg.on_event = on_event;
    cfg.user = &client;
    if (llm_client_init(&client, &cfg) != LLM_OK) return (void *)1;
    if (llm_client_connect(&client, "ws://gateway/", NULL, 1000) != LLM_OK) return (void *)1;
    for (size_t i = 0; i < FRAME_COUNT; i++) {
        fake_push(&fake, FRAMES[i]);
        if (strlen(FRAMES[i]) > largest_received) largest_received = strlen(FRAMES[i]);
        if (llm_client_poll(&client, 0) != 1) return (void *)1;
    }
    llm_client_close(&client);
    return NULL;
}

#define STACK_SIZE (256 * 1024)
#define PAINT 0xA5

int main(void)
{
    cJSON_Hooks hooks = {count_malloc, count_free};
    size_t largest_sent = 0;
    const char *largest_sent_type = "";
    size_t stack_used = 0;
    int failed = 0;
    pthread_t thread;
    pthread_attr_t attr;
    unsigned char *stack;
    void *thread_result = NULL;

    cJSON_InitHooks(&hooks);
    fake_init(&fake);

    /* Run the turn on a painted stack of our own, to see how deep the client went. */
    if (posix_memalign((void **)&stack, 4096, STACK_SIZE) != 0) return 1;
    memset(stack, PAINT, STACK_SIZE);
    pthread_attr_init(&attr);
    if (pthread_attr_setstack(&attr, stack, STACK_SIZE) != 0 || pthread_create(&thread, &attr, run_turn, NULL) != 0) {
        fprintf(stderr, "could not start the measuring thread\n");
        return 1;
    }
    pthread_join(thread, &thread_result);
    pthread_attr_destroy(&attr);
    for (size_t i = 0; i < STACK_SIZE; i++) {
        if (stack[i] != PAINT) {
            stack_used = STACK_SIZE - i; /* the stack grows down */
            break;
        }
    }
    free(stack);

    for (size_t i = 0; i < fake.sent_count; i++) {
        if (strlen(fake.sent[i]) > largest_sent) {
            largest_sent = strlen(fake.sent[i]);
            largest_sent_type = fake.sent[i];
        }
    }

    printf("A turn with two device tools (get_battery, set_volume, one round), frames as the gateway sends them:\n");
    printf("  llm_client_t (static, fixed):          %zu bytes\n", sizeof(llm_client_t));
    printf("  largest frame sent:                    %zu bytes (%.30s...)\n", largest_sent, largest_sent_type);
    printf("  largest frame received:                %zu bytes\n", largest_received);
    printf("  cJSON heap high-water:                 %zu bytes in %zu blocks (requested sizes)\n", peak_bytes, peak_blocks);
    printf("  cJSON allocations over the turn:       %zu\n", total_allocations);
    printf("  cJSON heap after the turn:             %zu bytes in %zu blocks\n", live_bytes, live_blocks);
    printf("  stack high-water (x86-64, glibc):      %zu bytes, measuring thread included\n", stack_used);
    printf("MEMORY client=%zu sent=%zu received=%zu heap_peak=%zu heap_blocks=%zu stack=%zu\n", sizeof(llm_client_t),
           largest_sent, largest_received, peak_bytes, peak_blocks, stack_used);

    if (thread_result != NULL || errors != 0 || answered != 1 || ended != 1) {
        fprintf(stderr, "FAIL: the turn did not complete (answered=%d ended=%d errors=%d)\n", answered, ended, errors);
        failed = 1;
    }
    if (fake_count_of(&fake, "tool_result") != 2) {
        fprintf(stderr, "FAIL: %zu tool_result frames sent, want 2\n", fake_count_of(&fake, "tool_result"));
        failed = 1;
    }
    if (live_bytes != 0 || live_blocks != 0) {
        fprintf(stderr, "FAIL: cJSON memory leaked\n");
        failed = 1;
    }
    /* A regression guard, about twice today's figure: parsing a frame costs roughly its size
     * twice over, and only one frame is parsed at a time. */
    if (peak_bytes > 8192) {
        fprintf(stderr, "FAIL: heap high-water %zu bytes is over 8192\n", peak_bytes);
        failed = 1;
    }
    fake_free(&fake);
    return failed;
}
