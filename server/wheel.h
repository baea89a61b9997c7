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
 * The wheel knows nothing about what embeds an entry (use container_of).
 */
#ifndef CELLGATE_WHEEL_H
#define CELLGATE_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wheel_entry {
    struct wheel_entry *next;
    struct wheel_entry *prev;   /* NULL when not scheduled */
    int64_t due;                /* ns */
};

struct wheel;

typedef void (*wheel_fire_fn)(struct wheel_entry *e, void *arg);

/* tick_ns is the resolution (e.g. 1 ms); now_ns is the wheel's start time. */
struct wheel *wheel_create(int64_t now_ns, int64_t tick_ns);
void wheel_destroy(struct wheel **w);

static inline void
wheel_entry_init(struct wheel_entry *e)
{
    e->next = e->prev = NULL;
    e->due = 0;
}

static inline bool
wheel_entry_scheduled(const struct wheel_entry *e)
{
    return e->prev != NULL;
}

/* Insert e, or move it if already scheduled. A due in the past fires at the
 * next wheel_advance(). */
void wheel_schedule(struct wheel *w, struct wheel_entry *e, int64_t due);

/* Unlink e; a no-op if it is not scheduled. */
void wheel_cancel(struct wheel *w, struct wheel_entry *e);

/* Fire (unlinked first, so the callback may reschedule or free it) entries
 * with due <= now, at most `budget` of them. Returns the number fired. */
size_t wheel_advance(struct wheel *w, int64_t now, size_t budget,
                     wheel_fire_fn fire, void *arg);

/* True while wheel_advance(now) still has work it left for a later call
 * (its budget or work cap ended it early). */
bool wheel_pending(const struct wheel *w, int64_t now);

/* One of the entries due soonest (the earliest slot's first), or NULL when
 * the wheel is empty; it stays scheduled. */
struct wheel_entry *wheel_first(const struct wheel *w);

size_t wheel_count(const struct wheel *w);

#endif
