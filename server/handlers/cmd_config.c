/*
 * cmd_config.c - CONFIG: GET, SET, RESETSTAT, REWRITE, HELP (CONFIG
 * RELOAD-LIMITS is cmd_rlcheck.c's, beside the named limits it reloads).
 *
 * The option table, its parsing and the file CONFIG REWRITE writes are
 * conf/'s; this file is the command's face on them, in Redis 7's names,
 * spellings and error texts. CONFIG SET is all or nothing, as Redis's:
 * every name is checked before any value moves, each old value is kept so
 * that a refused value, a broken cross-option rule, a limits-file that
 * does not load or listeners that cannot move put every option back, and
 * only after the whole call went through do logging, the parser limits
 * and persistence follow the new values.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/rewrite.h"
#include "lib/glob.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/envoy/named_limits.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/iostats.h"
#include "server/keyspace.h"
#include "server/listen.h"
#include "server/log.h"
#include "server/notify.h"
#include "server/persist/persist.h"
#include "server/server.h"
#include "server/topdenied.h"

HANDLER_VARIANT(config_command, cmd_dispatch_subcommand,
                cmd_lookup("config", 6))

/* The name CONFIG GET answers for the option name (a row's name or an
 * alias), or NULL when no argument asks for it. As Redis 7.0: an argument
 * without a glob character ([, * or ?) is looked up, in any case, and
 * answered as it was typed; a pattern (up to a NUL, as Redis reads it)
 * matches every name in any case, an alias as well as its option, and
 * answers the table's spelling. The first argument that asks for a name
 * gives its key, so a name asked twice is answered once. */
static const char *
config_get_key(const struct resp_request *req, const char *name)
{
    size_t namelen = strlen(name);
    for (size_t i = 2; i < req->argc; i++) {
        const char *arg = req->argv[i];
        size_t len = strlen(arg);
        if (strpbrk(arg, "[*?") == NULL) {
            if (len == req->argvlen[i] && len == namelen &&
                strncasecmp(arg, name, len) == 0) {
                return arg;
            }
        } else if (glob_match(arg, len, name, namelen, true)) {
            return name;
        }
    }
    return NULL;
}

/* Every name CONFIG GET knows: each row's, then its alias if it has one.
 * Redis answers in the order of its hash table, a random one. */
static const char *
config_get_name(const struct conf_option *o, int which)
{
    return which == 0 ? o->name : conf_alias(o);
}

void
config_get_command(struct conn *c, struct resp_request *req)
{
    size_t nopts;
    const struct conf_option *opts = conf_options(&nopts);
    size_t matches = 0;
    for (size_t i = 0; i < nopts; i++) {
        for (int k = 0; k < 2; k++) {
            const char *name = config_get_name(&opts[i], k);
            matches += name != NULL && config_get_key(req, name) != NULL;
        }
    }
    reply_map(&c->out, matches, c->proto);
    for (size_t i = 0; i < nopts; i++) {
        for (int k = 0; k < 2; k++) {
            const char *name = config_get_name(&opts[i], k);
            const char *key = name != NULL ? config_get_key(req, name) : NULL;
            if (key == NULL) {
                continue;
            }
            size_t n;
            char *value = conf_format_alloc(&srv.conf, &opts[i], &n);
            reply_bulkz(&c->out, key);
            if (value != NULL) {
                reply_bulk(&c->out, value, n);
            } else {
                reply_bulk(&c->out, "", 0);     /* out of memory */
            }
            free(value);
        }
    }
}

/* Redis 7.0.15's IMMUTABLE_CONFIG options (config.c): CONFIG SET refuses
 * them whatever the value, as Redis does, and Redis's "CONFIG sanity"
 * test skips them. */
static const char *const redis_immutable[] = {
    "rdbchecksum", "daemonize", "io-threads-do-reads",
    "always-show-logo", "set-proc-title", "syslog-enabled",
    "cluster-enabled", "disable-thp", "aclfile", "unixsocket",
    "pidfile", "cluster-config-file", "syslog-ident", "appendfilename",
    "appenddirname", "server_cpulist", "bio_cpulist",
    "aof_rewrite_cpulist", "bgsave_cpulist", "logfile", "supervised",
    "syslog-facility", "enable-protected-configs",
    "enable-debug-command", "enable-module-command", "databases",
    "io-threads", "tcp-backlog", "cluster-port", "unixsocketperm",
    "socket-mark-id", "replicaof", NULL };

/* Options cellgate takes at start-up only where Redis changes them at
 * run time (or that only cellgate has). CONFIG GET lists them, so CONFIG
 * SET takes the value they have (a no-op, as Redis's sanity test sets
 * every value it read back) and refuses any other as immutable. */
static const char *const startup_only[] = {
    "cluster-node-id", "cluster-announce-ip", "cluster-announce-port",
    "grpc-port", "grpc-bind", NULL };

/* Is name one of names (NULL-terminated)? */
static bool
named_in(const char *const *names, const char *name)
{
    for (size_t i = 0; names[i] != NULL; i++) {
        if (strcmp(name, names[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* May CONFIG SET give option o this value? */
static bool
is_settable(const struct conf_option *o, const char *value)
{
    if (named_in(redis_immutable, o->name)) {
        return false;
    }
    if (!named_in(startup_only, o->name)) {
        return true;
    }
    /* cluster-enabled yes: Redis changes a node's announced address at
     * run time (the static topology reads them at start-up). */
    if (srv.conf.cluster_enabled &&
        strncmp(o->name, "cluster-announce-", 17) == 0) {
        return true;
    }
    size_t n;
    char *now = conf_format_alloc(&srv.conf, o, &n);
    bool same = now != NULL && strcasecmp(now, value) == 0;
    free(now);
    return same;
}

/* Options a client could use to make the server write files where it
 * chooses: Redis 7 lets CONFIG SET change them only when
 * enable-protected-configs allows it (yes, or local for a local client). */
static bool
is_protected(const char *name)
{
    return strcmp(name, "dir") == 0 || strcmp(name, "dbfilename") == 0;
}

static bool
protected_allowed(const struct conn *c)
{
    return srv.conf.enable_protected_configs == ALLOWED_YES ||
           (srv.conf.enable_protected_configs == ALLOWED_LOCAL &&
            client_is_local(c));
}

/* Redis changes into a new dir (chdir) and answers why it could not:
 * the same test here, without moving the process. NULL when it can. */
static const char *
dir_unusable(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        return strerror(errno);
    }
    if (!S_ISDIR(st.st_mode)) {
        return strerror(ENOTDIR);
    }
    return access(path, X_OK) == 0 ? NULL : strerror(errno);
}

static bool
has_nul(const struct resp_request *req, size_t i)
{
    return memchr(req->argv[i], '\0', req->argvlen[i]) != NULL;
}

/* The table's spelling of the name argument i gives (conf_lookup): the
 * option's name or its alias, as Redis names the option in most errors. */
static const char *
config_set_spelling(const struct resp_request *req, size_t i)
{
    const char *spelling = NULL;
    (void)conf_lookup(req->argv[i], &spelling);
    return spelling;
}

/* Redis's CONFIG SET failure: the argument it blames (at most max bytes
 * of it) and why. */
static void
config_set_failed(struct conn *c, const char *arg, int max, const char *why)
{
    cmd_errorf(c, "ERR CONFIG SET failed (possibly related to argument "
               "'%.*s') - %s", max, arg, why);
}

/* Check every name first, so a bad pair changes nothing. Names and values
 * are binary: a NUL byte in either is refused, never read as the end. */
static bool
config_set_check(struct conn *c, struct resp_request *req)
{
    for (size_t i = 2; i < req->argc; i += 2) {
        const struct conf_option *o =
            has_nul(req, i) ? NULL : conf_find(req->argv[i]);
        if (o == NULL) {
            cmd_errorf(c, "ERR Unknown option or number of arguments for "
                        "CONFIG SET - '%.128s'", req->argv[i]);
            return false;
        }
        /* Redis's order, and it names the argument as typed. An alias
         * and its option are two names to it: only a name given twice (in
         * any case) is a duplicate; both names set it, the later wins. */
        const char *spelling = config_set_spelling(req, i);
        const char *why = NULL;
        if (!is_settable(o, req->argv[i + 1])) {
            why = "can't set immutable config";
        } else if (is_protected(o->name) && !protected_allowed(c)) {
            why = "can't set protected config";
        }
        for (size_t j = 2; j < i && why == NULL; j += 2) {
            if (config_set_spelling(req, j) == spelling) {
                why = "duplicate parameter";
            }
        }
        if (why != NULL) {
            config_set_failed(c, req->argv[i], 128, why);
            return false;
        }
        if (o->type != CONF_BINARY && has_nul(req, i + 1)) {
            why = "argument must not contain a NUL byte";
        } else if (o == conf_find("cluster-mode") &&
                   !cluster_mode_settable(
                       conf_enum_value(o, req->argv[i + 1]))) {
            why = "cluster-mode yes is set at start-up only";
        }
        if (why != NULL) {
            config_set_failed(c, spelling, INT_MAX, why);
            return false;
        }
    }
    return true;
}

/* Put back the values saved in old[0..n) (after a failed pair), last
 * first, so an option named twice ends at its value before the command. */
static void
config_set_rollback(struct resp_request *req, char **old,
                    const size_t *oldlen, size_t n)
{
    char ignored[CONF_ERR_LEN];
    for (size_t j = n; j-- > 0;) {
        if (old[j] != NULL) {
            conf_set_bytes(&srv.conf, conf_find(req->argv[2 + 2 * j]),
                           old[j], oldlen[j], ignored, sizeof(ignored));
        }
    }
}

/* Why a value was refused, in Redis's words where Redis has them; err
 * keeps conf's own text otherwise (cross-option checks). */
static void
redis_words(const struct conf_option *o, const char *value, char *err,
            size_t errlen)
{
    char words[256];
    switch (conf_fault_of(o, value)) {
    case CONF_FAULT_NOT_INTEGER:
        snprintf(err, errlen, "argument couldn't be parsed into an integer");
        break;
    case CONF_FAULT_NOT_SIZE:
        snprintf(err, errlen, "argument must be a memory value");
        break;
    case CONF_FAULT_NOT_BOOL:
        snprintf(err, errlen, "argument must be 'yes' or 'no'");
        break;
    case CONF_FAULT_NOT_ENUM:
        conf_enum_list(o, words, sizeof(words));
        snprintf(err, errlen, "argument(s) must be one of the following: %s",
                 words);
        break;
    case CONF_FAULT_RANGE:
        snprintf(err, errlen, "argument must be between %lld and %lld "
                 "inclusive", (long long)o->min, (long long)o->max);
        break;
    case CONF_FAULT_NONE:
        break;
    }
}

/* The first option of this CONFIG SET that a broken cross-option rule
 * ties together (names[2], from conf_validate): the one to blame. */
static const char *
config_set_blamed(const struct resp_request *req, size_t pairs,
                  const char *const names[2])
{
    for (size_t k = 0; k < pairs; k++) {
        const struct conf_option *o = conf_find(req->argv[2 + 2 * k]);
        if (o == conf_find(names[0]) || o == conf_find(names[1])) {
            return config_set_spelling(req, 2 + 2 * k);
        }
    }
    return names[0];
}

/* Does this CONFIG SET name the option? */
static bool
config_set_names(const struct resp_request *req, size_t pairs,
                 const char *name)
{
    const struct conf_option *want = conf_find(name);
    for (size_t k = 0; k < pairs; k++) {
        if (conf_find(req->argv[2 + 2 * k]) == want) {
            return true;
        }
    }
    return false;
}

/* bind and port, as Redis 7 takes them at run time: the listeners move
 * to the new addresses and port (listen.h), once for both. NULL when
 * they did (or neither was set); else why not in Redis's words, the
 * listeners as they were, and names[] the options to blame. */
static const char *
config_set_listen(const struct resp_request *req, size_t pairs,
                  const char *names[2])
{
    names[0] = "bind";
    names[1] = "port";
    if (!config_set_names(req, pairs, "bind") &&
        !config_set_names(req, pairs, "port")) {
        return NULL;
    }
    switch (listen_tcp_change(srv.conf.bind, srv.conf.port)) {
    case LISTEN_OK:
        listen_warn_open_bind(NULL);
        return NULL;
    case LISTEN_TOO_MANY:
        return "Too many bind addresses specified.";
    case LISTEN_BIND_FAILED:
        break;
    }
    /* Redis words it by the option whose change failed. */
    if (strcmp(config_set_blamed(req, pairs, names), "port") == 0) {
        return "Unable to listen on this port. Check server logs.";
    }
    return "Failed to bind to specified addresses.";
}

/* Apply every pair, all or nothing; false after replying the error. One
 * call is one change: the cross-option rules are checked on the state
 * after every pair, so the order of the pairs never matters. */
static bool
config_set_apply(struct conn *c, struct resp_request *req, char **old,
                 size_t *oldlen, size_t pairs)
{
    char err[CONF_ERR_LEN];
    const char *names[2];
    for (size_t k = 0; k < pairs; k++) {
        const struct conf_option *o = conf_find(req->argv[2 + 2 * k]);
        old[k] = conf_format_alloc(&srv.conf, o, &oldlen[k]);
        if (old[k] == NULL) {
            config_set_rollback(req, old, oldlen, k);
            cmd_error(c, ERR_NOMEM);
            return false;
        }
        const char *unusable = strcmp(o->name, "dir") == 0
                               ? dir_unusable(req->argv[3 + 2 * k]) : NULL;
        if (unusable != NULL) {
            config_set_rollback(req, old, oldlen, k + 1);
            config_set_failed(c, "dir", INT_MAX, unusable);
            return false;
        }
        if (conf_set_bytes(&srv.conf, o, req->argv[3 + 2 * k],
                           req->argvlen[3 + 2 * k], err, sizeof(err)) < 0) {
            config_set_rollback(req, old, oldlen, k + 1);
            redis_words(o, req->argv[3 + 2 * k], err, sizeof(err));
            config_set_failed(c, config_set_spelling(req, 2 + 2 * k), INT_MAX,
                              err);
            return false;
        }
    }
    if (conf_validate(&srv.conf, names, err, sizeof(err)) < 0) {
        config_set_rollback(req, old, oldlen, pairs);
        config_set_failed(c, config_set_blamed(req, pairs, names), INT_MAX,
                          err);
        return false;
    }
    /* A new limits-file is read before anything moves, so a file that
     * does not load refuses the call (start-up would refuse it too). */
    struct limits *limits = NULL;
    bool new_limits = config_set_names(req, pairs, "limits-file");
    if (new_limits && named_limits_load_new(&limits, err, sizeof(err)) < 0) {
        config_set_rollback(req, old, oldlen, pairs);
        config_set_failed(c, "limits-file", INT_MAX, err);
        return false;
    }
    const char *why = config_set_listen(req, pairs, names);
    if (why != NULL) {
        limits_free(limits);
        config_set_rollback(req, old, oldlen, pairs);
        config_set_failed(c, config_set_blamed(req, pairs, names), INT_MAX,
                          why);
        return false;
    }
    if (new_limits) {
        named_limits_install(limits);
    }
    return true;
}

void
config_set_command(struct conn *c, struct resp_request *req)
{
    size_t pairs = (req->argc - 2) / 2;

    /* The arity (-4) lets through a name without its value: Redis calls
     * that a syntax error. Any number of pairs, as Redis takes. */
    if ((req->argc - 2) % 2 != 0) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (!config_set_check(c, req)) {
        return;
    }
    char **old = calloc(pairs, sizeof(*old));
    size_t *oldlen = calloc(pairs, sizeof(*oldlen));
    bool ok = old != NULL && oldlen != NULL &&
              config_set_apply(c, req, old, oldlen, pairs);
    if (old == NULL || oldlen == NULL) {
        cmd_error(c, ERR_NOMEM);
    }
    for (size_t k = 0; old != NULL && k < pairs; k++) {
        free(old[k]);
    }
    free(old);
    free(oldlen);
    if (!ok) {
        return;
    }
    log_set_level((enum log_level)srv.conf.loglevel);
    server_apply_limits();
    notify_configure(srv.conf.notify_keyspace_events);
    cluster_announce_changed();     /* myself's address in the view */
    char err[512];
    if (persist_apply_config(err, sizeof(err)) < 0) {
        srv.conf.appendonly = 0;
        config_set_failed(c, "appendonly", INT_MAX, err);
        return;
    }
    reply_ok(&c->out);
}

void
config_resetstat_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    int64_t logged = srv.stats.accept_error_logged_ms;
    memset(&srv.stats, 0, sizeof(srv.stats));
    srv.stats.accept_error_logged_ms = logged;
    struct store_usage tot;
    keyspace_totals(&tot);
    srv.stats.expired_keys_base = tot.expired;
    srv.stats.evicted_keys_base = tot.evicted;
    io_figures_reset();
    cmd_reset_stats();
    topdenied_reset();
    reply_ok(&c->out);
}

/* CONFIG REWRITE, as Redis: the file this server was started with, brought
 * up to the running values (conf/rewrite.h). */
void
config_rewrite_command(struct conn *c, struct resp_request *req)
{
    char err[512];
    (void)req;
    if (srv.config_file == NULL) {
        cmd_error(c, "ERR The server is running without a config file");
        return;
    }
    /* After a failover in cluster-mode yes, the new topology too. */
    char *lines = cluster_lines_changed();
    bool with_topology = lines != NULL;
    int rc = conf_rewrite_file(&srv.conf, lines, srv.config_file, err,
                               sizeof(err));
    cluster_lines_free(lines);
    if (rc < 0) {
        log_warning("CONFIG REWRITE failed: %s", err);
        cmd_errorf(c, "ERR Rewriting config file: %s", err);
        return;
    }
    if (with_topology) {
        cluster_lines_saved();
    }
    log_notice("CONFIG REWRITE executed with success.");
    reply_ok(&c->out);
}

