/*
 * gcra.h - the generic cell rate algorithm behind CL.THROTTLE.
 *
 * Bit-exact with redis-cell 0.5.0 (see shared/spec/cl-throttle.md): the same
 * i64 wrapping arithmetic, the same f64 truncations, the same seconds rounding.
 * Pure: the caller passes the stored TAT (if any) and "now"; nothing here reads
 * a clock, allocates or logs.
 */
#ifndef CELLGATE_GCRA_H
#define CELLGATE_GCRA_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/limit.h"

/*
 * A duration in nanoseconds, as wide as redis-cell's time::Duration needs:
 * a TAT written from a new_tat before the epoch wraps to ~2^64 ns, and
 * (tat - now) then exceeds INT64_MAX (retry_after ~1.6e10 s on the wire).
 */
typedef limit_i128 gcra_ns_t;

struct gcra_params {
    int64_t max_burst;
    int64_t count;      /* requests per period */
    int64_t period;     /* seconds */
    int64_t quantity;   /* tokens this request costs (default 1) */
};

enum gcra_status {
    GCRA_OK = 0,
    GCRA_ZERO_RATE,     /* emission interval is 0 ns: nothing happens */
    GCRA_EXPIRE_ERROR   /* allowed, value written, but the TTL is < -1 ms */
};

struct gcra_decision {
    bool limited;
    int64_t limit;           /* max_burst + 1 (wrapping) */
    int64_t remaining;
    gcra_ns_t retry_after_ns; /* -1 s (-1000000000) when allowed or never */
    gcra_ns_t reset_after_ns;
    /* What the caller must do with the key (only when status != ZERO_RATE): */
    bool store;              /* write new_tat (allowed requests) */
    uint64_t new_tat;        /* ns since the epoch, as redis-cell stores it */
    int64_t ttl_ms;          /* PEXPIRE argument: trunc(ttl_ns / 1e6); -1 =
                                no expiry (persistent); < -1 only with
                                GCRA_EXPIRE_ERROR (key then has no TTL) */
};

/*
 * One CL.THROTTLE call. has_tat says whether the key exists (after the caller
 * applied lazy expiry); tat is its stored value. now is wall-clock ns since
 * the epoch.
 */
enum gcra_status gcra_throttle(const struct gcra_params *p, bool has_tat,
                               uint64_t tat, int64_t now,
                               struct gcra_decision *out);

/*
 * p->quantity tokens given back (Envoy's negative hits): the TAT moves back
 * by as many emission intervals, never before now (an empty bucket), and
 * *out is then a look (quantity 0) at it, always allowed.
 */
enum gcra_status gcra_give_back(const struct gcra_params *p, bool has_tat,
                                uint64_t tat, int64_t now,
                                struct gcra_decision *out);

/*
 * redis-cell's duration -> whole seconds conversion for the reply
 * (ceil, but a fractional part below 1 ms is dropped; negative values
 * truncate toward zero).
 */
int64_t gcra_reply_seconds(gcra_ns_t ns);

/*
 * cellgate's RESERVE option, applied to gcra_throttle()'s decision `out`
 * for the same p and now: a request refused only because it came early
 * (it would be allowed within max_wait_ns, >= 0) is admitted instead. Its
 * slot is reserved: the TAT it would store at its allowed time (the same
 * new_tat, since that time is before the stored TAT) is stored now, and
 * retry_after_ns keeps the wait (> 0) the caller is to sleep before it
 * proceeds. Anything else, including a reservation whose TAT or TTL would
 * leave the stored range, is left as decided. Returns the status as
 * gcra_throttle() does; sets *reserved when it admitted the request.
 */
enum gcra_status gcra_reserve(const struct gcra_params *p, int64_t now,
                              int64_t max_wait_ns, struct gcra_decision *out,
                              bool *reserved);

/* A reservation's wait in the reply's unit: rounded up, never 0 (unlike
 * gcra_reply_seconds, which drops a part below 1 ms). */
int64_t gcra_reply_wait(gcra_ns_t ns, bool ms);

/*
 * The same duration in milliseconds for cellgate's MS option: rounded up
 * when positive, truncated toward zero when negative, and the "allowed /
 * never" marker -1 s maps to -1.
 */
int64_t gcra_reply_millis(gcra_ns_t ns);

#endif
