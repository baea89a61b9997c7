/*
 * check_limits.c - unit tests for conf/limits.c and conf/limits_yaml.c:
 * envoyproxy/ratelimit's YAML read and checked (its error texts, with the
 * file and line), and a request's descriptor matched to its limit the way
 * that service matches it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/limits.h"
#include "tests/unit/suites.h"

static char dir[64];
static char err[1024];
static struct limits *l;

static void
setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/check-limits-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    l = NULL;
    err[0] = '\0';
}

static void
teardown(void)
{
    char cmd[128];
    limits_free(l);
    l = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* dir/name with text; returns its path (static). */
static const char *
write_file(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void
load_ok(const char *text)
{
    const char *path = write_file("config.yaml", text);
    ck_assert_msg(limits_load(path, &l, err, sizeof(err)) == 0, "%s", err);
}

/* The file must be refused with "config.yaml:<line>: <want>". */
static void
load_fails(const char *text, int line, const char *want)
{
    char full[512];
    const char *path = write_file("config.yaml", text);
    ck_assert_int_eq(limits_load(path, &l, err, sizeof(err)), -1);
    ck_assert_ptr_null(l);
    snprintf(full, sizeof(full), "%s:%d: %s", path, line, want);
    ck_assert_msg(strstr(err, full) == err, "got '%s', want '%s'", err, full);
}

/* The rule a descriptor "k1=v1,k2=v2" of domain gets: its name, or "-"
 * when none applies. Names make the assertions readable. */
static const char *
match(const char *domain, const char *descriptor)
{
    static char buf[256];
    struct limits_entry e[LIMITS_MAX_DEPTH];
    struct limits_match m;
    size_t n = 0;
    snprintf(buf, sizeof(buf), "%s", descriptor);
    for (char *p = buf; p != NULL && *p != '\0' && n < LIMITS_MAX_DEPTH;) {
        char *comma = strchr(p, ',');
        char *eq = strchr(p, '=');
        e[n].key = p;
        e[n].klen = (size_t)(eq - p);
        e[n].value = eq + 1;
        e[n].vlen = comma != NULL ? (size_t)(comma - eq - 1) : strlen(eq + 1);
        n++;
        p = comma != NULL ? comma + 1 : NULL;
    }
    limits_match(l, domain, strlen(domain), e, n, &m);
    if (m.leaf == NULL) {
        return "-";
    }
    return m.leaf->rule->name[0] != '\0' ? m.leaf->rule->name : "(unnamed)";
}

/* After envoyproxy/ratelimit's test/config/basic_config.yaml. */
static const char basic[] =
    "domain: test-domain\n"
    "descriptors:\n"
    "  - key: key1\n"
    "    value: value1\n"
    "    descriptors:\n"
    "      - key: subkey1\n"
    "        rate_limit: {unit: second, requests_per_unit: 5, name: k1-sub}\n"
    "  - key: key2\n"
    "    rate_limit: {unit: minute, requests_per_unit: 20, name: k2}\n"
    "  - key: key2\n"
    "    value: value2\n"
    "    rate_limit: {unit: minute, requests_per_unit: 30, name: k2-v2}\n"
    "  - key: key2\n"
    "    value: value3\n"
    "  - key: key3\n"
    "    rate_limit: {unit: Hour, requests_per_unit: 1, name: k3}\n"
    "  - key: key6\n"
    "    rate_limit: {unlimited: true, name: k6}\n"
    "  - key: key7\n"
    "    value: 10\n"
    "    detailed_metric: true\n"
    "    rate_limit: {unit: WEEK, requests_per_unit: 2, name: k7,\n"
    "                 replaces: [{name: k3}], cellgate_algorithm: gcra}\n";

START_TEST(test_basic_config_matches_level_by_level)
{
    load_ok(basic);
    ck_assert_uint_eq(l->ndomains, 1);
    ck_assert_uint_eq(l->nrules, 6);
    ck_assert_str_eq(match("test-domain", "key1=value1,subkey1=x"), "k1-sub");
    /* A limit counts only at the request's last entry. */
    ck_assert_str_eq(match("test-domain", "key1=value1"), "-");
    ck_assert_str_eq(match("test-domain", "key1=value1,subkey1=x,more=y"), "-");
    ck_assert_str_eq(match("test-domain", "key1=other,subkey1=x"), "-");
    /* Exact value first, then the key-only default. */
    ck_assert_str_eq(match("test-domain", "key2=value2"), "k2-v2");
    ck_assert_str_eq(match("test-domain", "key2=anything"), "k2");
    /* value3 has no limit of its own: a whitelist, no fall-back. */
    ck_assert_str_eq(match("test-domain", "key2=value3"), "-");
    ck_assert_str_eq(match("test-domain", "key7=10"), "k7");
    ck_assert_str_eq(match("other-domain", "key2=x"), "-");
}
END_TEST

/* An unordered set "k=v,k=v" of domain ordered by the tree: the keys in
 * that order ("a,b"), "" when nothing is taken. */
static const char *
order(const char *domain, const char *set)
{
    static char buf[256], out[256];
    struct limits_entry e[LIMITS_MAX_UNORDERED];
    size_t idx[LIMITS_MAX_DEPTH], n = 0;
    snprintf(buf, sizeof(buf), "%s", set);
    for (char *p = buf; p != NULL && *p != '\0';) {
        char *comma = strchr(p, ',');
        char *eq = strchr(p, '=');
        e[n].key = p;
        e[n].klen = (size_t)(eq - p);
        e[n].value = eq + 1;
        e[n].vlen = comma != NULL ? (size_t)(comma - eq - 1) : strlen(eq + 1);
        n++;
        p = comma != NULL ? comma + 1 : NULL;
    }
    size_t depth = limits_order_entries(l, domain, strlen(domain), e, n, idx);
    out[0] = '\0';
    for (size_t i = 0; i < depth; i++) {
        snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%.*s",
                 i ? "," : "", (int)e[idx[i]].klen, e[idx[i]].key);
    }
    return out;
}

START_TEST(test_unordered_entries_take_the_trees_order)
{
    load_ok(basic);
    /* Whatever order they come in, the tree's; others left out. */
    ck_assert_str_eq(order("test-domain", "subkey1=x,key1=value1"), "key1,subkey1");
    ck_assert_str_eq(order("test-domain", "name=b,subkey1=x,key1=value1,env=p"),
                     "key1,subkey1");
    /* key_value before key alone: key2=value2 is taken before key3. */
    ck_assert_str_eq(order("test-domain", "key3=a,key2=value2"), "key2");
    ck_assert_str_eq(order("test-domain", "key3=a"), "key3");
    ck_assert_str_eq(order("test-domain", "key1=other"), "");
    ck_assert_str_eq(order("test-domain", "nothing=here"), "");
    ck_assert_str_eq(order("other-domain", "key2=x"), "");
}
END_TEST

START_TEST(test_rules_keep_units_flags_and_extensions)
{
    struct limits_entry e = { "key7", 4, "10", 2 };
    struct limits_match m;
    load_ok(basic);
    limits_match(l, "test-domain", 11, &e, 1, &m);
    ck_assert(m.domain_found);
    const struct limits_rule *r = m.leaf->rule;
    ck_assert_int_eq(r->unit, LIMITS_WEEK);
    ck_assert_int_eq(limits_unit_seconds(r->unit), 604800);
    ck_assert_int_eq(r->algo, LIMITS_GCRA);
    ck_assert_uint_eq(r->nreplaces, 1);
    ck_assert_str_eq(r->replaces[0], "k3");
    ck_assert(m.leaf->detailed_metric);
    ck_assert_int_eq(limits_unit_seconds(LIMITS_MONTH), 30 * 86400);
    ck_assert_int_eq(limits_unit_seconds(LIMITS_YEAR), 365 * 86400);
    ck_assert_int_eq(limits_unit_parse("MiNuTe"), LIMITS_MINUTE);
    ck_assert_int_eq(limits_unit_parse("seconds"), LIMITS_UNIT_UNKNOWN);
}
END_TEST

START_TEST(test_wildcards_in_file_order_between_exact_and_default)
{
    load_ok("domain: w\n"
            "descriptors:\n"
            "  - {key: path, rate_limit: {unit: second, requests_per_unit: 1, name: default}}\n"
            "  - {key: path, value: /api/*, rate_limit: {unit: second, requests_per_unit: 1, name: api}}\n"
            "  - {key: path, value: /api/v1*, rate_limit: {unit: second, requests_per_unit: 1, name: v1}}\n"
            "  - {key: path, value: /api/exact, rate_limit: {unit: second, requests_per_unit: 1, name: exact}}\n"
            "  - {key: mid, value: bar*b, rate_limit: {unit: second, requests_per_unit: 1, name: barb}}\n"
            "  - {key: multi, value: foo*bar*baz, rate_limit: {unit: second, requests_per_unit: 1, name: fbb}}\n");
    ck_assert_str_eq(match("w", "path=/api/exact"), "exact");
    ck_assert_str_eq(match("w", "path=/api/v1/users"), "api");     /* first */
    ck_assert_str_eq(match("w", "path=/other"), "default");
    ck_assert_str_eq(match("w", "mid=barb"), "barb");
    ck_assert_str_eq(match("w", "mid=bar123b"), "barb");
    ck_assert_str_eq(match("w", "mid=bara"), "-");
    ck_assert_str_eq(match("w", "mid=xbarb"), "-");
    ck_assert_str_eq(match("w", "multi=foo123bar456baz"), "fbb");
    ck_assert_str_eq(match("w", "multi=foobarbaz"), "fbb");
    ck_assert_str_eq(match("w", "multi=foo123baz"), "-");
    ck_assert(limits_wildcard_match("a_*", "a_", 2));
    ck_assert(!limits_wildcard_match("ab*ba", "aba", 3));
}
END_TEST

START_TEST(test_share_threshold_names_the_pattern)
{
    struct limits_entry e = { "files", 5, "files/a.txt", 11 };
    struct limits_match m;
    load_ok("domain: s\n"
            "descriptors:\n"
            "  - key: files\n"
            "    value: files/*\n"
            "    share_threshold: true\n"
            "    rate_limit: {unit: hour, requests_per_unit: 10}\n");
    limits_match(l, "s", 1, &e, 1, &m);
    ck_assert_ptr_nonnull(m.leaf);
    ck_assert_str_eq(m.shared[0], "files/*");
}
END_TEST

START_TEST(test_errors_use_that_services_words_with_file_and_line)
{
    load_fails("domain: d\ndescriptors:\n  - key: a\n    ratelimit: {}\n", 4,
               "config error, unknown key 'ratelimit'");
    load_fails("domain: d\ndescriptors:\n  - a\n", 3,
               "config error, yaml file contains list of type other than "
               "map: a");
    load_fails("domain: d\n0.25: x\n", 2,
               "config error, key is not of type string: 0.25");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    value: 1.5\n", 4,
               "error checking config");
    load_fails("descriptors: []\n", 1, "config file cannot have empty domain");
    load_fails("", 1, "config file cannot have empty domain");
    load_fails("domain: d\ndescriptors:\n  - value: x\n", 3,
               "descriptor has empty key");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    value: b\n"
               "  - key: a\n    value: b\n", 5,
               "duplicate descriptor composite key 'd.a_b'");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    descriptors:\n"
               "      - key: s\n      - key: s\n", 6,
               "duplicate descriptor composite key 'd.a.s'");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n"
               "      unit: fortnight\n", 5,
               "invalid rate limit unit 'fortnight'");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {}\n", 4,
               "invalid rate limit unit ''");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit: "
               "{unlimited: true, unit: second}\n", 4,
               "should not specify rate limit unit when unlimited");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n"
               "      unit: second\n      replaces:\n        - name:\n", 7,
               "should not have an empty replaces entry");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n"
               "      unit: second\n      name: me\n      replaces: "
               "[{name: me}]\n", 7,
               "replaces should not contain name of same descriptor");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    value: b\n"
               "    share_threshold: true\n", 3,
               "share_threshold can only be used with wildcard values "
               "(containing '*'), but found key 'a_b'");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit: "
               "{unit: second, requests_per_unit: -1}\n", 4,
               "requests_per_unit must be an integer from 0 to 4294967295");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit: "
               "{unit: second, cellgate_algorithm: leaky}\n", 4,
               "cellgate_algorithm 'leaky' must be fixed_window, "
               "sliding_window or gcra");
    load_fails("domain: d\ndescriptors:\n  - key: a\n    rate_limit: "
               "{unit: second, rlqs_strategy: leaky}\n", 4,
               "rlqs_strategy 'leaky' must be token_bucket or "
               "requests_per_time_unit");
    load_fails("domain: d\n  bad: [\n", 2, "error loading config file: ");
}
END_TEST

START_TEST(test_aliases_cannot_make_the_walk_run_away)
{
    /* Each level refers to the one before eight times: 8^9 nodes to walk
     * if aliases were followed without a bound. */
    static const char *const keys[] = { "key", "value", "name", "unit",
                                        "rate_limit", "unlimited",
                                        "shadow_mode", "detailed_metric" };
    static const char *const levels[] = { "unit", "name", "value", "key",
                                          "quota_mode", "shadow_mode",
                                          "unlimited", "rate_limit",
                                          "value_to_metric" };
    char text[4096];
    int n = snprintf(text, sizeof(text), "domain: d\nrequests_per_unit: "
                     "&a0 {key: x}\n");
    for (int i = 1; i < 9; i++) {
        n += snprintf(text + n, sizeof(text) - (size_t)n, "%s: &a%d {",
                      levels[i], i);
        for (int k = 0; k < 8; k++) {
            n += snprintf(text + n, sizeof(text) - (size_t)n, "%s%s: *a%d",
                          k ? ", " : "", keys[k], i - 1);
        }
        n += snprintf(text + n, sizeof(text) - (size_t)n, "}\n");
    }
    const char *path = write_file("config.yaml", text);
    ck_assert_int_eq(limits_load(path, &l, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "the file nests or refers to itself too "
                              "deeply") != NULL, "%s", err);
}
END_TEST

START_TEST(test_a_directory_loads_its_yaml_files_sorted)
{
    char sub[128];
    write_file("b.yaml", "domain: bee\ndescriptors:\n  - key: k\n"
                         "    rate_limit: {unit: second, requests_per_unit: 1, name: b}\n");
    write_file("a.yml", "domain: ay\ndescriptors:\n  - key: k\n"
                        "    rate_limit: {unit: second, requests_per_unit: 1, name: a}\n");
    write_file("notes.txt", "not yaml at all: [");
    write_file(".hidden.yaml", "not yaml at all: [");
    snprintf(sub, sizeof(sub), "%s/sub.yaml", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);          /* a directory: skipped */
    ck_assert_msg(limits_load(dir, &l, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(l->nfiles, 2);
    ck_assert_str_eq(match("ay", "k=1"), "a");
    ck_assert_str_eq(match("bee", "k=1"), "b");
    limits_free(l);
    l = NULL;
    write_file("c.yaml", "domain: bee\n");
    ck_assert_int_eq(limits_load(dir, &l, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "c.yaml:1: duplicate domain 'bee' in "
                                      "config file"));
}
END_TEST

/* limits_each_rule's visits as "<domain> <stats key> <n>/<unit>;". */
static void
list_rule(void *ctx, const struct limits_domain *d,
          const struct limits_node *const *path, size_t depth)
{
    char *out = ctx;
    size_t len = strlen(out);
    len += (size_t)snprintf(out + len, 512 - len, "%s ", d->name);
    for (size_t i = 0; i < depth && len < 512; i++) {
        len += (size_t)snprintf(out + len, 512 - len, "%s%s", i > 0 ? "." : "",
                                path[i]->composite);
    }
    const struct limits_rule *r = path[depth - 1]->rule;
    if (len < 512) {
        snprintf(out + len, 512 - len, " %u/%s;", r->requests_per_unit,
                 limits_unit_name(r->unit));
    }
}

START_TEST(test_each_rule_walks_the_limits_with_a_number_by_stats_key)
{
    char out[512] = "";
    load_ok(basic);
    limits_each_rule(l, list_rule, out);
    /* key6 is unlimited, key2_value3 has no limit of its own. */
    ck_assert_str_eq(out, "test-domain key1_value1.subkey1 5/second;"
                          "test-domain key2 20/minute;"
                          "test-domain key2_value2 30/minute;"
                          "test-domain key3 1/hour;"
                          "test-domain key7_10 2/week;");
    out[0] = '\0';
    limits_each_rule(NULL, list_rule, out);
    ck_assert_str_eq(out, "");
    ck_assert_str_eq(limits_unit_name(LIMITS_MONTH), "month");
    ck_assert_str_eq(limits_unit_name(LIMITS_UNIT_UNKNOWN), "unknown");
}
END_TEST

/* The member key of metadata struct m (a STRUCT), or NULL. */
static const struct limits_meta *
member(const struct limits_meta *m, const char *key)
{
    for (size_t i = 0; m != NULL && i < m->nitems; i++) {
        if (strcmp(m->items[i].key, key) == 0) {
            return &m->items[i];
        }
    }
    return NULL;
}

static void
assert_number(const struct limits_meta *m, const char *key, double want)
{
    const struct limits_meta *v = member(m, key);
    ck_assert_msg(v != NULL && v->type == LIMITS_META_NUMBER, "%s", key);
    ck_assert_msg(v->number == want, "%s: %g, want %g", key, v->number, want);
}

static void
assert_string(const struct limits_meta *m, const char *key, const char *want)
{
    const struct limits_meta *v = member(m, key);
    ck_assert_msg(v != NULL && v->type == LIMITS_META_STRING, "%s", key);
    ck_assert_str_eq(v->string, want);
}

/* metadata: as yaml.v2 reads scalars into Go values (resolve.go) and
 * structpb.NewStruct keeps them: YAML 1.1 booleans, Go's integer bases,
 * yaml.v2's float form, everything else (quoted, timestamps, numbers out
 * of range) a string; aliases followed; a repeated key keeps the last. */
START_TEST(test_metadata_reads_scalars_as_yaml_v2_does)
{
    struct limits_entry e = { "k", 1, "x", 1 };
    struct limits_match m;
    load_ok("domain: d\n"
            "descriptors:\n"
            "  - key: k\n"
            "    rate_limit: {unit: second, requests_per_unit: 1}\n"
            "    metadata:\n"
            "      a: &shared {deep: [1, -2.5e3, .5]}\n"
            "      b: *shared\n"
            "      bool_y: Y\n"
            "      bool_off: OFF\n"
            "      not_bool: tRUE\n"
            "      minus_inf: -.Inf\n"
            "      plus: +12\n"
            "      binary: 0b101\n"
            "      neg_hex: -0x10\n"
            "      leading_zero_8: 08\n"
            "      too_big_hex: 0x1ffffffffffffffff\n"
            "      huge: 1e999\n"
            "      dash: '-'\n"
            "      time: 2001-12-14t21:59:43.10-05:00\n"
            "      dup: first\n"
            "      dup: last\n"
            "  - key: plain\n"
            "    metadata: {}\n");
    limits_match(l, "d", 1, &e, 1, &m);
    const struct limits_meta *md = m.leaf->metadata;
    ck_assert_ptr_nonnull(md);
    ck_assert_int_eq(md->type, LIMITS_META_STRUCT);
    const struct limits_meta *deep = member(member(md, "b"), "deep");
    ck_assert_ptr_nonnull(deep);
    ck_assert_int_eq(deep->type, LIMITS_META_LIST);
    ck_assert_uint_eq(deep->nitems, 3);
    ck_assert(deep->items[1].number == -2500 && deep->items[2].number == 0.5);
    ck_assert(member(md, "bool_y")->type == LIMITS_META_BOOL &&
              member(md, "bool_y")->boolean);
    ck_assert(member(md, "bool_off")->type == LIMITS_META_BOOL &&
              !member(md, "bool_off")->boolean);
    assert_string(md, "not_bool", "tRUE");
    ck_assert(member(md, "minus_inf")->number < -1e308);
    assert_number(md, "plus", 12);
    assert_number(md, "binary", 5);
    assert_number(md, "neg_hex", -16);
    assert_number(md, "leading_zero_8", 8);        /* not octal: a float */
    assert_string(md, "too_big_hex", "0x1ffffffffffffffff");
    assert_string(md, "huge", "1e999");
    assert_string(md, "dash", "-");
    assert_string(md, "time", "2001-12-14t21:59:43.10-05:00");
    assert_string(md, "dup", "last");
    ck_assert_uint_eq(md->nitems, 15);        /* dup once */
    /* An empty mapping is no metadata, as len(yamlMetadata) == 0 there. */
    struct limits_entry p = { "plain", 5, "x", 1 };
    limits_match(l, "d", 1, &p, 1, &m);
    ck_assert_ptr_null(m.leaf);
    limits_free(l);
    l = NULL;
    load_fails("domain: d\ndescriptors:\n  - key: k\n    metadata: text\n", 4,
               "metadata must be a mapping");
}
END_TEST

Suite *
limits_suite(void)
{
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("envoy-config");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_basic_config_matches_level_by_level);
    tcase_add_test(tc, test_rules_keep_units_flags_and_extensions);
    tcase_add_test(tc, test_wildcards_in_file_order_between_exact_and_default);
    tcase_add_test(tc, test_share_threshold_names_the_pattern);
    tcase_add_test(tc, test_errors_use_that_services_words_with_file_and_line);
    tcase_add_test(tc, test_aliases_cannot_make_the_walk_run_away);
    tcase_add_test(tc, test_a_directory_loads_its_yaml_files_sorted);
    tcase_add_test(tc, test_each_rule_walks_the_limits_with_a_number_by_stats_key);
    tcase_add_test(tc, test_metadata_reads_scalars_as_yaml_v2_does);
    tcase_add_test(tc, test_unordered_entries_take_the_trees_order);
    suite_add_tcase(s, tc);
    return s;
}
