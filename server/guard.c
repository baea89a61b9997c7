/*
 * guard.c - the rules that refuse a write for the server's state (see
 * guard.h), each written once, its text beside it in errors.h.
 */
#include "server/guard.h"

#include <stdio.h>
#include <string.h>

#include "server/errors.h"
#include "server/persist/persist.h"
#include "server/repl/replication.h"
#include "server/server.h"

bool
guard_disk_refuses(void)
{
    return persist_refuses_writes();
}

/* min-replicas-to-write: a primary with fewer good replicas refuses. */
static bool
too_few_replicas(void)
{
    return srv.conf.min_replicas_to_write > 0 && !repl_is_replica() &&
           repl_good_replicas() < (size_t)srv.conf.min_replicas_to_write;
}

static bool
read_only_replica(bool from_primary)
{
    return repl_is_replica() && srv.conf.replica_read_only && !from_primary;
}

enum guard_verdict
guard_write(enum guard_order order, bool from_primary)
{
    if (order == GUARD_AS_SCRIPT_CALL && read_only_replica(from_primary)) {
        return GUARD_READONLY;
    }
    if (guard_disk_refuses()) {
        return GUARD_MISCONF;
    }
    if (too_few_replicas()) {
        return GUARD_NOREPLICAS;
    }
    if (order == GUARD_AS_COMMAND && read_only_replica(from_primary)) {
        return GUARD_READONLY;
    }
    return GUARD_RUN;
}

const char *
guard_error(enum guard_verdict v, char *buf, size_t len)
{
    switch (v) {
    case GUARD_MISCONF:
        snprintf(buf, len, ERR_MISCONF_FMT, strerror(persist_errno()));
        return buf;
    case GUARD_NOREPLICAS:
        return ERR_NOREPLICAS;
    case GUARD_READONLY:
        return ERR_READONLY;
    case GUARD_RUN:
        break;
    }
    return NULL;
}
