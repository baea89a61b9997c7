/*
 * clock.h - the limiter clock and the monotonic clock, typed apart.
 *
 * The limiter clock is the wall clock (CLOCK_REALTIME through libc, as
 * redis-cell reads it, and as the conformance fake-clock shim intercepts
 * it), in ns since the epoch, read once per command. It never goes below the
 * last value handed out, so a wall clock stepped backwards (NTP) freezes
 * limiter time until real time catches up instead of refilling buckets.
 */
#ifndef CELLGATE_CLOCK_H
#define CELLGATE_CLOCK_H

#include <stdint.h>

typedef int64_t wall_ns;   /* ns since the Unix epoch, never decreasing */
typedef int64_t mono_ns;   /* CLOCK_MONOTONIC ns */

wall_ns clock_wall_now(void);

/* The clamp clock_wall_now() applies: `raw` unless it is below *last (the
 * clock stepped back), then *last; *last follows the result. */
wall_ns clock_clamp(wall_ns *last, wall_ns raw);
mono_ns clock_mono_now(void);

/* Raw wall clock in microseconds (TIME, INFO), not clamped. */
int64_t clock_wall_us(void);

#endif
