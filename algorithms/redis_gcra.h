/*
 * redis_gcra.h - the GCRA of Redis's own GCRA command (src/gcra.c in
 * Redis's source, compiled out of its releases so far), so code written
 * for it runs on cellgate unchanged.
 *
 * Its arithmetic, not redis-cell's: microseconds on a millisecond clock,
 * an emission interval T rounded to the nearest microsecond (at least 1),
 * tau = T * (max_burst + 1); a request of n tokens is allowed when
 * now >= max(now, tat) + T * n - tau, and only an allowed request moves
 * the TAT. Pure: stored TAT and now in, decision out.
 */
#ifndef CELLGATE_REDIS_GCRA_H
#define CELLGATE_REDIS_GCRA_H

#include <stdbool.h>
#include <stdint.h>

struct redis_gcra_params {
    int64_t limit;              /* max_burst + 1 (max_burst at INT64_MAX) */
    int64_t tokens_per_period;  /* >= 1 */
    double period_s;            /* in (0, 1e12) */
    int64_t tokens;             /* >= 1 */
};

enum redis_gcra_status {
    REDIS_GCRA_OK,
    REDIS_GCRA_OVERFLOW_TOKENS, /* T * tokens, or the new TAT, overflows */
    REDIS_GCRA_OVERFLOW_BURST   /* T * (max_burst + 1) overflows */
};

struct redis_gcra_decision {
    bool limited;
    int64_t limit;
    int64_t remaining;
    int64_t retry_after_s;      /* -1 when allowed, or never (tokens > limit) */
    int64_t reset_after_s;      /* until a full burst */
    bool store;                 /* allowed: write new_tat_us */
    int64_t new_tat_us;
};

/* has_tat: the key exists, tat_us its value; now_us: the millisecond
 * clock in microseconds (ms * 1000). */
enum redis_gcra_status redis_gcra_decide(const struct redis_gcra_params *p,
                                         bool has_tat, int64_t tat_us,
                                         int64_t now_us,
                                         struct redis_gcra_decision *out);

#endif
