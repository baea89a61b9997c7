/*
 * lualib_struct.c - the struct table of Redis 7.0.15's scripts (Roberto
 * Ierusalimschy's struct library as Redis builds it into its Lua), which
 * no Debian package has for Lua 5.1 (lualibs.h).
 *
 * struct.pack(fmt, ...), struct.unpack(fmt, s [, pos]) and
 * struct.size(fmt) read a format of options, each a letter with an
 * optional count: '<' '>' little or big endian (native, little, to
 * start), '!n' the largest alignment (8 without n), ' ' nothing;
 * 'b'/'B' char, 'h'/'H' short, 'l'/'L' long, 'T' size_t, 'in'/'In' an
 * integer of n bytes (int's 4 without n; at most 32), lower case signed;
 * 'f' float, 'd' double; 'x' a zero byte; 'cn' n bytes of string (1
 * without n; 'c0': the whole string when packing, and when unpacking a
 * length taken from the value unpacked just before); 's' a string ended
 * by a zero byte. Values are aligned to min(their size, the alignment)
 * from the start of the data.
 *
 * The results are Redis's on x86-64, edge cases included: integers wider
 * than 8 bytes keep only the low 8 (sign extension does not reach the
 * rest), a number out of range converts as x86's cvttsd2si does (to
 * INT64_MIN), and the error texts and the arguments they name are
 * Redis's. Unlike pack and unpack, size ignores an unknown letter.
 */
#include "server/script/lualibs.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#define MAX_INT_SIZE 32         /* bytes in an 'i'/'I' at most */
#define MAX_ALIGN 8             /* '!' alone: double's alignment on x86-64 */

enum { BIG_ENDIAN_FMT, LITTLE_ENDIAN_FMT };

struct format {
    const char *p;              /* the next option */
    int endian;
    int align;
};

static void
format_init(struct format *f, const char *fmt)
{
    f->p = fmt;
    f->endian = LITTLE_ENDIAN_FMT;      /* x86's own order */
    f->align = 1;
}

/* The count after an option, or `otherwise` when none is written. */
static int
read_count(lua_State *L, struct format *f, int otherwise)
{
    if (!isdigit((unsigned char)*f->p)) {
        return otherwise;
    }
    int n = 0;
    while (isdigit((unsigned char)*f->p)) {
        int digit = *f->p - '0';
        if (n > INT_MAX / 10 || n * 10 > INT_MAX - digit) {
            luaL_error(L, "integral size overflow");
        }
        n = n * 10 + digit;
        f->p++;
    }
    return n;
}

/* The bytes option `opt` takes (0 for those that take none or vary). */
static size_t
option_size(lua_State *L, struct format *f, int opt)
{
    switch (opt) {
    case 'b': case 'B': return 1;
    case 'h': case 'H': return sizeof(short);
    case 'l': case 'L': return sizeof(long);
    case 'T': return sizeof(size_t);
    case 'f': return sizeof(float);
    case 'd': return sizeof(double);
    case 'x': return 1;
    case 'c': return (size_t)read_count(L, f, 1);
    case 'i': case 'I': {
        int size = read_count(L, f, sizeof(int));
        if (size > MAX_INT_SIZE) {
            luaL_error(L, "integral size %d is larger than limit of %d",
                       size, MAX_INT_SIZE);
        }
        return (size_t)size;
    }
    default: return 0;
    }
}

/* Padding before an option at offset `at`: the library's own formula,
 * which also serves sizes that are not powers of two ('i3'). */
static size_t
padding(size_t at, const struct format *f, int opt, size_t size)
{
    if (size == 0 || opt == 'c') {
        return 0;
    }
    if (size > (size_t)f->align) {
        size = (size_t)f->align;
    }
    return (size - (at & (size - 1))) & (size - 1);
}

/* The options that set how the rest is read; any other is an error. */
static void
control_option(lua_State *L, struct format *f, int opt)
{
    switch (opt) {
    case ' ':
        return;
    case '>':
        f->endian = BIG_ENDIAN_FMT;
        return;
    case '<':
        f->endian = LITTLE_ENDIAN_FMT;
        return;
    case '!': {
        int a = read_count(L, f, MAX_ALIGN);
        if (a <= 0 || (a & (a - 1)) != 0) {
            luaL_error(L, "alignment %d is not a power of 2", a);
        }
        f->align = a;
        return;
    }
    default:
        luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", opt));
    }
}

/* x86-64's conversions of a double, where C leaves them undefined:
 * cvttsd2si answers INT64_MIN for NaN and out of range; to unsigned, gcc
 * converts values from 2^63 up after subtracting 2^63. */
static int64_t
x86_to_int64(double d)
{
    if (d >= -0x1p63 && d < 0x1p63) {
        return (int64_t)d;
    }
    return INT64_MIN;
}

static uint64_t
x86_to_uint64(double d)
{
    if (d >= 0x1p63) {
        return (uint64_t)x86_to_int64(d - 0x1p63) ^ (UINT64_C(1) << 63);
    }
    return (uint64_t)x86_to_int64(d);
}

/* ---- pack ------------------------------------------------------------ */

static void
put_integer(lua_State *L, luaL_Buffer *b, int arg, int endian, size_t size)
{
    lua_Number n = luaL_checknumber(L, arg);
    uint64_t value = n < 0 ? (uint64_t)x86_to_int64(n) : x86_to_uint64(n);
    char bytes[MAX_INT_SIZE];
    for (size_t i = 0; i < size; i++) {
        size_t at = endian == LITTLE_ENDIAN_FMT ? i : size - 1 - i;
        bytes[at] = (char)(value & 0xff);
        value >>= 8;
    }
    luaL_addlstring(b, bytes, size);
}

/* A float or double in the format's order (the host is little endian). */
static void
put_reversed(luaL_Buffer *b, const void *value, size_t size, int endian)
{
    char bytes[sizeof(double)];
    memcpy(bytes, value, size);
    for (size_t i = 0; endian == BIG_ENDIAN_FMT && i < size / 2; i++) {
        char t = bytes[i];
        bytes[i] = bytes[size - 1 - i];
        bytes[size - 1 - i] = t;
    }
    luaL_addlstring(b, bytes, size);
}

/* 'c' and 's': returns the bytes written. */
static size_t
put_string(lua_State *L, luaL_Buffer *b, int *arg, int opt, size_t size)
{
    size_t len;
    const char *s = luaL_checklstring(L, (*arg)++, &len);
    if (size == 0) {
        size = len;
    }
    /* Redis names the argument after this one. */
    luaL_argcheck(L, len >= size, *arg, "string too short");
    luaL_addlstring(b, s, size);
    if (opt == 's') {
        luaL_addchar(b, '\0');
        size++;
    }
    return size;
}

/* One option's value; returns the bytes it took. */
static size_t
pack_option(lua_State *L, luaL_Buffer *b, struct format *f, int opt,
            int *arg, size_t size)
{
    switch (opt) {
    case 'b': case 'B': case 'h': case 'H': case 'l': case 'L':
    case 'T': case 'i': case 'I':
        put_integer(L, b, (*arg)++, f->endian, size);
        return size;
    case 'x':
        luaL_addchar(b, '\0');
        return size;
    case 'f': {
        float v = (float)luaL_checknumber(L, (*arg)++);
        put_reversed(b, &v, sizeof v, f->endian);
        return size;
    }
    case 'd': {
        double v = luaL_checknumber(L, (*arg)++);
        put_reversed(b, &v, sizeof v, f->endian);
        return size;
    }
    case 'c': case 's':
        return put_string(L, b, arg, opt, size);
    default:
        control_option(L, f, opt);
        return size;
    }
}

static int
struct_pack(lua_State *L)
{
    struct format f;
    format_init(&f, luaL_checkstring(L, 1));
    int arg = 2;
    size_t total = 0;
    luaL_Buffer b;
    lua_pushnil(L);             /* keeps the arguments below the buffer */
    luaL_buffinit(L, &b);
    while (*f.p != '\0') {
        int opt = *f.p++;
        size_t size = option_size(L, &f, opt);
        size_t pad = padding(total, &f, opt, size);
        total += pad;
        while (pad-- > 0) {
            luaL_addchar(&b, '\0');
        }
        total += pack_option(L, &b, &f, opt, &arg, size);
    }
    luaL_pushresult(&b);
    return 1;
}

/* ---- unpack ---------------------------------------------------------- */

static lua_Number
get_integer(const char *p, int endian, bool is_signed, size_t size)
{
    uint64_t v = 0;
    for (size_t i = 0; i < size; i++) {
        size_t at = endian == BIG_ENDIAN_FMT ? i : size - 1 - i;
        v = (v << 8) | (unsigned char)p[at];
    }
    if (!is_signed) {
        return (lua_Number)v;
    }
    /* Redis shifts by size*8-1, which x86 takes modulo 64. */
    uint64_t mask = ~UINT64_C(0) << ((size * 8 - 1) & 63);
    if (v & mask) {
        v |= mask;
    }
    return (lua_Number)(int64_t)v;
}

/* A float or double read in the format's order (the host is little
 * endian). */
static void
get_reversed(void *value, const char *p, size_t size, int endian)
{
    char bytes[sizeof(double)];
    for (size_t i = 0; i < size; i++) {
        bytes[i] = p[endian == BIG_ENDIAN_FMT ? size - 1 - i : i];
    }
    memcpy(value, bytes, size);
}

static void
check_room(lua_State *L, size_t pos, size_t size, size_t len)
{
    luaL_argcheck(L, size <= len && pos <= len - size, 2, "data string too short");
}

/* One option's value pushed; returns how many values it added (-1 when
 * it took the previous one as its length) and sets *size. */
static int
unpack_option(lua_State *L, struct format *f, int opt, const char *data,
              size_t len, size_t pos, size_t *size, int results)
{
    switch (opt) {
    case 'b': case 'B': case 'h': case 'H': case 'l': case 'L':
    case 'T': case 'i': case 'I':
        lua_pushnumber(L, get_integer(data + pos, f->endian, islower((unsigned char)opt), *size));
        return 1;
    case 'x':
        return 0;
    case 'f': {
        float v;
        get_reversed(&v, data + pos, sizeof v, f->endian);
        lua_pushnumber(L, v);
        return 1;
    }
    case 'd': {
        double v;
        get_reversed(&v, data + pos, sizeof v, f->endian);
        lua_pushnumber(L, v);
        return 1;
    }
    case 'c': {
        int taken = 0;
        if (*size == 0) {
            if (results == 0 || !lua_isnumber(L, -1)) {
                luaL_error(L, "format 'c0' needs a previous size");
            }
            *size = x86_to_uint64(lua_tonumber(L, -1));
            lua_pop(L, 1);
            taken = -1;
            check_room(L, pos, *size, len);
        }
        lua_pushlstring(L, data + pos, *size);
        return taken + 1;
    }
    case 's': {
        const char *end = memchr(data + pos, '\0', len - pos);
        if (end == NULL) {
            luaL_error(L, "unfinished string in data");
        }
        *size = (size_t)(end - (data + pos)) + 1;
        lua_pushlstring(L, data + pos, *size - 1);
        return 1;
    }
    default:
        control_option(L, f, opt);
        return 0;
    }
}

static int
struct_unpack(lua_State *L)
{
    struct format f;
    format_init(&f, luaL_checkstring(L, 1));
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    size_t pos = (size_t)luaL_optinteger(L, 3, 1);
    luaL_argcheck(L, pos > 0, 3, "offset must be 1 or greater");
    pos--;
    int results = 0;
    while (*f.p != '\0') {
        int opt = *f.p++;
        size_t size = option_size(L, &f, opt);
        pos += padding(pos, &f, opt, size);
        check_room(L, pos, size, len);
        luaL_checkstack(L, 2, "too many results");
        results += unpack_option(L, &f, opt, data, len, pos, &size, results);
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)(pos + 1));
    return results + 1;
}

/* ---- size ------------------------------------------------------------ */

static int
struct_size(lua_State *L)
{
    struct format f;
    format_init(&f, luaL_checkstring(L, 1));
    size_t pos = 0;
    while (*f.p != '\0') {
        int opt = *f.p++;
        size_t size = option_size(L, &f, opt);
        pos += padding(pos, &f, opt, size);
        if (opt == 's') {
            luaL_argerror(L, 1, "option 's' has no fixed size");
        } else if (opt == 'c' && size == 0) {
            luaL_argerror(L, 1, "option 'c0' has no fixed size");
        }
        if (!isalnum((unsigned char)opt)) {
            control_option(L, &f, opt);
        }
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)pos);
    return 1;
}

int
lualib_struct_open(lua_State *L)
{
    static const luaL_Reg functions[] = {
        { "pack", struct_pack },
        { "unpack", struct_unpack },
        { "size", struct_size },
        { NULL, NULL },
    };
    /* As Redis opens it: the global and package.loaded's entry. */
    luaL_register(L, "struct", functions);
    return 1;
}
