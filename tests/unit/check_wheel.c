/*
 * check_wheel.c - the timer wheel, driven by an injected clock.
 *
 * Every firing goes through on_fire(), which checks the wheel's contract at
 * the moment it happens: the entry is already unlinked, and its due is not
 * after the `now` of the wheel_advance() running it (never early). The
 * random test replays operations against a naive model and checks after
 * each advance without a budget that nothing due is still waiting (the
 * wheel fires at due, not rounded up to a tick).
 */
#include <stdint.h>
#include <stdlib.h>

#include "server/wheel.h"
#include "tests/unit/suites.h"

#define MS      INT64_C(1000000)
#define SEC     (1000 * MS)
#define HOUR    (3600 * SEC)
#define DAY     (24 * HOUR)
#define YEAR    (365 * DAY)
#define EPOCH   INT64_C(1900000000000000000)  /* wall clock, ~2030 */
#define ALL     SIZE_MAX                       /* no fire budget */

/* For hot loops: a passing ck_assert() writes its location down Check's
 * pipe, which costs a syscall; this only calls into Check on failure. A
 * macro, to report the caller's line and the expression. */
#define CHEAP_ASSERT(expr) \
    do { \
        if (!(expr)) { \
            ck_abort_msg("Assertion '%s' failed", #expr); \
        } \
    } while (0)

struct item {
    unsigned tag;       /* what the wheel keeps per id (item_ops.tag) */
    int64_t due;        /* what the wheel reads through item_ops.due */
    uint32_t wid;       /* the item's wheel id: its index in `registry` */
    int id;
    int fires;
    int64_t fired_at;
};

/*
 * The wheel names entries by id and asks for their links and due through
 * callbacks, as the store does with its record handles. Items register
 * themselves here in item_init(); ids restart at 1 with each clock.
 */
#define REGISTRY_MAX (1u << 18)
static struct item *registry[REGISTRY_MAX];
static uint32_t registry_n;

static struct item *
item_by_id(uint32_t wid)
{
    CHEAP_ASSERT(wid >= 1 && wid <= registry_n && registry[wid] != NULL);
    return registry[wid];
}

/* A freed item's id answers "not scheduled" (registry NULL), as the
 * store's records do once their slot is free. */
static unsigned
item_placed(void *ctx, uint32_t wid, int64_t *due)
{
    (void)ctx;
    CHEAP_ASSERT(wid >= 1 && wid <= registry_n);
    if (registry[wid] == NULL || registry[wid]->tag == WHEEL_TAG_NONE) {
        return WHEEL_TAG_NONE;
    }
    *due = registry[wid]->due;
    return registry[wid]->tag;
}

static void
item_set_tag(void *ctx, uint32_t wid, unsigned tag)
{
    (void)ctx;
    item_by_id(wid)->tag = tag;
}

static bool
scheduled(const struct item *it)
{
    return it->tag != WHEEL_TAG_NONE;
}

struct clock;
typedef void (*item_hook)(struct clock *c, struct item *it);

/* The test's clock and what its fire callback does. */
struct clock {
    struct wheel *w;
    int64_t now;
    int64_t tick;
    item_hook hook;     /* runs after the checks in on_fire(), or NULL */
    void *hook_arg;
    size_t fired;
};

static void
on_fire(void *arg, uint32_t wid)
{
    struct clock *c = arg;
    struct item *it = item_by_id(wid);

    CHEAP_ASSERT(!scheduled(it));
    CHEAP_ASSERT(it->due <= c->now);
    it->fires++;
    it->fired_at = c->now;
    c->fired++;
    if (c->hook != NULL) {
        c->hook(c, it);
    }
}

static const struct wheel_ops item_ops = {
    .placed = item_placed,
    .set_tag = item_set_tag,
    .fire = on_fire,
};

static void
clock_init(struct clock *c, int64_t start, int64_t tick)
{
    *c = (struct clock){ .now = start, .tick = tick };
    c->w = wheel_create(start, tick, &item_ops, c);
    ck_assert_ptr_nonnull(c->w);
}

static void
clock_fini(struct clock *c)
{
    wheel_destroy(&c->w);
    ck_assert_ptr_null(c->w);
    registry_n = 0;
}

/* Move the clock to `now` and run the wheel; returns how many fired. */
static size_t
advance_to(struct clock *c, int64_t now, size_t budget)
{
    c->now = now;
    size_t n = wheel_advance(c->w, now, budget);
    CHEAP_ASSERT(n <= budget);
    return n;
}

static void
item_init(struct item *it, int id)
{
    CHEAP_ASSERT(registry_n + 1 < REGISTRY_MAX);
    it->tag = WHEEL_TAG_NONE;
    it->due = 0;
    it->wid = ++registry_n;
    registry[it->wid] = it;
    it->id = id;
    it->fires = 0;
    it->fired_at = -1;
}

/* Set an item's due and (re)place it in the wheel. */
static void
arm(struct wheel *w, struct item *it, int64_t due)
{
    it->due = due;
    CHEAP_ASSERT(wheel_schedule(w, it->wid, it->tag, due));
}

static void
schedule(struct clock *c, struct item *it, int64_t due)
{
    arm(c->w, it, due);
    CHEAP_ASSERT(scheduled(it));
}

/* A lone entry due at `due` does not fire at due - 1 ns, fires at due. */
static void
check_fires_exactly_at(int64_t start, int64_t tick, int64_t due)
{
    struct clock c;
    struct item it;

    clock_init(&c, start, tick);
    item_init(&it, 0);
    schedule(&c, &it, due);
    ck_assert_uint_eq(advance_to(&c, due - 1, ALL), 0);
    ck_assert_int_eq(it.fires, 0);
    ck_assert_uint_eq(wheel_count(c.w), 1);
    ck_assert_uint_eq(advance_to(&c, due, ALL), 1);
    ck_assert_int_eq(it.fired_at, due);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    clock_fini(&c);
}

/* ------------------------------------------------------------------------
 * create / destroy
 * --------------------------------------------------------------------- */

START_TEST(create_rejects_non_positive_tick)
{
    ck_assert_ptr_null(wheel_create(0, 0, &item_ops, NULL));
    ck_assert_ptr_null(wheel_create(0, -MS, &item_ops, NULL));
}
END_TEST

START_TEST(destroy_nulls_pointer_and_ignores_null)
{
    struct wheel *w = wheel_create(0, MS, &item_ops, NULL);
    ck_assert_ptr_nonnull(w);
    wheel_destroy(&w);
    ck_assert_ptr_null(w);
    wheel_destroy(&w);
    wheel_destroy(NULL);
}
END_TEST

START_TEST(new_wheel_is_empty_and_advance_fires_nothing)
{
    struct clock c;

    clock_init(&c, EPOCH, MS);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH + HOUR, ALL), 0);
    clock_fini(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * firing time
 * --------------------------------------------------------------------- */

START_TEST(fires_exactly_at_due_not_one_ns_before)
{
    check_fires_exactly_at(0, MS, 5 * MS);
    check_fires_exactly_at(EPOCH, MS, EPOCH + 5 * MS);
    /* Dues inside a tick are not rounded up to its end. */
    check_fires_exactly_at(0, MS, 5 * MS + 1);
    check_fires_exactly_at(EPOCH, MS, EPOCH + 5 * MS + 999999);
    check_fires_exactly_at(EPOCH, MS, EPOCH + 1);
}
END_TEST

START_TEST(zero_time_entry_due_now_fires_on_first_advance)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    item_init(&it, 0);
    schedule(&c, &it, 0);
    ck_assert_uint_eq(advance_to(&c, 0, ALL), 1);
    ck_assert_int_eq(it.fired_at, 0);
    clock_fini(&c);
}
END_TEST

START_TEST(fires_in_first_advance_at_or_after_due)
{
    struct clock c;
    struct item it;
    int64_t due = EPOCH + 3 * MS + 400;     /* inside a tick */

    clock_init(&c, EPOCH, MS);
    item_init(&it, 0);
    schedule(&c, &it, due);
    for (int64_t t = EPOCH; it.fires == 0; t += MS / 4) {
        advance_to(&c, t, ALL);
    }
    ck_assert_int_eq(it.fired_at, EPOCH + 3 * MS + MS / 4);
    clock_fini(&c);
}
END_TEST

START_TEST(unaligned_start_time_keeps_exact_firing)
{
    /* The wheel's origin is not on a tick boundary. */
    check_fires_exactly_at(EPOCH + 123456, MS, EPOCH + 42 * MS);
    check_fires_exactly_at(-7 * MS - 5, MS, 3 * MS - 17);
}
END_TEST

/* Ticks after the start at which a slot, a level or a region boundary
 * falls (64^k and one either side), then wall-clock spans. */
static const int64_t level_ticks[] = {
    1, 2, 63, 64, 65, 4095, 4096, 4097, 262143, 262144, 262145,
    16777215, 16777216, 16777217, 1073741824,
};

START_TEST(each_level_boundary_fires_at_due_never_early)
{
    size_t n = sizeof(level_ticks) / sizeof(level_ticks[0]);
    for (size_t i = 0; i < n; i++) {
        check_fires_exactly_at(EPOCH, MS, EPOCH + level_ticks[i] * MS);
        check_fires_exactly_at(0, 1, level_ticks[i]);
    }
}
END_TEST

/* All of them in one wheel, where cascades of one level feed the next. */
START_TEST(entries_on_all_levels_at_once_fire_in_due_order)
{
    enum { N = sizeof(level_ticks) / sizeof(level_ticks[0]) + 4 };
    const int64_t far[] = { 30 * DAY + 3, YEAR, 100 * YEAR + 1, 200 * YEAR };
    struct clock c;
    struct item it[N];
    int64_t due[N];

    clock_init(&c, EPOCH, MS);
    for (int i = 0; i < N; i++) {
        due[i] = EPOCH + (i < N - 4 ? level_ticks[i] * MS : far[i - (N - 4)]);
        item_init(&it[i], i);
        schedule(&c, &it[i], due[i]);
    }
    for (int i = 0; i < N; i++) {
        ck_assert(i == 0 || due[i] > due[i - 1]);
        ck_assert_uint_eq(advance_to(&c, due[i] - 1, ALL), 0);
        ck_assert_uint_eq(advance_to(&c, due[i], ALL), 1);
        ck_assert_int_eq(it[i].fired_at, due[i]);
        ck_assert_uint_eq(wheel_count(c.w), (size_t)(N - 1 - i));
    }
    clock_fini(&c);
}
END_TEST

START_TEST(hours_days_years_fire_at_due_never_early)
{
    const int64_t spans[] = { HOUR, 10 * HOUR + 7 * MS, DAY, 30 * DAY,
                              YEAR, 100 * YEAR, 200 * YEAR + 13 * MS };
    for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
        check_fires_exactly_at(EPOCH, MS, EPOCH + spans[i]);
    }
}
END_TEST

START_TEST(far_dues_near_int64_max_fire_at_due)
{
    int64_t last_ms = INT64_MAX / MS * MS;   /* last whole ms */

    check_fires_exactly_at(EPOCH, MS, last_ms);
    check_fires_exactly_at(0, MS, last_ms - 64 * MS);
    /* 1 ns ticks from INT64_MIN: the widest span the wheel can see. */
    check_fires_exactly_at(INT64_MIN, 1, INT64_MAX);
    check_fires_exactly_at(INT64_MIN, 1, 0);
    /* The final partial tick: INT64_MAX is past every due. */
    check_fires_exactly_at(EPOCH, MS, INT64_MAX);
}
END_TEST

/* Far entries are precise because they cascade, also when the clock goes
 * there in coarse steps and then every tick near the end. */
START_TEST(far_entry_cascades_and_fires_at_due)
{
    struct clock c;
    struct item it;
    int64_t due = EPOCH + 5 * DAY + 3 * HOUR + 17 * MS + 3;

    clock_init(&c, EPOCH, MS);
    item_init(&it, 0);
    schedule(&c, &it, due);
    for (int64_t t = EPOCH; t < due - SEC; t += 7 * 60 * SEC) {
        ck_assert_uint_eq(advance_to(&c, t, ALL), 0);
    }
    for (int64_t t = due - SEC; it.fires == 0; t += MS) {
        advance_to(&c, t, ALL);
    }
    ck_assert_int_eq(it.fired_at, due);
    clock_fini(&c);
}
END_TEST

START_TEST(past_due_fires_on_next_advance)
{
    struct clock c;
    struct item it;

    clock_init(&c, EPOCH, MS);
    item_init(&it, 0);
    advance_to(&c, EPOCH + 100 * MS + 500, ALL);
    schedule(&c, &it, EPOCH + 10 * MS);
    ck_assert_uint_eq(advance_to(&c, c.now, ALL), 1);
    /* Before the wheel's start, and at INT64_MIN. */
    schedule(&c, &it, EPOCH - DAY);
    ck_assert_uint_eq(advance_to(&c, c.now, ALL), 1);
    schedule(&c, &it, INT64_MIN);
    ck_assert_uint_eq(advance_to(&c, c.now, ALL), 1);
    ck_assert_int_eq(it.fires, 3);
    clock_fini(&c);
}
END_TEST

START_TEST(entries_due_in_same_tick_all_fire)
{
    struct clock c;
    struct item it[8];

    clock_init(&c, 0, MS);
    for (int i = 0; i < 8; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], 9 * MS + i);
    }
    ck_assert_uint_eq(advance_to(&c, 9 * MS + 7, 8), 8);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(it[i].fires, 1);
    }
    clock_fini(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * move and cancel
 * --------------------------------------------------------------------- */

START_TEST(schedule_moves_entry_earlier)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    item_init(&it, 0);
    schedule(&c, &it, HOUR);
    schedule(&c, &it, 70 * MS);
    ck_assert_uint_eq(wheel_count(c.w), 1);
    ck_assert_uint_eq(advance_to(&c, 70 * MS - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, 70 * MS, ALL), 1);
    ck_assert_uint_eq(advance_to(&c, 2 * HOUR, ALL), 0);
    ck_assert_int_eq(it.fires, 1);
    clock_fini(&c);
}
END_TEST

START_TEST(schedule_moves_entry_later)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    item_init(&it, 0);
    schedule(&c, &it, 70 * MS);
    schedule(&c, &it, HOUR);
    ck_assert_uint_eq(advance_to(&c, HOUR - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, HOUR, ALL), 1);
    ck_assert_int_eq(it.fires, 1);
    clock_fini(&c);
}
END_TEST

START_TEST(schedule_within_same_slot_uses_new_due)
{
    struct clock c;
    struct item it;

    /* 100 and 101 s share a level-2 slot: only `due` changes. */
    clock_init(&c, 0, MS);
    item_init(&it, 0);
    schedule(&c, &it, 100 * SEC);
    schedule(&c, &it, 101 * SEC);
    ck_assert_uint_eq(advance_to(&c, 101 * SEC - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, 101 * SEC, ALL), 1);
    schedule(&c, &it, 102 * SEC + 5 * MS);
    schedule(&c, &it, 102 * SEC + 3 * MS);
    ck_assert_uint_eq(advance_to(&c, 102 * SEC + 3 * MS - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, 102 * SEC + 3 * MS, ALL), 1);
    clock_fini(&c);
}
END_TEST

/* b is due but left waiting by a budget; moved later inside the same tick
 * it must not fire before its new due. */
START_TEST(moving_waiting_due_entry_later_in_its_tick_delays_it)
{
    struct clock c;
    struct item a;
    struct item b;

    clock_init(&c, 0, MS);
    item_init(&a, 0);
    item_init(&b, 1);
    schedule(&c, &a, 5 * MS + 10);
    schedule(&c, &b, 5 * MS + 20);
    ck_assert_uint_eq(advance_to(&c, 5 * MS + 500, 1), 1);
    schedule(&c, &b, 5 * MS + 900);
    ck_assert_uint_eq(advance_to(&c, 5 * MS + 500, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, 5 * MS + 899, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, 5 * MS + 900, ALL), 1);
    ck_assert_int_eq(a.fires + b.fires, 2);
    clock_fini(&c);
}
END_TEST

START_TEST(cancel_prevents_firing)
{
    struct clock c;
    struct item a;
    struct item b;

    clock_init(&c, 0, MS);
    item_init(&a, 0);
    item_init(&b, 1);
    schedule(&c, &a, 5 * MS);
    schedule(&c, &b, 5 * MS);
    wheel_cancel(c.w, a.wid, a.tag);
    ck_assert(!scheduled(&a));
    ck_assert_uint_eq(wheel_count(c.w), 1);
    ck_assert_uint_eq(advance_to(&c, HOUR, ALL), 1);
    ck_assert_int_eq(a.fires, 0);
    ck_assert_int_eq(b.fires, 1);
    clock_fini(&c);
}
END_TEST

START_TEST(cancel_of_unscheduled_entry_is_noop)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    item_init(&it, 0);
    wheel_cancel(c.w, it.wid, it.tag);
    schedule(&c, &it, MS);
    wheel_cancel(c.w, it.wid, it.tag);
    wheel_cancel(c.w, it.wid, it.tag);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    clock_fini(&c);
}
END_TEST

START_TEST(cancel_then_reschedule_fires_once_at_new_due)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    item_init(&it, 0);
    schedule(&c, &it, DAY);
    wheel_cancel(c.w, it.wid, it.tag);
    schedule(&c, &it, 2 * DAY);
    ck_assert_uint_eq(advance_to(&c, 2 * DAY - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, 2 * DAY, ALL), 1);
    clock_fini(&c);
}
END_TEST

/* A cascade cut short by the move limit leaves entries in the slot being
 * cascaded; moving or cancelling them there must still be exact. */
START_TEST(move_and_cancel_during_cut_short_cascade)
{
    enum { N = 20000 };
    struct clock c;
    struct item *it = calloc(N, sizeof(*it));
    int64_t base = 300 * SEC;               /* inside one level-2 slot */

    ck_assert_ptr_nonnull(it);
    clock_init(&c, 0, MS);
    for (int i = 0; i < N; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], base + (i % 4000) * MS);
    }
    /* Budget 1 allows only the minimum of cascade moves. */
    ck_assert_uint_eq(advance_to(&c, base - 1, 1), 0);
    for (int i = 0; i < N; i += 3) {
        schedule(&c, &it[i], it[i].due + MS);  /* likely same slot */
    }
    for (int i = 1; i < N; i += 3) {
        wheel_cancel(c.w, it[i].wid, it[i].tag);
    }
    ck_assert_uint_eq(wheel_count(c.w), N - (N + 1) / 3);
    for (int64_t t = base - 1; wheel_count(c.w) > 0; t += MS) {
        advance_to(&c, t, ALL);
    }
    for (int i = 0; i < N; i++) {
        CHEAP_ASSERT(it[i].fires == (i % 3 == 1 ? 0 : 1));
        if (it[i].fires == 1) {     /* first advance at or after due */
            CHEAP_ASSERT(it[i].fired_at < it[i].due + MS);
        }
    }
    clock_fini(&c);
    free(it);
}
END_TEST

/* ------------------------------------------------------------------------
 * callbacks that change the wheel
 * --------------------------------------------------------------------- */

static void
hook_reschedule_self(struct clock *c, struct item *it)
{
    if (it->fires < 10) {
        arm(c->w, it, it->due + 10 * MS);
    }
}

START_TEST(callback_can_reschedule_its_entry)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    c.hook = hook_reschedule_self;
    item_init(&it, 0);
    schedule(&c, &it, 10 * MS);
    for (int64_t t = 0; t <= 200 * MS; t += MS) {
        advance_to(&c, t, ALL);
        ck_assert_int_eq(it.fires, (int)(t / (10 * MS) < 10 ? t / (10 * MS)
                                                             : 10));
    }
    ck_assert_int_eq(it.fired_at, 100 * MS);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    clock_fini(&c);
}
END_TEST

static void
hook_free(struct clock *c, struct item *it)
{
    (void)c;
    registry[it->wid] = NULL;
    free(it);
}

START_TEST(callback_can_free_its_entry)
{
    struct clock c;

    clock_init(&c, 0, MS);
    c.hook = hook_free;
    for (int i = 0; i < 100; i++) {
        struct item *it = malloc(sizeof(*it));
        ck_assert_ptr_nonnull(it);
        item_init(it, i);
        schedule(&c, it, (i % 7) * MS);     /* several per slot */
    }
    ck_assert_uint_eq(advance_to(&c, 10 * MS, ALL), 100);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    clock_fini(&c);
}
END_TEST

/* Same-tick entries: whichever fires first cancels the other, which is
 * then waiting in the same drain. */
static void
hook_cancel_partner(struct clock *c, struct item *it)
{
    struct item *pair = c->hook_arg;
    wheel_cancel(c->w, (pair[1 - it->id]).wid, (pair[1 - it->id]).tag);
}

START_TEST(callback_can_cancel_another_due_entry)
{
    struct clock c;
    struct item pair[2];

    clock_init(&c, 0, MS);
    c.hook = hook_cancel_partner;
    c.hook_arg = pair;
    item_init(&pair[0], 0);
    item_init(&pair[1], 1);
    schedule(&c, &pair[0], 3 * MS);
    schedule(&c, &pair[1], 3 * MS);
    ck_assert_uint_eq(advance_to(&c, 3 * MS, ALL), 1);
    ck_assert_int_eq(pair[0].fires + pair[1].fires, 1);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    ck_assert_uint_eq(advance_to(&c, HOUR, ALL), 0);
    clock_fini(&c);
}
END_TEST

static void
hook_schedule_other(struct clock *c, struct item *it)
{
    struct item *other = c->hook_arg;
    if (it != other) {
        arm(c->w, other, c->now + 5 * MS);
    }
}

static void
hook_rearm_in_past(struct clock *c, struct item *it)
{
    arm(c->w, it, it->fires % 2 ? c->now : c->now - HOUR);
}

/* Due again at once, at now or long before: it fires in the next call,
 * so a callback that keeps re-arming in the past cannot spin. */
START_TEST(entry_rearmed_due_by_its_callback_fires_next_call)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    c.hook = hook_rearm_in_past;
    item_init(&it, 0);
    schedule(&c, &it, 2 * HOUR + 1);
    for (int i = 1; i <= 4; i++) {
        ck_assert_uint_eq(advance_to(&c, 2 * HOUR + 2, ALL), 1);
        ck_assert_int_eq(it.fires, i);
        ck_assert(scheduled(&it));
    }
    clock_fini(&c);
}
END_TEST

START_TEST(callback_can_schedule_another_entry)
{
    struct clock c;
    struct item a;
    struct item b;

    clock_init(&c, 0, MS);
    c.hook = hook_schedule_other;
    c.hook_arg = &b;
    item_init(&a, 0);
    item_init(&b, 1);
    schedule(&c, &a, 2 * MS);
    ck_assert_uint_eq(advance_to(&c, 2 * MS, ALL), 1);
    ck_assert(scheduled(&b));
    ck_assert_uint_eq(advance_to(&c, 7 * MS - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, 7 * MS, ALL), 1);
    ck_assert_int_eq(b.fired_at, 7 * MS);
    clock_fini(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * bounded work
 * --------------------------------------------------------------------- */

START_TEST(budget_limits_firings_and_rest_fire_next_call)
{
    struct clock c;
    struct item it[10];

    clock_init(&c, 0, MS);
    for (int i = 0; i < 10; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], (i % 2 + 1) * MS);
    }
    ck_assert_uint_eq(advance_to(&c, 5 * MS, 4), 4);
    ck_assert_uint_eq(wheel_count(c.w), 6);
    ck_assert_uint_eq(advance_to(&c, 5 * MS, 4), 4);
    ck_assert_uint_eq(advance_to(&c, 5 * MS, 4), 2);
    ck_assert_uint_eq(advance_to(&c, 5 * MS, 4), 0);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(it[i].fires, 1);
    }
    clock_fini(&c);
}
END_TEST

START_TEST(zero_budget_fires_nothing)
{
    struct clock c;
    struct item it;

    clock_init(&c, 0, MS);
    item_init(&it, 0);
    schedule(&c, &it, MS);
    ck_assert_uint_eq(advance_to(&c, HOUR, 0), 0);
    ck_assert_uint_eq(advance_to(&c, HOUR, 1), 1);
    clock_fini(&c);
}
END_TEST

/* With a 1 ns tick, ten hours are 3.6e13 ticks: this only finishes within
 * the test timeout if empty ticks are skipped, not walked. */
START_TEST(huge_jump_over_empty_ticks_is_cheap)
{
    struct clock c;
    struct item it;

    clock_init(&c, EPOCH, 1);
    item_init(&it, 0);
    schedule(&c, &it, EPOCH + 10 * HOUR);
    for (int64_t t = EPOCH; t < EPOCH + 10 * HOUR; t += HOUR / 1000) {
        CHEAP_ASSERT(advance_to(&c, t, 1) == 0);
    }
    ck_assert_uint_eq(advance_to(&c, EPOCH + 10 * HOUR, 1), 1);
    clock_fini(&c);
}
END_TEST

START_TEST(jump_of_ten_hours_fires_all_in_few_bounded_calls)
{
    enum { N = 100000, BUDGET = 10000 };
    struct clock c;
    struct item *it = calloc(N, sizeof(*it));
    uint64_t x = 88172645463325252u;
    size_t calls = 0;

    ck_assert_ptr_nonnull(it);
    clock_init(&c, EPOCH, MS);
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        item_init(&it[i], i);
        schedule(&c, &it[i], EPOCH + 1 + (int64_t)(x % (10 * HOUR)));
    }
    while (wheel_count(c.w) > 0) {
        ck_assert_uint_le(advance_to(&c, EPOCH + 10 * HOUR, BUDGET), BUDGET);
        calls++;
        ck_assert_uint_le(calls, 20);
    }
    ck_assert_uint_ge(calls, N / BUDGET);
    ck_assert_uint_eq(c.fired, N);
    for (int i = 0; i < N; i++) {
        CHEAP_ASSERT(it[i].fires == 1);
    }
    clock_fini(&c);
    free(it);
}
END_TEST

/* The store's expiry loop runs while wheel_pending() says work is left:
 * it must stay true while budget or work cap cut calls short, and turn
 * false once everything due has fired (not spin on later entries). */
START_TEST(pending_reports_leftover_work_until_all_due_fired)
{
    enum { N = 50000, BUDGET = 256 };
    struct clock c;
    struct item *it = calloc(N + 1, sizeof(*it));
    size_t calls = 0;

    ck_assert_ptr_nonnull(it);
    clock_init(&c, EPOCH, MS);
    ck_assert(!wheel_pending(c.w, EPOCH + HOUR));
    for (int i = 0; i < N; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], EPOCH + 2 * 1000 * MS + (i % 1000) * MS);
    }
    item_init(&it[N], N);
    schedule(&c, &it[N], EPOCH + HOUR);   /* not due in this test */
    ck_assert(!wheel_pending(c.w, EPOCH + MS));
    ck_assert(wheel_pending(c.w, EPOCH + 10 * 1000 * MS));
    do {
        advance_to(&c, EPOCH + 10 * 1000 * MS, BUDGET);
        calls++;
        ck_assert_uint_le(calls, 10 * N / BUDGET);
    } while (wheel_pending(c.w, EPOCH + 10 * 1000 * MS));
    ck_assert_uint_eq(c.fired, N);
    ck_assert_uint_eq(wheel_count(c.w), 1);
    clock_fini(&c);
    free(it);
}
END_TEST

/* ------------------------------------------------------------------------
 * time going backwards
 * --------------------------------------------------------------------- */

START_TEST(backwards_time_fires_nothing_early)
{
    struct clock c;
    struct item it;

    clock_init(&c, EPOCH, MS);
    item_init(&it, 0);
    advance_to(&c, EPOCH + 100 * MS, ALL);
    schedule(&c, &it, EPOCH + 150 * MS);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 50 * MS, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH - HOUR, ALL), 0);  /* < start */
    ck_assert_uint_eq(advance_to(&c, EPOCH + 150 * MS - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 150 * MS, ALL), 1);
    clock_fini(&c);
}
END_TEST

/* Behind the wheel's position, ahead of the regressed clock: not early,
 * and fired once the clock is back where it was. */
START_TEST(backwards_time_then_schedule_never_fires_early)
{
    struct clock c;
    struct item it;

    clock_init(&c, EPOCH, MS);
    item_init(&it, 0);
    advance_to(&c, EPOCH + 100 * MS, ALL);
    advance_to(&c, EPOCH + 50 * MS, ALL);
    schedule(&c, &it, EPOCH + 60 * MS);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 60 * MS - 1, ALL), 0);
    for (int64_t t = EPOCH + 60 * MS; it.fires == 0; t += MS) {
        advance_to(&c, t, ALL);
        ck_assert_int_le(t, EPOCH + 100 * MS);
    }
    clock_fini(&c);
}
END_TEST

START_TEST(backwards_time_holds_leftovers_of_budget)
{
    struct clock c;
    struct item it[10];

    clock_init(&c, EPOCH, MS);
    for (int i = 0; i < 10; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], EPOCH + 10 * MS);
    }
    ck_assert_uint_eq(advance_to(&c, EPOCH + 20 * MS, 3), 3);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 5 * MS, ALL), 0);
    /* The leftovers are known to be due by the end of their tick. */
    ck_assert_uint_eq(advance_to(&c, EPOCH + 11 * MS - 1, ALL), 7);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    clock_fini(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * count
 * --------------------------------------------------------------------- */

START_TEST(count_is_exact_through_schedule_move_cancel_fire)
{
    struct clock c;
    struct item it[100];

    clock_init(&c, 0, MS);
    for (int i = 0; i < 100; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], (i + 1) * SEC);
        ck_assert_uint_eq(wheel_count(c.w), (size_t)i + 1);
    }
    for (int i = 0; i < 100; i += 2) {
        schedule(&c, &it[i], (i + 1) * SEC + 500 * MS);   /* move */
    }
    ck_assert_uint_eq(wheel_count(c.w), 100);
    for (int i = 0; i < 10; i++) {
        wheel_cancel(c.w, it[i].wid, it[i].tag);
        wheel_cancel(c.w, it[i].wid, it[i].tag);
    }
    ck_assert_uint_eq(wheel_count(c.w), 90);
    ck_assert_uint_eq(advance_to(&c, 50 * SEC, ALL), 40);
    ck_assert_uint_eq(wheel_count(c.w), 50);
    ck_assert_uint_eq(advance_to(&c, 50 * SEC, 7), 0);
    ck_assert_uint_eq(advance_to(&c, 200 * SEC, 7), 7);
    ck_assert_uint_eq(wheel_count(c.w), 43);
    clock_fini(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * random operations against a model
 * --------------------------------------------------------------------- */

enum { MODEL_ITEMS = 400, MODEL_OPS = 10000 };

/* The naive reference: an array of which items are scheduled and for
 * when. on_fire() and hook_model() check that each firing is of an item
 * the model holds as scheduled with due <= now (and drop it from the
 * model); model_check() checks that none with due <= now is left. Items
 * only leave the model by firing or by cancel, so together these make the
 * fired set exactly the model's due set, each fired at the `now` of the
 * first advance at or after its due. */
struct model {
    struct clock c;
    struct item item[MODEL_ITEMS];
    bool scheduled[MODEL_ITEMS];
    int64_t due[MODEL_ITEMS];
    size_t armed_in[MODEL_ITEMS];   /* advances done when it was scheduled */
    size_t advances;
    size_t count;
    uint64_t rng;
    int64_t prev_now;
    bool prev_full;     /* the previous advance was not cut short */
    bool one_tick;      /* and it was one tick before this one */
};

static uint64_t
rng_next(struct model *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

static int64_t
rng_below(struct model *m, int64_t n)
{
    return (int64_t)(rng_next(m) % (uint64_t)n);
}

static int64_t
saturating_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* A due spread over every level, with off-tick nanoseconds. */
static int64_t
random_due(struct model *m)
{
    int64_t now = m->c.now;
    switch (rng_below(m, 8)) {
    case 0:
        return now - rng_below(m, 50 * MS);             /* past */
    case 1:
        return now + rng_below(m, 3) * MS;              /* this tick */
    case 2:
    case 3:
        return now + rng_below(m, 200 * MS);
    case 4:
        return now + rng_below(m, 20 * SEC);
    case 5:
        return now + rng_below(m, HOUR);
    case 6:
        return saturating_add(now, rng_below(m, 200 * YEAR));
    default:
        return INT64_MAX - rng_below(m, 2) * MS;
    }
}

static void
model_schedule(struct model *m, int id, int64_t due)
{
    arm(m->c.w, &m->item[id], due);
    if (!m->scheduled[id]) {
        m->count++;
    }
    m->scheduled[id] = true;
    m->due[id] = due;
    m->armed_in[id] = m->advances;
}

static void
model_cancel(struct model *m, int id)
{
    wheel_cancel(m->c.w, (m->item[id]).wid, (m->item[id]).tag);
    if (m->scheduled[id]) {
        m->count--;
    }
    m->scheduled[id] = false;
}

/* Fire hook: the model must agree the item was scheduled for this due;
 * sometimes re-arm it later or cancel another item, as the store does. */
static void
hook_model(struct clock *c, struct item *it)
{
    struct model *m = c->hook_arg;

    CHEAP_ASSERT(m->scheduled[it->id]);
    CHEAP_ASSERT(m->due[it->id] == it->due);
    if (m->one_tick && m->armed_in[it->id] < m->advances) {
        /* It was there for the previous advance, one tick ago. */
        CHEAP_ASSERT(c->now - it->due < c->tick);
    }
    m->scheduled[it->id] = false;
    m->count--;
    switch (rng_below(m, 10)) {
    case 0:
    case 1:
        model_schedule(m, it->id, c->now + 1 + rng_below(m, 10 * SEC));
        break;
    case 2:
        model_cancel(m, (int)rng_below(m, MODEL_ITEMS));
        break;
    default:
        break;
    }
}

/* The wheel and the model agree on every item; after an advance without a
 * budget, nothing due by now is still waiting. */
static void
model_check(struct model *m, bool full)
{
    CHEAP_ASSERT(wheel_count(m->c.w) == m->count);
    for (int i = 0; i < MODEL_ITEMS; i++) {
        CHEAP_ASSERT(scheduled(&m->item[i])
                     == m->scheduled[i]);
        if (full && m->scheduled[i]) {
            CHEAP_ASSERT(m->due[i] > m->c.now);
        }
    }
}

static void
model_advance(struct model *m, int64_t step, size_t budget)
{
    int64_t now = saturating_add(m->c.now, step);
    size_t before = m->c.fired;

    m->one_tick = m->prev_full && now - m->prev_now == m->c.tick;
    size_t n = advance_to(&m->c, now, budget);
    CHEAP_ASSERT(n == m->c.fired - before);
    /* Fewer than `budget` fired does not mean done: the work bound may
     * have cut the call short too. Only an unlimited call must finish. */
    model_check(m, budget == ALL);
    m->prev_now = now;
    m->prev_full = budget == ALL;
    m->advances++;
}

static void
model_step(struct model *m, int op)
{
    int id = (int)rng_below(m, MODEL_ITEMS);
    int r = (int)rng_below(m, 100);

    if (r < 45) {
        model_schedule(m, id, random_due(m));
    } else if (r < 55) {
        model_cancel(m, id);
    } else if (op > MODEL_OPS * 3 / 4) {
        /* Last quarter: a clock advanced every tick, as the loop does. */
        model_advance(m, m->c.tick, ALL);
    } else if (r < 65) {
        model_advance(m, rng_below(m, 500 * MS), 1 + (size_t)rng_below(m, 3));
    } else if (r < 95) {
        model_advance(m, rng_below(m, 30 * MS), ALL);
    } else {
        model_advance(m, rng_below(m, 2 * HOUR), ALL);
    }
}

START_TEST(random_ops_match_reference_model)
{
    struct model *m = calloc(1, sizeof(*m));

    ck_assert_ptr_nonnull(m);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        int64_t start = seed == 1 ? 0 : EPOCH;
        clock_init(&m->c, start, MS);
        m->c.hook = hook_model;
        m->c.hook_arg = m;
        m->rng = 0x9E3779B97F4A7C15u * seed;
        m->count = 0;
        m->advances = 0;
        m->prev_now = start;
        m->prev_full = true;
        for (int i = 0; i < MODEL_ITEMS; i++) {
            item_init(&m->item[i], i);
            m->scheduled[i] = false;
        }
        for (int op = 0; op < MODEL_OPS; op++) {
            model_step(m, op);
        }
        model_advance(m, DAY, ALL);
        clock_fini(&m->c);
    }
    free(m);
}
END_TEST


/* ------------------------------------------------------------------------
 * stale entries: ids moved, cancelled, freed and reused
 * --------------------------------------------------------------------- */

/* A move or a cancel leaves the old entry behind, counted stale until its
 * slot's time comes; nothing fires for it. */
START_TEST(moved_and_cancelled_ids_leave_stale_entries_dropped_in_time)
{
    enum { N = 100 };
    struct clock c;
    struct item it[N];

    clock_init(&c, EPOCH, MS);
    for (int i = 0; i < N; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], EPOCH + HOUR);
    }
    ck_assert_uint_eq(wheel_stale(c.w), 0);
    for (int i = 0; i < N / 2; i++) {
        schedule(&c, &it[i], EPOCH + 10 * MS);      /* earlier: moved */
    }
    for (int i = N / 2; i < N * 3 / 4; i++) {
        wheel_cancel(c.w, it[i].wid, it[i].tag);
    }
    ck_assert_uint_eq(wheel_count(c.w), N * 3 / 4);
    ck_assert_uint_eq(wheel_stale(c.w), N * 3 / 4);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 10 * MS, ALL), N / 2);
    ck_assert_uint_eq(advance_to(&c, EPOCH + HOUR - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH + HOUR, ALL), N / 4);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(it[i].fires, i < N / 2 || i >= N * 3 / 4);
    }
    ck_assert_uint_eq(wheel_count(c.w), 0);
    ck_assert_uint_eq(wheel_stale(c.w), 0);
    clock_fini(&c);
}
END_TEST

/* The store frees a record and reuses its handle: the wheel still holds
 * the old id, in a slot the new owner may be placed in too. It fires
 * once, at the new owner's due, and asks nothing of the freed item. */
START_TEST(freed_id_reused_in_the_same_slot_fires_once_at_its_due)
{
    struct clock c;
    struct item *old = malloc(sizeof(*old));
    struct item reused;

    ck_assert_ptr_nonnull(old);
    clock_init(&c, EPOCH, MS);
    item_init(old, 0);
    schedule(&c, old, EPOCH + HOUR);
    wheel_cancel(c.w, old->wid, old->tag);
    uint32_t wid = old->wid;
    registry[wid] = NULL;           /* freed: its id names nothing */
    free(old);
    ck_assert_uint_eq(advance_to(&c, EPOCH + MS, ALL), 0);
    /* The id comes back for another item, due in the same slot. */
    reused = (struct item){ .wid = wid, .id = 1, .fired_at = -1 };
    registry[wid] = &reused;
    schedule(&c, &reused, EPOCH + HOUR + 5 * MS);
    ck_assert_uint_eq(wheel_stale(c.w), 1);
    ck_assert_uint_eq(advance_to(&c, EPOCH + HOUR + 5 * MS - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH + HOUR + 5 * MS, ALL), 1);
    ck_assert_int_eq(reused.fires, 1);
    ck_assert_int_eq(reused.fired_at, EPOCH + HOUR + 5 * MS);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 2 * HOUR, ALL), 0);
    ck_assert_uint_eq(wheel_stale(c.w), 0);
    clock_fini(&c);
}
END_TEST

/* Ids cancelled and freed for good: the wheel drops their entries when it
 * gets there, asking only whether they are still placed. */
START_TEST(entries_of_freed_ids_are_dropped_without_firing)
{
    enum { N = 3000 };
    struct clock c;
    struct item *it = calloc(N, sizeof(*it));

    ck_assert_ptr_nonnull(it);
    clock_init(&c, EPOCH, MS);
    for (int i = 0; i < N; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], EPOCH + (i % 300) * SEC);
    }
    for (int i = 0; i < N; i++) {
        wheel_cancel(c.w, it[i].wid, it[i].tag);
        registry[it[i].wid] = NULL;
    }
    ck_assert_uint_eq(wheel_count(c.w), 0);
    ck_assert_uint_eq(wheel_stale(c.w), N);
    for (int64_t t = EPOCH; t <= EPOCH + 301 * SEC; t += 100 * MS) {
        CHEAP_ASSERT(advance_to(&c, t, ALL) == 0);
    }
    ck_assert_uint_eq(wheel_stale(c.w), 0);
    ck_assert(!wheel_pending(c.w, EPOCH + 301 * SEC));
    clock_fini(&c);
    free(it);
}
END_TEST

/* Keys deleted and made again with the same TTL, round after round, long
 * before their slot's time comes: compaction keeps the stale entries to
 * about the scheduled ones (plus a floor), not one per round, and every
 * item still fires exactly once at its due. */
START_TEST(stale_entries_stay_bounded_under_cancel_and_reschedule_churn)
{
    enum { N = 20000, ROUNDS = 40, FLOOR = 4096 };
    struct clock c;
    struct item *it = calloc(N, sizeof(*it));
    size_t most = 0;

    ck_assert_ptr_nonnull(it);
    clock_init(&c, EPOCH, MS);
    for (int i = 0; i < N; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], EPOCH + DAY + i);
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++) {
            wheel_cancel(c.w, it[i].wid, it[i].tag);
            schedule(&c, &it[i], EPOCH + DAY + i);
            size_t stale = wheel_stale(c.w);
            most = stale > most ? stale : most;
        }
        advance_to(&c, EPOCH + r * MS, ALL);
    }
    ck_assert_uint_le(most, 2 * N + FLOOR);
    while (wheel_pending(c.w, c.now)) {
        advance_to(&c, c.now, ALL);
    }
    ck_assert_uint_le(wheel_stale(c.w), N + FLOOR);
    ck_assert_uint_eq(wheel_count(c.w), N);
    ck_assert_uint_eq(advance_to(&c, EPOCH + DAY - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH + DAY + N, ALL), N);
    for (int i = 0; i < N; i++) {
        CHEAP_ASSERT(it[i].fires == 1);
    }
    ck_assert_uint_eq(wheel_stale(c.w), 0);
    clock_fini(&c);
    free(it);
}
END_TEST

START_TEST(first_skips_the_given_id_and_drops_stale_ones_in_front)
{
    struct clock c;
    struct item a, b, gone;

    clock_init(&c, EPOCH, MS);
    item_init(&gone, 0);
    item_init(&a, 1);
    item_init(&b, 2);
    schedule(&c, &gone, EPOCH + 3 * MS);
    schedule(&c, &a, EPOCH + 5 * MS);
    schedule(&c, &b, EPOCH + 5 * MS);
    wheel_cancel(c.w, gone.wid, gone.tag);
    ck_assert_uint_eq(wheel_stale(c.w), 1);
    ck_assert_uint_eq(wheel_first(c.w, 0), a.wid);
    ck_assert_uint_eq(wheel_stale(c.w), 0);
    ck_assert_uint_eq(wheel_first(c.w, a.wid), b.wid);
    ck_assert_uint_eq(wheel_first(c.w, b.wid), a.wid);
    wheel_cancel(c.w, b.wid, b.tag);
    ck_assert_uint_eq(wheel_first(c.w, a.wid), 0);
    ck_assert(scheduled(&a));
    clock_fini(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * suite
 * --------------------------------------------------------------------- */
/* ------------------------------------------------------------------------
 * lazy re-arm, first, clear
 * --------------------------------------------------------------------- */

/* The store moves a key's due later on every hit without touching the
 * wheel; the wheel re-reads the due when it gets to the entry and places
 * it again, so a due moved later never fires at the old time. */
START_TEST(due_moved_later_without_schedule_fires_at_new_due)
{
    struct clock c;
    struct item it;

    clock_init(&c, EPOCH, MS);
    item_init(&it, 0);
    schedule(&c, &it, EPOCH + 10 * MS);
    it.due = EPOCH + 30 * MS;
    ck_assert_uint_eq(advance_to(&c, EPOCH + 15 * MS, ALL), 0);
    ck_assert(scheduled(&it));
    ck_assert_uint_eq(wheel_count(c.w), 1);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 30 * MS - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 30 * MS, ALL), 1);
    ck_assert_int_eq(it.fired_at, EPOCH + 30 * MS);
    clock_fini(&c);
}
END_TEST

/* A due moved from hours to years away is re-placed level after level. */
START_TEST(due_moved_far_later_without_schedule_never_fires_early)
{
    struct clock c;
    struct item it;

    clock_init(&c, EPOCH, MS);
    item_init(&it, 0);
    schedule(&c, &it, EPOCH + HOUR);
    it.due = EPOCH + 2 * YEAR + 7;
    for (int64_t t = EPOCH; t < it.due; t += DAY) {
        CHEAP_ASSERT(advance_to(&c, t, ALL) == 0);
    }
    ck_assert_uint_eq(advance_to(&c, it.due - 1, ALL), 0);
    ck_assert_uint_eq(advance_to(&c, it.due, ALL), 1);
    clock_fini(&c);
}
END_TEST

START_TEST(first_names_soonest_entry_and_zero_when_empty)
{
    struct clock c;
    struct item a, b;

    clock_init(&c, EPOCH, MS);
    ck_assert_uint_eq(wheel_first(c.w, 0), 0);
    item_init(&a, 0);
    item_init(&b, 1);
    schedule(&c, &a, EPOCH + HOUR);
    schedule(&c, &b, EPOCH + 5 * MS);
    ck_assert_uint_eq(wheel_first(c.w, 0), b.wid);
    ck_assert(scheduled(&b));
    wheel_cancel(c.w, b.wid, b.tag);
    ck_assert_uint_eq(wheel_first(c.w, 0), a.wid);
    wheel_cancel(c.w, a.wid, a.tag);
    ck_assert_uint_eq(wheel_first(c.w, 0), 0);
    clock_fini(&c);
}
END_TEST

START_TEST(clear_forgets_every_entry)
{
    struct clock c;
    struct item it[3];

    clock_init(&c, EPOCH, MS);
    for (int i = 0; i < 3; i++) {
        item_init(&it[i], i);
        schedule(&c, &it[i], EPOCH + (i + 1) * HOUR);
    }
    wheel_clear(c.w);
    ck_assert_uint_eq(wheel_count(c.w), 0);
    ck_assert_uint_eq(wheel_first(c.w, 0), 0);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 10 * HOUR, ALL), 0);
    /* Entries can be scheduled afresh after a clear. */
    it[0].tag = WHEEL_TAG_NONE;
    schedule(&c, &it[0], EPOCH + 11 * HOUR);
    ck_assert_uint_eq(advance_to(&c, EPOCH + 11 * HOUR, ALL), 1);
    clock_fini(&c);
}
END_TEST


Suite *
wheel_suite(void)
{
    Suite *s = suite_create("wheel");

    TCase *tc = tcase_create("lifecycle");
    tcase_add_test(tc, create_rejects_non_positive_tick);
    tcase_add_test(tc, destroy_nulls_pointer_and_ignores_null);
    tcase_add_test(tc, new_wheel_is_empty_and_advance_fires_nothing);
    suite_add_tcase(s, tc);

    tc = tcase_create("fire_time");
    tcase_add_test(tc, fires_exactly_at_due_not_one_ns_before);
    tcase_add_test(tc, zero_time_entry_due_now_fires_on_first_advance);
    tcase_add_test(tc, fires_in_first_advance_at_or_after_due);
    tcase_add_test(tc, unaligned_start_time_keeps_exact_firing);
    tcase_add_test(tc, each_level_boundary_fires_at_due_never_early);
    tcase_add_test(tc, entries_on_all_levels_at_once_fire_in_due_order);
    tcase_add_test(tc, hours_days_years_fire_at_due_never_early);
    tcase_add_test(tc, far_dues_near_int64_max_fire_at_due);
    tcase_add_test(tc, far_entry_cascades_and_fires_at_due);
    tcase_add_test(tc, past_due_fires_on_next_advance);
    tcase_add_test(tc, entries_due_in_same_tick_all_fire);
    suite_add_tcase(s, tc);

    tc = tcase_create("move_cancel");
    tcase_add_test(tc, schedule_moves_entry_earlier);
    tcase_add_test(tc, schedule_moves_entry_later);
    tcase_add_test(tc, schedule_within_same_slot_uses_new_due);
    tcase_add_test(tc, moving_waiting_due_entry_later_in_its_tick_delays_it);
    tcase_add_test(tc, cancel_prevents_firing);
    tcase_add_test(tc, cancel_of_unscheduled_entry_is_noop);
    tcase_add_test(tc, cancel_then_reschedule_fires_once_at_new_due);
    tcase_add_test(tc, move_and_cancel_during_cut_short_cascade);
    suite_add_tcase(s, tc);

    tc = tcase_create("callback");
    tcase_add_test(tc, callback_can_reschedule_its_entry);
    tcase_add_test(tc, callback_can_free_its_entry);
    tcase_add_test(tc, callback_can_cancel_another_due_entry);
    tcase_add_test(tc, callback_can_schedule_another_entry);
    tcase_add_test(tc, entry_rearmed_due_by_its_callback_fires_next_call);
    suite_add_tcase(s, tc);

    tc = tcase_create("bounded_work");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, budget_limits_firings_and_rest_fire_next_call);
    tcase_add_test(tc, zero_budget_fires_nothing);
    tcase_add_test(tc, huge_jump_over_empty_ticks_is_cheap);
    tcase_add_test(tc, jump_of_ten_hours_fires_all_in_few_bounded_calls);
    tcase_add_test(tc, pending_reports_leftover_work_until_all_due_fired);
    suite_add_tcase(s, tc);

    tc = tcase_create("backwards_time");
    tcase_add_test(tc, backwards_time_fires_nothing_early);
    tcase_add_test(tc, backwards_time_then_schedule_never_fires_early);
    tcase_add_test(tc, backwards_time_holds_leftovers_of_budget);
    suite_add_tcase(s, tc);

    tc = tcase_create("lazy_first_clear");
    tcase_add_test(tc, due_moved_later_without_schedule_fires_at_new_due);
    tcase_add_test(tc, due_moved_far_later_without_schedule_never_fires_early);
    tcase_add_test(tc, first_names_soonest_entry_and_zero_when_empty);
    tcase_add_test(tc, clear_forgets_every_entry);
    suite_add_tcase(s, tc);

    tc = tcase_create("count");
    tcase_add_test(tc, count_is_exact_through_schedule_move_cancel_fire);
    suite_add_tcase(s, tc);

    tc = tcase_create("stale");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, moved_and_cancelled_ids_leave_stale_entries_dropped_in_time);
    tcase_add_test(tc, freed_id_reused_in_the_same_slot_fires_once_at_its_due);
    tcase_add_test(tc, entries_of_freed_ids_are_dropped_without_firing);
    tcase_add_test(tc, stale_entries_stay_bounded_under_cancel_and_reschedule_churn);
    tcase_add_test(tc, first_skips_the_given_id_and_drops_stale_ones_in_front);
    suite_add_tcase(s, tc);

    tc = tcase_create("model");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, random_ops_match_reference_model);
    suite_add_tcase(s, tc);

    return s;
}
