/*
 * check_crc32.c - the two CRC-32s against their published check values,
 * and the SSE4.2 path against the table path; Redis's CRC-64 against its
 * own check value and a payload redis-server 7.0.15 wrote.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crc32.h"
#include "lib/crc64.h"
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

Suite *
crc32_suite(void)
{
    Suite *s = suite_create("crc32");
    TCase *tc = tcase_create("values");
    tcase_add_test(tc, test_both_crcs_give_their_check_values);
    tcase_add_test(tc, test_crc64_gives_redis_check_value_and_dump_trailer);
    tcase_add_test(tc,
                   test_crc32c_fast_path_equals_the_table_at_every_length_and_split);
    suite_add_tcase(s, tc);
    return s;
}
