/*
 * wheel.h - hierarchical timer wheel of intrusive entries.
 *
 * Time is an input (int64 ns), never read here, so tests drive it by hand.
 * Entries fire late, never early: an entry scheduled for `due` is handed to
 * the fire callback only by a wheel_advance() whose `now` >= due. Work per
 * wheel_advance() call is bounded by `budget` (fired entries) plus a bounded
 * number of slot visits, so a mass expiry cannot stall the event loop; the
 * rest is picked up by the next call.
 *
 * The wheel knows nothing about what embeds an entry.
 */
#ifndef CELLGATE_WHEEL_H
#define CELLGATE_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * An entry is named by a 32-bit id chosen by the caller (1..WHEEL_ID_MAX;
 * 0 means "none"), and its links live wherever the caller keeps them: the
 * wheel finds them through ops->entry(). Two 32-bit links instead of two
 * pointers and a due keep the per-key cost of the store small.
 */
#define WHEEL_ID_MAX UINT32_C(0xFFFFEFFF)   /* ids above are the wheel's own */

struct wheel_entry {
    uint32_t next;
    uint32_t prev;      /* 0 when not scheduled */
};

/*
 * What the wheel asks of its caller:
 *   entry(ctx, id)  the links of entry id
 *   due(ctx, id)    when id is due now (ns). It may move later while id is
 *                   scheduled (lazy re-arm: the wheel re-places the entry
 *                   when it gets there); to move it earlier, call
 *                   wheel_schedule() again.
 *   fire(ctx, id)   id is due (due(id) <= now) and already unlinked: the
 *                   callback may free it, schedule it again, or schedule or
 *                   cancel any other entry.
 */
struct wheel_ops {
    struct wheel_entry *(*entry)(void *ctx, uint32_t id);
    int64_t (*due)(void *ctx, uint32_t id);
    void (*fire)(void *ctx, uint32_t id);
};

struct wheel;

/* tick_ns is the resolution (e.g. 1 ms); now_ns is the wheel's start time. */
struct wheel *wheel_create(int64_t now_ns, int64_t tick_ns,
                           const struct wheel_ops *ops, void *ctx);
void wheel_destroy(struct wheel **w);

static inline void
wheel_entry_init(struct wheel_entry *e)
{
    e->next = e->prev = 0;
}

static inline bool
wheel_entry_scheduled(const struct wheel_entry *e)
{
    return e->prev != 0;
}

/* Insert id where its due belongs, or move it there if already scheduled.
 * A due in the past fires at the next wheel_advance(). */
void wheel_schedule(struct wheel *w, uint32_t id);

/* Unlink id; a no-op if it is not scheduled. */
void wheel_cancel(struct wheel *w, uint32_t id);

/* Fire (unlinked first) entries whose due is <= now, at most `budget` of
 * them; entries met whose due moved past now are re-placed. Returns the
 * number fired. */
size_t wheel_advance(struct wheel *w, int64_t now, size_t budget);

/* True while wheel_advance(now) still has work it left for a later call
 * (its budget or work cap ended it early). */
bool wheel_pending(const struct wheel *w, int64_t now);

/* One of the entries due soonest (the earliest slot's first), or 0 when
 * the wheel is empty; it stays scheduled. */
uint32_t wheel_first(const struct wheel *w);

/* Forget every entry at once (their links are left as they are). */
void wheel_clear(struct wheel *w);

size_t wheel_count(const struct wheel *w);

#endif
