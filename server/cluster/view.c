/*
 * view.c - this node's view of a Redis Cluster: nodes, slots, epochs,
 * failure reports, FORGET's blacklist and the cluster's state, with Redis
 * 7.0.15's rules (see view.h).
 *
 * Nodes live in one array of pointers in the order they became known;
 * lookups by name walk it. A cluster has at most about a thousand nodes and
 * names are looked up per bus message, not per client command, so a hash
 * table would buy nothing measurable and cost a second owner of the
 * nodes. Routing reads cview.slots[] directly.
 *
 * The view never calls the bus: when a node goes, on_node_free (the bus's
 * bus_forget_node, set by cluster.c) frees its links first.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/mem.h"
#include "server/clock.h"
#include "server/cluster/view.h"
#include "server/log.h"
#include "server/server.h"

#define WRITABLE_DELAY_MS 2000          /* a restarted primary waits this */
#define MAX_REJOIN_DELAY_MS 5000
#define MIN_REJOIN_DELAY_MS 500

struct cluster_view cview;

static int64_t
now_ms(void)
{
    return clock_wall_us() / 1000;
}

void
view_random_name(char out[CLUSTER_ID_LEN + 1])
{
    server_random_id(out);
}

/* ---- nodes ------------------------------------------------------------ */

struct cluster_node_v *
view_node_create(const char *name, int flags)
{
    struct cluster_node_v *n = mem_calloc(1, sizeof(*n));
    if (n == NULL) {
        return NULL;
    }
    if (name != NULL) {
        memcpy(n->name, name, CLUSTER_ID_LEN);
        n->name[CLUSTER_ID_LEN] = '\0';
    } else {
        view_random_name(n->name);
    }
    n->ctime = now_ms();
    n->flags = flags;
    return n;
}

int
view_node_add(struct cluster_node_v *n)
{
    if (cview.nnodes == cview.nodes_cap) {
        size_t cap = cview.nodes_cap == 0 ? 8 : cview.nodes_cap * 2;
        void *p = mem_realloc(cview.nodes, cap * sizeof(*cview.nodes));
        if (p == NULL) {
            return -1;
        }
        cview.nodes = p;
        cview.nodes_cap = cap;
    }
    cview.nodes[cview.nnodes++] = n;
    return 0;
}

/* Redis's verifyClusterNodeId(): 40 characters of [a-z0-9]. */
static bool
valid_name(const char *name, size_t len)
{
    if (len != CLUSTER_ID_LEN) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
            return false;
        }
    }
    return true;
}

struct cluster_node_v *
view_lookup(const char *name, size_t len)
{
    if (!valid_name(name, len)) {
        return NULL;
    }
    for (size_t i = 0; i < cview.nnodes; i++) {
        if (memcmp(cview.nodes[i]->name, name, CLUSTER_ID_LEN) == 0) {
            return cview.nodes[i];
        }
    }
    return NULL;
}

static void
unlist(struct cluster_node_v *n)
{
    for (size_t i = 0; i < cview.nnodes; i++) {
        if (cview.nodes[i] == n) {
            memmove(cview.nodes + i, cview.nodes + i + 1,
                    (cview.nnodes - i - 1) * sizeof(*cview.nodes));
            cview.nnodes--;
            return;
        }
    }
}

/* The struct itself and what it owns; the links are the bus's. */
static void
free_node(struct cluster_node_v *n)
{
    for (int j = 0; j < n->nreplicas; j++) {
        n->replicas[j]->primary = NULL;
    }
    if (view_node_is_replica(n) && n->primary != NULL) {
        view_node_remove_replica(n->primary, n);
    }
    unlist(n);
    if (cview.on_node_free != NULL) {
        cview.on_node_free(n);
    }
    mem_free(n->fail_reports);
    mem_free(n->replicas);
    mem_free(n);
}

void
view_node_delete(struct cluster_node_v *n)
{
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (cview.importing_from[j] == n) {
            cview.importing_from[j] = NULL;
        }
        if (cview.migrating_to[j] == n) {
            cview.migrating_to[j] = NULL;
        }
        if (cview.slots[j] == n) {
            view_del_slot(j);
        }
    }
    for (size_t i = 0; i < cview.nnodes; i++) {
        if (cview.nodes[i] != n) {
            view_fail_report_remove(cview.nodes[i], n);
        }
    }
    free_node(n);
}

void
view_node_rename(struct cluster_node_v *n, const char *newname)
{
    log_debug("Renaming node %.40s into %.40s", n->name, newname);
    memcpy(n->name, newname, CLUSTER_ID_LEN);
    n->name[CLUSTER_ID_LEN] = '\0';
}

bool
view_handshake_in_progress(const char *ip, int port, int cport)
{
    for (size_t i = 0; i < cview.nnodes; i++) {
        const struct cluster_node_v *n = cview.nodes[i];
        if (view_node_in_handshake(n) && strcasecmp(n->ip, ip) == 0 &&
            n->port == port && n->cport == cport) {
            return true;
        }
    }
    return false;
}

/* ip in its canonical text (inet_ntop of what inet_pton read), or false. */
static bool
normalize_ip(const char *ip, char out[VIEW_IP_LEN])
{
    unsigned char addr[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, ip, addr) == 1) {
        return inet_ntop(AF_INET, addr, out, VIEW_IP_LEN) != NULL;
    }
    if (inet_pton(AF_INET6, ip, addr) == 1) {
        return inet_ntop(AF_INET6, addr, out, VIEW_IP_LEN) != NULL;
    }
    return false;
}

int
view_meet(const char *ip, int port, int cport)
{
    char norm[VIEW_IP_LEN];
    if (!normalize_ip(ip, norm) || port <= 0 || port > 65535 || cport <= 0 ||
        cport > 65535) {
        errno = EINVAL;
        return -1;
    }
    if (view_handshake_in_progress(norm, port, cport)) {
        errno = EAGAIN;
        return -1;
    }
    struct cluster_node_v *n =
        view_node_create(NULL, VIEW_NODE_HANDSHAKE | VIEW_NODE_MEET);
    if (n == NULL || view_node_add(n) != 0) {
        mem_free(n);
        errno = ENOMEM;
        return -1;
    }
    memcpy(n->ip, norm, sizeof(n->ip));
    n->port = port;
    n->cport = cport;
    return 0;
}

void
view_node_set_hostname(struct cluster_node_v *n, const char *hostname,
                       size_t len)
{
    if (len > VIEW_HOSTNAME_MAX) {
        len = VIEW_HOSTNAME_MAX;
    }
    memcpy(n->hostname, hostname, len);
    n->hostname[len] = '\0';
}

/* ---- primaries and replicas ------------------------------------------- */

int
view_node_add_replica(struct cluster_node_v *primary,
                      struct cluster_node_v *replica)
{
    for (int j = 0; j < primary->nreplicas; j++) {
        if (primary->replicas[j] == replica) {
            return -1;
        }
    }
    void *p = mem_realloc(primary->replicas,
                          (size_t)(primary->nreplicas + 1) *
                          sizeof(*primary->replicas));
    if (p == NULL) {
        return -1;
    }
    primary->replicas = p;
    primary->replicas[primary->nreplicas++] = replica;
    primary->flags |= VIEW_NODE_MIGRATE_TO;
    return 0;
}

int
view_node_remove_replica(struct cluster_node_v *primary,
                         struct cluster_node_v *replica)
{
    for (int j = 0; j < primary->nreplicas; j++) {
        if (primary->replicas[j] == replica) {
            memmove(primary->replicas + j, primary->replicas + j + 1,
                    (size_t)(primary->nreplicas - j - 1) *
                    sizeof(*primary->replicas));
            if (--primary->nreplicas == 0) {
                primary->flags &= ~VIEW_NODE_MIGRATE_TO;
            }
            return 0;
        }
    }
    return -1;
}

void
view_set_node_as_primary(struct cluster_node_v *n)
{
    if (view_node_is_primary(n)) {
        return;
    }
    if (n->primary != NULL) {
        view_node_remove_replica(n->primary, n);
        if (n != cview.myself) {
            n->flags |= VIEW_NODE_MIGRATE_TO;
        }
    }
    n->flags &= ~VIEW_NODE_SLAVE;
    n->flags |= VIEW_NODE_MASTER;
    n->primary = NULL;
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE);
}

void
view_set_my_primary(struct cluster_node_v *primary)
{
    struct cluster_node_v *me = cview.myself;
    if (view_node_is_primary(me)) {
        me->flags &= ~(VIEW_NODE_MASTER | VIEW_NODE_MIGRATE_TO);
        me->flags |= VIEW_NODE_SLAVE;
        view_close_all_slots();
    } else if (me->primary != NULL) {
        view_node_remove_replica(me->primary, me);
    }
    me->primary = primary;
    view_node_add_replica(primary, me);
}

int
view_count_non_failing_replicas(const struct cluster_node_v *n)
{
    int ok = 0;
    for (int j = 0; j < n->nreplicas; j++) {
        ok += !view_node_failed(n->replicas[j]);
    }
    return ok;
}

/* ---- slots ------------------------------------------------------------ */

/* Does any primary have a replica? (clusterMastersHaveSlaves) */
static bool
primaries_have_replicas(void)
{
    for (size_t i = 0; i < cview.nnodes; i++) {
        const struct cluster_node_v *n = cview.nodes[i];
        if (view_node_is_primary(n) && n->nreplicas > 0) {
            return true;
        }
    }
    return false;
}

bool
view_node_set_slot_bit(struct cluster_node_v *n, unsigned slot)
{
    bool old = view_node_has_slot(n, slot);
    n->slots[slot >> 3] |= (uint8_t)(1u << (slot & 7));
    if (!old) {
        /* A primary with its first slot is a target of replica migration
         * once some other primary has replicas (Redis's issue 3043). */
        if (++n->numslots == 1 && primaries_have_replicas()) {
            n->flags |= VIEW_NODE_MIGRATE_TO;
        }
    }
    return old;
}

bool
view_node_clear_slot_bit(struct cluster_node_v *n, unsigned slot)
{
    bool old = view_node_has_slot(n, slot);
    n->slots[slot >> 3] &= (uint8_t)~(1u << (slot & 7));
    if (old) {
        n->numslots--;
    }
    return old;
}

int
view_add_slot(struct cluster_node_v *n, unsigned slot)
{
    if (cview.slots[slot] != NULL) {
        return -1;
    }
    view_node_set_slot_bit(n, slot);
    cview.slots[slot] = n;
    return 0;
}

int
view_del_slot(unsigned slot)
{
    struct cluster_node_v *n = cview.slots[slot];
    if (n == NULL) {
        return -1;
    }
    view_node_clear_slot_bit(n, slot);
    cview.slots[slot] = NULL;
    return 0;
}

int
view_del_node_slots(struct cluster_node_v *n)
{
    int deleted = 0;
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (view_node_has_slot(n, j)) {
            view_del_slot(j);
            deleted++;
        }
    }
    return deleted;
}

void
view_close_all_slots(void)
{
    memset(cview.migrating_to, 0, sizeof(cview.migrating_to));
    memset(cview.importing_from, 0, sizeof(cview.importing_from));
}

unsigned
view_slots_assigned(void)
{
    unsigned n = 0;
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        n += cview.slots[j] != NULL;
    }
    return n;
}

bool
view_next_range(const struct cluster_node_v *n, unsigned *slot,
                unsigned *first, unsigned *last)
{
    unsigned j = *slot;
    while (j < CLUSTER_SLOTS &&
           (n != NULL ? !view_node_has_slot(n, j) : cview.slots[j] == NULL)) {
        j++;
    }
    if (j == CLUSTER_SLOTS) {
        *slot = j;
        return false;
    }
    *first = j;
    if (n != NULL) {
        while (j + 1 < CLUSTER_SLOTS && view_node_has_slot(n, j + 1)) {
            j++;
        }
    } else {
        while (j + 1 < CLUSTER_SLOTS && cview.slots[j + 1] == cview.slots[j]) {
            j++;
        }
    }
    *last = j;
    *slot = j + 1;
    return true;
}

/* ---- failure reports -------------------------------------------------- */

bool
view_fail_report_add(struct cluster_node_v *failing,
                     struct cluster_node_v *sender, int64_t now)
{
    for (int i = 0; i < failing->nfail_reports; i++) {
        if (failing->fail_reports[i].sender == sender) {
            failing->fail_reports[i].time = now;
            return false;
        }
    }
    if (failing->nfail_reports == failing->fail_reports_cap) {
        int cap = failing->fail_reports_cap == 0 ? 4
                  : failing->fail_reports_cap * 2;
        void *p = mem_realloc(failing->fail_reports,
                              (size_t)cap * sizeof(*failing->fail_reports));
        if (p == NULL) {
            return false;
        }
        failing->fail_reports = p;
        failing->fail_reports_cap = cap;
    }
    failing->fail_reports[failing->nfail_reports].sender = sender;
    failing->fail_reports[failing->nfail_reports].time = now;
    failing->nfail_reports++;
    return true;
}

static void
remove_report(struct cluster_node_v *n, int i)
{
    memmove(n->fail_reports + i, n->fail_reports + i + 1,
            (size_t)(n->nfail_reports - i - 1) * sizeof(*n->fail_reports));
    n->nfail_reports--;
}

bool
view_fail_report_remove(struct cluster_node_v *failing,
                        const struct cluster_node_v *sender)
{
    for (int i = 0; i < failing->nfail_reports; i++) {
        if (failing->fail_reports[i].sender == sender) {
            remove_report(failing, i);
            return true;
        }
    }
    return false;
}

int
view_fail_report_count(struct cluster_node_v *n, int64_t now,
                       int64_t node_timeout)
{
    int64_t maxtime = node_timeout * VIEW_FAIL_REPORT_VALIDITY_MULT;
    for (int i = 0; i < n->nfail_reports;) {
        if (now - n->fail_reports[i].time > maxtime) {
            remove_report(n, i);
        } else {
            i++;
        }
    }
    return n->nfail_reports;
}

/* ---- epochs ------------------------------------------------------------ */

uint64_t
view_max_epoch(void)
{
    uint64_t max = 0;
    for (size_t i = 0; i < cview.nnodes; i++) {
        if (cview.nodes[i]->config_epoch > max) {
            max = cview.nodes[i]->config_epoch;
        }
    }
    return max > cview.current_epoch ? max : cview.current_epoch;
}

bool
view_bump_epoch_without_consensus(void)
{
    uint64_t max = view_max_epoch();
    struct cluster_node_v *me = cview.myself;
    if (me->config_epoch != 0 && me->config_epoch == max) {
        return false;
    }
    cview.current_epoch++;
    me->config_epoch = cview.current_epoch;
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_FSYNC_CONFIG);
    log_warning("New configEpoch set to %llu",
                (unsigned long long)me->config_epoch);
    return true;
}

void
view_handle_epoch_collision(const struct cluster_node_v *sender)
{
    struct cluster_node_v *me = cview.myself;
    if (sender->config_epoch != me->config_epoch ||
        !view_node_is_primary(sender) || !view_node_is_primary(me)) {
        return;
    }
    /* The node with the greater name keeps its epoch. */
    if (memcmp(sender->name, me->name, CLUSTER_ID_LEN) <= 0) {
        return;
    }
    cview.current_epoch++;
    me->config_epoch = cview.current_epoch;
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_FSYNC_CONFIG);
    log_verbose("WARNING: configEpoch collision with node %.40s. "
                "configEpoch set to %llu", sender->name,
                (unsigned long long)me->config_epoch);
}

/* ---- the state ------------------------------------------------------- */

/* The state slot coverage and reachable primaries give; size updated. */
static int
computed_state(int64_t now, bool require_full_coverage)
{
    int state = VIEW_STATE_OK;
    int reachable = 0;
    if (require_full_coverage) {
        for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
            if (cview.slots[j] == NULL || view_node_failed(cview.slots[j])) {
                state = VIEW_STATE_FAIL;
                break;
            }
        }
    }
    cview.size = 0;
    for (size_t i = 0; i < cview.nnodes; i++) {
        const struct cluster_node_v *n = cview.nodes[i];
        if (view_node_is_primary(n) && n->numslots > 0) {
            cview.size++;
            reachable += (n->flags & (VIEW_NODE_FAIL | VIEW_NODE_PFAIL)) == 0;
        }
    }
    if (reachable < cview.size / 2 + 1) {
        state = VIEW_STATE_FAIL;            /* a minority partition */
        cview.among_minority_time = now;
    }
    return state;
}

void
view_update_state(int64_t now, int64_t node_timeout,
                  bool require_full_coverage)
{
    bool primary = view_node_is_primary(cview.myself);
    cview.todo &= ~VIEW_TODO_UPDATE_STATE;
    /* A restarted primary gives the cluster time to reconfigure it before
     * it accepts writes (counted from the first call, not the start, so
     * loading the data does not count). */
    if (cview.first_call_time == 0) {
        cview.first_call_time = now;
    }
    if (primary && cview.state == VIEW_STATE_FAIL &&
        now - cview.first_call_time < WRITABLE_DELAY_MS) {
        return;
    }
    int state = computed_state(now, require_full_coverage);
    if (state == cview.state) {
        return;
    }
    int64_t rejoin = node_timeout;
    if (rejoin > MAX_REJOIN_DELAY_MS) {
        rejoin = MAX_REJOIN_DELAY_MS;
    }
    if (rejoin < MIN_REJOIN_DELAY_MS) {
        rejoin = MIN_REJOIN_DELAY_MS;
    }
    if (state == VIEW_STATE_OK && primary &&
        now - cview.among_minority_time < rejoin) {
        return;
    }
    log_warning("Cluster state changed: %s",
                state == VIEW_STATE_OK ? "ok" : "fail");
    cview.state = state;
}

/* ---- FORGET's blacklist ----------------------------------------------- */

static void
blacklist_cleanup(int64_t now)
{
    for (size_t i = 0; i < cview.nblacklist;) {
        if (cview.blacklist[i].expire < now) {
            cview.blacklist[i] = cview.blacklist[--cview.nblacklist];
        } else {
            i++;
        }
    }
}

static struct view_blacklisted *
blacklist_find(const char *name, size_t len)
{
    if (len != CLUSTER_ID_LEN) {
        return NULL;
    }
    for (size_t i = 0; i < cview.nblacklist; i++) {
        if (memcmp(cview.blacklist[i].name, name, CLUSTER_ID_LEN) == 0) {
            return &cview.blacklist[i];
        }
    }
    return NULL;
}

void
view_blacklist_add(const char *name, int64_t now)
{
    blacklist_cleanup(now);
    struct view_blacklisted *b = blacklist_find(name, CLUSTER_ID_LEN);
    if (b == NULL) {
        if (cview.nblacklist == cview.blacklist_cap) {
            size_t cap = cview.blacklist_cap == 0 ? 4 : cview.blacklist_cap * 2;
            void *p = mem_realloc(cview.blacklist, cap * sizeof(*cview.blacklist));
            if (p == NULL) {
                return;     /* gossip may bring it back: FORGET again */
            }
            cview.blacklist = p;
            cview.blacklist_cap = cap;
        }
        b = &cview.blacklist[cview.nblacklist++];
        memcpy(b->name, name, CLUSTER_ID_LEN);
        b->name[CLUSTER_ID_LEN] = '\0';
    }
    b->expire = now + VIEW_BLACKLIST_TTL_MS;
}

bool
view_blacklist_exists(const char *name, size_t len, int64_t now)
{
    blacklist_cleanup(now);
    return blacklist_find(name, len) != NULL;
}

/* ---- the view as a whole --------------------------------------------- */

int
view_init(const char *name)
{
    view_free();
    struct cluster_node_v *me =
        view_node_create(name, VIEW_NODE_MYSELF | VIEW_NODE_MASTER);
    if (me == NULL || view_node_add(me) != 0) {
        mem_free(me);
        return -1;
    }
    cview.myself = me;
    cview.state = VIEW_STATE_FAIL;
    return 0;
}

void
view_free(void)
{
    while (cview.nnodes > 0) {
        struct cluster_node_v *n = cview.nodes[cview.nnodes - 1];
        /* Pointers between nodes first: free_node() walks them. */
        n->nreplicas = 0;
        n->primary = NULL;
        free_node(n);
    }
    void (*hook)(struct cluster_node_v *) = cview.on_node_free;
    mem_free(cview.nodes);
    mem_free(cview.blacklist);
    memset(&cview, 0, sizeof(cview));
    cview.on_node_free = hook;
    cview.state = VIEW_STATE_FAIL;      /* until the first update says ok */
}

void
view_reset(bool hard)
{
    struct cluster_node_v *me = cview.myself;
    if (view_node_is_replica(me)) {
        view_set_node_as_primary(me);
    }
    view_close_all_slots();
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        view_del_slot(j);
    }
    for (size_t i = cview.nnodes; i-- > 0;) {
        if (i < cview.nnodes && cview.nodes[i] != me) {
            view_node_delete(cview.nodes[i]);
        }
    }
    if (hard) {
        cview.current_epoch = 0;
        cview.last_vote_epoch = 0;
        me->config_epoch = 0;
        log_warning("configEpoch set to 0 via CLUSTER RESET HARD");
        view_random_name(me->name);
        log_notice("Node hard reset, now I'm %.40s", me->name);
    }
    view_todo(VIEW_TODO_SAVE_CONFIG | VIEW_TODO_UPDATE_STATE |
              VIEW_TODO_FSYNC_CONFIG);
}
