/*
 * hmap.c - a Redis hash (lib/hmap.h).
 *
 * The compact encoding is a pack of field, value, field, value...; every
 * lookup walks it, as Redis walks its listpack, which the limits keep
 * short (at most 512 pairs of at most 64 bytes each, about 67 KB).
 *
 * Encoded (hmap_encode), a hash is one byte for its encoding, then
 *  - compact: the pack's entry count and byte count (uint32 each) and its
 *    block as it is;
 *  - large: the number of fields (uint64), then each field and its value
 *    as a uint32 length and the bytes.
 * An effect's payload (hmap_effect_*) is a uint32 count of strings, then
 * each as a uint32 length and its bytes. Host byte order throughout.
 */
#include "lib/hmap.h"

#include <string.h>

#include "lib/dict.h"

enum { ENC_COMPACT = 0, ENC_LARGE = 1 };

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

size_t
hmap_owned(const struct hmap *x)
{
    size_t n = pack_owned(&x->pk);
    if (x->big != NULL) {
        n += x->big->owned + mem_usable(x->big);
    }
    return n;
}

void
hmap_free(struct hmap *x)
{
    pack_free(&x->pk);
    if (x->big != NULL) {
        dict_free(x->big);
        mem_owned_free(x->big);
        x->big = NULL;
    }
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

static struct dict *
dict_new(void)
{
    struct dict *d = mem_owned_realloc(NULL, sizeof(*d));
    if (d != NULL) {
        memset(d, 0, sizeof(*d));
    }
    return d;
}

static void
dict_delete(struct dict *d)
{
    dict_free(d);
    mem_owned_free(d);
}

/* The compact hash made large, its pairs in the dict. false (x still
 * compact, unchanged) when memory runs out. */
static bool
convert(struct hmap *x)
{
    struct dict *d = dict_new();
    if (d == NULL || !dict_expand(d, x->pk.count / 2)) {
        if (d != NULL) {
            dict_delete(d);
        }
        return false;
    }
    uint32_t off = 0;
    while (off < x->pk.bytes) {
        struct pack_item f, v;
        off = pack_at(&x->pk, off, &f);
        off = pack_at(&x->pk, off, &v);
        if (dict_add(d, f.data, f.len, v.data, v.len) == NULL) {
            dict_delete(d);
            return false;
        }
    }
    pack_free(&x->pk);
    x->big = d;
    return true;
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
    if (x->big != NULL) {
        struct dict_entry *e = dict_next(x->big, &it->di);
        if (e == NULL) {
            return false;
        }
        f->data = dict_key(e);
        f->len = e->klen;
        v->data = dict_value(e);
        v->len = e->vlen;
        return true;
    }
    if (it->off >= x->pk.bytes) {
        return false;
    }
    it->off = pack_at(&x->pk, it->off, f);
    it->off = pack_at(&x->pk, it->off, v);
    return true;
}

struct scan_step {
    hmap_scan_fn fn;
    void *arg;
};

static void
scan_entry(const struct dict_entry *e, void *arg)
{
    const struct scan_step *s = arg;
    struct pack_item f = { dict_key(e), e->klen };
    struct pack_item v = { dict_value(e), e->vlen };
    s->fn(&f, &v, s->arg);
}

uint64_t
hmap_scan(const struct hmap *x, uint64_t cursor, hmap_scan_fn fn, void *arg)
{
    if (x->big != NULL) {
        struct scan_step s = { fn, arg };
        return dict_scan(x->big, cursor, scan_entry, &s);
    }
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    while (hmap_next(x, &it, &f, &v)) {
        fn(&f, &v, arg);
    }
    return 0;
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
        struct dict_entry *e = dict_find(x->big, f, flen);
        if (e == NULL) {
            return false;
        }
        dict_remove(x->big, e);
        return true;
    }
    uint32_t foff, voff;
    if (!pack_find(&x->pk, f, flen, &foff, &voff)) {
        return false;
    }
    pack_delete(&x->pk, foff, 2);
    return true;
}

/* ---- bytes: whole hashes and effects ---------------------------------- */

static bool
put_u32(struct membuf *b, size_t v)
{
    uint32_t w = (uint32_t)v;
    return membuf_put(b, &w, sizeof(w));
}

static bool
put_string(struct membuf *b, const void *p, size_t len)
{
    return len <= UINT32_MAX && put_u32(b, len) && membuf_put(b, p, len);
}

bool
hmap_encode(const struct hmap *x, struct membuf *b)
{
    if (x->big == NULL) {
        unsigned char enc = ENC_COMPACT;
        return membuf_put(b, &enc, 1) && put_u32(b, x->pk.count) &&
               put_u32(b, x->pk.bytes) &&
               membuf_put(b, x->pk.p, x->pk.bytes);
    }
    unsigned char enc = ENC_LARGE;
    uint64_t n = x->big->used;
    if (!membuf_put(b, &enc, 1) || !membuf_put(b, &n, sizeof(n))) {
        return false;
    }
    struct dict_iter it = { 0 };
    for (struct dict_entry *e = dict_next(x->big, &it); e != NULL;
         e = dict_next(x->big, &it)) {
        if (!put_string(b, dict_key(e), e->klen) ||
            !put_string(b, dict_value(e), e->vlen)) {
            return false;
        }
    }
    return true;
}

/* A reader of bytes that checks every length against what is left. */
static bool
take_string(struct membuf_reader *r, struct pack_item *s)
{
    uint32_t len;
    if (!membuf_read(r, &len, sizeof(len)) || !membuf_skip(r, len, &s->data)) {
        return false;
    }
    s->len = len;
    return true;
}

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

static int
decode_compact(struct hmap *x, struct membuf_reader *r)
{
    uint32_t count, bytes;
    if (!membuf_read(r, &count, sizeof(count)) ||
        !membuf_read(r, &bytes, sizeof(bytes)) ||
        r->left != bytes || !pack_valid(r->p, bytes, count)) {
        return COLL_MALFORMED;
    }
    struct pack pk = { (unsigned char *)r->p, bytes, count };
    if (!compact_valid(&pk)) {
        return COLL_MALFORMED;
    }
    if (bytes == 0) {
        return COLL_OK;
    }
    unsigned char *p = mem_owned_realloc(NULL, bytes);
    if (p == NULL) {
        return COLL_NOMEM;
    }
    memcpy(p, r->p, bytes);
    x->pk = (struct pack){ p, bytes, count };
    return COLL_OK;
}

static int
decode_large(struct hmap *x, struct membuf_reader *r)
{
    uint64_t n;
    /* Each field takes at least 8 bytes: a bound on a bad count. */
    if (!membuf_read(r, &n, sizeof(n)) || n > r->left / 8) {
        return COLL_MALFORMED;
    }
    x->big = dict_new();
    if (x->big == NULL || !dict_expand(x->big, n)) {
        return COLL_NOMEM;
    }
    for (uint64_t i = 0; i < n; i++) {
        struct pack_item f, v;
        if (!take_string(r, &f) || !take_string(r, &v) ||
            dict_find(x->big, f.data, f.len) != NULL) {
            return COLL_MALFORMED;
        }
        if (dict_add(x->big, f.data, f.len, v.data, v.len) == NULL) {
            return COLL_NOMEM;
        }
    }
    return r->left == 0 ? COLL_OK : COLL_MALFORMED;
}

int
hmap_decode(struct hmap *x, const unsigned char *p, size_t len)
{
    struct membuf_reader r = { p, len };
    unsigned char enc;
    if (!membuf_read(&r, &enc, 1)) {
        return COLL_MALFORMED;
    }
    switch (enc) {
    case ENC_COMPACT:
        return decode_compact(x, &r);
    case ENC_LARGE:
        return decode_large(x, &r);
    default:
        return COLL_MALFORMED;
    }
}

static bool
effect(struct membuf *b, const char *const *s, const size_t *len, size_t n)
{
    if (n > UINT32_MAX || !put_u32(b, n)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!put_string(b, s[i], len[i])) {
            return false;
        }
    }
    return true;
}

bool
hmap_effect_set(struct membuf *b, const char *const *s, const size_t *len,
                size_t n)
{
    return n % 2 == 0 && effect(b, s, len, n);
}

bool
hmap_effect_del(struct membuf *b, const char *const *s, const size_t *len,
                size_t n)
{
    return effect(b, s, len, n);
}

/* A payload's strings checked whole (count, lengths, nothing after),
 * with their longest and their sum. */
static bool
payload_valid(const unsigned char *p, size_t len, uint32_t *n,
              size_t *longest, size_t *sum)
{
    struct membuf_reader r = { p, len };
    if (!membuf_read(&r, n, sizeof(*n))) {
        return false;
    }
    *longest = 0;
    *sum = 0;
    for (uint32_t i = 0; i < *n; i++) {
        struct pack_item s;
        if (!take_string(&r, &s)) {
            return false;
        }
        *longest = s.len > *longest ? s.len : *longest;
        *sum += s.len;
    }
    return r.left == 0;
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
        (void)take_string(r, &f);
        (void)take_string(r, &v);
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
    if (!payload_valid(p, len, &n, &longest, &sum)) {
        return COLL_MALFORMED;
    }
    struct membuf_reader r = { p + sizeof(n), len - sizeof(n) };
    switch (op) {
    case HMAP_OP_SET:
        return apply_set(x, &r, n, longest, sum);
    case HMAP_OP_DEL:
        for (uint32_t i = 0; i < n; i++) {
            struct pack_item f;
            (void)take_string(&r, &f);
            (void)hmap_del(x, f.data, f.len);
        }
        return COLL_OK;
    default:
        return COLL_MALFORMED;
    }
}
