#include "llm_client.h"

#include <stdio.h>
#include <string.h>

#include "llm_client_internal.h"
#include "llm_frame.h"
#include "llm_json.h"

enum {
    PHASE_NONE,
    PHASE_AWAIT_CONNECTED, /* the gateway's first status connected */
    PHASE_AWAIT_RESUMED,   /* start_session sent for the session to resume */
    PHASE_AWAIT_REGISTERED,
    PHASE_READY
};

/* Room for a tool handler's failure message. */
#define TOOL_ERROR_SIZE 160
#define TOOL_NAME_MAX 64

const char *llm_result_name(int result)
{
    switch (result) {
    case LLM_OK: return "LLM_OK";
    case LLM_ERR_ARG: return "LLM_ERR_ARG";
    case LLM_ERR_STATE: return "LLM_ERR_STATE";
    case LLM_ERR_NO_ROOM: return "LLM_ERR_NO_ROOM";
    case LLM_ERR_NOMEM: return "LLM_ERR_NOMEM";
    case LLM_ERR_TRANSPORT: return "LLM_ERR_TRANSPORT";
    case LLM_ERR_CLOSED: return "LLM_ERR_CLOSED";
    case LLM_ERR_TIMEOUT: return "LLM_ERR_TIMEOUT";
    case LLM_ERR_TOO_LARGE: return "LLM_ERR_TOO_LARGE";
    default: return "LLM_ERR_UNKNOWN";
    }
}

llm_settings_t llm_settings_none(void)
{
    llm_settings_t s;
    s.temperature = LLM_UNSET;
    s.max_tokens = LLM_UNSET;
    s.enable_context = LLM_UNSET;
    s.clean_response = LLM_UNSET;
    s.stream = LLM_UNSET;
    s.language = NULL;
    return s;
}

/* ---- events ---------------------------------------------------------------------------- */

static void emit(llm_client_t *c, llm_event_t *ev)
{
    if (ev->turn_id == NULL) ev->turn_id = "";
    if (c->cfg.on_event != NULL) c->cfg.on_event(ev, c->cfg.user);
}

static void emit_error_of(llm_client_t *c, const char *turn_id, int push, const char *code, const char *message,
                          const char *details)
{
    llm_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.type = LLM_EVENT_ERROR;
    ev.turn_id = turn_id;
    ev.origin_push = push;
    ev.u.error.code = code;
    ev.u.error.message = message;
    ev.u.error.details = details;
    emit(c, &ev);
}

static void emit_error(llm_client_t *c, const char *turn_id, const char *code, const char *message,
                       const char *details)
{
    emit_error_of(c, turn_id, 0, code, message, details);
}

/* ---- sending --------------------------------------------------------------------------- */

static void begin_frame(llm_client_t *c, llm_jw_t *w, const char *type)
{
    size_t headroom = c->cfg.transport->send_headroom;
    llm_jw_init(w, c->cfg.send_buffer + headroom, c->cfg.send_buffer_size - headroom);
    llm_jw_raw(w, "{\"type\":");
    llm_jw_str(w, type);
}

static void add_key(llm_jw_t *w, const char *key)
{
    llm_jw_raw(w, ",");
    llm_jw_str(w, key);
    llm_jw_raw(w, ":");
}

static int send_frame(llm_client_t *c, llm_jw_t *w)
{
    int rc;
    llm_jw_raw(w, "}");
    rc = llm_jw_finish(w);
    if (rc != LLM_OK) return rc;
    return c->cfg.transport->send_text(c->cfg.transport->ctx, w->buf, w->len);
}

static void write_register_tools(llm_client_t *c, llm_jw_t *w)
{
    begin_frame(c, w, "register_tools");
    add_key(w, "tools");
    llm_jw_raw(w, "[");
    for (size_t i = 0; i < c->cfg.tool_count; i++) {
        const llm_tool_t *t = &c->cfg.tools[i];
        if (i > 0) llm_jw_raw(w, ",");
        llm_jw_raw(w, "{\"name\":");
        llm_jw_str(w, t->name);
        add_key(w, "description");
        llm_jw_str(w, t->description);
        add_key(w, "parameters");
        llm_jw_raw(w, t->parameters); /* checked to be one JSON object by llm_client_init */
        if (t->visibility != LLM_VISIBILITY_BOTH) {
            add_key(w, "visibility");
            llm_jw_str(w, t->visibility == LLM_VISIBILITY_AGENTS ? "agents" : "model");
        }
        llm_jw_raw(w, "}");
    }
    llm_jw_raw(w, "]");
}

static int send_configure(llm_client_t *c)
{
    llm_jw_t w;
    const llm_settings_t *s = &c->settings;
    begin_frame(c, &w, "configure");
    if (s->temperature >= 0) { add_key(&w, "temperature"); llm_jw_double(&w, s->temperature); }
    if (s->max_tokens != LLM_UNSET) { add_key(&w, "max_tokens"); llm_jw_int(&w, s->max_tokens); }
    if (s->enable_context != LLM_UNSET) { add_key(&w, "enable_context"); llm_jw_raw(&w, s->enable_context ? "true" : "false"); }
    if (s->clean_response != LLM_UNSET) { add_key(&w, "clean_response"); llm_jw_raw(&w, s->clean_response ? "true" : "false"); }
    if (s->stream != LLM_UNSET) { add_key(&w, "stream"); llm_jw_raw(&w, s->stream ? "true" : "false"); }
    if (c->language[0] != '\0') { add_key(&w, "language"); llm_jw_str(&w, c->language); }
    return send_frame(c, &w);
}

/* ---- turns ----------------------------------------------------------------------------- */

static llm_turn_t *turn_at(llm_client_t *c, unsigned i)
{
    return &c->turns[(c->turn_head + i) % LLM_MAX_TURNS];
}

static llm_turn_t *newest_turn(llm_client_t *c)
{
    return c->turn_count > 0 ? turn_at(c, c->turn_count - 1) : NULL;
}

/* Whether id is one this client gave a turn ("t" and its number). */
static int issued_here(const llm_client_t *c, const char *id)
{
    unsigned long n = 0;
    if (id[0] != 't' || id[1] == '\0' || id[1] == '0') return 0;
    for (const char *p = id + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || n > 0xffffffffUL / 10) return 0;
        n = n * 10 + (unsigned long)(*p - '0');
    }
    return n >= 1 && n <= c->turn_counter;
}

/* The turn a frame belongs to: the one it names, else the oldest still open. A gateway that
 * names turns its own way has its name adopted by the oldest turn not yet named. NULL when
 * no turn is open, or when the frame names a turn already over (*stale set). */
static llm_turn_t *turn_of(llm_client_t *c, const char *turn_id, int *stale)
{
    *stale = 0;
    if (turn_id[0] != '\0') {
        for (unsigned i = 0; i < c->turn_count; i++) {
            llm_turn_t *t = turn_at(c, i);
            if (strcmp(t->id, turn_id) == 0) {
                t->confirmed = 1;
                return t;
            }
        }
        if (strcmp(turn_id, c->ended_turn_id) == 0 || issued_here(c, turn_id)) {
            *stale = 1;
            return NULL;
        }
    }
    if (c->turn_count == 0) return NULL;
    if (turn_id[0] != '\0') {
        for (unsigned i = 0; i < c->turn_count; i++) {
            llm_turn_t *t = turn_at(c, i);
            if (!t->confirmed) {
                snprintf(t->id, sizeof t->id, "%s", turn_id);
                t->confirmed = 1;
                return t;
            }
        }
    }
    return turn_at(c, 0);
}

static void end_turn(llm_client_t *c, llm_turn_t *t)
{
    llm_event_t ev;
    llm_turn_t ended = *t;
    unsigned index = (unsigned)(t - c->turns);
    unsigned pos = (index + LLM_MAX_TURNS - c->turn_head) % LLM_MAX_TURNS;

    /* remove it, keeping the others in order */
    for (unsigned i = pos; i + 1 < c->turn_count; i++) *turn_at(c, i) = *turn_at(c, i + 1);
    c->turn_count--;
    memcpy(c->ended_turn_id, ended.id, sizeof ended.id);
    if (c->turn_count == 0) {
        c->turn_head = 0;
        if (c->state == LLM_STATE_IN_TURN) c->state = LLM_STATE_READY;
    }
    memset(&ev, 0, sizeof ev);
    ev.type = LLM_EVENT_TURN_END;
    ev.turn_id = ended.id;
    ev.u.turn_end.cancelled = ended.cancelled;
    ev.u.turn_end.failed = ended.failed;
    emit(c, &ev);
}

/* ---- the connection's setup: session, resume, tools ------------------------------------ */

static void become_ready(llm_client_t *c)
{
    llm_event_t ev;
    c->phase = PHASE_READY;
    c->state = c->turn_count > 0 ? LLM_STATE_IN_TURN : LLM_STATE_READY;
    if (c->has_settings) {
        int rc = send_configure(c);
        if (rc != LLM_OK) emit_error(c, "", "CLIENT_SEND_FAILED", "could not send configure", llm_result_name(rc));
    }
    memset(&ev, 0, sizeof ev);
    ev.type = LLM_EVENT_READY;
    ev.u.ready.session_id = c->session_id;
    ev.u.ready.resumed = c->resumed;
    emit(c, &ev);
}

static void register_or_ready(llm_client_t *c)
{
    llm_jw_t w;
    int rc;
    if (c->cfg.tool_count == 0) {
        become_ready(c);
        return;
    }
    write_register_tools(c, &w);
    rc = send_frame(c, &w);
    if (rc != LLM_OK) {
        emit_error(c, "", "CLIENT_SEND_FAILED", "could not send register_tools", llm_result_name(rc));
        become_ready(c);
        return;
    }
    c->phase = PHASE_AWAIT_REGISTERED;
}

static void on_connected(llm_client_t *c, const llm_frame_t *f)
{
    llm_event_t ev;
    if (c->phase == PHASE_AWAIT_CONNECTED) {
        if (c->resume_pending && c->session_id[0] != '\0' && strcmp(c->session_id, f->session_id) != 0) {
            llm_jw_t w;
            int rc;
            snprintf(c->fresh_session_id, sizeof c->fresh_session_id, "%s", f->session_id);
            begin_frame(c, &w, "start_session");
            add_key(&w, "session_id");
            llm_jw_str(&w, c->session_id);
            rc = send_frame(c, &w);
            if (rc == LLM_OK) {
                c->phase = PHASE_AWAIT_RESUMED;
                return;
            }
            emit_error(c, "", "CLIENT_SEND_FAILED", "could not send start_session", llm_result_name(rc));
        }
        c->resumed = c->resume_pending && strcmp(c->session_id, f->session_id) == 0;
        c->resume_pending = 0;
        snprintf(c->session_id, sizeof c->session_id, "%s", f->session_id);
        register_or_ready(c);
        return;
    }
    if (c->phase == PHASE_AWAIT_RESUMED) {
        c->resumed = strcmp(c->session_id, f->session_id) == 0;
        c->resume_pending = 0;
        snprintf(c->session_id, sizeof c->session_id, "%s", f->session_id);
        register_or_ready(c);
        return;
    }
    /* Moved to another session: after end_session, or when another connection resumed ours. */
    snprintf(c->session_id, sizeof c->session_id, "%s", f->session_id);
    memset(&ev, 0, sizeof ev);
    ev.type = LLM_EVENT_STATUS;
    ev.turn_id = f->turn_id;
    ev.u.status.status = f->status;
    ev.u.status.session_id = c->session_id;
    ev.u.status.data = f->data;
    emit(c, &ev);
}

static void on_tools_registered(llm_client_t *c, const llm_frame_t *f)
{
    const cJSON *tool;
    cJSON_ArrayForEach(tool, f->tools)
    {
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(tool, "status");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(tool, "name");
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(tool, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(tool, "code");
        if (cJSON_IsString(status) && strcmp(status->valuestring, "registered") == 0) continue;
        emit_error(c, "", cJSON_IsString(code) ? code->valuestring : "TOOL_REGISTRATION_FAILED",
                   cJSON_IsString(error) ? error->valuestring : "Tool registration failed",
                   cJSON_IsString(name) ? name->valuestring : NULL);
    }
    if (c->phase == PHASE_AWAIT_REGISTERED) become_ready(c);
}

/* ---- turn frames ----------------------------------------------------------------------- */

static const llm_tool_t *find_tool(const llm_client_t *c, const char *name)
{
    for (size_t i = 0; i < c->cfg.tool_count; i++) {
        if (strcmp(c->cfg.tools[i].name, name) == 0) return &c->cfg.tools[i];
    }
    return NULL;
}

static int send_tool_result(llm_client_t *c, const char *call_id, int success, const cJSON *result,
                            const char *error)
{
    llm_jw_t w;
    begin_frame(c, &w, "tool_result");
    add_key(&w, "call_id");
    llm_jw_str(&w, call_id);
    add_key(&w, "success");
    llm_jw_raw(&w, success ? "true" : "false");
    add_key(&w, "result");
    llm_jw_cjson(&w, success ? result : NULL);
    if (!success) {
        add_key(&w, "error");
        llm_jw_str(&w, error);
    }
    return send_frame(c, &w);
}

static void on_tool_callback(llm_client_t *c, const llm_frame_t *f, const char *turn_id, int push)
{
    const llm_tool_t *tool = find_tool(c, f->tool_name);
    char error[TOOL_ERROR_SIZE];
    cJSON *result = NULL;
    int ok = 0;
    int rc;
    llm_event_t ev;

    error[0] = '\0';
    if (tool == NULL) {
        snprintf(error, sizeof error, "Tool '%.*s' not found", TOOL_NAME_MAX, f->tool_name);
    } else {
        ok = tool->handler(f->arguments, &result, error, sizeof error, tool->user) == 0;
        error[sizeof error - 1] = '\0';
        if (!ok && error[0] == '\0') snprintf(error, sizeof error, "%s failed", tool->name);
        if (!ok && !llm_utf8_valid(error, strlen(error))) snprintf(error, sizeof error, "%s failed (its message was not UTF-8)", tool->name);
    }
    rc = send_tool_result(c, f->call_id, ok, result, error);
    if (rc == LLM_ERR_NO_ROOM || rc == LLM_ERR_ARG) {
        /* Tell the gateway now rather than let it wait for TOOL_RESULT_TIMEOUT. */
        const char *why = rc == LLM_ERR_NO_ROOM ? "tool result does not fit the device's send buffer"
                                                : "tool result is not valid UTF-8";
        emit_error_of(c, turn_id, push, rc == LLM_ERR_NO_ROOM ? "CLIENT_NO_ROOM" : "CLIENT_BAD_TOOL_RESULT", why, f->tool_name);
        ok = 0;
        rc = send_tool_result(c, f->call_id, 0, NULL, why);
    }
    cJSON_Delete(result);
    if (rc != LLM_OK) {
        emit_error_of(c, turn_id, push, "CLIENT_SEND_FAILED", "could not send tool_result", llm_result_name(rc));
        return;
    }
    memset(&ev, 0, sizeof ev);
    ev.type = LLM_EVENT_TOOL;
    ev.turn_id = turn_id;
    ev.origin_push = push;
    ev.u.tool.name = f->tool_name;
    ev.u.tool.on_device = 1;
    ev.u.tool.success = ok;
    emit(c, &ev);
}

static void on_status(llm_client_t *c, const llm_frame_t *f)
{
    llm_event_t ev;
    llm_turn_t *turn;
    int stale;
    if (strcmp(f->status, "connected") == 0) {
        on_connected(c, f);
        return;
    }
    turn = turn_of(c, f->turn_id, &stale);
    if (strcmp(f->status, "idle") == 0 && turn != NULL) {
        end_turn(c, turn);
        return;
    }
    if (strcmp(f->status, "cancelled") == 0 && turn != NULL) turn->cancelled = 1;
    memset(&ev, 0, sizeof ev);
    ev.type = LLM_EVENT_STATUS;
    ev.turn_id = turn != NULL ? turn->id : f->turn_id;
    ev.u.status.status = f->status;
    ev.u.status.session_id = f->session_id;
    ev.u.status.data = f->data;
    emit(c, &ev);
}

static void handle(llm_client_t *c, const llm_frame_t *f)
{
    llm_event_t ev;
    llm_turn_t *turn = NULL;
    const char *turn_id = f->turn_id;
    int stale = 0;
    int turn_frame = f->type == LLM_FRAME_RESPONSE || f->type == LLM_FRAME_TOOL_CALL ||
                     f->type == LLM_FRAME_TOOL_CALLBACK || f->type == LLM_FRAME_ERROR;
    /* A push's frames (origin "push") are reported under the push's own turn id and kept from
     * this client's turns, which they must not adopt, answer, fail or end; its tool callbacks
     * run the device's tools all the same. */
    int push = f->push && (turn_frame || (f->type == LLM_FRAME_STATUS && strcmp(f->status, "connected") != 0));

    if (turn_frame && !push) {
        turn = turn_of(c, f->turn_id, &stale);
        if (turn != NULL) turn_id = turn->id;
        /* late frames of a turn already over: no answer to play, no tool to run */
        if (stale && f->type != LLM_FRAME_ERROR) return;
    }
    memset(&ev, 0, sizeof ev);
    ev.turn_id = turn_id;
    ev.origin_push = push;

    switch (f->type) {
    case LLM_FRAME_STATUS:
        if (!push) {
            on_status(c, f);
            break;
        }
        ev.type = LLM_EVENT_STATUS;
        ev.u.status.status = f->status;
        ev.u.status.session_id = f->session_id;
        ev.u.status.data = f->data;
        emit(c, &ev);
        break;
    case LLM_FRAME_RESPONSE:
        if (turn != NULL && turn->cancelled) break;
        if (turn != NULL && f->is_final) turn->answered = 1;
        ev.type = LLM_EVENT_RESPONSE;
        ev.u.response.content = f->content;
        ev.u.response.length = strlen(f->content);
        ev.u.response.is_final = f->is_final;
        ev.u.response.seq = f->seq;
        ev.u.response.timing = f->timing;
        ev.u.response.reminder_id = f->reminder_id;
        emit(c, &ev);
        break;
    case LLM_FRAME_TOOL_CALL:
        if (turn != NULL && turn->cancelled) break;
        ev.type = LLM_EVENT_TOOL;
        ev.u.tool.name = f->tool_name;
        ev.u.tool.on_device = 0;
        ev.u.tool.success = f->success;
        emit(c, &ev);
        break;
    case LLM_FRAME_TOOL_CALLBACK:
        /* A cancelled turn's tool must not act on the device; the gateway dropped the call. */
        if (turn != NULL && turn->cancelled) break;
        on_tool_callback(c, f, turn_id, push);
        break;
    case LLM_FRAME_TOOLS_REGISTERED:
        on_tools_registered(c, f);
        break;
    case LLM_FRAME_ERROR:
        if (turn != NULL) {
            turn->failed = 1;
            turn->answered = 1;
        }
        emit_error_of(c, turn_id, push, f->code, f->message, f->details);
        if (push) break;
        if (c->phase == PHASE_AWAIT_RESUMED) {
            /* The session could not be resumed: carry on in the one the gateway gave us. */
            snprintf(c->session_id, sizeof c->session_id, "%s", c->fresh_session_id);
            c->resumed = 0;
            c->resume_pending = 0;
            register_or_ready(c);
        } else if (c->phase == PHASE_AWAIT_REGISTERED) {
            become_ready(c);
        }
        break;
    case LLM_FRAME_PONG:
        ev.type = LLM_EVENT_PONG;
        emit(c, &ev);
        break;
    case LLM_FRAME_UNKNOWN:
        break;
    }
}

int llm_client_handle_frame(llm_client_t *c, const char *data, size_t len)
{
    llm_frame_t f;
    const char *problem = NULL;
    int rc = llm_frame_parse(data, len, &f, &problem);
    if (rc == LLM_ERR_NOMEM) {
        emit_error(c, "", "CLIENT_NO_MEMORY", "no memory to parse a frame", NULL);
        return rc;
    }
    if (rc != LLM_OK) {
        emit_error(c, "", "CLIENT_BAD_FRAME", problem, NULL);
        return rc;
    }
    handle(c, &f);
    llm_frame_release(&f);
    return LLM_OK;
}

/* ---- public API ------------------------------------------------------------------------ */

static int valid_tool_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > TOOL_NAME_MAX) return 0;
    if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_')) return 0;
    for (size_t i = 1; i < n; i++) {
        char ch = name[i];
        int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
        if (!ok) return 0;
        if (ch == '.' && name[i - 1] == '.') return 0;
    }
    return name[n - 1] != '.';
}

static int valid_schema(const char *text)
{
    cJSON *schema;
    int ok;
    if (!llm_json_depth_ok(text, strlen(text), LLM_MAX_JSON_DEPTH)) return 0;
    schema = cJSON_ParseWithOpts(text, NULL, 1);
    ok = cJSON_IsObject(schema) && llm_utf8_valid(text, strlen(text));
    cJSON_Delete(schema);
    return ok;
}

int llm_client_init(llm_client_t *c, const llm_client_config_t *cfg)
{
    const llm_transport_t *t;
    llm_jw_t w;
    if (c == NULL || cfg == NULL) return LLM_ERR_ARG;
    memset(c, 0, sizeof *c);
    t = cfg->transport;
    if (t == NULL || t->connect == NULL || t->send_text == NULL || t->poll == NULL || t->close == NULL) return LLM_ERR_ARG;
    if (cfg->send_buffer == NULL || cfg->send_buffer_size < t->send_headroom + 64) return LLM_ERR_ARG;
    if (cfg->tool_count > 0 && cfg->tools == NULL) return LLM_ERR_ARG;
    for (size_t i = 0; i < cfg->tool_count; i++) {
        const llm_tool_t *tool = &cfg->tools[i];
        if (tool->name == NULL || !valid_tool_name(tool->name)) return LLM_ERR_ARG;
        if (tool->description == NULL || tool->description[0] == '\0') return LLM_ERR_ARG;
        if (!llm_utf8_valid(tool->description, strlen(tool->description))) return LLM_ERR_ARG;
        if (tool->parameters == NULL || !valid_schema(tool->parameters)) return LLM_ERR_ARG;
        if (tool->handler == NULL) return LLM_ERR_ARG;
        if (tool->visibility != LLM_VISIBILITY_BOTH && tool->visibility != LLM_VISIBILITY_AGENTS &&
            tool->visibility != LLM_VISIBILITY_MODEL) {
            return LLM_ERR_ARG;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cfg->tools[j].name, tool->name) == 0) return LLM_ERR_ARG;
        }
    }
    c->cfg = *cfg;
    c->state = LLM_STATE_DISCONNECTED;
    c->settings = llm_settings_none();
    /* The tool table is sent on every connect: find out now whether it fits. */
    if (cfg->tool_count > 0) {
        write_register_tools(c, &w);
        llm_jw_raw(&w, "}");
        if (llm_jw_finish(&w) != LLM_OK) return LLM_ERR_NO_ROOM;
    }
    return LLM_OK;
}

int llm_client_connect(llm_client_t *c, const char *url, const char *token, uint32_t timeout_ms)
{
    int rc;
    if (c == NULL || url == NULL) return LLM_ERR_ARG;
    if (c->state != LLM_STATE_DISCONNECTED) return LLM_ERR_STATE;
    rc = c->cfg.transport->connect(c->cfg.transport->ctx, url, token, timeout_ms);
    if (rc != LLM_OK) return rc;
    c->state = LLM_STATE_CONNECTING;
    c->phase = PHASE_AWAIT_CONNECTED;
    c->resumed = 0;
    c->resume_pending = c->session_id[0] != '\0';
    return LLM_OK;
}

static void drop_connection(llm_client_t *c)
{
    c->cfg.transport->close(c->cfg.transport->ctx);
    c->state = LLM_STATE_DISCONNECTED;
    c->phase = PHASE_NONE;
}

/* Turns open when the connection went: each still gets its TURN_END, as failed. */
static void end_open_turns(llm_client_t *c)
{
    while (c->turn_count > 0) {
        llm_turn_t *t = turn_at(c, 0);
        t->failed = 1;
        end_turn(c, t);
    }
    c->turn_head = 0;
}

int llm_client_poll(llm_client_t *c, uint32_t timeout_ms)
{
    const char *data = NULL;
    size_t len = 0;
    int rc;
    if (c == NULL) return LLM_ERR_ARG;
    if (c->state == LLM_STATE_DISCONNECTED) return LLM_ERR_CLOSED;
    rc = c->cfg.transport->poll(c->cfg.transport->ctx, &data, &len, timeout_ms);
    if (rc == 0) return 0;
    if (rc == LLM_ERR_TOO_LARGE) {
        char size[32];
        snprintf(size, sizeof size, "%lu bytes", (unsigned long)len);
        emit_error(c, "", "CLIENT_FRAME_TOO_LARGE", "a frame over the transport's maximum was dropped", size);
        return 1;
    }
    if (rc < 0) {
        llm_event_t ev;
        drop_connection(c);
        memset(&ev, 0, sizeof ev);
        ev.type = LLM_EVENT_CLOSED;
        ev.u.error.code = llm_result_name(rc);
        emit(c, &ev);
        end_open_turns(c);
        return LLM_ERR_CLOSED;
    }
    llm_client_handle_frame(c, data, len);
    return 1;
}

int llm_client_send_text(llm_client_t *c, const char *text)
{
    llm_turn_t *last;
    llm_turn_t *turn;
    llm_jw_t w;
    char id[LLM_TURN_ID_SIZE];
    int rc;
    if (c == NULL || text == NULL) return LLM_ERR_ARG;
    if (c->state != LLM_STATE_READY && c->state != LLM_STATE_IN_TURN) return LLM_ERR_STATE;
    last = newest_turn(c);
    if (last != NULL && !last->answered && !last->cancelled) return LLM_ERR_STATE;
    if (c->turn_count == LLM_MAX_TURNS) return LLM_ERR_STATE;
    if (!llm_utf8_valid(text, strlen(text))) return LLM_ERR_ARG;

    snprintf(id, sizeof id, "t%lu", (unsigned long)(c->turn_counter + 1));
    begin_frame(c, &w, "text_input");
    add_key(&w, "text");
    llm_jw_str(&w, text);
    add_key(&w, "session_id");
    llm_jw_str(&w, c->session_id);
    add_key(&w, "turn_id");
    llm_jw_str(&w, id);
    rc = send_frame(c, &w);
    if (rc != LLM_OK) return rc;

    c->turn_counter++;
    turn = turn_at(c, c->turn_count++);
    memset(turn, 0, sizeof *turn);
    memcpy(turn->id, id, sizeof id);
    c->state = LLM_STATE_IN_TURN;
    return LLM_OK;
}

int llm_client_cancel(llm_client_t *c, const char *spoken)
{
    llm_turn_t *turn;
    llm_jw_t w;
    int rc;
    if (c == NULL) return LLM_ERR_ARG;
    turn = newest_turn(c);
    if (turn == NULL || turn->cancelled) return LLM_ERR_STATE;
    begin_frame(c, &w, "cancel");
    add_key(&w, "turn_id");
    llm_jw_str(&w, turn->id);
    if (spoken != NULL) {
        add_key(&w, "spoken");
        llm_jw_str(&w, spoken);
    }
    rc = send_frame(c, &w);
    if (rc != LLM_OK) return rc;
    turn->cancelled = 1;
    return LLM_OK;
}

int llm_client_configure(llm_client_t *c, const llm_settings_t *s)
{
    llm_settings_t merged;
    if (c == NULL || s == NULL) return LLM_ERR_ARG;
    if (s->temperature > 1) return LLM_ERR_ARG;
    if (s->max_tokens != LLM_UNSET && s->max_tokens <= 0) return LLM_ERR_ARG;
    if (s->enable_context < LLM_UNSET || s->enable_context > 1) return LLM_ERR_ARG;
    if (s->clean_response < LLM_UNSET || s->clean_response > 1) return LLM_ERR_ARG;
    if (s->stream < LLM_UNSET || s->stream > 1) return LLM_ERR_ARG;
    if (s->language != NULL && (s->language[0] == '\0' || strlen(s->language) >= LLM_LANGUAGE_SIZE)) return LLM_ERR_ARG;

    merged = c->settings;
    if (s->temperature >= 0) merged.temperature = s->temperature;
    if (s->max_tokens != LLM_UNSET) merged.max_tokens = s->max_tokens;
    if (s->enable_context != LLM_UNSET) merged.enable_context = s->enable_context;
    if (s->clean_response != LLM_UNSET) merged.clean_response = s->clean_response;
    if (s->stream != LLM_UNSET) merged.stream = s->stream;
    merged.language = NULL;
    c->settings = merged;
    if (s->language != NULL) snprintf(c->language, sizeof c->language, "%s", s->language);
    c->has_settings = 1;
    if (c->phase != PHASE_READY) return LLM_OK; /* sent once the connection is set up */
    return send_configure(c);
}

static int send_bare(llm_client_t *c, const char *type)
{
    llm_jw_t w;
    begin_frame(c, &w, type);
    return send_frame(c, &w);
}

int llm_client_ping(llm_client_t *c)
{
    if (c == NULL) return LLM_ERR_ARG;
    if (c->state == LLM_STATE_DISCONNECTED) return LLM_ERR_STATE;
    return send_bare(c, "ping");
}

int llm_client_end_session(llm_client_t *c)
{
    if (c == NULL) return LLM_ERR_ARG;
    if (c->state != LLM_STATE_READY) return LLM_ERR_STATE;
    return send_bare(c, "end_session");
}

int llm_client_set_session(llm_client_t *c, const char *session_id)
{
    if (c == NULL) return LLM_ERR_ARG;
    if (c->state != LLM_STATE_DISCONNECTED) return LLM_ERR_STATE;
    if (session_id == NULL) session_id = "";
    if (strlen(session_id) >= sizeof c->session_id || !llm_utf8_valid(session_id, strlen(session_id))) return LLM_ERR_ARG;
    snprintf(c->session_id, sizeof c->session_id, "%s", session_id);
    return LLM_OK;
}

const char *llm_client_session_id(const llm_client_t *c)
{
    return c->session_id;
}

llm_state_t llm_client_state(const llm_client_t *c)
{
    return c->state;
}

void llm_client_close(llm_client_t *c)
{
    if (c == NULL || c->state == LLM_STATE_DISCONNECTED) return;
    drop_connection(c);
    end_open_turns(c);
}
