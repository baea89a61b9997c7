/*
 * packdict.c - what hashes and sets share (lib/packdict.h).
 */
#include "lib/packdict.h"

#include <string.h>

enum { ENC_COMPACT = 0, ENC_LARGE = 1 };

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

size_t
packdict_owned(const struct pack *pk, const struct dict *big)
{
    size_t n = pack_owned(pk);
    if (big != NULL) {
        n += big->owned + mem_usable(big);
    }
    return n;
}

void
packdict_free(struct pack *pk, struct dict **big)
{
    pack_free(pk);
    if (*big != NULL) {
        dict_delete(*big);
        *big = NULL;
    }
}

/* The element at off: its key and (per 2) its value; the next offset. */
static uint32_t
element_at(const struct pack *pk, uint32_t off, unsigned per,
           struct pack_item *k, struct pack_item *v)
{
    off = pack_at(pk, off, k);
    if (per == 2) {
        return pack_at(pk, off, v);
    }
    *v = (struct pack_item){ NULL, 0 };
    return off;
}

bool
packdict_next(const struct pack *pk, const struct dict *big, unsigned per,
              struct packdict_iter *it, struct pack_item *k,
              struct pack_item *v)
{
    if (big == NULL) {
        if (it->off >= pk->bytes) {
            return false;
        }
        it->off = element_at(pk, it->off, per, k, v);
        return true;
    }
    struct dict_entry *e = dict_next(big, &it->di);
    if (e == NULL) {
        return false;
    }
    *k = (struct pack_item){ dict_key(e), e->klen };
    *v = (struct pack_item){ dict_value(e), e->vlen };
    return true;
}

struct scan_step {
    packdict_scan_fn fn;
    void *arg;
};

static void
scan_entry(const struct dict_entry *e, void *arg)
{
    const struct scan_step *s = arg;
    struct pack_item k = { dict_key(e), e->klen };
    struct pack_item v = { dict_value(e), e->vlen };
    s->fn(&k, &v, s->arg);
}

uint64_t
packdict_scan(const struct pack *pk, const struct dict *big, unsigned per,
              uint64_t cursor, packdict_scan_fn fn, void *arg)
{
    if (big != NULL) {
        struct scan_step s = { fn, arg };
        return dict_scan(big, cursor, scan_entry, &s);
    }
    struct packdict_iter it = { 0 };
    struct pack_item k, v;
    while (packdict_next(pk, NULL, per, &it, &k, &v)) {
        fn(&k, &v, arg);
    }
    return 0;
}

bool
packdict_convert(struct pack *pk, struct dict **big, unsigned per,
                 uint64_t size)
{
    struct dict *d = dict_new();
    if (d == NULL || !dict_expand(d, size)) {
        if (d != NULL) {
            dict_delete(d);
        }
        return false;
    }
    uint32_t off = 0;
    while (off < pk->bytes) {
        struct pack_item k, v;
        off = element_at(pk, off, per, &k, &v);
        if (dict_add(d, k.data, k.len, v.data, v.len) == NULL) {
            dict_delete(d);
            return false;
        }
    }
    pack_free(pk);
    *big = d;
    return true;
}

bool
packdict_copy(struct pack *pk, struct dict **big, const struct pack *src_pk,
              const struct dict *src_big)
{
    if (src_big == NULL) {
        return pack_copy(pk, src_pk);
    }
    *big = dict_new();
    if (*big == NULL || !dict_expand(*big, src_big->used)) {
        return false;
    }
    struct dict_iter it = { 0 };
    for (struct dict_entry *e = dict_next(src_big, &it); e != NULL;
         e = dict_next(src_big, &it)) {
        if (dict_add(*big, dict_key(e), e->klen, dict_value(e), e->vlen) ==
            NULL) {
            return false;
        }
    }
    return true;
}

static bool
put_u32(struct membuf *b, size_t v)
{
    uint32_t w = (uint32_t)v;
    return membuf_put(b, &w, sizeof(w));
}

bool
packdict_put_string(struct membuf *b, const void *p, size_t len)
{
    return len <= UINT32_MAX && put_u32(b, len) && membuf_put(b, p, len);
}

bool
packdict_encode(const struct pack *pk, const struct dict *big, unsigned per,
                struct membuf *b)
{
    if (big == NULL) {
        unsigned char enc = ENC_COMPACT;
        return membuf_put(b, &enc, 1) && put_u32(b, pk->count) &&
               put_u32(b, pk->bytes) && membuf_put(b, pk->p, pk->bytes);
    }
    unsigned char enc = ENC_LARGE;
    uint64_t n = big->used;
    if (!membuf_put(b, &enc, 1) || !membuf_put(b, &n, sizeof(n))) {
        return false;
    }
    struct dict_iter it = { 0 };
    for (struct dict_entry *e = dict_next(big, &it); e != NULL;
         e = dict_next(big, &it)) {
        if (!packdict_put_string(b, dict_key(e), e->klen) ||
            (per == 2 &&
             !packdict_put_string(b, dict_value(e), e->vlen))) {
            return false;
        }
    }
    return true;
}

bool
packdict_take_string(struct membuf_reader *r, struct pack_item *s)
{
    uint32_t len;
    if (!membuf_read(r, &len, sizeof(len)) || !membuf_skip(r, len, &s->data)) {
        return false;
    }
    s->len = len;
    return true;
}

static int
decode_compact(struct pack *pk, struct membuf_reader *r,
               bool (*compact_valid)(const struct pack *pk))
{
    uint32_t count, bytes;
    if (!membuf_read(r, &count, sizeof(count)) ||
        !membuf_read(r, &bytes, sizeof(bytes)) || r->left != bytes ||
        !pack_valid(r->p, bytes, count)) {
        return COLL_MALFORMED;
    }
    struct pack read = { (unsigned char *)r->p, bytes, count };
    if (!compact_valid(&read)) {
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
    *pk = (struct pack){ p, bytes, count };
    return COLL_OK;
}

static int
decode_large(struct dict **big, unsigned per, struct membuf_reader *r)
{
    uint64_t n;
    /* Each string takes at least 4 bytes: a bound on a bad count. */
    if (!membuf_read(r, &n, sizeof(n)) || n > r->left / (4 * per)) {
        return COLL_MALFORMED;
    }
    *big = dict_new();
    if (*big == NULL || !dict_expand(*big, n)) {
        return COLL_NOMEM;
    }
    for (uint64_t i = 0; i < n; i++) {
        struct pack_item k, v = { NULL, 0 };
        if (!packdict_take_string(r, &k) ||
            (per == 2 && !packdict_take_string(r, &v)) ||
            dict_find(*big, k.data, k.len) != NULL) {
            return COLL_MALFORMED;
        }
        if (dict_add(*big, k.data, k.len, v.data, v.len) == NULL) {
            return COLL_NOMEM;
        }
    }
    return r->left == 0 ? COLL_OK : COLL_MALFORMED;
}

int
packdict_decode(struct pack *pk, struct dict **big, unsigned per,
                bool (*compact_valid)(const struct pack *pk),
                const unsigned char *p, size_t len)
{
    struct membuf_reader r = { p, len };
    unsigned char enc;
    if (!membuf_read(&r, &enc, 1)) {
        return COLL_MALFORMED;
    }
    switch (enc) {
    case ENC_COMPACT:
        return decode_compact(pk, &r, compact_valid);
    case ENC_LARGE:
        return decode_large(big, per, &r);
    default:
        return COLL_MALFORMED;
    }
}

bool
packdict_put_strings(struct membuf *b, const char *const *s,
                     const size_t *len, size_t n)
{
    if (n > UINT32_MAX || !put_u32(b, n)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!packdict_put_string(b, s[i], len[i])) {
            return false;
        }
    }
    return true;
}

bool
packdict_strings_valid(const unsigned char *p, size_t len, uint32_t *n,
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
        if (!packdict_take_string(&r, &s)) {
            return false;
        }
        *longest = s.len > *longest ? s.len : *longest;
        *sum += s.len;
    }
    return r.left == 0;
}
