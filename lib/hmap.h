/*
 * hmap.h - a Redis hash: fields and their values, byte strings both.
 *
 * Two encodings, as Redis 7.0 keeps them, because the compact one shows:
 * HGETALL, HKEYS, HVALS and HSCAN answer in its order.
 *  - compact (big == NULL): the pack holds field, value, field, value...
 *    in insertion order, as Redis's listpack: setting a field that is
 *    there replaces its value in place, a new field goes at the end, a
 *    deleted one leaves the others in order;
 *  - large: a dict (lib/dict.h) from field to value (the entry's value
 *    bytes), in its bucket order.
 * A hash is compact while it has at most HMAP_PACK_ENTRIES fields and no
 * field or value longer than HMAP_PACK_VALUE bytes (Redis's defaults of
 * hash-max-listpack-entries and -value), and once large stays large.
 * Conversion happens where Redis's does: hmap_prepare() is
 * hashTypeTryConversion() (every string of a write checked before it),
 * and hmap_set() converts first when its field or value is too long or a
 * new field would make one too many (Redis appends, then converts: the
 * same fields come out).
 *
 * Everything it owns goes through mem_owned_realloc (the pack, the dict
 * and the dict's header). A zeroed struct hmap is an empty hash.
 */
#ifndef CELLGATE_HMAP_H
#define CELLGATE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "lib/pack.h"
#include "lib/packdict.h"

struct hmap {
    struct pack pk;     /* the compact encoding */
    struct dict *big;   /* the large one; NULL while compact */
};

/* Redis 7.0.15's defaults (config.c): hash-max-listpack-entries is 512
 * (zsets' is 128), hash-max-listpack-value 64. */
#define HMAP_PACK_ENTRIES 512
#define HMAP_PACK_VALUE 64

/* The element effects (JOURNAL_ELEM ops of a hash): HMAP_OP_SET is
 * hmap_prepare() over all its strings, then hmap_set() of each pair in
 * order (HSET, HMSET, HSETNX, HINCRBY, HINCRBYFLOAT); HMAP_OP_DEL is
 * hmap_del() of each field (HDEL). */
enum { HMAP_OP_SET = 1, HMAP_OP_DEL = 2 };

/* ---- what the keyspace needs of every collection ---------------------- */

uint64_t hmap_len(const struct hmap *x);

static inline size_t
hmap_owned(const struct hmap *x)
{
    return packdict_owned(&x->pk, x->big);
}

static inline void
hmap_free(struct hmap *x)
{
    packdict_free(&x->pk, &x->big);
}

/* The whole hash appended to b, its encoding and (compact) its order
 * kept. false (b as it was, or longer: the caller drops it) when memory
 * runs out. */
static inline bool
hmap_encode(const struct hmap *x, struct membuf *b)
{
    return packdict_encode(&x->pk, x->big, 2, b);
}

/* Into an empty x: COLL_OK, COLL_MALFORMED or COLL_NOMEM (x then holds
 * whatever was read: freeable). */
int hmap_decode(struct hmap *x, const unsigned char *p, size_t len);

/* An element effect replayed: exactly the calls its command made. */
int hmap_apply(struct hmap *x, uint8_t op, const unsigned char *p,
               size_t len);

/* The effects' payloads, appended to b: n strings s[i] of len[i] bytes,
 * field and value alternating for HMAP_OP_SET (n even), fields for
 * HMAP_OP_DEL. false when memory runs out. */
static inline bool
hmap_effect_set(struct membuf *b, const char *const *s, const size_t *len,
                size_t n)
{
    return n % 2 == 0 && packdict_put_strings(b, s, len, n);
}

static inline bool
hmap_effect_del(struct membuf *b, const char *const *s, const size_t *len,
                size_t n)
{
    return packdict_put_strings(b, s, len, n);
}

/* ---- reading ---------------------------------------------------------- */

/* A field's value: in *v (valid until the hash changes), or false. */
bool hmap_get(const struct hmap *x, const void *f, size_t flen,
              struct pack_item *v);

static inline bool
hmap_exists(const struct hmap *x, const void *f, size_t flen)
{
    struct pack_item v;
    return hmap_get(x, f, flen, &v);
}

/* The length of a field's value, 0 when absent (HSTRLEN). */
size_t hmap_value_len(const struct hmap *x, const void *f, size_t flen);

static inline bool
hmap_is_compact(const struct hmap *x)
{
    return x->big == NULL;
}

/* Every field and value once: compact in their order, large in the
 * dict's. A zeroed iterator starts; false at the end. The hash must not
 * change while walking. */
struct hmap_iter {
    struct packdict_iter pd;
};
bool hmap_next(const struct hmap *x, struct hmap_iter *it,
               struct pack_item *f, struct pack_item *v);

/* One step of HSCAN: fn on each field and value of the step; the next
 * cursor, 0 at the end. A compact hash is one step, whatever the cursor
 * (Redis answers a listpack whole); a large one is dict_scan's. */
typedef packdict_scan_fn hmap_scan_fn;     /* (field, value, arg) */
uint64_t hmap_scan(const struct hmap *x, uint64_t cursor, hmap_scan_fn fn,
                   void *arg);

/* ---- writing ---------------------------------------------------------- */

/* Redis's hashTypeTryConversion() over the n strings a write is about to
 * store (fields and values): large when one is longer than
 * HMAP_PACK_VALUE. false (x unchanged) when memory runs out. */
bool hmap_prepare(struct hmap *x, const char *const *s, const size_t *len,
                  size_t n);

/* Set field f to v (Redis's hashTypeSet()). HMAP_NEW or HMAP_UPDATED;
 * HMAP_NOMEM when memory runs out or a string passes 4 GiB (x may then
 * be large already, its fields and values as they were). */
enum hmap_set_rc { HMAP_NOMEM = -1, HMAP_UPDATED = 0, HMAP_NEW = 1 };
int hmap_set(struct hmap *x, const void *f, size_t flen, const void *v,
             size_t vlen);

/* Remove field f: true when it was there. Never fails. */
bool hmap_del(struct hmap *x, const void *f, size_t flen);

/* About how many bytes setting the n strings (field, value, ...) may add
 * (admission under maxmemory), a conversion they may cause included. */
size_t hmap_grow_bytes(const struct hmap *x, const char *const *s,
                       const size_t *len, size_t n);

#endif
