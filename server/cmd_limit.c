/*
 * cmd_limit.c - limiter commands: argv -> parameters -> one `now` ->
 * algorithm -> state write-back and expiry -> reply.
 *
 * CL.THROTTLE keeps redis-cell's grammar and error texts exactly
 * (shared/spec/cl-throttle.md); the cellgate options PEEK and MS may follow
 * the optional quantity and change nothing when absent.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algorithms/fixed_window.h"
#include "algorithms/gcra.h"
#include "algorithms/sliding_window.h"
#include "protocol/mem.h"
#include "protocol/num.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/conn.h"
#include "server/handlers.h"
#include "server/keyspace.h"
#include "server/limit_cmd.h"
#include "server/server.h"

#define CELL_USAGE                                                            \
    "Cell error: Store error: Usage: cl.throttle <key> <max_burst> "          \
    "<count per period> <period> [<quantity>]"

struct limit_opts {
    bool peek;
    bool ms;
};

static bool
is_word(const char *arg, size_t len, const char *word)
{
    return len == strlen(word) && strcasecmp(arg, word) == 0;
}

/* PEEK / MS; false for anything else. */
static bool
parse_option(const char *arg, size_t len, struct limit_opts *o)
{
    if (is_word(arg, len, "PEEK")) {
        o->peek = true;
        return true;
    }
    if (is_word(arg, len, "MS")) {
        o->ms = true;
        return true;
    }
    return false;
}

static void
reply_cell_parse_error(struct conn *c, const char *arg, size_t len)
{
    /* The raw argument is echoed whole and verbatim, as redis-cell does; it
     * may hold any bytes (reply_error turns CR and LF into spaces). */
    static const char prefix[] =
        "Cell error: Store error: Couldn't parse as integer: ";
    size_t n = sizeof(prefix) - 1;
    char *msg = mem_malloc(n + len);
    if (msg == NULL) {
        conn_error(c, "ERR out of memory");
        return;
    }
    memcpy(msg, prefix, n);
    memcpy(msg + n, arg, len);
    c->reply_error = true;
    cmd_count_error("Cell");
    reply_error(&c->out, msg, n + len);
    mem_free(msg);
}

/* Fill p from argv[2..]; the quantity is argv[5] unless it is an option.
 * Returns false after replying the error. */
static bool
parse_throttle_args(struct conn *c, struct resp_request *req,
                    struct gcra_params *p, struct limit_opts *o)
{
    size_t nums = 3;        /* max_burst count period [quantity] */
    size_t i;
    memset(o, 0, sizeof(*o));
    p->quantity = 1;
    if (req->argc >= 6 && !parse_option(req->argv[5], req->argvlen[5], o)) {
        nums = 4;
    }
    /* Everything after argv[5] must be an option; redis-cell answers its
     * usage error for any other extra argument. */
    for (i = 6; i < req->argc; i++) {
        if (!parse_option(req->argv[i], req->argvlen[i], o)) {
            conn_error(c, CELL_USAGE);
            return false;
        }
    }
    int64_t *fields[4] = { &p->max_burst, &p->count, &p->period,
                           &p->quantity };
    for (i = 0; i < nums; i++) {
        if (!num_parse_i64_rust(req->argv[2 + i], req->argvlen[2 + i],
                                fields[i])) {
            reply_cell_parse_error(c, req->argv[2 + i], req->argvlen[2 + i]);
            return false;
        }
    }
    return true;
}

static int64_t
reply_duration(gcra_ns_t ns, bool ms)
{
    return ms ? gcra_reply_millis(ns) : gcra_reply_seconds(ns);
}

/* Write the decision back as redis-cell would: StringSet then PEXPIRE. */
static bool
store_decision(struct conn *c, struct resp_request *req,
               struct store_rec *r, const struct gcra_decision *d,
               int64_t now)
{
    if (r == NULL) {
        r = keyspace_add(c, req, KEY_GCRA, sizeof(struct ks_gcra));
        if (r == NULL) {
            return false;
        }
    }
    ((struct ks_gcra *)store_rec_state(r))->tat = d->new_tat;
    if (d->ttl_ms < 0) {
        /* -1 ms is "no expiry"; below that redis-cell's PEXPIRE failed
         * and the key was left without a TTL. */
        store_set_expire(srv.store, r, STORE_NEVER);
    } else {
        store_set_expire(srv.store, r,
                         keyspace_redis_expire_at(now, d->ttl_ms));
    }
    return true;
}

void
cmd_cl_throttle(struct conn *c, struct resp_request *req)
{
    struct gcra_params p;
    struct limit_opts o;
    struct gcra_decision d;

    if (req->argc < 5) {
        conn_error(c, CELL_USAGE);
        return;
    }
    if (!parse_throttle_args(c, req, &p, &o)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = keyspace_lookup(c, req, 1, now);
    if (r != NULL && r->type != KEY_GCRA) {
        conn_error(c, WRONGTYPE);
        return;
    }
    uint64_t tat = r != NULL ? ((struct ks_gcra *)store_rec_state(r))->tat
                             : 0;
    enum gcra_status st = gcra_throttle(&p, r != NULL, tat, now, &d);
    if (st == GCRA_ZERO_RATE) {
        conn_error(c, "Cell error: Store error: Zero rates are not supported");
        return;
    }
    if (d.store && !o.peek && !store_decision(c, req, r, &d, now)) {
        return;
    }
    if (st == GCRA_EXPIRE_ERROR && !o.peek) {
        conn_error(c, "Cell error: Store error: Error while setting key "
                      "expire");
        return;
    }
    int64_t v[5] = { d.limited ? 1 : 0, d.limit, d.remaining,
                     reply_duration(d.retry_after_ns, o.ms),
                     reply_duration(d.reset_after_ns, o.ms) };
    cmd_count_decision(c, d.limited);
    reply_int5(&c->out, v);
}

/* ---- RL.* commands ------------------------------------------------------ */


/* Keywords after the positional arguments, in any order, any case. */
bool
parse_rl_options(struct conn *c, struct resp_request *req, size_t from,
                 unsigned allowed, struct rl_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->cost = 1;
    for (size_t i = from; i < req->argc; i++) {
        const char *a = req->argv[i];
        size_t len = req->argvlen[i];
        if ((allowed & RL_COST) && is_word(a, len, "COST") &&
            i + 1 < req->argc) {
            i++;
            if (!num_parse_i64(req->argv[i], req->argvlen[i], &o->cost)) {
                conn_error(c, NOT_INTEGER);
                return false;
            }
        } else if ((allowed & RL_ALIGN) && is_word(a, len, "ALIGN")) {
            o->align = true;
        } else if ((allowed & RL_PEEK) && is_word(a, len, "PEEK")) {
            o->peek = true;
        } else if ((allowed & RL_MS) && is_word(a, len, "MS")) {
            o->ms = true;
        } else if ((allowed & RL_META) && is_word(a, len, "META") &&
                   i + 1 < req->argc) {
            i++;
            o->meta = req->argv[i];
            o->meta_len = req->argvlen[i];
        } else {
            conn_error(c, "ERR syntax error");
            return false;
        }
    }
    return true;
}

/* "limit window" at argv[2..3]: strict integers, both at least 1. */
bool
parse_limit_window(struct conn *c, struct resp_request *req, int64_t *limit,
                   int64_t *window)
{
    if (!num_parse_i64(req->argv[2], req->argvlen[2], limit) ||
        !num_parse_i64(req->argv[3], req->argvlen[3], window)) {
        conn_error(c, NOT_INTEGER);
        return false;
    }
    if (*limit < 1 || *window < 1) {
        conn_error(c, "ERR limit and window must be positive");
        return false;
    }
    return true;
}

bool
check_status(struct conn *c, enum limit_status st)
{
    if (st == LIMIT_OK) {
        return true;
    }
    conn_error(c, st == LIMIT_EOVERFLOW
                      ? "ERR window or cost too large: time would overflow"
                      : "ERR invalid limit parameters");
    return false;
}

/* The looked-up record of argv[1] if it has `type`; on another type the
 * WRONGTYPE error is sent and *ok cleared. */
struct store_rec *
lookup_typed(struct conn *c, struct resp_request *req, uint8_t type,
             int64_t now, bool *ok)
{
    struct store_rec *r = keyspace_lookup(c, req, 1, now);
    *ok = true;
    if (r != NULL && r->type != type) {
        conn_error(c, WRONGTYPE);
        *ok = false;
    }
    return r;
}

/* Store the new state until it is fresh again, or drop the key when the
 * state already equals "no key". */
bool
commit_state(struct conn *c, struct resp_request *req, struct store_rec *r,
             uint8_t type, const void *state, size_t size, int64_t fresh_at,
             int64_t now)
{
    if (fresh_at <= now) {
        if (r != NULL) {
            store_remove(srv.store, r);
        }
        return true;
    }
    if (r == NULL) {
        r = keyspace_add(c, req, type, size);
        if (r == NULL) {
            return false;
        }
    }
    memcpy(store_rec_state(r), state, size);
    store_set_expire(srv.store, r, fresh_at);
    return true;
}

void
limit_keep_until(struct store_rec *r, int64_t fresh_at, int64_t now)
{
    if (fresh_at <= now) {
        store_remove(srv.store, r);
    } else {
        store_set_expire(srv.store, r, fresh_at);
    }
}

static int64_t
rl_duration(int64_t ns, bool ms)
{
    return limit_ceil_div(ns, ms ? LIMIT_NS_PER_MS : LIMIT_NS_PER_SEC);
}

void
reply_decision(struct conn *c, const struct limit_decision *d, bool ms)
{
    int64_t v[5] = { d->limited ? 1 : 0, d->limit, d->remaining,
                     d->limited ? rl_duration(d->retry_after_ns, ms) : -1,
                     rl_duration(d->reset_after_ns, ms) };
    cmd_count_decision(c, d->limited);
    reply_int5(&c->out, v);
}

void
cmd_rl_fixed(struct conn *c, struct resp_request *req)
{
    struct fwin_params p;
    struct rl_opts o;
    struct fwin_state next;
    struct limit_decision d;
    bool ok;

    if (!parse_limit_window(c, req, &p.limit, &p.window) ||
        !parse_rl_options(c, req, 4, RL_COST | RL_ALIGN | RL_PEEK | RL_MS,
                          &o)) {
        return;
    }
    p.cost = o.cost;
    p.align = o.align;
    int64_t now = clock_wall_now();
    struct store_rec *r = lookup_typed(c, req, KEY_FIXED, now, &ok);
    if (!ok) {
        return;
    }
    if (!check_status(c, fwin_apply(&p, r != NULL,
                                    r ? store_rec_state(r) : NULL, now,
                                    &next, &d))) {
        return;
    }
    if (!o.peek && !commit_state(c, req, r, KEY_FIXED, &next, sizeof(next),
                                 d.fresh_at, now)) {
        return;
    }
    reply_decision(c, &d, o.ms);
}

void
cmd_rl_sliding(struct conn *c, struct resp_request *req)
{
    struct swin_params p;
    struct rl_opts o;
    struct swin_state next;
    struct limit_decision d;
    bool ok;

    if (!parse_limit_window(c, req, &p.limit, &p.window) ||
        !parse_rl_options(c, req, 4, RL_COST | RL_PEEK | RL_MS, &o)) {
        return;
    }
    p.cost = o.cost;
    int64_t now = clock_wall_now();
    struct store_rec *r = lookup_typed(c, req, KEY_SLIDING, now, &ok);
    if (!ok) {
        return;
    }
    if (!check_status(c, swin_apply(&p, r != NULL,
                                    r ? store_rec_state(r) : NULL, now,
                                    &next, &d))) {
        return;
    }
    if (!o.peek && !commit_state(c, req, r, KEY_SLIDING, &next,
                                 sizeof(next), d.fresh_at, now)) {
        return;
    }
    reply_decision(c, &d, o.ms);
}
