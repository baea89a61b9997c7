/*
 * tiers.h - RL.TIERS: several sliding windows (e.g. 1000/1 s, 5000/10 s,
 * 7000/15 s) over one key's per-second buckets, checked all-or-nothing.
 *
 * Pure: the caller passes the buckets and "now"; nothing here reads a
 * clock, allocates, logs. tier_decide() never writes, so a request that one
 * tier denies is counted in none: the caller commits only when allowed.
 *
 * Calls with other windows may share a key, so its buckets are kept for
 * the largest window that changed it, its retention (keep), and each tier
 * counts only the buckets inside its own window. A call sequence for
 * RL.TIERS:
 *
 *     if (!PEEK) tier_expire(st, keep, now);   (drops what no call counts)
 *     tier_decide(p, st, now, &d);             (p->keep: the retention)
 *     if (!PEEK && !d.limited && cost != 0) {    (refunds: always allowed)
 *         if (tier_needs_bucket(st, now) && st->len == st->cap) { grow }
 *         tier_commit(st, now, cost);
 *     }
 *
 * After tier_expire(st, keep) at most keep buckets are live (seconds
 * now_s - keep + 1 .. now_s), so a capacity of keep never needs to grow.
 * A refund never needs a new bucket. tier_decide() gives the same answer
 * whether or not tier_expire() ran first, so PEEK never changes st.
 */
#ifndef CELLGATE_TIERS_H
#define CELLGATE_TIERS_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/limit.h"

struct tier_bucket {
    int64_t sec;        /* floor(t / 1 s) */
    int64_t count;      /* units accepted in that second, >= 1 */
};

struct tier_state {
    struct tier_bucket *b;  /* cap slots, caller-owned; sec ascending */
    uint32_t cap;
    uint32_t len;
};

struct tier_limit {
    int64_t limit;      /* >= 1 */
    int64_t window;     /* seconds, >= 1 */
};

struct tier_params {
    const struct tier_limit *tiers;
    uint32_t ntiers;    /* >= 1 */
    int64_t cost;       /* < 0: refund, 0: check, > 0: take */
    int64_t keep;       /* the key's retention in seconds: older buckets are
                           gone even if not yet expired; 0 = no limit */
};

/*
 * Drop the buckets that no tier can see: bucket b counts in a tier of w
 * seconds while floor(now / 1 s) < b.sec + w, so with the largest window
 * every tier's view is kept. Survivors move to the front of the array.
 */
void tier_expire(struct tier_state *st, int64_t max_window, int64_t now);

/*
 * Decide over every tier; never modifies st. A tier counts the buckets
 * inside both its window and keep; the times in the reply are departures
 * from the tiers' windows. The reply is the deciding tier's: when denied, the denying tier with
 * the longest retry_after (-1, "never" because cost > that tier's limit,
 * beats any wait); when allowed, the tier with the least remaining (ties:
 * the first listed). retry_after is exact: the instant enough buckets have
 * left that tier's window (bucket b leaves tier w at (b.sec + w) s).
 * remaining = limit - (units in window + cost), or limit - units when
 * denied, never below 0. reset_after runs until the newest counted bucket
 * left after the request has left the largest window (0 when none), fresh_at =
 * now + reset_after. A refund (cost < 0) is always allowed.
 * LIMIT_EINVAL: no tiers, a limit < 1 or a window < 1. LIMIT_EOVERFLOW:
 * the largest window's end does not fit int64 ns, or cost == INT64_MIN.
 * On error *out is left untouched.
 */
enum limit_status tier_decide(const struct tier_params *p,
                              const struct tier_state *st, int64_t now,
                              struct limit_decision *out);

/* Will tier_commit(st, now, cost > 0) append a bucket? */
bool tier_needs_bucket(const struct tier_state *st, int64_t now);

/*
 * Commit a request tier_decide() allowed. cost > 0 adds to the bucket of
 * floor(now / 1 s), appending one when tier_needs_bucket() (a full array
 * is left unchanged: grow first). cost < 0 takes |cost| units from the
 * newest buckets first, never below zero, dropping emptied buckets.
 */
void tier_commit(struct tier_state *st, int64_t now, int64_t cost);

#endif
