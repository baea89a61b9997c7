/*
 * check_topk.c - the Space-Saving summary (lib/topk.c): on Zipf (s = 1.0)
 * streams of 1,000,000 keys drawn from 100,000 with room for 1,024, the
 * reported top 10 are the exact top 10 (counted here) for several seeds,
 * in memory that never grows; decay by halves per window; the key length
 * bound; eviction keeps the index consistent.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/topk.h"
#include "tests/unit/suites.h"

#define NKEYS 100000
#define NDRAWS 1000000
#define WINDOW_NS 60000000000LL

/* FNV-1a: any fixed hash will do for the test. */
static uint64_t
hash_of(const char *k, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len && i < TOPK_KEY_MAX; i++) {
        h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
    }
    return h;
}

static void
record_s(struct topk *t, const char *k, int64_t now)
{
    topk_record(t, k, strlen(k), hash_of(k, strlen(k)), now);
}

static uint64_t
xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Rank r (0-based) with probability proportional to 1/(r+1). */
static size_t
zipf_draw(const double *cdf, uint64_t *state)
{
    double u = (double)(xorshift(state) >> 11) / 9007199254740992.0;
    size_t lo = 0, hi = NKEYS - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cdf[mid] < u) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static int
cmp_desc(const void *a, const void *b, const uint32_t *counts)
{
    uint32_t x = counts[*(const uint32_t *)a], y = counts[*(const uint32_t *)b];
    return (x < y) - (x > y);
}

static const uint32_t *g_counts;
static int
by_true_count(const void *a, const void *b)
{
    return cmp_desc(a, b, g_counts);
}

static void
zipf_run(uint64_t seed)
{
    double *cdf = malloc(NKEYS * sizeof(*cdf));
    uint32_t *counts = calloc(NKEYS, sizeof(*counts));
    uint32_t *ranks = malloc(NKEYS * sizeof(*ranks));
    ck_assert(cdf != NULL && counts != NULL && ranks != NULL);
    double sum = 0;
    for (size_t r = 0; r < NKEYS; r++) {
        sum += 1.0 / (double)(r + 1);
        cdf[r] = sum;
    }
    for (size_t r = 0; r < NKEYS; r++) {
        cdf[r] /= sum;
    }
    /* Keys are named by a shuffled id so rank and name are unrelated. */
    uint64_t st = seed;
    for (size_t r = 0; r < NKEYS; r++) {
        ranks[r] = (uint32_t)r;
    }
    for (size_t r = NKEYS - 1; r > 0; r--) {
        size_t j = (size_t)(xorshift(&st) % (r + 1));
        uint32_t tmp = ranks[r];
        ranks[r] = ranks[j];
        ranks[j] = tmp;
    }
    struct topk *t = topk_create(1024, WINDOW_NS, 0);
    ck_assert_ptr_nonnull(t);
    size_t mem_before = mem_used();
    char key[32];
    for (size_t i = 0; i < NDRAWS; i++) {
        uint32_t id = ranks[zipf_draw(cdf, &st)];
        counts[id]++;
        int n = snprintf(key, sizeof(key), "user:%u", id);
        topk_record(t, key, (size_t)n, hash_of(key, (size_t)n), 1);
    }
    ck_assert_uint_eq(mem_used(), mem_before);
    uint32_t *ids = malloc(NKEYS * sizeof(*ids));
    ck_assert_ptr_nonnull(ids);
    for (size_t i = 0; i < NKEYS; i++) {
        ids[i] = (uint32_t)i;
    }
    g_counts = counts;
    qsort(ids, NKEYS, sizeof(*ids), by_true_count);
    struct topk_entry top[10];
    ck_assert_uint_eq(topk_top(t, top, 10), 10);
    for (size_t i = 0; i < 10; i++) {
        int n = snprintf(key, sizeof(key), "user:%u", ids[i]);
        ck_assert_uint_eq(top[i].len, (size_t)n);
        ck_assert_mem_eq(top[i].key, key, (size_t)n);
        /* Space-Saving's bounds: count - error <= true <= count. */
        ck_assert_uint_ge(top[i].count, counts[ids[i]]);
        ck_assert_uint_le(top[i].count - top[i].error, counts[ids[i]]);
    }
    ck_assert_uint_eq(mem_used(), mem_before);
    topk_destroy(t);
    free(ids);
    free(ranks);
    free(counts);
    free(cdf);
}

START_TEST(test_zipf_top10_is_the_true_top10)
{
    static const uint64_t seeds[] = { 1, 42, 20260411, 0x9e3779b97f4a7c15ULL,
                                      777 };
    zipf_run(seeds[_i]);
}
END_TEST

START_TEST(test_counts_order_and_ties)
{
    struct topk *t = topk_create(4, WINDOW_NS, 0);
    ck_assert_ptr_nonnull(t);
    for (int i = 0; i < 5; i++) {
        record_s(t, "b", 0);
    }
    for (int i = 0; i < 3; i++) {
        record_s(t, "a", 0);
        record_s(t, "c", 0);
    }
    struct topk_entry e[8];
    ck_assert_uint_eq(topk_top(t, e, 8), 3);
    ck_assert_uint_eq(topk_size(t), 3);
    ck_assert_mem_eq(e[0].key, "b", 1);
    ck_assert_uint_eq(e[0].count, 5);
    ck_assert_mem_eq(e[1].key, "a", 1);   /* tie: key order */
    ck_assert_mem_eq(e[2].key, "c", 1);
    ck_assert_uint_eq(e[2].error, 0);
    ck_assert_uint_eq(topk_top(t, e, 1), 1);
    topk_clear(t);
    ck_assert_uint_eq(topk_top(t, e, 8), 0);
    topk_destroy(t);
}
END_TEST

/* A full summary: a new key takes the least counted slot, count + 1, and
 * the evicted key is gone from the index (seen again, it starts over). */
START_TEST(test_eviction_takes_the_least_counted)
{
    struct topk *t = topk_create(2, WINDOW_NS, 0);
    record_s(t, "x", 0);
    record_s(t, "x", 0);
    record_s(t, "y", 0);
    record_s(t, "z", 0);                 /* evicts y (1): z = 2, error 1 */
    struct topk_entry e[4];
    ck_assert_uint_eq(topk_top(t, e, 4), 2);
    ck_assert_mem_eq(e[0].key, "x", 1);
    ck_assert_mem_eq(e[1].key, "z", 1);
    ck_assert_uint_eq(e[1].count, 2);
    ck_assert_uint_eq(e[1].error, 1);
    record_s(t, "z", 0);
    ck_assert_uint_eq(topk_top(t, e, 4), 2);
    ck_assert_mem_eq(e[0].key, "z", 1);
    ck_assert_uint_eq(e[0].count, 3);
    topk_destroy(t);
}
END_TEST

/* Many keys through a small summary: every monitored key is found again
 * by the index after the shifts of deletions (no duplicate slots). */
START_TEST(test_index_stays_consistent_under_churn)
{
    struct topk *t = topk_create(16, WINDOW_NS, 0);
    uint64_t st = 7;
    char k[16];
    for (int i = 0; i < 200000; i++) {
        snprintf(k, sizeof(k), "k%u", (unsigned)(xorshift(&st) % 64));
        record_s(t, k, 0);
    }
    struct topk_entry e[16];
    size_t n = topk_top(t, e, 16);
    ck_assert_uint_eq(n, 16);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            ck_assert(e[i].len != e[j].len
                      || memcmp(e[i].key, e[j].key, e[i].len) != 0);
        }
        total += e[i].count;
    }
    ck_assert_uint_eq(total, 200000);    /* Space-Saving keeps the sum */
    topk_destroy(t);
}
END_TEST

/* With room for every key the counts are exact: a model of 24 keys, counts
 * halved at each window, against random records and window steps (the
 * buckets merge on a halving and split on a record). */
START_TEST(test_counts_are_exact_with_room_for_every_key)
{
    struct topk *t = topk_create(32, WINDOW_NS, 0);
    uint64_t model[24] = { 0 };
    uint64_t st = 99;
    int64_t now = 0;
    char k[8];
    for (int i = 0; i < 100000; i++) {
        uint64_t r = xorshift(&st);
        if (r % 997 == 0) {
            now += WINDOW_NS * (int64_t)(1 + r % 3);
            for (int j = 0; j < 24; j++) {
                model[j] >>= 1 + r % 3;
            }
        }
        unsigned id = (unsigned)(r >> 8) % 24 * ((r >> 16) % 3 == 0) +
                      (unsigned)(r >> 24) % 3;   /* skewed to ids 0..2 */
        id %= 24;
        model[id]++;
        snprintf(k, sizeof(k), "k%u", id);
        record_s(t, k, now);
    }
    struct topk_entry e[32];
    size_t n = topk_top(t, e, 32);
    size_t live = 0;
    for (int j = 0; j < 24; j++) {
        live += model[j] > 0;
    }
    ck_assert_uint_eq(n, live);
    ck_assert_uint_eq(topk_size(t), live);
    for (size_t i = 0; i < n; i++) {
        unsigned id = (unsigned)atoi(e[i].key + 1);
        ck_assert_uint_eq(e[i].count, model[id]);
        ck_assert_uint_eq(e[i].error, 0);
        ck_assert(i == 0 || e[i - 1].count >= e[i].count);
    }
    topk_destroy(t);
}
END_TEST

START_TEST(test_counts_halve_every_window)
{
    struct topk *t = topk_create(8, WINDOW_NS, 1000);
    for (int i = 0; i < 8; i++) {
        record_s(t, "old", 1000);
    }
    struct topk_entry e[2];
    topk_decay(t, 1000 + WINDOW_NS - 1);
    ck_assert_uint_eq(topk_top(t, e, 2), 1);
    ck_assert_uint_eq(e[0].count, 8);
    topk_decay(t, 1000 + WINDOW_NS);
    topk_top(t, e, 2);
    ck_assert_uint_eq(e[0].count, 4);
    record_s(t, "new", 1000 + 3 * WINDOW_NS);      /* two more halvings */
    ck_assert_uint_eq(topk_top(t, e, 2), 2);
    ck_assert_mem_eq(e[0].key, "new", 3);
    ck_assert_uint_eq(e[1].count, 1);
    topk_decay(t, 1000 + 4 * WINDOW_NS);           /* 1 -> 0: gone */
    ck_assert_uint_eq(topk_size(t), 0);
    ck_assert_uint_eq(topk_top(t, e, 2), 0);
    topk_decay(t, 0);                              /* the clock went back */
    topk_decay(t, INT64_MAX);                      /* far ahead: all zero */
    ck_assert_uint_eq(topk_size(t), 0);
    topk_destroy(t);
}
END_TEST

START_TEST(test_long_keys_are_kept_to_the_bound)
{
    struct topk *t = topk_create(8, WINDOW_NS, 0);
    char k[TOPK_KEY_MAX + 50];
    memset(k, 'q', sizeof(k));
    topk_record(t, k, sizeof(k), hash_of(k, sizeof(k)), 0);
    k[TOPK_KEY_MAX + 10] = 'r';          /* same first bytes: same entry */
    topk_record(t, k, sizeof(k), hash_of(k, sizeof(k)), 0);
    topk_record(t, k, TOPK_KEY_MAX, hash_of(k, TOPK_KEY_MAX), 0);
    struct topk_entry e[4];
    ck_assert_uint_eq(topk_top(t, e, 4), 2);
    ck_assert_uint_eq(e[0].len, TOPK_KEY_MAX);
    ck_assert(e[0].truncated);
    ck_assert_uint_eq(e[0].count, 2);
    ck_assert(!e[1].truncated);
    topk_destroy(t);
}
END_TEST

START_TEST(test_create_refuses_out_of_range)
{
    ck_assert_ptr_null(topk_create(0, WINDOW_NS, 0));
    ck_assert_ptr_null(topk_create(4, 0, 0));
    ck_assert_ptr_null(topk_create((size_t)1 << 25, WINDOW_NS, 0));
    size_t before = mem_used();
    struct topk *t = topk_create(100, WINDOW_NS, 0);
    ck_assert_uint_gt(mem_used(), before);
    ck_assert_uint_eq(topk_capacity(t), 100);
    topk_destroy(t);
    ck_assert_uint_eq(mem_used(), before);
}
END_TEST

Suite *
topk_suite(void)
{
    Suite *s = suite_create("topk");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_zipf_top10_is_the_true_top10, 0, 5);
    tcase_add_test(tc, test_counts_order_and_ties);
    tcase_add_test(tc, test_eviction_takes_the_least_counted);
    tcase_add_test(tc, test_index_stays_consistent_under_churn);
    tcase_add_test(tc, test_counts_halve_every_window);
    tcase_add_test(tc, test_counts_are_exact_with_room_for_every_key);
    tcase_add_test(tc, test_long_keys_are_kept_to_the_bound);
    tcase_add_test(tc, test_create_refuses_out_of_range);
    suite_add_tcase(s, tc);
    return s;
}
