/*
 * check_rdb_write.c - lib/rdb_write.c against the bytes redis-server
 * 7.0.15 writes: lengths of each width, strings in each of their
 * encodings (integers of 8, 16 and 32 bits, the text of the ones that are
 * not canonical or too wide, LZF when it saves 4 bytes, plain when not),
 * binary doubles, and whole DUMP payloads redis-server gave for a hash
 * listpack (every integer width and string header, LZF over it), an
 * intset of 8-byte members and a sorted set listpack with -inf.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/num.h"
#include "lib/rdb_write.h"
#include "suites.h"

/* b's bytes as lowercase hex (into a static buffer). */
static const char *
hex(const struct membuf *b)
{
    static char out[4096];
    size_t n = 0;
    for (size_t i = 0; i < b->len && n + 3 < sizeof(out); i++) {
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%02x", b->p[i]);
    }
    out[n] = '\0';
    return out;
}

static const char *
string_hex(const char *s)
{
    static struct membuf b;
    b.len = 0;
    ck_assert(rdb_put_string(&b, s, strlen(s)));
    return hex(&b);
}

START_TEST(test_lengths_of_each_width)
{
    struct membuf b = { 0 };
    ck_assert(rdb_put_len(&b, 63) && rdb_put_len(&b, 64) &&
              rdb_put_len(&b, 16383) && rdb_put_len(&b, 16384) &&
              rdb_put_len(&b, UINT64_C(4294967296)));
    ck_assert_str_eq(hex(&b), "3f"
                              "4040"
                              "7fff"
                              "8000004000"
                              "810000000100000000");
    mem_free(b.p);
}
END_TEST

START_TEST(test_strings_as_rdbSaveRawString_writes_them)
{
    ck_assert_str_eq(string_hex("0"), "c000");
    ck_assert_str_eq(string_hex("-128"), "c080");
    ck_assert_str_eq(string_hex("128"), "c18000");
    ck_assert_str_eq(string_hex("-32769"), "c2ff7fffff");
    ck_assert_str_eq(string_hex("2147483647"), "c2ffffff7f");
    /* Too wide for 32 bits, or not canonical: the text. */
    ck_assert_str_eq(string_hex("2147483648"), "0a32313437343833363438");
    ck_assert_str_eq(string_hex("012"), "03303132");
    ck_assert_str_eq(string_hex("-0"), "022d30");
    ck_assert_str_eq(string_hex("+1"), "022b31");
    ck_assert_str_eq(string_hex(""), "00");
    /* 20 bytes: never compressed; 21 that LZF shrinks: compressed (the
     * bytes redis-server DUMPs for SET a <21 a>). */
    ck_assert_str_eq(string_hex("aaaaaaaaaaaaaaaaaaaa"),
                     "146161616161616161616161616161616161616161");
    ck_assert_str_eq(string_hex("aaaaaaaaaaaaaaaaaaaaa"), "c30615016161e00a00");
    /* 21 bytes LZF cannot shrink by 4: plain. */
    ck_assert_str_eq(string_hex("abcdefghijklmnopqrstu"),
                     "15616263646566676869"
                     "6a6b6c6d6e6f707172737475");
}
END_TEST

START_TEST(test_int_strings_and_doubles)
{
    struct membuf b = { 0 };
    ck_assert(rdb_put_int_string(&b, -5) &&
              rdb_put_int_string(&b, INT64_C(5000000000)) &&
              rdb_put_double(&b, 1.5));
    ck_assert_str_eq(hex(&b), "c0fb" "0a35303030303030303030"
                              "000000000000f83f");
    char t[64];
    ck_assert_uint_eq(num_score_text(t, sizeof(t), -1.0 / 0.0), 4);
    ck_assert_str_eq(t, "-inf");
    num_score_text(t, sizeof(t), 0.1);
    ck_assert_str_eq(t, "0.10000000000000001");
    num_score_text(t, sizeof(t), -0.0);
    ck_assert_str_eq(t, "0");       /* double2ll() takes -0 for 0 */
    /* Integral: its integer up to 2^62 (redis-server stores ZADD z
     * 288230376151711744 m's score as an int64 entry), %.17g past it. */
    num_score_text(t, sizeof(t), 288230376151711744.0);
    ck_assert_str_eq(t, "288230376151711744");
    num_score_text(t, sizeof(t), -4611686018427387904.0);
    ck_assert_str_eq(t, "-4611686018427387904");
    num_score_text(t, sizeof(t), 9223372036854775808.0);
    ck_assert_str_eq(t, "9.2233720368547758e+18");
    num_score_text(t, sizeof(t), 1e300);
    ck_assert_str_eq(t, "1.0000000000000001e+300");
    mem_free(b.p);
}
END_TEST

/* A payload: type, the object's blob as a string, the footer. */
static const char *
payload_hex(uint8_t type, const struct membuf *blob)
{
    static struct membuf b;
    b.len = 0;
    ck_assert(rdb_put_byte(&b, type) &&
              rdb_put_string(&b, blob->p, blob->len) &&
              rdb_put_footer(&b, 0));
    return hex(&b);
}

/* redis-server 7.0.15: HSET h f1 v1 f2 12 f3 -4097 f4 70000 f5 -9000000
 * f6 3000000000 f7 <64 y>, then DUMP h. */
START_TEST(test_hash_listpack_equals_redis_dump)
{
    static const char *const kv[] = { "f1", "v1", "f2", "12", "f3", "-4097",
                                      "f4", "70000", "f5", "-9000000",
                                      "f6", "3000000000", "f7", NULL };
    char y[65];
    memset(y, 'y', 64);
    y[64] = '\0';
    struct membuf lpb = { 0 };
    struct rdb_listpack lp;
    ck_assert(rdb_lp_begin(&lp, &lpb));
    for (size_t i = 0; i < 14; i++) {
        const char *s = kv[i] != NULL ? kv[i] : y;
        ck_assert(rdb_lp_add(&lp, s, strlen(s)));
        ck_assert_uint_eq(rdb_lp_entry_size(s, strlen(s)) > 0, 1);
    }
    ck_assert(rdb_lp_end(&lp));
    ck_assert_str_eq(payload_hex(RDB_TYPE_HASH_LISTPACK, &lpb),
                     "10c3404b40850b850000000e0082663103827620030b6632030c01"
                     "82663303f1ffef200d193403f27011010482663503f3c0ab76ff05"
                     "82663603f4005ed0b2203608000982663703e04079e036000142ff"
                     "0a001958093617d29c0b");
    mem_free(lpb.p);
}
END_TEST

/* SADD s 1 -40000 5000000000: an intset of 8-byte members. */
START_TEST(test_intset_equals_redis_dump)
{
    static const int64_t v[] = { -40000, 1, INT64_C(5000000000) };
    struct membuf blob = { 0 };
    ck_assert(rdb_put_intset(&blob, v, 3));
    ck_assert_str_eq(payload_hex(RDB_TYPE_SET_INTSET, &blob),
                     "0b200800000003000000c063ffffffffffff01000000000000000"
                     "0f2052a010000000a00157ff634f437ed92");
    mem_free(blob.p);
}
END_TEST

/* ZADD z 1.5 a -inf b 3 c: member, score text pairs in score order. */
START_TEST(test_zset_listpack_equals_redis_dump)
{
    static const char *const e[] = { "b", "-inf", "a", "1.5", "c", "3" };
    struct membuf lpb = { 0 };
    struct rdb_listpack lp;
    ck_assert(rdb_lp_begin(&lp, &lpb));
    for (size_t i = 0; i < 6; i++) {
        ck_assert(rdb_lp_add(&lp, e[i], strlen(e[i])));
    }
    ck_assert(rdb_lp_end(&lp));
    ck_assert_str_eq(payload_hex(RDB_TYPE_ZSET_LISTPACK, &lpb),
                     "111d1d0000000600816202842d696e660581610283312e35048163"
                     "020301ff0a002970c58fcde6fc31");
    mem_free(lpb.p);
}
END_TEST

/* Back-lengths of 1, 2 and 3 bytes: an entry of 127 bytes of encoding and
 * data, of 128, of 16383. */
START_TEST(test_listpack_string_headers_and_backlengths)
{
    struct membuf lpb = { 0 };
    struct rdb_listpack lp;
    char *s = malloc(16400);
    memset(s, 'x', 16400);
    ck_assert(rdb_lp_begin(&lp, &lpb));
    ck_assert(rdb_lp_add(&lp, s, 63));          /* 1 + 63: backlen 64 */
    size_t at = lpb.len;
    ck_assert(rdb_lp_add(&lp, s, 126));         /* 2 + 126 = 128 */
    ck_assert_uint_eq(lpb.p[at], 0xE0);
    ck_assert_uint_eq(lpb.p[at + 1], 126);
    ck_assert_uint_eq(lpb.p[lpb.len - 2], 128 >> 7);
    ck_assert_uint_eq(lpb.p[lpb.len - 1], (128 & 127) | 128);
    at = lpb.len;
    ck_assert(rdb_lp_add(&lp, s, 16378));       /* 5 + 16378 = 16383 */
    ck_assert_uint_eq(lpb.p[at], 0xF0);
    ck_assert_uint_eq(lpb.len - at, 16383 + 3);
    ck_assert_uint_eq(rdb_lp_entry_size(s, 16378), 16383 + 3);
    ck_assert(rdb_lp_add_int(&lp, -1));         /* 13 bits: 1f ff */
    ck_assert_uint_eq(lpb.p[lpb.len - 3], 0xDF);
    ck_assert_uint_eq(lpb.p[lpb.len - 2], 0xFF);
    ck_assert(rdb_lp_end(&lp));
    ck_assert_uint_eq(lpb.p[4], 4);
    ck_assert_uint_eq(lpb.p[lpb.len - 1], 0xFF);
    uint32_t total = (uint32_t)lpb.p[0] | (uint32_t)lpb.p[1] << 8 |
                     (uint32_t)lpb.p[2] << 16 | (uint32_t)lpb.p[3] << 24;
    ck_assert_uint_eq(total, lpb.len);
    free(s);
    mem_free(lpb.p);
}
END_TEST

Suite *
rdb_write_suite(void)
{
    Suite *s = suite_create("rdb_write");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_lengths_of_each_width);
    tcase_add_test(tc, test_strings_as_rdbSaveRawString_writes_them);
    tcase_add_test(tc, test_int_strings_and_doubles);
    tcase_add_test(tc, test_hash_listpack_equals_redis_dump);
    tcase_add_test(tc, test_intset_equals_redis_dump);
    tcase_add_test(tc, test_zset_listpack_equals_redis_dump);
    tcase_add_test(tc, test_listpack_string_headers_and_backlengths);
    suite_add_tcase(s, tc);
    return s;
}
