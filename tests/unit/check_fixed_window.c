/*
 * check_fixed_window.c - RL.FIXED's fixed-window counter.
 *
 * Every case drives fwin_apply() with an injected "now" and a tiny model of
 * the key (stored only while fresh_at > now), so a sequence of calls reads
 * like the spec: half-open windows, first-hit and ALIGN modes, weighted
 * costs, refunds, PEEK, and checked arithmetic at the int64 edges.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/fixed_window.h"
#include "tests/unit/suites.h"


#define SEC INT64_C(1000000000)
#define DAY (86400 * SEC)

/* 2030-01-01T00:00:00Z: on every window grid up to a day. */
#define T0 INT64_C(1893456000000000000)
/* A base on no grid: T0 + 12345.678901234 s. */
#define TX (T0 + 12345 * SEC + 678901234)

/* The key as the store keeps it: dropped once fresh. */
struct key {
    bool exists;
    struct fwin_state st;
};

static struct limit_decision
hit(struct key *k, int64_t limit, int64_t window, int64_t cost, bool align,
    int64_t now)
{
    struct fwin_params p = { limit, window, cost, align, NULL };
    struct limit_decision d;
    struct fwin_state next;

    ck_assert_int_eq(fwin_apply(&p, k->exists, &k->st, now, &next, &d),
                     LIMIT_OK);
    k->exists = d.fresh_at > now;
    k->st = next;
    return d;
}

static void
assert_allowed(const struct limit_decision *d, int64_t remaining,
               int64_t reset_after)
{
    ck_assert(!d->limited);
    ck_assert_int_eq(d->remaining, remaining);
    ck_assert_int_eq(d->retry_after_ns, -1);
    ck_assert_int_eq(d->reset_after_ns, reset_after);
}

static void
assert_denied(const struct limit_decision *d, int64_t remaining,
              int64_t retry_after, int64_t reset_after)
{
    ck_assert(d->limited);
    ck_assert_int_eq(d->remaining, remaining);
    ck_assert_int_eq(d->retry_after_ns, retry_after);
    ck_assert_int_eq(d->reset_after_ns, reset_after);
}

START_TEST(test_first_hit_window_opens_at_the_first_request)
{
    struct key k = { 0 };
    struct limit_decision d = hit(&k, 3, 10, 1, false, TX);

    assert_allowed(&d, 2, 10 * SEC);
    ck_assert_int_eq(k.st.start, TX);
    ck_assert_int_eq(d.limit, 3);
    ck_assert_int_eq(d.fresh_at, TX + 10 * SEC);
    hit(&k, 3, 10, 1, false, TX + 1 * SEC);
    d = hit(&k, 3, 10, 1, false, TX + 4 * SEC);
    assert_allowed(&d, 0, 6 * SEC);
    d = hit(&k, 3, 10, 1, false, TX + 9 * SEC);
    assert_denied(&d, 0, 1 * SEC, 1 * SEC);
    ck_assert_int_eq(k.st.count, 3);
}
END_TEST

/* [start, start + W): at exactly start + W the next window has begun. */
START_TEST(test_window_end_is_exclusive_in_both_modes)
{
    bool align = _i == 1;
    int64_t start = align ? TX - TX % (10 * SEC) : TX;
    struct key k = { 0 };

    hit(&k, 1, 10, 1, align, TX);
    ck_assert_int_eq(k.st.start, start);
    struct limit_decision d = hit(&k, 1, 10, 1, align, start + 10 * SEC - 1);
    assert_denied(&d, 0, 1, 1);
    ck_assert(k.exists);
    d = hit(&k, 1, 10, 1, align, start + 10 * SEC);
    assert_allowed(&d, 0, 10 * SEC);
    ck_assert_int_eq(k.st.start, start + 10 * SEC);
}
END_TEST

START_TEST(test_align_day_window_resets_at_midnight_utc)
{
    struct key k = { 0 };
    struct limit_decision d = hit(&k, 1, 86400, 1, true, T0 + 13 * 3600 * SEC);

    assert_allowed(&d, 0, 11 * 3600 * SEC);
    ck_assert_int_eq(k.st.start, T0);
    ck_assert_int_eq(d.fresh_at, T0 + DAY);
    d = hit(&k, 1, 86400, 1, true, T0 + DAY - 1);
    assert_denied(&d, 0, 1, 1);
    d = hit(&k, 1, 86400, 1, true, T0 + DAY);
    assert_allowed(&d, 0, DAY);
    ck_assert_int_eq(k.st.start, T0 + DAY);
}
END_TEST

/* The flaw RL.SLIDING exists for: 2x the limit within one nanosecond. */
START_TEST(test_fixed_window_allows_2x_burst_across_a_boundary)
{
    struct key k = { 0 };
    int64_t end = T0 + 60 * SEC;
    struct limit_decision d = hit(&k, 10, 60, 10, true, end - 1);

    assert_allowed(&d, 0, 1);
    d = hit(&k, 10, 60, 10, true, end);
    assert_allowed(&d, 0, 60 * SEC);
}
END_TEST

/* RL.FIXED user:42:transfers 2000 86400 COST 350 ALIGN */
START_TEST(test_weighted_cost_2000_a_day_allows_five_transfers_of_350)
{
    struct key k = { 0 };
    int64_t now = TX;
    int64_t end = T0 + DAY;
    struct limit_decision d;

    for (int i = 1; i <= 5; i++) {
        now += 600 * SEC;
        d = hit(&k, 2000, 86400, 350, true, now);
        assert_allowed(&d, 2000 - 350 * i, end - now);
    }
    now += 1;
    d = hit(&k, 2000, 86400, 350, true, now);
    assert_denied(&d, 250, end - now, end - now);
    ck_assert_int_eq(k.st.count, 1750);
    d = hit(&k, 2000, 86400, 250, true, now);
    assert_allowed(&d, 0, end - now);
}
END_TEST

START_TEST(test_cost_above_limit_is_denied_with_retry_minus_one)
{
    struct key k = { 0 };
    struct limit_decision d = hit(&k, 5, 10, 1, false, TX);

    d = hit(&k, 5, 10, 6, false, TX + 1);
    assert_denied(&d, 4, -1, 10 * SEC - 1);
    ck_assert_int_eq(k.st.count, 1);
}
END_TEST

START_TEST(test_denied_request_on_a_fresh_key_leaves_it_fresh)
{
    bool align = _i == 1;
    struct key k = { 0 };
    struct limit_decision d = hit(&k, 5, 10, 6, align, TX);

    assert_denied(&d, 5, -1, 0);
    ck_assert(d.fresh_at <= TX);
    ck_assert(!k.exists);
    /* The window opens at the first *allowed* request. */
    d = hit(&k, 5, 10, 5, align, TX + 3 * SEC);
    ck_assert(!d.limited);
    ck_assert_int_eq(k.st.start, align ? TX - TX % (10 * SEC) : TX + 3 * SEC);
}
END_TEST

START_TEST(test_cost_zero_is_a_check_that_opens_no_window)
{
    bool align = _i == 1;
    struct key k = { 0 };
    struct limit_decision d = hit(&k, 5, 10, 0, align, TX);

    assert_allowed(&d, 5, 0);
    ck_assert(!k.exists);
    hit(&k, 5, 10, 2, align, TX);
    d = hit(&k, 5, 10, 0, align, TX + 1);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 3);
    ck_assert_int_eq(k.st.count, 2);
}
END_TEST

START_TEST(test_refund_never_goes_below_zero)
{
    struct key k = { 0 };
    struct limit_decision d = hit(&k, 5, 10, -3, false, TX);

    /* A refund on a fresh key stays fresh. */
    assert_allowed(&d, 5, 0);
    ck_assert(!k.exists);
    hit(&k, 5, 10, 2, false, TX);
    d = hit(&k, 5, 10, -3, false, TX + 1);
    assert_allowed(&d, 5, 0);
    ck_assert(!k.exists);
    hit(&k, 5, 10, 2, false, TX + 2);
    d = hit(&k, 5, 10, INT64_MIN, false, TX + 3);
    assert_allowed(&d, 5, 0);
    ck_assert(!k.exists);
}
END_TEST

START_TEST(test_refund_restores_room_in_the_same_window)
{
    struct key k = { 0 };
    struct limit_decision d;

    hit(&k, 3, 10, 3, false, TX);
    d = hit(&k, 3, 10, 1, false, TX + 1 * SEC);
    ck_assert(d.limited);
    d = hit(&k, 3, 10, -1, false, TX + 2 * SEC);
    assert_allowed(&d, 1, 8 * SEC);
    d = hit(&k, 3, 10, 1, false, TX + 3 * SEC);
    assert_allowed(&d, 0, 7 * SEC);
    ck_assert_int_eq(k.st.start, TX);
}
END_TEST

/* PEEK is "call and do not store": the function never writes *st. */
START_TEST(test_peek_never_writes_the_stored_state)
{
    static const int64_t costs[] = { 1, 3, 9, 0, -1, INT64_MIN };
    const struct fwin_state st = { TX, 2 };
    struct fwin_state copy = st;

    for (size_t i = 0; i < sizeof costs / sizeof costs[0]; i++) {
        struct fwin_params p = { 3, 10, costs[i], (i & 1) != 0, NULL };
        struct fwin_state next;
        struct limit_decision d;

        ck_assert_int_eq(fwin_apply(&p, true, &copy, TX + 1, &next, &d),
                         LIMIT_OK);
        ck_assert(memcmp(&copy, &st, sizeof st) == 0);
    }
}
END_TEST

START_TEST(test_next_may_alias_the_stored_state)
{
    struct fwin_params p = { 3, 10, 1, false, NULL };
    struct fwin_state st = { TX, 2 };
    struct limit_decision d;

    ck_assert_int_eq(fwin_apply(&p, true, &st, TX + 1, &st, &d), LIMIT_OK);
    ck_assert_int_eq(st.start, TX);
    ck_assert_int_eq(st.count, 3);
}
END_TEST

START_TEST(test_a_count_above_a_lowered_limit_reports_zero_remaining)
{
    struct key k = { true, { TX, 9 } };
    struct limit_decision d = hit(&k, 5, 10, 1, false, TX + 1);

    assert_denied(&d, 0, 10 * SEC - 1, 10 * SEC - 1);
    ck_assert_int_eq(k.st.count, 9);
}
END_TEST

static const struct {
    struct fwin_params p;
    int64_t now;
} einval_cases[] = {
    { { 0, 10, 1, false, NULL }, TX },
    { { -1, 10, 1, false, NULL }, TX },
    { { INT64_MIN, 10, 1, true, NULL }, TX },
    { { 5, 0, 1, false, NULL }, TX },
    { { 5, -10, 1, true, NULL }, TX },
    { { 5, INT64_MIN, 1, true, NULL }, TX },
    { { 5, 10, 1, false, NULL }, -1 },
    { { 5, 10, 1, true, NULL }, INT64_MIN },
};

START_TEST(test_invalid_inputs_are_rejected_and_nothing_is_written)
{
    struct fwin_state next = { 7, 7 };
    struct limit_decision d = { .remaining = 7 };

    ck_assert_int_eq(fwin_apply(&einval_cases[_i].p, false, NULL,
                                einval_cases[_i].now, &next, &d),
                     LIMIT_EINVAL);
    ck_assert_int_eq(next.start, 7);
    ck_assert_int_eq(d.remaining, 7);
}
END_TEST

#define MAX_WINDOW (INT64_MAX / SEC)    /* 9223372036 s */

static const struct {
    struct fwin_params p;
    bool has_state;
    struct fwin_state st;
    int64_t now;
} overflow_cases[] = {
    { { 5, INT64_MAX, 1, false, NULL }, false, { 0, 0 }, TX },
    { { 5, MAX_WINDOW + 1, 1, true, NULL }, false, { 0, 0 }, 0 },
    /* start + W past INT64_MAX: first-hit at TX, aligned near the top. */
    { { 5, MAX_WINDOW, 1, false, NULL }, false, { 0, 0 }, TX },
    { { 5, 1, 1, false, NULL }, false, { 0, 0 }, INT64_MAX },
    { { 5, 1, 1, true, NULL }, false, { 0, 0 }, INT64_MAX },
    { { 5, 1, 0, false, NULL }, true, { INT64_MAX - 5, 1 }, INT64_MAX - 5 },
};

START_TEST(test_windows_ending_beyond_int64_are_overflow_errors)
{
    struct fwin_state next;
    struct limit_decision d;

    ck_assert_int_eq(fwin_apply(&overflow_cases[_i].p,
                                overflow_cases[_i].has_state,
                                &overflow_cases[_i].st, overflow_cases[_i].now,
                                &next, &d),
                     LIMIT_EOVERFLOW);
}
END_TEST

START_TEST(test_largest_window_that_fits_is_answered_exactly)
{
    struct key k = { 0 };
    int64_t w = MAX_WINDOW * SEC;
    struct limit_decision d = hit(&k, 1, MAX_WINDOW, 1, true, TX);

    assert_allowed(&d, 0, w - TX);
    ck_assert_int_eq(k.st.start, 0);
    d = hit(&k, 1, MAX_WINDOW, 1, true, TX + 1);
    assert_denied(&d, 0, w - TX - 1, w - TX - 1);
}
END_TEST

START_TEST(test_costs_and_limits_near_int64_max_do_not_wrap)
{
    struct key k = { 0 };
    struct limit_decision d = hit(&k, INT64_MAX, 10, INT64_MAX, false, TX);

    assert_allowed(&d, 0, 10 * SEC);
    d = hit(&k, INT64_MAX, 10, INT64_MAX, false, TX + 1);
    assert_denied(&d, 0, 10 * SEC - 1, 10 * SEC - 1);
    d = hit(&k, INT64_MAX, 10, 1, false, TX + 2);
    ck_assert(d.limited);
    d = hit(&k, INT64_MAX, 10, INT64_MIN, false, TX + 3);
    assert_allowed(&d, INT64_MAX, 0);
    d = hit(&k, INT64_MAX - 1, 10, INT64_MAX, true, TX + 4);
    assert_denied(&d, INT64_MAX - 1, -1, 0);
}
END_TEST

static TCase *
windows_tcase(void)
{
    TCase *tc = tcase_create("windows");

    tcase_add_test(tc, test_first_hit_window_opens_at_the_first_request);
    tcase_add_loop_test(tc, test_window_end_is_exclusive_in_both_modes, 0, 2);
    tcase_add_test(tc, test_align_day_window_resets_at_midnight_utc);
    tcase_add_test(tc, test_fixed_window_allows_2x_burst_across_a_boundary);
    return tc;
}

static TCase *
costs_tcase(void)
{
    TCase *tc = tcase_create("costs");

    tcase_add_test(tc,
                   test_weighted_cost_2000_a_day_allows_five_transfers_of_350);
    tcase_add_test(tc, test_cost_above_limit_is_denied_with_retry_minus_one);
    tcase_add_loop_test(tc, test_denied_request_on_a_fresh_key_leaves_it_fresh,
                        0, 2);
    tcase_add_loop_test(tc, test_cost_zero_is_a_check_that_opens_no_window,
                        0, 2);
    tcase_add_test(tc, test_refund_never_goes_below_zero);
    tcase_add_test(tc, test_refund_restores_room_in_the_same_window);
    tcase_add_test(tc,
                   test_a_count_above_a_lowered_limit_reports_zero_remaining);
    return tc;
}

static TCase *
edges_tcase(void)
{
    TCase *tc = tcase_create("edges");

    tcase_add_test(tc, test_peek_never_writes_the_stored_state);
    tcase_add_test(tc, test_next_may_alias_the_stored_state);
    tcase_add_loop_test(tc,
                        test_invalid_inputs_are_rejected_and_nothing_is_written,
                        0, sizeof einval_cases / sizeof einval_cases[0]);
    tcase_add_loop_test(tc,
                        test_windows_ending_beyond_int64_are_overflow_errors,
                        0, sizeof overflow_cases / sizeof overflow_cases[0]);
    tcase_add_test(tc, test_largest_window_that_fits_is_answered_exactly);
    tcase_add_test(tc, test_costs_and_limits_near_int64_max_do_not_wrap);
    return tc;
}

Suite *
fixed_window_suite(void)
{
    Suite *s = suite_create("fixed_window");

    suite_add_tcase(s, windows_tcase());
    suite_add_tcase(s, costs_tcase());
    suite_add_tcase(s, edges_tcase());
    return s;
}
