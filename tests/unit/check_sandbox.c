/*
 * check_sandbox.c - the Lua sandbox (server/script/sandbox.c) against the
 * texts and behaviours recorded from Debian's redis-server 7.0.15
 * (/work/notes/sandbox-cases.md holds the replies byte for byte). A
 * script is loaded as the engine loads it (chunk "@user_script") and run
 * with lua_pcall; what is compared is the Lua error message, before the
 * engine wraps it into its reply ("ERR " ... " script: <sha1>, on ...").
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "server/script/sandbox.h"
#include "tests/unit/suites.h"

static lua_State *L;

/* The stand-in for the engine's redis.call: returns its first argument. */
static int
fake_call(lua_State *l)
{
    lua_settop(l, 1);
    return 1;
}

/* A state as the engine will make it: libraries, redis (and its server
 * alias), sealed, then KEYS for the call. */
static lua_State *
new_sealed_state(void)
{
    lua_State *l = luaL_newstate();
    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(sandbox_open(l), 0);
    lua_newtable(l);
    lua_pushcfunction(l, fake_call);
    lua_setfield(l, -2, "call");
    lua_pushvalue(l, -1);
    lua_setglobal(l, "server");
    lua_setglobal(l, "redis");
    ck_assert_int_eq(sandbox_seal(l), 0);

    sandbox_push_globals(l);
    lua_createtable(l, 1, 0);
    lua_pushliteral(l, "k1");
    lua_rawseti(l, -2, 1);
    lua_setfield(l, -2, "KEYS");
    lua_pop(l, 1);
    ck_assert_int_eq(lua_gettop(l), 0);
    return l;
}

static void
setup(void)
{
    L = new_sealed_state();
}

static void
teardown(void)
{
    lua_close(L);
}

static char text[512];

/* Run a script: its first result (tostring'd: nil, true, ...) or its
 * error message, in `text`; true if it ran without error. */
static bool
run(const char *script)
{
    int status = luaL_loadbuffer(L, script, strlen(script), "@user_script");
    if (status == 0) {
        status = lua_pcall(L, 0, 1, 0);
    }
    const char *s;
    if (lua_isnil(L, -1)) {
        s = "nil";
    } else if (lua_isboolean(L, -1)) {
        s = lua_toboolean(L, -1) ? "true" : "false";
    } else {
        s = lua_tostring(L, -1);
    }
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_lt(strlen(s), sizeof text);
    strcpy(text, s);
    lua_settop(L, 0);
    return status == 0;
}

static void
expect_error(const char *script, const char *message)
{
    ck_assert_msg(!run(script), "%s ran: %s", script, text);
    ck_assert_str_eq(text, message);
}

static void
expect_result(const char *script, const char *result)
{
    ck_assert_msg(run(script), "%s failed: %s", script, text);
    ck_assert_str_eq(text, result);
}

#define READONLY "user_script:1: Attempt to modify a readonly table"
#define READONLY_RAW "Attempt to modify a readonly table"
#define MISSING(name) \
    "user_script:1: Script attempted to access nonexistent global variable '" name "'"

START_TEST(test_globals_cannot_be_created_or_changed)
{
    expect_error("x = 1", READONLY);
    expect_result("local x = 1 return x", "1");
    expect_error("redis = nil", READONLY);
    expect_error("_G.x = 1", READONLY);
    expect_error("_G._G.x = 1", READONLY);
    expect_error("function f() end", READONLY);
    expect_error("rawset(_G, 'x', 1)", READONLY_RAW);
    expect_error("setmetatable(_G, nil)", READONLY_RAW);
    expect_result("return select(2, pcall(function() x = 1 end))", READONLY);
    expect_result("return select(2, xpcall(function() x = 1 end, "
                  "function(e) return 'H:' .. e end))", "H:" READONLY);
    expect_result("return select(2, coroutine.resume(coroutine.create("
                  "function() x = 1 end)))", READONLY);
}
END_TEST

START_TEST(test_undefined_globals_are_errors)
{
    expect_error("return foo", MISSING("foo"));
    expect_error("a.b = 1", MISSING("a"));
    expect_error("return _G[1]", MISSING("1"));
    expect_error("return _G[true]", "user_script:1: Second argument to "
                 "luaProtectedTableError must be a string or number");
    expect_error("return getmetatable(_G).__index(1)",
                 "user_script:1: Wrong number of arguments to luaProtectedTableError");
    expect_result("return select(2, pcall(function() return foo end))",
                  MISSING("foo"));
    expect_result("return rawget(_G, 'foo')", "nil");
    expect_result("return type(rawget(_G, 'redis'))", "table");
}
END_TEST

START_TEST(test_library_tables_are_read_only)
{
    expect_error("redis.call = nil", READONLY);
    expect_error("server.x = 1", READONLY);
    expect_error("string.x = 1", READONLY);
    expect_error("string.len = nil", READONLY);
    expect_error("table.insert = nil", READONLY);
    expect_error("coroutine.x = 1", READONLY);
    expect_error("cjson.x = 1", READONLY);
    expect_error("getmetatable(_G).__index = nil", READONLY);
    expect_error("table.insert(string, 'x')", READONLY_RAW);
    expect_error("table.insert(string, 1, 'x')", READONLY_RAW);
    expect_result("return select(2, pcall(table.insert, string))",
                  "wrong number of arguments to 'insert'");
    expect_result("return table.remove(string)", "nil");
    expect_result("table.sort(string) return 1", "1");
    expect_result("return redis.call('ping')", "ping");
    expect_result("return server == redis", "true");
}
END_TEST

START_TEST(test_the_strings_metatable_is_read_only)
{
    expect_error("getmetatable('').__index = {}", READONLY);
    expect_error("getmetatable('').__index.upper = nil", READONLY);
    expect_error("setmetatable(getmetatable(''), nil)", READONLY_RAW);
    expect_result("return getmetatable('').__index == string", "true");
    expect_result("return rawget(getmetatable(''), '__index') == string", "true");
    expect_result("return ('abc'):upper()", "ABC");
    expect_result("return type(getmetatable(''))", "table");
}
END_TEST

START_TEST(test_scripts_see_the_globals_as_in_redis)
{
    expect_result("return type(_G)", "table");
    expect_result("return rawequal(_G, _G._G)", "true");
    expect_result("local t = {} for k in pairs(_G) do t[#t + 1] = k end "
                  "table.sort(t) return table.concat(t, ' ')",
                  "KEYS _G _VERSION assert bit cjson cmsgpack collectgarbage "
                  "coroutine error gcinfo getmetatable ipairs load loadstring "
                  "math next pairs pcall rawequal rawget rawset redis select "
                  "server setmetatable string struct table tonumber tostring "
                  "type unpack xpcall");
    expect_result("local n = 0 for k in pairs(string) do n = n + 1 end return n", "15");
    expect_result("local n = 0 table.foreach(string, function() n = n + 1 end) "
                  "return n", "15");
    expect_result("return type(next(_G))", "string");
    expect_result("return #string", "0");
    expect_result("return table.maxn(string)", "0");
    expect_result("return type(getmetatable(_G).__index)", "function");
    expect_result("local m = getmetatable(_G) return type(rawget(m, '__index'))",
                  "function");
    expect_result("return _VERSION", "Lua 5.1");
    expect_result("KEYS[1] = 'x' return KEYS[1]", "x");
}
END_TEST

START_TEST(test_hidden_globals_are_undefined)
{
    static const char *const hidden[] = {
        "print", "setfenv", "getfenv", "newproxy", "module", "debug", "os",
        "io", "loadfile", "dofile", "require", "package",
    };
    char script[64], message[160];
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++) {
        snprintf(script, sizeof script, "return type(%s)", hidden[i]);
        snprintf(message, sizeof message, MISSING("%s"), hidden[i]);
        expect_error(script, message);
    }
    expect_error("print('x')", MISSING("print"));
    expect_error("return _G == getfenv(1)", MISSING("getfenv"));
}
END_TEST

START_TEST(test_kept_functions_work)
{
    expect_result("return loadstring('return 1')()", "1");
    expect_result("local co = coroutine.wrap(function() coroutine.yield(5) end) "
                  "return co()", "5");
    expect_result("return cjson.encode({1, 2})", "[1,2]");
    expect_result("return cjson.decode('[1,2]')[2]", "2");
    expect_result("return bit.band(6, 3)", "2");
    expect_result("return bit.tobit(2^32 + 1)", "1");
    expect_result("return type(setmetatable({}, {}))", "table");
    expect_result("local t = {} rawset(t, 'a', 1) return t.a", "1");
    expect_result("local t = {} table.insert(t, 'a') return t[1]", "a");
    expect_result("return select(2, pcall(setmetatable, "
                  "setmetatable({}, {__metatable = 1}), {}))",
                  "cannot change a protected metatable");
    expect_result("return select(2, pcall(setmetatable, {}, 5))",
                  "bad argument #2 to '?' (nil or table expected)");
    expect_result("return select(2, pcall(rawset))",
                  "bad argument #1 to '?' (table expected, got no value)");
    expect_result("return type(gcinfo)", "function");
    expect_result("return type(string.gfind)", "function");
    expect_result("return type(math.mod)", "function");
    expect_result("return type(table.getn)", "function");
    expect_error("return unpack({}, 1, 2147483647)",
                 "user_script:1: too many results to unpack");
    expect_error("return unpack({}, -2147483648, 2147483647)",
                 "user_script:1: too many results to unpack");
    expect_error("return unpack({}, 0, 2147483647)",
                 "user_script:1: too many results to unpack");
    expect_error("return unpack({}, -2147483647, 2147483647)",
                 "user_script:1: too many results to unpack");
    expect_result("return unpack({}, 2147483647, 2147483647)", "nil");
    expect_result("return unpack({}, -2147483648, -2147483648)", "nil");
    expect_result("return select('#', unpack({1, 2, 3}, 3, 2))", "0");
    expect_result("return table.concat({unpack({1, 2, 3}, 2)}, ' ')", "2 3");
    expect_result("return select(2, pcall(unpack))",
                  "bad argument #1 to '?' (table expected, got no value)");
}
END_TEST

START_TEST(test_chunks_loaded_by_scripts_are_sealed_too)
{
    expect_error("loadstring('x = 1')()",
                 "[string \"x = 1\"]:1: Attempt to modify a readonly table");
    expect_result("return select(2, pcall(loadstring('return zz')))",
                  "[string \"return zz\"]:1: Script attempted to access "
                  "nonexistent global variable 'zz'");
    expect_result("local i = 0 return load(function() i = i + 1 "
                  "if i == 1 then return 'return 7' end end)()", "7");
}
END_TEST

START_TEST(test_bytecode_is_never_loaded)
{
    expect_result("return select(2, loadstring(string.dump(function() return 1 end)))",
                  "[string \"\033LuaQ\"]:1: unexpected symbol near 'char(27)'");
    expect_result("return select(2, loadstring('\\27abc'))",
                  "[string \"\033abc\"]:1: unexpected symbol near 'char(27)'");
    expect_result("local s = string.dump(function() return 1 end) local i = 0 "
                  "return select(2, load(function() i = i + 1 "
                  "if i == 1 then return s end end))",
                  "(load):1: unexpected symbol near 'char(27)'");
    expect_result("return load(function() return nil end) ~= nil", "true");

    /* The engine's own loading: a script that is bytecode. */
    ck_assert_int_ne(sandbox_load(L, "\033LuaQ\0", 6, "@user_script"), 0);
    ck_assert_str_eq(lua_tostring(L, -1),
                     "user_script:1: unexpected symbol near 'char(27)'");
    lua_settop(L, 0);
    ck_assert_int_eq(sandbox_load(L, "\nreturn x", 9, "@user_script"), 0);
    ck_assert_int_ne(lua_pcall(L, 0, 1, 0), 0);
    ck_assert_str_eq(lua_tostring(L, -1), "user_script:2: Script attempted to "
                     "access nonexistent global variable 'x'");
    lua_settop(L, 0);
}
END_TEST

START_TEST(test_struct_and_cmsgpack_are_read_only_libraries)
{
    expect_result("return type(struct)", "table");
    expect_result("return type(cmsgpack)", "table");
    expect_result("return cmsgpack._VERSION", "lua-cmsgpack 0.4.0");
    expect_result("return struct.size('>I')", "4");
    expect_error("cmsgpack.pack = 1", READONLY);
    expect_error("struct.x = 1", READONLY);
}
END_TEST

START_TEST(test_math_random_is_redis_7_0s)
{
    /* 0x1234ABCD: the generator's state before any seed, as in a fresh
     * redis-server (its first numbers are these too). */
    expect_result("math.randomseed(305441741) return table.concat({"
                  "math.random(1000), math.random(1000), math.random(1000), "
                  "tostring(math.random())}, ' ')", "397 841 354 0.44658343468168");
    expect_result("math.randomseed(42) return table.concat({"
                  "math.random(1000), math.random(1000), "
                  "tostring(math.random()), math.random(5, 10)}, ' ')",
                  "745 343 0.11108528222474 7");
    /* Not reseeded per script: the sequence goes on. */
    expect_result("math.randomseed(-7) return math.random(1000)", "76");
    expect_result("return tostring(math.random())", "0.81776873106964");
    expect_result("math.randomseed(42.9) return math.random(1000)", "745");
    expect_result("math.randomseed(1) return math.random(-5, -5)", "-5");
    expect_error("return math.random(0)",
                 "user_script:1: bad argument #1 to 'random' (interval is empty)");
    expect_error("return math.random(1, 2, 3)",
                 "user_script:1: wrong number of arguments");
    expect_error("math.randomseed('x')", "user_script:1: bad argument #1 to "
                 "'randomseed' (number expected, got string)");
}
END_TEST

/* Each state is sealed on its own: a second one is no less protected. */
START_TEST(test_two_states_are_sealed_independently)
{
    lua_State *other = new_sealed_state();
    lua_State *mine = L;
    L = other;
    expect_error("x = 1", READONLY);
    expect_result("return type(redis.call)", "function");
    L = mine;
    lua_close(other);
    expect_error("string.x = 1", READONLY);
}
END_TEST

Suite *
sandbox_suite(void)
{
    Suite *s = suite_create("sandbox");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_globals_cannot_be_created_or_changed);
    tcase_add_test(tc, test_undefined_globals_are_errors);
    tcase_add_test(tc, test_library_tables_are_read_only);
    tcase_add_test(tc, test_the_strings_metatable_is_read_only);
    tcase_add_test(tc, test_scripts_see_the_globals_as_in_redis);
    tcase_add_test(tc, test_hidden_globals_are_undefined);
    tcase_add_test(tc, test_kept_functions_work);
    tcase_add_test(tc, test_chunks_loaded_by_scripts_are_sealed_too);
    tcase_add_test(tc, test_bytecode_is_never_loaded);
    tcase_add_test(tc, test_struct_and_cmsgpack_are_read_only_libraries);
    tcase_add_test(tc, test_math_random_is_redis_7_0s);
    tcase_add_test(tc, test_two_states_are_sealed_independently);
    suite_add_tcase(s, tc);
    return s;
}
