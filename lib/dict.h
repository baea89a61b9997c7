/*
 * dict.h - a hash table from byte-string keys to entries: the large
 * encoding of hashes (field -> value) and of sorted sets (member -> its
 * skiplist node), as Redis's dict is theirs, and every table of the
 * server's own but the key table (server/store.c).
 *
 * Chained, power-of-two buckets, keyed SipHash (dict_seed(), one random
 * key per process, so a client cannot choose colliding names). An entry
 * is one allocation: the link, a word for its owner (a sorted set's node,
 * say), the key and then vlen bytes of value (a hash's), so a field and
 * its value cost one block. The table doubles when it holds as many
 * entries as buckets and shrinks to the fewest buckets that hold them all
 * when it falls under an eighth. A resize is incremental, as Redis's:
 * the new table is allocated and every add, set_value and remove
 * moves at most DICT_STEP_ENTRIES entries into it (dict_rehash moves more
 * on request), lookups consult both tables meanwhile, adds go to the new
 * one. Entries move by relinking, never by reallocation: an entry pointer
 * dict_add or dict_find returned stays good until the entry is removed or
 * its value set. A table that cannot be allocated postpones the resize.
 * Scanning uses Redis's reverse-binary cursor, so an entry present for a
 * whole scan is returned at least once even when the table resizes in
 * between, or is halfway through a resize.
 *
 * Every block of a zeroed struct dict (an empty one that owns nothing) is
 * mem_owned_realloc'd (lib/mem.h): the bytes are keys', which eviction
 * counts on getting back. The server's own tables start as DICT_SERVER
 * instead: their blocks are mem_realloc'd, in used_memory like the rest
 * but not in mem_owned_bytes(), since evicting every key would not free
 * them.
 */
#ifndef CELLGATE_DICT_H
#define CELLGATE_DICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dict_entry {
    struct dict_entry *next;
    union {
        void *p;
        double d;
    } owner;                /* the owner's word: zeroed when added */
    uint32_t klen;
    uint32_t vlen;
    unsigned char kv[];     /* key, then value */
};

static inline const unsigned char *
dict_key(const struct dict_entry *e)
{
    return e->kv;
}

static inline const unsigned char *
dict_value(const struct dict_entry *e)
{
    return e->kv + e->klen;
}

struct dict {
    struct dict_entry **t;  /* buckets (the old ones during a resize);
                             * NULL when empty */
    uint64_t mask;          /* buckets - 1 */
    uint64_t used;          /* entries, in both tables */
    /* The bit of the memory's class shares the word of the byte count
     * (which never nears 2^63), so a hash's or sorted set's dict stays
     * seven words: keys pay nothing for the server's tables. */
    size_t owned : 63;      /* bytes of the tables and the entries */
    size_t server : 1;      /* 1: the server's memory, not keys' */
    struct dict_entry **t1; /* the new buckets during a resize, else NULL */
    uint64_t mask1;         /* their count - 1 */
    uint64_t rehash_idx;    /* t's buckets below it have moved to t1 */
};

/* An empty dict of the server's memory (see above): `struct dict d =
 * DICT_SERVER;` or `*d = (struct dict)DICT_SERVER;`. dict_free keeps the
 * class. */
#define DICT_SERVER { .server = 1 }

/* The most entries one operation moves between the tables. */
#define DICT_STEP_ENTRIES 4

/* The hash key of every dict (16 random bytes), set once at start-up. */
void dict_seed(const unsigned char seed[16]);

/* The entry for key, or NULL. A read: it moves nothing, so it may be
 * called while walking d with dict_next. */
struct dict_entry *dict_find(const struct dict *d, const void *key,
                             size_t klen);

/* Add key (absent: the caller looked) with vlen bytes of value. NULL
 * (nothing changed) when memory runs out. */
struct dict_entry *dict_add(struct dict *d, const void *key, uint32_t klen,
                            const void *val, uint32_t vlen);

/* Entry e (of d) with a new value; the entry may move, its owner word
 * kept. NULL (e untouched) when memory runs out. */
struct dict_entry *dict_set_value(struct dict *d, struct dict_entry *e,
                                  const void *val, uint32_t vlen);

/* Unlink and free entry e of d. */
void dict_remove(struct dict *d, struct dict_entry *e);

/* dict_remove() of key's entry: true when there was one. */
bool dict_remove_key(struct dict *d, const void *key, size_t klen);

/* Every entry once, in bucket order (the old table's, then the new
 * one's): it = 0 to start, NULL at the end. Moves nothing; the dict
 * must not change while walking (no add, find, set_value, remove or
 * rehash on it). */
struct dict_iter {
    uint64_t bucket;
    struct dict_entry *next;
};
struct dict_entry *dict_next(const struct dict *d, struct dict_iter *it);

/* v's 64 bits in reverse order. */
static inline uint64_t
dict_rev64(uint64_t v)
{
    v = ((v >> 1) & UINT64_C(0x5555555555555555))
        | ((v & UINT64_C(0x5555555555555555)) << 1);
    v = ((v >> 2) & UINT64_C(0x3333333333333333))
        | ((v & UINT64_C(0x3333333333333333)) << 2);
    v = ((v >> 4) & UINT64_C(0x0f0f0f0f0f0f0f0f))
        | ((v & UINT64_C(0x0f0f0f0f0f0f0f0f)) << 4);
    return __builtin_bswap64(v);
}

/* Redis's reverse-binary scan cursor after v over a table of mask + 1
 * buckets: its bits under mask incremented from the top bit down (the
 * key table's SCAN, server/store.c, steps the same way). */
static inline uint64_t
dict_cursor_next(uint64_t v, uint64_t mask)
{
    return dict_rev64(dict_rev64(v | ~mask) + 1);
}

/* One step of a scan (HSCAN, ZSCAN): fn on every entry of the buckets the
 * cursor names; the next cursor, 0 when the scan is done. */
typedef void (*dict_scan_fn)(const struct dict_entry *e, void *arg);
uint64_t dict_scan(const struct dict *d, uint64_t cursor, dict_scan_fn fn,
                   void *arg);

/* Room for n entries without a resize (a load knows its count): a table
 * that large, into which a non-empty dict's entries then move a few at a
 * time (a smaller resize under way is finished at once first). Never
 * shrinks. false when memory runs out. */
bool dict_expand(struct dict *d, uint64_t n);

/* Move up to n entries of a resize under way into the new table
 * (passing at most 10 * n empty buckets), for a caller with time to
 * spare; the entries moved. Nothing to do when no resize is under way. */
uint64_t dict_rehash(struct dict *d, uint64_t n);

/* Free every entry and the table: an empty dict again. */
void dict_free(struct dict *d);

#endif
