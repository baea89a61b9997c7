/*
 * set.h - a Redis set: distinct members, byte strings.
 *
 * Two encodings:
 *  - compact (big == NULL): a pack (lib/pack.h) of the members, the
 *    integer ones first in increasing order of their value, then the
 *    others in the order they came. An all-integer set is therefore kept
 *    as Redis 7.0 keeps its intset, sorted by value, which shows: SMEMBERS,
 *    SSCAN and SRANDMEMBER with a count answer in that order. A set with
 *    other members is a hash table in Redis 7.0, whose order is random:
 *    only membership has to match there, and the pack is what keeps a
 *    small set smaller than Redis's;
 *  - large: a dict (lib/dict.h) of the members (no values), in its bucket
 *    order.
 * "Integer" is Redis's string2ll() rule (lib/num.h's num_parse_i64()): the
 * members an intset would take. A set is compact while it has at most
 * SET_MAX_INTSET_ENTRIES members when all are integers (Redis's
 * set-max-intset-entries), else at most SET_PACK_ENTRIES members of at
 * most SET_PACK_VALUE bytes each; once large it stays large, as Redis's
 * hash table never turns back into an intset.
 *
 * Everything it owns goes through mem_owned_realloc (the pack, the dict
 * and the dict's header). A zeroed struct set is an empty set. Random
 * picks (SPOP, SRANDMEMBER) come from lib/rand.h.
 */
#ifndef CELLGATE_SET_H
#define CELLGATE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "lib/pack.h"
#include "lib/packdict.h"

struct set {
    struct pack pk;     /* the compact encoding */
    struct dict *big;   /* the large one; NULL while compact */
};

/* Redis 7.0.15's set-max-intset-entries default (config.c). */
#define SET_MAX_INTSET_ENTRIES 512
/* The bounds of a compact set holding other members than integers (Redis
 * 7.2's set-max-listpack-entries and -value defaults). */
#define SET_PACK_ENTRIES 128
#define SET_PACK_VALUE 64

/* The element effects (JOURNAL_ELEM ops of a set): SET_OP_ADD is
 * set_add() of each member in order (SADD, SMOVE's destination),
 * SET_OP_REM set_rem() of each (SREM, SPOP, SMOVE's source). */
enum { SET_OP_ADD = 1, SET_OP_REM = 2 };

/* ---- what the keyspace needs of every collection ---------------------- */

uint64_t set_len(const struct set *x);

static inline size_t
set_owned(const struct set *x)
{
    return packdict_owned(&x->pk, x->big);
}

static inline void
set_free(struct set *x)
{
    packdict_free(&x->pk, &x->big);
}

/* The whole set appended to b, its encoding and (compact) its order
 * kept. false when memory runs out (b then dropped by the caller). */
static inline bool
set_encode(const struct set *x, struct membuf *b)
{
    return packdict_encode(&x->pk, x->big, 1, b);
}

/* Into an empty x: COLL_OK, COLL_MALFORMED or COLL_NOMEM (x then holds
 * whatever was read: freeable). */
int set_decode(struct set *x, const unsigned char *p, size_t len);

/* An element effect replayed: exactly the calls its command made. */
int set_apply(struct set *x, uint8_t op, const unsigned char *p, size_t len);

/* An effect's payload appended to b: the n members s[i] of len[i] bytes
 * (either op). false when memory runs out. */
static inline bool
set_effect(struct membuf *b, const char *const *s, const size_t *len,
           size_t n)
{
    return packdict_put_strings(b, s, len, n);
}

/* The same payload built one member at a time into an empty b:
 * set_effect_open(), then set_effect_push() of each member. false when
 * memory runs out. */
bool set_effect_open(struct membuf *b);
bool set_effect_push(struct membuf *b, const void *m, size_t len);

/* ---- reading ---------------------------------------------------------- */

/* Is m a member? */
bool set_has(const struct set *x, const void *m, size_t len);

static inline bool
set_is_compact(const struct set *x)
{
    return x->big == NULL;
}

/* Is x kept as Redis keeps an intset: compact, every member an integer,
 * in increasing order? */
bool set_is_intset(const struct set *x);

/* Every member once: compact in its order, large in the dict's. A zeroed
 * iterator starts; false at the end. The set must not change while
 * walking (the member's bytes are the set's). */
struct set_iter {
    struct packdict_iter pd;
};
bool set_next(const struct set *x, struct set_iter *it, struct pack_item *m);

/* One step of SSCAN: fn on each member of the step; the next cursor, 0 at
 * the end. A compact set is one step, whatever the cursor (Redis answers
 * an intset whole); a large one is dict_scan's. */
typedef packdict_scan_fn set_scan_fn;      /* (member, empty, arg) */
uint64_t set_scan(const struct set *x, uint64_t cursor, set_scan_fn fn,
                  void *arg);

/* A member picked at random (x not empty), valid until x changes. */
void set_random(const struct set *x, struct pack_item *m);

/* ---- writing ---------------------------------------------------------- */

/* Add m (Redis's setTypeAdd()): SET_NEW, SET_EXISTS, or SET_NOMEM when
 * memory runs out or m passes 4 GiB (x may then be large already, its
 * members as they were). */
enum set_add_rc { SET_NOMEM = -1, SET_EXISTS = 0, SET_NEW = 1 };
int set_add(struct set *x, const void *m, size_t len);

/* Remove m: true when it was there. Never fails. */
bool set_rem(struct set *x, const void *m, size_t len);

/* About how many bytes adding the n members may take (admission under
 * maxmemory), a conversion they may cause included. */
size_t set_grow_bytes(const struct set *x, const char *const *s,
                      const size_t *len, size_t n);

/* A copy of src into dst (empty). false when memory runs out (dst then
 * holds a part: freeable). */
bool set_copy(struct set *dst, const struct set *src);

#endif
