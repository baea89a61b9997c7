/*
 * check_lease.c - the concurrency leases' set and decision
 * (algorithms/lease), driven as the RL.ACQUIRE handler drives them: prune,
 * decide, then set the end or append, with an injected "now" in ms.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/lease.h"
#include "tests/unit/suites.h"

#define T0 INT64_C(1893456000000)      /* 2030-01-01, in ms */

static unsigned char buf[4096];

static struct lease_set
empty_set(void)
{
    return (struct lease_set){ buf, 0, sizeof(buf), 0 };
}

/* An acquire as the handler makes it (no PEEK); its decision. */
static struct lease_decision
take(struct lease_set *s, int64_t now, int64_t limit, int64_t lease,
     const char *holder)
{
    struct lease_decision d;
    (void)lease_prune(s, now);
    ck_assert_int_eq(lease_decide(s, now, limit, lease, holder,
                                  strlen(holder), &d), LIMIT_OK);
    if (!d.limited) {
        if (d.held_off >= 0) {
            lease_set_end(s, (uint32_t)d.held_off, d.end_ms);
        } else {
            ck_assert(lease_append(s, holder, strlen(holder), d.end_ms));
        }
    }
    return d;
}

START_TEST(test_at_most_limit_holders_and_a_retry_keeps_its_slot)
{
    struct lease_set s = empty_set();
    struct lease_decision d = take(&s, T0, 2, 1000, "a");
    ck_assert(!d.limited);
    ck_assert_int_eq(d.remaining, 1);
    ck_assert_int_eq(d.retry_after_ms, -1);
    ck_assert_int_eq(d.reset_after_ms, 1000);
    d = take(&s, T0 + 10, 2, 5000, "b");
    ck_assert(!d.limited && d.remaining == 0);
    /* A retry: granted, no second slot, its end the later one. */
    d = take(&s, T0 + 20, 2, 500, "a");
    ck_assert(!d.limited && d.remaining == 0);
    ck_assert_int_eq(d.end_ms, T0 + 1000);
    ck_assert_uint_eq(s.n, 2);
    d = take(&s, T0 + 20, 2, 2000, "a");
    ck_assert_int_eq(d.end_ms, T0 + 2020);
    /* Full: to the first end, and to the last. */
    d = take(&s, T0 + 30, 2, 100, "c");
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ms, 1990);
    ck_assert_int_eq(d.reset_after_ms, 4980);
    ck_assert_uint_eq(s.n, 2);
}
END_TEST

START_TEST(test_a_lease_frees_its_slot_at_its_end_to_the_ms)
{
    struct lease_set s = empty_set();
    take(&s, T0, 1, 1000, "a");
    ck_assert(take(&s, T0 + 999, 1, 1, "b").limited);
    struct lease_decision d = take(&s, T0 + 1000, 1, 1, "b");
    ck_assert(!d.limited);
    ck_assert_uint_eq(s.n, 1);          /* a's entry pruned */
    struct lease_entry e;
    ck_assert(!lease_find(&s, "a", 1, &e));
    ck_assert_uint_eq(lease_live(&s, T0 + 1001, NULL, NULL), 0);
}
END_TEST

START_TEST(test_remove_and_prune_keep_the_others_whole)
{
    struct lease_set s = empty_set();
    static const char *const names[] = { "one", "two", "three", "four" };
    for (int i = 0; i < 4; i++) {
        take(&s, T0, 10, 100 * (i + 1), names[i]);
    }
    struct lease_entry e;
    ck_assert(lease_find(&s, "two", 3, &e));
    lease_remove(&s, e.off);
    ck_assert_uint_eq(s.n, 3);
    ck_assert_uint_eq(lease_prune(&s, T0 + 100), 1);   /* "one" */
    int64_t first, last;
    ck_assert_uint_eq(lease_live(&s, T0 + 100, &first, &last), 2);
    ck_assert_int_eq(first, T0 + 300);
    ck_assert_int_eq(last, T0 + 400);
    ck_assert(lease_find(&s, "three", 5, &e) && e.end_ms == T0 + 300);
    ck_assert(lease_find(&s, "four", 4, &e) && e.end_ms == T0 + 400);
    ck_assert_uint_eq(s.used, 2 * LEASE_ENTRY_HEAD + 5 + 4);
}
END_TEST

START_TEST(test_bounds_and_overflow)
{
    struct lease_set s = empty_set();
    struct lease_decision d;
    ck_assert_int_eq(lease_decide(&s, T0, 0, 1, NULL, 0, &d), LIMIT_EINVAL);
    ck_assert_int_eq(lease_decide(&s, T0, LEASE_LIMIT_MAX + 1, 1, NULL, 0,
                                  &d), LIMIT_EINVAL);
    ck_assert_int_eq(lease_decide(&s, T0, 1, 0, NULL, 0, &d), LIMIT_EINVAL);
    ck_assert_int_eq(lease_decide(&s, T0, 1, INT64_MAX, NULL, 0, &d),
                     LIMIT_EOVERFLOW);
    char big[LEASE_HOLDER_MAX + 1];
    memset(big, 'h', sizeof(big));
    ck_assert(!lease_append(&s, big, sizeof(big), T0));
    ck_assert(!lease_append(&s, big, 0, T0));
    ck_assert(lease_append(&s, big, LEASE_HOLDER_MAX, T0 + 1));
    struct lease_set tiny = { buf, 0, LEASE_ENTRY_HEAD, 0 };
    ck_assert(!lease_append(&tiny, "x", 1, T0 + 1));   /* no room */
    ck_assert_uint_eq(tiny.n, 0);
}
END_TEST

Suite *
lease_suite(void)
{
    Suite *s = suite_create("lease");
    TCase *tc = tcase_create("lease");

    tcase_add_test(tc, test_at_most_limit_holders_and_a_retry_keeps_its_slot);
    tcase_add_test(tc, test_a_lease_frees_its_slot_at_its_end_to_the_ms);
    tcase_add_test(tc, test_remove_and_prune_keep_the_others_whole);
    tcase_add_test(tc, test_bounds_and_overflow);
    suite_add_tcase(s, tc);
    return s;
}
