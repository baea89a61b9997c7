/*
 * rls_metadata.h - ShouldRateLimit's dynamic_metadata (rls_metadata.c), as
 * envoyproxy/ratelimit's RESPONSE_DYNAMIC_METADATA builds it: a
 * google.protobuf.Struct with the request and the metadata of the limits
 * it passed. No I/O, no state: the caller hands the allocator (rls.c's
 * per-call arena) and frees everything at once.
 */
#ifndef CELLGATE_RLS_METADATA_H
#define CELLGATE_RLS_METADATA_H

#include <stddef.h>

#include "conf/limits.h"
#include "protocol/rls.pb-c.h"

/* size bytes for one call's objects, or NULL (out of memory). */
typedef void *(*rls_alloc_fn)(size_t size);

/* A limit's `metadata:` as a Struct, or NULL (out of memory). */
Envoy__Service__Ratelimit__V3__Struct *
rls_metadata_struct(const struct limits_meta *m, rls_alloc_fn alloc);

/* The Struct for req: "domain", "descriptors" (each "entries" as
 * "key=value" strings, "limit" when Envoy sent an override, "hitsAddend"
 * when it sent one), "hitsAddend" when the request's is not 0, and
 * "metadata", passed[0..n) merged (NULL ones skipped; the first value of
 * a key wins, two Structs under one key merge), when that has a field.
 * NULL when out of memory. */
Envoy__Service__Ratelimit__V3__Struct *
rls_metadata_build(const Envoy__Service__Ratelimit__V3__RateLimitRequest *req,
                   Envoy__Service__Ratelimit__V3__Struct *const *passed,
                   size_t n, rls_alloc_fn alloc);

#endif
