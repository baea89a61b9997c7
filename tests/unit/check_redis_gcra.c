/*
 * check_redis_gcra.c - the GCRA of Redis's GCRA command: the worked
 * examples of its spec and the assertions of Redis's own tests
 * (tests/unit/gcra.tcl), driven through redis_gcra_decide() with a model
 * of the key (it exists through the millisecond of its TAT, as a PEXPIREAT
 * key does; only allowed requests write it).
 */
#include <check.h>
#include <stdint.h>

#include "algorithms/redis_gcra.h"
#include "tests/unit/suites.h"

#define MS INT64_C(1000)                    /* in µs */
#define SEC INT64_C(1000000)
#define T0 (INT64_C(1893456000000) * MS)    /* 2030-01-01, a whole ms */

struct key {
    bool exists;
    int64_t tat_us;
};

/* One GCRA call at T0 + at_us: its reply (the status must be OK). */
static void
call(struct key *k, int64_t burst, int64_t per_period, double period,
     int64_t tokens, int64_t at_us, const int64_t want[5])
{
    struct redis_gcra_params p = { burst + 1, per_period, period, tokens };
    struct redis_gcra_decision d;
    int64_t now = T0 + at_us;
    if (k->exists && now / MS > k->tat_us / MS) {
        k->exists = false;                  /* expired at its TAT's ms */
    }
    ck_assert_int_eq(redis_gcra_decide(&p, k->exists, k->tat_us, now, &d),
                     REDIS_GCRA_OK);
    int64_t got[5] = { d.limited, d.limit, d.remaining, d.retry_after_s,
                       d.reset_after_s };
    for (int i = 0; i < 5; i++) {
        ck_assert_msg(got[i] == want[i], "at %lld field %d: %lld, want %lld",
                      (long long)at_us, i, (long long)got[i],
                      (long long)want[i]);
    }
    ck_assert(d.store == !d.limited);
    if (d.store) {
        k->exists = true;
        k->tat_us = d.new_tat_us;
    }
}

START_TEST(test_the_spec_examples)
{
    struct key k = { 0 };
    call(&k, 5, 10, 60, 1, 0, (int64_t[5]){ 0, 6, 5, -1, 6 });
    struct key fresh = { 0 };
    /* 10 tokens never fit a burst of 6: limited, no retry, nothing kept. */
    call(&fresh, 5, 1, 60, 10, 0, (int64_t[5]){ 1, 6, 6, -1, 0 });
    ck_assert(!fresh.exists);
}
END_TEST

START_TEST(test_a_burst_then_limited_with_a_retry)
{
    struct key k = { 0 };
    call(&k, 2, 1, 60, 1, 0, (int64_t[5]){ 0, 3, 2, -1, 60 });
    call(&k, 2, 1, 60, 1, 0, (int64_t[5]){ 0, 3, 1, -1, 120 });
    call(&k, 2, 1, 60, 1, 0, (int64_t[5]){ 0, 3, 0, -1, 180 });
    call(&k, 2, 1, 60, 1, 0, (int64_t[5]){ 1, 3, 0, 60, 180 });
    int64_t tat = k.tat_us;
    call(&k, 2, 1, 60, 1, 30 * SEC, (int64_t[5]){ 1, 3, 0, 30, 150 });
    ck_assert_int_eq(k.tat_us, tat);        /* limited writes nothing */
    call(&k, 2, 1, 60, 1, 60 * SEC, (int64_t[5]){ 0, 3, 0, -1, 180 });
}
END_TEST

START_TEST(test_six_allowed_then_the_seventh_limited)
{
    struct key k = { 0 };
    for (int64_t i = 0; i < 6; i++) {
        call(&k, 5, 1, 60, 1, 0,
             (int64_t[5]){ 0, 6, 5 - i, -1, 60 * (i + 1) });
    }
    call(&k, 5, 1, 60, 1, 0, (int64_t[5]){ 1, 6, 0, 60, 360 });
}
END_TEST

START_TEST(test_tokens_cost_several_and_reset_follows)
{
    struct key k = { 0 };
    call(&k, 5, 1, 60, 3, 0, (int64_t[5]){ 0, 6, 3, -1, 180 });
    struct key k2 = { 0 };
    call(&k2, 5, 1, 60, 1, 0, (int64_t[5]){ 0, 6, 5, -1, 60 });
    call(&k2, 5, 1, 60, 4, 0, (int64_t[5]){ 0, 6, 1, -1, 300 });
}
END_TEST

START_TEST(test_one_per_second_frees_again_after_the_period)
{
    struct key k = { 0 };
    call(&k, 1, 1, 1, 1, 0, (int64_t[5]){ 0, 2, 1, -1, 1 });
    call(&k, 1, 1, 1, 1, 0, (int64_t[5]){ 0, 2, 0, -1, 2 });
    call(&k, 1, 1, 1, 1, 0, (int64_t[5]){ 1, 2, 0, 1, 2 });
    /* 1.1 s on: the TAT (2 s) moves to 3 s, 1.9 s from now. */
    call(&k, 1, 1, 1, 1, 1100 * MS, (int64_t[5]){ 0, 2, 0, -1, 2 });
}
END_TEST

START_TEST(test_zero_burst_allows_one)
{
    struct key k = { 0 };
    call(&k, 0, 1, 1, 1, 0, (int64_t[5]){ 0, 1, 0, -1, 1 });
    call(&k, 0, 1, 1, 1, 0, (int64_t[5]){ 1, 1, 0, 1, 1 });
    call(&k, 0, 1, 1, 1, 999 * MS, (int64_t[5]){ 1, 1, 0, 1, 1 });
    call(&k, 0, 1, 1, 1, 1000 * MS, (int64_t[5]){ 0, 1, 0, -1, 1 });
    /* The key lives through its TAT's millisecond (2 s), then is gone. */
    call(&k, 0, 1, 1, 1, 2001 * MS, (int64_t[5]){ 0, 1, 0, -1, 1 });
    ck_assert_int_eq(k.tat_us, T0 + 3001 * MS);
}
END_TEST

START_TEST(test_the_interval_rounds_to_the_nearest_microsecond)
{
    /* 0.5 s / 3 = 166666.67 µs -> 166667; tau = 2 T. */
    struct key k = { 0 };
    call(&k, 1, 3, 0.5, 1, 0, (int64_t[5]){ 0, 2, 1, -1, 1 });
    call(&k, 1, 3, 0.5, 1, 0, (int64_t[5]){ 0, 2, 0, -1, 1 });
    ck_assert_int_eq(k.tat_us, T0 + 2 * 166667);
    /* A period far below a microsecond per token still costs 1 µs. */
    struct key tiny = { 0 };
    call(&tiny, 0, 1000000000, 1e-3, 1, 0, (int64_t[5]){ 0, 1, 0, -1, 1 });
    ck_assert_int_eq(tiny.tat_us, T0 + 1);
}
END_TEST

START_TEST(test_overflows_are_refused)
{
    struct redis_gcra_decision d;
    struct redis_gcra_params tokens = { 2, 1, 86400, 200000000 };
    struct redis_gcra_params burst = { 200000001, 1, 86400, 1 };
    struct redis_gcra_params both = { 2, 1, 2147483647, 2147483647 };
    struct redis_gcra_params tat = { 2, 1, 1, 1 };
    ck_assert_int_eq(redis_gcra_decide(&tokens, false, 0, T0, &d),
                     REDIS_GCRA_OVERFLOW_TOKENS);
    ck_assert_int_eq(redis_gcra_decide(&burst, false, 0, T0, &d),
                     REDIS_GCRA_OVERFLOW_BURST);
    ck_assert_int_eq(redis_gcra_decide(&both, false, 0, T0, &d),
                     REDIS_GCRA_OVERFLOW_TOKENS);
    ck_assert_int_eq(redis_gcra_decide(&tat, true, INT64_MAX, T0, &d),
                     REDIS_GCRA_OVERFLOW_TOKENS);
}
END_TEST

Suite *
redis_gcra_suite(void)
{
    Suite *s = suite_create("redis_gcra");
    TCase *tc = tcase_create("decide");
    tcase_add_test(tc, test_the_spec_examples);
    tcase_add_test(tc, test_a_burst_then_limited_with_a_retry);
    tcase_add_test(tc, test_six_allowed_then_the_seventh_limited);
    tcase_add_test(tc, test_tokens_cost_several_and_reset_follows);
    tcase_add_test(tc, test_one_per_second_frees_again_after_the_period);
    tcase_add_test(tc, test_zero_burst_allows_one);
    tcase_add_test(tc, test_the_interval_rounds_to_the_nearest_microsecond);
    tcase_add_test(tc, test_overflows_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
