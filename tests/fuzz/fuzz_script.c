/*
 * fuzz_script.c - libFuzzer driver for Lua scripts: input bytes become Lua
 * programs run through EVAL, EVAL_RO, SCRIPT LOAD and EVALSHA on the
 * in-process server (the real command table, the script engine, its
 * sandbox, conversions and redis.call into an in-process keyspace with
 * the journal on), as fuzz_cmd.c runs commands.
 *
 * An input is a small program (run_op): scripts generated from the bytes
 * (gen_script: statements and expressions of a grammar, see below),
 * scripts of raw bytes (filtered: see raw_script), SCRIPT LOAD, EVALSHA of
 * a loaded or a bogus SHA1, SCRIPT EXISTS and FLUSH, HELLO 2/3, SELECT and
 * plain writes of every type on the keys the scripts use; and functions:
 * FUNCTION LOAD [REPLACE] of libraries whose one function's body is a
 * generated script (a generated statement run at load time now and then),
 * FCALL and FCALL_RO of them, FUNCTION DELETE, FLUSH, LIST, STATS, and a
 * FUNCTION DUMP restored with each policy, whole or with a bit flipped.
 * What a generated script does:
 *
 *  - returns every kind of value: numbers (floats, negatives, huge, NaN,
 *    inf), strings (binary, CRLF, long), booleans, nil, nested tables with
 *    holes, {ok=}, {err=}, {double=}, {map=}, {set=}, {big_number=},
 *    {verbatim_string=}, redis.status_reply and error_reply of any value,
 *    after redis.setresp(2|3|junk);
 *  - redis.call and redis.pcall of data commands on the same keys, of
 *    denied ones (EVAL, SCRIPT, MULTI, SUBSCRIBE, SHUTDOWN, CONFIG...), of
 *    unknown ones, with odd arguments (none, numbers, floats, tables,
 *    booleans, nil), from a coroutine too;
 *  - errors: error() of strings, tables and numbers, at levels, {err=}
 *    tables, runtime errors (arithmetic on nil, calling a nil), inside
 *    pcall/xpcall and not; error objects with metatables;
 *  - the sandbox: writing and reading globals, library tables, the
 *    strings' metatable, rawset/setmetatable of _G;
 *  - resource edges: deep recursion (Lua's call limit, pcall's C-stack
 *    limit), deep tables (the conversion's stack limit), huge tables,
 *    string.rep of large sizes, table.concat and unpack of large ranges,
 *    all bounded by lua-memory-limit, which the driver sets to 8 MB;
 *    cjson.encode of deep and odd structures, cjson.decode of deep and
 *    odd text; loadstring of generated text;
 *  - the libraries Redis adds: cmsgpack.pack of any value, unpack,
 *    unpack_one and unpack_limit of raw bytes, huge declared counts and
 *    deep nesting at any offset; struct.pack, unpack and size of formats
 *    drawn from every option (bad ones too) with any values.
 *
 * Loops and recursion are bounded by the generator (at most ~10^5 trips a
 * statement, 16 statements a script). TODO: the engine has no way to end
 * a script that runs too long (its count hook only logs a slow script and
 * SCRIPT KILL answers NOTBUSY); once it has one, let the generator draw
 * unbounded loops (while true do end, tail-call recursion) and raw
 * scripts with loops, and check they end.
 *
 * After every request it checks the reply is exactly one well-formed
 * RESP value (RESP2 types only on a RESP2 connection), after every
 * script that the Lua heap is within lua-memory-limit (give or take the
 * KEYS and ARGV tables), and at the end of the input, with the Lua state
 * closed and every key freed, that mem_used() is back where it started.
 */
#include <dirent.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/mem.h"
#include "protocol/obuf.h"
#include "protocol/resp.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/client.h"
#include "server/keyspace.h"
#include "server/keytype.h"
#include "server/log.h"
#include "server/multi.h"
#include "server/persist/persist.h"
#include "server/script/script.h"
#include "server/server.h"
#include "server/slowlog.h"
#include "server/topdenied.h"
#include "server/cluster/cluster.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define T0 INT64_C(1893456000000000000)    /* 2030-01-01 */
#define MAX_ARGS 16
#define MAX_OPS 24
#define MAX_STMTS 16
#define MAX_DEPTH 4
#define LUA_LIMIT ((int64_t)8 << 20)

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz_script: %s:%d: check failed: %s\n",        \
                    __FILE__, __LINE__, #cond);                              \
            abort();                                                         \
        }                                                                    \
    } while (0)

static char snapdir[256];
static struct conn *client;
static bool trace;

/* ---- input ------------------------------------------------------------- */

struct input {
    const uint8_t *p;
    size_t n;
};

static uint8_t
in_byte(struct input *in)
{
    if (in->n == 0) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static unsigned
in_pick(struct input *in, unsigned n)
{
    return n == 0 ? 0 : in_byte(in) % n;
}

static uint16_t
in_u16(struct input *in)
{
    return (uint16_t)(in_byte(in) | in_byte(in) << 8);
}

/* ---- a growing string ------------------------------------------------------ */

struct sb {
    char *p;
    size_t len, cap;
};

static void
sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        b->p = realloc(b->p, cap);
        CHECK(b->p != NULL);
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void
sb_s(struct sb *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void
sb_f(struct sb *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && (size_t)n < sizeof(tmp));
    sb_add(b, tmp, (size_t)n);
}

/* A Lua string literal of up to max input bytes, every byte escaped that
 * is not plain. */
static void
sb_lua_bytes(struct sb *b, struct input *in, size_t max)
{
    size_t n = in_pick(in, (unsigned)max + 1);
    sb_s(b, "'");
    for (size_t i = 0; i < n && in->n > 0; i++) {
        uint8_t c = in_byte(in);
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
            sb_add(b, (const char *)&c, 1);
        } else {
            sb_f(b, "\\%u", c);
        }
    }
    sb_s(b, "'");
}

/* ---- the script grammar ------------------------------------------------------ */

struct gen {
    struct input *in;
    struct sb *b;
    int locals;         /* v1..v<locals> are defined */
    int depth;
};

static const char *const numbers[] = {
    "0", "1", "-1", "3.99", "-3.99", "-0.5", "0.1", "1e100", "-1e308", "2^53",
    "2^53+1", "2^63", "-2^63", "2^31", "0/0", "1/0", "-1/0", "9007199254740993",
    "123456789012345678901234567890", "1e-320", "-0", "0x7fffffff", "4294967296",
    "100000", "2^1024",
};
static const char *const strings[] = {
    "''", "'x'", "'OK'", "'\\0'", "'a\\0b'", "'\\r\\n'", "'ERR x'", "'-ERR y'",
    "'WRONGTYPE z'", "'1'", "'-5'", "'1.5'", "'inf'", "'nan'", "'k'", "'{t}a'",
    "'9223372036854775807'", "'9223372036854775808'", "' 1'", "'0x10'",
    "'\\255\\254'", "'A\\nB c'", "'%d%s%%'", "'['", "'[[]]'", "'{}'",
    "'{\"a\":[1,2,{\"b\":null}]}'", "'txt'", "'return 1'", "'return x'",
    "'ok'", "'err'", "'double'", "'map'", "'set'",
};
static const char *const keys[] = {
    "'k'", "'k2'", "'{t}a'", "'h'", "'l'", "'z'", "''", "'\\0bin'", "KEYS[1]",
    "KEYS[2]", "ARGV[1]",
};
/* Commands a script may call, with their argument count drawn after. */
static const char *const commands[] = {
    "get", "set", "incr", "incrby", "incrbyfloat", "append", "del", "exists",
    "type", "expire", "pexpire", "ttl", "pttl", "persist", "mget", "mset",
    "getrange", "setrange", "strlen", "getdel", "getex", "setnx", "hset",
    "hget", "hgetall", "hincrby", "hincrbyfloat", "hdel", "hkeys", "hlen",
    "lpush", "rpush", "lpop", "rpop", "lrange", "llen", "lindex", "lset",
    "zadd", "zrange", "zscore", "zincrby", "zrem", "zcard", "zrangebyscore",
    "zpopmin", "rename", "copy", "move", "select", "dbsize", "ping", "echo",
    "keys", "scan", "hscan", "zscan", "flushdb", "info", "time", "randomkey",
    "cl.throttle", "rl.fixed", "gcra", "increx", "object", "memory",
    "command", "client", "config", "slowlog", "lastsave", "touch", "unlink",
    "rpoplpush", "lmpop", "zmpop", "blmpop", "bzmpop",
    /* refused in a script */
    "eval", "evalsha", "script", "multi", "exec", "watch", "subscribe",
    "shutdown", "monitor", "hello", "auth", "quit", "reset", "bgsave", "save",
    "debug", "sync", "replicaof", "blpop", "brpoplpush", "bzpopmax", "function",
    "fcall",
    /* unknown, odd */
    "nosuch", "", "GET", "Set", "get\\0",
};

static void expr(struct gen *g);

static void
args(struct gen *g, unsigned max)
{
    unsigned n = in_pick(g->in, max + 1);
    for (unsigned i = 0; i < n; i++) {
        sb_s(g->b, ", ");
        switch (in_pick(g->in, 8)) {
        case 0:
        case 1:
            sb_s(g->b, keys[in_pick(g->in, sizeof(keys) / sizeof(*keys))]);
            break;
        case 2:
        case 3:
            sb_s(g->b, strings[in_pick(g->in, sizeof(strings) / sizeof(*strings))]);
            break;
        case 4:
            sb_s(g->b, numbers[in_pick(g->in, sizeof(numbers) / sizeof(*numbers))]);
            break;
        case 5:
            sb_lua_bytes(g->b, g->in, 12);
            break;
        default:
            expr(g);
            break;
        }
    }
}

static void
call_expr(struct gen *g)
{
    static const char *const how[] = { "redis.call", "redis.pcall" };
    sb_s(g->b, how[in_pick(g->in, 2)]);
    sb_s(g->b, "(");
    unsigned c = in_pick(g->in, sizeof(commands) / sizeof(*commands) + 2);
    if (c < sizeof(commands) / sizeof(*commands)) {
        sb_f(g->b, "'%s'", commands[c]);
    } else if (c == sizeof(commands) / sizeof(*commands)) {
        expr(g);            /* a command name of any value */
    } else {
        sb_s(g->b, ")");    /* no arguments at all */
        return;
    }
    args(g, 6);
    sb_s(g->b, ")");
}

static void
table_expr(struct gen *g)
{
    switch (in_pick(g->in, 14)) {
    case 0:
        sb_s(g->b, "{}");
        return;
    case 1:
        sb_s(g->b, "{ok=");
        expr(g);
        sb_s(g->b, "}");
        return;
    case 2:
        sb_s(g->b, "{err=");
        expr(g);
        sb_s(g->b, "}");
        return;
    case 3:
        sb_s(g->b, "{double=");
        expr(g);
        sb_s(g->b, "}");
        return;
    case 4:
        sb_s(g->b, "{map={");
        for (unsigned i = in_pick(g->in, 4); i > 0; i--) {
            sb_s(g->b, "[");
            expr(g);
            sb_s(g->b, "]=");
            expr(g);
            sb_s(g->b, ", ");
        }
        sb_s(g->b, "}}");
        return;
    case 5:
        sb_s(g->b, "{set={");
        for (unsigned i = in_pick(g->in, 4); i > 0; i--) {
            sb_s(g->b, "[");
            expr(g);
            sb_s(g->b, "]=");
            expr(g);
            sb_s(g->b, ", ");
        }
        sb_s(g->b, "}}");
        return;
    case 6:
        sb_s(g->b, "{big_number=");
        expr(g);
        sb_s(g->b, "}");
        return;
    case 7:
        sb_s(g->b, "{verbatim_string={format=");
        expr(g);
        sb_s(g->b, ", string=");
        expr(g);
        sb_s(g->b, "}}");
        return;
    case 8: {   /* metamethods that raise, wherever the engine reads */
        static const char *const metas[] = {
            "__index=function() error('meta') end, ",
            "__newindex=function() error('newindex') end, ",
            "__tostring=function() return {} end, ",
            "__tostring=function() error('ts') end, ",
            "__len=function() error('len') end, ",
            "__index=function(t, k) return t[k] end, ",
            "__concat=function() error('cat') end, ",
            "__eq=function() error('eq') end, __lt=function() error('lt') end, ",
            "__metatable=false, ",
        };
        sb_s(g->b, "setmetatable({");
        if (in_pick(g->in, 2)) {
            sb_s(g->b, (const char *const[]){ "err=", "ok=", "double=", "map=",
                                              "set=" }[in_pick(g->in, 5)]);
        }
        expr(g);
        sb_s(g->b, "}, {");
        for (unsigned i = 1 + in_pick(g->in, 3); i > 0; i--) {
            sb_s(g->b, metas[in_pick(g->in, sizeof(metas) / sizeof(*metas))]);
        }
        sb_s(g->b, "})");
        return;
    }
    default:
        sb_s(g->b, "{");
        for (unsigned i = in_pick(g->in, 6); i > 0; i--) {
            if (in_pick(g->in, 5) == 0) {
                sb_s(g->b, "nil");
            } else {
                expr(g);
            }
            sb_s(g->b, ", ");
        }
        sb_s(g->b, "}");
        return;
    }
}

static void
expr(struct gen *g)
{
    struct input *in = g->in;
    struct sb *b = g->b;
    if (g->depth >= MAX_DEPTH || in->n == 0) {
        sb_s(b, numbers[in_pick(in, 6)]);
        return;
    }
    g->depth++;
    switch (in_pick(in, 26)) {
    case 0:
    case 1:
        sb_s(b, numbers[in_pick(in, sizeof(numbers) / sizeof(*numbers))]);
        break;
    case 2:
    case 3:
        sb_s(b, strings[in_pick(in, sizeof(strings) / sizeof(*strings))]);
        break;
    case 4:
        sb_lua_bytes(b, in, 24);
        break;
    case 5:
        sb_s(b, (const char *const[]){ "true", "false", "nil" }[in_pick(in, 3)]);
        break;
    case 6:
    case 7:
    case 8:
        table_expr(g);
        break;
    case 9:
    case 10:
        call_expr(g);
        break;
    case 11:
        sb_s(b, (const char *const[]){ "redis.status_reply(", "redis.error_reply(",
                                       "redis.sha1hex(", "tostring(", "tonumber(",
                                       "type(", "cjson.encode(", "cjson.decode(",
                                       "#(", "-(", "not (", "bit.tobit(",
                                       "string.upper(", "math.floor(" }[in_pick(in, 14)]);
        expr(g);
        sb_s(b, ")");
        break;
    case 12:
        sb_s(b, "(");
        expr(g);
        sb_s(b, (const char *const[]){ " .. ", " + ", " * ", " / ", " % ", " ^ ",
                                       " == ", " < ", " and ", " or " }[in_pick(in, 10)]);
        expr(g);
        sb_s(b, ")");
        break;
    case 13:
        if (g->locals > 0) {
            sb_f(b, "v%d", 1 + (int)in_pick(in, (unsigned)g->locals));
        } else {
            sb_s(b, "KEYS");
        }
        break;
    case 14:
        sb_s(b, (const char *const[]){ "KEYS", "ARGV", "#KEYS", "#ARGV", "KEYS[1]",
                                       "ARGV[2]", "_G", "redis", "string",
                                       "redis.REDIS_VERSION", "_VERSION",
                                       "redis.LOG_WARNING" }[in_pick(in, 12)]);
        break;
    case 15:
        sb_s(b, "string.rep(");
        expr(g);
        sb_s(b, ", ");
        sb_s(b, (const char *const[]){ "0", "1", "3", "1000", "100000", "1e6", "1e7",
                                       "2^31", "2^53", "-1", "0/0", "1e308" }[in_pick(in, 12)]);
        sb_s(b, ")");
        break;
    case 16:
        sb_s(b, "select(2, pcall(");
        sb_s(b, (const char *const[]){ "error", "redis.call", "redis.error_reply",
                                       "cjson.decode", "string.rep", "unpack",
                                       "loadstring", "tostring", "setmetatable",
                                       "rawset", "table.concat", "redis.setresp" }[in_pick(in, 12)]);
        args(g, 3);
        sb_s(b, "))");
        break;
    case 17:
        sb_s(b, "(function() local ok, e = pcall(function() return ");
        expr(g);
        sb_s(b, " end) return e end)()");
        break;
    case 18:
        sb_s(b, "string.format(");
        sb_s(b, (const char *const[]){ "'%d'", "'%s'", "'%.17g'", "'%5.2f'", "'%q'",
                                       "'%x'", "'%c'", "'%99d'", "'%-5s|'" }[in_pick(in, 9)]);
        args(g, 2);
        sb_s(b, ")");
        break;
    case 19:
        sb_s(b, "{unpack(");
        table_expr(g);
        sb_s(b, (const char *const[]){ ")}", ", 1, 3)}", ", -2, 2)}", ", 1, 1e6)}",
                                       ", 1, 2^31)}", ", -2^31, 2^31)}" }[in_pick(in, 6)]);
        break;
    case 20:
        sb_s(b, "string.sub(");
        expr(g);
        sb_s(b, ", ");
        sb_s(b, numbers[in_pick(in, sizeof(numbers) / sizeof(*numbers))]);
        sb_s(b, ", ");
        sb_s(b, numbers[in_pick(in, sizeof(numbers) / sizeof(*numbers))]);
        sb_s(b, ")");
        break;
    case 21:
        sb_s(b, "table.concat(");
        table_expr(g);
        sb_s(b, ", ");
        expr(g);
        sb_s(b, ")");
        break;
    case 22:
        sb_s(b, "coroutine.wrap(function() return ");
        expr(g);
        sb_s(b, " end)()");
        break;
    case 23:
        sb_s(b, "(loadstring(");
        expr(g);
        sb_s(b, ") or function() return 'bad' end)()");
        break;
    case 24:
        sb_s(b, "redis.setresp(");
        sb_s(b, (const char *const[]){ "2", "3", "1", "'3'", "nil", "3.5" }[in_pick(in, 6)]);
        sb_s(b, ")");
        break;
    default:
        sb_s(b, (const char *const[]){ "rawget(_G, 'redis')", "getmetatable('')",
                                       "select('#', 1, nil, 3)", "math.huge",
                                       "-math.huge", "math.pi", "bit.band(-1, 0xff)",
                                       "math.fmod(5, 0)", "string.byte('abc', -1, 10)",
                                       "gcinfo() * 0", "collectgarbage('count') * 0",
                                       "redis.sha1hex('')" }[in_pick(in, 12)]);
        break;
    }
    g->depth--;
}

/* cmsgpack: pack of any value (tables deep and cyclic too), unpack of
 * raw bytes, huge declared counts and deep nesting, the offsets. */
static void
msgpack_stmt(struct gen *g)
{
    struct input *in = g->in;
    struct sb *b = g->b;
    static const char *const offsets[] = { "0", "1", "2", "-1", "1e9", "2^40", "'x'", "1.5" };
    sb_f(b, "local v%d = {pcall(", ++g->locals);
    switch (in_pick(in, 6)) {
    case 0:
        sb_s(b, "cmsgpack.pack, ");
        expr(g);
        sb_s(b, ", ");
        table_expr(g);
        break;
    case 1:
        sb_s(b, "function() return cmsgpack.unpack(cmsgpack.pack(");
        table_expr(g);
        sb_s(b, ", ");
        expr(g);
        sb_s(b, ")) end");
        break;
    case 2:
        sb_s(b, "cmsgpack.unpack, ");
        sb_lua_bytes(b, in, 40);
        break;
    case 3:
        sb_s(b, "cmsgpack.unpack_one, ");
        sb_lua_bytes(b, in, 24);
        sb_f(b, ", %s", offsets[in_pick(in, 8)]);
        break;
    case 4:
        sb_s(b, "cmsgpack.unpack_limit, ");
        sb_lua_bytes(b, in, 24);
        sb_f(b, ", %s, %s", offsets[in_pick(in, 8)], offsets[in_pick(in, 8)]);
        break;
    default:
        sb_s(b, "cmsgpack.unpack, string.rep(");
        sb_s(b, (const char *const[]){ "'\\221\\255\\255\\255\\255'", "'\\145'",
                                       "'\\220\\255\\255'", "'\\129\\1'",
                                       "'\\1'", "'\\144'" }[in_pick(in, 6)]);
        sb_f(b, ", %d)", 1 + (int)in_u16(in) % 12000);
        break;
    }
    sb_s(b, ")}");
}

/* A struct format of a few options, sizes and alignments included. */
static void
struct_format(struct gen *g)
{
    static const char *const options[] = {
        "<", ">", "!", "!4", "!3", " ", "b", "B", "h", "H", "l", "L", "T", "i", "I",
        "i3", "I16", "i40", "f", "d", "x", "c", "c0", "c2", "s", "z", "=", "i0",
    };
    unsigned n = 1 + in_pick(g->in, 6);
    sb_s(g->b, "'");
    for (unsigned i = 0; i < n; i++) {
        sb_s(g->b, options[in_pick(g->in, sizeof options / sizeof options[0])]);
    }
    sb_s(g->b, "'");
}

/* struct: pack of any values, unpack of raw bytes at any position,
 * size, and round trips. */
static void
struct_stmt(struct gen *g)
{
    struct input *in = g->in;
    struct sb *b = g->b;
    sb_f(b, "local v%d = {pcall(", ++g->locals);
    switch (in_pick(in, 4)) {
    case 0:
        sb_s(b, "struct.pack, ");
        struct_format(g);
        for (unsigned i = in_pick(in, 4); i > 0; i--) {
            sb_s(b, ", ");
            expr(g);
        }
        break;
    case 1:
        sb_s(b, "struct.unpack, ");
        struct_format(g);
        sb_s(b, ", ");
        sb_lua_bytes(b, in, 40);
        sb_s(b, (const char *const[]){ "", ", 1", ", 3", ", 0", ", -1", ", 1e9" }[in_pick(in, 6)]);
        break;
    case 2:
        sb_s(b, "struct.size, ");
        struct_format(g);
        break;
    default:
        sb_s(b, "function() local f = ");
        struct_format(g);
        sb_s(b, " return struct.unpack(f, struct.pack(f, 1, -2, 'abc', 2^40, 0.5)) end");
        break;
    }
    sb_s(b, ")}");
}

/* A statement; locals it defines are v<n>. */
static void
stmt(struct gen *g)
{
    struct input *in = g->in;
    struct sb *b = g->b;
    g->depth = 0;
    switch (in_pick(in, 32)) {
    case 0:
    case 1:
    case 2:
    case 3:
        sb_f(b, "local v%d = ", ++g->locals);
        expr(g);
        break;
    case 4:
    case 5:
        call_expr(g);
        break;
    case 6: {       /* a bounded loop */
        static const int trips[] = { 1, 10, 100, 1000, 10000, 100000 };
        sb_f(b, "for i = 1, %d do ", trips[in_pick(in, 6)]);
        switch (in_pick(in, 4)) {
        case 0:
            sb_s(b, "redis.call('incr', 'loop') ");
            break;
        case 1:
            sb_s(b, "local x = i .. 'abc' ");
            break;
        case 2:
            sb_s(b, "redis.pcall('hset', 'lh', i % 700, i) ");
            break;
        default:
            sb_s(b, "local t = {i, i * 2, x = i} ");
            break;
        }
        sb_s(b, "end");
        break;
    }
    case 7: {       /* a huge table */
        static const int sizes[] = { 10, 1000, 100000, 300000, 1000000 };
        g->locals++;
        sb_f(b, "local v%d = {} for i = 1, %d do v%d[i] = ", g->locals,
             sizes[in_pick(in, 5)], g->locals);
        sb_s(b, (const char *const[]){ "i", "'x' .. i", "{i}", "i + 0.5",
                                       "string.rep('y', 100)" }[in_pick(in, 5)]);
        sb_s(b, " end");
        break;
    }
    case 8: {       /* a deep table */
        static const int depths[] = { 10, 500, 1000, 7990, 7996, 10000, 50000 };
        sb_f(b, "local v%d = ", ++g->locals);
        expr(g);
        sb_f(b, " for i = 1, %d do v%d = ", depths[in_pick(in, 7)], g->locals);
        static const char *const wraps[][2] = { { "{", "}" }, { "{map={a=", "}}" },
                                                { "{set={[", "]=true}}" },
                                                { "{1, ", ", 2}" }, { "{double=1, ", "}" } };
        unsigned w = in_pick(in, 5);
        sb_f(b, "%sv%d%s", wraps[w][0], g->locals, wraps[w][1]);
        sb_s(b, " end");
        break;
    }
    case 9: {       /* recursion */
        static const int depths[] = { 10, 150, 250, 1000, 19000, 30000, 200000 };
        int d = depths[in_pick(in, 7)];
        switch (in_pick(in, 4)) {
        case 0:
            sb_f(b, "local function f(n) if n <= 0 then return 0 end "
                    "return 1 + f(n - 1) end local v%d = f(%d)", ++g->locals, d);
            break;
        case 1:
            sb_f(b, "local function f(n) if n <= 0 then return {} end "
                    "return {f(n - 1)} end local v%d = f(%d)", ++g->locals, d);
            break;
        case 2:
            sb_f(b, "local function f(n) if n <= 0 then return 1 end "
                    "return select(2, pcall(f, n - 1)) end local v%d = f(%d)",
                 ++g->locals, d < 1000 ? d : 300);
            break;
        default:
            sb_f(b, "local function f(n) if n <= 0 then return redis.call('ping') end "
                    "return f(n - 1) end local v%d = f(%d)", ++g->locals, d);
            break;
        }
        break;
    }
    case 10:
        sb_f(b, "local v%d = string.rep(", ++g->locals);
        sb_s(b, (const char *const[]){ "'x'", "'abc'", "''", "'\\0'" }[in_pick(in, 4)]);
        sb_s(b, ", ");
        sb_s(b, (const char *const[]){ "1e5", "1e6", "4e6", "9e6", "2^30", "2^40",
                                       "-5", "0/0" }[in_pick(in, 8)]);
        sb_s(b, ")");
        break;
    case 11:        /* cjson of deep structures */
        switch (in_pick(in, 4)) {
        case 0:
            sb_f(b, "local v%d = cjson.decode(string.rep('[', %d) .. string.rep(']', %d))",
                 ++g->locals, (int)in_u16(in) % 3000, (int)in_u16(in) % 3000);
            break;
        case 1:
            sb_f(b, "local v%d = {} for i = 1, %d do v%d = {v%d} end v%d = cjson.encode(v%d)",
                 g->locals + 1, (int)in_u16(in) % 3000, g->locals + 1, g->locals + 1,
                 g->locals + 1, g->locals + 1);
            g->locals++;
            break;
        case 2:
            sb_f(b, "local v%d = cjson.decode(", ++g->locals);
            sb_lua_bytes(b, in, 40);
            sb_s(b, ")");
            break;
        default:
            sb_f(b, "local v%d = cjson.encode(", ++g->locals);
            table_expr(g);
            sb_s(b, ")");
            break;
        }
        break;
    case 12:        /* errors */
    {
        unsigned k = in_pick(in, 4);
        sb_s(b, (const char *const[]){ "error(", "error({err=", "error(redis.error_reply(",
                                       "assert(false, " }[k]);
        expr(g);
        sb_s(b, (const char *const[]){ ")", "})", "))", ")" }[k]);
        break;
    }
    case 13:
        sb_s(b, (const char *const[]){ "local x = nil + 1", "local x = nil .. 'a'",
                                       "local x = ({}).a.b", "nosuch()",
                                       "local x = #nil", "error()", "error(nil)",
                                       "error({})", "error(setmetatable({}, {__tostring="
                                       "function() return 'ts' end}))",
                                       "error('lvl', 2)", "error('lvl0', 0)",
                                       "error(42)" }[in_pick(in, 12)]);
        break;
    case 14:        /* the sandbox */
        sb_s(b, (const char *const[]){ "x = 1", "_G.x = 1", "redis = nil", "string.x = 1",
                                       "rawset(_G, 'x', 1)", "setmetatable(_G, nil)",
                                       "getmetatable('').__index = {}",
                                       "table.insert(string, 'x')", "local x = foo",
                                       "function g() end", "redis.call = nil",
                                       "KEYS[1] = 'x'", "local x = loadstring('x = 1')()",
                                       "local x = print", "local x = os",
                                       "local x = require" }[in_pick(in, 16)]);
        break;
    case 15: {
        int save = g->locals;
        sb_s(b, "pcall(function() ");
        stmt(g);
        sb_s(b, " end)");
        g->locals = save;
        break;
    }
    case 16: {
        int save = g->locals;
        sb_f(b, "local v%d = {xpcall(function() ", save + 1);
        stmt(g);
        g->locals = save + 1;
        sb_s(b, " end, function(e) return {e} end)}");
        break;
    }
    case 17:
        sb_s(b, "redis.setresp(");
        sb_s(b, (const char *const[]){ "3", "2", "3", "4", "0", "'x'", "" }[in_pick(in, 7)]);
        sb_s(b, ")");
        break;
    case 18:
        sb_s(b, (const char *const[]){ "redis.set_repl(redis.REPL_ALL)",
                                       "redis.set_repl(99)", "redis.replicate_commands()",
                                       "redis.breakpoint()", "redis.debug('x')",
                                       "redis.log(redis.LOG_DEBUG, 'x')", "redis.log()",
                                       "redis.log(99, 'x')", "redis.acl_check_cmd('get', 'k')",
                                       "redis.acl_check_cmd()", "redis.acl_check_cmd('nosuch')",
                                       "math.randomseed(1)", "local x = math.random(10)",
                                       "local x = math.random()" }[in_pick(in, 14)]);
        break;
    case 19: {      /* a coroutine that calls the server */
        sb_f(b, "local co = coroutine.create(function(...) ");
        call_expr(g);
        sb_s(b, " coroutine.yield(1) ");
        call_expr(g);
        sb_f(b, " end) local v%d = {coroutine.resume(co)} coroutine.resume(co)",
             ++g->locals);
        break;
    }
    case 20:
        sb_s(b, "table.sort(");
        table_expr(g);
        sb_s(b, (const char *const[]){ ")", ", function(a, b) error('cmp') end)",
                                       ", function(a, b) return true end)" }[in_pick(in, 3)]);
        break;
    case 21:
        sb_f(b, "local v%d = {unpack({}, 1, ", ++g->locals);
        sb_s(b, (const char *const[]){ "1e4", "1e6", "2^31 - 1", "2^31", "-2^31" }[in_pick(in, 5)]);
        sb_s(b, ")}");
        break;
    case 22:
        sb_f(b, "local v%d = string.gsub(string.rep('ab', 1000), ", ++g->locals);
        sb_s(b, (const char *const[]){ "'a'", "'(a)(b)'", "'%w+'", "'.-b'", "'[a-'",
                                       "'%'", "'()'" }[in_pick(in, 7)]);
        sb_s(b, ", ");
        sb_s(b, (const char *const[]){ "'%1%1'", "'x'", "'%9'", "{}", "function(s) "
                                       "return nil end", "'%%'" }[in_pick(in, 6)]);
        sb_s(b, ")");
        break;
    case 23:
        sb_f(b, "local v%d = 0 for i = 1, %d do v%d = v%d + #redis.call('lrange', 'l', 0, -1) end",
             g->locals + 1, 1 + (int)in_pick(in, 50), g->locals + 1, g->locals + 1);
        g->locals++;
        break;
    case 24:
        msgpack_stmt(g);
        break;
    case 25:
        struct_stmt(g);
        break;
    default:
        sb_f(b, "local v%d = ", ++g->locals);
        expr(g);
        break;
    }
    sb_s(b, "\n");
}

static void
gen_script(struct input *in, struct sb *b)
{
    struct gen g = { in, b, 0, 0 };
    if (in_pick(in, 16) == 0) {
        sb_s(b, (const char *const[]){ "#!lua\n", "#!lua flags=no-writes\n",
                                       "#!lua flags=allow-oom,no-cluster\n",
                                       "#!lua flags=bogus\n", "#!luax\n",
                                       "#!lua name=x\n" }[in_pick(in, 6)]);
    }
    unsigned n = in_pick(in, MAX_STMTS + 1);
    for (unsigned i = 0; i < n && in->n > 0; i++) {
        stmt(&g);
    }
    sb_s(b, "return ");
    g.depth = in_pick(in, 2);
    expr(&g);
    if (in_pick(in, 4) == 0) {
        sb_s(b, ", ");
        expr(&g);
    }
}

/* Raw bytes as a script: the lexer, the parser and whatever short code
 * comes out. Nothing that could loop or backtrack for long (see the TODO
 * above): no loops, no functions, no patterns, no string.rep. */
static bool
raw_script(struct input *in, struct sb *b)
{
    size_t n = in_pick(in, 255) + 1;
    if (n > in->n) {
        n = in->n;
    }
    sb_add(b, (const char *)in->p, n);
    in->p += n;
    in->n -= n;
    static const char *const banned[] = {
        "while", "repeat", "for", "function", "goto", "load", "rep", "find",
        "match", "gsub", "gmatch", "pcall", "coroutine", "sort", "unpack",
        "concat", "dofile", "\\",
    };
    for (size_t i = 0; i < sizeof(banned) / sizeof(*banned); i++) {
        if (memmem(b->p, b->len, banned[i], strlen(banned[i])) != NULL) {
            return false;
        }
    }
    return true;
}

/* ---- the server ------------------------------------------------------------- */

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void
remove_snapdir(void)
{
    (void)nftw(snapdir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void
remove_journal_files(void)
{
    char dir[sizeof(snapdir) + 32], path[sizeof(dir) + 300];
    snprintf(dir, sizeof(dir), "%s/appendonlydir", snapdir);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            CHECK(unlink(path) == 0);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

static void
set_string(char **slot, const char *value)
{
    free(*slot);
    *slot = strdup(value);
    CHECK(*slot != NULL);
}

static void
fresh_server(void)
{
    conf_deinit(&srv.conf);
    CHECK(conf_init(&srv.conf) == 0);
    set_string(&srv.conf.dir, snapdir);
    set_string(&srv.conf.dbfilename, "fuzz.snap");
    srv.conf.loglevel = LOGLEVEL_WARNING;
    srv.conf.lua_memory_limit = LUA_LIMIT;
    log_set_level(LOG_WARNING);
    memset(&srv.stats, 0, sizeof(srv.stats));
    cmd_reset_stats();
    server_apply_limits();
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    unsigned char seed[16] = { 0 };
    CHECK(keyspace_init(seed, T0) == 0);
    srv.conf.appendonly = 1;
    char err[512];
    CHECK(persist_open(err, sizeof(err)) == 0);

    client = mem_calloc(1, sizeof(*client));
    CHECK(client != NULL);
    client->authenticated = true;
    client->parser = resp_create(&srv.limits);
    CHECK(client->parser != NULL);
    obuf_init(&client->out);
    client->proto = 2;
    client->id = 1;
    client->state = CONN_READING;
    snprintf(client->addr, sizeof(client->addr), "127.0.0.1:1");
    srv.clients = client;
    srv.nclients = 1;
}

static void
retire_server(void)
{
    multi_discard(client);
    script_teardown();
    persist_close();
    keyspace_teardown();
    remove_journal_files();
    resp_destroy(&client->parser);
    obuf_deinit(&client->out);
    mem_free(client->name);
    mem_free(client->lib_name);
    mem_free(client->lib_ver);
    mem_free(client);
    client = NULL;
    srv.clients = NULL;
    srv.nclients = 0;
    slowlog_teardown();
    topdenied_teardown();
    cluster_teardown();
}

/* ---- RESP replies (as fuzz_cmd.c reads them) ---------------------------- */

/* One line [p, CRLF): its length, or SIZE_MAX if incomplete or holding a
 * lone CR or LF. */
static size_t
line_len(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i] == '\r') {
            return p[i + 1] == '\n' ? i : SIZE_MAX;
        }
        if (p[i] == '\n') {
            return SIZE_MAX;
        }
    }
    return SIZE_MAX;
}

/* A RESP integer: an optional '-', then 1 to 19 digits, within int64
 * (INT64_MIN included). */
static bool
parse_int(const char *p, size_t n, int64_t *v)
{
    bool neg = n > 0 && p[0] == '-';
    size_t i = neg;
    uint64_t x = 0;
    if (n == i || n - i > 19) {
        return false;
    }
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return false;
        }
        x = x * 10 + (uint64_t)(p[i] - '0');     /* 19 digits: no wrap */
    }
    if (x > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) {
        return false;
    }
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return true;
}

/* The length of one RESP value at p (nested up to 10000 deep: a
 * script's reply may nest 7995 deep), or 0 when it is not exactly one
 * well-formed value. */
static size_t
resp_value(const char *p, size_t n, bool resp3, int depth)
{
    int64_t v;
    if (n < 3 || depth > 10000) {
        return 0;
    }
    size_t ll = line_len(p + 1, n - 1);
    if (ll == SIZE_MAX) {
        return 0;
    }
    size_t head = 1 + ll + 2;
    const char *body = p + 1;
    char t = p[0];
    if (!resp3 && strchr("_,#!=(%~>|", t) != NULL) {
        return 0;
    }
    switch (t) {
    case '+':
    case '-':
        return head;
    case ':':
        return parse_int(body, ll, &v) ? head : 0;
    case '_':
        return ll == 0 ? head : 0;
    case '#':
        return ll == 1 && (body[0] == 't' || body[0] == 'f') ? head : 0;
    case ',':
        return ll > 0 ? head : 0;
    case '(':
        return head;    /* {big_number=''} is "(\r\n" in Redis too */
    case '$':
    case '!':
    case '=':
        if (!parse_int(body, ll, &v) || v < -1 || (v == -1 && t != '$')) {
            return 0;
        }
        if (v == -1) {
            return resp3 ? 0 : head;    /* RESP3 has _ for null */
        }
        if ((uint64_t)v > n - head || n - head - (size_t)v < 2 ||
            p[head + v] != '\r' || p[head + v + 1] != '\n' ||
            (t == '=' && (v < 4 || p[head + 3] != ':'))) {
            return 0;
        }
        return head + (size_t)v + 2;
    case '*':
    case '%':
    case '~':
    case '>':
    case '|': {
        if (!parse_int(body, ll, &v) || v < -1 || (v == -1 && t != '*') ||
            (v == -1 && resp3)) {
            return 0;
        }
        size_t at = head;
        int64_t items = t == '%' || t == '|' ? 2 * v : v;
        for (int64_t i = 0; i < items; i++) {
            size_t k = resp_value(p + at, n - at, resp3, depth + 1);
            if (k == 0) {
                return 0;
            }
            at += k;
        }
        return at;
    }
    default:
        return 0;
    }
}

/* The request's reply, checked: one whole RESP value. Its bytes to out
 * (the first 40 of them) when out is not NULL. */
static void
run(size_t argc, char **argv, size_t *len, char *out, size_t outlen)
{
    struct resp_request req = { argc, argv, len, 0 };
    int proto = client->proto;
    client->hint.valid = false;
    cmd_batch_begin();
    cmd_execute(client, &req);
    CHECK(mem_used() < (size_t)1 << 46);

    size_t n = obuf_pending(&client->out);
    char *reply = malloc(n ? n : 1);
    CHECK(reply != NULL);
    struct iovec iov[64];
    size_t got = 0, bytes;
    while (got < n) {
        size_t k = obuf_iov(&client->out, 0, iov, 64, &bytes);
        CHECK(k > 0);
        for (size_t i = 0; i < k; i++) {
            memcpy(reply + got, iov[i].iov_base, iov[i].iov_len);
            got += iov[i].iov_len;
        }
        obuf_consume(&client->out, bytes);
    }
    if (trace) {
        size_t shown = argc > 2 && strcmp(argv[0], "SCRIPT") == 0 ? 2 : argc > 1;
        fprintf(stderr, "> %s %.*s\n  -> %.*s\n", argv[0], (int)len[shown],
                argv[shown], (int)(n < 300 ? n : 300), reply);
    }
    CHECK(n > 0 && resp_value(reply, n, proto == 3 || client->proto == 3, 0) == n);
    if (out != NULL) {
        size_t m = n < outlen ? n : outlen;
        memcpy(out, reply, m);
        out[m < outlen ? m : outlen - 1] = '\0';
    }
    keyspace_publish();
    persist_before_replies();
    free(reply);
}

static void
run_words(const char *const *words, size_t argc)
{
    char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    for (size_t i = 0; i < argc; i++) {
        argv[i] = (char *)words[i];
        len[i] = strlen(words[i]);
    }
    run(argc, argv, len, NULL, 0);
}

/* ---- the program ------------------------------------------------------------ */

static char shas[4][41];

static void
eval(struct input *in, const char *cmd, const char *body, size_t bodylen)
{
    char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    size_t argc = 0;
    argv[argc] = (char *)cmd;
    len[argc++] = strlen(cmd);
    argv[argc] = (char *)body;
    len[argc++] = bodylen;
    /* mostly a right count of keys, a wrong one now and then */
    static const char *const nk[] = { "0", "1", "2", "3", "-1", "x", "99" };
    unsigned k = in_pick(in, 16);
    k = k < 13 ? k % 4 : k - 9;
    const char *numkeys = nk[k];
    argv[argc] = (char *)numkeys;
    len[argc++] = strlen(numkeys);
    static const char *const words[] = { "k", "k2", "{t}a", "h", "l", "z", "",
                                         "1", "-1", "3.5", "x", "lh" };
    unsigned extra = (k < 4 ? k : 0) + in_pick(in, 4);
    for (unsigned i = 0; i < extra; i++) {
        const char *w = words[in_pick(in, sizeof(words) / sizeof(*words))];
        argv[argc] = (char *)w;
        len[argc++] = strlen(w);
    }
    run(argc, argv, len, NULL, 0);
    /* lua-memory-limit held: past it only by the KEYS and ARGV tables and
     * the error reply, made outside the script's protected call */
    CHECK(script_lua_memory() <= (size_t)LUA_LIMIT + ((size_t)1 << 20));
}

/* FUNCTION LOAD [REPLACE] of a library of one of four names registering
 * a function of a generated body (a callback's keys and args its
 * arguments), in either form, with drawn flags, now and then with a
 * generated statement run while it loads (the load-time sandbox). */
static void
function_load(struct input *in)
{
    struct sb b = { 0 };
    unsigned n = in_pick(in, 4);
    char head[64];
    snprintf(head, sizeof(head), "#!lua name=%s\n",
             in_pick(in, 16) ? (const char *const[]){ "la", "lb", "lc",
                                                     "ld" }[n]
                             : "bad-name");
    sb_s(&b, head);
    if (in_pick(in, 8) == 0) {
        struct gen g = { in, &b, 0, 0 };
        stmt(&g);
        sb_s(&b, "\n");
    }
    static const char *const flags[] = {
        "", "'no-writes'", "'allow-oom'", "'no-writes', 'allow-stale'",
        "'no-cluster'", "'allow-cross-slot-keys'", "'bogus'", "1",
    };
    char reg[160];
    bool named = in_pick(in, 2);
    if (named) {
        snprintf(reg, sizeof(reg), "redis.register_function{function_name="
                 "'f%u', flags={%s}, callback=function(keys, args) ", n,
                 flags[in_pick(in, 8)]);
    } else {
        snprintf(reg, sizeof(reg), "redis.register_function('f%u', "
                 "function(keys, args) ", n);
    }
    sb_s(&b, reg);
    gen_script(in, &b);
    sb_s(&b, named ? " end}" : " end)");
    bool replace = in_pick(in, 2);
    char *argv[4] = { (char *)"FUNCTION", (char *)"LOAD", (char *)"REPLACE",
                      b.p };
    size_t len[4] = { 8, 4, 7, b.len };
    if (!replace) {
        argv[2] = b.p;
        len[2] = b.len;
    }
    run(replace ? 4 : 3, argv, len, NULL, 0);
    free(b.p);
}

/* The other FUNCTION subcommands, and a dump restored whole or damaged. */
static void
function_admin(struct input *in)
{
    static const char *const names[] = { "la", "lb", "lc", "ld", "nope" };
    switch (in_pick(in, 6)) {
    case 0:
        run_words((const char *const[]){ "FUNCTION", "DELETE",
                                         names[in_pick(in, 5)] }, 3);
        break;
    case 1:
        if (in_pick(in, 4) == 0) {
            run_words((const char *const[]){ "FUNCTION", "FLUSH" }, 2);
        }
        break;
    case 2:
        run_words((const char *const[]){ "FUNCTION", "LIST", "WITHCODE",
                                         "LIBRARYNAME", "l*" },
                  2 + in_pick(in, 4));
        break;
    case 3:
        run_words((const char *const[]){ "FUNCTION", "STATS" }, 2);
        break;
    default: {
        static char dump[1 << 16];
        char *argv[4] = { (char *)"FUNCTION", (char *)"DUMP" };
        size_t lens[4] = { 8, 4 };
        run(2, argv, lens, dump, sizeof(dump));
        /* The bulk's bytes: "$<len>\r\n" then len bytes, when whole. */
        char *body = strstr(dump, "\r\n");
        long len = dump[0] == '$' ? strtol(dump + 1, NULL, 10) : -1;
        if (body == NULL || len < 0 ||
            (size_t)len + (size_t)(body + 2 - dump) + 2 > sizeof(dump)) {
            break;
        }
        if (len > 0 && in_pick(in, 3) == 0) {
            body[2 + in_pick(in, (unsigned)len)] ^= 1;      /* damaged */
        }
        argv[1] = (char *)"RESTORE";
        lens[1] = 7;
        argv[2] = body + 2;
        lens[2] = (size_t)len;
        argv[3] = (char *)(const char *const[]){ "APPEND", "REPLACE",
                                                 "FLUSH" }[in_pick(in, 3)];
        lens[3] = strlen(argv[3]);
        run(4, argv, lens, NULL, 0);
        break;
    }
    }
}

static void
run_op(struct input *in)
{
    struct sb b = { 0 };
    switch (in_pick(in, 20)) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
        gen_script(in, &b);
        eval(in, "EVAL", b.p, b.len);
        break;
    case 6:
        gen_script(in, &b);
        eval(in, "EVAL_RO", b.p, b.len);
        break;
    case 7: {
        gen_script(in, &b);
        char *argv[3] = { (char *)"SCRIPT", (char *)"LOAD", b.p };
        size_t len[3] = { 6, 4, b.len };
        char out[64];
        run(3, argv, len, out, sizeof(out));
        if (strncmp(out, "$40\r\n", 5) == 0) {
            memcpy(shas[in_pick(in, 4)], out + 5, 40);
        }
        break;
    }
    case 8: {
        unsigned i = in_pick(in, 5);
        const char *sha = i < 4 && shas[i][0] ? shas[i]
                          : "0000000000000000000000000000000000000000";
        eval(in, in_pick(in, 2) ? "EVALSHA" : "EVALSHA_RO", sha, strlen(sha));
        break;
    }
    case 9: {
        const char *w[] = { "SCRIPT", "EXISTS", shas[0], shas[1], "nope", shas[2] };
        run_words(w, 2 + 1 + in_pick(in, 4));
        break;
    }
    case 10:
        if (in_pick(in, 4) == 0) {
            run_words((const char *const[]){ "SCRIPT", "FLUSH" }, 2);
        }
        break;
    case 11:
        run_words((const char *const[]){ "HELLO", in_pick(in, 2) ? "3" : "2" }, 2);
        break;
    case 12:
        run_words((const char *const[]){ "SELECT", in_pick(in, 4) ? "0" : "1" }, 2);
        break;
    case 13: {
        static const char *const writes[][5] = {
            { "SET", "k", "5" }, { "HSET", "h", "f", "1.5" }, { "LPUSH", "l", "a", "b" },
            { "ZADD", "z", "1", "m" }, { "SET", "{t}a", "text" }, { "HSET", "k2", "f", "v" },
            { "DEL", "k", "h", "l" }, { "CL.THROTTLE", "k2", "5", "10", "60" },
        };
        unsigned i = in_pick(in, 8);
        size_t argc = 0;
        while (argc < 5 && writes[i][argc] != NULL) {
            argc++;
        }
        run_words(writes[i], argc);
        break;
    }
    case 16:
        function_load(in);
        break;
    case 17: {
        const char *f = (const char *const[]){ "f0", "f1", "f2", "f3",
                                               "nope" }[in_pick(in, 5)];
        eval(in, in_pick(in, 3) ? "FCALL" : "FCALL_RO", f, strlen(f));
        break;
    }
    case 18:
        function_admin(in);
        break;
    default:
        if (raw_script(in, &b)) {
            eval(in, "EVAL", b.p, b.len);
        }
        break;
    }
    free(b.p);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(snapdir, sizeof(snapdir), "%s/cellgate-fuzzscript-XXXXXX", base);
    CHECK(mkdtemp(snapdir) != NULL);
    CHECK(atexit(remove_snapdir) == 0);
    CHECK(conf_init(&srv.conf) == 0);
    srv.loop = uv_default_loop();
    srv.start_wall_us = T0 / 1000;
    trace = getenv("FUZZ_SCRIPT_TRACE") != NULL;
    CHECK(cmd_setup(command_table, command_count) == 0);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };
    size_t baseline = mem_used();
    memset(shas, 0, sizeof(shas));
    fresh_server();
    for (int ops = 0; in.n > 0 && ops < MAX_OPS; ops++) {
        run_op(&in);
    }
    retire_server();
    CHECK(keytype_owned_bytes() == 0);
    CHECK(mem_used() == baseline);
    return 0;
}
