/*
 * reply_read.h - reads back replies as reply.h writes them: RESP2 and RESP3,
 * one token at a time, from a buffer that holds them whole.
 *
 * A script's redis.call() runs a command whose reply lands in an output
 * buffer; the script sees that reply as Lua values (server/script/
 * convert.c). The reader does no I/O and keeps no state beyond its
 * position: an aggregate is one token with its element count, and its
 * elements are the tokens that follow. The bytes are ours, yet the reader
 * is strict: every length is checked against the buffer, every line must
 * end in CRLF, numbers must be well formed; anything else is an error and
 * the position stays where it was.
 */
#ifndef CELLGATE_REPLY_READ_H
#define CELLGATE_REPLY_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum reply_token_type {
    RT_STATUS,          /* +text           str/len */
    RT_ERROR,           /* -text           str/len */
    RT_BLOB_ERROR,      /* !len text       str/len */
    RT_INT,             /* :n              n */
    RT_BULK,            /* $len text       str/len */
    RT_NULL_BULK,       /* $-1 */
    RT_NULL_ARRAY,      /* *-1 */
    RT_NULL,            /* _ (RESP3) */
    RT_ARRAY,           /* *n              n elements follow */
    RT_MAP,             /* %n              n pairs (2n tokens) follow */
    RT_SET,             /* ~n              n elements follow */
    RT_PUSH,            /* >n              n elements follow */
    RT_ATTRIBUTE,       /* |n              n pairs, then the reply itself */
    RT_DOUBLE,          /* ,text           d, and the text in str/len */
    RT_BOOL,            /* #t or #f        n = 1 or 0 */
    RT_BIG_NUMBER,      /* (digits         str/len */
    RT_VERBATIM         /* =len fmt:text   format, and the text in str/len */
};

struct reply_token {
    enum reply_token_type type;
    const char *str;    /* into the buffer; not NUL-terminated */
    size_t len;
    int64_t n;          /* the integer, the element or pair count, the bool */
    double d;
    char format[4];     /* a verbatim string's format, NUL-terminated */
};

struct reply_reader {
    const char *p;      /* the next token */
    const char *end;
};

void reply_reader_init(struct reply_reader *r, const char *buf, size_t len);

/* The next token into t, and past it; false (nothing moved) when the bytes
 * there are not a whole, well-formed token. */
bool reply_reader_next(struct reply_reader *r, struct reply_token *t);

/* Past one whole reply: a token and, for an aggregate, all its elements
 * (an attribute: its pairs and the reply it annotates). Iterative, so any
 * nesting is skipped in constant stack. False when the bytes are not one
 * whole reply (the position is then unspecified). */
bool reply_reader_skip(struct reply_reader *r);

/* Every byte read? */
static inline bool
reply_reader_done(const struct reply_reader *r)
{
    return r->p == r->end;
}

/* Tokens an aggregate token is followed by (map and attribute: twice the
 * pairs; an attribute's annotated reply not counted); 0 for the others. */
uint64_t reply_token_children(const struct reply_token *t);

#endif
