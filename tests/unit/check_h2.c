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


/* ------------------------------------------------------------------------
 * Streaming calls
 * --------------------------------------------------------------------- */

#define STREAM_PATH "/s.Stream/Both"

static bool
is_streaming(const char *path)
{
    return strcmp(path, STREAM_PATH) == 0;
}

/* A request body sent in parts: each part's DATA frame does not end the
 * stream unless asked. */
struct part {
    struct body b;
    bool end;
};

static ssize_t
read_part(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
          uint32_t *flags, nghttp2_data_source *src, void *user)
{
    struct part *p = src->ptr;
    ssize_t n = read_body(s, id, buf, len, flags, src, user);
    if ((*flags & NGHTTP2_DATA_FLAG_EOF) && !p->end) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return n;
}

static void
send_part(struct client *c, int32_t id, struct part *p, bool end)
{
    nghttp2_data_provider dp = { .source.ptr = p, .read_callback = read_part };
    p->b.off = 0;
    p->end = end;
    ck_assert_int_eq(nghttp2_submit_data(c->s, end ? NGHTTP2_FLAG_END_STREAM
                                                   : NGHTTP2_FLAG_NONE,
                                         id, &dp), 0);
}

/* Headers of a streaming call, its side left open. */
static int32_t
open_stream(struct client *c)
{
    nghttp2_nv nva[] = {
        NV(":method", "POST"), NV(":scheme", "http"),
        NV(":path", STREAM_PATH), NV(":authority", "a"),
        NV("content-type", "application/grpc"),
    };
    int32_t id = nghttp2_submit_headers(c->s, NGHTTP2_FLAG_NONE, -1, NULL,
                                        nva, 5, NULL);
    ck_assert_int_gt(id, 0);
    seen_of(c, id)->used = true;
    return id;
}

/* Append message i ("m<i>" padded to len bytes) to b, framed. */
static void
add_message(struct body *b, int i, size_t len)
{
    ck_assert_uint_le(b->len + 5 + len, sizeof(b->p));
    unsigned char *p = b->p + b->len;
    p[0] = 0;
    p[1] = (unsigned char)(len >> 24);
    p[2] = (unsigned char)(len >> 16);
    p[3] = (unsigned char)(len >> 8);
    p[4] = (unsigned char)len;
    memset(p + 5, 'a' + i % 26, len);
    b->len += 5 + len;
}

static void
expect_event(struct h2_conn *h, enum h2_event_kind kind, int32_t id)
{
    struct h2_event ev;
    ck_assert(h2_next_event(h, &ev));
    ck_assert_int_eq(ev.kind, kind);
    ck_assert_int_eq(ev.stream, id);
}

static void
expect_message(struct h2_conn *h, int32_t id, int i, size_t len)
{
    struct h2_event ev;
    ck_assert(h2_next_event(h, &ev));
    ck_assert_int_eq(ev.kind, H2_MESSAGE);
    ck_assert_int_eq(ev.stream, id);
    ck_assert_uint_eq(ev.len, len);
    for (size_t k = 0; k < len; k++) {
        ck_assert_int_eq(ev.message[k], 'a' + i % 26);
    }
}

/* A session with one streaming call open, its OPEN taken. */
static struct h2_conn *
session_with_stream(struct client *c, int32_t *id)
{
    client_init(c);
    budget.streaming = is_streaming;
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    *id = open_stream(c);
    ck_assert_int_eq(pump(c, h, 0), 0);
    expect_event(h, H2_OPEN, *id);
    return h;
}

/* Three messages in one DATA frame come out as three; a fourth split over
 * three frames (its prefix cut too) comes out once its last byte is in;
 * the client's END_STREAM is HALF_CLOSED; the server's messages and
 * trailers reach the client, and an ended call tells nothing more. */
START_TEST(test_a_streaming_call_is_messages_both_ways)
{
    struct client c;
    struct part p;
    struct h2_event ev;
    client_init(&c);
    budget.streaming = is_streaming;
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    int32_t id = open_stream(&c);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert(h2_next_event(h, &ev));
    ck_assert_int_eq(ev.kind, H2_OPEN);
    ck_assert_str_eq(ev.path, STREAM_PATH);
    ck_assert_ptr_null(ev.user);
    h2_stream_set_user(h, id, &p);
    ck_assert_uint_eq(h2_streaming(h), 1);
    ck_assert(!h2_next_event(h, &ev));

    memset(&p, 0, sizeof(p));
    for (int i = 0; i < 3; i++) {
        add_message(&p.b, i, 10 + (size_t)i);
    }
    add_message(&p.b, 3, 3000);
    size_t whole = p.b.len;
    p.b.len -= 3000 + 2;                    /* 3 bytes of the 4th's prefix */
    send_part(&c, id, &p, false);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    for (int i = 0; i < 3; i++) {
        expect_message(h, id, i, 10 + (size_t)i);
    }
    ck_assert(!h2_next_event(h, &ev));
    struct body rest = p.b;                 /* the 4th's other bytes */
    memmove(p.b.p, rest.p + p.b.len, whole - p.b.len);
    size_t left = whole - p.b.len;
    p.b.len = 1000;
    send_part(&c, id, &p, false);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert(!h2_next_event(h, &ev));      /* not whole yet */
    memmove(p.b.p, p.b.p + 1000, left - 1000);
    p.b.len = left - 1000;
    send_part(&c, id, &p, true);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    expect_message(h, id, 3, 3000);
    ck_assert(h2_next_event(h, &ev));
    ck_assert_int_eq(ev.kind, H2_HALF_CLOSED);
    ck_assert_ptr_eq(ev.user, &p);
    ck_assert(!h2_next_event(h, &ev));

    ck_assert_int_eq(h2_stream_send(h, id, (const unsigned char *)"one", 3), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    struct seen *x = seen_of(&c, id);
    ck_assert_str_eq(x->status, "200");
    ck_assert_mem_eq(x->data, "\0\0\0\0\3one", 8);
    ck_assert(!x->closed);
    ck_assert_int_eq(h2_stream_send(h, id, (const unsigned char *)"", 0), 0);
    ck_assert_int_eq(h2_stream_end(h, id, GRPC_NOT_FOUND, "done"), 0);
    ck_assert_uint_eq(h2_streaming(h), 0);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    ck_assert_uint_eq(x->datalen, 13);      /* and the empty message */
    ck_assert_str_eq(x->grpc_status, "5");
    ck_assert_str_eq(x->grpc_message, "done");
    ck_assert(x->closed);
    ck_assert(!h2_next_event(h, &ev));      /* no GONE: the caller ended it */
    ck_assert_uint_eq(h2_usage(h).streams, 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* 10 MB in 1000-byte messages on one stream: flow control keeps the
 * window open (every DATA frame acknowledged), every message comes out,
 * and what the stream holds stays small. */
START_TEST(test_ten_megabytes_on_one_stream_never_stall)
{
    struct client c;
    struct part p;
    struct h2_event ev;
    size_t messages = 0;
    int32_t id;
    struct h2_conn *h = session_with_stream(&c, &id);
    for (int round = 0; round < 1250; round++) {
        memset(&p, 0, sizeof(p));
        for (int i = 0; i < 8; i++) {
            add_message(&p.b, i, 1000);
        }
        send_part(&c, id, &p, false);
        ck_assert_int_eq(pump(&c, h, 0), 0);
        ck_assert_uint_eq(p.b.off, p.b.len);        /* all sent */
        while (h2_next_event(h, &ev)) {
            ck_assert_int_eq(ev.kind, H2_MESSAGE);
            ck_assert_uint_eq(ev.len, 1000);
            messages++;
        }
        ck_assert_uint_le(h2_request_memory(h), 16384);
    }
    ck_assert_uint_eq(messages, 10000);
    ck_assert_int_eq(h2_stream_end(h, id, GRPC_OK, NULL), 0);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* A client that keeps its side open and sends nothing is reset at
 * stream_idle_ms, and the caller hears GONE; one that half-closed is
 * not, and neither is bounded by the unary timeout while open. */
START_TEST(test_a_silent_streaming_call_is_reset_at_the_idle_bound)
{
    struct client c;
    struct part p;
    struct h2_event ev;
    int marker;
    client_init(&c);
    budget.streaming = is_streaming;
    budget.stream_idle_ms = 500;
    struct h2_conn *h = h2_new(MAX_MESSAGE, 100, &budget);
    int32_t silent = open_stream(&c), closed = open_stream(&c);
    ck_assert_int_eq(pump(&c, h, 1000), 0);
    memset(&p, 0, sizeof(p));
    add_message(&p.b, 0, 4);
    send_part(&c, closed, &p, true);
    ck_assert_int_eq(pump(&c, h, 1000), 0);
    expect_event(h, H2_OPEN, silent);
    expect_event(h, H2_OPEN, closed);
    expect_message(h, closed, 0, 4);
    expect_event(h, H2_HALF_CLOSED, closed);
    h2_stream_set_user(h, silent, &marker);
    ck_assert_uint_eq(h2_expire(h, 1500, 100), 0);  /* the unary bound */
    ck_assert_uint_eq(h2_expire(h, 1501, 100), 1);
    ck_assert_uint_eq(budget.idle_streams, 1);
    ck_assert_uint_eq(budget.expired_streams, 0);
    ck_assert(h2_next_event(h, &ev));
    ck_assert_int_eq(ev.kind, H2_GONE);
    ck_assert_int_eq(ev.stream, silent);
    ck_assert_ptr_eq(ev.user, &marker);
    ck_assert(!h2_next_event(h, &ev));
    ck_assert_int_eq(pump(&c, h, 1501), 0);
    ck_assert_uint_eq(seen_of(&c, silent)->close_code, NGHTTP2_CANCEL);
    ck_assert_uint_eq(h2_expire(h, 99999, 100), 0);
    ck_assert_uint_eq(h2_streaming(h), 1);
    h2_free(h);
    client_free(&c);
}
END_TEST

/* A peer that takes no output: what waits is counted, and past
 * stream_output_max the call is reset (ENHANCE_YOUR_CALM) and GONE. */
START_TEST(test_unsent_output_past_its_limit_resets_the_call)
{
    struct client c;
    struct h2_event ev;
    static unsigned char msg[1000];
    const unsigned char *o;
    int32_t id;
    budget.stream_output_max = 8192;
    struct h2_conn *h = session_with_stream(&c, &id);
    size_t idle = budget.used;
    int rc = 0, sent = 0;
    for (; sent < 200 && rc == 0; sent++) {
        rc = h2_stream_send(h, id, msg, sizeof(msg));
        while (h2_output(h, &o) > 0) {
            /* the peer never reads: its window is never given back */
        }
    }
    ck_assert_int_eq(rc, 1);
    /* The first 64 KB went within the window, then 8 KB waited. */
    ck_assert_int_gt(sent, 65);
    ck_assert_int_lt(sent, 80);
    ck_assert_uint_eq(budget.output_reset_streams, 1);
    ck_assert(h2_next_event(h, &ev));
    ck_assert_int_eq(ev.kind, H2_GONE);
    ck_assert_uint_eq(h2_streaming(h), 0);
    ck_assert_int_eq(h2_stream_send(h, id, msg, 1), 1);     /* gone */
    while (h2_output(h, &o) > 0) {
    }
    ck_assert_uint_le(budget.used, idle);   /* its output freed */
    h2_free(h);
    client_free(&c);
}
END_TEST

/* A message over the largest ends the call RESOURCE_EXHAUSTED at once
 * (its prefix is enough), and the caller hears GONE. */
START_TEST(test_a_streaming_message_over_the_largest_ends_the_call)
{
    struct client c;
    struct part p;
    struct h2_event ev;
    int32_t id;
    struct h2_conn *h = session_with_stream(&c, &id);
    memset(&p, 0, sizeof(p));
    add_message(&p.b, 0, 8);
    p.b.p[3] = 0x20;                        /* declares 8 KiB + 8 */
    send_part(&c, id, &p, false);
    ck_assert_int_eq(pump(&c, h, 0), 0);
    expect_event(h, H2_GONE, id);
    ck_assert(!h2_next_event(h, &ev));
    ck_assert_str_eq(seen_of(&c, id)->grpc_status, "8");
    ck_assert_str_eq(seen_of(&c, id)->grpc_message,
                     "the message is larger than the server accepts");
    ck_assert_uint_eq(h2_request_memory(h), 0);
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

    tc = tcase_create("streaming");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_a_streaming_call_is_messages_both_ways);
    tcase_add_test(tc, test_ten_megabytes_on_one_stream_never_stall);
    tcase_add_test(tc, test_a_silent_streaming_call_is_reset_at_the_idle_bound);
    tcase_add_test(tc, test_unsent_output_past_its_limit_resets_the_call);
    tcase_add_test(tc, test_a_streaming_message_over_the_largest_ends_the_call);
    suite_add_tcase(s, tc);
    return s;
}
