/*
 * cmd_topdenied.c - RL.TOPDENIED [COUNT n] [DB index]: the keys the
 * limiters denied most lately in a database (server/topdenied.h), most
 * first, as [key, count] pairs. Counts are Space-Saving's (an upper bound,
 * decayed by halves every minute), so they are for ranking, not billing.
 */
#include <stdint.h>

#include "lib/mem.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/server.h"
#include "server/topdenied.h"

#define TOPDENIED_DEFAULT_COUNT 10

struct topdenied_args {
    int64_t count;
    int db;
};

/* The options in any order and case; false after replying the error. */
static bool
parse_args(struct conn *c, const struct resp_request *req,
           struct topdenied_args *a)
{
    a->count = TOPDENIED_DEFAULT_COUNT;
    a->db = c->db;
    for (size_t i = 1; i < req->argc; i += 2) {
        if (i + 1 >= req->argc) {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
        if (cmd_arg_is(req, i, "COUNT")) {
            if (!cmd_arg_nonneg(c, req, i + 1, ERR_NOT_INTEGER, ERR_POSITIVE,
                                &a->count)) {
                return false;
            }
        } else if (cmd_arg_is(req, i, "DB")) {
            if (!cmd_arg_int(c, req, i + 1, NULL, &a->db)) {
                return false;
            }
            if (a->db < 0 || (size_t)a->db >= srv.ndbs) {
                cmd_error(c, ERR_DB_RANGE);
                return false;
            }
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

void
rl_topdenied_command(struct conn *c, struct resp_request *req)
{
    struct topdenied_args a;
    if (!parse_args(c, req, &a)) {
        return;
    }
    size_t max = srv.conf.top_denied_keys > 0
                     ? (size_t)srv.conf.top_denied_keys : 0;
    if ((uint64_t)a.count < max) {
        max = (size_t)a.count;
    }
    if (max == 0) {
        reply_array(&c->out, 0);
        return;
    }
    struct topk_entry *e = mem_malloc(max * sizeof(*e));
    if (e == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    size_t n = topdenied_top(a.db, e, max);
    reply_array(&c->out, n);
    for (size_t i = 0; i < n; i++) {
        reply_array(&c->out, 2);
        reply_bulk(&c->out, e[i].key, e[i].len);
        reply_int(&c->out, (int64_t)e[i].count);
    }
    mem_free(e);
}
