/*
 * check_keyspace.c - the keyspace (server/keyspace.c) in-process, without
 * sockets: every key type built through its public API, encoded and
 * restored into a fresh keyspace field by field (expiry included), bad
 * encodings refused, admission under maxmemory, and what a write tells
 * the transactions watching a key and the journal.
 *
 * Time is injected: the limiter clock is set by hand (clock.h) and every
 * "now" handed to the keyspace is derived from T0.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/fixed_window.h"
#include "algorithms/sliding_window.h"
#include "lib/mem.h"
#include "protocol/obuf.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/journal.h"
#include "server/keyspace.h"
#include "server/multi.h"
#include "server/server.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

#define MS   INT64_C(1000000)
#define SEC  (1000 * MS)
#define T0   (INT64_C(1700000000) * SEC)
#define ERRLEN 256

/* What the journal sink of these tests was handed (capture()). */
static unsigned char *captured;
static size_t captured_len;

static const unsigned char seed[16] = {
    0x5e, 0xed, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
    0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
};

static void
setup(void)
{
    ck_assert_int_eq(conf_init(&srv.conf), 0);
    server_apply_limits();
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    ck_assert_int_eq(keyspace_init(seed, T0), 0);
}

static void
teardown(void)
{
    keyspace_teardown();
    journal_attach(JOURNAL_SINK_FILE, NULL);    /* drops what a test left */
    free(captured);
    captured = NULL;
    captured_len = 0;
    conf_deinit(&srv.conf);
    clock_set_fake_wall(0);
    clock_reset_clamp();
}

/* Every database gone, database 0 made anew: what a restart starts from. */
static void
fresh_keyspace(void)
{
    keyspace_teardown();
    ck_assert_uint_eq(keytype_owned_bytes(), 0);
    ck_assert_int_eq(keyspace_init(seed, T0), 0);
    ck_assert_uint_eq(keyspace_total_keys(), 0);
}

static void
set_conf(const char *name, const char *value)
{
    char err[ERRLEN];
    ck_assert_msg(conf_set(&srv.conf, name, value, err, sizeof(err)) == 0,
                  "%s %s: %s", name, value, err);
}

static struct store_rec *
find(const char *key)
{
    struct key_hint h = { false, 0 };
    return keyspace_lookup(&h, key, strlen(key), clock_wall_now());
}

/* ------------------------------------------------------------------------
 * Building keys of each type
 * --------------------------------------------------------------------- */

static struct store_rec *
make_gcra(const char *key, uint64_t tat, int64_t ttl_ms)
{
    struct key_hint h = { false, 0 };
    ck_assert(keyspace_store_gcra(&h, key, strlen(key), NULL, tat, ttl_ms,
                                  T0));
    struct store_rec *r = find(key);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->type, KEY_INT);
    return r;
}

/* A fixed-size state (fixed, sliding, Redis GCRA) until fresh_at. */
static struct store_rec *
make_state(const char *key, uint8_t type, const void *state, size_t size,
           int64_t fresh_at)
{
    struct key_hint h = { false, 0 };
    ck_assert_uint_eq(keytype_state_size(type), size);
    ck_assert(keyspace_store_state(&h, key, strlen(key), NULL, type, state,
                                   size, fresh_at, T0));
    struct store_rec *r = find(key);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->type, type);
    return r;
}

/* A string key of the value (KEY_INT or KEY_STR as its bytes say),
 * without expiry. */
static struct store_rec *
make_string(const char *key, const char *val, uint8_t type)
{
    struct key_hint h = { false, 0 };
    struct store_rec *r = keyspace_set_string(&h, key, strlen(key), NULL, val,
                                              strlen(val));
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->type, type);
    return r;
}

/* A list, a hash and a sorted set of n elements each (n > 0), made as
 * their handlers make them, with an expiry on the sorted set. */
static void
make_collections(const char *lkey, const char *hkey, const char *zkey, int n)
{
    struct key_hint h = { false, 0 };
    struct store_rec *l = keyspace_coll_add(&h, lkey, strlen(lkey), KEY_LIST,
                                            0);
    struct store_rec *m = keyspace_coll_add(&h, hkey, strlen(hkey), KEY_HASH,
                                            0);
    struct store_rec *z = keyspace_coll_add(&h, zkey, strlen(zkey), KEY_ZSET,
                                            0);
    ck_assert(l != NULL && m != NULL && z != NULL);
    for (int i = 0; i < n; i++) {
        char v[16];
        double got;
        int len = snprintf(v, sizeof(v), "e%d", i);
        ck_assert(qlist_push(store_rec_state(l), i % 2 == 0, v, (size_t)len));
        ck_assert_int_eq(hmap_set(store_rec_state(m), v, (size_t)len, "val",
                                  3), HMAP_NEW);
        ck_assert_int_eq(zset_add(store_rec_state(z), v, (size_t)len,
                                  i * 1.5, 0, &got), ZSET_ADDED);
    }
    keyspace_set_expire(z, T0 / MS + 60000);
}

/* Types a record can have (KEY_COUNTER_V2 is only ever read from disk). */
/* A set of n members (n > 0), integers and words, made as SADD makes it. */
static void
make_set(const char *key, int n)
{
    struct key_hint h = { false, 0 };
    struct store_rec *r = keyspace_coll_add(&h, key, strlen(key), KEY_SET, 0);
    ck_assert_ptr_nonnull(r);
    for (int i = 0; i < n; i++) {
        char v[16];
        int len = snprintf(v, sizeof(v), i % 2 ? "m%d" : "%d", n - i);
        ck_assert_int_eq(set_add(store_rec_state(r), v, (size_t)len),
                         SET_NEW);
    }
}

static bool
live_type(int t)
{
    return t != KEY_COUNTER_V2;
}

struct log_item {
    int64_t at;             /* ns after T0 */
    int64_t cost;
    const char *meta;       /* NULL: none */
};

/* A log kept keep_ms, its entries appended at their times, its expiry the
 * newest entry's departure (as the RL.LOG handler sets it). */
static struct store_rec *
make_log(const char *key, int64_t keep_ms, const struct log_item *items,
         size_t n)
{
    struct key_hint h = { false, 0 };
    struct store_rec *r = keyspace_add(&h, key, strlen(key), KEY_LOG,
                                       sizeof(struct ks_log));
    ck_assert_ptr_nonnull(r);
    struct ks_log *ls = store_rec_state(r);
    ls->keep_ms = keep_ms;
    struct slog_params p = { 1000, keep_ms / 1000 + 1, 1, keep_ms };
    for (size_t i = 0; i < n; i++) {
        int64_t now = T0 + items[i].at;
        size_t mlen = items[i].meta ? strlen(items[i].meta) : 0;
        ck_assert(keyspace_log_reserve(r, &p, now, mlen, 1000));
        keyspace_log_append(ls, now, items[i].cost, items[i].meta, mlen);
    }
    store_set_expire(srv.store, r, keyspace_fresh_ms(keytype_log_fresh_at(ls,
                                                                           T0)));
    keyspace_written(r);                /* as the handler's write */
    return r;
}

struct tier_item {
    int64_t sec;            /* seconds after T0 */
    int64_t count;
};

static struct store_rec *
make_tiers(const char *key, int64_t keep, const struct tier_item *items,
           size_t n)
{
    struct key_hint h = { false, 0 };
    struct store_rec *r = keyspace_add(&h, key, strlen(key), KEY_TIERS,
                                       sizeof(struct ks_tiers));
    ck_assert_ptr_nonnull(r);
    struct ks_tiers *ts = store_rec_state(r);
    ts->keep = keep;
    for (size_t i = 0; i < n; i++) {
        int64_t now = T0 + items[i].sec * SEC;
        if (tier_needs_bucket(&ts->st, now)) {
            ck_assert(keyspace_tiers_reserve(r));
        }
        tier_commit(&ts->st, now, items[i].count);
    }
    store_set_expire(srv.store, r,
                     keyspace_fresh_ms(keytype_tiers_fresh_at(ts, T0)));
    keyspace_written(r);
    return r;
}

/* Leases of the given holders ending at the given ns after T0, in
 * order, its expiry the last end (as the RL.ACQUIRE handler sets it). */
static struct store_rec *
make_lease(const char *key, const char *const *holders, const int64_t *ends,
           size_t n)
{
    struct key_hint h = { false, 0 };
    struct store_rec *r = keyspace_add(&h, key, strlen(key), KEY_LEASE,
                                       sizeof(struct ks_lease));
    ck_assert_ptr_nonnull(r);
    struct ks_lease *ls = store_rec_state(r);
    ls->set.cap = 1024;
    ls->set.buf = keyspace_realloc(NULL, ls->set.cap, r);
    ck_assert_ptr_nonnull(ls->set.buf);
    for (size_t i = 0; i < n; i++) {
        ck_assert(lease_append(&ls->set, holders[i], strlen(holders[i]),
                               (T0 + ends[i]) / MS));
    }
    store_set_expire(srv.store, r,
                     keyspace_fresh_ms(keytype_lease_fresh_at(ls, T0)));
    keyspace_written(r);
    return r;
}

static const char *const lease_holders[] = { "alice", "b", "0123456789abcdef" };
static const int64_t lease_ends[] = { 5 * SEC, 90 * SEC, 2500 * MS };

/* Entries and buckets up to T0, the time the tests run at. */
static const struct log_item log_items[] = {
    { -5 * SEC, 1, "alice" },
    { -4750 * MS, 3, NULL },
    { -3 * SEC, 2, "bob" },
    { -2999 * MS, 1, "" },
    { 0, 4, "carol, a longer piece of META" },
};
static const struct tier_item tier_items[] = {
    { -9, 2 }, { -9, 1 }, { -6, 5 }, { -2, 1 }, { 0, 4 },
};

/* One key of every type (names "t<type>"), each with an expiry of its own
 * kind; the number made. */
static size_t
make_every_type(void)
{
    struct fwin_state fw = { T0 - 3 * SEC, 7 };
    struct swin_state sw = { T0 - 10 * SEC, 11, 4 };
    struct ks_redis_gcra rg = { 1700000000123456 };
    make_gcra("t1", (uint64_t)T0 + 123456789, 2500);
    make_state("t2", KEY_FIXED, &fw, sizeof(fw), T0 + 57 * SEC);
    make_state("t3", KEY_SLIDING, &sw, sizeof(sw), T0 + 50 * SEC + 7);
    make_log("t4", 30000, log_items, sizeof(log_items) / sizeof(*log_items));
    make_tiers("t5", 60, tier_items, sizeof(tier_items) / sizeof(*tier_items));
    make_state("t6", KEY_REDIS_GCRA, &rg, sizeof(rg), T0 + 900 * MS);
    make_string("t8", "a string longer than the inline bytes", KEY_STR);
    make_collections("t9", "t10", "t11", 5);
    make_set("t12", 5);
    make_lease("t13", lease_holders, lease_ends, 3);
    return KEY_TYPE_LAST - KEY_TYPE_FIRST;     /* all but KEY_COUNTER_V2 */
}

/* ------------------------------------------------------------------------
 * Capturing and comparing
 * --------------------------------------------------------------------- */

/* What a key is on disk: what the snapshot and the journal keep. */
struct saved {
    uint8_t type;
    char key[32];
    size_t keylen;
    int64_t expire_at;
    struct membuf b;
};

static void
save(const struct store_rec *r, int64_t now, struct saved *s)
{
    memset(s, 0, sizeof(*s));
    s->type = r->type;
    s->keylen = store_rec_keylen(r);
    ck_assert_uint_lt(s->keylen, sizeof(s->key));
    memcpy(s->key, store_rec_key((struct store_rec *)r), s->keylen);
    s->expire_at = r->expire_at;
    ck_assert(keytype_encode(r, now, &s->b));
    ck_assert_uint_gt(s->b.len, 0);
}

/* Into database db; the record restored. */
static struct store_rec *
restore_into(int db, const struct saved *s, int64_t now)
{
    char err[ERRLEN] = "";
    int rc = keyspace_restore(db, s->type, s->key, s->keylen, s->expire_at,
                              s->b.p, s->b.len, KS_ENCODING, false, now, err,
                              sizeof(err));
    ck_assert_msg(rc == 0, "restoring %s: %s", s->key, err);
    return store_lookup(keyspace_db(db), s->key, s->keylen, now);
}

static struct store_rec *
restore(const struct saved *s, int64_t now)
{
    return restore_into(0, s, now);
}

static void
assert_log_equal(const struct ks_log *a, const struct ks_log *b)
{
    ck_assert_int_eq(a->keep_ms, b->keep_ms);
    ck_assert_uint_eq(a->ring.len, b->ring.len);
    ck_assert_int_eq(a->ring.sum, b->ring.sum);
    for (uint32_t i = 0; i < a->ring.len; i++) {
        const struct slog_entry *x = slog_newest(&a->ring, i);
        const struct slog_entry *y = slog_newest(&b->ring, i);
        ck_assert_int_eq(x->t_ms, y->t_ms);
        ck_assert_int_eq(x->cost, y->cost);
        ck_assert_uint_eq(x->meta_len, y->meta_len);
        if (x->meta_len > 0) {
            ck_assert_mem_eq(a->meta + x->meta_off, b->meta + y->meta_off,
                             x->meta_len);
        }
    }
}

static void
assert_tiers_equal(const struct ks_tiers *a, const struct ks_tiers *b)
{
    ck_assert_int_eq(a->keep, b->keep);
    ck_assert_uint_eq(a->st.len, b->st.len);
    for (uint32_t i = 0; i < a->st.len; i++) {
        ck_assert_int_eq(a->st.b[i].sec, b->st.b[i].sec);
        ck_assert_int_eq(a->st.b[i].count, b->st.b[i].count);
    }
}

/* r (restored) holds what s (saved from the original) held: type, key,
 * expiry, each field of the state; and it encodes to the same bytes. */
static void
assert_restored(const struct saved *s, const struct store_rec *orig_copy,
                const struct store_rec *r, int64_t now)
{
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->type, s->type);
    ck_assert_uint_eq(store_rec_keylen(r), s->keylen);
    ck_assert_mem_eq(store_rec_key((struct store_rec *)r), s->key,
                     s->keylen);
    ck_assert_int_eq(r->expire_at, s->expire_at);
    const void *x = store_rec_state((struct store_rec *)orig_copy);
    const void *y = store_rec_state((struct store_rec *)r);
    switch (r->type) {
    case KEY_INT:
        ck_assert_int_eq(keytype_int(orig_copy), keytype_int(r));
        break;
    case KEY_STR: {
        struct ks_str *sx = (struct ks_str *)x, *sy = (struct ks_str *)y;
        ck_assert_uint_eq(sx->len, sy->len);
        ck_assert_mem_eq(keytype_str_bytes(sx), keytype_str_bytes(sy),
                         sx->len);
        break;
    }
    case KEY_FIXED:
        ck_assert_int_eq(((const struct fwin_state *)x)->start,
                         ((const struct fwin_state *)y)->start);
        ck_assert_int_eq(((const struct fwin_state *)x)->count,
                         ((const struct fwin_state *)y)->count);
        break;
    case KEY_SLIDING:
        ck_assert_int_eq(((const struct swin_state *)x)->start,
                         ((const struct swin_state *)y)->start);
        ck_assert_int_eq(((const struct swin_state *)x)->prev,
                         ((const struct swin_state *)y)->prev);
        ck_assert_int_eq(((const struct swin_state *)x)->curr,
                         ((const struct swin_state *)y)->curr);
        break;
    case KEY_LOG:
        assert_log_equal(x, y);
        break;
    case KEY_TIERS:
        assert_tiers_equal(x, y);
        break;
    case KEY_REDIS_GCRA:
        ck_assert_int_eq(((const struct ks_redis_gcra *)x)->tat_us,
                         ((const struct ks_redis_gcra *)y)->tat_us);
        break;
    case KEY_LEASE:
        ck_assert_uint_eq(((const struct ks_lease *)x)->set.n,
                          ((const struct ks_lease *)y)->set.n);
        break;
    case KEY_LIST:
    case KEY_HASH:
    case KEY_ZSET:
    case KEY_SET:
        /* Element by element: the encodings compared below are. */
        ck_assert_uint_gt(keytype_coll_len(r), 0);
        ck_assert_uint_eq(keytype_coll_len(orig_copy), keytype_coll_len(r));
        break;
    default:
        ck_abort_msg("unknown type %u", r->type);
    }
    struct membuf again = { 0 };
    ck_assert(keytype_encode(r, now, &again));
    ck_assert_uint_eq(again.len, s->b.len);
    ck_assert_mem_eq(again.p, s->b.p, s->b.len);
    mem_free(again.p);
}

/* ------------------------------------------------------------------------
 * Round trips
 * --------------------------------------------------------------------- */

/* Every type: each key's bytes restored into database 1 hold what the
 * original (built through the API, never decoded) holds, field by field,
 * and the same expiry. */
START_TEST(test_every_type_round_trips_field_by_field_with_its_expiry)
{
    size_t n = make_every_type();
    ck_assert_uint_eq(n, 12);
    ck_assert_uint_eq(keyspace_total_keys(), n);
    size_t types = 0;
    for (int t = KEY_TYPE_FIRST; t <= KEY_TYPE_LAST; t++) {
        if (!live_type(t)) {
            continue;
        }
        char key[8];
        struct saved s;
        snprintf(key, sizeof(key), "t%d", t);
        struct store_rec *r = find(key);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->type, t);
        save(r, T0, &s);
        assert_restored(&s, r, restore_into(1, &s, T0), T0);
        mem_free(s.b.p);
        types++;
    }
    ck_assert_uint_eq(types, n);
    ck_assert_uint_eq(store_size(keyspace_db(1)), n);
}
END_TEST

/* The same, through a whole restart: bytes only survive the teardown. */
START_TEST(test_restored_keys_survive_a_fresh_keyspace)
{
    make_every_type();
    struct saved s[KEY_TYPE_LAST + 1];
    for (int t = KEY_TYPE_FIRST; t <= KEY_TYPE_LAST; t++) {
        if (!live_type(t)) {
            continue;
        }
        char key[8];
        snprintf(key, sizeof(key), "t%d", t);
        save(find(key), T0, &s[t]);
    }
    fresh_keyspace();
    for (int t = KEY_TYPE_FIRST; t <= KEY_TYPE_LAST; t++) {
        if (!live_type(t)) {
            continue;
        }
        struct store_rec *r = restore(&s[t], T0);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->type, t);
        ck_assert_int_eq(r->expire_at, s[t].expire_at);
        struct membuf again = { 0 };
        ck_assert(keytype_encode(r, T0, &again));
        ck_assert_uint_eq(again.len, s[t].b.len);
        ck_assert_mem_eq(again.p, s[t].b.p, again.len);
        mem_free(again.p);
        mem_free(s[t].b.p);
    }
    /* The specific values, read back. */
    ck_assert_int_eq(keytype_int(find("t1")), T0 + 123456789);
    const struct fwin_state *fw = store_rec_state(find("t2"));
    ck_assert_int_eq(fw->start, T0 - 3 * SEC);
    ck_assert_int_eq(fw->count, 7);
    const struct swin_state *sw = store_rec_state(find("t3"));
    ck_assert(sw->start == T0 - 10 * SEC && sw->prev == 11 && sw->curr == 4);
    /* It lives through the ms it goes fresh in. */
    ck_assert_int_eq(find("t3")->expire_at, T0 / MS + 50001);
    const struct ks_log *ls = store_rec_state(find("t4"));
    ck_assert_uint_eq(ls->ring.len, 5);
    ck_assert_int_eq(ls->ring.sum, 11);
    ck_assert_int_eq(slog_newest(&ls->ring, 0)->t_ms, T0 / MS);
    ck_assert_int_eq(slog_newest(&ls->ring, 4)->t_ms, T0 / MS - 5000);
    ck_assert_mem_eq(ls->meta + slog_newest(&ls->ring, 4)->meta_off, "alice",
                     5);
    ck_assert_uint_eq(slog_newest(&ls->ring, 3)->meta_len, 0);
    ck_assert_int_eq(find("t4")->expire_at, T0 / MS + 30000);
    const struct ks_tiers *ts = store_rec_state(find("t5"));
    ck_assert_uint_eq(ts->st.len, 4);
    ck_assert_int_eq(ts->st.b[0].sec, T0 / SEC - 9);
    ck_assert_int_eq(ts->st.b[0].count, 3);
    ck_assert_int_eq(ts->st.b[3].sec, T0 / SEC);
    ck_assert_int_eq(ts->st.b[3].count, 4);
    ck_assert_int_eq(ts->keep, 60);
    ck_assert_int_eq(find("t5")->expire_at, (T0 / SEC + 60) * 1000);
    const struct ks_redis_gcra *rg = store_rec_state(find("t6"));
    ck_assert_int_eq(rg->tat_us, 1700000000123456);
    char buf[KS_INT_TEXT];
    size_t len;
    const char *str = keytype_string(find("t8"), buf, &len);
    ck_assert_uint_eq(len, 37);
    ck_assert_mem_eq(str, "a string longer than the inline bytes", len);
    ck_assert_int_eq(find("t8")->expire_at, STORE_NEVER);
}
END_TEST

START_TEST(test_gcra_expiry_is_the_redis_millisecond_and_survives)
{
    struct store_rec *r = make_gcra("g", 42, 1500);
    int64_t want = T0 / MS + 1500;       /* the ms it lives through */
    ck_assert_int_eq(r->expire_at, want);
    ck_assert_int_eq(keyspace_redis_pttl(r, T0), 1500);
    make_gcra("forever", 43, -1);
    struct saved a, b;
    save(find("g"), T0, &a);
    save(find("forever"), T0, &b);
    ck_assert_int_eq(b.expire_at, STORE_NEVER);
    fresh_keyspace();
    ck_assert_int_eq(restore(&a, T0)->expire_at, want);
    ck_assert_int_eq(keyspace_redis_pttl(find("g"), T0 + 1499 * MS), 1);
    ck_assert_int_eq(restore(&b, T0)->expire_at, STORE_NEVER);
    ck_assert_int_eq(keyspace_redis_pttl(find("forever"), T0), -1);
    /* The key lives through its last millisecond and not a ns more. */
    ck_assert_ptr_nonnull(store_lookup(srv.store, "g", 1, (want + 1) * MS - 1));
    ck_assert_ptr_null(store_lookup(srv.store, "g", 1, (want + 1) * MS));
    mem_free(a.b.p);
    mem_free(b.b.p);
}
END_TEST

/* A log's bytes hold only what it keeps at the time of writing: the same
 * as a log that only ever held those entries. */
START_TEST(test_log_encoding_holds_only_the_entries_kept_at_now)
{
    static const struct log_item all[] = {
        { 0, 2, "old" }, { 20 * SEC, 3, "mid" }, { 40 * SEC, 1, "new" },
    };
    make_log("all", 30000, all, 3);
    int64_t now = T0 + 45 * SEC;
    struct saved s;
    save(find("all"), now, &s);
    /* keep_ms, n = 2, two entries of 20 bytes, 6 META bytes. */
    ck_assert_uint_eq(s.b.len, 8 + 4 + 2 * 20 + 6);
    fresh_keyspace();
    static const struct log_item kept[] = {
        { 20 * SEC, 3, "mid" }, { 40 * SEC, 1, "new" },
    };
    make_log("kept", 30000, kept, 2);
    struct membuf b = { 0 };
    ck_assert(keytype_encode(find("kept"), now, &b));
    ck_assert_uint_eq(b.len, s.b.len);
    ck_assert_mem_eq(b.p, s.b.p, b.len);
    clock_set_fake_wall(now);
    struct store_rec *r = restore(&s, now);
    const struct ks_log *ls = store_rec_state(r);
    ck_assert_uint_eq(ls->ring.len, 2);
    ck_assert_int_eq(ls->ring.sum, 4);
    ck_assert_mem_eq(ls->meta + slog_newest(&ls->ring, 1)->meta_off, "mid",
                     3);
    /* Its expiry is the one it was written with. */
    ck_assert_int_eq(r->expire_at, T0 / MS + 70000);
    mem_free(b.p);
    mem_free(s.b.p);
}
END_TEST

/* Encoding version 1 kept no retention for tiers: it is derived from the
 * record's expiry (the newest bucket's departure). */
START_TEST(test_tiers_of_the_first_encoding_take_keep_from_the_expiry)
{
    make_tiers("t", 45, tier_items, sizeof(tier_items) / sizeof(*tier_items));
    struct saved s;
    save(find("t"), T0, &s);
    ck_assert_int_eq(s.expire_at, (T0 / SEC + 45) * 1000);
    fresh_keyspace();
    char err[ERRLEN] = "";
    /* Version 1: the same bytes without the leading keep, the expiry as
     * the files of then kept it (read back by store_expiry_from_ns()). */
    int64_t old_expiry = store_expiry_from_ns((T0 / SEC + 45) * SEC);
    ck_assert_int_eq(keyspace_restore(0, KEY_TIERS, "t", 1, old_expiry,
                                      s.b.p + 8, s.b.len - 8, KS_ENCODING_V1,
                                      false, T0, err, sizeof(err)), 0);
    struct store_rec *r = find("t");
    ck_assert_ptr_nonnull(r);
    const struct ks_tiers *ts = store_rec_state(r);
    ck_assert_int_eq(ts->keep, 45);
    ck_assert_uint_eq(ts->st.len, 4);
    ck_assert_int_eq(r->expire_at, s.expire_at);
    /* Read as today's encoding, those bytes are not a tiers state. */
    fresh_keyspace();
    ck_assert_int_eq(keyspace_restore(0, KEY_TIERS, "t", 1, s.expire_at,
                                      s.b.p + 8, s.b.len - 8, KS_ENCODING,
                                      false, T0, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "malformed tiers state");
    mem_free(s.b.p);
}
END_TEST

START_TEST(test_move_keeps_state_and_expiry_in_the_other_database)
{
    make_every_type();
    for (int t = KEY_TYPE_FIRST; t <= KEY_TYPE_LAST; t++) {
        if (!live_type(t)) {
            continue;
        }
        char key[8];
        snprintf(key, sizeof(key), "t%d", t);
        struct saved s;
        save(find(key), T0, &s);
        ck_assert(keyspace_move(find(key), 5, T0));
        ck_assert_ptr_null(find(key));
        struct store_rec *r = store_lookup(keyspace_db(5), key, strlen(key),
                                           T0);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->expire_at, s.expire_at);
        struct membuf b = { 0 };
        ck_assert(keytype_encode(r, T0, &b));
        ck_assert_uint_eq(b.len, s.b.len);
        ck_assert_mem_eq(b.p, s.b.p, b.len);
        mem_free(b.p);
        mem_free(s.b.p);
    }
    ck_assert_uint_eq(store_size(keyspace_db(5)), 12);
    ck_assert_uint_eq(store_size(srv.store), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Bad encodings
 * --------------------------------------------------------------------- */

static int
restore_bytes(uint8_t type, const unsigned char *p, size_t len,
              int64_t expire_at, char *err)
{
    err[0] = '\0';
    return keyspace_restore(0, type, "bad", 3, expire_at, p, len,
                            KS_ENCODING, false, T0, err, ERRLEN);
}

/* Every cut of every type's encoding, and one byte too many, is refused
 * as malformed, and leaves no key behind. */
START_TEST(test_truncated_or_overlong_encodings_are_refused)
{
    make_every_type();
    size_t cuts = 0;
    for (int t = KEY_TYPE_FIRST; t <= KEY_TYPE_LAST; t++) {
        if (!live_type(t)) {
            continue;
        }
        char key[8], want[64], err[ERRLEN];
        if (t == KEY_STR) {
            continue;           /* any bytes are a string */
        }
        snprintf(key, sizeof(key), "t%d", t);
        snprintf(want, sizeof(want), "malformed %s state",
                 keytype_name((uint8_t)t));
        struct saved s;
        save(find(key), T0, &s);
        for (size_t cut = 0; cut < s.b.len; cut++) {
            ck_assert_msg(restore_bytes((uint8_t)t, s.b.p, cut, s.expire_at,
                                        err) == -1,
                          "type %d cut at %zu loaded", t, cut);
            ck_assert_str_eq(err, want);
            ck_assert_ptr_null(find("bad"));
            cuts++;
        }
        unsigned char *more = malloc(s.b.len + 1);
        ck_assert_ptr_nonnull(more);
        memcpy(more, s.b.p, s.b.len);
        more[s.b.len] = 0;
        ck_assert_int_eq(restore_bytes((uint8_t)t, more, s.b.len + 1,
                                       s.expire_at, err), -1);
        ck_assert_str_eq(err, want);
        /* The whole encoding itself loads. */
        ck_assert_int_eq(restore_bytes((uint8_t)t, s.b.p, s.b.len,
                                       s.expire_at, err), 0);
        ck_assert_ptr_nonnull(find("bad"));
        ck_assert_uint_eq(find("bad")->type, t);
        store_remove(srv.store, find("bad"));
        free(more);
        mem_free(s.b.p);
    }
    ck_assert_uint_gt(cuts, 6 * 8);
    ck_assert_uint_eq(keyspace_total_keys(), 12);
}
END_TEST

/* Offsets into a log encoding: keep_ms, n, then entries of t, cost,
 * meta_len. */
#define LOG_N 8
#define LOG_E(i) (12 + (size_t)(i) * 20)
#define LOG_T(i) LOG_E(i)
#define LOG_COST(i) (LOG_E(i) + 8)
#define LOG_MLEN(i) (LOG_E(i) + 16)

static void
expect_refused(uint8_t type, const struct membuf *b, int64_t expire_at,
               const char *what)
{
    char err[ERRLEN], want[64];
    snprintf(want, sizeof(want), "malformed %s state",
             keytype_name(type));
    ck_assert_msg(restore_bytes(type, b->p, b->len, expire_at, err) == -1,
                  "%s: loaded", what);
    ck_assert_msg(strcmp(err, want) == 0, "%s: %s", what, err);
    ck_assert_ptr_null(find("bad"));
}

static void
put_i64(struct membuf *b, size_t at, int64_t v)
{
    memcpy(b->p + at, &v, sizeof(v));
}

static void
put_u32(struct membuf *b, size_t at, uint32_t v)
{
    memcpy(b->p + at, &v, sizeof(v));
}

/* Each rule of the decoder, broken alone in an otherwise good encoding. */
START_TEST(test_each_broken_field_is_refused)
{
    make_every_type();
    struct saved log, tiers, rg;
    save(find("t4"), T0, &log);
    save(find("t5"), T0, &tiers);
    save(find("t6"), T0, &rg);
    struct membuf b = { 0 };
    size_t checked = 0;
#define MUTATE(src, stmt, what, type)                                       \
    do {                                                                    \
        b.len = 0;                                                          \
        b.p = mem_realloc(b.p, (src).b.len);                                \
        ck_assert_ptr_nonnull(b.p);                                         \
        memcpy(b.p, (src).b.p, (src).b.len);                                \
        b.len = (src).b.len;                                                \
        stmt;                                                               \
        expect_refused(type, &b, (src).expire_at, what);                    \
        checked++;                                                          \
    } while (0)
    /* RL.LOG */
    MUTATE(log, put_i64(&b, 0, 999), "keep_ms below 1 s", KEY_LOG);
    MUTATE(log, put_u32(&b, LOG_N, 6), "more entries than bytes", KEY_LOG);
    MUTATE(log, put_u32(&b, LOG_N, 4), "fewer entries than bytes", KEY_LOG);
    MUTATE(log, put_u32(&b, LOG_N, KS_LOG_ENTRIES_MAX + 1),
           "over the entry bound", KEY_LOG);
    MUTATE(log, put_i64(&b, LOG_COST(2), 0), "cost 0", KEY_LOG);
    MUTATE(log, put_i64(&b, LOG_COST(2), -5), "negative cost", KEY_LOG);
    MUTATE(log, put_i64(&b, LOG_T(3), T0 / MS - 4000), "time going back",
           KEY_LOG);
    MUTATE(log, put_u32(&b, LOG_MLEN(0), KS_META_MAX + 1), "META too long",
           KEY_LOG);
    MUTATE(log, put_u32(&b, LOG_MLEN(0), 4), "META lengths not the bytes",
           KEY_LOG);
    MUTATE(log, put_i64(&b, LOG_COST(0), INT64_MAX), "a sum that overflows",
           KEY_LOG);
    /* RL.TIERS: keep, n, buckets of (sec, count). */
    MUTATE(tiers, put_i64(&b, 0, 0), "keep 0", KEY_TIERS);
    MUTATE(tiers, put_u32(&b, 8, 3), "fewer buckets than bytes", KEY_TIERS);
    MUTATE(tiers, put_u32(&b, 8, 5), "more buckets than bytes", KEY_TIERS);
    MUTATE(tiers, put_i64(&b, 12 + 8, 0), "a bucket of 0", KEY_TIERS);
    MUTATE(tiers, put_i64(&b, 12 + 16, T0 / SEC - 9), "seconds not rising",
           KEY_TIERS);
    MUTATE(tiers, put_i64(&b, 12 + 16, T0 / SEC - 10), "seconds going back",
           KEY_TIERS);
    /* Redis's GCRA: a negative TAT. */
    MUTATE(rg, put_i64(&b, 0, -1), "negative TAT", KEY_REDIS_GCRA);
#undef MUTATE
    ck_assert_uint_eq(checked, 17);
    mem_free(b.p);
    mem_free(log.b.p);
    mem_free(tiers.b.p);
    mem_free(rg.b.p);
}
END_TEST

/* A log or tiers state without entries: in encoding 2 a key gone fresh,
 * dropped without an error; since encoding 3 a key an EXPIRE or PERSIST
 * kept, loaded as it was. With bytes after its zero count it is
 * malformed. */
START_TEST(test_empty_log_and_tiers_are_dropped_or_kept_by_encoding)
{
    unsigned char log[12], tiers[12], more[13];
    int64_t keep = 60000, keep_s = 60;
    uint32_t zero = 0;
    char err[ERRLEN];
    memcpy(log, &keep, 8);
    memcpy(log + 8, &zero, 4);
    memcpy(tiers, &keep_s, 8);
    memcpy(tiers + 8, &zero, 4);
    ck_assert_int_eq(keyspace_restore(0, KEY_LOG, "l", 1, T0 / MS + 1000, log,
                                      12, KS_ENCODING_V2, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_int_eq(keyspace_restore(0, KEY_TIERS, "t", 1, T0 / MS + 1000,
                                      tiers, 12, KS_ENCODING_V2, false, T0,
                                      err, sizeof(err)), 0);
    ck_assert_uint_eq(keyspace_total_keys(), 0);
    ck_assert_int_eq(keyspace_restore(0, KEY_LOG, "l", 1, STORE_NEVER, log,
                                      12, KS_ENCODING, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_int_eq(keyspace_restore(0, KEY_TIERS, "t", 1, T0 / MS + 1000,
                                      tiers, 12, KS_ENCODING, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_uint_eq(keyspace_total_keys(), 2);
    const struct ks_log *ls = store_rec_state(find("l"));
    ck_assert_uint_eq(ls->ring.len, 0);
    ck_assert_int_eq(ls->keep_ms, 60000);
    ck_assert_int_eq(find("l")->expire_at, STORE_NEVER);
    struct saved s;
    save(find("t"), T0, &s);                /* and it encodes as it came */
    ck_assert_uint_eq(s.b.len, 12);
    ck_assert_mem_eq(s.b.p, tiers, 12);
    mem_free(s.b.p);
    memcpy(more, log, 12);
    more[12] = 'x';
    ck_assert_int_eq(restore_bytes(KEY_LOG, more, 13, T0 / MS + 1000, err),
                     -1);
    ck_assert_str_eq(err, "malformed log state");
    fresh_keyspace();
    ck_assert_uint_eq(keytype_owned_bytes(), 0);
}
END_TEST

START_TEST(test_restore_refuses_unknown_types_and_duplicates)
{
    char err[ERRLEN];
    int64_t tat = 5;
    ck_assert_int_eq(keyspace_restore(0, 0, "k", 1, T0 / MS + 1000,
                                      (const unsigned char *)&tat, 8,
                                      KS_ENCODING, false, T0, err,
                                      sizeof(err)), -1);
    ck_assert_str_eq(err, "unknown key type 0");
    ck_assert_int_eq(keyspace_restore(0, KEY_TYPE_LAST + 1, "k", 1,
                                      T0 / MS + 1000,
                                      (const unsigned char *)&tat, 8,
                                      KS_ENCODING, false, T0, err,
                                      sizeof(err)), -1);
    ck_assert_str_eq(err, "unknown key type 14");
    ck_assert_int_eq(keyspace_restore(0, KEY_INT, "k", 1, T0 / MS + 1000,
                                      (const unsigned char *)&tat, 8,
                                      KS_ENCODING, false, T0, err,
                                      sizeof(err)), 0);
    int64_t tat2 = 6;
    ck_assert_int_eq(keyspace_restore(0, KEY_INT, "k", 1, T0 / MS + 2000,
                                      (const unsigned char *)&tat2, 8,
                                      KS_ENCODING, false, T0, err,
                                      sizeof(err)), -1);
    ck_assert_str_eq(err, "duplicate key");
    ck_assert_int_eq(keytype_int(find("k")), 5);
    /* A journal record supersedes the key, its type and expiry too. */
    struct fwin_state fw = { T0, 2 };
    ck_assert_int_eq(keyspace_restore(0, KEY_FIXED, "k", 1, T0 / MS + 3000,
                                      (const unsigned char *)&fw, sizeof(fw),
                                      KS_ENCODING, true, T0, err,
                                      sizeof(err)), 0);
    struct store_rec *r = find("k");
    ck_assert_uint_eq(r->type, KEY_FIXED);
    ck_assert_int_eq(r->expire_at, T0 / MS + 3000);
    ck_assert_int_eq(((struct fwin_state *)store_rec_state(r))->count, 2);
    /* Another database's key of the same name is another key. */
    ck_assert_int_eq(keyspace_restore(3, KEY_INT, "k", 1, T0 / MS + 1000,
                                      (const unsigned char *)&tat, 8,
                                      KS_ENCODING, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_uint_eq(store_size(keyspace_db(3)), 1);
}
END_TEST

/* A key that went fresh while the server was down is not loaded, whatever
 * its type: by its stored expiry, or for a log of encoding 2 (before
 * expiry could be set by hand) by its entries. */
START_TEST(test_keys_already_fresh_are_dropped)
{
    char err[ERRLEN];
    int64_t tat = 5;
    /* It lived through the ms before T0's. */
    ck_assert_int_eq(keyspace_restore(0, KEY_INT, "g", 1, T0 / MS - 1,
                                      (const unsigned char *)&tat, 8,
                                      KS_ENCODING, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_ptr_null(find("g"));
    static const struct log_item two[] = {
        { 0, 1, "a" }, { 250 * MS, 1, NULL },
    };
    make_log("l", 2000, two, 2);
    struct saved s;
    save(find("l"), T0 + SEC, &s);
    fresh_keyspace();
    /* Its newest entry (250 ms) leaves at 2.25 s: under encoding 2 a
     * stored expiry that says later does not keep it. */
    ck_assert_int_eq(keyspace_restore(0, KEY_LOG, "l", 1, T0 / MS + 100000,
                                      s.b.p, s.b.len, KS_ENCODING_V2, false,
                                      T0 + 2251 * MS, err, sizeof(err)), 0);
    ck_assert_ptr_null(store_lookup(srv.store, "l", 1, T0 + 2251 * MS));
    ck_assert_int_eq(keyspace_restore(0, KEY_LOG, "l", 1, T0 / MS + 100000,
                                      s.b.p, s.b.len, KS_ENCODING_V2, false,
                                      T0 + 2250 * MS, err, sizeof(err)), 0);
    struct store_rec *r = store_lookup(srv.store, "l", 1, T0 + 2250 * MS);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->expire_at, T0 / MS + 2250);
    /* Today's encoding keeps the expiry it was written with (an EXPIRE
     * may have set it). */
    fresh_keyspace();
    ck_assert_int_eq(keyspace_restore(0, KEY_LOG, "l", 1, T0 / MS + 100000,
                                      s.b.p, s.b.len, KS_ENCODING, false,
                                      T0 + 2251 * MS, err, sizeof(err)), 0);
    r = store_lookup(srv.store, "l", 1, T0 + 2251 * MS);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->expire_at, T0 / MS + 100000);
    mem_free(s.b.p);
}
END_TEST

/* Encodings 1 and 2 held CL.THROTTLE's TAT as a u64 and INCREX's counter
 * as a struct: each loads as the string Redis would hold. */
START_TEST(test_old_encodings_load_as_strings)
{
    char err[ERRLEN];
    char buf[KS_INT_TEXT];
    size_t len;
    uint64_t tat = 18446744073709551615u;
    ck_assert_int_eq(keyspace_restore(0, KEY_INT, "big", 3, STORE_NEVER,
                                      (const unsigned char *)&tat, 8,
                                      KS_ENCODING_V2, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_uint_eq(find("big")->type, KEY_STR);
    const char *v = keytype_string(find("big"), buf, &len);
    ck_assert_uint_eq(len, 20);
    ck_assert_mem_eq(v, "18446744073709551615", 20);
    tat = 42;
    ck_assert_int_eq(keyspace_restore(0, KEY_INT, "small", 5, STORE_NEVER,
                                      (const unsigned char *)&tat, 8,
                                      KS_ENCODING_V2, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_int_eq(keytype_int(find("small")),
                     42);
    struct {
        int64_t i;
        uint8_t is_float;
        unsigned char f[sizeof(long double)];
    } k;
    memset(&k, 0, sizeof(k));
    long double f = 2.5L;
    k.is_float = 1;
    memcpy(k.f, &f, sizeof(f));
    ck_assert_int_eq(keyspace_restore(0, KEY_COUNTER_V2, "ctr", 3,
                                      T0 / MS + 1000,
                                      (const unsigned char *)&k, sizeof(k),
                                      KS_ENCODING_V2, false, T0, err,
                                      sizeof(err)), 0);
    struct store_rec *r = find("ctr");
    ck_assert_uint_eq(r->type, KEY_STR);
    ck_assert_int_eq(r->expire_at, T0 / MS + 1000);
    v = keytype_string(r, buf, &len);
    ck_assert_uint_eq(len, 3);
    ck_assert_mem_eq(v, "2.5", 3);
    k.is_float = 0;
    k.i = -7;
    ck_assert_int_eq(keyspace_restore(0, KEY_COUNTER_V2, "i", 1, STORE_NEVER,
                                      (const unsigned char *)&k, sizeof(k),
                                      KS_ENCODING_V2, false, T0, err,
                                      sizeof(err)), 0);
    ck_assert_int_eq(keytype_int(find("i")), -7);
    /* An infinite float was never a counter; today the type is no more. */
    f = INFINITY;
    k.is_float = 1;
    memcpy(k.f, &f, sizeof(f));
    ck_assert_int_eq(keyspace_restore(0, KEY_COUNTER_V2, "inf", 3,
                                      STORE_NEVER,
                                      (const unsigned char *)&k, sizeof(k),
                                      KS_ENCODING_V2, false, T0, err,
                                      sizeof(err)), -1);
    ck_assert_int_eq(keyspace_restore(0, KEY_COUNTER_V2, "now", 3,
                                      STORE_NEVER,
                                      (const unsigned char *)&k, sizeof(k),
                                      KS_ENCODING, false, T0, err,
                                      sizeof(err)), -1);
}
END_TEST

/* ------------------------------------------------------------------------
 * Admission
 * --------------------------------------------------------------------- */

static void
set_maxmemory(size_t bytes)
{
    char v[32];
    snprintf(v, sizeof(v), "%zu", bytes);
    set_conf("maxmemory", v);
    ck_assert_uint_eq((size_t)srv.conf.maxmemory, bytes);
}

/* maxmemory at what is used now plus room; the room there is once set. */
static size_t
set_room(size_t room)
{
    set_maxmemory(mem_used() + room);
    size_t used = mem_used();
    ck_assert_uint_le(used, (size_t)srv.conf.maxmemory);
    return (size_t)srv.conf.maxmemory - used;
}

static uint64_t
evicted(void)
{
    struct store_usage t;
    keyspace_totals(&t);
    return t.evicted;
}

static void
add_fixed(const char *prefix, int i, int64_t fresh_at)
{
    char key[32];
    struct fwin_state fw = { T0, 1 };
    snprintf(key, sizeof(key), "%s%d", prefix, i);
    make_state(key, KEY_FIXED, &fw, sizeof(fw),
               fresh_at == STORE_NEVER ? T0 + SEC : fresh_at);
    if (fresh_at == STORE_NEVER) {
        keyspace_set_expire(find(key), STORE_NEVER);    /* a PERSIST */
    }
}

/* What evicting one record of the selected database gives back. */
static size_t
record_bytes(void)
{
    ck_assert_uint_gt(store_size(srv.store), 0);
    size_t per = store_bytes(srv.store) / store_size(srv.store);
    ck_assert_uint_gt(per, 0);
    return per;
}

static size_t
count_present(const char *prefix, int n)
{
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        k += find(key) != NULL;
    }
    return k;
}

START_TEST(test_without_maxmemory_everything_is_admitted)
{
    ck_assert_int_eq(srv.conf.maxmemory, 0);
    ck_assert(keyspace_admit((size_t)1 << 50, NULL));
    ck_assert(keyspace_admit(SIZE_MAX, NULL));
}
END_TEST

START_TEST(test_noeviction_refuses_what_would_pass_maxmemory)
{
    set_conf("maxmemory-policy", "noeviction");
    for (int i = 0; i < 20; i++) {
        add_fixed("v", i, T0 + (i + 1) * SEC);
    }
    size_t room = set_room(4096);
    ck_assert_uint_ge(room, 1024);
    ck_assert(keyspace_admit(1024, NULL));
    ck_assert(keyspace_admit(room, NULL));
    ck_assert(!keyspace_admit(room + 1, NULL));
    ck_assert(!keyspace_admit(SIZE_MAX, NULL));
    ck_assert_uint_eq(set_room(0), 0);
    struct key_hint h = { false, 0 };
    ck_assert_ptr_null(keyspace_add(&h, "new", 3, KEY_FIXED,
                                    sizeof(struct fwin_state)));
    struct fwin_state fw = { T0, 1 };
    ck_assert(!keyspace_store_state(&h, "new", 3, NULL, KEY_FIXED, &fw,
                                    sizeof(fw), T0 + SEC, T0));
    ck_assert_ptr_null(find("new"));
    /* An array a key owns is admitted like a new key: refused, p kept. */
    void *p = keyspace_realloc(NULL, 64, NULL);
    ck_assert_ptr_null(p);
    ck_assert_uint_eq(count_present("v", 20), 20);
    ck_assert_uint_eq(evicted(), 0);
}
END_TEST

START_TEST(test_a_log_grows_only_within_maxmemory)
{
    set_conf("maxmemory-policy", "noeviction");
    static const struct log_item one[] = { { 0, 1, "m" } };
    struct store_rec *r = make_log("l", 60000, one, 1);
    struct ks_log *ls = store_rec_state(r);
    struct slog_params p = { 1000, 60, 1, 60000 };
    /* Fill the ring's first slots, then stop at the memory bound. */
    while (ls->ring.len < ls->ring.cap) {
        ck_assert(keyspace_log_reserve(r, &p, T0 + SEC, 1, 1000));
        keyspace_log_append(ls, T0 + SEC, 1, "x", 1);
    }
    uint32_t len = ls->ring.len, cap = ls->ring.cap;
    /* A tiers key with its bucket array full, likewise. */
    static const struct tier_item four[] = { { -3, 1 }, { -2, 1 }, { -1, 1 },
                                             { 0, 1 } };
    struct store_rec *t = make_tiers("t", 5, four, 4);
    struct ks_tiers *ts = store_rec_state(t);
    ck_assert_uint_eq(ts->st.len, ts->st.cap);
    size_t owned = keytype_owned_bytes();
    ck_assert_uint_eq(set_room(0), 0);
    ck_assert(!keyspace_log_reserve(r, &p, T0 + SEC, 1, 1000));
    ck_assert_uint_eq(ls->ring.len, len);
    ck_assert_uint_eq(ls->ring.cap, cap);
    ck_assert(!keyspace_tiers_reserve(t));
    ck_assert_uint_eq(ts->st.len, 4);
    ck_assert_uint_eq(keytype_owned_bytes(), owned);
    /* With room again, both grow. */
    set_maxmemory(0);
    ck_assert(keyspace_log_reserve(r, &p, T0 + SEC, 1, 1000));
    ck_assert_uint_gt(ls->ring.cap, cap);
    ck_assert(keyspace_tiers_reserve(t));
    ck_assert_uint_gt(keytype_owned_bytes(), owned);
}
END_TEST

START_TEST(test_volatile_ttl_evicts_the_keys_closest_to_fresh)
{
    set_conf("maxmemory-policy", "volatile-ttl");
    for (int i = 0; i < 16; i++) {
        add_fixed("soon", i, T0 + (i + 1) * SEC);
    }
    size_t per = record_bytes();
    for (int i = 0; i < 16; i++) {
        add_fixed("late", i, T0 + (i + 1) * 86400 * SEC);
        add_fixed("never", i, STORE_NEVER);
    }
    ck_assert_uint_lt(set_room(0), per);
    ck_assert(keyspace_admit(2 * per, NULL));
    uint64_t n = evicted();
    ck_assert_uint_ge(n, 1);
    ck_assert_uint_le(n, 16);
    ck_assert_uint_eq(count_present("soon", 16), 16 - n);
    ck_assert_uint_eq(count_present("late", 16), 16);
    ck_assert_uint_eq(count_present("never", 16), 16);
    /* The soonest went first: the survivors are the latest ones. */
    for (int i = 0; i < 16; i++) {
        char key[32];
        snprintf(key, sizeof(key), "soon%d", i);
        ck_assert_msg((find(key) != NULL) == ((uint64_t)i >= n),
                      "%s evicted out of order", key);
    }
    ck_assert(mem_used() + 2 * per <= (size_t)srv.conf.maxmemory);
}
END_TEST

/* Eviction runs only when all the evictable memory could make the room:
 * otherwise nothing is evicted and the answer is no. Keys without expiry
 * are never evicted, and a refused new key leaves them all. */
START_TEST(test_eviction_that_cannot_make_room_evicts_nothing)
{
    set_conf("maxmemory-policy", "volatile-ttl");
    for (int i = 0; i < 8; i++) {
        add_fixed("soon", i, T0 + (i + 1) * SEC);
        add_fixed("never", i, STORE_NEVER);
    }
    ck_assert_uint_eq(set_room(0), 0);
    ck_assert(!keyspace_admit((size_t)1 << 40, NULL));
    ck_assert_uint_eq(evicted(), 0);
    ck_assert_uint_eq(count_present("soon", 8), 8);
    ck_assert_uint_eq(count_present("never", 8), 8);
}
END_TEST

START_TEST(test_eviction_never_takes_the_record_being_grown)
{
    set_conf("maxmemory-policy", "volatile-ttl");
    for (int i = 0; i < 8; i++) {
        add_fixed("soon", i, T0 + (i + 1) * SEC);
    }
    size_t per = record_bytes();
    struct store_rec *keep = find("soon0");
    ck_assert_ptr_nonnull(keep);
    ck_assert_uint_lt(set_room(0), per);
    ck_assert(keyspace_admit(3 * per, keep));
    ck_assert_ptr_nonnull(find("soon0"));
    ck_assert_uint_ge(evicted(), 1);
    ck_assert_ptr_null(find("soon1"));
    ck_assert_uint_eq(count_present("soon", 8), 8 - evicted());
}
END_TEST

/* The cron carries eviction on when memory is over the bound. */
START_TEST(test_cron_evicts_down_to_maxmemory)
{
    set_conf("maxmemory-policy", "volatile-ttl");
    for (int i = 0; i < 32; i++) {
        add_fixed("soon", i, T0 + (i + 1) * SEC);
    }
    size_t per = record_bytes();
    set_maxmemory(mem_used() - 3 * per);
    keyspace_cron(1000);
    ck_assert_uint_ge(evicted(), 1);
    ck_assert_uint_le(mem_used(), (size_t)srv.conf.maxmemory);
    ck_assert_uint_eq(count_present("soon", 32), 32 - evicted());
    uint64_t n = evicted();
    keyspace_cron(1000);                /* within it now: nothing more */
    ck_assert_uint_eq(evicted(), n);
}
END_TEST

/* ------------------------------------------------------------------------
 * What a write tells the transactions and the journal
 * --------------------------------------------------------------------- */

static struct conn *
new_client(void)
{
    return fx_client(2);
}

static void
free_client(struct conn *c)
{
    multi_discard(c);
    multi_unwatch(c);
    obuf_deinit(&c->out);
    free(c);
}

static bool
dirty(const struct conn *c)
{
    return c->multi != NULL && (c->multi->flags & MULTI_DIRTY_CAS);
}

START_TEST(test_a_write_dirties_the_transactions_watching_that_key)
{
    struct conn *a = new_client(), *b = new_client(), *o = new_client();
    struct fwin_state fw = { T0, 1 };
    make_state("k", KEY_FIXED, &fw, sizeof(fw), T0 + 10 * SEC);
    ck_assert(multi_watch(a, "k", 1));
    ck_assert(multi_watch(b, "other", 5));
    ck_assert(keyspace_select(4));
    ck_assert(multi_watch(o, "k", 1));  /* database 4's k */
    ck_assert(keyspace_select(0));
    ck_assert_uint_eq(srv.watched_keys, 3);

    struct store_rec *r = find("k");
    fw.count = 2;
    ck_assert(keyspace_store_state(&(struct key_hint){ false, 0 }, "k", 1, r,
                                   KEY_FIXED, &fw, sizeof(fw), T0 + 10 * SEC,
                                   T0));
    ck_assert(dirty(a));
    ck_assert(!dirty(b));
    ck_assert(!dirty(o));
    ck_assert(multi_watched_changed(a));
    ck_assert(!multi_watched_changed(b));
    /* A dirty client stops watching: its entry is gone from the registry. */
    ck_assert_uint_eq(srv.watched_keys, 2);
    /* A new key written for the first time counts too. */
    make_gcra("other", 1, 1000);
    ck_assert(dirty(b));
    free_client(a);
    free_client(b);
    free_client(o);
    ck_assert_uint_eq(srv.watched_keys, 0);
}
END_TEST

START_TEST(test_removal_flush_and_expiry_dirty_the_watchers)
{
    struct conn *c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = new_client();
    }
    make_gcra("del", 1, 60000);
    make_gcra("fl", 1, 60000);
    make_gcra("exp", 1, 1000);
    ck_assert(multi_watch(c[0], "del", 3));
    ck_assert(multi_watch(c[1], "fl", 2));
    ck_assert(multi_watch(c[2], "exp", 3));
    ck_assert(multi_watch(c[3], "absent", 6));
    /* A write that leaves nothing to keep removes the key. */
    struct fwin_state fw = { 0 };
    ck_assert(keyspace_store_state(&(struct key_hint){ false, 0 }, "del", 3,
                                   find("del"), KEY_FIXED, &fw, sizeof(fw),
                                   T0, T0));
    ck_assert_ptr_null(find("del"));
    ck_assert(dirty(c[0]));
    ck_assert(!dirty(c[1]) && !dirty(c[2]) && !dirty(c[3]));
    /* Expiry: found dead when EXEC looks. */
    clock_set_fake_wall(T0 + 2 * SEC);
    ck_assert(multi_watched_changed(c[2]));
    ck_assert(!dirty(c[1]));
    /* A flush of another database changes nothing here; of this one, it
     * does; a key that never existed stays untouched. */
    keyspace_flush(7);
    ck_assert(!dirty(c[1]));
    keyspace_flush(0);
    ck_assert(dirty(c[1]));
    ck_assert(!dirty(c[3]));
    for (int i = 0; i < 4; i++) {
        free_client(c[i]);
    }
}
END_TEST

/* The journal's sink, as the tests attach it: every published record
 * kept until the next look. */
static void
capture(const unsigned char *records, size_t len, bool complete)
{
    ck_assert(complete);
    unsigned char *p = realloc(captured, captured_len + len + 1);
    ck_assert_ptr_nonnull(p);
    memcpy(p + captured_len, records, len);
    captured = p;
    captured_len += len;
}

static void
journal_enable(bool on)
{
    journal_attach(JOURNAL_SINK_FILE, on ? capture : NULL);
}

/* The records published since the last look, as a file holds them. */
static unsigned char *
journal_bytes(size_t *len)
{
    size_t n = captured_len;
    unsigned char *f = malloc(JOURNAL_MAGIC_LEN + n + 1);
    ck_assert_ptr_nonnull(f);
    memcpy(f, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN);
    if (n > 0) {
        memcpy(f + JOURNAL_MAGIC_LEN, captured, n);
    }
    *len = JOURNAL_MAGIC_LEN + n;
    captured_len = 0;
    return f;
}

/* Records published since the last look (and forget them). */
static size_t
published(void)
{
    size_t n = captured_len;
    captured_len = 0;
    return n;
}

START_TEST(test_the_journal_lists_a_key_once_between_drains)
{
    journal_enable(true);
    make_log("l", 30000, log_items, 3);     /* listed */
    uint64_t effects = srv.journal_effects;
    struct store_rec *r = make_gcra("g", 7, 5000);
    ck_assert(r->flags & KS_REC_DIRTY);
    struct key_hint h = { false, 0 };
    ck_assert(keyspace_store_gcra(&h, "g", 1, r, 8, 5000, T0));
    ck_assert(keyspace_store_gcra(&h, "g", 1, r, 9, 6000, T0));
    keyspace_written(find("l"));
    ck_assert_uint_eq(srv.journal_effects - effects, 4);
    ck_assert(find("l")->flags & KS_REC_DIRTY);
    ck_assert_uint_eq(journal_pending(), 0);    /* listed, not written */
    ck_assert_uint_eq(captured_len, 0);

    struct saved gs, ls;
    save(find("g"), T0, &gs);
    save(find("l"), T0, &ls);
    keyspace_publish();
    ck_assert(!(find("g")->flags & KS_REC_DIRTY));
    size_t len;
    unsigned char *f = journal_bytes(&len);
    struct journal_reader rd;
    struct journal_record rec;
    ck_assert(journal_reader_init(&rd, f, len));
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert_uint_eq(rec.type, KEY_LOG);
    ck_assert_uint_eq(rec.state_len, ls.b.len);
    ck_assert_mem_eq(rec.state, ls.b.p, ls.b.len);
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(rec.op, JOURNAL_SET);
    ck_assert_uint_eq(rec.type, KEY_INT);
    ck_assert(rec.keylen == 1 && rec.key[0] == 'g');
    ck_assert_int_eq(rec.expire_at, gs.expire_at);
    ck_assert_uint_eq(rec.state_len, gs.b.len);
    ck_assert_mem_eq(rec.state, gs.b.p, gs.b.len);
    struct ks_int g;                    /* unaligned in the record */
    memcpy(&g, rec.state, sizeof(g));
    ck_assert_int_eq(g.v, 9);
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_END);
    /* Nothing listed: a drain writes nothing. */
    keyspace_publish();
    ck_assert_uint_eq(published(), 0);
    free(f);
    mem_free(gs.b.p);
    mem_free(ls.b.p);
}
END_TEST

/* Deletions, flushes and swaps are records of their own, and reading the
 * records back into a fresh keyspace rebuilds what was there. */
/* Bytes written into a long string in place reach the journal as just
 * those bytes (KS_ELEM_RANGE), unless the key's whole state is listed
 * already; replayed, they rebuild the string; one for a key that expired
 * since changes nothing, one for a key that holds no long string is
 * refused. */
START_TEST(test_a_long_string_grows_in_the_journal_by_its_new_bytes)
{
    journal_enable(true);
    static const char start[] = "the first forty bytes of a long string..";
    struct store_rec *r = make_string("s", start, KEY_STR);
    keyspace_set_expire(r, T0 / MS + 60000);
    keyspace_publish();                 /* the key whole: one SET */
    char *p = keyspace_string_grow(r, 40 + 6);
    ck_assert_ptr_nonnull(p);
    memcpy(p + 40, "append", 6);
    keyspace_string_written(r, 40, 6);
    p = keyspace_string_grow(r, 50);
    memcpy(p + 48, "!!", 2);            /* a gap of two zeros before it */
    keyspace_string_written(r, 48, 2);
    keyspace_publish();
    size_t len;
    unsigned char *f = journal_bytes(&len);
    struct journal_reader rd;
    struct journal_record rec;
    ck_assert(journal_reader_init(&rd, f, len));
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);  /* the SET */
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(rec.op, JOURNAL_ELEM);
    ck_assert_uint_eq(rec.elem_op, KS_ELEM_RANGE);
    ck_assert_uint_eq(rec.state_len, 8 + 6);
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert_uint_eq(rec.state_len, 8 + 2);
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_END);
    struct saved want;
    save(find("s"), T0, &want);
    journal_enable(false);

    /* Replayed into a fresh keyspace: the same string. */
    char err[ERRLEN];
    fresh_keyspace();
    ck_assert(journal_reader_init(&rd, f, len));
    while (journal_next(&rd, &rec) == JOURNAL_RECORD) {
        ck_assert_msg(keyspace_apply_record(&rec, T0, err, sizeof(err)) == 0,
                      "%s", err);
    }
    struct saved got;
    save(find("s"), T0, &got);
    ck_assert_uint_eq(got.b.len, 50);
    ck_assert_mem_eq(got.b.p, want.b.p, 50);
    ck_assert_mem_eq(got.b.p + 40, "append\0\0!!", 10);
    mem_free(got.b.p);

    /* After the key expired, the SET drops it and the ranges skip it. */
    fresh_keyspace();
    int64_t later = T0 + 61 * SEC;
    ck_assert(journal_reader_init(&rd, f, len));
    while (journal_next(&rd, &rec) == JOURNAL_RECORD) {
        ck_assert_msg(keyspace_apply_record(&rec, later, err, sizeof(err)) ==
                      0, "%s", err);
    }
    ck_assert_uint_eq(keyspace_total_keys(), 0);

    /* A range for a key that holds no long string is damage. */
    fresh_keyspace();
    make_string("s", "short", KEY_STR);
    ck_assert(journal_reader_init(&rd, f, len));
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(keyspace_apply_record(&rec, T0, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "a string range for a key that holds no long string");
    free(f);
    mem_free(want.b.p);
}
END_TEST

START_TEST(test_journaled_effects_replay_into_a_fresh_keyspace)
{
    journal_enable(true);
    make_every_type();                  /* database 0 */
    ck_assert(keyspace_select(2));
    make_gcra("in2", 77, 60000);
    make_gcra("gone", 1, 60000);
    ck_assert(keyspace_select(0));
    keyspace_publish();
    /* "gone" is deleted; database 2 and 3 swap; database 9 flushed. */
    ck_assert(keyspace_select(2));
    struct fwin_state fw = { 0 };
    ck_assert(keyspace_store_state(&(struct key_hint){ false, 0 }, "gone", 4,
                                   find("gone"), KEY_FIXED, &fw, sizeof(fw),
                                   T0, T0));
    ck_assert(keyspace_select(0));
    ck_assert(keyspace_swap(2, 3));
    keyspace_flush(9);
    keyspace_publish();

    struct saved want[KEY_TYPE_LAST + 1];
    for (int t = KEY_TYPE_FIRST; t <= KEY_TYPE_LAST; t++) {
        if (!live_type(t)) {
            continue;
        }
        char key[8];
        snprintf(key, sizeof(key), "t%d", t);
        save(find(key), T0, &want[t]);
    }
    size_t len;
    unsigned char *f = journal_bytes(&len);
    journal_enable(false);
    fresh_keyspace();
    struct journal_reader rd;
    struct journal_record rec;
    ck_assert(journal_reader_init(&rd, f, len));
    unsigned ops[5] = { 0 };
    char err[ERRLEN];
    int guard = 0;
    while (journal_next(&rd, &rec) == JOURNAL_RECORD && guard++ < 100) {
        ops[rec.op]++;
        ck_assert_msg(keyspace_apply_record(&rec, T0, err, sizeof(err)) == 0,
                      "%s", err);
    }
    ck_assert_uint_eq(ops[JOURNAL_SET], 14);
    ck_assert_uint_eq(ops[JOURNAL_DEL], 1);
    ck_assert_uint_eq(ops[JOURNAL_SWAP], 1);
    ck_assert_uint_eq(ops[JOURNAL_FLUSH], 1);
    ck_assert_uint_eq(store_size(keyspace_db(0)), 12);
    ck_assert_uint_eq(store_size(keyspace_db(2)), 0);
    ck_assert_uint_eq(store_size(keyspace_db(3)), 1);
    ck_assert_ptr_nonnull(store_lookup(keyspace_db(3), "in2", 3, T0));
    for (int t = KEY_TYPE_FIRST; t <= KEY_TYPE_LAST; t++) {
        if (!live_type(t)) {
            continue;
        }
        struct store_rec *r = find(want[t].key);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->expire_at, want[t].expire_at);
        struct membuf b = { 0 };
        ck_assert(keytype_encode(r, T0, &b));
        ck_assert_uint_eq(b.len, want[t].b.len);
        ck_assert_mem_eq(b.p, want[t].b.p, b.len);
        mem_free(b.p);
        mem_free(want[t].b.p);
    }
    /* Applying writes no records of its own. */
    ck_assert_uint_eq(published(), 0);
    /* A record naming a database this server lacks is refused. */
    rec = (struct journal_record){ .op = JOURNAL_DEL, .db = 16, .key = "x",
                                   .keylen = 1 };
    ck_assert_int_eq(keyspace_apply_record(&rec, T0, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "it holds keys of database 16, but this server "
                          "has 16 databases (see 'databases')");
    free(f);
}
END_TEST


/* ------------------------------------------------------------------------
 * An integer's record: 4 bytes of state when they hold it, else 8
 * --------------------------------------------------------------------- */

#define K16 "ctr:000000000001"      /* a 16-byte name */

static void
setup_commands(void)
{
    setup();
    ck_assert_int_eq(cmd_setup(command_table, command_count), 0);
}

/* GET's answer for an integer. */
static char *
bulk_of(int64_t v)
{
    static char buf[64];
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%lld", (long long)v);
    snprintf(buf, sizeof(buf), "$%d\r\n%s\r\n", n, digits);
    return buf;
}

static char *
int_reply(int64_t v)
{
    static char buf[32];
    snprintf(buf, sizeof(buf), ":%lld\r\n", (long long)v);
    return buf;
}

/* A counter with a 16-byte name is a 35-byte record (and 4 bytes in the
 * wheel with a TTL) until it leaves +-2^30; then 40, its TTL kept. */
START_TEST(test_a_counter_takes_4_bytes_until_it_outgrows_them)
{
    struct conn *c = fx_client(2);
    fx_expect(":5\r\n", fx_run(c, "INCRBY", K16, "5", NULL));
    ck_assert(store_rec_packed(find(K16)));
    fx_expect(":35\r\n", fx_run(c, "MEMORY", "USAGE", K16, NULL));
    fx_expect(":1\r\n", fx_run(c, "EXPIRE", K16, "100", NULL));
    fx_expect(":100000\r\n", fx_run(c, "PTTL", K16, NULL));
    fx_expect(":39\r\n", fx_run(c, "MEMORY", "USAGE", K16, NULL));
    fx_expect(":1073741823\r\n",
              fx_run(c, "INCRBY", K16, "1073741818", NULL));
    ck_assert(store_rec_packed(find(K16)));
    fx_expect(":1073741824\r\n", fx_run(c, "INCR", K16, NULL));
    ck_assert(!store_rec_packed(find(K16)));
    fx_expect(bulk_of(1073741824), fx_run(c, "GET", K16, NULL));
    fx_expect(":100000\r\n", fx_run(c, "PTTL", K16, NULL));
    fx_expect(":44\r\n", fx_run(c, "MEMORY", "USAGE", K16, NULL));
    fx_expect(":1073741823\r\n", fx_run(c, "DECR", K16, NULL));
    /* The other end, and the extremes. */
    fx_expect("+OK\r\n", fx_run(c, "SET", "n", "-1073741824", NULL));
    ck_assert(store_rec_packed(find("n")));
    fx_expect(":-1073741825\r\n", fx_run(c, "DECR", "n", NULL));
    ck_assert(!store_rec_packed(find("n")));
    fx_expect("+OK\r\n",
              fx_run(c, "SET", "m", "9223372036854775807", NULL));
    fx_expect(bulk_of(INT64_MAX), fx_run(c, "GET", "m", NULL));
    fx_expect("-ERR increment or decrement would overflow\r\n",
              fx_run(c, "INCR", "m", NULL));
    fx_expect("+OK\r\n",
              fx_run(c, "SET", "m", "-9223372036854775807", NULL));
    fx_expect(":-9223372036854775808\r\n", fx_run(c, "DECR", "m", NULL));
    fx_expect(bulk_of(INT64_MIN), fx_run(c, "GET", "m", NULL));
    free_client(c);
}
END_TEST

/* CL.THROTTLE's TAT leans on the expiry it writes with it: 4 bytes. An
 * EXPIRE, PERSIST or GETEX that moves the expiry away keeps the value to
 * the ns (in a record of 8 bytes when 4 no longer hold it) and PTTL to the
 * ms; one that keeps it within reach keeps the 4 bytes; INCR keeps
 * leaning. */
START_TEST(test_a_tat_keeps_its_value_to_the_ns_when_its_expiry_moves)
{
    struct conn *c = fx_client(2);
    int64_t tat = T0 + 2 * SEC + 123;   /* 123 ns past its expiry's ms */
    struct key_hint h = { false, 0 };
    const char *keys[] = { "t1", "t2", "t3", "t4", "t5" };
    for (int i = 0; i < 5; i++) {
        ck_assert(keyspace_store_gcra(&h, keys[i], 2, NULL, (uint64_t)tat,
                                      2000, T0));
        ck_assert(keytype_int_leans(find(keys[i])));
        fx_expect(bulk_of(tat), fx_run(c, "GET", keys[i], NULL));
        fx_expect(":2000\r\n", fx_run(c, "PTTL", keys[i], NULL));
    }
    /* Far from it: 8 bytes, same value. */
    fx_expect(":1\r\n", fx_run(c, "PEXPIRE", "t1", "5000", NULL));
    ck_assert(!store_rec_packed(find("t1")));
    fx_expect(bulk_of(tat), fx_run(c, "GET", "t1", NULL));
    fx_expect(":5000\r\n", fx_run(c, "PTTL", "t1", NULL));
    /* Within a second of it: still 4 bytes, same value. */
    fx_expect(":1\r\n", fx_run(c, "PEXPIRE", "t2", "2500", NULL));
    ck_assert(keytype_int_leans(find("t2")));
    fx_expect(bulk_of(tat), fx_run(c, "GET", "t2", NULL));
    fx_expect(":2500\r\n", fx_run(c, "PTTL", "t2", NULL));
    /* No expiry left to lean on. */
    fx_expect(":1\r\n", fx_run(c, "PERSIST", "t3", NULL));
    ck_assert(!store_rec_packed(find("t3")));
    fx_expect(bulk_of(tat), fx_run(c, "GET", "t3", NULL));
    fx_expect(":-1\r\n", fx_run(c, "PTTL", "t3", NULL));
    fx_expect(bulk_of(tat), fx_run(c, "GETEX", "t4", "PX", "90000", NULL));
    fx_expect(bulk_of(tat), fx_run(c, "GET", "t4", NULL));
    fx_expect(":90000\r\n", fx_run(c, "PTTL", "t4", NULL));
    fx_expect(int_reply(tat + 1), fx_run(c, "INCR", "t5", NULL));
    ck_assert(keytype_int_leans(find("t5")));
    fx_expect(":2000\r\n", fx_run(c, "PTTL", "t5", NULL));
    /* redis-cell's -1 ms: no expiry to lean on, 8 bytes. */
    ck_assert(keyspace_store_gcra(&h, "t6", 2, NULL, (uint64_t)tat, -1, T0));
    ck_assert(!store_rec_packed(find("t6")));
    fx_expect(bulk_of(tat), fx_run(c, "GET", "t6", NULL));
    fx_expect(":-1\r\n", fx_run(c, "PTTL", "t6", NULL));
    /* CL.THROTTLE on the widened key writes both again. */
    ck_assert(keyspace_store_gcra(&h, "t1", 2, find("t1"),
                                  (uint64_t)tat + 7, 2000, T0));
    fx_expect(bulk_of(tat + 7), fx_run(c, "GET", "t1", NULL));
    fx_expect(":2000\r\n", fx_run(c, "PTTL", "t1", NULL));
    free_client(c);
}
END_TEST

/* expire_ms's ns plus d, modulo 2^64 (as the 4-byte form counts). */
static int64_t
wrapped_ns(int64_t expire_ms, uint64_t d)
{
    return (int64_t)((uint64_t)expire_ms * (uint64_t)MS + d);
}

/* The int64 of every form (4 bytes on its own, 4 leaning on the expiry,
 * 8) encodes as itself and restores to the same value, expiry and form,
 * also at the edges where 4 bytes stop holding it and where the expiry's
 * ns leave int64 (the distance is taken modulo 2^64, so still exact). */
START_TEST(test_every_integer_form_round_trips_through_its_encoding)
{
    const int64_t last = INT64_MAX / MS;        /* last ms with an ns */
    const struct {
        int64_t v;
        int64_t expire_at;
        bool packed;
    } cases[] = {
        { 0, STORE_NEVER, true },
        { -1, T0 / MS + 5, true },
        { (INT64_C(1) << 30) - 1, STORE_NEVER, true },
        { -(INT64_C(1) << 30), STORE_NEVER, true },
        { INT64_C(1) << 30, STORE_NEVER, false },
        { INT64_MIN, STORE_NEVER, false },
        { INT64_MAX, T0 / MS + 5, false },
        { T0 + 5 * MS + 999999, T0 / MS + 5, true },
        { T0 + 5 * MS - (INT64_C(1) << 30), T0 / MS + 5, true },
        { T0 + 5 * MS + (INT64_C(1) << 30), T0 / MS + 5, false },
        { T0, STORE_NEVER, false },
        { INT64_MAX, last, true },              /* 775807 ns after */
        { INT64_MAX, last + 1, true },          /* its ns past int64 */
        { wrapped_ns(INT64_MAX, 7), INT64_MAX, true },
        { 5, INT64_MAX, true },
        { INT64_MIN, INT64_MAX, false },
        { INT64_MIN, last + 1, true },      /* next to it, modulo 2^64 */
        { INT64_C(1) << 62, last + 1, false },
    };
    char err[ERRLEN];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char key[16];
        snprintf(key, sizeof(key), "i%zu", i);
        struct ks_int k = { cases[i].v };
        ck_assert_int_eq(keyspace_restore(0, KEY_INT, key, strlen(key),
                                          cases[i].expire_at,
                                          (const unsigned char *)&k,
                                          sizeof(k), KS_ENCODING, false, T0,
                                          err, sizeof(err)), 0);
        struct store_rec *r = find(key);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(store_rec_packed(r) == cases[i].packed, "case %zu", i);
        ck_assert_int_eq(keytype_int(r), cases[i].v);
        ck_assert_int_eq(r->expire_at, cases[i].expire_at);
        struct membuf b = { 0 };
        ck_assert(keytype_encode(r, T0, &b));
        ck_assert_uint_eq(b.len, sizeof(k));
        ck_assert_mem_eq(b.p, &k, sizeof(k));
        /* MOVE and COPY carry the form and the value over. */
        ck_assert(keyspace_copy(r, 1, key, strlen(key), T0));
        ck_assert(keyspace_move(r, 2, T0));
        for (int db = 1; db <= 2; db++) {
            struct store_rec *q = store_lookup(keyspace_db(db), key,
                                               strlen(key), T0);
            ck_assert_ptr_nonnull(q);
            ck_assert_int_eq(keytype_int(q), cases[i].v);
            ck_assert_int_eq(q->expire_at, cases[i].expire_at);
            ck_assert(store_rec_packed(q) == cases[i].packed);
        }
        mem_free(b.p);
    }
}
END_TEST

Suite *
keyspace_suite(void)
{
    Suite *s = suite_create("keyspace");
    TCase *tc = tcase_create("encoding");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_every_type_round_trips_field_by_field_with_its_expiry);
    tcase_add_test(tc, test_restored_keys_survive_a_fresh_keyspace);
    tcase_add_test(tc, test_gcra_expiry_is_the_redis_millisecond_and_survives);
    tcase_add_test(tc, test_log_encoding_holds_only_the_entries_kept_at_now);
    tcase_add_test(tc, test_tiers_of_the_first_encoding_take_keep_from_the_expiry);
    tcase_add_test(tc, test_move_keeps_state_and_expiry_in_the_other_database);
    tcase_add_test(tc, test_truncated_or_overlong_encodings_are_refused);
    tcase_add_test(tc, test_each_broken_field_is_refused);
    tcase_add_test(tc, test_empty_log_and_tiers_are_dropped_or_kept_by_encoding);
    tcase_add_test(tc, test_restore_refuses_unknown_types_and_duplicates);
    tcase_add_test(tc, test_keys_already_fresh_are_dropped);
    tcase_add_test(tc, test_old_encodings_load_as_strings);
    suite_add_tcase(s, tc);

    tc = tcase_create("int_records");
    tcase_add_checked_fixture(tc, setup_commands, teardown);
    tcase_add_test(tc, test_a_counter_takes_4_bytes_until_it_outgrows_them);
    tcase_add_test(tc,
                   test_a_tat_keeps_its_value_to_the_ns_when_its_expiry_moves);
    tcase_add_test(tc, test_every_integer_form_round_trips_through_its_encoding);
    suite_add_tcase(s, tc);

    tc = tcase_create("admission");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_without_maxmemory_everything_is_admitted);
    tcase_add_test(tc, test_noeviction_refuses_what_would_pass_maxmemory);
    tcase_add_test(tc, test_a_log_grows_only_within_maxmemory);
    tcase_add_test(tc, test_volatile_ttl_evicts_the_keys_closest_to_fresh);
    tcase_add_test(tc, test_eviction_that_cannot_make_room_evicts_nothing);
    tcase_add_test(tc, test_eviction_never_takes_the_record_being_grown);
    tcase_add_test(tc, test_cron_evicts_down_to_maxmemory);
    suite_add_tcase(s, tc);

    tc = tcase_create("written");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_a_write_dirties_the_transactions_watching_that_key);
    tcase_add_test(tc, test_removal_flush_and_expiry_dirty_the_watchers);
    tcase_add_test(tc, test_the_journal_lists_a_key_once_between_drains);
    tcase_add_test(tc, test_journaled_effects_replay_into_a_fresh_keyspace);
    tcase_add_test(tc, test_a_long_string_grows_in_the_journal_by_its_new_bytes);
    suite_add_tcase(s, tc);
    return s;
}
