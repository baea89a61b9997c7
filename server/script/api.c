/*
 * api.c - the `redis` table of a script. See api.h.
 *
 * redis.call() is Redis's scriptCall(): the arguments become a request
 * (numbers written with %.17g, as Redis writes them, never Lua's %.14g),
 * Redis's script-only checks run in its order (known command, arity,
 * noscript, read-only script, writes refused by the server's state, OOM
 * before the first write, keys of this node), then the dispatcher runs
 * the command on the script client and its reply bytes become a Lua
 * value (convert.c). A refusal is an error table {err="CODE text"}
 * counted here, as Redis counts it, and marked so that the script's own
 * error reply does not count it again.
 *
 * The arguments are copied into one arena, each NUL-terminated, because
 * handlers may read an argument as a C string and must never see (or
 * write) Lua's own strings.
 */
#include "server/script/api.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>

#include "lib/keyslot.h"
#include "lib/mem.h"
#include "lib/sha1.h"
#include "protocol/obuf.h"
#include "server/client.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/guard.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/repl/replication.h"
#include "server/script/convert.h"
#include "server/server.h"

/* Redis 7.0.15, which scripts see as the server's version. */
#define API_REDIS_VERSION "7.0.15"
#define API_REDIS_VERSION_NUM 0x0007000f

static struct script_run *run;
static struct conn script_client;
static bool client_ready;

/* The request being built: argv into the arena. */
static char **argv;
static size_t *argvlen;
static size_t argv_cap;
static char *arena;
static size_t arena_cap;

const struct script_flag_word script_flag_words[SCRIPT_FLAG_WORDS] = {
    { "no-writes", SCRIPT_NO_WRITES },
    { "allow-oom", SCRIPT_ALLOW_OOM },
    { "allow-stale", SCRIPT_ALLOW_STALE },
    { "no-cluster", SCRIPT_NO_CLUSTER },
    { "allow-cross-slot-keys", SCRIPT_ALLOW_CROSS_SLOT },
};

/* ---- errors ------------------------------------------------------------- */

/* Redis's luaPushError(): an error table {err="CODE msg"}; a message
 * without a leading '-' gets the code ERR, and the trailing CR LF of
 * Redis's shared replies is trimmed. */
static void
push_error(lua_State *L, const char *msg)
{
    const char *code = "ERR", *text = msg;
    size_t code_len = 3;
    if (msg[0] == '-') {
        const char *space = strchr(msg, ' ');
        if (space == NULL) {
            text = msg + 1;
        } else {
            code = msg + 1;
            code_len = (size_t)(space - code);
            text = space + 1;
        }
    }
    /* Trimmed of CR and LF at both ends, as Redis's sdstrim(). */
    while (*text == '\r' || *text == '\n') {
        text++;
    }
    size_t text_len = strlen(text);
    while (text_len > 0 && (text[text_len - 1] == '\r' ||
                            text[text_len - 1] == '\n')) {
        text_len--;
    }
    lua_newtable(L);
    lua_pushlstring(L, code, code_len);
    lua_pushliteral(L, " ");
    lua_pushlstring(L, text, text_len);
    lua_concat(L, 3);
    lua_setfield(L, -2, "err");
}

/* A refusal of redis.call's command: counted now, and not again when the
 * script returns it. */
static void
push_refusal(lua_State *L, struct cmd *cmd, const char *msg)
{
    push_error(L, msg);
    lua_getfield(L, -1, "err");
    cmd_count_refusal(cmd, lua_tostring(L, -1));
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "ignore_error_stats_update");
}

/* ---- the request -------------------------------------------------------- */

static bool
reserve_args(size_t argc, size_t bytes)
{
    if (argc > argv_cap) {
        char **a = mem_realloc(argv, argc * sizeof(*argv));
        if (a == NULL) {
            return false;
        }
        argv = a;
        size_t *l = mem_realloc(argvlen, argc * sizeof(*argvlen));
        if (l == NULL) {
            return false;
        }
        argvlen = l;
        argv_cap = argc;
    }
    if (bytes > arena_cap) {
        char *p = mem_realloc(arena, bytes);
        if (p == NULL) {
            return false;
        }
        arena = p;
        arena_cap = bytes;
    }
    return true;
}

/* Redis's luaArgsToRedisArgv(): every argument a string or a number.
 * Returns NULL after pushing the error table. */
static const char *
args_to_request(lua_State *L, struct resp_request *req)
{
    int argc = lua_gettop(L);
    if (argc == 0) {
        return "Please specify at least one argument for this redis lib "
               "call";
    }
    /* Numbers become strings on the stack first, so every argument is
     * then a string whose bytes are measured once. */
    size_t bytes = 0;
    for (int i = 1; i <= argc; i++) {
        if (lua_type(L, i) == LUA_TNUMBER) {
            char num[64];
            int n = snprintf(num, sizeof(num), "%.17g",
                             (double)lua_tonumber(L, i));
            lua_pushlstring(L, num, (size_t)n);
            lua_replace(L, i);
        } else if (lua_type(L, i) != LUA_TSTRING) {
            return "Lua redis lib command arguments must be strings or "
                   "integers";
        }
        bytes += lua_objlen(L, i) + 1;
    }
    if (!reserve_args((size_t)argc, bytes)) {
        return "-" ERR_NOMEM;
    }
    char *at = arena;
    for (int i = 1; i <= argc; i++) {
        size_t len;
        const char *s = lua_tolstring(L, i, &len);
        memcpy(at, s, len);
        at[len] = '\0';
        argv[i - 1] = at;
        argvlen[i - 1] = len;
        at += len + 1;
    }
    req->argc = (size_t)argc;
    req->argv = argv;
    req->argvlen = argvlen;
    return NULL;
}

/* ---- Redis's checks for a script's command ------------------------------ */

/* scriptVerifyWriteCommandAllow(): NULL, or why the write may not run. */
static const char *
write_refused(const struct cmd *cmd, char *buf, size_t buflen)
{
    /* As Redis: a may-replicate command (PUBLISH) counts as a write, so
     * that a read-only script may run during CLIENT PAUSE WRITE. */
    if (run->read_only && (cmd->flags & (CMD_WRITE | CMD_MAY_REPLICATE))) {
        return "Write commands are not allowed from read-only scripts.";
    }
    if (!(cmd->flags & CMD_WRITE) || run->wrote) {
        return NULL;    /* a script that wrote cannot stop halfway */
    }
    enum guard_verdict v = guard_write(GUARD_AS_SCRIPT_CALL,
                                       repl_is_replica_client(run->caller));
    if (v == GUARD_RUN) {
        return NULL;
    }
    /* The '-' marks an error reply of its own code, not a script error. */
    char text[256];
    snprintf(buf, buflen, "-%s", guard_error(v, text, sizeof(text)));
    return buf;
}

/* scriptVerifyOOM(): over maxmemory when the script began, a command that
 * may grow memory is refused until the script has written. */
static const char *
oom_refused(const struct cmd *cmd)
{
    if ((run->flags & SCRIPT_ALLOW_OOM) || run->wrote ||
        !run->oom_at_start || !(cmd->flags & CMD_DENYOOM) ||
        repl_is_replica_client(run->caller)) {
        return NULL;
    }
    return "-" ERR_OOM;
}

/* scriptVerifyClusterState(): the command's keys must be this node's,
 * and, unless the script allows it, in the one slot its keys use. */
static const char *
cluster_refused(const struct cmd *cmd, const struct resp_request *req)
{
    if (!cluster_routing() || repl_is_replica_client(run->caller)) {
        return NULL;
    }
    /* A key_args row's keys (RL.ALL's parts) as a line of their own. */
    struct cmd_key_args k;
    int first = cmd->first_key;
    int last = cmd_last_key(cmd, req->argc);
    int step = cmd->key_step > 0 ? cmd->key_step : 1;
    if (cmd->key_args != NULL && cmd_key_args_line(cmd, req, &k)) {
        req = &k.keys;
        first = 0;
        last = (int)k.keys.argc - 1;
        step = 1;
    }
    if (last < 0) {
        return NULL;
    }
    struct cluster_redirect to;
    unsigned flags = (cmd->flags & CMD_WRITE) ? CLUSTER_Q_WRITE : 0;
    flags |= run->caller->replica_reads ? CLUSTER_Q_READONLY : 0;
    flags |= run->caller->asking ? CLUSTER_Q_ASKING : 0;
    enum cluster_verdict v = cluster_route(req, first, last, step, flags,
                                           &to);
    if (v == CLUSTER_DOWN_RO_STATE) {
        return "Script attempted to execute a write command while the "
               "cluster is down and readonly";
    }
    /* The static topology's unowned slot reads as down; the live view's
     * as a non local key, as Redis. */
    if (v == CLUSTER_DOWN_STATE || (v == CLUSTER_DOWN && !cluster_live())) {
        return "Script attempted to execute a command while the cluster is "
               "down";
    }
    if (v != CLUSTER_HERE) {
        return "Script attempted to access a non local key in a cluster "
               "node";
    }
    int slot = (int)keyslot(req->argv[first], req->argvlen[first]);
    if (run->flags & SCRIPT_ALLOW_CROSS_SLOT) {
        return NULL;
    }
    if (run->slot == -1) {
        run->slot = slot;
    } else if (run->slot != slot) {
        return "Script attempted to access keys that do not hash to the "
               "same slot";
    }
    return NULL;
}

/* Redis's order: known, arity, noscript, writes, OOM, cluster. */
static const char *
refused(struct cmd *cmd, const struct resp_request *req, char *buf,
        size_t buflen)
{
    if (cmd == NULL) {
        return "Unknown Redis command called from script";
    }
    if (!cmd_arity_ok(cmd, req->argc)) {
        return "Wrong number of args calling Redis command from script";
    }
    if (cmd->flags & CMD_NOSCRIPT) {
        return "This Redis command is not allowed from script";
    }
    const char *why = write_refused(cmd, buf, buflen);
    if (why == NULL) {
        why = oom_refused(cmd);
    }
    if (why == NULL && (cmd->flags & CMD_WRITE)) {
        run->wrote = true;      /* as Redis: before the cluster check */
    }
    if (why == NULL) {
        why = cluster_refused(cmd, req);
    }
    return why;
}

/* ---- running it ---------------------------------------------------------- */

static void
client_init(void)
{
    client_init_internal(&script_client);
    script_client.script = true;
    client_ready = true;
}

/* The reply bytes of the command just run, read back into a Lua value.
 * false when they could not be (memory). */
static bool
push_reply(lua_State *L)
{
    struct obuf *o = &script_client.out;
    struct iovec iov[2];
    size_t bytes;
    size_t n = obuf_iov(o, 0, iov, 2, &bytes);
    bool ok;
    if (n == 1 && bytes == obuf_pending(o)) {
        ok = script_reply_to_lua(L, iov[0].iov_base, iov[0].iov_len);
    } else {
        /* A reply over one chunk: gathered into one buffer first. */
        size_t len = obuf_pending(o), off = 0;
        char *all = mem_malloc(len > 0 ? len : 1);
        ok = all != NULL;
        while (ok && off < len) {
            n = obuf_iov(o, off, iov, 2, &bytes);
            for (size_t i = 0; i < n; i++) {
                memcpy(all + off, iov[i].iov_base, iov[i].iov_len);
                off += iov[i].iov_len;
            }
        }
        ok = ok && script_reply_to_lua(L, all, len);
        mem_free(all);
    }
    obuf_consume(o, obuf_pending(o));
    return ok;
}

/* The caller hears what its script's commands asked of the connection
 * layer (messages queued to others) and waits for the journal they
 * wrote into, as if it had run them itself. */
static void
hand_requests_to_caller(void)
{
    run->caller->requests |= script_client.requests & CLIENT_FEEDS;
    script_client.requests = 0;
}

enum request_rc { REQUEST_OK, REQUEST_OUTSIDE, REQUEST_BAD_ARGS };

/* The script's request from its arguments; otherwise the error pushed
 * (`outside` when no script runs). */
static enum request_rc
script_request(lua_State *L, const char *outside, struct resp_request *req)
{
    if (run == NULL) {
        push_error(L, outside);
        return REQUEST_OUTSIDE;
    }
    const char *why = args_to_request(L, req);
    if (why != NULL) {
        push_error(L, why);
        return REQUEST_BAD_ARGS;
    }
    return REQUEST_OK;
}

/* redis.call (raise true) and redis.pcall. */
static int
call(lua_State *L, bool raise)
{
    struct resp_request req;
    enum request_rc rc = script_request(L, "redis.call/pcall can only be "
                                        "called inside a script invocation",
                                        &req);
    if (rc != REQUEST_OK) {
        return raise || rc == REQUEST_OUTSIDE ? lua_error(L) : 1;
    }
    lua_settop(L, 0);
    char buf[256];
    struct cmd *cmd = cmd_lookup(req.argv[0], req.argvlen[0]);
    struct cmd *row = cmd != NULL ? cmd_resolve(cmd, &req) : NULL;
    if (row != NULL && row->subcommands != NULL && req.argc >= 2) {
        row = NULL;     /* as Redis's lookupCommand: no such subcommand */
    }
    const char *why = refused(row, &req, buf, sizeof(buf));
    if (why != NULL) {
        push_refusal(L, row, why);
        return raise ? lua_error(L) : 1;
    }
    script_client.hint.valid = false;
    cmd_call(&script_client, cmd, &req);
    hand_requests_to_caller();
    if (!push_reply(L)) {
        push_error(L, "-" ERR_NOMEM);
        return raise ? lua_error(L) : 1;
    }
    if (raise && lua_istable(L, -1)) {
        lua_getfield(L, -1, "err");
        bool is_error = lua_isstring(L, -1);
        lua_pop(L, 1);
        if (is_error) {
            return lua_error(L);
        }
    }
    return 1;
}

static int
api_call(lua_State *L)
{
    return call(L, true);
}

static int
api_pcall_cmd(lua_State *L)
{
    return call(L, false);
}

/* ---- the other functions of the table ----------------------------------- */

/* Lua's pcall as Redis 7 replaces it: an error table caught becomes its
 * message, as scripts written for Redis 6 expect. */
static int
api_pcall(lua_State *L)
{
    int argc = lua_gettop(L);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    if (lua_pcall(L, argc - 1, LUA_MULTRET, 0) != 0) {
        lua_remove(L, 1);
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) {
                lua_replace(L, -2);
            } else {
                lua_pop(L, 1);
            }
        }
        lua_pushboolean(L, 0);
        lua_insert(L, 1);
    }
    return lua_gettop(L);
}

static int
api_sha1hex(lua_State *L)
{
    if (lua_gettop(L) != 1) {
        push_error(L, "wrong number of arguments");
        return lua_error(L);
    }
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    char hex[41];
    sha1_hex(s != NULL ? s : "", s != NULL ? len : 0, hex);
    lua_pushstring(L, hex);
    return 1;
}

/* redis.status_reply's and redis.error_reply's argument check: exactly
 * one string, else the error pushed. */
static bool
one_string_arg(lua_State *L)
{
    if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
        push_error(L, "wrong number or type of arguments");
        return false;
    }
    return true;
}

static int
api_status_reply(lua_State *L)
{
    if (!one_string_arg(L)) {
        return 1;
    }
    lua_newtable(L);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "ok");
    return 1;
}

static int
api_error_reply(lua_State *L)
{
    if (!one_string_arg(L)) {
        return 1;
    }
    const char *err = lua_tostring(L, -1);
    if (err[0] == '-') {
        push_error(L, err);
    } else {
        lua_pushliteral(L, "-");
        lua_pushvalue(L, 1);
        lua_concat(L, 2);
        push_error(L, lua_tostring(L, -1));
    }
    return 1;
}

/* A Lua number as Redis's C cast of it on x86-64 (cvttsd2si): truncated,
 * and INT_MIN when NaN or out of int's range (a plain cast would be
 * undefined there). */
static int
number_to_int(lua_Number n)
{
    if (!(n > (lua_Number)INT_MIN - 1 && n < (lua_Number)INT_MAX + 1)) {
        return INT_MIN;
    }
    return (int)n;
}

/* redis.log(level, ...): the words joined by spaces, into cellgate's log
 * at the level Redis's LL_* number names. */
static int
api_log(lua_State *L)
{
    int argc = lua_gettop(L);
    if (argc < 2) {
        push_error(L, "redis.log() requires two arguments or more.");
        return lua_error(L);
    }
    if (!lua_isnumber(L, 1)) {
        push_error(L, "First argument must be a number (log level).");
        return lua_error(L);
    }
    int level = number_to_int(lua_tonumber(L, 1));
    static const enum log_level levels[] = {
        LOG_DEBUG, LOG_VERBOSE, LOG_NOTICE, LOG_WARNING
    };
    if (level < 0 || level > 3) {
        push_error(L, "Invalid debug level.");
        return lua_error(L);
    }
    if (!log_enabled(levels[level])) {
        return 0;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    bool first = true;
    for (int i = 2; i <= argc; i++) {
        size_t len;
        const char *s = lua_tolstring(L, i, &len);
        if (s != NULL) {
            if (!first) {
                luaL_addchar(&b, ' ');
            }
            luaL_addlstring(&b, s, len);
            first = false;
        }
    }
    luaL_pushresult(&b);
    log_write(levels[level], "%s", lua_tostring(L, -1));
    return 0;
}

/* The one number a run-time setting takes, as an int: false (the error
 * pushed) outside a script or with other than one argument. */
static bool
setting_arg(lua_State *L, const char *outside, const char *argc, int *v)
{
    if (run == NULL) {
        push_error(L, outside);
        return false;
    }
    if (lua_gettop(L) != 1) {
        push_error(L, argc);
        return false;
    }
    *v = number_to_int(lua_tonumber(L, 1));
    return true;
}

static int
api_setresp(lua_State *L)
{
    int resp;
    if (!setting_arg(L, "redis.setresp can only be called inside a script "
                        "invocation",
                     "redis.setresp() requires one argument.", &resp)) {
        return lua_error(L);
    }
    if (resp != 2 && resp != 3) {
        push_error(L, "RESP version must be 2 or 3.");
        return lua_error(L);
    }
    script_client.proto = resp;
    return 0;
}

static int
api_set_repl(lua_State *L)
{
    int flags;
    if (!setting_arg(L, "redis.set_repl can only be called inside a script "
                        "invocation",
                     "redis.set_repl() requires two arguments.", &flags)) {
        return lua_error(L);
    }
    if ((flags & ~SCRIPT_REPL_ALL) != 0) {
        push_error(L, "Invalid replication flags. Use REPL_AOF, "
                      "REPL_REPLICA, REPL_ALL or REPL_NONE.");
        return lua_error(L);
    }
    run->repl = (unsigned)flags;
    /* Redis's REPL_AOF and REPL_REPLICA are the sinks' bits. */
    keyspace_journal_sinks((unsigned)flags);
    return 0;
}

/* Scripts are always replicated as effects (Redis 7's only mode). */
static int
api_replicate_commands(lua_State *L)
{
    lua_pushboolean(L, 1);
    return 1;
}

/* cellgate has one user, allowed everything: a known command passes. */
static int
api_acl_check_cmd(lua_State *L)
{
    struct resp_request req;
    if (script_request(L, "redis.acl_check_cmd can only be called inside a "
                          "script invocation", &req) != REQUEST_OK) {
        return lua_error(L);
    }
    if (cmd_lookup(req.argv[0], req.argvlen[0]) == NULL) {
        push_error(L, "Invalid command passed to redis.acl_check_cmd()");
        return lua_error(L);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* The debugger's hooks, which do nothing outside a debugging session
 * (cellgate has none). */
static int
api_breakpoint(lua_State *L)
{
    lua_pushboolean(L, 0);
    return 1;
}

static int
api_debug(lua_State *L)
{
    (void)L;
    return 0;
}

static const luaL_Reg functions[] = {
    { "call", api_call },
    { "pcall", api_pcall_cmd },
    { "log", api_log },
    { "setresp", api_setresp },
    { "sha1hex", api_sha1hex },
    { "error_reply", api_error_reply },
    { "status_reply", api_status_reply },
    { "set_repl", api_set_repl },
    { "replicate_commands", api_replicate_commands },
    { "acl_check_cmd", api_acl_check_cmd },
    { "breakpoint", api_breakpoint },
    { "debug", api_debug },
    { NULL, NULL }
};

static const struct {
    const char *name;
    lua_Number value;
} constants[] = {
    { "LOG_DEBUG", 0 }, { "LOG_VERBOSE", 1 }, { "LOG_NOTICE", 2 },
    { "LOG_WARNING", 3 },
    { "REPL_NONE", SCRIPT_REPL_NONE }, { "REPL_AOF", SCRIPT_REPL_AOF },
    { "REPL_SLAVE", SCRIPT_REPL_REPLICA },
    { "REPL_REPLICA", SCRIPT_REPL_REPLICA }, { "REPL_ALL", SCRIPT_REPL_ALL },
    { "REDIS_VERSION_NUM", API_REDIS_VERSION_NUM },
};

static int
register_table(lua_State *L)
{
    lua_newtable(L);
    for (const luaL_Reg *f = functions; f->name != NULL; f++) {
        lua_pushcfunction(L, f->func);
        lua_setfield(L, -2, f->name);
    }
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
        lua_pushnumber(L, constants[i].value);
        lua_setfield(L, -2, constants[i].name);
    }
    lua_pushliteral(L, API_REDIS_VERSION);
    lua_setfield(L, -2, "REDIS_VERSION");
    /* Valkey's name for the same table (rate-limiter-flexible's Valkey
     * store sends it). */
    lua_pushvalue(L, -1);
    lua_setglobal(L, "server");
    lua_setglobal(L, "redis");
    lua_pushcfunction(L, api_pcall);
    lua_setglobal(L, "pcall");
    return 0;
}

int
api_register(lua_State *L)
{
    if (!client_ready) {
        client_init();
    }
    lua_pushcfunction(L, register_table);
    return lua_pcall(L, 0, 0, 0) == 0 ? 0 : -1;
}

void
api_begin(struct script_run *r)
{
    run = r;
    script_client.proto = 2;    /* Redis's default; setresp changes it */
    script_client.db = r->caller->db;
    script_client.replica_reads = r->caller->replica_reads;
}

void
api_end(void)
{
    run = NULL;
    obuf_consume(&script_client.out, obuf_pending(&script_client.out));
}

int
api_script_proto(void)
{
    return script_client.proto;
}

void
api_teardown(void)
{
    if (client_ready) {
        obuf_deinit(&script_client.out);
        client_ready = false;
    }
    mem_free(argv);
    mem_free(argvlen);
    mem_free(arena);
    argv = NULL;
    argvlen = NULL;
    arena = NULL;
    argv_cap = arena_cap = 0;
}
