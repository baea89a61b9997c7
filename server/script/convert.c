/*
 * convert.c - replies to Lua values and Lua values to replies (see
 * convert.h), as Redis 7.0's script_lua.c converts them.
 *
 * The rules are Redis's to the byte, quirks included, because scripts
 * written against Redis depend on them: a number reply is truncated, an
 * array ends at its first nil, a table is an error if its err field is a
 * string whatever else it holds. Three things are ours:
 *
 * - The value becomes a reply by counting before writing. Redis writes
 *   an aggregate's length after its elements (a deferred length); our
 *   output buffer is append-only, so an array's elements (up to the
 *   first nil) and a map's or set's keys are counted first, with raw
 *   reads that run no Lua code, then written.
 *
 * - Each direction runs as a protected Lua call of its own. Lua reports
 *   running out of memory with a longjmp; inside the protected call that
 *   only unwinds our own frames. The C function is made once per state
 *   and kept in the registry, so calling it allocates nothing outside
 *   the protection.
 *
 * - Reading a reply is strict (protocol/reply_read.h) and stops with
 *   false where Redis, trusting its own bytes, would read on or panic.
 *
 * The depth at which Redis gives up on a nested value depends on how many
 * Lua stack slots each level takes: the writer pushes exactly what Redis's
 * does, and the value starts one slot above the frame's base, as in Redis
 * (where the error handler sits below it), so the same nesting fails at
 * the same depth.
 */
#include "server/script/convert.h"

#include <lauxlib.h>
#include <stdint.h>
#include <string.h>

#include "protocol/reply.h"
#include "protocol/reply_read.h"
#include "server/client.h"
#include "server/cmd.h"

/* ------------------------------------------------------------------------
 * The protected entries
 * --------------------------------------------------------------------- */

/* A C function kept in the registry under its entry's address. */
struct entry {
    lua_CFunction fn;
};

static int
remember_entry(lua_State *L)
{
    struct entry *e = lua_touserdata(L, 1);
    lua_pushlightuserdata(L, e);
    lua_pushcfunction(L, e->fn);
    lua_rawset(L, LUA_REGISTRYINDEX);
    return 0;
}

/* Push e's function; false (nothing pushed) if making it failed. */
static bool
push_entry(lua_State *L, struct entry *e)
{
    lua_pushlightuserdata(L, e);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (lua_isfunction(L, -1)) {
        return true;
    }
    lua_pop(L, 1);
    if (lua_cpcall(L, remember_entry, e) != 0) {
        lua_pop(L, 1);
        return false;
    }
    lua_pushlightuserdata(L, e);
    lua_rawget(L, LUA_REGISTRYINDEX);
    return true;
}

/* ------------------------------------------------------------------------
 * Reply -> Lua
 * --------------------------------------------------------------------- */

static bool push_reply(lua_State *L, struct reply_reader *r);

/* luaPushErrorBuff's table for an error reply's text: the code is the
 * first word, or ERR when there is no space (then the whole text is the
 * message); the message loses CR and LF at both ends. Redis handles the
 * text as a C string, so a NUL ends it. */
static void
push_error_table(lua_State *L, const char *text, size_t len)
{
    len = strnlen(text, len);
    const char *space = memchr(text, ' ', len);
    const char *code = "ERR", *msg = text;
    size_t code_len = 3, msg_len = len;
    if (space != NULL) {
        code = text;
        code_len = (size_t)(space - text);
        msg = space + 1;
        msg_len = len - code_len - 1;
    }
    while (msg_len > 0 && (msg[0] == '\r' || msg[0] == '\n')) {
        msg++;
        msg_len--;
    }
    while (msg_len > 0 &&
           (msg[msg_len - 1] == '\r' || msg[msg_len - 1] == '\n')) {
        msg_len--;
    }
    lua_newtable(L);
    lua_pushstring(L, "err");
    lua_pushlstring(L, code, code_len);
    lua_pushstring(L, " ");
    lua_pushlstring(L, msg, msg_len);
    lua_concat(L, 3);
    lua_rawset(L, -3);
    /* redis.call's error was counted when its command failed. */
    lua_pushstring(L, "ignore_error_stats_update");
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
}

/* {field=<string>}: a status, a big number. */
static void
push_string_field(lua_State *L, const char *field, const char *s, size_t len)
{
    lua_newtable(L);
    lua_pushstring(L, field);
    lua_pushlstring(L, s, len);
    lua_rawset(L, -3);
}

static void
push_double_table(lua_State *L, double d)
{
    lua_newtable(L);
    lua_pushstring(L, "double");
    lua_pushnumber(L, d);
    lua_rawset(L, -3);
}

static void
push_verbatim_table(lua_State *L, const struct reply_token *t)
{
    lua_newtable(L);
    lua_pushstring(L, "verbatim_string");
    lua_newtable(L);
    lua_pushstring(L, "string");
    lua_pushlstring(L, t->str, t->len);
    lua_rawset(L, -3);
    lua_pushstring(L, "format");
    lua_pushlstring(L, t->format, 3);
    lua_rawset(L, -3);
    lua_rawset(L, -3);
}

static bool
push_array(lua_State *L, struct reply_reader *r, int64_t n)
{
    if (!lua_checkstack(L, 2)) {
        return false;
    }
    lua_newtable(L);
    for (int64_t j = 1; j <= n; j++) {
        lua_pushnumber(L, (lua_Number)j);
        if (!push_reply(L, r)) {
            return false;
        }
        lua_settable(L, -3);
    }
    return true;
}

/* {map={k=v, ...}} or, with as_set, {set={e=true, ...}}. */
static bool
push_map_or_set(lua_State *L, struct reply_reader *r, int64_t n, bool as_set)
{
    if (!lua_checkstack(L, 3)) {
        return false;
    }
    lua_newtable(L);
    lua_pushstring(L, as_set ? "set" : "map");
    lua_newtable(L);
    for (int64_t j = 0; j < n; j++) {
        if (!push_reply(L, r)) {
            return false;
        }
        if (as_set) {
            if (!lua_checkstack(L, 1)) {
                return false;
            }
            lua_pushboolean(L, 1);
        } else if (!push_reply(L, r)) {
            return false;
        }
        lua_rawset(L, -3);      /* a nil key raises: caught, false */
    }
    lua_rawset(L, -3);
    return true;
}

/* Redis does not show attributes to scripts: skip the pairs, convert the
 * reply they annotate. */
static bool
push_attributed(lua_State *L, struct reply_reader *r, int64_t pairs)
{
    for (int64_t j = 0; j < 2 * pairs; j++) {
        if (!reply_reader_skip(r)) {
            return false;
        }
    }
    return push_reply(L, r);
}

/* The scalars: each takes at most 5 stack slots (a verbatim string). */
static void
push_scalar(lua_State *L, const struct reply_token *t)
{
    switch (t->type) {
    case RT_INT:
        lua_pushnumber(L, (lua_Number)t->n);
        break;
    case RT_BULK:
        lua_pushlstring(L, t->str, t->len);
        break;
    case RT_NULL_BULK:
    case RT_NULL_ARRAY:
        lua_pushboolean(L, 0);
        break;
    case RT_NULL:
        lua_pushnil(L);
        break;
    case RT_BOOL:
        lua_pushboolean(L, t->n != 0);
        break;
    case RT_STATUS:
        push_string_field(L, "ok", t->str, t->len);
        break;
    case RT_ERROR:
    case RT_BLOB_ERROR:
        push_error_table(L, t->str, t->len);
        break;
    case RT_DOUBLE:
        push_double_table(L, t->d);
        break;
    case RT_BIG_NUMBER:
        push_string_field(L, "big_number", t->str, t->len);
        break;
    case RT_VERBATIM:
        push_verbatim_table(L, t);
        break;
    default:
        break;
    }
}

static bool
push_reply(lua_State *L, struct reply_reader *r)
{
    struct reply_token t;
    if (!reply_reader_next(r, &t)) {
        return false;
    }
    switch (t.type) {
    case RT_ARRAY:
        return push_array(L, r, t.n);
    case RT_MAP:
        return push_map_or_set(L, r, t.n, false);
    case RT_SET:
        return push_map_or_set(L, r, t.n, true);
    case RT_ATTRIBUTE:
        return push_attributed(L, r, t.n);
    case RT_PUSH:
        return false;
    default:
        if (!lua_checkstack(L, 5)) {
            return false;
        }
        push_scalar(L, &t);
        return true;
    }
}

struct to_lua_job {
    const char *buf;
    size_t len;
    bool converted;
};

/* The protected body: (job) -> the value, or nothing. */
static int
reply_to_lua_entry(lua_State *L)
{
    struct to_lua_job *job = lua_touserdata(L, 1);
    struct reply_reader r;
    reply_reader_init(&r, job->buf, job->len);
    if (!push_reply(L, &r) || !reply_reader_done(&r)) {
        return 0;
    }
    job->converted = true;
    return 1;
}

static struct entry reply_to_lua = { reply_to_lua_entry };

bool
script_reply_to_lua(lua_State *L, const char *buf, size_t len)
{
    struct to_lua_job job = { buf, len, false };
    if (!lua_checkstack(L, 3) || !push_entry(L, &reply_to_lua)) {
        return false;
    }
    lua_pushlightuserdata(L, &job);
    if (lua_pcall(L, 1, 1, 0) != 0 || !job.converted) {
        lua_pop(L, 1);          /* the error, or the nil of no result */
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------
 * Lua -> reply
 * --------------------------------------------------------------------- */

struct to_reply_job {
    struct conn *c;
    int script_proto;
};

static void write_value(lua_State *L, const struct to_reply_job *job);

/* (long long)d as x86-64 computes it: truncated toward zero; NaN and
 * values out of range give the "integer indefinite", INT64_MIN. C leaves
 * those undefined, so they are spelled out. */
static int64_t
number_to_integer(lua_Number d)
{
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
        return INT64_MIN;
    }
    return (int64_t)d;
}

static void
write_boolean(struct conn *c, bool b, int script_proto)
{
    if (script_proto == 2) {
        if (b) {
            reply_int(&c->out, 1);
        } else {
            reply_null(&c->out, c->proto);
        }
    } else if (c->proto == 2) {
        reply_int(&c->out, b ? 1 : 0);
    } else {
        obuf_append(&c->out, b ? "#t\r\n" : "#f\r\n", 4);
    }
}

/* Push t[field] (raw) on top of the table at -1; its type. */
static int
raw_field(lua_State *L, const char *field)
{
    lua_pushstring(L, field);
    lua_rawget(L, -2);
    return lua_type(L, -1);
}

/* luaExtractErrorInformation over the table on top: its fields read
 * with lua_getfield, so a metatable's __index is consulted (and may run),
 * as in Redis; only err and ignore_error_stats_update matter here. Then
 * the reply: -err, its trailing CR and LF dropped. */
static void
write_error_table(lua_State *L, struct conn *c)
{
    lua_getfield(L, -1, "err");
    const char *msg = lua_tostring(L, -1);
    size_t len = strlen(msg);       /* a NUL ends it, as in Redis */
    lua_pop(L, 1);                  /* the table still holds msg */
    lua_getfield(L, -1, "source");
    lua_pop(L, 1);
    lua_getfield(L, -1, "line");
    lua_pop(L, 1);
    lua_getfield(L, -1, "ignore_error_stats_update");
    bool ignore = lua_isboolean(L, -1) && lua_toboolean(L, -1);
    lua_pop(L, 1);
    while (len > 0 && (msg[len - 1] == '\r' || msg[len - 1] == '\n')) {
        len--;
    }
    cmd_error_script(c, msg, len, !ignore);
}

/* addReplyVerbatim's format: three bytes of the string, spaces once it
 * ends. */
static void
verbatim_format(const char *s, char out[3])
{
    for (int i = 0; i < 3; i++) {
        out[i] = *s == '\0' ? ' ' : *s++;
    }
}

/* {verbatim_string={format=, string=}} on top: written (true) when both
 * are strings; the stack is as it was either way. */
static bool
write_verbatim(lua_State *L, struct conn *c)
{
    bool written = false;
    if (raw_field(L, "format") == LUA_TSTRING) {
        const char *format = lua_tostring(L, -1);
        lua_pushstring(L, "string");
        lua_rawget(L, -3);
        if (lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            char f[3];
            verbatim_format(format, f);
            reply_verbatim_as(&c->out, s, len, f, c->proto);
            written = true;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return written;
}

/* Pairs of the table on top (lua_next, which runs no Lua code). */
static size_t
count_pairs(lua_State *L)
{
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        n++;
    }
    return n;
}

/* {map=m} with m on top: each key, then its value. */
static void
write_map(lua_State *L, const struct to_reply_job *job)
{
    reply_map(&job->c->out, count_pairs(L), job->c->proto);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);   /* a copy of the key, which is consumed */
        write_value(L, job);
        write_value(L, job);
    }
}

/* {set=s} with s on top: its keys; the values do not matter. */
static void
write_set(lua_State *L, const struct to_reply_job *job)
{
    reply_set(&job->c->out, count_pairs(L), job->c->proto);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        write_value(L, job);
    }
}

/* The table on top as an array: t[1], t[2], ... up to the first nil. */
static void
write_array(lua_State *L, const struct to_reply_job *job)
{
    size_t n = 0;
    for (;;) {
        lua_pushnumber(L, (lua_Number)(n + 1));
        lua_rawget(L, -2);
        bool end = lua_isnil(L, -1);
        lua_pop(L, 1);
        if (end) {
            break;
        }
        n++;
    }
    reply_array(&job->c->out, n);
    for (size_t j = 1; j <= n; j++) {
        lua_pushnumber(L, (lua_Number)j);
        lua_rawget(L, -2);
        write_value(L, job);
    }
}

/* The table on top, by the first field that makes it a special reply,
 * else as an array. Leaves the table on top. */
static void
write_table(lua_State *L, const struct to_reply_job *job)
{
    struct conn *c = job->c;
    if (raw_field(L, "err") == LUA_TSTRING) {
        lua_pop(L, 1);
        write_error_table(L, c);
        return;
    }
    lua_pop(L, 1);
    if (raw_field(L, "ok") == LUA_TSTRING) {
        const char *ok = lua_tostring(L, -1);
        reply_status_bytes(&c->out, ok, strlen(ok));
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (raw_field(L, "double") == LUA_TNUMBER) {
        reply_double(&c->out, lua_tonumber(L, -1), c->proto);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (raw_field(L, "big_number") == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        reply_big_number(&c->out, s, len, c->proto);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (raw_field(L, "verbatim_string") == LUA_TTABLE &&
        write_verbatim(L, c)) {
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (raw_field(L, "map") == LUA_TTABLE) {
        write_map(L, job);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    if (raw_field(L, "set") == LUA_TTABLE) {
        write_set(L, job);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    write_array(L, job);
}

/* The value on top, written and popped (luaReplyToRedisReply). */
static void
write_value(lua_State *L, const struct to_reply_job *job)
{
    struct conn *c = job->c;
    /* A map's entry takes 4 slots (table, key, value, key copy). */
    if (!lua_checkstack(L, 4)) {
        cmd_error(c, "ERR reached lua stack limit");
        lua_pop(L, 1);
        return;
    }
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        reply_bulk(&c->out, s, len);
        break;
    }
    case LUA_TBOOLEAN:
        write_boolean(c, lua_toboolean(L, -1), job->script_proto);
        break;
    case LUA_TNUMBER:
        reply_int(&c->out, number_to_integer(lua_tonumber(L, -1)));
        break;
    case LUA_TTABLE:
        write_table(L, job);
        break;
    default:
        reply_null(&c->out, c->proto);
        break;
    }
    lua_pop(L, 1);
}

/* The protected body: (job, value) -> nothing. The job below the value
 * stands where Redis's error handler stands. */
static int
lua_to_reply_entry(lua_State *L)
{
    const struct to_reply_job *job = lua_touserdata(L, 1);
    write_value(L, job);
    return 0;
}

static struct entry lua_to_reply = { lua_to_reply_entry };

void
script_lua_to_reply(lua_State *L, struct conn *c, int script_proto)
{
    struct to_reply_job job = { c, script_proto };
    if (!lua_checkstack(L, 3) || !push_entry(L, &lua_to_reply)) {
        lua_pop(L, 1);
        c->out.oom = true;
        return;
    }
    lua_insert(L, -2);                  /* entry, value */
    lua_pushlightuserdata(L, &job);
    lua_insert(L, -2);                  /* entry, job, value */
    if (lua_pcall(L, 2, 0, 0) != 0) {
        /* Out of memory, or an __index that raised, halfway through the
         * reply: the stream cannot be mended. */
        lua_pop(L, 1);
        c->out.oom = true;
    }
}
