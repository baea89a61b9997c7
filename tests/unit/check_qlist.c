/*
 * check_qlist.c - the Redis list (lib/qlist.h) against a model (an array
 * of byte strings): thousands of random pushes, pops, sets, inserts,
 * removals, trims and walks that cross node boundaries both ways (small
 * elements, elements larger than a node, lists of tens of thousands);
 * every change also made on a second list by replaying its element effect
 * (qlist_apply), which must come out equal; the encoding decoded back
 * equal; malformed encodings and payloads refused; memory all given back.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/qlist.h"
#include "tests/unit/suites.h"

struct elem {
    unsigned char *p;
    size_t len;
};

struct model {
    struct elem *e;
    size_t n, cap;
};

static struct elem
make(size_t len, unsigned seed)
{
    struct elem e = { malloc(len + 1), len };
    ck_assert_ptr_nonnull(e.p);
    for (size_t i = 0; i < len; i++) {
        e.p[i] = (unsigned char)('a' + (seed + i * 3) % 7);
    }
    return e;
}

static void
m_insert(struct model *m, size_t at, struct elem e)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->e = realloc(m->e, m->cap * sizeof *m->e);
        ck_assert_ptr_nonnull(m->e);
    }
    memmove(m->e + at + 1, m->e + at, (m->n - at) * sizeof *m->e);
    m->e[at] = e;
    m->n++;
}

static void
m_delete(struct model *m, size_t at)
{
    free(m->e[at].p);
    memmove(m->e + at, m->e + at + 1, (m->n - at - 1) * sizeof *m->e);
    m->n--;
}

static void
m_free(struct model *m)
{
    while (m->n > 0) {
        m_delete(m, m->n - 1);
    }
    free(m->e);
    *m = (struct model){ 0 };
}

static bool
m_eq(const struct elem *e, const void *p, size_t len)
{
    return e->len == len && (len == 0 || memcmp(e->p, p, len) == 0);
}

/* A walk checked against the model, element by element. */
struct cmp {
    const struct model *m;
    uint64_t next;
    bool reverse;
    uint64_t seen, stop_after;
};

static bool
cmp_one(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct cmp *c = arg;
    ck_assert_uint_eq(index, c->next);
    ck_assert(m_eq(&c->m->e[index], p, len));
    c->next += c->reverse ? (uint64_t)-1 : 1;
    c->seen++;
    return c->seen < c->stop_after;
}

static void
same(const struct qlist *x, const struct model *m)
{
    ck_assert_uint_eq(qlist_len(x), m->n);
    if (m->n == 0) {
        ck_assert_uint_eq(qlist_owned(x), 0);
        return;
    }
    struct cmp c = { m, 0, false, 0, UINT64_MAX };
    qlist_walk(x, 0, false, cmp_one, &c);
    ck_assert_uint_eq(c.seen, m->n);
    c = (struct cmp){ m, m->n - 1, true, 0, UINT64_MAX };
    qlist_walk(x, m->n - 1, true, cmp_one, &c);
    ck_assert_uint_eq(c.seen, m->n);
}

/* Two lists hold the same elements. */
struct pair {
    const struct qlist *other;
};

static bool
pair_one(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct pair *pr = arg;
    struct pack_item it;
    qlist_index(pr->other, index, &it);
    ck_assert_uint_eq(it.len, len);
    ck_assert(len == 0 || memcmp(it.data, p, len) == 0);
    return true;
}

static void
equal_lists(const struct qlist *a, const struct qlist *b)
{
    ck_assert_uint_eq(qlist_len(a), qlist_len(b));
    struct pair pr = { b };
    qlist_walk(a, 0, false, pair_one, &pr);
}

static void
apply_ok(struct qlist *y, uint8_t op, struct membuf *b)
{
    ck_assert_int_eq(qlist_apply(y, op, b->p, b->len), COLL_OK);
    b->len = 0;
}

static void
round_trip(const struct qlist *x)
{
    struct membuf b = { 0 };
    ck_assert(qlist_encode(x, &b));
    struct qlist y = { 0 };
    ck_assert_int_eq(qlist_decode(&y, b.p, b.len), COLL_OK);
    equal_lists(x, &y);
    equal_lists(&y, x);
    /* Every cut and one byte more are refused. */
    for (size_t cut = 0; cut < b.len; cut += 1 + b.len / 50) {
        struct qlist z = { 0 };
        int rc = qlist_decode(&z, b.p, cut);
        ck_assert_int_eq(rc, COLL_MALFORMED);
        qlist_free(&z);
    }
    ck_assert(membuf_put(&b, "", 1));
    struct qlist z = { 0 };
    ck_assert_int_eq(qlist_decode(&z, b.p, b.len), COLL_MALFORMED);
    qlist_free(&z);
    qlist_free(&y);
    mem_free(b.p);
}

static size_t
rand_len(void)
{
    switch (rand() % 20) {
    case 0:
        return 9000 + rand() % 200;      /* over a node alone */
    case 1:
        return 200 + rand() % 800;
    case 2:
        return 0;
    default:
        return rand() % 12;
    }
}

/* Small values from a few, so LREM, LINSERT and LPOS find matches. */
static struct elem
rand_elem(unsigned step)
{
    if (rand() % 3 == 0) {
        return make(rand_len(), step);
    }
    return make(1 + rand() % 3, (unsigned)(rand() % 3));
}

struct popped {
    struct model *m;
    bool head;
};

static bool
pop_one(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct popped *pp = arg;
    (void)index;
    size_t at = pp->head ? 0 : pp->m->n - 1;
    ck_assert(m_eq(&pp->m->e[at], p, len));
    m_delete(pp->m, at);
    return true;
}

static void
step_push(struct qlist *x, struct qlist *y, struct model *m, unsigned step,
          struct membuf *b)
{
    bool head = rand() % 2;
    int k = 1 + rand() % (rand() % 4 == 0 ? 300 : 4);
    for (int j = 0; j < k; j++) {
        struct elem e = rand_elem(step + j);
        ck_assert(qlist_push(x, head, e.p, e.len));
        ck_assert(qlist_effect_push(b, e.p, e.len));
        m_insert(m, head ? 0 : m->n, e);
    }
    apply_ok(y, head ? QLIST_OP_PUSH_HEAD : QLIST_OP_PUSH_TAIL, b);
}

static void
step_pop(struct qlist *x, struct qlist *y, struct model *m, struct membuf *b)
{
    bool head = rand() % 2;
    uint64_t k = 1 + rand() % (rand() % 4 == 0 ? 400 : 3);
    uint64_t want = k < m->n ? k : m->n;
    struct popped pp = { m, head };
    ck_assert_uint_eq(qlist_pop(x, head, k, pop_one, &pp), want);
    ck_assert(qlist_effect_pop(b, want));
    apply_ok(y, head ? QLIST_OP_POP_HEAD : QLIST_OP_POP_TAIL, b);
}

static void
step_set(struct qlist *x, struct qlist *y, struct model *m, unsigned step,
         struct membuf *b)
{
    if (m->n == 0) {
        return;
    }
    uint64_t i = (uint64_t)rand() % m->n;
    struct elem e = rand_elem(step);
    ck_assert(qlist_set(x, i, e.p, e.len));
    ck_assert(qlist_effect_set(b, i, e.p, e.len));
    apply_ok(y, QLIST_OP_SET, b);
    free(m->e[i].p);
    m->e[i] = e;
    struct pack_item it;
    qlist_index(x, i, &it);
    ck_assert(m_eq(&e, it.data, it.len));
}

static void
step_insert(struct qlist *x, struct qlist *y, struct model *m, unsigned step,
            struct membuf *b)
{
    struct elem pivot = make(1 + rand() % 3, (unsigned)(rand() % 3));
    struct elem e = rand_elem(step);
    bool after = rand() % 2;
    size_t at = m->n;
    for (size_t i = 0; i < m->n; i++) {
        if (m_eq(&m->e[i], pivot.p, pivot.len)) {
            at = i;
            break;
        }
    }
    int rc = qlist_insert(x, after, pivot.p, pivot.len, e.p, e.len);
    ck_assert_int_eq(rc, at < m->n);
    ck_assert(qlist_effect_insert(b, after, pivot.p, pivot.len, e.p, e.len));
    apply_ok(y, QLIST_OP_INSERT, b);
    if (at < m->n) {
        m_insert(m, at + after, e);
    } else {
        free(e.p);
    }
    free(pivot.p);
}

static void
step_rem(struct qlist *x, struct qlist *y, struct model *m, struct membuf *b)
{
    struct elem v = make(1 + rand() % 3, (unsigned)(rand() % 3));
    int64_t count = rand() % 7 - 3;
    uint64_t want = count < 0 ? (uint64_t)-count : (uint64_t)count, gone = 0;
    if (count >= 0) {
        for (size_t i = 0; i < m->n && (want == 0 || gone < want);) {
            if (m_eq(&m->e[i], v.p, v.len)) {
                m_delete(m, i);
                gone++;
            } else {
                i++;
            }
        }
    } else {
        for (size_t i = m->n; i-- > 0 && gone < want;) {
            if (m_eq(&m->e[i], v.p, v.len)) {
                m_delete(m, i);
                gone++;
            }
        }
    }
    ck_assert_uint_eq(qlist_rem(x, count, v.p, v.len), gone);
    ck_assert(qlist_effect_rem(b, count, v.p, v.len));
    apply_ok(y, QLIST_OP_REM, b);
    free(v.p);
}

static void
step_trim(struct qlist *x, struct qlist *y, struct model *m, struct membuf *b)
{
    if (m->n == 0) {
        return;
    }
    /* Mostly gentle trims, so the list keeps growing. */
    uint64_t start = rand() % 3 == 0 ? (uint64_t)rand() % (m->n / 8 + 1) : 0;
    uint64_t stop = m->n - 1 - (uint64_t)rand() % (m->n / 8 + 1);
    if (rand() % 50 == 0) {
        start = stop + 1;               /* everything goes */
    }
    qlist_trim(x, start, stop);
    ck_assert(qlist_effect_trim(b, start, stop));
    apply_ok(y, QLIST_OP_TRIM, b);
    if (start > stop || start >= m->n) {
        while (m->n > 0) {
            m_delete(m, 0);
        }
        return;
    }
    while (m->n > stop + 1) {
        m_delete(m, m->n - 1);
    }
    for (uint64_t i = 0; i < start; i++) {
        m_delete(m, 0);
    }
}

static void
step_walk(const struct qlist *x, const struct model *m)
{
    if (m->n == 0) {
        return;
    }
    uint64_t from = (uint64_t)rand() % m->n;
    bool rev = rand() % 2;
    struct cmp c = { m, from, rev, 0, 1 + (uint64_t)rand() % 300 };
    qlist_walk(x, from, rev, cmp_one, &c);
    uint64_t left = rev ? from + 1 : m->n - from;
    ck_assert_uint_eq(c.seen, left < c.stop_after ? left : c.stop_after);
    struct pack_item it;
    qlist_index(x, from, &it);
    ck_assert(m_eq(&m->e[from], it.data, it.len));
}

static void
random_run(unsigned seed, unsigned steps)
{
    size_t owned = mem_owned_bytes();
    struct qlist x = { 0 }, y = { 0 };
    struct model m = { 0 };
    struct membuf b = { 0 };
    srand(seed);
    for (unsigned step = 0; step < steps; step++) {
        int op = rand() % 20;
        if (op < 7) {
            step_push(&x, &y, &m, step, &b);
        } else if (op < 10) {
            step_pop(&x, &y, &m, &b);
        } else if (op < 12) {
            step_set(&x, &y, &m, step, &b);
        } else if (op < 14) {
            step_insert(&x, &y, &m, step, &b);
        } else if (op < 16) {
            step_rem(&x, &y, &m, &b);
        } else if (op < 17) {
            step_trim(&x, &y, &m, &b);
        } else {
            step_walk(&x, &m);
        }
        if (step % 16 == 0 || m.n < 300) {
            same(&x, &m);
            same(&y, &m);   /* so x == y, in one walk (not an index each) */
        }
        if (step % 200 == 0) {
            round_trip(&x);
        }
    }
    same(&x, &m);
    same(&y, &m);
    round_trip(&x);
    qlist_free(&x);
    qlist_free(&y);
    ck_assert_uint_eq(qlist_len(&x), 0);
    m_free(&m);
    mem_free(b.p);
    ck_assert_uint_eq(mem_owned_bytes(), owned);
}

START_TEST(test_random_against_the_model)
{
    random_run(28 + (unsigned)_i, 4000);
}
END_TEST

/* A long list: pushes and pops at both ends stay right across many
 * nodes, and the list owns about what its elements take. */
START_TEST(test_long_list_both_ends)
{
    size_t owned = mem_owned_bytes();
    struct qlist x = { 0 };
    struct model m = { 0 };
    for (unsigned i = 0; i < 50000; i++) {
        struct elem e = make(1 + i % 9, i);
        bool head = i % 3 == 0;
        ck_assert(qlist_push(&x, head, e.p, e.len));
        m_insert(&m, head ? 0 : m.n, e);
    }
    same(&x, &m);
    ck_assert_uint_lt(qlist_owned(&x), 50000 * 12);
    for (unsigned i = 0; i < 20000; i++) {
        struct popped pp = { &m, i % 2 == 0 };
        ck_assert_uint_eq(qlist_pop(&x, pp.head, 1, pop_one, &pp), 1);
    }
    same(&x, &m);
    struct popped pp = { &m, false };
    ck_assert_uint_eq(qlist_pop(&x, false, 100000, pop_one, &pp), 30000);
    ck_assert_uint_eq(qlist_len(&x), 0);
    ck_assert_uint_eq(qlist_owned(&x), 0);
    qlist_free(&x);
    m_free(&m);
    ck_assert_uint_eq(mem_owned_bytes(), owned);
}
END_TEST

START_TEST(test_malformed_encodings_and_effects)
{
    struct qlist x = { 0 };
    static const unsigned char short_count[] = { 1, 0, 0 };
    ck_assert_int_eq(qlist_decode(&x, short_count, 3), COLL_MALFORMED);
    qlist_free(&x);
    unsigned char enc[8 + 4];
    uint64_t two = 2;
    memcpy(enc, &two, 8);
    memcpy(enc + 8, "\x01" "a" "\x01" "b", 4);
    ck_assert_int_eq(qlist_decode(&x, enc, 12), COLL_OK);
    ck_assert_uint_eq(qlist_len(&x), 2);
    qlist_free(&x);
    uint64_t three = 3;                     /* says 3, holds 2 */
    memcpy(enc, &three, 8);
    ck_assert_int_eq(qlist_decode(&x, enc, 12), COLL_MALFORMED);
    qlist_free(&x);
    uint64_t one = 1;                       /* says 1, holds 2 */
    memcpy(enc, &one, 8);
    ck_assert_int_eq(qlist_decode(&x, enc, 12), COLL_MALFORMED);
    qlist_free(&x);
    memcpy(enc, &two, 8);
    enc[8] = 0x81;                          /* padded varint */
    ck_assert_int_eq(qlist_decode(&x, enc, 12), COLL_MALFORMED);
    qlist_free(&x);

    /* Effects: pops and trims past the list, sets past it, cut values,
     * unknown ops: refused, the list unchanged. */
    ck_assert(qlist_push(&x, false, "a", 1));
    ck_assert(qlist_push(&x, false, "b", 1));
    struct membuf b = { 0 };
    ck_assert(qlist_effect_pop(&b, 3));
    ck_assert_int_eq(qlist_apply(&x, QLIST_OP_POP_HEAD, b.p, b.len),
                     COLL_MALFORMED);
    ck_assert_int_eq(qlist_apply(&x, QLIST_OP_POP_HEAD, b.p, 7),
                     COLL_MALFORMED);
    b.len = 0;
    ck_assert(qlist_effect_set(&b, 2, "z", 1));
    ck_assert_int_eq(qlist_apply(&x, QLIST_OP_SET, b.p, b.len),
                     COLL_MALFORMED);
    b.len = 0;
    ck_assert(qlist_effect_trim(&b, 0, 2));
    ck_assert_int_eq(qlist_apply(&x, QLIST_OP_TRIM, b.p, b.len),
                     COLL_MALFORMED);
    b.len = 0;
    ck_assert(qlist_effect_push(&b, "abc", 3));
    ck_assert_int_eq(qlist_apply(&x, QLIST_OP_PUSH_TAIL, b.p, b.len - 1),
                     COLL_MALFORMED);
    ck_assert_int_eq(qlist_apply(&x, QLIST_OP_PUSH_TAIL, b.p, 0),
                     COLL_MALFORMED);
    ck_assert_int_eq(qlist_apply(&x, 99, b.p, b.len), COLL_MALFORMED);
    b.len = 0;
    ck_assert(qlist_effect_insert(&b, true, "a", 1, "c", 1));
    b.p[0] = 2;
    ck_assert_int_eq(qlist_apply(&x, QLIST_OP_INSERT, b.p, b.len),
                     COLL_MALFORMED);
    ck_assert_uint_eq(qlist_len(&x), 2);
    struct pack_item it;
    qlist_index(&x, 1, &it);
    ck_assert(it.len == 1 && it.data[0] == 'b');
    mem_free(b.p);
    qlist_free(&x);
}
END_TEST

Suite *
qlist_suite(void)
{
    Suite *s = suite_create("qlist");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_random_against_the_model, 0, 3);
    tcase_add_test(tc, test_long_list_both_ends);
    tcase_add_test(tc, test_malformed_encodings_and_effects);
    suite_add_tcase(s, tc);
    return s;
}
