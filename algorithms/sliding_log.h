/*
 * sliding_log.h - RL.LOG's exact sliding log: every accepted request is an
 * entry (time in ms, cost, metadata reference) in a caller-owned ring.
 *
 * Pure: the caller passes the ring and "now"; nothing here reads a clock,
 * allocates, logs or looks at metadata bytes.
 *
 * One log may serve calls with different windows ("10 per second" and
 * "100 per minute" on the same key), so it keeps its entries for the
 * longest window that changed it, its retention (keep_ms), and each call
 * counts only the entries inside its own window. A call sequence for
 * RL.LOG:
 *
 *     if (!PEEK) slog_expire(r, keep_ms, now); (drops only what no call
 *                                               can count any more)
 *     slog_decide(p, r, now, &d);             (p->keep_ms: the retention)
 *     if (!PEEK && !d.limited && cost > 0) {  (one new entry needed)
 *         if (r->len == r->cap) { grow, see slog_grown(), or
 *                                 slog_drop_oldest() what p does not count }
 *         slog_append(r, now, cost, meta_off, meta_len);
 *     } else if (!PEEK && cost < 0) {
 *         slog_refund(r, -cost);             (slog_decide rejected INT64_MIN)
 *     }
 *
 * slog_decide() gives the same answer whether or not slog_expire() ran
 * first, so PEEK (decide alone) never needs to change the ring.
 *
 * Invariants the functions keep (and rely on): entries are in time order
 * from the oldest (index head) to the newest, every entry has cost >= 1,
 * and sum is the total cost of the len live entries.
 */
#ifndef CELLGATE_SLIDING_LOG_H
#define CELLGATE_SLIDING_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/limit.h"

struct slog_entry {
    int64_t t_ms;       /* floor(now / 1 ms) when the request was accepted */
    int64_t cost;
    uint32_t meta_off;  /* metadata lives in the caller's arena; the */
    uint32_t meta_len;  /* algorithm only carries these two numbers */
};

struct slog_ring {
    struct slog_entry *e;   /* cap slots, caller-owned */
    uint32_t cap;
    uint32_t head;          /* slot of the oldest entry */
    uint32_t len;
    int64_t sum;            /* total cost of the live entries */
};

struct slog_params {
    int64_t limit;      /* >= 1 */
    int64_t window;     /* seconds, >= 1 */
    int64_t cost;       /* < 0: refund, 0: check, > 0: take */
    int64_t keep_ms;    /* the log's retention: entries older than this are
                           gone even if not yet expired; 0 = no limit */
};

/*
 * Drop the entries no longer inside the window at now: an entry made at
 * t_ms counts while floor(now / 1 ms) < t_ms + window_ms. Returns how many
 * were dropped. An empty ring gets head 0 back.
 */
uint32_t slog_expire(struct slog_ring *r, int64_t window_ms, int64_t now);

/*
 * Decide one request; never modifies the ring (PEEK is decide alone).
 * The entries counted are those inside both the window and keep_ms; the
 * times in the reply are departures from the window. With `used` their
 * total cost: allowed iff used + cost <= limit; a refund (cost < 0) is
 * always allowed and takes from the newest entries; cost 0 checks
 * used <= limit. When denied,
 * retry_after_ns is exact: the instant the oldest entries whose departure
 * makes room have left the window (-1 when cost > limit: never).
 * reset_after_ns runs to the departure of the newest entry left after the
 * request (0 when none or already gone), fresh_at = now + reset_after_ns.
 * LIMIT_EINVAL: limit < 1 or window < 1. LIMIT_EOVERFLOW: the window's end
 * does not fit int64 ns, or cost == INT64_MIN (its refund -cost would not).
 * On error *out is left untouched.
 */
enum limit_status slog_decide(const struct slog_params *p,
                              const struct slog_ring *r, int64_t now,
                              struct limit_decision *out);

/*
 * Record an accepted request at now. Requires len < cap (a full ring is
 * left unchanged: the caller must grow it first) and cost >= 1.
 */
void slog_append(struct slog_ring *r, int64_t now, int64_t cost,
                 uint32_t meta_off, uint32_t meta_len);

/*
 * Give units back, newest entries first: each loses cost, entries that
 * reach 0 are dropped. Never goes below zero usage. Returns the units
 * actually removed (0 for units <= 0).
 */
int64_t slog_refund(struct slog_ring *r, int64_t units);

/*
 * How many of the oldest entries a call with these parameters does not
 * count at now (they are outside its window or keep_ms), and their total
 * cost in *cost (may be NULL).
 */
uint32_t slog_uncounted(const struct slog_params *p, const struct slog_ring *r,
                        int64_t now, int64_t *cost);

/* Drop the n oldest entries (at most len). */
void slog_drop_oldest(struct slog_ring *r, uint32_t n);

/* The i-th entry from the newest (0 = newest), NULL when i >= len. */
const struct slog_entry *slog_newest(const struct slog_ring *r, uint32_t i);

/*
 * Growing the ring. Either of:
 *  - copy the entries in ring order (slog_newest(r, len - 1) ... (r, 0))
 *    to slots 0..len-1 of the new array, then set e, cap and head = 0;
 *  - realloc r->e to new_cap slots (the first cap slots keep their
 *    contents) and call slog_grown(r, new_cap): it moves the wrapped part
 *    so the ring is valid again and sets cap.
 * new_cap < cap is ignored.
 */
void slog_grown(struct slog_ring *r, uint32_t new_cap);

#endif
