#define _POSIX_C_SOURCE 200809L
#include "device_app.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int device_volume = 30;
int device_battery_level = 85;

/* The spec's device tools (section 10). */
static int get_battery(const cJSON *arguments, cJSON **result, char *error, size_t error_size, void *user)
{
    (void)arguments;
    (void)user;
    *result = cJSON_CreateObject();
    if (*result == NULL || cJSON_AddNumberToObject(*result, "level", device_battery_level) == NULL ||
        cJSON_AddBoolToObject(*result, "charging", 0) == NULL) {
        snprintf(error, error_size, "out of memory");
        return 1;
    }
    return 0;
}

static int set_volume(const cJSON *arguments, cJSON **result, char *error, size_t error_size, void *user)
{
    const cJSON *volume = cJSON_GetObjectItemCaseSensitive(arguments, "volume");
    double v;
    (void)user;
    if (!cJSON_IsNumber(volume) || (v = volume->valuedouble) < 0 || v > 100 || v != (double)(int)v) {
        snprintf(error, error_size, "volume must be an integer from 0 to 100");
        return 1;
    }
    device_volume = (int)v; /* a real device sets its codec here */
    *result = cJSON_CreateObject();
    if (*result == NULL || cJSON_AddNumberToObject(*result, "volume", device_volume) == NULL ||
        cJSON_AddStringToObject(*result, "status", "set") == NULL) {
        snprintf(error, error_size, "out of memory");
        return 1;
    }
    return 0;
}

static const llm_tool_t TOOLS[] = {
    {"get_battery", "获取设备当前电量百分比", "{\"type\":\"object\",\"properties\":{},\"required\":[]}", get_battery, NULL, LLM_VISIBILITY_BOTH},
    {"set_volume", "设置设备音量",
     "{\"type\":\"object\",\"properties\":{\"volume\":{\"type\":\"integer\",\"description\":\"音量值 0-100\","
     "\"minimum\":0,\"maximum\":100}},\"required\":[\"volume\"]}",
     set_volume, NULL, LLM_VISIBILITY_BOTH},
};

static void usage(FILE *err)
{
    fputs("usage: llm_device_example URL [options] \"sentence\"   (the sentence may be left out with --pushes)\n"
          "  --token T                 bearer token sent at the upgrade\n"
          "  --resume SESSION_ID       resume this session before the sentence\n"
          "  --print-session           print session_id=<id> once connected\n"
          "  --context                 configure enable_context true (the model sees the history)\n"
          "  --stream                  configure stream true (sentence partials, then the answer)\n"
          "  --cancel-after-partials N cancel the turn after N partial answers\n"
          "  --pushes N                also wait for N pushed answers (the sentence is then optional)\n"
          "  --timeout SECONDS         give up after this long (default 30)\n"
          "  --ca FILE                 PEM CA to trust for wss://\n"
          "  --verbose                 libwebsockets warnings on stderr\n"
          "exit: 0 answered, 1 error frame, 2 usage, 3 connection failed or closed, 4 timeout\n",
          err);
}

static int parse_count(const char *s, long max, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > max) return 0;
    *out = v;
    return 1;
}

int device_parse_args(int argc, char **argv, device_options_t *o, FILE *err)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = 30000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        long n;
        if (strcmp(a, "--token") == 0 && has_value) o->token = argv[++i];
        else if (strcmp(a, "--resume") == 0 && has_value) o->resume = argv[++i];
        else if (strcmp(a, "--ca") == 0 && has_value) o->ca_file = argv[++i];
        else if (strcmp(a, "--print-session") == 0) o->print_session = 1;
        else if (strcmp(a, "--stream") == 0) o->stream = 1;
        else if (strcmp(a, "--context") == 0) o->context = 1;
        else if (strcmp(a, "--verbose") == 0) o->verbose = 1;
        else if (strcmp(a, "--cancel-after-partials") == 0 && has_value) {
            if (!parse_count(argv[++i], 1000, &n) || n == 0) {
                fprintf(err, "llm_device_example: --cancel-after-partials needs a count from 1 to 1000\n");
                return DEVICE_EXIT_USAGE;
            }
            o->cancel_after_partials = (int)n;
        } else if (strcmp(a, "--pushes") == 0 && has_value) {
            if (!parse_count(argv[++i], 1000, &n) || n == 0) {
                fprintf(err, "llm_device_example: --pushes needs a count from 1 to 1000\n");
                return DEVICE_EXIT_USAGE;
            }
            o->pushes = (int)n;
        } else if (strcmp(a, "--timeout") == 0 && has_value) {
            if (!parse_count(argv[++i], 3600, &n) || n == 0) {
                fprintf(err, "llm_device_example: --timeout needs seconds from 1 to 3600\n");
                return DEVICE_EXIT_USAGE;
            }
            o->timeout_ms = (uint32_t)n * 1000;
        } else if (strncmp(a, "--", 2) == 0) {
            fprintf(err, "llm_device_example: unknown option or missing value: %s\n", a);
            usage(err);
            return DEVICE_EXIT_USAGE;
        } else if (o->url == NULL) o->url = a;
        else if (o->text == NULL) o->text = a;
        else {
            fprintf(err, "llm_device_example: unexpected argument: %s\n", a);
            usage(err);
            return DEVICE_EXIT_USAGE;
        }
    }
    if (o->url == NULL || (o->text == NULL && o->pushes == 0)) {
        usage(err);
        return DEVICE_EXIT_USAGE;
    }
    return 0;
}

/* ---- one conversation ------------------------------------------------------------------ */

#define SPOKEN_SIZE 4096

typedef struct {
    const device_options_t *o;
    llm_client_t *client;
    FILE *out, *err;
    int exit_code; /* -1 while running */
    int sent;
    int answered; /* the turn of the text ended: answered, or cancelled as asked */
    int partials;
    int cancelled;
    int pushes;   /* pushed answers printed */
    char spoken[SPOKEN_SIZE];
} run_t;

static void finish(run_t *r, int code)
{
    if (r->exit_code < 0) r->exit_code = code;
}

/* Done once the text's turn has ended and the pushes asked for have come. */
static void finish_when_done(run_t *r)
{
    if ((r->o->text == NULL || r->answered) && r->pushes >= r->o->pushes) finish(r, DEVICE_EXIT_OK);
}

/* A push is spoken like any answer; its errors and tools are reported and the run goes on. */
static void on_push_event(run_t *r, const llm_event_t *ev)
{
    switch (ev->type) {
    case LLM_EVENT_RESPONSE:
        if (ev->u.response.reminder_id != NULL) fprintf(r->out, "[push reminder_id=%s] %s\n", ev->u.response.reminder_id, ev->u.response.content);
        else fprintf(r->out, "[push] %s\n", ev->u.response.content);
        fflush(r->out);
        if (ev->u.response.is_final) {
            r->pushes++;
            finish_when_done(r);
        }
        break;
    case LLM_EVENT_ERROR:
        fprintf(r->err, "[push] error: %s: %s\n", ev->u.error.code, ev->u.error.message);
        break;
    case LLM_EVENT_TOOL:
        fprintf(r->err, "[push] tool %s ran on the %s: %s\n", ev->u.tool.name, ev->u.tool.on_device ? "device" : "server",
                ev->u.tool.success ? "ok" : "failed");
        break;
    case LLM_EVENT_STATUS:
        if (r->o->verbose) fprintf(r->err, "[push] status %s\n", ev->u.status.status);
        break;
    default:
        break;
    }
}

static void on_event(const llm_event_t *ev, void *user)
{
    run_t *r = (run_t *)user;
    int rc;
    if (r->exit_code >= 0) return;
    if (ev->origin_push) {
        on_push_event(r, ev);
        return;
    }
    switch (ev->type) {
    case LLM_EVENT_READY:
        if (r->o->print_session) {
            fprintf(r->out, "session_id=%s\n", ev->u.ready.session_id);
            fflush(r->out);
        }
        if (r->sent || r->o->text == NULL) break; /* a second READY would mean a reconnect, which this example does not do */
        rc = llm_client_send_text(r->client, r->o->text);
        if (rc != LLM_OK) {
            fprintf(r->err, "error: could not send the text: %s\n", llm_result_name(rc));
            finish(r, rc == LLM_ERR_NO_ROOM || rc == LLM_ERR_ARG ? DEVICE_EXIT_USAGE : DEVICE_EXIT_CONNECTION);
            break;
        }
        r->sent = 1;
        break;
    case LLM_EVENT_RESPONSE:
        fprintf(r->out, "%s\n", ev->u.response.content);
        fflush(r->out);
        if (ev->u.response.is_final) {
            r->answered = 1;
            finish_when_done(r);
            break;
        }
        r->partials++;
        if (strlen(r->spoken) + ev->u.response.length < sizeof r->spoken) strcat(r->spoken, ev->u.response.content);
        if (r->o->cancel_after_partials > 0 && r->partials == r->o->cancel_after_partials && !r->cancelled) {
            rc = llm_client_cancel(r->client, r->spoken);
            if (rc != LLM_OK) {
                fprintf(r->err, "error: could not cancel: %s\n", llm_result_name(rc));
                finish(r, DEVICE_EXIT_CONNECTION);
                break;
            }
            r->cancelled = 1;
            fprintf(r->err, "cancel sent after %d partial answers\n", r->partials);
        }
        break;
    case LLM_EVENT_TURN_END:
        if (r->answered) break;
        if (ev->u.turn_end.cancelled) {
            fprintf(r->out, "cancelled turn_id=%s\n", ev->turn_id);
            fflush(r->out);
            r->answered = 1;
            finish_when_done(r);
        } else {
            fprintf(r->err, "error: the turn ended without a final answer\n");
            finish(r, DEVICE_EXIT_ERROR_FRAME);
        }
        break;
    case LLM_EVENT_ERROR:
        fprintf(r->err, "error: %s: %s%s%s%s\n", ev->u.error.code, ev->u.error.message,
                ev->u.error.details != NULL ? " (" : "", ev->u.error.details != NULL ? ev->u.error.details : "",
                ev->u.error.details != NULL ? ")" : "");
        finish(r, DEVICE_EXIT_ERROR_FRAME);
        break;
    case LLM_EVENT_TOOL:
        fprintf(r->err, "tool %s ran on the %s: %s\n", ev->u.tool.name, ev->u.tool.on_device ? "device" : "server",
                ev->u.tool.success ? "ok" : "failed");
        break;
    case LLM_EVENT_STATUS:
        if (r->o->verbose) fprintf(r->err, "status %s\n", ev->u.status.status);
        break;
    case LLM_EVENT_PONG:
        break;
    case LLM_EVENT_CLOSED:
        fprintf(r->err, "error: the connection closed (%s)\n", ev->u.error.code);
        finish(r, DEVICE_EXIT_CONNECTION);
        break;
    }
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int device_run(const device_options_t *o, const llm_transport_t *transport, device_transport_error_t transport_error,
               FILE *out, FILE *err)
{
    static char send_buffer[16384];
    llm_client_t client;
    llm_client_config_t cfg;
    run_t r;
    uint64_t deadline = now_ms() + o->timeout_ms;
    int rc;

    memset(&r, 0, sizeof r);
    r.o = o;
    r.client = &client;
    r.out = out;
    r.err = err;
    r.exit_code = -1;

    memset(&cfg, 0, sizeof cfg);
    cfg.transport = transport;
    cfg.tools = TOOLS;
    cfg.tool_count = sizeof TOOLS / sizeof TOOLS[0];
    cfg.send_buffer = send_buffer;
    cfg.send_buffer_size = sizeof send_buffer;
    cfg.on_event = on_event;
    cfg.user = &r;
    rc = llm_client_init(&client, &cfg);
    if (rc != LLM_OK) {
        fprintf(err, "error: llm_client_init: %s\n", llm_result_name(rc));
        return DEVICE_EXIT_USAGE;
    }
    if (o->resume != NULL && llm_client_set_session(&client, o->resume) != LLM_OK) {
        fprintf(err, "error: --resume: not a session id this client can hold\n");
        return DEVICE_EXIT_USAGE;
    }
    if (o->stream || o->context) {
        llm_settings_t s = llm_settings_none();
        if (o->stream) s.stream = 1;
        if (o->context) s.enable_context = 1;
        llm_client_configure(&client, &s);
    }

    rc = llm_client_connect(&client, o->url, o->token, o->timeout_ms);
    if (rc != LLM_OK) {
        const char *why = transport_error != NULL ? transport_error(transport) : "";
        fprintf(err, "error: could not connect to %s: %s%s%s\n", o->url, llm_result_name(rc),
                why != NULL && why[0] != '\0' ? ": " : "", why != NULL ? why : "");
        return rc == LLM_ERR_TIMEOUT ? DEVICE_EXIT_TIMEOUT : DEVICE_EXIT_CONNECTION;
    }
    while (r.exit_code < 0) {
        uint64_t now = now_ms();
        uint32_t wait;
        if (now >= deadline) {
            if (o->text != NULL && !r.answered) fprintf(err, "error: timeout: no answer within %u s\n", (unsigned)(o->timeout_ms / 1000));
            else fprintf(err, "error: timeout: %d of %d pushed answers within %u s\n", r.pushes, o->pushes, (unsigned)(o->timeout_ms / 1000));
            r.exit_code = DEVICE_EXIT_TIMEOUT;
            break;
        }
        wait = deadline - now > 100 ? 100 : (uint32_t)(deadline - now);
        rc = llm_client_poll(&client, wait);
        if (rc == LLM_ERR_CLOSED && r.exit_code < 0) r.exit_code = DEVICE_EXIT_CONNECTION;
    }
    llm_client_close(&client);
    return r.exit_code;
}
