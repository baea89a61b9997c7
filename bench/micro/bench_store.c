/*
 * bench_store.c - microbenchmark of the keyspace (server/store.c).
 *
 * Inserts N keys of 16 bytes with 8 bytes of state, then looks them all up
 * in a shuffled order (hits), then looks up N absent keys (misses), and
 * prints nanoseconds per operation and mem_used() bytes per key. Not a
 * test: it asserts nothing and its figures depend on the machine.
 *
 *   gcc -std=c11 -D_GNU_SOURCE -O2 -I. -o bench_store \
 *       bench/micro/bench_store.c server/store.c server/wheel.c lib/mem.c
 *   ./bench_store [nkeys]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/mem.h"
#include "server/store.h"

#define KEYLEN      16
#define STATE_SIZE  8
#define DEFAULT_N   1000000

static const unsigned char seed[16] = {
    0x3a, 0x91, 0x5c, 0x07, 0xe2, 0x48, 0xbd, 0x16,
    0x70, 0xcf, 0x29, 0x84, 0x5e, 0xa3, 0x1b, 0xf6,
};

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Key i as exactly KEYLEN bytes: a 4-byte prefix and 12 decimal digits. A
 * different prefix gives keys that are never inserted. */
static void
make_key(char *out, const char prefix[4], size_t i)
{
    memcpy(out, prefix, 4);
    for (int d = KEYLEN - 1; d >= 4; d--) {
        out[d] = (char)('0' + i % 10);
        i /= 10;
    }
}

/* xorshift64*: a fixed-seed shuffle, so runs are comparable. */
static uint64_t
rng_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * UINT64_C(2685821657736338717);
}

static void
shuffle(size_t *v, size_t n)
{
    uint64_t x = UINT64_C(88172645463325252);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rng_next(&x) % i);
        size_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static void
report(const char *what, int64_t ns, size_t ops)
{
    printf("%-24s %9zu ops  %8.1f ns/op\n", what, ops,
           (double)ns / (double)ops);
}

int
main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : DEFAULT_N;
    char *keys = malloc(n * KEYLEN);
    char *absent = malloc(n * KEYLEN);
    size_t *order = malloc(n * sizeof(*order));
    if (n == 0 || keys == NULL || absent == NULL || order == NULL) {
        fprintf(stderr, "usage: bench_store [nkeys > 0] (or out of memory)\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        make_key(keys + i * KEYLEN, "key:", i);
        make_key(absent + i * KEYLEN, "abs:", i);
        order[i] = i;
    }
    shuffle(order, n);

    int64_t clock = 1700000000 * INT64_C(1000000000);
    struct store *s = store_create(seed, clock);
    if (s == NULL) {
        fprintf(stderr, "store_create failed\n");
        return 1;
    }
    size_t base = mem_used();

    int64_t t = now_ns();
    for (size_t i = 0; i < n; i++) {
        if (store_add(s, keys + i * KEYLEN, KEYLEN, 1, STATE_SIZE) == NULL) {
            fprintf(stderr, "store_add failed at %zu\n", i);
            return 1;
        }
    }
    report("insert (store_add)", now_ns() - t, n);
    bool rehashing = store_cron(s, 0);

    size_t found = 0;
    t = now_ns();
    for (size_t i = 0; i < n; i++) {
        const char *k = keys + order[i] * KEYLEN;
        found += store_lookup(s, k, KEYLEN, clock) != NULL;
    }
    report("lookup hit (shuffled)", now_ns() - t, n);

    t = now_ns();
    for (size_t i = 0; i < n; i++) {
        found += store_lookup(s, absent + i * KEYLEN, KEYLEN, clock) != NULL;
    }
    report("lookup miss", now_ns() - t, n);

    size_t used = mem_used() - base;
    printf("keys %zu (found %zu), rehash in progress after inserts: %s\n",
           store_size(s), found, rehashing ? "yes" : "no");
    printf("mem_used %zu bytes = %.1f bytes/key "
           "(record %.1f + buckets; key %d, state %d)\n",
           used, (double)used / (double)n,
           (double)store_bytes(s) / (double)store_size(s), KEYLEN,
           STATE_SIZE);

    t = now_ns();
    store_flush(s);
    report("flush", now_ns() - t, n);
    printf("mem_used after flush - at create: %zu bytes\n", mem_used() - base);

    store_destroy(&s);
    free(order);
    free(absent);
    free(keys);
    return 0;
}
