/*
 * set.c - a Redis set (lib/set.h).
 *
 * The compact encoding is a pack whose integer members come first, in
 * increasing order of value, and whose other members follow in the order
 * they came: an integer is placed by walking the integers, another member
 * is appended. Every lookup walks the pack, which the bounds keep short
 * (at most 512 integers of at most 20 bytes, or 128 members of at most 64
 * bytes).
 *
 * Encoded (set_encode), a set is one byte for its encoding, then
 *  - compact: the pack's entry count and byte count (uint32 each) and its
 *    block as it is;
 *  - large: the number of members (uint64), then each as a uint32 length
 *    and its bytes.
 * An effect's payload (set_effect) is a uint32 count of members, then each
 * as a uint32 length and its bytes. Host byte order throughout.
 */
#include "lib/set.h"

#include <string.h>

#include "lib/num.h"
#include "lib/rand.h"

enum { ENC_COMPACT = 0, ENC_LARGE = 1 };

/* What a member costs in a dict beyond its bytes: the entry's header, the
 * allocator's rounding and a bucket. */
#define SET_ENTRY_OVERHEAD (sizeof(struct dict_entry) + 24)

uint64_t
set_len(const struct set *x)
{
    return x->big != NULL ? x->big->used : x->pk.count;
}

size_t
set_owned(const struct set *x)
{
    size_t n = pack_owned(&x->pk);
    if (x->big != NULL) {
        n += x->big->owned + mem_usable(x->big);
    }
    return n;
}

void
set_free(struct set *x)
{
    pack_free(&x->pk);
    if (x->big != NULL) {
        dict_free(x->big);
        mem_owned_free(x->big);
        x->big = NULL;
    }
}

/* ---- the compact encoding -------------------------------------------- */

static bool
is_int(const void *m, size_t len, int64_t *v)
{
    return num_parse_i64(m, len, v);
}

/* Where m is, or where it would go, in the pack: *off the byte offset of
 * m (found) or of the entry it would be inserted before. An integer goes
 * before the first entry that is no integer or a larger one; another
 * member at the end. */
static bool
pack_find(const struct pack *pk, const void *m, size_t len, uint32_t *off)
{
    int64_t v;
    bool integer = is_int(m, len, &v);
    uint32_t at = 0;
    while (at < pk->bytes) {
        struct pack_item it;
        uint32_t next = pack_at(pk, at, &it);
        if (integer) {
            int64_t w;
            if (!is_int(it.data, it.len, &w) || w > v) {
                break;
            }
            if (w == v) {
                *off = at;
                return true;
            }
        } else if (it.len == len && memcmp(it.data, m, len) == 0) {
            *off = at;
            return true;
        }
        at = next;
    }
    *off = integer ? at : pk->bytes;
    return false;
}

/* Does the pack hold members other than integers? They are last. */
static bool
pack_has_strings(const struct pack *pk)
{
    uint32_t at = 0, last = 0;
    struct pack_item it;
    if (pk->count == 0) {
        return false;
    }
    while (at < pk->bytes) {
        last = at;
        at = pack_at(pk, at, &it);
    }
    (void)pack_at(pk, last, &it);
    int64_t v;
    return !is_int(it.data, it.len, &v);
}

bool
set_is_intset(const struct set *x)
{
    return x->big == NULL && !pack_has_strings(&x->pk);
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

/* The compact set made large. false (x unchanged) when memory runs out. */
static bool
convert(struct set *x)
{
    struct dict *d = dict_new();
    if (d == NULL || !dict_expand(d, x->pk.count + 1)) {
        if (d != NULL) {
            dict_delete(d);
        }
        return false;
    }
    uint32_t off = 0;
    while (off < x->pk.bytes) {
        struct pack_item m;
        off = pack_at(&x->pk, off, &m);
        if (dict_add(d, m.data, m.len, NULL, 0) == NULL) {
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
set_has(const struct set *x, const void *m, size_t len)
{
    if (x->big != NULL) {
        return dict_find(x->big, m, len) != NULL;
    }
    uint32_t off;
    return pack_find(&x->pk, m, len, &off);
}

bool
set_next(const struct set *x, struct set_iter *it, struct pack_item *m)
{
    if (x->big != NULL) {
        struct dict_entry *e = dict_next(x->big, &it->di);
        if (e == NULL) {
            return false;
        }
        m->data = dict_key(e);
        m->len = e->klen;
        return true;
    }
    if (it->off >= x->pk.bytes) {
        return false;
    }
    it->off = pack_at(&x->pk, it->off, m);
    return true;
}

struct scan_step {
    set_scan_fn fn;
    void *arg;
};

static void
scan_entry(const struct dict_entry *e, void *arg)
{
    const struct scan_step *s = arg;
    struct pack_item m = { dict_key(e), e->klen };
    s->fn(&m, s->arg);
}

uint64_t
set_scan(const struct set *x, uint64_t cursor, set_scan_fn fn, void *arg)
{
    if (x->big != NULL) {
        struct scan_step s = { fn, arg };
        return dict_scan(x->big, cursor, scan_entry, &s);
    }
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        fn(&m, arg);
    }
    return 0;
}

/* A random entry of a dict that holds some: a random non-empty bucket of
 * either table, then a random entry of its chain (Redis's
 * dictGetRandomKey()). */
static const struct dict_entry *
dict_random(const struct dict *d)
{
    uint64_t n0 = d->mask + 1;
    uint64_t n1 = d->t1 != NULL ? d->mask1 + 1 : 0;
    const struct dict_entry *head = NULL;
    while (head == NULL) {
        uint64_t i = rand_below(n0 + n1);
        if (i < n0) {
            head = i >= d->rehash_idx || d->t1 == NULL ? d->t[i] : NULL;
        } else {
            head = d->t1[i - n0];
        }
    }
    uint64_t chain = 0;
    for (const struct dict_entry *e = head; e != NULL; e = e->next) {
        chain++;
    }
    for (uint64_t k = rand_below(chain); k > 0; k--) {
        head = head->next;
    }
    return head;
}

void
set_random(const struct set *x, struct pack_item *m)
{
    if (x->big != NULL) {
        const struct dict_entry *e = dict_random(x->big);
        m->data = dict_key(e);
        m->len = e->klen;
        return;
    }
    uint32_t off = pack_offset(&x->pk,
                               (uint32_t)rand_below(x->pk.count));
    (void)pack_at(&x->pk, off, m);
}

/* ---- writing ---------------------------------------------------------- */

static int
add_large(struct dict *d, const void *m, size_t len)
{
    if (dict_find(d, m, len) != NULL) {
        return SET_EXISTS;
    }
    return dict_add(d, m, (uint32_t)len, NULL, 0) != NULL ? SET_NEW
                                                          : SET_NOMEM;
}

/* Would one more member make the compact set too big? integer: the new
 * one is an integer. */
static bool
compact_full(const struct pack *pk, bool integer, size_t len)
{
    if (!integer) {
        return len > SET_PACK_VALUE || pk->count >= SET_PACK_ENTRIES;
    }
    size_t bound = pack_has_strings(pk) ? SET_PACK_ENTRIES
                                        : SET_MAX_INTSET_ENTRIES;
    return pk->count >= bound;
}

int
set_add(struct set *x, const void *m, size_t len)
{
    if (len > UINT32_MAX) {
        return SET_NOMEM;
    }
    if (x->big != NULL) {
        return add_large(x->big, m, len);
    }
    uint32_t off;
    if (pack_find(&x->pk, m, len, &off)) {
        return SET_EXISTS;
    }
    int64_t v;
    if (compact_full(&x->pk, is_int(m, len, &v), len)) {
        /* Redis adds, then converts: the same members. */
        if (!convert(x)) {
            return SET_NOMEM;
        }
        return add_large(x->big, m, len);
    }
    struct pack_item it = { m, (uint32_t)len };
    return pack_insert(&x->pk, off, &it, 1) ? SET_NEW : SET_NOMEM;
}

bool
set_rem(struct set *x, const void *m, size_t len)
{
    if (x->big != NULL) {
        struct dict_entry *e = dict_find(x->big, m, len);
        if (e == NULL) {
            return false;
        }
        dict_remove(x->big, e);
        return true;
    }
    uint32_t off;
    if (!pack_find(&x->pk, m, len, &off)) {
        return false;
    }
    pack_delete(&x->pk, off, 1);
    return true;
}

size_t
set_grow_bytes(const struct set *x, const char *const *s, const size_t *len,
               size_t n)
{
    size_t bytes = 0;
    (void)s;
    for (size_t i = 0; i < n; i++) {
        bytes += len[i];
    }
    size_t need = bytes + n * SET_ENTRY_OVERHEAD;
    if (x->big == NULL && x->pk.count + n > SET_PACK_ENTRIES) {
        /* The members there may move into a dict. */
        need += x->pk.bytes + x->pk.count * SET_ENTRY_OVERHEAD
                + sizeof(struct dict);
    }
    return need;
}

bool
set_copy(struct set *dst, const struct set *src)
{
    if (src->big == NULL) {
        return pack_copy(&dst->pk, &src->pk);
    }
    dst->big = dict_new();
    if (dst->big == NULL || !dict_expand(dst->big, src->big->used)) {
        return false;
    }
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(src, &it, &m)) {
        if (dict_add(dst->big, m.data, m.len, NULL, 0) == NULL) {
            return false;
        }
    }
    return true;
}

/* ---- bytes: whole sets and effects ------------------------------------ */

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
set_encode(const struct set *x, struct membuf *b)
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
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        if (!put_string(b, m.data, m.len)) {
            return false;
        }
    }
    return true;
}

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

/* A compact block read back: integers first in strictly increasing order,
 * then distinct other members, within the bounds. */
static bool
compact_valid(const struct pack *pk)
{
    uint32_t off = 0, strings = 0;
    int64_t prev = 0;
    bool any_int = false;
    while (off < pk->bytes) {
        struct pack_item m;
        int64_t v;
        off = pack_at(pk, off, &m);
        if (is_int(m.data, m.len, &v)) {
            if (strings > 0 || (any_int && v <= prev)) {
                return false;
            }
            any_int = true;
            prev = v;
            continue;
        }
        strings++;
        if (m.len > SET_PACK_VALUE) {
            return false;
        }
        for (uint32_t o2 = off; o2 < pk->bytes;) {
            struct pack_item g;
            o2 = pack_at(pk, o2, &g);
            if (g.len == m.len && memcmp(g.data, m.data, m.len) == 0) {
                return false;
            }
        }
    }
    return pk->count <= (strings > 0 ? SET_PACK_ENTRIES
                                     : SET_MAX_INTSET_ENTRIES);
}

static int
decode_compact(struct set *x, struct membuf_reader *r)
{
    uint32_t count, bytes;
    if (!membuf_read(r, &count, sizeof(count)) ||
        !membuf_read(r, &bytes, sizeof(bytes)) || r->left != bytes ||
        !pack_valid(r->p, bytes, count)) {
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
decode_large(struct set *x, struct membuf_reader *r)
{
    uint64_t n;
    /* Each member takes at least 4 bytes: a bound on a bad count. */
    if (!membuf_read(r, &n, sizeof(n)) || n > r->left / 4) {
        return COLL_MALFORMED;
    }
    x->big = dict_new();
    if (x->big == NULL || !dict_expand(x->big, n)) {
        return COLL_NOMEM;
    }
    for (uint64_t i = 0; i < n; i++) {
        struct pack_item m;
        if (!take_string(r, &m) || dict_find(x->big, m.data, m.len) != NULL) {
            return COLL_MALFORMED;
        }
        if (dict_add(x->big, m.data, m.len, NULL, 0) == NULL) {
            return COLL_NOMEM;
        }
    }
    return r->left == 0 ? COLL_OK : COLL_MALFORMED;
}

int
set_decode(struct set *x, const unsigned char *p, size_t len)
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

bool
set_effect(struct membuf *b, const char *const *s, const size_t *len,
           size_t n)
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
set_effect_open(struct membuf *b)
{
    return put_u32(b, 0);
}

bool
set_effect_push(struct membuf *b, const void *m, size_t len)
{
    uint32_t n;
    if (b->len < sizeof(n) || !put_string(b, m, len)) {
        return false;
    }
    memcpy(&n, b->p, sizeof(n));
    n++;
    memcpy(b->p, &n, sizeof(n));
    return true;
}

/* A payload checked whole: its count, every length, nothing after. */
static bool
payload_valid(const unsigned char *p, size_t len, uint32_t *n)
{
    struct membuf_reader r = { p, len };
    if (!membuf_read(&r, n, sizeof(*n))) {
        return false;
    }
    for (uint32_t i = 0; i < *n; i++) {
        struct pack_item s;
        if (!take_string(&r, &s)) {
            return false;
        }
    }
    return r.left == 0;
}

int
set_apply(struct set *x, uint8_t op, const unsigned char *p, size_t len)
{
    uint32_t n;
    if ((op != SET_OP_ADD && op != SET_OP_REM) ||
        !payload_valid(p, len, &n)) {
        return COLL_MALFORMED;
    }
    struct membuf_reader r = { p + sizeof(n), len - sizeof(n) };
    for (uint32_t i = 0; i < n; i++) {
        struct pack_item m = { NULL, 0 };
        (void)take_string(&r, &m);      /* checked whole above */
        if (op == SET_OP_REM) {
            (void)set_rem(x, m.data, m.len);
        } else if (set_add(x, m.data, m.len) == SET_NOMEM) {
            return COLL_NOMEM;
        }
    }
    return COLL_OK;
}
