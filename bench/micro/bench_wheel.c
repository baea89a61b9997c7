/*
 * bench_wheel.c - timer wheel microbenchmark (not a test).
 *
 * The store's pattern at scale: 1,000,000 entries due over one hour on a
 * 1 ms wheel starting at a wall-clock time, each re-armed three times to a
 * new random due in the hour (a move: both earlier and later), then the
 * clock advanced one tick at a time, as the event loop does, until every
 * entry has fired. Prints ns per operation for each phase. A second run of
 * the same workload times every wheel_advance() call on its own and prints
 * percentiles: the price of the bounded work per call (the maximum is at
 * the mercy of the scheduler; p99.9 is the figure to read).
 *
 *   cc -std=c11 -D_GNU_SOURCE -O2 -I. -o bench_wheel \
 *      bench/micro/bench_wheel.c server/wheel.c lib/mem.c
 *   ./bench_wheel [entries [budget per call]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib/mem.h"
#include "server/wheel.h"

#define MS          INT64_C(1000000)
#define HOUR        (INT64_C(3600000) * MS)
#define START       INT64_C(1900000000000000000)
#define REARMS      3

struct rec {
    unsigned tag;               /* the slot it is placed in */
    int64_t due;
    uint64_t payload;           /* stands in for the rest of a record */
};

/* The wheel names entries by id (1..n here, rec id - 1); it keeps their
 * tags and reads their due through these callbacks, as the store's
 * records. */
struct bench {
    struct rec *recs;
    uint64_t sum;               /* payloads of fired entries */
};

static unsigned
rec_placed(void *ctx, uint32_t id, int64_t *due)
{
    const struct rec *r = &((struct bench *)ctx)->recs[id - 1];
    *due = r->due;
    return r->tag;
}


static void
rec_set_tag(void *ctx, uint32_t id, unsigned tag)
{
    ((struct bench *)ctx)->recs[id - 1].tag = tag;
}

static void
rec_fire(void *ctx, uint32_t id)
{
    struct bench *b = ctx;
    b->sum += b->recs[id - 1].payload;
}

static const struct wheel_ops rec_ops = { rec_placed, rec_set_tag, rec_fire };

static uint64_t rng_state = 88172645463325252u;

static uint64_t
rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double
clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

static void
schedule_all(struct wheel *w, struct rec *recs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        recs[i].due = START + 1 + (int64_t)(rng_next() % HOUR);
        (void)wheel_schedule(w, (uint32_t)i + 1, recs[i].tag, recs[i].due);
    }
}

/* The same workload on a fresh wheel, timing each advance call. */
static void
report_call_latency(struct rec *recs, size_t n, size_t budget)
{
    size_t cap = (size_t)(HOUR / MS) + 1000;
    double *lat = mem_malloc(cap * sizeof(*lat));
    struct bench b = { recs, 0 };
    struct wheel *w = wheel_create(START, MS, &rec_ops, &b);
    size_t calls = 0;

    if (lat == NULL || w == NULL) {
        fprintf(stderr, "bench_wheel: out of memory\n");
        mem_free(lat);
        wheel_destroy(&w);
        return;
    }
    for (int round = 0; round <= REARMS; round++) {
        schedule_all(w, recs, n);
    }
    for (int64_t now = START; wheel_count(w) > 0 && calls < cap; now += MS) {
        double c0 = clock_ns();
        (void)wheel_advance(w, now, budget);
        lat[calls++] = clock_ns() - c0;
    }
    qsort(lat, calls, sizeof(*lat), cmp_double);
    printf("advance call latency over %zu calls: p50 %.2f us, p99 %.2f us, "
           "p99.9 %.2f us, p99.99 %.2f us, max %.2f us\n", calls,
           lat[calls / 2] / 1e3, lat[calls * 99 / 100] / 1e3,
           lat[calls * 999 / 1000] / 1e3, lat[calls * 9999 / 10000] / 1e3,
           lat[calls - 1] / 1e3);
    mem_free(lat);
    wheel_destroy(&w);
}

static void
report(const char *what, double ns, size_t ops)
{
    printf("%-34s %10zu ops %9.1f ms %8.1f ns/op\n", what, ops, ns / 1e6,
           ns / (double)ops);
}

int
main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1000000;
    size_t budget = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 1000;
    struct rec *recs = mem_calloc(n, sizeof(*recs));
    struct bench b = { recs, 0 };
    struct wheel *w = wheel_create(START, MS, &rec_ops, &b);

    if (recs == NULL || w == NULL) {
        fprintf(stderr, "bench_wheel: out of memory\n");
        return EXIT_FAILURE;
    }
    for (size_t i = 0; i < n; i++) {
        recs[i].tag = WHEEL_TAG_NONE;
        recs[i].payload = i;
    }

    double t0 = clock_ns();
    schedule_all(w, recs, n);
    double t1 = clock_ns();
    for (int round = 0; round < REARMS; round++) {
        schedule_all(w, recs, n);
    }
    double t2 = clock_ns();
    size_t calls = 0;
    size_t fired = 0;
    for (int64_t now = START; wheel_count(w) > 0; now += MS) {
        fired += wheel_advance(w, now, budget);
        calls++;
    }
    double t3 = clock_ns();

    printf("wheel: %zu entries over 1 h, 1 ms tick, %d re-arms each, "
           "budget %zu per call\n", n, REARMS, budget);
    report("schedule (insert)", t1 - t0, n);
    report("re-arm (move)", t2 - t1, n * REARMS);
    report("advance, per entry fired", t3 - t2, fired);
    report("advance, per call (1 per tick)", t3 - t2, calls);
    report("total, per schedule/re-arm/fire", t3 - t0, n * (REARMS + 2));
    printf("checksum %llu (fired %zu of %zu)\n", (unsigned long long)b.sum,
           fired, n);
    wheel_destroy(&w);
    for (size_t i = 0; i < n; i++) {
        recs[i].tag = WHEEL_TAG_NONE;
    }
    report_call_latency(recs, n, budget);

    mem_free(recs);
    return fired == n ? EXIT_SUCCESS : EXIT_FAILURE;
}
