/*
 * check_sha1.c - SHA-1 (lib/sha1.h) against the examples NIST publishes
 * for FIPS 180 (one block, two blocks, a million 'a', the empty message)
 * and against digests of messages whose lengths sit where the padding
 * changes shape: 55 bytes still take one block with the length, 56 spill
 * into a second, 63/64/65 cross the block edge. Those digests were made
 * with another implementation (Python's hashlib) for the same bytes.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sha1.h"
#include "tests/unit/suites.h"

static void
expect_hex(const void *data, size_t len, const char *want)
{
    char got[SHA1_HEX_LEN + 1];
    memset(got, 'x', sizeof(got));
    sha1_hex(data, len, got);
    ck_assert_str_eq(got, want);
}

START_TEST(test_nist_examples)
{
    expect_hex("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_hex(two, strlen(two), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    const char *long896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklm"
                          "ghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                          "mnopqrstnopqrstu";
    expect_hex(long896, strlen(long896),
               "a49b2446a02c645bf419f995b67091253a04a259");
    expect_hex("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}
END_TEST

START_TEST(test_a_million_a)
{
    size_t n = 1000000;
    char *m = malloc(n);
    ck_assert_ptr_nonnull(m);
    memset(m, 'a', n);
    expect_hex(m, n, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    free(m);
}
END_TEST

START_TEST(test_lengths_around_the_padding_edges)
{
    static const struct {
        size_t len;
        const char *hex;
    } cases[] = {
        { 1, "9842926af7ca0a8cca12604f945414f07b01e13d" },
        { 55, "ddf57317ef34bfee3b6df83d359098930eb278bc" },
        { 56, "a0d492bb0fc889d0eca3bc137066ab6f4f74f369" },
        { 57, "11a02dcf95859677a62e75024067c22b165d890f" },
        { 63, "c55856749bef509bdfe6bfebfc7bf4e793e82132" },
        { 64, "bede92be29c3874e1b54ddc77988d606fc857a8e" },
        { 65, "b05a80522b053d6dc7e0a517d0e70212c7dad11f" },
        { 119, "504e27376a6e0f0dba8295b85cb25dc4dfa17d23" },
        { 120, "82134b02fb3f702491be9bed581eeab59334acb2" },
        { 127, "34d5e582029e9b9b85b2febe31da3db7cdabaaea" },
        { 128, "a09133e6730ffe899efb70204cb5646cd5dc24ee" },
        { 1000, "4231a8a50a10fa9758db8ec71fdef855b751048a" },
    };
    unsigned char m[1000];
    for (size_t i = 0; i < sizeof(m); i++) {
        m[i] = (unsigned char)(i * 7 + 3);
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        expect_hex(m, cases[i].len, cases[i].hex);
    }
}
END_TEST

START_TEST(test_raw_digest_and_unaligned_input)
{
    /* The bytes of "abc"'s digest, and the same message read from an odd
     * address (words are assembled byte by byte). */
    static const uint8_t want[SHA1_DIGEST_LEN] = {
        0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e,
        0x25, 0x71, 0x78, 0x50, 0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d
    };
    uint8_t got[SHA1_DIGEST_LEN];
    sha1("abc", 3, got);
    ck_assert_mem_eq(got, want, sizeof(want));
    char buf[200];
    memset(buf, 'a', sizeof(buf));
    expect_hex(buf + 1, 3, "7e240de74fb1ed08fa08d38063f6a6a91462a815");
    /* Redis's own example: the SHA1 EVALSHA names "return 1" by. */
    expect_hex("return 1", 8, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}
END_TEST

Suite *
sha1_suite(void)
{
    Suite *s = suite_create("sha1");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_nist_examples);
    tcase_add_test(tc, test_a_million_a);
    tcase_add_test(tc, test_lengths_around_the_padding_edges);
    tcase_add_test(tc, test_raw_digest_and_unaligned_input);
    suite_add_tcase(s, tc);
    return s;
}
