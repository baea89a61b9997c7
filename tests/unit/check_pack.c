/*
 * check_pack.c - the compact encoding (lib/pack.h) against a model (an
 * array of byte strings): inserts, deletes and replaces at every position,
 * entries whose lengths sit on the varint's byte boundaries, items taken
 * from the pack itself, pack_valid on cut, padded and overlong blocks, and
 * pack_copy. The block must always be exactly the bytes in use and every
 * byte it owned given back when it empties.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/pack.h"
#include "tests/unit/suites.h"

#define MODEL_MAX 64

struct model {
    unsigned char *e[MODEL_MAX];
    uint32_t len[MODEL_MAX];
    uint32_t n;
};

static unsigned char *
filled(uint32_t len, unsigned seed)
{
    unsigned char *p = malloc(len + 1);
    ck_assert_ptr_nonnull(p);
    for (uint32_t i = 0; i < len; i++) {
        p[i] = (unsigned char)(seed * 31 + i * 7);
    }
    return p;
}

static void
model_insert(struct model *m, uint32_t at, uint32_t len, unsigned seed)
{
    memmove(m->e + at + 1, m->e + at, (m->n - at) * sizeof m->e[0]);
    memmove(m->len + at + 1, m->len + at, (m->n - at) * sizeof m->len[0]);
    m->e[at] = filled(len, seed);
    m->len[at] = len;
    m->n++;
}

static void
model_delete(struct model *m, uint32_t at, uint32_t k)
{
    for (uint32_t i = at; i < at + k; i++) {
        free(m->e[i]);
    }
    memmove(m->e + at, m->e + at + k, (m->n - at - k) * sizeof m->e[0]);
    memmove(m->len + at, m->len + at + k,
            (m->n - at - k) * sizeof m->len[0]);
    m->n -= k;
}

static void
model_free(struct model *m)
{
    model_delete(m, 0, m->n);
}

/* The pack holds exactly the model, in a block of exactly its bytes. */
static void
same(const struct pack *pk, const struct model *m)
{
    ck_assert_uint_eq(pk->count, m->n);
    ck_assert(pack_valid(pk->p, pk->bytes, pk->count));
    uint32_t off = 0;
    size_t want = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        struct pack_item it;
        ck_assert_uint_eq(pack_offset(pk, i), off);
        off = pack_at(pk, off, &it);
        ck_assert_uint_eq(it.len, m->len[i]);
        ck_assert(m->len[i] == 0 || memcmp(it.data, m->e[i], it.len) == 0);
        want += pack_entry_size(m->len[i]);
    }
    ck_assert_uint_eq(off, pk->bytes);
    ck_assert_uint_eq(pack_offset(pk, m->n), pk->bytes);
    ck_assert_uint_eq(pk->bytes, want);
    ck_assert(pk->bytes == 0 ? pk->p == NULL : pk->p != NULL);
    ck_assert_uint_ge(pack_owned(pk), pk->bytes);
}

static const uint32_t edge_lens[] = {
    0, 1, 5, 127, 128, 129, 300, 16383, 16384, 16385, 40000,
};
#define N_EDGE (sizeof edge_lens / sizeof edge_lens[0])

START_TEST(test_entry_sizes_follow_the_varint)
{
    ck_assert_uint_eq(pack_entry_size(0), 1);
    ck_assert_uint_eq(pack_entry_size(127), 128);
    ck_assert_uint_eq(pack_entry_size(128), 130);
    ck_assert_uint_eq(pack_entry_size(16383), 16385);
    ck_assert_uint_eq(pack_entry_size(16384), 16387);
    ck_assert_uint_eq(pack_entry_size(2097151), 2097154);
    ck_assert_uint_eq(pack_entry_size(2097152), 2097156);
    ck_assert_uint_eq(pack_entry_size(268435456), 268435461);
}
END_TEST

START_TEST(test_insert_delete_replace_at_every_position)
{
    size_t owned_before = mem_owned_bytes();
    struct pack pk = { 0 };
    struct model m = { .n = 0 };
    unsigned seed = 1;
    /* Build up with an insert at every position in turn. */
    for (uint32_t i = 0; i < 2 * N_EDGE; i++) {
        uint32_t len = edge_lens[i % N_EDGE];
        for (uint32_t at = 0; at <= m.n && m.n < MODEL_MAX - 1; at++) {
            unsigned char *d = filled(len, seed);
            struct pack_item it = { d, len };
            ck_assert(pack_insert(&pk, pack_offset(&pk, at), &it, 1));
            model_insert(&m, at, len, seed++);
            free(d);
            same(&pk, &m);
            if (m.n > 12) {
                break;
            }
        }
    }
    /* Replace every position with every edge length. */
    for (uint32_t at = 0; at < m.n; at++) {
        for (uint32_t k = 0; k < N_EDGE; k++) {
            uint32_t len = edge_lens[(at + k) % N_EDGE];
            unsigned char *d = filled(len, seed);
            ck_assert(pack_replace(&pk, pack_offset(&pk, at), d, len));
            free(m.e[at]);
            m.e[at] = d;
            m.len[at] = len;
            seed++;
            same(&pk, &m);
        }
    }
    /* Delete runs of every length at every position (from a copy). */
    for (uint32_t at = 0; at < m.n; at++) {
        for (uint32_t k = 0; at + k <= m.n; k++) {
            struct pack c = { 0 };
            ck_assert(pack_copy(&c, &pk));
            pack_delete(&c, pack_offset(&c, at), k);
            ck_assert_uint_eq(c.count, m.n - k);
            struct pack_item it;
            uint32_t off = 0;
            for (uint32_t i = 0; i < c.count; i++) {
                off = pack_at(&c, off, &it);
                uint32_t mi = i < at ? i : i + k;
                ck_assert_uint_eq(it.len, m.len[mi]);
                ck_assert(it.len == 0
                          || memcmp(it.data, m.e[mi], it.len) == 0);
            }
            ck_assert_uint_eq(off, c.bytes);
            pack_free(&c);
        }
    }
    while (m.n > 0) {
        uint32_t at = m.n / 2, k = m.n > 2 ? 2 : 1;
        pack_delete(&pk, pack_offset(&pk, at), k);
        model_delete(&m, at, k);
        same(&pk, &m);
    }
    ck_assert_ptr_null(pk.p);
    ck_assert_uint_eq(pack_owned(&pk), 0);
    ck_assert_uint_eq(mem_owned_bytes(), owned_before);
}
END_TEST

START_TEST(test_random_against_the_model)
{
    size_t owned_before = mem_owned_bytes();
    struct pack pk = { 0 };
    struct model m = { .n = 0 };
    srand(28);
    for (unsigned step = 0; step < 5000; step++) {
        int op = rand() % 4;
        uint32_t len = rand() % 3 == 0 ? edge_lens[rand() % N_EDGE]
                                       : (uint32_t)(rand() % 20);
        if (op <= 1 && m.n + 3 < MODEL_MAX) {
            uint32_t at = rand() % (m.n + 1), k = 1 + rand() % 3;
            struct pack_item its[3];
            unsigned char *d[3];
            for (uint32_t i = 0; i < k; i++) {
                d[i] = filled(len + i, step * 3 + i);
                its[i] = (struct pack_item){ d[i], len + i };
            }
            ck_assert(pack_insert(&pk, pack_offset(&pk, at), its, k));
            for (uint32_t i = 0; i < k; i++) {
                model_insert(&m, at + i, len + i, step * 3 + i);
                free(d[i]);
            }
        } else if (op == 2 && m.n > 0) {
            uint32_t at = rand() % m.n;
            uint32_t k = 1 + rand() % (m.n - at < 4 ? m.n - at : 4);
            pack_delete(&pk, pack_offset(&pk, at), k);
            model_delete(&m, at, k);
        } else if (m.n > 0) {
            uint32_t at = rand() % m.n;
            unsigned char *d = filled(len, step);
            ck_assert(pack_replace(&pk, pack_offset(&pk, at), d, len));
            free(m.e[at]);
            m.e[at] = d;
            m.len[at] = len;
        }
        same(&pk, &m);
    }
    pack_free(&pk);
    model_free(&m);
    ck_assert_uint_eq(mem_owned_bytes(), owned_before);
}
END_TEST

/* Items that point into the pack itself (LINSERT of an element already
 * there, LSET to a neighbour's value) survive the block moving. */
START_TEST(test_items_from_the_pack_itself)
{
    struct pack pk = { 0 };
    struct model m = { .n = 0 };
    for (uint32_t i = 0; i < 4; i++) {
        unsigned char *d = filled(100 + i, i);
        struct pack_item it = { d, 100 + i };
        ck_assert(pack_insert(&pk, pk.bytes, &it, 1));
        model_insert(&m, i, 100 + i, i);
        free(d);
    }
    for (int round = 0; round < 20; round++) {
        struct pack_item src;
        uint32_t from = (uint32_t)round % m.n;
        pack_at(&pk, pack_offset(&pk, from), &src);
        struct pack_item two[2] = { src, src };
        uint32_t at = (uint32_t)(round * 7) % (m.n + 1);
        ck_assert(pack_insert(&pk, pack_offset(&pk, at), two, 2));
        unsigned seed = (unsigned)from; /* filled(len, seed) of the model */
        uint32_t len = m.len[from];
        unsigned char *copy = malloc(len + 1);
        memcpy(copy, m.e[from], len);
        for (int k = 0; k < 2; k++) {
            model_insert(&m, at, len, seed);
            memcpy(m.e[at], copy, len);
        }
        free(copy);
        same(&pk, &m);
        /* Replace an entry by another entry's bytes (a longer one). */
        uint32_t a = 0, b = m.n - 1;
        pack_at(&pk, pack_offset(&pk, b), &src);
        ck_assert(pack_replace(&pk, pack_offset(&pk, a), src.data, src.len));
        free(m.e[a]);
        m.e[a] = malloc(m.len[b] + 1);
        memcpy(m.e[a], m.e[b], m.len[b]);
        m.len[a] = m.len[b];
        same(&pk, &m);
        if (m.n > 40) {
            pack_delete(&pk, 0, 20);
            model_delete(&m, 0, 20);
            same(&pk, &m);
        }
    }
    pack_free(&pk);
    model_free(&m);
}
END_TEST

static void
build(struct pack *pk)
{
    for (size_t i = 0; i < N_EDGE; i++) {
        unsigned char *d = filled(edge_lens[i], (unsigned)i);
        struct pack_item it = { d, edge_lens[i] };
        ck_assert(pack_insert(pk, pk->bytes, &it, 1));
        free(d);
    }
}

START_TEST(test_valid_rejects_cut_and_overlong_blocks)
{
    struct pack pk = { 0 };
    build(&pk);
    ck_assert(pack_valid(pk.p, pk.bytes, pk.count));
    ck_assert(pack_valid(NULL, 0, 0));
    ck_assert(!pack_valid(NULL, 0, 1));
    ck_assert(!pack_valid(pk.p, pk.bytes, pk.count - 1));
    ck_assert(!pack_valid(pk.p, pk.bytes, pk.count + 1));
    /* Every cut is refused (a whole block of fewer entries is not one
     * of pk.count). */
    for (uint32_t cut = 0; cut < pk.bytes; cut++) {
        ck_assert(!pack_valid(pk.p, cut, pk.count));
    }
    /* A byte too many. */
    unsigned char *more = malloc(pk.bytes + 1);
    memcpy(more, pk.p, pk.bytes);
    more[pk.bytes] = 0;
    ck_assert(!pack_valid(more, pk.bytes + 1, pk.count));
    ck_assert(pack_valid(more, pk.bytes + 1, pk.count + 1));
    free(more);
    /* A length past the end, a padded varint, one of six bytes, and one
     * beyond 32 bits. */
    static const unsigned char past[] = { 5, 'a', 'b' };
    ck_assert(!pack_valid(past, sizeof past, 1));
    static const unsigned char padded[] = { 0x81, 0x00, 'a' };
    ck_assert(!pack_valid(padded, sizeof padded, 1));
    static const unsigned char six[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0 };
    ck_assert(!pack_valid(six, sizeof six, 1));
    static const unsigned char big[] = { 0xff, 0xff, 0xff, 0xff, 0x1f };
    ck_assert(!pack_valid(big, sizeof big, 1));
    static const unsigned char cutv[] = { 0x80 };
    ck_assert(!pack_valid(cutv, sizeof cutv, 1));
    static const unsigned char ok[] = { 0x80, 0x01 };
    ck_assert(!pack_valid(ok, sizeof ok, 1));      /* 128 bytes missing */
    static const unsigned char empties[] = { 0, 0, 0 };
    ck_assert(pack_valid(empties, 3, 3));
    pack_free(&pk);
}
END_TEST

START_TEST(test_copy_is_equal_and_independent)
{
    size_t owned_before = mem_owned_bytes();
    struct pack pk = { 0 }, c = { 0 };
    ck_assert(pack_copy(&c, &pk));
    ck_assert_ptr_null(c.p);
    ck_assert_uint_eq(c.count, 0);
    build(&pk);
    ck_assert(pack_copy(&c, &pk));
    ck_assert_uint_eq(c.bytes, pk.bytes);
    ck_assert_uint_eq(c.count, pk.count);
    ck_assert(c.p != pk.p);
    ck_assert(memcmp(c.p, pk.p, pk.bytes) == 0);
    pack_replace(&c, 0, "zz", 2);
    ck_assert(memcmp(c.p, pk.p, pk.bytes) != 0);
    ck_assert(pack_valid(pk.p, pk.bytes, pk.count));
    pack_free(&pk);
    ck_assert(pack_valid(c.p, c.bytes, c.count));
    pack_free(&c);
    ck_assert_uint_eq(mem_owned_bytes(), owned_before);
}
END_TEST

/* The block shrinks with its entries (realloc'd to the bytes in use). */
START_TEST(test_block_shrinks_as_entries_go)
{
    struct pack pk = { 0 };
    unsigned char *d = filled(4000, 1);
    struct pack_item it = { d, 4000 };
    for (int i = 0; i < 8; i++) {
        ck_assert(pack_insert(&pk, 0, &it, 1));
    }
    size_t full = pack_owned(&pk);
    pack_delete(&pk, 0, 7);
    ck_assert_uint_lt(pack_owned(&pk), full / 4);
    ck_assert_uint_ge(pack_owned(&pk), pk.bytes);
    ck_assert(pack_replace(&pk, 0, "x", 1));
    ck_assert_uint_lt(pack_owned(&pk), 100);
    pack_delete(&pk, 0, 1);
    ck_assert_ptr_null(pk.p);
    ck_assert_uint_eq(pk.count, 0);
    ck_assert_uint_eq(pk.bytes, 0);
    free(d);
}
END_TEST

Suite *
pack_suite(void)
{
    Suite *s = suite_create("pack");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_entry_sizes_follow_the_varint);
    tcase_add_test(tc, test_insert_delete_replace_at_every_position);
    tcase_add_test(tc, test_random_against_the_model);
    tcase_add_test(tc, test_items_from_the_pack_itself);
    tcase_add_test(tc, test_valid_rejects_cut_and_overlong_blocks);
    tcase_add_test(tc, test_copy_is_equal_and_independent);
    tcase_add_test(tc, test_block_shrinks_as_entries_go);
    suite_add_tcase(s, tc);
    return s;
}
