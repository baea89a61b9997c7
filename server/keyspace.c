/*
 * keyspace.c - the one write path every change to a key takes, lookup,
 * and admission under maxmemory (see keyspace.h).
 *
 * Around it. The databases (keyspace_db.c) lie below: each store they
 * make is hooked to this file's keyspace_release() (handed down by
 * keyspace_init()), so a record freed in any database for any reason
 * still passes it, and nothing there knows what a write is. Keys put back from a snapshot, the journal
 * or a primary (keyspace_apply.c) lie above: they go into the store as
 * they were written elsewhere, and keyspace_applying() keeps this file
 * from journaling what their replay deletes, flushes or swaps.
 *
 * Memory. A key's record is a store slot; RL.LOG and RL.TIERS keys, long
 * strings and collections also own blocks that grow as they are used. Both kinds of growth pass
 * keyspace_admit(), the one place maxmemory is enforced, so a key that
 * keeps growing is bounded exactly like a stream of new keys. Eviction
 * (volatile-ttl) is attempted only when it can work: the records and
 * arrays of every other key must hold at least the bytes missing.
 * Otherwise it would throw keys away and still answer -OOM.
 */
#include "server/keyspace.h"

#include <stdint.h>
#include <math.h>
#include <string.h>

#include "algorithms/fixed_window.h"
#include "algorithms/sliding_window.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/time.h"
#include "server/blocked.h"
#include "server/clock.h"
#include "server/journal.h"
#include "server/log.h"
#include "server/notify.h"
#include "server/server.h"

/* ---- Redis expiry ------------------------------------------------------ */

/* A record expiring like a Redis key with PEXPIRE ttl_ms set at now (the
 * key lives through now's millisecond plus ttl_ms). Saturates. */
static int64_t
keyspace_redis_expire_at(int64_t now_ns, int64_t ttl_ms)
{
    int64_t expire_ms;
    if (__builtin_add_overflow(now_ns / NS_PER_MS, ttl_ms, &expire_ms)) {
        return ttl_ms < 0 ? 0 : INT64_MAX;
    }
    return expire_ms;
}

int64_t
keyspace_fresh_ms(int64_t fresh_at)
{
    return fresh_at / NS_PER_MS + (fresh_at % NS_PER_MS > 0);
}

/* ---- writes ------------------------------------------------------------ */

struct store_rec *
keyspace_upsert(const struct key_hint *h, const char *key, size_t len,
                struct store_rec *r, uint8_t type)
{
    return r != NULL ? r
                     : keyspace_add(h, key, len, type, keytype_state_size(type));
}

static struct store_rec *replace_record(const struct key_hint *h,
                                        struct store_rec *r, uint8_t type,
                                        size_t size, bool admit);

/* A new expiry for KEY_INT r whose value leans on the old one (a TAT, see
 * keytype.h): the value kept as it was, in r's 4 bytes when they still
 * hold it, else in a record of 8 that replaces r. That record's 4 more
 * bytes are not admitted under maxmemory, as Redis's EXPIRE is never
 * refused for it. NULL when memory ran out (r unchanged). */
static struct store_rec *
move_leaning_int(struct store_rec *r, int64_t expire_at)
{
    struct ks_int_form f = keytype_int_form(keytype_int(r), expire_at);
    if (!f.small) {
        r = replace_record(NULL, r, KEY_INT, sizeof(struct ks_int), false);
        if (r == NULL) {
            return NULL;
        }
    }
    store_set_expire(srv.store, r, expire_at);
    (void)keytype_int_put(r, &f);       /* it fits: checked above */
    return r;
}

struct store_rec *
keyspace_set_expire(struct store_rec *r, int64_t expire_at)
{
    if (r->type == KEY_INT && keytype_int_leans(r)) {
        r = move_leaning_int(r, expire_at);
        if (r == NULL) {
            return NULL;
        }
    } else {
        store_set_expire(srv.store, r, expire_at);
    }
    keyspace_written(r);
    return r;
}

void
keyspace_keep_until(struct store_rec *r, int64_t fresh_at, int64_t now)
{
    if (fresh_at <= now) {
        store_remove(srv.store, r);
    } else {
        /* A limiter's state never leans on its expiry: r stays. */
        (void)keyspace_set_expire(r, keyspace_fresh_ms(fresh_at));
    }
}

void
keyspace_delete(struct store_rec *r)
{
    store_remove(srv.store, r);     /* keyspace_release() tells the rest */
}

bool
keyspace_delete_key(int db, const char *key, size_t len, int64_t now)
{
    struct store *s = srv.dbs[db];
    struct store_rec *r = s != NULL ? store_lookup(s, key, len, now) : NULL;
    if (r == NULL) {
        return false;
    }
    store_remove(s, r);
    return true;
}

/* ---- hash slots -------------------------------------------------------- */

void
keyspace_slots_enable(void)
{
    if (!keyspace_db_slots_enable()) {
        log_warning("Out of memory indexing the keys by hash slot: CLUSTER "
                    "COUNTKEYSINSLOT and GETKEYSINSLOT fail until it is "
                    "retried");
    }
}

bool
keyspace_slots_on(void)
{
    return srv.dbs != NULL && srv.dbs[0] != NULL &&
           store_slots_on(srv.dbs[0]);
}

uint64_t
keyspace_slot_count(unsigned slot)
{
    return keyspace_slots_on() ? store_slot_count(srv.dbs[0], slot) : 0;
}

struct slot_keys {
    void (*cb)(const char *key, size_t len, void *arg);
    void *arg;
};

static void
slot_key(struct store_rec *r, void *arg)
{
    const struct slot_keys *k = arg;
    k->cb(store_rec_key(r), store_rec_keylen(r), k->arg);
}

size_t
keyspace_slot_keys(unsigned slot, size_t max,
                   void (*cb)(const char *key, size_t len, void *arg),
                   void *arg)
{
    struct slot_keys k = { cb, arg };
    if (!keyspace_slots_on()) {
        return 0;
    }
    return store_slot_records(srv.dbs[0], slot, max, slot_key, &k);
}

size_t
keyspace_slot_delete(unsigned slot, int64_t now)
{
    struct store_rec *r;
    size_t n = 0;
    if (!keyspace_slots_on()) {
        return 0;
    }
    while ((r = store_slot_first(srv.dbs[0], slot)) != NULL) {
        if (!store_rec_dead(r, now)) {
            notify_key(NOTIFY_GENERIC, "del", store_rec_key(r),
                       store_rec_keylen(r), 0);
        }
        store_remove(srv.dbs[0], r);    /* keyspace_release() tells the rest */
        n++;
    }
    return n;
}

bool
keyspace_expire(int db, int64_t now, size_t budget)
{
    struct store *s = srv.dbs[db];
    if (s == NULL || store_keep_dead) {
        return false;       /* a Redis primary's DEL frees them */
    }
    (void)store_expire(s, now, budget);
    return store_expire_pending(s, now);
}

/* The record holding v, leaning (keytype.h) on lean_on: STORE_NEVER, or
 * the expiry the caller gives it right after. r itself when its bytes
 * hold v so (the hot path of CL.THROTTLE and of every counter), else a new
 * key, or r replaced (its expiry kept), sized for v. NULL when there is no
 * room. The caller tells the watchers and the journal. */
static struct store_rec *
int_record(const struct key_hint *h, const char *key, size_t len,
           struct store_rec *r, int64_t v, int64_t lean_on)
{
    struct ks_int_form f = keytype_int_form(v, lean_on);
    if (r != NULL && r->type == KEY_INT && keytype_int_put(r, &f)) {
        return r;
    }
    size_t size = keytype_int_form_size(&f);
    r = r == NULL ? keyspace_add(h, key, len, KEY_INT, size)
                  : replace_record(h, r, KEY_INT, size, true);
    if (r != NULL) {
        (void)keytype_int_put(r, &f);   /* sized for it */
    }
    return r;
}

bool
keyspace_store_gcra(const struct key_hint *h, const char *key, size_t len,
                    struct store_rec *r, uint64_t tat, int64_t ttl_ms,
                    int64_t now)
{
    /* -1 ms is "no expiry"; below that redis-cell's PEXPIRE failed and the
     * key was left without a TTL. */
    int64_t expire_at = ttl_ms < 0 ? STORE_NEVER
                                   : keyspace_redis_expire_at(now, ttl_ms);
    if (tat > INT64_MAX) {
        char text[KS_INT_TEXT];
        r = keyspace_set_string(h, key, len, r, text, num_fmt_u64(text, tat));
        return r != NULL && keyspace_set_expire(r, expire_at) != NULL;
    }
    r = int_record(h, key, len, r, (int64_t)tat, expire_at);
    if (r == NULL) {
        return false;
    }
    store_set_expire(srv.store, r, expire_at);
    keyspace_written(r);
    return true;
}

/* ---- strings ----------------------------------------------------------- */

/* Set while a record being replaced is freed: its key lives on in the
 * new record, whose state the journal gets, so no deletion is written. */
static bool replacing;

/* r replaced by a record of `type` with `size` bytes of state (zeroed) for
 * the same key (looked up through h, or NULL), with r's expiry, admitted
 * under maxmemory when `admit`. The new record is added before r goes, so
 * when there is no room r stays as it was (NULL); r's watchers hear of it
 * as it goes. */
static struct store_rec *
replace_record(const struct key_hint *h, struct store_rec *r, uint8_t type,
               size_t size, bool admit)
{
    size_t keylen = store_rec_keylen(r);
    const char *key = store_rec_key(r);
    if (admit && !keyspace_admit(sizeof(*r) + keylen + size, r)) {
        return NULL;
    }
    uint64_t hash = h != NULL && h->valid
                        ? h->hash : store_key_hash(srv.store, key, keylen);
    struct store_rec *n = store_add_hashed(srv.store, key, keylen, hash, type,
                                           size);
    if (n == NULL) {
        return NULL;
    }
    int64_t expire_at = r->expire_at;
    replacing = true;
    store_remove(srv.store, r);
    replacing = false;
    if (expire_at != STORE_NEVER) {
        store_set_expire(srv.store, n, expire_at);
    }
    return n;
}

/* The record to write a string of `type` into: r itself when it is one
 * already (a KEY_STR's block freed), a new key, or r replaced. */
static struct store_rec *
string_record(const struct key_hint *h, const char *key, size_t len,
              struct store_rec *r, uint8_t type)
{
    if (r == NULL) {
        return keyspace_add(h, key, len, type, keytype_state_size(type));
    }
    if (r->type != type) {
        return replace_record(h, r, type, keytype_state_size(type), true);
    }
    if (type == KEY_STR) {
        struct ks_str *st = store_rec_state(r);
        if (st->len > KS_STR_INLINE) {
            keytype_free(st->u.heap.p);
        }
        memset(st, 0, sizeof(*st));
    }
    return r;
}

struct store_rec *
keyspace_set_int(const struct key_hint *h, const char *key, size_t len,
                 struct store_rec *r, int64_t v)
{
    /* Leaning on no expiry, which a SET or INCREX may set next. */
    r = int_record(h, key, len, r, v, STORE_NEVER);
    if (r != NULL) {
        keyspace_written(r);
    }
    return r;
}

struct store_rec *
keyspace_set_string(const struct key_hint *h, const char *key, size_t len,
                    struct store_rec *r, const char *val, size_t vlen)
{
    int64_t v;
    if (val != NULL && vlen < NUM_I64_MAXLEN && num_parse_i64(val, vlen, &v)) {
        return keyspace_set_int(h, key, len, r, v);
    }
    if (vlen > UINT32_MAX) {
        return NULL;
    }
    /* The block first, admitted while r still counts: when there is no
     * room, nothing has changed. */
    char *block = NULL;
    if (vlen > KS_STR_INLINE) {
        block = keyspace_realloc(NULL, vlen, r);
        if (block == NULL) {
            return NULL;
        }
    }
    struct store_rec *n = string_record(h, key, len, r, KEY_STR);
    if (n == NULL) {
        keytype_free(block);
        return NULL;
    }
    struct ks_str *st = store_rec_state(n);
    st->len = (uint32_t)vlen;
    if (block != NULL) {
        st->u.heap.p = block;
        st->u.heap.cap = (uint32_t)vlen;
    }
    if (vlen > 0) {
        if (val != NULL) {
            memcpy(keytype_str_bytes(st), val, vlen);
        } else {
            memset(keytype_str_bytes(st), 0, vlen);
        }
    }
    keyspace_written(n);
    return n;
}

size_t
keyspace_string_bytes(size_t keylen, size_t vlen)
{
    return sizeof(struct store_rec) + store_key_space(keylen) +
           sizeof(struct ks_str) + (vlen > KS_STR_INLINE ? vlen : 0);
}

char *
keyspace_string_grow(struct store_rec *r, size_t newlen)
{
    struct ks_str *st = store_rec_state(r);
    if (newlen > UINT32_MAX) {
        return NULL;
    }
    if (newlen > st->u.heap.cap) {
        /* As Redis's sdsMakeRoomFor: double, or 1 MiB more past 1 MiB, so
         * a string appended to byte by byte costs O(n) in all. */
        size_t cap = newlen < KS_GROW_STEP ? 2 * newlen : newlen + KS_GROW_STEP;
        if (cap > UINT32_MAX) {
            cap = UINT32_MAX;
        }
        char *p = keyspace_realloc(st->u.heap.p, cap, r);
        if (p == NULL) {
            return NULL;
        }
        st->u.heap.p = p;
        st->u.heap.cap = (uint32_t)cap;
    }
    char *p = st->u.heap.p;
    memset(p + st->len, 0, newlen - st->len);
    st->len = (uint32_t)newlen;
    return p;
}

bool
keyspace_store_state(const struct key_hint *h, const char *key, size_t len,
                     struct store_rec *r, uint8_t type, const void *state,
                     size_t size, int64_t fresh_at, int64_t now)
{
    if (fresh_at <= now) {
        if (r != NULL) {
            keyspace_delete(r);
        }
        return true;
    }
    r = keyspace_upsert(h, key, len, r, type);
    if (r == NULL) {
        return false;
    }
    memcpy(store_rec_state(r), state, size);
    keyspace_set_expire(r, keyspace_fresh_ms(fresh_at));
    return true;
}

int64_t
keyspace_redis_pttl(const struct store_rec *r, int64_t now_ns)
{
    if (r->expire_at == STORE_NEVER) {
        return -1;
    }
    int64_t left = r->expire_at - now_ns / NS_PER_MS;
    return left < 0 ? 0 : left;
}

/* ---- the journal's view of writes ------------------------------------ */

struct dirty_rec {
    struct store_rec *r;
    uint32_t db;
};
static struct dirty_rec *dirty;
static size_t ndirty, dirty_cap;
static bool journal_muted;          /* a flush writes one record, not one per key */
/* keyspace_apply_record() is at work (keyspace_applying()): its caller
 * journals the record as it came (a replica's stream) or reads it from the
 * journal (start-up), so the deletions, flushes and swaps it makes write
 * none of their own. */
static bool applying;
static struct membuf jscratch;
/* An element effect's payload, built by a handler between
 * keyspace_elem_begin() and keyspace_elem_end(): apart from jscratch,
 * which a drain in between (another key's release) may reuse. */
static struct membuf escratch;
/* The record of the last element effect, and srv.journal_effects right
 * after it: while nothing came after it, a collection it emptied needs no
 * DEL (its replay empties the key, which then goes: apply_coll()). */
static const struct store_rec *elem_last;
static uint64_t elem_last_effects;
#define KS_SCRATCH_KEEP ((size_t)1 << 20)

/* r's encoded state: a fixed-size state is its own encoding (see
 * keytype_encode()), so it is read in place, and so are a string's bytes;
 * an integer's int64 is read out of its record's 4 or 8 bytes; any other
 * state (a log, tiers, a collection) is encoded into the scratch buffer,
 * which a huge one does not keep. */
static bool
journal_set(struct store_rec *r, uint32_t db, int64_t now)
{
    if (keytype_is_coll(r->type) && keytype_coll_len(r) == 0) {
        /* Emptied in this pass and on its way out: its DEL (written as
         * it is released) says so; an empty collection is no state. */
        return true;
    }
    const void *state = store_rec_state(r);
    size_t len = keytype_state_size(r->type);
    struct ks_int k;
    if (r->type == KEY_INT) {
        /* Its encoding is the int64, whatever its record holds. */
        k.v = keytype_int(r);
        state = &k;
    } else if (r->type == KEY_STR) {
        /* A string's encoding is its bytes. */
        struct ks_str *st = store_rec_state(r);
        state = keytype_str_bytes(st);
        len = st->len;
    } else if (!keytype_is_fixed_size(r->type)) {
        jscratch.len = 0;
        if (!keytype_encode(r, now, &jscratch)) {
            return false;
        }
        state = jscratch.p;
        len = jscratch.len;
    }
    bool ok = journal_add_set(db, r->type, store_rec_key(r),
                              store_rec_keylen(r), r->expire_at, state, len);
    if (jscratch.cap > KS_SCRATCH_KEEP) {
        mem_free(jscratch.p);
        jscratch = (struct membuf){ 0 };
    }
    return ok;
}

void
keyspace_journal_mark(struct store_rec *r, int db)
{
    srv.journal_effects++;
    if (r->flags & KS_REC_DIRTY) {
        return;
    }
    if (ndirty == dirty_cap) {
        size_t cap = dirty_cap ? dirty_cap * 2 : 1024;
        struct dirty_rec *d = mem_realloc(dirty, cap * sizeof(*d));
        if (d == NULL) {
            /* No room to list it: journal it now instead. */
            (void)journal_set(r, (uint32_t)db, clock_wall_now());
            return;
        }
        dirty = d;
        dirty_cap = cap;
    }
    r->flags |= KS_REC_DIRTY;
    dirty[ndirty++] = (struct dirty_rec){ r, (uint32_t)db };
}

static void
mark_one(struct store_rec *r, void *arg)
{
    keyspace_journal_mark(r, (int)(intptr_t)arg);
}

void
keyspace_journal_mark_all(int db)
{
    uint64_t cursor = 0;
    if (srv.dbs[db] == NULL) {
        return;
    }
    do {
        cursor = store_scan(srv.dbs[db], cursor, mark_one,
                            (void *)(intptr_t)db);
    } while (cursor != 0);
}

/* Every listed record into the pass's records (nothing when no sink
 * takes them any more: the list is only emptied then). */
static void
journal_drain(int64_t now)
{
    for (size_t i = 0; i < ndirty; i++) {
        struct store_rec *r = dirty[i].r;
        r->flags = 0;    /* KS_REC_DIRTY is its one bit */
        if (srv.journal_on) {
            (void)journal_set(r, dirty[i].db, now);
        }
    }
    ndirty = 0;
    if (!srv.journal_on && dirty != NULL) {
        mem_free(dirty);
        mem_free(jscratch.p);
        dirty = NULL;
        jscratch = (struct membuf){ 0 };
        dirty_cap = 0;
    }
}

struct membuf *
keyspace_elem_begin(struct store_rec *r)
{
    if (srv.watched_keys != 0) {
        multi_touch(srv.db, store_rec_key(r), store_rec_keylen(r));
    }
    if (!srv.journal_on) {
        return NULL;
    }
    if (r->flags & KS_REC_DIRTY) {
        srv.journal_effects++;      /* its whole state is on the way */
        return NULL;
    }
    escratch.len = 0;
    return &escratch;
}

void
keyspace_elem_end(struct store_rec *r, uint8_t op)
{
    srv.journal_effects++;
    (void)journal_add_elem((uint32_t)srv.db, r->type, store_rec_key(r),
                           store_rec_keylen(r), r->expire_at, op,
                           escratch.p, escratch.len);
    elem_last = r;
    elem_last_effects = srv.journal_effects;
    if (escratch.cap > KS_SCRATCH_KEEP) {
        mem_free(escratch.p);       /* one huge payload keeps no block */
        escratch = (struct membuf){ 0 };
    }
}

void
keyspace_string_written(struct store_rec *r, size_t off, size_t n)
{
    /* Only the bytes written, so appending to a long string costs the
     * journal and the replicas what was appended, not the string. */
    struct membuf *b = keyspace_elem_begin(r);
    if (b == NULL) {
        return;
    }
    struct ks_str *st = store_rec_state(r);
    uint64_t at = off;
    if (membuf_put(b, &at, sizeof(at)) &&
        membuf_put(b, keytype_str_bytes(st) + off, n)) {
        keyspace_elem_end(r, KS_ELEM_RANGE);
    } else {
        keyspace_written(r);        /* no room to build it: the whole key */
    }
}

void
keyspace_publish(void)
{
    if (ndirty > 0) {
        journal_drain(clock_wall_now());
    }
    journal_publish();
}

void
keyspace_group_begin(void)
{
    if (srv.journal_on) {
        journal_drain(clock_wall_now());   /* what came before stays out */
    }
    journal_group_begin();
}

void
keyspace_journal_sinks(unsigned to)
{
    if (srv.journal_on) {
        journal_drain(clock_wall_now());   /* what came before goes to all */
    }
    journal_set_sinks(to);
}

void
keyspace_group_end(void)
{
    if (srv.journal_on) {
        journal_drain(clock_wall_now());
    }
    journal_group_end();
}

/* A record is about to be freed: the list must not point at it, and a live
 * key that goes away is a deletion. */
static void
journal_release(struct store_rec *r, uint32_t db)
{
    if (!journal_muted && !applying && !replacing &&
        !store_rec_dead(r, clock_wall_now())) {
        srv.journal_effects++;
        (void)journal_add_del(db, store_rec_key(r), store_rec_keylen(r));
    }
}

void
keyspace_flush(int db)
{
    if (srv.journal_on) {
        journal_drain(clock_wall_now());
        srv.journal_effects++;
        if (!applying) {
            (void)journal_add_flush(db < 0 ? JOURNAL_ALL_DBS : (uint32_t)db);
        }
    }
    journal_muted = true;
    for (size_t i = 0; i < srv.ndbs; i++) {
        if (srv.dbs[i] != NULL && (db < 0 || (size_t)db == i)) {
            store_flush(srv.dbs[i]);
        }
    }
    journal_muted = false;
}

void
keyspace_applying(bool on)
{
    applying = on;
}

/* Set while eviction frees keys: they are "evicted", not "expired". */
static bool evicting;

/* A key that goes away by itself says so: "evicted" under maxmemory,
 * "expired" when its time came (the wheel, or a lookup that found it
 * dead), as Redis publishes them. A flush, a replay and a replaced
 * record publish nothing. */
static void
notify_release(const struct store_rec *r, int db)
{
    if (journal_muted || applying || replacing) {
        return;
    }
    if (evicting) {
        notify_key(NOTIFY_EVICTED, "evicted", store_rec_key(r),
                   store_rec_keylen(r), db);
    } else if (store_rec_dead(r, clock_wall_now())) {
        notify_key(NOTIFY_EXPIRED, "expired", store_rec_key(r),
                   store_rec_keylen(r), db);
    }
}

/* Frees what a record's state owns; the store calls it (store_set_release,
 * arg: the database's number) before freeing any record: removed, expired,
 * evicted or flushed, which is also when the transactions watching the key
 * hear of it. */
static void
keyspace_release(struct store_rec *r, void *arg)
{
    if (srv.watched_keys != 0) {
        multi_touch((int)(intptr_t)arg, store_rec_key(r),
                    store_rec_keylen(r));
    }
    if (r->flags & KS_REC_DIRTY) {
        journal_drain(clock_wall_now());    /* the list must not point at r */
    }
    if (srv.journal_on) {
        journal_release(r, (uint32_t)(intptr_t)arg);
    }
    if (notify_flags & (NOTIFY_EXPIRED | NOTIFY_EVICTED)) {
        notify_release(r, (int)(intptr_t)arg);
    }
    if (blocked_nclients != 0 && r->type == KEY_LEASE) {
        /* Every slot of a lease key that goes is free: its waiters' turn
         * (DEL, FLUSHDB, the wheel). */
        blocked_signal((int)(intptr_t)arg, store_rec_key(r),
                       store_rec_keylen(r));
    }
    keytype_release(r);
}

/* What r's arrays hold (0 for no record). */
static size_t
rec_owned(const struct store_rec *r)
{
    return r != NULL ? keytype_rec_owned(r) : 0;
}

/* ---- databases: keyspace_db.c holds them, their keys change here ------- */

int
keyspace_init(const unsigned char seed[16], int64_t now)
{
    (void)now;      /* a database's wheel starts when it is first used */
    /* Every store a database makes frees its records through the write
     * path: WATCH and the journal hear of each. */
    return keyspace_db_init(seed, keyspace_release);
}

void
keyspace_teardown(void)
{
    /* Tearing down changes no key: no records, the list dropped. */
    for (size_t i = 0; i < ndirty; i++) {
        dirty[i].r->flags = 0;    /* KS_REC_DIRTY is its one bit */
    }
    ndirty = 0;
    mem_free(dirty);
    mem_free(jscratch.p);
    mem_free(escratch.p);
    dirty = NULL;
    jscratch = (struct membuf){ 0 };
    escratch = (struct membuf){ 0 };
    dirty_cap = 0;
    journal_muted = true;
    keyspace_db_destroy();
    journal_muted = false;
}

bool
keyspace_swap(int a, int b)
{
    if (keyspace_db(a) == NULL || keyspace_db(b) == NULL) {
        return false;
    }
    if (a == b) {
        return true;        /* as Redis: nothing moves, no watcher hears */
    }
    if (!keyspace_db_swap_ready(a, b)) {
        return false;       /* no memory for database 0's slot index */
    }
    /* Keys of either may now hold other states: their watchers hear (a
     * replica's too, which swaps from its primary's record). */
    if (srv.watched_keys != 0) {
        multi_touch_databases(a, b);
    }
    if (srv.journal_on) {
        /* Listed records name their database: write them under the old. */
        journal_drain(clock_wall_now());
        srv.journal_effects++;
        if (!applying) {
            /* Written twice (here and as the stream's record), a swap
             * would undo itself when the journal is read back. */
            (void)journal_add_swap((uint32_t)a, (uint32_t)b);
        }
    }
    keyspace_db_exchange(a, b);
    if (blocked_nclients != 0) {
        blocked_signal_db(a);
        blocked_signal_db(b);
    }
    return true;
}

/* Can a client wait for a key of this type (blocked.h)? */
static bool
may_block(uint8_t type)
{
    return type == KEY_LIST || type == KEY_ZSET;
}

/* The new record of a copy or a move: its expiry set, its watchers told,
 * listed for the journal. */
static void
new_record_written(struct store *dst, struct store_rec *n, int to,
                   int64_t expire_at)
{
    store_set_expire(dst, n, expire_at);
    notify_key(NOTIFY_NEW, "new", store_rec_key(n), store_rec_keylen(n), to);
    if (srv.journal_on) {
        keyspace_journal_mark(n, to);
    }
    if (srv.watched_keys != 0) {
        multi_touch(to, store_rec_key(n), store_rec_keylen(n));
    }
    if (blocked_nclients != 0 && may_block(n->type)) {
        blocked_signal(to, store_rec_key(n), store_rec_keylen(n));
    }
}

/* A copy of r (a live record of the selected database: its state and
 * expiry) as `key` in database `to`, where it must not exist; NULL when
 * memory is refused or runs out. Its watchers hear, the journal lists it. */
static struct store_rec *
copy_record(struct store_rec *r, int to, const char *key, size_t len,
            int64_t now)
{
    struct membuf b = { 0 };
    struct store *dst = keyspace_db(to);
    bool ok = dst != NULL && keytype_encode(r, now, &b) &&
              keyspace_admit(sizeof(*r) + len + b.len, r);
    struct store_rec *n = NULL;
    if (ok) {
        n = store_add(dst, key, len, r->type, keytype_rec_state_size(r));
        ok = n != NULL;
    }
    if (ok) {
        n->expire_at = r->expire_at;        /* as stored, for the decoder */
        ok = keytype_decode(n, b.p, b.len, KS_ENCODING) == KS_DECODED;
        int64_t expire_at = n->expire_at;
        n->expire_at = STORE_NEVER;
        if (ok) {
            new_record_written(dst, n, to, expire_at);
        } else {
            store_remove(dst, n);
            n = NULL;
        }
    }
    mem_free(b.p);
    return n;
}

/* r's state and expiry handed to a new record `key` in database `to`
 * (where it must not exist), as Redis's RENAME and MOVE hand over the
 * object: what r owns (a long string, a log, a collection of any size)
 * changes hands, never copied; r is left owning nothing, for the caller
 * to remove. NULL (r unchanged) when memory is refused or runs out. */
static struct store_rec *
take_record(struct store_rec *r, int to, const char *key, size_t len)
{
    size_t size = keytype_rec_state_size(r);
    struct store *dst = keyspace_db(to);
    if (dst == NULL || !keyspace_admit(sizeof(*r) + len + size, r)) {
        return NULL;
    }
    struct store_rec *n = store_add(dst, key, len, r->type, size);
    if (n == NULL) {
        return NULL;
    }
    /* A zeroed state owns nothing, for every type (keytype_release()). */
    memcpy(store_rec_state(n), store_rec_state(r), size);
    memset(store_rec_state(r), 0, size);
    new_record_written(dst, n, to, r->expire_at);
    return n;
}

/* Room for `need` bytes (admitted first, so a refusal changes nothing),
 * then the key `key` of database db gone, if there. */
static bool
make_room(const struct store_rec *r, size_t need, int db, const char *key,
          size_t len, int64_t now)
{
    if (!keyspace_admit(need, r)) {
        return false;
    }
    (void)keyspace_delete_key(db, key, len, now);
    return true;
}

bool
keyspace_move(struct store_rec *r, int to, int64_t now)
{
    /* The key in its new database and gone from the old one: one record,
     * so a restart or a replica never has it in both, or in neither (the
     * DEL was written at once, the SET with the pass's records). */
    (void)now;
    keyspace_group_begin();
    bool ok = take_record(r, to, store_rec_key(r), store_rec_keylen(r)) !=
              NULL;
    if (ok) {
        store_remove(srv.store, r);         /* its watchers hear of it */
    }
    keyspace_group_end();
    return ok;
}

bool
keyspace_rename(struct store_rec *r, const char *key, size_t len, int64_t now)
{
    size_t need = sizeof(*r) + len + keytype_state_size(r->type);
    keyspace_group_begin();
    bool ok = make_room(r, need, srv.db, key, len, now) &&
              take_record(r, srv.db, key, len) != NULL;
    if (ok) {
        store_remove(srv.store, r);
    }
    keyspace_group_end();
    return ok;
}

bool
keyspace_copy(struct store_rec *r, int to, const char *key, size_t len,
              int64_t now)
{
    size_t need = sizeof(*r) + len + keytype_state_size(r->type) +
                  rec_owned(r);
    keyspace_group_begin();
    bool ok = keyspace_db(to) != NULL &&
              make_room(r, need, to, key, len, now) &&
              copy_record(r, to, key, len, now) != NULL;
    keyspace_group_end();
    return ok;
}

/* ---- admission --------------------------------------------------------- */

static bool
may_evict(void)
{
    return srv.conf.maxmemory_policy == MAXMEMORY_VOLATILE_TTL;
}

static size_t not_counted;

void
keyspace_set_not_counted(size_t bytes)
{
    not_counted = bytes;
}

/* Bytes over maxmemory once `need` more are taken (0 when within). */
static size_t
deficit(size_t need)
{
    size_t used = mem_used();
    size_t skip = not_counted + journal_buffer_memory();
    used = used > skip ? used - skip : 0;
    size_t max = (size_t)srv.conf.maxmemory;
    if (need > SIZE_MAX - used) {
        return SIZE_MAX;
    }
    return used + need > max ? used + need - max : 0;
}

/* Could evicting every key but keep make up `missing` bytes? */
static bool
eviction_can_help(size_t missing, const struct store_rec *keep)
{
    size_t evictable = keytype_owned_bytes();
    for (size_t i = 0; i < srv.ndbs; i++) {
        evictable += srv.dbs[i] != NULL ? store_bytes(srv.dbs[i]) : 0;
    }
    size_t kept = rec_owned(keep);
    evictable = evictable > kept ? evictable - kept : 0;
    return evictable >= missing;
}

/* Evict keys closest to fresh (not keep, a record of the selected
 * database) until `need` fits or `budget` keys are gone: the selected
 * database first, then the others. Returns the number evicted. */
static size_t
evict_until_fits(size_t need, const struct store_rec *keep, size_t budget)
{
    size_t n = 0;
    for (size_t i = 0; i <= srv.ndbs && n < budget && deficit(need) > 0;
         i++) {
        struct store *s = i == 0 ? srv.store : srv.dbs[i - 1];
        if (s == NULL || (i > 0 && s == srv.store)) {
            continue;
        }
        evicting = true;
        while (n < budget && deficit(need) > 0 &&
               store_evict_soonest(s, s == srv.store ? keep : NULL)) {
            n++;
        }
        evicting = false;
    }
    return n;
}

static bool admit_past_maxmemory;

void
keyspace_admit_past_maxmemory(bool on)
{
    admit_past_maxmemory = on;
}

bool
keyspace_admit(size_t need, const struct store_rec *keep)
{
    if (srv.conf.maxmemory == 0) {
        return true;
    }
    if (store_keep_dead) {
        /* A replica of a Redis primary ignores maxmemory, as Redis's
         * (replica-ignore-maxmemory): the primary's writes are admitted
         * and nothing is evicted behind its back. */
        return true;
    }
    size_t missing = deficit(need);
    if (missing == 0) {
        return true;
    }
    if (!may_evict() || !eviction_can_help(missing, keep)) {
        return admit_past_maxmemory;
    }
    size_t evicted = evict_until_fits(need, keep, KS_EVICT_PER_CALL);
    return deficit(need) == 0 || evicted == KS_EVICT_PER_CALL ||
           admit_past_maxmemory;
}

void
keyspace_cron(size_t budget)
{
    if (srv.conf.maxmemory == 0 || !may_evict() || store_keep_dead) {
        return;
    }
    size_t missing = deficit(0);
    if (missing > 0 && eviction_can_help(missing, NULL)) {
        (void)evict_until_fits(0, NULL, budget);
    }
}

void *
keyspace_realloc(void *p, size_t size, const struct store_rec *keep)
{
    size_t old = mem_usable(p);
    if (size > old && !keyspace_admit(size - old, keep)) {
        return NULL;
    }
    return keytype_owned_realloc(p, size);
}

size_t
keyspace_key_bytes(const struct store_rec *r)
{
    return store_rec_bytes(srv.store, r, keytype_rec_state_size(r)) +
           rec_owned(r);
}

/* ---- lookup ------------------------------------------------------------ */

struct store_rec *
keyspace_add(const struct key_hint *h, const char *key, size_t len,
             uint8_t type, size_t state_size)
{
    size_t need = sizeof(struct store_rec) + len + state_size;
    if (!keyspace_admit(need, NULL)) {
        return NULL;
    }
    struct store_rec *r =
        h->valid ? store_add_hashed(srv.store, key, len, h->hash, type,
                                    state_size)
                 : store_add(srv.store, key, len, type, state_size);
    if (r != NULL) {
        notify_key(NOTIFY_NEW, "new", key, len, srv.db);
    }
    return r;
}

struct store_rec *
keyspace_coll_add(const struct key_hint *h, const char *key, size_t len,
                  uint8_t type, size_t need)
{
    size_t size = keytype_state_size(type);
    if (!keyspace_admit(sizeof(struct store_rec) + len + size + need,
                        NULL)) {
        return NULL;
    }
    struct store_rec *r =
        h->valid ? store_add_hashed(srv.store, key, len, h->hash, type, size)
                 : store_add(srv.store, key, len, type, size);
    if (r != NULL) {
        notify_key(NOTIFY_NEW, "new", key, len, srv.db);
        keyspace_written(r);    /* new: its whole state is the effect */
        if (blocked_nclients != 0 && may_block(type)) {
            blocked_signal(srv.db, key, len);
        }
    }
    return r;
}

struct store_rec *
keyspace_set_coll(const struct key_hint *h, const char *key, size_t len,
                  struct store_rec *r, uint8_t type, const void *state)
{
    size_t size = keytype_state_size(type);
    struct store_rec *n = r == NULL ? keyspace_add(h, key, len, type, size)
                                    : replace_record(h, r, type, size, true);
    if (n == NULL) {
        return NULL;
    }
    memcpy(store_rec_state(n), state, size);
    if (n->expire_at != STORE_NEVER) {
        store_set_expire(srv.store, n, STORE_NEVER);
    }
    keyspace_written(n);
    /* ZUNIONSTORE's, ZRANGESTORE's... destination may be what a BZPOPMIN
     * waits for. */
    if (blocked_nclients != 0 && may_block(type)) {
        blocked_signal(srv.db, key, len);
    }
    return n;
}

bool
keyspace_coll_admit(const struct store_rec *r, size_t need)
{
    return keyspace_admit(need, r);
}

bool
keyspace_coll_done(struct store_rec *r)
{
    if (keytype_coll_len(r) > 0) {
        return false;
    }
    /* Emptied by the element effect just written: that record says it
     * all, so the command stays one record. */
    bool said = srv.journal_on && r == elem_last &&
                elem_last_effects == srv.journal_effects &&
                !(r->flags & KS_REC_DIRTY);
    journal_muted = said;
    if (notify_flags & NOTIFY_GENERIC) {
        /* Redis says "del" after the command's own event: the handler
         * published that before calling here. */
        notify_publish("del", store_rec_key(r), store_rec_keylen(r), srv.db);
    }
    keyspace_delete(r);
    journal_muted = false;
    return true;
}

struct store_rec *
keyspace_lookup_write(struct key_hint *h, const char *key, size_t len,
                      int64_t now)
{
    if (!h->valid) {
        h->hash = store_key_hash(srv.store, key, len);
        h->valid = true;
    }
    return store_lookup_hashed(srv.store, key, len, h->hash, now);
}

struct store_rec *
keyspace_lookup(struct key_hint *h, const char *key, size_t len, int64_t now)
{
    struct store_rec *r = keyspace_lookup_write(h, key, len, now);
    if (r != NULL) {
        srv.stats.keyspace_hits++;
    } else {
        srv.stats.keyspace_misses++;
        notify_key(NOTIFY_KEY_MISS, "keymiss", key, len, srv.db);
    }
    return r;
}

/* ---- RL.LOG ------------------------------------------------------------ */

/* The live META bytes of the log's entries. */
static uint64_t
log_live_meta(const struct ks_log *ls)
{
    uint64_t live = 0;
    for (uint32_t i = 0; i < ls->ring.len; i++) {
        live += slog_newest(&ls->ring, i)->meta_len;
    }
    return live;
}

/* Room for mlen more META bytes: a fresh arena of twice the live bytes
 * plus mlen (so appends stay amortised O(1) and garbage is dropped), the
 * live bytes copied over oldest first. */
static bool
log_reserve_meta(struct store_rec *r, struct ks_log *ls, size_t mlen)
{
    if (mlen == 0 || ls->meta_cap - ls->meta_len >= mlen) {
        return true;
    }
    uint64_t cap = 2 * (log_live_meta(ls) + mlen);
    if (cap < 64) {
        cap = 64;
    }
    if (cap > KS_LOG_META_CAP_MAX) {
        return false;   /* beyond the bounds of keyspace.h: cannot happen */
    }
    char *buf = keyspace_realloc(NULL, (size_t)cap, r);
    if (buf == NULL) {
        return false;
    }
    uint32_t off = 0;
    for (uint32_t i = ls->ring.len; i-- > 0;) {
        struct slog_entry *e = (struct slog_entry *)slog_newest(&ls->ring, i);
        if (e->meta_len > 0) {
            memcpy(buf + off, ls->meta + e->meta_off, e->meta_len);
        }
        e->meta_off = off;
        off += e->meta_len;
    }
    keytype_free(ls->meta);
    ls->meta = buf;
    ls->meta_len = off;
    ls->meta_cap = (uint32_t)cap;
    return true;
}

/* Room for one more entry: grow, or at the bound drop the oldest entry
 * this call does not count. */
static bool
log_reserve_slot(struct store_rec *r, struct ks_log *ls,
                 const struct slog_params *p, int64_t now, int64_t max_entries)
{
    struct slog_ring *ring = &ls->ring;
    if (ring->len < ring->cap) {
        return true;
    }
    /* While the log keeps just this call's window, every entry counts and
     * an allowed request leaves len < limit: no more slots than limit. */
    int64_t bound = max_entries;
    if (ls->keep_ms <= p->window * MS_PER_SEC && p->limit < bound) {
        bound = p->limit;
    }
    uint64_t want = ring->cap ? (uint64_t)ring->cap * 2 : 4;
    if (want > (uint64_t)bound) {
        want = (uint64_t)bound;
    }
    if (want > ring->cap) {
        struct slog_entry *e =
            keyspace_realloc(ring->e, (size_t)want * sizeof(*e), r);
        if (e == NULL) {
            return false;
        }
        ring->e = e;
        slog_grown(ring, (uint32_t)want);
        return true;
    }
    if (slog_uncounted(p, ring, now, NULL) == 0) {
        return false;   /* an allowed request always leaves one */
    }
    slog_drop_oldest(ring, 1);
    return true;
}

bool
keyspace_log_reserve(struct store_rec *r, const struct slog_params *p,
                     int64_t now, size_t mlen, int64_t max_entries)
{
    struct ks_log *ls = store_rec_state(r);
    if (mlen > KS_META_MAX) {
        return false;
    }
    /* The arena first: the slot step may drop an entry, which should only
     * happen when the append then goes through. */
    return log_reserve_meta(r, ls, mlen) &&
           log_reserve_slot(r, ls, p, now, max_entries);
}

void
keyspace_log_append(struct ks_log *ls, int64_t now, int64_t cost,
                    const char *meta, size_t mlen)
{
    if (mlen > 0) {
        memcpy(ls->meta + ls->meta_len, meta, mlen);
    }
    slog_append(&ls->ring, now, cost, ls->meta_len, (uint32_t)mlen);
    ls->meta_len += (uint32_t)mlen;
}

/* ---- RL.TIERS ---------------------------------------------------------- */

bool
keyspace_tiers_reserve(struct store_rec *r)
{
    struct ks_tiers *ts = store_rec_state(r);
    if (ts->st.len < ts->st.cap) {
        return true;
    }
    uint32_t cap = ts->st.cap ? ts->st.cap * 2 : 4;
    struct tier_bucket *b =
        keyspace_realloc(ts->st.b, (size_t)cap * sizeof(*b), r);
    if (b == NULL) {
        return false;
    }
    ts->st.b = b;
    ts->st.cap = cap;
    return true;
}
