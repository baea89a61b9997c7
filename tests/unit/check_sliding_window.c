/*
 * check_sliding_window.c - RL.SLIDING's sliding-window counter.
 *
 * Cases call swin_apply() with an injected "now" and either a hand-built
 * state (to pin the weighting down) or a tiny model of the key. The
 * randomized cases check the two promises that are easy to get subtly
 * wrong: retry_after is exact to the nanosecond (allowed at now + retry,
 * denied 1 ns before), and the integer estimate agrees with a
 * floating-point reference.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/sliding_window.h"
#include "tests/unit/suites.h"


#define SEC INT64_C(1000000000)

/* 2030-01-01T00:00:00Z: on every window grid up to a day. */
#define T0 INT64_C(1893456000000000000)
/* A base on no grid: T0 + 12345.678901234 s. */
#define TX (T0 + 12345 * SEC + 678901234)

#define MAX_WINDOW (INT64_MAX / SEC)    /* 9223372036 s */

static struct limit_decision
call(int64_t limit, int64_t window, int64_t cost, const struct swin_state *st,
     int64_t now, struct swin_state *next)
{
    struct swin_params p = { limit, window, cost };
    struct swin_state unused;
    struct limit_decision d;

    ck_assert_int_eq(swin_apply(&p, st != NULL, st, now,
                                next != NULL ? next : &unused, &d),
                     LIMIT_OK);
    ck_assert_int_eq(d.limit, limit);
    return d;
}

/* The key as the store keeps it: dropped once fresh. */
static struct limit_decision
hit(struct swin_state **k, struct swin_state *slot, int64_t limit,
    int64_t window, int64_t cost, int64_t now)
{
    struct swin_state next;
    struct limit_decision d = call(limit, window, cost, *k, now, &next);

    *slot = next;
    *k = d.fresh_at > now ? slot : NULL;
    return d;
}

static int64_t
grid(int64_t t, int64_t w)
{
    return t - t % w;
}

/* Deterministic xorshift64*, so a failure replays. */
static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static int64_t
rnd_in(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo + 1));
}

START_TEST(test_previous_window_counts_by_its_share_still_in_view)
{
    /* prev 6 at half time weighs 3; with curr 3 the estimate is 6. */
    struct swin_state st = { T0, 6, 3 };
    struct swin_state next;
    struct limit_decision d = call(10, 10, 0, &st, T0 + 5 * SEC, NULL);

    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 4);
    d = call(10, 10, 4, &st, T0 + 5 * SEC, &next);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 0);
    ck_assert_int_eq(next.curr, 7);
    ck_assert_int_eq(next.prev, 6);
    /* 5 more fit once 6 * (W - e) <= 2 * W: e >= 2/3 W, rounded up. */
    d = call(10, 10, 5, &st, T0 + 5 * SEC, NULL);
    ck_assert(d.limited);
    ck_assert_int_eq(d.remaining, 4);
    ck_assert_int_eq(d.retry_after_ns, 6666666667 - 5 * SEC);
}
END_TEST

/* [start, start + W): at exactly start + W, curr has become prev. */
START_TEST(test_window_end_is_exclusive)
{
    int64_t w = 10 * SEC;
    int64_t s = grid(TX, w);
    struct swin_state st = { s, 0, 4 };
    struct swin_state next;
    struct limit_decision d = call(4, 10, 1, &st, s + w - 1, &next);

    ck_assert(d.limited);
    ck_assert_int_eq(next.start, s);
    ck_assert_int_eq(d.retry_after_ns, w / 4 + 1);
    d = call(4, 10, 1, &st, s + w, &next);
    ck_assert(d.limited);
    ck_assert_int_eq(next.start, s + w);
    ck_assert_int_eq(next.prev, 4);
    ck_assert_int_eq(next.curr, 0);
    ck_assert_int_eq(d.retry_after_ns, w / 4);
    d = call(4, 10, 1, &st, s + w + w / 4, &next);
    ck_assert(!d.limited);
}
END_TEST

/* The fixed window's 2x-in-1-ns burst (check_fixed_window.c) is refused. */
START_TEST(test_sliding_counter_refuses_the_2x_boundary_burst)
{
    struct swin_state slot;
    struct swin_state *k = NULL;
    int64_t end = T0 + 60 * SEC;
    struct limit_decision d = hit(&k, &slot, 10, 60, 10, end - 1);

    ck_assert(!d.limited);
    d = hit(&k, &slot, 10, 60, 10, end);
    ck_assert(d.limited);
    ck_assert_int_eq(d.remaining, 0);
    ck_assert_int_eq(d.retry_after_ns, 60 * SEC);
    d = hit(&k, &slot, 10, 60, 1, end);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, 6 * SEC);
}
END_TEST

START_TEST(test_retry_may_lie_in_the_window_after_next)
{
    int64_t w = 10 * SEC;
    int64_t s = grid(TX, w);
    struct swin_state st = { s, 2, 5 };
    struct limit_decision d = call(5, 10, 5, &st, TX, NULL);

    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, s + 2 * w - TX);
    ck_assert(call(5, 10, 5, &st, s + 2 * w - 1, NULL).limited);
    ck_assert(!call(5, 10, 5, &st, s + 2 * w, NULL).limited);
}
END_TEST

/* A denied request at `now`: allowed at now + retry, denied just before. */
static void
assert_retry_exact(const struct swin_params *p, const struct swin_state *st,
                   int64_t now, int64_t retry)
{
    int64_t step = retry / 61 > 0 ? retry / 61 : 1;

    ck_assert(retry > 0);
    ck_assert(retry <= 2 * p->window * SEC);
    ck_assert(!call(p->limit, p->window, p->cost, st, now + retry,
                    NULL).limited);
    ck_assert(call(p->limit, p->window, p->cost, st, now + retry - 1,
                   NULL).limited);
    for (int64_t t = now; t < now + retry; t += step) {
        ck_assert(call(p->limit, p->window, p->cost, st, t, NULL).limited);
    }
}

START_TEST(test_retry_after_is_exact_to_the_nanosecond)
{
    uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
    int denied = 0;

    for (int i = 0; i < 400; i++) {
        struct swin_params p;
        p.window = rnd_in(&seed, 1, 3);
        p.limit = rnd_in(&seed, 1, 20);
        p.cost = rnd_in(&seed, 1, p.limit);
        int64_t w = p.window * SEC;
        int64_t base = i % 2 ? TX : T0;
        int64_t s = grid(base, w);
        struct swin_state st = { s, rnd_in(&seed, 0, p.limit),
                                 rnd_in(&seed, 0, p.limit) };
        int64_t now = s + rnd_in(&seed, 0, w - 1);
        struct limit_decision d = call(p.limit, p.window, p.cost, &st, now,
                                       NULL);

        if (d.limited) {
            assert_retry_exact(&p, &st, now, d.retry_after_ns);
            denied++;
        } else {
            ck_assert_int_eq(d.retry_after_ns, -1);
        }
    }
    ck_assert(denied > 100);
}
END_TEST

START_TEST(test_estimate_matches_a_floating_point_reference)
{
    uint64_t seed = UINT64_C(0x243f6a8885a308d3);

    for (int i = 0; i < 2000; i++) {
        int64_t window = rnd_in(&seed, 1, 86400);
        int64_t w = window * SEC;
        int64_t limit = rnd_in(&seed, 1, 2000000);
        int64_t prev = rnd_in(&seed, 0, limit);
        int64_t curr = rnd_in(&seed, 0, limit);
        int64_t e = rnd_in(&seed, 0, w - 1);
        int64_t s = grid(TX, w);
        struct swin_state st = { s, prev, curr };
        struct limit_decision d = call(limit, window, 0, &st, s + e, NULL);
        double est = (double)prev * (double)(w - e) / (double)w
                     + (double)curr;
        double want = fmax(0.0, (double)limit - est);

        ck_assert_msg(fabs((double)d.remaining - want) <= 1.0,
                      "limit %lld prev %lld curr %lld e %lld w %lld: "
                      "remaining %lld, reference %f", (long long)limit,
                      (long long)prev, (long long)curr, (long long)e,
                      (long long)w, (long long)d.remaining, want);
    }
}
END_TEST

START_TEST(test_cost_above_limit_is_denied_and_a_fresh_key_stays_fresh)
{
    struct swin_state slot;
    struct swin_state *k = NULL;
    struct limit_decision d = hit(&k, &slot, 5, 10, 6, TX);

    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, -1);
    ck_assert_int_eq(d.remaining, 5);
    ck_assert_int_eq(d.reset_after_ns, 0);
    ck_assert(d.fresh_at <= TX);
    ck_assert(k == NULL);
    hit(&k, &slot, 5, 10, 2, TX);
    d = hit(&k, &slot, 5, 10, 6, TX + 1);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, -1);
    ck_assert_int_eq(slot.curr, 2);
}
END_TEST

START_TEST(test_refund_takes_from_curr_then_prev_never_below_zero)
{
    int64_t s = grid(TX, 10 * SEC);
    struct swin_state st = { s, 3, 2 };
    struct swin_state next;
    struct limit_decision d = call(10, 10, -4, &st, TX, &next);

    ck_assert(!d.limited);
    ck_assert_int_eq(next.curr, 0);
    ck_assert_int_eq(next.prev, 1);
    d = call(10, 10, -100, &st, TX, &next);
    ck_assert_int_eq(next.curr, 0);
    ck_assert_int_eq(next.prev, 0);
    ck_assert_int_eq(d.remaining, 10);
    ck_assert(d.fresh_at <= TX);
    d = call(10, 10, INT64_MIN, &st, TX, &next);
    ck_assert(!d.limited);
    ck_assert(d.fresh_at <= TX);
    /* A refund on a fresh key stays fresh. */
    d = call(10, 10, -1, NULL, TX, NULL);
    ck_assert(!d.limited);
    ck_assert_int_eq(d.reset_after_ns, 0);
    ck_assert(d.fresh_at <= TX);
}
END_TEST

START_TEST(test_refund_restores_room)
{
    struct swin_state slot;
    struct swin_state *k = NULL;

    hit(&k, &slot, 3, 10, 3, TX);
    ck_assert(hit(&k, &slot, 3, 10, 1, TX + 1).limited);
    ck_assert(!hit(&k, &slot, 3, 10, -1, TX + 2).limited);
    struct limit_decision d = hit(&k, &slot, 3, 10, 1, TX + 3);

    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 0);
}
END_TEST

START_TEST(test_reset_after_is_when_every_count_has_aged_out)
{
    int64_t w = 10 * SEC;
    int64_t s = grid(TX, w);
    struct swin_state both = { s, 3, 1 };
    struct swin_state prev_only = { s, 3, 0 };
    struct swin_state none = { s, 0, 0 };
    struct limit_decision d = call(5, 10, 0, &both, TX, NULL);

    ck_assert_int_eq(d.reset_after_ns, s + 2 * w - TX);
    ck_assert_int_eq(d.fresh_at, s + 2 * w);
    d = call(5, 10, 0, &prev_only, TX, NULL);
    ck_assert_int_eq(d.reset_after_ns, s + w - TX);
    ck_assert_int_eq(d.fresh_at, s + w);
    d = call(5, 10, 0, &none, TX, NULL);
    ck_assert_int_eq(d.reset_after_ns, 0);
    ck_assert(d.fresh_at <= TX);
}
END_TEST

START_TEST(test_state_older_than_the_previous_window_is_empty)
{
    int64_t w = 10 * SEC;
    int64_t s = grid(TX, w);
    static const int64_t starts_back[] = { 2, 3, 1000, -1 };
    struct swin_state st = { s - starts_back[_i] * w, 5, 5 };
    struct swin_state next;
    struct limit_decision d = call(5, 10, 5, &st, TX, &next);

    ck_assert(!d.limited);
    ck_assert_int_eq(next.start, s);
    ck_assert_int_eq(next.prev, 0);
    ck_assert_int_eq(next.curr, 5);
}
END_TEST

/* PEEK is "call and do not store": the function never writes *st. */
START_TEST(test_peek_never_writes_the_stored_state)
{
    static const int64_t costs[] = { 1, 3, 9, 0, -1, INT64_MIN };
    int64_t s = grid(TX, 10 * SEC);
    const struct swin_state st = { s - 10 * SEC, 2, 2 };
    struct swin_state copy = st;

    for (size_t i = 0; i < sizeof costs / sizeof costs[0]; i++) {
        struct swin_params p = { 3, 10, costs[i] };
        struct swin_state next;
        struct limit_decision d;

        ck_assert_int_eq(swin_apply(&p, true, &copy, TX, &next, &d),
                         LIMIT_OK);
        ck_assert(memcmp(&copy, &st, sizeof st) == 0);
    }
}
END_TEST

START_TEST(test_next_may_alias_the_stored_state)
{
    struct swin_params p = { 5, 10, 1 };
    int64_t s = grid(TX, 10 * SEC);
    struct swin_state st = { s - 10 * SEC, 1, 2 };
    struct limit_decision d;

    ck_assert_int_eq(swin_apply(&p, true, &st, TX, &st, &d), LIMIT_OK);
    ck_assert_int_eq(st.start, s);
    ck_assert_int_eq(st.prev, 2);
    ck_assert_int_eq(st.curr, 1);
}
END_TEST

static const struct {
    struct swin_params p;
    int64_t now;
    enum limit_status want;
} error_cases[] = {
    { { 0, 10, 1 }, TX, LIMIT_EINVAL },
    { { INT64_MIN, 10, 1 }, TX, LIMIT_EINVAL },
    { { 5, 0, 1 }, TX, LIMIT_EINVAL },
    { { 5, INT64_MIN, 1 }, TX, LIMIT_EINVAL },
    { { 5, 10, 1 }, -1, LIMIT_EINVAL },
    { { 5, INT64_MAX, 1 }, TX, LIMIT_EOVERFLOW },
    { { 5, MAX_WINDOW + 1, 1 }, 0, LIMIT_EOVERFLOW },
    /* W fits, but the end of the next window does not. */
    { { 5, MAX_WINDOW, 1 }, TX, LIMIT_EOVERFLOW },
    { { 5, MAX_WINDOW / 2 + 1, 0 }, 0, LIMIT_EOVERFLOW },
    { { 5, 1, 1 }, INT64_MAX, LIMIT_EOVERFLOW },
};

START_TEST(test_bad_inputs_are_rejected_and_nothing_is_written)
{
    struct swin_state next = { 7, 7, 7 };
    struct limit_decision d = { .remaining = 7 };

    ck_assert_int_eq(swin_apply(&error_cases[_i].p, false, NULL,
                                error_cases[_i].now, &next, &d),
                     error_cases[_i].want);
    ck_assert_int_eq(next.curr, 7);
    ck_assert_int_eq(d.remaining, 7);
}
END_TEST

/*
 * The widest window whose next window still ends inside int64, with counts
 * and costs at INT64_MAX: every product needs the full __int128. (The retry
 * checked lands in this window: from the next one on, start + 2W overflows.)
 */
START_TEST(test_huge_windows_counts_and_costs_are_answered_exactly)
{
    struct swin_params p = { INT64_MAX, MAX_WINDOW / 2, INT64_MAX / 2 };
    int64_t w = p.window * SEC;
    struct swin_state st = { 0, INT64_MAX, 0 };
    struct swin_state next;
    struct limit_decision d = call(p.limit, p.window, p.cost, &st, TX, NULL);

    ck_assert(d.limited);
    ck_assert(TX + d.retry_after_ns < w);
    assert_retry_exact(&p, &st, TX, d.retry_after_ns);
    ck_assert_int_eq(call(p.limit, p.window, 0, &st, TX, NULL).remaining,
                     (int64_t)((__int128)INT64_MAX * TX / w));
    st.curr = INT64_MAX;
    d = call(INT64_MAX, p.window, 1, &st, TX, NULL);
    ck_assert(d.limited);
    ck_assert_int_eq(d.remaining, 0);
    /* Next window: INT64_MAX * (W - 1) / W leaves room for 1 after 1 ns. */
    ck_assert_int_eq(d.retry_after_ns, w + 1 - TX);
    /* -INT64_MIN is one more than curr holds: the last unit from prev. */
    d = call(INT64_MAX, p.window, INT64_MIN, &st, TX, &next);
    ck_assert(!d.limited);
    ck_assert_int_eq(next.curr, 0);
    ck_assert_int_eq(next.prev, INT64_MAX - 1);
    d = call(1, 1, INT64_MAX, NULL, TX, NULL);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, -1);
}
END_TEST

static TCase *
windows_tcase(void)
{
    TCase *tc = tcase_create("windows");

    tcase_add_test(tc, test_previous_window_counts_by_its_share_still_in_view);
    tcase_add_test(tc, test_window_end_is_exclusive);
    tcase_add_test(tc, test_sliding_counter_refuses_the_2x_boundary_burst);
    tcase_add_test(tc, test_retry_may_lie_in_the_window_after_next);
    tcase_add_test(tc, test_retry_after_is_exact_to_the_nanosecond);
    tcase_add_test(tc, test_estimate_matches_a_floating_point_reference);
    tcase_add_test(tc, test_reset_after_is_when_every_count_has_aged_out);
    tcase_add_loop_test(tc,
                        test_state_older_than_the_previous_window_is_empty,
                        0, 4);
    return tc;
}

static TCase *
costs_tcase(void)
{
    TCase *tc = tcase_create("costs");

    tcase_add_test(tc,
                   test_cost_above_limit_is_denied_and_a_fresh_key_stays_fresh);
    tcase_add_test(tc,
                   test_refund_takes_from_curr_then_prev_never_below_zero);
    tcase_add_test(tc, test_refund_restores_room);
    return tc;
}

static TCase *
edges_tcase(void)
{
    TCase *tc = tcase_create("edges");

    tcase_add_test(tc, test_peek_never_writes_the_stored_state);
    tcase_add_test(tc, test_next_may_alias_the_stored_state);
    tcase_add_loop_test(tc, test_bad_inputs_are_rejected_and_nothing_is_written,
                        0, sizeof error_cases / sizeof error_cases[0]);
    tcase_add_test(tc, test_huge_windows_counts_and_costs_are_answered_exactly);
    return tc;
}

Suite *
sliding_window_suite(void)
{
    Suite *s = suite_create("sliding_window");

    suite_add_tcase(s, windows_tcase());
    suite_add_tcase(s, costs_tcase());
    suite_add_tcase(s, edges_tcase());
    return s;
}
