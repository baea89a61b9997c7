/*
 * check_siphash.c - lib/siphash.h against the reference vectors of
 * SipHash-2-4 (the paper's key 00 01 .. 0f, messages 00 01 .. n-1), so
 * the SipHash-1-3 the tables use is the real function with other round
 * counts; and the key from 16 seed bytes, little-endian.
 */
#include <check.h>
#include <stdint.h>

#include "lib/siphash.h"
#include "tests/unit/suites.h"

static const uint64_t vectors_2_4[17] = {
    0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a,
    0x85676696d7fb7e2d, 0xcf2794e0277187b7, 0x18765564cd99a68d,
    0xcbc9466e58fee3ce, 0xab0200f58b01d137, 0x93f5f5799a932462,
    0x9e0082df0ba9e4b0, 0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7,
    0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee,
    0xa129ca6149be45e5, 0x3f2acc7f57c29bdb,
};

START_TEST(test_siphash_2_4_reference_vectors)
{
    unsigned char key[16], msg[17];
    uint64_t k0, k1;

    for (int i = 0; i < 16; i++) {
        key[i] = (unsigned char)i;
    }
    for (int i = 0; i < 17; i++) {
        msg[i] = (unsigned char)i;
    }
    siphash_key(key, &k0, &k1);
    ck_assert_uint_eq(k0, 0x0706050403020100);
    ck_assert_uint_eq(k1, 0x0f0e0d0c0b0a0908);
    for (size_t n = 0; n < 17; n++) {
        ck_assert_msg(siphash(k0, k1, msg, n, 2, 4) == vectors_2_4[n],
                      "message of %zu bytes", n);
    }
}
END_TEST

START_TEST(test_the_key_changes_every_hash_and_1_3_differs_from_2_4)
{
    const char name[] = "news.sport";
    uint64_t a = siphash(1, 2, name, sizeof(name) - 1, 1, 3);

    ck_assert_uint_ne(a, siphash(1, 3, name, sizeof(name) - 1, 1, 3));
    ck_assert_uint_ne(a, siphash(1, 2, name, sizeof(name) - 1, 2, 4));
    ck_assert_uint_eq(a, siphash(1, 2, name, sizeof(name) - 1, 1, 3));
}
END_TEST

Suite *
siphash_suite(void)
{
    Suite *s = suite_create("siphash");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_siphash_2_4_reference_vectors);
    tcase_add_test(tc, test_the_key_changes_every_hash_and_1_3_differs_from_2_4);
    suite_add_tcase(s, tc);
    return s;
}
