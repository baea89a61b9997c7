/*
 * lualib_cmsgpack.c - the cmsgpack table of Redis 7.0.15's scripts
 * (lua-cmsgpack 0.4.0, which Redis builds into its Lua), on Debian's
 * msgpack-c (lualibs.h).
 *
 * Packing: msgpack-c's packer writes every msgpack class in the same
 * bytes as Redis's copy (the smallest integer class for the value,
 * fixstr/str8/str16/str32 by length, fix/16/32 array and map headers),
 * so this file only decides what each Lua value becomes, as Redis does:
 * a number that is an integer in int64's range is an integer, any other
 * a float32 when the float holds it exactly, else a float64; a table is
 * an array when its keys are exactly 1..n (the empty table included),
 * else a map; a table 16 levels down (cycles end there) and any value
 * that is not a string, number, boolean or table is nil. Several
 * arguments are packed one after the other.
 *
 * Unpacking is written here, not left to msgpack-c's unpacker, because
 * Redis's decoder differs from it where a script can see it: it builds
 * the Lua values as it reads, so a map with a nil key fails with Lua's
 * "table index is nil" before bytes further on are looked at; its
 * nesting is bounded by Lua's stack (thousands), where msgpack-c stops at
 * 32; and msgpack-c allocates each array's declared count (malloc'd,
 * outside the script heap) before its bytes are read. Here every value
 * is read only when its bytes are there, so a huge declared count or
 * length costs nothing, and what is built lives in the Lua heap, under
 * lua-memory-limit. The values and errors are Redis's, bin and ext
 * included (refused as a bad format), and uint64 values above int64 wrap
 * negative as they do in Redis. The Lua stack operations are the same
 * as Redis's, in the same order, so the tables have the same layout
 * (pairs() walks them in Redis's order) and the stack overflows at the
 * same depth with the same text.
 */
#include "server/script/lualibs.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <float.h>
#include <lauxlib.h>
#include <msgpack/pack.h>

#define MAX_NESTING 16      /* a table this deep is packed as nil */

#define TOO_MANY_VALUES "too many return values at once; " \
                        "use unpack_one or unpack_limit instead."

/* ---- packing ----------------------------------------------------------- */

/* The bytes packed so far live in a userdata at stack index `slot`, so
 * an error anywhere (memory, stack) leaves nothing for anyone to free:
 * growing makes a new userdata and drops the old one to the collector. */
struct packing {
    lua_State *L;
    int slot;
    unsigned char *bytes;
    size_t len;
    size_t cap;
    msgpack_packer pk;
};

static void
grow(struct packing *p, size_t more)
{
    if (more > SIZE_MAX / 2 - p->len) {
        luaL_error(p->L, "not enough memory");
    }
    size_t need = p->len + more;
    size_t cap = p->cap;
    while (cap < need) {
        cap = cap > SIZE_MAX / 4 ? need : cap * 2 + 64;
    }
    unsigned char *bytes = lua_newuserdata(p->L, cap);
    if (p->len > 0) {
        memcpy(bytes, p->bytes, p->len);
    }
    lua_replace(p->L, p->slot);
    p->bytes = bytes;
    p->cap = cap;
}

/* msgpack-c's write callback. */
static int
append(void *data, const char *buf, size_t len)
{
    struct packing *p = data;
    if (len > p->cap - p->len) {
        grow(p, len);
    }
    memcpy(p->bytes + p->len, buf, len);
    p->len += len;
    return 0;
}

static void pack_value(struct packing *p, int level);

/* The sandbox's view -> real table, for tables a script sees read-only. */
static void (*see_through)(lua_State *L);

void
lualib_cmsgpack_views(void (*see_through_top)(lua_State *L))
{
    see_through = see_through_top;
}

/* Redis asks whether (int64_t)n == n; its cast of 2^63 or NaN is
 * x86's INT64_MIN, which never compares equal, so this is that test
 * without the undefined cast. */
static bool
is_int64(lua_Number n)
{
    return n >= -0x1p63 && n < 0x1p63 && floor(n) == n;
}

static void
pack_number(struct packing *p, lua_Number n)
{
    if (is_int64(n)) {
        msgpack_pack_int64(&p->pk, (int64_t)n);
    } else if (isnan(n) || (fabs(n) > FLT_MAX && !isinf(n)) ||
               (double)(float)n != n) {
        msgpack_pack_double(&p->pk, n);
    } else {
        msgpack_pack_float(&p->pk, (float)n);
    }
}

/* Redis's test: every key a positive number that an int holds exactly,
 * and the largest key equal to their count. */
static bool
is_array(lua_State *L)
{
    int top = lua_gettop(L);
    int count = 0;
    int max = 0;
    luaL_checkstack(L, 2, "in function table_is_an_array");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        lua_Number n;
        if (lua_type(L, -1) != LUA_TNUMBER || (n = lua_tonumber(L, -1)) <= 0 ||
            n > INT_MAX || floor(n) != n) {
            lua_settop(L, top);
            return false;
        }
        if (n > max) {
            max = (int)n;
        }
        count++;
    }
    lua_settop(L, top);
    return max == count;
}

static void
pack_array(struct packing *p, int level)
{
    lua_State *L = p->L;
    size_t len = lua_objlen(L, -1);
    msgpack_pack_array(&p->pk, len);
    luaL_checkstack(L, 1, "in function mp_encode_lua_table_as_array");
    for (size_t i = 1; i <= len; i++) {
        lua_pushnumber(L, (lua_Number)i);
        lua_gettable(L, -2);
        pack_value(p, level + 1);
    }
}

static void
pack_map(struct packing *p, int level)
{
    lua_State *L = p->L;
    size_t len = 0;
    luaL_checkstack(L, 3, "in function mp_encode_lua_table_as_map");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        len++;
    }
    msgpack_pack_map(&p->pk, len);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        pack_value(p, level + 1);       /* the key */
        pack_value(p, level + 1);       /* the value */
    }
}

/* Pack the value on top of the stack and pop it. */
static void
pack_value(struct packing *p, int level)
{
    lua_State *L = p->L;
    int type = lua_type(L, -1);
    if (type == LUA_TTABLE && level == MAX_NESTING) {
        type = LUA_TNIL;
    }
    switch (type) {
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        msgpack_pack_str(&p->pk, len);
        msgpack_pack_str_body(&p->pk, s, len);
        break;
    }
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, -1)) {
            msgpack_pack_true(&p->pk);
        } else {
            msgpack_pack_false(&p->pk);
        }
        break;
    case LUA_TNUMBER:
        pack_number(p, lua_tonumber(L, -1));
        break;
    case LUA_TTABLE:
        if (see_through != NULL) {
            see_through(L);
        }
        if (is_array(L)) {
            pack_array(p, level);
        } else {
            pack_map(p, level);
        }
        break;
    default:
        msgpack_pack_nil(&p->pk);
        break;
    }
    lua_pop(L, 1);
}

/* cmsgpack.pack(v1, v2, ...): the values packed one after another. */
static int
mp_pack(lua_State *L)
{
    int nargs = lua_gettop(L);
    if (nargs == 0) {
        return luaL_argerror(L, 0, "MessagePack pack needs input.");
    }
    if (!lua_checkstack(L, nargs)) {
        return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
    }
    /* The bytes go into slot 1 once the first argument has been copied
     * out of it, and a nil stands after each argument where Redis leaves
     * that argument's packed string: the stack is as deep as Redis's at
     * every check, so it overflows where Redis's does. */
    struct packing p = { .L = L, .slot = 1 };
    msgpack_packer_init(&p.pk, &p, append);
    for (int i = 1; i <= nargs; i++) {
        luaL_checkstack(L, 1, "in function mp_check");
        lua_pushvalue(L, i);
        pack_value(&p, 0);
        lua_pushnil(L);
    }
    lua_pushlstring(L, p.len > 0 ? (const char *)p.bytes : "", p.len);
    return 1;
}

/* ---- unpacking --------------------------------------------------------- */

enum { READ_OK, READ_MISSING, READ_BAD };

struct cursor {
    const unsigned char *p;
    size_t left;
    int err;
};

/* Ends the calling reader when fewer than n bytes are left. */
#define NEED(c, n) do {                         \
        if ((c)->left < (size_t)(n)) {          \
            (c)->err = READ_MISSING;            \
            return;                             \
        }                                       \
    } while (0)

static void
consume(struct cursor *c, size_t n)
{
    c->p += n;
    c->left -= n;
}

/* The big-endian unsigned integer of n bytes after the type byte. */
static uint64_t
be_uint(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 1; i <= n; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static void read_value(lua_State *L, struct cursor *c);

/* An array's len elements (keyed 1, 2, ...) or a map's len pairs into a
 * new table. */
static void
read_table(lua_State *L, struct cursor *c, size_t len, bool map)
{
    int index = 1;
    lua_newtable(L);
    if (!map) {
        luaL_checkstack(L, 1, "in function mp_decode_to_lua_array");
    }
    while (len-- > 0) {
        if (map) {
            read_value(L, c);
            if (c->err != READ_OK) {
                return;
            }
        } else {
            lua_pushnumber(L, index++);
        }
        read_value(L, c);
        if (c->err != READ_OK) {
            return;
        }
        lua_settable(L, -3);
    }
}

/* A string whose length takes n bytes after the type byte. */
static void
read_string(lua_State *L, struct cursor *c, int n)
{
    NEED(c, 1 + n);
    size_t len = (size_t)be_uint(c->p, n);
    consume(c, 1 + n);
    NEED(c, len);
    lua_pushlstring(L, (const char *)c->p, len);
    consume(c, len);
}

/* An array (or map) whose count takes n bytes after the type byte. */
static void
read_container(lua_State *L, struct cursor *c, int n, bool map)
{
    NEED(c, 1 + n);
    size_t len = (size_t)be_uint(c->p, n);
    consume(c, 1 + n);
    read_table(L, c, len, map);
}

/* Integers (n bytes; signed or not) and floats. As in Redis on 64-bit,
 * unsigned values go through lua_Integer (a uint64 above INT64_MAX comes
 * out negative) and int64 straight to a number. */
static void
read_number(lua_State *L, struct cursor *c, int n, bool is_signed)
{
    NEED(c, 1 + n);
    uint64_t v = be_uint(c->p, n);
    if (!is_signed) {
        lua_pushinteger(L, (lua_Integer)(int64_t)v);
    } else if (n == 1) {
        lua_pushinteger(L, (int8_t)v);
    } else if (n == 2) {
        lua_pushinteger(L, (int16_t)v);
    } else if (n == 4) {
        lua_pushinteger(L, (int32_t)v);
    } else {
        lua_pushnumber(L, (lua_Number)(int64_t)v);
    }
    consume(c, 1 + n);
}

static void
read_float(lua_State *L, struct cursor *c, int n)
{
    NEED(c, 1 + n);
    uint64_t v = be_uint(c->p, n);
    if (n == 4) {
        uint32_t bits = (uint32_t)v;
        float f;
        memcpy(&f, &bits, sizeof f);
        lua_pushnumber(L, f);
    } else {
        double d;
        memcpy(&d, &v, sizeof d);
        lua_pushnumber(L, d);
    }
    consume(c, 1 + n);
}

static void
read_constant(lua_State *L, struct cursor *c, unsigned char type)
{
    if (type == 0xc0) {
        lua_pushnil(L);
    } else {
        lua_pushboolean(L, type == 0xc3);
    }
    consume(c, 1);
}

/* The types whose first byte is their whole tag (0xc0 ... 0xdf); the
 * ones lua-cmsgpack does not know (0xc1, bin, ext) are a bad format. */
static void
read_tagged(lua_State *L, struct cursor *c, unsigned char type)
{
    switch (type) {
    case 0xc0: case 0xc2: case 0xc3: read_constant(L, c, type); break;
    case 0xcc: read_number(L, c, 1, false); break;
    case 0xcd: read_number(L, c, 2, false); break;
    case 0xce: read_number(L, c, 4, false); break;
    case 0xcf: read_number(L, c, 8, false); break;
    case 0xd0: read_number(L, c, 1, true); break;
    case 0xd1: read_number(L, c, 2, true); break;
    case 0xd2: read_number(L, c, 4, true); break;
    case 0xd3: read_number(L, c, 8, true); break;
    case 0xca: read_float(L, c, 4); break;
    case 0xcb: read_float(L, c, 8); break;
    case 0xd9: read_string(L, c, 1); break;
    case 0xda: read_string(L, c, 2); break;
    case 0xdb: read_string(L, c, 4); break;
    case 0xdc: read_container(L, c, 2, false); break;
    case 0xdd: read_container(L, c, 4, false); break;
    case 0xde: read_container(L, c, 2, true); break;
    case 0xdf: read_container(L, c, 4, true); break;
    default: c->err = READ_BAD; break;
    }
}

/* Decode one value at the cursor onto the stack (on success). */
static void
read_value(lua_State *L, struct cursor *c)
{
    NEED(c, 1);
    luaL_checkstack(L, 1, TOO_MANY_VALUES);
    unsigned char type = c->p[0];
    if (type <= 0x7f) {
        lua_pushinteger(L, type);
        consume(c, 1);
    } else if (type >= 0xe0) {
        lua_pushinteger(L, (int8_t)type);
        consume(c, 1);
    } else if ((type & 0xe0) == 0xa0) {
        size_t len = type & 0x1f;
        NEED(c, 1 + len);
        lua_pushlstring(L, (const char *)c->p + 1, len);
        consume(c, 1 + len);
    } else if ((type & 0xf0) == 0x90) {
        consume(c, 1);
        read_table(L, c, type & 0x0f, false);
    } else if ((type & 0xf0) == 0x80) {
        consume(c, 1);
        read_table(L, c, type & 0x0f, true);
    } else {
        read_tagged(L, c, type);
    }
}

/* Up to `limit` values from `offset` (both 0: every value, and no offset
 * returned); otherwise the next offset (-1 at the end) comes first. */
static int
unpack_values(lua_State *L, lua_Integer limit, lua_Integer offset)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    bool all = limit == 0 && offset == 0;
    if (offset < 0 || limit < 0) {
        /* Redis's text names the input's length as the limit. */
        return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
                          (int)offset, (int)len);
    }
    if ((size_t)offset > len) {
        return luaL_error(L, "Start offset %d greater than input length %d.",
                          (int)offset, (int)len);
    }
    if (all) {
        limit = INT_MAX;
    }
    struct cursor c = { (const unsigned char *)s + offset, len - (size_t)offset, READ_OK };
    int count;
    for (count = 0; c.left > 0 && count < limit; count++) {
        read_value(L, &c);
        if (c.err == READ_MISSING) {
            return luaL_error(L, "Missing bytes in input.");
        }
        if (c.err == READ_BAD) {
            return luaL_error(L, "Bad data format in input.");
        }
    }
    if (all) {
        return count;
    }
    luaL_checkstack(L, 1, "in function mp_unpack_full");
    lua_pushinteger(L, c.left == 0 ? -1 : (lua_Integer)(len - c.left));
    lua_insert(L, 2);
    return count + 1;
}

static int
mp_unpack(lua_State *L)
{
    return unpack_values(L, 0, 0);
}

static int
mp_unpack_one(lua_State *L)
{
    lua_Integer offset = luaL_optinteger(L, 2, 0);
    lua_settop(L, 1);
    return unpack_values(L, 1, offset);
}

static int
mp_unpack_limit(lua_State *L)
{
    lua_Integer limit = luaL_checkinteger(L, 2);
    lua_Integer offset = luaL_optinteger(L, 3, 0);
    lua_settop(L, 1);
    return unpack_values(L, limit, offset);
}

/* ---- the table ----------------------------------------------------------- */

int
lualib_cmsgpack_open(lua_State *L)
{
    static const luaL_Reg functions[] = {
        { "pack", mp_pack },
        { "unpack", mp_unpack },
        { "unpack_one", mp_unpack_one },
        { "unpack_limit", mp_unpack_limit },
    };
    static const char *const about[][2] = {
        { "_NAME", "cmsgpack" },
        { "_VERSION", "lua-cmsgpack 0.4.0" },
        { "_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo" },
        { "_DESCRIPTION", "MessagePack C implementation for Lua" },
    };
    /* Built field by field in Redis's order: pairs() walks it the same. */
    lua_newtable(L);
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
        lua_pushcfunction(L, functions[i].func);
        lua_setfield(L, -2, functions[i].name);
    }
    for (size_t i = 0; i < sizeof about / sizeof about[0]; i++) {
        lua_pushstring(L, about[i][1]);
        lua_setfield(L, -2, about[i][0]);
    }
    lua_pushvalue(L, -1);
    lua_setglobal(L, "cmsgpack");
    return 1;
}
