/*
 * cmd_rlcheck.c - RL.CHECK, a named limit's decision over RESP (the same
 * decision, on the same counter, as Envoy's ShouldRateLimit gets), and
 * CONFIG RELOAD-LIMITS.
 *
 *   RL.CHECK <domain> <key>=<value> [<key>=<value> ...]
 *            [ENTRY <key> <value>] [HITS n] [NEGATIVE]
 *            [LIMIT <requests> <unit>] [PEEK] [MS] [STATUS]
 *            [SHARE <member> <demand> <interval-ms>]
 *
 * One descriptor: its entries in order (ENTRY for a key holding '=', or
 * bytes of any kind). The reply is the limiter commands' five integers
 * for the limit that applies; a descriptor without one (unknown domain,
 * no match, unlimited) is allowed: 0 -1 -1 -1 -1. LIMIT is Envoy's
 * per-descriptor override; STATUS answers Envoy's DescriptorStatus as
 * eight values instead (code, has_limit, unlimited, requests_per_unit,
 * unit, remaining, nanoseconds until reset, the rule's name): what a node
 * forwarding a gRPC call asks the counter's owner (envoy/rls_forward.c).
 * SHARE, with STATUS, is RLQS across nodes (envoy/rlqs.c): the forwarding
 * node's Envoy, its demand in thousandths of a request a second and its
 * reporting interval; this node, the counter's owner, splits the pool
 * among every node's Envoys and answers that one's share as a ninth value.
 *
 * In a cluster the descriptor's counter key routes the command, as a key
 * routes any other: served here, or -MOVED to its slot's owner. That key
 * is not an argument, so the row names none; COMMAND GETKEYS answers the
 * counter (rl_check_key), which is how cluster clients find the node.
 *
 * NEGATIVE gives the HITS back (Envoy's is_negative_hits): always
 * allowed, the count floored at empty. The limit's shadow_mode and
 * quota_mode, and rls-shadow-mode, decide the first integer as they
 * decide a one-descriptor ShouldRateLimit's overall code.
 */
#include <string.h>

#include "lib/num.h"
#include "lib/textbuf.h"
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
#include "server/envoy/rlqs.h"
#include "server/server.h"

struct check_args {
    struct limits_entry e[LIMITS_MAX_DEPTH];
    size_t n;
    int64_t hits;
    bool has_override;
    uint32_t override_requests;
    enum limits_unit override_unit;
    bool negative;
    bool peek;
    bool ms;
    bool status;
    bool has_share;
    struct nl_share_ask share;
};

#define ERR_TOO_MANY_ENTRIES "ERR RL.CHECK takes at most 16 key=value entries"
_Static_assert(LIMITS_MAX_DEPTH == 16, "ERR_TOO_MANY_ENTRIES's number");

/* One more entry into a; false (and *why) when there is no room or no
 * key. */
static bool
add_entry(struct check_args *a, const char *key, size_t klen,
          const char *value, size_t vlen, const char **why)
{
    if (klen == 0) {
        *why = "ERR descriptor entries are key=value with a key";
        return false;
    }
    if (a->n == LIMITS_MAX_DEPTH) {
        *why = ERR_TOO_MANY_ENTRIES;
        return false;
    }
    a->e[a->n++] = (struct limits_entry){ key, klen, value, vlen };
    return true;
}

/* LIMIT <requests> <unit>: a unit by its number (Envoy's, 1 to 6) or its
 * name. */
static bool
parse_override(const struct resp_request *req, size_t i,
               struct check_args *a)
{
    int64_t requests, unit;
    if (!num_parse_i64(req->argv[i], req->argvlen[i], &requests) ||
        requests < 0 || requests > UINT32_MAX) {
        return false;
    }
    if (!num_parse_i64(req->argv[i + 1], req->argvlen[i + 1], &unit)) {
        unit = limits_unit_parse(req->argv[i + 1]);
    }
    if (unit < LIMITS_SECOND || unit > LIMITS_YEAR) {
        return false;
    }
    a->has_override = true;
    a->override_requests = (uint32_t)requests;
    a->override_unit = (enum limits_unit)unit;
    return true;
}

/* SHARE <member> <demand> <interval-ms>: an Envoy of the node that
 * forwards a fold (RLQS), its demand in thousandths of a request a second.
 */
static bool
parse_share(const struct resp_request *req, size_t i, struct check_args *a)
{
    int64_t demand, interval;
    if (req->argvlen[i] == 0 ||
        !num_parse_i64(req->argv[i + 1], req->argvlen[i + 1], &demand) ||
        !num_parse_i64(req->argv[i + 2], req->argvlen[i + 2], &interval) ||
        demand < 0 || interval < 0) {
        return false;
    }
    a->has_share = true;
    a->share = (struct nl_share_ask){ req->argv[i], req->argvlen[i],
                                      (uint64_t)demand, interval };
    return true;
}

/* The options among the entries; *i is the argument, moved past its
 * values. false with *why. */
static bool
parse_option(const struct resp_request *req, size_t *i,
             struct check_args *a, const char **why)
{
    size_t left = req->argc - *i - 1;
    *why = ERR_SYNTAX;
    if (cmd_arg_is(req, *i, "entry") && left >= 2) {
        *i += 2;
        return add_entry(a, req->argv[*i - 1], req->argvlen[*i - 1],
                         req->argv[*i], req->argvlen[*i], why);
    }
    if (cmd_arg_is(req, *i, "hits") && left >= 1) {
        *i += 1;
        *why = ERR_NOT_INTEGER;
        return num_parse_i64(req->argv[*i], req->argvlen[*i], &a->hits) &&
               a->hits >= 0;
    }
    if (cmd_arg_is(req, *i, "share") && left >= 3) {
        *i += 3;
        *why = "ERR SHARE wants <member> <demand> <interval-ms>, integers "
               "not below 0";
        return parse_share(req, *i - 2, a);
    }
    if (cmd_arg_is(req, *i, "limit") && left >= 2) {
        *i += 2;
        *why = "ERR LIMIT wants <requests> <unit>, a unit from SECOND (1) "
               "to YEAR (6)";
        return parse_override(req, *i - 1, a);
    }
    bool *flag = cmd_arg_is(req, *i, "peek") ? &a->peek
                 : cmd_arg_is(req, *i, "negative") ? &a->negative
                 : cmd_arg_is(req, *i, "ms") ? &a->ms
                 : cmd_arg_is(req, *i, "status") ? &a->status : NULL;
    if (flag == NULL) {
        return false;
    }
    *flag = true;
    return true;
}

/* The arguments into a; false with *why. */
static bool
parse_args(const struct resp_request *req, struct check_args *a,
           const char **why)
{
    memset(a, 0, sizeof(*a));
    a->hits = 1;
    a->override_unit = LIMITS_UNIT_UNKNOWN;
    for (size_t i = 2; i < req->argc; i++) {
        const char *arg = req->argv[i];
        size_t len = req->argvlen[i];
        const char *eq = memchr(arg, '=', len);
        if (eq != NULL ? !add_entry(a, arg, (size_t)(eq - arg), eq + 1,
                                    len - (size_t)(eq - arg) - 1, why)
                       : !parse_option(req, &i, a, why)) {
            return false;
        }
    }
    if (a->n == 0) {
        *why = "ERR RL.CHECK wants at least one key=value entry";
        return false;
    }
    if (a->has_share && !a->status) {
        *why = "ERR SHARE is answered with STATUS only";
        return false;
    }
    return true;
}

static struct nl_descriptor
descriptor_of(const struct check_args *a)
{
    return (struct nl_descriptor){ a->e, a->n, (uint64_t)a->hits,
                                   a->negative, a->has_override,
                                   a->override_requests, a->override_unit,
                                   a->has_share ? &a->share : NULL };
}

/* COMMAND GETKEYS RL.CHECK ...: the descriptor's counter, decided on or
 * not (a descriptor without a limit is answered by any node, so its
 * entries' own name routes it as well as another). */
bool
rl_check_key(const struct resp_request *req, struct textbuf *key)
{
    struct check_args a;
    struct nl_counter k;
    const char *why;
    char err[64];
    if (!parse_args(req, &a, &why)) {
        return false;
    }
    struct nl_descriptor d = descriptor_of(&a);
    return named_limits_counters(req->argv[1], req->argvlen[1], &d, 1, key,
                                 &k, err, sizeof(err)) == 0;
}

/* In a cluster: is the descriptor's counter served here? If not, the
 * client is told where. */
static bool
counter_served_here(struct conn *c, const struct resp_request *req,
                    const struct nl_descriptor *d)
{
    struct textbuf names = { NULL, 0, 0, false };
    struct nl_counter k;
    struct cluster_redirect to;
    char err[64];
    if (!cluster_routing()) {
        return true;
    }
    if (named_limits_counters(req->argv[1], req->argvlen[1], d, 1, &names,
                              &k, err, sizeof(err)) != 0) {
        textbuf_free(&names);
        return true;                    /* the check says why */
    }
    enum cluster_verdict v = !k.decides
        ? CLUSTER_HERE
        : cluster_route_key(names.p, k.len, c->asking,
                            &to);
    textbuf_free(&names);
    return cmd_reply_route(c, v, &to);
}

/* STATUS: Envoy's DescriptorStatus, for a node that forwards a call; with
 * SHARE a ninth value, the Envoy's share (thousandths of a request a
 * second, -1: none). */
static void
reply_descriptor_status(struct conn *c, const struct check_args *a,
                        const struct nl_status *st)
{
    reply_array(&c->out, a->has_share ? 9 : 8);
    reply_int(&c->out, st->code);
    reply_int(&c->out, st->has_limit);
    reply_int(&c->out, st->unlimited);
    reply_int(&c->out, st->requests_per_unit);
    reply_int(&c->out, st->unit);
    reply_int(&c->out, st->remaining);
    reply_int(&c->out, st->reset_ns);
    reply_bulk(&c->out, st->name, strlen(st->name));
    if (a->has_share) {
        reply_int(&c->out, st->has_share ? (int64_t)st->share_milli : -1);
    }
}

static void
reply_check(struct conn *c, const struct resp_request *req,
            const struct check_args *a, const struct nl_status *st,
            enum nl_code overall)
{
    if (a->status) {
        reply_descriptor_status(c, a, st);
        return;
    }
    if (!st->has_limit) {
        int64_t none[5] = { 0, -1, -1, -1, -1 };
        cmd_count_decision(c, req, false);
        reply_int5(&c->out, none);
        return;
    }
    bool limited = overall == NL_OVER_LIMIT;
    struct limit_decision dec = { limited, st->requests_per_unit,
                                  st->remaining, limited ? st->retry_ns : -1,
                                  st->reset_ns, 0 };
    limit_cmd_reply_decision(c, req, &dec, a->ms);
}

void
rl_check_command(struct conn *c, struct resp_request *req)
{
    struct check_args a;
    struct nl_status st;
    enum nl_code overall;
    const char *why;
    char err[128];
    if (!parse_args(req, &a, &why)) {
        cmd_error(c, why);
        return;
    }
    struct nl_descriptor d = descriptor_of(&a);
    if (!counter_served_here(c, req, &d)) {
        return;
    }
    if (named_limits_check(req->argv[1], req->argvlen[1], &d, 1, NULL,
                           a.peek, clock_wall_now(), &st, &overall, err,
                           sizeof(err)) != 0) {
        if (strcmp(err, "OOM") == 0) {
            cmd_error(c, ERR_OOM);
        } else {
            cmd_errorf(c, "ERR %s", err);
        }
        return;
    }
    if (a.has_share && !a.peek && !a.negative) {
        /* An Envoy of another node (RLQS): its share of every node's. */
        rlqs_share_remote(req->argv[1], req->argvlen[1], &d,
                          st.exceeded || st.code == NL_OVER_LIMIT
                          ? 0 : d.hits, &st);
    }
    /* STATUS asks for the descriptor alone: the forwarding node answers
     * the request, and applies the global switches once. */
    if (a.peek && srv.conf.rls_shadow_mode) {
        overall = NL_OK;                /* a look counts nothing */
    } else if (!a.status) {
        overall = named_limits_global_shadow(overall);
    }
    reply_check(c, req, &a, &st, overall);
}

/* CONFIG RELOAD-LIMITS: limits-file again, whole, or an error and the
 * running limits stay. */
void
config_reload_limits_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    cmd_reply_reload(c, named_limits_reload);
}
