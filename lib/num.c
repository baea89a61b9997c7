/*
 * num.c - decimal parsing and formatting without libc's locale-aware and
 * errno-driven strtoll, and without snprintf on the reply path (doubles
 * alone go through strtod, as Redis's string2d does; the C locale). The
 * numbers Redis reads with atoi or a bare strtod are read here too, by
 * functions named after the C rule they keep (num_atoi, num_strtod...).
 */
#include "lib/num.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Accumulate digits s[0..len) into *out as a magnitude, rejecting overflow of
 * `limit`. Returns false on a non-digit or overflow. */
static bool
parse_magnitude(const char *s, size_t len, uint64_t limit, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9) {
            return false;
        }
        if (v > (limit - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Apply the sign to a magnitude already checked against the right limit. */
static int64_t
apply_sign(uint64_t mag, bool negative)
{
    if (!negative) {
        return (int64_t)mag;
    }
    if (mag == (uint64_t)INT64_MAX + 1) {
        return INT64_MIN;
    }
    return -(int64_t)mag;
}

/* Up to 18 digits and nothing else: the value, which cannot overflow
 * (10^18 - 1 < INT64_MAX). The common case of both parsers. */
static inline bool
parse_short(const char *s, size_t len, int64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = (int64_t)v;
    return true;
}

bool
num_parse_i64(const char *s, size_t len, int64_t *out)
{
    bool negative = false;
    uint64_t mag;

    /* No sign, no leading zero: canonical whenever all are digits. */
    if (len - 1 < 18 && (unsigned)((unsigned char)s[0] - '1') < 9) {
        return parse_short(s, len, out);
    }

    if (len == 0 || len >= NUM_I64_MAXLEN) {
        return false;
    }
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return true;
    }
    if (s[0] == '-') {
        negative = true;
        s++;
        len--;
    }
    /* No leading zero, and "-0" is not a canonical number either. */
    if (len == 0 || s[0] < '1' || s[0] > '9') {
        return false;
    }
    if (!parse_magnitude(s, len, negative ? (uint64_t)INT64_MAX + 1
                                          : (uint64_t)INT64_MAX, &mag)) {
        return false;
    }
    *out = apply_sign(mag, negative);
    return true;
}

bool
num_parse_i64_rust(const char *s, size_t len, int64_t *out)
{
    bool negative = false;
    uint64_t mag;

    if (len - 1 < 18 && (unsigned)((unsigned char)s[0] - '0') < 10) {
        return parse_short(s, len, out);
    }

    if (len > 0 && (s[0] == '-' || s[0] == '+')) {
        negative = s[0] == '-';
        s++;
        len--;
    }
    if (!parse_magnitude(s, len, negative ? (uint64_t)INT64_MAX + 1
                                          : (uint64_t)INT64_MAX, &mag)) {
        return false;
    }
    *out = apply_sign(mag, negative);
    return true;
}

/* "00" .. "99": two digits per division, half the divisions of a
 * digit-at-a-time loop (the formatting of reply integers is on every
 * limiter reply). */
static const char digit_pairs[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Decimal digits in v (1 for 0). */
static size_t
digits_u64(uint64_t v)
{
    size_t n = 1;
    for (;;) {
        if (v < 10) {
            return n;
        }
        if (v < 100) {
            return n + 1;
        }
        if (v < 1000) {
            return n + 2;
        }
        if (v < 10000) {
            return n + 3;
        }
        v /= 10000;
        n += 4;
    }
}

/* The same for v < 2^32, in one ladder of comparisons. */
static inline size_t
digits_u32(uint32_t v)
{
    if (v < 100000) {
        return v < 100 ? 1 + (v >= 10)
                       : v < 10000 ? 3 + (v >= 1000) : 5;
    }
    return v < 10000000 ? 6 + (v >= 1000000)
                        : v < 1000000000 ? 8 + (v >= 100000000) : 10;
}

/* Two digits of d < 100 at p. */
static inline void
put_pair(char *p, unsigned d)
{
    p[0] = digit_pairs[2 * d];
    p[1] = digit_pairs[2 * d + 1];
}

size_t
num_fmt_u64(char *buf, uint64_t v)
{
    size_t n;
    char *p;
    if (v <= UINT32_MAX) {
        /* Nearly every value: 32-bit divisions are cheaper. */
        uint32_t w = (uint32_t)v;
        n = digits_u32(w);
        p = buf + n;
        while (w >= 100) {
            uint32_t q = w / 100;
            p -= 2;
            put_pair(p, w - q * 100);
            w = q;
        }
        if (w >= 10) {
            put_pair(p - 2, w);
        } else {
            p[-1] = (char)('0' + w);
        }
        return n;
    }
    n = digits_u64(v);
    p = buf + n;
    /* Fill from the right, two digits at a time. */
    while (v >= 100) {
        unsigned pair = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        put_pair(p, pair);
    }
    if (v >= 10) {
        put_pair(p - 2, (unsigned)v);
    } else {
        p[-1] = (char)('0' + v);
    }
    return n;
}

size_t
num_fmt_i64(char *buf, int64_t v)
{
    if (v < 0) {
        buf[0] = '-';
        /* Negate in unsigned arithmetic so INT64_MIN does not overflow. */
        return 1 + num_fmt_u64(buf + 1, (uint64_t)0 - (uint64_t)v);
    }
    return num_fmt_u64(buf, (uint64_t)v);
}

bool
num_decimal_syntax(const char *s, size_t len)
{
    size_t i = len > 0 && s[0] == '-';
    if (i == len || s[i] < '0' || s[i] > '9' ||
        (s[i] == '0' && (len - i > 1 || i == 1))) {
        return false;       /* empty, a leading zero, or "-0" */
    }
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
    }
    return true;
}

bool
num_parse_u64_digits(const char *s, size_t len, uint64_t *out)
{
    return parse_magnitude(s, len, UINT64_MAX, out);
}

/* strtod over s[0..len) copied into buf (room for len + 1 bytes) with a
 * NUL after it, since s need not end in one; *whole tells whether the
 * number took all len bytes (a NUL inside stops strtod short). errno is as
 * strtod leaves it. */
static double
strtod_copy(const char *s, size_t len, char *buf, bool *whole)
{
    char *end;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    double v = strtod(buf, &end);
    *whole = (size_t)(end - buf) == len;
    return v;
}

bool
num_parse_double(const char *s, size_t len, double *out)
{
    char buf[NUM_DOUBLE_MAXLEN + 1];
    bool whole;
    if (len == 0 || len > NUM_DOUBLE_MAXLEN ||
        isspace((unsigned char)s[0])) {
        return false;
    }
    double v = strtod_copy(s, len, buf, &whole);
    if (!whole || isnan(v) ||
        (errno == ERANGE &&
         (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO))) {
        return false;
    }
    *out = v;
    return true;
}

bool
num_strtod(const char *s, size_t len, double *out)
{
    char buf[NUM_STRTOD_MAXLEN + 1];
    bool whole;
    if (len == 0 || len > NUM_STRTOD_MAXLEN) {
        return false;
    }
    double v = strtod_copy(s, len, buf, &whole);
    if (!whole) {
        return false;
    }
    *out = v;
    return true;
}

bool
num_strtod_str(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*end != '\0') {
        return false;
    }
    *out = v;
    return true;
}

int64_t
num_atoll(const char *s)
{
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) {
        s++;                            /* isspace in the C locale */
    }
    bool negative = *s == '-';
    if (*s == '-' || *s == '+') {
        s++;
    }
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t mag = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (mag > (limit - d) / 10) {
            mag = limit;                /* strtoll's clamp */
            break;
        }
        mag = mag * 10 + d;
    }
    return apply_sign(mag, negative);
}

int
num_atoi(const char *s)
{
    /* glibc's atoi is (int)strtol: the conversion keeps the low 32 bits
     * (GCC's documented rule for an int too narrow for the value). */
    return (int)num_atoll(s);
}

bool
num_parse_long_double(const char *s, size_t len, long double *out)
{
    char buf[NUM_LDOUBLE_MAXLEN];
    char *end;
    if (len == 0 || len >= sizeof(buf) || isspace((unsigned char)s[0])) {
        return false;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    long double v = strtold(buf, &end);
    if ((size_t)(end - buf) != len || isnan(v) || errno == EINVAL ||
        (errno == ERANGE &&
         (isinf(v) || fpclassify(v) == FP_ZERO))) {
        return false;
    }
    *out = v;
    return true;
}

size_t
num_score_text(char *buf, size_t size, double d)
{
    int n;
    if (d >= -(double)(INT64_MAX / 2) && d <= (double)(INT64_MAX / 2) &&
        (double)(int64_t)d == d) {
        n = snprintf(buf, size, "%" PRId64, (int64_t)d);
    } else {
        n = snprintf(buf, size, "%.17g", d);    /* nan, inf, -inf too */
    }
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}
