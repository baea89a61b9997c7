/*
 * rlqs.h - Envoy's Rate Limit Quota Service on grpc-port (rlqs.c):
 * envoy.service.rate_limit_quota.v3.RateLimitQuotaService/
 * StreamRateLimitQuotas, a streaming call, on the counters of the named
 * limits (limits-file) that RL.CHECK and ShouldRateLimit use.
 */
#ifndef CELLGATE_RLQS_H
#define CELLGATE_RLQS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/h2.h"

#define RLQS_PATH "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/" \
                  "StreamRateLimitQuotas"

/* Its row of grpc_streams.c's table. */
struct grpc_stream_service;
extern const struct grpc_stream_service rlqs_stream;

/* The call's functions, as grpc.c's table of streaming services calls
 * them (stream_service.h): a stream opened, one client message (a usage
 * report; *out the answer to it), the pushes due (changed shares,
 * refreshed assignments, abandoned buckets), the stream gone. now_ms is
 * the caller's clock and not read: shares and counters run on the limiter
 * clock (clock_wall_now()), so a fake clock moves both. */
void *rlqs_open(void *caller_ctx, int32_t stream, int64_t now_ms,
                enum grpc_status *refuse, const char **why);
enum grpc_status rlqs_message(void *st, const unsigned char *msg, size_t len,
                              int64_t now_ms, const unsigned char **out,
                              size_t *out_len, const char **why);
enum grpc_status rlqs_due(void *st, int64_t now_ms, const unsigned char **out,
                          size_t *out_len, const char **why);
void rlqs_close(void *st);

/* What /metrics shows (server/metrics.c). Counts since start-up. */
struct rlqs_stats {
    uint64_t streams;               /* open now */
    uint64_t buckets;               /* shared counters now */
    uint64_t subscriptions;         /* a stream's bucket, now */
    uint64_t token_buckets_sent;    /* assignments sent, by kind */
    uint64_t per_unit_sent;
    uint64_t allow_all_sent;
    uint64_t deny_all_sent;
    uint64_t abandons_sent;
    uint64_t reports;               /* usage reports read */
    /* Requests Envoys reported, by limit mode: enforced limits, and
     * shadow_mode ones (always ALLOW_ALL, counted on the counter). */
    uint64_t allowed[2], denied[2];
    uint64_t folded[2];             /* of allowed: put on the counters */
};
enum { RLQS_ENFORCED = 0, RLQS_SHADOW = 1 };
void rlqs_stats_get(struct rlqs_stats *out);

/* RL.CHECK ... SHARE on the owner of d's counter (cluster-mode yes): the
 * asking node's Envoy (d->share) recorded beside this node's own of the
 * same counter, the units put on it (put, st: the fold's status) counted
 * as the Envoys', and the split of every node's Envoys made; st->has_share
 * and st->share_milli are that Envoy's. Nothing for a descriptor without a
 * shared limit, past rlqs-max-buckets Envoys of other nodes on one counter,
 * or without memory (the asking node then splits among its own). */
struct nl_descriptor;
struct nl_status;
void rlqs_share_remote(const char *domain, size_t dlen,
                       const struct nl_descriptor *d, uint64_t put,
                       struct nl_status *st);

#endif
