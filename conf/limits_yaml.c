/*
 * limits_yaml.c - limits_load (limits.h): envoyproxy/ratelimit's YAML
 * files into a limits tree, with libyaml's document loader.
 *
 * Checked as that service checks a file: every mapping key must be one of
 * its key names (anywhere: like it, a known key in an unusual place is
 * accepted and ignored), lists hold mappings, values are strings,
 * integers or booleans; then each descriptor is read with that service's
 * rules and error texts, prefixed with "<file>:<line>: ". Besides its
 * keys, rate_limit takes cellgate_algorithm (fixed_window, sliding_window,
 * gcra) and, for a fixed window, calendar (an IANA zone, read from the
 * system's zoneinfo as the file loads, so a bad one refuses it) and
 * week_start. Aliases are followed, so the walk is bounded in nodes visited
 * and in depth: a file cannot make it run away.
 */
#include "conf/limits.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "lib/file.h"
#include "lib/num.h"
#include "lib/tzdb.h"

#define MAX_FILE_BYTES (64 << 20)
#define MAX_VISITS 2000000          /* nodes walked per file, aliases too */
#define MAX_NESTING 64              /* YAML nesting */
#define PATH_MAX_LEN 1024           /* "domain.k_v.k..." in errors */

struct loader {
    const char *file;
    yaml_document_t doc;
    struct limits *l;
    size_t visits;
    char *err;
    size_t errlen;
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
fail(struct loader *ld, const yaml_node_t *at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(ld->err, ld->errlen, "%s:%lu: %s", ld->file,
             at != NULL ? (unsigned long)at->start_mark.line + 1 : 1UL, msg);
    return -1;
}

static yaml_node_t *
node(struct loader *ld, int index)
{
    return yaml_document_get_node(&ld->doc, index);
}

static const char *
text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static bool
plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE &&
           n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* YAML's null: an empty plain scalar, ~ or null. */
static bool
is_null(const yaml_node_t *n)
{
    static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
    if (!plain(n)) {
        return false;
    }
    for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
        if (strcmp(text(n), nulls[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* A plain scalar YAML reads as a float (1.5, 2e3, .inf): not allowed. */
static bool
is_float(const yaml_node_t *n)
{
    const char *s = text(n);
    double d;
    if (!plain(n) || s[0] == '\0') {
        return false;
    }
    if (strcasecmp(s, ".inf") == 0 || strcasecmp(s, "-.inf") == 0 ||
        strcasecmp(s, "+.inf") == 0 || strcasecmp(s, ".nan") == 0) {
        return true;
    }
    return num_strtod_str(s, &d) && strpbrk(s, ".eE") != NULL;
}

/* ---- the key check (before anything is read) -------------------------- */

static bool
known_key(const char *k)
{
    static const char *const keys[] = {
        "domain", "key", "value", "descriptors", "rate_limit", "unit",
        "requests_per_unit", "unlimited", "shadow_mode", "quota_mode",
        "name", "replaces", "detailed_metric", "value_to_metric",
        "share_threshold", "metadata", "cellgate_algorithm", "calendar",
        "week_start", "rlqs_strategy"
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (strcmp(keys[i], k) == 0) {
            return true;
        }
    }
    return false;
}

static int check_node(struct loader *ld, yaml_node_t *n, int depth);

static int
check_mapping(struct loader *ld, yaml_node_t *n, int depth)
{
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(ld, p->key), *v = node(ld, p->value);
        if (k == NULL || v == NULL) {
            return fail(ld, n, "error checking config");
        }
        if (k->type != YAML_SCALAR_NODE) {
            return fail(ld, k, "config error, key is not of type string");
        }
        if (is_float(k) || (plain(k) && strspn(text(k), "0123456789") ==
                                            strlen(text(k)) && text(k)[0])) {
            return fail(ld, k, "config error, key is not of type string: %s",
                        text(k));
        }
        if (!known_key(text(k))) {
            return fail(ld, k, "config error, unknown key '%s'", text(k));
        }
        if (strcmp(text(k), "metadata") != 0 &&
            check_node(ld, v, depth + 1) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
check_node(struct loader *ld, yaml_node_t *n, int depth)
{
    if (++ld->visits > MAX_VISITS || depth > MAX_NESTING) {
        return fail(ld, n, "the file nests or refers to itself too deeply");
    }
    switch (n->type) {
    case YAML_MAPPING_NODE:
        return check_mapping(ld, n, depth);
    case YAML_SEQUENCE_NODE:
        for (yaml_node_item_t *i = n->data.sequence.items.start;
             i < n->data.sequence.items.top; i++) {
            yaml_node_t *e = node(ld, *i);
            if (e == NULL || e->type != YAML_MAPPING_NODE) {
                return fail(ld, e != NULL ? e : n, "config error, yaml file "
                            "contains list of type other than map: %s",
                            e != NULL && e->type == YAML_SCALAR_NODE
                            ? text(e) : "[...]");
            }
            if (check_mapping(ld, e, depth + 1) != 0) {
                return -1;
            }
        }
        return 0;
    default:
        if (is_float(n)) {
            return fail(ld, n, "error checking config: '%s' is not a "
                        "string, integer or boolean", text(n));
        }
        return 0;
    }
}

/* ---- typed values ----------------------------------------------------- */

/* The value of key name in mapping m, or NULL (absent or null). */
static yaml_node_t *
get(struct loader *ld, yaml_node_t *m, const char *name)
{
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
         p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(ld, p->key);
        if (strcmp(text(k), name) == 0) {
            yaml_node_t *v = node(ld, p->value);
            return is_null(v) ? NULL : v;
        }
    }
    return NULL;
}

static int
get_string(struct loader *ld, yaml_node_t *m, const char *name,
           const char **out)
{
    yaml_node_t *v = get(ld, m, name);
    *out = NULL;
    if (v == NULL) {
        return 0;
    }
    if (v->type != YAML_SCALAR_NODE) {
        return fail(ld, v, "%s must be a string", name);
    }
    *out = text(v);
    return 0;
}

static int
get_bool(struct loader *ld, yaml_node_t *m, const char *name, bool *out)
{
    static const char *const yes[] = { "true", "yes", "on", "y" };
    static const char *const no[] = { "false", "no", "off", "n" };
    yaml_node_t *v = get(ld, m, name);
    *out = false;
    if (v == NULL) {
        return 0;
    }
    for (size_t i = 0; plain(v) && i < 4; i++) {
        if (strcasecmp(text(v), yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text(v), no[i]) == 0) {
            return 0;
        }
    }
    return fail(ld, v, "%s must be true or false", name);
}

static int
get_u32(struct loader *ld, yaml_node_t *m, const char *name, uint32_t *out)
{
    yaml_node_t *v = get(ld, m, name);
    uint64_t x;
    *out = 0;
    if (v == NULL) {
        return 0;
    }
    /* Digits only (leading zeros allowed), as strtoull read them when the
     * text had to start with a digit and end with the number. */
    if (!plain(v) || !num_parse_u64_digits(text(v), strlen(text(v)), &x) ||
        x > UINT32_MAX) {
        return fail(ld, v, "%s must be an integer from 0 to 4294967295",
                    name);
    }
    *out = (uint32_t)x;
    return 0;
}

/* ---- metadata ------------------------------------------------------- */

/* A descriptor's metadata as that service reads it (yaml.v2 into Go
 * values, then structpb.NewStruct): every plain scalar resolved by
 * yaml.v2's rules (resolve.go), a quoted one is a string. */

static bool
one_of(const char *s, const char *const *words, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s, words[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Go's strconv.ParseInt/ParseUint with base 0 (0x, 0o, 0b, a leading 0
 * for octal) on s, underscores already gone: the value as a double. */
static bool
go_integer(const char *s, double *out)
{
    bool neg = *s == '-';
    unsigned base = 10;
    uint64_t v = 0;
    s += *s == '-' || *s == '+';
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16, s += 2;
    } else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
        base = 8, s += 2;
    } else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
        base = 2, s += 2;
    } else if (s[0] == '0' && s[1] != '\0') {
        base = 8, s += 1;
    }
    if (*s == '\0') {
        return false;
    }
    for (; *s != '\0'; s++) {
        unsigned d = *s >= '0' && *s <= '9' ? (unsigned)(*s - '0')
                     : *s >= 'a' && *s <= 'f' ? (unsigned)(*s - 'a' + 10)
                     : *s >= 'A' && *s <= 'F' ? (unsigned)(*s - 'A' + 10) : 99;
        if (d >= base || v > (UINT64_MAX - d) / base) {
            return false;
        }
        v = v * base + d;
    }
    if (neg && v > (uint64_t)INT64_MAX + 1) {
        return false;
    }
    *out = neg ? -(double)v : (double)v;
    return true;
}

/* yaml.v2's float form, ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$,
 * read as ParseFloat does (out of range: not a float). */
static bool
go_float(const char *s, double *out)
{
    const char *p = s + (*s == '-' || *s == '+');
    size_t lead = strspn(p, "0123456789");
    p += lead;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        if (lead == 0 && frac == 0) {
            return false;
        }
        p += 1 + frac;
    } else if (lead == 0) {
        return false;
    }
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '-' || p[1] == '+');
        size_t exp = strspn(p, "0123456789");
        if (exp == 0) {
            return false;
        }
        p += exp;
    }
    return *p == '\0' && num_strtod_str(s, out) && *out != HUGE_VAL &&
           *out != -HUGE_VAL;
}

/* A number as yaml.v2 resolves a plain scalar starting with a digit, a
 * sign or a dot (underscores dropped but after a dot). */
static bool
go_number(const char *text, struct limits_meta *m)
{
    char s[128];
    size_t n = 0;
    if (text[0] == '.') {
        return go_float(text, &m->number);
    }
    for (const char *p = text; *p != '\0'; p++) {
        if (*p != '_') {
            if (n == sizeof(s) - 1) {
                return false;
            }
            s[n++] = *p;
        }
    }
    s[n] = '\0';
    return go_integer(s, &m->number) || go_float(s, &m->number);
}

static int
meta_scalar(struct loader *ld, yaml_node_t *n, struct limits_meta *m)
{
    static const char *const yes[] = { "y", "Y", "yes", "Yes", "YES", "true",
                                       "True", "TRUE", "on", "On", "ON" };
    static const char *const no[] = { "n", "N", "no", "No", "NO", "false",
                                      "False", "FALSE", "off", "Off", "OFF" };
    static const char *const inf[] = { ".inf", ".Inf", ".INF", "+.inf",
                                       "+.Inf", "+.INF" };
    static const char *const minus_inf[] = { "-.inf", "-.Inf", "-.INF" };
    static const char *const nan[] = { ".nan", ".NaN", ".NAN" };
    const char *s = text(n);
    m->type = LIMITS_META_NUMBER;
    if (is_null(n)) {
        m->type = LIMITS_META_NULL;
    } else if (plain(n) && (one_of(s, yes, 11) || one_of(s, no, 11))) {
        m->type = LIMITS_META_BOOL;
        m->boolean = one_of(s, yes, 11);
    } else if (plain(n) && one_of(s, inf, 6)) {
        m->number = HUGE_VAL;
    } else if (plain(n) && one_of(s, minus_inf, 3)) {
        m->number = -HUGE_VAL;
    } else if (plain(n) && one_of(s, nan, 3)) {
        m->number = NAN;
    } else if (!plain(n) || strchr("+-.0123456789", s[0]) == NULL ||
               s[0] == '\0' || !go_number(s, m)) {
        m->type = LIMITS_META_STRING;
        if ((m->string = strdup(s)) == NULL) {
            return fail(ld, n, "out of memory");
        }
    }
    return 0;
}

static int read_meta(struct loader *ld, yaml_node_t *n, struct limits_meta *m,
                     int depth);

/* A mapping's members into m (a STRUCT); a key written twice keeps its
 * last value, as a Go map does. */
static int
meta_mapping(struct loader *ld, yaml_node_t *n, struct limits_meta *m,
             int depth)
{
    size_t count = (size_t)(n->data.mapping.pairs.top -
                            n->data.mapping.pairs.start);
    m->type = LIMITS_META_STRUCT;
    m->items = calloc(count ? count : 1, sizeof(*m->items));
    if (m->items == NULL) {
        return fail(ld, n, "out of memory");
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(ld, p->key), *v = node(ld, p->value);
        if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE) {
            return fail(ld, n, "metadata keys must be strings");
        }
        size_t at = 0;
        while (at < m->nitems && strcmp(m->items[at].key, text(k)) != 0) {
            at++;
        }
        if (at == m->nitems) {
            m->nitems++;
        } else {
            limits_meta_clear(&m->items[at]);
        }
        if ((m->items[at].key = strdup(text(k))) == NULL) {
            return fail(ld, k, "out of memory");
        }
        if (read_meta(ld, v, &m->items[at], depth + 1) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
meta_sequence(struct loader *ld, yaml_node_t *n, struct limits_meta *m,
              int depth)
{
    size_t count = (size_t)(n->data.sequence.items.top -
                            n->data.sequence.items.start);
    m->type = LIMITS_META_LIST;
    m->items = calloc(count ? count : 1, sizeof(*m->items));
    if (m->items == NULL) {
        return fail(ld, n, "out of memory");
    }
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *e = node(ld, n->data.sequence.items.start[i]);
        m->nitems++;
        if (e == NULL || read_meta(ld, e, &m->items[i], depth + 1) != 0) {
            return e == NULL ? fail(ld, n, "error reading metadata") : -1;
        }
    }
    return 0;
}

static int
read_meta(struct loader *ld, yaml_node_t *n, struct limits_meta *m, int depth)
{
    /* The key check did not walk metadata: bounded here the same way. */
    if (++ld->visits > MAX_VISITS || depth > MAX_NESTING) {
        return fail(ld, n, "the file nests or refers to itself too deeply");
    }
    switch (n->type) {
    case YAML_MAPPING_NODE:
        return meta_mapping(ld, n, m, depth);
    case YAML_SEQUENCE_NODE:
        return meta_sequence(ld, n, m, depth);
    default:
        return meta_scalar(ld, n, m);
    }
}

/* `metadata:` of descriptor d: a mapping, kept when it has members. */
static int
read_metadata(struct loader *ld, yaml_node_t *d, struct limits_node *n)
{
    yaml_node_t *v = get(ld, d, "metadata");
    if (v == NULL) {
        return 0;
    }
    if (v->type != YAML_MAPPING_NODE) {
        return fail(ld, v, "metadata must be a mapping");
    }
    if (v->data.mapping.pairs.top == v->data.mapping.pairs.start) {
        return 0;
    }
    if ((n->metadata = calloc(1, sizeof(*n->metadata))) == NULL) {
        return fail(ld, v, "out of memory");
    }
    return read_meta(ld, v, n->metadata, 0);
}

/* ---- descriptors ------------------------------------------------------ */

static int read_descriptors(struct loader *ld, yaml_node_t *list,
                            struct limits_node *parent, const char *path);

static int
read_replaces(struct loader *ld, yaml_node_t *rl, struct limits_rule *r)
{
    yaml_node_t *list = get(ld, rl, "replaces");
    if (list == NULL) {
        return 0;
    }
    if (list->type != YAML_SEQUENCE_NODE) {
        return fail(ld, list, "replaces must be a list of {name: ...}");
    }
    size_t n = (size_t)(list->data.sequence.items.top -
                        list->data.sequence.items.start);
    r->replaces = calloc(n ? n : 1, sizeof(char *));
    if (r->replaces == NULL) {
        return fail(ld, list, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *e = node(ld, list->data.sequence.items.start[i]);
        const char *name;
        if (get_string(ld, e, "name", &name) != 0) {
            return -1;
        }
        if (name == NULL || name[0] == '\0') {
            return fail(ld, e, "should not have an empty replaces entry");
        }
        if (strcmp(name, r->name) == 0) {
            return fail(ld, e, "replaces should not contain name of same "
                        "descriptor");
        }
        if ((r->replaces[r->nreplaces] = strdup(name)) == NULL) {
            return fail(ld, e, "out of memory");
        }
        r->nreplaces++;
    }
    return 0;
}

static int
read_algorithm(struct loader *ld, yaml_node_t *rl, struct limits_rule *r)
{
    static const struct {
        const char *name;
        enum limits_algo algo;
    } algos[] = { { "fixed_window", LIMITS_FIXED_WINDOW },
                  { "sliding_window", LIMITS_SLIDING_WINDOW },
                  { "gcra", LIMITS_GCRA } };
    const char *a;
    if (get_string(ld, rl, "cellgate_algorithm", &a) != 0 || a == NULL) {
        return a == NULL ? 0 : -1;
    }
    for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
        if (strcasecmp(algos[i].name, a) == 0) {
            r->algo = algos[i].algo;
            return 0;
        }
    }
    return fail(ld, get(ld, rl, "cellgate_algorithm"), "cellgate_algorithm "
                "'%s' must be fixed_window, sliding_window or gcra", a);
}

/* rlqs_strategy: how RLQS sends a share of the limit (rlqs-strategy's
 * values, with the proto's underscores), a cellgate extension too. */
static int
read_rlqs_strategy(struct loader *ld, yaml_node_t *rl, struct limits_rule *r)
{
    const char *s;
    if (get_string(ld, rl, "rlqs_strategy", &s) != 0 || s == NULL) {
        return s == NULL ? 0 : -1;
    }
    if (strcasecmp(s, "token_bucket") == 0) {
        r->rlqs = LIMITS_RLQS_TOKEN_BUCKET;
    } else if (strcasecmp(s, "requests_per_time_unit") == 0) {
        r->rlqs = LIMITS_RLQS_PER_UNIT;
    } else {
        return fail(ld, get(ld, rl, "rlqs_strategy"), "rlqs_strategy '%s' "
                    "must be token_bucket or requests_per_time_unit", s);
    }
    return 0;
}

/* calendar: <IANA zone> and week_start: <day>, for a fixed window with a
 * unit; the zone is read now, so a bad one refuses the file. */
static int
read_calendar(struct loader *ld, yaml_node_t *rl, struct limits_rule *r,
              const char *unit)
{
    const char *zone, *week;
    struct tz_zone *z;
    if (get_string(ld, rl, "calendar", &zone) != 0 ||
        get_string(ld, rl, "week_start", &week) != 0) {
        return -1;
    }
    if (zone == NULL) {
        return week == NULL ? 0 : fail(ld, get(ld, rl, "week_start"),
                                       "week_start needs calendar");
    }
    yaml_node_t *at = get(ld, rl, "calendar");
    if (r->unlimited || r->algo != LIMITS_FIXED_WINDOW) {
        return fail(ld, at, "calendar applies to fixed_window limits only");
    }
    (void)cal_unit_parse(unit, strlen(unit), &r->calendar.unit);
    r->calendar.week_start = 1;     /* Monday */
    if (week != NULL && (r->calendar.unit != CAL_WEEK ||
                         !cal_weekday_parse(week, strlen(week),
                                            &r->calendar.week_start))) {
        return fail(ld, get(ld, rl, "week_start"),
                    r->calendar.unit != CAL_WEEK
                        ? "week_start needs the unit week"
                        : "week_start '%s' is not a day of the week", week);
    }
    switch (tzdb_load(zone, strlen(zone), &z)) {
    case TZDB_OK:
        break;
    case TZDB_UNKNOWN:
        return fail(ld, at, "unknown time zone '%s'", zone);
    case TZDB_CORRUPT:
        return fail(ld, at, "time zone '%s': its zoneinfo file is not valid "
                    "TZif", zone);
    case TZDB_NOMEM:
        return fail(ld, at, "out of memory");
    }
    r->calendar.zone = z;
    if ((r->zone_name = strdup(zone)) == NULL) {
        return fail(ld, at, "out of memory");
    }
    return 0;
}

static int
read_rule(struct loader *ld, yaml_node_t *rl, struct limits_node *n)
{
    const char *unit, *name;
    struct limits_rule *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return fail(ld, rl, "out of memory");
    }
    n->rule = r;
    if (rl->type != YAML_MAPPING_NODE) {
        return fail(ld, rl, "rate_limit must be a mapping");
    }
    if (get_string(ld, rl, "unit", &unit) != 0 ||
        get_string(ld, rl, "name", &name) != 0 ||
        get_u32(ld, rl, "requests_per_unit", &r->requests_per_unit) != 0 ||
        get_bool(ld, rl, "unlimited", &r->unlimited) != 0) {
        return -1;
    }
    if ((r->name = strdup(name != NULL ? name : "")) == NULL) {
        return fail(ld, rl, "out of memory");
    }
    r->unit = limits_unit_parse(unit != NULL ? unit : "");
    if (!r->unlimited && r->unit == LIMITS_UNIT_UNKNOWN) {
        return fail(ld, rl, "invalid rate limit unit '%s'",
                    unit != NULL ? unit : "");
    }
    if (r->unlimited && r->unit != LIMITS_UNIT_UNKNOWN) {
        return fail(ld, rl, "should not specify rate limit unit when "
                    "unlimited");
    }
    if (r->unlimited) {
        r->unit = LIMITS_UNIT_UNKNOWN;
    }
    return read_replaces(ld, rl, r) != 0 || read_algorithm(ld, rl, r) != 0 ||
                   read_rlqs_strategy(ld, rl, r) != 0
           ? -1 : read_calendar(ld, rl, r, unit != NULL ? unit : "");
}

static int
read_flags(struct loader *ld, yaml_node_t *d, struct limits_node *n)
{
    return get_bool(ld, d, "shadow_mode", &n->shadow_mode) != 0 ||
                   get_bool(ld, d, "detailed_metric", &n->detailed_metric) != 0 ||
                   get_bool(ld, d, "value_to_metric", &n->value_to_metric) != 0 ||
                   get_bool(ld, d, "share_threshold", &n->share_threshold) != 0 ||
                   get_bool(ld, d, "quota_mode", &n->quota_mode) != 0
           ? -1 : 0;
}

/* key, value and composite of the descriptor d into n. */
static int
read_names(struct loader *ld, yaml_node_t *d, struct limits_node *n)
{
    const char *key, *value;
    if (get_string(ld, d, "key", &key) != 0 ||
        get_string(ld, d, "value", &value) != 0) {
        return -1;
    }
    if (key == NULL || key[0] == '\0') {
        return fail(ld, d, "descriptor has empty key");
    }
    size_t klen = strlen(key), vlen = value != NULL ? strlen(value) : 0;
    n->key = strdup(key);
    n->value = vlen > 0 ? strdup(value) : NULL;
    n->composite = malloc(klen + 1 + vlen + 1);
    if (n->key == NULL || (vlen > 0 && n->value == NULL) ||
        n->composite == NULL) {
        return fail(ld, d, "out of memory");
    }
    memcpy(n->composite, key, klen + 1);
    if (vlen > 0) {
        n->composite[klen] = '_';
        memcpy(n->composite + klen + 1, value, vlen + 1);
    }
    n->wildcard = strchr(n->composite, '*') != NULL;
    n->file = ld->file;
    n->line = (unsigned)d->start_mark.line + 1;
    return 0;
}

static int
read_descriptor(struct loader *ld, yaml_node_t *d, struct limits_node *n,
                const char *path)
{
    char sub[PATH_MAX_LEN];
    yaml_node_t *rl = get(ld, d, "rate_limit"), *kids;
    if (read_names(ld, d, n) != 0 || read_flags(ld, d, n) != 0 ||
        read_metadata(ld, d, n) != 0 || (rl != NULL && read_rule(ld, rl, n) != 0)) {
        return -1;
    }
    if (n->rule != NULL) {
        ld->l->nrules++;
    }
    if (n->share_threshold && !n->wildcard) {
        return fail(ld, d, "share_threshold can only be used with wildcard "
                    "values (containing '*'), but found key '%s'",
                    n->composite);
    }
    snprintf(sub, sizeof(sub), "%s.%s", path, n->composite);
    kids = get(ld, d, "descriptors");
    return kids != NULL ? read_descriptors(ld, kids, n, sub) : 0;
}

static int
read_descriptors(struct loader *ld, yaml_node_t *list,
                 struct limits_node *parent, const char *path)
{
    const struct limits_node *dup;
    char why[PATH_MAX_LEN + 64];
    if (list->type != YAML_SEQUENCE_NODE) {
        return fail(ld, list, "descriptors must be a list");
    }
    size_t n = (size_t)(list->data.sequence.items.top -
                        list->data.sequence.items.start);
    struct limits_node *kids = realloc(parent->children, (parent->nchildren + n) *
                                       sizeof(*kids) + 1);
    if (kids == NULL) {
        return fail(ld, list, "out of memory");
    }
    parent->children = kids;
    for (size_t i = 0; i < n; i++) {
        struct limits_node *c = &parent->children[parent->nchildren++];
        memset(c, 0, sizeof(*c));
        if (read_descriptor(ld, node(ld, list->data.sequence.items.start[i]),
                            c, path) != 0) {
            return -1;
        }
    }
    if (limits_finish_node(parent, path, &dup, why, sizeof(why)) != 0) {
        snprintf(ld->err, ld->errlen, "%s:%u: %s", ld->file, dup->line, why);
        return -1;
    }
    return 0;
}

/* ---- files ------------------------------------------------------------ */

static int
read_root(struct loader *ld, yaml_node_t *root)
{
    const char *domain = NULL;
    if (root != NULL && root->type != YAML_MAPPING_NODE) {
        return fail(ld, root, "the file must be a mapping with domain and "
                    "descriptors");
    }
    if (root != NULL && (check_node(ld, root, 0) != 0 ||
                         get_string(ld, root, "domain", &domain) != 0)) {
        return -1;
    }
    if (domain == NULL || domain[0] == '\0') {
        return fail(ld, root, "config file cannot have empty domain");
    }
    for (size_t i = 0; i < ld->l->ndomains; i++) {
        if (strcmp(ld->l->domains[i].name, domain) == 0) {
            return fail(ld, get(ld, root, "domain"), "duplicate domain '%s' "
                        "in config file", domain);
        }
    }
    struct limits_domain *d = limits_add_domain(ld->l, domain);
    yaml_node_t *list = get(ld, root, "descriptors");
    if (d == NULL) {
        return fail(ld, root, "out of memory");
    }
    return list != NULL ? read_descriptors(ld, list, &d->root, domain) : 0;
}

static int
load_file(struct limits *l, const char *file, char *err, size_t errlen)
{
    struct loader ld = { .file = file, .l = l, .err = err, .errlen = errlen };
    yaml_parser_t parser;
    struct stat st;
    if (stat(file, &st) == 0 && st.st_size > MAX_FILE_BYTES) {
        snprintf(err, errlen, "%s: larger than %d MB", file,
                 MAX_FILE_BYTES >> 20);
        return -1;
    }
    size_t len = 0;
    unsigned char *buf = file_read_all(file, &len);
    if (buf == NULL) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        return -1;
    }
    if (!yaml_parser_initialize(&parser)) {
        free(buf);
        snprintf(err, errlen, "%s: out of memory", file);
        return -1;
    }
    yaml_parser_set_input_string(&parser, buf, len);
    int rc = -1;
    if (!yaml_parser_load(&parser, &ld.doc)) {
        snprintf(err, errlen, "%s:%lu: error loading config file: %s%s%s",
                 file, (unsigned long)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "bad YAML",
                 parser.context ? " " : "",
                 parser.context ? parser.context : "");
    } else {
        rc = read_root(&ld, yaml_document_get_root_node(&ld.doc));
        yaml_document_delete(&ld.doc);
    }
    yaml_parser_delete(&parser);
    free(buf);
    return rc;
}

static bool
is_yaml_name(const char *name)
{
    size_t n = strlen(name);
    return name[0] != '.' &&
           ((n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
            (n > 4 && strcmp(name + n - 4, ".yml") == 0));
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The YAML files of directory dir, sorted, into l->files. */
static int
list_directory(struct limits *l, const char *dir, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (d == NULL) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        char full[4096];
        snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
        if (!is_yaml_name(e->d_name) || stat(full, &st) != 0 ||
            !S_ISREG(st.st_mode)) {
            continue;
        }
        char **f = l->nfiles < LIMITS_MAX_FILES
                   ? realloc(l->files, (l->nfiles + 1) * sizeof(*f)) : NULL;
        if (f == NULL || (f[l->nfiles] = strdup(full)) == NULL) {
            if (f != NULL) {
                l->files = f;
            }
            closedir(d);
            snprintf(err, errlen, "%s: more than %d files, or out of memory",
                     dir, LIMITS_MAX_FILES);
            return -1;
        }
        l->files = f;
        l->nfiles++;
    }
    closedir(d);
    qsort(l->files, l->nfiles, sizeof(*l->files), by_name);
    return 0;
}

static int
by_domain(const void *a, const void *b)
{
    const struct limits_domain *x = a, *y = b;
    return strcmp(x->name, y->name);
}

int
limits_load(const char *path, struct limits **out, char *err, size_t errlen)
{
    struct stat st;
    struct limits *l = calloc(1, sizeof(*l));
    *out = NULL;
    if (l == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = stat(path, &st) != 0 ? -1 : 0;
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        rc = list_directory(l, path, err, errlen);
    } else if ((l->files = malloc(sizeof(char *))) == NULL ||
               (l->files[0] = strdup(path)) == NULL) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else {
        l->nfiles = 1;
    }
    for (size_t i = 0; rc == 0 && i < l->nfiles; i++) {
        rc = load_file(l, l->files[i], err, errlen);
    }
    if (rc != 0) {
        limits_free(l);
        return -1;
    }
    qsort(l->domains, l->ndomains, sizeof(*l->domains), by_domain);
    *out = l;
    return 0;
}
