/*
 * topk.c - Space-Saving in fixed memory (see topk.h).
 *
 * Layout of the one block: the slots (error, hash, key bytes, links), the
 * buckets (Metwally's Stream-Summary: one per count in use, each the list
 * of its slots, linked by increasing count, so the least counted slot is
 * the first bucket's head and a count + 1 moves a slot to the next bucket,
 * O(1)), and the index (open addressing, linear probing, a power of two
 * at least twice the capacity so probes stay short; slot number + 1,
 * 0 = empty; deletion shifts the following run back, no tombstones).
 */
#include "lib/topk.h"

#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"

#define TOPK_MAX_CAPACITY ((size_t)1 << 24)
#define NONE UINT32_MAX

struct topk_slot {
    uint64_t error;
    uint64_t hash;
    uint32_t bucket;            /* the bucket of its count */
    uint32_t prev, next;        /* the other slots of that bucket */
    uint32_t index_pos;         /* where the index points at this slot */
    uint8_t len;                /* bytes kept, <= TOPK_KEY_MAX */
    bool truncated;
    char key[TOPK_KEY_MAX];
};

/* The slots of one count, linked; the buckets linked by increasing count. */
struct topk_bucket {
    uint64_t count;
    uint32_t head;
    uint32_t prev, next;
};

struct topk {
    size_t cap;
    size_t used;                /* slots taken */
    size_t mask;                /* index size - 1 */
    int64_t window_ns;
    int64_t window_start;
    uint32_t min;               /* the bucket of the least count, or NONE */
    uint32_t free_buckets;      /* linked through next */
    struct topk_slot *slots;
    struct topk_bucket *buckets;    /* cap + 1: one more while moving */
    uint32_t *index;
    uint32_t *order;            /* topk_top()'s scratch */
};

static void buckets_reset(struct topk *t);

struct topk *
topk_create(size_t capacity, int64_t window_ns, int64_t now)
{
    if (capacity == 0 || capacity > TOPK_MAX_CAPACITY || window_ns <= 0) {
        return NULL;
    }
    size_t isize = 1;
    while (isize < 2 * capacity) {
        isize <<= 1;
    }
    size_t bytes = sizeof(struct topk) + capacity * sizeof(struct topk_slot)
                   + (capacity + 1) * sizeof(struct topk_bucket)
                   + (capacity + isize) * sizeof(uint32_t);
    unsigned char *b = mem_calloc(1, bytes);
    if (b == NULL) {
        return NULL;
    }
    struct topk *t = (struct topk *)b;
    t->cap = capacity;
    t->mask = isize - 1;
    t->window_ns = window_ns;
    t->window_start = now;
    t->slots = (struct topk_slot *)(b + sizeof(*t));
    t->buckets = (struct topk_bucket *)(t->slots + capacity);
    t->order = (uint32_t *)(t->buckets + capacity + 1);
    t->index = t->order + capacity;
    buckets_reset(t);
    return t;
}

void
topk_destroy(struct topk *t)
{
    mem_free(t);
}

size_t
topk_capacity(const struct topk *t)
{
    return t->cap;
}

void
topk_clear(struct topk *t)
{
    t->used = 0;
    buckets_reset(t);
    memset(t->index, 0, (t->mask + 1) * sizeof(*t->index));
}

/* ---- the buckets (Metwally's Stream-Summary) --------------------------- */

static void
buckets_reset(struct topk *t)
{
    t->min = NONE;
    for (size_t i = 0; i <= t->cap; i++) {
        t->buckets[i].next = i < t->cap ? (uint32_t)(i + 1) : NONE;
    }
    t->free_buckets = 0;
}

/* A new empty bucket of count placed after bucket `after` (NONE: first). */
static uint32_t
bucket_insert(struct topk *t, uint32_t after, uint64_t count)
{
    uint32_t b = t->free_buckets;
    struct topk_bucket *nb = &t->buckets[b];
    t->free_buckets = nb->next;
    nb->count = count;
    nb->head = NONE;
    nb->prev = after;
    nb->next = after == NONE ? t->min : t->buckets[after].next;
    if (nb->next != NONE) {
        t->buckets[nb->next].prev = b;
    }
    if (after == NONE) {
        t->min = b;
    } else {
        t->buckets[after].next = b;
    }
    return b;
}

static void
bucket_remove(struct topk *t, uint32_t b)
{
    struct topk_bucket *ob = &t->buckets[b];
    if (ob->prev == NONE) {
        t->min = ob->next;
    } else {
        t->buckets[ob->prev].next = ob->next;
    }
    if (ob->next != NONE) {
        t->buckets[ob->next].prev = ob->prev;
    }
    ob->next = t->free_buckets;
    t->free_buckets = b;
}

static void
slot_link(struct topk *t, uint32_t s, uint32_t b)
{
    struct topk_slot *x = &t->slots[s];
    x->bucket = b;
    x->prev = NONE;
    x->next = t->buckets[b].head;
    if (x->next != NONE) {
        t->slots[x->next].prev = s;
    }
    t->buckets[b].head = s;
}

/* Take s out of its bucket, the bucket out of the list when emptied. */
static void
slot_unlink(struct topk *t, uint32_t s)
{
    struct topk_slot *x = &t->slots[s];
    if (x->prev == NONE) {
        t->buckets[x->bucket].head = x->next;
    } else {
        t->slots[x->prev].next = x->next;
    }
    if (x->next != NONE) {
        t->slots[x->next].prev = x->prev;
    }
    if (t->buckets[x->bucket].head == NONE) {
        bucket_remove(t, x->bucket);
    }
}

/* s's count + 1: into the next bucket when it has that count, else a new
 * one (or its own, raised, when s is alone in it). */
static void
slot_increment(struct topk *t, uint32_t s)
{
    uint32_t b = t->slots[s].bucket;
    uint64_t c = t->buckets[b].count + 1;
    uint32_t nb = t->buckets[b].next;
    bool fits_next = nb != NONE && t->buckets[nb].count == c;
    if (!fits_next && t->buckets[b].head == s && t->slots[s].next == NONE) {
        t->buckets[b].count = c;
        return;
    }
    if (!fits_next) {
        nb = bucket_insert(t, b, c);
    }
    slot_unlink(t, s);
    slot_link(t, s, nb);
}

/* A new slot of count 1, where the buckets' order puts it (after one of
 * count 0 that decay left, if any). */
static void
slot_add_one(struct topk *t, uint32_t s)
{
    uint32_t after = NONE, b = t->min;
    if (b != NONE && t->buckets[b].count == 0) {
        after = b;
        b = t->buckets[b].next;
    }
    if (b == NONE || t->buckets[b].count != 1) {
        b = bucket_insert(t, after, 1);
    }
    slot_link(t, s, b);
}

static uint64_t
slot_count(const struct topk *t, uint32_t s)
{
    return t->buckets[t->slots[s].bucket].count;
}

/* ---- the index ---------------------------------------------------------- */

static bool
slot_is(const struct topk_slot *s, const char *key, size_t len,
        bool truncated, uint64_t hash)
{
    return s->hash == hash && s->len == len && s->truncated == truncated
           && memcmp(s->key, key, len) == 0;
}

/* The index position holding the key, or the empty one ending its run. */
static size_t
index_find(const struct topk *t, const char *key, size_t len, bool truncated,
           uint64_t hash)
{
    size_t i = (size_t)hash & t->mask;
    while (t->index[i] != 0
           && !slot_is(&t->slots[t->index[i] - 1], key, len, truncated,
                       hash)) {
        i = (i + 1) & t->mask;
    }
    return i;
}

/* Empty position i, moving back the entries of the run after it that
 * would otherwise be cut off from their home position. */
static void
index_delete(struct topk *t, size_t i)
{
    size_t j = i;
    for (;;) {
        t->index[i] = 0;
        for (;;) {
            j = (j + 1) & t->mask;
            if (t->index[j] == 0) {
                return;
            }
            size_t home = (size_t)t->slots[t->index[j] - 1].hash & t->mask;
            /* j's entry may stay unless its home lies cyclically in (i, j] */
            bool stays = i <= j ? (i < home && home <= j)
                                : (i < home || home <= j);
            if (!stays) {
                break;
            }
        }
        t->index[i] = t->index[j];
        t->slots[t->index[i] - 1].index_pos = (uint32_t)i;
        i = j;
    }
}

/* ---- recording ---------------------------------------------------------- */

/* Whether a window has passed since the last halving: the one test every
 * record makes, inline (a clock that went back decays nothing). */
static inline bool
decay_due(const struct topk *t, int64_t now)
{
    return now >= t->window_start && now - t->window_start >= t->window_ns;
}

static void decay(struct topk *t, int64_t now);

void
topk_decay(struct topk *t, int64_t now)
{
    if (decay_due(t, now)) {
        decay(t, now);
    }
}

static void
decay(struct topk *t, int64_t now)
{
    int64_t elapsed = now - t->window_start;
    int64_t halvings = elapsed / t->window_ns;
    t->window_start = now - elapsed % t->window_ns;
    unsigned shift = halvings >= 64 ? 64 : (unsigned)halvings;
    for (size_t i = 0; i < t->used; i++) {
        struct topk_slot *x = &t->slots[i];
        x->error = shift == 64 ? 0 : x->error >> shift;
    }
    /* Halving keeps the order but may make neighbours equal: merge them. */
    uint32_t prev = NONE;
    for (uint32_t b = t->min; b != NONE;) {
        uint32_t next = t->buckets[b].next;
        uint64_t c = t->buckets[b].count;
        t->buckets[b].count = shift == 64 ? 0 : c >> shift;
        if (prev != NONE && t->buckets[prev].count == t->buckets[b].count) {
            while (t->buckets[b].head != NONE) {
                uint32_t s = t->buckets[b].head;
                slot_unlink(t, s);          /* the last one frees b */
                slot_link(t, s, prev);
            }
        } else {
            prev = b;
        }
        b = next;
    }
}

static void
slot_set_key(struct topk_slot *s, const char *key, size_t len,
             bool truncated, uint64_t hash)
{
    memcpy(s->key, key, len);
    s->len = (uint8_t)len;
    s->truncated = truncated;
    s->hash = hash;
}

void
topk_record(struct topk *t, const char *key, size_t len, uint64_t hash,
            int64_t now)
{
    if (decay_due(t, now)) {
        decay(t, now);
    }
    bool truncated = len > TOPK_KEY_MAX;
    if (truncated) {
        len = TOPK_KEY_MAX;
    }
    size_t i = index_find(t, key, len, truncated, hash);
    if (t->index[i] != 0) {
        slot_increment(t, t->index[i] - 1);
        return;
    }
    uint32_t n;
    if (t->used < t->cap) {
        n = (uint32_t)t->used++;
        t->slots[n].error = 0;
        slot_set_key(&t->slots[n], key, len, truncated, hash);
        t->index[i] = n + 1;
        t->slots[n].index_pos = (uint32_t)i;
        slot_add_one(t, n);
        return;
    }
    /* Space-Saving: the new key takes a least counted slot, count + 1. */
    n = t->buckets[t->min].head;
    struct topk_slot *x = &t->slots[n];
    index_delete(t, x->index_pos);
    x->error = t->buckets[t->min].count;
    slot_set_key(x, key, len, truncated, hash);
    i = index_find(t, key, len, truncated, hash);
    t->index[i] = n + 1;
    x->index_pos = (uint32_t)i;
    slot_increment(t, n);
}

/* ---- reading ------------------------------------------------------------ */

size_t
topk_size(const struct topk *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->used; i++) {
        n += slot_count(t, (uint32_t)i) > 0;
    }
    return n;
}

static const struct topk *sort_t;   /* qsort has no context */

static int
by_count_desc(const void *a, const void *b)
{
    uint32_t sa = *(const uint32_t *)a, sb = *(const uint32_t *)b;
    const struct topk_slot *x = &sort_t->slots[sa];
    const struct topk_slot *y = &sort_t->slots[sb];
    uint64_t ca = slot_count(sort_t, sa), cb = slot_count(sort_t, sb);
    if (ca != cb) {
        return ca > cb ? -1 : 1;
    }
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c != 0) {
        return c;
    }
    return (x->len > y->len) - (x->len < y->len);
}

size_t
topk_top(struct topk *t, struct topk_entry *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < t->used; i++) {
        if (slot_count(t, (uint32_t)i) > 0) {
            t->order[n++] = (uint32_t)i;
        }
    }
    sort_t = t;
    qsort(t->order, n, sizeof(*t->order), by_count_desc);
    if (n > max) {
        n = max;
    }
    for (size_t i = 0; i < n; i++) {
        const struct topk_slot *s = &t->slots[t->order[i]];
        out[i] = (struct topk_entry){ s->key, s->len,
                                      slot_count(t, t->order[i]), s->error,
                                      s->truncated };
    }
    return n;
}
