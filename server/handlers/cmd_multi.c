/*
 * cmd_multi.c - MULTI, EXEC, DISCARD, WATCH, UNWATCH (the transaction
 * itself is multi.c; the dispatcher queues and runs it).
 */
#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/multi.h"

void
multi_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    if (multi_open(c, c->multi)) {
        cmd_error(c, "ERR MULTI calls can not be nested");
    } else if (!multi_begin(c)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_ok(&c->out);
    }
}

/* As Redis: a refused command while queuing aborts with -EXECABORT; a
 * watched key that changed (or expired) gives a null array; either way,
 * and after running, the transaction is over. */
void
exec_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    if (!multi_open(c, c->multi)) {
        cmd_error(c, "ERR EXEC without MULTI");
        return;
    }
    bool changed = multi_watched_changed(c);
    if (c->multi->flags & MULTI_DIRTY_EXEC) {
        multi_discard(c);
        cmd_error(c, "EXECABORT Transaction discarded because of previous "
                     "errors.");
        return;
    }
    if (changed) {
        multi_discard(c);
        reply_null_array(&c->out, c->proto);
        return;
    }
    /* Its effects reach a restart or a replica all together or not at
     * all, as Redis wraps them in MULTI/EXEC. */
    keyspace_group_begin();
    cmd_run_queued(c);
    keyspace_group_end();
}

void
discard_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    if (!multi_open(c, c->multi)) {
        cmd_error(c, "ERR DISCARD without MULTI");
        return;
    }
    multi_discard(c);
    reply_ok(&c->out);
}

void
watch_command(struct conn *c, struct resp_request *req)
{
    if (multi_open(c, c->multi)) {
        cmd_error(c, "ERR WATCH inside MULTI is not allowed");
        return;
    }
    /* Already dirty: watching more cannot save the transaction. */
    if (c->multi == NULL || !(c->multi->flags & MULTI_DIRTY_CAS)) {
        for (size_t i = 1; i < req->argc; i++) {
            if (!multi_watch(c, req->argv[i], req->argvlen[i])) {
                cmd_error(c, ERR_NOMEM);
                return;
            }
        }
    }
    reply_ok(&c->out);
}

void
unwatch_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    multi_unwatch(c);
    reply_ok(&c->out);
}
