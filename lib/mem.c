/*
 * mem.c - counted allocation (see mem.h).
 *
 * Several threads allocate: the main thread (commands, keys), the I/O
 * threads (their clients' query buffers and replies) and the busy
 * server's thread. Each counts in a slot of its own, written only by it
 * (a relaxed load and store, no locked instruction on the allocation
 * path), and mem_used() sums the slots. A block one thread allocates and
 * another frees moves bytes between two slots, so a slot alone may go
 * "negative" (it wraps): only the sum means anything. Slots sit on their
 * own cache lines, so threads counting side by side do not share one.
 *
 * The peak is the main thread's to keep: it compares its own count plus
 * the others' as last summed (mem_used(), called by INFO and the cron)
 * on every allocation, and mem_used() checks the exact sum. The owned
 * bytes (keys') are the main thread's alone.
 */
#include "lib/mem.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct slot {
    _Atomic size_t used;                /* wraps: see above */
    char pad[64 - sizeof(size_t)];
};

static struct slot slots[MEM_SLOTS];
static _Atomic unsigned nslots = 1;     /* slots in use: [0, nslots) */
static _Thread_local struct slot *mine = &slots[0];
static size_t others_seen;              /* main: the others' last sum */
static size_t peak_bytes;
static size_t owned_bytes;

static void
count(size_t add, size_t sub)
{
    size_t now = atomic_load_explicit(&mine->used, memory_order_relaxed) +
                 add - sub;
    atomic_store_explicit(&mine->used, now, memory_order_relaxed);
    if (mine == &slots[0] && add > sub && now + others_seen > peak_bytes) {
        peak_bytes = now + others_seen;
    }
}

void
mem_thread_slot(unsigned slot)
{
    if (slot >= MEM_SLOTS) {
        slot = MEM_SLOTS - 1;
    }
    mine = &slots[slot];
    unsigned n = atomic_load_explicit(&nslots, memory_order_relaxed);
    while (n <= slot &&
           !atomic_compare_exchange_weak(&nslots, &n, slot + 1)) {
    }
}

static void
account_alloc(void *p)
{
    if (p != NULL) {
        count(malloc_usable_size(p), 0);
    }
}

void *
mem_malloc(size_t size)
{
    void *p = malloc(size);
    account_alloc(p);
    return p;
}

void *
mem_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    account_alloc(p);
    return p;
}

void *
mem_realloc(void *p, size_t size)
{
    size_t old = p != NULL ? malloc_usable_size(p) : 0;
    void *q = realloc(p, size);
    if (q == NULL) {
        return NULL; /* the old block is untouched and still counted */
    }
    count(malloc_usable_size(q), old);
    return q;
}

void
mem_free(void *p)
{
    if (p != NULL) {
        count(0, malloc_usable_size(p));
        free(p);
    }
}

void
mem_charge(size_t n)
{
    count(n, 0);
}

void
mem_uncharge(size_t n)
{
    count(0, n);
}

bool
mem_reserve(unsigned char **p, size_t *cap, size_t used, size_t more,
            size_t first)
{
    if (*cap - used >= more) {
        return true;
    }
    size_t want = *cap ? *cap : (first > 0 ? first : 1);
    while (want - used < more) {
        if (want > SIZE_MAX / 2) {
            return false;
        }
        want *= 2;
    }
    unsigned char *q = mem_realloc(*p, want);
    if (q == NULL) {
        return false;
    }
    *p = q;
    *cap = want;
    return true;
}

bool
membuf_put(struct membuf *b, const void *p, size_t n)
{
    if (n == 0) {
        return true;
    }
    if (!mem_reserve(&b->p, &b->cap, b->len, n, 256)) {
        return false;
    }
    __builtin_memcpy(b->p + b->len, p, n);
    b->len += n;
    return true;
}

size_t
mem_usable(const void *p)
{
    return p != NULL ? malloc_usable_size((void *)p) : 0;
}

size_t
mem_used(void)
{
    size_t others = 0;
    unsigned n = atomic_load_explicit(&nslots, memory_order_relaxed);
    for (unsigned i = 1; i < n; i++) {
        others += atomic_load_explicit(&slots[i].used, memory_order_relaxed);
    }
    size_t all = atomic_load_explicit(&slots[0].used, memory_order_relaxed) +
                 others;
    if (mine == &slots[0]) {
        others_seen = others;
        if (all > peak_bytes) {
            peak_bytes = all;
        }
    }
    return all;
}

size_t
mem_peak(void)
{
    return peak_bytes;
}

void
mem_trim(void)
{
    malloc_trim(0);
}

size_t
mem_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0, rss = 0;
    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%lu %lu", &pages, &rss) != 2) {
        rss = 0;
    }
    fclose(f);
    return (size_t)rss * (size_t)sysconf(_SC_PAGESIZE);
}

void *
mem_owned_realloc(void *p, size_t size)
{
    size_t old = p != NULL ? malloc_usable_size(p) : 0;
    void *q = mem_realloc(p, size);
    if (q != NULL) {
        owned_bytes -= old;
        owned_bytes += malloc_usable_size(q);
    }
    return q;
}

void
mem_owned_free(void *p)
{
    if (p != NULL) {
        owned_bytes -= malloc_usable_size(p);
        mem_free(p);
    }
}

size_t
mem_owned_bytes(void)
{
    return owned_bytes;
}
