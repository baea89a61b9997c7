/*
 * reply.c - RESP reply composer (see reply.h).
 *
 * Small replies are written straight into reserved tail space of the obuf:
 * one bounds check and no intermediate copy.
 */
#include "protocol/reply.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/num.h"

/* Longest header: type byte, 20 digits and a sign, CRLF. */
#define HDR_MAX 24

static int
reply_header(struct obuf *o, char type, int64_t n)
{
    char *p = obuf_reserve(o, HDR_MAX);
    if (p == NULL) {
        return -1;
    }
    size_t len = 0;
    p[len++] = type;
    len += num_fmt_i64(p + len, n);
    p[len++] = '\r';
    p[len++] = '\n';
    obuf_commit(o, len);
    return 0;
}

int
reply_status(struct obuf *o, const char *s)
{
    size_t n = strlen(s);
    if (obuf_append(o, "+", 1) < 0 || obuf_append(o, s, n) < 0) {
        return -1;
    }
    return obuf_append(o, "\r\n", 2);
}

int
reply_ok(struct obuf *o)
{
    return obuf_append(o, "+OK\r\n", 5);
}

/* s with each CR and LF turned into a space, copied in the runs between
 * them: the text of a line that must stay one line whatever s holds. */
static int
append_mapped(struct obuf *o, const char *s, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r' || s[i] == '\n') {
            if (obuf_append(o, s + start, i - start) < 0 ||
                obuf_append(o, " ", 1) < 0) {
                return -1;
            }
            start = i + 1;
        }
    }
    return obuf_append(o, s + start, len - start);
}

/* type, s mapped, CRLF. */
static int
line_mapped(struct obuf *o, char type, const char *s, size_t len)
{
    if (obuf_append(o, &type, 1) < 0 || append_mapped(o, s, len) < 0) {
        return -1;
    }
    return obuf_append(o, "\r\n", 2);
}

int
reply_error(struct obuf *o, const char *msg, size_t len)
{
    return line_mapped(o, '-', msg, len);
}

int
reply_status_bytes(struct obuf *o, const char *s, size_t len)
{
    return line_mapped(o, '+', s, len);
}

int
reply_errorz(struct obuf *o, const char *msg)
{
    return reply_error(o, msg, strlen(msg));
}

int
reply_int(struct obuf *o, int64_t v)
{
    return reply_header(o, ':', v);
}

int
reply_bulk(struct obuf *o, const void *s, size_t len)
{
    if (reply_header(o, '$', (int64_t)len) < 0 ||
        obuf_append(o, s, len) < 0) {
        return -1;
    }
    return obuf_append(o, "\r\n", 2);
}

int
reply_bulkz(struct obuf *o, const char *s)
{
    return reply_bulk(o, s, strlen(s));
}

int
reply_double(struct obuf *o, double d, int proto)
{
    char buf[64];
    int n = isinf(d) ? snprintf(buf, sizeof(buf), d > 0 ? "inf" : "-inf")
                     : snprintf(buf, sizeof(buf), "%.17g", d);
    if (proto != 3) {
        return reply_bulk(o, buf, (size_t)n);
    }
    char line[72];
    n = snprintf(line, sizeof(line), ",%s\r\n", buf);
    return obuf_append(o, line, (size_t)n);
}

int
reply_double_text(struct obuf *o, const char *s, size_t len, int proto)
{
    if (proto != 3) {
        return reply_bulk(o, s, len);
    }
    int rc = obuf_append(o, ",", 1);
    rc |= obuf_append(o, s, len);
    return rc | obuf_append(o, "\r\n", 2);
}

int
reply_bulk_i64(struct obuf *o, int64_t v)
{
    char buf[NUM_I64_MAXLEN];
    return reply_bulk(o, buf, num_fmt_i64(buf, v));
}

int
reply_bulk_u64(struct obuf *o, uint64_t v)
{
    char buf[NUM_I64_MAXLEN];
    return reply_bulk(o, buf, num_fmt_u64(buf, v));
}

int
reply_null(struct obuf *o, int proto)
{
    if (proto >= 3) {
        return obuf_append(o, "_\r\n", 3);
    }
    return obuf_append(o, "$-1\r\n", 5);
}

int
reply_null_array(struct obuf *o, int proto)
{
    return proto >= 3 ? obuf_append(o, "_\r\n", 3)
                      : obuf_append(o, "*-1\r\n", 5);
}

int
reply_array(struct obuf *o, size_t n)
{
    return reply_header(o, '*', (int64_t)n);
}

int
reply_map(struct obuf *o, size_t pairs, int proto)
{
    if (proto >= 3) {
        return reply_header(o, '%', (int64_t)pairs);
    }
    return reply_header(o, '*', (int64_t)(pairs * 2));
}

int
reply_set(struct obuf *o, size_t n, int proto)
{
    return reply_header(o, proto >= 3 ? '~' : '*', (int64_t)n);
}

int
reply_verbatim(struct obuf *o, const char *s, size_t len, int proto)
{
    return reply_verbatim_as(o, s, len, "txt", proto);
}

int
reply_verbatim_as(struct obuf *o, const char *s, size_t len,
                  const char format[3], int proto)
{
    if (proto < 3) {
        return reply_bulk(o, s, len);
    }
    if (reply_header(o, '=', (int64_t)len + 4) < 0 ||
        obuf_append(o, format, 3) < 0 || obuf_append(o, ":", 1) < 0 ||
        obuf_append(o, s, len) < 0) {
        return -1;
    }
    return obuf_append(o, "\r\n", 2);
}

int
reply_big_number(struct obuf *o, const char *s, size_t len, int proto)
{
    if (proto >= 3) {
        return line_mapped(o, '(', s, len);
    }
    /* Mapping keeps the length, so the bulk's header holds. */
    if (reply_header(o, '$', (int64_t)len) < 0 ||
        append_mapped(o, s, len) < 0) {
        return -1;
    }
    return obuf_append(o, "\r\n", 2);
}

/* ":<v>\r\n" at p (room for HDR_MAX bytes); the length. The one- and
 * two-digit values and -1 (the "allowed" retry_after) that fill most
 * limiter replies are written digit by digit, the rest by num_fmt_i64. */
static inline size_t
put_int_line(char *p, int64_t v)
{
    size_t n;
    p[0] = ':';
    if ((uint64_t)v < 10) {
        p[1] = (char)('0' + v);
        n = 2;
    } else if ((uint64_t)v < 100) {
        unsigned tens = (unsigned)v / 10;
        p[1] = (char)('0' + tens);
        p[2] = (char)('0' + ((unsigned)v - 10 * tens));
        n = 3;
    } else if (v == -1) {
        p[1] = '-';
        p[2] = '1';
        n = 3;
    } else {
        n = 1 + num_fmt_i64(p + 1, v);
    }
    p[n] = '\r';
    p[n + 1] = '\n';
    return n + 2;
}

int
reply_int5(struct obuf *o, const int64_t v[5])
{
    char *p = obuf_reserve(o, 4 + 5 * HDR_MAX);
    if (p == NULL) {
        return -1;
    }
    memcpy(p, "*5\r\n", 4);
    size_t len = 4;
    len += put_int_line(p + len, v[0]);
    len += put_int_line(p + len, v[1]);
    len += put_int_line(p + len, v[2]);
    len += put_int_line(p + len, v[3]);
    len += put_int_line(p + len, v[4]);
    obuf_commit(o, len);
    return 0;
}
