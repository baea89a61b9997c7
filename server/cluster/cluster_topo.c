/*
 * cluster_topo.c - slot ownership of a static cluster (see cluster_topo.h).
 *
 * The owner table is one uint16_t per slot (32 KiB), so routing a key is a
 * CRC16 (lib/keyslot.h) and one array read. A topology is built whole and validated before
 * anyone uses it, so a reload that fails leaves the running one alone.
 */
#include "server/cluster/cluster_topo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/num.h"
#include "lib/textbuf.h"

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    if (why != NULL && whylen > 0) {
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

struct cluster_topo *
cluster_topo_create(void)
{
    struct cluster_topo *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < CLUSTER_SLOTS; i++) {
        t->owner[i] = CLUSTER_NO_NODE;
    }
    return t;
}

void
cluster_topo_free(struct cluster_topo *t)
{
    if (t != NULL) {
        free(t->nodes);
        free(t);
    }
}

/* A decimal in [0, max], digits only, no leading zero; false otherwise. */
static bool
parse_uint(const char *s, size_t len, unsigned max, unsigned *out)
{
    int64_t v;
    if (!num_parse_i64(s, len, &v) || v < 0 || v > (int64_t)max) {
        return false;
    }
    *out = (unsigned)v;
    return true;
}

/* Node ids are 40 lower-case hex digits, as Redis prints them. */
static bool
valid_id(const char *id)
{
    size_t n = strlen(id);
    if (n != CLUSTER_ID_LEN) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) {
            return false;
        }
    }
    return true;
}

/* host:port (the host an IPv4 address, an IPv6 address without brackets
 * or a DNS name: the port follows the last ':'). */
static int
parse_address(const char *addr, struct cluster_node *n, char *why,
              size_t whylen)
{
    const char *colon = strrchr(addr, ':');
    size_t hlen = colon != NULL ? (size_t)(colon - addr) : 0;
    if (colon == NULL || hlen == 0 || hlen > CLUSTER_HOST_MAX ||
        !parse_uint(colon + 1, strlen(colon + 1), 65535, &n->port) ||
        n->port == 0) {
        return fail(why, whylen,
                    "cluster-node address '%s' must be host:port with a "
                    "port from 1 to 65535", addr);
    }
    memcpy(n->host, addr, hlen);
    n->host[hlen] = '\0';
    return 0;
}

/* "<first>-<last>" or "<slot>". */
static int
parse_range(const char *w, unsigned *first, unsigned *last, char *why,
            size_t whylen)
{
    const char *dash = strchr(w, '-');
    bool ok;
    if (dash == NULL) {
        ok = parse_uint(w, strlen(w), CLUSTER_SLOTS - 1, first);
        *last = *first;
    } else {
        ok = parse_uint(w, (size_t)(dash - w), CLUSTER_SLOTS - 1, first) &&
             parse_uint(dash + 1, strlen(dash + 1), CLUSTER_SLOTS - 1, last);
    }
    if (!ok) {
        return fail(why, whylen,
                    "cluster-node slot range '%s' must be <slot> or "
                    "<first>-<last> with slots from 0 to %d", w,
                    CLUSTER_SLOTS - 1);
    }
    if (*first > *last) {
        return fail(why, whylen, "cluster-node slot range '%s' ends before "
                    "it starts", w);
    }
    return 0;
}

static int
check_unique(const struct cluster_topo *t, const struct cluster_node *n,
             char *why, size_t whylen)
{
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct cluster_node *o = &t->nodes[i];
        if (strcmp(o->id, n->id) == 0) {
            return fail(why, whylen, "cluster-node id %s is listed twice",
                        n->id);
        }
        if (o->port == n->port && strcmp(o->host, n->host) == 0) {
            return fail(why, whylen, "cluster-node address %s:%u is listed "
                        "twice", n->host, n->port);
        }
    }
    return 0;
}

static int
grow(struct cluster_topo *t, char *why, size_t whylen)
{
    if (t->nnodes < t->cap) {
        return 0;
    }
    if (t->nnodes >= CLUSTER_MAX_NODES) {
        return fail(why, whylen, "more than %d cluster-node lines",
                    CLUSTER_MAX_NODES);
    }
    size_t cap = t->cap == 0 ? 4 : t->cap * 2;
    struct cluster_node *nodes = realloc(t->nodes, cap * sizeof(*nodes));
    if (nodes == NULL) {
        return fail(why, whylen, "out of memory reading cluster-node lines");
    }
    t->nodes = nodes;
    t->cap = cap;
    return 0;
}

/* Claim the ranges for node index idx; on a clash, release what this node
 * took so far and fail. */
static int
claim_ranges(struct cluster_topo *t, size_t idx, char **words, size_t nwords,
             char *why, size_t whylen)
{
    unsigned taken = 0;
    for (size_t w = 0; w < nwords; w++) {
        unsigned first = 0, last = 0;
        if (parse_range(words[w], &first, &last, why, whylen) != 0) {
            goto undo;
        }
        for (unsigned s = first; s <= last; s++) {
            if (t->owner[s] != CLUSTER_NO_NODE) {
                fail(why, whylen, "slot %u of cluster-node %s is already "
                     "owned by %s", s, t->nodes[idx].id,
                     t->owner[s] == idx ? "the same node"
                                        : t->nodes[t->owner[s]].id);
                goto undo;
            }
            t->owner[s] = (uint16_t)idx;
            taken++;
        }
    }
    t->nodes[idx].nslots = taken;
    return 0;
undo:
    for (size_t s = 0; s < CLUSTER_SLOTS; s++) {
        if (t->owner[s] == idx) {
            t->owner[s] = CLUSTER_NO_NODE;
        }
    }
    return -1;
}

/* "replicaof <primary id>" after the address: the primary is resolved
 * by cluster_topo_link, once every line is in. */
static int
parse_replicaof(struct cluster_node *n, char **words, size_t nwords,
                char *why, size_t whylen)
{
    if (nwords != 2) {
        return fail(why, whylen, "cluster-node %s: a replica owns no slots: "
                    "write <id> <host>:<port> replicaof <primary id>",
                    n->id);
    }
    if (!valid_id(words[1])) {
        return fail(why, whylen, "cluster-node id '%s' must be 40 lower-case "
                    "hex digits", words[1]);
    }
    if (strcmp(words[1], n->id) == 0) {
        return fail(why, whylen, "cluster-node %s cannot be a replica of "
                    "itself", n->id);
    }
    memcpy(n->primary_id, words[1], CLUSTER_ID_LEN + 1);
    return 0;
}

static bool
is_replicaof(const char *word)
{
    return strlen(word) == 9 && strncasecmp(word, "replicaof", 9) == 0;
}

int
cluster_topo_add(struct cluster_topo *t, char **words, size_t nwords,
                 char *why, size_t whylen)
{
    struct cluster_node n;
    memset(&n, 0, sizeof(n));
    n.primary = CLUSTER_NO_NODE;
    if (nwords < 2) {
        return fail(why, whylen, "cluster-node wants <id> <host>:<port> "
                    "[<slot>|<first>-<last> ...] or <id> <host>:<port> "
                    "replicaof <primary id>");
    }
    if (!valid_id(words[0])) {
        return fail(why, whylen, "cluster-node id '%s' must be 40 lower-case "
                    "hex digits", words[0]);
    }
    memcpy(n.id, words[0], CLUSTER_ID_LEN + 1);
    if (parse_address(words[1], &n, why, whylen) != 0 ||
        check_unique(t, &n, why, whylen) != 0 || grow(t, why, whylen) != 0) {
        return -1;
    }
    if (nwords > 2 && is_replicaof(words[2])) {
        if (parse_replicaof(&n, words + 2, nwords - 2, why, whylen) != 0) {
            return -1;
        }
        t->nodes[t->nnodes++] = n;
        return 0;
    }
    t->nodes[t->nnodes] = n;
    if (claim_ranges(t, t->nnodes, words + 2, nwords - 2, why, whylen) != 0) {
        return -1;
    }
    t->nnodes++;
    return 0;
}

size_t
cluster_topo_find_id(const struct cluster_topo *t, const char *id,
                     size_t len)
{
    size_t i = 0;
    while (i < t->nnodes && (len != CLUSTER_ID_LEN ||
                             memcmp(t->nodes[i].id, id, len) != 0)) {
        i++;
    }
    return i;
}

int
cluster_topo_link(struct cluster_topo *t, char *why, size_t whylen)
{
    for (size_t i = 0; i < t->nnodes; i++) {
        struct cluster_node *n = &t->nodes[i];
        if (n->primary_id[0] == '\0') {
            continue;
        }
        size_t p = cluster_topo_find_id(t, n->primary_id, CLUSTER_ID_LEN);
        if (p == t->nnodes) {
            return fail(why, whylen, "cluster-node %s is a replica of %s, "
                        "which is not among the cluster-node lines", n->id,
                        n->primary_id);
        }
        if (t->nodes[p].primary_id[0] != '\0') {
            return fail(why, whylen, "cluster-node %s is a replica of %s, "
                        "which is a replica itself: name its primary %s",
                        n->id, n->primary_id, t->nodes[p].primary_id);
        }
        n->primary = (uint16_t)p;
    }
    return 0;
}

int
cluster_topo_find_myself(struct cluster_topo *t, const char *myid,
                         const char *host, unsigned port, char *why,
                         size_t whylen)
{
    size_t found = t->nnodes;
    if (t->nnodes == 0) {
        return fail(why, whylen, "cluster-mode yes needs cluster-node lines "
                    "in the config file");
    }
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct cluster_node *n = &t->nodes[i];
        bool match = myid[0] != '\0'
                     ? strcmp(n->id, myid) == 0
                     : n->port == port &&
                       (host[0] == '\0' || strcmp(n->host, host) == 0);
        if (!match) {
            continue;
        }
        if (found != t->nnodes) {
            return fail(why, whylen, "more than one cluster-node has port "
                        "%u: set cluster-node-id or cluster-announce-ip to "
                        "say which is this node", port);
        }
        found = i;
    }
    if (found == t->nnodes) {
        if (myid[0] != '\0') {
            return fail(why, whylen, "cluster-node-id %s is not among the "
                        "cluster-node lines", myid);
        }
        return fail(why, whylen, "no cluster-node has this node's address "
                    "%s:%u: set cluster-node-id", host[0] ? host : "*", port);
    }
    t->myself = found;
    return 0;
}

const struct cluster_node *
cluster_topo_owner(const struct cluster_topo *t, unsigned slot)
{
    uint16_t o = t->owner[slot & (CLUSTER_SLOTS - 1)];
    return o == CLUSTER_NO_NODE ? NULL : &t->nodes[o];
}

size_t
cluster_topo_shard(const struct cluster_topo *t, size_t i)
{
    uint16_t p = t->nodes[i].primary;
    return p == CLUSTER_NO_NODE ? i : p;
}

static void
set_primary(struct cluster_node *n, const struct cluster_node *nodes,
            uint16_t p)
{
    n->primary = p;
    if (p == CLUSTER_NO_NODE) {
        n->primary_id[0] = '\0';
    } else {
        memcpy(n->primary_id, nodes[p].id, CLUSTER_ID_LEN + 1);
    }
}

bool
cluster_topo_promote(struct cluster_topo *t, size_t i)
{
    uint16_t old = t->nodes[i].primary;
    if (old == CLUSTER_NO_NODE) {
        return false;
    }
    for (size_t s = 0; s < CLUSTER_SLOTS; s++) {
        if (t->owner[s] == old) {
            t->owner[s] = (uint16_t)i;
        }
    }
    t->nodes[i].nslots = t->nodes[old].nslots;
    t->nodes[old].nslots = 0;
    for (size_t j = 0; j < t->nnodes; j++) {
        if (j == old || (j != i && t->nodes[j].primary == old)) {
            set_primary(&t->nodes[j], t->nodes, (uint16_t)i);
        }
    }
    set_primary(&t->nodes[i], t->nodes, CLUSTER_NO_NODE);
    return true;
}

size_t
cluster_topo_find(const struct cluster_topo *t, const char *host,
                  unsigned port)
{
    size_t i = 0;
    while (i < t->nnodes &&
           (t->nodes[i].port != port || strcmp(t->nodes[i].host, host) != 0)) {
        i++;
    }
    return i;
}

void
cluster_topo_format_ranges(const struct cluster_topo *t, size_t i,
                           struct textbuf *out)
{
    unsigned slot = 0, first, last;
    size_t owner;
    while (cluster_topo_next_range(t, &slot, &first, &last, &owner)) {
        if (owner != i) {
            continue;
        }
        if (first == last) {
            textbuf_printf(out, " %u", first);
        } else {
            textbuf_printf(out, " %u-%u", first, last);
        }
    }
}

void
cluster_topo_format(const struct cluster_topo *t, struct textbuf *out)
{
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct cluster_node *n = &t->nodes[i];
        textbuf_printf(out, "cluster-node %s %s:%u", n->id, n->host, n->port);
        if (n->primary != CLUSTER_NO_NODE) {
            textbuf_printf(out, " replicaof %s", n->primary_id);
        }
        cluster_topo_format_ranges(t, i, out);
        textbuf_printf(out, "\n");
    }
}

unsigned
cluster_topo_assigned(const struct cluster_topo *t)
{
    unsigned n = 0;
    for (size_t i = 0; i < t->nnodes; i++) {
        n += t->nodes[i].nslots;
    }
    return n;
}

bool
cluster_topo_next_range(const struct cluster_topo *t, unsigned *slot,
                        unsigned *first, unsigned *last, size_t *node)
{
    unsigned s = *slot;
    while (s < CLUSTER_SLOTS && t->owner[s] == CLUSTER_NO_NODE) {
        s++;
    }
    if (s >= CLUSTER_SLOTS) {
        *slot = CLUSTER_SLOTS;
        return false;
    }
    *first = s;
    *node = t->owner[s];
    while (s + 1 < CLUSTER_SLOTS && t->owner[s + 1] == *node) {
        s++;
    }
    *last = s;
    *slot = s + 1;
    return true;
}
