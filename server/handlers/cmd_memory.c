/*
 * cmd_memory.c - MEMORY USAGE, STATS, MALLOC-STATS, PURGE, HELP, with
 * Redis 7's replies for what cellgate can report truthfully: a key's bytes
 * are what it really holds (keyspace_key_bytes()), and MEMORY STATS leaves
 * out the fields cellgate does not count apart (the replication backlog,
 * the AOF buffer, Lua's caches) and jemalloc's own counters.
 */
#include <string.h>
#include <strings.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/multi.h"
#include "server/server.h"

HANDLER_VARIANT(memory_command, cmd_dispatch_subcommand,
                cmd_lookup("memory", 6))

/* MEMORY USAGE key [SAMPLES count]: SAMPLES is checked as Redis checks
 * it; every key is measured whole. */
void
memory_usage_command(struct conn *c, struct resp_request *req)
{
    for (size_t i = 3; i < req->argc; i += 2) {
        int64_t n;
        if (req->argvlen[i] != 7 || strcasecmp(req->argv[i], "samples") != 0 ||
            i + 1 >= req->argc) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
        if (!num_parse_i64(req->argv[i + 1], req->argvlen[i + 1], &n)) {
            cmd_error(c, ERR_NOT_INTEGER);
            return;
        }
        if (n < 0) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
    }
    struct key_hint h = { 0 };
    struct store_rec *r = keyspace_lookup(&h, req->argv[2], req->argvlen[2],
                                          clock_wall_now());
    if (r == NULL) {
        reply_null(&c->out, c->proto);
    } else {
        reply_int(&c->out, (int64_t)keyspace_key_bytes(r));
    }
}

/* Output buffers, parsers and transaction queues of the clients. */
static size_t
clients_bytes(void)
{
    size_t n = 0;
    for (struct conn *x = srv.clients; x != NULL; x = x->next) {
        struct obuf_stats ob, wb;
        obuf_stats(&x->out, &ob);
        obuf_stats(&x->wbuf, &wb);
        n += resp_memory(x->parser) + multi_memory(x) + ob.omem + wb.omem +
             (x->out.head != NULL ? OBUF_CHUNK_SIZE : 0) +
             (x->wbuf.head != NULL ? OBUF_CHUNK_SIZE : 0);
    }
    return n;
}

static void
stat_int(struct conn *c, const char *name, size_t v)
{
    reply_bulkz(&c->out, name);
    reply_int(&c->out, (int64_t)v);
}

static void
stat_double(struct conn *c, const char *name, double v)
{
    reply_bulkz(&c->out, name);
    reply_double(&c->out, v, c->proto);
}

/* One db.N entry per database holding keys: its hash table's buckets. */
static size_t
reply_databases(struct conn *c, size_t *tables)
{
    char name[32];
    size_t n = 0;
    for (size_t i = 0; i < srv.ndbs; i++) {
        const struct store *s = srv.dbs[i];
        if (s == NULL || store_size(s) == 0) {
            continue;
        }
        size_t bytes = store_usage(s).table_bytes;
        snprintf(name, sizeof(name), "db.%zu", i);
        reply_bulkz(&c->out, name);
        reply_map(&c->out, 1, c->proto);
        stat_int(c, "overhead.hashtable.main", bytes);
        *tables += bytes;
        n++;
    }
    return n;
}

static size_t
non_empty_databases(void)
{
    size_t n = 0;
    for (size_t i = 0; i < srv.ndbs; i++) {
        n += srv.dbs[i] != NULL && store_size(srv.dbs[i]) > 0;
    }
    return n;
}

void
memory_stats_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    size_t used = mem_used(), peak = mem_peak(), rss = mem_rss();
    size_t startup = srv.startup_allocated, clients = clients_bytes();
    size_t keys = keyspace_total_keys(), tables = 0;
    size_t net = used > startup ? used - startup : 0;
    reply_map(&c->out, 13 + non_empty_databases(), c->proto);
    stat_int(c, "peak.allocated", peak);
    stat_int(c, "total.allocated", used);
    stat_int(c, "startup.allocated", startup);
    stat_int(c, "clients.normal", clients);
    reply_databases(c, &tables);
    size_t overhead = startup + clients + tables;
    size_t dataset = used > overhead ? used - overhead : 0;
    stat_int(c, "overhead.total", overhead);
    stat_int(c, "keys.count", keys);
    stat_int(c, "keys.bytes-per-key", keys ? net / keys : 0);
    stat_int(c, "dataset.bytes", dataset);
    stat_double(c, "dataset.percentage",
                net ? (double)dataset * 100.0 / (double)net : 0.0);
    stat_double(c, "peak.percentage",
                peak ? (double)used * 100.0 / (double)peak : 0.0);
    stat_int(c, "rss.bytes", rss);
    stat_double(c, "fragmentation", used ? (double)rss / (double)used : 0.0);
    stat_int(c, "fragmentation.bytes", rss > used ? rss - used : 0);
}

void
memory_malloc_stats_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    /* Redis's answer when not built with jemalloc. */
    reply_verbatim(&c->out, "Stats not supported for the current allocator",
                   45, c->proto);
}

void
memory_purge_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    mem_trim();
    reply_ok(&c->out);
}

