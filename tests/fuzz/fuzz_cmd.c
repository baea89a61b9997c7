/*
 * fuzz_cmd.c - libFuzzer driver for the command path: random commands
 * through the real command table and handlers (cmd_execute) into an
 * in-process keyspace, with the wall clock injected and no sockets.
 *
 * An input is a small program (see run_op): commands built from the bytes,
 * raw commands of any bytes, commands spelt out exactly (the seeds in
 * corpus/cmd, written by make_cmd_seeds.py, use those for the reproducers
 * of issue 14 and the string commands'), chains of commands on one key,
 * clock steps (forward, backward, huge), and save-and-reload points. What
 * is built:
 *
 *  - every limiter with its options (CL.THROTTLE, RL.FIXED, RL.SLIDING,
 *    RL.LOG with META, RL.TIERS; COST, ALIGN, PEEK, MS, CL.THROTTLE's
 *    RESERVE, RL.FIXED's CALENDAR with real and junk zones, a unit name
 *    or a number as its window, and WEEKSTART, junk), RL.ALL of them and
 *    GCRA (argcs off by one, parts that are no limiter or RL.ALL again, a
 *    trailing PEEK, which must change nothing), the leases (RL.ACQUIRE
 *    with HOLDER, PEEK, MS and WAIT but one that would block, RL.REFRESH,
 *    RL.RELEASE, RL.LEASES), and RL.TOPDENIED (COUNT, DB, junk, an option
 *    without its value);
 *  - the string commands: GET, SET (NX|XX, GET, EX|PX|EXAT|PXAT|KEEPTTL
 *    in any mix, junk, a time word without its value), SETNX, SETEX,
 *    PSETEX, GETSET, GETDEL, GETEX (EX|PX|EXAT|PXAT|PERSIST, or none),
 *    MGET, MSET, MSETNX (an odd count too), INCR, INCRBY, DECR, DECRBY,
 *    INCRBYFLOAT, APPEND, STRLEN, GETRANGE, SETRANGE; values that are
 *    integers in any spelling (the int64 edges, "01", "+1", "-0"), floats
 *    (inf, nan, 1e4932), bytes of any kind around the 12 kept inline, up
 *    to 64 KB and now and then up to 2 MB; SETRANGE offsets up to 4 MB and
 *    the refused ones (512 MB and over, negative);
 *  - the expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX|XX|GT|
 *    LT, junk), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, with times
 *    soon, now, just past, far, at the int64 edges and overflowing;
 *  - the key commands: EXISTS, TOUCH, TYPE, DEL and UNLINK over several
 *    keys, RENAME, RENAMENX, COPY (DB, REPLACE), MOVE, KEYS and SCAN
 *    patterns;
 *  - Redis's lists (LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP and RPOP with a
 *    count, LTRIM, LREM, LSET, LINSERT, LMOVE, RPOPLPUSH, LMPOP, LRANGE,
 *    LINDEX, LLEN, LPOS
 *    with RANK|COUNT|MAXLEN), hashes (HSET, HMSET, HSETNX, HDEL, HINCRBY,
 *    HINCRBYFLOAT, HGET, HMGET, HEXISTS, HSTRLEN, HLEN, HGETALL, HKEYS,
 *    HVALS, HSCAN) and sorted sets (ZADD with NX|XX|GT|LT|CH|INCR,
 *    ZINCRBY, ZREM, ZREMRANGEBYSCORE|RANK|LEX, ZPOPMIN, ZPOPMAX, ZMPOP, ZSCORE,
 *    ZMSCORE, ZCARD, ZCOUNT, ZLEXCOUNT, ZRANK, ZREVRANK, ZRANGE by rank,
 *    BYSCORE and BYLEX with REV, LIMIT, WITHSCORES, ZREVRANGE,
 *    Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX, ZSCAN, the algebra ZUNION,
 *    ZINTER, ZDIFF, their STORE forms and ZINTERCARD, ZRANGESTORE,
 *    ZRANDMEMBER; HRANDFIELD) and sets (SADD, SREM, SISMEMBER, SMISMEMBER,
 *    SCARD, SMEMBERS, SRANDMEMBER and SPOP with a count, SMOVE, SSCAN,
 *    SINTER, SINTERCARD with LIMIT, SUNION, SDIFF and their STORE forms),
 *    on the same keys as
 *    everything else; elements that repeat, around 64 bytes, of any size;
 *    scores, score bounds and lex bounds in every spelling, refused ones
 *    too; writes of up to 46 elements;
 *  - chains on one key: APPEND after APPEND, SETRANGE, counters meeting
 *    text, a limiter's calls with EXPIRE, PERSIST and clock steps between;
 *    a collection's commands, growing it past its compact bounds (128
 *    members, 512 fields, 512 integers), with EXPIRE, RENAME, COPY, MOVE, clock steps
 *    and save points between;
 *  - CONFIG SET of every option, INFO, CLIENT, SLOWLOG, COMMAND (GETKEYS
 *    and GETKEYSANDFLAGS of every command above), transactions, SELECT,
 *    SWAPDB.
 *
 * Every command draws its keys from the same few (k0..k5, empty, binary,
 * up to 1 MB long), so string and expiry commands meet limiter keys and
 * limiters meet strings. After every command it checks what a user could
 * notice going wrong:
 *
 *  - the reply is exactly one well-formed RESP value, and only RESP2
 *    types on a RESP2 connection;
 *  - a command that must not change the keyspace (PEEK, every read: GET,
 *    MGET, STRLEN, GETRANGE, TTL, PTTL, (P)EXPIRETIME, TOUCH, EXISTS,
 *    TYPE, GETEX without options, RL.ENTRIES, RL.TOPDENIED; every admin
 *    command,
 *    anything queued inside MULTI) did not: a digest of every live key,
 *    its expiry and its encoded state is the same before and after;
 *  - a write that answered success left what its reply says (check_effect:
 *    SET's value and expiry, KEEPTTL's kept one, the counters' KEY_INT,
 *    APPEND's and SETRANGE's bytes and length, an EXPIRE's time or the
 *    key gone, PERSIST, DEL, a RENAME, COPY or MOVE carrying the record
 *    whole; a push's length and end element, HSET's, HSETNX's, HINCRBY's
 *    and HINCRBYFLOAT's fields, HDEL's and ZREM's names gone, ZINCRBY's
 *    and a plain ZADD's scores), and one that answered "not done" left
 *    its key as it was;
 *  - every list, hash and sorted set is well formed, walked element by
 *    element (never empty, its length, a compact hash or set within
 *    Redis's bounds, a set in score and member order without NaN; at a
 *    save point every element found again by HGET, ZSCORE, ZRANK and a
 *    list walked back), and the digest covers its elements (a large
 *    hash's in any order: its table's order is per process);
 *  - every RL.LOG and RL.TIERS key is well formed (entries in time order,
 *    costs >= 1, the running sum right, META inside its arena, at least
 *    one entry but in the two cases may_hold_none() allows) and, unless an
 *    expiry command reached its name (see "limiter keys whose expiry a
 *    command set by hand"), expires exactly when its newest entry leaves
 *    its retention window;
 *  - keytype_owned_bytes() equals what the keys' arrays, long strings and
 *    collections hold;
 * at a save point, that a snapshot loaded into a fresh store at the same
 * instant has the same digest, and so has the journal (appendonly is on:
 * its base and every record since, replayed); and at the end, with every key and buffer
 * freed, that mem_used() is back where it started (the accounting of
 * every allocation matches).
 *
 * Commands that leave the process or touch sockets (QUIT, SHUTDOWN,
 * CLIENT KILL, MIGRATE but to 127.0.0.1:1, which refuses), answer more than once ((P)(UN)SUBSCRIBE, MONITOR, CLIENT
 * REPLY, WAIT), fork (BGSAVE, BGREWRITEAOF, PSYNC), change the role
 * (REPLICAOF, SLAVEOF, REPLCONF) or read the config file (CLUSTER RELOAD) are
 * skipped, as is an RL.ACQUIRE whose WAIT may block (the driver has no
 * loop for its timers), as are CONFIG SETs of the snapshot path, the log and
 * appendonly (turning the journal on forks), which the driver owns, and,
 * so that memory stays bounded, COPY once the keyspace holds 32 MB and a
 * SETRANGE past 16 MB that would be carried out.
 */
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/tzdb.h"
#include "protocol/obuf.h"
#include "protocol/resp.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/client.h"
#include "server/keyspace.h"
#include "server/keytype.h"
#include "server/log.h"
#include "server/monitor.h"
#include "server/multi.h"
#include "server/persist/persist.h"
#include "server/server.h"
#include "server/slowlog.h"
#include "server/topdenied.h"
#include "server/snapshot.h"
#include "server/cluster/cluster.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 48
#define T0 INT64_C(1893456000000000000)    /* 2030-01-01, whole second */

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz_cmd: %s:%d: check failed: %s\n", __FILE__, \
                    __LINE__, #cond);                                        \
            abort();                                                         \
        }                                                                    \
    } while (0)

static char snapdir[256];
static int64_t now_ns;
static struct conn *client;

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

static uint16_t
in_u16(struct input *in)
{
    return (uint16_t)(in_byte(in) | in_byte(in) << 8);
}

/* ---- building a request ------------------------------------------------ */

struct req {
    size_t argc;
    char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
};

static void
add_bytes(struct req *r, const void *p, size_t len)
{
    if (r->argc == MAX_ARGS) {
        return;
    }
    char *copy = malloc(len + 1);
    CHECK(copy != NULL);
    if (len > 0) {
        memcpy(copy, p, len);
    }
    copy[len] = '\0';
    r->argv[r->argc] = copy;
    r->len[r->argc++] = len;
}

static void
add(struct req *r, const char *s)
{
    add_bytes(r, s, strlen(s));
}

static void
req_free(struct req *r)
{
    for (size_t i = 0; i < r->argc; i++) {
        free(r->argv[i]);
    }
    r->argc = 0;
}

static const char *const numbers[] = {
    "0", "1", "2", "3", "5", "10", "60", "100", "3600", "86400", "-1", "-5",
    "1000000", "1000001", "10000001", "9223372036854775807",
    "-9223372036854775808", "9223372036854775808", "2147483648", "abc",
    "1.5", " 1", "+1", "01", "", "1e3", "4294967296", "3601", "1024", "16",
};
#define N_NUMBERS (sizeof(numbers) / sizeof(numbers[0]))

static const int windows[] = { 1, 2, 3, 5, 10, 60, 3600, 86400 };

/* A number argument: mostly small valid ones, sometimes anything. */
static void
add_number(struct req *r, struct input *in, bool window)
{
    char buf[32];
    uint8_t b = in_byte(in);
    if (b < 160) {
        snprintf(buf, sizeof(buf), "%d",
                 window ? windows[b % 8] : 1 + b % 12);
        add(r, buf);
    } else if (b < 200) {
        snprintf(buf, sizeof(buf), "%d", (int)in_u16(in) - 1000);
        add(r, buf);
    } else {
        add(r, numbers[b % N_NUMBERS]);
    }
}

static void
add_key(struct req *r, struct input *in)
{
    uint8_t b = in_byte(in);
    if (b < 200) {
        char k[4] = { 'k', (char)('0' + b % 6), 0 };
        add(r, k);
    } else if (b < 215) {
        add_bytes(r, "", 0);
    } else if (b < 245) {
        add_bytes(r, "bin\0\r\n\xff", 7);
    } else {
        /* Long keys, up to 16 KB, rarely 64 KB or 1 MB (each KEYS then
         * matches them, which is slow on purpose: see glob.h). */
        uint8_t size = in_byte(in);
        size_t len = (size_t)size * 64 + 1;
        if (b == 255) {
            len = size == 255 ? ((size_t)1 << 20) : (size_t)size * 256 + 1;
        }
        char *k = malloc(len);
        CHECK(k != NULL);
        memset(k, 'L', len);
        add_bytes(r, k, len);
        free(k);
    }
}

/* Bytes of any kind, CR, LF and NUL included. */
static void
add_blob(struct req *r, struct input *in, size_t max)
{
    size_t len = in_u16(in) % (max + 1);
    char *b = malloc(len + 1);
    CHECK(b != NULL);
    uint8_t seed = in_byte(in);
    for (size_t i = 0; i < len; i++) {
        b[i] = (char)(i < in->n ? in->p[i] : seed + i);
    }
    add_bytes(r, b, len);
    free(b);
}

static void
add_pattern(struct req *r, struct input *in)
{
    static const char alphabet[] = "ab*?[]^-\\k0L";
    uint8_t len = in_byte(in) % 24;
    char pat[32];
    for (uint8_t i = 0; i < len; i++) {
        pat[i] = alphabet[in_byte(in) % (sizeof(alphabet) - 1)];
    }
    add_bytes(r, pat, len);
}

/* Limiter options: any mix of COST, ALIGN, META, PEEK, MS, RESERVE (and
 * junk). */
static void
add_rl_options(struct req *r, struct input *in, bool meta, bool align,
               bool reserve)
{
    uint8_t n = in_byte(in) % 4;
    for (uint8_t i = 0; i < n; i++) {
        uint8_t b = in_byte(in);
        switch (b % 8) {
        case 0:
        case 1:
            add(r, b & 8 ? "cost" : "COST");
            add_number(r, in, false);
            break;
        case 2:
            add(r, "PEEK");
            break;
        case 3:
            add(r, "MS");
            break;
        case 4:
            add(r, align ? "ALIGN" : "NOPE");
            break;
        case 5:
            if (meta) {
                add(r, "META");
                add_blob(r, in, 1100);
            } else if (reserve) {
                add(r, b & 8 ? "reserve" : "RESERVE");
                add_number(r, in, b & 16);
            }
            break;
        case 6:
            add(r, numbers[b % N_NUMBERS]);
            break;
        default:
            add(r, "peek");
            break;
        }
    }
}

/* RL.FIXED's calendar: a unit name as the window, CALENDAR with real and
 * junk zones (a path out of the zone folder among them), WEEKSTART. */
static const char *const cal_units[] = {
    "day", "week", "month", "year", "hour", "minute", "second", "WEEK",
    "weeks", "60",
};
static const char *const cal_zones[] = {
    "Europe/Paris", "America/New_York", "Australia/Lord_Howe",
    "Asia/Kathmandu", "UTC", "Mars/Base", "../../etc/passwd", "",
    "Europe", "/usr/share/zoneinfo/UTC", "Europe//Paris",
};
static const char *const cal_days[] = {
    "monday", "sunday", "Sat", "funday", "",
};

#define PICK(table, in) \
    (table)[in_byte(in) % (sizeof(table) / sizeof((table)[0]))]

static void
gen_calendar_fixed(struct req *r, struct input *in)
{
    uint8_t b = in_byte(in);
    add(r, "RL.FIXED");
    add_key(r, in);
    add_number(r, in, false);
    if (b & 1) {
        add(r, PICK(cal_units, in));
    } else {
        add_number(r, in, true);
    }
    add_rl_options(r, in, false, true, false);
    if (b & 2) {
        add(r, "CALENDAR");
        add(r, PICK(cal_zones, in));
    }
    if (b & 4) {
        add(r, b & 8 ? "weekstart" : "WEEKSTART");
        add(r, PICK(cal_days, in));
    }
    add_rl_options(r, in, false, true, false);
}

static const char *const config_names[] = {
    "maxmemory", "maxmemory-policy", "log-max-entries", "tiers-max-window",
    "proto-max-args", "proto-max-bulk-len", "client-query-buffer-limit",
    "maxclients", "timeout", "hz", "slowlog-log-slower-than",
    "slowlog-max-len", "cluster-mode", "requirepass", "save-interval",
    "client-output-pause-limit", "client-output-hard-limit",
    "snapshot-load-errors", "port", "MAXMEMORY", "nosuch",
};
/* Values with their lengths: some hold a NUL. */
static const struct { const char *s; size_t len; } config_values[] = {
    { "0", 1 }, { "1", 1 }, { "1mb", 3 }, { "100kb", 5 }, { "2mb", 3 },
    { "64mb", 4 }, { "volatile-ttl", 12 }, { "noeviction", 10 },
    { "emulated", 8 }, { "no", 2 }, { "yes", 3 }, { "1024", 4 },
    { "1048576", 7 }, { "-1", 2 }, { "10", 2 }, { "1\0gb", 4 },
    { "start-empty", 11 }, { "refuse", 6 }, { "abc", 3 },
    { "99999999999999999999", 20 }, { "1\0junk", 6 }, { "", 0 },
};

static void
gen_config_set(struct req *r, struct input *in)
{
    add(r, "CONFIG");
    add(r, "SET");
    uint8_t pairs = 1 + in_byte(in) % 2;
    for (uint8_t i = 0; i < pairs; i++) {
        add(r, config_names[in_byte(in) % (sizeof(config_names) /
                                           sizeof(config_names[0]))]);
        uint8_t v = in_byte(in) % (sizeof(config_values) /
                                   sizeof(config_values[0]));
        add_bytes(r, config_values[v].s, config_values[v].len);
    }
}

/* A lease's holder: a few that meet, the word PEEK, empty, too long. */
static void
add_holder(struct req *r, struct input *in)
{
    static const char *const holders[] = { "a", "b", "c", "PEEK", "d" };
    uint8_t b = in_byte(in);
    if (b < 240) {
        add(r, holders[b % 5]);
    } else if (b < 248) {
        add_bytes(r, "", 0);
    } else {
        add_blob(r, in, 300);
    }
}

/* RL.ACQUIRE (HOLDER, WAIT but one that would block, PEEK, MS, junk),
 * RL.REFRESH, RL.RELEASE, RL.LEASES. */
static void
gen_lease(struct req *r, struct input *in, uint8_t which)
{
    static const char *const cmds[] = { "RL.ACQUIRE", "RL.REFRESH",
                                         "RL.RELEASE", "RL.LEASES" };
    add(r, cmds[which % 4]);
    add_key(r, in);
    if (which % 4 == 0) {
        add_number(r, in, false);
        add_number(r, in, true);
        for (uint8_t n = in_byte(in) % 4; n > 0; n--) {
            uint8_t b = in_byte(in);
            static const char *const waits[] = { "0", "-1", "x",
                                                 "3600001" };
            add(r, b % 5 == 0 ? "HOLDER" : b % 5 == 1 ? "WAIT"
                   : b % 5 == 2 ? "PEEK" : b % 5 == 3 ? "MS" : "NOPE");
            if (b % 5 == 0) {
                add_holder(r, in);
            } else if (b % 5 == 1) {
                add(r, waits[(b >> 3) % 4]);
            }
        }
    } else if (which % 4 != 3) {
        add_holder(r, in);
        if (which % 4 == 1) {
            add_number(r, in, true);
        }
    }
    if (which % 4 != 2 && (which & 16)) {
        add(r, "MS");
    }
}

static void
gen_limiter(struct req *r, struct input *in, uint8_t which)
{
    if (which % 5 == 4 && (which / 5) % 4 == 3) {
        gen_lease(r, in, in_byte(in));
        return;
    }
    switch (which % 5) {
    case 0:
        add(r, "CL.THROTTLE");
        add_key(r, in);
        add_number(r, in, false);
        add_number(r, in, false);
        add_number(r, in, true);
        if (in_byte(in) & 1) {
            add_number(r, in, false);
        }
        add_rl_options(r, in, false, false, true);
        break;
    case 1:
        if (which & 8) {
            gen_calendar_fixed(r, in);
            break;
        }
        add(r, "RL.FIXED");
        add_key(r, in);
        add_number(r, in, false);
        add_number(r, in, true);
        add_rl_options(r, in, false, true, false);
        break;
    case 2:
        add(r, "RL.SLIDING");
        add_key(r, in);
        add_number(r, in, false);
        add_number(r, in, true);
        add_rl_options(r, in, false, false, false);
        break;
    case 3:
        add(r, "RL.LOG");
        add_key(r, in);
        add_number(r, in, false);
        add_number(r, in, true);
        add_rl_options(r, in, true, false, false);
        break;
    default: {
        add(r, "RL.TIERS");
        add_key(r, in);
        uint8_t tiers = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < tiers; i++) {
            add_number(r, in, false);
            add_number(r, in, true);
        }
        add_rl_options(r, in, false, false, false);
        break;
    }
    }
}

/* A part of RL.ALL: a limiter, GCRA, or junk (a command that is no
 * limiter, RL.ALL itself). */
static void
gen_rl_all_part(struct req *part, struct input *in)
{
    uint8_t b = in_byte(in);
    if (b < 190) {
        gen_limiter(part, in, b);
    } else if (b < 225) {
        add(part, "GCRA");
        add_key(part, in);
        add_number(part, in, false);
        add_number(part, in, false);
        add_number(part, in, true);
        if (b & 1) {
            add(part, "TOKENS");
            add_number(part, in, false);
        }
    } else if (b < 240) {
        add(part, "SET");
        add_key(part, in);
        add(part, "v");
    } else {
        add(part, "RL.ALL");
        add(part, "1");
        add(part, "2");
        add(part, "RL.FIXED");
    }
}

/* RL.ALL of 1 to 4 parts, each counted by its argc (now and then off by
 * one), now and then a numparts out of bounds, a trailing PEEK or junk. */
static void
gen_rl_all(struct req *r, struct input *in)
{
    char buf[24];
    uint8_t b = in_byte(in);
    unsigned n = 1 + b % 4;
    add(r, "RL.ALL");
    snprintf(buf, sizeof(buf), "%u", b >= 248 ? (b & 1 ? 0u : 17u) : n);
    add(r, buf);
    for (unsigned i = 0; i < n; i++) {
        struct req part = { 0 };
        gen_rl_all_part(&part, in);
        uint8_t skew = in_byte(in);
        size_t argc = part.argc + (skew >= 250) - (skew >= 253);
        snprintf(buf, sizeof(buf), "%zu", argc);
        add(r, buf);
        for (size_t k = 0; k < part.argc; k++) {
            add_bytes(r, part.argv[k], part.len[k]);
        }
        req_free(&part);
    }
    uint8_t tail = in_byte(in);
    if (tail < 40) {
        add(r, "PEEK");
    } else if (tail < 44) {
        add(r, "junk");
    }
}

/* ---- strings, expiry and the key commands ------------------------------ */

/* Bytes with their length (some hold a NUL). */
struct bytes {
    const char *s;
    size_t len;
};
#define B(lit) { lit, sizeof(lit) - 1 }

/* Integer arguments of the string commands: good ones, the int64 edges,
 * and what string2ll refuses (signs, zeros, spaces, overflow, a NUL). */
static const struct bytes int_args[] = {
    B("0"), B("1"), B("-1"), B("2"), B("10"), B("42"), B("-100"), B("1000"),
    B("9223372036854775807"), B("-9223372036854775808"),
    B("9223372036854775806"), B("-9223372036854775807"),
    B("9223372036854775808"), B("-9223372036854775809"),
    B("18446744073709551616"), B("4294967296"), B("2147483648"), B("abc"),
    B(""), B(" 1"), B("1 "), B("+1"), B("01"), B("-0"), B("1.0"), B("1e3"),
    B("0x10"), B("1\0"), B("-"), B("12345678901234567890123"),
};
#define N_INT_ARGS (sizeof(int_args) / sizeof(int_args[0]))

/* INCRBYFLOAT's increments and float-looking values: strtold's forms,
 * the long double edges, what it refuses. */
static const struct bytes float_args[] = {
    B("0.1"), B("-0.1"), B("1.5"), B("3"), B("-3"), B("1e308"), B("-1e308"),
    B("1e4932"), B("1.18973149535723176502e+4932"), B("1e-4950"), B("inf"),
    B("-inf"), B("nan"), B("5.0e3"), B("0x1p3"), B(" 1"), B("1 "), B(""),
    B("abc"), B("1e"), B(".5"), B("5."), B("-0"), B("0.000000000000000001"),
    B("10.50"), B("1\0"), B("3.0e-5"), B("100000000000000000000"),
};
#define N_FLOAT_ARGS (sizeof(float_args) / sizeof(float_args[0]))

static void
add_int_arg(struct req *r, struct input *in)
{
    char buf[32];
    uint8_t b = in_byte(in);
    if (b < 96) {
        snprintf(buf, sizeof(buf), "%d", (int)(b % 48) - 8);
        add(r, buf);
    } else if (b < 128) {
        snprintf(buf, sizeof(buf), "%d", (int)in_u16(in) - 32768);
        add(r, buf);
    } else if (b < 144) {
        /* Near the int64 edges, where INCRBY overflows. */
        int64_t base = b & 1 ? INT64_MAX : INT64_MIN;
        int64_t d = in_byte(in) % 8;
        snprintf(buf, sizeof(buf), "%lld",
                 (long long)(b & 1 ? base - d : base + d));
        add(r, buf);
    } else {
        const struct bytes *v = &int_args[b % N_INT_ARGS];
        add_bytes(r, v->s, v->len);
    }
}

static void
add_float_arg(struct req *r, struct input *in)
{
    uint8_t b = in_byte(in);
    if (b < 64) {
        add_int_arg(r, in);
    } else {
        const struct bytes *v = &float_args[b % N_FLOAT_ARGS];
        add_bytes(r, v->s, v->len);
    }
}

/* n bytes of a fixed pattern (so huge values cost no input). */
static void
add_filled(struct req *r, size_t n, uint8_t seed)
{
    char *v = malloc(n + 1);
    CHECK(v != NULL);
    for (size_t i = 0; i < n && i < 251; i++) {
        v[i] = (char)(seed + i);
    }
    for (size_t done = 251; done < n; done *= 2) {     /* the period doubled */
        memcpy(v + done, v, done < n - done ? done : n - done);
    }
    add_bytes(r, v, n);
    free(v);
}

/* Big values while the keyspace's strings and arrays hold under 8 MB
 * (more would only make every command slower), and not while a MULTI is
 * open (what it queues lands later, all at once: 20 queued APPENDs of
 * 2 MB made one 40 MB string). */
static bool
room_for_big(void)
{
    return keytype_owned_bytes() < ((size_t)8 << 20) &&
           !multi_open(client, client->multi);
}

/*
 * A string value: integers in any spelling (KEY_INT when canonical),
 * floats, short bytes around the 12 a string keeps inline
 * (KS_STR_INLINE), any bytes up to 1100, and now and then tens of KB or
 * up to 2 MB (room_for_big()).
 */
static void
add_value(struct req *r, struct input *in)
{
    static const size_t edges[] = { 0,  1,  11, 12, 13,  14,  19,  20,
                                    21, 24, 25, 63, 64,  65,  127, 255,
                                    256, 1023, 1024, 4096 };
    uint8_t b = in_byte(in);
    if (b < 48) {
        add_int_arg(r, in);
    } else if (b < 64) {
        add_float_arg(r, in);
    } else if (b < 112) {
        add_blob(r, in, 24);
    } else if (b < 144) {
        add_filled(r, edges[in_byte(in) % (sizeof(edges) / sizeof(*edges))],
                   b);
    } else if (b < 208) {
        add_blob(r, in, 1100);
    } else if (b < 244 || !room_for_big()) {
        add_filled(r, in_u16(in), b);                   /* up to 64 KB */
    } else {
        add_filled(r, ((size_t)in_byte(in) % 32 + 1) << 16, b);  /* 2 MB */
    }
}

/* The wall clock the limiters see, in ms and s. */
static int64_t
now_ms(void)
{
    return now_ns / 1000000;
}

/*
 * A time argument. unit: 0 seconds from now (EX, EXPIRE), 1 ms from now
 * (PX, PEXPIRE), 2 Unix s (EXAT, EXPIREAT), 3 Unix ms (PXAT, PEXPIREAT).
 * Mostly soon (a few ms to an hour), often already past or right now,
 * sometimes the int64 edges, an overflow once scaled, or no integer.
 */
static void
add_time(struct req *r, struct input *in, int unit)
{
    static const int64_t soon[] = { 1, 2, 3, 5, 10, 60, 100, 999, 1000,
                                    1001, 3600, 86400 };
    static const struct bytes edges[] = {
        B("9223372036854775807"), B("-9223372036854775808"),
        B("9223372036854775"), B("9223372036854776"), B("-9223372036854775"),
        B("-9223372036854776"), B("9223372036854775808"), B("abc"), B("1.5"),
        B(""), B("+5"), B("0"), B("-1"), B("253402300799"),
        B("253402300799999"), B("9223372036854775806"),
    };
    char buf[32];
    uint8_t b = in_byte(in);
    bool abs = unit >= 2;
    int64_t scale = unit == 0 || unit == 2 ? 1000 : 1;
    int64_t base = abs ? now_ms() / scale : 0;
    int64_t v;
    if (b < 128) {
        v = base + soon[b % (sizeof(soon) / sizeof(*soon))];
    } else if (b < 168) {
        v = base - (int64_t)(b % 4);    /* now, or just past */
    } else if (b < 200) {
        v = base + (int64_t)in_u16(in) - 1000;
    } else {
        const struct bytes *e = &edges[b % (sizeof(edges) / sizeof(*edges))];
        add_bytes(r, e->s, e->len);
        return;
    }
    snprintf(buf, sizeof(buf), "%lld", (long long)v);
    add(r, buf);
}

/* SETRANGE's offset: small ones, around the inline size, up to 4 MB, and
 * the ones it refuses (512 MB and over, negative, no integer). Never one
 * just under 512 MB: that would be a 512 MB string. */
static void
add_offset(struct req *r, struct input *in)
{
    static const struct bytes bad[] = {
        B("-1"), B("536870912"), B("536870913"), B("4294967296"),
        B("9223372036854775807"), B("-9223372036854775808"), B("abc"), B(""),
        B("1e3"), B("0x10"),
    };
    char buf[32];
    uint8_t b = in_byte(in);
    size_t off;
    if (b < 96) {
        off = b % 41;
    } else if (b < 128) {
        off = 10 + b % 6;
    } else if (b < 176) {
        off = in_u16(in);
    } else if (b < 224) {
        off = (size_t)in_u16(in) * (room_for_big() ? 64 : 1);  /* 4 MB */
    } else {
        const struct bytes *e = &bad[b % (sizeof(bad) / sizeof(*bad))];
        add_bytes(r, e->s, e->len);
        return;
    }
    snprintf(buf, sizeof(buf), "%zu", off);
    add(r, buf);
}

/* SET's options, any mix and order: NX, XX, GET, KEEPTTL, EX/PX/EXAT/PXAT
 * with a time, GETEX's PERSIST (a syntax error here), a time word with no
 * value, junk. */
static void
add_set_options(struct req *r, struct input *in, bool getex)
{
    static const char *const timed[] = { "EX", "PX", "EXAT", "PXAT" };
    static const char *const lower[] = { "ex", "px", "exat", "pxat" };
    uint8_t n = in_byte(in) % (getex ? 3 : 4);
    for (uint8_t i = 0; i < n; i++) {
        uint8_t b = in_byte(in);
        switch (b % 10) {
        case 0:
        case 1:
        case 2:
        case 3:
            add(r, (b & 0xc0) == 0x40 ? lower[b % 4] : timed[b % 4]);
            add_time(r, in, b % 4);
            break;
        case 4:
            add(r, getex ? "PERSIST" : b & 0x40 ? "nx" : "NX");
            break;
        case 5:
            add(r, getex ? "persist" : "XX");
            break;
        case 6:
            add(r, getex ? "KEEPTTL" : "GET");
            break;
        case 7:
            add(r, getex ? "GET" : b & 0x40 ? "keepttl" : "KEEPTTL");
            break;
        case 8:
            add(r, timed[b / 10 % 4]);          /* maybe no value after */
            break;
        default:
            add(r, b & 0x40 ? "PERSIST" : "EXX");
            break;
        }
    }
}

/* One string command with its options: the writers (SET and its kin,
 * the counters, APPEND, SETRANGE, MSET(NX)) and the readers (GET, MGET,
 * STRLEN, GETRANGE, GETDEL, GETEX with and without options). */
static void
gen_string(struct req *r, struct input *in, uint8_t which)
{
    switch (which % 20) {
    case 0:
    case 1:
    case 2:
        add(r, which & 0x80 ? "set" : "SET");
        add_key(r, in);
        add_value(r, in);
        add_set_options(r, in, false);
        break;
    case 3:
        add(r, which & 0x80 ? "SETNX" : "GETSET");
        add_key(r, in);
        add_value(r, in);
        break;
    case 4:
        add(r, which & 0x80 ? "SETEX" : "PSETEX");
        add_key(r, in);
        add_time(r, in, which & 0x80 ? 0 : 1);
        add_value(r, in);
        break;
    case 5:
        add(r, "GET");
        add_key(r, in);
        break;
    case 6:
        add(r, which & 0x80 ? "GETDEL" : "STRLEN");
        add_key(r, in);
        break;
    case 7:
        add(r, "GETEX");
        add_key(r, in);
        if (which & 0x80) {
            add_set_options(r, in, true);
        }
        break;
    case 8: {
        add(r, "MGET");
        uint8_t n = 1 + in_byte(in) % 6;
        for (uint8_t i = 0; i < n; i++) {
            add_key(r, in);
        }
        break;
    }
    case 9: {
        /* An odd count of arguments now and then: the arity error. */
        add(r, which & 0x80 ? "MSETNX" : "MSET");
        uint8_t n = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add_key(r, in);
            add_value(r, in);
        }
        if (in_byte(in) < 16) {
            add_key(r, in);
        }
        break;
    }
    case 10:
    case 11:
        add(r, which & 0x80 ? "INCR" : "DECR");
        add_key(r, in);
        break;
    case 12:
        add(r, which & 0x80 ? "INCRBY" : "DECRBY");
        add_key(r, in);
        add_int_arg(r, in);
        break;
    case 13:
        add(r, "INCRBYFLOAT");
        add_key(r, in);
        add_float_arg(r, in);
        break;
    case 14:
    case 15:
        add(r, "APPEND");
        add_key(r, in);
        add_value(r, in);
        break;
    case 16:
        add(r, "SETRANGE");
        add_key(r, in);
        add_offset(r, in);
        add_value(r, in);
        break;
    case 17:
        add(r, "GETRANGE");
        add_key(r, in);
        add_int_arg(r, in);
        add_int_arg(r, in);
        break;
    case 18:
        /* A wrong number of arguments for one of them. */
        add(r, in_byte(in) & 1 ? "SETRANGE" : "GETEX");
        break;
    default:
        add(r, "SET");
        add_key(r, in);
        add_value(r, in);
        add(r, which & 0x80 ? "KEEPTTL" : "GET");
        break;
    }
}

/* The expiry commands, on keys of every type (limiter keys among them). */
static void
gen_expire(struct req *r, struct input *in, uint8_t which)
{
    static const char *const setters[] = { "EXPIRE", "PEXPIRE", "EXPIREAT",
                                           "PEXPIREAT" };
    static const char *const readers[] = { "TTL", "PTTL", "EXPIRETIME",
                                           "PEXPIRETIME", "PERSIST" };
    static const char *const flags[] = { "NX", "XX", "GT", "LT", "nx",
                                         "gt", "ZZ", "" };
    if (which % 3 != 0) {
        int unit = which / 3 % 4;
        add(r, setters[unit]);
        add_key(r, in);
        add_time(r, in, unit);
        uint8_t n = in_byte(in);
        n = n < 128 ? 0 : n < 224 ? 1 : 2;
        for (uint8_t i = 0; i < n; i++) {
            add(r, flags[in_byte(in) % 8]);
        }
    } else {
        add(r, readers[which / 3 % 5]);
        add_key(r, in);
    }
}

/* RL.TOPDENIED with up to three of COUNT n, DB index, a junk word or an
 * option without its value. */
static void
gen_topdenied(struct req *r, struct input *in, const char *const *dbs)
{
    add(r, in_byte(in) & 1 ? "RL.TOPDENIED" : "rl.topdenied");
    uint8_t n = in_byte(in) % 4;
    for (uint8_t i = 0; i < n; i++) {
        uint8_t b = in_byte(in);
        switch (b % 4) {
        case 0:
            add(r, "COUNT");
            add_number(r, in, false);
            break;
        case 1:
            add(r, b & 0x80 ? "db" : "DB");
            add(r, dbs[b / 4 % 6]);
            break;
        case 2:
            add(r, "junk");
            break;
        default:
            add(r, b & 0x80 ? "COUNT" : "DB");  /* no value: syntax */
            break;
        }
    }
}

/* Key commands: the one-key readers, DEL, UNLINK, TOUCH, EXISTS over
 * several keys, RENAME(NX), COPY (DB, REPLACE), MOVE, KEYS, SCAN. */
static void
gen_keys(struct req *r, struct input *in, uint8_t which)
{
    static const char *const onekey[] = { "GET", "PTTL", "TTL", "TYPE",
                                          "EXISTS", "DEL", "RL.ENTRIES" };
    static const char *const many[] = { "DEL", "UNLINK", "TOUCH", "EXISTS" };
    static const char *const dbs[] = { "0", "1", "15", "16", "-1", "abc" };
    switch (which % 8) {
    case 0:
    case 1:
        add(r, onekey[in_byte(in) % 7]);
        add_key(r, in);
        if (in_byte(in) < 40) {
            add_key(r, in);
        }
        if (strcmp(r->argv[0], "RL.ENTRIES") == 0 && in_byte(in) & 1) {
            add(r, "COUNT");
            add_number(r, in, false);
        }
        break;
    case 2:
        if (which & 0x80) {
            gen_topdenied(r, in, dbs);
            break;
        }
        add(r, "KEYS");
        add_pattern(r, in);
        break;
    case 3:
        add(r, "SCAN");
        add_number(r, in, false);
        if (in_byte(in) & 1) {
            add(r, "MATCH");
            add_pattern(r, in);
        }
        if (in_byte(in) & 1) {
            add(r, "COUNT");
            add_number(r, in, false);
        }
        if (in_byte(in) & 1) {
            static const char *const types[] = { "log", "tiers", "string",
                                                 "none" };
            add(r, "TYPE");
            add(r, types[in_byte(in) % 4]);
        }
        break;
    case 4: {
        add(r, many[in_byte(in) % 4]);
        uint8_t n = 1 + in_byte(in) % 5;
        for (uint8_t i = 0; i < n; i++) {
            add_key(r, in);
        }
        break;
    }
    case 5:
        add(r, which & 0x80 ? "RENAMENX" : "RENAME");
        add_key(r, in);
        add_key(r, in);
        break;
    case 6: {
        add(r, "COPY");
        add_key(r, in);
        add_key(r, in);
        uint8_t b = in_byte(in);
        if (b & 1) {
            add(r, "DB");
            add(r, dbs[b / 2 % 6]);
        }
        if (b & 0x40) {
            add(r, b & 0x80 ? "REPLACE" : "replace");
        }
        if (b == 0xff) {
            add(r, "DB");                       /* no value: syntax */
        }
        break;
    }
    default:
        add(r, "MOVE");
        add_key(r, in);
        add(r, dbs[in_byte(in) % 6]);
        break;
    }
}

/* ---- lists, hashes and sorted sets -------------------------------------- */

/*
 * An element, field or member: a few that repeat (so LREM, LINSERT, LPOS,
 * HDEL, ZREM and the lex ranges meet them), numbers (HINCRBY's fields
 * hold them), bytes of any kind around the 64 a compact hash or sorted set
 * keeps, and now and then any string value (up to megabytes).
 */
static void
add_member(struct req *r, struct input *in)
{
    static const struct bytes pool[] = {
        B("a"), B("b"), B("c"), B("1"), B("-1"), B("10"), B("1.5"), B(""),
        B("\0\r\n"), B("m1"), B("f1"), B("zz"), B("9223372036854775807"),
    };
    char buf[16];
    uint8_t b = in_byte(in);
    if (b < 96) {
        const struct bytes *v = &pool[b % (sizeof(pool) / sizeof(*pool))];
        add_bytes(r, v->s, v->len);
    } else if (b < 176) {
        snprintf(buf, sizeof(buf), "m%d", b % 40);
        add(r, buf);
    } else if (b < 216) {
        add_blob(r, in, 80);
    } else if (b < 240) {
        add_filled(r, 60 + in_byte(in) % 10, b);        /* 60..69 bytes */
    } else {
        add_value(r, in);
    }
}

/* A score: small integers (ties: members then order by their bytes),
 * Redis's float spellings, the infinities, and what it refuses. */
static void
add_score(struct req *r, struct input *in)
{
    static const struct bytes floats[] = {
        B("1.5"), B("-0.25"), B("+inf"), B("-inf"), B("inf"), B("-0"),
        B("1e308"), B("-1e308"), B("1e-320"), B("3.0000000000000001"),
        B("0x10"), B(" 1"), B("nan"), B("abc"), B(""), B("1e400"),
        B("+1"), B("2.5e3"), B("Infinity"), B("-nan"),
    };
    char buf[16];
    uint8_t b = in_byte(in);
    if (b < 144) {
        snprintf(buf, sizeof(buf), "%d", (int)(b % 41) - 20);
        add(r, buf);
    } else if (b < 224) {
        const struct bytes *v = &floats[b % (sizeof(floats) /
                                             sizeof(*floats))];
        add_bytes(r, v->s, v->len);
    } else {
        add_float_arg(r, in);
    }
}

/* A ZRANGEBYSCORE bound: a score, "(" and a score, or junk. */
static void
add_score_bound(struct req *r, struct input *in)
{
    static const char *const fixed[] = { "-inf", "+inf", "(-inf", "(+inf",
                                         "(", "((1", "(1.5", "(0", "x" };
    char buf[16];
    uint8_t b = in_byte(in);
    if (b < 112) {
        snprintf(buf, sizeof(buf), "%s%d", b & 1 ? "(" : "",
                 (int)(b / 2 % 41) - 20);
        add(r, buf);
    } else if (b < 200) {
        add(r, fixed[b % (sizeof(fixed) / sizeof(*fixed))]);
    } else {
        add_score(r, in);
    }
}

/* A ZRANGEBYLEX bound: -, +, "[" or "(" and a member, or junk. */
static void
add_lex_bound(struct req *r, struct input *in)
{
    uint8_t b = in_byte(in);
    if (b < 48) {
        add(r, b & 1 ? "-" : "+");
    } else if (b < 224) {
        struct req m = { 0 };
        add_member(&m, in);
        char *v = malloc(m.len[0] + 1);
        CHECK(v != NULL);
        v[0] = b & 1 ? '(' : '[';
        memcpy(v + 1, m.argv[0], m.len[0]);
        add_bytes(r, v, m.len[0] + 1);
        free(v);
        req_free(&m);
    } else {
        add(r, b & 1 ? "a" : "");               /* no bracket: refused */
    }
}

/* A count or index argument: small ones either side of 0, a few large,
 * the int64 edges and junk (add_int_arg). */
static void
add_index(struct req *r, struct input *in)
{
    char buf[16];
    uint8_t b = in_byte(in);
    if (b < 200) {
        snprintf(buf, sizeof(buf), "%d", (int)(b % 25) - 8);
        add(r, buf);
    } else {
        add_int_arg(r, in);
    }
}

/* Up to 46 elements (23 pairs) named b<base+i>, from two bytes of input:
 * a collection grows past 128 entries (a sorted set's compact bound) or
 * 512 (a hash's) in a chain of such writes. */
static void
add_many(struct req *r, struct input *in, bool pairs, bool scored)
{
    uint8_t n = 1 + in_byte(in) % (pairs ? 23 : 46);
    unsigned base = (unsigned)in_byte(in) * 23;
    char buf[24];
    for (uint8_t i = 0; i < n; i++) {
        if (pairs && scored) {
            snprintf(buf, sizeof(buf), "%u", (base + i) % 97);
            add(r, buf);
        }
        snprintf(buf, sizeof(buf), "b%u", base + i);
        add(r, buf);
        if (pairs && !scored) {
            add(r, buf + 1);
        }
    }
}

/* LMPOP's and ZMPOP's arguments: numkeys (mostly the count of the keys
 * that follow), the keys, a side (w0, w1 or junk) and maybe COUNT. */
static void
add_mpop(struct req *r, struct input *in, const char *w0, const char *w1)
{
    char buf[16];
    uint8_t b = in_byte(in);
    uint8_t n = 1 + b % 3;
    if (b >= 240) {
        add_index(r, in);
    } else {
        snprintf(buf, sizeof(buf), "%u", n);
        add(r, buf);
    }
    for (uint8_t i = 0; i < n; i++) {
        add_key(r, in);
    }
    add(r, b & 0x10 ? w0 : b & 0x20 ? w1 : "MIDDLE");
    if (b & 0x40) {
        add(r, "COUNT");
        add_index(r, in);
    }
}

static void
gen_list(struct req *r, struct input *in, uint8_t which)
{
    static const char *const push[] = { "LPUSH", "RPUSH", "LPUSHX",
                                        "RPUSHX" };
    static const char *const side[] = { "LEFT", "RIGHT", "left", "UP" };
    switch (which % 16) {
    case 0:
    case 1:
    case 2: {
        add(r, push[which / 16 % 4]);
        add_key(r, in);
        uint8_t n = 1 + in_byte(in) % 6;
        for (uint8_t i = 0; i < n; i++) {
            add_member(r, in);
        }
        break;
    }
    case 3:
        add(r, push[which / 16 % 2]);
        add_key(r, in);
        add_many(r, in, false, false);
        break;
    case 4:
    case 5:
        add(r, which & 0x80 ? "LPOP" : "RPOP");
        add_key(r, in);
        if (which & 0x40) {
            add_index(r, in);           /* a count: 0, negative, junk */
        }
        break;
    case 6:
        add(r, "LTRIM");
        add_key(r, in);
        add_index(r, in);
        add_index(r, in);
        break;
    case 7:
        add(r, "LREM");
        add_key(r, in);
        add_index(r, in);
        add_member(r, in);
        break;
    case 8:
        add(r, "LSET");
        add_key(r, in);
        add_index(r, in);
        add_member(r, in);
        break;
    case 9:
        add(r, "LINSERT");
        add_key(r, in);
        add(r, which & 0x80 ? "BEFORE" : which & 0x40 ? "after" : "AFTER");
        add_member(r, in);
        add_member(r, in);
        break;
    case 10:
        add(r, "LMOVE");
        add_key(r, in);
        add_key(r, in);
        add(r, side[in_byte(in) % 4]);
        add(r, side[in_byte(in) % 4]);
        break;
    case 11:
        add(r, "LRANGE");
        add_key(r, in);
        add_index(r, in);
        add_index(r, in);
        break;
    case 12: {
        static const char *const opts[] = { "RANK", "COUNT", "MAXLEN",
                                            "rank", "NOPE" };
        add(r, "LPOS");
        add_key(r, in);
        add_member(r, in);
        uint8_t n = in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add(r, opts[in_byte(in) % 5]);
            add_index(r, in);
        }
        break;
    }
    case 13:
        add(r, which & 0x80 ? "LLEN" : "LINDEX");
        add_key(r, in);
        if (!(which & 0x80)) {
            add_index(r, in);
        }
        break;
    case 14:
        if (which & 0x80) {
            add(r, "RPOPLPUSH");
            add_key(r, in);
            add_key(r, in);
        } else {
            add(r, "LMPOP");
            add_mpop(r, in, "LEFT", "right");
        }
        break;
    default:
        add(r, which & 0x80 ? "LINDEX" : "LSET");   /* arity errors */
        add_key(r, in);
        break;
    }
}

static void
gen_hash(struct req *r, struct input *in, uint8_t which)
{
    static const char *const reads[] = { "HGET", "HEXISTS", "HSTRLEN" };
    static const char *const whole[] = { "HGETALL", "HKEYS", "HVALS",
                                         "HLEN" };
    switch (which % 14) {
    case 0:
    case 1:
    case 2: {
        add(r, which & 0x80 ? "HMSET" : "HSET");
        add_key(r, in);
        uint8_t n = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add_member(r, in);
            add_member(r, in);
        }
        if (in_byte(in) < 8) {
            add_member(r, in);          /* a field without its value */
        }
        break;
    }
    case 3:
        add(r, "HSET");
        add_key(r, in);
        add_many(r, in, true, false);
        break;
    case 4:
        add(r, "HSETNX");
        add_key(r, in);
        add_member(r, in);
        add_member(r, in);
        break;
    case 5:
    case 6: {
        add(r, "HDEL");
        add_key(r, in);
        uint8_t n = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add_member(r, in);
        }
        break;
    }
    case 7:
        add(r, "HINCRBY");
        add_key(r, in);
        add_member(r, in);
        add_int_arg(r, in);
        break;
    case 8:
        add(r, "HINCRBYFLOAT");
        add_key(r, in);
        add_member(r, in);
        add_float_arg(r, in);
        break;
    case 9:
        add(r, reads[which / 16 % 3]);
        add_key(r, in);
        add_member(r, in);
        break;
    case 10: {
        add(r, "HMGET");
        add_key(r, in);
        uint8_t n = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add_member(r, in);
        }
        break;
    }
    case 11:
        add(r, whole[which / 16 % 4]);
        add_key(r, in);
        break;
    case 12:
        add(r, "HSCAN");
        add_key(r, in);
        add_number(r, in, false);
        if (in_byte(in) & 1) {
            add(r, "MATCH");
            add_pattern(r, in);
        }
        if (in_byte(in) & 1) {
            add(r, "COUNT");
            add_number(r, in, false);
        }
        break;
    default:
        add(r, which & 0x80 ? "HINCRBYFLOAT" : "HGET");  /* arity errors */
        add_key(r, in);
        break;
    }
}

/* ZRANGE's and its elders' options: REV, LIMIT, WITHSCORES, BYSCORE,
 * BYLEX, in any mix (so the errors of the wrong mixes too). */
static void
add_zrange_options(struct req *r, struct input *in, bool modern)
{
    uint8_t n = in_byte(in) % 4;
    for (uint8_t i = 0; i < n; i++) {
        uint8_t b = in_byte(in);
        switch (b % 6) {
        case 0:
        case 1:
            add(r, b & 8 ? "withscores" : "WITHSCORES");
            break;
        case 2:
            add(r, "LIMIT");
            add_index(r, in);
            add_index(r, in);
            break;
        case 3:
            add(r, modern ? "REV" : "NOPE");
            break;
        case 4:
            add(r, modern ? (b & 8 ? "BYSCORE" : "BYLEX") : "LIMIT");
            break;
        default:
            add(r, "LIMIT");            /* maybe short of its numbers */
            add_index(r, in);
            break;
        }
    }
}

/* A count for ZRANDMEMBER and HRANDFIELD: small either way mostly, or an
 * edge that is refused or answers the whole set (never a huge negative
 * count that is not refused: that draws until the client's output
 * limit). */
static void
add_rand_count(struct req *r, struct input *in)
{
    static const char *const edges[] = {
        "-9223372036854775808", "9223372036854775807", "4611686018427387904",
        "x", "", "1.5", " 1", "0",
    };
    char buf[16];
    uint8_t b = in_byte(in);
    if (b < 224) {
        snprintf(buf, sizeof(buf), "%d", (int)(b % 41) - 20);
        add(r, buf);
    } else {
        add(r, edges[b % 8]);
    }
}

/* Issue 37's sorted-set commands: the algebra (numkeys right mostly,
 * WEIGHTS, AGGREGATE, WITHSCORES, LIMIT, in any order and where they are
 * refused), ZRANGESTORE in ZRANGE's forms, ZRANDMEMBER, HRANDFIELD. */
static void
gen_zalg(struct req *r, struct input *in)
{
    static const char *const ops[] = {
        "ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD", "ZUNIONSTORE", "ZINTERSTORE",
        "ZDIFFSTORE",
    };
    static const char *const opts[] = {
        "WEIGHTS", "AGGREGATE", "WITHSCORES", "LIMIT", "min", "MAX", "sum", "x",
    };
    uint8_t b = in_byte(in), n = 1 + in_byte(in) % 4;
    char buf[8];
    if (b % 10 >= 7) {
        add(r, b % 10 == 7 ? "ZRANGESTORE" : b % 10 == 8 ? "ZRANDMEMBER" : "HRANDFIELD");
        add_key(r, in);
        if (b % 10 == 7) {
            add_key(r, in);
            add_score_bound(r, in);
            add_score_bound(r, in);
            add_zrange_options(r, in, true);
        } else if (b & 0x80) {
            add_rand_count(r, in);
            if (b & 0x40) {
                add(r, b % 10 == 8 ? "WITHSCORES" : "WITHVALUES");
            }
        }
        return;
    }
    add(r, ops[b % 7]);
    if (b % 7 >= 4) {
        add_key(r, in);                 /* the destination */
    }
    if (in_byte(in) < 24) {
        add_number(r, in, false);
    } else {
        snprintf(buf, sizeof(buf), "%u", n);
        add(r, buf);
    }
    for (uint8_t i = 0; i < n; i++) {
        add_key(r, in);
    }
    for (uint8_t o = in_byte(in) % 4; o > 0; o--) {
        uint8_t w = in_byte(in);
        add(r, opts[w % 8]);
        for (uint8_t i = 0; i < (w % 8 == 0 ? n : w % 8 == 2 ? 0 : 1); i++) {
            add_score(r, in);
        }
    }
}

static void
gen_zset(struct req *r, struct input *in, uint8_t which)
{
    static const char *const flags[] = { "NX", "XX", "GT", "LT", "CH",
                                         "INCR", "nx", "ch" };
    switch (which % 20) {
    case 0:
    case 1:
    case 2: {
        add(r, "ZADD");
        add_key(r, in);
        uint8_t f = in_byte(in);
        for (uint8_t i = 0; i < 8; i++) {
            if (f & (1u << i) && in_byte(in) < 64) {
                add(r, flags[i]);
            }
        }
        uint8_t n = f & 0x20 ? 1 : 1 + in_byte(in) % 4;   /* INCR: one */
        for (uint8_t i = 0; i < n; i++) {
            add_score(r, in);
            add_member(r, in);
        }
        if (in_byte(in) < 8) {
            add_score(r, in);           /* a score without its member */
        }
        break;
    }
    case 3:
        add(r, "ZADD");
        add_key(r, in);
        if (which & 0x80) {
            add(r, which & 0x40 ? "GT" : "CH");
        }
        add_many(r, in, true, true);
        break;
    case 4:
        add(r, "ZINCRBY");
        add_key(r, in);
        add_score(r, in);
        add_member(r, in);
        break;
    case 5: {
        add(r, which & 0x80 ? "ZREM" : "ZMSCORE");
        add_key(r, in);
        uint8_t n = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add_member(r, in);
        }
        break;
    }
    case 6:
        add(r, which & 0x80 ? "ZREMRANGEBYSCORE" : "ZCOUNT");
        add_key(r, in);
        add_score_bound(r, in);
        add_score_bound(r, in);
        break;
    case 7:
        add(r, which & 0x80 ? "ZREMRANGEBYRANK" : "ZREMRANGEBYLEX");
        add_key(r, in);
        if (which & 0x80) {
            add_index(r, in);
            add_index(r, in);
        } else {
            add_lex_bound(r, in);
            add_lex_bound(r, in);
        }
        break;
    case 8:
        if (which & 0x20) {
            add(r, "ZMPOP");
            add_mpop(r, in, "MIN", "max");
            break;
        }
        add(r, which & 0x80 ? "ZPOPMIN" : "ZPOPMAX");
        add_key(r, in);
        if (which & 0x40) {
            add_index(r, in);
        }
        break;
    case 9:
    case 10: {
        /* ZRANGE by rank, BYSCORE or BYLEX (the bounds to match, mostly). */
        uint8_t b = in_byte(in);
        add(r, "ZRANGE");
        add_key(r, in);
        if (b % 3 == 0) {
            add_index(r, in);
            add_index(r, in);
        } else if (b % 3 == 1) {
            add_score_bound(r, in);
            add_score_bound(r, in);
            add(r, "BYSCORE");
        } else {
            add_lex_bound(r, in);
            add_lex_bound(r, in);
            add(r, "BYLEX");
        }
        add_zrange_options(r, in, true);
        break;
    }
    case 11:
        add(r, which & 0x80 ? "ZREVRANGE" : "ZRANGE");
        add_key(r, in);
        add_index(r, in);
        add_index(r, in);
        add_zrange_options(r, in, false);
        break;
    case 12:
    case 13:
        add(r, which & 0x80 ? "ZREVRANGEBYSCORE" : "ZRANGEBYSCORE");
        add_key(r, in);
        add_score_bound(r, in);
        add_score_bound(r, in);
        add_zrange_options(r, in, false);
        break;
    case 14:
        add(r, which & 0x80 ? "ZREVRANGEBYLEX" : "ZRANGEBYLEX");
        add_key(r, in);
        add_lex_bound(r, in);
        add_lex_bound(r, in);
        if (in_byte(in) & 1) {
            add(r, "LIMIT");
            add_index(r, in);
            add_index(r, in);
        }
        break;
    case 15:
        add(r, "ZLEXCOUNT");
        add_key(r, in);
        add_lex_bound(r, in);
        add_lex_bound(r, in);
        break;
    case 16:
        add(r, which & 0x80 ? "ZRANK" : which & 0x40 ? "ZREVRANK" : "ZSCORE");
        add_key(r, in);
        add_member(r, in);
        break;
    case 17:
        add(r, "ZCARD");
        add_key(r, in);
        break;
    case 18:
        add(r, "ZSCAN");
        add_key(r, in);
        add_number(r, in, false);
        if (in_byte(in) & 1) {
            add(r, "MATCH");
            add_pattern(r, in);
        }
        if (in_byte(in) & 1) {
            add(r, "COUNT");
            add_number(r, in, false);
        }
        break;
    default:
        if (which & 0x40) {
            gen_zalg(r, in);
            break;
        }
        add(r, which & 0x80 ? "ZADD" : "ZINCRBY");      /* arity errors */
        add_key(r, in);
        add_score(r, in);
        break;
    }
}

/* A set member: small integers mostly (an intset's), else a collection
 * member (strings, long ones, binary). */
static void
add_set_member(struct req *r, struct input *in)
{
    char buf[16];
    uint8_t b = in_byte(in);
    if (b < 128) {
        snprintf(buf, sizeof(buf), "%d", (int)(b % 64) - 16);
        add(r, buf);
    } else {
        add_member(r, in);
    }
}

/* Up to 46 integers from base on (or words b<i>): a set passes its 512
 * intset entries, or its 128 others, within a chain of such writes. */
static void
add_many_set(struct req *r, struct input *in)
{
    uint8_t n = 1 + in_byte(in) % 46;
    unsigned base = (unsigned)in_byte(in) * 23;
    bool words = in_byte(in) < 64;
    char buf[24];
    for (uint8_t i = 0; i < n; i++) {
        snprintf(buf, sizeof(buf), words ? "b%u" : "%u", base + i);
        add(r, buf);
    }
}

static void
add_set_keys(struct req *r, struct input *in, uint8_t most)
{
    uint8_t n = 1 + in_byte(in) % most;
    for (uint8_t i = 0; i < n; i++) {
        add_key(r, in);
    }
}

/* A SPOP's or SRANDMEMBER's count: small either side of 0, or junk. */
static void
add_set_count(struct req *r, struct input *in)
{
    char buf[16];
    uint8_t b = in_byte(in);
    if (b < 200) {
        snprintf(buf, sizeof(buf), "%d", (int)(b % 30) - 8);
        add(r, buf);
    } else {
        add_int_arg(r, in);
    }
}

static void
gen_set_algebra(struct req *r, struct input *in, uint8_t which)
{
    static const char *const reads[] = { "SINTER", "SUNION", "SDIFF" };
    static const char *const stores[] = { "SINTERSTORE", "SUNIONSTORE",
                                          "SDIFFSTORE" };
    if (which & 0x40) {
        add(r, stores[which / 16 % 3]);
        add_key(r, in);
    } else if (which & 0x20) {
        char buf[8];
        uint8_t n = in_byte(in) % 5;
        add(r, "SINTERCARD");
        snprintf(buf, sizeof(buf), "%u", n);
        add(r, buf);
        add_set_keys(r, in, 4);
        if (in_byte(in) & 1) {
            add(r, "LIMIT");
            add_set_count(r, in);
        }
        return;
    } else {
        add(r, reads[which / 16 % 3]);
    }
    add_set_keys(r, in, 4);
}

static void
gen_set(struct req *r, struct input *in, uint8_t which)
{
    static const char *const reads[] = { "SISMEMBER", "SCARD", "SMEMBERS",
                                         "SPOP" };
    switch (which % 12) {
    case 0:
    case 1:
    case 2: {
        add(r, which & 0x80 ? "SREM" : "SADD");
        add_key(r, in);
        uint8_t n = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add_set_member(r, in);
        }
        break;
    }
    case 3:
        add(r, "SADD");
        add_key(r, in);
        add_many_set(r, in);
        break;
    case 4:
        add(r, reads[which / 16 % 4]);
        add_key(r, in);
        if (which / 16 % 4 == 0) {
            add_set_member(r, in);
        }
        break;
    case 5: {
        add(r, "SMISMEMBER");
        add_key(r, in);
        uint8_t n = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < n; i++) {
            add_set_member(r, in);
        }
        break;
    }
    case 6:
        add(r, which & 0x80 ? "SPOP" : "SRANDMEMBER");
        add_key(r, in);
        add_set_count(r, in);
        break;
    case 7:
        add(r, "SMOVE");
        add_key(r, in);
        add_key(r, in);
        add_set_member(r, in);
        break;
    case 8:
    case 9:
        gen_set_algebra(r, in, which);
        break;
    case 10:
        add(r, "SSCAN");
        add_key(r, in);
        add_number(r, in, false);
        if (in_byte(in) & 1) {
            add(r, "MATCH");
            add_pattern(r, in);
        }
        if (in_byte(in) & 1) {
            add(r, "COUNT");
            add_number(r, in, false);
        }
        break;
    default:
        add(r, which & 0x80 ? "SMOVE" : "SINTERCARD");  /* arity errors */
        add_key(r, in);
        break;
    }
}

/* One collection command of any of the four types. */
static void
gen_coll(struct req *r, struct input *in, uint8_t which)
{
    uint8_t w = in_byte(in);
    if (which % 4 == 0) {
        gen_list(r, in, w);
    } else if (which % 4 == 1) {
        gen_hash(r, in, w);
    } else if (which % 4 == 2) {
        gen_zset(r, in, w);
    } else {
        gen_set(r, in, w);
    }
}

static void
gen_admin(struct req *r, struct input *in, uint8_t which)
{
    static const char *const fixed[][4] = {
        { "INFO", NULL }, { "INFO", "memory", NULL }, { "INFO", "keyspace" },
        { "CLIENT", "LIST" }, { "CLIENT", "INFO" }, { "SLOWLOG", "GET" },
        { "SLOWLOG", "RESET" }, { "DBSIZE" }, { "FLUSHALL" }, { "TIME" },
        { "PING" }, { "HELLO", "3" }, { "HELLO", "2" }, { "SAVE" },
        { "LASTSAVE" }, { "COMMAND", "COUNT" }, { "COMMAND", "INFO", "rl.log" },
        { "COMMAND", "DOCS", "cl.throttle" }, { "CONFIG", "GET", "*" },
        { "CONFIG", "RESETSTAT" }, { "CLUSTER", "SLOTS" }, { "CLUSTER", "NODES" },
        { "CLUSTER", "SHARDS" }, { "SELECT", "0" }, { "READONLY" },
        { "CLIENT", "GETNAME" }, { "INFO", "commandstats" },
        { "INFO", "errorstats" }, { "FLUSHDB" }, { "CLIENT", "ID" },
        { "MULTI" }, { "EXEC" }, { "DISCARD" }, { "WATCH", "k0", "k1" },
        { "UNWATCH" }, { "EXEC" }, { "SELECT", "1" }, { "SELECT", "15" },
        { "SWAPDB", "0", "1" }, { "MOVE", "k0", "1" }, { "MOVE", "k1", "0" },
        { "INFO", "keyspace" }, { "SWAPDB", "1", "15" }, { "SELECT", "16" },
        { "MEMORY", "USAGE", "k0" }, { "MEMORY", "STATS" }, { "RESET" },
        { "CLIENT", "PAUSE", "10", "WRITE" }, { "CLIENT", "UNPAUSE" },
        { "CLIENT", "KILL", "MAXAGE", "1" },
        { "FUNCTION", "LIST" }, { "INCREX", "k0", "BYFLOAT", "0.1" },
        { "INCREX", "k1", "EX", "1" }, { "GET", "k0" },
        { "COMMAND", "DOCS", "set" }, { "COMMAND", "INFO", "getex", "copy" },
        { "COMMAND", "GETKEYS", "RENAME", "k0" }, { "MEMORY", "USAGE", "k1" },
        { "SWAPDB", "0", "0" }, { "COMMAND", "DOCS", "expire", "getrange" },
    };
    uint8_t b = in_byte(in);
    switch (which % 4) {
    case 0:
        gen_config_set(r, in);
        break;
    case 1:
        for (size_t i = 0; i < 4 && fixed[b % (sizeof(fixed) / sizeof(fixed[0]))][i] != NULL; i++) {
            add(r, fixed[b % (sizeof(fixed) / sizeof(fixed[0]))][i]);
        }
        break;
    case 2:
        add(r, b & 1 ? "CLIENT" : "COMMAND");
        add(r, b & 1 ? "SETNAME" : (b & 6) == 6 ? "GETKEYSANDFLAGS"
                                                : "GETKEYS");
        if (b & 1) {
            add_blob(r, in, 300);
        } else if (b & 2) {
            uint8_t w = in_byte(in);
            if (w & 1) {
                gen_string(r, in, w >> 1);
            } else if (w & 4) {
                gen_coll(r, in, w >> 3);
            } else if (w & 2) {
                gen_expire(r, in, w >> 2);
            } else {
                gen_keys(r, in, w >> 2);
            }
        } else if (b & 4) {
            gen_rl_all(r, in);
        } else {
            gen_limiter(r, in, in_byte(in));
        }
        break;
    default:
        add(r, b & 1 ? "CONFIG" : "COMMAND");
        add(r, b & 1 ? "GET" : "LIST");
        if (!(b & 1)) {
            add(r, "FILTERBY");
            add(r, "PATTERN");
        }
        add_pattern(r, in);
        break;
    }
}

static const char *const names[] = {
    "cl.throttle", "rl.fixed", "rl.sliding", "rl.log", "rl.entries",
    "rl.tiers", "rl.topdenied", "rl.all", "get", "pttl", "ttl", "exists", "del",
    "type", "keys",
    "scan", "dbsize", "flushall", "config", "client", "command", "info",
    "slowlog", "cluster", "hello", "auth", "echo", "ping", "select", "time",
    "save", "lastsave", "readonly", "readwrite", "nosuch", "CL.THROTTLE",
    "multi", "exec", "discard", "watch", "unwatch", "swapdb", "move",
    "flushdb", "memory", "reset", "monitor", "function", "script", "gcra",
    "GCRA", "increx", "INCREX", "set", "setnx", "setex", "psetex", "getset",
    "getdel", "getex", "mget", "mset", "msetnx", "incr", "incrby", "decr",
    "decrby", "incrbyfloat", "append", "strlen", "getrange", "setrange",
    "expire", "pexpire", "expireat", "pexpireat", "expiretime",
    "pexpiretime", "persist", "unlink", "rename", "renamenx", "touch",
    "copy", "SET", "GETEX", "SETRANGE", "EXPIRE", "lpush", "rpush",
    "lpushx", "rpushx", "lpop", "rpop", "llen", "lindex", "lrange", "ltrim",
    "lrem", "lset", "lpos", "linsert", "lmove", "hset", "hsetnx", "hmset",
    "hget", "hmget", "hdel", "hlen", "hstrlen", "hexists", "hincrby",
    "hincrbyfloat", "hgetall", "hkeys", "hvals", "hscan", "zadd", "zincrby",
    "zrem", "zscore", "zmscore", "zcard", "zcount", "zlexcount", "zrange",
    "zrevrange", "zrangebyscore", "zrevrangebyscore", "zrangebylex",
    "zrevrangebylex", "zremrangebyscore", "zremrangebyrank",
    "zremrangebylex", "zrank", "zrevrank", "zpopmin", "zpopmax", "zscan",
    "rpoplpush", "lmpop", "zmpop",
    "sadd", "srem", "sismember", "smismember", "scard", "smembers",
    "srandmember", "spop", "smove", "sscan", "sinter", "sintercard",
    "sinterstore", "sunion", "sunionstore", "sdiff", "sdiffstore",
    "zunion", "zinter", "zdiff", "zunionstore", "zinterstore", "zdiffstore",
    "zintercard", "zrangestore", "zrandmember", "hrandfield",
};

/* Any command name with arguments of any bytes. */
static void
gen_raw(struct req *r, struct input *in)
{
    add(r, names[in_byte(in) % (sizeof(names) / sizeof(names[0]))]);
    uint8_t n = in_byte(in) % 8;
    for (uint8_t i = 0; i < n; i++) {
        uint8_t b = in_byte(in);
        if (b < 100) {
            add_number(r, in, b & 1);
        } else if (b < 140) {
            add_key(r, in);
        } else {
            add_blob(r, in, 40);
        }
    }
}

/* A command spelt out: argc, then each argument as a 16-bit length and
 * its bytes (what the seed corpus uses for exact reproducers). */
static void
gen_literal(struct req *r, struct input *in)
{
    uint8_t argc = in_byte(in) % MAX_ARGS;
    for (uint8_t i = 0; i < argc && in->n > 0; i++) {
        size_t len = in_u16(in);
        if (len > in->n) {
            len = in->n;
        }
        add_bytes(r, in->p, len);
        in->p += len;
        in->n -= len;
    }
}

/* ---- what a command may do --------------------------------------------- */

static bool
word(const struct req *r, size_t i, const char *w)
{
    return i < r->argc && r->len[i] == strlen(w) &&
           strcasecmp(r->argv[i], w) == 0;
}

/* Commands the driver does not run: they leave the process, touch
 * sockets, fork, read the config file, or move the driver's files; and
 * MONITOR and CLIENT REPLY, which break the one-reply-per-command rule the
 * driver checks (conn.c, which it bypasses, does the muting). */
static bool
skipped(const struct req *r)
{
    if (word(r, 0, "quit") || word(r, 0, "shutdown") || word(r, 0, "bgsave") ||
        word(r, 0, "bgrewriteaof") || word(r, 0, "subscribe") ||
        word(r, 0, "psubscribe") || word(r, 0, "unsubscribe") ||
        word(r, 0, "punsubscribe") || word(r, 0, "replicaof") ||
        word(r, 0, "slaveof") || word(r, 0, "psync") ||
        word(r, 0, "replconf") || word(r, 0, "wait") ||
        word(r, 0, "monitor") || (word(r, 0, "client") && word(r, 1, "reply")) ||
        (word(r, 0, "client") && word(r, 1, "kill")) ||
        (word(r, 0, "cluster") && word(r, 1, "reload"))) {
        return true;
    }
    /* RL.ACQUIRE with a WAIT that may block: the driver has no loop for
     * its timers (WAIT 0 and the refused values run). */
    if (word(r, 0, "rl.acquire")) {
        for (size_t i = 4; i + 1 < r->argc; i++) {
            int64_t w;
            if (word(r, i, "wait") &&
                num_parse_i64(r->argv[i + 1], r->len[i + 1], &w) && w > 0 &&
                w <= 3600000) {
                return true;
            }
        }
    }
    /* MIGRATE runs (its parsing, lookups and a refused connection) only
     * towards 127.0.0.1:1, where nobody listens: any other target would
     * be a socket of the driver's, or a name to resolve. */
    if (word(r, 0, "migrate") &&
        !(word(r, 1, "127.0.0.1") && word(r, 2, "1"))) {
        return true;
    }
    /* COPY is the one command that multiplies big values (into 16
     * databases and every name): past 32 MB of strings and arrays it is
     * passed over, so that an input's memory stays bounded. */
    if (word(r, 0, "copy") && keytype_owned_bytes() > ((size_t)32 << 20)) {
        return true;
    }
    /* A SETRANGE spelt out may make a string of up to proto-max-bulk-len
     * (512 MB): one past 16 MB is passed over, unless it is refused
     * (beyond that limit) and allocates nothing. */
    int64_t off;
    if (word(r, 0, "setrange") && r->argc == 4 &&
        num_parse_i64(r->argv[2], r->len[2], &off) &&
        off > ((int64_t)16 << 20) &&
        (uint64_t)off + r->len[3] <= (uint64_t)srv.conf.proto_max_bulk_len) {
        return true;
    }
    if (word(r, 0, "config") && word(r, 1, "set")) {
        for (size_t i = 2; i < r->argc; i += 2) {
            /* port and bind open listeners: sockets the driver has no
             * loop for. */
            static const char *const owned[] = { "dir", "dbfilename",
                                                 "loglevel", "log-format",
                                                 "logfile", "appendonly",
                                                 "port", "bind" };
            for (size_t k = 0; k < sizeof(owned) / sizeof(*owned); k++) {
                if (word(r, i, owned[k])) {
                    return true;
                }
            }
        }
    }
    return false;
}

/* Does RL.ALL end in its own PEEK, after the parts its argcs count? */
static bool
rl_all_peeks(const struct req *r)
{
    size_t i = 2;
    long n = r->argc > 1 ? strtol(r->argv[1], NULL, 10) : 0;
    for (long p = 0; p < n && i < r->argc; p++) {
        unsigned long k = strtoul(r->argv[i], NULL, 10);
        if (k > r->argc) {
            return false;
        }
        i += 1 + k;
    }
    return i + 1 == r->argc && word(r, i, "peek");
}

/* May this command change the keyspace? Limiters unless PEEK, DEL,
 * UNLINK, the flushes, SWAPDB, MOVE, RENAME(NX), COPY, EXEC, the string
 * writers, the expiry setters and GETEX with an option. Everything else
 * must leave the digest alone: GET, MGET, STRLEN, GETRANGE, TTL, PTTL,
 * (P)EXPIRETIME, TOUCH, EXISTS, TYPE, GETEX without options, the
 * limiters' PEEK, RL.ENTRIES, RL.TOPDENIED, the admin commands. */
static bool
may_write(const struct req *r)
{
    static const char *const writers[] = {
        "cl.throttle", "rl.fixed", "rl.sliding", "rl.log", "rl.tiers",
        "rl.all", "del", "unlink", "flushall", "flushdb", "exec", "swapdb", "move",
        "gcra", "increx", "rename", "renamenx", "copy", "set", "setnx",
        "setex", "psetex", "getset", "getdel", "mset", "msetnx", "incr",
        "incrby", "decr", "decrby", "incrbyfloat", "append", "setrange",
        "expire", "pexpire", "expireat", "pexpireat", "persist", "lpush",
        "rpush", "lpushx", "rpushx", "lpop", "rpop", "ltrim", "lrem", "lset",
        "linsert", "lmove", "hset", "hsetnx", "hmset", "hdel", "hincrby",
        "hincrbyfloat", "zadd", "zincrby", "zrem", "zremrangebyscore",
        "zremrangebyrank", "zremrangebylex", "zpopmin", "zpopmax",
        "rpoplpush", "lmpop", "zmpop", "sadd", "srem", "spop", "smove",
        "sinterstore", "sunionstore", "sdiffstore",
        "zunionstore", "zinterstore", "zdiffstore", "zrangestore", "restore",
        "migrate", "rl.acquire", "rl.refresh", "rl.release",
    };
    bool writer = word(r, 0, "getex") && r->argc > 2;
    for (size_t k = 0; k < sizeof(writers) / sizeof(writers[0]); k++) {
        writer |= word(r, 0, writers[k]);
    }
    /* Inside MULTI a command is only queued (EXEC runs the queue). */
    if (multi_open(client, client->multi) && !word(r, 0, "exec")) {
        return false;
    }
    if (word(r, 0, "rl.all")) {
        return !rl_all_peeks(r);
    }
    if (word(r, 0, "rl.acquire")) {
        for (size_t i = 2; i < r->argc; i++) {
            if (word(r, i, "peek")) {
                return false;   /* HOLDER PEEK is refused */
            }
        }
    }
    if (!writer || !(word(r, 0, "cl.throttle") || word(r, 0, "rl.fixed") ||
                     word(r, 0, "rl.sliding") || word(r, 0, "rl.log") ||
                     word(r, 0, "rl.tiers"))) {
        return writer;
    }
    if (word(r, 0, "cl.throttle")) {
        for (size_t i = 5; i < r->argc; i++) {
            if (word(r, i, "peek")) {
                return false;
            }
        }
        return true;
    }
    for (size_t i = 2; i < r->argc; i++) {
        if (word(r, i, "meta") || word(r, i, "cost")) {
            i++;
        } else if (word(r, i, "peek")) {
            return false;
        }
    }
    return true;
}

/* ---- RESP replies ------------------------------------------------------ */

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

/* The length of one RESP value at p, or 0 when it is not exactly one
 * well-formed value. */
static size_t
resp_value(const char *p, size_t n, bool resp3, int depth)
{
    int64_t v;
    if (n < 3 || depth > 64) {
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
    case '(':
        return ll > 0 ? head : 0;
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

/* ---- limiter keys whose expiry a command set by hand ------------------- */

/*
 * A RL.LOG or RL.TIERS key expires when its newest entry leaves its
 * retention: every call that changes it sets that expiry again, and
 * RENAME, COPY, MOVE, SWAPDB and a reload carry it over unchanged. Since
 * EXPIRE and PERSIST work on limiter keys too, one they reached holds the
 * expiry they gave it until its next state-changing call, and only then.
 * So check_log() and check_tiers() assert the exact expiry,
 * keyspace_fresh_ms() of when the state is fresh, on every log and tiers
 * key but those whose name is listed here: the names an EXPIRE, PEXPIRE,
 * EXPIREAT, PEXPIREAT, PERSIST or GETEX named (queued inside MULTI or
 * not, whatever it answered), and the destination of a RENAME, RENAMENX
 * or COPY of a listed name. Names, not records: MOVE, SWAPDB and
 * COPY ... DB carry a key between databases under its name. A name leaves
 * the list when no database holds it (no MULTI open), or when a call that
 * must have set its expiry again ran on it (an RL.LOG or RL.TIERS outside
 * MULTI answering allowed, taking the default cost of 1, no PEEK) and no
 * other database holds it. An expiry the limiters' own path gets wrong,
 * or one any other command changes behind their back, is still caught on
 * every key no expiry command reached.
 */
#define TAINT_MAX 64
static struct {
    char *p;
    size_t len;
} tainted[TAINT_MAX];
static size_t ntainted;
static bool taint_all;          /* more names than the list holds */

static bool
is_tainted(const char *key, size_t len)
{
    if (taint_all) {
        return true;
    }
    for (size_t i = 0; i < ntainted; i++) {
        if (tainted[i].len == len && memcmp(tainted[i].p, key, len) == 0) {
            return true;
        }
    }
    return false;
}

static void
taint(const char *key, size_t len)
{
    if (is_tainted(key, len)) {
        return;
    }
    if (ntainted == TAINT_MAX) {
        taint_all = true;
        return;
    }
    tainted[ntainted].p = malloc(len ? len : 1);
    CHECK(tainted[ntainted].p != NULL);
    memcpy(tainted[ntainted].p, key, len);
    tainted[ntainted++].len = len;
}

static void
untaint_at(size_t i)
{
    free(tainted[i].p);
    tainted[i] = tainted[--ntainted];
}

static void
taint_reset(void)
{
    while (ntainted > 0) {
        untaint_at(0);
    }
    taint_all = false;
}

/* The live record of key in database db (NULL when none). A lookup, as a
 * GET's: a dead record met is collected. */
static struct store_rec *
live_in(size_t db, const char *key, size_t len)
{
    if (db >= srv.ndbs || srv.dbs[db] == NULL) {
        return NULL;
    }
    return store_lookup(srv.dbs[db], key, len, clock_wall_now());
}

/* Does a database other than skip (SIZE_MAX: none) hold key? */
static bool
held_elsewhere(const char *key, size_t len, size_t skip)
{
    for (size_t db = 0; db < srv.ndbs; db++) {
        if (db != skip && live_in(db, key, len) != NULL) {
            return true;
        }
    }
    return false;
}

static bool word(const struct req *r, size_t i, const char *w);

/* Before a command runs (or is queued): list what it may set by hand. */
static void
taint_before(const struct req *r)
{
    static const char *const setters[] = { "expire", "pexpire", "expireat",
                                           "pexpireat", "persist", "getex" };
    if (r->argc < 2) {
        return;
    }
    for (size_t k = 0; k < sizeof(setters) / sizeof(*setters); k++) {
        if (word(r, 0, setters[k])) {
            taint(r->argv[1], r->len[1]);
        }
    }
    if ((word(r, 0, "rename") || word(r, 0, "renamenx") ||
         word(r, 0, "copy")) &&
        r->argc >= 3 && is_tainted(r->argv[1], r->len[1])) {
        taint(r->argv[2], r->len[2]);
    }
}

/* After a command that ran outside MULTI: what leaves the list. */
static void
taint_after(const struct req *r, const char *reply, size_t n)
{
    if ((word(r, 0, "rl.log") || word(r, 0, "rl.tiers")) && r->argc >= 2 &&
        n >= 8 && memcmp(reply, "*5\r\n:0\r\n", 8) == 0) {
        bool plain = true;
        for (size_t i = 2; i < r->argc; i++) {
            plain &= !word(r, i, "peek") && !word(r, i, "cost");
        }
        for (size_t i = 0; plain && i < ntainted; i++) {
            if (tainted[i].len == r->len[1] &&
                memcmp(tainted[i].p, r->argv[1], r->len[1]) == 0 &&
                !held_elsewhere(r->argv[1], r->len[1], (size_t)srv.db)) {
                untaint_at(i);
                break;
            }
        }
    }
    for (size_t i = 0; i < ntainted;) {
        if (!held_elsewhere(tainted[i].p, tainted[i].len, SIZE_MAX)) {
            untaint_at(i);
        } else {
            i++;
        }
    }
}

/*
 * A live log or tiers key may hold no entry (each one's departure from its
 * retention past; after a COST 0 or refund call even its array emptied,
 * and a load gives it back as it was: encoding 3 keeps such keys) in two
 * cases only:
 *
 *  - its last millisecond: keyspace_fresh_ms() rounds the moment the state
 *    is fresh (F, always a whole ms for logs and tiers) up to the ms the
 *    key lives through, so it lives through [F, F + 1 ms) too (reported:
 *    docs/commands.md says such a key goes as soon as it is fresh);
 *  - an expiry set by hand past F (PERSIST, a long EXPIRE; its name is
 *    listed above) keeps it for as long as that says.
 *
 * may_hold_none() allows exactly these: such a key anywhere else is a bug
 * (check_log, check_tiers, scan_rec). A reload must give them back whole.
 */
static bool
may_hold_none(const struct store_rec *r)
{
    return r->expire_at == now_ns / 1000000 ||
           is_tainted(store_rec_key(r), store_rec_keylen(r));
}

/* A log's or tiers' encoding (keep, then the count) holds no entry. */
static bool
encodes_none(const struct store_rec *r, const struct membuf *enc)
{
    uint32_t n;
    if (r->type == KEY_LEASE) {
        CHECK(enc->len >= sizeof(n));
        memcpy(&n, enc->p, sizeof(n));
        return n == 0;
    }
    if (r->type != KEY_LOG && r->type != KEY_TIERS) {
        return false;
    }
    CHECK(enc->len >= sizeof(int64_t) + sizeof(n));
    memcpy(&n, enc->p + sizeof(int64_t), sizeof(n));
    return n == 0;
}

/* ---- keyspace checks --------------------------------------------------- */

struct scan_state {
    uint64_t sum;
    uint64_t live;
    size_t owned;
    bool whole_keys;    /* hash every key byte (else its length and head) */
    size_t db;          /* of the records scanned */
    struct membuf buf;
};

/* FNV-1a, 8 bytes at a time (then the tail byte by byte) so megabyte
 * strings hash fast: any change to the bytes changes it. The driver's own
 * loop: no coverage to trace in it. */
__attribute__((no_sanitize("coverage"))) static uint64_t
fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w;
        memcpy(&w, b, sizeof(w));
        h = (h ^ w) * UINT64_C(0x100000001b3);
        h ^= h >> 32;
    }
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    }
    return h;
}

static void
check_log(const struct store_rec *r, const struct ks_log *ls)
{
    int64_t sum = 0, prev = INT64_MIN;
    bool by_hand = is_tainted(store_rec_key(r), store_rec_keylen(r));
    CHECK((ls->ring.len >= 1 || may_hold_none(r)) &&
          ls->ring.len <= ls->ring.cap);
    /* (No array at all: a key loaded holding nothing.) */
    CHECK((ls->ring.cap == 0 ? ls->ring.len == 0
                             : ls->ring.head < ls->ring.cap) &&
          ls->keep_ms >= 1000);
    CHECK(ls->meta_len <= ls->meta_cap);
    for (uint32_t i = ls->ring.len; i-- > 0;) {
        const struct slog_entry *e = slog_newest(&ls->ring, i);
        CHECK(e->cost >= 1 && e->t_ms >= prev);
        CHECK(e->meta_len <= KS_META_MAX);
        CHECK((uint64_t)e->meta_off + e->meta_len <= ls->meta_len);
        CHECK(!__builtin_add_overflow(sum, e->cost, &sum));
        prev = e->t_ms;
    }
    CHECK(sum == ls->ring.sum);
    /* (An emptied array says nothing of when it went fresh.) */
    CHECK(r->expire_at ==
              keyspace_fresh_ms(keytype_log_fresh_at(ls, now_ns)) ||
          by_hand || ls->ring.len == 0);
}

static void
check_tiers(const struct store_rec *r, const struct ks_tiers *ts)
{
    bool by_hand = is_tainted(store_rec_key(r), store_rec_keylen(r));
    CHECK((ts->st.len >= 1 || may_hold_none(r)) &&
          ts->st.len <= ts->st.cap && ts->keep >= 1);
    for (uint32_t i = 0; i < ts->st.len; i++) {
        CHECK(ts->st.b[i].count >= 1);
        CHECK(i == 0 || ts->st.b[i].sec > ts->st.b[i - 1].sec);
    }
    CHECK(r->expire_at ==
              keyspace_fresh_ms(keytype_tiers_fresh_at(ts, now_ns)) ||
          by_hand || ts->st.len == 0);
}

/* A lease key: entries well formed, each holder once, at most
 * LEASE_LIMIT_MAX of them, none ending after the key's expiry (each write
 * sets it to the last live end; ended ones end before that), unless an
 * expiry command set it by hand. */
static void
check_lease(const struct store_rec *r, const struct ks_lease *ls)
{
    bool by_hand = is_tainted(store_rec_key(r), store_rec_keylen(r));
    struct lease_entry e, f;
    uint32_t off = 0, n = 0;
    CHECK(ls->set.used <= ls->set.cap && ls->set.n <= LEASE_LIMIT_MAX);
    while (lease_next(&ls->set, &off, &e)) {
        CHECK(e.len >= 1 && e.len <= LEASE_HOLDER_MAX);
        CHECK(off <= ls->set.used);
        CHECK(lease_find(&ls->set, e.holder, e.len, &f) && f.off == e.off);
        CHECK(by_hand || r->expire_at == STORE_NEVER ||
              e.end_ms <= r->expire_at);
        n++;
    }
    CHECK(off == ls->set.used && n == ls->set.n);
}

/*
 * A collection's state into h, element by element, as a client sees it
 * (not its encoding's bytes: a large hash's encoding follows its table,
 * whose order a reload's fresh keys change): a list's elements in order;
 * a hash's pairs in order while it is compact (HGETALL's order then is
 * Redis's and part of what a reload keeps), in any order once large; a
 * sorted set's members and scores in order. Which of its two encodings a
 * hash or a sorted set is in counts too (HSCAN and ZSCAN show it). On the
 * way, what must hold of every collection: never empty, its length what
 * the walk met, a compact hash or set within Redis's bounds, a set in
 * score then member order with no NaN; when whole (a reload), every
 * element found again by its own lookup (HGET, ZSCORE, ZRANK) and a list
 * walked back from its tail.
 */
struct list_walk {
    uint64_t h, n, len;
    bool back;
};

static bool
list_elem(void *arg, uint64_t i, const unsigned char *p, size_t len)
{
    struct list_walk *w = arg;
    CHECK(i == (w->back ? w->len - 1 - w->n : w->n));
    w->h = fnv(&len, sizeof(len), w->h);
    w->h = fnv(p, len, w->h);
    w->n++;
    return true;
}

static uint64_t
hash_list(const struct qlist *x, bool whole, uint64_t h)
{
    uint64_t n = qlist_len(x);
    CHECK(n >= 1);
    struct list_walk w = { h, 0, n, false };
    qlist_walk(x, 0, false, list_elem, &w);
    CHECK(w.n == n);
    if (whole) {
        struct list_walk back = { 0, 0, n, true };
        qlist_walk(x, n - 1, true, list_elem, &back);
        CHECK(back.n == n);
    }
    return fnv(&n, sizeof(n), w.h);
}

static uint64_t
hash_hmap(const struct hmap *x, bool whole, uint64_t h)
{
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    uint64_t n = 0, sum = 0;
    bool compact = hmap_is_compact(x);
    while (hmap_next(x, &it, &f, &v)) {
        uint64_t e = fnv(&f.len, sizeof(f.len), UINT64_C(0xcbf29ce484222325));
        e = fnv(f.data, f.len, e);
        e = fnv(&v.len, sizeof(v.len), e);
        e = fnv(v.data, v.len, e);
        if (compact) {
            CHECK(f.len <= HMAP_PACK_VALUE && v.len <= HMAP_PACK_VALUE);
            h = fnv(&e, sizeof(e), h);
        } else {
            sum += e * UINT64_C(0x9e3779b97f4a7c15);
        }
        if (whole) {
            struct pack_item got;
            CHECK(hmap_get(x, f.data, f.len, &got) && got.len == v.len &&
                  (v.len == 0 || memcmp(got.data, v.data, v.len) == 0));
        }
        n++;
    }
    CHECK(n >= 1 && n == hmap_len(x));
    CHECK(!compact || n <= HMAP_PACK_ENTRIES);
    h = fnv(&compact, sizeof(compact), h);
    h = fnv(&n, sizeof(n), h);
    return fnv(&sum, sizeof(sum), h);
}

/* A set: its members in order while compact (an intset's order is
 * Redis's; the integers first, increasing, then the others), in any
 * order once large; within its bounds; each found by its own lookup when
 * whole. */
static uint64_t
hash_set(const struct set *x, bool whole, uint64_t h)
{
    struct set_iter it = { 0 };
    struct pack_item m;
    uint64_t n = 0, sum = 0, strings = 0;
    int64_t prev = INT64_MIN;
    bool compact = set_is_compact(x);
    while (set_next(x, &it, &m)) {
        uint64_t e = fnv(&m.len, sizeof(m.len), UINT64_C(0xcbf29ce484222325));
        e = fnv(m.data, m.len, e);
        int64_t v;
        bool integer = num_parse_i64((const char *)m.data, m.len, &v);
        if (compact) {
            CHECK(integer ? strings == 0 && (n == 0 || v > prev)
                          : m.len <= SET_PACK_VALUE);
            prev = integer ? v : prev;
            strings += !integer;
            h = fnv(&e, sizeof(e), h);
        } else {
            sum += e * UINT64_C(0x9e3779b97f4a7c15);
        }
        if (whole) {
            CHECK(set_has(x, m.data, m.len));
        }
        n++;
    }
    CHECK(n >= 1 && n == set_len(x));
    CHECK(!compact || n <= (strings > 0 ? SET_PACK_ENTRIES
                                        : SET_MAX_INTSET_ENTRIES));
    h = fnv(&compact, sizeof(compact), h);
    h = fnv(&n, sizeof(n), h);
    return fnv(&sum, sizeof(sum), h);
}

/* Redis's order of a sorted set: by score, ties by the members' bytes. */
static bool
zset_before(double a, const unsigned char *am, size_t alen, double b,
            const unsigned char *bm, size_t blen)
{
    if (a != b) {
        return a < b;
    }
    int c = memcmp(am, bm, alen < blen ? alen : blen);
    return c < 0 || (c == 0 && alen < blen);
}

static uint64_t
hash_zset(const struct zset *x, bool whole, uint64_t h)
{
    uint64_t n = zset_len(x), i = 0;
    bool compact = zset_is_compact(x);
    CHECK(n >= 1 && (!compact || n <= ZSET_PACK_MAX_ENTRIES));
    static struct zset_iter it;         /* a compact set's offsets: big */
    const unsigned char *pm = NULL;
    size_t plen = 0;
    double ps = 0;
    zset_iter_at(&it, x, 0);
    do {
        const unsigned char *m;
        size_t len;
        double s, got;
        uint64_t rank;
        zset_iter_get(&it, &m, &len, &s);
        CHECK(!isnan(s) && (!compact || len <= ZSET_PACK_MAX_VALUE));
        CHECK(i == 0 || zset_before(ps, pm, plen, s, m, len));
        if (whole) {
            CHECK(zset_score(x, m, len, &got) &&
                  memcmp(&got, &s, sizeof(s)) == 0);
            CHECK(zset_rank(x, m, len, false, &rank) && rank == i);
        }
        h = fnv(&len, sizeof(len), h);
        h = fnv(m, len, h);
        h = fnv(&s, sizeof(s), h);
        pm = m;
        plen = len;
        ps = s;
        i++;
    } while (zset_iter_next(&it));
    CHECK(i == n);
    return fnv(&compact, sizeof(compact), h);
}

static uint64_t
hash_coll(const struct store_rec *r, bool whole, uint64_t h)
{
    const void *state = store_rec_state((struct store_rec *)r);
    switch (r->type) {
    case KEY_LIST:
        return hash_list(state, whole, h);
    case KEY_HASH:
        return hash_hmap(state, whole, h);
    case KEY_SET:
        return hash_set(state, whole, h);
    default:
        return hash_zset(state, whole, h);
    }
}

/*
 * A key's state into h: its encoding (in enc; keytype_encode), but a
 * string's bytes read in place, and unless whole, a string over 64 KB
 * only sampled (its length, its first and last 4 KB, one word in 64
 * between): megabyte strings would otherwise make every command hash
 * megabytes twice. A read that wrote into the middle of a long string and
 * nowhere else would go unseen around one command; a reload hashes every
 * byte.
 */
static uint64_t
hash_state(const struct store_rec *r, const struct membuf *enc, bool whole,
           uint64_t h)
{
    if (keytype_is_coll(r->type)) {
        return hash_coll(r, whole, h);
    }
    if (r->type != KEY_STR) {
        return fnv(enc->p, enc->len, h);
    }
    struct ks_str *st = store_rec_state((struct store_rec *)r);
    const char *p = keytype_str_bytes(st);
    size_t len = st->len;
    h = fnv(&len, sizeof(len), h);
    if (whole || len <= 65536) {
        return fnv(p, len, h);
    }
    h = fnv(p, 4096, h);
    for (size_t at = 4096; at + 8 <= len - 4096; at += 512) {
        h = fnv(p + at, 8, h);
    }
    return fnv(p + len - 4096, 4096, h);
}

static void
scan_rec(struct store_rec *r, void *arg)
{
    struct scan_state *s = arg;
    const void *state = store_rec_state(r);
    /* Arrays, long strings, collections' packs and tables. */
    s->owned += keytype_rec_owned(r);
    if (r->type == KEY_STR) {
        const struct ks_str *st = state;
        CHECK(st->len <= KS_STR_INLINE ||
              (st->u.heap.p != NULL && st->u.heap.cap >= st->len));
    }
    if (store_rec_dead(r, now_ns)) {
        return;                 /* dead, not yet collected: not a key */
    }
    CHECK(r->type >= KEY_TYPE_FIRST && r->type <= KEY_TYPE_LAST &&
          r->type != KEY_COUNTER_V2);
    if (r->type == KEY_LOG) {
        check_log(r, state);
    } else if (r->type == KEY_TIERS) {
        check_tiers(r, state);
    } else if (r->type == KEY_LEASE) {
        check_lease(r, state);
    }
    s->buf.len = 0;
    if (r->type != KEY_STR && !keytype_is_coll(r->type)) {
        CHECK(keytype_encode(r, now_ns, &s->buf));
    }
    if (encodes_none(r, &s->buf)) {
        CHECK(may_hold_none(r));
    }
    uint8_t type = r->type;             /* header fields are packed */
    int64_t expire_at = r->expire_at;
    uint64_t h = fnv(&type, 1, UINT64_C(0xcbf29ce484222325));
    h = fnv(&s->db, sizeof(s->db), h);
    h = fnv(&expire_at, sizeof(expire_at), h);
    /* A command never changes a key's bytes, so around a command its
     * length and head tell keys apart; a reload compares them whole. */
    size_t keylen = store_rec_keylen(r);
    h = fnv(&keylen, sizeof(keylen), h);
    h = fnv(store_rec_key(r), s->whole_keys || keylen < 64 ? keylen : 64, h);
    h = hash_state(r, &s->buf, s->whole_keys, h);
    s->sum += h * UINT64_C(0x9e3779b97f4a7c15);
    s->live++;
}

/* Check every key; returns the digest of the live ones. */
static uint64_t
keyspace_digest(bool whole_keys)
{
    struct scan_state s = { .whole_keys = whole_keys };
    for (size_t i = 0; i < srv.ndbs; i++) {
        uint64_t cursor = 0;
        s.db = i;
        do {
            cursor = srv.dbs[i] == NULL ? 0
                                        : store_scan(srv.dbs[i], cursor,
                                                     scan_rec, &s);
        } while (cursor != 0);
    }
    mem_free(s.buf.p);
    CHECK(s.owned == keytype_owned_bytes());
    return s.sum ^ s.live;
}

/* ---- what a write did -------------------------------------------------- */

/* A record's type, expiry and state (not its name): what RENAME, COPY and
 * MOVE must carry over whole. */
static uint64_t
rec_hash(const struct store_rec *r)
{
    struct membuf buf = { 0 };
    if (r->type != KEY_STR && !keytype_is_coll(r->type)) {
        CHECK(keytype_encode(r, clock_wall_now(), &buf));
    }
    uint8_t type = r->type;             /* header fields are packed */
    int64_t expire_at = r->expire_at;
    uint64_t h = fnv(&type, 1, UINT64_C(0xcbf29ce484222325));
    h = fnv(&expire_at, sizeof(expire_at), h);
    h = hash_state(r, &buf, false, h);
    mem_free(buf.p);
    return h;
}

/* argv[1]'s key before the command ran. */
struct before {
    bool checked;               /* its effect is checked */
    bool present;
    int64_t expire_at;          /* STORE_NEVER when absent */
    uint64_t hash;
};

static struct store_rec *
live(const struct req *r, size_t i)
{
    return live_in((size_t)srv.db, r->argv[i], r->len[i]);
}

/* Effects are checked outside MULTI (a queued command only answers
 * QUEUED; EXEC's are not parsed), without maxmemory (a write may evict
 * any key, one MSET just wrote among them), and on keys up to 64 KB (each
 * lookup of a megabyte key hashes a megabyte: the checks would make such
 * a command three times as slow; the digest still sees it). */
static void
note_before(const struct req *r, struct before *b)
{
    static const char *const checked[] = {
        "set", "setex", "psetex", "setnx", "getset", "mset", "msetnx",
        "getdel", "getex", "incr", "decr", "incrby", "decrby", "incrbyfloat",
        "append", "setrange", "expire", "pexpire", "expireat", "pexpireat",
        "persist", "del", "unlink", "rename", "renamenx", "copy", "move",
        "lpush", "rpush", "lpushx", "rpushx", "hset", "hmset", "hsetnx",
        "hincrby", "hincrbyfloat", "hdel", "zrem", "zincrby", "zadd",
    };
    b->checked = false;
    for (size_t k = 0; k < sizeof(checked) / sizeof(*checked); k++) {
        b->checked |= word(r, 0, checked[k]);
    }
    b->checked &= r->argc >= 2 && !multi_open(client, client->multi) &&
                  srv.conf.maxmemory == 0;
    for (size_t i = 1; i < r->argc && i < 3; i++) {
        b->checked &= r->len[i] <= 65536;   /* see above */
    }
    if (!b->checked) {
        return;
    }
    struct store_rec *rec = live(r, 1);
    b->present = rec != NULL;
    b->expire_at = rec != NULL ? rec->expire_at : STORE_NEVER;
    b->hash = rec != NULL ? rec_hash(rec) : 0;
}

static bool
reply_is(const char *reply, size_t n, const char *s)
{
    return n == strlen(s) && memcmp(reply, s, n) == 0;
}

/* An integer reply's value. */
static bool
reply_integer(const char *reply, size_t n, int64_t *v)
{
    return n >= 4 && reply[0] == ':' && parse_int(reply + 1, n - 3, v);
}

/* A bulk reply's bytes (resp_value() checked its frame). */
static bool
reply_bulk_bytes(const char *reply, size_t n, const char **p, size_t *len)
{
    int64_t v;
    size_t ll = line_len(reply + 1, n - 1);
    if (reply[0] != '$' || !parse_int(reply + 1, ll, &v) || v < 0) {
        return false;
    }
    *p = reply + 1 + ll + 2;
    *len = (size_t)v;
    return true;
}

/* Key i (in database db) is a string of exactly these bytes, expiring at
 * expire_at. */
static void
expect_string_in(size_t db, const struct req *r, size_t i, const char *v,
                 size_t len, int64_t expire_at)
{
    char buf[KS_INT_TEXT];
    size_t got;
    struct store_rec *rec = live_in(db, r->argv[i], r->len[i]);
    CHECK(rec != NULL && keytype_is_string(rec->type));
    const char *s = keytype_string(rec, buf, &got);
    CHECK(got == len && (len == 0 || memcmp(s, v, len) == 0));
    CHECK(rec->expire_at == expire_at);
    if (rec->type == KEY_INT) {
        CHECK(len <= 20);       /* an int64's text */
    }
}

static void
expect_string(const struct req *r, size_t i, const char *v, size_t len,
              int64_t expire_at)
{
    expect_string_in((size_t)srv.db, r, i, v, len, expire_at);
}

/* The expiry a SET, SETEX, PSETEX or GETEX with options gave (the
 * options parsed as the command did: it answered, so they were good):
 * *when, or false for none; *keepttl, *persist, *cond (NX or XX), *get. */
struct set_opts {
    bool timed, keepttl, persist, cond, get, at;
    int64_t when;
};

static void
set_expiry(const struct req *r, size_t first, struct set_opts *o)
{
    int64_t now = clock_wall_now() / 1000000;
    size_t timed = 0;           /* the last time word: only its value counts */
    for (size_t j = first; j < r->argc; j++) {
        if (word(r, j, "ex") || word(r, j, "px") || word(r, j, "exat") ||
            word(r, j, "pxat")) {
            timed = j++;
        } else if (word(r, j, "keepttl")) {
            o->keepttl = true;
        } else if (word(r, j, "persist")) {
            o->persist = true;
        } else if (word(r, j, "nx") || word(r, j, "xx")) {
            o->cond = true;
        } else if (word(r, j, "get")) {
            o->get = true;
        }
    }
    if (timed != 0) {
        bool ex = word(r, timed, "ex"), px = word(r, timed, "px");
        int64_t v;
        CHECK(timed + 1 < r->argc &&
              num_parse_i64(r->argv[timed + 1], r->len[timed + 1], &v));
        CHECK(!((ex || word(r, timed, "exat")) &&
                __builtin_mul_overflow(v, 1000, &v)));
        CHECK(!((ex || px) && __builtin_add_overflow(v, now, &v)));
        o->timed = true;
        o->at = !ex && !px;
        o->when = v;
    }
}

/* After SET, SETEX or PSETEX wrote value argv[vi]. */
static void
expect_set(const struct req *r, size_t vi, const struct set_opts *o,
           const struct before *b)
{
    int64_t now = clock_wall_now() / 1000000;
    if (o->timed && now > o->when) {
        CHECK(live(r, 1) == NULL);      /* dead at once, as Redis */
        return;
    }
    int64_t at = o->timed ? o->when
                 : o->keepttl ? b->expire_at : STORE_NEVER;
    expect_string(r, 1, r->argv[vi], r->len[vi], at);
}

/* The key unchanged: no write happened. */
static void
expect_unchanged(const struct req *r, const struct before *b)
{
    struct store_rec *rec = live(r, 1);
    CHECK((rec != NULL) == b->present);
    CHECK(rec == NULL || rec_hash(rec) == b->hash);
}

/* ---- what a collection write did --------------------------------------- */

/* Key i: absent, or of this type (a reply other than -WRONGTYPE says so). */
static struct store_rec *
coll_rec(const struct req *r, size_t i, uint8_t type)
{
    struct store_rec *rec = live(r, i);
    CHECK(rec == NULL || rec->type == type);
    return rec;
}

static bool
arg_is(const struct req *r, size_t i, const void *p, size_t len)
{
    return r->len[i] == len && (len == 0 || memcmp(r->argv[i], p, len) == 0);
}

/* Argument i named again further on (every step arguments). */
static bool
named_again(const struct req *r, size_t i, size_t step)
{
    for (size_t k = i + step; k < r->argc; k += step) {
        if (arg_is(r, k, r->argv[i], r->len[i])) {
            return true;
        }
    }
    return false;
}

/* A double reply (RESP2 bulk, RESP3 ','), as strtod reads it. */
static bool
reply_score(const char *reply, size_t n, double *d)
{
    char buf[64];
    const char *p = reply + 1;
    size_t len;
    if (reply[0] == '$') {
        if (!reply_bulk_bytes(reply, n, &p, &len)) {
            return false;
        }
    } else if (reply[0] == ',') {
        len = n - 3;
    } else {
        return false;
    }
    CHECK(len < sizeof(buf));
    memcpy(buf, p, len);
    buf[len] = '\0';
    *d = strtod(buf, NULL);
    return true;
}

/* Field f of hash rec holds exactly v. */
static void
expect_field(struct store_rec *rec, const char *f, size_t flen,
             const char *v, size_t vlen)
{
    struct pack_item it;
    CHECK(rec != NULL);
    CHECK(hmap_get(store_rec_state(rec), f, flen, &it) && it.len == vlen &&
          (vlen == 0 || memcmp(it.data, v, vlen) == 0));
}

/*
 * The collection writes whose reply says what they left: a push's new
 * length and the element at its end; HSET's and HMSET's fields (the last
 * value named for each), HSETNX's when it answered 1, HINCRBY's and
 * HINCRBYFLOAT's new value as replied, HDEL's and ZREM's names gone;
 * ZINCRBY's score as replied, a plain ZADD's integer scores.
 */
static void
check_coll_effect(const struct req *r, const char *reply, size_t n)
{
    static const char *const zflags[] = { "nx", "xx", "gt", "lt", "ch",
                                          "incr" };
    int64_t v;
    double d;
    const char *p;
    size_t len;
    struct store_rec *rec;
    struct pack_item it;
    bool head = word(r, 0, "lpush") || word(r, 0, "lpushx");
    if ((head || word(r, 0, "rpush") || word(r, 0, "rpushx")) &&
        reply_integer(reply, n, &v)) {
        rec = coll_rec(r, 1, KEY_LIST);
        CHECK((rec == NULL) == (v == 0));
        if (rec != NULL) {
            const struct qlist *x = store_rec_state(rec);
            CHECK(qlist_len(x) == (uint64_t)v);
            qlist_index(x, head ? 0 : qlist_len(x) - 1, &it);
            CHECK(arg_is(r, r->argc - 1, it.data, it.len));
        }
    } else if ((word(r, 0, "hset") || word(r, 0, "hmset")) &&
               r->argc % 2 == 0) {
        rec = coll_rec(r, 1, KEY_HASH);
        for (size_t i = 2; i + 1 < r->argc; i += 2) {
            if (!named_again(r, i, 2)) {
                expect_field(rec, r->argv[i], r->len[i], r->argv[i + 1],
                             r->len[i + 1]);
            }
        }
    } else if (word(r, 0, "hsetnx") && reply_is(reply, n, ":1\r\n")) {
        expect_field(coll_rec(r, 1, KEY_HASH), r->argv[2], r->len[2],
                     r->argv[3], r->len[3]);
    } else if (word(r, 0, "hincrby") && reply_integer(reply, n, &v)) {
        char text[32];
        int k = snprintf(text, sizeof(text), "%lld", (long long)v);
        expect_field(coll_rec(r, 1, KEY_HASH), r->argv[2], r->len[2], text,
                     (size_t)k);
    } else if (word(r, 0, "hincrbyfloat") &&
               reply_bulk_bytes(reply, n, &p, &len)) {
        expect_field(coll_rec(r, 1, KEY_HASH), r->argv[2], r->len[2], p, len);
    } else if (word(r, 0, "hdel") || word(r, 0, "zrem")) {
        bool hash = word(r, 0, "hdel");
        rec = coll_rec(r, 1, hash ? KEY_HASH : KEY_ZSET);
        for (size_t i = 2; rec != NULL && i < r->argc; i++) {
            CHECK(hash ? !hmap_exists(store_rec_state(rec), r->argv[i],
                                      r->len[i])
                       : !zset_score(store_rec_state(rec), r->argv[i],
                                     r->len[i], &d));
        }
    } else if (word(r, 0, "zincrby") && r->argc == 4 &&
               reply_score(reply, n, &d)) {
        double got;
        rec = coll_rec(r, 1, KEY_ZSET);
        CHECK(rec != NULL && zset_score(store_rec_state(rec), r->argv[3],
                                        r->len[3], &got) && got == d);
    } else if (word(r, 0, "zadd") && reply_integer(reply, n, &v) &&
               r->argc % 2 == 0) {
        for (size_t k = 0; k < sizeof(zflags) / sizeof(*zflags); k++) {
            if (word(r, 2, zflags[k])) {
                return;                 /* options: not a plain ZADD */
            }
        }
        rec = coll_rec(r, 1, KEY_ZSET);
        for (size_t i = 2; i + 1 < r->argc; i += 2) {
            double got;
            if (num_parse_i64(r->argv[i], r->len[i], &v) &&
                !named_again(r, i + 1, 2)) {
                CHECK(rec != NULL &&
                      zset_score(store_rec_state(rec), r->argv[i + 1],
                                 r->len[i + 1], &got) &&
                      got == (double)v);
            }
        }
    }
}

/*
 * What a write that answered success must have left: SET and its kin,
 * MSET(NX), GETDEL, GETEX, the counters, APPEND, SETRANGE, the expiry
 * setters, PERSIST, DEL, UNLINK, RENAME(NX), COPY and MOVE each leave
 * their keys as their reply says (the value, its type's bytes, the expiry,
 * the record carried over whole); a write that answered "not done" left
 * its key as it was. Replies themselves are the differential suite's
 * (make difftest): this checks the keyspace behind them.
 */
static void
check_effect(const struct req *r, const char *reply, size_t n,
             const struct before *b)
{
    int64_t v;
    const char *p;
    size_t len;
    int64_t now = clock_wall_now() / 1000000;
    struct set_opts o = { 0 };
    if (!b->checked || reply[0] == '-') {
        return;
    }
    check_coll_effect(r, reply, n);
    int64_t kept = b->expire_at;    /* a write that keeps the TTL */
    if (word(r, 0, "set") && r->argc >= 3) {
        set_expiry(r, 3, &o);
        if (reply_is(reply, n, "+OK\r\n") || (o.get && !o.cond)) {
            expect_set(r, 2, &o, b);
        } else if (!o.get) {
            expect_unchanged(r, b);     /* NX or XX: not set */
        }
    } else if ((word(r, 0, "setex") || word(r, 0, "psetex")) &&
               r->argc == 4 && reply_is(reply, n, "+OK\r\n")) {
        CHECK(num_parse_i64(r->argv[2], r->len[2], &v));
        CHECK(!(word(r, 0, "setex") && __builtin_mul_overflow(v, 1000, &v)));
        CHECK(!__builtin_add_overflow(v, now, &v));
        o.timed = true;
        o.when = v;
        expect_set(r, 3, &o, b);
    } else if (word(r, 0, "setnx") && r->argc == 3 &&
               reply_integer(reply, n, &v)) {
        if (v == 1) {
            expect_string(r, 1, r->argv[2], r->len[2], STORE_NEVER);
        } else {
            expect_unchanged(r, b);
        }
    } else if (word(r, 0, "getset") && r->argc == 3) {
        expect_string(r, 1, r->argv[2], r->len[2], STORE_NEVER);
    } else if ((word(r, 0, "mset") || (word(r, 0, "msetnx") &&
                                       reply_is(reply, n, ":1\r\n"))) &&
               r->argc % 2 == 1) {
        for (size_t i = 1; i < r->argc; i += 2) {
            bool last = true;           /* a later pair sets it again */
            for (size_t k = i + 2; k < r->argc; k += 2) {
                last &= !(r->len[k] == r->len[i] &&
                          memcmp(r->argv[k], r->argv[i], r->len[i]) == 0);
            }
            if (last) {
                expect_string(r, i, r->argv[i + 1], r->len[i + 1],
                              STORE_NEVER);
            }
        }
    } else if (word(r, 0, "getdel") && reply[0] == '$' &&
               !reply_is(reply, n, "$-1\r\n")) {
        CHECK(live(r, 1) == NULL);
    } else if (word(r, 0, "getex") && reply_bulk_bytes(reply, n, &p, &len)) {
        set_expiry(r, 2, &o);
        if (o.timed && o.at && o.when <= now) {
            CHECK(live(r, 1) == NULL);  /* a time already past */
        } else {
            expect_string(r, 1, p, len,
                          o.timed ? o.when
                          : o.persist ? STORE_NEVER : b->expire_at);
        }
    } else if ((word(r, 0, "incr") || word(r, 0, "decr") ||
                word(r, 0, "incrby") || word(r, 0, "decrby")) &&
               reply_integer(reply, n, &v)) {
        char text[32];
        int k = snprintf(text, sizeof(text), "%lld", (long long)v);
        expect_string(r, 1, text, (size_t)k, kept);
        CHECK(live(r, 1)->type == KEY_INT);
    } else if (word(r, 0, "incrbyfloat") &&
               reply_bulk_bytes(reply, n, &p, &len)) {
        expect_string(r, 1, p, len, kept);
    } else if (word(r, 0, "append") && r->argc == 3 &&
               reply_integer(reply, n, &v)) {
        char buf[KS_INT_TEXT];
        struct store_rec *rec = live(r, 1);
        CHECK(rec != NULL && keytype_is_string(rec->type));
        const char *s = keytype_string(rec, buf, &len);
        CHECK((int64_t)len == v && len >= r->len[2]);
        CHECK(r->len[2] == 0 ||
              memcmp(s + len - r->len[2], r->argv[2], r->len[2]) == 0);
        CHECK(rec->expire_at == kept);
    } else if (word(r, 0, "setrange") && r->argc == 4 &&
               reply_integer(reply, n, &v)) {
        int64_t off;
        char buf[KS_INT_TEXT];
        CHECK(num_parse_i64(r->argv[2], r->len[2], &off) && off >= 0);
        struct store_rec *rec = live(r, 1);
        if (r->len[3] == 0) {
            expect_unchanged(r, b);     /* nothing set */
            return;
        }
        CHECK(rec != NULL && keytype_is_string(rec->type));
        const char *s = keytype_string(rec, buf, &len);
        CHECK((int64_t)len == v && (uint64_t)off + r->len[3] <= len);
        CHECK(memcmp(s + off, r->argv[3], r->len[3]) == 0);
        CHECK(rec->expire_at == kept);
    } else if ((word(r, 0, "expire") || word(r, 0, "pexpire") ||
                word(r, 0, "expireat") || word(r, 0, "pexpireat")) &&
               r->argc >= 3 && reply_integer(reply, n, &v)) {
        if (v == 0) {
            expect_unchanged(r, b);
            return;
        }
        int64_t when;
        CHECK(num_parse_i64(r->argv[2], r->len[2], &when));
        CHECK(!((word(r, 0, "expire") || word(r, 0, "expireat")) &&
                __builtin_mul_overflow(when, 1000, &when)));
        CHECK(!((word(r, 0, "expire") || word(r, 0, "pexpire")) &&
                __builtin_add_overflow(when, now, &when)));
        struct store_rec *rec = live(r, 1);
        if (when <= now) {
            CHECK(rec == NULL);         /* already past: deleted */
        } else {
            CHECK(rec != NULL && rec->expire_at == when);
        }
    } else if (word(r, 0, "persist") && reply_integer(reply, n, &v)) {
        if (v == 0) {
            expect_unchanged(r, b);
        } else {
            struct store_rec *rec = live(r, 1);
            CHECK(rec != NULL && rec->expire_at == STORE_NEVER);
        }
    } else if (word(r, 0, "del") || word(r, 0, "unlink")) {
        for (size_t i = 1; i < r->argc; i++) {
            CHECK(live(r, i) == NULL);
        }
    } else if ((reply_is(reply, n, "+OK\r\n") && word(r, 0, "rename")) ||
               (reply_is(reply, n, ":1\r\n") && word(r, 0, "renamenx"))) {
        CHECK(r->argc == 3 && b->present);
        struct store_rec *dst = live(r, 2);
        CHECK(dst != NULL && rec_hash(dst) == b->hash);
        if (r->len[1] != r->len[2] ||
            memcmp(r->argv[1], r->argv[2], r->len[1]) != 0) {
            CHECK(live(r, 1) == NULL);
        }
    } else if (word(r, 0, "copy") && reply_is(reply, n, ":1\r\n")) {
        int64_t db = srv.db;
        for (size_t j = 3; j + 1 < r->argc; j++) {
            if (word(r, j, "db")) {
                CHECK(num_parse_i64(r->argv[j + 1], r->len[j + 1], &db));
                j++;
            }
        }
        struct store_rec *dst = live_in((size_t)db, r->argv[2], r->len[2]);
        CHECK(dst != NULL && rec_hash(dst) == b->hash);
        expect_unchanged(r, b);
    } else if (word(r, 0, "move") && reply_is(reply, n, ":1\r\n")) {
        int64_t db;
        CHECK(num_parse_i64(r->argv[2], r->len[2], &db));
        struct store_rec *dst = live_in((size_t)db, r->argv[1], r->len[1]);
        CHECK(dst != NULL && rec_hash(dst) == b->hash);
        CHECK(live(r, 1) == NULL);
    }
}

/* ---- running ----------------------------------------------------------- */

/* FUZZ_CMD_TRACE=1 prints every command and the start of its reply. */
static bool trace;

/* FUZZ_CMD_LITERAL=file writes the input just run as a program of literal
 * ops (every command spelt out, the clock steps and save points as they
 * were): the same run, but one that no longer depends on how the
 * generators read bytes, so a finding stays a reproducer when they change
 * (make_cmd_seeds.py's format). A command of more than MAX_ARGS - 1
 * arguments or an argument over 65535 bytes cannot be spelt out: it is
 * reported and left out. */
static const char *literal_path;
static FILE *literal_out;

static void
literal_request(const struct req *r)
{
    if (literal_out == NULL) {
        return;
    }
    bool fits = r->argc < MAX_ARGS;
    for (size_t i = 0; i < r->argc; i++) {
        fits &= r->len[i] <= UINT16_MAX;
    }
    if (!fits) {
        fprintf(stderr, "fuzz_cmd: FUZZ_CMD_LITERAL: a command cannot be "
                        "spelt out; left out\n");
        return;
    }
    fputc(11, literal_out);
    fputc((int)r->argc, literal_out);
    for (size_t i = 0; i < r->argc; i++) {
        fputc((int)(r->len[i] & 0xff), literal_out);
        fputc((int)(r->len[i] >> 8), literal_out);
        fwrite(r->argv[i], 1, r->len[i], literal_out);
    }
    fflush(literal_out);        /* the ops up to a crash are kept */
}

/* An op the literal form keeps as it was: its op byte, then the bytes
 * from..to it read. */
static void
literal_raw(uint8_t op, const uint8_t *from, const uint8_t *to)
{
    if (literal_out != NULL) {
        fputc(op, literal_out);
        fwrite(from, 1, (size_t)(to - from), literal_out);
        fflush(literal_out);
    }
}

static void
show_request(const struct req *r)
{
    fprintf(stderr, "t=%lld", (long long)(now_ns - T0));
    for (size_t i = 0; i < r->argc; i++) {
        fprintf(stderr, " '%.*s'%s", (int)(r->len[i] < 40 ? r->len[i] : 40),
                r->argv[i], r->len[i] > 40 ? "..." : "");
    }
    fputc('\n', stderr);
}

static void remove_journal_files(void);

/* The journal's files, in bytes. */
static size_t
journal_bytes(void)
{
    char dir[sizeof(snapdir) + 32], path[sizeof(dir) + 300];
    struct stat st;
    size_t sum = 0;
    snprintf(dir, sizeof(dir), "%s/appendonlydir", snapdir);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(path, &st) == 0) {
            sum += (size_t)st.st_size;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return sum;
}

/*
 * What the loop does after each pass (conn.c's flush_all()): the pass's
 * effects published and the journal written, so that the journal a save
 * point replays is the one a running server leaves, and the pass's buffer
 * stays a pass's (one held over a whole input grew by the megabyte
 * strings written between each MSET, DEL or EXEC, which drain it: 64 MB
 * in one). Each write journals the key's whole new state, so writes to
 * megabyte strings fill the files fast: past 64 MB the journal starts
 * over from a base of the keyspace as it is (as a rewrite leaves it).
 */
static void
end_of_pass(void)
{
    keyspace_publish();
    persist_before_replies();
    if (journal_bytes() > ((size_t)64 << 20)) {
        char err[512];
        persist_close();
        remove_journal_files();
        CHECK(persist_open(err, sizeof(err)) == 0);
    }
}

static void
run_request(struct req *r)
{
    if (r->argc == 0 || skipped(r)) {
        return;
    }
    struct resp_request req = { r->argc, r->argv, r->len, 0 };
    bool writes = may_write(r);
    bool queued = multi_open(client, client->multi);
    int proto = client->proto;
    struct before b;
    uint64_t before = keyspace_digest(false);
    note_before(r, &b);
    taint_before(r);

    client->hint.valid = false;
    cmd_batch_begin();
    cmd_execute(client, &req);
    CHECK(mem_used() < (size_t)1 << 46);     /* no wrapped accounting */

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
    bool resp3 = proto == 3 || client->proto == 3;
    if (trace) {
        show_request(r);
        fprintf(stderr, "  -> %.*s\n", (int)(n < 300 ? n : 300), reply);
    }
    CHECK(n > 0 && resp_value(reply, n, resp3, 0) == n);
    end_of_pass();
    uint64_t after = keyspace_digest(false);
    CHECK(writes || after == before);
    check_effect(r, reply, n, &b);
    if (!queued && !multi_open(client, client->multi)) {
        taint_after(r, reply, n);
    }
    free(reply);
}

static void
show_rec(struct store_rec *r, void *arg)
{
    size_t keylen = store_rec_keylen(r);
    struct membuf buf = { 0 };
    CHECK(keytype_encode(r, now_ns, &buf));
    fprintf(stderr, "  db%zu '%.*s'%s type %d expire_at %lld%s state %zu "
                    "bytes %016llx\n",
            *(size_t *)arg, (int)(keylen < 40 ? keylen : 40),
            store_rec_key(r), keylen > 40 ? "..." : "", r->type,
            (long long)r->expire_at,
            store_rec_dead(r, now_ns) ? " (dead)" : "", buf.len,
            (unsigned long long)fnv(buf.p, buf.len, 0));
    mem_free(buf.p);
}

/* With FUZZ_CMD_TRACE: every record, around each reload. */
static void
show_keyspace(const char *when)
{
    if (!trace) {
        return;
    }
    fprintf(stderr, "keyspace %s:\n", when);
    for (size_t i = 0; i < srv.ndbs; i++) {
        uint64_t cursor = 0;
        do {
            cursor = srv.dbs[i] == NULL ? 0
                                        : store_scan(srv.dbs[i], cursor,
                                                     show_rec, &i);
        } while (cursor != 0);
    }
}

/* Save, load into a fresh store at the same instant, compare; the loaded
 * store carries on. Then the same through the journal: its files closed,
 * replayed into a fresh store, reopened. */
/* Bytes a save point may still write and read back in this input: an
 * input of a hundred save points over megabyte strings would take a
 * minute, so past the budget save points are passed over. */
#define RELOAD_BUDGET ((size_t)64 << 20)
static size_t reload_budget;

static void
save_and_reload(void)
{
    char err[512];
    size_t cost = keytype_owned_bytes() + 65536;
    if (cost > reload_budget) {
        return;
    }
    reload_budget -= cost;
    uint64_t before = keyspace_digest(true);
    show_keyspace("before a reload");
    CHECK(snapshot_save(err, sizeof(err)) == 0);
    persist_before_replies();       /* what the loop would have written */
    keyspace_teardown();
    unsigned char seed[16] = { 1 };
    CHECK(keyspace_init(seed, now_ns) == 0);
    if (snapshot_load(err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_cmd: reload failed: %s\n", err);
        abort();
    }
    CHECK(keyspace_select(client->db));
    show_keyspace("loaded from the snapshot");
    CHECK(keyspace_digest(true) == before);
    /* The journal's sink stayed attached: the journal already says all
     * this, and the loaded keys made no records. */

    persist_close();
    keyspace_teardown();
    seed[0] = 2;
    CHECK(keyspace_init(seed, now_ns) == 0);
    if (persist_load(err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_cmd: journal replay failed: %s\n", err);
        abort();
    }
    CHECK(keyspace_select(client->db));
    show_keyspace("replayed from the journal");
    if (keyspace_digest(true) != before) {
        fprintf(stderr, "fuzz_cmd: the journal replays another keyspace\n");
        abort();
    }
    CHECK(persist_open(err, sizeof(err)) == 0);
}

static void
step_clock(struct input *in)
{
    static const int64_t steps[] = {
        1000000, 999000000, 1000000000, 1100000000, 59000000000,
        3600000000000, 86400000000000, -5000000000, 1, 500000000,
    };
    uint8_t b = in_byte(in);
    int64_t d = b < 240 ? steps[b % 10] : (int64_t)in_u16(in) * 1000003;
    if (b == 255) {
        d = INT64_C(1) << 62;           /* far future: overflow paths */
    }
    if (!__builtin_add_overflow(now_ns, d, &now_ns)) {
        clock_set_fake_wall(now_ns);
    }
    /* What the limiters will see: the clamp never goes back. */
    now_ns = clock_wall_now();
}

/* Argument i of r becomes these bytes. */
static void
set_arg(struct req *r, size_t i, const char *p, size_t len)
{
    if (i >= r->argc) {
        return;
    }
    free(r->argv[i]);
    r->argv[i] = malloc(len + 1);
    CHECK(r->argv[i] != NULL);
    memcpy(r->argv[i], p, len);
    r->argv[i][len] = '\0';
    r->len[i] = len;
}

/*
 * A chain: up to 16 commands in a row on one key. APPEND after APPEND
 * (values of any size: a string that grows past its inline bytes, then by
 * megabytes), SETRANGE here and there (offsets up to 4 MB, gaps of zeros),
 * counters that meet text (INCR after APPEND "1", INCRBYFLOAT on an int,
 * APPEND on a counter), or a limiter's calls with EXPIRE, PERSIST, TTL and
 * clock steps between them (an expiry set by hand, then overridden by
 * the next call that changes the state, or outlived by the state).
 */
static void
run_chain(struct input *in)
{
    static const char *const small[] = { "0", "1", "5", "-", ".5", "x",
                                         "9", "00" };
    struct req key = { 0 };
    add_key(&key, in);
    if (key.len[0] > 4096) {
        key.len[0] = 4096;      /* a megabyte key, hashed by each step: slow */
    }
    uint8_t kind = in_byte(in);
    uint8_t steps = 2 + in_byte(in) % 15;
    for (uint8_t i = 0; i < steps && in->n > 0; i++) {
        struct req r = { 0 };
        uint8_t b = in_byte(in);
        switch (kind % 4) {
        case 0:
            if (b < 216) {
                add(&r, "APPEND");
                add(&r, "");
                add_value(&r, in);
            } else {
                add(&r, b & 1 ? "STRLEN" : "GETRANGE");
                add(&r, "");
                if (!(b & 1)) {
                    add_int_arg(&r, in);
                    add(&r, "-1");
                }
            }
            break;
        case 1:
            if (b < 160) {
                add(&r, "SETRANGE");
                add(&r, "");
                add_offset(&r, in);
                add_value(&r, in);
            } else if (b < 224) {
                add(&r, "APPEND");
                add(&r, "");
                add_value(&r, in);
            } else {
                add(&r, b & 1 ? "GET" : "STRLEN");
                add(&r, "");
            }
            break;
        case 2:
            switch (b % 8) {
            case 0:
            case 1:
                add(&r, b & 8 ? "INCR" : "DECR");
                add(&r, "");
                break;
            case 2:
                add(&r, b & 8 ? "INCRBY" : "DECRBY");
                add(&r, "");
                add_int_arg(&r, in);
                break;
            case 3:
                add(&r, "INCRBYFLOAT");
                add(&r, "");
                add_float_arg(&r, in);
                break;
            case 4:
                add(&r, "APPEND");
                add(&r, "");
                add(&r, small[b / 8 % 8]);
                break;
            case 5:
                add(&r, "SET");
                add(&r, "");
                add_int_arg(&r, in);
                if (b & 8) {
                    add(&r, "KEEPTTL");
                }
                break;
            case 6:
                gen_expire(&r, in, in_byte(in));
                break;
            default:
                add(&r, b & 8 ? "GET" : "GETEX");
                add(&r, "");
                break;
            }
            break;
        default:
            switch (b % 8) {
            case 0:
            case 1:
            case 2:
                gen_limiter(&r, in, in_byte(in));
                break;
            case 3:
            case 4:
                gen_expire(&r, in, in_byte(in));
                break;
            case 5: {
                const uint8_t *from = in->p;
                step_clock(in);
                literal_raw(12, from, in->p);
                continue;
            }
            case 6:
                add(&r, b & 8 ? "PERSIST" : "PTTL");
                add(&r, "");
                break;
            default:
                gen_keys(&r, in, 4 + (b & 8 ? 1 : 2));  /* RENAME, COPY */
                break;
            }
            break;
        }
        set_arg(&r, 1, key.argv[0], key.len[0]);
        literal_request(&r);
        run_request(&r);
        req_free(&r);
    }
    req_free(&key);
}

/*
 * A collection's chain: up to 32 commands in a row on one key of one
 * type. Writes of up to 46 elements at a time (so a sorted set passes its
 * 128 compact entries and a hash its 512 within a chain), the type's
 * other writes and reads between them, and now and then an EXPIRE, a
 * RENAME, COPY or MOVE of the key, a clock step or a save point.
 */
static void
run_coll_chain(struct input *in)
{
    static const uint8_t fill[] = { 3, 3, 3, 3 };  /* gen_list..set's */
    struct req key = { 0 };
    add_key(&key, in);
    if (key.len[0] > 4096) {
        key.len[0] = 4096;
    }
    uint8_t kind = in_byte(in) % 4;
    uint8_t steps = 2 + in_byte(in) % 31;
    for (uint8_t i = 0; i < steps && in->n > 0; i++) {
        struct req r = { 0 };
        uint8_t b = in_byte(in);
        if (b < 96) {
            uint8_t w = (uint8_t)(fill[kind] + (b & 0xc0));
            if (kind == 0) {
                gen_list(&r, in, w);
            } else if (kind == 1) {
                gen_hash(&r, in, w);
            } else if (kind == 2) {
                gen_zset(&r, in, w);
            } else {
                gen_set(&r, in, w);
            }
        } else if (b < 232) {
            uint8_t w = in_byte(in);
            if (kind == 0) {
                gen_list(&r, in, w);
            } else if (kind == 1) {
                gen_hash(&r, in, w);
            } else if (kind == 2) {
                gen_zset(&r, in, w);
            } else {
                gen_set(&r, in, w);
            }
        } else if (b < 240) {
            gen_expire(&r, in, in_byte(in));
        } else if (b < 248) {
            gen_keys(&r, in, 5 + b % 3);        /* RENAME, COPY, MOVE */
        } else if (b < 252) {
            const uint8_t *from = in->p;
            step_clock(in);
            literal_raw(12, from, in->p);
            continue;
        } else {
            save_and_reload();
            literal_raw(14, in->p, in->p);
            continue;
        }
        set_arg(&r, 1, key.argv[0], key.len[0]);
        literal_request(&r);
        run_request(&r);
        req_free(&r);
    }
    req_free(&key);
}

static void
run_op(struct input *in)
{
    struct req r = { 0 };
    uint8_t op = in_byte(in);
    const uint8_t *from = in->p;
    switch (op % 16) {
    case 0:
        gen_limiter(&r, in, in_byte(in));
        break;
    case 1:
        gen_rl_all(&r, in);
        break;
    case 2:
        gen_coll(&r, in, in_byte(in));
        break;
    case 3:
        gen_limiter(&r, in, 3);         /* RL.LOG, the richest state */
        break;
    case 4: case 5:
        gen_string(&r, in, in_byte(in));
        break;
    case 15:
        run_coll_chain(in);
        return;
    case 6:
        gen_keys(&r, in, in_byte(in));
        break;
    case 7:
        gen_expire(&r, in, in_byte(in));
        break;
    case 8:
        gen_admin(&r, in, in_byte(in));
        break;
    case 9:
        run_chain(in);
        return;
    case 10:
        gen_raw(&r, in);
        break;
    case 11:
        gen_literal(&r, in);
        break;
    case 12: case 13:
        step_clock(in);
        literal_raw(12, from, in->p);
        return;
    case 14:
        save_and_reload();
        literal_raw(14, from, from);
        return;
    }
    literal_request(&r);
    run_request(&r);
    req_free(&r);
}

/* ---- set-up per input -------------------------------------------------- */

static void
set_string(char **field, const char *value)
{
    free(*field);
    *field = strdup(value);
    CHECK(*field != NULL);
}

static void
fresh_server(void)
{
    conf_deinit(&srv.conf);
    CHECK(conf_init(&srv.conf) == 0);
    set_string(&srv.conf.dir, snapdir);
    set_string(&srv.conf.dbfilename, "fuzz.snap");
    srv.conf.loglevel = LOGLEVEL_WARNING;
    log_set_level(LOG_WARNING);
    memset(&srv.stats, 0, sizeof(srv.stats));
    cmd_reset_stats();
    server_apply_limits();
    clock_reset_clamp();
    now_ns = T0;
    clock_set_fake_wall(now_ns);
    unsigned char seed[16] = { 0 };
    CHECK(keyspace_init(seed, now_ns) == 0);
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

/* The next input starts with no journal: its first start writes one. */
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

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(path);
}

/* At exit: the snapshot and journal directory go (it is in /dev/shm). */
static void
remove_snapdir(void)
{
    (void)nftw(snapdir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void
retire_server(void)
{
    multi_discard(client);
    if (client->monitor) {
        monitor_remove(client);
    }
    srv.pause_end_ms = 0;
    srv.pause_all = false;
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
    tzdb_flush();       /* the zones RL.FIXED's CALENDAR read: a cache */
    taint_reset();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(snapdir, sizeof(snapdir), "%s/cellgate-fuzz-XXXXXX", base);
    CHECK(mkdtemp(snapdir) != NULL);
    CHECK(atexit(remove_snapdir) == 0);
    CHECK(conf_init(&srv.conf) == 0);
    srv.loop = uv_default_loop();
    srv.start_wall_us = T0 / 1000;
    trace = getenv("FUZZ_CMD_TRACE") != NULL;
    literal_path = getenv("FUZZ_CMD_LITERAL");
    CHECK(cmd_setup(command_table, command_count) == 0);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };
    size_t baseline = mem_used();
    if (literal_path != NULL) {
        literal_out = fopen(literal_path, "wb");
        CHECK(literal_out != NULL);
    }
    fresh_server();
    reload_budget = RELOAD_BUDGET;
    for (int ops = 0; in.n > 0 && ops < 256; ops++) {
        run_op(&in);
    }
    (void)keyspace_digest(false);
    if (literal_out != NULL) {
        CHECK(fclose(literal_out) == 0);
        literal_out = NULL;
    }
    retire_server();
    CHECK(keytype_owned_bytes() == 0);
    CHECK(mem_used() == baseline);
    return 0;
}
