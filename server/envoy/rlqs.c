/*
 * rlqs.c - Envoy's Rate Limit Quota Service (RLQS) on grpc-port:
 * StreamRateLimitQuotas, one streaming call per Envoy (its rate_limit_quota
 * filter), on the named limits' counters. No I/O: grpc.c hands each
 * stream's messages in and sends what comes out (stream_service.h).
 *
 * Design.
 * - Buckets to limits. A report's domain (the stream's first) and a
 *   bucket's BucketId, an unordered map, are read as the descriptor that
 *   walks the domain's tree of limits-file (limits_order_entries(): at
 *   each level the entry a child matches by key and value, else by key
 *   alone; entries off the path are left out), so {"path": "/login",
 *   "user": "alice"} finds the limit, and the counter key, ShouldRateLimit
 *   finds for [path=/login, user=alice]. No limit: rlqs-unknown-bucket's
 *   action (ALLOW_ALL, DENY_ALL or abandon_action); an unlimited limit:
 *   ALLOW_ALL; requests_per_unit 0: DENY_ALL; a shadow_mode limit (every
 *   limit with rls-shadow-mode yes): ALLOW_ALL, its usage still counted
 *   (the shadow series on /metrics).
 * - One quota. Every limited bucket is a shared counter (struct bucket,
 *   one per counter key, whatever stream reports it). A report's allowed
 *   requests are put on the counter as RL.CHECK's hits (database 0, as
 *   gRPC's): what fits of them (a counter never goes past its limit; what
 *   did not fit was over-admitted: /metrics' reported allowed less its
 *   folded), so RL.CHECK and
 *   ShouldRateLimit callers see the Envoys' use and the Envoys' shares see
 *   theirs (the pool is N less what others took this window).
 * - Shares: algorithms/quota_share.c's rule (a token bucket per Envoy,
 *   the pool water-filled on demand, with its bound on over-admission);
 *   with rlqs-strategy requests-per-time-unit, requests per the limit's
 *   unit instead, or a limit's own rlqs_strategy (a bucket's strategy,
 *   strategy_of(): a week's limit, no RateLimitUnit of Envoy's, keeps its
 *   token bucket). The option is part
 *   of mapping(), so CONFIG SET maps every stream again and pushes.
 *   Every report is answered with an assignment for each bucket in it:
 *   the same one again (Envoy extends it) unless the share moved enough.
 *   The other streams of a bucket whose split changed get theirs from
 *   rlqs_due(), as do refreshes (at half the time to live, 4 reporting
 *   intervals) and abandon_action for a bucket whose stream stopped
 *   reporting it (4 intervals) or whose limit a reload removed. A report's
 *   time_elapsed of 0 or whole seconds (Envoy's first for a bucket; its
 *   newer client's) gives way to the time seen between reports; rlqs_due() walks a stream's buckets only when a share of it
 *   changed or a refresh or stale mark is reached. Time is the limiter
 *   clock's (clock_wall_now()), the counters', not the caller's now_ms.
 * - Bounds: rlqs-max-buckets per stream (RESOURCE_EXHAUSTED past it), the
 *   message size (grpc-max-message, grpc.c's), a malformed report ends
 *   the stream INVALID_ARGUMENT; the transport bounds idle and unread
 *   streams. A closed stream's shares go back to the others at once.
 * - In cluster-mode yes a bucket's counter lives on its slot's owner; a
 *   report for a counter this node does not serve is put there by
 *   rls_forward_decide(), as ShouldRateLimit's descriptors are (the
 *   answer, fold_finished(), comes later). The split is the owner's, among
 *   every node's Envoys: each fold carries its member's demand and
 *   interval (struct nl_share_ask, RL.CHECK ... SHARE), the owner keeps
 *   other nodes' members beside its own (struct remote: dropped when its
 *   node says it left, member_left(), else forgotten after
 *   QS_STALE_INTERVALS; swept one bucket a fold), and its answer's share is
 *   the member's (note_counter()); a bucket whose owner is away is not
 *   split here (but for a member's first answer: first_shares()). A node
 *   that cannot reach the owner gets the failure answer: its split is its
 *   own again, as before.
 */
#include "server/envoy/rlqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "algorithms/quota_share.h"
#include "lib/dict.h"
#include "lib/mem.h"
#include "lib/textbuf.h"
#include "lib/time.h"
#include "protocol/rlqs.pb-c.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/keyspace.h"
#include "server/envoy/named_limits.h"
#include "server/envoy/rls_forward.h"
#include "server/envoy/stream_service.h"
#include "server/server.h"

typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaUsageReports Reports;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaUsageReports__BucketQuotaUsage Usage;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse Response;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse__BucketAction Action;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse__BucketAction__QuotaAssignmentAction Assign;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitQuotaResponse__BucketAction__AbandonAction Abandon;
typedef Envoy__Service__RateLimitQuota__V3__BucketId BucketId;
typedef Envoy__Service__RateLimitQuota__V3__BucketId__BucketEntry Pair;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitStrategy Strategy;
typedef Envoy__Service__RateLimitQuota__V3__TokenBucket TokenBucket;
typedef Envoy__Service__RateLimitQuota__V3__RateLimitStrategy__RequestsPerTimeUnit PerUnit;
typedef Envoy__Service__RateLimitQuota__V3__Duration Duration;
typedef Envoy__Service__RateLimitQuota__V3__UInt32Value UInt32;

/* What a stream's bucket gets. */
enum kind {
    KIND_SHARED,            /* a share of its limit's counter */
    KIND_ALLOW,             /* ALLOW_ALL: unlimited, shadow, or unknown */
    KIND_DENY,              /* DENY_ALL: a limit of 0, or unknown */
    KIND_ABANDON            /* abandon_action, then forgotten */
};

struct bucket;
struct stream;

/* One bucket of one stream. */
struct member {
    struct stream *s;
    struct bucket *b;               /* KIND_SHARED's counter, else NULL */
    size_t at;                      /* its place in b->m */
    enum kind kind;
    bool shadow;                    /* its limit is in shadow mode */
    struct qs_member q;
    bool pending;                   /* an action due (the limits changed) */
    uint64_t asked;                 /* units a forwarded fold asks for */
    bool retried;                   /* ... a second time, what was left */
    unsigned char *id;              /* the BucketId, canonical (below) */
    size_t idlen, npairs;
    size_t depth;                   /* the descriptor: order[0..depth) */
    size_t order[LIMITS_MAX_DEPTH];
};

/* An Envoy of another node sharing a counter this node owns (cluster-mode
 * yes): known by the demand its node sends with each fold (RL.CHECK ...
 * SHARE), forgotten QS_STALE_INTERVALS after its last. */
struct remote {
    char *id;                       /* "<run_id>:<id>" of its node */
    size_t idlen;
    struct qs_member q;
};

/* A named limit's counter, shared by the members mapped to it. */
struct bucket {
    char *counter;                  /* its key (the dict's) */
    size_t clen;
    struct nl_rule rule;
    enum qs_strategy strategy;      /* how its shares are sent */
    struct member **m;
    size_t n, cap;
    int64_t window_end_ms;          /* of the window folded counts are */
    uint64_t folded;                /* the Envoys' units in it */
    uint64_t others;                /* other callers' units in it */
    struct remote *r;               /* other nodes' Envoys (its owner) */
    size_t nr, rcap;
    bool away;                      /* its owner is another node: the
                                     * shares are the owner's answers */
    bool listed;                    /* on with_remotes */
    TAILQ_ENTRY(bucket) rlink;
};

struct stream {
    char *domain;                   /* NULL before the first report */
    struct dict members;            /* canonical id -> struct member */
    uint64_t generation;            /* mapping() it was mapped with */
    bool dirty;                     /* a share of it changed: look */
    int64_t next_ms;                /* else nothing is due before this */
    unsigned char *out;             /* the last answer's bytes */
    size_t out_cap;
    TAILQ_ENTRY(stream) link;
};

static TAILQ_HEAD(, stream) streams = TAILQ_HEAD_INITIALIZER(streams);
static struct dict buckets = DICT_SERVER;   /* counter -> struct bucket */
/* The buckets holding other nodes' Envoys, swept one a fold (the head,
 * then to the tail) so one no Envoy reports any more goes too. */
static TAILQ_HEAD(, bucket) with_remotes =
    TAILQ_HEAD_INITIALIZER(with_remotes);
static struct rlqs_stats stats;

/* What a stream's buckets were mapped with: the running limits,
 * rls-shadow-mode and rlqs-strategy (a change maps them again too). */
static uint64_t
mapping(void)
{
    return named_limits_generation() * 4 +
           (srv.conf.rls_shadow_mode ? 2 : 0) +
           (srv.conf.rlqs_strategy == RLQS_STRATEGY_PER_UNIT ? 1 : 0);
}

static int64_t
now_ms(void)
{
    return clock_wall_now() / NS_PER_MS;
}

/* ---- a BucketId ------------------------------------------------------- */

/* A BucketId's pairs sorted by key, each "<u32 klen><key>\0<u32 vlen>
 * <value>\0": the same bytes whatever order the map came in, and C
 * strings to answer with. */
static int
by_key(const void *a, const void *b)
{
    return strcmp((*(Pair *const *)a)->key, (*(Pair *const *)b)->key);
}

static void
put_u32(unsigned char *p, size_t v)
{
    memcpy(p, &(uint32_t){ (uint32_t)v }, 4);
}

/* Check and sort id's pairs; its canonical bytes into a fresh block.
 * NULL with *why for a BucketId the proto's rules refuse. */
static unsigned char *
canonical_id(const BucketId *id, size_t *len, const char **why)
{
    size_t total = 0;
    if (id == NULL || id->n_bucket == 0) {
        *why = "a bucket_id needs at least one pair";
        return NULL;
    }
    if (id->n_bucket > LIMITS_MAX_UNORDERED) {
        *why = "a bucket_id with more pairs than cellgate reads (64)";
        return NULL;
    }
    qsort(id->bucket, id->n_bucket, sizeof(*id->bucket), by_key);
    for (size_t i = 0; i < id->n_bucket; i++) {
        const Pair *p = id->bucket[i];
        if (p->key[0] == '\0' || p->value[0] == '\0' ||
            (i > 0 && strcmp(p->key, id->bucket[i - 1]->key) == 0)) {
            *why = "a bucket_id's keys and values must be non-empty, its "
                   "keys unique";
            return NULL;
        }
        total += 10 + strlen(p->key) + strlen(p->value);
    }
    unsigned char *out = mem_malloc(total), *w = out;
    if (out == NULL) {
        *why = "out of memory";
        return NULL;
    }
    for (size_t i = 0; i < id->n_bucket; i++) {
        const char *k = id->bucket[i]->key, *v = id->bucket[i]->value;
        size_t kl = strlen(k), vl = strlen(v);
        put_u32(w, kl);
        memcpy(w + 4, k, kl + 1);
        put_u32(w + 5 + kl, vl);
        memcpy(w + 9 + kl, v, vl + 1);
        w += 10 + kl + vl;
    }
    *len = total;
    return out;
}

/* The pairs of a canonical id as entries (pointing into it). */
static size_t
id_entries(const unsigned char *id, size_t len, struct limits_entry *e)
{
    size_t n = 0;
    for (size_t at = 0; at < len; n++) {
        uint32_t kl, vl;
        memcpy(&kl, id + at, 4);
        e[n].key = (const char *)id + at + 4;
        e[n].klen = kl;
        memcpy(&vl, id + at + 5 + kl, 4);
        e[n].value = (const char *)id + at + 9 + kl;
        e[n].vlen = vl;
        at += 10 + (size_t)kl + vl;
    }
    return n;
}

/* ---- buckets ------------------------------------------------------------ */

/* How rule's shares are sent: its own rlqs_strategy, else rlqs-strategy's
 * way; a token bucket for a unit Envoy's RateLimitUnit has no name for (a
 * week). */
static enum qs_strategy
strategy_of(const struct nl_rule *rule)
{
    bool per_unit = rule->rlqs == LIMITS_RLQS_DEFAULT
                        ? srv.conf.rlqs_strategy == RLQS_STRATEGY_PER_UNIT
                        : rule->rlqs == LIMITS_RLQS_PER_UNIT;
    return per_unit && rule->unit != LIMITS_WEEK ? QS_PER_UNIT
                                                 : QS_TOKEN_BUCKET;
}

static struct bucket *
bucket_get(const char *counter, size_t clen, const struct nl_rule *rule)
{
    struct dict_entry *e = dict_find(&buckets, counter, clen);
    if (e != NULL) {
        struct bucket *b = e->owner.p;
        b->rule = *rule;                /* the latest limits' number */
        b->strategy = strategy_of(rule);
        return b;
    }
    struct bucket *b = mem_calloc(1, sizeof(*b));
    if (b == NULL || (e = dict_add(&buckets, counter, (uint32_t)clen, NULL,
                                   0)) == NULL) {
        mem_free(b);
        return NULL;
    }
    e->owner.p = b;
    b->counter = (char *)dict_key(e);
    b->clen = clen;
    b->rule = *rule;
    b->strategy = strategy_of(rule);
    stats.buckets++;
    return b;
}

static bool
bucket_join(struct bucket *b, struct member *m)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4;
        struct member **p = mem_realloc(b->m, cap * sizeof(*p));
        if (p == NULL) {
            return false;
        }
        b->m = p;
        b->cap = cap;
    }
    m->b = b;
    m->at = b->n;
    b->m[b->n++] = m;
    return true;
}

/* Forget b's remote members that stopped reporting. */
static void
prune_remotes(struct bucket *b, int64_t t)
{
    for (size_t i = 0; i < b->nr;) {
        if (qs_stale(&b->r[i].q, t)) {
            mem_free(b->r[i].id);
            b->r[i] = b->r[--b->nr];
        } else {
            i++;
        }
    }
    if (b->nr == 0) {
        mem_free(b->r);
        b->r = NULL;
        b->rcap = 0;
        if (b->listed) {
            TAILQ_REMOVE(&with_remotes, b, rlink);
            b->listed = false;
        }
    }
}

/* b's owner is another node, whose answers are the shares: a member not
 * sent one yet (its first report, the owner's answer to come) gets what
 * the split among this node's members would give it, not nothing. */
static void
first_shares(struct bucket *b, double pool)
{
    struct qs_member q[16], *qp[16];
    size_t fresh = 0;
    for (size_t i = 0; i < b->n; i++) {
        fresh += b->m[i]->q.sent_ms < 0;
    }
    if (fresh == 0 || b->n > sizeof(q) / sizeof(q[0])) {
        return;                 /* many: the owner's answer, shortly */
    }
    for (size_t i = 0; i < b->n; i++) {
        q[i] = b->m[i]->q;
        q[i].strategy = b->strategy;
        qp[i] = &q[i];
    }
    qs_split(qp, b->n, pool);   /* reorders qp, not q */
    for (size_t i = 0; i < b->n; i++) {
        if (b->m[i]->q.sent_ms < 0) {
            b->m[i]->q.share = q[i].share;
            b->m[i]->q.strategy = b->strategy;
        }
    }
}

/* The split of b's pool among its members now, this node's and other
 * nodes' (b's owner is this node); none when b's owner is another node,
 * whose answers are the shares. */
static void
bucket_split(struct bucket *b)
{
    double pool = qs_pool(b->strategy, b->rule.requests_per_unit,
                          b->rule.unit_s, b->others);
    struct qs_member *q[64], **qp = q;
    prune_remotes(b, now_ms());
    size_t n = b->n + b->nr;
    if (b->away) {
        first_shares(b, pool);
        return;
    }
    if (n > sizeof(q) / sizeof(q[0])) {
        qp = mem_malloc(n * sizeof(*qp));
        if (qp == NULL) {
            return;                     /* the shares stay as they were */
        }
    }
    for (size_t i = 0; i < b->n; i++) {
        qp[i] = &b->m[i]->q;
        b->m[i]->s->dirty = true;       /* rlqs_due() looks at it */
    }
    for (size_t i = 0; i < b->nr; i++) {
        qp[b->n + i] = &b->r[i].q;
    }
    for (size_t i = 0; i < n; i++) {
        qp[i]->strategy = b->strategy;
    }
    qs_split(qp, n, pool);
    if (qp != q) {
        mem_free(qp);
    }
}

/* b, when nothing holds it any more, freed. */
static void
bucket_release(struct bucket *b)
{
    if (b->n > 0 || b->nr > 0) {
        return;
    }
    if (b->listed) {
        TAILQ_REMOVE(&with_remotes, b, rlink);
    }
    mem_free(b->r);                     /* room made, none kept */
    mem_free(b->m);
    dict_remove_key(&buckets, b->counter, b->clen);
    mem_free(b);
    stats.buckets--;
    if (buckets.used == 0) {
        dict_free(&buckets);            /* no table kept for none */
    }
}

/* m leaves its bucket; the bucket goes with its last member, else the
 * others share what m had. */
static void
bucket_leave(struct member *m)
{
    struct bucket *b = m->b;
    if (b == NULL) {
        return;
    }
    b->m[m->at] = b->m[--b->n];
    b->m[m->at]->at = m->at;
    m->b = NULL;
    if (b->n > 0 || b->nr > 0) {
        bucket_split(b);
    }
    bucket_release(b);
}

/* ---- mapping a bucket to a limit --------------------------------------- */

/* m's descriptor: its entries in the order the domain's tree takes them. */
static size_t
descriptor_of(const struct member *m, struct limits_entry *d)
{
    struct limits_entry e[LIMITS_MAX_UNORDERED];
    id_entries(m->id, m->idlen, e);
    for (size_t i = 0; i < m->depth; i++) {
        d[i] = e[m->order[i]];
    }
    return m->depth;
}

static enum kind
unknown_kind(void)
{
    switch (srv.conf.rlqs_unknown_bucket) {
    case RLQS_UNKNOWN_DENY:
        return KIND_DENY;
    case RLQS_UNKNOWN_ABANDON:
        return KIND_ABANDON;
    default:
        return KIND_ALLOW;
    }
}

/* What m gets under the running limits: its kind, and for a shared one
 * its bucket. false when memory ran out. */
static bool
map_member(struct member *m)
{
    const struct limits *l = named_limits_running();
    struct limits_entry e[LIMITS_MAX_UNORDERED], path[LIMITS_MAX_DEPTH];
    struct nl_descriptor d;
    struct nl_rule rule;
    struct textbuf counter = { NULL, 0, 0, false };
    char err[64] = "";
    size_t n = id_entries(m->id, m->idlen, e), dlen = strlen(m->s->domain);
    m->depth = limits_order_entries(l, m->s->domain, dlen, e, n, m->order);
    memset(&d, 0, sizeof(d));
    d.entries = path;
    d.n = descriptor_of(m, path);
    m->shadow = false;
    m->kind = unknown_kind();
    if (d.n == 0 || named_limits_describe(m->s->domain, dlen, &d, &rule,
                                          &counter, err, sizeof(err)) != 0) {
        textbuf_free(&counter);
        return strcmp(err, "OOM") != 0 || d.n == 0;
    }
    bool ok = true;
    if (rule.has_limit && !rule.unlimited) {
        /* rls-shadow-mode: every limit as if in shadow_mode. */
        m->shadow = rule.shadow || srv.conf.rls_shadow_mode;
        m->kind = m->shadow ? KIND_ALLOW
                  : rule.requests_per_unit == 0 ? KIND_DENY : KIND_SHARED;
    } else if (rule.has_limit) {
        m->kind = KIND_ALLOW;
    }
    if (m->kind == KIND_SHARED) {
        struct bucket *b = bucket_get(counter.p, counter.len, &rule);
        ok = b != NULL && bucket_join(b, m);
        if (ok) {
            bucket_split(b);            /* its share, from its last demand */
        } else {
            m->kind = KIND_ABANDON;     /* no memory: Envoy asks again */
        }
    }
    textbuf_free(&counter);
    return ok;
}

/* Map m again (the limits changed): it leaves its old bucket. A bucket
 * that had a limit and has none now is abandoned: Envoy forgets it, and
 * its next report finds rlqs-unknown-bucket's answer. */
static bool
remap_member(struct member *m)
{
    bool had_limit = m->kind == KIND_SHARED || m->kind == KIND_DENY ||
                     m->shadow;
    struct bucket *old = m->b, kept = { 0 };
    if (old != NULL && old->n == 1) {
        /* Its last member leaves it: what it knew outlives it. */
        kept = *old;
        kept.counter = mem_malloc(old->clen);
        if (kept.counter != NULL) {
            memcpy(kept.counter, old->counter, old->clen);
        }
    }
    if (old != NULL) {
        bucket_leave(m);
    }
    bool ok = map_member(m);
    if (had_limit && m->kind != KIND_SHARED && m->kind != KIND_DENY &&
        !m->shadow) {
        m->kind = KIND_ABANDON;
    }
    if (kept.counter != NULL && m->kind == KIND_SHARED &&
        m->b->window_end_ms == 0 && m->b->clen == kept.clen &&
        memcmp(m->b->counter, kept.counter, kept.clen) == 0) {
        /* The same counter, its bucket made afresh (m was its last
         * member): what it knew of this window, others' use with it, is
         * the old one's, not nothing until the next report. */
        m->b->window_end_ms = kept.window_end_ms;
        m->b->folded = kept.folded;
        m->b->others = kept.others;
        bucket_split(m->b);
    }
    mem_free(kept.counter);
    m->q.sent_ms = -1;                  /* a fresh assignment, */
    m->q.changed_ms = -1;
    m->pending = true;                  /* sent by rlqs_due() */
    return ok;
}

/* The limits changed since s was mapped: map its members again. */
static void
remap_stream(struct stream *s)
{
    struct dict_iter it = { 0, NULL };
    struct dict_entry *e;
    if (s->generation == mapping()) {
        return;
    }
    s->generation = mapping();
    s->dirty = true;
    while ((e = dict_next(&s->members, &it)) != NULL) {
        (void)remap_member(e->owner.p);
    }
}

/* ---- usage on the counters ---------------------------------------------- */

/* A fold of put units on b's counter and its status: st.remaining after
 * it, when its window ends. The others' use is what the counter holds
 * beyond the Envoys' own (every node's, on the owner). */
static void
bucket_note(struct bucket *b, uint64_t put, const struct nl_status *st)
{
    int64_t end = now_ms() + st->reset_ns / NS_PER_MS;
    if (end > b->window_end_ms + 1) {       /* a new window */
        b->folded = 0;
    }
    b->window_end_ms = end;
    b->folded += put;
    uint64_t used = st->requests_per_unit > st->remaining
                    ? st->requests_per_unit - st->remaining : 0;
    b->others = used > b->folded ? used - b->folded : 0;
}

static void
note_counter(struct member *m, uint64_t put, const struct nl_status *st)
{
    stats.folded[m->shadow] += put;
    if (m->b == NULL || !st->has_limit) {
        return;
    }
    bucket_note(m->b, put, st);
    if (st->has_share) {
        /* The owner's split, among every node's Envoys: m's share. */
        m->q.share = (double)st->share_milli / 1000.0;
        m->s->dirty = true;             /* a fall is pushed at once */
    }
}

#define SHARE_ID_MAX (sizeof(srv.run_id) + 24)

/* What the owner of m's counter is told of m with a fold: its name (this
 * node's run_id and m's address: unique while m lives), demand and
 * interval. */
static void
share_ask(const struct member *m, char *id, struct nl_share_ask *ask)
{
    ask->member = id;
    ask->mlen = (size_t)snprintf(id, SHARE_ID_MAX, "%s:%llx", srv.run_id,
                                 (unsigned long long)(uintptr_t)m);
    /* Past a trillion a second is as good as that (and fits). */
    ask->demand_milli = !(m->q.demand > 0) ? 0
                        : m->q.demand >= 1e12 ? (uint64_t)1e15
                        : (uint64_t)(m->q.demand * 1000.0);
    ask->interval_ms = m->q.interval_ms;
}

static void fold_finished(const struct rls_caller *caller,
                          const struct nl_status *st, size_t n,
                          enum nl_code overall);

/* Put hits of m's requests on its counter (here, or on its owner in a
 * cluster): RLS_DECIDED with *st, RLS_WAITING for fold_finished(). */
static enum rls_outcome
fold_ask(struct member *m, uint64_t hits, struct nl_status *st)
{
    struct limits_entry path[LIMITS_MAX_DEPTH];
    struct nl_descriptor d;
    enum nl_code overall;
    char err[96];
    size_t dlen = strlen(m->s->domain);
    memset(&d, 0, sizeof(d));
    d.entries = path;
    d.n = descriptor_of(m, path);
    d.hits = hits;
    memset(st, 0, sizeof(*st));         /* has_share: the owner's only */
    keyspace_select(0);                 /* Envoy's counters: database 0 */
    if (!cluster_routing()) {
        return named_limits_check(m->s->domain, dlen, &d, 1, NULL, false,
                                  clock_wall_now(), st, &overall, err,
                                  sizeof(err)) == 0 ? RLS_DECIDED
                                                    : RLS_FAILED;
    }
    struct rls_caller caller = { m, 0 };     /* fold_finished()'s */
    char id[SHARE_ID_MAX];
    struct nl_share_ask ask;
    share_ask(m, id, &ask);
    d.share = m->kind == KIND_SHARED ? &ask : NULL;
    m->asked = hits;
    enum rls_outcome o = rls_forward_decide(m->s->domain, dlen, &d, 1,
                                            clock_wall_now(), st, &overall,
                                            &caller, fold_finished, err,
                                            sizeof(err));
    if (m->b != NULL && o != RLS_FAILED) {
        /* Served here: this node splits; else the owner's answers do. */
        m->b->away = o == RLS_WAITING;
    }
    return o;
}

/* What a fold's answer means: it fit, or (nothing taken: a refused
 * request takes nothing) the part that fits is asked for once more. */
static void
fold_answered(struct member *m, uint64_t hits, const struct nl_status *st)
{
    struct nl_status again;
    /* An owner's answer (RL.CHECK ... STATUS) carries the code only. */
    if (!(st->exceeded || st->code == NL_OVER_LIMIT) || hits == 0) {
        note_counter(m, hits, st);
        return;
    }
    uint64_t fits = st->remaining;
    if (fits == 0 || m->retried || fits >= hits) {
        note_counter(m, 0, st);
        return;
    }
    m->retried = true;
    if (fold_ask(m, fits, &again) == RLS_DECIDED) {
        fold_answered(m, fits, &again);
    }
}

static void
fold(struct member *m, uint64_t allowed)
{
    struct nl_status st;
    m->retried = false;
    clock_batch_open();
    if (fold_ask(m, allowed, &st) == RLS_DECIDED) {
        fold_answered(m, allowed, &st);
    }
    clock_batch_close();
}

/* A forwarded fold's answer (cluster-mode yes). */
static void
fold_finished(const struct rls_caller *caller, const struct nl_status *st,
              size_t n, enum nl_code overall)
{
    struct member *m = caller->ctx;     /* still here: see member_free() */
    (void)overall;
    if (n == 1) {
        clock_batch_open();
        fold_answered(m, m->asked, st);
        clock_batch_close();
    }
}

/* ---- other nodes' Envoys (this node the owner) --------------------------- */

/* The remote member called id in b, made when new; NULL past the cap or
 * without memory. */
static struct remote *
remote_get(struct bucket *b, const char *id, size_t idlen, int64_t t)
{
    for (size_t i = 0; i < b->nr; i++) {
        if (b->r[i].idlen == idlen && memcmp(b->r[i].id, id, idlen) == 0) {
            return &b->r[i];
        }
    }
    if (b->nr >= (size_t)srv.conf.rlqs_max_buckets) {
        return NULL;
    }
    if (b->nr == b->rcap) {
        size_t cap = b->rcap ? b->rcap * 2 : 4;
        struct remote *p = mem_realloc(b->r, cap * sizeof(*p));
        if (p == NULL) {
            return NULL;
        }
        b->r = p;
        b->rcap = cap;
    }
    struct remote *r = &b->r[b->nr];
    memset(r, 0, sizeof(*r));
    if ((r->id = mem_malloc(idlen)) == NULL) {
        return NULL;
    }
    memcpy(r->id, id, idlen);
    r->idlen = idlen;
    qs_member_init(&r->q, t);
    b->nr++;
    if (!b->listed) {
        TAILQ_INSERT_TAIL(&with_remotes, b, rlink);
        b->listed = true;
    }
    return r;
}

/* The remote member called id leaves b (its stream closed): the others
 * share what it had. */
static void
remote_drop(struct bucket *b, const char *id, size_t idlen)
{
    for (size_t i = 0; i < b->nr; i++) {
        if (b->r[i].idlen == idlen && memcmp(b->r[i].id, id, idlen) == 0) {
            mem_free(b->r[i].id);
            b->r[i] = b->r[--b->nr];
            bucket_split(b);            /* none left: prune tidies up */
            return;
        }
    }
}

/* One step of the sweep: the oldest-looked-at bucket's stale remote
 * members forgotten, it freed when nothing holds it. */
static void
sweep_remotes(int64_t t)
{
    struct bucket *b = TAILQ_FIRST(&with_remotes);
    if (b == NULL) {
        return;
    }
    TAILQ_REMOVE(&with_remotes, b, rlink);
    TAILQ_INSERT_TAIL(&with_remotes, b, rlink);
    size_t had = b->nr;
    prune_remotes(b, t);
    if (b->nr < had && b->n > 0) {
        bucket_split(b);                /* their shares to the others */
    }
    bucket_release(b);
}

void
rlqs_share_remote(const char *domain, size_t dlen,
                  const struct nl_descriptor *d, uint64_t put,
                  struct nl_status *st)
{
    const struct nl_share_ask *ask = d->share;
    struct textbuf counter = { NULL, 0, 0, false };
    struct nl_rule rule;
    char err[64];
    int64_t t = now_ms();
    st->has_share = false;
    sweep_remotes(t);
    if (ask == NULL || !st->has_limit || srv.conf.rls_shadow_mode ||
        named_limits_describe(domain, dlen, d, &rule, &counter, err,
                              sizeof(err)) != 0 ||
        !rule.has_limit || rule.unlimited || rule.shadow ||
        rule.requests_per_unit == 0) {
        textbuf_free(&counter);
        return;
    }
    struct bucket *b = bucket_get(counter.p, counter.len, &rule);
    textbuf_free(&counter);
    if (b != NULL && ask->interval_ms == 0) {
        remote_drop(b, ask->member, ask->mlen);     /* it left */
        bucket_release(b);
        return;
    }
    struct remote *r = b != NULL ? remote_get(b, ask->member, ask->mlen, t)
                                 : NULL;
    if (r != NULL) {
        r->q.demand = (double)ask->demand_milli / 1000.0;
        r->q.interval_ms = ask->interval_ms < QS_MIN_INTERVAL_MS
                           ? QS_MIN_INTERVAL_MS
                           : ask->interval_ms > QS_MAX_INTERVAL_MS
                           ? QS_MAX_INTERVAL_MS : ask->interval_ms;
        r->q.reported_ms = t;
        b->away = false;                /* this node is the owner now */
        bucket_note(b, put, st);
        bucket_split(b);
        st->has_share = true;
        st->share_milli = (uint64_t)(r->q.share * 1000.0);
    }
    if (b != NULL) {
        bucket_release(b);              /* a bucket none holds */
    }
}

/* ---- a stream's members ------------------------------------------------- */

/* Nothing waits for a leave's answer (member_left()). */
static char leaving;

static void
leave_finished(const struct rls_caller *caller, const struct nl_status *st,
               size_t n, enum nl_code overall)
{
    (void)caller;
    (void)st;
    (void)n;
    (void)overall;
}

/* m goes: the owner of its counter, another node, is told (SHARE with an
 * interval of 0, nothing counted), so the others get its share at once
 * rather than when it would be stale. Best effort: no answer is read. */
static void
member_left(struct member *m)
{
    struct limits_entry path[LIMITS_MAX_DEPTH];
    struct nl_descriptor d;
    struct nl_status st;
    enum nl_code overall;
    char id[SHARE_ID_MAX], err[96];
    struct nl_share_ask ask;
    if (m->kind != KIND_SHARED || m->b == NULL || !m->b->away ||
        !cluster_routing()) {
        return;
    }
    memset(&d, 0, sizeof(d));
    d.entries = path;
    d.n = descriptor_of(m, path);
    share_ask(m, id, &ask);
    ask.interval_ms = 0;
    d.share = &ask;
    struct rls_caller caller = { &leaving, 0 };
    keyspace_select(0);
    (void)rls_forward_decide(m->s->domain, strlen(m->s->domain), &d, 1,
                             clock_wall_now(), &st, &overall, &caller,
                             leave_finished, err, sizeof(err));
}

static void
member_free(struct member *m)
{
    if (rls_forward_waiting() > 0) {
        rls_forward_cancel(m);          /* its fold still waiting */
    }
    member_left(m);
    bucket_leave(m);
    mem_free(m->id);
    mem_free(m);
    stats.subscriptions--;
}

/* Forget m (abandoned, stale, or its stream closed). */
static void
member_drop(struct stream *s, struct member *m)
{
    dict_remove_key(&s->members, m->id, m->idlen);
    member_free(m);
}

/* The member for id (canonical, taken over), made when new. NULL with
 * *status and *why past rlqs-max-buckets or without memory. */
static struct member *
member_get(struct stream *s, unsigned char *id, size_t idlen,
           enum grpc_status *status, const char **why)
{
    struct dict_entry *e = dict_find(&s->members, id, idlen);
    if (e != NULL) {
        mem_free(id);
        return e->owner.p;
    }
    *status = GRPC_RESOURCE_EXHAUSTED;
    if (s->members.used >= (uint64_t)srv.conf.rlqs_max_buckets) {
        *why = "more buckets on one stream than rlqs-max-buckets";
        mem_free(id);
        return NULL;
    }
    struct member *m = mem_calloc(1, sizeof(*m));
    if (m == NULL || (e = dict_add(&s->members, id, (uint32_t)idlen, NULL,
                                   0)) == NULL) {
        *why = "out of memory";
        mem_free(m);
        mem_free(id);
        return NULL;
    }
    e->owner.p = m;
    m->s = s;
    struct limits_entry pairs[LIMITS_MAX_UNORDERED];
    m->id = id;
    m->idlen = idlen;
    m->npairs = id_entries(id, idlen, pairs);
    qs_member_init(&m->q, now_ms());
    stats.subscriptions++;
    if (!map_member(m)) {
        member_drop(s, m);
        *why = "out of memory";
        return NULL;
    }
    return m;
}

/* The span a usage covers, or -1: unknown, the time between the bucket's
 * reports as seen here stands in. Envoy's first report of a bucket (at its
 * first request) says 0 or nothing, and its newer client
 * (GlobalRateLimitClientImpl) whole seconds only, or nothing under one: a
 * report of whole seconds is taken as unknown. */
static int64_t
elapsed_ms(const Usage *u)
{
    const Envoy__Service__RateLimitQuota__V3__Duration *d = u->time_elapsed;
    if (d == NULL || d->nanos == 0) {
        return -1;
    }
    if (d->seconds > QS_MAX_INTERVAL_MS / MS_PER_SEC) {
        return QS_MAX_INTERVAL_MS;
    }
    return d->seconds * MS_PER_SEC + d->nanos / NS_PER_MS;
}

/* One bucket's usage: its member, the counts on its counter. NULL with
 * *status and *why. */
static struct member *
read_usage(struct stream *s, const Usage *u, enum grpc_status *status,
           const char **why)
{
    size_t idlen;
    *status = GRPC_INVALID_ARGUMENT;
    if (u->time_elapsed != NULL && (u->time_elapsed->seconds < 0 ||
                                    u->time_elapsed->nanos < 0)) {
        *why = "a usage's time_elapsed cannot be negative";
        return NULL;
    }
    unsigned char *id = canonical_id(u->bucket_id, &idlen, why);
    if (id == NULL) {
        return NULL;
    }
    struct member *m = member_get(s, id, idlen, status, why);
    if (m == NULL) {
        return NULL;
    }
    int64_t t = now_ms();
    qs_report(&m->q, u->num_requests_allowed, u->num_requests_denied,
              elapsed_ms(u), t);
    stats.allowed[m->shadow] += u->num_requests_allowed;
    stats.denied[m->shadow] += u->num_requests_denied;
    if (m->kind == KIND_SHARED || m->shadow) {
        /* Even none: what the counter holds says what others took. */
        fold(m, u->num_requests_allowed);
    }
    return m;
}

/* ---- answers ------------------------------------------------------------ */

/* One action of an answer. */
struct act {
    struct member *m;
    bool abandon;
    struct qs_assignment a;
};

/* The messages of one action, laid out together. */
struct enc {
    Action action;
    Assign assign;
    Abandon abandon;
    Strategy strategy;
    TokenBucket tb;
    PerUnit per_unit;
    UInt32 per_fill;
    Duration ttl, fill;
    BucketId id;
};

static void
duration_ms(Duration *d, int64_t ns)
{
    envoy__service__rate_limit_quota__v3__duration__init(d);
    d->seconds = ns / NS_PER_SEC;
    d->nanos = (int32_t)(ns % NS_PER_SEC);
}

/* The BucketId of m, its pairs from its canonical id. */
static void
encode_id(const struct member *m, BucketId *id, Pair *pairs, Pair **pp)
{
    struct limits_entry e[LIMITS_MAX_UNORDERED];
    size_t n = id_entries(m->id, m->idlen, e);
    envoy__service__rate_limit_quota__v3__bucket_id__init(id);
    for (size_t i = 0; i < n; i++) {
        envoy__service__rate_limit_quota__v3__bucket_id__bucket_entry__init(
            &pairs[i]);
        pairs[i].key = (char *)e[i].key;
        pairs[i].value = (char *)e[i].value;
        pp[i] = &pairs[i];
    }
    id->n_bucket = n;
    id->bucket = pp;
}

/* The RateLimitUnit of a limit's unit: the same numbers (limits.h), a
 * week aside (strategy_of() gives it a token bucket). */
static Envoy__Service__RateLimitQuota__V3__RateLimitUnit
rate_limit_unit(enum limits_unit u)
{
    return u >= LIMITS_SECOND && u <= LIMITS_YEAR
        ? (Envoy__Service__RateLimitQuota__V3__RateLimitUnit)u
        : ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_UNIT__UNKNOWN;
}

static void
encode_strategy(const struct act *x, struct enc *c)
{
    envoy__service__rate_limit_quota__v3__rate_limit_strategy__init(
        &c->strategy);
    if (x->a.allow_all || x->a.deny_all) {
        c->strategy.strategy_case =
            ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_STRATEGY__STRATEGY_BLANKET_RULE;
        c->strategy.blanket_rule = x->a.deny_all
            ? ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_STRATEGY__BLANKET_RULE__DENY_ALL
            : ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_STRATEGY__BLANKET_RULE__ALLOW_ALL;
        stats.deny_all_sent += x->a.deny_all;
        stats.allow_all_sent += x->a.allow_all;
        return;
    }
    if (x->a.per_unit > 0) {
        envoy__service__rate_limit_quota__v3__rate_limit_strategy__requests_per_time_unit__init(
            &c->per_unit);
        c->per_unit.requests_per_time_unit = x->a.per_unit;
        c->per_unit.time_unit = rate_limit_unit(x->m->b->rule.unit);
        c->strategy.strategy_case =
            ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_STRATEGY__STRATEGY_REQUESTS_PER_TIME_UNIT;
        c->strategy.requests_per_time_unit = &c->per_unit;
        stats.per_unit_sent++;
        return;
    }
    envoy__service__rate_limit_quota__v3__token_bucket__init(&c->tb);
    envoy__service__rate_limit_quota__v3__uint32_value__init(&c->per_fill);
    c->tb.max_tokens = x->a.max_tokens;
    c->per_fill.value = x->a.max_tokens;
    c->tb.tokens_per_fill = &c->per_fill;
    duration_ms(&c->fill, x->a.fill_ns);
    c->tb.fill_interval = &c->fill;
    c->strategy.strategy_case =
        ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_STRATEGY__STRATEGY_TOKEN_BUCKET;
    c->strategy.token_bucket = &c->tb;
    stats.token_buckets_sent++;
}

static void
encode_action(const struct act *x, struct enc *c, Pair *pairs, Pair **pp)
{
    envoy__service__rate_limit_quota__v3__rate_limit_quota_response__bucket_action__init(
        &c->action);
    encode_id(x->m, &c->id, pairs, pp);
    c->action.bucket_id = &c->id;
    if (x->abandon) {
        envoy__service__rate_limit_quota__v3__rate_limit_quota_response__bucket_action__abandon_action__init(
            &c->abandon);
        c->action.bucket_action_case =
            ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_QUOTA_RESPONSE__BUCKET_ACTION__BUCKET_ACTION_ABANDON_ACTION;
        c->action.abandon_action = &c->abandon;
        stats.abandons_sent++;
        return;
    }
    envoy__service__rate_limit_quota__v3__rate_limit_quota_response__bucket_action__quota_assignment_action__init(
        &c->assign);
    duration_ms(&c->ttl, qs_ttl_ms(&x->m->q) * NS_PER_MS);
    c->assign.assignment_time_to_live = &c->ttl;
    encode_strategy(x, c);
    c->assign.rate_limit_strategy = &c->strategy;
    c->action.bucket_action_case =
        ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_QUOTA_RESPONSE__BUCKET_ACTION__BUCKET_ACTION_QUOTA_ASSIGNMENT_ACTION;
    c->action.quota_assignment_action = &c->assign;
}

/* The answer of n actions packed into s->out. */
static enum grpc_status
encode(struct stream *s, const struct act *x, size_t n,
       const unsigned char **out, size_t *out_len, const char **why)
{
    Response r = ENVOY__SERVICE__RATE_LIMIT_QUOTA__V3__RATE_LIMIT_QUOTA_RESPONSE__INIT;
    size_t npairs = 0;
    for (size_t i = 0; i < n; i++) {
        npairs += x[i].m->npairs;
    }
    struct enc *c = mem_malloc(n * sizeof(*c));
    Action **pa = mem_malloc(n * sizeof(*pa));
    Pair *pairs = mem_malloc(npairs * sizeof(*pairs));
    Pair **pp = mem_malloc(npairs * sizeof(*pp));
    enum grpc_status rc = GRPC_RESOURCE_EXHAUSTED;
    *why = "out of memory";
    if (c != NULL && pa != NULL && pairs != NULL && pp != NULL) {
        for (size_t i = 0, at = 0; i < n; at += x[i].m->npairs, i++) {
            encode_action(&x[i], &c[i], pairs + at, pp + at);
            pa[i] = &c[i].action;
        }
        r.n_bucket_action = n;
        r.bucket_action = pa;
        size_t len = protobuf_c_message_get_packed_size(&r.base);
        if (mem_reserve(&s->out, &s->out_cap, 0, len + 1, 256)) {
            *out_len = protobuf_c_message_pack(&r.base, s->out);
            *out = s->out;
            rc = GRPC_OK;
        }
    }
    mem_free(c);
    mem_free(pa);
    mem_free(pairs);
    mem_free(pp);
    return rc;
}

/* ---- the call ------------------------------------------------------------ */

/* What m is told now: its share's bucket (or the one it has again), its
 * blanket rule, or abandon_action. */
static void
choose(struct member *m, int64_t t, struct act *x)
{
    memset(x, 0, sizeof(*x));
    x->m = m;
    switch (m->kind) {
    case KIND_SHARED:
        qs_choose(&m->q, m->b->rule.unit_s, t, &x->a);
        break;
    case KIND_ALLOW:
        x->a.allow_all = true;
        break;
    case KIND_DENY:
        x->a.deny_all = true;
        break;
    case KIND_ABANDON:
        x->abandon = true;
        return;
    }
    qs_sent(&m->q, &x->a, t);
    m->pending = false;
}

/* Does m need an action before its next report? */
static bool
push_due(const struct member *m, int64_t t)
{
    if (m->pending || qs_stale(&m->q, t)) {
        return true;
    }
    int64_t unit_s = m->kind == KIND_SHARED ? m->b->rule.unit_s : 1;
    return m->kind != KIND_SHARED && m->q.sent_ms >= 0
           ? t - m->q.sent_ms >= qs_ttl_ms(&m->q) / 2
           : qs_push_due(&m->q, unit_s, t);
}

/* When m next needs a look if nothing changes meanwhile: its refresh, or
 * the end of its reports; now when a changed share waits for its
 * interval (looked at every tick). */
static int64_t
member_next_ms(const struct member *m, int64_t t)
{
    struct qs_assignment want;
    bool fell;
    int64_t next = m->q.reported_ms +
                   m->q.interval_ms * QS_STALE_INTERVALS + 1;
    if (m->q.sent_ms >= 0) {
        int64_t refresh = m->q.sent_ms + qs_ttl_ms(&m->q) / 2;
        next = refresh < next ? refresh : next;
    }
    if (m->kind == KIND_SHARED && m->q.sent_ms >= 0) {
        qs_assignment_for(&m->q, m->b->rule.unit_s, &want);
        if (qs_differs(&want, &m->q.sent, &fell)) {
            return t;
        }
    }
    return next;
}

/* Grow the actions array to hold one more. */
static bool
acts_room(struct act **x, size_t n, size_t *cap)
{
    if (n < *cap) {
        return true;
    }
    size_t c = *cap ? *cap * 2 : 16;
    struct act *p = mem_realloc(*x, c * sizeof(*p));
    if (p == NULL) {
        return false;
    }
    *x = p;
    *cap = c;
    return true;
}

/* The answer of acts x[0..n), then the abandoned members forgotten. */
static enum grpc_status
send_acts(struct stream *s, struct act *x, size_t n,
          const unsigned char **out, size_t *out_len, const char **why)
{
    enum grpc_status rc = n > 0 ? encode(s, x, n, out, out_len, why)
                                : GRPC_OK;
    for (size_t i = 0; i < n; i++) {
        if (x[i].abandon) {
            member_drop(s, x[i].m);
        }
    }
    mem_free(x);
    return rc;
}

void *
rlqs_open(void *caller_ctx, int32_t stream, int64_t now,
          enum grpc_status *refuse, const char **why)
{
    (void)caller_ctx;
    (void)stream;
    (void)now;
    struct stream *s = mem_calloc(1, sizeof(*s));
    if (s == NULL) {
        *refuse = GRPC_RESOURCE_EXHAUSTED;
        *why = "out of memory";
        return NULL;
    }
    s->members = (struct dict)DICT_SERVER;
    s->generation = mapping();
    s->dirty = true;
    TAILQ_INSERT_TAIL(&streams, s, link);
    stats.streams++;
    return s;
}

/* The stream's domain: set by its first report, the same (or empty)
 * after. GRPC_OK, or INVALID_ARGUMENT with *why. */
static enum grpc_status
take_domain(struct stream *s, const Reports *r, const char **why)
{
    if (s->domain == NULL) {
        if (r->domain[0] == '\0') {
            *why = "the first report of a stream must name its domain";
            return GRPC_INVALID_ARGUMENT;
        }
        size_t len = strlen(r->domain);
        s->domain = mem_malloc(len + 1);
        if (s->domain == NULL) {
            *why = "out of memory";
            return GRPC_RESOURCE_EXHAUSTED;
        }
        memcpy(s->domain, r->domain, len + 1);
        return GRPC_OK;
    }
    if (r->domain[0] != '\0' && strcmp(r->domain, s->domain) != 0) {
        *why = "a stream's domain cannot change (open another stream)";
        return GRPC_INVALID_ARGUMENT;
    }
    return GRPC_OK;
}

/* Read every usage of r (the first error ends the stream), then answer
 * each bucket in it with what its (new) split gives it. */
static enum grpc_status
report(struct stream *s, const Reports *r, const unsigned char **out,
       size_t *out_len, const char **why)
{
    struct act *x = NULL;
    size_t n = 0, cap = 0;
    enum grpc_status rc = GRPC_OK;
    int64_t t = now_ms();
    for (size_t i = 0; i < r->n_bucket_quota_usages && rc == GRPC_OK; i++) {
        struct member *m = read_usage(s, r->bucket_quota_usages[i], &rc, why);
        if (m == NULL) {
            break;
        }
        rc = GRPC_OK;
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++) {
            seen = x[j].m == m;
        }
        if (!seen && !acts_room(&x, n, &cap)) {
            rc = GRPC_RESOURCE_EXHAUSTED;
            *why = "out of memory";
        } else if (!seen) {
            x[n++].m = m;
        }
    }
    for (size_t i = 0; i < n && rc == GRPC_OK; i++) {
        if (x[i].m->kind == KIND_SHARED) {
            bucket_split(x[i].m->b);
        }
    }
    for (size_t i = 0; i < n && rc == GRPC_OK; i++) {
        choose(x[i].m, t, &x[i]);
    }
    if (rc != GRPC_OK) {
        n = 0;
    }
    enum grpc_status sent = send_acts(s, x, n, out, out_len, why);
    s->dirty = true;                    /* its next look: rlqs_due() */
    return rc != GRPC_OK ? rc : sent;
}

enum grpc_status
rlqs_message(void *st, const unsigned char *msg, size_t len, int64_t now,
             const unsigned char **out, size_t *out_len, const char **why)
{
    struct stream *s = st;
    (void)now;
    Reports *r =
        envoy__service__rate_limit_quota__v3__rate_limit_quota_usage_reports__unpack(
            NULL, len, msg);
    enum grpc_status rc;
    if (r == NULL) {
        *why = "the message is not a valid RateLimitQuotaUsageReports";
        return GRPC_INVALID_ARGUMENT;
    }
    stats.reports++;
    if ((rc = take_domain(s, r, why)) != GRPC_OK) {
        /* ended */
    } else if (named_limits_running() == NULL) {
        *why = "no rate limit configuration loaded";
        rc = GRPC_UNAVAILABLE;
    } else if (r->n_bucket_quota_usages == 0) {
        *why = "a report needs at least one bucket_quota_usage";
        rc = GRPC_INVALID_ARGUMENT;
    } else {
        remap_stream(s);
        rc = report(s, r, out, out_len, why);
    }
    envoy__service__rate_limit_quota__v3__rate_limit_quota_usage_reports__free_unpacked(
        r, NULL);
    return rc;
}

enum grpc_status
rlqs_due(void *st, int64_t now, const unsigned char **out, size_t *out_len,
         const char **why)
{
    struct stream *s = st;
    struct dict_iter it = { 0, NULL };
    struct dict_entry *e;
    struct act *x = NULL;
    size_t n = 0, cap = 0;
    int64_t t = now_ms();
    (void)now;
    int64_t next = INT64_MAX;
    if (s->domain == NULL || named_limits_running() == NULL ||
        (!s->dirty && t < s->next_ms &&
         s->generation == mapping())) {
        return GRPC_OK;                 /* nothing can be due: no walk */
    }
    remap_stream(s);
    s->dirty = false;
    while ((e = dict_next(&s->members, &it)) != NULL) {
        struct member *m = e->owner.p;
        if (push_due(m, t) && acts_room(&x, n, &cap)) {
            if (qs_stale(&m->q, t)) {
                bucket_leave(m);        /* its share goes to the others */
                m->kind = KIND_ABANDON;
            }
            choose(m, t, &x[n++]);
        }
        if (m->kind != KIND_ABANDON) {
            int64_t at = member_next_ms(m, t);
            next = at < next ? at : next;
        }
    }
    s->next_ms = next;
    s->dirty |= next <= t;
    return send_acts(s, x, n, out, out_len, why);
}

void
rlqs_close(void *st)
{
    struct stream *s = st;
    struct dict_iter it = { 0, NULL };
    struct dict_entry *e;
    while ((e = dict_next(&s->members, &it)) != NULL) {
        member_free(e->owner.p);
    }
    dict_free(&s->members);
    TAILQ_REMOVE(&streams, s, link);
    mem_free(s->domain);
    mem_free(s->out);
    mem_free(s);
    stats.streams--;
}

void
rlqs_stats_get(struct rlqs_stats *out)
{
    *out = stats;
}

const struct grpc_stream_service rlqs_stream = {
    RLQS_PATH, rlqs_open, rlqs_message, NULL, rlqs_due, rlqs_close
};
