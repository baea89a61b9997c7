/*
 * gcra.c - CL.THROTTLE's generic cell rate algorithm, bit-exact with
 * redis-cell 0.5.0 (shared/spec/cl-throttle.md).
 *
 * Design. redis-cell's replies are products of its exact numeric types, so
 * this file models those types rather than the idea of GCRA:
 *
 *  - Parameters are Rust i64 in a release build: limit = b + 1, the delay
 *    variation tolerance dvt = ei * (b + 1) and increment = ei * q wrap on
 *    overflow. C signed overflow is undefined, so the wrapping operations go
 *    through uint64_t.
 *  - The emission interval ei is an f64 division of the exact (i128) period
 *    in ns by count, converted with Rust's saturating `f64 as i64`.
 *  - Instants are time::OffsetDateTime and their differences time::Duration
 *    (i64 seconds + i32 ns): far wider than i64 ns. A stored TAT is a u64
 *    (never negative when read back), a new TAT is stored modulo 2^64 (one
 *    before the epoch comes back near 2^64 ns, year 2554). Every instant and
 *    difference reachable here stays below 2^66 ns in magnitude and inside
 *    time's year range, so __int128 ns represents them exactly and the
 *    module's "out of range" panics cannot happen.
 *  - remaining truncates both operands to whole microseconds before an f64
 *    division; the reply seconds add 1 only for a fractional part >= 1 ms.
 *
 * Pure: no clock, no allocation, no I/O (the one memo, of the last rate's
 * emission interval, is a cache of a pure function). The caller owns the
 * key.
 */
#include "algorithms/gcra.h"

#include <math.h>

#include "lib/time.h"

/* "Allowed" / "never" marker of retry_after: Duration::seconds(-1). */
#define GCRA_NO_RETRY (-NS_PER_SEC)

typedef limit_i128 i128;

/* Wrapping i64 arithmetic (Rust release semantics) without C's UB. */
static int64_t
wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t
wrap_mul(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

/*
 * Division and remainder of an i128 by a positive constant. Nearly every
 * value fits 64 bits, and a 64-bit division is a few instructions where
 * the 128-bit one is a libgcc call (__divti3, __divmodti4); both truncate
 * toward zero, so the results are the same.
 */
static i128
div_i128(i128 a, int64_t d)
{
    if (a >= INT64_MIN && a <= INT64_MAX) {
        return (int64_t)a / d;
    }
    return a / d;
}

static i128
mod_i128(i128 a, int64_t d)
{
    if (a >= INT64_MIN && a <= INT64_MAX) {
        return (int64_t)a % d;
    }
    return a % d;
}

/* Rust `f64 as i64`: truncate toward zero, saturate, NaN -> 0. */
static int64_t
f64_to_i64(double x)
{
    if (isnan(x)) {
        return 0;
    }
    if (x >= 9223372036854775808.0) {
        return INT64_MAX;
    }
    if (x <= -9223372036854775808.0) {
        return INT64_MIN;
    }
    return (int64_t)x;
}

/*
 * Rate::per_period: period_ns is exact in i128 (period * 10^9 can exceed
 * i64), then rounded to f64 like Rust's `as f64`, so periods above 2^53 ns
 * leak their rounding into ei, exactly as in redis-cell.
 */
/* Forced inline: gcra_reserve() calls it too, and a second caller would
 * make it a call on every CL.THROTTLE. */
__attribute__((always_inline)) static inline int64_t
emission_interval(int64_t count, int64_t period)
{
    /* A client sends the same rate with nearly every call: the last
     * answer is kept (per thread), which saves the division and its
     * checks. (0, 0) -> 0 is a true answer to start from. */
    static _Thread_local int64_t memo_count, memo_period, memo_ei;
    if (count == memo_count && period == memo_period) {
        return memo_ei;
    }
    i128 period_ns = (i128)period * NS_PER_SEC;
    int64_t ei = 0;

    if (count != 0 && period_ns != 0) {
        /* Same rounding either way; the 64-bit conversion is inline, the
         * 128-bit one a libgcc call. */
        double period_f = period_ns >= INT64_MIN && period_ns <= INT64_MAX
                              ? (double)(int64_t)period_ns
                              : (double)period_ns;
        ei = f64_to_i64(period_f / (double)count);
    }
    memo_count = count;
    memo_period = period;
    memo_ei = ei;
    return ei;
}

/*
 * Tokens left: (dvt - ttl) / ei with both operands truncated to whole
 * microseconds first. An ei below 1 µs divides by 0.0 (-> +-inf, saturated;
 * 0/0 -> NaN -> 0), and an ei that is not a whole number of µs lets the
 * result exceed the limit: both are redis-cell's observed answers.
 */
static int64_t
remaining_tokens(int64_t dvt, i128 ttl, int64_t ei)
{
    i128 next = (i128)dvt - ttl;

    if (!(next > -(i128)ei)) {
        return 0;
    }
    return f64_to_i64((double)div_i128(next, NS_PER_US) /
                      (double)(ei / NS_PER_US));
}

/* "Zero rates are not supported": an error reply, the key untouched. */
static enum gcra_status
decide_zero_rate(struct gcra_decision *out)
{
    out->limited = false;
    out->remaining = 0;
    out->retry_after_ns = GCRA_NO_RETRY;
    out->reset_after_ns = GCRA_NO_RETRY;
    out->store = false;
    out->new_tat = 0;
    out->ttl_ms = 0;
    return GCRA_ZERO_RATE;
}

/* Limited: nothing is written; retry only if the request can ever fit. */
static void
decide_limited(struct gcra_decision *out, i128 diff, int64_t increment,
               int64_t dvt, i128 ttl)
{
    out->limited = true;
    out->retry_after_ns = increment <= dvt ? -diff : GCRA_NO_RETRY;
    out->reset_after_ns = ttl;
    out->store = false;
    out->new_tat = 0;
    out->ttl_ms = 0;
}

/*
 * Allowed: redis-cell stores new_tat as u64 (two's complement wrap below
 * the epoch) and then PEXPIREs trunc(ttl / 1 ms). -1 ms is Redis's
 * "no expiry"; anything below fails after the value was written.
 */
static enum gcra_status
decide_allowed(struct gcra_decision *out, i128 new_tat, i128 ttl)
{
    out->limited = false;
    out->retry_after_ns = GCRA_NO_RETRY;
    out->reset_after_ns = ttl;
    out->store = true;
    out->new_tat = (uint64_t)new_tat;
    /* ttl = new_tat - now <= dvt here, and >= increment: it fits i64. */
    out->ttl_ms = (int64_t)div_i128(ttl, NS_PER_MS);
    return out->ttl_ms < -1 ? GCRA_EXPIRE_ERROR : GCRA_OK;
}

/*
 * The same decision in int64_t when now, the stored TAT and the increment
 * are in [0, 2^62) (a TAT until the year 2116) and dvt and ei are
 * positive: new_tat < 2^63, and the request is limited when new_tat - now
 * (in [0, 2^63)) exceeds dvt, a comparison that, unlike now - (new_tat -
 * dvt), cannot overflow. Every other value below stays in int64_t too
 * (remaining's dvt - ttl: ttl < 0 only when limited with tat < now, where
 * dvt < increment < 2^62), so each equals the i128 one and every branch
 * goes the same way. gcra_throttle() checks the bounds and otherwise
 * computes in i128.
 */
#define FAST_BOUND (INT64_C(1) << 62)

static enum gcra_status
throttle_i64(struct gcra_decision *out, bool has_tat, int64_t tat,
             int64_t now, int64_t ei, int64_t dvt, int64_t increment)
{
    int64_t tat_ns = has_tat ? tat : now;
    int64_t new_tat = (now > tat_ns ? now : tat_ns) + increment;
    int64_t ahead = new_tat - now;
    int64_t ttl;
    enum gcra_status status = GCRA_OK;

    if (ahead > dvt) {
        /* diff = now - (new_tat - dvt) = dvt - ahead < 0 */
        ttl = tat_ns - now;
        out->limited = true;
        out->retry_after_ns = increment <= dvt ? ahead - dvt : GCRA_NO_RETRY;
        out->store = false;
        out->new_tat = 0;
        out->ttl_ms = 0;
    } else {
        ttl = ahead;
        out->limited = false;
        out->retry_after_ns = GCRA_NO_RETRY;
        out->store = true;
        out->new_tat = (uint64_t)new_tat;
        out->ttl_ms = ttl / NS_PER_MS;
        status = out->ttl_ms < -1 ? GCRA_EXPIRE_ERROR : GCRA_OK;
    }
    out->reset_after_ns = ttl;
    int64_t next = dvt - ttl;
    out->remaining = next > -ei ? f64_to_i64((double)(next / NS_PER_US) /
                                             (double)(ei / NS_PER_US))
                                : 0;
    return status;
}

enum gcra_status
gcra_throttle(const struct gcra_params *p, bool has_tat, uint64_t tat,
              int64_t now, struct gcra_decision *out)
{
    int64_t ei = emission_interval(p->count, p->period);
    int64_t limit = wrap_add(p->max_burst, 1);
    int64_t dvt = wrap_mul(ei, limit);
    enum gcra_status status = GCRA_OK;

    out->limit = limit;
    if (ei == 0) {
        /* Checked before the key is read: a zero rate never creates it. */
        return decide_zero_rate(out);
    }

    int64_t increment = wrap_mul(ei, p->quantity);
    if (now >= 0 && now < FAST_BOUND && (!has_tat || tat < FAST_BOUND) &&
        ei > 0 && increment >= 0 && increment < FAST_BOUND && dvt >= 0) {
        return throttle_i64(out, has_tat, (int64_t)tat, now, ei, dvt,
                            increment);
    }
    i128 now_ns = now;
    i128 tat_ns = has_tat ? (i128)tat : now_ns;
    i128 new_tat = (now_ns > tat_ns ? now_ns : tat_ns) + increment;
    i128 allow_at = new_tat - dvt;
    i128 diff = now_ns - allow_at;
    i128 ttl;

    if (diff < 0) {
        ttl = tat_ns - now_ns;
        decide_limited(out, diff, increment, dvt, ttl);
    } else {
        ttl = new_tat - now_ns;
        status = decide_allowed(out, new_tat, ttl);
    }
    out->remaining = remaining_tokens(dvt, ttl, ei);
    return status;
}

enum gcra_status
gcra_give_back(const struct gcra_params *p, bool has_tat, uint64_t tat,
               int64_t now, struct gcra_decision *out)
{
    struct gcra_params look = *p;
    int64_t ei = emission_interval(p->count, p->period);
    look.quantity = 0;
    if (has_tat && ei > 0 && p->quantity > 0 && now >= 0 &&
        tat > (uint64_t)now) {
        i128 left = (i128)tat - (i128)ei * p->quantity;
        tat = left > now ? (uint64_t)left : (uint64_t)now;
    }
    return gcra_throttle(&look, has_tat, tat, now, out);
}

/*
 * A limited request's retry_after is its wait: new_tat = now + dvt + wait,
 * the TAT it would store at now + wait (an earlier stored TAT cannot
 * change it, as wait > 0 means the TAT is ahead of that time). Storing it
 * now takes the slot; the checks keep the stored u64 and the TTL in ms
 * exact (a client's max_wait is never added to now).
 */
enum gcra_status
gcra_reserve(const struct gcra_params *p, int64_t now, int64_t max_wait_ns,
             struct gcra_decision *out, bool *reserved)
{
    i128 wait = out->retry_after_ns;

    *reserved = false;
    if (!out->limited || wait <= 0 || wait > max_wait_ns) {
        return GCRA_OK;     /* allowed, never fits, or too far ahead */
    }
    int64_t ei = emission_interval(p->count, p->period);
    int64_t dvt = wrap_mul(ei, out->limit);
    i128 ttl = (i128)dvt + wait;
    i128 new_tat = (i128)now + ttl;

    if (ttl <= 0 || ttl > INT64_MAX || new_tat < 0 ||
        new_tat > (i128)UINT64_MAX) {
        return GCRA_OK;
    }
    enum gcra_status status = decide_allowed(out, new_tat, ttl);
    out->retry_after_ns = wait;
    out->remaining = remaining_tokens(dvt, ttl, ei);
    *reserved = true;
    return status;
}

int64_t
gcra_reply_wait(gcra_ns_t ns, bool ms)
{
    int64_t unit = ms ? NS_PER_MS : NS_PER_SEC;
    int64_t v = (int64_t)ns;   /* a reservation's wait: in (0, INT64_MAX] */

    return v / unit + (v % unit > 0);
}

/*
 * lib.rs: `d.as_seconds_f64() as i64`, plus 1 if `d.subsec_milliseconds()
 * > 0`. (seconds, nanoseconds) is time::Duration's normal form: both
 * truncated toward zero with the same sign. The f64 sum is kept as is: it
 * can round x.999999999 up for durations above 2^23 s, as redis-cell does.
 */
int64_t
gcra_reply_seconds(gcra_ns_t ns)
{
    /* Below 2^22 s the f64 sum cannot reach the next whole second (its
     * rounding step is < 1e-9 s, the smallest gap to it), so it truncates
     * to secs itself: skip the floating point. */
    const int64_t exact_below = (INT64_C(1) << 22) * NS_PER_SEC;
    if (ns > -exact_below && ns < exact_below) {
        int64_t v = (int64_t)ns;
        return v / NS_PER_SEC + (v % NS_PER_SEC / NS_PER_MS > 0);
    }
    int64_t secs = (int64_t)div_i128(ns, NS_PER_SEC);
    int32_t subsec = (int32_t)mod_i128(ns, NS_PER_SEC);
    int64_t whole = f64_to_i64((double)secs + (double)subsec / NS_PER_SEC);

    if (subsec / NS_PER_MS > 0) {
        whole += 1;
    }
    return whole;
}

/*
 * cellgate's MS option: ceil for positive values, truncation toward zero
 * for negative ones, so the "allowed / never" -1 s stays -1.
 */
int64_t
gcra_reply_millis(gcra_ns_t ns)
{
    if (ns == GCRA_NO_RETRY) {
        return -1;
    }
    int64_t ms = (int64_t)div_i128(ns, NS_PER_MS);

    if (mod_i128(ns, NS_PER_MS) > 0) {
        ms += 1;
    }
    return ms;
}
