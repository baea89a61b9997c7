/*
 * sliding_window.h - the sliding-window counter behind RL.SLIDING.
 *
 * Two epoch-aligned fixed windows of W ns: the estimate at elapsed time e
 * of the current one is prev * (W - e) / W + curr, and a request fits when
 * estimate + cost <= limit, decided exactly in integers. O(1) state; it
 * smooths the 2x burst a fixed window allows at its boundary. Pure: no
 * clock, no allocation, no I/O.
 */
#ifndef CELLGATE_SLIDING_WINDOW_H
#define CELLGATE_SLIDING_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/limit.h"

struct swin_state {
    int64_t start;      /* start of the current (epoch-aligned) window, ns */
    int64_t prev;       /* units counted in the window before it */
    int64_t curr;       /* units counted in it */
};

struct swin_params {
    int64_t limit;      /* >= 1 */
    int64_t window;     /* seconds, >= 1 */
    int64_t cost;       /* units this request takes; < 0 gives units back */
};

/*
 * One RL.SLIDING call at `now` (ns since the epoch, >= 0), with the same
 * contract as fwin_apply(): st is read only when has_state, never written;
 * *next is the state to store when out->fresh_at > now; next may alias st;
 * on an error *out and *next are not written. LIMIT_EINVAL for limit < 1,
 * window < 1 or now < 0; LIMIT_EOVERFLOW when the window, or the end of the
 * window after the current one, does not fit int64 nanoseconds.
 */
enum limit_status swin_apply(const struct swin_params *p, bool has_state,
                             const struct swin_state *st, int64_t now,
                             struct swin_state *next,
                             struct limit_decision *out);

#endif
