/*
 * check_mem.c - the counted allocator's buffer growth (mem_reserve()):
 * doubling from a first size, nothing moved when there is room, every
 * byte counted in mem_used(), and a size that would overflow refused
 * with the buffer left as it was.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "lib/mem.h"
#include "tests/unit/suites.h"

START_TEST(test_reserve_doubles_from_its_first_size)
{
    unsigned char *p = NULL;
    size_t cap = 0, before = mem_used();
    ck_assert(mem_reserve(&p, &cap, 0, 10, 64));
    ck_assert_uint_eq(cap, 64);
    ck_assert_uint_ge(mem_used(), before + 64);
    memset(p, 'x', 64);
    unsigned char *same = p;
    ck_assert(mem_reserve(&p, &cap, 60, 4, 64));     /* room: untouched */
    ck_assert(p == same && cap == 64);
    ck_assert(mem_reserve(&p, &cap, 60, 200, 64));   /* 260 bytes: 64 doubled to 512 */
    ck_assert_uint_eq(cap, 512);
    ck_assert_uint_eq(p[63], 'x');                   /* contents kept */
    mem_free(p);
    ck_assert_uint_eq(mem_used(), before);
}
END_TEST

START_TEST(test_reserve_refuses_an_overflowing_size)
{
    unsigned char *p = NULL;
    size_t cap = 0;
    ck_assert(mem_reserve(&p, &cap, 0, 1, 16));
    unsigned char *was = p;
    ck_assert(!mem_reserve(&p, &cap, 10, SIZE_MAX - 5, 16));
    ck_assert(p == was && cap == 16);
    ck_assert(!mem_reserve(&p, &cap, 16, SIZE_MAX / 2 + 1, 16));
    ck_assert(p == was && cap == 16);
    mem_free(p);
}
END_TEST

START_TEST(test_reserve_with_no_first_size_still_grows)
{
    unsigned char *p = NULL;
    size_t cap = 0;
    ck_assert(mem_reserve(&p, &cap, 0, 3, 0));
    ck_assert_uint_eq(cap, 4);
    mem_free(p);
}
END_TEST

Suite *
mem_suite(void)
{
    Suite *s = suite_create("mem");
    TCase *tc = tcase_create("reserve");
    tcase_add_test(tc, test_reserve_doubles_from_its_first_size);
    tcase_add_test(tc, test_reserve_refuses_an_overflowing_size);
    tcase_add_test(tc, test_reserve_with_no_first_size_still_grows);
    suite_add_tcase(s, tc);
    return s;
}
