/*
 * cmd_help.c - the HELP subcommand of every container command (CLIENT
 * HELP, CONFIG HELP, ...): one handler, and the texts as data, Redis 7.0's
 * words, with cellgate's own lines where it serves a subcommand
 * differently or has one Redis lacks (CLUSTER PROMOTE, CONFIG
 * RELOAD-LIMITS). A text is named for the command that asks for it, so a
 * new container command adds a table and a row, not a function. DEBUG,
 * which Redis does not make a container, answers its HELP itself.
 */
#include <stddef.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/handlers/handlers.h"
#include "server/server.h"

static const char *const client_help[] = {
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GETNAME", "    Return the name of the current connection.",
    "ID", "    Return the ID of the current connection.",
    "INFO", "    Return information about the current client connection.",
    "KILL <ip:port>", "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE", "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client (none block in cellgate).",
    "NO-EVICT (ON|OFF)", "    Accepted; cellgate never evicts clients.",
    "HELP", "    Print this help.", NULL
};

static const char *const cluster_help[] = {
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "INFO", "    Return information about the cluster.",
    "KEYSLOT <key>", "    Return the hash slot for <key>.",
    "MYID", "    Return the node id.",
    "NODES", "    Return cluster configuration seen by node.",
    "PROMOTE <node-id>", "    Make <node-id> the primary of its shard "
    "and save the topology",
    "    (after a failover; cluster-mode yes).",
    "RELOAD", "    Re-read the cluster-node lines of the config file "
    "(cluster-mode yes).",
    "REPLICAS <node-id>", "    Return <node-id> replicas.",
    "SHARDS", "    Return information about slot range mappings.",
    "SLAVES <node-id>", "    Return <node-id> replicas.",
    "SLOTS", "    Return information about slots range mappings.",
    "HELP", "    Print this help.", NULL
};

/* cluster-enabled yes: Redis 7.0.15's own text, word for word. */
static const char *const cluster_enabled_help[] = {
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]", "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to "
    "current node.",
    "BUMPEPOCH", "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and "
    "<end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>", "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS", "    Delete current node own slots information.",
    "INFO", "    Return information about the cluster.",
    "KEYSLOT <key>", "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID", "    Return the node id.",
    "NODES", "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> "
    "<slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]", "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>", "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE "
    "<node-id>)", "    Set slot state.",
    "REPLICAS <node-id>", "    Return <node-id> replicas.",
    "SAVECONFIG", "    Force saving cluster configuration on disk.",
    "SLOTS", "    Return information about slots range mappings. Each range "
    "is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS", "    Return information about slot range mappings and the "
    "nodes associated with them.",
    "LINKS", "    Return information about all network links between this "
    "node and its peers.",
    "    Output format is an array where each array element is a map "
    "containing attributes of a link",
    "HELP", "    Prints this help.", NULL
};

static const char *const command_help[] = {
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)", "    Return details about all commands.",
    "COUNT", "    Return the total number of commands in this server.",
    "LIST", "    Return a list of all commands in this server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full command.",
    "HELP", "    Prints this help.", NULL
};

static const char *const config_help[] = {
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their "
    "values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT", "    Reset statistics reported by the INFO command.",
    "REWRITE", "    Rewrite the configuration file.",
    "RELOAD-LIMITS", "    Re-read the named limits of limits-file.",
    "HELP", "    Prints this help.", NULL
};

static const char *const memory_help[] = {
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS", "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value (all of it: "
    "SAMPLES is accepted).",
    "HELP", "    Prints this help.", NULL
};

static const char *const script_help[] = {
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the "
    "script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior "
    "is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes "
    "are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
    NULL
};

static const char *const function_help[] = {
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern "
    "using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior "
    "is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes "
    "are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, "
    "can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is "
    "possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing "
    "libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing "
    "libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this "
    "option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
    NULL
};

static const char *const slowlog_help[] = {
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 "
    "mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP "
    "and port,",
    "    client name",
    "LEN", "    Return the length of the slowlog.",
    "RESET", "    Reset the slowlog.",
    "HELP", "    Print this help.", NULL
};

static const struct {
    const char *command;
    const char *const *lines;   /* NULL-terminated */
} texts[] = {
    { "client", client_help },   { "cluster", cluster_help },
    { "command", command_help }, { "config", config_help },
    { "memory", memory_help },   { "script", script_help },
    { "slowlog", slowlog_help }, { "function", function_help },
};

/* "<command> HELP": the text of argv[0]. The command table names this
 * handler only for the commands above; another would get an empty
 * array. */
void
help_command(struct conn *c, struct resp_request *req)
{
    if (srv.conf.cluster_enabled && strcasecmp(req->argv[0], "cluster") == 0) {
        cmd_reply_help(c, cluster_enabled_help);
        return;
    }
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        if (strcasecmp(req->argv[0], texts[i].command) == 0) {
            cmd_reply_help(c, texts[i].lines);
            return;
        }
    }
    reply_array(&c->out, 0);
}
