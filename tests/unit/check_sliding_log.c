/*
 * check_sliding_log.c - RL.LOG's exact sliding log (algorithms/sliding_log).
 *
 * Every case drives the ring the way the RL.LOG handler will (expire,
 * decide, then append or refund) with an injected "now" near 2030, so the
 * millisecond boundaries and exact retry_after values can be checked to
 * the nanosecond.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/sliding_log.h"
#include "tests/unit/suites.h"


#define SEC INT64_C(1000000000)
#define MS  INT64_C(1000000)

/* 2030-01-01T00:00:00Z, a whole second and a whole millisecond. */
#define T0    INT64_C(1893456000000000000)
#define T0_MS (T0 / MS)

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static struct slog_ring
ring_over(struct slog_entry *buf, uint32_t cap)
{
    struct slog_ring r = { buf, cap, 0, 0, 0 };

    return r;
}

/* One RL.LOG call as the handler makes it (not PEEK). */
static struct limit_decision
hit(struct slog_ring *r, int64_t limit, int64_t window, int64_t cost,
    int64_t now)
{
    struct slog_params p = { limit, window, cost, 0 };
    struct limit_decision d;

    slog_expire(r, window * 1000, now);
    ck_assert_int_eq(slog_decide(&p, r, now, &d), LIMIT_OK);
    if (!d.limited && cost > 0) {
        ck_assert_uint_lt(r->len, r->cap);
        slog_append(r, now, cost, r->len, 0);
    } else if (cost < 0) {
        slog_refund(r, -cost);
    }
    return d;
}

/* PEEK: expire (harmless) and decide only. */
static struct limit_decision
peek(struct slog_ring *r, int64_t limit, int64_t window, int64_t cost,
     int64_t now)
{
    struct slog_params p = { limit, window, cost, 0 };
    struct limit_decision d;

    slog_expire(r, window * 1000, now);
    ck_assert_int_eq(slog_decide(&p, r, now, &d), LIMIT_OK);
    return d;
}

START_TEST(test_entry_counts_until_the_last_ms_of_its_window)
{
    struct slog_entry buf[4];
    struct slog_ring r = ring_over(buf, N_OF(buf));

    /* Made 0.4 ms into T0's millisecond: recorded at T0_MS. */
    ck_assert(!hit(&r, 1, 10, 1, T0 + 400000).limited);
    ck_assert_int_eq(buf[0].t_ms, T0_MS);

    /* t + window - 1 ms (its last ns): still counted. */
    ck_assert_uint_eq(slog_expire(&r, 10000, T0 + 10 * SEC - 1), 0);
    ck_assert(hit(&r, 1, 10, 1, T0 + 10 * SEC - 1).limited);
    ck_assert(hit(&r, 1, 10, 1, T0 + 10 * SEC - MS).limited);
    /* t + window: gone. */
    ck_assert_uint_eq(slog_expire(&r, 10000, T0 + 10 * SEC), 1);
    ck_assert_uint_eq(r.len, 0);
    ck_assert(!hit(&r, 1, 10, 1, T0 + 10 * SEC).limited);
}
END_TEST

START_TEST(test_retry_after_is_exact_to_the_ns)
{
    struct slog_entry buf[4];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    int64_t now = T0 + 5 * SEC + 300000;

    hit(&r, 3, 10, 1, T0);
    hit(&r, 3, 10, 1, T0 + SEC);
    hit(&r, 3, 10, 1, T0 + 2 * SEC);

    struct limit_decision d = peek(&r, 3, 10, 1, now);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, T0 + 10 * SEC - now);
    ck_assert_int_eq(d.remaining, 0);
    ck_assert_int_eq(d.limit, 3);
    /* reset: the newest (T0 + 2 s) leaves at T0 + 12 s. */
    ck_assert_int_eq(d.reset_after_ns, T0 + 12 * SEC - now);
    ck_assert_int_eq(d.fresh_at, T0 + 12 * SEC);

    ck_assert(peek(&r, 3, 10, 1, now + d.retry_after_ns - MS).limited);
    ck_assert(peek(&r, 3, 10, 1, now + d.retry_after_ns - 1).limited);
    ck_assert(!hit(&r, 3, 10, 1, now + d.retry_after_ns).limited);
}
END_TEST

START_TEST(test_weighted_cost_waits_for_enough_oldest_entries)
{
    struct slog_entry buf[4];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    int64_t now = T0 + 3 * SEC;

    hit(&r, 10, 60, 4, T0);
    hit(&r, 10, 60, 3, T0 + SEC);
    hit(&r, 10, 60, 2, T0 + 2 * SEC);
    ck_assert_int_eq(r.sum, 9);

    /* 5 needs 4 freed: the first entry (4) suffices. */
    struct limit_decision d = peek(&r, 10, 60, 5, now);
    ck_assert(d.limited);
    ck_assert_int_eq(d.remaining, 1);
    ck_assert_int_eq(d.retry_after_ns, 57 * SEC);
    /* 8 needs 7 freed: the first two (4 + 3). */
    ck_assert_int_eq(peek(&r, 10, 60, 8, now).retry_after_ns, 58 * SEC);
    /* 10 needs everything gone. */
    ck_assert_int_eq(peek(&r, 10, 60, 10, now).retry_after_ns, 59 * SEC);

    d = hit(&r, 10, 60, 1, now);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 0);
    ck_assert_int_eq(d.retry_after_ns, -1);
    ck_assert_int_eq(d.reset_after_ns, 60 * SEC);
}
END_TEST

START_TEST(test_cost_above_the_limit_is_never_allowed)
{
    struct slog_entry buf[2];
    struct slog_ring r = ring_over(buf, N_OF(buf));

    struct limit_decision d = hit(&r, 5, 10, 6, T0);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, -1);
    ck_assert_int_eq(d.remaining, 5);
    ck_assert_int_eq(d.reset_after_ns, 0);
    ck_assert_int_le(d.fresh_at, T0);
    ck_assert_uint_eq(r.len, 0);

    hit(&r, 5, 10, 2, T0);
    d = hit(&r, 5, 10, INT64_MAX, T0 + SEC);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, -1);
    ck_assert_int_eq(d.remaining, 3);
    ck_assert_int_eq(d.reset_after_ns, 9 * SEC);
}
END_TEST

START_TEST(test_cost_zero_checks_without_recording)
{
    struct slog_entry buf[2];
    struct slog_ring r = ring_over(buf, N_OF(buf));

    struct limit_decision d = hit(&r, 2, 10, 0, T0);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 2);
    ck_assert_int_eq(d.reset_after_ns, 0);
    ck_assert_int_le(d.fresh_at, T0);

    hit(&r, 2, 10, 2, T0);
    d = hit(&r, 2, 10, 0, T0 + SEC);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 0);
    ck_assert_int_eq(d.reset_after_ns, 9 * SEC);
    ck_assert_uint_eq(r.len, 1);
}
END_TEST

START_TEST(test_refund_takes_newest_first_and_restores_room)
{
    struct slog_entry buf[4];
    struct slog_ring r = ring_over(buf, N_OF(buf));

    hit(&r, 5, 10, 2, T0);
    hit(&r, 5, 10, 3, T0 + SEC);
    ck_assert(peek(&r, 5, 10, 1, T0 + 2 * SEC).limited);

    /* -4: the newest (3) goes, the oldest keeps 1. */
    struct limit_decision d = peek(&r, 5, 10, -4, T0 + 2 * SEC);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 4);
    ck_assert_int_eq(d.retry_after_ns, -1);
    ck_assert_int_eq(d.reset_after_ns, 8 * SEC);
    ck_assert_int_eq(slog_refund(&r, 4), 4);
    ck_assert_uint_eq(r.len, 1);
    ck_assert_int_eq(r.sum, 1);
    ck_assert_int_eq(slog_newest(&r, 0)->cost, 1);
    ck_assert_int_eq(slog_newest(&r, 0)->t_ms, T0_MS);

    /* More than is used: never below zero. */
    d = peek(&r, 5, 10, -10, T0 + 2 * SEC);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 5);
    ck_assert_int_eq(d.reset_after_ns, 0);
    ck_assert_int_eq(slog_refund(&r, 10), 1);
    ck_assert_uint_eq(r.len, 0);
    ck_assert_int_eq(r.sum, 0);
    ck_assert_int_eq(slog_refund(&r, 10), 0);
    ck_assert_int_eq(slog_refund(&r, -3), 0);

    ck_assert(!hit(&r, 5, 10, 5, T0 + 2 * SEC).limited);
}
END_TEST

START_TEST(test_allowed_reset_runs_from_the_recorded_ms)
{
    struct slog_entry buf[2];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    int64_t now = T0 + 500000;

    struct limit_decision d = hit(&r, 2, 30, 1, now);
    ck_assert_int_eq(d.reset_after_ns, 30 * SEC - 500000);
    ck_assert_int_eq(d.fresh_at, T0 + 30 * SEC);
    ck_assert_int_eq(d.remaining, 1);
}
END_TEST

/* The log, oldest first: entry i was made at T0 + ks[i] s, cost costs[i]. */
static void
assert_log(const struct slog_ring *r, const int64_t *ks,
           const int64_t *costs, uint32_t n)
{
    ck_assert_uint_eq(r->len, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct slog_entry *e = slog_newest(r, n - 1 - i);

        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(e->t_ms, T0_MS + ks[i] * 1000);
        ck_assert_int_eq(e->cost, costs[i]);
    }
    ck_assert_ptr_null(slog_newest(r, n));
}

/*
 * Fill a ring of 4 (window 3 s) until it wraps: head 3, the entries in
 * slots 3, 0, 1, 2 made at k = 3, 4, 5, 5 s with costs 4, 5, 6, 7.
 */
static const int64_t wrapped_ks[] = { 3, 4, 5, 5 };
static const int64_t wrapped_costs[] = { 4, 5, 6, 7 };

static void
fill_wrapped(struct slog_ring *r)
{
    for (int64_t k = 0; k < 4; k++) {
        hit(r, 1000, 3, k + 1, T0 + k * SEC);
    }
    hit(r, 1000, 3, 5, T0 + 4 * SEC);   /* expires k = 0, 1 */
    hit(r, 1000, 3, 6, T0 + 5 * SEC);   /* expires k = 2 */
    hit(r, 1000, 3, 7, T0 + 5 * SEC);
    ck_assert_uint_eq(r->head, 3);
    assert_log(r, wrapped_ks, wrapped_costs, 4);
    ck_assert_int_eq(r->sum, 4 + 5 + 6 + 7);
}

START_TEST(test_ring_wraps_around_with_head_past_zero)
{
    struct slog_entry buf[4];
    struct slog_ring r = ring_over(buf, N_OF(buf));

    fill_wrapped(&r);
    ck_assert_int_eq(buf[2].cost, 7);   /* the newest wrapped to slot 2 */

    /* Full ring: a defensive append changes nothing. */
    struct slog_ring before = r;
    slog_append(&r, T0 + 5 * SEC, 1, 0, 0);
    ck_assert_mem_eq(&before, &r, sizeof(r));

    /* Expiry pops across the wrap. */
    ck_assert_uint_eq(slog_expire(&r, 3000, T0 + 7 * SEC), 2);
    ck_assert_uint_eq(r.head, 1);
    ck_assert_int_eq(r.sum, 13);
    ck_assert_uint_eq(slog_expire(&r, 3000, T0 + 8 * SEC), 2);
    ck_assert_uint_eq(r.head, 0);
    ck_assert_int_eq(r.sum, 0);
}
END_TEST

START_TEST(test_growth_by_realloc_keeps_ring_order)
{
    struct slog_entry small[4];
    struct slog_entry big[5];
    struct slog_ring r = ring_over(small, N_OF(small));
    const int64_t ks[] = { 4, 5, 5, 6, 6 };
    const int64_t costs[] = { 5, 6, 7, 1, 2 };

    fill_wrapped(&r);
    /* What realloc does: the first cap slots keep their contents. */
    memset(big, 0xa5, sizeof(big));
    memcpy(big, small, sizeof(small));
    r.e = big;
    slog_grown(&r, N_OF(big));
    ck_assert_uint_eq(r.cap, 5);
    ck_assert_uint_eq(r.head, 4);
    assert_log(&r, wrapped_ks, wrapped_costs, 4);

    hit(&r, 1000, 3, 1, T0 + 6 * SEC);  /* expires k = 3 */
    hit(&r, 1000, 3, 2, T0 + 6 * SEC);
    assert_log(&r, ks, costs, 5);
    ck_assert_int_eq(r.sum, 21);
}
END_TEST

START_TEST(test_growth_by_copying_in_ring_order)
{
    struct slog_entry small[4];
    struct slog_entry big[8];
    struct slog_ring r = ring_over(small, N_OF(small));
    const int64_t ks[] = { 3, 4, 5, 5, 5, 5, 5, 5 };
    const int64_t costs[] = { 4, 5, 6, 7, 1, 1, 1, 1 };
    uint32_t n;

    fill_wrapped(&r);
    n = r.len;
    for (uint32_t i = 0; i < n; i++) {
        big[i] = *slog_newest(&r, n - 1 - i);
    }
    r.e = big;
    r.cap = N_OF(big);
    r.head = 0;
    for (int64_t k = 0; k < 4; k++) {
        hit(&r, 1000, 3, 1, T0 + 5 * SEC + k);
    }
    assert_log(&r, ks, costs, 8);
}
END_TEST

START_TEST(test_newest_counts_back_from_the_latest_entry)
{
    struct slog_entry buf[8];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    const int64_t ks[] = { 0, 1, 2, 5 };
    const int64_t costs[] = { 1, 2, 3, 6 };

    ck_assert_ptr_null(slog_newest(&r, 0));
    for (uint32_t i = 0; i < N_OF(ks); i++) {
        hit(&r, 100, 60, costs[i], T0 + ks[i] * SEC);
    }
    assert_log(&r, ks, costs, N_OF(ks));
    ck_assert_uint_eq(slog_newest(&r, 0)->meta_off, 3);
    ck_assert_uint_eq(slog_newest(&r, 3)->meta_off, 0);
}
END_TEST

START_TEST(test_decide_never_modifies_the_ring)
{
    struct slog_entry buf[4];
    struct slog_entry copy[4];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    const int64_t costs[] = { 1, 0, -2, 4, 100, INT64_MAX };

    hit(&r, 4, 10, 2, T0);
    hit(&r, 4, 10, 1, T0 + SEC);
    memcpy(copy, buf, sizeof(buf));
    struct slog_ring before = r;
    for (uint32_t i = 0; i < N_OF(costs); i++) {
        struct slog_params p = { 4, 10, costs[i], 0 };
        struct limit_decision d;

        ck_assert_int_eq(slog_decide(&p, &r, T0 + 2 * SEC, &d), LIMIT_OK);
        ck_assert_mem_eq(&before, &r, sizeof(r));
        ck_assert_mem_eq(copy, buf, sizeof(buf));
    }
}
END_TEST

START_TEST(test_invalid_parameters_are_einval)
{
    static const struct slog_params bad[] = {
        { 0, 10, 1, 0 }, { -1, 10, 1, 0 }, { 5, 0, 1, 0 }, { 5, -3, 1, 0 },
        { INT64_MIN, INT64_MIN, 1, 0 },
    };
    struct slog_ring r = ring_over(NULL, 0);
    struct limit_decision d;

    memset(&d, 0x5a, sizeof(d));
    struct limit_decision untouched = d;
    for (uint32_t i = 0; i < N_OF(bad); i++) {
        ck_assert_int_eq(slog_decide(&bad[i], &r, T0, &d), LIMIT_EINVAL);
        ck_assert_mem_eq(&d, &untouched, sizeof(d));
    }
}
END_TEST

START_TEST(test_overflowing_inputs_are_rejected_not_wrapped)
{
    struct slog_entry buf[2];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    struct limit_decision d;
    static const struct slog_params over[] = {
        { 5, INT64_MAX, 1, 0 },                 /* window * 1000 */
        { 5, INT64_MAX / 1000, 1, 0 },         /* now_ms + window_ms */
        { 5, INT64_C(9223372036), 1, 0 },        /* (now_ms + w_ms) * 1e6 */
        { 5, 10, INT64_MIN, 0 },               /* -cost */
    };

    for (uint32_t i = 0; i < N_OF(over); i++) {
        ck_assert_int_eq(slog_decide(&over[i], &r, T0, &d), LIMIT_EOVERFLOW);
    }
    struct slog_params late = { 5, 1, 1, 0 };
    ck_assert_int_eq(slog_decide(&late, &r, INT64_MAX, &d), LIMIT_EOVERFLOW);
    /* INT64_MIN is 0.224192 ms past floor(now / 1 ms): reset is shorter. */
    ck_assert_int_eq(slog_decide(&late, &r, INT64_MIN, &d), LIMIT_OK);
    ck_assert_int_eq(d.reset_after_ns, SEC - 224192);

    /* Expiry with absurd windows: an end past INT64_MAX never comes. */
    hit(&r, 5, 10, 1, T0);
    ck_assert_uint_eq(slog_expire(&r, INT64_MAX, INT64_MAX), 0);
    ck_assert_uint_eq(slog_expire(&r, INT64_MIN, INT64_MIN), 1);
    ck_assert_uint_eq(r.len, 0);
}
END_TEST

START_TEST(test_extreme_costs_and_limits_answer_correctly)
{
    struct slog_entry buf[4];
    struct slog_ring r = ring_over(buf, N_OF(buf));

    /* The whole int64 quota at once, then one more unit. */
    struct limit_decision d = hit(&r, INT64_MAX, 10, INT64_MAX, T0);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 0);
    d = hit(&r, INT64_MAX, 10, 1, T0 + SEC);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, 9 * SEC);
    d = hit(&r, INT64_MAX, 10, INT64_MAX, T0 + SEC);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, 9 * SEC);
    /* A refund of INT64_MAX units empties it. */
    d = hit(&r, INT64_MAX, 10, -INT64_MAX, T0 + SEC);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, INT64_MAX);
    ck_assert_uint_eq(r.len, 0);
}
END_TEST

START_TEST(test_pre_epoch_times_round_down_to_the_ms)
{
    struct slog_entry buf[2];
    struct slog_ring r = ring_over(buf, N_OF(buf));

    hit(&r, 1, 1, 1, -1);               /* ms -1: [-1 ms, 999 ms) */
    ck_assert_int_eq(buf[0].t_ms, -1);
    ck_assert(hit(&r, 1, 1, 1, SEC - MS - 1).limited);
    ck_assert(!hit(&r, 1, 1, 1, SEC - MS).limited);
}
END_TEST

static TCase *
window_tcase(void)
{
    TCase *tc = tcase_create("window");

    tcase_add_test(tc, test_entry_counts_until_the_last_ms_of_its_window);
    tcase_add_test(tc, test_retry_after_is_exact_to_the_ns);
    tcase_add_test(tc, test_weighted_cost_waits_for_enough_oldest_entries);
    tcase_add_test(tc, test_cost_above_the_limit_is_never_allowed);
    tcase_add_test(tc, test_cost_zero_checks_without_recording);
    tcase_add_test(tc, test_refund_takes_newest_first_and_restores_room);
    tcase_add_test(tc, test_allowed_reset_runs_from_the_recorded_ms);
    tcase_add_test(tc, test_pre_epoch_times_round_down_to_the_ms);
    return tc;
}

static TCase *
ring_tcase(void)
{
    TCase *tc = tcase_create("ring");

    tcase_add_test(tc, test_ring_wraps_around_with_head_past_zero);
    tcase_add_test(tc, test_growth_by_realloc_keeps_ring_order);
    tcase_add_test(tc, test_growth_by_copying_in_ring_order);
    tcase_add_test(tc, test_newest_counts_back_from_the_latest_entry);
    tcase_add_test(tc, test_decide_never_modifies_the_ring);
    return tc;
}

static TCase *
edges_tcase(void)
{
    TCase *tc = tcase_create("edges");

    tcase_add_test(tc, test_invalid_parameters_are_einval);
    tcase_add_test(tc, test_overflowing_inputs_are_rejected_not_wrapped);
    tcase_add_test(tc, test_extreme_costs_and_limits_answer_correctly);
    return tc;
}

/* ---- retention: one log, calls with several windows -------------------- */

/* A call as the RL.LOG handler makes it on a log kept for keep_ms: expire
 * by the retention (not by the call's window) unless PEEK, then decide. */
static struct limit_decision
call_keep(struct slog_ring *r, int64_t limit, int64_t window, int64_t cost,
          int64_t keep_ms, int64_t now, bool peek)
{
    struct slog_params p = { limit, window, cost, keep_ms };
    struct limit_decision d;

    if (!peek) {
        slog_expire(r, keep_ms, now);
    }
    ck_assert_int_eq(slog_decide(&p, r, now, &d), LIMIT_OK);
    if (!peek && !d.limited && cost > 0) {
        slog_append(r, now, cost, r->len, 0);
    }
    return d;
}

START_TEST(test_a_shorter_window_counts_only_its_own_entries)
{
    struct slog_entry buf[8];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    int64_t hour = 3600 * 1000;

    ck_assert(!call_keep(&r, 1, 3600, 1, 0, T0, false).limited);
    /* 2 s later the 1 s window is empty, the hour is not. */
    struct limit_decision d = call_keep(&r, 1, 1, 1, hour, T0 + 2 * SEC, true);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 0);
    ck_assert_int_eq(r.len, 1);
    ck_assert(call_keep(&r, 1, 3600, 1, hour, T0 + 2 * SEC, true).limited);
    /* A real 1 s call is allowed and counted in the hour too. */
    ck_assert(!call_keep(&r, 1, 1, 1, hour, T0 + 2 * SEC, false).limited);
    ck_assert_int_eq(r.len, 2);
    ck_assert_int_eq(call_keep(&r, 5, 3600, 0, hour, T0 + 3 * SEC, true)
                         .remaining, 3);
}
END_TEST

START_TEST(test_peek_answers_as_the_real_call_without_expiring)
{
    /* Entries older than the retention are gone for every call, whether a
     * real call dropped them already (left) or not (right). */
    struct slog_entry a[8], b[8];
    struct slog_ring left = ring_over(a, N_OF(a));
    struct slog_ring right = ring_over(b, N_OF(b));
    int64_t keep = 10 * 1000;

    for (int i = 0; i < 4; i++) {
        call_keep(&left, 10, 10, 1, keep, T0 + i * SEC, false);
        call_keep(&right, 10, 10, 1, keep, T0 + i * SEC, false);
    }
    int64_t now = T0 + 12 * SEC;       /* the first three have left */
    for (int64_t w = 1; w <= 60; w += 7) {
        struct limit_decision real = call_keep(&left, 10, w, 0, keep, now,
                                               false);
        struct limit_decision look = call_keep(&right, 10, w, 0, keep, now,
                                               true);
        ck_assert_int_eq(real.limited, look.limited);
        ck_assert_int_eq(real.remaining, look.remaining);
        ck_assert_int_eq(real.retry_after_ns, look.retry_after_ns);
        ck_assert_int_eq(real.reset_after_ns, look.reset_after_ns);
    }
    ck_assert_int_eq(left.len, 1);
    ck_assert_int_eq(right.len, 4);
}
END_TEST

START_TEST(test_uncounted_and_drop_oldest)
{
    struct slog_entry buf[8];
    struct slog_ring r = ring_over(buf, N_OF(buf));
    struct slog_params p = { 10, 5, 1, 60 * 1000 };
    int64_t cost;

    for (int i = 0; i < 6; i++) {
        call_keep(&r, 20, 60, 2, 60 * 1000, T0 + i * 2 * SEC, false);
    }
    /* At T0 + 12 s a 5 s window counts the entries of 8 and 10 s. */
    ck_assert_uint_eq(slog_uncounted(&p, &r, T0 + 12 * SEC, &cost), 4);
    ck_assert_int_eq(cost, 8);
    slog_drop_oldest(&r, 3);
    ck_assert_uint_eq(r.len, 3);
    ck_assert_int_eq(r.sum, 6);
    ck_assert_int_eq(slog_newest(&r, 2)->t_ms, T0_MS + 6000);
    slog_drop_oldest(&r, 99);
    ck_assert_uint_eq(r.len, 0);
    ck_assert_int_eq(r.sum, 0);
}
END_TEST

static TCase *
retention_tcase(void)
{
    TCase *tc = tcase_create("retention");

    tcase_add_test(tc, test_a_shorter_window_counts_only_its_own_entries);
    tcase_add_test(tc, test_peek_answers_as_the_real_call_without_expiring);
    tcase_add_test(tc, test_uncounted_and_drop_oldest);
    return tc;
}

Suite *
sliding_log_suite(void)
{
    Suite *s = suite_create("sliding_log");

    suite_add_tcase(s, window_tcase());
    suite_add_tcase(s, ring_tcase());
    suite_add_tcase(s, edges_tcase());
    suite_add_tcase(s, retention_tcase());
    return s;
}
