/*
 * dict.c - the hash table of lib/dict.h.
 *
 * Resizes happen at once, not incrementally as Redis's do: the tables
 * here belong to one key each and a resize touches only its entries, and
 * doing it at once keeps a single table, which the scan cursor below
 * relies on (no second table to visit).
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

static size_t
entry_size(uint32_t klen, uint32_t vlen)
{
    return offsetof(struct dict_entry, kv) + (size_t)klen + vlen;
}

struct dict_entry *
dict_find(const struct dict *d, const void *key, size_t klen)
{
    if (d->t == NULL) {
        return NULL;
    }
    struct dict_entry *e = d->t[dict_hash(key, klen) & d->mask];
    for (; e != NULL; e = e->next) {
        if (e->klen == klen && memcmp(e->kv, key, klen) == 0) {
            return e;
        }
    }
    return NULL;
}

/* Move every entry into a table of n buckets (a power of two). false
 * (d unchanged) when memory runs out. */
static bool
dict_rehash(struct dict *d, uint64_t n)
{
    if (n > SIZE_MAX / sizeof(struct dict_entry *)) {
        return false;
    }
    struct dict_entry **t = mem_owned_realloc(NULL, n * sizeof(*t));
    if (t == NULL) {
        return false;
    }
    memset(t, 0, n * sizeof(*t));
    uint64_t mask = n - 1;
    if (d->t != NULL) {
        for (uint64_t b = 0; b <= d->mask; b++) {
            struct dict_entry *e = d->t[b];
            while (e != NULL) {
                struct dict_entry *next = e->next;
                uint64_t nb = dict_hash(e->kv, e->klen) & mask;
                e->next = t[nb];
                t[nb] = e;
                e = next;
            }
        }
        d->owned -= mem_usable(d->t);
        mem_owned_free(d->t);
    }
    d->t = t;
    d->mask = mask;
    d->owned += mem_usable(t);
    return true;
}

struct dict_entry *
dict_add(struct dict *d, const void *key, uint32_t klen, const void *val,
         uint32_t vlen)
{
    struct dict_entry *e = mem_owned_realloc(NULL, entry_size(klen, vlen));
    if (e == NULL) {
        return NULL;
    }
    if (d->t == NULL) {
        if (!dict_rehash(d, DICT_MIN_BUCKETS)) {
            mem_owned_free(e);
            return NULL;
        }
    } else if (d->used >= d->mask + 1) {
        /* A failed doubling only lengthens the chains: still correct. */
        (void)dict_rehash(d, (d->mask + 1) * 2);
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
    struct dict_entry **head = &d->t[dict_hash(key, klen) & d->mask];
    e->next = *head;
    *head = e;
    d->used++;
    d->owned += mem_usable(e);
    return e;
}

/* The link that points at e (its bucket's head or its predecessor's). */
static struct dict_entry **
dict_link(const struct dict *d, const struct dict_entry *e)
{
    struct dict_entry **l = &d->t[dict_hash(e->kv, e->klen) & d->mask];
    while (*l != e) {
        l = &(*l)->next;
    }
    return l;
}

struct dict_entry *
dict_set_value(struct dict *d, struct dict_entry *e, const void *val,
               uint32_t vlen)
{
    struct dict_entry **l = dict_link(d, e);
    size_t old = mem_usable(e);
    struct dict_entry *n = mem_owned_realloc(e, entry_size(e->klen, vlen));
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
    struct dict_entry **l = dict_link(d, e);
    *l = e->next;
    d->owned -= mem_usable(e);
    mem_owned_free(e);
    d->used--;
    if (d->used == 0) {
        /* Empty owns nothing, as a zeroed dict. */
        d->owned -= mem_usable(d->t);
        mem_owned_free(d->t);
        d->t = NULL;
        d->mask = 0;
    } else if (d->mask + 1 > DICT_MIN_BUCKETS
               && d->used < (d->mask + 1) / 8) {
        /* A failed halving only keeps the larger table. */
        (void)dict_rehash(d, (d->mask + 1) / 2);
    }
}

struct dict_entry *
dict_next(const struct dict *d, struct dict_iter *it)
{
    while (it->next == NULL) {
        if (d->t == NULL || it->bucket > d->mask) {
            return NULL;
        }
        it->next = d->t[it->bucket++];
    }
    struct dict_entry *e = it->next;
    it->next = e->next;
    return e;
}

static uint64_t
rev64(uint64_t v)
{
    v = ((v >> 1) & UINT64_C(0x5555555555555555))
        | ((v & UINT64_C(0x5555555555555555)) << 1);
    v = ((v >> 2) & UINT64_C(0x3333333333333333))
        | ((v & UINT64_C(0x3333333333333333)) << 2);
    v = ((v >> 4) & UINT64_C(0x0f0f0f0f0f0f0f0f))
        | ((v & UINT64_C(0x0f0f0f0f0f0f0f0f)) << 4);
    v = ((v >> 8) & UINT64_C(0x00ff00ff00ff00ff))
        | ((v & UINT64_C(0x00ff00ff00ff00ff)) << 8);
    v = ((v >> 16) & UINT64_C(0x0000ffff0000ffff))
        | ((v & UINT64_C(0x0000ffff0000ffff)) << 16);
    return (v >> 32) | (v << 32);
}

uint64_t
dict_scan(const struct dict *d, uint64_t cursor, dict_scan_fn fn, void *arg)
{
    if (d->t == NULL) {
        return 0;
    }
    for (const struct dict_entry *e = d->t[cursor & d->mask]; e != NULL;
         e = e->next) {
        fn(e, arg);
    }
    /* Increment the cursor's masked bits from the top down: the buckets
     * a bucket splits into (or merges from) when the table doubles (or
     * halves) come next to each other in this order, so none is missed. */
    cursor |= ~d->mask;
    cursor = rev64(cursor);
    cursor++;
    return rev64(cursor);
}

bool
dict_expand(struct dict *d, uint64_t n)
{
    uint64_t want = DICT_MIN_BUCKETS;
    while (want < n) {
        if (want > UINT64_MAX / 2) {
            return false;
        }
        want *= 2;
    }
    if (d->t != NULL && want <= d->mask + 1) {
        return true;
    }
    return dict_rehash(d, want);
}

void
dict_free(struct dict *d)
{
    if (d->t != NULL) {
        for (uint64_t b = 0; b <= d->mask; b++) {
            struct dict_entry *e = d->t[b];
            while (e != NULL) {
                struct dict_entry *next = e->next;
                mem_owned_free(e);
                e = next;
            }
        }
        mem_owned_free(d->t);
    }
    memset(d, 0, sizeof(*d));
}
