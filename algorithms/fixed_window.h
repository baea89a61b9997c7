/*
 * fixed_window.h - the fixed-window counter behind RL.FIXED.
 *
 * At most `limit` units per half-open window [start, start + window). The
 * window opens at the first allowed request, or with `align` on the epoch
 * grid (a window of 86400 s resets at 00:00 UTC), or with a calendar on
 * its units in a time zone (lib/calendar.h). Pure: the caller passes
 * the stored state (if any) and "now"; nothing here reads a clock,
 * allocates or logs.
 */
#ifndef CELLGATE_FIXED_WINDOW_H
#define CELLGATE_FIXED_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/limit.h"
#include "lib/calendar.h"

struct fwin_state {
    int64_t start;      /* window start, ns since the epoch */
    int64_t count;      /* units used in it (0 = same as no key) */
};

struct fwin_params {
    int64_t limit;      /* >= 1 */
    int64_t window;     /* seconds, >= 1 */
    int64_t cost;       /* units this request takes; < 0 gives units back */
    bool align;         /* epoch-aligned windows instead of first-hit */
    /* Non-NULL: windows are this calendar's units (window and align are
     * not read). */
    const struct cal_spec *calendar;
};

/*
 * One RL.FIXED call at `now` (ns since the epoch, >= 0). has_state says
 * whether the key exists; st is read only then (it may be NULL otherwise).
 * On LIMIT_OK, *out is the reply and *next the state to store when
 * out->fresh_at > now (otherwise the key is fresh: store nothing). PEEK is
 * this call with *next discarded: *st is never written, and next may alias
 * st for an in-place update. On an error *out and *next are not written:
 * LIMIT_EINVAL for limit < 1, window < 1 or now < 0; LIMIT_EOVERFLOW when
 * the window or its end does not fit int64 nanoseconds. With a calendar, a
 * stored window ends at the calendar's first boundary after its start.
 */
enum limit_status fwin_apply(const struct fwin_params *p, bool has_state,
                             const struct fwin_state *st, int64_t now,
                             struct fwin_state *next,
                             struct limit_decision *out);

#endif
