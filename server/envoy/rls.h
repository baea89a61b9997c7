/*
 * rls.h - the gRPC services of grpc-port (rls.c): Envoy's
 * RateLimitService/ShouldRateLimit and grpc.health.v1.Health/Check, and
 * the streaming grpc.health.v1.Health/Watch (a row of grpc_streams.c).
 */
#ifndef CELLGATE_RLS_H
#define CELLGATE_RLS_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/h2.h"

#include "server/envoy/rls_forward.h"
#include "server/envoy/stream_service.h"

struct rls_answer {
    unsigned char *message;     /* valid until the next rls_serve() */
    size_t len;
    const char *why;            /* for an error status (static text) */
    bool waiting;               /* answered later, to rls_late_answer's fn */
};

/* Answer the call to path with its message: GRPC_OK and a->message, or an
 * error status and a->why (UNIMPLEMENTED for an unknown method); or, in
 * cluster-mode yes, a->waiting: some descriptors are decided by other
 * nodes, and the answer goes to the function rls_late_answer() set, for
 * caller, once they replied (rls_cancel(caller->ctx) drops it). */
enum grpc_status rls_serve(const char *path, const unsigned char *msg,
                           size_t len, const struct rls_caller *caller,
                           struct rls_answer *a);

typedef void (*rls_late_fn)(const struct rls_caller *caller,
                            enum grpc_status status,
                            const struct rls_answer *a);
void rls_late_answer(rls_late_fn fn);

/* The caller's connection closed: its waiting calls are dropped. */
void rls_cancel(void *ctx);

/* grpc.health.v1.Health/Watch: the status Check answers, at once and at
 * each change. */
extern const struct grpc_stream_service rls_health_watch;

#endif
