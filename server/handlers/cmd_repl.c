/*
 * cmd_repl.c - REPLICAOF (SLAVEOF), REPLCONF, PSYNC, SYNC, WAIT, ROLE:
 * Redis's replication commands (replication.h does the work).
 */
#include <stdio.h>
#include <string.h>

#include "lib/num.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/repl/replication.h"
#include "server/server.h"

#define ERR_NOMASTERLINK                                                      \
    "NOMASTERLINK Can't SYNC while not connected with my master"
#define ERR_SYNC_FAILED "ERR cannot start the synchronization"

/* The replicaof option follows the role, so CONFIG REWRITE (Sentinel
 * sends it with REPLICAOF) makes a restart keep it. */
static void
keep_replicaof(const char *value)
{
    char err[CONF_ERR_LEN];
    (void)conf_set(&srv.conf, "replicaof", value, err, sizeof(err));
}

/* cluster-mode yes: the topology says who replicates whom, so REPLICAOF
 * is a failover within this node's shard (cluster.h), and CONFIG REWRITE
 * keeps it in the cluster-node lines. */
static void
replicaof_in_cluster(struct conn *c, const char *host, int port)
{
    char err[256];
    if (cluster_replicaof(host, port, err, sizeof(err)) != 0) {
        cmd_errorf(c, "ERR %s", err);
        return;
    }
    reply_ok(&c->out);
}

/* REPLICAOF host port | NO ONE, as Redis 7 answers it. */
void
replicaof_command(struct conn *c, struct resp_request *req)
{
    int64_t port;
    char host[256];
    if (srv.conf.cluster_mode == CLUSTER_MODE_EMULATED ||
        srv.conf.cluster_enabled) {
        cmd_error(c, "ERR REPLICAOF not allowed in cluster mode.");
        return;
    }
    if (cmd_arg_is(req, 1, "no") && cmd_arg_is(req, 2, "one")) {
        if (cluster_routing()) {
            replicaof_in_cluster(c, NULL, 0);
            return;
        }
        repl_set_primary(NULL, 0);
        keep_replicaof("");
        reply_ok(&c->out);
        return;
    }
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &port) || port < 0 ||
        port > 65535) {
        cmd_error(c, "ERR Invalid master port");
        return;
    }
    if (req->argvlen[1] >= sizeof(host)) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    memcpy(host, req->argv[1], req->argvlen[1]);
    host[req->argvlen[1]] = '\0';
    if (cluster_routing()) {
        replicaof_in_cluster(c, host, (int)port);
        return;
    }
    if (repl_same_primary(host, (int)port)) {
        reply_status(&c->out, "OK Already connected to specified master");
        return;
    }
    repl_set_primary(host, (int)port);
    char value[300];
    snprintf(value, sizeof(value), "%s %d", host, (int)port);
    keep_replicaof(value);
    reply_ok(&c->out);
}

/* REPLCONF <option> <value> ...: a replica's handshake and its ACKs
 * (which get no reply, as in Redis). */
void
replconf_command(struct conn *c, struct resp_request *req)
{
    if (req->argc % 2 == 0) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    bool ack = cmd_arg_is(req, 1, "ack");
    for (size_t i = 1; i + 1 < req->argc; i += 2) {
        repl_replconf(c, req->argv[i], req->argvlen[i], req->argv[i + 1],
                      req->argvlen[i + 1]);
    }
    if (!ack && !cmd_arg_is(req, 1, "getack")) {
        reply_ok(&c->out);
    }
}

void
psync_command(struct conn *c, struct resp_request *req)
{
    int64_t offset;
    if (repl_is_replica() && !repl_link_up()) {
        /* As Redis: a replica that is not synced serves no replicas. */
        cmd_error(c, ERR_NOMASTERLINK);
        return;
    }
    if (repl_follows_redis()) {
        /* Its stream is Redis's, which cellgate's replicas cannot apply:
         * chained replicas wait for its promotion (docs/migrate.md). */
        cmd_error(c, "ERR a replica of a Redis primary serves no replicas "
                     "until it is promoted (REPLICAOF NO ONE)");
        return;
    }
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &offset)) {
        offset = -1;
    }
    keyspace_publish();             /* the pending effects join the stream */
    if (!repl_psync(c, req->argv[1], req->argvlen[1], offset)) {
        cmd_error(c, ERR_SYNC_FAILED);
    }
}

/* SYNC, as Redis serves it to a client that is no cellgate replica
 * (redis-cli --rdb FILE, --replica): Redis's RDB file, then the stream. */
void
sync_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    if (repl_is_replica() && !repl_link_up()) {
        cmd_error(c, ERR_NOMASTERLINK);
        return;
    }
    keyspace_publish();             /* the pending effects join the stream */
    if (!repl_sync(c)) {
        cmd_error(c, ERR_SYNC_FAILED);
    }
}

HANDLER_NO_ARGS(role_command, repl_role)

/* WAIT numreplicas timeout, as Redis: the replicas that acknowledged this
 * client's writes (everything in the stream so far), waiting for up to
 * timeout ms (0: as long as it takes) until numreplicas did. Inside MULTI
 * it answers at once. */
void
wait_command(struct conn *c, struct resp_request *req)
{
    int64_t n, timeout;
    if (repl_is_replica()) {
        cmd_error(c, "ERR WAIT cannot be used with replica instances. Please "
                     "also note that since Redis 4.0 if a replica is "
                     "configured to be writable (which is not the default) "
                     "writes to replicas are just local and are not "
                     "propagated.");
        return;
    }
    if (!num_parse_i64(req->argv[1], req->argvlen[1], &n)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    if (!cmd_arg_timeout(c, req, 2, &timeout)) {
        return;
    }
    keyspace_publish();             /* this client's writes join the stream */
    if (n <= 0 || c->multi != NULL ||
        !repl_wait(c, (size_t)n, timeout)) {
        reply_int(&c->out, (int64_t)repl_acked_now());
        return;
    }
    c->state = CONN_BLOCKED;
}
