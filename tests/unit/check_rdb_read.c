/*
 * check_rdb_read.c - lib/rdb_read.c: RDB lengths in each form, strings
 * (raw, int8/16/32, LZF), both doubles, and the packed encodings over
 * bytes redis-server 7.0.15 wrote (a hash's listpack) or built from the
 * format (a ziplist of every entry encoding, a zipmap, intsets): each read
 * back element by element, and every truncation and many single-byte
 * changes refused or read without leaving the span (ASan watches the
 * unit suite).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crc64.h"
#include "lib/lzf.h"
#include "lib/rdb_read.h"
#include "suites.h"

/* A ziplist of "a", 0, 12, 13, -1, 200, -40000, 5000000, 2^40, -2^63 and
 * 70 "z": every integer encoding, the 6- and 14-bit string ones. */
static const unsigned char ZL[] = {
    0x83, 0x00, 0x00, 0x00, 0x39, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x01,
    0x61, 0x03, 0xf1, 0x02, 0xfd, 0x02, 0xfe, 0x0d, 0x03, 0xfe, 0xff, 0x03,
    0xc0, 0xc8, 0x00, 0x04, 0xf0, 0xc0, 0x63, 0xff, 0x05, 0xf0, 0x40, 0x4b,
    0x4c, 0x05, 0xe0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x0a,
    0xe0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x0a, 0x40, 0x46,
    'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z',
    'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z',
    'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z',
    'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z',
    'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z',
    0xff
};

/* redis-server 7.0.15's listpack of HSET h a 1 b -200 c 70000 d
 * 5000000000 e str f 4096 g <60 x> h -5000000. */
static const unsigned char LP[] = {
    0x7f, 0x00, 0x00, 0x00, 0x10, 0x00, 0x81, 0x61, 0x02, 0x01, 0x01, 0x81,
    0x62, 0x02, 0xdf, 0x38, 0x02, 0x81, 0x63, 0x02, 0xf2, 0x70, 0x11, 0x01,
    0x04, 0x81, 0x64, 0x02, 0xf4, 0x00, 0xf2, 0x05, 0x2a, 0x01, 0x00, 0x00,
    0x00, 0x09, 0x81, 0x65, 0x02, 0x83, 0x73, 0x74, 0x72, 0x04, 0x81, 0x66,
    0x02, 0xf1, 0x00, 0x10, 0x03, 0x81, 0x67, 0x02, 0xbc,
    'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x',
    'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x',
    'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x',
    'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x',
    'x', 'x', 'x', 'x', 0x3d, 0x81, 0x68, 0x02, 0xf2, 0xc0, 0xb4, 0xb3,
    0x04, 0xff
};

/* A zipmap of a=1, bb=<10 x>, c="" (one free byte after each value). */
static const unsigned char ZM[] = {
    0x03, 0x01, 0x61, 0x01, 0x01, 0x31, 0x00, 0x02, 0x62, 0x62, 0x0a, 0x01,
    0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x00, 0x01,
    0x63, 0x00, 0x01, 0x00, 0xff
};

START_TEST(test_lengths_in_every_form)
{
    static const unsigned char in[] = {
        0x05, 0x7f, 0xff, 0x80, 0x00, 0x01, 0x00, 0x00,
        0x81, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0xc3, 0x82
    };
    struct rdb_cur c = rdb_cur_make(in, sizeof(in));
    uint64_t v;
    bool enc;
    ck_assert(rdb_read_len(&c, &v) && v == 5);
    ck_assert(rdb_read_len(&c, &v) && v == 0x3fff);
    ck_assert(rdb_read_len(&c, &v) && v == 0x10000);
    ck_assert(rdb_read_len(&c, &v) && v == UINT64_C(1) << 32);
    ck_assert(rdb_read_len_enc(&c, &v, &enc) && enc && v == 3);
    ck_assert(!rdb_read_len(&c, &v));          /* 0x82: no such form */
    struct rdb_cur cut = rdb_cur_make(in + 3, 3);
    ck_assert(!rdb_read_len(&cut, &v));
    ck_assert_uint_eq(cut.off, 1);
}
END_TEST

START_TEST(test_strings_raw_integers_and_lzf)
{
    unsigned char in[200] = { 0x03, 'a', 'b', 'c', 0xc0, 0x80, 0xc1, 0x00,
                              0x80, 0xc2, 0xff, 0xff, 0xff, 0x7f };
    size_t n = 14;
    char plain[100];
    memset(plain, 'q', sizeof(plain));
    unsigned char z[120];
    size_t zn = lzf_compress((const uint8_t *)plain, sizeof(plain), z, 90);
    ck_assert_uint_gt(zn, 0);
    in[n++] = 0xc3;
    in[n++] = (unsigned char)zn;
    in[n++] = 0x40;
    in[n++] = 100;
    memcpy(in + n, z, zn);
    n += zn;
    struct rdb_cur c = rdb_cur_make(in, n);
    struct rdb_str s = { 0 };
    ck_assert(rdb_read_string(&c, &s) && s.len == 3 && !memcmp(s.p, "abc", 3));
    ck_assert(rdb_read_string(&c, &s) && s.is_int && s.v == -128);
    ck_assert(s.len == 4 && !memcmp(s.p, "-128", 4));
    ck_assert(rdb_read_string(&c, &s) && s.v == -32768);
    ck_assert(rdb_read_string(&c, &s) && s.v == INT32_MAX);
    ck_assert(rdb_read_string(&c, &s) && s.len == 100 &&
              !memcmp(s.p, plain, 100));
    ck_assert_uint_eq(c.off, n);
    /* Every cut of it fails, skipping too, and never reads past. */
    for (size_t k = 0; k < n; k++) {
        struct rdb_cur t = rdb_cur_make(in, k), u = rdb_cur_make(in, k);
        while (rdb_read_string(&t, &s)) {
        }
        while (rdb_skip_string(&u)) {
        }
        ck_assert_uint_le(t.off, k);
        ck_assert_uint_le(u.off, k);
    }
    /* An LZF plain length far beyond what its bytes could make. */
    static const unsigned char liar[] = { 0xc3, 0x01, 0x81, 0, 0, 0, 1, 0,
                                          0, 0, 0, 0x00 };
    struct rdb_cur l = rdb_cur_make(liar, sizeof(liar));
    ck_assert(!rdb_read_string(&l, &s));
    rdb_str_free(&s);
}
END_TEST

START_TEST(test_doubles_of_both_encodings)
{
    static const unsigned char in[] = { 0x04, '-', '1', '.', '5', 0xfd, 0xfe,
                                        0xff, 0x03, 'x', 'y', 'z',
                                        0, 0, 0, 0, 0, 0, 0xf0, 0x3f };
    struct rdb_cur c = rdb_cur_make(in, sizeof(in));
    double d;
    ck_assert(rdb_read_double_text(&c, &d) && d == -1.5);
    ck_assert(rdb_read_double_text(&c, &d) && isnan(d));
    ck_assert(rdb_read_double_text(&c, &d) && isinf(d) && d > 0);
    ck_assert(rdb_read_double_text(&c, &d) && isinf(d) && d < 0);
    ck_assert(!rdb_read_double_text(&c, &d));      /* "xyz" is no number */
    c.off = 12;
    ck_assert(rdb_read_double_bin(&c, &d) && d == 1.0);
    ck_assert(!rdb_read_double_bin(&c, &d));
}
END_TEST

START_TEST(test_intsets_checked_as_redis_checks_them)
{
    unsigned char is[8 + 3 * 2] = { 2, 0, 0, 0, 3, 0, 0, 0,
                                    0xfb, 0xff, 0x01, 0x00, 0xe8, 0x03 };
    uint32_t n;
    ck_assert(rdb_intset_check(is, sizeof(is), &n) && n == 3);
    ck_assert_int_eq(rdb_intset_get(is, 0), -5);
    ck_assert_int_eq(rdb_intset_get(is, 2), 1000);
    ck_assert(!rdb_intset_check(is, sizeof(is) - 1, &n));
    is[10] = 0xfb;
    is[11] = 0xff;                      /* a duplicate */
    ck_assert(!rdb_intset_check(is, sizeof(is), &n));
    is[0] = 3;                          /* no such width */
    ck_assert(!rdb_intset_check(is, sizeof(is), &n));
    unsigned char empty[8] = { 2, 0, 0, 0, 0, 0, 0, 0 };
    ck_assert(!rdb_intset_check(empty, sizeof(empty), &n));
}
END_TEST

START_TEST(test_ziplist_of_every_entry_encoding)
{
    static const int64_t ints[] = { 0, 12, 13, -1, 200, -40000, 5000000,
                                    INT64_C(1) << 40, INT64_MIN };
    uint64_t n;
    struct rdb_pack_iter it;
    struct rdb_elem e;
    ck_assert(rdb_ziplist_check(ZL, sizeof(ZL), &n) && n == 11);
    rdb_ziplist_iter(&it, ZL);
    ck_assert(rdb_pack_next(&it, &e) && !e.is_int && e.len == 1 &&
              e.p[0] == 'a');
    for (size_t i = 0; i < 9; i++) {
        ck_assert(rdb_pack_next(&it, &e) && e.is_int);
        ck_assert_int_eq(e.v, ints[i]);
    }
    ck_assert(rdb_pack_next(&it, &e) && e.len == 70 && e.p[69] == 'z');
    ck_assert(!rdb_pack_next(&it, &e));
    unsigned char bad[sizeof(ZL)];
    for (size_t k = 0; k < sizeof(ZL); k++) {
        ck_assert(!rdb_ziplist_check(ZL, k, &n));       /* every cut */
    }
    memcpy(bad, ZL, sizeof(ZL));
    bad[13] = 0x04;                     /* a wrong previous-entry size */
    ck_assert(!rdb_ziplist_check(bad, sizeof(bad), &n));
    memcpy(bad, ZL, sizeof(ZL));
    bad[8] = 12;                        /* a wrong count */
    ck_assert(!rdb_ziplist_check(bad, sizeof(bad), &n));
    memcpy(bad, ZL, sizeof(ZL));
    bad[4] = 0x30;                      /* a tail offset not the last's */
    ck_assert(!rdb_ziplist_check(bad, sizeof(bad), &n));
}
END_TEST

START_TEST(test_listpack_redis_wrote_and_every_damage)
{
    static const int64_t values[] = { 1, -200, 70000, INT64_C(5000000000) };
    uint64_t n;
    struct rdb_pack_iter it;
    struct rdb_elem e;
    ck_assert(rdb_listpack_check(LP, sizeof(LP), &n) && n == 16);
    rdb_listpack_iter(&it, LP);
    for (size_t i = 0; i < 4; i++) {
        ck_assert(rdb_pack_next(&it, &e) && !e.is_int && e.len == 1);
        ck_assert(rdb_pack_next(&it, &e) && e.is_int);
        ck_assert_int_eq(e.v, values[i]);
    }
    ck_assert(rdb_pack_next(&it, &e) && rdb_pack_next(&it, &e) &&
              e.len == 3 && !memcmp(e.p, "str", 3));
    ck_assert(rdb_pack_next(&it, &e) && rdb_pack_next(&it, &e) &&
              e.v == 4096);
    ck_assert(rdb_pack_next(&it, &e) && rdb_pack_next(&it, &e) &&
              e.len == 60);
    ck_assert(rdb_pack_next(&it, &e) && rdb_pack_next(&it, &e) &&
              e.v == -5000000);
    ck_assert(!rdb_pack_next(&it, &e));
    unsigned char bad[sizeof(LP)];
    for (size_t k = 0; k < sizeof(LP); k++) {
        ck_assert(!rdb_listpack_check(LP, k, &n));
        memcpy(bad, LP, sizeof(LP));
        bad[k] ^= 0x01;
        if (rdb_listpack_check(bad, sizeof(bad), &n)) {
            /* Only a change to an element's own bytes passes. */
            rdb_listpack_iter(&it, bad);
            while (rdb_pack_next(&it, &e)) {
            }
        }
    }
    memcpy(bad, LP, sizeof(LP));
    bad[8] = 0x03;                      /* a back-length that lies */
    ck_assert(!rdb_listpack_check(bad, sizeof(bad), &n));
}
END_TEST

START_TEST(test_zipmap_pairs_and_damage)
{
    uint64_t n;
    struct rdb_pack_iter it;
    struct rdb_elem e;
    ck_assert(rdb_zipmap_check(ZM, sizeof(ZM), &n) && n == 3);
    rdb_zipmap_iter(&it, ZM);
    ck_assert(rdb_pack_next(&it, &e) && e.len == 1 && e.p[0] == 'a');
    ck_assert(rdb_pack_next(&it, &e) && e.len == 1 && e.p[0] == '1');
    ck_assert(rdb_pack_next(&it, &e) && e.len == 2);
    ck_assert(rdb_pack_next(&it, &e) && e.len == 10);
    ck_assert(rdb_pack_next(&it, &e) && rdb_pack_next(&it, &e) &&
              e.len == 0);
    ck_assert(!rdb_pack_next(&it, &e));
    for (size_t k = 0; k < sizeof(ZM); k++) {
        ck_assert(!rdb_zipmap_check(ZM, k, &n));
    }
    unsigned char bad[sizeof(ZM)];
    memcpy(bad, ZM, sizeof(ZM));
    bad[0] = 2;                         /* a wrong count */
    ck_assert(!rdb_zipmap_check(bad, sizeof(bad), &n));
    memcpy(bad, ZM, sizeof(ZM));
    bad[11] = 200;                      /* free bytes past the end */
    ck_assert(!rdb_zipmap_check(bad, sizeof(bad), &n));
}
END_TEST

START_TEST(test_payload_footer_and_function_libraries)
{
    /* FUNCTION2 then a release candidate's FUNCTION. */
    static const unsigned char in[] = {
        0x03, 'a', 'b', 'c',
        0x01, 'L', 0x03, 'l', 'u', 'a', 0x01, 0x01, 'd', 0x02, 'x', 'y'
    };
    struct rdb_cur c = rdb_cur_make(in, sizeof(in));
    struct membuf b = { 0 };
    ck_assert(rdb_read_function(&c, RDB_OPCODE_FUNCTION2, &b));
    ck_assert(b.len == 3 && !memcmp(b.p, "abc", 3));
    b.len = 0;
    ck_assert(rdb_read_function(&c, RDB_OPCODE_FUNCTION, &b));
    ck_assert(b.len == 15 && !memcmp(b.p, "#!lua name=L\nxy", 15));
    mem_free(b.p);
    ck_assert(!rdb_payload_verified(in, 9));
    /* redis-server 7.0.15's DUMP of the string "v". */
    unsigned char p[] = { 0x00, 0x01, 'v', 0x0a, 0x00, 0x91, 0x08, 0xce,
                          0xb2, 0x19, 0x38, 0x8a, 0xce };
    ck_assert(rdb_payload_verified(p, sizeof(p)));
    ck_assert(!rdb_payload_verified(p, sizeof(p) - 1));
    p[2] = 'w';
    ck_assert(!rdb_payload_verified(p, sizeof(p)));
    p[2] = 'v';
    p[3] = 0x0b;                        /* version 11 */
    ck_assert(!rdb_payload_verified(p, sizeof(p)));
}
END_TEST

/* The CRC-64 sliced by 8 equals the plain byte-at-a-time definition at
 * every length and every split (a whole RDB file is checked with it). */
START_TEST(test_crc64_slices_equal_the_bytewise_definition)
{
    unsigned char buf[100];
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (unsigned char)(i * 37 + 11);
    }
    for (size_t n = 0; n <= sizeof(buf); n++) {
        uint64_t want = 0;
        for (size_t i = 0; i < n; i++) {
            want ^= buf[i];
            for (int k = 0; k < 8; k++) {
                want = (want & 1) ? UINT64_C(0x95ac9329ac4bc9b5) ^ (want >> 1)
                                  : want >> 1;
            }
        }
        ck_assert_uint_eq(crc64_update(0, buf, n), want);
        size_t cut = n / 3;
        ck_assert_uint_eq(crc64_update(crc64_update(0, buf, cut), buf + cut,
                                       n - cut), want);
    }
}
END_TEST

Suite *
rdb_read_suite(void)
{
    Suite *s = suite_create("rdb_read");
    TCase *tc = tcase_create("rdb_read");
    tcase_add_test(tc, test_lengths_in_every_form);
    tcase_add_test(tc, test_strings_raw_integers_and_lzf);
    tcase_add_test(tc, test_doubles_of_both_encodings);
    tcase_add_test(tc, test_intsets_checked_as_redis_checks_them);
    tcase_add_test(tc, test_ziplist_of_every_entry_encoding);
    tcase_add_test(tc, test_listpack_redis_wrote_and_every_damage);
    tcase_add_test(tc, test_zipmap_pairs_and_damage);
    tcase_add_test(tc, test_payload_footer_and_function_libraries);
    tcase_add_test(tc, test_crc64_slices_equal_the_bytewise_definition);
    suite_add_tcase(s, tc);
    return s;
}
