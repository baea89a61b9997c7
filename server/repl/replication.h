/*
 * replication.h - primaries and replicas, in Redis's shape, carrying the
 * journal's effect records.
 *
 * A primary's replication stream is RESP, so its offsets count bytes as
 * Redis's do and a replica can proxy it verbatim to replicas of its own:
 *   CG.EFFECTS <records>   the effect records of one loop pass (journal.h)
 *   PING                   every repl-ping-replica-period, so a replica
 *                          can tell a quiet primary from a dead link
 * Records carry absolute times, so a replica never re-runs a limiter with
 * its own clock. The last repl-backlog-size bytes of the stream stay in a
 * ring (the backlog): a replica that lost its link asks PSYNC <replid>
 * <offset> and continues from there (+CONTINUE) when the backlog still
 * holds it; otherwise it gets +FULLRESYNC and a snapshot written by a
 * forked child (so the primary keeps serving), then the stream from the
 * offset the snapshot stands at.
 *
 * A Redis 7.0 primary's stream is Redis's own: the commands its clients
 * ran (SELECT, MULTI/EXEC around a script's effects, SET ... PXAT,
 * PEXPIREAT, DEL of expired keys, FUNCTION LOAD...), PING and REPLCONF
 * GETACK, and its snapshot an RDB file. replica.c tells the two kinds
 * apart by the snapshot's magic (or by the first command after a
 * +CONTINUE), and runs a Redis primary's commands as Redis runs its
 * master client: through the dispatcher, which sits above this wing and
 * is handed in as struct repl_command_ops. Such a replica serves no
 * replicas of its own (its stream is Redis's, which cellgate's replicas
 * cannot apply): PSYNC is refused until it is promoted.
 *
 * On the primary, a replica is a client that sent PSYNC (the rest of its
 * handshake: REPLCONF listening-port, capa, ACK): primary.c. On a
 * replica, the link to the primary is the wing's own TCP connection
 * (replica.c): PING, AUTH (masterauth), REPLCONF, PSYNC, the snapshot,
 * then the stream, with REPLCONF ACK <offset> every second. The stream's
 * IDs, offset and backlog are stream.c's. This header is what the rest
 * of the server calls; replication.c passes each call to the part that
 * answers it.
 */
#ifndef CELLGATE_REPLICATION_H
#define CELLGATE_REPLICATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"
#include "server/repl/replica.h"

struct conn;
struct textbuf;

/* ---- either role ------------------------------------------------------- */

/* Read per command (READONLY): a plain load of srv.repl_following, which
 * replica.c keeps. */
static inline bool
repl_is_replica(void)
{
    return srv.repl_following;
}

/* From cron: pings, ACKs, timeouts, reconnecting, finished snapshots. */
void repl_cron(void);

/* INFO replication, ROLE. */
void repl_info(struct textbuf *t);
void repl_role(struct conn *c);

/* Shutdown: the link to the primary closed (its handle would keep the
 * loop alive), a snapshot child stopped. */
void repl_shutdown(void);

void repl_teardown(void);

/* ---- the primary ------------------------------------------------------- */

/* Is a stream kept (a replica attached since start, or the backlog)? Then
 * every write must become an effect record (keyspace journaling). */
bool repl_streaming(void);

/* PSYNC replid offset from client c (its REPLCONFs before): +CONTINUE
 * and the backlog, or +FULLRESYNC and a snapshot. The caller wrote the
 * pending effects first, so the snapshot stands at the stream's offset.
 * false (an error sent) when it cannot. */
bool repl_psync(struct conn *c, const char *replid, size_t idlen,
                int64_t offset);

/* SYNC: a full sync in Redis's RDB format (redis-cli --rdb, --replica),
 * then the stream. false (an error sent) when it cannot. */
bool repl_sync(struct conn *c);

/* REPLCONF from a replica: listening-port, ip-address, capa, ACK. */
void repl_replconf(struct conn *c, const char *key, size_t klen,
                   const char *value, size_t vlen);

/* c is closing: it is no replica any more. */
void repl_forget(struct conn *c);

bool repl_is_replica_client(const struct conn *c);

/* Clients that became replicas (sent PSYNC): INFO's connected_slaves,
 * and what connected_clients leaves out, as Redis counts. */
size_t repl_replica_count(void);

/* WAIT numreplicas timeout: true when c now waits (its reply and its
 * next requests come once that many replicas acknowledged the stream up
 * to here, or at the timeout; 0 ms = no timeout); false when it need not
 * (the caller answers repl_acked_now()). */
bool repl_wait(struct conn *c, size_t replicas, int64_t timeout_ms);
size_t repl_acked_now(void);

/* CLIENT UNBLOCK of a client in WAIT: false when it does not wait; else it
 * waits no more, answered as its timeout would (answer) or not (the
 * caller replied an error). */
bool repl_unwait(struct conn *c, bool answer);

/* Replicas online whose last ACK is at most min-replicas-max-lag old. */
size_t repl_good_replicas(void);

/* The bytes our replicas' output buffers take (Redis's
 * mem_clients_slaves): memory maxmemory does not count, so a replica
 * that lags never makes the primary refuse writes or evict for it. */
size_t repl_output_memory(void);

/* ---- the replica ------------------------------------------------------- */

/* REPLICAOF host port: follow that primary (reconnecting as needed).
 * REPLICAOF NO ONE (host NULL): become a primary, keeping the data and
 * the stream's history (so replicas of the old primary can continue). */
void repl_set_primary(const char *host, int port);

/* The replication offset: master_repl_offset of a primary, the offset
 * applied of a replica (CLUSTER SHARDS, the cluster bus's pings). */
int64_t repl_offset(void);

/* The address to tell a primary when replica-announce-ip/-port are not
 * set (a cluster node's cluster-node line), so Sentinel sees that. */
void repl_announce_default(const char *host, int port);

/* A replica in step with its primary (so it may serve replicas). */
bool repl_link_up(void);

/* How old a replica's data is (Redis's data_age of a failover): ms since
 * the primary was last heard while the link is up, else since it went
 * down (0: never up). */
int64_t repl_data_age_ms(void);

/* Was the replica given this primary already? */
bool repl_same_primary(const char *host, int port);

/* How a Redis primary's commands are run (struct repl_command_ops,
 * replica.h): the dispatcher's, handed over at start-up (main.c), as
 * Redis runs its master client. */
void repl_set_command_ops(const struct repl_command_ops *ops);

/* Does this replica follow a Redis primary (its stream Redis's)? */
bool repl_follows_redis(void);

#endif
