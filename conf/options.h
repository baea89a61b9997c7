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
 * rules, see conf.h), CONF_PRIMARY (replicaof's "<host> <port>") and
 * CONF_SPECIAL (a value with a syntax of its own, Redis's: bind's
 * addresses, client-output-buffer-limit's classes, a percentage... each
 * checked and written in one canonical form by its row of conf.c's
 * specials table; kept as that text).
 */
#ifndef CELLGATE_OPTIONS_H
#define CELLGATE_OPTIONS_H

#define CONF_OPTIONS(X)                                                       \
    X(bind, "bind", CONF_SPECIAL, "127.0.0.1", 0, 0,                          \
      "IPv4 or IPv6 addresses to listen on (at most 16); -addr = skipped "    \
      "when the host has no such address; * = every IPv4 one, ::* = every "  \
      "IPv6 one")                                                             \
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
      "host clients and the cluster bus are told for this node; empty = "   \
      "its cluster-node line's, or (cluster-enabled) what peers see")       \
    X(cluster_announce_port, "cluster-announce-port", CONF_INT, "0", 0, 65535, \
      "port clients are told for this node; 0 = its cluster-node line's "    \
      "(cluster-enabled: port)")                                            \
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
      "after it began; 0 = never (a streaming call open is not bounded so)")  \
    X(grpc_max_streaming_calls, "grpc-max-streaming-calls", CONF_INT, "1000", \
      0, 1000000, "most streaming gRPC calls (Health/Watch...) open at once " \
      "on grpc-port; the next is answered RESOURCE_EXHAUSTED")                \
    X(grpc_stream_idle_timeout, "grpc-stream-idle-timeout", CONF_INT,         \
      "300000", 0, 2147483647, "reset a streaming gRPC call whose client, "   \
      "its side open, sent no message for this many milliseconds; 0 = never") \
    X(rls_forward_timeout, "rls-forward-timeout", CONF_INT, "250", 1,        \
      60000, "cluster-mode yes: milliseconds a gRPC call waits for the "      \
      "nodes that own its descriptors' counters")                             \
    X(rls_failure_mode_deny, "rls-failure-mode-deny", CONF_BOOL, "no", 0, 0,  \
      "a descriptor whose owner does not answer in time is OVER_LIMIT (yes) " \
      "or OK (no), as Envoy's failure_mode_deny")                             \
    X(rls_shadow_mode, "rls-shadow-mode", CONF_BOOL, "no", 0, 0,              \
      "answer every named-limit request OK, each descriptor's status as it "  \
      "is (envoyproxy/ratelimit's SHADOW_MODE)")                              \
    X(rls_quota_mode, "rls-quota-mode", CONF_BOOL, "no", 0, 0,                \
      "every named limit in quota mode: a request is refused only when all "  \
      "its descriptors are over (envoyproxy/ratelimit's QUOTA_MODE)")         \
    X(rls_response_dynamic_metadata, "rls-response-dynamic-metadata",         \
      CONF_BOOL, "no", 0, 0,                                                  \
      "ShouldRateLimit's answer carries dynamic_metadata: the request and "   \
      "the metadata of the limits it passed (envoyproxy/ratelimit's "         \
      "RESPONSE_DYNAMIC_METADATA)")                                           \
    X(rlqs_max_buckets, "rlqs-max-buckets", CONF_INT, "1000", 1, 1000000,    \
      "most buckets one Rate Limit Quota Service stream may report; past "   \
      "it the stream ends RESOURCE_EXHAUSTED")                                \
    X(rlqs_unknown_bucket, "rlqs-unknown-bucket", CONF_ENUM, "allow", 0, 0,   \
      "a Rate Limit Quota Service bucket no named limit applies to "         \
      "{allow deny abandon}")                                                 \
    X(rlqs_strategy, "rlqs-strategy", CONF_ENUM, "token-bucket", 0, 0,      \
      "how a Rate Limit Quota Service share is sent: a token bucket (what "   \
      "Envoy's filter enforces) or requests per the limit's unit "            \
      "{token-bucket requests-per-time-unit}")                                \
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
      "{everysec always no}")                                                 \
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
    X(rdb_unsupported_keys, "rdb-unsupported-keys", CONF_ENUM, "refuse", 0,   \
      0, "a Redis RDB file's stream and module keys, which cellgate cannot "  \
      "serve: refuse the file, or skip them with a count in the log "        \
      "{refuse skip}")                                                        \
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
    X(top_denied_keys, "top-denied-keys", CONF_INT, "128", 0, 65536,         \
      "keys per database whose denials RL.TOPDENIED counts; 0 = off")         \
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
      "auto upstart}; auto = systemd when NOTIFY_SOCKET is set; upstart "     \
      "(Redis's SIGSTOP handshake) is accepted and does nothing")             \
    X(enable_debug_command, "enable-debug-command", CONF_ENUM, "no", 0, 0,    \
      "who may send DEBUG {no yes local}; local = loopback and unix socket "  \
      "clients; set at start-up")                                             \
    X(enable_protected_configs, "enable-protected-configs", CONF_ENUM, "no",  \
      0, 0, "who may CONFIG SET dir and dbfilename {no yes local}; set at "   \
      "start-up")                                                             \
    /* Redis 7.0.15's other options (config.c's standardConfig table), so a  \
     * redis.conf starts cellgate unchanged: docs/compat.md says which are  \
     * honoured and what the others do here. */                            \
    X(rdbchecksum, "rdbchecksum", CONF_BOOL, "yes", 0, 0,                     \
      "Redis's CRC64 at the end of an RDB file; cellgate's snapshot "         \
      "always carries its own checksum")                                      \
    X(always_show_logo, "always-show-logo", CONF_BOOL, "no", 0, 0,            \
      "Redis's ASCII logo at start; cellgate prints none")                    \
    X(protected_mode, "protected-mode", CONF_BOOL, "yes", 0, 0,               \
      "Redis refuses remote clients without a password; cellgate warns "      \
      "at start instead when it listens beyond this host without "            \
      "requirepass")                                                          \
    X(rdbcompression, "rdbcompression", CONF_BOOL, "yes", 0, 0,               \
      "Redis's LZF compression of RDB strings; cellgate's snapshot has "      \
      "a format of its own")                                                  \
    X(rdb_del_sync_files, "rdb-del-sync-files", CONF_BOOL, "no", 0, 0,        \
      "Redis deletes the RDB written for replication; cellgate's full "       \
      "sync writes no file")                                                  \
    X(activerehashing, "activerehashing", CONF_BOOL, "yes", 0, 0,             \
      "Redis's incremental rehash in cron; cellgate's tables always "         \
      "rehash incrementally")                                                 \
    X(stop_writes_on_bgsave_error, "stop-writes-on-bgsave-error", CONF_BOOL,  \
      "yes", 0, 0,                                                            \
      "Redis refuses writes after a failed background save; cellgate "        \
      "logs the failure and keeps serving")                                   \
    X(set_proc_title, "set-proc-title", CONF_BOOL, "yes", 0, 0,               \
      "Redis rewrites its process title; cellgate leaves its own")            \
    X(dynamic_hz, "dynamic-hz", CONF_BOOL, "yes", 0, 0,                       \
      "Redis raises hz with many clients; cellgate keeps hz as set")          \
    X(lazyfree_lazy_eviction, "lazyfree-lazy-eviction", CONF_BOOL,            \
      "no", 0, 0,                                                             \
      "Redis frees evicted values in a thread; cellgate frees them at "       \
      "once (its values are small)")                                          \
    X(lazyfree_lazy_expire, "lazyfree-lazy-expire", CONF_BOOL, "no", 0, 0,    \
      "Redis frees expired values in a thread; cellgate frees them at "       \
      "once")                                                                 \
    X(lazyfree_lazy_server_del, "lazyfree-lazy-server-del", CONF_BOOL,        \
      "no", 0, 0,                                                             \
      "Redis frees overwritten values in a thread; cellgate frees them "      \
      "at once")                                                              \
    X(lazyfree_lazy_user_del, "lazyfree-lazy-user-del", CONF_BOOL,            \
      "no", 0, 0,                                                             \
      "DEL as UNLINK in Redis; cellgate frees at once either way")            \
    X(lazyfree_lazy_user_flush, "lazyfree-lazy-user-flush", CONF_BOOL,        \
      "no", 0, 0,                                                             \
      "FLUSHALL/FLUSHDB ASYNC by default in Redis; cellgate flushes at "      \
      "once")                                                                 \
    X(repl_disable_tcp_nodelay, "repl-disable-tcp-nodelay", CONF_BOOL,        \
      "no", 0, 0,                                                             \
      "Redis may batch the replication stream (Nagle); cellgate always "      \
      "sends with TCP_NODELAY")                                               \
    X(repl_diskless_sync, "repl-diskless-sync", CONF_BOOL, "yes", 0, 0,       \
      "Redis streams the full-sync RDB without a file; cellgate's full "      \
      "sync always does")                                                     \
    X(aof_rewrite_incremental_fsync, "aof-rewrite-incremental-fsync",         \
      CONF_BOOL, "yes", 0, 0,                                                 \
      "Redis fsyncs a rewritten AOF every 4 MB; cellgate fsyncs the "         \
      "rewritten journal once, at its end")                                   \
    X(no_appendfsync_on_rewrite, "no-appendfsync-on-rewrite", CONF_BOOL,      \
      "no", 0, 0,                                                             \
      "Redis skips fsync while a rewrite runs; cellgate keeps "               \
      "appendfsync's policy throughout")                                      \
    X(cluster_require_full_coverage, "cluster-require-full-coverage",         \
      CONF_BOOL, "yes", 0, 0,                                                 \
      "cluster-enabled: a node refuses keys (CLUSTERDOWN) while some slot "  \
      "has no live owner")                                                    \
    X(rdb_save_incremental_fsync, "rdb-save-incremental-fsync", CONF_BOOL,    \
      "yes", 0, 0,                                                            \
      "Redis fsyncs an RDB every 4 MB; cellgate fsyncs a snapshot once, "     \
      "at its end")                                                           \
    X(aof_use_rdb_preamble, "aof-use-rdb-preamble", CONF_BOOL, "yes", 0, 0,   \
      "Redis starts a rewritten AOF with an RDB image; cellgate's "           \
      "journal has a base file of its own format")                            \
    X(aof_timestamp_enabled, "aof-timestamp-enabled", CONF_BOOL, "no", 0, 0,  \
      "Redis's #TS annotations in the AOF; cellgate writes none")             \
    X(cluster_replica_no_failover, "cluster-replica-no-failover", CONF_BOOL,  \
      "no", 0, 0,                                                             \
      "cluster-enabled: this replica never starts an election for its "      \
      "failed primary")                                                       \
    X(replica_lazy_flush, "replica-lazy-flush", CONF_BOOL, "no", 0, 0,        \
      "Redis flushes a replica's old data in a thread before a full "         \
      "sync; cellgate flushes at once")                                       \
    X(replica_serve_stale_data, "replica-serve-stale-data", CONF_BOOL,        \
      "yes", 0, 0,                                                            \
      "cellgate's replica always answers reads while its link is down")       \
    X(replica_ignore_maxmemory, "replica-ignore-maxmemory", CONF_BOOL,        \
      "yes", 0, 0,                                                            \
      "a cellgate replica applies its primary's effects whatever its "        \
      "maxmemory")                                                            \
    X(jemalloc_bg_thread, "jemalloc-bg-thread", CONF_BOOL, "yes", 0, 0,       \
      "cellgate does not use jemalloc")                                       \
    X(activedefrag, "activedefrag", CONF_BOOL, "no", 0, 0,                    \
      "cellgate has no active defragmentation")                               \
    X(syslog_enabled, "syslog-enabled", CONF_BOOL, "no", 0, 0,                \
      "cellgate logs to logfile or standard error (journald under "           \
      "systemd), not to syslog")                                              \
    X(cluster_enabled, "cluster-enabled", CONF_BOOL, "no", 0, 0,              \
      "Redis Cluster: nodes meet, gossip on the cluster bus and keep "      \
      "their view in cluster-config-file; set at start-up, not with "       \
      "cluster-mode")                                                        \
    X(cluster_allow_reads_when_down, "cluster-allow-reads-when-down",         \
      CONF_BOOL, "no", 0, 0,                                                  \
      "cluster-enabled: reads are served while the cluster is down")         \
    X(cluster_allow_pubsubshard_when_down, "cluster-allow-pubsubshard-when-down",\
      CONF_BOOL, "yes", 0, 0,                                                 \
      "cluster-enabled: shard channels are served while the cluster is "     \
      "down")                                                                 \
    X(crash_log_enabled, "crash-log-enabled", CONF_BOOL, "yes", 0, 0,         \
      "Redis's crash report with a stack trace; cellgate's sanitizer "        \
      "builds report instead")                                                \
    X(crash_memcheck_enabled, "crash-memcheck-enabled", CONF_BOOL,            \
      "yes", 0, 0,                                                            \
      "Redis's memory test after a crash; cellgate runs none")                \
    X(use_exit_on_panic, "use-exit-on-panic", CONF_BOOL, "no", 0, 0,          \
      "Redis's test hook: exit() instead of abort() on a panic")              \
    X(disable_thp, "disable-thp", CONF_BOOL, "yes", 0, 0,                     \
      "Redis turns transparent huge pages off for itself; cellgate "          \
      "leaves the system's setting")                                          \
    X(cluster_allow_replica_migration, "cluster-allow-replica-migration",     \
      CONF_BOOL, "yes", 0, 0,                                                 \
      "cluster-enabled: replicas may move to an orphaned primary, and a "    \
      "primary that lost its last slot follows its new owner")               \
    X(replica_announced, "replica-announced", CONF_BOOL, "yes", 0, 0,         \
      "Sentinel's hint; cellgate's replicas are always listed")               \
    X(latency_tracking, "latency-tracking", CONF_BOOL, "yes", 0, 0,           \
      "Redis's per-command latency percentiles in INFO; cellgate's are "      \
      "in /metrics")                                                          \
    X(aof_disable_auto_gc, "aof-disable-auto-gc", CONF_BOOL, "no", 0, 0,      \
      "cellgate removes the journal's old files after every rewrite")         \
    X(replica_ignore_disk_write_errors, "replica-ignore-disk-write-errors",   \
      CONF_BOOL, "no", 0, 0,                                                  \
      "a cellgate replica keeps replicating when its journal cannot be "      \
      "written, and logs it")                                                 \
    X(aclfile, "aclfile", CONF_STRING, "", 0, 0,                              \
      "cellgate has no ACL users beyond default (requirepass)")               \
    X(masteruser, "masteruser", CONF_STRING, "", 0, 0,                        \
      "a replica sends AUTH masteruser masterauth to its primary when set "   \
      "(a Redis primary's ACL user)")                                         \
    X(cluster_config_file, "cluster-config-file", CONF_STRING,                \
      "nodes.conf", 0, 0,                                                     \
      "cluster-enabled: this node's view of the cluster (Redis's "           \
      "nodes.conf), in dir unless absolute; set at start-up")                \
    X(cluster_announce_hostname, "cluster-announce-hostname", CONF_SPECIAL,    \
      "", 0, 0,                                                               \
      "cluster-enabled: the hostname this node announces on the bus "        \
      "(CLUSTER SLOTS/SHARDS/NODES); empty = none")                          \
    X(syslog_ident, "syslog-ident", CONF_STRING, "redis", 0, 0,               \
      "no syslog (see syslog-enabled)")                                       \
    X(server_cpulist, "server_cpulist", CONF_STRING, "", 0, 0,                \
      "Redis pins its threads to CPUs; cellgate leaves placement to the "     \
      "system (taskset, systemd CPUAffinity)")                                \
    X(bio_cpulist, "bio_cpulist", CONF_STRING, "", 0, 0,                      \
      "see server_cpulist")                                                   \
    X(aof_rewrite_cpulist, "aof_rewrite_cpulist", CONF_STRING, "", 0, 0,      \
      "see server_cpulist")                                                   \
    X(bgsave_cpulist, "bgsave_cpulist", CONF_STRING, "", 0, 0,                \
      "see server_cpulist")                                                   \
    X(ignore_warnings, "ignore-warnings", CONF_STRING, "", 0, 0,              \
      "Redis's start-up warnings to silence (ARM64-COW-BUG); cellgate "       \
      "has none of them")                                                     \
    X(proc_title_template, "proc-title-template", CONF_SPECIAL,                \
      "{title} {listen-addr} {server-mode}", 0, 0,                            \
      "see set-proc-title")                                                   \
    X(bind_source_addr, "bind-source-addr", CONF_STRING, "", 0, 0,            \
      "a cellgate replica connects from the address the system chooses")      \
    X(syslog_facility, "syslog-facility", CONF_ENUM, "local0", 0, 0,          \
      "no syslog (see syslog-enabled) {user local0 local1 local2 local3 "     \
      "local4 local5 local6 local7}")                                         \
    X(repl_diskless_load, "repl-diskless-load", CONF_ENUM, "disabled", 0, 0,  \
      "a cellgate replica loads a full sync as it streams in, into an "       \
      "empty keyspace {disabled on-empty-db swapdb}")                         \
    X(oom_score_adj, "oom-score-adj", CONF_ENUM, "no", 0, 0,                  \
      "Redis writes its oom_score_adj; cellgate leaves it to the "            \
      "service manager (OOMScoreAdjust=) {no yes relative absolute}")         \
    X(acl_pubsub_default, "acl-pubsub-default", CONF_ENUM,                    \
      "resetchannels", 0, 0,                                                  \
      "no ACL users (see aclfile) {allchannels resetchannels}")               \
    X(sanitize_dump_payload, "sanitize-dump-payload", CONF_ENUM, "no", 0, 0,  \
      "RESTORE's payload check; cellgate always checks deeply, as yes {no "   \
      "yes clients}")                                                         \
    X(enable_module_command, "enable-module-command", CONF_ENUM, "no", 0, 0,  \
      "cellgate loads no modules {no yes local}")                             \
    X(cluster_preferred_endpoint_type, "cluster-preferred-endpoint-type",     \
      CONF_ENUM, "ip", 0, 0,                                                  \
      "cluster-enabled: what MOVED, ASK and CLUSTER SLOTS give as a "        \
      "node's endpoint {ip hostname unknown-endpoint}")                      \
    X(propagation_error_behavior, "propagation-error-behavior", CONF_ENUM,    \
      "ignore", 0, 0,                                                         \
      "a cellgate replica logs an effect it cannot apply {ignore panic "      \
      "panic-on-replicas}")                                                   \
    X(shutdown_on_sigint, "shutdown-on-sigint", CONF_SPECIAL,                 \
      "default", 0, 0,                                                        \
      "cellgate saves on SIGINT when save rules or the journal are set, "     \
      "as Redis's default")                                                   \
    X(shutdown_on_sigterm, "shutdown-on-sigterm", CONF_SPECIAL,               \
      "default", 0, 0,                                                        \
      "cellgate saves on SIGTERM when save rules or the journal are "         \
      "set, as Redis's default")                                              \
    X(cluster_replica_validity_factor, "cluster-replica-validity-factor",     \
      CONF_INT, "10", 0, 2147483647,                                          \
      "cluster-enabled: a replica whose link was down longer than this "     \
      "many node timeouts does not fail over; 0 = always may")               \
    X(list_max_listpack_size, "list-max-listpack-size", CONF_INT,             \
      "-2", -2147483648, 2147483647,                                          \
      "Redis's quicklist node size; cellgate's list nodes have a size "       \
      "of their own")                                                         \
    X(tcp_keepalive, "tcp-keepalive", CONF_INT, "300", 0, 2147483647,         \
      "a client's TCP connection idle this many seconds gets keepalive "      \
      "probes, every third of it after, and three unanswered close it; 0 = "  \
      "none; new connections follow a change")                               \
    X(cluster_migration_barrier, "cluster-migration-barrier", CONF_INT,       \
      "1", 0, 2147483647,                                                     \
      "cluster-enabled: replicas a primary keeps before one may migrate "    \
      "to an orphaned primary")                                              \
    X(active_defrag_cycle_min, "active-defrag-cycle-min", CONF_INT,           \
      "1", 1, 99,                                                             \
      "see activedefrag")                                                     \
    X(active_defrag_cycle_max, "active-defrag-cycle-max", CONF_INT,           \
      "25", 1, 99,                                                            \
      "see activedefrag")                                                     \
    X(active_defrag_threshold_lower, "active-defrag-threshold-lower",         \
      CONF_INT, "10", 0, 1000,                                                \
      "see activedefrag")                                                     \
    X(active_defrag_threshold_upper, "active-defrag-threshold-upper",         \
      CONF_INT, "100", 0, 1000,                                               \
      "see activedefrag")                                                     \
    X(lfu_log_factor, "lfu-log-factor", CONF_INT, "10", 0, 2147483647,        \
      "cellgate's maxmemory policies are noeviction and volatile-ttl: "       \
      "no LFU counters")                                                      \
    X(lfu_decay_time, "lfu-decay-time", CONF_INT, "1", 0, 2147483647,         \
      "see lfu-log-factor")                                                   \
    X(repl_diskless_sync_delay, "repl-diskless-sync-delay", CONF_INT,         \
      "5", 0, 2147483647,                                                     \
      "cellgate starts a full sync at once")                                  \
    X(maxmemory_samples, "maxmemory-samples", CONF_INT, "5", 1, 2147483647,   \
      "cellgate's volatile-ttl eviction is exact, not sampled")               \
    X(maxmemory_eviction_tenacity, "maxmemory-eviction-tenacity", CONF_INT,   \
      "10", 0, 100,                                                           \
      "cellgate evicts until under maxmemory in the command that needs "      \
      "the room")                                                             \
    X(cluster_port, "cluster-port", CONF_INT, "0", 0, 65535,                  \
      "cluster-enabled: the cluster bus's port; 0 = port + 10000; set at "   \
      "start-up")                                                             \
    X(cluster_announce_bus_port, "cluster-announce-bus-port", CONF_INT,       \
      "0", 0, 65535,                                                          \
      "cluster-enabled: the bus port this node announces; 0 = its own")     \
    X(cluster_announce_tls_port, "cluster-announce-tls-port", CONF_INT,       \
      "0", 0, 65535,                                                          \
      "cellgate speaks no TLS")                                               \
    X(list_compress_depth, "list-compress-depth", CONF_INT,                   \
      "0", 0, 2147483647,                                                     \
      "cellgate does not compress list nodes")                                \
    X(key_load_delay, "key-load-delay", CONF_INT,                             \
      "0", -2147483648, 2147483647,                                           \
      "Redis's test hook: sleep per key loaded")                              \
    X(active_expire_effort, "active-expire-effort", CONF_INT, "1", 1, 10,     \
      "cellgate's expiry cycle has a fixed effort")                           \
    X(watchdog_period, "watchdog-period", CONF_INT, "0", 0, 2147483647,       \
      "Redis's software watchdog (a debugging aid); cellgate has none")       \
    X(shutdown_timeout, "shutdown-timeout", CONF_INT, "10", 0, 2147483647,    \
      "cellgate's shutdown does not wait for lagging replicas")               \
    X(repl_diskless_sync_max_replicas, "repl-diskless-sync-max-replicas",     \
      CONF_INT, "0", 0, 2147483647,                                           \
      "see repl-diskless-sync-delay")                                         \
    X(socket_mark_id, "socket-mark-id", CONF_INT, "0", 0, 4294967295LL,       \
      "cellgate sets no SO_MARK on its sockets")                              \
    X(active_defrag_max_scan_fields, "active-defrag-max-scan-fields",         \
      CONF_INT, "1000", 1, 9223372036854775807LL,                             \
      "see activedefrag")                                                     \
    X(acllog_max_len, "acllog-max-len", CONF_INT,                             \
      "128", 0, 9223372036854775807LL,                                        \
      "no ACL log (see aclfile)")                                             \
    X(cluster_node_timeout, "cluster-node-timeout", CONF_INT,                 \
      "15000", 0, 9223372036854775807LL,                                      \
      "cluster-enabled: ms a node may not answer before it is suspected "    \
      "failing (PFAIL)")                                                      \
    X(latency_monitor_threshold, "latency-monitor-threshold", CONF_INT,       \
      "0", 0, 9223372036854775807LL,                                          \
      "Redis's LATENCY monitor; cellgate has SLOWLOG and /metrics")           \
    X(stream_node_max_entries, "stream-node-max-entries", CONF_INT,           \
      "100", 0, 9223372036854775807LL,                                        \
      "cellgate has no streams")                                              \
    X(cluster_link_sendbuf_limit, "cluster-link-sendbuf-limit", CONF_BYTES,   \
      "0", 0, 9223372036854775807LL,                                          \
      "cluster-enabled: a bus link whose unsent bytes pass this is closed; " \
      "0 = no limit")                                                         \
    X(hash_max_listpack_entries, "hash-max-listpack-entries", CONF_INT,       \
      "512", 0, 9223372036854775807LL,                                        \
      "Redis's compact hash bound; cellgate's compact hashes keep "           \
      "Redis's default bound")                                                \
    X(set_max_intset_entries, "set-max-intset-entries", CONF_INT,             \
      "512", 0, 9223372036854775807LL,                                        \
      "Redis's all-integer set bound")                                        \
    X(zset_max_listpack_entries, "zset-max-listpack-entries", CONF_INT,       \
      "128", 0, 9223372036854775807LL,                                        \
      "Redis's compact sorted-set bound; cellgate's keep Redis's "            \
      "default bound")                                                        \
    X(active_defrag_ignore_bytes, "active-defrag-ignore-bytes", CONF_BYTES,   \
      "104857600", 1, 9223372036854775807LL,                                  \
      "see activedefrag")                                                     \
    X(hash_max_listpack_value, "hash-max-listpack-value", CONF_BYTES,         \
      "64", 0, 9223372036854775807LL,                                         \
      "see hash-max-listpack-entries")                                        \
    X(stream_node_max_bytes, "stream-node-max-bytes", CONF_BYTES,             \
      "4096", 0, 9223372036854775807LL,                                       \
      "cellgate has no streams")                                              \
    X(zset_max_listpack_value, "zset-max-listpack-value", CONF_BYTES,         \
      "64", 0, 9223372036854775807LL,                                         \
      "see zset-max-listpack-entries")                                        \
    X(hll_sparse_max_bytes, "hll-sparse-max-bytes", CONF_BYTES,               \
      "3000", 0, 9223372036854775807LL,                                       \
      "cellgate has no HyperLogLogs")                                         \
    X(tracking_table_max_keys, "tracking-table-max-keys", CONF_INT,           \
      "1000000", 0, 9223372036854775807LL,                                    \
      "cellgate has no client-side caching (CLIENT TRACKING)")                \
    X(maxmemory_clients, "maxmemory-clients", CONF_SPECIAL, "0", 0, 0,        \
      "Redis evicts clients past this memory (bytes or a percentage of "      \
      "maxmemory); cellgate bounds each client by "                           \
      "client-output-hard-limit and client-query-buffer-limit")               \
    X(repl_backlog_ttl, "repl-backlog-ttl", CONF_INT,                         \
      "3600", 0, 9223372036854775807LL,                                       \
      "cellgate keeps its backlog while it runs")                             \
    X(loading_process_events_interval_bytes, "loading-process-events-interval-bytes",\
      CONF_INT, "2097152", 1024, 2147483647,                                  \
      "Redis's test hook: serve events while loading every so many "          \
      "bytes")                                                                \
    X(tls_port, "tls-port", CONF_INT, "0", 0, 65535,                          \
      "cellgate speaks no TLS: put a TLS proxy (stunnel, Envoy) in "          \
      "front")                                                                \
    X(tls_session_cache_size, "tls-session-cache-size", CONF_INT,             \
      "20480", 0, 2147483647,                                                 \
      "no TLS (see tls-port)")                                                \
    X(tls_session_cache_timeout, "tls-session-cache-timeout", CONF_INT,       \
      "300", 0, 2147483647,                                                   \
      "no TLS (see tls-port)")                                                \
    X(tls_cluster, "tls-cluster", CONF_BOOL, "no", 0, 0,                      \
      "no TLS (see tls-port)")                                                \
    X(tls_replication, "tls-replication", CONF_BOOL, "no", 0, 0,              \
      "no TLS (see tls-port)")                                                \
    X(tls_auth_clients, "tls-auth-clients", CONF_ENUM, "yes", 0, 0,           \
      "no TLS (see tls-port) {no yes optional}")                              \
    X(tls_prefer_server_ciphers, "tls-prefer-server-ciphers", CONF_BOOL,      \
      "no", 0, 0,                                                             \
      "no TLS (see tls-port)")                                                \
    X(tls_session_caching, "tls-session-caching", CONF_BOOL, "yes", 0, 0,     \
      "no TLS (see tls-port)")                                                \
    X(tls_cert_file, "tls-cert-file", CONF_STRING, "", 0, 0,                  \
      "no TLS (see tls-port)")                                                \
    X(tls_key_file, "tls-key-file", CONF_STRING, "", 0, 0,                    \
      "no TLS (see tls-port)")                                                \
    X(tls_key_file_pass, "tls-key-file-pass", CONF_STRING, "", 0, 0,          \
      "no TLS (see tls-port)")                                                \
    X(tls_client_cert_file, "tls-client-cert-file", CONF_STRING, "", 0, 0,    \
      "no TLS (see tls-port)")                                                \
    X(tls_client_key_file, "tls-client-key-file", CONF_STRING, "", 0, 0,      \
      "no TLS (see tls-port)")                                                \
    X(tls_client_key_file_pass, "tls-client-key-file-pass", CONF_STRING,      \
      "", 0, 0,                                                               \
      "no TLS (see tls-port)")                                                \
    X(tls_dh_params_file, "tls-dh-params-file", CONF_STRING, "", 0, 0,        \
      "no TLS (see tls-port)")                                                \
    X(tls_ca_cert_file, "tls-ca-cert-file", CONF_STRING, "", 0, 0,            \
      "no TLS (see tls-port)")                                                \
    X(tls_ca_cert_dir, "tls-ca-cert-dir", CONF_STRING, "", 0, 0,              \
      "no TLS (see tls-port)")                                                \
    X(tls_protocols, "tls-protocols", CONF_STRING, "", 0, 0,                  \
      "no TLS (see tls-port)")                                                \
    X(tls_ciphers, "tls-ciphers", CONF_STRING, "", 0, 0,                      \
      "no TLS (see tls-port)")                                                \
    X(tls_ciphersuites, "tls-ciphersuites", CONF_STRING, "", 0, 0,            \
      "no TLS (see tls-port)")                                                \
    X(client_output_buffer_limit, "client-output-buffer-limit", CONF_SPECIAL, \
      "normal 0 0 0 slave 268435456 67108864 60 "                             \
      "pubsub 33554432 8388608 60", 0, 0,                                     \
      "Redis's per-class output limits \"<class> <hard> <soft> "              \
      "<seconds>\" (normal, replica, pubsub); cellgate bounds every "         \
      "client by client-output-pause-limit and client-output-hard-limit")     \
    X(oom_score_adj_values, "oom-score-adj-values", CONF_SPECIAL,             \
      "0 200 800", 0, 0,                                                      \
      "see oom-score-adj")                                                    \
    X(notify_keyspace_events, "notify-keyspace-events", CONF_SPECIAL,         \
      "", 0, 0,                                                               \
      "keyspace notification classes, Redis's letters (Ag$lshzxeKEtmdn)")     \
    X(latency_tracking_info_percentiles, "latency-tracking-info-percentiles", \
      CONF_SPECIAL, "50 99 99.9", 0, 0,                                       \
      "see latency-tracking")

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
    A(busy_reply_threshold, "lua-time-limit")                                 \
    A(cluster_replica_no_failover, "cluster-slave-no-failover")               \
    A(replica_lazy_flush, "slave-lazy-flush")                                 \
    A(replica_serve_stale_data, "slave-serve-stale-data")                     \
    A(replica_ignore_maxmemory, "slave-ignore-maxmemory")                     \
    A(cluster_replica_validity_factor, "cluster-slave-validity-factor")       \
    A(list_max_listpack_size, "list-max-ziplist-size")                        \
    A(hash_max_listpack_entries, "hash-max-ziplist-entries")                  \
    A(zset_max_listpack_entries, "zset-max-ziplist-entries")                  \
    A(hash_max_listpack_value, "hash-max-ziplist-value")                      \
    A(zset_max_listpack_value, "zset-max-ziplist-value")

/* The values of the CONF_ENUM options. The words are written once, in the
 * {...} list of the option's description; the parser keeps the place of
 * the word in that list, so every enum here lists its constants in the
 * order of those words (tests/unit/check_conf.c checks each against its
 * word). Code compares these, never the text. */
enum conf_cluster_mode {
    CLUSTER_MODE_NO, CLUSTER_MODE_EMULATED, CLUSTER_MODE_YES
};
enum conf_endpoint_type {
    ENDPOINT_TYPE_IP, ENDPOINT_TYPE_HOSTNAME, ENDPOINT_TYPE_UNKNOWN
};
enum conf_appendfsync {
    APPENDFSYNC_EVERYSEC, APPENDFSYNC_ALWAYS, APPENDFSYNC_NO
};
enum conf_snapshot_load_errors {
    SNAPSHOT_LOAD_REFUSE, SNAPSHOT_LOAD_START_EMPTY
};
enum conf_rdb_unsupported_keys {
    RDB_UNSUPPORTED_REFUSE, RDB_UNSUPPORTED_SKIP
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
    SUPERVISED_NO, SUPERVISED_SYSTEMD, SUPERVISED_AUTO, SUPERVISED_UPSTART
};
enum conf_rlqs_unknown_bucket {
    RLQS_UNKNOWN_ALLOW, RLQS_UNKNOWN_DENY, RLQS_UNKNOWN_ABANDON
};
enum conf_rlqs_strategy {
    RLQS_STRATEGY_TOKEN_BUCKET, RLQS_STRATEGY_PER_UNIT
};
/* enable-debug-command and enable-protected-configs, as Redis shares one
 * enum among its "enable-*" options. */
enum conf_allowed {
    ALLOWED_NO, ALLOWED_YES, ALLOWED_LOCAL
};

#endif
