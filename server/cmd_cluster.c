/*
 * cmd_cluster.c - the CLUSTER command, for cluster-aware clients: the slot
 * map, node list and shards of the topology cluster.c holds.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/client.h"
#include "server/cluster.h"
#include "server/cluster_topo.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers.h"
#include "server/server.h"
#include "server/textbuf.h"

/* The topology, for the command running now (cmd_cluster made sure). */
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
cmd_cluster(struct conn *c, struct resp_request *req)
{
    if (!cluster_enabled(c)) {
        return;
    }
    cmd_dispatch_subcommand(c, req, cmd_lookup("cluster", 7));
}

void
cmd_cluster_keyslot(struct conn *c, struct resp_request *req)
{
    reply_int(&c->out, cluster_keyslot(req->argv[2], req->argvlen[2]));
}

void
cmd_cluster_myid(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_bulkz(&c->out, topo->nodes[topo->myself].id);
}

void
cmd_cluster_reload(struct conn *c, struct resp_request *req)
{
    char err[CONF_ERR_LEN + 64];
    (void)req;
    if (cluster_reload(err, sizeof(err)) != 0) {
        cmd_errorf(c, "ERR %s", err);
        return;
    }
    reply_status(&c->out, "OK");
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

void
cmd_cluster_slots(struct conn *c, struct resp_request *req)
{
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port, slot = 0, first, last;
    size_t node;
    (void)req;
    reply_array(&c->out, count_ranges());
    while (cluster_topo_next_range(topo, &slot, &first, &last, &node)) {
        node_endpoint(c, node, host, sizeof(host), &port);
        reply_array(&c->out, 3);
        reply_int(&c->out, first);
        reply_int(&c->out, last);
        reply_array(&c->out, 4);
        reply_bulkz(&c->out, host);
        reply_int(&c->out, port);
        reply_bulkz(&c->out, topo->nodes[node].id);
        reply_map(&c->out, 0, c->proto);
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

void
cmd_cluster_shards(struct conn *c, struct resp_request *req)
{
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port;
    int proto = c->proto;
    (void)req;
    reply_array(&c->out, topo->nnodes);
    for (size_t i = 0; i < topo->nnodes; i++) {
        node_endpoint(c, i, host, sizeof(host), &port);
        reply_map(&c->out, 2, proto);
        reply_bulkz(&c->out, "slots");
        reply_node_ranges(c, i);
        reply_bulkz(&c->out, "nodes");
        reply_array(&c->out, 1);
        reply_map(&c->out, 7, proto);
        reply_bulkz(&c->out, "id");
        reply_bulkz(&c->out, topo->nodes[i].id);
        reply_bulkz(&c->out, "port");
        reply_int(&c->out, port);
        reply_bulkz(&c->out, "ip");
        reply_bulkz(&c->out, host);
        reply_bulkz(&c->out, "endpoint");
        reply_bulkz(&c->out, host);
        reply_bulkz(&c->out, "role");
        reply_bulkz(&c->out, "master");
        reply_bulkz(&c->out, "replication-offset");
        reply_int(&c->out, 0);
        reply_bulkz(&c->out, "health");
        reply_bulkz(&c->out, "online");
    }
}

/* One CLUSTER NODES line, in Redis's layout:
 * <id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv>
 * <config-epoch> <link-state> <slot> <slot> ... */
static void
nodes_line(const struct conn *c, struct textbuf *t, size_t i)
{
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port, slot = 0, first, last;
    size_t node;
    node_endpoint(c, i, host, sizeof(host), &port);
    textbuf_printf(t, "%s %s:%u@%u %s - 0 0 %zu connected",
                   topo->nodes[i].id, host, port, port + 10000,
                   i == topo->myself ? "myself,master" : "master", i + 1);
    while (cluster_topo_next_range(topo, &slot, &first, &last, &node)) {
        if (node != i) {
            continue;
        }
        if (first == last) {
            textbuf_printf(t, " %u", first);
        } else {
            textbuf_printf(t, " %u-%u", first, last);
        }
    }
    textbuf_printf(t, "\n");
}

void
cmd_cluster_nodes(struct conn *c, struct resp_request *req)
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

void
cmd_cluster_info(struct conn *c, struct resp_request *req)
{
    char info[512];
    unsigned assigned = cluster_topo_assigned(topo);
    size_t serving = 0;
    (void)req;
    for (size_t i = 0; i < topo->nnodes; i++) {
        serving += topo->nodes[i].nslots > 0;
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
                     topo->myself + 1);
    reply_verbatim(&c->out, info, (size_t)n, c->proto);
}

void
cmd_cluster_help(struct conn *c, struct resp_request *req)
{
    static const char *const lines[] = {
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "INFO", "    Return information about the cluster.",
        "KEYSLOT <key>", "    Return the hash slot for <key>.",
        "MYID", "    Return the node id.",
        "NODES", "    Return cluster configuration seen by node.",
        "RELOAD", "    Re-read the cluster-node lines of the config file "
        "(cluster-mode yes).",
        "SHARDS", "    Return information about slot range mappings.",
        "SLOTS", "    Return information about slots range mappings.",
        "HELP", "    Print this help.", NULL
    };
    (void)req;
    cmd_reply_help(c, lines);
}
