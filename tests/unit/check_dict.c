/*
 * check_dict.c - the hash table (lib/dict.c): random operations against a
 * plain array model while resizes are under way both ways, the bytes it
 * owns, entry pointers that survive resizes, scans that see every entry
 * present throughout across resizes and halfway through one, the bound
 * on the entries one add moves, allocation failures, expand, and the
 * server's dicts, whose memory is not keys'.
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
 * of n keys (present[i], val[i], vlen[i]); the walk checks every entry
 * without moving any, then dict_find checks every key (sample 0) or
 * every sample-th one (fewer finds, which would move entries). */
static void
check_model(struct dict *d, unsigned n, const bool *present,
            unsigned char (*val)[40], const uint32_t *vlen, unsigned sample)
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
        ck_assert_uint_eq(e->vlen, vlen[i]);
        ck_assert(memcmp(dict_value(e), val[i], e->vlen) == 0);
        walked_count[i] = 1;
        walked++;
        owned += mem_usable(e);
    }
    for (unsigned i = 0; i < n; i++) {
        count += present[i];
    }
    ck_assert_uint_eq(d->used, count);
    ck_assert_uint_eq(walked, count);
    ck_assert_uint_eq(d->owned, owned + tables_owned(d));
    /* The finds after the walk: they may move entries. */
    for (unsigned i = sample == 0 ? 0 : (unsigned)rand() % sample; i < n;
         i += sample == 0 ? 1 : sample) {
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
    }
    /* The tables now: the finds may have ended a resize. */
    ck_assert_uint_eq(d->owned, owned + tables_owned(d));
    check_shape(d);
}

static void
check_against(struct dict *d, const struct model *m)
{
    check_model(d, NKEYS, m->present, (unsigned char (*)[40])m->val,
                m->vlen, 0);
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

/* ---- resizes under way ---------------------------------------------------- */

#define NBIG 20000

struct big_model {
    bool present[NBIG];
    unsigned char val[NBIG][40];
    uint32_t vlen[NBIG];
    struct dict_entry *ptr[NBIG];   /* what dict_add/set_value returned */
};

/* Random adds, finds, value changes and removes over NBIG keys in phases
 * that grow the table to thousands of buckets and shrink it back, a few
 * times, with checks against the model while a resize is under way in
 * both directions; an entry keeps its address across every resize. */
START_TEST(test_random_operations_while_resizing_both_ways)
{
    static struct big_model m;
    memset(&m, 0, sizeof(m));
    struct dict d = {0};
    size_t before = mem_owned_bytes();
    srand(4242);
    unsigned growing_checked = 0, shrinking_checked = 0;
    uint64_t live = 0;
    for (int step = 0; step < 450000; step++) {
        /* Phases: 50,000 add-heavy steps, then 100,000 remove-heavy. */
        bool adding = step % 150000 < 50000;
        unsigned i = (unsigned)rand() % NBIG;
        char k[16];
        uint32_t kl = key_of(i, k);
        struct dict_entry *e = dict_find(&d, k, kl);
        ck_assert_ptr_eq(e, m.present[i] ? m.ptr[i] : NULL);
        int r = rand() % 100;
        unsigned char v[40];
        uint32_t vl = (uint32_t)rand() % 40;
        for (uint32_t j = 0; j < vl; j++) {
            v[j] = (unsigned char)rand();
        }
        if (e == NULL) {
            if (adding ? r < 90 : r < 3) {
                e = dict_add(&d, k, kl, v, vl);
                ck_assert_ptr_nonnull(e);
                e->owner.p = &m.ptr[i];
                m.present[i] = true;
                m.ptr[i] = e;
                memcpy(m.val[i], v, vl);
                m.vlen[i] = vl;
                live++;
            }
        } else if (r < 10) {
            e = dict_set_value(&d, e, v, vl);
            ck_assert_ptr_nonnull(e);
            ck_assert_ptr_eq(e->owner.p, &m.ptr[i]);
            m.ptr[i] = e;
            memcpy(m.val[i], v, vl);
            m.vlen[i] = vl;
        } else if (adding ? r < 25 : r < 95) {
            ck_assert_ptr_eq(e->owner.p, &m.ptr[i]);
            dict_remove(&d, e);
            m.present[i] = false;
            m.ptr[i] = NULL;
            live--;
        }
        if (r == 99) {
            (void)dict_rehash(&d, (uint64_t)rand() % 3);
        }
        ck_assert_uint_eq(d.used, live);
        if (d.t1 != NULL && step % 7 == 0) {
            bool grow = d.mask1 > d.mask;
            if (grow ? growing_checked < 40 : shrinking_checked < 40) {
                check_model(&d, NBIG, m.present, m.val, m.vlen, 500);
                ck_assert_uint_eq(mem_owned_bytes() - before, d.owned);
                if (grow) {
                    growing_checked++;
                } else {
                    shrinking_checked++;
                }
            }
        }
        if (step % 20011 == 0) {
            check_model(&d, NBIG, m.present, m.val, m.vlen, 0);
            ck_assert_uint_eq(mem_owned_bytes() - before, d.owned);
        }
    }
    ck_assert_uint_ge(growing_checked, 10);
    ck_assert_uint_ge(shrinking_checked, 10);
    check_model(&d, NBIG, m.present, m.val, m.vlen, 0);
    /* The owner words still point at their keys' slots. */
    struct dict_iter it = {0};
    for (struct dict_entry *e = dict_next(&d, &it); e != NULL;
         e = dict_next(&d, &it)) {
        ck_assert_ptr_eq(*(struct dict_entry **)e->owner.p, e);
    }
    dict_free(&d);
    ck_assert_uint_eq(d.owned, 0);
    ck_assert_ptr_null(d.t1);
    ck_assert_uint_eq(mem_owned_bytes(), before);
}
END_TEST

/* A scan of a dict halfway through a resize that does not change while
 * the scan runs returns every entry exactly once, growing or shrinking;
 * so does dict_next. */
static void
still_scan_mid_resize(bool grow)
{
    struct dict d = {0};
    static unsigned char count[200000];
    memset(count, 0, sizeof(count));
    struct seen s = {count};
    unsigned n = grow ? 4096 : 40000;
    for (unsigned i = 0; i < n; i++) {
        add_key(&d, i);
    }
    if (!grow) {
        while (d.t1 != NULL) {
            (void)dict_rehash(&d, 1000);
        }
        /* Remove down under an eighth: the shrink starts. */
        while (d.t1 == NULL) {
            remove_key(&d, --n);
        }
        ck_assert_uint_lt(d.mask1, d.mask);
    } else {
        add_key(&d, n++);   /* 4097 > 4096 buckets: the doubling starts */
        ck_assert_ptr_nonnull(d.t1);
        ck_assert_uint_gt(d.mask1, d.mask);
    }
    /* Halfway. */
    while (d.t1 != NULL && d.rehash_idx < (d.mask + 1) / 2) {
        ck_assert_uint_le(dict_rehash(&d, 1), 1);
    }
    ck_assert_ptr_nonnull(d.t1);
    uint64_t cursor = 0;
    do {
        cursor = dict_scan(&d, cursor, note, &s);
    } while (cursor != 0);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_msg(count[i] == 1, "k%u returned %u times", i, count[i]);
    }
    memset(count, 0, sizeof(count));
    struct dict_iter it = {0};
    for (struct dict_entry *e = dict_next(&d, &it); e != NULL;
         e = dict_next(&d, &it)) {
        note(e, &s);
    }
    for (unsigned i = 0; i < n; i++) {
        ck_assert_uint_eq(count[i], 1);
    }
    ck_assert_ptr_nonnull(d.t1);    /* neither moved anything */
    dict_free(&d);
}

START_TEST(test_scan_of_a_still_table_mid_growth_returns_each_once)
{
    still_scan_mid_resize(true);
}
END_TEST

START_TEST(test_scan_of_a_still_table_mid_shrink_returns_each_once)
{
    still_scan_mid_resize(false);
}
END_TEST

/* Scans that run while random adds, removes, finds and rehash steps grow
 * the table several times over and shrink it back, many resizes under
 * way between two steps of one scan: every key present from the scan's
 * start to its end is returned at least once. */
START_TEST(test_scans_spanning_many_resizes_return_every_stable_entry)
{
    static unsigned char count[200000];
    struct seen s = {count};
    srand(777);
    for (int round = 0; round < 6; round++) {
        struct dict d = {0};
        memset(count, 0, sizeof(count));
        unsigned stable = 100 + (unsigned)rand() % 400;
        static bool vol[100000];
        memset(vol, 0, sizeof(vol));
        unsigned nvol = round % 2 == 0 ? 0 : 30000;
        for (unsigned j = 0; j < nvol; j++) {
            add_key(&d, 100000 + j);
            vol[j] = true;
        }
        for (unsigned i = 0; i < stable; i++) {
            add_key(&d, i);
        }
        unsigned resizes = 0;
        bool was = d.t1 != NULL;
        uint64_t cursor = 0;
        int steps = 0;
        do {
            cursor = dict_scan(&d, cursor, note, &s);
            steps++;
            /* Grow for a while, then shrink, by the scan's progress. */
            bool grow = (steps / 500) % 2 == (round % 2 == 0 ? 0 : 1);
            int ops = 1 + rand() % 400;
            for (int o = 0; o < ops; o++) {
                unsigned j = (unsigned)rand() % 30000;
                if (grow && !vol[j]) {
                    add_key(&d, 100000 + j);
                    vol[j] = true;
                } else if (!grow && vol[j]) {
                    remove_key(&d, 100000 + j);
                    vol[j] = false;
                } else {
                    char k[16];
                    uint32_t kl = (uint32_t)snprintf(k, sizeof(k), "k%u", j);
                    (void)dict_find(&d, k, kl);
                }
                if ((d.t1 != NULL) != was) {
                    was = d.t1 != NULL;
                    resizes++;
                }
            }
            if (rand() % 5 == 0) {
                (void)dict_rehash(&d, (uint64_t)rand() % 50);
            }
            ck_assert_int_lt(steps, 1000000);
        } while (cursor != 0);
        ck_assert_uint_ge(resizes, 2);
        for (unsigned i = 0; i < stable; i++) {
            ck_assert_msg(count[i] >= 1, "round %d: k%u never returned",
                          round, i);
        }
        dict_free(&d);
    }
}
END_TEST

/* Entries in d's old table in buckets [from, to]. */
static uint64_t
old_entries(const struct dict *d, uint64_t from, uint64_t to)
{
    uint64_t n = 0;
    for (uint64_t b = from; b <= to && b <= d->mask; b++) {
        for (const struct dict_entry *e = d->t[b]; e != NULL; e = e->next) {
            n++;
        }
    }
    return n;
}

/* Filling a dict to 340,000 entries, no add moves more than
 * DICT_STEP_ENTRIES entries or passes more than 10 times as many empty
 * buckets, and each doubling is over long before the next is due. */
START_TEST(test_no_add_moves_more_than_a_few_entries)
{
    struct dict d = {0};
    uint64_t most = 0, total = 0, resizes = 0;
    /* What one step can reach: the moved entries' buckets and the empty
     * ones passed. */
    const uint64_t reach = 11 * DICT_STEP_ENTRIES + 1;
    for (unsigned i = 0; i < 340000; i++) {
        struct dict_entry **t = d.t;
        bool was = d.t1 != NULL;
        uint64_t idx = d.rehash_idx, window = 0, rest = 0;
        if (was) {
            window = old_entries(&d, idx, idx + reach - 1);
            /* Only near the end can one add finish the resize. */
            rest = idx + reach - 1 >= d.mask ? window : UINT64_MAX;
        }
        char k[16];
        uint32_t kl = key_of(i + 1, k);
        ck_assert_ptr_nonnull(dict_add(&d, k, kl, "v", 1));
        if (!was) {
            if (d.t1 != NULL) {
                resizes++;
                /* Starting a resize moves nothing yet. */
                ck_assert_ptr_eq(d.t, t);
                ck_assert_uint_eq(old_entries(&d, 0, d.mask), d.used - 1);
            }
            continue;
        }
        uint64_t moved;
        if (d.t == t) {
            ck_assert_ptr_nonnull(d.t1);
            ck_assert_uint_le(d.rehash_idx, idx + reach);
            moved = window - old_entries(&d, idx, idx + reach - 1);
        } else {
            /* The resize ended in this add: what was left moved. */
            ck_assert_uint_ne(rest, UINT64_MAX);
            moved = rest;
        }
        ck_assert_uint_le(moved, DICT_STEP_ENTRIES);
        most = moved > most ? moved : most;
        total += moved;
    }
    ck_assert_uint_eq(most, DICT_STEP_ENTRIES);
    ck_assert_uint_ge(resizes, 15);
    /* 4 -> 524288 buckets: every entry moved at least once but the
     * resizes never fell behind (each ended before the next began). */
    ck_assert_uint_ge(total, 262144);
    ck_assert_uint_eq(d.mask + 1, 524288);
    dict_free(&d);
}
END_TEST

/* dict_rehash does what it is asked and no more, and finishes a resize
 * a caller drives alone; finds move nothing, so a walk with dict_next
 * that looks every entry up meets each once, halfway through a resize. */
START_TEST(test_rehash_steps_finish_a_resize_finds_move_nothing)
{
    struct dict d = {0};
    ck_assert_uint_eq(dict_rehash(&d, 10), 0);
    for (unsigned i = 0; i < 1025; i++) {
        add_key(&d, i);
    }
    ck_assert_ptr_nonnull(d.t1);
    uint64_t moved = 0;
    while (d.t1 != NULL) {
        uint64_t n = dict_rehash(&d, 3);
        ck_assert_uint_le(n, 3);
        moved += n;
    }
    ck_assert_uint_eq(d.mask + 1, 2048);
    ck_assert_uint_le(moved, 1024);
    ck_assert_uint_eq(dict_rehash(&d, 10), 0);
    /* Grow again; then walk, looking each entry up as it is met. */
    for (unsigned i = 1025; i < 2049; i++) {
        add_key(&d, i);
    }
    ck_assert_ptr_nonnull(d.t1);
    uint64_t idx = d.rehash_idx, walked = 0;
    struct dict_iter it = {0};
    struct dict_entry *e;
    while ((e = dict_next(&d, &it)) != NULL) {
        ck_assert_ptr_eq(dict_find(&d, dict_key(e), e->klen), e);
        walked++;
    }
    ck_assert_uint_eq(walked, 2049);
    ck_assert_uint_eq(d.rehash_idx, idx);
    ck_assert_ptr_nonnull(d.t1);
    dict_free(&d);
}
END_TEST

/* Removing everything in the middle of a resize, either way, leaves a
 * dict that owns nothing; dict_free in the middle of one frees both
 * tables. */
START_TEST(test_emptied_or_freed_mid_resize_owns_nothing)
{
    size_t before = mem_owned_bytes();
    struct dict d = {0};
    for (unsigned i = 0; i < 65; i++) {
        add_key(&d, i);
    }
    ck_assert_ptr_nonnull(d.t1);
    for (unsigned i = 0; i < 65; i++) {
        remove_key(&d, i);
    }
    ck_assert_ptr_null(d.t);
    ck_assert_ptr_null(d.t1);
    ck_assert_uint_eq(d.owned, 0);
    ck_assert_uint_eq(mem_owned_bytes(), before);
    for (unsigned i = 0; i < 65; i++) {
        add_key(&d, i);
    }
    ck_assert_ptr_nonnull(d.t1);
    dict_free(&d);
    ck_assert_uint_eq(mem_owned_bytes(), before);
    ck_assert_ptr_null(d.t1);
}
END_TEST

/* A dict of the server's memory: every byte it holds is in mem_used()
 * and none in mem_owned_bytes() (eviction's estimate), through growth, a
 * value set, shrinking, emptying mid-resize and dict_free, after which it
 * is still the server's; a keys' dict beside it still counts as keys'. */
START_TEST(test_a_server_dict_counts_in_used_memory_not_keys)
{
    struct dict d = DICT_SERVER, keys = {0};
    size_t used = mem_used(), owned = mem_owned_bytes();
    for (int round = 0; round < 2; round++) {
        for (unsigned i = 0; i < 1000; i++) {
            add_key(&d, i);
        }
        struct dict_entry *e = dict_find(&d, "k7", 2);
        ck_assert_ptr_nonnull(dict_set_value(&d, e, "a longer value", 14));
        ck_assert_uint_eq(mem_owned_bytes(), owned);
        ck_assert_uint_eq(mem_used() - used, d.owned);
        for (unsigned i = 0; i < 990; i++) {
            remove_key(&d, i);
        }
        ck_assert_uint_eq(mem_used() - used, d.owned);
        add_key(&keys, 1);
        ck_assert_uint_eq(mem_owned_bytes() - owned, keys.owned);
        ck_assert_uint_eq(mem_used() - used, d.owned + keys.owned);
        dict_free(&keys);
        if (round == 0) {
            dict_free(&d);
        } else {
            for (unsigned i = 990; i < 1000; i++) {
                remove_key(&d, i);
            }
        }
        ck_assert(d.server);
        ck_assert_ptr_null(d.t);
        ck_assert_uint_eq(d.owned, 0);
        ck_assert_uint_eq(mem_used(), used);
        ck_assert_uint_eq(mem_owned_bytes(), owned);
    }
    struct dict z = DICT_SERVER;
    ck_assert_ptr_null(dict_find(&z, "a", 1));
    ck_assert_uint_eq(z.used, 0);
}
END_TEST

/* dict_expand on a dict with entries starts a resize into the larger
 * table; one asked for during a smaller resize finishes that first. */
START_TEST(test_expand_of_a_full_dict_resizes_incrementally)
{
    struct dict d = {0};
    for (unsigned i = 0; i < 100; i++) {
        add_key(&d, i);
    }
    while (d.t1 != NULL) {
        (void)dict_rehash(&d, 100);
    }
    ck_assert(dict_expand(&d, 1000));
    ck_assert_ptr_nonnull(d.t1);
    ck_assert_uint_eq(d.mask1 + 1, 1024);
    /* Within the table under way: nothing to do. */
    ck_assert(dict_expand(&d, 1024));
    ck_assert_uint_eq(d.mask1 + 1, 1024);
    ck_assert(dict_expand(&d, 5000));
    ck_assert_ptr_nonnull(d.t1);
    ck_assert_uint_eq(d.mask + 1, 1024);
    ck_assert_uint_eq(d.mask1 + 1, 8192);
    for (unsigned i = 100; i < 5000; i++) {
        add_key(&d, i);
    }
    ck_assert_ptr_null(d.t1);
    ck_assert_uint_eq(d.mask + 1, 8192);
    for (unsigned i = 0; i < 5000; i++) {
        char k[16];
        uint32_t kl = (uint32_t)snprintf(k, sizeof(k), "k%u", i);
        ck_assert_ptr_nonnull(dict_find(&d, k, kl));
    }
    dict_free(&d);
}
END_TEST

/* Under an address-space limit: a new table that cannot be allocated
 * postpones the doubling (the adds still succeed, the chains grow
 * longer), an entry that cannot be allocated fails its add with nothing
 * changed, a value that cannot grow fails dict_set_value with the entry
 * untouched; once memory is back the next add starts the resize, and
 * the bytes owned stay exact throughout. */
START_TEST(test_allocation_failures_postpone_or_fail_cleanly)
{
#if defined(UNDER_ASAN)
    return;
#else
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL || fscanf(f, "%lu", &pages) != 1) {
        if (f != NULL) {
            fclose(f);
        }
        return;     /* no /proc: nothing to measure the limit against */
    }
    fclose(f);
    size_t before = mem_owned_bytes();
    struct dict d = {0};
    /* 2^19 entries fill 2^19 buckets: the next add wants 8 MB. */
    const unsigned full = 1u << 19;
    ck_assert(dict_expand(&d, full));
    for (unsigned i = 0; i < full; i++) {
        add_key(&d, i);
    }
    ck_assert_ptr_null(d.t1);
    ck_assert_uint_eq(d.mask + 1, full);

    struct rlimit old;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
    f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    struct rlimit lim = old;
    lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE)
                   + ((rlim_t)2 << 20);
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur) {
        lim.rlim_cur = old.rlim_cur;
    }
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
    /* 2 MB of headroom: entries fit, the 8 MB table does not. */
    for (unsigned i = full; i < full + 1000; i++) {
        add_key(&d, i);
        ck_assert_ptr_null(d.t1);
    }
    ck_assert_uint_eq(d.mask + 1, full);
    ck_assert_uint_eq(d.used, full + 1000);
    /* A value too large for what is left. */
    struct dict_entry *e = dict_find(&d, "k7", 2);
    ck_assert_ptr_nonnull(e);
    static unsigned char huge[4 << 20];
    ck_assert_ptr_null(dict_set_value(&d, e, huge, sizeof(huge)));
    ck_assert_ptr_eq(dict_find(&d, "k7", 2), e);
    ck_assert_uint_eq(e->vlen, 1);
    ck_assert(memcmp(dict_value(e), "v", 1) == 0);
    /* Adds until an entry cannot be allocated: that add changes
     * nothing. */
    static char key[1 << 16];
    memset(key, 'x', sizeof(key));
    unsigned n = 0;
    uint64_t used = d.used;
    size_t owned = d.owned;
    for (; n < 1000; n++) {
        memcpy(key, &n, sizeof(n));
        if (dict_add(&d, key, sizeof(key), NULL, 0) == NULL) {
            break;
        }
        used++;
        owned = d.owned;
    }
    ck_assert_uint_lt(n, 1000);
    ck_assert_uint_eq(d.used, used);
    ck_assert_uint_eq(d.owned, owned);
    ck_assert_uint_eq(mem_owned_bytes() - before, d.owned);
    for (unsigned j = 0; j < n; j++) {
        memcpy(key, &j, sizeof(j));
        struct dict_entry *x = dict_find(&d, key, sizeof(key));
        ck_assert_ptr_nonnull(x);
        dict_remove(&d, x);
    }
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);

    /* Memory is back: the next add starts the doubling. */
    add_key(&d, full + 1000);
    ck_assert_ptr_nonnull(d.t1);
    ck_assert_uint_eq(d.mask1 + 1, 2 * (uint64_t)full);
    for (unsigned i = full + 1001; d.t1 != NULL; i++) {
        add_key(&d, i);
    }
    ck_assert_uint_eq(mem_owned_bytes() - before, d.owned);
    size_t entries = 0;
    struct dict_iter it = {0};
    for (struct dict_entry *x = dict_next(&d, &it); x != NULL;
         x = dict_next(&d, &it)) {
        entries += mem_usable(x);
    }
    ck_assert_uint_eq(d.owned, tables_owned(&d) + entries);
    for (unsigned i = 0; i < full + 1000; i++) {
        char k[16];
        uint32_t kl = (uint32_t)snprintf(k, sizeof(k), "k%u", i);
        ck_assert_ptr_nonnull(dict_find(&d, k, kl));
    }
    dict_free(&d);
    ck_assert_uint_eq(mem_owned_bytes(), before);
#endif
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
    tcase_add_test(tc, test_random_operations_while_resizing_both_ways);
    tcase_add_test(tc, test_scan_of_a_still_table_mid_growth_returns_each_once);
    tcase_add_test(tc, test_scan_of_a_still_table_mid_shrink_returns_each_once);
    tcase_add_test(tc, test_scans_spanning_many_resizes_return_every_stable_entry);
    tcase_add_test(tc, test_no_add_moves_more_than_a_few_entries);
    tcase_add_test(tc, test_rehash_steps_finish_a_resize_finds_move_nothing);
    tcase_add_test(tc, test_emptied_or_freed_mid_resize_owns_nothing);
    tcase_add_test(tc, test_a_server_dict_counts_in_used_memory_not_keys);
    tcase_add_test(tc, test_expand_of_a_full_dict_resizes_incrementally);
    tcase_add_test(tc, test_allocation_failures_postpone_or_fail_cleanly);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}
