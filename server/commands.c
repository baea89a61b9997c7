/*
 * commands.c - THE command table: one row per command, as Redis's
 * commands.def has them (name, arity, flags, key positions, ACL categories,
 * docs, handler), and the subcommand tables of the container commands.
 * main.c hands it to the dispatcher (cmd_setup), which is why the
 * dispatcher never names a handler and handlers can use the dispatcher.
 */
#include "server/commands.h"

#include "server/cmd.h"
#include "server/handlers/handlers.h"
#include "server/script/script.h"

/* Statistics start at zero (INFO commandstats, # Limits). */
#define NO_STATS { 0, 0, 0, 0, 0, 0, { 0 } }, NULL
#define SCRIPT_FLAGS_ROW { 0, 0, 0, 0, 0, 0, { 0 } }, script_request_flags

/* Redis's most common command tip. */
#define NONDET "nondeterministic_output"

/* Flags several rows share. */
#define ADMIN (CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE)
#define FASTRO (CMD_READONLY | CMD_FAST)
/* MULTI, EXEC, DISCARD, WATCH: run at once inside MULTI. UNWATCH is
 * queued there, as Redis 7.0 queues it (TX_QUEUED). */
#define TX_QUEUED (CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_ALLOW_BUSY)
#define TX_CONTROL (TX_QUEUED | CMD_NOT_QUEUED)

static struct cmd client_subcommands[] = {
    { "client|setname", 3, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow connection", "connection", "2.6.9", "Sets the connection name.",
      "connection-name:string", cmd_client_setname, NULL, NULL, NO_STATS },
    { "client|getname", 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow connection", "connection", "2.6.9",
      "Returns the name of the connection.", "", cmd_client_getname, NULL,
      NULL, NO_STATS },
    { "client|setinfo", 4, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow connection", "connection", "7.2.0",
      "Sets information specific to the client or connection.",
      "attr:oneof=LIB-NAME|LIB-VER value:string", cmd_client_setinfo, NULL, NULL, NO_STATS },
    { "client|id", 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow connection", "connection", "5.0.0",
      "Returns the unique client ID of the connection.", "", cmd_client_id,
      NULL, NULL, NO_STATS },
    { "client|list", -2, ADMIN | CMD_READS_CLIENTS, 0, 0, 0, NULL,
      "admin slow dangerous connection",
      "connection", "2.4.0", "Lists open connections.", "",
      cmd_client_list, NULL, NONDET, NO_STATS },
    { "client|info", 2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow connection", "connection", "6.2.0",
      "Returns information about the connection.", "", cmd_client_info,
      NULL, NONDET, NO_STATS },
    { "client|kill", -3, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection", "connection", "2.4.0",
      "Terminates open connections.",
      "?ip:port:string ?ID=client-id:integer "
      "?TYPE=type:oneof=NORMAL|MASTER|SLAVE|REPLICA|PUBSUB "
      "?ADDR=addr:string ?LADDR=laddr:string ?USER=username:string "
      "?SKIPME=yes/no:string ?MAXAGE=maxage:integer",
      cmd_client_kill, NULL, NULL, NO_STATS },
    { "client|reply", 3, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0,
      NULL, "slow connection", "connection", "3.2.0",
      "Instructs the server whether to reply to commands.",
      "action:oneof=ON|OFF|SKIP", cmd_client_reply, NULL, NULL, NO_STATS },
    { "client|pause", -3, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection", "connection", "3.0.0",
      "Suspends commands processing (limiter writes wait, they are not "
      "refused).", "timeout:integer ?mode:oneof=WRITE|ALL",
      cmd_client_pause, NULL, NULL, NO_STATS },
    { "client|unpause", 2, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection", "connection", "6.2.0",
      "Resumes processing commands from paused clients.", "",
      cmd_client_unpause, NULL, NULL, NO_STATS },
    { "client|unblock", -3, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection", "connection", "5.0.0",
      "Unblocks a client blocked by a blocking command (none block in "
      "cellgate: always 0).", "client-id:integer "
      "?unblock-type:oneof=TIMEOUT|ERROR", cmd_client_unblock, NULL,
      NULL, NO_STATS },
    { "client|no-evict", 3, ADMIN, 0, 0, 0, NULL,
      "admin slow dangerous connection", "connection", "7.0.0",
      "Sets the client eviction mode of the connection (accepted; "
      "cellgate never evicts clients).", "enabled:oneof=ON|OFF",
      cmd_client_no_evict, NULL, NULL, NO_STATS },
    { "client|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow connection",
      "connection", "5.0.0", "Returns helpful text about the different "
      "subcommands.", "", cmd_client_help, NULL, NULL, NO_STATS },
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

static struct cmd command_subcommands[] = {
    { "command|count", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow connection",
      "server", "2.8.13", "Returns a count of commands.", "",
      cmd_command_count, NULL, NULL, NO_STATS },
    { "command|info", -2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow connection",
      "server", "2.8.13", "Returns information about one, multiple or all "
      "commands.", "*command-name:string", cmd_command_info, NULL,
      "nondeterministic_output_order", NO_STATS },
    { "command|docs", -2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow connection",
      "server", "7.0.0", "Returns documentary information about one, "
      "multiple or all commands.", "*command-name:string", cmd_command_docs,
      NULL, "nondeterministic_output_order", NO_STATS },
    { "command|list", -2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow connection",
      "server", "7.0.0", "Returns a list of command names.",
      "?FILTERBY=filterby:oneof=MODULE|ACLCAT|PATTERN ?name:string", cmd_command_list, NULL, "nondeterministic_output_order", NO_STATS },
    { "command|getkeys", -4, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow connection", "server", "2.8.13",
      "Extracts the key names from an arbitrary command.",
      "command:string *arg:string", cmd_command_getkeys, NULL, NULL, NO_STATS },
    { "command|getkeysandflags", -4, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow connection", "server", "7.0.0",
      "Extracts the key names and access flags for an arbitrary command.",
      "command:string *arg:string", cmd_command_getkeysandflags, NULL,
      NULL, NO_STATS },
    { "command|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow connection",
      "server", "5.0.0", "Returns helpful text about the different "
      "subcommands.", "", cmd_command_help, NULL, NULL, NO_STATS },
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

static struct cmd config_subcommands[] = {
    { "config|get", -3, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "2.0.0",
      "Returns the effective values of configuration parameters.",
      "*parameter:pattern", cmd_config_get, NULL, NULL, NO_STATS },
    { "config|set", -4, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "2.0.0",
      "Sets configuration parameters in-flight.",
      "*parameter:string value:string", cmd_config_set, NULL, "request_policy:all_nodes response_policy:all_succeeded", NO_STATS },
    { "config|resetstat", 2, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "2.0.0",
      "Resets the server's statistics.", "", cmd_config_resetstat, NULL,
      NULL, NO_STATS },
    { "config|rewrite", 2, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "2.8.0",
      "Persists the effective configuration to file.", "",
      cmd_config_rewrite, NULL, NULL, NO_STATS },
    { "config|reload-limits", 2, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "0.1.0",
      "Re-reads the named limits of limits-file (a bad file keeps the "
      "running ones).", "", cmd_config_reload_limits, NULL, NULL, NO_STATS },
    { "config|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow", "server",
      "5.0.0", "Returns helpful text about the different subcommands.", "",
      cmd_config_help, NULL, NULL, NO_STATS },
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

/* Redis's CLUSTER subcommands have "stale" only; promote, reload and help
 * are read at start-up too ("loading"). */
#define CLUSTER_SUB(sub, arity, kind, tips, summary, args, proc)             \
    CLUSTER_ROW(sub, arity, kind, tips, summary, args, proc)
#define CLUSTER_ROW(sub, arity, flags, acl, tips, summary, args, proc)       \
    { "cluster|" sub, arity, flags, 0, 0, 0, NULL, acl, "cluster", "3.0.0",  \
      summary, args, proc, NULL, tips, NO_STATS }
#define CLUSTER_READ CMD_STALE, "slow"
#define CLUSTER_ADMIN CMD_ADMIN | CMD_STALE, "admin slow dangerous"
#define CLUSTER_OWN CMD_LOADING | CMD_STALE, "slow"

static struct cmd cluster_subcommands[] = {
    CLUSTER_SUB("info", 2, CLUSTER_READ, NONDET,
                "Returns information about the state of a node.", "",
                cmd_cluster_info),
    CLUSTER_SUB("keyslot", 3, CLUSTER_READ, NULL,
                "Returns the hash slot for a key.", "key:string",
                cmd_cluster_keyslot),
    CLUSTER_SUB("myid", 2, CLUSTER_READ, NULL, "Returns the ID of a node.",
                "", cmd_cluster_myid),
    CLUSTER_SUB("nodes", 2, CLUSTER_READ, NONDET,
                "Returns the cluster configuration for a node.", "",
                cmd_cluster_nodes),
    CLUSTER_SUB("promote", 3, CLUSTER_OWN, NULL,
                "Makes a node the primary of its shard and saves the "
                "topology (cluster-mode yes).", "node-id:string",
                cmd_cluster_promote),
    CLUSTER_SUB("reload", 2, CLUSTER_OWN, NULL, "Re-reads the cluster-node "
                "lines of the config file (cluster-mode yes).", "",
                cmd_cluster_reload),
    CLUSTER_SUB("replicas", 3, CLUSTER_ADMIN, NONDET,
                "Lists the replica nodes of a master node.",
                "node-id:string", cmd_cluster_replicas),
    CLUSTER_SUB("shards", 2, CLUSTER_READ, NONDET,
                "Returns the mapping of cluster slots to shards.", "",
                cmd_cluster_shards),
    CLUSTER_SUB("slaves", 3, CLUSTER_ADMIN, NONDET,
                "Lists the replica nodes of a master node.",
                "node-id:string", cmd_cluster_replicas),
    CLUSTER_SUB("slots", 2, CLUSTER_READ, NONDET,
                "Returns the mapping of cluster slots to nodes.", "",
                cmd_cluster_slots),
    CLUSTER_SUB("help", 2, CLUSTER_OWN, NULL, "Returns helpful text about "
                "the different subcommands.", "", cmd_cluster_help),
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

/* As Redis: SLOWLOG's own calls are logged too; its help is no admin
 * command. */
#define SLOWLOG_SUB(sub, arity, kind, tips, summary, args, proc)             \
    SLOWLOG_ROW(sub, arity, kind, tips, summary, args, proc)
#define SLOWLOG_ROW(sub, arity, flags, acl, tips, summary, args, proc)       \
    { "slowlog|" sub, arity, flags, 0, 0, 0, NULL, acl, "server", "2.2.12",  \
      summary, args, proc, NULL, tips, NO_STATS }
#define SLOWLOG_ADMIN CMD_ADMIN | CMD_LOADING | CMD_STALE, "admin slow dangerous"
#define SLOWLOG_HELP CMD_LOADING | CMD_STALE, "slow"

static struct cmd slowlog_subcommands[] = {
    SLOWLOG_SUB("get", -2, SLOWLOG_ADMIN,
                "request_policy:all_nodes " NONDET,
                "Returns the slow log's entries.", "?count:integer",
                cmd_slowlog_get),
    SLOWLOG_SUB("len", 2, SLOWLOG_ADMIN,
                "request_policy:all_nodes response_policy:agg_sum " NONDET,
                "Returns the number of entries in the slow log.", "",
                cmd_slowlog_len),
    SLOWLOG_SUB("reset", 2, SLOWLOG_ADMIN,
                "request_policy:all_nodes response_policy:all_succeeded",
                "Clears all entries from the slow log.", "",
                cmd_slowlog_reset),
    SLOWLOG_SUB("help", 2, SLOWLOG_HELP, NULL,
                "Show helpful text about the different subcommands.", "",
                cmd_slowlog_help),
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

#define PUBSUB_SUB(sub, arity, summary, args, proc)                           \
    { "pubsub|" sub, arity, CMD_PUBSUB | CMD_LOADING | CMD_STALE, 0, 0, 0,   \
      NULL, "pubsub slow", "pubsub", "2.8.0", summary, args, proc, NULL,     \
      NULL, NO_STATS }

static struct cmd pubsub_subcommands[] = {
    PUBSUB_SUB("channels", -2, "Returns the active channels.",
               "?pattern:pattern", cmd_pubsub_channels),
    PUBSUB_SUB("numsub", -2, "Returns a count of subscribers to channels.",
               "?*channel:string", cmd_pubsub_numsub),
    PUBSUB_SUB("numpat", 2, "Returns a count of unique pattern "
               "subscriptions.", "", cmd_pubsub_numpat),
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

static struct cmd function_subcommands[] = {
    { "function|list", -2, CMD_NOSCRIPT, 0, 0, 0, NULL, "slow scripting",
      "scripting", "7.0.0", "Returns information about all libraries (none "
      "in cellgate).", "?WITHCODE:pure-token ?LIBRARYNAME=library-name-"
      "pattern:string", cmd_function_list, NULL, "nondeterministic_output_order", NO_STATS },
    { "function|flush", -2, CMD_WRITE | CMD_NOSCRIPT, 0, 0, 0, NULL,
      "write slow scripting", "scripting", "7.0.0",
      "Deletes all libraries (none in cellgate).",
      "?flush-type:oneof=ASYNC|SYNC", cmd_function_flush, NULL, "request_policy:all_shards response_policy:all_succeeded", NO_STATS },
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

static struct cmd script_subcommands[] = {
    { "script|load", 3, CMD_NOSCRIPT | CMD_STALE, 0, 0, 0, NULL,
      "slow scripting", "scripting", "2.6.0",
      "Load the specified Lua script into the script cache.",
      "script:string", cmd_script_load, NULL,
      "request_policy:all_nodes response_policy:all_succeeded", NO_STATS },
    { "script|exists", -3, CMD_NOSCRIPT, 0, 0, 0, NULL, "slow scripting",
      "scripting", "2.6.0", "Check existence of scripts in the script "
      "cache.", "*sha1:string",
      cmd_script_exists, NULL, "request_policy:all_shards response_policy:agg_logical_and", NO_STATS },
    { "script|flush", -2, CMD_NOSCRIPT, 0, 0, 0, NULL, "slow scripting",
      "scripting", "2.6.0", "Remove all the scripts from the script cache.",
      "?async:oneof=ASYNC|SYNC",
      cmd_script_flush, NULL, "request_policy:all_nodes response_policy:all_succeeded", NO_STATS },
    { "script|kill", 2, CMD_NOSCRIPT | CMD_ALLOW_BUSY, 0, 0, 0, NULL,
      "slow scripting", "scripting", "2.6.0",
      "Kill the script currently in execution.", "", cmd_script_kill, NULL,
      "request_policy:all_shards response_policy:one_succeeded", NO_STATS },
    { "script|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL,
      "slow scripting", "scripting", "5.0.0",
      "Show helpful text about the different subcommands", "",
      cmd_script_help, NULL, NULL, NO_STATS },
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

/* EVAL and its kin: the keys are counted by numkeys (a keynum key spec,
 * so no legacy positions and movablekeys); EVAL feeds MONITOR itself,
 * before the script's own commands (skip_monitor). */
#define EVAL_FLAGS (CMD_NOSCRIPT | CMD_STALE | CMD_SKIP_MONITOR |            \
                    CMD_NO_MANDATORY_KEYS)
#define EVAL_KEYS "keynum(2,0,1,1) "
#define EVAL_RW_NOTE "# We cannot tell how the keys will be used so we "     \
                     "assume the worst, RW and UPDATE"
#define EVAL_RO_NOTE "# We cannot tell how the keys will be used so we "     \
                     "assume the worst, RO and ACCESS"

static struct cmd memory_subcommands[] = {
    { "memory|usage", -3, CMD_READONLY, 2, 2, 1, "RO", "read slow", "server",
      "4.0.0", "Estimates the memory usage of a key.",
      "key:key ?SAMPLES=count:integer", cmd_memory_usage, NULL, NULL, NO_STATS },
    { "memory|stats", 2, CMD_READS_CLIENTS, 0, 0, 0, NULL, "slow", "server", "4.0.0",
      "Returns details about memory usage.", "", cmd_memory_stats, NULL,
      NONDET " request_policy:all_shards response_policy:special", NO_STATS },
    { "memory|malloc-stats", 2, 0, 0, 0, 0, NULL, "slow", "server", "4.0.0",
      "Returns the allocator statistics.", "", cmd_memory_malloc_stats,
      NULL, NONDET " request_policy:all_shards response_policy:special", NO_STATS },
    { "memory|purge", 2, 0, 0, 0, 0, NULL, "slow", "server", "4.0.0",
      "Asks the allocator to release memory.", "", cmd_memory_purge, NULL,
      "request_policy:all_shards response_policy:all_succeeded", NO_STATS },
    { "memory|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow",
      "server", "4.0.0", "Returns helpful text about the different "
      "subcommands.", "", cmd_memory_help, NULL, NULL, NO_STATS },
    { NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      NULL, NO_STATS }
};

static struct cmd table[] = {
    { "cl.throttle", -1, CMD_WRITE | CMD_PEEKS | CMD_DENYOOM | CMD_MODULE | CMD_FAST, 1, 1, 1,
      "RW access update", "write fast", "ratelimit", "1.0.0",
      "GCRA rate limit, bit-exact with redis-cell: allow or deny one "
      "request of quantity tokens.",
      "key:key max_burst:integer count:integer period:integer "
      "?quantity:integer ?PEEK:pure-token ?MS:pure-token",
      cmd_cl_throttle, NULL, NULL, NO_STATS },
    { "gcra", -5, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write fast rate_limit", "rate_limit", "8.8.0",
      "Rate limit via GCRA (Generic Cell Rate Algorithm), as Redis's GCRA "
      "command.", "key:key max-burst:integer tokens-per-period:integer "
      "period:double ?TOKENS=count:integer", cmd_gcra, NULL, NULL, NO_STATS },
    { "increx", -2, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write string fast", "string", "8.8.0",
      "Increments the numeric value of a key within bounds and sets its "
      "expiration time, as Redis's INCREX (and Valkey's NX/XX).",
      "key:key ?BYINT=integer:integer ?BYFLOAT=float:double "
      "?LBOUND=lowerbound:string ?UBOUND=upperbound:string "
      "?SATURATE:pure-token ?EX=seconds:integer ?PX=milliseconds:integer "
      "?EXAT=unix-time-seconds:integer ?PXAT=unix-time-milliseconds:integer "
      "?PERSIST:pure-token ?ENX:pure-token ?NX:pure-token ?XX:pure-token",
      cmd_increx, NULL, NULL, NO_STATS },
    { "rl.fixed", -4, CMD_WRITE | CMD_PEEKS | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Fixed-window counter: at most limit units per window seconds.",
      "key:key limit:integer window:integer ?COST=n:integer "
      "?ALIGN:pure-token ?PEEK:pure-token ?MS:pure-token",
      cmd_rl_fixed, NULL, NULL, NO_STATS },
    { "rl.check", -3, CMD_WRITE | CMD_PEEKS | CMD_DENYOOM | CMD_FAST, 0, 0, 0, NULL,
      "write fast", "ratelimit", "0.1.0",
      "A named limit of limits-file (envoyproxy/ratelimit's format): the "
      "decision Envoy's rate limit service gets for the same descriptor.",
      "domain:string *entry:string ?HITS=n:integer ?PEEK:pure-token "
      "?MS:pure-token", cmd_rl_check, NULL, NULL, NO_STATS },
    { "rl.sliding", -4, CMD_WRITE | CMD_PEEKS | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Sliding-window counter: the current window plus the weighted "
      "previous one.",
      "key:key limit:integer window:integer ?COST=n:integer "
      "?PEEK:pure-token ?MS:pure-token",
      cmd_rl_sliding, NULL, NULL, NO_STATS },
    { "rl.log", -4, CMD_WRITE | CMD_PEEKS | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Exact sliding log: every accepted request is kept with its cost "
      "and metadata for window seconds.",
      "key:key limit:integer window:integer ?COST=n:integer "
      "?META=value:string ?PEEK:pure-token ?MS:pure-token",
      cmd_rl_log, NULL, NULL, NO_STATS },
    { "rl.entries", -2, CMD_READONLY, 1, 1, 1, "RO access", "read slow",
      "ratelimit", "0.1.0",
      "The requests an RL.LOG key holds, newest first.",
      "key:key ?COUNT=n:integer",
      cmd_rl_entries, NULL, NULL, NO_STATS },
    { "rl.tiers", -4, CMD_WRITE | CMD_PEEKS | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW access update",
      "write fast", "ratelimit", "0.1.0",
      "Several sliding windows over per-second buckets, checked all or "
      "nothing.",
      "key:key limit1:integer window1:integer ?*tier:block=limit2|window2 "
      "?COST=n:integer ?PEEK:pure-token ?MS:pure-token",
      cmd_rl_tiers, NULL, NULL, NO_STATS },
    { "subscribe", -2, CMD_PUBSUB | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
      0, 0, 0, NULL, "pubsub slow", "pubsub", "2.0.0",
      "Listens for messages published to channels.", "*channel:string",
      cmd_subscribe, NULL, NULL, NO_STATS },
    { "unsubscribe", -1, CMD_PUBSUB | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
      0, 0, 0, NULL, "pubsub slow", "pubsub", "2.0.0",
      "Stops listening to messages posted to channels.", "?*channel:string",
      cmd_unsubscribe, NULL, NULL, NO_STATS },
    { "psubscribe", -2, CMD_PUBSUB | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
      0, 0, 0, NULL, "pubsub slow", "pubsub", "2.0.0",
      "Listens for messages published to channels that match one or more "
      "patterns.", "*pattern:pattern", cmd_psubscribe, NULL, NULL, NO_STATS },
    { "punsubscribe", -1, CMD_PUBSUB | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE,
      0, 0, 0, NULL, "pubsub slow", "pubsub", "2.0.0",
      "Stops listening to messages published to channels that match one or "
      "more patterns.", "?*pattern:pattern", cmd_punsubscribe, NULL,
      NULL, NO_STATS },
    { "publish", 3, CMD_PUBSUB | CMD_LOADING | CMD_STALE | CMD_FAST |
      CMD_MAY_REPLICATE, 0, 0, 0,
      NULL, "pubsub fast", "pubsub", "2.0.0", "Posts a message to a channel.",
      "channel:string message:string", cmd_publish, NULL, NULL, NO_STATS },
    { "pubsub", -2, 0, 0, 0, 0, NULL, "slow", "pubsub", "2.8.0",
      "A container for Pub/Sub commands.", "", cmd_pubsub,
      pubsub_subcommands, NULL, NO_STATS },
    { "ping", -1, CMD_FAST, 0, 0, 0, NULL, "fast connection",
      "connection", "1.0.0", "Returns the server's liveliness response.",
      "?message:string", cmd_ping, NULL,
      "request_policy:all_shards response_policy:all_succeeded", NO_STATS },
    { "echo", 2, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, NULL, "fast connection", "connection",
      "1.0.0", "Returns the given string.", "message:string", cmd_echo, NULL,
      NULL, NO_STATS },
    { "quit", -1, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST |
      CMD_NO_AUTH | CMD_ALLOW_BUSY | CMD_NOT_QUEUED, 0, 0, 0,
      NULL, "fast connection", "connection", "1.0.0",
      "Closes the connection.", "", cmd_quit, NULL, NULL, NO_STATS },
    { "multi", 1, TX_CONTROL | CMD_FAST, 0, 0, 0, NULL,
      "fast transaction", "transactions", "1.2.0",
      "Starts a transaction.", "", cmd_multi, NULL, NULL, NO_STATS },
    { "exec", 1, (TX_CONTROL & ~CMD_ALLOW_BUSY) | CMD_SKIP_SLOWLOG | CMD_EXEC,
      0, 0, 0, NULL,
      "slow transaction", "transactions", "1.2.0",
      "Executes all commands in a transaction.", "", cmd_exec, NULL,
      NULL, NO_STATS },
    { "discard", 1, TX_CONTROL | CMD_FAST, 0, 0, 0, NULL,
      "fast transaction", "transactions", "2.0.0",
      "Discards a transaction.", "", cmd_discard, NULL, NULL, NO_STATS },
    { "watch", -2, TX_CONTROL | CMD_FAST, 1, -1, 1, "RO", "fast transaction",
      "transactions", "2.2.0",
      "Monitors changes to keys to determine the execution of a "
      "transaction.", "*key:key", cmd_watch, NULL, NULL, NO_STATS },
    { "unwatch", 1, TX_QUEUED | CMD_FAST, 0, 0, 0, NULL,
      "fast transaction", "transactions", "2.2.0",
      "Forgets about watched keys of a transaction.", "", cmd_unwatch, NULL,
      NULL, NO_STATS },
    { "select", 2, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, NULL, "fast connection",
      "connection", "1.0.0",
      "Change the selected database for the current connection",
      "index:integer", cmd_select, NULL, NULL, NO_STATS },
    { "hello", -1, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST |
      CMD_NO_AUTH | CMD_ALLOW_BUSY, 0, 0,
      0, NULL,
      "fast connection", "connection", "6.0.0",
      "Handshakes with the server.",
      "?protover:integer ?AUTH=username:string ?password:string "
      "?SETNAME=clientname:string", cmd_hello, NULL,
      NULL, NO_STATS },
    { "auth", -2, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST |
      CMD_NO_AUTH | CMD_ALLOW_BUSY, 0, 0,
      0, NULL,
      "fast connection", "connection", "1.0.0",
      "Authenticates the connection.", "?username:string password:string",
      cmd_auth, NULL, NULL, NO_STATS },
    { "readonly", 1, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, NULL, "fast connection",
      "cluster", "3.0.0", "Enables read-only queries for a connection to a "
      "Redis Cluster replica node.", "", cmd_readonly, NULL, NULL, NO_STATS },
    { "readwrite", 1, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, NULL, "fast connection",
      "cluster", "3.0.0", "Enables read-write queries for a connection to a "
      "Redis Cluster replica node.", "", cmd_readonly, NULL, NULL, NO_STATS },
    { "reset", 1, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST |
      CMD_NO_AUTH | CMD_ALLOW_BUSY | CMD_NOT_QUEUED, 0, 0, 0, NULL,
      "fast connection", "connection", "6.2.0",
      "Resets the connection.", "", cmd_reset, NULL, NULL, NO_STATS },
    { "debug", -2, ADMIN, 0, 0, 0, NULL, "admin slow dangerous", "server",
      "1.0.0", "A container for debugging commands.", "", cmd_debug, NULL,
      NULL, NO_STATS },
    { "monitor", 1, ADMIN, 0, 0, 0, NULL, "admin slow dangerous", "server",
      "1.0.0", "Listens for all requests received by the server in real "
      "time.", "", cmd_monitor, NULL, NULL, NO_STATS },
    { "memory", -2, 0, 0, 0, 0, NULL, "slow", "server", "4.0.0",
      "A container for memory diagnostics commands.", "", cmd_memory,
      memory_subcommands, NULL, NO_STATS },
    { "function", -2, 0, 0, 0, 0, NULL, "slow", "scripting", "7.0.0",
      "A container for function commands.", "", cmd_function,
      function_subcommands, NULL, NO_STATS },
    { "script", -2, 0, 0, 0, 0, NULL, "slow", "scripting", "2.6.0",
      "A container for Lua scripts management commands", "", cmd_script,
      script_subcommands, NULL, NO_STATS },
    { "eval", -3, EVAL_FLAGS | CMD_SCRIPT_BODY | CMD_MAY_REPLICATE, 0, 0, 0,
      EVAL_KEYS "RW access update " EVAL_RW_NOTE, "slow scripting",
      "scripting", "2.6.0", "Execute a Lua script server side",
      "script:string numkeys:integer ?*key:key ?*arg:string", cmd_eval,
      NULL, NULL, SCRIPT_FLAGS_ROW },
    { "evalsha", -3, EVAL_FLAGS | CMD_SCRIPT_SHA | CMD_MAY_REPLICATE, 0, 0, 0,
      EVAL_KEYS "RW access update", "slow scripting", "scripting", "2.6.0",
      "Execute a Lua script server side",
      "sha1:string numkeys:integer ?*key:key ?*arg:string", cmd_evalsha,
      NULL, NULL, SCRIPT_FLAGS_ROW },
    { "eval_ro", -3, EVAL_FLAGS | CMD_SCRIPT_BODY | CMD_READONLY, 0, 0, 0,
      EVAL_KEYS "RO access " EVAL_RO_NOTE, "slow scripting", "scripting",
      "7.0.0", "Execute a read-only Lua script server side",
      "script:string numkeys:integer ?*key:key ?*arg:string", cmd_eval_ro,
      NULL, NULL, SCRIPT_FLAGS_ROW },
    { "evalsha_ro", -3, EVAL_FLAGS | CMD_SCRIPT_SHA | CMD_READONLY, 0, 0, 0,
      EVAL_KEYS "RO access", "slow scripting", "scripting", "7.0.0",
      "Execute a read-only Lua script server side",
      "sha1:string numkeys:integer ?*key:key ?*arg:string", cmd_evalsha_ro,
      NULL, NULL, SCRIPT_FLAGS_ROW },
    { "client", -2, 0, 0, 0, 0, NULL, "slow", "connection", "2.4.0",
      "A container for client connection commands.", "", cmd_client,
      client_subcommands, NULL, NO_STATS },
    { "cluster", -2, 0, 0, 0, 0, NULL, "slow", "cluster", "3.0.0",
      "A container for Redis Cluster commands (cluster-mode emulated|yes).", "",
      cmd_cluster, cluster_subcommands, NULL, NO_STATS },
    { "command", -1, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow connection",
      "server", "2.8.13", "Returns detailed information about all commands.",
      "", cmd_command, command_subcommands, "nondeterministic_output_order", NO_STATS },
    { "config", -2, 0, 0, 0, 0, NULL, "slow", "server", "2.0.0",
      "A container for server configuration commands.", "", cmd_config,
      config_subcommands, NULL, NO_STATS },
    { "info", -1, CMD_LOADING | CMD_STALE, 0, 0, 0, NULL, "slow dangerous", "server",
      "1.0.0", "Returns information and statistics about the server.",
      "*section:string", cmd_info, NULL, NONDET " request_policy:all_shards response_policy:special", NO_STATS },
    { "swapdb", 3, CMD_WRITE | CMD_FAST, 0, 0, 0, NULL,
      "keyspace write fast dangerous", "server", "4.0.0",
      "Swaps two Redis databases", "index1:integer index2:integer", cmd_swapdb,
      NULL, NULL, NO_STATS },
    { "move", 3, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW access update",
      "keyspace write fast", "generic", "1.0.0",
      "Move a key to another database", "key:key db:integer", cmd_move,
      NULL, NULL, NO_STATS },
    { "dbsize", 1, FASTRO, 0, 0, 0, NULL, "keyspace read fast", "server",
      "1.0.0", "Return the number of keys in the selected database", "",
      cmd_dbsize, NULL,
      "request_policy:all_shards response_policy:agg_sum", NO_STATS },
    { "flushall", -1, CMD_WRITE, 0, 0, 0, NULL, "keyspace write slow dangerous",
      "server", "1.0.0", "Remove all keys from all databases",
      "?async:oneof=ASYNC|SYNC", cmd_flushall, NULL, "request_policy:all_shards response_policy:all_succeeded", NO_STATS },
    { "flushdb", -1, CMD_WRITE, 0, 0, 0, NULL, "keyspace write slow dangerous",
      "server", "1.0.0", "Remove all keys from the current database",
      "?async:oneof=ASYNC|SYNC", cmd_flushdb, NULL, "request_policy:all_shards response_policy:all_succeeded", NO_STATS },
    { "slowlog", -2, 0, 0, 0, 0, NULL, "slow", "server", "2.2.12",
      "A container for slow log commands.", "", cmd_slowlog,
      slowlog_subcommands, NULL, NO_STATS },
    { "replicaof", 3, CMD_ADMIN | CMD_NOSCRIPT | CMD_STALE |
      CMD_NO_ASYNC_LOADING, 0, 0, 0, NULL, "admin slow dangerous",
      "server", "5.0.0", "Configures a server as replica of another, or "
      "promotes it to a master.", "host:string port:integer",
      cmd_replicaof, NULL, NULL, NO_STATS },
    { "slaveof", 3, CMD_ADMIN | CMD_NOSCRIPT | CMD_STALE |
      CMD_NO_ASYNC_LOADING, 0, 0, 0, NULL, "admin slow dangerous",
      "server", "1.0.0", "Sets a Redis server as a replica of another, or "
      "promotes it to being a master.", "host:string port:integer",
      cmd_replicaof, NULL, NULL, NO_STATS },
    { "replconf", -1, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE |
      CMD_ALLOW_BUSY, 0, 0, 0, NULL, "admin slow dangerous", "server",
      "3.0.0", "An internal command for configuring the replication "
      "stream.", "", cmd_replconf, NULL, NULL, NO_STATS },
    { "psync", -3, CMD_ADMIN | CMD_NOSCRIPT | CMD_NO_ASYNC_LOADING |
      CMD_NO_MULTI, 0, 0, 0, NULL, "admin slow dangerous", "server",
      "2.8.0", "An internal command used in replication.",
      "replicationid:string offset:integer", cmd_psync, NULL, NULL, NO_STATS },
    { "sync", 1, CMD_ADMIN | CMD_NOSCRIPT | CMD_NO_ASYNC_LOADING |
      CMD_NO_MULTI, 0, 0, 0, NULL, "admin slow dangerous", "server",
      "1.0.0", "An internal command used in replication.", "", cmd_sync,
      NULL, NULL, NO_STATS },
    { "wait", 3, CMD_NOSCRIPT, 0, 0, 0, NULL, "slow connection", "generic", "3.0.0",
      "Blocks until the asynchronous replication of all preceding write "
      "commands sent by the connection is completed.",
      "numreplicas:integer timeout:integer", cmd_wait, NULL, "request_policy:all_shards response_policy:agg_min", NO_STATS },
    { "role", 1, CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0,
      NULL, "admin fast dangerous", "server", "2.8.12",
      "Returns the replication role.", "", cmd_role, NULL, NULL, NO_STATS },
    { "time", 1, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, NULL, "fast", "server",
      "2.6.0", "Returns the server time.", "", cmd_time, NULL,
      NONDET, NO_STATS },
    { "shutdown", -1, CMD_ADMIN | CMD_NOSCRIPT | CMD_LOADING | CMD_STALE | CMD_NO_MULTI | CMD_ALLOW_BUSY, 0,
      0, 0, NULL, "admin slow dangerous", "server", "1.0.0",
      "Stops the server.", "?NOSAVE:pure-token ?SAVE:pure-token",
      cmd_shutdown, NULL, NULL, NO_STATS },
    { "save", 1, CMD_ADMIN | CMD_NOSCRIPT | CMD_NO_ASYNC_LOADING | CMD_NO_MULTI, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "1.0.0",
      "Synchronously saves the keyspace to the snapshot file.", "",
      cmd_save, NULL, NULL, NO_STATS },
    { "bgsave", -1, CMD_ADMIN | CMD_NOSCRIPT | CMD_NO_ASYNC_LOADING, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "1.0.0",
      "Asynchronously saves the keyspace to the snapshot file.",
      "?SCHEDULE:pure-token", cmd_bgsave, NULL, NULL, NO_STATS },
    { "bgrewriteaof", 1, CMD_ADMIN | CMD_NOSCRIPT | CMD_NO_ASYNC_LOADING, 0, 0, 0, NULL,
      "admin slow dangerous", "server", "1.0.0",
      "Asynchronously rewrites the append-only file to disk.", "",
      cmd_bgrewriteaof, NULL, NULL, NO_STATS },
    { "lastsave", 1, CMD_LOADING | CMD_STALE | CMD_FAST, 0, 0, 0, NULL,
      "admin fast dangerous", "server", "1.0.0",
      "Returns the Unix time of the last successful save.", "",
      cmd_lastsave, NULL, NONDET, NO_STATS },
    /* Strings. */
    { "get", 2, FASTRO, 1, 1, 1, "RO access", "read string fast", "string",
      "1.0.0", "Get the value of a key", "key:key", cmd_get, NULL, NULL,
      NO_STATS },
    { "set", -3, CMD_WRITE | CMD_DENYOOM, 1, 1, 1,
      "RW access update variable_flags "
      "# RW and ACCESS due to the optional `GET` argument",
      "write string slow", "string", "1.0.0",
      "Set the string value of a key",
      "key:key value:string ?condition:oneof=NX|XX ?GET:pure-token "
      "?expiration:oneof=EX=seconds/integer|PX=milliseconds/integer|"
      "EXAT=unix-time-seconds/unix-time|"
      "PXAT=unix-time-milliseconds/unix-time|KEEPTTL",
      cmd_set, NULL, NULL, NO_STATS },
    { "setnx", 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "OW insert",
      "write string fast", "string", "1.0.0",
      "Set the value of a key, only if the key does not exist",
      "key:key value:string", cmd_setnx, NULL, NULL, NO_STATS },
    { "setex", 4, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "OW update",
      "write string slow", "string", "2.0.0",
      "Set the value and expiration of a key",
      "key:key seconds:integer value:string", cmd_setex, NULL, NULL,
      NO_STATS },
    { "psetex", 4, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "OW update",
      "write string slow", "string", "2.6.0",
      "Set the value and expiration in milliseconds of a key",
      "key:key milliseconds:integer value:string", cmd_psetex, NULL, NULL,
      NO_STATS },
    { "getset", 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write string fast", "string", "1.0.0",
      "Set the string value of a key and return its old value",
      "key:key value:string", cmd_getset, NULL, NULL, NO_STATS },
    { "getdel", 2, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW access delete",
      "write string fast", "string", "6.2.0",
      "Get the value of a key and delete the key", "key:key", cmd_getdel,
      NULL, NULL, NO_STATS },
    { "getex", -2, CMD_WRITE | CMD_FAST, 1, 1, 1,
      "RW access update # RW and UPDATE because it changes the TTL",
      "write string fast", "string", "6.2.0",
      "Get the value of a key and optionally set its expiration",
      "key:key ?expiration:oneof=EX=seconds/integer|PX=milliseconds/integer|"
      "EXAT=unix-time-seconds/unix-time|"
      "PXAT=unix-time-milliseconds/unix-time|PERSIST",
      cmd_getex, NULL, NULL, NO_STATS },
    { "mget", -2, FASTRO, 1, -1, 1, "RO access", "read string fast",
      "string", "1.0.0", "Get the values of all the given keys", "*key:key",
      cmd_mget, NULL, "request_policy:multi_shard", NO_STATS },
    { "mset", -3, CMD_WRITE | CMD_DENYOOM, 1, -1, 2, "OW update",
      "write string slow", "string", "1.0.1",
      "Set multiple keys to multiple values",
      "*key_value:block=key/key|value/string", cmd_mset, NULL,
      "request_policy:multi_shard response_policy:all_succeeded", NO_STATS },
    { "msetnx", -3, CMD_WRITE | CMD_DENYOOM, 1, -1, 2, "OW insert",
      "write string slow", "string", "1.0.1",
      "Set multiple keys to multiple values, only if none of the keys exist",
      "*key_value:block=key/key|value/string", cmd_msetnx, NULL,
      "request_policy:multi_shard response_policy:agg_min", NO_STATS },
    { "incr", 2, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write string fast", "string", "1.0.0",
      "Increment the integer value of a key by one", "key:key", cmd_incr,
      NULL, NULL, NO_STATS },
    { "incrby", 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write string fast", "string", "1.0.0",
      "Increment the integer value of a key by the given amount",
      "key:key increment:integer", cmd_incrby, NULL, NULL, NO_STATS },
    { "incrbyfloat", 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write string fast", "string", "2.6.0",
      "Increment the float value of a key by the given amount",
      "key:key increment:double", cmd_incrbyfloat, NULL, NULL, NO_STATS },
    { "decr", 2, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write string fast", "string", "1.0.0",
      "Decrement the integer value of a key by one", "key:key", cmd_decr,
      NULL, NULL, NO_STATS },
    { "decrby", 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write string fast", "string", "1.0.0",
      "Decrement the integer value of a key by the given number",
      "key:key decrement:integer", cmd_decrby, NULL, NULL, NO_STATS },
    { "append", 3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW insert",
      "write string fast", "string", "2.0.0", "Append a value to a key",
      "key:key value:string", cmd_append, NULL, NULL, NO_STATS },
    { "strlen", 2, FASTRO, 1, 1, 1, "RO", "read string fast", "string",
      "2.2.0", "Get the length of the value stored in a key", "key:key",
      cmd_strlen, NULL, NULL, NO_STATS },
    { "getrange", 4, CMD_READONLY, 1, 1, 1, "RO access", "read string slow",
      "string", "2.4.0", "Get a substring of the string stored at a key",
      "key:key start:integer end:integer", cmd_getrange, NULL, NULL,
      NO_STATS },
    { "setrange", 4, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "RW update",
      "write string slow", "string", "2.2.0",
      "Overwrite part of a string at key starting at the specified offset",
      "key:key offset:integer value:string", cmd_setrange, NULL, NULL,
      NO_STATS },
    /* Hashes (cmd_hash.c). */
    { "hset", -4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW update",
      "write hash fast", "hash", "2.0.0",
      "Set the string value of a hash field",
      "key:key *field_value:block=field/string|value/string", cmd_hset, NULL,
      NULL, NO_STATS },
    { "hsetnx", 4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW insert",
      "write hash fast", "hash", "2.0.0",
      "Set the value of a hash field, only if the field does not exist",
      "key:key field:string value:string", cmd_hsetnx, NULL, NULL,
      NO_STATS },
    { "hmset", -4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW update",
      "write hash fast", "hash", "2.0.0",
      "Set multiple hash fields to multiple values",
      "key:key *field_value:block=field/string|value/string", cmd_hmset,
      NULL, NULL, NO_STATS },
    { "hget", 3, FASTRO, 1, 1, 1, "RO access", "read hash fast", "hash",
      "2.0.0", "Get the value of a hash field", "key:key field:string",
      cmd_hget, NULL, NULL, NO_STATS },
    { "hmget", -3, FASTRO, 1, 1, 1, "RO access", "read hash fast", "hash",
      "2.0.0", "Get the values of all the given hash fields",
      "key:key *field:string", cmd_hmget, NULL, NULL, NO_STATS },
    { "hdel", -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW delete",
      "write hash fast", "hash", "2.0.0", "Delete one or more hash fields",
      "key:key *field:string", cmd_hdel, NULL, NULL, NO_STATS },
    { "hlen", 2, FASTRO, 1, 1, 1, "RO", "read hash fast", "hash", "2.0.0",
      "Get the number of fields in a hash", "key:key", cmd_hlen, NULL, NULL,
      NO_STATS },
    { "hstrlen", 3, FASTRO, 1, 1, 1, "RO", "read hash fast", "hash", "3.2.0",
      "Get the length of the value of a hash field", "key:key field:string",
      cmd_hstrlen, NULL, NULL, NO_STATS },
    { "hexists", 3, FASTRO, 1, 1, 1, "RO", "read hash fast", "hash", "2.0.0",
      "Determine if a hash field exists", "key:key field:string",
      cmd_hexists, NULL, NULL, NO_STATS },
    { "hincrby", 4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write hash fast", "hash", "2.0.0",
      "Increment the integer value of a hash field by the given number",
      "key:key field:string increment:integer", cmd_hincrby, NULL, NULL,
      NO_STATS },
    { "hincrbyfloat", 4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write hash fast", "hash", "2.6.0",
      "Increment the float value of a hash field by the given amount",
      "key:key field:string increment:double", cmd_hincrbyfloat, NULL, NULL,
      NO_STATS },
    { "hgetall", 2, CMD_READONLY, 1, 1, 1, "RO access", "read hash slow",
      "hash", "2.0.0", "Get all the fields and values in a hash", "key:key",
      cmd_hgetall, NULL, "nondeterministic_output_order", NO_STATS },
    { "hkeys", 2, CMD_READONLY, 1, 1, 1, "RO access", "read hash slow",
      "hash", "2.0.0", "Get all the fields in a hash", "key:key", cmd_hkeys,
      NULL, "nondeterministic_output_order", NO_STATS },
    { "hvals", 2, CMD_READONLY, 1, 1, 1, "RO access", "read hash slow",
      "hash", "2.0.0", "Get all the values in a hash", "key:key", cmd_hvals,
      NULL, "nondeterministic_output_order", NO_STATS },
    { "hscan", -3, CMD_READONLY, 1, 1, 1, "RO access", "read hash slow",
      "hash", "2.8.0",
      "Incrementally iterate hash fields and associated values",
      "key:key cursor:integer ?MATCH=pattern:pattern ?COUNT=count:integer",
      cmd_hscan, NULL, NONDET, NO_STATS },
    /* Lists. */
    { "lpush", -3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW insert",
      "write list fast", "list", "1.0.0",
      "Prepend one or multiple elements to a list",
      "key:key *element:string", cmd_lpush, NULL, NULL, NO_STATS },
    { "rpush", -3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW insert",
      "write list fast", "list", "1.0.0",
      "Append one or multiple elements to a list",
      "key:key *element:string", cmd_rpush, NULL, NULL, NO_STATS },
    { "lpushx", -3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW insert",
      "write list fast", "list", "2.2.0",
      "Prepend an element to a list, only if the list exists",
      "key:key *element:string", cmd_lpushx, NULL, NULL, NO_STATS },
    { "rpushx", -3, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW insert",
      "write list fast", "list", "2.2.0",
      "Append an element to a list, only if the list exists",
      "key:key *element:string", cmd_rpushx, NULL, NULL, NO_STATS },
    { "lpop", -2, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW access delete",
      "write list fast", "list", "1.0.0",
      "Remove and get the first elements in a list",
      "key:key ?count:integer", cmd_lpop, NULL, NULL, NO_STATS },
    { "rpop", -2, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW access delete",
      "write list fast", "list", "1.0.0",
      "Remove and get the last elements in a list",
      "key:key ?count:integer", cmd_rpop, NULL, NULL, NO_STATS },
    { "llen", 2, FASTRO, 1, 1, 1, "RO", "read list fast", "list", "1.0.0",
      "Get the length of a list", "key:key", cmd_llen, NULL, NULL,
      NO_STATS },
    { "lindex", 3, CMD_READONLY, 1, 1, 1, "RO access", "read list slow",
      "list", "1.0.0", "Get an element from a list by its index",
      "key:key index:integer", cmd_lindex, NULL, NULL, NO_STATS },
    { "lrange", 4, CMD_READONLY, 1, 1, 1, "RO access", "read list slow",
      "list", "1.0.0", "Get a range of elements from a list",
      "key:key start:integer stop:integer", cmd_lrange, NULL, NULL,
      NO_STATS },
    { "ltrim", 4, CMD_WRITE, 1, 1, 1, "RW delete", "write list slow",
      "list", "1.0.0", "Trim a list to the specified range",
      "key:key start:integer stop:integer", cmd_ltrim, NULL, NULL,
      NO_STATS },
    { "lrem", 4, CMD_WRITE, 1, 1, 1, "RW delete", "write list slow", "list",
      "1.0.0", "Remove elements from a list",
      "key:key count:integer element:string", cmd_lrem, NULL, NULL,
      NO_STATS },
    { "lset", 4, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "RW update",
      "write list slow", "list", "1.0.0",
      "Set the value of an element in a list by its index",
      "key:key index:integer element:string", cmd_lset, NULL, NULL,
      NO_STATS },
    { "lpos", -3, CMD_READONLY, 1, 1, 1, "RO access", "read list slow",
      "list", "6.0.6", "Return the index of matching elements on a list",
      "key:key element:string ?RANK=rank:integer "
      "?COUNT=num-matches:integer ?MAXLEN=len:integer", cmd_lpos, NULL,
      NULL, NO_STATS },
    { "linsert", 5, CMD_WRITE | CMD_DENYOOM, 1, 1, 1, "RW insert",
      "write list slow", "list", "2.2.0",
      "Insert an element before or after another element in a list",
      "key:key where:oneof=BEFORE|AFTER pivot:string element:string",
      cmd_linsert, NULL, NULL, NO_STATS },
    { "lmove", 5, CMD_WRITE | CMD_DENYOOM, 1, 2, 1,
      "RW access delete|RW insert", "write list slow", "list", "6.2.0",
      "Pop an element from a list, push it to another list and return it",
      "source:key destination:key wherefrom:oneof=LEFT|RIGHT "
      "whereto:oneof=LEFT|RIGHT", cmd_lmove, NULL, NULL, NO_STATS },
    /* Expiry. */
    { "pttl", 2, FASTRO, 1, 1, 1, "RO access", "keyspace read fast",
      "generic", "2.6.0", "Get the time to live for a key in milliseconds",
      "key:key", cmd_pttl, NULL, NONDET, NO_STATS },
    { "ttl", 2, FASTRO, 1, 1, 1, "RO access", "keyspace read fast", "generic",
      "1.0.0", "Get the time to live for a key in seconds", "key:key",
      cmd_ttl, NULL, NONDET, NO_STATS },
    { "expire", -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW update",
      "keyspace write fast", "generic", "1.0.0",
      "Set a key's time to live in seconds",
      "key:key seconds:integer ?condition:oneof=NX|XX|GT|LT", cmd_expire,
      NULL, NULL, NO_STATS },
    { "pexpire", -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW update",
      "keyspace write fast", "generic", "2.6.0",
      "Set a key's time to live in milliseconds",
      "key:key milliseconds:integer ?condition:oneof=NX|XX|GT|LT",
      cmd_pexpire, NULL, NULL, NO_STATS },
    { "expireat", -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW update",
      "keyspace write fast", "generic", "1.2.0",
      "Set the expiration for a key as a UNIX timestamp",
      "key:key unix-time-seconds:unix-time ?condition:oneof=NX|XX|GT|LT",
      cmd_expireat, NULL, NULL, NO_STATS },
    { "pexpireat", -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW update",
      "keyspace write fast", "generic", "2.6.0",
      "Set the expiration for a key as a UNIX timestamp specified in "
      "milliseconds",
      "key:key unix-time-milliseconds:unix-time "
      "?condition:oneof=NX|XX|GT|LT", cmd_pexpireat, NULL, NULL, NO_STATS },
    { "persist", 2, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW update",
      "keyspace write fast", "generic", "2.2.0",
      "Remove the expiration from a key", "key:key", cmd_persist, NULL,
      NULL, NO_STATS },
    { "expiretime", 2, FASTRO, 1, 1, 1, "RO access", "keyspace read fast",
      "generic", "7.0.0", "Get the expiration Unix timestamp for a key",
      "key:key", cmd_expiretime, NULL, NULL, NO_STATS },
    { "pexpiretime", 2, FASTRO, 1, 1, 1, "RO access", "keyspace read fast",
      "generic", "7.0.0",
      "Get the expiration Unix timestamp for a key in milliseconds",
      "key:key", cmd_pexpiretime, NULL, NULL, NO_STATS },
    /* The keyspace. */
    { "exists", -2, FASTRO, 1, -1, 1, "RO", "keyspace read fast", "generic",
      "1.0.0", "Determine if a key exists", "*key:key", cmd_exists, NULL,
      "request_policy:multi_shard response_policy:agg_sum", NO_STATS },
    { "touch", -2, FASTRO, 1, -1, 1, "RO", "keyspace read fast", "generic",
      "3.2.1", "Alters the last access time of a key(s). Returns the number "
      "of existing keys specified.", "*key:key", cmd_touch, NULL,
      "request_policy:multi_shard response_policy:agg_sum", NO_STATS },
    { "del", -2, CMD_WRITE, 1, -1, 1, "RM delete", "keyspace write slow",
      "generic", "1.0.0", "Delete a key", "*key:key", cmd_del, NULL,
      "request_policy:multi_shard response_policy:agg_sum", NO_STATS },
    { "unlink", -2, CMD_WRITE | CMD_FAST, 1, -1, 1, "RM delete",
      "keyspace write fast", "generic", "4.0.0",
      "Delete a key asynchronously in another thread. Otherwise it is just "
      "as DEL, but non blocking.", "*key:key", cmd_unlink, NULL,
      "request_policy:multi_shard response_policy:agg_sum", NO_STATS },
    { "rename", 3, CMD_WRITE, 1, 2, 1, "RW access delete|OW update",
      "keyspace write slow", "generic", "1.0.0", "Rename a key",
      "key:key newkey:key", cmd_rename, NULL, NULL, NO_STATS },
    { "renamenx", 3, CMD_WRITE | CMD_FAST, 1, 2, 1,
      "RW access delete|OW insert", "keyspace write fast", "generic",
      "1.0.0", "Rename a key, only if the new key does not exist",
      "key:key newkey:key", cmd_renamenx, NULL, NULL, NO_STATS },
    { "copy", -3, CMD_WRITE | CMD_DENYOOM, 1, 2, 1, "RO access|OW update",
      "keyspace write slow", "generic", "6.2.0", "Copy a key",
      "source:key destination:key ?DB=destination-db:integer "
      "?REPLACE:pure-token", cmd_copy, NULL, NULL, NO_STATS },
    { "type", 2, FASTRO, 1, 1, 1, "RO", "keyspace read fast", "generic",
      "1.0.0", "Determine the type stored at key", "key:key", cmd_type,
      NULL, NULL, NO_STATS },
    { "keys", 2, CMD_READONLY, 0, 0, 0, NULL, "keyspace read slow dangerous",
      "generic", "1.0.0", "Find all keys matching the given pattern",
      "pattern:pattern", cmd_keys, NULL,
      "request_policy:all_shards nondeterministic_output_order", NO_STATS },
    { "scan", -2, CMD_READONLY, 0, 0, 0, NULL, "keyspace read slow", "generic",
      "2.8.0", "Incrementally iterate the keys space",
      "cursor:integer ?MATCH=pattern:pattern ?COUNT=count:integer "
      "?TYPE=type:string", cmd_scan, NULL,
      NONDET " request_policy:special", NO_STATS },
    /* Sorted sets (cmd_zset.c). */
    { "zadd", -4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1, "RW update",
      "write sortedset fast", "sorted-set", "1.2.0",
      "Add one or more members to a sorted set, or update its score if it "
      "already exists",
      "key:key ?condition:oneof=NX|XX ?comparison:oneof=GT|LT "
      "?CH:pure-token ?INCR:pure-token "
      "*score_member:block=score/double|member/string", cmd_zadd, NULL,
      NULL, NO_STATS },
    { "zincrby", 4, CMD_WRITE | CMD_DENYOOM | CMD_FAST, 1, 1, 1,
      "RW access update", "write sortedset fast", "sorted-set", "1.2.0",
      "Increment the score of a member in a sorted set",
      "key:key increment:integer member:string", cmd_zincrby, NULL, NULL,
      NO_STATS },
    { "zrem", -3, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW delete",
      "write sortedset fast", "sorted-set", "1.2.0",
      "Remove one or more members from a sorted set", "key:key *member:string",
      cmd_zrem, NULL, NULL, NO_STATS },
    { "zscore", 3, FASTRO, 1, 1, 1, "RO access", "read sortedset fast",
      "sorted-set", "1.2.0",
      "Get the score associated with the given member in a sorted set",
      "key:key member:string", cmd_zscore, NULL, NULL, NO_STATS },
    { "zmscore", -3, FASTRO, 1, 1, 1, "RO access", "read sortedset fast",
      "sorted-set", "6.2.0",
      "Get the score associated with the given members in a sorted set",
      "key:key *member:string", cmd_zmscore, NULL, NULL, NO_STATS },
    { "zcard", 2, FASTRO, 1, 1, 1, "RO", "read sortedset fast", "sorted-set",
      "1.2.0", "Get the number of members in a sorted set", "key:key",
      cmd_zcard, NULL, NULL, NO_STATS },
    { "zcount", 4, FASTRO, 1, 1, 1, "RO access", "read sortedset fast",
      "sorted-set", "2.0.0",
      "Count the members in a sorted set with scores within the given values",
      "key:key min:double max:double", cmd_zcount, NULL, NULL, NO_STATS },
    { "zlexcount", 4, FASTRO, 1, 1, 1, "RO access", "read sortedset fast",
      "sorted-set", "2.8.9",
      "Count the number of members in a sorted set between a given "
      "lexicographical range", "key:key min:string max:string",
      cmd_zlexcount, NULL, NULL, NO_STATS },
    { "zrange", -4, CMD_READONLY, 1, 1, 1, "RO access", "read sortedset slow",
      "sorted-set", "1.2.0", "Return a range of members in a sorted set",
      "key:key start:string stop:string ?sortby:oneof=BYSCORE|BYLEX "
      "?REV:pure-token ?limit:block=LIMIT=offset/integer|count/integer "
      "?WITHSCORES:pure-token", cmd_zrange, NULL, NULL, NO_STATS },
    { "zrevrange", -4, CMD_READONLY, 1, 1, 1, "RO access",
      "read sortedset slow", "sorted-set", "1.2.0",
      "Return a range of members in a sorted set, by index, with scores "
      "ordered from high to low",
      "key:key start:integer stop:integer ?WITHSCORES:pure-token",
      cmd_zrevrange, NULL, NULL, NO_STATS },
    { "zrangebyscore", -4, CMD_READONLY, 1, 1, 1, "RO access",
      "read sortedset slow", "sorted-set", "1.0.5",
      "Return a range of members in a sorted set, by score",
      "key:key min:double max:double ?WITHSCORES:pure-token "
      "?limit:block=LIMIT=offset/integer|count/integer", cmd_zrangebyscore,
      NULL, NULL, NO_STATS },
    { "zrevrangebyscore", -4, CMD_READONLY, 1, 1, 1, "RO access",
      "read sortedset slow", "sorted-set", "2.2.0",
      "Return a range of members in a sorted set, by score, with scores "
      "ordered from high to low",
      "key:key max:double min:double ?WITHSCORES:pure-token "
      "?limit:block=LIMIT=offset/integer|count/integer",
      cmd_zrevrangebyscore, NULL, NULL, NO_STATS },
    { "zrangebylex", -4, CMD_READONLY, 1, 1, 1, "RO access",
      "read sortedset slow", "sorted-set", "2.8.9",
      "Return a range of members in a sorted set, by lexicographical range",
      "key:key min:string max:string "
      "?limit:block=LIMIT=offset/integer|count/integer", cmd_zrangebylex,
      NULL, NULL, NO_STATS },
    { "zrevrangebylex", -4, CMD_READONLY, 1, 1, 1, "RO access",
      "read sortedset slow", "sorted-set", "2.8.9",
      "Return a range of members in a sorted set, by lexicographical range, "
      "ordered from higher to lower strings.",
      "key:key max:string min:string "
      "?limit:block=LIMIT=offset/integer|count/integer", cmd_zrevrangebylex,
      NULL, NULL, NO_STATS },
    { "zremrangebyscore", 4, CMD_WRITE, 1, 1, 1, "RW delete",
      "write sortedset slow", "sorted-set", "1.2.0",
      "Remove all members in a sorted set within the given scores",
      "key:key min:double max:double", cmd_zremrangebyscore, NULL, NULL,
      NO_STATS },
    { "zremrangebyrank", 4, CMD_WRITE, 1, 1, 1, "RW delete",
      "write sortedset slow", "sorted-set", "2.0.0",
      "Remove all members in a sorted set within the given indexes",
      "key:key start:integer stop:integer", cmd_zremrangebyrank, NULL, NULL,
      NO_STATS },
    { "zremrangebylex", 4, CMD_WRITE, 1, 1, 1, "RW delete",
      "write sortedset slow", "sorted-set", "2.8.9",
      "Remove all members in a sorted set between the given lexicographical "
      "range", "key:key min:string max:string", cmd_zremrangebylex, NULL,
      NULL, NO_STATS },
    { "zrank", 3, FASTRO, 1, 1, 1, "RO access", "read sortedset fast",
      "sorted-set", "2.0.0", "Determine the index of a member in a sorted set",
      "key:key member:string", cmd_zrank, NULL, NULL, NO_STATS },
    { "zrevrank", 3, FASTRO, 1, 1, 1, "RO access", "read sortedset fast",
      "sorted-set", "2.0.0",
      "Determine the index of a member in a sorted set, with scores ordered "
      "from high to low", "key:key member:string", cmd_zrevrank, NULL, NULL,
      NO_STATS },
    { "zpopmin", -2, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW access delete",
      "write sortedset fast", "sorted-set", "5.0.0",
      "Remove and return members with the lowest scores in a sorted set",
      "key:key ?count:integer", cmd_zpopmin, NULL, NULL, NO_STATS },
    { "zpopmax", -2, CMD_WRITE | CMD_FAST, 1, 1, 1, "RW access delete",
      "write sortedset fast", "sorted-set", "5.0.0",
      "Remove and return members with the highest scores in a sorted set",
      "key:key ?count:integer", cmd_zpopmax, NULL, NULL, NO_STATS },
    { "zscan", -3, CMD_READONLY, 1, 1, 1, "RO access", "read sortedset slow",
      "sorted-set", "2.8.0",
      "Incrementally iterate sorted sets elements and associated scores",
      "key:key cursor:integer ?MATCH=pattern:pattern ?COUNT=count:integer",
      cmd_zscan, NULL, NONDET, NO_STATS },
};

const size_t command_count = sizeof(table) / sizeof(table[0]);
struct cmd *const command_table = table;
