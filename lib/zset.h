/*
 * zset.h - a Redis sorted set: members (byte strings) each with a score
 * (a double, never NaN), ordered by score, then by member bytes (memcmp,
 * a shorter prefix first), as Redis orders them.
 *
 * Two encodings, as Redis 7.0 has two, switched at the points its default
 * zset-max-listpack-entries (128) and zset-max-listpack-value (64) put
 * them, because a client sees which one a set has (ZSCAN answers a small
 * one whole, cursor 0):
 *  - compact (big == NULL): a pack (lib/pack.h) of member, score pairs in
 *    order, the score an 8-byte double entry. Adding a new member that
 *    would make it hold more than ZSET_PACK_MAX_ENTRIES members, or one
 *    longer than ZSET_PACK_MAX_VALUE bytes, converts it first (as Redis's
 *    zsetAdd() does); nothing converts it back.
 *  - large: a skiplist with spans (ranks in O(log n)) and a dict (lib/
 *    dict.h) from member to node through the entry's owner word; the
 *    member's bytes live once, in the dict entry.
 *
 * Ranks are 0-based from the lowest (score, member). Everything is
 * mem_owned_realloc'd through pack, dict or directly. A zeroed struct zset
 * is an empty set.
 */
#ifndef CELLGATE_ZSET_H
#define CELLGATE_ZSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"
#include "lib/pack.h"

struct zset_big;

struct zset {
    struct pack pk;             /* the compact encoding */
    struct zset_big *big;   /* the large one; NULL while compact */
};

/* Redis 7.0's defaults, where it leaves its listpack. */
#define ZSET_PACK_MAX_ENTRIES 128
#define ZSET_PACK_MAX_VALUE 64

/* ---- what the keyspace needs of every collection ----------------------- */

uint64_t zset_len(const struct zset *x);
size_t zset_owned(const struct zset *x);
void zset_free(struct zset *x);
bool zset_encode(const struct zset *x, struct membuf *b);
int zset_decode(struct zset *x, const unsigned char *p, size_t len);
int zset_apply(struct zset *x, uint8_t op, const unsigned char *p,
                size_t len);

/* ---- element effects ---------------------------------------------------
 *
 * ZSET_OP_ADD: member, score pairs, each "the member now has this score"
 *   (added when absent), applied in order as plain adds, so conversions
 *   happen as they did: u32 length, the bytes, the double.
 * ZSET_OP_REM: members removed: u32 length, the bytes (an absent one is
 *   passed over).
 * A payload is built by appending one element per call.
 */
#define ZSET_OP_ADD 1
#define ZSET_OP_REM 2

bool zset_effect_add(struct membuf *b, const void *m, size_t len,
                     double score);
bool zset_effect_rem(struct membuf *b, const void *m, size_t len);

/* ---- reading ----------------------------------------------------------- */

static inline bool
zset_is_compact(const struct zset *x)
{
    return x->big == NULL;
}

/* m's score into *score; false when m is no member. */
bool zset_score(const struct zset *x, const void *m, size_t len,
                double *score);

/* m's rank (reverse: counted from the highest) into *rank; false when m
 * is no member. */
bool zset_rank(const struct zset *x, const void *m, size_t len, bool reverse,
               uint64_t *rank);

/* A score interval, "(" bounds exclusive, as Redis's zrangespec. */
struct zset_range {
    double min, max;
    bool minex, maxex;
};

/* A member interval of ZRANGEBYLEX: a bound is a byte string, included or
 * not, or "-" / "+" (below / above every string). */
struct zset_lex_bound {
    const unsigned char *s;
    size_t len;
    bool ex;
    int inf;            /* -1: "-", 1: "+", 0: s */
};
struct zset_lex {
    struct zset_lex_bound min, max;
};

/* Members as Redis's sdscmp() orders them (their bytes, then the shorter
 * first): below, at or above 0. */
int zset_cmp_member(const void *a, size_t alen, const void *b, size_t blen);

bool zset_score_gte_min(double score, const struct zset_range *r);
bool zset_score_lte_max(double score, const struct zset_range *r);
bool zset_lex_gte_min(const void *m, size_t len, const struct zset_lex *r);
bool zset_lex_lte_max(const void *m, size_t len, const struct zset_lex *r);

/* The rank of the first (lowest) and of the last member in the range, as
 * Redis's zslFirstInRange()/zslLastInRange() and their listpack twins
 * find them; false when there is none. The lex ones search as Redis does
 * in each encoding, so a set whose scores differ answers as Redis's. */
bool zset_first_in_range(const struct zset *x, const struct zset_range *r,
                         uint64_t *rank);
bool zset_last_in_range(const struct zset *x, const struct zset_range *r,
                        uint64_t *rank);
bool zset_first_in_lex(const struct zset *x, const struct zset_lex *r,
                       uint64_t *rank);
bool zset_last_in_lex(const struct zset *x, const struct zset_lex *r,
                      uint64_t *rank);

/* ZCOUNT and ZLEXCOUNT as Redis counts them. */
uint64_t zset_count_range(const struct zset *x, const struct zset_range *r);
uint64_t zset_count_lex(const struct zset *x, const struct zset_lex *r);

/* How many elements from rank `at` on pass `in`, walking up to the first
 * that does not (at must be a rank of x). */
typedef bool (*zset_elem_test)(const unsigned char *m, size_t len,
                               double score, const void *arg);
uint64_t zset_run_while(const struct zset *x, uint64_t at, zset_elem_test in,
                        const void *arg);

/* Walking members in order from a rank, either way. The set must not
 * change while walking. */
struct zset_iter {
    const struct zset *x;
    uint64_t rank;          /* of the current member */
    void *node;             /* large: its node */
    uint32_t off;           /* compact: byte offset of its member entry */
    uint32_t offs[ZSET_PACK_MAX_ENTRIES + 1];   /* compact: each pair's */
};

/* Start at rank (< zset_len()). */
void zset_iter_at(struct zset_iter *it, const struct zset *x, uint64_t rank);

/* The current member and score. */
void zset_iter_get(const struct zset_iter *it, const unsigned char **m,
                   size_t *len, double *score);

/* Step to the next (higher) or previous member; false past either end. */
bool zset_iter_next(struct zset_iter *it);
bool zset_iter_prev(struct zset_iter *it);

/* ZSCAN's one step: fn on every member of the buckets the cursor names
 * (large), or on every member once (compact: the next cursor is 0). */
typedef void (*zset_scan_fn)(const unsigned char *m, size_t len, double score,
                             void *arg);
uint64_t zset_scan(const struct zset *x, uint64_t cursor, zset_scan_fn fn,
                   void *arg);

/* ---- writing ------------------------------------------------------------ */

/* ZADD's options (Redis's ZADD_IN_*). */
enum {
    ZSET_NX = 1 << 0,
    ZSET_XX = 1 << 1,
    ZSET_GT = 1 << 2,
    ZSET_LT = 1 << 3,
    ZSET_INCR = 1 << 4,
};

/* What an add did. */
enum zset_add_rc {
    ZSET_ADDED,         /* a new member */
    ZSET_UPDATED,       /* its score changed */
    ZSET_SAME,          /* done, but the score was that already */
    ZSET_NOP,           /* not done: NX, XX, GT or LT said no */
    ZSET_NAN,           /* the (resulting) score is NaN: nothing changed */
    ZSET_NOMEM,         /* out of memory or past a pack's bound: unchanged */
};

/* Add m with score (INCR: its current score plus score, 0 when new) under
 * the options, as Redis's zsetAdd(); *newscore: the score it has after a
 * done add (ADDED, UPDATED, SAME). m is at most UINT32_MAX bytes. */
enum zset_add_rc zset_add(struct zset *x, const void *m, size_t len,
                          double score, unsigned flags, double *newscore);

/* An empty x in the large encoding from now on, as Redis makes a set it
 * knows will be large (ZUNIONSTORE's result, ZRANGESTORE's range of more
 * than ZSET_PACK_MAX_ENTRIES): its scores are kept as given, -0 included.
 * false when out of memory (x unchanged). */
bool zset_make_large(struct zset *x);

/* Remove m; false when it was no member. */
bool zset_remove(struct zset *x, const void *m, size_t len);

/* Remove the n members from rank first on. */
void zset_remove_ranks(struct zset *x, uint64_t first, uint64_t n);

/* Roughly what adding n members of `bytes` bytes in all, the longest
 * maxlen, costs (admission), a conversion included. */
size_t zset_add_cost(const struct zset *x, uint64_t n, size_t bytes,
                     size_t maxlen);

#endif
