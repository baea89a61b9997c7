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
 * only entries with due <= now are. wheel_advance() drains whole slots of
 * past ticks, and the slot of now's tick once per call, firing what is
 * due by now. So an entry fires in the first call whose now >= due
 * (budget permitting): never early, and late only by the gap between
 * calls, not rounded up to a tick.
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
 * time and lets the wheel re-place it otherwise), so nearly every entry
 * fires. Without cascading, an entry at level 3 would fire up to 4.4 min
 * late and keep a dead key that long. When cur enters a slot's region at
 * level >= 1, its entries are re-placed by their `due`, each one at a lower
 * level: an entry moves at most once per level it passes through (about
 * three times for an hour-long TTL), which amortizes to O(1).
 *
 * Slots are arrays of ids
 * -----------------------
 * A slot is a queue of 32-bit ids in blocks (struct block), taken from the
 * head and added at the tail. A slot's first block is 64 bytes and each
 * next one twice its predecessor, up to 4 KB: a slot of a few ids costs
 * little, a big one 4 bytes an id and 0.6 % more. A block is freed as soon
 * as its last id is taken; nothing ever copies or walks a whole slot in
 * one step. The entries themselves are not linked: the per-id state is
 * the caller's tag alone, 10 bits.
 *
 * Tags and stale entries
 * ----------------------
 * An id's tag is the name of the slot it is placed in. To place an id is to
 * append it to a slot and set its tag to the slot's name; to move it, to
 * append it to another slot and change the tag; to cancel it, to clear the
 * tag. The copy left behind is *stale*: whoever takes an id from slot s
 * asks its tag (ops->placed(), which gives its due with it) and drops it
 * when the tag is not s's name. placed() answers for any id ever placed,
 * freed and reused ones too. A reused id placed elsewhere, or nowhere, has
 * another tag; one placed in s again (a key deleted and made again with
 * the same TTL) cannot be told from its own old copy, so both count as
 * placed there: whichever is met first is handled (fired if due, else
 * re-placed, which changes the tag) and the other is stale by then, or is
 * handled the same way. Firing
 * is always checked against the id's due, so a stale copy can never make
 * anything fire early; at worst it costs one more look.
 *
 * Names: the 704 slots have 705 names (1..705), one of them spare. A slot
 * being compacted (below) takes the spare as its new name and gives its
 * old one back when done: ids it has moved behind the compaction, and ids
 * placed in it meanwhile, carry the new name, so an old copy of one of
 * them met later in the pass is known stale. Both names count as the slot
 * while the compaction lasts.
 *
 * Each slot counts the ids it holds (n) and, of them, the stale ones: a
 * move or a cancel adds one to the old slot's stale count, taking a stale
 * id subtracts one. Both are exact whatever the order of events: a slot
 * holds one entry for each id whose tag names it, plus its stale ones.
 *
 * Compaction
 * ----------
 * Stale entries are dropped when their slot's time comes, which for a slot
 * of level 3 or more is hours or days away. A workload that deletes keys,
 * or moves their expiry earlier, faster than that would pile them up, so
 * once the stale entries of levels >= 1 outnumber the scheduled ids by
 * more than WHEEL_STALE_FLOOR, the slot holding most of them is compacted:
 * the ids it holds are taken from the head, and each one still placed
 * there, met for the first time, is appended again at the tail under the
 * slot's new name. Each schedule or cancel does WHEEL_COMPACT_STEPS of
 * that (as a rehash moves a bucket per lookup) and wheel_advance() does
 * more with the work it has left. The chosen slot is at least as stale as
 * the average, so more than half of what it holds is stale: each step
 * drops more stale entries than the schedules and cancels paying for it
 * add, and the slots hold about twice the scheduled ids at most, plus the
 * floor. Level 0 is left alone: its slots empty within 64 ticks anyway.
 *
 * Firing
 * ------
 * A level-0 slot whose tick has come is drained: the ids it holds when the
 * drain starts are taken one by one, each fired if due (its tag cleared
 * first), re-placed if its due moved later, dropped if stale. For a tick
 * that is over, cur moves past it first, so what the callbacks schedule
 * (also in the past: such a due joins tick cur) lands in other slots. The
 * slot of now's own tick is drained once per call, and what the callbacks
 * or re-placed ids append to it waits behind the ids counted at the start,
 * for the next call: a callback that keeps re-arming cannot spin. A drain
 * cut short by the budget is resumed first by the next call. If the clock
 * went back below the end of a drained tick, the drain waits for it.
 *
 * The clock going back is otherwise harmless: cur never moves back,
 * nothing behind now's tick is processed, and every firing is checked
 * against `now`. Entries then wait until the clock is back where it was,
 * at most.
 *
 * Bounded work
 * ------------
 * A call fires at most `budget` entries and does at most work_limit(budget)
 * steps of other work (an id re-placed, dropped or compacted). Occupancy
 * bits are exact (a slot's bit is set while it holds ids, stale ones
 * included), so every slot visit takes at least one id. What is left over
 * (part of a drain, of a cascade, of a compaction) stays and the next call
 * resumes it.
 *
 * Memory
 * ------
 * Blocks come from lib/mem.h, so used_memory counts them. When one cannot
 * be had, the id being placed is left unscheduled (tag WHEEL_TAG_NONE) and
 * counted in wheel_lost(); the caller finds such ids again (the store
 * scans for them, store.c). An id is never lost otherwise: it leaves a
 * slot only when fired, re-placed, or stale.
 */
#include "server/wheel.h"

#include <assert.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/slist.h"

#define WHEEL_BITS      6
#define WHEEL_SLOTS     (1 << WHEEL_BITS)   /* 64: one uint64_t map */
#define WHEEL_LEVELS    11                  /* 11 * 6 >= 64 bits */
#define WHEEL_MASK      ((uint64_t)WHEEL_SLOTS - 1)
#define WHEEL_QUEUES    (WHEEL_LEVELS * WHEEL_SLOTS)
#define WHEEL_NAMES     (WHEEL_QUEUES + 1)  /* one spare */
#define NO_SLOT         UINT16_MAX

_Static_assert(WHEEL_NAMES < (1u << WHEEL_TAG_BITS),
               "every slot name must fit a tag");

/* Work other than firing allowed per call: a multiple of the fire budget,
 * with a floor so that a tiny budget still gets through a big slot. */
#define WHEEL_WORK_PER_FIRE     8
#define WHEEL_WORK_MIN          4096

/* Compaction: started once the stale entries of levels >= 1 exceed the
 * scheduled ids by this many; steps paid by each schedule and cancel. */
#define WHEEL_STALE_FLOOR       4096
#define WHEEL_COMPACT_STEPS     4

/* Blocks of 64 bytes to 4 KB. */
#define BLOCK_MIN_BYTES         64
#define BLOCK_MAX_BYTES         4096

struct block {
    struct block *next;
    uint32_t start;         /* first id not taken yet */
    uint32_t end;           /* ids written */
    uint32_t cap;
    uint32_t id[];
};

struct queue {
    struct block *head;
    struct block *tail;
    size_t n;               /* ids held, stale ones included */
    size_t stale;
};

struct wheel {
    struct queue q[WHEEL_QUEUES];       /* slot: level * 64 + digit */
    uint16_t name[WHEEL_QUEUES];        /* a slot's name: its ids' tag */
    uint16_t slot_named[WHEEL_NAMES + 1]; /* name -> slot, or NO_SLOT */
    uint16_t spare;                     /* the name no slot has */
    uint64_t occupied[WHEEL_LEVELS];    /* bit s: slot s holds ids */
    uint32_t levels;                    /* bit l: occupied[l] != 0 */
    uint16_t drain;                     /* slot being drained, or NO_SLOT */
    size_t drain_left;                  /* its ids still to take */
    int64_t drain_wait;                 /* fire nothing before this now */
    uint16_t compact;                   /* slot compacted, or NO_SLOT */
    uint16_t compact_old;               /* its name before */
    size_t compact_left;                /* its ids still to take */
    bool compact_stuck;                 /* its last step found no memory */
    size_t stale_high;                  /* stale entries of levels >= 1 */
    uint64_t cur;                       /* first tick not fully processed */
    uint64_t tick_ns;
    int64_t origin;                     /* ns at which tick 0 starts */
    size_t count;                       /* ids scheduled */
    size_t entries;                     /* ids the slots hold */
    uint64_t lost;
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

static inline unsigned
slot_index(unsigned level, unsigned digit_)
{
    return level * WHEEL_SLOTS + digit_;
}

static inline unsigned
slot_level(unsigned s)
{
    return s / WHEEL_SLOTS;
}

/* Is the id whose tag is `tag` placed in slot s? */
static inline bool
names_slot(const struct wheel *w, unsigned s, unsigned tag)
{
    return tag == w->name[s] || (s == w->compact && tag == w->compact_old);
}

/* ------------------------------------------------------------------------
 * Occupancy maps
 * --------------------------------------------------------------------- */

static inline void
mark_occupied(struct wheel *w, unsigned s)
{
    unsigned level = slot_level(s);
    w->occupied[level] |= UINT64_C(1) << (s % WHEEL_SLOTS);
    w->levels |= UINT32_C(1) << level;
}

static inline void
mark_empty(struct wheel *w, unsigned s)
{
    unsigned level = slot_level(s);
    w->occupied[level] &= ~(UINT64_C(1) << (s % WHEEL_SLOTS));
    if (w->occupied[level] == 0) {
        w->levels &= ~(UINT32_C(1) << level);
    }
}

/* ------------------------------------------------------------------------
 * Queues of ids in blocks
 * --------------------------------------------------------------------- */

/* A block twice the size of the tail's, from 64 bytes up to 4 KB. */
static struct block *
block_new(const struct block *tail)
{
    size_t bytes = BLOCK_MIN_BYTES;
    if (tail != NULL) {
        bytes = sizeof(*tail) + (size_t)tail->cap * sizeof(tail->id[0]);
        bytes = bytes >= BLOCK_MAX_BYTES / 2 ? BLOCK_MAX_BYTES : 2 * bytes;
    }
    struct block *b = mem_malloc(bytes);
    if (b != NULL) {
        b->next = NULL;
        b->start = b->end = 0;
        b->cap = (uint32_t)((bytes - sizeof(*b)) / sizeof(b->id[0]));
    }
    return b;
}

/* A new tail block for slot s; false when memory ran out. */
static bool
queue_grow(struct queue *q)
{
    struct block *b = block_new(q->tail);
    if (b == NULL) {
        return false;
    }
    if (q->tail != NULL) {
        q->tail->next = b;
    } else {
        q->head = b;
    }
    q->tail = b;
    return true;
}

/* Append id to slot s; false when a block was needed and memory ran out. */
static inline bool
queue_push(struct wheel *w, unsigned s, uint32_t id)
{
    struct queue *q = &w->q[s];

    if ((q->tail == NULL || q->tail->end == q->tail->cap) && !queue_grow(q)) {
        return false;
    }
    struct block *b = q->tail;
    b->id[b->end++] = id;
    if (q->n++ == 0) {
        mark_occupied(w, s);
    }
    w->entries++;
    return true;
}

/* The id at the head of slot s (which holds some). */
static inline uint32_t
queue_head(const struct wheel *w, unsigned s)
{
    const struct block *b = w->q[s].head;
    return b->id[b->start];
}

static void compact_end(struct wheel *w);

/* Take the id at the head of slot s (which holds some). A drain or a
 * compaction of s counts it as one of the ids it had to take. */
static uint32_t
queue_pop(struct wheel *w, unsigned s)
{
    struct queue *q = &w->q[s];
    struct block *b = q->head;
    uint32_t id = b->id[b->start++];

    if (b->start == b->end) {
        q->head = b->next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        mem_free(b);
    }
    if (--q->n == 0) {
        mark_empty(w, s);
    }
    w->entries--;
    if (s == w->drain && --w->drain_left == 0) {
        w->drain = NO_SLOT;     /* the ids it counted are all taken */
    }
    if (s == w->compact && --w->compact_left == 0) {
        compact_end(w);
    }
    return id;
}

static void
queue_free(struct queue *q)
{
    SL_DRAIN(struct block, b, q->head, next) {
        mem_free(b);
    }
    memset(q, 0, sizeof(*q));
}

/* ------------------------------------------------------------------------
 * Stale entries
 * --------------------------------------------------------------------- */

static void
stale_less(struct wheel *w, unsigned s)
{
    assert(w->q[s].stale > 0);
    w->q[s].stale--;
    if (slot_level(s) > 0) {
        w->stale_high--;
    }
}

/* An id left slot s without its entry: that entry is stale now. */
static void
stale_more(struct wheel *w, unsigned s)
{
    w->q[s].stale++;
    if (slot_level(s) > 0) {
        w->stale_high++;
    }
}

/* The id just taken from slot s: is it placed there (then *due is its
 * due)? If not, it was a stale entry, now gone. */
static bool
taken_is_placed(struct wheel *w, unsigned s, uint32_t id, int64_t *due)
{
    if (names_slot(w, s, w->ops->placed(w->ctx, id, due))) {
        return true;
    }
    stale_less(w, s);
    return false;
}

/* Is id, found in slot s, placed there? */
static bool
found_is_placed(const struct wheel *w, unsigned s, uint32_t id)
{
    int64_t due;
    return names_slot(w, s, w->ops->placed(w->ctx, id, &due));
}

/* id, whose tag is `tag` (not WHEEL_TAG_NONE), leaves its slot. */
static void
leave(struct wheel *w, unsigned tag)
{
    stale_more(w, w->slot_named[tag]);
}

/* The slot of levels >= 1 with the most stale entries (NO_SLOT if none). */
static unsigned
stalest_slot(const struct wheel *w)
{
    unsigned best = NO_SLOT;
    size_t most = 0;
    for (unsigned s = WHEEL_SLOTS; s < WHEEL_QUEUES; s++) {
        if (w->q[s].stale > most) {
            most = w->q[s].stale;
            best = s;
        }
    }
    return best;
}

/* Slot s takes the spare name: what it holds now is taken once, each id
 * still placed there moved behind under the new name. */
static void
compact_start(struct wheel *w, unsigned s)
{
    w->compact = (uint16_t)s;
    w->compact_old = w->name[s];
    w->compact_left = w->q[s].n;
    w->name[s] = w->spare;
    w->slot_named[w->spare] = (uint16_t)s;
}

/* Every id the compaction had to take is taken: no id carries the old
 * name any more, which becomes the spare. */
static void
compact_end(struct wheel *w)
{
    w->slot_named[w->compact_old] = NO_SLOT;
    w->spare = w->compact_old;
    w->compact = NO_SLOT;
}

/* Up to `steps` ids of the slot being compacted: one placed there under
 * its old name goes back at the tail under the new one; any other (stale,
 * or a second copy of an id moved behind already) goes. Returns the steps
 * taken; stops early when memory runs out (the next call resumes). */
static size_t
compact(struct wheel *w, size_t steps)
{
    size_t done = 0;
    while (done < steps && w->compact != NO_SLOT) {
        unsigned s = w->compact;
        uint32_t id = queue_head(w, s);
        int64_t due;
        bool first = w->ops->placed(w->ctx, id, &due) == w->compact_old;
        if (first) {
            w->compact_stuck = !queue_push(w, s, id);
            if (w->compact_stuck) {
                break;
            }
            w->ops->set_tag(w->ctx, id, w->name[s]);
        }
        (void)queue_pop(w, s);      /* may end the compaction */
        if (!first) {
            stale_less(w, s);
        }
        done++;
    }
    return done;
}

/* Start a compaction of the stalest slot, and do a few steps of it. */
static void
compact_more(struct wheel *w)
{
    if (w->compact == NO_SLOT) {
        unsigned s = stalest_slot(w);
        if (s == NO_SLOT) {
            return;
        }
        compact_start(w, s);
    }
    (void)compact(w, WHEEL_COMPACT_STEPS);
}

/* After a schedule or a cancel: compaction's share, when the stale
 * entries outgrow the scheduled ids or a compaction is under way. */
static inline void
compact_some(struct wheel *w)
{
    if (w->compact != NO_SLOT ||
        w->stale_high > w->count + WHEEL_STALE_FLOOR) {
        compact_more(w);
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

/* The last ns of `tick`, which is over (before now): no overflow. */
static inline int64_t
tick_end(const struct wheel *w, uint64_t tick)
{
    return (int64_t)((uint64_t)w->origin + (tick + 1) * w->tick_ns - 1);
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

/* The slot for a due: level by the highest bit where its tick and cur
 * differ (h2o's placement). A due in a tick that is already over joins
 * the slot of tick cur: the next drain fires it. */
static unsigned
slot_for(const struct wheel *w, int64_t due)
{
    uint64_t tick = due_tick(w, due);
    if (tick < w->cur) {
        tick = w->cur;
    }
    uint64_t diff = tick ^ w->cur;
    unsigned level = diff == 0
                     ? 0 : (unsigned)(63 - __builtin_clzll(diff)) / WHEEL_BITS;
    return slot_index(level, digit(tick, level));
}

/* Append id to slot s and name s in its tag; false when memory ran out. */
static bool
put(struct wheel *w, unsigned s, uint32_t id)
{
    if (!queue_push(w, s, id)) {
        return false;
    }
    w->ops->set_tag(w->ctx, id, w->name[s]);
    return true;
}

/* id, taken from its slot while scheduled, placed again by its due; when
 * memory runs out it is unscheduled and counted lost. */
static void
replace(struct wheel *w, uint32_t id, int64_t due)
{
    if (!put(w, slot_for(w, due), id)) {
        w->ops->set_tag(w->ctx, id, WHEEL_TAG_NONE);
        w->count--;
        w->lost++;
    }
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
    for (unsigned s = 0; s < WHEEL_QUEUES; s++) {
        queue_free(&w->q[s]);
        w->name[s] = (uint16_t)(s + 1);
        w->slot_named[s + 1] = (uint16_t)s;
    }
    w->spare = WHEEL_NAMES;
    w->slot_named[WHEEL_NAMES] = NO_SLOT;
    w->slot_named[WHEEL_TAG_NONE] = NO_SLOT;
    memset(w->occupied, 0, sizeof(w->occupied));
    w->levels = 0;
    w->drain = w->compact = NO_SLOT;
    w->drain_left = w->compact_left = 0;
    w->compact_stuck = false;
    w->stale_high = 0;
    w->count = w->entries = 0;
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

/* The callers' tags of entries still scheduled are left as they are. */
void
wheel_destroy(struct wheel **w)
{
    if (w == NULL || *w == NULL) {
        return;
    }
    wheel_clear(*w);
    mem_free(*w);
    *w = NULL;
}

size_t
wheel_count(const struct wheel *w)
{
    return w->count;
}

size_t
wheel_stale(const struct wheel *w)
{
    return w->entries - w->count;
}

uint64_t
wheel_lost(const struct wheel *w)
{
    return w->lost;
}

/* ------------------------------------------------------------------------
 * Schedule and cancel
 * --------------------------------------------------------------------- */

bool
wheel_schedule(struct wheel *w, uint32_t id, unsigned old, int64_t due)
{
    assert(id != 0);
    unsigned s = slot_for(w, due);

    if (old == w->name[s]) {
        return true;    /* its entry there reads the new due in time */
    }
    if (old != WHEEL_TAG_NONE) {
        leave(w, old);
        w->count--;
    }
    if (!put(w, s, id)) {
        w->ops->set_tag(w->ctx, id, WHEEL_TAG_NONE);
        w->lost++;
        return false;
    }
    w->count++;
    compact_some(w);
    return true;
}

void
wheel_cancel(struct wheel *w, uint32_t id, unsigned old)
{
    if (old == WHEEL_TAG_NONE) {
        return;
    }
    leave(w, old);
    w->ops->set_tag(w->ctx, id, WHEEL_TAG_NONE);
    w->count--;
    compact_some(w);
}

/* ------------------------------------------------------------------------
 * Advance
 * --------------------------------------------------------------------- */

/* The next slot to drain or cascade; false if the wheel holds none. The
 * slot being drained is not one (it is behind cur, or its new ids wait
 * for the drain to end). */
static bool
next_event(const struct wheel *w, struct wheel_event *ev)
{
    uint64_t cur = w->cur;
    uint64_t occupied0 = w->occupied[0];

    if (w->drain != NO_SLOT) {
        occupied0 &= ~(UINT64_C(1) << w->drain);
    }
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
    unsigned level = 0;
    uint64_t occupied = occupied0;
    if (occupied == 0) {
        uint32_t higher = w->levels & ~UINT32_C(1);
        if (higher == 0) {
            return false;
        }
        level = (unsigned)__builtin_ctz(higher);
        occupied = w->occupied[level];
    }
    uint64_t ahead = occupied & (UINT64_MAX << digit(cur, level));
    /* Slots behind cur's digit are always empty: cur never passes an
     * occupied slot's region start without processing it. */
    assert(ahead != 0);
    unsigned slot = (unsigned)__builtin_ctzll(ahead);
    *ev = (struct wheel_event){ region_start(cur, level, slot), level, slot };
    return true;
}

/* Re-place up to `limit` ids of slot s, whose region cur has entered: each
 * lands at a lower level (or at a higher one, when its due moved later),
 * never back in s; stale ones go. Returns the ids taken. */
static size_t
cascade(struct wheel *w, unsigned s, size_t limit)
{
    size_t moved = 0;
    while (moved < limit && w->q[s].n > 0) {
        uint32_t id = queue_pop(w, s);
        int64_t due;
        if (taken_is_placed(w, s, id, &due)) {
            replace(w, id, due);
        }
        moved++;
    }
    return moved;
}

/* Start draining level-0 slot s: the ids it holds now. wait: the drain
 * fires nothing while now is below it (a tick already over: its last ns;
 * now's own tick: INT64_MIN, as its ids are compared with now one by
 * one). */
static void
drain_start(struct wheel *w, unsigned s, int64_t wait)
{
    w->drain = (uint16_t)s;
    w->drain_left = w->q[s].n;
    w->drain_wait = wait;
}

/* Take the next id of the drain: fire it if due, else re-place it, or
 * drop it as stale. Returns true if it fired. */
static bool
drain_one(struct wheel *w, int64_t now)
{
    unsigned s = w->drain;
    uint32_t id = queue_pop(w, s);     /* counts drain_left down */
    int64_t due;

    if (!taken_is_placed(w, s, id, &due)) {
        return false;
    }
    if (due > now) {
        replace(w, id, due);
        return false;
    }
    w->ops->set_tag(w->ctx, id, WHEEL_TAG_NONE);
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
    while (fired < budget && work < max_work) {
        struct wheel_event ev;

        if (w->drain != NO_SLOT) {
            if (w->drain_wait > now) {
                break;      /* the clock went back: wait for it */
            }
            if (drain_one(w, now)) {
                fired++;
            } else {
                work++;
            }
        } else if (!next_event(w, &ev) || ev.tick > until) {
            /* Nothing due up to now; never move cur backwards. */
            if (until > w->cur) {
                w->cur = until;
            }
            break;
        } else if (ev.level > 0) {
            w->cur = ev.tick;
            work += cascade(w, slot_index(ev.level, ev.slot), max_work - work);
        } else if (ev.tick < until) {
            w->cur = ev.tick + 1;
            drain_start(w, ev.slot, tick_end(w, ev.tick));
        } else if (!scanned) {
            /* Once per call: ids added to this tick meanwhile wait. */
            w->cur = ev.tick;
            drain_start(w, ev.slot, INT64_MIN);
            scanned = true;
        } else {
            break;
        }
    }
    if (work < max_work && fired < budget) {
        (void)compact(w, max_work - work);
    }
    return fired;
}

bool
wheel_pending(const struct wheel *w, int64_t now)
{
    uint64_t until;
    struct wheel_event ev;

    if (w->drain != NO_SLOT) {
        return w->drain_wait <= now;
    }
    if (w->compact != NO_SLOT && !w->compact_stuck) {
        return true;    /* a caller looping on this would spin otherwise */
    }
    if (!tick_of(w, now, &until) || !next_event(w, &ev)) {
        return false;
    }
    /* Whole past ticks and cascades up to now are work; the tick `now` is
     * in is drained once per wheel_advance() and is not reported, or a
     * caller looping on this would spin on entries due later in it. */
    return ev.tick < until || (ev.level > 0 && ev.tick <= until);
}

/* ------------------------------------------------------------------------
 * The soonest entry
 * --------------------------------------------------------------------- */

/* How far past its head wheel_first() looks into a slot for an id other
 * than the one to skip. */
#define FIRST_LOOK      64

/* A placed id of slot s other than skip, or 0: stale ids at its head are
 * dropped, then a few more are looked at. */
static uint32_t
first_in_slot(struct wheel *w, unsigned s, uint32_t skip)
{
    const struct queue *q = &w->q[s];
    while (q->n > 0 && !found_is_placed(w, s, queue_head(w, s))) {
        (void)queue_pop(w, s);
        stale_less(w, s);
    }
    size_t looked = 0;
    for (const struct block *b = q->head; b != NULL; b = b->next) {
        for (uint32_t i = b->start; i < b->end; i++) {
            uint32_t id = b->id[i];
            if (id != skip && found_is_placed(w, s, id)) {
                return id;
            }
            if (++looked > FIRST_LOOK) {
                return 0;
            }
        }
    }
    return 0;
}

uint32_t
wheel_first(struct wheel *w, uint32_t skip)
{
    uint32_t id = 0;
    if (w->drain != NO_SLOT) {
        id = first_in_slot(w, w->drain, skip);
    }
    /* Level by level from cur's digit on: each level's slots lie within
     * the current region of the next one, so this goes roughly by time
     * (good enough to choose what to evict). */
    for (unsigned level = 0; id == 0 && level < WHEEL_LEVELS; level++) {
        uint64_t ahead = w->occupied[level] &
                         (UINT64_MAX << digit(w->cur, level));
        for (; id == 0 && ahead != 0; ahead &= ahead - 1) {
            unsigned s = slot_index(level, (unsigned)__builtin_ctzll(ahead));
            if (s != w->drain) {
                id = first_in_slot(w, s, skip);
            }
        }
    }
    return id;
}
