/*
 * cmd_cluster.c - the CLUSTER command, for cluster-aware clients: the slot
 * map, node list and shards of the topology cluster.c holds; the keys of
 * a slot (COUNTKEYSINSLOT, GETKEYSINSLOT) from the keyspace's index.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/client.h"
#include "server/cluster/cluster.h"
#include "server/cluster/cluster_topo.h"
#include "server/cluster/bus.h"
#include "server/cluster/failover.h"
#include "server/cluster/nodes_file.h"
#include "server/cluster/view.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/repl/replication.h"
#include "server/store.h"
#include "lib/mem.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/server.h"
#include "lib/num.h"
#include "lib/textbuf.h"

#define ERR_UNKNOWN_NODE "ERR Unknown node %.*s"
#define ERR_NOT_A_MASTER "ERR The specified node is not a master"

/* cluster-enabled yes: the live view's replies, at the end of the file. */
static void live_myid(struct conn *c);
static void live_nodes(struct conn *c);
static void live_info(struct conn *c);
static void live_slots(struct conn *c);
static void live_shards(struct conn *c);
static void live_replicas(struct conn *c, const struct resp_request *req);

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
    if (!cluster_live() && !cluster_enabled(c)) {
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
    if (cluster_live()) {
        live_myid(c);
        return;
    }
    reply_bulkz(&c->out, topo->nodes[topo->myself].id);
}

void
cluster_reload_command(struct conn *c, struct resp_request *req)
{
    if (cluster_live()) {           /* Redis has no such subcommand */
        cmd_errorf(c, ERR_UNKNOWN_SUBCOMMAND, req->argv[1], "CLUSTER");
        return;
    }
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
    if (cluster_live()) {
        live_slots(c);
        return;
    }
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
    if (cluster_live()) {
        live_shards(c);
        return;
    }
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
    if (cluster_live()) {
        live_nodes(c);
        return;
    }
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
    if (cluster_live()) {
        live_replicas(c, req);
        return;
    }
    size_t p = cluster_topo_find_id(topo, req->argv[2], req->argvlen[2]);
    if (p == topo->nnodes) {
        cmd_errorf(c, ERR_UNKNOWN_NODE,
                   (int)(req->argvlen[2] > 64 ? 64 : req->argvlen[2]),
                   req->argv[2]);
        return;
    }
    if (topo->nodes[p].primary != CLUSTER_NO_NODE) {
        cmd_error(c, ERR_NOT_A_MASTER);
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
    if (cluster_live()) {           /* Redis has no such subcommand */
        cmd_errorf(c, ERR_UNKNOWN_SUBCOMMAND, req->argv[1], "CLUSTER");
        return;
    }
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
    (void)req;
    if (cluster_live()) {
        live_info(c);
        return;
    }
    char info[512];
    unsigned assigned = cluster_topo_assigned(topo);
    size_t serving = 0;
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

/* ---- cluster-enabled yes: the live view (view.h) ------------------------
 * Redis 7.0.15's clusterCommand() replies, from this node's view. Changes
 * ask cluster_before_sleep() to save nodes.conf and update the state, as
 * Redis's clusterDoBeforeSleep(). */

static void
live_unknown_node(struct conn *c, const struct resp_request *req, size_t i)
{
    cmd_errorf(c, ERR_UNKNOWN_NODE, (int)req->argvlen[i], req->argv[i]);
}

/* Redis's getSlotOrReply(): -1 after the error. */
static int
live_slot_arg(struct conn *c, const struct resp_request *req, size_t i)
{
    int64_t slot;
    if (!num_parse_i64(req->argv[i], req->argvlen[i], &slot) || slot < 0 ||
        slot >= CLUSTER_SLOTS) {
        cmd_error(c, "ERR Invalid or out of range slot");
        return -1;
    }
    return (int)slot;
}

static size_t
live_db0_keys(void)
{
    return srv.dbs != NULL && srv.dbs[0] != NULL ? store_size(srv.dbs[0]) : 0;
}

static void
live_myid(struct conn *c)
{
    reply_bulk(&c->out, cview.myself->name, CLUSTER_ID_LEN);
}

static void
live_nodes(struct conn *c)
{
    struct textbuf t = { NULL, 0, 0, false };
    nodes_file_nodes(&t, 0);
    if (t.oom) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_verbatim(&c->out, t.p != NULL ? t.p : "", t.len, c->proto);
    }
    textbuf_free(&t);
}

static void
live_info(struct conn *c)
{
    unsigned assigned = 0, ok = 0, pfail = 0, fail = 0;
    const struct cluster_node_v *me = cview.myself;
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        const struct cluster_node_v *n = cview.slots[j];
        if (n == NULL) {
            continue;
        }
        assigned++;
        if (view_node_failed(n)) {
            fail++;
        } else if (view_node_timed_out(n)) {
            pfail++;
        } else {
            ok++;
        }
    }
    uint64_t myepoch = view_node_is_replica(me) && me->primary != NULL
                       ? me->primary->config_epoch : me->config_epoch;
    struct textbuf t = { NULL, 0, 0, false };
    textbuf_printf(&t, "cluster_state:%s\r\ncluster_slots_assigned:%u\r\n"
                   "cluster_slots_ok:%u\r\ncluster_slots_pfail:%u\r\n"
                   "cluster_slots_fail:%u\r\ncluster_known_nodes:%zu\r\n"
                   "cluster_size:%d\r\ncluster_current_epoch:%llu\r\n"
                   "cluster_my_epoch:%llu\r\n",
                   cview.state == VIEW_STATE_OK ? "ok" : "fail", assigned, ok,
                   pfail, fail, cview.nnodes, cview.size,
                   (unsigned long long)cview.current_epoch,
                   (unsigned long long)myepoch);
    bus_stats_info(&t);
    failover_info(&t);
    if (t.oom) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_verbatim(&c->out, t.p, t.len, c->proto);
    }
    textbuf_free(&t);
}

/* Redis's addNodeToNodeReply(): endpoint, port, id, extra endpoints. */
static void
live_slots_node(struct conn *c, const struct cluster_node_v *n)
{
    int type = (int)srv.conf.cluster_preferred_endpoint_type;
    bool host = n->hostname[0] != '\0';
    reply_array(&c->out, 4);
    if (type == ENDPOINT_TYPE_UNKNOWN) {
        reply_null(&c->out, c->proto);
    } else {
        reply_bulkz(&c->out, cluster_endpoint(n));
    }
    reply_int(&c->out, n->port);
    reply_bulk(&c->out, n->name, CLUSTER_ID_LEN);
    size_t extra = (type != ENDPOINT_TYPE_IP) +
                   (type != ENDPOINT_TYPE_HOSTNAME && host);
    reply_map(&c->out, extra, c->proto);
    if (type != ENDPOINT_TYPE_IP) {
        reply_bulkz(&c->out, "ip");
        reply_bulkz(&c->out, n->ip);
    }
    if (type != ENDPOINT_TYPE_HOSTNAME && host) {
        reply_bulkz(&c->out, "hostname");
        reply_bulkz(&c->out, n->hostname);
    }
}

/* This node's replication offset, or what the bus last heard of n's. */
static int64_t
live_offset(const struct cluster_node_v *n)
{
    return (n->flags & VIEW_NODE_MYSELF) ? repl_offset() : n->repl_offset;
}

/* Redis's isReplicaAvailable(): not failed, and some offset known. */
static bool
live_replica_listed(const struct cluster_node_v *r)
{
    return !view_node_failed(r) && live_offset(r) != 0;
}

static void
live_slots(struct conn *c)
{
    unsigned slot = 0, first, last;
    size_t runs = 0;
    while (view_next_range(NULL, &slot, &first, &last)) {
        runs++;
    }
    reply_array(&c->out, runs);
    slot = 0;
    while (view_next_range(NULL, &slot, &first, &last)) {
        const struct cluster_node_v *n = cview.slots[first];
        size_t listed = 0;
        for (int r = 0; r < n->nreplicas; r++) {
            listed += live_replica_listed(n->replicas[r]);
        }
        reply_array(&c->out, 3 + listed);
        reply_int(&c->out, first);
        reply_int(&c->out, last);
        live_slots_node(c, n);
        for (int r = 0; r < n->nreplicas; r++) {
            if (live_replica_listed(n->replicas[r])) {
                live_slots_node(c, n->replicas[r]);
            }
        }
    }
}

/* Redis's addNodeDetailsToShardReply(). */
static void
live_shard_node(struct conn *c, const struct cluster_node_v *n)
{
    int64_t off = live_offset(n);
    bool host = n->hostname[0] != '\0';
    reply_map(&c->out, 6 + (n->port != 0) + host, c->proto);
    reply_bulkz(&c->out, "id");
    reply_bulk(&c->out, n->name, CLUSTER_ID_LEN);
    if (n->port != 0) {
        reply_bulkz(&c->out, "port");
        reply_int(&c->out, n->port);
    }
    reply_bulkz(&c->out, "ip");
    reply_bulkz(&c->out, n->ip);
    reply_bulkz(&c->out, "endpoint");
    reply_bulkz(&c->out, cluster_endpoint(n));
    if (host) {
        reply_bulkz(&c->out, "hostname");
        reply_bulkz(&c->out, n->hostname);
    }
    reply_bulkz(&c->out, "role");
    reply_bulkz(&c->out, view_node_is_replica(n) ? "replica" : "master");
    reply_bulkz(&c->out, "replication-offset");
    reply_int(&c->out, off);
    reply_bulkz(&c->out, "health");
    reply_bulkz(&c->out, view_node_failed(n) ? "fail"
                         : view_node_is_replica(n) && off == 0 ? "loading"
                         : "online");
}

static void
live_shard(struct conn *c, const struct cluster_node_v *p)
{
    unsigned slot = 0, first, last;
    size_t runs = 0;
    reply_map(&c->out, 2, c->proto);
    reply_bulkz(&c->out, "slots");
    while (view_next_range(p, &slot, &first, &last)) {
        runs++;
    }
    reply_array(&c->out, 2 * runs);
    slot = 0;
    while (view_next_range(p, &slot, &first, &last)) {
        reply_int(&c->out, first);
        reply_int(&c->out, last);
    }
    reply_bulkz(&c->out, "nodes");
    reply_array(&c->out, 1 + (size_t)p->nreplicas);
    live_shard_node(c, p);
    for (int r = 0; r < p->nreplicas; r++) {
        live_shard_node(c, p->replicas[r]);
    }
}

static void
live_shards(struct conn *c)
{
    size_t n = 0;
    for (size_t i = 0; i < cview.nnodes; i++) {
        n += view_node_is_primary(cview.nodes[i]);
    }
    reply_array(&c->out, n);
    for (size_t i = 0; i < cview.nnodes; i++) {
        if (view_node_is_primary(cview.nodes[i])) {
            live_shard(c, cview.nodes[i]);
        }
    }
}

static void
live_replicas(struct conn *c, const struct resp_request *req)
{
    const struct cluster_node_v *n = view_lookup(req->argv[2],
                                                 req->argvlen[2]);
    if (n == NULL) {
        live_unknown_node(c, req, 2);
        return;
    }
    if (view_node_is_replica(n)) {
        cmd_error(c, ERR_NOT_A_MASTER);
        return;
    }
    reply_array(&c->out, (size_t)n->nreplicas);
    for (int r = 0; r < n->nreplicas; r++) {
        struct textbuf t = { NULL, 0, 0, false };
        nodes_file_node_line(&t, n->replicas[r], false);
        reply_bulk(&c->out, t.p != NULL ? t.p : "", t.len);
        textbuf_free(&t);
    }
}

/* Redis's checkSlotAssignmentsOrReply(): slots[] counts each slot named. */
static bool
live_slots_check(struct conn *c, uint8_t *slots, bool del, int first,
                 int last)
{
    for (int s = first; s <= last; s++) {
        if (del && cview.slots[s] == NULL) {
            cmd_errorf(c, "ERR Slot %d is already unassigned", s);
            return false;
        }
        if (!del && cview.slots[s] != NULL) {
            cmd_errorf(c, "ERR Slot %d is already busy", s);
            return false;
        }
        if (slots[s]++ == 1) {
            cmd_errorf(c, "ERR Slot %d specified multiple times", s);
            return false;
        }
    }
    return true;
}

/* Redis's clusterUpdateSlots(): the slots named, added to myself or
 * unassigned; an importing slot is now ours. */
static void
live_slots_apply(struct conn *c, const uint8_t *slots, bool del)
{
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (slots[j]) {
            cview.importing_from[j] = NULL;
            if (del) {
                view_del_slot(j);
            } else {
                view_add_slot(cview.myself, j);
            }
        }
    }
    view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
    reply_ok(&c->out);
}

/* ADDSLOTS / DELSLOTS <slot> ...: every slot checked before any changes. */
static void
live_addslots(struct conn *c, const struct resp_request *req, bool del)
{
    uint8_t *slots = mem_calloc(CLUSTER_SLOTS, 1);
    bool ok = slots != NULL;
    if (!ok) {
        cmd_error(c, ERR_NOMEM);
    }
    for (size_t i = 2; ok && i < req->argc; i++) {
        ok = live_slot_arg(c, req, i) >= 0;
    }
    for (size_t i = 2; ok && i < req->argc; i++) {
        int s = live_slot_arg(c, req, i);
        ok = live_slots_check(c, slots, del, s, s);
    }
    if (ok) {
        live_slots_apply(c, slots, del);
    }
    mem_free(slots);
}

/* ADDSLOTSRANGE / DELSLOTSRANGE <first> <last> ... */
static void
live_addslotsrange(struct conn *c, const struct resp_request *req, bool del)
{
    if (req->argc % 2 == 1) {
        cmd_errorf(c, ERR_WRONG_ARITY, del ? "cluster|delslotsrange"
                                           : "cluster|addslotsrange");
        return;
    }
    uint8_t *slots = mem_calloc(CLUSTER_SLOTS, 1);
    bool ok = slots != NULL;
    if (!ok) {
        cmd_error(c, ERR_NOMEM);
    }
    for (size_t i = 2; ok && i < req->argc; i += 2) {
        int first = live_slot_arg(c, req, i);
        int last = first < 0 ? -1 : live_slot_arg(c, req, i + 1);
        if (first < 0 || last < 0) {
            ok = false;
        } else if (first > last) {
            cmd_errorf(c, "ERR start slot number %d is greater than end slot "
                       "number %d", first, last);
            ok = false;
        } else {
            ok = live_slots_check(c, slots, del, first, last);
        }
    }
    if (ok) {
        live_slots_apply(c, slots, del);
    }
    mem_free(slots);
}

static void
live_flushslots(struct conn *c)
{
    if (live_db0_keys() != 0) {
        cmd_error(c, "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.");
        return;
    }
    view_del_node_slots(cview.myself);
    view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
    reply_ok(&c->out);
}

/* The node SETSLOT's last argument names, a primary; NULL after the
 * error. */
static struct cluster_node_v *
live_setslot_target(struct conn *c, const struct resp_request *req,
                    const char *unknown)
{
    struct cluster_node_v *n = view_lookup(req->argv[4], req->argvlen[4]);
    if (n == NULL) {
        cmd_errorf(c, "ERR %s %.*s", unknown, (int)req->argvlen[4],
                   req->argv[4]);
        return NULL;
    }
    if (view_node_is_replica(n)) {
        cmd_error(c, "ERR Target node is not a master");
        return NULL;
    }
    return n;
}

/* SETSLOT <slot> NODE <id>: the slot is n's now. A slot imported here
 * takes a new configEpoch without consensus, as Redis, so the others
 * accept the change; a node left without slots follows the new owner. */
static bool
live_setslot_node(struct conn *c, const struct resp_request *req, int slot)
{
    struct cluster_node_v *n = live_setslot_target(c, req, "Unknown node");
    struct cluster_node_v *me = cview.myself;
    if (n == NULL) {
        return false;
    }
    uint64_t keys = keyspace_slot_count((unsigned)slot);
    if (cview.slots[slot] == me && n != me && keys != 0) {
        cmd_errorf(c, "ERR Can't assign hashslot %d to a different node "
                   "while I still hold keys for this hash slot.", slot);
        return false;
    }
    if (keys == 0) {
        cview.migrating_to[slot] = NULL;
    }
    bool was_mine = cview.slots[slot] == me;
    view_del_slot((unsigned)slot);
    view_add_slot(n, (unsigned)slot);
    if (was_mine && n != me && me->numslots == 0 &&
        srv.conf.cluster_allow_replica_migration) {
        log_warning("Configuration change detected. Reconfiguring myself "
                    "as a replica of %.40s", n->name);
        cluster_replicate(n);
        view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE |
                  VIEW_TODO_FSYNC_CONFIG);
    }
    if (n == me && cview.importing_from[slot] != NULL) {
        if (view_bump_epoch_without_consensus()) {
            log_warning("configEpoch updated after importing slot %d", slot);
        }
        cview.importing_from[slot] = NULL;
        cluster_broadcast_pong_soon();
    }
    return true;
}

/* SETSLOT <slot> MIGRATING|IMPORTING <id> */
static bool
live_setslot_moving(struct conn *c, const struct resp_request *req, int slot,
                    bool migrating)
{
    struct cluster_node_v *me = cview.myself;
    if (migrating && cview.slots[slot] != me) {
        cmd_errorf(c, "ERR I'm not the owner of hash slot %d", slot);
        return false;
    }
    if (!migrating && cview.slots[slot] == me) {
        cmd_errorf(c, "ERR I'm already the owner of hash slot %d", slot);
        return false;
    }
    struct cluster_node_v *n =
        live_setslot_target(c, req, "I don't know about node");
    if (n == NULL) {
        return false;
    }
    if (migrating) {
        cview.migrating_to[slot] = n;
    } else {
        cview.importing_from[slot] = n;
    }
    return true;
}

static void
live_setslot(struct conn *c, const struct resp_request *req)
{
    if (view_node_is_replica(cview.myself)) {
        cmd_error(c, "ERR Please use SETSLOT only with masters.");
        return;
    }
    int slot = live_slot_arg(c, req, 2);
    bool ok;
    if (slot < 0) {
        return;
    }
    if (cmd_arg_is(req, 3, "migrating") && req->argc == 5) {
        ok = live_setslot_moving(c, req, slot, true);
    } else if (cmd_arg_is(req, 3, "importing") && req->argc == 5) {
        ok = live_setslot_moving(c, req, slot, false);
    } else if (cmd_arg_is(req, 3, "stable") && req->argc == 4) {
        cview.importing_from[slot] = NULL;
        cview.migrating_to[slot] = NULL;
        ok = true;
    } else if (cmd_arg_is(req, 3, "node") && req->argc == 5) {
        ok = live_setslot_node(c, req, slot);
    } else {
        cmd_error(c, "ERR Invalid CLUSTER SETSLOT action or number of "
                  "arguments. Try CLUSTER HELP");
        return;
    }
    if (ok) {
        view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
        reply_ok(&c->out);
    }
}

static void
live_bumpepoch(struct conn *c)
{
    char line[64];
    bool bumped = view_bump_epoch_without_consensus();
    snprintf(line, sizeof(line), "%s %llu", bumped ? "BUMPED" : "STILL",
             (unsigned long long)cview.myself->config_epoch);
    reply_status(&c->out, line);
}

static void
live_saveconfig(struct conn *c)
{
    char err[512];
    view_todo(0);
    if (nodes_file_save(true, err, sizeof(err)) != 0) {
        cmd_errorf(c, "ERR error saving the cluster node config: %s", err);
        return;
    }
    reply_ok(&c->out);
}

static void
live_forget(struct conn *c, const struct resp_request *req)
{
    struct cluster_node_v *n = view_lookup(req->argv[2], req->argvlen[2]);
    const struct cluster_node_v *me = cview.myself;
    if (n == NULL) {
        live_unknown_node(c, req, 2);
    } else if (n == me) {
        cmd_error(c, "ERR I tried hard but I can't forget myself...");
    } else if (view_node_is_replica(me) && me->primary == n) {
        cmd_error(c, "ERR Can't forget my master!");
    } else {
        view_blacklist_add(n->name, clock_wall_us() / 1000);
        view_node_delete(n);
        view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
        reply_ok(&c->out);
    }
}

static void
live_replicate(struct conn *c, const struct resp_request *req)
{
    struct cluster_node_v *n = view_lookup(req->argv[2], req->argvlen[2]);
    const struct cluster_node_v *me = cview.myself;
    if (n == NULL) {
        live_unknown_node(c, req, 2);
    } else if (n == me) {
        cmd_error(c, "ERR Can't replicate myself");
    } else if (view_node_is_replica(n)) {
        cmd_error(c, "ERR I can only replicate a master, not a replica.");
    } else if (view_node_is_primary(me) &&
               (me->numslots != 0 || live_db0_keys() != 0)) {
        cmd_error(c, "ERR To set a master the node must be empty and "
                  "without assigned slots.");
    } else {
        cluster_replicate(n);
        view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
        reply_ok(&c->out);
    }
}

static void
live_count_failure_reports(struct conn *c, const struct resp_request *req)
{
    struct cluster_node_v *n = view_lookup(req->argv[2], req->argvlen[2]);
    if (n == NULL) {
        live_unknown_node(c, req, 2);
        return;
    }
    reply_int(&c->out, view_fail_report_count(n, clock_wall_us() / 1000,
                                              srv.conf.cluster_node_timeout));
}

static void
live_set_config_epoch(struct conn *c, const struct resp_request *req)
{
    int64_t epoch;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &epoch)) {
        cmd_error(c, ERR_NOT_INTEGER);
    } else if (epoch < 0) {
        cmd_errorf(c, "ERR Invalid config epoch specified: %lld",
                   (long long)epoch);
    } else if (cview.nnodes > 1) {
        cmd_error(c, "ERR The user can assign a config epoch only when the "
                  "node does not know any other node.");
    } else if (cview.myself->config_epoch != 0) {
        cmd_error(c, "ERR Node config epoch is already non-zero");
    } else {
        cview.myself->config_epoch = (uint64_t)epoch;
        log_warning("configEpoch set to %llu via CLUSTER SET-CONFIG-EPOCH",
                    (unsigned long long)epoch);
        if (cview.current_epoch < (uint64_t)epoch) {
            cview.current_epoch = (uint64_t)epoch;
        }
        view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
        reply_ok(&c->out);
    }
}

static void
live_reset(struct conn *c, const struct resp_request *req)
{
    bool hard = false;
    if (req->argc == 3) {
        if (cmd_arg_is(req, 2, "hard")) {
            hard = true;
        } else if (!cmd_arg_is(req, 2, "soft")) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
    }
    if (view_node_is_primary(cview.myself) && live_db0_keys() != 0) {
        cmd_error(c, "ERR CLUSTER RESET can't be called with master nodes "
                  "containing keys");
        return;
    }
    cluster_reset(hard);
    reply_ok(&c->out);
}

static void
live_meet(struct conn *c, const struct resp_request *req)
{
    int64_t port, cport;
    char ip[VIEW_IP_LEN + 1];
    if (!num_parse_i64(req->argv[3], req->argvlen[3], &port)) {
        cmd_errorf(c, "ERR Invalid TCP base port specified: %s", req->argv[3]);
        return;
    }
    if (req->argc == 5) {
        if (!num_parse_i64(req->argv[4], req->argvlen[4], &cport)) {
            cmd_errorf(c, "ERR Invalid TCP bus port specified: %s",
                       req->argv[4]);
            return;
        }
    } else {
        cport = port + VIEW_PORT_INCR;
    }
    bool fits = req->argvlen[2] < sizeof(ip) && port > 0 && port <= 65535 &&
                cport > 0 && cport <= 65535;
    if (fits) {
        memcpy(ip, req->argv[2], req->argvlen[2] + 1);
    }
    int rc = fits ? view_meet(ip, (int)port, (int)cport) : -1;
    if (!fits || (rc != 0 && errno == EINVAL)) {
        cmd_errorf(c, "ERR Invalid node address specified: %s:%s",
                   req->argv[2], req->argv[3]);
        return;
    }
    if (rc == 0) {          /* not a handshake in progress already */
        struct cluster_node_v *n = cview.nodes[cview.nnodes - 1];
        bus_meet(n->ip, (unsigned)port, (unsigned)cport);
    }
    reply_ok(&c->out);
}

static void
live_failover(struct conn *c, const struct resp_request *req)
{
    char err[256];
    int mode = FAILOVER_DEFAULT;
    if (req->argc == 3) {
        if (cmd_arg_is(req, 2, "force")) {
            mode = FAILOVER_FORCE;
        } else if (cmd_arg_is(req, 2, "takeover")) {
            mode = FAILOVER_TAKEOVER;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
    }
    if (failover_manual(mode, err, sizeof(err)) != 0) {
        cmd_errorf(c, "ERR %s", err);
        return;
    }
    reply_ok(&c->out);
}

/* Redis answers a subcommand whose argument count it does not take with
 * this, after the table's arity passed. */
static void
live_syntax(struct conn *c, const struct resp_request *req)
{
    cmd_errorf(c, "ERR unknown subcommand or wrong number of arguments for "
               "'%.128s'. Try CLUSTER HELP.", req->argv[1]);
}

/* The subcommands only the live view has; true when req was one. */
static bool
live_admin(struct conn *c, const struct resp_request *req)
{
    size_t n = req->argc;
    if (cmd_arg_is(req, 1, "meet")) {
        n == 4 || n == 5 ? live_meet(c, req) : live_syntax(c, req);
    } else if (cmd_arg_is(req, 1, "addslots")) {
        live_addslots(c, req, false);
    } else if (cmd_arg_is(req, 1, "delslots")) {
        live_addslots(c, req, true);
    } else if (cmd_arg_is(req, 1, "addslotsrange")) {
        live_addslotsrange(c, req, false);
    } else if (cmd_arg_is(req, 1, "delslotsrange")) {
        live_addslotsrange(c, req, true);
    } else if (cmd_arg_is(req, 1, "flushslots")) {
        live_flushslots(c);
    } else if (cmd_arg_is(req, 1, "setslot")) {
        live_setslot(c, req);
    } else if (cmd_arg_is(req, 1, "bumpepoch")) {
        live_bumpepoch(c);
    } else if (cmd_arg_is(req, 1, "saveconfig")) {
        live_saveconfig(c);
    } else {
        return false;
    }
    return true;
}

static bool
live_admin2(struct conn *c, const struct resp_request *req)
{
    size_t n = req->argc;
    if (cmd_arg_is(req, 1, "forget")) {
        live_forget(c, req);
    } else if (cmd_arg_is(req, 1, "replicate")) {
        live_replicate(c, req);
    } else if (cmd_arg_is(req, 1, "count-failure-reports")) {
        live_count_failure_reports(c, req);
    } else if (cmd_arg_is(req, 1, "set-config-epoch")) {
        live_set_config_epoch(c, req);
    } else if (cmd_arg_is(req, 1, "reset")) {
        n <= 3 ? live_reset(c, req) : live_syntax(c, req);
    } else if (cmd_arg_is(req, 1, "failover")) {
        n <= 3 ? live_failover(c, req) : live_syntax(c, req);
    } else if (cmd_arg_is(req, 1, "links")) {
        bus_links_reply(&c->out, c->proto);
    } else {
        return false;
    }
    return true;
}

/* CLUSTER MEET, ADDSLOTS, SETSLOT, FORGET, RESET ... (the table routes
 * every one of them here): the live view's, or for the other cluster
 * modes the unknown subcommand they always were. */
void
cluster_admin_command(struct conn *c, struct resp_request *req)
{
    if (!cluster_live()) {
        cmd_errorf(c, ERR_UNKNOWN_SUBCOMMAND, req->argv[1], "CLUSTER");
        return;
    }
    if (!live_admin(c, req) && !live_admin2(c, req)) {
        live_syntax(c, req);
    }
}
