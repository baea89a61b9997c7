/*
 * num.c - decimal parsing and formatting without libc's locale-aware and
 * errno-driven strtoll, and without snprintf on the reply path.
 */
#include "protocol/num.h"

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

bool
num_parse_i64(const char *s, size_t len, int64_t *out)
{
    bool negative = false;
    uint64_t mag;

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

size_t
num_fmt_u64(char *buf, uint64_t v)
{
    char tmp[NUM_I64_MAXLEN];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        buf[i] = tmp[n - 1 - i];
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
