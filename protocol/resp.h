/*
 * resp.h - request framing: RESP multibulk (through hiredis's redisReader,
 * 0.14.1 API) and inline commands (telnet, redis-benchmark's PING_INLINE).
 *
 * The parser owns the connection's query buffer (the reader's own buffer) and
 * turns it into flat argument vectors. It never sees a socket or a clock.
 * Limits are checked before anything is allocated from a size the client
 * announced: the argument count when the '*' line arrives, a bulk length when
 * its '$' line arrives, the inline line length, and the bytes buffered.
 */
#ifndef CELLGATE_RESP_H
#define CELLGATE_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The error of a client past max_query: the parser's, and the connection
 * layer's for a MULTI queue that grows past it. */
#define RESP_ERR_QUERYBUF "ERR Protocol error: client query buffer limit reached"

struct resp_limits {
    size_t max_query;    /* most unparsed bytes buffered */
    size_t max_bulk;     /* longest bulk string argument */
    size_t max_args;     /* most arguments in one request */
    size_t max_inline;   /* longest inline line (and '*'/'$' header line) */
    bool unauthenticated; /* limits of a client before AUTH: say so in the
                             errors, as Redis does */
};

enum resp_status {
    RESP_REQUEST,   /* a complete request is in the argv */
    RESP_AGAIN,     /* need more bytes */
    RESP_ERROR      /* protocol error; resp_error() has the reply text */
};

/* One request. argv[i] points at argvlen[i] bytes followed by a NUL (args
 * are binary-safe; the NUL is only a convenience), copies of the input:
 * valid until resp_next() frames or takes another request (feeding more
 * bytes leaves them alone). */
struct resp_request {
    size_t argc;
    char **argv;
    size_t *argvlen;
    int is_inline;
};

struct resp_parser;

/* lim is kept by pointer (not copied) so a CONFIG SET reaches every
 * connection; it must outlive the parser. */
struct resp_parser *resp_create(const struct resp_limits *lim);
void resp_destroy(struct resp_parser **p);

/* Hold the parser to other limits from now on (e.g. once a client has
 * authenticated); same lifetime rule as resp_create's. */
void resp_set_limits(struct resp_parser *p, const struct resp_limits *lim);

/* Buffer n more bytes. Returns 0, or -1 with resp_error() set (query buffer
 * limit or out of memory); the parser is then unusable. */
int resp_feed(struct resp_parser *p, const char *buf, size_t n);

/* The next request: the queue's head (see resp_frame_ahead()), or one
 * framed now from the buffered bytes. */
enum resp_status resp_next(struct resp_parser *p, struct resp_request *req);

/* Framing ahead (an I/O thread frames a pipeline, the main thread runs
 * it): hash(key, len, arg) is asked for each request's argv[1] (NULL: no
 * hashes), stop(req, arg) may end the batch after a request (one that
 * changes how what follows must be framed, as AUTH changes the limits). */
struct resp_frame_ops {
    uint64_t (*hash)(const char *key, size_t len, void *arg);
    bool (*stop)(const struct resp_request *req, void *arg);
    void *arg;
};

/* Frame complete requests ahead into the parser's queue, until it holds
 * max_reqs or the input is short; a protocol error stops it and is
 * resp_next()'s answer once the queue is taken. Every queued request's
 * argv stays valid until resp_next() takes the one after it. Returns how
 * many it framed. */
size_t resp_frame_ahead(struct resp_parser *p, size_t max_reqs,
                        const struct resp_frame_ops *ops);

/* Requests framed ahead and not taken yet. */
size_t resp_queued(const struct resp_parser *p);

/* The hash of argv[1] of the k-th queued request (0: taken next), or of
 * the request resp_next() took last; false when it has none. */
bool resp_queued_hash(const struct resp_parser *p, size_t k, uint64_t *hash);
bool resp_taken_hash(const struct resp_parser *p, uint64_t *hash);

/* Did framing meet a protocol error (or resp_feed() fail)? resp_next()
 * answers it once the queue is taken. */
bool resp_failed(const struct resp_parser *p);

/* Is everything fed taken (no request queued, none begun, no byte left)?
 * resp_next() would answer AGAIN. */
bool resp_drained(const struct resp_parser *p);

/* Put the request resp_next() just took from the queue back at its head
 * (CLIENT PAUSE holds it; the busy server leaves it for the main thread):
 * only right after taking it from the queue. */
void resp_unread(struct resp_parser *p);

/* The request at the head of the queue, left there, and its bytes in the
 * query buffer (CLIENT LIST of a client CLIENT PAUSE holds); false when
 * none is queued. */
bool resp_peek(struct resp_parser *p, struct resp_request *req, size_t *raw);

/* Reply text for the last error, e.g. "ERR Protocol error: invalid bulk
 * length" (no leading '-', no CRLF). */
const char *resp_error(const struct resp_parser *p);

/* Bytes held for requests not yet run (what the query buffer limit
 * counts): unparsed input, the arguments of an unfinished request and the
 * requests framed ahead, as they came in. */
size_t resp_buffered(const struct resp_parser *p);

/* Bytes of memory the parser holds (buffer and argument arena). */
size_t resp_memory(const struct resp_parser *p);

/* Give back buffer memory while the connection is idle. */
void resp_shrink(struct resp_parser *p);

#endif
