/*
 * coll_cmd.c - what the handlers of Redis's key types share (see
 * coll_cmd.h).
 */
#include "server/handlers/coll_cmd.h"

#include <math.h>

#include "algorithms/increx.h"
#include "lib/glob.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/rand.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/keyspace.h"
#include "server/multi.h"
#include "server/notify.h"

bool
coll_lookup(struct conn *c, const char *key, size_t len, uint8_t type,
            enum lookup_kind kind, int64_t now, struct store_rec **r)
{
    *r = kind == LOOKUP_READ ? keyspace_lookup(&c->hint, key, len, now)
                             : keyspace_lookup_write(&c->hint, key, len, now);
    if (*r != NULL && (*r)->type != type) {
        cmd_error(c, ERR_WRONGTYPE);
        return false;
    }
    return true;
}

struct store_rec *
coll_reserve(struct conn *c, const char *key, size_t len, uint8_t type,
             struct store_rec *r, size_t need)
{
    if (r == NULL) {
        r = keyspace_coll_add(&c->hint, key, len, type, need);
    } else if (!keyspace_coll_admit(r, need)) {
        r = NULL;
    }
    if (r == NULL) {
        cmd_error(c, ERR_OOM);
    }
    return r;
}

bool
coll_scan_cursor(struct conn *c, const char *s, size_t len, uint64_t *cursor)
{
    /* strtoul() takes an empty string for 0; a lone sign has no digits.
     * A '-' negates modulo 2^64, as strtoul does. */
    if (len == 0) {
        *cursor = 0;
        return true;
    }
    size_t sign = s[0] == '-' || s[0] == '+';
    if (!num_parse_u64_digits(s + sign, len - sign, cursor)) {
        cmd_error(c, "ERR invalid cursor");
        return false;
    }
    if (s[0] == '-') {
        *cursor = 0 - *cursor;
    }
    return true;
}

bool
coll_scan_opts(struct conn *c, const struct resp_request *req, size_t from,
               bool allow_type, struct scan_opts *o)
{
    *o = (struct scan_opts){ .count = 10 };
    for (size_t i = from; i < req->argc; i += 2) {
        if (i + 1 >= req->argc) {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
        const char *v = req->argv[i + 1];
        size_t vlen = req->argvlen[i + 1];
        if (cmd_arg_is(req, i, "COUNT")) {
            if (!num_parse_i64(v, vlen, &o->count)) {
                cmd_error(c, ERR_NOT_INTEGER);
                return false;
            }
            if (o->count < 1) {
                cmd_error(c, ERR_SYNTAX);
                return false;
            }
        } else if (cmd_arg_is(req, i, "MATCH")) {
            bool all = vlen == 1 && v[0] == '*';
            o->match = all ? NULL : v;
            o->match_len = all ? 0 : vlen;
        } else if (allow_type && cmd_arg_is(req, i, "TYPE")) {
            o->type = v;
            o->type_len = vlen;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

bool
coll_scan_start(struct conn *c, const struct resp_request *req, uint8_t type,
                uint64_t *cursor, struct store_rec **r, struct scan_opts *o)
{
    if (!coll_scan_cursor(c, req->argv[2], req->argvlen[2], cursor) ||
        !coll_lookup(c, req->argv[1], req->argvlen[1], type, LOOKUP_READ,
                     clock_wall_now(), r)) {
        return false;
    }
    if (*r == NULL) {
        reply_array(&c->out, 2);
        reply_bulk(&c->out, "0", 1);
        reply_array(&c->out, 0);
        return false;
    }
    return coll_scan_opts(c, req, 3, false, o);
}

void
coll_scan_reply_head(struct conn *c, uint64_t cursor, size_t n)
{
    reply_array(&c->out, 2);
    reply_bulk_u64(&c->out, cursor);
    reply_array(&c->out, n);
}

bool
coll_scan_match(const struct scan_opts *o, const void *s, size_t len)
{
    return o->match == NULL ||
           glob_match(o->match, o->match_len, s, len, false);
}

/* One HSCAN or SSCAN page being collected. */
struct coll_scan {
    struct scan_opts o;
    unsigned per;               /* strings kept an element: 1 or 2 */
    uint64_t seen;              /* elements visited, matching or not */
    struct pack_item *items;    /* the strings of those that match; they
                                 * stay valid: nothing changes the
                                 * collection while the reply is built */
    size_t len;
    size_t cap;
    bool oom;
};

void
coll_scan_collect(const struct pack_item *k, const struct pack_item *v,
                  void *arg)
{
    struct coll_scan *s = arg;
    s->seen++;
    if (s->oom || !coll_scan_match(&s->o, k->data, k->len)) {
        return;
    }
    if (s->len + s->per > s->cap) {
        size_t cap = s->cap != 0 ? s->cap * 2 : 32;
        struct pack_item *items = mem_realloc(s->items,
                                              cap * sizeof(*items));
        if (items == NULL) {
            s->oom = true;
            return;
        }
        s->items = items;
        s->cap = cap;
    }
    s->items[s->len++] = *k;
    if (s->per == 2) {
        s->items[s->len++] = *v;
    }
}

void
coll_scan_command(struct conn *c, struct resp_request *req, uint8_t type,
                  unsigned per, uint64_t bound, coll_scan_step step)
{
    struct coll_scan s = { .per = per };
    struct store_rec *r;
    uint64_t cursor;
    if (!coll_scan_start(c, req, type, &cursor, &r, &s.o)) {
        return;
    }
    uint64_t want = (uint64_t)s.o.count;
    uint64_t steps = want > UINT64_MAX / bound ? UINT64_MAX : want * bound;
    do {
        cursor = step(r, cursor, &s);
    } while (cursor != 0 && steps-- > 0 && !s.oom && s.seen < want);
    if (s.oom) {
        cmd_error(c, ERR_NOMEM);
    } else {
        coll_scan_reply_head(c, cursor, s.len);
        for (size_t i = 0; i < s.len; i++) {
            reply_bulk(&c->out, s.items[i].data, s.items[i].len);
        }
    }
    mem_free(s.items);
}

bool
coll_add_float(struct conn *c, long double value, long double incr,
               char *text, size_t *n)
{
    value += incr;
    if (isnan(value) || isinf(value)) {
        cmd_error(c, ERR_INCR_NAN);
        return false;
    }
    *n = increx_format_float(value, text, INCREX_TEXT_MAX);
    return true;
}

void
coll_reply_nx_write(struct conn *c, bool ok, bool nx)
{
    if (!ok) {
        cmd_error(c, ERR_OOM);
    } else if (nx) {
        reply_int(&c->out, 1);
    } else {
        reply_ok(&c->out);
    }
}

bool
coll_rank_range(int64_t start, int64_t end, uint64_t len, uint64_t *s,
                uint64_t *e)
{
    int64_t n = (int64_t)len;
    if (start < 0) {
        start = start < -n ? 0 : n + start;
    }
    if (end < 0) {
        end = end < -n ? -1 : n + end;
    }
    if (start > end || start >= n) {
        return false;
    }
    if (end >= n) {
        end = n - 1;
    }
    *s = (uint64_t)start;
    *e = (uint64_t)end;
    return true;
}

/* ---- the pops of several keys ------------------------------------------- */

#define ERR_TIMEOUT_FLOAT "ERR timeout is not a float or out of range"

bool
coll_block_timeout(struct conn *c, const struct resp_request *req, size_t i,
                   int64_t *ms)
{
    long double v;
    if (!num_parse_long_double(req->argv[i], req->argvlen[i], &v)) {
        cmd_error(c, ERR_TIMEOUT_FLOAT);
        return false;
    }
    /* Redis converts ceill(v * 1000) to a long long: what lies outside
     * its range (infinity too) becomes LLONG_MIN there, hence negative. */
    long double t = ceill(v * 1000.0L);
    if (!(t >= 0.0L && t < 9223372036854775807.0L)) {
        cmd_error(c, ERR_TIMEOUT_NEGATIVE);
        return false;
    }
    *ms = (int64_t)t;
    return true;
}

bool
coll_may_block(const struct conn *c)
{
    return !c->script && !c->runs_parts && !multi_open(c, c->multi);
}

bool
coll_lookup_key(struct conn *c, const char *key, size_t len, uint8_t type,
                struct store_rec **r)
{
    struct key_hint h = { false, 0 };
    *r = keyspace_lookup_write(&h, key, len, clock_wall_now());
    if (*r != NULL && (*r)->type != type) {
        cmd_error(c, ERR_WRONGTYPE);
        return false;
    }
    return true;
}

bool
coll_mpop_args(struct conn *c, const struct resp_request *req, size_t at,
               const char *w0, const char *w1, struct coll_mpop *o)
{
    int64_t n;
    if (!num_parse_i64(req->argv[at], req->argvlen[at], &n) || n < 1) {
        cmd_error(c, ERR_NUMKEYS_POSITIVE);
        return false;
    }
    size_t where = at + 1;
    if ((uint64_t)n >= req->argc - where) {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    where += (size_t)n;
    *o = (struct coll_mpop){ at + 1, (size_t)n, true, -1 };
    if (cmd_arg_is(req, where, w0)) {
        o->first = true;
    } else if (cmd_arg_is(req, where, w1)) {
        o->first = false;
    } else {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    for (size_t j = where + 1; j < req->argc; j++) {
        if (o->count != -1 || !cmd_arg_is(req, j, "COUNT") ||
            j + 1 >= req->argc) {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
        j++;
        if (!num_parse_i64(req->argv[j], req->argvlen[j], &o->count) ||
            o->count < 1) {
            cmd_error(c, "ERR count should be greater than 0");
            return false;
        }
    }
    if (o->count == -1) {
        o->count = 1;
    }
    return true;
}

/* Pop from the first of nkeys keys from argv[first] that holds p's type:
 * 1 when done, 0 when every one is empty, -1 after -WRONGTYPE (a key
 * before the first one holding p's type holds another). */
static int
pop_first(struct conn *c, const struct resp_request *req, size_t first,
          size_t nkeys, const struct coll_pops *p, bool side, int64_t count)
{
    for (size_t i = first; i < first + nkeys; i++) {
        struct store_rec *r;
        if (!coll_lookup_key(c, req->argv[i], req->argvlen[i], p->type,
                             &r)) {
            return -1;
        }
        if (r != NULL) {
            p->pop(c, r, req->argv[i], req->argvlen[i], side, count);
            return 1;
        }
    }
    return 0;
}

void
coll_mpop_command(struct conn *c, struct resp_request *req,
                  const struct coll_pops *p)
{
    struct coll_mpop o;
    if (!coll_mpop_args(c, req, 1, p->w0, p->w1, &o)) {
        return;
    }
    if (pop_first(c, req, o.first_key, o.nkeys, p, o.first, o.count) == 0) {
        reply_null_array(&c->out, c->proto);
    }
}

void
coll_bmpop_command(struct conn *c, struct resp_request *req,
                   const struct coll_pops *p)
{
    struct coll_mpop o;
    int64_t ms;
    if (!coll_mpop_args(c, req, 2, p->w0, p->w1, &o) ||
        !coll_block_timeout(c, req, 1, &ms)) {
        return;
    }
    if (pop_first(c, req, o.first_key, o.nkeys, p, o.first, o.count) == 0) {
        coll_wait_or_nil(c, req, o.first_key, o.nkeys, ms, p->kind,
                         p->serve, true);
    }
}

void
coll_bpop_command(struct conn *c, struct resp_request *req,
                  const struct coll_pops *p, bool first)
{
    int64_t ms;
    if (!coll_block_timeout(c, req, req->argc - 1, &ms)) {
        return;
    }
    if (pop_first(c, req, 1, req->argc - 2, p, first, -1) == 0) {
        coll_wait_or_nil(c, req, 1, req->argc - 2, ms, p->kind, p->serve,
                         true);
    }
}

enum blocked_served
coll_pops_serve(struct conn *c, const struct resp_request *req,
                const char *key, size_t len, const struct coll_pops *p)
{
    struct store_rec *r;
    enum blocked_served s = coll_ready(key, len, p->type, &r);
    if (s != BLOCKED_SERVED) {
        return s;
    }
    bool first;
    int64_t count = -1;
    if (cmd_arg_is(req, 0, p->bmpop)) {
        struct coll_mpop o;
        (void)coll_mpop_args(c, req, 2, p->w0, p->w1, &o);
        first = o.first;
        count = o.count;
    } else {
        first = cmd_arg_is(req, 0, p->bpop_first);
    }
    p->pop(c, r, key, len, first, count);
    return coll_served(key, len);
}

enum blocked_served
coll_ready(const char *key, size_t len, uint8_t type, struct store_rec **r)
{
    struct key_hint h = { false, 0 };
    *r = keyspace_lookup_write(&h, key, len, clock_wall_now());
    if (*r == NULL) {
        return BLOCKED_ABSENT;
    }
    return (*r)->type == type ? BLOCKED_SERVED : BLOCKED_NOT_SERVED;
}

enum blocked_served
coll_served(const char *key, size_t len)
{
    struct key_hint h = { false, 0 };
    return keyspace_lookup_write(&h, key, len, clock_wall_now()) == NULL
               ? BLOCKED_SERVED_GONE
               : BLOCKED_SERVED;
}

void
coll_wait_or_nil(struct conn *c, struct resp_request *req, size_t first,
                 size_t nkeys, int64_t ms, enum blocked_kind kind,
                 blocked_serve_fn serve, bool array)
{
    if (!coll_may_block(c)) {
        if (array) {
            reply_null_array(&c->out, c->proto);
        } else {
            reply_null(&c->out, c->proto);
        }
    } else if (!blocked_wait(c, req, first, nkeys, ms, kind, serve)) {
        cmd_error(c, ERR_NOMEM);
    }
}

/* ---- STORE forms and random draws ---------------------------------------- */

bool
coll_store(struct conn *c, const char *key, size_t len, uint8_t type,
           const void *state, uint64_t n)
{
    struct store_rec *r = keyspace_lookup_write(&c->hint, key, len,
                                                clock_wall_now());
    if (n == 0) {
        reply_int(&c->out, 0);
        if (r != NULL) {
            keyspace_delete(r);
            notify_key(NOTIFY_GENERIC, "del", key, len, srv.db);
        }
        return false;
    }
    if (keyspace_set_coll(&c->hint, key, len, r, type, state) == NULL) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    reply_int(&c->out, (int64_t)n);
    return true;
}

/* Small counts against a large n: draws until count distinct ones, kept
 * in an open-addressed table twice count's size (or more). */
static bool
random_distinct_sparse(uint64_t n, uint64_t count, uint64_t *out)
{
    uint64_t cap = 16;
    while (cap < 2 * count) {
        cap *= 2;
    }
    uint64_t *seen = mem_calloc(cap, sizeof(uint64_t));     /* index + 1 */
    if (seen == NULL) {
        return false;
    }
    for (uint64_t got = 0; got < count;) {
        uint64_t x = rand_below(n), h = (x * UINT64_C(0x9e3779b97f4a7c15)) &
                                          (cap - 1);
        while (seen[h] != 0 && seen[h] != x + 1) {
            h = (h + 1) & (cap - 1);
        }
        if (seen[h] == 0) {
            seen[h] = x + 1;
            out[got++] = x;
        }
    }
    mem_free(seen);
    return true;
}

bool
coll_random_distinct(uint64_t n, uint64_t count, uint64_t *out)
{
    if (count <= n / 3) {
        return random_distinct_sparse(n, count, out);
    }
    /* A partial Fisher-Yates shuffle of every index (n < 3 * count). */
    uint64_t *all = mem_malloc(n * sizeof(uint64_t));
    if (all == NULL) {
        return false;
    }
    for (uint64_t i = 0; i < n; i++) {
        all[i] = i;
    }
    for (uint64_t i = 0; i < count; i++) {
        uint64_t j = i + rand_below(n - i), t = all[i];
        all[i] = all[j];
        all[j] = t;
        out[i] = all[i];
    }
    mem_free(all);
    return true;
}

/* No count given. */
#define COLL_NO_COUNT INT64_MIN

/* key [count [word]] in Redis's order of checks; false after the error. */
static bool
rand_args(struct conn *c, const struct resp_request *req, const char *word,
          int64_t *count, bool *with)
{
    *count = COLL_NO_COUNT;
    *with = false;
    if (req->argc < 3) {
        return true;
    }
    if (!num_parse_i64(req->argv[2], req->argvlen[2], count)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (*count == INT64_MIN) {
        cmd_error(c, ERR_COUNT_RANGE);
        return false;
    }
    if (req->argc > 4 || (req->argc == 4 && !cmd_arg_is(req, 3, word))) {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    *with = req->argc == 4;
    if (*with && (*count < -INT64_MAX / 2 || *count > INT64_MAX / 2)) {
        cmd_error(c, "ERR value is out of range");
        return false;
    }
    return true;
}

void
coll_rand_command(struct conn *c, struct resp_request *req, uint8_t type,
                  const char *word, coll_rand_one_fn one,
                  coll_rand_many_fn many)
{
    int64_t count;
    bool with;
    struct store_rec *r;
    if (!rand_args(c, req, word, &count, &with) ||
        !coll_lookup(c, req->argv[1], req->argvlen[1], type, LOOKUP_READ,
                     clock_wall_now(), &r)) {
        return;
    }
    if (count == COLL_NO_COUNT) {
        if (r == NULL) {
            reply_null(&c->out, c->proto);
        } else {
            one(c, r);
        }
    } else if (r == NULL || count == 0) {
        reply_array(&c->out, 0);
    } else {
        many(c, r, count, with);
    }
}

bool
coll_reply_full(const struct conn *c)
{
    return c->out.oom ||
           obuf_pending(&c->out) > (size_t)srv.conf.output_hard_limit;
}
