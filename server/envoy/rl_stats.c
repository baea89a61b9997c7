/*
 * rl_stats.c - the named limits' counters (see rl_stats.h): a lib/dict
 * from (domain, key) to the place of its counters in an array kept in
 * the order they were first counted (so the scrape is stable), growing
 * by doubling to RL_STATS_MAX keys (plus the "__other__" ones). The dict
 * is of the server's memory (used_memory, not keys') and keyed SipHash
 * with the process's seed: request values reach stats keys, and nobody
 * can pile them into one bucket.
 */
#include "server/envoy/rl_stats.h"

#include <stdbool.h>
#include <string.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "lib/textbuf.h"

/* A counted name: its entry in names, whose key is the domain's length
 * (a uint32_t), the domain and the key, so no two pairs share one. */
struct entry {
    const struct dict_entry *name;
    struct rl_stats_delta c;
};

static struct dict names = DICT_SERVER;  /* -> index into entries (value) */
static struct entry *entries;            /* in first-counted order */
static size_t nentries, capentries;
static struct membuf lookup;             /* the last name looked up */
static uint64_t global_shadow_mode;      /* rl_stats_global_shadow() */

/* The dict key of (d, k) into lookup; false without memory. */
static bool
make_name(const char *d, size_t dlen, const char *k, size_t klen)
{
    uint32_t l = (uint32_t)dlen;
    lookup.len = 0;
    return dlen <= UINT32_MAX && membuf_put(&lookup, &l, sizeof(l)) &&
           membuf_put(&lookup, d, dlen) && membuf_put(&lookup, k, klen) &&
           lookup.len <= UINT32_MAX;
}

/* Room for one more entry: the array grows by doubling, from 64 entries.
 * false without memory. */
static bool
room(void)
{
    if (nentries < capentries) {
        return true;
    }
    size_t ncap = capentries ? capentries * 2 : 64;
    struct entry *e = mem_realloc(entries, ncap * sizeof(*e));
    if (e == NULL) {
        return false;
    }
    entries = e;
    capentries = ncap;
    return true;
}

/* The entry of (d, k), added when there is room (limit: the key limit,
 * or twice it for "__other__" entries); NULL otherwise. */
static struct entry *
find(const char *d, size_t dlen, const char *k, size_t klen, size_t limit)
{
    if (!make_name(d, dlen, k, klen)) {
        return NULL;
    }
    const struct dict_entry *e = dict_find(&names, lookup.p, lookup.len);
    uint32_t i;
    if (e != NULL) {
        memcpy(&i, dict_value(e), sizeof(i));
        return &entries[i];
    }
    if (nentries >= limit || !room()) {
        return NULL;
    }
    i = (uint32_t)nentries;
    e = dict_add(&names, lookup.p, (uint32_t)lookup.len, &i, sizeof(i));
    if (e == NULL) {
        return NULL;
    }
    entries[nentries++] = (struct entry){ .name = e };
    return &entries[i];
}

void
rl_stats_add(const char *domain, size_t dlen, const char *key, size_t klen,
             const struct rl_stats_delta *d)
{
    static const char other[] = "__other__";
    struct entry *e = find(domain, dlen, key, klen, RL_STATS_MAX);
    if (e == NULL) {
        e = find(domain, dlen, other, sizeof(other) - 1, 2 * RL_STATS_MAX);
    }
    if (e == NULL) {
        return;
    }
    e->c.total_hits += d->total_hits;
    e->c.over_limit += d->over_limit;
    e->c.near_limit += d->near_limit;
    e->c.within_limit += d->within_limit;
    e->c.shadow_mode += d->shadow_mode;
    e->c.total_negative_hits += d->total_negative_hits;
}

void
rl_stats_global_shadow(void)
{
    global_shadow_mode++;
}

void
rl_stats_reset(void)
{
    dict_free(&names);
    mem_free(entries);
    mem_free(lookup.p);
    entries = NULL;
    nentries = capentries = 0;
    lookup = (struct membuf){ NULL, 0, 0 };
}

static uint64_t
counter(const struct rl_stats_delta *c, size_t n)
{
    switch (n) {
    case 0: return c->total_hits;
    case 1: return c->over_limit;
    case 2: return c->near_limit;
    case 3: return c->within_limit;
    case 4: return c->shadow_mode;
    default: return c->total_negative_hits;
    }
}

/* One series: e's counter n under its domain and key. */
static void
series(struct textbuf *b, const char *family, const struct entry *e,
       size_t n)
{
    const unsigned char *p = dict_key(e->name);
    uint32_t dlen;
    memcpy(&dlen, p, sizeof(dlen));
    const char *domain = (const char *)p + sizeof(dlen);
    textbuf_printf(b, "ratelimit_service_rate_limit_%s{domain=\"", family);
    textbuf_label(b, domain, dlen);
    textbuf_printf(b, "\",key=\"");
    textbuf_label(b, domain + dlen, e->name->klen - sizeof(dlen) - dlen);
    textbuf_printf(b, "\"} %llu\n", (unsigned long long)counter(&e->c, n));
}

void
rl_stats_render(struct textbuf *b)
{
    static const char *const families[] = { "total_hits", "over_limit",
                                            "near_limit", "within_limit",
                                            "shadow_mode",
                                            "total_negative_hits" };
    static const char *const help[] = {
        "Hits counted against named limits (hits_addend weighs).",
        "Hits over the limit (shadow mode included).",
        "Hits past the near-limit ratio (0.8) of the limit.",
        "Hits within the limit.",
        "Hits over a shadow-mode limit, answered OK.",
        "Units given back (Envoy's is_negative_hits)." };
    for (size_t n = 0; n < 6; n++) {
        textbuf_printf(b, "# HELP ratelimit_service_rate_limit_%s %s\n"
                       "# TYPE ratelimit_service_rate_limit_%s counter\n",
                       families[n], help[n], families[n]);
        for (size_t i = 0; i < nentries; i++) {
            series(b, families[n], &entries[i], n);
        }
    }
    textbuf_printf(b, "# HELP ratelimit_service_global_shadow_mode Requests "
                   "over a limit that rls-shadow-mode answered OK.\n"
                   "# TYPE ratelimit_service_global_shadow_mode counter\n"
                   "ratelimit_service_global_shadow_mode %llu\n",
                   (unsigned long long)global_shadow_mode);
}
