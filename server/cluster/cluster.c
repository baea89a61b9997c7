/*
 * cluster.c - the cluster this node belongs to: its topology, where a
 * key's slot is served, and reloads.
 *
 * cluster-mode emulated: this node is a one-node cluster that owns slots
 * 0-16383, so clients that insist on a cluster (redis-py RedisCluster,
 * redis-cli -c, redis-benchmark --cluster) route every key here; the
 * address it announces is the one the client reached.
 *
 * cluster-mode yes: a static cluster of many nodes, the topology read from
 * the config file's cluster-node lines (cluster_topo.c), the same on every
 * node. A key of a slot this node does not own is answered with -MOVED to
 * its owner, so clients learn the map; nodes never talk to each other
 * except that a replica replicates its shard's primary. CLUSTER RELOAD
 * and SIGHUP re-read the lines.
 *
 * Failover is Sentinel's, unchanged: it promotes a replica with REPLICAOF
 * NO ONE and points the others at it with REPLICAOF host port. Here both
 * are promotions of the topology, so the nodes of the failed shard agree
 * at once; Sentinel's client-reconfig-script (tools/) then sends CLUSTER
 * PROMOTE to every node, which rewrites its config file's lines, so the
 * other shards send clients to the new primary and a restart keeps it.
 *
 * cluster-enabled yes: Redis Cluster as Redis runs it. The map is the live
 * view (view.c), which the bus (bus.c, gossip.c, failover.c) and the
 * CLUSTER command change; this file starts it (nodes.conf locked and
 * loaded, or a new node made), does its before-sleep work (the state,
 * nodes.conf saved by nodes_file.c) and routes keys by it as Redis's
 * getNodeByQuery() (cluster_query_*(), cluster_slot_here() for the common
 * case). cluster-enabled and cluster-mode exclude each other.
 *
 * Both static modes answer from one struct cluster_topo, so every reply is
 * built once. Routing gives a verdict; the dispatcher (cmd.c) turns it into the
 * error a client sees, and the CLUSTER command (cmd_cluster.c) reads the
 * topology through cluster_topology().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/cluster/cluster_topo.h"
#include "server/cluster/bus.h"
#include "server/cluster/failover.h"
#include "server/cluster/nodes_file.h"
#include "server/cluster/view.h"
#include "server/store.h"
#include "server/keyspace.h"
#include "conf/rewrite.h"
#include "lib/mem.h"
#include "server/log.h"
#include "server/repl/replication.h"
#include "server/server.h"
#include "lib/keyslot.h"
#include "lib/textbuf.h"

static struct cluster_topo *topo;   /* NULL until emulated or yes is used */
struct cluster_keys cluster_keys;   /* see cluster.h; set here only */
static bool promoted;               /* topo differs from the file's lines */

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
    if (cluster_topo_link(t, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s", srv.config_file, why);
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
    if (srv.conf.cluster_enabled) {
        if (srv.conf.cluster_mode != CLUSTER_MODE_NO) {
            snprintf(err, errlen, "cluster-enabled yes and cluster-mode %s "
                     "cannot both be set: cluster-enabled is Redis Cluster "
                     "(nodes meet and gossip, nodes.conf), cluster-mode the "
                     "static topology of cluster-node lines; choose one",
                     srv.conf.cluster_mode == CLUSTER_MODE_YES ? "yes"
                                                               : "emulated");
            return -1;
        }
        if (srv.conf.replicaof[0] != '\0') {
            snprintf(err, errlen, "replicaof directive not allowed in cluster "
                     "mode");
            return -1;
        }
        keyspace_slots_enable();    /* before any key is loaded */
        return 0;
    }
    if (srv.conf.cluster_mode == CLUSTER_MODE_NO) {
        return 0;
    }
    keyspace_slots_enable();        /* before any key is loaded */
    cluster_keys.routing = srv.conf.cluster_mode == CLUSTER_MODE_YES;
    if (cluster_keys.routing && srv.conf.replicaof[0] != '\0') {
        snprintf(err, errlen, "replicaof is not used with cluster-mode yes: "
                 "write 'replicaof <primary id>' in this node's "
                 "cluster-node line");
        return -1;
    }
    topo = cluster_keys.routing ? read_topology(err, errlen)
                   : emulated_topology(err, errlen);
    return topo != NULL ? 0 : -1;
}

void
cluster_teardown(void)
{
    if (cluster_keys.live) {
        /* The bus is stopped (cluster_shutdown()): its links are gone. */
        cview.on_node_free = NULL;
        view_free();
        nodes_file_unlock();
        cluster_keys.live = false;
    }
    cluster_topo_free(topo);
    topo = NULL;
    cluster_keys.routing = false;
    promoted = false;
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
    /* A replica keeps its primary's slots. */
    if (topo->owner[keyslot(key, len)] ==
        cluster_topo_shard(topo, topo->myself)) {
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
        n += keyspace_delete_key(0, b->keys.p + off, len, now);   /* as DEL */
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
    /* A cluster has database 0 only (SELECT is refused there). */
    struct store *db = srv.dbs != NULL ? srv.dbs[0] : NULL;
    if (!cluster_keys.routing || db == NULL) {
        return 0;
    }
    memset(&b, 0, sizeof(b));
    do {
        cursor = store_scan(db, cursor, collect_unowned, &b);
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
    if (!cluster_keys.routing) {
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
    promoted = false;
    log_notice("Cluster topology reloaded: %zu nodes, %u slots assigned, "
               "this node serves %u", t->nnodes, cluster_topo_assigned(t),
               t->nodes[cluster_topo_shard(t, t->myself)].nslots);
    cluster_drop_unowned();
    cluster_follow_role();
    return 0;
}

/* ---- failover -------------------------------------------------------- */

/* cluster-enabled yes: replicate myself's primary, when the view knows
 * one with an address; a primary replicates nobody. */
static void
follow_view_role(void)
{
    const struct cluster_node_v *me = cview.myself;
    const struct cluster_node_v *p = me->primary;
    if (view_node_is_primary(me)) {
        repl_set_primary(NULL, 0);      /* no-op unless it was a replica */
    } else if (p != NULL && p->ip[0] != '\0' && p->port != 0 &&
               !repl_same_primary(p->ip, p->port)) {
        repl_set_primary(p->ip, p->port);
    }
}

void
cluster_follow_role(void)
{
    if (cluster_keys.live) {
        follow_view_role();
        return;
    }
    if (!cluster_keys.routing) {
        return;
    }
    size_t shard = cluster_topo_shard(topo, topo->myself);
    if (shard == topo->myself) {
        repl_set_primary(NULL, 0);      /* no-op unless it was a replica */
        return;
    }
    const struct cluster_node *me = &topo->nodes[topo->myself];
    const struct cluster_node *p = &topo->nodes[shard];
    /* Sentinel must see the address the lines give this node. */
    repl_announce_default(me->host, (int)me->port);
    if (!repl_same_primary(p->host, (int)p->port)) {
        repl_set_primary(p->host, (int)p->port);
    }
}

/* Node i is its shard's primary now: the map changes here, this node
 * follows its part, and the file is due for a rewrite. */
static void
promote(size_t i, const char *why)
{
    const struct cluster_node *n = &topo->nodes[i];
    if (cluster_topo_promote(topo, i)) {
        promoted = true;
        log_notice("Cluster failover (%s): %s %s:%u is the primary of %u "
                   "slots now", why, n->id, n->host, n->port, n->nslots);
    }
    cluster_follow_role();
}

int
cluster_replicaof(const char *host, int port, char *err, size_t errlen)
{
    size_t me = topo->myself;
    if (host == NULL) {
        promote(me, "REPLICAOF NO ONE");
        return 0;
    }
    size_t i = cluster_topo_find(topo, host, (unsigned)port);
    if (i == topo->nnodes || i == me ||
        cluster_topo_shard(topo, i) != cluster_topo_shard(topo, me)) {
        snprintf(err, errlen, "REPLICAOF in cluster mode must name another "
                 "node of this node's shard, as its cluster-node line "
                 "writes it");
        return -1;
    }
    promote(i, "REPLICAOF");
    return 0;
}

/* The promoted topology into the config file, in place of its lines. */
static int
save_lines(char *err, size_t errlen)
{
    char *lines = cluster_lines_changed();
    if (lines == NULL) {
        return 0;
    }
    int rc = conf_rewrite_file(NULL, lines, srv.config_file, err, errlen);
    cluster_lines_free(lines);
    if (rc != 0) {
        log_warning("Cluster topology NOT saved: %s", err);
        return -1;
    }
    promoted = false;
    return 0;
}

int
cluster_promote(const char *id, size_t idlen, char *err, size_t errlen)
{
    size_t i = cluster_topo_find_id(topo, id, idlen);
    if (i == topo->nnodes) {
        snprintf(err, errlen, "Unknown node %.*s", (int)(idlen > 64 ? 64 : idlen),
                 id);
        return -1;
    }
    promote(i, "CLUSTER PROMOTE");
    return save_lines(err, errlen);
}

char *
cluster_lines_changed(void)
{
    struct textbuf t = { NULL, 0, 0, false };
    if (!cluster_keys.routing || !promoted) {
        return NULL;
    }
    cluster_topo_format(topo, &t);
    textbuf_append(&t, "", 1);
    if (t.oom) {
        textbuf_free(&t);
        return NULL;
    }
    return t.p;
}

void
cluster_lines_free(char *lines)
{
    mem_free(lines);                /* a textbuf's text */
}

void
cluster_lines_saved(void)
{
    promoted = false;
}

/* ---- routing --------------------------------------------------------- */

/* The verdict for one slot: served here (by this node, or by its shard
 * when a replica may read), on its owner (MOVED), or by no one. */
static enum cluster_verdict
route_slot(unsigned slot, bool replica_read, struct cluster_redirect *to)
{
    const struct cluster_node *n = cluster_topo_owner(topo, slot);
    if (n == NULL) {
        return CLUSTER_DOWN;
    }
    size_t owner = (size_t)(n - topo->nodes);
    if (owner != topo->myself &&
        !(replica_read && owner == cluster_topo_shard(topo, topo->myself))) {
        to->slot = slot;
        to->host = n->host;
        to->port = n->port;
        return CLUSTER_MOVED;
    }
    return CLUSTER_HERE;
}

enum cluster_verdict
cluster_route(const struct resp_request *req, int first, int last, int step,
              unsigned flags, struct cluster_redirect *to)
{
    if (cluster_keys.live) {
        struct cluster_query q;
        cluster_query_start(&q);
        cluster_query_keys(&q, req, first, last, step);
        return cluster_query_end(&q, flags, to);
    }
    bool replica_read = (flags & CLUSTER_Q_READONLY) &&
                        !(flags & CLUSTER_Q_WRITE);
    unsigned slot = keyslot(req->argv[first], req->argvlen[first]);
    for (int i = first + step; i <= last; i += step) {
        if (keyslot(req->argv[i], req->argvlen[i]) != slot) {
            return CLUSTER_CROSSSLOT;
        }
    }
    return route_slot(slot, replica_read, to);
}

/* ---- routing one computed key ------------------------------------------
 * For keys a command computes rather than names in argv: RL.CHECK's
 * counters (named_limits.c) and the gRPC service's descriptors, whose
 * owner is asked over the network (envoy/rls_forward.c). Only the static
 * cluster-mode yes routes; `asking` is for the live view's IMPORTING
 * slots (cluster-enabled yes) and unused by the static topology, whose
 * slots never move while it runs. */
enum cluster_verdict
cluster_route_key(const char *key, size_t len, bool asking,
                  struct cluster_redirect *to)
{
    if (cluster_keys.live) {
        struct cluster_query q;
        char *argv[1] = { (char *)key };
        size_t argvlen[1] = { len };
        struct resp_request req = { 1, argv, argvlen, 0 };
        cluster_query_start(&q);
        cluster_query_keys(&q, &req, 0, 0, 1);
        return cluster_query_end(&q, CLUSTER_Q_WRITE |
                                 (asking ? CLUSTER_Q_ASKING : 0), to);
    }
    if (!cluster_keys.routing) {
        return CLUSTER_HERE;
    }
    return route_slot(keyslot(key, len), false, to);
}

bool
cluster_mode_settable(int64_t mode)
{
    if (cluster_keys.live) {
        return mode == CLUSTER_MODE_NO;     /* cluster-enabled excludes both */
    }
    return !cluster_keys.routing && mode != CLUSTER_MODE_YES;
}

/* cluster-mode may change between no and emulated with CONFIG SET (yes is
 * fixed at start-up), so the emulated map is built when first needed. */
const struct cluster_topo *
cluster_topology(char *err, size_t errlen)
{
    if (srv.conf.cluster_mode == CLUSTER_MODE_NO) {
        snprintf(err, errlen, "This instance has cluster support disabled");
        return NULL;
    }
    if (topo == NULL) {
        /* CONFIG SET cluster-mode emulated: the keys there get indexed. */
        keyspace_slots_enable();
        topo = emulated_topology(err, errlen);
    }
    return topo;
}

/* ---- cluster-enabled yes: routing by the live view ---------------------
 * Redis's getNodeByQuery(): every key must hash to one slot; a slot with
 * no owner is CLUSTERDOWN; a slot MIGRATING from here sends the keys this
 * node no longer has to the target (ASK) or, when only some are missing,
 * asks to try again; an IMPORTING slot serves a client that sent ASKING.
 * The common case costs one CRC16 (by the caller, which hands the slot to
 * the keyspace through keyslot_hint) and three loads from cview's arrays. */

void
cluster_query_start(struct cluster_query *q)
{
    memset(q, 0, sizeof(*q));
    q->early = CLUSTER_HERE;
}

/* Is key present here (expired or not, as Redis's LOOKUP_NOEXPIRE)? */
static bool
key_present(const char *key, size_t len)
{
    struct store *db = srv.dbs != NULL ? srv.dbs[0] : NULL;
    return db != NULL && store_lookup(db, key, len, 0) != NULL;
}

static void
query_first_key(struct cluster_query *q, const char *key, size_t len,
                unsigned slot)
{
    const struct cluster_node_v *n = cview.slots[slot];
    q->any = true;
    q->first = key;
    q->firstlen = len;
    q->slot = slot;
    q->owner = n;
    if (n == NULL) {
        q->early = CLUSTER_DOWN;
        return;
    }
    if (n == cview.myself && cview.migrating_to[slot] != NULL) {
        q->migrating = true;
    } else if (cview.importing_from[slot] != NULL) {
        q->importing = true;
    }
}

static void
query_key(struct cluster_query *q, const char *key, size_t len)
{
    unsigned slot = keyslot(key, len);
    if (!q->any) {
        query_first_key(q, key, len, slot);
        if (q->early != CLUSTER_HERE) {
            return;
        }
    } else if (len != q->firstlen || memcmp(key, q->first, len) != 0) {
        if (slot != q->slot) {
            q->early = CLUSTER_CROSSSLOT;
            return;
        }
        q->multiple = true;
    }
    if (q->migrating || q->importing) {
        if (key_present(key, len)) {
            q->existing++;
        } else {
            q->missing++;
        }
    }
}

void
cluster_query_keys(struct cluster_query *q, const struct resp_request *req,
                   int first, int last, int step)
{
    for (int i = first; i <= last && q->early == CLUSTER_HERE; i += step) {
        query_key(q, req->argv[i], req->argvlen[i]);
    }
}

static enum cluster_verdict
redirect(struct cluster_query *q, const struct cluster_node_v *n,
         enum cluster_verdict v, struct cluster_redirect *to)
{
    to->slot = q->slot;
    to->host = cluster_endpoint(n);
    to->port = (unsigned)n->port;
    return v;
}

enum cluster_verdict
cluster_query_end(struct cluster_query *q, unsigned flags,
                  struct cluster_redirect *to)
{
    const struct cluster_node_v *n = q->owner;
    if (q->early != CLUSTER_HERE || !q->any) {
        return q->early;
    }
    if (cview.state != VIEW_STATE_OK) {
        if (!srv.conf.cluster_allow_reads_when_down) {
            return CLUSTER_DOWN_STATE;
        }
        if (flags & CLUSTER_Q_WRITE) {
            return CLUSTER_DOWN_RO_STATE;
        }
    }
    if ((q->migrating || q->importing) && (flags & CLUSTER_Q_MIGRATE)) {
        return CLUSTER_HERE;
    }
    if (q->migrating && q->missing > 0) {
        return q->existing > 0
               ? CLUSTER_TRYAGAIN
               : redirect(q, cview.migrating_to[q->slot], CLUSTER_ASK, to);
    }
    if (q->importing && (flags & CLUSTER_Q_ASKING)) {
        return q->multiple && q->missing > 0 ? CLUSTER_TRYAGAIN
                                             : CLUSTER_HERE;
    }
    const struct cluster_node_v *me = cview.myself;
    if ((flags & CLUSTER_Q_READONLY) && !(flags & CLUSTER_Q_WRITE) &&
        view_node_is_replica(me) && me->primary == n) {
        return CLUSTER_HERE;
    }
    return n == me ? CLUSTER_HERE : redirect(q, n, CLUSTER_MOVED, to);
}

const char *
cluster_endpoint(const struct cluster_node_v *n)
{
    switch (srv.conf.cluster_preferred_endpoint_type) {
    case ENDPOINT_TYPE_HOSTNAME:
        return n->hostname[0] != '\0' ? n->hostname : "?";
    case ENDPOINT_TYPE_UNKNOWN:
        return "";
    default:
        return n->ip;
    }
}

/* ---- cluster-enabled yes: start, before sleep, cron, stop --------------- */

static uv_prepare_t before_sleep_handle;
static bool before_sleep_started;
static uv_timer_t pong_soon_timer;      /* cluster_broadcast_pong_soon() */
static bool pong_soon;                  /* start it at the next before-sleep */

/* myself's ports and announced address, from the options (Redis's
 * deriveAnnouncedPorts() and clusterUpdateMyself*()). */
static void
announce_myself(void)
{
    struct cluster_node_v *me = cview.myself;
    int port = (int)srv.conf.port;
    me->port = srv.conf.cluster_announce_port != 0
               ? (int)srv.conf.cluster_announce_port : port;
    me->pport = 0;
    me->cport = srv.conf.cluster_announce_bus_port != 0
                ? (int)srv.conf.cluster_announce_bus_port
                : srv.conf.cluster_port != 0 ? (int)srv.conf.cluster_port
                                             : port + VIEW_PORT_INCR;
    /* As Redis's clusterUpdateMyselfIp(): an announced address is myself's;
     * once it is removed, the bus learns myself's address again. */
    static char announced[VIEW_IP_LEN];
    const char *ip = srv.conf.cluster_announce_ip;
    if (strcmp(ip, announced) != 0) {
        snprintf(announced, sizeof(announced), "%s", ip);
        snprintf(me->ip, sizeof(me->ip), "%s", ip);
    }
    view_node_set_hostname(me, srv.conf.cluster_announce_hostname,
                           strlen(srv.conf.cluster_announce_hostname));
}

void
cluster_replicate(struct cluster_node_v *n)
{
    view_set_my_primary(n);
    failover_reset_manual();
    follow_view_role();
}

void
cluster_reset(bool hard)
{
    if (view_node_is_replica(cview.myself)) {
        view_set_node_as_primary(cview.myself);
        repl_set_primary(NULL, 0);
        for (int db = 0; db < (int)srv.conf.databases; db++) {
            keyspace_flush(db);
        }
    }
    failover_reset_manual();
    view_reset(hard);
}

void
cluster_announce_changed(void)
{
    if (cluster_keys.live) {
        announce_myself();
        view_todo(VIEW_TODO_SAVE_CONFIG);
    }
}

static void
save_or_die(bool do_fsync)
{
    char err[512];
    if (nodes_file_save(do_fsync, err, sizeof(err)) != 0) {
        log_warning("Fatal: can't update cluster config file: %s", err);
        exit(1);
    }
}

/* A new view: myself alone, a random name, saved at once. */
static int
new_view(char *err, size_t errlen)
{
    if (view_init(NULL) != 0) {
        snprintf(err, errlen, "out of memory creating the cluster view");
        return -1;
    }
    cview.size = 1;                     /* as Redis's clusterInit() */
    log_notice("No cluster configuration found, I'm %s", cview.myself->name);
    if (nodes_file_save(true, err, errlen) != 0) {
        return -1;
    }
    return 0;
}

int
cluster_start(char *err, size_t errlen)
{
    if (!srv.conf.cluster_enabled) {
        return 0;
    }
    if (srv.conf.cluster_port == 0 && srv.conf.port > 65535 - VIEW_PORT_INCR) {
        snprintf(err, errlen, "Redis port number too high. Cluster "
                 "communication port is 10,000 port numbers higher than "
                 "your Redis port. Your Redis port number must be 55535 or "
                 "less.");
        return -1;
    }
    cview.on_node_free = bus_forget_node;
    if (nodes_file_lock(err, errlen) != 0) {
        return -1;
    }
    int rc = nodes_file_load(err, errlen);
    if (rc < 0 || (rc == 0 && new_view(err, errlen) != 0)) {
        nodes_file_unlock();
        return -1;
    }
    if (rc == 1) {
        cview.size = 1;
    }
    announce_myself();
    cluster_keys.live = true;
    return 0;
}

/* The slots the loaded keys are in against the view, as Redis's
 * verifyClusterConfigWithData(): a slot with keys and no owner becomes
 * this node's, one owned by another node is importing from it. */
static void
claim_loaded_slots(void)
{
    bool changed = false;
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (keyspace_slot_count(j) == 0 || cview.slots[j] == cview.myself ||
            cview.importing_from[j] != NULL) {
            continue;
        }
        changed = true;
        if (cview.slots[j] == NULL) {
            log_warning("I have keys for unassigned slot %u. Taking "
                        "responsibility for it.", j);
            view_add_slot(cview.myself, j);
        } else {
            log_warning("I have keys for slot %u, but the slot is assigned "
                        "to another node. Setting it to importing state.", j);
            cview.importing_from[j] = cview.slots[j];
        }
    }
    if (changed) {
        save_or_die(true);
    }
}

int
cluster_check_data(char *err, size_t errlen)
{
    if (!cluster_keys.live || view_node_is_replica(cview.myself)) {
        return 0;               /* a replica's keys are its primary's */
    }
    for (int db = 1; db < (int)srv.conf.databases; db++) {
        if (srv.dbs != NULL && srv.dbs[db] != NULL &&
            store_size(srv.dbs[db]) != 0) {
            snprintf(err, errlen, "You can't have keys in a DB different "
                     "than DB 0 when in Cluster mode. Exiting.");
            return -1;
        }
    }
    claim_loaded_slots();
    return 0;
}

static void
on_before_sleep(uv_prepare_t *h)
{
    (void)h;
    cluster_before_sleep();
}

int
cluster_bus_start(void *loop, char *err, size_t errlen)
{
    if (!cluster_keys.live) {
        return 0;
    }
    if (uv_prepare_init(loop, &before_sleep_handle) != 0) {
        snprintf(err, errlen, "cannot start the cluster's before-sleep work");
        return -1;
    }
    uv_prepare_start(&before_sleep_handle, on_before_sleep);
    uv_timer_init(loop, &pong_soon_timer);
    before_sleep_started = true;
    return bus_start(err, errlen);
}

static void
on_pong_soon(uv_timer_t *t)
{
    (void)t;
    if (cluster_keys.live) {
        bus_broadcast_pong(BUS_TARGET_ALL);
    }
}

void
cluster_broadcast_pong_soon(void)
{
    pong_soon = true;
}

/* Started from the before-sleep work, whose prepare phase also writes the
 * replies (conn.c), the timer fires once they are out, whichever turn of
 * the loop libuv runs its timers in. */
static void
start_pong_soon(void)
{
    pong_soon = false;
    if (before_sleep_started &&
        !uv_is_active((uv_handle_t *)&pong_soon_timer)) {
        uv_timer_start(&pong_soon_timer, on_pong_soon, 0, 0);
    }
}

void
cluster_before_sleep(void)
{
    unsigned todo = cview.todo;
    if (pong_soon) {
        start_pong_soon();
    }
    if (!cluster_keys.live || (todo & ~VIEW_TODO_HANDLE_FAILOVER) == 0) {
        return;
    }
    if (todo & VIEW_TODO_UPDATE_STATE) {
        view_update_state(clock_wall_us() / 1000,
                          srv.conf.cluster_node_timeout,
                          srv.conf.cluster_require_full_coverage);
    }
    if (todo & VIEW_TODO_SAVE_CONFIG) {
        cview.todo &= ~(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_FSYNC_CONFIG);
        save_or_die((todo & VIEW_TODO_FSYNC_CONFIG) != 0);
    } else if (todo & VIEW_TODO_FSYNC_CONFIG) {
        cview.todo &= ~VIEW_TODO_FSYNC_CONFIG;
        save_or_die(true);
    }
}

void
cluster_cron(void)
{
    /* As Redis's clusterCron(): a failed state is looked at again every
     * tick, so a primary turns ok once its rejoin delay is over. */
    if (cluster_keys.live && cview.state == VIEW_STATE_FAIL) {
        view_todo(VIEW_TODO_UPDATE_STATE);
    }
}

void
cluster_shutdown(void)
{
    if (!cluster_keys.live) {
        return;
    }
    bus_stop();
    if (before_sleep_started) {
        uv_prepare_stop(&before_sleep_handle);
        uv_close((uv_handle_t *)&before_sleep_handle, NULL);
        uv_timer_stop(&pong_soon_timer);
        uv_close((uv_handle_t *)&pong_soon_timer, NULL);
        before_sleep_started = false;
    }
}
