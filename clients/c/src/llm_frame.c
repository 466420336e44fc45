#include "llm_frame.h"

#include <math.h>
#include <string.h>

#include "llm_json.h"

static const char *string_of(const cJSON *object, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static int32_t millis_of(const cJSON *timing, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(timing, key);
    double v;
    if (!cJSON_IsNumber(item)) return -1;
    v = item->valuedouble;
    if (!(v >= 0) || v > 2147483647.0) return -1; /* also NaN */
    return (int32_t)floor(v + 0.5);
}

static const struct {
    const char *name;
    llm_frame_type_t type;
} TYPES[] = {
    {"status", LLM_FRAME_STATUS},
    {"llm_response", LLM_FRAME_RESPONSE},
    {"tool_call", LLM_FRAME_TOOL_CALL},
    {"tool_callback", LLM_FRAME_TOOL_CALLBACK},
    {"tools_registered", LLM_FRAME_TOOLS_REGISTERED},
    {"error", LLM_FRAME_ERROR},
    {"pong", LLM_FRAME_PONG},
};

static int fail(llm_frame_t *frame, const char **problem, const char *why)
{
    cJSON_Delete(frame->root);
    frame->root = NULL;
    *problem = why;
    return LLM_ERR_ARG;
}

int llm_frame_parse(const char *data, size_t len, llm_frame_t *frame, const char **problem)
{
    const char *type;
    const cJSON *item;

    memset(frame, 0, sizeof *frame);
    *problem = NULL;
    frame->turn_id = "";
    frame->seq = -1;
    frame->is_final = 1;
    frame->timing.first_token_ms = frame->timing.first_sentence_ms = frame->timing.total_ms =
        frame->timing.llm_ms = frame->timing.tools_ms = -1;

    if (len == 0) {
        *problem = "empty frame";
        return LLM_ERR_ARG;
    }
    if (!llm_json_depth_ok(data, len, LLM_MAX_JSON_DEPTH)) {
        *problem = "frame nested deeper than LLM_MAX_JSON_DEPTH";
        return LLM_ERR_ARG;
    }
    frame->root = cJSON_ParseWithLength(data, len);
    if (frame->root == NULL) {
        /* cJSON does not say whether it ran out of memory; a probe of one node tells. */
        cJSON *probe = cJSON_CreateNull();
        if (probe == NULL) return LLM_ERR_NOMEM;
        cJSON_Delete(probe);
        *problem = "frame is not JSON";
        return LLM_ERR_ARG;
    }
    if (!cJSON_IsObject(frame->root)) return fail(frame, problem, "frame is not a JSON object");
    type = string_of(frame->root, "type");
    if (type == NULL) return fail(frame, problem, "frame has no string \"type\"");

    frame->type = LLM_FRAME_UNKNOWN;
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++) {
        if (strcmp(type, TYPES[i].name) == 0) frame->type = TYPES[i].type;
    }
    if (frame->type == LLM_FRAME_UNKNOWN) return LLM_OK;

    /* A turn id the client cannot hold would make cancel and stale-frame checks lie. */
    item = cJSON_GetObjectItemCaseSensitive(frame->root, "turn_id");
    if (cJSON_IsString(item)) {
        if (strlen(item->valuestring) >= LLM_TURN_ID_SIZE) return fail(frame, problem, "turn_id longer than LLM_TURN_ID_SIZE - 1");
        frame->turn_id = item->valuestring;
    }
    item = cJSON_GetObjectItemCaseSensitive(frame->root, "origin");
    frame->push = cJSON_IsString(item) && strcmp(item->valuestring, "push") == 0;

    switch (frame->type) {
    case LLM_FRAME_STATUS:
        frame->status = string_of(frame->root, "status");
        if (frame->status == NULL) return fail(frame, problem, "status frame without a string \"status\"");
        frame->data = cJSON_GetObjectItemCaseSensitive(frame->root, "data");
        if (!cJSON_IsObject(frame->data)) frame->data = NULL;
        frame->session_id = string_of(frame->data, "session_id");
        if (strcmp(frame->status, "connected") == 0) {
            if (frame->session_id == NULL || frame->session_id[0] == '\0') {
                return fail(frame, problem, "status connected without data.session_id");
            }
        }
        if (frame->session_id != NULL && strlen(frame->session_id) >= LLM_SESSION_ID_SIZE) {
            return fail(frame, problem, "session_id longer than LLM_SESSION_ID_SIZE - 1");
        }
        if (frame->turn_id[0] == '\0') {
            /* issue 16's status cancelled names its turn in data */
            const char *in_data = string_of(frame->data, "turn_id");
            if (in_data != NULL) {
                if (strlen(in_data) >= LLM_TURN_ID_SIZE) return fail(frame, problem, "turn_id longer than LLM_TURN_ID_SIZE - 1");
                frame->turn_id = in_data;
            }
        }
        break;
    case LLM_FRAME_RESPONSE:
        frame->content = string_of(frame->root, "content");
        if (frame->content == NULL) return fail(frame, problem, "llm_response without a string \"content\"");
        item = cJSON_GetObjectItemCaseSensitive(frame->root, "is_final");
        if (cJSON_IsBool(item)) frame->is_final = cJSON_IsTrue(item);
        item = cJSON_GetObjectItemCaseSensitive(frame->root, "seq");
        if (cJSON_IsNumber(item) && item->valuedouble >= 0 && item->valuedouble <= 2147483647.0) {
            frame->seq = (int)item->valuedouble;
        }
        frame->reminder_id = string_of(frame->root, "reminder_id");
        item = cJSON_GetObjectItemCaseSensitive(frame->root, "timing");
        if (cJSON_IsObject(item)) {
            frame->timing.first_token_ms = millis_of(item, "first_token_ms");
            frame->timing.first_sentence_ms = millis_of(item, "first_sentence_ms");
            frame->timing.total_ms = millis_of(item, "total_ms");
            frame->timing.llm_ms = millis_of(item, "llm_ms");
            frame->timing.tools_ms = millis_of(item, "tools_ms");
        }
        break;
    case LLM_FRAME_TOOL_CALL:
        frame->tool_name = string_of(frame->root, "tool_name");
        if (frame->tool_name == NULL) return fail(frame, problem, "tool_call without a string \"tool_name\"");
        frame->success = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(frame->root, "success"));
        break;
    case LLM_FRAME_TOOL_CALLBACK:
        frame->call_id = string_of(frame->root, "call_id");
        frame->tool_name = string_of(frame->root, "tool_name");
        if (frame->call_id == NULL || frame->call_id[0] == '\0') return fail(frame, problem, "tool_callback without a \"call_id\"");
        if (frame->tool_name == NULL) return fail(frame, problem, "tool_callback without a string \"tool_name\"");
        frame->arguments = cJSON_GetObjectItemCaseSensitive(frame->root, "arguments");
        if (cJSON_IsNull(frame->arguments)) frame->arguments = NULL;
        break;
    case LLM_FRAME_TOOLS_REGISTERED:
        frame->tools = cJSON_GetObjectItemCaseSensitive(frame->root, "tools");
        if (!cJSON_IsArray(frame->tools)) frame->tools = NULL;
        break;
    case LLM_FRAME_ERROR:
        frame->code = string_of(frame->root, "code");
        if (frame->code == NULL) return fail(frame, problem, "error frame without a string \"code\"");
        frame->message = string_of(frame->root, "message");
        if (frame->message == NULL) frame->message = "";
        frame->details = string_of(frame->root, "details");
        break;
    case LLM_FRAME_PONG:
    case LLM_FRAME_UNKNOWN:
        break;
    }
    return LLM_OK;
}

void llm_frame_release(llm_frame_t *frame)
{
    cJSON_Delete(frame->root);
    frame->root = NULL;
}
