/*
 * fuzz_cmd.c - libFuzzer driver for the command path: random commands
 * through the real command table and handlers (cmd_execute) into an
 * in-process keyspace, with the wall clock injected and no sockets.
 *
 * An input is a small program (see run_op): commands built from the bytes
 * (every limiter with its options, key commands, KEYS/SCAN patterns,
 * CONFIG SET of every option, INFO, CLIENT, SLOWLOG, COMMAND, ...), raw
 * commands of any bytes, commands spelt out exactly (the seeds in
 * corpus/cmd, written by make_cmd_seeds.py, use those for the reproducers
 * of issue 14), clock steps (forward, backward, huge), and save-and-reload
 * points. After every command it checks what a user could
 * notice going wrong:
 *
 *  - the reply is exactly one well-formed RESP value, and only RESP2
 *    types on a RESP2 connection;
 *  - a command that must not change the keyspace (PEEK, every read, every
 *    admin command, anything queued inside MULTI) did not: a digest of
 *    every live key, its expiry and its encoded state is the same before
 *    and after;
 *  - every RL.LOG and RL.TIERS key is well formed (entries in time order,
 *    costs >= 1, the running sum right, META inside its arena, at least
 *    one entry) and expires exactly when its newest entry leaves its
 *    retention window;
 *  - keytype_owned_bytes() equals what the keys' arrays hold;
 * at a save point, that a snapshot loaded into a fresh store at the same
 * instant has the same digest, and so has the journal (appendonly is on:
 * its base and every record since, replayed); and at the end, with every key and buffer
 * freed, that mem_used() is back where it started (the accounting of
 * every allocation matches).
 *
 * Commands that leave the process or touch sockets (QUIT, SHUTDOWN,
 * CLIENT KILL), answer more than once ((P)(UN)SUBSCRIBE, MONITOR, CLIENT
 * REPLY, WAIT), fork (BGSAVE, BGREWRITEAOF, PSYNC), change the role
 * (REPLICAOF, SLAVEOF, REPLCONF) or read the config file (CLUSTER RELOAD) are
 * skipped, as are CONFIG SETs of the snapshot path, the log and
 * appendonly (turning the journal on forks), which the driver owns.
 */
#include <dirent.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lib/mem.h"
#include "protocol/obuf.h"
#include "protocol/resp.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/client.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/monitor.h"
#include "server/multi.h"
#include "server/persist/persist.h"
#include "server/server.h"
#include "server/slowlog.h"
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

/* RL.* options: any mix of COST, ALIGN, META, PEEK, MS (and junk). */
static void
add_rl_options(struct req *r, struct input *in, bool meta, bool align)
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

static void
gen_limiter(struct req *r, struct input *in, uint8_t which)
{
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
        add_rl_options(r, in, false, false);
        break;
    case 1:
        add(r, "RL.FIXED");
        add_key(r, in);
        add_number(r, in, false);
        add_number(r, in, true);
        add_rl_options(r, in, false, true);
        break;
    case 2:
        add(r, "RL.SLIDING");
        add_key(r, in);
        add_number(r, in, false);
        add_number(r, in, true);
        add_rl_options(r, in, false, false);
        break;
    case 3:
        add(r, "RL.LOG");
        add_key(r, in);
        add_number(r, in, false);
        add_number(r, in, true);
        add_rl_options(r, in, true, false);
        break;
    default: {
        add(r, "RL.TIERS");
        add_key(r, in);
        uint8_t tiers = 1 + in_byte(in) % 4;
        for (uint8_t i = 0; i < tiers; i++) {
            add_number(r, in, false);
            add_number(r, in, true);
        }
        add_rl_options(r, in, false, false);
        break;
    }
    }
}

static void
gen_keys(struct req *r, struct input *in, uint8_t which)
{
    static const char *const onekey[] = { "GET", "PTTL", "TTL", "TYPE",
                                          "EXISTS", "DEL", "RL.ENTRIES" };
    switch (which % 4) {
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
        add(r, "KEYS");
        add_pattern(r, in);
        break;
    default:
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
            add(r, "TYPE");
            add(r, in_byte(in) & 1 ? "log" : "tiers");
        }
        break;
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
        add(r, b & 1 ? "SETNAME" : "GETKEYS");
        if (b & 1) {
            add_blob(r, in, 300);
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
    "rl.tiers", "get", "pttl", "ttl", "exists", "del", "type", "keys",
    "scan", "dbsize", "flushall", "config", "client", "command", "info",
    "slowlog", "cluster", "hello", "auth", "echo", "ping", "select", "time",
    "save", "lastsave", "readonly", "readwrite", "nosuch", "CL.THROTTLE",
    "multi", "exec", "discard", "watch", "unwatch", "swapdb", "move",
    "flushdb", "memory", "reset", "monitor", "function", "script", "gcra",
    "GCRA", "increx", "INCREX",
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

/* May this command change the keyspace? Limiters unless PEEK, DEL, the
 * flushes, SWAPDB, MOVE and EXEC. */
static bool
may_write(const struct req *r)
{
    static const char *const writers[] = { "cl.throttle", "rl.fixed",
                                           "rl.sliding", "rl.log", "rl.tiers",
                                           "del", "flushall", "flushdb",
                                           "exec", "swapdb", "move", "gcra",
                                           "increx" };
    bool writer = false;
    for (size_t k = 0; k < sizeof(writers) / sizeof(writers[0]); k++) {
        writer |= word(r, 0, writers[k]);
    }
    /* Inside MULTI a command is only queued (EXEC runs the queue). */
    if (multi_open(client, client->multi) && !word(r, 0, "exec")) {
        return false;
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

/* ---- keyspace checks --------------------------------------------------- */

struct scan_state {
    uint64_t sum;
    uint64_t live;
    size_t owned;
    bool whole_keys;    /* hash every key byte (else its length and head) */
    size_t db;          /* of the records scanned */
    struct ks_buf buf;
};

static uint64_t
fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    }
    return h;
}

static void
check_log(const struct store_rec *r, const struct ks_log *ls)
{
    int64_t sum = 0, prev = INT64_MIN;
    CHECK(ls->ring.len >= 1 && ls->ring.len <= ls->ring.cap);
    CHECK(ls->ring.head < ls->ring.cap && ls->keep_ms >= 1000);
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
    CHECK(r->expire_at == keyspace_fresh_ms(keytype_log_fresh_at(ls, now_ns)));
}

static void
check_tiers(const struct store_rec *r, const struct ks_tiers *ts)
{
    CHECK(ts->st.len >= 1 && ts->st.len <= ts->st.cap && ts->keep >= 1);
    for (uint32_t i = 0; i < ts->st.len; i++) {
        CHECK(ts->st.b[i].count >= 1);
        CHECK(i == 0 || ts->st.b[i].sec > ts->st.b[i - 1].sec);
    }
    CHECK(r->expire_at ==
          keyspace_fresh_ms(keytype_tiers_fresh_at(ts, now_ns)));
}

static void
scan_rec(struct store_rec *r, void *arg)
{
    struct scan_state *s = arg;
    const void *state = store_rec_state(r);
    if (r->type == KEY_LOG) {
        const struct ks_log *ls = state;
        s->owned += mem_usable(ls->ring.e) + mem_usable(ls->meta);
    } else if (r->type == KEY_TIERS) {
        s->owned += mem_usable(((const struct ks_tiers *)state)->st.b);
    } else if (r->type == KEY_STR) {
        const struct ks_str *st = state;
        if (st->len > KS_STR_INLINE) {
            CHECK(st->u.heap.p != NULL && st->u.heap.cap >= st->len);
            s->owned += mem_usable(st->u.heap.p);
        }
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
    }
    s->buf.len = 0;
    CHECK(keytype_encode(r, now_ns, &s->buf));
    uint64_t h = fnv(&r->type, 1, UINT64_C(0xcbf29ce484222325));
    h = fnv(&s->db, sizeof(s->db), h);
    h = fnv(&r->expire_at, sizeof(r->expire_at), h);
    /* A command never changes a key's bytes, so around a command its
     * length and head tell keys apart; a reload compares them whole. */
    size_t keylen = store_rec_keylen(r);
    h = fnv(&keylen, sizeof(keylen), h);
    h = fnv(store_rec_key(r), s->whole_keys || keylen < 64 ? keylen : 64, h);
    h = fnv(s->buf.p, s->buf.len, h);
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

static void
run_request(struct req *r)
{
    if (r->argc == 0 || skipped(r)) {
        return;
    }
    struct resp_request req = { r->argc, r->argv, r->len, 0 };
    bool writes = may_write(r);
    int proto = client->proto;
    uint64_t before = keyspace_digest(false);

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
    free(reply);

    uint64_t after = keyspace_digest(false);
    CHECK(writes || after == before);
}

/* Save, load into a fresh store at the same instant, compare; the loaded
 * store carries on. Then the same through the journal: its files closed,
 * replayed into a fresh store, reopened. */
static void
save_and_reload(void)
{
    char err[512];
    uint64_t before = keyspace_digest(true);
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

static void
run_op(struct input *in)
{
    struct req r = { 0 };
    uint8_t op = in_byte(in);
    const uint8_t *from = in->p;
    switch (op % 16) {
    case 0: case 1: case 2: case 3: case 4: case 5:
        gen_limiter(&r, in, in_byte(in));
        break;
    case 6: case 7:
        gen_keys(&r, in, in_byte(in));
        break;
    case 8: case 9:
        gen_admin(&r, in, in_byte(in));
        break;
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
    default:
        gen_limiter(&r, in, 3);         /* RL.LOG, the richest state */
        break;
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
    cluster_teardown();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(snapdir, sizeof(snapdir), "%s/cellgate-fuzz-XXXXXX", base);
    CHECK(mkdtemp(snapdir) != NULL);
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
