/*
 * info.c - INFO, laid out as Redis lays it out: "# Section" headers,
 * "field:value" lines, CRLF line ends, a blank line between sections.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lib/mem.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/child.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/blocked.h"
#include "server/client.h"
#include "server/errors.h"
#include "server/envoy/grpc.h"
#include "server/handlers/handlers.h"
#include "server/iostats.h"
#include "server/journal.h"
#include "server/keyspace.h"
#include "server/script/script.h"
#include "server/server.h"
#include "server/persist/persist.h"
#include "server/pubsub.h"
#include "server/repl/replication.h"
#include "server/snapshot.h"
#include "server/topdenied.h"
#include "lib/textbuf.h"

/* Redis's bytesToHuman: 1.50K, 2.00M ... */
static void
human(char *out, size_t len, double n)
{
    const char *units = "BKMGTP";
    int u = 0;
    while (n >= 1024 && u < 5) {
        n /= 1024;
        u++;
    }
    if (u == 0) {
        snprintf(out, len, "%.0fB", n);
    } else {
        snprintf(out, len, "%.2f%c", n, units[u]);
    }
}

static void
section_server(struct textbuf *t)
{
    struct utsname u;
    int64_t now_us = clock_wall_us();
    int64_t up = (int64_t)((uint64_t)clock_mono_now() - srv.start_mono_ns) /
                 NS_PER_SEC;
    uname(&u);
    textbuf_printf(t, "# Server\r\n"
             "redis_version:%s\r\n"
             "cellgate_version:%s\r\n"
             "redis_git_sha1:00000000\r\n"
             "redis_git_dirty:0\r\n"
             "redis_mode:%s\r\n"
             "os:%s %s %s\r\n"
             "arch_bits:%d\r\n"
             "multiplexing_api:libuv %s\r\n"
             "process_id:%d\r\n"
             "run_id:%s\r\n"
             "tcp_port:%u\r\n"
             "server_time_usec:%lld\r\n"
             "uptime_in_seconds:%lld\r\n"
             "uptime_in_days:%lld\r\n"
             "hz:%lld\r\n"
             "executable:%s\r\n"
             "config_file:%s\r\n"
             "io_threads_active:%d\r\n",
             REDIS_COMPAT_VERSION, CELLGATE_VERSION,
             /* Cluster clients read this to decide how to connect. */
             !server_in_cluster() ? "standalone"
                                                      : "cluster",
             u.sysname, u.release,
             u.machine, (int)(sizeof(void *) * 8), uv_version_string(),
             (int)getpid(), srv.run_id, srv.tcp_port, (long long)now_us,
             (long long)up, (long long)(up / 86400), (long long)srv.conf.hz,
             srv.executable, srv.config_file ? srv.config_file : "",
             io_threads_running() > 1);
}

static void
section_clients(struct textbuf *t)
{
    textbuf_printf(t, "# Clients\r\n"
             "connected_clients:%zu\r\n"
             "maxclients:%lld\r\n"
             "blocked_clients:%zu\r\n"
             "tracking_clients:0\r\n"
             "clients_in_timeout_table:%zu\r\n",
             server_connected_clients(repl_replica_count()),
             (long long)srv.conf.maxclients, blocked_nclients,
             blocked_with_timeout());
}

static void
section_memory(struct textbuf *t)
{
    char h_used[32], h_rss[32], h_peak[32], h_max[32], policy[32];
    size_t used = mem_used(), rss = mem_rss(), peak = mem_peak();
    human(h_used, sizeof(h_used), (double)used);
    human(h_rss, sizeof(h_rss), (double)rss);
    human(h_peak, sizeof(h_peak), (double)peak);
    human(h_max, sizeof(h_max), (double)srv.conf.maxmemory);
    /* Scripts: the Lua heap (apart from used_memory) and the cache's
     * bookkeeping (in it), by Redis's names. */
    char h_lua[32], h_scripts[32];
    size_t lua = script_lua_memory(), scripts = script_cache_memory();
    size_t functions = script_function_memory();
    human(h_lua, sizeof(h_lua), (double)lua);
    human(h_scripts, sizeof(h_scripts), (double)(scripts + functions));
    conf_format(&srv.conf, conf_find("maxmemory-policy"), policy,
                sizeof(policy));
    struct store_usage tot;
    keyspace_totals(&tot);
    textbuf_printf(t, "# Memory\r\n"
             "used_memory:%zu\r\n"
             "used_memory_human:%s\r\n"
             "used_memory_rss:%zu\r\n"
             "used_memory_rss_human:%s\r\n"
             "used_memory_peak:%zu\r\n"
             "used_memory_peak_human:%s\r\n"
             "used_memory_lua:%zu\r\n"
             "used_memory_vm_eval:%zu\r\n"
             "used_memory_lua_human:%s\r\n"
             "used_memory_scripts_eval:%zu\r\n"
             "number_of_cached_scripts:%zu\r\n"
             "number_of_functions:%zu\r\n"
             "number_of_libraries:%zu\r\n"
             "used_memory_vm_functions:0\r\n"
             "used_memory_vm_total:%zu\r\n"
             "used_memory_vm_total_human:%s\r\n"
             "used_memory_functions:%zu\r\n"
             "used_memory_scripts:%zu\r\n"
             "used_memory_scripts_human:%s\r\n"
             "maxmemory:%lld\r\n"
             "maxmemory_human:%s\r\n"
             "maxmemory_policy:%s\r\n"
             "mem_fragmentation_ratio:%.2f\r\n",
             used, h_used, rss, h_rss, peak, h_peak,
             lua, lua, h_lua, scripts, script_count(), script_function_count(),
             script_library_count(), lua, h_lua, functions,
             scripts + functions, h_scripts,
             (long long)srv.conf.maxmemory, h_max, policy,
             used ? (double)rss / (double)used : 0.0);
    /* What maxmemory does not count, in Redis's order (keyspace.h:
     * keyspace_set_not_counted()); then cellgate's own figures. */
    size_t replicas = repl_output_memory(), journal = persist_buffer_memory();
    textbuf_printf(t, "mem_not_counted_for_evict:%zu\r\n"
             "mem_clients_slaves:%zu\r\n"
             "mem_aof_buffer:%zu\r\n"
             "mem_overhead_db_hashtable_rehashing:%zu\r\n"
             "mem_clients_grpc:%zu\r\n"
             "mem_clients_grpc_requests:%zu\r\n"
             "mem_allocator:libc\r\n",
             replicas + journal + journal_buffer_memory(), replicas, journal,
             tot.rehash_overhead, grpc_memory(), grpc_request_memory());
}

static void
section_persistence(struct textbuf *t)
{
    struct persist_info p;
    struct child_info ch;
    persist_info(&p);
    child_info(&ch);
    textbuf_printf(t, "# Persistence\r\n"
             "loading:0\r\n"
             "async_loading:0\r\n"
             "current_cow_peak:%llu\r\n"
             "current_cow_size:%llu\r\n"
             "current_cow_size_age:%lld\r\n"
             "current_fork_perc:%.2f\r\n"
             "current_save_keys_processed:%llu\r\n"
             "current_save_keys_total:%llu\r\n"
             "rdb_changes_since_last_save:%llu\r\n"
             "rdb_bgsave_in_progress:%d\r\n"
             "rdb_last_save_time:%lld\r\n"
             "rdb_last_bgsave_status:%s\r\n"
             "rdb_last_bgsave_time_sec:%lld\r\n"
             "rdb_current_bgsave_time_sec:%lld\r\n"
             "rdb_saves:%llu\r\n"
             "rdb_last_cow_size:%llu\r\n",
             (unsigned long long)ch.cow_peak, (unsigned long long)ch.cow_size,
             (long long)ch.cow_size_age, ch.fork_perc,
             (unsigned long long)ch.keys_processed,
             (unsigned long long)ch.keys_total,
             (unsigned long long)snapshot_changes(),
             snapshot_in_progress(), (long long)snapshot_last_save(),
             snapshot_last_ok() ? "ok" : "err",
             (long long)ch.last_snapshot_seconds,
             (long long)ch.current_snapshot_seconds,
             (unsigned long long)ch.snapshot_forks,
             (unsigned long long)ch.last_snapshot_cow);
    textbuf_printf(t, "aof_enabled:%d\r\n"
             "aof_rewrite_in_progress:%d\r\n"
             "aof_rewrite_scheduled:%d\r\n"
             "aof_last_rewrite_time_sec:%lld\r\n"
             "aof_current_rewrite_time_sec:%lld\r\n"
             "aof_last_bgrewrite_status:%s\r\n"
             "aof_rewrites:%llu\r\n"
             "aof_rewrites_consecutive_failures:%llu\r\n"
             "aof_last_write_status:%s\r\n"
             "aof_last_cow_size:%llu\r\n"
             "module_fork_in_progress:0\r\n"
             "module_fork_last_cow_size:0\r\n",
             p.enabled, p.rewrite_in_progress, p.rewrite_scheduled,
             (long long)p.last_rewrite_time_sec,
             (long long)p.current_rewrite_time_sec,
             p.last_rewrite_ok ? "ok" : "err",
             (unsigned long long)p.rewrites,
             (unsigned long long)p.rewrites_consecutive_failures,
             p.last_write_ok ? "ok" : "err",
             (unsigned long long)ch.last_rewrite_cow);
    if (!p.last_write_ok) {
        /* Not a Redis field: why, without reading the log. */
        textbuf_printf(t, "aof_last_write_error:%s\r\n",
                       strerror(persist_errno()));
    }
    if (p.enabled) {
        textbuf_printf(t, "aof_current_size:%llu\r\n"
                 "aof_base_size:%llu\r\n"
                 "aof_pending_rewrite:%d\r\n"
                 "aof_buffer_length:%zu\r\n"
                 "aof_pending_bio_fsync:%d\r\n"
                 "aof_delayed_fsync:0\r\n"
                 "aof_fsyncs:%llu\r\n"
                 "aof_last_fsync_usec:%lld\r\n",
                 (unsigned long long)p.current_size,
                 (unsigned long long)p.base_size, p.rewrite_scheduled,
                 p.buffer_length,
                 p.fsync_in_progress, (unsigned long long)p.fsyncs,
                 (long long)p.last_fsync_us);
    }
}

/* INFO stats' gRPC lines, and the ones after them. */
static void
stats_grpc(struct textbuf *t, const struct server_stats *s)
{
    textbuf_printf(t, "grpc_connection_memory_limit_refused_calls:%llu\r\n"
             "grpc_memory_limit_disconnections:%llu\r\n"
             "grpc_stream_timeouts:%llu\r\n"
             "grpc_streaming_calls:%zu\r\n"
             "grpc_streaming_calls_opened:%llu\r\n"
             "grpc_streaming_calls_ended:%llu\r\n"
             "grpc_streaming_calls_refused:%llu\r\n"
             "grpc_streaming_calls_idle_resets:%llu\r\n"
             "grpc_streaming_calls_output_resets:%llu\r\n"
             "rls_forwarded_descriptors:%llu\r\n"
             "rls_forward_redirects:%llu\r\n"
             "rls_forward_failures:%llu\r\n"
             "rls_forward_timeouts:%llu\r\n"
             "accept_errors:%llu\r\n",
             (unsigned long long)s->grpc_refused_streams,
             (unsigned long long)s->grpc_memory_limit_closes,
             (unsigned long long)s->grpc_stream_timeouts,
             grpc_streaming_calls(),
             (unsigned long long)s->grpc_streaming_opened,
             (unsigned long long)s->grpc_streaming_ended,
             (unsigned long long)s->grpc_streaming_refused,
             (unsigned long long)s->grpc_streaming_idle_resets,
             (unsigned long long)s->grpc_streaming_output_resets,
             (unsigned long long)s->rls_forwarded,
             (unsigned long long)s->rls_forward_redirects,
             (unsigned long long)s->rls_forward_failures,
             (unsigned long long)s->rls_forward_timeouts,
             (unsigned long long)s->accept_errors);
}

static void
section_stats(struct textbuf *t)
{
    const struct server_stats *s = &srv.stats;
    struct store_usage tot;
    struct child_info ch;
    struct io_figures io, main_io;
    keyspace_totals(&tot);
    child_info(&ch);
    io_figures_total(&io);
    io_figures_of(0, &main_io);
    textbuf_printf(t, "# Stats\r\n"
             "total_connections_received:%llu\r\n"
             "total_commands_processed:%llu\r\n"
             "total_net_input_bytes:%llu\r\n"
             "total_net_output_bytes:%llu\r\n"
             "rejected_connections:%llu\r\n"
             "expired_keys:%llu\r\n"
             "evicted_keys:%llu\r\n"
             "keyspace_hits:%llu\r\n"
             "keyspace_misses:%llu\r\n"
             "pubsub_channels:%zu\r\n"
             "pubsub_patterns:%zu\r\n"
             "latest_fork_usec:%lld\r\n"
             "total_forks:%llu\r\n"
             "total_error_replies:%llu\r\n"
             "total_reads_processed:%llu\r\n"
             "total_writes_processed:%llu\r\n"
             "io_threaded_reads_processed:%llu\r\n"
             "io_threaded_writes_processed:%llu\r\n"
             "protocol_errors:%llu\r\n"
             "client_query_buffer_limit_disconnections:%llu\r\n"
             "client_output_buffer_limit_disconnections:%llu\r\n"
             "idle_timeout_disconnections:%llu\r\n",
             (unsigned long long)s->connections_received,
             (unsigned long long)s->commands_processed,
             (unsigned long long)io.bytes_in,
             (unsigned long long)io.bytes_out,
             (unsigned long long)s->rejected_connections,
             (unsigned long long)(tot.expired - s->expired_keys_base),
             (unsigned long long)(tot.evicted - s->evicted_keys_base),
             (unsigned long long)s->keyspace_hits,
             (unsigned long long)s->keyspace_misses,
             pubsub_channel_total(), pubsub_numpat(),
             (long long)ch.latest_fork_usec,
             (unsigned long long)ch.total_forks,
             (unsigned long long)s->total_error_replies,
             (unsigned long long)io.reads, (unsigned long long)io.writes,
             (unsigned long long)(io.reads - main_io.reads),
             (unsigned long long)(io.writes - main_io.writes),
             (unsigned long long)s->protocol_errors,
             (unsigned long long)s->querybuf_limit_closes,
             (unsigned long long)s->output_limit_closes,
             (unsigned long long)s->idle_timeout_closes);
    stats_grpc(t, s);
}

/* Redis 8's: each thread that serves clients, the main thread first. */
static void
section_threads(struct textbuf *t)
{
    textbuf_printf(t, "# Threads\r\n");
    for (unsigned i = 0; i < io_threads_running(); i++) {
        struct io_figures f;
        io_figures_of(i, &f);
        textbuf_printf(t, "io_thread_%u:clients=%u,reads=%llu,writes=%llu\r\n",
                       i, io_clients_of(i), (unsigned long long)f.reads,
                       (unsigned long long)f.writes);
    }
}

static void
section_replication(struct textbuf *t)
{
    textbuf_printf(t, "# Replication\r\n");
    repl_info(t);
}

static void
section_cpu(struct textbuf *t)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    textbuf_printf(t, "# CPU\r\n"
             "used_cpu_sys:%ld.%06ld\r\n"
             "used_cpu_user:%ld.%06ld\r\n",
             (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec,
             (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
}

static void
add_cmdstats(struct textbuf *t, const struct cmd *cmds, size_t n)
{
    for (size_t i = 0; i < n && cmds[i].name != NULL; i++) {
        const struct cmd_stats *s = &cmds[i].stats;
        if (s->calls > 0 || s->rejected_calls > 0) {
            textbuf_printf(t, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
                     "rejected_calls=%llu,failed_calls=%llu\r\n",
                     cmds[i].name, (unsigned long long)s->calls,
                     (unsigned long long)(s->nsec / NS_PER_US),
                     s->calls ? (double)s->nsec / NS_PER_US / (double)s->calls
                              : 0.0,
                     (unsigned long long)s->rejected_calls,
                     (unsigned long long)s->failed_calls);
        }
        if (cmds[i].subcommands != NULL) {
            add_cmdstats(t, cmds[i].subcommands, SIZE_MAX);
        }
    }
}

static void
section_commandstats(struct textbuf *t)
{
    size_t n;
    const struct cmd *cmds = cmd_table(&n);
    textbuf_printf(t, "# Commandstats\r\n");
    add_cmdstats(t, cmds, n);
}

/* Per database with denials counted: how many keys the summary holds and
 * the first TOPDENIED_INFO_KEYS, quoted (RL.TOPDENIED gives them all). */
static void
top_denied_lines(struct textbuf *t)
{
    struct topk_entry e[TOPDENIED_INFO_KEYS];
    for (size_t db = 0; db < srv.ndbs; db++) {
        size_t n = topdenied_top((int)db, e, TOPDENIED_INFO_KEYS);
        if (n == 0) {
            continue;
        }
        textbuf_printf(t, "top_denied_db%zu:", db);
        for (size_t i = 0; i < n; i++) {
            textbuf_printf(t, "%skey%zu=\"", i > 0 ? "," : "", i + 1);
            topdenied_quote(t, e[i].key, e[i].len);
            textbuf_printf(t, "\",count%zu=%llu", i + 1,
                           (unsigned long long)e[i].count);
        }
        textbuf_printf(t, "\r\n");
    }
}

/* Allowed and denied requests per limiter command (cellgate's own). */
static void
section_limits(struct textbuf *t)
{
    size_t n;
    const struct cmd *cmds = cmd_table(&n);
    textbuf_printf(t, "# Limits\r\n");
    for (size_t i = 0; i < n; i++) {
        const struct cmd_stats *s = &cmds[i].stats;
        if (s->allowed > 0 || s->denied > 0) {
            textbuf_printf(t, "limits_%s:allowed=%llu,denied=%llu\r\n",
                     cmds[i].name, (unsigned long long)s->allowed,
                     (unsigned long long)s->denied);
        }
    }
    top_denied_lines(t);
}

static void
section_errorstats(struct textbuf *t)
{
    uint64_t count;
    const char *code;
    textbuf_printf(t, "# Errorstats\r\n");
    for (size_t i = 0; (code = cmd_error_stat(i, &count)) != NULL; i++) {
        textbuf_printf(t, "errorstat_%s:count=%llu\r\n", code,
                 (unsigned long long)count);
    }
}

static void
section_cluster(struct textbuf *t)
{
    textbuf_printf(t, "# Cluster\r\n"
             "cluster_enabled:%d\r\n",
             server_in_cluster());
}

static void
section_keyspace(struct textbuf *t)
{
    textbuf_printf(t, "# Keyspace\r\n");
    for (size_t i = 0; i < srv.ndbs; i++) {
        struct store *s = srv.dbs[i];
        if (s != NULL && store_size(s) > 0) {
            struct store_usage u = store_usage(s);
            textbuf_printf(t, "db%zu:keys=%zu,expires=%zu,avg_ttl=%" PRId64
                           "\r\n", i, u.keys, u.volatile_keys,
                           store_avg_ttl(s, clock_wall_now()));
        }
    }
}

struct section {
    const char *name;
    void (*fn)(struct textbuf *t);
    bool in_default;
};

static const struct section sections[] = {
    { "server", section_server, true },
    { "clients", section_clients, true },
    { "memory", section_memory, true },
    { "persistence", section_persistence, true },
    { "stats", section_stats, true },
    { "replication", section_replication, true },
    { "cpu", section_cpu, true },
    { "threads", section_threads, true },
    { "commandstats", section_commandstats, false },
    { "limits", section_limits, true },
    { "errorstats", section_errorstats, true },
    { "cluster", section_cluster, true },
    { "keyspace", section_keyspace, true },
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

/* Which sections the arguments ask for: none = default; "all" and
 * "everything" = every section; "default" = the default set. */
static void
select_sections(struct resp_request *req, bool *want)
{
    if (req->argc == 1) {
        for (size_t i = 0; i < NSECTIONS; i++) {
            want[i] = sections[i].in_default;
        }
        return;
    }
    for (size_t a = 1; a < req->argc; a++) {
        const char *arg = req->argv[a];
        bool all = strcasecmp(arg, "all") == 0 ||
                   strcasecmp(arg, "everything") == 0;
        bool def = strcasecmp(arg, "default") == 0;
        for (size_t i = 0; i < NSECTIONS; i++) {
            if (all || (def && sections[i].in_default) ||
                strcasecmp(arg, sections[i].name) == 0) {
                want[i] = true;
            }
        }
    }
}

void
info_command(struct conn *c, struct resp_request *req)
{
    struct textbuf t = { NULL, 0, 0, false };
    bool want[NSECTIONS] = { false };
    bool first = true;
    select_sections(req, want);
    for (size_t i = 0; i < NSECTIONS; i++) {
        if (!want[i]) {
            continue;
        }
        if (!first) {
            textbuf_printf(&t, "\r\n");
        }
        first = false;
        sections[i].fn(&t);
    }
    if (t.oom) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_verbatim(&c->out, t.p ? t.p : "", t.len, c->proto);
    }
    textbuf_free(&t);
}
