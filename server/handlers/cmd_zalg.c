/*
 * cmd_zalg.c - Redis's sorted-set algebra, byte for byte as Redis 7.0
 * answers it: ZUNION, ZINTER, ZDIFF (WITHSCORES), their STORE forms
 * ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, with WEIGHTS and AGGREGATE
 * SUM|MIN|MAX, and ZINTERCARD (LIMIT).
 *
 * As Redis's zunionInterDiffGenericCommand() does, in its order of checks
 * (numkeys, then every input key's type, then the options): the inputs
 * are read, sorted by size for a union or an intersection (stably, as
 * glibc's qsort sorts Redis's), and the result built as a new sorted set
 * (lib/zset.h), which a STORE form hands to its destination whole
 * (coll_store(): any type replaced, its expiry gone, or the key deleted
 * when the result is empty) and the read forms answer from. The order in
 * which scores meet matters where floats round and where inf meets -inf
 * or 0 (a NaN becomes 0, as in Redis), so it is Redis's: an intersection
 * walks the smallest input and adds each other input's score in size
 * order; a union aggregates each member's scores in the inputs' order.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/set.h"
#include "lib/zset.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/notify.h"

enum zalg_op { OP_UNION, OP_INTER, OP_DIFF, OP_INTERCARD };
enum zalg_aggr { AGGR_SUM, AGGR_MIN, AGGR_MAX };
/* AGGREGATE's words, in enum zalg_aggr's order. */
static const char *const aggregates[] = { "SUM", "MIN", "MAX" };

/* ---- the inputs ------------------------------------------------------------
 *
 * One input key: its members with their scores, as Redis's zuiNext() and
 * zuiFind() read any input: a sorted set, or a set (lib/set.h), whose
 * members each score 1.
 */
struct zinput {
    const struct zset *z;   /* a sorted set, or NULL */
    const struct set *set;  /* a set, or NULL (both NULL: absent, empty) */
    uint64_t len;
    double weight;
    size_t pos;             /* its place among the keys */
};

/* Input key argv[i] into *in; false (-WRONGTYPE sent) for a key of
 * another type. Each is a read (INFO's hits and misses), as Redis's
 * lookupKeyRead(). */
static bool
zin_open(struct conn *c, const struct resp_request *req, size_t i,
         struct zinput *in)
{
    struct key_hint h = { 0 };
    struct store_rec *r = keyspace_lookup(&h, req->argv[i], req->argvlen[i],
                                          clock_wall_now());
    *in = (struct zinput){ .weight = 1 };
    if (r == NULL) {
        return true;
    }
    switch (r->type) {
    case KEY_ZSET:
        in->z = store_rec_state(r);
        in->len = zset_len(in->z);
        return true;
    case KEY_SET:
        in->set = store_rec_state(r);
        in->len = set_len(in->set);
        return true;
    default:
        cmd_error(c, ERR_WRONGTYPE);
        return false;
    }
}

/* Walking an input's members: a sorted set's from its highest as Redis
 * walks one (zuiInitIterator()), a set's in its own order. */
struct zin_iter {
    const struct set *set;
    struct set_iter sit;
    struct zset_iter it;
    bool more;
};

static void
zin_first(const struct zinput *in, struct zin_iter *w)
{
    w->set = in->set;
    w->sit = (struct set_iter){ 0 };
    w->more = in->len > 0;
    if (w->more && in->z != NULL) {
        zset_iter_at(&w->it, in->z, in->len - 1);
    }
}

/* The next member and score; false past the last. */
static bool
zin_next(struct zin_iter *w, const unsigned char **m, size_t *len, double *s)
{
    if (!w->more) {
        return false;
    }
    if (w->set != NULL) {
        struct pack_item it;
        if (!set_next(w->set, &w->sit, &it)) {
            w->more = false;
            return false;
        }
        *m = it.data;
        *len = it.len;
        *s = 1.0;
        return true;
    }
    zset_iter_get(&w->it, m, len, s);
    w->more = zset_iter_prev(&w->it);
    return true;
}

/* m's score in the input; false when it is no member. */
static bool
zin_score(const struct zinput *in, const unsigned char *m, size_t len,
          double *s)
{
    if (in->set != NULL) {
        *s = 1.0;
        return set_has(in->set, m, len);
    }
    return in->z != NULL && zset_score(in->z, m, len, s);
}

/* By size, then by place: a stable sort, as glibc's qsort (a merge sort)
 * leaves Redis's inputs of one size in the order given. */
static int
by_size(const void *a, const void *b)
{
    const struct zinput *x = a, *y = b;
    if (x->len != y->len) {
        return x->len < y->len ? -1 : 1;
    }
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* ---- parsing ------------------------------------------------------------------ */

struct zalg {
    enum zalg_op op;
    const char *name;       /* for the numkeys error */
    bool store;             /* argv[1] is the destination */
    size_t keys_at;         /* argv index of the first input key */
    size_t n;               /* input keys */
    struct zinput *in;
    enum zalg_aggr aggr;
    bool withscores;
    int64_t limit;          /* ZINTERCARD; 0: none */
};

/* numkeys at argv[at], checked as Redis checks it; false after the error. */
static bool
parse_numkeys(struct conn *c, const struct resp_request *req, size_t at,
              struct zalg *q)
{
    int64_t n;
    if (!num_parse_i64(req->argv[at], req->argvlen[at], &n)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (n < 1) {
        cmd_errorf(c, "ERR at least 1 input key is needed for '%s' command",
                   q->name);
        return false;
    }
    if ((uint64_t)n > req->argc - (at + 1)) {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    q->n = (size_t)n;
    q->keys_at = at + 1;
    return true;
}

static bool
parse_weights(struct conn *c, const struct resp_request *req, size_t *j,
              struct zalg *q)
{
    for (size_t i = 0; i < q->n; i++, (*j)++) {
        if (!num_parse_double(req->argv[*j], req->argvlen[*j],
                              &q->in[i].weight)) {
            cmd_error(c, "ERR weight value is not a float");
            return false;
        }
    }
    return true;
}

/* The options after the keys, as Redis takes them: each only where its
 * command has it, WEIGHTS only with a weight for every key. */
static bool
parse_opts(struct conn *c, const struct resp_request *req, struct zalg *q)
{
    bool scored = q->op == OP_UNION || q->op == OP_INTER;
    size_t j = q->keys_at + q->n;
    while (j < req->argc) {
        size_t left = req->argc - j;
        if (scored && left >= q->n + 1 && cmd_arg_is(req, j, "WEIGHTS")) {
            j++;
            if (!parse_weights(c, req, &j, q)) {
                return false;
            }
        } else if (scored && left >= 2 && cmd_arg_is(req, j, "AGGREGATE")) {
            int aggr = cmd_arg_which(req, j + 1, aggregates, 3);
            if (aggr < 0) {
                cmd_error(c, ERR_SYNTAX);
                return false;
            }
            q->aggr = (enum zalg_aggr)aggr;
            j += 2;
        } else if (!q->store && q->op != OP_INTERCARD &&
                   cmd_arg_is(req, j, "WITHSCORES")) {
            q->withscores = true;
            j++;
        } else if (q->op == OP_INTERCARD && left >= 2 &&
                   cmd_arg_is(req, j, "LIMIT")) {
            if (!num_parse_i64(req->argv[j + 1], req->argvlen[j + 1],
                               &q->limit) ||
                q->limit < 0) {
                cmd_error(c, ERR_LIMIT_NEGATIVE);
                return false;
            }
            j += 2;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

/* ---- the operations ------------------------------------------------------- */

/* Redis's zunionInterAggregate(): a sum of inf and -inf is 0. */
static double
aggregate(double target, double val, enum zalg_aggr aggr)
{
    switch (aggr) {
    case AGGR_SUM:
        target += val;
        return isnan(target) ? 0.0 : target;
    case AGGR_MIN:
        return val < target ? val : target;
    case AGGR_MAX:
        return val > target ? val : target;
    }
    return target;
}

/* A weighted score, 0 where it is NaN (inf * 0). */
static double
weighted(const struct zinput *in, double s)
{
    double v = in->weight * s;
    return isnan(v) ? 0.0 : v;
}

/* The result's members with their scores, unordered, pointing into the
 * inputs (which stay as they are until the reply or the store). */
struct zentry {
    const unsigned char *m;
    size_t len;
    double score;
    size_t seq;             /* the union: its input's place */
};

struct zresult {
    struct zentry *e;
    size_t n, cap;
    size_t maxlen;          /* the longest member */
};

static bool
result_push(struct zresult *res, const unsigned char *m, size_t len,
            double score, size_t seq)
{
    if (res->n == res->cap) {
        size_t cap = res->cap == 0 ? 16 : 2 * res->cap;
        struct zentry *e = mem_realloc(res->e, cap * sizeof(*e));
        if (e == NULL) {
            return false;
        }
        res->e = e;
        res->cap = cap;
    }
    res->e[res->n++] = (struct zentry){ m, len, score, seq };
    res->maxlen = len > res->maxlen ? len : res->maxlen;
    return true;
}

/* The members of the smallest input found in every other, scored by
 * AGGREGATE; ZINTERCARD only counts them (up to its limit). */
static bool
op_inter(const struct zalg *q, struct zresult *res, uint64_t *count)
{
    struct zin_iter w;
    const unsigned char *m;
    size_t len;
    double s;
    zin_first(&q->in[0], &w);
    while (zin_next(&w, &m, &len, &s)) {
        double score = weighted(&q->in[0], s), v;
        size_t j = 1;
        for (; j < q->n && zin_score(&q->in[j], m, len, &v); j++) {
            score = aggregate(score, v * q->in[j].weight, q->aggr);
        }
        if (j < q->n) {
            continue;
        }
        if (q->op == OP_INTERCARD) {
            if (++*count == (uint64_t)q->limit) {
                break;
            }
        } else if (!result_push(res, m, len, score, 0)) {
            return false;
        }
    }
    return true;
}

/* The first input's members in no other, with their own scores. */
static bool
op_diff(const struct zalg *q, struct zresult *res)
{
    struct zin_iter w;
    const unsigned char *m;
    size_t len;
    double s, v;
    zin_first(&q->in[0], &w);
    while (zin_next(&w, &m, &len, &s)) {
        size_t j = 1;
        while (j < q->n && !zin_score(&q->in[j], m, len, &v)) {
            j++;
        }
        if (j == q->n && !result_push(res, m, len, s, 0)) {
            return false;
        }
    }
    return true;
}

static int
cmp_member(const struct zentry *x, const struct zentry *y)
{
    return zset_cmp_member(x->m, x->len, y->m, y->len);
}

/* By member, then by the order they came in: a stable sort. */
static int
by_member(const void *a, const void *b)
{
    const struct zentry *x = a, *y = b;
    int d = cmp_member(x, y);
    return d != 0 ? d : (x->seq > y->seq) - (x->seq < y->seq);
}

/* A sorted set's order: by score, then by member. */
static int
by_score(const void *a, const void *b)
{
    const struct zentry *x = a, *y = b;
    if (x->score != y->score) {
        return x->score < y->score ? -1 : 1;
    }
    return cmp_member(x, y);
}

/* Every member of every input with its scores aggregated in the inputs'
 * order, as Redis's accumulator meets them: all the (member, score) pairs
 * sorted by member, then by input, and each member's run folded. */
static bool
op_union(const struct zalg *q, struct zresult *res)
{
    for (size_t i = 0; i < q->n; i++) {
        struct zin_iter w;
        const unsigned char *m;
        size_t len;
        double s;
        zin_first(&q->in[i], &w);
        while (zin_next(&w, &m, &len, &s)) {
            if (!result_push(res, m, len, weighted(&q->in[i], s), i)) {
                return false;
            }
        }
    }
    if (res->n == 0) {
        return true;
    }
    struct zentry *e = res->e;
    qsort(e, res->n, sizeof(*e), by_member);
    size_t out = 0;
    for (size_t i = 0; i < res->n;) {
        size_t j = i + 1;
        double score = e[i].score;
        for (; j < res->n && cmp_member(&e[j], &e[i]) == 0; j++) {
            score = aggregate(score, e[j].score, q->aggr);
        }
        e[out] = e[i];
        e[out++].score = score;
        i = j;
    }
    res->n = out;
    return true;
}

/* ---- the commands ------------------------------------------------------------ */

/* The result as ZUNION, ZINTER and ZDIFF answer it, in a sorted set's
 * order (as Redis's skiplist, which keeps a -0): RESP3 pairs WITHSCORES. */
static void
reply_result(struct conn *c, struct zresult *res, bool withscores)
{
    if (res->n > 0) {
        qsort(res->e, res->n, sizeof(*res->e), by_score);
    }
    reply_array(&c->out, withscores && c->proto < 3 ? 2 * res->n : res->n);
    for (size_t i = 0; i < res->n; i++) {
        if (withscores && c->proto >= 3) {
            reply_array(&c->out, 2);
        }
        reply_bulk(&c->out, res->e[i].m, res->e[i].len);
        if (withscores) {
            reply_double(&c->out, res->e[i].score, c->proto);
        }
    }
}

/* The result as a new sorted set: a compact one when it is small
 * enough, as Redis's zsetConvertToListpackIfNeeded() makes it, else a
 * large one from the start. false when out of memory. */
static bool
result_zset(const struct zresult *res, struct zset *z)
{
    if ((res->n > ZSET_PACK_MAX_ENTRIES || res->maxlen > ZSET_PACK_MAX_VALUE) &&
        !zset_make_large(z)) {
        return false;
    }
    for (size_t i = 0; i < res->n; i++) {
        double ns;
        if (zset_add(z, res->e[i].m, res->e[i].len, res->e[i].score, 0,
                     &ns) == ZSET_NOMEM) {
            return false;
        }
    }
    return true;
}

/* The STORE forms' end: the destination holds the result, or goes;
 * the command's name is its event's. */
static void
store_result(struct conn *c, const struct resp_request *req,
             const struct zresult *res, const char *event)
{
    struct zset z = { 0 };
    if (!result_zset(res, &z)) {
        zset_free(&z);
        cmd_error(c, ERR_NOMEM);
        return;
    }
    if (!coll_store(c, req->argv[1], req->argvlen[1], KEY_ZSET, &z,
                    zset_len(&z))) {
        zset_free(&z);
    } else {
        notify_key(NOTIFY_ZSET, event, req->argv[1], req->argvlen[1],
                   srv.db);
    }
}

/* Numkeys, the input keys and the options; false after the error. */
static bool
zalg_parse(struct conn *c, const struct resp_request *req, struct zalg *q)
{
    if (!parse_numkeys(c, req, q->store ? 2 : 1, q)) {
        return false;
    }
    q->in = mem_malloc(q->n * sizeof(*q->in));
    if (q->in == NULL) {
        cmd_error(c, ERR_NOMEM);
        return false;
    }
    for (size_t i = 0; i < q->n; i++) {
        if (!zin_open(c, req, q->keys_at + i, &q->in[i])) {
            return false;
        }
        q->in[i].pos = i;
    }
    return parse_opts(c, req, q);
}

static bool
zalg_run(struct zalg *q, struct zresult *res, uint64_t *count)
{
    if (q->op != OP_DIFF) {
        qsort(q->in, q->n, sizeof(*q->in), by_size);
    }
    switch (q->op) {
    case OP_UNION:
        return op_union(q, res);
    case OP_DIFF:
        return op_diff(q, res);
    case OP_INTER:
    case OP_INTERCARD:
        break;
    }
    return op_inter(q, res, count);
}

static void
zalg_generic(struct conn *c, struct resp_request *req, enum zalg_op op,
             bool store, const char *name)
{
    struct zalg q = { .op = op, .name = name, .store = store };
    struct zresult res = { 0 };
    uint64_t count = 0;
    if (zalg_parse(c, req, &q)) {
        if (!zalg_run(&q, &res, &count)) {
            cmd_error(c, ERR_NOMEM);
        } else if (op == OP_INTERCARD) {
            reply_int(&c->out, (int64_t)count);
        } else if (store) {
            store_result(c, req, &res, name);
        } else {
            reply_result(c, &res, q.withscores);
        }
    }
    mem_free(res.e);
    mem_free(q.in);
}

HANDLER_VARIANT(zunion_command, zalg_generic, OP_UNION, false, "zunion")
HANDLER_VARIANT(zinter_command, zalg_generic, OP_INTER, false, "zinter")
HANDLER_VARIANT(zdiff_command, zalg_generic, OP_DIFF, false, "zdiff")
HANDLER_VARIANT(zunionstore_command, zalg_generic, OP_UNION, true,
                "zunionstore")
HANDLER_VARIANT(zinterstore_command, zalg_generic, OP_INTER, true,
                "zinterstore")
HANDLER_VARIANT(zdiffstore_command, zalg_generic, OP_DIFF, true,
                "zdiffstore")
HANDLER_VARIANT(zintercard_command, zalg_generic, OP_INTERCARD, false,
                "zintercard")
