/*
 * check_gcra.c - CL.THROTTLE's GCRA against redis-cell 0.5.0's answers.
 *
 * Every case drives gcra_throttle() with an injected "now" and a tiny model
 * of the one Redis key the command owns (value, TTL, lazy expiry), so a
 * sequence of calls reads like the spec's worked examples. Expected replies
 * are the wire values (seconds via gcra_reply_seconds); those marked
 * [observed] in shared/spec/cl-throttle.md or present in the conformance
 * vectors were produced by the real module.
 */
#include <check.h>
#include <stdint.h>

#include "algorithms/gcra.h"
#include "tests/unit/suites.h"

#define SEC INT64_C(1000000000)
#define MS  INT64_C(1000000)
#define US  INT64_C(1000)

/* 2030-01-01T00:00:00Z, where the conformance vectors start. */
#define T0 INT64_C(1893456000000000000)

#define P(b, n, per, q) { (b), (n), (per), (q) }

/* The Redis key as redis-cell leaves it: lazily expired on access. */
struct fake_key {
    bool exists;
    uint64_t tat;
    bool persistent;
    int64_t expire_ms;
};

/* One call at T0 + at: its status and, unless an error, its reply. */
struct step {
    int64_t at;
    struct gcra_params p;
    enum gcra_status status;
    int64_t reply[5];
};

static enum gcra_status
call(struct fake_key *k, const struct gcra_params *p, int64_t now,
     struct gcra_decision *d)
{
    int64_t now_ms = now / MS;

    if (k->exists && !k->persistent && now_ms > k->expire_ms) {
        k->exists = false;
    }
    enum gcra_status st = gcra_throttle(p, k->exists, k->tat, now, d);
    if (st != GCRA_ZERO_RATE && d->store) {
        k->exists = true;
        k->tat = d->new_tat;
        k->persistent = st == GCRA_EXPIRE_ERROR || d->ttl_ms == -1;
        k->expire_ms = now_ms + d->ttl_ms;
    }
    return st;
}

static void
assert_reply(const struct gcra_decision *d, const int64_t want[5], size_t i)
{
    int64_t got[5] = { d->limited, d->limit, d->remaining,
                       gcra_reply_seconds(d->retry_after_ns),
                       gcra_reply_seconds(d->reset_after_ns) };

    for (size_t j = 0; j < 5; j++) {
        ck_assert_msg(got[j] == want[j],
                      "step %zu: reply[%zu] = %lld, want %lld "
                      "(reply %lld %lld %lld %lld %lld)", i, j,
                      (long long)got[j], (long long)want[j],
                      (long long)got[0], (long long)got[1],
                      (long long)got[2], (long long)got[3],
                      (long long)got[4]);
    }
}

static void
run_steps(struct fake_key *k, const struct step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct gcra_decision d;
        enum gcra_status st = call(k, &steps[i].p, T0 + steps[i].at, &d);

        ck_assert_msg(st == steps[i].status, "step %zu: status %d, want %d",
                      i, (int)st, (int)steps[i].status);
        if (st == GCRA_OK) {
            assert_reply(&d, steps[i].reply, i);
        }
    }
}

#define RUN_STEPS(k, steps) run_steps((k), (steps), \
                                      sizeof(steps) / sizeof((steps)[0]))

/* ---- worked examples (spec section 7) ----------------------------------- */

START_TEST(test_readme_example_first_request_sets_a_two_second_tat)
{
    struct fake_key k = { 0 };
    struct gcra_params p = P(15, 30, 60, 1);
    struct gcra_decision d;
    const int64_t want[5] = { 0, 16, 15, -1, 2 };

    ck_assert_int_eq(call(&k, &p, T0, &d), GCRA_OK);
    assert_reply(&d, want, 0);
    ck_assert(d.store);
    ck_assert_uint_eq(d.new_tat, (uint64_t)(T0 + 2 * SEC));
    ck_assert_int_eq(d.ttl_ms, 2000);
}
END_TEST

START_TEST(test_burst_of_five_then_limited_until_a_token_refills)
{
    static const struct step steps[] = {
        { 0, P(4, 1, 1, 1), GCRA_OK, { 0, 5, 4, -1, 1 } },
        { 0, P(4, 1, 1, 1), GCRA_OK, { 0, 5, 3, -1, 2 } },
        { 0, P(4, 1, 1, 1), GCRA_OK, { 0, 5, 2, -1, 3 } },
        { 0, P(4, 1, 1, 1), GCRA_OK, { 0, 5, 1, -1, 4 } },
        { 0, P(4, 1, 1, 1), GCRA_OK, { 0, 5, 0, -1, 5 } },
        { 0, P(4, 1, 1, 1), GCRA_OK, { 1, 5, 0, 1, 5 } },
        { SEC, P(4, 1, 1, 1), GCRA_OK, { 0, 5, 0, -1, 5 } },
        { SEC, P(4, 1, 1, 1), GCRA_OK, { 1, 5, 0, 1, 5 } },
        /* 0.75 s to wait rounds up to 1 */
        { 1250 * MS, P(4, 1, 1, 1), GCRA_OK, { 1, 5, 0, 1, 5 } },
        { 2 * SEC, P(4, 1, 1, 1), GCRA_OK, { 0, 5, 0, -1, 5 } },
    };
    struct fake_key k = { 0 };

    RUN_STEPS(&k, steps);
}
END_TEST

/* redis-cell's own it_rate_limits table, on the raw durations. */
struct raw_case {
    int64_t at;
    int64_t quantity;
    bool limited;
    int64_t remaining;
    int64_t reset_after_ns;
    int64_t retry_after_ns;
};

START_TEST(test_raw_durations_match_redis_cell_rate_limits_table)
{
    static const struct raw_case cases[] = {
        { 0, 6, true, 5, 0, -SEC },          /* larger than the bucket */
        { 0, 1, false, 4, 1 * SEC, -SEC },
        { 0, 1, false, 3, 2 * SEC, -SEC },
        { 0, 1, false, 2, 3 * SEC, -SEC },
        { 0, 1, false, 1, 4 * SEC, -SEC },
        { 0, 1, false, 0, 5 * SEC, -SEC },
        { 0, 1, true, 0, 5 * SEC, 1 * SEC },
        { 3000 * MS, 1, false, 2, 3000 * MS, -SEC },
        { 3100 * MS, 1, false, 1, 3900 * MS, -SEC },
        { 4000 * MS, 1, false, 1, 4000 * MS, -SEC },
        { 8000 * MS, 1, false, 4, 1000 * MS, -SEC },
        { 9500 * MS, 1, false, 4, 1000 * MS, -SEC },
        { 9500 * MS, 0, false, 4, 1 * SEC, -SEC },   /* peek */
        { 9500 * MS, 2, false, 2, 3 * SEC, -SEC },
        { 9500 * MS, 5, true, 2, 3 * SEC, 3 * SEC },
    };
    struct fake_key k = { 0 };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gcra_params p = P(4, 1, 1, cases[i].quantity);
        struct gcra_decision d;

        ck_assert_int_eq(call(&k, &p, T0 + cases[i].at, &d), GCRA_OK);
        ck_assert_msg(d.limited == cases[i].limited, "case %zu", i);
        ck_assert_msg(d.remaining == cases[i].remaining, "case %zu", i);
        ck_assert_msg(d.reset_after_ns == cases[i].reset_after_ns,
                      "case %zu: reset %lld", i,
                      (long long)d.reset_after_ns);
        ck_assert_msg(d.retry_after_ns == cases[i].retry_after_ns,
                      "case %zu: retry %lld", i,
                      (long long)d.retry_after_ns);
    }
}
END_TEST

START_TEST(test_zero_burst_allows_one_request_per_period)
{
    static const struct step steps[] = {   /* tests/e2e.rs */
        { 0, P(0, 1, 2, 1), GCRA_OK, { 0, 1, 0, -1, 2 } },
        { 0, P(0, 1, 2, 1), GCRA_OK, { 1, 1, 0, 2, 2 } },
        { 2 * SEC, P(0, 1, 2, 1), GCRA_OK, { 0, 1, 0, -1, 2 } },
    };
    struct fake_key k = { 0 };

    RUN_STEPS(&k, steps);
}
END_TEST

/* ---- special inputs (spec section 6) ------------------------------------ */

struct fresh_case {
    struct gcra_params p;
    enum gcra_status status;
    int64_t reply[5];       /* when status is GCRA_OK */
    bool store;
    int64_t ttl_ms;         /* when store */
};

static const struct fresh_case fresh_cases[] = {
    /* quantity 0 peeks: remaining = limit, key created with TTL 0 */
    { P(1, 2, 3, 0), GCRA_OK, { 0, 2, 2, -1, 0 }, true, 0 },
    /* quantity above the bucket: always limited, never a retry time */
    { P(1, 2, 3, 5), GCRA_OK, { 1, 2, 2, -1, 0 }, false, 0 },
    { P(50, 1000, 3600, 60), GCRA_OK, { 1, 51, 51, -1, 0 }, false, 0 },
    /* ei = 500 us is fine (issue #80 is not 0.5 behaviour) */
    { P(1, 2000, 1, 1), GCRA_OK, { 0, 2, 1, -1, 0 }, true, 0 },
    { P(0, 2000, 1, 1), GCRA_OK, { 0, 1, 0, -1, 0 }, true, 0 },
    /* ei 500 ns: 0 whole us -> x / 0.0 saturates */
    { P(10, 2000000, 1, 1), GCRA_OK, { 0, 11, INT64_MAX, -1, 0 }, true, 0 },
    /* ei 1 ns: 0 / 0.0 is NaN -> 0 */
    { P(10, 1000000000, 1, 1), GCRA_OK, { 0, 11, 0, -1, 0 }, true, 0 },
    /* limit 0, dvt 0: everything limited, retry -1 */
    { P(-1, 1, 1, 1), GCRA_OK, { 1, 0, 0, -1, 0 }, false, 0 },
    { P(-1, 1, 1, 0), GCRA_OK, { 0, 0, 0, -1, 0 }, true, 0 },
    { P(-5, 1, 1, 1), GCRA_OK, { 1, -4, 0, -1, 0 }, false, 0 },
    /* one negative factor: negative ei, negative dvt */
    { P(5, -1, 1, 1), GCRA_OK, { 1, 6, 0, -1, 0 }, false, 0 },
    { P(5, 1, -1, 1), GCRA_OK, { 1, 6, 0, -1, 0 }, false, 0 },
    /* both negative: a positive rate again */
    { P(5, -1, -1, 1), GCRA_OK, { 0, 6, 5, -1, 1 }, true, 1000 },
    { P(5, -10, -60, 2), GCRA_OK, { 0, 6, 4, -1, 12 }, true, 12000 },
    /* negative ei with positive dvt: the gate is next > -ei, so
     * remaining stays 0 where next / ei would be -1 (from the source) */
    { P(-2, -1, 1, 0), GCRA_OK, { 0, -1, 0, -1, 0 }, true, 0 },
    /* limit wraps */
    { P(INT64_MAX, 1, 1, 1), GCRA_OK, { 1, INT64_MIN, 0, -1, 0 }, false, 0 },
    /* ei saturates to INT64_MAX, dvt wraps to -2 */
    { P(1, 1, INT64_MAX, 1), GCRA_OK, { 1, 2, 0, -1, 0 }, false, 0 },
    /* increment wraps to 0: acts as a peek */
    { P(1, 1, 1, INT64_MIN), GCRA_OK, { 0, 2, 2, -1, 0 }, true, 0 },
    /* ttl -1 ms is Redis's "no expiry": persistent key, normal reply */
    { P(5, 1000, 1, -1), GCRA_OK, { 0, 6, 7, -1, 0 }, true, -1 },
    { P(3, 3, 1, 3), GCRA_OK, { 0, 4, 1, -1, 1 }, true, 999 },
    /* increment wraps to -1 s; negative ttl: written, then PEXPIRE fails */
    { P(1, 1, 1, INT64_MAX), GCRA_EXPIRE_ERROR, { 0 }, true, -1000 },
    { P(5, 1, 10, -1), GCRA_EXPIRE_ERROR, { 0 }, true, -10000 },
    /* zero rates: count 0, period 0, or count > period in ns */
    { P(1, 0, 3, 1), GCRA_ZERO_RATE, { 0 }, false, 0 },
    { P(1, 2, 0, 1), GCRA_ZERO_RATE, { 0 }, false, 0 },
    { P(1, 1000000001, 1, 1), GCRA_ZERO_RATE, { 0 }, false, 0 },
    { P(1, 2000000001, 2, 1), GCRA_ZERO_RATE, { 0 }, false, 0 },
    { P(1, INT64_MAX, 1, 1), GCRA_ZERO_RATE, { 0 }, false, 0 },
};

START_TEST(test_special_inputs_on_a_fresh_key)
{
    const struct fresh_case *c = &fresh_cases[_i];
    struct gcra_decision d;
    enum gcra_status st = gcra_throttle(&c->p, false, 0, T0, &d);

    ck_assert_int_eq(st, c->status);
    if (st == GCRA_ZERO_RATE) {
        return;
    }
    if (st == GCRA_OK) {
        assert_reply(&d, c->reply, (size_t)_i);
    }
    ck_assert_int_eq(d.store, c->store);
    if (c->store) {
        ck_assert_int_eq(d.ttl_ms, c->ttl_ms);
    }
}
END_TEST

START_TEST(test_remaining_exceeds_limit_when_ei_has_a_fraction_of_us)
{
    /* `a 6000 6000 1`: ei 166.666 us is truncated to 166 us. */
    struct gcra_params p = P(6000, 6000, 1, 1);
    struct gcra_decision d;
    const int64_t want[5] = { 0, 6001, 6024, -1, 0 };

    ck_assert_int_eq(gcra_throttle(&p, false, 0, T0, &d), GCRA_OK);
    assert_reply(&d, want, 0);
}
END_TEST

START_TEST(test_zero_rate_never_touches_the_key)
{
    struct gcra_params p = P(1, 0, 3, 1);
    struct gcra_decision d;

    ck_assert_int_eq(gcra_throttle(&p, true, (uint64_t)T0, T0, &d),
                     GCRA_ZERO_RATE);
    ck_assert(!d.store);
}
END_TEST

START_TEST(test_expire_error_still_writes_the_new_tat)
{
    struct gcra_params p = P(5, 1, 10, -1);
    struct gcra_decision d;

    ck_assert_int_eq(gcra_throttle(&p, false, 0, T0, &d), GCRA_EXPIRE_ERROR);
    ck_assert(d.store);
    ck_assert_uint_eq(d.new_tat, (uint64_t)(T0 - 10 * SEC));
}
END_TEST

START_TEST(test_quantity_equal_to_limit_needs_a_full_bucket)
{
    static const struct step steps[] = {
        { 0, P(1, 1, 1, 2), GCRA_OK, { 0, 2, 0, -1, 2 } },
        { 0, P(1, 1, 1, 2), GCRA_OK, { 1, 2, 0, 2, 2 } },
        /* one token back is not enough */
        { 1 * SEC, P(1, 1, 1, 2), GCRA_OK, { 1, 2, 1, 1, 1 } },
        { 2 * SEC, P(1, 1, 1, 2), GCRA_OK, { 0, 2, 0, -1, 2 } },
    };
    struct fake_key k = { 0 };

    RUN_STEPS(&k, steps);
}
END_TEST

START_TEST(test_peek_rewrites_tat_and_refreshes_ttl)
{
    struct fake_key k = { 0 };
    struct gcra_params take = P(1, 2, 3, 1);
    struct gcra_params peek = P(1, 2, 3, 0);
    struct gcra_decision d;
    const int64_t want[5] = { 0, 2, 1, -1, 1 };

    ck_assert_int_eq(call(&k, &take, T0, &d), GCRA_OK);
    ck_assert_int_eq(call(&k, &peek, T0 + 500 * MS, &d), GCRA_OK);
    assert_reply(&d, want, 0);
    ck_assert(d.store);
    ck_assert_uint_eq(d.new_tat, (uint64_t)(T0 + 1500 * MS));
    ck_assert_int_eq(d.ttl_ms, 1000);

    /* After the TAT passed, a peek moves it up to now with TTL 0. */
    ck_assert_int_eq(gcra_throttle(&peek, true, (uint64_t)T0, T0 + 7 * SEC,
                                   &d), GCRA_OK);
    ck_assert_uint_eq(d.new_tat, (uint64_t)(T0 + 7 * SEC));
    ck_assert_int_eq(d.ttl_ms, 0);
}
END_TEST

START_TEST(test_peek_is_limited_when_tat_is_beyond_the_new_tolerance)
{
    static const struct step steps[] = {
        { 0, P(9, 1, 1, 5), GCRA_OK, { 0, 10, 5, -1, 5 } },
        /* reconfigured to a 2-token bucket: tat - now (5 s) > dvt (2 s) */
        { 0, P(1, 1, 1, 0), GCRA_OK, { 1, 2, 0, 3, 5 } },
    };
    struct fake_key k = { 0 };

    RUN_STEPS(&k, steps);
}
END_TEST

START_TEST(test_refund_moves_tat_back_then_second_refund_fails)
{
    static const struct step steps[] = {
        { 0, P(5, 1, 10, 1), GCRA_OK, { 0, 6, 5, -1, 10 } },
        { 0, P(5, 1, 10, -1), GCRA_OK, { 0, 6, 6, -1, 0 } },
        { 0, P(5, 1, 10, -1), GCRA_EXPIRE_ERROR, { 0 } },
    };
    struct fake_key k = { 0 };

    RUN_STEPS(&k, steps);
    ck_assert(k.exists && k.persistent);
    ck_assert_uint_eq(k.tat, (uint64_t)(T0 - 10 * SEC));
}
END_TEST

START_TEST(test_limited_wait_below_one_millisecond_reports_zero)
{
    static const struct step steps[] = {
        { 0, P(0, 1, 1, 1), GCRA_OK, { 0, 1, 0, -1, 1 } },
        { 999999500, P(0, 1, 1, 1), GCRA_OK, { 1, 1, 0, 0, 0 } },
    };
    struct fake_key k = { 0 };

    RUN_STEPS(&k, steps);
}
END_TEST

/* ---- wide time arithmetic ----------------------------------------------- */

START_TEST(test_stored_u64_max_tat_is_read_unsigned)
{
    /* Conformance vector n=2635: SET k 18446744073709551615 first. */
    struct gcra_params p = P(2, 60, 10, 1);
    struct gcra_decision d;
    const int64_t want[5] = { 1, 3, 0, 16552263828, 16552263828 };

    ck_assert_int_eq(gcra_throttle(&p, true, UINT64_MAX,
                                   INT64_C(1894480245779000000), &d),
                     GCRA_OK);
    assert_reply(&d, want, 0);
    ck_assert(d.reset_after_ns > INT64_MAX);
}
END_TEST

START_TEST(test_tat_before_the_epoch_wraps_to_year_2554)
{
    /*
     * Derived from the v0.5 source, not observed: nanoseconds() stores a
     * pre-1970 new_tat modulo 2^64, from_nanoseconds() reads it back as a
     * u64, so the next call waits until ~2551.
     */
    struct fake_key k = { 0 };
    struct gcra_params refund = P(0, 1, 1, -2000000000);
    struct gcra_params take = P(0, 1, 1, 1);
    struct gcra_decision d;
    uint64_t stored = (uint64_t)(T0 - 2000000000 * SEC);
    const int64_t want[5] = { 1, 1, 0, 16446744074, 16446744074 };

    ck_assert_int_eq(call(&k, &refund, T0, &d), GCRA_EXPIRE_ERROR);
    ck_assert_uint_eq(d.new_tat, stored);
    ck_assert(d.new_tat > (uint64_t)INT64_MAX);
    ck_assert_int_eq(call(&k, &take, T0, &d), GCRA_OK);
    assert_reply(&d, want, 0);
    ck_assert(!d.store);
}
END_TEST

START_TEST(test_period_beyond_2_pow_53_ns_rounds_ei_through_f64)
{
    /* 9007199255 s = 9007199255000000000 ns: the nearest f64 (ties to
     * even) is 512 ns larger, and that becomes ei. */
    struct gcra_params p = P(0, 1, 9007199255, 1);
    struct gcra_decision d;

    ck_assert_int_eq(gcra_throttle(&p, false, 0, T0, &d), GCRA_OK);
    ck_assert_uint_eq(d.new_tat,
                      (uint64_t)T0 + UINT64_C(9007199255000000512));
}
END_TEST

/* ---- reply units (spec section 4) --------------------------------------- */

struct unit_case {
    int64_t ns;
    int64_t want;
};

static const struct unit_case seconds_cases[] = {
    { 750 * MS, 1 },
    { 1 * MS, 1 },
    { 999500, 0 },                  /* 999.5 us: below 1 ms is dropped */
    { 500, 0 },
    { 10 * SEC, 10 },
    { 10 * SEC + 900 * US, 10 },
    { 10 * SEC + 1 * MS, 11 },
    { 0, 0 },
    { -1 * SEC, -1 },
    { -500 * MS, 0 },
    { -1500 * MS, -1 },
};

START_TEST(test_seconds_round_up_only_from_one_millisecond)
{
    const struct unit_case *c = &seconds_cases[_i];

    ck_assert_int_eq(gcra_reply_seconds(c->ns), c->want);
}
END_TEST

START_TEST(test_seconds_inherit_f64_rounding_above_2_pow_23)
{
    /* 2^33 s + 999999999 ns: the f64 sum rounds to 2^33 + 1, then the ms
     * rule adds one more, as redis-cell does. */
    gcra_ns_t ns = (gcra_ns_t)8589934592 * SEC + 999999999;

    ck_assert_int_eq(gcra_reply_seconds(ns), INT64_C(8589934594));
}
END_TEST

/* The conversion spelled out as redis-cell does it (f64 seconds plus the
 * millisecond rule), against which the integer shortcut below 2^22 s is
 * checked. */
static int64_t
reference_seconds(gcra_ns_t ns)
{
    int64_t secs = (int64_t)(ns / SEC);
    int32_t subsec = (int32_t)(ns % SEC);
    double sum = (double)secs + (double)subsec / 1e9;
    int64_t whole = (int64_t)sum;   /* in range for these inputs */

    return whole + (subsec / MS > 0);
}

START_TEST(test_seconds_shortcut_matches_the_f64_conversion)
{
    /* Seconds from 0 to 2^35, past the shortcut's edge, both signs:
     * just below and above whole seconds and whole milliseconds. */
    const int64_t offsets[] = { 0, 1, MS - 1, MS, MS + 1, SEC / 2,
                                SEC - MS, SEC - MS + 1, SEC - 1 };
    for (int64_t k = 0; k < (INT64_C(1) << 35); k += 1 + k / 7) {
        for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
            gcra_ns_t ns = (gcra_ns_t)k * SEC + offsets[i];
            ck_assert_int_eq(gcra_reply_seconds(ns), reference_seconds(ns));
            ck_assert_int_eq(gcra_reply_seconds(-ns), reference_seconds(-ns));
        }
    }
}
END_TEST

static const struct unit_case millis_cases[] = {
    { 1, 1 },
    { 1 * MS, 1 },
    { 1 * MS + 1, 2 },
    { 750 * MS, 750 },
    { 0, 0 },
    { -1 * SEC, -1 },               /* the "allowed / never" marker */
    { -1 * MS, -1 },
    { -1500 * US, -1 },
    { -500 * US, 0 },
    { -2 * SEC, -2000 },
};

START_TEST(test_millis_round_up_and_keep_the_minus_one_marker)
{
    const struct unit_case *c = &millis_cases[_i];

    ck_assert_int_eq(gcra_reply_millis(c->ns), c->want);
}
END_TEST

/* ---- RESERVE (cellgate) ------------------------------------------------- */

/* gcra_throttle() then gcra_reserve(), writing the key like call(). */
static bool
reserve_call(struct fake_key *k, const struct gcra_params *p, int64_t now,
             int64_t max_wait_ns, struct gcra_decision *d)
{
    bool reserved = false;
    enum gcra_status st = gcra_throttle(p, k->exists, k->tat, now, d);

    ck_assert_int_eq(st, GCRA_OK);
    ck_assert_int_eq(gcra_reserve(p, now, max_wait_ns, d, &reserved),
                     GCRA_OK);
    if (d->store) {
        k->exists = true;
        k->tat = d->new_tat;
    }
    return reserved;
}

START_TEST(test_reserve_leaves_an_allowed_request_as_it_was)
{
    struct gcra_params p = P(0, 10, 1, 1);
    struct gcra_decision plain, d;
    struct fake_key k = { 0 };

    ck_assert_int_eq(gcra_throttle(&p, false, 0, T0, &plain), GCRA_OK);
    ck_assert(!reserve_call(&k, &p, T0, 500 * MS, &d));
    ck_assert(!d.limited && d.store);
    ck_assert(d.retry_after_ns == plain.retry_after_ns);
    ck_assert(d.reset_after_ns == plain.reset_after_ns);
    ck_assert_int_eq(d.remaining, plain.remaining);
    ck_assert_uint_eq(d.new_tat, plain.new_tat);
    ck_assert_int_eq(d.ttl_ms, plain.ttl_ms);
}
END_TEST

/* 10/s, no burst: each call at T0 takes the next 100 ms slot, up to the
 * 500 ms bound; the one after it is refused as without RESERVE. */
START_TEST(test_reserve_takes_slots_until_the_bound_then_refuses)
{
    struct gcra_params p = P(0, 10, 1, 1);
    struct gcra_decision d;
    struct fake_key k = { 0 };

    ck_assert(!reserve_call(&k, &p, T0, 500 * MS, &d));
    for (int64_t slot = 1; slot <= 5; slot++) {
        ck_assert(reserve_call(&k, &p, T0, 500 * MS, &d));
        ck_assert(!d.limited && d.store);
        ck_assert(d.retry_after_ns == slot * 100 * MS);
        ck_assert(d.reset_after_ns == (slot + 1) * 100 * MS);
        ck_assert_uint_eq(d.new_tat, (uint64_t)(T0 + (slot + 1) * 100 * MS));
        ck_assert_int_eq(d.ttl_ms, (slot + 1) * 100);
        ck_assert_int_eq(d.remaining, 0);
        ck_assert_int_eq(gcra_reply_wait(d.retry_after_ns, true),
                         slot * 100);
    }
    uint64_t before = k.tat;
    ck_assert(!reserve_call(&k, &p, T0, 500 * MS, &d));
    ck_assert(d.limited && !d.store);
    ck_assert(d.retry_after_ns == 600 * MS);
    ck_assert_uint_eq(k.tat, before);
    /* A zero bound is no reservation at all. */
    ck_assert(!reserve_call(&k, &p, T0 + 100 * MS, 0, &d));
    ck_assert(d.limited);
}
END_TEST

/* Burst 5 at 1/s: quantity 3 twice waits 1 s for the second; a quantity
 * above the limit never fits and is refused whatever the bound. */
START_TEST(test_reserve_with_a_quantity_above_one)
{
    struct gcra_params three = P(4, 1, 1, 3);
    struct gcra_params six = P(4, 1, 1, 6);
    struct gcra_decision d;
    struct fake_key k = { 0 };

    ck_assert(!reserve_call(&k, &three, T0, SEC, &d));
    ck_assert(reserve_call(&k, &three, T0, SEC, &d));
    ck_assert(d.retry_after_ns == SEC);
    ck_assert_uint_eq(d.new_tat, (uint64_t)(T0 + 6 * SEC));
    ck_assert_int_eq(gcra_reply_wait(d.retry_after_ns, false), 1);
    ck_assert(!reserve_call(&k, &three, T0, 3 * SEC, &d));
    ck_assert(d.retry_after_ns == 4 * SEC && d.limited);  /* 4 s > 3 s */
    ck_assert(!reserve_call(&k, &six, T0, INT64_MAX, &d));
    ck_assert(d.limited && d.retry_after_ns == -SEC);
}
END_TEST

/* Giving back moves the TAT back by whole emission intervals, never before
 * now; the answer is a look (allowed) at the bucket after it. */
START_TEST(test_give_back_refills_and_floors_at_now)
{
    struct gcra_params take = P(4, 1, 1, 5);       /* 5 tokens, 1 a second */
    struct gcra_params back2 = P(4, 1, 1, 2);
    struct gcra_params back9 = P(4, 1, 1, 9);
    struct gcra_decision d;
    struct fake_key k = { 0 };

    ck_assert_int_eq(call(&k, &take, T0, &d), GCRA_OK);
    ck_assert(!d.limited && d.remaining == 0);
    ck_assert_uint_eq(k.tat, (uint64_t)(T0 + 5 * SEC));
    ck_assert_int_eq(gcra_give_back(&back2, true, k.tat, T0, &d), GCRA_OK);
    ck_assert(!d.limited && d.remaining == 2 && d.store);
    ck_assert_uint_eq(d.new_tat, (uint64_t)(T0 + 3 * SEC));
    ck_assert_int_eq(gcra_give_back(&back9, true, d.new_tat, T0, &d),
                     GCRA_OK);
    ck_assert(!d.limited && d.remaining == 5);
    ck_assert_uint_eq(d.new_tat, (uint64_t)T0);    /* floored at now */
    ck_assert_int_eq(gcra_give_back(&back2, false, 0, T0, &d), GCRA_OK);
    ck_assert(!d.limited && d.remaining == 5);      /* no key: a full bucket */
}
END_TEST

/* A wait within an INT64_MAX bound whose TAT would pass 2^64 ns (and TTL
 * INT64_MAX ns) is refused, not wrapped. */
START_TEST(test_reserve_refuses_a_tat_past_the_stored_range)
{
    struct gcra_params p = P(0, 1, 1, 1);
    struct gcra_decision d;
    struct fake_key k = { true, UINT64_MAX - 500 * MS, false, 0 };

    ck_assert(!reserve_call(&k, &p, INT64_MAX, INT64_MAX, &d));
    ck_assert(d.limited && !d.store);
    ck_assert_uint_eq(k.tat, UINT64_MAX - 500 * MS);
}
END_TEST

/* The wait is rounded up in either unit and a part below 1 ms counts. */
START_TEST(test_reserve_wait_rounds_up_and_is_never_zero)
{
    ck_assert_int_eq(gcra_reply_wait(500 * US, false), 1);
    ck_assert_int_eq(gcra_reply_wait(500 * US, true), 1);
    ck_assert_int_eq(gcra_reply_wait(SEC + 1, false), 2);
    ck_assert_int_eq(gcra_reply_wait(SEC, false), 1);
    ck_assert_int_eq(gcra_reply_wait(100 * MS, true), 100);
    ck_assert_int_eq(gcra_reply_wait(1, true), 1);
}
END_TEST

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static TCase *
examples_tcase(void)
{
    TCase *tc = tcase_create("examples");

    tcase_add_test(tc,
                   test_readme_example_first_request_sets_a_two_second_tat);
    tcase_add_test(tc, test_burst_of_five_then_limited_until_a_token_refills);
    tcase_add_test(tc, test_raw_durations_match_redis_cell_rate_limits_table);
    tcase_add_test(tc, test_zero_burst_allows_one_request_per_period);
    tcase_add_test(tc, test_limited_wait_below_one_millisecond_reports_zero);
    return tc;
}

static TCase *
edges_tcase(void)
{
    TCase *tc = tcase_create("edges");

    tcase_add_loop_test(tc, test_special_inputs_on_a_fresh_key, 0,
                        N_OF(fresh_cases));
    tcase_add_test(tc,
                   test_remaining_exceeds_limit_when_ei_has_a_fraction_of_us);
    tcase_add_test(tc, test_zero_rate_never_touches_the_key);
    tcase_add_test(tc, test_expire_error_still_writes_the_new_tat);
    tcase_add_test(tc, test_quantity_equal_to_limit_needs_a_full_bucket);
    tcase_add_test(tc, test_peek_rewrites_tat_and_refreshes_ttl);
    tcase_add_test(tc,
                   test_peek_is_limited_when_tat_is_beyond_the_new_tolerance);
    tcase_add_test(tc, test_refund_moves_tat_back_then_second_refund_fails);
    tcase_add_test(tc, test_stored_u64_max_tat_is_read_unsigned);
    tcase_add_test(tc, test_tat_before_the_epoch_wraps_to_year_2554);
    tcase_add_test(tc, test_period_beyond_2_pow_53_ns_rounds_ei_through_f64);
    return tc;
}

static TCase *
units_tcase(void)
{
    TCase *tc = tcase_create("units");

    tcase_add_loop_test(tc, test_seconds_round_up_only_from_one_millisecond,
                        0, N_OF(seconds_cases));
    tcase_add_test(tc, test_seconds_inherit_f64_rounding_above_2_pow_23);
    tcase_add_test(tc, test_seconds_shortcut_matches_the_f64_conversion);
    tcase_add_loop_test(tc, test_millis_round_up_and_keep_the_minus_one_marker,
                        0, N_OF(millis_cases));
    return tc;
}

static TCase *
reserve_tcase(void)
{
    TCase *tc = tcase_create("reserve");

    tcase_add_test(tc, test_reserve_leaves_an_allowed_request_as_it_was);
    tcase_add_test(tc, test_reserve_takes_slots_until_the_bound_then_refuses);
    tcase_add_test(tc, test_reserve_with_a_quantity_above_one);
    tcase_add_test(tc, test_reserve_refuses_a_tat_past_the_stored_range);
    tcase_add_test(tc, test_reserve_wait_rounds_up_and_is_never_zero);
    tcase_add_test(tc, test_give_back_refills_and_floors_at_now);
    return tc;
}

Suite *
gcra_suite(void)
{
    Suite *s = suite_create("gcra");

    suite_add_tcase(s, examples_tcase());
    suite_add_tcase(s, edges_tcase());
    suite_add_tcase(s, units_tcase());
    suite_add_tcase(s, reserve_tcase());
    return s;
}
