/*
 * check_num.c - unit tests for lib/num.c.
 *
 * Two parsers with different contracts: num_parse_i64 is Redis's string2ll
 * (canonical decimal only), num_parse_i64_rust is Rust's str::parse::<i64>
 * (what redis-cell applies to CL.THROTTLE's arguments). Both are driven by
 * tables of vectors; every rejected input must also leave *out untouched,
 * so a caller never reads a half-parsed value. Formatting is checked byte
 * for byte, including the two values whose magnitude does not fit int64.
 * The functions named after a C rule (num_atoll, num_atoi, num_strtod,
 * num_strtod_str) are checked against that C function itself, over the
 * edge cases where the rules of the other parsers differ.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/num.h"
#include "tests/unit/suites.h"

/* Written into *out before a parse that must fail: it has to survive. */
#define UNTOUCHED INT64_C(0x5a5a5a5a5a5a5a5a)

struct accept_vec {
    const char *in;
    int64_t want;
};

/* Lengths come from strlen, so no vector may hold an inner NUL; the NUL
 * cases are spelled out in their own tests. */
static const struct accept_vec strict_accepts[] = {
    { "0", 0 },
    { "1", 1 },
    { "-1", -1 },
    { "9", 9 },
    { "10", 10 },
    { "-10", -10 },
    { "1000000", 1000000 },
    { "9223372036854775807", INT64_MAX },
    { "-9223372036854775808", INT64_MIN },
    { "9223372036854775806", INT64_MAX - 1 },
    { "-9223372036854775807", -INT64_MAX },
};

static const char *const strict_rejects[] = {
    "",
    "-",
    "+",
    "+1",
    "+0",
    "01",
    "00",
    "-0",
    "-01",
    " 1",
    "1 ",
    "1a",
    "a1",
    "1.0",
    "1e3",
    "0x10",
    "--1",
    "-+1",
    "1-",
    "\t1",
    "1\r\n",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    "100000000000000000000",        /* 21 digits */
    "-100000000000000000000",
    "000000000000000000001",        /* 21 chars, small value */
    "123456789012345678901234567890",
};

static const struct accept_vec rust_accepts[] = {
    { "0", 0 },
    { "-0", 0 },
    { "+0", 0 },
    { "+5", 5 },
    { "-5", -5 },
    { "007", 7 },
    { "-007", -7 },
    { "+007", 7 },
    { "00000000000000000001", 1 },          /* 20 digits */
    { "000000000000000000000000000042", 42 },
    { "9223372036854775807", INT64_MAX },
    { "+9223372036854775807", INT64_MAX },
    { "-9223372036854775808", INT64_MIN },
    { "00009223372036854775807", INT64_MAX },
    { "-00009223372036854775808", INT64_MIN },
};

static const char *const rust_rejects[] = {
    "",
    "+",
    "-",
    "--1",
    "++1",
    "+-1",
    "-+1",
    " 1",
    "1 ",
    "1.5",
    "1e3",
    "0x10",
    "1_000",
    "a",
    "1a",
    "9223372036854775808",
    "+9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "100000000000000000000",
};

static void
check_accepts(bool (*parse)(const char *, size_t, int64_t *),
              const struct accept_vec *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t out = UNTOUCHED;
        ck_assert_msg(parse(v[i].in, strlen(v[i].in), &out),
                      "\"%s\" was rejected", v[i].in);
        ck_assert_msg(out == v[i].want, "\"%s\" gave %lld, want %lld",
                      v[i].in, (long long)out, (long long)v[i].want);
    }
}

static void
check_rejects(bool (*parse)(const char *, size_t, int64_t *),
              const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t out = UNTOUCHED;
        ck_assert_msg(!parse(v[i], strlen(v[i]), &out),
                      "\"%s\" was accepted as %lld", v[i], (long long)out);
        ck_assert_msg(out == UNTOUCHED, "\"%s\" wrote *out on failure", v[i]);
    }
}

/* Format v with num_fmt_i64 and compare with want, byte for byte. */
static void
check_fmt_i64(int64_t v, const char *want)
{
    char buf[NUM_I64_MAXLEN + 8];
    memset(buf, '#', sizeof(buf));
    size_t n = num_fmt_i64(buf, v);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_mem_eq(buf, want, n);
    /* Not NUL-terminated, and nothing written past the digits. */
    ck_assert_int_eq(buf[n], '#');
}

static void
check_fmt_u64(uint64_t v, const char *want)
{
    char buf[NUM_I64_MAXLEN + 8];
    memset(buf, '#', sizeof(buf));
    size_t n = num_fmt_u64(buf, v);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_mem_eq(buf, want, n);
    ck_assert_int_eq(buf[n], '#');
}

/* ------------------------------------------------------------------------
 * num_parse_i64: Redis's string2ll
 * --------------------------------------------------------------------- */

START_TEST(test_strict_accepts_canonical_decimals_and_both_limits)
{
    check_accepts(num_parse_i64, strict_accepts,
                  sizeof(strict_accepts) / sizeof(strict_accepts[0]));
}
END_TEST

START_TEST(test_strict_rejects_signs_zeros_spaces_junk_and_overflow)
{
    check_rejects(num_parse_i64, strict_rejects,
                  sizeof(strict_rejects) / sizeof(strict_rejects[0]));
}
END_TEST

START_TEST(test_strict_reads_only_len_bytes)
{
    int64_t out = UNTOUCHED;
    /* The bytes past len are not part of the number. */
    ck_assert(num_parse_i64("12345", 3, &out));
    ck_assert_int_eq(out, 123);
    ck_assert(num_parse_i64("-7\r\n", 2, &out));
    ck_assert_int_eq(out, -7);
    ck_assert(num_parse_i64("0123", 1, &out));
    ck_assert_int_eq(out, 0);
}
END_TEST

START_TEST(test_strict_rejects_a_nul_inside_the_length)
{
    int64_t out = UNTOUCHED;
    ck_assert(!num_parse_i64("1\0" "2", 3, &out));
    ck_assert(!num_parse_i64("\0", 1, &out));
    ck_assert(!num_parse_i64("-\0" "1", 3, &out));
    ck_assert_int_eq(out, UNTOUCHED);
}
END_TEST

START_TEST(test_strict_rejects_21_or_more_characters)
{
    /* No canonical int64 is longer than 20 bytes ("-" and 19 digits). */
    int64_t out = UNTOUCHED;
    ck_assert(!num_parse_i64("111111111111111111111", 21, &out));
    ck_assert(!num_parse_i64("-9223372036854775808 ", 21, &out));
    ck_assert_int_eq(out, UNTOUCHED);
}
END_TEST

START_TEST(test_strict_every_power_of_ten_round_trips)
{
    /* 10^18 is the largest power of ten in int64. */
    int64_t v = 1;
    for (int e = 0; e <= 18; e++) {
        char buf[NUM_I64_MAXLEN];
        int64_t out = UNTOUCHED;
        size_t n = num_fmt_i64(buf, v);
        ck_assert(num_parse_i64(buf, n, &out));
        ck_assert_int_eq(out, v);
        n = num_fmt_i64(buf, -v);
        ck_assert(num_parse_i64(buf, n, &out));
        ck_assert_int_eq(out, -v);
        if (e < 18) {
            v *= 10;
        }
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * num_parse_i64_rust: Rust's str::parse::<i64>
 * --------------------------------------------------------------------- */

START_TEST(test_rust_accepts_plus_minus_zero_and_leading_zeros)
{
    check_accepts(num_parse_i64_rust, rust_accepts,
                  sizeof(rust_accepts) / sizeof(rust_accepts[0]));
}
END_TEST

START_TEST(test_rust_rejects_empty_lone_or_double_signs_and_overflow)
{
    check_rejects(num_parse_i64_rust, rust_rejects,
                  sizeof(rust_rejects) / sizeof(rust_rejects[0]));
}
END_TEST

START_TEST(test_rust_reads_only_len_bytes)
{
    int64_t out = UNTOUCHED;
    ck_assert(num_parse_i64_rust("+12x", 3, &out));
    ck_assert_int_eq(out, 12);
    ck_assert(!num_parse_i64_rust("+12", 1, &out));
    ck_assert(!num_parse_i64_rust("5", 0, &out));
    ck_assert_int_eq(out, 12);
}
END_TEST

/* ------------------------------------------------------------------------
 * Formatting
 * --------------------------------------------------------------------- */

START_TEST(test_fmt_i64_zero_positive_and_negative)
{
    check_fmt_i64(0, "0");
    check_fmt_i64(7, "7");
    check_fmt_i64(-1, "-1");
    check_fmt_i64(10, "10");
    check_fmt_i64(-10, "-10");
    check_fmt_i64(1234567890, "1234567890");
    check_fmt_i64(-1234567890, "-1234567890");
}
END_TEST

START_TEST(test_fmt_i64_extremes)
{
    check_fmt_i64(INT64_MAX, "9223372036854775807");
    check_fmt_i64(INT64_MIN, "-9223372036854775808");
    check_fmt_i64(INT64_MIN + 1, "-9223372036854775807");
}
END_TEST

START_TEST(test_fmt_i64_min_fits_num_i64_maxlen)
{
    char buf[NUM_I64_MAXLEN];
    ck_assert_uint_lt(num_fmt_i64(buf, INT64_MIN), NUM_I64_MAXLEN);
}
END_TEST

START_TEST(test_fmt_u64_zero_and_max)
{
    check_fmt_u64(0, "0");
    check_fmt_u64(1, "1");
    check_fmt_u64((uint64_t)INT64_MAX + 1, "9223372036854775808");
    check_fmt_u64(UINT64_MAX, "18446744073709551615");
}
END_TEST

/* Every digit count and both sides of each power of ten, against
 * snprintf: the formatter fills two digits at a time from the right. */
START_TEST(test_fmt_u64_matches_snprintf_at_every_digit_count)
{
    char want[32];
    for (uint64_t v = 0; v < 2000; v++) {
        snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
        check_fmt_u64(v, want);
    }
    uint64_t p = 10;
    for (int e = 1; e <= 19; e++, p *= 10) {
        const uint64_t vals[] = { p - 1, p, p + 1, p * 5 + 3 };
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
            snprintf(want, sizeof(want), "%llu", (unsigned long long)vals[i]);
            check_fmt_u64(vals[i], want);
            if (vals[i] <= (uint64_t)INT64_MAX) {
                snprintf(want, sizeof(want), "-%llu",
                         (unsigned long long)vals[i]);
                check_fmt_i64(-(int64_t)vals[i], vals[i] ? want : "0");
            }
        }
    }
}
END_TEST

START_TEST(test_fmt_then_strict_parse_round_trips_boundaries)
{
    const int64_t vals[] = { 0, 1, -1, 9, -9, 99, -99, INT64_MAX,
                             INT64_MIN, INT64_MAX - 1, INT64_MIN + 1 };
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        char buf[NUM_I64_MAXLEN];
        int64_t out = UNTOUCHED;
        size_t n = num_fmt_i64(buf, vals[i]);
        ck_assert(num_parse_i64(buf, n, &out));
        ck_assert_int_eq(out, vals[i]);
        out = UNTOUCHED;
        ck_assert(num_parse_i64_rust(buf, n, &out));
        ck_assert_int_eq(out, vals[i]);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * num_atoll, num_atoi: C's strtoll and glibc's atoi
 * --------------------------------------------------------------------- */

/* Where the C rule and Redis's string2ll part ways: blanks, signs, junk
 * after the digits, no digits, leading zeros, hex, floats, overflow. */
static const char *const atoi_vectors[] = {
    "", "0", "12", "  12", "\t\n\v\f\r12", "12abc", "12 34", "abc", "+5",
    "-5", "-0", "+0", "+-1", "-+1", " - 1", "007", "0x1A", "1e3", "1.9",
    "inf", "nan", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "4294967296", "4294967297", "-4294967296", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "99999999999999999999999", "-99999999999999999999999",
};
#define N_ATOI_VECTORS (sizeof(atoi_vectors) / sizeof(atoi_vectors[0]))

START_TEST(test_atoll_is_strtoll_base_10)
{
    for (size_t i = 0; i < N_ATOI_VECTORS; i++) {
        const char *s = atoi_vectors[i];
        ck_assert_msg(num_atoll(s) == (int64_t)strtoll(s, NULL, 10),
                      "num_atoll(\"%s\")", s);
    }
}
END_TEST

START_TEST(test_atoll_clamps_and_stops_at_the_first_non_digit)
{
    ck_assert_int_eq(num_atoll(""), 0);
    ck_assert_int_eq(num_atoll("  -12abc"), -12);
    ck_assert_int_eq(num_atoll("0x1A"), 0);
    ck_assert_int_eq(num_atoll("-0"), 0);
    ck_assert_int_eq(num_atoll("9223372036854775808"), INT64_MAX);
    ck_assert_int_eq(num_atoll("-9223372036854775809"), INT64_MIN);
    ck_assert_int_eq(num_atoll("-9223372036854775808"), INT64_MIN);
}
END_TEST

START_TEST(test_atoi_is_glibc_atoi)
{
    for (size_t i = 0; i < N_ATOI_VECTORS; i++) {
        const char *s = atoi_vectors[i];
        ck_assert_msg(num_atoi(s) == (int)strtol(s, NULL, 10),
                      "num_atoi(\"%s\")", s);
    }
    /* The values cut to their low 32 bits, as glibc's atoi returns them. */
    ck_assert_int_eq(num_atoi("4294967297"), 1);
    ck_assert_int_eq(num_atoi("4294967296"), 0);
    ck_assert_int_eq(num_atoi("2147483648"), INT_MIN);
    ck_assert_int_eq(num_atoi("99999999999999999999"), -1);
    ck_assert_int_eq(num_atoi(" 3 keys"), 3);
}
END_TEST

/* ------------------------------------------------------------------------
 * num_strtod, num_strtod_str: C's strtod
 * --------------------------------------------------------------------- */

/* strtod's forms that num_parse_double refuses pass both: blanks before,
 * '+', hex, "inf", "nan", overflow and underflow. */
static const char *const strtod_accepts[] = {
    "1.5", "  1", "\t-2", "+1", "-0", "0x10", "0x1p3", "inf", "-Infinity",
    "nan", "NAN", "1e999", "-1e999", "1e-999", ".5", "5.", "1e3",
};

/* Not a number taking the whole text. */
static const char *const strtod_rejects[] = {
    "1 ", "12abc", "abc", "-", "+", ".", "e3", "1e", "0x", " ", "1,5",
};

START_TEST(test_strtod_takes_every_strtod_form)
{
    for (size_t i = 0; i < sizeof(strtod_accepts) / sizeof(*strtod_accepts);
         i++) {
        const char *s = strtod_accepts[i];
        double want = strtod(s, NULL), got = 0.5, got_str = 0.5;
        ck_assert_msg(num_strtod(s, strlen(s), &got), "num_strtod %s", s);
        ck_assert_msg(num_strtod_str(s, &got_str), "num_strtod_str %s", s);
        ck_assert_msg(isnan(want) ? isnan(got) && isnan(got_str)
                                  : memcmp(&got, &want, sizeof(want)) == 0 &&
                                        memcmp(&got_str, &want,
                                               sizeof(want)) == 0,
                      "value of %s", s);
    }
}
END_TEST

START_TEST(test_strtod_refuses_text_after_the_number)
{
    for (size_t i = 0; i < sizeof(strtod_rejects) / sizeof(*strtod_rejects);
         i++) {
        const char *s = strtod_rejects[i];
        double out = 0.25;
        ck_assert_msg(!num_strtod(s, strlen(s), &out), "num_strtod %s", s);
        ck_assert_msg(!num_strtod_str(s, &out), "num_strtod_str %s", s);
        ck_assert(out == 0.25);
    }
}
END_TEST

START_TEST(test_strtod_reads_len_bytes_and_a_nul_inside_ends_it_short)
{
    double out = 0.25;
    ck_assert(num_strtod("1.5xyz", 3, &out));
    ck_assert(out == 1.5);
    ck_assert(!num_strtod("1\0" "2", 3, &out));
    ck_assert(!num_strtod("", 0, &out));
    ck_assert(out == 1.5);
}
END_TEST

START_TEST(test_strtod_takes_up_to_num_strtod_maxlen_bytes)
{
    static char buf[NUM_STRTOD_MAXLEN + 2];
    double out = 0.25;
    memset(buf, '0', sizeof(buf) - 1);
    buf[NUM_STRTOD_MAXLEN - 1] = '7';
    ck_assert(num_strtod(buf, NUM_STRTOD_MAXLEN, &out));
    ck_assert(out == 7.0);
    ck_assert(!num_strtod(buf, NUM_STRTOD_MAXLEN + 1, &out));
    ck_assert(out == 7.0);
}
END_TEST

START_TEST(test_strtod_str_reads_up_to_the_nul)
{
    double out = 0.25;
    /* "" reads 0, as strtod leaves it (Redis's "(" bound is 0 open). */
    ck_assert(num_strtod_str("", &out));
    ck_assert(out == 0.0);
    /* Bytes after a NUL are not looked at. */
    ck_assert(num_strtod_str("2\0" "junk", &out));
    ck_assert(out == 2.0);
    ck_assert(num_strtod_str("-0", &out));
    ck_assert(out == 0.0 && signbit(out));
}
END_TEST

Suite *
num_suite(void)
{
    Suite *s = suite_create("num");

    TCase *tc = tcase_create("strict");
    tcase_add_test(tc, test_strict_accepts_canonical_decimals_and_both_limits);
    tcase_add_test(tc,
                   test_strict_rejects_signs_zeros_spaces_junk_and_overflow);
    tcase_add_test(tc, test_strict_reads_only_len_bytes);
    tcase_add_test(tc, test_strict_rejects_a_nul_inside_the_length);
    tcase_add_test(tc, test_strict_rejects_21_or_more_characters);
    tcase_add_test(tc, test_strict_every_power_of_ten_round_trips);
    suite_add_tcase(s, tc);

    tc = tcase_create("rust");
    tcase_add_test(tc, test_rust_accepts_plus_minus_zero_and_leading_zeros);
    tcase_add_test(tc,
                   test_rust_rejects_empty_lone_or_double_signs_and_overflow);
    tcase_add_test(tc, test_rust_reads_only_len_bytes);
    suite_add_tcase(s, tc);

    tc = tcase_create("format");
    tcase_add_test(tc, test_fmt_i64_zero_positive_and_negative);
    tcase_add_test(tc, test_fmt_i64_extremes);
    tcase_add_test(tc, test_fmt_i64_min_fits_num_i64_maxlen);
    tcase_add_test(tc, test_fmt_u64_zero_and_max);
    tcase_add_test(tc, test_fmt_u64_matches_snprintf_at_every_digit_count);
    tcase_add_test(tc, test_fmt_then_strict_parse_round_trips_boundaries);
    suite_add_tcase(s, tc);

    tc = tcase_create("atoi");
    tcase_add_test(tc, test_atoll_is_strtoll_base_10);
    tcase_add_test(tc, test_atoll_clamps_and_stops_at_the_first_non_digit);
    tcase_add_test(tc, test_atoi_is_glibc_atoi);
    suite_add_tcase(s, tc);

    tc = tcase_create("strtod");
    tcase_add_test(tc, test_strtod_takes_every_strtod_form);
    tcase_add_test(tc, test_strtod_refuses_text_after_the_number);
    tcase_add_test(tc,
                   test_strtod_reads_len_bytes_and_a_nul_inside_ends_it_short);
    tcase_add_test(tc, test_strtod_takes_up_to_num_strtod_maxlen_bytes);
    tcase_add_test(tc, test_strtod_str_reads_up_to_the_nul);
    suite_add_tcase(s, tc);

    return s;
}
