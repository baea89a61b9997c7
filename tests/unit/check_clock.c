/*
 * check_clock.c - the limiter clock never goes back, so a wall clock
 * stepped backwards (NTP, an operator) cannot refill a limiter.
 */
#include <check.h>
#include <stdint.h>
#include <time.h>

#include "algorithms/fixed_window.h"
#include "algorithms/gcra.h"
#include "algorithms/sliding_window.h"
#include "server/clock.h"
#include "tests/unit/suites.h"

#define SEC INT64_C(1000000000)
#define T0 (INT64_C(1893456000) * SEC)

START_TEST(test_clamp_follows_a_clock_that_moves_forward)
{
    wall_ns last = 0;
    ck_assert_int_eq(clock_clamp(&last, T0), T0);
    ck_assert_int_eq(clock_clamp(&last, T0 + 5), T0 + 5);
    ck_assert_int_eq(last, T0 + 5);
}
END_TEST

START_TEST(test_clamp_holds_time_while_the_clock_is_behind)
{
    wall_ns last = 0;
    clock_clamp(&last, T0 + 10 * SEC);
    ck_assert_int_eq(clock_clamp(&last, T0), T0 + 10 * SEC);
    ck_assert_int_eq(clock_clamp(&last, T0 + 9 * SEC), T0 + 10 * SEC);
    ck_assert_int_eq(clock_clamp(&last, T0 + 11 * SEC), T0 + 11 * SEC);
}
END_TEST

/* One allowed request per second, burst 1 (CL.THROTTLE k 0 1 1): the
 * clock jumps back an hour after the first request. Without the clamp the
 * stored TAT would be far "in the future" and the math stays safe anyway;
 * with it, time is frozen: nothing more is granted until real time passes
 * the old high-water mark. */
START_TEST(test_gcra_grants_no_more_when_the_clock_steps_back)
{
    struct gcra_params p = { 0, 1, 1, 1 };
    struct gcra_decision d;
    wall_ns last = 0;
    uint64_t tat = 0;
    int allowed = 0;
    int64_t raw[] = { T0, T0 - 3600 * SEC, T0 - 3599 * SEC, T0 - 10 * SEC,
                      T0 + SEC / 2, T0 + SEC };
    for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
        int64_t now = clock_clamp(&last, raw[i]);
        ck_assert_int_eq(gcra_throttle(&p, tat != 0, tat, now, &d), GCRA_OK);
        if (!d.limited) {
            allowed++;
            tat = d.new_tat;
        }
    }
    /* T0 and T0 + 1 s: exactly the rate, however the clock wandered. */
    ck_assert_int_eq(allowed, 2);
}
END_TEST

START_TEST(test_fixed_window_grants_no_more_when_the_clock_steps_back)
{
    struct fwin_params p = { 3, 60, 1, false, NULL };
    struct fwin_state st = { 0, 0 }, next;
    struct limit_decision d;
    wall_ns last = 0;
    bool has = false;
    int allowed = 0;
    /* The window opens at T0; the clock then steps back 2 minutes, which
     * without the clamp would look like a fresh window. */
    int64_t raw[] = { T0, T0 + SEC, T0 - 120 * SEC, T0 - 119 * SEC,
                      T0 - 60 * SEC, T0 + 2 * SEC };
    for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
        int64_t now = clock_clamp(&last, raw[i]);
        ck_assert_int_eq(fwin_apply(&p, has, &st, now, &next, &d), LIMIT_OK);
        if (!d.limited) {
            allowed++;
        }
        if (d.fresh_at > now) {
            st = next;
            has = true;
        }
    }
    ck_assert_int_eq(allowed, 3);
}
END_TEST

/* The sliding counter keys its state to epoch-aligned windows: a clock
 * stepped back into an earlier window would find the stored window "in the
 * future" and start from empty, granting a second full limit. The clamp
 * is what prevents that; this test fails without it. */
static int
sliding_allowed(bool clamp, const int64_t *raw, size_t n)
{
    struct swin_params p = { 3, 60, 1 };
    struct swin_state st = { 0, 0, 0 }, next;
    struct limit_decision d;
    wall_ns last = 0;
    bool has = false;
    int allowed = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t now = clamp ? clock_clamp(&last, raw[i]) : raw[i];
        ck_assert_int_eq(swin_apply(&p, has, &st, now, &next, &d), LIMIT_OK);
        if (!d.limited) {
            allowed++;
        }
        if (d.fresh_at > now) {
            st = next;
            has = true;
        }
    }
    return allowed;
}

START_TEST(test_sliding_window_grants_no_more_when_the_clock_steps_back)
{
    int64_t raw[] = { T0 + 59 * SEC, T0 + 59 * SEC, T0 + 59 * SEC,
                      T0 - 30 * SEC, T0 - 30 * SEC, T0 - 30 * SEC };
    ck_assert_int_eq(sliding_allowed(true, raw, 6), 3);
    /* What the clamp prevents: */
    ck_assert_int_eq(sliding_allowed(false, raw, 6), 6);
}
END_TEST

/* Requests that arrived in one read are decided at one instant: inside a
 * batch the limiter clock holds still however far time moves, and after
 * it the clock moves on. The wall clock is set by hand (no sleeping). */

START_TEST(test_batch_reads_the_clock_once)
{
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    clock_batch_open();
    ck_assert_int_eq(clock_wall_now(), T0);
    clock_set_fake_wall(T0 + 2000000);
    ck_assert_int_eq(clock_wall_now(), T0);
    clock_batch_close();
    ck_assert_int_eq(clock_wall_now(), T0 + 2000000);
    clock_set_fake_wall(0);
}
END_TEST

START_TEST(test_batch_reopened_reads_the_clock_again)
{
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    clock_batch_open();
    ck_assert_int_eq(clock_wall_now(), T0);
    clock_batch_close();
    clock_set_fake_wall(T0 + 7);
    clock_batch_open();
    ck_assert_int_eq(clock_wall_now(), T0 + 7);
    clock_batch_close();
    clock_set_fake_wall(0);
}
END_TEST

/* A clock set back holds the limiter clock where it was, as a real one
 * stepped back by NTP does; TIME follows the raw clock. */
START_TEST(test_a_fake_clock_set_back_is_clamped_too)
{
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    ck_assert_int_eq(clock_wall_now(), T0);
    clock_set_fake_wall(T0 - 5 * INT64_C(1000000000));
    ck_assert_int_eq(clock_wall_now(), T0);
    ck_assert_int_eq(clock_wall_us(), (T0 - 5 * INT64_C(1000000000)) / 1000);
    clock_set_fake_wall(0);
    clock_reset_clamp();
    ck_assert_int_gt(clock_wall_now(), T0 - INT64_C(1000000000) * 86400 * 3650);
}
END_TEST

Suite *
clock_suite(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = tcase_create("backwards");
    tcase_add_test(tc, test_clamp_follows_a_clock_that_moves_forward);
    tcase_add_test(tc, test_batch_reads_the_clock_once);
    tcase_add_test(tc, test_batch_reopened_reads_the_clock_again);
    tcase_add_test(tc, test_a_fake_clock_set_back_is_clamped_too);
    tcase_add_test(tc, test_clamp_holds_time_while_the_clock_is_behind);
    tcase_add_test(tc, test_gcra_grants_no_more_when_the_clock_steps_back);
    tcase_add_test(tc,
                   test_fixed_window_grants_no_more_when_the_clock_steps_back);
    tcase_add_test(tc,
                   test_sliding_window_grants_no_more_when_the_clock_steps_back);
    suite_add_tcase(s, tc);
    return s;
}
