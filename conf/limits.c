/*
 * limits.c - the named limits' tree and how a request finds its limit
 * (see limits.h); reading the YAML is limits_yaml.c.
 *
 * Each level keeps its exact entries (key, and key_value) sorted by
 * composite key, so a request's entry costs a binary search or two, and its
 * wildcard entries after them in file order, tried in that order as that
 * service tries them.
 */
#include "conf/limits.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    enum limits_unit unit;
    int64_t seconds;
} units[] = {
    { "second", LIMITS_SECOND, 1 },
    { "minute", LIMITS_MINUTE, 60 },
    { "hour", LIMITS_HOUR, 3600 },
    { "day", LIMITS_DAY, 86400 },
    { "week", LIMITS_WEEK, 7 * 86400 },
    { "month", LIMITS_MONTH, 30 * 86400 },
    { "year", LIMITS_YEAR, 365 * 86400 },
};

int64_t
limits_unit_seconds(enum limits_unit u)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (units[i].unit == u) {
            return units[i].seconds;
        }
    }
    return 0;
}

const char *
limits_unit_name(enum limits_unit u)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (units[i].unit == u) {
            return units[i].name;
        }
    }
    return "unknown";
}

enum limits_unit
limits_unit_parse(const char *s)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(units[i].name, s) == 0) {
            return units[i].unit;
        }
    }
    return LIMITS_UNIT_UNKNOWN;
}

/* ---- building -------------------------------------------------------- */

static void
free_rule(struct limits_rule *r)
{
    if (r == NULL) {
        return;
    }
    for (size_t i = 0; i < r->nreplaces; i++) {
        free(r->replaces[i]);
    }
    free(r->replaces);
    free(r->name);
    free(r->zone_name);
    if (r->calendar.zone != NULL) {
        tz_free((struct tz_zone *)r->calendar.zone);
    }
    free(r);
}

void
limits_meta_clear(struct limits_meta *m)
{
    for (size_t i = 0; i < m->nitems; i++) {
        limits_meta_clear(&m->items[i]);
    }
    free(m->items);
    free(m->key);
    free(m->string);
    memset(m, 0, sizeof(*m));
}

static void
limits_free_node(struct limits_node *n)
{
    if (n->metadata != NULL) {
        limits_meta_clear(n->metadata);
        free(n->metadata);
    }
    for (size_t i = 0; i < n->nchildren; i++) {
        limits_free_node(&n->children[i]);
    }
    free(n->children);
    free(n->key);
    free(n->value);
    free(n->composite);
    free_rule(n->rule);
}

void
limits_free(struct limits *l)
{
    if (l == NULL) {
        return;
    }
    for (size_t i = 0; i < l->ndomains; i++) {
        free(l->domains[i].name);
        limits_free_node(&l->domains[i].root);
    }
    for (size_t i = 0; i < l->nfiles; i++) {
        free(l->files[i]);
    }
    free(l->files);
    free(l->domains);
    free(l);
}

struct limits_domain *
limits_add_domain(struct limits *l, const char *name)
{
    struct limits_domain *d = realloc(l->domains,
                                      (l->ndomains + 1) * sizeof(*d));
    if (d == NULL) {
        return NULL;
    }
    l->domains = d;
    d = &l->domains[l->ndomains];
    memset(d, 0, sizeof(*d));
    d->name = strdup(name);
    if (d->name == NULL) {
        return NULL;
    }
    l->ndomains++;
    return d;
}

static int
by_composite(const void *a, const void *b)
{
    const struct limits_node *x = a, *y = b;
    /* Wildcards after every exact entry, in file order (qsort is not
     * stable, so their line breaks ties). */
    if (x->wildcard != y->wildcard) {
        return x->wildcard ? 1 : -1;
    }
    if (x->wildcard) {
        return x->line < y->line ? -1 : x->line > y->line;
    }
    return strcmp(x->composite, y->composite);
}

int
limits_finish_node(struct limits_node *n, const char *path,
                   const struct limits_node **at, char *why, size_t whylen)
{
    qsort(n->children, n->nchildren, sizeof(*n->children), by_composite);
    n->nexact = 0;
    while (n->nexact < n->nchildren && !n->children[n->nexact].wildcard) {
        n->nexact++;
    }
    /* Duplicates sit side by side among the exact entries; wildcards are
     * compared pairwise (there are few). */
    for (size_t i = 1; i < n->nchildren; i++) {
        for (size_t j = i < n->nexact ? i - 1 : n->nexact; j < i; j++) {
            if (strcmp(n->children[i].composite,
                       n->children[j].composite) == 0) {
                *at = &n->children[i];
                snprintf(why, whylen, "duplicate descriptor composite key "
                         "'%s.%s'", path, n->children[i].composite);
                return -1;
            }
        }
    }
    return 0;
}

/* ---- matching -------------------------------------------------------- */

bool
limits_wildcard_match(const char *pattern, const char *s, size_t len)
{
    /* Literal runs in order: the first anchored at the start, the last
     * at the end, the ones between at their leftmost place. */
    const char *star = strchr(pattern, '*');
    if (star == NULL) {
        return strlen(pattern) == len && memcmp(pattern, s, len) == 0;
    }
    size_t head = (size_t)(star - pattern);
    if (head > len || memcmp(pattern, s, head) != 0) {
        return false;
    }
    const char *last = strrchr(pattern, '*');
    size_t tail = strlen(last + 1);
    if (head + tail > len || memcmp(last + 1, s + len - tail, tail) != 0) {
        return false;
    }
    size_t at = head, end = len - tail;
    for (const char *p = star + 1; p < last;) {
        const char *next = strchr(p, '*');
        size_t run = (size_t)(next - p);
        bool found = false;
        while (!found && at + run <= end) {
            found = memcmp(s + at, p, run) == 0;
            at += found ? run : 1;
        }
        if (!found) {
            return false;
        }
        p = next + 1;
    }
    return true;
}

/* In an array of n elements of size bytes sorted by the string at
 * name_off in each, the element whose string is s (len bytes), or NULL. */
static const void *
find_sorted(const void *base, size_t n, size_t size, size_t name_off,
            const char *s, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *elem = (const char *)base + mid * size;
        const char *name = *(char *const *)(elem + name_off);
        size_t nlen = strlen(name);
        int cmp = memcmp(name, s, nlen < len ? nlen : len);
        if (cmp == 0) {
            cmp = nlen < len ? -1 : nlen > len;
        }
        if (cmp == 0) {
            return elem;
        }
        if (cmp < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* The exact child with composite key s (len bytes), or NULL. */
static const struct limits_node *
find_exact(const struct limits_node *n, const char *s, size_t len)
{
    return find_sorted(n->children, n->nexact, sizeof(*n->children),
                       offsetof(struct limits_node, composite), s, len);
}

static const struct limits_node *
find_wildcard(const struct limits_node *n, const char *s, size_t len)
{
    for (size_t i = n->nexact; i < n->nchildren; i++) {
        if (limits_wildcard_match(n->children[i].composite, s, len)) {
            return &n->children[i];
        }
    }
    return NULL;
}

static const struct limits_domain *
limits_domain(const struct limits *l, const char *name, size_t len)
{
    return find_sorted(l->domains, l->ndomains, sizeof(*l->domains),
                       offsetof(struct limits_domain, name), name, len);
}

/* One level: key_value exactly, then the wildcards, then key alone. buf
 * holds key_value (built by the caller). */
static const struct limits_node *
match_level(const struct limits_node *n, const struct limits_entry *e,
            const char *kv, size_t kvlen)
{
    const struct limits_node *c = find_exact(n, kv, kvlen);
    if (c == NULL) {
        c = find_wildcard(n, kv, kvlen);
    }
    if (c == NULL) {
        c = find_exact(n, e->key, e->klen);
    }
    return c;
}

void
limits_match(const struct limits *l, const char *domain, size_t dlen,
             const struct limits_entry *e, size_t n, struct limits_match *m)
{
    char small[512];
    memset(m, 0, sizeof(*m));
    const struct limits_domain *d = l != NULL ? limits_domain(l, domain, dlen)
                                              : NULL;
    m->domain_found = d != NULL;
    if (d == NULL || n == 0 || n > LIMITS_MAX_DEPTH) {
        return;
    }
    const struct limits_node *level = &d->root;
    for (size_t i = 0; i < n; i++) {
        size_t kvlen = e[i].klen + 1 + e[i].vlen;
        char *kv = kvlen <= sizeof(small) ? small : malloc(kvlen);
        if (kv == NULL) {
            return;                     /* no memory: no limit */
        }
        memcpy(kv, e[i].key, e[i].klen);
        kv[e[i].klen] = '_';
        memcpy(kv + e[i].klen + 1, e[i].value, e[i].vlen);
        const struct limits_node *c = match_level(level, &e[i], kv, kvlen);
        if (kv != small) {
            free(kv);
        }
        if (c == NULL) {
            return;
        }
        m->path[i] = c;
        if (c->share_threshold && c->wildcard && c->value != NULL) {
            m->shared[i] = c->value;
        }
        if (i == n - 1) {
            m->leaf = c->rule != NULL ? c : NULL;
            return;
        }
        if (c->nchildren == 0) {
            return;
        }
        level = c;
    }
}

/* The first of the unused entries e[0..n) that level matches by
 * key_value (exactly or a wildcard), else by key alone; -1 when none. */
static long
order_pick(const struct limits_node *level, const struct limits_entry *e,
           size_t n, const bool *used)
{
    for (int by_key = 0; by_key < 2; by_key++) {
        for (size_t i = 0; i < n; i++) {
            if (used[i]) {
                continue;
            }
            if (by_key) {
                if (find_exact(level, e[i].key, e[i].klen) != NULL) {
                    return (long)i;
                }
                continue;
            }
            size_t kvlen = e[i].klen + 1 + e[i].vlen;
            char *kv = malloc(kvlen);
            if (kv == NULL) {
                return -1;
            }
            memcpy(kv, e[i].key, e[i].klen);
            kv[e[i].klen] = '_';
            memcpy(kv + e[i].klen + 1, e[i].value, e[i].vlen);
            bool hit = find_exact(level, kv, kvlen) != NULL ||
                       find_wildcard(level, kv, kvlen) != NULL;
            free(kv);
            if (hit) {
                return (long)i;
            }
        }
    }
    return -1;
}

size_t
limits_order_entries(const struct limits *l, const char *domain, size_t dlen,
                     const struct limits_entry *e, size_t n, size_t *order)
{
    bool used[LIMITS_MAX_UNORDERED] = { false };
    const struct limits_domain *d = l != NULL ? limits_domain(l, domain, dlen)
                                              : NULL;
    size_t depth = 0;
    if (d == NULL || n > sizeof(used) / sizeof(used[0])) {
        return 0;
    }
    const struct limits_node *level = &d->root;
    while (depth < LIMITS_MAX_DEPTH && level->nchildren > 0) {
        long i = order_pick(level, e, n, used);
        if (i < 0) {
            break;
        }
        used[i] = true;
        order[depth++] = (size_t)i;
        struct limits_match m;
        struct limits_entry path[LIMITS_MAX_DEPTH];
        for (size_t j = 0; j < depth; j++) {
            path[j] = e[order[j]];
        }
        limits_match(l, domain, dlen, path, depth, &m);
        level = m.path[depth - 1];
        if (level == NULL) {
            break;
        }
    }
    return depth;
}

static void
visit_node(const struct limits_domain *d, const struct limits_node *n,
           const struct limits_node **path, size_t depth,
           limits_visit_fn fn, void *ctx)
{
    if (depth >= LIMITS_MAX_DEPTH) {
        return;                     /* no request reaches deeper */
    }
    path[depth] = n;
    if (n->rule != NULL && !n->rule->unlimited) {
        fn(ctx, d, path, depth + 1);
    }
    for (size_t i = 0; i < n->nchildren; i++) {
        visit_node(d, &n->children[i], path, depth + 1, fn, ctx);
    }
}

void
limits_each_rule(const struct limits *l, limits_visit_fn fn, void *ctx)
{
    const struct limits_node *path[LIMITS_MAX_DEPTH];
    for (size_t i = 0; l != NULL && i < l->ndomains; i++) {
        const struct limits_node *top = &l->domains[i].root;
        for (size_t j = 0; j < top->nchildren; j++) {
            visit_node(&l->domains[i], &top->children[j], path, 0, fn, ctx);
        }
    }
}
