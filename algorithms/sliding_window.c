/*
 * sliding_window.c - RL.SLIDING's sliding-window counter.
 *
 * Design. Windows of W ns sit on the epoch grid; the state is the start of
 * the window it was last written in and the counts of that window (curr)
 * and the one before (prev). A call first rolls the state to the window
 * holding `now`, then works with e = now - start (0 <= e < W):
 *
 *     estimate = prev * (W - e) / W + curr
 *     allowed  <=> prev * (W - e) + (curr + cost) * W <= limit * W
 *
 * Everything is exact integer arithmetic on __int128: each product is at
 * most (2^63 - 1)^2 < 2^126, and the sums below are arranged so that no
 * more than two such terms meet (curr + cost > limit is rejected before the
 * products are formed), so nothing wraps. No floating point: the answer is
 * the same on every platform and retry_after is exact to the nanosecond.
 *
 *  - retry_after solves the inequality for the smallest integer e, first in
 *    the current window, then in the next one (where curr becomes the
 *    weighted prev and the current count is 0). The window after that is
 *    empty, so the search ends there: at most start + 2W, which is why
 *    start + 2W must fit int64 (else LIMIT_EOVERFLOW), as must fresh_at.
 *  - cost <= 0 is a refund (0 a check): always allowed, taken from curr
 *    first, then prev, never below zero.
 *  - A stored start that is neither this window nor the previous one
 *    (older, or from another window length) counts as empty.
 *
 * Pure: no clock, no allocation, no I/O. *st is read once into locals
 * before *next is written, so the two may alias.
 */
#include "algorithms/sliding_window.h"

#include "lib/time.h"

typedef limit_i128 i128;

/* The state rolled to the window holding `now`. */
struct view {
    int64_t w;          /* window length, ns */
    int64_t start;      /* start of the window holding now */
    int64_t e;          /* now - start, in [0, w) */
    int64_t prev;
    int64_t curr;
};

static int64_t
nonneg(int64_t v)
{
    return v > 0 ? v : 0;
}

/* limit >= 1, window >= 1 s, now >= 0; W and start + 2W fit int64. */
static enum limit_status
make_view(const struct swin_params *p, int64_t now, struct view *v)
{
    int64_t end;

    if (p->limit < 1 || p->window < 1 || now < 0) {
        return LIMIT_EINVAL;
    }
    if (!limit_mul(p->window, NS_PER_SEC, &v->w)) {
        return LIMIT_EOVERFLOW;
    }
    v->e = now % v->w;
    v->start = now - v->e;
    if (!limit_add(v->start, v->w, &end) || !limit_add(end, v->w, &end)) {
        return LIMIT_EOVERFLOW;
    }
    v->prev = 0;
    v->curr = 0;
    return LIMIT_OK;
}

static void
roll(struct view *v, bool has_state, const struct swin_state *st)
{
    if (!has_state) {
        return;
    }
    if (st->start == v->start) {
        v->prev = nonneg(st->prev);
        v->curr = nonneg(st->curr);
    } else if (st->start == v->start - v->w) {
        /* start >= 0 and w > 0: the difference cannot overflow. */
        v->prev = nonneg(st->curr);
    }
}

/* Does 0 < cost <= limit fit on top of the estimate right now? */
static bool
fits(const struct view *v, int64_t limit, int64_t cost)
{
    if (v->curr > limit - cost) {
        return false;
    }
    i128 used = (i128)v->prev * (v->w - v->e) + (i128)(v->curr + cost) * v->w;

    return used <= (i128)limit * v->w;
}

/*
 * The smallest e in [0, w] with weighted * (w - e) <= room * w, or -1 when
 * room < 0 (never in this window). For integer e this is
 * w - e <= floor(room * w / weighted).
 */
static i128
first_fit(int64_t weighted, i128 room, int64_t w)
{
    if (room < 0) {
        return -1;
    }
    if (weighted == 0) {
        return 0;
    }
    i128 slack = room * w / weighted;

    return slack >= w ? 0 : w - slack;
}

/*
 * Nanoseconds from now until a denied 0 < cost <= limit fits, the state
 * unchanged: later in this window if prev's weight decaying is enough,
 * else in the next one, where curr is the weighted count and nothing is
 * current; first_fit returns at most w there, i.e. the empty window after.
 */
static int64_t
retry_after(const struct view *v, int64_t limit, int64_t cost)
{
    i128 e = first_fit(v->prev, (i128)limit - v->curr - cost, v->w);

    if (e >= 0 && e < v->w) {
        return (int64_t)(e - v->e);
    }
    e = first_fit(v->curr, (i128)limit - cost, v->w);
    return (int64_t)(v->w + e - v->e);
}

/* Give back -cost units (cost <= 0): from curr first, then from prev. */
static void
refund(struct view *v, int64_t cost)
{
    i128 back = -(i128)cost;
    i128 from_curr = back < v->curr ? back : v->curr;

    v->curr -= (int64_t)from_curr;
    back -= from_curr;
    v->prev -= (int64_t)(back < v->prev ? back : v->prev);
}

/* floor(limit - estimate), at least 0. */
static int64_t
remaining(const struct view *v, int64_t limit)
{
    i128 left = (i128)limit * v->w - (i128)v->prev * (v->w - v->e);

    left -= (i128)v->curr * v->w;
    return left > 0 ? (int64_t)(left / v->w) : 0;
}

/* The state is fresh once curr has aged out of prev, or prev out of sight. */
static void
finish(const struct view *v, int64_t now, struct swin_state *next,
       struct limit_decision *out)
{
    int64_t fresh_at = now;

    if (v->curr > 0) {
        fresh_at = v->start + 2 * v->w;     /* checked in make_view */
    } else if (v->prev > 0) {
        fresh_at = v->start + v->w;
    }
    out->fresh_at = fresh_at;
    out->reset_after_ns = fresh_at - now;
    next->start = v->start;
    next->prev = v->prev;
    next->curr = v->curr;
}

enum limit_status
swin_apply(const struct swin_params *p, bool has_state,
           const struct swin_state *st, int64_t now, struct swin_state *next,
           struct limit_decision *out)
{
    struct view v;
    enum limit_status rc = make_view(p, now, &v);

    if (rc != LIMIT_OK) {
        return rc;
    }
    roll(&v, has_state, st);

    out->limit = p->limit;
    out->limited = false;
    out->retry_after_ns = -1;
    if (p->cost <= 0) {
        refund(&v, p->cost);
    } else if (p->cost > p->limit) {
        out->limited = true;
    } else if (fits(&v, p->limit, p->cost)) {
        v.curr += p->cost;
    } else {
        out->limited = true;
        out->retry_after_ns = retry_after(&v, p->limit, p->cost);
    }
    out->remaining = remaining(&v, p->limit);
    finish(&v, now, next, out);
    return LIMIT_OK;
}
