/*
 * check_set.c - the Redis set (lib/set.c): integers kept in increasing
 * order as an intset, other members after them in insertion order,
 * conversion at Redis's bounds and never back, random operations against
 * a model, encode/decode, effects replayed equal to the direct calls,
 * random picks and scans.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/set.h"
#include "tests/unit/suites.h"

static int
add_s(struct set *x, const char *m)
{
    return set_add(x, m, strlen(m));
}

static bool
rem_s(struct set *x, const char *m)
{
    return set_rem(x, m, strlen(m));
}

/* The set walked as "m,m,". */
static char *
dump(const struct set *x)
{
    static char buf[65536];
    size_t n = 0;
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        ck_assert_uint_lt(n + m.len + 2, sizeof(buf));
        memcpy(buf + n, m.data, m.len);
        n += m.len;
        buf[n++] = ',';
    }
    buf[n] = '\0';
    return buf;
}

START_TEST(test_integers_sorted_then_others_in_order)
{
    struct set x = { 0 };
    ck_assert_int_eq(add_s(&x, "10"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "-3"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "7"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "7"), SET_EXISTS);
    ck_assert_str_eq(dump(&x), "-3,7,10,");
    ck_assert(set_is_intset(&x));
    /* Not integers by Redis's rule: after the integers, as they came. */
    ck_assert_int_eq(add_s(&x, "b"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "007"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "+1"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "-0"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "5"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "b"), SET_EXISTS);
    ck_assert(!set_is_intset(&x));
    ck_assert_str_eq(dump(&x), "-3,5,7,10,b,007,+1,-0,");
    ck_assert(set_has(&x, "007", 3));
    ck_assert(!set_has(&x, "8", 1));
    ck_assert(set_has(&x, "5", 1));
    ck_assert(rem_s(&x, "b") && rem_s(&x, "007") && rem_s(&x, "+1"));
    ck_assert(rem_s(&x, "-0"));
    ck_assert(!rem_s(&x, "b"));
    ck_assert(set_is_intset(&x));
    ck_assert_str_eq(dump(&x), "-3,5,7,10,");
    ck_assert(set_is_compact(&x));
    /* The extremes of int64 and one past them. */
    ck_assert_int_eq(add_s(&x, "9223372036854775807"), SET_NEW);
    ck_assert_int_eq(add_s(&x, "-9223372036854775808"), SET_NEW);
    ck_assert(set_is_intset(&x));
    ck_assert_int_eq(add_s(&x, "9223372036854775808"), SET_NEW);
    ck_assert(!set_is_intset(&x));
    set_free(&x);
}
END_TEST

START_TEST(test_intset_converts_at_the_513th_integer)
{
    struct set x = { 0 };
    char m[32];
    for (int i = SET_MAX_INTSET_ENTRIES; i > 0; i--) {
        snprintf(m, sizeof(m), "%d", i);
        ck_assert_int_eq(add_s(&x, m), SET_NEW);
    }
    ck_assert(set_is_compact(&x));
    ck_assert_uint_eq(set_len(&x), SET_MAX_INTSET_ENTRIES);
    ck_assert(set_is_intset(&x));
    ck_assert_int_eq(add_s(&x, "1"), SET_EXISTS);
    ck_assert(set_is_compact(&x));
    ck_assert_int_eq(add_s(&x, "0"), SET_NEW);
    ck_assert(!set_is_compact(&x));
    ck_assert_uint_eq(set_len(&x), SET_MAX_INTSET_ENTRIES + 1);
    /* Never back, even emptied to one. */
    for (int i = 1; i <= SET_MAX_INTSET_ENTRIES; i++) {
        snprintf(m, sizeof(m), "%d", i);
        ck_assert(rem_s(&x, m));
    }
    ck_assert(!set_is_compact(&x));
    ck_assert_str_eq(dump(&x), "0,");
    set_free(&x);
}
END_TEST

START_TEST(test_other_members_convert_at_their_bounds)
{
    struct set x = { 0 };
    char m[80];
    /* An intset of 300 takes no string: Redis makes it a hash table. */
    for (int i = 0; i < 300; i++) {
        snprintf(m, sizeof(m), "%d", i);
        add_s(&x, m);
    }
    ck_assert_int_eq(add_s(&x, "a"), SET_NEW);
    ck_assert(!set_is_compact(&x));
    ck_assert_uint_eq(set_len(&x), 301);
    set_free(&x);
    for (int i = 0; i < SET_PACK_ENTRIES; i++) {
        snprintf(m, sizeof(m), "m%d", i);
        add_s(&x, m);
    }
    ck_assert(set_is_compact(&x));
    ck_assert_int_eq(add_s(&x, "7"), SET_NEW);
    ck_assert(!set_is_compact(&x));
    set_free(&x);
    memset(m, 'x', SET_PACK_VALUE);
    m[SET_PACK_VALUE] = '\0';
    ck_assert_int_eq(add_s(&x, m), SET_NEW);
    ck_assert(set_is_compact(&x));
    m[SET_PACK_VALUE] = 'x';
    m[SET_PACK_VALUE + 1] = '\0';
    ck_assert_int_eq(add_s(&x, m), SET_NEW);
    ck_assert(!set_is_compact(&x));
    ck_assert_uint_eq(set_len(&x), 2);
    set_free(&x);
    ck_assert_uint_eq(set_owned(&x), 0);
}
END_TEST

/* A member of the model's universe: integers, words, long words. */
static void
member(unsigned r, char *m)
{
    switch (r % 3) {
    case 0:
        snprintf(m, 80, "%d", (int)(r / 3 % 700) - 100);
        break;
    case 1:
        snprintf(m, 80, "w%u", r / 3 % 150);
        break;
    default:
        snprintf(m, 80, "%070u", r / 3 % 20);
        break;
    }
}

START_TEST(test_random_operations_match_a_model)
{
    srand(7);
    for (int round = 0; round < 20; round++) {
        struct set x = { 0 };
        static bool in[3 * 700];
        memset(in, 0, sizeof(in));
        uint64_t n = 0;
        int mix = round % 4;    /* some rounds integers only */
        for (int i = 0; i < 3000; i++) {
            unsigned r = (unsigned)rand() % (3 * 700);
            if (mix == 0) {
                r -= r % 3;
            }
            char m[80];
            member(r, m);
            unsigned id = r % 3 == 0 ? r / 3 % 700 * 3
                          : r % 3 == 1 ? r / 3 % 150 * 3 + 1
                                       : r / 3 % 20 * 3 + 2;
            if (rand() % 3 == 0) {
                ck_assert_int_eq(rem_s(&x, m), in[id]);
                n -= in[id];
                in[id] = false;
            } else {
                ck_assert_int_eq(add_s(&x, m), in[id] ? SET_EXISTS : SET_NEW);
                n += !in[id];
                in[id] = true;
            }
            ck_assert_uint_eq(set_len(&x), n);
            ck_assert(set_has(&x, m, strlen(m)) == in[id]);
        }
        /* Every member once. */
        struct set_iter it = { 0 };
        struct pack_item p;
        uint64_t walked = 0;
        while (set_next(&x, &it, &p)) {
            walked++;
        }
        ck_assert_uint_eq(walked, n);
        set_free(&x);
    }
}
END_TEST

static void
round_trip(const struct set *x)
{
    struct membuf b = { 0 };
    ck_assert(set_encode(x, &b));
    struct set y = { 0 };
    ck_assert_int_eq(set_decode(&y, b.p, b.len), COLL_OK);
    ck_assert_uint_eq(set_len(&y), set_len(x));
    ck_assert(set_is_compact(&y) == set_is_compact(x));
    if (set_is_compact(x)) {
        char *a = strdup(dump(x));
        ck_assert_str_eq(dump(&y), a);
        free(a);
    }
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        ck_assert(set_has(&y, m.data, m.len));
    }
    set_free(&y);
    mem_free(b.p);
}

START_TEST(test_encode_decode_round_trip)
{
    struct set x = { 0 };
    round_trip(&x);
    add_s(&x, "3");
    add_s(&x, "1");
    round_trip(&x);
    add_s(&x, "z");
    round_trip(&x);
    char m[16];
    for (int i = 0; i < 600; i++) {
        snprintf(m, sizeof(m), "k%d", i);
        add_s(&x, m);
    }
    round_trip(&x);
    set_free(&x);
}
END_TEST

/* The bytes are lib/packdict.h's, as snapshots and journals already
 * hold them: compact, the encoding byte, the pack's count and bytes and
 * its block; large, the count as a uint64 and each member length-prefixed;
 * an effect, a uint32 count and each member length-prefixed. */
START_TEST(test_bytes_are_the_packdict_layout)
{
    struct set x = { 0 };
    add_s(&x, "z");
    add_s(&x, "7");
    struct membuf b = { 0 };
    ck_assert(set_encode(&x, &b));
    uint32_t count = 2, bytes = x.pk.bytes;
    ck_assert_uint_eq(b.len, 9 + (size_t)bytes);
    ck_assert_uint_eq(b.p[0], 0);
    ck_assert_int_eq(memcmp(b.p + 1, &count, 4), 0);
    ck_assert_int_eq(memcmp(b.p + 5, &bytes, 4), 0);
    ck_assert_int_eq(memcmp(b.p + 9, "\0017\001z", 4), 0);
    set_free(&x);
    mem_free(b.p);

    char m[101];
    memset(m, 'm', 100);
    m[100] = '\0';
    add_s(&x, m);                       /* past 64 bytes: large at once */
    ck_assert(!set_is_compact(&x));
    b = (struct membuf){ 0 };
    ck_assert(set_encode(&x, &b));
    uint64_t n = 1;
    uint32_t len = 100;
    ck_assert_uint_eq(b.len, 1 + 8 + 4 + 100);
    ck_assert_uint_eq(b.p[0], 1);
    ck_assert_int_eq(memcmp(b.p + 1, &n, 8), 0);
    ck_assert_int_eq(memcmp(b.p + 9, &len, 4), 0);
    ck_assert_int_eq(memcmp(b.p + 13, m, 100), 0);
    set_free(&x);
    mem_free(b.p);

    const char *s[2] = { "a", "bc" };
    size_t l[2] = { 1, 2 };
    b = (struct membuf){ 0 };
    ck_assert(set_effect(&b, s, l, 2));
    uint32_t two = 2, one = 1;
    ck_assert_uint_eq(b.len, 4 + 4 + 1 + 4 + 2);
    ck_assert_int_eq(memcmp(b.p, &two, 4), 0);
    ck_assert_int_eq(memcmp(b.p + 4, &one, 4), 0);
    ck_assert_int_eq(memcmp(b.p + 8, "a", 1), 0);
    ck_assert_int_eq(memcmp(b.p + 9, &two, 4), 0);
    ck_assert_int_eq(memcmp(b.p + 13, "bc", 2), 0);
    mem_free(b.p);
}
END_TEST

/* A compact block of the given entries, encoded. */
static size_t
compact_bytes(unsigned char *out, const char *const *m, int n)
{
    struct pack pk = { 0 };
    for (int i = 0; i < n; i++) {
        struct pack_item it = { (const unsigned char *)m[i],
                                (uint32_t)strlen(m[i]) };
        ck_assert(pack_insert(&pk, pk.bytes, &it, 1));
    }
    out[0] = 0;
    memcpy(out + 1, &pk.count, 4);
    memcpy(out + 5, &pk.bytes, 4);
    memcpy(out + 9, pk.p, pk.bytes);
    size_t len = 9 + pk.bytes;
    pack_free(&pk);
    return len;
}

START_TEST(test_decode_refuses_what_no_set_is)
{
    unsigned char b[512];
    struct set y = { 0 };
    const char *good[] = { "1", "2", "a" };
    const char *unsorted[] = { "2", "1" };
    const char *twice[] = { "a", "a" };
    const char *int_after[] = { "a", "1" };
    size_t n = compact_bytes(b, good, 3);
    ck_assert_int_eq(set_decode(&y, b, n), COLL_OK);
    set_free(&y);
    for (size_t cut = 0; cut < n; cut++) {
        ck_assert_int_eq(set_decode(&y, b, cut), COLL_MALFORMED);
        set_free(&y);
    }
    n = compact_bytes(b, unsorted, 2);
    ck_assert_int_eq(set_decode(&y, b, n), COLL_MALFORMED);
    set_free(&y);
    n = compact_bytes(b, twice, 2);
    ck_assert_int_eq(set_decode(&y, b, n), COLL_MALFORMED);
    set_free(&y);
    n = compact_bytes(b, int_after, 2);
    ck_assert_int_eq(set_decode(&y, b, n), COLL_MALFORMED);
    set_free(&y);
    b[0] = 7;
    ck_assert_int_eq(set_decode(&y, b, n), COLL_MALFORMED);
    set_free(&y);
    ck_assert_uint_eq(mem_owned_bytes(), 0);
}
END_TEST

START_TEST(test_apply_equals_direct_operations)
{
    struct set x = { 0 }, y = { 0 };
    srand(11);
    for (int i = 0; i < 2000; i++) {
        char m[80];
        member((unsigned)rand(), m);
        const char *s[1] = { m };
        size_t len[1] = { strlen(m) };
        struct membuf b = { 0 };
        ck_assert(set_effect(&b, s, len, 1));
        uint8_t op = rand() % 3 == 0 ? SET_OP_REM : SET_OP_ADD;
        if (op == SET_OP_REM) {
            (void)set_rem(&x, m, len[0]);
        } else {
            ck_assert_int_ne(set_add(&x, m, len[0]), SET_NOMEM);
        }
        ck_assert_int_eq(set_apply(&y, op, b.p, b.len), COLL_OK);
        mem_free(b.p);
    }
    ck_assert_uint_eq(set_len(&x), set_len(&y));
    ck_assert(set_is_compact(&x) == set_is_compact(&y));
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(&x, &it, &m)) {
        ck_assert(set_has(&y, m.data, m.len));
    }
    /* A payload built one member at a time is the same bytes. */
    struct membuf p = { 0 }, q = { 0 };
    const char *two[2] = { "a", "bc" };
    size_t tl[2] = { 1, 2 };
    ck_assert(set_effect(&p, two, tl, 2));
    ck_assert(set_effect_open(&q) && set_effect_push(&q, "a", 1) &&
              set_effect_push(&q, "bc", 2));
    ck_assert_uint_eq(p.len, q.len);
    ck_assert_mem_eq(p.p, q.p, p.len);
    ck_assert_int_eq(set_apply(&y, 9, p.p, p.len), COLL_MALFORMED);
    ck_assert_int_eq(set_apply(&y, SET_OP_ADD, p.p, p.len - 1),
                     COLL_MALFORMED);
    mem_free(p.p);
    mem_free(q.p);
    set_free(&x);
    set_free(&y);
}
END_TEST

START_TEST(test_random_picks_reach_every_member)
{
    struct set x = { 0 };
    char m[16];
    for (int round = 0; round < 2; round++) {
        int n = round == 0 ? 5 : 1000;     /* compact, then large */
        for (int i = 0; i < n; i++) {
            snprintf(m, sizeof(m), "m%d", i);
            add_s(&x, m);
        }
        static int hits[1000];
        memset(hits, 0, sizeof(hits));
        for (int k = 0; k < 40 * n; k++) {
            struct pack_item p;
            set_random(&x, &p);
            ck_assert(set_has(&x, p.data, p.len));
            /* The member's bytes are not NUL-terminated: copy them out. */
            char num[16] = { 0 };
            ck_assert_uint_lt(p.len, sizeof(num));
            memcpy(num, p.data, p.len);
            hits[atoi(num + 1)]++;
        }
        for (int i = 0; i < n; i++) {
            ck_assert_int_gt(hits[i], 0);
        }
        set_free(&x);
    }
}
END_TEST

struct scan_seen {
    int n;
};

static void
scan_note(const struct pack_item *m, const struct pack_item *none,
          void *arg)
{
    (void)m;
    (void)none;
    ((struct scan_seen *)arg)->n++;
}

START_TEST(test_scan_whole_while_compact_then_by_cursor)
{
    struct set x = { 0 };
    struct scan_seen s = { 0 };
    add_s(&x, "1");
    add_s(&x, "a");
    ck_assert_uint_eq(set_scan(&x, 999, scan_note, &s), 0);
    ck_assert_int_eq(s.n, 2);
    char m[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(m, sizeof(m), "f%d", i);
        add_s(&x, m);
    }
    struct set y = { 0 };
    ck_assert(set_copy(&y, &x));
    ck_assert_uint_eq(set_len(&y), 1002);
    memset(&s, 0, sizeof(s));
    uint64_t cursor = 0;
    int steps = 0;
    do {
        cursor = set_scan(&x, cursor, scan_note, &s);
        steps++;
    } while (cursor != 0 && steps < 100000);
    ck_assert_int_eq(s.n, 1002);
    ck_assert_int_gt(steps, 1);
    set_free(&x);
    set_free(&y);
}
END_TEST

Suite *
set_suite(void)
{
    Suite *s = suite_create("set");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_integers_sorted_then_others_in_order);
    tcase_add_test(tc, test_intset_converts_at_the_513th_integer);
    tcase_add_test(tc, test_other_members_convert_at_their_bounds);
    tcase_add_test(tc, test_random_operations_match_a_model);
    tcase_add_test(tc, test_encode_decode_round_trip);
    tcase_add_test(tc, test_bytes_are_the_packdict_layout);
    tcase_add_test(tc, test_decode_refuses_what_no_set_is);
    tcase_add_test(tc, test_apply_equals_direct_operations);
    tcase_add_test(tc, test_random_picks_reach_every_member);
    tcase_add_test(tc, test_scan_whole_while_compact_then_by_cursor);
    suite_add_tcase(s, tc);
    return s;
}
