/*
 * primary_client.h - the client a Redis primary's replication stream runs
 * on, as Redis runs its master client: each command through the
 * dispatcher (the one write path: the journal, WATCH, notifications,
 * memory), its reply dropped, its writes let through on a read-only
 * replica. repl/replica.c calls it through struct repl_command_ops
 * (replication.h), which main.c hands it, since the wing sits below the
 * dispatcher.
 */
#ifndef CELLGATE_PRIMARY_CLIENT_H
#define CELLGATE_PRIMARY_CLIENT_H

#include "server/repl/replication.h"

/* The ops for repl_set_command_ops(). */
extern const struct repl_command_ops primary_client_ops;

/* Shutdown: its buffers and its open MULTI freed. */
void primary_client_teardown(void);

#endif
