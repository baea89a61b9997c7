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
 *
 * Every size is measured once (rls_wire_size), then the bytes follow
 * them (rls_wire_write). Every field number is below 16: a tag is a byte.
 */
#include "server/envoy/rls_wire.h"

#include <string.h>

#include "lib/time.h"
#include "lib/varint.h"

enum { VARINT = 0, LEN = 2 };

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
        z->metadata = protobuf_c_message_get_packed_size(&a->metadata->base);
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
        p = put_head(p, 6, z->metadata);
        p += protobuf_c_message_pack(&a->metadata->base, p);
    }
    return (size_t)(p - out);
}
