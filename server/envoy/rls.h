/*
 * rls.h - the gRPC services of grpc-port (rls.c): Envoy's
 * RateLimitService/ShouldRateLimit and grpc.health.v1.Health/Check.
 */
#ifndef CELLGATE_RLS_H
#define CELLGATE_RLS_H

#include <stddef.h>

#include "protocol/h2.h"

struct rls_answer {
    unsigned char *message;     /* valid until the next rls_serve() */
    size_t len;
    const char *why;            /* for an error status (static text) */
};

/* Answer the call to path with its message: GRPC_OK and a->message, or an
 * error status and a->why (UNIMPLEMENTED for an unknown method). */
enum grpc_status rls_serve(const char *path, const unsigned char *msg,
                           size_t len, struct rls_answer *a);

#endif
