/*
 * rls_forward.h - Envoy's ShouldRateLimit across the shards of a cluster
 * (rls_forward.c): the descriptors of a call whose counters live on other
 * nodes are decided by those nodes, asked over RESP without blocking the
 * loop, and the call is answered when every reply is in, or with the
 * failure answer (rls-failure-mode-deny) for those that do not come within
 * rls-forward-timeout.
 */
#ifndef CELLGATE_RLS_FORWARD_H
#define CELLGATE_RLS_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/envoy/named_limits.h"

/* Who waits for a call's statuses: grpc.c's connection and stream, opaque
 * here. */
struct rls_caller {
    void *ctx;
    int32_t stream;
};

/* The statuses of a call that waited, n of them (names valid during the
 * call only), and its overall code. */
typedef void (*rls_finish_fn)(const struct rls_caller *caller,
                              const struct nl_status *st, size_t n,
                              enum nl_code overall);

enum rls_outcome {
    RLS_DECIDED,        /* st[0..n) and *overall are the answer, now */
    RLS_WAITING,        /* finish() gets them later (never from within) */
    RLS_FAILED          /* err: as named_limits_check() fails */
};

/* Decide n descriptors of domain at now in cluster-mode yes: those whose
 * counter this node serves here, the others on their owners. */
enum rls_outcome rls_forward_decide(const char *domain, size_t dlen,
                                    const struct nl_descriptor *d, size_t n,
                                    int64_t now, struct nl_status *st,
                                    enum nl_code *overall,
                                    const struct rls_caller *caller,
                                    rls_finish_fn finish, char *err,
                                    size_t errlen);

/* The caller's connection is gone: its waiting calls are dropped, never
 * finished. */
void rls_forward_cancel(void *ctx);

/* Calls waiting now (INFO). */
size_t rls_forward_waiting(void);

/* At shutdown: every call dropped, every link to a peer closed. */
void rls_forward_shutdown(void);

#endif
