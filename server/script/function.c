/*
 * function.c - FUNCTION's libraries (Redis 7.0's functions): loading one,
 * the functions it registers, deleting, flushing, listing, and the bytes
 * the journal, the snapshot and the replicas keep of the whole set.
 *
 * A library is Lua code under a "#!lua name=<lib>" line; loading it runs
 * the code once, and the only thing it may do is call
 * redis.register_function(), whose callbacks FCALL then runs (engine.c).
 * Redis gives functions a Lua state of their own; here they share the
 * scripts' state, sandbox and Lua heap, as EVAL's scripts do: one heap
 * under lua-memory-limit, one set of library tables, one count hook and
 * busy server, and SCRIPT FLUSH keeps the state (it forgets only the
 * scripts' references) while a library is loaded, so a library's upvalues
 * live until it is replaced, as in Redis. What a library sees is kept
 * apart all the same: its chunk's globals are an environment E that reads
 * through a switch table S. While the library loads, S reads the load
 * globals, {redis = {register_function, log, LOG_*, REDIS_VERSION,
 * REDIS_VERSION_NUM}}, and nothing else, as Redis 7.0's LIBRARY_API (and
 * Valkey's alias server, as the scripts have it); once
 * loaded, S reads the scripts' read-only globals, so a callback sees what
 * an EVAL sees (redis.call, cjson, ...; no KEYS or ARGV: engine.c clears
 * them). E is a read-only view (sandbox.c), so a library never writes a
 * global, as in Redis.
 *
 * The set as the journal keeps it is the libraries' code only: replaying
 * it loads them again, which is what Redis's RDB and AOF do too.
 */
#include "server/script/function.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>

#include "lib/args.h"
#include "lib/dict.h"
#include "lib/glob.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/errors.h"
#include "server/script/api.h"
#include "server/script/sandbox.h"

/* A client's FUNCTION LOAD stops after this long (Redis's LOAD_TIMEOUT_MS:
 * a library only registers functions). */
#define LOAD_TIMEOUT_MS 500
#define LOAD_HOOK_INSTRUCTIONS 100000

#define ERR_BAD_METADATA "ERR Invalid library metadata"
#define ERR_NAME_RULES                                                        \
    "Library names can only contain letters, numbers, or underscores(_) "     \
    "and must be at least one character long"

struct fn_library {
    char *code;                 /* the whole payload, #! line included */
    size_t code_len;
    struct fn_function **fns;   /* in the order registered */
    size_t nfns;
    size_t name_len;
    char name[];
};

static struct dict libraries = DICT_SERVER;     /* name -> fn_library */
static struct dict functions = DICT_SERVER;     /* name -> fn_function */
static size_t owned;            /* the libraries' and functions' blocks */

static int env_ref = LUA_NOREF;         /* E, every library's globals */
static int switch_ref = LUA_NOREF;      /* S, which E reads through */
static int load_api_ref = LUA_NOREF;    /* the globals while loading */
static struct fn_library *loading;      /* register_function's target */
static mono_ns load_started;

/* ---- names ------------------------------------------------------------- */

static bool
valid_name(const char *s, size_t len)
{
    if (len == 0) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_')) {
            return false;
        }
    }
    return true;
}

/* ---- the #! line ---------------------------------------------------------
 * Redis's functionExtractLibMetaData(): "#!<engine>" then name=<lib>, the
 * words split as sdssplitargs() splits them. */

struct meta {
    char *words;                /* the decoded words, each NUL-ended */
    const char *engine;
    size_t engine_len;
    const char *name;           /* NULL until given */
    size_t name_len;
    size_t body;                /* the code after the #! line: its LF on */
};

static bool
meta_word(struct meta *m, const char *w, size_t wlen, bool first, char *err,
          size_t errlen)
{
    if (first) {
        m->engine = wlen >= 2 ? w + 2 : w + wlen;
        m->engine_len = wlen >= 2 ? wlen - 2 : 0;
        return true;
    }
    if (wlen >= 5 && strncasecmp(w, "name=", 5) == 0) {
        if (m->name != NULL) {
            snprintf(err, errlen, "ERR Invalid metadata value, name argument "
                     "was given multiple times");
            return false;
        }
        m->name = w + 5;
        m->name_len = wlen - 5;
        return true;
    }
    snprintf(err, errlen, "ERR Invalid metadata value given: %.200s", w);
    return false;
}

static bool
meta_words(struct meta *m, const char *line, size_t end, char *err,
           size_t errlen)
{
    size_t pos = 0, used = 0, n = 0;
    for (;;) {
        size_t wlen;
        enum args_status st = args_next(line, end, &pos, m->words + used,
                                        &wlen);
        if (st == ARGS_END) {
            break;
        }
        if (st != ARGS_WORD) {
            n = 0;
            break;
        }
        char *w = m->words + used;
        w[wlen] = '\0';
        used += wlen + 1;
        if (!meta_word(m, w, wlen, n++ == 0, err, errlen)) {
            return false;
        }
    }
    if (n == 0) {
        snprintf(err, errlen, ERR_BAD_METADATA);
        return false;
    }
    return true;
}

/* false with err; m->words to mem_free() either way. */
static bool
read_meta(const char *code, size_t len, struct meta *m, char *err,
          size_t errlen)
{
    memset(m, 0, sizeof(*m));
    size_t clen = strnlen(code, len);       /* Redis reads a C string */
    if (clen < 2 || code[0] != '#' || code[1] != '!') {
        snprintf(err, errlen, "ERR Missing library metadata");
        return false;
    }
    const char *lf = memchr(code, '\n', clen);
    if (lf == NULL) {
        snprintf(err, errlen, ERR_BAD_METADATA);
        return false;
    }
    size_t line = (size_t)(lf - code);
    m->words = mem_malloc(2 * line + 2);
    if (m->words == NULL) {
        snprintf(err, errlen, ERR_NOMEM);
        return false;
    }
    if (!meta_words(m, code, line, err, errlen)) {
        return false;
    }
    if (m->name == NULL) {
        snprintf(err, errlen, "ERR Library name was not given");
        return false;
    }
    m->body = line;
    return true;
}

/* Redis's order of refusals before any code runs. */
static bool
check_meta(const struct meta *m, char *err, size_t errlen)
{
    if (!valid_name(m->name, m->name_len)) {
        snprintf(err, errlen, "ERR " ERR_NAME_RULES);
        return false;
    }
    if (m->engine_len != 3 || strncasecmp(m->engine, "lua", 3) != 0) {
        snprintf(err, errlen, "ERR Engine '%.*s' not found",
                 (int)(m->engine_len > 200 ? 200 : m->engine_len),
                 m->engine);
        return false;
    }
    return true;
}

/* ---- libraries and functions ------------------------------------------ */

static void
function_free(lua_State *L, struct fn_function *f)
{
    if (L != NULL && f->ref != LUA_NOREF) {
        luaL_unref(L, LUA_REGISTRYINDEX, f->ref);
    }
    owned -= sizeof(*f) + f->name_len + 1 + f->desc_len;
    mem_free(f->desc);
    mem_free(f);
}

static void
library_free(lua_State *L, struct fn_library *lib)
{
    for (size_t i = 0; i < lib->nfns; i++) {
        function_free(L, lib->fns[i]);
    }
    owned -= sizeof(*lib) + lib->name_len + 1 + lib->code_len +
             lib->nfns * sizeof(lib->fns[0]);
    mem_free(lib->fns);
    mem_free(lib->code);
    mem_free(lib);
}

static struct fn_library *
library_new(const struct meta *m, const char *code, size_t len)
{
    struct fn_library *lib = mem_calloc(1, sizeof(*lib) + m->name_len + 1);
    if (lib == NULL || (lib->code = mem_malloc(len + 1)) == NULL) {
        mem_free(lib);
        return NULL;
    }
    memcpy(lib->name, m->name, m->name_len);
    lib->name_len = m->name_len;
    memcpy(lib->code, code, len);
    lib->code[len] = '\0';
    lib->code_len = len;
    owned += sizeof(*lib) + lib->name_len + 1 + len;
    return lib;
}

/* The table of every function's is keyed by the name in lower case: Redis
 * finds a function whatever the case it is called in (FCALL TEST runs
 * test; its table compares names case-insensitively), and refuses a
 * function named as another library's in another case. The name folded
 * into buf, or into memory of its own when longer (unfold frees it);
 * NULL when memory ran out. */
enum { FOLD_BUF = 64 };

static char *
fold(const char *name, size_t len, char *buf)
{
    char *out = len <= FOLD_BUF ? buf : mem_malloc(len);
    for (size_t i = 0; out != NULL && i < len; i++) {
        out[i] = (char)tolower((unsigned char)name[i]);
    }
    return out;
}

static void
unfold(char *folded, char *buf)
{
    if (folded != buf) {
        mem_free(folded);
    }
}

static struct dict_entry *
function_entry(const char *name, size_t len)
{
    char buf[FOLD_BUF];
    char *key = fold(name, len, buf);
    struct dict_entry *e = key != NULL ? dict_find(&functions, key, len)
                                       : NULL;
    unfold(key, buf);
    return e;
}

/* The library's functions out of the table of every function's. */
static void
unlink_functions(struct fn_library *lib, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct fn_function *f = lib->fns[i];
        struct dict_entry *e = function_entry(f->name, f->name_len);
        if (e != NULL && e->owner.p == f) {
            dict_remove(&functions, e);
        }
    }
}

/* Into the table of every function's; false (none added) when memory
 * ran out. */
static bool
link_functions(struct fn_library *lib)
{
    for (size_t i = 0; i < lib->nfns; i++) {
        struct fn_function *f = lib->fns[i];
        char buf[FOLD_BUF];
        char *key = fold(f->name, f->name_len, buf);
        struct dict_entry *e =
            key != NULL ? dict_add(&functions, key, (uint32_t)f->name_len,
                                   NULL, 0)
                        : NULL;
        unfold(key, buf);
        if (e == NULL) {
            unlink_functions(lib, i);
            return false;
        }
        e->owner.p = f;
    }
    return true;
}

static struct fn_library *
library_find(const char *name, size_t len)
{
    struct dict_entry *e = dict_find(&libraries, name, len);
    return e != NULL ? e->owner.p : NULL;
}

struct fn_function *
function_find(const char *name, size_t len)
{
    struct dict_entry *e = function_entry(name, len);
    return e != NULL ? e->owner.p : NULL;
}

/* ---- redis.register_function ------------------------------------------ */

/* Raise {err="ERR msg"}, as Redis's luaPushError() then luaError(). */
static int
raise_error(lua_State *L, const char *msg)
{
    lua_newtable(L);
    lua_pushfstring(L, "ERR %s", msg);
    lua_setfield(L, -2, "err");
    return lua_error(L);
}

struct fn_args {
    const char *name, *desc;
    size_t name_len, desc_len;
    int ref;
    unsigned flags;
};

/* The flags table on top: Redis's scripts_flags_def, any case. */
static bool
read_flags(lua_State *L, unsigned *flags)
{
    for (int j = 1;; j++) {
        lua_pushinteger(L, j);
        lua_gettable(L, -2);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return true;
        }
        const char *w = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
        size_t i = 0;
        while (w != NULL && i < SCRIPT_FLAG_WORDS &&
               strcasecmp(script_flag_words[i].word, w) != 0) {
            i++;
        }
        lua_pop(L, 1);
        if (w == NULL || i == SCRIPT_FLAG_WORDS) {
            return false;
        }
        *flags |= script_flag_words[i].flag;
    }
}

/* One named argument: key at -2, value at -1 (popped, or left for the
 * caller to pop). NULL, or Redis's error. */
static const char *
named_arg(lua_State *L, struct fn_args *a)
{
    if (!lua_isstring(L, -2)) {
        return "named argument key given to redis.register_function is not "
               "a string";
    }
    lua_pushvalue(L, -2);               /* tostring would change the key */
    const char *key = lua_tostring(L, -1);
    lua_pop(L, 1);                      /* the table still holds it */
    if (strcasecmp(key, "function_name") == 0) {
        if (!lua_isstring(L, -1)) {
            return "function_name argument given to redis.register_function "
                   "must be a string";
        }
        a->name = lua_tolstring(L, -1, &a->name_len);
    } else if (strcasecmp(key, "description") == 0) {
        if (!lua_isstring(L, -1)) {
            return "description argument given to redis.register_function "
                   "must be a string";
        }
        a->desc = lua_tolstring(L, -1, &a->desc_len);
    } else if (strcasecmp(key, "callback") == 0) {
        if (!lua_isfunction(L, -1)) {
            return "callback argument given to redis.register_function must "
                   "be a function";
        }
        if (a->ref != LUA_NOREF) {
            luaL_unref(L, LUA_REGISTRYINDEX, a->ref);
        }
        lua_pushvalue(L, -1);
        a->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    } else if (strcasecmp(key, "flags") == 0) {
        if (!lua_istable(L, -1)) {
            return "flags argument to redis.register_function must be a "
                   "table representing function flags";
        }
        if (!read_flags(L, &a->flags)) {
            return "unknown flag given";
        }
    } else {
        return "unknown argument given to redis.register_function";
    }
    return NULL;
}

static const char *
named_args(lua_State *L, struct fn_args *a)
{
    if (!lua_istable(L, 1)) {
        return "calling redis.register_function with a single argument is "
               "only applicable to Lua table (representing named "
               "arguments).";
    }
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        const char *why = named_arg(L, a);
        if (why != NULL) {
            return why;
        }
        lua_pop(L, 1);
    }
    if (a->name == NULL) {
        return "redis.register_function must get a function name argument";
    }
    if (a->ref == LUA_NOREF) {
        return "redis.register_function must get a callback argument";
    }
    return NULL;
}

static const char *
positional_args(lua_State *L, struct fn_args *a)
{
    if (!lua_isstring(L, 1)) {
        return "first argument to redis.register_function must be a string";
    }
    a->name = lua_tolstring(L, 1, &a->name_len);
    if (!lua_isfunction(L, 2)) {
        return "second argument to redis.register_function must be a "
               "function";
    }
    lua_pushvalue(L, 2);
    a->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return NULL;
}

/* Redis's functionLibCreateFunction(): into the loading library. */
static const char *
add_function(lua_State *L, struct fn_args *a)
{
    if (!valid_name(a->name, a->name_len)) {
        return ERR_NAME_RULES;
    }
    /* Names equal but for case are one name in the table of every
     * function (fold()): refused here, where Redis 7.0.15 takes both
     * and then fails an assertion. */
    for (size_t i = 0; i < loading->nfns; i++) {
        const struct fn_function *f = loading->fns[i];
        if (f->name_len == a->name_len &&
            strncasecmp(f->name, a->name, a->name_len) == 0) {
            return "Function already exists in the library";
        }
    }
    struct fn_function *f = mem_calloc(1, sizeof(*f) + a->name_len + 1);
    struct fn_function **fns = mem_realloc(loading->fns, (loading->nfns + 1) *
                                                         sizeof(*fns));
    char *desc = a->desc != NULL ? mem_malloc(a->desc_len + 1) : NULL;
    if (fns != NULL) {
        loading->fns = fns;
    }
    if (f == NULL || fns == NULL || (a->desc != NULL && desc == NULL)) {
        mem_free(f);
        mem_free(desc);
        return "out of memory";
    }
    (void)L;
    memcpy(f->name, a->name, a->name_len);
    f->name_len = a->name_len;
    if (desc != NULL) {
        memcpy(desc, a->desc, a->desc_len);
        desc[a->desc_len] = '\0';
        f->desc = desc;
        f->desc_len = a->desc_len;
    }
    f->flags = a->flags;
    f->ref = a->ref;
    f->lib = loading;
    a->ref = LUA_NOREF;
    loading->fns[loading->nfns++] = f;
    owned += sizeof(*f) + f->name_len + 1 + f->desc_len + sizeof(*fns);
    return NULL;
}

static int
register_function(lua_State *L)
{
    if (loading == NULL) {
        return raise_error(L, "redis.register_function can only be called on "
                        "FUNCTION LOAD command");
    }
    int argc = lua_gettop(L);
    if (argc < 1 || argc > 2) {
        return raise_error(L, "wrong number of arguments to "
                        "redis.register_function");
    }
    struct fn_args a = { .ref = LUA_NOREF };
    const char *why = argc == 1 ? named_args(L, &a)
                                : positional_args(L, &a);
    if (why == NULL) {
        why = add_function(L, &a);
    }
    if (why != NULL) {
        if (a.ref != LUA_NOREF) {
            luaL_unref(L, LUA_REGISTRYINDEX, a.ref);
        }
        return raise_error(L, why);
    }
    return 0;
}

/* ---- the environments ------------------------------------------------ */

static int
build_env(lua_State *L)
{
    static const char *const kept[] = {
        "log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING",
        "REDIS_VERSION", "REDIS_VERSION_NUM",
    };
    lua_newtable(L);                            /* the load-time redis */
    lua_pushcfunction(L, register_function);
    lua_setfield(L, -2, "register_function");
    lua_getfield(L, LUA_GLOBALSINDEX, "redis");
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        lua_getfield(L, -1, kept[i]);
        lua_setfield(L, -3, kept[i]);
    }
    lua_pop(L, 1);
    sandbox_undefined_raises(L);
    lua_newtable(L);                            /* the load globals */
    lua_insert(L, -2);
    /* Valkey's name for it too, as the scripts' globals have it:
     * rate-limiter-flexible's Valkey store registers its functions with
     * server.register_function. */
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "server");
    lua_setfield(L, -2, "redis");
    sandbox_undefined_raises(L);
    sandbox_view(L);
    load_api_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    lua_newtable(L);                            /* S */
    lua_pushvalue(L, -1);
    sandbox_view(L);                            /* E */
    env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    switch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

static bool
env_ready(lua_State *L)
{
    if (env_ref != LUA_NOREF) {
        return true;
    }
    if (lua_cpcall(L, build_env, NULL) != 0) {
        lua_pop(L, 1);
        function_state_closed();
        return false;
    }
    return true;
}

void
function_state_closed(void)
{
    env_ref = switch_ref = load_api_ref = LUA_NOREF;
}

/* S reads the load globals (loading) or the scripts' globals. The field
 * exists already, so setting it allocates nothing. */
static void
switch_to(lua_State *L, bool load)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, switch_ref);
    lua_getmetatable(L, -1);
    if (load) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, load_api_ref);
    } else {
        lua_pushvalue(L, LUA_GLOBALSINDEX);
    }
    lua_setfield(L, -2, "__index");
    lua_pop(L, 2);
}

/* ---- loading ------------------------------------------------------------ */

static void
load_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    if ((clock_mono_now() - load_started) / NS_PER_MS > LOAD_TIMEOUT_MS) {
        lua_sethook(L, load_hook, LUA_MASKLINE, 0);
        raise_error(L, "FUNCTION LOAD timeout");
    }
}

/* The error on top of L (popped) into err, as luaExtractErrorInformation()
 * reads one: a string gets the code ERR, a table gives its err. */
static void
load_error(lua_State *L, char *err, size_t errlen)
{
    const char *msg = "";
    char buf[16] = "";
    if (lua_isstring(L, -1)) {
        msg = lua_tostring(L, -1);
        memcpy(buf, "ERR ", 5);
    } else if (lua_istable(L, -1)) {
        lua_pushliteral(L, "err");
        lua_rawget(L, -2);
        msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
        lua_pop(L, 1);
    }
    snprintf(err, errlen, "ERR Error registering functions: %s%.400s", buf,
             msg);
    lua_pop(L, 1);
}

/* Compile the library's body and run it with register_function aimed at
 * lib. false with err. */
static bool
run_library(lua_State *L, struct fn_library *lib, size_t body, bool timeout,
            char *err, size_t errlen)
{
    if (!env_ready(L)) {
        snprintf(err, errlen, ERR_NOMEM);
        return false;
    }
    int rc = sandbox_load(L, lib->code + body, lib->code_len - body,
                          "@user_function");
    if (rc != 0) {
        const char *why = lua_tostring(L, -1);
        snprintf(err, errlen, "ERR Error compiling function: %.400s",
                 why != NULL ? why : "?");
        lua_pop(L, 1);
        return false;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, env_ref);
    lua_setfenv(L, -2);
    switch_to(L, true);
    loading = lib;
    if (timeout) {
        load_started = clock_mono_now();
        lua_sethook(L, load_hook, LUA_MASKCOUNT, LOAD_HOOK_INSTRUCTIONS);
    }
    rc = lua_pcall(L, 0, 0, 0);
    lua_sethook(L, NULL, 0, 0);
    loading = NULL;
    switch_to(L, false);
    if (rc != 0) {
        load_error(L, err, errlen);
        return false;
    }
    return true;
}

/* After the code ran: Redis's refusals of what it registered. */
static bool
check_registered(const struct fn_library *lib, char *err, size_t errlen)
{
    if (lib->nfns == 0) {
        snprintf(err, errlen, "ERR No functions registered");
        return false;
    }
    for (size_t i = 0; i < lib->nfns; i++) {
        const struct fn_function *f = lib->fns[i];
        if (function_find(f->name, f->name_len) != NULL) {
            snprintf(err, errlen, "ERR Function %s already exists", f->name);
            return false;
        }
    }
    return true;
}

/* lib takes old's place (or a new one) in the table of libraries. */
static bool
link_library(lua_State *L, struct fn_library *lib, struct fn_library *old)
{
    if (!link_functions(lib)) {
        return false;
    }
    if (old != NULL) {
        struct dict_entry *e = dict_find(&libraries, old->name,
                                         old->name_len);
        e->owner.p = lib;
        library_free(L, old);
        return true;
    }
    struct dict_entry *e = dict_add(&libraries, lib->name,
                                    (uint32_t)lib->name_len, NULL, 0);
    if (e == NULL) {
        unlink_functions(lib, lib->nfns);
        return false;
    }
    e->owner.p = lib;
    return true;
}

static struct fn_library *
load_library(lua_State *L, const char *code, size_t len, unsigned how,
             const struct meta *m, char *err, size_t errlen)
{
    struct fn_library *old = library_find(m->name, m->name_len);
    if (old != NULL && !(how & FN_REPLACE)) {
        snprintf(err, errlen, "ERR Library '%.*s' already exists",
                 (int)m->name_len, m->name);
        return NULL;
    }
    struct fn_library *lib = library_new(m, code, len);
    if (lib == NULL) {
        snprintf(err, errlen, ERR_NOMEM);
        return NULL;
    }
    if (old != NULL) {
        unlink_functions(old, old->nfns);
    }
    bool ok = run_library(L, lib, m->body, !(how & FN_NO_TIMEOUT), err,
                          errlen) &&
              check_registered(lib, err, errlen);
    if (ok && !link_library(L, lib, old)) {
        snprintf(err, errlen, ERR_NOMEM);
        ok = false;
    }
    if (!ok) {
        library_free(L, lib);
        if (old != NULL && !link_functions(old)) {
            /* Its functions' table entries could not be made again: the
             * library goes rather than stay half reachable. */
            dict_remove(&libraries, dict_find(&libraries, old->name,
                                              old->name_len));
            library_free(L, old);
        }
        return NULL;
    }
    return lib;
}

bool
function_load(lua_State *L, const char *code, size_t len, unsigned how,
              const char **name, size_t *name_len, char *err, size_t errlen)
{
    struct meta m;
    struct fn_library *lib = NULL;
    if (read_meta(code, len, &m, err, errlen) &&
        check_meta(&m, err, errlen)) {
        lib = load_library(L, code, len, how, &m, err, errlen);
    }
    mem_free(m.words);
    if (lib == NULL) {
        return false;
    }
    *name = lib->name;
    *name_len = lib->name_len;
    return true;
}

/* ---- deleting ----------------------------------------------------------- */

bool
function_delete(lua_State *L, const char *name, size_t len)
{
    struct dict_entry *e = dict_find(&libraries, name, len);
    if (e == NULL) {
        return false;
    }
    struct fn_library *lib = e->owner.p;
    unlink_functions(lib, lib->nfns);
    dict_remove(&libraries, e);
    library_free(L, lib);
    return true;
}

void
function_flush(lua_State *L)
{
    struct dict_iter it = { 0, NULL };
    const struct dict_entry *e;
    while ((e = dict_next(&libraries, &it)) != NULL) {
        library_free(L, e->owner.p);
    }
    dict_free(&libraries);
    dict_free(&functions);
}

/* ---- FUNCTION LIST ------------------------------------------------------ */

static bool
listed(const struct fn_library *lib, const char *pattern, size_t plen)
{
    return pattern == NULL ||
           glob_match(pattern, plen, lib->name, lib->name_len, true);
}

static void
reply_flags(struct conn *c, unsigned flags)
{
    size_t n = 0;
    for (size_t i = 0; i < SCRIPT_FLAG_WORDS; i++) {
        n += (flags & script_flag_words[i].flag) != 0;
    }
    reply_set(&c->out, n, c->proto);
    for (size_t i = 0; i < SCRIPT_FLAG_WORDS; i++) {
        if (flags & script_flag_words[i].flag) {
            reply_status(&c->out, script_flag_words[i].word);
        }
    }
}

static void
reply_library(struct conn *c, const struct fn_library *lib, bool withcode)
{
    reply_map(&c->out, withcode ? 4 : 3, c->proto);
    reply_bulkz(&c->out, "library_name");
    reply_bulk(&c->out, lib->name, lib->name_len);
    reply_bulkz(&c->out, "engine");
    reply_bulkz(&c->out, "LUA");
    reply_bulkz(&c->out, "functions");
    reply_array(&c->out, lib->nfns);
    for (size_t i = 0; i < lib->nfns; i++) {
        const struct fn_function *f = lib->fns[i];
        reply_map(&c->out, 3, c->proto);
        reply_bulkz(&c->out, "name");
        reply_bulk(&c->out, f->name, f->name_len);
        reply_bulkz(&c->out, "description");
        if (f->desc != NULL) {
            reply_bulk(&c->out, f->desc, f->desc_len);
        } else {
            reply_null(&c->out, c->proto);
        }
        reply_bulkz(&c->out, "flags");
        reply_flags(c, f->flags);
    }
    if (withcode) {
        reply_bulkz(&c->out, "library_code");
        reply_bulk(&c->out, lib->code, lib->code_len);
    }
}

void
function_list(struct conn *c, bool withcode, const char *pattern, size_t plen)
{
    struct dict_iter it = { 0, NULL };
    const struct dict_entry *e;
    size_t n = 0;
    while ((e = dict_next(&libraries, &it)) != NULL) {
        n += listed(e->owner.p, pattern, plen);
    }
    reply_array(&c->out, n);
    it = (struct dict_iter){ 0, NULL };
    while ((e = dict_next(&libraries, &it)) != NULL) {
        if (listed(e->owner.p, pattern, plen)) {
            reply_library(c, e->owner.p, withcode);
        }
    }
}

/* ---- the set's bytes ------------------------------------------------- */

bool
function_each_code(bool (*fn)(const char *code, size_t len, void *arg),
                   void *arg)
{
    struct dict_iter it = { 0, NULL };
    const struct dict_entry *e;
    while ((e = dict_next(&libraries, &it)) != NULL) {
        const struct fn_library *lib = e->owner.p;
        if (!fn(lib->code, lib->code_len, arg)) {
            return false;
        }
    }
    return true;
}

static bool
encode_one(const char *code, size_t len, void *arg)
{
    uint32_t n = (uint32_t)len;
    return len <= UINT32_MAX && membuf_put(arg, &n, 4) &&
           membuf_put(arg, code, len);
}

bool
function_encode_set(struct membuf *b)
{
    return function_each_code(encode_one, b);
}

int
function_replace_set(lua_State *L, const unsigned char *p, size_t len,
                     char *err, size_t errlen)
{
    function_flush(L);
    struct membuf_reader r = { p, len };
    while (r.left > 0) {
        uint32_t n;
        const unsigned char *code;
        if (!membuf_read(&r, &n, 4) || !membuf_skip(&r, n, &code)) {
            snprintf(err, errlen, "a malformed set of functions");
            return -1;
        }
        const char *name;
        size_t name_len;
        char why[512];
        if (!function_load(L, (const char *)code, n,
                           FN_REPLACE | FN_NO_TIMEOUT, &name, &name_len, why,
                           sizeof(why))) {
            snprintf(err, errlen, "a library does not load: %s", why);
            return -1;
        }
    }
    return 0;
}

/* APPEND: a library of the payload's name already loaded is an error,
 * before any library is loaded (Redis checks every name first). */
static bool
restore_collides(const unsigned char *p, size_t len, char *err,
                 size_t errlen)
{
    struct membuf_reader r = { p, len };
    uint32_t n;
    const unsigned char *code;
    bool clash = false;
    while (!clash && membuf_read(&r, &n, 4) && membuf_skip(&r, n, &code)) {
        struct meta m;
        char why[64];
        if (read_meta((const char *)code, n, &m, why, sizeof(why)) &&
            library_find(m.name, m.name_len) != NULL) {
            snprintf(err, errlen, "ERR Library %.*s already exists",
                     (int)m.name_len, m.name);
            clash = true;
        }
        mem_free(m.words);
    }
    return clash;
}

/* One library of a RESTORE: a library of this name that was there before
 * is replaced (REPLACE; APPEND checked for them first); one the payload
 * held twice is Redis's error for a second LOAD. */
static bool
restore_one(lua_State *L, const char *code, size_t len,
            struct membuf *mine, char *err, size_t errlen)
{
    struct meta m;
    bool ok = read_meta(code, len, &m, err, errlen);
    struct fn_library *old = ok ? library_find(m.name, m.name_len) : NULL;
    bool before = old != NULL;
    for (size_t i = 0; old != NULL && i < mine->len / sizeof(old); i++) {
        before &= memcmp(mine->p + i * sizeof(old), &old, sizeof(old)) != 0;
    }
    struct fn_library *lib = NULL;
    if (ok && check_meta(&m, err, errlen)) {
        lib = load_library(L, code, len, before ? FN_REPLACE | FN_NO_TIMEOUT
                                                : FN_NO_TIMEOUT,
                           &m, err, errlen);
    }
    mem_free(m.words);
    if (lib != NULL && !membuf_put(mine, &lib, sizeof(lib))) {
        snprintf(err, errlen, ERR_NOMEM);
        return false;
    }
    return lib != NULL;
}

int
function_restore(lua_State *L, const unsigned char *p, size_t len,
                 enum fn_restore policy, char *err, size_t errlen)
{
    struct membuf old = { 0 }, mine = { 0 };
    if (!function_encode_set(&old)) {
        snprintf(err, errlen, ERR_NOMEM);
        mem_free(old.p);
        return -1;
    }
    if (policy == FN_RESTORE_APPEND &&
        restore_collides(p, len, err, errlen)) {
        mem_free(old.p);
        return -1;
    }
    if (policy == FN_RESTORE_FLUSH) {
        function_flush(L);
    }
    struct membuf_reader r = { p, len };
    int rc = 0;
    while (rc == 0 && r.left > 0) {
        uint32_t n;
        const unsigned char *code;
        if (!membuf_read(&r, &n, 4) || !membuf_skip(&r, n, &code)) {
            snprintf(err, errlen, ERR_FUNCTIONS_PAYLOAD);
            rc = -1;
        } else if (!restore_one(L, (const char *)code, n, &mine, err,
                                errlen)) {
            rc = -1;
        }
    }
    if (rc != 0) {
        char why[256];
        (void)function_replace_set(L, old.p, old.len, why, sizeof(why));
    }
    mem_free(old.p);
    mem_free(mine.p);
    return rc;
}

size_t
function_library_count(void)
{
    return libraries.used;
}

size_t
function_count(void)
{
    return functions.used;
}

size_t
function_memory(void)
{
    return owned + libraries.owned + functions.owned;
}
