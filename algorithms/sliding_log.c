/*
 * sliding_log.c - RL.LOG's exact sliding log over a caller-owned ring.
 *
 * Design. The log is the sorted-set pattern without the sorted set: entries
 * arrive in time order (the caller never lets now go backwards), so a ring
 * with the oldest entry at head keeps them sorted for free. Expiry pops
 * from the head, appends push at the tail, refunds shrink the tail: all
 * O(1) per entry touched, and a running sum makes the decision O(1) when
 * allowed. Only a denial walks the ring, from the oldest entry, to find
 * the departure that frees enough room; that walk is the exact answer the
 * sorted set would give with ZRANGE.
 *
 * Times. Entries keep milliseconds (RL.ENTRIES shows them and the spec
 * fixes millisecond resolution): an entry made at t_ms counts while
 * now_ms < t_ms + window_ms, so it leaves at exactly (t_ms + window_ms) ms,
 * and durations are that instant minus now in ns. Every instant a reply
 * can mention is at most the end of a window opened now, so checking that
 * one value up front keeps the rest in range; the per-entry arithmetic is
 * still checked because the ring is the caller's data.
 *
 * Pure: no clock, no allocation, no I/O.
 */
#include "algorithms/sliding_log.h"

#include <string.h>

#include "lib/time.h"

/* The window of one decision, in the units the ring and replies use, and
 * the entries it counts: [first, len) of the ring, costing used. */
struct slog_window {
    int64_t ms;         /* window in ms */
    int64_t end_ns;     /* departure of an entry made now */
    uint32_t first;     /* entries before it are not counted */
    int64_t used;       /* total cost of the counted entries */
};

static bool
sub_ok(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_sub_overflow(a, b, out);
}

/* Slot of the i-th entry from the oldest; 64-bit so head + i cannot wrap. */
static uint32_t
slot(const struct slog_ring *r, uint32_t i)
{
    return (uint32_t)(((uint64_t)r->head + i) % r->cap);
}

/* Does the entry still count at now_ms? An end past INT64_MAX never ends. */
static bool
counts(const struct slog_entry *e, int64_t window_ms, int64_t now_ms)
{
    int64_t end_ms;

    if (!limit_add(e->t_ms, window_ms, &end_ms)) {
        return window_ms > 0;
    }
    return now_ms < end_ms;
}

/* Time from now until the entry leaves the window (>= 0). */
static bool
until_leaves(const struct slog_entry *e, int64_t window_ms, int64_t now,
             int64_t *out)
{
    int64_t end_ms;
    int64_t end_ns;

    if (!limit_add(e->t_ms, window_ms, &end_ms)
        || !limit_mul(end_ms, NS_PER_MS, &end_ns)
        || !sub_ok(end_ns, now, out)) {
        return false;
    }
    if (*out < 0) {
        *out = 0;
    }
    return true;
}

uint32_t
slog_expire(struct slog_ring *r, int64_t window_ms, int64_t now)
{
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    uint32_t dropped = 0;

    while (r->len > 0 && !counts(&r->e[r->head], window_ms, now_ms)) {
        r->sum -= r->e[r->head].cost;
        r->head = slot(r, 1);
        r->len--;
        dropped++;
    }
    if (r->len == 0) {
        r->head = 0;
        r->sum = 0;
    }
    return dropped;
}

/* Validate and convert the parameters; the window opened now must fit. */
static enum limit_status
window_of(const struct slog_params *p, int64_t now, struct slog_window *w)
{
    int64_t end_ms;

    if (p->limit < 1 || p->window < 1 || p->keep_ms < 0) {
        return LIMIT_EINVAL;
    }
    if (p->cost == INT64_MIN
        || !limit_mul(p->window, MS_PER_SEC, &w->ms)
        || !limit_add(limit_floor_div(now, NS_PER_MS), w->ms, &end_ms)
        || !limit_mul(end_ms, NS_PER_MS, &w->end_ns)) {
        return LIMIT_EOVERFLOW;
    }
    return LIMIT_OK;
}

/* The oldest entries a call does not count: those outside its window or
 * the log's retention, whichever is shorter (entries are in time order,
 * so they are a prefix). */
static uint32_t
uncounted(int64_t window_ms, int64_t keep_ms, const struct slog_ring *r,
          int64_t now, int64_t *cost)
{
    int64_t sel_ms = keep_ms > 0 && keep_ms < window_ms ? keep_ms : window_ms;
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    int64_t skipped = 0;
    uint32_t i = 0;

    while (i < r->len && !counts(&r->e[slot(r, i)], sel_ms, now_ms)) {
        /* Saturate: only a corrupt ring sums past the limit's range. */
        if (!limit_add(skipped, r->e[slot(r, i)].cost, &skipped)) {
            skipped = INT64_MAX;
        }
        i++;
    }
    if (cost != NULL) {
        *cost = skipped;
    }
    return i;
}

uint32_t
slog_uncounted(const struct slog_params *p, const struct slog_ring *r,
               int64_t now, int64_t *cost)
{
    int64_t window_ms;

    if (!limit_mul(p->window > 0 ? p->window : 0, MS_PER_SEC, &window_ms)) {
        window_ms = INT64_MAX;
    }
    return uncounted(window_ms, p->keep_ms, r, now, cost);
}

/* The newest counted entry still there once `drop` units are refunded, or
 * NULL. */
static const struct slog_entry *
newest_survivor(const struct slog_ring *r, const struct slog_window *w,
                int64_t drop)
{
    for (uint32_t i = 0; i < r->len - w->first; i++) {
        const struct slog_entry *e = slog_newest(r, i);

        if (e->cost <= 0) {
            continue;       /* not a valid entry; refunds drop it */
        }
        if (e->cost > drop) {
            return e;
        }
        drop -= e->cost;
    }
    return NULL;
}

/* reset_after: until `newest` (if any) has left the window. */
static bool
reset_after(const struct slog_entry *newest, const struct slog_window *w,
            int64_t now, int64_t *out)
{
    if (newest == NULL) {
        *out = 0;
        return true;
    }
    return until_leaves(newest, w->ms, now, out);
}

/*
 * Denied but possible: walk from the oldest entry until the ones gone make
 * room for cost. The last entry always makes room (the ring then holds
 * nothing), so falling off the end only happens on an inconsistent sum;
 * then the ring's last departure is the honest answer.
 */
static bool
retry_after(const struct slog_params *p, const struct slog_ring *r,
            const struct slog_window *w, int64_t now, int64_t *out)
{
    int64_t left = w->used;
    int64_t room = p->limit - p->cost;

    for (uint32_t i = w->first; i < r->len; i++) {
        const struct slog_entry *e = &r->e[slot(r, i)];

        if (!sub_ok(left, e->cost, &left)) {
            return false;
        }
        if (left <= room || i + 1 == r->len) {
            if (!until_leaves(e, w->ms, now, out)) {
                return false;
            }
            /* An unexpired entry leaves at least 1 ns after now. */
            if (*out < 1) {
                *out = 1;
            }
            return true;
        }
    }
    *out = 1;
    return true;
}

/* A refund: always allowed; the newest entries lose |cost| first. */
static enum limit_status
decide_refund(const struct slog_params *p, const struct slog_ring *r,
              const struct slog_window *w, int64_t now,
              struct limit_decision *d)
{
    int64_t units = -p->cost;

    d->limited = false;
    d->remaining = limit_remaining(p->limit,
                                   w->used > units ? w->used - units : 0);
    d->retry_after_ns = -1;
    if (!reset_after(newest_survivor(r, w, units), w, now, &d->reset_after_ns)) {
        return LIMIT_EOVERFLOW;
    }
    return LIMIT_OK;
}

/* A take (cost >= 1) or a check (cost 0). */
static enum limit_status
decide_take(const struct slog_params *p, const struct slog_ring *r,
            const struct slog_window *w, int64_t now,
            struct limit_decision *d)
{
    int64_t after;
    bool fits = p->cost <= p->limit && limit_add(w->used, p->cost, &after)
                && after <= p->limit;

    d->limited = !fits;
    d->retry_after_ns = -1;
    if (fits) {
        d->remaining = limit_remaining(p->limit, after);
    } else {
        d->remaining = limit_remaining(p->limit, w->used);
        if (p->cost <= p->limit
            && !retry_after(p, r, w, now, &d->retry_after_ns)) {
            return LIMIT_EOVERFLOW;
        }
    }
    if (fits && p->cost > 0) {
        /* The new entry is the newest; end_ns - now <= window fits. */
        d->reset_after_ns = w->end_ns - now;
        return LIMIT_OK;
    }
    if (!reset_after(newest_survivor(r, w, 0), w, now, &d->reset_after_ns)) {
        return LIMIT_EOVERFLOW;
    }
    return LIMIT_OK;
}

enum limit_status
slog_decide(const struct slog_params *p, const struct slog_ring *r,
            int64_t now, struct limit_decision *out)
{
    struct slog_window w;
    struct limit_decision d;
    enum limit_status st = window_of(p, now, &w);

    if (st != LIMIT_OK) {
        return st;
    }
    int64_t skipped;
    w.first = uncounted(w.ms, p->keep_ms, r, now, &skipped);
    w.used = r->sum > skipped ? r->sum - skipped : 0;
    d.limit = p->limit;
    if (p->cost < 0) {
        st = decide_refund(p, r, &w, now, &d);
    } else {
        st = decide_take(p, r, &w, now, &d);
    }
    if (st != LIMIT_OK || !limit_add(now, d.reset_after_ns, &d.fresh_at)) {
        return LIMIT_EOVERFLOW;
    }
    *out = d;
    return LIMIT_OK;
}

void
slog_append(struct slog_ring *r, int64_t now, int64_t cost,
            uint32_t meta_off, uint32_t meta_len)
{
    struct slog_entry *e;

    if (r->len >= r->cap) {
        return;
    }
    e = &r->e[slot(r, r->len)];
    e->t_ms = limit_floor_div(now, NS_PER_MS);
    e->cost = cost;
    e->meta_off = meta_off;
    e->meta_len = meta_len;
    r->len++;
    /* Saturate: an allowed cost keeps sum <= limit, so this never bites. */
    if (!limit_add(r->sum, cost, &r->sum)) {
        r->sum = INT64_MAX;
    }
}

int64_t
slog_refund(struct slog_ring *r, int64_t units)
{
    int64_t removed = 0;

    while (units > removed && r->len > 0) {
        struct slog_entry *e = &r->e[slot(r, r->len - 1)];
        int64_t take = units - removed;

        if (e->cost <= 0) {
            r->len--;       /* not a valid entry: nothing to give back */
            continue;
        }
        if (take > e->cost) {
            take = e->cost;
        }
        e->cost -= take;
        removed += take;
        if (e->cost <= 0) {
            r->len--;
        }
    }
    r->sum = r->sum > removed ? r->sum - removed : 0;
    if (r->len == 0) {
        r->head = 0;
        r->sum = 0;
    }
    return removed;
}

void
slog_drop_oldest(struct slog_ring *r, uint32_t n)
{
    while (n-- > 0 && r->len > 0) {
        r->sum -= r->e[r->head].cost;
        r->head = slot(r, 1);
        r->len--;
    }
    if (r->len == 0) {
        r->head = 0;
        r->sum = 0;
    }
}

const struct slog_entry *
slog_newest(const struct slog_ring *r, uint32_t i)
{
    if (i >= r->len) {
        return NULL;
    }
    return &r->e[slot(r, r->len - 1 - i)];
}

void
slog_grown(struct slog_ring *r, uint32_t new_cap)
{
    uint32_t old_cap = r->cap;

    if (new_cap <= old_cap) {
        return;
    }
    r->cap = new_cap;
    if ((uint64_t)r->head + r->len > old_cap) {
        /* Wrapped: the oldest part [head, old_cap) moves to the new end. */
        uint32_t tail = old_cap - r->head;

        memmove(&r->e[new_cap - tail], &r->e[r->head],
                (size_t)tail * sizeof(*r->e));
        r->head = new_cap - tail;
    }
}
