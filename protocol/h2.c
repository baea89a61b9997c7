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
    unsigned char *in;                  /* DATA bytes, prefix included */
    size_t inlen, incap;
    enum grpc_status refused;
    const char *why;
    unsigned char *out;                 /* the framed answer */
    size_t outlen, outoff;
    struct stream *prev, *next;         /* every stream the session has */
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
    struct stream *receiving;           /* the header block being read:
                                           HTTP/2 never interleaves them,
                                           so its headers need no lookup */
    size_t max_message;
    int32_t *ready;                     /* ended streams, oldest first */
    size_t nready, capready, headready;
    size_t pending;
    bool failed;
};

/* ---- nghttp2's memory --------------------------------------------------- */

/* nghttp2 allocates and frees small objects for every stream (the stream,
 * its header blocks, frames). Calls arrive dozens at a time, so they
 * overflow glibc's per-size caches; recycling them here through free
 * lists of 64-byte size classes (each bounded) keeps that off the path.
 * One event loop: no locking. */
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

static size_t
class_of(size_t size)
{
    return size == 0 ? 0 : (size - 1) / POOL_CLASS;
}

static void *
pool_malloc(size_t size, void *user)
{
    (void)user;
    size_t c = class_of(size);
    struct block *b;
    if (c < POOL_CLASSES && pool[c] != NULL) {
        b = pool[c];
        pool[c] = b->u.next;
        pooled[c]--;
    } else {
        size_t cap = c < POOL_CLASSES ? (c + 1) * POOL_CLASS : size;
        b = malloc(offsetof(struct block, u) + cap);
        if (b == NULL) {
            return NULL;
        }
        b->size = cap;
    }
    return &b->u;
}

static void
pool_free(void *p, void *user)
{
    (void)user;
    if (p == NULL) {
        return;
    }
    struct block *b = (struct block *)((char *)p - offsetof(struct block, u));
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
    struct block *b = (struct block *)((char *)p - offsetof(struct block, u));
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

static nghttp2_mem pool_mem = { NULL, pool_malloc, pool_free, pool_calloc,
                                pool_realloc };

/* ---- receiving --------------------------------------------------------- */

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

static void
release(struct stream *s, unsigned char **p)
{
    if (*p != s->small) {
        free(*p);
    }
    *p = NULL;
}

/* Streams come and go with every call, a few dozen at a time: spare ones
 * are kept (bounded) instead of going back to malloc, and only their head
 * is cleared when reused. */
#define SPARE_KEEP 256

static struct stream *spare;            /* linked through next */
static size_t nspare;

static struct stream *
new_stream(void)
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
    }
    release(s, &s->in);
    release(s, &s->out);
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
        frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
        return 0;
    }
    struct stream *s = new_stream();
    if (s == NULL) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    s->id = frame->hd.stream_id;
    s->next = h->streams;
    if (h->streams != NULL) {
        h->streams->prev = s;
    }
    h->streams = s;
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

static int
on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id,
              const uint8_t *data, size_t len, void *user)
{
    struct h2_conn *h = user;
    struct stream *s = stream_of(h, id);
    (void)session;
    (void)flags;
    if (s == NULL || s->refused != GRPC_OK) {
        return 0;                       /* nothing more to keep */
    }
    if (s->inlen + len > h->max_message + PREFIX) {
        release(s, &s->in);
        s->inlen = s->incap = 0;
        refuse(s, GRPC_RESOURCE_EXHAUSTED, "the message is larger than the "
               "server accepts");
        return 0;
    }
    if (s->in == NULL && len <= sizeof(s->small)) {
        s->in = s->small;
        s->incap = sizeof(s->small);
    }
    if (s->inlen + len > s->incap) {
        size_t cap = s->incap * 2 > 512 ? s->incap * 2 : 512;
        while (cap < s->inlen + len) {
            cap *= 2;
        }
        unsigned char *p = s->in == s->small ? malloc(cap)
                                             : realloc(s->in, cap);
        if (p == NULL) {
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        if (s->in == s->small) {
            memcpy(p, s->small, s->inlen);
        }
        s->in = p;
        s->incap = cap;
    }
    memcpy(s->in + s->inlen, data, len);
    s->inlen += len;
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
    if (s == NULL) {
        return 0;
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
    s->out = len + PREFIX <= sizeof(s->small) ? s->small : malloc(len + PREFIX);
    if (s->out == NULL) {
        return -1;
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
    if (s == NULL) {
        return 0;                       /* the client reset it meanwhile */
    }
    release(s, &s->in);
    s->inlen = s->incap = 0;
    return status == GRPC_OK ? answer_message(h, s, message, len)
                             : answer_error(h, s, status, why);
}

/* ---- the session -------------------------------------------------------- */

struct h2_conn *
h2_new(size_t max_message, uint32_t max_streams)
{
    nghttp2_session_callbacks *cb;
    struct h2_conn *h = calloc(1, sizeof(*h));
    if (h == NULL || nghttp2_session_callbacks_new(&cb) != 0) {
        free(h);
        return NULL;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_option *opt = NULL;
    int rc = nghttp2_option_new(&opt);
    if (rc == 0) {
        /* The call's own checks (h2_call: method, content-type, path) are
         * all cellgate needs of HTTP's rules; nghttp2's generic ones cost
         * more than the decision. */
        nghttp2_option_set_no_http_messaging(opt, 1);
        /* Unary calls answered at once: no priority tree to keep (RFC
         * 9218), and no closed streams kept for one. */
        nghttp2_option_set_no_closed_streams(opt, 1);
        rc = nghttp2_session_server_new3(&h->session, cb, h, opt, &pool_mem);
        nghttp2_option_del(opt);
    }
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry settings[] = {
        { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams },
        { NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1 },
    };
    if (rc != 0 ||
        nghttp2_submit_settings(h->session, NGHTTP2_FLAG_NONE, settings, 2) != 0) {
        h2_free(h);
        return NULL;
    }
    h->max_message = max_message;
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
    free(h);
}

int
h2_feed(struct h2_conn *h, const unsigned char *data, size_t len)
{
    ssize_t n = nghttp2_session_mem_recv(h->session, data, len);
    if (n < 0 || (size_t)n != len) {
        h->failed = true;
        return -1;
    }
    return 0;
}

bool
h2_next_call(struct h2_conn *h, struct h2_call *call)
{
    while (h->nready > 0) {
        int32_t id = h->ready[h->headready++];
        h->nready--;
        struct stream *s = stream_of(h, id);
        if (s == NULL) {
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
    return h->failed || (!nghttp2_session_want_read(h->session) &&
                         !nghttp2_session_want_write(h->session));
}

size_t
h2_pending(const struct h2_conn *h)
{
    return h->pending;
}
