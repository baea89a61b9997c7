/*
 * store.h - the key table: binary-safe key -> record of any type
 * (keytype.h), one per database (keyspace_db.h).
 *
 * A chained hash table with a keyed hash (SipHash, random seed per process)
 * and incremental rehashing in both directions: no call ever moves the whole
 * table at once. Records live in slabs and link to each other by 32-bit
 * handles; the timer wheel holds the handles of the records with an
 * expiry in arrays, and a record keeps only the name of the wheel slot it
 * is placed in, so one packed 15-byte header holds the chain link, the
 * type tag and a bit of the caller's, that slot's name, the key length
 * and the expiry; the key bytes follow, then the algorithm state (packed
 * right after the key when it is under 8 bytes, else 8-aligned). A
 * CL.THROTTLE key of 16 bytes with its TAT in 4 bytes (keytype.h) is one
 * 35-byte slot and 4 bytes in a wheel slot.
 *
 * Expiry: a record's expire_at is a Redis key's: the Unix time in ms it
 * lives through, dead once the clock's millisecond is past it, any value a
 * client may set (up to INT64_MAX ms, as Redis allows; a nanosecond clock
 * would end in 2262). store_lookup() checks that lazily on every access
 * (correctness); the wheel removes dead records in the background via
 * store_expire() (memory), never before they are dead. Times passed in
 * (`now`) are wall-clock ns, as the limiters read them; nothing here reads
 * a clock.
 */
#ifndef CELLGATE_STORE_H
#define CELLGATE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/time.h"
#include "server/wheel.h"

/* expire_at of a record without expiry: below every time a record may
 * hold (a key set to expire in the past is gone at once, never stored). */
#define STORE_NEVER INT64_MIN
#define STORE_LONG_KEY UINT8_MAX    /* keylen8: a uint32_t length leads */
#define STORE_TYPE_MAX 15           /* the type tag is 4 bits */
/* States of fewer bytes than this are packed: stored right after the key,
 * unaligned, and read with memcpy; larger ones start 8-aligned. */
#define STORE_PACKED_BELOW 8

/*
 * A record: a 15-byte header, the key, then the state. Records lie at any
 * byte in their slab (size classes 1 byte apart where keys are short), so
 * the header is packed and every field is read unaligned; a state of
 * STORE_PACKED_BELOW bytes or more starts 8-aligned (padding after the
 * key, the record's size a multiple of 8), as the types keep structs there.
 */
struct __attribute__((packed)) store_rec {
    uint32_t hnext;             /* hash chain: handle of the next record */
    uint16_t type : 4;          /* algorithm tag, owned by the caller */
    uint16_t flags : 1;         /* a bit the caller owns, 0 when added */
    uint16_t packed : 1;        /* the state is packed (see above) */
    uint16_t timer : WHEEL_TAG_BITS; /* its wheel slot's name (wheel.h) */
    uint8_t keylen8;            /* key length, or STORE_LONG_KEY */
    int64_t expire_at;          /* Unix ms; STORE_NEVER = persistent */
    /* The key (after its uint32_t length when keylen8 is STORE_LONG_KEY),
     * then the state. */
    unsigned char data[];
};
_Static_assert(4 + WHEEL_TAG_BITS + 1 + 1 == 16, "type..timer fill 16 bits");

static inline size_t
store_rec_keylen(const struct store_rec *r)
{
    uint32_t len;

    if (r->keylen8 != STORE_LONG_KEY) {
        return r->keylen8;
    }
    __builtin_memcpy(&len, r->data, sizeof(len));
    return len;
}

static inline const char *
store_rec_key(const struct store_rec *r)
{
    return (const char *)r->data
           + (r->keylen8 == STORE_LONG_KEY ? sizeof(uint32_t) : 0);
}

/* Bytes of data[] the key takes (with its length, for a long key). */
static inline size_t
store_key_space(size_t keylen)
{
    return keylen + (keylen >= STORE_LONG_KEY ? sizeof(uint32_t) : 0);
}

/* Bytes between the end of the key and an aligned state. */
static inline size_t
store_state_pad(size_t key_space)
{
    return (0 - (sizeof(struct store_rec) + key_space)) & 7;
}

/* Is r's state packed (fewer than STORE_PACKED_BELOW bytes, unaligned)? */
static inline bool
store_rec_packed(const struct store_rec *r)
{
    return r->packed;
}

static inline void *
store_rec_state(struct store_rec *r)
{
    size_t ks = r->keylen8;
    if (ks == STORE_LONG_KEY) {
        ks = store_key_space(store_rec_keylen(r));
    }
    return r->data + ks + (r->packed ? 0 : store_state_pad(ks));
}

/* Is r dead at now (wall-clock ns)? Redis's rule: once the millisecond
 * is past expire_at. */
static inline bool
store_rec_dead(const struct store_rec *r, int64_t now)
{
    return r->expire_at != STORE_NEVER && now / NS_PER_MS > r->expire_at;
}

/* An expiry as files before ms expiry kept it (wall-clock ns the record
 * was dead from; INT64_MAX none) as the ms it lives through: the last
 * whole ms before it, so it is never dead later than it was. */
static inline int64_t
store_expiry_from_ns(int64_t ns)
{
    if (ns == INT64_MAX) {
        return STORE_NEVER;
    }
    return ns / NS_PER_MS + (ns % NS_PER_MS > 0) - 1;
}

struct store;

/* seed: 16 random bytes for the keyed hash. now: wall-clock ns. */
struct store *store_create(const unsigned char seed[16], int64_t now);
void store_destroy(struct store **s);

/* Called on every record just before the store frees it (removal,
 * expiry, flush, destroy), so state that owns memory can release it; arg
 * is the one given with it (which database the store is, say). */
typedef void (*store_release_fn)(struct store_rec *r, void *arg);
void store_set_release(struct store *s, store_release_fn fn, void *arg);

/* A replica of a Redis primary (repl/replica.c sets it while it follows
 * one): a dead record a lookup meets is reported absent but kept, and the
 * keyspace's wheel frees none (keyspace_expire()), for only the primary's
 * DEL removes a key, as on Redis's replicas. The primary's own commands
 * look up at time 0 (they find every key the primary saw). */
extern bool store_keep_dead;

/* The live record for key, or NULL. A dead record met here is removed
 * (but under store_keep_dead). */
struct store_rec *store_lookup(struct store *s, const void *key, size_t keylen,
                               int64_t now);

/* store_lookup() with the key's hash already known (from
 * store_prefetch_bucket() or store_key_hash()). A hash of another key only
 * makes it miss. */
struct store_rec *store_lookup_hashed(struct store *s, const void *key,
                                      size_t keylen, uint64_t hash,
                                      int64_t now);

/* Warm the cache for lookups coming soon (hints; nothing changes): fetch
 * the key's bucket and return its hash; later, once the bucket is in
 * cache, fetch the first record of its chain. */
uint64_t store_prefetch_bucket(struct store *s, const void *key,
                               size_t keylen);
void store_prefetch_hash(struct store *s, uint64_t hash);  /* the bucket */
void store_prefetch_record(struct store *s, uint64_t hash);

/* Add a record for a key that store_lookup() just reported absent. The state
 * is zeroed (packed when state_size < STORE_PACKED_BELOW) and the record
 * has no expiry. NULL if memory ran out, keylen or state_size are too
 * large, or type is above STORE_TYPE_MAX. */
struct store_rec *store_add(struct store *s, const void *key, size_t keylen,
                            uint8_t type, size_t state_size);

/* A key's hash when already known, carried from the connection layer's
 * prefetch of pipelined requests to the lookup and the add of the same
 * key, so it is computed once. */
struct key_hint {
    bool valid;
    uint64_t hash;
};

/* The hash store_lookup() and store_add() use for a key, so a caller that
 * looks up and then adds the same key computes it once. */
uint64_t store_key_hash(const struct store *s, const void *key,
                        size_t keylen);

/* store_add() with hash = store_key_hash(key): it must be this key's. */
struct store_rec *store_add_hashed(struct store *s, const void *key,
                                   size_t keylen, uint64_t hash,
                                   uint8_t type, size_t state_size);

/* Set the ms r lives through (STORE_NEVER: no expiry). The wheel entry is
 * moved only when the new time is earlier than the old one; a later time
 * is picked up when the wheel reaches the old one (lazy re-arm). */
void store_set_expire(struct store *s, struct store_rec *r, int64_t expire_at);

/* Remove and free r. */
void store_remove(struct store *s, struct store_rec *r);

/* Number of records (live, plus dead ones not yet collected). */
size_t store_size(const struct store *s);

/* Room for n records before a load adds them (an RDB file's RESIZEDB, as
 * Redis's dictExpand()): the table grows to its size for n at once, so
 * it is not doubled and rehashed step by step under the load, nor shrunk
 * while the load fills it (until the next store_cron()). Only an empty,
 * idle table grows this way (anything else keeps its own pace); a failed
 * allocation changes nothing. */
void store_reserve(struct store *s, size_t n);

/* A record drawn at random, as Redis's dictGetRandomKey draws one (a
 * random non-empty bucket, then a random record of its chain: not every
 * record equally likely, but no walk); dead ones too. NULL when empty. */
struct store_rec *store_random(struct store *s);

/* A store's counters, for the readers that want several at once (INFO,
 * metrics, MEMORY STATS, the snapshot's count of changes). */
struct store_usage {
    size_t keys;                /* store_size() */
    size_t volatile_keys;       /* with an expiry (INFO keyspace "expires") */
    uint64_t expired;           /* dead records removed since creation, by
                                   lookups or by the wheel */
    uint64_t evicted;           /* records evicted since creation */
    uint64_t changes;           /* writes (expiry set, removal, flush): a
                                   cheap "dirty" counter */
    size_t rehash_overhead;     /* bytes of the bucket array being drained
                                   while the table grows or shrinks (0 when
                                   no rehash runs): INFO's
                                   mem_overhead_db_hashtable_rehashing, as
                                   in Redis 7.4 */
    size_t table_bytes;         /* of the hash table's bucket arrays (both
                                   while rehashing) */
};
struct store_usage store_usage(const struct store *s);

/* Add s's counters to *sum (keyspace_totals() over the databases). */
void store_usage_add(struct store_usage *sum, const struct store *s);

/* The average time left at now (ns) of the records with an expiry, in ms
 * (INFO keyspace "avg_ttl"), as Redis estimates it: from a sample (of
 * AVG_TTL_SAMPLE keys with an expiry; all of them in a smaller store). 0
 * when none. */
int64_t store_avg_ttl(struct store *s, int64_t now);

/* Evict one of the records closest to their expiry (volatile-ttl), never
 * `keep` (may be NULL); false when no other record has an expiry. */
bool store_evict_soonest(struct store *s, const struct store_rec *keep);

/* Bytes the records take: their slots and the blocks of big records (not
 * what their states own, nor the hash table). What eviction may win back,
 * read on its own. */
size_t store_bytes(const struct store *s);

/* Bytes record r takes: its slab slot (or its block and the slot pointing
 * at it) and, while it is on the wheel, its handle there; state_size is
 * its state's (the store does not keep it). */
size_t store_rec_bytes(const struct store *s, const struct store_rec *r,
                       size_t state_size);

/* Remove every record. */
void store_flush(struct store *s);

/* Collect records dead at `now` through the wheel, at most `budget` timer
 * firings. Returns the number of records removed. */
size_t store_expire(struct store *s, int64_t now, size_t budget);

/* True while store_expire(now) has timer work left over. */
bool store_expire_pending(const struct store *s, int64_t now);

/* Background upkeep: a bounded number of incremental rehash steps (grow or
 * shrink). Returns true while a rehash is still in progress. */
bool store_cron(struct store *s, size_t steps);

/* Reverse-binary cursor scan (as Redis's dictScan): calls fn for the records
 * in one bucket (of both tables while rehashing) and returns the next
 * cursor, 0 when the scan is complete. Survives resizes; may report a
 * record twice but never misses one that lived throughout. */
typedef void (*store_scan_fn)(struct store_rec *r, void *arg);
uint64_t store_scan(struct store *s, uint64_t cursor, store_scan_fn fn,
                    void *arg);

/* ---- the per-slot index (see store.c, "Slots") ------------------------
 *
 * Off until store_slots_enable(): then every record is on the list of its
 * key's hash slot (lib/keyslot.h, 0 .. KEYSLOT_SLOTS - 1), dead ones not
 * yet collected included, as Redis counts them, at 8 bytes a record. Each
 * call below costs O(1) or O(records it visits). */

/* On, from now on: every record already there linked (O(records), once).
 * false when out of memory (the index stays off). */
bool store_slots_enable(struct store *s);

/* Off, its memory freed. */
void store_slots_disable(struct store *s);

bool store_slots_on(const struct store *s);

/* Records of slot (0 when the index is off). */
uint64_t store_slot_count(const struct store *s, unsigned slot);

/* The record of slot added last, or NULL. */
struct store_rec *store_slot_first(struct store *s, unsigned slot);

/* fn on the first max records of slot, newest first; returns how many.
 * fn must not add or remove records (it may look up: dead ones stay). */
size_t store_slot_records(struct store *s, unsigned slot, size_t max,
                          store_scan_fn fn, void *arg);

#endif
