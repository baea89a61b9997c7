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
#include <stdint.h>

struct conn;
struct textbuf;

/* Does this node follow a primary (REPLICAOF host port, its link in any
 * state)? srv.repl_following says the same. */
bool replica_active(void);

/* As repl_set_primary, repl_announce_default, repl_link_up,
 * repl_same_primary (replication.h). */
void replica_set_primary(const char *host, int port);
void replica_announce_default(const char *host, int port);
bool replica_link_up(void);
bool replica_same_primary(const char *host, int port);

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
