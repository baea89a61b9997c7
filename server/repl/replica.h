/*
 * replica.h - a replica's link to its primary: the TCP connection this
 * side owns, from REPLICAOF through name resolution, the handshake and
 * the snapshot's transfer and load to the stream, applied and passed on
 * to replicas of our own (primary.h) byte for byte. replication.h is the
 * face the server calls; these are what it calls here.
 */
#ifndef CELLGATE_REPLICA_H
#define CELLGATE_REPLICA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct textbuf;

/* Does this node follow a primary (REPLICAOF host port, its link in any
 * state)? srv.repl_following says the same. */
bool replica_active(void);

/* As repl_set_primary, repl_announce_default, repl_link_up,
 * repl_data_age_ms,
 * repl_same_primary (replication.h). */
void replica_set_primary(const char *host, int port);
void replica_announce_default(const char *host, int port);
bool replica_link_up(void);
int64_t replica_data_age_ms(void);
bool replica_same_primary(const char *host, int port);

/* How a Redis primary's commands are run (repl_set_command_ops). */
struct resp_request;
struct repl_command_ops {
    /* Run one command of the stream on the link's own client, its reply
     * dropped: true when it applied; false with err (the error the reply
     * said) when it did not. */
    bool (*run)(struct resp_request *req, char *err, size_t errlen);
    /* The link's client starts over: its open MULTI discarded, and, for a
     * full sync (full), database 0 selected. */
    void (*reset)(bool full);
};

/* As repl_set_command_ops, repl_follows_redis (replication.h). */
void replica_set_command_ops(const struct repl_command_ops *ops);
bool replica_follows_redis(void);

/* From cron (now: monotonic ms): reconnecting, timeouts, ACKs. */
void replica_cron(int64_t now);

/* INFO replication's lines about the link (role:slave to
 * replica_announced), ROLE's reply as a replica. */
void replica_info(struct textbuf *t, int64_t now);
void replica_role(struct conn *c);

/* Shutdown: the link closed, no reconnecting. Teardown: a primary again,
 * the link's buffer freed. */
void replica_shutdown(void);
void replica_teardown(void);

#endif
