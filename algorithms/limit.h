/*
 * limit.h - the vocabulary shared by the RL.* limiter algorithms.
 *
 * Every algorithm is a pure function of (state, parameters, now): it reads
 * no clock, allocates nothing, logs nothing. Times are int64 nanoseconds
 * since the Unix epoch (wall clock, never decreasing: the caller clamps).
 * Arithmetic is checked: an input that would overflow is rejected with
 * LIMIT_EOVERFLOW, never wrapped.
 */
#ifndef CELLGATE_LIMIT_H
#define CELLGATE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* 128-bit integers, where a product of two int64 must be exact. */
__extension__ typedef __int128 limit_i128;
#define LIMIT_NEVER INT64_MAX      /* "no expiry" / "never allowed" */

enum limit_status {
    LIMIT_OK = 0,
    LIMIT_EINVAL,       /* limit < 1, window < 1 s, or similar */
    LIMIT_EOVERFLOW     /* parameters too large for int64 nanoseconds */
};

/* What a limiter call decided, in the units of the five-integer reply
 * (durations still in ns; the command layer rounds them up to s or ms). */
struct limit_decision {
    bool limited;
    int64_t limit;          /* quota of the limit that decided */
    int64_t remaining;      /* quota left after this request (>= 0) */
    int64_t retry_after_ns; /* -1 when allowed, or when it never can be */
    int64_t reset_after_ns; /* until the key is back to its full quota */
    int64_t fresh_at;       /* ns at which the new state equals "no key"
                               (the store may drop it then); <= now means
                               the state is fresh already: store nothing */
};

/* Checked helpers. */
static inline bool
limit_mul(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline bool
limit_add(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* limit - used, never negative (used may exceed a lowered limit). */
static inline int64_t
limit_remaining(int64_t limit, int64_t used)
{
    if (used >= limit) {
        return 0;
    }
    if (used <= 0) {
        return limit;
    }
    return limit - used;
}

/* floor(a / d) for d > 0: pre-epoch instants round down like later ones
 * (C's division truncates toward zero). */
static inline int64_t
limit_floor_div(int64_t a, int64_t d)
{
    int64_t q = a / d;
    return q - (a % d != 0 && a < 0);
}

/* Round a duration up to whole units (1 s or 1 ms); negatives stay -1. */
static inline int64_t
limit_ceil_div(int64_t ns, int64_t unit)
{
    if (ns < 0) {
        return -1;
    }
    return ns / unit + (ns % unit != 0);
}

#endif
