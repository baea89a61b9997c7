/*
 * cmd_rlcheck.c - RL.CHECK, a named limit's decision over RESP (the same
 * decision, on the same counter, as Envoy's ShouldRateLimit gets), and
 * CONFIG RELOAD-LIMITS.
 *
 *   RL.CHECK <domain> <key>=<value> [<key>=<value> ...] [HITS n] [PEEK] [MS]
 *
 * One descriptor: its entries in order. The reply is the limiter commands'
 * five integers for the limit that applies; a descriptor without one
 * (unknown domain, no match, unlimited) is allowed: 0 -1 -1 -1 -1.
 */
#include <string.h>

#include "lib/num.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/handlers/limit_cmd.h"
#include "server/log.h"
#include "server/envoy/named_limits.h"
#include "server/server.h"

struct check_args {
    struct limits_entry e[LIMITS_MAX_DEPTH];
    size_t n;
    int64_t hits;
    bool peek;
    bool ms;
};

/* key=value at argv[i] into a; false after replying the error. */
static bool
add_entry(struct conn *c, struct check_args *a, const char *arg, size_t len,
          const char *eq)
{
    if (eq == arg) {
        cmd_error(c, "ERR descriptor entries are key=value with a key");
        return false;
    }
    if (a->n == LIMITS_MAX_DEPTH) {
        cmd_errorf(c, "ERR RL.CHECK takes at most %d key=value entries",
                   LIMITS_MAX_DEPTH);
        return false;
    }
    struct limits_entry *e = &a->e[a->n++];
    e->key = arg;
    e->klen = (size_t)(eq - arg);
    e->value = eq + 1;
    e->vlen = len - e->klen - 1;
    return true;
}

static bool
parse_check(struct conn *c, struct resp_request *req, struct check_args *a)
{
    memset(a, 0, sizeof(*a));
    a->hits = 1;
    for (size_t i = 2; i < req->argc; i++) {
        const char *arg = req->argv[i];
        size_t len = req->argvlen[i];
        const char *eq = memchr(arg, '=', len);
        if (eq != NULL) {
            if (!add_entry(c, a, arg, len, eq)) {
                return false;
            }
        } else if (cmd_arg_is(req, i, "hits") && i + 1 < req->argc) {
            i++;
            if (!num_parse_i64(req->argv[i], req->argvlen[i], &a->hits) ||
                a->hits < 0) {
                cmd_error(c, ERR_NOT_INTEGER);
                return false;
            }
        } else if (cmd_arg_is(req, i, "peek")) {
            a->peek = true;
        } else if (cmd_arg_is(req, i, "ms")) {
            a->ms = true;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    if (a->n == 0) {
        cmd_error(c, "ERR RL.CHECK wants at least one key=value entry");
        return false;
    }
    return true;
}

void
rl_check_command(struct conn *c, struct resp_request *req)
{
    struct check_args a;
    struct nl_status st;
    enum nl_code overall;
    char err[128];
    if (cluster_routing()) {
        cmd_error(c, "ERR RL.CHECK is not available with cluster-mode yes");
        return;
    }
    if (!parse_check(c, req, &a)) {
        return;
    }
    struct nl_descriptor d = { a.e, a.n, (uint64_t)a.hits, false, 0,
                               LIMITS_UNIT_UNKNOWN };
    if (named_limits_check(req->argv[1], req->argvlen[1], &d, 1, a.peek,
                           clock_wall_now(), &st, &overall, err,
                           sizeof(err)) != 0) {
        if (strcmp(err, "OOM") == 0) {
            cmd_error(c, ERR_OOM);
        } else {
            cmd_errorf(c, "ERR %s", err);
        }
        return;
    }
    if (!st.has_limit) {
        int64_t none[5] = { 0, -1, -1, -1, -1 };
        cmd_count_decision(c, false);
        reply_int5(&c->out, none);
        return;
    }
    struct limit_decision dec = { st.code == NL_OVER_LIMIT,
                                  st.requests_per_unit, st.remaining,
                                  st.retry_ns, st.reset_ns, 0 };
    limit_cmd_reply_decision(c, &dec, a.ms);
}

/* CONFIG RELOAD-LIMITS: limits-file again, whole, or an error and the
 * running limits stay. */
void
config_reload_limits_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    cmd_reply_reload(c, named_limits_reload);
}
