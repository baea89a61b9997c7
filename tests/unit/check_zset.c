/*
 * check_zset.c - the sorted set (lib/zset.c) against a naive model (a
 * sorted array) over thousands of random operations in both encodings,
 * its conversion points, its bytes and its element effects.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dict.h"
#include "lib/zset.h"
#include "suites.h"

/* ---- the model -------------------------------------------------------------- */

struct mel {
    char m[80];
    size_t len;
    double s;
};

struct model {
    struct mel e[4096];
    size_t n;
};

static int
mcmp(const void *a, const void *b)
{
    const struct mel *x = a, *y = b;
    if (x->s != y->s) {
        return x->s < y->s ? -1 : 1;
    }
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->m, y->m, n);
    if (c != 0) {
        return c;
    }
    return x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

static long
mfind(const struct model *md, const char *m, size_t len)
{
    for (size_t i = 0; i < md->n; i++) {
        if (md->e[i].len == len && memcmp(md->e[i].m, m, len) == 0) {
            return (long)i;
        }
    }
    return -1;
}

static void
mset(struct model *md, const char *m, size_t len, double s)
{
    long i = mfind(md, m, len);
    if (i < 0) {
        i = (long)md->n++;
        memcpy(md->e[i].m, m, len);
        md->e[i].len = len;
    }
    md->e[i].s = s;
    qsort(md->e, md->n, sizeof(md->e[0]), mcmp);
}

static void
mdel_at(struct model *md, size_t i, size_t n)
{
    memmove(&md->e[i], &md->e[i + n], (md->n - i - n) * sizeof(md->e[0]));
    md->n -= n;
}

/* Every member, score, rank and lookup of x equals the model's. */
static void
check_equal(const struct zset *x, const struct model *md)
{
    ck_assert_uint_eq(zset_len(x), md->n);
    if (md->n == 0) {
        return;
    }
    struct zset_iter it;
    zset_iter_at(&it, x, 0);
    for (size_t i = 0; i < md->n; i++) {
        const unsigned char *m;
        size_t len;
        double s;
        if (i > 0) {
            ck_assert(zset_iter_next(&it));
        }
        zset_iter_get(&it, &m, &len, &s);
        ck_assert_uint_eq(len, md->e[i].len);
        ck_assert(memcmp(m, md->e[i].m, len) == 0);
        ck_assert(s == md->e[i].s);
        uint64_t r;
        ck_assert(zset_rank(x, m, len, false, &r));
        ck_assert_uint_eq(r, i);
        ck_assert(zset_rank(x, m, len, true, &r));
        ck_assert_uint_eq(r, md->n - 1 - i);
        double got;
        ck_assert(zset_score(x, m, len, &got));
        ck_assert(got == md->e[i].s);
    }
    ck_assert(!zset_iter_next(&it));
    /* Backwards from a random rank. */
    size_t from = (size_t)rand() % md->n;
    zset_iter_at(&it, x, from);
    for (size_t i = from + 1; i-- > 0;) {
        const unsigned char *m;
        size_t len;
        double s;
        zset_iter_get(&it, &m, &len, &s);
        ck_assert_uint_eq(len, md->e[i].len);
        ck_assert(memcmp(m, md->e[i].m, len) == 0);
        ck_assert_int_eq(zset_iter_prev(&it), i > 0);
    }
}

/* Score ranges: first, last, count against the model's. */
static void
check_range(const struct zset *x, const struct model *md,
            const struct zset_range *r)
{
    long first = -1, last = -1;
    uint64_t count = 0;
    for (size_t i = 0; i < md->n; i++) {
        if (zset_score_gte_min(md->e[i].s, r) &&
            zset_score_lte_max(md->e[i].s, r)) {
            if (first < 0) {
                first = (long)i;
            }
            last = (long)i;
            count++;
        }
    }
    uint64_t got;
    ck_assert_int_eq(zset_first_in_range(x, r, &got), first >= 0);
    if (first >= 0) {
        ck_assert_uint_eq(got, (uint64_t)first);
        ck_assert(zset_last_in_range(x, r, &got));
        ck_assert_uint_eq(got, (uint64_t)last);
    }
    ck_assert_uint_eq(zset_count_range(x, r), count);
}

/* Lex ranges on a set whose scores are all equal. */
static void
check_lex(const struct zset *x, const struct model *md,
          const struct zset_lex *r)
{
    long first = -1, last = -1;
    uint64_t count = 0;
    for (size_t i = 0; i < md->n; i++) {
        if (zset_lex_gte_min(md->e[i].m, md->e[i].len, r) &&
            zset_lex_lte_max(md->e[i].m, md->e[i].len, r)) {
            if (first < 0) {
                first = (long)i;
            }
            last = (long)i;
            count++;
        }
    }
    uint64_t got;
    ck_assert_int_eq(zset_first_in_lex(x, r, &got), first >= 0);
    if (first >= 0) {
        ck_assert_uint_eq(got, (uint64_t)first);
        ck_assert(zset_last_in_lex(x, r, &got));
        ck_assert_uint_eq(got, (uint64_t)last);
    }
    ck_assert_uint_eq(zset_count_lex(x, r), count);
}

/* The bytes of x's whole state. */
static struct membuf
encoded(const struct zset *x)
{
    struct membuf b = { 0 };
    ck_assert(zset_encode(x, &b));
    return b;
}

static void
check_same_bytes(const struct zset *a, const struct zset *b)
{
    struct membuf ea = encoded(a), eb = encoded(b);
    ck_assert_uint_eq(ea.len, eb.len);
    ck_assert(memcmp(ea.p, eb.p, ea.len) == 0);
    mem_free(ea.p);
    mem_free(eb.p);
}

static void
check_round_trip(const struct zset *x)
{
    struct membuf b = encoded(x);
    struct zset y = { 0 };
    ck_assert_int_eq(zset_decode(&y, b.p, b.len), COLL_OK);
    ck_assert_int_eq(zset_is_compact(&y), zset_is_compact(x));
    check_same_bytes(x, &y);
    zset_free(&y);
    mem_free(b.p);
}

static double
rand_score(void)
{
    switch (rand() % 8) {
    case 0:
        return (double)(rand() % 5);
    case 1:
        return -INFINITY;
    case 2:
        return INFINITY;
    default:
        return (double)(rand() % 200) / 4.0 - 20.0;
    }
}

static size_t
rand_member(char *buf, int pool)
{
    int k = rand() % pool;
    return (size_t)snprintf(buf, 32, "m%d", k);
}

/*
 * ops random operations on x (and the model), each one's effect also
 * built and applied to y, which must come out byte for byte the same.
 */
static void
random_ops(int ops, int pool, bool same_score)
{
    struct zset x = { 0 }, y = { 0 };
    static struct model md;
    md.n = 0;
    for (int op = 0; op < ops; op++) {
        char m[32];
        size_t len = rand_member(m, pool);
        struct membuf eff = { 0 };
        int kind = rand() % 10;
        uint8_t opn = ZSET_OP_ADD;
        if (kind < 6) {
            unsigned flags = 0;
            int f = rand() % 8;
            flags = f == 1 ? ZSET_NX : f == 2 ? ZSET_XX : f == 3 ? ZSET_GT
                  : f == 4 ? ZSET_LT : f == 5 ? ZSET_INCR
                  : f == 6 ? ZSET_XX | ZSET_GT : 0;
            double s = same_score ? 0 : rand_score(), ns = 0;
            long at = mfind(&md, m, len);
            enum zset_add_rc rc = zset_add(&x, m, len, s, flags, &ns);
            double want = s;
            if (at >= 0 && (flags & ZSET_INCR)) {
                want = md.e[at].s + s;
            }
            if (isnan(want)) {
                ck_assert_int_eq(rc, ZSET_NAN);
            } else if ((at >= 0 && (flags & ZSET_NX)) ||
                       (at < 0 && (flags & ZSET_XX)) ||
                       (at >= 0 && (flags & ZSET_GT) && want <= md.e[at].s) ||
                       (at >= 0 && (flags & ZSET_LT) &&
                        want >= md.e[at].s)) {
                ck_assert_int_eq(rc, ZSET_NOP);
            } else if (at < 0) {
                ck_assert_int_eq(rc, ZSET_ADDED);
                ck_assert(ns == want);
                mset(&md, m, len, want);
            } else if (want == md.e[at].s) {
                ck_assert_int_eq(rc, ZSET_SAME);
            } else {
                ck_assert_int_eq(rc, ZSET_UPDATED);
                ck_assert(ns == want);
                mset(&md, m, len, want);
            }
            if (rc == ZSET_ADDED || rc == ZSET_UPDATED) {
                ck_assert(zset_effect_add(&eff, m, len, ns));
            }
        } else if (kind < 8) {
            long at = mfind(&md, m, len);
            ck_assert_int_eq(zset_remove(&x, m, len), at >= 0);
            if (at >= 0) {
                mdel_at(&md, (size_t)at, 1);
                ck_assert(zset_effect_rem(&eff, m, len));
            }
            opn = ZSET_OP_REM;
        } else if (md.n > 0) {
            size_t first = (size_t)rand() % md.n;
            size_t n = 1 + (size_t)rand() % 3;
            if (first + n > md.n) {
                n = md.n - first;
            }
            for (size_t i = first; i < first + n; i++) {
                ck_assert(zset_effect_rem(&eff, md.e[i].m, md.e[i].len));
            }
            zset_remove_ranks(&x, first, n);
            mdel_at(&md, first, n);
            opn = ZSET_OP_REM;
        }
        if (eff.len > 0) {
            ck_assert_int_eq(zset_apply(&y, opn, eff.p, eff.len), COLL_OK);
        }
        mem_free(eff.p);
        if (op % 97 == 0 || op == ops - 1) {
            check_equal(&x, &md);
            check_same_bytes(&x, &y);
            check_round_trip(&x);
            for (int k = 0; k < 8; k++) {
                struct zset_range r = { rand_score(), rand_score(),
                                        rand() % 2 == 0, rand() % 2 == 0 };
                check_range(&x, &md, &r);
            }
            if (same_score) {
                for (int k = 0; k < 8; k++) {
                    char a[32], b[32];
                    size_t al = rand_member(a, pool);
                    size_t bl = rand_member(b, pool);
                    struct zset_lex r = {
                        { (unsigned char *)a, al, rand() % 2 == 0,
                          rand() % 5 == 0 ? -1 : 0 },
                        { (unsigned char *)b, bl, rand() % 2 == 0,
                          rand() % 5 == 0 ? 1 : 0 },
                    };
                    check_lex(&x, &md, &r);
                }
            }
        }
    }
    ck_assert_int_eq(zset_is_compact(&x), md.n <= ZSET_PACK_MAX_ENTRIES &&
                                              pool <= ZSET_PACK_MAX_ENTRIES);
    zset_free(&x);
    zset_free(&y);
    ck_assert_uint_eq(zset_owned(&x), 0);
}

START_TEST(test_random_ops_compact)
{
    srand(11);
    random_ops(5000, 100, false);
}
END_TEST

START_TEST(test_random_ops_large)
{
    srand(12);
    random_ops(20000, 3000, false);
}
END_TEST

START_TEST(test_random_lex_both_encodings)
{
    srand(13);
    random_ops(3000, 60, true);
    random_ops(6000, 1500, true);
}
END_TEST

/* ---- conversion points ------------------------------------------------------ */

START_TEST(test_converts_at_129_members)
{
    struct zset x = { 0 };
    char m[16];
    double ns;
    for (int i = 0; i < 128; i++) {
        size_t len = (size_t)snprintf(m, sizeof(m), "k%03d", i);
        ck_assert_int_eq(zset_add(&x, m, len, i, 0, &ns), ZSET_ADDED);
    }
    ck_assert(zset_is_compact(&x));
    /* Updates and a refused XX add do not convert it. */
    ck_assert_int_eq(zset_add(&x, "k000", 4, 500, 0, &ns), ZSET_UPDATED);
    ck_assert_int_eq(zset_add(&x, "new", 3, 1, ZSET_XX, &ns), ZSET_NOP);
    ck_assert(zset_is_compact(&x));
    ck_assert_int_eq(zset_add(&x, "new", 3, 1, 0, &ns), ZSET_ADDED);
    ck_assert(!zset_is_compact(&x));
    ck_assert_uint_eq(zset_len(&x), 129);
    /* Never back. */
    ck_assert(zset_remove(&x, "new", 3));
    zset_remove_ranks(&x, 0, 100);
    ck_assert(!zset_is_compact(&x));
    ck_assert_uint_eq(zset_len(&x), 28);
    uint64_t r;
    ck_assert(zset_rank(&x, "k000", 4, false, &r));
    ck_assert_uint_eq(r, 27);
    check_round_trip(&x);
    zset_free(&x);
}
END_TEST

START_TEST(test_converts_at_a_65_byte_member)
{
    struct zset x = { 0 };
    char m[80];
    double ns;
    memset(m, 'a', sizeof(m));
    ck_assert_int_eq(zset_add(&x, m, 64, 1, 0, &ns), ZSET_ADDED);
    ck_assert(zset_is_compact(&x));
    ck_assert_int_eq(zset_add(&x, m, 65, 1, 0, &ns), ZSET_ADDED);
    ck_assert(!zset_is_compact(&x));
    zset_free(&x);
    /* A new set whose first member is long starts large, as Redis's. */
    ck_assert_int_eq(zset_add(&x, m, 65, 1, 0, &ns), ZSET_ADDED);
    ck_assert(!zset_is_compact(&x));
    ck_assert_uint_eq(zset_len(&x), 1);
    check_round_trip(&x);
    zset_free(&x);
}
END_TEST

START_TEST(test_nan_and_incr)
{
    struct zset x = { 0 };
    double ns;
    ck_assert_int_eq(zset_add(&x, "a", 1, NAN, 0, &ns), ZSET_NAN);
    ck_assert_uint_eq(zset_len(&x), 0);
    ck_assert_int_eq(zset_add(&x, "a", 1, INFINITY, ZSET_INCR, &ns),
                     ZSET_ADDED);
    ck_assert(ns == INFINITY);
    ck_assert_int_eq(zset_add(&x, "a", 1, -INFINITY, ZSET_INCR, &ns),
                     ZSET_NAN);
    ck_assert_int_eq(zset_add(&x, "a", 1, 0, ZSET_INCR, &ns), ZSET_SAME);
    ck_assert(ns == INFINITY);
    zset_free(&x);
}
END_TEST

/* ---- bytes ------------------------------------------------------------------- */

START_TEST(test_decode_refuses_malformed_bytes)
{
    struct zset x = { 0 };
    double ns;
    ck_assert_int_eq(zset_add(&x, "b", 1, 2, 0, &ns), ZSET_ADDED);
    ck_assert_int_eq(zset_add(&x, "a", 1, 1, 0, &ns), ZSET_ADDED);
    struct membuf b = encoded(&x);
    /* Every cut is refused. */
    for (size_t cut = 0; cut < b.len; cut++) {
        struct zset y = { 0 };
        ck_assert_int_eq(zset_decode(&y, b.p, cut), COLL_MALFORMED);
        zset_free(&y);
    }
    /* Out of order (a after b) and NaN scores are refused. */
    struct membuf bad = { 0 };
    uint8_t kind = 0;
    uint64_t n = 2;
    ck_assert(membuf_put(&bad, &kind, 1) && membuf_put(&bad, &n, 8));
    ck_assert(zset_effect_add(&bad, "b", 1, 2));
    ck_assert(zset_effect_add(&bad, "a", 1, 1));
    struct zset y = { 0 };
    ck_assert_int_eq(zset_decode(&y, bad.p, bad.len), COLL_MALFORMED);
    zset_free(&y);
    bad.len = 9;
    ck_assert(zset_effect_add(&bad, "a", 1, NAN));
    ck_assert(zset_effect_add(&bad, "b", 1, 1));
    ck_assert_int_eq(zset_decode(&y, bad.p, bad.len), COLL_MALFORMED);
    zset_free(&y);
    /* A member twice in a large one. */
    bad.len = 0;
    kind = 1;
    ck_assert(membuf_put(&bad, &kind, 1) && membuf_put(&bad, &n, 8));
    ck_assert(zset_effect_add(&bad, "a", 1, 1));
    ck_assert(zset_effect_add(&bad, "a", 1, 2));
    ck_assert_int_eq(zset_decode(&y, bad.p, bad.len), COLL_MALFORMED);
    zset_free(&y);
    /* An effect cut short changes nothing. */
    struct membuf eff = { 0 };
    ck_assert(zset_effect_add(&eff, "zz", 2, 9));
    ck_assert_int_eq(zset_apply(&x, ZSET_OP_ADD, eff.p, eff.len - 1),
                     COLL_MALFORMED);
    ck_assert_int_eq(zset_apply(&x, 9, eff.p, eff.len), COLL_MALFORMED);
    ck_assert_uint_eq(zset_len(&x), 2);
    mem_free(eff.p);
    mem_free(bad.p);
    mem_free(b.p);
    zset_free(&x);
}
END_TEST

Suite *
zset_suite(void)
{
    Suite *s = suite_create("zset");
    TCase *tc = tcase_create("zset");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_random_ops_compact);
    tcase_add_test(tc, test_random_ops_large);
    tcase_add_test(tc, test_random_lex_both_encodings);
    tcase_add_test(tc, test_converts_at_129_members);
    tcase_add_test(tc, test_converts_at_a_65_byte_member);
    tcase_add_test(tc, test_nan_and_incr);
    tcase_add_test(tc, test_decode_refuses_malformed_bytes);
    suite_add_tcase(s, tc);
    return s;
}
