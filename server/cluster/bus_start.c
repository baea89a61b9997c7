/*
 * bus_start.c - the cluster bus put together: bus.c's sockets call up
 * into gossip.c (messages, cron) and failover.c (elections), and
 * gossip.c hands failover's messages over through an ops table, so the
 * three files stay layered (bus <- gossip <- failover <- this).
 */
#include "server/cluster/bus.h"
#include "server/cluster/bus_link.h"
#include "server/cluster/failover.h"

static void
cron(void)
{
    gossip_cron();
    failover_cron();
}

static const struct bus_events events = {
    .process = gossip_process,
    .connected = gossip_link_connected,
    .cron = cron,
    .before_sleep = failover_handle,
};

static const struct gossip_failover_ops ops = {
    .auth_request = failover_auth_request,
    .auth_ack = failover_auth_ack,
    .mfstart = failover_mfstart,
    .primary_paused = failover_primary_paused,
    .manual_running = failover_manual_running,
    .reset_manual = failover_reset_manual,
};

int
bus_start(char *err, size_t errlen)
{
    gossip_set_failover_ops(&ops);
    return bus_listen(&events, err, errlen);
}

void
bus_stop(void)
{
    bus_close();
}
