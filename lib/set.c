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
 * Its bytes (set_encode, set_effect) are lib/packdict.h's, an element a
 * member.
 */
#include "lib/set.h"

#include <string.h>

#include "lib/num.h"
#include "lib/packdict.h"
#include "lib/rand.h"

/* What a member costs in a dict beyond its bytes: the entry's header, the
 * allocator's rounding and a bucket. */
#define SET_ENTRY_OVERHEAD (sizeof(struct dict_entry) + 24)

uint64_t
set_len(const struct set *x)
{
    return x->big != NULL ? x->big->used : x->pk.count;
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

/* The compact set made large (room for one member more: the one being
 * added). false (x unchanged) when memory runs out. */
static bool
convert(struct set *x)
{
    return packdict_convert(&x->pk, &x->big, 1, x->pk.count + 1);
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
    struct pack_item none;
    return packdict_next(&x->pk, x->big, 1, &it->pd, m, &none);
}

uint64_t
set_scan(const struct set *x, uint64_t cursor, set_scan_fn fn, void *arg)
{
    return packdict_scan(&x->pk, x->big, 1, cursor, fn, arg);
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
        return dict_remove_key(x->big, m, len);
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
    return packdict_copy(&dst->pk, &dst->big, &src->pk, src->big);
}

/* ---- bytes: whole sets and effects ------------------------------------ */

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

int
set_decode(struct set *x, const unsigned char *p, size_t len)
{
    return packdict_decode(&x->pk, &x->big, 1, compact_valid, p, len);
}

bool
set_effect_open(struct membuf *b)
{
    uint32_t none = 0;
    return membuf_put(b, &none, sizeof(none));
}

bool
set_effect_push(struct membuf *b, const void *m, size_t len)
{
    uint32_t n;
    if (b->len < sizeof(n) || !packdict_put_string(b, m, len)) {
        return false;
    }
    memcpy(&n, b->p, sizeof(n));
    n++;
    memcpy(b->p, &n, sizeof(n));
    return true;
}

int
set_apply(struct set *x, uint8_t op, const unsigned char *p, size_t len)
{
    uint32_t n;
    size_t longest, sum;
    if ((op != SET_OP_ADD && op != SET_OP_REM) ||
        !packdict_strings_valid(p, len, &n, &longest, &sum)) {
        return COLL_MALFORMED;
    }
    struct membuf_reader r = { p + sizeof(n), len - sizeof(n) };
    for (uint32_t i = 0; i < n; i++) {
        struct pack_item m = { NULL, 0 };
        (void)packdict_take_string(&r, &m);      /* checked whole above */
        if (op == SET_OP_REM) {
            (void)set_rem(x, m.data, m.len);
        } else if (set_add(x, m.data, m.len) == SET_NOMEM) {
            return COLL_NOMEM;
        }
    }
    return COLL_OK;
}
