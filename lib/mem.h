/*
 * mem.h - allocation wrappers that keep an exact count of the bytes in use,
 * so INFO can report used_memory the way Redis's zmalloc does.
 *
 * The count uses malloc_usable_size(), i.e. what the allocator really handed
 * out, so it follows the allocator's rounding. Any thread may allocate and
 * free (each counts in a slot of its own: mem_thread_slot()); mem_used()
 * and mem_peak() are the main thread's to call. Every function returns NULL on
 * failure like malloc; callers must handle it.
 */
#ifndef CELLGATE_MEM_H
#define CELLGATE_MEM_H

#include <stdbool.h>
#include <stddef.h>

void *mem_malloc(size_t size);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t size);
void mem_free(void *p);

/* Memory a caller hands out in pieces of blocks it got from malloc itself
 * (the store's slabs): counted as the pieces are taken and given back. */
void mem_charge(size_t n);
void mem_uncharge(size_t n);

/* Room for `more` bytes after the `used` ones of the buffer *p of *cap
 * bytes: its capacity doubled (from `first` when it has none) until they
 * fit. false, with *p and *cap untouched, when the size would overflow or
 * memory runs out. */
bool mem_reserve(unsigned char **p, size_t *cap, size_t used, size_t more,
                 size_t first);

/* Memory that keys own beyond their records (long strings, logs,
 * collections): allocated like the rest and counted in mem_used(), and
 * also in mem_owned_bytes(), what evicting every key would give back
 * besides the records. NULL (p untouched) when memory runs out. */
void *mem_owned_realloc(void *p, size_t size);
void mem_owned_free(void *p);
size_t mem_owned_bytes(void);

/* A growable byte buffer (mem_malloc'd; zeroed: empty): what encoders
 * append to. */
struct membuf {
    unsigned char *p;
    size_t len;
    size_t cap;
};

/* Append n bytes (none: p may be NULL); false (b unchanged) when memory
 * runs out. */
bool membuf_put(struct membuf *b, const void *p, size_t n);

/* A bounds-checked reader over encoded bytes (what a membuf was filled
 * with, read back from a file or a stream). */
struct membuf_reader {
    const unsigned char *p;
    size_t left;
};

/* Copy the next n bytes to out; false (nothing read) if fewer remain. */
static inline bool
membuf_read(struct membuf_reader *r, void *out, size_t n)
{
    if (r->left < n) {
        return false;
    }
    if (n > 0) {
        __builtin_memcpy(out, r->p, n);
    }
    r->p += n;
    r->left -= n;
    return true;
}

/* The next n bytes where they lie (*at); false if fewer remain. */
static inline bool
membuf_skip(struct membuf_reader *r, size_t n, const unsigned char **at)
{
    if (r->left < n) {
        return false;
    }
    *at = r->p;
    r->p += n;
    r->left -= n;
    return true;
}

/* What the allocator really handed out for p (0 for NULL). */
size_t mem_usable(const void *p);

/* Bytes currently allocated through these functions. */
size_t mem_used(void);

/* Threads that allocate count in slots of their own (mem.c): slot 0 is
 * the main thread's (every thread's until it picks one), 1..N-1 the I/O
 * threads', MEM_SLOTS - 1 the busy server's. Called once, first thing,
 * by each thread that allocates. */
#define MEM_SLOTS 130
void mem_thread_slot(unsigned slot);

/* Largest mem_used() seen since start. */
size_t mem_peak(void);

/* The process's resident set size in bytes (0 when /proc is not there). */
size_t mem_rss(void);

/* Hand free pages back to the kernel (after a mass expiry). */
void mem_trim(void);

#endif
