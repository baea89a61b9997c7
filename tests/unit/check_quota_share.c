/*
 * check_quota_share.c - RLQS's sharing rule (algorithms/quota_share.c) in
 * simulated time: the pool and the split's arithmetic, the token bucket
 * an assignment is, when a change is sent; then three simulated Envoys
 * (token buckets that start full on every new assignment, reports every
 * second, pushes looked for every 100 ms) under uneven demand that shifts
 * half-way, whose admissions per window stay within N plus the buckets
 * handed out in that window, and whose shares reach the rule's split
 * within two reporting intervals of the shift.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/quota_share.h"
#include "tests/unit/suites.h"

START_TEST(test_pool_leaves_room_for_the_buckets)
{
    /* 100 a second, nothing taken by others: 100 / 1.1, less 2 %. */
    ck_assert_double_eq_tol(qs_pool(QS_TOKEN_BUCKET, 100, 1, 0),
                            100.0 / 1.1 * 0.98, 1e-9);
    ck_assert_double_eq_tol(qs_pool(QS_TOKEN_BUCKET, 100, 1, 45),
                            55.0 / 1.1 * 0.98, 1e-9);
    ck_assert_double_eq_tol(qs_pool(QS_TOKEN_BUCKET, 6000, 60, 0),
                            100.0 / 1.1 * 0.98,
                            1e-9);
    ck_assert(qs_pool(QS_TOKEN_BUCKET, 100, 1, 100) == 0);
    ck_assert(qs_pool(QS_TOKEN_BUCKET, 100, 1, 500) == 0);
    ck_assert(qs_pool(QS_TOKEN_BUCKET, 0, 1, 0) == 0);
}
END_TEST

static void
split3(double d0, double d1, double d2, double pool, double out[3])
{
    struct qs_member m[3], *p[3];
    double d[3] = { d0, d1, d2 };
    for (int i = 0; i < 3; i++) {
        qs_member_init(&m[i], 0);
        m[i].demand = d[i];
        p[i] = &m[i];
    }
    qs_split(p, 3, pool);
    for (int i = 0; i < 3; i++) {
        out[i] = m[i].share;
    }
}

START_TEST(test_split_water_fills_on_demand)
{
    double s[3];
    /* One small demand is met; the two large ones share the rest. */
    split3(80, 40, 10, 90, s);
    ck_assert_double_eq_tol(s[0] + s[1] + s[2], 90, 1e-9);
    ck_assert_double_eq_tol(s[2], 10, 1e-9);
    ck_assert_double_eq_tol(s[0], 40, 1e-9);
    ck_assert_double_eq_tol(s[1], 40, 1e-9);
    /* Everybody over: equal parts. */
    split3(500, 300, 200, 90, s);
    for (int i = 0; i < 3; i++) {
        ck_assert_double_eq_tol(s[i], 30, 1e-9);
    }
    /* Nobody asks much: each gets its demand, the rest spread equally. */
    split3(10, 20, 0, 90, s);
    ck_assert_double_eq_tol(s[0], 10 + 19, 1e-9);
    ck_assert_double_eq_tol(s[1], 20 + 19, 1e-9);
    ck_assert_double_eq_tol(s[2], 3 + 19, 1e-9);
    /* The floor: an idle member keeps a tenth of an equal part. */
    split3(1000, 1000, 0, 90, s);
    ck_assert_double_eq_tol(s[2], 3, 1e-9);
    ck_assert_double_eq_tol(s[0] + s[1] + s[2], 90, 1e-9);
}
END_TEST

START_TEST(test_bucket_is_a_tenth_of_a_unit)
{
    struct qs_assignment a;
    qs_bucket_for(30, 1, &a);               /* 30/s: 3 tokens per 100 ms */
    ck_assert(!a.deny_all && !a.allow_all);
    ck_assert_uint_eq(a.max_tokens, 3);
    ck_assert_int_eq(a.fill_ns, 100000000);
    ck_assert_double_eq_tol(qs_rate(&a), 30, 1e-6);
    qs_bucket_for(2.5, 1, &a);              /* under a tenth: two tokens */
    ck_assert_uint_eq(a.max_tokens, 2);
    ck_assert_int_eq(a.fill_ns, 800000000);
    qs_bucket_for(1.5, 1, &a);              /* under two a unit: one */
    ck_assert_uint_eq(a.max_tokens, 1);
    qs_bucket_for(0.5, 60, &a);             /* a minute's limit */
    ck_assert_uint_eq(a.max_tokens, 3);
    ck_assert_int_eq(a.fill_ns, 6000000000LL);
    qs_bucket_for(0, 1, &a);
    ck_assert(a.deny_all);
    qs_bucket_for(-1, 1, &a);
    ck_assert(a.deny_all);
    qs_bucket_for(1e-12, 1, &a);            /* less than one a year */
    ck_assert(a.deny_all);
    qs_bucket_for(1e12, 3600, &a);          /* past uint32: capped */
    ck_assert_uint_eq(a.max_tokens, UINT32_MAX);
}
END_TEST

/* requests_per_time_unit: no burst to leave room for, the share times
 * the unit rounded down, one at least, none for a share of 0. */
START_TEST(test_per_unit_is_the_share_times_the_unit)
{
    struct qs_assignment a, b;
    struct qs_member m;
    bool fell;
    ck_assert_double_eq_tol(qs_pool(QS_PER_UNIT, 100, 1, 0), 98, 1e-9);
    ck_assert_double_eq_tol(qs_pool(QS_PER_UNIT, 6000, 60, 1000),
                            5000.0 * 0.98 / 60, 1e-9);
    ck_assert(qs_pool(QS_PER_UNIT, 100, 1, 100) == 0);
    qs_per_unit_for(39.7, 1, &a);
    ck_assert(!a.deny_all && !a.allow_all && a.max_tokens == 0);
    ck_assert_uint_eq(a.per_unit, 39);
    ck_assert_int_eq(a.unit_s, 1);
    ck_assert_double_eq_tol(qs_rate(&a), 39, 1e-9);
    qs_per_unit_for(0.5, 60, &a);           /* 30 a minute */
    ck_assert_uint_eq(a.per_unit, 30);
    qs_per_unit_for(0.001, 1, &a);          /* under one: one */
    ck_assert_uint_eq(a.per_unit, 1);
    qs_per_unit_for(0, 1, &a);
    ck_assert(a.deny_all && a.per_unit == 0);
    qs_per_unit_for(1e12, 3600, &a);        /* capped */
    ck_assert_uint_eq(a.per_unit, UINT32_MAX);
    /* The member's strategy picks; a switch is a change. */
    qs_member_init(&m, 0);
    m.share = 30;
    qs_assignment_for(&m, 1, &a);
    ck_assert_uint_eq(a.max_tokens, 3);
    m.strategy = QS_PER_UNIT;
    qs_assignment_for(&m, 1, &b);
    ck_assert_uint_eq(b.per_unit, 30);
    ck_assert(!qs_same(&a, &b));
    ck_assert(qs_differs(&b, &a, &fell));
}
END_TEST

START_TEST(test_changes_wait_an_interval_and_small_ones_none)
{
    struct qs_member m;
    struct qs_assignment a;
    qs_member_init(&m, 0);
    qs_report(&m, 50, 0, 1000, 1000);
    m.share = 30;
    ck_assert(!qs_push_due(&m, 1, 1000));   /* the first goes in a reply */
    qs_choose(&m, 1, 1000, &a);
    ck_assert_uint_eq(a.max_tokens, 3);
    qs_sent(&m, &a, 1000);
    m.share = 29.5;                         /* down 1.7 %: the same */
    ck_assert(!qs_push_due(&m, 1, 1100));
    m.share = 32;                           /* up 6.7 %: the same */
    ck_assert(!qs_push_due(&m, 1, 1200));
    qs_choose(&m, 1, 1200, &a);
    ck_assert_uint_eq(a.max_tokens, 3);
    ck_assert_int_eq(a.fill_ns, 100000000);
    m.share = 60;                           /* changed, but too soon */
    ck_assert(!qs_push_due(&m, 1, 1500));
    qs_choose(&m, 1, 1500, &a);
    ck_assert_uint_eq(a.max_tokens, 3);
    ck_assert(qs_push_due(&m, 1, 1950));    /* an interval, less jitter */
    qs_choose(&m, 1, 1950, &a);
    ck_assert_uint_eq(a.max_tokens, 6);
    qs_sent(&m, &a, 1950);
    ck_assert(!qs_push_due(&m, 1, 2000));
    m.share = 55;                           /* down 8 %: at once */
    ck_assert(qs_push_due(&m, 1, 2000));
    qs_choose(&m, 1, 2000, &a);
    ck_assert_uint_eq(a.max_tokens, 5);
    qs_sent(&m, &a, 2000);
    ck_assert(!qs_push_due(&m, 1, 2500));
    ck_assert(qs_push_due(&m, 1, 2000 + qs_ttl_ms(&m) / 2)); /* refresh */
    ck_assert_int_eq(qs_ttl_ms(&m), 4000);
    ck_assert(!qs_stale(&m, 1000 + 4000));
    ck_assert(qs_stale(&m, 1000 + 4001));
}
END_TEST

START_TEST(test_report_clamps_its_interval)
{
    struct qs_member m;
    qs_member_init(&m, 0);
    m.interval_ms = 150;
    qs_report(&m, UINT64_MAX, UINT64_MAX, 80, 5);
    ck_assert_int_eq(m.interval_ms, QS_MIN_INTERVAL_MS);
    ck_assert(m.demand > 1e19);
    qs_report(&m, 10, 0, INT64_MAX, 5);
    ck_assert_int_eq(m.interval_ms, QS_MAX_INTERVAL_MS);
}
END_TEST

START_TEST(test_a_short_report_waits_for_the_next)
{
    struct qs_member m;
    qs_member_init(&m, 0);
    qs_report(&m, 40, 10, 1000, 1000);      /* 50 a second */
    ck_assert_double_eq_tol(m.demand, 50, 1e-9);
    /* Envoy reports at once on a new assignment: 3 in 20 ms says little,
     * it is kept for the next, which covers the rest of the second. */
    qs_report(&m, 3, 0, 20, 1020);
    ck_assert_double_eq_tol(m.demand, 50, 1e-9);
    ck_assert_int_eq(m.reported_ms, 1020);
    qs_report(&m, 57, 0, 980, 2000);
    ck_assert_double_eq_tol(m.demand, 60, 1e-9);
    ck_assert_int_eq(m.interval_ms, 1000);
    /* Unknown spans: the time between reports as seen. */
    qs_report(&m, 30, 0, -1, 2500);
    ck_assert_double_eq_tol(m.demand, 60, 1e-9);
    ck_assert_int_eq(m.interval_ms, 500);
    qs_report(&m, 1, 0, -1, 2500);          /* at once: held */
    ck_assert_int_eq(m.interval_ms, 500);
    qs_report(&m, 29, 0, -1, 3000);
    ck_assert_double_eq_tol(m.demand, 60, 1e-9);
}
END_TEST

/* ---- three simulated Envoys ----------------------------------------- */

#define LIMIT 100               /* a second */
#define STEP_MS 10
#define SIM_MS 60000
#define SHIFT_MS 30000
#define GONE_MS 45000
#define ENVOYS 3

struct envoy {
    struct qs_member m;
    bool here;
    double tokens;              /* its bucket (continuous refill) */
    struct qs_assignment a;
    bool assigned;
    double owed;                /* requests arrived, fractional */
    uint64_t allowed, denied;   /* since the last report */
    int64_t last_report_ms;
    double admitted_ms[SIM_MS / 1000];
};

static double
demand_of(int i, int64_t t)
{
    static const double before[ENVOYS] = { 200, 40, 10 };
    static const double after[ENVOYS] = { 10, 40, 200 };
    return t < SHIFT_MS ? before[i] : after[i];
}

static void
apply(struct envoy *e, const struct qs_assignment *a)
{
    if (!e->assigned || !qs_same(a, &e->a)) {
        e->a = *a;
        e->tokens = a->max_tokens;      /* a new bucket starts full */
    }
    e->assigned = true;
}

/* Split among the Envoys still here, as rlqs.c does on every report. */
static void
resplit(struct envoy *e)
{
    struct qs_member *p[ENVOYS];
    size_t n = 0;
    for (int i = 0; i < ENVOYS; i++) {
        if (e[i].here) {
            p[n++] = &e[i].m;
        }
    }
    qs_split(p, n, qs_pool(QS_TOKEN_BUCKET, LIMIT, 1, 0));
}

static void
send(struct envoy *e, int64_t t, double *handed)
{
    struct qs_assignment a;
    qs_choose(&e->m, 1, t, &a);
    bool fresh = e->m.sent_ms < 0 || !qs_same(&a, &e->m.sent);
    qs_sent(&e->m, &a, t);
    if (fresh) {
        *handed += a.max_tokens;
    }
    apply(e, &a);
}

static void
admit(struct envoy *e, int i, int64_t t, double *window)
{
    double rate = qs_rate(&e->a);
    e->tokens += rate * STEP_MS / 1000.0;
    if (e->tokens > e->a.max_tokens) {
        e->tokens = e->a.max_tokens;
    }
    e->owed += demand_of(i, t) * STEP_MS / 1000.0;
    while (e->owed >= 1) {
        e->owed -= 1;
        /* No assignment yet: Envoy's default no-assignment behaviour,
         * allow all. */
        if (!e->assigned || e->tokens >= 1) {
            e->tokens -= e->assigned ? 1 : 0;
            e->allowed++;
            *window += 1;
            e->admitted_ms[t / 1000] += 1;
        } else {
            e->denied++;
        }
    }
}

static void
within(double got, double share)
{
    ck_assert_msg(got >= share * (1 - QS_CHANGE) - 1 &&
                  got <= share * (1 + QS_SLACK) + 1,
                  "%.0f admitted for a share of %.1f", got, share);
}

START_TEST(test_three_envoys_share_a_limit)
{
    static struct envoy e[ENVOYS];
    double window = 0, handed = 0;
    memset(e, 0, sizeof(e));
    for (int i = 0; i < ENVOYS; i++) {
        qs_member_init(&e[i].m, 0);
        e[i].here = true;
        e[i].last_report_ms = i * 300;  /* reports out of step */
    }
    for (int64_t t = 0; t < SIM_MS; t += STEP_MS) {
        if (t % 1000 == 0 && t > 0) {
            /* Until each has its first assignment, Envoy's no-assignment
             * behaviour (allow all) applies: the first two windows. */
            if (t >= 3000) {
                ck_assert_msg(window <= LIMIT + handed + 2 * ENVOYS,
                              "window %lld: %.0f admitted, %.0f handed",
                              (long long)(t / 1000 - 1), window, handed);
            }
            window = 0;
            handed = 0;
        }
        if (t == GONE_MS) {
            e[1].here = false;          /* the stream closed */
            resplit(e);
        }
        for (int i = 0; i < ENVOYS; i++) {
            if (!e[i].here) {
                continue;
            }
            admit(&e[i], i, t, &window);
            if (t - e[i].last_report_ms >= 1000) {
                qs_report(&e[i].m, e[i].allowed, e[i].denied,
                          t - e[i].last_report_ms, t);
                e[i].allowed = e[i].denied = 0;
                e[i].last_report_ms = t;
                resplit(e);
                send(&e[i], t, &handed);    /* the reply */
            }
        }
        for (int i = 0; i < ENVOYS && t % 100 == 0; i++) {
            if (e[i].here && qs_push_due(&e[i].m, 1, t)) {
                send(&e[i], t, &handed);    /* a push */
            }
        }
    }
    /* The shares settled: before the shift 200/40/10 get 39.5, 39.5 and
     * 10 of the pool of 89.1; two intervals after it, the reverse; once
     * the second Envoy left, 10 and 79.1. A share is sent up to 10 % under
     * its part (and 2 % over), a second's count is off by one. */
    for (int s = 10; s < SHIFT_MS / 1000; s++) {
        within(e[0].admitted_ms[s], 39.5);
        within(e[1].admitted_ms[s], 39.5);
        within(e[2].admitted_ms[s], 10);
    }
    for (int s = SHIFT_MS / 1000 + 2; s < GONE_MS / 1000; s++) {
        within(e[0].admitted_ms[s], 10);
        within(e[1].admitted_ms[s], 39.5);
        within(e[2].admitted_ms[s], 39.5);
    }
    for (int s = GONE_MS / 1000 + 2; s < SIM_MS / 1000; s++) {
        within(e[0].admitted_ms[s], 10);
        within(e[2].admitted_ms[s], 79.1);
    }
}
END_TEST

Suite *
quota_share_suite(void)
{
    Suite *s = suite_create("quota_share");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_pool_leaves_room_for_the_buckets);
    tcase_add_test(tc, test_split_water_fills_on_demand);
    tcase_add_test(tc, test_bucket_is_a_tenth_of_a_unit);
    tcase_add_test(tc, test_per_unit_is_the_share_times_the_unit);
    tcase_add_test(tc, test_changes_wait_an_interval_and_small_ones_none);
    tcase_add_test(tc, test_report_clamps_its_interval);
    tcase_add_test(tc, test_a_short_report_waits_for_the_next);
    tcase_add_test(tc, test_three_envoys_share_a_limit);
    suite_add_tcase(s, tc);
    return s;
}
