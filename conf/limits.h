/*
 * limits.h - named limits in envoyproxy/ratelimit's configuration format,
 * so one file answers Envoy (gRPC) and applications (RL.CHECK) alike.
 *
 *   domain: api
 *   descriptors:
 *     - key: remote_address
 *       rate_limit: { unit: second, requests_per_unit: 10 }
 *     - key: path
 *       value: /login
 *       descriptors:
 *         - key: user
 *           rate_limit: { unit: minute, requests_per_unit: 5, name: login }
 *
 * One domain per file; a directory holds many. A request names a domain
 * and a descriptor (a list of key=value entries); its limit is found level
 * by level as that service finds it (exact key_value, then wildcard values
 * in file order, then the key-only entry; no backtracking; a limit counts
 * only at the request's last entry). Facts from envoyproxy/ratelimit at
 * f2fb157 (src/config/config_impl.go), written anew here. Pure: the YAML
 * is read by limits_load (limits_yaml.c, libyaml), nothing else touches
 * files, clocks or the keyspace.
 */
#ifndef CELLGATE_LIMITS_H
#define CELLGATE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/calendar.h"

/* The deepest descriptor (entries in one request) a limit can sit at. */
#define LIMITS_MAX_DEPTH 16
/* The most files of a limits directory, and domains in all. */
#define LIMITS_MAX_FILES 1024

/* Units with the numbers of Envoy's RateLimitResponse.RateLimit.Unit. */
enum limits_unit {
    LIMITS_UNIT_UNKNOWN = 0,
    LIMITS_SECOND = 1,
    LIMITS_MINUTE = 2,
    LIMITS_HOUR = 3,
    LIMITS_DAY = 4,
    LIMITS_MONTH = 5,       /* a fixed 30 days, as that service counts */
    LIMITS_YEAR = 6,        /* a fixed 365 days */
    LIMITS_WEEK = 7
};

/* How the Rate Limit Quota Service sends a share of a limit: its own
 * rlqs_strategy, else the rlqs-strategy option's. */
enum limits_rlqs {
    LIMITS_RLQS_DEFAULT = 0,
    LIMITS_RLQS_TOKEN_BUCKET,
    LIMITS_RLQS_PER_UNIT
};

/* How a limit decides: that service's fixed windows on unit boundaries by
 * default; cellgate_algorithm picks another. */
enum limits_algo {
    LIMITS_FIXED_WINDOW = 0,
    LIMITS_SLIDING_WINDOW,
    LIMITS_GCRA
};

struct limits_rule {
    uint32_t requests_per_unit;
    enum limits_unit unit;          /* UNKNOWN when unlimited */
    bool unlimited;
    enum limits_algo algo;
    enum limits_rlqs rlqs;          /* rlqs_strategy, DEFAULT: none */
    char *name;                     /* "" when none */
    char **replaces;                /* names of limits this one replaces */
    size_t nreplaces;
    /* `calendar: <IANA zone>` (and `week_start: <day>`): the unit's
     * windows follow that zone's calendar; zone_name NULL: plain units. */
    char *zone_name;
    struct cal_spec calendar;       /* its zone owned (read at load) */
};

/* A descriptor's `metadata:`, as that service turns YAML into a
 * google.protobuf.Struct (yaml.v2's scalars, structpb.NewValue): null,
 * numbers (a double, integers included), strings, booleans, mappings
 * (keys as text; a repeated key keeps its last value) and lists. */
enum limits_meta_type {
    LIMITS_META_NULL,
    LIMITS_META_NUMBER,
    LIMITS_META_STRING,
    LIMITS_META_BOOL,
    LIMITS_META_STRUCT,
    LIMITS_META_LIST
};

struct limits_meta {
    enum limits_meta_type type;
    char *key;                      /* a mapping's member: its key */
    double number;
    bool boolean;
    char *string;
    struct limits_meta *items;      /* a mapping's members, a list's values */
    size_t nitems;
};

struct limits_node {
    char *key;
    char *value;                    /* NULL: the key-only (default) entry */
    char *composite;                /* key, or key "_" value */
    struct limits_rule *rule;       /* NULL: no limit of its own */
    bool wildcard;                  /* composite holds a '*' */
    bool shadow_mode;
    bool quota_mode;                /* over: refuses only with all others */
    bool detailed_metric;
    bool value_to_metric;
    bool share_threshold;
    struct limits_meta *metadata;   /* a STRUCT, NULL: none (or empty) */
    struct limits_node *children;   /* exact entries sorted by composite, */
    size_t nexact;                  /* then wildcard entries in file order */
    size_t nchildren;
    const char *file;               /* where it was written */
    unsigned line;
};

struct limits_domain {
    char *name;
    struct limits_node root;        /* its top-level descriptors */
};

struct limits {
    struct limits_domain *domains;  /* sorted by name */
    size_t ndomains;
    char **files;                   /* the files read, for errors */
    size_t nfiles;
    size_t nrules;
};

/* Read path: one YAML file, or every *.yaml / *.yml file of a directory
 * (sorted by name; no subdirectories). Returns 0 and *out, or -1 with err
 * as "<file>:<line>: <what is wrong>" (the texts of envoyproxy/ratelimit
 * where it has one). */
int limits_load(const char *path, struct limits **out, char *err,
                size_t errlen);

void limits_free(struct limits *l);

/* A metadata value and everything under it (not m itself). */
void limits_meta_clear(struct limits_meta *m);

/* Building blocks of limits_load (limits.c): a domain's node tree. */
struct limits_domain *limits_add_domain(struct limits *l, const char *name);
/* Sort children, split wildcards, find duplicates. 0, or -1 with why
 * (and *at the offending node) when two entries share a composite key. */
int limits_finish_node(struct limits_node *n, const char *path,
                       const struct limits_node **at, char *why,
                       size_t whylen);

/* Seconds in a unit (0 for UNKNOWN). */
int64_t limits_unit_seconds(enum limits_unit u);
/* Its name in the file, lower case ("unknown" for UNKNOWN). */
const char *limits_unit_name(enum limits_unit u);
/* Case-insensitive, as that service reads units. */
enum limits_unit limits_unit_parse(const char *s);

/* One entry of a request's descriptor. */
struct limits_entry {
    const char *key;
    size_t klen;
    const char *value;
    size_t vlen;
};

/* What a descriptor matched. */
struct limits_match {
    bool domain_found;
    const struct limits_node *leaf;     /* whose rule applies; NULL: none */
    /* For entry i matched through a share_threshold wildcard, the pattern
     * (after "key_") that stands for the value in the counter's name;
     * NULL otherwise. */
    const char *shared[LIMITS_MAX_DEPTH];
    /* The node matched at each level (stats names). */
    const struct limits_node *path[LIMITS_MAX_DEPTH];
};

/* Find the limit for domain + entries, as envoyproxy/ratelimit finds it.
 * m->leaf is NULL when nothing applies (unknown domain, no match, or the
 * matched node has no rate_limit). */
void limits_match(const struct limits *l, const char *domain, size_t dlen,
                  const struct limits_entry *e, size_t n,
                  struct limits_match *m);

/* The most entries limits_order_entries() looks through. */
#define LIMITS_MAX_UNORDERED (LIMITS_MAX_DEPTH * 4)

/* An unordered set of entries (Envoy's RLQS BucketId, a map) as the
 * descriptor that walks domain's tree: at each level the first unused
 * entry whose key_value a child matches (exactly or by wildcard), else the
 * first whose key alone does; entries off the path are left out. Writes
 * the entries' indexes in that order to order[0..LIMITS_MAX_DEPTH) and
 * returns how many (0: unknown domain, no match, or n above
 * LIMITS_MAX_UNORDERED). limits_match() of that descriptor is then what
 * ShouldRateLimit would find for it. */
size_t limits_order_entries(const struct limits *l, const char *domain,
                            size_t dlen, const struct limits_entry *e,
                            size_t n, size_t *order);

/* Every limit of l with a number (unlimited ones have none), domain by
 * domain, each level's entries in their sorted order: fn gets its domain
 * and the nodes from the top level down to the one holding the rule
 * (path[depth - 1]), whose composites joined by '.' are the limit's stats
 * key. The configured limits as gauges on /metrics read them. */
typedef void (*limits_visit_fn)(void *ctx, const struct limits_domain *d,
                                const struct limits_node *const *path,
                                size_t depth);
void limits_each_rule(const struct limits *l, limits_visit_fn fn, void *ctx);

/* Does value match a wildcard pattern ('*' = any run of bytes)? */
bool limits_wildcard_match(const char *pattern, const char *s, size_t len);

#endif
