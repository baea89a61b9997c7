/*
 * bus_link.h - what the bus's three files share (bus.c, gossip.c,
 * failover.c): a link to another node, sending a message on it, and the
 * entry points of message processing and the cron. Not for the rest of
 * the server, which uses bus.h and failover.h.
 */
#ifndef CELLGATE_CLUSTER_BUS_LINK_H
#define CELLGATE_CLUSTER_BUS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/cluster_msg.h"

struct cluster_node_v;

/* A TCP connection on the bus (Redis's clusterLink): outbound ones are
 * node->link, made by the cron; inbound ones are accepted and become
 * node->inbound_link once a message names a known sender. */
struct bus_link;

/* The node of a link (NULL: inbound, sender not known yet). */
struct cluster_node_v *bus_link_node(const struct bus_link *l);
bool bus_link_inbound(const struct bus_link *l);

/* Was l freed (it stays readable until the loop's next turn)? */
bool bus_link_closing(const struct bus_link *l);

/* Send m on l (queued; never blocks); counted in the sent stats. l NULL
 * does nothing, as Redis's clusterSendMessage. */
void bus_send(struct bus_link *l, const struct cmsg *m);

/* m to every node with a link but myself and those in handshake. */
void bus_broadcast(const struct cmsg *m);

/* When l was made (ms). */
int64_t bus_link_ctime(const struct bus_link *l);

/* Close and free l (its node loses it). */
void bus_link_free(struct bus_link *l);

/* Inbound l carries messages of n from now on (an older inbound link of
 * n is freed, as setClusterNodeToInboundClusterLink). */
void bus_link_set_inbound_node(struct bus_link *l, struct cluster_node_v *n);

/* The local address of l's socket (this node's IP as the peer reached
 * it), or of the peer: 0, or -1. */
int bus_link_sockname(const struct bus_link *l, char *ip, size_t len);
int bus_link_peername(const struct bus_link *l, char *ip, size_t len);

struct textbuf;

/* gossip.c counts what it received (the type is known once decoded). */
void bus_count_received(unsigned type);

/* Connect an outbound link to n (n->link set; the MEET or PING goes when
 * it connects). false when it cannot even start. */
bool bus_connect(struct cluster_node_v *n);

/* What bus.c calls above it (set by bus_start, bus_start.c): a whole
 * frame read on l (false when l was freed meanwhile), an outbound link
 * connected, the cron every 100 ms, before the loop sleeps. */
struct bus_events {
    bool (*process)(struct bus_link *l, const uint8_t *frame, size_t len);
    void (*connected)(struct bus_link *l);
    void (*cron)(void);
    void (*before_sleep)(void);
};

/* Listen on the cluster port and start the cron: 0, or -1 with err. */
int bus_listen(const struct bus_events *ev, char *err, size_t errlen);

/* Every link and the listeners closed, the cron stopped. */
void bus_close(void);

/* CLUSTER INFO's message counters and total_cluster_links_buffer_limit_
 * exceeded, in Redis's lines. */
void bus_counters_info(struct textbuf *out);

/* ---- gossip.c ---------------------------------------------------------- */

/* A whole frame read on l: decode, check, act (clusterProcessPacket).
 * Returns false when l was freed meanwhile. */
bool gossip_process(struct bus_link *l, const uint8_t *frame, size_t len);

/* An outbound link connected: send it MEET or PING. */
void gossip_link_connected(struct bus_link *l);

/* Every 100 ms (clusterCron). */
void gossip_cron(void);

/* A header for a message of type from this node (clusterBuildMessageHdr):
 * epochs, slots, primary, ports, flags, offset, clock. */
void gossip_build_header(struct cmsg *m, unsigned type);

/* PING/PONG/MEET with gossip to l (clusterSendPing). */
void gossip_send_ping(struct bus_link *l, unsigned type);

/* cellgate's lines after CLUSTER INFO's: each peer's clock offset and
 * round trip as this node measured them (item 5 of issue 39). */
void gossip_clock_info(struct textbuf *out);

/* The node timeout in ms, as configured. */
int64_t gossip_node_timeout(void);

/* This node's replication offset as the bus tells it. */
int64_t gossip_repl_offset(void);

/* What gossip.c asks of failover.c (set by bus_start: failover.c sits
 * above gossip.c, which must not name it). */
struct gossip_failover_ops {
    void (*auth_request)(struct cluster_node_v *sender, const struct cmsg *m);
    void (*auth_ack)(struct cluster_node_v *sender, uint64_t epoch);
    void (*mfstart)(struct bus_link *l, struct cluster_node_v *sender);
    void (*primary_paused)(int64_t offset);
    bool (*manual_running)(void);
    void (*reset_manual)(void);
};
void gossip_set_failover_ops(const struct gossip_failover_ops *ops);

/* ---- failover.c ---------------------------------------------------------- */

/* FAILOVER_AUTH_REQUEST from sender (a primary votes or not). */
void failover_auth_request(struct cluster_node_v *sender, const struct cmsg *m);

/* FAILOVER_AUTH_ACK from sender with its currentEpoch. */
void failover_auth_ack(struct cluster_node_v *sender, uint64_t epoch);

/* MFSTART from sender on l: pause writes, tell it the offset. */
void failover_mfstart(struct bus_link *l, struct cluster_node_v *sender);

/* A PING/PONG of this node's primary arrived with the PAUSED flag. */
void failover_primary_paused(int64_t offset);

/* Is a manual failover running (PAUSED flag in our headers when primary,
 * FORCEACK in our auth requests when replica)? */
bool failover_manual_running(void);

/* Before sleep and from the cron: elections, manual failover steps. */
void failover_handle(void);
void failover_cron(void);

#endif
