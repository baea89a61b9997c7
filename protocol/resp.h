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
 * are binary-safe; the NUL is only a convenience). Valid until the next
 * resp_next() or resp_feed(). */
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

/* Frame the next request from the buffered bytes. */
enum resp_status resp_next(struct resp_parser *p, struct resp_request *req);

/* Without consuming anything, find the second argument (the key of most
 * commands) of the request that follows `skip` complete multibulk requests
 * in the buffer, for prefetching. The pointer is into the buffer and valid
 * until the next resp_next()/resp_feed(). False if that request is not
 * fully buffered or is not a multibulk with at least two arguments. */
bool resp_peek_key(const struct resp_parser *p, unsigned skip,
                   const char **key, size_t *keylen);

/* resp_peek_key(p, 1, ...), for a caller that asks once per framed
 * request: it remembers where the request it parsed ends, so each
 * buffered request is parsed once for peeking, not twice. *key_off gets
 * the key's stream offset (see resp_key_offset()). */
bool resp_peek_ahead(struct resp_parser *p, const char **key,
                     size_t *keylen, uint64_t *key_off);

/* Stream offset (bytes fed before it) of argv[1] of the request last
 * framed, or UINT64_MAX (inline request, or fewer than two arguments).
 * A peeked key with the same offset and length is the same bytes. */
uint64_t resp_key_offset(const struct resp_parser *p);

/* Reply text for the last error, e.g. "ERR Protocol error: invalid bulk
 * length" (no leading '-', no CRLF). */
const char *resp_error(const struct resp_parser *p);

/* Bytes held for requests not yet framed (what the query buffer limit
 * counts): unparsed input plus the arguments of an unfinished request. */
size_t resp_buffered(const struct resp_parser *p);

/* Bytes of memory the parser holds (buffer and argument arena). */
size_t resp_memory(const struct resp_parser *p);

/* Give back buffer memory while the connection is idle. */
void resp_shrink(struct resp_parser *p);

#endif
