/*
 * options.h - THE table of configuration options. One row per option:
 *
 *   X(field, "name", TYPE, "default", min, max, "one-line description")
 *
 * It drives the struct conf fields, default initialisation, the file and
 * command-line parser, CONFIG GET, --describe-config, and a unit test that
 * checks conf/cellgate.conf documents exactly these options. Redis's
 * other names for some of them are CONF_ALIASES, below the table.
 *
 * Types: CONF_INT (decimal, bounds inclusive), CONF_BYTES (with units k kb m
 * mb g gb: 1k = 1000, 1kb = 1024), CONF_BOOL (yes/no), CONF_STRING (bounds
 * unused), CONF_ENUM (allowed words in the description's {...} list, kept
 * as the word's place in it: the enums below),
 * CONF_OCTAL (file permissions like 700), CONF_BINARY (a string of any
 * bytes, NUL included, kept whole: a password), CONF_SAVE (Redis's save
 * rules, see conf.h) and CONF_PRIMARY (replicaof's "<host> <port>").
 */
#ifndef CELLGATE_OPTIONS_H
#define CELLGATE_OPTIONS_H

#define CONF_OPTIONS(X)                                                       \
    X(bind, "bind", CONF_STRING, "127.0.0.1", 0, 0,                           \
      "IPv4 or IPv6 addresses to listen on, space-separated (at most 16)")    \
    X(port, "port", CONF_INT, "6379", 0, 65535,                               \
      "TCP port to listen on; 0 disables TCP")                                \
    X(metrics_port, "metrics-port", CONF_INT, "0", 0, 65535,                  \
      "serve Prometheus /metrics and /healthz on this port; 0 = off")         \
    X(unixsocket, "unixsocket", CONF_STRING, "", 0, 0,                        \
      "path of a unix socket to listen on as well; empty = none")             \
    X(unixsocketperm, "unixsocketperm", CONF_OCTAL, "0", 0, 0777,             \
      "permissions of the unix socket file; 0 = leave as the umask makes it") \
    X(requirepass, "requirepass", CONF_BINARY, "", 0, 0,                      \
      "password clients must AUTH with first; empty = no authentication")     \
    X(tcp_backlog, "tcp-backlog", CONF_INT, "511", 1, 65535,                  \
      "listen() backlog of pending connections")                              \
    X(maxclients, "maxclients", CONF_INT, "10000", 1, 1000000,                \
      "most clients connected at once; more get an error and are closed")     \
    X(timeout, "timeout", CONF_INT, "0", 0, 2147483647,                       \
      "close a client idle for this many seconds; 0 = never")                 \
    X(io_threads, "io-threads", CONF_INT, "1", 1, 128,                        \
      "threads doing client I/O, the main thread included (it runs every "   \
      "command); 1 = the main thread does it all; set at start-up")          \
    X(io_threads_do_reads, "io-threads-do-reads", CONF_BOOL, "no", 0, 0,      \
      "accepted for Redis's configs: I/O threads always read; set at "       \
      "start-up")                                                             \
    X(client_query_buffer_limit, "client-query-buffer-limit", CONF_BYTES,     \
      "1gb", 1048576, 1073741824LL,                                           \
      "most unparsed input bytes buffered for one client (1mb to 1gb)")       \
    X(proto_max_bulk_len, "proto-max-bulk-len", CONF_BYTES, "512mb", 1048576, \
      1073741824LL, "longest bulk string argument accepted (at least 1mb)")  \
    X(proto_max_args, "proto-max-args", CONF_INT, "1048576", 1024,            \
      2147483647, "most arguments in one request (at least 1024)")            \
    X(output_pause_limit, "client-output-pause-limit", CONF_BYTES, "1mb",     \
      1024, 68719476736LL,                                                    \
      "stop reading from a client while this much output waits to be sent")   \
    X(output_hard_limit, "client-output-hard-limit", CONF_BYTES, "256mb",     \
      1024, 68719476736LL,                                                    \
      "close a client whose unsent output passes this size")                  \
    X(cluster_mode, "cluster-mode", CONF_ENUM, "no", 0, 0,                    \
      "Redis Cluster: emulated = one node owning every slot, yes = the "      \
      "cluster-node lines {no emulated yes}")                                 \
    X(cluster_node_id, "cluster-node-id", CONF_STRING, "", 0, 0,              \
      "this node's id among the cluster-node lines; empty = find it by address") \
    X(cluster_announce_ip, "cluster-announce-ip", CONF_STRING, "", 0, 0,      \
      "host clients are told for this node; empty = its cluster-node line's") \
    X(cluster_announce_port, "cluster-announce-port", CONF_INT, "0", 0, 65535, \
      "port clients are told for this node; 0 = its cluster-node line's")     \
    X(grpc_port, "grpc-port", CONF_INT, "0", 0, 65535,                        \
      "port of Envoy's rate limit service (gRPC, HTTP/2 cleartext); 0 = off") \
    X(grpc_bind, "grpc-bind", CONF_STRING, "", 0, 0,                          \
      "address for grpc-port; empty = the first address of bind")            \
    X(grpc_response_headers, "grpc-response-headers", CONF_BOOL, "no", 0, 0,  \
      "answer RateLimit-Limit, -Remaining and -Reset headers for Envoy to add") \
    X(grpc_max_message, "grpc-max-message", CONF_BYTES, "4mb", 1024,          \
      1073741824LL, "largest gRPC request message accepted (1kb to 1gb)")     \
    X(grpc_max_connection_memory, "grpc-max-connection-memory", CONF_BYTES,   \
      "16mb", 1048576, 68719476736LL,                                         \
      "most memory one gRPC connection's request bodies may hold; a call "    \
      "that would pass it is answered RESOURCE_EXHAUSTED")                    \
    X(grpc_max_memory, "grpc-max-memory", CONF_BYTES, "256mb", 0,             \
      1125899906842624LL, "most memory the request bodies of all gRPC "       \
      "connections may hold; past it the ones holding the most are closed; "  \
      "0 = no limit")                                                         \
    X(grpc_stream_timeout, "grpc-stream-timeout", CONF_INT, "10000", 0,       \
      2147483647, "reset a gRPC stream still open this many milliseconds "    \
      "after it began; 0 = never")                                            \
    X(limits_file, "limits-file", CONF_STRING, "", 0, 0,                      \
      "named limits for RL.CHECK: an envoyproxy/ratelimit YAML file, or a "   \
      "directory of them; empty = none")                                      \
    X(dir, "dir", CONF_STRING, ".", 0, 0,                                     \
      "directory of the snapshot file")                                       \
    X(dbfilename, "dbfilename", CONF_STRING, "cellgate.snap", 0, 0,           \
      "snapshot file name inside dir")                                        \
    X(save_interval, "save-interval", CONF_INT, "0", 0, 2147483647,           \
      "seconds between background snapshots when keys changed; 0 = off")      \
    X(save, "save", CONF_SAVE, "3600 1 300 100 60 10000", 0, 0,               \
      "Redis's save rules \"<seconds> <changes> ...\": a background "         \
      "snapshot after <seconds> with at least <changes> writes; \"\" = none") \
    X(appendonly, "appendonly", CONF_BOOL, "no", 0, 0,                        \
      "journal every write to dir/appenddirname")                            \
    X(appendfsync, "appendfsync", CONF_ENUM, "everysec", 0, 0,                \
      "when the journal reaches the disk: always = before the reply, "        \
      "everysec = within about a second, no = when the OS writes it "         \
      "{always everysec no}")                                                 \
    X(appenddirname, "appenddirname", CONF_STRING, "appendonlydir", 0, 0,     \
      "folder of the journal's files inside dir")                             \
    X(appendfilename, "appendfilename", CONF_STRING, "appendonly.aof", 0, 0,  \
      "first part of the journal's file names")                               \
    X(auto_aof_rewrite_percentage, "auto-aof-rewrite-percentage", CONF_INT,   \
      "100", 0, 2147483647,                                                   \
      "rewrite the journal once it grew this much past its last rewrite; 0 = never") \
    X(auto_aof_rewrite_min_size, "auto-aof-rewrite-min-size", CONF_BYTES,     \
      "64mb", 0, 1125899906842624LL,                                          \
      "no automatic rewrite while the journal is smaller")                   \
    X(aof_load_truncated, "aof-load-truncated", CONF_BOOL, "yes", 0, 0,       \
      "a journal whose last record was cut short loads without it (a warning)") \
    X(replicaof, "replicaof", CONF_PRIMARY, "", 0, 0,                         \
      "<host> <port>: start as a replica of that primary; REPLICAOF "         \
      "keeps it current for CONFIG REWRITE; \"\" or no one = a primary")      \
    X(masterauth, "masterauth", CONF_BINARY, "", 0, 0,                        \
      "password a replica gives its primary (its requirepass)")               \
    X(replica_read_only, "replica-read-only", CONF_BOOL, "yes", 0, 0,         \
      "a replica refuses writes (-READONLY); PEEK and reads work")            \
    X(replica_priority, "replica-priority", CONF_INT, "100", 0, 2147483647,   \
      "Sentinel promotes the replica with the lowest; 0 = never")            \
    X(replica_announce_ip, "replica-announce-ip", CONF_STRING, "", 0, 0,      \
      "address a replica tells its primary; empty = the one it connects from") \
    X(replica_announce_port, "replica-announce-port", CONF_INT, "0", 0, 65535, \
      "port a replica tells its primary; 0 = the one it listens on")          \
    X(min_replicas_to_write, "min-replicas-to-write", CONF_INT, "0", 0,       \
      2147483647, "a primary refuses writes (-NOREPLICAS) with fewer good "   \
      "replicas than this; 0 = off")                                          \
    X(min_replicas_max_lag, "min-replicas-max-lag", CONF_INT, "10", 0,        \
      2147483647, "a replica is good while its last ACK is this many "       \
      "seconds old or newer")                                                 \
    X(repl_backlog_size, "repl-backlog-size", CONF_BYTES, "1mb", 16384,       \
      1125899906842624LL,                                                     \
      "stream kept for replicas that reconnect (partial resync)")             \
    X(repl_timeout, "repl-timeout", CONF_INT, "60", 1, 2147483647,            \
      "seconds of silence after which a replica drops its link")              \
    X(repl_ping_replica_period, "repl-ping-replica-period", CONF_INT, "10", 1, \
      2147483647, "seconds between the primary's PINGs in the stream")        \
    X(rdb_key_save_delay, "rdb-key-save-delay", CONF_INT, "0", 0, 2147483647, \
      "microseconds a snapshot writer sleeps per key, as Redis's (tests)")   \
    X(snapshot_load_errors, "snapshot-load-errors", CONF_ENUM, "refuse", 0, 0, \
      "a corrupt snapshot at start-up {refuse start-empty}")                  \
    X(databases, "databases", CONF_INT, "16", 1, 1024,                        \
      "number of databases (SELECT 0 to databases-1); set at start-up")      \
    X(maxmemory, "maxmemory", CONF_BYTES, "0", 0, 1125899906842624LL,         \
      "memory ceiling for keys in bytes; 0 = no limit")                       \
    X(maxmemory_policy, "maxmemory-policy", CONF_ENUM, "noeviction", 0, 0,    \
      "at the ceiling {noeviction volatile-ttl}")                             \
    X(busy_reply_threshold, "busy-reply-threshold", CONF_INT, "5000", 0,      \
      9223372036854775807LL, "ms a script runs before other clients get "     \
      "-BUSY; 0 = never")                                                     \
    X(lua_memory_limit, "lua-memory-limit", CONF_BYTES, "256mb", 1048576,     \
      1125899906842624LL, "most bytes the scripts' Lua heap may hold "        \
      "(used_memory_lua), apart from maxmemory")                              \
    X(log_max_entries, "log-max-entries", CONF_INT, "10000", 1, 1000000,      \
      "largest RL.LOG limit: bounds the entries one log key keeps")           \
    X(tiers_max_window, "tiers-max-window", CONF_INT, "3600", 1, 86400,       \
      "largest RL.TIERS window in seconds: bounds a key's buckets")           \
    X(output_pause_timeout, "client-output-pause-timeout", CONF_INT, "60", 0,  \
      2147483647, "close a client paused for output this many seconds; 0 = never") \
    X(hz, "hz", CONF_INT, "10", 1, 500,                                       \
      "background task frequency: key expiry, rehashing, idle timeouts")      \
    X(slowlog_log_slower_than, "slowlog-log-slower-than", CONF_INT, "10000",  \
      -1, 2147483647, "log commands slower than this many microseconds; -1 = off") \
    X(slowlog_max_len, "slowlog-max-len", CONF_INT, "128", 0, 1000000,        \
      "most entries SLOWLOG keeps")                                           \
    X(loglevel, "loglevel", CONF_ENUM, "notice", 0, 0,                        \
      "log verbosity {debug verbose notice warning}")                         \
    X(log_format, "log-format", CONF_ENUM, "plain", 0, 0,                     \
      "log line layout {plain json}")                                         \
    X(logfile, "logfile", CONF_STRING, "", 0, 0,                              \
      "log to this file (SIGHUP reopens it); empty = standard error")         \
    X(daemonize, "daemonize", CONF_BOOL, "no", 0, 0,                          \
      "run in the background; the starting process exits 0 once the server " \
      "is ready, 1 if it failed")                                             \
    X(pidfile, "pidfile", CONF_STRING, "", 0, 0,                              \
      "write the process id here, removed at exit; empty = none, or "         \
      "/var/run/cellgate.pid with daemonize yes")                             \
    X(supervised, "supervised", CONF_ENUM, "no", 0, 0,                        \
      "tell a supervisor when the server is ready and stopping {no systemd "  \
      "auto}; auto = systemd when NOTIFY_SOCKET is set")                      \
    X(enable_debug_command, "enable-debug-command", CONF_ENUM, "no", 0, 0,    \
      "who may send DEBUG {no yes local}; local = loopback and unix socket "  \
      "clients; set at start-up")                                             \
    X(enable_protected_configs, "enable-protected-configs", CONF_ENUM, "no",  \
      0, 0, "who may CONFIG SET dir and dbfilename {no yes local}; set at "   \
      "start-up")

/*
 * Redis's other names for options, beside the table: one row per alias,
 *
 *   A(field, "alias")
 *
 * the field naming the option of the table above (a typo does not
 * compile). These are the aliases Redis 7.0.15 gives the options cellgate
 * has (config.c's createXConfig(name, alias, ...)); an option has at most
 * one, as there. An alias is taken wherever its option's name is: the
 * file, "--alias value", CONFIG SET; CONFIG GET answers it under its own
 * name, and a pattern matching both names lists both, as Redis does.
 * CONFIG REWRITE writes the option's name on a line that used the alias.
 * --describe-config (so the man page) names it under its option.
 */
#define CONF_ALIASES(A)                                                       \
    A(replicaof, "slaveof")                                                   \
    A(replica_read_only, "slave-read-only")                                   \
    A(replica_priority, "slave-priority")                                     \
    A(replica_announce_ip, "slave-announce-ip")                               \
    A(replica_announce_port, "slave-announce-port")                           \
    A(min_replicas_to_write, "min-slaves-to-write")                           \
    A(min_replicas_max_lag, "min-slaves-max-lag")                             \
    A(repl_ping_replica_period, "repl-ping-slave-period")                     \
    A(busy_reply_threshold, "lua-time-limit")

/* The values of the CONF_ENUM options. The words are written once, in the
 * {...} list of the option's description; the parser keeps the place of
 * the word in that list, so every enum here lists its constants in the
 * order of those words (tests/unit/check_conf.c checks each against its
 * word). Code compares these, never the text. */
enum conf_cluster_mode {
    CLUSTER_MODE_NO, CLUSTER_MODE_EMULATED, CLUSTER_MODE_YES
};
enum conf_appendfsync {
    APPENDFSYNC_ALWAYS, APPENDFSYNC_EVERYSEC, APPENDFSYNC_NO
};
enum conf_snapshot_load_errors {
    SNAPSHOT_LOAD_REFUSE, SNAPSHOT_LOAD_START_EMPTY
};
enum conf_maxmemory_policy {
    MAXMEMORY_NOEVICTION, MAXMEMORY_VOLATILE_TTL
};
enum conf_loglevel {
    LOGLEVEL_DEBUG, LOGLEVEL_VERBOSE, LOGLEVEL_NOTICE, LOGLEVEL_WARNING
};
enum conf_log_format {
    LOG_FORMAT_PLAIN, LOG_FORMAT_JSON
};
enum conf_supervised {
    SUPERVISED_NO, SUPERVISED_SYSTEMD, SUPERVISED_AUTO
};
/* enable-debug-command and enable-protected-configs, as Redis shares one
 * enum among its "enable-*" options. */
enum conf_allowed {
    ALLOWED_NO, ALLOWED_YES, ALLOWED_LOCAL
};

#endif
