/*
 * named_limits.c - the running named limits and their decisions (see
 * named_limits.h).
 *
 * A request is decided in two passes, as envoyproxy/ratelimit does: first
 * every descriptor finds its rule (so "replaces" can drop the rules that
 * another descriptor of the same request replaces), then each remaining
 * rule decides on its counter.
 */
#include "server/envoy/named_limits.h"

#include <stdio.h>
#include <string.h>

#include "algorithms/fixed_window.h"
#include "algorithms/gcra.h"
#include "algorithms/sliding_window.h"
#include "lib/mem.h"
#include "lib/textbuf.h"
#include "lib/time.h"
#include "lib/tzdb.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/envoy/rl_stats.h"
#include "server/server.h"

static struct limits *running;
static uint64_t generation;             /* running's changes */
static char no_name[1];                 /* an override's rule has none */

static int
load(struct limits **out, char *err, size_t errlen)
{
    if (srv.conf.limits_file[0] == '\0') {
        *out = NULL;
        return 0;
    }
    if (limits_load(srv.conf.limits_file, out, err, errlen) != 0) {
        return -1;
    }
    log_notice("Loaded %zu limit%s in %zu domain%s from %s", (*out)->nrules,
               (*out)->nrules == 1 ? "" : "s", (*out)->ndomains,
               (*out)->ndomains == 1 ? "" : "s", srv.conf.limits_file);
    return 0;
}

int
named_limits_setup(char *err, size_t errlen)
{
    named_limits_teardown();
    return load(&running, err, errlen);
}

int
named_limits_reload(char *err, size_t errlen)
{
    struct limits *l;
    tzdb_flush();                   /* RL.FIXED's zones read anew, always */
    if (srv.conf.limits_file[0] == '\0') {
        snprintf(err, errlen, "limits-file is not set");
        return -1;
    }
    if (load(&l, err, errlen) != 0) {
        log_warning("Limits NOT reloaded, the running ones stay: %s", err);
        return -1;
    }
    limits_free(running);
    running = l;
    generation++;
    rl_stats_reset();               /* their keys are the old file's */
    return 0;
}

int
named_limits_load_new(struct limits **out, char *err, size_t errlen)
{
    return load(out, err, errlen);
}

void
named_limits_install(struct limits *l)
{
    limits_free(running);
    running = l;
    generation++;
    rl_stats_reset();               /* their keys are the old file's */
    tzdb_flush();                   /* RL.FIXED's zones read anew too */
}

uint64_t
named_limits_generation(void)
{
    return generation;
}

const struct limits *
named_limits_running(void)
{
    return running;
}

void
named_limits_teardown(void)
{
    limits_free(running);
    running = NULL;
    generation++;
    rl_stats_reset();
    tzdb_flush();
}

/* ---- one descriptor ----------------------------------------------------- */

/* The rule a descriptor gets: Envoy's override (a plain fixed window, as
 * that service builds one) or the matched node's. */
struct pick {
    const struct limits_rule *rule;     /* NULL: no limit */
    bool shadow;
    bool quota;                         /* the leaf's quota_mode */
    struct limits_rule override;
    struct limits_match m;
};

static void
pick_rule(const char *domain, size_t dlen, const struct nl_descriptor *d,
          struct pick *p)
{
    memset(p, 0, sizeof(*p));
    limits_match(running, domain, dlen, d->entries, d->n, &p->m);
    if (d->has_override && p->m.domain_found &&
        limits_unit_seconds(d->override_unit) > 0) {
        p->override.requests_per_unit = d->override_requests;
        p->override.unit = d->override_unit;
        p->override.name = no_name;
        p->rule = &p->override;
        return;
    }
    if (p->m.leaf != NULL) {
        p->rule = p->m.leaf->rule;
        p->shadow = p->m.leaf->shadow_mode;
        p->quota = p->m.leaf->quota_mode;
    }
}

/* A name built for one decision: on the stack when short (most are),
 * else in memory that grows; oom is sticky. */
struct name {
    char *p;
    size_t len, cap;
    bool oom;
    char small[256];
};

static void
name_init(struct name *n)
{
    n->p = n->small;
    n->len = 0;
    n->cap = sizeof(n->small);
    n->oom = false;
}

static void
name_add(struct name *n, const char *s, size_t len)
{
    if (n->oom) {
        return;
    }
    if (n->len + len > n->cap) {
        size_t cap = (n->len + len) * 2;
        char *p = n->p == n->small ? mem_malloc(cap) : mem_realloc(n->p, cap);
        if (p == NULL) {
            n->oom = true;
            return;
        }
        if (n->p == n->small) {
            memcpy(p, n->small, n->len);
        }
        n->p = p;
        n->cap = cap;
    }
    memcpy(n->p + n->len, s, len);
    n->len += len;
}

static void
name_free(struct name *n)
{
    if (n->p != n->small) {
        mem_free(n->p);
    }
}

/* "<domain>_<key>_<value>..." (a share_threshold pattern stands for the
 * value it matched). */
static void
counter_name(struct name *t, const char *domain, size_t dlen,
             const struct nl_descriptor *d, const struct limits_match *m)
{
    name_add(t, domain, dlen);
    for (size_t i = 0; i < d->n; i++) {
        const struct limits_entry *e = &d->entries[i];
        name_add(t, "_", 1);
        name_add(t, e->key, e->klen);
        name_add(t, "_", 1);
        if (i < LIMITS_MAX_DEPTH && m->shared[i] != NULL) {
            name_add(t, m->shared[i], strlen(m->shared[i]));
        } else {
            name_add(t, e->value, e->vlen);
        }
    }
}

/* The key's record if it holds type; another type (the limit changed its
 * algorithm) is dropped, unless peeking, and counts as absent. */
static struct store_rec *
lookup(struct key_hint *h, const struct name *key, uint8_t type,
       bool peek, int64_t now)
{
    struct store_rec *r = keyspace_lookup_write(h, key->p, key->len, now);
    if (r != NULL && r->type != type) {
        if (!peek) {
            keyspace_delete(r);
        }
        return NULL;
    }
    return r;
}

static int64_t
clamp_i64(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static uint32_t
clamp_u32(int64_t v)
{
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The calendar a rule's windows follow; NULL for plain units. */
static const struct cal_spec *
rule_calendar(const struct limits_rule *r)
{
    return r->zone_name != NULL ? &r->calendar : NULL;
}

/* Until the end of the unit's window holding now: epoch-aligned units, or
 * the rule's calendar. */
static int64_t
window_reset_ns(const struct limits_rule *r, int64_t now)
{
    int64_t unit_ns = limits_unit_seconds(r->unit) * NS_PER_SEC;
    int64_t start, end;
    if (rule_calendar(r) == NULL) {
        return unit_ns - now % unit_ns;
    }
    cal_window(&r->calendar, now / NS_PER_SEC, &start, &end);
    return end > INT64_MAX / NS_PER_SEC ? INT64_MAX
                                        : end * NS_PER_SEC - now;
}

/* A fixed window or a sliding window: the state machines with RL.FIXED's
 * and RL.SLIDING's contract. false when the state found no room. */
static bool
decide_window(const struct limits_rule *r, const struct name *key,
              int64_t cost, bool peek, int64_t now, struct limit_decision *d)
{
    struct key_hint h = { false, 0 };
    int64_t window = limits_unit_seconds(r->unit);
    bool fixed = r->algo == LIMITS_FIXED_WINDOW;
    uint8_t type = fixed ? KEY_FIXED : KEY_SLIDING;
    struct store_rec *rec = lookup(&h, key, type, peek, now);
    const void *st = rec != NULL ? store_rec_state(rec) : NULL;
    enum limit_status s;
    union {
        struct fwin_state f;
        struct swin_state s;
    } next;
    if (fixed) {
        struct fwin_params p = { r->requests_per_unit, window, cost, true,
                                 rule_calendar(r) };
        s = fwin_apply(&p, rec != NULL, st, now, &next.f, d);
    } else {
        struct swin_params p = { r->requests_per_unit, window, cost };
        s = swin_apply(&p, rec != NULL, st, now, &next.s, d);
    }
    if (s != LIMIT_OK) {
        d->limited = true;      /* a cost too large to count: refused */
        d->remaining = 0;
        d->retry_after_ns = -1;
        return true;
    }
    return peek || keyspace_store_state(&h, key->p, key->len, rec, type,
                                        &next, fixed ? sizeof(next.f)
                                                     : sizeof(next.s),
                                        d->fresh_at, now);
}

static int64_t
ns_of(gcra_ns_t v)
{
    return v > INT64_MAX ? INT64_MAX : v < 0 ? -1 : (int64_t)v;
}

/* CL.THROTTLE's GCRA: requests_per_unit per unit, bursts of as many; a
 * cost below 0 gives tokens back. */
static bool
decide_gcra(const struct limits_rule *r, const struct name *key,
            int64_t cost, bool peek, int64_t now, struct limit_decision *d)
{
    struct key_hint h = { false, 0 };
    /* -INT64_MAX at the least (clamp_i64): its opposite fits. */
    struct gcra_params p = { (int64_t)r->requests_per_unit - 1,
                             r->requests_per_unit,
                             limits_unit_seconds(r->unit),
                             cost < 0 ? -cost : cost };
    struct gcra_decision g;
    struct store_rec *rec = keyspace_lookup_write(&h, key->p, key->len, now);
    uint64_t tat = 0;
    if (rec != NULL && keytype_gcra_tat(rec, &tat) != KS_TAT_OK) {
        /* Not a TAT: as a key of another type, it gives way. */
        if (!peek) {
            keyspace_delete(rec);
        }
        rec = NULL;
    }
    if (cost < 0) {
        gcra_give_back(&p, rec != NULL, tat, now, &g);
    } else {
        gcra_throttle(&p, rec != NULL, tat, now, &g);
    }
    d->limited = g.limited;
    d->limit = g.limit;
    d->remaining = g.remaining;
    d->retry_after_ns = g.limited ? ns_of(g.retry_after_ns) : -1;
    d->reset_after_ns = ns_of(g.reset_after_ns);
    return peek || !g.store ||
           keyspace_store_gcra(&h, key->p, key->len, rec, g.new_tat,
                               g.ttl_ms, now);
}

/* The signed cost of descriptor d: its hits, or (is_negative_hits) as
 * many given back, which every algorithm floors at an empty count. */
static int64_t
cost_of(const struct nl_descriptor *d)
{
    int64_t hits = clamp_i64(d->hits);
    return d->negative ? -hits : hits;
}

/* Status of descriptor d, whose rule r decides. false: no room. */
static bool
decide(const struct limits_rule *r, bool shadow, const struct name *key,
       const struct nl_descriptor *in, bool peek, int64_t now,
       struct nl_status *st)
{
    struct limit_decision d = { true, r->requests_per_unit, 0, -1, 0, 0 };
    int64_t cost = cost_of(in);
    bool ok = true;
    if (r->requests_per_unit > 0) {     /* 0 refuses all: no state */
        ok = r->algo == LIMITS_GCRA
             ? decide_gcra(r, key, cost, peek, now, &d)
             : decide_window(r, key, cost, peek, now, &d);
    }
    if (in->negative) {
        d.limited = false;              /* giving back is always OK */
        d.retry_after_ns = -1;
    }
    st->has_limit = true;
    st->unlimited = false;
    st->requests_per_unit = r->requests_per_unit;
    st->unit = r->unit;
    st->name = r->name;
    st->remaining = clamp_u32(d.remaining);
    /* That service's reset is the end of the unit's window; the other
     * algorithms say when the key is full again. */
    st->reset_ns = r->algo == LIMITS_FIXED_WINDOW || r->requests_per_unit == 0
                   ? window_reset_ns(r, now) : d.reset_after_ns;
    st->retry_ns = d.limited ? (r->algo == LIMITS_FIXED_WINDOW &&
                                d.retry_after_ns >= 0 ? st->reset_ns
                                                      : d.retry_after_ns)
                             : -1;
    /* Shadow mode answers OK and keeps remaining at 0. */
    st->exceeded = d.limited;
    st->code = d.limited && !shadow ? NL_OVER_LIMIT : NL_OK;
    st->has_share = false;              /* RLQS's owner says (rlqs.c) */
    st->share_milli = 0;
    return ok;
}

/* ---- statistics ------------------------------------------------------------ */

/* The stats key of a decided descriptor, as that service names it: the
 * matched path (key, key_value, or the wildcard pattern), request values
 * where detailed_metric (on the leaf) or value_to_metric (on a level) ask
 * for them, the pattern for share_threshold; an override's: the entries. */
static void
stats_key(struct name *t, const struct nl_descriptor *d,
          const struct pick *p)
{
    bool detailed = p->m.leaf != NULL && p->m.leaf->detailed_metric;
    for (size_t i = 0; i < d->n; i++) {
        const struct limits_entry *e = &d->entries[i];
        const struct limits_node *node = p->rule == &p->override
                                         ? NULL : p->m.path[i];
        if (i > 0) {
            name_add(t, ".", 1);
        }
        if (node != NULL && p->m.shared[i] != NULL) {
            name_add(t, e->key, e->klen);
            name_add(t, "_", 1);
            name_add(t, p->m.shared[i], strlen(p->m.shared[i]));
        } else if (node != NULL && !detailed && !node->value_to_metric) {
            name_add(t, node->composite, strlen(node->composite));
        } else {
            name_add(t, e->key, e->klen);
            if (e->vlen > 0 || detailed) {
                name_add(t, "_", 1);
                name_add(t, e->value, e->vlen);
            }
        }
    }
}

/* What one decision adds to the counters, with that service's split of
 * a request across the near-limit mark (80 %) and the limit. */
static void
stats_delta(const struct limits_rule *r, bool shadow, uint64_t hits,
            bool negative, const struct nl_status *st,
            struct rl_stats_delta *c)
{
    uint64_t limit = r->requests_per_unit, before, after;
    uint64_t near = (uint64_t)((float)limit * 0.8f);
    memset(c, 0, sizeof(*c));
    if (negative) {
        c->total_negative_hits = hits;
        return;
    }
    c->total_hits = hits;
    if (st->exceeded) {
        before = limit > st->remaining ? limit - st->remaining : 0;
        after = before + hits;
        c->over_limit = before >= limit ? hits : after - limit;
        if (before < limit) {
            c->near_limit = limit - (near > before ? near : before);
        }
        c->shadow_mode = shadow ? c->over_limit : 0;
        return;
    }
    after = limit - st->remaining;
    before = after > hits ? after - hits : 0;
    c->within_limit = hits;
    if (after > near) {
        c->near_limit = before >= near ? hits : after - near;
    }
}

static void
count(const char *domain, size_t dlen, const struct nl_descriptor *d,
      const struct pick *p, const struct nl_status *st)
{
    struct name key;
    struct rl_stats_delta c;
    name_init(&key);
    stats_key(&key, d, p);
    stats_delta(p->rule, p->shadow, d->hits, d->negative, st, &c);
    if (!key.oom) {
        rl_stats_add(domain, dlen, key.p, key.len, &c);
    }
    name_free(&key);
}

/* ---- a request ------------------------------------------------------------ */

/* Is a rule named name replaced by another rule of the request? */
static bool
replaced(const struct pick *p, size_t n, const char *name)
{
    for (size_t i = 0; name[0] != '\0' && i < n; i++) {
        const struct limits_rule *r = p[i].rule;
        for (size_t j = 0; r != NULL && j < r->nreplaces; j++) {
            if (strcmp(r->replaces[j], name) == 0) {
                return true;
            }
        }
    }
    return false;
}

static void
no_limit(struct nl_status *st, bool unlimited)
{
    memset(st, 0, sizeof(*st));
    st->code = NL_OK;
    st->name = "";
    st->unlimited = unlimited;
    st->remaining = unlimited ? UINT32_MAX : 0;
    st->retry_ns = -1;
}

/* The first pass of a request: every descriptor's rule. 0, or -1 with
 * err when there are no limits or too many descriptors. */
static int
pick_all(const char *domain, size_t dlen, const struct nl_descriptor *d,
         size_t n, struct pick *picks, char *err, size_t errlen)
{
    if (running == NULL) {
        snprintf(err, errlen, "no rate limit configuration loaded");
        return -1;
    }
    if (n > NL_MAX_DESCRIPTORS) {
        snprintf(err, errlen, "more than %d descriptors", NL_MAX_DESCRIPTORS);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        pick_rule(domain, dlen, &d[i], &picks[i]);
    }
    return 0;
}

/* Is a descriptor in quota mode, as envoyproxy/ratelimit counts it: its
 * limit's quota_mode or rls-quota-mode, whether or not a limit applies,
 * except an unlimited one, which counts for neither side. */
static bool
in_quota_mode(const struct pick *p)
{
    if (p->rule != NULL && p->rule->unlimited) {
        return false;
    }
    return srv.conf.rls_quota_mode || (p->rule != NULL && p->quota);
}

/* Does descriptor i decide on a counter (a limit applies, not replaced)? */
static bool
has_counter(const struct pick *picks, size_t n, size_t i)
{
    const struct limits_rule *r = picks[i].rule;
    return r != NULL && !r->unlimited && !replaced(picks, n, r->name);
}

/* The metadata dynamic_metadata reports for descriptor i when it passes:
 * its file limit's, as envoyproxy/ratelimit's RateLimit.Metadata (an
 * override, an unlimited or a replaced limit has none there). */
static const struct limits_meta *
limit_metadata(const struct pick *picks, size_t n, size_t i)
{
    const struct pick *p = &picks[i];
    if (p->rule == &p->override || p->m.leaf == NULL ||
        !has_counter(picks, n, i)) {
        return NULL;
    }
    return p->m.leaf->metadata;
}

int
named_limits_counters(const char *domain, size_t dlen,
                      const struct nl_descriptor *d, size_t n,
                      struct textbuf *names, struct nl_counter *out,
                      char *err, size_t errlen)
{
    struct pick picks[NL_MAX_DESCRIPTORS];
    if (pick_all(domain, dlen, d, n, picks, err, errlen) != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct name key;
        name_init(&key);
        counter_name(&key, domain, dlen, &d[i], &picks[i].m);
        out[i].decides = has_counter(picks, n, i);
        out[i].off = names->len;
        out[i].len = key.len;
        textbuf_append(names, key.p, key.len);
        bool oom = key.oom;
        name_free(&key);
        if (oom || names->oom) {
            snprintf(err, errlen, "OOM");
            return -1;
        }
    }
    return 0;
}

int
named_limits_describe(const char *domain, size_t dlen,
                      const struct nl_descriptor *d, struct nl_rule *out,
                      struct textbuf *counter, char *err, size_t errlen)
{
    struct pick p;
    memset(out, 0, sizeof(*out));
    if (pick_all(domain, dlen, d, 1, &p, err, errlen) != 0) {
        return -1;
    }
    out->domain_found = p.m.domain_found;
    if (p.rule == NULL) {
        return 0;
    }
    out->has_limit = true;
    out->unlimited = p.rule->unlimited;
    out->shadow = p.shadow;
    out->requests_per_unit = p.rule->requests_per_unit;
    out->unit = p.rule->unit;
    out->unit_s = limits_unit_seconds(p.rule->unit);
    out->rlqs = p.rule->rlqs;
    struct name key;
    name_init(&key);
    counter_name(&key, domain, dlen, d, &p.m);
    textbuf_append(counter, key.p, key.len);
    bool oom = key.oom || counter->oom;
    name_free(&key);
    if (oom) {
        snprintf(err, errlen, "OOM");
        return -1;
    }
    return 0;
}

int
named_limits_check(const char *domain, size_t dlen,
                   const struct nl_descriptor *d, size_t n,
                   const bool *skip, bool peek, int64_t now,
                   struct nl_status *out, enum nl_code *overall, char *err,
                   size_t errlen)
{
    struct pick picks[NL_MAX_DESCRIPTORS];
    *overall = NL_OK;
    if (pick_all(domain, dlen, d, n, picks, err, errlen) != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const struct limits_rule *r = picks[i].rule;
        if (skip != NULL && skip[i]) {
            continue;                   /* decided by another node */
        }
        if (!has_counter(picks, n, i)) {
            no_limit(&out[i], r != NULL && r->unlimited);
            continue;
        }
        struct name key;
        name_init(&key);
        counter_name(&key, domain, dlen, &d[i], &picks[i].m);
        bool ok = !key.oom && decide(r, picks[i].shadow, &key, &d[i], peek,
                                     now, &out[i]);
        name_free(&key);
        if (!ok) {
            snprintf(err, errlen, "OOM");
            return -1;
        }
        if (!peek) {
            count(domain, dlen, &d[i], &picks[i], &out[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        out[i].quota = in_quota_mode(&picks[i]);
        out[i].meta = limit_metadata(picks, n, i);
    }
    *overall = named_limits_overall(out, n);
    return 0;
}

enum nl_code
named_limits_overall(const struct nl_status *st, size_t n)
{
    size_t quota = 0, quota_over = 0;
    for (size_t i = 0; i < n; i++) {
        bool over = st[i].code == NL_OVER_LIMIT;
        if (over && !st[i].quota) {
            return NL_OVER_LIMIT;
        }
        quota += st[i].quota;
        quota_over += st[i].quota && over;
    }
    return quota > 0 && quota_over == quota ? NL_OVER_LIMIT : NL_OK;
}

enum nl_code
named_limits_global_shadow(enum nl_code overall)
{
    if (overall != NL_OVER_LIMIT || !srv.conf.rls_shadow_mode) {
        return overall;
    }
    rl_stats_global_shadow();
    return NL_OK;
}
