/*
 * guard.h - does the server's state let a write run now? Each of Redis's
 * rules against a write written once, with its error text.
 *
 * Three callers ask, each in Redis's own order: the dispatcher for a
 * client's command (processCommand(): MISCONF, NOREPLICAS, READONLY), the
 * script engine for EVAL of a script whose #!lua line makes it a write
 * (the same order), and redis.call for a script's command
 * (scriptVerifyWriteCommandAllow(): READONLY first). Each asks with what
 * it knows of the command (does it write, is it a PING); none of the
 * rules needs the command's row, so this file sits below the dispatcher
 * and the scripts, and reads only state any thread may read.
 */
#ifndef CELLGATE_GUARD_H
#define CELLGATE_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "server/persist/persist.h"
#include "server/repl/replication.h"
#include "server/server.h"
#include "server/store.h"

enum guard_verdict {
    GUARD_RUN = 0,
    GUARD_MISCONF,      /* the journal cannot be written */
    GUARD_NOREPLICAS,   /* fewer good replicas than min-replicas-to-write */
    GUARD_READONLY,     /* a read-only replica (its primary's link may) */
};

/* The order the rules are asked in. */
enum guard_order {
    GUARD_AS_COMMAND,   /* processCommand(): MISCONF, NOREPLICAS, READONLY */
    GUARD_AS_SCRIPT_CALL, /* a script's redis.call: READONLY first */
};

/* The journal refuses writes, and PING with them (Redis's -MISCONF is for
 * "write commands and PING"). */
static inline bool
guard_disk_refuses(void)
{
    return persist_refuses_writes();
}

/* min-replicas-to-write: a primary with fewer good replicas refuses. */
static inline bool
guard_too_few_replicas(void)
{
    return srv.conf.min_replicas_to_write > 0 && !repl_is_replica() &&
           repl_good_replicas() < (size_t)srv.conf.min_replicas_to_write;
}

/* A replica of a Redis primary is read-only whatever replica-read-only
 * says: it keeps dead keys for the primary's DEL (store_keep_dead), and a
 * client's write could not tell them from absent ones. */
static inline bool
guard_read_only_replica(bool from_primary)
{
    return repl_is_replica() &&
           (srv.conf.replica_read_only || store_keep_dead) && !from_primary;
}

/* The first rule that refuses a write now, in `order`; GUARD_RUN when
 * none does. from_primary: the write comes from this replica's primary
 * (a script the replication link runs), which READONLY lets through.
 * Inline: every write a client sends asks it, and each rule is a test of
 * a flag or two. */
static inline enum guard_verdict
guard_write(enum guard_order order, bool from_primary)
{
    if (order == GUARD_AS_SCRIPT_CALL &&
        guard_read_only_replica(from_primary)) {
        return GUARD_READONLY;
    }
    if (guard_disk_refuses()) {
        return GUARD_MISCONF;
    }
    if (guard_too_few_replicas()) {
        return GUARD_NOREPLICAS;
    }
    if (order == GUARD_AS_COMMAND && guard_read_only_replica(from_primary)) {
        return GUARD_READONLY;
    }
    return GUARD_RUN;
}

/* The verdict's error reply, as Redis words it ("CODE text", no '-'):
 * a constant, or buf when the text carries a detail (MISCONF's cause).
 * NULL for GUARD_RUN. */
const char *guard_error(enum guard_verdict v, char *buf, size_t len);

#endif
