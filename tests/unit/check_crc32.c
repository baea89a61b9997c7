/*
 * check_crc32.c - the two CRC-32s against their published check values,
 * and the SSE4.2 path against the table path; Redis's CRC-64 against its
 * own check value and a payload redis-server 7.0.15 wrote; LZF against the
 * bytes redis-server 7.0.15 compressed a library's code into (FUNCTION
 * DUMP), and back, and random data both ways.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crc32.h"
#include "lib/crc64.h"
#include "lib/lzf.h"
#include "suites.h"

START_TEST(test_both_crcs_give_their_check_values)
{
    ck_assert_uint_eq(crc32_update(0, "123456789", 9), 0xCBF43926u);
    ck_assert_uint_eq(crc32c_update(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(crc32c_portable(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(crc32c_update(0, "", 0), 0);
}
END_TEST

START_TEST(test_crc32c_fast_path_equals_the_table_at_every_length_and_split)
{
    unsigned char buf[300];
    srand(7);
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (unsigned char)rand();
    }
    for (size_t n = 0; n <= sizeof(buf); n++) {
        uint32_t want = crc32c_portable(0, buf, n);
        ck_assert_uint_eq(crc32c_update(0, buf, n), want);
        size_t cut = n / 3;
        ck_assert_uint_eq(crc32c_update(crc32c_update(0, buf, cut), buf + cut,
                                        n - cut), want);
        ck_assert_uint_eq(crc32_update(crc32_update(0, buf, cut), buf + cut,
                                       n - cut), crc32_update(0, buf, n));
    }
}
END_TEST

/* Redis's crc64.c test value, and the CRC that ends FUNCTION DUMP's
 * payload of a library from redis-server (its last 8 bytes, LE). */
START_TEST(test_crc64_gives_redis_check_value_and_dump_trailer)
{
    ck_assert_uint_eq(crc64_update(0, "123456789", 9),
                      UINT64_C(0xe9c6d914c4b8d9ca));
    ck_assert_uint_eq(crc64_update(0, "", 0), 0);
    ck_assert_uint_eq(crc64_update(crc64_update(0, "1234", 4), "56789", 5),
                      UINT64_C(0xe9c6d914c4b8d9ca));
    static const char payload[] =
        "\xf5\x40\x46#!lua name=mylib\nredis.register_function('f', "
        "function() return 1 end)\x0a\x00";
    ck_assert_uint_eq(crc64_update(0, payload, sizeof(payload) - 1),
                      UINT64_C(0x9945f44ffcde31c5));
}
END_TEST

START_TEST(test_lzf_compresses_as_redis_and_decompresses)
{
    static const char plain[] =
        "\x23\x21\x6c\x75\x61\x20\x6e\x61\x6d\x65\x3d\x6c\x69\x62\x35\x0a"
        "\x72\x65\x64\x69\x73\x2e\x72\x65\x67\x69\x73\x74\x65\x72\x5f\x66"
        "\x75\x6e\x63\x74\x69\x6f\x6e\x28\x7b\x66\x75\x6e\x63\x74\x69\x6f"
        "\x6e\x5f\x6e\x61\x6d\x65\x3d\x27\x71\x27\x2c\x20\x63\x61\x6c\x6c"
        "\x62\x61\x63\x6b\x3d\x66\x75\x6e\x63\x74\x69\x6f\x6e\x28\x29\x20"
        "\x65\x6e\x64\x2c\x20\x66\x6c\x61\x67\x73\x3d\x7b\x27\x4e\x4f\x2d"
        "\x57\x52\x49\x54\x45\x53\x27\x2c\x27\x61\x6c\x6c\x6f\x77\x2d\x6f"
        "\x6f\x6d\x27\x2c\x27\x61\x6c\x6c\x6f\x77\x2d\x73\x74\x61\x6c\x65"
        "\x27\x2c\x27\x6e\x6f\x2d\x63\x6c\x75\x73\x74\x65\x72\x27\x2c\x27"
        "\x61\x6c\x6c\x6f\x77\x2d\x63\x72\x6f\x73\x73\x2d\x73\x6c\x6f\x74"
        "\x2d\x6b\x65\x79\x73\x27\x7d\x7d\x29";
    static const unsigned char packed[] =
        "\x1f\x23\x21\x6c\x75\x61\x20\x6e\x61\x6d\x65\x3d\x6c\x69\x62\x35"
        "\x0a\x72\x65\x64\x69\x73\x2e\x72\x65\x67\x69\x73\x74\x65\x72\x5f"
        "\x66\x08\x75\x6e\x63\x74\x69\x6f\x6e\x28\x7b\xc0\x09\x00\x5f\x60"
        "\x2b\x0d\x27\x71\x27\x2c\x20\x63\x61\x6c\x6c\x62\x61\x63\x6b\x3d"
        "\xc0\x1b\x1b\x28\x29\x20\x65\x6e\x64\x2c\x20\x66\x6c\x61\x67\x73"
        "\x3d\x7b\x27\x4e\x4f\x2d\x57\x52\x49\x54\x45\x53\x27\x2c\x27\x20"
        "\x2b\x05\x6f\x77\x2d\x6f\x6f\x6d\xe0\x00\x0b\x04\x73\x74\x61\x6c"
        "\x65\x20\x0d\x05\x6e\x6f\x2d\x63\x6c\x75\x40\x6e\x20\x0c\x80\x26"
        "\x12\x63\x72\x6f\x73\x73\x2d\x73\x6c\x6f\x74\x2d\x6b\x65\x79\x73"
        "\x27\x7d\x7d\x29";
    size_t n = sizeof(plain) - 1, m = sizeof(packed) - 1;
    unsigned char out[256], back[256];
    /* Redis's buffer: 4 bytes short of the input, one spare. */
    ck_assert_uint_eq(lzf_compress((const uint8_t *)plain, n, out, n - 4), m);
    ck_assert_mem_eq(out, packed, m);
    ck_assert_uint_eq(lzf_decompress(packed, m, back, n), n);
    ck_assert_mem_eq(back, plain, n);
    /* Wrong sizes and damage are refused, never overrun. */
    ck_assert_uint_eq(lzf_decompress(packed, m, back, n - 1), 0);
    ck_assert_uint_eq(lzf_decompress(packed, m - 1, back, n), 0);
    ck_assert_uint_eq(lzf_compress((const uint8_t *)plain, n, out, 20), 0);
    /* Random bytes of a small alphabet (so they compress) both ways. */
    static unsigned char in[5000], c[5001], d[5000];
    srand(11);
    for (int round = 0; round < 200; round++) {
        size_t len = 3 + (size_t)rand() % (sizeof(in) - 3);
        int alphabet = 2 + rand() % 200;
        for (size_t i = 0; i < len; i++) {
            in[i] = (unsigned char)(rand() % alphabet);
        }
        size_t k = lzf_compress(in, len, c, len - 1);
        if (k > 0) {
            ck_assert_uint_eq(lzf_decompress(c, k, d, len), len);
            ck_assert_mem_eq(d, in, len);
        }
    }
}
END_TEST

Suite *
crc32_suite(void)
{
    Suite *s = suite_create("crc32");
    TCase *tc = tcase_create("values");
    tcase_add_test(tc, test_both_crcs_give_their_check_values);
    tcase_add_test(tc, test_crc64_gives_redis_check_value_and_dump_trailer);
    tcase_add_test(tc, test_lzf_compresses_as_redis_and_decompresses);
    tcase_add_test(tc,
                   test_crc32c_fast_path_equals_the_table_at_every_length_and_split);
    suite_add_tcase(s, tc);
    return s;
}
