/*
 * failover.c - a replica taking its failed primary's place, as Redis
 * 7.0.15's clusterHandleSlaveFailover and its votes:
 *
 * - a replica whose primary is FAIL (and serves slots) waits 500 ms + a
 *   random 0-500 ms + 1 s per replica of its primary with a greater
 *   replication offset (its rank; recomputed until it asks), unless its
 *   data is older than repl-ping period + node timeout x
 *   cluster-replica-validity-factor (factor 0: any age);
 * - then it bumps currentEpoch and sends FAILOVER_AUTH_REQUEST to all;
 *   each primary with slots votes once per epoch (lastVoteEpoch), not
 *   within 2 x node timeout of a vote for the same primary's replicas,
 *   only if the primary is FAIL (or the request has FORCEACK) and no slot
 *   claimed is held under a greater configEpoch;
 * - votes from a majority of the primaries with slots (cluster size / 2
 *   + 1) before 2 x node timeout (at least 2 s) make it the primary: its
 *   configEpoch the election's, its primary's slots its own, replication
 *   stopped, a PONG to every node; another try after twice that time.
 *
 * CLUSTER FAILOVER (manual): the replica sends MFSTART; its primary
 * pauses writes for 10 s and sends PINGs flagged PAUSED with its offset;
 * once the replica has processed that offset it runs the election with
 * FORCEACK and no delay. FORCE skips the primary's agreement, TAKEOVER
 * the election too (configEpoch bumped without consensus). All within
 * 5 s (CLUSTER_MF_TIMEOUT), else abandoned.
 *
 * Promotion and demotion go through the replication wing
 * (repl_set_primary); a primary that learns its slots went to a node of
 * greater epoch becomes its replica in gossip.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/textbuf.h"
#include "server/clock.h"
#include "server/cluster/bus.h"
#include "server/cluster/bus_link.h"
#include "server/cluster/failover.h"
#include "server/cluster/view.h"
#include "server/log.h"
#include "server/repl/replication.h"
#include "server/server.h"

#define MF_TIMEOUT_MS 5000              /* CLUSTER_MF_TIMEOUT */
#define MF_PAUSE_MULT 2                 /* the primary pauses twice that */

static struct {
    int64_t auth_time;                  /* time of the last/next election */
    int auth_count;                     /* votes received */
    bool auth_sent;                     /* asked for votes */
    int auth_rank;
    uint64_t auth_epoch;                /* epoch of the current election */
    /* manual failover */
    int64_t mf_end;                     /* 0: none running */
    struct cluster_node_v *mf_replica;  /* primary: who asked */
    int64_t mf_primary_offset;          /* replica: -1 until told */
    bool mf_can_start;
} fo = { .mf_primary_offset = -1 };

static int64_t
now_ms(void)
{
    return clock_wall_us() / 1000;
}

bool
failover_manual_running(void)
{
    return fo.mf_end != 0;
}

void
failover_reset_manual(void)
{
    if (fo.mf_replica != NULL && srv.pause_end_ms != 0) {
        srv.pause_end_ms = 1;           /* conn_cron wakes the held ones */
    }
    fo.mf_end = 0;
    fo.mf_can_start = false;
    fo.mf_replica = NULL;
    fo.mf_primary_offset = -1;
}

void
failover_info(struct textbuf *out)
{
    if (fo.mf_end != 0) {
        textbuf_printf(out, "cluster_manual_failover_ms_left:%lld\r\n",
                       (long long)(fo.mf_end - now_ms()));
    }
}

/* ---- a primary's side ----------------------------------------------------- */

/* clusterSendFailoverAuthIfNeeded: the checks in Redis's order. */
static const char *
vote_denied(struct cluster_node_v *node, const struct cmsg *m)
{
    struct cluster_node_v *primary = node->primary;
    static char why[160];
    if (m->current_epoch < cview.current_epoch) {
        return "reqEpoch < curEpoch";
    }
    if (cview.last_vote_epoch == cview.current_epoch) {
        return "already voted for this epoch";
    }
    if (view_node_is_primary(node)) {
        return "it is a master node";
    }
    if (primary == NULL) {
        return "I don't know its master";
    }
    if (!view_node_failed(primary) && !(m->mflags[0] & CMSG_FLAG0_FORCEACK)) {
        return "its master is up";
    }
    if (now_ms() - primary->voted_time < gossip_node_timeout() * 2) {
        return "can't vote about this master yet";
    }
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (!cmsg_slot_test(m->myslots, j) || cview.slots[j] == NULL ||
            cview.slots[j]->config_epoch <= m->config_epoch) {
            continue;
        }
        snprintf(why, sizeof(why), "slot %u epoch (%llu) > reqEpoch (%llu)",
                 j, (unsigned long long)cview.slots[j]->config_epoch,
                 (unsigned long long)m->config_epoch);
        return why;
    }
    return NULL;
}

void
failover_auth_request(struct cluster_node_v *sender, const struct cmsg *m)
{
    struct cluster_node_v *me = cview.myself;
    if (view_node_is_replica(me) || me->numslots == 0) {
        return;
    }
    const char *why = vote_denied(sender, m);
    if (why != NULL) {
        log_warning("Failover auth denied to %.40s: %s", sender->name, why);
        return;
    }
    cview.last_vote_epoch = cview.current_epoch;
    sender->primary->voted_time = now_ms();
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_FSYNC_CONFIG);
    struct cmsg ack;
    gossip_build_header(&ack, CMSG_AUTH_ACK);
    bus_send(sender->link, &ack);
    log_warning("Failover auth granted to %.40s for epoch %llu",
                sender->name, (unsigned long long)cview.current_epoch);
}

void
failover_mfstart(struct bus_link *l, struct cluster_node_v *sender)
{
    int64_t now = now_ms();
    failover_reset_manual();
    fo.mf_end = now + MF_TIMEOUT_MS;
    fo.mf_replica = sender;
    int64_t end = clock_loop_ms() + MF_TIMEOUT_MS * MF_PAUSE_MULT;
    if (srv.pause_end_ms == 0) {
        srv.pause_all = false;
    }
    if (end > srv.pause_end_ms) {
        srv.pause_end_ms = end;
    }
    log_warning("Manual failover requested by replica %.40s.", sender->name);
    gossip_send_ping(l, CMSG_PING);
}

/* ---- a replica's side ------------------------------------------------------- */

void
failover_auth_ack(struct cluster_node_v *sender, uint64_t epoch)
{
    if (view_node_is_primary(sender) && sender->numslots > 0 &&
        epoch >= fo.auth_epoch) {
        fo.auth_count++;
        view_todo(VIEW_TODO_HANDLE_FAILOVER);
    }
}

void
failover_primary_paused(int64_t offset)
{
    if (fo.mf_end != 0 && fo.mf_primary_offset == -1) {
        fo.mf_primary_offset = offset;
        log_warning("Received replication offset for paused master manual "
                    "failover: %lld", (long long)offset);
    }
}

/* Replicas of my primary ahead of me (clusterGetSlaveRank). */
static int
my_rank(void)
{
    struct cluster_node_v *p = cview.myself->primary;
    int64_t mine = gossip_repl_offset();
    int rank = 0;
    for (int j = 0; p != NULL && j < p->nreplicas; j++) {
        struct cluster_node_v *r = p->replicas[j];
        if (r != cview.myself && !(r->flags & VIEW_NODE_NOFAILOVER) &&
            r->repl_offset > mine) {
            rank++;
        }
    }
    return rank;
}

/* clusterFailoverReplaceYourMaster: myself takes its primary's slots. */
static void
replace_primary(void)
{
    struct cluster_node_v *me = cview.myself, *old = me->primary;
    if (view_node_is_primary(me) || old == NULL) {
        return;
    }
    view_set_node_as_primary(me);
    repl_set_primary(NULL, 0);
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (view_node_has_slot(old, j)) {
            view_del_slot(j);
            view_add_slot(me, j);
        }
    }
    view_update_state(now_ms(), gossip_node_timeout(),
                      srv.conf.cluster_require_full_coverage);
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_FSYNC_CONFIG |
              VIEW_TODO_UPDATE_STATE);
    bus_broadcast_pong(BUS_TARGET_ALL);
    failover_reset_manual();
}

/* Not a replica that should (or may) run an election now. */
static bool
no_election(bool manual)
{
    struct cluster_node_v *me = cview.myself;
    return view_node_is_primary(me) || me->primary == NULL ||
           (!view_node_failed(me->primary) && !manual) ||
           (srv.conf.cluster_replica_no_failover && !manual) ||
           me->primary->numslots == 0;
}

static bool
data_too_old(void)
{
    int64_t timeout = gossip_node_timeout();
    int64_t age = repl_data_age_ms();
    if (age > timeout) {
        age -= timeout;
    }
    return srv.conf.cluster_replica_validity_factor != 0 &&
           age > srv.conf.repl_ping_replica_period * 1000 +
                     timeout * srv.conf.cluster_replica_validity_factor;
}

/* Schedule an election (the first step, or a retry). */
static void
schedule(void)
{
    fo.auth_time = now_ms() + 500 + rand() % 500;
    fo.auth_count = 0;
    fo.auth_sent = false;
    fo.auth_rank = my_rank();
    fo.auth_time += fo.auth_rank * 1000;
    if (fo.mf_end != 0) {
        fo.auth_time = now_ms();
        fo.auth_rank = 0;
        view_todo(VIEW_TODO_HANDLE_FAILOVER);
    }
    log_warning("Start of election delayed for %lld milliseconds (rank #%d, "
                "offset %lld).", (long long)(fo.auth_time - now_ms()),
                fo.auth_rank, (long long)gossip_repl_offset());
    bus_broadcast_pong(BUS_TARGET_LOCAL);
}

static void
ask_votes(void)
{
    struct cmsg m;
    cview.current_epoch++;
    fo.auth_epoch = cview.current_epoch;
    log_warning("Starting a failover election for epoch %llu.",
                (unsigned long long)cview.current_epoch);
    gossip_build_header(&m, CMSG_AUTH_REQUEST);
    if (fo.mf_end != 0) {
        m.mflags[0] |= CMSG_FLAG0_FORCEACK;
    }
    bus_broadcast(&m);
    fo.auth_sent = true;
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE |
              VIEW_TODO_FSYNC_CONFIG);
}

static void
election(void)
{
    int64_t now = now_ms();
    int64_t auth_age = now - fo.auth_time;
    int64_t auth_timeout = gossip_node_timeout() * 2;
    bool manual = fo.mf_end != 0 && fo.mf_can_start;
    if (auth_timeout < 2000) {
        auth_timeout = 2000;
    }
    if (no_election(manual) || (data_too_old() && !manual)) {
        return;
    }
    if (auth_age > auth_timeout * 2) {
        schedule();
        return;
    }
    if (!fo.auth_sent && fo.mf_end == 0) {
        int rank = my_rank();
        if (rank > fo.auth_rank) {
            fo.auth_time += (rank - fo.auth_rank) * 1000;
            fo.auth_rank = rank;
        }
    }
    if (now < fo.auth_time || auth_age > auth_timeout) {
        return;
    }
    if (!fo.auth_sent) {
        ask_votes();
        return;
    }
    if (fo.auth_count >= cview.size / 2 + 1) {
        log_warning("Failover election won: I'm the new master.");
        if (cview.myself->config_epoch < fo.auth_epoch) {
            cview.myself->config_epoch = fo.auth_epoch;
            log_warning("configEpoch set to %llu after successful failover",
                        (unsigned long long)fo.auth_epoch);
        }
        replace_primary();
    }
}

/* clusterHandleManualFailover: the primary's offset reached. */
static void
manual_step(void)
{
    if (fo.mf_end == 0 || fo.mf_can_start || fo.mf_primary_offset == -1) {
        return;
    }
    /* Redis waits for ==; past it (a replication PING the paused primary
     * sent after telling its offset) everything of the pause is applied */
    if (gossip_repl_offset() >= fo.mf_primary_offset) {
        fo.mf_can_start = true;
        log_warning("All master replication stream processed, manual "
                    "failover can start.");
        view_todo(VIEW_TODO_HANDLE_FAILOVER);
    }
}

void
failover_handle(void)
{
    if (!view_enabled()) {
        return;
    }
    manual_step();
    if (cview.todo & VIEW_TODO_HANDLE_FAILOVER) {
        cview.todo &= ~VIEW_TODO_HANDLE_FAILOVER;
        if (view_node_is_replica(cview.myself)) {
            election();
        }
    }
}

void
failover_cron(void)
{
    if (!view_enabled()) {
        return;
    }
    if (fo.mf_end != 0 && fo.mf_end < now_ms()) {
        log_warning("Manual failover timed out.");
        failover_reset_manual();
    }
    if (view_node_is_replica(cview.myself)) {
        manual_step();
        election();
    }
}

/* ---- CLUSTER FAILOVER ----------------------------------------------------- */

int
failover_manual(int mode, char *err, size_t errlen)
{
    struct cluster_node_v *me = cview.myself;
    if (view_node_is_primary(me)) {
        snprintf(err, errlen, "You should send CLUSTER FAILOVER to a replica");
        return -1;
    }
    if (me->primary == NULL) {
        snprintf(err, errlen, "I'm a replica but my master is unknown to me");
        return -1;
    }
    if (mode == FAILOVER_DEFAULT &&
        (view_node_failed(me->primary) || me->primary->link == NULL)) {
        snprintf(err, errlen, "Master is down or failed, please use CLUSTER "
                 "FAILOVER FORCE");
        return -1;
    }
    failover_reset_manual();
    fo.mf_end = now_ms() + MF_TIMEOUT_MS;
    if (mode == FAILOVER_TAKEOVER) {
        log_warning("Taking over the master (user request).");
        view_bump_epoch_without_consensus();
        replace_primary();
    } else if (mode == FAILOVER_FORCE) {
        log_warning("Forced failover user request accepted.");
        fo.mf_can_start = true;
    } else {
        struct cmsg m;
        log_warning("Manual failover user request accepted.");
        gossip_build_header(&m, CMSG_MFSTART);
        bus_send(me->primary->link, &m);
    }
    return 0;
}
