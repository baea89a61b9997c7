/*
 * cmd_list.c - Redis's list commands, byte for byte as Redis 7.0 answers
 * them: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LINDEX, LRANGE,
 * LTRIM, LREM, LSET, LPOS, LINSERT, LMOVE, RPOPLPUSH, LMPOP, and the
 * blocking BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP: a blocking pop
 * that finds its keys empty hands blocked.c its arguments and the
 * function that serves it once a key is ready (serve_pop(), serve_move()),
 * which pops through the same code as the command itself.
 *
 * A list is a struct qlist (lib/qlist.h) in its key's record. Every write
 * reaches the journal and the replicas as the element effect it made
 * (a push of its values, a pop of a count, ...), so a write to a long list
 * costs them what changed, not the list. Checks come in Redis's order
 * (some commands look the key up before parsing their numbers, some
 * after), since which error a bad request gets is part of the reply.
 */
#include <stdbool.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/qlist.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/blocked.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/notify.h"
#include "server/server.h"

#define ERR_INDEX_RANGE "ERR index out of range"
#define ERR_RANK_ZERO                                                         \
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from "    \
    "the second ... or use negative to start from the end of the list"

/* argv[1]'s list into *r (NULL: absent); false when -WRONGTYPE went. */
static bool
lookup_list(struct conn *c, const struct resp_request *req,
            enum lookup_kind kind, struct store_rec **r)
{
    return coll_lookup(c, req->argv[1], req->argvlen[1], KEY_LIST, kind,
                       clock_wall_now(), r);
}

static struct qlist *
list_of(struct store_rec *r)
{
    return store_rec_state(r);
}

/* The effect built in b (from keyspace_elem_begin) reaches the journal
 * as op; when building it ran out of memory, the whole key does. */
static void
effect_done(struct store_rec *r, struct membuf *b, bool built, uint8_t op)
{
    if (b == NULL) {
        return;
    }
    if (built) {
        keyspace_elem_end(r, op);
    } else {
        keyspace_written(r);
    }
}

/* Redis's index arithmetic: a negative one counts from the tail. false
 * when outside the list. */
static bool
list_index(int64_t index, uint64_t len, uint64_t *at)
{
    if (index < 0) {
        if ((uint64_t)0 - (uint64_t)index > len) {
            return false;
        }
        *at = len - ((uint64_t)0 - (uint64_t)index);
        return true;
    }
    if ((uint64_t)index >= len) {
        return false;
    }
    *at = (uint64_t)index;
    return true;
}

/* ---- pushing ----------------------------------------------------------- */

static void
push_generic(struct conn *c, struct resp_request *req, bool head, bool xx)
{
    struct store_rec *r;
    if (!lookup_list(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL && xx) {
        reply_int(&c->out, 0);
        return;
    }
    size_t need = 0;
    for (size_t j = 2; j < req->argc; j++) {
        need += qlist_elem_cost(req->argvlen[j]);
    }
    r = coll_reserve(c, req->argv[1], req->argvlen[1], KEY_LIST, r, need);
    if (r == NULL) {
        return;
    }
    struct qlist *x = list_of(r);
    struct membuf *b = keyspace_elem_begin(r);
    bool built = true;
    for (size_t j = 2; j < req->argc; j++) {
        if (!qlist_push(x, head, req->argv[j], req->argvlen[j])) {
            /* Some went in: the journal gets the whole key. */
            keyspace_written(r);
            (void)keyspace_coll_done(r);
            cmd_error(c, ERR_NOMEM);
            return;
        }
        built = built && (b == NULL || qlist_effect_push(b, req->argv[j],
                                                         req->argvlen[j]));
    }
    effect_done(r, b, built,
                head ? QLIST_OP_PUSH_HEAD : QLIST_OP_PUSH_TAIL);
    notify_key(NOTIFY_LIST, head ? "lpush" : "rpush", req->argv[1],
               req->argvlen[1], srv.db);
    reply_int(&c->out, (int64_t)qlist_len(x));
}

HANDLER_VARIANT(lpush_command, push_generic, true, false)
HANDLER_VARIANT(rpush_command, push_generic, false, false)
HANDLER_VARIANT(lpushx_command, push_generic, true, true)
HANDLER_VARIANT(rpushx_command, push_generic, false, true)

/* ---- popping ----------------------------------------------------------- */

static bool
reply_elem(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct conn *c = arg;
    (void)index;
    reply_bulk(&c->out, p, len);
    return true;
}

/* n elements (at most its length) popped from r's list, each a bulk
 * reply, told to the journal as one pop. */
static void
pop_elems(struct conn *c, struct store_rec *r, bool head, uint64_t n,
          const char *key, size_t len)
{
    struct membuf *b = keyspace_elem_begin(r);
    (void)qlist_pop(list_of(r), head, n, reply_elem, c);
    effect_done(r, b, b != NULL && qlist_effect_pop(b, n),
                head ? QLIST_OP_POP_HEAD : QLIST_OP_POP_TAIL);
    notify_key(NOTIFY_LIST, head ? "lpop" : "rpop", key, len, srv.db);
    (void)keyspace_coll_done(r);
}

static void
pop_generic(struct conn *c, struct resp_request *req, bool head,
            const char *name)
{
    bool has_count = req->argc == 3;
    int64_t count = 1;
    if (req->argc > 3) {
        cmd_errorf(c, ERR_WRONG_ARITY, name);
        return;
    }
    if (has_count && (!num_parse_i64(req->argv[2], req->argvlen[2],
                                     &count) || count < 0)) {
        cmd_error(c, ERR_POSITIVE);
        return;
    }
    struct store_rec *r;
    if (!lookup_list(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        if (has_count) {
            reply_null_array(&c->out, c->proto);
        } else {
            reply_null(&c->out, c->proto);
        }
        return;
    }
    if (count == 0) {
        reply_array(&c->out, 0);
        return;
    }
    struct qlist *x = list_of(r);
    uint64_t n = (uint64_t)count < qlist_len(x) ? (uint64_t)count
                                                : qlist_len(x);
    if (has_count) {
        reply_array(&c->out, n);
    }
    pop_elems(c, r, head, n, req->argv[1], req->argvlen[1]);
}

HANDLER_VARIANT(lpop_command, pop_generic, true, "lpop")
HANDLER_VARIANT(rpop_command, pop_generic, false, "rpop")

/* ---- reading ----------------------------------------------------------- */

void
llen_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_list(c, req, LOOKUP_READ, &r)) {
        return;
    }
    reply_int(&c->out, r == NULL ? 0 : (int64_t)qlist_len(list_of(r)));
}

/* Where LINDEX's and LSET's index (argv[2]) is in argv[1]'s list; they
 * answer a missing key or element each their own way. */
enum list_spot { SPOT_FOUND, SPOT_ANSWERED, SPOT_NO_KEY, SPOT_NO_ELEMENT };

static enum list_spot
find_index(struct conn *c, const struct resp_request *req,
           enum lookup_kind kind, struct store_rec **r, uint64_t *at)
{
    int64_t index;
    if (!lookup_list(c, req, kind, r)) {
        return SPOT_ANSWERED;
    }
    if (*r == NULL) {
        return SPOT_NO_KEY;
    }
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &index)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return SPOT_ANSWERED;
    }
    return list_index(index, qlist_len(list_of(*r)), at) ? SPOT_FOUND
                                                         : SPOT_NO_ELEMENT;
}

void
lindex_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    uint64_t at;
    enum list_spot spot = find_index(c, req, LOOKUP_READ, &r, &at);
    if (spot != SPOT_FOUND) {
        if (spot != SPOT_ANSWERED) {
            reply_null(&c->out, c->proto);
        }
        return;
    }
    struct pack_item it;
    qlist_index(list_of(r), at, &it);
    reply_bulk(&c->out, it.data, it.len);
}

/* Parse argv[2] and argv[3] as LRANGE's and LTRIM's start and stop. */
static bool
parse_start_stop(struct conn *c, const struct resp_request *req,
                 int64_t *start, int64_t *stop)
{
    if (!num_parse_i64(req->argv[2], req->argvlen[2], start) ||
        !num_parse_i64(req->argv[3], req->argvlen[3], stop)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    return true;
}

struct range_reply {
    struct conn *c;
    uint64_t left;
};

static bool
reply_some(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct range_reply *rr = arg;
    (void)index;
    reply_bulk(&rr->c->out, p, len);
    return --rr->left > 0;
}

void
lrange_command(struct conn *c, struct resp_request *req)
{
    int64_t start, stop;
    uint64_t s, e;
    struct store_rec *r;
    if (!parse_start_stop(c, req, &start, &stop) ||
        !lookup_list(c, req, LOOKUP_READ, &r)) {
        return;
    }
    if (r == NULL || !coll_rank_range(start, stop, qlist_len(list_of(r)), &s,
                                 &e)) {
        reply_array(&c->out, 0);
        return;
    }
    struct range_reply rr = { c, e - s + 1 };
    reply_array(&c->out, rr.left);
    qlist_walk(list_of(r), s, false, reply_some, &rr);
}

/* ---- writing in place --------------------------------------------------- */

void
ltrim_command(struct conn *c, struct resp_request *req)
{
    int64_t start, stop;
    uint64_t s = 1, e = 0;           /* nothing kept unless in range */
    struct store_rec *r;
    if (!parse_start_stop(c, req, &start, &stop) ||
        !lookup_list(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        reply_ok(&c->out);
        return;
    }
    struct qlist *x = list_of(r);
    uint64_t len = qlist_len(x);
    (void)coll_rank_range(start, stop, len, &s, &e);
    /* Redis tells the watchers even when nothing goes. */
    struct membuf *b = keyspace_elem_begin(r);
    if (s == 0 && e == len - 1) {
        notify_key(NOTIFY_LIST, "ltrim", req->argv[1], req->argvlen[1],
                   srv.db);
        reply_ok(&c->out);
        return;
    }
    qlist_trim(x, s, e);
    effect_done(r, b, b != NULL && qlist_effect_trim(b, s, e),
                QLIST_OP_TRIM);
    notify_key(NOTIFY_LIST, "ltrim", req->argv[1], req->argvlen[1], srv.db);
    (void)keyspace_coll_done(r);
    reply_ok(&c->out);
}

void
lset_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    uint64_t at;
    enum list_spot spot = find_index(c, req, LOOKUP_WRITE, &r, &at);
    if (spot != SPOT_FOUND) {
        if (spot != SPOT_ANSWERED) {
            cmd_error(c, spot == SPOT_NO_KEY ? ERR_NO_SUCH_KEY
                                             : ERR_INDEX_RANGE);
        }
        return;
    }
    struct qlist *x = list_of(r);
    const char *v = req->argv[3];
    size_t len = req->argvlen[3];
    if (!keyspace_coll_admit(r, qlist_elem_cost(len))) {
        cmd_error(c, ERR_OOM);
        return;
    }
    struct membuf *b = keyspace_elem_begin(r);
    if (!qlist_set(x, at, v, len)) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    effect_done(r, b, b != NULL && qlist_effect_set(b, at, v, len),
                QLIST_OP_SET);
    notify_key(NOTIFY_LIST, "lset", req->argv[1], req->argvlen[1], srv.db);
    reply_ok(&c->out);
}

/* LREM's and LINSERT's lookup: argv[1]'s list for writing, or false when
 * answered already (its error, or :0 for an absent key). */
static bool
lookup_list_write(struct conn *c, const struct resp_request *req,
                  struct store_rec **r)
{
    if (!lookup_list(c, req, LOOKUP_WRITE, r)) {
        return false;
    }
    if (*r == NULL) {
        reply_int(&c->out, 0);
        return false;
    }
    return true;
}

void
lrem_command(struct conn *c, struct resp_request *req)
{
    int64_t count;
    struct store_rec *r;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &count)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    if (!lookup_list_write(c, req, &r)) {
        return;
    }
    const char *v = req->argv[3];
    size_t len = req->argvlen[3];
    uint64_t gone = qlist_rem(list_of(r), count, v, len);
    if (gone > 0) {
        struct membuf *b = keyspace_elem_begin(r);
        effect_done(r, b, b != NULL && qlist_effect_rem(b, count, v, len),
                    QLIST_OP_REM);
        notify_key(NOTIFY_LIST, "lrem", req->argv[1], req->argvlen[1], srv.db);
    }
    (void)keyspace_coll_done(r);
    reply_int(&c->out, (int64_t)gone);
}

void
linsert_command(struct conn *c, struct resp_request *req)
{
    bool after;
    struct store_rec *r;
    if (cmd_arg_is(req, 2, "AFTER")) {
        after = true;
    } else if (cmd_arg_is(req, 2, "BEFORE")) {
        after = false;
    } else {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (!lookup_list_write(c, req, &r)) {
        return;
    }
    const char *pivot = req->argv[3], *v = req->argv[4];
    size_t plen = req->argvlen[3], len = req->argvlen[4];
    if (!keyspace_coll_admit(r, qlist_elem_cost(len))) {
        cmd_error(c, ERR_OOM);
        return;
    }
    struct qlist *x = list_of(r);
    int rc = qlist_insert(x, after, pivot, plen, v, len);
    if (rc == 0) {
        reply_int(&c->out, -1);
        return;
    }
    if (rc < 0) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    struct membuf *b = keyspace_elem_begin(r);
    effect_done(r, b,
                b != NULL &&
                    qlist_effect_insert(b, after, pivot, plen, v, len),
                QLIST_OP_INSERT);
    notify_key(NOTIFY_LIST, "linsert", req->argv[1], req->argvlen[1], srv.db);
    reply_int(&c->out, (int64_t)qlist_len(x));
}

/* ---- LPOS --------------------------------------------------------------- */

struct lpos {
    const char *v;
    size_t len;
    int64_t rank, count, maxlen;     /* count -1: no COUNT */
    bool from_tail;
    uint64_t llen;
    int64_t index, matches, match_index;
    struct membuf found;            /* COUNT's indexes (int64_t each) */
    bool nomem;
};

/* Parse RANK, COUNT and MAXLEN in Redis's order and words. */
static bool
lpos_options(struct conn *c, const struct resp_request *req, struct lpos *o)
{
    /* Each option takes a value: two arguments a step. */
    for (size_t j = 3; j < req->argc; j += 2) {
        bool more = j + 1 < req->argc;
        int64_t v = 0;
        if (more && cmd_arg_is(req, j, "RANK")) {
            if (!num_parse_i64(req->argv[j + 1], req->argvlen[j + 1], &v)) {
                cmd_error(c, ERR_NOT_INTEGER);
                return false;
            }
            if (v == 0) {
                cmd_error(c, ERR_RANK_ZERO);
                return false;
            }
            o->rank = v;
        } else if (more && (cmd_arg_is(req, j, "COUNT") ||
                            cmd_arg_is(req, j, "MAXLEN"))) {
            bool is_count = cmd_arg_is(req, j, "COUNT");
            if (!num_parse_i64(req->argv[j + 1], req->argvlen[j + 1], &v) ||
                v < 0) {
                cmd_error(c, is_count ? "ERR COUNT can't be negative"
                                      : "ERR MAXLEN can't be negative");
                return false;
            }
            *(is_count ? &o->count : &o->maxlen) = v;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

/* One element of LPOS's scan, Redis's loop step for step: rank and the
 * counts compared as Redis's longs (a RANK of LONG_MIN stays negative
 * once negated, so every match counts). */
static bool
lpos_one(void *arg, uint64_t at, const unsigned char *p, size_t len)
{
    struct lpos *o = arg;
    (void)at;
    if (o->maxlen != 0 && o->index >= o->maxlen) {
        return false;
    }
    if (len == o->len && (len == 0 || memcmp(p, o->v, len) == 0)) {
        o->matches++;
        o->match_index = o->from_tail ? (int64_t)o->llen - o->index - 1
                                      : o->index;
        if (o->matches >= o->rank) {
            if (o->count == -1) {
                return false;
            }
            if (!membuf_put(&o->found, &o->match_index,
                            sizeof o->match_index)) {
                o->nomem = true;
                return false;
            }
            int64_t past = (int64_t)((uint64_t)o->matches -
                                     (uint64_t)o->rank + 1);
            if (o->count != 0 && past >= o->count) {
                return false;
            }
        }
    }
    o->index++;
    o->match_index = -1;
    return true;
}

void
lpos_command(struct conn *c, struct resp_request *req)
{
    struct lpos o = { .v = req->argv[2], .len = req->argvlen[2], .rank = 1,
                      .count = -1, .match_index = -1 };
    struct store_rec *r;
    if (!lpos_options(c, req, &o)) {
        return;
    }
    if (o.rank < 0) {
        o.rank = (int64_t)((uint64_t)0 - (uint64_t)o.rank);
        o.from_tail = true;
    }
    if (!lookup_list(c, req, LOOKUP_READ, &r)) {
        return;
    }
    if (r == NULL) {
        if (o.count != -1) {
            reply_array(&c->out, 0);
        } else {
            reply_null(&c->out, c->proto);
        }
        return;
    }
    struct qlist *x = list_of(r);
    o.llen = qlist_len(x);
    qlist_walk(x, o.from_tail ? o.llen - 1 : 0, o.from_tail, lpos_one, &o);
    if (o.nomem) {
        mem_free(o.found.p);
        cmd_error(c, ERR_NOMEM);
        return;
    }
    if (o.count != -1) {
        size_t n = o.found.len / sizeof(int64_t);
        reply_array(&c->out, n);
        for (size_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, o.found.p + i * sizeof v, sizeof v);
            reply_int(&c->out, v);
        }
        mem_free(o.found.p);
    } else if (o.match_index != -1) {
        reply_int(&c->out, o.match_index);
    } else {
        reply_null(&c->out, c->proto);
    }
}

/* ---- LMOVE -------------------------------------------------------------- */

static bool
parse_side(struct conn *c, const struct resp_request *req, size_t i,
           bool *head)
{
    if (cmd_arg_is(req, i, "RIGHT")) {
        *head = false;
    } else if (cmd_arg_is(req, i, "LEFT")) {
        *head = true;
    } else {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    return true;
}

/* The destination's list (a new one when absent) with room for len more
 * bytes; NULL after -WRONGTYPE or -OOM. */
static struct store_rec *
lmove_dest(struct conn *c, const struct resp_request *req, struct key_hint *h,
           struct store_rec *dr, size_t len)
{
    size_t need = qlist_elem_cost(len);
    if (dr == NULL) {
        dr = keyspace_coll_add(h, req->argv[2], req->argvlen[2], KEY_LIST,
                               need);
    } else if (!keyspace_coll_admit(dr, need)) {
        dr = NULL;
    }
    if (dr == NULL) {
        cmd_error(c, ERR_OOM);
    }
    return dr;
}

/* The move itself: push on dr first, then pop from r (the same as pop
 * then push, also when they are one list), so memory running out leaves
 * both as they were. */
static bool
lmove_do(struct store_rec *r, struct store_rec *dr, bool from_head,
         bool to_head, const unsigned char *v, size_t len)
{
    struct membuf *b = keyspace_elem_begin(dr);
    if (!qlist_push(list_of(dr), to_head, v, len)) {
        (void)keyspace_coll_done(dr);
        return false;
    }
    effect_done(dr, b, b != NULL && qlist_effect_push(b, v, len),
                to_head ? QLIST_OP_PUSH_HEAD : QLIST_OP_PUSH_TAIL);
    notify_key(NOTIFY_LIST, to_head ? "lpush" : "rpush", store_rec_key(dr),
               store_rec_keylen(dr), srv.db);
    b = keyspace_elem_begin(r);
    (void)qlist_pop(list_of(r), from_head, 1, NULL, NULL);
    effect_done(r, b, b != NULL && qlist_effect_pop(b, 1),
                from_head ? QLIST_OP_POP_HEAD : QLIST_OP_POP_TAIL);
    notify_key(NOTIFY_LIST, from_head ? "lpop" : "rpop", store_rec_key(r),
               store_rec_keylen(r), srv.db);
    (void)keyspace_coll_done(r);
    return true;
}

/* The move from r, argv[1]'s list, to argv[2] (LMOVE, RPOPLPUSH, and
 * their blocking forms once the source holds something). */
static void
lmove_from(struct conn *c, const struct resp_request *req,
           struct store_rec *r, bool from_head, bool to_head)
{
    struct store_rec *dr;
    int64_t now = clock_wall_now();
    struct key_hint own = { false, 0 };
    bool same = req->argvlen[1] == req->argvlen[2] &&
                memcmp(req->argv[1], req->argv[2], req->argvlen[1]) == 0;
    dr = same ? r : keyspace_lookup_write(&own, req->argv[2],
                                          req->argvlen[2], now);
    if (dr != NULL && dr->type != KEY_LIST) {
        cmd_error(c, ERR_WRONGTYPE);
        return;
    }
    /* A copy: adding the destination may move or evict what r holds. */
    struct qlist *x = list_of(r);
    struct pack_item it;
    qlist_index(x, from_head ? 0 : qlist_len(x) - 1, &it);
    unsigned char *v = mem_malloc(it.len + 1);
    if (v == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    size_t len = it.len;
    memcpy(v, it.data, len);
    /* One group from the destination's creation on: both keys' effects
     * reach a restart or a replica together (a group publishes what was
     * pending when it opens, so it must open before the new key). */
    keyspace_group_begin();
    dr = lmove_dest(c, req, &own, dr, len);
    if (dr != NULL && !same) {
        /* The source again: admission may have evicted it. */
        r = keyspace_lookup_write(&c->hint, req->argv[1], req->argvlen[1],
                                  now);
    }
    if (dr == NULL) {
        /* -OOM sent */
    } else if (r == NULL) {
        (void)keyspace_coll_done(dr);
        reply_null(&c->out, c->proto);
    } else if (!lmove_do(r, dr, from_head, to_head, v, len)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_bulk(&c->out, v, len);
    }
    keyspace_group_end();
    mem_free(v);
}

void
lmove_command(struct conn *c, struct resp_request *req)
{
    bool from_head, to_head;
    struct store_rec *r;
    if (!parse_side(c, req, 3, &from_head) ||
        !parse_side(c, req, 4, &to_head) ||
        !lookup_list(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        reply_null(&c->out, c->proto);
        return;
    }
    lmove_from(c, req, r, from_head, to_head);
}

void
rpoplpush_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_list(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        reply_null(&c->out, c->proto);
        return;
    }
    lmove_from(c, req, r, false, true);
}

/* ---- LMPOP and the blocking pops ----------------------------------------- */

/* Pop from r (key's list): BLPOP's [key, element] (count -1), or LMPOP's
 * [key, [up to count elements]]. */
static void
pop_keyed(struct conn *c, struct store_rec *r, const char *key, size_t len,
          bool head, int64_t count)
{
    struct qlist *x = list_of(r);
    uint64_t n = count < 0 ? 1 : (uint64_t)count;
    n = n < qlist_len(x) ? n : qlist_len(x);
    reply_array(&c->out, 2);
    reply_bulk(&c->out, key, len);
    if (count >= 0) {
        reply_array(&c->out, n);
    }
    pop_elems(c, r, head, n, key, len);
}

static enum blocked_served serve_pop(struct conn *c,
                                     const struct resp_request *req,
                                     const char *key, size_t len);

static const struct coll_pops list_pops = {
    .type = KEY_LIST, .kind = BLOCKED_LIST, .w0 = "LEFT", .w1 = "RIGHT",
    .bpop_first = "BLPOP", .bmpop = "BLMPOP", .pop = pop_keyed,
    .serve = serve_pop,
};

/* BLPOP's, BRPOP's and BLMPOP's turn on a ready key. */
static enum blocked_served
serve_pop(struct conn *c, const struct resp_request *req, const char *key,
          size_t len)
{
    return coll_pops_serve(c, req, key, len, &list_pops);
}

HANDLER_VARIANT(lmpop_command, coll_mpop_command, &list_pops)
HANDLER_VARIANT(blmpop_command, coll_bmpop_command, &list_pops)
HANDLER_VARIANT(blpop_command, coll_bpop_command, &list_pops, true)
HANDLER_VARIANT(brpop_command, coll_bpop_command, &list_pops, false)

/* BLMOVE's and BRPOPLPUSH's turn on their ready source. */
static enum blocked_served
serve_move(struct conn *c, const struct resp_request *req, const char *key,
           size_t len)
{
    struct store_rec *r;
    enum blocked_served s = coll_ready(key, len, KEY_LIST, &r);
    if (s != BLOCKED_SERVED) {
        return s;
    }
    bool from_head = false, to_head = true;     /* BRPOPLPUSH */
    if (req->argc == 6) {
        from_head = cmd_arg_is(req, 3, "LEFT");
        to_head = cmd_arg_is(req, 4, "LEFT");
    }
    lmove_from(c, req, r, from_head, to_head);
    return coll_served(key, len);
}

static void
bmove_generic(struct conn *c, struct resp_request *req, bool from_head,
              bool to_head)
{
    int64_t ms;
    struct store_rec *r;
    if (!coll_block_timeout(c, req, req->argc - 1, &ms) ||
        !lookup_list(c, req, LOOKUP_WRITE, &r)) {
        return;
    }
    if (r == NULL) {
        coll_wait_or_nil(c, req, 1, 1, ms, BLOCKED_LIST, serve_move,
                         false);
    } else {
        lmove_from(c, req, r, from_head, to_head);
    }
}

void
blmove_command(struct conn *c, struct resp_request *req)
{
    bool from_head, to_head;
    if (parse_side(c, req, 3, &from_head) &&
        parse_side(c, req, 4, &to_head)) {
        bmove_generic(c, req, from_head, to_head);
    }
}

void
brpoplpush_command(struct conn *c, struct resp_request *req)
{
    bmove_generic(c, req, false, true);
}
