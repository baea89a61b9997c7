/*
 * cmd_admin.c - connection and server commands: PING, ECHO, QUIT, SELECT,
 * HELLO, AUTH, READONLY/READWRITE, CLIENT, CONFIG, DBSIZE, FLUSHALL/FLUSHDB,
 * TIME, SHUTDOWN. Replies and error texts follow Redis 7.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/rewrite.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "protocol/reply.h"
#include "server/child.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/client.h"
#include "server/errors.h"
#include "lib/glob.h"
#include "server/handlers/handlers.h"
#include "server/iostats.h"
#include "server/keyspace.h"
#include "server/listen.h"
#include "server/log.h"
#include "server/multi.h"
#include "server/envoy/named_limits.h"
#include "server/server.h"
#include "server/persist/persist.h"
#include "server/pubsub.h"
#include "server/snapshot.h"
#include "lib/textbuf.h"


void
cmd_ping(struct conn *c, struct resp_request *req)
{
    if (req->argc > 2) {
        cmd_errorf(c, ERR_WRONG_ARITY, "ping");
    } else if (c->proto == 2 && c->subs != NULL &&
               pubsub_count(c, false) + pubsub_count(c, true) > 0) {
        /* As Redis: a subscriber's PING answers in the shape of a message */
        reply_array(&c->out, 2);
        reply_bulkz(&c->out, "pong");
        reply_bulk(&c->out, req->argc == 2 ? req->argv[1] : "",
                   req->argc == 2 ? req->argvlen[1] : 0);
    } else if (req->argc == 2) {
        reply_bulk(&c->out, req->argv[1], req->argvlen[1]);
    } else {
        obuf_append(&c->out, "+PONG\r\n", 7);
    }
}

void
cmd_echo(struct conn *c, struct resp_request *req)
{
    reply_bulk(&c->out, req->argv[1], req->argvlen[1]);
}

void
cmd_quit(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_ok(&c->out);
    c->requests |= CLIENT_CLOSE_AFTER_REPLY;
}

void
cmd_select(struct conn *c, struct resp_request *req)
{
    int db;
    if (!cmd_arg_int(c, req, 1, NULL, &db)) {
        return;
    }
    if (db != 0 && srv.conf.cluster_mode != CLUSTER_MODE_NO) {
        cmd_error(c, "ERR SELECT is not allowed in cluster mode");
    } else if (db < 0 || (size_t)db >= srv.ndbs) {
        cmd_error(c, ERR_DB_RANGE);
    } else if (!keyspace_select(db)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        c->db = db;
        reply_ok(&c->out);
    }
}

void
cmd_swapdb(struct conn *c, struct resp_request *req)
{
    int a, b;
    if (srv.conf.cluster_mode != CLUSTER_MODE_NO) {
        cmd_error(c, "ERR SWAPDB is not allowed in cluster mode");
        return;
    }
    if (!cmd_arg_int(c, req, 1, "ERR invalid first DB index", &a) ||
        !cmd_arg_int(c, req, 2, "ERR invalid second DB index", &b)) {
        return;
    }
    if (a < 0 || b < 0 || (size_t)a >= srv.ndbs || (size_t)b >= srv.ndbs) {
        cmd_error(c, ERR_DB_RANGE);
        return;
    }
    if (!keyspace_swap(a, b)) {     /* the watchers hear of it there */
        cmd_error(c, ERR_NOMEM);
        return;
    }
    reply_ok(&c->out);
}

/* READONLY / READWRITE: may a replica of a cluster answer this client's
 * reads of its primary's slots (cluster.h cluster_route)? */
void
cmd_readonly(struct conn *c, struct resp_request *req)
{
    /* As Redis: cluster commands, refused outside cluster mode. */
    if (srv.conf.cluster_mode == CLUSTER_MODE_NO) {
        cmd_error(c, "ERR This instance has cluster support disabled");
        return;
    }
    c->replica_reads = cmd_arg_is(req, 0, "readonly");
    reply_ok(&c->out);
}

/* HELLO ... SETNAME: false after replying the error. */
static bool
set_client_name(struct conn *c, const char *name, size_t len)
{
    int rc = client_set_name(c, name, len);
    if (rc != 0) {
        cmd_error(c, rc < 0 ? ERR_NOMEM : ERR_CLIENT_NAME);
    }
    return rc == 0;
}

/* ---- AUTH and HELLO --------------------------------------------------- */

/* Compare without an early exit, so the time taken does not tell an
 * attacker how many leading bytes of a guess were right (it depends only
 * on the longer length). */
static bool
secure_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen > blen ? alen : blen;
    unsigned char diff = alen != blen;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < alen ? (unsigned char)a[i] : 0;
        unsigned char y = i < blen ? (unsigned char)b[i] : 0;
        diff |= x ^ y;
    }
    return diff == 0;
}

/* As Redis: only the "default" user exists. Without requirepass it has no
 * password and any password is accepted for it; with requirepass it must
 * match. On success the client is authenticated. user may be NULL. */
static bool
check_credentials(struct conn *c, const char *user, size_t ulen,
                  const char *pass, size_t plen)
{
    const struct conf_bytes *want = &srv.conf.requirepass;
    if ((user != NULL && !(ulen == 7 && memcmp(user, "default", 7) == 0)) ||
        (want->len != 0 && !secure_equal(pass, plen, want->p, want->len))) {
        cmd_error(c, "WRONGPASS invalid username-password pair or user is "
                      "disabled.");
        return false;
    }
    c->authenticated = true;
    c->requests |= CLIENT_AUTHENTICATED;
    return true;
}

void
cmd_auth(struct conn *c, struct resp_request *req)
{
    if (req->argc > 3) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (req->argc == 2 && srv.conf.requirepass.len == 0) {
        cmd_error(c, "ERR AUTH <password> called without any password "
                      "configured for the default user. Are you sure your "
                      "configuration is correct?");
        return;
    }
    bool ok = req->argc == 2
                  ? check_credentials(c, NULL, 0, req->argv[1],
                                      req->argvlen[1])
                  : check_credentials(c, req->argv[1], req->argvlen[1],
                                      req->argv[2], req->argvlen[2]);
    if (ok) {
        reply_ok(&c->out);
    }
}

static void
reply_hello(struct conn *c)
{
    int proto = c->proto;
    reply_map(&c->out, 7, proto);
    reply_bulkz(&c->out, "server");
    reply_bulkz(&c->out, "redis");
    reply_bulkz(&c->out, "version");
    reply_bulkz(&c->out, REDIS_COMPAT_VERSION);
    reply_bulkz(&c->out, "proto");
    reply_int(&c->out, proto);
    reply_bulkz(&c->out, "id");
    reply_int(&c->out, (int64_t)c->id);
    reply_bulkz(&c->out, "mode");
    reply_bulkz(&c->out, "standalone");
    reply_bulkz(&c->out, "role");
    reply_bulkz(&c->out, "master");
    reply_bulkz(&c->out, "modules");
    reply_array(&c->out, 0);
}

void
cmd_hello(struct conn *c, struct resp_request *req)
{
    int64_t ver = c->proto;
    const char *setname = NULL;
    size_t setname_len = 0;
    size_t i = 1;

    if (req->argc >= 2) {
        if (!num_parse_i64(req->argv[1], req->argvlen[1], &ver)) {
            cmd_error(c, "ERR Protocol version is not an integer or out of "
                          "range");
            return;
        }
        i = 2;
        if (ver < 2 || ver > 3) {
            cmd_error(c, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (; i < req->argc; i++) {
        size_t more = req->argc - i - 1;
        if (cmd_arg_is(req, i, "AUTH") && more >= 2) {
            if (!check_credentials(c, req->argv[i + 1], req->argvlen[i + 1],
                                   req->argv[i + 2], req->argvlen[i + 2])) {
                return;
            }
            i += 2;
        } else if (cmd_arg_is(req, i, "SETNAME") && more >= 1) {
            setname = req->argv[i + 1];
            setname_len = req->argvlen[i + 1];
            i++;
        } else {
            cmd_errorf(c, "ERR Syntax error in HELLO option '%.128s'",
                        req->argv[i]);
            return;
        }
    }
    if (!c->authenticated) {
        cmd_error(c, "NOAUTH HELLO must be called with the client already "
                      "authenticated, otherwise the HELLO AUTH <user> <pass> "
                      "option can be used to authenticate the client "
                      "and select the RESP protocol version at the same "
                      "time");
        return;
    }
    if (setname != NULL && !set_client_name(c, setname, setname_len)) {
        return;
    }
    c->proto = (int)ver;
    reply_hello(c);
}

/* ---- CONFIG ----------------------------------------------------------- */

void
cmd_config(struct conn *c, struct resp_request *req)
{
    cmd_dispatch_subcommand(c, req, cmd_lookup("config", 6));
}

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
cmd_config_get(struct conn *c, struct resp_request *req)
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

/* Options that only take effect at start-up. */
static bool
is_mutable(const char *name)
{
    static const char *const fixed[] = { "unixsocket",
                                         "databases",
                                         "appenddirname", "appendfilename",
                                         "replicaof",
                                         "unixsocketperm", "tcp-backlog",
                                         "logfile", "cluster-node-id",
                                         "cluster-announce-ip",
                                         "cluster-announce-port",
                                         "grpc-port", "grpc-bind",
                                         "daemonize", "supervised",
                                         "pidfile", "enable-debug-command",
                                         "enable-protected-configs",
                                         "io-threads", "io-threads-do-reads",
                                         NULL };
    for (size_t i = 0; fixed[i] != NULL; i++) {
        if (strcmp(name, fixed[i]) == 0) {
            return false;
        }
    }
    return true;
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
        if (!is_mutable(o->name)) {
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
            cmd_errorf(c, "ERR CONFIG SET failed (possibly related to "
                        "argument '%.128s') - %s", req->argv[i], why);
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
            cmd_errorf(c, "ERR CONFIG SET failed (possibly related to "
                        "argument '%s') - %s", spelling, why);
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
            cmd_errorf(c, "ERR CONFIG SET failed (possibly related to "
                        "argument 'dir') - %s", unusable);
            return false;
        }
        if (conf_set_bytes(&srv.conf, o, req->argv[3 + 2 * k],
                           req->argvlen[3 + 2 * k], err, sizeof(err)) < 0) {
            config_set_rollback(req, old, oldlen, k + 1);
            redis_words(o, req->argv[3 + 2 * k], err, sizeof(err));
            cmd_errorf(c, "ERR CONFIG SET failed (possibly related to "
                        "argument '%s') - %s",
                       config_set_spelling(req, 2 + 2 * k), err);
            return false;
        }
    }
    if (conf_validate(&srv.conf, names, err, sizeof(err)) < 0) {
        config_set_rollback(req, old, oldlen, pairs);
        cmd_errorf(c, "ERR CONFIG SET failed (possibly related to argument "
                      "'%s') - %s", config_set_blamed(req, pairs, names),
                   err);
        return false;
    }
    /* A new limits-file is read before anything moves, so a file that
     * does not load refuses the call (start-up would refuse it too). */
    struct limits *limits = NULL;
    bool new_limits = config_set_names(req, pairs, "limits-file");
    if (new_limits && named_limits_load_new(&limits, err, sizeof(err)) < 0) {
        config_set_rollback(req, old, oldlen, pairs);
        cmd_errorf(c, "ERR CONFIG SET failed (possibly related to argument "
                      "'limits-file') - %s", err);
        return false;
    }
    const char *why = config_set_listen(req, pairs, names);
    if (why != NULL) {
        limits_free(limits);
        config_set_rollback(req, old, oldlen, pairs);
        cmd_errorf(c, "ERR CONFIG SET failed (possibly related to argument "
                      "'%s') - %s", config_set_blamed(req, pairs, names),
                   why);
        return false;
    }
    if (new_limits) {
        named_limits_install(limits);
    }
    return true;
}

void
cmd_config_set(struct conn *c, struct resp_request *req)
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
    char err[512];
    if (persist_apply_config(err, sizeof(err)) < 0) {
        srv.conf.appendonly = 0;
        cmd_errorf(c, "ERR CONFIG SET failed (possibly related to argument "
                      "'appendonly') - %s", err);
        return;
    }
    reply_ok(&c->out);
}

void
cmd_config_resetstat(struct conn *c, struct resp_request *req)
{
    (void)req;
    int64_t logged = srv.stats.accept_error_logged_ms;
    memset(&srv.stats, 0, sizeof(srv.stats));
    srv.stats.accept_error_logged_ms = logged;
    struct ks_totals tot;
    keyspace_totals(&tot);
    srv.stats.expired_keys_base = tot.expired;
    srv.stats.evicted_keys_base = tot.evicted;
    io_figures_reset();
    cmd_reset_stats();
    reply_ok(&c->out);
}

/* CONFIG REWRITE, as Redis: the file this server was started with, brought
 * up to the running values (conf/rewrite.h). */
void
cmd_config_rewrite(struct conn *c, struct resp_request *req)
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

void
cmd_config_help(struct conn *c, struct resp_request *req)
{
    static const char *const lines[] = {
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their "
        "values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT", "    Reset statistics reported by the INFO command.",
        "REWRITE", "    Rewrite the configuration file.",
        "RELOAD-LIMITS", "    Re-read the named limits of limits-file.",
        "HELP", "    Prints this help.", NULL
    };
    (void)req;
    cmd_reply_help(c, lines);
}

/* ---- keyspace and server ---------------------------------------------- */

void
cmd_dbsize(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_int(&c->out, (int64_t)store_size(srv.store));
}

/* FLUSHALL empties every database, FLUSHDB the selected one. */
static void
flush(struct conn *c, struct resp_request *req, bool all)
{
    if (req->argc > 2 ||
        (req->argc == 2 && !cmd_arg_is(req, 1, "ASYNC") &&
         !cmd_arg_is(req, 1, "SYNC"))) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    keyspace_flush(all ? -1 : srv.db);
    reply_ok(&c->out);
}

void
cmd_flushall(struct conn *c, struct resp_request *req)
{
    flush(c, req, true);
}

void
cmd_flushdb(struct conn *c, struct resp_request *req)
{
    flush(c, req, false);
}

void
cmd_time(struct conn *c, struct resp_request *req)
{
    (void)req;
    int64_t us = clock_wall_us();
    reply_array(&c->out, 2);
    reply_bulk_i64(&c->out, us / 1000000);
    reply_bulk_i64(&c->out, us % 1000000);
}

/* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], as Redis 7. The snapshot
 * is written here, while the client can still be told it failed (then the
 * server stays up, unless FORCE); the journal is flushed on the way out.
 * NOW changes nothing: no replicas are waited for. */
void
cmd_shutdown(struct conn *c, struct resp_request *req)
{
    bool nosave = false, save = false, force = false, abort_req = false;
    for (size_t i = 1; i < req->argc; i++) {
        if (cmd_arg_is(req, i, "NOSAVE")) {
            nosave = true;
        } else if (cmd_arg_is(req, i, "SAVE")) {
            save = true;
        } else if (cmd_arg_is(req, i, "FORCE")) {
            force = true;
        } else if (cmd_arg_is(req, i, "ABORT")) {
            abort_req = true;
        } else if (!cmd_arg_is(req, i, "NOW")) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
    }
    if ((save && nosave) || (abort_req && req->argc > 2)) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (abort_req) {
        cmd_error(c, "ERR No shutdown in progress.");
        return;
    }
    log_warning("User requested shutdown...");
    /* As Redis: the child goes first, whatever the save (it could
     * overwrite the file written here). */
    child_kill_at_shutdown();
    if (save || (snapshot_configured() && !nosave)) {
        char err[512];
        log_notice("Saving the final snapshot before exiting.");
        if (snapshot_save(err, sizeof(err)) < 0) {
            if (!force) {
                log_warning("Error trying to save the DB, can't exit.");
                cmd_error(c, "ERR Errors trying to SHUTDOWN. Check logs.");
                return;
            }
            log_warning("Error trying to save the DB. Exit anyway.");
        }
    }
    /* Like Redis, no reply: the client sees the connection close. Nothing
     * after it in this client's pipeline runs. */
    c->requests |= CLIENT_CLOSE_AFTER_REPLY;
    server_request_shutdown(false);
}

void
cmd_save(struct conn *c, struct resp_request *req)
{
    char err[512];
    (void)req;
    if (snapshot_in_progress()) {
        cmd_error(c, "ERR Background save already in progress");
    } else if (snapshot_save(err, sizeof(err)) < 0) {
        cmd_errorf(c, "ERR %s", err);
    } else {
        reply_ok(&c->out);
    }
}

/* Inside EXEC a background child is scheduled, never started, as Redis
 * does (it starts from the cron, after the transaction). */
static unsigned
child_how(struct conn *c, bool may_wait)
{
    return (may_wait ? CHILD_MAY_WAIT : 0) |
           (multi_open(c, c->multi) ? CHILD_IN_EXEC : 0);
}

/* BGSAVE [SCHEDULE], as Redis 7: refused while a snapshot is written;
 * while a journal rewrite runs, refused or (SCHEDULE) scheduled. */
void
cmd_bgsave(struct conn *c, struct resp_request *req)
{
    char err[512];
    if (req->argc > 2 || (req->argc == 2 && !cmd_arg_is(req, 1, "SCHEDULE"))) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    switch (snapshot_bgsave(child_how(c, req->argc == 2), err, sizeof(err))) {
    case 0:
        reply_status(&c->out, "Background saving started");
        break;
    case 1:
        reply_status(&c->out, "Background saving scheduled");
        break;
    default:
        cmd_errorf(c, "ERR %s", err);
    }
}

/* As Redis 7: a base of the keyspace written by a child, whether the
 * journal is on or not; scheduled while another child runs. */
void
cmd_bgrewriteaof(struct conn *c, struct resp_request *req)
{
    char err[512];
    (void)req;
    switch (persist_rewrite(child_how(c, true), err, sizeof(err))) {
    case 0:
        reply_status(&c->out, "Background append only file rewriting "
                              "started");
        break;
    case 1:
        reply_status(&c->out, "Background append only file rewriting "
                              "scheduled");
        break;
    default:
        cmd_errorf(c, "ERR %s", err);
    }
}

void
cmd_lastsave(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_int(&c->out, snapshot_last_save());
}
