/*
 * rdb_write.c - see rdb_write.h.
 */
#include "lib/rdb_write.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/crc64.h"
#include "lib/lzf.h"
#include "lib/num.h"

#define ENC_INT8 0xC0
#define ENC_INT16 0xC1
#define ENC_INT32 0xC2
#define ENC_LZF 0xC3
/* Redis tries the integer encoding on strings this short, and LZF on
 * strings longer than this (rdbSaveRawString()). */
#define INT_TRY_MAX 11
#define LZF_MIN 21

#define LP_HEADER 6
#define LP_END 0xFF
#define LP_COUNT_UNKNOWN 65535

/* ---- lengths, strings, doubles -------------------------------------------- */

bool
rdb_put_byte(struct membuf *b, uint8_t v)
{
    return membuf_put(b, &v, 1);
}

bool
rdb_put_len(struct membuf *b, uint64_t len)
{
    unsigned char buf[9];
    size_t n;
    if (len < 64) {
        buf[0] = (unsigned char)len;
        n = 1;
    } else if (len < 16384) {
        buf[0] = (unsigned char)(0x40 | (len >> 8));
        buf[1] = (unsigned char)len;
        n = 2;
    } else if (len <= UINT32_MAX) {
        buf[0] = 0x80;
        for (int i = 0; i < 4; i++) {
            buf[1 + i] = (unsigned char)(len >> (24 - 8 * i));
        }
        n = 5;
    } else {
        buf[0] = 0x81;
        for (int i = 0; i < 8; i++) {
            buf[1 + i] = (unsigned char)(len >> (56 - 8 * i));
        }
        n = 9;
    }
    return membuf_put(b, buf, n);
}

static void
put_le(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/* Redis's rdbEncodeInteger(): the encoded bytes into enc, their count, or
 * 0 when v needs more than 32 bits. */
static size_t
encode_int(int64_t v, unsigned char enc[5])
{
    size_t n;
    if (v >= INT8_MIN && v <= INT8_MAX) {
        enc[0] = ENC_INT8;
        n = 1;
    } else if (v >= INT16_MIN && v <= INT16_MAX) {
        enc[0] = ENC_INT16;
        n = 2;
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        enc[0] = ENC_INT32;
        n = 4;
    } else {
        return 0;
    }
    put_le(enc + 1, (uint64_t)v, n);
    return n + 1;
}

/* Redis's rdbSaveLzfStringObject(): 1 written, 0 when LZF does not save
 * 4 bytes, -1 when memory ran out. */
static int
put_lzf(struct membuf *b, const void *s, size_t len)
{
    size_t outlen = len - 4;
    unsigned char *out = mem_malloc(outlen + 1);
    if (out == NULL) {
        return -1;
    }
    size_t n = lzf_compress(s, len, out, outlen);
    int rc = n == 0 ? 0
             : rdb_put_byte(b, ENC_LZF) && rdb_put_len(b, n) &&
                       rdb_put_len(b, len) && membuf_put(b, out, n)
                 ? 1
                 : -1;
    mem_free(out);
    return rc;
}

bool
rdb_put_string(struct membuf *b, const void *s, size_t len)
{
    int64_t v;
    unsigned char enc[5];
    size_t n;
    if (len <= INT_TRY_MAX && num_parse_i64(s, len, &v) &&
        (n = encode_int(v, enc)) > 0) {
        return membuf_put(b, enc, n);
    }
    if (len >= LZF_MIN) {
        int rc = put_lzf(b, s, len);
        if (rc != 0) {
            return rc > 0;
        }
    }
    return rdb_put_len(b, len) && membuf_put(b, s, len);
}

bool
rdb_put_int_string(struct membuf *b, int64_t v)
{
    unsigned char enc[5];
    size_t n = encode_int(v, enc);
    if (n > 0) {
        return membuf_put(b, enc, n);
    }
    char text[NUM_I64_MAXLEN];
    n = num_fmt_i64(text, v);
    return rdb_put_len(b, n) && membuf_put(b, text, n);
}

bool
rdb_put_double(struct membuf *b, double d)
{
    uint64_t u;
    unsigned char buf[8];
    memcpy(&u, &d, sizeof(u));
    put_le(buf, u, 8);
    return membuf_put(b, buf, 8);
}

bool
rdb_put_footer(struct membuf *b, size_t from)
{
    unsigned char footer[10] = { RDB_VERSION & 0xff, RDB_VERSION >> 8 };
    if (!membuf_put(b, footer, 2)) {
        return false;
    }
    put_le(footer + 2, crc64_update(0, b->p + from, b->len - from), 8);
    return membuf_put(b, footer + 2, 8);
}

/* ---- listpack -------------------------------------------------------------- */

/* lpEncodeGetType()'s integer encodings: the bytes into enc, their count. */
static size_t
lp_encode_int(int64_t v, unsigned char enc[9])
{
    uint64_t u = (uint64_t)v;
    if (v >= 0 && v <= 127) {
        enc[0] = (unsigned char)v;
        return 1;
    }
    if (v >= -4096 && v <= 4095) {
        u &= 0x1fff;                    /* 13 bits, two's complement */
        enc[0] = (unsigned char)(0xC0 | (u >> 8));
        enc[1] = (unsigned char)u;
        return 2;
    }
    size_t n = v >= INT16_MIN && v <= INT16_MAX     ? 2
               : v >= -8388608 && v <= 8388607      ? 3
               : v >= INT32_MIN && v <= INT32_MAX   ? 4
                                                    : 8;
    enc[0] = n == 2 ? 0xF1 : n == 3 ? 0xF2 : n == 4 ? 0xF3 : 0xF4;
    put_le(enc + 1, u, n);
    return n + 1;
}

/* A string entry's head (its encoding and length); its size. */
static size_t
lp_string_head(size_t len, unsigned char head[5])
{
    if (len < 64) {
        head[0] = (unsigned char)(0x80 | len);
        return 1;
    }
    if (len < 4096) {
        head[0] = (unsigned char)(0xE0 | (len >> 8));
        head[1] = (unsigned char)len;
        return 2;
    }
    head[0] = 0xF0;
    put_le(head + 1, len, 4);
    return 5;
}

/* lpEncodeBacklen(): the entry's size l, read from its end backwards. */
static size_t
lp_backlen(uint64_t l, unsigned char buf[5])
{
    size_t n = l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3
               : l < 268435455 ? 4 : 5;
    for (size_t i = 0; i < n; i++) {
        unsigned char seven = (unsigned char)((l >> (7 * (n - 1 - i))) & 127);
        buf[i] = i == 0 ? seven : (unsigned char)(seven | 128);
    }
    return n;
}

size_t
rdb_lp_entry_size(const void *s, size_t len)
{
    int64_t v;
    unsigned char tmp[9];
    size_t n = num_parse_i64(s, len, &v) ? lp_encode_int(v, tmp)
                                         : lp_string_head(len, tmp) + len;
    return n + lp_backlen(n, tmp);
}

bool
rdb_lp_begin(struct rdb_listpack *lp, struct membuf *b)
{
    unsigned char header[LP_HEADER] = { 0 };
    lp->b = b;
    lp->start = b->len;
    lp->count = 0;
    return membuf_put(b, header, sizeof(header));
}

static bool
lp_put_entry(struct rdb_listpack *lp, const unsigned char *head, size_t hn,
             const void *data, size_t len)
{
    unsigned char back[5];
    size_t bn = lp_backlen(hn + len, back);
    lp->count++;
    return membuf_put(lp->b, head, hn) && membuf_put(lp->b, data, len) &&
           membuf_put(lp->b, back, bn);
}

bool
rdb_lp_add_int(struct rdb_listpack *lp, int64_t v)
{
    unsigned char enc[9];
    return lp_put_entry(lp, enc, lp_encode_int(v, enc), NULL, 0);
}

bool
rdb_lp_add(struct rdb_listpack *lp, const void *s, size_t len)
{
    int64_t v;
    unsigned char head[5];
    if (num_parse_i64(s, len, &v)) {
        return rdb_lp_add_int(lp, v);
    }
    return lp_put_entry(lp, head, lp_string_head(len, head), s, len);
}

bool
rdb_lp_end(struct rdb_listpack *lp)
{
    if (!rdb_put_byte(lp->b, LP_END)) {
        return false;
    }
    unsigned char *h = lp->b->p + lp->start;
    put_le(h, lp->b->len - lp->start, 4);
    put_le(h + 4, lp->count < LP_COUNT_UNKNOWN ? lp->count : LP_COUNT_UNKNOWN,
           2);
    return true;
}

/* ---- intset ----------------------------------------------------------------- */

bool
rdb_put_intset(struct membuf *b, const int64_t *v, size_t n)
{
    size_t width = 2;
    for (size_t i = 0; i < n; i++) {
        size_t w = v[i] >= INT16_MIN && v[i] <= INT16_MAX   ? 2
                   : v[i] >= INT32_MIN && v[i] <= INT32_MAX ? 4
                                                            : 8;
        width = w > width ? w : width;
    }
    unsigned char head[8];
    put_le(head, width, 4);
    put_le(head + 4, n, 4);
    if (!membuf_put(b, head, 8)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char m[8];
        put_le(m, (uint64_t)v[i], width);
        if (!membuf_put(b, m, width)) {
            return false;
        }
    }
    return true;
}
