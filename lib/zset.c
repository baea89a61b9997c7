/*
 * zset.c - a Redis sorted set: a pack of member, score pairs while small,
 * a skiplist with spans and a dict once large (see zset.h).
 */
#include "lib/zset.h"

#include <math.h>
#include <string.h>

#include "lib/dict.h"

/* ---- ordering ----------------------------------------------------------- */

int
zset_cmp_member(const void *a, size_t alen, const void *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n > 0 ? memcmp(a, b, n) : 0;
    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* (sa, a) against (sb, b): by score, then by member. */
static int
cmp_pair(double sa, const void *a, size_t alen, double sb, const void *b,
         size_t blen)
{
    if (sa < sb) {
        return -1;
    }
    if (sa > sb) {
        return 1;
    }
    return zset_cmp_member(a, alen, b, blen);
}

bool
zset_score_gte_min(double score, const struct zset_range *r)
{
    return r->minex ? score > r->min : score >= r->min;
}

bool
zset_score_lte_max(double score, const struct zset_range *r)
{
    return r->maxex ? score < r->max : score <= r->max;
}

static bool
range_empty(const struct zset_range *r)
{
    return r->min > r->max || (r->min == r->max && (r->minex || r->maxex));
}

/* A member against a lex bound ("-" is below and "+" above every member). */
static int
cmp_lex(const void *m, size_t len, const struct zset_lex_bound *b)
{
    if (b->inf != 0) {
        return -b->inf;
    }
    return zset_cmp_member(m, len, b->s, b->len);
}

bool
zset_lex_gte_min(const void *m, size_t len, const struct zset_lex *r)
{
    int c = cmp_lex(m, len, &r->min);
    return r->min.ex ? c > 0 : c >= 0;
}

bool
zset_lex_lte_max(const void *m, size_t len, const struct zset_lex *r)
{
    int c = cmp_lex(m, len, &r->max);
    return r->max.ex ? c < 0 : c <= 0;
}

/* Redis's sdscmplex() of the two bounds: "-" and "+" equal themselves. */
static int
cmp_bounds(const struct zset_lex_bound *a, const struct zset_lex_bound *b)
{
    if (a->inf != 0 && a->inf == b->inf) {
        return 0;
    }
    if (a->inf == -1 || b->inf == 1) {
        return -1;
    }
    if (a->inf == 1 || b->inf == -1) {
        return 1;
    }
    return zset_cmp_member(a->s, a->len, b->s, b->len);
}

static bool
lex_empty(const struct zset_lex *r)
{
    int c = cmp_bounds(&r->min, &r->max);
    return c > 0 || (c == 0 && (r->min.ex || r->max.ex));
}

/* ---- the compact encoding ------------------------------------------------ */

#define SCORE_BYTES 8

/* The pair at byte offset off: its member and score; the next pair's
 * offset. */
static uint32_t
zp_pair(const struct pack *pk, uint32_t off, struct pack_item *m,
        double *score)
{
    struct pack_item s;
    off = pack_at(pk, off, m);
    off = pack_at(pk, off, &s);
    memcpy(score, s.data, SCORE_BYTES);
    return off;
}

static uint32_t
zp_count(const struct pack *pk)
{
    return pk->count / 2;
}

/* Each pair's offset into offs (and pk->bytes after the last); the
 * pairs. */
static uint32_t
zp_offsets(const struct pack *pk, uint32_t *offs)
{
    uint32_t n = zp_count(pk), off = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct pack_item m;
        double s;
        offs[i] = off;
        off = zp_pair(pk, off, &m, &s);
    }
    offs[n] = off;
    return n;
}

/* m's pair: its offset and score; false when absent. */
static bool
zp_find(const struct pack *pk, const void *m, size_t len, uint32_t *at,
        double *score)
{
    uint32_t off = 0;
    while (off < pk->bytes) {
        struct pack_item it;
        uint32_t next = zp_pair(pk, off, &it, score);
        if (it.len == len && memcmp(it.data, m, len) == 0) {
            *at = off;
            return true;
        }
        off = next;
    }
    return false;
}

/* Where (score, m) belongs: the offset of the first pair above it. */
static uint32_t
zp_insert_at(const struct pack *pk, double score, const void *m, size_t len)
{
    uint32_t off = 0;
    while (off < pk->bytes) {
        struct pack_item it;
        double s;
        uint32_t next = zp_pair(pk, off, &it, &s);
        if (cmp_pair(s, it.data, it.len, score, m, len) > 0) {
            break;
        }
        off = next;
    }
    return off;
}

/* The score a pack keeps: Redis's listpack writes an integral score as
 * an integer, so -0 comes back as 0 (a skiplist keeps -0). */
static double
zp_stored(double score)
{
    return score == 0 ? 0.0 : score;
}

static bool
zp_insert(struct pack *pk, double score, const void *m, size_t len)
{
    score = zp_stored(score);
    struct pack_item items[2] = {
        { m, (uint32_t)len },
        { (const unsigned char *)&score, SCORE_BYTES },
    };
    return pack_insert(pk, zp_insert_at(pk, score, m, len), items, 2);
}

/* m's pair at off gets score: the new pair goes in first, so running out
 * of memory leaves the pack as it was. */
static bool
zp_move(struct pack *pk, uint32_t off, const void *m, size_t len,
        double score)
{
    score = zp_stored(score);
    uint32_t at = zp_insert_at(pk, score, m, len);
    struct pack_item items[2] = {
        { m, (uint32_t)len },
        { (const unsigned char *)&score, SCORE_BYTES },
    };
    if (!pack_insert(pk, at, items, 2)) {
        return false;
    }
    if (at <= off) {
        off += (uint32_t)(pack_entry_size(len) +
                          pack_entry_size(SCORE_BYTES));
    }
    pack_delete(pk, off, 2);
    return true;
}

/* ---- the large encoding --------------------------------------------------- */

#define ZS_MAXLEVEL 32

struct zs_node {
    double score;
    struct dict_entry *de;      /* the member: its dict entry */
    struct zs_node *back;
    uint32_t height;
    struct zs_link {
        struct zs_node *fwd;
        uint64_t span;          /* members this link steps over */
    } lv[];
};

struct zset_big {
    struct dict d;
    struct zs_node *head;       /* ZS_MAXLEVEL links, no member */
    struct zs_node *tail;
    uint64_t length;
    uint32_t level;
    size_t nodes_owned;         /* the nodes' and the head's bytes */
};

static const unsigned char *
node_m(const struct zs_node *n)
{
    return dict_key(n->de);
}

static size_t
node_len(const struct zs_node *n)
{
    return n->de->klen;
}

/* Node a before (score, m)? */
static bool
node_below(const struct zs_node *a, double score, const void *m, size_t len)
{
    return cmp_pair(a->score, node_m(a), node_len(a), score, m, len) < 0;
}

/* A level for a new node: each one up with a chance of 1/4, as Redis's. */
static uint32_t
random_level(void)
{
    static uint64_t s = 0x9e3779b97f4a7c15u;
    uint32_t level = 1;
    for (;;) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if ((s & 3) != 0 || level >= ZS_MAXLEVEL) {
            return level;
        }
        level++;
    }
}

static struct zs_node *
node_new(struct zset_big *b, uint32_t height)
{
    size_t size = sizeof(struct zs_node) + height * sizeof(struct zs_link);
    struct zs_node *n = mem_owned_realloc(NULL, size);
    if (n == NULL) {
        return NULL;
    }
    memset(n, 0, size);
    n->height = height;
    b->nodes_owned += mem_usable(n);
    return n;
}

static void
node_free(struct zset_big *b, struct zs_node *n)
{
    b->nodes_owned -= mem_usable(n);
    mem_owned_free(n);
}

static struct zset_big *
big_new(void)
{
    struct zset_big *b = mem_owned_realloc(NULL, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    memset(b, 0, sizeof(*b));
    b->level = 1;
    b->head = node_new(b, ZS_MAXLEVEL);
    if (b->head == NULL) {
        mem_owned_free(b);
        return NULL;
    }
    return b;
}

static void
big_free(struct zset_big *b)
{
    struct zs_node *n = b->head->lv[0].fwd;
    while (n != NULL) {
        struct zs_node *next = n->lv[0].fwd;
        node_free(b, n);
        n = next;
    }
    node_free(b, b->head);
    dict_free(&b->d);
    mem_owned_free(b);
}

/* Link node n (its score and member set) in its place. */
static void
zsl_link(struct zset_big *b, struct zs_node *n)
{
    struct zs_node *update[ZS_MAXLEVEL], *x = b->head;
    uint64_t rank[ZS_MAXLEVEL];
    for (int i = (int)b->level - 1; i >= 0; i--) {
        rank[i] = i == (int)b->level - 1 ? 0 : rank[i + 1];
        while (x->lv[i].fwd != NULL &&
               node_below(x->lv[i].fwd, n->score, node_m(n), node_len(n))) {
            rank[i] += x->lv[i].span;
            x = x->lv[i].fwd;
        }
        update[i] = x;
    }
    if (n->height > b->level) {
        for (uint32_t i = b->level; i < n->height; i++) {
            rank[i] = 0;
            update[i] = b->head;
            b->head->lv[i].span = b->length;
        }
        b->level = n->height;
    }
    for (uint32_t i = 0; i < n->height; i++) {
        n->lv[i].fwd = update[i]->lv[i].fwd;
        update[i]->lv[i].fwd = n;
        n->lv[i].span = update[i]->lv[i].span - (rank[0] - rank[i]);
        update[i]->lv[i].span = rank[0] - rank[i] + 1;
    }
    for (uint32_t i = n->height; i < b->level; i++) {
        update[i]->lv[i].span++;
    }
    n->back = update[0] == b->head ? NULL : update[0];
    if (n->lv[0].fwd != NULL) {
        n->lv[0].fwd->back = n;
    } else {
        b->tail = n;
    }
    b->length++;
}

/* Unlink n, whose predecessors at each level are update[]. */
static void
zsl_unlink_at(struct zset_big *b, struct zs_node *n,
              struct zs_node **update)
{
    for (uint32_t i = 0; i < b->level; i++) {
        if (update[i]->lv[i].fwd == n) {
            update[i]->lv[i].span += n->lv[i].span - 1;
            update[i]->lv[i].fwd = n->lv[i].fwd;
        } else {
            update[i]->lv[i].span--;
        }
    }
    if (n->lv[0].fwd != NULL) {
        n->lv[0].fwd->back = n->back;
    } else {
        b->tail = n->back;
    }
    while (b->level > 1 && b->head->lv[b->level - 1].fwd == NULL) {
        b->level--;
    }
    b->length--;
}

static void
zsl_unlink(struct zset_big *b, struct zs_node *n)
{
    struct zs_node *update[ZS_MAXLEVEL], *x = b->head;
    for (int i = (int)b->level - 1; i >= 0; i--) {
        while (x->lv[i].fwd != NULL &&
               node_below(x->lv[i].fwd, n->score, node_m(n), node_len(n))) {
            x = x->lv[i].fwd;
        }
        update[i] = x;
    }
    zsl_unlink_at(b, n, update);
}

/* A new member into the skiplist and the dict; NULL when out of memory
 * (nothing changed). */
static struct zs_node *
big_insert(struct zset_big *b, const void *m, size_t len, double score)
{
    struct zs_node *n = node_new(b, random_level());
    if (n == NULL) {
        return NULL;
    }
    struct dict_entry *de = dict_add(&b->d, m, (uint32_t)len, NULL, 0);
    if (de == NULL) {
        node_free(b, n);
        return NULL;
    }
    de->owner.p = n;
    n->de = de;
    n->score = score;
    zsl_link(b, n);
    return n;
}

/* n's score becomes score: in place when its order holds, else moved. */
static void
big_rescore(struct zset_big *b, struct zs_node *n, double score)
{
    const unsigned char *m = node_m(n);
    size_t len = node_len(n);
    bool after_back = n->back == NULL ||
                      node_below(n->back, score, m, len);
    bool before_next = n->lv[0].fwd == NULL ||
                       cmp_pair(n->lv[0].fwd->score, node_m(n->lv[0].fwd),
                                node_len(n->lv[0].fwd), score, m, len) > 0;
    if (after_back && before_next) {
        n->score = score;
        return;
    }
    zsl_unlink(b, n);
    n->score = score;
    zsl_link(b, n);
}

/* Drop the n members after the predecessors update[]. */
static void
big_delete_run(struct zset_big *b, struct zs_node **update, uint64_t count)
{
    struct zs_node *x = update[0]->lv[0].fwd;
    while (x != NULL && count-- > 0) {
        struct zs_node *next = x->lv[0].fwd;
        zsl_unlink_at(b, x, update);
        dict_remove(&b->d, x->de);
        node_free(b, x);
        x = next;
    }
}

/* The node of rank (0-based, < length). */
static struct zs_node *
big_at(const struct zset_big *b, uint64_t rank)
{
    struct zs_node *x = b->head;
    uint64_t traversed = 0, want = rank + 1;
    for (int i = (int)b->level - 1; i >= 0; i--) {
        while (x->lv[i].fwd != NULL && traversed + x->lv[i].span <= want) {
            traversed += x->lv[i].span;
            x = x->lv[i].fwd;
        }
        if (traversed == want) {
            return x;
        }
    }
    return NULL;
}

/* n's rank (0-based). */
static uint64_t
big_rank(const struct zset_big *b, const struct zs_node *n)
{
    struct zs_node *x = b->head;
    uint64_t rank = 0;
    for (int i = (int)b->level - 1; i >= 0; i--) {
        while (x->lv[i].fwd != NULL &&
               cmp_pair(x->lv[i].fwd->score, node_m(x->lv[i].fwd),
                        node_len(x->lv[i].fwd), n->score, node_m(n),
                        node_len(n)) <= 0) {
            rank += x->lv[i].span;
            x = x->lv[i].fwd;
        }
        if (x == n) {
            break;
        }
    }
    return rank - 1;
}

/* The pack's pairs into a new large encoding; false (nothing changed)
 * when out of memory. */
static bool
convert(struct zset *x)
{
    struct zset_big *b = big_new();
    if (b == NULL || !dict_expand(&b->d, zp_count(&x->pk) + 1)) {
        if (b != NULL) {
            big_free(b);
        }
        return false;
    }
    uint32_t off = 0;
    while (off < x->pk.bytes) {
        struct pack_item m;
        double s;
        off = zp_pair(&x->pk, off, &m, &s);
        if (big_insert(b, m.data, m.len, s) == NULL) {
            big_free(b);
            return false;
        }
    }
    pack_free(&x->pk);
    x->big = b;
    return true;
}

bool
zset_make_large(struct zset *x)
{
    return !zset_is_compact(x) || convert(x);
}

/* ---- every collection's functions ---------------------------------------- */

uint64_t
zset_len(const struct zset *x)
{
    return x->big != NULL ? x->big->length : zp_count(&x->pk);
}

size_t
zset_owned(const struct zset *x)
{
    size_t n = pack_owned(&x->pk);
    if (x->big != NULL) {
        n += mem_usable(x->big) + x->big->d.owned + x->big->nodes_owned;
    }
    return n;
}

void
zset_free(struct zset *x)
{
    pack_free(&x->pk);
    if (x->big != NULL) {
        big_free(x->big);
        x->big = NULL;
    }
}

/* ---- reading ----------------------------------------------------------------- */

bool
zset_score(const struct zset *x, const void *m, size_t len, double *score)
{
    if (x->big != NULL) {
        struct dict_entry *de = dict_find(&x->big->d, m, len);
        if (de == NULL) {
            return false;
        }
        *score = ((const struct zs_node *)de->owner.p)->score;
        return true;
    }
    uint32_t off;
    return zp_find(&x->pk, m, len, &off, score);
}

bool
zset_rank(const struct zset *x, const void *m, size_t len, bool reverse,
          uint64_t *rank)
{
    uint64_t r = 0;
    if (x->big != NULL) {
        struct dict_entry *de = dict_find(&x->big->d, m, len);
        if (de == NULL) {
            return false;
        }
        r = big_rank(x->big, de->owner.p);
    } else {
        uint32_t off = 0;
        bool found = false;
        while (off < x->pk.bytes) {
            struct pack_item it;
            double s;
            off = zp_pair(&x->pk, off, &it, &s);
            if (it.len == len && memcmp(it.data, m, len) == 0) {
                found = true;
                break;
            }
            r++;
        }
        if (!found) {
            return false;
        }
    }
    *rank = reverse ? zset_len(x) - 1 - r : r;
    return true;
}

/* The compact pair i's member and score (offs from zp_offsets()). */
static void
zp_get(const struct pack *pk, const uint32_t *offs, uint32_t i,
       struct pack_item *m, double *s)
{
    (void)zp_pair(pk, offs[i], m, s);
}

static bool
score_above_min(const unsigned char *m, size_t len, double s, const void *r)
{
    (void)m;
    (void)len;
    return zset_score_gte_min(s, r);
}

static bool
score_below_max(const unsigned char *m, size_t len, double s, const void *r)
{
    (void)m;
    (void)len;
    return zset_score_lte_max(s, r);
}

static bool
lex_above_min(const unsigned char *m, size_t len, double s, const void *r)
{
    (void)s;
    return zset_lex_gte_min(m, len, r);
}

static bool
lex_below_max(const unsigned char *m, size_t len, double s, const void *r)
{
    (void)s;
    return zset_lex_lte_max(m, len, r);
}

/* A range's two ends as element tests: by score or by member. */
struct zbounds {
    zset_elem_test above_min;
    zset_elem_test below_max;
};

static const struct zbounds score_bounds = {score_above_min, score_below_max};
static const struct zbounds lex_bounds = {lex_above_min, lex_below_max};

static bool
node_in(zset_elem_test t, const struct zs_node *n, const void *r)
{
    return t(node_m(n), node_len(n), n->score, r);
}

/* zslIsInRange()/zslIsInLexRange() and their listpack twins: may any
 * member be in r (the last not below it, the first not above it)? */
static bool
range_maybe(const struct zset *x, const struct zbounds *o, const void *r)
{
    if (zset_len(x) == 0) {
        return false;
    }
    struct zset_iter it;
    const unsigned char *m;
    size_t len;
    double s;
    zset_iter_at(&it, x, zset_len(x) - 1);
    zset_iter_get(&it, &m, &len, &s);
    if (!o->above_min(m, len, s, r)) {
        return false;
    }
    zset_iter_at(&it, x, 0);
    zset_iter_get(&it, &m, &len, &s);
    return o->below_max(m, len, s, r);
}

/* Down the skiplist past every node whose test is `pass`: the last such
 * node (the head if none) and its rank + 1 in *t. */
static struct zs_node *
big_past(const struct zset_big *b, zset_elem_test test, bool pass,
         const void *r, uint64_t *t)
{
    struct zs_node *p = b->head;
    *t = 0;
    for (int i = (int)b->level - 1; i >= 0; i--) {
        while (p->lv[i].fwd != NULL &&
               node_in(test, p->lv[i].fwd, r) == pass) {
            *t += p->lv[i].span;
            p = p->lv[i].fwd;
        }
    }
    return p;
}

static bool
first_in(const struct zset *x, const struct zbounds *o, const void *r,
         uint64_t *rank)
{
    if (!range_maybe(x, o, r)) {
        return false;
    }
    if (x->big != NULL) {
        uint64_t t;
        struct zs_node *p = big_past(x->big, o->above_min, false, r, &t);
        p = p->lv[0].fwd;
        if (p == NULL || !node_in(o->below_max, p, r)) {
            return false;
        }
        *rank = t;
        return true;
    }
    uint32_t offs[ZSET_PACK_MAX_ENTRIES + 1];
    uint32_t cnt = zp_offsets(&x->pk, offs);
    for (uint32_t i = 0; i < cnt; i++) {
        struct pack_item m;
        double s;
        zp_get(&x->pk, offs, i, &m, &s);
        if (o->above_min(m.data, m.len, s, r)) {
            *rank = i;
            return o->below_max(m.data, m.len, s, r);
        }
    }
    return false;
}

static bool
last_in(const struct zset *x, const struct zbounds *o, const void *r,
        uint64_t *rank)
{
    if (!range_maybe(x, o, r)) {
        return false;
    }
    if (x->big != NULL) {
        const struct zset_big *b = x->big;
        uint64_t t;
        struct zs_node *p = big_past(b, o->below_max, true, r, &t);
        if (p == b->head || !node_in(o->above_min, p, r)) {
            return false;
        }
        *rank = t - 1;
        return true;
    }
    uint32_t offs[ZSET_PACK_MAX_ENTRIES + 1];
    uint32_t cnt = zp_offsets(&x->pk, offs);
    for (uint32_t i = cnt; i-- > 0;) {
        struct pack_item m;
        double s;
        zp_get(&x->pk, offs, i, &m, &s);
        if (o->below_max(m.data, m.len, s, r)) {
            *rank = i;
            return o->above_min(m.data, m.len, s, r);
        }
    }
    return false;
}

bool
zset_first_in_range(const struct zset *x, const struct zset_range *r,
                    uint64_t *rank)
{
    return !range_empty(r) && first_in(x, &score_bounds, r, rank);
}

bool
zset_last_in_range(const struct zset *x, const struct zset_range *r,
                   uint64_t *rank)
{
    return !range_empty(r) && last_in(x, &score_bounds, r, rank);
}

bool
zset_first_in_lex(const struct zset *x, const struct zset_lex *r,
                  uint64_t *rank)
{
    return !lex_empty(r) && first_in(x, &lex_bounds, r, rank);
}

bool
zset_last_in_lex(const struct zset *x, const struct zset_lex *r,
                 uint64_t *rank)
{
    return !lex_empty(r) && last_in(x, &lex_bounds, r, rank);
}

uint64_t
zset_run_while(const struct zset *x, uint64_t at, zset_elem_test in,
               const void *arg)
{
    uint64_t n = 0;
    struct zset_iter it;
    zset_iter_at(&it, x, at);
    do {
        const unsigned char *m;
        size_t len;
        double s;
        zset_iter_get(&it, &m, &len, &s);
        if (!in(m, len, s, arg)) {
            break;
        }
        n++;
    } while (zset_iter_next(&it));
    return n;
}

/* A range's count from the rank of its first element: a skiplist's from
 * the rank of its last (NULL: none), a listpack's by walking while `in`
 * holds, as Redis counts in each (ZLEXCOUNT over differing scores tells
 * the two apart). */
static uint64_t
count_from(const struct zset *x, uint64_t first, const uint64_t *last,
           zset_elem_test in, const void *r)
{
    if (x->big == NULL) {
        return zset_run_while(x, first, in, r);
    }
    uint64_t n = x->big->length - first;
    if (last != NULL) {
        n -= x->big->length - 1 - *last;
    }
    return n;
}

uint64_t
zset_count_range(const struct zset *x, const struct zset_range *r)
{
    uint64_t first, last;
    bool any = zset_first_in_range(x, r, &first);
    bool ends = any && x->big != NULL && zset_last_in_range(x, r, &last);
    return any ? count_from(x, first, ends ? &last : NULL, score_below_max, r)
               : 0;
}

uint64_t
zset_count_lex(const struct zset *x, const struct zset_lex *r)
{
    uint64_t first, last;
    bool any = zset_first_in_lex(x, r, &first);
    bool ends = any && x->big != NULL && zset_last_in_lex(x, r, &last);
    return any ? count_from(x, first, ends ? &last : NULL, lex_below_max, r)
               : 0;
}

/* ---- walking ---------------------------------------------------------------- */

void
zset_iter_at(struct zset_iter *it, const struct zset *x, uint64_t rank)
{
    it->x = x;
    it->rank = rank;
    it->node = NULL;
    it->off = 0;
    if (x->big != NULL) {
        it->node = big_at(x->big, rank);
        return;
    }
    (void)zp_offsets(&x->pk, it->offs);
    it->off = it->offs[rank];
}

void
zset_iter_get(const struct zset_iter *it, const unsigned char **m,
              size_t *len, double *score)
{
    if (it->x->big != NULL) {
        const struct zs_node *n = it->node;
        *m = node_m(n);
        *len = node_len(n);
        *score = n->score;
        return;
    }
    struct pack_item item;
    (void)zp_pair(&it->x->pk, it->off, &item, score);
    *m = item.data;
    *len = item.len;
}

bool
zset_iter_next(struct zset_iter *it)
{
    if (it->rank + 1 >= zset_len(it->x)) {
        return false;
    }
    it->rank++;
    if (it->x->big != NULL) {
        it->node = ((struct zs_node *)it->node)->lv[0].fwd;
    } else {
        it->off = it->offs[it->rank];
    }
    return true;
}

bool
zset_iter_prev(struct zset_iter *it)
{
    if (it->rank == 0) {
        return false;
    }
    it->rank--;
    if (it->x->big != NULL) {
        it->node = ((struct zs_node *)it->node)->back;
    } else {
        it->off = it->offs[it->rank];
    }
    return true;
}

struct scan_ctx {
    zset_scan_fn fn;
    void *arg;
};

static void
scan_one(const struct dict_entry *e, void *arg)
{
    const struct scan_ctx *ctx = arg;
    const struct zs_node *n = e->owner.p;
    ctx->fn(dict_key(e), e->klen, n->score, ctx->arg);
}

uint64_t
zset_scan(const struct zset *x, uint64_t cursor, zset_scan_fn fn, void *arg)
{
    if (x->big != NULL) {
        struct scan_ctx ctx = { fn, arg };
        return dict_scan(&x->big->d, cursor, scan_one, &ctx);
    }
    uint32_t off = 0;
    while (off < x->pk.bytes) {
        struct pack_item m;
        double s;
        off = zp_pair(&x->pk, off, &m, &s);
        fn(m.data, m.len, s, arg);
    }
    return 0;
}

/* ---- writing ---------------------------------------------------------------- */

/* What to do with a member present at cur under flags: ZSET_NAN, ZSET_NOP,
 * or -1 with *score its new score. */
static int
existing(unsigned flags, double cur, double *score)
{
    if (flags & ZSET_NX) {
        return ZSET_NOP;
    }
    if (flags & ZSET_INCR) {
        *score += cur;
        if (isnan(*score)) {
            return ZSET_NAN;
        }
    }
    if (((flags & ZSET_LT) && *score >= cur) ||
        ((flags & ZSET_GT) && *score <= cur)) {
        return ZSET_NOP;
    }
    return -1;
}

static enum zset_add_rc
big_add(struct zset_big *b, const void *m, size_t len, double score,
        unsigned flags, double *newscore)
{
    struct dict_entry *de = dict_find(&b->d, m, len);
    if (de != NULL) {
        struct zs_node *n = de->owner.p;
        int rc = existing(flags, n->score, &score);
        if (rc >= 0) {
            return (enum zset_add_rc)rc;
        }
        *newscore = score;
        if (score == n->score) {
            return ZSET_SAME;
        }
        big_rescore(b, n, score);
        return ZSET_UPDATED;
    }
    if (flags & ZSET_XX) {
        return ZSET_NOP;
    }
    if (big_insert(b, m, len, score) == NULL) {
        return ZSET_NOMEM;
    }
    *newscore = score;
    return ZSET_ADDED;
}

enum zset_add_rc
zset_add(struct zset *x, const void *m, size_t len, double score,
         unsigned flags, double *newscore)
{
    if (isnan(score)) {
        return ZSET_NAN;
    }
    if (len > UINT32_MAX) {
        return ZSET_NOMEM;
    }
    if (x->big != NULL) {
        return big_add(x->big, m, len, score, flags, newscore);
    }
    uint32_t off;
    double cur;
    if (zp_find(&x->pk, m, len, &off, &cur)) {
        int rc = existing(flags, cur, &score);
        if (rc >= 0) {
            return (enum zset_add_rc)rc;
        }
        *newscore = score;
        if (score == cur) {
            return ZSET_SAME;
        }
        return zp_move(&x->pk, off, m, len, score) ? ZSET_UPDATED
                                                   : ZSET_NOMEM;
    }
    if (flags & ZSET_XX) {
        return ZSET_NOP;
    }
    if (zp_count(&x->pk) + 1 > ZSET_PACK_MAX_ENTRIES ||
        len > ZSET_PACK_MAX_VALUE) {
        if (!convert(x)) {
            return ZSET_NOMEM;
        }
        return big_add(x->big, m, len, score, flags, newscore);
    }
    if (!zp_insert(&x->pk, score, m, len)) {
        return ZSET_NOMEM;
    }
    *newscore = score;
    return ZSET_ADDED;
}

bool
zset_remove(struct zset *x, const void *m, size_t len)
{
    if (x->big != NULL) {
        struct dict_entry *de = dict_find(&x->big->d, m, len);
        if (de == NULL) {
            return false;
        }
        struct zs_node *n = de->owner.p;
        zsl_unlink(x->big, n);
        dict_remove(&x->big->d, de);
        node_free(x->big, n);
        return true;
    }
    uint32_t off;
    double cur;
    if (!zp_find(&x->pk, m, len, &off, &cur)) {
        return false;
    }
    pack_delete(&x->pk, off, 2);
    return true;
}

void
zset_remove_ranks(struct zset *x, uint64_t first, uint64_t n)
{
    uint64_t len = zset_len(x);
    if (first >= len || n == 0) {
        return;
    }
    if (n > len - first) {
        n = len - first;
    }
    if (x->big == NULL) {
        pack_delete(&x->pk, pack_offset(&x->pk, (uint32_t)first * 2),
                    (uint32_t)n * 2);
        return;
    }
    struct zset_big *b = x->big;
    struct zs_node *update[ZS_MAXLEVEL], *p = b->head;
    uint64_t t = 0;
    for (int i = (int)b->level - 1; i >= 0; i--) {
        while (p->lv[i].fwd != NULL && t + p->lv[i].span <= first) {
            t += p->lv[i].span;
            p = p->lv[i].fwd;
        }
        update[i] = p;
    }
    big_delete_run(b, update, n);
}

size_t
zset_add_cost(const struct zset *x, uint64_t n, size_t bytes, size_t maxlen)
{
    size_t node = sizeof(struct zs_node) + 2 * sizeof(struct zs_link);
    size_t entry = sizeof(struct dict_entry) + 16;
    uint64_t len = zset_len(x);
    if (x->big == NULL && len + n <= ZSET_PACK_MAX_ENTRIES &&
        maxlen <= ZSET_PACK_MAX_VALUE) {
        return bytes + (size_t)n * (pack_entry_size(0) +
                                    pack_entry_size(SCORE_BYTES));
    }
    size_t cost = bytes + (size_t)n * (node + entry + 2 * sizeof(void *));
    if (x->big == NULL) {
        /* The conversion makes a node and an entry of every member. */
        cost += x->pk.bytes + (size_t)len * (node + entry + 64) + 1024;
    }
    return cost;
}

/* ---- bytes: the whole state and the effects ---------------------------------- */

/*
 * The whole state: u8 kind (0 compact, 1 large), u64 n, then n x (u32
 * length, member bytes, double score) in order. Host byte order.
 */
#define KIND_COMPACT 0
#define KIND_BIG 1

static bool
put_member(struct membuf *b, const void *m, size_t len)
{
    uint32_t l = (uint32_t)len;
    return membuf_put(b, &l, sizeof(l)) && membuf_put(b, m, len);
}

bool
zset_encode(const struct zset *x, struct membuf *b)
{
    uint8_t kind = x->big != NULL ? KIND_BIG : KIND_COMPACT;
    uint64_t n = zset_len(x);
    if (!membuf_put(b, &kind, 1) || !membuf_put(b, &n, sizeof(n))) {
        return false;
    }
    if (n == 0) {
        return true;
    }
    struct zset_iter it;
    zset_iter_at(&it, x, 0);
    do {
        const unsigned char *m;
        size_t len;
        double s;
        zset_iter_get(&it, &m, &len, &s);
        if (!put_member(b, m, len) || !membuf_put(b, &s, sizeof(s))) {
            return false;
        }
    } while (zset_iter_next(&it));
    return true;
}

/* The next member (and score when score != NULL). */
static bool
rd_member(struct membuf_reader *r, const unsigned char **m, size_t *len,
          double *score)
{
    uint32_t l;
    if (!membuf_read(r, &l, sizeof(l)) || !membuf_skip(r, l, m)) {
        return false;
    }
    *len = l;
    return score == NULL || (membuf_read(r, score, sizeof(*score)) &&
                             !isnan(*score));
}

#define PAIR_MIN (sizeof(uint32_t) + sizeof(double))

static int
decode_compact(struct zset *x, struct membuf_reader *r, uint64_t n)
{
    struct pack_item items[2 * ZSET_PACK_MAX_ENTRIES];
    if (n > ZSET_PACK_MAX_ENTRIES) {
        return COLL_MALFORMED;
    }
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *m;
        size_t len;
        double s;
        if (!rd_member(r, &m, &len, &s) || len > ZSET_PACK_MAX_VALUE) {
            return COLL_MALFORMED;
        }
        items[2 * i] = (struct pack_item){ m, (uint32_t)len };
        items[2 * i + 1] = (struct pack_item){ r->p - sizeof(s),
                                               SCORE_BYTES };
        for (uint64_t j = 0; j < i; j++) {
            double sj;
            memcpy(&sj, items[2 * j + 1].data, sizeof(sj));
            if (zset_cmp_member(items[2 * j].data, items[2 * j].len, m, len) ==
                0) {
                return COLL_MALFORMED;
            }
            if (j + 1 == i &&
                cmp_pair(sj, items[2 * j].data, items[2 * j].len, s, m,
                         len) >= 0) {
                return COLL_MALFORMED;
            }
        }
    }
    if (r->left != 0) {
        return COLL_MALFORMED;
    }
    if (n > 0 && !pack_insert(&x->pk, 0, items, (uint32_t)(2 * n))) {
        return COLL_NOMEM;
    }
    return COLL_OK;
}

static int
decode_big(struct zset *x, struct membuf_reader *r, uint64_t n)
{
    x->big = big_new();
    if (x->big == NULL || !dict_expand(&x->big->d, n)) {
        return COLL_NOMEM;
    }
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *m;
        size_t len;
        double s;
        if (!rd_member(r, &m, &len, &s) ||
            dict_find(&x->big->d, m, len) != NULL) {
            return COLL_MALFORMED;
        }
        if (big_insert(x->big, m, len, s) == NULL) {
            return COLL_NOMEM;
        }
    }
    return r->left == 0 ? COLL_OK : COLL_MALFORMED;
}

int
zset_decode(struct zset *x, const unsigned char *p, size_t len)
{
    struct membuf_reader r = { p, len };
    uint8_t kind;
    uint64_t n;
    if (!membuf_read(&r, &kind, 1) || !membuf_read(&r, &n, sizeof(n)) ||
        n > r.left / PAIR_MIN) {
        return COLL_MALFORMED;
    }
    if (kind == KIND_COMPACT) {
        return decode_compact(x, &r, n);
    }
    if (kind == KIND_BIG) {
        return decode_big(x, &r, n);
    }
    return COLL_MALFORMED;
}

bool
zset_effect_add(struct membuf *b, const void *m, size_t len, double score)
{
    return put_member(b, m, len) && membuf_put(b, &score, sizeof(score));
}

bool
zset_effect_rem(struct membuf *b, const void *m, size_t len)
{
    return put_member(b, m, len);
}

/* Is every element of an op's payload whole? */
static bool
payload_valid(const unsigned char *p, size_t len, bool scores)
{
    struct membuf_reader r = { p, len };
    while (r.left > 0) {
        const unsigned char *m;
        size_t l;
        double s;
        if (!rd_member(&r, &m, &l, scores ? &s : NULL)) {
            return false;
        }
    }
    return true;
}

int
zset_apply(struct zset *x, uint8_t op, const unsigned char *p, size_t len)
{
    if ((op != ZSET_OP_ADD && op != ZSET_OP_REM) ||
        !payload_valid(p, len, op == ZSET_OP_ADD)) {
        return COLL_MALFORMED;
    }
    struct membuf_reader r = { p, len };
    while (r.left > 0) {
        const unsigned char *m;
        size_t l;
        double s, ns;
        if (op == ZSET_OP_REM) {
            (void)rd_member(&r, &m, &l, NULL);
            (void)zset_remove(x, m, l);
            continue;
        }
        (void)rd_member(&r, &m, &l, &s);
        if (zset_add(x, m, l, s, 0, &ns) == ZSET_NOMEM) {
            return COLL_NOMEM;
        }
    }
    return COLL_OK;
}
