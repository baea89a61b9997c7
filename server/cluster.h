/*
 * cluster.h - cluster-mode yes in the server: the running topology, key
 * routing (MOVED / CROSSSLOT / CLUSTERDOWN) and reloads (cmd_cluster.c).
 */
#ifndef CELLGATE_CLUSTER_H
#define CELLGATE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/resp.h"

struct conn;
struct cmd;

/* At start-up, after the configuration: with cluster-mode yes, read the
 * cluster-node lines of the config file and find this node. Returns 0, or
 * -1 with err set (a configuration error: do not start). */
int cluster_setup(char *err, size_t errlen);

/* Re-read the topology (CLUSTER RELOAD, SIGHUP). On success the new one
 * replaces the old and keys of slots this node no longer owns are
 * dropped; on failure the old one stays. Returns 0, or -1 with err. */
int cluster_reload(char *err, size_t errlen);

/* Remove the keys of slots this node does not own (after a snapshot is
 * loaded or the topology changed). Returns how many were removed. */
size_t cluster_drop_unowned(void);

/* Before running cmd: true if its keys are served here; otherwise the
 * client has been answered (MOVED, CROSSSLOT or CLUSTERDOWN). */
bool cluster_route(struct conn *c, const struct cmd *cmd,
                   const struct resp_request *req);

/* May CONFIG SET change cluster-mode to value? Between no and emulated
 * yes; to or from yes no (the topology is read at start-up). */
bool cluster_mode_settable(const char *value);

void cluster_teardown(void);

#endif
