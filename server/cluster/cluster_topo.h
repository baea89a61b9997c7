/*
 * cluster_topo.h - the static topology of cluster-mode yes: which node owns
 * which of the 16384 hash slots, read from "cluster-node" lines.
 *
 *   cluster-node <40-hex id> <host>:<port> [<slot>|<first>-<last> ...]
 *   cluster-node <40-hex id> <host>:<port> replicaof <primary's id>
 *
 * A primary and its replicas form a shard: the primary owns the slots and
 * the replicas copy it. Every node reads the same lines; a node finds
 * itself by id (cluster-node-id), or else by its announced address. A
 * failover is a promotion: the replica takes its primary's slots and the
 * primary and the other replicas become its replicas. This module is pure
 * (no server globals), so the unit tests drive it directly.
 */
#ifndef CELLGATE_CLUSTER_TOPO_H
#define CELLGATE_CLUSTER_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/keyslot.h"

struct textbuf;

#define CLUSTER_SLOTS KEYSLOT_SLOTS      /* a key's slot: keyslot() */
#define CLUSTER_ID_LEN 40
#define CLUSTER_HOST_MAX 255
#define CLUSTER_MAX_NODES 1000
#define CLUSTER_NO_NODE UINT16_MAX      /* owner of a slot nobody serves */

struct cluster_node {
    char id[CLUSTER_ID_LEN + 1];
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port;
    unsigned nslots;
    uint16_t primary;                   /* node index, or CLUSTER_NO_NODE */
    char primary_id[CLUSTER_ID_LEN + 1];    /* "" for a primary */
};

struct cluster_topo {
    struct cluster_node *nodes;
    size_t nnodes;
    size_t cap;
    size_t myself;                      /* index in nodes */
    uint16_t owner[CLUSTER_SLOTS];      /* node index or CLUSTER_NO_NODE */
};

/* A new empty topology (every slot unowned), or NULL without memory. */
struct cluster_topo *cluster_topo_create(void);
void cluster_topo_free(struct cluster_topo *t);

/* Add one node from the words after "cluster-node": id, host:port and
 * slot ranges. Rejects a malformed id, address or range, a slot above
 * 16383, a duplicate id or address, and a slot another node already owns.
 * Returns 0, or -1 with why set (the topology is unchanged). */
int cluster_topo_add(struct cluster_topo *t, char **words, size_t nwords,
                     char *why, size_t whylen);

/* After the last cluster_topo_add: resolve each replica's primary, which
 * must be listed and be a primary itself. Returns 0, or -1 with why. */
int cluster_topo_link(struct cluster_topo *t, char *why, size_t whylen);

/* Pick this node: by id when myid is not empty, else the node at
 * host:port (host "" = any host with that port, which must be unique).
 * Returns 0, or -1 with why set. */
int cluster_topo_find_myself(struct cluster_topo *t, const char *myid,
                             const char *host, unsigned port, char *why,
                             size_t whylen);

/* The node serving slot, or NULL if none does. */
const struct cluster_node *cluster_topo_owner(const struct cluster_topo *t,
                                              unsigned slot);

/* The primary of node i's shard: i for a primary. */
size_t cluster_topo_shard(const struct cluster_topo *t, size_t i);

/* Node i becomes its shard's primary: it takes the slots, and the old
 * primary and the other replicas become its replicas. Returns true when
 * that changed anything (false: i was a primary already). */
bool cluster_topo_promote(struct cluster_topo *t, size_t i);

/* The node with id (len bytes), or t->nnodes when none has it. */
size_t cluster_topo_find_id(const struct cluster_topo *t, const char *id,
                            size_t len);

/* The node at host:port, or t->nnodes when none is. */
size_t cluster_topo_find(const struct cluster_topo *t, const char *host,
                         unsigned port);

/* " <first>-<last> <slot> ..." for the slots node i owns, as Redis's
 * CLUSTER NODES and the cluster-node lines write them. */
void cluster_topo_format_ranges(const struct cluster_topo *t, size_t i,
                                struct textbuf *out);

/* The topology as "cluster-node ..." lines, in node order (what CONFIG
 * REWRITE writes after a promotion). */
void cluster_topo_format(const struct cluster_topo *t, struct textbuf *out);

/* Slots with an owner. */
unsigned cluster_topo_assigned(const struct cluster_topo *t);

/* Next run of consecutive slots with one owner (unowned slots skipped):
 * start with *slot = 0; false when no run is left. */
bool cluster_topo_next_range(const struct cluster_topo *t, unsigned *slot,
                             unsigned *first, unsigned *last, size_t *node);

#endif
