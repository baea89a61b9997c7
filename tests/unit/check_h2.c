/*
 * check_h2.c - protocol/h2.c, the I/O-free HTTP/2 side of gRPC, driven by
 * an nghttp2 client session in memory: the client's frames are fed to the
 * server session, the server's output back to the client, and what each
 * side received is read off the callbacks. No sockets, no clock: h2_feed
 * and h2_expire take the time as an argument.
 */
#include <check.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/h2.h"
#include "tests/unit/suites.h"

#define MAX_MESSAGE 4096
#define STREAMS_MAX 32

/* What the client saw of one of its streams. */
struct seen {
    bool used;
    char status[8];                 /* :status */
    char grpc_status[8];            /* "" when none came */
    char grpc_message[256];
    int header_blocks;              /* response headers, then trailers */
    int data_frames;
    unsigned char data[8192];
    size_t datalen;
    bool closed;
    uint32_t close_code;
};

/* An nghttp2 client session, its bytes going to one server session. */
struct client {
    nghttp2_session *s;
    struct seen st[STREAMS_MAX];
    uint32_t goaway_code;
    bool goaway;
};

/* A request body served to nghttp2: the framed message. */
struct body {
    unsigned char p[8192];
    size_t len, off;
};

static struct seen *
seen_of(struct client *c, int32_t id)
{
    ck_assert_int_gt(id, 0);
    ck_assert_int_lt(id / 2, STREAMS_MAX);
    return &c->st[id / 2];
}

static int
c_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
            size_t namelen, const uint8_t *value, size_t valuelen,
            uint8_t flags, void *user)
{
    struct seen *x = seen_of(user, f->hd.stream_id);
    (void)s;
    (void)flags;
    char *to = NULL;
    size_t cap = 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        to = x->status;
        cap = sizeof(x->status);
    } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        to = x->grpc_status;
        cap = sizeof(x->grpc_status);
    } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
        to = x->grpc_message;
        cap = sizeof(x->grpc_message);
    }
    if (to != NULL) {
        ck_assert_uint_lt(valuelen, cap);
        memcpy(to, value, valuelen);
        to[valuelen] = '\0';
    }
    return 0;
}

static int
c_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
    struct client *c = user;
    (void)s;
    if (f->hd.type == NGHTTP2_HEADERS) {
        seen_of(c, f->hd.stream_id)->header_blocks++;
    } else if (f->hd.type == NGHTTP2_DATA && f->hd.length > 0) {
        seen_of(c, f->hd.stream_id)->data_frames++;
    } else if (f->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = true;
        c->goaway_code = f->goaway.error_code;
    }
    return 0;
}

static int
c_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
          size_t len, void *user)
{
    struct seen *x = seen_of(user, id);
    (void)s;
    (void)flags;
    ck_assert_uint_le(x->datalen + len, sizeof(x->data));
    memcpy(x->data + x->datalen, data, len);
    x->datalen += len;
    return 0;
}

static int
c_on_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
    struct seen *x = seen_of(user, id);
    (void)s;
    x->closed = true;
    x->close_code = code;
    return 0;
}

static void
client_init(struct client *c)
{
    nghttp2_session_callbacks *cb;
    memset(c, 0, sizeof(*c));
    ck_assert_int_eq(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, c_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c_on_frame);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, c_on_close);
    ck_assert_int_eq(nghttp2_session_client_new(&c->s, cb, c), 0);
    nghttp2_session_callbacks_del(cb);
    ck_assert_int_eq(nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, NULL,
                                             0), 0);
}

static void
client_free(struct client *c)
{
    nghttp2_session_del(c->s);
}

static ssize_t
read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
          uint32_t *flags, nghttp2_data_source *src, void *user)
{
    struct body *b = src->ptr;
    size_t n = b->len - b->off < len ? b->len - b->off : len;
    (void)s;
    (void)id;
    (void)user;
    memcpy(buf, b->p + b->off, n);
    b->off += n;
    if (b->off == b->len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

/* A gRPC message as it goes on the wire: flag, 32-bit length, bytes. */
static void
frame_message(struct body *b, uint8_t flag, const void *msg, size_t len,
              uint32_t declared)
{
    ck_assert_uint_le(len + 5, sizeof(b->p));
    b->p[0] = flag;
    b->p[1] = (unsigned char)(declared >> 24);
    b->p[2] = (unsigned char)(declared >> 16);
    b->p[3] = (unsigned char)(declared >> 8);
    b->p[4] = (unsigned char)declared;
    memcpy(b->p + 5, msg, len);
    b->len = len + 5;
    b->off = 0;
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), \
                   NGHTTP2_NV_FLAG_NONE }

/* A call (POST, application/grpc) with body b; its stream id. */
static int32_t
submit_call(struct client *c, const char *path, const char *method,
            const char *ctype, struct body *b)
{
    nghttp2_nv nva[] = {
        NV(":method", method), NV(":scheme", "http"), NV(":path", path),
        NV(":authority", "cellgate"), NV("content-type", ctype),
        NV("te", "trailers"),
    };
    nghttp2_data_provider dp = { .source.ptr = b, .read_callback = read_body };
    int32_t id = nghttp2_submit_request(c->s, NULL, nva, 6,
                                        b != NULL ? &dp : NULL, NULL);
    ck_assert_int_gt(id, 0);
    seen_of(c, id)->used = true;
    return id;
}

static int32_t
submit_grpc(struct client *c, struct body *b, const char *msg)
{
    frame_message(b, 0, msg, strlen(msg), (uint32_t)strlen(msg));
    return submit_call(c, "/envoy.service.ratelimit.v3.RateLimitService/"
                       "ShouldRateLimit", "POST", "application/grpc", b);
}

/* Client bytes to the server only; the h2_feed results ANDed (0 or -1). */
static int
to_server(struct client *c, struct h2_conn *h, int64_t now_ms)
{
    const uint8_t *d;
    ssize_t n;
    int rc = 0;
    for (int i = 0; i < 1000 && (n = nghttp2_session_mem_send(c->s, &d)) > 0;
         i++) {
        if (rc == 0) {
            rc = h2_feed(h, d, (size_t)n, now_ms);
        }
    }
    return rc;
}

/* Server output to the client; false when there was none. */
static bool
to_client(struct client *c, struct h2_conn *h)
{
    const unsigned char *o;
    long m;
    bool moved = false;
    for (int i = 0; i < 1000 && (m = h2_output(h, &o)) > 0; i++) {
        ck_assert_int_eq(nghttp2_session_mem_recv(c->s, o, (size_t)m), m);
        moved = true;
    }
    ck_assert_int_ge(m, 0);
    return moved;
}

/* Both ways until neither side has anything to say; the feed result. */
static int
pump(struct client *c, struct h2_conn *h, int64_t now_ms)
{
    int rc = 0;
    for (int i = 0; i < 100; i++) {
        bool client_had = nghttp2_session_want_write(c->s);
        if (to_server(c, h, now_ms) < 0) {
            rc = -1;
        }
        if (!to_client(c, h) && !client_had) {
            break;
        }
    }
    return rc;
}

static struct h2_budget budget;

static void
setup(void)
{
    memset(&budget, 0, sizeof(budget));
}

static void
teardown(void)
{
    ck_assert_uint_eq(budget.used, 0);
    ck_assert_uint_eq(budget.requests, 0);
}

/* ------------------------------------------------------------------------
 * Calls and answers
 * --------------------------------------------------------------------- */

START_TEST(test_a_unary_call_in_and_its_answer_out)
{
    struct client c;
    struct body b;
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_eq(budget.used, h2_usage(h).memory);
    int32_t id = submit_grpc(&c, &b, "hello");
    ck_assert_int_eq(pump(&c, h, 1000), 0);
    /* The server's SETTINGS reached the client. */
    ck_assert_uint_eq(nghttp2_session_get_remote_settings(
                          c.s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 100);

    struct h2_call call;
    ck_assert_uint_eq(h2_pending(h), 1);
    ck_assert_uint_eq(h2_usage(h).request_bytes, 5 + 5);
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(call.stream, id);
    ck_assert_str_eq(call.path, "/envoy.service.ratelimit.v3."
                                "RateLimitService/ShouldRateLimit");
    ck_assert_int_eq(call.refused, GRPC_OK);
    ck_assert_uint_eq(call.len, 5);
    ck_assert_mem_eq(call.message, "hello", 5);
    ck_assert(!h2_next_call(h, &call));         /* one call, once */

    ck_assert_int_eq(h2_answer(h, id, GRPC_OK, NULL,
                               (const unsigned char *)"world!", 6), 0);
    ck_assert_uint_eq(h2_pending(h), 0);
    ck_assert_int_eq(pump(&c, h, 1001), 0);
    struct seen *x = seen_of(&c, id);
    ck_assert_str_eq(x->status, "200");
    ck_assert_str_eq(x->grpc_status, "0");
    ck_assert_int_eq(x->header_blocks, 2);      /* headers, trailers */
    ck_assert_uint_eq(x->datalen, 11);
    ck_assert_mem_eq(x->data, "\0\0\0\0\6world!", 11);
    ck_assert(x->closed);
    ck_assert_uint_eq(x->close_code, NGHTTP2_NO_ERROR);
    ck_assert_uint_eq(h2_usage(h).streams, 0);
    ck_assert(!h2_done(h));
    h2_free(h);
    client_free(&c);
}
END_TEST

/* An error is a trailers-only answer: one HEADERS frame with the status
 * and the reason, percent-encoded, and no DATA. */
START_TEST(test_an_error_answer_is_trailers_only)
{
    struct client c;
    struct body b;
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    int32_t id = submit_grpc(&c, &b, "x");
    ck_assert_int_eq(pump(&c, h, 0), 0);
    struct h2_call call;
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(h2_answer(h, id, GRPC_NOT_FOUND,
                               "no limit named 100% \"x\"\n", NULL, 0), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    struct seen *x = seen_of(&c, id);
    ck_assert_int_eq(x->header_blocks, 1);
    ck_assert_int_eq(x->data_frames, 0);
    ck_assert_str_eq(x->status, "200");
    ck_assert_str_eq(x->grpc_status, "5");
    ck_assert_str_eq(x->grpc_message, "no limit named 100%25 \"x\"%0A");
    ck_assert(x->closed);
    h2_free(h);
    client_free(&c);
}
END_TEST

START_TEST(test_calls_come_out_oldest_first_and_answers_in_any_order)
{
    struct client c;
    struct body b[5];
    int32_t ids[5];
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    for (int i = 0; i < 5; i++) {
        char msg[8];
        snprintf(msg, sizeof(msg), "m%d", i);
        ids[i] = submit_grpc(&c, &b[i], msg);
    }
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(h2_pending(h), 5);
    struct h2_call calls[5];
    for (int i = 0; i < 5; i++) {
        ck_assert(h2_next_call(h, &calls[i]));
        ck_assert_int_eq(calls[i].stream, ids[i]);
        ck_assert_uint_eq(calls[i].len, 2);
        ck_assert_int_eq(calls[i].message[1], '0' + i);
    }
    ck_assert(!h2_next_call(h, &calls[0]));
    for (int i = 4; i >= 0; i--) {
        unsigned char ans[2] = { 'a', (unsigned char)('0' + i) };
        ck_assert_int_eq(h2_answer(h, ids[i], GRPC_OK, NULL, ans, 2), 0);
    }
    ck_assert_int_eq(pump(&c, h, 0), 0);
    for (int i = 0; i < 5; i++) {
        struct seen *x = seen_of(&c, ids[i]);
        ck_assert_uint_eq(x->datalen, 7);
        ck_assert_int_eq(x->data[6], '0' + i);
        ck_assert_str_eq(x->grpc_status, "0");
    }
    ck_assert_uint_eq(h2_pending(h), 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* What is no gRPC unary call is refused before its message is read, with
 * the status the code gives; the caller answers it with that status. */
START_TEST(test_requests_that_are_no_unary_grpc_call_are_refused)
{
    struct client c;
    struct body b[5];
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    frame_message(&b[0], 0, "abc", 3, 3);
    int32_t get = submit_call(&c, "/x", "GET", "application/grpc", &b[0]);
    frame_message(&b[1], 0, "abc", 3, 3);
    int32_t json = submit_call(&c, "/x", "POST", "application/json", &b[1]);
    frame_message(&b[2], 1, "abc", 3, 3);
    int32_t gz = submit_call(&c, "/x", "POST", "application/grpc+proto",
                             &b[2]);
    frame_message(&b[3], 0, "abc", 3, 4);
    int32_t shortmsg = submit_call(&c, "/x", "POST", "application/grpc",
                                   &b[3]);
    char longpath[300];
    memset(longpath, 'p', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    frame_message(&b[4], 0, "abc", 3, 3);
    int32_t lp = submit_call(&c, longpath, "POST", "application/grpc", &b[4]);
    ck_assert_int_eq(pump(&c, h, 0), 0);

    struct h2_call call;
    static const char not_grpc[] = "a gRPC call is a POST with content-type "
                                   "application/grpc";
    ck_assert(h2_next_call(h, &call));
    ck_assert(call.stream == get && call.refused == GRPC_INVALID_ARGUMENT);
    ck_assert_str_eq(call.why, not_grpc);
    ck_assert_ptr_null(call.message);
    ck_assert(h2_next_call(h, &call));
    ck_assert(call.stream == json && call.refused == GRPC_INVALID_ARGUMENT);
    ck_assert_str_eq(call.why, not_grpc);
    ck_assert(h2_next_call(h, &call));
    ck_assert(call.stream == gz && call.refused == GRPC_UNIMPLEMENTED);
    ck_assert_str_eq(call.why, "compressed messages are not supported");
    ck_assert(h2_next_call(h, &call));
    ck_assert(call.stream == shortmsg &&
              call.refused == GRPC_INVALID_ARGUMENT);
    ck_assert_str_eq(call.why, "a unary call carries exactly one "
                               "length-prefixed message");
    /* A path longer than H2_PATH_MAX comes out empty (no such method). */
    ck_assert(h2_next_call(h, &call));
    ck_assert(call.stream == lp && call.refused == GRPC_OK);
    ck_assert_str_eq(call.path, "");
    ck_assert(!h2_next_call(h, &call));
    ck_assert_int_eq(h2_answer(h, get, GRPC_INVALID_ARGUMENT, not_grpc, NULL,
                               0), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_str_eq(seen_of(&c, get)->grpc_status, "3");
    h2_free(h);
    client_free(&c);
}
END_TEST

START_TEST(test_bytes_that_are_not_http2_end_the_session)
{
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    static const char http1[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq(h2_feed(h, (const unsigned char *)http1,
                             sizeof(http1) - 1, 0), -1);
    ck_assert_int_eq(h2_failure(h), H2_PROTOCOL);
    ck_assert(h2_done(h));
    h2_free(h);
}
END_TEST

/* A client that resets its stream before the call is taken: no call. */
START_TEST(test_a_call_reset_by_the_client_is_skipped)
{
    struct client c;
    struct body b[2];
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    int32_t gone = submit_grpc(&c, &b[0], "first");
    int32_t kept = submit_grpc(&c, &b[1], "second");
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(h2_pending(h), 2);
    ck_assert_int_eq(nghttp2_submit_rst_stream(c.s, NGHTTP2_FLAG_NONE, gone,
                                               NGHTTP2_CANCEL), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    struct h2_call call;
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(call.stream, kept);
    ck_assert_mem_eq(call.message, "second", 6);
    ck_assert(!h2_next_call(h, &call));
    ck_assert_uint_eq(h2_pending(h), 1);
    /* Answering a stream that is gone is no error. */
    ck_assert_int_eq(h2_answer(h, gone, GRPC_OK, NULL, NULL, 0), 0);
    ck_assert_int_eq(h2_answer(h, kept, GRPC_OK, NULL, NULL, 0), 0);
    ck_assert_uint_eq(h2_pending(h), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(seen_of(&c, kept)->datalen, 5);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* ------------------------------------------------------------------------
 * Limits
 * --------------------------------------------------------------------- */

START_TEST(test_a_message_over_the_largest_is_refused_and_not_kept)
{
    struct client c;
    struct body b[2];
    static char big[MAX_MESSAGE + 2];
    memset(big, 'b', sizeof(big) - 1);
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    int32_t over = submit_grpc(&c, &b[0], big);     /* MAX_MESSAGE + 1 */
    big[MAX_MESSAGE] = '\0';
    int32_t at = submit_grpc(&c, &b[1], big);       /* exactly the largest */
    ck_assert_int_eq(pump(&c, h, 0), 0);
    struct h2_call call;
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(call.stream, over);
    ck_assert_int_eq(call.refused, GRPC_RESOURCE_EXHAUSTED);
    ck_assert_str_eq(call.why, "the message is larger than the server "
                               "accepts");
    ck_assert_ptr_null(call.message);
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(call.stream, at);
    ck_assert_int_eq(call.refused, GRPC_OK);
    ck_assert_uint_eq(call.len, MAX_MESSAGE);
    /* Only the one accepted is held. */
    ck_assert_uint_eq(h2_usage(h).request_bytes, MAX_MESSAGE + 5);
    ck_assert_int_eq(h2_answer(h, over, GRPC_RESOURCE_EXHAUSTED,
                               "the message is larger than the server "
                               "accepts", NULL, 0), 0);
    ck_assert_int_eq(h2_answer(h, at, GRPC_OK, NULL, NULL, 0), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_str_eq(seen_of(&c, over)->grpc_status, "8");
    ck_assert_str_eq(seen_of(&c, at)->grpc_status, "0");
    ck_assert_uint_eq(h2_usage(h).request_bytes, 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* The session's MAX_CONCURRENT_STREAMS: a client that opens more before
 * it read the server's SETTINGS gets the extra streams refused. */
START_TEST(test_streams_over_the_maximum_are_refused)
{
    struct client c;
    struct body b[3];
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 2, &budget);
    int32_t ids[3];
    for (int i = 0; i < 3; i++) {
        ids[i] = submit_grpc(&c, &b[i], "m");
    }
    ck_assert_int_eq(to_server(&c, h, 0), 0);      /* before the SETTINGS */
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert(seen_of(&c, ids[2])->closed);
    ck_assert_uint_eq(seen_of(&c, ids[2])->close_code,
                      NGHTTP2_REFUSED_STREAM);
    struct h2_call call;
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(call.stream, ids[0]);
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(call.stream, ids[1]);
    ck_assert(!h2_next_call(h, &call));
    ck_assert_uint_eq(h2_usage(h).streams, 2);
    ck_assert_uint_eq(nghttp2_session_get_remote_settings(
                          c.s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(h2_answer(h, ids[i], GRPC_OK, NULL, NULL, 0), 0);
    }
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(h2_usage(h).streams, 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* session_max: the call whose body would pass it is answered
 * RESOURCE_EXHAUSTED at once; the session's other calls go on. */
START_TEST(test_a_session_over_its_request_memory_refuses_that_call)
{
    struct client c;
    struct body b[2];
    static char msg[901];
    memset(msg, 'm', 900);
    client_init(&c);
    budget.session_max = 1000;
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    int32_t first = submit_grpc(&c, &b[0], msg);
    int32_t second = submit_grpc(&c, &b[1], msg);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(budget.refused_streams, 1);
    ck_assert_uint_le(h2_request_memory(h), budget.session_max);
    struct seen *x = seen_of(&c, second);
    ck_assert_str_eq(x->grpc_status, "8");
    ck_assert_str_eq(x->grpc_message, "the connection's requests hold more "
                                      "memory than the server allows");
    struct h2_call call;
    ck_assert(h2_next_call(h, &call));
    ck_assert_int_eq(call.stream, first);
    ck_assert_uint_eq(call.len, 900);
    ck_assert(!h2_next_call(h, &call));         /* answered already */
    ck_assert_int_eq(h2_answer(h, first, GRPC_OK, NULL, NULL, 0), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_str_eq(seen_of(&c, first)->grpc_status, "0");
    ck_assert_uint_eq(h2_request_memory(h), 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* The budget's max across sessions: make_room is asked; when it can do
 * nothing the asking session ends with a GOAWAY (ENHANCE_YOUR_CALM); when
 * it ends another session, the call goes through. */
static struct h2_conn *victim;
static int room_asked;

static bool
no_room(struct h2_budget *b, size_t need, const struct h2_conn *asking)
{
    (void)b;
    (void)need;
    (void)asking;
    room_asked++;
    return false;
}

static bool
free_victim(struct h2_budget *b, size_t need, const struct h2_conn *asking)
{
    room_asked++;
    ck_assert_ptr_ne(asking, victim);
    ck_assert_ptr_nonnull(victim);
    h2_free(victim);
    victim = NULL;
    return b->requests + need <= b->max;
}

START_TEST(test_the_shared_budget_ends_a_session_or_makes_room)
{
    struct client c1, c2;
    struct body b1, b2;
    static char msg[901];
    memset(msg, 'm', 900);
    for (int round = 0; round < 2; round++) {
        room_asked = 0;
        budget.max = 1500;
        budget.make_room = round == 0 ? no_room : free_victim;
        client_init(&c1);
        client_init(&c2);
        victim = h2_new(MAX_MESSAGE, 100, &budget);
        struct h2_conn *h2 = h2_new(MAX_MESSAGE, 100, &budget);
        submit_grpc(&c1, &b1, msg);
        ck_assert_int_eq(pump(&c1, victim, 0), 0);
        ck_assert_uint_eq(h2_pending(victim), 1);   /* holds 905 */
        ck_assert_uint_eq(budget.requests, h2_request_memory(victim));
        int32_t id = submit_grpc(&c2, &b2, msg);
        int rc = pump(&c2, h2, 0);
        ck_assert_int_eq(room_asked, 1);
        if (round == 0) {
            ck_assert_int_eq(rc, -1);
            ck_assert_int_eq(h2_failure(h2), H2_OVER_BUDGET);
            ck_assert(h2_done(h2));
            ck_assert(c2.goaway);
            ck_assert_uint_eq(c2.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
            ck_assert_uint_eq(h2_pending(victim), 1);
            h2_free(victim);
        } else {
            ck_assert_int_eq(rc, 0);
            ck_assert_ptr_null(victim);
            struct h2_call call;
            ck_assert(h2_next_call(h2, &call));
            ck_assert_int_eq(call.stream, id);
            ck_assert_uint_eq(call.len, 900);
            ck_assert_uint_eq(budget.requests, h2_request_memory(h2));
        }
        ck_assert_uint_le(budget.requests, budget.max);
        h2_free(h2);
        client_free(&c1);
        client_free(&c2);
        ck_assert_uint_eq(budget.used, 0);
    }
}
END_TEST

/* Streams whose request never ends are reset at the timeout, measured
 * from when their headers came; not a millisecond before. */
START_TEST(test_stalled_streams_are_reset_at_the_timeout)
{
    struct client c;
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    nghttp2_nv nva[] = {
        NV(":method", "POST"), NV(":scheme", "http"), NV(":path", "/x"),
        NV(":authority", "a"), NV("content-type", "application/grpc"),
    };
    int32_t id = nghttp2_submit_headers(c.s, NGHTTP2_FLAG_NONE, -1, NULL,
                                        nva, 5, NULL);
    ck_assert_int_gt(id, 0);
    ck_assert_int_eq(pump(&c, h, 1000), 0);
    ck_assert_uint_eq(h2_usage(h).streams, 1);
    ck_assert_int_eq(h2_oldest_stream_ms(h), 1000);
    ck_assert_uint_eq(h2_expire(h, 999999, 0), 0);      /* 0: never */
    ck_assert_uint_eq(h2_expire(h, 1500, 500), 0);
    ck_assert_uint_eq(h2_expire(h, 1501, 500), 1);
    ck_assert_uint_eq(budget.expired_streams, 1);
    ck_assert_int_eq(h2_oldest_stream_ms(h), INT64_MAX);
    ck_assert_uint_eq(h2_expire(h, 9999, 500), 0);      /* once */
    ck_assert_int_eq(pump(&c, h, 1501), 0);
    ck_assert(seen_of(&c, id)->closed);
    ck_assert_uint_eq(seen_of(&c, id)->close_code, NGHTTP2_CANCEL);
    ck_assert_uint_eq(h2_usage(h).streams, 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* Every byte a session holds is charged to it and to the budget, and
 * given back: while a large call waits and after it is answered. */
START_TEST(test_memory_is_charged_to_the_session_and_its_budget)
{
    struct client c;
    struct body b;
    static char msg[3001];
    memset(msg, 'q', 3000);
    client_init(&c);
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    size_t idle = h2_usage(h).memory;
    ck_assert_uint_gt(idle, 0);
    int32_t id = submit_grpc(&c, &b, msg);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(budget.used, h2_usage(h).memory);
    /* The body's buffer holds exactly what the prefix declared. */
    ck_assert_uint_eq(h2_request_memory(h), 3005);
    ck_assert_uint_eq(h2_usage(h).request_bytes, 3005);
    ck_assert_uint_eq(budget.requests, 3005);
    ck_assert_uint_ge(h2_usage(h).memory, idle + 3005);
    ck_assert_int_eq(h2_answer(h, id, GRPC_OK, NULL,
                               (const unsigned char *)msg, 3000), 0);
    ck_assert_uint_eq(h2_request_memory(h), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(seen_of(&c, id)->datalen, 3005);
    ck_assert_uint_eq(budget.used, h2_usage(h).memory);
    ck_assert_uint_eq(h2_usage(h).streams, 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

Suite *
h2_suite(void)
{
    Suite *s = suite_create("h2");
    TCase *tc = tcase_create("calls");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_a_unary_call_in_and_its_answer_out);
    tcase_add_test(tc, test_an_error_answer_is_trailers_only);
    tcase_add_test(tc, test_calls_come_out_oldest_first_and_answers_in_any_order);
    tcase_add_test(tc, test_requests_that_are_no_unary_grpc_call_are_refused);
    tcase_add_test(tc, test_bytes_that_are_not_http2_end_the_session);
    tcase_add_test(tc, test_a_call_reset_by_the_client_is_skipped);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_a_message_over_the_largest_is_refused_and_not_kept);
    tcase_add_test(tc, test_streams_over_the_maximum_are_refused);
    tcase_add_test(tc, test_a_session_over_its_request_memory_refuses_that_call);
    tcase_add_test(tc, test_the_shared_budget_ends_a_session_or_makes_room);
    tcase_add_test(tc, test_stalled_streams_are_reset_at_the_timeout);
    tcase_add_test(tc, test_memory_is_charged_to_the_session_and_its_budget);
    suite_add_tcase(s, tc);
    return s;
}
