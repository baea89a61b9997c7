/*
 * qlist.c - a Redis list (lib/qlist.h).
 *
 * Both encodings are seen as a row of nodes: the compact one is the row of
 * its one pack (none when empty), the large one the array big->node,
 * node[start .. start + n). Everything below works on the row; only
 * adding a node needs the array (to_big), and settle() goes back to the
 * compact encoding when one node is left. Every node holds an element;
 * a node within its bounds is the rule, one over them (a split that ran
 * out of memory) still works, only slower.
 */
#include "lib/qlist.h"

#include <string.h>

struct qlist_big {
    struct pack *node;      /* node[start .. start + n) in use */
    size_t start, n, cap;
    uint64_t count;         /* elements in all nodes */
};

/* ---- the row of nodes -------------------------------------------------- */

static size_t
nnodes(const struct qlist *x)
{
    return x->big != NULL ? x->big->n : x->pk.count > 0;
}

static struct pack *
node(const struct qlist *x, size_t i)
{
    return x->big != NULL ? &x->big->node[x->big->start + i]
                          : (struct pack *)&x->pk;
}

static void
counted(struct qlist *x, int64_t delta)
{
    if (x->big != NULL) {
        x->big->count += (uint64_t)delta;
    }
}

uint64_t
qlist_len(const struct qlist *x)
{
    return x->big != NULL ? x->big->count : x->pk.count;
}

/* The compact pack becomes node 0 of an array. */
static bool
to_big(struct qlist *x)
{
    struct qlist_big *b = mem_owned_realloc(NULL, sizeof *b);
    struct pack *a = mem_owned_realloc(NULL, 4 * sizeof *a);
    if (b == NULL || a == NULL) {
        mem_owned_free(b);
        mem_owned_free(a);
        return false;
    }
    *b = (struct qlist_big){ a, 1, 0, 4, x->pk.count };
    if (x->pk.count > 0) {
        a[1] = x->pk;
        b->n = 1;
    }
    x->pk = (struct pack){ 0 };
    x->big = b;
    return true;
}

/* Back to the compact encoding when at most one node is left. */
static void
settle(struct qlist *x)
{
    struct qlist_big *b = x->big;
    if (b == NULL || b->n > 1) {
        return;
    }
    if (b->n == 1) {
        x->pk = b->node[b->start];
    }
    mem_owned_free(b->node);
    mem_owned_free(b);
    x->big = NULL;
}

/* An empty node at row position i (<= n). */
static bool
node_insert(struct qlist *x, size_t i)
{
    if (x->big == NULL && !to_big(x)) {
        return false;
    }
    struct qlist_big *b = x->big;
    if (i == 0 && b->start > 0) {
        b->start--;
    } else if (b->start + b->n < b->cap) {
        memmove(&b->node[b->start + i + 1], &b->node[b->start + i],
                (b->n - i) * sizeof b->node[0]);
    } else if (b->start > 0) {
        memmove(&b->node[b->start - 1], &b->node[b->start],
                i * sizeof b->node[0]);
        b->start--;
    } else {
        /* Full: twice the room, the nodes in the middle of it. */
        size_t cap = 2 * (b->n + 1);
        struct pack *a = mem_owned_realloc(NULL, cap * sizeof *a);
        if (a == NULL) {
            return false;
        }
        size_t start = (cap - b->n - 1) / 2;
        memcpy(&a[start], &b->node[b->start], i * sizeof *a);
        memcpy(&a[start + i + 1], &b->node[b->start + i],
               (b->n - i) * sizeof *a);
        mem_owned_free(b->node);
        b->node = a;
        b->start = start;
        b->cap = cap;
    }
    b->n++;
    b->node[b->start + i] = (struct pack){ 0 };
    return true;
}

/* Drop node i (emptied). */
static void
node_remove(struct qlist *x, size_t i)
{
    pack_free(node(x, i));
    struct qlist_big *b = x->big;
    if (b == NULL) {
        return;
    }
    if (i < b->n / 2) {
        memmove(&b->node[b->start + 1], &b->node[b->start],
                i * sizeof b->node[0]);
        b->start++;
    } else {
        memmove(&b->node[b->start + i], &b->node[b->start + i + 1],
                (b->n - i - 1) * sizeof b->node[0]);
    }
    b->n--;
}

/* Element i's node and its index in it, counted from the nearer end. */
static void
locate(const struct qlist *x, uint64_t i, size_t *ni, uint32_t *ei)
{
    size_t n = nnodes(x);
    uint64_t len = qlist_len(x);
    if (i < len / 2) {
        size_t k = 0;
        while (i >= node(x, k)->count) {
            i -= node(x, k++)->count;
        }
        *ni = k;
        *ei = (uint32_t)i;
        return;
    }
    uint64_t back = len - i;         /* 1 .. : from the tail */
    size_t k = n - 1;
    while (back > node(x, k)->count) {
        back -= node(x, k--)->count;
    }
    *ni = k;
    *ei = (uint32_t)(node(x, k)->count - back);
}

static bool
over(const struct pack *pk)
{
    return pk->count > 1 && (pk->count > QLIST_NODE_COUNT ||
                             pk->bytes > QLIST_NODE_BYTES);
}

/* Node i's elements from e on (0 < e < count) become node i + 1. */
static bool
split(struct qlist *x, size_t i, uint32_t e)
{
    struct pack *pk = node(x, i);
    uint32_t off = pack_offset(pk, e), tail = pk->bytes - off;
    unsigned char *q = mem_owned_realloc(NULL, tail);
    if (q == NULL) {
        return false;
    }
    memcpy(q, pk->p + off, tail);
    if (!node_insert(x, i + 1)) {
        mem_owned_free(q);
        return false;
    }
    pk = node(x, i);                 /* the array may have moved */
    uint32_t moved = pk->count - e;
    pack_delete(pk, off, moved);
    *node(x, i + 1) = (struct pack){ q, tail, moved };
    return true;
}

/* Where to halve node pk: by bytes when over them, else by count. */
static uint32_t
middle(const struct pack *pk)
{
    if (pk->bytes <= QLIST_NODE_BYTES) {
        return pk->count / 2;
    }
    uint32_t off = 0, e = 0;
    struct pack_item it;
    while (e + 1 < pk->count && off < pk->bytes / 2) {
        off = pack_at(pk, off, &it);
        e++;
    }
    return e > 0 ? e : 1;
}

/* Node i back within its bounds, halved as often as it takes. A split
 * that finds no memory leaves a node too big, which still works. */
static void
fix(struct qlist *x, size_t i)
{
    if (!over(node(x, i)) || !split(x, i, middle(node(x, i)))) {
        return;
    }
    fix(x, i + 1);
    fix(x, i);
}

/* Node i and the next one as one when they fit in half a node together,
 * so removals in the middle leave no trail of tiny nodes. */
static void
merge_next(struct qlist *x, size_t i)
{
    if (i + 1 >= nnodes(x)) {
        return;
    }
    struct pack *a = node(x, i), *b = node(x, i + 1);
    if ((size_t)a->bytes + b->bytes > QLIST_NODE_BYTES / 2 ||
        a->count + b->count > QLIST_NODE_COUNT / 2) {
        return;
    }
    unsigned char *q = mem_owned_realloc(a->p, (size_t)a->bytes + b->bytes);
    if (q == NULL) {
        return;
    }
    memcpy(q + a->bytes, b->p, b->bytes);
    a->p = q;
    a->bytes += b->bytes;
    a->count += b->count;
    node_remove(x, i + 1);
}

/* ---- pushing and popping ----------------------------------------------- */

size_t
qlist_elem_cost(size_t len)
{
    return pack_entry_size(len) + 16;
}

static bool
fits(const struct pack *pk, size_t len)
{
    return pk->count < QLIST_NODE_COUNT &&
           pk->bytes + pack_entry_size(len) <= QLIST_NODE_BYTES;
}

bool
qlist_push(struct qlist *x, bool head, const void *v, size_t len)
{
    if (len > PACK_MAX_BYTES - 8) {
        return false;
    }
    struct pack_item it = { v, (uint32_t)len };
    size_t n = nnodes(x), i = head ? 0 : n;
    bool fresh = n == 0 || !fits(node(x, head ? 0 : n - 1), len);
    if (fresh && n > 0 && !node_insert(x, i)) {
        return false;
    }
    if (!fresh) {
        i = head ? 0 : n - 1;
    }
    struct pack *pk = node(x, i);
    if (!pack_insert(pk, head ? 0 : pk->bytes, &it, 1)) {
        if (fresh && n > 0) {
            node_remove(x, i);
            settle(x);
        }
        return false;
    }
    counted(x, 1);
    return true;
}

/* Show fn the elements [from, to) of pk in reverse (a node's elements
 * are few; a larger node is walked in slices). Stops when fn does;
 * returns false then. base: the index of element 0 of pk in the list. */
static bool
reverse_node(const struct pack *pk, uint32_t from, uint32_t to,
             uint64_t base, qlist_fn fn, void *arg)
{
    uint32_t off[QLIST_NODE_COUNT];
    uint32_t hi = to;
    while (hi > from) {
        uint32_t lo = hi - from > QLIST_NODE_COUNT ? hi - QLIST_NODE_COUNT
                                                   : from;
        uint32_t o = pack_offset(pk, lo);
        struct pack_item it;
        for (uint32_t e = lo; e < hi; e++) {
            off[e - lo] = o;
            o = pack_at(pk, o, &it);
        }
        for (uint32_t e = hi; e-- > lo;) {
            pack_at(pk, off[e - lo], &it);
            if (!fn(arg, base + e, it.data, it.len)) {
                return false;
            }
        }
        hi = lo;
    }
    return true;
}

static bool
forward_node(const struct pack *pk, uint32_t from, uint64_t base,
             qlist_fn fn, void *arg)
{
    uint32_t o = pack_offset(pk, from);
    struct pack_item it;
    for (uint32_t e = from; e < pk->count; e++) {
        o = pack_at(pk, o, &it);
        if (!fn(arg, base + e, it.data, it.len)) {
            return false;
        }
    }
    return true;
}

/* fn's return is of no matter while popping. */
struct all_of {
    qlist_fn fn;
    void *arg;
};

static bool
each(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct all_of *a = arg;
    (void)a->fn(a->arg, index, p, len);
    return true;
}

uint64_t
qlist_pop(struct qlist *x, bool head, uint64_t n, qlist_fn fn, void *arg)
{
    uint64_t done = 0;
    struct all_of a = { fn, arg };
    while (done < n && nnodes(x) > 0) {
        size_t i = head ? 0 : nnodes(x) - 1;
        struct pack *pk = node(x, i);
        uint32_t k = n - done < pk->count ? (uint32_t)(n - done) : pk->count;
        if (head) {
            if (fn != NULL) {
                (void)forward_node(&(struct pack){ pk->p, pk->bytes, k }, 0,
                                   done, each, &a);
            }
            pack_delete(pk, 0, k);
        } else {
            if (fn != NULL) {
                (void)reverse_node(pk, pk->count - k, pk->count, 0, each,
                                   &a);
            }
            pack_delete(pk, pack_offset(pk, pk->count - k), k);
        }
        counted(x, -(int64_t)k);
        done += k;
        if (pk->count == 0) {
            node_remove(x, i);
        }
    }
    settle(x);
    return done;
}

/* ---- by index ---------------------------------------------------------- */

void
qlist_index(const struct qlist *x, uint64_t i, struct pack_item *it)
{
    size_t ni;
    uint32_t ei;
    locate(x, i, &ni, &ei);
    const struct pack *pk = node(x, ni);
    (void)pack_at(pk, pack_offset(pk, ei), it);
}

bool
qlist_set(struct qlist *x, uint64_t i, const void *v, size_t len)
{
    if (len > PACK_MAX_BYTES - 8) {
        return false;
    }
    size_t ni;
    uint32_t ei;
    locate(x, i, &ni, &ei);
    struct pack *pk = node(x, ni);
    if (!pack_replace(pk, pack_offset(pk, ei), v, (uint32_t)len)) {
        return false;
    }
    fix(x, ni);
    return true;
}

void
qlist_walk(const struct qlist *x, uint64_t from, bool reverse, qlist_fn fn,
           void *arg)
{
    if (from >= qlist_len(x)) {
        return;
    }
    size_t ni;
    uint32_t ei;
    locate(x, from, &ni, &ei);
    uint64_t base = from - ei;
    if (!reverse) {
        for (size_t k = ni; k < nnodes(x); k++) {
            if (!forward_node(node(x, k), k == ni ? ei : 0, base, fn, arg)) {
                return;
            }
            base += node(x, k)->count;
        }
        return;
    }
    for (size_t k = ni + 1; k-- > 0;) {
        const struct pack *pk = node(x, k);
        if (!reverse_node(pk, 0, k == ni ? ei + 1 : pk->count, base, fn,
                          arg)) {
            return;
        }
        if (k > 0) {
            base -= node(x, k - 1)->count;
        }
    }
}

void
qlist_trim(struct qlist *x, uint64_t start, uint64_t stop)
{
    uint64_t len = qlist_len(x);
    if (start > stop || start >= len) {
        (void)qlist_pop(x, true, len, NULL, NULL);
        return;
    }
    (void)qlist_pop(x, false, len - 1 - stop, NULL, NULL);
    (void)qlist_pop(x, true, start, NULL, NULL);
}

/* ---- by value ---------------------------------------------------------- */

static bool
equal(const struct pack_item *it, const void *v, size_t len)
{
    return it->len == len && (len == 0 || memcmp(it->data, v, len) == 0);
}

/* Remove from pk the matches of v: the first `want` of them, or the last
 * when from_tail (want 0: all). Returns how many went. */
static uint64_t
rem_in_node(struct pack *pk, const void *v, size_t len, uint64_t want,
            bool from_tail)
{
    struct pack_item it;
    uint64_t skip = 0, gone = 0;
    uint32_t o = 0;
    if (from_tail && want != 0) {
        uint64_t m = 0;
        for (uint32_t e = 0; e < pk->count; e++) {
            o = pack_at(pk, o, &it);
            m += equal(&it, v, len);
        }
        skip = m > want ? m - want : 0;
        o = 0;
    }
    while (o < pk->bytes && (want == 0 || gone < want)) {
        uint32_t next = pack_at(pk, o, &it);
        if (!equal(&it, v, len)) {
            o = next;
        } else if (skip > 0) {
            skip--;
            o = next;
        } else {
            pack_delete(pk, o, 1);
            gone++;
        }
    }
    return gone;
}

uint64_t
qlist_rem(struct qlist *x, int64_t count, const void *v, size_t len)
{
    bool from_tail = count < 0;
    uint64_t want = count < 0 ? (uint64_t)0 - (uint64_t)count
                              : (uint64_t)count;
    uint64_t gone = 0;
    size_t n = nnodes(x);
    for (size_t step = 0; step < n && (want == 0 || gone < want); step++) {
        size_t i = from_tail ? n - 1 - step : step;
        gone += rem_in_node(node(x, i), v, len, want == 0 ? 0 : want - gone,
                            from_tail);
    }
    if (x->big != NULL) {
        x->big->count -= gone;
        for (size_t i = x->big->n; i-- > 0;) {
            if (node(x, i)->count == 0) {
                node_remove(x, i);
            }
        }
        for (size_t i = 0; i + 1 < nnodes(x);) {
            size_t before = nnodes(x);
            merge_next(x, i);
            i += nnodes(x) == before;
        }
    }
    settle(x);
    return gone;
}

struct find {
    const void *v;
    size_t len;
    uint64_t at;
    bool found;
};

static bool
find_first(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct find *f = arg;
    struct pack_item it = { p, (uint32_t)len };
    if (equal(&it, f->v, f->len)) {
        f->at = index;
        f->found = true;
        return false;
    }
    return true;
}

int
qlist_insert(struct qlist *x, bool after, const void *pivot, size_t plen,
             const void *v, size_t len)
{
    struct find f = { pivot, plen, 0, false };
    qlist_walk(x, 0, false, find_first, &f);
    if (!f.found) {
        return 0;
    }
    if (len > PACK_MAX_BYTES - 8) {
        return -1;
    }
    uint64_t at = f.at + after;
    if (at == qlist_len(x)) {
        return qlist_push(x, false, v, len) ? 1 : -1;
    }
    size_t ni;
    uint32_t ei;
    locate(x, at, &ni, &ei);
    struct pack *pk = node(x, ni);
    struct pack_item it = { v, (uint32_t)len };
    if (!pack_insert(pk, pack_offset(pk, ei), &it, 1)) {
        return -1;
    }
    counted(x, 1);
    fix(x, ni);
    return 1;
}

/* ---- the whole list ---------------------------------------------------- */

size_t
qlist_owned(const struct qlist *x)
{
    if (x->big == NULL) {
        return pack_owned(&x->pk);
    }
    size_t n = mem_usable(x->big) + mem_usable(x->big->node);
    for (size_t i = 0; i < x->big->n; i++) {
        n += pack_owned(node(x, i));
    }
    return n;
}

void
qlist_free(struct qlist *x)
{
    if (x->big != NULL) {
        for (size_t i = 0; i < x->big->n; i++) {
            pack_free(node(x, i));
        }
        mem_owned_free(x->big->node);
        mem_owned_free(x->big);
        x->big = NULL;
    }
    pack_free(&x->pk);
}

/* The encoding: the element count (8 bytes), then every element as a
 * pack entry (its length as a varint, its bytes), head first. */
bool
qlist_encode(const struct qlist *x, struct membuf *b)
{
    uint64_t len = qlist_len(x);
    if (!membuf_put(b, &len, sizeof len)) {
        return false;
    }
    for (size_t i = 0; i < nnodes(x); i++) {
        const struct pack *pk = node(x, i);
        if (!membuf_put(b, pk->p, pk->bytes)) {
            return false;
        }
    }
    return true;
}

/* One entry's length at p[*off..end): false when cut short, padded or
 * past 32 bits (pack_valid's rules). */
static bool
read_len(const unsigned char *p, size_t end, size_t *off, uint32_t *len)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (*off >= end || shift > 28) {
            return false;
        }
        unsigned char c = p[(*off)++];
        v |= (uint64_t)(c & 0x7f) << shift;
        if ((c & 0x80) == 0) {
            if ((c == 0 && shift > 0) || v > UINT32_MAX ||
                v > end - *off) {
                return false;
            }
            *len = (uint32_t)v;
            *off += v;
            return true;
        }
    }
}

/* Append p[0..bytes) (count whole entries) as a new last node. */
static bool
add_node(struct qlist *x, const unsigned char *p, uint32_t bytes,
         uint32_t count)
{
    unsigned char *q = mem_owned_realloc(NULL, bytes);
    if (q == NULL) {
        return false;
    }
    memcpy(q, p, bytes);
    struct pack pk = { q, bytes, count };
    if (nnodes(x) == 0 && x->big == NULL) {
        x->pk = pk;
        return true;
    }
    if (!node_insert(x, nnodes(x))) {
        mem_owned_free(q);
        return false;
    }
    *node(x, nnodes(x) - 1) = pk;
    counted(x, count);
    return true;
}

/* The elements of p[0..len) into x, cut into nodes as pushes fill them. */
static int
add_entries(struct qlist *x, const unsigned char *p, size_t len,
            uint64_t want)
{
    size_t off = 0, first = 0;
    uint32_t in_node = 0;
    uint64_t seen = 0;
    while (off < len) {
        size_t at = off;
        uint32_t elen;
        if (!read_len(p, len, &off, &elen) || seen == want) {
            return COLL_MALFORMED;
        }
        if (in_node > 0 && (in_node == QLIST_NODE_COUNT ||
                            off - first > QLIST_NODE_BYTES)) {
            if (!add_node(x, p + first, (uint32_t)(at - first), in_node)) {
                return COLL_NOMEM;
            }
            first = at;
            in_node = 0;
        }
        in_node++;
        seen++;
    }
    if (seen != want) {
        return COLL_MALFORMED;
    }
    if (in_node > 0 &&
        !add_node(x, p + first, (uint32_t)(off - first), in_node)) {
        return COLL_NOMEM;
    }
    return COLL_OK;
}

int
qlist_decode(struct qlist *x, const unsigned char *p, size_t len)
{
    uint64_t want;
    if (len < sizeof want) {
        return COLL_MALFORMED;
    }
    memcpy(&want, p, sizeof want);
    return add_entries(x, p + sizeof want, len - sizeof want, want);
}

/* ---- element effects --------------------------------------------------- */

/* len as a pack's entries spell it (lib/pack.h): out holds n bytes. */
static void
varint_put(size_t v, unsigned char *out, size_t *n)
{
    *n = 0;
    while (v >= 0x80) {
        out[(*n)++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    out[(*n)++] = (unsigned char)v;
}

static bool
put_value(struct membuf *b, const void *v, size_t len)
{
    unsigned char h[10];
    size_t n;
    if (len > UINT32_MAX) {
        return false;
    }
    varint_put(len, h, &n);
    return membuf_put(b, h, n) && membuf_put(b, v, len);
}

static bool
put_u64(struct membuf *b, uint64_t v)
{
    return membuf_put(b, &v, sizeof v);
}

bool
qlist_effect_push(struct membuf *b, const void *v, size_t len)
{
    return put_value(b, v, len);
}

/* ok, or (not ok) b cut back to the was bytes it held before a partial
 * write. */
static bool
kept(struct membuf *b, size_t was, bool ok)
{
    if (!ok) {
        b->len = was;
    }
    return ok;
}

bool
qlist_effect_pop(struct membuf *b, uint64_t n)
{
    return put_u64(b, n);
}

bool
qlist_effect_trim(struct membuf *b, uint64_t start, uint64_t stop)
{
    size_t was = b->len;
    return kept(b, was, put_u64(b, start) && put_u64(b, stop));
}

bool
qlist_effect_set(struct membuf *b, uint64_t i, const void *v, size_t len)
{
    size_t was = b->len;
    return kept(b, was, put_u64(b, i) && put_value(b, v, len));
}

bool
qlist_effect_insert(struct membuf *b, bool after, const void *pivot,
                    size_t plen, const void *v, size_t len)
{
    size_t was = b->len;
    unsigned char where = after;
    return kept(b, was, membuf_put(b, &where, 1) &&
                            put_value(b, pivot, plen) && put_value(b, v, len));
}

bool
qlist_effect_rem(struct membuf *b, int64_t count, const void *v, size_t len)
{
    size_t was = b->len;
    return kept(b, was, put_u64(b, (uint64_t)count) && put_value(b, v, len));
}

/* A reader of effect payloads: false once anything is missing. */
struct rd {
    const unsigned char *p;
    size_t len, off;
};

static bool
get_u64(struct rd *r, uint64_t *v)
{
    if (r->len - r->off < sizeof *v) {
        return false;
    }
    memcpy(v, r->p + r->off, sizeof *v);
    r->off += sizeof *v;
    return true;
}

static bool
get_value(struct rd *r, struct pack_item *it)
{
    uint32_t len;
    if (!read_len(r->p, r->len, &r->off, &len)) {
        return false;
    }
    it->len = len;
    it->data = r->p + r->off - len;
    return true;
}

static int
apply_push(struct qlist *x, bool head, struct rd *r)
{
    if (r->len == 0) {
        return COLL_MALFORMED;
    }
    /* Check the whole payload first, so a bad one changes nothing. */
    struct rd scan = *r;
    struct pack_item it;
    while (scan.off < scan.len) {
        if (!get_value(&scan, &it)) {
            return COLL_MALFORMED;
        }
    }
    while (r->off < r->len) {
        (void)get_value(r, &it);
        if (!qlist_push(x, head, it.data, it.len)) {
            return COLL_NOMEM;
        }
    }
    return COLL_OK;
}

static int
apply_more(struct qlist *x, uint8_t op, struct rd *r)
{
    uint64_t a, b;
    struct pack_item v, pivot;
    switch (op) {
    case QLIST_OP_SET:
        if (!get_u64(r, &a) || !get_value(r, &v) || r->off != r->len ||
            a >= qlist_len(x)) {
            return COLL_MALFORMED;
        }
        return qlist_set(x, a, v.data, v.len) ? COLL_OK : COLL_NOMEM;
    case QLIST_OP_INSERT:
        if (r->len < 1 || r->p[0] > 1) {
            return COLL_MALFORMED;
        }
        r->off = 1;
        if (!get_value(r, &pivot) || !get_value(r, &v) ||
            r->off != r->len) {
            return COLL_MALFORMED;
        }
        return qlist_insert(x, r->p[0] == 1, pivot.data, pivot.len, v.data,
                            v.len) < 0
                   ? COLL_NOMEM
                   : COLL_OK;
    case QLIST_OP_REM:
        if (!get_u64(r, &a) || !get_value(r, &v) || r->off != r->len) {
            return COLL_MALFORMED;
        }
        (void)qlist_rem(x, (int64_t)a, v.data, v.len);
        return COLL_OK;
    case QLIST_OP_TRIM:
        if (!get_u64(r, &a) || !get_u64(r, &b) || r->off != r->len ||
            (a <= b && b >= qlist_len(x))) {
            return COLL_MALFORMED;
        }
        qlist_trim(x, a, b);
        return COLL_OK;
    default:
        return COLL_MALFORMED;
    }
}

int
qlist_apply(struct qlist *x, uint8_t op, const unsigned char *p, size_t len)
{
    struct rd r = { p, len, 0 };
    uint64_t n;
    switch (op) {
    case QLIST_OP_PUSH_HEAD:
    case QLIST_OP_PUSH_TAIL:
        return apply_push(x, op == QLIST_OP_PUSH_HEAD, &r);
    case QLIST_OP_POP_HEAD:
    case QLIST_OP_POP_TAIL:
        if (!get_u64(&r, &n) || r.off != len || n > qlist_len(x)) {
            return COLL_MALFORMED;
        }
        (void)qlist_pop(x, op == QLIST_OP_POP_HEAD, n, NULL, NULL);
        return COLL_OK;
    default:
        return apply_more(x, op, &r);
    }
}
