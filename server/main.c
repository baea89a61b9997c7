/*
 * main.c - command line, configuration, module setup in order, the event
 * loop, teardown in reverse.
 *
 *   cellgate [/path/to/cellgate.conf] [--option value ...]
 *
 * One libuv loop serves everything: TCP and unix-socket listeners, client
 * connections (conn.c), the cron timer (key expiry through the store's
 * timer wheel, incremental rehashing, idle clients), SIGINT/SIGTERM and
 * SIGHUP.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "lib/dict.h"
#include "lib/mem.h"
#include "lib/time.h"
#include "server/child.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/conn.h"
#include "server/keyspace.h"
#include "server/lifecycle.h"
#include "server/listen.h"
#include "server/log.h"
#include "server/envoy/grpc.h"
#include "server/metrics.h"
#include "server/notify.h"
#include "server/envoy/named_limits.h"
#include "server/busy.h"
#include "server/script/script.h"
#include "server/server.h"
#include "server/slowlog.h"
#include "server/persist/persist.h"
#include "server/pubsub.h"
#include "server/rdb/migrate.h"
#include "server/repl/replication.h"
#include "server/handlers/primary_client.h"
#include "server/snapshot.h"
#include "server/topdenied.h"

/* Keys evicted per cron tick while over maxmemory (volatile-ttl). */
#define EVICT_BATCH 1024
#define EXPIRE_BATCH 256

static uv_pipe_t unix_listener;
static bool have_unix_listener;
static uv_timer_t cron_timer;
static uv_idle_t rehash_idle;
static uv_signal_t sigint_handle;
static uv_signal_t sigterm_handle;
static uv_signal_t sighup_handle;
static uv_async_t shutdown_async;   /* SHUTDOWN asks through it (server.h) */
static size_t keys_at_last_trim;

static void
usage(FILE *out)
{
    fprintf(out,
            "Usage: cellgate [/path/to/cellgate.conf] [--option value ...]\n"
            "       cellgate --test-config [config] [--option value ...]\n"
            "       cellgate --describe-config\n"
            "       cellgate --ping host:port   (health check: exit 0 on PONG)\n"
            "       cellgate --ping-pid PID     (health check of the daemon PID, on\n"
            "                                    the port its own arguments give)\n"
            "       cellgate -v | --version\n"
            "       cellgate -h | --help\n"
            "\n"
            "A Redis-protocol rate-limiting daemon. Options are read from\n"
            "the config file, then from the command line (last wins), e.g.\n"
            "  cellgate --port 7777 --bind 127.0.0.1\n"
            "  cellgate conf/cellgate.conf --maxclients 5000\n"
            "--describe-config lists every option with its default.\n");
}

/* ---- listeners -------------------------------------------------------- */

static void
on_tcp_connection(uv_stream_t *server, int status)
{
    conn_on_connection(server, status, false);
}

static void
on_unix_connection(uv_stream_t *server, int status)
{
    conn_on_connection(server, status, true);
}

static int
listen_unix(void)
{
    const char *path = srv.conf.unixsocket;
    int rc;
    if (path[0] == '\0') {
        return 0;
    }
    unlink(path); /* a stale socket from a previous run */
    uv_pipe_init(srv.loop, &unix_listener, 0);
    rc = uv_pipe_bind(&unix_listener, path);
    if (rc == 0 && srv.conf.unixsocketperm != 0 &&
        chmod(path, (mode_t)srv.conf.unixsocketperm) != 0) {
        rc = uv_translate_sys_error(errno);
    }
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *)&unix_listener,
                       (int)srv.conf.tcp_backlog, on_unix_connection);
    }
    if (rc != 0) {
        log_warning("Opening unix socket %s: %s", path, uv_strerror(rc));
        uv_close((uv_handle_t *)&unix_listener, NULL);
        return -1;
    }
    have_unix_listener = true;
    uv_os_fd_t fd;
    if (uv_fileno((const uv_handle_t *)&unix_listener, &fd) == 0) {
        busy_unix_listener(fd);
    }
    return 0;
}

/* ---- cron ------------------------------------------------------------- */

/* Collect dead keys for at most a quarter of a cron period, as Redis's
 * active expire cycle does, so a mass expiry never stalls the loop. */
static void
expire_keys(void)
{
    mono_ns deadline = clock_mono_now() +
                       250000000LL / (mono_ns)srv.conf.hz;
    wall_ns now = clock_wall_now();
    for (size_t i = 0; i < srv.ndbs; i++) {
        while (keyspace_expire((int)i, now, EXPIRE_BATCH) &&
               clock_mono_now() < deadline) {
        }
    }
}

/* Rehash steps for every database; true while one still rehashes. */
static bool
rehash_databases(size_t steps)
{
    bool more = false;
    for (size_t i = 0; i < srv.ndbs; i++) {
        if (srv.dbs[i] != NULL) {
            more |= store_cron(srv.dbs[i], steps);
        }
    }
    return more;
}

/* While the key table grows or shrinks, every lookup probes two tables
 * and moves a bucket: at 10 M keys that transient would last millions of
 * requests. Finish it in slices of REHASH_SLICE_NS, one per loop
 * iteration, so it settles in seconds; between slices the loop serves its
 * clients as usual (an active idle handle only makes the poll not block). */
#define REHASH_SLICE_NS 200000

static void
on_rehash_idle(uv_idle_t *h)
{
    mono_ns deadline = clock_mono_now() + REHASH_SLICE_NS;
    while (rehash_databases(256)) {
        if (clock_mono_now() >= deadline) {
            return;
        }
    }
    uv_idle_stop(h);
}

/* The cron period follows hz, which CONFIG SET may change. */
static void
follow_hz(uv_timer_t *t)
{
    uint64_t every = (uint64_t)(MS_PER_SEC / srv.conf.hz);
    every = every ? every : 1;
    if (uv_timer_get_repeat(t) != every) {
        uv_timer_set_repeat(t, every);
    }
}

static void
on_cron(uv_timer_t *t)
{
    follow_hz(t);
    /* As Redis: while CLIENT PAUSE holds writes, the dataset stands still
     * (keys expire again when it ends; lookups see them dead meanwhile). */
    if (srv.pause_end_ms == 0 && !srv.active_expire_off) {
        expire_keys();
    }
    if (rehash_databases(100) &&
        !uv_is_active((uv_handle_t *)&rehash_idle)) {
        uv_idle_start(&rehash_idle, on_rehash_idle);
    }
    conn_cron(clock_loop_ms());
    grpc_cron();
    if (srv.pause_end_ms == 0) {
        conn_note_not_counted();
        keyspace_cron(EVICT_BATCH);
    }
    snapshot_cron();
    persist_cron();
    /* The expiries and evictions above join the stream first: a snapshot
     * for replicas forked from here on stands at the stream's offset. */
    keyspace_publish();
    persist_before_replies();
    child_cron();
    repl_cron();
    migrate_cron();
    cluster_cron();
    metrics_publish();
    /* After a mass expiry the freed records sit in the allocator; give the
     * pages back so RSS follows the live keys. */
    size_t keys = keyspace_total_keys();
    if (keys_at_last_trim > 10000 && keys < keys_at_last_trim / 2) {
        mem_trim();
        keys_at_last_trim = keys;
    } else if (keys > keys_at_last_trim) {
        keys_at_last_trim = keys;
    }
}

/* ---- signals and shutdown --------------------------------------------- */

static void
close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

/* Begin a graceful shutdown: stop listening, close clients, stop timers;
 * save a snapshot first when told to. */
static void
server_shutdown_save(const char *why, bool save)
{
    if (srv.shutting_down) {
        return;
    }
    srv.shutting_down = true;
    lifecycle_stopping();
    child_kill_at_shutdown();
    repl_shutdown();
    persist_close();
    if (save && srv.store != NULL) {
        char err[512];
        if (snapshot_save(err, sizeof(err)) < 0) {
            log_warning("Saving before exit failed: %s", err);
        }
    }
    log_warning("Shutting down (%s): closing %zu clients", why,
                srv.nclients);
    listen_tcp_close();
    if (have_unix_listener) {
        close_handle((uv_handle_t *)&unix_listener);
        unlink(srv.conf.unixsocket);
    }
    uv_timer_stop(&cron_timer);
    close_handle((uv_handle_t *)&cron_timer);
    uv_idle_stop(&rehash_idle);
    close_handle((uv_handle_t *)&rehash_idle);
    close_handle((uv_handle_t *)&sigint_handle);
    close_handle((uv_handle_t *)&sigterm_handle);
    close_handle((uv_handle_t *)&sighup_handle);
    close_handle((uv_handle_t *)&shutdown_async);
    srv.shutdown_wakeup = NULL;
    cluster_shutdown();
    conn_close_all();
    grpc_shutdown();
    conn_teardown();
}

/* A signal's shutdown: as Redis, a snapshot that cannot be written keeps
 * the server up (its keys are only in memory), saying so. */
static void
server_shutdown(const char *why)
{
    if (srv.shutting_down) {
        return;
    }
    /* As Redis: the child goes first (its file could replace the one
     * written here). */
    child_kill_at_shutdown();
    if (snapshot_configured() && srv.store != NULL) {
        char err[512];
        log_notice("Saving the final snapshot before exiting.");
        if (snapshot_save(err, sizeof(err)) < 0) {
            log_warning("%s received but errors trying to shut down the "
                        "server, check the logs for more information", why);
            return;
        }
    }
    server_shutdown_save(why, false);
}

/* A client's SHUTDOWN, on the loop iteration after it (server.h). */
static void
on_shutdown_request(uv_async_t *h)
{
    (void)h;
    if (srv.shutdown_request != SHUTDOWN_NONE) {
        server_shutdown_save("SHUTDOWN", srv.shutdown_request ==
                                             SHUTDOWN_SAVE);
    }
}

static void
on_signal(uv_signal_t *h, int signum)
{
    const char *name = signum == SIGINT ? "SIGINT" : "SIGTERM";
    (void)h;
    log_warning("Received %s scheduling shutdown...", name);
    server_shutdown(name);
}

/* SIGHUP reopens the log file (logrotate's postrotate), then re-reads the
 * named limits (as CONFIG RELOAD-LIMITS) and the cluster topology (as
 * CLUSTER RELOAD); each logs its outcome. */
static void
on_sighup(uv_signal_t *h, int signum)
{
    char err[CONF_ERR_LEN + 64];
    bool limits = srv.conf.limits_file[0] != '\0';
    bool topology = srv.conf.cluster_mode == CLUSTER_MODE_YES;
    bool logfile = log_to_file();
    (void)h;
    (void)signum;
    if (logfile) {
        if (log_reopen() < 0) {
            log_warning("Received SIGHUP: cannot reopen the log file %s, "
                        "still writing to the old one: %s", srv.conf.logfile,
                        strerror(errno));
        } else {
            log_notice("Received SIGHUP: reopened the log file %s",
                       srv.conf.logfile);
        }
    }
    if (!limits && !topology) {
        if (!logfile) {
            log_notice("Received SIGHUP: nothing to reload (no logfile, no "
                       "limits-file, cluster-mode is not yes)");
        }
        return;
    }
    if (limits) {
        log_notice("Received SIGHUP: reloading the limits of %s",
                   srv.conf.limits_file);
        (void)named_limits_reload(err, sizeof(err));
    }
    if (topology) {
        log_notice("Received SIGHUP: reloading the cluster topology");
        (void)cluster_reload(err, sizeof(err));
    }
}

/* ---- setup ------------------------------------------------------------ */

/* Room for maxclients sockets plus the listeners and log file, as Redis's
 * adjustOpenFilesLimit does. */
static void
raise_fd_limit(void)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)srv.conf.maxclients + 32;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) {
        return;
    }
    rlim_t old = rl.rlim_cur;
    rl.rlim_cur = want <= rl.rlim_max ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want) {
        log_warning("Open files limit is %llu (was %llu): maxclients %lld "
                    "needs %llu; some clients may be refused",
                    (unsigned long long)rl.rlim_cur, (unsigned long long)old,
                    (long long)srv.conf.maxclients, (unsigned long long)want);
    }
}

static void
make_run_id(void)
{
    server_random_id(srv.run_id);
    server_random_id(srv.replid);
}

/* --ping host:port: a health check that needs no redis-cli (the Docker
 * HEALTHCHECK): exit 0 when the server answers PING (a -NOAUTH answer also
 * proves it alive), 1 otherwise. */
static int
ping_server(const char *target)
{
    char host[256];
    const char *colon = strrchr(target, ':');
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    struct timeval tv = { 2, 0 };
    char reply[128];
    size_t hlen;
    int fd = -1, ok = 0;

    if (colon == NULL || (hlen = (size_t)(colon - target)) >= sizeof(host)) {
        fprintf(stderr, "cellgate: --ping wants host:port, got '%s'\n",
                target);
        return 1;
    }
    memcpy(host, target, hlen);
    host[hlen] = '\0';
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        memmove(host, host + 1, hlen - 2);   /* [::1]:6379 */
        host[hlen - 2] = '\0';
    }
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || res == NULL) {
        fprintf(stderr, "cellgate: --ping: cannot resolve '%s'\n", target);
        return 1;
    }
    fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
            write(fd, "PING\r\n", 6) == 6) {
            ssize_t n = read(fd, reply, sizeof(reply) - 1);
            if (n > 0) {
                reply[n] = '\0';
                ok = strncmp(reply, "+PONG", 5) == 0 ||
                     strncmp(reply, "-NOAUTH", 7) == 0;
            }
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (!ok) {
        fprintf(stderr, "cellgate: --ping: no PONG from %s\n", target);
        return 1;
    }
    printf("PONG\n");
    return 0;
}

/* The address a daemon configured as `c` answers on, for a local ping:
 * its first bind address, loopback for a wildcard. */
static void
local_target(const struct conf *c, char *out, size_t len)
{
    char host[256];
    size_t n = strcspn(c->bind, " ");
    snprintf(host, sizeof(host), "%.*s", (int)n, c->bind);
    if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "*") == 0 || n == 0) {
        snprintf(host, sizeof(host), "127.0.0.1");
    } else if (strcmp(host, "::") == 0) {
        snprintf(host, sizeof(host), "::1");
    }
    snprintf(out, len, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host,
             (long long)c->port);
}

/* --ping-pid PID: the container's health check. HEALTHCHECK cannot see
 * the arguments of `docker run`, so it reads the daemon's own command line
 * (/proc/PID/cmdline), loads the configuration from it as the daemon did
 * (from its working directory, for a relative config path) and pings the
 * port that gives. */
static int
ping_pid(const char *pid)
{
    char path[64], buf[65536];
    char *argv[1024];
    int argc = 0;
    snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0) {
        close(fd);
    }
    if (n <= 0) {
        fprintf(stderr, "cellgate: --ping-pid: cannot read %s\n", path);
        return 1;
    }
    buf[n] = '\0';
    for (char *p = buf; p < buf + n && argc < 1023; p += strlen(p) + 1) {
        argv[argc++] = p;
    }
    argv[argc] = NULL;
    snprintf(path, sizeof(path), "/proc/%s/cwd", pid);
    if (chdir(path) != 0) {
        fprintf(stderr, "cellgate: --ping-pid: cannot enter %s\n", path);
        return 1;
    }
    struct conf c;
    char err[CONF_ERR_LEN] = "out of memory", target[300];
    if (conf_init(&c) < 0 || conf_load_args(&c, argc, argv, err,
                                            sizeof(err)) < 0) {
        fprintf(stderr, "cellgate: --ping-pid: %s\n", err);
        conf_deinit(&c);
        return 1;
    }
    local_target(&c, target, sizeof(target));
    int rc = c.port != 0 ? ping_server(target) : 1;
    if (c.port == 0) {
        fprintf(stderr, "cellgate: --ping-pid: the daemon has no TCP port\n");
    }
    conf_deinit(&c);
    return rc;
}

static bool
has_flag(int argc, char **argv, const char *a, const char *b)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], a) == 0 || (b != NULL && strcmp(argv[i], b) == 0)) {
            return true;
        }
    }
    return false;
}

/* The config file argument, resolved to an absolute path for INFO. */
static void
note_config_file(int argc, char **argv)
{
    static char path[4096];
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-", 1) == 0) {
            if (strncmp(argv[i], "--", 2) == 0 && conf_find(argv[i] + 2)) {
                i++; /* skip the option's value */
            }
            continue;
        }
        if (realpath(argv[i], path) != NULL) {
            srv.config_file = path;
        }
        return;
    }
}

static int
load_config(int argc, char **argv)
{
    char err[CONF_ERR_LEN];
    if (conf_init(&srv.conf) < 0) {
        fprintf(stderr, "cellgate: out of memory\n");
        return -1;
    }
    if (conf_load_args(&srv.conf, argc, argv, err, sizeof(err)) < 0) {
        fprintf(stderr, "cellgate: %s\n", err);
        return -1;
    }
    note_config_file(argc, argv);
    /* The topology and the named limits are configuration too: a bad
     * one stops the start. */
    if (cluster_setup(err, sizeof(err)) < 0 ||
        named_limits_setup(err, sizeof(err)) < 0) {
        fprintf(stderr, "cellgate: %s\n", err);
        return -1;
    }
    return 0;
}

/* The journal or snapshot back into the keyspace; a file that cannot be
 * loaded stops the start unless snapshot-load-errors says start-empty. */
static int
load_data(void)
{
    char err[512];
    const char *what = srv.conf.appendonly ? "the journal" : "the snapshot";
    if (persist_load(err, sizeof(err)) >= 0) {
        return 0;
    }
    if (srv.conf.snapshot_load_errors != SNAPSHOT_LOAD_START_EMPTY) {
        fprintf(stderr, "cellgate: cannot load %s: %s (set "
                "snapshot-load-errors start-empty to start without it)\n",
                what, err);
        log_warning("Cannot load %s: %s", what, err);
        return -1;
    }
    log_warning("Cannot load %s, starting EMPTY as snapshot-load-errors "
                "says: %s", what, err);
    return 0;
}

/* cluster-enabled yes: nodes.conf is locked and read before the data,
 * as Redis's clusterInit(); then the journal or snapshot. */
static int
load_cluster_and_data(void)
{
    char err[512];
    if (cluster_start(err, sizeof(err)) < 0) {
        fprintf(stderr, "cellgate: %s\n", err);
        log_warning("%s", err);
        return -1;
    }
    if (load_data() < 0) {
        return -1;
    }
    if (cluster_check_data(err, sizeof(err)) < 0) {
        fprintf(stderr, "cellgate: %s\n", err);
        log_warning("%s", err);
        return -1;
    }
    return 0;
}

/* cluster-enabled yes: the bus's port, once the clients' one is ours. */
static int
start_cluster_bus(void)
{
    char err[512];
    if (cluster_bus_start(srv.loop, err, sizeof(err)) < 0) {
        fprintf(stderr, "cellgate: %s\n", err);
        log_warning("%s", err);
        return -1;
    }
    return 0;
}

static int
setup(void)
{
    unsigned char seed[16];
    ssize_t n = readlink("/proc/self/exe", srv.executable,
                         sizeof(srv.executable) - 1);
    srv.executable[n > 0 ? n : 0] = '\0';
    srv.start_wall_us = clock_wall_us();
    srv.start_mono_ns = (uint64_t)clock_mono_now();
    server_random_bytes(seed, sizeof(seed));
    server_apply_limits();
    notify_configure(srv.conf.notify_keyspace_events);
    if (cmd_setup(command_table, command_count) < 0) {
        return -1;
    }
    /* Once a process: WATCH's registry, the channels, the script cache and
     * the gRPC statistics are dicts that outlive any keyspace, and an entry
     * hashed under one key is lost under another. */
    dict_seed(seed);
    if (keyspace_init(seed, clock_wall_now()) < 0) {
        log_warning("Out of memory creating the keyspace");
        return -1;
    }
    static const struct script_busy_ops busy_ops = { conn_busy_start,
                                                     conn_busy_stop };
    script_set_busy_ops(&busy_ops);
    cmd_set_clients_guard(conn_clients_enter, conn_clients_leave);
    repl_set_command_ops(&primary_client_ops);
    if (script_init() < 0) {
        log_warning("Out of memory creating the Lua state for scripts");
        return -1;
    }
    srv.startup_allocated = mem_used();        /* MEMORY STATS */
    char err[512];
    if (load_cluster_and_data() < 0) {
        return -1;
    }
    srv.loop = uv_default_loop();
    /* Every handle server_shutdown() closes exists from here on, so a
     * failure below can shut down cleanly. */
    uv_timer_init(srv.loop, &cron_timer);
    uv_idle_init(srv.loop, &rehash_idle);
    uv_signal_init(srv.loop, &sigint_handle);
    uv_signal_init(srv.loop, &sigterm_handle);
    uv_signal_init(srv.loop, &sighup_handle);
    uv_async_init(srv.loop, &shutdown_async, on_shutdown_request);
    srv.shutdown_wakeup = &shutdown_async;
    if (conn_setup(srv.loop) < 0) {
        return -1;
    }
    raise_fd_limit();
    if (listen_tcp_start(on_tcp_connection) < 0 || listen_unix() < 0 || metrics_setup() < 0 ||
        grpc_setup() < 0 || start_cluster_bus() < 0) {
        return -1;
    }
    /* Only once the port is ours: a daemon that cannot listen (another one
     * holds the port, and maybe these files) must not touch the journal. */
    if (persist_open(err, sizeof(err)) < 0) {
        fprintf(stderr, "cellgate: cannot open the journal: %s\n", err);
        log_warning("Cannot open the journal: %s", err);
        return -1;
    }
    /* What was loaded may hold keys of slots moved away while we were
     * down; their removal is journaled like any other. */
    cluster_drop_unowned();
    char host[256];
    int port;
    if (conf_replicaof(srv.conf.replicaof, host, sizeof(host), &port)) {
        repl_set_primary(host, port);   /* connects as the loop starts */
    }
    cluster_follow_role();              /* cluster-mode yes: its line's */
    uint64_t every = (uint64_t)(MS_PER_SEC / srv.conf.hz);
    uv_timer_start(&cron_timer, on_cron, every, every ? every : 1);
    uv_signal_start(&sigint_handle, on_signal, SIGINT);
    uv_signal_start(&sigterm_handle, on_signal, SIGTERM);
    uv_signal_start(&sighup_handle, on_sighup, SIGHUP);
    return 0;
}

/* The pidfile goes; bye: the clean exit's last line, written before the
 * log file closes. */
static void
teardown(bool bye)
{
    if (srv.loop != NULL) {
        /* Let every close callback run, then release the loop. */
        uv_run(srv.loop, UV_RUN_DEFAULT);
        int rc = uv_loop_close(srv.loop);
        if (rc != 0) {
            log_warning("Event loop still had open handles at exit");
        }
    }
    metrics_teardown();
    pubsub_teardown();
    repl_teardown();
    migrate_teardown();
    primary_client_teardown();
    cluster_teardown();
    named_limits_teardown();
    keyspace_teardown();
    script_teardown();
    slowlog_teardown();
    topdenied_teardown();
    lifecycle_exit();
    if (bye) {
        log_notice("cellgate is now ready to exit, bye bye...");
    }
    log_teardown();
    conf_deinit(&srv.conf);
}

/* Declared so that a build renaming main (the command fuzzer links this
 * file with -Dmain=cellgate_main) still has its prototype. */
int main(int argc, char **argv);

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (has_flag(argc, argv, "--help", "-h")) {
        usage(stdout);
        return 0;
    }
    if (has_flag(argc, argv, "--version", "-v")) {
        printf("cellgate v=%s (redis protocol %s, libuv %s)\n",
               CELLGATE_VERSION, REDIS_COMPAT_VERSION, uv_version_string());
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--ping") == 0) {
        return ping_server(argv[2]);
    }
    if (argc == 3 && strcmp(argv[1], "--ping-pid") == 0) {
        return ping_pid(argv[2]);
    }
    if (has_flag(argc, argv, "--describe-config", NULL)) {
        conf_describe(stdout);
        return 0;
    }
    make_run_id();
    if (load_config(argc, argv) < 0) {
        conf_deinit(&srv.conf);
        return 1;
    }
    if (has_flag(argc, argv, "--test-config", NULL)) {
        listen_warn_open_bind(stdout);
        printf("cellgate: configuration OK\n");
        conf_deinit(&srv.conf);
        return 0;
    }
    if (log_setup((enum log_level)srv.conf.loglevel, srv.conf.logfile,
                  srv.conf.log_format == LOG_FORMAT_JSON) < 0) {
        fprintf(stderr, "cellgate: cannot open logfile '%s': %s\n",
                srv.conf.logfile, strerror(errno));
        conf_deinit(&srv.conf);
        return 1;
    }
    /* Before the loop and any thread exist: it may fork. */
    if (lifecycle_start() < 0) {
        teardown(false);
        return 1;
    }
    log_notice("cellgate %s starting, pid %d, config %s", CELLGATE_VERSION,
               (int)getpid(), srv.config_file ? srv.config_file : "(none)");
    listen_warn_open_bind(NULL);
    if (setup() < 0) {
        log_warning("Start-up failed, exiting");
        if (srv.loop != NULL) {
            /* Never save here: the file on disk is what was loaded, or
             * another daemon's (the one holding the port, say). */
            server_shutdown_save("start-up failure", false);
        }
        teardown(false);
        return 1;
    }
    if (srv.conf.port != 0) {
        log_notice("Ready to accept connections tcp on %s port %lld",
                   srv.conf.bind, (long long)srv.conf.port);
    }
    if (have_unix_listener) {
        log_notice("Ready to accept connections unix on %s",
                   srv.conf.unixsocket);
    }
    lifecycle_ready();
    uv_run(srv.loop, UV_RUN_DEFAULT);
    teardown(true);
    return 0;
}
