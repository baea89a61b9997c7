/*
 * store.c - the key table (see store.h).
 *
 * Layout
 * ------
 * A chained hash table in the manner of Redis's dict.c, but with 32-bit
 * handles instead of pointers everywhere a record is referenced:
 *
 *   struct store
 *     ht[0]  bucket[size]  ->  h -> h -> 0     (hnext chains of handles)
 *     ht[1]  bucket[size]  ->  ...             (only while rehashing)
 *
 * A handle names a slot in a slab: its top bits pick a size class, the rest
 * a slot within that class's chunks of SLAB_SLOTS slots. A record is the
 * 15-byte header of store.h and the key, then its state: packed right
 * after the key when under STORE_PACKED_BELOW bytes (read with memcpy:
 * KEY_INT's 4 bytes), else 8-aligned after padding, as the types keep
 * structs there. Size classes are 1 byte apart from 20 to 48 bytes, where
 * short keys with small states lie, then coarser (class_ranges, up to
 * 512); a packed record takes the class of its exact size there, an
 * aligned one, a multiple of 8 bytes, a class of a multiple of 8, so its
 * slots are 8-aligned. A CL.THROTTLE key or an INCR counter of 16 bytes
 * takes one 35-byte slot (15 + 16 + 4), a 4-byte bucket (4.2 bytes a key
 * at 1 M keys) and its 4-byte handle in a wheel slot, with no allocator
 * header or rounding per key; with 8 bytes of state it takes 40. Records
 * too large for the biggest class (long keys) get a slot of the BIG class
 * holding a pointer to a block of their own (at BIG_PTR: the slot's first
 * 4 bytes are the free list's link while it is free, and the pointer is
 * then NULL).
 *
 * Records lie at any byte, so the header is a packed struct, the chain
 * links are read and written through memcpy (link_get(), link_set()),
 * and a record may straddle two cache lines (the prefetch covers both).
 *
 * Why handles: a pointer costs 8 bytes; as 4-byte handles the hash chain
 * link and the wheel's entries are half that, and the buckets halve.
 * Resolving a handle is two loads (the class's chunk array, tiny and hot
 * in cache) and a multiply.
 *
 * Slabs
 * -----
 * Each chunk keeps its own free list (threaded through the first 4 bytes
 * of its free slots), a count of live slots and a bump index for slots
 * never used, so a fresh chunk costs nothing to set up. Chunks with room
 * sit on the class's `partial` list; new records go to its head. A chunk
 * whose last record goes is returned to the allocator at once, so memory
 * follows the live keys (up to partly used chunks).
 *
 * Chunks come from malloc directly and used_memory counts the slots in use
 * (mem_charge), as Redis counts what its allocator handed out: maxmemory
 * and eviction then see each key's real cost, and the free slots of partly
 * used chunks are fragmentation (RSS), not used memory.
 *
 * Hashing
 * -------
 * SipHash-1-3 keyed with the 16-byte seed given to store_create() (as Redis
 * does): keys are chosen by clients, so an unkeyed hash would let anyone
 * build a chain of a million colliding keys. The bucket index uses the low
 * bits.
 *
 * Resizing
 * --------
 * Sizes are powers of two. The table doubles when count >= size (load
 * factor 1) and shrinks when count < size / 8, to the power of two >=
 * 2 * count (load <= 0.5, at least TABLE_MIN); the gap between the two
 * thresholds keeps a table near a boundary from flapping. A table with no
 * records at all is dropped by store_cron(), and store_flush() drops both,
 * so an idle store costs no bucket memory. The first store_add() allocates
 * TABLE_MIN buckets again.
 *
 * A resize never moves everything at once. It allocates ht[1] and then
 * every store_lookup()/store_add() moves one bucket of ht[0] (visiting at
 * most REHASH_EMPTY_VISITS empty buckets), and store_cron(steps) moves more.
 * While rehashing, new records go to ht[1]; a lookup skips the ht[0]
 * buckets below rehashidx, which are empty by construction. If allocating
 * the new table fails, the old one simply stays (longer chains, still
 * correct) and the resize is retried on a later add, remove or cron.
 *
 * The hash is not stored in the record, so a rehash recomputes it for each
 * record it moves: SipHash of a short key costs about as much as the cache
 * miss on the record it needs anyway.
 *
 * Expiry
 * ------
 * A record is dead at `now` once now's millisecond is past expire_at
 * (store_rec_dead(); STORE_NEVER is never dead), as Redis's
 * keyIsExpired(). Correctness comes from store_lookup(), which frees a
 * dead record it meets and reports the key absent. The wheel only
 * reclaims memory. It reads a record's due from expire_at itself, so
 * store_set_expire() moves the timer only when the expiry comes earlier; a
 * later one is found by the wheel when it reaches the old slot, which
 * re-places the entry (HAProxy's lazy re-queue): a key hit a million times
 * costs one timer move, not a million.
 *
 * The wheel's slots are arrays of handles, and a record's `timer` names
 * the slot it is placed in (wheel.h); a handle left in another slot, by a
 * move or by a record removed before its time, is stale and dropped when
 * the wheel meets it. Such a handle may name a slot freed since, reused by
 * another record, or in a chunk given back to the allocator: the wheel
 * asks rec_if_live(), which answers from the slab's bookkeeping (the
 * chunk's memory, its `fresh` mark, a free slot's timer left at
 * WHEEL_TAG_NONE) and never reads memory the slab gave back. The wheel
 * bounds the stale handles it keeps by compacting its slots (wheel.c).
 *
 * When the wheel has no memory for a slot's block, the record is left
 * unplaced (timer WHEEL_TAG_NONE with an expiry) and wheel_lost() counts
 * it; store_expire() then scans the table, RESYNC_BUCKETS buckets per
 * call, and places every such record again, until a whole pass ends with
 * nothing new lost. Lookups stay exact meanwhile: a dead record is never
 * returned, placed or not.
 *
 * Scanning
 * --------
 * store_scan() is dictScan's reverse-binary cursor: the cursor's high bits
 * are incremented, so buckets that split (grow) or merge (shrink) between
 * calls are always visited after their ancestors or descendants already
 * covered them, and a record that lives throughout is reported at least
 * once. While the callbacks run, s->scanning stops rehash steps and stops
 * lookups from freeing dead records, so a callback that reads the store
 * (store_lookup) cannot invalidate the chain being walked.
 *
 * Slots (the per-slot index)
 * --------------------------
 * Redis Cluster's slot migration asks how many keys a hash slot holds
 * (CLUSTER COUNTKEYSINSLOT), for a page of them (GETKEYSINSLOT) and to
 * drop them all, each in time proportional to the keys concerned, never
 * to the table. store_slots_enable() (a cluster's database 0) puts every
 * record on a doubly linked list of its key's slot (lib/keyslot.h):
 *
 *   struct slot_index  head[16384] (handle)  count[16384]     128 KiB
 *   struct chunk       links[2 * SLAB_SLOTS]: prev, next per slot,
 *                      then kslot[SLAB_SLOTS]: the record's hash slot
 *
 * The links are handles, like the hash chains, and live beside the
 * records in a side array per chunk, indexed by the slot within the
 * chunk: records keep their 15-byte header and their slots, a rehash
 * moves no link (a record's handle never changes), and with the index off
 * no chunk has the array and nothing else differs but a test or two of
 * s->slots per add and per removal. With it on a key costs 10 bytes more
 * (Redis 7.0 pays 16 in its dict entries' metadata). A record is linked
 * at the head of its slot's list when added, its slot taken from the
 * routing's hint (keyslot_hinted(): the command's key was hashed once
 * already) and kept in the side array, and unlinked before it is freed
 * (unlink_free()) by that kept slot, so neither costs a second CRC16 of
 * the key on the hot path. A flush empties every list at once; a
 * chunk given back takes its array with it. Every chunk holding memory has
 * the array while the index is on: enabling it on a store with records
 * gives each chunk one and links every record (a walk of the tables,
 * once); disabling frees them all. Enumeration follows the next links
 * from the head, newest first. The arrays come from malloc as the chunks
 * do, and used_memory is charged 8 bytes more per slot in use, with the
 * slot's own charge (the head and count arrays through mem_calloc), so
 * maxmemory sees the index's cost.
 *
 * Memory
 * ------
 * Everything goes through lib/mem.h (slots by mem_charge, the wheel's
 * blocks by mem_malloc), so mem_used() is exact.
 */
#include "server/store.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dict.h"
#include "lib/keyslot.h"
#include "lib/mem.h"
#include "lib/rand.h"
#include "lib/siphash.h"
#include "lib/time.h"

bool store_keep_dead;

#define STORE_KEY_MAX       ((size_t)512 << 20)  /* 512 MiB, Redis's limit */
#define STORE_STATE_MAX     UINT16_MAX
#define TABLE_MIN           ((size_t)4)
#define SHRINK_RATIO        8      /* shrink when count < size / 8 */
#define REHASH_EMPTY_VISITS 10     /* empty buckets per moved bucket */
#define WHEEL_TICK_NS       INT64_C(1000000)     /* 1 ms */
#define AVG_TTL_SAMPLE      1024   /* expiries INFO's avg_ttl averages */

/* Handles: class in the top bits, slot below; 0 is "no record". */
#define CLASS_SHIFT     26
#define SLOT_MASK       ((UINT32_C(1) << CLASS_SHIFT) - 1)
#define SLAB_SHIFT      10
#define SLAB_SLOTS      (UINT32_C(1) << SLAB_SHIFT)  /* slots per chunk */
#define CHUNKS_MAX      (UINT32_C(1) << (CLASS_SHIFT - SLAB_SHIFT))
#define CLASS_BIG       60          /* slots hold a pointer to the record */
#define CLASSES         (CLASS_BIG + 1)
#define CLASS_FIRST     20          /* class 1's slot size */
#define SMALL_MAX       ((size_t)512)
/* A BIG slot: the free list's link in its first 4 bytes, the record's
 * pointer at BIG_PTR (NULL while the slot is free). */
#define BIG_SLOT        16
#define BIG_PTR         8
#define RESYNC_BUCKETS  64          /* buckets a lost-timer scan step visits */
#define PREFETCH_SPAN   (sizeof(struct store_rec) + 16 + 8)

_Static_assert(sizeof(struct store_rec) == 15, "record header is 15 bytes");
_Static_assert(offsetof(struct store_rec, data) == 15, "data follows it");

/* Slot sizes past CLASS_FIRST: `step` bytes apart up to `upto`. 1 byte
 * apart where the records of short keys with small states lie (a
 * CL.THROTTLE key of 16 bytes with its packed TAT is 35 bytes), coarser
 * above. Every multiple of 8 from 24 to 128 is a class and so is every
 * class above 64, so an aligned record, a multiple of 8 bytes, always
 * gets an 8-aligned slot. */
static const struct {
    uint16_t upto;
    uint16_t step;
} class_ranges[] = {
    { 48, 1 }, { 64, 2 }, { 128, 8 }, { 256, 16 }, { 384, 32 }, { 512, 64 },
};
#define CLASS_RANGES (sizeof(class_ranges) / sizeof(class_ranges[0]))
_Static_assert(CLASS_BIG <= UINT8_MAX, "a class fits size_class[]");

struct chunk {
    unsigned char *mem;     /* NULL: this chunk id is idle */
    uint32_t free;          /* first free slot + 1, 0 = none */
    uint32_t live;          /* slots in use */
    uint32_t fresh;         /* slots [fresh, SLAB_SLOTS) never used yet */
    uint32_t pnext;         /* partial list / idle list: chunk id + 1 */
    uint32_t pprev;         /* partial list: chunk id + 1 */
    bool partial;           /* on the partial list */
    uint32_t *links;        /* the slot index's prev, next per slot (see
                               "Slots"); NULL while it is off */
};

/* The per-slot index (see "Slots"). */
struct slot_index {
    uint32_t head[KEYSLOT_SLOTS];   /* handle of the newest record, or 0 */
    uint32_t count[KEYSLOT_SLOTS];  /* records of the slot */
};
/* Per record: prev and next links, and its hash slot (after the links). */
#define SLOT_LINK_BYTES (2 * sizeof(uint32_t) + sizeof(uint16_t))

struct slab_class {
    struct chunk *chunk;    /* nchunks entries */
    uint32_t nchunks;
    uint32_t cap;
    uint32_t partial;       /* chunk id + 1 of a chunk with room, or 0 */
    uint32_t idle;          /* chunk id + 1 of a chunk without memory */
    uint32_t with_mem;      /* chunks holding memory */
    uint32_t slot_size;
};

struct table {
    uint32_t *bucket;           /* NULL when size == 0 */
    size_t size;                /* 0 or a power of two */
    uint64_t mask;              /* size - 1 */
    size_t used;                /* records chained in this table */
};

struct store {
    struct table ht[2];         /* ht[1] is in use only while rehashing */
    size_t rehashidx;           /* next ht[0] bucket to move */
    size_t count;               /* ht[0].used + ht[1].used */
    unsigned scanning;          /* > 0 while store_scan runs callbacks */
    size_t volatile_count;      /* records whose expire_at != STORE_NEVER */
    store_release_fn release;   /* frees what a record's state points to */
    void *release_arg;
    uint64_t expired;           /* dead records removed, lazily or not */
    uint64_t evicted;           /* live records removed for memory */
    size_t bytes;               /* slots in use and big records' blocks */
    uint64_t changes;           /* writes (expiry set, removal, flush) */
    uint64_t k0, k1;            /* SipHash key */
    size_t reserved;            /* store_reserve()'s n: no shrink below it
                                 * until the cron runs (the load is over) */
    struct wheel *wheel;
    int64_t fire_now;           /* `now` of the store_expire() running */
    size_t fire_removed;
    /* Records the wheel could not place (no memory for a slot's block):
     * found again by a scan of the table (see "Expiry"). */
    uint64_t lost_seen;         /* wheel_lost() when the scan started */
    uint64_t resync_cursor;
    bool resyncing;
    /* The record last found or added and its handle: the common write
     * after a lookup needs the handle without walking the chain again. */
    struct store_rec *last;
    uint32_t last_h;
    struct slot_index *slots;   /* NULL while the index is off */
    struct slab_class cls[CLASSES];
};

static inline uint64_t
store_hash(const struct store *s, const void *key, size_t keylen)
{
    return siphash(s->k0, s->k1, key, keylen, 1, 3);
}

/* ------------------------------------------------------------------------
 * Slabs
 * --------------------------------------------------------------------- */

/* What a slot in use costs beside its bytes: its links while the slot
 * index is on, charged with the slot (one count per add or removal). */
static inline size_t
link_bytes(const struct store *s)
{
    return s->slots != NULL ? SLOT_LINK_BYTES : 0;
}

static inline unsigned
class_of(uint32_t h)
{
    return h >> CLASS_SHIFT;
}

static inline unsigned char *
slot_addr(const struct store *s, uint32_t h)
{
    const struct slab_class *k = &s->cls[class_of(h)];
    uint32_t i = h & SLOT_MASK;
    return k->chunk[i >> SLAB_SHIFT].mem
           + (size_t)(i & (SLAB_SLOTS - 1)) * k->slot_size;
}

static inline struct store_rec *
big_rec(const unsigned char *slot)
{
    struct store_rec *r;
    memcpy(&r, slot + BIG_PTR, sizeof(r));
    return r;
}

/* The record a handle names (h != 0). */
static inline struct store_rec *
rec_at(const struct store *s, uint32_t h)
{
    unsigned char *p = slot_addr(s, h);
    if (class_of(h) == CLASS_BIG) {
        return big_rec(p);
    }
    return (struct store_rec *)(void *)p;
}

/* The record h names, or NULL when it names none now: a slot free or
 * never used, a chunk given back to the allocator, a class dropped. The
 * wheel asks this of handles it took from its slots, which may have been
 * freed or reused since: nothing here reads memory the slab gave back.
 * A free small slot keeps its record's timer (WHEEL_TAG_NONE, as every
 * record is taken off the wheel before it is freed): the free list's link
 * overwrites only the first 4 bytes. */
static struct store_rec *
rec_if_live(const struct store *s, uint32_t h)
{
    unsigned c = class_of(h);
    uint32_t i = h & SLOT_MASK;
    if (c == 0 || c >= CLASSES || (i >> SLAB_SHIFT) >= s->cls[c].nchunks) {
        return NULL;
    }
    const struct slab_class *k = &s->cls[c];
    const struct chunk *ch = &k->chunk[i >> SLAB_SHIFT];
    uint32_t slot = i & (SLAB_SLOTS - 1);
    if (ch->mem == NULL || slot >= ch->fresh) {
        return NULL;
    }
    unsigned char *p = ch->mem + (size_t)slot * k->slot_size;
    return c == CLASS_BIG ? big_rec(p) : (struct store_rec *)(void *)p;
}

static void
partial_push(struct slab_class *k, uint32_t id)
{
    struct chunk *c = &k->chunk[id];
    c->pprev = 0;
    c->pnext = k->partial;
    if (k->partial != 0) {
        k->chunk[k->partial - 1].pprev = id + 1;
    }
    k->partial = id + 1;
    c->partial = true;
}

static void
partial_unlink(struct slab_class *k, uint32_t id)
{
    struct chunk *c = &k->chunk[id];
    if (c->pprev != 0) {
        k->chunk[c->pprev - 1].pnext = c->pnext;
    } else {
        k->partial = c->pnext;
    }
    if (c->pnext != 0) {
        k->chunk[c->pnext - 1].pprev = c->pprev;
    }
    c->pnext = c->pprev = 0;
    c->partial = false;
}

/* A chunk's side array of the slot index's links, or NULL when out of
 * memory. */
static uint32_t *
links_alloc(void)
{
    return malloc((size_t)SLAB_SLOTS * SLOT_LINK_BYTES);
}

/* A chunk id with memory and room, made if needed (with its array of
 * links when `links`); false if out of ids or memory. */
static bool
chunk_with_room(struct slab_class *k, bool links, uint32_t *id)
{
    if (k->partial != 0) {
        *id = k->partial - 1;
        return true;
    }
    uint32_t n;
    if (k->idle != 0) {
        n = k->idle - 1;
    } else {
        if (k->nchunks == CHUNKS_MAX) {
            return false;
        }
        if (k->nchunks == k->cap) {
            uint32_t cap = k->cap == 0 ? 16 : k->cap * 2;
            if (cap > CHUNKS_MAX) {
                cap = CHUNKS_MAX;
            }
            struct chunk *a = mem_realloc(k->chunk, (size_t)cap * sizeof(*a));
            if (a == NULL) {
                return false;
            }
            k->chunk = a;
            k->cap = cap;
        }
        n = k->nchunks;
        memset(&k->chunk[n], 0, sizeof(k->chunk[n]));
    }
    unsigned char *mem = malloc((size_t)SLAB_SLOTS * k->slot_size);
    uint32_t *link = links ? links_alloc() : NULL;
    if (mem == NULL || (links && link == NULL)) {
        free(mem);
        free(link);
        return false;
    }
    if (k->idle != 0) {
        k->idle = k->chunk[n].pnext;
    } else {
        k->nchunks++;
    }
    k->chunk[n] = (struct chunk){ .mem = mem, .links = link };
    k->with_mem++;
    partial_push(k, n);
    *id = n;
    return true;
}

/* A free slot of class c: its handle, or 0 when memory ran out. */
static uint32_t
slab_alloc(struct store *s, unsigned c)
{
    struct slab_class *k = &s->cls[c];
    uint32_t id;

    if (!chunk_with_room(k, s->slots != NULL, &id)) {
        return 0;
    }
    struct chunk *ch = &k->chunk[id];
    uint32_t slot;
    if (ch->free != 0) {
        slot = ch->free - 1;
        memcpy(&ch->free, ch->mem + (size_t)slot * k->slot_size,
               sizeof(ch->free));
    } else {
        slot = ch->fresh++;
    }
    if (++ch->live == SLAB_SLOTS) {
        partial_unlink(k, id);
    }
    mem_charge(k->slot_size + link_bytes(s));
    s->bytes += k->slot_size;
    return (uint32_t)c << CLASS_SHIFT | id << SLAB_SHIFT | slot;
}

static void
slab_free(struct store *s, uint32_t h)
{
    struct slab_class *k = &s->cls[class_of(h)];
    uint32_t id = (h & SLOT_MASK) >> SLAB_SHIFT;
    uint32_t slot = h & (SLAB_SLOTS - 1);
    struct chunk *ch = &k->chunk[id];

    mem_uncharge(k->slot_size + link_bytes(s));
    s->bytes -= k->slot_size;
    if (--ch->live == 0) {
        /* Empty: give the memory back now, so it follows the live keys. */
        if (ch->partial) {
            partial_unlink(k, id);
        }
        free(ch->mem);
        free(ch->links);
        *ch = (struct chunk){ .pnext = k->idle };
        k->idle = id + 1;
        if (--k->with_mem == 0) {
            /* The class is empty: drop its chunk array too. */
            uint32_t size = k->slot_size;
            mem_free(k->chunk);
            *k = (struct slab_class){ .slot_size = size };
        }
        return;
    }
    memcpy(ch->mem + (size_t)slot * k->slot_size, &ch->free,
           sizeof(ch->free));
    ch->free = slot + 1;
    if (!ch->partial) {
        partial_push(k, id);
    }
}

/* Free every chunk of every class (the records are gone already). */
static void
slab_free_all(struct store *s)
{
    for (unsigned c = 0; c < CLASSES; c++) {
        struct slab_class *k = &s->cls[c];
        for (uint32_t i = 0; i < k->nchunks; i++) {
            if (k->chunk[i].mem != NULL) {
                mem_uncharge((size_t)k->chunk[i].live *
                             (k->slot_size + link_bytes(s)));
                s->bytes -= (size_t)k->chunk[i].live * k->slot_size;
                free(k->chunk[i].mem);
                free(k->chunk[i].links);
            }
        }
        mem_free(k->chunk);
        uint32_t size = k->slot_size;
        *k = (struct slab_class){ .slot_size = size };
    }
}

static void
slab_init(struct store *s)
{
    unsigned c = 1;
    uint32_t size = CLASS_FIRST;

    s->cls[c++].slot_size = size;
    for (size_t i = 0; i < CLASS_RANGES; i++) {
        while (size < class_ranges[i].upto) {
            size += class_ranges[i].step;
            s->cls[c++].slot_size = size;
        }
    }
    assert(c == CLASS_BIG && size == SMALL_MAX);
    s->cls[CLASS_BIG].slot_size = BIG_SLOT;
}

/* ------------------------------------------------------------------------
 * Records
 * --------------------------------------------------------------------- */

static inline bool
rec_dead(const struct store_rec *r, int64_t now)
{
    return store_rec_dead(r, now);
}

/* memcmp(a, b, n) == 0, without the call for keys of 4 to 16 bytes:
 * two overlapping words, nothing outside [0, n) read. */
static inline bool
keys_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (n >= 8 && n <= 16) {
        return load64_le(a) == load64_le(b) &&
               load64_le(a + n - 8) == load64_le(b + n - 8);
    }
    if (n >= 4 && n < 8) {
        uint32_t a0, a1, b0, b1;
        memcpy(&a0, a, 4);
        memcpy(&a1, a + n - 4, 4);
        memcpy(&b0, b, 4);
        memcpy(&b1, b + n - 4, 4);
        return a0 == b0 && a1 == b1;
    }
    return memcmp(a, b, n) == 0;
}

static inline bool
rec_matches(const struct store_rec *r, const void *key, size_t keylen)
{
    return store_rec_keylen(r) == keylen
           && keys_equal((const unsigned char *)store_rec_key(r), key, keylen);
}

static inline uint64_t
rec_hash(const struct store *s, const struct store_rec *r)
{
    return store_hash(s, store_rec_key(r), store_rec_keylen(r));
}

static inline bool
packs(size_t state_size)
{
    return state_size < STORE_PACKED_BELOW;
}

/* Bytes of data[] before the state. */
static inline size_t
state_offset(size_t keylen, bool packed)
{
    size_t ks = store_key_space(keylen);
    return ks + (packed ? 0 : store_state_pad(ks));
}

/* The bytes of a record for this key and state: an aligned state is
 * padded to 8 bytes too, so the record is a multiple of 8. */
static inline size_t
rec_size(size_t keylen, size_t state_size)
{
    bool packed = packs(state_size);
    return sizeof(struct store_rec) + state_offset(keylen, packed)
           + (packed ? state_size : (state_size + 7) & ~(size_t)7);
}

/* The class of each record size up to SMALL_MAX: the smallest of at
 * least that many bytes. Filled once (class_table_init()), read only. */
static uint8_t size_class[SMALL_MAX + 1];

static void
class_table_init(const struct store *s)
{
    unsigned c = 1;
    for (size_t size = 0; size <= SMALL_MAX; size++) {
        while (s->cls[c].slot_size < size) {
            c++;
        }
        size_class[size] = (uint8_t)c;
    }
}

static inline unsigned
class_for(size_t size)
{
    return size <= SMALL_MAX ? size_class[size] : CLASS_BIG;
}

/* Allocate a record of `size` bytes; its handle in *h. NULL when out of
 * memory. */
static struct store_rec *
rec_alloc(struct store *s, size_t size, uint32_t *h)
{
    if (size <= SMALL_MAX) {
        *h = slab_alloc(s, class_for(size));
        return *h == 0 ? NULL : rec_at(s, *h);
    }
    struct store_rec *r = mem_malloc(size);
    if (r == NULL) {
        return NULL;
    }
    *h = slab_alloc(s, CLASS_BIG);
    if (*h == 0) {
        mem_free(r);
        return NULL;
    }
    s->bytes += mem_usable(r);
    memcpy(slot_addr(s, *h) + BIG_PTR, &r, sizeof(r));
    return r;
}

/* Free a record, and first what its state owns (RL.LOG's ring, say). */
static void
rec_free(struct store *s, uint32_t h)
{
    struct store_rec *r = rec_at(s, h);

    if (s->release != NULL) {
        s->release(r, s->release_arg);
    }
    assert(r->timer == WHEEL_TAG_NONE);
    if (class_of(h) == CLASS_BIG) {
        static struct store_rec *const none = NULL;
        s->bytes -= mem_usable(r);
        mem_free(r);
        memcpy(slot_addr(s, h) + BIG_PTR, &none, sizeof(none));
    }
    if (s->last_h == h) {
        s->last = NULL;
        s->last_h = 0;
    }
    slab_free(s, h);
}

/* ------------------------------------------------------------------------
 * Wheel callbacks: the slot tag and the due live in the record
 * --------------------------------------------------------------------- */

/* The wheel counts in ns: a record is due at the first ns of the
 * millisecond after the one it lives through (saturating: one that lives
 * past the year 2262 is due at the end of the ns clock, which is never). */
static int64_t
rec_due(const struct store_rec *r)
{
    int64_t ms = r->expire_at;
    int64_t due;
    if (__builtin_add_overflow(ms, 1, &due) ||
        __builtin_mul_overflow(due, NS_PER_MS, &due)) {
        return INT64_MAX;
    }
    return due;
}

/* A handle the wheel took from a slot: maybe freed or reused since. */
static unsigned
timer_placed(void *ctx, uint32_t h, int64_t *due)
{
    const struct store_rec *r = rec_if_live(ctx, h);
    if (r == NULL || r->timer == WHEEL_TAG_NONE) {
        return WHEEL_TAG_NONE;
    }
    *due = rec_due(r);
    return r->timer;
}

static void
timer_set_tag(void *ctx, uint32_t h, unsigned tag)
{
    rec_at(ctx, h)->timer = (uint16_t)tag;
}

static void remove_handle(struct store *s, uint32_t h);

/* The wheel fires only records whose expire_at has passed. */
static void
timer_fire(void *ctx, uint32_t h)
{
    struct store *s = ctx;

    assert(rec_dead(rec_at(s, h), s->fire_now));
    remove_handle(s, h);
    s->expired++;
    s->fire_removed++;
}

static const struct wheel_ops timer_ops = {
    .placed = timer_placed,
    .set_tag = timer_set_tag,
    .fire = timer_fire,
};

/* Place r (handle h) on the wheel by its expiry. */
static void
arm(struct store *s, struct store_rec *r, uint32_t h)
{
    (void)wheel_schedule(s->wheel, h, r->timer, rec_due(r));
}

static void
disarm(struct store *s, struct store_rec *r, uint32_t h)
{
    wheel_cancel(s->wheel, h, r->timer);
}

/* ------------------------------------------------------------------------
 * The per-slot index (see "Slots")
 * --------------------------------------------------------------------- */

/* Record h's two links in its chunk's array: [0] the record before it on
 * its slot's list (0: it is the head), [1] the one after it (0: none). */
static inline uint32_t *
links_of(const struct store *s, uint32_t h)
{
    const struct slab_class *k = &s->cls[class_of(h)];
    uint32_t i = h & SLOT_MASK;
    return k->chunk[i >> SLAB_SHIFT].links + 2 * (i & (SLAB_SLOTS - 1));
}

/* Record h's hash slot, kept after its chunk's links. */
static inline uint16_t *
kslot_of(const struct store *s, uint32_t h)
{
    const struct slab_class *k = &s->cls[class_of(h)];
    uint32_t i = h & SLOT_MASK;
    uint16_t *kslot = (uint16_t *)(k->chunk[i >> SLAB_SHIFT].links +
                                   2 * SLAB_SLOTS);
    return kslot + (i & (SLAB_SLOTS - 1));
}

/* Record h, of hash slot slot, at the head of the slot's list. Not
 * inlined: slot_link()'s common case, the slot from the hint, calls
 * nothing else and then jumps here, saving no register. */
__attribute__((noinline)) static void
slot_link_at(struct store *s, uint32_t h, unsigned slot)
{
    struct slot_index *x = s->slots;
    uint32_t *l = links_of(s, h);
    uint32_t head = x->head[slot];

    *kslot_of(s, h) = (uint16_t)slot;

    l[0] = 0;
    l[1] = head;
    if (head != 0) {
        links_of(s, head)[0] = h;
    }
    x->head[slot] = h;
    x->count[slot]++;
}

/* Record h, of key key[0..len) (the caller's bytes: the routing's hint
 * names them), at the head of its slot's list. */
static void
slot_link(struct store *s, uint32_t h, const char *key, size_t len)
{
    slot_link_at(s, h, keyslot_hinted(key, len));
}

/* Record h off its slot's list, before it is freed. */
static void
slot_unlink(struct store *s, uint32_t h)
{
    struct slot_index *x = s->slots;
    unsigned slot = *kslot_of(s, h);
    const uint32_t *l = links_of(s, h);
    uint32_t prev = l[0], next = l[1];

    if (prev != 0) {
        links_of(s, prev)[1] = next;
    } else {
        x->head[slot] = next;
    }
    if (next != 0) {
        links_of(s, next)[0] = prev;
    }
    x->count[slot]--;
}

/* Every list empty (the records are all gone: a flush; their links were
 * uncharged with their slots). */
static void
slots_clear(struct store *s)
{
    memset(s->slots, 0, sizeof(*s->slots));
}

static void
links_free_all(struct store *s)
{
    for (unsigned c = 0; c < CLASSES; c++) {
        for (uint32_t i = 0; i < s->cls[c].nchunks; i++) {
            free(s->cls[c].chunk[i].links);
            s->cls[c].chunk[i].links = NULL;
        }
    }
}

/* An array of links for every chunk holding memory; false (and none of
 * them) when memory runs out. */
static bool
links_give_all(struct store *s)
{
    for (unsigned c = 0; c < CLASSES; c++) {
        for (uint32_t i = 0; i < s->cls[c].nchunks; i++) {
            struct chunk *ch = &s->cls[c].chunk[i];
            if (ch->mem != NULL && ch->links == NULL &&
                (ch->links = links_alloc()) == NULL) {
                links_free_all(s);
                return false;
            }
        }
    }
    return true;
}

/* Slots in use, of every class (a record of the BIG class holds one). */
static size_t
live_slots(const struct store *s)
{
    size_t n = 0;
    for (unsigned c = 0; c < CLASSES; c++) {
        for (uint32_t i = 0; i < s->cls[c].nchunks; i++) {
            n += s->cls[c].chunk[i].live;
        }
    }
    return n;
}

/* Every record of table t on its slot's list. */
static void
link_table(struct store *s, const struct table *t)
{
    for (size_t i = 0; i < t->size; i++) {
        for (uint32_t h = t->bucket[i]; h != 0; h = rec_at(s, h)->hnext) {
            const struct store_rec *r = rec_at(s, h);
            slot_link(s, h, store_rec_key(r), store_rec_keylen(r));
        }
    }
}

/* ------------------------------------------------------------------------
 * Tables
 * --------------------------------------------------------------------- */

static inline bool
rehashing(const struct store *s)
{
    return s->ht[1].size != 0;
}

static void
table_free(struct table *t)
{
    mem_free(t->bucket);
    memset(t, 0, sizeof(*t));
}

/* Smallest power of two >= n, at least TABLE_MIN. */
static size_t
table_size_for(size_t n)
{
    size_t size = TABLE_MIN;
    while (size < n && size <= SIZE_MAX / 2) {
        size *= 2;
    }
    return size;
}

/* Start a resize to `size` buckets. Returns false (and changes nothing) if
 * the bucket array cannot be allocated. */
static bool
table_resize(struct store *s, size_t size)
{
    uint32_t *bucket = mem_calloc(size, sizeof(*bucket));
    if (bucket == NULL) {
        return false;
    }
    struct table t = { .bucket = bucket, .size = size, .mask = size - 1 };
    if (s->ht[0].used == 0) {
        /* Nothing to move: swap the arrays now rather than walk an empty
         * table bucket by bucket. */
        table_free(&s->ht[0]);
        s->ht[0] = t;
        return true;
    }
    s->ht[1] = t;
    s->rehashidx = 0;
    return true;
}

void
store_reserve(struct store *s, size_t n)
{
    if (s->count == 0 && !rehashing(s) && n > s->ht[0].size &&
        n <= ((size_t)1 << 30) && table_resize(s, table_size_for(n + 1))) {
        s->reserved = n;
    }
}

/* Begin a grow or a shrink if the load calls for one and none is running. */
static void
table_resize_if_needed(struct store *s)
{
    size_t size = s->ht[0].size;

    if (rehashing(s) || size == 0) {
        return;
    }
    if (s->count >= size) {
        (void)table_resize(s, table_size_for(s->count + 1));
    } else if (size > TABLE_MIN && s->count < size / SHRINK_RATIO &&
               s->count >= s->reserved) {
        (void)table_resize(s, table_size_for(2 * s->count));
    }
}

/* Move one chain of ht[0] to ht[1]; the hash is recomputed per record. */
static void
rehash_chain(struct store *s, uint32_t h)
{
    struct table *to = &s->ht[1];

    while (h != 0) {
        struct store_rec *r = rec_at(s, h);
        uint32_t next = r->hnext;
        uint32_t *head = &to->bucket[rec_hash(s, r) & to->mask];
        r->hnext = *head;
        *head = h;
        s->ht[0].used--;
        to->used++;
        h = next;
    }
}

/* Adopt ht[1]. Records may have come or gone while the rehash ran, so the
 * new table may already be too small or too large: start the next resize
 * now, so that lookups alone converge without waiting for an add, a remove
 * or store_cron(). */
static void
rehash_finish(struct store *s)
{
    table_free(&s->ht[0]);
    s->ht[0] = s->ht[1];
    memset(&s->ht[1], 0, sizeof(s->ht[1]));
    s->rehashidx = 0;
    table_resize_if_needed(s);
}

/* Move up to n non-empty buckets, visiting at most n * REHASH_EMPTY_VISITS
 * empty ones, so a step is bounded even in a sparse table. Returns the
 * unused part of n (always less than n when n > 0). */
static size_t
rehash(struct store *s, size_t n)
{
    struct table *from = &s->ht[0];
    size_t empty = n > SIZE_MAX / REHASH_EMPTY_VISITS
                   ? SIZE_MAX : n * REHASH_EMPTY_VISITS;

    if (n == 0 || !rehashing(s)) {
        return 0;
    }
    n--; /* every call counts as one step, even one that only finishes */
    while (from->used > 0) {
        uint32_t h = from->bucket[s->rehashidx];
        if (h == 0) {
            s->rehashidx++;
            if (--empty == 0) {
                return n;
            }
            continue;
        }
        from->bucket[s->rehashidx++] = 0;
        rehash_chain(s, h);
        if (n == 0) {
            break;
        }
        n--;
    }
    if (from->used == 0) {
        /* The rest of ht[0] is empty: no need to walk it. */
        rehash_finish(s);
    }
    return n;
}

/* The one rehash step every lookup and add pays for. */
static inline void
rehash_step(struct store *s)
{
    if (rehashing(s) && s->scanning == 0) {
        (void)rehash(s, 1);
    }
}

/* ------------------------------------------------------------------------
 * Finding and unlinking
 * --------------------------------------------------------------------- */

/* A link is where a handle is kept: a bucket, or a record's hnext, which
 * lies at any byte (the header is packed), so both are read and written
 * through memcpy. */
static inline uint32_t
link_get(const void *link)
{
    uint32_t h;
    memcpy(&h, link, sizeof(h));
    return h;
}

static inline void
link_set(void *link, uint32_t h)
{
    memcpy(link, &h, sizeof(h));
}

static inline void *
next_link(struct store_rec *r)
{
    return (unsigned char *)r + offsetof(struct store_rec, hnext);
}

/* Where a chain search starts in table i, or NULL if the table has no
 * bucket for h (unallocated, or an ht[0] bucket already moved). */
static inline uint32_t *
table_head(struct store *s, int i, uint64_t h)
{
    struct table *t = &s->ht[i];

    if (t->size == 0) {
        return NULL;
    }
    uint64_t idx = h & t->mask;
    if (i == 0 && rehashing(s) && idx < s->rehashidx) {
        return NULL;
    }
    return &t->bucket[idx];
}

/* The link (bucket slot or hnext field) that holds key's handle, or NULL;
 * *ti is set to the table holding it. */
static void *
find_key(struct store *s, uint64_t h, const void *key, size_t keylen, int *ti)
{
    for (int i = 0; i < 2; i++) {
        void *link = table_head(s, i, h);
        while (link != NULL && link_get(link) != 0) {
            struct store_rec *r = rec_at(s, link_get(link));
            if (rec_matches(r, key, keylen)) {
                *ti = i;
                return link;
            }
            link = next_link(r);
        }
    }
    return NULL;
}

void
store_prefetch_hash(struct store *s, uint64_t h)
{
    for (int i = 0; i < 2 && s->count > 0; i++) {
        uint32_t *head = table_head(s, i, h);
        if (head != NULL) {
            __builtin_prefetch(head);
        }
    }
}

uint64_t
store_prefetch_bucket(struct store *s, const void *key, size_t keylen)
{
    uint64_t h = store_hash(s, keylen == 0 ? "" : key, keylen);
    store_prefetch_hash(s, h);
    return h;
}

void
store_prefetch_record(struct store *s, uint64_t h)
{
    for (int i = 0; i < 2 && s->count > 0; i++) {
        uint32_t *head = table_head(s, i, h);
        if (head != NULL && *head != 0) {
            /* A record lies at any byte: its header, a 16-byte key and an
             * 8-byte state may straddle two cache lines. */
            const char *r = (const char *)rec_at(s, *head);
            __builtin_prefetch(r);
            __builtin_prefetch(r + PREFETCH_SPAN - 1);
        }
    }
}

/* As find_key, for a known record; its handle in *hp. */
static void *
find_rec(struct store *s, const struct store_rec *r, int *ti, uint32_t *hp)
{
    uint64_t h = rec_hash(s, r);

    for (int i = 0; i < 2; i++) {
        void *link = table_head(s, i, h);
        while (link != NULL && link_get(link) != 0) {
            struct store_rec *q = rec_at(s, link_get(link));
            if (q == r) {
                *ti = i;
                *hp = link_get(link);
                return link;
            }
            link = next_link(q);
        }
    }
    return NULL;
}

/* The handle of a record the caller got from this store. */
static uint32_t
handle_of(struct store *s, const struct store_rec *r)
{
    int ti;
    uint32_t h = 0;

    if (r == s->last) {
        return s->last_h;
    }
    void *link = find_rec(s, r, &ti, &h);
    assert(link != NULL);
    (void)link;
    return h;
}

/* Unlink the record link holds (in table ti), cancel its timer and free
 * it. */
static void
unlink_free(struct store *s, void *link, int ti)
{
    uint32_t h = link_get(link);
    struct store_rec *r = rec_at(s, h);

    assert(s->scanning == 0);
    link_set(link, r->hnext);
    s->ht[ti].used--;
    s->count--;
    s->changes++;
    if (r->expire_at != STORE_NEVER) {
        s->volatile_count--;
    }
    if (s->slots != NULL) {
        slot_unlink(s, h);
    }
    disarm(s, r, h);
    rec_free(s, h);
    table_resize_if_needed(s);
}

static void
remove_handle(struct store *s, uint32_t h)
{
    int ti;
    uint32_t found = 0;
    void *link = find_rec(s, rec_at(s, h), &ti, &found);

    assert(link != NULL && found == h);
    if (link != NULL) {
        unlink_free(s, link, ti);
    }
}

/* ------------------------------------------------------------------------
 * Public API
 * --------------------------------------------------------------------- */

struct store *
store_create(const unsigned char seed[16], int64_t now)
{
    struct store *s = mem_calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    siphash_key(seed, &s->k0, &s->k1);
    slab_init(s);
    if (size_class[SMALL_MAX] == 0) {
        class_table_init(s);    /* the same for every store */
    }
    s->wheel = wheel_create(now, WHEEL_TICK_NS, &timer_ops, s);
    if (s->wheel == NULL) {
        mem_free(s);
        return NULL;
    }
    /* The tables and slabs stay unallocated until the first store_add(). */
    return s;
}

void
store_set_release(struct store *s, store_release_fn fn, void *arg)
{
    s->release = fn;
    s->release_arg = arg;
}

void
store_destroy(struct store **sp)
{
    if (sp == NULL || *sp == NULL) {
        return;
    }
    struct store *s = *sp;
    store_flush(s);
    mem_free(s->slots);
    wheel_destroy(&s->wheel);
    mem_free(s);
    *sp = NULL;
}

struct store_rec *
store_lookup_hashed(struct store *s, const void *key, size_t keylen,
                    uint64_t h, int64_t now)
{
    int ti;

    if (keylen > STORE_KEY_MAX) {
        return NULL;    /* store_add never admits such a key */
    }
    rehash_step(s);
    if (s->count == 0) {
        return NULL;
    }
    if (keylen == 0) {
        key = "";       /* memcmp wants a valid pointer */
    }
    void *link = find_key(s, h, key, keylen, &ti);
    if (link == NULL) {
        return NULL;
    }
    uint32_t found = link_get(link);
    struct store_rec *r = rec_at(s, found);
    if (!rec_dead(r, now)) {
        s->last = r;
        s->last_h = found;
        return r;
    }
    /* Lazy expiry. Inside a scan callback the chain is being walked, so the
     * dead record is only reported absent and left to the wheel; on a
     * replica of a Redis primary, left to the primary's DEL. */
    if (s->scanning == 0 && !store_keep_dead) {
        unlink_free(s, link, ti);
        s->expired++;
    }
    return NULL;
}

uint64_t
store_key_hash(const struct store *s, const void *key, size_t keylen)
{
    return store_hash(s, keylen == 0 ? "" : key, keylen);
}

struct store_rec *
store_lookup(struct store *s, const void *key, size_t keylen, int64_t now)
{
    if (keylen > STORE_KEY_MAX) {
        return NULL;
    }
    return store_lookup_hashed(s, key, keylen, store_key_hash(s, key, keylen),
                               now);
}

struct store_rec *
store_add(struct store *s, const void *key, size_t keylen, uint8_t type,
          size_t state_size)
{
    if (keylen > STORE_KEY_MAX) {
        return NULL;
    }
    return store_add_hashed(s, key, keylen, store_key_hash(s, key, keylen),
                            type, state_size);
}

struct store_rec *
store_add_hashed(struct store *s, const void *key, size_t keylen,
                 uint64_t hash, uint8_t type, size_t state_size)
{
    uint32_t h;

    assert(s->scanning == 0);
    if (keylen > STORE_KEY_MAX || state_size > STORE_STATE_MAX ||
        type > STORE_TYPE_MAX) {
        return NULL;
    }
    if (keylen == 0) {
        key = "";
    }
    rehash_step(s);
    if (s->ht[0].size == 0 && !table_resize(s, TABLE_MIN)) {
        return NULL;
    }
    bool packed = packs(state_size);
    size_t key_space = store_key_space(keylen);
    size_t size = rec_size(keylen, state_size);
    struct store_rec *r = rec_alloc(s, size, &h);
    if (r == NULL) {
        return NULL;
    }
    r->timer = WHEEL_TAG_NONE;
    r->expire_at = STORE_NEVER;
    r->type = type & STORE_TYPE_MAX;
    r->flags = 0;
    r->packed = packed;
    if (keylen >= STORE_LONG_KEY) {
        uint32_t len = (uint32_t)keylen;
        r->keylen8 = STORE_LONG_KEY;
        memcpy(r->data, &len, sizeof(len));
    } else {
        r->keylen8 = (uint8_t)keylen;
    }
    /* The key, then zeroes to the end: padding and state. */
    memcpy((char *)store_rec_key(r), key, keylen);
    memset(r->data + key_space, 0, size - sizeof(*r) - key_space);

    /* While rehashing, ht[0] only drains; new records go to ht[1]. */
    struct table *t = &s->ht[rehashing(s) ? 1 : 0];
    uint32_t *head = &t->bucket[hash & t->mask];
    r->hnext = *head;
    *head = h;
    t->used++;
    s->count++;
    if (s->slots != NULL) {
        slot_link(s, h, key, keylen);
    }
    s->last = r;
    s->last_h = h;
    table_resize_if_needed(s);
    return r;
}

void
store_set_expire(struct store *s, struct store_rec *r, int64_t expire_at)
{
    int64_t old = r->expire_at;

    s->changes++;
    s->volatile_count += (expire_at != STORE_NEVER) - (old != STORE_NEVER);
    r->expire_at = expire_at;
    if (expire_at == STORE_NEVER) {
        if (r->timer != WHEEL_TAG_NONE) {
            disarm(s, r, handle_of(s, r));
        }
        return;
    }
    /* Lazy re-arm: a later expiry leaves the timer where it is; the wheel
     * reads expire_at when it gets there and re-places the entry. One the
     * wheel had no memory for is found again by store_expire()'s scan. */
    if (r->timer == WHEEL_TAG_NONE || expire_at < old) {
        arm(s, r, handle_of(s, r));
    }
}

void
store_remove(struct store *s, struct store_rec *r)
{
    int ti;
    uint32_t h;
    void *link = find_rec(s, r, &ti, &h);

    assert(link != NULL);
    if (link != NULL) {
        unlink_free(s, link, ti);
    }
}

size_t
store_size(const struct store *s)
{
    return s->count;
}

void
store_usage_add(struct store_usage *sum, const struct store *s)
{
    size_t bucket = sizeof(*s->ht[0].bucket);
    sum->keys += s->count;
    sum->volatile_keys += s->volatile_count;
    sum->expired += s->expired;
    sum->evicted += s->evicted;
    sum->changes += s->changes;
    sum->rehash_overhead += rehashing(s) ? s->ht[0].size * bucket : 0;
    sum->table_bytes += (s->ht[0].size + s->ht[1].size) * bucket;
}

struct store_usage
store_usage(const struct store *s)
{
    struct store_usage u = { 0 };
    store_usage_add(&u, s);
    return u;
}

/* A sample of the records' expiries for store_avg_ttl(). */
struct ttl_sample {
    int64_t now_ms;
    size_t n;
    __int128 sum;               /* ms left, over the n sampled */
};

static void
sample_ttl(struct store_rec *r, void *arg)
{
    struct ttl_sample *t = arg;
    if (r->expire_at != STORE_NEVER && r->expire_at >= t->now_ms) {
        t->sum += r->expire_at - t->now_ms;
        t->n++;
    }
}

int64_t
store_avg_ttl(struct store *s, int64_t now)
{
    struct ttl_sample t = { now / NS_PER_MS, 0, 0 };
    uint64_t cursor = 0;
    size_t buckets = 0;
    if (s->volatile_count == 0) {
        return 0;
    }
    /* The reverse-binary cursor visits the table evenly from the start,
     * so its first buckets are a fair sample (every one, in a small
     * table). */
    do {
        cursor = store_scan(s, cursor, sample_ttl, &t);
    } while (cursor != 0 && t.n < AVG_TTL_SAMPLE &&
             ++buckets < 64 * AVG_TTL_SAMPLE);
    if (t.n == 0) {
        return 0;
    }
    __int128 avg = t.sum / (__int128)t.n;
    return avg > INT64_MAX ? INT64_MAX : (int64_t)avg;
}

/* Release every record's owned state and big blocks; the slabs go after. */
static void
table_flush(struct store *s, struct table *t)
{
    for (size_t i = 0; i < t->size; i++) {
        uint32_t h = t->bucket[i];
        while (h != 0) {
            struct store_rec *r = rec_at(s, h);
            uint32_t next = r->hnext;
            if (s->release != NULL) {
                s->release(r, s->release_arg);
            }
            if (class_of(h) == CLASS_BIG) {
                mem_free(r);
            }
            h = next;
        }
    }
    table_free(t);
}

void
store_flush(struct store *s)
{
    assert(s->scanning == 0);
    table_flush(s, &s->ht[0]);
    table_flush(s, &s->ht[1]);
    slab_free_all(s);
    if (s->slots != NULL) {
        slots_clear(s);
    }
    wheel_clear(s->wheel);
    s->resyncing = false;       /* nothing left to look for */
    s->lost_seen = wheel_lost(s->wheel);
    s->last = NULL;
    s->last_h = 0;
    s->rehashidx = 0;
    s->count = 0;
    s->volatile_count = 0;
    s->changes++;
}

/* A record with an expiry the wheel holds no entry for (it had no memory
 * for one): placed again. */
static void
rearm_lost(struct store_rec *r, void *arg)
{
    struct store *s = arg;
    if (r->expire_at != STORE_NEVER && r->timer == WHEEL_TAG_NONE) {
        arm(s, r, handle_of(s, r));
    }
}

/* A step of the scan for records the wheel lost: started when it lost
 * some, over again when it lost more during a pass, until a whole pass
 * ends with nothing new lost. */
static void
resync_step(struct store *s)
{
    if (!s->resyncing) {
        if (wheel_lost(s->wheel) == s->lost_seen) {
            return;
        }
        s->resyncing = true;
        s->lost_seen = wheel_lost(s->wheel);
        s->resync_cursor = 0;
    }
    for (int i = 0; i < RESYNC_BUCKETS; i++) {
        s->resync_cursor = store_scan(s, s->resync_cursor, rearm_lost, s);
        if (s->resync_cursor == 0) {
            s->resyncing = wheel_lost(s->wheel) != s->lost_seen;
            s->lost_seen = wheel_lost(s->wheel);
            return;
        }
    }
}

size_t
store_expire(struct store *s, int64_t now, size_t budget)
{
    assert(s->scanning == 0);
    s->fire_now = now;
    s->fire_removed = 0;
    (void)wheel_advance(s->wheel, now, budget);
    resync_step(s);
    return s->fire_removed;
}

bool
store_evict_soonest(struct store *s, const struct store_rec *keep)
{
    uint32_t h = wheel_first(s->wheel, 0);

    if (h != 0 && keep != NULL && rec_at(s, h) == keep) {
        h = wheel_first(s->wheel, h);
    }
    if (h != 0) {
        remove_handle(s, h);
        s->evicted++;
    }
    return h != 0;
}

/* Bucket i of both tables counted as one row (ht[1] after ht[0]). */
static uint32_t
bucket_head(const struct store *s, uint64_t i)
{
    if (i < s->ht[0].size) {
        return s->ht[0].bucket[i];
    }
    return s->ht[1].bucket[i - s->ht[0].size];
}

/* Draws from a table nearly empty (after mass deletes, before it shrinks)
 * could miss for long: past this many, walk on from the last draw. */
#define RANDOM_DRAWS 128

struct store_rec *
store_random(struct store *s)
{
    if (s->count == 0) {
        return NULL;
    }
    uint64_t buckets = s->ht[0].size + s->ht[1].size;
    uint64_t i = rand_below(buckets);
    uint32_t h = bucket_head(s, i);
    for (int draw = 1; h == 0 && draw < RANDOM_DRAWS; draw++) {
        i = rand_below(buckets);
        h = bucket_head(s, i);
    }
    for (uint64_t step = 0; h == 0 && step < buckets; step++) {
        i = i + 1 == buckets ? 0 : i + 1;   /* count > 0: one is found */
        h = bucket_head(s, i);
    }
    size_t chain = 0;
    for (uint32_t x = h; x != 0; x = rec_at(s, x)->hnext) {
        chain++;
    }
    for (uint64_t pick = chain > 1 ? rand_below(chain) : 0; pick > 0; pick--) {
        h = rec_at(s, h)->hnext;
    }
    return h != 0 ? rec_at(s, h) : NULL;
}

size_t
store_bytes(const struct store *s)
{
    return s->bytes;
}

size_t
store_rec_bytes(const struct store *s, const struct store_rec *r,
                size_t state_size)
{
    size_t size = rec_size(store_rec_keylen(r), state_size);
    size_t timer = r->timer != WHEEL_TAG_NONE ? sizeof(uint32_t) : 0;
    timer += s->slots != NULL ? SLOT_LINK_BYTES : 0;    /* its slot's links */
    if (size <= SMALL_MAX) {
        return s->cls[class_for(size)].slot_size + timer;
    }
    return mem_usable(r) + BIG_SLOT + timer;
}

bool
store_expire_pending(const struct store *s, int64_t now)
{
    return wheel_pending(s->wheel, now) || s->resyncing ||
           wheel_lost(s->wheel) != s->lost_seen;
}

bool
store_cron(struct store *s, size_t steps)
{
    s->reserved = 0;
    while (steps > 0 && s->scanning == 0) {
        if (!rehashing(s)) {
            if (s->count == 0 && s->ht[0].size > 0) {
                table_free(&s->ht[0]);  /* idle store: no buckets at all */
            }
            table_resize_if_needed(s);
            if (!rehashing(s)) {
                break;
            }
        }
        steps = rehash(s, steps);
    }
    return rehashing(s);
}

/* ------------------------------------------------------------------------
 * Scan
 * --------------------------------------------------------------------- */

static void
scan_bucket(struct store *s, uint32_t h, store_scan_fn fn, void *arg)
{
    while (h != 0) {
        struct store_rec *r = rec_at(s, h);
        uint32_t next = r->hnext;
        fn(r, arg);
        h = next;
    }
}

uint64_t
store_scan(struct store *s, uint64_t v, store_scan_fn fn, void *arg)
{
    if (s->count == 0) {
        return 0;
    }
    s->scanning++;
    if (!rehashing(s)) {
        const struct table *t = &s->ht[0];
        scan_bucket(s, t->bucket[v & t->mask], fn, arg);
        v = dict_cursor_next(v, t->mask);
    } else {
        /* Visit the small table's bucket, then every bucket of the large
         * table whose index has the same low bits (its expansion). */
        const struct table *small = &s->ht[0];
        const struct table *large = &s->ht[1];
        if (small->size > large->size) {
            small = &s->ht[1];
            large = &s->ht[0];
        }
        uint64_t m0 = small->mask;
        uint64_t m1 = large->mask;
        scan_bucket(s, small->bucket[v & m0], fn, arg);
        do {
            scan_bucket(s, large->bucket[v & m1], fn, arg);
            v = dict_cursor_next(v, m1);
        } while (v & (m0 ^ m1));
    }
    s->scanning--;
    return v;
}

/* ------------------------------------------------------------------------
 * The per-slot index
 * --------------------------------------------------------------------- */

bool
store_slots_enable(struct store *s)
{
    if (s->slots != NULL) {
        return true;
    }
    struct slot_index *x = mem_calloc(1, sizeof(*x));
    if (x == NULL) {
        return false;
    }
    if (!links_give_all(s)) {
        mem_free(x);
        return false;
    }
    s->slots = x;
    link_table(s, &s->ht[0]);
    link_table(s, &s->ht[1]);
    mem_charge(live_slots(s) * SLOT_LINK_BYTES);
    return true;
}

void
store_slots_disable(struct store *s)
{
    if (s->slots == NULL) {
        return;
    }
    mem_uncharge(live_slots(s) * SLOT_LINK_BYTES);
    links_free_all(s);
    mem_free(s->slots);
    s->slots = NULL;
}

bool
store_slots_on(const struct store *s)
{
    return s->slots != NULL;
}

uint64_t
store_slot_count(const struct store *s, unsigned slot)
{
    return s->slots != NULL && slot < KEYSLOT_SLOTS ? s->slots->count[slot]
                                                    : 0;
}

struct store_rec *
store_slot_first(struct store *s, unsigned slot)
{
    if (s->slots == NULL || slot >= KEYSLOT_SLOTS ||
        s->slots->head[slot] == 0) {
        return NULL;
    }
    return rec_at(s, s->slots->head[slot]);
}

size_t
store_slot_records(struct store *s, unsigned slot, size_t max,
                   store_scan_fn fn, void *arg)
{
    size_t n = 0;
    if (s->slots == NULL || slot >= KEYSLOT_SLOTS) {
        return 0;
    }
    s->scanning++;          /* fn may look up, never free (as a scan's) */
    for (uint32_t h = s->slots->head[slot]; h != 0 && n < max; n++) {
        uint32_t next = links_of(s, h)[1];
        fn(rec_at(s, h), arg);
        h = next;
    }
    s->scanning--;
    return n;
}
