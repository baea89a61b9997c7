/*
 * lease.h - concurrency leases (RL.ACQUIRE, RL.REFRESH, RL.RELEASE): at
 * most `limit` holders at a time, each holding its slot until its lease
 * ends or it releases it.
 *
 * Pure: the caller passes the set, its buffer and "now" (Unix ms); nothing
 * here reads a clock, allocates or logs.
 *
 * The set is one packed buffer of entries, in the order they were taken:
 *
 *     end_ms  int64   the Unix ms the lease ends at (live while now < end)
 *     len     uint16  1..LEASE_HOLDER_MAX
 *     holder  len bytes
 *
 * unaligned (read with memcpy), so the same bytes are the key's encoding
 * too (keytype.c writes the live entries as they are). A set with n
 * entries holds each holder at most once; an entry whose end has passed
 * counts for nothing (its slot is free at that instant) and is dropped by
 * lease_prune(), which every write runs first. Scans are linear: limit is
 * bounded by LEASE_LIMIT_MAX.
 *
 * A call sequence for RL.ACQUIRE:
 *
 *     if (!PEEK) lease_prune(s, now_ms);
 *     lease_decide(s, now_ms, limit, lease_ms, holder, len, &d);
 *     if (!PEEK && !d.limited) {
 *         if (d.held_off >= 0) lease_set_end(s, d.held_off, d.end_ms);
 *         else { room for lease_entry_size(len) more bytes, then
 *                lease_append(s, holder, len, d.end_ms); }
 *     }
 */
#ifndef CELLGATE_LEASE_H
#define CELLGATE_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algorithms/limit.h"

#define LEASE_HOLDER_MAX 256        /* bytes of a holder id */
#define LEASE_LIMIT_MAX 100000      /* holders of one key */
#define LEASE_ENTRY_HEAD 10         /* end_ms and len */

struct lease_set {
    unsigned char *buf;     /* cap bytes, caller-owned */
    uint32_t used;          /* bytes of the entries */
    uint32_t cap;
    uint32_t n;             /* entries, live or ended */
};

/* One entry read from the buffer: its offset, end and holder. */
struct lease_entry {
    uint32_t off;
    int64_t end_ms;
    const char *holder;
    uint16_t len;
};

/* Bytes of an entry whose holder has len bytes. */
static inline size_t
lease_entry_size(size_t len)
{
    return LEASE_ENTRY_HEAD + len;
}

/* The entry at *off, *off moved past it; false at the end. */
bool lease_next(const struct lease_set *s, uint32_t *off,
                struct lease_entry *e);

/* holder's entry (live or ended); false when it holds none. */
bool lease_find(const struct lease_set *s, const char *holder, size_t len,
                struct lease_entry *e);

/* Live leases at now_ms; their earliest and latest ends in *first and
 * *last (now_ms when none; either may be NULL). */
uint32_t lease_live(const struct lease_set *s, int64_t now_ms,
                    int64_t *first, int64_t *last);

/* Drop the ended entries; how many went. */
uint32_t lease_prune(struct lease_set *s, int64_t now_ms);

/* Drop the entry at off. */
void lease_remove(struct lease_set *s, uint32_t off);

/* The entry at off ends at end_ms now. */
void lease_set_end(struct lease_set *s, uint32_t off, int64_t end_ms);

/* A new entry at the end. Requires used + lease_entry_size(len) <= cap and
 * 1 <= len <= LEASE_HOLDER_MAX (else nothing changes; false). */
bool lease_append(struct lease_set *s, const char *holder, size_t len,
                  int64_t end_ms);

struct lease_decision {
    bool limited;
    int64_t limit;
    int64_t remaining;      /* free slots after the call (>= 0) */
    int64_t retry_after_ms; /* -1 when granted, else to the first end */
    int64_t reset_after_ms; /* granted: to this lease's end; denied: to
                               the last live lease's end */
    int64_t end_ms;         /* granted: the holder's lease end */
    int64_t held_off;       /* the holder's live entry, or -1 (new) */
};

/*
 * Decide one acquire; never modifies the set (PEEK is decide alone). A
 * holder that holds a live lease is always granted, its end moved to
 * max(its end, now + lease): a retry never takes a second slot. Any other
 * is granted while fewer than limit leases are live. holder may be NULL
 * (len 0): a new holder. LIMIT_EINVAL: limit not in 1..LEASE_LIMIT_MAX or
 * lease_ms < 1; LIMIT_EOVERFLOW: now + lease does not fit.
 */
enum limit_status lease_decide(const struct lease_set *s, int64_t now_ms,
                               int64_t limit, int64_t lease_ms,
                               const char *holder, size_t len,
                               struct lease_decision *d);

#endif
