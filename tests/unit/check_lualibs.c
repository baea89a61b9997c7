/*
 * check_lualibs.c - cmsgpack and struct (server/script/lualib_*.c) in a
 * sealed sandbox, against Debian's redis-server 7.0.15: each case is a
 * script body run inside pcall, and what Redis gave for it, recorded
 * byte for byte (the packed bytes in hex, or "E:" and the error text).
 * tests/integration/test_scripts_msgpack.py compares many more cases
 * with a live redis-server.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "server/script/sandbox.h"
#include "tests/unit/suites.h"

struct lib_case {
    const char *body;
    const char *redis;      /* hex of the result, or "E:" and the error */
};

static const struct lib_case cases[] = {
    { "return cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296)",
      "007fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000" },
    { "return cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649, -2^63)",
      "ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd38000000000000000" },
    { "return cmsgpack.pack(2^63, 1.5, 0.1, 3.4e38, 1e39, 2^-149, 0/0)",
      "ca5f000000ca3fc00000cb3fb999999999999acb47eff933c78cdfadcb48078287f49c4a1dca00000001cbfff8000000000000" },
    { "local z = 0 return cmsgpack.pack(1/z, -1/z, -z)",
      "ca7f800000caff80000000" },
    { "return cmsgpack.pack(true, false, nil, {}, {1, 2}, {a = 1}, {[2] = 1}, {[1.5] = 1}, {[0] = 1}, tostring)",
      "c3c2c09092010281a1610181020181ca3fc0000001810001c0" },
    { "return cmsgpack.pack(string.rep('a', 31), string.rep('b', 32))",
      "bf61616161616161616161616161616161616161616161616161616161616161d9206262626262626262626262626262626262626262626262626262626262626262" },
    { "return cmsgpack.pack(string.rep('c', 255), string.rep('d', 256)):sub(1, 6)",
      "d9ff63636363" },
    { "return cmsgpack.pack(string.rep('e', 65535), string.rep('f', 65536)):sub(65538, 65545)",
      "65db000100006666" },
    { "return cmsgpack.pack({1,{2,{3,{4,{5,{6,{7,{8,{9,{10,{11,{12,{13,{14,{15,{16,{17}}}}}}}}}}}}}}}}})",
      "920192029203920492059206920792089209920a920b920c920d920e920f9210c0" },
    { "local t = {} for i = 1, 16 do t[i] = i end return cmsgpack.pack(t):sub(1, 4)",
      "dc001001" },
    { "local t = {} for i = 1, 70000 do t[i] = 1 end return cmsgpack.pack(t):sub(1, 6)",
      "dd0001117001" },
    { "local t = {} for i = 1, 16 do t['k' .. i] = 1 end return cmsgpack.pack(t):sub(1, 3)",
      "de0010" },
    { "local t = {} for i = 1, 70000 do t[-i] = 1 end return cmsgpack.pack(t):sub(1, 5)",
      "df00011170" },
    { "return cmsgpack.pack(cmsgpack.unpack('\\205\\1\\0\\209\\255\\0\\210\\255\\255\\255\\0\\211\\255\\255\\255\\255\\255\\255\\255\\0'))",
      "cd0100d1ff00d1ff00d1ff00" },
    { "return tostring(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255'))",
      "2d31" },
    { "return tostring(cmsgpack.unpack('\\202\\61\\204\\204\\205'))",
      "302e3130303030303030313439303132" },
    { "return cmsgpack.pack(cmsgpack.unpack('\\217\\3abc\\218\\0\\1d\\219\\0\\0\\0\\1e\\220\\0\\1\\1\\221\\0\\0\\0\\1\\2\\222\\0\\1\\1\\2\\223\\0\\0\\0\\1\\3\\4'))",
      "a3616263a164a165910191029102810304" },
    { "return cmsgpack.pack(cmsgpack.unpack('\\147\\192\\1\\192'))",
      "810201" },
    { "return cmsgpack.unpack('\\193')",
      "E:user_script:1: Bad data format in input." },
    { "return cmsgpack.unpack('\\196\\1a')",
      "E:user_script:1: Bad data format in input." },
    { "return cmsgpack.unpack('\\212\\1a')",
      "E:user_script:1: Bad data format in input." },
    { "return cmsgpack.unpack('\\205\\1')",
      "E:user_script:1: Missing bytes in input." },
    { "return cmsgpack.unpack('\\221\\255\\255\\255\\255')",
      "E:user_script:1: Missing bytes in input." },
    { "return cmsgpack.unpack('\\219\\255\\255\\255\\255')",
      "E:user_script:1: Missing bytes in input." },
    { "return cmsgpack.unpack('\\129\\192\\1')",
      "E:table index is nil" },
    { "return cmsgpack.unpack('\\146\\129\\192\\1\\193')",
      "E:table index is nil" },
    { "return cmsgpack.unpack(string.rep('\\145', 5000))",
      "E:user_script:1: stack overflow (in function mp_decode_to_lua_array)" },
    { "return cmsgpack.unpack(string.rep('\\1', 9000))",
      "E:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)" },
    { "return cmsgpack.pack()",
      "E:user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)" },
    { "return table.concat({cmsgpack.unpack_one('\\1\\2\\3')}, ',')",
      "312c31" },
    { "return table.concat({cmsgpack.unpack_one('\\1\\2\\3', 2)}, ',')",
      "2d312c33" },
    { "return table.concat({cmsgpack.unpack_one('')}, ',')",
      "2d31" },
    { "return table.concat({cmsgpack.unpack_limit('\\1\\2\\3', 2)}, ',')",
      "322c312c32" },
    { "return table.concat({cmsgpack.unpack_limit('\\1\\2\\3', 0)}, ',')",
      "312c322c33" },
    { "return table.concat({cmsgpack.unpack_limit('\\1\\2\\3', 0, 1)}, ',')",
      "31" },
    { "return cmsgpack.unpack_one('\\1\\2\\3', 4)",
      "E:user_script:1: Start offset 4 greater than input length 3." },
    { "return cmsgpack.unpack_one('\\1\\2\\3', -1)",
      "E:user_script:1: Invalid request to unpack with offset of -1 and limit of 3." },
    { "return cmsgpack.unpack_limit('\\1\\2\\3', -2, 1)",
      "E:user_script:1: Invalid request to unpack with offset of 1 and limit of 3." },
    { "return cmsgpack.unpack_limit('\\1\\2\\3')",
      "E:user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)" },
    { "return struct.pack('bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7)",
      "fffffefffffffdffffffffffffff04000000000000000500000000000000faffffff07000000" },
    { "return struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7)",
      "fffffffefffffffffffffffffffd00000000000000040000000000000005fffffffa00000007" },
    { "return struct.pack('>i3i16', -3, -1)",
      "fffffd0000000000000000ffffffffffffffff" },
    { "return struct.pack('<f>f<d>d', 1.5, 0.1, 0.1, 2.5)",
      "0000c03f3dcccccd9a9999999999b93f4004000000000000" },
    { "local z = 0 return struct.pack('<lLL', 0/z, 2^63, 2^64)",
      "000000000000008000000000000000800000000000000000" },
    { "return struct.pack('c2c0sxs', 'abc', 'de', 'f', 'g')",
      "616264656600006700" },
    { "return struct.pack('!4 b i b d', 1, 2, 3, 4)",
      "0100000002000000030000000000000000001040" },
    { "return struct.pack('!2 b d b i3 b i', 1, 2, 3, 4, 5, 6)",
      "0100000000000000004003000400000506000000" },
    { "return struct.pack('c5', 'abc')",
      "E:user_script:1: bad argument #3 to 'pack' (string too short)" },
    { "return struct.pack('i c5', 1, 'abc')",
      "E:user_script:1: bad argument #4 to 'pack' (string too short)" },
    { "return struct.pack('!3 b', 1)",
      "E:user_script:1: alignment 3 is not a power of 2" },
    { "return struct.pack('z', 1)",
      "E:user_script:1: bad argument #1 to 'pack' (invalid format option 'z')" },
    { "return struct.pack('i33', 1)",
      "E:user_script:1: integral size 33 is larger than limit of 32" },
    { "return struct.pack('i99999999999', 1)",
      "E:user_script:1: integral size overflow" },
    { "return struct.pack('i', 'x')",
      "E:user_script:1: bad argument #2 to 'pack' (number expected, got string)" },
    { "return table.concat({struct.unpack('<bBhHlLTiI', struct.pack('<bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7))}, ',')",
      "2d312c3235352c2d322c36353533352c2d332c342c352c2d362c372c3339" },
    { "return table.concat({struct.unpack('>i3I3', '\\255\\255\\254\\255\\255\\254')}, ',')",
      "2d322c31363737373231342c37" },
    { "return table.concat({struct.unpack('<i9', string.rep('\\255', 9))}, ',')",
      "2d312c3130" },
    { "return table.concat({struct.unpack('>fd', struct.pack('>fd', -2.25, 0.5))}, ',')",
      "2d322e32352c302e352c3133" },
    { "return table.concat({struct.unpack('bc0s', '\\3xyzw\\0')}, ',')",
      "78797a2c772c37" },
    { "return table.concat({struct.unpack('!4 b i', '\\1\\0\\0\\0\\2\\0\\0\\0\\9', 2)}, ',')",
      "302c322c39" },
    { "return struct.unpack('c0', 'abc')",
      "E:user_script:1: format 'c0' needs a previous size" },
    { "return struct.unpack('s', 'abc')",
      "E:user_script:1: unfinished string in data" },
    { "return struct.unpack('i', 'abc')",
      "E:user_script:1: bad argument #2 to 'unpack' (data string too short)" },
    { "return struct.unpack('i', 'abcdefgh', 0)",
      "E:user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)" },
    { "return struct.unpack('z', 'abc')",
      "E:user_script:1: bad argument #1 to 'unpack' (invalid format option 'z')" },
    { "return tostring(struct.size('bBhHlLTiIfdxc3')) .. ',' .. struct.size('!bdbi') .. ',' .. struct.size('z5')",
      "35342c32342c30" },
    { "return struct.size('s')",
      "E:user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)" },
    { "return struct.size('c0')",
      "E:user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)" },
};

/* What the case's body gives, as recorded from Redis. */
#define WRAP_HEAD "local function hex(s) return (s:gsub('.', function(c) " \
    "return string.format('%02x', c:byte()) end)) end " \
    "local ok, r = pcall(function() "
#define WRAP_TAIL " end) if ok then return hex(r) else return 'E:' .. r end"

static lua_State *
sealed_state(void)
{
    lua_State *L = luaL_newstate();
    ck_assert_ptr_nonnull(L);
    ck_assert_int_eq(sandbox_open(L), 0);
    lua_newtable(L);
    lua_setglobal(L, "redis");
    ck_assert_int_eq(sandbox_seal(L), 0);
    return L;
}

START_TEST(test_every_case_gives_redis_bytes)
{
    lua_State *L = sealed_state();
    char script[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = snprintf(script, sizeof script, "%s%s%s", WRAP_HEAD,
                         cases[i].body, WRAP_TAIL);
        ck_assert_int_lt(n, (int)sizeof script);
        ck_assert_int_eq(luaL_loadbuffer(L, script, strlen(script), "@user_script"), 0);
        ck_assert_msg(lua_pcall(L, 0, 1, 0) == 0, "%s: %s", cases[i].body,
                      lua_tostring(L, -1));
        const char *got = lua_tostring(L, -1);
        ck_assert_ptr_nonnull(got);
        ck_assert_msg(strcmp(got, cases[i].redis) == 0, "%s\n got %s\nwant %s",
                      cases[i].body, got, cases[i].redis);
        lua_settop(L, 0);
    }
    lua_close(L);
}
END_TEST

/* A pack that runs out of memory part way leaves nothing behind: the
 * bytes are a userdata the collector takes. */
static size_t heap_left;

static void *
tight_heap(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    if (nsize == 0) {
        free(ptr);
        heap_left += osize;
        return NULL;
    }
    if (nsize > osize && nsize - osize > heap_left) {
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p != NULL) {
        heap_left = heap_left + osize - nsize;
    }
    return p;
}

START_TEST(test_out_of_memory_is_a_catchable_error)
{
    heap_left = 4u << 20;
    lua_State *L = lua_newstate(tight_heap, NULL);
    ck_assert_ptr_nonnull(L);
    ck_assert_int_eq(sandbox_open(L), 0);
    ck_assert_int_eq(sandbox_seal(L), 0);
    const char *script =
        "local s = string.rep('x', 1000000) "
        "local ok, e = pcall(cmsgpack.pack, s, s, s, s) "
        "local ok2, e2 = pcall(cmsgpack.unpack, '\\221\\255\\255\\255\\255') "
        "return tostring(ok) .. ':' .. e .. '|' .. e2";
    ck_assert_int_eq(luaL_loadbuffer(L, script, strlen(script), "@user_script"), 0);
    ck_assert_int_eq(lua_pcall(L, 0, 1, 0), 0);
    ck_assert_str_eq(lua_tostring(L, -1),
                     "false:not enough memory|Missing bytes in input.");
    lua_close(L);
}
END_TEST

Suite *
lualibs_suite(void)
{
    Suite *s = suite_create("lualibs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_every_case_gives_redis_bytes);
    tcase_add_test(tc, test_out_of_memory_is_a_catchable_error);
    suite_add_tcase(s, tc);
    return s;
}
