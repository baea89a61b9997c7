/*
 * cmd.c - command table and dispatch (see cmd.h).
 *
 * Lookup is an open-addressed index built once at start-up, probed from
 * the name's length and first and last bytes: no lower-casing copy and
 * no hash over the whole name, usually one case-folding comparison.
 */
#include "server/cmd.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cluster.h"
#include "server/conn.h"
#include "server/handlers.h"
#include "server/server.h"
#include "server/slowlog.h"

#define NAME_MAX_LEN 32
#define INDEX_SIZE 256       /* power of two, well above the command count */
#define ERROR_CODES_MAX 128  /* as Redis: beyond this, errors are not split */

/* Statistics start at zero (INFO commandstats, # Limits). */
#define NO_STATS { 0, 0, 0, 0, 0, 0, { 0 } }

const uint64_t cmd_hist_bounds_us[CMD_HIST_BUCKETS] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 100000
};

/* Flag words (COMMAND) and the Redis ACL categories that go with them. */
#define ADMIN "admin noscript loading stale"
#define FASTRO "readonly fast"

static struct cmd client_subcommands[] = {
    { "client|setname", 3, "noscript loading stale", 0, 0, 0, NULL,
      "slow connection", "connection", "2.6.9", "Sets the connection name.",
      "connection-name:string", cmd_client_setname, NULL, NO_STATS },
    { "client|getname", 2, "noscript loading stale", 0, 0, 0, NULL,
      "slow connection", "connection", "2.6.9",
      "Returns the name of the connection.", "", cmd_client_getname, NULL,
      NO_STATS },
    { "client|setinfo", 4, "noscript loading stale", 0, 0, 0, NULL,
      "slow connection", "connection", "7.2.0",
      "Sets information specific to the client or connection.",
      "attr:oneof=LIB-NAME|LIB-VER value:string", cmd_client_setinfo, NULL, NO_STATS },
    { "client|id", 2, "noscript loading stale", 0, 0, 0, NULL,
      "slow connection", "connection", "5.0.0",
      "Returns the unique client ID of the connection.", "", cmd_client_id,
      NULL, NO_STATS },
    { "client|list", -2, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection",
      "connection", "2.4.0", "Lists open connections.", "",
      cmd_client_list, NULL, NO_STATS },
    { "client|info", 2, "noscript loading stale", 0, 0, 0, NULL,
      "slow connection", "connection", "6.2.0",
      "Returns information about the connection.", "", cmd_client_info,
      NULL, NO_STATS },
    { "client|kill", -3, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection", "connection", "2.4.0",
      "Terminates open connections.",
      "?ip:port:string ?ID=client-id:integer ?ADDR=addr:string "
      "?LADDR=laddr:string ?USER=username:string ?SKIPME=yes/no:string",
      cmd_client_kill, NULL, NO_STATS },
    { "client|no-evict", 3, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection", "connection", "7.0.0",
      "Sets the client eviction mode of the connection (accepted; "
      "cellgate never evicts clients).", "enabled:oneof=ON|OFF",
      cmd_client_no_evict, NULL, NO_STATS },
    { "client|help", 2, "loading stale", 0, 0, 0, NULL, "slow connection",
      "connection", "5.0.0", "Returns helpful text about the different "
      "subcommands.", "", cmd_client_help, NULL, NO_STATS },
    { NULL, 0, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NO_STATS }
};

static struct cmd command_subcommands[] = {
    { "command|count", 2, "loading stale", 0, 0, 0, NULL, "slow connection",
      "server", "2.8.13", "Returns a count of commands.", "",
      cmd_command_count, NULL, NO_STATS },
    { "command|info", -2, "loading stale", 0, 0, 0, NULL, "slow connection",
      "server", "2.8.13", "Returns information about one, multiple or all "
      "commands.", "*command-name:string", cmd_command_info, NULL,
      NO_STATS },
    { "command|docs", -2, "loading stale", 0, 0, 0, NULL, "slow connection",
      "server", "7.0.0", "Returns documentary information about one, "
      "multiple or all commands.", "*command-name:string", cmd_command_docs,
      NULL, NO_STATS },
    { "command|list", -2, "loading stale", 0, 0, 0, NULL, "slow connection",
      "server", "7.0.0", "Returns a list of command names.",
      "?FILTERBY=filterby:oneof=MODULE|ACLCAT|PATTERN ?name:string", cmd_command_list, NULL, NO_STATS },
    { "command|getkeys", -4, "loading stale", 0, 0, 0, NULL,
      "slow connection", "server", "2.8.13",
      "Extracts the key names from an arbitrary command.",
      "command:string *arg:string", cmd_command_getkeys, NULL, NO_STATS },
    { "command|getkeysandflags", -4, "loading stale", 0, 0, 0, NULL,
      "slow connection", "server", "7.0.0",
      "Extracts the key names and access flags for an arbitrary command.",
      "command:string *arg:string", cmd_command_getkeysandflags, NULL,
      NO_STATS },
    { "command|help", 2, "loading stale", 0, 0, 0, NULL, "slow connection",
      "server", "5.0.0", "Returns helpful text about the different "
      "subcommands.", "", cmd_command_help, NULL, NO_STATS },
    { NULL, 0, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NO_STATS }
};

static struct cmd config_subcommands[] = {
    { "config|get", -3, "admin noscript loading stale", 0, 0, 0, NULL,
      "admin slow dangerous", "server", "2.0.0",
      "Returns the effective values of configuration parameters.",
      "*parameter:pattern", cmd_config_get, NULL, NO_STATS },
    { "config|set", -4, "admin noscript loading stale", 0, 0, 0, NULL,
      "admin slow dangerous", "server", "2.0.0",
      "Sets configuration parameters in-flight.",
      "*parameter:string value:string", cmd_config_set, NULL, NO_STATS },
    { "config|resetstat", 2, "admin noscript loading stale", 0, 0, 0, NULL,
      "admin slow dangerous", "server", "2.0.0",
      "Resets the server's statistics.", "", cmd_config_resetstat, NULL,
      NO_STATS },
    { "config|help", 2, "loading stale", 0, 0, 0, NULL, "slow", "server",
      "5.0.0", "Returns helpful text about the different subcommands.", "",
      cmd_config_help, NULL, NO_STATS },
    { NULL, 0, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NO_STATS }
};

#define CLUSTER_SUB(sub, arity, summary, args, proc)                          \
    { "cluster|" sub, arity, "loading stale", 0, 0, 0, NULL, "slow",          \
      "cluster", "3.0.0", summary, args, proc, NULL, NO_STATS }

static struct cmd cluster_subcommands[] = {
    CLUSTER_SUB("info", 2, "Returns information about the state of a node.",
                "", cmd_cluster_info),
    CLUSTER_SUB("keyslot", 3, "Returns the hash slot for a key.",
                "key:string", cmd_cluster_keyslot),
    CLUSTER_SUB("myid", 2, "Returns the ID of a node.", "", cmd_cluster_myid),
    CLUSTER_SUB("nodes", 2, "Returns the cluster configuration for a node.",
                "", cmd_cluster_nodes),
    CLUSTER_SUB("reload", 2, "Re-reads the cluster-node lines of the config "
                "file (cluster-mode yes).", "", cmd_cluster_reload),
    CLUSTER_SUB("shards", 2, "Returns the mapping of cluster slots to "
                "shards.", "", cmd_cluster_shards),
    CLUSTER_SUB("slots", 2, "Returns the mapping of cluster slots to nodes.",
                "", cmd_cluster_slots),
    CLUSTER_SUB("help", 2, "Returns helpful text about the different "
                "subcommands.", "", cmd_cluster_help),
    { NULL, 0, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NO_STATS }
};

#define SLOWLOG_SUB(sub, arity, summary, args, proc)                          \
    { "slowlog|" sub, arity, "admin loading stale skip_slowlog", 0, 0, 0,    \
      NULL,            \
      "admin slow dangerous", "server", "2.2.12", summary, args, proc, NULL,  \
      NO_STATS }

static struct cmd slowlog_subcommands[] = {
    SLOWLOG_SUB("get", -2, "Returns the slow log's entries.",
                "?count:integer", cmd_slowlog_get),
    SLOWLOG_SUB("len", 2, "Returns the number of entries in the slow log.",
                "", cmd_slowlog_len),
    SLOWLOG_SUB("reset", 2, "Clears all entries from the slow log.", "",
                cmd_slowlog_reset),
    SLOWLOG_SUB("help", 2, "Show helpful text about the different "
                "subcommands.", "", cmd_slowlog_help),
    { NULL, 0, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NO_STATS }
};

static struct cmd table[] = {
    { "cl.throttle", -1, "write denyoom fast module", 1, 1, 1,
      "RW access update", "write fast", "ratelimit", "1.0.0",
      "GCRA rate limit, bit-exact with redis-cell: allow or deny one "
      "request of quantity tokens.",
      "key:key max_burst:integer count:integer period:integer "
      "?quantity:integer ?PEEK:pure-token ?MS:pure-token",
      cmd_cl_throttle, NULL, NO_STATS },
    { "rl.fixed", -4, "write denyoom fast", 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Fixed-window counter: at most limit units per window seconds.",
      "key:key limit:integer window:integer ?COST=n:integer "
      "?ALIGN:pure-token ?PEEK:pure-token ?MS:pure-token",
      cmd_rl_fixed, NULL, NO_STATS },
    { "rl.sliding", -4, "write denyoom fast", 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Sliding-window counter: the current window plus the weighted "
      "previous one.",
      "key:key limit:integer window:integer ?COST=n:integer "
      "?PEEK:pure-token ?MS:pure-token",
      cmd_rl_sliding, NULL, NO_STATS },
    { "rl.log", -4, "write denyoom fast", 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Exact sliding log: every accepted request is kept with its cost "
      "and metadata for window seconds.",
      "key:key limit:integer window:integer ?COST=n:integer "
      "?META=value:string ?PEEK:pure-token ?MS:pure-token",
      cmd_rl_log, NULL, NO_STATS },
    { "rl.entries", -2, "readonly", 1, 1, 1, "RO access", "read slow",
      "ratelimit", "0.1.0",
      "The requests an RL.LOG key holds, newest first.",
      "key:key ?COUNT=n:integer",
      cmd_rl_entries, NULL, NO_STATS },
    { "rl.tiers", -4, "write denyoom fast", 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Several sliding windows over per-second buckets, checked all or "
      "nothing.",
      "key:key limit1:integer window1:integer ?*tier:block=limit2|window2 "
      "?COST=n:integer ?PEEK:pure-token ?MS:pure-token",
      cmd_rl_tiers, NULL, NO_STATS },
    { "ping", -1, "fast stale", 0, 0, 0, NULL, "fast connection",
      "connection", "1.0.0", "Returns the server's liveliness response.",
      "?message:string", cmd_ping, NULL, NO_STATS },
    { "echo", 2, "fast", 0, 0, 0, NULL, "fast connection", "connection",
      "1.0.0", "Returns the given string.", "message:string", cmd_echo, NULL,
      NO_STATS },
    { "quit", -1, "allow_busy noscript loading stale fast no_auth", 0, 0, 0,
      NULL, "fast connection", "connection", "1.0.0",
      "Closes the connection.", "", cmd_quit, NULL, NO_STATS },
    { "select", 2, "loading stale fast", 0, 0, 0, NULL, "fast connection",
      "connection", "1.0.0", "Changes the selected database (only 0 "
      "exists).", "index:integer", cmd_select, NULL, NO_STATS },
    { "hello", -1, "noscript loading stale fast no_auth skip_slowlog", 0, 0,
      0, NULL,
      "fast connection", "connection", "6.0.0",
      "Handshakes with the server.",
      "?protover:integer ?AUTH=username:string ?password:string "
      "?SETNAME=clientname:string", cmd_hello, NULL,
      NO_STATS },
    { "auth", -2, "noscript loading stale fast no_auth skip_slowlog", 0, 0,
      0, NULL,
      "fast connection", "connection", "1.0.0",
      "Authenticates the connection.", "?username:string password:string",
      cmd_auth, NULL, NO_STATS },
    { "readonly", 1, "loading stale fast", 0, 0, 0, NULL, "fast connection",
      "cluster", "3.0.0", "Accepted for cluster clients; cellgate has no "
      "replicas.", "", cmd_readonly, NULL, NO_STATS },
    { "readwrite", 1, "loading stale fast", 0, 0, 0, NULL, "fast connection",
      "cluster", "3.0.0", "Accepted for cluster clients; cellgate has no "
      "replicas.", "", cmd_readonly, NULL, NO_STATS },
    { "client", -2, "", 0, 0, 0, NULL, "slow", "connection", "2.4.0",
      "A container for client connection commands.", "", cmd_client,
      client_subcommands, NO_STATS },
    { "cluster", -2, "", 0, 0, 0, NULL, "slow", "cluster", "3.0.0",
      "A container for Redis Cluster commands (cluster-mode emulated|yes).", "",
      cmd_cluster, cluster_subcommands, NO_STATS },
    { "command", -1, "loading stale", 0, 0, 0, NULL, "slow connection",
      "server", "2.8.13", "Returns detailed information about all commands.",
      "", cmd_command, command_subcommands, NO_STATS },
    { "config", -2, "", 0, 0, 0, NULL, "slow", "server", "2.0.0",
      "A container for server configuration commands.", "", cmd_config,
      config_subcommands, NO_STATS },
    { "info", -1, "loading stale", 0, 0, 0, NULL, "slow dangerous", "server",
      "1.0.0", "Returns information and statistics about the server.",
      "*section:string", cmd_info, NULL, NO_STATS },
    { "dbsize", 1, FASTRO, 0, 0, 0, NULL, "keyspace read fast", "server",
      "1.0.0", "Returns the number of keys.", "", cmd_dbsize, NULL,
      NO_STATS },
    { "flushall", -1, "write", 0, 0, 0, NULL, "keyspace write slow dangerous",
      "server", "1.0.0", "Removes all keys.", "?ASYNC:pure-token "
      "?SYNC:pure-token", cmd_flushall, NULL, NO_STATS },
    { "flushdb", -1, "write", 0, 0, 0, NULL, "keyspace write slow dangerous",
      "server", "1.0.0", "Removes all keys.", "?ASYNC:pure-token "
      "?SYNC:pure-token", cmd_flushall, NULL, NO_STATS },
    { "slowlog", -2, "", 0, 0, 0, NULL, "slow", "server", "2.2.12",
      "A container for slow log commands.", "", cmd_slowlog,
      slowlog_subcommands, NO_STATS },
    { "time", 1, "loading stale fast", 0, 0, 0, NULL, "fast", "server",
      "2.6.0", "Returns the server time.", "", cmd_time, NULL,
      NO_STATS },
    { "shutdown", -1, "admin noscript loading stale no_multi allow_busy", 0,
      0, 0, NULL, "admin slow dangerous", "server", "1.0.0",
      "Stops the server.", "?NOSAVE:pure-token ?SAVE:pure-token",
      cmd_shutdown, NULL, NO_STATS },
    { "save", 1, "admin noscript no_async_loading no_multi", 0, 0, 0, NULL,
      "admin slow dangerous", "server", "1.0.0",
      "Synchronously saves the keyspace to the snapshot file.", "",
      cmd_save, NULL, NO_STATS },
    { "bgsave", -1, "admin noscript no_async_loading", 0, 0, 0, NULL,
      "admin slow dangerous", "server", "1.0.0",
      "Asynchronously saves the keyspace to the snapshot file.",
      "?SCHEDULE:pure-token", cmd_bgsave, NULL, NO_STATS },
    { "lastsave", 1, "loading stale fast", 0, 0, 0, NULL,
      "admin fast dangerous", "server", "1.0.0",
      "Returns the Unix time of the last successful save.", "",
      cmd_lastsave, NULL, NO_STATS },
    { "get", 2, FASTRO, 1, 1, 1, "RO access", "read string fast", "string",
      "1.0.0", "Returns a CL.THROTTLE key's stored TAT (ns since the "
      "epoch).", "key:key", cmd_get, NULL, NO_STATS },
    { "pttl", 2, FASTRO, 1, 1, 1, "RO access", "keyspace read fast",
      "generic", "2.6.0", "Returns the expiration time in milliseconds of a "
      "key.", "key:key", cmd_pttl, NULL, NO_STATS },
    { "ttl", 2, FASTRO, 1, 1, 1, "RO access", "keyspace read fast", "generic",
      "1.0.0", "Returns the expiration time in seconds of a key.", "key:key",
      cmd_ttl, NULL, NO_STATS },
    { "exists", -2, FASTRO, 1, -1, 1, "RO", "keyspace read fast", "generic",
      "1.0.0", "Determines whether one or more keys exist.", "*key:key",
      cmd_exists, NULL, NO_STATS },
    { "del", -2, "write", 1, -1, 1, "RM delete", "keyspace write slow",
      "generic", "1.0.0", "Deletes one or more keys.", "*key:key", cmd_del,
      NULL, NO_STATS },
    { "type", 2, FASTRO, 1, 1, 1, "RO", "keyspace read fast", "generic",
      "1.0.0", "Returns the algorithm of a limiter key.", "key:key",
      cmd_type, NULL, NO_STATS },
    { "keys", 2, "readonly", 0, 0, 0, NULL, "keyspace read slow dangerous",
      "generic", "1.0.0", "Returns all key names that match a pattern.",
      "pattern:pattern", cmd_keys, NULL, NO_STATS },
    { "scan", -2, "readonly", 0, 0, 0, NULL, "keyspace read slow", "generic",
      "2.8.0", "Iterates over the key names in the database.",
      "cursor:integer ?MATCH=pattern:pattern ?COUNT=count:integer "
      "?TYPE=type:string", cmd_scan, NULL,
      NO_STATS },
};

#define TABLE_LEN (sizeof(table) / sizeof(table[0]))

/* One index slot: the command and its name folded for matching. A table
 * name is lower case; fold[i] is 0x20 where name[i] is a letter, so an
 * input byte b matches iff (b | fold[i]) == name[i]: either case of a
 * letter, any other byte exactly (what tolower() gives for ASCII). */
struct index_slot {
    struct cmd *cmd;
    size_t len;
    unsigned char name[NAME_MAX_LEN];
    unsigned char fold[NAME_MAX_LEN];
};

static struct index_slot index_slots[INDEX_SIZE];

struct error_stat {
    char code[NAME_MAX_LEN];
    uint64_t count;
};
static struct error_stat error_stats[ERROR_CODES_MAX];
static size_t error_stats_len;

/* Where a name starts probing: its length and its first and last bytes
 * with the case bit set, which tell every command in the table apart. */
static uint32_t
name_hash(const char *name, size_t len)
{
    uint32_t h = (uint32_t)len * 0x9e3779b1u;
    h ^= ((uint32_t)((unsigned char)name[0] | 0x20) << 8) |
         ((unsigned char)name[len - 1] | 0x20);
    return (h * 0x85ebca6bu) >> 24;
}

int
cmd_setup(void)
{
    _Static_assert(INDEX_SIZE == 256, "name_hash yields 8 bits");
    memset(index_slots, 0, sizeof(index_slots));
    for (size_t i = 0; i < TABLE_LEN; i++) {
        size_t len = strlen(table[i].name);
        if (len == 0 || len >= NAME_MAX_LEN) {
            return -1;
        }
        uint32_t slot = name_hash(table[i].name, len) & (INDEX_SIZE - 1);
        while (index_slots[slot].cmd != NULL) {
            slot = (slot + 1) & (INDEX_SIZE - 1);
        }
        struct index_slot *e = &index_slots[slot];
        e->cmd = &table[i];
        e->len = len;
        memcpy(e->name, table[i].name, len);
        for (size_t k = 0; k < len; k++) {
            e->fold[k] = islower((unsigned char)table[i].name[k]) ? 0x20 : 0;
        }
    }
    return 0;
}

/* Bytes [at, at + size) of an input name against the slot's name; size
 * is a constant 4 or 8 where it is inlined, so this is one load each. */
static inline bool
chunk_matches(const struct index_slot *e, const char *name, size_t at,
              size_t size)
{
    uint64_t in = 0, fold = 0, want = 0;
    memcpy(&in, name + at, size);
    memcpy(&fold, e->fold + at, size);
    memcpy(&want, e->name + at, size);
    return (in | fold) == want;
}

/* Whole words at a time, the last word overlapping the one before. */
static bool
name_matches(const struct index_slot *e, const char *name, size_t len)
{
    if (e->len != len) {
        return false;
    }
    if (len < 4) {
        for (size_t i = 0; i < len; i++) {
            if (((unsigned char)name[i] | e->fold[i]) != e->name[i]) {
                return false;
            }
        }
        return true;
    }
    if (len < 8) {
        return chunk_matches(e, name, 0, 4) &&
               chunk_matches(e, name, len - 4, 4);
    }
    for (size_t i = 0; i + 8 < len; i += 8) {
        if (!chunk_matches(e, name, i, 8)) {
            return false;
        }
    }
    return chunk_matches(e, name, len - 8, 8);
}

struct cmd *
cmd_lookup(const char *name, size_t len)
{
    if (len == 0 || len >= NAME_MAX_LEN) {
        return NULL;
    }
    uint32_t slot = name_hash(name, len);
    while (index_slots[slot].cmd != NULL) {
        if (name_matches(&index_slots[slot], name, len)) {
            return index_slots[slot].cmd;
        }
        slot = (slot + 1) & (INDEX_SIZE - 1);
    }
    return NULL;
}

struct cmd *
cmd_table(size_t *count)
{
    *count = TABLE_LEN;
    return table;
}

int
cmd_last_key(const struct cmd *cmd, size_t argc)
{
    int64_t first = cmd->first_key;
    int64_t last = cmd->last_key >= 0 ? cmd->last_key
                                      : (int64_t)argc + cmd->last_key;
    if (first <= 0 || first >= (int64_t)argc || last >= (int64_t)argc ||
        last < first) {
        return -1;
    }
    return (int)last;
}

static bool
arity_ok(const struct cmd *cmd, size_t argc)
{
    if (cmd->arity >= 0) {
        return argc == (size_t)cmd->arity;
    }
    return argc >= (size_t)-cmd->arity;
}

/* Redis's text: "unknown command 'x', with args beginning with: 'a' 'b' "
 * (each piece cut so the list stays near 128 bytes). */
static void
reply_unknown_command(struct conn *c, struct resp_request *req)
{
    char args[512];
    size_t n = 0;
    args[0] = '\0';
    for (size_t i = 1; i < req->argc && n < 128; i++) {
        int room = 128 - (int)n;
        int w = snprintf(args + n, sizeof(args) - n, "'%.*s' ",
                         room < (int)req->argvlen[i] ? room
                                                     : (int)req->argvlen[i],
                         req->argv[i]);
        if (w < 0) {
            break;
        }
        n += (size_t)w;
        if (n >= sizeof(args)) {
            n = sizeof(args) - 1;
            break;
        }
    }
    conn_errorf(c, "ERR unknown command '%.128s', with args beginning with: %s",
                req->argv[0], args);
}

/* Commands are timed back to back: one clock read per command, whose end
 * is the next command's start (so a command's time also holds the framing
 * of its request). cmd_batch_begin() opens each batch. */
static mono_ns batch_mark;

void
cmd_batch_begin(void)
{
    batch_mark = clock_mono_now();
}

static void
run(struct conn *c, struct cmd *cmd, struct resp_request *req)
{
    c->reply_error = false;
    c->last_cmd = cmd;
    if (cmd->subcommands != NULL) {
        /* A container: its subcommand is run, timed and counted. */
        cmd->proc(c, req);
        return;
    }
    cmd->proc(c, req);
    mono_ns end = clock_mono_now();
    uint64_t usec = (uint64_t)(end - batch_mark) / 1000;
    cmd->stats.calls++;
    cmd->stats.usec += usec;
    for (size_t k = 0; k < CMD_HIST_BUCKETS; k++) {
        if (usec <= cmd_hist_bounds_us[k]) {
            cmd->stats.hist[k]++;
            break;
        }
    }
    batch_mark = end;
    if (c->reply_error) {
        cmd->stats.failed_calls++;
    }
    slowlog_note(c, cmd->flags, req, usec);
}

void
cmd_execute(struct conn *c, struct resp_request *req)
{
    struct cmd *cmd = cmd_lookup(req->argv[0], req->argvlen[0]);
    srv.stats.commands_processed++;
    if (cmd == NULL) {
        reply_unknown_command(c, req);
        return;
    }
    if (!arity_ok(cmd, req->argc)) {
        cmd->stats.rejected_calls++;
        conn_errorf(c, "ERR wrong number of arguments for '%s' command",
                    cmd->name);
        return;
    }
    if (!c->authenticated && strstr(cmd->flags, "no_auth") == NULL) {
        cmd->stats.rejected_calls++;
        conn_error(c, "NOAUTH Authentication required.");
        return;
    }
    if (!cluster_route(c, cmd, req)) {
        cmd->stats.rejected_calls++;    /* MOVED and the like, as Redis */
        return;
    }
    run(c, cmd, req);
}

void
cmd_dispatch_subcommand(struct conn *c, struct resp_request *req,
                        struct cmd *parent)
{
    const char *sub = req->argv[1];
    size_t plen = strlen(parent->name);
    for (struct cmd *s = parent->subcommands; s->name != NULL; s++) {
        const char *sname = s->name + plen + 1;
        if (strlen(sname) == req->argvlen[1] && strcasecmp(sname, sub) == 0) {
            if (!arity_ok(s, req->argc)) {
                s->stats.rejected_calls++;
                conn_errorf(c, "ERR wrong number of arguments for '%s' "
                            "command", s->name);
                return;
            }
            run(c, s, req);
            return;
        }
    }
    char upper[NAME_MAX_LEN];
    size_t i;
    for (i = 0; parent->name[i] != '\0' && i < NAME_MAX_LEN - 1; i++) {
        upper[i] = (char)toupper((unsigned char)parent->name[i]);
    }
    upper[i] = '\0';
    conn_errorf(c, "ERR unknown subcommand '%.128s'. Try %s HELP.", sub,
                upper);
}

void
cmd_reply_help(struct conn *c, const char *const *lines)
{
    size_t n = 0;
    while (lines[n] != NULL) {
        n++;
    }
    reply_array(&c->out, n);
    for (size_t i = 0; i < n; i++) {
        reply_status(&c->out, lines[i]);
    }
}

void
cmd_count_decision(struct conn *c, bool limited)
{
    if (c->last_cmd == NULL) {
        return;
    }
    if (limited) {
        c->last_cmd->stats.denied++;
    } else {
        c->last_cmd->stats.allowed++;
    }
}

void
cmd_count_error(const char *msg)
{
    size_t len = strcspn(msg, " ");
    srv.stats.total_error_replies++;
    if (len >= NAME_MAX_LEN) {
        len = NAME_MAX_LEN - 1;
    }
    for (size_t i = 0; i < error_stats_len; i++) {
        if (strncmp(error_stats[i].code, msg, len) == 0 &&
            error_stats[i].code[len] == '\0') {
            error_stats[i].count++;
            return;
        }
    }
    if (error_stats_len < ERROR_CODES_MAX) {
        struct error_stat *e = &error_stats[error_stats_len++];
        memcpy(e->code, msg, len);
        e->code[len] = '\0';
        e->count = 1;
    }
}

const char *
cmd_error_stat(size_t i, uint64_t *count)
{
    if (i >= error_stats_len) {
        return NULL;
    }
    *count = error_stats[i].count;
    return error_stats[i].code;
}

static void
reset_table_stats(struct cmd *t, size_t n)
{
    for (size_t i = 0; i < n && t[i].name != NULL; i++) {
        memset(&t[i].stats, 0, sizeof(t[i].stats));
        if (t[i].subcommands != NULL) {
            reset_table_stats(t[i].subcommands, SIZE_MAX);
        }
    }
}

void
cmd_reset_stats(void)
{
    reset_table_stats(table, TABLE_LEN);
    error_stats_len = 0;
}
