/*
 * cmd_log.c - the limiters whose state grows with use: RL.LOG (exact
 * sliding log with per-request metadata), RL.ENTRIES, and RL.TIERS
 * (several windows over per-second buckets, all or nothing).
 *
 * Their states (struct ks_log, struct ks_tiers, keytype.h) point at
 * arrays the keyspace grows under maxmemory; the arrays are bounded by
 * log-max-entries and tiers-max-window.
 */
#include <string.h>
#include <strings.h>

#include "algorithms/fixed_window.h"
#include "algorithms/sliding_log.h"
#include "algorithms/sliding_window.h"
#include "algorithms/tiers.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/client.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/handlers/limit_cmd.h"
#include "server/notify.h"
#include "server/server.h"

#define TIERS_MAX 16            /* limit/window pairs per RL.TIERS call */

/* ---- RL.LOG ----------------------------------------------------------- */

static bool
parse_log_args(struct conn *c, struct resp_request *req,
               struct slog_params *p, struct limit_cmd_opts *o)
{
    if (!limit_cmd_parse_limit_window(c, req, &p->limit, &p->window) ||
        !limit_cmd_parse_options(c, req, 4,
                                 LIMIT_CMD_COST | LIMIT_CMD_META |
                                     LIMIT_CMD_PEEK | LIMIT_CMD_MS,
                                 o)) {
        return false;
    }
    if (p->limit > srv.conf.log_max_entries) {
        cmd_errorf(c, "ERR limit is above log-max-entries (%lld): use "
                    "RL.SLIDING for large limits",
                    (long long)srv.conf.log_max_entries);
        return false;
    }
    if (o->meta_len > KS_META_MAX) {
        cmd_errorf(c, "ERR META is longer than %d bytes", KS_META_MAX);
        return false;
    }
    p->cost = o->cost;
    return true;
}

/* The log's retention after a call that changes it: the longest window
 * any such call used while the key lived. */
static int64_t
log_keep_after(const struct ks_log *ls, const struct slog_params *p)
{
    int64_t window_ms = p->window * MS_PER_SEC; /* slog_decide checked it */
    return ls != NULL && ls->keep_ms > window_ms ? ls->keep_ms : window_ms;
}

/* RL.LOG's and RL.TIERS' record for a change: r, or argv[1] made a new
 * key of type (state of size bytes) when r is NULL; NULL after -OOM. */
static struct store_rec *
key_made(struct conn *c, const struct resp_request *req, struct store_rec *r,
         uint8_t type, size_t size)
{
    if (r == NULL) {
        r = keyspace_add(&c->hint, req->argv[1], req->argvlen[1], type, size);
        if (r == NULL) {
            cmd_error(c, ERR_OOM);
        }
    }
    return r;
}

/* Record an allowed take or refund into r (created when NULL). Replies
 * the error and returns false when memory is refused; the log is then as
 * before (a key created for it is removed). */
static bool
log_commit(struct conn *c, struct resp_request *req, struct store_rec *r,
           struct slog_params *p, const struct limit_cmd_opts *o,
           int64_t now)
{
    r = key_made(c, req, r, KEY_LOG, sizeof(struct ks_log));
    if (r == NULL) {
        return false;
    }
    struct ks_log *ls = store_rec_state(r);
    int64_t keep_ms = log_keep_after(ls->ring.len > 0 ? ls : NULL, p);
    if (p->cost > 0) {
        if (!keyspace_log_reserve(r, p, now, o->meta_len,
                                  srv.conf.log_max_entries)) {
            cmd_error(c, ERR_OOM);
            limit_cmd_keep_until(r, keytype_log_fresh_at(ls, now), now);
            return false;
        }
        keyspace_log_append(ls, now, p->cost, o->meta, o->meta_len);
    } else if (p->cost < 0) {
        slog_refund(&ls->ring, -p->cost);
    }
    ls->keep_ms = keep_ms;
    limit_cmd_keep_until(r, keytype_log_fresh_at(ls, now), now);
    notify_key(NOTIFY_GENERIC, "rl.log", req->argv[1], req->argvlen[1],
               srv.db);
    return true;
}

/*
 * RL.LOG. A log may serve calls with several windows; it keeps its entries
 * for the longest window of a call that changed it (its retention), and
 * each call counts the entries inside its own window. PEEK and denied
 * calls change nothing; a real call first drops what the retention no
 * longer keeps, which changes no answer.
 */
void
rl_log_command(struct conn *c, struct resp_request *req)
{
    static const struct slog_ring empty;
    struct slog_params p;
    struct limit_cmd_opts o;
    struct limit_decision d;
    bool ok;

    if (!parse_log_args(c, req, &p, &o)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = limit_cmd_lookup(c, req, KEY_LOG, now, &ok);
    if (!ok) {
        return;
    }
    struct ks_log *ls = r != NULL ? store_rec_state(r) : NULL;
    p.keep_ms = ls != NULL ? ls->keep_ms : 0;
    if (ls != NULL && !o.peek) {
        slog_expire(&ls->ring, ls->keep_ms, now);
    }
    if (!limit_cmd_check_status(c, slog_decide(&p, ls ? &ls->ring : &empty,
                                               now, &d))) {
        return;
    }
    if (!o.peek && !d.limited && p.cost != 0 &&
        (p.cost > 0 || (ls != NULL && ls->ring.len > 0)) &&
        !log_commit(c, req, r, &p, &o, now)) {
        return;
    }
    limit_cmd_reply_decision(c, req, &d, o.ms);
}

/* RL.ENTRIES key [COUNT n]: newest first, [time_ms, cost, meta|nil], the
 * entries the log keeps. Read-only. */
void
rl_entries_command(struct conn *c, struct resp_request *req)
{
    int64_t count = INT64_MAX;
    bool ok;
    if (req->argc == 4 && req->argvlen[2] == 5 &&
        strncasecmp(req->argv[2], "COUNT", 5) == 0) {
        if (!cmd_arg_nonneg(c, req, 3, ERR_NOT_INTEGER,
                            "ERR COUNT must be positive", &count)) {
            return;
        }
    } else if (req->argc != 2) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = limit_cmd_lookup(c, req, KEY_LOG, now, &ok);
    if (!ok) {
        return;
    }
    if (r == NULL) {
        reply_array(&c->out, 0);
        return;
    }
    const struct ks_log *ls = store_rec_state(r);
    struct slog_params keep = { 1, ls->keep_ms / MS_PER_SEC + 1, 0,
                                ls->keep_ms };
    uint32_t n = ls->ring.len - slog_uncounted(&keep, &ls->ring, now, NULL);
    if ((int64_t)n > count) {
        n = (uint32_t)count;
    }
    reply_array(&c->out, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct slog_entry *e = slog_newest(&ls->ring, i);
        reply_array(&c->out, 3);
        reply_int(&c->out, e->t_ms);
        reply_int(&c->out, e->cost);
        if (e->meta_len == 0) {
            reply_null(&c->out, c->proto);
        } else {
            reply_bulk(&c->out, ls->meta + e->meta_off, e->meta_len);
        }
    }
}

/* ---- RL.TIERS --------------------------------------------------------- */

/* limit/window pairs from argv[2] while the argument is a number. */
static bool
parse_tiers(struct conn *c, struct resp_request *req,
            struct tier_limit *tiers, uint32_t *ntiers, size_t *next,
            int64_t *max_window)
{
    size_t i = 2;
    int64_t v;
    *ntiers = 0;
    *max_window = 0;
    while (i + 1 < req->argc && num_parse_i64(req->argv[i], req->argvlen[i],
                                               &v)) {
        struct tier_limit *t = &tiers[*ntiers];
        if (*ntiers == TIERS_MAX) {
            cmd_errorf(c, "ERR at most %d tiers", TIERS_MAX);
            return false;
        }
        t->limit = v;
        if (!num_parse_i64(req->argv[i + 1], req->argvlen[i + 1],
                           &t->window)) {
            cmd_error(c, ERR_NOT_INTEGER);
            return false;
        }
        if (t->limit < 1 || t->window < 1) {
            cmd_error(c, ERR_LIMIT_WINDOW);
            return false;
        }
        if (t->window > srv.conf.tiers_max_window) {
            cmd_errorf(c, "ERR window is above tiers-max-window (%lld)",
                        (long long)srv.conf.tiers_max_window);
            return false;
        }
        if (t->window > *max_window) {
            *max_window = t->window;
        }
        (*ntiers)++;
        i += 2;
    }
    if (*ntiers == 0) {
        cmd_error(c, i + 1 < req->argc ? ERR_NOT_INTEGER : ERR_SYNTAX);
        return false;
    }
    *next = i;
    return true;
}

/* Record an allowed take or refund into r (created when NULL); as
 * log_commit(). */
static bool
tiers_commit(struct conn *c, struct resp_request *req, struct store_rec *r,
             const struct tier_params *p, int64_t max_window, int64_t now)
{
    r = key_made(c, req, r, KEY_TIERS, sizeof(struct ks_tiers));
    if (r == NULL) {
        return false;
    }
    struct ks_tiers *ts = store_rec_state(r);
    int64_t keep = ts->st.len > 0 && ts->keep > max_window ? ts->keep
                                                            : max_window;
    if (p->cost > 0 && tier_needs_bucket(&ts->st, now) &&
        !keyspace_tiers_reserve(r)) {
        cmd_error(c, ERR_OOM);
        limit_cmd_keep_until(r, keytype_tiers_fresh_at(ts, now), now);
        return false;
    }
    tier_commit(&ts->st, now, p->cost);
    ts->keep = keep;
    limit_cmd_keep_until(r, keytype_tiers_fresh_at(ts, now), now);
    notify_key(NOTIFY_GENERIC, "rl.tiers", req->argv[1], req->argvlen[1],
               srv.db);
    return true;
}

/* RL.TIERS: buckets kept for the largest window of a call that changed
 * the key, each tier counting its own window (as RL.LOG). */
void
rl_tiers_command(struct conn *c, struct resp_request *req)
{
    static const struct tier_state empty;
    struct tier_limit tiers[TIERS_MAX];
    struct tier_params p = { 0 };
    struct limit_cmd_opts o;
    struct limit_decision d;
    size_t next;
    int64_t max_window;
    bool ok;

    if (!parse_tiers(c, req, tiers, &p.ntiers, &next, &max_window) ||
        !limit_cmd_parse_options(c, req, next,
                                 LIMIT_CMD_COST | LIMIT_CMD_PEEK |
                                     LIMIT_CMD_MS,
                                 &o)) {
        return;
    }
    p.tiers = tiers;
    p.cost = o.cost;
    int64_t now = clock_wall_now();
    struct store_rec *r = limit_cmd_lookup(c, req, KEY_TIERS, now, &ok);
    if (!ok) {
        return;
    }
    struct ks_tiers *ts = r != NULL ? store_rec_state(r) : NULL;
    p.keep = ts != NULL ? ts->keep : 0;
    if (ts != NULL && !o.peek) {
        tier_expire(&ts->st, ts->keep, now);
    }
    if (!limit_cmd_check_status(c, tier_decide(&p, ts ? &ts->st : &empty,
                                               now, &d))) {
        return;
    }
    if (!o.peek && !d.limited && p.cost != 0 &&
        (p.cost > 0 || (ts != NULL && ts->st.len > 0)) &&
        !tiers_commit(c, req, r, &p, max_window, now)) {
        return;
    }
    limit_cmd_reply_decision(c, req, &d, o.ms);
}
