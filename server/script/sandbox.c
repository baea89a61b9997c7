/*
 * sandbox.c - the Lua environment of Redis 7.0.15's scripts on Debian's
 * stock Lua 5.1 (sandbox.h).
 *
 * Redis makes the globals and every table reachable from them read-only
 * with a flag it added to its own copy of Lua. Stock Lua has no such
 * flag, and __newindex fires only for absent keys, so a table cannot
 * guard its existing fields. Each such table is therefore hidden behind a
 * view: an empty table whose metatable sends reads to the real table
 * (__index is the table itself, so a read costs one extra miss on an empty
 * table and no function call) and refuses every write (__newindex). The
 * real tables hold views, never each other, so what a script can reach is
 * views only; the thread's globals become the view of the globals, so
 * every chunk loaded afterwards runs in it.
 *
 * What a view cannot do by itself, a few base functions do for it: rawset,
 * setmetatable and table.insert refuse a view (they would write into it
 * rawly), and rawget, next, pairs and table.foreach look through it to the
 * real table, so a script iterates the globals as in Redis. The views are
 * known by a table view -> real table, an upvalue of those functions.
 *
 * Redis's Lua also has no bytecode loader; stock Lua would run forged
 * bytecode, so everything that loads text here puts a space before it:
 * the chunk is then always parsed as source, with the same lines and the
 * same errors as in Redis.
 */
#include "server/script/sandbox.h"

#include "server/script/lualibs.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua-bitop.h>
#include <lua-cjson.h>
#include <lualib.h>

/* The registry keys: their addresses are the keys. */
static const char views_key;        /* view -> real table */
static const char globals_key;      /* the real globals, once sealed */

#define READONLY_ERROR "Attempt to modify a readonly table"

/* ---- math.random as 7.0 ------------------------------------------------
 * Redis 7.0 replaces math.random with lrand48's generator (the same
 * numbers on every platform) and never reseeds it per script: one sequence
 * per process, across scripts and SCRIPT FLUSH, until a script calls
 * math.randomseed. So the state is the process's, not the lua_State's. */

#define RAND48_MASK ((UINT64_C(1) << 48) - 1)
/* lrand48's state before any seed: srand48(0x1234ABCD). */
static uint64_t rand48_state = UINT64_C(0x1234ABCD330E);

static int32_t
rand48_next(void)
{
    rand48_state = (UINT64_C(0x5DEECE66D) * rand48_state + 0xB) & RAND48_MASK;
    return (int32_t)(rand48_state >> 17);
}

static int
math_random(lua_State *L)
{
    double r = (double)(rand48_next() % INT32_MAX) / (double)INT32_MAX;
    switch (lua_gettop(L)) {
    case 0:
        lua_pushnumber(L, r);
        return 1;
    case 1: {
        int upper = luaL_checkint(L, 1);
        luaL_argcheck(L, 1 <= upper, 1, "interval is empty");
        lua_pushnumber(L, floor(r * upper) + 1);
        return 1;
    }
    case 2: {
        int lower = luaL_checkint(L, 1), upper = luaL_checkint(L, 2);
        luaL_argcheck(L, lower <= upper, 2, "interval is empty");
        lua_pushnumber(L, floor(r * (upper - lower + 1)) + lower);
        return 1;
    }
    default:
        return luaL_error(L, "wrong number of arguments");
    }
}

static int
math_randomseed(lua_State *L)
{
    uint32_t seed = (uint32_t)luaL_checkint(L, 1);
    rand48_state = ((uint64_t)seed << 16) | 0x330E;
    return 0;
}

/* ---- loading source only ---------------------------------------------- */

struct source {
    const char *buf;
    size_t len;
    int step;           /* 0: the space, 1: the text, then the end */
};

static const char *
read_source(lua_State *L, void *ud, size_t *size)
{
    struct source *src = ud;
    (void)L;
    switch (src->step++) {
    case 0:
        *size = 1;
        return " ";
    case 1:
        *size = src->len;
        return src->buf;
    default:
        *size = 0;
        return NULL;
    }
}

/* Stock Lua 5.1's parser does not keep the chunk name's string alive
 * while it parses (CVE-2025-49844, fixed in Redis's copy): a collection
 * mid-parse could free it. Strings are interned, so a copy of the name
 * held on the stack is the very string the parser uses. Every load here
 * holds its name so. */
struct loading {
    const char *buf;
    size_t len;
    const char *chunkname;
    int status;
};

static const char loaded_key;       /* a chunk, out of load_protected */

static int
load_protected(lua_State *L)
{
    struct loading *ld = lua_touserdata(L, 1);
    lua_pushstring(L, ld->chunkname);
    struct source src = { ld->buf, ld->len, 0 };
    ld->status = lua_load(L, read_source, &src, ld->chunkname);
    lua_pushlightuserdata(L, (void *)&loaded_key);
    lua_insert(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    return 0;
}

int
sandbox_load(lua_State *L, const char *buf, size_t len, const char *chunkname)
{
    struct loading ld = { buf, len, chunkname, 0 };
    int status = lua_cpcall(L, load_protected, &ld);
    if (status != 0) {
        return status;              /* its message is pushed */
    }
    lua_pushlightuserdata(L, (void *)&loaded_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, (void *)&loaded_key);
    lua_pushnil(L);                 /* an existing key: nothing allocated */
    lua_rawset(L, LUA_REGISTRYINDEX);
    return ld.status;
}

/* Inside a script: the name (on the stack already) held, then loaded. */
static int
load_text(lua_State *L, const char *buf, size_t len, const char *chunkname)
{
    struct source src = { buf, len, 0 };
    return lua_load(L, read_source, &src, chunkname);
}

/* What loadstring and load return: the function, or nil and the error. */
static int
loaded_or_nil(lua_State *L, int status)
{
    if (status == 0) {
        return 1;
    }
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
}

static int
base_loadstring(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *chunkname = luaL_optstring(L, 2, text);   /* on the stack */
    return loaded_or_nil(L, load_text(L, text, len, chunkname));
}

/* load(f): the space, then the pieces f returns, each kept alive in slot
 * 3 while the parser reads it. */
static const char *
read_pieces(lua_State *L, void *ud, size_t *size)
{
    bool *spaced = ud;
    if (!*spaced) {
        *spaced = true;
        *size = 1;
        return " ";
    }
    luaL_checkstack(L, 2, "too many nested functions");
    lua_pushvalue(L, 1);
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
        *size = 0;
        return NULL;
    }
    if (!lua_isstring(L, -1)) {
        luaL_error(L, "reader function must return a string");
    }
    lua_replace(L, 3);
    return lua_tolstring(L, 3, size);
}

static int
base_load(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    const char *chunkname = luaL_optstring(L, 2, "=(load)");
    lua_settop(L, 3);
    if (lua_isnil(L, 2)) {
        lua_pushstring(L, chunkname);       /* held: see load_protected */
        lua_replace(L, 2);
    }
    bool spaced = false;
    return loaded_or_nil(L, lua_load(L, read_pieces, &spaced, chunkname));
}

/* ---- unpack ------------------------------------------------------------
 * Stock Lua 5.1's unpack computes the count in int and overflows for
 * ranges near the int limits (CVE-2025-46817; unpack({}, 0, 2^31-1)
 * crashes Debian's Lua). Redis's copy answers "too many results". */
static int
base_unpack(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int first = luaL_optint(L, 2, 1);
    int last = lua_isnoneornil(L, 3) ? (int)lua_objlen(L, 1)
                                     : luaL_checkint(L, 3);
    if (first > last) {
        return 0;
    }
    int64_t count = (int64_t)last - first + 1;
    if (count >= INT_MAX || !lua_checkstack(L, (int)count)) {
        return luaL_error(L, "too many results to unpack");
    }
    for (int64_t i = first; i <= last; i++) {
        lua_rawgeti(L, 1, (int)i);
    }
    return (int)count;
}

/* ---- the functions that see views ------------------------------------- */

#define VIEWS lua_upvalueindex(1)

static bool
is_view(lua_State *L, int idx)
{
    lua_pushvalue(L, idx);
    lua_rawget(L, VIEWS);
    bool view = !lua_isnil(L, -1);
    lua_pop(L, 1);
    return view;
}

/* Put the real table in place of the view at idx (if it is one). */
static void
see_through(lua_State *L, int idx)
{
    lua_pushvalue(L, idx);
    lua_rawget(L, VIEWS);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
    } else {
        lua_replace(L, idx);
    }
}

/* Redis's Lua raises this from inside the C function that writes, so the
 * message has no position: pushed whole, not through luaL_error. */
static int
refuse_raw_change(lua_State *L)
{
    lua_pushliteral(L, READONLY_ERROR);
    return lua_error(L);
}

static int
base_rawget(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    lua_settop(L, 2);
    see_through(L, 1);
    lua_rawget(L, 1);
    return 1;
}

static int
base_rawset(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    if (is_view(L, 1)) {
        return refuse_raw_change(L);
    }
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

static int
base_next(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    see_through(L, 1);
    if (lua_next(L, 1)) {
        return 2;
    }
    lua_pushnil(L);
    return 1;
}

/* pairs returns this file's next (its upvalue 2), which sees through. */
static int
base_pairs(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int
base_setmetatable(lua_State *L)
{
    int type = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argcheck(L, type == LUA_TNIL || type == LUA_TTABLE, 2,
                  "nil or table expected");
    if (is_view(L, 1)) {
        return refuse_raw_change(L);
    }
    if (luaL_getmetafield(L, 1, "__metatable")) {
        return luaL_error(L, "cannot change a protected metatable");
    }
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* table.insert: its argument errors first, as in Lua, then a view is
 * refused; anything else goes to Lua's own insert (upvalue 2). */
static int
table_insert(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int argc = lua_gettop(L);
    if (argc != 2 && argc != 3) {
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
    if (argc == 3) {
        (void)luaL_checkint(L, 2);
    }
    if (is_view(L, 1)) {
        return refuse_raw_change(L);
    }
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, argc, 0);
    return 0;
}

/* table.foreach walks the real table behind a view (upvalue 2: Lua's). */
static int
table_foreach(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    see_through(L, 1);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, 2, LUA_MULTRET);
    return lua_gettop(L);
}

/* ---- opening ---------------------------------------------------------- */

/* Open a library as Redis does, then make it the global `name` (cjson
 * and bit from Debian return their table; not all set the global;
 * struct and cmsgpack are lualibs.h's). */
static void
open_library(lua_State *L, const char *name, lua_CFunction open)
{
    lua_pushcfunction(L, open);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (name[0] != '\0' && lua_istable(L, -1)) {
        lua_setglobal(L, name);
    } else {
        lua_pop(L, 1);
    }
}

/* Set t[name] (t on top of the stack) to f with upvalues: views, then
 * t[name]'s old value when keep_old. */
static void
replace_function(lua_State *L, const char *name, lua_CFunction f,
                 int views, bool keep_old)
{
    lua_pushvalue(L, views);
    if (keep_old) {
        lua_getfield(L, -2, name);
    }
    lua_pushcclosure(L, f, keep_old ? 2 : 1);
    lua_setfield(L, -2, name);
}

static void
hide_globals(lua_State *L)
{
    static const char *const hidden[] = {
        "print", "dofile", "loadfile", "setfenv", "getfenv", "newproxy",
    };
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, hidden[i]);
    }
}

static void
replace_base_functions(lua_State *L, int views)
{
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    replace_function(L, "rawget", base_rawget, views, false);
    replace_function(L, "rawset", base_rawset, views, false);
    replace_function(L, "setmetatable", base_setmetatable, views, false);
    replace_function(L, "next", base_next, views, false);
    lua_pushvalue(L, views);
    lua_getfield(L, -2, "next");
    lua_pushcclosure(L, base_pairs, 2);
    lua_setfield(L, -2, "pairs");
    lua_pushcfunction(L, base_loadstring);
    lua_setfield(L, -2, "loadstring");
    lua_pushcfunction(L, base_load);
    lua_setfield(L, -2, "load");
    lua_pushcfunction(L, base_unpack);
    lua_setfield(L, -2, "unpack");
    lua_pop(L, 1);

    lua_getglobal(L, LUA_TABLIBNAME);
    replace_function(L, "insert", table_insert, views, true);
    replace_function(L, "foreach", table_foreach, views, true);
    lua_pop(L, 1);

    lua_getglobal(L, LUA_MATHLIBNAME);
    lua_pushcfunction(L, math_random);
    lua_setfield(L, -2, "random");
    lua_pushcfunction(L, math_randomseed);
    lua_setfield(L, -2, "randomseed");
    lua_pop(L, 1);
}

static void see_through_top(lua_State *L);

static int
open_protected(lua_State *L)
{
    open_library(L, "", luaopen_base);
    open_library(L, LUA_TABLIBNAME, luaopen_table);
    open_library(L, LUA_STRLIBNAME, luaopen_string);
    open_library(L, LUA_MATHLIBNAME, luaopen_math);
    open_library(L, "cjson", luaopen_cjson);
    open_library(L, "bit", luaopen_bit);
    open_library(L, "struct", lualib_struct_open);
    lualib_cmsgpack_views(see_through_top);
    open_library(L, "cmsgpack", lualib_cmsgpack_open);
    hide_globals(L);

    lua_newtable(L);
    lua_pushlightuserdata(L, (void *)&views_key);
    lua_pushvalue(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    replace_base_functions(L, lua_gettop(L));
    lua_pop(L, 1);
    return 0;
}

int
sandbox_open(lua_State *L)
{
    if (lua_cpcall(L, open_protected, NULL) != 0) {
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

/* For cmsgpack.pack, which walks tables as Redis's Lua shows them: the
 * real table in place of the view on top of the stack. Two free slots
 * or nothing is done (the stack is then at Lua's bound anyway). */
static void
see_through_top(lua_State *L)
{
    if (!lua_checkstack(L, 2)) {
        return;
    }
    lua_pushlightuserdata(L, (void *)&views_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    lua_pushvalue(L, -2);
    lua_rawget(L, -2);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 2);
    } else {
        lua_replace(L, -3);
        lua_pop(L, 1);
    }
}

/* ---- sealing ---------------------------------------------------------- */

/* The __newindex of every view: raised from the script's own assignment,
 * so the message carries its position ("user_script:1: ..."). */
static int
refuse_change(lua_State *L)
{
    return luaL_error(L, READONLY_ERROR);
}

/* The real globals' __index: an undefined global is an error in Redis.
 * The argument checks and their texts are Redis's (a script can reach
 * this function through getmetatable(_G).__index). */
static int
missing_global(lua_State *L)
{
    if (lua_gettop(L) != 2) {
        return luaL_error(L, "Wrong number of arguments to luaProtectedTableError");
    }
    if (!lua_isstring(L, -1)) {
        return luaL_error(L, "Second argument to luaProtectedTableError must be a string or number");
    }
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                      lua_tostring(L, -1));
}

struct sealing {
    int views;          /* view -> real (kept) */
    int made;           /* real -> view (for this seal) */
};

static void push_view(lua_State *L, int real, const struct sealing *s);

/* Every table value of real replaced by its view. Setting a field that
 * exists is allowed while lua_next walks the table. */
static void
fields_to_views(lua_State *L, int real, const struct sealing *s)
{
    lua_pushnil(L);
    while (lua_next(L, real)) {
        if (lua_istable(L, -1)) {
            push_view(L, lua_gettop(L), s);
            lua_pushvalue(L, -3);
            lua_insert(L, -2);
            lua_rawset(L, real);
        }
        lua_pop(L, 1);
    }
}

/* The view's metatable: reads go to real, writes fail, and getmetatable
 * answers the view of real's metatable, or false if it has none. */
static void
push_view_metatable(lua_State *L, int real, const struct sealing *s)
{
    lua_createtable(L, 0, 3);
    lua_pushvalue(L, real);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, refuse_change);
    lua_setfield(L, -2, "__newindex");
    if (lua_getmetatable(L, real)) {
        push_view(L, lua_gettop(L), s);
        lua_remove(L, -2);
    } else {
        lua_pushboolean(L, 0);
    }
    lua_setfield(L, -2, "__metatable");
}

/* Push the view of the table at the absolute index real, made with the
 * views of all it reaches (fields and metatable) on first sight. */
static void
push_view(lua_State *L, int real, const struct sealing *s)
{
    lua_pushvalue(L, real);
    lua_rawget(L, s->made);
    if (!lua_isnil(L, -1)) {
        return;
    }
    lua_pop(L, 1);
    luaL_checkstack(L, 8, "tables nested too deep to seal");
    lua_newtable(L);
    int view = lua_gettop(L);
    lua_pushvalue(L, real);
    lua_pushvalue(L, view);
    lua_rawset(L, s->made);
    lua_pushvalue(L, view);
    lua_pushvalue(L, real);
    lua_rawset(L, s->views);

    fields_to_views(L, real, s);
    push_view_metatable(L, real, s);
    lua_setmetatable(L, view);
}

/* getmetatable('') must not hand out the strings' real metatable: it gets
 * a __metatable field, the metatable's view. */
static void
seal_string_metatable(lua_State *L, const struct sealing *s)
{
    lua_pushliteral(L, "");
    if (!lua_getmetatable(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    int metatable = lua_gettop(L);
    push_view(L, metatable, s);
    lua_setfield(L, metatable, "__metatable");
    lua_pop(L, 2);
}

/* The views known so far and a table of those this seal makes, pushed. */
static void
sealing_begin(lua_State *L, struct sealing *s)
{
    lua_pushlightuserdata(L, (void *)&views_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    luaL_checktype(L, -1, LUA_TTABLE);
    s->views = lua_gettop(L);
    lua_newtable(L);
    s->made = lua_gettop(L);
}

static int
seal_protected(lua_State *L)
{
    struct sealing s;
    sealing_begin(L, &s);

    lua_pushvalue(L, LUA_GLOBALSINDEX);
    int globals = lua_gettop(L);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, missing_global);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, globals);

    lua_pushlightuserdata(L, (void *)&globals_key);
    lua_pushvalue(L, globals);
    lua_rawset(L, LUA_REGISTRYINDEX);

    push_view(L, globals, &s);
    seal_string_metatable(L, &s);
    lua_replace(L, LUA_GLOBALSINDEX);
    return 0;
}

int
sandbox_seal(lua_State *L)
{
    if (lua_cpcall(L, seal_protected, NULL) != 0) {
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

void
sandbox_push_globals(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&globals_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushvalue(L, LUA_GLOBALSINDEX);
    }
}

/* ---- FUNCTION LOAD's tables (function.c) ------------------------------- */

void
sandbox_undefined_raises(lua_State *L)
{
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, missing_global);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
}

void
sandbox_view(lua_State *L)
{
    struct sealing s;
    int real = lua_gettop(L);
    sealing_begin(L, &s);
    push_view(L, real, &s);
    lua_replace(L, real);
    lua_settop(L, real);
}
