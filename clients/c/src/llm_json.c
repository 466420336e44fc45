#include "llm_json.h"

#include <stdio.h>
#include <string.h>

void llm_jw_init(llm_jw_t *w, char *buf, size_t cap)
{
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    w->overflow = cap == 0;
    if (cap > 0) buf[0] = '\0';
}

void llm_jw_raw_n(llm_jw_t *w, const char *text, size_t n)
{
    if (w->overflow) return;
    if (n >= w->cap - w->len) {
        w->overflow = 1;
        return;
    }
    memcpy(w->buf + w->len, text, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

void llm_jw_raw(llm_jw_t *w, const char *text)
{
    llm_jw_raw_n(w, text, strlen(text));
}

void llm_jw_str(llm_jw_t *w, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)text;
    const unsigned char *run = p;

    llm_jw_raw_n(w, "\"", 1);
    for (; *p; p++) {
        char esc[7];
        size_t n = 2;
        if (*p >= 0x20 && *p != '"' && *p != '\\') continue;
        llm_jw_raw_n(w, (const char *)run, (size_t)(p - run));
        run = p + 1;
        esc[0] = '\\';
        switch (*p) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[*p >> 4];
            esc[5] = hex[*p & 0xf];
            n = 6;
        }
        llm_jw_raw_n(w, esc, n);
    }
    llm_jw_raw_n(w, (const char *)run, (size_t)(p - run));
    llm_jw_raw_n(w, "\"", 1);
}

void llm_jw_int(llm_jw_t *w, long value)
{
    char num[24];
    snprintf(num, sizeof num, "%ld", value);
    llm_jw_raw(w, num);
}

void llm_jw_double(llm_jw_t *w, double value)
{
    char num[32];
    snprintf(num, sizeof num, "%.17g", value);
    llm_jw_raw(w, num);
}

void llm_jw_cjson(llm_jw_t *w, const cJSON *item)
{
    size_t room;
    if (item == NULL) {
        llm_jw_raw(w, "null");
        return;
    }
    if (w->overflow) return;
    room = w->cap - w->len;
    if (room > 0x7fffffff) room = 0x7fffffff;
    /* cJSON wants a little more room than it writes; failing here is overflow, not a bug. */
    if (!cJSON_PrintPreallocated((cJSON *)item, w->buf + w->len, (int)room, 0)) {
        w->overflow = 1;
        w->buf[w->len] = '\0';
        return;
    }
    w->len += strlen(w->buf + w->len);
    if (w->len >= w->cap) w->overflow = 1;
}

int llm_jw_finish(llm_jw_t *w)
{
    if (w->overflow) return LLM_ERR_NO_ROOM;
    w->buf[w->len] = '\0';
    return llm_utf8_valid(w->buf, w->len) ? LLM_OK : LLM_ERR_ARG;
}

int llm_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t extra;
        unsigned long cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0) { extra = 1; cp = c & 0x1f; }
        else if ((c & 0xf0) == 0xe0) { extra = 2; cp = c & 0x0f; }
        else if ((c & 0xf8) == 0xf0) { extra = 3; cp = c & 0x07; }
        else return 0;
        if (n - i <= extra) return 0;
        for (size_t k = 1; k <= extra; k++) {
            if ((p[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        /* overlong forms, surrogates, and past U+10FFFF */
        if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000)) return 0;
        if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
        i += extra + 1;
    }
    return 1;
}

int llm_json_depth_ok(const char *text, size_t n, int max_depth)
{
    int depth = 0;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth) return 0;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 1;
}
