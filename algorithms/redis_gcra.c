/*
 * redis_gcra.c - see redis_gcra.h. Each step is Redis's, in its order and
 * with its C conversions (double to long long truncation, ceil of a
 * double), so the five integers match bit for bit.
 */
#include "algorithms/redis_gcra.h"

#include <math.h>

#include "lib/time.h"

/* a - b, saturated: the steps Redis does in plain C can pass the range
 * only with TATs no caller of Redis's could write. */
static int64_t
sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        return b < 0 ? INT64_MAX : INT64_MIN;
    }
    return r;
}

/* T: the period per token in µs, rounded to nearest, at least 1. */
static int64_t
emission_interval(const struct redis_gcra_params *p)
{
    int64_t t = (int64_t)(p->period_s * US_PER_SEC /
                          (double)p->tokens_per_period + 0.5);
    return t > 0 ? t : 1;
}

enum redis_gcra_status
redis_gcra_decide(const struct redis_gcra_params *p, bool has_tat,
                  int64_t tat_us, int64_t now_us,
                  struct redis_gcra_decision *out)
{
    int64_t t = emission_interval(p);
    if (!has_tat) {
        tat_us = now_us;
    }
    if (t > INT64_MAX / p->tokens) {
        return REDIS_GCRA_OVERFLOW_TOKENS;
    }
    if (t > INT64_MAX / p->limit) {
        return REDIS_GCRA_OVERFLOW_BURST;
    }
    int64_t tau = t * p->limit, increment = t * p->tokens;
    int64_t base = now_us > tat_us ? now_us : tat_us;
    if (INT64_MAX - base < increment) {
        return REDIS_GCRA_OVERFLOW_TOKENS;
    }
    int64_t new_tat = base + increment;
    int64_t diff = sat_sub(now_us, new_tat - tau);
    int64_t ttl;
    out->limit = p->limit;
    out->retry_after_s = -1;
    out->new_tat_us = new_tat;
    out->limited = diff < 0;
    out->store = !out->limited;
    if (out->limited) {
        if (increment <= tau) {
            out->retry_after_s = (int64_t)ceil(-(double)diff / US_PER_SEC);
        }
        ttl = sat_sub(tat_us, now_us);
    } else {
        ttl = new_tat - now_us;
    }
    int64_t next = sat_sub(tau, ttl);
    out->remaining = next > -t ? next / t : 0;
    out->reset_after_s = (int64_t)ceil((double)ttl / US_PER_SEC);
    return REDIS_GCRA_OK;
}
