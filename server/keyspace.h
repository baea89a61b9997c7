/*
 * keyspace.h - the keys: the one path every change to a key takes (WATCH,
 * the effects the journal and the replicas receive, the expiry wheel),
 * lookup, and the admission of new memory under maxmemory. The databases
 * that hold the keys are keyspace_db.h's (included here); what each
 * type's state is and how it becomes bytes is keytype.h's.
 *
 * Every allocation that grows the keyspace, a new record or a bigger
 * array, goes through keyspace_admit() first, so maxmemory bounds them
 * all, and every such array is counted in keytype_owned_bytes().
 */
#ifndef CELLGATE_KEYSPACE_H
#define CELLGATE_KEYSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/journal.h"
#include "server/keyspace_db.h"
#include "server/keytype.h"
#include "server/multi.h"
#include "server/server.h"
#include "server/store.h"

/* ---- databases --------------------------------------------------------- */

/* The databases themselves, which one is selected and their hash are
 * keyspace_db.h's. keyspace_init() makes database 0 and selects it (-1
 * when out of memory), every store it makes freeing its records through
 * the write path (keyspace_release()); keyspace_teardown() frees them
 * all, as no change to a key. */
int keyspace_init(const unsigned char seed[16], int64_t now);
void keyspace_teardown(void);

/* Swap databases a and b (SWAPDB): their stores change places, so the
 * clients of each see the other's keys. false when out of memory. */
bool keyspace_swap(int a, int b);

/* MEMORY USAGE: the bytes key r holds: its record's slot (key, state,
 * expiry, the name of its wheel slot), its handle in that wheel slot, and
 * the arrays its state owns. */
size_t keyspace_key_bytes(const struct store_rec *r);

/* MOVE: r (a live record of the selected database) becomes the same key
 * with the same state and expiry in database to, where the key must not
 * exist. false (nothing moved) when memory is refused or runs out. */
bool keyspace_move(struct store_rec *r, int to, int64_t now);

/* RENAME: r becomes `key` (in the same database), which is replaced if
 * there; COPY: a copy of r becomes `key` in database to (replaced if
 * there; to may be the selected database when the names differ). Each is
 * one group of effects. RENAME and MOVE hand r's state over as it is (a
 * collection of any size changes hands in O(1), as in Redis); COPY
 * copies it through its encoding. false when memory is refused (nothing changed)
 * or runs out (the replaced key may be gone, as the journal then says).
 * r must not be the record `key` names. */
bool keyspace_rename(struct store_rec *r, const char *key, size_t len,
                     int64_t now);
bool keyspace_copy(struct store_rec *r, int to, const char *key, size_t len,
                   int64_t now);

/* ---- effects: what the journal and the replicas receive -----------------
 *
 * While a sink takes records (srv.journal_on, server/journal.h), a written
 * record is flagged KS_REC_DIRTY and listed once; keyspace_publish() turns
 * each listed record into one JOURNAL_SET of its state at that time, so a
 * key written a thousand times in a loop pass costs one record, then
 * hands the pass's records to every sink side by side. A record is never
 * freed while listed: releasing a dirty record drains the list first. A
 * live key that goes away (DEL, MOVE, eviction, a write that leaves
 * nothing to keep) becomes a JOURNAL_DEL; one that went fresh needs no
 * record, its last state says so. FLUSHDB/FLUSHALL and SWAPDB are one
 * record each; a transaction's effects are one JOURNAL_GROUP, and so are
 * a MOVE's (SET in the new database, DEL in the old) and a DEL's of
 * several keys: a command's effects are all or nothing.
 */
#define KS_REC_DIRTY 1u
void keyspace_journal_mark(struct store_rec *r, int db);

/* List every key of database db (a replica's journal after a full sync:
 * the loaded keys as records). */
void keyspace_journal_mark_all(int db);

/* The pass's effects to the journal and the replicas (see above): once
 * per loop pass before replies are written, and before anything that
 * needs the stream or the file up to date (a fork, WAIT, closing the
 * journal). */
void keyspace_publish(void);

/* The effects between these two (a transaction's, a script's) reach a
 * restart or a replica together or not at all. */
void keyspace_group_begin(void);
void keyspace_group_end(void);

/* redis.set_repl(): the effects from now on reach only the journal file
 * (bit 0), the replicas (bit 1), both (JOURNAL_TO_ALL, the default) or
 * neither, as Redis's REPL_AOF, REPL_REPLICA, REPL_ALL and REPL_NONE. */
void keyspace_journal_sinks(unsigned to);

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

/* ---- writes: the one path ----------------------------------------------
 *
 * Every change to a key goes through the keyspace: the functions below,
 * keyspace_add(), keyspace_move(), keyspace_flush(), keyspace_swap(),
 * keyspace_expire() (the wheel) and eviction (keyspace_admit()), and on a
 * replica or at start-up keyspace_apply_record(). Each one tells the
 * transactions watching the key (a replica's too), lists it for the
 * effects the journal and the replicas receive, and keeps the timer wheel
 * right, so a new command or type cannot forget one of them. `make check-deps` keeps
 * every other module off the store's write functions (keyspace_db.c only
 * makes, swaps and frees the stores; keyspace_apply.c puts restored keys
 * in). A handler that
 * writes a state in place (store_rec_state()) says so with
 * keyspace_written() or keyspace_set_expire().
 */

/* r, the key just looked up through h (NULL when absent: then a new key
 * of type is added, admitted under maxmemory), ready for its new state.
 * NULL when there is no room: the caller answers -OOM (ERR_OOM). */
struct store_rec *keyspace_upsert(const struct key_hint *h, const char *key,
                                  size_t len, struct store_rec *r,
                                  uint8_t type);

/* r's state was written in place and its expiry is now expire_at (the
 * Unix ms it lives through; STORE_NEVER: none), in the selected
 * database. Returns r, or the record that replaced it: a KEY_INT whose
 * value leaned on its old expiry and needs 8 bytes now (keytype.h); NULL
 * when memory ran out for that (r unchanged: the caller answers -OOM).
 * Use the record returned, never r, after the call. */
struct store_rec *keyspace_set_expire(struct store_rec *r,
                                      int64_t expire_at);

/* A limiter state written in place, kept until fresh_at (ns), or the key
 * dropped when fresh_at <= now (its state equals "no key"). */
void keyspace_keep_until(struct store_rec *r, int64_t fresh_at, int64_t now);

/* DEL of r, a live key of the selected database. */
void keyspace_delete(struct store_rec *r);

/* DEL of key in database db; false when it was not there. */
bool keyspace_delete_key(int db, const char *key, size_t len, int64_t now);

/* The expiry (ms) of a limiter state fresh at fresh_at (ns): it lives
 * through the millisecond it goes fresh in, so it never dies before. */
int64_t keyspace_fresh_ms(int64_t fresh_at);

/* From cron: free at most budget keys of database db whose expiry has
 * come (the wheel); true while more are due. */
bool keyspace_expire(int db, int64_t now, size_t budget);

/* FLUSHDB (db) or FLUSHALL (-1): every key of it gone, as one journal
 * record. */
void keyspace_flush(int db);


/* PTTL of a record (ms; -1 = no expiry): for CL.THROTTLE keys as Redis
 * reports it for the key redis-cell writes, for RL.* keys the time until
 * the state is fresh again, rounded up. */
int64_t keyspace_redis_pttl(const struct store_rec *r, int64_t now_ns);

/* ---- hash slots: a cluster's keys by slot -------------------------------
 *
 * Redis Cluster's slot migration counts, lists and drops the keys of one
 * hash slot (lib/keyslot.h) of database 0, the one a cluster has: through
 * an index of database 0's store (store.h, "the per-slot index"), off
 * until keyspace_slots_enable() (cluster setup, before data is loaded).
 * Other databases are never indexed; after a SWAPDB with database 0 the
 * index is that of the store now there. Dead keys not yet collected count,
 * as in Redis.
 */
void keyspace_slots_enable(void);

/* Is the index there (not when memory ran out enabling it)? */
bool keyspace_slots_on(void);

/* Keys of slot in database 0 (0 while the index is off). */
uint64_t keyspace_slot_count(unsigned slot);

/* cb on up to max keys of slot, newest first; returns how many. cb must
 * not change the keyspace. O(keys visited). */
size_t keyspace_slot_keys(unsigned slot, size_t max,
                          void (*cb)(const char *key, size_t len, void *arg),
                          void *arg);

/* Every key of slot deleted, each as a DEL of it: WATCH, the journal and
 * the replicas hear (keyspace_release()), a live key publishes "del", one
 * dead already "expired". Returns how many went. */
size_t keyspace_slot_delete(unsigned slot, int64_t now);

/* ---- lookup and admission -------------------------------------------- */

/* The live record for key, through h (store.h's key hint: the connection
 * layer fills it from its prefetch, else it is filled here, so a lookup
 * and the add after it hash the key once). keyspace_lookup() is a read's
 * and counts a keyspace hit or miss (INFO), keyspace_lookup_write() a
 * write's and does not, as Redis's lookupKeyRead() and lookupKeyWrite(). */
struct store_rec *keyspace_lookup(struct key_hint *h, const char *key,
                                  size_t len, int64_t now);
struct store_rec *keyspace_lookup_write(struct key_hint *h, const char *key,
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

/* ---- strings ----------------------------------------------------------
 *
 * A string write replaces the key's value, as Redis's setKey() does: a new
 * key, or r (the key looked up through h, of any type) holding the new
 * bytes, its expiry kept as it was (a SET then sets or drops it). They
 * tell the watchers and the journal. NULL when there is no room (-OOM):
 * then nothing changed.
 */
struct store_rec *keyspace_set_string(const struct key_hint *h,
                                      const char *key, size_t len,
                                      struct store_rec *r, const char *val,
                                      size_t vlen);
struct store_rec *keyspace_set_int(const struct key_hint *h, const char *key,
                                   size_t len, struct store_rec *r,
                                   int64_t v);

/* What a new string key of these lengths takes at most (admission). */
size_t keyspace_string_bytes(size_t keylen, size_t vlen);

/* A KEY_STR r of more than KS_STR_INLINE bytes made newlen bytes long (>=
 * its length; the new ones zero), its block grown as Redis grows one;
 * its bytes, or NULL when refused (nothing changed). The caller writes
 * them, then calls keyspace_string_written(). */
#define KS_GROW_STEP ((size_t)1 << 20)
char *keyspace_string_grow(struct store_rec *r, size_t newlen);

/* Bytes [off, off + n) of such a long string were written in place: the
 * watchers hear, and the journal and the replicas get just those bytes
 * (a JOURNAL_ELEM of KS_ELEM_RANGE), unless the key's whole state is
 * listed already. */
#define KS_ELEM_RANGE 1
void keyspace_string_written(struct store_rec *r, size_t off, size_t n);

/* ---- collections: lists, hashes, sorted sets --------------------------
 *
 * A collection's state is its type's struct (keytype.h: struct qlist,
 * struct hmap, struct zset of lib/), written in place by the handlers
 * through its module's functions. Growth is admitted first, as a new
 * key is: keyspace_coll_admit() before an insert. A write that changes a
 * few elements reaches the journal and the replicas as that change, an
 * element effect (JOURNAL_ELEM of the type's op, its payload built by the
 * type's module), so a big collection is not written whole per command:
 *
 *     struct membuf *b = keyspace_elem_begin(r);
 *     ... change the collection ...
 *     if (b != NULL && zset_effect_add(b, member, mlen, score))
 *         keyspace_elem_end(r, ZSET_OP_ADD);
 *     else if (b != NULL) keyspace_written(r);    (no memory: whole key)
 *
 * A write that is simpler to carry whole calls keyspace_written(r). Either
 * way, keyspace_coll_done() after the write drops a collection left empty
 * (Redis keeps no empty collection).
 */

/* A new empty collection of type for key (just looked up through h and
 * absent), admitted with `need` more bytes for what the caller is about
 * to insert. NULL when there is no room (-OOM). */
struct store_rec *keyspace_coll_add(const struct key_hint *h, const char *key,
                                    size_t len, uint8_t type, size_t need);

/* May collection r grow by about `need` bytes (maxmemory)? r is never
 * evicted for it. */
bool keyspace_coll_admit(const struct store_rec *r, size_t need);

/* Collection r (of the selected database) is about to change by an
 * element op: the watchers hear of it. Returns an empty buffer for the
 * op's payload, or NULL when none is wanted (no sink takes records, or
 * r's whole state is listed already). */
struct membuf *keyspace_elem_begin(struct store_rec *r);

/* The payload built in keyspace_elem_begin()'s buffer, as op's effect. */
void keyspace_elem_end(struct store_rec *r, uint8_t op);

/* After a write to collection r: deleted when it holds nothing, and its
 * "del" published (notify.h: the caller published its own event first,
 * as Redis orders them). true when it was (r is gone). */
bool keyspace_coll_done(struct store_rec *r);

/* A collection's whole new state (ZUNIONSTORE, ZRANGESTORE...): key, looked
 * up through h, becomes a collection of `type` holding `state` (its
 * type's struct, whose owned memory the caller built), replacing r (the
 * key's record of any type, or NULL) and its expiry, as Redis's setKey().
 * The watchers hear, the journal gets the whole state. NULL when there is
 * no room for the record: then nothing changed and state is the
 * caller's to free. */
struct store_rec *keyspace_set_coll(const struct key_hint *h, const char *key,
                                    size_t len, struct store_rec *r,
                                    uint8_t type, const void *state);

/* A fixed-size limiter state into r (or a new record of type for key)
 * until fresh_at, or the key dropped when fresh_at <= now. false when
 * there is no room. */
bool keyspace_store_state(const struct key_hint *h, const char *key,
                          size_t len, struct store_rec *r, uint8_t type,
                          const void *state, size_t size, int64_t fresh_at,
                          int64_t now);

/*
 * May the keyspace take `need` more bytes? Always, without maxmemory.
 * Otherwise when used memory (less what it does not count, see
 * keyspace_set_not_counted()) plus need stays within it; else, under
 * volatile-ttl, by evicting the keys closest to fresh (never `keep`, the
 * record being grown), at most KS_EVICT_PER_CALL of them per call. Nothing
 * is evicted when all the evictable memory could not make the room: then,
 * as with noeviction, the answer is no. When eviction makes progress but
 * the per-call bound stops it short, the answer is yes, as Redis lets a
 * command run while its eviction is still under way; keyspace_cron()
 * carries on.
 */
#define KS_EVICT_PER_CALL 1024
bool keyspace_admit(size_t need, const struct store_rec *keep);

/* The memory maxmemory does not count, as Redis's
 * freeMemoryGetNotCountedMemory(): the replicas' output buffers and the
 * journal's buffer, which a lagging replica or disk would otherwise turn
 * into evictions or -OOM. Their owners sit above the keyspace, so the
 * figure is handed down: before each batch of requests and before the
 * cron's evictions (conn_note_not_counted()), as Redis takes it once
 * before each command. The buffer of the pass's effect records on their
 * way to both (journal_buffer_memory(), Redis's propagated commands) is
 * not counted either: the keyspace reads that itself, as it grows. */
void keyspace_set_not_counted(size_t bytes);

/* While a script runs: memory is admitted past maxmemory when eviction
 * cannot make room, as Redis checks maxmemory once, before a command (the
 * script), and never halfway through it (script.h). */
void keyspace_admit_past_maxmemory(bool on);

/* mem_realloc for an array a key owns: admitted first (keep = its record),
 * counted in keytype_owned_bytes(). NULL (p untouched) when refused or
 * out of memory. */
void *keyspace_realloc(void *p, size_t size, const struct store_rec *keep);

/* From cron: continue evicting while used memory is over maxmemory under
 * volatile-ttl (at most `budget` keys). */
void keyspace_cron(size_t budget);


/* ---- RL.LOG and RL.TIERS state --------------------------------------- */

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

/* ---- restoring: keyspace_apply.c ------------------------------------ */

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

/* Room for n keys in database db before a load puts them there (an RDB
 * file's RESIZEDB): store_reserve(). */
void keyspace_reserve(int db, size_t n);

/* Put a collection read from a Redis RDB file (server/rdb/load.c) into
 * database db as a new key: state is its type's struct, which the record
 * owns from then on (0). 1 when the key is already expired at now (state
 * still the caller's), -1 with err ("duplicate key", "out of memory"). */
int keyspace_restore_coll(int db, uint8_t type, const char *key,
                          size_t keylen, int64_t expire_at, const void *state,
                          int64_t now, char *err, size_t errlen);

/* For keyspace_apply.c: while on, the deletions, flushes and swaps made
 * write no effect record (keyspace_apply_record() is replaying one). */
void keyspace_applying(bool on);

#endif
