/*
 * cmd_lease.c - concurrency leases: RL.ACQUIRE, RL.REFRESH, RL.RELEASE,
 * RL.LEASES (docs/commands.md).
 *
 * A key of type KEY_LEASE holds at most `limit` live leases, one per
 * holder (struct ks_lease, algorithms/lease.h). Its expiry is its last
 * lease's end, so the wheel frees the key when every lease has ended; a
 * lease that ends before frees its slot at that instant (lease_decide()
 * counts only live ones), and its entry goes with the key's next write.
 *
 * RL.ACQUIRE ... WAIT t: with no slot free the client waits in the key's
 * queue (blocked.c, as BLPOP), first come first served: a RELEASE or any
 * other write to the key signals it, and since no write tells when a
 * lease ends, each waiter also wakes at the key's earliest lease end
 * (blocked_set_timed()). At its timeout it is answered the denied reply.
 * Inside MULTI and scripts it never waits.
 */
#include <string.h>

#include "algorithms/lease.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/rand.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/blocked.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/guard.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/handlers/limit_cmd.h"
#include "server/keyspace.h"
#include "server/notify.h"
#include "server/server.h"

#define LEASE_WAIT_MAX_MS (3600 * MS_PER_SEC)   /* WAIT's bound: 1 hour */
#define HOLDER_ID_LEN 16                        /* a generated holder */
#define ERR_LIMIT_LEASE "ERR limit and lease must be positive"
/* In a cluster a waiter looks at least this often whether its key's slot
 * is still served here (Redis's clientsCron redirects blocked clients). */
#define CLUSTER_RECHECK_MS 1000

struct acquire {
    int64_t limit;
    int64_t lease_ms;
    int64_t wait_ms;            /* 0: answer at once */
    const char *holder;         /* NULL: none given */
    size_t holder_len;
    bool peek;
    bool ms;
    bool hold;                  /* decide as PEEK, and a grant is answered
                                   as denied (CLIENT PAUSE holds writes) */
};

/* ---- arguments --------------------------------------------------------- */

/* A duration argument in s (ms with MS) as ms; false after the error. */
static bool
duration_ms(struct conn *c, const struct resp_request *req, size_t i,
            bool ms, int64_t *out)
{
    int64_t v;
    if (!num_parse_i64(req->argv[i], req->argvlen[i], &v) ||
        (!ms && !limit_mul(v, MS_PER_SEC, &v))) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    *out = v;
    return true;
}

/* Does argv[from..] hold the word MS (where an option may stand)? */
static bool
has_ms(const struct resp_request *req, size_t from)
{
    for (size_t i = from; i < req->argc; i++) {
        if (cmd_arg_is(req, i, "HOLDER") || cmd_arg_is(req, i, "WAIT")) {
            i++;
        } else if (cmd_arg_is(req, i, "MS")) {
            return true;
        }
    }
    return false;
}

static bool
valid_holder(struct conn *c, size_t len)
{
    if (len < 1 || len > LEASE_HOLDER_MAX) {
        cmd_errorf(c, "ERR holder must be 1 to %d bytes", LEASE_HOLDER_MAX);
        return false;
    }
    return true;
}

/* HOLDER, WAIT, PEEK and MS from argv[4] on. */
static bool
parse_acquire_options(struct conn *c, const struct resp_request *req,
                      struct acquire *a)
{
    for (size_t i = 4; i < req->argc; i++) {
        bool has_value = i + 1 < req->argc;
        if (cmd_arg_is(req, i, "PEEK")) {
            a->peek = true;
        } else if (cmd_arg_is(req, i, "MS")) {
            a->ms = true;
        } else if (has_value && cmd_arg_is(req, i, "HOLDER")) {
            a->holder = req->argv[++i];
            a->holder_len = req->argvlen[i];
            if (!valid_holder(c, a->holder_len)) {
                return false;
            }
            if (cmd_arg_is(req, i, "PEEK")) {
                /* The dispatcher reads PEEK anywhere as a read. */
                cmd_errorf(c, "ERR holder cannot be the word PEEK");
                return false;
            }
        } else if (has_value && cmd_arg_is(req, i, "WAIT")) {
            if (!duration_ms(c, req, ++i, a->ms, &a->wait_ms)) {
                return false;
            }
            if (a->wait_ms < 0 || a->wait_ms > LEASE_WAIT_MAX_MS) {
                cmd_errorf(c, "ERR WAIT must be 0 to %d seconds",
                           (int)(LEASE_WAIT_MAX_MS / MS_PER_SEC));
                return false;
            }
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

/* RL.ACQUIRE key limit lease [HOLDER id] [WAIT t] [PEEK] [MS]. */
static bool
parse_acquire(struct conn *c, const struct resp_request *req,
              struct acquire *a)
{
    *a = (struct acquire){ .ms = has_ms(req, 4) };
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &a->limit)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (!duration_ms(c, req, 3, a->ms, &a->lease_ms)) {
        return false;
    }
    if (a->limit < 1 || a->lease_ms < 1) {
        cmd_error(c, ERR_LIMIT_LEASE);
        return false;
    }
    if (a->limit > LEASE_LIMIT_MAX) {
        cmd_errorf(c, "ERR limit is above %d", LEASE_LIMIT_MAX);
        return false;
    }
    /* MS changed the reading of WAIT too: parse the rest with it known. */
    bool ms = a->ms;
    if (!parse_acquire_options(c, req, a)) {
        return false;
    }
    a->ms = ms;
    return true;
}

/* ---- the key ----------------------------------------------------------- */

/* Room for one more entry of len bytes in r's set (grown, admitted). */
static bool
lease_reserve(struct store_rec *r, size_t len)
{
    struct ks_lease *ls = store_rec_state(r);
    uint64_t need = (uint64_t)ls->set.used + lease_entry_size(len);
    if (need <= ls->set.cap) {
        return true;
    }
    uint64_t cap = (uint64_t)ls->set.cap * 2;
    cap = cap < need ? need : cap;
    cap = cap < 64 ? 64 : cap;
    void *buf = keyspace_realloc(ls->set.buf, (size_t)cap, r);
    if (buf == NULL) {
        return false;
    }
    ls->set.buf = buf;
    ls->set.cap = (uint32_t)cap;
    return true;
}

/* r's expiry follows its last lease; the key goes once none is live.
 * Tells the watchers and the journal either way. */
static void
lease_settle(struct store_rec *r, int64_t now)
{
    struct ks_lease *ls = store_rec_state(r);
    keyspace_keep_until(r, keytype_lease_fresh_at(ls, now), now);
}

/* A generated holder id: 16 hex digits of the process's splitmix64
 * sequence (a bijection of a counter from a random seed: no two alike). */
static void
new_holder(char *id)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t v = rand_u64();
    for (int i = HOLDER_ID_LEN - 1; i >= 0; i--) {
        id[i] = hex[v & 15];
        v >>= 4;
    }
}

/* Write a granted acquire into r (argv[1] made when NULL). false after
 * -OOM (nothing changed; a key made for it goes). */
static bool
acquire_commit(struct conn *c, const struct resp_request *req,
               struct store_rec *r, const struct acquire *a,
               const struct lease_decision *d, int64_t now)
{
    bool made = r == NULL;
    r = keyspace_upsert(&c->hint, req->argv[1], req->argvlen[1], r,
                        KEY_LEASE);
    if (r == NULL) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    struct ks_lease *ls = store_rec_state(r);
    if (d->held_off >= 0) {
        lease_set_end(&ls->set, (uint32_t)d->held_off, d->end_ms);
    } else if (lease_reserve(r, a->holder_len)) {
        (void)lease_append(&ls->set, a->holder, a->holder_len, d->end_ms);
    } else {
        cmd_error(c, ERR_OOM);
        if (made) {
            keyspace_delete(r);
        }
        return false;
    }
    lease_settle(r, now);
    keyspace_written(r);
    notify_key(NOTIFY_GENERIC, "rl.acquire", req->argv[1], req->argvlen[1],
               srv.db);
    return true;
}

/* ms as the reply's unit: s rounded up, or ms; -1 stays. */
static int64_t
reply_duration(int64_t ms, bool in_ms)
{
    if (ms < 0 || in_ms) {
        return ms;
    }
    return ms / MS_PER_SEC + (ms % MS_PER_SEC > 0);
}

static void
reply_acquire(struct conn *c, const struct resp_request *req,
              const struct lease_decision *d, const struct acquire *a)
{
    cmd_count_decision(c, req, d->limited);
    reply_array(&c->out, 6);
    reply_int(&c->out, d->limited ? 1 : 0);
    reply_int(&c->out, d->limit);
    reply_int(&c->out, d->remaining);
    reply_int(&c->out, reply_duration(d->retry_after_ms, a->ms));
    reply_int(&c->out, reply_duration(d->reset_after_ms, a->ms));
    if (a->holder != NULL && (a->holder_len > 0)) {
        reply_bulk(&c->out, a->holder, a->holder_len);
    } else {
        reply_null(&c->out, c->proto);
    }
}

/* ---- RL.ACQUIRE ----------------------------------------------------------- */

enum try_result { TRY_ERROR, TRY_GRANTED, TRY_DENIED };

/* Decide a parsed acquire and, unless PEEK, write it; replies unless
 * denied (the caller answers or waits). */
static enum try_result
try_acquire(struct conn *c, const struct resp_request *req,
            struct acquire *a, struct lease_decision *d)
{
    static const struct lease_set empty;
    char id[HOLDER_ID_LEN];
    bool ok;
    int64_t now = clock_wall_now();
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    struct store_rec *r = limit_cmd_lookup(c, (struct resp_request *)req,
                                           KEY_LEASE, now, &ok);
    if (!ok) {
        return TRY_ERROR;
    }
    struct ks_lease *ls = r != NULL ? store_rec_state(r) : NULL;
    if (ls != NULL && !a->peek) {
        (void)lease_prune(&ls->set, now_ms);
    }
    if (!limit_cmd_check_status(c, lease_decide(ls ? &ls->set : &empty,
                                                now_ms, a->limit, a->lease_ms,
                                                a->holder, a->holder_len,
                                                d))) {
        return TRY_ERROR;
    }
    if (!d->limited && a->hold) {
        int64_t last;
        (void)lease_live(ls ? &ls->set : &empty, now_ms, NULL, &last);
        *d = (struct lease_decision){ .limited = true, .limit = a->limit,
                                      .reset_after_ms = last - now_ms,
                                      .held_off = -1 };
    }
    if (d->limited) {
        return TRY_DENIED;
    }
    if (!a->peek) {
        if (a->holder == NULL) {
            new_holder(id);
            a->holder = id;
            a->holder_len = HOLDER_ID_LEN;
        }
        if (!acquire_commit(c, req, r, a, d, now)) {
            return TRY_ERROR;
        }
    }
    reply_acquire(c, req, d, a);
    if (a->holder == id) {
        a->holder = NULL;       /* id goes with this frame */
        a->holder_len = 0;
    }
    return TRY_GRANTED;
}

/* May a waiter still be granted here? Its key's slot may have gone (it
 * is answered -MOVED, -ASK or -CLUSTERDOWN, as Redis answers a blocked
 * client whose slot went), the server may refuse writes now (a primary
 * turned replica: -READONLY; -MISCONF, -NOREPLICAS). */
static bool
still_here(struct conn *c, const struct resp_request *req)
{
    struct cluster_redirect to;
    char buf[256];
    enum guard_verdict v = guard_write(GUARD_AS_COMMAND, false);
    if (v != GUARD_RUN) {
        cmd_error(c, guard_error(v, buf, sizeof(buf)));
        return false;
    }
    if (!cluster_routing()) {
        return true;
    }
    return cmd_reply_route(c, cluster_route_key(req->argv[1],
                                                req->argvlen[1], false, &to),
                           &to);
}

/* A waiter's turn on its ready key: granted (answered), or nobody after
 * it is served either (first come, first served). */
static enum blocked_served
serve_acquire(struct conn *c, const struct resp_request *req,
              const char *key, size_t len)
{
    struct acquire a;
    struct lease_decision d;
    (void)key;
    (void)len;
    if (!still_here(c, req)) {
        return BLOCKED_SERVED;
    }
    if (!parse_acquire(c, req, &a)) {
        return BLOCKED_SERVED;      /* cannot happen: parsed before */
    }
    a.peek = false;
    switch (try_acquire(c, req, &a, &d)) {
    case TRY_DENIED:
        return BLOCKED_ABSENT;
    default:
        return BLOCKED_SERVED;
    }
}

/* In how many ms the waiter's key may have a slot again by time alone:
 * its earliest lease's end (-1: nothing to wait for by time). */
static int64_t
acquire_wake(struct conn *c, const struct resp_request *req)
{
    struct key_hint h = { false, 0 };
    int64_t now = clock_wall_now();
    int64_t first;
    (void)c;
    struct store_rec *r = keyspace_lookup_write(&h, req->argv[1],
                                                req->argvlen[1], now);
    if (r == NULL || r->type != KEY_LEASE) {
        return 1;       /* deleted or replaced: its turn answers now */
    }
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    const struct ks_lease *ls = store_rec_state(r);
    if (lease_live(&ls->set, now_ms, &first, NULL) == 0) {
        return 1;
    }
    first -= now_ms;
    return cluster_routing() && first > CLUSTER_RECHECK_MS
               ? CLUSTER_RECHECK_MS
               : first;
}

/* The timeout's answer: the denied reply of the moment (or a grant,
 * when a lease ended in the instant before). */
static void
acquire_timed_out(struct conn *c, const struct resp_request *req)
{
    struct acquire a;
    struct lease_decision d;
    if (!still_here(c, req) || !parse_acquire(c, req, &a)) {
        return;
    }
    /* CLIENT PAUSE holds writes: denied, retry_after 0 if a slot is free. */
    a.hold = a.peek = srv.pause_end_ms != 0;
    if (try_acquire(c, req, &a, &d) == TRY_DENIED) {
        reply_acquire(c, req, &d, &a);
    }
}

static const struct blocked_timed acquire_timing = {
    .wake = acquire_wake,
    .timed_out = acquire_timed_out,
};

void
rl_acquire_command(struct conn *c, struct resp_request *req)
{
    struct acquire a;
    struct lease_decision d;
    if (!parse_acquire(c, req, &a)) {
        return;
    }
    if (try_acquire(c, req, &a, &d) != TRY_DENIED) {
        return;
    }
    if (a.wait_ms == 0 || a.peek || !coll_may_block(c)) {
        reply_acquire(c, req, &d, &a);
        return;
    }
    if (!blocked_wait(c, req, 1, 1, a.wait_ms, BLOCKED_LEASE,
                      serve_acquire)) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    /* Without memory for its wake-up it still waits, for a write to its
     * key or its timeout (answered as a lease's). */
    (void)blocked_set_timed(c, &acquire_timing);
}

/* ---- RL.REFRESH, RL.RELEASE, RL.LEASES ------------------------------------ */

/* argv[1]'s lease key (NULL: none) and holder argv[2]'s live entry. */
static struct store_rec *
find_live(struct conn *c, struct resp_request *req, int64_t now,
          struct lease_entry *e, bool *ok)
{
    struct store_rec *r = limit_cmd_lookup(c, req, KEY_LEASE, now, ok);
    if (r == NULL || !*ok) {
        return NULL;
    }
    const struct ks_lease *ls = store_rec_state(r);
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    if (!lease_find(&ls->set, req->argv[2], req->argvlen[2], e) ||
        e->end_ms <= now_ms) {
        return NULL;
    }
    return r;
}

/* RL.REFRESH key holder lease [MS]: :1, the lease now ends lease from
 * now; :0, the holder holds none (ended or released: not taken again). */
void
rl_refresh_command(struct conn *c, struct resp_request *req)
{
    int64_t lease_ms, end;
    struct lease_entry e;
    bool ok, ms = req->argc == 5 && cmd_arg_is(req, 4, "MS");
    if (req->argc > 5 || (req->argc == 5 && !ms)) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (!duration_ms(c, req, 3, ms, &lease_ms)) {
        return;
    }
    if (lease_ms < 1) {
        cmd_error(c, ERR_LIMIT_LEASE);
        return;
    }
    int64_t now = clock_wall_now();
    if (!limit_add(limit_floor_div(now, NS_PER_MS), lease_ms, &end)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    struct store_rec *r = find_live(c, req, now, &e, &ok);
    if (!ok) {
        return;
    }
    if (r != NULL) {
        struct ks_lease *ls = store_rec_state(r);
        lease_set_end(&ls->set, e.off, end);
        lease_settle(r, now);
        keyspace_written(r);
        notify_key(NOTIFY_GENERIC, "rl.refresh", req->argv[1],
                   req->argvlen[1], srv.db);
        /* A shorter lease may end before another waiter's wake. */
        blocked_signal(srv.db, req->argv[1], req->argvlen[1]);
    }
    reply_int(&c->out, r != NULL);
}

/* RL.RELEASE key holder: :1 released, :0 nothing changed. */
void
rl_release_command(struct conn *c, struct resp_request *req)
{
    struct lease_entry e;
    bool ok;
    int64_t now = clock_wall_now();
    struct store_rec *r = find_live(c, req, now, &e, &ok);
    if (!ok) {
        return;
    }
    if (r != NULL) {
        struct ks_lease *ls = store_rec_state(r);
        lease_remove(&ls->set, e.off);
        (void)lease_prune(&ls->set, limit_floor_div(now, NS_PER_MS));
        notify_key(NOTIFY_GENERIC, "rl.release", req->argv[1],
                   req->argvlen[1], srv.db);
        blocked_signal(srv.db, req->argv[1], req->argvlen[1]);
        lease_settle(r, now);   /* may remove r: last */
    }
    reply_int(&c->out, r != NULL);
}

/* RL.LEASES key [MS]: the live leases, oldest first, [holder, ttl]. */
void
rl_leases_command(struct conn *c, struct resp_request *req)
{
    bool ok, ms = req->argc == 3 && cmd_arg_is(req, 2, "MS");
    if (req->argc > 3 || (req->argc == 3 && !ms)) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    int64_t now = clock_wall_now();
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    struct store_rec *r = limit_cmd_lookup(c, req, KEY_LEASE, now, &ok);
    if (!ok) {
        return;
    }
    if (r == NULL) {
        reply_array(&c->out, 0);
        return;
    }
    const struct ks_lease *ls = store_rec_state(r);
    struct lease_entry e;
    uint32_t off = 0;
    reply_array(&c->out, lease_live(&ls->set, now_ms, NULL, NULL));
    while (lease_next(&ls->set, &off, &e)) {
        if (e.end_ms > now_ms) {
            reply_array(&c->out, 2);
            reply_bulk(&c->out, e.holder, e.len);
            reply_int(&c->out, reply_duration(e.end_ms - now_ms, ms));
        }
    }
}
