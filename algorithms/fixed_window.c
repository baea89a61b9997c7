/*
 * fixed_window.c - RL.FIXED's fixed-window counter.
 *
 * Design. The state is (start, count) of one half-open window
 * [start, start + W). A request sees either that window, while it lasts and
 * holds a count, or a new one: at `now` in first-hit mode, at
 * floor(now / W) * W with ALIGN. A count of 0 is the same as no key, so a
 * state that a refund emptied is fresh and the next request opens a new
 * window; a denied request or a check on a fresh key therefore opens none.
 *
 *  - A stored window is kept until it ends even if the mode or the window
 *    length changed since it was opened: the key's quota period is never
 *    cut short or stretched by a mismatched grid, only by its own end.
 *  - Every sum is checked: W = window * 10^9 and start + W must fit int64
 *    (else LIMIT_EOVERFLOW); count + cost is compared as
 *    count > limit - cost, which cannot overflow once 0 < cost <= limit.
 *  - cost <= 0 is a refund (0 a check): always allowed, never below zero.
 *  - With a calendar the windows are its units (a day from local midnight,
 *    23 or 25 hours long on DST days): a stored window ends at the
 *    calendar's first boundary after its start, so a key keeps the state
 *    bytes of every fixed window, and one that a call names with another
 *    zone or unit ends where that call's calendar next turns.
 *
 * Pure: no clock, no allocation, no I/O. *st is read once into locals
 * before *next is written, so the two may alias.
 */
#include "algorithms/fixed_window.h"

#include "lib/time.h"

/* limit >= 1, window >= 1 s and now >= 0, and W in ns fits int64. */
static enum limit_status
window_ns(const struct fwin_params *p, int64_t now, int64_t *w)
{
    if (p->limit < 1 || now < 0 || (p->calendar == NULL && p->window < 1)) {
        return LIMIT_EINVAL;
    }
    if (p->calendar != NULL) {
        *w = 0;                 /* unused: the calendar says */
    } else if (!limit_mul(p->window, NS_PER_SEC, w)) {
        return LIMIT_EOVERFLOW;
    }
    return LIMIT_OK;
}

/* The calendar window holding instant t (ns): its start and end in ns. */
static enum limit_status
calendar_window(const struct cal_spec *c, int64_t t, int64_t *start,
                int64_t *end)
{
    int64_t s, e;
    cal_window(c, t / NS_PER_SEC - (t % NS_PER_SEC < 0), &s, &e);
    return limit_mul(s, NS_PER_SEC, start) && limit_mul(e, NS_PER_SEC, end)
           ? LIMIT_OK : LIMIT_EOVERFLOW;
}

/* calendar's window for a request at now: the stored one while it lasts
 * and holds units, else the one holding now. */
static enum limit_status
current_calendar_window(const struct fwin_params *p, bool has_state,
                        const struct fwin_state *st, int64_t now,
                        struct fwin_state *cur, int64_t *end)
{
    int64_t start;
    if (has_state && st->count > 0) {
        if (calendar_window(p->calendar, st->start, &start, end) !=
            LIMIT_OK) {
            return LIMIT_EOVERFLOW;
        }
        if (now < *end) {
            *cur = *st;
            return LIMIT_OK;
        }
    }
    cur->count = 0;
    return calendar_window(p->calendar, now, &cur->start, end);
}

/*
 * The window a request at `now` counts in, and its end: the stored one
 * while it is open and holds units, else a new, empty one.
 */
static enum limit_status
current_window(const struct fwin_params *p, bool has_state,
               const struct fwin_state *st, int64_t now, int64_t w,
               struct fwin_state *cur, int64_t *end)
{
    if (p->calendar != NULL) {
        return current_calendar_window(p, has_state, st, now, cur, end);
    }
    if (has_state && st->count > 0) {
        /* An end past INT64_MAX would be open forever: not representable. */
        if (!limit_add(st->start, w, end)) {
            return LIMIT_EOVERFLOW;
        }
        if (now < *end) {
            *cur = *st;
            return LIMIT_OK;
        }
    }
    cur->start = p->align ? now - now % w : now;
    cur->count = 0;
    return limit_add(cur->start, w, end) ? LIMIT_OK : LIMIT_EOVERFLOW;
}

/*
 * The count after the request and whether it is limited. A denial leaves
 * the count as it was; retry_after is -1 unless the cost can ever fit.
 */
static int64_t
decide(const struct fwin_params *p, int64_t count, int64_t now, int64_t end,
       struct limit_decision *out)
{
    out->limited = false;
    out->retry_after_ns = -1;
    if (p->cost <= 0) {
        /* count >= 0 and cost <= 0: the sum cannot overflow. */
        return count + p->cost > 0 ? count + p->cost : 0;
    }
    if (p->cost > p->limit) {
        out->limited = true;
        return count;
    }
    if (count > p->limit - p->cost) {
        /* At `end` the next window begins empty and the cost fits. */
        out->limited = true;
        out->retry_after_ns = end - now;
        return count;
    }
    return count + p->cost;
}

enum limit_status
fwin_apply(const struct fwin_params *p, bool has_state,
           const struct fwin_state *st, int64_t now, struct fwin_state *next,
           struct limit_decision *out)
{
    struct fwin_state cur;
    int64_t w;
    int64_t end;
    enum limit_status rc = window_ns(p, now, &w);

    if (rc == LIMIT_OK) {
        rc = current_window(p, has_state, st, now, w, &cur, &end);
    }
    if (rc != LIMIT_OK) {
        return rc;
    }

    int64_t used = decide(p, cur.count, now, end, out);

    out->limit = p->limit;
    out->remaining = used < p->limit ? p->limit - used : 0;
    if (used > 0) {
        out->reset_after_ns = end - now;
        out->fresh_at = end;
        next->start = cur.start;
        next->count = used;
    } else {
        out->reset_after_ns = 0;
        out->fresh_at = now;
        next->start = 0;
        next->count = 0;
    }
    return LIMIT_OK;
}
