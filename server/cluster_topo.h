/*
 * cluster_topo.h - the static topology of cluster-mode yes: which node owns
 * which of the 16384 hash slots, read from "cluster-node" lines.
 *
 *   cluster-node <40-hex id> <host>:<port> [<slot>|<first>-<last> ...]
 *
 * Every node reads the same lines; a node finds itself by id
 * (cluster-node-id), or else by its announced address. This module is
 * pure (no server globals), so the unit tests drive it directly.
 */
#ifndef CELLGATE_CLUSTER_TOPO_H
#define CELLGATE_CLUSTER_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLUSTER_SLOTS 16384
#define CLUSTER_ID_LEN 40
#define CLUSTER_HOST_MAX 255
#define CLUSTER_MAX_NODES 1000
#define CLUSTER_NO_NODE UINT16_MAX      /* owner of a slot nobody serves */

struct cluster_node {
    char id[CLUSTER_ID_LEN + 1];
    char host[CLUSTER_HOST_MAX + 1];
    unsigned port;
    unsigned nslots;
};

struct cluster_topo {
    struct cluster_node *nodes;
    size_t nnodes;
    size_t cap;
    size_t myself;                      /* index in nodes */
    uint16_t owner[CLUSTER_SLOTS];      /* node index or CLUSTER_NO_NODE */
};

/* The hash slot of a key: CRC16 (XMODEM) of the key, or of its first
 * non-empty {hash tag}, mod 16384, as Redis Cluster. */
unsigned cluster_keyslot(const char *key, size_t len);

/* A new empty topology (every slot unowned), or NULL without memory. */
struct cluster_topo *cluster_topo_create(void);
void cluster_topo_free(struct cluster_topo *t);

/* Add one node from the words after "cluster-node": id, host:port and
 * slot ranges. Rejects a malformed id, address or range, a slot above
 * 16383, a duplicate id or address, and a slot another node already owns.
 * Returns 0, or -1 with why set (the topology is unchanged). */
int cluster_topo_add(struct cluster_topo *t, char **words, size_t nwords,
                     char *why, size_t whylen);

/* Pick this node: by id when myid is not empty, else the node at
 * host:port (host "" = any host with that port, which must be unique).
 * Returns 0, or -1 with why set. */
int cluster_topo_find_myself(struct cluster_topo *t, const char *myid,
                             const char *host, unsigned port, char *why,
                             size_t whylen);

/* The node serving slot, or NULL if none does. */
const struct cluster_node *cluster_topo_owner(const struct cluster_topo *t,
                                              unsigned slot);

/* Slots with an owner. */
unsigned cluster_topo_assigned(const struct cluster_topo *t);

/* Next run of consecutive slots with one owner (unowned slots skipped):
 * start with *slot = 0; false when no run is left. */
bool cluster_topo_next_range(const struct cluster_topo *t, unsigned *slot,
                             unsigned *first, unsigned *last, size_t *node);

#endif
