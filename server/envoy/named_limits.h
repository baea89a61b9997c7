/*
 * named_limits.h - the limits of the limits-file option, running: read at
 * start-up, replaced whole on SIGHUP and CONFIG RELOAD-LIMITS (a file that
 * fails to load keeps the old limits), and the decisions RL.CHECK and the
 * gRPC rate limit service make with them, on the same keys, so an
 * application and Envoy share one quota.
 *
 * A descriptor's counter is the key "<domain>_<key>_<value>[_<key>_<value>
 * ...]" in the selected database (0 for gRPC), holding the state of the
 * limit's algorithm: that service's fixed window on unit boundaries
 * (RL.FIXED ... ALIGN), or RL.SLIDING's or CL.THROTTLE's with
 * cellgate_algorithm. As everywhere in cellgate, a refused request
 * consumes nothing.
 */
#ifndef CELLGATE_NAMED_LIMITS_H
#define CELLGATE_NAMED_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/limits.h"

/* Start-up: load limits-file if set. 0, or -1 with err (do not start). */
int named_limits_setup(char *err, size_t errlen);

/* Re-read limits-file; on failure the running limits stay. Logged either
 * way. 0, or -1 with err. */
int named_limits_reload(char *err, size_t errlen);

/* CONFIG SET limits-file, all or nothing with the other pairs: read the
 * file the option now names into *out (NULL when it is empty), without
 * running it; named_limits_install() then runs it, or limits_free()
 * drops it when another pair failed. 0, or -1 with err. */
int named_limits_load_new(struct limits **out, char *err, size_t errlen);
void named_limits_install(struct limits *l);

void named_limits_teardown(void);

/* The running limits, NULL when limits-file is not set (read only, on the
 * event loop: /metrics' gauges of the configured limits). */
const struct limits *named_limits_running(void);

/* Changes with every new set of running limits (a reload, CONFIG SET
 * limits-file, teardown): what was decided with the old set is stale. */
uint64_t named_limits_generation(void);

/* The most descriptors one request may hold. */
#define NL_MAX_DESCRIPTORS 64

/* RLQS across nodes (rlqs.c): one Envoy's bucket asked of its counter's
 * owner with its fold, so the owner splits among every node's Envoys. */
struct nl_share_ask {
    const char *member;             /* "<run_id>:<id>", unique cluster-wide */
    size_t mlen;
    uint64_t demand_milli;          /* requests a second, x 1000 */
    int64_t interval_ms;            /* its reporting interval */
};

/* One descriptor of a request. */
struct nl_descriptor {
    const struct limits_entry *entries;
    size_t n;
    uint64_t hits;                  /* units it takes; 0 = check only */
    bool negative;                  /* hits are given back (Envoy's
                                     * is_negative_hits): always OK */
    bool has_override;              /* Envoy's per-descriptor limit */
    uint32_t override_requests;
    enum limits_unit override_unit;
    const struct nl_share_ask *share;   /* RLQS: its share asked (NULL) */
};

enum nl_code { NL_OK = 1, NL_OVER_LIMIT = 2 };

/* What one descriptor got, in the terms of Envoy's DescriptorStatus. */
struct nl_status {
    enum nl_code code;
    bool exceeded;                  /* over the limit (OK in shadow mode) */
    bool quota;                     /* its limit is in quota mode */
    bool has_limit;                 /* current_limit is set */
    bool unlimited;                 /* remaining is UINT32_MAX */
    uint32_t requests_per_unit;
    enum limits_unit unit;
    const char *name;               /* the rule's name, "" */
    uint32_t remaining;
    int64_t reset_ns;               /* duration_until_reset (0: none) */
    int64_t retry_ns;               /* when refused: until it may pass */
    bool has_share;                 /* the owner's answer to d->share: */
    uint64_t share_milli;           /* ... requests a second, x 1000 */
    /* The metadata of the limit that applies (its node's `metadata:`;
     * NULL: none, or no file limit: unlimited, replaced, Envoy's
     * override), for dynamic_metadata; set for skipped ones too. Valid
     * until the next reload. */
    const struct limits_meta *meta;
};

/* Decide n descriptors of domain at now, each on its counter, with
 * "replaces" applied across them; *overall is named_limits_overall()'s.
 * Every status's quota flag and meta are set, skipped ones' included.
 * skip (NULL: none): descriptors left as they are in out, decided
 * elsewhere (their counters live on other nodes of a cluster), yet still
 * part of the request, so their rules replace others as they would.
 * peek: change nothing (not even the statistics, rl_stats.h).
 * Returns 0, or -1 with err when no limits are
 * loaded, n is above NL_MAX_DESCRIPTORS, or memory ran out for a counter
 * (err "OOM"). */
int named_limits_check(const char *domain, size_t dlen,
                       const struct nl_descriptor *d, size_t n,
                       const bool *skip, bool peek, int64_t now,
                       struct nl_status *out, enum nl_code *overall,
                       char *err, size_t errlen);

/* The overall code of a request's statuses, as envoyproxy/ratelimit
 * decides it: OVER_LIMIT when a descriptor not in quota mode is over, or
 * when every descriptor in quota mode is (there being one). The global
 * rls-shadow-mode is not applied here: the caller answering the request
 * applies it once, with named_limits_global_shadow(). */
enum nl_code named_limits_overall(const struct nl_status *st, size_t n);

/* rls-shadow-mode on the overall code of one answered request: OK for
 * OVER_LIMIT, counted (global_shadow_mode), when the option is on. */
enum nl_code named_limits_global_shadow(enum nl_code overall);

/* Where a descriptor's decision lives, for routing it in a cluster: the
 * name of its counter (names->p + off, len bytes; the entries' own values
 * when no rule matched) and whether a decision reads and writes it
 * (decides: a limit applies and no other descriptor of the request
 * replaces it; without, the answer needs no state and any node gives it). */
struct nl_counter {
    size_t off, len;
    bool decides;
};
struct textbuf;
/* The counters of n descriptors of domain, the first pass of
 * named_limits_check(). 0, or -1 with err as it has. */
int named_limits_counters(const char *domain, size_t dlen,
                          const struct nl_descriptor *d, size_t n,
                          struct textbuf *names, struct nl_counter *out,
                          char *err, size_t errlen);

/* The rule one descriptor of domain gets (no override, no "replaces":
 * one descriptor alone) and its counter's name, appended to counter, as
 * named_limits_check() would decide it: what Envoy's RLQS buckets are
 * shared by (rlqs.c). */
struct nl_rule {
    bool domain_found;
    bool has_limit;                 /* a rule applies: the fields below */
    bool unlimited;
    bool shadow;                    /* shadow_mode: counts, never refuses */
    uint32_t requests_per_unit;
    enum limits_unit unit;
    int64_t unit_s;                 /* the unit's seconds (nominal) */
    enum limits_rlqs rlqs;          /* its rlqs_strategy, if any */
};
int named_limits_describe(const char *domain, size_t dlen,
                          const struct nl_descriptor *d, struct nl_rule *out,
                          struct textbuf *counter, char *err, size_t errlen);

#endif
