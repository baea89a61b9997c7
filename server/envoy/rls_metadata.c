/*
 * rls_metadata.c - ShouldRateLimit's dynamic_metadata (field 6 of Envoy's
 * RateLimitResponse, a google.protobuf.Struct), built as envoyproxy/
 * ratelimit builds it with RESPONSE_DYNAMIC_METADATA=true: its
 * ratelimitToMetadata(), descriptorToStruct() and mergeMetadata() in
 * src/service/ratelimit.go at commit f2fb157 (v1.4.0-287, July 2026).
 *
 *   domain       the request's domain
 *   descriptors  one Struct per descriptor of the request, in order:
 *                  entries     ["key=value", ...]
 *                  limit       Envoy's override as Go's String() prints a
 *                              message: "requests_per_unit:10 unit:MINUTE"
 *                              (set fields only; an unknown unit by number).
 *                              Go may print two spaces there instead of one,
 *                              by a choice fixed per binary (protobuf-go
 *                              keeps its text unstable on purpose); one here
 *                  hitsAddend  the descriptor's hits_addend, when set
 *   hitsAddend   the request's hits_addend, when not 0
 *   metadata     the `metadata:` of the limits of the descriptors that
 *                passed, merged in the request's order: a key already
 *                there keeps its value, unless both are Structs, which
 *                merge the same way; absent when nothing is left
 *
 * Numbers are Struct's doubles (hits_addend included). That service's
 * merge puts the first limit's own Value objects into the answer and then
 * merges later ones into them, so its configuration keeps what one
 * request merged in; here every call merges into its own copies.
 */
#include "server/envoy/rls_metadata.h"

#include <stdio.h>
#include <string.h>

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest Request;
typedef Envoy__Service__Ratelimit__V3__RateLimitDescriptor Descriptor;
typedef Envoy__Service__Ratelimit__V3__RateLimitDescriptor__RateLimitOverride
    Override;
typedef Envoy__Service__Ratelimit__V3__Struct Struct;
typedef Envoy__Service__Ratelimit__V3__Struct__FieldsEntry Field;
typedef Envoy__Service__Ratelimit__V3__Value Value;
typedef Envoy__Service__Ratelimit__V3__ListValue List;

#define KIND(k) ENVOY__SERVICE__RATELIMIT__V3__VALUE__KIND_##k

/* ---- values ------------------------------------------------------------ */

static Value *
new_value(Envoy__Service__Ratelimit__V3__Value__KindCase kind,
          rls_alloc_fn alloc)
{
    Value *v = alloc(sizeof(*v));
    if (v != NULL) {
        envoy__service__ratelimit__v3__value__init(v);
        v->kind_case = kind;
    }
    return v;
}

static Value *
string_value(const char *s, rls_alloc_fn alloc)
{
    Value *v = s != NULL ? new_value(KIND(STRING_VALUE), alloc) : NULL;
    if (v != NULL) {
        v->string_value = (char *)s;
    }
    return v;
}

static Value *
number_value(double d, rls_alloc_fn alloc)
{
    Value *v = new_value(KIND(NUMBER_VALUE), alloc);
    if (v != NULL) {
        v->number_value = d;
    }
    return v;
}

static Value *
struct_value(Struct *s, rls_alloc_fn alloc)
{
    Value *v = s != NULL ? new_value(KIND(STRUCT_VALUE), alloc) : NULL;
    if (v != NULL) {
        v->struct_value = s;
    }
    return v;
}

/* A Struct with room for cap fields, none yet. */
static Struct *
new_struct(size_t cap, rls_alloc_fn alloc)
{
    Struct *s = alloc(sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    envoy__service__ratelimit__v3__struct__init(s);
    s->fields = alloc((cap ? cap : 1) * sizeof(*s->fields));
    return s->fields != NULL ? s : NULL;
}

/* Field key: v into s, which has room for it (false: v is NULL, out of
 * memory somewhere below). */
static bool
put(Struct *s, const char *key, Value *v, rls_alloc_fn alloc)
{
    Field *f = v != NULL ? alloc(sizeof(*f)) : NULL;
    if (f == NULL) {
        return false;
    }
    envoy__service__ratelimit__v3__struct__fields_entry__init(f);
    f->key = (char *)key;
    f->value = v;
    s->fields[s->n_fields++] = f;
    return true;
}

static List *
new_list(size_t n, rls_alloc_fn alloc)
{
    List *l = alloc(sizeof(*l));
    if (l == NULL) {
        return NULL;
    }
    envoy__service__ratelimit__v3__list_value__init(l);
    l->values = alloc((n ? n : 1) * sizeof(*l->values));
    return l->values != NULL ? l : NULL;
}

static Value *
list_value(List *l, rls_alloc_fn alloc)
{
    Value *v = l != NULL ? new_value(KIND(LIST_VALUE), alloc) : NULL;
    if (v != NULL) {
        v->list_value = l;
    }
    return v;
}

/* ---- a limit's metadata -------------------------------------------------- */

static Value *meta_value(const struct limits_meta *m, rls_alloc_fn alloc);

static List *
meta_list(const struct limits_meta *m, rls_alloc_fn alloc)
{
    List *l = new_list(m->nitems, alloc);
    for (size_t i = 0; l != NULL && i < m->nitems; i++) {
        if ((l->values[i] = meta_value(&m->items[i], alloc)) == NULL) {
            return NULL;
        }
        l->n_values++;
    }
    return l;
}

static Value *
meta_value(const struct limits_meta *m, rls_alloc_fn alloc)
{
    Value *v;
    switch (m->type) {
    case LIMITS_META_NULL:
        v = new_value(KIND(NULL_VALUE), alloc);
        if (v != NULL) {
            v->null_value = ENVOY__SERVICE__RATELIMIT__V3__NULL_VALUE__NULL_VALUE;
        }
        return v;
    case LIMITS_META_NUMBER:
        return number_value(m->number, alloc);
    case LIMITS_META_STRING:
        return string_value(m->string, alloc);
    case LIMITS_META_BOOL:
        v = new_value(KIND(BOOL_VALUE), alloc);
        if (v != NULL) {
            v->bool_value = m->boolean;
        }
        return v;
    case LIMITS_META_STRUCT:
        return struct_value(rls_metadata_struct(m, alloc), alloc);
    case LIMITS_META_LIST:
        return list_value(meta_list(m, alloc), alloc);
    }
    return NULL;
}

Struct *
rls_metadata_struct(const struct limits_meta *m, rls_alloc_fn alloc)
{
    Struct *s = new_struct(m->nitems, alloc);
    for (size_t i = 0; s != NULL && i < m->nitems; i++) {
        if (!put(s, m->items[i].key, meta_value(&m->items[i], alloc), alloc)) {
            return NULL;
        }
    }
    return s;
}

/* ---- merging ------------------------------------------------------------ */

static Field *
find(const Struct *s, const char *key)
{
    for (size_t i = 0; i < s->n_fields; i++) {
        if (strcmp(s->fields[i]->key, key) == 0) {
            return s->fields[i];
        }
    }
    return NULL;
}

static bool
is_struct(const Value *v)
{
    return v != NULL && v->kind_case == KIND(STRUCT_VALUE) &&
           v->struct_value != NULL;
}

/* src into dest, as mergeMetadata(): a new key is added, a key there
 * stays, but two Structs merge. dest's fields grow one at a time
 * (metadata is what the limits file wrote: a few keys). */
static bool
merge(Struct *dest, const Struct *src, rls_alloc_fn alloc)
{
    for (size_t i = 0; i < src->n_fields; i++) {
        Field *f = src->fields[i], *d = find(dest, f->key);
        if (d != NULL) {
            if (is_struct(d->value) && is_struct(f->value) &&
                !merge(d->value->struct_value, f->value->struct_value, alloc)) {
                return false;
            }
            continue;
        }
        Field **grown = alloc((dest->n_fields + 1) * sizeof(*grown));
        if (grown == NULL) {
            return false;
        }
        memcpy(grown, dest->fields, dest->n_fields * sizeof(*grown));
        grown[dest->n_fields++] = f;
        dest->fields = grown;
    }
    return true;
}

/* ---- the request ------------------------------------------------------- */

/* Go's String() of a RateLimitOverride: set fields, "name:value" with a
 * space between, envoy.type.v3.RateLimitUnit's names. */
static char *
override_text(const Override *o, rls_alloc_fn alloc)
{
    static const char *const units[] = { "UNKNOWN", "SECOND", "MINUTE", "HOUR",
                                         "DAY", "MONTH", "YEAR" };
    char buf[64] = "";              /* "": neither field set */
    int n = 0, unit = (int)o->unit;
    if (o->requests_per_unit != 0) {
        n = snprintf(buf, sizeof(buf), "requests_per_unit:%u",
                     o->requests_per_unit);
    }
    if (unit >= 1 && unit <= 6) {
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%sunit:%s",
                      n > 0 ? " " : "", units[unit]);
    } else if (unit != 0) {
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%sunit:%d",
                      n > 0 ? " " : "", unit);
    }
    char *text = alloc((size_t)n + 1);
    if (text != NULL) {
        memcpy(text, buf, (size_t)n + 1);
    }
    return text;
}

/* "key=value", as fmt.Sprintf("%s=%s"). */
static char *
entry_text(const char *key, const char *value, rls_alloc_fn alloc)
{
    size_t klen = strlen(key), vlen = strlen(value);
    char *text = alloc(klen + vlen + 2);
    if (text != NULL) {
        memcpy(text, key, klen);
        text[klen] = '=';
        memcpy(text + klen + 1, value, vlen + 1);
    }
    return text;
}

/* descriptorToStruct(). */
static Value *
descriptor_value(const Descriptor *d, rls_alloc_fn alloc)
{
    Struct *s = new_struct(3, alloc);
    List *entries = new_list(d->n_entries, alloc);
    if (s == NULL || entries == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < d->n_entries; i++) {
        char *text = entry_text(d->entries[i]->key, d->entries[i]->value,
                                alloc);
        if ((entries->values[i] = string_value(text, alloc)) == NULL) {
            return NULL;
        }
        entries->n_values++;
    }
    if (!put(s, "entries", list_value(entries, alloc), alloc) ||
        (d->limit != NULL &&
         !put(s, "limit", string_value(override_text(d->limit, alloc), alloc),
              alloc)) ||
        (d->hits_addend != NULL &&
         !put(s, "hitsAddend", number_value((double)d->hits_addend->value,
                                            alloc), alloc))) {
        return NULL;
    }
    return struct_value(s, alloc);
}

/* The passed limits' metadata merged, NULL in *out when it has no field;
 * false when out of memory. */
static bool
merged(Struct *const *passed, size_t n, Struct **out, rls_alloc_fn alloc)
{
    Struct *m = new_struct(0, alloc);
    if (m == NULL) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (passed[i] != NULL && !merge(m, passed[i], alloc)) {
            return false;
        }
    }
    *out = m->n_fields > 0 ? m : NULL;
    return true;
}

Struct *
rls_metadata_build(const Request *req, Struct *const *passed, size_t n,
                   rls_alloc_fn alloc)
{
    Struct *s = new_struct(4, alloc), *meta = NULL;
    List *ds = new_list(req->n_descriptors, alloc);
    if (s == NULL || ds == NULL || !merged(passed, n, &meta, alloc)) {
        return NULL;
    }
    for (size_t i = 0; i < req->n_descriptors; i++) {
        if ((ds->values[i] = descriptor_value(req->descriptors[i],
                                              alloc)) == NULL) {
            return NULL;
        }
        ds->n_values++;
    }
    if (!put(s, "domain", string_value(req->domain, alloc), alloc) ||
        !put(s, "descriptors", list_value(ds, alloc), alloc) ||
        (req->hits_addend != 0 &&
         !put(s, "hitsAddend", number_value(req->hits_addend, alloc), alloc)) ||
        (meta != NULL && !put(s, "metadata", struct_value(meta, alloc), alloc))) {
        return NULL;
    }
    return s;
}
