/*
 * rls_wire.c - Envoy's RateLimitResponse as bytes, written directly, in
 * protobuf-c's order and form (fields by number; proto3: a scalar or
 * string that is zero or empty is left out, a sub-message that is set is
 * written even when empty, as duration_until_reset of 0 seconds must be):
 *
 *   1 overall_code (enum)       2 statuses (repeated DescriptorStatus)
 *   3 response_headers_to_add   6 dynamic_metadata (protobuf-c's pack)
 *   DescriptorStatus: 1 code, 2 current_limit, 3 limit_remaining,
 *                     4 duration_until_reset
 *   RateLimit: 1 requests_per_unit, 2 unit, 3 name
 *   Duration: 1 seconds (nanos always 0)    HeaderValue: 1 key, 2 value
 *   Struct: 1 fields, each an entry {1 key, 2 value}
 *   Value: one of 1 null, 2 number (a double, 8 bytes), 3 string, 4 bool,
 *          5 struct, 6 list, written even when 0 or empty (it says which)
 *   ListValue: 1 values
 *
 * Every size is measured once (rls_wire_size), then the bytes follow
 * them (rls_wire_write); a Struct, measured once for its length, is
 * written backwards (below), where protobuf-c's generic walk took about
 * 10,000 instructions a call for a small nested one. Every field number
 * is below 16: a tag is a byte.
 */
#include "server/envoy/rls_wire.h"

#include <string.h>

#include "lib/time.h"
#include "lib/varint.h"

enum { VARINT = 0, I64 = 1, LEN = 2 };

/* A varint field (enums and int64 as protobuf-c writes them; none here
 * is negative), left out when 0. */
static size_t
varint_field_size(uint64_t v)
{
    return v != 0 ? 1 + varint_size(v) : 0;
}

static unsigned char *
put_varint_field(unsigned char *p, unsigned field, uint64_t v)
{
    if (v == 0) {
        return p;
    }
    *p++ = (unsigned char)(field << 3 | VARINT);
    return varint_put(p, v);
}

/* A length-delimited field of len bytes: its whole size, and its head. */
static size_t
len_field_size(size_t len)
{
    return 1 + varint_size(len) + len;
}

static unsigned char *
put_head(unsigned char *p, unsigned field, size_t len)
{
    *p++ = (unsigned char)(field << 3 | LEN);
    return varint_put(p, len);
}

/* A string field, left out when empty. */
static unsigned char *
put_string_field(unsigned char *p, unsigned field, const char *s, size_t len)
{
    if (len == 0) {
        return p;
    }
    p = put_head(p, field, len);
    memcpy(p, s, len);
    return p + len;
}

int64_t
rls_wire_seconds(int64_t ns)
{
    return ns <= 0 ? 0 : ns / NS_PER_SEC + (ns % NS_PER_SEC != 0);
}

/* ---- google.protobuf.Struct ------------------------------------------ */

typedef Envoy__Service__Ratelimit__V3__Struct Struct;
typedef Envoy__Service__Ratelimit__V3__Value Value;
typedef Envoy__Service__Ratelimit__V3__ListValue List;
typedef Envoy__Service__Ratelimit__V3__Struct__FieldsEntry Entry;

#define KIND(k) ENVOY__SERVICE__RATELIMIT__V3__VALUE__KIND_##k

static size_t struct_size(const Struct *s);
static size_t value_size(const Value *v);

static size_t
list_size(const List *l)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n_values; i++) {
        n += len_field_size(value_size(l->values[i]));
    }
    return n;
}

/* A Value's fields: the one its kind names (none when unset). */
static size_t
value_size(const Value *v)
{
    switch (v->kind_case) {
    case KIND(NULL_VALUE):
        return 1 + varint_size((uint64_t)v->null_value);
    case KIND(NUMBER_VALUE):
        return 1 + 8;
    case KIND(STRING_VALUE):
        return len_field_size(strlen(v->string_value));
    case KIND(BOOL_VALUE):
        return 2;
    case KIND(STRUCT_VALUE):
        return len_field_size(struct_size(v->struct_value));
    case KIND(LIST_VALUE):
        return len_field_size(list_size(v->list_value));
    default:
        return 0;
    }
}

/* A map entry's fields: its key (left out when empty) and its value. */
static size_t
entry_size(const Entry *f)
{
    size_t klen = f->key != NULL ? strlen(f->key) : 0;
    return (klen ? len_field_size(klen) : 0) +
           (f->value != NULL ? len_field_size(value_size(f->value)) : 0);
}

static size_t
struct_size(const Struct *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_fields; i++) {
        n += len_field_size(entry_size(s->fields[i]));
    }
    return n;
}

/* A Struct's bytes are written backwards, from their end: a nested
 * message's length is then known when its head goes before it, and no
 * size is measured twice. Each rev_ function writes before end and
 * returns where its bytes start. */
static unsigned char *
rev_varint(unsigned char *end, uint64_t v)
{
    end -= varint_size(v);
    varint_put(end, v);
    return end;
}

static unsigned char *
rev_head(unsigned char *end, unsigned field, size_t len)
{
    end = rev_varint(end, len);
    *--end = (unsigned char)(field << 3 | LEN);
    return end;
}

static unsigned char *
rev_string(unsigned char *end, unsigned field, const char *s, size_t len)
{
    end -= len;
    memcpy(end, s, len);
    return rev_head(end, field, len);
}

static unsigned char *
rev_double(unsigned char *end, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    for (int i = 7; i >= 0; i--) {
        *--end = (unsigned char)(bits >> (8 * i));
    }
    *--end = (unsigned char)(2 << 3 | I64);
    return end;
}

static unsigned char *rev_struct(unsigned char *end, const Struct *s);

/* Value v as field `field` (its head before its fields). */
static unsigned char *
rev_value(unsigned char *end, unsigned field, const Value *v)
{
    unsigned char *stop = end;
    switch (v->kind_case) {
    case KIND(NULL_VALUE):
        end = rev_varint(end, (uint64_t)v->null_value);
        *--end = (unsigned char)(1 << 3 | VARINT);
        break;
    case KIND(NUMBER_VALUE):
        end = rev_double(end, v->number_value);
        break;
    case KIND(STRING_VALUE):
        end = rev_string(end, 3, v->string_value, strlen(v->string_value));
        break;
    case KIND(BOOL_VALUE):
        *--end = v->bool_value ? 1 : 0;
        *--end = (unsigned char)(4 << 3 | VARINT);
        break;
    case KIND(STRUCT_VALUE):
        end = rev_struct(end, v->struct_value);
        end = rev_head(end, 5, (size_t)(stop - end));
        break;
    case KIND(LIST_VALUE):
        for (size_t i = v->list_value->n_values; i-- > 0;) {
            end = rev_value(end, 1, v->list_value->values[i]);
        }
        end = rev_head(end, 6, (size_t)(stop - end));
        break;
    default:
        break;
    }
    return rev_head(end, field, (size_t)(stop - end));
}

static unsigned char *
rev_struct(unsigned char *end, const Struct *s)
{
    for (size_t i = s->n_fields; i-- > 0;) {
        const Entry *f = s->fields[i];
        unsigned char *stop = end;
        size_t klen = f->key != NULL ? strlen(f->key) : 0;
        if (f->value != NULL) {
            end = rev_value(end, 2, f->value);
        }
        if (klen > 0) {
            end = rev_string(end, 1, f->key, klen);
        }
        end = rev_head(end, 1, (size_t)(stop - end));
    }
    return end;
}

/* ---- the answer ------------------------------------------------------- */

/* A DescriptorStatus's size, its parts' into z. */
static size_t
status_size(const struct nl_status *s, struct rls_wire_sizes *z, size_t i)
{
    size_t total = varint_field_size((uint64_t)s->code) +
                   varint_field_size(s->remaining);
    if (s->has_limit) {
        z->st[i].name = s->name != NULL ? strlen(s->name) : 0;
        z->st[i].limit = varint_field_size(s->requests_per_unit) +
                         varint_field_size((uint64_t)s->unit) +
                         (z->st[i].name ? len_field_size(z->st[i].name) : 0);
        z->st[i].seconds = (uint64_t)rls_wire_seconds(s->reset_ns);
        z->st[i].duration = varint_field_size(z->st[i].seconds);
        total += len_field_size(z->st[i].limit) +
                 len_field_size(z->st[i].duration);
    }
    z->st[i].total = total;
    return len_field_size(total);
}

static unsigned char *
put_status(unsigned char *p, const struct nl_status *s,
           const struct rls_wire_sizes *z, size_t i)
{
    p = put_head(p, 2, z->st[i].total);
    p = put_varint_field(p, 1, (uint64_t)s->code);
    if (s->has_limit) {
        p = put_head(p, 2, z->st[i].limit);
        p = put_varint_field(p, 1, s->requests_per_unit);
        p = put_varint_field(p, 2, (uint64_t)s->unit);
        p = put_string_field(p, 3, s->name, z->st[i].name);
    }
    p = put_varint_field(p, 3, s->remaining);
    if (s->has_limit) {
        p = put_head(p, 4, z->st[i].duration);
        p = put_varint_field(p, 1, z->st[i].seconds);
    }
    return p;
}

/* A HeaderValue's fields' size (few, short: measured where written). */
static size_t
header_size(const struct rls_wire_header *h, size_t *klen, size_t *vlen)
{
    *klen = strlen(h->key);
    *vlen = strlen(h->value);
    return (*klen ? len_field_size(*klen) : 0) +
           (*vlen ? len_field_size(*vlen) : 0);
}

size_t
rls_wire_size(const struct rls_wire_answer *a, struct rls_wire_sizes *z)
{
    size_t n = varint_field_size((uint64_t)a->overall), klen, vlen;
    for (size_t i = 0; i < a->n; i++) {
        n += status_size(&a->st[i], z, i);
    }
    for (size_t i = 0; i < a->nheaders; i++) {
        n += len_field_size(header_size(&a->headers[i], &klen, &vlen));
    }
    z->metadata = 0;
    if (a->metadata != NULL) {
        z->metadata = struct_size(a->metadata);
        n += len_field_size(z->metadata);
    }
    return n;
}

size_t
rls_wire_write(const struct rls_wire_answer *a,
               const struct rls_wire_sizes *z, unsigned char *out)
{
    unsigned char *p = put_varint_field(out, 1, (uint64_t)a->overall);
    size_t klen, vlen;
    for (size_t i = 0; i < a->n; i++) {
        p = put_status(p, &a->st[i], z, i);
    }
    for (size_t i = 0; i < a->nheaders; i++) {
        const struct rls_wire_header *h = &a->headers[i];
        p = put_head(p, 3, header_size(h, &klen, &vlen));
        p = put_string_field(p, 1, h->key, klen);
        p = put_string_field(p, 2, h->value, vlen);
    }
    if (a->metadata != NULL) {
        p = put_head(p, 6, z->metadata) + z->metadata;
        rev_struct(p, a->metadata);
    }
    return (size_t)(p - out);
}
