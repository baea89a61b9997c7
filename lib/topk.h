/*
 * topk.h - the keys seen most often in a recent window, in fixed memory:
 * the Space-Saving algorithm (Metwally, Agrawal and El Abbadi, 2005).
 *
 * A summary monitors at most `capacity` keys, each with a count and the
 * most its count may overstate (error). A key already monitored has its
 * count raised; a new one takes the slot of the least counted key, with
 * that key's count plus one (so counts only overstate, by at most the
 * evicted count, kept as error). Any key seen more than N/capacity times
 * in the N recorded is monitored, and the order of well-separated heavy
 * keys is exact; what is reported is the biggest counts.
 *
 * "Recent": every `window` nanoseconds of the caller's clock, every count
 * and error is halved (an exponential decay with a half-life of one
 * window), so a key that stops being seen fades out within a few windows.
 * Halving keeps the order (equal counts merge); the cost is one pass over
 * the slots per window, not per record.
 *
 * Memory: one block, allocated by topk_create() through lib/mem.h and
 * never grown; keys are copied up to TOPK_KEY_MAX bytes (longer ones are
 * counted under their first TOPK_KEY_MAX bytes, reported with `truncated`).
 * Per record: one probe of an open-addressing index (the caller passes the
 * key's hash, a keyed one so clients cannot aim at collisions) and a few
 * list moves, O(1) (Metwally's Stream-Summary: buckets of equal counts).
 * Pure: no I/O, no clock reads.
 */
#ifndef CELLGATE_TOPK_H
#define CELLGATE_TOPK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOPK_KEY_MAX 128

struct topk;

struct topk_entry {
    const char *key;        /* into the summary: valid until the next record */
    size_t len;
    uint64_t count;         /* an upper bound of the key's (decayed) count */
    uint64_t error;         /* count - error is a lower bound */
    bool truncated;         /* the key was longer than TOPK_KEY_MAX */
};

/* A summary of capacity slots (1 to 2^24) halving every window_ns (> 0)
 * from now; NULL when memory runs out or the arguments are out of range. */
struct topk *topk_create(size_t capacity, int64_t window_ns, int64_t now);
void topk_destroy(struct topk *t);
size_t topk_capacity(const struct topk *t);

/* One occurrence of key (len bytes) at now. hash: the caller's hash of
 * the first min(len, TOPK_KEY_MAX) bytes, the ones kept. A clock that went back decays nothing. */
void topk_record(struct topk *t, const char *key, size_t len, uint64_t hash,
                 int64_t now);

/* The decay owed up to now, without recording anything (readers call it
 * so an idle summary does not report stale counts). */
void topk_decay(struct topk *t, int64_t now);

/* How many keys have a count above zero. */
size_t topk_size(const struct topk *t);

/* Up to max entries into out, biggest count first (ties: key bytes in
 * order), zero counts left out; returns how many. */
size_t topk_top(struct topk *t, struct topk_entry *out, size_t max);

/* Forget every key (the block is kept). */
void topk_clear(struct topk *t);

#endif
