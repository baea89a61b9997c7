/*
 * keyspace.h - limiter keys: the type tag of each store record, the state
 * each type keeps, how that state is written out and read back, and the
 * admission of new memory under maxmemory.
 *
 * A record's state is fixed-size for CL.THROTTLE, GCRA, RL.FIXED,
 * RL.SLIDING and INCREX (copied as it is), and a small header pointing at
 * arrays for RL.LOG and RL.TIERS (struct ks_log, struct ks_tiers), whose
 * arrays grow with use. Every allocation that grows the keyspace, a new
 * record or a bigger array, goes through keyspace.c's admission
 * (keyspace_admit()) first, so maxmemory bounds them all, and every such
 * array is counted in keyspace_owned_bytes().
 */
#ifndef CELLGATE_KEYSPACE_H
#define CELLGATE_KEYSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/increx.h"
#include "algorithms/sliding_log.h"
#include "algorithms/tiers.h"
#include "server/multi.h"
#include "server/server.h"
#include "server/store.h"

enum key_type {
    KEY_GCRA = 1,   /* CL.THROTTLE: struct ks_gcra */
    KEY_FIXED,      /* RL.FIXED: struct fwin_state */
    KEY_SLIDING,    /* RL.SLIDING: struct swin_state */
    KEY_LOG,        /* RL.LOG: struct ks_log */
    KEY_TIERS,      /* RL.TIERS: struct ks_tiers */
    KEY_REDIS_GCRA, /* GCRA (Redis's command): struct ks_redis_gcra */
    KEY_COUNTER     /* INCREX: struct ks_counter, a Redis string */
};
#define KEY_TYPE_FIRST KEY_GCRA
#define KEY_TYPE_LAST KEY_COUNTER

/* Types whose expiry is a Redis key's, to the millisecond: they live
 * through the millisecond they expire at (PTTL, TTL as Redis). */
static inline bool
keyspace_redis_expiry(uint8_t type)
{
    return type == KEY_GCRA || type == KEY_REDIS_GCRA || type == KEY_COUNTER;
}

struct ks_gcra {
    uint64_t tat;   /* ns since the epoch, as redis-cell stores it */
};

/* An INCREX counter (struct increx_value) as a record keeps it: record
 * states are 8-byte aligned and a long double wants 16, so its bytes are
 * copied in and out (keyspace_counter_get/put), never read in place. */
struct ks_counter {
    int64_t i;
    uint8_t is_float;
    unsigned char f[sizeof(long double)];
};

static inline void
keyspace_counter_get(const struct store_rec *r, struct increx_value *v)
{
    const struct ks_counter *k = store_rec_state((struct store_rec *)r);
    v->i = k->i;
    v->is_float = k->is_float != 0;
    memcpy(&v->f, k->f, sizeof(v->f));
}

static inline void
keyspace_counter_put(struct store_rec *r, const struct increx_value *v)
{
    struct ks_counter *k = store_rec_state(r);
    k->i = v->i;
    k->is_float = v->is_float;
    memcpy(k->f, &v->f, sizeof(k->f));
}

/* Redis's GCRA keeps its TAT in µs (>= 0) and is a type of its own: its
 * keys answer WRONGTYPE to CL.THROTTLE and GET, as in Redis, and TYPE
 * says "gcra" for both. */
struct ks_redis_gcra {
    int64_t tat_us;
};

/*
 * RL.LOG: a ring of entries and an arena of their META bytes. The log
 * keeps its entries for keep_ms, the longest window of a call that changed
 * it (see sliding_log.h); the record lives until its newest entry leaves
 * that window. Bounds, so one key's memory is bounded too: at most
 * KS_LOG_ENTRIES_MAX entries of at most KS_META_MAX META bytes each, and
 * the arena at most twice its live bytes (KS_LOG_META_CAP_MAX).
 */
#define KS_META_MAX 1024
#define KS_LOG_ENTRIES_MAX 1000000
#define KS_LOG_META_CAP_MAX                                                   \
    ((uint64_t)2 * ((uint64_t)KS_LOG_ENTRIES_MAX * KS_META_MAX + KS_META_MAX))
_Static_assert(KS_LOG_META_CAP_MAX <= UINT32_MAX,
               "META offsets are 32-bit: the arena bound must fit");

struct ks_log {
    struct slog_ring ring;      /* ring.e: mem_malloc'd */
    char *meta;                 /* META bytes of the entries, mem_malloc'd */
    uint32_t meta_len;          /* bytes of the arena in use (live or not) */
    uint32_t meta_cap;
    int64_t keep_ms;            /* retention, >= 1000 while the key lives */
};

/* RL.TIERS: per-second buckets, kept for `keep` seconds (the largest
 * window of a call that changed the key). */
struct ks_tiers {
    struct tier_state st;       /* st.b: mem_malloc'd */
    int64_t keep;               /* retention in s, >= 1 while the key lives */
};

/* ---- databases --------------------------------------------------------- */

/* The databases (SELECT): srv.ndbs stores, each created when first used,
 * all hashing with srv.seed so a key hashes alike in each. Commands use
 * srv.store, the selected one. keyspace_init() makes database 0 and
 * selects it (-1 when out of memory); keyspace_teardown() frees them all. */
int keyspace_init(const unsigned char seed[16], int64_t now);
void keyspace_teardown(void);

/* Database i (0 <= i < srv.ndbs), made when first asked for; NULL when out
 * of memory. */
struct store *keyspace_db(int i);

/* Make database i the one commands use (srv.store, srv.db); false when it
 * could not be made. */
bool keyspace_select(int i);

/* Swap databases a and b (SWAPDB): their stores change places, so the
 * clients of each see the other's keys. false when out of memory. */
bool keyspace_swap(int a, int b);

/* Keys in every database. */
size_t keyspace_total_keys(void);

/* The stores' counters summed over every database (INFO, metrics, the
 * snapshot's count of changes). */
struct ks_totals {
    size_t keys;
    size_t volatile_keys;
    uint64_t expired;
    uint64_t evicted;
    uint64_t changes;
    size_t rehash_overhead;
};
void keyspace_totals(struct ks_totals *t);

/* MEMORY USAGE: the bytes key r holds: its record's slot (key, state,
 * expiry, timer links) and the arrays its state owns. */
size_t keyspace_key_bytes(const struct store_rec *r);

/* MOVE: r (a live record of the selected database) becomes the same key
 * with the same state and expiry in database to, where the key must not
 * exist. false (nothing moved) when memory is refused or runs out. */
bool keyspace_move(struct store_rec *r, int to, int64_t now);

/* ---- the journal's view of writes --------------------------------------
 *
 * While the journal is on, a written record is flagged KS_REC_DIRTY and
 * listed once; keyspace_journal_drain() turns each listed record into one
 * JOURNAL_SET of its state at that time, so a key written a thousand times
 * between two drains costs one record. A record is never freed while
 * listed: releasing a dirty record drains the list first. A live key that
 * goes away (DEL, MOVE, eviction, a write that leaves nothing to keep)
 * becomes a JOURNAL_DEL; one that went fresh needs no record, its last
 * state says so. FLUSHDB/FLUSHALL and SWAPDB are one record each.
 */
#define KS_REC_DIRTY 1u
void keyspace_journal_mark(struct store_rec *r, int db);

/* Start (after loading) or stop (before exit) journaling writes; stopping
 * drops the list (the caller drained it). */
void keyspace_journal_enable(bool on);

/* List every key of database db (a replica's journal after a full sync:
 * the loaded keys as records). */
void keyspace_journal_mark_all(int db);

/* Every listed record into the journal's buffer (journal.h). false when
 * the buffer ran out of memory. */
bool keyspace_journal_drain(int64_t now);

/* A command wrote r's state or expiry in place (in the selected database):
 * the transactions watching the key hear of it, and the journal lists it
 * (one test each when neither is on). */
static inline void
keyspace_written(struct store_rec *r)
{
    if (srv.watched_keys != 0) {
        multi_touch(srv.db, store_rec_key(r), store_rec_keylen(r));
    }
    if (srv.journal_on) {
        keyspace_journal_mark(r, srv.db);
    }
}

/* FLUSHDB (db) or FLUSHALL (-1): every key of it gone, as one journal
 * record. */
void keyspace_flush(int db);

/* TYPE's answer for a record type ("none" for an unknown one). */
const char *keyspace_type_name(uint8_t type);

/* PTTL of a record (ms; -1 = no expiry): for CL.THROTTLE keys as Redis
 * reports it for the key redis-cell writes, for RL.* keys the time until
 * the state is fresh again, rounded up. */
int64_t keyspace_redis_pttl(const struct store_rec *r, int64_t now_ns);

/* ---- lookup and admission -------------------------------------------- */

/* The live record for key, through h (store.h's key hint: the connection
 * layer fills it from its prefetch, else it is filled here, so a lookup
 * and the add after it hash the key once).
 * Counts keyspace hits and misses (INFO). */
struct store_rec *keyspace_lookup(struct key_hint *h, const char *key,
                                  size_t len, int64_t now);

/* Add key (just looked up through h and absent) as a new key of `type`,
 * within maxmemory (keyspace_admit). NULL when there is no room or no
 * memory: the caller answers -OOM (ERR_OOM). */
struct store_rec *keyspace_add(const struct key_hint *h, const char *key,
                               size_t len, uint8_t type, size_t state_size);

/* A GCRA decision written back as redis-cell writes it (StringSet, then
 * PEXPIRE ttl_ms; -1 = no expiry): into r, or a new KEY_GCRA record for
 * key (looked up through h) when r is NULL. false when there is no room:
 * the caller answers -OOM. */
bool keyspace_store_gcra(const struct key_hint *h, const char *key,
                         size_t len, struct store_rec *r, uint64_t tat,
                         int64_t ttl_ms, int64_t now);

/* A fixed-size limiter state into r (or a new record of type for key)
 * until fresh_at, or the key dropped when fresh_at <= now. false when
 * there is no room. */
bool keyspace_store_state(const struct key_hint *h, const char *key,
                          size_t len, struct store_rec *r, uint8_t type,
                          const void *state, size_t size, int64_t fresh_at,
                          int64_t now);

/* From cron: continue evicting while used memory is over maxmemory under
 * volatile-ttl (at most `budget` keys). */
void keyspace_cron(size_t budget);

/* Bytes of the arrays RL.LOG and RL.TIERS keys own (malloc's usable
 * sizes): what evicting them would give back, besides their records. */
size_t keyspace_owned_bytes(void);

/* ---- RL.LOG and RL.TIERS state --------------------------------------- */

/* When a log or tiers record becomes fresh: its newest entry's departure
 * from the retention window (saturating), or `now` when it holds none. */
int64_t keyspace_log_fresh_at(const struct ks_log *ls, int64_t now);
int64_t keyspace_tiers_fresh_at(const struct ks_tiers *ts, int64_t now);

/* Room for one more entry with mlen META bytes in r's log (whose call
 * counts p): grows the ring up to log-max-entries or, at that bound,
 * drops the oldest entries p does not count; grows or compacts the arena.
 * false (nothing appended, the log unchanged but for dropped entries) when
 * memory is refused. Requires an allowed request: then p counts fewer than
 * limit <= log-max-entries entries, so the bound leaves room. */
bool keyspace_log_reserve(struct store_rec *r, const struct slog_params *p,
                          int64_t now, size_t mlen, int64_t max_entries);

/* Append an accepted request (after keyspace_log_reserve()). */
void keyspace_log_append(struct ks_log *ls, int64_t now, int64_t cost,
                         const char *meta, size_t mlen);

/* Room for one more bucket in r's tiers (doubling, admitted). */
bool keyspace_tiers_reserve(struct store_rec *r);

/* ---- encoding ---------------------------------------------------------- */

/* A growable byte buffer (mem_malloc'd). */
struct ks_buf {
    unsigned char *p;
    size_t len;
    size_t cap;
};

/* A bounds-checked reader over stored bytes. */
struct ks_reader {
    const unsigned char *p;
    size_t left;
};

/* Copy the next n bytes to out; false (nothing read) if fewer remain. */
static inline bool
ks_read(struct ks_reader *r, void *out, size_t n)
{
    if (r->left < n) {
        return false;
    }
    if (n > 0) {
        memcpy(out, r->p, n);
    }
    r->p += n;
    r->left -= n;
    return true;
}

/* Encodings: the first version, and today's (RL.TIERS keeps its retention;
 * RL.LOG and RL.TIERS hold only what is live at the time of writing). */
#define KS_ENCODING_V1 1
#define KS_ENCODING 2

/*
 * Append r's state at `now` to b: the one function that turns a key's
 * state into bytes, for every consumer that carries state (the snapshot,
 * the journal's and the replication stream's records, MOVE). Fixed-size states are written as they are; a log or tiers state
 * holds only the entries or buckets the key still keeps at now, in time
 * order, so the bytes are the same whenever a call happened to expire
 * them. false when memory runs out.
 *
 *   gcra, fixed, sliding: the struct
 *   log:   keep_ms i64, n u32, n x (t_ms i64, cost i64, meta_len u32),
 *          then the META bytes of the entries, oldest first;
 *   tiers: keep i64, n u32, n x (sec i64, count i64).
 * Host byte order: the bytes are read back by the same build.
 */
bool keyspace_encode(const struct store_rec *r, int64_t now,
                     struct ks_buf *b);

/* Apply one effect record (journal.h) read from the journal at start-up
 * or from a primary's replication stream: the key's new state, its
 * deletion, a flush, a swap. Nothing of it is journaled again here.
 * 0, or -1 with err. */
struct journal_record;
int keyspace_apply_record(const struct journal_record *rec, int64_t now,
                          char *err, size_t errlen);

/* Put a key read back from disk into database db: a snapshot record
 * (replace false: the key must be new) or a journal record (replace true:
 * it supersedes the key). State in the given encoding; a key already
 * fresh at now is dropped. 0, or -1 with err ("duplicate key", "malformed
 * gcra state", "out of memory", ...). */
int keyspace_restore(int db, uint8_t type, const char *key, size_t keylen,
                     int64_t expire_at, const unsigned char *state,
                     size_t state_len, int encoding, bool replace,
                     int64_t now, char *err, size_t errlen);

#endif
