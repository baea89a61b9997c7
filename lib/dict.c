/*
 * dict.c - the hash table of lib/dict.h.
 *
 * Resizes are incremental, as Redis's are. A resize allocates the new
 * table (t1) and leaves the entries where they are; from then on every
 * dict_add, dict_set_value and dict_remove (and dict_rehash, for a caller
 * with time to spare) first moves a few entries over, from
 * the old table's bucket rehash_idx up, by relinking them: an entry is
 * never reallocated by a move, so pointers to it stay good. Old buckets
 * below rehash_idx are empty; the one at rehash_idx may be half moved.
 * A lookup therefore looks in both tables and moves nothing (a read
 * never changes the dict, so one may look entries up while walking it),
 * an add goes to the new one,
 * and when the old table is empty it is freed and the new one takes its
 * place. A table that cannot be allocated postpones the resize: long
 * chains are slower, never wrong.
 *
 * Every block comes and goes through block_realloc() and block_free(),
 * which pick the allocator of the dict's class (keys' or the server's).
 *
 * The bound on one step is in entries, not buckets: at most
 * DICT_STEP_ENTRIES entries move, and at most DICT_STEP_EMPTY empty
 * buckets are passed, so no single operation does more than that much
 * rehashing however long a chain is.
 */
#include "lib/dict.h"

#include <stddef.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/siphash.h"

/* The fewest buckets a table has: a handful of entries need no more. */
#define DICT_MIN_BUCKETS 4

static uint64_t seed_k0, seed_k1;

void
dict_seed(const unsigned char seed[16])
{
    siphash_key(seed, &seed_k0, &seed_k1);
}

static uint64_t
dict_hash(const void *key, size_t klen)
{
    return siphash(seed_k0, seed_k1, key, klen, 1, 3);
}

_Static_assert(sizeof(struct dict) == 7 * sizeof(uint64_t),
               "the class bit must not grow every hash's dict");

/* A block of d's, counted as its class says (lib/dict.h). */
static void *
block_realloc(const struct dict *d, void *p, size_t size)
{
    return d->server ? mem_realloc(p, size) : mem_owned_realloc(p, size);
}

static void
block_free(const struct dict *d, void *p)
{
    if (d->server) {
        mem_free(p);
    } else {
        mem_owned_free(p);
    }
}

static size_t
entry_size(uint32_t klen, uint32_t vlen)
{
    return offsetof(struct dict_entry, kv) + (size_t)klen + vlen;
}

static bool
rehashing(const struct dict *d)
{
    return d->t1 != NULL;
}

/* A zeroed table of n buckets (a power of two), counted in d->owned;
 * NULL when memory runs out. */
static struct dict_entry **
table_new(struct dict *d, uint64_t n)
{
    if (n > SIZE_MAX / sizeof(struct dict_entry *)) {
        return NULL;
    }
    struct dict_entry **t = block_realloc(d, NULL, n * sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    memset(t, 0, n * sizeof(*t));
    d->owned += mem_usable(t);
    return t;
}

static void
table_free(struct dict *d, struct dict_entry **t)
{
    d->owned -= mem_usable(t);
    block_free(d, t);
}

/* Start moving the entries into a table of n buckets (a power of two,
 * not the current size); an empty dict just gets it. false (d
 * unchanged) when memory runs out. */
static bool
resize_start(struct dict *d, uint64_t n)
{
    struct dict_entry **t = table_new(d, n);
    if (t == NULL) {
        return false;
    }
    if (d->t == NULL) {
        d->t = t;
        d->mask = n - 1;
    } else {
        d->t1 = t;
        d->mask1 = n - 1;
        d->rehash_idx = 0;
    }
    return true;
}

/* The old table is empty: the new one takes its place. */
static void
resize_end(struct dict *d)
{
    table_free(d, d->t);
    d->t = d->t1;
    d->mask = d->mask1;
    d->t1 = NULL;
    d->mask1 = 0;
    d->rehash_idx = 0;
}

/* Move up to n entries into the new table, passing at most 10 * n empty
 * buckets; the entries moved. */
static uint64_t
rehash_step(struct dict *d, uint64_t n)
{
    uint64_t moved = 0;
    uint64_t empty = n > UINT64_MAX / 10 ? UINT64_MAX : n * 10;
    while (rehashing(d) && moved < n) {
        if (d->rehash_idx > d->mask) {
            resize_end(d);
            break;
        }
        struct dict_entry **b = &d->t[d->rehash_idx];
        if (*b == NULL) {
            if (empty == 0) {
                break;
            }
            empty--;
            d->rehash_idx++;
            continue;
        }
        struct dict_entry *e = *b;
        *b = e->next;
        struct dict_entry **nb = &d->t1[dict_hash(e->kv, e->klen) & d->mask1];
        e->next = *nb;
        *nb = e;
        moved++;
    }
    /* Done as soon as the last bucket is empty, not one call later. */
    while (rehashing(d) && d->rehash_idx <= d->mask
           && d->t[d->rehash_idx] == NULL && empty > 0) {
        d->rehash_idx++;
        empty--;
    }
    if (rehashing(d) && d->rehash_idx > d->mask) {
        resize_end(d);
    }
    return moved;
}

/* The share of a resize every operation carries. */
static void
rehash_some(struct dict *d)
{
    if (rehashing(d)) {
        (void)rehash_step(d, DICT_STEP_ENTRIES);
    }
}

uint64_t
dict_rehash(struct dict *d, uint64_t n)
{
    return rehash_step(d, n);
}

static struct dict_entry *
chain_find(struct dict_entry *e, const void *key, size_t klen)
{
    for (; e != NULL; e = e->next) {
        if (e->klen == klen && memcmp(e->kv, key, klen) == 0) {
            return e;
        }
    }
    return NULL;
}

struct dict_entry *
dict_find(const struct dict *d, const void *key, size_t klen)
{
    if (d->t == NULL) {
        return NULL;
    }
    uint64_t h = dict_hash(key, klen);
    struct dict_entry *e = NULL;
    if (!rehashing(d) || (h & d->mask) >= d->rehash_idx) {
        e = chain_find(d->t[h & d->mask], key, klen);
    }
    if (e == NULL && rehashing(d)) {
        e = chain_find(d->t1[h & d->mask1], key, klen);
    }
    return e;
}

/* The smallest power of two of buckets, DICT_MIN_BUCKETS or more, that
 * is at least n; 0 when there is none. */
static uint64_t
buckets_for(uint64_t n)
{
    uint64_t want = DICT_MIN_BUCKETS;
    while (want < n) {
        if (want > UINT64_MAX / 2) {
            return 0;
        }
        want *= 2;
    }
    return want;
}

struct dict_entry *
dict_add(struct dict *d, const void *key, uint32_t klen, const void *val,
         uint32_t vlen)
{
    struct dict_entry *e = block_realloc(d, NULL, entry_size(klen, vlen));
    if (e == NULL) {
        return NULL;
    }
    if (d->t == NULL) {
        if (!resize_start(d, DICT_MIN_BUCKETS)) {
            block_free(d, e);
            return NULL;
        }
    } else if (rehashing(d)) {
        rehash_some(d);
    } else if (d->used >= d->mask + 1) {
        /* A failed allocation only postpones the doubling: the chains
         * grow longer meanwhile, still correct, and the next add tries
         * again. */
        uint64_t n = buckets_for(d->used + 1);
        if (n > d->mask + 1) {
            (void)resize_start(d, n);
        }
    }
    e->owner.p = NULL;
    e->klen = klen;
    e->vlen = vlen;
    if (klen > 0) {
        memcpy(e->kv, key, klen);
    }
    if (vlen > 0) {
        memcpy(e->kv + klen, val, vlen);
    }
    uint64_t h = dict_hash(key, klen);
    struct dict_entry **head = rehashing(d) ? &d->t1[h & d->mask1]
                                            : &d->t[h & d->mask];
    e->next = *head;
    *head = e;
    d->used++;
    d->owned += mem_usable(e);
    return e;
}

/* The link that points at e (its bucket's head or its predecessor's),
 * in whichever table holds it. */
static struct dict_entry **
dict_link(const struct dict *d, const struct dict_entry *e)
{
    uint64_t h = dict_hash(e->kv, e->klen);
    if (!rehashing(d) || (h & d->mask) >= d->rehash_idx) {
        for (struct dict_entry **l = &d->t[h & d->mask]; *l != NULL;
             l = &(*l)->next) {
            if (*l == e) {
                return l;
            }
        }
    }
    /* Not in the old table: then in the new one. */
    struct dict_entry **l = &d->t1[h & d->mask1];
    while (*l != e) {
        l = &(*l)->next;
    }
    return l;
}

struct dict_entry *
dict_set_value(struct dict *d, struct dict_entry *e, const void *val,
               uint32_t vlen)
{
    rehash_some(d);
    struct dict_entry **l = dict_link(d, e);
    size_t old = mem_usable(e);
    struct dict_entry *n = block_realloc(d, e, entry_size(e->klen, vlen));
    if (n == NULL) {
        return NULL;
    }
    *l = n;
    n->vlen = vlen;
    if (vlen > 0) {
        memmove(n->kv + n->klen, val, vlen);
    }
    d->owned = d->owned - old + mem_usable(n);
    return n;
}

void
dict_remove(struct dict *d, struct dict_entry *e)
{
    rehash_some(d);
    struct dict_entry **l = dict_link(d, e);
    *l = e->next;
    d->owned -= mem_usable(e);
    block_free(d, e);
    d->used--;
    if (d->used == 0) {
        /* Empty owns nothing, as a zeroed dict: a resize under way has
         * nothing left to move. */
        table_free(d, d->t);
        if (rehashing(d)) {
            table_free(d, d->t1);
        }
        d->t = NULL;
        d->mask = 0;
        d->t1 = NULL;
        d->mask1 = 0;
        d->rehash_idx = 0;
    } else if (!rehashing(d) && d->mask + 1 > DICT_MIN_BUCKETS
               && d->used < (d->mask + 1) / 8) {
        /* Down to the fewest buckets that hold every entry. A failed
         * allocation only keeps the larger table for now. */
        (void)resize_start(d, buckets_for(d->used));
    }
}

bool
dict_remove_key(struct dict *d, const void *key, size_t klen)
{
    struct dict_entry *e = dict_find(d, key, klen);
    if (e == NULL) {
        return false;
    }
    dict_remove(d, e);
    return true;
}

struct dict_entry *
dict_next(const struct dict *d, struct dict_iter *it)
{
    /* it->bucket counts the old table's buckets, then the new one's. */
    while (it->next == NULL) {
        if (d->t == NULL) {
            return NULL;
        }
        uint64_t b = it->bucket;
        if (b <= d->mask) {
            it->next = d->t[b];
        } else if (rehashing(d) && b - (d->mask + 1) <= d->mask1) {
            it->next = d->t1[b - (d->mask + 1)];
        } else {
            return NULL;
        }
        it->bucket++;
    }
    struct dict_entry *e = it->next;
    it->next = e->next;
    return e;
}

static void
scan_chain(const struct dict_entry *e, dict_scan_fn fn, void *arg)
{
    while (e != NULL) {
        const struct dict_entry *next = e->next;
        fn(e, arg);
        e = next;
    }
}

uint64_t
dict_scan(const struct dict *d, uint64_t cursor, dict_scan_fn fn, void *arg)
{
    if (d->t == NULL) {
        return 0;
    }
    if (!rehashing(d)) {
        scan_chain(d->t[cursor & d->mask], fn, arg);
        /* Increment the cursor's masked bits from the top down: the
         * buckets a bucket splits into (or merges from) when the table
         * grows (or shrinks) come next to each other in this order, so
         * none is missed. */
        return dict_cursor_next(cursor, d->mask);
    }
    /* Both tables: the small one's bucket, then every bucket of the
     * large one that expands it (where its entries go when the table
     * grows, or come from when it shrinks), so the half-moved bucket
     * is seen whole either way. */
    struct dict_entry *const *small = d->t, *const *large = d->t1;
    uint64_t ms = d->mask, ml = d->mask1;
    if (ms > ml) {
        small = d->t1;
        large = d->t;
        ms = d->mask1;
        ml = d->mask;
    }
    scan_chain(small[cursor & ms], fn, arg);
    do {
        scan_chain(large[cursor & ml], fn, arg);
        cursor = dict_cursor_next(cursor, ml);
    } while (cursor & (ms ^ ml));
    return cursor;
}

bool
dict_expand(struct dict *d, uint64_t n)
{
    uint64_t want = buckets_for(n);
    if (want == 0) {
        return false;
    }
    if (rehashing(d)) {
        if (want <= d->mask1 + 1) {
            return true;
        }
        /* A larger table than the one under way: finish this resize
         * first (a caller that knows its count pays once). */
        while (rehashing(d)) {
            (void)rehash_step(d, UINT64_MAX / 16);
        }
    }
    if (d->t != NULL && want <= d->mask + 1) {
        return true;
    }
    return resize_start(d, want);
}

void
dict_free(struct dict *d)
{
    struct dict_entry **tables[2] = { d->t, d->t1 };
    uint64_t masks[2] = { d->mask, d->mask1 };
    for (int i = 0; i < 2; i++) {
        if (tables[i] == NULL) {
            continue;
        }
        for (uint64_t b = 0; b <= masks[i]; b++) {
            struct dict_entry *e = tables[i][b];
            while (e != NULL) {
                struct dict_entry *next = e->next;
                block_free(d, e);
                e = next;
            }
        }
        block_free(d, tables[i]);
    }
    unsigned server = d->server;
    memset(d, 0, sizeof(*d));
    d->server = server;
}
