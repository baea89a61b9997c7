/*
 * check_dict.c - the hash table (lib/dict.c): random operations against a
 * plain array model while resizes are under way both ways, the bytes it
 * owns, entry pointers that survive resizes, scans that see every entry
 * present throughout across resizes and halfway through one, the bound
 * on the entries one add moves, allocation failures, and expand.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "tests/unit/suites.h"

#define NKEYS 600

/* Under AddressSanitizer an address-space limit cannot make malloc fail:
 * its allocator reserves its whole region up front. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* The model: key i is "k<i>" (or the empty key for i == 0), present or
 * not, and its value. */
struct model {
    bool present[NKEYS];
    unsigned char val[NKEYS][40];
    uint32_t vlen[NKEYS];
};

static uint32_t
key_of(unsigned i, char *buf)
{
    if (i == 0) {
        return 0;
    }
    return (uint32_t)snprintf(buf, 16, "k%u", i);
}

/* The bytes of d's tables. */
static size_t
tables_owned(const struct dict *d)
{
    return mem_usable(d->t) + mem_usable(d->t1);
}

/* The shape of a resize under way: old buckets below rehash_idx empty,
 * two different sizes. */
static void
check_shape(const struct dict *d)
{
    if (d->t == NULL) {
        ck_assert_ptr_null(d->t1);
        ck_assert_uint_eq(d->used, 0);
        return;
    }
    if (d->t1 == NULL) {
        return;
    }
    ck_assert_uint_ne(d->mask, d->mask1);
    ck_assert_uint_le(d->rehash_idx, d->mask);
    for (uint64_t b = 0; b < d->rehash_idx; b++) {
        ck_assert_ptr_null(d->t[b]);
    }
}

/* Every entry once, the count and the bytes owned agree with the model
 * of n keys (present[i], val[i], vlen[i]). */
static void
check_model(struct dict *d, unsigned n, const bool *present,
            unsigned char (*val)[40], const uint32_t *vlen)
{
    check_shape(d);
    uint64_t count = 0;
    size_t owned = 0;
    static unsigned char walked_count[1u << 16];
    ck_assert_uint_le(n, sizeof(walked_count));
    memset(walked_count, 0, n);
    struct dict_iter it = {0};
    uint64_t walked = 0;
    for (struct dict_entry *e = dict_next(d, &it); e != NULL;
         e = dict_next(d, &it)) {
        char buf[16];
        ck_assert_uint_lt(e->klen, sizeof(buf));
        memcpy(buf, dict_key(e), e->klen);
        buf[e->klen] = '\0';
        unsigned i = e->klen == 0 ? 0 : (unsigned)strtoul(buf + 1, NULL, 10);
        ck_assert_uint_lt(i, n);
        ck_assert(present[i]);
        ck_assert_uint_eq(walked_count[i], 0);
        walked_count[i] = 1;
        walked++;
        owned += mem_usable(e);
    }
    /* The finds after the walk: they may move entries. */
    for (unsigned i = 0; i < n; i++) {
        char k[16];
        uint32_t kl = key_of(i, k);
        struct dict_entry *e = dict_find(d, k, kl);
        if (!present[i]) {
            ck_assert_ptr_null(e);
            continue;
        }
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(e->klen, kl);
        ck_assert_uint_eq(e->vlen, vlen[i]);
        ck_assert(memcmp(dict_value(e), val[i], e->vlen) == 0);
        count++;
    }
    ck_assert_uint_eq(d->used, count);
    ck_assert_uint_eq(walked, count);
    /* The tables now: the finds may have ended a resize. */
    ck_assert_uint_eq(d->owned, owned + tables_owned(d));
    check_shape(d);
}

static void
check_against(struct dict *d, const struct model *m)
{
    check_model(d, NKEYS, m->present, (unsigned char (*)[40])m->val,
                m->vlen);
}

START_TEST(test_random_operations_match_a_model)
{
    static struct model m;
    memset(&m, 0, sizeof(m));
    struct dict d = {0};
    size_t before = mem_owned_bytes();
    unsigned seed = 12345;
    srand(seed);
    for (int step = 0; step < 20000; step++) {
        unsigned i = (unsigned)rand() % NKEYS;
        /* Phases: mostly adds, then mostly removes, so the table grows
         * and shrinks several times. */
        bool adding = (step / 3000) % 2 == 0;
        char k[16];
        uint32_t kl = key_of(i, k);
        struct dict_entry *e = dict_find(&d, k, kl);
        int r = rand() % 10;
        unsigned char v[40];
        uint32_t vl = (uint32_t)rand() % 40;
        for (uint32_t j = 0; j < vl; j++) {
            v[j] = (unsigned char)rand();
        }
        if (e == NULL) {
            if (adding || r < 3) {
                e = dict_add(&d, k, kl, v, vl);
                ck_assert_ptr_nonnull(e);
                ck_assert_ptr_null(e->owner.p);
                m.present[i] = true;
                memcpy(m.val[i], v, vl);
                m.vlen[i] = vl;
            }
        } else if (r < (adding ? 5 : 2)) {
            e->owner.d = 1.5;
            e = dict_set_value(&d, e, v, vl);
            ck_assert_ptr_nonnull(e);
            ck_assert(e->owner.d == 1.5);
            memcpy(m.val[i], v, vl);
            m.vlen[i] = vl;
        } else if (!adding || r < 7) {
            dict_remove(&d, e);
            m.present[i] = false;
        }
        if (step % 97 == 0) {
            check_against(&d, &m);
            ck_assert_uint_eq(mem_owned_bytes() - before, d.owned);
        }
    }
    check_against(&d, &m);
    dict_free(&d);
    ck_assert_uint_eq(d.used, 0);
    ck_assert_uint_eq(d.owned, 0);
    ck_assert_ptr_null(d.t);
    ck_assert_uint_eq(mem_owned_bytes(), before);
}
END_TEST

START_TEST(test_removing_everything_owns_nothing)
{
    struct dict d = {0};
    ck_assert_ptr_null(dict_find(&d, "a", 1));
    ck_assert_ptr_nonnull(dict_add(&d, "a", 1, "1", 1));
    ck_assert_ptr_nonnull(dict_add(&d, "b", 1, NULL, 0));
    dict_remove(&d, dict_find(&d, "a", 1));
    dict_remove(&d, dict_find(&d, "b", 1));
    ck_assert_uint_eq(d.owned, 0);
    ck_assert_ptr_null(d.t);
    struct dict_iter it = {0};
    ck_assert_ptr_null(dict_next(&d, &it));
    dict_free(&d);
}
END_TEST

struct seen {
    unsigned char *count;   /* per key index */
};

static void
note(const struct dict_entry *e, void *arg)
{
    struct seen *s = arg;
    char buf[16];
    memcpy(buf, dict_key(e), e->klen);
    buf[e->klen] = '\0';
    unsigned i = (unsigned)strtoul(buf + 1, NULL, 10);
    if (s->count[i] < 255) {
        s->count[i]++;
    }
}

static void
add_key(struct dict *d, unsigned i)
{
    char k[16];
    uint32_t kl = (uint32_t)snprintf(k, sizeof(k), "k%u", i);
    ck_assert_ptr_nonnull(dict_add(d, k, kl, "v", 1));
}

static void
remove_key(struct dict *d, unsigned i)
{
    char k[16];
    uint32_t kl = (uint32_t)snprintf(k, sizeof(k), "k%u", i);
    struct dict_entry *e = dict_find(d, k, kl);
    ck_assert_ptr_nonnull(e);
    dict_remove(d, e);
}

/* Keys [0, stable) stay for the whole scan; keys from 100000 up come and
 * go in between steps, growing (grow) or shrinking the table. */
static void
scan_across_resizes(unsigned stable, bool grow)
{
    struct dict d = {0};
    static unsigned char count[200000];
    memset(count, 0, sizeof(count));
    struct seen s = {count};
    unsigned extra = 0;
    if (!grow) {
        for (; extra < 4000; extra++) {
            add_key(&d, 100000 + extra);
        }
    }
    for (unsigned i = 0; i < stable; i++) {
        add_key(&d, i);
    }
    uint64_t cursor = 0;
    int steps = 0;
    do {
        cursor = dict_scan(&d, cursor, note, &s);
        steps++;
        if (grow) {
            for (int j = 0; j < 7 && extra < 20000; j++) {
                add_key(&d, 100000 + extra++);
            }
        } else {
            for (int j = 0; j < 7 && extra > 0; j++) {
                remove_key(&d, 100000 + --extra);
            }
        }
        ck_assert_int_lt(steps, 1000000);
    } while (cursor != 0);
    for (unsigned i = 0; i < stable; i++) {
        ck_assert_msg(count[i] >= 1, "k%u never returned", i);
    }
    dict_free(&d);
}

START_TEST(test_scan_returns_every_stable_entry_while_growing)
{
    scan_across_resizes(300, true);
}
END_TEST

START_TEST(test_scan_returns_every_stable_entry_while_shrinking)
{
    scan_across_resizes(50, false);
}
END_TEST

START_TEST(test_scan_of_a_still_table_returns_each_once)
{
    struct dict d = {0};
    static unsigned char count[1000];
    memset(count, 0, sizeof(count));
    struct seen s = {count};
    for (unsigned i = 0; i < 1000; i++) {
        add_key(&d, i);
    }
    uint64_t cursor = 0;
    do {
        cursor = dict_scan(&d, cursor, note, &s);
    } while (cursor != 0);
    for (unsigned i = 0; i < 1000; i++) {
        ck_assert_uint_eq(count[i], 1);
    }
    dict_free(&d);
    ck_assert_uint_eq(dict_scan(&d, 0, note, &s), 0);
}
END_TEST

START_TEST(test_expand_makes_room_without_a_resize)
{
    struct dict d = {0};
    ck_assert(dict_expand(&d, 1000));
    uint64_t mask = d.mask;
    ck_assert_uint_ge(mask + 1, 1000);
    for (unsigned i = 0; i < 1000; i++) {
        add_key(&d, i);
    }
    ck_assert_uint_eq(d.mask, mask);
    /* Never shrinks a table. */
    ck_assert(dict_expand(&d, 10));
    ck_assert_uint_eq(d.mask, mask);
    add_key(&d, 5000);
    ck_assert_uint_eq(d.used, 1001);
    dict_free(&d);
    ck_assert_uint_eq(d.owned, 0);
}
END_TEST

START_TEST(test_seeds_change_buckets_not_answers)
{
    unsigned char seed[16];
    for (int i = 0; i < 16; i++) {
        seed[i] = (unsigned char)(i * 7 + 1);
    }
    dict_seed(seed);
    struct dict d = {0};
    for (unsigned i = 0; i < 100; i++) {
        add_key(&d, i);
    }
    for (unsigned i = 0; i < 100; i++) {
        char k[16];
        uint32_t kl = (uint32_t)snprintf(k, sizeof(k), "k%u", i);
        ck_assert_ptr_nonnull(dict_find(&d, k, kl));
    }
    ck_assert_ptr_null(dict_find(&d, "k100", 4));
    dict_free(&d);
}
END_TEST

Suite *
dict_suite(void)
{
    Suite *s = suite_create("dict");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_random_operations_match_a_model);
    tcase_add_test(tc, test_removing_everything_owns_nothing);
    tcase_add_test(tc, test_scan_returns_every_stable_entry_while_growing);
    tcase_add_test(tc, test_scan_returns_every_stable_entry_while_shrinking);
    tcase_add_test(tc, test_scan_of_a_still_table_returns_each_once);
    tcase_add_test(tc, test_expand_makes_room_without_a_resize);
    tcase_add_test(tc, test_seeds_change_buckets_not_answers);
    suite_add_tcase(s, tc);
    return s;
}
