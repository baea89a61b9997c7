/*
 * store.c - the keyspace (see store.h).
 *
 * Layout
 * ------
 * A chained hash table of struct store_rec, in the manner of Redis's dict.c:
 *
 *   struct store
 *     ht[0]  bucket[size]  ->  rec -> rec -> NULL     (hnext chains)
 *     ht[1]  bucket[size]  ->  ...                    (only while rehashing)
 *
 * Each record is one mem_malloc() block: the 48-byte header (chain link,
 * embedded wheel entry, expiry, lengths, tags), then state_size bytes of
 * zeroed algorithm state (8-aligned), then the key bytes. A lookup touches
 * the bucket array once and then one record per chain entry; the hash_tag
 * byte (the top 8 bits of the hash, never used to index a table) rejects
 * almost every chain entry that is not the key before keylen and memcmp are
 * looked at, so a miss rarely reads key bytes.
 *
 * Hashing
 * -------
 * SipHash-1-3 keyed with the 16-byte seed given to store_create() (as Redis
 * does): keys are chosen by clients, so an unkeyed hash would let anyone
 * build a chain of a million colliding keys. The bucket index uses the low
 * bits, hash_tag the top 8 bits.
 *
 * Resizing
 * --------
 * Sizes are powers of two. The table doubles when count >= size (load
 * factor 1) and shrinks when count < size / 8, to the power of two >=
 * 2 * count (load <= 0.5, at least TABLE_MIN); the gap between the two
 * thresholds keeps a table near a boundary from flapping. A table with no
 * records at all is dropped by store_cron(), and store_flush() drops both,
 * so an idle store costs no bucket memory. The first store_add() allocates
 * TABLE_MIN buckets again.
 *
 * A resize never moves everything at once. It allocates ht[1] and then
 * every store_lookup()/store_add() moves one bucket of ht[0] (visiting at
 * most REHASH_EMPTY_VISITS empty buckets), and store_cron(steps) moves more.
 * While rehashing, new records go to ht[1]; a lookup skips the ht[0]
 * buckets below rehashidx, which are empty by construction. If allocating
 * the new table fails, the old one simply stays (longer chains, still
 * correct) and the resize is retried on a later add, remove or cron.
 *
 * The hash is not stored in the record (the header has no room for it), so
 * a rehash recomputes it for each record it moves: SipHash of a short key
 * costs about as much as the cache miss on the record it needs anyway.
 *
 * Expiry
 * ------
 * A record is dead at `now` iff expire_at <= now (STORE_NEVER is never
 * dead). Correctness comes from store_lookup(), which frees a dead record
 * it meets and reports the key absent. The wheel only reclaims memory:
 * store_set_expire() re-arms lazily (the timer moves only to an earlier
 * time), and a timer that fires for a record whose expiry was pushed later
 * re-queues itself at the real expire_at (HAProxy's lazy re-queue), so a
 * key hit a million times costs one timer move, not a million.
 *
 * Scanning
 * --------
 * store_scan() is dictScan's reverse-binary cursor: the cursor's high bits
 * are incremented, so buckets that split (grow) or merge (shrink) between
 * calls are always visited after their ancestors or descendants already
 * covered them, and a record that lives throughout is reported at least
 * once. While the callbacks run, s->scanning stops rehash steps and stops
 * lookups from freeing dead records, so a callback that reads the store
 * (store_lookup) cannot invalidate the chain being walked.
 *
 * Memory
 * ------
 * Everything goes through protocol/mem.h, so mem_used() is exact.
 */
#include "server/store.h"

#include <assert.h>
#include <string.h>

#include "protocol/mem.h"

#define STORE_KEY_MAX       ((size_t)512 << 20)  /* 512 MiB, Redis's limit */
#define STORE_STATE_MAX     UINT16_MAX
#define TABLE_MIN           ((size_t)4)
#define SHRINK_RATIO        8      /* shrink when count < size / 8 */
#define REHASH_EMPTY_VISITS 10     /* empty buckets per moved bucket */
#define WHEEL_TICK_NS       INT64_C(1000000)     /* 1 ms */

struct table {
    struct store_rec **bucket;  /* NULL when size == 0 */
    size_t size;                /* 0 or a power of two */
    uint64_t mask;              /* size - 1 */
    size_t used;                /* records chained in this table */
};

struct store {
    struct table ht[2];         /* ht[1] is in use only while rehashing */
    size_t rehashidx;           /* next ht[0] bucket to move */
    size_t count;               /* ht[0].used + ht[1].used */
    unsigned scanning;          /* > 0 while store_scan runs callbacks */
    size_t volatile_count;      /* records whose expire_at != STORE_NEVER */
    store_release_fn release;   /* frees what a record's state points to */
    uint64_t expired;           /* dead records removed, lazily or not */
    uint64_t evicted;           /* live records removed for memory */
    uint64_t changes;           /* writes (expiry set, removal, flush) */
    uint64_t k0, k1;            /* SipHash key */
    struct wheel *wheel;
};

/* ------------------------------------------------------------------------
 * SipHash-c-d (Aumasson and Bernstein, 2012), written from the paper: the
 * state is four 64-bit words initialised from the key and four constants;
 * each 8-byte little-endian message word m is absorbed as v3 ^= m, c
 * SipRounds, v0 ^= m; the last word holds the remaining bytes and the
 * length mod 256 in its top byte; finalisation is v2 ^= 0xff, d SipRounds
 * and the xor of the four words. The round counts are arguments so that
 * the test vectors of SipHash-2-4 can check the code; the store calls it
 * with constants (1, 3), which the compiler unrolls.
 * --------------------------------------------------------------------- */

struct sip {
    uint64_t v0, v1, v2, v3;
};

static inline uint64_t
rotl64(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t
load64_le(const unsigned char *p)
{
    /* Byte by byte so it is endian- and alignment-independent; compilers
     * turn this into one load on little-endian machines. */
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16
           | (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32
           | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48
           | (uint64_t)p[7] << 56;
}

static inline void
sip_round(struct sip *st)
{
    st->v0 += st->v1;
    st->v1 = rotl64(st->v1, 13);
    st->v1 ^= st->v0;
    st->v0 = rotl64(st->v0, 32);
    st->v2 += st->v3;
    st->v3 = rotl64(st->v3, 16);
    st->v3 ^= st->v2;
    st->v0 += st->v3;
    st->v3 = rotl64(st->v3, 21);
    st->v3 ^= st->v0;
    st->v2 += st->v1;
    st->v1 = rotl64(st->v1, 17);
    st->v1 ^= st->v2;
    st->v2 = rotl64(st->v2, 32);
}

static inline void
sip_absorb(struct sip *st, uint64_t m, int crounds)
{
    st->v3 ^= m;
    for (int i = 0; i < crounds; i++) {
        sip_round(st);
    }
    st->v0 ^= m;
}

static inline uint64_t
siphash(uint64_t k0, uint64_t k1, const unsigned char *p, size_t len,
        int crounds, int drounds)
{
    struct sip st = {
        .v0 = k0 ^ UINT64_C(0x736f6d6570736575),    /* "somepseu" */
        .v1 = k1 ^ UINT64_C(0x646f72616e646f6d),    /* "dorandom" */
        .v2 = k0 ^ UINT64_C(0x6c7967656e657261),    /* "lygenera" */
        .v3 = k1 ^ UINT64_C(0x7465646279746573),    /* "tedbytes" */
    };
    size_t whole = len & ~(size_t)7;

    for (size_t off = 0; off < whole; off += 8) {
        sip_absorb(&st, load64_le(p + off), crounds);
    }
    uint64_t last = (uint64_t)(len & 0xff) << 56;
    for (size_t i = 0; i < (len & 7); i++) {
        last |= (uint64_t)p[whole + i] << (8 * i);
    }
    sip_absorb(&st, last, crounds);
    st.v2 ^= 0xff;
    for (int i = 0; i < drounds; i++) {
        sip_round(&st);
    }
    return st.v0 ^ st.v1 ^ st.v2 ^ st.v3;
}

static inline uint64_t
store_hash(const struct store *s, const void *key, size_t keylen)
{
    return siphash(s->k0, s->k1, key, keylen, 1, 3);
}

static inline uint8_t
hash_tag(uint64_t h)
{
    /* The top byte: table indexes use the low bits, and no table reaches
     * 2^56 buckets, so the tag is independent of the bucket. */
    return (uint8_t)(h >> 56);
}

/* ------------------------------------------------------------------------
 * Records
 * --------------------------------------------------------------------- */

static inline bool
rec_dead(const struct store_rec *r, int64_t now)
{
    return r->expire_at != STORE_NEVER && r->expire_at <= now;
}

static inline struct store_rec *
rec_of_timer(struct wheel_entry *e)
{
    return (struct store_rec *)(void *)((char *)e
                                        - offsetof(struct store_rec, timer));
}

static inline bool
rec_matches(const struct store_rec *r, uint8_t tag, const void *key,
            size_t keylen)
{
    return r->hash_tag == tag && r->keylen == keylen
           && memcmp(store_rec_key(r), key, keylen) == 0;
}

/* ------------------------------------------------------------------------
 * Tables
 * --------------------------------------------------------------------- */

static inline bool
rehashing(const struct store *s)
{
    return s->ht[1].size != 0;
}

static void
table_free(struct table *t)
{
    mem_free(t->bucket);
    memset(t, 0, sizeof(*t));
}

/* Smallest power of two >= n, at least TABLE_MIN. */
static size_t
table_size_for(size_t n)
{
    size_t size = TABLE_MIN;
    while (size < n && size <= SIZE_MAX / 2) {
        size *= 2;
    }
    return size;
}

/* Start a resize to `size` buckets. Returns false (and changes nothing) if
 * the bucket array cannot be allocated. */
static bool
table_resize(struct store *s, size_t size)
{
    struct store_rec **bucket = mem_calloc(size, sizeof(*bucket));
    if (bucket == NULL) {
        return false;
    }
    struct table t = { .bucket = bucket, .size = size, .mask = size - 1 };
    if (s->ht[0].used == 0) {
        /* Nothing to move: swap the arrays now rather than walk an empty
         * table bucket by bucket. */
        table_free(&s->ht[0]);
        s->ht[0] = t;
        return true;
    }
    s->ht[1] = t;
    s->rehashidx = 0;
    return true;
}

/* Begin a grow or a shrink if the load calls for one and none is running. */
static void
table_resize_if_needed(struct store *s)
{
    size_t size = s->ht[0].size;

    if (rehashing(s) || size == 0) {
        return;
    }
    if (s->count >= size) {
        (void)table_resize(s, table_size_for(s->count + 1));
    } else if (size > TABLE_MIN && s->count < size / SHRINK_RATIO) {
        (void)table_resize(s, table_size_for(2 * s->count));
    }
}

/* Move one chain of ht[0] to ht[1]; the hash is recomputed per record. */
static void
rehash_chain(struct store *s, struct store_rec *r)
{
    struct table *to = &s->ht[1];

    while (r != NULL) {
        struct store_rec *next = r->hnext;
        uint64_t h = store_hash(s, store_rec_key(r), r->keylen);
        struct store_rec **head = &to->bucket[h & to->mask];
        r->hnext = *head;
        *head = r;
        s->ht[0].used--;
        to->used++;
        r = next;
    }
}

/* Adopt ht[1]. Records may have come or gone while the rehash ran, so the
 * new table may already be too small or too large: start the next resize
 * now, so that lookups alone converge without waiting for an add, a remove
 * or store_cron(). */
static void
rehash_finish(struct store *s)
{
    table_free(&s->ht[0]);
    s->ht[0] = s->ht[1];
    memset(&s->ht[1], 0, sizeof(s->ht[1]));
    s->rehashidx = 0;
    table_resize_if_needed(s);
}

/* Move up to n non-empty buckets, visiting at most n * REHASH_EMPTY_VISITS
 * empty ones, so a step is bounded even in a sparse table. Returns the
 * unused part of n (always less than n when n > 0). */
static size_t
rehash(struct store *s, size_t n)
{
    struct table *from = &s->ht[0];
    size_t empty = n > SIZE_MAX / REHASH_EMPTY_VISITS
                   ? SIZE_MAX : n * REHASH_EMPTY_VISITS;

    if (n == 0 || !rehashing(s)) {
        return 0;
    }
    n--; /* every call counts as one step, even one that only finishes */
    while (from->used > 0) {
        struct store_rec *r = from->bucket[s->rehashidx];
        if (r == NULL) {
            s->rehashidx++;
            if (--empty == 0) {
                return n;
            }
            continue;
        }
        from->bucket[s->rehashidx++] = NULL;
        rehash_chain(s, r);
        if (n == 0) {
            break;
        }
        n--;
    }
    if (from->used == 0) {
        /* The rest of ht[0] is empty: no need to walk it. */
        rehash_finish(s);
    }
    return n;
}

/* The one rehash step every lookup and add pays for. */
static inline void
rehash_step(struct store *s)
{
    if (rehashing(s) && s->scanning == 0) {
        (void)rehash(s, 1);
    }
}

/* ------------------------------------------------------------------------
 * Finding and unlinking
 * --------------------------------------------------------------------- */

/* Where a chain search starts in table i, or NULL if the table has no
 * bucket for h (unallocated, or an ht[0] bucket already moved). */
static inline struct store_rec **
table_head(struct store *s, int i, uint64_t h)
{
    struct table *t = &s->ht[i];

    if (t->size == 0) {
        return NULL;
    }
    uint64_t idx = h & t->mask;
    if (i == 0 && rehashing(s) && idx < s->rehashidx) {
        return NULL;
    }
    return &t->bucket[idx];
}

/* The link (bucket slot or hnext field) that points at key's record, or
 * NULL; *ti is set to the table holding it. */
static struct store_rec **
find_key(struct store *s, uint64_t h, const void *key, size_t keylen, int *ti)
{
    uint8_t tag = hash_tag(h);

    for (int i = 0; i < 2; i++) {
        struct store_rec **link = table_head(s, i, h);
        for (; link != NULL && *link != NULL; link = &(*link)->hnext) {
            if (rec_matches(*link, tag, key, keylen)) {
                *ti = i;
                return link;
            }
        }
    }
    return NULL;
}

uint64_t
store_prefetch_bucket(struct store *s, const void *key, size_t keylen)
{
    uint64_t h = store_hash(s, keylen == 0 ? "" : key, keylen);
    for (int i = 0; i < 2 && s->count > 0; i++) {
        struct store_rec **head = table_head(s, i, h);
        if (head != NULL) {
            __builtin_prefetch(head);
        }
    }
    return h;
}

void
store_prefetch_record(struct store *s, uint64_t h)
{
    for (int i = 0; i < 2 && s->count > 0; i++) {
        struct store_rec **head = table_head(s, i, h);
        if (head != NULL && *head != NULL) {
            /* The header, and the line where the key usually starts. */
            __builtin_prefetch(*head);
            __builtin_prefetch((const char *)*head + 64);
        }
    }
}

/* As find_key, for a known record. */
static struct store_rec **
find_rec(struct store *s, uint64_t h, const struct store_rec *r, int *ti)
{
    for (int i = 0; i < 2; i++) {
        struct store_rec **link = table_head(s, i, h);
        for (; link != NULL && *link != NULL; link = &(*link)->hnext) {
            if (*link == r) {
                *ti = i;
                return link;
            }
        }
    }
    return NULL;
}

/* Free a record, and first what its state owns (RL.LOG's ring, say). */
static void
release_rec(struct store *s, struct store_rec *r)
{
    if (s->release != NULL) {
        s->release(r);
    }
    mem_free(r);
}

/* Unlink the record *link points at (in table ti), cancel its timer and
 * free it. */
static void
unlink_free(struct store *s, struct store_rec **link, int ti)
{
    struct store_rec *r = *link;

    assert(s->scanning == 0);
    *link = r->hnext;
    s->ht[ti].used--;
    s->count--;
    s->changes++;
    if (r->expire_at != STORE_NEVER) {
        s->volatile_count--;
    }
    wheel_cancel(s->wheel, &r->timer);
    release_rec(s, r);
    table_resize_if_needed(s);
}

/* ------------------------------------------------------------------------
 * Public API
 * --------------------------------------------------------------------- */

struct store *
store_create(const unsigned char seed[16], int64_t now)
{
    struct store *s = mem_calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->k0 = load64_le(seed);
    s->k1 = load64_le(seed + 8);
    s->wheel = wheel_create(now, WHEEL_TICK_NS);
    if (s->wheel == NULL) {
        mem_free(s);
        return NULL;
    }
    /* The tables stay unallocated until the first store_add(). */
    return s;
}

void
store_set_release(struct store *s, store_release_fn fn)
{
    s->release = fn;
}

void
store_destroy(struct store **sp)
{
    if (sp == NULL || *sp == NULL) {
        return;
    }
    struct store *s = *sp;
    store_flush(s);
    wheel_destroy(&s->wheel);
    mem_free(s);
    *sp = NULL;
}

struct store_rec *
store_lookup_hashed(struct store *s, const void *key, size_t keylen,
                    uint64_t h, int64_t now)
{
    int ti;

    if (keylen > STORE_KEY_MAX) {
        return NULL;    /* store_add never admits such a key */
    }
    rehash_step(s);
    if (s->count == 0) {
        return NULL;
    }
    if (keylen == 0) {
        key = "";       /* memcmp wants a valid pointer */
    }
    struct store_rec **link = find_key(s, h, key, keylen, &ti);
    if (link == NULL) {
        return NULL;
    }
    struct store_rec *r = *link;
    if (!rec_dead(r, now)) {
        return r;
    }
    /* Lazy expiry. Inside a scan callback the chain is being walked, so the
     * dead record is only reported absent and left to the wheel. */
    if (s->scanning == 0) {
        unlink_free(s, link, ti);
        s->expired++;
    }
    return NULL;
}

struct store_rec *
store_lookup(struct store *s, const void *key, size_t keylen, int64_t now)
{
    if (keylen > STORE_KEY_MAX) {
        return NULL;
    }
    return store_lookup_hashed(s, key, keylen,
                               store_hash(s, keylen == 0 ? "" : key, keylen),
                               now);
}

struct store_rec *
store_add(struct store *s, const void *key, size_t keylen, uint8_t type,
          size_t state_size)
{
    assert(s->scanning == 0);
    if (keylen > STORE_KEY_MAX || state_size > STORE_STATE_MAX) {
        return NULL;
    }
    if (keylen == 0) {
        key = "";
    }
    rehash_step(s);
    if (s->ht[0].size == 0 && !table_resize(s, TABLE_MIN)) {
        return NULL;
    }
    struct store_rec *r = mem_malloc(sizeof(*r) + state_size + keylen);
    if (r == NULL) {
        return NULL;
    }
    uint64_t h = store_hash(s, key, keylen);
    wheel_entry_init(&r->timer);
    r->expire_at = STORE_NEVER;
    r->keylen = (uint32_t)keylen;
    r->state_size = (uint16_t)state_size;
    r->type = type;
    r->hash_tag = hash_tag(h);
    memset(r->data, 0, state_size);
    memcpy(r->data + state_size, key, keylen);

    /* While rehashing, ht[0] only drains; new records go to ht[1]. */
    struct table *t = &s->ht[rehashing(s) ? 1 : 0];
    struct store_rec **head = &t->bucket[h & t->mask];
    r->hnext = *head;
    *head = r;
    t->used++;
    s->count++;
    table_resize_if_needed(s);
    return r;
}

void
store_set_expire(struct store *s, struct store_rec *r, int64_t expire_at)
{
    s->changes++;
    s->volatile_count += (expire_at != STORE_NEVER) -
                         (r->expire_at != STORE_NEVER);
    r->expire_at = expire_at;
    if (expire_at == STORE_NEVER) {
        wheel_cancel(s->wheel, &r->timer);
        return;
    }
    /* Lazy re-arm: a later expiry leaves the timer where it is, and
     * expire_fire() re-queues it when it goes off early. */
    if (!wheel_entry_scheduled(&r->timer) || expire_at < r->timer.due) {
        wheel_schedule(s->wheel, &r->timer, expire_at);
    }
}

void
store_remove(struct store *s, struct store_rec *r)
{
    int ti;
    struct store_rec **link = find_rec(s,
                                       store_hash(s, store_rec_key(r),
                                                  r->keylen),
                                       r, &ti);
    assert(link != NULL);
    if (link != NULL) {
        unlink_free(s, link, ti);
    }
}

size_t
store_size(const struct store *s)
{
    return s->count;
}

size_t
store_volatile(const struct store *s)
{
    return s->volatile_count;
}

uint64_t
store_expired(const struct store *s)
{
    return s->expired;
}

static void
table_flush(struct store *s, struct table *t)
{
    for (size_t i = 0; i < t->size; i++) {
        struct store_rec *r = t->bucket[i];
        while (r != NULL) {
            struct store_rec *next = r->hnext;
            wheel_cancel(s->wheel, &r->timer);
            release_rec(s, r);
            r = next;
        }
    }
    table_free(t);
}

void
store_flush(struct store *s)
{
    assert(s->scanning == 0);
    table_flush(s, &s->ht[0]);
    table_flush(s, &s->ht[1]);
    s->rehashidx = 0;
    s->count = 0;
    s->volatile_count = 0;
    s->changes++;
}

uint64_t
store_changes(const struct store *s)
{
    return s->changes;
}

struct expire_ctx {
    struct store *s;
    int64_t now;
    size_t removed;
};

/* Wheel callback: e is already unlinked from the wheel. */
static void
expire_fire(struct wheel_entry *e, void *arg)
{
    struct expire_ctx *ctx = arg;
    struct store_rec *r = rec_of_timer(e);

    if (rec_dead(r, ctx->now)) {
        store_remove(ctx->s, r);
        ctx->s->expired++;
        ctx->removed++;
    } else if (r->expire_at != STORE_NEVER) {
        /* The expiry was pushed later since the timer was set. */
        wheel_schedule(ctx->s->wheel, e, r->expire_at);
    }
}

size_t
store_expire(struct store *s, int64_t now, size_t budget)
{
    struct expire_ctx ctx = { .s = s, .now = now, .removed = 0 };

    assert(s->scanning == 0);
    (void)wheel_advance(s->wheel, now, budget, expire_fire, &ctx);
    return ctx.removed;
}

bool
store_evict_soonest(struct store *s)
{
    struct wheel_entry *e = wheel_first(s->wheel);
    if (e == NULL) {
        return false;
    }
    store_remove(s, rec_of_timer(e));
    s->evicted++;
    return true;
}

uint64_t
store_evicted(const struct store *s)
{
    return s->evicted;
}

bool
store_expire_pending(const struct store *s, int64_t now)
{
    return wheel_pending(s->wheel, now);
}

bool
store_cron(struct store *s, size_t steps)
{
    while (steps > 0 && s->scanning == 0) {
        if (!rehashing(s)) {
            if (s->count == 0 && s->ht[0].size > 0) {
                table_free(&s->ht[0]);  /* idle store: no buckets at all */
            }
            table_resize_if_needed(s);
            if (!rehashing(s)) {
                break;
            }
        }
        steps = rehash(s, steps);
    }
    return rehashing(s);
}

/* ------------------------------------------------------------------------
 * Scan
 * --------------------------------------------------------------------- */

static inline uint64_t
rev64(uint64_t v)
{
    v = ((v >> 1) & UINT64_C(0x5555555555555555))
        | ((v & UINT64_C(0x5555555555555555)) << 1);
    v = ((v >> 2) & UINT64_C(0x3333333333333333))
        | ((v & UINT64_C(0x3333333333333333)) << 2);
    v = ((v >> 4) & UINT64_C(0x0f0f0f0f0f0f0f0f))
        | ((v & UINT64_C(0x0f0f0f0f0f0f0f0f)) << 4);
    return __builtin_bswap64(v);
}

/* Increment the cursor's bits under mask, counting from the top bit down. */
static inline uint64_t
cursor_next(uint64_t v, uint64_t mask)
{
    v |= ~mask;
    v = rev64(v);
    v++;
    return rev64(v);
}

static void
scan_bucket(struct store_rec *r, store_scan_fn fn, void *arg)
{
    while (r != NULL) {
        struct store_rec *next = r->hnext;
        fn(r, arg);
        r = next;
    }
}

uint64_t
store_scan(struct store *s, uint64_t v, store_scan_fn fn, void *arg)
{
    if (s->count == 0) {
        return 0;
    }
    s->scanning++;
    if (!rehashing(s)) {
        const struct table *t = &s->ht[0];
        scan_bucket(t->bucket[v & t->mask], fn, arg);
        v = cursor_next(v, t->mask);
    } else {
        /* Visit the small table's bucket, then every bucket of the large
         * table whose index has the same low bits (its expansion). */
        const struct table *small = &s->ht[0];
        const struct table *large = &s->ht[1];
        if (small->size > large->size) {
            small = &s->ht[1];
            large = &s->ht[0];
        }
        uint64_t m0 = small->mask;
        uint64_t m1 = large->mask;
        scan_bucket(small->bucket[v & m0], fn, arg);
        do {
            scan_bucket(large->bucket[v & m1], fn, arg);
            v = cursor_next(v, m1);
        } while (v & (m0 ^ m1));
    }
    s->scanning--;
    return v;
}
