/*
 * fuzz_grpc.c - libFuzzer driver for what a gRPC client can send to
 * grpc-port. The first byte picks the way in:
 *   0: the rest is what follows the HTTP/2 client preface on a connection:
 *      it goes to an h2 session (protocol/h2.c), and every call the session
 *      completes is answered through rls_serve() and drained, as grpc.c
 *      does;
 *   1: the rest is a ShouldRateLimit request message;
 *   2: the rest is a Health/Check request message.
 * Calls decode with protobuf-c and decide through named limits (a small
 * limits file written at start-up) on an in-process keyspace, made anew
 * for each input. Nothing may crash or read out of bounds, and the
 * counted allocator must be back where it started after each input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mem.h"
#include "protocol/h2.h"
#include "server/clock.h"
#include "server/keyspace.h"
#include "server/named_limits.h"
#include "server/rl_stats.h"
#include "server/rls.h"
#include "server/server.h"

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_grpc: %s failed\n", #x); abort(); } } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static const char limits[] =
    "domain: d\n"
    "descriptors:\n"
    "  - key: a\n"
    "    rate_limit: {unit: second, requests_per_unit: 3}\n"
    "  - key: b\n"
    "    value: x*\n"
    "    share_threshold: true\n"
    "    rate_limit: {unit: minute, requests_per_unit: 2, cellgate_algorithm: gcra}\n"
    "  - key: c\n"
    "    descriptors:\n"
    "      - key: d\n"
    "        rate_limit: {unit: hour, requests_per_unit: 1, name: n,\n"
    "                     cellgate_algorithm: sliding_window}\n"
    "  - key: e\n"
    "    rate_limit: {unit: day, requests_per_unit: 5, replaces: [{name: n}]}\n"
    "  - key: u\n"
    "    rate_limit: {unlimited: true}\n";

static void
serve_session(const uint8_t *data, size_t size)
{
    struct h2_budget budget = { 0 };
    struct h2_conn *h = h2_new(4096, 16, &budget);
    const unsigned char *out;
    struct h2_call call;
    CHECK(h != NULL);
    int rc = h2_feed(h, (const unsigned char *)preface, sizeof(preface) - 1,
                     0);
    if (rc == 0) {
        rc = h2_feed(h, data, size, 0);
    }
    while (rc == 0 && h2_next_call(h, &call)) {
        struct rls_answer a = { NULL, 0, NULL };
        enum grpc_status st = call.refused != GRPC_OK
                              ? call.refused
                              : rls_serve(call.path, call.message, call.len, &a);
        rc = h2_answer(h, call.stream, st,
                       call.refused != GRPC_OK ? call.why : a.why,
                       a.message, a.len);
    }
    while (h2_output(h, &out) > 0) {
        ;
    }
    h2_free(h);
    CHECK(budget.used == 0 && budget.requests == 0);
}

static void
serve_message(const char *path, const uint8_t *data, size_t size)
{
    struct rls_answer a = { NULL, 0, NULL };
    enum grpc_status st = rls_serve(path, data, size, &a);
    CHECK((st == GRPC_OK) == (a.message != NULL));
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char path[64];
    char err[512];
    (void)argc;
    (void)argv;
    snprintf(path, sizeof(path), "/tmp/cellgate-fuzz-grpc-%d.yaml",
             (int)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(limits, f);
    fclose(f);
    CHECK(conf_init(&srv.conf) == 0);
    free(srv.conf.limits_file);
    srv.conf.limits_file = strdup(path);
    CHECK(named_limits_setup(err, sizeof(err)) == 0);
    unlink(path);
    clock_set_fake_wall(1700000000LL * 1000000000LL);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char seed[16] = { 7 };
    size_t baseline = mem_used();
    if (size == 0) {
        return 0;
    }
    CHECK(keyspace_init(seed, clock_wall_now()) == 0);
    switch (data[0] % 3) {
    case 0:
        serve_session(data + 1, size - 1);
        break;
    case 1:
        serve_message("/envoy.service.ratelimit.v3.RateLimitService/"
                      "ShouldRateLimit", data + 1, size - 1);
        break;
    default:
        serve_message("/grpc.health.v1.Health/Check", data + 1, size - 1);
        break;
    }
    keyspace_teardown();
    rl_stats_reset();
    CHECK(mem_used() == baseline);
    return 0;
}
