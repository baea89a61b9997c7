/*
 * stream_service.h - what a streaming gRPC call's service is to grpc.c:
 * a row of grpc_streams.c's table, four or five functions grpc.c calls.
 *
 * The service is pulled, never calls back: grpc.c hands it the stream's
 * events (opened, a client message, the client half-closed, gone) and
 * asks it, at every cron tick and after each message, whether it has a
 * message of its own to push; grpc.c sends what it answers and ends the
 * stream when it answers a status other than OK. One event loop: no
 * locking, and a call runs to its end before the next.
 */
#ifndef CELLGATE_STREAM_SERVICE_H
#define CELLGATE_STREAM_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/h2.h"

struct grpc_stream_service {
    const char *path;           /* "/package.Service/Method" */
    /* The call's headers came: its state, or NULL with *refuse and *why
     * (static text) to end it at once. caller_ctx names its connection
     * (the same for every call on it; compare, do not dereference). */
    void *(*open)(void *caller_ctx, int32_t stream, int64_t now_ms,
                  enum grpc_status *refuse, const char **why);
    /* One client message. *out (NULL on entry) may be set to one message
     * to send now, *out_len bytes, the service's until its next call; a
     * status other than OK ends the stream with it and *why, after *out. */
    enum grpc_status (*message)(void *st, const unsigned char *msg,
                                size_t len, int64_t now_ms,
                                const unsigned char **out, size_t *out_len,
                                const char **why);
    /* The client sent all it will: true to end the stream now with
     * *status and *why, false to keep pushing. NULL: end it with OK. */
    bool (*half_closed)(void *st, enum grpc_status *status,
                        const char **why);
    /* The service's own pushes, asked at every cron tick (hz) and after
     * each message, again while it sets *out (a few times at most):
     * *out and the status as for message. */
    enum grpc_status (*due)(void *st, int64_t now_ms,
                            const unsigned char **out, size_t *out_len,
                            const char **why);
    /* The call is over (ended by either side, reset, its connection
     * closed, the server shutting down): free st. Once, always. */
    void (*close)(void *st);
};

#endif
