/*
 * check_rls_wire.c - unit tests for server/envoy/rls_wire.c: the
 * RateLimitResponse it writes is, byte for byte, what protobuf-c packs from
 * the same answer built as messages (protocol/rls.proto), over statuses
 * with and without a limit, names, zero and large numbers, headers and
 * dynamic_metadata.
 */
#include <stdlib.h>
#include <string.h>

#include "server/envoy/rls_wire.h"
#include "tests/unit/suites.h"

typedef Envoy__Service__Ratelimit__V3__RateLimitResponse Response;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus Status;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit Limit;
typedef Envoy__Service__Ratelimit__V3__Duration Duration;
typedef Envoy__Service__Ratelimit__V3__HeaderValue Header;

#define MAXN 8

/* protobuf-c's bytes of answer a, into out, cap bytes (returns the
 * length). */
static size_t
packed_by_protobuf_c(const struct rls_wire_answer *a, unsigned char *out,
                     size_t cap)
{
    Response r = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__INIT;
    Status s[MAXN], *ps[MAXN];
    Limit l[MAXN];
    Duration d[MAXN];
    Header h[3], *ph[3];
    for (size_t i = 0; i < a->n; i++) {
        envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(&s[i]);
        s[i].code = (int)a->st[i].code;
        s[i].limit_remaining = a->st[i].remaining;
        if (a->st[i].has_limit) {
            envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&l[i]);
            l[i].name = (char *)a->st[i].name;
            l[i].requests_per_unit = a->st[i].requests_per_unit;
            l[i].unit = (int)a->st[i].unit;
            s[i].current_limit = &l[i];
            envoy__service__ratelimit__v3__duration__init(&d[i]);
            d[i].seconds = rls_wire_seconds(a->st[i].reset_ns);
            s[i].duration_until_reset = &d[i];
        }
        ps[i] = &s[i];
    }
    for (size_t i = 0; i < a->nheaders; i++) {
        envoy__service__ratelimit__v3__header_value__init(&h[i]);
        h[i].key = (char *)a->headers[i].key;
        h[i].value = (char *)a->headers[i].value;
        ph[i] = &h[i];
    }
    r.overall_code = (int)a->overall;
    r.n_statuses = a->n;
    r.statuses = ps;
    r.n_response_headers_to_add = a->nheaders;
    r.response_headers_to_add = ph;
    r.dynamic_metadata = (Envoy__Service__Ratelimit__V3__Struct *)a->metadata;
    ck_assert_uint_le(protobuf_c_message_get_packed_size(&r.base), cap);
    return protobuf_c_message_pack(&r.base, out);
}

static void
assert_same_bytes(const struct rls_wire_answer *a)
{
    static unsigned char want[1 << 16], got[1 << 16];
    struct rls_wire_sizes z;
    size_t wlen = packed_by_protobuf_c(a, want, sizeof(want));
    size_t size = rls_wire_size(a, &z);
    ck_assert_uint_le(size, sizeof(got));
    size_t glen = rls_wire_write(a, &z, got);
    ck_assert_uint_eq(size, glen);
    ck_assert_uint_eq(wlen, glen);
    ck_assert(memcmp(want, got, glen) == 0);
}

START_TEST(test_every_kind_of_status_is_written_as_protobuf_c_packs_it)
{
    static const char *const names[] = { "", "login", "a rule with a long "
        "name that takes more than one hundred and twenty-seven bytes, so "
        "that its length is written as a varint of two bytes, which it is" };
    static const int64_t resets[] = { 0, 1, 999999999, 1000000000, 1500000000,
                                      86400LL * 1000000000 * 365 * 100, -5 };
    static const uint32_t numbers[] = { 0, 1, 127, 128, 16384, UINT32_MAX };
    struct nl_status st[MAXN];
    unsigned seed = 42;
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + (size_t)(rand_r(&seed) % MAXN);
        for (size_t i = 0; i < n; i++) {
            memset(&st[i], 0, sizeof(st[i]));
            st[i].code = rand_r(&seed) % 2 ? NL_OK : NL_OVER_LIMIT;
            st[i].has_limit = rand_r(&seed) % 4 != 0;
            st[i].requests_per_unit = numbers[rand_r(&seed) % 6];
            st[i].unit = (enum limits_unit)(rand_r(&seed) % 8);
            st[i].name = names[rand_r(&seed) % 3];
            st[i].remaining = numbers[rand_r(&seed) % 6];
            st[i].reset_ns = resets[rand_r(&seed) % 7];
        }
        struct rls_wire_header h[3] = { { "RateLimit-Limit", "5" },
                                        { "RateLimit-Remaining", "" },
                                        { "RateLimit-Reset", "3600" } };
        struct rls_wire_answer a = { rand_r(&seed) % 2 ? NL_OK : NL_OVER_LIMIT,
                                     st, n, h, rand_r(&seed) % 2 ? 3 : 0,
                                     NULL };
        assert_same_bytes(&a);
    }
}
END_TEST

START_TEST(test_dynamic_metadata_follows_as_field_6)
{
    Envoy__Service__Ratelimit__V3__Struct s, inner;
    Envoy__Service__Ratelimit__V3__Struct__FieldsEntry f[2], *pf[2], g, *pg;
    Envoy__Service__Ratelimit__V3__Value v[2], w;
    envoy__service__ratelimit__v3__struct__init(&s);
    envoy__service__ratelimit__v3__struct__init(&inner);
    for (int i = 0; i < 2; i++) {
        envoy__service__ratelimit__v3__struct__fields_entry__init(&f[i]);
        envoy__service__ratelimit__v3__value__init(&v[i]);
        f[i].value = &v[i];
        pf[i] = &f[i];
    }
    f[0].key = (char *)"domain";
    v[0].kind_case = ENVOY__SERVICE__RATELIMIT__V3__VALUE__KIND_STRING_VALUE;
    v[0].string_value = (char *)"api";
    f[1].key = (char *)"metadata";
    v[1].kind_case = ENVOY__SERVICE__RATELIMIT__V3__VALUE__KIND_STRUCT_VALUE;
    v[1].struct_value = &inner;
    envoy__service__ratelimit__v3__struct__fields_entry__init(&g);
    envoy__service__ratelimit__v3__value__init(&w);
    g.key = (char *)"n";
    g.value = &w;
    w.kind_case = ENVOY__SERVICE__RATELIMIT__V3__VALUE__KIND_NUMBER_VALUE;
    w.number_value = 0;                 /* set: written though 0 */
    pg = &g;
    inner.n_fields = 1;
    inner.fields = &pg;
    s.n_fields = 2;
    s.fields = pf;
    struct nl_status st = { .code = NL_OK, .has_limit = true,
                            .requests_per_unit = 10, .unit = LIMITS_MINUTE,
                            .name = "", .remaining = 9,
                            .reset_ns = 30000000000 };
    struct rls_wire_answer a = { NL_OK, &st, 1, NULL, 0, &s };
    assert_same_bytes(&a);
    /* An empty Struct is still the field, of length 0. */
    s.n_fields = 0;
    assert_same_bytes(&a);
}
END_TEST

/* ---- random Structs ---- */

typedef Envoy__Service__Ratelimit__V3__Struct Struct;
typedef Envoy__Service__Ratelimit__V3__Struct__FieldsEntry Entry;
typedef Envoy__Service__Ratelimit__V3__Value Value;
typedef Envoy__Service__Ratelimit__V3__ListValue List;

static unsigned char pool[1 << 20];
static size_t pool_used;

static void *
take(size_t size)
{
    size_t at = (pool_used + 15) & ~(size_t)15;
    ck_assert_uint_le(at + size, sizeof(pool));
    pool_used = at + size;
    return pool + at;
}

static Struct *random_struct(unsigned *seed, int depth);

static Value *
random_value(unsigned *seed, int depth)
{
    static const char *const strings[] = { "", "x", "service_1", "é" };
    static const double numbers[] = { 0, -0.0, 1, -2.5, 1e300, 4294967295 };
    Value *v = take(sizeof(*v));
    envoy__service__ratelimit__v3__value__init(v);
    int kind = 1 + rand_r(seed) % (depth > 0 ? 6 : 4);
    v->kind_case = (Envoy__Service__Ratelimit__V3__Value__KindCase)kind;
    switch (kind) {
    case 1: v->null_value = 0; break;
    case 2: v->number_value = numbers[rand_r(seed) % 6]; break;
    case 3: v->string_value = (char *)strings[rand_r(seed) % 4]; break;
    case 4: v->bool_value = rand_r(seed) % 2; break;
    case 5: v->struct_value = random_struct(seed, depth - 1); break;
    default: {
        List *l = take(sizeof(*l));
        envoy__service__ratelimit__v3__list_value__init(l);
        l->n_values = (size_t)(rand_r(seed) % 4);
        l->values = take((l->n_values + 1) * sizeof(*l->values));
        for (size_t i = 0; i < l->n_values; i++) {
            l->values[i] = random_value(seed, depth - 1);
        }
        v->list_value = l;
    }
    }
    return v;
}

static Struct *
random_struct(unsigned *seed, int depth)
{
    static const char *const keys[] = { "", "name", "a much longer key, "
        "long enough that one hundred and twenty-eight bytes or more make "
        "its length a two-byte varint, which this one is, by far", "tier" };
    Struct *s = take(sizeof(*s));
    envoy__service__ratelimit__v3__struct__init(s);
    s->n_fields = (size_t)(rand_r(seed) % 5);
    s->fields = take((s->n_fields + 1) * sizeof(*s->fields));
    for (size_t i = 0; i < s->n_fields; i++) {
        Entry *e = take(sizeof(*e));
        envoy__service__ratelimit__v3__struct__fields_entry__init(e);
        e->key = (char *)keys[rand_r(seed) % 4];
        e->value = random_value(seed, depth);
        s->fields[i] = e;
    }
    return s;
}

START_TEST(test_random_structs_are_written_as_protobuf_c_packs_them)
{
    struct nl_status st = { .code = NL_OK, .name = "" };
    unsigned seed = 7;
    for (int round = 0; round < 3000; round++) {
        pool_used = 0;
        struct rls_wire_answer a = { NL_OK, &st, 1, NULL, 0,
                                     random_struct(&seed, 3) };
        assert_same_bytes(&a);
    }
}
END_TEST

Suite *
rls_wire_suite(void)
{
    Suite *s = suite_create("rls_wire");
    TCase *tc = tcase_create("response");
    tcase_add_test(tc, test_every_kind_of_status_is_written_as_protobuf_c_packs_it);
    tcase_add_test(tc, test_dynamic_metadata_follows_as_field_6);
    tcase_add_test(tc, test_random_structs_are_written_as_protobuf_c_packs_them);
    suite_add_tcase(s, tc);
    return s;
}
