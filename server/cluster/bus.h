/*
 * bus.h - Redis Cluster's bus (cluster-enabled yes): the cluster port's
 * listener, one outbound and one inbound link per known node, frames in
 * and out in Redis 7.0.15's format (protocol/cluster_msg.h), the cron
 * that pings, times nodes out and fails them (gossip.c), and the numbers
 * CLUSTER INFO and CLUSTER LINKS show.
 *
 * The view (view.h) holds what this node knows; the bus is how it learns
 * and tells. Nothing here blocks the loop: every socket is libuv's.
 */
#ifndef CELLGATE_CLUSTER_BUS_H
#define CELLGATE_CLUSTER_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cluster_node_v;
struct obuf;
struct textbuf;

/* At start-up with cluster-enabled yes, once the view is loaded: listen
 * on the cluster port (cluster-port, or port + 10000) and start the cron
 * (every 100 ms). 0, or -1 with err (do not start). */
int bus_start(char *err, size_t errlen);

/* At shutdown: close every link and the listener. */
void bus_stop(void);

/* CLUSTER MEET: view_meet() has made the HANDSHAKE|MEET node for
 * ip:port; connect to its bus port cport now rather than at the next
 * cron. */
void bus_meet(const char *ip, unsigned port, unsigned cport);

/* The view is about to free n (FORGET, RESET, a handshake timed out):
 * close and free its links first. */
void bus_forget_node(struct cluster_node_v *n);

/* CLUSTER LINKS: the whole reply (an array of maps), Redis's fields:
 * direction, node, create-time, events, send-buffer-allocated,
 * send-buffer-used. */
void bus_links_reply(struct obuf *o, int proto);

/* CLUSTER INFO's lines from cluster_stats_messages_ping_sent to
 * total_cluster_links_buffer_limit_exceeded, "\r\n" after each, in
 * Redis's order; then cellgate's own (the peers' clocks, item 5). */
void bus_stats_info(struct textbuf *out);

/* Tell the others now (after an epoch or slot change): a PONG to every
 * node with a link (BUS_TARGET_ALL) or to this node's shard only
 * (BUS_TARGET_LOCAL). */
enum { BUS_TARGET_ALL = 0, BUS_TARGET_LOCAL = 1 };
void bus_broadcast_pong(int target);

/* PUBLISH / SPUBLISH with cluster-enabled yes: send the message to every
 * node (shard: to this node's shard) after delivering it here. */
void bus_publish(const char *channel, size_t chlen, const char *msg,
                 size_t msglen, bool shard);

/* The bus counters CLUSTER RESETSTAT / CONFIG RESETSTAT clear. */
void bus_reset_stats(void);

#endif
