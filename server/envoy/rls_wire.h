/*
 * rls_wire.h - ShouldRateLimit's answer, Envoy's RateLimitResponse,
 * written straight into bytes (rls_wire.c): the same bytes protobuf-c packs
 * from protocol/rls.proto (tests/unit/check_rls_wire.c holds them to it),
 * without building the messages and walking them twice (protobuf-c's
 * get_packed_size, then pack: about 2,200 instructions of a call's 19,000,
 * and some 10,000 more for a small nested dynamic_metadata).
 */
#ifndef CELLGATE_RLS_WIRE_H
#define CELLGATE_RLS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/rls.pb-c.h"
#include "server/envoy/named_limits.h"

/* One of response_headers_to_add. */
struct rls_wire_header {
    const char *key;
    const char *value;
};

/* What the answer holds: the overall code, a status per descriptor, the
 * headers to add and dynamic_metadata (NULL: none). */
struct rls_wire_answer {
    enum nl_code overall;
    const struct nl_status *st;
    size_t n;
    const struct rls_wire_header *headers;
    size_t nheaders;
    const Envoy__Service__Ratelimit__V3__Struct *metadata;
};

/* The seconds of duration_until_reset for ns: rounded up, 0 at least. */
int64_t rls_wire_seconds(int64_t ns);

/* What rls_wire_size() measured, for rls_wire_write(). */
struct rls_wire_sizes {
    struct {
        size_t name, limit, duration, total;
        uint64_t seconds;
    } st[NL_MAX_DESCRIPTORS];
    size_t metadata;
};

/* The answer's exact size in bytes (a->n <= NL_MAX_DESCRIPTORS), its
 * parts' in *z. */
size_t rls_wire_size(const struct rls_wire_answer *a, struct rls_wire_sizes *z);

/* The answer into out (rls_wire_size() bytes, z from it); returns that
 * size. */
size_t rls_wire_write(const struct rls_wire_answer *a,
                      const struct rls_wire_sizes *z, unsigned char *out);

#endif
