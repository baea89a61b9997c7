/*
 * keytype.h - what each key type is: the tag a store record carries, the
 * state the type keeps, its size and its name, the arrays it owns, and the
 * one encoding of a state as bytes (for the snapshot, the journal and the
 * replication stream) and back.
 *
 * A record's state is fixed-size for CL.THROTTLE, RL.FIXED, RL.SLIDING,
 * GCRA and INCREX (copied as it is), and a small header pointing at what
 * it owns for RL.LOG and RL.TIERS (struct ks_log, struct ks_tiers), a
 * long string (struct ks_str) and Redis's list, hash, sorted set and set
 * (lib/'s struct qlist, hmap, zset and set), which grow with use. Growing one is the keyspace's (keyspace_realloc(), under
 * maxmemory); this file counts what they hold (keytype_owned_bytes()).
 * It knows nothing of databases, expiry timers or who is watching: those
 * are the keyspace's (keyspace.h).
 */
#ifndef CELLGATE_KEYTYPE_H
#define CELLGATE_KEYTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/increx.h"
#include "algorithms/lease.h"
#include "algorithms/sliding_log.h"
#include "algorithms/tiers.h"
#include "lib/hmap.h"
#include "lib/mem.h"
#include "lib/qlist.h"
#include "lib/set.h"
#include "lib/time.h"
#include "lib/zset.h"
#include "server/store.h"

enum key_type {
    KEY_INT = 1,    /* a string holding a canonical int64: struct ks_int */
    KEY_FIXED,      /* RL.FIXED: struct fwin_state */
    KEY_SLIDING,    /* RL.SLIDING: struct swin_state */
    KEY_LOG,        /* RL.LOG: struct ks_log */
    KEY_TIERS,      /* RL.TIERS: struct ks_tiers */
    KEY_REDIS_GCRA, /* GCRA (Redis's command): struct ks_redis_gcra */
    KEY_COUNTER_V2, /* INCREX's counter of encodings 1 and 2: read only,
                     * loaded as a string (keytype_upgrade()) */
    KEY_STR,        /* any other string: struct ks_str */
    KEY_LIST,       /* a Redis list: struct qlist (lib/qlist.h) */
    KEY_HASH,       /* a Redis hash: struct hmap (lib/hmap.h) */
    KEY_ZSET,       /* a Redis sorted set: struct zset (lib/zset.h) */
    KEY_SET,        /* a Redis set: struct set (lib/set.h) */
    KEY_LEASE       /* RL.ACQUIRE's leases: struct ks_lease */
};
#define KEY_TYPE_FIRST KEY_INT
#define KEY_TYPE_LAST KEY_LEASE
_Static_assert(KEY_TYPE_LAST <= STORE_TYPE_MAX, "a record's tag is 4 bits");

/* States of a fixed-size encoding: a struct copied as it is
 * (keytype_encode()), but KEY_INT's int64, which its record may hold in 4
 * bytes (keytype_int()). */
static inline bool
keytype_is_fixed_size(uint8_t type)
{
    return type == KEY_INT || type == KEY_FIXED || type == KEY_SLIDING ||
           type == KEY_REDIS_GCRA || type == KEY_COUNTER_V2;
}

/* Redis's collections: their state is the module's struct, which owns
 * the elements (counted in mem_owned_bytes()); the key never holds an
 * empty one. */
static inline bool
keytype_is_coll(uint8_t type)
{
    return type >= KEY_LIST && type <= KEY_SET;
}

/*
 * Strings. A Redis string is KEY_INT when its bytes are an int64 written
 * as Redis's string2ll() wants it ("-12", not "+12", "012" or "-0"): what
 * INCR, INCRBY, SET NX EX of a number and CL.THROTTLE, whose TAT
 * redis-cell keeps as a decimal string, write. Any other bytes are
 * KEY_STR: up to KS_STR_INLINE of them inside the state, longer ones in a
 * block of their own (counted in keytype_owned_bytes()). Which one a
 * string is never shows: GET answers the same bytes, TYPE "string".
 *
 * A KEY_INT's value is encoded as an int64 (struct ks_int) in files and
 * effects, but its record holds it in 4 bytes when it can (a packed state,
 * store.h), so a counter or a TAT with a 16-byte name and its expiry is a
 * 35-byte record. The 4-byte word u: bit 0 clear, the value is
 * (u >> 1) - KS_INT_BIAS: any counter within +-2^30; bit 0 set, the value
 * is the record's expire_at * 10^6 + (u >> 1) - KS_INT_BIAS, modulo 2^64
 * (so no expiry is out of range): a TAT, in ns, which CL.THROTTLE writes
 * with the expiry redis-cell gives it, trunc((TAT - now) / 1 ms) ms after
 * now, so that it lies within 2 ms after the expiry's own ns. A value
 * that fits neither takes a record of 8 bytes (not packed); so does one
 * leaning on its expiry when the expiry moves away from it
 * (keyspace_set_expire()). Only the functions below read and write these
 * bytes: keytype_int() and keytype_int_leans(), keytype_int_put() with a
 * form from keytype_int_form() (once per write), keytype_int_set().
 */
static inline bool
keytype_is_string(uint8_t type)
{
    return type == KEY_INT || type == KEY_STR;
}

struct ks_int {
    int64_t v;
};

#define KS_INT_SMALL    4                       /* bytes of a packed one */
#define KS_INT_BIAS     (INT64_C(1) << 30)

/* The 4-byte word for v (see above), leaning on expire_at (ms; STORE_NEVER
 * for none) if it must; false when v fits no word. The distance from the
 * expiry's ns is taken modulo 2^64, as keytype_int() adds it back: exact
 * even where expire_at * 10^6 leaves int64. */
static inline bool
keytype_int_word(int64_t v, int64_t expire_at, uint32_t *u)
{
    uint64_t d = (uint64_t)v + KS_INT_BIAS;
    if (d < 2 * KS_INT_BIAS) {
        *u = (uint32_t)d << 1;
        return true;
    }
    if (expire_at == STORE_NEVER) {
        return false;
    }
    d = (uint64_t)v - (uint64_t)expire_at * (uint64_t)NS_PER_MS +
        KS_INT_BIAS;
    if (d >= 2 * KS_INT_BIAS) {
        return false;
    }
    *u = (uint32_t)d << 1 | 1;
    return true;
}

/* KEY_INT r's value. */
static inline int64_t
keytype_int(const struct store_rec *r)
{
    const void *state = store_rec_state((struct store_rec *)r);
    if (!store_rec_packed(r)) {
        int64_t v;
        memcpy(&v, state, sizeof(v));
        return v;
    }
    uint32_t u;
    memcpy(&u, state, sizeof(u));
    int64_t v = (int64_t)(u >> 1) - KS_INT_BIAS;
    if (!(u & 1)) {
        return v;
    }
    /* Modulo 2^64, as keytype_int_word() took the distance. */
    return (int64_t)((uint64_t)r->expire_at * (uint64_t)NS_PER_MS +
                     (uint64_t)v);
}

/* Does KEY_INT r's value lean on its expiry (bit 0 of a packed word)? */
static inline bool
keytype_int_leans(const struct store_rec *r)
{
    uint32_t u;
    if (!store_rec_packed(r)) {
        return false;
    }
    memcpy(&u, store_rec_state((struct store_rec *)r), sizeof(u));
    return u & 1;
}

/* A KEY_INT value as a record holds it, leaning (if it must) on an expiry:
 * in a 4-byte word when `small`, else as the int64. Made once per write
 * (keytype_int_form()), then written into a record of either size. */
struct ks_int_form {
    int64_t v;
    uint32_t word;
    bool small;
};

/* v's form next to expire_at: the expiry its record has, or the one the
 * caller gives it right after (STORE_NEVER: lean on none). */
static inline struct ks_int_form
keytype_int_form(int64_t v, int64_t expire_at)
{
    struct ks_int_form f = { v, 0, false };
    f.small = keytype_int_word(v, expire_at, &f.word);
    return f;
}

/* The state bytes a new record needs for f. */
static inline size_t
keytype_int_form_size(const struct ks_int_form *f)
{
    return f->small ? KS_INT_SMALL : sizeof(struct ks_int);
}

/* Write f into KEY_INT r; false (r unchanged) when r's 4 bytes cannot
 * hold it: the caller replaces r by a record of 8. */
static inline bool
keytype_int_put(struct store_rec *r, const struct ks_int_form *f)
{
    void *state = store_rec_state(r);
    if (!store_rec_packed(r)) {
        memcpy(state, &f->v, sizeof(f->v));
        return true;
    }
    if (!f->small) {
        return false;
    }
    memcpy(state, &f->word, sizeof(f->word));
    return true;
}

/* Write v into KEY_INT r, leaning (if it must) on expire_at, as
 * keytype_int_form(); false (r unchanged) when r's 4 bytes cannot hold
 * it. */
static inline bool
keytype_int_set_at(struct store_rec *r, int64_t v, int64_t expire_at)
{
    struct ks_int_form f = keytype_int_form(v, expire_at);
    return keytype_int_put(r, &f);
}

/* keytype_int_set_at() with r's own expiry when `lean` (a write that
 * changes the expiry next must not lean: SET, INCREX). */
static inline bool
keytype_int_set(struct store_rec *r, int64_t v, bool lean)
{
    return keytype_int_set_at(r, v, lean ? r->expire_at : STORE_NEVER);
}

/* The state bytes a KEY_INT record needs for v: KS_INT_SMALL when a word
 * holds it (leaning on expire_at, STORE_NEVER for no leaning), else 8. */
static inline size_t
keytype_int_state_size(int64_t v, int64_t expire_at)
{
    struct ks_int_form f = keytype_int_form(v, expire_at);
    return keytype_int_form_size(&f);
}

#define KS_STR_INLINE 12
struct ks_str {
    uint32_t len;
    union {
        char in[KS_STR_INLINE];         /* len <= KS_STR_INLINE */
        struct __attribute__((packed)) {
            uint32_t cap;
            char *p;                    /* mem_malloc'd, cap bytes */
        } heap;                         /* len > KS_STR_INLINE */
    } u;
};
_Static_assert(sizeof(struct ks_str) == 16, "a string state is 16 bytes");

static inline char *
keytype_str_bytes(struct ks_str *s)
{
    return s->len <= KS_STR_INLINE ? s->u.in : s->u.heap.p;
}

/* A string key's bytes: KEY_STR's in place, KEY_INT's written in buf (at
 * least KS_INT_TEXT bytes). */
#define KS_INT_TEXT 24
const char *keytype_string(const struct store_rec *r, char *buf, size_t *len);

/* CL.THROTTLE's TAT in a key, as redis-cell reads its string: Rust's
 * str::parse::<u64> (an optional '+', digits, leading zeros allowed).
 * KS_TAT_WRONGTYPE for a key that is no string, KS_TAT_NOT_U64 for a
 * string that is no such number (redis-cell aborts the whole server
 * there; cellgate answers the error INCR would). */
enum ks_tat { KS_TAT_OK, KS_TAT_WRONGTYPE, KS_TAT_NOT_U64 };
enum ks_tat keytype_gcra_tat_text(const struct store_rec *r, uint64_t *tat);

static inline enum ks_tat
keytype_gcra_tat(const struct store_rec *r, uint64_t *tat)
{
    if (r->type != KEY_INT) {
        return keytype_gcra_tat_text(r, tat);
    }
    /* The usual case, what CL.THROTTLE itself writes: an integer. */
    int64_t v = keytype_int(r);
    *tat = (uint64_t)v;
    return v >= 0 ? KS_TAT_OK : KS_TAT_NOT_U64;
}

/* Types whose expiry is a Redis key's, to the millisecond: they live
 * through the millisecond they expire at (PTTL, TTL as Redis); the
 * limiters' keys live until their state is fresh, and TTL rounds up. */
static inline bool
keytype_redis_expiry(uint8_t type)
{
    return type != KEY_FIXED && type != KEY_SLIDING && type != KEY_LOG &&
           type != KEY_TIERS && type != KEY_LEASE;
}

/* Redis's GCRA keeps its TAT in µs (>= 0) and is a type of its own: its
 * keys answer WRONGTYPE to CL.THROTTLE and GET, as in Redis, and TYPE
 * says "gcra". */
struct ks_redis_gcra {
    int64_t tat_us;
};

/*
 * RL.LOG: a ring of entries and an arena of their META bytes. The log
 * keeps its entries for keep_ms, the longest window of a call that changed
 * it (see sliding_log.h); the record lives until its newest entry leaves
 * that window. Bounds, so one key's memory is bounded too: at most
 * KS_LOG_ENTRIES_MAX entries of at most KS_META_MAX META bytes each, and
 * the arena at most twice its live bytes (KS_LOG_META_CAP_MAX).
 */
#define KS_META_MAX 1024
#define KS_LOG_ENTRIES_MAX 1000000
#define KS_LOG_META_CAP_MAX                                                   \
    ((uint64_t)2 * ((uint64_t)KS_LOG_ENTRIES_MAX * KS_META_MAX + KS_META_MAX))
_Static_assert(KS_LOG_META_CAP_MAX <= UINT32_MAX,
               "META offsets are 32-bit: the arena bound must fit");

struct ks_log {
    struct slog_ring ring;      /* ring.e: mem_malloc'd */
    char *meta;                 /* META bytes of the entries, mem_malloc'd */
    uint32_t meta_len;          /* bytes of the arena in use (live or not) */
    uint32_t meta_cap;
    int64_t keep_ms;            /* retention, >= 1000 while the key lives */
};

/* RL.TIERS: per-second buckets, kept for `keep` seconds (the largest
 * window of a call that changed the key). */
struct ks_tiers {
    struct tier_state st;       /* st.b: mem_malloc'd */
    int64_t keep;               /* retention in s, >= 1 while the key lives */
};

/*
 * RL.ACQUIRE: the leases of one key (algorithms/lease.h), their entries
 * in one buffer the key owns. The record lives until its last lease ends
 * (its expiry); an ended lease frees its slot at its end, and its entry
 * goes with the next write or with the key.
 */
struct ks_lease {
    struct lease_set set;       /* set.buf: mem_malloc'd */
};

/* When r's last live lease ends (ns; saturating), or `now` when none is
 * live: the key is fresh from then. */
int64_t keytype_lease_fresh_at(const struct ks_lease *ls, int64_t now);

/* The state size of a type in its encoding (0 for an unknown one): a
 * record's too, but KEY_INT's, which may be smaller
 * (keytype_rec_state_size()). The store does not keep it per record. */
size_t keytype_state_size(uint8_t type);

/* The state bytes record r holds. */
static inline size_t
keytype_rec_state_size(const struct store_rec *r)
{
    if (r->type == KEY_INT && store_rec_packed(r)) {
        return KS_INT_SMALL;
    }
    return keytype_state_size(r->type);
}

/* The state bytes a new record of type needs for the encoded state p
 * (len bytes) with expiry expire_at: keytype_state_size(type), but for a
 * KEY_INT whose value fits 4 bytes. */
size_t keytype_decoded_state_size(uint8_t type, const unsigned char *p,
                                  size_t len, int64_t expire_at);

/* TYPE's answer for a record type ("none" for an unknown one). */
const char *keytype_name(uint8_t type);

/* ---- the arrays keys own ------------------------------------------------ */

/* Bytes r's state owns outside its record (0 for a fixed-size one):
 * MEMORY USAGE, what a copy of it takes. */
size_t keytype_rec_owned(const struct store_rec *r);

/* Free what r's state owns (the record is about to go). */
void keytype_release(struct store_rec *r);

/* Elements of collection r (0 for any other type). */
uint64_t keytype_coll_len(const struct store_rec *r);

/* Replay element effect op (journal.h's JOURNAL_ELEM) on collection r:
 * COLL_OK, COLL_MALFORMED or COLL_NOMEM (lib/pack.h). */
int keytype_coll_apply(struct store_rec *r, uint8_t op,
                       const unsigned char *p, size_t len);

/* Bytes of the arrays RL.LOG and RL.TIERS keys own (malloc's usable
 * sizes): what evicting them would give back, besides their records. */
size_t keytype_owned_bytes(void);

/* mem_realloc for such an array, counted in keytype_owned_bytes(), with
 * no admission (loading; keyspace_realloc() admits first). NULL (p
 * untouched) when out of memory. */
void *keytype_owned_realloc(void *p, size_t size);

/* mem_free for such an array. */
void keytype_free(void *p);

/* When a log or tiers record becomes fresh: its newest entry's departure
 * from the retention window (saturating), or `now` when it holds none. */
int64_t keytype_log_fresh_at(const struct ks_log *ls, int64_t now);
int64_t keytype_tiers_fresh_at(const struct ks_tiers *ts, int64_t now);

/* ---- encoding ---------------------------------------------------------- */

/* Encodings: the first version; 2: RL.TIERS keeps its retention, RL.LOG
 * and RL.TIERS hold only what is live at the time of writing; 3: expiry
 * in ms and settable on every key, so a restored log or tiers key keeps
 * the expiry it was written with. */
#define KS_ENCODING_V1 1
#define KS_ENCODING_V2 2
#define KS_ENCODING_EXPIRY_MS 3
#define KS_ENCODING 3

/* A state of an older encoding as today's: encodings 1 and 2 had no
 * strings but CL.THROTTLE's TAT (type 1, a u64) and INCREX's counter
 * (KEY_COUNTER_V2); each becomes the string Redis would hold, KEY_INT or
 * KEY_STR, its bytes in buf (at least KS_UPGRADE_BUF). Other states pass
 * unchanged. false when the old state is malformed. */
#define KS_UPGRADE_BUF 5120
bool keytype_upgrade(uint8_t *type, const unsigned char **p, size_t *len,
                     int encoding, unsigned char *buf);

/*
 * Append r's state at `now` to b: the one function that turns a key's
 * state into bytes, for every consumer that carries state (the snapshot
 * today). Fixed-size states are written as they are; a log or tiers state
 * holds only the entries or buckets the key still keeps at now, in time
 * order, so the bytes are the same whenever a call happened to expire
 * them. false when memory runs out.
 *
 *   int:   the int64;  str: the bytes;
 *   gcra, fixed, sliding: the struct
 *   list, hash, zset, set: their module's encoding (lib/qlist.h,
 *          lib/hmap.h, lib/zset.h, lib/set.h);
 *   log:   keep_ms i64, n u32, n x (t_ms i64, cost i64, meta_len u32),
 *          then the META bytes of the entries, oldest first;
 *   tiers: keep i64, n u32, n x (sec i64, count i64);
 *   lease: n u32, then the n live entries as lease.h packs them
 *          (end_ms i64, len u16, holder bytes), oldest first.
 * Host byte order: the bytes are read back by the same build.
 */
bool keytype_encode(const struct store_rec *r, int64_t now,
                     struct membuf *b);

/* How a decode went: KS_DECODED, KS_EMPTY (a log or tiers state without
 * entries in an encoding before 3: the key is fresh, drop it),
 * KS_MALFORMED, KS_NOMEM. */
enum ks_decode { KS_DECODED, KS_EMPTY, KS_MALFORMED, KS_NOMEM };

/* Fill a new record of r->type (state zeroed) from encoded bytes of the
 * given encoding version. On anything but KS_DECODED the caller removes
 * the record (keyspace_release() frees what was built). */
enum ks_decode keytype_decode(struct store_rec *r, const unsigned char *p,
                               size_t len, int version);

#endif
