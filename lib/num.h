/*
 * num.h - strict, overflow-checked decimal integers in and out: the one
 * decimal parser of the tree (requests, config, cluster lines, cursors).
 *
 * Parsing follows Redis's string2ll: an optional '-', then digits with no
 * leading zero (except "0" itself); no '+', no spaces, no "-0", nothing past
 * the digits, and the value must fit in int64. num_parse_i64_rust follows
 * Rust's str::parse::<i64> instead (what redis-cell uses): an optional '+' or
 * '-', then one or more digits, leading zeros allowed.
 *
 * A few numbers Redis reads with C's own functions instead, and cellgate
 * reads them with the same rule, named here after the C function: atoi
 * (num_atoi, num_atoll) and strtod (num_strtod, num_strtod_str).
 */
#ifndef CELLGATE_NUM_H
#define CELLGATE_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NUM_I64_MAXLEN 21   /* "-9223372036854775808" plus one spare byte */

bool num_parse_i64(const char *s, size_t len, int64_t *out);

/* Is s written as num_parse_i64 wants, whatever its size? Tells "not an
 * integer" from "out of range" when num_parse_i64 fails. */
bool num_decimal_syntax(const char *s, size_t len);

/* One or more digits (leading zeros allowed, no sign) within uint64: the
 * SCAN cursor's form, as Redis's strtoull with its checks accepts it. */
bool num_parse_u64_digits(const char *s, size_t len, uint64_t *out);
bool num_parse_i64_rust(const char *s, size_t len, int64_t *out);

/* A sorted set's score as Redis 7.0's listpack holds it (zzlInsertAt()):
 * an integral one within +-2^62 (double2ll(), -0 included) as its
 * integer, any other as d2string()'s %.17g ("inf", "-inf", "nan"): what
 * ZSCAN of a small sorted set answers and an RDB listpack stores. The
 * text's length (cut to size - 1). */
size_t num_score_text(char *buf, size_t size, double d);

/* A double as Redis's string2d() reads one: strtod's syntax over all len
 * bytes (so "1.5", "1e3", "inf", hex floats), but not empty, no leading
 * space, no NaN, no overflow to infinity or underflow to zero. Binary-safe:
 * s need not be NUL-terminated (at most NUM_DOUBLE_MAXLEN bytes are read). */
#define NUM_DOUBLE_MAXLEN 256
bool num_parse_double(const char *s, size_t len, double *out);

/* A long double as Redis's string2ld() reads one: as num_parse_double,
 * with strtold and inputs up to NUM_LDOUBLE_MAXLEN - 1 bytes. */
#define NUM_LDOUBLE_MAXLEN 5120
bool num_parse_long_double(const char *s, size_t len, long double *out);

/* C's strtoll(s, NULL, 10) over the NUL-terminated s (atoll's rule with
 * its overflow defined): blanks skipped (the C locale's isspace), an
 * optional sign, then the digits up to the first other byte; 0 without
 * any, INT64_MIN or INT64_MAX past the range, as strtoll clamps. */
int64_t num_atoll(const char *s);

/* C's atoi(s) as glibc computes it, (int)strtol(s, NULL, 10): num_atoll's
 * value cut to int (its low 32 bits), so "4294967297" reads 1. Redis reads
 * EVAL's numkeys so where its key finder must guess (genericGetKeys). */
int num_atoi(const char *s);

/* C's strtod over exactly s[0..len), 1 to NUM_STRTOD_MAXLEN bytes (s need
 * not be NUL-terminated): true when the number takes every byte, so a NUL
 * inside ends it short. Every form strtod reads passes as it reads it:
 * leading blanks, '+', hex, "inf", "nan", an overflow as +-HUGE_VAL. */
#define NUM_STRTOD_MAXLEN 5120  /* Redis's MAX_LONG_DOUBLE_CHARS */
bool num_strtod(const char *s, size_t len, double *out);

/* C's strtod over the NUL-terminated s: true when nothing follows the
 * number ("" reads 0, as strtod leaves it; a blank after it fails), with
 * strtod's forms as num_strtod. Redis's reading of a score range's bound
 * (zslParseRange), which refuses NaN after it. */
bool num_strtod_str(const char *s, double *out);

/* Write v in decimal to buf (at least NUM_I64_MAXLEN bytes, not
 * NUL-terminated); return the length. */
size_t num_fmt_i64(char *buf, int64_t v);
size_t num_fmt_u64(char *buf, uint64_t v);

#endif
