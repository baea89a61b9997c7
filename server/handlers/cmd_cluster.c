/*
 * cmd_cluster.c - the CLUSTER command, for cluster-aware clients: the slot
 * map, node list and shards of the topology cluster.c holds; the keys of
 * a slot (COUNTKEYSINSLOT, GETKEYSINSLOT) from the keyspace's index.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/client.h"
#include "server/cluster/cluster.h"
#include "server/cluster/cluster_topo.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/server.h"
#include "lib/num.h"
#include "lib/textbuf.h"

/* The topology, for the command running now (cluster_command made sure). */
static const struct cluster_topo *topo;

/* ---- CLUSTER --------------------------------------------------------- */

/* The address a client should use for node i. Emulated: the address the
 * client reached us on. Yes: the topology's, or for this node the
 * cluster-announce-ip/-port when set. */
static void
node_endpoint(const struct conn *c, size_t i, char *host, size_t len,
              unsigned *port)
{
    const struct cluster_node *n = &topo->nodes[i];
    snprintf(host, len, "%s", n->host);
    *port = n->port;
    if (!cluster_routing()) {
        const char *colon = strrchr(c->laddr, ':');
        size_t hl = colon != NULL ? (size_t)(colon - c->laddr) : 0;
        if (!c->is_unix && colon != NULL && hl < len) {
            memcpy(host, c->laddr, hl);
            host[hl] = '\0';
        }
        *port = srv.tcp_port;
        return;
    }
    if (i == topo->myself) {
        if (srv.conf.cluster_announce_ip[0] != '\0') {
            snprintf(host, len, "%s", srv.conf.cluster_announce_ip);
        }
        if (srv.conf.cluster_announce_port != 0) {
            *port = (unsigned)srv.conf.cluster_announce_port;
        }
    }
}

static bool
cluster_enabled(struct conn *c)
{
    char err[CONF_ERR_LEN];
    topo = cluster_topology(err, sizeof(err));
    if (topo == NULL) {
        cmd_errorf(c, "ERR %s", err);
        return false;
    }
    return true;
}

void
cluster_command(struct conn *c, struct resp_request *req)
{
    if (!cluster_enabled(c)) {
        return;
    }
    cmd_dispatch_subcommand(c, req, cmd_lookup("cluster", 7));
}

void
cluster_keyslot_command(struct conn *c, struct resp_request *req)
{
    reply_int(&c->out, keyslot(req->argv[2], req->argvlen[2]));
}

void
cluster_myid_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_bulkz(&c->out, topo->nodes[topo->myself].id);
}

void
cluster_reload_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    cmd_reply_reload(c, cluster_reload);
}

static size_t
count_ranges(void)
{
    unsigned slot = 0, first, last;
    size_t node, n = 0;
    while (cluster_topo_next_range(topo, &slot, &first, &last, &node)) {
        n++;
    }
    return n;
}

static size_t
count_replicas(size_t primary)
{
    size_t n = 0;
    for (size_t i = 0; i < topo->nnodes; i++) {
        n += topo->nodes[i].primary == primary;
    }
    return n;
}

/* [host, port, id, {}] as CLUSTER SLOTS lists a node. */
static void
reply_slots_node(struct conn *c, size_t i)
{
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port;
    node_endpoint(c, i, host, sizeof(host), &port);
    reply_array(&c->out, 4);
    reply_bulkz(&c->out, host);
    reply_int(&c->out, port);
    reply_bulkz(&c->out, topo->nodes[i].id);
    reply_map(&c->out, 0, c->proto);
}

/* Each range: first, last, its primary, then the primary's replicas. */
void
cluster_slots_command(struct conn *c, struct resp_request *req)
{
    unsigned slot = 0, first, last;
    size_t node;
    (void)req;
    reply_array(&c->out, count_ranges());
    while (cluster_topo_next_range(topo, &slot, &first, &last, &node)) {
        reply_array(&c->out, 3 + count_replicas(node));
        reply_int(&c->out, first);
        reply_int(&c->out, last);
        reply_slots_node(c, node);
        for (size_t i = 0; i < topo->nnodes; i++) {
            if (topo->nodes[i].primary == node) {
                reply_slots_node(c, i);
            }
        }
    }
}

/* The ranges of node i, as CLUSTER SHARDS lists them: first, last, ... */
static void
reply_node_ranges(struct conn *c, size_t i)
{
    unsigned slot = 0, first, last;
    size_t node, n = 0;
    while (cluster_topo_next_range(topo, &slot, &first, &last, &node)) {
        n += node == i;
    }
    reply_array(&c->out, 2 * n);
    slot = 0;
    while (cluster_topo_next_range(topo, &slot, &first, &last, &node)) {
        if (node == i) {
            reply_int(&c->out, first);
            reply_int(&c->out, last);
        }
    }
}

/* One node of a CLUSTER SHARDS entry. Nodes do not watch each other, so
 * every node is "online" and offsets are 0. */
static void
reply_shard_node(struct conn *c, size_t i)
{
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port;
    node_endpoint(c, i, host, sizeof(host), &port);
    reply_map(&c->out, 7, c->proto);
    reply_bulkz(&c->out, "id");
    reply_bulkz(&c->out, topo->nodes[i].id);
    reply_bulkz(&c->out, "port");
    reply_int(&c->out, port);
    reply_bulkz(&c->out, "ip");
    reply_bulkz(&c->out, host);
    reply_bulkz(&c->out, "endpoint");
    reply_bulkz(&c->out, host);
    reply_bulkz(&c->out, "role");
    reply_bulkz(&c->out, topo->nodes[i].primary == CLUSTER_NO_NODE
                         ? "master" : "replica");
    reply_bulkz(&c->out, "replication-offset");
    reply_int(&c->out, 0);
    reply_bulkz(&c->out, "health");
    reply_bulkz(&c->out, "online");
}

/* One entry per shard: its primary's slots, the primary, its replicas. */
void
cluster_shards_command(struct conn *c, struct resp_request *req)
{
    size_t shards = 0;
    (void)req;
    for (size_t i = 0; i < topo->nnodes; i++) {
        shards += topo->nodes[i].primary == CLUSTER_NO_NODE;
    }
    reply_array(&c->out, shards);
    for (size_t i = 0; i < topo->nnodes; i++) {
        if (topo->nodes[i].primary != CLUSTER_NO_NODE) {
            continue;
        }
        reply_map(&c->out, 2, c->proto);
        reply_bulkz(&c->out, "slots");
        reply_node_ranges(c, i);
        reply_bulkz(&c->out, "nodes");
        reply_array(&c->out, 1 + count_replicas(i));
        reply_shard_node(c, i);
        for (size_t r = 0; r < topo->nnodes; r++) {
            if (topo->nodes[r].primary == i) {
                reply_shard_node(c, r);
            }
        }
    }
}

/* One CLUSTER NODES line, in Redis's layout:
 * <id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv>
 * <config-epoch> <link-state> <slot> <slot> ... */
static void
nodes_line(const struct conn *c, struct textbuf *t, size_t i)
{
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port;
    size_t shard = cluster_topo_shard(topo, i);
    const struct cluster_node *n = &topo->nodes[i];
    node_endpoint(c, i, host, sizeof(host), &port);
    /* A replica shows its primary's id and its primary's epoch. */
    textbuf_printf(t, "%s %s:%u@%u %s%s %s 0 0 %zu connected", n->id, host,
                   port, port + 10000, i == topo->myself ? "myself," : "",
                   shard == i ? "master" : "slave",
                   shard == i ? "-" : n->primary_id, shard + 1);
    cluster_topo_format_ranges(topo, i, t);
    textbuf_printf(t, "\n");
}

void
cluster_nodes_command(struct conn *c, struct resp_request *req)
{
    struct textbuf t = { NULL, 0, 0, false };
    (void)req;
    for (size_t i = 0; i < topo->nnodes; i++) {
        nodes_line(c, &t, i);
    }
    if (t.oom) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_verbatim(&c->out, t.p, t.len, c->proto);
    }
    textbuf_free(&t);
}

/* CLUSTER REPLICAS|SLAVES <id>: the NODES lines of its replicas, each a
 * bulk string, as Redis. */
void
cluster_replicas_command(struct conn *c, struct resp_request *req)
{
    size_t p = cluster_topo_find_id(topo, req->argv[2], req->argvlen[2]);
    if (p == topo->nnodes) {
        cmd_errorf(c, "ERR Unknown node %.*s",
                   (int)(req->argvlen[2] > 64 ? 64 : req->argvlen[2]),
                   req->argv[2]);
        return;
    }
    if (topo->nodes[p].primary != CLUSTER_NO_NODE) {
        cmd_error(c, "ERR The specified node is not a master");
        return;
    }
    reply_array(&c->out, count_replicas(p));
    for (size_t i = 0; i < topo->nnodes; i++) {
        struct textbuf t = { NULL, 0, 0, false };
        if (topo->nodes[i].primary != p) {
            continue;
        }
        nodes_line(c, &t, i);
        reply_bulk(&c->out, t.p != NULL ? t.p : "",
                   t.len > 0 ? t.len - 1 : 0);      /* without its \n */
        textbuf_free(&t);
    }
}

/* CLUSTER PROMOTE <id>: what Sentinel's client-reconfig-script sends every
 * node after a failover (cluster.h cluster_promote). */
void
cluster_promote_command(struct conn *c, struct resp_request *req)
{
    char err[CONF_ERR_LEN + 128];
    if (!cluster_routing()) {
        cmd_error(c, "ERR CLUSTER PROMOTE needs cluster-mode yes");
        return;
    }
    if (cluster_promote(req->argv[2], req->argvlen[2], err,
                        sizeof(err)) != 0) {
        cmd_errorf(c, "ERR %s", err);
        return;
    }
    reply_ok(&c->out);
}

void
cluster_info_command(struct conn *c, struct resp_request *req)
{
    char info[512];
    unsigned assigned = cluster_topo_assigned(topo);
    size_t serving = 0;
    (void)req;
    for (size_t i = 0; i < topo->nnodes; i++) {
        serving += topo->nodes[i].nslots > 0;   /* primaries only */
    }
    /* As Redis with cluster-require-full-coverage yes: the state fails
     * while some slot has no owner. */
    int n = snprintf(info, sizeof(info),
                     "cluster_enabled:1\r\n"
                     "cluster_state:%s\r\n"
                     "cluster_slots_assigned:%u\r\n"
                     "cluster_slots_ok:%u\r\n"
                     "cluster_slots_pfail:0\r\n"
                     "cluster_slots_fail:0\r\n"
                     "cluster_known_nodes:%zu\r\n"
                     "cluster_size:%zu\r\n"
                     "cluster_current_epoch:%zu\r\n"
                     "cluster_my_epoch:%zu\r\n",
                     assigned == CLUSTER_SLOTS ? "ok" : "fail", assigned,
                     assigned, topo->nnodes, serving, topo->nnodes,
                     cluster_topo_shard(topo, topo->myself) + 1);
    reply_verbatim(&c->out, info, (size_t)n, c->proto);
}


/* ---- the keys of a slot (database 0's per-slot index, keyspace.h) ------ */

/* CLUSTER COUNTKEYSINSLOT <slot> */
void
cluster_countkeysinslot_command(struct conn *c, struct resp_request *req)
{
    int64_t slot;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &slot)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    if (slot < 0 || slot >= CLUSTER_SLOTS) {
        cmd_error(c, "ERR Invalid slot");
        return;
    }
    if (!keyspace_slots_on()) {
        cmd_error(c, ERR_NOMEM);        /* the index could not be made */
        return;
    }
    reply_int(&c->out, (int64_t)keyspace_slot_count((unsigned)slot));
}

static void
reply_slot_key(const char *key, size_t len, void *arg)
{
    reply_bulk(arg, key, len);
}

/* CLUSTER GETKEYSINSLOT <slot> <count>: Redis checks both integers before
 * either range. */
void
cluster_getkeysinslot_command(struct conn *c, struct resp_request *req)
{
    int64_t slot, max;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &slot) ||
        !num_parse_i64(req->argv[3], req->argvlen[3], &max)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    if (slot < 0 || slot >= CLUSTER_SLOTS || max < 0) {
        cmd_error(c, "ERR Invalid slot or number of keys");
        return;
    }
    if (!keyspace_slots_on()) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    uint64_t n = keyspace_slot_count((unsigned)slot);
    if ((uint64_t)max < n) {
        n = (uint64_t)max;
    }
    reply_array(&c->out, (size_t)n);
    (void)keyspace_slot_keys((unsigned)slot, (size_t)n, reply_slot_key,
                             &c->out);
}
