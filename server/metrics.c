/*
 * metrics.c - see metrics.h.
 */
#include "server/metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/time.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/persist/persist.h"
#include "server/envoy/named_limits.h"
#include "server/envoy/rl_stats.h"
#include "server/envoy/rlqs.h"
#include "server/repl/replication.h"
#include "server/server.h"
#include "server/topdenied.h"
#include "lib/textbuf.h"

static struct MHD_Daemon *httpd;
static pthread_mutex_t snapshot_lock = PTHREAD_MUTEX_INITIALIZER;
static char *snapshot;          /* guarded by snapshot_lock */
static size_t snapshot_len;

static void
family(struct textbuf *b, const char *name, const char *type, const char *help)
{
    textbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one unlabelled sample. */
static void
one(struct textbuf *b, const char *name, const char *type, const char *help,
    uint64_t v)
{
    family(b, name, type, help);
    textbuf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* fn for each command that runs, a container's subcommands in its place
 * (the container itself counts nothing), as the per-command families
 * list them. */
typedef void (*command_render_fn)(struct textbuf *b, const struct cmd *cmd);

static void
each_runnable(struct textbuf *b, const struct cmd *cmds, size_t n,
              command_render_fn fn)
{
    for (size_t i = 0; i < n && cmds[i].name != NULL; i++) {
        if (cmds[i].subcommands != NULL) {
            each_runnable(b, cmds[i].subcommands, SIZE_MAX, fn);
        } else {
            fn(b, &cmds[i]);
        }
    }
}

static void
render_requests(struct textbuf *b, const struct cmd *cmd)
{
    const struct cmd_stats *s = &cmd->stats;
    if (s->calls == 0 && s->rejected_calls == 0) {
        return;
    }
    textbuf_printf(b, "cellgate_requests_total{command=\"%s\",outcome=\"ok\"} %llu\n",
        cmd->name,
        (unsigned long long)(s->calls - s->failed_calls));
    textbuf_printf(b, "cellgate_requests_total{command=\"%s\",outcome=\"error\"} "
        "%llu\n", cmd->name,
        (unsigned long long)(s->failed_calls + s->rejected_calls));
}

static void
render_decisions(struct textbuf *b, const struct cmd *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct cmd_stats *s = &cmds[i].stats;
        if (s->allowed == 0 && s->denied == 0) {
            continue;
        }
        textbuf_printf(b, "cellgate_limiter_requests_total{command=\"%s\","
            "decision=\"allowed\"} %llu\n", cmds[i].name,
            (unsigned long long)s->allowed);
        textbuf_printf(b, "cellgate_limiter_requests_total{command=\"%s\","
            "decision=\"denied\"} %llu\n", cmds[i].name,
            (unsigned long long)s->denied);
    }
}

/* At most TOPDENIED_METRIC_KEYS series per database (rank keeps two keys
 * that quote alike apart), never one per key seen. */
static void
render_top_denied(struct textbuf *b)
{
    struct topk_entry e[TOPDENIED_METRIC_KEYS];
    for (size_t db = 0; db < srv.ndbs; db++) {
        size_t n = topdenied_top((int)db, e, TOPDENIED_METRIC_KEYS);
        for (size_t i = 0; i < n; i++) {
            textbuf_printf(b, "cellgate_top_denied{db=\"%zu\",rank=\"%zu\","
                           "key=\"", db, i + 1);
            topdenied_quote(b, e[i].key, e[i].len);
            textbuf_printf(b, "\"} %llu\n", (unsigned long long)e[i].count);
        }
    }
}

/* A configured limit's labels: its domain and its stats key (the path
 * ratelimit_service_rate_limit_* count it under, so the two divide in
 * PromQL), and its unit. */
static void
limit_labels(struct textbuf *b, const struct limits_domain *d,
             const struct limits_node *const *path, size_t depth)
{
    textbuf_printf(b, "{domain=\"");
    textbuf_label(b, d->name, strlen(d->name));
    textbuf_printf(b, "\",key=\"");
    for (size_t i = 0; i < depth; i++) {
        textbuf_printf(b, "%s", i > 0 ? "." : "");
        textbuf_label(b, path[i]->composite, strlen(path[i]->composite));
    }
    textbuf_printf(b, "\",unit=\"%s\"}",
                   limits_unit_name(path[depth - 1]->rule->unit));
}

static void
render_limit(void *ctx, const struct limits_domain *d,
             const struct limits_node *const *path, size_t depth)
{
    struct textbuf *b = ctx;
    const struct limits_rule *r = path[depth - 1]->rule;
    textbuf_printf(b, "cellgate_named_limit");
    limit_labels(b, d, path, depth);
    textbuf_printf(b, " %lu\n", (unsigned long)r->requests_per_unit);
}

static void
render_limit_unit(void *ctx, const struct limits_domain *d,
                  const struct limits_node *const *path, size_t depth)
{
    struct textbuf *b = ctx;
    textbuf_printf(b, "cellgate_named_limit_unit_seconds");
    limit_labels(b, d, path, depth);
    textbuf_printf(b, " %lld\n",
                   (long long)limits_unit_seconds(path[depth - 1]->rule->unit));
}

/* The limits of limits-file as configured: requests per unit, and the
 * unit in seconds, one series each per limit (the file's size). */
static void
render_named_limits(struct textbuf *b)
{
    const struct limits *l = named_limits_running();
    family(b, "cellgate_named_limit", "gauge",
           "A named limit of limits-file: requests per unit.");
    limits_each_rule(l, render_limit, b);
    family(b, "cellgate_named_limit_unit_seconds", "gauge",
           "A named limit's unit in seconds (a month is 30 days).");
    limits_each_rule(l, render_limit_unit, b);
}

static void
render_histogram(struct textbuf *b, const struct cmd *cmd)
{
    const struct cmd_stats *s = &cmd->stats;
    if (s->calls == 0) {
        return;
    }
    uint64_t cum = 0;
    for (size_t k = 0; k < CMD_HIST_BUCKETS; k++) {
        cum += s->hist[k];
        textbuf_printf(b, "cellgate_command_duration_seconds_bucket{command=\"%s\","
            "le=\"%g\"} %llu\n", cmd->name,
            (double)cmd_hist_bounds_us[k] / US_PER_SEC,
            (unsigned long long)cum);
    }
    textbuf_printf(b, "cellgate_command_duration_seconds_bucket{command=\"%s\","
        "le=\"+Inf\"} %llu\n", cmd->name,
        (unsigned long long)s->calls);
    textbuf_printf(b, "cellgate_command_duration_seconds_sum{command=\"%s\"} %.6f\n",
        cmd->name, (double)s->nsec / NS_PER_SEC);
    textbuf_printf(b, "cellgate_command_duration_seconds_count{command=\"%s\"} "
        "%llu\n", cmd->name, (unsigned long long)s->calls);
}

static void
render_persistence(struct textbuf *b)
{
    struct persist_info p;
    persist_info(&p);
    one(b, "cellgate_journal_bytes", "gauge",
        "Bytes of the journal's files (base and incr); 0 when it is off.",
        p.current_size);
    one(b, "cellgate_journal_write_ok", "gauge",
        "1 while the journal is written, 0 while writes fail (-MISCONF).",
        p.last_write_ok);
    one(b, "cellgate_journal_fsyncs_total", "counter",
        "fsyncs of the journal.", p.fsyncs);
    family(b, "cellgate_journal_last_fsync_seconds", "gauge",
           "How long the last fsync of the journal took.");
    textbuf_printf(b, "cellgate_journal_last_fsync_seconds %.6f\n",
        (double)p.last_fsync_us / US_PER_SEC);
}

/* Either role's offset and replicas; a replica's link to its primary
 * (INFO's master_link_status), absent on a primary, so an alert on it
 * never fires there. */
static void
render_replication(struct textbuf *b)
{
    int64_t offset = repl_offset();
    one(b, "cellgate_connected_replicas", "gauge",
        "Replicas connected to this server.", repl_replica_count());
    one(b, "cellgate_replication_offset_bytes", "gauge",
        "master_repl_offset of a primary, the offset applied of a replica.",
        offset > 0 ? (uint64_t)offset : 0);
    family(b, "cellgate_replica_link_up", "gauge",
           "A replica's link to its primary: 1 up, 0 down (replicas only).");
    if (repl_is_replica()) {
        textbuf_printf(b, "cellgate_replica_link_up %d\n",
                       repl_link_up() ? 1 : 0);
    }
}

/* Envoy's Rate Limit Quota Service (envoy/rlqs.c): its streams, buckets
 * and assignments, and the requests Envoys reported, shadow_mode limits'
 * apart from enforced ones. */
static void
render_rlqs(struct textbuf *b)
{
    static const char *const modes[2] = { "enforced", "shadow" };
    struct rlqs_stats st;
    rlqs_stats_get(&st);
    one(b, "cellgate_rlqs_streams", "gauge",
        "RLQS streams (StreamRateLimitQuotas calls) open.", st.streams);
    one(b, "cellgate_rlqs_buckets", "gauge",
        "Named-limit counters RLQS streams share.", st.buckets);
    one(b, "cellgate_rlqs_subscriptions", "gauge",
        "Buckets of RLQS streams (a stream's bucket once).", st.subscriptions);
    one(b, "cellgate_rlqs_reports_total", "counter",
        "RLQS usage reports read.", st.reports);
    family(b, "cellgate_rlqs_assignments_total", "counter",
           "RLQS bucket actions sent, by strategy.");
    textbuf_printf(b, "cellgate_rlqs_assignments_total{action=\"token_bucket\"} "
                   "%llu\n", (unsigned long long)st.token_buckets_sent);
    textbuf_printf(b, "cellgate_rlqs_assignments_total{action="
                   "\"requests_per_time_unit\"} %llu\n",
                   (unsigned long long)st.per_unit_sent);
    textbuf_printf(b, "cellgate_rlqs_assignments_total{action=\"allow_all\"} "
                   "%llu\n", (unsigned long long)st.allow_all_sent);
    textbuf_printf(b, "cellgate_rlqs_assignments_total{action=\"deny_all\"} "
                   "%llu\n", (unsigned long long)st.deny_all_sent);
    textbuf_printf(b, "cellgate_rlqs_assignments_total{action=\"abandon\"} "
                   "%llu\n", (unsigned long long)st.abandons_sent);
    family(b, "cellgate_rlqs_requests_total", "counter",
           "Requests Envoys reported on RLQS buckets, by limit mode and "
           "decision.");
    for (int m = 0; m < 2; m++) {
        textbuf_printf(b, "cellgate_rlqs_requests_total{mode=\"%s\","
                       "decision=\"allowed\"} %llu\n", modes[m],
                       (unsigned long long)st.allowed[m]);
        textbuf_printf(b, "cellgate_rlqs_requests_total{mode=\"%s\","
                       "decision=\"denied\"} %llu\n", modes[m],
                       (unsigned long long)st.denied[m]);
    }
    family(b, "cellgate_rlqs_folded_total", "counter",
           "Allowed requests put on the named limits' counters (what did "
           "not fit under a limit is not).");
    for (int m = 0; m < 2; m++) {
        textbuf_printf(b, "cellgate_rlqs_folded_total{mode=\"%s\"} %llu\n",
                       modes[m], (unsigned long long)st.folded[m]);
    }
}

static void
render(struct textbuf *b)
{
    size_t n;
    const struct cmd *cmds = cmd_table(&n);
    family(b, "cellgate_requests_total", "counter",
           "Requests by command and outcome.");
    each_runnable(b, cmds, n, render_requests);
    family(b, "cellgate_limiter_requests_total", "counter",
           "Limiter requests by command and decision.");
    render_decisions(b, cmds, n);
    family(b, "cellgate_top_denied", "gauge",
           "Denials of the most denied keys lately (decayed by halves "
           "every minute), per database.");
    render_top_denied(b);
    family(b, "cellgate_command_duration_seconds", "histogram",
           "Time spent in the server per command.");
    each_runnable(b, cmds, n, render_histogram);
    struct store_usage tot;
    keyspace_totals(&tot);
    one(b, "cellgate_keys", "gauge", "Limiter keys held.", tot.keys);
    one(b, "cellgate_used_memory_bytes", "gauge",
        "Bytes allocated (INFO used_memory).", mem_used());
    one(b, "cellgate_maxmemory_bytes", "gauge",
        "The maxmemory option (0: no limit).", (uint64_t)srv.conf.maxmemory);
    one(b, "cellgate_connected_clients", "gauge", "Connected clients.",
        server_connected_clients(repl_replica_count()));
    one(b, "cellgate_expired_keys_total", "counter",
        "Keys removed once their state was fresh again.", tot.expired);
    one(b, "cellgate_evicted_keys_total", "counter",
        "Keys evicted under maxmemory.", tot.evicted);
    one(b, "cellgate_connections_received_total", "counter",
        "Connections accepted.", srv.stats.connections_received);
    render_persistence(b);
    render_replication(b);
    rl_stats_render(b);
    render_named_limits(b);
    render_rlqs(b);
    one(b, "cellgate_uptime_seconds", "gauge", "Seconds since start.",
        ((uint64_t)clock_mono_now() - srv.start_mono_ns) / (uint64_t)NS_PER_SEC);
}

void
metrics_publish(void)
{
    struct textbuf b = { NULL, 0, 0, false };
    if (httpd == NULL) {
        return;
    }
    render(&b);
    if (b.oom) {
        textbuf_free(&b);
        return;
    }
    pthread_mutex_lock(&snapshot_lock);
    char *old = snapshot;
    snapshot = b.p;
    snapshot_len = b.len;
    pthread_mutex_unlock(&snapshot_lock);
    mem_free(old);
}

/* libmicrohttpd's thread: serve the current snapshot, copied. */
static enum MHD_Result
serve(void *cls, struct MHD_Connection *conn, const char *url,
      const char *method, const char *version, const char *upload,
      size_t *upload_size, void **state)
{
    struct MHD_Response *resp;
    unsigned status = MHD_HTTP_OK;
    const char *type = "text/plain; version=0.0.4; charset=utf-8";
    (void)cls;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)state;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static char msg[] = "method not allowed\n";
        resp = MHD_create_response_from_buffer(sizeof(msg) - 1, msg,
                                               MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics") == 0) {
        pthread_mutex_lock(&snapshot_lock);
        resp = MHD_create_response_from_buffer(snapshot_len,
                                               snapshot ? snapshot : (char *)"",
                                               MHD_RESPMEM_MUST_COPY);
        pthread_mutex_unlock(&snapshot_lock);
    } else if (strcmp(url, "/healthz") == 0) {
        static char ok[] = "ok\n";
        resp = MHD_create_response_from_buffer(sizeof(ok) - 1, ok,
                                               MHD_RESPMEM_PERSISTENT);
    } else {
        static char nf[] = "not found: try /metrics or /healthz\n";
        resp = MHD_create_response_from_buffer(sizeof(nf) - 1, nf,
                                               MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_NOT_FOUND;
    }
    if (resp == NULL) {
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

int
metrics_setup(void)
{
    struct sockaddr_in addr;
    char first[64];
    if (srv.conf.metrics_port == 0) {
        return 0;
    }
    /* The first bind address (IPv4); 0.0.0.0 in a container. */
    sscanf(srv.conf.bind, "%63s", first);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)srv.conf.metrics_port);
    if (inet_pton(AF_INET, first, &addr.sin_addr) != 1) {
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD,
                             (uint16_t)srv.conf.metrics_port, NULL, NULL,
                             serve, NULL, MHD_OPTION_SOCK_ADDR, &addr,
                             MHD_OPTION_CONNECTION_LIMIT, 64u,
                             MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                             MHD_OPTION_END);
    if (httpd == NULL) {
        log_warning("Could not start the metrics endpoint on %s:%lld",
                    first, (long long)srv.conf.metrics_port);
        return -1;
    }
    metrics_publish();
    log_notice("Metrics on http://%s:%lld/metrics", first,
               (long long)srv.conf.metrics_port);
    return 0;
}

void
metrics_teardown(void)
{
    if (httpd != NULL) {
        MHD_stop_daemon(httpd);
        httpd = NULL;
    }
    mem_free(snapshot);
    snapshot = NULL;
    snapshot_len = 0;
}
