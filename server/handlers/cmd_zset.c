/*
 * cmd_zset.c - Redis's sorted set commands, byte for byte as Redis 7.0
 * answers them: ZADD (NX|XX|GT|LT|CH|INCR), ZINCRBY, ZREM, ZSCORE,
 * ZMSCORE, ZCARD, ZCOUNT, ZLEXCOUNT, ZRANGE (BYSCORE|BYLEX, REV, LIMIT,
 * WITHSCORES), ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX,
 * ZREMRANGEBYSCORE/RANK/LEX, ZRANK, ZREVRANK, ZPOPMIN, ZPOPMAX, ZSCAN,
 * ZMPOP and the blocking BZPOPMIN, BZPOPMAX and BZMPOP (served by
 * serve_zpop() once blocked.c finds a key they wait on ready),
 * ZRANGESTORE (ZRANGE's range stored whole as a key, coll_store()) and
 * ZRANDMEMBER (random like Redis's; what Redis determines, the same).
 * The algebra (ZUNION...) is cmd_zalg.c's.
 *
 * The set is lib/zset.h's, in place in the key's record. Checks come in
 * Redis's order (options, then numbers, then the key's type), since which
 * error a bad request gets is part of the reply. A write reaches the
 * journal and the replicas as one element effect per command (the
 * members' new scores, or the members removed), and the watchers hear of
 * it only when something changed, as Redis signals a modified key.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/rand.h"
#include "lib/num.h"
#include "lib/zset.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/blocked.h"
#include "server/keyspace.h"
#include "server/notify.h"

#define ERR_NAN "ERR resulting score is not a number (NaN)"
#define ERR_RANGE_FLOAT "ERR min or max is not a float"
#define ERR_RANGE_LEX "ERR min or max not valid string range item"

/* ---- lookup and writing ---------------------------------------------------- */

static bool
lookup(struct conn *c, const struct resp_request *req, enum lookup_kind kind,
       struct store_rec **r)
{
    return coll_lookup(c, req->argv[1], req->argvlen[1], KEY_ZSET, kind,
                       clock_wall_now(), r);
}

static struct zset *
zs_of(struct store_rec *r)
{
    return store_rec_state(r);
}

/*
 * One command's change of a set: the watchers hear of it and its effect
 * is started at the first element changed (none: nothing to say), each
 * changed element is added to the effect, and the effect ends it.
 */
struct zwrite {
    struct store_rec *r;
    struct membuf *b;       /* the effect's payload; NULL: none wanted */
    bool begun;
    bool whole;             /* no memory for the payload: the whole key */
};

static void
zw_touch(struct zwrite *w)
{
    if (!w->begun) {
        w->begun = true;
        w->b = keyspace_elem_begin(w->r);
    }
}

static void
zw_added(struct zwrite *w, const void *m, size_t len, double score)
{
    zw_touch(w);
    if (w->b != NULL && !w->whole && !zset_effect_add(w->b, m, len, score)) {
        w->whole = true;
    }
}

static void
zw_removed(struct zwrite *w, const void *m, size_t len)
{
    zw_touch(w);
    if (w->b != NULL && !w->whole && !zset_effect_rem(w->b, m, len)) {
        w->whole = true;
    }
}

/* The effect out, the command's event published when an element changed
 * (Redis's "zadd", "zrem", "zpopmin"...), and the key gone when it holds
 * nothing. */
static void
zw_end(struct zwrite *w, uint8_t op, const char *event)
{
    if (w->begun && w->b != NULL) {
        if (w->whole) {
            keyspace_written(w->r);
        } else {
            keyspace_elem_end(w->r, op);
        }
    }
    if (w->begun) {
        notify_key(NOTIFY_ZSET, event, store_rec_key(w->r),
                   store_rec_keylen(w->r), srv.db);
    }
    (void)keyspace_coll_done(w->r);
}

/* ---- ZADD, ZINCRBY ---------------------------------------------------------- */

struct zadd_opts {
    unsigned flags;
    bool ch;
    size_t first;           /* argv index of the first score */
    size_t pairs;
};

/* Redis's zaddGenericCommand() up to its lookup: false after the error. */
static bool
zadd_parse(struct conn *c, const struct resp_request *req,
           struct zadd_opts *o)
{
    size_t i = 2;
    for (; i < req->argc; i++) {
        if (cmd_arg_is(req, i, "NX")) {
            o->flags |= ZSET_NX;
        } else if (cmd_arg_is(req, i, "XX")) {
            o->flags |= ZSET_XX;
        } else if (cmd_arg_is(req, i, "CH")) {
            o->ch = true;
        } else if (cmd_arg_is(req, i, "INCR")) {
            o->flags |= ZSET_INCR;
        } else if (cmd_arg_is(req, i, "GT")) {
            o->flags |= ZSET_GT;
        } else if (cmd_arg_is(req, i, "LT")) {
            o->flags |= ZSET_LT;
        } else {
            break;
        }
    }
    size_t n = req->argc - i;
    unsigned f = o->flags;
    if (n == 0 || n % 2 != 0) {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    if ((f & ZSET_NX) && (f & ZSET_XX)) {
        cmd_error(c, "ERR XX and NX options at the same time are not "
                     "compatible");
        return false;
    }
    if (((f & ZSET_GT) && (f & ZSET_NX)) || ((f & ZSET_LT) && (f & ZSET_NX)) ||
        ((f & ZSET_GT) && (f & ZSET_LT))) {
        cmd_error(c, "ERR GT, LT, and/or NX options at the same time are "
                     "not compatible");
        return false;
    }
    o->first = i;
    o->pairs = n / 2;
    if ((f & ZSET_INCR) && o->pairs > 1) {
        cmd_error(c, "ERR INCR option supports a single increment-element "
                     "pair");
        return false;
    }
    return true;
}

/* Every pair's score, before anything changes (all or nothing). */
static double *
zadd_scores(struct conn *c, const struct resp_request *req,
            const struct zadd_opts *o)
{
    double *scores = mem_malloc(o->pairs * sizeof(double));
    if (scores == NULL) {
        cmd_error(c, ERR_NOMEM);
        return NULL;
    }
    for (size_t j = 0; j < o->pairs; j++) {
        size_t a = o->first + 2 * j;
        if (!num_parse_double(req->argv[a], req->argvlen[a], &scores[j])) {
            cmd_error(c, ERR_NOT_FLOAT);
            mem_free(scores);
            return NULL;
        }
    }
    return scores;
}

static void
zadd_reply(struct conn *c, const struct zadd_opts *o, int64_t added,
           int64_t updated, size_t processed, double score)
{
    if (o->flags & ZSET_INCR) {
        if (processed > 0) {
            reply_double(&c->out, score, c->proto);
        } else {
            reply_null(&c->out, c->proto);
        }
    } else {
        reply_int(&c->out, o->ch ? added + updated : added);
    }
}

/* Memory the pairs may take. */
static size_t
zadd_need(const struct zset *z, const struct resp_request *req,
          const struct zadd_opts *o)
{
    size_t bytes = 0, maxlen = 0;
    for (size_t j = 0; j < o->pairs; j++) {
        size_t len = req->argvlen[o->first + 2 * j + 1];
        bytes += len;
        maxlen = len > maxlen ? len : maxlen;
    }
    return zset_add_cost(z, o->pairs, bytes, maxlen);
}

static void
zadd_generic(struct conn *c, struct resp_request *req, unsigned flags)
{
    struct zadd_opts o = { .flags = flags };
    if (!zadd_parse(c, req, &o)) {
        return;
    }
    double *scores = zadd_scores(c, req, &o);
    struct store_rec *r;
    if (scores == NULL) {
        return;
    }
    if (!lookup(c, req, LOOKUP_WRITE, &r)) {
        mem_free(scores);
        return;
    }
    if (r == NULL && (o.flags & ZSET_XX)) {
        zadd_reply(c, &o, 0, 0, 0, 0);
        mem_free(scores);
        return;
    }
    static const struct zset empty;
    r = coll_reserve(c, req->argv[1], req->argvlen[1], KEY_ZSET, r,
                     zadd_need(r != NULL ? zs_of(r) : &empty, req, &o));
    if (r == NULL) {
        mem_free(scores);
        return;
    }
    struct zwrite w = { .r = r };
    int64_t added = 0, updated = 0;
    size_t processed = 0;
    double score = 0;
    const char *err = NULL;
    for (size_t j = 0; j < o.pairs && err == NULL; j++) {
        size_t a = o.first + 2 * j + 1;
        double ns = 0;
        enum zset_add_rc rc = zset_add(zs_of(r), req->argv[a],
                                       req->argvlen[a], scores[j], o.flags,
                                       &ns);
        switch (rc) {
        case ZSET_NAN:
            err = ERR_NAN;
            break;
        case ZSET_NOMEM:
            err = ERR_NOMEM;
            break;
        case ZSET_ADDED:
        case ZSET_UPDATED:
            added += rc == ZSET_ADDED;
            updated += rc == ZSET_UPDATED;
            zw_added(&w, req->argv[a], req->argvlen[a], ns);
            /* fall through */
        case ZSET_SAME:
            processed++;
            score = ns;
            break;
        case ZSET_NOP:
            break;
        }
    }
    mem_free(scores);
    zw_end(&w, ZSET_OP_ADD, (o.flags & ZSET_INCR) ? "zincr" : "zadd");
    if (err != NULL) {
        cmd_error(c, err);
        return;
    }
    zadd_reply(c, &o, added, updated, processed, score);
}

HANDLER_VARIANT(zadd_command, zadd_generic, 0)
HANDLER_VARIANT(zincrby_command, zadd_generic, ZSET_INCR)

/* ---- ZREM, reading one member ------------------------------------------------ */

void
zrem_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        reply_int(&c->out, 0);
        return;
    }
    struct zwrite w = { .r = r };
    int64_t deleted = 0;
    for (size_t j = 2; j < req->argc; j++) {
        if (zset_remove(zs_of(r), req->argv[j], req->argvlen[j])) {
            deleted++;
            zw_removed(&w, req->argv[j], req->argvlen[j]);
        }
        if (zset_len(zs_of(r)) == 0) {
            break;
        }
    }
    zw_end(&w, ZSET_OP_REM, "zrem");
    reply_int(&c->out, deleted);
}

void
zcard_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup(c, req, LOOKUP_READ, &r)) {
        return;
    }
    reply_int(&c->out, r == NULL ? 0 : (int64_t)zset_len(zs_of(r)));
}

void
zscore_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    double s;
    if (!lookup(c, req, LOOKUP_READ, &r)) {
        return;
    }
    if (r == NULL ||
        !zset_score(zs_of(r), req->argv[2], req->argvlen[2], &s)) {
        reply_null(&c->out, c->proto);
    } else {
        reply_double(&c->out, s, c->proto);
    }
}

void
zmscore_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup(c, req, LOOKUP_READ, &r)) {
        return;
    }
    reply_array(&c->out, req->argc - 2);
    for (size_t j = 2; j < req->argc; j++) {
        double s;
        if (r == NULL ||
            !zset_score(zs_of(r), req->argv[j], req->argvlen[j], &s)) {
            reply_null(&c->out, c->proto);
        } else {
            reply_double(&c->out, s, c->proto);
        }
    }
}

static void
zrank_generic(struct conn *c, struct resp_request *req, bool reverse)
{
    struct store_rec *r;
    uint64_t rank;
    if (!lookup(c, req, LOOKUP_READ, &r)) {
        return;
    }
    if (r == NULL || !zset_rank(zs_of(r), req->argv[2], req->argvlen[2],
                                reverse, &rank)) {
        reply_null(&c->out, c->proto);
    } else {
        reply_int(&c->out, (int64_t)rank);
    }
}

HANDLER_VARIANT(zrank_command, zrank_generic, false)
HANDLER_VARIANT(zrevrank_command, zrank_generic, true)

/* ---- ranges: parsing ------------------------------------------------------------ */

/* One bound of a score range as Redis's zslParseRange() reads it: "(" for
 * an open one, then strtod() over the rest up to its NUL (so leading
 * blanks, "", hex and "inf" pass, and bytes after a NUL inside are not
 * looked at), nothing after the number, no NaN. s is an argument: a NUL
 * follows its len bytes (resp.h). */
static bool
parse_score_bound(const char *s, size_t len, double *v, bool *ex)
{
    *ex = len > 0 && s[0] == '(';
    return num_strtod_str(s + *ex, v) && !isnan(*v);
}

static bool
parse_range(const struct resp_request *req, size_t min, size_t max,
            struct zset_range *r)
{
    return parse_score_bound(req->argv[min], req->argvlen[min], &r->min,
                             &r->minex) &&
           parse_score_bound(req->argv[max], req->argvlen[max], &r->max,
                             &r->maxex);
}

/* One bound of a lex range as zslParseLexRangeItem() reads it ("-" and
 * "+" alone, as C strings; else "(" or "[" and the bytes). */
static bool
parse_lex_bound(const char *s, size_t len, struct zset_lex_bound *b)
{
    *b = (struct zset_lex_bound){ 0 };
    if (len == 0) {
        return false;
    }
    switch (s[0]) {
    case '+':
    case '-':
        if (len > 1 && s[1] != '\0') {
            return false;
        }
        b->inf = s[0] == '+' ? 1 : -1;
        b->ex = true;
        return true;
    case '(':
    case '[':
        b->ex = s[0] == '(';
        b->s = (const unsigned char *)s + 1;
        b->len = len - 1;
        return true;
    default:
        return false;
    }
}

static bool
parse_lex(const struct resp_request *req, size_t min, size_t max,
          struct zset_lex *r)
{
    return parse_lex_bound(req->argv[min], req->argvlen[min], &r->min) &&
           parse_lex_bound(req->argv[max], req->argvlen[max], &r->max);
}

/* ---- the ZRANGE family -------------------------------------------------------- */

enum rtype { BY_AUTO, BY_RANK, BY_SCORE, BY_LEX };
enum rdir { DIR_AUTO, DIR_FWD, DIR_REV };

/* ZRANGESTORE's result, built as the range is walked. */
struct zrange_dst {
    struct zset z;
    bool oom;
};

struct zrange {
    enum rtype type;
    enum rdir dir;
    bool withscores;
    size_t at;              /* argv index of the key (ZRANGESTORE's 2) */
    struct zrange_dst *into;    /* ZRANGESTORE; NULL: replies */
    int64_t offset;
    int64_t limit;          /* -1: none */
    int64_t start, end;     /* BY_RANK */
    struct zset_range score;
    struct zset_lex lex;
};

/* q's range (of q->type) from argv[min] and argv[max]; false after the
 * error. */
static bool
parse_bounds(struct conn *c, const struct resp_request *req, size_t min,
             size_t max, struct zrange *q)
{
    if (q->type == BY_RANK) {
        if (!num_parse_i64(req->argv[min], req->argvlen[min], &q->start) ||
            !num_parse_i64(req->argv[max], req->argvlen[max], &q->end)) {
            cmd_error(c, ERR_NOT_INTEGER);
            return false;
        }
    } else if (q->type == BY_SCORE) {
        if (!parse_range(req, min, max, &q->score)) {
            cmd_error(c, ERR_RANGE_FLOAT);
            return false;
        }
    } else if (!parse_lex(req, min, max, &q->lex)) {
        cmd_error(c, ERR_RANGE_LEX);
        return false;
    }
    return true;
}

/* ---- ZCOUNT, ZLEXCOUNT -------------------------------------------------------- */

static void
zcount_generic(struct conn *c, struct resp_request *req, enum rtype type)
{
    struct zrange q = { .type = type };
    struct store_rec *r;
    if (!parse_bounds(c, req, 2, 3, &q) ||
        !lookup(c, req, LOOKUP_READ, &r)) {
        return;
    }
    uint64_t n = 0;
    if (r != NULL) {
        n = type == BY_SCORE ? zset_count_range(zs_of(r), &q.score)
                             : zset_count_lex(zs_of(r), &q.lex);
    }
    reply_int(&c->out, (int64_t)n);
}

HANDLER_VARIANT(zcount_command, zcount_generic, BY_SCORE)
HANDLER_VARIANT(zlexcount_command, zcount_generic, BY_LEX)

/* One member of a range reply. */
static void
reply_member(struct conn *c, bool withscores, const unsigned char *m,
             size_t len, double score)
{
    if (withscores && c->proto >= 3) {
        reply_array(&c->out, 2);
    }
    reply_bulk(&c->out, m, len);
    if (withscores) {
        reply_double(&c->out, score, c->proto);
    }
}

static void
reply_range_len(struct conn *c, bool withscores, uint64_t n)
{
    reply_array(&c->out, withscores && c->proto < 3 ? 2 * n : n);
}

/* One member of a range: into the reply, or into ZRANGESTORE's result. */
static void
emit_member(struct conn *c, const struct zrange *q, const unsigned char *m,
            size_t len, double score)
{
    double ns;
    if (q->into == NULL) {
        reply_member(c, q->withscores, m, len, score);
    } else if (zset_add(&q->into->z, m, len, score, 0, &ns) == ZSET_NOMEM) {
        q->into->oom = true;
    }
}

static void
zrange_rank(struct conn *c, const struct zset *z, const struct zrange *q)
{
    uint64_t llen = zset_len(z), start, end;
    bool rev = q->dir == DIR_REV;
    if (!coll_rank_range(q->start, q->end, llen, &start, &end)) {
        if (q->into == NULL) {
            reply_array(&c->out, 0);
        }
        return;
    }
    uint64_t n = end - start + 1;
    if (q->into == NULL) {
        reply_range_len(c, q->withscores, n);
    } else if (n > ZSET_PACK_MAX_ENTRIES && !zset_make_large(&q->into->z)) {
        q->into->oom = true;    /* Redis makes a known large result so */
        return;
    }
    struct zset_iter it;
    zset_iter_at(&it, z, rev ? llen - 1 - start : start);
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *m;
        size_t len;
        double s;
        zset_iter_get(&it, &m, &len, &s);
        emit_member(c, q, m, len, s);
        (void)(rev ? zset_iter_prev(&it) : zset_iter_next(&it));
    }
}

/* Is the member still in the range, walking away from where it starts? */
static bool
still_in(const unsigned char *m, size_t len, double s, const void *arg)
{
    const struct zrange *q = arg;
    bool rev = q->dir == DIR_REV;
    if (q->type == BY_SCORE) {
        return rev ? zset_score_gte_min(s, &q->score)
                   : zset_score_lte_max(s, &q->score);
    }
    return rev ? zset_lex_gte_min(m, len, &q->lex)
               : zset_lex_lte_max(m, len, &q->lex);
}

/*
 * The members of a score or lex range after offset, at most limit, as
 * genericZrangebyscoreCommand() and genericZrangebylexCommand() walk
 * them: from the first in range (the last, reversed), past offset
 * members unchecked, then while in range. reply false: only count.
 */
static uint64_t
zrange_walk(struct conn *c, const struct zset *z, const struct zrange *q,
            bool reply)
{
    bool rev = q->dir == DIR_REV, found;
    uint64_t at, n = 0;
    if (q->offset > 0 && (uint64_t)q->offset >= zset_len(z)) {
        return 0;
    }
    if (q->type == BY_SCORE) {
        found = rev ? zset_last_in_range(z, &q->score, &at)
                    : zset_first_in_range(z, &q->score, &at);
    } else {
        found = rev ? zset_last_in_lex(z, &q->lex, &at)
                    : zset_first_in_lex(z, &q->lex, &at);
    }
    if (!found || q->offset < 0) {
        return 0;       /* a negative offset walks past the end */
    }
    uint64_t off = (uint64_t)q->offset;
    if (rev ? off > at : off >= zset_len(z) - at) {
        return 0;
    }
    struct zset_iter it;
    zset_iter_at(&it, z, rev ? at - off : at + off);
    int64_t limit = q->limit;
    do {
        const unsigned char *m;
        size_t len;
        double s;
        if (limit-- == 0) {
            break;
        }
        zset_iter_get(&it, &m, &len, &s);
        if (!still_in(m, len, s, q)) {
            break;
        }
        if (reply) {
            emit_member(c, q, m, len, s);
        }
        n++;
    } while (rev ? zset_iter_prev(&it) : zset_iter_next(&it));
    return n;
}

/* Options after key, min and max, as zrangeGenericCommand() takes them. */
static bool
zrange_opts(struct conn *c, const struct resp_request *req,
            struct zrange *q)
{
    for (size_t j = q->at + 3; j < req->argc; j++) {
        size_t left = req->argc - j - 1;
        if (q->into == NULL && cmd_arg_is(req, j, "WITHSCORES")) {
            q->withscores = true;
        } else if (cmd_arg_is(req, j, "LIMIT") && left >= 2) {
            if (!num_parse_i64(req->argv[j + 1], req->argvlen[j + 1],
                               &q->offset) ||
                !num_parse_i64(req->argv[j + 2], req->argvlen[j + 2],
                               &q->limit)) {
                cmd_error(c, ERR_NOT_INTEGER);
                return false;
            }
            j += 2;
        } else if (q->dir == DIR_AUTO && cmd_arg_is(req, j, "REV")) {
            q->dir = DIR_REV;
        } else if (q->type == BY_AUTO && cmd_arg_is(req, j, "BYLEX")) {
            q->type = BY_LEX;
        } else if (q->type == BY_AUTO && cmd_arg_is(req, j, "BYSCORE")) {
            q->type = BY_SCORE;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

/* The options and the range of a ZRANGE family request, checked in
 * Redis's order; false after the error. */
static bool
zrange_parse(struct conn *c, const struct resp_request *req,
             struct zrange *q)
{
    size_t min = q->at + 1, max = q->at + 2;
    if (!zrange_opts(c, req, q)) {
        return false;
    }
    if (q->dir == DIR_AUTO) {
        q->dir = DIR_FWD;
    }
    if (q->type == BY_AUTO) {
        q->type = BY_RANK;
    }
    if (q->limit != -1 && q->type == BY_RANK) {
        cmd_error(c, "ERR syntax error, LIMIT is only supported in "
                     "combination with either BYSCORE or BYLEX");
        return false;
    }
    if (q->withscores && q->type == BY_LEX) {
        cmd_error(c, "ERR syntax error, WITHSCORES not supported in "
                     "combination with BYLEX");
        return false;
    }
    if (q->dir == DIR_REV && q->type != BY_RANK) {
        min = q->at + 2;    /* the range is given as max, min */
        max = q->at + 1;
    }
    return parse_bounds(c, req, min, max, q);
}

/* The range's members from z: into the reply or q's result. */
static void
zrange_run(struct conn *c, const struct zset *z, const struct zrange *q)
{
    if (q->type == BY_RANK) {
        zrange_rank(c, z, q);
        return;
    }
    if (q->into == NULL) {
        reply_range_len(c, q->withscores, zrange_walk(c, z, q, false));
    }
    (void)zrange_walk(c, z, q, true);
}

static void
zrange_generic(struct conn *c, struct resp_request *req, enum rtype type,
               enum rdir dir)
{
    struct zrange q = { .type = type, .dir = dir, .limit = -1, .at = 1 };
    struct store_rec *r;
    if (!zrange_parse(c, req, &q) || !lookup(c, req, LOOKUP_READ, &r)) {
        return;
    }
    if (r == NULL) {
        reply_array(&c->out, 0);
        return;
    }
    zrange_run(c, zs_of(r), &q);
}

/* ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]:
 * ZRANGE's range of src, stored whole as dst (deleted when empty). */
void
zrangestore_command(struct conn *c, struct resp_request *req)
{
    struct zrange_dst dst = { .oom = false };
    struct zrange q = { .type = BY_AUTO, .dir = DIR_AUTO, .limit = -1,
                        .at = 2, .into = &dst };
    if (!zrange_parse(c, req, &q)) {
        return;
    }
    struct key_hint h = { 0 };
    struct store_rec *r = keyspace_lookup(&h, req->argv[2], req->argvlen[2],
                                          clock_wall_now());
    if (r != NULL && r->type != KEY_ZSET) {
        cmd_error(c, ERR_WRONGTYPE);
        return;
    }
    if (r != NULL) {
        zrange_run(c, zs_of(r), &q);
    }
    if (dst.oom) {
        cmd_error(c, ERR_NOMEM);
    } else if (coll_store(c, req->argv[1], req->argvlen[1], KEY_ZSET, &dst.z,
                          zset_len(&dst.z))) {
        notify_key(NOTIFY_ZSET, "zrangestore", req->argv[1], req->argvlen[1],
                   srv.db);
        return;                         /* dst.z is the key's now */
    }
    zset_free(&dst.z);
}

HANDLER_VARIANT(zrange_command, zrange_generic, BY_AUTO, DIR_AUTO)
HANDLER_VARIANT(zrevrange_command, zrange_generic, BY_RANK, DIR_REV)
HANDLER_VARIANT(zrangebyscore_command, zrange_generic, BY_SCORE, DIR_FWD)
HANDLER_VARIANT(zrevrangebyscore_command, zrange_generic, BY_SCORE, DIR_REV)
HANDLER_VARIANT(zrangebylex_command, zrange_generic, BY_LEX, DIR_FWD)
HANDLER_VARIANT(zrevrangebylex_command, zrange_generic, BY_LEX, DIR_REV)

/* ---- removing ranges ---------------------------------------------------------- */

/* The n members from rank first removed: each one into the effect. */
static void
remove_ranks(struct zwrite *w, uint64_t first, uint64_t n)
{
    struct zset *z = zs_of(w->r);
    if (n == 0) {
        return;
    }
    struct zset_iter it;
    zset_iter_at(&it, z, first);
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *m;
        size_t len;
        double s;
        zset_iter_get(&it, &m, &len, &s);
        zw_removed(w, m, len);
        (void)zset_iter_next(&it);
    }
    zset_remove_ranks(z, first, n);
}

/* The rank of the first member a ZREMRANGEBYSCORE/LEX deletes (Redis
 * then deletes while the members stay within max). */
static bool
remove_start(const struct zset *z, const struct zrange *q, uint64_t *at)
{
    return q->type == BY_SCORE ? zset_first_in_range(z, &q->score, at)
                               : zset_first_in_lex(z, &q->lex, at);
}

static void
zremrange_generic(struct conn *c, struct resp_request *req, enum rtype type)
{
    struct zrange q = { .type = type, .dir = DIR_FWD, .limit = -1 };
    struct store_rec *r;
    if (!parse_bounds(c, req, 2, 3, &q) ||
        !lookup(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        reply_int(&c->out, 0);
        return;
    }
    struct zset *z = zs_of(r);
    uint64_t first = 0, n = 0;
    if (type == BY_RANK) {
        uint64_t last;
        if (!coll_rank_range(q.start, q.end, zset_len(z), &first, &last)) {
            reply_int(&c->out, 0);
            return;
        }
        n = last - first + 1;
    } else if (remove_start(z, &q, &first)) {
        n = zset_run_while(z, first, still_in, &q);
    }
    struct zwrite w = { .r = r };
    static const char *const events[] = {
        [BY_RANK] = "zremrangebyrank", [BY_SCORE] = "zremrangebyscore",
        [BY_LEX] = "zremrangebylex",
    };
    remove_ranks(&w, first, n);
    zw_end(&w, ZSET_OP_REM, events[type]);
    reply_int(&c->out, (int64_t)n);
}

HANDLER_VARIANT(zremrangebyrank_command, zremrange_generic, BY_RANK)
HANDLER_VARIANT(zremrangebyscore_command, zremrange_generic, BY_SCORE)
HANDLER_VARIANT(zremrangebylex_command, zremrange_generic, BY_LEX)

/* ---- ZPOPMIN, ZPOPMAX ----------------------------------------------------------- */

/* Pop n members (n at most the set's size) from r's low end (or high:
 * max), each replied after the caller's header: member and score, or
 * within an array of its own (nested). */
static void
zpop_members(struct conn *c, struct store_rec *r, bool max, uint64_t n,
             bool nested)
{
    struct zset *z = zs_of(r);
    uint64_t len = zset_len(z);
    struct zset_iter it;
    zset_iter_at(&it, z, max ? len - 1 : 0);
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *m;
        size_t mlen;
        double s;
        zset_iter_get(&it, &m, &mlen, &s);
        if (nested) {
            reply_array(&c->out, 2);
        }
        reply_bulk(&c->out, m, mlen);
        reply_double(&c->out, s, c->proto);
        (void)(max ? zset_iter_prev(&it) : zset_iter_next(&it));
    }
    struct zwrite w = { .r = r };
    remove_ranks(&w, max ? len - n : 0, n);
    zw_end(&w, ZSET_OP_REM, max ? "zpopmax" : "zpopmin");
}

static void
zpop_generic(struct conn *c, struct resp_request *req, bool max)
{
    int64_t count = -1;
    if (req->argc > 3) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (req->argc == 3) {
        if (!num_parse_i64(req->argv[2], req->argvlen[2], &count) ||
            count < 0) {
            cmd_error(c, ERR_POSITIVE);
            return;
        }
    }
    struct store_rec *r;
    if (!lookup(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL || count == 0) {
        reply_array(&c->out, 0);
        return;
    }
    bool nested = c->proto >= 3 && count != -1;
    uint64_t len = zset_len(zs_of(r)), n = count == -1 ? 1 : (uint64_t)count;
    n = n > len ? len : n;
    reply_array(&c->out, nested ? n : 2 * n);
    zpop_members(c, r, max, n, nested);
}

HANDLER_VARIANT(zpopmin_command, zpop_generic, false)
HANDLER_VARIANT(zpopmax_command, zpop_generic, true)

/* ---- ZMPOP and the blocking pops ----------------------------------------------- */

/* Pop from r (key's set): BZPOPMIN's [key, member, score] (count -1), or
 * ZMPOP's [key, [[member, score] ...]] of up to count members. */
static void
zpop_keyed(struct conn *c, struct store_rec *r, const char *key, size_t len,
           bool min, int64_t count)
{
    uint64_t size = zset_len(zs_of(r));
    uint64_t n = count < 0 ? 1 : (uint64_t)count;
    n = n < size ? n : size;
    reply_array(&c->out, count < 0 ? 3 : 2);
    reply_bulk(&c->out, key, len);
    if (count >= 0) {
        reply_array(&c->out, n);
    }
    zpop_members(c, r, !min, n, count >= 0);
}

static enum blocked_served serve_zpop(struct conn *c,
                                      const struct resp_request *req,
                                      const char *key, size_t len);

static const struct coll_pops zset_pops = {
    .type = KEY_ZSET, .kind = BLOCKED_ZSET, .w0 = "MIN", .w1 = "MAX",
    .bpop_first = "BZPOPMIN", .bmpop = "BZMPOP", .pop = zpop_keyed,
    .serve = serve_zpop,
};

/* BZPOPMIN's, BZPOPMAX's and BZMPOP's turn on a ready key. */
static enum blocked_served
serve_zpop(struct conn *c, const struct resp_request *req, const char *key,
           size_t len)
{
    return coll_pops_serve(c, req, key, len, &zset_pops);
}

HANDLER_VARIANT(zmpop_command, coll_mpop_command, &zset_pops)
HANDLER_VARIANT(bzmpop_command, coll_bmpop_command, &zset_pops)
HANDLER_VARIANT(bzpopmin_command, coll_bpop_command, &zset_pops, true)
HANDLER_VARIANT(bzpopmax_command, coll_bpop_command, &zset_pops, false)

/* ---- ZRANDMEMBER ------------------------------------------------------------------ */

/* The member of rank `rank` as a range reply's member. */
static void
reply_rank(struct conn *c, const struct zset *z, uint64_t rank, bool with)
{
    struct zset_iter it;
    const unsigned char *m;
    size_t len;
    double s;
    zset_iter_at(&it, z, rank);
    zset_iter_get(&it, &m, &len, &s);
    reply_member(c, with, m, len, s);
}

/* count distinct members of the n in z (count < n), in random order. */
static void
zrand_distinct(struct conn *c, const struct zset *z, uint64_t n,
               uint64_t count, bool with)
{
    uint64_t *picks = mem_malloc(count * sizeof(uint64_t));
    if (picks == NULL || !coll_random_distinct(n, count, picks)) {
        mem_free(picks);
        cmd_error(c, ERR_NOMEM);
        return;
    }
    reply_range_len(c, with, count);
    for (uint64_t i = 0; i < count; i++) {
        reply_rank(c, z, picks[i], with);
    }
    mem_free(picks);
}

/* As Redis's zrandmemberWithCountCommand(): a negative count draws with
 * repeats, a count of the set's size or more answers it whole (from its
 * highest member, as Redis walks it), a smaller one distinct members. */
static void
zrand_count(struct conn *c, struct store_rec *r, int64_t count, bool with)
{
    const struct zset *z = zs_of(r);
    uint64_t n = zset_len(z);
    if (count < 0 || count == 1) {
        uint64_t draws = count < 0 ? 0 - (uint64_t)count : 1;
        reply_range_len(c, with, draws);
        for (uint64_t i = 0; i < draws && !coll_reply_full(c); i++) {
            reply_rank(c, z, rand_below(n), with);
        }
    } else if ((uint64_t)count >= n) {
        reply_range_len(c, with, n);
        for (uint64_t i = n; i > 0; i--) {
            reply_rank(c, z, i - 1, with);
        }
    } else {
        zrand_distinct(c, z, n, (uint64_t)count, with);
    }
}

/* ZRANDMEMBER key: one member, a bulk string. */
static void
zrand_one(struct conn *c, struct store_rec *r)
{
    reply_rank(c, zs_of(r), rand_below(zset_len(zs_of(r))), false);
}

HANDLER_VARIANT(zrandmember_command, coll_rand_command, KEY_ZSET,
                "WITHSCORES", zrand_one, zrand_count)

/* ---- ZSCAN ---------------------------------------------------------------------- */

struct scan_item {
    const unsigned char *m;
    size_t len;
    double score;
};

struct scan_acc {
    struct membuf items;    /* struct scan_item */
    bool oom;
};

static void
scan_collect(const unsigned char *m, size_t len, double score, void *arg)
{
    struct scan_acc *acc = arg;
    struct scan_item it = { m, len, score };
    if (!acc->oom && !membuf_put(&acc->items, &it, sizeof(it))) {
        acc->oom = true;
    }
}

/* A score as ZSCAN gives it: the text a small sorted set's listpack
 * holds (an integral score as its integer), or a large one's "%.17Lg";
 * inf and -inf. */
static void
reply_scan_score(struct conn *c, double s, bool compact)
{
    char buf[64];
    size_t n = compact ? num_score_text(buf, sizeof(buf), s)
             : (size_t)(isinf(s) ? snprintf(buf, sizeof(buf), s > 0 ? "inf" : "-inf")
                                 : snprintf(buf, sizeof(buf), "%.17g", s));
    reply_bulk(&c->out, buf, n);
}

void
zscan_command(struct conn *c, struct resp_request *req)
{
    uint64_t cursor;
    struct store_rec *r;
    struct scan_opts o;
    if (!coll_scan_start(c, req, KEY_ZSET, &cursor, &r, &o)) {
        return;
    }
    const struct zset *z = zs_of(r);
    struct scan_acc acc = { { 0 }, false };
    if (zset_is_compact(z)) {
        cursor = zset_scan(z, 0, scan_collect, &acc);
    } else {
        /* As Redis: COUNT counts members and scores, and at most ten
         * times as many buckets are visited. */
        int64_t count = o.count > INT64_MAX / 2 ? INT64_MAX : o.count * 2;
        int64_t maxit = count > INT64_MAX / 10 ? INT64_MAX : count * 10;
        do {
            cursor = zset_scan(z, cursor, scan_collect, &acc);
        } while (cursor != 0 && maxit-- != 0 &&
                 (int64_t)(2 * acc.items.len / sizeof(struct scan_item)) <
                     count);
    }
    if (acc.oom) {
        mem_free(acc.items.p);
        cmd_error(c, ERR_NOMEM);
        return;
    }
    struct scan_item *items = (struct scan_item *)acc.items.p;
    size_t n = acc.items.len / sizeof(struct scan_item), kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (coll_scan_match(&o, items[i].m, items[i].len)) {
            items[kept++] = items[i];
        }
    }
    coll_scan_reply_head(c, cursor, 2 * kept);
    for (size_t i = 0; i < kept; i++) {
        reply_bulk(&c->out, items[i].m, items[i].len);
        reply_scan_score(c, items[i].score, zset_is_compact(z));
    }
    mem_free(acc.items.p);
}
