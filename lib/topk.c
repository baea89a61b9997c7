/*
 * topk.c - Space-Saving in fixed memory (see topk.h).
 *
 * Layout of the one block: the slots (count, error, hash, heap position,
 * key bytes), the heap (slot numbers, least count on top: the slot a new
 * key takes), and the index (open addressing, linear probing, a power of
 * two at least twice the capacity so probes stay short; slot number + 1,
 * 0 = empty; deletion shifts the following run back, no tombstones).
 */
#include "lib/topk.h"

#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"

#define TOPK_MAX_CAPACITY ((size_t)1 << 24)

struct topk_slot {
    uint64_t count;
    uint64_t error;
    uint64_t hash;
    uint32_t heap_pos;
    uint32_t index_pos;         /* where the index points at this slot */
    uint8_t len;                /* bytes kept, <= TOPK_KEY_MAX */
    bool truncated;
    char key[TOPK_KEY_MAX];
};

struct topk {
    size_t cap;
    size_t used;                /* slots taken (heap size) */
    size_t mask;                /* index size - 1 */
    int64_t window_ns;
    int64_t window_start;
    struct topk_slot *slots;
    uint32_t *heap;
    uint32_t *index;
    uint32_t *order;            /* topk_top()'s scratch */
};

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
                   + (2 * capacity + isize) * sizeof(uint32_t);
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
    t->heap = (uint32_t *)(t->slots + capacity);
    t->order = t->heap + capacity;
    t->index = t->order + capacity;
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
    memset(t->index, 0, (t->mask + 1) * sizeof(*t->index));
}

/* ---- the heap ---------------------------------------------------------- */

static void
heap_put(struct topk *t, size_t pos, uint32_t s)
{
    t->heap[pos] = s;
    t->slots[s].heap_pos = (uint32_t)pos;
}

static void
sift_up(struct topk *t, size_t pos)
{
    uint32_t s = t->heap[pos];
    while (pos > 0) {
        size_t parent = (pos - 1) / 2;
        if (t->slots[t->heap[parent]].count <= t->slots[s].count) {
            break;
        }
        heap_put(t, pos, t->heap[parent]);
        pos = parent;
    }
    heap_put(t, pos, s);
}

static void
sift_down(struct topk *t, size_t pos)
{
    uint32_t s = t->heap[pos];
    uint64_t c = t->slots[s].count;
    for (;;) {
        size_t child = 2 * pos + 1;
        if (child >= t->used) {
            break;
        }
        if (child + 1 < t->used && t->slots[t->heap[child + 1]].count
                                       < t->slots[t->heap[child]].count) {
            child++;
        }
        if (t->slots[t->heap[child]].count >= c) {
            break;
        }
        heap_put(t, pos, t->heap[child]);
        pos = child;
    }
    heap_put(t, pos, s);
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

void
topk_decay(struct topk *t, int64_t now)
{
    if (now < t->window_start || now - t->window_start < t->window_ns) {
        return;
    }
    int64_t elapsed = now - t->window_start;
    int64_t halvings = elapsed / t->window_ns;
    t->window_start = now - elapsed % t->window_ns;
    unsigned shift = halvings >= 64 ? 64 : (unsigned)halvings;
    for (size_t i = 0; i < t->used; i++) {
        struct topk_slot *s = &t->slots[i];
        s->count = shift == 64 ? 0 : s->count >> shift;
        s->error = shift == 64 ? 0 : s->error >> shift;
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
    topk_decay(t, now);
    bool truncated = len > TOPK_KEY_MAX;
    if (truncated) {
        len = TOPK_KEY_MAX;
    }
    size_t i = index_find(t, key, len, truncated, hash);
    if (t->index[i] != 0) {
        struct topk_slot *s = &t->slots[t->index[i] - 1];
        s->count++;
        sift_down(t, s->heap_pos);
        return;
    }
    uint32_t n;
    if (t->used < t->cap) {
        n = (uint32_t)t->used++;
        t->slots[n].count = 1;
        t->slots[n].error = 0;
        heap_put(t, t->used - 1, n);
        slot_set_key(&t->slots[n], key, len, truncated, hash);
        t->index[i] = n + 1;
        t->slots[n].index_pos = (uint32_t)i;
        sift_up(t, t->used - 1);
        return;
    }
    n = t->heap[0];
    struct topk_slot *s = &t->slots[n];
    index_delete(t, s->index_pos);
    s->error = s->count;
    s->count++;
    slot_set_key(s, key, len, truncated, hash);
    i = index_find(t, key, len, truncated, hash);
    t->index[i] = n + 1;
    s->index_pos = (uint32_t)i;
    sift_down(t, 0);
}

/* ---- reading ------------------------------------------------------------ */

size_t
topk_size(const struct topk *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->used; i++) {
        n += t->slots[i].count > 0;
    }
    return n;
}

static const struct topk_slot *sort_slots;  /* qsort has no context */

static int
by_count_desc(const void *a, const void *b)
{
    const struct topk_slot *x = &sort_slots[*(const uint32_t *)a];
    const struct topk_slot *y = &sort_slots[*(const uint32_t *)b];
    if (x->count != y->count) {
        return x->count > y->count ? -1 : 1;
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
        if (t->slots[i].count > 0) {
            t->order[n++] = (uint32_t)i;
        }
    }
    sort_slots = t->slots;
    qsort(t->order, n, sizeof(*t->order), by_count_desc);
    if (n > max) {
        n = max;
    }
    for (size_t i = 0; i < n; i++) {
        const struct topk_slot *s = &t->slots[t->order[i]];
        out[i] = (struct topk_entry){ s->key, s->len, s->count, s->error,
                                      s->truncated };
    }
    return n;
}
