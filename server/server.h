/*
 * server.h - the process-wide state, one instance (`srv`, server.c).
 *
 * Like Redis's `server`, the process-wide state modules share lives here:
 * the configuration, the loop, the keyspace, the client list, the
 * counters and the flags read on every command. What one module alone
 * uses is static in its file.
 */
#ifndef CELLGATE_SERVER_H
#define CELLGATE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "conf/conf.h"
#include "protocol/resp.h"
#include "server/store.h"

#define CELLGATE_VERSION "0.1.0"
/* The Redis version we answer to clients that gate features on it. */
#define REDIS_COMPAT_VERSION "7.0.15"

struct conn;

struct server_stats {
    uint64_t connections_received;
    uint64_t rejected_connections;
    uint64_t commands_processed;
    uint64_t expired_keys_base;   /* keyspace_totals().expired, at RESETSTAT */
    uint64_t evicted_keys_base;   /* keyspace_totals().evicted, at RESETSTAT */
    uint64_t keyspace_hits;
    uint64_t keyspace_misses;
    uint64_t protocol_errors;
    uint64_t querybuf_limit_closes;
    uint64_t output_limit_closes;
    uint64_t idle_timeout_closes;
    uint64_t grpc_refused_streams;      /* grpc-max-connection-memory */
    uint64_t grpc_memory_limit_closes;  /* grpc-max-memory */
    uint64_t grpc_stream_timeouts;      /* grpc-stream-timeout */
    uint64_t grpc_streaming_opened;     /* streaming calls served */
    uint64_t grpc_streaming_ended;      /* of them, over (any way) */
    uint64_t grpc_streaming_refused;    /* grpc-max-streaming-calls */
    uint64_t grpc_streaming_idle_resets; /* grpc-stream-idle-timeout */
    uint64_t grpc_streaming_output_resets; /* client-output-hard-limit */
    uint64_t rls_forwarded;             /* descriptors asked of owners */
    uint64_t rls_forward_redirects;     /* -MOVED/-ASK followed */
    uint64_t rls_forward_failures;      /* given rls-failure-mode-deny's */
    uint64_t rls_forward_timeouts;      /* of them, past the timeout */
    uint64_t total_error_replies;
    uint64_t accept_errors;
    uint64_t accept_errors_suppressed;
    int64_t accept_error_logged_ms;
};

struct server {
    struct conf conf;
    const char *config_file;      /* absolute path, or NULL */
    char executable[4096];
    uv_loop_t *loop;
    struct store *store;          /* the database the running command
                                     uses (SELECT); keyspace_db.c sets it */
    int db;                       /* its number */
    struct store **dbs;           /* conf.databases, NULL until used */
    size_t ndbs;
    unsigned char seed[16];       /* every database's hash key */
    struct resp_limits limits;    /* derived from conf */
    struct resp_limits unauth_limits; /* before AUTH: Redis's small caps */
    /* clients */
    struct conn *clients;         /* all connected clients */
    size_t nclients;
    size_t grpc_clients;            /* gRPC connections (grpc.c) */
    uint64_t next_client_id;
    /* CLIENT PAUSE: until pause_end_ms (clock_loop_ms; 0 = not paused)
     * conn.c holds every command (pause_all) or those that write. */
    int64_t pause_end_ms;
    bool pause_all;
    /* DEBUG SET-ACTIVE-EXPIRE 0 stops the cron's expiry: keys then die
     * only when a command meets them (tests of lazy expiry). */
    bool active_expire_off;
    /* Read on every command or write: kept here, where a read is one load
     * as a global's would be (an accessor in the owner's file would be a
     * call per command). Each has one writer, named. */
    bool journal_on;              /* journal.c: a sink takes effect
                                     records (journal_attach()) */
    uint64_t journal_effects;     /* keyspace.c: grows with every
                                     journaled write */
    size_t watched_keys;          /* multi.c: keys WATCHed; 0 lets a
                                     writer skip the lookup */
    size_t monitors;              /* monitor.c: MONITOR clients; 0 lets
                                     the dispatcher skip feeding them */
    bool persist_refusing;        /* persist/: writes refused (-MISCONF) */
    bool repl_following;          /* repl/: a replica (REPLICAOF) */
    /* runtime */
    size_t startup_allocated;     /* mem_used() once set up, before keys */
    bool shutting_down;
    int64_t start_wall_us;
    uint64_t start_mono_ns;
    char run_id[41];
    int cluster_lock_fd;            /* nodes.conf's lock; a child closes it
                                       (0: none; fd 0 is never it) */
    char replid[41];              /* this primary's replication ID (INFO) */
    unsigned tcp_port;            /* actually bound (port 0 = none) */
    struct server_stats stats;
    /* SHUTDOWN: the command sets the request and wakes the loop; main.c
     * shuts down on the next iteration (commands do not call main). */
    enum shutdown_request { SHUTDOWN_NONE, SHUTDOWN_SAVE, SHUTDOWN_NOSAVE }
        shutdown_request;
    uv_async_t *shutdown_wakeup;  /* NULL until the loop runs */
};

extern struct server srv;      /* server.c */

/* INFO's and /metrics' connected_clients, as Redis counts it: every client
 * (gRPC connections too, which CLIENT LIST shows and maxclients counts)
 * but the replicas (repl_replica_count()). */
static inline size_t
server_connected_clients(size_t replicas)
{
    size_t all = srv.nclients + srv.grpc_clients;
    return all > replicas ? all - replicas : 0;
}

/* Is this node part of a cluster, by any of the ways (cluster-enabled,
 * cluster-mode yes or emulated)? SELECT and SWAPDB refuse then, INFO
 * says cluster. */
static inline bool
server_in_cluster(void)
{
    return srv.conf.cluster_enabled || srv.conf.cluster_mode != 0;
}

/* Derive srv.limits from srv.conf (after load and after CONFIG SET). */
void server_apply_limits(void);

/* Ask for a shutdown, as SHUTDOWN does: main.c carries it out on the next
 * loop iteration. */
void server_request_shutdown(bool save);

/* Random bytes from the kernel (getrandom), and 40 random hex digits (a
 * run ID, a replication ID). */
void server_random_bytes(unsigned char *buf, size_t len);
void server_random_id(char out[41]);

/* In a forked child that writes a file and exits (a snapshot, a journal
 * rewrite): close every socket it inherited. Held by the child, a client's
 * socket closed by the server (CLIENT KILL, a dropped replica) would stay
 * open with no FIN until the child ended, and after a kill -9 of the
 * server its listening ports would stay bound, so a restart could not
 * listen on them. */
void server_child_close_sockets(void);

#endif
