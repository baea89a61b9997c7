/*
 * lzf.c - see lzf.h. Written from the format and the compressor's choices
 * (its hash, its table, when it gives up); positions, not pointers.
 */
#include "lib/lzf.h"

#include <stdbool.h>
#include <string.h>

#define HLOG 16
#define HSIZE (1u << HLOG)
#define MAX_LIT 32
#define MAX_OFF (1u << 13)
#define MAX_REF ((1u << 8) + (1u << 3))

/* The slot of each 3-byte sequence's hash: the position where it was last
 * seen, plus one (0: never). */
static uint32_t table[HSIZE];

static inline uint32_t
slot(uint32_t h)
{
    return ((h >> (3 * 8 - HLOG)) - h * 5) & (HSIZE - 1);
}

/* How far the match at ip, with ref, runs (the compressor's index: the
 * bytes matched are its value, less for a match cut by maxlen). */
static unsigned
match_length(const uint8_t *in, size_t ref, size_t ip, size_t maxlen)
{
    unsigned len = 2;
    if (maxlen > 16) {
        for (int k = 0; k < 16; k++) {
            len++;
            if (in[ref + len] != in[ip + len]) {
                return len;
            }
        }
    }
    do {
        len++;
    } while (len < maxlen && in[ref + len] == in[ip + len]);
    return len;
}

struct lzf_out {
    uint8_t *p;
    size_t op;
    int lit;
};

static inline void
literal(struct lzf_out *o, uint8_t byte)
{
    o->lit++;
    o->p[o->op++] = byte;
    if (o->lit == MAX_LIT) {
        o->p[o->op - (size_t)o->lit - 1] = (uint8_t)(o->lit - 1);
        o->lit = 0;
        o->op++;
    }
}

/* A back reference of len (the match's index less 2) at off. */
static inline void
backref(struct lzf_out *o, unsigned len, size_t off)
{
    o->p[o->op - (size_t)o->lit - 1] = (uint8_t)(o->lit - 1);
    o->op -= o->lit == 0;
    if (len < 7) {
        o->p[o->op++] = (uint8_t)((off >> 8) + (len << 5));
    } else {
        o->p[o->op++] = (uint8_t)((off >> 8) + (7u << 5));
        o->p[o->op++] = (uint8_t)(len - 7);
    }
    o->p[o->op++] = (uint8_t)off;
    o->lit = 0;
    o->op++;
}

static inline void
remember(const uint8_t *in, size_t ip, uint32_t *h)
{
    *h = (*h << 8) | in[ip + 2];
    table[slot(*h)] = (uint32_t)ip + 1;
}

size_t
lzf_compress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
    if (in_len < 3 || out_len == 0 || in_len >= UINT32_MAX) {
        return 0;
    }
    memset(table, 0, sizeof(table));
    struct lzf_out o = { out, 1, 0 };
    size_t ip = 0;
    uint32_t h = (uint32_t)in[0] << 8 | in[1];
    while (ip < in_len - 2) {
        h = (h << 8) | in[ip + 2];
        uint32_t *s = &table[slot(h)];
        size_t ref = *s;                /* position + 1 */
        *s = (uint32_t)ip + 1;
        if (ref > 1 && ip - ref < MAX_OFF && in[ref - 1 + 2] == in[ip + 2] &&
            in[ref - 1] == in[ip] && in[ref] == in[ip + 1]) {
            ref--;
            size_t off = ip - ref - 1;
            size_t maxlen = in_len - ip - 2;
            maxlen = maxlen > MAX_REF ? MAX_REF : maxlen;
            if (o.op + 4 >= out_len && o.op - (o.lit == 0) + 4 >= out_len) {
                return 0;
            }
            unsigned len = match_length(in, ref, ip, maxlen) - 2;
            backref(&o, len, off);
            ip += len + 2;
            if (ip >= in_len - 2) {
                break;
            }
            ip -= 2;
            h = (uint32_t)in[ip] << 8 | in[ip + 1];
            remember(in, ip, &h);
            ip++;
            remember(in, ip, &h);
            ip++;
        } else {
            if (o.op >= out_len) {
                return 0;
            }
            literal(&o, in[ip++]);
        }
    }
    if (o.op + 3 > out_len) {
        return 0;
    }
    while (ip < in_len) {
        literal(&o, in[ip++]);
    }
    o.p[o.op - (size_t)o.lit - 1] = (uint8_t)(o.lit - 1);
    o.op -= o.lit == 0;
    return o.op;
}

size_t
lzf_decompress(const uint8_t *in, size_t in_len, uint8_t *out,
               size_t out_len)
{
    size_t ip = 0, op = 0;
    while (ip < in_len) {
        unsigned ctrl = in[ip++];
        if (ctrl < 32) {
            size_t n = ctrl + 1;
            if (n > in_len - ip || n > out_len - op) {
                return 0;
            }
            memcpy(out + op, in + ip, n);
            ip += n;
            op += n;
            continue;
        }
        size_t len = ctrl >> 5;
        if (len == 7) {
            if (ip >= in_len) {
                return 0;
            }
            len += in[ip++];
        }
        if (ip >= in_len) {
            return 0;
        }
        size_t back = ((size_t)(ctrl & 0x1f) << 8) + in[ip++] + 1;
        len += 2;
        if (back > op || len > out_len - op) {
            return 0;
        }
        for (size_t i = 0; i < len; i++, op++) {
            out[op] = out[op - back];
        }
    }
    return op == out_len ? op : 0;
}
