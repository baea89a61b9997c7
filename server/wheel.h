/*
 * wheel.h - hierarchical timer wheel whose slots are arrays of ids.
 *
 * Time is an input (int64 ns), never read here, so tests drive it by hand.
 * Entries fire late, never early: an entry scheduled for `due` is handed to
 * the fire callback only by a wheel_advance() whose `now` >= due. Work per
 * wheel_advance() call is bounded by `budget` (fired entries) plus a bounded
 * number of other steps, so a mass expiry cannot stall the event loop; the
 * rest is picked up by the next call.
 *
 * The wheel knows nothing about what it schedules. An entry is a 32-bit id
 * chosen by the caller (0 means "none"); the caller keeps, per id, a small
 * tag naming the slot the id is placed in (WHEEL_TAG_BITS bits, 0 when it
 * is on no slot) and the id's due. A slot holds the ids placed in it, 4
 * bytes each, in blocks; nothing links the entries themselves. Moving or
 * cancelling an id only changes its tag: the copy left in its old slot is
 * stale, recognised by its tag no longer naming that slot, and dropped when
 * met (see wheel.c).
 */
#ifndef CELLGATE_WHEEL_H
#define CELLGATE_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WHEEL_TAG_NONE 0u
#define WHEEL_TAG_BITS 10   /* tags 1..704: 11 levels of 64 slots */

/*
 * What the wheel asks of its caller:
 *   placed(ctx, id, &due) the tag set_tag() last gave id and, unless it is
 *                      WHEEL_TAG_NONE, id's due; WHEEL_TAG_NONE when id
 *                      names nothing scheduled any more. The wheel asks it
 *                      of every id it takes from a slot, including ids
 *                      cancelled, freed or reused since they were put
 *                      there: for those it must answer without touching
 *                      memory id no longer owns.
 *                      An id's due may move later while it is scheduled
 *                      (lazy re-arm: the wheel re-places the entry when it
 *                      gets there); to move it earlier, call
 *                      wheel_schedule() again.
 *   set_tag(ctx, id, t) remember t for id (WHEEL_TAG_NONE: unscheduled).
 *   fire(ctx, id)      id is due (its due <= now) and already unscheduled
 *                      (tag WHEEL_TAG_NONE): the callback may free it,
 *                      schedule it again, or schedule or cancel any other
 *                      entry.
 */
struct wheel_ops {
    unsigned (*placed)(void *ctx, uint32_t id, int64_t *due);
    void (*set_tag)(void *ctx, uint32_t id, unsigned tag);
    void (*fire)(void *ctx, uint32_t id);
};

struct wheel;

/* tick_ns is the resolution (e.g. 1 ms); now_ns is the wheel's start time. */
struct wheel *wheel_create(int64_t now_ns, int64_t tick_ns,
                           const struct wheel_ops *ops, void *ctx);
void wheel_destroy(struct wheel **w);

/* Place id (!= 0), whose tag is `tag` now, where `due` belongs, moving it
 * if already scheduled; its tag is set through ops->set_tag(). A due in
 * the past fires at the next wheel_advance(). false when a slot had no
 * room and memory ran out: id is then not scheduled (its tag
 * WHEEL_TAG_NONE), and wheel_lost() counts it. */
bool wheel_schedule(struct wheel *w, uint32_t id, unsigned tag, int64_t due);

/* Unschedule id, whose tag is `tag` now; a no-op for WHEEL_TAG_NONE. */
void wheel_cancel(struct wheel *w, uint32_t id, unsigned tag);

/* Fire entries whose due is <= now, at most `budget` of them; entries met
 * whose due moved past now are re-placed, stale ones dropped. Returns the
 * number fired. */
size_t wheel_advance(struct wheel *w, int64_t now, size_t budget);

/* True while wheel_advance(now) still has work it left for a later call
 * (its budget or work cap ended it early, or a slot full of stale entries
 * is being compacted). */
bool wheel_pending(const struct wheel *w, int64_t now);

/* One of the entries due soonest other than `skip` (0: none to skip), or
 * 0 when there is none; it stays scheduled. Stale entries met at the
 * front of a slot are dropped on the way. */
uint32_t wheel_first(struct wheel *w, uint32_t skip);

/* Forget every entry at once and free the slots' arrays (the callers'
 * tags are left as they are). */
void wheel_clear(struct wheel *w);

/* Ids scheduled. */
size_t wheel_count(const struct wheel *w);

/* Entries the slots hold that no longer name their id's place (the id
 * moved or was cancelled since): what compaction bounds (wheel.c). */
size_t wheel_stale(const struct wheel *w);

/* Placements that failed for lack of memory since creation: the ids
 * concerned are unscheduled, and the caller schedules them again. */
uint64_t wheel_lost(const struct wheel *w);

#endif
