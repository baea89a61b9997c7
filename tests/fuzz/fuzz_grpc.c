/*
 * fuzz_grpc.c - libFuzzer driver for what a gRPC client can send to
 * grpc-port. The first byte picks the way in:
 *   0: the rest is what follows the HTTP/2 client preface on a connection:
 *      it goes to an h2 session (protocol/h2.c), and every call the session
 *      completes is answered through rls_serve() and drained, as grpc.c
 *      does;
 *   1: the rest is a ShouldRateLimit request message (its answer must
 *      read back as a RateLimitResponse);
 *   2: the rest is a Health/Check request message;
 *   3: the rest drives two connections at the frame level, as grpc.c runs
 *      them, with time passing (see "the connection level" below);
 *   4: the rest is one Rate Limit Quota Service stream (rlqs.c): messages
 *      of a length byte and that many bytes, each a usage report, a byte
 *      of milliseconds (x 20) passing before it, the pushes due after it,
 *      then the stream closed; a second stream on the same buckets beside
 *      it when the first byte is odd.
 * The first byte's bit 2 turns rls-response-dynamic-metadata on (limits m
 * and q have metadata). Calls decode with protobuf-c and decide through
 * named limits (a small limits file written at start-up) on an in-process
 * keyspace, made anew for each input. Nothing may crash or read out of bounds, the counted
 * allocator must be back where it started after each input, and the h2
 * sessions' own count of their memory must hold its limits and be back at
 * zero once they are freed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mem.h"
#include "protocol/h2.h"
#include "protocol/rls.pb-c.h"
#include "server/clock.h"
#include "server/keyspace.h"
#include "server/envoy/named_limits.h"
#include "server/envoy/rl_stats.h"
#include "server/envoy/rlqs.h"
#include "server/envoy/rls.h"
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
    "    rate_limit: {unlimited: true}\n"
    "  - key: m\n"
    "    rate_limit: {unit: second, requests_per_unit: 2}\n"
    "    metadata: {team: {name: a, tags: [1, x, ~, yes]}, plan: ''}\n"
    "  - key: q\n"
    "    quota_mode: true\n"
    "    rate_limit: {unit: second, requests_per_unit: 1}\n"
    "    metadata: {team: {tier: 0x10}, empty: {}}\n";

#define MAX_MESSAGE 4096
#define MAX_STREAMS 16

/* Answer every call the session completed, as grpc.c's serve(). */
static int
answer_calls(struct h2_conn *h)
{
    struct h2_call call;
    int rc = 0;
    while (rc == 0 && h2_next_call(h, &call)) {
        struct rls_answer a = { NULL, 0, NULL, false };
        enum grpc_status st = call.refused != GRPC_OK
                              ? call.refused
                              : rls_serve(call.path, call.message, call.len, NULL, &a);
        rc = h2_answer(h, call.stream, st,
                       call.refused != GRPC_OK ? call.why : a.why,
                       a.message, a.len);
    }
    return rc;
}

/* Take everything the session has to send, as grpc.c's flush(). */
static int
drain(struct h2_conn *h)
{
    const unsigned char *out;
    long n;
    while ((n = h2_output(h, &out)) > 0) {
        ;
    }
    return n < 0 ? -1 : 0;
}

static void
serve_session(const uint8_t *data, size_t size)
{
    struct h2_budget budget = { 0 };
    struct h2_conn *h = h2_new(MAX_MESSAGE, MAX_STREAMS, &budget);
    CHECK(h != NULL);
    int rc = h2_feed(h, (const unsigned char *)preface, sizeof(preface) - 1,
                     0);
    if (rc == 0) {
        rc = h2_feed(h, data, size, 0);
    }
    if (rc == 0) {
        (void)answer_calls(h);
    }
    (void)drain(h);
    h2_free(h);
    CHECK(budget.used == 0 && budget.requests == 0);
}

/* ---- the connection level (first byte 3) ---------------------------------
 *
 * Two connections share one budget, as grpc-port's do. Three bytes set the
 * limits: grpc-max-connection-memory (512 bytes to 16 KiB), grpc-max-memory
 * (1 to 32 KiB; 255 = none) and grpc-stream-timeout (0 to 2550 ms). Then
 * operations, each an opcode byte (low 3 bits: what; bit 3: which
 * connection; bit 4: END_STREAM where it applies; bit 5: Health/Check for
 * HEADERS, bit 6: Health/Watch, a streaming call) and its operands:
 *
 *   0 n bytes[n+1]          raw bytes, as read from the socket
 *   1 type flags id len payload[len]   one frame, any type
 *   2 id                    a request's HEADERS (ShouldRateLimit or
 *                           Health/Check, gRPC), stream 2*id+1
 *   3 id size               DATA: a gRPC prefix declaring size*64 bytes,
 *                           and as many 'x's (a message of unknown
 *                           fields), on stream 2*id+1
 *   4 id inc                WINDOW_UPDATE of inc*1024 (id 0: the
 *                           connection's; else stream 2*id-1)
 *   5 ms                    time passes (ms*10), cron expires streams
 *                           (grpc-stream-timeout, and as long the
 *                           streaming calls' idle bound) and every
 *                           streaming call open pushes a 300-byte message
 *                           (at most 2 KiB may wait unsent: past it the
 *                           call is reset)
 *   6                       the connection closes
 *   7 kind a b c d e        SETTINGS (id a, value bcde), PING, RST_STREAM
 *
 * A connection opens with the preface and its SETTINGS before its first
 * operation. After each one, calls are answered and output taken, as
 * grpc.c does, and these hold:
 *   - a connection's request memory is within grpc-max-connection-memory
 *     and all of theirs within grpc-max-memory;
 *   - what else a connection holds is bounded (streams, HTTP/2 state);
 *   - the budget is the sum of the connections';
 *   - after cron, no stream but a streaming call is open past the timeout;
 *   - every streaming call opened is closed once (Watch's state freed),
 *     by its end, its GONE or its connection's close;
 *   - a connection closed gives back exactly what it held, so the budget
 *     is 0 with none. */

#define OVERHEAD_MAX (1024 * 1024)      /* all but request bodies */

/* A streaming call open, as grpc.c's struct gstream. */
#define CALLS_MAX (4 * MAX_STREAMS)
struct call {
    void *st;                           /* NULL: a free slot */
    int k;
    int32_t id;
};

struct conn_run {
    struct call calls[CALLS_MAX];
    struct h2_budget budget;
    struct h2_conn *conn[2];
    int64_t now_ms;
    int64_t timeout_ms;
    const uint8_t *p, *end;             /* the operations not read yet */
};

static void
call_close(struct call *c)
{
    rls_health_watch.close(c->st);
    c->st = NULL;
}

static void
close_conn(struct conn_run *r, int k)
{
    for (int i = 0; i < CALLS_MAX; i++) {
        if (r->calls[i].st != NULL && r->calls[i].k == k) {
            call_close(&r->calls[i]);
        }
    }
    size_t before = r->budget.used, held = h2_usage(r->conn[k]).memory;
    size_t requests = r->budget.requests;
    size_t held_requests = h2_request_memory(r->conn[k]);
    h2_free(r->conn[k]);
    r->conn[k] = NULL;
    CHECK(r->budget.used == before - held);
    CHECK(r->budget.requests == requests - held_requests);
}

/* grpc.c's make_room: the other connection goes if it holds more. */
static bool
make_room(struct h2_budget *b, size_t need, const struct h2_conn *asking)
{
    struct conn_run *r = (struct conn_run *)((char *)b -
                                             offsetof(struct conn_run, budget));
    int other = r->conn[0] == asking ? 1 : 0;
    CHECK(r->conn[1 - other] == asking);
    while (b->requests + need > b->max) {
        if (r->conn[other] == NULL ||
            h2_request_memory(r->conn[other]) <= h2_request_memory(asking)) {
            return false;
        }
        close_conn(r, other);
    }
    return true;
}

static bool
fuzz_streaming(const char *path)
{
    return strcmp(path, rls_health_watch.path) == 0;
}

/* A service's answer sent, and the end its status asks for (as grpc.c's
 * stream_result); -1 without memory. */
static int
call_result(struct h2_conn *h, struct call *c, enum grpc_status st,
            const unsigned char *out, size_t out_len, const char *why)
{
    int rc = out != NULL ? h2_stream_send(h, c->id, out, out_len) : 0;
    if (rc == 0 && st != GRPC_OK) {
        rc = h2_stream_end(h, c->id, st, why);
        call_close(c);
    }
    return rc < 0 ? -1 : 0;
}

static int
call_open(struct conn_run *r, int k, int32_t id)
{
    struct h2_conn *h = r->conn[k];
    enum grpc_status refuse = GRPC_OK;
    const char *why = NULL;
    for (int i = 0; i < CALLS_MAX; i++) {
        struct call *c = &r->calls[i];
        if (c->st == NULL) {
            c->st = rls_health_watch.open(h, id, r->now_ms, &refuse, &why);
            CHECK(c->st != NULL);
            c->k = k;
            c->id = id;
            h2_stream_set_user(h, id, c);
            return 0;
        }
    }
    return h2_stream_end(h, id, GRPC_RESOURCE_EXHAUSTED, "too many");
}

/* Every event of k's streaming calls, as grpc.c's serve_events(). */
static int
serve_streams(struct conn_run *r, int k)
{
    struct h2_conn *h = r->conn[k];
    struct h2_event ev;
    int rc = 0;
    while (rc == 0 && h2_next_event(h, &ev)) {
        struct call *c = ev.user;
        const unsigned char *out = NULL;
        size_t out_len = 0;
        const char *why = NULL;
        enum grpc_status st = GRPC_OK;
        if (ev.kind == H2_OPEN) {
            rc = call_open(r, k, ev.stream);
        } else if (c == NULL) {
            continue;
        } else if (ev.kind == H2_MESSAGE) {
            st = rls_health_watch.message(c->st, ev.message, ev.len,
                                          r->now_ms, &out, &out_len, &why);
            rc = call_result(h, c, st, out, out_len, why);
        } else if (ev.kind == H2_HALF_CLOSED) {
            if (rls_health_watch.half_closed(c->st, &st, &why)) {
                rc = h2_stream_end(h, c->id, st, why);
                call_close(c);
            }
        } else {
            CHECK(c->st != NULL && c->id == ev.stream);
            call_close(c);
        }
    }
    return rc;
}

/* What cron does for a streaming call: its push. */
static int
push_all(struct conn_run *r, int k)
{
    static const unsigned char push[300];
    for (int i = 0; i < CALLS_MAX; i++) {
        struct call *c = &r->calls[i];
        if (c->st != NULL && c->k == k &&
            h2_stream_send(r->conn[k], c->id, push, sizeof(push)) < 0) {
            return -1;
        }
    }
    return serve_streams(r, k);
}

static void
feed(struct conn_run *r, int k, const uint8_t *data, size_t len)
{
    static const unsigned char settings[] = { 0, 0, 0, 4, 0, 0, 0, 0, 0 };
    if (r->conn[k] == NULL) {
        r->conn[k] = h2_new(MAX_MESSAGE, MAX_STREAMS, &r->budget);
        CHECK(r->conn[k] != NULL);
        CHECK(h2_feed(r->conn[k], (const unsigned char *)preface,
                      sizeof(preface) - 1, r->now_ms) == 0);
        CHECK(h2_feed(r->conn[k], settings, sizeof(settings),
                      r->now_ms) == 0);
    }
    struct h2_conn *h = r->conn[k];
    int rc = h2_feed(h, data, len, r->now_ms);
    if (rc == 0) {
        rc = serve_streams(r, k);
    }
    if (rc == 0) {
        rc = answer_calls(h);
    }
    /* (make_room may have closed the other one meanwhile, never h) */
    if (drain(h) != 0 || rc != 0 || h2_done(h)) {
        close_conn(r, k);
    }
}

static void
check_limits(const struct conn_run *r)
{
    const struct h2_budget *b = &r->budget;
    size_t used = 0, requests = 0;
    for (int k = 0; k < 2; k++) {
        const struct h2_conn *h = r->conn[k];
        if (h == NULL) {
            continue;
        }
        CHECK(b->session_max == 0 || h2_request_memory(h) <= b->session_max);
        CHECK(h2_usage(h).memory >= h2_request_memory(h));
        CHECK(h2_usage(h).memory - h2_request_memory(h) <= OVERHEAD_MAX);
        CHECK(h2_usage(h).streams <= 2 * MAX_STREAMS);
        used += h2_usage(h).memory;
        requests += h2_request_memory(h);
    }
    CHECK(b->used == used && b->requests == requests);
    CHECK(b->max == 0 || b->requests <= b->max);
}

/* What cron does: reset the streams open too long, send the resets. */
static void
pass_time(struct conn_run *r, int64_t ms)
{
    r->now_ms += ms;
    for (int k = 0; k < 2; k++) {
        struct h2_conn *h = r->conn[k];
        if (h == NULL) {
            continue;
        }
        (void)h2_expire(h, r->now_ms, r->timeout_ms);
        if (push_all(r, k) != 0 || drain(h) != 0 || h2_done(h)) {
            close_conn(r, k);
            continue;
        }
        CHECK(r->timeout_ms == 0 || h2_streaming(h) > 0 ||
              r->now_ms - h2_oldest_stream_ms(h) <= r->timeout_ms);
    }
}

static bool
take(struct conn_run *r, size_t n, const uint8_t **bytes)
{
    if ((size_t)(r->end - r->p) < n) {
        return false;
    }
    *bytes = r->p;
    r->p += n;
    return true;
}

static void
put_frame_header(unsigned char *f, size_t len, uint8_t type, uint8_t flags,
                 uint32_t id)
{
    f[0] = (unsigned char)(len >> 16);
    f[1] = (unsigned char)(len >> 8);
    f[2] = (unsigned char)len;
    f[3] = type;
    f[4] = flags;
    f[5] = (unsigned char)(id >> 24 & 0x7f);
    f[6] = (unsigned char)(id >> 16);
    f[7] = (unsigned char)(id >> 8);
    f[8] = (unsigned char)id;
}

/* HPACK, literal without indexing, every name new: no table needed.
 * (Health/Check answers OK with a message: its DATA waits for window.) */
#define REQUEST_HEADERS(path) \
    "\x00\x07:method\x04POST\x00\x05:path" path \
    "\x00\x0c" "content-type\x10" "application/grpc"
static const unsigned char rls_headers[] =
    REQUEST_HEADERS("\x3c/envoy.service.ratelimit.v3.RateLimitService/"
                    "ShouldRateLimit");
static const unsigned char health_headers[] =
    REQUEST_HEADERS("\x1c/grpc.health.v1.Health/Check");
static const unsigned char watch_headers[] =
    REQUEST_HEADERS("\x1c/grpc.health.v1.Health/Watch");

static void
op_headers(struct conn_run *r, int k, uint8_t op, uint8_t id)
{
    unsigned char f[9 + sizeof(rls_headers)];
    bool health = (op >> 5) & 1, watch = (op >> 6) & 1;
    const unsigned char *block = watch ? watch_headers
                                 : health ? health_headers : rls_headers;
    size_t len = watch || health ? sizeof(health_headers) - 1
                                 : sizeof(rls_headers) - 1;
    put_frame_header(f, len, 1, (uint8_t)(4 | ((op >> 4) & 1)), 2u * id + 1);
    memcpy(f + 9, block, len);
    feed(r, k, f, 9 + len);
}

static void
op_data(struct conn_run *r, int k, bool end, uint8_t id, uint8_t size)
{
    static unsigned char f[9 + 5 + 255 * 64];
    size_t len = (size_t)size * 64;
    f[9] = 0;
    f[10] = 0;
    f[11] = 0;
    f[12] = (unsigned char)(len >> 8);
    f[13] = (unsigned char)len;
    memset(f + 14, 'x', len);
    put_frame_header(f, 5 + len, 0, end ? 1 : 0, 2u * id + 1);
    feed(r, k, f, 14 + len);
}

static void
op_frame(struct conn_run *r, int k, const uint8_t *hd)
{
    static unsigned char f[9 + 255];
    const uint8_t *payload;
    if (!take(r, hd[3], &payload)) {
        return;
    }
    put_frame_header(f, hd[3], hd[0], hd[1], hd[2]);
    memcpy(f + 9, payload, hd[3]);
    feed(r, k, f, 9 + (size_t)hd[3]);
}

static void
op_control(struct conn_run *r, int k, const uint8_t *a)
{
    unsigned char f[9 + 8];
    size_t len;
    switch (a[0] % 3) {
    case 0:                             /* SETTINGS, one entry */
        len = 6;
        put_frame_header(f, len, 4, 0, 0);
        f[9] = 0;
        f[10] = a[1] % 10;
        memcpy(f + 11, a + 2, 4);
        break;
    case 1:                             /* PING */
        len = 8;
        put_frame_header(f, len, 6, 0, 0);
        memcpy(f + 9, a + 1, 5);
        memset(f + 14, 0, 3);
        break;
    default:                            /* RST_STREAM */
        len = 4;
        put_frame_header(f, len, 3, 0, 2u * a[1] + 1);
        memcpy(f + 9, a + 2, 4);
        break;
    }
    feed(r, k, f, 9 + len);
}

static void
op_window_update(struct conn_run *r, int k, uint8_t id, uint8_t inc)
{
    unsigned char f[9 + 4];
    uint32_t n = (uint32_t)inc << 10;
    put_frame_header(f, 4, 8, 0, id == 0 ? 0 : 2u * id - 1);
    f[9] = (unsigned char)(n >> 24);
    f[10] = (unsigned char)(n >> 16);
    f[11] = (unsigned char)(n >> 8);
    f[12] = (unsigned char)n;
    feed(r, k, f, sizeof(f));
}

/* One operation; false when the input ran out. */
static bool
step(struct conn_run *r)
{
    const uint8_t *op, *a;
    if (!take(r, 1, &op)) {
        return false;
    }
    int k = (*op >> 3) & 1;
    bool end = (*op >> 4) & 1;
    switch (*op & 7) {
    case 0: {
        const uint8_t *n;
        if (!take(r, 1, &n) || !take(r, (size_t)n[0] + 1, &a)) {
            return false;
        }
        feed(r, k, a, (size_t)n[0] + 1);
        break;
    }
    case 1:
        if (!take(r, 4, &a)) {
            return false;
        }
        op_frame(r, k, a);
        break;
    case 2:
        if (!take(r, 1, &a)) {
            return false;
        }
        op_headers(r, k, *op, a[0]);
        break;
    case 3:
        if (!take(r, 2, &a)) {
            return false;
        }
        op_data(r, k, end, a[0], a[1]);
        break;
    case 4:
        if (!take(r, 2, &a)) {
            return false;
        }
        op_window_update(r, k, a[0], a[1]);
        break;
    case 5:
        if (!take(r, 1, &a)) {
            return false;
        }
        pass_time(r, (int64_t)a[0] * 10);
        break;
    case 6:
        if (r->conn[k] != NULL) {
            close_conn(r, k);
        }
        break;
    default:
        if (!take(r, 6, &a)) {
            return false;
        }
        op_control(r, k, a);
        break;
    }
    check_limits(r);
    return true;
}

static void
serve_connections(const uint8_t *data, size_t size)
{
    struct conn_run r;
    if (size < 3) {
        return;
    }
    memset(&r, 0, sizeof(r));
    r.budget.session_max = 512 * (1 + (size_t)(data[0] % 32));
    r.budget.max = data[1] == 255 ? 0 : 1024 * (1 + (size_t)(data[1] % 32));
    r.budget.make_room = make_room;
    r.timeout_ms = 10 * (int64_t)data[2];
    r.budget.streaming = fuzz_streaming;
    r.budget.stream_idle_ms = r.timeout_ms;
    r.budget.stream_output_max = 2048;
    r.now_ms = 1;
    r.p = data + 3;
    r.end = data + size;
    while (step(&r)) {
        ;
    }
    for (int k = 0; k < 2; k++) {
        if (r.conn[k] != NULL) {
            close_conn(&r, k);
        }
    }
    CHECK(r.budget.used == 0 && r.budget.requests == 0);
    for (int i = 0; i < CALLS_MAX; i++) {
        CHECK(r.calls[i].st == NULL);
    }
}

/* Mode 4: report after report on one stream (or two), pushes between. */
static void
serve_rlqs(const uint8_t *data, size_t size)
{
    enum grpc_status refuse;
    const char *why;
    void *st[2] = { NULL, NULL };
    int64_t now = 1700000000LL * 1000;
    size_t at = 1;
    if (size == 0) {
        return;
    }
    st[0] = rlqs_open(NULL, 1, 0, &refuse, &why);
    CHECK(st[0] != NULL);
    if (data[0] & 1) {
        st[1] = rlqs_open(NULL, 3, 0, &refuse, &why);
        CHECK(st[1] != NULL);
    }
    for (int k = 0; at + 2 <= size; k ^= st[1] != NULL) {
        size_t len = data[at + 1];
        now += 20 * (int64_t)data[at];
        clock_set_fake_wall(now * 1000000);
        at += 2;
        len = len < size - at ? len : size - at;
        const unsigned char *out = NULL;
        size_t out_len = 0;
        if (st[k] != NULL &&
            rlqs_message(st[k], data + at, len, 0, &out, &out_len, &why) !=
            GRPC_OK) {
            rlqs_close(st[k]);      /* the stream ends on an error */
            st[k] = NULL;
        }
        for (int j = 0; j < 2; j++) {
            out = NULL;
            if (st[j] != NULL &&
                rlqs_due(st[j], 0, &out, &out_len, &why) != GRPC_OK) {
                rlqs_close(st[j]);
                st[j] = NULL;
            }
        }
        at += len;
    }
    for (int j = 0; j < 2; j++) {
        if (st[j] != NULL) {
            rlqs_close(st[j]);
        }
    }
    clock_reset_clamp();            /* the next input starts as this did */
    clock_set_fake_wall(1700000000LL * 1000000000LL);
}

/* A ShouldRateLimit answer (rls_wire.c writes its bytes) must read back
 * as a RateLimitResponse. */
static void
check_answer(const struct rls_answer *a)
{
    Envoy__Service__Ratelimit__V3__RateLimitResponse *r =
        envoy__service__ratelimit__v3__rate_limit_response__unpack(
            NULL, a->len, a->message);
    CHECK(r != NULL);
    envoy__service__ratelimit__v3__rate_limit_response__free_unpacked(r, NULL);
}

static void
serve_message(const char *path, const uint8_t *data, size_t size)
{
    struct rls_answer a = { NULL, 0, NULL, false };
    enum grpc_status st = rls_serve(path, data, size, NULL, &a);
    CHECK((st == GRPC_OK) == (a.message != NULL));
    if (st == GRPC_OK && strstr(path, "ShouldRateLimit") != NULL) {
        check_answer(&a);
    }
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
    /* The first byte's bit 2: answers carry dynamic_metadata. */
    srv.conf.rls_response_dynamic_metadata = (data[0] & 4) != 0;
    switch (data[0] % 5) {
    case 0:
        serve_session(data + 1, size - 1);
        break;
    case 4:
        serve_rlqs(data + 1, size - 1);
        break;
    case 3:
        serve_connections(data + 1, size - 1);
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
