/*
 * check_hmap.c - the Redis hash (lib/hmap.c): listpack order, conversion
 * at exactly Redis's limits and never back, random operations against a
 * model, encode/decode, and effects replayed equal to the direct calls.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hmap.h"
#include "tests/unit/suites.h"

static int
set_s(struct hmap *x, const char *f, const char *v)
{
    const char *s[2] = { f, v };
    size_t len[2] = { strlen(f), strlen(v) };
    ck_assert(hmap_prepare(x, s, len, 2));
    return hmap_set(x, f, len[0], v, len[1]);
}

static bool
del_s(struct hmap *x, const char *f)
{
    return hmap_del(x, f, strlen(f));
}

/* The hash walked as "f=v,f=v,". */
static char *
dump(const struct hmap *x)
{
    static char buf[65536];
    size_t n = 0;
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    while (hmap_next(x, &it, &f, &v)) {
        ck_assert_uint_lt(n + f.len + v.len + 2, sizeof(buf));
        memcpy(buf + n, f.data, f.len);
        n += f.len;
        buf[n++] = '=';
        memcpy(buf + n, v.data, v.len);
        n += v.len;
        buf[n++] = ',';
    }
    buf[n] = '\0';
    return buf;
}

START_TEST(test_compact_keeps_insertion_order)
{
    struct hmap x = { 0 };
    ck_assert_int_eq(set_s(&x, "a", "1"), HMAP_NEW);
    ck_assert_int_eq(set_s(&x, "b", "2"), HMAP_NEW);
    ck_assert_int_eq(set_s(&x, "c", "3"), HMAP_NEW);
    ck_assert_int_eq(set_s(&x, "b", "twenty"), HMAP_UPDATED);
    ck_assert_str_eq(dump(&x), "a=1,b=twenty,c=3,");
    ck_assert(del_s(&x, "a"));
    ck_assert(!del_s(&x, "a"));
    ck_assert_int_eq(set_s(&x, "a", ""), HMAP_NEW);
    ck_assert_str_eq(dump(&x), "b=twenty,c=3,a=,");
    ck_assert_uint_eq(hmap_len(&x), 3);
    ck_assert_uint_eq(hmap_value_len(&x, "b", 1), 6);
    ck_assert_uint_eq(hmap_value_len(&x, "zz", 2), 0);
    ck_assert(hmap_exists(&x, "a", 1));
    ck_assert(!hmap_exists(&x, "d", 1));
    ck_assert(hmap_is_compact(&x));
    hmap_free(&x);
    ck_assert_uint_eq(hmap_len(&x), 0);
    ck_assert_uint_eq(hmap_owned(&x), 0);
}
END_TEST

START_TEST(test_converts_at_the_513th_field_and_never_back)
{
    struct hmap x = { 0 };
    char f[16];
    for (int i = 0; i < HMAP_PACK_ENTRIES; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        ck_assert_int_eq(set_s(&x, f, "v"), HMAP_NEW);
    }
    ck_assert(hmap_is_compact(&x));
    ck_assert_int_eq(set_s(&x, "f7", "new"), HMAP_UPDATED);
    ck_assert(hmap_is_compact(&x));
    ck_assert_int_eq(set_s(&x, "f512", "v"), HMAP_NEW);
    ck_assert(!hmap_is_compact(&x));
    ck_assert_uint_eq(hmap_len(&x), 513);
    struct pack_item v;
    ck_assert(hmap_get(&x, "f7", 2, &v));
    ck_assert_uint_eq(v.len, 3);
    ck_assert(memcmp(v.data, "new", 3) == 0);
    for (int i = 0; i < 512; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        ck_assert(del_s(&x, f));
    }
    ck_assert(!hmap_is_compact(&x));
    ck_assert_uint_eq(hmap_len(&x), 1);
    hmap_free(&x);
}
END_TEST

START_TEST(test_converts_on_a_65_byte_field_or_value)
{
    char s64[65], s65[66];
    memset(s64, 'x', 64);
    s64[64] = '\0';
    memset(s65, 'y', 65);
    s65[65] = '\0';

    struct hmap x = { 0 };
    set_s(&x, s64, s64);
    ck_assert(hmap_is_compact(&x));
    set_s(&x, "v", s65);
    ck_assert(!hmap_is_compact(&x));
    hmap_free(&x);

    set_s(&x, "a", "1");
    ck_assert_int_eq(hmap_set(&x, s65, 65, "1", 1), HMAP_NEW);
    ck_assert(!hmap_is_compact(&x));
    ck_assert_uint_eq(hmap_len(&x), 2);
    hmap_free(&x);

    /* hashTypeTryConversion: one long string among a write's converts
     * before any of it is set, even one it will never store. */
    set_s(&x, "a", "1");
    const char *s[4] = { "b", "2", "c", s65 };
    size_t len[4] = { 1, 1, 1, 65 };
    ck_assert(hmap_prepare(&x, s, len, 4));
    ck_assert(!hmap_is_compact(&x));
    hmap_free(&x);
    set_s(&x, "a", "1");
    len[3] = 64;
    ck_assert(hmap_prepare(&x, s, len, 4));
    ck_assert(hmap_is_compact(&x));
    hmap_free(&x);
}
END_TEST

/* ---- a model: pairs in insertion order, as the listpack keeps them --- */

#define MAXF 700

struct model {
    char f[MAXF][80];
    char v[MAXF][80];
    int n;
    bool large;
};

static int
model_find(const struct model *m, const char *f)
{
    for (int i = 0; i < m->n; i++) {
        if (strcmp(m->f[i], f) == 0) {
            return i;
        }
    }
    return -1;
}

static int
model_set(struct model *m, const char *f, const char *v)
{
    if (strlen(f) > HMAP_PACK_VALUE || strlen(v) > HMAP_PACK_VALUE) {
        m->large = true;
    }
    int i = model_find(m, f);
    if (i >= 0) {
        strcpy(m->v[i], v);
        return HMAP_UPDATED;
    }
    strcpy(m->f[m->n], f);
    strcpy(m->v[m->n], v);
    m->n++;
    if (m->n > HMAP_PACK_ENTRIES) {
        m->large = true;
    }
    return HMAP_NEW;
}

static bool
model_del(struct model *m, const char *f)
{
    int i = model_find(m, f);
    if (i < 0) {
        return false;
    }
    memmove(m->f[i], m->f[i + 1], sizeof(m->f[0]) * (size_t)(m->n - i - 1));
    memmove(m->v[i], m->v[i + 1], sizeof(m->v[0]) * (size_t)(m->n - i - 1));
    m->n--;
    return true;
}

static void
check_model(const struct hmap *x, const struct model *m)
{
    ck_assert_uint_eq(hmap_len(x), (uint64_t)m->n);
    ck_assert(hmap_is_compact(x) == !m->large);
    for (int i = 0; i < m->n; i++) {
        struct pack_item v;
        ck_assert(hmap_get(x, m->f[i], strlen(m->f[i]), &v));
        ck_assert_uint_eq(v.len, strlen(m->v[i]));
        ck_assert(memcmp(v.data, m->v[i], v.len) == 0);
    }
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    int seen = 0;
    while (hmap_next(x, &it, &f, &v)) {
        if (!m->large) {
            /* Compact: the model's order exactly. */
            ck_assert_uint_eq(f.len, strlen(m->f[seen]));
            ck_assert(memcmp(f.data, m->f[seen], f.len) == 0);
        }
        seen++;
    }
    ck_assert_int_eq(seen, m->n);
}

static void
random_string(char *out, int maxlen)
{
    int len = rand() % (maxlen + 1);
    for (int i = 0; i < len; i++) {
        out[i] = (char)('a' + rand() % 3);
    }
    out[len] = '\0';
}

static void
random_field(char *out)
{
    if (rand() % 200 == 0) {
        random_string(out, 70);         /* now and then a long one */
    } else {
        snprintf(out, 16, "f%d", rand() % 600);
    }
}

START_TEST(test_random_operations_match_a_model)
{
    static struct model m;
    int converted = 0;
    for (int round = 0; round < 20; round++) {
        memset(&m, 0, sizeof(m));
        struct hmap x = { 0 };
        size_t before = mem_owned_bytes();
        srand((unsigned)round * 7919u + 1);
        int adds = 40 + rand() % 61;
        for (int step = 0; step < 6000; step++) {
            char f[80], v[80];
            random_field(f);
            if (rand() % 100 < adds) {
                random_string(v, rand() % 60 == 0 ? 66 : 20);
                ck_assert_int_eq(set_s(&x, f, v), model_set(&m, f, v));
            } else {
                ck_assert(del_s(&x, f) == model_del(&m, f));
            }
            if (step % 37 == 0) {
                check_model(&x, &m);
                ck_assert_uint_eq(mem_owned_bytes() - before,
                                  hmap_owned(&x));
            }
        }
        check_model(&x, &m);
        converted += m.large;
        hmap_free(&x);
        ck_assert_uint_eq(mem_owned_bytes(), before);
    }
    /* Both encodings were walked. */
    ck_assert_int_gt(converted, 2);
    ck_assert_int_lt(converted, 20);
}
END_TEST

/* ---- encode, decode ---------------------------------------------------- */

static void
round_trip(const struct hmap *x)
{
    struct membuf b = { 0 };
    ck_assert(hmap_encode(x, &b));
    struct hmap y = { 0 };
    ck_assert_int_eq(hmap_decode(&y, b.p, b.len), COLL_OK);
    ck_assert(hmap_is_compact(&y) == hmap_is_compact(x));
    ck_assert_uint_eq(hmap_len(&y), hmap_len(x));
    if (hmap_is_compact(x)) {
        char *want = strdup(dump(x));
        ck_assert_str_eq(dump(&y), want);
        free(want);
    }
    struct hmap_iter it = { 0 };
    struct pack_item f, v, w;
    while (hmap_next(x, &it, &f, &v)) {
        ck_assert(hmap_get(&y, f.data, f.len, &w));
        ck_assert_uint_eq(w.len, v.len);
        ck_assert(v.len == 0 || memcmp(w.data, v.data, v.len) == 0);
    }
    hmap_free(&y);
    /* Every cut short is refused, and leaves a freeable hash. */
    for (size_t cut = 0; cut < b.len; cut++) {
        struct hmap z = { 0 };
        ck_assert_int_eq(hmap_decode(&z, b.p, cut), COLL_MALFORMED);
        hmap_free(&z);
    }
    mem_free(b.p);
}

START_TEST(test_encode_decode_round_trip)
{
    struct hmap x = { 0 };
    round_trip(&x);
    set_s(&x, "c", "3");
    set_s(&x, "a", "1");
    set_s(&x, "", "empty field");
    set_s(&x, "b", "");
    del_s(&x, "a");
    set_s(&x, "a", "again");
    round_trip(&x);
    char f[16];
    for (int i = 0; hmap_len(&x) < HMAP_PACK_ENTRIES; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        set_s(&x, f, f);
    }
    ck_assert(hmap_is_compact(&x));
    round_trip(&x);                     /* the largest compact one */
    for (int i = 0; i < 600; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        set_s(&x, f, f);
    }
    ck_assert(!hmap_is_compact(&x));
    round_trip(&x);
    /* Large with few fields stays large through a load. */
    for (int i = 0; i < 600; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        del_s(&x, f);
    }
    round_trip(&x);
    hmap_free(&x);
}
END_TEST

/* A large hash's bytes are lib/packdict.h's, as snapshots and journals
 * already hold them: the encoding byte, the count as a uint64, then each
 * field and its value length-prefixed. */
START_TEST(test_large_bytes_are_the_packdict_layout)
{
    struct hmap x = { 0 };
    char v[81];
    memset(v, 'v', 80);
    v[80] = '\0';
    set_s(&x, "f", v);                  /* past 64 bytes: large at once */
    ck_assert(!hmap_is_compact(&x));
    struct membuf b = { 0 };
    ck_assert(hmap_encode(&x, &b));
    uint64_t n = 1;
    uint32_t flen = 1, vlen = 80;
    ck_assert_uint_eq(b.len, 1 + 8 + 4 + 1 + 4 + 80);
    ck_assert_uint_eq(b.p[0], 1);
    ck_assert_int_eq(memcmp(b.p + 1, &n, 8), 0);
    ck_assert_int_eq(memcmp(b.p + 9, &flen, 4), 0);
    ck_assert_int_eq(b.p[13], 'f');
    ck_assert_int_eq(memcmp(b.p + 14, &vlen, 4), 0);
    ck_assert_int_eq(memcmp(b.p + 18, v, 80), 0);
    hmap_free(&x);
    mem_free(b.p);
}
END_TEST

START_TEST(test_decode_refuses_what_no_hash_is)
{
    struct hmap x = { 0 };
    set_s(&x, "a", "1");
    set_s(&x, "b", "2");
    struct membuf b = { 0 };
    ck_assert(hmap_encode(&x, &b));
    struct hmap y = { 0 };
    /* A field twice: rewrite "b" as "a". */
    unsigned char *p = memchr(b.p + 9, 'b', b.len - 9);
    ck_assert_ptr_nonnull(p);
    *p = 'a';
    ck_assert_int_eq(hmap_decode(&y, b.p, b.len), COLL_MALFORMED);
    hmap_free(&y);
    b.p[0] = 7;                         /* no such encoding */
    ck_assert_int_eq(hmap_decode(&y, b.p, b.len), COLL_MALFORMED);
    hmap_free(&y);
    mem_free(b.p);
    hmap_free(&x);
}
END_TEST

/* ---- effects: apply equals the direct calls --------------------------- */

static void
same_hashes(const struct hmap *x, const struct hmap *y)
{
    ck_assert(hmap_is_compact(x) == hmap_is_compact(y));
    char *a = strdup(dump(x));
    ck_assert_str_eq(dump(y), a);       /* order too, large or not */
    free(a);
}

START_TEST(test_apply_equals_direct_operations)
{
    struct hmap x = { 0 }, y = { 0 };
    srand(4242);
    for (int step = 0; step < 4000; step++) {
        char buf[8][80];
        const char *s[8];
        size_t len[8];
        int n = 2 * (1 + rand() % 4);
        for (int i = 0; i < n; i++) {
            if (i % 2 == 0) {
                random_field(buf[i]);
            } else {
                random_string(buf[i], rand() % 80 == 0 ? 66 : 10);
            }
            s[i] = buf[i];
            len[i] = strlen(buf[i]);
        }
        struct membuf b = { 0 };
        uint8_t op;
        if (rand() % 3 != 0) {
            ck_assert(hmap_prepare(&x, s, len, (size_t)n));
            for (int i = 0; i < n; i += 2) {
                ck_assert_int_ne(hmap_set(&x, s[i], len[i], s[i + 1],
                                          len[i + 1]), HMAP_NOMEM);
            }
            ck_assert(hmap_effect_set(&b, s, len, (size_t)n));
            op = HMAP_OP_SET;
        } else {
            for (int i = 0; i < n; i++) {
                (void)hmap_del(&x, s[i], len[i]);
            }
            ck_assert(hmap_effect_del(&b, s, len, (size_t)n));
            op = HMAP_OP_DEL;
        }
        ck_assert_int_eq(hmap_apply(&y, op, b.p, b.len), COLL_OK);
        /* A payload cut short changes nothing. */
        ck_assert_int_eq(hmap_apply(&y, op, b.p, b.len - 1), COLL_MALFORMED);
        mem_free(b.p);
        if (step % 50 == 0) {
            same_hashes(&x, &y);
        }
        if (hmap_len(&x) == 0) {
            hmap_free(&x);
            hmap_free(&y);
        }
    }
    same_hashes(&x, &y);
    ck_assert_int_eq(hmap_apply(&y, 99, (const unsigned char *)"\0\0\0\0",
                                4), COLL_MALFORMED);
    hmap_free(&x);
    hmap_free(&y);
}
END_TEST

struct scan_seen {
    int n;
    char first[80];
};

static void
scan_note(const struct pack_item *f, const struct pack_item *v, void *arg)
{
    struct scan_seen *s = arg;
    (void)v;
    if (s->n++ == 0) {
        memcpy(s->first, f->data, f->len);
        s->first[f->len] = '\0';
    }
}

START_TEST(test_scan_is_one_step_while_compact)
{
    struct hmap x = { 0 };
    set_s(&x, "z", "1");
    set_s(&x, "y", "2");
    struct scan_seen s = { 0 };
    ck_assert_uint_eq(hmap_scan(&x, 12345, scan_note, &s), 0);
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(s.first, "z");
    char f[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(f, sizeof(f), "f%d", i);
        set_s(&x, f, "v");
    }
    memset(&s, 0, sizeof(s));
    uint64_t cursor = 0;
    int steps = 0;
    do {
        cursor = hmap_scan(&x, cursor, scan_note, &s);
        steps++;
    } while (cursor != 0);
    ck_assert_int_eq(s.n, 1002);
    ck_assert_int_gt(steps, 1);
    hmap_free(&x);
}
END_TEST

Suite *
hmap_suite(void)
{
    Suite *s = suite_create("hmap");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_compact_keeps_insertion_order);
    tcase_add_test(tc, test_converts_at_the_513th_field_and_never_back);
    tcase_add_test(tc, test_converts_on_a_65_byte_field_or_value);
    tcase_add_test(tc, test_random_operations_match_a_model);
    tcase_add_test(tc, test_encode_decode_round_trip);
    tcase_add_test(tc, test_large_bytes_are_the_packdict_layout);
    tcase_add_test(tc, test_decode_refuses_what_no_hash_is);
    tcase_add_test(tc, test_apply_equals_direct_operations);
    tcase_add_test(tc, test_scan_is_one_step_while_compact);
    suite_add_tcase(s, tc);
    return s;
}
