/*
 * check_glob.c - glob matching (lib/glob.c): Redis's answers, quirks
 * included, and the bound on its work. (The integration suite also
 * compares thousands of random patterns with redis-server's KEYS.)
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/glob.h"
#include "tests/unit/suites.h"

static bool
m(const char *pat, const char *str)
{
    return glob_match(pat, strlen(pat), str, strlen(str), false);
}

static bool
mi(const char *pat, const char *str)
{
    return glob_match(pat, strlen(pat), str, strlen(str), true);
}

START_TEST(test_literals_question_marks_and_stars)
{
    ck_assert(m("abc", "abc"));
    ck_assert(!m("abc", "abcd"));
    ck_assert(!m("abc", "ab"));
    ck_assert(m("a?c", "abc"));
    ck_assert(!m("a?c", "ac"));
    ck_assert(m("a*", "a"));
    ck_assert(m("a*", "abcdef"));
    ck_assert(m("*c", "abc"));
    ck_assert(m("a*c*e", "abcde"));
    ck_assert(!m("a*c*e", "abcdef"));
    ck_assert(m("***a***", "xxaxx"));
    ck_assert(m("user:*:limit", "user:42:limit"));
    ck_assert(!m("user:*:limit", "user:42:limits"));
}
END_TEST

START_TEST(test_an_empty_key_matches_only_the_empty_pattern)
{
    /* Redis's loop needs both non-empty: "*" does not match "". */
    ck_assert(glob_match("", 0, "", 0, false));
    ck_assert(!glob_match("*", 1, "", 0, false));
    ck_assert(!glob_match("", 0, "a", 1, false));
}
END_TEST

START_TEST(test_classes_ranges_negation_and_escapes)
{
    ck_assert(m("[abc]", "b"));
    ck_assert(!m("[abc]", "d"));
    ck_assert(m("[^abc]", "d"));
    ck_assert(!m("[^abc]", "a"));
    ck_assert(m("[a-c]x", "bx"));
    ck_assert(m("[c-a]x", "bx"));           /* a reversed range is swapped */
    ck_assert(m("[a-]", "]"));              /* "[a-]" is the range a..] */
    ck_assert(m("[a-]", "_"));
    ck_assert(!m("[a-]", "-"));
    ck_assert(m("[\\]]", "]"));
    ck_assert(m("\\*", "*"));
    ck_assert(!m("\\*", "a"));
    ck_assert(m("a\\", "a\\"));             /* a trailing backslash is itself */
    ck_assert(m("[abc", "b"));              /* unterminated: to the end */
    ck_assert(m("[^", "x"));
    ck_assert(!m("[", "x"));
    ck_assert(m("[*]", "*"));               /* no star inside a class */
    ck_assert(!m("[*]", "ab"));
}
END_TEST

START_TEST(test_ranges_compare_as_signed_chars)
{
    /* \x81-\x7f is -127..127: everything but \x80. */
    ck_assert(m("[\x81-\x7f]", "a"));
    ck_assert(m("[\x81-\x7f]", "\xff"));
    ck_assert(!m("[\x81-\x7f]", "\x80"));
}
END_TEST

START_TEST(test_nocase_folds_ascii)
{
    ck_assert(mi("MAXMEMORY*", "maxmemory-policy"));
    ck_assert(mi("[A-Z]", "q"));
    ck_assert(!m("MAX*", "maxmemory"));
}
END_TEST

START_TEST(test_binary_strings_with_nul_bytes)
{
    ck_assert(glob_match("a?c", 3, "a\0c", 3, false));
    ck_assert(glob_match("*\0*", 3, "x\0y", 3, false));
    ck_assert(!glob_match("*\0*", 3, "xy", 2, false));
}
END_TEST

START_TEST(test_more_than_a_thousand_inner_stars_never_match)
{
    char pat[4000];
    size_t n = 0;
    for (int i = 0; i < 1001; i++) {
        pat[n++] = '*';
        pat[n++] = 'a';
    }
    pat[n++] = '*';
    char str[1100];
    memset(str, 'a', sizeof(str));
    ck_assert(!glob_match(pat, n, str, sizeof(str), false));
    /* 1000 inner stars are fine. */
    ck_assert(glob_match(pat + 2, n - 2, str, sizeof(str), false));
}
END_TEST

START_TEST(test_a_long_plain_run_is_found_in_linear_time)
{
    /* The fuzzer's pattern: *a...ab against a...ab. A literal run is found
     * with memmem, so the answer is exact however long both are. */
    size_t slen = 400000, plen = 200002;
    char *str = malloc(slen);
    char *pat = malloc(plen);
    ck_assert(str != NULL && pat != NULL);
    memset(str, 'a', slen);
    str[slen - 1] = 'b';
    pat[0] = '*';
    memset(pat + 1, 'a', plen - 2);
    pat[plen - 1] = 'b';
    ck_assert(glob_match(pat, plen, str, slen, false));
    str[slen - 1] = 'a';
    ck_assert(!glob_match(pat, plen, str, slen, false));
    free(str);
    free(pat);
}
END_TEST

START_TEST(test_work_past_the_bound_is_no_match)
{
    /* "*" + 2000 '?' + "b*" against 200,000 'a's then a 'b': a match, but
     * a run of wildcards between two stars is tried position by position,
     * about 400 million steps here, far past 64 per byte: the answer is no
     * match. The same pattern against a short key is answered exactly, and
     * the run anchored at the end (no star after it) costs one try. */
    size_t q = 2000, slen = 200000;
    size_t plen = q + 3;
    char *pat = malloc(plen);
    char *str = malloc(slen);
    ck_assert(pat != NULL && str != NULL);
    pat[0] = '*';
    memset(pat + 1, '?', q);
    pat[plen - 2] = 'b';
    pat[plen - 1] = '*';
    memset(str, 'a', slen);
    str[slen - 1] = 'b';
    ck_assert(!glob_match(pat, plen, str, slen, false));
    ck_assert(glob_match(pat, plen, str + slen - q - 5, q + 5, false));
    ck_assert(glob_match(pat, plen - 1, str, slen, false));
    free(pat);
    free(str);
}
END_TEST

Suite *
glob_suite(void)
{
    Suite *s = suite_create("glob");
    TCase *tc = tcase_create("redis");
    tcase_add_test(tc, test_literals_question_marks_and_stars);
    tcase_add_test(tc, test_an_empty_key_matches_only_the_empty_pattern);
    tcase_add_test(tc, test_classes_ranges_negation_and_escapes);
    tcase_add_test(tc, test_ranges_compare_as_signed_chars);
    tcase_add_test(tc, test_nocase_folds_ascii);
    tcase_add_test(tc, test_binary_strings_with_nul_bytes);
    tcase_add_test(tc, test_more_than_a_thousand_inner_stars_never_match);
    suite_add_tcase(s, tc);
    tc = tcase_create("bounds");
    tcase_add_test(tc, test_a_long_plain_run_is_found_in_linear_time);
    tcase_add_test(tc, test_work_past_the_bound_is_no_match);
    suite_add_tcase(s, tc);
    return s;
}
