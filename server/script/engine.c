/*
 * engine.c - running Lua scripts: the state, its heap, EVAL and SCRIPT.
 * See script.h for the design.
 *
 * A call: find the compiled function by the body's SHA1 (compiling an
 * EVAL's body the first time), check what the script's #!lua flags ask
 * of the server's state (Redis's scriptPrepareForRun), set KEYS and ARGV,
 * run it under an error handler that notes where it failed, and write
 * its value (or its error, with Redis's " script: <sha>, on
 * @user_script:<line>." suffix) as the reply. Its effects form one group
 * in the journal: a replica or a restart sees all of them or none.
 *
 * The count hook runs every 100,000 Lua instructions, as Redis's does:
 * it is where a script that runs too long is noticed and can be stopped.
 */
#include "server/script/script.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lib/keyslot.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/sha1.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/funcset.h"
#include "server/guard.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/monitor.h"
#include "server/script/api.h"
#include "server/script/cache.h"
#include "server/script/convert.h"
#include "server/script/function.h"
#include "server/script/payload.h"
#include "server/script/sandbox.h"
#include "server/server.h"

#define HOOK_INSTRUCTIONS 100000
#define SHEBANG_MAX_FLAGS 16

static lua_State *L;
static size_t lua_bytes;            /* the Lua heap: used_memory_lua */
static bool bounded;                /* lua-memory-limit applies (see lua_heap) */
static int handler_ref = LUA_NOREF; /* the error handler, in the registry */
static int tostring_ref = LUA_NOREF;
static struct script_run *running;
/* What FUNCTION STATS says of the running function; NULL: none (or an
 * EVAL's script). */
static const char *running_function;
static const struct resp_request *running_request;
static mono_ns run_started;
static const struct script_busy_ops *busy_ops;
static bool busy;                   /* the busy server runs */
/* Set by the busy server's thread, read by the count hook. */
static _Atomic(struct script_run *) busy_run;
static atomic_bool kill_requested;
static atomic_bool shutdown_requested;

/* ---- the Lua heap --------------------------------------------------------
 * Lua's own allocator, counted apart from used_memory and bounded by
 * lua-memory-limit: refusing to grow makes Lua raise "not enough memory"
 * in the script; shrinking never fails, as Lua requires. The limit holds
 * only inside the protected calls that compile and run a script
 * (bounded): outside them (KEYS and ARGV, the cache's reference, the
 * error reply) an error would be unprotected, and Lua's panic exits the
 * process, so those few allocations may go past it. */

static void *
lua_heap(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    if (nsize == 0) {
        free(ptr);
        lua_bytes -= osize;
        return NULL;
    }
    if (nsize > osize &&
        lua_bytes - osize + nsize > (size_t)srv.conf.lua_memory_limit &&
        L != NULL && bounded) {
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p == NULL && nsize > osize) {
        return NULL;
    }
    if (p == NULL) {
        p = ptr;        /* a shrink that failed: the block stays */
    }
    lua_bytes = lua_bytes - osize + nsize;
    return p;
}

/* ---- the error handler ---------------------------------------------------
 * Redis's __redis__err__handler, in C: an error becomes a table
 * {err=..., source=..., line=...} naming the Lua function that raised it
 * (the script's line when a C function such as redis.call raised). */

static void
push_tostring(lua_State *S, int idx)
{
    lua_rawgeti(S, LUA_REGISTRYINDEX, tostring_ref);
    lua_pushvalue(S, idx);
    if (lua_pcall(S, 1, 1, 0) != 0 || !lua_isstring(S, -1)) {
        lua_pop(S, 1);
        lua_pushliteral(S, "?");
    }
}

static int
error_handler(lua_State *S)
{
    lua_Debug ar;
    bool found = lua_getstack(S, 1, &ar) && lua_getinfo(S, "nSl", &ar);
    if (found && strcmp(ar.what, "C") == 0) {
        found = lua_getstack(S, 2, &ar) && lua_getinfo(S, "nSl", &ar);
    }
    if (!lua_istable(S, 1)) {
        lua_pushliteral(S, "ERR ");
        push_tostring(S, 1);
        lua_concat(S, 2);
        lua_newtable(S);
        lua_insert(S, -2);
        lua_setfield(S, -2, "err");
        lua_replace(S, 1);
    }
    lua_settop(S, 1);
    if (found) {
        lua_pushstring(S, ar.source);
        lua_setfield(S, 1, "source");
        lua_pushinteger(S, ar.currentline);
        lua_setfield(S, 1, "line");
    }
    return 1;
}

/* ---- the count hook and the busy server -------------------------------
 * Every 100,000 instructions: past busy-reply-threshold the busy server
 * starts (conn.h) and other clients get -BUSY; once it runs, a SCRIPT
 * KILL or SHUTDOWN NOSAVE it received stops the script with Redis's
 * error, and the hook then fires on every line, as Redis sets it, so a
 * script that catches the error with pcall meets it again at once. */

void
script_set_busy_ops(const struct script_busy_ops *ops)
{
    busy_ops = ops;
}

static void count_hook(lua_State *S, lua_Debug *ar);

static void
raise_killed(lua_State *S)
{
    lua_sethook(S, count_hook, LUA_MASKLINE, 0);
    lua_newtable(S);
    lua_pushliteral(S, "ERR Script killed by user with SCRIPT KILL...");
    lua_setfield(S, -2, "err");
    lua_error(S);
}

static void
count_hook(lua_State *S, lua_Debug *ar)
{
    (void)ar;
    if (running == NULL) {
        return;
    }
    if (busy && (atomic_load(&kill_requested) ||
                 atomic_load(&shutdown_requested))) {
        if (atomic_load(&kill_requested)) {
            log_warning("Lua script killed by user with SCRIPT KILL.");
        }
        raise_killed(S);
    }
    if (busy || srv.conf.busy_reply_threshold == 0) {
        return;
    }
    int64_t ms = (clock_mono_now() - run_started) / NS_PER_MS;
    if (ms < srv.conf.busy_reply_threshold) {
        return;
    }
    log_warning("Slow script detected: still in execution after %" PRId64
                " milliseconds. You can try killing the script using the "
                "SCRIPT KILL command.", ms);
    if (busy_ops != NULL) {
        atomic_store(&busy_run, running);
        busy_ops->start(running->caller);
        busy = true;
    }
}

static void
busy_end(void)
{
    if (busy) {
        busy_ops->stop();
        busy = false;
    }
    atomic_store(&busy_run, NULL);
    atomic_store(&kill_requested, false);
    if (atomic_exchange(&shutdown_requested, false)) {
        server_request_shutdown(false);
    }
}

enum script_kill_verdict
script_request_kill(bool function)
{
    struct script_run *r = atomic_load(&busy_run);
    if (r == NULL) {
        return SCRIPT_KILL_NOTBUSY;
    }
    if (atomic_load(&r->wrote)) {
        return SCRIPT_KILL_UNKILLABLE;
    }
    if ((r->function != NULL) != function) {
        return SCRIPT_KILL_OTHER_KIND;
    }
    atomic_store(&kill_requested, true);
    return SCRIPT_KILL_OK;
}

bool
script_busy_function(void)
{
    struct script_run *r = atomic_load(&busy_run);
    return r != NULL && r->function != NULL;
}

void
script_request_shutdown(void)
{
    atomic_store(&shutdown_requested, true);
}

/* ---- the state ------------------------------------------------------------ */

static int
keep_in_registry(lua_State *S, lua_CFunction f)
{
    lua_pushcfunction(S, f);
    return luaL_ref(S, LUA_REGISTRYINDEX);
}

/* A snapshot's or a record's libraries, instead of the ones loaded. */
static int
replace_functions(const unsigned char *p, size_t len, char *err,
                  size_t errlen)
{
    if (L == NULL && script_init() != 0) {
        snprintf(err, errlen, "no memory for the Lua state");
        return -1;
    }
    return function_replace_set(L, p, len, err, errlen);
}

int
script_init(void)
{
    lua_bytes = 0;
    lua_State *S = lua_newstate(lua_heap, NULL);
    if (S == NULL) {
        return -1;
    }
    if (sandbox_open(S) != 0 || api_register(S) != 0) {
        lua_close(S);
        return -1;
    }
    lua_getglobal(S, "tostring");
    tostring_ref = luaL_ref(S, LUA_REGISTRYINDEX);
    handler_ref = keep_in_registry(S, error_handler);
    if (tostring_ref == LUA_REFNIL || handler_ref == LUA_REFNIL ||
        sandbox_seal(S) != 0) {
        lua_close(S);
        return -1;
    }
    L = S;
    static const struct funcset_ops funcset = { function_encode_set,
                                                replace_functions };
    funcset_set_ops(&funcset);
    return 0;
}

/* Every cached script and the Lua state that ran them, gone. */
static void
drop_state(void)
{
    cache_flush();
    function_flush(L);
    function_state_closed();
    if (L != NULL) {
        lua_close(L);
        L = NULL;
    }
}

void
script_teardown(void)
{
    drop_state();
    api_teardown();
}

void
script_flush(void)
{
    /* The libraries stay, and the state they live in with them: only the
     * scripts' references go, and their garbage at once. */
    if (L != NULL && function_library_count() > 0) {
        cache_flush();
        lua_gc(L, LUA_GCCOLLECT, 0);
        return;
    }
    drop_state();
    if (script_init() != 0) {
        log_warning("SCRIPT FLUSH: no memory for a new Lua state; scripts "
                    "answer an error until one can be made");
    }
}

/* After a script or a compilation: a full collection when it ran out of
 * memory or left the heap past half its limit, so that the garbage of a
 * script that failed does not make the next ones fail too (Lua 5.1 has no
 * emergency collection; its incremental steps run only as it allocates,
 * and at the limit nothing allocates). */
static void
relieve(int rc)
{
    if (L != NULL && (rc == LUA_ERRMEM ||
                      lua_bytes > (size_t)srv.conf.lua_memory_limit / 2)) {
        lua_gc(L, LUA_GCCOLLECT, 0);
    }
}

/* ---- compiling -------------------------------------------------------- */

/* Redis's evalExtractShebangFlags(): the #!lua line's flags, and its
 * length (kept out of the compiled body, its line feed kept so that line
 * numbers stay the user's). false with err set. */
/* The words of a shebang's flags=..., comma separated, into *f; false
 * with Redis's error for a word it does not know. */
static bool
shebang_flag_words(const char *q, const char *wend, unsigned *f, char *err,
                   size_t errlen)
{
    while (q <= wend) {
        const char *comma = memchr(q, ',', (size_t)(wend - q));
        const char *fe = comma != NULL ? comma : wend;
        size_t i = 0;
        for (; i < SCRIPT_FLAG_WORDS; i++) {
            if (strlen(script_flag_words[i].word) == (size_t)(fe - q) &&
                memcmp(script_flag_words[i].word, q, (size_t)(fe - q)) == 0) {
                *f |= script_flag_words[i].flag;
                break;
            }
        }
        if (i == SCRIPT_FLAG_WORDS && fe > q) {
            snprintf(err, errlen, "ERR Unexpected flag in script shebang: "
                     "%.*s", (int)(fe - q), q);
            return false;
        }
        q = fe + 1;
    }
    return true;
}

/* One word of the shebang line: the first must be "#!lua", the others
 * flags=...; false with Redis's error. */
static bool
shebang_word(const char *word, size_t wlen, bool first, unsigned *f,
             char *err, size_t errlen)
{
    if (first) {
        if (wlen != 5 || memcmp(word, "#!lua", 5) != 0) {
            snprintf(err, errlen, "ERR Unexpected engine in script shebang: "
                     "%.*s", (int)wlen, word);
            return false;
        }
        return true;
    }
    if (wlen >= 6 && memcmp(word, "flags=", 6) == 0) {
        return shebang_flag_words(word + 6, word + wlen, f, err, errlen);
    }
    snprintf(err, errlen, "ERR Unknown lua shebang option: %.*s", (int)wlen,
             word);
    return false;
}

static bool
shebang_flags(const char *body, size_t len, unsigned *flags, size_t *skip,
              char *err, size_t errlen)
{
    *flags = SCRIPT_COMPAT;
    *skip = 0;
    if (len < 2 || body[0] != '#' || body[1] != '!') {
        return true;
    }
    const char *end = memchr(body, '\n', len);
    if (end == NULL) {
        snprintf(err, errlen, "ERR Invalid script shebang");
        return false;
    }
    *skip = (size_t)(end - body);
    /* The words, split at blanks as sdssplitargs() splits them for the
     * plain words a shebang holds. */
    const char *word = NULL;
    size_t wlen = 0;
    bool first = true;
    unsigned f = 0;
    for (const char *p = body; p <= end; p++) {
        if (p == end || *p == ' ' || *p == '\t' || *p == '\r') {
            if (word != NULL) {
                if (!shebang_word(word, wlen, first, &f, err, errlen)) {
                    return false;
                }
                first = false;
                word = NULL;
            }
        } else if (word == NULL) {
            word = p;
            wlen = 1;
        } else {
            wlen++;
        }
    }
    *flags = f;
    return true;
}

/* The script of body, compiled now if it is new. NULL after replying the
 * error to c. */
static struct script_entry *
compile(struct conn *c, const char *body, size_t len, bool loaded)
{
    uint8_t sha[20];
    sha1(body, len, sha);
    struct script_entry *e = cache_find(sha);
    if (e != NULL) {
        return e;
    }
    char err[256];
    unsigned flags;
    size_t skip;
    if (!shebang_flags(body, len, &flags, &skip, err, sizeof(err))) {
        cmd_error(c, err);
        return NULL;
    }
    bounded = true;
    int rc = sandbox_load(L, body + skip, len - skip, "@user_script");
    bounded = false;
    if (rc != 0) {
        const char *why = lua_tostring(L, -1);
        cmd_errorf(c, "ERR Error compiling script (new function): %s",
                   why != NULL ? why : "?");
        lua_pop(L, 1);
        relieve(rc);
        return NULL;
    }
    e = cache_add(L, sha, flags, loaded);
    if (e == NULL) {
        cmd_error(c, ERR_NOMEM);
    }
    return e;
}

static unsigned flags_to_cmd_flags(unsigned cmd_flags, unsigned f);

unsigned
script_request_flags(const struct cmd *cmd, const struct resp_request *req)
{
    unsigned cmd_flags = cmd->flags;
    bool by_sha = (cmd->flags & CMD_SCRIPT_SHA) != 0;
    if (req->argc < 2 || (by_sha && req->argvlen[1] != 40)) {
        return cmd_flags;
    }
    unsigned f;
    uint8_t sha[20];
    struct script_entry *e = NULL;
    if (by_sha) {
        if (cache_sha_parse(req->argv[1], req->argvlen[1], sha)) {
            e = cache_find(sha);
        }
        if (e == NULL) {
            return cmd_flags;
        }
        f = e->flags;
    } else {
        sha1(req->argv[1], req->argvlen[1], sha);
        e = cache_find(sha);
        char err[256];
        size_t skip;
        if (e != NULL) {
            f = e->flags;
        } else if (!shebang_flags(req->argv[1], req->argvlen[1], &f, &skip,
                                  err, sizeof(err))) {
            return cmd_flags;
        }
    }
    if (f & SCRIPT_COMPAT) {
        return cmd_flags;
    }
    return flags_to_cmd_flags(cmd_flags, f);
}

/* Redis's scriptFlagsToCmdFlags(). */
static unsigned
flags_to_cmd_flags(unsigned cmd_flags, unsigned f)
{
    cmd_flags &= ~(unsigned)(CMD_STALE | CMD_DENYOOM | CMD_WRITE |
                             CMD_MAY_REPLICATE);
    if (!(f & (SCRIPT_ALLOW_OOM | SCRIPT_NO_WRITES))) {
        cmd_flags |= CMD_DENYOOM;
    }
    if (!(f & SCRIPT_NO_WRITES)) {
        cmd_flags |= CMD_WRITE;
    }
    if (f & SCRIPT_ALLOW_STALE) {
        cmd_flags |= CMD_STALE;
    }
    return cmd_flags;
}

/* ---- running -------------------------------------------------------- */

/* Redis's scriptPrepareForRun() and the refusals processCommand() gives
 * a script whose #!lua line makes it a write: NULL, or the error. */
static const char *
refusal(unsigned f, bool read_only, bool oom, char *buf, size_t buflen)
{
    if (f & SCRIPT_COMPAT) {
        return NULL;
    }
    bool writes = !(f & SCRIPT_NO_WRITES);
    if (writes && !(f & SCRIPT_ALLOW_OOM) && oom) {
        return ERR_OOM;
    }
    enum guard_verdict v = writes ? guard_write(GUARD_AS_COMMAND, false)
                                  : GUARD_RUN;
    if (v != GUARD_RUN) {
        return guard_error(v, buf, buflen);
    }
    if ((f & SCRIPT_NO_CLUSTER) && server_in_cluster()) {
        return "ERR Can not run script on cluster, 'no-cluster' flag is "
               "set.";
    }
    if (writes && read_only) {
        return "ERR Can not execute a script with write flag using *_ro "
               "command.";
    }
    return NULL;
}

/* KEYS or ARGV: a table of n strings, a global of the script's. */
static void
set_array(const char *name, char **argv, size_t *lens, size_t n)
{
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushlstring(L, argv[i], lens[i]);
        lua_rawseti(L, -2, (int)i + 1);
    }
    sandbox_push_globals(L);
    lua_insert(L, -2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

/* The script's SHA1 as Redis names it: 40 lowercase hex digits. */
static void
sha_hex(const struct script_entry *e, char out[41])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 20; i++) {
        out[2 * i] = digits[e->sha[i] >> 4];
        out[2 * i + 1] = digits[e->sha[i] & 15];
    }
    out[40] = '\0';
}

/* The failed script's error table (or string) on top of L, as its reply:
 * "-CODE text script: <sha>, on @user_script:<line>." */
static void
reply_failure(struct conn *c, const char *sha)
{
    if (!lua_istable(L, -1)) {
        const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1)
                                              : "execution failure";
        cmd_errorf(c, "ERR Error running script f_%s, %.100s", sha, msg);
        return;
    }
    /* Raw reads: an __index that raises would raise here, outside any
     * protected call, and Lua's panic ends the process (Redis 7.0.15's
     * lua_getfield does: error(setmetatable({}, {__index=error})) kills
     * it). */
    int t = lua_gettop(L);
    static const char *const fields[] = { "err", "source", "line",
                                          "ignore_error_stats_update" };
    for (int i = 0; i < 4; i++) {
        lua_pushstring(L, fields[i]);
        lua_rawget(L, t);
    }
    const char *msg = lua_isstring(L, -4) ? lua_tostring(L, -4) : "";
    const char *source = lua_isstring(L, -3) ? lua_tostring(L, -3) : NULL;
    const char *line = lua_isstring(L, -2) ? lua_tostring(L, -2) : NULL;
    bool counted = lua_isboolean(L, -1) && lua_toboolean(L, -1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, msg);
    if (source != NULL && line != NULL) {
        luaL_addstring(&b, " script: ");
        luaL_addstring(&b, sha);
        luaL_addstring(&b, ", on ");
        luaL_addstring(&b, source);
        luaL_addstring(&b, ":");
        luaL_addstring(&b, line);
        luaL_addstring(&b, ".");
    }
    luaL_pushresult(&b);
    size_t len;
    const char *text = lua_tolstring(L, -1, &len);
    /* As Redis's "-%s": an err that starts with '-' keeps it ("--5"). */
    cmd_error_script(c, text, len, !counted);
    lua_pop(L, 5);
}

/* FCALL's keys and arguments: two tables, the function's arguments; and
 * no KEYS or ARGV an EVAL left behind (a function reading them meets
 * Redis's error for an undefined global). */
static void
push_fcall_args(struct resp_request *req, size_t nkeys)
{
    sandbox_push_globals(L);
    lua_pushnil(L);
    lua_setfield(L, -2, "KEYS");
    lua_pushnil(L);
    lua_setfield(L, -2, "ARGV");
    lua_pop(L, 1);
    char **argv = req->argv + 3;
    size_t *lens = req->argvlen + 3;
    for (int t = 0; t < 2; t++) {
        size_t n = t == 0 ? nkeys : req->argc - 3 - nkeys;
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            lua_pushlstring(L, argv[i], lens[i]);
            lua_rawseti(L, -2, (int)i + 1);
        }
        argv += n;
        lens += n;
    }
}

/* Run the function of ref: an EVAL's script (KEYS and ARGV set) or, when
 * fcall, a library's function (keys and arguments its two arguments);
 * name is what its errors say it is. */
static void
call_function(struct conn *c, int ref, const char *name, struct script_run *r,
              struct resp_request *req, size_t nkeys, bool fcall)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, handler_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    if (fcall) {
        push_fcall_args(req, nkeys);
    } else {
        set_array("KEYS", req->argv + 3, req->argvlen + 3, nkeys);
        set_array("ARGV", req->argv + 3 + nkeys, req->argvlen + 3 + nkeys,
                  req->argc - 3 - nkeys);
    }
    running = r;
    run_started = clock_mono_now();
    api_begin(r);
    if (srv.conf.busy_reply_threshold > 0) {
        lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_INSTRUCTIONS);
    }
    bounded = true;
    int rc = lua_pcall(L, fcall ? 2 : 0, 1, fcall ? -4 : -2);
    bounded = false;
    lua_sethook(L, NULL, 0, 0);
    busy_end();
    if (rc != 0) {
        reply_failure(c, name);
    } else {
        script_lua_to_reply(L, c, api_script_proto());
    }
    lua_pop(L, rc != 0 ? 2 : 1);   /* the error (or nothing) and handler */
    api_end();
    running = NULL;
    relieve(rc);
}

/* Redis's getLongLongFromObjectOrReply() and its numkeys checks. */
static bool
parse_numkeys(struct conn *c, const struct resp_request *req, size_t *out,
              const char *not_integer)
{
    int64_t n;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &n)) {
        cmd_error(c, not_integer);
        return false;
    }
    if (n > (int64_t)req->argc - 3) {
        cmd_error(c, ERR_NUMKEYS_OVER_ARGS);
        return false;
    }
    if (n < 0) {
        cmd_error(c, "ERR Number of keys can't be negative");
        return false;
    }
    *out = (size_t)n;
    return true;
}

static struct script_entry *
find_script(struct conn *c, const struct resp_request *req, bool by_sha)
{
    if (!by_sha) {
        struct script_entry *e = compile(c, req->argv[1], req->argvlen[1],
                                         false);
        if (e != NULL) {
            cache_touch(e);
        }
        return e;
    }
    uint8_t sha[20];
    struct script_entry *e = NULL;
    if (cache_sha_parse(req->argv[1], req->argvlen[1], sha)) {
        e = cache_find(sha);
    }
    if (e == NULL) {
        cmd_error(c, ERR_NOSCRIPT);
        return NULL;
    }
    cache_touch(e);
    return e;
}

/* Check what the flags ask of the server's state, then run the script
 * or function of ref as one group of effects. */
static void
run_script(struct conn *c, unsigned flags, int ref, const char *name,
           struct resp_request *req, size_t nkeys, bool read_only,
           bool fcall)
{
    char buf[256];
    bool oom = !keyspace_admit(0, NULL);
    const char *why = refusal(flags, read_only, oom, buf, sizeof(buf));
    if (why != NULL) {
        cmd_error(c, why);
        return;
    }
    struct script_run r = {
        .caller = c,
        .flags = flags,
        .read_only = read_only ||
                     (!(flags & SCRIPT_COMPAT) && (flags & SCRIPT_NO_WRITES)),
        .oom_at_start = oom,
        .slot = -1,
        .repl = SCRIPT_REPL_ALL,
        .function = fcall ? name : NULL,
    };
    if (flags & SCRIPT_COMPAT) {
        r.flags |= SCRIPT_ALLOW_CROSS_SLOT;
    }
    if (cluster_routing() && nkeys > 0) {
        r.slot = (int)keyslot(req->argv[3], req->argvlen[3]);
    }
    int db = c->db;
    keyspace_group_begin();
    /* As Redis: maxmemory was checked as the script began (a script
     * started over it may not write: api.c), never during it, so a
     * script that began may finish what it writes. */
    keyspace_admit_past_maxmemory(true);
    call_function(c, ref, name, &r, req, nkeys, fcall);
    keyspace_admit_past_maxmemory(false);
    keyspace_group_end();
    if (r.repl != SCRIPT_REPL_ALL) {
        keyspace_journal_sinks(SCRIPT_REPL_ALL);
    }
    if (srv.db != db) {
        (void)keyspace_select(db);  /* the script's SELECT was its own */
    }
}

void
script_eval(struct conn *c, struct resp_request *req, bool by_sha,
            bool read_only)
{
    /* As Redis: the EVAL line comes before its commands' in MONITOR. */
    if (srv.monitors != 0) {
        monitor_feed(c, req);
    }
    if (by_sha && req->argvlen[1] != 40) {
        cmd_error(c, ERR_NOSCRIPT);
        return;
    }
    size_t nkeys;
    if (!parse_numkeys(c, req, &nkeys, ERR_NOT_INTEGER)) {
        return;
    }
    if (L == NULL && script_init() != 0) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    struct script_entry *e = find_script(c, req, by_sha);
    if (e == NULL) {
        return;
    }
    char sha[41];
    sha_hex(e, sha);
    run_script(c, e->flags, e->ref, sha, req, nkeys, read_only, false);
}

void
script_load(struct conn *c, const char *body, size_t len)
{
    if (L == NULL && script_init() != 0) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    struct script_entry *e = compile(c, body, len, true);
    if (e == NULL) {
        return;
    }
    cache_keep(e);
    char hex[41];
    sha_hex(e, hex);
    reply_bulk(&c->out, hex, 40);
}

bool
script_exists(const char *sha, size_t len)
{
    uint8_t bin[20];
    return cache_sha_parse(sha, len, bin) && cache_find(bin) != NULL;
}

/* No script can be running when another client's command runs: the loop
 * runs one thing at a time. */
void
script_kill(struct conn *c)
{
    cmd_error(c, ERR_NOTBUSY);
}

size_t
script_lua_memory(void)
{
    return lua_bytes;
}

size_t
script_count(void)
{
    return cache_count();
}

size_t
script_cache_memory(void)
{
    return cache_memory();
}

/* ---- functions ----------------------------------------------------------- */

unsigned
script_fcall_request_flags(const struct cmd *cmd,
                           const struct resp_request *req)
{
    const struct fn_function *f =
        req->argc >= 2 ? function_find(req->argv[1], req->argvlen[1]) : NULL;
    return f != NULL ? flags_to_cmd_flags(cmd->flags, f->flags) : cmd->flags;
}

void
script_fcall(struct conn *c, struct resp_request *req, bool read_only)
{
    /* As Redis: the FCALL line comes before its commands' in MONITOR. */
    if (srv.monitors != 0) {
        monitor_feed(c, req);
    }
    struct fn_function *f = function_find(req->argv[1], req->argvlen[1]);
    if (f == NULL) {
        cmd_error(c, "ERR Function not found");
        return;
    }
    size_t nkeys;
    if (!parse_numkeys(c, req, &nkeys, "ERR Bad number of keys provided")) {
        return;
    }
    running_function = f->name;
    running_request = req;
    run_script(c, f->flags, f->ref, f->name, req, nkeys, read_only, true);
    running_function = NULL;
    running_request = NULL;
}

void
script_function_load(struct conn *c, const char *code, size_t len,
                     bool replace)
{
    if (L == NULL && script_init() != 0) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    if (!keyspace_admit(0, NULL)) {     /* deny-oom, as Redis's row */
        cmd_error(c, ERR_OOM);
        return;
    }
    const char *name;
    size_t name_len;
    char err[600];
    bool ok = function_load(L, code, len, replace ? FN_REPLACE : FN_LOAD,
                            &name, &name_len, err, sizeof(err));
    relieve(0);
    if (!ok) {
        cmd_error(c, err);
        return;
    }
    reply_bulk(&c->out, name, name_len);
    funcset_changed();
}

void
script_function_delete(struct conn *c, const char *name, size_t len)
{
    if (!function_delete(L, name, len)) {
        cmd_error(c, "ERR Library not found");
        return;
    }
    funcset_changed();
    reply_ok(&c->out);
}

void
script_function_flush(struct conn *c)
{
    function_flush(L);
    if (L != NULL) {
        lua_gc(L, LUA_GCCOLLECT, 0);
    }
    funcset_changed();
    reply_ok(&c->out);
}

void
script_function_list(struct conn *c, bool withcode, const char *pattern,
                     size_t plen)
{
    function_list(c, withcode, pattern, plen);
}

void
script_function_dump(struct conn *c)
{
    struct membuf b = { 0 };
    if (!payload_dump(&b)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_bulk(&c->out, b.p, b.len);
    }
    mem_free(b.p);
}

void
script_function_restore(struct conn *c, const char *payload, size_t len,
                        int policy)
{
    struct membuf set = { 0 };
    char err[600];
    if (!keyspace_admit(0, NULL)) {     /* deny-oom, as Redis's row */
        cmd_error(c, ERR_OOM);
        return;
    }
    if (L == NULL && script_init() != 0) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    if (payload_read((const unsigned char *)payload, len, &set, err,
                     sizeof(err)) < 0 ||
        function_restore(L, set.p, set.len, (enum fn_restore)policy, err,
                         sizeof(err)) < 0) {
        cmd_error(c, err);
    } else {
        funcset_changed();
        reply_ok(&c->out);
    }
    mem_free(set.p);
    relieve(0);
}

/* FUNCTION STATS: on the loop's thread, when no function runs; on the busy
 * server's while one does (busy.c), the function, its command and its
 * time so far, which stay as they are while it runs. */
void
script_function_stats(struct conn *c)
{
    reply_map(&c->out, 2, c->proto);
    reply_bulkz(&c->out, "running_script");
    if (running_function == NULL) {
        reply_null(&c->out, c->proto);
    } else {
        const struct resp_request *req = running_request;
        reply_map(&c->out, 3, c->proto);
        reply_bulkz(&c->out, "name");
        reply_bulkz(&c->out, running_function);
        reply_bulkz(&c->out, "command");
        reply_array(&c->out, req->argc);
        for (size_t i = 0; i < req->argc; i++) {
            reply_bulk(&c->out, req->argv[i], req->argvlen[i]);
        }
        reply_bulkz(&c->out, "duration_ms");
        reply_int(&c->out, (clock_mono_now() - run_started) / NS_PER_MS);
    }
    reply_bulkz(&c->out, "engines");
    reply_map(&c->out, 1, c->proto);
    reply_bulkz(&c->out, "LUA");
    reply_map(&c->out, 2, c->proto);
    reply_bulkz(&c->out, "libraries_count");
    reply_int(&c->out, (int64_t)function_library_count());
    reply_bulkz(&c->out, "functions_count");
    reply_int(&c->out, (int64_t)function_count());
}

/* As SCRIPT KILL: nothing runs while the loop's thread answers. */
void
script_function_kill(struct conn *c)
{
    cmd_error(c, ERR_NOTBUSY);
}

size_t
script_library_count(void)
{
    return function_library_count();
}

size_t
script_function_count(void)
{
    return function_count();
}

size_t
script_function_memory(void)
{
    return function_memory();
}
