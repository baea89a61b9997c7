/*
 * reply_read.c - the reply reader (protocol/reply_read.h).
 *
 * Each token is one line (type byte, text, CRLF), and for the blob types
 * (bulk, blob error, verbatim) a length-counted payload and CRLF after it.
 * So reading is: find the line, decode its text by type, take the payload
 * if any. Nothing is written until the whole token checked out, so a
 * failed read leaves the reader where it was. The smallest token ("_" and
 * CRLF) is 3 bytes: an aggregate claiming more elements than the bytes
 * left could hold is refused at once, so no caller sizes anything by a
 * count the buffer cannot back.
 */
#include "protocol/reply_read.h"

#include <string.h>

#include "lib/num.h"

#define MIN_TOKEN_LEN 3

void
reply_reader_init(struct reply_reader *r, const char *buf, size_t len)
{
    r->p = buf;
    r->end = buf + len;
}

/* The text of the line at p (after its type byte) up to its CRLF, which
 * must come before end with no CR or LF inside the text; *next is the
 * byte after the CRLF. */
static bool
read_line(const char *p, const char *end, const char **text, size_t *len,
          const char **next)
{
    const char *start = p + 1;
    const char *cr = memchr(start, '\r', (size_t)(end - start));
    if (cr == NULL || cr + 1 >= end || cr[1] != '\n' ||
        memchr(start, '\n', (size_t)(cr - start)) != NULL) {
        return false;
    }
    *text = start;
    *len = (size_t)(cr - start);
    *next = cr + 2;
    return true;
}

/* A blob's payload of the length the line gave, and its CRLF. */
static bool
read_payload(const char *p, const char *end, int64_t len, const char **next)
{
    if (len < 0 || (uint64_t)len > (uint64_t)(end - p) ||
        (size_t)(end - p) - (size_t)len < 2 || p[len] != '\r' ||
        p[len + 1] != '\n') {
        return false;
    }
    *next = p + len + 2;
    return true;
}

/* A double's text as strtod reads all of it (Redis writes "inf", "-inf"
 * and "nan" among them), no longer than Redis's longest double
 * (NUM_STRTOD_MAXLEN); a leading space refused, though strtod skips it. */
static bool
parse_double(const char *s, size_t len, double *out)
{
    return len > 0 && s[0] != ' ' && num_strtod(s, len, out);
}

static bool
parse_big_number(const char *s, size_t len)
{
    size_t i = len > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (i == len) {
        return false;
    }
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
    }
    return true;
}

/* An aggregate's count: the children it announces must fit in the bytes
 * left after its line. */
static bool
aggregate_fits(const struct reply_token *t, const char *next, const char *end)
{
    if (t->n < 0) {
        return false;
    }
    uint64_t room = (uint64_t)(end - next) / MIN_TOKEN_LEN;
    return reply_token_children(t) <= room;
}

/* The aggregate a type byte opens, if it opens one. */
static bool
aggregate_type(char c, enum reply_token_type *type)
{
    switch (c) {
    case '*':
        *type = RT_ARRAY;
        return true;
    case '%':
        *type = RT_MAP;
        return true;
    case '~':
        *type = RT_SET;
        return true;
    case '>':
        *type = RT_PUSH;
        return true;
    case '|':
        *type = RT_ATTRIBUTE;
        return true;
    default:
        return false;
    }
}

/* The line's text decoded by its type byte c (not a blob's); next is
 * the byte after the line. */
static bool
decode(char c, const char *text, size_t len, const char *next,
       const char *end, struct reply_token *t)
{
    t->str = text;
    t->len = len;
    switch (c) {
    case '+':
        t->type = RT_STATUS;
        return true;
    case '-':
        t->type = RT_ERROR;
        return true;
    case ':':
        t->type = RT_INT;
        return num_parse_i64(text, len, &t->n);
    case '_':
        t->type = RT_NULL;
        return len == 0;
    case '#':
        t->type = RT_BOOL;
        t->n = len == 1 && text[0] == 't';
        return len == 1 && (text[0] == 't' || text[0] == 'f');
    case ',':
        t->type = RT_DOUBLE;
        return parse_double(text, len, &t->d);
    case '(':
        t->type = RT_BIG_NUMBER;
        return parse_big_number(text, len);
    default:
        break;
    }
    if (!aggregate_type(c, &t->type) || !num_parse_i64(text, len, &t->n)) {
        return false;
    }
    if (t->type == RT_ARRAY && t->n == -1) {
        t->type = RT_NULL_ARRAY;
        t->n = 0;
        return true;
    }
    return aggregate_fits(t, next, end);
}

/* Bulk, blob error, verbatim: the line holds the payload's length. */
static bool
decode_blob(char c, const char *text, size_t len, const char **next,
            const char *end, struct reply_token *t)
{
    int64_t n;
    if (!num_parse_i64(text, len, &n)) {
        return false;
    }
    if (c == '$' && n == -1) {
        t->type = RT_NULL_BULK;
        t->str = NULL;
        t->len = 0;
        return true;
    }
    const char *payload = *next;
    if (!read_payload(payload, end, n, next)) {
        return false;
    }
    t->str = payload;
    t->len = (size_t)n;
    if (c == '$') {
        t->type = RT_BULK;
        return true;
    }
    if (c == '!') {
        t->type = RT_BLOB_ERROR;
        return true;
    }
    /* Verbatim: three format bytes and ':' before the text. */
    if (n < 4 || payload[3] != ':') {
        return false;
    }
    t->type = RT_VERBATIM;
    memcpy(t->format, payload, 3);
    t->format[3] = '\0';
    t->str = payload + 4;
    t->len = (size_t)n - 4;
    return true;
}

bool
reply_reader_next(struct reply_reader *r, struct reply_token *t)
{
    const char *text, *next;
    size_t len;
    if (r->p >= r->end || !read_line(r->p, r->end, &text, &len, &next)) {
        return false;
    }
    char c = r->p[0];
    struct reply_token tok = { .format = "" };
    bool ok = c == '$' || c == '!' || c == '='
                  ? decode_blob(c, text, len, &next, r->end, &tok)
                  : decode(c, text, len, next, r->end, &tok);
    if (!ok) {
        return false;
    }
    *t = tok;
    r->p = next;
    return true;
}

uint64_t
reply_token_children(const struct reply_token *t)
{
    switch (t->type) {
    case RT_ARRAY:
    case RT_SET:
    case RT_PUSH:
        return (uint64_t)t->n;
    case RT_MAP:
    case RT_ATTRIBUTE:
        return 2 * (uint64_t)t->n;
    default:
        return 0;
    }
}

bool
reply_reader_skip(struct reply_reader *r)
{
    /* Tokens still owed: each read pays one and adds its children; an
     * attribute also owes the reply it annotates. */
    uint64_t owed = 1;
    struct reply_token t;
    while (owed > 0) {
        if (!reply_reader_next(r, &t)) {
            return false;
        }
        owed--;
        owed += reply_token_children(&t);
        if (t.type == RT_ATTRIBUTE) {
            owed++;
        }
    }
    return true;
}
