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
 * A streaming call keeps the same stream: its messages are cut out of the
 * body's buffer as their bytes complete and queued as events, the caller
 * takes them (the buffer is compacted on the next DATA frame), and its
 * answers are appended to an output buffer that a data source serves as
 * the peer's window allows, deferring when it is empty, until the caller
 * ends it with trailers. nghttp2 acknowledges every DATA frame as it is
 * read (its automatic WINDOW_UPDATEs), so an endless request never stalls
 * on flow control; what it makes the server hold is the messages of one
 * read, bounded as any body is.
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
    size_t outlen, outoff, outcap;
    /* A streaming call's (never in small: in and out live together): */
    bool streaming;                     /* its :path is one */
    bool told_open;                     /* OPEN queued */
    bool ended;                         /* by the caller or at a limit: no
                                           event but GONE, once */
    bool half_closed;                   /* the client sent END_STREAM */
    bool headers_sent;
    bool ending;                        /* trailers once out is sent */
    size_t consumed;                    /* of in: messages handed out */
    size_t scanned;                     /* of in: messages queued */
    int64_t last_message_ms;            /* the client's last, or OPEN */
    void *user;
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

/* A queue drained from its front: the calls whose requests ended (their
 * stream ids) and the streaming calls' events. */
struct queue {
    unsigned char *items;
    size_t n, cap, head;                /* counted in items */
};

struct queued_event {
    enum h2_event_kind kind;
    int32_t id;
    void *user;                         /* GONE's: the stream is freed */
};

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
    struct queue ready;                 /* ended streams, oldest first */
    size_t pending;
    struct queue events;                /* streaming calls', oldest first */
    size_t streaming_streams;           /* streams with a streaming path */
    size_t streaming_open;              /* h2_streaming() */
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
        uncharge(h, s->outcap);
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
    if (s->streaming) {
        h->streaming_streams--;
    }
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
    if (s->streaming) {
        return cap;                     /* several messages: the budget's
                                           limits bound it */
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
static int end_at_limit(struct h2_conn *h, struct stream *s,
                        enum grpc_status status, const char *why);

static int
answer_at_limit(struct h2_conn *h, struct stream *s, const char *why)
{
    if (s->streaming) {
        h->budget->refused_streams++;
        return end_at_limit(h, s, GRPC_RESOURCE_EXHAUSTED, why) == 0 ? 1 : -1;
    }
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

static int stream_data(struct h2_conn *h, struct stream *s,
                       const uint8_t *data, size_t len);

/* DATA bytes onto s's body, in its small space while they fit: 0; 1 when
 * a limit refused them (grow_body); -1 without memory. */
static int
append_body(struct h2_conn *h, struct stream *s, const uint8_t *data,
            size_t len)
{
    if (s->in == NULL && len <= sizeof(s->small)) {
        s->in = s->small;
        s->incap = sizeof(s->small);
    }
    if (s->inlen + len > s->incap) {
        int rc = grow_body(h, s, data, len);
        if (rc != 0) {
            return rc;
        }
    }
    memcpy(s->in + s->inlen, data, len);
    s->inlen += len;
    h->held.request_bytes += len;
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
    if (s != NULL && s->streaming) {
        return stream_data(h, s, data, len) < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE
                                                : 0;
    }
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
    int rc = append_body(h, s, data, len);
    return rc < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

/* Room at q's back for one item of size bytes; NULL without memory. */
static void *
queue_back(struct h2_conn *h, struct queue *q, size_t size)
{
    if (q->head + q->n == q->cap) {
        if (q->head > 0) {              /* reuse the drained front */
            memmove(q->items, q->items + q->head * size, q->n * size);
            q->head = 0;
        } else {
            size_t cap = q->cap ? q->cap * 2 : 16;
            unsigned char *p = realloc(q->items, cap * size);
            if (p == NULL) {
                return NULL;
            }
            charge(h, (cap - q->cap) * size);
            q->items = p;
            q->cap = cap;
        }
    }
    return q->items + (q->head + q->n++) * size;
}

/* The item at q's front, taken off (valid until the next queue_back);
 * NULL when none waits. */
static const void *
queue_front(struct queue *q, size_t size)
{
    if (q->n == 0) {
        q->head = 0;
        return NULL;
    }
    q->n--;
    return q->items + q->head++ * size;
}

static void
queue_free(struct h2_conn *h, struct queue *q, size_t size)
{
    free(q->items);
    uncharge(h, q->cap * size);
}

static int
queue_call(struct h2_conn *h, int32_t id)
{
    int32_t *slot = queue_back(h, &h->ready, sizeof(id));
    if (slot == NULL) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    *slot = id;
    h->pending++;
    return 0;
}

static int open_if_streaming(struct h2_conn *h, struct stream *s);
static int half_close(struct h2_conn *h, struct stream *s);

/* The request is whole: check it, then queue it. A streaming call's
 * headers open it, its END_STREAM half-closes it. */
static int
on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame,
              void *user)
{
    struct h2_conn *h = user;
    if (frame->hd.type == NGHTTP2_HEADERS &&
        frame->headers.cat == NGHTTP2_HCAT_REQUEST &&
        open_if_streaming(h, stream_of(h, frame->hd.stream_id)) != 0) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if ((frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        return 0;
    }
    struct stream *s = stream_of(h, frame->hd.stream_id);
    (void)session;
    if (s != NULL && s->streaming) {
        return half_close(h, s) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
    }
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

static int leave(struct h2_conn *h, struct stream *s, bool tell);

static int
on_stream_close(nghttp2_session *session, int32_t id, uint32_t error,
                void *user)
{
    struct h2_conn *h = user;
    struct stream *s = nghttp2_session_get_stream_user_data(session, id);
    (void)error;
    int rc = 0;
    if (s != NULL) {
        if (s->streaming) {
            rc = leave(h, s, true);     /* GONE, unless told already */
        }
        nghttp2_session_set_stream_user_data(session, id, NULL);
        free_stream(h, s);
    }
    return rc == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE;
}

/* ---- answering ----------------------------------------------------------- */

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

/* The data source of every answer: the framed messages in out, then,
 * once the stream is ending, its trailers (grpc-status, and grpc-message
 * when there is one). A streaming call's output that is all sent waits
 * (deferred) for h2_stream_send or h2_stream_end to resume it. */
static ssize_t
read_out(nghttp2_session *session, int32_t id, uint8_t *buf, size_t len,
         uint32_t *flags, nghttp2_data_source *source, void *user)
{
    struct stream *s = source->ptr;
    size_t n = s->outlen - s->outoff < len ? s->outlen - s->outoff : len;
    (void)user;
    if (n > 0) {
        memcpy(buf, s->out + s->outoff, n);
        s->outoff += n;
    }
    if (s->outoff < s->outlen || !s->ending) {
        return n > 0 ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
    }
    nghttp2_nv trailers[] = { NV("grpc-status", s->status),
                              NV("grpc-message", s->message) };
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    if (nghttp2_submit_trailer(session, id, trailers,
                               s->message[0] ? 2 : 1) != 0) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

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
        s->outcap = len + PREFIX;
        charge(h, s->outcap);
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
    s->message[0] = '\0';
    s->ending = true;
    nghttp2_nv nva[] = { NV(":status", "200"),
                         NV("content-type", "application/grpc") };
    nghttp2_data_provider data = { .source.ptr = s,
                                   .read_callback = read_out };
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

/* ---- streaming calls ---------------------------------------------------- */

static int
queue_event(struct h2_conn *h, enum h2_event_kind kind, int32_t id,
            void *user)
{
    struct queued_event *e = queue_back(h, &h->events, sizeof(*e));
    if (e == NULL) {
        return -1;
    }
    *e = (struct queued_event){ kind, id, user };
    return 0;
}

/* The stream leaves the caller's hands: no event comes of it any more but
 * GONE (when tell: h2.c or the peer ended it), once. */
static int
leave(struct h2_conn *h, struct stream *s, bool tell)
{
    bool was_open = s->told_open && !s->ended;
    s->ended = true;
    if (!was_open) {
        return 0;
    }
    h->streaming_open--;
    return tell ? queue_event(h, H2_GONE, s->id, s->user) : 0;
}

static int
open_if_streaming(struct h2_conn *h, struct stream *s)
{
    if (s == NULL || s->streaming || h->budget->streaming == NULL ||
        s->path[0] == '\0' || !h->budget->streaming(s->path)) {
        return 0;
    }
    s->streaming = true;
    h->streaming_streams++;
    if (!s->post || !s->grpc) {
        s->ended = true;
        s->headers_sent = true;
        return answer_error(h, s, GRPC_INVALID_ARGUMENT, "a gRPC call is a "
                            "POST with content-type application/grpc");
    }
    s->told_open = true;
    s->last_message_ms = h->now_ms;
    h->streaming_open++;
    return queue_event(h, H2_OPEN, s->id, NULL);
}

static int
half_close(struct h2_conn *h, struct stream *s)
{
    if (s->ended || s->reset || s->half_closed) {
        return 0;
    }
    s->half_closed = true;
    return queue_event(h, H2_HALF_CLOSED, s->id, NULL);
}

/* The messages handed out go from the body's buffer (their bytes were
 * valid until this feed); an emptied buffer is released. */
static void
compact_in(struct h2_conn *h, struct stream *s)
{
    if (s->consumed == 0) {
        return;
    }
    if (s->consumed == s->inlen) {
        release_in(h, s);
    } else {
        memmove(s->in, s->in + s->consumed, s->inlen - s->consumed);
        s->inlen -= s->consumed;
        h->held.request_bytes -= s->consumed;
    }
    s->scanned -= s->consumed;
    s->consumed = 0;
}

/* Queue a MESSAGE for each message whose bytes are all in. */
static int
scan_messages(struct h2_conn *h, struct stream *s)
{
    while (!s->ended && s->inlen - s->scanned >= PREFIX) {
        const unsigned char *p = s->in + s->scanned;
        size_t len = (size_t)p[1] << 24 | (size_t)p[2] << 16 |
                     (size_t)p[3] << 8 | p[4];
        if (p[0] != 0) {
            return end_at_limit(h, s, GRPC_UNIMPLEMENTED, "compressed "
                                "messages are not supported");
        }
        if (len > h->max_message) {
            return end_at_limit(h, s, GRPC_RESOURCE_EXHAUSTED, "the message "
                                "is larger than the server accepts");
        }
        if (s->inlen - s->scanned - PREFIX < len) {
            break;
        }
        s->scanned += PREFIX + len;
        s->last_message_ms = h->now_ms;
        if (queue_event(h, H2_MESSAGE, s->id, NULL) != 0) {
            return -1;
        }
    }
    return 0;
}

/* A streaming call's DATA: kept, and cut into messages. 0, or -1 without
 * memory. */
static int
stream_data(struct h2_conn *h, struct stream *s, const uint8_t *data,
            size_t len)
{
    if (s->ended || s->reset || h->failure != H2_OK || len == 0) {
        return 0;                       /* nothing more to keep */
    }
    compact_in(h, s);
    int rc = append_body(h, s, data, len);
    return rc != 0 ? (rc < 0 ? -1 : 0) : scan_messages(h, s);
}

/* Wake the data source up; one that is not deferred is busy already. */
static int
resume(struct h2_conn *h, struct stream *s)
{
    int rc = nghttp2_session_resume_data(h->session, s->id);
    return rc == 0 || rc == NGHTTP2_ERR_INVALID_ARGUMENT ? 0 : -1;
}

/* Trailers with status after what waits, or (nothing sent yet) headers
 * and trailers in one frame. The stream is then like an answered unary
 * call: grpc-stream-timeout bounds the wait for the client's end. */
static int
finish(struct h2_conn *h, struct stream *s, enum grpc_status status,
       const char *why)
{
    release_in(h, s);
    s->started_ms = h->now_ms;
    if (!s->headers_sent) {
        s->headers_sent = true;
        return answer_error(h, s, status, why);
    }
    snprintf(s->status, sizeof(s->status), "%d", (int)status);
    percent_encode(s->message, sizeof(s->message), why != NULL ? why : "");
    s->ending = true;
    return resume(h, s);
}

/* h2.c ends the call at a limit (a message too large or compressed, the
 * connection's request memory): the caller hears GONE. */
static int
end_at_limit(struct h2_conn *h, struct stream *s, enum grpc_status status,
             const char *why)
{
    if (leave(h, s, true) != 0) {
        return -1;
    }
    return finish(h, s, status, why);
}

/* Reset a streaming call (the caller hears GONE); its buffers go. */
static int
reset_streaming(struct h2_conn *h, struct stream *s, uint32_t code)
{
    if (nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, s->id,
                                  code) != 0) {
        return -1;
    }
    s->reset = true;
    release_in(h, s);
    return leave(h, s, true);
}

bool
h2_next_event(struct h2_conn *h, struct h2_event *ev)
{
    const struct queued_event *front;
    while ((front = queue_front(&h->events, sizeof(*front))) != NULL) {
        struct queued_event e = *front;
        memset(ev, 0, sizeof(*ev));
        ev->kind = e.kind;
        ev->stream = e.id;
        ev->user = e.user;
        if (e.kind == H2_GONE) {
            return true;
        }
        struct stream *s = stream_of(h, e.id);
        if (s == NULL || s->ended || s->reset) {
            continue;                   /* GONE comes, or came */
        }
        ev->user = s->user;
        if (e.kind == H2_OPEN) {
            ev->path = s->path;
        } else if (e.kind == H2_MESSAGE) {
            const unsigned char *p = s->in + s->consumed;
            ev->len = (size_t)p[1] << 24 | (size_t)p[2] << 16 |
                      (size_t)p[3] << 8 | p[4];
            ev->message = p + PREFIX;
            s->consumed += PREFIX + ev->len;
        }
        return true;
    }
    return false;
}

void
h2_stream_set_user(struct h2_conn *h, int32_t id, void *user)
{
    struct stream *s = stream_of(h, id);
    if (s != NULL) {
        s->user = user;
    }
}

/* Room for need more bytes in s's output, what was sent dropped first. */
static int
grow_out(struct h2_conn *h, struct stream *s, size_t need)
{
    if (s->outoff > 0) {
        memmove(s->out, s->out + s->outoff, s->outlen - s->outoff);
        s->outlen -= s->outoff;
        s->outoff = 0;
    }
    if (s->outlen + need <= s->outcap) {
        return 0;
    }
    size_t cap = s->outcap ? s->outcap : 256;
    while (cap < s->outlen + need) {
        if (cap > SIZE_MAX / 2) {
            return -1;
        }
        cap *= 2;
    }
    unsigned char *p = realloc(s->out, cap);
    if (p == NULL) {
        return -1;
    }
    charge(h, cap - s->outcap);
    s->out = p;
    s->outcap = cap;
    return 0;
}

static int
submit_stream_headers(struct h2_conn *h, struct stream *s)
{
    nghttp2_nv nva[] = { NV(":status", "200"),
                         NV("content-type", "application/grpc") };
    nghttp2_data_provider data = { .source.ptr = s,
                                   .read_callback = read_out };
    s->headers_sent = true;
    return nghttp2_submit_response(h->session, s->id, nva, 2, &data) == 0
           ? 0 : -1;
}

int
h2_stream_send(struct h2_conn *h, int32_t id, const unsigned char *message,
               size_t len)
{
    struct stream *s = stream_of(h, id);
    if (s == NULL || !s->streaming || s->ended || s->reset) {
        return 1;
    }
    size_t waiting = s->outlen - s->outoff, max = h->budget->stream_output_max;
    if (len > SIZE_MAX - PREFIX - waiting) {
        return -1;
    }
    if (max != 0 && waiting + PREFIX + len > max) {
        h->budget->output_reset_streams++;
        return reset_streaming(h, s, NGHTTP2_ENHANCE_YOUR_CALM) == 0 ? 1 : -1;
    }
    if (grow_out(h, s, PREFIX + len) != 0) {
        return -1;
    }
    unsigned char *p = s->out + s->outlen;
    p[0] = 0;
    p[1] = (unsigned char)(len >> 24);
    p[2] = (unsigned char)(len >> 16);
    p[3] = (unsigned char)(len >> 8);
    p[4] = (unsigned char)len;
    if (len > 0) {
        memcpy(p + PREFIX, message, len);
    }
    s->outlen += PREFIX + len;
    return s->headers_sent ? resume(h, s) : submit_stream_headers(h, s);
}

int
h2_stream_end(struct h2_conn *h, int32_t id, enum grpc_status status,
              const char *why)
{
    struct stream *s = stream_of(h, id);
    if (s == NULL || !s->streaming || s->ended || s->reset) {
        return 0;
    }
    (void)leave(h, s, false);           /* (queues nothing) */
    return finish(h, s, status, why);
}

size_t
h2_streaming(const struct h2_conn *h)
{
    return h->streaming_open;
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
    queue_free(h, &h->ready, sizeof(int32_t));
    queue_free(h, &h->events, sizeof(struct queued_event));
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
    const int32_t *front;
    while ((front = queue_front(&h->ready, sizeof(*front))) != NULL) {
        int32_t id = *front;
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
static size_t
expire_unary(struct h2_conn *h, int64_t now_ms, int64_t timeout_ms)
{
    size_t n = 0;
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
    return n;
}

/* A streaming call open is not bounded by its age, which breaks the order
 * expire_unary counts on: with one, every stream is looked at. An open
 * call whose client, its side open, sent nothing for stream_idle_ms is
 * reset with RST_STREAM CANCEL (the client sees CANCELLED), as
 * grpc-stream-timeout resets a stalled call. gRPC servers have no bound
 * per stream; the nearest, grpc-go's keepalive (ServerParameters Time and
 * Timeout), closes the transport of a peer that stopped answering pings,
 * ending every call on it. This one is per call, so that a silent call
 * costs no other call on the connection (Envoy multiplexes), and a reset,
 * not a status, because a client gone silent may never read one, and a
 * reset frees both sides at once. A call whose client half-closed (a
 * server-streaming call such as Health/Watch, right after its request)
 * sends nothing more by design: only its connection bounds it. */
static size_t
expire_all(struct h2_conn *h, int64_t now_ms, int64_t timeout_ms)
{
    size_t n = 0, idle = 0;
    int64_t idle_ms = h->budget->stream_idle_ms;
    for (struct stream *s = h->oldest, *prev; s != NULL; s = prev) {
        prev = s->prev;
        if (s->reset) {
            continue;
        }
        if (s->streaming && s->told_open && !s->ended) {
            compact_in(h, s);
            if (idle_ms > 0 && !s->half_closed &&
                now_ms - s->last_message_ms > idle_ms) {
                if (reset_streaming(h, s, NGHTTP2_CANCEL) != 0) {
                    break;              /* no memory: the next try */
                }
                idle++;
            }
        } else if (timeout_ms > 0 && expired(s, now_ms, timeout_ms)) {
            if (nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE,
                                          s->id, NGHTTP2_CANCEL) != 0) {
                break;
            }
            s->reset = true;
            release_in(h, s);
            n++;
        }
    }
    h->budget->expired_streams += n;
    h->budget->idle_streams += idle;
    return n + idle;
}

size_t
h2_expire(struct h2_conn *h, int64_t now_ms, int64_t timeout_ms)
{
    if (h->failure != H2_OK) {
        return 0;
    }
    h->now_ms = now_ms;
    if (h->streaming_streams > 0) {
        return expire_all(h, now_ms, timeout_ms);
    }
    size_t n = timeout_ms > 0 ? expire_unary(h, now_ms, timeout_ms) : 0;
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
