/*
 * check_increx.c - INCREX's arithmetic: Redis's float text and the
 * bounds, overflow and SATURATE rules (the examples of Redis's
 * tests/unit/type/increx.tcl).
 */
#include <check.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/increx.h"
#include "tests/unit/suites.h"

static const char *
text(long double v)
{
    static char buf[INCREX_TEXT_MAX];
    ck_assert_uint_gt(increx_format_float(v, buf, sizeof(buf)), 0);
    return buf;
}

START_TEST(test_float_text_is_redis_human_form)
{
    ck_assert_str_eq(text(2.5L), "2.5");
    ck_assert_str_eq(text(-0.0L), "0");
    ck_assert_str_eq(text(1e-20L), "0");
    ck_assert_str_eq(text(3.0L), "3");
    ck_assert_str_eq(text(0.1L + 0.2L), "0.3");
    ck_assert_str_eq(text(-1.25L), "-1.25");
    ck_assert_uint_eq(strlen(text(LDBL_MAX)), 4933);
}
END_TEST

/* old (int) + BYINT inc within [lb, ub], saturate or not. */
static enum increx_status
run_int(int64_t old, int64_t inc, int64_t lb, int64_t ub, bool sat,
        int64_t *v, int64_t *d)
{
    struct increx_params p = { false, inc, 0, lb, ub, -LDBL_MAX, LDBL_MAX,
                               sat };
    struct increx_value o = { false, old, (long double)old }, out, applied;
    enum increx_status st = increx_apply(&p, &o, &out, &applied);
    *v = out.i;
    *d = applied.i;
    return st;
}

START_TEST(test_bounds_refuse_or_saturate)
{
    int64_t v, d;
    ck_assert_int_eq(run_int(10, 10, INT64_MIN, 15, false, &v, &d), INCREX_REFUSED);
    ck_assert_int_eq(run_int(5, 5, INT64_MIN, 10, false, &v, &d), INCREX_APPLIED);
    ck_assert_int_eq(v, 10);                    /* a bound is inside */
    ck_assert_int_eq(run_int(50, 100, INT64_MIN, 80, true, &v, &d), INCREX_APPLIED);
    ck_assert(v == 80 && d == 30);
    ck_assert_int_eq(run_int(10, -100, 0, INT64_MAX, true, &v, &d), INCREX_APPLIED);
    ck_assert(v == 0 && d == -10);
    ck_assert_int_eq(run_int(50, 5, INT64_MIN, 30, true, &v, &d), INCREX_APPLIED);
    ck_assert(v == 30 && d == -20);             /* back down to the bound */
    ck_assert_int_eq(run_int(50, -25, INT64_MIN, 30, false, &v, &d), INCREX_APPLIED);
    ck_assert(v == 25 && d == -25);
}
END_TEST

START_TEST(test_int64_overflow)
{
    int64_t v, d, big = INT64_C(9223372036854775800);
    ck_assert_int_eq(run_int(big, big, INT64_MIN, INT64_MAX, false, &v, &d),
                     INCREX_REFUSED);
    ck_assert_int_eq(run_int(big, big, INT64_MIN, INT64_MAX, true, &v, &d),
                     INCREX_APPLIED);
    ck_assert(v == INT64_MAX && d == 7);
    ck_assert_int_eq(run_int(-big, -big, INT64_MIN, INT64_MAX, true, &v, &d),
                     INCREX_APPLIED);
    ck_assert(v == INT64_MIN && d == -8);
    ck_assert_int_eq(run_int(big, 1, INT64_MIN, INT64_MIN, true, &v, &d),
                     INCREX_APPLIED_OVERFLOWS);
}
END_TEST

START_TEST(test_float_results_are_kept_as_their_text_reads)
{
    struct increx_params p = { true, 0, 0.5L, INT64_MIN, INT64_MAX,
                               -LDBL_MAX, LDBL_MAX, false };
    struct increx_value o = { false, 2, 2.0L }, out, applied;
    ck_assert_int_eq(increx_apply(&p, &o, &out, &applied), INCREX_APPLIED);
    ck_assert(out.is_float && out.f == 2.5L);
    p.inc_f = 0.5L;
    ck_assert_int_eq(increx_apply(&p, &out, &o, &applied), INCREX_APPLIED);
    ck_assert(!o.is_float && o.i == 3);         /* "3": an integer again */
    p.inc_f = LDBL_MAX;
    struct increx_value huge = { true, 0, LDBL_MAX };
    ck_assert_int_eq(increx_apply(&p, &huge, &out, &applied), INCREX_REFUSED);
    p.saturate = true;
    ck_assert_int_eq(increx_apply(&p, &huge, &out, &applied), INCREX_APPLIED);
    ck_assert(out.f == LDBL_MAX && applied.f == 0);
}
END_TEST

Suite *
increx_suite(void)
{
    Suite *s = suite_create("increx");
    TCase *tc = tcase_create("apply");
    tcase_add_test(tc, test_float_text_is_redis_human_form);
    tcase_add_test(tc, test_bounds_refuse_or_saturate);
    tcase_add_test(tc, test_int64_overflow);
    tcase_add_test(tc, test_float_results_are_kept_as_their_text_reads);
    suite_add_tcase(s, tc);
    return s;
}
