/*
 * cmd_hash.c - Redis's hash commands, byte for byte as Redis 7.0 answers
 * them: HSET, HMSET, HSETNX, HGET, HMGET, HDEL, HLEN, HSTRLEN, HEXISTS,
 * HINCRBY, HINCRBYFLOAT, HGETALL, HKEYS, HVALS, HSCAN, HRANDFIELD (random
 * like Redis's; what Redis determines, the same).
 *
 * The hash itself is lib/hmap.h (struct hmap, the key's state). A write
 * is admitted first (coll_reserve), then made through the same calls its
 * effect replays (hmap_prepare, then hmap_set of each pair; hmap_del), so
 * the journal and the replicas get a few fields, not the hash, and the
 * field order of a compact hash comes out the same there. Checks come in
 * Redis's order, since which error a bad request gets is part of the
 * reply.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "algorithms/increx.h"
#include "lib/hmap.h"
#include "lib/mem.h"
#include "lib/rand.h"
#include "lib/num.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/notify.h"

static struct hmap *
hash_of(struct store_rec *r)
{
    return store_rec_state(r);
}

/* argv[1]'s hash into *r (NULL when absent); false (WRONGTYPE sent) when
 * the key holds something else. */
static bool
lookup_hash(struct conn *c, const struct resp_request *req,
            enum lookup_kind kind, struct store_rec **r)
{
    return coll_lookup(c, req->argv[1], req->argvlen[1], KEY_HASH, kind,
                       clock_wall_now(), r);
}

/* ---- writes ------------------------------------------------------------ */

/* The n strings at s (field, value, ...) set into argv[1]'s hash r (NULL:
 * absent), as HSET does: admitted, hmap_prepare() over them all, then
 * each pair in order, told to the journal as one HMAP_OP_SET, and the
 * command's event published. The number of new fields, or -1 after an
 * error reply. */
static int64_t
hash_set_pairs(struct conn *c, const struct resp_request *req,
               struct store_rec *r, const char *const *s, const size_t *len,
               size_t n, const char *event)
{
    static const struct hmap empty;
    size_t need = hmap_grow_bytes(r != NULL ? hash_of(r) : &empty, s, len,
                                  n);
    r = coll_reserve(c, req->argv[1], req->argvlen[1], KEY_HASH, r, need);
    if (r == NULL) {
        return -1;
    }
    struct hmap *h = hash_of(r);
    struct membuf *b = keyspace_elem_begin(r);
    int64_t created = 0;
    bool failed = !hmap_prepare(h, s, len, n);
    for (size_t i = 0; i < n && !failed; i += 2) {
        int rc = hmap_set(h, s[i], len[i], s[i + 1], len[i + 1]);
        failed = rc == HMAP_NOMEM;
        created += rc == HMAP_NEW;
    }
    if (failed) {
        /* Some pairs may be in: the journal gets the whole hash. */
        keyspace_written(r);
    } else if (b != NULL) {
        if (hmap_effect_set(b, s, len, n)) {
            keyspace_elem_end(r, HMAP_OP_SET);
        } else {
            keyspace_written(r);
        }
    }
    if (!failed) {
        notify_key(NOTIFY_HASH, event, req->argv[1], req->argvlen[1], srv.db);
    }
    (void)keyspace_coll_done(r);
    if (failed) {
        cmd_error(c, ERR_NOMEM);
        return -1;
    }
    return created;
}

/* HSET key field value [field value ...], and HMSET (+OK). */
static void
hset_generic(struct conn *c, struct resp_request *req, bool hmset)
{
    struct store_rec *r;
    if (req->argc % 2 == 1) {
        cmd_errorf(c, ERR_WRONG_ARITY, hmset ? "hmset" : "hset");
        return;
    }
    if (!lookup_hash(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    int64_t created = hash_set_pairs(c, req, r,
                                     (const char *const *)req->argv + 2,
                                     req->argvlen + 2, req->argc - 2,
                                     "hset");
    if (created < 0) {
        return;
    }
    if (hmset) {
        reply_ok(&c->out);
    } else {
        reply_int(&c->out, created);
    }
}

HANDLER_VARIANT(hset_command, hset_generic, false)
HANDLER_VARIANT(hmset_command, hset_generic, true)

void
hsetnx_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_hash(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r != NULL &&
        hmap_exists(hash_of(r), req->argv[2], req->argvlen[2])) {
        reply_int(&c->out, 0);
        return;
    }
    if (hash_set_pairs(c, req, r, (const char *const *)req->argv + 2,
                       req->argvlen + 2, 2, "hset") >= 0) {
        reply_int(&c->out, 1);
    }
}

/* HINCRBY and HINCRBYFLOAT: argv[2] set to the n bytes of text in r
 * (NULL: absent), as one pair; false after an error reply. */
static bool
set_result(struct conn *c, struct resp_request *req, struct store_rec *r,
           const char *text, size_t n, const char *event)
{
    const char *s[2] = { req->argv[2], text };
    size_t len[2] = { req->argvlen[2], n };
    return hash_set_pairs(c, req, r, s, len, 2, event) >= 0;
}

void
hincrby_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    int64_t incr, value = 0;
    struct pack_item v;
    if (!num_parse_i64(req->argv[3], req->argvlen[3], &incr)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    if (!lookup_hash(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r != NULL && hmap_get(hash_of(r), req->argv[2], req->argvlen[2], &v)
        && !num_parse_i64((const char *)v.data, v.len, &value)) {
        cmd_error(c, "ERR hash value is not an integer");
        return;
    }
    if (__builtin_add_overflow(value, incr, &value)) {
        cmd_error(c, ERR_INCR_OVERFLOW);
        return;
    }
    char text[NUM_I64_MAXLEN];
    size_t n = num_fmt_i64(text, value);
    if (set_result(c, req, r, text, n, "hincrby")) {
        reply_int(&c->out, value);
    }
}

/* HINCRBYFLOAT: long double arithmetic, the result stored as the text
 * INCRBYFLOAT stores (ld2string's human form), which is also the reply. */
void
hincrbyfloat_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    long double incr, value = 0;
    struct pack_item v;
    if (!num_parse_long_double(req->argv[3], req->argvlen[3], &incr)) {
        cmd_error(c, ERR_NOT_FLOAT);
        return;
    }
    if (isnan(incr) || isinf(incr)) {
        cmd_error(c, "ERR value is NaN or Infinity");
        return;
    }
    if (!lookup_hash(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r != NULL && hmap_get(hash_of(r), req->argv[2], req->argvlen[2], &v)
        && !num_parse_long_double((const char *)v.data, v.len, &value)) {
        cmd_error(c, "ERR hash value is not a float");
        return;
    }
    char text[INCREX_TEXT_MAX];
    size_t n;
    if (!coll_add_float(c, value, incr, text, &n)) {
        return;
    }
    if (set_result(c, req, r, text, n, "hincrbyfloat")) {
        reply_bulk(&c->out, text, n);
    }
}

void
hdel_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_hash(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    int64_t deleted = 0;
    if (r != NULL) {
        struct hmap *h = hash_of(r);
        for (size_t i = 2; i < req->argc && hmap_len(h) > 0; i++) {
            deleted += hmap_del(h, req->argv[i], req->argvlen[i]);
        }
    }
    if (deleted > 0) {
        /* Every field named: deleting one that is not there (any more)
         * changes nothing on replay either. */
        struct membuf *b = keyspace_elem_begin(r);
        if (b != NULL) {
            if (hmap_effect_del(b, (const char *const *)req->argv + 2,
                                req->argvlen + 2, req->argc - 2)) {
                keyspace_elem_end(r, HMAP_OP_DEL);
            } else {
                keyspace_written(r);
            }
        }
        notify_key(NOTIFY_HASH, "hdel", req->argv[1], req->argvlen[1], srv.db);
        (void)keyspace_coll_done(r);
    }
    reply_int(&c->out, deleted);
}

/* ---- reads ------------------------------------------------------------- */

static void
reply_field(struct conn *c, const struct store_rec *r, const char *f,
            size_t flen)
{
    struct pack_item v;
    if (r != NULL && hmap_get(hash_of((struct store_rec *)r), f, flen, &v)) {
        reply_bulk(&c->out, v.data, v.len);
    } else {
        reply_null(&c->out, c->proto);
    }
}

void
hget_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (lookup_hash(c, req, LOOKUP_READ, &r)) {
        reply_field(c, r, req->argv[2], req->argvlen[2]);
    }
}

void
hmget_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_hash(c, req, LOOKUP_READ, &r)) {
        return;
    }
    reply_array(&c->out, req->argc - 2);
    for (size_t i = 2; i < req->argc; i++) {
        reply_field(c, r, req->argv[i], req->argvlen[i]);
    }
}

void
hlen_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (lookup_hash(c, req, LOOKUP_READ, &r)) {
        reply_int(&c->out, r != NULL ? (int64_t)hmap_len(hash_of(r)) : 0);
    }
}

void
hstrlen_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_hash(c, req, LOOKUP_READ, &r)) {
        return;
    }
    size_t n = r != NULL ? hmap_value_len(hash_of(r), req->argv[2],
                                          req->argvlen[2])
                         : 0;
    reply_int(&c->out, (int64_t)n);
}

void
hexists_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_hash(c, req, LOOKUP_READ, &r)) {
        return;
    }
    bool in = r != NULL &&
              hmap_exists(hash_of(r), req->argv[2], req->argvlen[2]);
    reply_int(&c->out, in);
}

enum { WANT_FIELDS = 1, WANT_VALUES = 2 };

/* HGETALL (a map in RESP3), HKEYS, HVALS: in the hash's order. */
static void
hgetall_generic(struct conn *c, struct resp_request *req, int want)
{
    struct store_rec *r;
    if (!lookup_hash(c, req, LOOKUP_READ, &r)) {
        return;
    }
    struct hmap *h = r != NULL ? hash_of(r) : NULL;
    size_t n = h != NULL ? hmap_len(h) : 0;
    if (want == (WANT_FIELDS | WANT_VALUES)) {
        reply_map(&c->out, n, c->proto);
    } else {
        reply_array(&c->out, n);
    }
    if (h == NULL) {
        return;
    }
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    while (hmap_next(h, &it, &f, &v)) {
        if (want & WANT_FIELDS) {
            reply_bulk(&c->out, f.data, f.len);
        }
        if (want & WANT_VALUES) {
            reply_bulk(&c->out, v.data, v.len);
        }
    }
}

HANDLER_VARIANT(hgetall_command, hgetall_generic, WANT_FIELDS | WANT_VALUES)
HANDLER_VARIANT(hkeys_command, hgetall_generic, WANT_FIELDS)
HANDLER_VARIANT(hvals_command, hgetall_generic, WANT_VALUES)

/* ---- HRANDFIELD --------------------------------------------------------- */

/* One field of HRANDFIELD's reply (RESP3: a pair WITHVALUES). */
static void
reply_rand_field(struct conn *c, const struct pack_item *f, bool with)
{
    if (with && c->proto >= 3) {
        reply_array(&c->out, 2);
    }
    reply_bulk(&c->out, f[0].data, f[0].len);
    if (with) {
        reply_bulk(&c->out, f[1].data, f[1].len);
    }
}

/* Every field and value of h, in its order, to draw from by index. */
static struct pack_item *
hash_items(const struct hmap *h)
{
    struct pack_item *items = mem_malloc(2 * hmap_len(h) *
                                         sizeof(struct pack_item));
    struct hmap_iter it = { 0 };
    for (size_t i = 0; items != NULL && hmap_next(h, &it, &items[2 * i],
                                                  &items[2 * i + 1]); i++) {
    }
    return items;
}

/* As Redis's hrandfieldWithCountCommand(): a negative count draws with
 * repeats, a count of the hash's size or more answers it whole in its
 * order, a smaller one distinct fields. */
static void
hrand_count(struct conn *c, struct store_rec *r, int64_t count, bool with)
{
    const struct hmap *h = hash_of(r);
    uint64_t n = hmap_len(h), draws = count < 0 ? 0 - (uint64_t)count
                                                : (uint64_t)count;
    bool all = count > 1 && draws >= n;
    draws = all ? n : draws;
    struct pack_item *items = hash_items(h);
    uint64_t *picks = count > 1 && !all ? mem_malloc(draws * sizeof(uint64_t))
                                        : NULL;
    if (items == NULL || (count > 1 && !all &&
                          (picks == NULL ||
                           !coll_random_distinct(n, draws, picks)))) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_array(&c->out, with && c->proto < 3 ? 2 * draws : draws);
        for (uint64_t i = 0; i < draws && !coll_reply_full(c); i++) {
            uint64_t at = all ? i : picks != NULL ? picks[i] : rand_below(n);
            reply_rand_field(c, &items[2 * at], with);
        }
    }
    mem_free(items);
    mem_free(picks);
}

/* HRANDFIELD key: one field, a bulk string. */
static void
hrand_one(struct conn *c, struct store_rec *r)
{
    const struct hmap *h = hash_of(r);
    struct pack_item *items = hash_items(h);
    if (items == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    uint64_t at = rand_below(hmap_len(h));
    reply_bulk(&c->out, items[2 * at].data, items[2 * at].len);
    mem_free(items);
}

HANDLER_VARIANT(hrandfield_command, coll_rand_command, KEY_HASH, "WITHVALUES",
                hrand_one, hrand_count)

/* ---- HSCAN ------------------------------------------------------------- */

/* HSCAN key cursor [MATCH pattern] [COUNT count]. A compact hash answers
 * whole with cursor 0, as Redis answers a listpack; a large one visits
 * buckets until COUNT fields are visited (MATCH filters after, as in
 * Redis), at most twenty times COUNT buckets (Redis counts fields and
 * values, so its bounds are doubled). */
static uint64_t
hscan_step(struct store_rec *r, uint64_t cursor, void *collect_arg)
{
    return hmap_scan(hash_of(r), cursor, coll_scan_collect, collect_arg);
}

HANDLER_VARIANT(hscan_command, coll_scan_command, KEY_HASH, 2, 20,
                hscan_step)
