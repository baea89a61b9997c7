/*
 * check_keylog.c - lib/keylog.h: entries come back in order with their
 * tags, databases and key bytes (empty keys and keys holding NUL, CR and
 * LF among them), across the buffer's growth; an empty log has none.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "lib/keylog.h"
#include "tests/unit/suites.h"

START_TEST(test_an_empty_log_has_no_entry)
{
    struct membuf log = { 0 };
    struct keylog_entry e;
    size_t off = 0;
    ck_assert(!keylog_next(&log, &off, &e));
    ck_assert_uint_eq(off, 0);
}
END_TEST

START_TEST(test_entries_come_back_in_order)
{
    static const char *const tags[] = { "rl.fixed", "new", "expired" };
    struct membuf log = { 0 };
    char key[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof(key), "k\r\n%d", i);
        key[1] = '\0';
        ck_assert(keylog_put(&log, tags[i % 3], i % 16, key,
                             i % 7 == 0 ? 0 : (size_t)n));
    }
    struct keylog_entry e;
    size_t off = 0;
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof(key), "k\r\n%d", i);
        key[1] = '\0';
        ck_assert(keylog_next(&log, &off, &e));
        ck_assert_ptr_eq(e.tag, tags[i % 3]);
        ck_assert_int_eq(e.db, i % 16);
        ck_assert_uint_eq(e.len, i % 7 == 0 ? 0 : (size_t)n);
        ck_assert(memcmp(e.key, key, e.len) == 0);
    }
    ck_assert(!keylog_next(&log, &off, &e));
    ck_assert_uint_eq(off, log.len);
    mem_free(log.p);
}
END_TEST

Suite *
keylog_suite(void)
{
    Suite *s = suite_create("keylog");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_an_empty_log_has_no_entry);
    tcase_add_test(tc, test_entries_come_back_in_order);
    suite_add_tcase(s, tc);
    return s;
}
