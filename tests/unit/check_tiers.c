/*
 * check_tiers.c - RL.TIERS's all-or-nothing windows (algorithms/tiers).
 *
 * Every case drives the buckets the way the RL.TIERS handler will (expire
 * with the largest window, decide, commit only when allowed) with an
 * injected "now" near 2030, so per-second boundaries and exact
 * retry_after values can be checked to the nanosecond.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/tiers.h"
#include "tests/unit/suites.h"


#define SEC INT64_C(1000000000)
#define MS  INT64_C(1000000)

/* 2030-01-01T00:00:00Z. */
#define T0    INT64_C(1893456000000000000)
#define T0_S  (T0 / SEC)

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The spec's example: RL.TIERS ip:1.2.3.4 1000 1 5000 10 7000 15. */
static const struct tier_limit seed[] = {
    { 1000, 1 }, { 5000, 10 }, { 7000, 15 },
};

struct fixture {
    struct tier_bucket b[32];
    struct tier_state st;
};

static void
fixture_init(struct fixture *f)
{
    memset(f, 0, sizeof(*f));
    f->st.b = f->b;
    f->st.cap = N_OF(f->b);
}

static int64_t
largest(const struct tier_limit *t, uint32_t n)
{
    int64_t w = 0;

    for (uint32_t i = 0; i < n; i++) {
        w = t[i].window > w ? t[i].window : w;
    }
    return w;
}

/* One call as the handler makes it; PEEK skips the commit. */
static struct limit_decision
call(struct tier_state *st, const struct tier_limit *t, uint32_t n,
     int64_t cost, int64_t now, bool peek)
{
    struct tier_params p = { t, n, cost, 0 };
    struct limit_decision d;

    tier_expire(st, largest(t, n), now);
    ck_assert_int_eq(tier_decide(&p, st, now, &d), LIMIT_OK);
    if (!peek && !d.limited && cost != 0) {
        if (cost > 0 && tier_needs_bucket(st, now)) {
            ck_assert_uint_lt(st->len, st->cap);
        }
        tier_commit(st, now, cost);
    }
    return d;
}

static struct limit_decision
hit(struct tier_state *st, int64_t cost, int64_t now)
{
    return call(st, seed, N_OF(seed), cost, now, false);
}

static void
assert_reply(const struct limit_decision *d, bool limited, int64_t limit,
             int64_t remaining, int64_t retry)
{
    ck_assert_int_eq(d->limited, limited);
    ck_assert_int_eq(d->limit, limit);
    ck_assert_int_eq(d->remaining, remaining);
    ck_assert_int_eq(d->retry_after_ns, retry);
}

START_TEST(test_seed_bursts_are_decided_by_the_tightest_tier)
{
    struct fixture f;
    struct limit_decision d;

    fixture_init(&f);
    /* A full second's burst: the 1 s tier has the least left. */
    d = hit(&f.st, 1000, T0);
    assert_reply(&d, false, 1000, 0, -1);
    ck_assert_int_eq(d.reset_after_ns, 15 * SEC);
    ck_assert_int_eq(d.fresh_at, T0 + 15 * SEC);

    /* Half a second later the 1 s tier denies until the next second. */
    d = call(&f.st, seed, N_OF(seed), 1, T0 + 500 * MS, true);
    assert_reply(&d, true, 1000, 0, 500 * MS);

    for (int64_t s = 1; s <= 4; s++) {
        d = hit(&f.st, 1000, T0 + s * SEC);
        ck_assert(!d.limited);
    }
    /* 5000 in the last 10 s: the 10 s tier denies until second 0 leaves. */
    d = hit(&f.st, 1, T0 + 5 * SEC + 250 * MS);
    assert_reply(&d, true, 5000, 0, 4750 * MS);
    ck_assert_int_eq(d.reset_after_ns, 13750 * MS);

    ck_assert(!hit(&f.st, 1000, T0 + 10 * SEC).limited);
    d = hit(&f.st, 1000, T0 + 11 * SEC);
    assert_reply(&d, false, 1000, 0, -1);   /* all at 0: the first wins */

    /* 7000 in the last 15 s: the 15 s tier waits for second 0. */
    d = call(&f.st, seed, N_OF(seed), 1000, T0 + 12 * SEC, true);
    assert_reply(&d, true, 7000, 0, 3 * SEC);

    /* 2000 can never pass the 1 s tier: "never" beats the 15 s wait. */
    d = call(&f.st, seed, N_OF(seed), 2000, T0 + 13 * SEC, true);
    assert_reply(&d, true, 1000, 1000, -1);
}
END_TEST

START_TEST(test_denied_by_one_tier_counts_in_none)
{
    struct fixture f;
    struct fixture before;
    struct limit_decision d;

    fixture_init(&f);
    for (int64_t s = 0; s < 5; s++) {
        hit(&f.st, 1000, T0 + s * SEC);
    }
    hit(&f.st, 0, T0 + 5 * SEC);        /* expire once, nothing to drop */
    memcpy(&before, &f, sizeof(f));

    /* The 1 s and 15 s tiers have room; the 10 s tier does not. */
    d = hit(&f.st, 500, T0 + 5 * SEC);
    assert_reply(&d, true, 5000, 0, 5 * SEC);
    ck_assert_uint_eq(f.st.len, before.st.len);
    ck_assert_mem_eq(f.b, before.b, sizeof(f.b));

    /* So the 1 s tier still has its whole quota once the 10 s one has. */
    d = hit(&f.st, 1000, T0 + 10 * SEC);
    assert_reply(&d, false, 1000, 0, -1);
}
END_TEST

START_TEST(test_bucket_counts_while_now_second_is_below_b_plus_w)
{
    static const struct tier_limit one[] = { { 1, 3 } };
    struct fixture f;
    struct limit_decision d;

    fixture_init(&f);
    call(&f.st, one, 1, 1, T0 + 700 * MS, false);
    ck_assert_int_eq(f.b[0].sec, T0_S);

    d = call(&f.st, one, 1, 1, T0 + 3 * SEC - 1, true);
    assert_reply(&d, true, 1, 0, 1);
    ck_assert_uint_eq(f.st.len, 1);
    d = call(&f.st, one, 1, 1, T0 + 3 * SEC, true);
    assert_reply(&d, false, 1, 0, -1);
    ck_assert_uint_eq(f.st.len, 0);
}
END_TEST

START_TEST(test_longest_retry_decides_among_denying_tiers)
{
    static const struct tier_limit ab[] = { { 10, 2 }, { 15, 10 } };
    static const struct tier_limit ba[] = { { 15, 10 }, { 10, 2 } };
    struct fixture f;
    struct limit_decision d;

    fixture_init(&f);
    call(&f.st, ab, 2, 8, T0, false);
    call(&f.st, ab, 2, 2, T0 + SEC, false);
    /* Both deny 6: the 2 s tier for 1 s, the 10 s tier for 9 s. */
    d = call(&f.st, ab, 2, 6, T0 + SEC, true);
    assert_reply(&d, true, 15, 5, 9 * SEC);
    d = call(&f.st, ba, 2, 6, T0 + SEC, true);
    assert_reply(&d, true, 15, 5, 9 * SEC);
    /* 3 passes the 10 s tier; the 2 s tier decides alone. */
    d = call(&f.st, ba, 2, 3, T0 + SEC, true);
    assert_reply(&d, true, 10, 0, SEC);
}
END_TEST

START_TEST(test_least_remaining_decides_an_allowed_request)
{
    static const struct tier_limit t[] = { { 100, 60 }, { 10, 1 }, { 48, 5 } };
    struct fixture f;
    struct limit_decision d;

    fixture_init(&f);
    for (int64_t s = 0; s < 4; s++) {
        ck_assert(!call(&f.st, t, 3, 10, T0 + s * SEC, false).limited);
    }
    /* Left after 3 more: 57 of 100, 7 of 10, 5 of 48. */
    d = call(&f.st, t, 3, 3, T0 + 4 * SEC, true);
    assert_reply(&d, false, 48, 5, -1);
    /* A check a second later: 60, 10, 18 left. */
    d = call(&f.st, t, 3, 0, T0 + 5 * SEC, true);
    assert_reply(&d, false, 10, 10, -1);
    ck_assert_int_eq(d.reset_after_ns, 58 * SEC);
}
END_TEST

START_TEST(test_expire_drops_buckets_past_the_largest_window)
{
    static const int64_t secs[] = { 0, 5, 14, 15 };
    struct fixture f;

    fixture_init(&f);
    for (uint32_t i = 0; i < N_OF(secs); i++) {
        tier_commit(&f.st, T0 + secs[i] * SEC, 1);
    }
    ck_assert_uint_eq(f.st.len, 4);
    tier_expire(&f.st, 15, T0 + 15 * SEC - 1);
    ck_assert_uint_eq(f.st.len, 4);
    tier_expire(&f.st, 15, T0 + 15 * SEC);
    ck_assert_uint_eq(f.st.len, 3);
    ck_assert_int_eq(f.b[0].sec, T0_S + 5);
    tier_expire(&f.st, 15, T0 + 29 * SEC);
    ck_assert_uint_eq(f.st.len, 1);
    ck_assert_int_eq(f.b[0].sec, T0_S + 15);
    tier_expire(&f.st, 15, T0 + 30 * SEC);
    ck_assert_uint_eq(f.st.len, 0);
}
END_TEST

START_TEST(test_commit_merges_a_second_and_needs_a_bucket_for_the_next)
{
    struct fixture f;

    fixture_init(&f);
    ck_assert(tier_needs_bucket(&f.st, T0));
    tier_commit(&f.st, T0 + SEC, 2);
    ck_assert(!tier_needs_bucket(&f.st, T0 + 2 * SEC - 1));
    tier_commit(&f.st, T0 + 2 * SEC - 1, 3);
    ck_assert_uint_eq(f.st.len, 1);
    ck_assert_int_eq(f.b[0].count, 5);
    ck_assert(tier_needs_bucket(&f.st, T0 + 2 * SEC));
    tier_commit(&f.st, T0 + 2 * SEC, 0);
    ck_assert_uint_eq(f.st.len, 1);

    /* Full: a commit that needs a bucket leaves the state alone. */
    f.st.cap = 1;
    tier_commit(&f.st, T0 + 2 * SEC, 1);
    ck_assert_uint_eq(f.st.len, 1);
    ck_assert_int_eq(f.b[0].count, 5);
}
END_TEST

START_TEST(test_refund_takes_newest_buckets_first_never_below_zero)
{
    static const struct tier_limit t[] = { { 10, 1 }, { 100, 60 } };
    struct fixture f;
    struct limit_decision d;

    fixture_init(&f);
    call(&f.st, t, 2, 5, T0, false);
    call(&f.st, t, 2, 4, T0 + SEC, false);
    call(&f.st, t, 2, 3, T0 + SEC, false);

    /* -9: second 1 (7) empties, second 0 keeps 3: 10 and 97 left. */
    d = call(&f.st, t, 2, -9, T0 + SEC, false);
    assert_reply(&d, false, 10, 10, -1);
    ck_assert_int_eq(d.reset_after_ns, 59 * SEC);
    ck_assert_uint_eq(f.st.len, 1);
    ck_assert_int_eq(f.b[0].count, 3);

    d = call(&f.st, t, 2, -100, T0 + SEC, false);
    assert_reply(&d, false, 10, 10, -1);
    ck_assert_int_eq(d.reset_after_ns, 0);
    ck_assert_int_le(d.fresh_at, T0 + SEC);
    ck_assert_uint_eq(f.st.len, 0);

    /* The room is back in every tier. */
    d = call(&f.st, t, 2, 10, T0 + SEC, false);
    assert_reply(&d, false, 10, 0, -1);
}
END_TEST

START_TEST(test_decide_never_modifies_the_state)
{
    static const int64_t costs[] = { 1, 0, -3, 999, 5000, INT64_MAX };
    struct fixture f;
    struct fixture before;

    fixture_init(&f);
    hit(&f.st, 1000, T0);
    hit(&f.st, 600, T0 + 2 * SEC);
    memcpy(&before, &f, sizeof(f));
    for (uint32_t i = 0; i < N_OF(costs); i++) {
        struct tier_params p = { seed, N_OF(seed), costs[i], 0 };
        struct limit_decision d;

        ck_assert_int_eq(tier_decide(&p, &f.st, T0 + 2 * SEC, &d), LIMIT_OK);
        ck_assert_mem_eq(&before, &f, sizeof(f));
    }
}
END_TEST

START_TEST(test_invalid_tiers_are_einval)
{
    static const struct tier_limit zero_limit[] = { { 10, 1 }, { 0, 5 } };
    static const struct tier_limit zero_window[] = { { 10, 0 } };
    static const struct tier_limit negative[] = { { -1, -1 } };
    const struct tier_params bad[] = {
        { seed, 0, 1, 0 }, { NULL, 3, 1, 0 }, { zero_limit, 2, 1, 0 },
        { zero_window, 1, 1, 0 }, { negative, 1, 1, 0 },
    };
    struct fixture f;
    struct limit_decision d;

    fixture_init(&f);
    memset(&d, 0x5a, sizeof(d));
    struct limit_decision untouched = d;
    for (uint32_t i = 0; i < N_OF(bad); i++) {
        ck_assert_int_eq(tier_decide(&bad[i], &f.st, T0, &d), LIMIT_EINVAL);
        ck_assert_mem_eq(&d, &untouched, sizeof(d));
    }
}
END_TEST

START_TEST(test_overflowing_inputs_are_rejected_not_wrapped)
{
    static const struct tier_limit huge[] = { { 5, 1 }, { 5, INT64_MAX } };
    static const struct tier_limit far[] = { { 5, INT64_C(7329916037) } };
    struct fixture f;
    struct limit_decision d;
    const struct tier_params over[] = {
        { huge, 2, 1, 0 }, { far, 1, 1, 0 }, { seed, 3, INT64_MIN, 0 },
    };

    fixture_init(&f);
    for (uint32_t i = 0; i < N_OF(over); i++) {
        ck_assert_int_eq(tier_decide(&over[i], &f.st, T0, &d),
                         LIMIT_EOVERFLOW);
    }
    const struct tier_params late = { seed, 3, 1, 0 };
    ck_assert_int_eq(tier_decide(&late, &f.st, INT64_MAX, &d),
                     LIMIT_EOVERFLOW);
    ck_assert_int_eq(tier_decide(&late, &f.st, INT64_MIN, &d), LIMIT_OK);

    /* Expiry with absurd windows: an end past INT64_MAX never comes. */
    tier_commit(&f.st, T0, 1);
    tier_expire(&f.st, INT64_MAX, INT64_MAX);
    ck_assert_uint_eq(f.st.len, 1);
    tier_expire(&f.st, INT64_MIN, INT64_MIN);
    ck_assert_uint_eq(f.st.len, 0);
    /* A refund of INT64_MIN clears everything, never wraps. */
    tier_commit(&f.st, T0, 7);
    tier_commit(&f.st, T0, INT64_MIN);
    ck_assert_uint_eq(f.st.len, 0);
}
END_TEST

START_TEST(test_extreme_costs_and_limits_answer_correctly)
{
    static const struct tier_limit max[] = { { INT64_MAX, 2 }, { 3, 1 } };
    struct fixture f;
    struct limit_decision d;

    fixture_init(&f);
    d = call(&f.st, max, 1, INT64_MAX, T0, false);
    assert_reply(&d, false, INT64_MAX, 0, -1);
    d = call(&f.st, max, 1, INT64_MAX, T0 + SEC, true);
    assert_reply(&d, true, INT64_MAX, 0, SEC);
    d = call(&f.st, max, 2, INT64_MAX, T0 + SEC, true);
    assert_reply(&d, true, 3, 3, -1);
    d = call(&f.st, max, 1, -INT64_MAX, T0 + SEC, false);
    assert_reply(&d, false, INT64_MAX, INT64_MAX, -1);
    ck_assert_uint_eq(f.st.len, 0);
}
END_TEST

static TCase *
tiers_tcase(void)
{
    TCase *tc = tcase_create("tiers");

    tcase_add_test(tc, test_seed_bursts_are_decided_by_the_tightest_tier);
    tcase_add_test(tc, test_denied_by_one_tier_counts_in_none);
    tcase_add_test(tc, test_bucket_counts_while_now_second_is_below_b_plus_w);
    tcase_add_test(tc, test_longest_retry_decides_among_denying_tiers);
    tcase_add_test(tc, test_least_remaining_decides_an_allowed_request);
    tcase_add_test(tc, test_refund_takes_newest_buckets_first_never_below_zero);
    tcase_add_test(tc, test_decide_never_modifies_the_state);
    return tc;
}

static TCase *
buckets_tcase(void)
{
    TCase *tc = tcase_create("buckets");

    tcase_add_test(tc, test_expire_drops_buckets_past_the_largest_window);
    tcase_add_test(tc,
                   test_commit_merges_a_second_and_needs_a_bucket_for_the_next);
    return tc;
}

static TCase *
edges_tcase(void)
{
    TCase *tc = tcase_create("edges");

    tcase_add_test(tc, test_invalid_tiers_are_einval);
    tcase_add_test(tc, test_overflowing_inputs_are_rejected_not_wrapped);
    tcase_add_test(tc, test_extreme_costs_and_limits_answer_correctly);
    return tc;
}

/* ---- retention: one key, calls with several windows -------------------- */

static struct limit_decision
call_keep(struct tier_state *st, int64_t limit, int64_t window, int64_t cost,
          int64_t keep, int64_t now, bool peek)
{
    const struct tier_limit t[] = { { limit, window } };
    struct tier_params p = { t, 1, cost, keep };
    struct limit_decision d;

    if (!peek) {
        tier_expire(st, keep, now);
    }
    ck_assert_int_eq(tier_decide(&p, st, now, &d), LIMIT_OK);
    if (!peek && !d.limited && cost != 0) {
        tier_commit(st, now, cost);
    }
    return d;
}

START_TEST(test_a_shorter_window_keeps_the_longer_ones_buckets)
{
    struct fixture f;

    fixture_init(&f);
    ck_assert(!call_keep(&f.st, 1, 3600, 1, 0, T0, false).limited);
    struct limit_decision d = call_keep(&f.st, 1, 1, 2, 3600, T0 + 2 * SEC,
                                        false);
    ck_assert(d.limited);               /* cost 2 > limit 1: never */
    ck_assert_uint_eq(f.st.len, 1);     /* and the hour's bucket stays */
    ck_assert(call_keep(&f.st, 1, 3600, 1, 3600, T0 + 2 * SEC, true).limited);
}
END_TEST

START_TEST(test_tiers_peek_answers_as_the_real_call)
{
    struct fixture a, b;

    fixture_init(&a);
    fixture_init(&b);
    for (int i = 0; i < 5; i++) {
        call_keep(&a.st, 100, 10, 3, 10, T0 + i * SEC, false);
        call_keep(&b.st, 100, 10, 3, 10, T0 + i * SEC, false);
    }
    int64_t now = T0 + 12 * SEC;
    for (int64_t w = 1; w <= 40; w += 3) {
        struct limit_decision real = call_keep(&a.st, 100, w, 0, 10, now,
                                               false);
        struct limit_decision look = call_keep(&b.st, 100, w, 0, 10, now,
                                               true);
        ck_assert_int_eq(real.remaining, look.remaining);
        ck_assert_int_eq(real.reset_after_ns, look.reset_after_ns);
    }
    ck_assert_uint_lt(a.st.len, b.st.len);
}
END_TEST

static TCase *
retention_tcase(void)
{
    TCase *tc = tcase_create("retention");

    tcase_add_test(tc, test_a_shorter_window_keeps_the_longer_ones_buckets);
    tcase_add_test(tc, test_tiers_peek_answers_as_the_real_call);
    return tc;
}

Suite *
tiers_suite(void)
{
    Suite *s = suite_create("tiers");

    suite_add_tcase(s, tiers_tcase());
    suite_add_tcase(s, buckets_tcase());
    suite_add_tcase(s, edges_tcase());
    suite_add_tcase(s, retention_tcase());
    return s;
}
