/*
 * wheel.c - hierarchical timer wheel with cascading (see wheel.h).
 *
 * Ticks
 * -----
 * Placement is done in ticks of tick_ns, counted as an unsigned 64-bit
 * number from `origin` (the creation time rounded down to a multiple of
 * tick_ns). An entry's tick is the one its due falls in. 2^64 ticks cover
 * the whole int64 range even with a 1 ns tick, so any due fits and no
 * overflow list is needed; a due before origin is tick 0.
 *
 * `cur` is the first tick not yet fully processed. Every tick before it is
 * over, so entries there are due; in tick cur itself (the one `now` is in)
 * only entries with due <= now are. wheel_advance() hands whole slots of
 * past ticks to the expired list, and scans the slot of now's tick once per
 * call for entries already due. So an entry fires in the first call whose
 * now >= due (budget permitting): never early, and late only by the gap
 * between calls, not rounded up to a tick.
 *
 * Levels
 * ------
 * An entry due at tick P >= cur sits at level L = (highest bit where P and
 * cur differ) / 6, in slot (P >> 6L) & 63 (h2o's placement). Eleven levels
 * of 64 slots cover all 64 bits. With a 1 ms tick:
 *
 *   level  slot granularity   level range
 *     0      1 ms               64 ms
 *     1     64 ms              4.1 s
 *     2    4.1 s               4.4 min
 *     3    4.4 min             4.7 h
 *     4    4.7 h              12.4 days
 *     5   12.4 days            2.2 years
 *     6    2.2 years           139 years
 *   7-10  ...                  2^64 ticks (585 million years)
 *
 * Slot regions are aligned to absolute tick numbers, so an entry stays
 * valid where it is until cur reaches the start of its slot's region, and
 * every event of a lower level lies inside the current region of each
 * higher level: the lowest non-empty level holds the next event, and its
 * 64-bit occupancy map finds it with one count-trailing-zeros. Empty slots
 * and empty stretches of time cost nothing, however far `now` jumps.
 *
 * Why cascade
 * -----------
 * The Linux wheel drops cascading because almost all kernel timers are
 * cancelled before they expire. Ours are the opposite: they reclaim dead
 * keys and are re-armed lazily (the store moves an entry only to an earlier
 * time and re-arms it from the callback otherwise), so nearly every entry
 * fires. Without cascading, an entry at level 3 would fire up to 4.4 min
 * late and keep a dead key that long. When cur enters a slot's region at
 * level >= 1, its entries are re-placed by their `due`, each one at a lower
 * level: an entry moves at most once per level it passes through (about
 * three times for an hour-long TTL), which amortizes to O(1).
 *
 * Bounded work
 * ------------
 * Occupancy bits are exact (an unlink that empties a slot clears its bit:
 * a list head's id names its slot), so every slot visit moves,
 * fires or examines at least one entry. A call fires at most `budget`
 * entries and does at most work_limit(budget) units of other work (an
 * entry cascaded or examined, a slot spliced). What is left over (part of
 * a slot, part of a cascade) stays in place and the next call resumes it.
 *
 * Entries and dues
 * ----------------
 * Entries are 32-bit ids with two 32-bit links kept by the caller; list
 * heads are ids above WHEEL_ID_MAX, resolved to the wheel's own array. An
 * entry's due is asked of the caller each time it is placed or looked at,
 * and may have moved later since it was placed (the store's lazy re-arm):
 * an entry found in a slot whose time has come but whose due is still
 * ahead is simply placed again by its new due.
 *
 * Firing
 * ------
 * Due entries go onto the `expired` list (a whole slot is spliced in O(1))
 * and are popped from it one by one, each unlinked before the callback
 * runs. The callback may therefore free its entry, reschedule it, or
 * cancel or schedule any other entry, including ones still waiting on the
 * expired list. An entry scheduled with a due that is already past (also
 * from a callback) fires in the next call, not the current one, so a
 * callback that keeps re-arming cannot spin. Entries left on the expired
 * list by the budget stay there; `expired_due` bounds their dues, and if
 * the clock went back below it, they wait for the clock to catch up.
 *
 * The clock going back is harmless: cur never moves back, nothing behind
 * now's tick is processed, and every firing is checked against `now`
 * (whole slots only for ticks before now's). Entries then wait until the
 * clock is back where it was, at most.
 */
#include "server/wheel.h"

#include <assert.h>
#include <string.h>

#include "lib/mem.h"

#define WHEEL_BITS      6
#define WHEEL_SLOTS     (1 << WHEEL_BITS)   /* 64: one uint64_t map */
#define WHEEL_LEVELS    11                  /* 11 * 6 >= 64 bits */
#define WHEEL_MASK      ((uint64_t)WHEEL_SLOTS - 1)
#define WHEEL_HEADS     (WHEEL_LEVELS * WHEEL_SLOTS + 1)

/* List heads are ids HEAD_ID0 + i: i = level * 64 + slot for the slots,
 * EXPIRED_HEAD for the expired list (which has no occupancy bit). */
#define HEAD_ID0        (WHEEL_ID_MAX + 1)
#define EXPIRED_HEAD    (WHEEL_LEVELS * WHEEL_SLOTS)

/* Work other than firing allowed per call: a multiple of the fire budget,
 * with a floor so that a tiny budget still gets through a big slot. */
#define WHEEL_WORK_PER_FIRE     8
#define WHEEL_WORK_MIN          4096

struct wheel {
    struct wheel_entry head[WHEEL_HEADS];   /* slot lists, then expired */
    uint64_t occupied[WHEEL_LEVELS];    /* bit s: slot s is non-empty */
    uint32_t levels;                    /* bit l: occupied[l] != 0 */
    int64_t expired_due;                /* >= every due on `expired` */
    uint64_t cur;                       /* first tick not fully processed */
    uint64_t tick_ns;
    int64_t origin;                     /* ns at which tick 0 starts */
    size_t count;
    const struct wheel_ops *ops;
    void *ctx;
};

/* The next slot wheel_advance() must handle, and the tick it belongs to:
 * a level-0 slot fires, a higher one cascades. */
struct wheel_event {
    uint64_t tick;
    unsigned level;
    unsigned slot;
};

/* ------------------------------------------------------------------------
 * Intrusive circular lists of ids, with a head node
 * --------------------------------------------------------------------- */

static inline uint32_t
head_id(unsigned index)
{
    return HEAD_ID0 + index;
}

static inline uint32_t
slot_id(unsigned level, unsigned slot)
{
    return head_id(level * WHEEL_SLOTS + slot);
}

static inline struct wheel_entry *
ent(const struct wheel *w, uint32_t id)
{
    if (id >= HEAD_ID0) {
        return (struct wheel_entry *)&w->head[id - HEAD_ID0];
    }
    return w->ops->entry(w->ctx, id);
}

static inline int64_t
due_of(const struct wheel *w, uint32_t id)
{
    return w->ops->due(w->ctx, id);
}

static inline void
list_init(struct wheel *w, unsigned index)
{
    w->head[index].next = w->head[index].prev = head_id(index);
}

static inline bool
list_empty(const struct wheel *w, uint32_t head)
{
    return ent(w, head)->next == head;
}

static inline uint32_t
list_first(const struct wheel *w, uint32_t head)
{
    return ent(w, head)->next;
}

static inline void
list_append(struct wheel *w, uint32_t head, uint32_t id)
{
    struct wheel_entry *h = ent(w, head);
    struct wheel_entry *e = ent(w, id);
    e->prev = h->prev;
    e->next = head;
    ent(w, h->prev)->next = id;
    h->prev = id;
}

/* Move every node of `from` to the tail of `to`, leaving `from` empty. */
static void
list_splice(struct wheel *w, uint32_t to, uint32_t from)
{
    struct wheel_entry *t = ent(w, to);
    struct wheel_entry *f = ent(w, from);

    if (f->next == from) {
        return;
    }
    ent(w, f->next)->prev = t->prev;
    ent(w, t->prev)->next = f->next;
    ent(w, f->prev)->next = to;
    t->prev = f->prev;
    f->next = f->prev = from;
}

/* ------------------------------------------------------------------------
 * Occupancy maps
 * --------------------------------------------------------------------- */

static inline void
mark_occupied(struct wheel *w, unsigned level, unsigned slot)
{
    w->occupied[level] |= UINT64_C(1) << slot;
    w->levels |= UINT32_C(1) << level;
}

static inline void
mark_empty(struct wheel *w, unsigned level, unsigned slot)
{
    w->occupied[level] &= ~(UINT64_C(1) << slot);
    if (w->occupied[level] == 0) {
        w->levels &= ~(UINT32_C(1) << level);
    }
}

/* Unlink id from whatever list holds it. If that emptied the list, its
 * neighbours were both the head, and a slot head's id names its bit. */
static void
unlink_entry(struct wheel *w, uint32_t id)
{
    struct wheel_entry *e = ent(w, id);
    uint32_t next = e->next;
    uint32_t prev = e->prev;

    ent(w, prev)->next = next;
    ent(w, next)->prev = prev;
    e->next = e->prev = 0;
    if (next == prev && next >= HEAD_ID0
        && next - HEAD_ID0 != EXPIRED_HEAD) {
        unsigned index = next - HEAD_ID0;
        mark_empty(w, index / WHEEL_SLOTS, index % WHEEL_SLOTS);
    }
}

/* ------------------------------------------------------------------------
 * Time <-> ticks
 * --------------------------------------------------------------------- */

/* The tick `t` falls in; false before tick 0. Unsigned wrap-around gives
 * the exact distance from origin, up to 2^64 - 1. */
static inline bool
tick_of(const struct wheel *w, int64_t t, uint64_t *tick)
{
    if (t < w->origin) {
        return false;
    }
    *tick = ((uint64_t)t - (uint64_t)w->origin) / w->tick_ns;
    return true;
}

static inline uint64_t
due_tick(const struct wheel *w, int64_t due)
{
    uint64_t tick;
    return tick_of(w, due, &tick) ? tick : 0;
}

/* ------------------------------------------------------------------------
 * Placement
 * --------------------------------------------------------------------- */

static inline unsigned
digit(uint64_t tick, unsigned level)
{
    return (unsigned)((tick >> (level * WHEEL_BITS)) & WHEEL_MASK);
}

/* The first tick of slot `slot` of `level` within cur's region. */
static uint64_t
region_start(uint64_t cur, unsigned level, unsigned slot)
{
    unsigned above = (level + 1) * WHEEL_BITS;
    uint64_t high = above >= 64 ? 0 : cur >> above << above;
    return high | (uint64_t)slot << (level * WHEEL_BITS);
}

/* Link id into the slot for tick (>= cur): level by the highest bit where
 * tick and cur differ (h2o's placement). */
static void
link_tick(struct wheel *w, uint32_t id, uint64_t tick)
{
    uint64_t diff = tick ^ w->cur;
    unsigned level = diff == 0
                     ? 0 : (unsigned)(63 - __builtin_clzll(diff)) / WHEEL_BITS;
    unsigned slot = digit(tick, level);
    uint32_t head = slot_id(level, slot);

    assert(tick >= w->cur);
    if (list_empty(w, head)) {
        mark_occupied(w, level, slot);
    }
    list_append(w, head, id);
}

/* Keep `expired_due` an upper bound of the dues on the expired list. */
static inline void
note_expired(struct wheel *w, int64_t due)
{
    if (list_empty(w, head_id(EXPIRED_HEAD)) || due > w->expired_due) {
        w->expired_due = due;
    }
}

/* Put the unlinked entry id where a due belongs. A due in a tick that is
 * already over joins the slot of tick cur: the next call fires it (by
 * splice, or by its scan, which compares each due with now). Not straight
 * onto the expired list, where a callback re-arming its entry in the past
 * would have it fire again and again within one call. */
static void
place(struct wheel *w, uint32_t id, int64_t due)
{
    uint64_t tick = due_tick(w, due);
    link_tick(w, id, tick < w->cur ? w->cur : tick);
}

/* ------------------------------------------------------------------------
 * Lifecycle
 * --------------------------------------------------------------------- */

/* Round down to a multiple of tick_ns, if that stays inside int64. */
static int64_t
align_down(int64_t t, int64_t tick_ns)
{
    int64_t rem = t % tick_ns;
    int64_t aligned;

    if (rem < 0) {
        rem += tick_ns;
    }
    if (__builtin_sub_overflow(t, rem, &aligned)) {
        return t;
    }
    return aligned;
}

void
wheel_clear(struct wheel *w)
{
    for (unsigned i = 0; i < WHEEL_HEADS; i++) {
        list_init(w, i);
    }
    memset(w->occupied, 0, sizeof(w->occupied));
    w->levels = 0;
    w->count = 0;
}

struct wheel *
wheel_create(int64_t now_ns, int64_t tick_ns, const struct wheel_ops *ops,
             void *ctx)
{
    if (tick_ns <= 0 || ops == NULL) {
        return NULL;
    }
    struct wheel *w = mem_calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    w->ops = ops;
    w->ctx = ctx;
    w->tick_ns = (uint64_t)tick_ns;
    w->origin = align_down(now_ns, tick_ns);
    wheel_clear(w);
    return w;
}

/* Entries still scheduled are not touched: they belong to the caller and
 * may already be gone. Their links dangle; wheel_entry_init() resets them. */
void
wheel_destroy(struct wheel **w)
{
    if (w == NULL || *w == NULL) {
        return;
    }
    mem_free(*w);
    *w = NULL;
}

size_t
wheel_count(const struct wheel *w)
{
    return w->count;
}

/* ------------------------------------------------------------------------
 * Schedule and cancel
 * --------------------------------------------------------------------- */

void
wheel_schedule(struct wheel *w, uint32_t id)
{
    assert(id != 0 && id <= WHEEL_ID_MAX);
    if (wheel_entry_scheduled(ent(w, id))) {
        unlink_entry(w, id);
    } else {
        w->count++;
    }
    place(w, id, due_of(w, id));
}

void
wheel_cancel(struct wheel *w, uint32_t id)
{
    if (!wheel_entry_scheduled(ent(w, id))) {
        return;
    }
    unlink_entry(w, id);
    w->count--;
}

/* ------------------------------------------------------------------------
 * Advance
 * --------------------------------------------------------------------- */

/* The next slot to fire or cascade; false if the wheel is empty. */
static bool
next_event(const struct wheel *w, struct wheel_event *ev)
{
    uint64_t cur = w->cur;

    /* A slot at level >= 1 under cur's own digit is a cascade due now: cur
     * landed on its region's start, or the last cascade was cut short. It
     * goes first, as its entries may be due in tick cur. */
    for (uint32_t m = w->levels & ~UINT32_C(1); m != 0; m &= m - 1) {
        unsigned level = (unsigned)__builtin_ctz(m);
        unsigned d = digit(cur, level);
        if (w->occupied[level] & UINT64_C(1) << d) {
            *ev = (struct wheel_event){ cur, level, d };
            return true;
        }
    }
    if (w->levels == 0) {
        return false;
    }
    unsigned level = (unsigned)__builtin_ctz(w->levels);
    uint64_t ahead = w->occupied[level] & (UINT64_MAX << digit(cur, level));
    /* Slots behind cur's digit are always empty: cur never passes an
     * occupied slot's region start without processing it. */
    assert(ahead != 0);
    unsigned slot = (unsigned)__builtin_ctzll(ahead);
    *ev = (struct wheel_event){ region_start(cur, level, slot), level, slot };
    return true;
}

/* Re-place up to `limit` entries of a slot whose region cur has entered:
 * each lands at a lower level (or back at a higher one, when its due moved
 * later). Returns the number moved. */
static size_t
cascade(struct wheel *w, unsigned level, unsigned slot, size_t limit)
{
    uint32_t head = slot_id(level, slot);
    size_t moved = 0;

    while (moved < limit && !list_empty(w, head)) {
        uint32_t id = list_first(w, head);
        unlink_entry(w, id);
        place(w, id, due_of(w, id));
        moved++;
    }
    return moved;
}

/* A level-0 slot of a tick before now's: all of it was due when placed. */
static void
expire_slot(struct wheel *w, unsigned slot, uint64_t tick)
{
    /* Its dues were at most the tick's last ns, which is before now, so
     * the sum cannot overflow. */
    note_expired(w, (int64_t)((uint64_t)w->origin
                              + (tick + 1) * w->tick_ns - 1));
    list_splice(w, head_id(EXPIRED_HEAD), slot_id(0, slot));
    mark_empty(w, 0, slot);
    w->cur = tick + 1;
}

/* The level-0 slot of now's own tick: move the entries due by `now` to the
 * expired list, looking at `limit` entries at most. Entries looked at and
 * kept go to the back, so a cut-short scan resumes with fresh ones. */
static size_t
scan_slot(struct wheel *w, unsigned slot, int64_t now, size_t limit)
{
    uint32_t head = slot_id(0, slot);
    uint32_t last = ent(w, head)->prev;
    size_t seen = 0;

    while (seen < limit && !list_empty(w, head)) {
        uint32_t id = list_first(w, head);
        int64_t due = due_of(w, id);
        unlink_entry(w, id);
        if (due <= now) {
            note_expired(w, due);
            list_append(w, head_id(EXPIRED_HEAD), id);
        } else {
            place(w, id, due);
        }
        seen++;
        if (id == last) {
            break;
        }
    }
    return seen;
}

/* Fire the first expired entry, or re-place it if its due moved past now
 * since it was placed. Returns true if it fired. */
static bool
fire_first(struct wheel *w, int64_t now)
{
    uint32_t id = list_first(w, head_id(EXPIRED_HEAD));
    int64_t due = due_of(w, id);

    unlink_entry(w, id);
    if (due > now) {
        place(w, id, due);
        return false;
    }
    w->count--;
    w->ops->fire(w->ctx, id);   /* id may be gone after this */
    return true;
}

static size_t
work_limit(size_t budget)
{
    if (budget > SIZE_MAX / WHEEL_WORK_PER_FIRE) {
        return SIZE_MAX;
    }
    size_t limit = budget * WHEEL_WORK_PER_FIRE;
    return limit < WHEEL_WORK_MIN ? WHEEL_WORK_MIN : limit;
}

size_t
wheel_advance(struct wheel *w, int64_t now, size_t budget)
{
    uint64_t until;
    size_t fired = 0;
    size_t work = 0;
    size_t max_work = work_limit(budget);
    bool scanned = false;

    if (!tick_of(w, now, &until)) {
        return 0;   /* before the wheel's start: nothing can be due */
    }
    while (fired < budget) {
        struct wheel_event ev;

        if (!list_empty(w, head_id(EXPIRED_HEAD))) {
            if (w->expired_due > now) {
                break;      /* the clock went back: wait for it */
            }
            if (fire_first(w, now)) {
                fired++;
            } else if (++work >= max_work) {
                break;
            }
        } else if (!next_event(w, &ev) || ev.tick > until) {
            /* Nothing due up to now; never move cur backwards. */
            if (until > w->cur) {
                w->cur = until;
            }
            break;
        } else if (work >= max_work) {
            break;
        } else if (ev.level > 0) {
            w->cur = ev.tick;
            work += cascade(w, ev.level, ev.slot, max_work - work);
        } else if (ev.tick < until) {
            expire_slot(w, ev.slot, ev.tick);
            work++;
        } else if (!scanned) {
            /* Once per call: entries the callbacks add to this tick are
             * left for the next call, or this could spin. */
            w->cur = ev.tick;
            work += scan_slot(w, ev.slot, now, max_work - work);
            scanned = true;
        } else {
            break;
        }
    }
    return fired;
}

bool
wheel_pending(const struct wheel *w, int64_t now)
{
    uint64_t until;
    struct wheel_event ev;

    if (!list_empty(w, head_id(EXPIRED_HEAD))) {
        return w->expired_due <= now;
    }
    if (!tick_of(w, now, &until) || !next_event(w, &ev)) {
        return false;
    }
    /* Whole past ticks and cascades up to now are work; the tick `now` is
     * in is scanned once per wheel_advance() and is not reported, or a
     * caller looping on this would spin on entries due later in it. */
    return ev.tick < until || (ev.level > 0 && ev.tick <= until);
}

uint32_t
wheel_first(const struct wheel *w)
{
    struct wheel_event ev;

    if (!list_empty(w, head_id(EXPIRED_HEAD))) {
        return list_first(w, head_id(EXPIRED_HEAD));
    }
    if (!next_event(w, &ev)) {
        return 0;
    }
    /* Entries of a level-0 slot share their tick; a higher slot's are
     * within its range, so this is among the earliest, not always the
     * very earliest (good enough to choose what to evict). */
    return list_first(w, slot_id(ev.level, ev.slot));
}
