/*
 * view.h - this node's view of a Redis Cluster (cluster-enabled yes): the
 * nodes it knows by their 40-hex names, their flags, addresses and epochs,
 * which primary each replica follows, the owner of each of the 16384 hash
 * slots, the slots being migrated or imported, failure reports, the nodes
 * CLUSTER FORGET keeps out for a while, and the cluster's state.
 *
 * The semantics are Redis 7.0.15's clusterState and clusterNode (cluster.h,
 * cluster.c): the same flag bits (so the bus copies them to and from the
 * wire as they are), the same epochs, the same rules for adding and removing
 * slots, replicas and failure reports, and clusterUpdateState()'s rules for
 * ok/fail. The view is memory only and does no I/O: the bus (bus.c,
 * gossip.c, failover.c) changes it from the messages it receives, the
 * CLUSTER command from what a client asks, and nodes_file.c writes and
 * reads it as nodes.conf. What must happen after a change (save the file,
 * recompute the state) is asked for with view_todo() and done by
 * cluster_before_sleep() (cluster.c) before the loop sleeps, as Redis's
 * clusterBeforeSleep().
 *
 * Main thread only. Times are Unix milliseconds (clock_wall_ms-like) as
 * Redis's mstime().
 */
#ifndef CELLGATE_CLUSTER_VIEW_H
#define CELLGATE_CLUSTER_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/cluster/cluster_topo.h"    /* CLUSTER_SLOTS, CLUSTER_ID_LEN */

#define VIEW_IP_LEN 46                  /* NET_IP_STR_LEN: an IPv6 text + NUL */
#define VIEW_HOSTNAME_MAX 255           /* longest announced hostname */
#define VIEW_PORT_INCR 10000            /* bus port = client port + this */

/* Node flags: Redis's CLUSTER_NODE_* bits, the same values on the wire. */
#define VIEW_NODE_MASTER 1              /* a primary */
#define VIEW_NODE_SLAVE 2               /* a replica */
#define VIEW_NODE_PFAIL 4               /* not answering: this node thinks */
#define VIEW_NODE_FAIL 8                /* failing: a majority agreed */
#define VIEW_NODE_MYSELF 16             /* this node */
#define VIEW_NODE_HANDSHAKE 32          /* no first PONG yet (random name) */
#define VIEW_NODE_NOADDR 64             /* address unknown */
#define VIEW_NODE_MEET 128              /* send it MEET, not PING */
#define VIEW_NODE_MIGRATE_TO 256        /* a primary replicas may migrate to */
#define VIEW_NODE_NOFAILOVER 512        /* a replica that never fails over */

/* Redis's timing multipliers (cluster.h). */
#define VIEW_FAIL_REPORT_VALIDITY_MULT 2
#define VIEW_FAIL_UNDO_TIME_MULT 2
#define VIEW_BLACKLIST_TTL_MS 60000     /* CLUSTER FORGET keeps a node out */

/* What cluster_before_sleep() must do (Redis's CLUSTER_TODO_*). */
#define VIEW_TODO_HANDLE_FAILOVER (1u << 0)     /* read and cleared by failover */
#define VIEW_TODO_UPDATE_STATE (1u << 1)
#define VIEW_TODO_SAVE_CONFIG (1u << 2)
#define VIEW_TODO_FSYNC_CONFIG (1u << 3)

/* cluster state (CLUSTER INFO's cluster_state). */
#define VIEW_STATE_OK 0
#define VIEW_STATE_FAIL 1

struct cluster_node_v;

/* One report that node `sender` (a primary) believes the node failing. */
struct view_fail_report {
    struct cluster_node_v *sender;
    int64_t time;                       /* last time it said so */
};

struct cluster_node_v {
    int64_t ctime;                      /* when this struct was made */
    char name[CLUSTER_ID_LEN + 1];      /* 40 hex + NUL */
    int flags;                          /* VIEW_NODE_* */
    uint64_t config_epoch;              /* last configEpoch seen for it */
    uint8_t slots[CLUSTER_SLOTS / 8];   /* the slots it serves (bit per slot) */
    int numslots;
    int nreplicas;
    struct cluster_node_v **replicas;   /* its replicas, if a primary */
    struct cluster_node_v *primary;     /* whom it replicates; NULL may be
                                           a replica whose primary is not
                                           known yet */
    uint64_t last_in_ping_gossip;       /* bus: which ping last carried it */
    int64_t ping_sent;                  /* ms of the PING not answered yet, 0 */
    int64_t pong_received;
    int64_t data_received;
    int64_t fail_time;                  /* when FAIL was set */
    int64_t voted_time;                 /* last vote for one of its replicas */
    int64_t repl_offset_time;           /* when repl_offset was received */
    int64_t orphaned_time;              /* start of orphaned-primary state */
    int64_t repl_offset;                /* last known replication offset */
    char ip[VIEW_IP_LEN];               /* last known IP ("" unknown) */
    char hostname[VIEW_HOSTNAME_MAX + 1];   /* announced hostname, "" none */
    int port;                           /* clients' port (TLS or plain) */
    int pport;                          /* plaintext port when port is TLS */
    int cport;                          /* cluster bus port */
    void *link;                         /* bus.c: outbound link, or NULL */
    void *inbound_link;                 /* bus.c: accepted link, or NULL */
    struct view_fail_report *fail_reports;
    int nfail_reports;
    int fail_reports_cap;
    int64_t clock_skew_ms;              /* bus: its wall clock minus ours */
    int64_t clock_skew_time;            /* when measured; 0 never */
};

/* A node CLUSTER FORGET keeps from being added back by gossip. */
struct view_blacklisted {
    char name[CLUSTER_ID_LEN + 1];
    int64_t expire;                     /* ms */
};

struct cluster_view {
    struct cluster_node_v *myself;      /* NULL: cluster-enabled no */
    uint64_t current_epoch;
    int state;                          /* VIEW_STATE_OK / _FAIL */
    int size;                           /* primaries with at least one slot */
    struct cluster_node_v **nodes;      /* every known node, myself too */
    size_t nnodes;
    size_t nodes_cap;
    struct view_blacklisted *blacklist;
    size_t nblacklist;
    size_t blacklist_cap;
    struct cluster_node_v *migrating_to[CLUSTER_SLOTS];
    struct cluster_node_v *importing_from[CLUSTER_SLOTS];
    struct cluster_node_v *slots[CLUSTER_SLOTS];    /* owner, NULL none */
    /* A slot its owner stopped claiming in its pings (a move finished):
     * gossip must not send UPDATE for it (Redis's owner_not_claiming_slot). */
    uint8_t owner_not_claiming_slot[CLUSTER_SLOTS / 8];
    uint64_t last_vote_epoch;           /* epoch of the last vote granted */
    unsigned todo;                      /* VIEW_TODO_* for before sleep */
    int64_t stats_pfail_nodes;          /* nodes in PFAIL (with an address) */
    /* Called by view_node_delete() before a node is freed, so its links
     * go first (bus_forget_node, set by cluster.c: the view never calls
     * the bus). */
    void (*on_node_free)(struct cluster_node_v *n);
    /* clusterUpdateState's bookkeeping. */
    int64_t among_minority_time;
    int64_t first_call_time;
};

extern struct cluster_view cview;

/* Is cluster-enabled on (the view set up)? */
static inline bool
view_enabled(void)
{
    return cview.myself != NULL;
}

static inline bool
view_node_is_primary(const struct cluster_node_v *n)
{
    return (n->flags & VIEW_NODE_MASTER) != 0;
}

static inline bool
view_node_is_replica(const struct cluster_node_v *n)
{
    return (n->flags & VIEW_NODE_SLAVE) != 0;
}

static inline bool
view_node_in_handshake(const struct cluster_node_v *n)
{
    return (n->flags & VIEW_NODE_HANDSHAKE) != 0;
}

static inline bool
view_node_has_addr(const struct cluster_node_v *n)
{
    return (n->flags & VIEW_NODE_NOADDR) == 0;
}

static inline bool
view_node_timed_out(const struct cluster_node_v *n)
{
    return (n->flags & VIEW_NODE_PFAIL) != 0;
}

static inline bool
view_node_failed(const struct cluster_node_v *n)
{
    return (n->flags & VIEW_NODE_FAIL) != 0;
}

static inline bool
view_node_has_slot(const struct cluster_node_v *n, unsigned slot)
{
    return (n->slots[slot >> 3] >> (slot & 7)) & 1;
}

/* ---- the view as a whole --------------------------------------------- */

/* Start the view with myself alone: a primary without slots named name
 * (40 hex; NULL: a random name), currentEpoch 0, state fail. The node's
 * ports are the server's (cluster_announce_* applied by the caller).
 * Returns 0, or -1 without memory. */
int view_init(const char *name);

/* Free every node and empty the view (view_enabled() false after). */
void view_free(void);

/* A fresh random node name: 40 lower-case hex digits + NUL. */
void view_random_name(char out[CLUSTER_ID_LEN + 1]);

/* Ask cluster_before_sleep() for VIEW_TODO_* work. */
static inline void
view_todo(unsigned flags)
{
    cview.todo |= flags;
}

/* ---- nodes ------------------------------------------------------------ */

/* A new node, not yet in the view: name NULL gives a random one (and the
 * caller usually sets VIEW_NODE_HANDSHAKE). NULL without memory. */
struct cluster_node_v *view_node_create(const char *name, int flags);

/* Put a created node in the view. 0, or -1 without memory (n not added,
 * still the caller's). */
int view_node_add(struct cluster_node_v *n);

/* The node named name (len bytes; a name of another length finds none),
 * or NULL. */
struct cluster_node_v *view_lookup(const char *name, size_t len);

/* Remove n from the view and free it, as Redis's clusterDelNode(): its
 * slots become unowned, it is no longer migrating/importing any slot, the
 * failure reports it sent are dropped, it leaves its primary's replicas,
 * its replicas lose their primary, and on_node_free frees its links. n must
 * not be myself. */
void view_node_delete(struct cluster_node_v *n);

/* A handshake node got its real name (from the first PONG). */
void view_node_rename(struct cluster_node_v *n, const char *newname);

/* Is a node with that address in handshake already? */
bool view_handshake_in_progress(const char *ip, int port, int cport);

/* CLUSTER MEET: add a HANDSHAKE|MEET node with a random name for ip (text
 * as given, normalised to the canonical form), port and cport. Returns 0;
 * -1 with errno EINVAL for a bad address or port, EAGAIN when that address
 * is in handshake already (Redis answers OK then too), ENOMEM. */
int view_meet(const char *ip, int port, int cport);

/* Set n's hostname ("" clears it); longer than VIEW_HOSTNAME_MAX is cut. */
void view_node_set_hostname(struct cluster_node_v *n, const char *hostname,
                            size_t len);

/* ---- primaries and replicas ------------------------------------------- */

/* Add replica to primary's replicas: 0, or -1 if it was there already or
 * without memory. */
int view_node_add_replica(struct cluster_node_v *primary,
                          struct cluster_node_v *replica);

/* Remove replica from primary's list: 0, or -1 if it was not in it. */
int view_node_remove_replica(struct cluster_node_v *primary,
                             struct cluster_node_v *replica);

/* n becomes a primary (Redis's clusterSetNodeAsMaster): leaves its
 * primary's replicas, flags MASTER, not SLAVE; MIGRATE_TO set on the old
 * primary when it has no replica left. */
void view_set_node_as_primary(struct cluster_node_v *n);

/* myself replicates primary from now on (clusterSetMaster): myself drops
 * its slots and migrating/importing states if it was a primary; the
 * caller points replication at it (cluster.c). */
void view_set_my_primary(struct cluster_node_v *primary);

/* Replicas of n not flagged FAIL. */
int view_count_non_failing_replicas(const struct cluster_node_v *n);

/* ---- slots ------------------------------------------------------------ */

/* Give slot to n: 0, or -1 if the slot has an owner already. */
int view_add_slot(struct cluster_node_v *n, unsigned slot);

/* Slot loses its owner (its migrating/importing state stays, as Redis's
 * clusterDelSlot): 0, or -1 if it had none. */
int view_del_slot(unsigned slot);

/* Every slot of n unowned; how many there were. */
int view_del_node_slots(struct cluster_node_v *n);

/* Set or clear n's bit for slot without touching cview.slots (the bus
 * builds a claimed bitmap this way). Returns the old bit. */
bool view_node_set_slot_bit(struct cluster_node_v *n, unsigned slot);
bool view_node_clear_slot_bit(struct cluster_node_v *n, unsigned slot);

/* No slot migrating or importing any more (clusterCloseAllSlots). */
void view_close_all_slots(void);

/* Slots with an owner. */
unsigned view_slots_assigned(void);

/* Next run of consecutive slots owned by n (n NULL: by anyone, the run
 * one owner's): start with *slot = 0; false when none is left. */
bool view_next_range(const struct cluster_node_v *n, unsigned *slot,
                     unsigned *first, unsigned *last);

/* ---- failure reports (PFAIL -> FAIL) ------------------------------------ */

/* sender says failing is failing: a new report (true) or an update of its
 * time (false). Without memory the report is dropped (false). */
bool view_fail_report_add(struct cluster_node_v *failing,
                          struct cluster_node_v *sender, int64_t now);

/* sender no longer says so: true if a report was removed. */
bool view_fail_report_remove(struct cluster_node_v *failing,
                             const struct cluster_node_v *sender);

/* Valid reports about n after dropping those older than node timeout x
 * VIEW_FAIL_REPORT_VALIDITY_MULT. */
int view_fail_report_count(struct cluster_node_v *n, int64_t now,
                           int64_t node_timeout);

/* ---- epochs ------------------------------------------------------------ */

/* The greatest configEpoch of any node, and currentEpoch if greater. */
uint64_t view_max_epoch(void);

/* clusterBumpConfigEpochWithoutConsensus: if myself's configEpoch is 0 or
 * not the greatest, take currentEpoch + 1 as both. Returns true when it
 * changed (file saved and fsynced before sleep). */
bool view_bump_epoch_without_consensus(void);

/* clusterHandleConfigEpochCollision: sender (a primary) has myself's
 * configEpoch and a smaller name, so myself takes a new one. */
void view_handle_epoch_collision(const struct cluster_node_v *sender);

/* ---- the state ------------------------------------------------------- */

/* clusterUpdateState(): ok/fail from slot coverage (require_full_coverage)
 * and whether myself is in the majority partition; size recomputed. A
 * primary turning ok waits Redis's rejoin delay first. node_timeout, now
 * in ms. */
void view_update_state(int64_t now, int64_t node_timeout,
                       bool require_full_coverage);

/* ---- FORGET's blacklist ----------------------------------------------- */

/* Keep name out for VIEW_BLACKLIST_TTL_MS from now. */
void view_blacklist_add(const char *name, int64_t now);

/* Is name kept out (expired entries are dropped on the way)? */
bool view_blacklist_exists(const char *name, size_t len, int64_t now);

/* ---- reset ------------------------------------------------------------ */

/* CLUSTER RESET: every node but myself forgotten, myself a primary without
 * slots, no migrating/importing; hard: also currentEpoch, configEpoch and
 * lastVoteEpoch 0 and myself renamed at random. The caller stops
 * replication first if myself was a replica. */
void view_reset(bool hard);

#endif
