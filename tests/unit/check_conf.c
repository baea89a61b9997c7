/*
 * check_conf.c - unit tests for conf/: defaults from the table, every value
 * type (accepted forms, bounds, overflow, malformed text), the file format
 * and its "path:line: ..." errors, the command line and its override
 * order, cross-option checks, CONFIG GET formatting, --describe-config,
 * and the shipped conf/cellgate.conf against the table.
 *
 * Each test starts from conf_init() (a checked fixture, run in the forked
 * child) and ends with conf_deinit(), so LeakSanitizer sees every string.
 * Expected numbers that come from the table (bounds, defaults) are read
 * from it, so a retuned bound does not break unrelated tests.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/special.h"
#include "conf/rewrite.h"
#include "tests/unit/suites.h"

static struct conf cfg;
static char err[CONF_ERR_LEN];
static char tmp_path[64];

static void
setup(void)
{
    ck_assert_int_eq(conf_init(&cfg), 0);
    err[0] = '\0';
}

static void
teardown(void)
{
    conf_deinit(&cfg);
}

/* ---- helpers ---- */

static const struct conf_option *
opt(const char *name)
{
    const struct conf_option *o = conf_find(name);

    ck_assert_msg(o != NULL, "no option '%s' in the table", name);
    return o;
}

static void
set_ok(const char *name, const char *value)
{
    int rc = conf_set(&cfg, name, value, err, sizeof(err));

    ck_assert_msg(rc == 0, "%s '%s' rejected: %s", name, value, err);
}

/* The value must be rejected with exactly want (NULL: any message) and the
 * option must keep its previous value. */
static void
set_fails(const char *name, const char *value, const char *want)
{
    char before[256];
    char after[256];

    conf_format(&cfg, opt(name), before, sizeof(before));
    err[0] = '\0';
    ck_assert_msg(conf_set(&cfg, name, value, err, sizeof(err)) == -1,
                  "%s '%s' accepted", name, value);
    ck_assert_msg(err[0] != '\0', "%s '%s': no message", name, value);
    if (want != NULL) {
        ck_assert_str_eq(err, want);
    }
    conf_format(&cfg, opt(name), after, sizeof(after));
    ck_assert_str_eq(after, before);
}

static const char *
fmt(const char *name)
{
    static char buf[256];

    conf_format(&cfg, opt(name), buf, sizeof(buf));
    return buf;
}

static void
write_temp(const char *text)
{
    int fd;
    size_t len = strlen(text);

    strcpy(tmp_path, "/tmp/check_conf-XXXXXX");
    fd = mkstemp(tmp_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
}

/* Load text as a config file; the file is gone again on return. */
static int
load_text(const char *text)
{
    int rc;

    write_temp(text);
    rc = conf_load_file(&cfg, tmp_path, err, sizeof(err));
    unlink(tmp_path);
    return rc;
}

/* text must fail with "<its path>:<want_after_path>". */
static void
file_fails(const char *text, const char *want_after_path)
{
    char want[CONF_ERR_LEN];

    ck_assert_int_eq(load_text(text), -1);
    snprintf(want, sizeof(want), "%s:%s", tmp_path, want_after_path);
    ck_assert_str_eq(err, want);
}

/* Run conf_load_args on "cellgate" followed by the NULL-terminated args
 * (copied, because the API takes char ** and literals are const). */
static int
run_args(const char *const *args)
{
    char *argv[32];
    int argc = 0;
    int rc;

    argv[argc++] = strdup("cellgate");
    for (size_t i = 0; args[i] != NULL; i++) {
        ck_assert_int_lt(argc, 31);
        argv[argc++] = strdup(args[i]);
    }
    argv[argc] = NULL;
    err[0] = '\0';
    rc = conf_load_args(&cfg, argc, argv, err, sizeof(err));
    for (int i = 0; i < argc; i++) {
        free(argv[i]);
    }
    return rc;
}

static void
expect_msg(const char *fmt_, ...)
{
    char want[CONF_ERR_LEN];
    va_list ap;

    va_start(ap, fmt_);
    vsnprintf(want, sizeof(want), fmt_, ap);
    va_end(ap);
    ck_assert_str_eq(err, want);
}

/* A yes/no option for the tests: the table has no CONF_BOOL row yet, so
 * this row borrows the int64_t field of "timeout". */
static const struct conf_option flag_opt = {
    "flag", CONF_BOOL, "no", 0, 1, "a test-only yes/no option",
    offsetof(struct conf, timeout)
};

/* ---- defaults and the table ---- */

START_TEST(test_init_sets_every_table_default)
{
    ck_assert_str_eq(cfg.bind, "127.0.0.1");
    ck_assert_int_eq(cfg.port, 6379);
    ck_assert_str_eq(cfg.unixsocket, "");
    ck_assert_int_eq(cfg.unixsocketperm, 0);
    ck_assert_int_eq(cfg.tcp_backlog, 511);
    ck_assert_int_eq(cfg.maxclients, 10000);
    ck_assert_int_eq(cfg.timeout, 0);
    ck_assert_int_eq(cfg.client_query_buffer_limit, 1073741824LL);
    ck_assert_int_eq(cfg.proto_max_bulk_len, 536870912LL);
    ck_assert_int_eq(cfg.proto_max_args, 1048576);
    ck_assert_int_eq(cfg.output_pause_limit, 1048576);
    ck_assert_int_eq(cfg.output_hard_limit, 268435456LL);
    ck_assert_int_eq(cfg.hz, 10);
    ck_assert_int_eq(cfg.log_max_entries, 10000);
    ck_assert_int_eq(cfg.tiers_max_window, 3600);
    ck_assert_int_eq(cfg.databases, 16);
    ck_assert_str_eq(fmt("loglevel"), "notice");
    ck_assert_str_eq(cfg.logfile, "");
}
END_TEST

START_TEST(test_every_default_is_within_its_own_bounds_and_valid)
{
    size_t n;
    const struct conf_option *t = conf_options(&n);

    /* Redis 7.0.15's 178 options and cellgate's own 33 (rls-forward-timeout
     * and rls-failure-mode-deny, then top-denied-keys, then rls-shadow-mode
     * and rls-quota-mode, then grpc-max-streaming-calls and
     * grpc-stream-idle-timeout, rlqs-max-buckets and rlqs-unknown-bucket,
     * rls-response-dynamic-metadata, and rlqs-strategy the last added) */
    ck_assert_uint_eq(n, 211);
    for (size_t i = 0; i < n; i++) {
        char buf[64];

        ck_assert_msg(conf_set_option(&cfg, &t[i], t[i].def, err,
                                      sizeof(err)) == 0,
                      "%s: %s", t[i].name, err);
        if (t[i].type == CONF_INT || t[i].type == CONF_BYTES ||
            t[i].type == CONF_OCTAL) {
            int64_t v = *(int64_t *)(void *)((char *)&cfg + t[i].offset);

            ck_assert_msg(v >= t[i].min && v <= t[i].max, "%s", t[i].name);
        }
        ck_assert_uint_gt(strlen(t[i].desc), 0);
        conf_format(&cfg, &t[i], buf, sizeof(buf));
    }
    ck_assert_int_eq(conf_validate(&cfg, NULL, err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_find_is_case_insensitive_and_null_for_unknown)
{
    ck_assert_ptr_eq(conf_find("PORT"), conf_find("port"));
    ck_assert_ptr_eq(conf_find("Client-Query-Buffer-Limit"),
                     conf_find("client-query-buffer-limit"));
    ck_assert_ptr_null(conf_find("prot"));
    ck_assert_ptr_null(conf_find("por"));
    ck_assert_ptr_null(conf_find("portx"));
    ck_assert_ptr_null(conf_find(""));
    ck_assert_ptr_null(conf_find(NULL));
}
END_TEST

START_TEST(test_conf_options_count_may_be_null)
{
    size_t n;
    const struct conf_option *counted = conf_options(&n);

    /* Without a count it is the same table, whose first row is bind;
     * every row is found by its own name. */
    ck_assert_ptr_eq(conf_options(NULL), counted);
    ck_assert_str_eq(conf_options(NULL)[0].name, "bind");
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_eq(conf_find(counted[i].name), &counted[i]);
    }
}
END_TEST

START_TEST(test_deinit_nulls_strings_and_twice_is_harmless)
{
    conf_deinit(&cfg);
    ck_assert_ptr_null(cfg.bind);
    ck_assert_ptr_null(cfg.logfile);
    conf_deinit(&cfg);
    ck_assert_int_eq(conf_init(&cfg), 0);   /* teardown frees this one */
}
END_TEST

START_TEST(test_unknown_option_is_rejected)
{
    ck_assert_int_eq(conf_set(&cfg, "prot", "1", err, sizeof(err)), -1);
    ck_assert_str_eq(err, "unknown option 'prot'");
    ck_assert_int_eq(conf_set(&cfg, NULL, "1", err, sizeof(err)), -1);
}
END_TEST

START_TEST(test_missing_value_is_rejected)
{
    set_fails("port", NULL, "'port' wants a value");
    set_fails("bind", NULL, "'bind' wants a value");
}
END_TEST

START_TEST(test_null_error_buffer_is_tolerated)
{
    ck_assert_int_eq(conf_set(&cfg, "port", "x", NULL, 0), -1);
    ck_assert_int_eq(conf_set(&cfg, "port", "x", err, 0), -1);
}
END_TEST

/* ---- CONF_INT ---- */

START_TEST(test_int_accepts_both_bounds)
{
    set_ok("port", "0");
    ck_assert_int_eq(cfg.port, 0);
    set_ok("port", "65535");
    ck_assert_int_eq(cfg.port, 65535);
    set_ok("hz", "1");
    set_ok("hz", "500");
    set_ok("timeout", "2147483647");
    ck_assert_int_eq(cfg.timeout, 2147483647);
}
END_TEST

START_TEST(test_int_rejects_one_past_each_bound)
{
    set_fails("port", "65536",
              "'port' must be between 0 and 65535, got '65536'");
    set_fails("port", "70000",
              "'port' must be between 0 and 65535, got '70000'");
    set_fails("port", "-1", "'port' must be between 0 and 65535, got '-1'");
    set_fails("hz", "0", "'hz' must be between 1 and 500, got '0'");
    set_fails("hz", "501", "'hz' must be between 1 and 500, got '501'");
    set_fails("timeout", "2147483648",
              "'timeout' must be between 0 and 2147483647, "
              "got '2147483648'");
}
END_TEST

START_TEST(test_int_beyond_int64_is_out_of_range_not_malformed)
{
    set_fails("port", "9223372036854775807",
              "'port' must be between 0 and 65535, "
              "got '9223372036854775807'");
    set_fails("port", "9223372036854775808",
              "'port' must be between 0 and 65535, "
              "got '9223372036854775808'");
    set_fails("port", "99999999999999999999999", NULL);
    set_fails("port", "-9223372036854775808", NULL);
    set_fails("port", "-99999999999999999999999", NULL);
}
END_TEST

START_TEST(test_int_rejects_anything_but_strict_decimal)
{
    static const char *const bad[] = {
        "", "abc", "+1", "007", "00", "-0", "-", " 1", "1 ", "0x10", "1.5",
        "1k", "1e3", "12a", "--1",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[128];

        snprintf(want, sizeof(want), "'port' must be an integer, got '%s'",
                 bad[i]);
        set_fails("port", bad[i], want);
    }
}
END_TEST

/* ---- CONF_BYTES ---- */

START_TEST(test_bytes_units_are_decimal_or_binary_and_case_insensitive)
{
    static const struct {
        const char *text;
        int64_t bytes;
    } v[] = {
        { "1024", 1024 },
        { "2048b", 2048 },
        { "2048B", 2048 },
        { "2k", 2000 },
        { "2kb", 2048 },
        { "2K", 2000 },
        { "2KB", 2048 },
        { "2Kb", 2048 },
        { "3m", 3000000 },
        { "3mb", 3145728 },
        { "3MB", 3145728 },
        { "1g", 1000000000 },
        { "1gb", 1073741824 },
        { "1GB", 1073741824 },
    };

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        set_ok("client-output-hard-limit", v[i].text);
        ck_assert_msg(cfg.output_hard_limit == v[i].bytes,
                      "'%s' gave %" PRId64, v[i].text,
                      cfg.output_hard_limit);
    }
}
END_TEST

START_TEST(test_bytes_accepts_bounds_and_rejects_one_past)
{
    const struct conf_option *o = opt("client-output-hard-limit");
    char text[32];
    char want[256];

    snprintf(text, sizeof(text), "%" PRId64, o->min);
    set_ok(o->name, text);
    ck_assert_int_eq(cfg.output_hard_limit, o->min);
    snprintf(text, sizeof(text), "%" PRId64, o->max);
    set_ok(o->name, text);
    ck_assert_int_eq(cfg.output_hard_limit, o->max);

    snprintf(text, sizeof(text), "%" PRId64, o->min - 1);
    snprintf(want, sizeof(want),
             "'%s' must be between %" PRId64 " and %" PRId64
             " bytes, got '%s'", o->name, o->min, o->max, text);
    set_fails(o->name, text, want);

    snprintf(text, sizeof(text), "%" PRId64, o->max + 1);
    snprintf(want, sizeof(want),
             "'%s' must be between %" PRId64 " and %" PRId64
             " bytes, got '%s'", o->name, o->min, o->max, text);
    set_fails(o->name, text, want);

    /* 1023 bytes and 1kb - 1 through a unit: the unit is applied first */
    set_fails("client-output-hard-limit", "1k", NULL);
    set_ok("client-output-hard-limit", "1kb");
}
END_TEST

START_TEST(test_bytes_overflow_is_out_of_range)
{
    const struct conf_option *o = opt("client-query-buffer-limit");
    static const char *const huge[] = {
        "99999999999gb", "9223372036854775807kb", "8589934592gb",
        "9223372036854775808", "99999999999999999999999999",
    };

    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        char want[256];

        snprintf(want, sizeof(want),
                 "'%s' must be between %" PRId64 " and %" PRId64
                 " bytes, got '%s'", o->name, o->min, o->max, huge[i]);
        set_fails(o->name, huge[i], want);
    }
}
END_TEST

START_TEST(test_bytes_rejects_malformed_sizes)
{
    static const char *const bad[] = {
        "", "kb", "1 kb", " 1kb", "1kb ", "1kib", "1.5mb", "-1kb", "-1",
        "+1k", "1t", "1tb", "mb1", "01kb", "1kbb", "1bk", "0x400",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[256];

        snprintf(want, sizeof(want),
                 "'proto-max-bulk-len' must be a size such as 512mb "
                 "(units k kb m mb g gb), got '%s'", bad[i]);
        set_fails("proto-max-bulk-len", bad[i], want);
    }
}
END_TEST

/* ---- CONF_BOOL ---- */

START_TEST(test_bool_is_yes_or_no_in_any_case)
{
    static const struct {
        const char *text;
        int64_t v;
    } ok[] = {
        { "yes", 1 }, { "no", 0 }, { "YES", 1 }, { "No", 0 }, { "yEs", 1 },
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ck_assert_int_eq(conf_set_option(&cfg, &flag_opt, ok[i].text, err,
                                         sizeof(err)), 0);
        ck_assert_int_eq(cfg.timeout, ok[i].v);
    }
}
END_TEST

START_TEST(test_bool_rejects_other_words)
{
    static const char *const bad[] = {
        "", "true", "false", "1", "0", "y", "n", "yes ", "yess", "on",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[128];

        cfg.timeout = 1;
        ck_assert_int_eq(conf_set_option(&cfg, &flag_opt, bad[i], err,
                                         sizeof(err)), -1);
        snprintf(want, sizeof(want), "'flag' must be yes or no, got '%s'",
                 bad[i]);
        ck_assert_str_eq(err, want);
        ck_assert_int_eq(cfg.timeout, 1);
    }
}
END_TEST

/* ---- CONF_STRING ---- */

START_TEST(test_string_takes_any_text_including_empty)
{
    set_ok("logfile", "/var/log/cellgate.log");
    ck_assert_str_eq(cfg.logfile, "/var/log/cellgate.log");
    set_ok("logfile", "");
    ck_assert_str_eq(cfg.logfile, "");
    set_ok("logfile", "a path with spaces");
    ck_assert_str_eq(cfg.logfile, "a path with spaces");
}
END_TEST

START_TEST(test_string_is_copied_and_replaced_without_leaking)
{
    char mine[] = "::1";

    set_ok("bind", mine);
    mine[0] = 'X';
    ck_assert_str_eq(cfg.bind, "::1");
    for (int i = 0; i < 100; i++) {
        set_ok("bind", i % 2 ? "0.0.0.0" : "::");
    }
    ck_assert_str_eq(cfg.bind, "0.0.0.0");
}
END_TEST

/* ---- CONF_ENUM ---- */

START_TEST(test_enum_accepts_listed_words_in_any_case)
{
    static const char *const words[] = { "debug", "verbose", "notice",
                                         "warning" };

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        set_ok("loglevel", words[i]);
        ck_assert_str_eq(fmt("loglevel"), words[i]);
        ck_assert_int_eq(cfg.loglevel, (int64_t)i);
    }
    /* stored in the table's spelling, whatever the user typed */
    set_ok("loglevel", "WARNING");
    ck_assert_str_eq(fmt("loglevel"), "warning");
    set_ok("loglevel", "Debug");
    ck_assert_str_eq(fmt("loglevel"), "debug");
}
END_TEST

/* options.h's enums list their constants in the order of the words of
 * their option's {...} list: every word of every enum option, here with
 * the constant it must be. */
static const struct {
    const char *name;
    size_t offset;
    int64_t value;
    const char *word;
} enum_words[] = {
#define EW(field, name, value, word)                                          \
    { name, offsetof(struct conf, field), value, word }
    EW(cluster_mode, "cluster-mode", CLUSTER_MODE_NO, "no"),
    EW(cluster_mode, "cluster-mode", CLUSTER_MODE_EMULATED, "emulated"),
    EW(cluster_preferred_endpoint_type, "cluster-preferred-endpoint-type",
       ENDPOINT_TYPE_IP, "ip"),
    EW(cluster_preferred_endpoint_type, "cluster-preferred-endpoint-type",
       ENDPOINT_TYPE_HOSTNAME, "hostname"),
    EW(cluster_preferred_endpoint_type, "cluster-preferred-endpoint-type",
       ENDPOINT_TYPE_UNKNOWN, "unknown-endpoint"),
    EW(cluster_mode, "cluster-mode", CLUSTER_MODE_YES, "yes"),
    EW(appendfsync, "appendfsync", APPENDFSYNC_ALWAYS, "always"),
    EW(appendfsync, "appendfsync", APPENDFSYNC_EVERYSEC, "everysec"),
    EW(appendfsync, "appendfsync", APPENDFSYNC_NO, "no"),
    EW(snapshot_load_errors, "snapshot-load-errors", SNAPSHOT_LOAD_REFUSE,
       "refuse"),
    EW(snapshot_load_errors, "snapshot-load-errors",
       SNAPSHOT_LOAD_START_EMPTY, "start-empty"),
    EW(rdb_unsupported_keys, "rdb-unsupported-keys", RDB_UNSUPPORTED_REFUSE,
       "refuse"),
    EW(rdb_unsupported_keys, "rdb-unsupported-keys", RDB_UNSUPPORTED_SKIP,
       "skip"),
    EW(maxmemory_policy, "maxmemory-policy", MAXMEMORY_NOEVICTION,
       "noeviction"),
    EW(maxmemory_policy, "maxmemory-policy", MAXMEMORY_VOLATILE_TTL,
       "volatile-ttl"),
    EW(loglevel, "loglevel", LOGLEVEL_DEBUG, "debug"),
    EW(loglevel, "loglevel", LOGLEVEL_VERBOSE, "verbose"),
    EW(loglevel, "loglevel", LOGLEVEL_NOTICE, "notice"),
    EW(loglevel, "loglevel", LOGLEVEL_WARNING, "warning"),
    EW(log_format, "log-format", LOG_FORMAT_PLAIN, "plain"),
    EW(log_format, "log-format", LOG_FORMAT_JSON, "json"),
    EW(rlqs_unknown_bucket, "rlqs-unknown-bucket", RLQS_UNKNOWN_ALLOW,
       "allow"),
    EW(rlqs_unknown_bucket, "rlqs-unknown-bucket", RLQS_UNKNOWN_DENY, "deny"),
    EW(rlqs_unknown_bucket, "rlqs-unknown-bucket", RLQS_UNKNOWN_ABANDON,
       "abandon"),
    EW(rlqs_strategy, "rlqs-strategy", RLQS_STRATEGY_TOKEN_BUCKET,
       "token-bucket"),
    EW(rlqs_strategy, "rlqs-strategy", RLQS_STRATEGY_PER_UNIT,
       "requests-per-time-unit"),
    EW(supervised, "supervised", SUPERVISED_NO, "no"),
    EW(supervised, "supervised", SUPERVISED_SYSTEMD, "systemd"),
    EW(supervised, "supervised", SUPERVISED_AUTO, "auto"),
    EW(supervised, "supervised", SUPERVISED_UPSTART, "upstart"),
    EW(enable_debug_command, "enable-debug-command", ALLOWED_NO, "no"),
    EW(enable_debug_command, "enable-debug-command", ALLOWED_YES, "yes"),
    EW(enable_debug_command, "enable-debug-command", ALLOWED_LOCAL, "local"),
    EW(enable_protected_configs, "enable-protected-configs", ALLOWED_NO,
       "no"),
    EW(enable_protected_configs, "enable-protected-configs", ALLOWED_YES,
       "yes"),
    EW(enable_protected_configs, "enable-protected-configs", ALLOWED_LOCAL,
       "local"),
#undef EW
};

START_TEST(test_enum_constants_follow_the_words)
{
    size_t count;
    const struct conf_option *all = conf_options(&count);
    size_t n = sizeof(enum_words) / sizeof(enum_words[0]);

    for (size_t i = 0; i < n; i++) {
        const struct conf_option *o = opt(enum_words[i].name);
        const int64_t *field =
            (const int64_t *)(const void *)((const char *)&cfg +
                                            enum_words[i].offset);

        ck_assert_int_eq(o->type, CONF_ENUM);
        ck_assert_uint_eq(o->offset, enum_words[i].offset);
        set_ok(enum_words[i].name, enum_words[i].word);
        ck_assert_int_eq(*field, enum_words[i].value);
        ck_assert_str_eq(fmt(enum_words[i].name), enum_words[i].word);
        ck_assert_int_eq(conf_enum_value(o, enum_words[i].word),
                         enum_words[i].value);
    }
    /* ... and no enum option, nor a word of one, is missing here */
    for (size_t k = 0; k < count; k++) {
        char list[256];
        size_t words = 1, listed = 0;

        if (all[k].type != CONF_ENUM) {
            continue;
        }
        conf_enum_list(&all[k], list, sizeof(list));
        for (const char *p = list; (p = strstr(p, ", ")) != NULL; p += 2) {
            words++;
        }
        for (size_t i = 0; i < n; i++) {
            listed += strcmp(enum_words[i].name, all[k].name) == 0;
        }
        /* An enum no code reads (Redis's options cellgate only keeps)
         * has no constants: each word is then its own place. */
        const char *cursor = list;
        for (size_t w = 0; listed == 0 && w < words; w++) {
            char word[64];
            size_t wl = strcspn(cursor, ",");
            snprintf(word, sizeof(word), "%.*s", (int)wl, cursor);
            set_ok(all[k].name, word);
            ck_assert_str_eq(fmt(all[k].name), word);
            ck_assert_int_eq(conf_enum_value(&all[k], word), (int64_t)w);
            cursor += wl + (cursor[wl] != '\0' ? 2 : 0);
        }
        ck_assert_msg(listed == 0 || listed == words,
                      "%s: %zu words, %zu checked", all[k].name, words,
                      listed);
    }
    ck_assert_int_eq(conf_enum_value(opt("loglevel"), "Warning"),
                     LOGLEVEL_WARNING);
    ck_assert_int_eq(conf_enum_value(opt("loglevel"), "warn"), -1);
}
END_TEST

START_TEST(test_enum_rejects_other_words_and_lists_the_allowed)
{
    static const char *const bad[] = {
        "", "loud", "not", "notices", "log", "verbosity", "{debug",
        "debug verbose", "warning}",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[256];

        snprintf(want, sizeof(want),
                 "'loglevel' must be one of debug, verbose, notice, "
                 "warning, got '%s'", bad[i]);
        set_fails("loglevel", bad[i], want);
    }
}
END_TEST

/* ---- CONF_OCTAL ---- */

START_TEST(test_octal_reads_octal_digits)
{
    set_ok("unixsocketperm", "700");
    ck_assert_int_eq(cfg.unixsocketperm, 0700);
    set_ok("unixsocketperm", "0770");
    ck_assert_int_eq(cfg.unixsocketperm, 0770);
    set_ok("unixsocketperm", "0");
    ck_assert_int_eq(cfg.unixsocketperm, 0);
    set_ok("unixsocketperm", "777");
    ck_assert_int_eq(cfg.unixsocketperm, 0777);
    set_ok("unixsocketperm", "000777");
    ck_assert_int_eq(cfg.unixsocketperm, 0777);
}
END_TEST

START_TEST(test_octal_rejects_out_of_range_and_non_octal)
{
    static const char *const bad[] = {
        "", "8", "9", "78", "-1", "+7", "0x1", "7 ", " 7", "rwx",
    };

    set_fails("unixsocketperm", "1000",
              "'unixsocketperm' must be between 0 and 777 (octal), "
              "got '1000'");
    set_fails("unixsocketperm", "7777777777777777777777777",
              "'unixsocketperm' must be between 0 and 777 (octal), "
              "got '7777777777777777777777777'");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[128];

        snprintf(want, sizeof(want),
                 "'unixsocketperm' must be octal digits such as 700, "
                 "got '%s'", bad[i]);
        set_fails("unixsocketperm", bad[i], want);
    }
}
END_TEST

/* ---- the file ---- */

START_TEST(test_file_sets_options_and_later_lines_win)
{
    ck_assert_int_eq(load_text("port 7000\n"
                               "hz 20\n"
                               "port 7001\n"), 0);
    ck_assert_int_eq(cfg.port, 7001);
    ck_assert_int_eq(cfg.hz, 20);
}
END_TEST

START_TEST(test_file_skips_comments_blanks_and_surrounding_whitespace)
{
    ck_assert_int_eq(load_text("# a comment\n"
                               "\n"
                               "   \t\n"
                               "   # an indented comment with \"quotes\n"
                               "#port 1\n"
                               "  \tport \t 7002   \n"
                               "maxclients 5"), 0);     /* no final \n */
    ck_assert_int_eq(cfg.port, 7002);
    ck_assert_int_eq(cfg.maxclients, 5);
}
END_TEST

START_TEST(test_file_tolerates_crlf_line_ends)
{
    ck_assert_int_eq(load_text("# windows\r\n"
                               "port 7003\r\n"
                               "\r\n"
                               "logfile \"x.log\"\r\n"
                               "loglevel debug\r\n"), 0);
    ck_assert_int_eq(cfg.port, 7003);
    ck_assert_str_eq(cfg.logfile, "x.log");
    ck_assert_str_eq(fmt("loglevel"), "debug");
}
END_TEST

START_TEST(test_file_names_are_case_insensitive)
{
    ck_assert_int_eq(load_text("PORT 7004\nLogLevel WARNING\n"), 0);
    ck_assert_int_eq(cfg.port, 7004);
    ck_assert_str_eq(fmt("loglevel"), "warning");
}
END_TEST

START_TEST(test_file_quoted_values_follow_redis_rules)
{
    ck_assert_int_eq(load_text("logfile \"\"\n"), 0);
    ck_assert_str_eq(cfg.logfile, "");
    ck_assert_int_eq(load_text("logfile ''\n"), 0);
    ck_assert_str_eq(cfg.logfile, "");
    ck_assert_int_eq(load_text("logfile \"/tmp/my log.txt\"\n"), 0);
    ck_assert_str_eq(cfg.logfile, "/tmp/my log.txt");
    ck_assert_int_eq(load_text("logfile \"a\\tb\\n\\x41\\\"\\\\\\q\"\n"), 0);
    ck_assert_str_eq(cfg.logfile, "a\tb\nA\"\\q");
    ck_assert_int_eq(load_text("logfile 'it\\'s \\n raw'\n"), 0);
    ck_assert_str_eq(cfg.logfile, "it's \\n raw");
    ck_assert_int_eq(load_text("logfile /tmp/\"a b\"\n"), 0);
    ck_assert_str_eq(cfg.logfile, "/tmp/a b");
    ck_assert_int_eq(load_text("\"port\" '7005'\n"), 0);
    ck_assert_int_eq(cfg.port, 7005);
    ck_assert_int_eq(load_text("unixsocket \"\\x2Frun\\x2fcg\"\n"), 0);
    ck_assert_str_eq(cfg.unixsocket, "/run/cg");
}
END_TEST

START_TEST(test_file_empty_file_changes_nothing)
{
    ck_assert_int_eq(load_text(""), 0);
    ck_assert_int_eq(cfg.port, 6379);
}
END_TEST

START_TEST(test_file_long_file_is_read_whole)
{
    /* past the loader's first 4 KiB buffer, the last line must count */
    size_t n = 2000;
    char *text = malloc(n * 8 + 32);
    size_t pos = 0;

    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < n; i++) {
        pos += (size_t)sprintf(text + pos, "hz %zu\n", 1 + i % 400);
    }
    sprintf(text + pos, "port 7777\n");
    ck_assert_int_eq(load_text(text), 0);
    free(text);
    ck_assert_int_eq(cfg.port, 7777);
    ck_assert_int_eq(cfg.hz, 1 + (n - 1) % 400);
}
END_TEST

START_TEST(test_file_unknown_option_names_path_and_line)
{
    file_fails("port 6379\n\nprot 1\n", "3: unknown option 'prot'");
}
END_TEST

START_TEST(test_file_bad_value_names_path_and_line)
{
    file_fails("# c\n#\nport 70000\n",
               "3: 'port' must be between 0 and 65535, got '70000'");
    file_fails("\n\n\n\n\n\nloglevel loud\n",
               "7: 'loglevel' must be one of debug, verbose, notice, "
               "warning, got 'loud'");
    file_fails("port \"\"\n", "1: 'port' must be an integer, got ''");
}
END_TEST

START_TEST(test_file_size_overflow_names_path_and_line)
{
    const struct conf_option *o = opt("proto-max-bulk-len");
    char want[256];

    snprintf(want, sizeof(want),
             "2: 'proto-max-bulk-len' must be between %" PRId64 " and %"
             PRId64 " bytes, got '99999999999gb'", o->min, o->max);
    file_fails("\nproto-max-bulk-len 99999999999gb\n", want);
}
END_TEST

START_TEST(test_file_missing_value_names_path_and_line)
{
    file_fails("hz 10\nhz 11\nhz 12\nhz 13\nport\n",
               "5: 'port' wants a value");
    file_fails("port   \t \r\n", "1: 'port' wants a value");
}
END_TEST

START_TEST(test_file_rejects_more_than_one_value)
{
    file_fails("logfile /tmp/a b\n",
               "1: 'logfile' takes one value, got 2 (quote a value that "
               "has spaces)");
    file_fails("port 6379 # the default\n",
               "1: 'port' takes one value; a # comment must be on its own "
               "line");
}
END_TEST

START_TEST(test_file_rejects_broken_quoting)
{
    file_fails("logfile \"abc\n", "1: unbalanced quotes");
    file_fails("logfile 'abc\n", "1: unbalanced quotes");
    file_fails("logfile \"abc\\\"\n", "1: unbalanced quotes");
    file_fails("logfile \"abc\"def\n",
               "1: a closing quote must be followed by a space or the end "
               "of the line");
    file_fails("logfile \"a\\x00b\"\n",
               "1: a value of 'logfile' cannot contain a NUL byte");
    file_fails("\"port\\x00x\" 1\n",
               "1: an option name cannot contain a NUL byte");
}
END_TEST

START_TEST(test_save_rules_are_checked_and_kept_as_pairs)
{
    struct conf_save_rule r[CONF_SAVE_RULES_MAX];
    static const char *const bad[] = { "10", "10 x", "0 5", "-1 5", "1.5 3",
                                       "5 -1", "10 1 20", " 100 5", "100 5 ",
                                       "100  5", "100\t5", " ", NULL };

    ck_assert_str_eq(cfg.save, "3600 1 300 100 60 10000");   /* Redis's */
    ck_assert_int_eq(conf_set(&cfg, "save", "100 5", err, sizeof(err)), 0);
    ck_assert_str_eq(cfg.save, "100 5");
    ck_assert_uint_eq(conf_save_rules(cfg.save, r), 1);
    ck_assert_int_eq(r[0].seconds, 100);
    ck_assert_int_eq(r[0].changes, 5);
    for (size_t i = 0; bad[i] != NULL; i++) {
        ck_assert_int_eq(conf_set(&cfg, "save", bad[i], err, sizeof(err)), -1);
        ck_assert_str_eq(err, "Invalid save parameters");
        ck_assert_str_eq(cfg.save, "100 5");        /* unchanged */
    }
    ck_assert_int_eq(conf_set(&cfg, "save", "", err, sizeof(err)), 0);
    ck_assert_uint_eq(conf_save_rules(cfg.save, r), 0);
    /* Sixteen rules at most. */
    char many[512] = "";
    for (int i = 1; i <= CONF_SAVE_RULES_MAX + 1; i++) {
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%d 1 ", i);
    }
    ck_assert_int_eq(conf_set(&cfg, "save", many, err, sizeof(err)), -1);
}
END_TEST

START_TEST(test_save_lines_of_a_file_add_up_and_empty_clears)
{
    ck_assert_int_eq(load_text("save 3600 1\nsave \"300 100\"\nsave 60 10000\n"), 0);
    ck_assert_str_eq(cfg.save, "3600 1 300 100 60 10000");
    file_fails("save 3600\n", "1: Invalid save parameters");
    file_fails("save 3600 1 # hourly\n", "1: Invalid save parameters");
    ck_assert_int_eq(load_text("save \"3600 1\"\nsave \"\"\nsave \"60 5\"\n"), 0);
    ck_assert_str_eq(cfg.save, "60 5");
}
END_TEST

START_TEST(test_save_on_the_command_line_takes_every_word_up_to_the_next_option)
{
    static const char *const args[] = { "--save", "3600", "1", "300", "100",
                                        "--hz", "20", NULL };
    static const char *const off[] = { "--save", "", "--hz", "20", NULL };

    ck_assert_int_eq(run_args(args), 0);
    ck_assert_str_eq(cfg.save, "3600 1 300 100");
    ck_assert_int_eq(cfg.hz, 20);
    ck_assert_int_eq(run_args(off), 0);
    ck_assert_str_eq(cfg.save, "");
}
END_TEST

/* Redis's options of several words: a file's lines (client-output-buffer-
 * limit's add up by class), the command line, and the canonical text
 * CONFIG GET answers, as redis-server 7.0.15 prints it. */
START_TEST(test_redis_multi_word_options_in_a_file_and_on_the_command_line)
{
    static const char *const args[] = { "--bind", "127.0.0.1", "-::1",
                                        "--oom-score-adj-values", "-100", "0",
                                        "100", "--hz", "20", NULL };

    ck_assert_int_eq(load_text("bind 127.0.0.1 -::1\n"
                               "client-output-buffer-limit normal 0 0 0\n"
                               "client-output-buffer-limit replica 1mb 1kb 6\n"
                               "client-output-buffer-limit pubsub 2k 1 0\n"
                               "shutdown-on-sigterm now save\n"
                               "list-max-ziplist-entries 512\n"
                               "lua-replicate-commands yes\n"), 0);
    ck_assert_str_eq(cfg.bind, "127.0.0.1 -::1");
    ck_assert_str_eq(fmt("client-output-buffer-limit"),
                     "normal 0 0 0 slave 1048576 1024 6 pubsub 2000 1 0");
    ck_assert_str_eq(fmt("shutdown-on-sigterm"), "save now");
    ck_assert_int_eq(run_args(args), 0);
    ck_assert_str_eq(cfg.bind, "127.0.0.1 -::1");
    ck_assert_str_eq(fmt("oom-score-adj-values"), "-100 0 100");
    ck_assert_int_eq(cfg.hz, 20);
    ck_assert_int_ne(load_text("notify-keyspace-events K E\n"), 0);
}
END_TEST

START_TEST(test_redis_special_values_are_kept_in_redis_s_canonical_form)
{
    set_ok("notify-keyspace-events", "KEA");
    ck_assert_str_eq(fmt("notify-keyspace-events"), "AKE");
    set_ok("notify-keyspace-events", "$lshzxegtdnmKE");
    ck_assert_str_eq(fmt("notify-keyspace-events"), "AKEm");  /* Redis's */
    set_ok("notify-keyspace-events", "Kdn$");
    ck_assert_str_eq(fmt("notify-keyspace-events"), "$dnK");
    /* A is g$lshzxetd: without d it is not printed */
    set_ok("notify-keyspace-events", "g$lshzxetKE");
    ck_assert_str_eq(fmt("notify-keyspace-events"), "g$lshzxetKE");
    /* n beside A is kept, as in Redis, though A is printed alone */
    set_ok("notify-keyspace-events", "nKEA");
    ck_assert_str_eq(fmt("notify-keyspace-events"), "AKE");
    ck_assert_uint_eq(conf_events_flags(cfg.notify_keyspace_events),
                      CONF_EVENT_ALL | CONF_EVENT_NEW | CONF_EVENT_KEYSPACE |
                          CONF_EVENT_KEYEVENT);
    set_ok("notify-keyspace-events", "Elm");
    ck_assert_uint_eq(conf_events_flags(cfg.notify_keyspace_events),
                      CONF_EVENT_KEYEVENT | CONF_EVENT_LIST |
                          CONF_EVENT_KEY_MISS);
    ck_assert_uint_eq(conf_events_flags(NULL), 0);
    set_ok("latency-tracking-info-percentiles", "50.0 99.990 100");
    ck_assert_str_eq(fmt("latency-tracking-info-percentiles"), "50 99.99 100");
    set_ok("maxmemory-clients", "10%");
    ck_assert_str_eq(fmt("maxmemory-clients"), "10%");
    set_ok("maxmemory-clients", "1kb");
    ck_assert_str_eq(fmt("maxmemory-clients"), "1024");
    set_ok("shutdown-on-sigint", "default");
    ck_assert_str_eq(fmt("shutdown-on-sigint"), "default");
    set_ok("client-output-buffer-limit", "slave 0 0 0");
    ck_assert_str_eq(fmt("client-output-buffer-limit"),
                     "normal 0 0 0 slave 0 0 0 pubsub 33554432 8388608 60");
    set_fails("client-output-buffer-limit", "pubsub 1 1",
              "Wrong number of arguments in buffer limit configuration.");
    set_fails("oom-score-adj-values", "1 2 2001", "Invalid oom-score-adj-"
              "values, elements must be between -2000 and 2000.");
    set_fails("maxmemory-clients", "101%",
              "percentage argument must be less or equal to 100");
    set_fails("shutdown-on-sigint", "save nosave",
              "shutdown options SAVE and NOSAVE can't be used "
              "simultaneously");
    set_fails("bind", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17",
              "Too many bind addresses specified.");
}
END_TEST

START_TEST(test_file_keeps_every_byte_of_a_binary_password)
{
    ck_assert_int_eq(load_text("requirepass \"\\x00se\\x00cret\\x00\"\n"), 0);
    ck_assert_uint_eq(cfg.requirepass.len, 9);
    ck_assert_mem_eq(cfg.requirepass.p, "\0se\0cret\0", 9);
    char buf[64];
    ck_assert_uint_eq(conf_format(&cfg, conf_find("requirepass"), buf,
                                  sizeof(buf)), 9);
    ck_assert_mem_eq(buf, "\0se\0cret\0", 9);
}
END_TEST

START_TEST(test_file_rejects_a_raw_nul_byte)
{
    static const char text[] = "port 1\nlogfile a\0b\n";
    int fd;

    strcpy(tmp_path, "/tmp/check_conf-XXXXXX");
    fd = mkstemp(tmp_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, sizeof(text) - 1),
                     (ssize_t)sizeof(text) - 1);
    close(fd);
    ck_assert_int_eq(conf_load_file(&cfg, tmp_path, err, sizeof(err)), -1);
    unlink(tmp_path);
    expect_msg("%s:2: the line contains a NUL byte", tmp_path);
}
END_TEST

START_TEST(test_file_that_cannot_be_opened_is_line_zero)
{
    ck_assert_int_eq(conf_load_file(&cfg, "/nonexistent/x.conf", err,
                                    sizeof(err)), -1);
    ck_assert_str_eq(err,
                     "/nonexistent/x.conf:0: cannot open: No such file or "
                     "directory");
}
END_TEST

START_TEST(test_file_that_is_a_directory_cannot_be_read)
{
    ck_assert_int_eq(conf_load_file(&cfg, "/tmp", err, sizeof(err)), -1);
    ck_assert_str_eq(err, "/tmp:0: cannot read: Is a directory");
}
END_TEST

START_TEST(test_file_error_keeps_earlier_lines_and_stops)
{
    ck_assert_int_eq(load_text("port 7006\nhz 0\nmaxclients 7\n"), -1);
    ck_assert_int_eq(cfg.port, 7006);
    ck_assert_int_eq(cfg.hz, 10);
    ck_assert_int_eq(cfg.maxclients, 10000);
}
END_TEST

/* ---- the command line ---- */

START_TEST(test_args_without_arguments_keep_defaults)
{
    ck_assert_int_eq(run_args((const char *[]){ NULL }), 0);
    ck_assert_int_eq(cfg.port, 6379);
    ck_assert_int_eq(conf_load_args(&cfg, 0, NULL, err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_args_override_the_file_and_last_wins)
{
    int rc;

    write_temp("port 7000\nhz 20\nloglevel debug\n");
    rc = run_args((const char *[]){ tmp_path, "--port", "7100", "--PORT",
                                    "7200", "--loglevel", "Warning",
                                    "--logfile", "", NULL });
    unlink(tmp_path);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 7200);
    ck_assert_int_eq(cfg.hz, 20);
    ck_assert_str_eq(fmt("loglevel"), "warning");
    ck_assert_str_eq(cfg.logfile, "");
}
END_TEST

START_TEST(test_args_skip_the_callers_flags_anywhere)
{
    int rc;

    write_temp("port 7000\n");
    rc = run_args((const char *[]){ "--test-config", "-h", tmp_path,
                                    "--help", "--version", "--port", "7300",
                                    "-v", "--describe-config", NULL });
    unlink(tmp_path);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(cfg.port, 7300);
}
END_TEST

START_TEST(test_args_accept_negative_looking_values)
{
    ck_assert_int_eq(run_args((const char *[]){ "--port", "-1", NULL }), -1);
    ck_assert_str_eq(err,
                     "--port: 'port' must be between 0 and 65535, got '-1'");
}
END_TEST

START_TEST(test_args_unknown_option_is_an_error)
{
    ck_assert_int_eq(run_args((const char *[]){ "--prot", "1", NULL }), -1);
    ck_assert_str_eq(err, "--prot: unknown option 'prot'");
    ck_assert_int_eq(run_args((const char *[]){ "--prot", NULL }), -1);
    ck_assert_str_eq(err, "--prot: unknown option 'prot'");
    ck_assert_int_eq(run_args((const char *[]){ "--", "x", NULL }), -1);
    ck_assert_str_eq(err, "--: unknown option ''");
}
END_TEST

START_TEST(test_args_missing_value_is_an_error)
{
    ck_assert_int_eq(run_args((const char *[]){ "--hz", "5", "--port",
                                                NULL }), -1);
    ck_assert_str_eq(err, "--port: 'port' wants a value");
    ck_assert_int_eq(run_args((const char *[]){ "--port", "--hz", "5",
                                                NULL }), -1);
    ck_assert_str_eq(err, "--port: 'port' wants a value");
}
END_TEST

START_TEST(test_args_bad_value_is_an_error)
{
    ck_assert_int_eq(run_args((const char *[]){ "--port", "70000", NULL }),
                     -1);
    ck_assert_str_eq(err,
                     "--port: 'port' must be between 0 and 65535, "
                     "got '70000'");
    ck_assert_int_eq(cfg.port, 6379);
}
END_TEST

START_TEST(test_args_file_error_keeps_its_location)
{
    int rc;

    write_temp("port 1\nbogus 2\n");
    rc = run_args((const char *[]){ tmp_path, "--port", "7400", NULL });
    unlink(tmp_path);
    ck_assert_int_eq(rc, -1);
    expect_msg("%s:2: unknown option 'bogus'", tmp_path);
    ck_assert_int_eq(run_args((const char *[]){ "/nonexistent/c.conf",
                                                NULL }), -1);
    ck_assert_str_eq(err, "/nonexistent/c.conf:0: cannot open: No such "
                          "file or directory");
}
END_TEST

START_TEST(test_args_stray_words_are_errors)
{
    ck_assert_int_eq(run_args((const char *[]){ "--port", "7000", "a.conf",
                                                NULL }), -1);
    ck_assert_str_eq(err, "unexpected argument 'a.conf' (usage: "
                          "[config-file] [--name value ...])");
    ck_assert_int_eq(run_args((const char *[]){ "-x", NULL }), -1);
    ck_assert_str_eq(err, "unexpected argument '-x' (usage: "
                          "[config-file] [--name value ...])");
    ck_assert_int_eq(run_args((const char *[]){ "--port", "1", "2", NULL }),
                     -1);
    ck_assert_str_eq(err, "unexpected argument '2' (usage: "
                          "[config-file] [--name value ...])");
}
END_TEST

START_TEST(test_args_only_one_config_file)
{
    int rc;

    write_temp("port 7000\n");
    rc = run_args((const char *[]){ tmp_path, tmp_path, NULL });
    unlink(tmp_path);
    ck_assert_int_eq(rc, -1);
}
END_TEST

START_TEST(test_args_run_validation_at_the_end)
{
    ck_assert_int_eq(run_args((const char *[]){
                         "--client-output-pause-limit", "300mb", NULL }), -1);
    ck_assert_str_eq(err, "'client-output-pause-limit' (314572800) must be "
                          "below 'client-output-hard-limit' (268435456)");
    /* a later argument can repair what an earlier one broke */
    ck_assert_int_eq(run_args((const char *[]){
                         "--client-output-pause-limit", "300mb",
                         "--client-output-hard-limit", "512mb", NULL }), 0);
}
END_TEST

/* ---- validation ---- */

START_TEST(test_validate_pause_limit_must_be_below_hard_limit)
{
    set_ok("client-output-hard-limit", "1mb");
    set_ok("client-output-pause-limit", "1mb");
    ck_assert_int_eq(conf_validate(&cfg, NULL, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "'client-output-pause-limit' (1048576) must be "
                          "below 'client-output-hard-limit' (1048576)");
    set_ok("client-output-pause-limit", "1048575");
    ck_assert_int_eq(conf_validate(&cfg, NULL, err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_validate_bulk_len_must_not_exceed_query_buffer)
{
    set_ok("client-query-buffer-limit", "1mb");
    set_ok("proto-max-bulk-len", "1mb");
    ck_assert_int_eq(conf_validate(&cfg, NULL, err, sizeof(err)), 0);
    set_ok("proto-max-bulk-len", "1048577");
    ck_assert_int_eq(conf_validate(&cfg, NULL, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "'proto-max-bulk-len' (1048577) must not exceed "
                          "'client-query-buffer-limit' (1048576)");
}
END_TEST

/* ---- CONFIG GET formatting ---- */

START_TEST(test_format_shows_each_type_as_config_get_does)
{
    char buf[64];

    ck_assert_str_eq(fmt("port"), "6379");
    ck_assert_str_eq(fmt("client-query-buffer-limit"), "1073741824");
    ck_assert_str_eq(fmt("client-output-pause-limit"), "1048576");
    ck_assert_str_eq(fmt("bind"), "127.0.0.1");
    ck_assert_str_eq(fmt("logfile"), "");
    ck_assert_str_eq(fmt("loglevel"), "notice");
    ck_assert_str_eq(fmt("unixsocketperm"), "0");
    set_ok("unixsocketperm", "0750");
    ck_assert_str_eq(fmt("unixsocketperm"), "750");
    set_ok("client-output-pause-limit", "2k");
    ck_assert_str_eq(fmt("client-output-pause-limit"), "2000");
    set_ok("loglevel", "VERBOSE");
    ck_assert_str_eq(fmt("loglevel"), "verbose");

    conf_set_option(&cfg, &flag_opt, "yes", err, sizeof(err));
    ck_assert_uint_eq(conf_format(&cfg, &flag_opt, buf, sizeof(buf)), 3);
    ck_assert_str_eq(buf, "yes");
    conf_set_option(&cfg, &flag_opt, "NO", err, sizeof(err));
    ck_assert_uint_eq(conf_format(&cfg, &flag_opt, buf, sizeof(buf)), 2);
    ck_assert_str_eq(buf, "no");
}
END_TEST

START_TEST(test_format_truncates_and_returns_the_length_written)
{
    char buf[4];

    ck_assert_uint_eq(conf_format(&cfg, opt("client-query-buffer-limit"),
                                  buf, sizeof(buf)), 3);
    ck_assert_str_eq(buf, "107");
    ck_assert_uint_eq(conf_format(&cfg, opt("port"), buf, 0), 0);
    ck_assert_uint_eq(conf_format(&cfg, opt("port"), buf, 1), 0);
    ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_format_round_trips_through_set)
{
    size_t n;
    const struct conf_option *t = conf_options(&n);

    for (size_t i = 0; i < n; i++) {
        char a[256];
        char b[256];

        conf_format(&cfg, &t[i], a, sizeof(a));
        ck_assert_msg(conf_set_option(&cfg, &t[i], a, err, sizeof(err)) == 0,
                      "%s '%s': %s", t[i].name, a, err);
        conf_format(&cfg, &t[i], b, sizeof(b));
        ck_assert_str_eq(a, b);
    }
}
END_TEST

/* ---- --describe-config ---- */

static bool
quoted(enum conf_type t)
{
    return t == CONF_STRING || t == CONF_BINARY || t == CONF_SAVE ||
           t == CONF_PRIMARY || t == CONF_SPECIAL;
}

START_TEST(test_describe_lists_every_option_with_default_and_description)
{
    FILE *f = tmpfile();
    char *text;
    long len;
    size_t n;
    const struct conf_option *t = conf_options(&n);

    ck_assert_ptr_nonnull(f);
    conf_describe(f);
    len = ftell(f);
    ck_assert_int_gt(len, 0);
    text = calloc(1, (size_t)len + 1);
    ck_assert_ptr_nonnull(text);
    rewind(f);
    ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    for (size_t i = 0; i < n; i++) {
        char line[256];

        snprintf(line, sizeof(line), "%s %s%s%s  (", t[i].name,
                 quoted(t[i].type) ? "\"" : "", t[i].def,
                 quoted(t[i].type) ? "\"" : "");
        ck_assert_msg(strstr(text, line) != NULL, "no '%s'", line);
        ck_assert_msg(strstr(text, t[i].desc) != NULL, "no '%s'", t[i].desc);
    }
    ck_assert_ptr_nonnull(strstr(text, "port 6379  (int, 0 to 65535)\n"
                                       "    TCP port"));
    ck_assert_ptr_nonnull(strstr(text, "unixsocketperm 0  (octal, 0 to 777)"));
    free(text);
}
END_TEST

/* ---- aliases (options.h's CONF_ALIASES) ---- */

/* Redis 7.0.15's aliases of the options cellgate has (config.c's
 * createXConfig(name, alias, ...)), the alias first. */
static const char *const redis_aliases[][2] = {
    { "slaveof", "replicaof" },
    { "slave-read-only", "replica-read-only" },
    { "slave-priority", "replica-priority" },
    { "slave-announce-ip", "replica-announce-ip" },
    { "slave-announce-port", "replica-announce-port" },
    { "min-slaves-to-write", "min-replicas-to-write" },
    { "min-slaves-max-lag", "min-replicas-max-lag" },
    { "repl-ping-slave-period", "repl-ping-replica-period" },
    { "lua-time-limit", "busy-reply-threshold" },
    { "cluster-slave-no-failover", "cluster-replica-no-failover" },
    { "slave-lazy-flush", "replica-lazy-flush" },
    { "slave-serve-stale-data", "replica-serve-stale-data" },
    { "slave-ignore-maxmemory", "replica-ignore-maxmemory" },
    { "cluster-slave-validity-factor", "cluster-replica-validity-factor" },
    { "list-max-ziplist-size", "list-max-listpack-size" },
    { "hash-max-ziplist-entries", "hash-max-listpack-entries" },
    { "zset-max-ziplist-entries", "zset-max-listpack-entries" },
    { "hash-max-ziplist-value", "hash-max-listpack-value" },
    { "zset-max-ziplist-value", "zset-max-listpack-value" },
};
#define NREDIS_ALIASES (sizeof(redis_aliases) / sizeof(redis_aliases[0]))

START_TEST(test_aliases_are_redis_s_and_find_their_option)
{
    size_t n;
    const struct conf_alias *a = conf_aliases(&n);
    size_t nopts;
    const struct conf_option *t = conf_options(&nopts);

    ck_assert_ptr_eq(conf_aliases(NULL), a);
    ck_assert_uint_eq(n, NREDIS_ALIASES);
    for (size_t i = 0; i < NREDIS_ALIASES; i++) {
        const char *spelling = NULL;
        const struct conf_option *o = conf_lookup(redis_aliases[i][0],
                                                  &spelling);

        ck_assert_msg(o != NULL, "no alias %s", redis_aliases[i][0]);
        ck_assert_ptr_eq(o, opt(redis_aliases[i][1]));
        ck_assert_str_eq(spelling, redis_aliases[i][0]);
        ck_assert_str_eq(conf_alias(o), redis_aliases[i][0]);
        ck_assert_ptr_eq(conf_find(redis_aliases[i][0]), o);
    }
    /* Each alias row names one option, by the offset of its field, and
     * no option has two (conf_alias answers the first). */
    for (size_t i = 0; i < n; i++) {
        size_t owners = 0;
        for (size_t j = 0; j < nopts; j++) {
            owners += t[j].offset == a[i].offset;
            ck_assert_msg(strcasecmp(t[j].name, a[i].name) != 0,
                          "alias %s is an option's name", a[i].name);
        }
        ck_assert_uint_eq(owners, 1);
        for (size_t j = 0; j < i; j++) {
            ck_assert_uint_ne(a[j].offset, a[i].offset);
        }
    }
    /* An option's own name is its spelling; options without an alias. */
    const char *spelling = NULL;
    ck_assert_ptr_eq(conf_lookup("Busy-Reply-Threshold", &spelling),
                     opt("busy-reply-threshold"));
    ck_assert_str_eq(spelling, "busy-reply-threshold");
    ck_assert_ptr_null(conf_alias(opt("port")));
    ck_assert_ptr_null(conf_lookup("lua-time", &spelling));
    ck_assert_ptr_null(conf_lookup("lua-time-limitx", NULL));
    ck_assert_ptr_null(conf_lookup("slave", NULL));
    ck_assert_ptr_null(conf_lookup(NULL, NULL));
}
END_TEST

START_TEST(test_alias_lookup_is_case_insensitive_and_spells_the_table)
{
    const char *spelling = NULL;

    ck_assert_ptr_eq(conf_lookup("LUA-TIME-LIMIT", &spelling),
                     opt("busy-reply-threshold"));
    ck_assert_str_eq(spelling, "lua-time-limit");
    ck_assert_ptr_eq(conf_lookup("Slave-Read-Only", &spelling),
                     opt("replica-read-only"));
    ck_assert_str_eq(spelling, "slave-read-only");
}
END_TEST

START_TEST(test_alias_sets_its_option)
{
    set_ok("lua-time-limit", "100");
    ck_assert_int_eq(cfg.busy_reply_threshold, 100);
    set_ok("SLAVE-READ-ONLY", "no");
    ck_assert_int_eq(cfg.replica_read_only, 0);
    set_ok("slaveof", "10.0.0.1 6379");
    ck_assert_str_eq(cfg.replicaof, "10.0.0.1 6379");
    set_ok("slave-announce-ip", "10.1.1.1");
    ck_assert_str_eq(cfg.replica_announce_ip, "10.1.1.1");
    set_ok("slave-priority", "7");
    set_ok("slave-announce-port", "7001");
    set_ok("min-slaves-to-write", "2");
    set_ok("min-slaves-max-lag", "3");
    set_ok("repl-ping-slave-period", "4");
    ck_assert_int_eq(cfg.replica_priority, 7);
    ck_assert_int_eq(cfg.replica_announce_port, 7001);
    ck_assert_int_eq(cfg.min_replicas_to_write, 2);
    ck_assert_int_eq(cfg.min_replicas_max_lag, 3);
    ck_assert_int_eq(cfg.repl_ping_replica_period, 4);
    /* One option: the last name set wins, as on Redis. */
    set_ok("busy-reply-threshold", "300");
    ck_assert_str_eq(fmt("lua-time-limit"), "300");
}
END_TEST

START_TEST(test_alias_errors_name_the_alias)
{
    set_fails("lua-time-limit", "abc",
              "'lua-time-limit' must be an integer, got 'abc'");
    set_fails("LUA-TIME-LIMIT", "-1",
              "'lua-time-limit' must be between 0 and 9223372036854775807, "
              "got '-1'");
    set_fails("slave-read-only", "maybe",
              "'slave-read-only' must be yes or no, got 'maybe'");
    set_fails("busy-reply-threshold", "abc",
              "'busy-reply-threshold' must be an integer, got 'abc'");
    set_fails("lua-time-limit", NULL, "'lua-time-limit' wants a value");
}
END_TEST

START_TEST(test_file_takes_aliases)
{
    ck_assert_msg(load_text("lua-time-limit 100\nSLAVE-READ-ONLY no\n"
                            "slaveof 10.0.0.1 6379\nmin-slaves-to-write 3\n"
                            "repl-ping-slave-period 5\n") == 0, "%s", err);
    ck_assert_int_eq(cfg.busy_reply_threshold, 100);
    ck_assert_int_eq(cfg.replica_read_only, 0);
    ck_assert_str_eq(cfg.replicaof, "10.0.0.1 6379");
    ck_assert_int_eq(cfg.min_replicas_to_write, 3);
    ck_assert_int_eq(cfg.repl_ping_replica_period, 5);
    /* Either name of one option: the later line wins. */
    ck_assert_int_eq(load_text("lua-time-limit 1\nbusy-reply-threshold 2\n"),
                     0);
    ck_assert_int_eq(cfg.busy_reply_threshold, 2);
    ck_assert_int_eq(load_text("busy-reply-threshold 3\nlua-time-limit 4\n"),
                     0);
    ck_assert_int_eq(cfg.busy_reply_threshold, 4);
    file_fails("# x\nlua-time-limit soon\n",
               "2: 'lua-time-limit' must be an integer, got 'soon'");
    file_fails("slaveof x\n", "1: 'slaveof' wants \"<host> <port>\" (port 0 "
               "to 65535), got \"x\"");
    file_fails("slave-read-only\n", "1: 'slave-read-only' wants a value");
    file_fails("slave-read-only yes no\n", "1: 'slave-read-only' takes one "
               "value, got 2 (quote a value that has spaces)");
}
END_TEST

START_TEST(test_args_take_aliases)
{
    const char *const ok[] = { "--lua-time-limit", "250", "--slaveof",
                               "10.0.0.2", "6380", "--slave-priority", "9",
                               NULL };
    const char *const bad[] = { "--slave-announce-port", "70000", NULL };
    const char *const bad_primary[] = { "--slaveof", "h", "x", NULL };

    ck_assert_msg(run_args(ok) == 0, "%s", err);
    ck_assert_int_eq(cfg.busy_reply_threshold, 250);
    ck_assert_str_eq(cfg.replicaof, "10.0.0.2 6380");
    ck_assert_int_eq(cfg.replica_priority, 9);
    ck_assert_int_eq(run_args(bad), -1);
    expect_msg("--slave-announce-port: 'slave-announce-port' must be between "
               "0 and 65535, got '70000'");
    ck_assert_int_eq(run_args(bad_primary), -1);
    expect_msg("--slaveof: 'slaveof' wants \"<host> <port>\" (port 0 to "
               "65535), got \"h x\"");
}
END_TEST

START_TEST(test_describe_names_each_alias_under_its_option)
{
    FILE *f = tmpfile();
    char text[65536];
    size_t len;

    ck_assert_ptr_nonnull(f);
    conf_describe(f);
    rewind(f);
    len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    ck_assert_ptr_nonnull(strstr(text,
        "busy-reply-threshold 5000  (int, 0 to 9223372036854775807)\n"
        "    ms a script runs before other clients get -BUSY; 0 = never\n"
        "    alias: lua-time-limit\n"));
    for (size_t i = 0; i < NREDIS_ALIASES; i++) {
        char line[128];
        snprintf(line, sizeof(line), "\n    alias: %s\n",
                 redis_aliases[i][0]);
        ck_assert_msg(strstr(text, line) != NULL, "no '%s'", line + 1);
    }
    /* Only under the options that have one. */
    size_t count = 0;
    for (const char *p = text; (p = strstr(p, "    alias: ")) != NULL; p++) {
        count++;
    }
    ck_assert_uint_eq(count, NREDIS_ALIASES);
}
END_TEST

/* ---- the shipped conf/cellgate.conf ---- */

static const char *
shipped_path(void)
{
    const char *p = getenv("CELLGATE_CONF");

    return (p != NULL && p[0] != '\0') ? p : "conf/cellgate.conf";
}

/* The shipped file, whole, NUL-terminated. */
static char *
read_shipped(void)
{
    FILE *f = fopen(shipped_path(), "r");
    char *text;
    long len;

    ck_assert_msg(f != NULL, "cannot open %s (run from the repo root or "
                  "set CELLGATE_CONF)", shipped_path());
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return text;
}

/* Split a setting line (already known not to be a comment or blank) into
 * its name and value, independently of conf.c's parser: the shipped file
 * only needs "name value" and "name \"a quoted value\"". */
static void
split_setting(char *line, char **name, char **value)
{
    size_t vlen;

    *name = line + strspn(line, " \t");
    *value = *name + strcspn(*name, " \t");
    if (**value != '\0') {
        *(*value)++ = '\0';
    }
    *value += strspn(*value, " \t");
    /* A quoted value may hold spaces (save "3600 1 300 100"). */
    if ((*value)[0] == '"' && strchr(*value + 1, '"') != NULL) {
        vlen = (size_t)(strchr(*value + 1, '"') - *value) + 1;
    } else {
        vlen = strcspn(*value, " \t\r");
    }
    ck_assert_msg((*value)[vlen + strspn(*value + vlen, " \t\r")] == '\0',
                  "'%s': more than one value", *name);
    (*value)[vlen] = '\0';
    ck_assert_msg(strchr(*value, '\\') == NULL, "'%s': escapes", *name);
    if (vlen >= 2 && ((*value)[0] == '"' || (*value)[0] == '\'') &&
        (*value)[vlen - 1] == (*value)[0]) {
        (*value)[vlen - 1] = '\0';
        (*value)++;
    }
}

static bool
is_comment_line(const char *line)
{
    return line[strspn(line, " \t")] == '#';
}

static bool
is_blank_line(const char *line)
{
    return line[strspn(line, " \t\r")] == '\0';
}

START_TEST(test_shipped_conf_loads_without_error)
{
    ck_assert_msg(conf_load_file(&cfg, shipped_path(), err,
                                 sizeof(err)) == 0, "%s", err);
    ck_assert_msg(conf_validate(&cfg, NULL, err, sizeof(err)) == 0, "%s", err);
}
END_TEST

/* The shipped file sets every option to its built-in default, except
 * where it deliberately differs: it turns the journal on (its cost is
 * within 10 % of CPU per request, docs/performance.md), while a bare start
 * keeps Redis's default, appendonly no. */
static const char *
shipped_value(const struct conf_option *o)
{
    return strcmp(o->name, "appendonly") == 0 ? "yes" : o->def;
}

START_TEST(test_shipped_conf_leaves_every_value_at_its_default_but_the_journal)
{
    struct conf fresh;
    size_t n;
    const struct conf_option *t = conf_options(&n);

    ck_assert_int_eq(conf_init(&fresh), 0);
    ck_assert_msg(conf_load_file(&cfg, shipped_path(), err,
                                 sizeof(err)) == 0, "%s", err);
    for (size_t i = 0; i < n; i++) {
        char a[256];
        char b[256];

        conf_format(&fresh, &t[i], a, sizeof(a));
        conf_format(&cfg, &t[i], b, sizeof(b));
        if (strcmp(shipped_value(&t[i]), t[i].def) != 0) {
            ck_assert_str_eq(b, shipped_value(&t[i]));
            continue;
        }
        ck_assert_msg(strcmp(a, b) == 0, "%s: default '%s', file '%s'",
                      t[i].name, a, b);
    }
    conf_deinit(&fresh);
}
END_TEST

START_TEST(test_shipped_conf_sets_each_option_once_to_the_table_text)
{
    char *text = read_shipped();
    char *next = text;
    size_t n;
    const struct conf_option *t = conf_options(&n);
    unsigned seen[256] = { 0 };
    bool prev_comment = false;

    ck_assert_uint_le(n, sizeof(seen) / sizeof(seen[0]));
    /* Line by line by hand: strtok would merge blank lines, and a blank
     * line between a comment and its setting must count. */
    while (next != NULL && *next != '\0') {
        char *line = next;
        char *nl = strchr(line, '\n');
        char *name;
        char *value;
        const struct conf_option *o;

        next = (nl != NULL) ? nl + 1 : NULL;
        if (nl != NULL) {
            *nl = '\0';
        }
        if (is_comment_line(line) || is_blank_line(line)) {
            prev_comment = is_comment_line(line);
            continue;
        }
        split_setting(line, &name, &value);
        o = conf_find(name);
        ck_assert_msg(o != NULL, "unknown setting '%s'", name);
        ck_assert_msg(strcmp(name, o->name) == 0, "'%s' spelled '%s'",
                      o->name, name);
        ck_assert_msg(prev_comment, "'%s' has no comment right above it",
                      name);
        ck_assert_msg(strcmp(value, shipped_value(o)) == 0,
                      "'%s' is '%s' in the file, '%s' expected", name,
                      value, shipped_value(o));
        seen[o - t]++;
        prev_comment = false;
    }
    free(text);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(seen[i] == 1, "'%s' is set %u times in %s", t[i].name,
                      seen[i], shipped_path());
    }
}
END_TEST

START_TEST(test_shipped_conf_has_a_comment_block_per_option)
{
    char *text = read_shipped();
    size_t n;
    const struct conf_option *t = conf_options(&n);

    for (size_t i = 0; i < n; i++) {
        char head[128];

        /* "# name: what it does ..." opens each option's block */
        snprintf(head, sizeof(head), "\n# %s: ", t[i].name);
        ck_assert_msg(strstr(text, head) != NULL, "no '# %s:' block",
                      t[i].name);
    }
    free(text);
}
END_TEST

/* Each alias is named in its option's comment block, the block above the
 * option's line: "# Redis's older name <alias> is taken too." */
START_TEST(test_shipped_conf_names_each_alias_in_its_option_s_block)
{
    char *text = read_shipped();
    size_t n;
    const struct conf_alias *a = conf_aliases(&n);
    size_t nopts;
    const struct conf_option *t = conf_options(&nopts);

    for (size_t i = 0; i < n; i++) {
        const struct conf_option *o = NULL;
        char head[128], line[128], note[160];

        for (size_t j = 0; j < nopts; j++) {
            if (t[j].offset == a[i].offset) {
                o = &t[j];
            }
        }
        ck_assert_ptr_nonnull(o);
        snprintf(head, sizeof(head), "\n# %s: ", o->name);
        snprintf(line, sizeof(line), "\n%s ", o->name);
        snprintf(note, sizeof(note),
                 "\n# Redis's older name %s is taken too.\n", a[i].name);
        const char *block = strstr(text, head);
        const char *end = block != NULL ? strstr(block, line) : NULL;
        const char *at = block != NULL ? strstr(block, note) : NULL;
        ck_assert_msg(at != NULL && end != NULL && at < end,
                      "no '%s' in the block of %s", note + 1, o->name);
        /* ... and not as a setting of its own (the file sets names). */
        snprintf(line, sizeof(line), "\n%s ", a[i].name);
        ck_assert_ptr_null(strstr(text, line));
    }
    free(text);
}
END_TEST

/* ---- the suite ---- */

static TCase *
tcase(const char *name)
{
    TCase *tc = tcase_create(name);

    tcase_add_checked_fixture(tc, setup, teardown);
    return tc;
}

static TCase *
defaults_tcase(void)
{
    TCase *tc = tcase("defaults");

    tcase_add_test(tc, test_init_sets_every_table_default);
    tcase_add_test(tc, test_every_default_is_within_its_own_bounds_and_valid);
    tcase_add_test(tc, test_find_is_case_insensitive_and_null_for_unknown);
    tcase_add_test(tc, test_conf_options_count_may_be_null);
    tcase_add_test(tc, test_deinit_nulls_strings_and_twice_is_harmless);
    tcase_add_test(tc, test_unknown_option_is_rejected);
    tcase_add_test(tc, test_missing_value_is_rejected);
    tcase_add_test(tc, test_null_error_buffer_is_tolerated);
    return tc;
}

static TCase *
types_tcase(void)
{
    TCase *tc = tcase("types");

    tcase_add_test(tc, test_int_accepts_both_bounds);
    tcase_add_test(tc, test_int_rejects_one_past_each_bound);
    tcase_add_test(tc, test_int_beyond_int64_is_out_of_range_not_malformed);
    tcase_add_test(tc, test_int_rejects_anything_but_strict_decimal);
    tcase_add_test(tc,
        test_bytes_units_are_decimal_or_binary_and_case_insensitive);
    tcase_add_test(tc, test_bytes_accepts_bounds_and_rejects_one_past);
    tcase_add_test(tc, test_bytes_overflow_is_out_of_range);
    tcase_add_test(tc, test_bytes_rejects_malformed_sizes);
    tcase_add_test(tc, test_bool_is_yes_or_no_in_any_case);
    tcase_add_test(tc, test_bool_rejects_other_words);
    tcase_add_test(tc, test_string_takes_any_text_including_empty);
    tcase_add_test(tc, test_string_is_copied_and_replaced_without_leaking);
    tcase_add_test(tc, test_enum_accepts_listed_words_in_any_case);
    tcase_add_test(tc, test_enum_constants_follow_the_words);
    tcase_add_test(tc, test_enum_rejects_other_words_and_lists_the_allowed);
    tcase_add_test(tc, test_octal_reads_octal_digits);
    tcase_add_test(tc, test_octal_rejects_out_of_range_and_non_octal);
    return tc;
}

static TCase *
file_tcase(void)
{
    TCase *tc = tcase("file");

    tcase_add_test(tc, test_file_sets_options_and_later_lines_win);
    tcase_add_test(tc,
        test_file_skips_comments_blanks_and_surrounding_whitespace);
    tcase_add_test(tc, test_file_tolerates_crlf_line_ends);
    tcase_add_test(tc, test_file_names_are_case_insensitive);
    tcase_add_test(tc, test_file_quoted_values_follow_redis_rules);
    tcase_add_test(tc, test_file_empty_file_changes_nothing);
    tcase_add_test(tc, test_file_long_file_is_read_whole);
    tcase_add_test(tc, test_file_unknown_option_names_path_and_line);
    tcase_add_test(tc, test_file_bad_value_names_path_and_line);
    tcase_add_test(tc, test_file_size_overflow_names_path_and_line);
    tcase_add_test(tc, test_file_missing_value_names_path_and_line);
    tcase_add_test(tc, test_file_rejects_more_than_one_value);
    tcase_add_test(tc, test_file_rejects_broken_quoting);
    tcase_add_test(tc, test_file_keeps_every_byte_of_a_binary_password);
    tcase_add_test(tc, test_save_rules_are_checked_and_kept_as_pairs);
    tcase_add_test(tc, test_save_lines_of_a_file_add_up_and_empty_clears);
    tcase_add_test(tc, test_save_on_the_command_line_takes_every_word_up_to_the_next_option);
    tcase_add_test(tc,
        test_redis_multi_word_options_in_a_file_and_on_the_command_line);
    tcase_add_test(tc,
        test_redis_special_values_are_kept_in_redis_s_canonical_form);
    tcase_add_test(tc, test_file_rejects_a_raw_nul_byte);
    tcase_add_test(tc, test_file_that_cannot_be_opened_is_line_zero);
    tcase_add_test(tc, test_file_that_is_a_directory_cannot_be_read);
    tcase_add_test(tc, test_file_error_keeps_earlier_lines_and_stops);
    return tc;
}

static TCase *
args_tcase(void)
{
    TCase *tc = tcase("args");

    tcase_add_test(tc, test_args_without_arguments_keep_defaults);
    tcase_add_test(tc, test_args_override_the_file_and_last_wins);
    tcase_add_test(tc, test_args_skip_the_callers_flags_anywhere);
    tcase_add_test(tc, test_args_accept_negative_looking_values);
    tcase_add_test(tc, test_args_unknown_option_is_an_error);
    tcase_add_test(tc, test_args_missing_value_is_an_error);
    tcase_add_test(tc, test_args_bad_value_is_an_error);
    tcase_add_test(tc, test_args_file_error_keeps_its_location);
    tcase_add_test(tc, test_args_stray_words_are_errors);
    tcase_add_test(tc, test_args_only_one_config_file);
    tcase_add_test(tc, test_args_run_validation_at_the_end);
    return tc;
}

static TCase *
output_tcase(void)
{
    TCase *tc = tcase("validate_and_output");

    tcase_add_test(tc, test_validate_pause_limit_must_be_below_hard_limit);
    tcase_add_test(tc, test_validate_bulk_len_must_not_exceed_query_buffer);
    tcase_add_test(tc, test_format_shows_each_type_as_config_get_does);
    tcase_add_test(tc, test_format_truncates_and_returns_the_length_written);
    tcase_add_test(tc, test_format_round_trips_through_set);
    tcase_add_test(tc,
        test_describe_lists_every_option_with_default_and_description);
    return tc;
}

/* ---- CONFIG REWRITE (conf/rewrite.c) --------------------------------- */

static char *
rewritten(const char *old)
{
    size_t n;
    char *out = conf_rewrite_text(&cfg, NULL, old, strlen(old), &n);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(strlen(out), n);
    return out;
}

START_TEST(test_rewrite_of_defaults_changes_nothing_but_duplicates)
{
    char *out = rewritten("# top\n\nport 6379\nport 6379\n  # indented\n"
                          "cluster-node a b c\nnosuch option\n");
    ck_assert_str_eq(out, "# top\n\nport 6379\n  # indented\n"
                          "cluster-node a b c\nnosuch option\n");
    free(out);
}
END_TEST

/* After a cluster failover: the new lines where the first old one stood,
 * the other old ones gone, options as written when no conf is given. */
START_TEST(test_rewrite_replaces_the_topology_lines_in_place)
{
    const char *old = "# top\nport   7001\ncluster-node a 1\n# mid\n"
                      "  cluster-node b 2\nmaxmemory 1mb\n";
    size_t n;
    char *out = conf_rewrite_text(NULL, "cluster-node b 1\ncluster-node a 2\n",
                                  old, strlen(old), &n);
    ck_assert_str_eq(out, "# top\nport   7001\ncluster-node b 1\n"
                          "cluster-node a 2\n# mid\nmaxmemory 1mb\n");
    free(out);
    out = conf_rewrite_text(NULL, "cluster-node c 3\n", "port 1\n", 7, &n);
    ck_assert_str_eq(out, "port 1\ncluster-node c 3\n");
    free(out);
}
END_TEST

START_TEST(test_rewrite_writes_values_as_redis_does)
{
    ck_assert_int_eq(conf_set(&cfg, "maxmemory", "1536kb", err, sizeof(err)), 0);
    ck_assert_int_eq(conf_set(&cfg, "logfile", "/var/log/a \"b\".log", err,
                              sizeof(err)), 0);
    ck_assert_int_eq(conf_set(&cfg, "save", "", err, sizeof(err)), 0);
    ck_assert_int_eq(conf_set(&cfg, "client-output-hard-limit", "1gb", err,
                              sizeof(err)), 0);
    char *out = rewritten("maxmemory 0\nsave 3600 1");
    ck_assert_str_eq(out,
        "maxmemory 1536kb\nsave \"\"\n\n# Generated by CONFIG REWRITE\n"
        "client-output-hard-limit 1gb\n"
        "logfile \"/var/log/a \\\"b\\\".log\"\n");
    char *again = rewritten(out);       /* the marker is not added twice */
    ck_assert_str_eq(again, out);
    free(again);
    free(out);
}
END_TEST

START_TEST(test_rewritten_text_loads_back_to_the_same_values)
{
    ck_assert_int_eq(conf_set(&cfg, "requirepass", "p w", err, sizeof(err)), 0);
    ck_assert_int_eq(conf_set(&cfg, "hz", "25", err, sizeof(err)), 0);
    ck_assert_int_eq(conf_set(&cfg, "save", "60 5 300 10", err, sizeof(err)), 0);
    char *out = rewritten("");
    char path[] = "/tmp/check-conf-rewrite-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, out, strlen(out)), (ssize_t)strlen(out));
    close(fd);
    struct conf back;
    ck_assert_int_eq(conf_init(&back), 0);
    ck_assert_msg(conf_load_file(&back, path, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(back.hz, 25);
    ck_assert_str_eq(back.save, "60 5 300 10");
    ck_assert_uint_eq(back.requirepass.len, 3);
    conf_deinit(&back);
    unlink(path);
    free(out);
}
END_TEST

/* As Redis: a line that set an option by its alias gets the option's
 * name and running value; a later line of the same option (by either
 * name) goes. */
START_TEST(test_rewrite_writes_the_option_s_name_on_an_alias_line)
{
    ck_assert_int_eq(conf_set(&cfg, "lua-time-limit", "200", err,
                              sizeof(err)), 0);
    ck_assert_int_eq(conf_set(&cfg, "slave-announce-port", "7", err,
                              sizeof(err)), 0);
    char *out = rewritten("# head\nlua-time-limit 100\nSLAVE-READ-ONLY yes\n"
                          "min-slaves-to-write 0\nbusy-reply-threshold 300\n"
                          "slaveof 10.0.0.1 6379\n");
    ck_assert_str_eq(out,
        "# head\nbusy-reply-threshold 200\nreplica-read-only yes\n"
        "min-replicas-to-write 0\nreplicaof \"\"\n"
        "\n# Generated by CONFIG REWRITE\nreplica-announce-port 7\n");
    char *again = rewritten(out);
    ck_assert_str_eq(again, out);
    free(again);
    free(out);
    /* Without a conf (a cluster failover's rewrite) lines stay as written. */
    size_t n;
    out = conf_rewrite_text(NULL, NULL, "lua-time-limit 1\n", 17, &n);
    ck_assert_str_eq(out, "lua-time-limit 1\n");
    free(out);
}
END_TEST

static TCase *
alias_tcase(void)
{
    TCase *tc = tcase("aliases");

    tcase_add_test(tc, test_aliases_are_redis_s_and_find_their_option);
    tcase_add_test(tc,
        test_alias_lookup_is_case_insensitive_and_spells_the_table);
    tcase_add_test(tc, test_alias_sets_its_option);
    tcase_add_test(tc, test_alias_errors_name_the_alias);
    tcase_add_test(tc, test_file_takes_aliases);
    tcase_add_test(tc, test_args_take_aliases);
    tcase_add_test(tc, test_describe_names_each_alias_under_its_option);
    return tc;
}

static TCase *
rewrite_tcase(void)
{
    TCase *tc = tcase("rewrite");

    tcase_add_test(tc, test_rewrite_writes_the_option_s_name_on_an_alias_line);

    tcase_add_test(tc, test_rewrite_of_defaults_changes_nothing_but_duplicates);
    tcase_add_test(tc, test_rewrite_writes_values_as_redis_does);
    tcase_add_test(tc, test_rewrite_replaces_the_topology_lines_in_place);
    tcase_add_test(tc, test_rewritten_text_loads_back_to_the_same_values);
    return tc;
}

static TCase *
shipped_tcase(void)
{
    TCase *tc = tcase("shipped_conf");

    tcase_add_test(tc, test_shipped_conf_loads_without_error);
    tcase_add_test(tc,
        test_shipped_conf_leaves_every_value_at_its_default_but_the_journal);
    tcase_add_test(tc,
        test_shipped_conf_sets_each_option_once_to_the_table_text);
    tcase_add_test(tc, test_shipped_conf_has_a_comment_block_per_option);
    tcase_add_test(tc,
        test_shipped_conf_names_each_alias_in_its_option_s_block);
    return tc;
}

Suite *
conf_suite(void)
{
    Suite *s = suite_create("conf");

    suite_add_tcase(s, defaults_tcase());
    suite_add_tcase(s, types_tcase());
    suite_add_tcase(s, file_tcase());
    suite_add_tcase(s, args_tcase());
    suite_add_tcase(s, output_tcase());
    suite_add_tcase(s, alias_tcase());
    suite_add_tcase(s, shipped_tcase());
    suite_add_tcase(s, rewrite_tcase());
    return s;
}
