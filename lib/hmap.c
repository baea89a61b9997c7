/*
 * hmap.c - a Redis hash (lib/hmap.h).
 *
 * The compact encoding is a pack of field, value, field, value...; every
 * lookup walks it, as Redis walks its listpack, which the limits keep
 * short (at most 512 pairs of at most 64 bytes each, about 67 KB).
 *
 * Its bytes (hmap_encode, hmap_effect_*) are lib/packdict.h's, an element
 * a field and its value.
 */
#include "lib/hmap.h"

#include <string.h>

#include "lib/dict.h"
#include "lib/packdict.h"

/* Redis converts a listpack when an insert could take it past 1 GiB
 * (lpSafeToAdd()); here, measured in the pack's bytes. Unreachable in
 * practice (the pack stays under 67 KB), kept so the rule is whole. */
#define HMAP_SAFE_BYTES ((size_t)1 << 30)

/* What a field costs in a dict beyond its bytes: the entry's header, the
 * allocator's rounding and a bucket. */
#define HMAP_ENTRY_OVERHEAD (sizeof(struct dict_entry) + 24)

uint64_t
hmap_len(const struct hmap *x)
{
    return x->big != NULL ? x->big->used : x->pk.count / 2;
}

/* ---- the compact encoding -------------------------------------------- */

/* The offsets of field f and of its value in the pack; false when f is
 * not there. */
static bool
pack_find(const struct pack *pk, const void *f, size_t flen, uint32_t *foff,
          uint32_t *voff)
{
    uint32_t off = 0;
    while (off < pk->bytes) {
        struct pack_item fi, vi;
        uint32_t at = off;
        off = pack_at(pk, off, &fi);
        uint32_t vat = off;
        off = pack_at(pk, off, &vi);
        if (fi.len == flen && memcmp(fi.data, f, flen) == 0) {
            *foff = at;
            *voff = vat;
            return true;
        }
    }
    return false;
}

/* The compact hash made large, its pairs in the dict. false (x still
 * compact, unchanged) when memory runs out. */
static bool
convert(struct hmap *x)
{
    return packdict_convert(&x->pk, &x->big, 2, x->pk.count / 2);
}

/* ---- reading ---------------------------------------------------------- */

bool
hmap_get(const struct hmap *x, const void *f, size_t flen,
         struct pack_item *v)
{
    if (x->big != NULL) {
        struct dict_entry *e = dict_find(x->big, f, flen);
        if (e == NULL) {
            return false;
        }
        v->data = dict_value(e);
        v->len = e->vlen;
        return true;
    }
    uint32_t foff, voff;
    if (!pack_find(&x->pk, f, flen, &foff, &voff)) {
        return false;
    }
    (void)pack_at(&x->pk, voff, v);
    return true;
}

size_t
hmap_value_len(const struct hmap *x, const void *f, size_t flen)
{
    struct pack_item v;
    return hmap_get(x, f, flen, &v) ? v.len : 0;
}

bool
hmap_next(const struct hmap *x, struct hmap_iter *it, struct pack_item *f,
          struct pack_item *v)
{
    return packdict_next(&x->pk, x->big, 2, &it->pd, f, v);
}

uint64_t
hmap_scan(const struct hmap *x, uint64_t cursor, hmap_scan_fn fn, void *arg)
{
    return packdict_scan(&x->pk, x->big, 2, cursor, fn, arg);
}

/* ---- writing ---------------------------------------------------------- */

/* hashTypeTryConversion() given the longest string and their sum. */
static bool
prepare(struct hmap *x, size_t longest, size_t sum)
{
    if (x->big != NULL) {
        return true;
    }
    if (longest > HMAP_PACK_VALUE || sum > HMAP_SAFE_BYTES - x->pk.bytes) {
        return convert(x);
    }
    return true;
}

bool
hmap_prepare(struct hmap *x, const char *const *s, const size_t *len,
             size_t n)
{
    size_t longest = 0, sum = 0;
    (void)s;
    for (size_t i = 0; i < n; i++) {
        longest = len[i] > longest ? len[i] : longest;
        sum = len[i] > SIZE_MAX - sum ? SIZE_MAX : sum + len[i];
    }
    return prepare(x, longest, sum);
}

size_t
hmap_grow_bytes(const struct hmap *x, const char *const *s,
                const size_t *len, size_t n)
{
    size_t bytes = 0, longest = 0;
    (void)s;
    for (size_t i = 0; i < n; i++) {
        longest = len[i] > longest ? len[i] : longest;
        bytes += len[i];
    }
    size_t pairs = n / 2;
    size_t need = bytes + pairs * HMAP_ENTRY_OVERHEAD;
    if (x->big == NULL &&
        (longest > HMAP_PACK_VALUE ||
         hmap_len(x) + pairs > HMAP_PACK_ENTRIES)) {
        /* The pairs there move into a dict. */
        need += x->pk.bytes + hmap_len(x) * HMAP_ENTRY_OVERHEAD
                + sizeof(struct dict);
    }
    return need;
}

static int
set_large(struct dict *d, const void *f, size_t flen, const void *v,
          size_t vlen)
{
    struct dict_entry *e = dict_find(d, f, flen);
    if (e != NULL) {
        return dict_set_value(d, e, v, (uint32_t)vlen) != NULL
                   ? HMAP_UPDATED
                   : HMAP_NOMEM;
    }
    return dict_add(d, f, (uint32_t)flen, v, (uint32_t)vlen) != NULL
               ? HMAP_NEW
               : HMAP_NOMEM;
}

int
hmap_set(struct hmap *x, const void *f, size_t flen, const void *v,
         size_t vlen)
{
    if (flen > UINT32_MAX || vlen > UINT32_MAX) {
        return HMAP_NOMEM;
    }
    if (x->big == NULL &&
        (flen > HMAP_PACK_VALUE || vlen > HMAP_PACK_VALUE) && !convert(x)) {
        return HMAP_NOMEM;
    }
    if (x->big != NULL) {
        return set_large(x->big, f, flen, v, vlen);
    }
    uint32_t foff, voff;
    if (pack_find(&x->pk, f, flen, &foff, &voff)) {
        return pack_replace(&x->pk, voff, v, (uint32_t)vlen) ? HMAP_UPDATED
                                                              : HMAP_NOMEM;
    }
    if (x->pk.count / 2 >= HMAP_PACK_ENTRIES) {
        /* Redis appends the pair, then converts: the same fields. */
        if (!convert(x)) {
            return HMAP_NOMEM;
        }
        return set_large(x->big, f, flen, v, vlen);
    }
    struct pack_item pair[2] = { { f, (uint32_t)flen },
                                 { v, (uint32_t)vlen } };
    return pack_insert(&x->pk, x->pk.bytes, pair, 2) ? HMAP_NEW : HMAP_NOMEM;
}

bool
hmap_del(struct hmap *x, const void *f, size_t flen)
{
    if (x->big != NULL) {
        return dict_remove_key(x->big, f, flen);
    }
    uint32_t foff, voff;
    if (!pack_find(&x->pk, f, flen, &foff, &voff)) {
        return false;
    }
    pack_delete(&x->pk, foff, 2);
    return true;
}

/* ---- bytes: whole hashes and effects ---------------------------------- */

/* A compact block read back: within the limits, every field once. */
static bool
compact_valid(const struct pack *pk)
{
    if (pk->count % 2 != 0 || pk->count / 2 > HMAP_PACK_ENTRIES) {
        return false;
    }
    uint32_t off = 0;
    while (off < pk->bytes) {
        struct pack_item f, v;
        off = pack_at(pk, off, &f);
        off = pack_at(pk, off, &v);
        if (f.len > HMAP_PACK_VALUE || v.len > HMAP_PACK_VALUE) {
            return false;
        }
        uint32_t o2 = off;
        while (o2 < pk->bytes) {
            struct pack_item g, w;
            o2 = pack_at(pk, o2, &g);
            o2 = pack_at(pk, o2, &w);
            if (g.len == f.len && memcmp(g.data, f.data, f.len) == 0) {
                return false;
            }
        }
    }
    return true;
}

int
hmap_decode(struct hmap *x, const unsigned char *p, size_t len)
{
    return packdict_decode(&x->pk, &x->big, 2, compact_valid, p, len);
}

static int
apply_set(struct hmap *x, struct membuf_reader *r, uint32_t n, size_t longest,
          size_t sum)
{
    if (n % 2 != 0) {
        return COLL_MALFORMED;
    }
    if (!prepare(x, longest, sum)) {
        return COLL_NOMEM;
    }
    for (uint32_t i = 0; i < n; i += 2) {
        struct pack_item f, v;
        (void)packdict_take_string(r, &f);
        (void)packdict_take_string(r, &v);
        if (hmap_set(x, f.data, f.len, v.data, v.len) == HMAP_NOMEM) {
            return COLL_NOMEM;
        }
    }
    return COLL_OK;
}

int
hmap_apply(struct hmap *x, uint8_t op, const unsigned char *p, size_t len)
{
    uint32_t n;
    size_t longest, sum;
    if (!packdict_strings_valid(p, len, &n, &longest, &sum)) {
        return COLL_MALFORMED;
    }
    struct membuf_reader r = { p + sizeof(n), len - sizeof(n) };
    switch (op) {
    case HMAP_OP_SET:
        return apply_set(x, &r, n, longest, sum);
    case HMAP_OP_DEL:
        for (uint32_t i = 0; i < n; i++) {
            struct pack_item f;
            (void)packdict_take_string(&r, &f);
            (void)hmap_del(x, f.data, f.len);
        }
        return COLL_OK;
    default:
        return COLL_MALFORMED;
    }
}
