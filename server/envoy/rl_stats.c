/*
 * rl_stats.c - the named limits' counters (see rl_stats.h): an open
 * addressing table of (domain, key) -> counters, growing by doubling to
 * RL_STATS_MAX keys (plus the "__other__" ones), entries in the order
 * they were first counted (so the scrape is stable).
 */
#include "server/envoy/rl_stats.h"

#include <stdbool.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/siphash.h"
#include "server/server.h"
#include "lib/textbuf.h"

struct entry {
    char *domain;                   /* NUL-terminated copies */
    char *key;
    struct rl_stats_delta c;
};

static struct entry *entries;       /* in first-counted order */
static size_t nentries;
static uint32_t *slots;             /* index + 1 into entries; 0 = empty */
static size_t nslots;

/* Domains and descriptor keys come from callers: keyed as the key table
 * is (srv.seed), the domain's hash folded into the key of the second. */
static uint64_t
hash(const char *d, size_t dlen, const char *k, size_t klen)
{
    uint64_t k0, k1;
    siphash_key(srv.seed, &k0, &k1);
    uint64_t hd = siphash(k0, k1, d, dlen, 1, 3);
    return siphash(k0 ^ hd, k1, k, klen, 1, 3);
}

static bool
same(const struct entry *e, const char *d, size_t dlen, const char *k,
     size_t klen)
{
    return strlen(e->domain) == dlen && memcmp(e->domain, d, dlen) == 0 &&
           strlen(e->key) == klen && memcmp(e->key, k, klen) == 0;
}

static char *
copy(const char *s, size_t len)
{
    char *p = mem_malloc(len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static size_t
slot_of(const struct entry *e)
{
    size_t i = (size_t)(hash(e->domain, strlen(e->domain), e->key,
                             strlen(e->key)) % nslots);
    while (slots[i] != 0) {
        i = (i + 1) % nslots;
    }
    return i;
}

/* Room for one more entry, the slots at most half full: the table grows
 * by doubling, from 64 entries. false without memory. */
static bool
room(void)
{
    size_t cap = nslots / 2;
    if (nentries < cap) {
        return true;
    }
    size_t ncap = cap ? cap * 2 : 64;
    struct entry *e = mem_realloc(entries, ncap * sizeof(*e));
    if (e == NULL) {
        return false;
    }
    entries = e;
    uint32_t *fresh = mem_calloc(ncap * 2, sizeof(*fresh));
    if (fresh == NULL) {
        return false;
    }
    mem_free(slots);
    slots = fresh;
    nslots = ncap * 2;
    for (size_t i = 0; i < nentries; i++) {
        slots[slot_of(&entries[i])] = (uint32_t)(i + 1);
    }
    return true;
}

/* The entry of (d, k), added when there is room (cap: the key limit, or
 * twice it for "__other__" entries); NULL otherwise. */
static struct entry *
find(const char *d, size_t dlen, const char *k, size_t klen, size_t cap)
{
    if (nslots > 0) {
        size_t i = (size_t)(hash(d, dlen, k, klen) % nslots);
        for (; slots[i] != 0; i = (i + 1) % nslots) {
            struct entry *e = &entries[slots[i] - 1];
            if (same(e, d, dlen, k, klen)) {
                return e;
            }
        }
    }
    if (nentries >= cap || !room()) {
        return NULL;
    }
    struct entry *e = &entries[nentries];
    memset(e, 0, sizeof(*e));
    e->domain = copy(d, dlen);
    e->key = copy(k, klen);
    if (e->domain == NULL || e->key == NULL) {
        mem_free(e->domain);
        mem_free(e->key);
        return NULL;
    }
    nentries++;
    slots[slot_of(e)] = (uint32_t)nentries;
    return e;
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
}

void
rl_stats_reset(void)
{
    for (size_t i = 0; i < nentries; i++) {
        mem_free(entries[i].domain);
        mem_free(entries[i].key);
    }
    mem_free(entries);
    mem_free(slots);
    entries = NULL;
    slots = NULL;
    nentries = 0;
    nslots = 0;
}

/* A label value with \, " and newline escaped. */
static void
label(struct textbuf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"') {
            textbuf_printf(b, "\\%c", *s);
        } else if (*s == '\n') {
            textbuf_printf(b, "\\n");
        } else {
            textbuf_append(b, s, 1);
        }
    }
}

static uint64_t
counter(const struct rl_stats_delta *c, size_t n)
{
    switch (n) {
    case 0: return c->total_hits;
    case 1: return c->over_limit;
    case 2: return c->near_limit;
    case 3: return c->within_limit;
    default: return c->shadow_mode;
    }
}

void
rl_stats_render(struct textbuf *b)
{
    static const char *const names[] = { "total_hits", "over_limit",
                                         "near_limit", "within_limit",
                                         "shadow_mode" };
    static const char *const help[] = {
        "Hits counted against named limits (hits_addend weighs).",
        "Hits over the limit (shadow mode included).",
        "Hits past the near-limit ratio (0.8) of the limit.",
        "Hits within the limit.",
        "Hits over a shadow-mode limit, answered OK." };
    for (size_t n = 0; n < 5; n++) {
        textbuf_printf(b, "# HELP ratelimit_service_rate_limit_%s %s\n"
                       "# TYPE ratelimit_service_rate_limit_%s counter\n",
                       names[n], help[n], names[n]);
        for (size_t i = 0; i < nentries; i++) {
            textbuf_printf(b, "ratelimit_service_rate_limit_%s{domain=\"",
                           names[n]);
            label(b, entries[i].domain);
            textbuf_printf(b, "\",key=\"");
            label(b, entries[i].key);
            textbuf_printf(b, "\"} %llu\n",
                           (unsigned long long)counter(&entries[i].c, n));
        }
    }
}
