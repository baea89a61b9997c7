/*
 * mem.c - counted allocation (see mem.h).
 *
 * The event loop's thread does nearly all the allocating, with plain
 * counters. The one other thread that allocates (the busy server, while a
 * script runs too long: see conn.h) adds its bytes to a counter of its
 * own, atomic because the loop's thread reads it; a block one thread
 * allocates and the other frees moves bytes between the two, and only
 * their sum means anything. The owned bytes (keys') are the loop
 * thread's alone.
 */
#include "lib/mem.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static size_t used_bytes;
static size_t peak_bytes;
static size_t owned_bytes;
static _Atomic size_t side_bytes;       /* the other thread's, wrapping */
static _Thread_local bool side_thread;

static void
count(size_t add, size_t sub)
{
    if (__builtin_expect(side_thread, 0)) {
        atomic_fetch_add_explicit(&side_bytes, add - sub,
                                  memory_order_relaxed);
        return;
    }
    used_bytes += add - sub;
    size_t all = used_bytes + atomic_load_explicit(&side_bytes,
                                                   memory_order_relaxed);
    if (add > sub && all > peak_bytes) {
        peak_bytes = all;
    }
}

static void
account_alloc(void *p)
{
    if (p != NULL) {
        count(malloc_usable_size(p), 0);
    }
}

void
mem_side_thread(void)
{
    side_thread = true;
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
    return used_bytes + atomic_load_explicit(&side_bytes,
                                             memory_order_relaxed);
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
