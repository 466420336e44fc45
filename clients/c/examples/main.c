/* llm_device_example URL [--token T] [options] "sentence": see device_app.c. */
#include <stdio.h>

#include "device_app.h"
#include "llm_transport_lws.h"

int main(int argc, char **argv)
{
    device_options_t options;
    llm_lws_options_t lws;
    llm_transport_t *transport;
    int code = device_parse_args(argc, argv, &options, stderr);
    if (code != 0) return code;

    lws.max_frame = 16384;
    lws.max_send = 16000;
    lws.ca_file = options.ca_file;
    lws.send_timeout_ms = 5000;
    lws.verbose = options.verbose;
    transport = llm_lws_transport_create(&lws);
    if (transport == NULL) {
        fprintf(stderr, "error: out of memory\n");
        return DEVICE_EXIT_CONNECTION;
    }
    code = device_run(&options, transport, llm_lws_transport_last_error, stdout, stderr);
    llm_lws_transport_destroy(transport);
    return code;
}
