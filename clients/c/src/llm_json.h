/* Internal: writing frames into a fixed buffer, and checks on raw JSON text. */
#ifndef LLM_JSON_H
#define LLM_JSON_H

#include <stddef.h>

#include "llm_client.h"

/* Appends to buf[0..cap); once something does not fit, overflow stays set and nothing more is
 * written. One byte is always kept for a terminating NUL. */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
    int overflow;
} llm_jw_t;

void llm_jw_init(llm_jw_t *w, char *buf, size_t cap);
void llm_jw_raw(llm_jw_t *w, const char *text);
void llm_jw_raw_n(llm_jw_t *w, const char *text, size_t n);
/* A JSON string literal, quotes included. */
void llm_jw_str(llm_jw_t *w, const char *text);
void llm_jw_int(llm_jw_t *w, long value);
void llm_jw_double(llm_jw_t *w, double value);
/* A cJSON value, printed unformatted (NULL prints null). */
void llm_jw_cjson(llm_jw_t *w, const cJSON *item);
/* LLM_OK with w->buf NUL-terminated; LLM_ERR_NO_ROOM on overflow; LLM_ERR_ARG when the frame
 * is not valid UTF-8 (the gateway would close the connection over it). */
int llm_jw_finish(llm_jw_t *w);

int llm_utf8_valid(const char *s, size_t n);

/* Whether text[0..n) nests arrays and objects at most max_depth deep (strings skipped). */
int llm_json_depth_ok(const char *text, size_t n, int max_depth);

#endif
