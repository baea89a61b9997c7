/*
 * failover.h - a replica taking its failed primary's place
 * (cluster-enabled yes): the automatic election of Redis Cluster
 * (FAILOVER_AUTH_REQUEST to every primary, a majority of their votes,
 * the primary's slots under a new configEpoch), the votes this node
 * gives as a primary, and CLUSTER FAILOVER [FORCE|TAKEOVER].
 */
#ifndef CELLGATE_CLUSTER_FAILOVER_H
#define CELLGATE_CLUSTER_FAILOVER_H

#include <stddef.h>

struct textbuf;

enum failover_mode {
    FAILOVER_DEFAULT = 0,       /* CLUSTER FAILOVER: the primary agrees */
    FAILOVER_FORCE = 1,         /* no primary's consent, an election */
    FAILOVER_TAKEOVER = 2       /* no election: bump the epoch, take */
};

/* CLUSTER FAILOVER [FORCE|TAKEOVER] on this node. 0 (+OK: started), or
 * -1 with err holding Redis's error text without the "ERR " prefix (not
 * a replica, primary failed or unknown without FORCE/TAKEOVER...). */
int failover_manual(int mode, char *err, size_t errlen);

/* Forget a manual failover in progress (CLUSTER RESET, REPLICATE: this
 * node's role changed under it). */
void failover_reset_manual(void);

/* Lines for CLUSTER INFO after Redis's: none in Redis 7.0, so nothing
 * unless a manual failover is running (cellgate's own lines). */
void failover_info(struct textbuf *out);

#endif
