/*
 * cmd_slowlog.c - the SLOWLOG command over the recorder in slowlog.c.
 */
#include "lib/num.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/slowlog.h"

HANDLER_VARIANT(slowlog_command, cmd_dispatch_subcommand,
                cmd_lookup("slowlog", 7))

static void
reply_entry(struct conn *c, const struct slow_entry *e)
{
    reply_array(&c->out, 6);
    reply_int(&c->out, (int64_t)e->id);
    reply_int(&c->out, e->time);
    reply_int(&c->out, (int64_t)e->usec);
    reply_array(&c->out, (size_t)e->argc);
    for (int i = 0; i < e->argc; i++) {
        reply_bulk(&c->out, e->argv[i], e->argvlen[i]);
    }
    reply_bulkz(&c->out, e->addr);
    reply_bulkz(&c->out, e->name);
}

void
slowlog_get_command(struct conn *c, struct resp_request *req)
{
    int64_t count = 10;
    if (req->argc == 3 &&
        (!num_parse_i64(req->argv[2], req->argvlen[2], &count) ||
         count < -1)) {
        cmd_error(c, "ERR count should be greater than or equal to -1");
        return;
    }
    if (req->argc > 3) {
        cmd_errorf(c, ERR_WRONG_ARITY, "slowlog|get");
        return;
    }
    size_t len = slowlog_len();
    size_t n = count < 0 || (uint64_t)count > len ? len : (size_t)count;
    reply_array(&c->out, n);
    for (size_t i = 0; i < n; i++) {
        reply_entry(c, slowlog_newest(i));
    }
}

void
slowlog_len_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_int(&c->out, (int64_t)slowlog_len());
}

void
slowlog_reset_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    slowlog_reset();
    reply_ok(&c->out);
}

