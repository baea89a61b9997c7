/*
 * cmd_cluster.c - CLUSTER for cluster-aware clients, with cluster-mode
 * emulated: this node is a one-node cluster that owns slots 0-16383, so
 * clients that insist on a cluster (redis-py RedisCluster, redis-cli -c,
 * redis-benchmark --cluster) route every key here. Slots follow Redis
 * Cluster: CRC16 (XMODEM) of the key, or of its {hash tag}, mod 16384.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/cmd.h"
#include "server/conn.h"
#include "server/handlers.h"
#include "server/server.h"

#define SLOTS 16384

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no
 * reflection, computed bit by bit (keys are short; no table needed). */
static uint16_t
crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++) {
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                                 : (uint16_t)(crc << 1);
        }
    }
    return crc;
}

unsigned
cluster_keyslot(const char *key, size_t len)
{
    /* Only the part between the first '{' and the next '}' counts, if it
     * is not empty. */
    const char *open = memchr(key, '{', len);
    if (open != NULL) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close != NULL && close > open + 1) {
            return crc16(open + 1, (size_t)(close - open - 1)) & (SLOTS - 1);
        }
    }
    return crc16(key, len) & (SLOTS - 1);
}

static bool
cluster_enabled(struct conn *c)
{
    if (strcmp(srv.conf.cluster_mode, "emulated") != 0) {
        conn_error(c, "ERR This instance has cluster support disabled");
        return false;
    }
    return true;
}

/* The address the client reached us on: what it should use for slots. */
static void
my_endpoint(const struct conn *c, char *ip, size_t len, unsigned *port)
{
    const char *colon = strrchr(c->laddr, ':');
    size_t n = colon != NULL ? (size_t)(colon - c->laddr) : 0;
    if (c->is_unix || colon == NULL || n >= len) {
        snprintf(ip, len, "%s", "127.0.0.1");
    } else {
        memcpy(ip, c->laddr, n);
        ip[n] = '\0';
    }
    *port = srv.tcp_port;
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
    reply_bulkz(&c->out, srv.run_id);
}

void
cmd_cluster_slots(struct conn *c, struct resp_request *req)
{
    char ip[64];
    unsigned port;
    (void)req;
    my_endpoint(c, ip, sizeof(ip), &port);
    reply_array(&c->out, 1);
    reply_array(&c->out, 3);
    reply_int(&c->out, 0);
    reply_int(&c->out, SLOTS - 1);
    reply_array(&c->out, 4);
    reply_bulkz(&c->out, ip);
    reply_int(&c->out, port);
    reply_bulkz(&c->out, srv.run_id);
    reply_map(&c->out, 0, c->proto);
}

void
cmd_cluster_shards(struct conn *c, struct resp_request *req)
{
    char ip[64];
    unsigned port;
    int proto = c->proto;
    (void)req;
    my_endpoint(c, ip, sizeof(ip), &port);
    reply_array(&c->out, 1);
    reply_map(&c->out, 2, proto);
    reply_bulkz(&c->out, "slots");
    reply_array(&c->out, 2);
    reply_int(&c->out, 0);
    reply_int(&c->out, SLOTS - 1);
    reply_bulkz(&c->out, "nodes");
    reply_array(&c->out, 1);
    reply_map(&c->out, 7, proto);
    reply_bulkz(&c->out, "id");
    reply_bulkz(&c->out, srv.run_id);
    reply_bulkz(&c->out, "port");
    reply_int(&c->out, port);
    reply_bulkz(&c->out, "ip");
    reply_bulkz(&c->out, ip);
    reply_bulkz(&c->out, "endpoint");
    reply_bulkz(&c->out, ip);
    reply_bulkz(&c->out, "role");
    reply_bulkz(&c->out, "master");
    reply_bulkz(&c->out, "replication-offset");
    reply_int(&c->out, 0);
    reply_bulkz(&c->out, "health");
    reply_bulkz(&c->out, "online");
}

void
cmd_cluster_nodes(struct conn *c, struct resp_request *req)
{
    char ip[64], line[256];
    unsigned port;
    (void)req;
    my_endpoint(c, ip, sizeof(ip), &port);
    int n = snprintf(line, sizeof(line),
                     "%s %s:%u@%u myself,master - 0 0 1 connected 0-%d\n",
                     srv.run_id, ip, port, port + 10000, SLOTS - 1);
    reply_verbatim(&c->out, line, (size_t)n, c->proto);
}

void
cmd_cluster_info(struct conn *c, struct resp_request *req)
{
    static const char info[] =
        "cluster_enabled:1\r\n"
        "cluster_state:ok\r\n"
        "cluster_slots_assigned:16384\r\n"
        "cluster_slots_ok:16384\r\n"
        "cluster_slots_pfail:0\r\n"
        "cluster_slots_fail:0\r\n"
        "cluster_known_nodes:1\r\n"
        "cluster_size:1\r\n"
        "cluster_current_epoch:1\r\n"
        "cluster_my_epoch:1\r\n";
    (void)req;
    reply_verbatim(&c->out, info, sizeof(info) - 1, c->proto);
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
        "SHARDS", "    Return information about slot range mappings.",
        "SLOTS", "    Return information about slots range mappings.",
        "HELP", "    Print this help.", NULL
    };
    (void)req;
    cmd_reply_help(c, lines);
}
