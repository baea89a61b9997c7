/*
 * grpc.h - grpc-port: Envoy's rate limit service over gRPC (HTTP/2
 * cleartext, prior knowledge) on the server's event loop (grpc.c).
 */
#ifndef CELLGATE_GRPC_H
#define CELLGATE_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Listen on grpc-bind:grpc-port when grpc-port is set. 0, or -1 (logged). */
int grpc_setup(void);

/* From cron: close connections idle for `timeout` seconds (none with a
 * streaming call open), reset streams open for grpc-stream-timeout ms and
 * streaming calls silent for grpc-stream-idle-timeout ms, and send what
 * each streaming call's service has to push (its `due`). */
void grpc_cron(void);

/* Bytes all gRPC connections hold (INFO's mem_clients_grpc), and of them
 * their request bodies' (what grpc-max-memory bounds); none of it is in
 * mem_used(), which maxmemory compares. */
size_t grpc_memory(void);

/* Streaming calls open now (INFO's grpc_streaming_calls). */
size_t grpc_streaming_calls(void);
size_t grpc_request_memory(void);

/* A gRPC connection as CLIENT LIST shows it. */
struct grpc_client {
    uint64_t id;
    const char *addr, *laddr;
    int fd;
    int64_t created_ms, last_ms;    /* the loop's milliseconds */
    size_t qbuf;                    /* request bytes it holds */
    size_t qbuf_free;               /* room left in their buffers */
    size_t omem;                    /* answers written, not sent yet */
    size_t tot_mem;                 /* everything it holds, omem too */
};

/* Call fn for every gRPC connection, oldest first. */
void grpc_each_client(void (*fn)(const struct grpc_client *c, void *arg),
                      void *arg);

/* Close the connections match accepts (CLIENT KILL); how many. */
size_t grpc_kill(bool (*match)(const struct grpc_client *c, void *arg),
                 void *arg);

/* Close every gRPC connection and the listener. */
void grpc_shutdown(void);

#endif
