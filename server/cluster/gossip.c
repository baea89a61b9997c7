/*
 * gossip.c - what the cluster bus's messages do, and its cron: Redis
 * 7.0.15's clusterProcessPacket and clusterCron over this node's view
 * (view.h), message for message, so a cellgate and a redis-server agree.
 *
 * - MEET/PING/PONG: a MEET from an unknown node adds it (HANDSHAKE, a
 *   random name) and its gossip; every PING and MEET is answered with a
 *   PONG; the first PONG on an outbound link to a handshake node renames
 *   it to the sender's name (or drops it when that name is known, taking
 *   the address); the sender's role (slaveof), slots (by configEpoch:
 *   clusterUpdateSlotsConfigWith, with UPDATE sent to a node that claims
 *   slots of a greater epoch), epochs, offset and hostname are taken; a
 *   config epoch shared with another primary is resolved; the gossip
 *   section adds nodes a known sender vouches for and carries failure
 *   reports from primaries.
 * - failure detection: no PONG within cluster-node-timeout of a PING sets
 *   PFAIL; PFAIL with reports from a majority of primaries (valid for 2 x
 *   node timeout) is FAIL, broadcast; a reachable node's FAIL is cleared
 *   (a replica or slotless primary at once, a primary after 2 x node
 *   timeout if still serving its slots).
 * - this node's IP: learnt from the socket of the first MEET (or of any
 *   PING while it has none) unless cluster-announce-ip is set.
 * - the cron (every 100 ms): a link to every node with an address,
 *   handshakes dropped after the node timeout, a PING to the node with
 *   the oldest PONG every second and to any whose PONG is older than half
 *   the node timeout, links with no traffic for long reconnected.
 * - clocks (cellgate's own): every header carries the sender's wall
 *   clock, a PONG also the clock of the PING it answers; on a PONG of our
 *   own PING the peer's offset is its clock minus the midpoint of our
 *   send and receive times, good to half the round trip.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/mem.h"
#include "lib/textbuf.h"
#include "server/clock.h"
#include "server/keyspace.h"
#include "server/cluster/bus.h"
#include "server/cluster/bus_link.h"
#include "server/cluster/view.h"
#include "server/log.h"
#include "server/pubsub.h"
#include "server/repl/replication.h"
#include "server/repl/stream.h"
#include "server/server.h"

#define GOSSIP_MAX 1000                 /* entries one PING may carry */

static uint64_t pings_sent;             /* numbers last_in_ping_gossip */
static uint64_t cron_iteration;
static int64_t echo_clock;              /* the clock of the PING answered */
static struct gossip_entry_buf {
    struct cmsg_gossip g[GOSSIP_MAX];
} gbuf;

/* Each peer's round trip, kept beside the view's skew (bus's own). */
struct clock_sample {
    char name[CLUSTER_ID_LEN];
    int64_t rtt_ms;
};
static struct clock_sample *rtts;
static size_t nrtts;

static const struct gossip_failover_ops *fops;

void
gossip_set_failover_ops(const struct gossip_failover_ops *ops)
{
    fops = ops;
}

/* Before bus_start() set the ops (a header built for PUBLISH, say), no
 * failover runs. */
static bool
mf_running(void)
{
    return fops != NULL && fops->manual_running();
}

static int64_t
now_ms(void)
{
    return clock_wall_us() / 1000;
}

int64_t
gossip_node_timeout(void)
{
    return srv.conf.cluster_node_timeout;
}

int64_t
gossip_repl_offset(void)
{
    return stream_offset();
}

static bool
is_null_name(const char *name)
{
    for (size_t i = 0; i < CLUSTER_ID_LEN; i++) {
        if (name[i] != '\0') {
            return false;
        }
    }
    return true;
}

/* ---- sending ----------------------------------------------------------- */

static int
announced_port(void)
{
    if (srv.conf.cluster_announce_port != 0) {
        return (int)srv.conf.cluster_announce_port;
    }
    return srv.tcp_port != 0 ? (int)srv.tcp_port : (int)srv.conf.port;
}

static int
announced_cport(void)
{
    if (srv.conf.cluster_announce_bus_port != 0) {
        return (int)srv.conf.cluster_announce_bus_port;
    }
    if (srv.conf.cluster_port != 0) {
        return (int)srv.conf.cluster_port;
    }
    return announced_port() + VIEW_PORT_INCR;
}

void
gossip_build_header(struct cmsg *m, unsigned type)
{
    struct cluster_node_v *me = cview.myself;
    struct cluster_node_v *primary =
        view_node_is_replica(me) && me->primary != NULL ? me->primary : me;
    memset(m, 0, sizeof(*m));
    m->type = (uint16_t)type;
    memcpy(m->sender, me->name, CLUSTER_ID_LEN);
    snprintf(m->myip, sizeof(m->myip), "%s", srv.conf.cluster_announce_ip);
    memcpy(m->myslots, primary->slots, sizeof(m->myslots));
    if (me->primary != NULL) {
        memcpy(m->slaveof, me->primary->name, CLUSTER_ID_LEN);
    }
    m->port = (uint16_t)announced_port();
    m->cport = (uint16_t)announced_cport();
    m->flags = (uint16_t)me->flags;
    m->state = (uint8_t)cview.state;
    m->current_epoch = cview.current_epoch;
    m->config_epoch = primary->config_epoch;
    m->offset = (uint64_t)gossip_repl_offset();
    if (view_node_is_primary(me) && mf_running()) {
        m->mflags[0] |= CMSG_FLAG0_PAUSED;
    }
    m->has_clock = true;
    m->clock_ms = now_ms();
}

static void
gossip_entry(struct cmsg_gossip *g, const struct cluster_node_v *n)
{
    memset(g, 0, sizeof(*g));
    memcpy(g->name, n->name, CLUSTER_ID_LEN);
    g->ping_sent = (uint32_t)(n->ping_sent / 1000);
    g->pong_received = (uint32_t)(n->pong_received / 1000);
    snprintf(g->ip, sizeof(g->ip), "%s", n->ip);
    g->port = (uint16_t)n->port;
    g->cport = (uint16_t)n->cport;
    g->flags = (uint16_t)n->flags;
    g->pport = (uint16_t)n->pport;
}

/* Random nodes worth gossiping about (clusterSendPing): a tenth of the
 * nodes, at least 3, not myself, not PFAIL (added after), not in
 * handshake or without address, not disconnected and slotless. */
static unsigned
pick_gossip(unsigned wanted, int freshnodes)
{
    unsigned count = 0;
    int iterations = (int)wanted * 3;
    while (freshnodes > 0 && count < wanted && iterations-- > 0) {
        struct cluster_node_v *n = cview.nodes[(size_t)rand() % cview.nnodes];
        if (n == cview.myself || (n->flags & VIEW_NODE_PFAIL)) {
            continue;
        }
        if ((n->flags & (VIEW_NODE_HANDSHAKE | VIEW_NODE_NOADDR)) ||
            (n->link == NULL && n->numslots == 0)) {
            freshnodes--;
            continue;
        }
        if (n->last_in_ping_gossip == pings_sent) {
            continue;
        }
        gossip_entry(&gbuf.g[count++], n);
        n->last_in_ping_gossip = pings_sent;
        freshnodes--;
    }
    return count;
}

static unsigned
add_pfail_gossip(unsigned count)
{
    for (size_t i = 0; i < cview.nnodes && count < GOSSIP_MAX; i++) {
        const struct cluster_node_v *n = cview.nodes[i];
        if ((n->flags & (VIEW_NODE_HANDSHAKE | VIEW_NODE_NOADDR)) ||
            !(n->flags & VIEW_NODE_PFAIL)) {
            continue;
        }
        gossip_entry(&gbuf.g[count++], n);
    }
    return count;
}

void
gossip_send_ping(struct bus_link *l, unsigned type)
{
    struct cmsg m;
    pings_sent++;
    int freshnodes = (int)cview.nnodes - 2;
    unsigned wanted = (unsigned)(cview.nnodes / 10);
    if (wanted < 3) {
        wanted = 3;
    }
    if ((int)wanted > freshnodes) {
        wanted = freshnodes > 0 ? (unsigned)freshnodes : 0;
    }
    if (wanted > GOSSIP_MAX / 2) {
        wanted = GOSSIP_MAX / 2;
    }
    struct cluster_node_v *node = bus_link_node(l);
    if (!bus_link_inbound(l) && type == CMSG_PING && node != NULL) {
        node->ping_sent = now_ms();
    }
    gossip_build_header(&m, type);
    if (type == CMSG_PONG) {
        m.echo_ms = echo_clock;
    }
    unsigned count = pick_gossip(wanted, freshnodes);
    m.count = (uint16_t)add_pfail_gossip(count);
    m.gossip = gbuf.g;
    if (cview.myself->hostname[0] != '\0') {
        m.hostname = cview.myself->hostname;
        m.hostname_len = strlen(cview.myself->hostname);
    }
    bus_send(l, &m);
}

void
gossip_link_connected(struct bus_link *l)
{
    struct cluster_node_v *n = bus_link_node(l);
    int64_t old_ping_sent = n->ping_sent;
    gossip_send_ping(l, (n->flags & VIEW_NODE_MEET) ? CMSG_MEET : CMSG_PING);
    if (old_ping_sent != 0) {
        n->ping_sent = old_ping_sent;
    }
    n->flags &= ~VIEW_NODE_MEET;
}

static void
send_fail(const char *name)
{
    struct cmsg m;
    gossip_build_header(&m, CMSG_FAIL);
    memcpy(m.about, name, CLUSTER_ID_LEN);
    bus_broadcast(&m);
}

static void
send_update(struct bus_link *l, const struct cluster_node_v *n)
{
    struct cmsg m;
    if (l == NULL) {
        return;
    }
    gossip_build_header(&m, CMSG_UPDATE);
    memcpy(m.update_name, n->name, CLUSTER_ID_LEN);
    m.update_epoch = n->config_epoch;
    for (size_t i = 0; i < sizeof(m.update_slots); i++) {
        m.update_slots[i] = n->slots[i] & (uint8_t)~cview.owner_not_claiming_slot[i];
    }
    bus_send(l, &m);
}

void
bus_publish(const char *channel, size_t chlen, const char *msg,
            size_t msglen, bool shard)
{
    struct cmsg m;
    if (!view_enabled() || chlen > UINT32_MAX || msglen > UINT32_MAX) {
        return;
    }
    gossip_build_header(&m, shard ? CMSG_PUBLISHSHARD : CMSG_PUBLISH);
    m.channel = (const uint8_t *)channel;
    m.channel_len = (uint32_t)chlen;
    m.message = (const uint8_t *)msg;
    m.message_len = (uint32_t)msglen;
    if (!shard) {
        bus_broadcast(&m);
        return;
    }
    struct cluster_node_v *me = cview.myself;
    struct cluster_node_v *p = view_node_is_primary(me) ? me : me->primary;
    if (p == NULL) {
        return;
    }
    if (p != me) {
        bus_send(p->link, &m);
    }
    for (int i = 0; i < p->nreplicas; i++) {
        if (p->replicas[i] != me) {
            bus_send(p->replicas[i]->link, &m);
        }
    }
}

/* A PONG to every node (BUS_TARGET_ALL) or to this shard's replicas
 * (BUS_TARGET_LOCAL): clusterBroadcastPong. */
void
bus_broadcast_pong(int target)
{
    struct cluster_node_v *me = cview.myself;
    for (size_t i = 0; i < cview.nnodes; i++) {
        struct cluster_node_v *n = cview.nodes[i];
        if (n->link == NULL || n == me || view_node_in_handshake(n)) {
            continue;
        }
        if (target == BUS_TARGET_LOCAL) {
            bool local = view_node_is_replica(n) && n->primary != NULL &&
                         (n->primary == me || n->primary == me->primary);
            if (!local) {
                continue;
            }
        }
        gossip_send_ping(n->link, CMSG_PONG);
    }
}

void
bus_stats_info(struct textbuf *out)
{
    bus_counters_info(out);
    gossip_clock_info(out);
}

/* ---- replication follows the view --------------------------------------- */

/* myself replicates n from now on (Redis's clusterSetMaster). */
static void
become_replica_of(struct cluster_node_v *n)
{
    view_set_my_primary(n);
    if (fops != NULL) {
        fops->reset_manual();
    }
    if (n->ip[0] != '\0' && !repl_same_primary(n->ip, n->port)) {
        repl_set_primary(n->ip, n->port);
    }
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE |
              VIEW_TODO_FSYNC_CONFIG);
}

/* ---- failure detection ---------------------------------------------------- */

static void
mark_failing_if_needed(struct cluster_node_v *n)
{
    int needed = cview.size / 2 + 1;
    if (!view_node_timed_out(n) || view_node_failed(n)) {
        return;
    }
    int failures = view_fail_report_count(n, now_ms(), gossip_node_timeout());
    if (view_node_is_primary(cview.myself)) {
        failures++;
    }
    if (failures < needed) {
        return;
    }
    log_notice("Marking node %.40s as failing (quorum reached).", n->name);
    n->flags &= ~VIEW_NODE_PFAIL;
    n->flags |= VIEW_NODE_FAIL;
    n->fail_time = now_ms();
    send_fail(n->name);
    view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
}

static void
clear_failure_if_needed(struct cluster_node_v *n)
{
    int64_t now = now_ms();
    if (view_node_is_replica(n) || n->numslots == 0) {
        log_notice("Clear FAIL state for node %.40s: %s is reachable again.",
                   n->name, view_node_is_replica(n) ? "replica"
                                                    : "master without slots");
        n->flags &= ~VIEW_NODE_FAIL;
        view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
    }
    if (view_node_is_primary(n) && n->numslots > 0 &&
        now - n->fail_time > gossip_node_timeout() * VIEW_FAIL_UNDO_TIME_MULT) {
        log_notice("Clear FAIL state for node %.40s: is reachable again and "
                   "nobody is serving its slots after some time.", n->name);
        n->flags &= ~VIEW_NODE_FAIL;
        view_todo(VIEW_TODO_UPDATE_STATE | VIEW_TODO_SAVE_CONFIG);
    }
}

/* ---- the gossip section ------------------------------------------------------ */

static void
gossip_known(struct cluster_node_v *sender, struct cluster_node_v *n,
             const struct cmsg_gossip *g)
{
    int bad = VIEW_NODE_FAIL | VIEW_NODE_PFAIL;
    int64_t now = now_ms();
    if (sender != NULL && view_node_is_primary(sender) && n != cview.myself) {
        if (g->flags & bad) {
            view_fail_report_add(n, sender, now);
            mark_failing_if_needed(n);
        } else {
            view_fail_report_remove(n, sender);
        }
    }
    if (!(g->flags & bad) && n->ping_sent == 0 &&
        view_fail_report_count(n, now, gossip_node_timeout()) == 0) {
        int64_t pong = (int64_t)g->pong_received * 1000;
        if (pong <= now + 500 && pong > n->pong_received) {
            n->pong_received = pong;
        }
    }
    if ((n->flags & bad) && !(g->flags & VIEW_NODE_NOADDR) &&
        !(g->flags & bad) &&
        (strcasecmp(n->ip, g->ip) != 0 || n->port != g->port ||
         n->cport != g->cport)) {
        if (n->link != NULL) {
            bus_link_free(n->link);
        }
        snprintf(n->ip, sizeof(n->ip), "%s", g->ip);
        n->port = g->port;
        n->pport = g->pport;
        n->cport = g->cport;
        n->flags &= ~VIEW_NODE_NOADDR;
    }
}

static void
gossip_unknown(const struct cmsg_gossip *g)
{
    if ((g->flags & VIEW_NODE_NOADDR) ||
        view_blacklist_exists(g->name, CLUSTER_ID_LEN, now_ms())) {
        return;
    }
    char name[CLUSTER_ID_LEN + 1];
    memcpy(name, g->name, CLUSTER_ID_LEN);
    name[CLUSTER_ID_LEN] = '\0';
    /* a name view_lookup() refuses would be added again at every PING */
    for (size_t i = 0; i < CLUSTER_ID_LEN; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
            return;
        }
    }
    struct cluster_node_v *n = view_node_create(name, g->flags);
    if (n == NULL) {
        return;
    }
    n->flags &= ~(VIEW_NODE_MYSELF | VIEW_NODE_MEET);
    snprintf(n->ip, sizeof(n->ip), "%s", g->ip);
    n->port = g->port;
    n->pport = g->pport;
    n->cport = g->cport;
    if (view_node_add(n) != 0) {
        view_node_delete(n);            /* never listed: only freed */
        return;
    }
    /* Redis saves it with the next change; saved now, nodes.conf lists
     * every node CLUSTER NODES does */
    view_todo(VIEW_TODO_SAVE_CONFIG);
}

static void
process_gossip(const struct cmsg *m, struct cluster_node_v *sender)
{
    struct cmsg_gossip g;
    for (unsigned i = 0; i < m->count; i++) {
        cmsg_gossip_get(m, i, &g);
        struct cluster_node_v *n = view_lookup(g.name, CLUSTER_ID_LEN);
        if (n != NULL) {
            gossip_known(sender, n, &g);
        } else if (sender != NULL) {
            gossip_unknown(&g);
        }
    }
}


/* ---- slots by config epoch ------------------------------------------------ */

static bool
bit_test(const uint8_t *map, unsigned j)
{
    return (map[j >> 3] >> (j & 7)) & 1;
}

static void
bit_set(uint8_t *map, unsigned j, bool on)
{
    if (on) {
        map[j >> 3] |= (uint8_t)(1u << (j & 7));
    } else {
        map[j >> 3] &= (uint8_t)~(1u << (j & 7));
    }
}

static bool
slot_unclaimed(unsigned j)
{
    return cview.slots[j] == NULL ||
           bit_test(cview.owner_not_claiming_slot, j);
}

/* The slots sender claims under epoch that we give to it
 * (clusterUpdateSlotsConfigWith's loop). *ours: how many were our
 * shard's; returns how many sender claims. */
static uint16_t dirty_slots[CLUSTER_SLOTS];  /* lost with keys in them */
static unsigned ndirty;

static int
rebind_slots(struct cluster_node_v *sender, uint64_t epoch,
             const uint8_t *slots, struct cluster_node_v *curprimary,
             int *ours)
{
    int claimed = 0;
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (!bit_test(slots, j)) {
            if (cview.slots[j] == sender) {
                bit_set(cview.owner_not_claiming_slot, j, true);
            }
            continue;
        }
        claimed++;
        if (cview.slots[j] == sender) {
            bit_set(cview.owner_not_claiming_slot, j, false);
            continue;
        }
        if (cview.importing_from[j] != NULL) {
            continue;
        }
        if (slot_unclaimed(j) || cview.slots[j]->config_epoch < epoch) {
            if (cview.slots[j] == cview.myself && keyspace_slot_count(j) > 0) {
                dirty_slots[ndirty++] = (uint16_t)j;
            }
            if (cview.slots[j] == curprimary && curprimary != NULL) {
                (*ours)++;
            }
            view_del_slot(j);
            view_add_slot(sender, j);
            bit_set(cview.owner_not_claiming_slot, j, false);
            view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE |
                      VIEW_TODO_FSYNC_CONFIG);
        }
    }
    return claimed;
}

static void
update_slots_with(struct cluster_node_v *sender, uint64_t epoch,
                  const uint8_t *slots)
{
    struct cluster_node_v *me = cview.myself;
    struct cluster_node_v *cur = view_node_is_primary(me) ? me : me->primary;
    int ours = 0;
    if (sender == me) {
        log_warning("Discarding UPDATE message about myself.");
        return;
    }
    ndirty = 0;
    int claimed = rebind_slots(sender, epoch, slots, cur, &ours);
    if (ours > 0 && cur != NULL && cur->numslots == 0 &&
        (srv.conf.cluster_allow_replica_migration || claimed == ours)) {
        log_warning("Configuration change detected. Reconfiguring myself "
                    "as a replica of %.40s", sender->name);
        become_replica_of(sender);
    } else if (me->primary != NULL && me->primary->primary != NULL &&
               me->primary->primary != me) {
        log_warning("I'm a sub-replica! Reconfiguring myself as a replica "
                    "of grandmaster %.40s", me->primary->primary->name);
        become_replica_of(me->primary->primary);
    } else {
        /* still a primary: the keys of the slots it lost go, so keys and
         * slots agree (a replica resyncs instead) */
        for (unsigned i = 0; i < ndirty; i++) {
            keyspace_slot_delete(dirty_slots[i], clock_wall_now());
        }
    }
}

/* The sender claims slots another node holds under a greater epoch: tell
 * it with an UPDATE about that node (once per message, as Redis). */
static void
update_stale_sender(struct cluster_node_v *sender, uint64_t epoch,
                    const uint8_t *slots)
{
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (!bit_test(slots, j) || cview.slots[j] == sender ||
            slot_unclaimed(j)) {
            continue;
        }
        if (cview.slots[j]->config_epoch > epoch) {
            log_verbose("Node %.40s has old slots configuration, sending an "
                        "UPDATE message about %.40s", sender->name,
                        cview.slots[j]->name);
            send_update(sender->link, cview.slots[j]);
            return;
        }
    }
}

/* ---- processing ------------------------------------------------------------ */

static struct cluster_node_v *
sender_of(struct bus_link *l, const struct cmsg *m)
{
    struct cluster_node_v *n = bus_link_node(l);
    if (n != NULL && !view_node_in_handshake(n)) {
        return n;
    }
    n = view_lookup(m->sender, CLUSTER_ID_LEN);
    if (n == cview.myself && n != NULL && bus_link_node(l) == NULL) {
        return n;                       /* never tie a link to myself */
    }
    if (n != NULL && bus_link_node(l) == NULL) {
        bus_link_set_inbound_node(l, n);
    }
    return n;
}

/* Epochs and offset of a known sender. Returns its configEpoch. */
static uint64_t
take_epochs(struct cluster_node_v *sender, const struct cmsg *m)
{
    if (m->current_epoch > cview.current_epoch) {
        cview.current_epoch = m->current_epoch;
    }
    if (m->config_epoch > sender->config_epoch) {
        sender->config_epoch = m->config_epoch;
        view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_FSYNC_CONFIG);
    }
    sender->repl_offset = (int64_t)m->offset;
    sender->repl_offset_time = now_ms();
    if (view_node_is_replica(cview.myself) &&
        cview.myself->primary == sender &&
        (m->mflags[0] & CMSG_FLAG0_PAUSED)) {
        fops->primary_paused((int64_t)m->offset);
    }
    return m->config_epoch;
}

/* A MEET from a node we do not know: it joins in handshake, its address
 * the one it announces or else the socket's. */
static void
add_meeting_node(struct bus_link *l, const struct cmsg *m)
{
    struct cluster_node_v *n = view_node_create(NULL, VIEW_NODE_HANDSHAKE);
    if (n == NULL) {
        return;
    }
    if (m->myip[0] != '\0') {
        snprintf(n->ip, sizeof(n->ip), "%s", m->myip);
    } else if (bus_link_peername(l, n->ip, sizeof(n->ip)) != 0) {
        view_node_delete(n);
        return;
    }
    n->port = m->port;
    n->pport = m->pport;
    n->cport = m->cport;
    if (view_node_add(n) != 0) {
        view_node_delete(n);
        return;
    }
    view_todo(VIEW_TODO_SAVE_CONFIG);
}

/* PING and MEET: learn our IP, add a MEETing stranger, answer PONG. */
static void
answer_ping(struct bus_link *l, const struct cmsg *m,
            struct cluster_node_v *sender)
{
    struct cluster_node_v *me = cview.myself;
    char ip[VIEW_IP_LEN];
    if ((m->type == CMSG_MEET || me->ip[0] == '\0') &&
        srv.conf.cluster_announce_ip[0] == '\0' &&
        bus_link_sockname(l, ip, sizeof(ip)) == 0 && strcmp(ip, me->ip) != 0) {
        snprintf(me->ip, sizeof(me->ip), "%s", ip);
        log_warning("IP address for this node updated to %s", me->ip);
        view_todo(VIEW_TODO_SAVE_CONFIG);
    }
    if (sender == NULL && m->type == CMSG_MEET) {
        add_meeting_node(l, m);
        process_gossip(m, NULL);
    }
    echo_clock = m->has_clock ? m->clock_ms : 0;
    gossip_send_ping(l, CMSG_PONG);
    echo_clock = 0;
}

/* nodeUpdateAddressIfNeeded: the sender's address as this link shows it. */
static bool
update_address(struct cluster_node_v *n, struct bus_link *l,
               const struct cmsg *m)
{
    char ip[VIEW_IP_LEN];
    if (l == n->link) {
        return false;
    }
    if (m->myip[0] != '\0') {
        snprintf(ip, sizeof(ip), "%s", m->myip);
    } else if (bus_link_peername(l, ip, sizeof(ip)) != 0) {
        return false;
    }
    if (n->port == m->port && n->cport == m->cport && n->pport == m->pport &&
        strcmp(ip, n->ip) == 0) {
        return false;
    }
    snprintf(n->ip, sizeof(n->ip), "%s", ip);
    n->port = m->port;
    n->pport = m->pport;
    n->cport = m->cport;
    if (n->link != NULL) {
        bus_link_free(n->link);
    }
    n->flags &= ~VIEW_NODE_NOADDR;
    log_warning("Address updated for node %.40s, now %s:%d", n->name, n->ip,
                n->port);
    if (view_node_is_replica(cview.myself) && cview.myself->primary == n) {
        repl_set_primary(n->ip, n->port);
    }
    return true;
}

/* A PONG on our outbound link: the handshake's end or a name check.
 * false when the link (and maybe its node) is gone. */
static bool
outbound_identity(struct bus_link *l, const struct cmsg *m,
                  struct cluster_node_v *sender)
{
    struct cluster_node_v *n = bus_link_node(l);
    if (view_node_in_handshake(n)) {
        if (sender != NULL) {
            if (update_address(sender, l, m)) {
                view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
            }
            bus_link_free(l);
            view_node_delete(n);
            return false;
        }
        char name[CLUSTER_ID_LEN + 1];
        memcpy(name, m->sender, CLUSTER_ID_LEN);
        name[CLUSTER_ID_LEN] = '\0';
        view_node_rename(n, name);
        n->flags &= ~VIEW_NODE_HANDSHAKE;
        n->flags |= m->flags & (VIEW_NODE_MASTER | VIEW_NODE_SLAVE);
        view_todo(VIEW_TODO_SAVE_CONFIG);
        return true;
    }
    if (memcmp(n->name, m->sender, CLUSTER_ID_LEN) != 0) {
        n->flags |= VIEW_NODE_NOADDR;
        n->ip[0] = '\0';
        n->port = n->pport = n->cport = 0;
        bus_link_free(l);
        view_todo(VIEW_TODO_SAVE_CONFIG);
        return false;
    }
    return true;
}

/* cellgate's clock: a PONG answering our PING carries both clocks. */
static void
measure_clock(struct cluster_node_v *n, const struct cmsg *m, int64_t now)
{
    if (!m->has_clock || m->echo_ms <= 0 || m->echo_ms > now) {
        return;
    }
    int64_t rtt = now - m->echo_ms;
    n->clock_skew_ms = m->clock_ms - (m->echo_ms + rtt / 2);
    n->clock_skew_time = now;
    for (size_t i = 0; i < nrtts; i++) {
        if (memcmp(rtts[i].name, n->name, CLUSTER_ID_LEN) == 0) {
            rtts[i].rtt_ms = rtt;
            return;
        }
    }
    void *p = mem_realloc(rtts, (nrtts + 1) * sizeof(*rtts));
    if (p != NULL) {
        rtts = p;
        memcpy(rtts[nrtts].name, n->name, CLUSTER_ID_LEN);
        rtts[nrtts++].rtt_ms = rtt;
    }
}

static void
pong_received(struct cluster_node_v *n, const struct cmsg *m)
{
    int64_t now = now_ms();
    n->pong_received = now;
    n->ping_sent = 0;
    measure_clock(n, m, now);
    if (view_node_timed_out(n)) {
        n->flags &= ~VIEW_NODE_PFAIL;
        view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
    } else if (view_node_failed(n)) {
        clear_failure_if_needed(n);
    }
}

/* The sender's role from its slaveof field. */
static void
take_role(struct cluster_node_v *sender, const struct cmsg *m)
{
    if (is_null_name(m->slaveof)) {
        if (!view_node_is_primary(sender)) {
            view_set_node_as_primary(sender);
            view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
        }
        return;
    }
    struct cluster_node_v *primary = view_lookup(m->slaveof, CLUSTER_ID_LEN);
    if (view_node_is_primary(sender)) {
        view_del_node_slots(sender);
        sender->flags &= ~(VIEW_NODE_MASTER | VIEW_NODE_MIGRATE_TO);
        sender->flags |= VIEW_NODE_SLAVE;
        view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
    }
    if (primary != NULL && sender->primary != primary && primary != sender) {
        if (sender->primary != NULL) {
            view_node_remove_replica(sender->primary, sender);
        }
        view_node_add_replica(primary, sender);
        sender->primary = primary;
        view_todo(VIEW_TODO_SAVE_CONFIG);
    }
}

static void
take_slots(struct cluster_node_v *sender, const struct cmsg *m,
           uint64_t epoch)
{
    struct cluster_node_v *sp =
        view_node_is_primary(sender) ? sender : sender->primary;
    bool dirty = sp != NULL &&
                 memcmp(sp->slots, m->myslots, sizeof(m->myslots)) != 0;
    if (!dirty) {
        return;
    }
    if (view_node_is_primary(sender)) {
        update_slots_with(sender, epoch, m->myslots);
    }
    update_stale_sender(sender, epoch, m->myslots);
}

static void
take_hostname(struct cluster_node_v *sender, const struct cmsg *m)
{
    if (m->hostname != NULL) {
        view_node_set_hostname(sender, m->hostname, m->hostname_len);
    } else if (sender->hostname[0] != '\0') {
        view_node_set_hostname(sender, "", 0);
    }
}

/* PING, PONG, MEET: the sender's configuration. false if l is gone. */
static bool
process_config(struct bus_link *l, const struct cmsg *m,
               struct cluster_node_v *sender, uint64_t epoch)
{
    if (!bus_link_inbound(l) && !outbound_identity(l, m, sender)) {
        return false;
    }
    if (sender != NULL) {
        sender->flags &= ~VIEW_NODE_NOFAILOVER;
        sender->flags |= m->flags & VIEW_NODE_NOFAILOVER;
        if (m->type == CMSG_PING && !view_node_in_handshake(sender) &&
            update_address(sender, l, m)) {
            view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
        }
    }
    if (!bus_link_inbound(l) && m->type == CMSG_PONG) {
        pong_received(bus_link_node(l), m);
    }
    if (sender == NULL) {
        return true;
    }
    take_role(sender, m);
    take_slots(sender, m, epoch);
    if (view_node_is_primary(cview.myself) && view_node_is_primary(sender) &&
        epoch == cview.myself->config_epoch) {
        view_handle_epoch_collision(sender);
    }
    process_gossip(m, sender);
    take_hostname(sender, m);
    return true;
}

static void
process_fail(const struct cmsg *m, struct cluster_node_v *sender)
{
    if (sender == NULL) {
        log_notice("Ignoring FAIL message from unknown node %.40s about "
                   "%.40s", m->sender, m->about);
        return;
    }
    struct cluster_node_v *n = view_lookup(m->about, CLUSTER_ID_LEN);
    if (n == NULL || (n->flags & (VIEW_NODE_FAIL | VIEW_NODE_MYSELF))) {
        return;
    }
    log_notice("FAIL message received from %.40s about %.40s", m->sender,
               m->about);
    n->flags |= VIEW_NODE_FAIL;
    n->fail_time = now_ms();
    n->flags &= ~VIEW_NODE_PFAIL;
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
}

static void
process_update(const struct cmsg *m, struct cluster_node_v *sender)
{
    if (sender == NULL) {
        return;
    }
    struct cluster_node_v *n = view_lookup(m->update_name, CLUSTER_ID_LEN);
    if (n == NULL || n->config_epoch >= m->update_epoch) {
        return;
    }
    if (view_node_is_replica(n)) {
        view_set_node_as_primary(n);
    }
    n->config_epoch = m->update_epoch;
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_FSYNC_CONFIG);
    update_slots_with(n, m->update_epoch, m->update_slots);
}

static bool
process_other(struct bus_link *l, const struct cmsg *m,
              struct cluster_node_v *sender)
{
    switch (m->type) {
    case CMSG_FAIL:
        process_fail(m, sender);
        break;
    case CMSG_PUBLISH:
        if (sender != NULL) {
            pubsub_publish((const char *)m->channel, m->channel_len,
                           (const char *)m->message, m->message_len);
        }
        break;
    case CMSG_AUTH_REQUEST:
        if (sender != NULL) {
            fops->auth_request(sender, m);
        }
        break;
    case CMSG_AUTH_ACK:
        if (sender != NULL) {
            fops->auth_ack(sender, m->current_epoch);
        }
        break;
    case CMSG_MFSTART:
        if (sender != NULL && sender->primary == cview.myself) {
            fops->mfstart(l, sender);
        }
        break;
    case CMSG_UPDATE:
        process_update(m, sender);
        break;
    default:    /* MODULE: no module listens; PUBLISHSHARD: no shard channels */
        break;
    }
    return true;
}

/* Is l our outbound link to a node in handshake (whose PONG names it)? */
static bool
answers_my_meet(const struct bus_link *l)
{
    const struct cluster_node_v *n = bus_link_node(l);
    return !bus_link_inbound(l) && n != NULL && view_node_in_handshake(n);
}

static const char *const status_text[] = {
    "ok", "short", "bad signature", "wrong version", "bad length",
    "bad extension"
};

bool
gossip_process(struct bus_link *l, const uint8_t *frame, size_t len)
{
    struct cmsg *m = &(struct cmsg){0};
    if (len >= 14) {
        bus_count_received((unsigned)frame[12] << 8 | frame[13]);
    }
    enum cmsg_status st = cmsg_decode(frame, len, m);
    if (st != CMSG_OK) {
        log_warning("Received an invalid %s cluster bus message of %zu "
                    "bytes (%s): ignored", cmsg_type_name(m->type), len,
                    status_text[st]);
        return true;
    }
    uint64_t epoch = 0;
    struct cluster_node_v *sender = sender_of(l, m);
    if (sender == cview.myself && !answers_my_meet(l)) {
        /* our own MEET or PING (CLUSTER MEET of our own address) is
         * answered, so the handshake ends as in Redis; nothing else of a
         * message in our name is taken: only a forgery would carry it */
        if (m->type == CMSG_PING || m->type == CMSG_MEET) {
            answer_ping(l, m, sender);
        }
        return !bus_link_closing(l);
    }
    if (sender != NULL) {
        sender->data_received = now_ms();
        if (!view_node_in_handshake(sender)) {
            epoch = take_epochs(sender, m);
        }
    }
    if (m->type == CMSG_PING || m->type == CMSG_MEET) {
        answer_ping(l, m, sender);
        if (bus_link_closing(l)) {      /* the PONG could not be queued */
            return false;
        }
    }
    if (m->type <= CMSG_MEET) {
        return process_config(l, m, sender, epoch);
    }
    return process_other(l, m, sender);
}

/* ---- the cron ---------------------------------------------------------------- */

/* A link for every node with an address; handshakes that took longer
 * than the node timeout (at least 1 s) dropped. false: n was deleted. */
static bool
reconnect(struct cluster_node_v *n, int64_t handshake_timeout, int64_t now)
{
    if (n->flags & (VIEW_NODE_MYSELF | VIEW_NODE_NOADDR)) {
        return true;
    }
    if (n->flags & VIEW_NODE_PFAIL) {
        cview.stats_pfail_nodes++;
    }
    if (view_node_in_handshake(n) && now - n->ctime > handshake_timeout) {
        bus_forget_node(n);
        view_node_delete(n);
        return false;
    }
    if (n->link == NULL && !bus_connect(n) && n->ping_sent == 0) {
        n->ping_sent = now;         /* failure detection still runs */
    }
    return true;
}

/* Every second, PING the node with the oldest PONG of five random ones. */
static void
ping_random_node(void)
{
    struct cluster_node_v *min = NULL;
    for (int j = 0; j < 5 && cview.nnodes > 0; j++) {
        struct cluster_node_v *n = cview.nodes[(size_t)rand() % cview.nnodes];
        if (n->link == NULL || n->ping_sent != 0 ||
            (n->flags & (VIEW_NODE_MYSELF | VIEW_NODE_HANDSHAKE))) {
            continue;
        }
        if (min == NULL || min->pong_received > n->pong_received) {
            min = n;
        }
    }
    if (min != NULL) {
        gossip_send_ping(min->link, CMSG_PING);
    }
}

/* One node's timeouts: a silent link reconnected, a PING when its PONG is
 * old, PFAIL when a PING went unanswered for the node timeout. true when
 * the state needs an update. */
static bool
check_node(struct cluster_node_v *n, int64_t now)
{
    int64_t timeout = gossip_node_timeout();
    int64_t ping_delay = now - n->ping_sent;
    int64_t data_delay = now - n->data_received;
    if (n->link != NULL && now - bus_link_ctime(n->link) > timeout &&
        n->ping_sent != 0 && ping_delay > timeout / 2 &&
        data_delay > timeout / 2) {
        bus_link_free(n->link);
    }
    if (n->link != NULL && n->ping_sent == 0 &&
        now - n->pong_received > timeout / 2) {
        gossip_send_ping(n->link, CMSG_PING);
        return false;
    }
    if (mf_running() && view_node_is_primary(cview.myself) &&
        n->primary == cview.myself && n->link != NULL) {
        gossip_send_ping(n->link, CMSG_PING);
        return false;
    }
    if (n->ping_sent == 0) {
        return false;
    }
    int64_t delay = ping_delay < data_delay ? ping_delay : data_delay;
    if (delay > timeout && !(n->flags & (VIEW_NODE_PFAIL | VIEW_NODE_FAIL))) {
        log_debug("*** NODE %.40s possibly failing", n->name);
        n->flags |= VIEW_NODE_PFAIL;
        return true;
    }
    return false;
}

/* ---- replica migration (an orphaned primary gets a replica) ---------------- */

#define REPLICA_MIGRATION_DELAY_MS 5000    /* CLUSTER_SLAVE_MIGRATION_DELAY */

static int
ok_replicas(const struct cluster_node_v *p)
{
    int ok = 0;
    for (int j = 0; j < p->nreplicas; j++) {
        if (!(p->replicas[j]->flags & (VIEW_NODE_FAIL | VIEW_NODE_PFAIL))) {
            ok++;
        }
    }
    return ok;
}

/* clusterHandleSlaveMigration: myself, a replica of a primary with more
 * than cluster-migration-barrier good replicas and the smallest name among
 * the replicas of the best-served primaries, moves to a primary with slots
 * left without replicas for 5 s (one that had some: MIGRATE_TO). */
static void
migrate_if_needed(int max_replicas)
{
    struct cluster_node_v *me = cview.myself, *target = NULL, *cand = me;
    if (cview.state != VIEW_STATE_OK || me->primary == NULL ||
        ok_replicas(me->primary) <= srv.conf.cluster_migration_barrier) {
        return;
    }
    for (size_t i = 0; i < cview.nnodes; i++) {
        struct cluster_node_v *n = cview.nodes[i];
        int ok = view_node_is_primary(n) ? view_count_non_failing_replicas(n) : 0;
        bool orphaned = view_node_is_primary(n) && !view_node_failed(n) &&
                        (n->flags & VIEW_NODE_MIGRATE_TO) && ok == 0;
        if (orphaned) {
            if (target == NULL && n->numslots > 0) {
                target = n;
            }
            if (n->orphaned_time == 0) {
                n->orphaned_time = now_ms();
            }
        } else {
            n->orphaned_time = 0;
        }
        for (int j = 0; ok == max_replicas && j < n->nreplicas; j++) {
            if (memcmp(n->replicas[j]->name, cand->name, CLUSTER_ID_LEN) < 0) {
                cand = n->replicas[j];
            }
        }
    }
    if (target != NULL && cand == me &&
        now_ms() - target->orphaned_time > REPLICA_MIGRATION_DELAY_MS) {
        log_warning("Migrating to orphaned master %.40s", target->name);
        become_replica_of(target);
    }
}

/* The cron's look at the primaries from a replica: are some orphaned, how
 * many good replicas has the best served one? */
static void
consider_migration(void)
{
    struct cluster_node_v *me = cview.myself;
    int orphaned = 0, max_replicas = 0, mine = 0;
    if (!view_node_is_replica(me) || !srv.conf.cluster_allow_replica_migration) {
        return;
    }
    for (size_t i = 0; i < cview.nnodes; i++) {
        struct cluster_node_v *n = cview.nodes[i];
        if ((n->flags & (VIEW_NODE_MYSELF | VIEW_NODE_NOADDR |
                         VIEW_NODE_HANDSHAKE)) ||
            !view_node_is_primary(n) || view_node_failed(n)) {
            continue;
        }
        int ok = view_count_non_failing_replicas(n);
        if (ok == 0 && n->numslots > 0 && (n->flags & VIEW_NODE_MIGRATE_TO)) {
            orphaned++;
        }
        max_replicas = ok > max_replicas ? ok : max_replicas;
        if (me->primary == n) {
            mine = ok;
        }
    }
    if (orphaned > 0 && max_replicas >= 2 && mine == max_replicas) {
        migrate_if_needed(max_replicas);
    }
}

void
gossip_cron(void)
{
    int64_t now = now_ms();
    int64_t handshake_timeout = gossip_node_timeout();
    bool update = false;
    if (!view_enabled()) {
        return;
    }
    cron_iteration++;
    if (handshake_timeout < 1000) {
        handshake_timeout = 1000;
    }
    cview.stats_pfail_nodes = 0;
    for (size_t i = 0; i < cview.nnodes;) {
        i += reconnect(cview.nodes[i], handshake_timeout, now) ? 1 : 0;
    }
    if (cron_iteration % 10 == 0) {
        ping_random_node();
    }
    for (size_t i = 0; i < cview.nnodes; i++) {
        struct cluster_node_v *n = cview.nodes[i];
        if (n->flags & (VIEW_NODE_MYSELF | VIEW_NODE_NOADDR |
                        VIEW_NODE_HANDSHAKE)) {
            continue;
        }
        update |= check_node(n, now_ms());
    }
    struct cluster_node_v *p = cview.myself->primary;
    if (view_node_is_replica(cview.myself) && p != NULL &&
        view_node_has_addr(p) && p->ip[0] != '\0' &&
        !repl_same_primary(p->ip, p->port)) {
        repl_set_primary(p->ip, p->port);
    }
    consider_migration();
    if (update || cview.state == VIEW_STATE_FAIL) {
        view_update_state(now, gossip_node_timeout(),
                          srv.conf.cluster_require_full_coverage);
    }
}

/* ---- clocks ---------------------------------------------------------------- */

static int64_t
rtt_of(const struct cluster_node_v *n)
{
    for (size_t i = 0; i < nrtts; i++) {
        if (memcmp(rtts[i].name, n->name, CLUSTER_ID_LEN) == 0) {
            return rtts[i].rtt_ms;
        }
    }
    return -1;
}

void
gossip_clock_info(struct textbuf *out)
{
    int64_t now = now_ms();
    int64_t worst = 0;
    size_t measured = 0;
    for (size_t i = 0; view_enabled() && i < cview.nnodes; i++) {
        const struct cluster_node_v *n = cview.nodes[i];
        if (n->clock_skew_time == 0 || n == cview.myself) {
            continue;
        }
        measured++;
        int64_t a = n->clock_skew_ms < 0 ? -n->clock_skew_ms : n->clock_skew_ms;
        worst = a > worst ? a : worst;
    }
    textbuf_printf(out, "cluster_clock_peers_measured:%zu\r\n", measured);
    textbuf_printf(out, "cluster_clock_max_abs_offset_ms:%lld\r\n",
                   (long long)worst);
    for (size_t i = 0; view_enabled() && i < cview.nnodes; i++) {
        const struct cluster_node_v *n = cview.nodes[i];
        if (n->clock_skew_time == 0 || n == cview.myself) {
            continue;
        }
        textbuf_printf(out, "cluster_clock_peer_%.40s:offset_ms=%lld,"
                       "rtt_ms=%lld,age_ms=%lld\r\n", n->name,
                       (long long)n->clock_skew_ms, (long long)rtt_of(n),
                       (long long)(now - n->clock_skew_time));
    }
}
