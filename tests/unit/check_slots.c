/*
 * check_slots.c - the per-slot index: the store's lists (server/store.c,
 * "Slots") under adds, removals, rehashes, expiry by the wheel and by
 * lookup, flushes, enabling on a full store and disabling, held to a
 * recount of the table after every step of a random run; and the
 * keyspace's face of it (keyspace.h, "hash slots"): database 0 only,
 * through RENAME, MOVE, SWAPDB, FLUSHALL, restores, and slot deletion.
 *
 * Time is injected: every "now" derives from T0.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/keyslot.h"
#include "lib/mem.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/keyspace.h"
#include "server/server.h"
#include "server/store.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

#define MS      INT64_C(1000000)
#define T0      (INT64_C(1700000000) * 1000 * MS)
#define KEYBUF  600         /* room for keys past the largest slab class */

static const unsigned char seed[16] = {
    0x51, 0x07, 0x5e, 0xed, 0x04, 0x05, 0x06, 0x07,
    0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
};

/* Key i: a few share a hash tag (so slots hold many keys), every 97th is
 * long enough for a record of the BIG class. */
static size_t
key_of(char buf[KEYBUF], uint32_t i)
{
    int n;
    if (i % 3 == 0) {
        n = snprintf(buf, KEYBUF, "{tag%u}:%u", i % 7, i);
    } else {
        n = snprintf(buf, KEYBUF, "key:%u", i);
    }
    if (i % 97 == 0) {
        memset(buf + n, 'x', 520);
        n += 520;
    }
    return (size_t)n;
}

static uint32_t
rec_index(struct store_rec *r)
{
    uint32_t idx;
    memcpy(&idx, store_rec_state(r), sizeof(idx));
    return idx;
}

static struct store_rec *
add_key(struct store *s, uint32_t i)
{
    char buf[KEYBUF];
    size_t len = key_of(buf, i);
    ck_assert_ptr_null(store_lookup(s, buf, len, T0));
    struct store_rec *r = store_add(s, buf, len, 1, 8);
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

/* A fixed sequence (xorshift64*), so a failing run can be replayed. */
static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t
rand_below(uint64_t n)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (rng * 0x2545f4914f6cdd1du) % n;
}

/* ---- the recount ------------------------------------------------------- */

struct recount {
    uint64_t *count;            /* per slot, from a scan */
    unsigned char *seen;        /* per key index: scanned (dedup) */
    uint32_t nkeys;
};

static void
recount_one(struct store_rec *r, void *arg)
{
    struct recount *rc = arg;
    uint32_t i = rec_index(r);
    ck_assert_uint_lt(i, rc->nkeys);
    if (!rc->seen[i]) {
        rc->seen[i] = 1;
        rc->count[keyslot(store_rec_key(r), store_rec_keylen(r))]++;
    }
}

struct walk {
    unsigned slot;
    unsigned char *seen;
    uint32_t nkeys;
    size_t n;
};

static void
walk_one(struct store_rec *r, void *arg)
{
    struct walk *w = arg;
    uint32_t i = rec_index(r);
    ck_assert_uint_lt(i, w->nkeys);
    ck_assert_uint_eq(keyslot(store_rec_key(r), store_rec_keylen(r)),
                      w->slot);
    ck_assert(!w->seen[i]);             /* each record once */
    w->seen[i] = 1;
    w->n++;
}

/* Every slot's count is the table's recount, and its list holds exactly
 * its records: each once, every one of them. */
static void
check_against_recount(struct store *s, uint32_t nkeys)
{
    struct recount rc = { calloc(KEYSLOT_SLOTS, sizeof(uint64_t)),
                          calloc(nkeys, 1), nkeys };
    uint64_t cursor = 0, total = 0;
    do {
        cursor = store_scan(s, cursor, recount_one, &rc);
    } while (cursor != 0);
    unsigned char *listed = calloc(nkeys, 1);
    for (unsigned slot = 0; slot < KEYSLOT_SLOTS; slot++) {
        ck_assert_uint_eq(store_slot_count(s, slot), rc.count[slot]);
        total += rc.count[slot];
        if (rc.count[slot] == 0) {
            ck_assert_ptr_null(store_slot_first(s, slot));
            continue;
        }
        struct walk w = { slot, listed, nkeys, 0 };
        ck_assert_uint_eq(store_slot_records(s, slot, SIZE_MAX, walk_one, &w),
                          rc.count[slot]);
        ck_assert_uint_eq(w.n, rc.count[slot]);
    }
    ck_assert_uint_eq(total, store_size(s));
    ck_assert_int_eq(memcmp(listed, rc.seen, nkeys), 0);
    free(listed);
    free(rc.count);
    free(rc.seen);
}

/* ---- the store's index ------------------------------------------------- */

START_TEST(test_an_index_off_counts_and_lists_nothing)
{
    struct store *s = store_create(seed, T0);
    for (uint32_t i = 0; i < 100; i++) {
        add_key(s, i);
    }
    ck_assert(!store_slots_on(s));
    char buf[KEYBUF];
    size_t len = key_of(buf, 1);
    unsigned slot = keyslot(buf, len);
    ck_assert_uint_eq(store_slot_count(s, slot), 0);
    ck_assert_ptr_null(store_slot_first(s, slot));
    store_destroy(&s);
}
END_TEST

START_TEST(test_adds_and_removes_keep_each_list_newest_first)
{
    struct store *s = store_create(seed, T0);
    ck_assert(store_slots_enable(s));
    /* Keys 0, 3, 6... of tag 0 share one slot: i % 7 == 0 and i % 3 == 0. */
    uint32_t ids[] = { 0, 21, 42, 63, 84 };
    char buf[KEYBUF];
    unsigned slot = keyslot(buf, key_of(buf, 0));
    for (size_t j = 0; j < 5; j++) {
        add_key(s, ids[j]);
        ck_assert_uint_eq(store_slot_count(s, slot), j + 1);
        ck_assert_uint_eq(rec_index(store_slot_first(s, slot)), ids[j]);
    }
    /* The middle, the head, the tail. */
    store_remove(s, find_key(s, 42, T0));
    store_remove(s, find_key(s, 84, T0));
    store_remove(s, find_key(s, 0, T0));
    ck_assert_uint_eq(store_slot_count(s, slot), 2);
    ck_assert_uint_eq(rec_index(store_slot_first(s, slot)), 63);
    check_against_recount(s, 100);
    /* A page of one, then past the end. */
    unsigned char seen[100] = { 0 };
    struct walk w = { slot, seen, 100, 0 };
    ck_assert_uint_eq(store_slot_records(s, slot, 1, walk_one, &w), 1);
    ck_assert(seen[63] && !seen[21]);
    ck_assert_uint_eq(store_slot_records(s, slot + 1 == KEYSLOT_SLOTS ? 0
                                         : slot + 1, 0, walk_one, &w), 0);
    store_remove(s, find_key(s, 63, T0));
    store_remove(s, find_key(s, 21, T0));
    ck_assert_uint_eq(store_slot_count(s, slot), 0);
    ck_assert_ptr_null(store_slot_first(s, slot));
    store_destroy(&s);
}
END_TEST

START_TEST(test_growth_and_shrink_with_rehash_keep_every_count)
{
    const uint32_t n = 60000;
    struct store *s = store_create(seed, T0);
    ck_assert(store_slots_enable(s));
    for (uint32_t i = 0; i < n; i++) {
        add_key(s, i);
        if (i % 5000 == 0) {
            check_against_recount(s, n);    /* mid-rehash too */
        }
    }
    check_against_recount(s, n);
    for (uint32_t i = 0; i < n; i++) {
        if (i % 10 != 0) {
            store_remove(s, find_key(s, i, T0));
        }
        if (i % 9000 == 0) {
            (void)store_cron(s, 3);         /* shrink steps between */
            check_against_recount(s, n);
        }
    }
    while (store_cron(s, 1000)) {
        continue;
    }
    check_against_recount(s, n);
    store_destroy(&s);
}
END_TEST

START_TEST(test_expiry_by_the_wheel_and_by_lookup_uncounts_the_key)
{
    const uint32_t n = 3000;
    struct store *s = store_create(seed, T0);
    ck_assert(store_slots_enable(s));
    for (uint32_t i = 0; i < n; i++) {
        struct store_rec *r = add_key(s, i);
        if (i % 2 == 0) {
            store_set_expire(s, r, T0 / MS + 10);
        }
    }
    /* Dead but not collected: still counted, as Redis counts them. */
    check_against_recount(s, n);
    /* A lookup meets a dead one and frees it. */
    ck_assert_ptr_null(find_key(s, 0, T0 + 20 * MS));
    ck_assert_uint_eq(store_size(s), n - 1);
    check_against_recount(s, n);
    for (int k = 0; k < 1000 && store_size(s) > n / 2; k++) {
        (void)store_expire(s, T0 + 20 * MS + k * MS, 100);
    }
    ck_assert_uint_eq(store_size(s), n / 2);
    check_against_recount(s, n);
    store_destroy(&s);
}
END_TEST

START_TEST(test_flush_empties_every_list_and_the_memory_follows)
{
    struct store *s = store_create(seed, T0);
    ck_assert(store_slots_enable(s));
    size_t before = mem_used();
    for (uint32_t i = 0; i < 20000; i++) {
        add_key(s, i);
    }
    store_flush(s);
    ck_assert_uint_eq(mem_used(), before);
    check_against_recount(s, 20000);
    for (uint32_t i = 0; i < 500; i++) {
        add_key(s, i);                      /* it works on after a flush */
    }
    check_against_recount(s, 20000);
    store_destroy(&s);
}
END_TEST

START_TEST(test_enabling_a_full_store_links_all_and_disabling_frees_all)
{
    const uint32_t n = 40000;
    struct store *s = store_create(seed, T0);
    for (uint32_t i = 0; i < n; i++) {
        add_key(s, i);
    }
    for (uint32_t i = 0; i < n; i += 3) {
        store_remove(s, find_key(s, i, T0));   /* chunks with holes */
    }
    (void)store_cron(s, 2);                 /* and a rehash under way */
    size_t before = mem_used();
    ck_assert(store_slots_enable(s));
    ck_assert(store_slots_enable(s));       /* twice is once */
    check_against_recount(s, n);
    for (uint32_t i = 0; i < n; i += 3) {
        add_key(s, i);
    }
    check_against_recount(s, n);
    store_slots_disable(s);
    ck_assert(!store_slots_on(s));
    for (uint32_t i = 0; i < n; i += 3) {
        store_remove(s, find_key(s, i, T0));
    }
    ck_assert_uint_eq(mem_used(), before);
    store_destroy(&s);
}
END_TEST

/* used_memory pays 10 bytes a key for the links and the kept slot, and
 * the head and count arrays once. */
START_TEST(test_the_index_costs_10_bytes_a_key_in_used_memory)
{
    const uint32_t n = 100000;
    struct store *off = store_create(seed, T0);
    struct store *on = store_create(seed, T0);
    size_t m0 = mem_used();
    for (uint32_t i = 0; i < n; i++) {
        add_key(off, i);
    }
    size_t m1 = mem_used();
    ck_assert(store_slots_enable(on));
    size_t fixed = mem_used() - m1;
    for (uint32_t i = 0; i < n; i++) {
        add_key(on, i);
    }
    size_t m2 = mem_used();
    ck_assert_uint_eq((m2 - m1 - fixed) - (m1 - m0), (size_t)10 * n);
    ck_assert_uint_le(fixed, 2 * KEYSLOT_SLOTS * sizeof(uint32_t) + 64);
    store_destroy(&off);
    store_destroy(&on);
}
END_TEST

/* Random adds, removes, expiries (set, moved earlier and later, dropped),
 * wheel runs, dead lookups, rehash steps and a rare flush, the index held
 * to the recount throughout. */
START_TEST(test_random_operations_match_a_recount)
{
    const uint32_t n = 4000;
    struct store *s = store_create(seed, T0);
    ck_assert(store_slots_enable(s));
    int64_t now = T0;
    for (int step = 0; step < 60000; step++) {
        uint32_t i = (uint32_t)rand_below(n);
        struct store_rec *r = find_key(s, i, now);
        switch (rand_below(10)) {
        case 0: case 1: case 2: case 3:
            if (r == NULL) {
                add_key(s, i);
            }
            break;
        case 4: case 5:
            if (r != NULL) {
                store_remove(s, r);
            }
            break;
        case 6:
            if (r != NULL) {
                store_set_expire(s, r, rand_below(3) == 0
                                 ? STORE_NEVER
                                 : now / MS + (int64_t)rand_below(50));
            }
            break;
        case 7:
            now += (int64_t)rand_below(5) * MS;
            (void)store_expire(s, now, 1 + rand_below(64));
            break;
        case 8:
            (void)store_cron(s, 1 + rand_below(4));
            break;
        default:
            if (rand_below(2000) == 0) {
                store_flush(s);
            }
            break;
        }
        if (step % 3000 == 0) {
            check_against_recount(s, n);
        }
    }
    check_against_recount(s, n);
    store_destroy(&s);
}
END_TEST

/* ---- the keyspace's face ----------------------------------------------- */

static struct conn *client;

static void
setup(void)
{
    ck_assert_int_eq(conf_init(&srv.conf), 0);
    server_apply_limits();
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    keyspace_slots_enable();                /* before the keyspace, as at start */
    ck_assert_int_eq(keyspace_init(seed, T0), 0);
    ck_assert_int_eq(cmd_setup(command_table, command_count), 0);
    client = fx_client(2);
}

static void
teardown(void)
{
    keyspace_teardown();
    obuf_deinit(&client->out);
    free(client);
    client = NULL;
    conf_deinit(&srv.conf);
}

static uint64_t
count_of(const char *key)
{
    return keyspace_slot_count(keyslot(key, strlen(key)));
}

struct names {
    char buf[4096];
    size_t len;
    size_t n;
};

static void
collect_name(const char *key, size_t len, void *arg)
{
    struct names *nm = arg;
    ck_assert_uint_lt(nm->len + len + 1, sizeof(nm->buf));
    memcpy(nm->buf + nm->len, key, len);
    nm->len += len;
    nm->buf[nm->len++] = ' ';
    nm->n++;
}

START_TEST(test_database_0_is_indexed_through_renames_and_moves)
{
    ck_assert(keyspace_slots_on());
    fx_expect("+OK\r\n", fx_run(client, "SET", "{a}1", "x", NULL));
    fx_expect("+OK\r\n", fx_run(client, "SET", "{a}2", "x", NULL));
    fx_expect(":1\r\n", fx_run(client, "INCR", "{b}1", NULL));
    ck_assert_uint_eq(count_of("{a}"), 2);
    ck_assert_uint_eq(count_of("{b}"), 1);
    fx_expect("+OK\r\n", fx_run(client, "RENAME", "{a}1", "{b}2", NULL));
    ck_assert_uint_eq(count_of("{a}"), 1);
    ck_assert_uint_eq(count_of("{b}"), 2);
    /* A string that turns integer is a record replaced: still one key. */
    fx_expect("+OK\r\n", fx_run(client, "SET", "{b}2", "12", NULL));
    ck_assert_uint_eq(count_of("{b}"), 2);
    /* MOVE to another database leaves database 0's index... */
    fx_expect(":1\r\n", fx_run(client, "MOVE", "{b}2", "3", NULL));
    ck_assert_uint_eq(count_of("{b}"), 1);
    /* ...and keys written there are never counted. */
    fx_expect("+OK\r\n", fx_run(client, "SELECT", "3", NULL));
    fx_expect("+OK\r\n", fx_run(client, "SET", "{b}9", "x", NULL));
    ck_assert_uint_eq(count_of("{b}"), 1);
    fx_expect(":1\r\n", fx_run(client, "MOVE", "{b}9", "0", NULL));
    ck_assert_uint_eq(count_of("{b}"), 2);
    struct names nm = { .len = 0 };
    ck_assert_uint_eq(keyspace_slot_keys(keyslot("{b}", 3), 10,
                                         collect_name, &nm), 2);
    nm.buf[nm.len] = '\0';
    ck_assert_str_eq(nm.buf, "{b}9 {b}1 ");     /* newest first */
    fx_expect("+OK\r\n", fx_run(client, "SELECT", "0", NULL));
    fx_expect(":1\r\n", fx_run(client, "DEL", "{b}9", NULL));
    ck_assert_uint_eq(count_of("{b}"), 1);
}
END_TEST

START_TEST(test_swapdb_hands_the_index_to_the_store_now_database_0)
{
    fx_expect("+OK\r\n", fx_run(client, "SET", "{a}1", "x", NULL));
    fx_expect("+OK\r\n", fx_run(client, "SELECT", "1", NULL));
    fx_expect("+OK\r\n", fx_run(client, "SET", "{a}2", "x", NULL));
    fx_expect("+OK\r\n", fx_run(client, "SET", "{a}3", "x", NULL));
    ck_assert_uint_eq(count_of("{a}"), 1);
    fx_expect("+OK\r\n", fx_run(client, "SWAPDB", "0", "1", NULL));
    ck_assert(keyspace_slots_on());
    ck_assert_uint_eq(count_of("{a}"), 2);
    ck_assert(!store_slots_on(srv.dbs[1]));
    fx_expect("+OK\r\n", fx_run(client, "SET", "{a}4", "x", NULL));  /* db 1 */
    ck_assert_uint_eq(count_of("{a}"), 2);
    fx_expect("+OK\r\n", fx_run(client, "FLUSHALL", NULL));
    ck_assert_uint_eq(count_of("{a}"), 0);
}
END_TEST

START_TEST(test_slot_delete_removes_every_key_of_the_slot_only)
{
    char key[32];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "{s}%d", i);
        fx_expect("+OK\r\n", fx_run(client, "SET", key, "v", NULL));
    }
    fx_expect("+OK\r\n", fx_run(client, "SET", "other", "v", NULL));
    fx_expect(":1\r\n", fx_run(client, "PEXPIRE", "{s}7", "5", NULL));
    clock_set_fake_wall(T0 + 10 * MS);      /* {s}7 is dead, not collected */
    ck_assert_uint_eq(count_of("{s}"), 50);
    fx_expect("+OK\r\n", fx_run(client, "WATCH", "{s}3", NULL));
    ck_assert_uint_eq(keyspace_slot_delete(keyslot("{s}", 3),
                                           T0 + 10 * MS), 50);
    ck_assert_uint_eq(count_of("{s}"), 0);
    ck_assert_uint_eq(keyspace_total_keys(), 1);
    /* The watcher heard of it, as of a DEL. */
    fx_expect("+OK\r\n", fx_run(client, "MULTI", NULL));
    fx_expect("+QUEUED\r\n", fx_run(client, "PING", NULL));
    fx_expect("*-1\r\n", fx_run(client, "EXEC", NULL));
    ck_assert_uint_eq(keyspace_slot_delete(keyslot("{s}", 3), T0), 0);
}
END_TEST

START_TEST(test_restored_keys_are_indexed)
{
    char err[128];
    ck_assert_int_eq(keyspace_restore(0, KEY_INT, "{r}1", 4, STORE_NEVER,
                                      (const unsigned char *)"\x05\0\0\0\0\0\0\0",
                                      8, KS_ENCODING, false, T0, err, sizeof(err)), 0);
    ck_assert_uint_eq(count_of("{r}"), 1);
    ck_assert_int_eq(keyspace_restore(0, KEY_INT, "{r}1", 4, STORE_NEVER,
                                      (const unsigned char *)"\x06\0\0\0\0\0\0\0",
                                      8, KS_ENCODING, true, T0, err, sizeof(err)), 0);
    ck_assert_uint_eq(count_of("{r}"), 1);
    ck_assert_int_eq(keyspace_restore(1, KEY_INT, "{r}2", 4, STORE_NEVER,
                                      (const unsigned char *)"\x06\0\0\0\0\0\0\0",
                                      8, KS_ENCODING, false, T0, err, sizeof(err)), 0);
    ck_assert_uint_eq(count_of("{r}"), 1);
}
END_TEST

Suite *
slots_suite(void)
{
    Suite *s = suite_create("slots");
    TCase *tc = tcase_create("store");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_an_index_off_counts_and_lists_nothing);
    tcase_add_test(tc, test_adds_and_removes_keep_each_list_newest_first);
    tcase_add_test(tc, test_growth_and_shrink_with_rehash_keep_every_count);
    tcase_add_test(tc, test_expiry_by_the_wheel_and_by_lookup_uncounts_the_key);
    tcase_add_test(tc, test_flush_empties_every_list_and_the_memory_follows);
    tcase_add_test(tc,
                   test_enabling_a_full_store_links_all_and_disabling_frees_all);
    tcase_add_test(tc, test_the_index_costs_10_bytes_a_key_in_used_memory);
    tcase_add_test(tc, test_random_operations_match_a_recount);
    suite_add_tcase(s, tc);

    tc = tcase_create("keyspace");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_database_0_is_indexed_through_renames_and_moves);
    tcase_add_test(tc, test_swapdb_hands_the_index_to_the_store_now_database_0);
    tcase_add_test(tc, test_slot_delete_removes_every_key_of_the_slot_only);
    tcase_add_test(tc, test_restored_keys_are_indexed);
    suite_add_tcase(s, tc);
    return s;
}
