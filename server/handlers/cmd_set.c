/*
 * cmd_set.c - Redis's set commands, byte for byte as Redis 7.0 answers
 * them: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS, SRANDMEMBER,
 * SPOP, SMOVE, SSCAN, SINTER, SINTERCARD, SINTERSTORE, SUNION,
 * SUNIONSTORE, SDIFF, SDIFFSTORE.
 *
 * The set itself is lib/set.h (struct set, the key's state). A write is
 * admitted first (coll_reserve), then made through the calls its effect
 * replays (set_add, set_rem), so the journal and the replicas get the
 * members changed, not the set: SPOP's effect is the members it removed,
 * so a replica ends with the same set. The *STORE commands build their
 * result apart, then replace the destination whole (of whatever type it
 * was, its expiry gone) or delete it when the result is empty, as Redis's
 * setKey() and dbDelete() do. Checks come in Redis's order, since which
 * error a bad request gets is part of the reply; where Redis's answer
 * follows its set's order (an intset's, or a result built by adding), so
 * does this one's.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/set.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/notify.h"

static struct set *
set_of(struct store_rec *r)
{
    return store_rec_state(r);
}

/* argv[1]'s set into *r (NULL when absent); false (WRONGTYPE sent) when
 * the key holds something else. */
static bool
lookup_set(struct conn *c, const struct resp_request *req,
           enum lookup_kind kind, struct store_rec **r)
{
    return coll_lookup(c, req->argv[1], req->argvlen[1], KEY_SET, kind,
                       clock_wall_now(), r);
}

/* An element effect of op over the n members at s, or the whole key when
 * no payload could be built. */
static void
effect_members(struct store_rec *r, struct membuf *b, uint8_t op,
               const char *const *s, const size_t *len, size_t n)
{
    if (b == NULL) {
        return;
    }
    if (set_effect(b, s, len, n)) {
        keyspace_elem_end(r, op);
    } else {
        keyspace_written(r);
    }
}

/* ---- SADD, SREM -------------------------------------------------------- */

/* The n members at s added to argv[key]'s set r (NULL: absent), admitted
 * first, told to the journal as one SET_OP_ADD. The number added, or -1
 * after an error reply. */
static int64_t
set_add_members(struct conn *c, const struct resp_request *req, size_t key,
                struct store_rec *r, const char *const *s, const size_t *len,
                size_t n)
{
    static const struct set empty;
    size_t need = set_grow_bytes(r != NULL ? set_of(r) : &empty, s, len, n);
    r = coll_reserve(c, req->argv[key], req->argvlen[key], KEY_SET, r, need);
    if (r == NULL) {
        return -1;
    }
    struct set *x = set_of(r);
    int64_t added = 0;
    bool failed = false;
    for (size_t i = 0; i < n && !failed; i++) {
        int rc = set_add(x, s[i], len[i]);
        failed = rc == SET_NOMEM;
        added += rc == SET_NEW;
    }
    /* Told only when something changed: the watchers of a set whose
     * members were all there already hear nothing, as in Redis. */
    if (failed) {
        keyspace_written(r);    /* some may be in: the whole set */
    } else if (added > 0) {
        effect_members(r, keyspace_elem_begin(r), SET_OP_ADD, s, len, n);
        notify_key(NOTIFY_SET, "sadd", req->argv[key], req->argvlen[key],
                   srv.db);
    }
    (void)keyspace_coll_done(r);
    if (failed) {
        cmd_error(c, ERR_NOMEM);
        return -1;
    }
    return added;
}

void
sadd_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_set(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    int64_t added = set_add_members(c, req, 1, r,
                                    (const char *const *)req->argv + 2,
                                    req->argvlen + 2, req->argc - 2);
    if (added >= 0) {
        reply_int(&c->out, added);
    }
}

void
srem_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_set(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    int64_t removed = 0;
    if (r != NULL) {
        struct set *x = set_of(r);
        for (size_t i = 2; i < req->argc && set_len(x) > 0; i++) {
            removed += set_rem(x, req->argv[i], req->argvlen[i]);
        }
        /* Every member named: removing one that is not there (any more)
         * changes nothing on replay either. */
        if (removed > 0) {
            effect_members(r, keyspace_elem_begin(r), SET_OP_REM,
                           (const char *const *)req->argv + 2,
                           req->argvlen + 2, req->argc - 2);
            notify_key(NOTIFY_SET, "srem", req->argv[1], req->argvlen[1],
                       srv.db);
            (void)keyspace_coll_done(r);
        }
    }
    reply_int(&c->out, removed);
}

/* ---- membership and size ----------------------------------------------- */

void
sismember_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (lookup_set(c, req, LOOKUP_READ, &r)) {
        reply_int(&c->out, r != NULL && set_has(set_of(r), req->argv[2],
                                                req->argvlen[2]));
    }
}

void
smismember_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_set(c, req, LOOKUP_READ, &r)) {
        return;
    }
    reply_array(&c->out, req->argc - 2);
    for (size_t i = 2; i < req->argc; i++) {
        reply_int(&c->out, r != NULL && set_has(set_of(r), req->argv[i],
                                                req->argvlen[i]));
    }
}

void
scard_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (lookup_set(c, req, LOOKUP_READ, &r)) {
        reply_int(&c->out, r != NULL ? (int64_t)set_len(set_of(r)) : 0);
    }
}

/* Every member of x in its order, after a header of set_len(x). */
static void
reply_members(struct conn *c, const struct set *x, bool as_set)
{
    if (as_set) {
        reply_set(&c->out, set_len(x), c->proto);
    } else {
        reply_array(&c->out, set_len(x));
    }
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        reply_bulk(&c->out, m.data, m.len);
    }
}

/* ---- SRANDMEMBER -------------------------------------------------------- */

/* count distinct members of x (0 < count < its size) in a new set *out,
 * as Redis picks them: from a copy, removing random members, when count
 * is more than a third of the set; else adding random ones. false when
 * memory runs out. */
static bool
random_distinct(const struct set *x, uint64_t count, struct set *out)
{
    if (count * 3 > set_len(x)) {
        if (!set_copy(out, x)) {
            return false;
        }
        while (set_len(out) > count) {
            struct pack_item m;
            set_random(out, &m);
            /* Copied out first: removing frees the bytes. */
            char buf[SET_PACK_VALUE];
            char *p = m.len <= sizeof(buf) ? buf : mem_malloc(m.len);
            if (p == NULL) {
                return false;
            }
            memcpy(p, m.data, m.len);
            (void)set_rem(out, p, m.len);
            if (p != buf) {
                mem_free(p);
            }
        }
        return true;
    }
    while (set_len(out) < count) {
        struct pack_item m;
        set_random(x, &m);
        if (set_add(out, m.data, m.len) == SET_NOMEM) {
            return false;
        }
    }
    return true;
}

/* SRANDMEMBER key count: a negative count (or 1) draws with repeats, in
 * draw order; a count of the set's size or more answers it whole in its
 * order; else count distinct members. An array in both protocols. */
static void
srandmember_count(struct conn *c, const struct set *x, int64_t l)
{
    uint64_t count = l < 0 ? (uint64_t)-l : (uint64_t)l;
    if (l < 0 || count == 1) {
        reply_array(&c->out, count);
        for (uint64_t i = 0; i < count; i++) {
            struct pack_item m;
            set_random(x, &m);
            if (reply_bulk(&c->out, m.data, m.len) < 0) {
                break;      /* the output ran out: the client is closed */
            }
        }
        return;
    }
    if (count >= set_len(x)) {
        reply_members(c, x, false);
        return;
    }
    struct set pick = { 0 };
    if (!random_distinct(x, count, &pick)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_members(c, &pick, false);
    }
    set_free(&pick);
}

void
srandmember_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    int64_t l = 0;
    if (req->argc > 3) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (req->argc == 3) {
        if (!num_parse_i64(req->argv[2], req->argvlen[2], &l)) {
            cmd_error(c, ERR_NOT_INTEGER);
            return;
        }
        if (l == INT64_MIN) {
            cmd_error(c, ERR_COUNT_RANGE);
            return;
        }
    }
    if (!lookup_set(c, req, LOOKUP_READ, &r)) {
        return;
    }
    if (req->argc == 2) {
        struct pack_item m;
        if (r == NULL) {
            reply_null(&c->out, c->proto);
            return;
        }
        set_random(set_of(r), &m);
        reply_bulk(&c->out, m.data, m.len);
    } else if (r == NULL || l == 0) {
        reply_array(&c->out, 0);
    } else {
        srandmember_count(c, set_of(r), l);
    }
}

/* ---- SPOP --------------------------------------------------------------- */

/* SPOP of all but `keep` members (Redis's third case, keep * 5 <= the
 * count): the kept ones drawn at random into a new set built by adding,
 * as Redis builds it (an all-integer one is an intset again, whatever the
 * set was), which becomes the key's; the others answered in the set's
 * order. The journal gets the kept set whole, the smaller of the two. */
static void
spop_keep(struct conn *c, struct store_rec *r, uint64_t keep)
{
    struct set *x = set_of(r);
    struct set kept = { 0 };
    bool ok = true;
    while (ok && set_len(&kept) < keep) {
        struct pack_item m;
        set_random(x, &m);
        ok = set_add(&kept, m.data, m.len) != SET_NOMEM;
    }
    if (!ok) {
        set_free(&kept);
        cmd_error(c, ERR_NOMEM);
        return;
    }
    reply_set(&c->out, set_len(x) - keep, c->proto);
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        if (!set_has(&kept, m.data, m.len)) {
            reply_bulk(&c->out, m.data, m.len);
        }
    }
    set_free(x);
    *x = kept;
    keyspace_written(r);
    notify_key(NOTIFY_SET, "spop", store_rec_key(r), store_rec_keylen(r),
               srv.db);
}

/* The members SPOP takes, count of them (< x's size, and at least a
 * sixth of it left: Redis's second case), into the effect payload p:
 * distinct random draws, a draw met before drawn again (at most six
 * tries a member on average), so a large set is never copied. */
static bool
spop_choose(const struct set *x, uint64_t count, struct membuf *p)
{
    if (!set_effect_open(p)) {
        return false;
    }
    struct set drawn = { 0 };
    bool ok = true;
    while (ok && set_len(&drawn) < count) {
        struct pack_item m;
        set_random(x, &m);
        int rc = set_add(&drawn, m.data, m.len);
        ok = rc != SET_NOMEM && (rc == SET_EXISTS ||
                                 set_effect_push(p, m.data, m.len));
    }
    set_free(&drawn);
    return ok;
}

/* The members of payload p (set_effect's layout) as a reply and removed
 * from r's set, one SET_OP_REM. */
static void
spop_apply(struct conn *c, struct store_rec *r, const struct membuf *p)
{
    uint32_t n;
    memcpy(&n, p->p, sizeof(n));
    struct membuf *b = keyspace_elem_begin(r);
    reply_set(&c->out, n, c->proto);
    struct membuf_reader rd = { p->p + sizeof(n), p->len - sizeof(n) };
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = 0;
        const unsigned char *m = NULL;
        /* p was built here: every length is whole. */
        (void)membuf_read(&rd, &len, sizeof(len));
        (void)membuf_skip(&rd, len, &m);
        reply_bulk(&c->out, m, len);
        (void)set_rem(set_of(r), m, len);
    }
    if (b != NULL) {
        if (membuf_put(b, p->p, p->len)) {
            keyspace_elem_end(r, SET_OP_REM);
        } else {
            keyspace_written(r);
        }
    }
    notify_key(NOTIFY_SET, "spop", store_rec_key(r), store_rec_keylen(r),
               srv.db);
    (void)keyspace_coll_done(r);
}

/* A new set of x's members added in its order: what Redis answers for a
 * whole set built by adding (SPOP of all, SUNION). */
static bool
rebuilt(const struct set *x, struct set *out)
{
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        if (set_add(out, m.data, m.len) == SET_NOMEM) {
            return false;
        }
    }
    return true;
}

static void
spop_count(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    int64_t count;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &count) || count < 0) {
        cmd_error(c, ERR_POSITIVE);
        return;
    }
    if (!lookup_set(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL || count == 0) {
        reply_set(&c->out, 0, c->proto);
        return;
    }
    struct set *x = set_of(r);
    if ((uint64_t)count >= set_len(x)) {
        /* The whole set, as SUNION would answer it; the key goes. */
        struct set all = { 0 };
        if (!rebuilt(x, &all)) {
            cmd_error(c, ERR_NOMEM);
        } else {
            reply_members(c, &all, true);
            keyspace_delete(r);
            notify_key(NOTIFY_SET, "spop", req->argv[1], req->argvlen[1],
                       srv.db);
            notify_key(NOTIFY_GENERIC, "del", req->argv[1], req->argvlen[1],
                       srv.db);
        }
        set_free(&all);
        return;
    }
    uint64_t remaining = set_len(x) - (uint64_t)count;
    if (remaining * 5 <= (uint64_t)count) {
        spop_keep(c, r, remaining);
        return;
    }
    struct membuf p = { 0 };
    if (!spop_choose(x, (uint64_t)count, &p)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        spop_apply(c, r, &p);
    }
    mem_free(p.p);
}

void
spop_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (req->argc == 3) {
        spop_count(c, req);
        return;
    }
    if (req->argc > 3) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (!lookup_set(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        reply_null(&c->out, c->proto);
        return;
    }
    struct pack_item m;
    set_random(set_of(r), &m);
    struct membuf p = { 0 };
    if (!set_effect_open(&p) || !set_effect_push(&p, m.data, m.len)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        /* One member: its bulk string, not a set of one. */
        const unsigned char *s = p.p + p.len - m.len;
        reply_bulk(&c->out, s, m.len);
        struct membuf *b = keyspace_elem_begin(r);
        (void)set_rem(set_of(r), s, m.len);
        if (b != NULL) {
            if (membuf_put(b, p.p, p.len)) {
                keyspace_elem_end(r, SET_OP_REM);
            } else {
                keyspace_written(r);
            }
        }
        notify_key(NOTIFY_SET, "spop", req->argv[1], req->argvlen[1], srv.db);
        (void)keyspace_coll_done(r);
    }
    mem_free(p.p);
}

/* ---- SMOVE -------------------------------------------------------------- */

/* The move of member m (argv[3], in r's set) from argv[1] to argv[2]'s
 * set dr (NULL: absent; looked up through own), admitted first (a new
 * destination's record too), one group of effects; replies. A new
 * destination is made once the source lost the member, as Redis makes it,
 * so "srem" (and "del") are published before "new" and "sadd". */
static void
smove_do(struct conn *c, struct resp_request *req, struct store_rec *dr,
         struct key_hint *own)
{
    const char *m = req->argv[3];
    size_t len = req->argvlen[3];
    static const struct set empty;
    size_t need = set_grow_bytes(dr != NULL ? set_of(dr) : &empty, &m, &len,
                                 1);
    size_t room = need + (dr != NULL ? 0 : sizeof(struct store_rec) +
                                           req->argvlen[2] +
                                           keytype_state_size(KEY_SET));
    if (!keyspace_admit(room, dr)) {
        cmd_error(c, ERR_OOM);
        return;
    }
    /* The source again: admission may have evicted it. */
    struct store_rec *r = keyspace_lookup_write(&c->hint, req->argv[1],
                                                req->argvlen[1],
                                                clock_wall_now());
    if (r == NULL) {
        reply_int(&c->out, 0);
        return;
    }
    keyspace_group_begin();
    struct membuf *b = keyspace_elem_begin(r);
    (void)set_rem(set_of(r), m, len);
    effect_members(r, b, SET_OP_REM, &m, &len, 1);
    notify_key(NOTIFY_SET, "srem", req->argv[1], req->argvlen[1], srv.db);
    (void)keyspace_coll_done(r);
    if (dr == NULL) {
        dr = keyspace_coll_add(own, req->argv[2], req->argvlen[2], KEY_SET,
                               need);
    }
    /* The destination's watchers hear only when it gained the member, as
     * in Redis. */
    int rc = dr != NULL ? set_add(set_of(dr), m, len) : SET_NOMEM;
    if (rc == SET_NOMEM) {
        if (dr != NULL) {
            keyspace_written(dr);
        }
        cmd_error(c, ERR_NOMEM);
    } else {
        if (rc == SET_NEW) {
            effect_members(dr, keyspace_elem_begin(dr), SET_OP_ADD, &m,
                           &len, 1);
            notify_key(NOTIFY_SET, "sadd", req->argv[2], req->argvlen[2],
                       srv.db);
        }
        reply_int(&c->out, 1);
    }
    if (dr != NULL) {
        (void)keyspace_coll_done(dr);
    }
    keyspace_group_end();
}

/* SMOVE source destination member: Redis answers 0 for an absent source
 * before it looks at the destination's type. */
void
smove_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r, *dr;
    if (!lookup_set(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    struct key_hint own = { false, 0 };
    dr = keyspace_lookup_write(&own, req->argv[2], req->argvlen[2],
                               clock_wall_now());
    if (r == NULL) {
        reply_int(&c->out, 0);
        return;
    }
    if (dr != NULL && dr->type != KEY_SET) {
        cmd_error(c, ERR_WRONGTYPE);
        return;
    }
    bool member = set_has(set_of(r), req->argv[3], req->argvlen[3]);
    if (r == dr || !member) {
        reply_int(&c->out, member);     /* the same set: nothing moves */
        return;
    }
    smove_do(c, req, dr, &own);
}

/* ---- SSCAN -------------------------------------------------------------- */

/* SSCAN key cursor [MATCH pattern] [COUNT count]. A compact set answers
 * whole with cursor 0, as Redis answers an intset; a large one visits
 * buckets until COUNT members are visited (MATCH filters after, as in
 * Redis), at most ten times COUNT buckets. */
static uint64_t
sscan_step(struct store_rec *r, uint64_t cursor, void *collect_arg)
{
    return set_scan(set_of(r), cursor, coll_scan_collect, collect_arg);
}

HANDLER_VARIANT(sscan_command, coll_scan_command, KEY_SET, 1, 10, sscan_step)

/* ---- SINTER, SUNION, SDIFF and their STORE forms ----------------------- */

/* The sets named by argv[from], ... argv[from + n - 1] into sets (NULL:
 * absent), looked up as reads, as Redis's lookupKeyRead() of each; false
 * after -WRONGTYPE, which any of them gets before an absent one counts. */
static bool
gather(struct conn *c, const struct resp_request *req, size_t from,
       size_t n, const struct set **sets)
{
    int64_t now = clock_wall_now();
    for (size_t j = 0; j < n; j++) {
        size_t a = from + j;
        struct key_hint own = { false, 0 };
        struct store_rec *r = keyspace_lookup(a == 1 ? &c->hint : &own,
                                              req->argv[a], req->argvlen[a],
                                              now);
        if (r != NULL && r->type != KEY_SET) {
            cmd_error(c, ERR_WRONGTYPE);
            return false;
        }
        sets[j] = r != NULL ? set_of(r) : NULL;
    }
    return true;
}

/* The result of a *STORE into argv[1], as Redis's setKey(): whatever the
 * key held (and its expiry) replaced by res, or deleted when res is
 * empty (coll_store()); event published when stored. Replies with the
 * result's size; res is the key's now, or freed. */
static void
store_result(struct conn *c, struct resp_request *req, struct set *res,
             const char *event)
{
    if (coll_store(c, req->argv[1], req->argvlen[1], KEY_SET, res,
                   set_len(res))) {
        notify_key(NOTIFY_SET, event, req->argv[1], req->argvlen[1], srv.db);
    } else {
        set_free(res);
    }
}

/* Redis sorts SINTER's sets by size with glibc's qsort, a merge sort for
 * such arrays: stable, so equal sizes keep their order. */
struct sized {
    const struct set *x;
    size_t at;
};

static int
by_size(const void *a, const void *b)
{
    const struct sized *p = a, *q = b;
    uint64_t m = set_len(p->x), n = set_len(q->x);
    if (m != n) {
        return m < n ? -1 : 1;
    }
    return p->at < q->at ? -1 : p->at > q->at;
}

enum inter_mode { INTER_REPLY, INTER_CARD, INTER_STORE };

/* The members of sets[0] in every other set, in sets[0]'s order, into
 * out (at most limit of them, 0: all). false when memory runs out. */
static bool
intersect(const struct set **sets, size_t n, uint64_t limit,
          struct pack_item **out, size_t *count)
{
    struct set_iter it = { 0 };
    struct pack_item m;
    size_t cap = 0;
    *count = 0;
    while (set_next(sets[0], &it, &m)) {
        size_t j = 1;
        while (j < n && (sets[j] == sets[0] || set_has(sets[j], m.data,
                                                       m.len))) {
            j++;
        }
        if (j < n) {
            continue;
        }
        if (*count == cap) {
            cap = cap != 0 ? cap * 2 : 16;
            struct pack_item *p = mem_realloc(*out, cap * sizeof(*p));
            if (p == NULL) {
                return false;
            }
            *out = p;
        }
        (*out)[(*count)++] = m;
        if (limit != 0 && *count >= limit) {
            break;
        }
    }
    return true;
}

/* What SINTER and its forms answer for the count members found. */
static void
inter_reply(struct conn *c, struct resp_request *req, enum inter_mode mode,
            const struct pack_item *found, size_t count)
{
    if (mode == INTER_CARD) {
        reply_int(&c->out, (int64_t)count);
        return;
    }
    if (mode == INTER_REPLY) {
        reply_set(&c->out, count, c->proto);
        for (size_t i = 0; i < count; i++) {
            reply_bulk(&c->out, found[i].data, found[i].len);
        }
        return;
    }
    struct set res = { 0 };
    for (size_t i = 0; i < count; i++) {
        if (set_add(&res, found[i].data, found[i].len) == SET_NOMEM) {
            set_free(&res);
            cmd_error(c, ERR_NOMEM);
            return;
        }
    }
    store_result(c, req, &res, "sinterstore");
}

/* SINTER, SMEMBERS, SINTERCARD and SINTERSTORE over the n sets named from
 * argv[from] on: an absent one makes the result empty, else the members
 * of the smallest set found in all the others, in its order. */
static void
sinter_generic(struct conn *c, struct resp_request *req, size_t from,
               size_t n, enum inter_mode mode, uint64_t limit)
{
    const struct set **sets = mem_malloc(n * sizeof(*sets));
    struct sized *order = mem_malloc(n * sizeof(*order));
    struct pack_item *found = NULL;
    size_t count = 0;
    bool empty = false;
    if (sets == NULL || order == NULL) {
        cmd_error(c, ERR_NOMEM);
        goto out;
    }
    if (!gather(c, req, from, n, sets)) {
        goto out;
    }
    for (size_t j = 0; j < n; j++) {
        empty |= sets[j] == NULL;
        order[j] = (struct sized){ sets[j], j };
    }
    if (!empty) {
        qsort(order, n, sizeof(*order), by_size);
        for (size_t j = 0; j < n; j++) {
            sets[j] = order[j].x;
        }
        if (!intersect(sets, n, mode == INTER_CARD ? limit : 0, &found,
                       &count)) {
            cmd_error(c, ERR_NOMEM);
            goto out;
        }
    }
    inter_reply(c, req, mode, found, count);
out:
    mem_free(found);
    mem_free(order);
    mem_free(sets);
}

/* SMEMBERS is SINTER of one key, as in Redis. */
HANDLER_VARIANT(sinter_command, sinter_generic, 1, req->argc - 1,
                INTER_REPLY, 0)
HANDLER_VARIANT(smembers_command, sinter_generic, 1, 1, INTER_REPLY, 0)
HANDLER_VARIANT(sinterstore_command, sinter_generic, 2, req->argc - 2,
                INTER_STORE, 0)

/* SINTERCARD numkeys key [key ...] [LIMIT limit] */
void
sintercard_command(struct conn *c, struct resp_request *req)
{
    int64_t numkeys, limit = 0;
    if (!num_parse_i64(req->argv[1], req->argvlen[1], &numkeys) ||
        numkeys < 1) {
        cmd_error(c, ERR_NUMKEYS_POSITIVE);
        return;
    }
    if ((uint64_t)numkeys > req->argc - 2) {
        cmd_error(c, ERR_NUMKEYS_OVER_ARGS);
        return;
    }
    for (size_t j = 2 + (size_t)numkeys; j < req->argc; j++) {
        if (!cmd_arg_is(req, j, "LIMIT") || j + 1 >= req->argc) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
        j++;
        if (!num_parse_i64(req->argv[j], req->argvlen[j], &limit) ||
            limit < 0) {
            cmd_error(c, ERR_LIMIT_NEGATIVE);
            return;
        }
    }
    sinter_generic(c, req, 2, (size_t)numkeys, INTER_CARD, (uint64_t)limit);
}

/* ---- SUNION and SDIFF --------------------------------------------------- */

/* Redis's choice of SDIFF's algorithm: 1 walks the first set testing the
 * others, 2 adds the first set and removes the others; 1 when its work
 * (halved) is no more. The result's members are the same, but not always
 * its encoding (2 may pass the compact bounds on the way), so its order. */
static bool
diff_by_walk(const struct set **sets, size_t n)
{
    uint64_t one = 0, two = 0;
    for (size_t j = 0; j < n; j++) {
        if (sets[j] != NULL) {
            one += set_len(sets[0]);
            two += set_len(sets[j]);
        }
    }
    return one / 2 <= two;
}

/* Every member of x added to res (or removed from it); false when memory
 * runs out. */
static bool
add_all(struct set *res, const struct set *x, bool remove)
{
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(x, &it, &m)) {
        if (remove) {
            (void)set_rem(res, m.data, m.len);
        } else if (set_add(res, m.data, m.len) == SET_NOMEM) {
            return false;
        }
    }
    return true;
}

/* SDIFF's result into res, the first set (not absent) minus the others. */
static bool
difference(const struct set **sets, size_t n, struct set *res)
{
    for (size_t j = 1; j < n; j++) {
        if (sets[j] == sets[0]) {
            return true;        /* the same key: nothing is left */
        }
    }
    if (!diff_by_walk(sets, n)) {
        for (size_t j = 0; j < n && (j == 0 || set_len(res) > 0); j++) {
            if (sets[j] != NULL && !add_all(res, sets[j], j > 0)) {
                return false;
            }
        }
        return true;
    }
    struct set_iter it = { 0 };
    struct pack_item m;
    while (set_next(sets[0], &it, &m)) {
        size_t j = 1;
        while (j < n && (sets[j] == NULL || !set_has(sets[j], m.data,
                                                     m.len))) {
            j++;
        }
        if (j == n && set_add(res, m.data, m.len) == SET_NOMEM) {
            return false;
        }
    }
    return true;
}

/* SUNION, SDIFF and their STORE forms over the n sets named from
 * argv[from] on: the result built by adding, as Redis builds it, then
 * answered in its order or stored. */
static void
sunion_diff_generic(struct conn *c, struct resp_request *req, size_t from,
                    size_t n, bool diff, bool store)
{
    const struct set **sets = mem_malloc(n * sizeof(*sets));
    struct set res = { 0 };
    bool ok = true;
    if (sets == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    if (!gather(c, req, from, n, sets)) {
        mem_free(sets);
        return;
    }
    if (diff) {
        ok = sets[0] == NULL || difference(sets, n, &res);
    } else {
        for (size_t j = 0; j < n && ok; j++) {
            ok = sets[j] == NULL || add_all(&res, sets[j], false);
        }
    }
    mem_free(sets);
    if (!ok) {
        set_free(&res);
        cmd_error(c, ERR_NOMEM);
    } else if (store) {
        store_result(c, req, &res, diff ? "sdiffstore" : "sunionstore");
    } else {
        reply_members(c, &res, true);
        set_free(&res);
    }
}

HANDLER_VARIANT(sunion_command, sunion_diff_generic, 1, req->argc - 1,
                false, false)
HANDLER_VARIANT(sunionstore_command, sunion_diff_generic, 2, req->argc - 2,
                false, true)
HANDLER_VARIANT(sdiff_command, sunion_diff_generic, 1, req->argc - 1,
                true, false)
HANDLER_VARIANT(sdiffstore_command, sunion_diff_generic, 2, req->argc - 2,
                true, true)
