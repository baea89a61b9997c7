/*
 * resp.c - request framing (see resp.h).
 *
 * hiredis's redisReader (0.14.1) does the RESP parsing; our object functions
 * receive each element and copy it into a per-parser argument arena, so a
 * request becomes a flat argv without one allocation per argument. The
 * reader's buffer doubles as the query buffer: at a request boundary we
 * peek at its first byte, hand '*' requests to redisReaderGetReply() and
 * split anything else as an inline command ourselves, advancing the
 * reader's cursor. The redisReader struct is public in 0.14.1; we read and
 * move only `buf`, `pos`, `len`, `ridx` and `rstack`, the same fields
 * redisReaderGetReply() itself maintains.
 *
 * Why we look at header lines ourselves: 0.14.1 hands createArray() the
 * element count truncated to an int and waits forever for a header line
 * without CRLF. So the '*' line is validated here before hiredis sees it,
 * and a pending '$' line is checked against max_bulk while its body is
 * still arriving. hiredis's own error texts are mapped to Redis's.
 *
 * Why hiredis sees a window of the input: after each reply it drops the
 * consumed bytes from the front of its buffer once 1 KB pile up, moving
 * everything behind them. Fed a 64 KB read of small pipelined requests,
 * that moved ~2 KB per request (quadratic in the read size). So input
 * beyond WINDOW unparsed bytes waits in `pend` and is handed over as
 * hiredis consumes; before answering AGAIN everything is handed over, so
 * a request longer than the window still frames exactly as before.
 *
 * Framing ahead: resp_frame_ahead() frames every complete request it may
 * and queues them, each request's arguments kept in the arena behind the
 * ones before it, so all stay valid together until resp_next() takes
 * them in order (an I/O thread frames a whole pipeline; the main thread
 * runs it without parsing). Pointers into the arena are made when a
 * request is taken, since framing another may move the arena. The arena
 * is reset only when the queue is empty and a new request is framed, so
 * the request taken last stays valid until then, and resp_unread() can
 * put it back at the head of the queue.
 */
#include "protocol/resp.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/read.h>
#include <hiredis/sds.h>

#include "lib/args.h"
#include "lib/mem.h"
#include "lib/num.h"

#define ERR_LEN 128
/* Redis's protocol errors that more than one place gives. */
#define PROTO_ERR_BULK_LEN "ERR Protocol error: invalid bulk length"
#define PROTO_ERR_MBULK_LEN "ERR Protocol error: invalid multibulk length"
#define PROTO_ERR_NOMEM "ERR Protocol error: out of memory"
#define ARGS_MIN 16          /* argv slots allocated before a count is seen */
#define ARGS_PREALLOC 1024   /* most slots reserved from an announced count */
#define COMPACT_AT 1024      /* drop consumed bytes once this many pile up */
#define WINDOW (8 * 1024)    /* bytes of input hiredis holds unparsed */
/* Framing ahead stops once the queue holds this much (one request more
 * at most): a deep pipeline waits in the query buffer, as in Redis, not
 * as argument vectors. */
#define AHEAD_BYTES (64 * 1024)
#define AHEAD_ARGS 4096

struct resp_parser {
    redisReader *reader;
    const struct resp_limits *lim; /* shared, may change at run time */
    bool mid_request;        /* hiredis holds a partial multibulk */
    /* The request being built: argument bytes, NUL-separated, in arena;
     * offsets rather than pointers while the arena may still move. */
    char *arena;
    size_t arena_len;
    size_t arena_cap;
    size_t *offs;
    size_t *lens;
    char **ptrs;
    size_t nargs;
    size_t args_cap;
    const char *cb_error;    /* set by an object function that refused */
    char err[ERR_LEN];
    /* Stream offsets count every byte ever fed: buf[0] is at `base`, and
     * whoever drops bytes from the front of buf (compact(), hiredis after
     * a reply) adds them to it. */
    uint64_t base;
    /* Requests framed ahead, taken from q[q_head]; the arguments of
     * [0, keep_args) and arena bytes [0, keep_bytes) are theirs (and the
     * last taken one's), so the request being built starts behind them. */
    struct framed *q;
    size_t q_head;
    size_t q_len;
    size_t q_cap;
    uint64_t q_raw;          /* their bytes as they came in */
    size_t keep_args;
    size_t keep_bytes;
    size_t req_first;        /* the request being built: its first */
    size_t req_bytes;        /* argument and arena byte */
    bool q_error;            /* framing ahead met a protocol error: it is
                                the answer once the queue is taken */
    /* Input not yet handed to hiredis, bytes [pend_start, pend_end). */
    char *pend;
    size_t pend_start;
    size_t pend_end;
    size_t pend_cap;
};

/* A request framed ahead: its arguments are offs/lens[first, first +
 * argc); raw is the bytes it took in the stream. */
struct framed {
    size_t first;
    size_t argc;
    uint64_t raw;
    uint64_t hash;           /* resp_frame_ops's hash of argv[1] */
    bool hashed;
    bool is_inline;
};

/* A marker object: the argv lives in the parser, hiredis only needs a
 * non-NULL pointer to know an element was accepted. */
static char accepted;

static void
set_error(struct resp_parser *p, const char *msg)
{
    size_t n = strlen(msg);
    if (n >= ERR_LEN) {
        n = ERR_LEN - 1;
    }
    memcpy(p->err, msg, n);
    p->err[n] = '\0';
}

static int
args_reserve(struct resp_parser *p, size_t want)
{
    if (want <= p->args_cap) {
        return 0;
    }
    size_t cap = p->args_cap * 2 > want ? p->args_cap * 2 : want;
    size_t *offs = mem_realloc(p->offs, cap * sizeof(*offs));
    if (offs == NULL) {
        return -1;
    }
    p->offs = offs;
    size_t *lens = mem_realloc(p->lens, cap * sizeof(*lens));
    if (lens == NULL) {
        return -1;
    }
    p->lens = lens;
    char **ptrs = mem_realloc(p->ptrs, cap * sizeof(*ptrs));
    if (ptrs == NULL) {
        return -1;
    }
    p->ptrs = ptrs;
    p->args_cap = cap;
    return 0;
}

/* Room for `more` bytes after the `used` ones of a growable buffer
 * (doubling from `initial`). */
static int
buffer_reserve(char **buf, size_t *cap, size_t used, size_t more,
               size_t initial)
{
    if (*cap - used >= more) {
        return 0;
    }
    size_t c = *cap ? *cap : initial;
    while (c - used < more) {
        if (c > SIZE_MAX / 2) {
            return -1;
        }
        c *= 2;
    }
    char *b = mem_realloc(*buf, c);
    if (b == NULL) {
        return -1;
    }
    *buf = b;
    *cap = c;
    return 0;
}

static int
arena_reserve(struct resp_parser *p, size_t more)
{
    return buffer_reserve(&p->arena, &p->arena_cap, p->arena_len, more, 256);
}

/* memcpy for n <= 16 without the call: most arguments are a few bytes
 * (command names, keys, numbers). Overlapping words, no byte outside
 * [0, n) read or written. */
static inline void
copy_small(char *dst, const char *src, size_t n)
{
    if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else {
        for (size_t i = 0; i < n; i++) {
            dst[i] = src[i];
        }
    }
}

/* Append one argument (copied, NUL-terminated). */
static int
args_push(struct resp_parser *p, const char *s, size_t len)
{
    /* The reserve calls only when a slot or the bytes are missing: once
     * warm, a request's arguments always fit. */
    if ((p->nargs >= p->args_cap || p->arena_cap - p->arena_len <= len) &&
        (len == SIZE_MAX || args_reserve(p, p->nargs + 1) < 0 ||
         arena_reserve(p, len + 1) < 0)) {
        return -1;
    }
    p->offs[p->nargs] = p->arena_len;
    p->lens[p->nargs] = len;
    char *dst = p->arena + p->arena_len;
    if (len <= 16) {
        copy_small(dst, s, len);
    } else {
        memcpy(dst, s, len);
    }
    dst[len] = '\0';
    p->arena_len += len + 1;
    p->nargs++;
    return 0;
}

/* Start a request, behind those framed ahead. */
static void
args_reset(struct resp_parser *p)
{
    p->nargs = p->req_first = p->keep_args;
    p->arena_len = p->req_bytes = p->keep_bytes;
}

/* The request of arguments [first, first + argc), pointers made now. */
static void
args_view(struct resp_parser *p, size_t first, size_t argc,
          struct resp_request *req, int is_inline)
{
    for (size_t i = first; i < first + argc; i++) {
        p->ptrs[i] = p->arena + p->offs[i];
    }
    req->argc = argc;
    req->argv = p->ptrs + first;
    req->argvlen = p->lens + first;
    req->is_inline = is_inline;
}

static void
args_finish(struct resp_parser *p, struct resp_request *req, int is_inline)
{
    args_view(p, p->req_first, p->nargs - p->req_first, req, is_inline);
}

/* ---- hiredis object functions ---------------------------------------- */

static struct resp_parser *
task_parser(const redisReadTask *task)
{
    return task->privdata;
}

static const char *
type_error(int type)
{
    switch (type) {
    case REDIS_REPLY_STATUS:
        return "ERR Protocol error: expected '$', got '+'";
    case REDIS_REPLY_ERROR:
        return "ERR Protocol error: expected '$', got '-'";
    case REDIS_REPLY_INTEGER:
        return "ERR Protocol error: expected '$', got ':'";
    default:
        return "ERR Protocol error: expected '$', got '*'";
    }
}

static const char *
bulk_too_long(const struct resp_parser *p)
{
    return p->lim->unauthenticated
               ? "ERR Protocol error: unauthenticated bulk length"
               : PROTO_ERR_BULK_LEN;
}

static void *
obj_string(const redisReadTask *task, char *str, size_t len)
{
    struct resp_parser *p = task_parser(task);
    if (task->type != REDIS_REPLY_STRING || task->parent == NULL) {
        p->cb_error = type_error(task->type);
        return NULL;
    }
    if (len > p->lim->max_bulk) {
        p->cb_error = bulk_too_long(p);
        return NULL;
    }
    if (args_push(p, str, len) < 0) {
        p->cb_error = PROTO_ERR_NOMEM;
        return NULL;
    }
    return &accepted;
}

static void *
obj_array(const redisReadTask *task, int elements)
{
    struct resp_parser *p = task_parser(task);
    if (task->parent != NULL) {
        p->cb_error = type_error(REDIS_REPLY_ARRAY);
        return NULL;
    }
    /* The count was validated by check_multibulk_header(). Reserve slots
     * for it, but never more than ARGS_PREALLOC from a number the client
     * merely announced. */
    size_t want = (size_t)elements < ARGS_PREALLOC ? (size_t)elements
                                                   : ARGS_PREALLOC;
    args_reset(p);
    if (args_reserve(p, p->nargs + want) < 0) {
        p->cb_error = PROTO_ERR_NOMEM;
        return NULL;
    }
    return &accepted;
}

static void *
obj_integer(const redisReadTask *task, long long value)
{
    (void)value;
    task_parser(task)->cb_error = type_error(REDIS_REPLY_INTEGER);
    return NULL;
}

static void *
obj_nil(const redisReadTask *task)
{
    task_parser(task)->cb_error =
        task->type == REDIS_REPLY_ARRAY ? type_error(REDIS_REPLY_ARRAY)
                                        : PROTO_ERR_BULK_LEN;
    return NULL;
}

static void
obj_free(void *obj)
{
    (void)obj; /* nothing is allocated per object */
}

static redisReplyObjectFunctions object_functions = {
    obj_string, obj_array, obj_integer, obj_nil, obj_free
};

/* ---- lifecycle -------------------------------------------------------- */

struct resp_parser *
resp_create(const struct resp_limits *lim)
{
    struct resp_parser *p = mem_calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->lim = lim;
    p->reader = redisReaderCreateWithFunctions(&object_functions);
    if (p->reader == NULL || args_reserve(p, ARGS_MIN) < 0) {
        resp_destroy(&p);
        return NULL;
    }
    /* Not redisReaderSetPrivdata(): 0.14.1's macro casts the pointer to
     * int, which clang rightly rejects. */
    p->reader->privdata = p;
    return p;
}

void
resp_destroy(struct resp_parser **pp)
{
    struct resp_parser *p = *pp;
    if (p == NULL) {
        return;
    }
    if (p->reader != NULL) {
        redisReaderFree(p->reader);
    }
    mem_free(p->arena);
    mem_free(p->pend);
    mem_free(p->offs);
    mem_free(p->lens);
    mem_free(p->ptrs);
    mem_free(p->q);
    mem_free(p);
    *pp = NULL;
}

void
resp_set_limits(struct resp_parser *p, const struct resp_limits *lim)
{
    p->lim = lim;
}

size_t
resp_buffered(const struct resp_parser *p)
{
    size_t n = p->reader->len - p->reader->pos + p->pend_end - p->pend_start;
    /* hiredis hands over the elements of a request as they arrive: the
     * ones already copied out still belong to the unfinished request. */
    if (p->mid_request) {
        n += p->arena_len - p->req_bytes +
             (p->nargs - p->req_first) * (2 * sizeof(size_t) + sizeof(char *));
    }
    /* Requests framed ahead are still the query buffer's, as pipelined
     * requests not yet run are in Redis's. */
    return n + (size_t)p->q_raw;
}

size_t
resp_memory(const struct resp_parser *p)
{
    return sizeof(*p) + p->arena_cap + p->pend_cap +
           p->args_cap * (2 * sizeof(size_t) + sizeof(char *)) +
           (p->reader->buf ? sdsalloc(p->reader->buf) : 0);
}

const char *
resp_error(const struct resp_parser *p)
{
    return p->err;
}

/* Keep n bytes for later, behind what is already waiting. */
static int
pend_append(struct resp_parser *p, const char *buf, size_t n)
{
    if (n == 0) {
        return 0;
    }
    if (p->pend_start > 0 && p->pend_end + n > p->pend_cap) {
        /* Reuse the consumed front before growing. */
        memmove(p->pend, p->pend + p->pend_start,
                p->pend_end - p->pend_start);
        p->pend_end -= p->pend_start;
        p->pend_start = 0;
    }
    if (buffer_reserve(&p->pend, &p->pend_cap, p->pend_end, n, WINDOW) < 0) {
        return -1;
    }
    memcpy(p->pend + p->pend_end, buf, n);
    p->pend_end += n;
    return 0;
}

/* Hand up to n waiting bytes to hiredis. */
static int
pend_feed(struct resp_parser *p, size_t n)
{
    size_t waiting = p->pend_end - p->pend_start;
    if (n > waiting) {
        n = waiting;
    }
    if (n == 0) {
        return 0;
    }
    if (redisReaderFeed(p->reader, p->pend + p->pend_start, n) != REDIS_OK) {
        set_error(p, PROTO_ERR_NOMEM);
        return -1;
    }
    p->pend_start += n;
    if (p->pend_start == p->pend_end) {
        p->pend_start = p->pend_end = 0;
    }
    return 0;
}

/* Refill the window once hiredis has parsed half of it. */
static int
pend_top_up(struct resp_parser *p)
{
    size_t unparsed = p->reader->len - p->reader->pos;
    if (p->pend_end == p->pend_start || unparsed >= WINDOW / 2) {
        return 0;
    }
    return pend_feed(p, WINDOW - unparsed);
}

int
resp_feed(struct resp_parser *p, const char *buf, size_t n)
{
    /* A request carrying one bulk of the largest allowed length must fit,
     * headers included, even when the two limits are set equal. */
    size_t cap = p->lim->max_query;
    if (cap < p->lim->max_bulk + p->lim->max_inline) {
        cap = p->lim->max_bulk + p->lim->max_inline;
    }
    if (resp_buffered(p) + n > cap) {
        set_error(p, RESP_ERR_QUERYBUF);
        p->q_error = true;
        return -1;
    }
    /* What fits the window goes to hiredis now, the rest waits. */
    size_t unparsed = p->reader->len - p->reader->pos;
    size_t direct = 0;
    if (p->pend_end == p->pend_start && unparsed < WINDOW) {
        direct = n < WINDOW - unparsed ? n : WINDOW - unparsed;
    }
    if ((direct > 0 && redisReaderFeed(p->reader, buf, direct) != REDIS_OK) ||
        pend_append(p, buf + direct, n - direct) < 0) {
        set_error(p, PROTO_ERR_NOMEM);
        p->q_error = true;
        return -1;
    }
    return 0;
}

/* Drop consumed bytes from the front of the reader's buffer, as
 * redisReaderGetReply() does after a reply. */
static void
compact(struct resp_parser *p)
{
    redisReader *r = p->reader;
    if (r->pos == r->len) {
        p->base += r->len;
        sdsclear(r->buf);
        r->pos = r->len = 0;
    } else if (r->pos >= COMPACT_AT) {
        p->base += r->pos;
        sdsrange(r->buf, (int)r->pos, -1);
        r->pos = 0;
        r->len = sdslen(r->buf);
    }
}

void
resp_shrink(struct resp_parser *p)
{
    redisReader *r = p->reader;
    if (p->mid_request || r->pos != r->len || p->pend_end != p->pend_start ||
        p->q_len > 0) {
        return;
    }
    /* An empty, large reader buffer is freed by the next feed (maxbuf);
     * the arena, the waiting buffer and the queue we can release now, and
     * the argument slots a deep pipeline grew go back to the first few. */
    mem_free(p->arena);
    p->arena = NULL;
    p->arena_cap = p->arena_len = 0;
    mem_free(p->pend);
    p->pend = NULL;
    p->pend_cap = p->pend_start = p->pend_end = 0;
    mem_free(p->q);
    p->q = NULL;
    p->q_cap = p->q_head = 0;
    p->keep_args = p->keep_bytes = p->req_first = p->req_bytes = 0;
    if (p->args_cap > ARGS_MIN) {
        mem_free(p->offs);
        mem_free(p->lens);
        mem_free(p->ptrs);
        p->offs = NULL;
        p->lens = NULL;
        p->ptrs = NULL;
        p->args_cap = 0;
        p->nargs = 0;
        (void)args_reserve(p, ARGS_MIN);    /* else on the next request */
    }
}

/* ---- inline commands -------------------------------------------------- */

/* Split one inline line into the arena by Redis's rules (lib/args.h).
 * Returns 0, -1 on unbalanced quotes, -2 when the line has more than
 * max_args words, -3 when memory ran out. */
static int
split_inline(struct resp_parser *p, const char *s, size_t end)
{
    size_t pos = 0;
    args_reset(p);
    for (;;) {
        if (args_reserve(p, p->nargs + 1) < 0 ||
            arena_reserve(p, end - pos + 1) < 0) {
            return -3;
        }
        size_t start = p->arena_len;
        size_t n;
        enum args_status st = args_next(s, end, &pos, p->arena + start, &n);
        if (st == ARGS_END) {
            return 0;
        }
        if (p->nargs - p->req_first >= p->lim->max_args) {
            return -2;          /* one word too many, whatever its quotes */
        }
        if (st != ARGS_WORD) {
            return -1;
        }
        p->arena[start + n] = '\0';
        p->offs[p->nargs] = start;
        p->lens[p->nargs] = n;
        p->arena_len += n + 1;
        p->nargs++;
    }
}

/* Frame one inline line. An empty line is consumed and reported as AGAIN
 * (the caller sees the progress and goes on). */
static enum resp_status
next_inline(struct resp_parser *p, struct resp_request *req)
{
    redisReader *r = p->reader;
    const char *start = r->buf + r->pos;
    size_t avail = r->len - r->pos;
    const char *nl = memchr(start, '\n', avail);
    size_t linelen = nl != NULL ? (size_t)(nl - start) : avail;

    if (linelen > p->lim->max_inline) {
        set_error(p, "ERR Protocol error: too big inline request");
        return RESP_ERROR;
    }
    if (nl == NULL) {
        return RESP_AGAIN;
    }
    /* The splitter would end the line at a NUL and run what came before
     * it (Redis never runs such a line: it waits for a newline its C
     * string search cannot find). Neither is an answer: refuse it. */
    if (memchr(start, '\0', linelen) != NULL) {
        set_error(p, "ERR Protocol error: NUL byte in inline request");
        return RESP_ERROR;
    }
    int rc = split_inline(p, start, linelen);
    if (rc == -2) {
        set_error(p, "ERR Protocol error: too many arguments in inline "
                     "request");
        return RESP_ERROR;
    }
    if (rc == -3) {
        set_error(p, PROTO_ERR_NOMEM);
        return RESP_ERROR;
    }
    if (rc < 0) {
        set_error(p, "ERR Protocol error: unbalanced quotes in request");
        return RESP_ERROR;
    }
    r->pos += linelen + 1;
    if (p->nargs == p->req_first) {
        return RESP_AGAIN;
    }
    args_finish(p, req, 1);
    return RESP_REQUEST;
}

/* ---- multibulk -------------------------------------------------------- */

/* Validate the '*<count>\r\n' line at the reader's cursor before hiredis
 * sees it. Returns RESP_REQUEST when hiredis may go on, RESP_AGAIN for an
 * incomplete line, RESP_ERROR. *count gets the count. */
static enum resp_status
check_multibulk_header(struct resp_parser *p, int64_t *count)
{
    redisReader *r = p->reader;
    const char *start = r->buf + r->pos;
    size_t avail = r->len - r->pos;
    /* "*<1-9>\r\n" or "*<10-99>\r\n", nearly every request: valid
     * and within max_args unless the limit is below 100. */
    if (avail >= 5 && start[1] >= '1' && start[1] <= '9') {
        int64_t c = -1;
        if (start[2] == '\r' && start[3] == '\n') {
            c = start[1] - '0';
        } else if (start[2] >= '0' && start[2] <= '9' && start[3] == '\r' &&
                   start[4] == '\n') {
            c = (start[1] - '0') * 10 + (start[2] - '0');
        }
        if (c > 0 && (size_t)c <= p->lim->max_args) {
            *count = c;
            return RESP_REQUEST;
        }
    }
    const char *cr = memchr(start, '\r', avail);
    if (cr == NULL) {
        if (avail > p->lim->max_inline) {
            set_error(p, "ERR Protocol error: too big mbulk count string");
            return RESP_ERROR;
        }
        return RESP_AGAIN;
    }
    if ((size_t)(cr - start) + 2 > avail) {
        return RESP_AGAIN; /* the '\n' has not arrived yet */
    }
    if (cr[1] != '\n' ||
        !num_parse_i64(start + 1, (size_t)(cr - start - 1), count) ||
        *count > INT32_MAX) {
        set_error(p, PROTO_ERR_MBULK_LEN);
        return RESP_ERROR;
    }
    if (*count > 0 && (size_t)*count > p->lim->max_args) {
        set_error(p, p->lim->unauthenticated
                         ? "ERR Protocol error: unauthenticated multibulk "
                           "length"
                         : PROTO_ERR_MBULK_LEN);
        return RESP_ERROR;
    }
    return RESP_REQUEST;
}

/* While a bulk body is still arriving, its '$' line is at the cursor:
 * refuse a length over max_bulk now rather than buffer it. */
static enum resp_status
check_pending_bulk(struct resp_parser *p)
{
    redisReader *r = p->reader;
    if (r->ridx < 0 || r->rstack[r->ridx].type != REDIS_REPLY_STRING) {
        return RESP_AGAIN;
    }
    const char *start = r->buf + r->pos;
    size_t avail = r->len - r->pos;
    const char *cr = memchr(start, '\r', avail);
    int64_t len;
    if (cr == NULL) {
        if (avail > p->lim->max_inline) {
            set_error(p, "ERR Protocol error: too big bulk count string");
            return RESP_ERROR;
        }
        return RESP_AGAIN;
    }
    if (!num_parse_i64(start, (size_t)(cr - start), &len) || len < 0) {
        set_error(p, PROTO_ERR_BULK_LEN);
        return RESP_ERROR;
    }
    if ((uint64_t)len > p->lim->max_bulk) {
        set_error(p, bulk_too_long(p));
        return RESP_ERROR;
    }
    return RESP_AGAIN;
}

/* hiredis names a bad type byte as in `got "\x01" as reply type byte`
 * (escaped like sdscatrepr); decode it back to the byte. */
static char
decode_type_byte(const char *q)
{
    size_t i = 0;
    if (q[0] != '\\' || q[1] == '\0') {
        return q[0];
    }
    return args_unescape(q, strlen(q), &i);
}

/* Turn a reader error into Redis's wording. The '*' header of a request
 * was validated before hiredis saw it, so hiredis's multi-bulk and integer
 * complaints can only be about an element that is not a bulk string. */
static void
reader_error(struct resp_parser *p)
{
    static const char type_prefix[] = "Protocol error, got \"";
    const char *e = p->reader->errstr;
    if (p->cb_error != NULL) {
        set_error(p, p->cb_error);
    } else if (strncmp(e, type_prefix, sizeof(type_prefix) - 1) == 0) {
        char msg[64] = "ERR Protocol error: expected '$', got ' '";
        msg[sizeof("ERR Protocol error: expected '$', got '") - 1] =
            decode_type_byte(e + sizeof(type_prefix) - 1);
        set_error(p, msg);
    } else if (strstr(e, "ulk string length") != NULL) {
        set_error(p, PROTO_ERR_BULK_LEN);
    } else if (strstr(e, "ulti-bulk length") != NULL) {
        set_error(p, type_error(REDIS_REPLY_ARRAY));
    } else if (strstr(e, "integer") != NULL) {
        set_error(p, type_error(REDIS_REPLY_INTEGER));
    } else {
        char msg[ERR_LEN + 32];
        snprintf(msg, sizeof(msg), "ERR Protocol error: %.100s", e);
        set_error(p, msg);
    }
}

static enum resp_status
next_multibulk(struct resp_parser *p, struct resp_request *req)
{
    redisReader *r = p->reader;
    void *reply = NULL;

    if (!p->mid_request) {
        int64_t count;
        enum resp_status st = check_multibulk_header(p, &count);
        if (st != RESP_REQUEST) {
            return st;
        }
        if (count <= 0) {
            /* "*0" and "*-1" are empty requests: skip the line. */
            const char *cr = memchr(r->buf + r->pos, '\r', r->len - r->pos);
            r->pos = (size_t)(cr - r->buf) + 2;
            return RESP_AGAIN;
        }
        p->mid_request = true;
    }
    p->cb_error = NULL;
    size_t len_before = r->len;
    int rc = redisReaderGetReply(r, &reply);
    /* It drops consumed bytes from the front once 1 KB pile up; nothing
     * is fed meanwhile, so what the buffer lost is what it dropped. */
    p->base += len_before - r->len;
    if (rc != REDIS_OK) {
        reader_error(p);
        return RESP_ERROR;
    }
    if (reply == NULL) {
        return check_pending_bulk(p);
    }
    p->mid_request = false;
    args_finish(p, req, 0);
    return RESP_REQUEST;
}

/* Frame the next request from the buffered bytes (none framed ahead). */
static enum resp_status
frame_one(struct resp_parser *p, struct resp_request *req)
{
    redisReader *r = p->reader;
    for (;;) {
        if (pend_top_up(p) < 0) {
            return RESP_ERROR;
        }
        if (!p->mid_request && r->pos == r->len) {
            compact(p);
            return RESP_AGAIN;
        }
        size_t before = r->pos;
        enum resp_status st = (p->mid_request || r->buf[r->pos] == '*')
                                  ? next_multibulk(p, req)
                                  : next_inline(p, req);
        if (st != RESP_AGAIN) {
            return st;
        }
        /* AGAIN after progress means an empty request was skipped. */
        if (p->mid_request || r->pos == before) {
            /* Short of bytes: hand over all that waits, then say AGAIN
             * only if that was everything. */
            if (p->pend_end != p->pend_start) {
                if (pend_feed(p, p->pend_end - p->pend_start) < 0) {
                    return RESP_ERROR;
                }
                continue;
            }
            compact(p);
            return RESP_AGAIN;
        }
    }
}

/* Bytes of the stream consumed so far (framed or skipped). */
static uint64_t
stream_pos(const struct resp_parser *p)
{
    return p->base + p->reader->pos;
}

/* The queue is empty: the next request may reuse the whole arena (unless
 * one is half built behind what was kept). */
static void
release_kept(struct resp_parser *p)
{
    if (p->q_len == 0 && !p->mid_request) {
        p->q_head = 0;
        p->keep_args = 0;
        p->keep_bytes = 0;
    }
}

static bool
queue_reserve(struct resp_parser *p)
{
    size_t want = p->q_head + p->q_len + 1;
    if (want <= p->q_cap) {
        return true;
    }
    size_t cap = p->q_cap ? p->q_cap * 2 : 16;
    while (cap < want) {
        cap *= 2;
    }
    struct framed *q = mem_realloc(p->q, cap * sizeof(*q));
    if (q == NULL) {
        return false;
    }
    p->q = q;
    p->q_cap = cap;
    return true;
}

/* Keep the request just framed (arguments [keep_args, nargs)). */
static void
queue_push(struct resp_parser *p, const struct resp_request *req,
           uint64_t raw, const struct resp_frame_ops *ops)
{
    struct framed *f = &p->q[p->q_head + p->q_len++];
    f->first = p->req_first;
    f->argc = req->argc;
    f->raw = raw;
    f->is_inline = req->is_inline != 0;
    f->hashed = req->argc >= 2 && ops != NULL && ops->hash != NULL;
    f->hash = f->hashed ? ops->hash(req->argv[1], req->argvlen[1], ops->arg)
                        : 0;
    p->q_raw += raw;
    p->keep_args = p->nargs;
    p->keep_bytes = p->arena_len;
}

size_t
resp_frame_ahead(struct resp_parser *p, size_t max_reqs,
                 const struct resp_frame_ops *ops)
{
    size_t framed = 0;
    release_kept(p);
    while (framed < max_reqs && !p->q_error && p->q_len < max_reqs &&
           p->keep_bytes < AHEAD_BYTES && p->keep_args < AHEAD_ARGS) {
        struct resp_request req;
        if (!queue_reserve(p)) {
            break;              /* resp_next() frames them one by one */
        }
        if (!p->mid_request && p->reader->pos == p->reader->len &&
            p->pend_end == p->pend_start) {
            compact(p);         /* all taken: no need to try */
            break;
        }
        uint64_t from = stream_pos(p);
        enum resp_status st = frame_one(p, &req);
        if (st == RESP_AGAIN) {
            break;
        }
        if (st == RESP_ERROR) {
            p->q_error = true;  /* resp_next() answers it in its turn */
            break;
        }
        queue_push(p, &req, stream_pos(p) - from, ops);
        framed++;
        if (ops != NULL && ops->stop != NULL && ops->stop(&req, ops->arg)) {
            break;
        }
    }
    return framed;
}

size_t
resp_queued(const struct resp_parser *p)
{
    return p->q_len;
}

bool
resp_queued_hash(const struct resp_parser *p, size_t k, uint64_t *hash)
{
    if (k >= p->q_len || !p->q[p->q_head + k].hashed) {
        return false;
    }
    *hash = p->q[p->q_head + k].hash;
    return true;
}

bool
resp_taken_hash(const struct resp_parser *p, uint64_t *hash)
{
    if (p->q_head == 0 || !p->q[p->q_head - 1].hashed) {
        return false;
    }
    *hash = p->q[p->q_head - 1].hash;
    return true;
}

static void
queue_take(struct resp_parser *p, struct resp_request *req)
{
    const struct framed *f = &p->q[p->q_head++];
    p->q_len--;
    p->q_raw -= f->raw;
    args_view(p, f->first, f->argc, req, f->is_inline);
}

bool
resp_failed(const struct resp_parser *p)
{
    return p->q_error;
}

bool
resp_drained(const struct resp_parser *p)
{
    return p->q_len == 0 && !p->q_error && !p->mid_request &&
           p->reader->pos == p->reader->len && p->pend_end == p->pend_start;
}

void
resp_unread(struct resp_parser *p)
{
    p->q_head--;
    p->q_len++;
    p->q_raw += p->q[p->q_head].raw;
}

bool
resp_peek(struct resp_parser *p, struct resp_request *req, size_t *raw)
{
    if (p->q_len == 0) {
        return false;
    }
    const struct framed *f = &p->q[p->q_head];
    args_view(p, f->first, f->argc, req, f->is_inline);
    *raw = f->raw;
    return true;
}

enum resp_status
resp_next(struct resp_parser *p, struct resp_request *req)
{
    if (p->q_len > 0) {
        queue_take(p, req);
        return RESP_REQUEST;
    }
    if (p->q_error) {
        return RESP_ERROR;
    }
    release_kept(p);
    /* Taken now (no queue): no hash to tell, as resp_taken_hash() asks. */
    p->q_head = 0;
    enum resp_status st = frame_one(p, req);
    p->q_error = st == RESP_ERROR;
    return st;
}
