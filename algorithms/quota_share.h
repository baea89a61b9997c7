/*
 * quota_share.h - the sharing rule of the Rate Limit Quota Service
 * (server/envoy/rlqs.c): one named limit of N requests per unit U, used
 * by several Envoys at once, split among them as token buckets they
 * enforce themselves.
 *
 * - The pool. The Envoys together get a rate of (N - others) / (U + U/10)
 *   requests a second, less 2 % (QS_SLACK, below), where others is what
 *   other callers of the limit (RL.CHECK, ShouldRateLimit) took in the
 *   current window. Each Envoy's
 *   bucket holds at most a tenth of a unit of its share (QS_BURST_DIV) and
 *   starts full, so in any span of U the Envoys admit at most their
 *   buckets' contents plus their refill: pool * U/10 + pool * U = N -
 *   others (plus one token per Envoy from rounding up to whole tokens).
 * - The split: a tenth of the pool in equal parts (a floor: an Envoy whose
 *   demand comes back is never at zero), the rest water-filled on demand
 *   (allowed + denied a second in the last report: what the Envoy was
 *   asked, not what it was let through): those that want less than an
 *   equal part get what they want, the others share the rest equally;
 *   what nobody wants is spread equally. The shares always sum to the pool.
 * - Following demand: a report's demand replaces the last one (no
 *   smoothing), so a change shows in the split at the member's next
 *   report. A share that fell by more than QS_SLACK (2 %) is sent at once;
 *   one that rose by more than QS_CHANGE (10 %) at most once per reporting
 *   interval per member; else the assignment sent before is sent again
 *   (Envoy then keeps its bucket and only extends its time to live). An
 *   Envoy's rate is thus never above its share by more than 2 %, which the
 *   pool leaves out, so the rates sent never sum past N - others; it may
 *   be up to 10 % below it. Shares follow demand within two reporting
 *   intervals.
 * - Each change hands the Envoy a new, full bucket: at most max_tokens
 *   more in the window it happens in; that is the bound on over-admission
 *   while shares move (docs/envoy.md, "Rate Limit Quota Service").
 * - Or requests per time unit (QS_PER_UNIT, for clients that enforce it):
 *   the share times the limit's unit, rounded down, at least 1 (a share
 *   of 0: DENY_ALL). No bucket holds a burst, so the pool is (N - others)
 *   / U less 2 %; but a client counts its units from its own start, not
 *   on the counter's windows, so one window of the counter may see the
 *   end of a client's unit and the whole of its next: up to twice the
 *   pool's worth (and the quota of each new assignment) in one window,
 *   N - others over the clients' own units.
 *
 * Pure: time is passed in (ms), nothing here allocates, logs or reads a
 * clock.
 */
#ifndef CELLGATE_QUOTA_SHARE_H
#define CELLGATE_QUOTA_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QS_BURST_DIV 10         /* a bucket holds U / 10 of its share */
#define QS_FLOOR 0.1            /* the part of the pool split equally */
#define QS_CHANGE 0.1           /* a rise worth a new bucket */
#define QS_SLACK 0.02           /* a fall worth one; the pool keeps it */
#define QS_TTL_INTERVALS 4      /* an assignment lives 4 intervals */
#define QS_STALE_INTERVALS 4    /* no report for 4 intervals: gone */
#define QS_DEFAULT_INTERVAL_MS 1000
#define QS_MIN_INTERVAL_MS 100
#define QS_MAX_INTERVAL_MS 3600000

/* How a share is enforced (rlqs-strategy). */
enum qs_strategy {
    QS_TOKEN_BUCKET,            /* a token bucket (Envoy's filter) */
    QS_PER_UNIT                 /* requests_per_time_unit */
};

/* What an Envoy is told to enforce: a token bucket, requests per unit,
 * or a blanket rule. */
struct qs_assignment {
    bool deny_all;              /* DENY_ALL (a share of nothing) */
    bool allow_all;             /* ALLOW_ALL (no limit to share) */
    uint32_t max_tokens;        /* = tokens_per_fill */
    int64_t fill_ns;            /* fill_interval */
    uint64_t per_unit;          /* QS_PER_UNIT: requests per unit_s, */
    int64_t unit_s;             /* ... else both 0 */
};

/* One Envoy's (one stream's) use of one shared limit. */
struct qs_member {
    enum qs_strategy strategy;  /* how its share is sent */
    double demand;              /* requests a second, its last report */
    double share;               /* requests a second, the last split */
    int64_t interval_ms;        /* its reporting interval */
    int64_t reported_ms;        /* its last report */
    double acc_count;           /* short reports' requests, not yet */
    int64_t acc_ms;             /* ... in demand, and their span */
    struct qs_assignment sent;  /* what it was last sent */
    int64_t sent_ms;            /* when (-1: never) */
    int64_t changed_ms;         /* when a new bucket was last sent */
};

void qs_member_init(struct qs_member *m, int64_t now_ms);

/* A usage report: allowed and denied over elapsed_ms (below 0: unknown,
 * the time since m's last report or its start stands in). The demand is
 * their rate, and elapsed_ms (clamped to QS_MIN_INTERVAL_MS ..
 * QS_MAX_INTERVAL_MS) the interval; a report under half the interval is
 * held and added to the next. */
void qs_report(struct qs_member *m, uint64_t allowed, uint64_t denied,
               int64_t elapsed_ms, int64_t now_ms);

/* The Envoys' rate, requests a second, for limit requests per unit_s
 * seconds, of which others were taken by other callers this window, the
 * shares to be enforced by strategy. */
double qs_pool(enum qs_strategy strategy, uint64_t limit, int64_t unit_s,
               uint64_t others);

/* Split pool among the n members (their share), by the rule above. The
 * array of pointers is reordered (by demand). */
void qs_split(struct qs_member **m, size_t n, double pool);

/* The token bucket that enforces share for a limit of unit unit_s. */
void qs_bucket_for(double share, int64_t unit_s, struct qs_assignment *a);

/* The requests per unit_s that enforce share (DENY_ALL for none). */
void qs_per_unit_for(double share, int64_t unit_s, struct qs_assignment *a);

/* What enforces m's share by its strategy: one of the two above. */
void qs_assignment_for(const struct qs_member *m, int64_t unit_s,
                       struct qs_assignment *a);

/* Does want differ enough from sent for a new bucket: a blanket rule
 * changed, the rate fell by more than QS_SLACK (*fell set) or rose by more
 * than QS_CHANGE? */
bool qs_differs(const struct qs_assignment *want,
                const struct qs_assignment *sent, bool *fell);

/* What to send m now for its share (unit_s: the limit's unit): the new
 * bucket when it differs (a rise: only when the last change is an interval
 * old), else the one sent before. */
void qs_choose(const struct qs_member *m, int64_t unit_s, int64_t now_ms,
               struct qs_assignment *out);

/* The same bucket (Envoy keeps it, only extending its time to live). */
bool qs_same(const struct qs_assignment *a, const struct qs_assignment *b);

/* Record that a was sent to m at now_ms. */
void qs_sent(struct qs_member *m, const struct qs_assignment *a,
             int64_t now_ms);

/* Is something due to m before its next report: a changed share it may be
 * sent now, or its assignment half-way through its time to live? */
bool qs_push_due(const struct qs_member *m, int64_t unit_s, int64_t now_ms);

/* The time to live of m's assignments, ms. */
int64_t qs_ttl_ms(const struct qs_member *m);

/* Has m stopped reporting (QS_STALE_INTERVALS without a report)? */
bool qs_stale(const struct qs_member *m, int64_t now_ms);

/* The rate of an assignment, requests a second (a blanket rule: -1). */
double qs_rate(const struct qs_assignment *a);

#endif
