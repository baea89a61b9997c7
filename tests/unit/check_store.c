/*
 * check_store.c - unit tests for server/store.c.
 *
 * Time is injected: T0 is an arbitrary start and every "now" is derived
 * from it, so expiry is deterministic. The wheel may fire late (never
 * early) and may bound its work per call, so tests that wait for the wheel
 * call store_expire() repeatedly instead of assuming one call is enough.
 *
 * Records carry their key index in the first 4 bytes of their state, so
 * scan callbacks can tell which key they were handed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/mem.h"
#include "server/store.h"
#include "tests/unit/suites.h"

/* Under AddressSanitizer an address-space limit cannot make malloc fail:
 * its allocator reserves its whole region up front. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#define MS          INT64_C(1000000)
#define T0          (INT64_C(1700000000) * 1000 * MS)
#define KEYBUF      32
#define STATE_SIZE  8

static const unsigned char seed_a[16] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
};
static const unsigned char seed_b[16] = {
    0xf0, 0x0d, 0xca, 0xfe, 0x12, 0x34, 0x56, 0x78,
    0x9a, 0xbc, 0xde, 0xf0, 0x0f, 0x1e, 0x2d, 0x3c,
};

/* ------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------- */

static size_t
key_of(char buf[KEYBUF], uint32_t i)
{
    return (size_t)snprintf(buf, KEYBUF, "key:%u", i);
}

static uint32_t
rec_index(struct store_rec *r)
{
    uint32_t idx;
    memcpy(&idx, store_rec_state(r), sizeof(idx));
    return idx;
}

/* Add key i (which must be absent) with its index in the state. */
static struct store_rec *
add_key(struct store *s, uint32_t i)
{
    char buf[KEYBUF];
    size_t len = key_of(buf, i);

    ck_assert_ptr_null(store_lookup(s, buf, len, T0));
    struct store_rec *r = store_add(s, buf, len, 1, STATE_SIZE);
    ck_assert_ptr_nonnull(r);
    memcpy(store_rec_state(r), &i, sizeof(i));
    return r;
}

static struct store_rec *
find_key(struct store *s, uint32_t i, int64_t now)
{
    char buf[KEYBUF];
    size_t len = key_of(buf, i);
    return store_lookup(s, buf, len, now);
}

static void
remove_key(struct store *s, uint32_t i)
{
    struct store_rec *r = find_key(s, i, T0);
    ck_assert_ptr_nonnull(r);
    store_remove(s, r);
}

/* Run store_expire `calls` times at `now`; the total removed. */
static size_t
expire_calls(struct store *s, int64_t now, size_t calls, size_t budget)
{
    size_t removed = 0;
    for (size_t i = 0; i < calls; i++) {
        removed += store_expire(s, now, budget);
    }
    return removed;
}

/* Call store_expire at `now` until the store holds `want` records; false
 * if that does not happen within max_calls. */
static bool
expire_until_size(struct store *s, int64_t now, size_t want, size_t budget,
                  size_t max_calls)
{
    for (size_t i = 0; i < max_calls && store_size(s) != want; i++) {
        (void)store_expire(s, now, budget);
    }
    return store_size(s) == want;
}

static void
finish_rehash(struct store *s)
{
    for (int i = 0; i < 1000000 && store_cron(s, 1000); i++) {
        continue;
    }
    ck_assert(!store_cron(s, 0));
}

struct seen {
    unsigned *count;
    size_t n;
};

static void
count_cb(struct store_rec *r, void *arg)
{
    struct seen *sn = arg;
    uint32_t idx = rec_index(r);

    ck_assert_uint_lt(idx, sn->n);
    sn->count[idx]++;
}

/* ------------------------------------------------------------------------
 * Basics
 * --------------------------------------------------------------------- */

START_TEST(test_added_record_is_found_with_zeroed_state_and_its_key)
{
    struct store *s = store_create(seed_a, T0);
    ck_assert_ptr_nonnull(s);

    struct store_rec *r = store_add(s, "alpha", 5, 7, 24);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->type, 7);
    ck_assert_uint_eq(store_rec_keylen(r), 5);
    ck_assert_int_eq(r->expire_at, STORE_NEVER);
    ck_assert(r->timer == WHEEL_TAG_NONE);
    ck_assert_uint_eq((uintptr_t)store_rec_state(r) % 8, 0);
    static const unsigned char zero[24];
    ck_assert_mem_eq(store_rec_state(r), zero, sizeof(zero));
    ck_assert_mem_eq(store_rec_key(r), "alpha", 5);

    ck_assert_ptr_eq(store_lookup(s, "alpha", 5, T0), r);
    ck_assert_ptr_null(store_lookup(s, "beta", 4, T0));
    ck_assert_uint_eq(store_size(s), 1);
    store_destroy(&s);
}
END_TEST

START_TEST(test_prefetched_hash_finds_the_key_and_a_wrong_one_only_misses)
{
    struct store *s = store_create(seed_a, T0);
    ck_assert_ptr_nonnull(s);
    struct store_rec *r = store_add(s, "alpha", 5, 1, 8);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_nonnull(store_add(s, "beta", 4, 1, 8));

    uint64_t h = store_prefetch_bucket(s, "alpha", 5);
    store_prefetch_record(s, h);
    ck_assert_ptr_eq(store_lookup_hashed(s, "alpha", 5, h, T0), r);
    /* Another key's hash never yields a wrong record, only a miss (or the
     * right one if both keys share a bucket). */
    uint64_t hb = store_prefetch_bucket(s, "beta", 4);
    struct store_rec *x = store_lookup_hashed(s, "alpha", 5, hb, T0);
    ck_assert(x == NULL || x == r);
    ck_assert_ptr_null(store_lookup_hashed(s, "gamma", 5, h, T0));
    ck_assert_uint_eq(store_size(s), 2);
    store_destroy(&s);
}
END_TEST

/* One hash serves a lookup and the add after it, and it is the hash
 * the prefetch computes: the record is then found by every path. */
START_TEST(test_add_with_the_lookup_hash_is_found_by_every_path)
{
    struct store *s = store_create(seed_a, T0);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < 1000; i++) {
        char key[16];
        size_t len = (size_t)snprintf(key, sizeof(key), "k:%d", i);
        uint64_t h = store_key_hash(s, key, len);
        ck_assert_uint_eq(h, store_prefetch_bucket(s, key, len));
        ck_assert_ptr_null(store_lookup_hashed(s, key, len, h, T0));
        struct store_rec *r = store_add_hashed(s, key, len, h, 1, 8);
        ck_assert_ptr_nonnull(r);
        ck_assert_ptr_eq(store_lookup(s, key, len, T0), r);
    }
    /* Growth rehashed them all with freshly computed hashes. */
    for (int i = 0; i < 1000; i++) {
        char key[16];
        size_t len = (size_t)snprintf(key, sizeof(key), "k:%d", i);
        ck_assert_ptr_nonnull(store_lookup(s, key, len, T0));
    }
    ck_assert_uint_eq(store_size(s), 1000);
    store_destroy(&s);
}
END_TEST

START_TEST(test_removed_record_is_absent)
{
    struct store *s = store_create(seed_a, T0);
    struct store_rec *a = store_add(s, "a", 1, 0, 0);
    struct store_rec *b = store_add(s, "b", 1, 0, 0);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);

    store_remove(s, a);
    ck_assert_ptr_null(store_lookup(s, "a", 1, T0));
    ck_assert_ptr_eq(store_lookup(s, "b", 1, T0), b);
    ck_assert_uint_eq(store_size(s), 1);
    store_remove(s, b);
    ck_assert_uint_eq(store_size(s), 0);
    ck_assert_ptr_null(store_lookup(s, "b", 1, T0));
    store_destroy(&s);
}
END_TEST

START_TEST(test_binary_keys_with_nul_bytes_and_empty_key_are_distinct)
{
    static const struct {
        const char *bytes;
        size_t len;
    } keys[] = {
        { "", 0 }, { "\0", 1 }, { "\0\0", 2 }, { "a\0b", 3 },
        { "a\0c", 3 }, { "a", 1 }, { "\xff\x00\xfe", 3 },
    };
    enum { NKEYS = sizeof(keys) / sizeof(keys[0]) };
    struct store_rec *rec[NKEYS];
    struct store *s = store_create(seed_a, T0);

    for (size_t i = 0; i < NKEYS; i++) {
        ck_assert_ptr_null(store_lookup(s, keys[i].bytes, keys[i].len, T0));
        rec[i] = store_add(s, keys[i].bytes, keys[i].len, 0, 4);
        ck_assert_ptr_nonnull(rec[i]);
    }
    for (size_t i = 0; i < NKEYS; i++) {
        ck_assert_ptr_eq(store_lookup(s, keys[i].bytes, keys[i].len, T0),
                         rec[i]);
        ck_assert_uint_eq(store_rec_keylen(rec[i]), keys[i].len);
        ck_assert_mem_eq(store_rec_key(rec[i]), keys[i].bytes, keys[i].len);
    }
    /* A NULL pointer is a valid empty key. */
    ck_assert_ptr_eq(store_lookup(s, NULL, 0, T0), rec[0]);
    ck_assert_uint_eq(store_size(s), NKEYS);
    store_destroy(&s);
}
END_TEST

START_TEST(test_keys_sharing_a_prefix_are_distinct)
{
    static const char *const keys[] = {
        "user:1", "user:10", "user:100", "user:1000", "user:",
    };
    enum { NKEYS = sizeof(keys) / sizeof(keys[0]) };
    struct store_rec *rec[NKEYS];
    struct store *s = store_create(seed_a, T0);

    for (size_t i = 0; i < NKEYS; i++) {
        rec[i] = store_add(s, keys[i], strlen(keys[i]), 0, 0);
        ck_assert_ptr_nonnull(rec[i]);
    }
    for (size_t i = 0; i < NKEYS; i++) {
        ck_assert_ptr_eq(store_lookup(s, keys[i], strlen(keys[i]), T0),
                         rec[i]);
    }
    /* Neither a shorter prefix nor a longer extension matches. */
    ck_assert_ptr_null(store_lookup(s, "user", 4, T0));
    ck_assert_ptr_null(store_lookup(s, "user:10000", 10, T0));
    ck_assert_ptr_null(store_lookup(s, "user:2", 6, T0));
    store_destroy(&s);
}
END_TEST

START_TEST(test_add_rejects_oversized_state_or_key)
{
    static const char small[1];
    struct store *s = store_create(seed_a, T0);

    ck_assert_ptr_null(store_add(s, "k", 1, 0, 65536));
    /* The key is never read: the length alone is refused. */
    ck_assert_ptr_null(store_add(s, small, ((size_t)512 << 20) + 1, 0, 0));
    ck_assert_ptr_null(store_lookup(s, small, ((size_t)512 << 20) + 1, T0));
    ck_assert_uint_eq(store_size(s), 0);

    struct store_rec *r = store_add(s, "k", 1, 0, 65535);
    ck_assert_ptr_nonnull(r);
    ck_assert_mem_eq(store_rec_key(r), "k", 1);
    /* The whole state is there and writable (ASan checks the bounds). */
    memset(store_rec_state(r), 0xab, 65535);
    store_destroy(&s);
}
END_TEST

START_TEST(test_destroy_nulls_the_pointer_and_frees_everything)
{
    size_t base = mem_used();
    struct store *s = store_create(seed_a, T0);

    for (uint32_t i = 0; i < 1000; i++) {
        struct store_rec *r = add_key(s, i);
        store_set_expire(s, r, T0 / MS + i + 1);
    }
    store_destroy(&s);
    ck_assert_ptr_null(s);
    ck_assert_uint_eq(mem_used(), base);
    store_destroy(&s);      /* a no-op on NULL */
    store_destroy(NULL);
}
END_TEST

/* ------------------------------------------------------------------------
 * Resizing
 * --------------------------------------------------------------------- */

static void
assert_all_found(struct store *s, struct store_rec **rec, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        ck_assert_ptr_eq(find_key(s, j, T0), rec[j]);
    }
}

START_TEST(test_100k_keys_survive_growth_with_rehash_interleaved)
{
    enum { N = 100000 };
    struct store_rec **rec = calloc(N, sizeof(*rec));
    struct store *s = store_create(seed_a, T0);
    bool was_rehashing = false;
    size_t full_checks = 0;

    ck_assert_ptr_nonnull(rec);
    for (uint32_t i = 0; i < N; i++) {
        rec[i] = add_key(s, i);
        ck_assert_ptr_eq(find_key(s, i, T0), rec[i]);
        uint32_t j = (uint32_t)(((uint64_t)i * 2654435761u) % (i + 1));
        ck_assert_ptr_eq(find_key(s, j, T0), rec[j]);

        /* Every key, right after each grow starts and periodically while
         * one runs. Each of these lookups moves the rehash one step, so
         * every key is looked up in a different half-moved state. */
        bool rehashing = store_cron(s, 0);
        if (rehashing && (!was_rehashing || i % 997 == 0)) {
            assert_all_found(s, rec, i + 1);
            full_checks++;
        }
        was_rehashing = rehashing;
    }
    ck_assert_uint_gt(full_checks, 10);
    ck_assert_uint_eq(store_size(s), N);
    assert_all_found(s, rec, N);
    finish_rehash(s);
    assert_all_found(s, rec, N);
    store_destroy(&s);
    free(rec);
}
END_TEST

START_TEST(test_growth_rehashes_a_bucket_per_call_not_all_at_once)
{
    enum { N = 100000 };
    struct store *s = store_create(seed_a, T0);
    size_t run = 0;
    size_t longest_run = 0;

    for (uint32_t i = 0; i < N; i++) {
        char buf[KEYBUF];
        size_t len = key_of(buf, i);
        ck_assert_ptr_nonnull(store_add(s, buf, len, 0, 8));
        run = store_cron(s, 0) ? run + 1 : 0;
        if (run > longest_run) {
            longest_run = run;
        }
    }
    /* With one step per add, the grow 65536 -> 131072 buckets started at
     * the 65536th add is still running at the 100000th. */
    ck_assert_uint_gt(longest_run, 30000);
    ck_assert(store_cron(s, 0));
    store_destroy(&s);
}
END_TEST

/* RESIZEDB's reserve: the table is sized once, no rehash while the load
 * adds its keys, none shrinks a table the load has not filled yet; the
 * next cron takes the reserve back. */
START_TEST(test_a_reserved_table_neither_grows_nor_shrinks_under_a_load)
{
    enum { N = 100000 };
    struct store *s = store_create(seed_a, T0);
    store_reserve(s, N);
    for (uint32_t i = 0; i < N; i++) {
        (void)add_key(s, i);
        ck_assert_uint_eq(store_usage(s).rehash_overhead, 0);
    }
    ck_assert(!store_cron(s, 0));
    store_destroy(&s);

    s = store_create(seed_a, T0);
    store_reserve(s, N);
    for (uint32_t i = 0; i < 10; i++) {
        (void)add_key(s, i);
        ck_assert_uint_eq(store_usage(s).rehash_overhead, 0);
    }
    size_t reserved = mem_used();
    (void)store_cron(s, 1);             /* 10 keys in 131072 buckets: shrink */
    finish_rehash(s);
    ck_assert_uint_lt(mem_used() + 100000 * sizeof(uint32_t), reserved);
    for (uint32_t i = 0; i < 10; i++) {
        ck_assert_ptr_nonnull(find_key(s, i, T0));
    }
    store_destroy(&s);
}
END_TEST

static size_t
mem_for_keys(uint32_t n)
{
    struct store *s = store_create(seed_a, T0);
    size_t base = mem_used();
    for (uint32_t i = 0; i < n; i++) {
        (void)add_key(s, i);
    }
    finish_rehash(s);
    size_t used = mem_used() - base;
    store_destroy(&s);
    return used;
}

START_TEST(test_deleting_most_keys_shrinks_the_table_through_lookups)
{
    enum { N = 10000, KEEP = 100 };
    size_t fresh_keep = mem_for_keys(KEEP);
    struct store *s = store_create(seed_a, T0);
    size_t base = mem_used();  /* the store and its wheel, no table yet */

    for (uint32_t i = 0; i < N; i++) {
        (void)add_key(s, i);
    }
    finish_rehash(s);
    size_t full = mem_used() - base;
    for (uint32_t i = KEEP; i < N; i++) {
        remove_key(s, i);
    }
    /* Lookups alone drive the shrink to completion. */
    for (int round = 0; round < 1000 && store_cron(s, 0); round++) {
        for (uint32_t i = 0; i < KEEP; i++) {
            ck_assert_ptr_nonnull(find_key(s, i, T0));
        }
    }
    ck_assert(!store_cron(s, 0));
    size_t shrunk = mem_used() - base;
    ck_assert_uint_lt(shrunk, full / 20);
    ck_assert_uint_le(shrunk, fresh_keep + 2048);
    for (uint32_t i = 0; i < N; i++) {
        struct store_rec *r = find_key(s, i, T0);
        if (i < KEEP) {
            ck_assert_ptr_nonnull(r);
            ck_assert_uint_eq(rec_index(r), i);
        } else {
            ck_assert_ptr_null(r);
        }
    }
    ck_assert_uint_eq(store_size(s), KEEP);
    store_destroy(&s);
}
END_TEST

START_TEST(test_remove_during_rehash_keeps_the_other_keys)
{
    enum { N = 3000 };
    static struct store_rec *rec[N];
    struct store *s = store_create(seed_a, T0);
    uint32_t n = 0;

    /* Fill until a grow has started but has not moved much yet. */
    while (n < 1024 || !store_cron(s, 0)) {
        rec[n] = add_key(s, n);
        n++;
    }
    ck_assert(store_cron(s, 0));
    /* store_remove on record pointers takes no rehash step, so records are
     * removed from both the old and the new table. */
    for (uint32_t i = 0; i < n; i += 2) {
        store_remove(s, rec[i]);
        rec[i] = NULL;
    }
    ck_assert_uint_eq(store_size(s), n / 2);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_ptr_eq(find_key(s, i, T0), rec[i]);
    }
    finish_rehash(s);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_ptr_eq(find_key(s, i, T0), rec[i]);
    }
    store_destroy(&s);
}
END_TEST

#if !defined(UNDER_ASAN)
/* Lower the address-space limit to what the process maps now plus
 * `headroom` bytes (never above the limit it had, saved in *old); false
 * when /proc cannot say how much it maps. */
static bool
limit_address_space(rlim_t headroom, struct rlimit *old)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL || fscanf(f, "%lu", &pages) != 1) {
        if (f != NULL) {
            fclose(f);
        }
        return false;
    }
    fclose(f);
    ck_assert_int_eq(getrlimit(RLIMIT_AS, old), 0);
    struct rlimit lim = *old;
    lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + headroom;
    if (old->rlim_cur != RLIM_INFINITY && old->rlim_cur < lim.rlim_cur) {
        lim.rlim_cur = old->rlim_cur;
    }
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
    return true;
}
#endif

START_TEST(test_add_returns_null_when_memory_runs_out)
{
#if defined(UNDER_ASAN)
    return;     /* the plain build runs this test */
#else
    struct rlimit old;
    struct store *s = store_create(seed_a, T0);
    static char key[4096];
    uint32_t n = 0;
    if (!limit_address_space((rlim_t)64 << 20, &old)) {
        store_destroy(&s);
        return;     /* no /proc: nothing to measure the limit against */
    }
    /* 64 MB of headroom holds about 16,000 records of 4 KB. */
    for (; n < 100000; n++) {
        memcpy(key, &n, sizeof(n));
        if (store_add(s, key, sizeof(key), 0, 8) == NULL) {
            break;
        }
    }
    ck_assert_uint_lt(n, 100000);
    ck_assert_uint_eq(store_size(s), n);
    for (uint32_t i = 0; i < n; i++) {
        memcpy(key, &i, sizeof(i));
        ck_assert_ptr_nonnull(store_lookup(s, key, sizeof(key), T0));
    }
    store_destroy(&s);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
#endif
}
END_TEST

/* ------------------------------------------------------------------------
 * Expiry
 * --------------------------------------------------------------------- */

/* A record lives through the millisecond of its expire_at (Redis's
 * keyIsExpired: dead once now_ms > when) and not a ns more. */
START_TEST(test_lookup_past_the_expiry_ms_is_dead_and_one_ns_before_alive)
{
    struct store *s = store_create(seed_a, T0);
    struct store_rec *r = store_add(s, "k", 1, 0, 8);
    int64_t when = T0 / MS + 5;
    int64_t at = (when + 1) * MS;       /* the first ns it is dead at */

    store_set_expire(s, r, when);
    ck_assert_ptr_eq(store_lookup(s, "k", 1, when * MS), r);
    ck_assert_ptr_eq(store_lookup(s, "k", 1, at - 1), r);
    ck_assert_uint_eq(store_size(s), 1);
    ck_assert_ptr_null(store_lookup(s, "k", 1, at));
    ck_assert_uint_eq(store_size(s), 0);
    /* Freed, timer included: the wheel has nothing left to fire. */
    ck_assert_uint_eq(expire_calls(s, at + 1000 * MS, 16, SIZE_MAX), 0);
    store_destroy(&s);
}
END_TEST

START_TEST(test_expire_removes_dead_records_only_never_early)
{
    enum { N = 100 };
    struct store *s = store_create(seed_a, T0);
    size_t removed = 0;

    for (uint32_t i = 0; i < N; i++) {
        struct store_rec *r = add_key(s, i);
        store_set_expire(s, r, T0 / MS + i + 1);
    }
    for (int64_t now = T0; now <= T0 + (N + 2) * MS; now += MS / 4) {
        removed += expire_calls(s, now, 4, SIZE_MAX);
        /* Every key not yet dead is still there (lookup of a live key does
         * not remove it; had the wheel removed it early, it would be NULL). */
        for (uint32_t i = 0; i < N; i++) {
            int64_t at = (T0 / MS + i + 2) * MS;    /* dead from */
            if (at > now) {
                ck_assert_ptr_nonnull(find_key(s, i, now));
            }
        }
        ck_assert_uint_eq(store_size(s) + removed, N);
    }
    ck_assert(expire_until_size(s, T0 + 3600 * 1000 * MS, 0, SIZE_MAX,
                                100000));
    store_destroy(&s);
}
END_TEST

START_TEST(test_expire_respects_its_budget)
{
    enum { N = 100, BUDGET = 7 };
    struct store *s = store_create(seed_a, T0);
    size_t removed = 0;
    int64_t now = T0 + 10 * 1000 * MS;

    for (uint32_t i = 0; i < N; i++) {
        store_set_expire(s, add_key(s, i), T0 / MS + 1);
    }
    for (int i = 0; i < 100000 && removed < N; i++) {
        size_t got = store_expire(s, now, BUDGET);
        ck_assert_uint_le(got, BUDGET);
        removed += got;
    }
    ck_assert_uint_eq(removed, N);
    ck_assert_uint_eq(store_size(s), 0);
    store_destroy(&s);
}
END_TEST

START_TEST(test_extending_expiry_leaves_the_timer_in_place)
{
    struct store *s = store_create(seed_a, T0);
    struct store_rec *r = store_add(s, "k", 1, 0, 8);

    struct store_rec *q = store_add(s, "q", 1, 0, 8);

    /* Each record is dead from the ms after the one it lives through. */
    store_set_expire(s, r, T0 / MS + 9);
    store_set_expire(s, q, T0 / MS + 49);
    ck_assert(r->timer != WHEEL_TAG_NONE);
    unsigned where = r->timer;
    store_set_expire(s, r, T0 / MS + 19);
    store_set_expire(s, r, T0 / MS + 29);
    ck_assert_int_eq(r->expire_at, T0 / MS + 29);
    /* Same links: the entry was not touched. */
    ck_assert_uint_eq(r->timer, where);
    /* Reaching the old time re-places it instead of removing it. */
    ck_assert_uint_eq(expire_calls(s, T0 + 15 * MS, 4, SIZE_MAX), 0);
    ck_assert_ptr_eq(store_lookup(s, "k", 1, T0 + 15 * MS), r);
    /* An earlier expiry does move it: it goes at 25 ms, not 30. */
    store_set_expire(s, r, T0 / MS + 24);
    ck_assert(r->timer != WHEEL_TAG_NONE);
    ck_assert_uint_eq(expire_calls(s, T0 + 25 * MS, 4, SIZE_MAX), 1);
    ck_assert_uint_eq(store_size(s), 1);
    ck_assert_ptr_eq(store_lookup(s, "q", 1, T0 + 25 * MS), q);
    store_destroy(&s);
}
END_TEST

START_TEST(test_extended_record_lives_until_its_final_expire_at)
{
    struct store *s = store_create(seed_a, T0);
    struct store_rec *r = store_add(s, "k", 1, 0, 8);
    int64_t now = T0;

    store_set_expire(s, r, now / MS + 9);
    /* 500 hits 1 ms apart, each pushing expiry to now + 10 ms: the original
     * timer fires many times over and must re-queue, never remove. */
    for (int hit = 0; hit < 500; hit++) {
        now += MS;
        ck_assert_ptr_eq(store_lookup(s, "k", 1, now), r);
        store_set_expire(s, r, now / MS + 9);
        ck_assert_uint_eq(expire_calls(s, now, 4, SIZE_MAX), 0);
    }
    int64_t final = now + 10 * MS;
    for (; now < final; now += MS / 8) {
        ck_assert_uint_eq(expire_calls(s, now, 4, SIZE_MAX), 0);
        ck_assert_uint_eq(store_size(s), 1);
    }
    ck_assert_uint_eq(expire_calls(s, final - 1, 8, SIZE_MAX), 0);
    ck_assert_uint_eq(store_size(s), 1);
    /* After final it goes, at final or (the wheel fires late) soon after. */
    size_t removed = 0;
    for (now = final; now < final + 1000 * MS && removed == 0; now += MS) {
        removed = expire_calls(s, now, 4, SIZE_MAX);
    }
    ck_assert_uint_eq(removed, 1);
    ck_assert_uint_eq(store_size(s), 0);
    store_destroy(&s);
}
END_TEST

START_TEST(test_never_records_do_not_expire)
{
    struct store *s = store_create(seed_a, T0);
    struct store_rec *r = store_add(s, "k", 1, 0, 8);
    struct store_rec *q = store_add(s, "q", 1, 0, 8);

    store_set_expire(s, r, T0 / MS + 1);
    store_set_expire(s, r, STORE_NEVER);
    ck_assert(r->timer == WHEEL_TAG_NONE);
    ck_assert_int_eq(r->expire_at, STORE_NEVER);
    ck_assert(q->timer == WHEEL_TAG_NONE);
    ck_assert_uint_eq(expire_calls(s, T0 + 3600 * 1000 * MS, 64, SIZE_MAX),
                      0);
    ck_assert_ptr_eq(store_lookup(s, "k", 1, INT64_MAX - 1), r);
    ck_assert_ptr_eq(store_lookup(s, "k", 1, INT64_MAX), r);
    ck_assert_ptr_eq(store_lookup(s, "q", 1, INT64_MAX), q);
    ck_assert_uint_eq(store_size(s), 2);
    store_destroy(&s);
}
END_TEST

START_TEST(test_mem_used_returns_to_baseline_after_1m_keys_expire)
{
    enum { N = 1000000 };
    size_t base = mem_used();
    struct store *s = store_create(seed_a, T0);
    size_t created = mem_used();

    for (uint32_t i = 0; i < N; i++) {
        char buf[KEYBUF];
        size_t len = key_of(buf, i);
        struct store_rec *r = store_add(s, buf, len, 1, 8);
        ck_assert_ptr_nonnull(r);
        store_set_expire(s, r, T0 / MS + i % 1000 + 1);
    }
    ck_assert_uint_eq(store_size(s), N);
    /* Records of 40 bytes (a 10-byte key, 8 bytes of state) and their
     * handles in the wheel. */
    ck_assert_uint_gt(mem_used(), created + (size_t)N * (40 + 4));

    size_t removed = 0;
    int64_t now = T0 + 2000 * MS;
    for (int i = 0; i < 1000000 && store_size(s) > 0; i++) {
        removed += store_expire(s, now, 10000);
    }
    ck_assert_uint_eq(removed, N);
    ck_assert_uint_eq(store_size(s), 0);
    finish_rehash(s);
    ck_assert_uint_le(mem_used(), created + 256);
    store_destroy(&s);
    ck_assert_uint_eq(mem_used(), base);
}
END_TEST


/* ------------------------------------------------------------------------
 * The wheel's entries outliving their records
 * --------------------------------------------------------------------- */

/* A key removed before its expiry leaves its handle in a wheel slot; the
 * next key takes the freed slot, hence the same handle, with an expiry in
 * the same wheel slot. It goes once, at its own expiry. */
START_TEST(test_a_key_made_in_a_freed_slot_expires_once_at_its_own_time)
{
    struct store *s = store_create(seed_a, T0);
    (void)add_key(s, 0);        /* keeps the chunk: its free slot is reused */
    struct store_rec *r = add_key(s, 1);

    store_set_expire(s, r, T0 / MS + 3600000);
    store_remove(s, r);
    struct store_rec *q = add_key(s, 2);
    ck_assert_ptr_eq(q, r);                 /* the same slot */
    store_set_expire(s, q, T0 / MS + 3600004);
    ck_assert_uint_eq(expire_calls(s, T0 + 3600000 * MS, 8, SIZE_MAX), 0);
    ck_assert_uint_eq(expire_calls(s, T0 + 3600004 * MS, 8, SIZE_MAX), 0);
    ck_assert_ptr_eq(find_key(s, 2, T0 + 3600004 * MS), q);
    ck_assert_uint_eq(expire_calls(s, T0 + 3600005 * MS, 8, SIZE_MAX), 1);
    ck_assert_uint_eq(store_size(s), 1);
    ck_assert_ptr_null(find_key(s, 2, T0 + 3600005 * MS));
    ck_assert_uint_eq(store_usage(s).expired, 1);
    store_destroy(&s);
}
END_TEST

/* Keys removed before their expiry, all of them: their chunks go back to
 * the allocator while the wheel still holds their handles, and new keys
 * reuse the chunk ids. The wheel drops those handles without reading the
 * memory given back (AddressSanitizer checks that in make SANITIZE=1) and
 * the new keys go at their own time. */
START_TEST(test_wheel_entries_into_chunks_given_back_are_dropped_unread)
{
    enum { N = 3000, NEW = 10 };
    struct store *s = store_create(seed_a, T0);
    struct store_rec **rec = calloc(N, sizeof(*rec));
    ck_assert_ptr_nonnull(rec);

    size_t created = mem_used();
    for (uint32_t i = 0; i < N; i++) {
        rec[i] = add_key(s, i);
        store_set_expire(s, rec[i], T0 / MS + 3600000 + i);
    }
    for (uint32_t i = 0; i < N; i++) {
        store_remove(s, rec[i]);
    }
    finish_rehash(s);
    ck_assert_uint_eq(store_bytes(s), 0);   /* every chunk given back */
    ck_assert_uint_gt(mem_used(), created); /* the wheel's slots remain */
    for (uint32_t i = 0; i < NEW; i++) {
        store_set_expire(s, add_key(s, N + i), T0 / MS + 7200000);
    }
    ck_assert(expire_until_size(s, T0 + 3600000 * MS + N * MS, NEW, SIZE_MAX,
                                100));
    ck_assert_uint_eq(expire_calls(s, T0 + 3600000 * MS + N * MS, 8,
                                   SIZE_MAX), 0);
    ck_assert_uint_eq(store_size(s), NEW);
    ck_assert(expire_until_size(s, T0 + 7200001 * MS, 0, SIZE_MAX, 100));
    ck_assert_uint_eq(store_usage(s).expired, NEW);
    store_destroy(&s);
    free(rec);
}
END_TEST

/* Keys deleted and made again with the same TTL, round after round: the
 * handles their old timers leave in the wheel are compacted away, so
 * used memory stays where one round put it. */
START_TEST(test_deleting_and_adding_keys_with_a_ttl_keeps_memory_bounded)
{
    enum { N = 20000, ROUNDS = 30 };
    struct store *s = store_create(seed_a, T0);
    size_t created = mem_used();
    size_t one_round = 0;

    for (int round = 0; round <= ROUNDS; round++) {
        for (uint32_t i = 0; i < N; i++) {
            struct store_rec *r = find_key(s, i, T0);
            if (r != NULL) {
                store_remove(s, r);
            }
            store_set_expire(s, add_key(s, i), T0 / MS + 3600000);
        }
        finish_rehash(s);
        if (round == 0) {
            one_round = mem_used();
        }
    }
    ck_assert_uint_le(mem_used(), one_round + (size_t)N * sizeof(uint32_t));
    ck_assert(expire_until_size(s, T0 + 3600001 * MS, 0, 10000, 1000));
    finish_rehash(s);
    ck_assert_uint_le(mem_used(), created + 256);
    store_destroy(&s);
}
END_TEST

#if !defined(UNDER_ASAN)
/* Take every byte malloc can still give (under a lowered address-space
 * limit), as a chain of blocks; give_back() returns them. */
static void **
exhaust_memory(void)
{
    void **chain = NULL;
    const size_t sizes[] = { 1 << 16, 4096, 256, 64, 16 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        void **b;
        while ((b = malloc(sizes[i])) != NULL) {
            *b = chain;
            chain = b;
        }
    }
    return chain;
}

static void
give_back(void **chain)
{
    while (chain != NULL) {
        void **next = *chain;
        free(chain);
        chain = next;
    }
}
#endif

/* With no memory for a block of a wheel slot, a record's timer cannot be
 * placed; once memory is back the store finds the record again and it
 * still goes when dead, not before. */
START_TEST(test_a_record_the_wheel_had_no_memory_for_still_expires)
{
#if defined(UNDER_ASAN)
    return;     /* the plain build runs this test */
#else
    enum { N = 200 };
    struct rlimit old;
    struct store *s = store_create(seed_a, T0);
    struct store_rec *rec[N];
    for (uint32_t i = 0; i < N; i++) {
        rec[i] = add_key(s, i);
    }
    if (!limit_address_space((rlim_t)16 << 20, &old)) {
        store_destroy(&s);
        return;     /* no /proc: nothing to measure the limit against */
    }
    void **chain = exhaust_memory();
    /* Dues 70 ms apart: each in a wheel slot of its own, none of which
     * has a block yet. */
    for (uint32_t i = 0; i < N; i++) {
        store_set_expire(s, rec[i], T0 / MS + 1 + 70 * i);
    }
    size_t unplaced = 0;
    for (uint32_t i = 0; i < N; i++) {
        unplaced += rec[i]->timer == WHEEL_TAG_NONE;
        ck_assert_int_eq(rec[i]->expire_at, T0 / MS + 1 + 70 * i);
    }
    give_back(chain);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
    ck_assert_uint_gt(unplaced, 0);
    ck_assert(store_expire_pending(s, T0));
    ck_assert_uint_eq(expire_calls(s, T0 + MS, 16, SIZE_MAX), 0);
    ck_assert_uint_eq(store_size(s), N);
    for (uint32_t i = 0; i < N; i++) {
        ck_assert(rec[i]->timer != WHEEL_TAG_NONE);
    }
    ck_assert(expire_until_size(s, T0 + (2 + 70 * N) * MS, 0, SIZE_MAX, 100));
    ck_assert_uint_eq(store_usage(s).expired, N);
    store_destroy(&s);
#endif
}
END_TEST

/* ------------------------------------------------------------------------
 * Flush
 * --------------------------------------------------------------------- */

START_TEST(test_flush_removes_everything_and_returns_memory)
{
    struct store *s = store_create(seed_a, T0);
    size_t created = mem_used();

    for (uint32_t i = 0; i < 10000; i++) {
        store_set_expire(s, add_key(s, i), T0 / MS + i % 50 + 1);
    }
    store_flush(s);
    ck_assert_uint_eq(store_size(s), 0);
    ck_assert_uint_eq(mem_used(), created);
    ck_assert_ptr_null(find_key(s, 1, T0));
    /* The timers went with the records. */
    ck_assert_uint_eq(expire_calls(s, T0 + 1000 * MS, 16, SIZE_MAX), 0);
    /* The store is still usable. */
    struct store_rec *r = add_key(s, 42);
    ck_assert_ptr_eq(find_key(s, 42, T0), r);
    store_destroy(&s);
}
END_TEST

START_TEST(test_flush_during_rehash_returns_memory)
{
    struct store *s = store_create(seed_a, T0);
    size_t created = mem_used();
    uint32_t n = 0;

    while (n < 1024 || !store_cron(s, 0)) {
        (void)add_key(s, n++);
    }
    store_flush(s);
    ck_assert(!store_cron(s, 0));
    ck_assert_uint_eq(store_size(s), 0);
    ck_assert_uint_eq(mem_used(), created);
    store_destroy(&s);
}
END_TEST

/* ------------------------------------------------------------------------
 * Scan
 * --------------------------------------------------------------------- */

START_TEST(test_scan_of_a_stable_table_reports_each_key_once)
{
    enum { N = 1000 };
    unsigned count[N] = { 0 };
    struct seen sn = { count, N };
    struct store *s = store_create(seed_a, T0);
    uint64_t cursor = 0;

    for (uint32_t i = 0; i < N; i++) {
        (void)add_key(s, i);
    }
    finish_rehash(s);
    do {
        cursor = store_scan(s, cursor, count_cb, &sn);
    } while (cursor != 0);
    for (uint32_t i = 0; i < N; i++) {
        ck_assert_uint_eq(count[i], 1);
    }
    store_destroy(&s);
}
END_TEST

/* RANDOMKEY's draw: every record can come up, and a table emptied to
 * one record (its buckets nearly all empty) still yields it. */
START_TEST(test_random_draws_every_record_and_finds_a_lone_one)
{
    enum { N = 64, DRAWS = 20000 };
    unsigned hits[N] = { 0 };
    struct store *s = store_create(seed_a, T0);

    ck_assert_ptr_null(store_random(s));
    for (uint32_t i = 0; i < N; i++) {
        (void)add_key(s, i);
    }
    for (int d = 0; d < DRAWS; d++) {
        struct store_rec *r = store_random(s);
        ck_assert_ptr_nonnull(r);
        hits[rec_index(r)]++;
    }
    for (uint32_t i = 0; i < N; i++) {
        ck_assert_uint_gt(hits[i], 0);      /* each missed ~ e^-300 */
    }
    for (uint32_t i = 0; i + 1 < N; i++) {
        remove_key(s, i);
    }
    for (int d = 0; d < 100; d++) {
        struct store_rec *r = store_random(s);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(rec_index(r), N - 1);
    }
    remove_key(s, N - 1);
    ck_assert_ptr_null(store_random(s));
    store_destroy(&s);
}
END_TEST

START_TEST(test_scan_of_an_empty_store_ends_at_once)
{
    unsigned count[1] = { 0 };
    struct seen sn = { count, 1 };
    struct store *s = store_create(seed_a, T0);

    ck_assert_uint_eq(store_scan(s, 0, count_cb, &sn), 0);
    (void)add_key(s, 0);
    store_remove(s, find_key(s, 0, T0));
    ck_assert_uint_eq(store_scan(s, 0, count_cb, &sn), 0);
    ck_assert_uint_eq(count[0], 0);
    store_destroy(&s);
}
END_TEST

START_TEST(test_scan_interleaved_with_growth_sees_every_live_key)
{
    enum { LIVE = 1000, EXTRA = 30000, PER_CALL = 16 };
    static unsigned count[LIVE + EXTRA];
    struct seen sn = { count, LIVE + EXTRA };
    struct store *s = store_create(seed_a, T0);
    uint32_t n = 0;
    uint64_t cursor = 0;
    size_t calls_while_rehashing = 0;

    while (n < LIVE) {
        (void)add_key(s, n++);
    }
    finish_rehash(s);
    do {
        if (store_cron(s, 0)) {
            calls_while_rehashing++;
        }
        cursor = store_scan(s, cursor, count_cb, &sn);
        for (int k = 0; k < PER_CALL && n < LIVE + EXTRA; k++) {
            (void)add_key(s, n++);
        }
    } while (cursor != 0);
    ck_assert_uint_gt(calls_while_rehashing, 0);
    for (uint32_t i = 0; i < LIVE; i++) {
        ck_assert_uint_ge(count[i], 1);
    }
    store_destroy(&s);
}
END_TEST

START_TEST(test_scan_interleaved_with_shrink_sees_every_live_key)
{
    enum { LIVE = 200, N = 20000, PER_CALL = 250 };
    static unsigned count[N];
    struct seen sn = { count, N };
    struct store *s = store_create(seed_a, T0);
    uint32_t next_dead = LIVE;
    uint64_t cursor = 0;
    size_t calls_while_rehashing = 0;

    for (uint32_t i = 0; i < N; i++) {
        (void)add_key(s, i);
    }
    finish_rehash(s);
    do {
        if (store_cron(s, 0)) {
            calls_while_rehashing++;
        }
        cursor = store_scan(s, cursor, count_cb, &sn);
        for (int k = 0; k < PER_CALL && next_dead < N; k++) {
            remove_key(s, next_dead++);
        }
    } while (cursor != 0);
    ck_assert_uint_gt(calls_while_rehashing, 0);
    for (uint32_t i = 0; i < LIVE; i++) {
        ck_assert_uint_ge(count[i], 1);
    }
    store_destroy(&s);
}
END_TEST

struct lookup_ctx {
    struct store *s;
    int64_t now;
    size_t size_before;
    size_t calls;
};

static void
lookup_dead_cb(struct store_rec *r, void *arg)
{
    struct lookup_ctx *ctx = arg;

    (void)r;
    ck_assert_ptr_null(store_lookup(ctx->s, "dead", 4, ctx->now));
    ck_assert_uint_eq(store_size(ctx->s), ctx->size_before);
    ctx->calls++;
}

START_TEST(test_lookup_inside_scan_callback_does_not_free)
{
    struct store *s = store_create(seed_a, T0);
    struct store_rec *dead = store_add(s, "dead", 4, 0, 8);
    uint32_t n = 0;

    store_set_expire(s, dead, T0 / MS + 1);
    /* A grow in progress: lookups in the callback would otherwise step it. */
    while (n < 1024 || !store_cron(s, 0)) {
        (void)add_key(s, n++);
    }
    struct lookup_ctx ctx = { s, T0 + 2 * MS, store_size(s), 0 };
    uint64_t cursor = 0;
    do {
        cursor = store_scan(s, cursor, lookup_dead_cb, &ctx);
    } while (cursor != 0);
    ck_assert_uint_ge(ctx.calls, n + 1);
    /* Outside the scan the dead record goes as usual. */
    ck_assert_ptr_null(store_lookup(s, "dead", 4, T0 + 2 * MS));
    ck_assert_uint_eq(store_size(s), n);
    store_destroy(&s);
}
END_TEST

static void
order_cb(struct store_rec *r, void *arg)
{
    uint32_t **out = arg;
    *(*out)++ = rec_index(r);
}

static void
scan_order(const unsigned char seed[16], uint32_t *order, uint32_t n)
{
    struct store *s = store_create(seed, T0);
    uint32_t *out = order;
    uint64_t cursor = 0;

    for (uint32_t i = 0; i < n; i++) {
        (void)add_key(s, i);
    }
    finish_rehash(s);
    do {
        cursor = store_scan(s, cursor, order_cb, &out);
    } while (cursor != 0);
    ck_assert_uint_eq((size_t)(out - order), n);
    store_destroy(&s);
}

START_TEST(test_different_seeds_give_different_bucket_orders)
{
    enum { N = 64 };
    uint32_t a[N], a2[N], b[N];

    scan_order(seed_a, a, N);
    scan_order(seed_a, a2, N);
    scan_order(seed_b, b, N);
    ck_assert_mem_eq(a, a2, sizeof(a));     /* same seed, same layout */
    ck_assert(memcmp(a, b, sizeof(a)) != 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Slabs
 * --------------------------------------------------------------------- */

/* used_memory's growth per record of a 16-byte key with `state` bytes of
 * state, and where the state lies in it. */
static size_t
cost_of_16_byte_keys(size_t state, size_t *state_at)
{
    enum { N = 4096 };
    struct store *s = store_create(seed_a, T0);
    char key[17];

    /* Grow the table first so the delta below is records only. */
    for (uint32_t i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "warm:%011u", i);
        ck_assert_ptr_nonnull(store_add(s, key, 16, 1, state));
    }
    finish_rehash(s);
    size_t before = mem_used();
    for (uint32_t i = 0; i < N / 2; i++) {
        snprintf(key, sizeof(key), "user:%011u", i);
        struct store_rec *r = store_add(s, key, 16, 1, state);
        ck_assert_ptr_nonnull(r);
        *state_at = (size_t)((char *)store_rec_state(r) - (char *)r);
        ck_assert_uint_eq(store_rec_bytes(s, r, state),
                          (mem_used() - before) / (i + 1));
    }
    size_t per_record = (mem_used() - before) / (N / 2);
    ck_assert_uint_eq(mem_used() - before, per_record * (N / 2));
    store_destroy(&s);
    return per_record;
}

/* The 15-byte header, the key, then a state of 8 bytes 8-aligned (one
 * byte of padding): 40 bytes. A 4-byte state is packed right after the
 * key: 35 bytes, in a class of exactly that size. */
START_TEST(test_16_byte_keys_cost_40_bytes_with_8_of_state_35_with_4)
{
    size_t at;

    ck_assert_uint_eq(cost_of_16_byte_keys(8, &at), 40);
    ck_assert_uint_eq(at, 32);
    ck_assert_uint_eq(cost_of_16_byte_keys(4, &at), 35);
    ck_assert_uint_eq(at, 31);
    ck_assert_uint_eq(cost_of_16_byte_keys(16, &at), 48);
    ck_assert_uint_eq(at, 32);
}
END_TEST

/* Every key length up to the largest class: a packed record gets a slot
 * of at least its size, of exactly its size up to 48 bytes, at most 64
 * bytes more above; an aligned one a multiple of 8 with its state
 * 8-aligned; a record past 512 bytes a block of its own. */
START_TEST(test_every_record_size_gets_a_slot_that_fits_it)
{
    static char key[600];
    struct store *s = store_create(seed_a, T0);
    struct store *t = store_create(seed_a, T0);
    memset(key, 'k', sizeof(key));

    for (size_t len = 0; len < sizeof(key); len++) {
        struct store_rec *p = store_add(s, key, len, 1, 4);
        struct store_rec *a = store_add(t, key, len, 1, 8);
        ck_assert_ptr_nonnull(p);
        ck_assert_ptr_nonnull(a);
        size_t psize = 15 + len + (len >= 255 ? 4 : 0) + 4;
        size_t pslot = store_rec_bytes(s, p, 4);
        ck_assert_uint_ge(pslot, psize);
        if (psize <= 48) {
            ck_assert_uint_eq(pslot, psize < 20 ? 20 : psize);
        } else if (psize <= 512) {
            ck_assert_uint_lt(pslot, psize + 64);
        }
        ck_assert_uint_eq((uintptr_t)store_rec_state(a) % 8, 0);
        size_t aslot = store_rec_bytes(t, a, 8);
        if (aslot <= 512) {
            ck_assert_uint_eq(aslot % 8, 0);
        }
    }
    store_destroy(&s);
    store_destroy(&t);
}
END_TEST

START_TEST(test_keys_past_255_and_64k_bytes_keep_their_length)
{
    enum { LONG = 70000 };
    struct store *s = store_create(seed_a, T0);
    char *big = malloc(LONG + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'x', LONG + 1);

    size_t lens[] = { 254, 255, 256, 65535, 65536, LONG };
    struct store_rec *rec[6];
    for (int i = 0; i < 6; i++) {
        rec[i] = store_add(s, big, lens[i], 2, 16);
        ck_assert_ptr_nonnull(rec[i]);
        ck_assert_uint_eq(store_rec_keylen(rec[i]), lens[i]);
        ck_assert_uint_eq((uintptr_t)store_rec_state(rec[i]) % 8, 0);
        memset(store_rec_state(rec[i]), i + 1, 16);
    }
    for (int i = 0; i < 6; i++) {
        struct store_rec *r = store_lookup(s, big, lens[i], T0);
        ck_assert_ptr_eq(r, rec[i]);
        ck_assert_mem_eq(store_rec_key(r), big, lens[i]);
        ck_assert_uint_eq(((unsigned char *)store_rec_state(r))[15], i + 1);
    }
    ck_assert_ptr_null(store_lookup(s, big, LONG + 1, T0));
    store_remove(s, rec[1]);
    store_remove(s, rec[3]);
    ck_assert_ptr_null(store_lookup(s, big, 255, T0));
    ck_assert_ptr_null(store_lookup(s, big, 65535, T0));
    ck_assert_ptr_eq(store_lookup(s, big, 256, T0), rec[2]);
    ck_assert_ptr_eq(store_lookup(s, big, 65536, T0), rec[4]);
    store_destroy(&s);
    free(big);
}
END_TEST

START_TEST(test_freed_slots_are_reused_and_empty_chunks_returned)
{
    enum { N = 5000 };
    size_t base = mem_used();
    struct store *s = store_create(seed_a, T0);
    struct store_rec **rec = calloc(N, sizeof(*rec));
    ck_assert_ptr_nonnull(rec);

    for (uint32_t i = 0; i < N; i++) {
        rec[i] = add_key(s, i);
    }
    finish_rehash(s);
    size_t full = mem_used();
    /* Free every other record: the slots are reused by new keys, so the
     * same number of records costs the same memory again. */
    for (uint32_t i = 0; i < N; i += 2) {
        store_remove(s, rec[i]);
    }
    for (uint32_t i = 0; i < N; i += 2) {
        rec[i] = add_key(s, N + i);
    }
    finish_rehash(s);
    ck_assert_uint_eq(mem_used(), full);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t k = i % 2 == 0 ? N + i : i;
        ck_assert_ptr_eq(find_key(s, k, T0), rec[i]);
    }
    for (uint32_t i = 0; i < N; i++) {
        store_remove(s, rec[i]);
    }
    finish_rehash(s);
    store_destroy(&s);
    ck_assert_uint_eq(mem_used(), base);
    free(rec);
}
END_TEST

/* ------------------------------------------------------------------------
 * Suite
 * --------------------------------------------------------------------- */

Suite *
store_suite(void)
{
    Suite *s = suite_create("store");

    TCase *tc = tcase_create("basics");
    tcase_add_test(tc,
                   test_added_record_is_found_with_zeroed_state_and_its_key);
    tcase_add_test(tc, test_removed_record_is_absent);
    tcase_add_test(tc,
                   test_prefetched_hash_finds_the_key_and_a_wrong_one_only_misses);
    tcase_add_test(tc, test_add_with_the_lookup_hash_is_found_by_every_path);
    tcase_add_test(tc,
                   test_binary_keys_with_nul_bytes_and_empty_key_are_distinct);
    tcase_add_test(tc, test_keys_sharing_a_prefix_are_distinct);
    tcase_add_test(tc, test_add_rejects_oversized_state_or_key);
    tcase_add_test(tc, test_destroy_nulls_the_pointer_and_frees_everything);
    suite_add_tcase(s, tc);

    tc = tcase_create("resize");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_100k_keys_survive_growth_with_rehash_interleaved);
    tcase_add_test(tc, test_growth_rehashes_a_bucket_per_call_not_all_at_once);
    tcase_add_test(tc, test_a_reserved_table_neither_grows_nor_shrinks_under_a_load);
    tcase_add_test(tc,
                   test_deleting_most_keys_shrinks_the_table_through_lookups);
    tcase_add_test(tc, test_remove_during_rehash_keeps_the_other_keys);
    tcase_add_test(tc, test_add_returns_null_when_memory_runs_out);
    suite_add_tcase(s, tc);

    tc = tcase_create("expiry");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc,
                   test_lookup_past_the_expiry_ms_is_dead_and_one_ns_before_alive);
    tcase_add_test(tc, test_expire_removes_dead_records_only_never_early);
    tcase_add_test(tc, test_expire_respects_its_budget);
    tcase_add_test(tc, test_extending_expiry_leaves_the_timer_in_place);
    tcase_add_test(tc, test_extended_record_lives_until_its_final_expire_at);
    tcase_add_test(tc, test_never_records_do_not_expire);
    tcase_add_test(tc, test_mem_used_returns_to_baseline_after_1m_keys_expire);
    suite_add_tcase(s, tc);

    tc = tcase_create("stale_timers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc,
                   test_a_key_made_in_a_freed_slot_expires_once_at_its_own_time);
    tcase_add_test(tc,
                   test_wheel_entries_into_chunks_given_back_are_dropped_unread);
    tcase_add_test(tc,
                   test_deleting_and_adding_keys_with_a_ttl_keeps_memory_bounded);
    tcase_add_test(tc, test_a_record_the_wheel_had_no_memory_for_still_expires);
    suite_add_tcase(s, tc);

    tc = tcase_create("slabs");
    tcase_add_test(tc,
                   test_16_byte_keys_cost_40_bytes_with_8_of_state_35_with_4);
    tcase_add_test(tc, test_every_record_size_gets_a_slot_that_fits_it);
    tcase_add_test(tc, test_keys_past_255_and_64k_bytes_keep_their_length);
    tcase_add_test(tc, test_freed_slots_are_reused_and_empty_chunks_returned);
    suite_add_tcase(s, tc);

    tc = tcase_create("flush");
    tcase_add_test(tc, test_flush_removes_everything_and_returns_memory);
    tcase_add_test(tc, test_flush_during_rehash_returns_memory);
    suite_add_tcase(s, tc);

    tc = tcase_create("scan");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_scan_of_a_stable_table_reports_each_key_once);
    tcase_add_test(tc, test_scan_of_an_empty_store_ends_at_once);
    tcase_add_test(tc, test_random_draws_every_record_and_finds_a_lone_one);
    tcase_add_test(tc, test_scan_interleaved_with_growth_sees_every_live_key);
    tcase_add_test(tc, test_scan_interleaved_with_shrink_sees_every_live_key);
    tcase_add_test(tc, test_lookup_inside_scan_callback_does_not_free);
    tcase_add_test(tc, test_different_seeds_give_different_bucket_orders);
    suite_add_tcase(s, tc);

    return s;
}
