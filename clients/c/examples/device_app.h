/* The example device: argument parsing and one conversation, over any transport, so the unit
 * tests run it over the fake transport and main.c over libwebsockets. */
#ifndef DEVICE_APP_H
#define DEVICE_APP_H

#include <stdint.h>
#include <stdio.h>

#include "llm_client.h"

/* Exit codes */
#define DEVICE_EXIT_OK 0
#define DEVICE_EXIT_ERROR_FRAME 1 /* the gateway (or the client) reported an error */
#define DEVICE_EXIT_USAGE 2
#define DEVICE_EXIT_CONNECTION 3 /* could not connect, or the connection closed */
#define DEVICE_EXIT_TIMEOUT 4

typedef struct {
    const char *url;
    const char *token;
    const char *resume;   /* session to resume before the text */
    const char *text;     /* NULL: say nothing, only listen for pushes */
    const char *ca_file;  /* wss:// CA, for the libwebsockets transport */
    int print_session;
    int stream;
    int context;          /* configure enable_context true */
    int cancel_after_partials; /* 0: never */
    int pushes;           /* pushed answers to wait for before exiting */
    uint32_t timeout_ms;
    int verbose;
} device_options_t;

/* Returns 0, or DEVICE_EXIT_USAGE after printing why to err. */
int device_parse_args(int argc, char **argv, device_options_t *options, FILE *err);

/* Why the transport failed to connect, for the message (may be NULL). */
typedef const char *(*device_transport_error_t)(const llm_transport_t *transport);

/* One conversation: connect, register the tools, send the text, answer the tool calls, print
 * each llm_response to out (a pushed one as "[push] ..."); returns a DEVICE_EXIT_* code. */
int device_run(const device_options_t *options, const llm_transport_t *transport,
               device_transport_error_t transport_error, FILE *out, FILE *err);

/* The device's state the tools act on, for the tests to check. */
extern int device_volume;
extern int device_battery_level;

#endif
