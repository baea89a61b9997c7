/*
 * check_convert.c - script values to replies and back (server/script/
 * convert.h), without the engine: a bare Lua state with the standard
 * libraries, a client that is only its output buffer.
 *
 * redis_cases holds what redis-server 7.0.15 sent for the same script's
 * return value (EVAL <script> 0 over a socket, the client in RESP2 or
 * RESP3); /work/notes/convert-cases.md has the table with the Redis side
 * spelled out, redis.call cases included. A script's redis.setresp(3) is
 * the script_proto column here.
 */
#include <check.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/obuf.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/script/convert.h"
#include "server/server.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

static lua_State *L;
static struct conn *client;

/* A deterministic picture of a Lua value: tables with their keys sorted,
 * strings quoted. */
static const char serializer[] =
    "function ser(v)\n"
    "  local t = type(v)\n"
    "  if t == 'table' then\n"
    "    local keys = {}\n"
    "    for k in pairs(v) do keys[#keys + 1] = k end\n"
    "    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)\n"
    "    local parts = {}\n"
    "    for _, k in ipairs(keys) do\n"
    "      parts[#parts + 1] = ser(k) .. '=' .. ser(v[k])\n"
    "    end\n"
    "    return '{' .. table.concat(parts, ',') .. '}'\n"
    "  elseif t == 'string' then\n"
    "    return string.format('%q', v)\n"
    "  end\n"
    "  return tostring(v)\n"
    "end\n";

static void
setup(void)
{
    L = luaL_newstate();
    ck_assert_ptr_nonnull(L);
    luaL_openlibs(L);
    ck_assert_int_eq(luaL_dostring(L, serializer), 0);
    lua_settop(L, 0);
    client = fx_client(2);
    cmd_reset_stats();
    srv.stats.total_error_replies = 0;
}

static void
teardown(void)
{
    lua_close(L);
    obuf_deinit(&client->out);
    free(client);
}

/* Run chunk, convert its one result for a client speaking proto; the
 * reply's bytes (*n their length; the caller frees). */
static char *
reply_of(const char *chunk, int proto, int script_proto, size_t *n)
{
    ck_assert_msg(luaL_loadstring(L, chunk) == 0, "%s", lua_tostring(L, -1));
    ck_assert_msg(lua_pcall(L, 0, 1, 0) == 0, "%s", lua_tostring(L, -1));
    client->proto = proto;
    client->reply_error = false;
    script_lua_to_reply(L, client, script_proto);
    ck_assert_int_eq(lua_gettop(L), 0);
    ck_assert(!client->out.oom);
    return fx_take(&client->out, n);
}

static void
expect_reply(const char *chunk, int proto, int script_proto,
             const char *want, size_t want_len)
{
    size_t n;
    char *got = reply_of(chunk, proto, script_proto, &n);
    ck_assert_msg(n == want_len && memcmp(got, want, n) == 0,
                  "%s (RESP%d, setresp %d): got %zu bytes \"%.*s\", want "
                  "\"%.*s\"", chunk, proto, script_proto, n,
                  (int)(n < 300 ? n : 300), got, (int)want_len, want);
    free(got);
}

struct redis_case {
    int proto;
    int script_proto;
    const char *chunk;
    const char *want;
    size_t want_len;
};

#define CASE(p, sp, chunk, want) { p, sp, chunk, want, sizeof(want) - 1 }

static const struct redis_case redis_cases[] = {
    CASE(2, 2, "return 3.99", ":3\r\n"),
    CASE(2, 2, "return -3.99", ":-3\r\n"),
    CASE(2, 2, "return -0.5", ":0\r\n"),
    CASE(2, 2, "return 1e100", ":-9223372036854775808\r\n"),
    CASE(3, 2, "return -1e100", ":-9223372036854775808\r\n"),
    CASE(2, 2, "return 0/0", ":-9223372036854775808\r\n"),
    CASE(2, 2, "return 2^63", ":-9223372036854775808\r\n"),
    CASE(2, 2, "return -2^63", ":-9223372036854775808\r\n"),
    CASE(2, 2, "return 2^53+1", ":9007199254740992\r\n"),
    CASE(2, 2, "return {1,2,nil,4}", "*2\r\n:1\r\n:2\r\n"),
    CASE(3, 2, "return {1,2,nil,4}", "*2\r\n:1\r\n:2\r\n"),
    CASE(2, 2, "return {1,2,3,nil,5}", "*3\r\n:1\r\n:2\r\n:3\r\n"),
    CASE(2, 2, "return {[1]=1,[2]=2,[4]=4}", "*2\r\n:1\r\n:2\r\n"),
    CASE(2, 2, "return {}", "*0\r\n"),
    CASE(2, 2, "return {a=1}", "*0\r\n"),
    CASE(2, 2, "return false", "$-1\r\n"),
    CASE(3, 2, "return false", "_\r\n"),
    CASE(2, 2, "return true", ":1\r\n"),
    CASE(3, 2, "return true", ":1\r\n"),
    CASE(2, 2, "return nil", "$-1\r\n"),
    CASE(3, 2, "return nil", "_\r\n"),
    CASE(2, 2, "return coroutine.create(function() end)", "$-1\r\n"),
    CASE(3, 2, "return coroutine.create(function() end)", "_\r\n"),
    CASE(2, 3, "return true", ":1\r\n"),
    CASE(2, 3, "return false", ":0\r\n"),
    CASE(3, 3, "return true", "#t\r\n"),
    CASE(3, 3, "return false", "#f\r\n"),
    CASE(2, 3, "return nil", "$-1\r\n"),
    CASE(3, 3, "return nil", "_\r\n"),
    CASE(2, 2, "return 'a\\0b'", "$3\r\na\0b\r\n"),
    CASE(2, 2, "return {err='x'}", "-x\r\n"),
    CASE(3, 2, "return {err='My err'}", "-My err\r\n"),
    CASE(2, 2, "return {err=''}", "-\r\n"),
    CASE(2, 2, "return {err='a\\r\\nb\\r\\n'}", "-a  b\r\n"),
    CASE(2, 2, "return {err='a\\0b'}", "-a\r\n"),
    CASE(2, 2, "return {err='\\n lead'}", "-  lead\r\n"),
    CASE(2, 2, "return {err='A\\nB c'}", "-A B c\r\n"),
    CASE(2, 2, "return {err=3}", "*0\r\n"),
    CASE(2, 2, "return {ok=3}", "*0\r\n"),
    CASE(2, 2, "return {ok='fine', err='bad'}", "-bad\r\n"),
    CASE(2, 2, "return {1, {err='inner'}, 3}",
         "*3\r\n:1\r\n-inner\r\n:3\r\n"),
    CASE(2, 2, "return {ok='fine'}", "+fine\r\n"),
    CASE(3, 2, "return {ok='a\\0b'}", "+a\r\n"),
    CASE(2, 2, "return {ok='a\\r\\nb'}", "+a  b\r\n"),
    CASE(2, 2, "return {ok='y', double=1}", "+y\r\n"),
    CASE(2, 2, "return {double=1.5}", "$3\r\n1.5\r\n"),
    CASE(3, 2, "return {double=1.5}", ",1.5\r\n"),
    CASE(2, 2, "return {double=0.1}", "$19\r\n0.10000000000000001\r\n"),
    CASE(2, 2, "return {double=-0.0}", "$2\r\n-0\r\n"),
    CASE(3, 2, "return {double=-0.0}", ",-0\r\n"),
    CASE(2, 2, "return {double=0/0}", "$4\r\n-nan\r\n"),
    CASE(3, 2, "return {double=0/0}", ",-nan\r\n"),
    CASE(2, 2, "return {double=1/0}", "$3\r\ninf\r\n"),
    CASE(3, 2, "return {double=-1/0}", ",-inf\r\n"),
    CASE(2, 2, "return {double=1e300}", "$23\r\n1.0000000000000001e+300\r\n"),
    CASE(2, 2, "return {double='1.5'}", "*0\r\n"),
    CASE(2, 2, "return {double=2, big_number='3'}", "$1\r\n2\r\n"),
    CASE(3, 2, "return {double=2, big_number='3'}", ",2\r\n"),
    CASE(2, 2, "return {big_number='123'}", "$3\r\n123\r\n"),
    CASE(3, 2, "return {big_number='123'}", "(123\r\n"),
    CASE(2, 2, "return {big_number='1\\r\\n2'}", "$4\r\n1  2\r\n"),
    CASE(3, 2, "return {big_number='1\\r\\n2'}", "(1  2\r\n"),
    CASE(2, 2, "return {big_number='12\\0 3'}", "$5\r\n12\0 3\r\n"),
    CASE(3, 2, "return {big_number='12\\0 3'}", "(12\0 3\r\n"),
    CASE(2, 2, "return {verbatim_string={format='txt', string='hi'}}",
         "$2\r\nhi\r\n"),
    CASE(3, 2, "return {verbatim_string={format='txt', string='hi'}}",
         "=6\r\ntxt:hi\r\n"),
    CASE(3, 2, "return {verbatim_string={format='ab', string='hi'}}",
         "=6\r\nab :hi\r\n"),
    CASE(3, 2, "return {verbatim_string={format='abcd', string='hi'}}",
         "=6\r\nabc:hi\r\n"),
    CASE(3, 2, "return {verbatim_string={format='a\\0b', string='x'}}",
         "=5\r\na  :x\r\n"),
    CASE(3, 2, "return {verbatim_string={format='', string='x\\0y'}}",
         "=7\r\n   :x\0y\r\n"),
    CASE(2, 2, "return {verbatim_string={format='a\\0b', string='x'}}",
         "$1\r\nx\r\n"),
    CASE(2, 2, "return {verbatim_string={format='txt'}}", "*0\r\n"),
    CASE(2, 2, "return {verbatim_string={format='txt', string='x'}, ok='y'}",
         "+y\r\n"),
    CASE(2, 2, "return {verbatim_string='x', ok='y'}", "+y\r\n"),
    CASE(2, 2, "return {map={a=1}}", "*2\r\n$1\r\na\r\n:1\r\n"),
    CASE(3, 2, "return {map={a=1}}", "%1\r\n$1\r\na\r\n:1\r\n"),
    CASE(2, 2, "return {set={a=true}}", "*1\r\n$1\r\na\r\n"),
    CASE(3, 2, "return {set={a=true}}", "~1\r\n$1\r\na\r\n"),
    CASE(2, 2, "return {map={}}", "*0\r\n"),
    CASE(3, 2, "return {map={}}", "%0\r\n"),
    CASE(3, 2, "return {set={}}", "~0\r\n"),
    CASE(2, 2, "return {map={a=1}, set={b=true}}", "*2\r\n$1\r\na\r\n:1\r\n"),
    CASE(3, 2, "return {set={a=1}, [1]=5}", "~1\r\n$1\r\na\r\n"),
    CASE(2, 2, "return {map=5, [1]=7}", "*1\r\n:7\r\n"),
    CASE(2, 2, "return {map={[1]='a', [2.5]='b', [true]='c'}}",
         "*6\r\n:1\r\n$1\r\na\r\n:1\r\n$1\r\nc\r\n:2\r\n$1\r\nb\r\n"),
    CASE(2, 2, "return {set={[1]=true, x=false}}", "*2\r\n:1\r\n$1\r\nx\r\n"),
    CASE(2, 2, "return {map={[{1,2}]='v'}}",
         "*2\r\n*2\r\n:1\r\n:2\r\n$1\r\nv\r\n"),
    CASE(3, 2, "return {map={[{1,2}]='v'}}",
         "%1\r\n*2\r\n:1\r\n:2\r\n$1\r\nv\r\n"),
    CASE(2, 2, "return {map={x=true, y=false}}",
         "*4\r\n$1\r\ny\r\n$-1\r\n$1\r\nx\r\n:1\r\n"),
    CASE(3, 2, "return {map={x=true, y=false}}",
         "%2\r\n$1\r\ny\r\n_\r\n$1\r\nx\r\n:1\r\n"),
    CASE(2, 3, "return {map={x=true, y=false}}",
         "*4\r\n$1\r\ny\r\n:0\r\n$1\r\nx\r\n:1\r\n"),
    CASE(3, 3, "return {map={x=true, y=false}}",
         "%2\r\n$1\r\ny\r\n#f\r\n$1\r\nx\r\n#t\r\n"),
    CASE(2, 2, "return {set={[false]=true}}", "*1\r\n$-1\r\n"),
    CASE(3, 2, "return {set={[false]=true}}", "~1\r\n_\r\n"),
    CASE(2, 2, "return {map={a={1,2}, b={err='IN x'}}}",
         "*4\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n$1\r\nb\r\n-IN x\r\n"),
    CASE(2, 2, "return setmetatable({}, {__index=function() return 'x' end})",
         "*0\r\n"),
};

START_TEST(test_values_reply_as_redis_7_0_15)
{
    for (size_t i = 0; i < sizeof(redis_cases) / sizeof(redis_cases[0]); i++) {
        const struct redis_case *k = &redis_cases[i];
        expect_reply(k->chunk, k->proto, k->script_proto, k->want,
                     k->want_len);
    }
}
END_TEST

/* The count of error code `code` in INFO errorstats (0 if absent). */
static uint64_t
error_count(const char *code)
{
    uint64_t n;
    const char *name;
    for (size_t i = 0; (name = cmd_error_stat(i, &n)) != NULL; i++) {
        if (strcmp(name, code) == 0) {
            return n;
        }
    }
    return 0;
}

START_TEST(test_errors_are_counted_as_redis_counts_them)
{
    free(reply_of("return {err='x'}", 2, 2, NULL));
    ck_assert_uint_eq(error_count("ERR"), 1);
    ck_assert(client->reply_error);
    free(reply_of("return {err='MYCODE bad'}", 2, 2, NULL));
    ck_assert_uint_eq(error_count("MYCODE"), 1);
    free(reply_of("return {err='ABCDEFGHIJKLMNOPQRSTUVWXYZ0123 x'}", 2, 2,
                  NULL));
    ck_assert_uint_eq(error_count("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123"), 1);
    free(reply_of("return {err='ABCDEFGHIJKLMNOPQRSTUVWXYZ01234 x'}", 2, 2,
                  NULL));
    ck_assert_uint_eq(error_count("ERR"), 2);
    free(reply_of("return {err=' lead'}", 2, 2, NULL));
    ck_assert_uint_eq(error_count(""), 1);
    free(reply_of("return {err='A\\nB c'}", 2, 2, NULL));
    ck_assert_uint_eq(error_count("A"), 1);
    free(reply_of("return {map={a={1,2}, b={err='IN x'}}}", 2, 2, NULL));
    ck_assert_uint_eq(error_count("IN"), 1);
    ck_assert_uint_eq(srv.stats.total_error_replies, 7);
}
END_TEST

START_TEST(test_an_error_redis_call_counted_is_not_counted_again)
{
    /* What redis.pcall returns for a failed command. */
    free(reply_of("return {err='WRONGTYPE Operation', "
                  "ignore_error_stats_update=true}", 2, 2, NULL));
    ck_assert_uint_eq(error_count("WRONGTYPE"), 0);
    ck_assert_uint_eq(srv.stats.total_error_replies, 0);
    ck_assert(client->reply_error);     /* EVAL's failed call still */
    /* Redis reads that field with lua_getfield: through __index. */
    expect_reply("return setmetatable({err='E x'}, "
                 "{__index={ignore_error_stats_update=true}})",
                 2, 2, "-E x\r\n", 6);
    ck_assert_uint_eq(error_count("E"), 0);
    /* A string "true" is not the boolean. */
    free(reply_of("return {err='E x', ignore_error_stats_update='true'}", 2,
                  2, NULL));
    ck_assert_uint_eq(error_count("E"), 1);
}
END_TEST

/* head, n copies of unit, tail; *len its length (the caller frees). */
static char *
repeated(const char *head, const char *unit, size_t n, const char *tail,
         size_t *len)
{
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
    char *s = malloc(h + u * n + t + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, head, h);
    for (size_t i = 0; i < n; i++) {
        memcpy(s + h + i * u, unit, u);
    }
    memcpy(s + h + u * n, tail, t + 1);
    *len = h + u * n + t;
    return s;
}

/* Run chunk in RESP2; its reply must be head, n units, tail. */
static void
expect_repeated(const char *chunk, const char *head, const char *unit,
                size_t n, const char *tail)
{
    size_t len;
    char *want = repeated(head, unit, n, tail, &len);
    expect_reply(chunk, 2, 2, want, len);
    free(want);
}

#define STACK_LIMIT "-ERR reached lua stack limit\r\n"

/* Redis's depths: the value starts one slot above its frame's base, each
 * array level takes one slot more, a map's or set's level three, and
 * every value wants 4 free slots of Lua's 8000. */
START_TEST(test_nesting_stops_where_redis_stops)
{
    expect_repeated("local t = {} for i=1,10000 do t = {t} end return t",
                    "", "*1\r\n", 7995, STACK_LIMIT);
    ck_assert_uint_eq(error_count("ERR"), 1);
    expect_repeated("local t = {} for i=1,7990 do t = {t} end return t",
                    "", "*1\r\n", 7990, "*0\r\n");
    expect_repeated("local t = {} for i=1,10000 do t = {t} end "
                    "return {1, t, 2}",
                    "*3\r\n:1\r\n", "*1\r\n", 7994, STACK_LIMIT ":2\r\n");
    expect_repeated("local t = {} for i=1,10000 do t = {map={a=t}} end "
                    "return t",
                    "", "*2\r\n$1\r\na\r\n", 2664,
                    "*2\r\n" STACK_LIMIT STACK_LIMIT);
    expect_repeated("local t = {} for i=1,10000 do t = {set={[t]=true}} end "
                    "return t",
                    "", "*1\r\n", 2665, STACK_LIMIT);
}
END_TEST

/* ------------------------------------------------------------------------
 * Reply -> Lua
 * --------------------------------------------------------------------- */

/* Convert bytes, then picture the value with ser(); the caller frees. */
static char *
lua_of(const char *bytes, size_t len)
{
    ck_assert_msg(script_reply_to_lua(L, bytes, len), "refused: %.*s",
                  (int)len, bytes);
    ck_assert_int_eq(lua_gettop(L), 1);
    lua_getglobal(L, "ser");
    lua_insert(L, -2);
    ck_assert_int_eq(lua_pcall(L, 1, 1, 0), 0);
    char *s = strdup(lua_tostring(L, -1));
    ck_assert_ptr_nonnull(s);
    lua_settop(L, 0);
    return s;
}

static void
expect_lua(const char *bytes, size_t len, const char *want)
{
    char *got = lua_of(bytes, len);
    ck_assert_msg(strcmp(got, want) == 0, "%.*s: got %s, want %s", (int)len,
                  bytes, got, want);
    free(got);
}

#define EXPECT_LUA(bytes, want) expect_lua(bytes, sizeof(bytes) - 1, want)

START_TEST(test_replies_become_redis_lua_values)
{
    EXPECT_LUA(":42\r\n", "42");
    EXPECT_LUA(":-9007199254740993\r\n", "-9.007199254741e+15");
    EXPECT_LUA("$3\r\na\0b\r\n", "\"a\\000b\"");
    EXPECT_LUA("$-1\r\n", "false");
    EXPECT_LUA("*-1\r\n", "false");
    EXPECT_LUA("+OK\r\n", "{\"ok\"=\"OK\"}");
    EXPECT_LUA("-WRONGTYPE Operation against a key\r\n",
               "{\"err\"=\"WRONGTYPE Operation against a key\","
               "\"ignore_error_stats_update\"=true}");
    EXPECT_LUA("-NOSPACE\r\n",
               "{\"err\"=\"ERR NOSPACE\",\"ignore_error_stats_update\"=true}");
    EXPECT_LUA("-ERR  two spaces\r\n",
               "{\"err\"=\"ERR  two spaces\","
               "\"ignore_error_stats_update\"=true}");
    EXPECT_LUA("-E \0after\r\n",
               "{\"err\"=\"E \",\"ignore_error_stats_update\"=true}");
    EXPECT_LUA("!7\r\nE x\r\ny\n\r\n",
               "{\"err\"=\"E x\\r\\\ny\",\"ignore_error_stats_update\"=true}");
    EXPECT_LUA("*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n",
               "{1=1,2=false,3={1={\"ok\"=\"x\"}}}");
    EXPECT_LUA("*0\r\n", "{}");
    /* RESP3 (a script after redis.setresp(3)). */
    EXPECT_LUA("_\r\n", "nil");
    EXPECT_LUA("#t\r\n", "true");
    EXPECT_LUA("#f\r\n", "false");
    EXPECT_LUA(",1.5\r\n", "{\"double\"=1.5}");
    EXPECT_LUA(",inf\r\n", "{\"double\"=inf}");
    EXPECT_LUA("(12345678901234567890\r\n",
               "{\"big_number\"=\"12345678901234567890\"}");
    EXPECT_LUA("=8\r\nmkd:# hi\r\n",
               "{\"verbatim_string\"={\"format\"=\"mkd\",\"string\"=\"# hi\"}}");
    EXPECT_LUA("%2\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n:2\r\n",
               "{\"map\"={\"f1\"=\"v1\",\"f2\"=2}}");
    EXPECT_LUA("~2\r\n$1\r\na\r\n:3\r\n", "{\"set\"={3=true,\"a\"=true}}");
    EXPECT_LUA("*3\r\n:1\r\n_\r\n:3\r\n", "{1=1,3=3}");
    EXPECT_LUA("|1\r\n+key\r\n*2\r\n:1\r\n:2\r\n:7\r\n", "7");
    EXPECT_LUA("*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", "{1=1,2=2}");
}
END_TEST

/* redis.setresp(3); return redis.call('HGETALL', KEYS[1]) on a hash of f1
 * v1 f2 v2: Redis answers in the order Lua's table walks, f2 first; the
 * same Lua built the same way walks the same way. */
START_TEST(test_a_map_round_trips_in_lua_order)
{
    static const char hgetall[] =
        "%2\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n";
    static const char want2[] =
        "*4\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf1\r\n$2\r\nv1\r\n";
    static const char want3[] =
        "%2\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf1\r\n$2\r\nv1\r\n";
    for (int proto = 2; proto <= 3; proto++) {
        ck_assert(script_reply_to_lua(L, hgetall, sizeof(hgetall) - 1));
        client->proto = proto;
        script_lua_to_reply(L, client, 3);
        ck_assert_int_eq(lua_gettop(L), 0);
        size_t n;
        char *got = fx_take(&client->out, &n);
        const char *want = proto == 2 ? want2 : want3;
        ck_assert_uint_eq(n, strlen(want));
        ck_assert_mem_eq(got, want, n);
        free(got);
    }
}
END_TEST

START_TEST(test_what_is_not_one_valid_reply_is_refused)
{
    static const char *const bad[] = {
        "", ":1\r\n:2\r\n", "*2\r\n:1\r\n", "$3\r\nab\r\n", ">1\r\n:1\r\n",
        "%1\r\n_\r\n:1\r\n",            /* a nil key */
        "~1\r\n_\r\n",
        "|1\r\n+a\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        lua_pushstring(L, "below");
        ck_assert_msg(!script_reply_to_lua(L, bad[i], strlen(bad[i])),
                      "accepted %zu", i);
        ck_assert_int_eq(lua_gettop(L), 1);
        ck_assert_str_eq(lua_tostring(L, -1), "below");
        lua_settop(L, 0);
    }
}
END_TEST

/* ------------------------------------------------------------------------
 * Out of memory
 * --------------------------------------------------------------------- */

/* An allocator that refuses once `budget` allocations were made. */
static long budget;

static void *
limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    if (nsize > osize && budget-- <= 0) {
        return NULL;
    }
    return realloc(ptr, nsize);
}

START_TEST(test_running_out_of_memory_never_escapes)
{
    static const char nested[] =
        "*3\r\n%1\r\n$1\r\nk\r\n~2\r\n+a\r\n+b\r\n-ERR x\r\n"
        "=8\r\ntxt:abcd\r\n";
    bool converted_once = false;
    for (long limit = 0; limit < 200; limit++) {
        budget = 1L << 30;
        lua_State *S = lua_newstate(limited_alloc, NULL);
        ck_assert_ptr_nonnull(S);
        budget = limit;
        bool ok = script_reply_to_lua(S, nested, sizeof(nested) - 1);
        ck_assert_int_eq(lua_gettop(S), ok ? 1 : 0);
        converted_once |= ok;
        if (ok) {
            client->proto = 3;
            script_lua_to_reply(S, client, 2);
            ck_assert_int_eq(lua_gettop(S), 0);
            client->out.oom = false;
            free(fx_take(&client->out, NULL));
        }
        lua_close(S);
    }
    ck_assert(converted_once);
    budget = 1L << 30;
}
END_TEST

START_TEST(test_writing_a_reply_out_of_memory_breaks_the_stream)
{
    /* The value is made first; then every allocation fails, and the
     * protected entry cannot even be made. */
    budget = 1L << 30;
    lua_State *S = lua_newstate(limited_alloc, NULL);
    ck_assert_ptr_nonnull(S);
    ck_assert_int_eq(luaL_loadstring(S, "return {map={a={1,2}}}"), 0);
    ck_assert_int_eq(lua_pcall(S, 0, 1, 0), 0);
    budget = 0;
    script_lua_to_reply(S, client, 2);
    ck_assert_int_eq(lua_gettop(S), 0);
    ck_assert(client->out.oom);
    budget = 1L << 30;
    lua_close(S);
}
END_TEST

Suite *
convert_suite(void)
{
    Suite *s = suite_create("convert");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_values_reply_as_redis_7_0_15);
    tcase_add_test(tc, test_errors_are_counted_as_redis_counts_them);
    tcase_add_test(tc, test_an_error_redis_call_counted_is_not_counted_again);
    tcase_add_test(tc, test_nesting_stops_where_redis_stops);
    tcase_add_test(tc, test_replies_become_redis_lua_values);
    tcase_add_test(tc, test_a_map_round_trips_in_lua_order);
    tcase_add_test(tc, test_what_is_not_one_valid_reply_is_refused);
    tcase_add_test(tc, test_running_out_of_memory_never_escapes);
    tcase_add_test(tc, test_writing_a_reply_out_of_memory_breaks_the_stream);
    suite_add_tcase(s, tc);
    return s;
}
