/*
 * cmd_cluster.c - CLUSTER for cluster-aware clients, and key routing.
 *
 * cluster-mode emulated: this node is a one-node cluster that owns slots
 * 0-16383, so clients that insist on a cluster (redis-py RedisCluster,
 * redis-cli -c, redis-benchmark --cluster) route every key here; the
 * address it announces is the one the client reached.
 *
 * cluster-mode yes: a static cluster of many nodes, the topology read from
 * the config file's cluster-node lines (cluster_topo.c), the same on every
 * node. A key of a slot this node does not own is answered with -MOVED to
 * its owner, so clients learn the map; nodes never talk to each other.
 * CLUSTER RELOAD and SIGHUP re-read the lines.
 *
 * Both modes answer from one struct cluster_topo, so every reply is built
 * once.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cluster.h"
#include "server/cluster_topo.h"
#include "server/cmd.h"
#include "server/conn.h"
#include "server/handlers.h"
#include "server/log.h"
#include "server/server.h"
#include "server/textbuf.h"

static struct cluster_topo *topo;   /* NULL until emulated or yes is used */
static bool routing;                /* cluster-mode yes: check keys */

static bool
mode_is(const char *mode)
{
    return strcmp(srv.conf.cluster_mode, mode) == 0;
}

/* ---- loading --------------------------------------------------------- */

static int
add_node_line(void *arg, char **words, size_t nwords, char *why,
              size_t whylen)
{
    return cluster_topo_add(arg, words, nwords, why, whylen);
}

/* A validated topology from the config file, or NULL with err. */
static struct cluster_topo *
read_topology(char *err, size_t errlen)
{
    char why[CONF_ERR_LEN];
    struct cluster_topo *t;
    if (srv.config_file == NULL) {
        snprintf(err, errlen, "cluster-mode yes needs a config file with "
                 "cluster-node lines");
        return NULL;
    }
    t = cluster_topo_create();
    if (t == NULL) {
        snprintf(err, errlen, "out of memory reading the cluster topology");
        return NULL;
    }
    if (conf_scan_directive(srv.config_file, "cluster-node", add_node_line,
                            t, err, errlen) != 0) {
        cluster_topo_free(t);
        return NULL;
    }
    /* Without an id, this node is the one at its announced address. */
    unsigned port = srv.conf.cluster_announce_port != 0
                    ? (unsigned)srv.conf.cluster_announce_port
                    : (unsigned)srv.conf.port;
    if (cluster_topo_find_myself(t, srv.conf.cluster_node_id,
                                 srv.conf.cluster_announce_ip, port, why,
                                 sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s", srv.config_file, why);
        cluster_topo_free(t);
        return NULL;
    }
    return t;
}

/* cluster-mode emulated: one node, this one, owning every slot. */
static struct cluster_topo *
emulated_topology(char *err, size_t errlen)
{
    char slots[16], *words[3];
    struct cluster_topo *t = cluster_topo_create();
    char addr[] = "127.0.0.1:1";    /* replaced per client: node_endpoint() */
    snprintf(slots, sizeof(slots), "0-%d", CLUSTER_SLOTS - 1);
    words[0] = srv.run_id;
    words[1] = addr;
    words[2] = slots;
    if (t == NULL) {
        snprintf(err, errlen, "out of memory setting up cluster-mode");
        return NULL;
    }
    if (cluster_topo_add(t, words, 3, err, errlen) != 0) {
        cluster_topo_free(t);
        return NULL;
    }
    return t;
}

int
cluster_setup(char *err, size_t errlen)
{
    cluster_teardown();
    if (mode_is("no")) {
        return 0;
    }
    routing = mode_is("yes");
    topo = routing ? read_topology(err, errlen)
                   : emulated_topology(err, errlen);
    return topo != NULL ? 0 : -1;
}

void
cluster_teardown(void)
{
    cluster_topo_free(topo);
    topo = NULL;
    routing = false;
}

/* Keys found by one store_scan() step, copied: removing records while the
 * scan walks the bucket is not allowed. */
struct drop_batch {
    struct textbuf keys;        /* <size_t len><bytes> ... */
};

static void
collect_unowned(struct store_rec *r, void *arg)
{
    struct drop_batch *b = arg;
    size_t len = store_rec_keylen(r);
    const char *key = store_rec_key(r);
    if (topo->owner[cluster_keyslot(key, len)] == topo->myself) {
        return;
    }
    textbuf_append(&b->keys, &len, sizeof(len));
    textbuf_append(&b->keys, key, len);
}

static size_t
remove_batch(struct drop_batch *b, int64_t now)
{
    size_t n = 0;
    for (size_t off = 0; off < b->keys.len;) {
        size_t len;
        memcpy(&len, b->keys.p + off, sizeof(len));
        off += sizeof(len);
        struct store_rec *r = store_lookup(srv.store, b->keys.p + off, len,
                                           now);
        if (r != NULL) {
            store_remove(srv.store, r);     /* as DEL: frees its timer */
            n++;
        }
        off += len;
    }
    b->keys.len = 0;
    return n;
}

size_t
cluster_drop_unowned(void)
{
    struct drop_batch b;
    uint64_t cursor = 0;
    size_t n = 0;
    int64_t now = clock_wall_now();
    if (!routing || srv.store == NULL) {
        return 0;
    }
    memset(&b, 0, sizeof(b));
    do {
        cursor = store_scan(srv.store, cursor, collect_unowned, &b);
        if (b.keys.oom) {
            /* Keep what fits: a later reload or restart drops the rest. */
            log_warning("Out of memory dropping keys of foreign slots");
            break;
        }
        n += remove_batch(&b, now);
    } while (cursor != 0);
    textbuf_free(&b.keys);
    if (n > 0) {
        log_notice("Dropped %zu keys of slots this node does not own", n);
    }
    return n;
}

int
cluster_reload(char *err, size_t errlen)
{
    if (!routing) {
        snprintf(err, errlen, "CLUSTER RELOAD needs cluster-mode yes");
        return -1;
    }
    struct cluster_topo *t = read_topology(err, errlen);
    if (t == NULL) {
        log_warning("Cluster topology NOT reloaded: %s", err);
        return -1;
    }
    cluster_topo_free(topo);
    topo = t;
    log_notice("Cluster topology reloaded: %zu nodes, %u slots assigned, "
               "this node serves %u", t->nnodes, cluster_topo_assigned(t),
               t->nodes[t->myself].nslots);
    cluster_drop_unowned();
    return 0;
}

/* ---- routing --------------------------------------------------------- */

static void
reply_moved(struct conn *c, unsigned slot, const struct cluster_node *n)
{
    conn_errorf(c, "MOVED %u %s:%u", slot, n->host, n->port);
}

bool
cluster_route(struct conn *c, const struct cmd *cmd,
              const struct resp_request *req)
{
    int last = routing ? cmd_last_key(cmd, req->argc) : -1;
    if (last < 0) {
        return true;    /* no keys: runs on any node */
    }
    int step = cmd->key_step > 0 ? cmd->key_step : 1;
    unsigned slot = cluster_keyslot(req->argv[cmd->first_key],
                                    req->argvlen[cmd->first_key]);
    for (int i = cmd->first_key + step; i <= last; i += step) {
        if (cluster_keyslot(req->argv[i], req->argvlen[i]) != slot) {
            conn_error(c, "CROSSSLOT Keys in request don't hash to the same "
                       "slot");
            return false;
        }
    }
    const struct cluster_node *n = cluster_topo_owner(topo, slot);
    if (n == NULL) {
        conn_error(c, "CLUSTERDOWN Hash slot not served");
        return false;
    }
    if (n != &topo->nodes[topo->myself]) {
        reply_moved(c, slot, n);
        return false;
    }
    return true;
}

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
    if (!routing) {
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

bool
cluster_mode_settable(const char *value)
{
    return !routing && strcasecmp(value, "yes") != 0;
}

/* cluster-mode may change between no and emulated with CONFIG SET (yes is
 * fixed at start-up), so the emulated map is built when first needed. */
static bool
cluster_enabled(struct conn *c)
{
    char err[CONF_ERR_LEN];
    if (mode_is("no")) {
        conn_error(c, "ERR This instance has cluster support disabled");
        return false;
    }
    if (topo == NULL) {
        topo = emulated_topology(err, sizeof(err));
        if (topo == NULL) {
            conn_errorf(c, "ERR %s", err);
            return false;
        }
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
        conn_errorf(c, "ERR %s", err);
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
        conn_error(c, "ERR out of memory");
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
