/*
 * h2.c - gRPC unary calls over an nghttp2 server session (see h2.h).
 *
 * nghttp2 is driven in memory: nghttp2_session_mem_recv() takes what the
 * caller read and calls back here as frames complete; each stream keeps
 * its :path and the bytes of its DATA frames; when the client ends the
 * stream the call joins a queue the caller drains. Answers are submitted
 * with a data source that serves the framed message, then the trailers;
 * nghttp2_session_mem_send() hands the frames back. A stream the client
 * resets is freed by nghttp2's close callback and simply skipped.
 *
 * Every byte a session holds is charged to it and to its budget (h2.h):
 * its own struct, its streams, their bodies and answers, and what nghttp2
 * allocates for it, through the pool below with the session as the
 * allocator's user. Request bodies are also counted apart: they are the
 * one thing a peer makes a session hold in proportion to what it sends
 * (the rest is bounded by the session's settings and nghttp2's limits),
 * so a body grows only within the budget's limits on them.
 */
#include "protocol/h2.h"

#include <nghttp2/nghttp2.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PREFIX 5                        /* compressed flag + length */

struct stream {
    int32_t id;
    bool grpc;                          /* content-type application/grpc */
    bool post;
    bool answered;                      /* by h2.c itself, at a limit: no
                                           call comes of it */
    bool reset;                         /* RST_STREAM submitted: gone
                                           once the frame is sent */
    int64_t started_ms;                 /* when its headers began */
    unsigned char *in;                  /* DATA bytes, prefix included */
    size_t inlen, incap;
    enum grpc_status refused;
    const char *why;
    unsigned char *out;                 /* the framed answer */
    size_t outlen, outoff;
    struct stream *prev, *next;         /* every stream the session has,
                                           newest first */
    /* From here on, buffers that a new stream need not clear: */
    char path[H2_PATH_MAX];
    char status[4];
    char message[160];                  /* grpc-message, percent-encoded */
    unsigned char small[256];           /* in, then out, when they fit:
                                           most calls allocate nothing */
};
#define STREAM_CLEARED offsetof(struct stream, path)

struct h2_conn {
    nghttp2_session *session;
    struct stream *streams;             /* freed by h2_free if still open:
                                           nghttp2_session_del() does not
                                           call on_stream_close */
    struct stream *oldest;              /* the last of streams */
    struct stream *receiving;           /* the header block being read:
                                           HTTP/2 never interleaves them,
                                           so its headers need no lookup */
    struct h2_budget *budget;
    size_t max_message;
    struct h2_usage held;               /* h2_usage() */
    int64_t now_ms;                     /* of the bytes being fed */
    int32_t *ready;                     /* ended streams, oldest first */
    size_t nready, capready, headready;
    size_t pending;
    enum h2_failure failure;
};

/* ---- what a session holds ------------------------------------------------ */

static void
charge(struct h2_conn *h, size_t n)
{
    h->held.memory += n;
    h->budget->used += n;
}

static void
uncharge(struct h2_conn *h, size_t n)
{
    h->held.memory -= n;
    h->budget->used -= n;
}

/* A body's buffer: counted as memory, and as a request's. */
static void
charge_request(struct h2_conn *h, size_t n)
{
    charge(h, n);
    h->held.request_memory += n;
    h->budget->requests += n;
}

static void
uncharge_request(struct h2_conn *h, size_t n)
{
    uncharge(h, n);
    h->held.request_memory -= n;
    h->budget->requests -= n;
}

/* ---- nghttp2's memory --------------------------------------------------- */

/* nghttp2 allocates and frees small objects for every stream (the stream,
 * its header blocks, frames). Calls arrive dozens at a time, so they
 * overflow glibc's per-size caches; recycling them here through free
 * lists of 64-byte size classes (each bounded) keeps that off the path.
 * One event loop: no locking. The allocator's user is the session: a
 * block is charged to it while nghttp2 holds it (a recycled block is
 * nobody's). */
#define POOL_CLASS 64
#define POOL_CLASSES 16                 /* blocks up to 1 KiB */
#define POOL_KEEP 512                   /* blocks kept per class */

struct block {
    size_t size;                        /* what the caller may use */
    union {
        struct block *next;             /* while in a free list */
        max_align_t align;
    } u;
};

static struct block *pool[POOL_CLASSES];
static size_t pooled[POOL_CLASSES];

#define BLOCK_HEAD offsetof(struct block, u)

static size_t
class_of(size_t size)
{
    return size == 0 ? 0 : (size - 1) / POOL_CLASS;
}

static void *
pool_malloc(size_t size, void *user)
{
    size_t c = class_of(size);
    struct block *b;
    if (c < POOL_CLASSES && pool[c] != NULL) {
        b = pool[c];
        pool[c] = b->u.next;
        pooled[c]--;
    } else {
        size_t cap = c < POOL_CLASSES ? (c + 1) * POOL_CLASS : size;
        if (cap > SIZE_MAX - BLOCK_HEAD ||
            (b = malloc(BLOCK_HEAD + cap)) == NULL) {
            return NULL;
        }
        b->size = cap;
    }
    charge(user, BLOCK_HEAD + b->size);
    return &b->u;
}

static void
pool_free(void *p, void *user)
{
    if (p == NULL) {
        return;
    }
    struct block *b = (struct block *)((char *)p - BLOCK_HEAD);
    uncharge(user, BLOCK_HEAD + b->size);
    size_t c = class_of(b->size);
    if (c < POOL_CLASSES && b->size == (c + 1) * POOL_CLASS &&
        pooled[c] < POOL_KEEP) {
        b->u.next = pool[c];
        pool[c] = b;
        pooled[c]++;
        return;
    }
    free(b);
}

static void *
pool_calloc(size_t n, size_t size, void *user)
{
    if (size != 0 && n > SIZE_MAX / size) {
        return NULL;
    }
    void *p = pool_malloc(n * size, user);
    if (p != NULL) {
        memset(p, 0, n * size);
    }
    return p;
}

static void *
pool_realloc(void *p, size_t size, void *user)
{
    if (p == NULL) {
        return pool_malloc(size, user);
    }
    struct block *b = (struct block *)((char *)p - BLOCK_HEAD);
    if (size <= b->size) {
        return p;
    }
    void *q = pool_malloc(size, user);
    if (q != NULL) {
        memcpy(q, p, b->size);
        pool_free(p, user);
    }
    return q;
}

/* ---- receiving --------------------------------------------------------- */

static int answer_error(struct h2_conn *h, struct stream *s,
                        enum grpc_status status, const char *why);

/* The stream whose frames are arriving is nearly always the one whose
 * headers just came: checked first, before nghttp2's map. */
static struct stream *
stream_of(struct h2_conn *h, int32_t id)
{
    if (h->receiving != NULL && h->receiving->id == id) {
        return h->receiving;
    }
    return nghttp2_session_get_stream_user_data(h->session, id);
}

/* A body's buffer: in the stream's small space, or charged. */
static void
release_in(struct h2_conn *h, struct stream *s)
{
    if (s->in != NULL && s->in != s->small) {
        free(s->in);
        uncharge_request(h, s->incap);
    }
    h->held.request_bytes -= s->inlen;
    s->in = NULL;
    s->inlen = s->incap = 0;
}

static void
release_out(struct h2_conn *h, struct stream *s)
{
    if (s->out != NULL && s->out != s->small) {
        free(s->out);
        uncharge(h, s->outlen);
    }
    s->out = NULL;
}

/* Streams come and go with every call, a few dozen at a time: spare ones
 * are kept (bounded) instead of going back to malloc, and only their head
 * is cleared when reused. */
#define SPARE_KEEP 256

static struct stream *spare;            /* linked through next */
static size_t nspare;

/* A new stream, first in the session's list (the newest). */
static struct stream *
new_stream(struct h2_conn *h, int32_t id)
{
    struct stream *s = spare;
    if (s != NULL) {
        spare = s->next;
        nspare--;
    } else if ((s = malloc(sizeof(*s))) == NULL) {
        return NULL;
    }
    memset(s, 0, STREAM_CLEARED);
    s->path[0] = '\0';
    s->id = id;
    s->started_ms = h->now_ms;
    s->next = h->streams;
    if (h->streams != NULL) {
        h->streams->prev = s;
    } else {
        h->oldest = s;
    }
    h->streams = s;
    h->held.streams++;
    charge(h, sizeof(*s));
    return s;
}

static void
free_stream(struct h2_conn *h, struct stream *s)
{
    if (h->receiving == s) {
        h->receiving = NULL;
    }
    if (s->prev != NULL) {
        s->prev->next = s->next;
    } else {
        h->streams = s->next;
    }
    if (s->next != NULL) {
        s->next->prev = s->prev;
    } else {
        h->oldest = s->prev;
    }
    release_in(h, s);
    release_out(h, s);
    h->held.streams--;
    uncharge(h, sizeof(*s));
    if (nspare < SPARE_KEEP) {
        s->next = spare;
        spare = s;
        nspare++;
    } else {
        free(s);
    }
}

static int
on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame,
                 void *user)
{
    struct h2_conn *h = user;
    if (frame->hd.type != NGHTTP2_HEADERS ||
        frame->headers.cat != NGHTTP2_HCAT_REQUEST || h->failure != H2_OK) {
        return 0;
    }
    struct stream *s = new_stream(h, frame->hd.stream_id);
    if (s == NULL) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (nghttp2_session_set_stream_user_data(session, s->id, s) != 0) {
        free_stream(h, s);
        return 0;
    }
    h->receiving = s;
    return 0;
}

static bool
name_is(const uint8_t *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

static int
on_header(nghttp2_session *session, const nghttp2_frame *frame,
          const uint8_t *name, size_t namelen, const uint8_t *value,
          size_t valuelen, uint8_t flags, void *user)
{
    struct stream *s = stream_of(user, frame->hd.stream_id);
    (void)session;
    (void)flags;
    if (s == NULL || frame->hd.type != NGHTTP2_HEADERS) {
        return 0;
    }
    if (name_is(name, namelen, ":path") && valuelen < H2_PATH_MAX) {
        memcpy(s->path, value, valuelen);
        s->path[valuelen] = '\0';
    } else if (name_is(name, namelen, ":method")) {
        s->post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
    } else if (name_is(name, namelen, "content-type")) {
        s->grpc = valuelen >= 16 &&
                  strncasecmp((const char *)value, "application/grpc", 16) == 0;
    }
    return 0;
}

static void
refuse(struct stream *s, enum grpc_status status, const char *why)
{
    if (s->refused == GRPC_OK) {
        s->refused = status;
        s->why = why;
    }
}

/* The size a body's gRPC prefix declares it has, once its first 5 bytes
 * are in (s's, then data's). */
static bool
declared_size(const struct stream *s, const uint8_t *data, size_t len,
              size_t *size)
{
    unsigned char p[PREFIX];
    if (s->inlen + len < PREFIX) {
        return false;
    }
    for (size_t i = 0; i < PREFIX; i++) {
        p[i] = i < s->inlen ? s->in[i] : data[i - s->inlen];
    }
    *size = PREFIX + ((size_t)p[1] << 24 | (size_t)p[2] << 16 |
                      (size_t)p[3] << 8 | (size_t)p[4]);
    return true;
}

/* What s's buffer grows to for len more bytes: doubling, from 512, keeps
 * the copies few; it stops at the size the prefix declares (a unary call
 * is one message), so a whole body is held in its own size and not up to
 * twice that, and at the largest message. The caller made sure the bytes
 * fit the largest message. */
static size_t
body_capacity(const struct h2_conn *h, const struct stream *s,
              const uint8_t *data, size_t len)
{
    size_t need = s->inlen + len, limit = h->max_message + PREFIX, declared;
    if (declared_size(s, data, len, &declared) && declared >= need &&
        declared < limit) {
        limit = declared;
    }
    size_t cap = s->in == s->small || s->incap < 256 ? 512 : s->incap * 2;
    while (cap < need) {
        cap *= 2;
    }
    return cap < limit ? cap : limit;
}

/* A limit answers this stream at once, and its body goes: gRPC's
 * RESOURCE_EXHAUSTED with the reason, in one HEADERS frame that ends the
 * stream on the server's side; what the client still sends on it is
 * dropped.
 *
 * A status on the one stream, and not a closed connection as Redis closes
 * a client past client-query-buffer-limit: Envoy multiplexes unrelated
 * requests' calls on one connection, and closing it would fail every one
 * of them (and make it reconnect), where this fails the call that asked
 * for too much, which Envoy's failure_mode_deny then decides, as for any
 * error. And no RST_STREAM after it, though RFC 9113 (8.1) allows one:
 * gRPC's C core (grpcio, Envoy's google_grpc) then reports the call as
 * INTERNAL "Received RST_STREAM" and loses the status. The client ends or
 * cancels the stream on reading the status; one that does not is reset at
 * grpc-stream-timeout. 1, or -1 without memory. */
static int
answer_at_limit(struct h2_conn *h, struct stream *s, const char *why)
{
    release_in(h, s);
    refuse(s, GRPC_RESOURCE_EXHAUSTED, why);
    s->answered = true;
    h->budget->refused_streams++;
    if (answer_error(h, s, GRPC_RESOURCE_EXHAUSTED, why) != 0) {
        return -1;
    }
    return 1;
}

/* All sessions together are at the budget's max and this one holds the
 * most (make_room said so): it ends, with a GOAWAY that says why, as
 * Redis's maxmemory-clients evicts the client using the most memory. */
static int
end_over_budget(struct h2_conn *h)
{
    h->failure = H2_OVER_BUDGET;
    return nghttp2_session_terminate_session(h->session,
                                             NGHTTP2_ENHANCE_YOUR_CALM) == 0
           ? 1 : -1;
}

static bool
within_budget(struct h2_conn *h, size_t more)
{
    struct h2_budget *b = h->budget;
    return b->max == 0 || b->requests + more <= b->max ||
           (b->make_room != NULL && b->make_room(b, more, h));
}

/* Room in s's buffer for len more bytes, within the limits: 0; 1 when a
 * limit refused them (the stream or the session was ended); -1 without
 * memory. */
static int
grow_body(struct h2_conn *h, struct stream *s, const uint8_t *data,
          size_t len)
{
    size_t cap = body_capacity(h, s, data, len);
    bool from_small = s->in == s->small;
    size_t more = from_small ? cap : cap - s->incap;
    if (h->budget->session_max != 0 &&
        h->held.request_memory + more > h->budget->session_max) {
        return answer_at_limit(h, s, "the connection's requests hold more "
                               "memory than the server allows");
    }
    if (!within_budget(h, more)) {
        return end_over_budget(h);
    }
    unsigned char *p = from_small ? malloc(cap) : realloc(s->in, cap);
    if (p == NULL) {
        return -1;
    }
    if (from_small) {
        memcpy(p, s->small, s->inlen);
    }
    s->in = p;
    s->incap = cap;
    charge_request(h, more);
    return 0;
}

static int
on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id,
              const uint8_t *data, size_t len, void *user)
{
    struct h2_conn *h = user;
    struct stream *s = stream_of(h, id);
    (void)session;
    (void)flags;
    if (s == NULL || s->refused != GRPC_OK || s->answered || s->reset ||
        h->failure != H2_OK) {
        return 0;                       /* nothing more to keep */
    }
    if (s->inlen + len > h->max_message + PREFIX) {
        release_in(h, s);
        refuse(s, GRPC_RESOURCE_EXHAUSTED, "the message is larger than the "
               "server accepts");
        return 0;
    }
    if (s->in == NULL && len <= sizeof(s->small)) {
        s->in = s->small;
        s->incap = sizeof(s->small);
    }
    if (s->inlen + len > s->incap) {
        int rc = grow_body(h, s, data, len);
        if (rc != 0) {
            return rc < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
        }
    }
    memcpy(s->in + s->inlen, data, len);
    s->inlen += len;
    h->held.request_bytes += len;
    return 0;
}

static int
queue_call(struct h2_conn *h, int32_t id)
{
    if (h->headready + h->nready == h->capready) {
        if (h->headready > 0) {         /* reuse the drained front */
            memmove(h->ready, h->ready + h->headready,
                    h->nready * sizeof(*h->ready));
            h->headready = 0;
        } else {
            size_t cap = h->capready ? h->capready * 2 : 16;
            int32_t *p = realloc(h->ready, cap * sizeof(*p));
            if (p == NULL) {
                return NGHTTP2_ERR_CALLBACK_FAILURE;
            }
            charge(h, (cap - h->capready) * sizeof(*p));
            h->ready = p;
            h->capready = cap;
        }
    }
    h->ready[h->headready + h->nready++] = id;
    h->pending++;
    return 0;
}

/* The request is whole: check it, then queue it. */
static int
on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame,
              void *user)
{
    struct h2_conn *h = user;
    if ((frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        return 0;
    }
    struct stream *s = stream_of(h, frame->hd.stream_id);
    (void)session;
    if (s == NULL || s->answered || s->reset) {
        return 0;                       /* answered already, or gone */
    }
    if (!s->post || !s->grpc) {
        refuse(s, GRPC_INVALID_ARGUMENT, "a gRPC call is a POST with "
               "content-type application/grpc");
    } else if (s->refused == GRPC_OK && s->inlen >= PREFIX && s->in[0] != 0) {
        refuse(s, GRPC_UNIMPLEMENTED, "compressed messages are not "
               "supported");
    } else if (s->refused == GRPC_OK &&
               (s->inlen < PREFIX ||
                s->inlen - PREFIX != ((size_t)s->in[1] << 24 |
                                      (size_t)s->in[2] << 16 |
                                      (size_t)s->in[3] << 8 | s->in[4]))) {
        refuse(s, GRPC_INVALID_ARGUMENT, "a unary call carries exactly one "
               "length-prefixed message");
    }
    return queue_call(h, s->id);
}

static int
on_stream_close(nghttp2_session *session, int32_t id, uint32_t error,
                void *user)
{
    struct h2_conn *h = user;
    struct stream *s = nghttp2_session_get_stream_user_data(session, id);
    (void)error;
    if (s != NULL) {
        nghttp2_session_set_stream_user_data(session, id, NULL);
        free_stream(h, s);
    }
    return 0;
}

/* ---- answering ----------------------------------------------------------- */

static ssize_t
read_answer(nghttp2_session *session, int32_t id, uint8_t *buf, size_t len,
            uint32_t *flags, nghttp2_data_source *source, void *user)
{
    struct stream *s = source->ptr;
    size_t n = s->outlen - s->outoff < len ? s->outlen - s->outoff : len;
    (void)user;
    memcpy(buf, s->out + s->outoff, n);
    s->outoff += n;
    if (s->outoff == s->outlen) {
        nghttp2_nv trailers[] = {
            { (uint8_t *)"grpc-status", (uint8_t *)s->status, 11,
              strlen(s->status), NGHTTP2_NV_FLAG_NONE },
        };
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (nghttp2_submit_trailer(session, id, trailers, 1) != 0) {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
    }
    return (ssize_t)n;
}

/* grpc-message: bytes 0x20-0x7e but '%' as they are, others as %XX. */
static void
percent_encode(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s != '\0' && n + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c <= 0x7e && c != '%') {
            out[n++] = (char)c;
        } else {
            n += (size_t)snprintf(out + n, cap - n, "%%%02X", c);
        }
    }
    out[n] = '\0';
}

#define NV(name, value) \
    { (uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, \
      strlen(value), NGHTTP2_NV_FLAG_NONE }

static int
answer_error(struct h2_conn *h, struct stream *s, enum grpc_status status,
             const char *why)
{
    snprintf(s->status, sizeof(s->status), "%d", (int)status);
    percent_encode(s->message, sizeof(s->message), why != NULL ? why : "");
    nghttp2_nv nva[] = { NV(":status", "200"),
                         NV("content-type", "application/grpc"),
                         NV("grpc-status", s->status),
                         NV("grpc-message", s->message) };
    return nghttp2_submit_response(h->session, s->id, nva,
                                   s->message[0] ? 4 : 3, NULL) == 0 ? 0 : -1;
}

static int
answer_message(struct h2_conn *h, struct stream *s,
               const unsigned char *message, size_t len)
{
    /* (The call's message is released by now: small is free.) */
    if (len > SIZE_MAX - PREFIX) {
        return -1;
    }
    s->out = len + PREFIX <= sizeof(s->small) ? s->small : malloc(len + PREFIX);
    if (s->out == NULL) {
        return -1;
    }
    if (s->out != s->small) {
        charge(h, len + PREFIX);
    }
    s->out[0] = 0;
    s->out[1] = (unsigned char)(len >> 24);
    s->out[2] = (unsigned char)(len >> 16);
    s->out[3] = (unsigned char)(len >> 8);
    s->out[4] = (unsigned char)len;
    if (len > 0) {
        memcpy(s->out + PREFIX, message, len);
    }
    s->outlen = len + PREFIX;
    snprintf(s->status, sizeof(s->status), "0");
    nghttp2_nv nva[] = { NV(":status", "200"),
                         NV("content-type", "application/grpc") };
    nghttp2_data_provider data = { .source.ptr = s,
                                   .read_callback = read_answer };
    return nghttp2_submit_response(h->session, s->id, nva, 2, &data) == 0
           ? 0 : -1;
}

int
h2_answer(struct h2_conn *h, int32_t id, enum grpc_status status,
          const char *why, const unsigned char *message, size_t len)
{
    struct stream *s = stream_of(h, id);
    if (h->pending > 0) {
        h->pending--;
    }
    if (s == NULL || s->reset) {
        return 0;                       /* reset meanwhile (an answer that
                                           waited on other nodes) */
    }
    release_in(h, s);
    return status == GRPC_OK ? answer_message(h, s, message, len)
                             : answer_error(h, s, status, why);
}

/* ---- the session -------------------------------------------------------- */

static nghttp2_session_callbacks *
new_callbacks(void)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        return NULL;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    return cb;
}

struct h2_conn *
h2_new(size_t max_message, uint32_t max_streams, struct h2_budget *budget)
{
    struct h2_conn *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return NULL;
    }
    h->budget = budget;
    h->max_message = max_message;
    charge(h, sizeof(*h));
    nghttp2_session_callbacks *cb = new_callbacks();
    nghttp2_option *opt = NULL;
    int rc = cb != NULL ? nghttp2_option_new(&opt) : -1;
    if (rc == 0) {
        /* The call's own checks (h2_call: method, content-type, path) are
         * all cellgate needs of HTTP's rules; nghttp2's generic ones cost
         * more than the decision. */
        nghttp2_option_set_no_http_messaging(opt, 1);
        /* Unary calls answered at once: no priority tree to keep (RFC
         * 9218), and no closed streams kept for one. */
        nghttp2_option_set_no_closed_streams(opt, 1);
        nghttp2_mem mem = { h, pool_malloc, pool_free, pool_calloc,
                            pool_realloc };
        rc = nghttp2_session_server_new3(&h->session, cb, h, opt, &mem);
        nghttp2_option_del(opt);
    }
    if (cb != NULL) {
        nghttp2_session_callbacks_del(cb);
    }
    nghttp2_settings_entry settings[] = {
        { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams },
        { NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1 },
    };
    if (rc != 0 ||
        nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, settings, 2) != 0) {
        h2_free(h);
        return NULL;
    }
    return h;
}

void
h2_free(struct h2_conn *h)
{
    if (h == NULL) {
        return;
    }
    if (h->session != NULL) {
        nghttp2_session_del(h->session);
    }
    while (h->streams != NULL) {
        free_stream(h, h->streams);
    }
    free(h->ready);
    uncharge(h, h->capready * sizeof(*h->ready));
    uncharge(h, sizeof(*h));            /* h->held.memory is 0 now */
    free(h);
}

int
h2_feed(struct h2_conn *h, const unsigned char *data, size_t len,
        int64_t now_ms)
{
    h->now_ms = now_ms;
    ssize_t n = nghttp2_session_mem_recv(h->session, data, len);
    if (h->failure == H2_OK && (n < 0 || (size_t)n != len)) {
        /* The callbacks fail only without memory. */
        h->failure = n == NGHTTP2_ERR_NOMEM ||
                     n == NGHTTP2_ERR_CALLBACK_FAILURE ? H2_NO_MEMORY
                                                       : H2_PROTOCOL;
    }
    return h->failure == H2_OK ? 0 : -1;
}

enum h2_failure
h2_failure(const struct h2_conn *h)
{
    return h->failure;
}

bool
h2_next_call(struct h2_conn *h, struct h2_call *call)
{
    while (h->nready > 0) {
        int32_t id = h->ready[h->headready++];
        h->nready--;
        struct stream *s = stream_of(h, id);
        if (s == NULL || s->answered || s->reset) {
            h->pending--;               /* reset before it was read */
            continue;
        }
        memset(call, 0, sizeof(*call));
        call->stream = id;
        memcpy(call->path, s->path, sizeof(call->path));
        call->refused = s->refused;
        call->why = s->why;
        if (s->refused == GRPC_OK) {
            call->message = s->in + PREFIX;
            call->len = s->inlen - PREFIX;
        }
        return true;
    }
    h->headready = 0;
    return false;
}

long
h2_output(struct h2_conn *h, const unsigned char **data)
{
    ssize_t n = nghttp2_session_mem_send(h->session, data);
    return n < 0 ? -1 : (long)n;
}

bool
h2_done(const struct h2_conn *h)
{
    return h->failure != H2_OK ||
           (!nghttp2_session_want_read(h->session) &&
            !nghttp2_session_want_write(h->session));
}

size_t
h2_pending(const struct h2_conn *h)
{
    return h->pending;
}

/* ---- streams that stall -------------------------------------------------- */

static bool
expired(const struct stream *s, int64_t now_ms, int64_t timeout_ms)
{
    return now_ms - s->started_ms > timeout_ms;
}

/* Oldest first, from the list's end, up to the first one still in time:
 * the newer ones are younger still. A stream reset already (its frame
 * not sent yet) is passed over. */
size_t
h2_expire(struct h2_conn *h, int64_t now_ms, int64_t timeout_ms)
{
    size_t n = 0;
    if (timeout_ms <= 0 || h->failure != H2_OK) {
        return 0;
    }
    for (struct stream *s = h->oldest;
         s != NULL && expired(s, now_ms, timeout_ms); s = s->prev) {
        if (s->reset) {
            continue;
        }
        if (nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, s->id,
                                      NGHTTP2_CANCEL) != 0) {
            break;                      /* no memory: the next try */
        }
        s->reset = true;                /* (its call, if queued, is gone) */
        release_in(h, s);
        n++;
    }
    h->budget->expired_streams += n;
    return n;
}

int64_t
h2_oldest_stream_ms(const struct h2_conn *h)
{
    for (const struct stream *s = h->oldest; s != NULL; s = s->prev) {
        if (!s->reset) {
            return s->started_ms;
        }
    }
    return INT64_MAX;
}

struct h2_usage
h2_usage(const struct h2_conn *h)
{
    return h->held;
}

size_t
h2_request_memory(const struct h2_conn *h)
{
    return h->held.request_memory;
}
