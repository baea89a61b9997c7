/*
 * cluster.h - the cluster this node is part of (cluster.c): the running
 * topology, where keys are served, and reloads.
 */
#ifndef CELLGATE_CLUSTER_H
#define CELLGATE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/resp.h"
#include "server/cluster/view.h"    /* cview, for cluster_slot_here() */

struct cluster_node_v;

/* At start-up, after the configuration: with cluster-mode yes, read the
 * cluster-node lines of the config file and find this node; with
 * emulated, map every slot to this node. Returns 0, or -1 with err set (a
 * configuration error: do not start). */
int cluster_setup(char *err, size_t errlen);

/* Re-read the topology (CLUSTER RELOAD, SIGHUP). On success the new one
 * replaces the old and keys of slots this node no longer owns are
 * dropped; on failure the old one stays. Returns 0, or -1 with err. */
int cluster_reload(char *err, size_t errlen);

/* Remove the keys of slots this node does not own (after a snapshot is
 * loaded or the topology changed). Returns how many were removed. */
size_t cluster_drop_unowned(void);

/* Which routing this node does: set by cluster_setup(), cluster_start()
 * and cluster_teardown() only, read inline by cluster_routing() and
 * cluster_live() on every command (server/cmd.c). At most one is true. */
struct cluster_keys {
    bool routing;               /* cluster-mode yes: the static topology */
    bool live;                  /* cluster-enabled yes: the live view */
};
extern struct cluster_keys cluster_keys;

/* Do keys need routing at all (cluster-mode yes or cluster-enabled yes)? */
static inline bool
cluster_routing(void)
{
    return cluster_keys.routing | cluster_keys.live;
}

/* Where the keys argv[first], argv[first + step], ... argv[last] are
 * served: here, on another node (MOVED or, cluster-enabled yes, ASK: *to
 * filled), in no one slot, or nowhere. The caller answers the client. */
enum cluster_verdict {
    CLUSTER_HERE,
    CLUSTER_MOVED,
    CLUSTER_CROSSSLOT,
    CLUSTER_DOWN,               /* -CLUSTERDOWN Hash slot not served */
    CLUSTER_ASK,                /* slot migrating from here, key absent */
    CLUSTER_TRYAGAIN,           /* keys of a moving slot, some missing */
    CLUSTER_DOWN_STATE,         /* -CLUSTERDOWN The cluster is down */
    CLUSTER_DOWN_RO_STATE       /* ... and only accepts read commands */
};
struct cluster_redirect {
    unsigned slot;
    const char *host;
    unsigned port;
};
/* What routing must know of the command and its client (Redis's
 * getNodeByQuery() reads them from both). */
#define CLUSTER_Q_WRITE 1u          /* the command (or EXEC's queue) writes */
#define CLUSTER_Q_READONLY 2u       /* the client sent READONLY */
#define CLUSTER_Q_ASKING 4u         /* ASKING before it, or RESTORE-ASKING */
#define CLUSTER_Q_MIGRATE 8u        /* MIGRATE: served here in a moving slot */
/* flags: CLUSTER_Q_*. A READONLY client's read may be answered by a
 * replica for its primary's slots (else MOVED there). */
enum cluster_verdict cluster_route(const struct resp_request *req, int first,
                                   int last, int step, unsigned flags,
                                   struct cluster_redirect *to);

/* cluster-enabled yes: the keys of several commands (EXEC's queue, a
 * command's destination and sources) routed as one request, as Redis's
 * getNodeByQuery(): start, add each run of keys, then the verdict. */
struct cluster_query {
    const void *owner;          /* the first key's slot's node */
    const char *first;          /* the first key */
    size_t firstlen;
    unsigned slot;
    unsigned missing;           /* keys absent here, in a moving slot */
    unsigned existing;
    bool any;                   /* a key was added */
    bool multiple;              /* two different keys */
    bool migrating;             /* the slot is MIGRATING from here */
    bool importing;             /* the slot is IMPORTING here */
    enum cluster_verdict early; /* CROSSSLOT or DOWN found on the way */
};
void cluster_query_start(struct cluster_query *q);
void cluster_query_keys(struct cluster_query *q,
                        const struct resp_request *req, int first, int last,
                        int step);
enum cluster_verdict cluster_query_end(struct cluster_query *q,
                                       unsigned flags,
                                       struct cluster_redirect *to);

/* cluster-enabled yes, the common case: slot (a key's, lib/keyslot.h) is
 * this node's, not moving, and the cluster is up (so any command on a key
 * of it is served here). False says nothing: route it with
 * cluster_query_*(). */
static inline bool
cluster_slot_here(unsigned slot)
{
    /* Inline, on every keyed command, and evaluated whole: five loads
     * whose bits are or-ed, one test, no branch between them. Each term
     * is zero exactly when its condition holds (VIEW_STATE_OK is 0). */
    _Static_assert(VIEW_STATE_OK == 0, "the state's term is the state");
    uintptr_t not_here =
        ((uintptr_t)cview.slots[slot] ^ (uintptr_t)cview.myself) |
        (uintptr_t)cview.migrating_to[slot] |
        (uintptr_t)cview.importing_from[slot] | (unsigned)cview.state;
    return not_here == 0;
}

/* Is this node a cluster-enabled yes one (the live view)? */
static inline bool
cluster_live(void)
{
    return cluster_keys.live;
}

/* ---- cluster-enabled yes: start, before sleep, cron, stop --------------
 * cluster_setup() refuses cluster-enabled with cluster-mode yes or
 * emulated. cluster_start() (before the data is loaded) locks
 * cluster-config-file and loads the view from it, or makes a new one
 * (a random name, myself a primary without slots) and saves it; 0, or -1
 * with err (a corrupt or locked file: do not start). cluster_bus_start()
 * (once the loop exists) starts the bus and the before-sleep work. */
int cluster_start(char *err, size_t errlen);
int cluster_bus_start(void *loop, char *err, size_t errlen);
/* After the data is loaded: keys of database 0 claim their slots (Redis's
 * verifyClusterConfigWithData()); keys in another database refuse the
 * start (-1 with err). */
int cluster_check_data(char *err, size_t errlen);
void cluster_cron(void);                /* every cron tick (hz) */
void cluster_shutdown(void);            /* stop the bus, close handles */

/* Do the view's VIEW_TODO_* work now (before the loop sleeps): update the
 * state, save nodes.conf (a save that fails stops the process, as
 * Redis's clusterSaveConfigOrDie()). */
void cluster_before_sleep(void);

/* A PONG to every node at the next turn of the loop, after this turn's
 * replies are written: Redis's bus writes wait for that turn too. So the
 * PONG of a slot imported here reaches the source after redis-cli's
 * SETSLOT NODE there, which leaves the PONG nothing to change (no second
 * save, no fsync on the source), as with Redis. */
void cluster_broadcast_pong_soon(void);

/* CLUSTER REPLICATE (and SETSLOT NODE giving away the last slot): myself
 * replicates n from now on, in the view and through replication. */
void cluster_replicate(struct cluster_node_v *n);

/* CLUSTER RESET [HARD]: the view reset (view_reset()); a replica stops
 * replicating and empties its data first, as Redis. */
void cluster_reset(bool hard);

/* CONFIG SET of a cluster-announce-* option: myself's address follows. */
void cluster_announce_changed(void);

/* The address clients are sent to for a node of the view (its ip, or its
 * hostname as cluster-preferred-endpoint-type says). */
const char *cluster_endpoint(const struct cluster_node_v *n);

/* Where one computed key (not an argv element: a named limit's counter)
 * is served, for a command that writes it: HERE (also whenever this node
 * does not route), MOVED (*to filled) or DOWN. asking: the client sent
 * ASKING before this command (a slot being imported serves it then). */
enum cluster_verdict cluster_route_key(const char *key, size_t len,
                                       bool asking,
                                       struct cluster_redirect *to);

/* ---- failover (cluster-mode yes) ---------------------------------------
 * A shard's primary is its cluster-node line without "replicaof"; a node
 * whose line names a primary replicates it. Sentinel fails a shard over
 * with REPLICAOF, and its client-reconfig-script tells the other nodes
 * with CLUSTER PROMOTE; both are promotions of the topology (see
 * cluster_topo_promote), after which this node follows its new role. */

/* At start-up: replicate this node's primary, if it has one. */
void cluster_follow_role(void);

/* REPLICAOF in cluster-mode yes: NO ONE (host NULL) promotes this node;
 * host port must be a node of this node's shard, which is promoted and
 * followed. 0, or -1 with err (nothing changed). */
int cluster_replicaof(const char *host, int port, char *err, size_t errlen);

/* CLUSTER PROMOTE <id>: that node is its shard's primary now; the config
 * file's cluster-node lines are rewritten to match. 0, or -1 with err
 * (an unknown id changes nothing; a file that cannot be rewritten leaves
 * the promotion running and unsaved, and the next PROMOTE or CONFIG
 * REWRITE tries again). */
int cluster_promote(const char *id, size_t idlen, char *err, size_t errlen);

/* For CONFIG REWRITE: the cluster-node lines to write, when the running
 * topology differs from the file's (a promotion since it was read);
 * NULL when the file's lines stand. Free with cluster_lines_free. */
char *cluster_lines_changed(void);
void cluster_lines_free(char *lines);

/* CONFIG REWRITE wrote them. */
void cluster_lines_saved(void);

/* May CONFIG SET change cluster-mode to mode (options.h's enum; -1 for a
 * word that is none)? Between no and emulated yes; to or from yes no (the
 * topology is read at start-up). */
bool cluster_mode_settable(int64_t mode);

/* The topology the CLUSTER command describes (the emulated one is built
 * when first asked for), or NULL with err (cluster-mode no, no memory). */
struct cluster_topo;
const struct cluster_topo *cluster_topology(char *err, size_t errlen);

void cluster_teardown(void);

#endif
