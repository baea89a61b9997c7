/*
 * rdb_read.c - see rdb_read.h. The packed encodings' bytes (Redis 7.0.15's
 * ziplist.c, listpack.c, intset.c, zipmap.c):
 *
 *   intset    u32 encoding (2, 4 or 8), u32 count, the values, all LE.
 *   ziplist   u32 bytes, u32 tail offset, u16 count (65535: count them),
 *             entries, 0xFF. An entry: the previous entry's size (1 byte
 *             below 254, or 0xFE and 4 bytes LE), the encoding, the data:
 *             00llllll, 01llllll llllllll (BE), 10...... and 4 bytes BE:
 *             a string of that length; 0xC0 int16, 0xD0 int32, 0xE0
 *             int64, 0xF0 int24, 0xFE int8 (LE); 0xF1..0xFD 0..12.
 *   listpack  u32 bytes, u16 count (65535: count them), entries, 0xFF. An
 *             entry: encoding and data, then their size in 1 to 5 bytes
 *             read backwards (7 bits each, the high bit "more to the
 *             left"). 0xxxxxxx 7-bit uint; 10llllll string; 110xxxxx
 *             13-bit int; 1110llll llllllll string; 0xF0 and u32 LE
 *             string; 0xF1..0xF4 int16, int24, int32, int64 (LE).
 *   zipmap    u8 count (254: count them), then key, value pairs: a length
 *             (1 byte below 254, or 254 and 4 bytes LE), the key; a
 *             length, a free byte, the value, the free bytes; 0xFF.
 */
#include "lib/rdb_read.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crc64.h"
#include "lib/lzf.h"

#define ENC_INT8 0
#define ENC_INT16 1
#define ENC_INT32 2
#define ENC_LZF 3

/* LZF grows a string at most about 88 times (a 3-byte back reference
 * copies 264 bytes): a plain length beyond this ratio is a lie, refused
 * before anything is allocated for it. */
#define LZF_MAX_RATIO 128

static uint64_t
le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

/* v's decimal text into buf (at least 21 bytes), its length: what
 * snprintf("%" PRId64) writes, without its cost on every integer element
 * of a packed encoding. */
static size_t
i64_text(int64_t v, char *buf)
{
    char tmp[24];
    size_t n = 0, len = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        buf[len++] = '-';
    }
    while (n > 0) {
        buf[len++] = tmp[--n];
    }
    return len;
}

static int64_t
sign_extend(uint64_t v, int bits)
{
    uint64_t m = UINT64_C(1) << (bits - 1);
    return bits == 64 ? (int64_t)v : (int64_t)((v ^ m) - m);
}

bool
rdb_read_raw(struct rdb_cur *c, size_t n, const unsigned char **at)
{
    if (rdb_left(c) < n) {
        return false;
    }
    *at = c->base + c->off;
    c->off += n;
    return true;
}

bool
rdb_read_u8(struct rdb_cur *c, uint8_t *v)
{
    const unsigned char *p;
    if (!rdb_read_raw(c, 1, &p)) {
        return false;
    }
    *v = p[0];
    return true;
}

bool
rdb_read_le32(struct rdb_cur *c, uint32_t *v)
{
    const unsigned char *p;
    if (!rdb_read_raw(c, 4, &p)) {
        return false;
    }
    *v = (uint32_t)le(p, 4);
    return true;
}

bool
rdb_read_le64(struct rdb_cur *c, uint64_t *v)
{
    const unsigned char *p;
    if (!rdb_read_raw(c, 8, &p)) {
        return false;
    }
    *v = le(p, 8);
    return true;
}

bool
rdb_read_len_enc(struct rdb_cur *c, uint64_t *len, bool *encoded)
{
    const unsigned char *p;
    uint8_t b0;
    *encoded = false;
    if (!rdb_read_u8(c, &b0)) {
        return false;
    }
    switch (b0 >> 6) {
    case 0:
        *len = b0 & 0x3f;
        return true;
    case 1:
        if (!rdb_read_raw(c, 1, &p)) {
            return false;
        }
        *len = (uint64_t)(b0 & 0x3f) << 8 | p[0];
        return true;
    case 3:
        *encoded = true;
        *len = b0 & 0x3f;
        return true;
    default:
        break;
    }
    size_t n = b0 == 0x80 ? 4 : b0 == 0x81 ? 8 : 0;
    if (n == 0 || !rdb_read_raw(c, n, &p)) {
        return false;
    }
    *len = 0;
    for (size_t i = 0; i < n; i++) {
        *len = *len << 8 | p[i];
    }
    return true;
}

bool
rdb_read_len(struct rdb_cur *c, uint64_t *len)
{
    bool encoded;
    return rdb_read_len_enc(c, len, &encoded) && !encoded;
}

static bool
read_int_string(struct rdb_cur *c, uint64_t enc, struct rdb_str *s)
{
    const unsigned char *p;
    int n = enc == ENC_INT8 ? 1 : enc == ENC_INT16 ? 2 : 4;
    if (!rdb_read_raw(c, (size_t)n, &p)) {
        return false;
    }
    s->is_int = true;
    s->v = sign_extend(le(p, n), 8 * n);
    s->p = (const unsigned char *)s->text;
    s->len = i64_text(s->v, s->text);
    return true;
}

static bool
read_lzf(struct rdb_cur *c, struct rdb_str *s)
{
    uint64_t clen, plen;
    const unsigned char *in;
    if (!rdb_read_len(c, &clen) || !rdb_read_len(c, &plen) ||
        !rdb_read_raw(c, clen, &in) || plen == 0 ||
        plen / LZF_MAX_RATIO > clen) {
        return false;
    }
    s->lzf.len = 0;
    if (!mem_reserve(&s->lzf.p, &s->lzf.cap, 0, plen, 64) ||
        lzf_decompress(in, clen, s->lzf.p, plen) != plen) {
        return false;
    }
    s->lzf.len = plen;
    s->p = s->lzf.p;
    s->len = plen;
    return true;
}

bool
rdb_read_string(struct rdb_cur *c, struct rdb_str *s)
{
    uint64_t len;
    bool encoded;
    s->is_int = false;
    if (!rdb_read_len_enc(c, &len, &encoded)) {
        return false;
    }
    if (!encoded) {
        return rdb_read_raw(c, len, &s->p) && (s->len = len, true);
    }
    if (len == ENC_LZF) {
        return read_lzf(c, s);
    }
    return len <= ENC_INT32 && read_int_string(c, len, s);
}

void
rdb_str_free(struct rdb_str *s)
{
    mem_free(s->lzf.p);
    memset(&s->lzf, 0, sizeof(s->lzf));
}

bool
rdb_skip_string(struct rdb_cur *c)
{
    uint64_t len, clen, plen;
    bool encoded;
    const unsigned char *p;
    if (!rdb_read_len_enc(c, &len, &encoded)) {
        return false;
    }
    if (!encoded) {
        return rdb_read_raw(c, len, &p);
    }
    switch (len) {
    case ENC_INT8:
    case ENC_INT16:
    case ENC_INT32:
        return rdb_read_raw(c, len == ENC_INT8 ? 1 : len == ENC_INT16 ? 2 : 4,
                            &p);
    case ENC_LZF:
        return rdb_read_len(c, &clen) && rdb_read_len(c, &plen) &&
               rdb_read_raw(c, clen, &p);
    default:
        return false;
    }
}

/* A string appended to b. */
static bool
put_string(struct rdb_cur *c, struct rdb_str *s, struct membuf *b)
{
    return rdb_read_string(c, s) && membuf_put(b, s->p, s->len);
}

bool
rdb_read_function(struct rdb_cur *c, uint8_t opcode, struct membuf *code)
{
    struct rdb_str s = { 0 };
    if (opcode == RDB_OPCODE_FUNCTION2) {
        bool ok = put_string(c, &s, code);
        rdb_str_free(&s);
        return ok;
    }
    struct membuf name = { 0 };
    uint64_t has_desc;
    bool ok = put_string(c, &s, &name) && membuf_put(code, "#!", 2) &&
              put_string(c, &s, code) && membuf_put(code, " name=", 6) &&
              membuf_put(code, name.p, name.len) &&
              membuf_put(code, "\n", 1) && rdb_read_len(c, &has_desc) &&
              (has_desc == 0 || rdb_skip_string(c)) &&
              put_string(c, &s, code);
    mem_free(name.p);
    rdb_str_free(&s);
    return ok;
}

bool
rdb_read_double_text(struct rdb_cur *c, double *v)
{
    uint8_t n;
    const unsigned char *p;
    char buf[256];
    if (!rdb_read_u8(c, &n)) {
        return false;
    }
    switch (n) {
    case 253:
        *v = NAN;
        return true;
    case 254:
        *v = INFINITY;
        return true;
    case 255:
        *v = -INFINITY;
        return true;
    default:
        break;
    }
    if (!rdb_read_raw(c, n, &p)) {
        return false;
    }
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end;
    *v = strtod(buf, &end);
    return end != buf;          /* Redis's sscanf("%lg") read something */
}

bool
rdb_read_double_bin(struct rdb_cur *c, double *v)
{
    uint64_t bits;
    if (!rdb_read_le64(c, &bits)) {
        return false;
    }
    memcpy(v, &bits, sizeof(*v));
    return true;
}

bool
rdb_payload_verified(const unsigned char *p, size_t len)
{
    if (len < RDB_FOOTER) {
        return false;
    }
    const unsigned char *footer = p + len - RDB_FOOTER;
    unsigned version = (unsigned)footer[1] << 8 | footer[0];
    return version <= RDB_VERSION &&
           crc64_update(0, p, len - 8) == le(footer + 2, 8);
}

const unsigned char *
rdb_elem_text(const struct rdb_elem *e, char *buf, size_t *len)
{
    if (!e->is_int) {
        *len = e->len;
        return e->p;
    }
    *len = i64_text(e->v, buf);
    return (const unsigned char *)buf;
}

/* ---- intset ------------------------------------------------------------- */

bool
rdb_intset_check(const unsigned char *p, size_t len, uint32_t *count)
{
    if (len < 8) {
        return false;
    }
    uint32_t enc = (uint32_t)le(p, 4), n = (uint32_t)le(p + 4, 4);
    if ((enc != 2 && enc != 4 && enc != 8) || n == 0 ||
        (uint64_t)n * enc != len - 8) {
        return false;
    }
    int64_t prev = rdb_intset_get(p, 0);
    for (uint32_t i = 1; i < n; i++) {
        int64_t cur = rdb_intset_get(p, i);
        if (cur <= prev) {
            return false;           /* a duplicate, or out of order */
        }
        prev = cur;
    }
    *count = n;
    return true;
}

int64_t
rdb_intset_get(const unsigned char *p, uint32_t i)
{
    int enc = (int)le(p, 4);
    return sign_extend(le(p + 8 + (size_t)i * (size_t)enc, enc), 8 * enc);
}

/* ---- ziplist ------------------------------------------------------------ */

#define ZL_HEADER 10

/* An entry's parts: the previous entry's size, its header's size, its
 * data's size and whether it is an integer of how many bytes (-1: the
 * immediate 0..12 in the encoding byte). */
struct zl_entry {
    uint64_t prevlen;
    size_t header, data;
    int intbytes;               /* 0: a string */
};

/* The encoding at p (avail bytes there): false when unknown or cut. */
static bool
zl_encoding(const unsigned char *p, size_t avail, struct zl_entry *e)
{
    unsigned char b = p[0];
    e->intbytes = 0;
    switch (b >> 6) {
    case 0:
        e->header = 1;
        e->data = b & 0x3f;
        return true;
    case 1:
        e->header = 2;
        e->data = avail < 2 ? 0 : (size_t)(b & 0x3f) << 8 | p[1];
        return avail >= 2;
    case 2:
        e->header = 5;
        e->data = avail < 5 ? 0 : (size_t)p[1] << 24 | (size_t)p[2] << 16 |
                                      (size_t)p[3] << 8 | p[4];
        return avail >= 5;
    default:
        break;
    }
    e->header = 1;
    int n = b == 0xC0 ? 2 : b == 0xD0 ? 4 : b == 0xE0 ? 8 : b == 0xF0 ? 3
            : b == 0xFE ? 1 : (b >= 0xF1 && b <= 0xFD) ? -1 : 0;
    e->intbytes = n;
    e->data = n > 0 ? (size_t)n : 0;
    return n != 0;
}

/* The entry at off of a ziplist of len bytes, all within it. */
static bool
zl_entry_at(const unsigned char *zl, size_t len, size_t off,
            struct zl_entry *e)
{
    size_t avail = len - 1 - off;       /* up to the end byte */
    size_t pl = zl[off] < 254 ? 1 : 5;
    if (avail < pl + 1) {
        return false;
    }
    e->prevlen = pl == 1 ? zl[off] : le(zl + off + 1, 4);
    if (!zl_encoding(zl + off + pl, avail - pl, e)) {
        return false;
    }
    e->header += pl;
    return e->header <= avail && e->data <= avail - e->header;
}

bool
rdb_ziplist_check(const unsigned char *zl, size_t len, uint64_t *count)
{
    if (len < ZL_HEADER + 1 || le(zl, 4) != len || zl[len - 1] != 0xFF ||
        le(zl + 4, 4) > len - 1) {
        return false;
    }
    size_t off = ZL_HEADER, prev = 0, prev_size = 0;
    uint64_t n = 0;
    while (zl[off] != 0xFF) {
        struct zl_entry e;
        if (!zl_entry_at(zl, len, off, &e) || e.prevlen != prev_size) {
            return false;
        }
        prev = off;
        prev_size = e.header + e.data;
        off += prev_size;
        n++;
    }
    uint64_t header_count = le(zl + 8, 2);
    if (off != len - 1 || (n > 0 && prev != le(zl + 4, 4)) ||
        (header_count != UINT16_MAX && header_count != n)) {
        return false;
    }
    *count = n;
    return true;
}

static bool
zl_next(struct rdb_pack_iter *it, struct rdb_elem *e)
{
    const unsigned char *p = it->p;
    if (*p == 0xFF) {
        return false;
    }
    struct zl_entry z;
    p += p[0] < 254 ? 1 : 5;
    /* Checked already: the bounds cannot fail here. */
    (void)zl_encoding(p, SIZE_MAX, &z);
    p += z.header;
    e->is_int = z.intbytes != 0;
    if (z.intbytes < 0) {
        e->v = (p[-1] & 0x0f) - 1;
    } else if (z.intbytes > 0) {
        e->v = sign_extend(le(p, z.intbytes), 8 * z.intbytes);
    } else {
        e->p = p;
        e->len = z.data;
    }
    it->p = p + z.data;
    return true;
}

/* ---- listpack ----------------------------------------------------------- */

#define LP_HEADER 6

/* Bytes of the encoding and data of the entry at p (avail bytes from p to
 * the end): 0 when unknown or cut. */
static size_t
lp_entry_size(const unsigned char *p, size_t avail)
{
    unsigned char b = p[0];
    uint64_t n;
    if (b < 0x80) {
        return 1;
    }
    if ((b & 0xC0) == 0x80) {
        n = 1 + (uint64_t)(b & 0x3f);
    } else if ((b & 0xE0) == 0xC0) {
        n = 2;
    } else if ((b & 0xF0) == 0xE0) {
        n = avail < 2 ? 0 : 2 + ((uint64_t)(b & 0x0f) << 8 | p[1]);
    } else if (b == 0xF0) {
        n = avail < 5 ? 0 : 5 + le(p + 1, 4);
    } else if (b >= 0xF1 && b <= 0xF4) {
        static const uint8_t sizes[] = { 3, 4, 5, 9 };
        n = sizes[b - 0xF1];
    } else {
        return 0;
    }
    return n <= avail ? (size_t)n : 0;
}

static size_t
lp_backlen_size(uint64_t l)
{
    return l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3
           : l < 268435455 ? 4 : 5;
}

/* The back-length ending at p (reading towards lo): UINT64_MAX when it
 * runs past 5 bytes or below lo. */
static uint64_t
lp_backlen(const unsigned char *p, const unsigned char *lo)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        v |= (uint64_t)(p[0] & 127) << shift;
        if (!(p[0] & 128)) {
            return v;
        }
        shift += 7;
        if (shift > 28 || p == lo) {
            return UINT64_MAX;
        }
        p--;
    }
}

bool
rdb_listpack_check(const unsigned char *lp, size_t len, uint64_t *count)
{
    if (len < LP_HEADER + 1 || le(lp, 4) != len || lp[len - 1] != 0xFF) {
        return false;
    }
    size_t off = LP_HEADER;
    uint64_t n = 0;
    while (off < len - 1 && lp[off] != 0xFF) {
        size_t avail = len - 1 - off;
        size_t size = lp_entry_size(lp + off, avail);
        if (size == 0) {
            return false;
        }
        size_t bl = lp_backlen_size(size);
        if (bl > avail - size ||
            lp_backlen(lp + off + size + bl - 1, lp + off + size) != size) {
            return false;
        }
        off += size + bl;
        n++;
    }
    uint64_t header_count = le(lp + 4, 2);
    if (off != len - 1 ||
        (header_count != UINT16_MAX && header_count != n)) {
        return false;
    }
    *count = n;
    return true;
}

static bool
lp_next(struct rdb_pack_iter *it, struct rdb_elem *e)
{
    const unsigned char *p = it->p;
    unsigned char b = p[0];
    if (b == 0xFF) {
        return false;
    }
    size_t size = lp_entry_size(p, SIZE_MAX);
    e->is_int = true;
    if (b < 0x80) {
        e->v = b;
    } else if ((b & 0xC0) == 0x80) {
        e->is_int = false;
        e->p = p + 1;
        e->len = size - 1;
    } else if ((b & 0xE0) == 0xC0) {
        e->v = sign_extend((uint64_t)(b & 0x1f) << 8 | p[1], 13);
    } else if ((b & 0xF0) == 0xE0) {
        e->is_int = false;
        e->p = p + 2;
        e->len = size - 2;
    } else if (b == 0xF0) {
        e->is_int = false;
        e->p = p + 5;
        e->len = size - 5;
    } else {
        int n = (int)size - 1;
        e->v = sign_extend(le(p + 1, n), 8 * n);
    }
    it->p = p + size + lp_backlen_size(size);
    return true;
}

/* ---- zipmap ------------------------------------------------------------- */

/* A zipmap length at off (below end): its value and the bytes it took. */
static bool
zm_len(const unsigned char *zm, size_t end, size_t off, uint64_t *v,
       size_t *took)
{
    *took = zm[off] < 254 ? 1 : 5;
    if (*took > end - off) {
        return false;
    }
    *v = *took == 1 ? zm[off] : le(zm + off + 1, 4);
    return true;
}

bool
rdb_zipmap_check(const unsigned char *zm, size_t len, uint64_t *count)
{
    if (len < 2 || zm[len - 1] != 0xFF) {
        return false;
    }
    size_t end = len - 1, off = 1, took;
    uint64_t n = 0, l;
    while (off < end && zm[off] != 0xFF) {
        if (!zm_len(zm, end, off, &l, &took) || l > end - off - took) {
            return false;
        }
        off += took + l;
        if (off >= end || !zm_len(zm, end, off, &l, &took) ||
            took + 1 > end - off) {
            return false;
        }
        off += took;
        uint64_t free = zm[off++];
        if (l > end - off || free > end - off - l) {
            return false;
        }
        off += l + free;
        n++;
    }
    if (off != end || n == 0 || (zm[0] != 254 && zm[0] != n)) {
        return false;
    }
    *count = n;
    return true;
}

static bool
zm_next(struct rdb_pack_iter *it, struct rdb_elem *e)
{
    const unsigned char *p = it->p;
    if (!it->value && p[0] == 0xFF) {
        return false;
    }
    size_t took = p[0] < 254 ? 1 : 5;
    e->is_int = false;
    e->len = took == 1 ? p[0] : (size_t)le(p + 1, 4);
    p += took;
    size_t free = 0;
    if (it->value) {
        free = *p++;
    }
    e->p = p;
    it->p = p + e->len + free;
    it->value = !it->value;
    return true;
}

/* ---- iterators ---------------------------------------------------------- */

enum { KIND_ZIPLIST, KIND_LISTPACK, KIND_ZIPMAP };

void
rdb_ziplist_iter(struct rdb_pack_iter *it, const unsigned char *zl)
{
    it->p = zl + ZL_HEADER;
    it->kind = KIND_ZIPLIST;
    it->value = false;
}

void
rdb_listpack_iter(struct rdb_pack_iter *it, const unsigned char *lp)
{
    it->p = lp + LP_HEADER;
    it->kind = KIND_LISTPACK;
    it->value = false;
}

void
rdb_zipmap_iter(struct rdb_pack_iter *it, const unsigned char *zm)
{
    it->p = zm + 1;
    it->kind = KIND_ZIPMAP;
    it->value = false;
}

bool
rdb_pack_next(struct rdb_pack_iter *it, struct rdb_elem *e)
{
    switch (it->kind) {
    case KIND_ZIPLIST:
        return zl_next(it, e);
    case KIND_LISTPACK:
        return lp_next(it, e);
    default:
        return zm_next(it, e);
    }
}
