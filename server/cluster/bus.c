/*
 * bus.c - the cluster bus's links (stub: the real links come next).
 */
#include "server/cluster/bus.h"

#include "protocol/reply.h"

int
bus_start(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 0;
}

void
bus_stop(void)
{
}

void
bus_meet(const char *ip, unsigned port, unsigned cport)
{
    (void)ip;
    (void)port;
    (void)cport;
}

void
bus_forget_node(struct cluster_node_v *n)
{
    (void)n;
}

void
bus_links_reply(struct obuf *o, int proto)
{
    (void)proto;
    reply_array(o, 0);
}

void
bus_stats_info(struct textbuf *out)
{
    (void)out;
}

void
bus_broadcast_pong(int target)
{
    (void)target;
}

void
bus_publish(const char *channel, size_t chlen, const char *msg,
            size_t msglen, bool shard)
{
    (void)channel;
    (void)chlen;
    (void)msg;
    (void)msglen;
    (void)shard;
}

void
bus_reset_stats(void)
{
}
