/*
 * tiers.c - RL.TIERS: several sliding windows over per-second buckets.
 *
 * Design. One array of (second, units) buckets, ascending, serves every
 * tier: a tier of w seconds sees the suffix of buckets with
 * now_s < sec + w, so windows of 1 s, 10 s and 15 s share storage and a
 * key costs at most one bucket per second of its largest window. The
 * decision evaluates each tier on the unchanged array and only then picks
 * the reply; nothing is written until the caller commits, which is what
 * makes a request denied by one tier count in none.
 *
 * Times. A bucket of second b leaves a tier of w at exactly (b + w) s, so
 * a denial's retry_after is the departure of the oldest bucket whose
 * leaving makes room, minus now: exact to the ns, never early. All such
 * instants are at most the end of the largest window opened in the current
 * second, checked once up front; per-bucket arithmetic is still checked
 * because the array is the caller's data.
 *
 * Refunds take from the newest buckets. Every tier's window is a suffix
 * of the array, so a refund of R units leaves max(0, sum - R) in each
 * tier: no simulation is needed to answer it.
 *
 * Pure: no clock, no allocation, no I/O.
 */
#include "algorithms/tiers.h"

#include <string.h>

#include "lib/time.h"

/* One tier's verdict on the request. */
struct tier_eval {
    bool limited;
    int64_t remaining;
    int64_t retry_ns;   /* -1: allowed, or never */
};

/* Does second `sec` count in a window of w at now_s? */
static bool
in_window(int64_t sec, int64_t w, int64_t now_s)
{
    int64_t end;

    if (!limit_add(sec, w, &end)) {
        return w > 0;
    }
    return now_s < end;
}

/* First index of the suffix of buckets inside a window of w. */
static uint32_t
window_start(const struct tier_state *st, int64_t w, int64_t now_s)
{
    uint32_t i = st->len;

    while (i > 0 && in_window(st->b[i - 1].sec, w, now_s)) {
        i--;
    }
    return i;
}

/* The window a tier of w counts in: w, cut to the key's retention. */
static int64_t
counted_window(int64_t w, int64_t keep)
{
    return keep > 0 && keep < w ? keep : w;
}

/* Units in [from, len); saturates (only a corrupt array gets there). */
static int64_t
units_from(const struct tier_state *st, uint32_t from)
{
    int64_t sum = 0;

    for (uint32_t i = from; i < st->len; i++) {
        if (!limit_add(sum, st->b[i].count, &sum)) {
            return INT64_MAX;
        }
    }
    return sum;
}

/* Time from now until second `sec` has left a window of w (>= 0). */
static bool
until_leaves(int64_t sec, int64_t w, int64_t now, int64_t *out)
{
    int64_t end_s;
    int64_t end_ns;

    if (!limit_add(sec, w, &end_s) || !limit_mul(end_s, NS_PER_SEC, &end_ns)
        || __builtin_sub_overflow(end_ns, now, out)) {
        return false;
    }
    if (*out < 0) {
        *out = 0;
    }
    return true;
}

/* Validate every tier and find the largest window; it must fit in ns. */
static enum limit_status
check_params(const struct tier_params *p, int64_t now, int64_t *max_window)
{
    int64_t end_s;
    int64_t end_ns;

    if (p->tiers == NULL || p->ntiers == 0 || p->keep < 0) {
        return LIMIT_EINVAL;
    }
    *max_window = 0;
    for (uint32_t i = 0; i < p->ntiers; i++) {
        if (p->tiers[i].limit < 1 || p->tiers[i].window < 1) {
            return LIMIT_EINVAL;
        }
        if (p->tiers[i].window > *max_window) {
            *max_window = p->tiers[i].window;
        }
    }
    if (p->cost == INT64_MIN
        || !limit_add(limit_floor_div(now, NS_PER_SEC), *max_window, &end_s)
        || !limit_mul(end_s, NS_PER_SEC, &end_ns)) {
        return LIMIT_EOVERFLOW;
    }
    return LIMIT_OK;
}

/*
 * Denied but possible: walk the tier's buckets from the oldest until the
 * ones gone make room. The last one always does (the window is then
 * empty), so it is also the answer for a corrupt sum.
 */
static bool
tier_retry(const struct tier_state *st, uint32_t from, int64_t used,
           const struct tier_limit *t, int64_t cost, int64_t now,
           int64_t *out)
{
    int64_t room = t->limit - cost;

    for (uint32_t i = from; i < st->len; i++) {
        if (__builtin_sub_overflow(used, st->b[i].count, &used)) {
            return false;
        }
        if (used <= room || i + 1 == st->len) {
            if (!until_leaves(st->b[i].sec, t->window, now, out)) {
                return false;
            }
            if (*out < 1) {
                *out = 1;
            }
            return true;
        }
    }
    *out = 1;
    return true;
}

static bool
eval_tier(const struct tier_limit *t, const struct tier_state *st,
          int64_t cost, int64_t keep, int64_t now, struct tier_eval *ev)
{
    uint32_t from = window_start(st, counted_window(t->window, keep),
                                 limit_floor_div(now, NS_PER_SEC));
    int64_t used = units_from(st, from);

    ev->retry_ns = -1;
    if (cost < 0) {
        ev->limited = false;
        ev->remaining = limit_remaining(t->limit, used > -cost ? used + cost : 0);
        return true;
    }
    ev->limited = cost > t->limit || used > t->limit - cost;
    if (!ev->limited) {
        ev->remaining = t->limit - cost - used;
        return true;
    }
    ev->remaining = limit_remaining(t->limit, used);
    if (cost > t->limit) {
        return true;
    }
    return tier_retry(st, from, used, t, cost, now, &ev->retry_ns);
}

/* Does `a` decide over the current choice `best`? Ties keep `best`. */
static bool
decides_over(const struct tier_eval *a, const struct tier_eval *best)
{
    if (a->limited != best->limited) {
        return a->limited;
    }
    if (!a->limited) {
        return a->remaining < best->remaining;
    }
    if (best->retry_ns == -1) {
        return false;
    }
    return a->retry_ns == -1 || a->retry_ns > best->retry_ns;
}

/* The newest bucket of [from, len) still there once `drop` units are
 * refunded, or NULL. */
static const struct tier_bucket *
newest_survivor(const struct tier_state *st, uint32_t from, int64_t drop)
{
    for (uint32_t i = st->len; i > from; i--) {
        const struct tier_bucket *b = &st->b[i - 1];

        if (b->count <= 0) {
            continue;
        }
        if (b->count > drop) {
            return b;
        }
        drop -= b->count;
    }
    return NULL;
}

/* Until the state is fresh: the newest bucket after the request leaves. */
static bool
tier_reset(const struct tier_params *p, const struct tier_state *st,
           bool limited, int64_t max_window, int64_t now, int64_t *out)
{
    const struct tier_bucket *newest;

    int64_t now_s = limit_floor_div(now, NS_PER_SEC);

    if (!limited && p->cost > 0) {
        return until_leaves(now_s, max_window, now, out);
    }
    newest = newest_survivor(st, window_start(st, counted_window(max_window,
                                                                 p->keep),
                                              now_s),
                             p->cost < 0 ? -p->cost : 0);
    if (newest == NULL) {
        *out = 0;
        return true;
    }
    return until_leaves(newest->sec, max_window, now, out);
}

enum limit_status
tier_decide(const struct tier_params *p, const struct tier_state *st,
            int64_t now, struct limit_decision *out)
{
    int64_t max_window;
    struct tier_eval best = { false, 0, -1 };
    uint32_t decider = 0;
    struct limit_decision d;
    enum limit_status status = check_params(p, now, &max_window);

    if (status != LIMIT_OK) {
        return status;
    }
    for (uint32_t i = 0; i < p->ntiers; i++) {
        struct tier_eval ev;

        if (!eval_tier(&p->tiers[i], st, p->cost, p->keep, now, &ev)) {
            return LIMIT_EOVERFLOW;
        }
        if (i == 0 || decides_over(&ev, &best)) {
            best = ev;
            decider = i;
        }
    }
    d.limited = best.limited;
    d.limit = p->tiers[decider].limit;
    d.remaining = best.remaining;
    d.retry_after_ns = best.retry_ns;
    if (!tier_reset(p, st, best.limited, max_window, now, &d.reset_after_ns)
        || !limit_add(now, d.reset_after_ns, &d.fresh_at)) {
        return LIMIT_EOVERFLOW;
    }
    *out = d;
    return LIMIT_OK;
}

void
tier_expire(struct tier_state *st, int64_t max_window, int64_t now)
{
    int64_t now_s = limit_floor_div(now, NS_PER_SEC);
    uint32_t gone = 0;

    while (gone < st->len && !in_window(st->b[gone].sec, max_window, now_s)) {
        gone++;
    }
    if (gone > 0) {
        memmove(st->b, st->b + gone,
                (size_t)(st->len - gone) * sizeof(*st->b));
        st->len -= gone;
    }
}

bool
tier_needs_bucket(const struct tier_state *st, int64_t now)
{
    return st->len == 0
           || st->b[st->len - 1].sec < limit_floor_div(now, NS_PER_SEC);
}

/* Take units back from the newest buckets; INT64_MIN means "everything". */
static void
refund(struct tier_state *st, int64_t cost)
{
    int64_t units = cost == INT64_MIN ? INT64_MAX : -cost;

    while (units > 0 && st->len > 0) {
        struct tier_bucket *b = &st->b[st->len - 1];

        if (b->count > units) {
            b->count -= units;
            return;
        }
        if (b->count > 0) {
            units -= b->count;
        }
        st->len--;
    }
}

void
tier_commit(struct tier_state *st, int64_t now, int64_t cost)
{
    struct tier_bucket *last;

    if (cost < 0) {
        refund(st, cost);
        return;
    }
    if (cost == 0) {
        return;
    }
    if (!tier_needs_bucket(st, now)) {
        /* The current second (or, if now went back, the newest one). */
        last = &st->b[st->len - 1];
        if (!limit_add(last->count, cost, &last->count)) {
            last->count = INT64_MAX;
        }
        return;
    }
    if (st->len < st->cap) {
        st->b[st->len].sec = limit_floor_div(now, NS_PER_SEC);
        st->b[st->len].count = cost;
        st->len++;
    }
}
