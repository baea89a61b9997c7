/*
 * grpc.c - the connections of grpc-port, on the one event loop: bytes in
 * to the HTTP/2 session (protocol/h2.c), each complete call answered by
 * rls.c at once (no thread ever touches the keyspace), frames out.
 *
 * The limits RESP clients have hold here too, in this one place:
 * maxclients counts both kinds of connection; a connection idle for
 * `timeout` seconds is closed; one whose unsent answers pass
 * client-output-pause-limit is not read until they drain, and one past
 * client-output-hard-limit is closed. A client that sends anything but
 * HTTP/2 (the preface first) is closed; nothing it sends reaches another.
 *
 * Their memory has limits of its own, as Redis's client buffers have
 * (client-query-buffer-limit, maxmemory-clients), and it is not the
 * keyspace's: h2.c counts what every session holds in one budget, which
 * INFO shows as mem_clients_grpc and CLIENT LIST as each one's tot-mem,
 * and which maxmemory never sees (eviction compares mem_used(), which
 * h2.c's allocations are not part of), so a flood of calls cannot evict
 * a limiter's key. The limits bound request bodies, what a client makes a
 * connection hold by sending (h2.h): a call whose body would take its
 * connection past grpc-max-connection-memory is answered
 * RESOURCE_EXHAUSTED (h2.c says why that and not a close); when all of
 * them would pass grpc-max-memory, the connections holding the most are
 * closed; a stream still open grpc-stream-timeout ms after it began is
 * reset.
 *
 * Streaming calls (grpc_streams.c's table: Health/Watch...) are served
 * here too: h2.c turns their streams into events, which go to the row's
 * functions, and what those answer, and what each one's `due` has to push
 * at every cron tick, goes out on the stream. Bounded as the rest: their
 * number (grpc-max-streaming-calls), a client that stops sending on a
 * stream it keeps open (grpc-stream-idle-timeout), output the peer does
 * not take (client-output-hard-limit per call); grpc-stream-timeout does
 * not cut a healthy one, and `timeout` does not close a connection that
 * has one open: as Redis's does not close a subscriber, and as grpc-go's
 * MaxConnectionIdle counts a connection idle only while no call is open.
 */
#include "server/envoy/grpc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <uv.h>

#include "lib/time.h"
#include "protocol/h2.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/envoy/grpc_streams.h"
#include "server/envoy/rls.h"
#include "server/server.h"

/* A streaming call: its row and the state its open() made. */
struct gstream {
    struct gconn *g;
    int32_t id;
    bool reset;                     /* by h2.c: its GONE is on the way */
    const struct grpc_stream_service *svc;
    void *st;
    TAILQ_ENTRY(gstream) link;      /* its connection's streams */
};

struct gconn {
    uv_tcp_t tcp;
    TAILQ_HEAD(, gstream) streams;
    struct h2_conn *h2;             /* NULL once closing */
    uint64_t id;                    /* CLIENT LIST's, as RESP clients' */
    char addr[64], laddr[64];
    size_t unsent;                  /* bytes handed to uv_write, unsent */
    int64_t created_ms, last_ms;
    bool paused;
    bool closing;
    TAILQ_ENTRY(gconn) link;        /* conns */
};

struct gwrite {
    uv_write_t req;
    struct gconn *g;
    size_t len;
    unsigned char data[];
};

static uv_tcp_t listener;
static bool listening;
static size_t streaming_calls;      /* open on all connections */
/* Newest first. */
static TAILQ_HEAD(gconn_list, gconn) conns = TAILQ_HEAD_INITIALIZER(conns);

static bool make_room(struct h2_budget *b, size_t need,
                      const struct h2_conn *asking);

/* What every session holds, and the limits h2.c applies to it. */
static struct h2_budget budget = { .make_room = make_room };

/* ---- closing ------------------------------------------------------------ */

static void
on_closed(uv_handle_t *h)
{
    free(h->data);
}

static void
stream_drop(struct gstream *gs)
{
    gs->svc->close(gs->st);
    TAILQ_REMOVE(&gs->g->streams, gs, link);
    streaming_calls--;
    srv.stats.grpc_streaming_ended++;
    free(gs);
}

static void
gconn_close(struct gconn *g)
{
    if (g->closing) {
        return;
    }
    g->closing = true;
    while (!TAILQ_EMPTY(&g->streams)) {   /* h2_free tells nobody */
        stream_drop(TAILQ_FIRST(&g->streams));
    }
    TAILQ_REMOVE(&conns, g, link);
    srv.grpc_clients--;
    /* Its memory goes now, not in the close callback: make_room counts on
     * it, and nothing reads the session once the connection is closing. */
    h2_free(g->h2);
    g->h2 = NULL;
    rls_cancel(g);                  /* calls waiting on other nodes */
    uv_close((uv_handle_t *)&g->tcp, on_closed);
}

/* ---- memory ----------------------------------------------------------- */

/* The limits as configured now (CONFIG SET applies to every connection
 * from its next read on). */
static void
apply_limits(void)
{
    budget.max = (size_t)srv.conf.grpc_max_memory;
    budget.session_max = (size_t)srv.conf.grpc_max_connection_memory;
    budget.streaming = grpc_is_streaming;
    budget.stream_idle_ms = srv.conf.grpc_stream_idle_timeout;
    budget.stream_output_max = (size_t)srv.conf.output_hard_limit;
}

/* The connection whose requests hold more than asking's, and the most;
 * NULL when none does. */
static struct gconn *
largest_other(const struct h2_conn *asking)
{
    size_t most = h2_request_memory(asking);
    struct gconn *largest = NULL, *g;
    TAILQ_FOREACH(g, &conns, link) {
        if (g->h2 != NULL && g->h2 != asking &&
            h2_request_memory(g->h2) > most) {
            most = h2_request_memory(g->h2);
            largest = g;
        }
    }
    return largest;
}

static void
log_memory_close(const struct gconn *g)
{
    srv.stats.grpc_memory_limit_closes++;
    log_warning("Closing gRPC client %s: its requests held %zu bytes, the "
                "most, when gRPC requests reached grpc-max-memory (%zu "
                "bytes)", g->addr, h2_request_memory(g->h2), budget.max);
}

/* grpc-max-memory, as Redis's maxmemory-clients: the connections holding
 * the most go first, until the bytes asked for fit. Each one closed holds
 * more than asking, so each frees something. */
static bool
make_room(struct h2_budget *b, size_t need, const struct h2_conn *asking)
{
    while (b->requests + need > b->max) {
        struct gconn *g = largest_other(asking);
        if (g == NULL) {
            return false;           /* asking holds the most: h2.c ends it */
        }
        log_memory_close(g);
        gconn_close(g);
    }
    return true;
}

/* What h2.c counted at its limits goes into the server's statistics. */
static void
take_counts(const struct gconn *g)
{
    if (budget.refused_streams > 0) {
        log_verbose("gRPC client %s: %" PRIu64 " calls answered "
                    "RESOURCE_EXHAUSTED, its requests holding %zu bytes "
                    "(grpc-max-connection-memory)", g->addr,
                    budget.refused_streams, h2_request_memory(g->h2));
        srv.stats.grpc_refused_streams += budget.refused_streams;
        budget.refused_streams = 0;
    }
    if (budget.expired_streams > 0) {
        log_verbose("gRPC client %s: %" PRIu64 " streams reset, open past "
                    "grpc-stream-timeout", g->addr, budget.expired_streams);
        srv.stats.grpc_stream_timeouts += budget.expired_streams;
        budget.expired_streams = 0;
    }
    if (budget.idle_streams > 0) {
        log_verbose("gRPC client %s: %" PRIu64 " streaming calls reset, "
                    "silent past grpc-stream-idle-timeout", g->addr,
                    budget.idle_streams);
        srv.stats.grpc_streaming_idle_resets += budget.idle_streams;
        budget.idle_streams = 0;
    }
    if (budget.output_reset_streams > 0) {
        log_warning("gRPC client %s: %" PRIu64 " streaming calls reset, "
                    "their unsent messages past client-output-hard-limit",
                    g->addr, budget.output_reset_streams);
        srv.stats.grpc_streaming_output_resets += budget.output_reset_streams;
        budget.output_reset_streams = 0;
    }
}

size_t
grpc_streaming_calls(void)
{
    return streaming_calls;
}

size_t
grpc_memory(void)
{
    return budget.used;
}

size_t
grpc_request_memory(void)
{
    return budget.requests;
}

/* ---- writing ------------------------------------------------------------- */

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf);

static void
on_written(uv_write_t *req, int status)
{
    struct gwrite *w = (struct gwrite *)req;
    struct gconn *g = w->g;
    g->unsent -= w->len;
    free(w);
    if (g->closing) {
        return;
    }
    if (status != 0) {
        gconn_close(g);
        return;
    }
    if (g->paused && g->unsent <= (size_t)srv.conf.output_pause_limit / 2) {
        g->paused = false;
        uv_read_start((uv_stream_t *)&g->tcp, on_alloc, on_read);
    }
}

/* Everything the session has to send, gathered into one write: a
 * response is several frames (HEADERS, DATA, trailers), and a read can
 * complete many calls. */
static void
flush(struct gconn *g)
{
    const unsigned char *chunk;
    struct gwrite *w = NULL;
    size_t cap = 0, len = 0;
    long n;
    while ((n = h2_output(g->h2, &chunk)) > 0) {
        if (len + (size_t)n > cap) {
            cap = (len + (size_t)n) * 2;
            struct gwrite *bigger = realloc(w, sizeof(*w) + cap);
            if (bigger == NULL) {
                free(w);
                gconn_close(g);
                return;
            }
            w = bigger;
        }
        memcpy(w->data + len, chunk, (size_t)n);
        len += (size_t)n;
    }
    if (w != NULL) {
        w->g = g;
        w->len = len;
        uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
        if (uv_write(&w->req, (uv_stream_t *)&g->tcp, &b, 1, on_written) != 0) {
            free(w);
            gconn_close(g);
            return;
        }
        g->unsent += len;
    }
    if (n < 0 || (size_t)srv.conf.output_hard_limit < g->unsent) {
        if (n >= 0) {
            srv.stats.output_limit_closes++;
            log_warning("Closing gRPC client: %zu bytes of answers unsent "
                        "(client-output-hard-limit)", g->unsent);
        }
        gconn_close(g);
    } else if (!g->paused && g->unsent > (size_t)srv.conf.output_pause_limit) {
        g->paused = true;
        uv_read_stop((uv_stream_t *)&g->tcp);
    } else if (h2_done(g->h2) && g->unsent == 0) {
        gconn_close(g);
    }
}

/* ---- reading ------------------------------------------------------------- */

static void
log_failure(const struct gconn *g)
{
    switch (h2_failure(g->h2)) {
    case H2_OVER_BUDGET:
        log_memory_close(g);
        break;
    case H2_NO_MEMORY:
        log_warning("Closing gRPC client %s: out of memory", g->addr);
        break;
    default:
        log_verbose("Closing gRPC client %s: not HTTP/2, or a protocol "
                    "error", g->addr);
        break;
    }
}

/* Answer every call the session completed. */
static bool
serve(struct gconn *g)
{
    struct h2_call call;
    while (h2_next_call(g->h2, &call)) {
        struct rls_answer a = { NULL, 0, NULL, false };
        struct rls_caller caller = { g, call.stream };
        enum grpc_status st = call.refused != GRPC_OK
                              ? call.refused
                              : rls_serve(call.path, call.message, call.len,
                                          &caller, &a);
        const char *why = call.refused != GRPC_OK ? call.why : a.why;
        if (a.waiting) {
            continue;               /* answer_late() answers it */
        }
        int rc = h2_answer(g->h2, call.stream, st, why, a.message, a.len);
        if (rc != 0) {
            return false;
        }
    }
    return true;
}

/* ---- streaming calls ---------------------------------------------------- */

/* End the call with status (the service's state goes: no GONE follows).
 * false without memory. */
static bool
stream_end(struct gstream *gs, enum grpc_status status, const char *why)
{
    int rc = h2_stream_end(gs->g->h2, gs->id, status, why);
    stream_drop(gs);
    return rc == 0;
}

/* What a service answered: its message sent, then the end its status
 * asks for. false without memory. */
static bool
stream_result(struct gstream *gs, enum grpc_status status,
              const unsigned char *out, size_t out_len, const char *why)
{
    if (out != NULL && !gs->reset) {
        int rc = h2_stream_send(gs->g->h2, gs->id, out, out_len);
        if (rc < 0) {
            return false;
        }
        gs->reset = rc > 0;         /* at its output limit: GONE comes */
    }
    if (status != GRPC_OK && !gs->reset) {
        return stream_end(gs, status, why);
    }
    return true;
}

/* The service's own pushes, a few at most per turn (the next tick asks
 * again). false without memory. */
#define DUE_PER_TURN 8

static bool
stream_pump(struct gstream *gs, int64_t now)
{
    for (int i = 0; i < DUE_PER_TURN && !gs->reset; i++) {
        const unsigned char *out = NULL;
        size_t out_len = 0;
        const char *why = NULL;
        enum grpc_status st = gs->svc->due(gs->st, now, &out, &out_len, &why);
        if (st != GRPC_OK) {
            return stream_result(gs, st, out, out_len, why);
        }
        if (out == NULL) {
            break;
        }
        if (!stream_result(gs, st, out, out_len, why)) {
            return false;
        }
    }
    return true;
}

static bool
refuse_stream(struct gconn *g, int32_t id, enum grpc_status status,
              const char *why)
{
    return h2_stream_end(g->h2, id, status, why) == 0;
}

/* A streaming call's headers: its row opens it, within
 * grpc-max-streaming-calls. */
static bool
stream_open(struct gconn *g, const struct h2_event *ev, int64_t now)
{
    const struct grpc_stream_service *svc = grpc_stream_service(ev->path);
    enum grpc_status refuse = GRPC_UNAVAILABLE;
    const char *why = "the service refused the call";
    if (streaming_calls >= (size_t)srv.conf.grpc_max_streaming_calls) {
        srv.stats.grpc_streaming_refused++;
        return refuse_stream(g, ev->stream, GRPC_RESOURCE_EXHAUSTED,
                             "too many streaming calls are open "
                             "(grpc-max-streaming-calls)");
    }
    if (svc == NULL) {              /* (its predicate is the table's) */
        return refuse_stream(g, ev->stream, GRPC_UNIMPLEMENTED, why);
    }
    struct gstream *gs = calloc(1, sizeof(*gs));
    if (gs == NULL) {
        return refuse_stream(g, ev->stream, GRPC_RESOURCE_EXHAUSTED,
                             "out of memory");
    }
    gs->st = svc->open(g, ev->stream, now, &refuse, &why);
    if (gs->st == NULL) {
        free(gs);
        return refuse_stream(g, ev->stream, refuse, why);
    }
    gs->g = g;
    gs->id = ev->stream;
    gs->svc = svc;
    TAILQ_INSERT_TAIL(&g->streams, gs, link);
    h2_stream_set_user(g->h2, ev->stream, gs);
    streaming_calls++;
    srv.stats.grpc_streaming_opened++;
    return stream_pump(gs, now);
}

static bool
stream_message(struct gstream *gs, const struct h2_event *ev, int64_t now)
{
    const unsigned char *out = NULL;
    size_t out_len = 0;
    const char *why = NULL;
    enum grpc_status st = gs->svc->message(gs->st, ev->message, ev->len, now,
                                           &out, &out_len, &why);
    if (!stream_result(gs, st, out, out_len, why)) {
        return false;
    }
    return st != GRPC_OK || stream_pump(gs, now);
}

static bool
stream_half_closed(struct gstream *gs)
{
    enum grpc_status st = GRPC_OK;
    const char *why = NULL;
    if (gs->svc->half_closed != NULL &&
        !gs->svc->half_closed(gs->st, &st, &why)) {
        return true;
    }
    return stream_end(gs, st, why);
}

/* Every event h2.c has for the connection's streaming calls; false
 * without memory. */
static bool
serve_events(struct gconn *g)
{
    struct h2_event ev;
    int64_t now = clock_loop_ms();
    bool ok = true;
    while (ok && h2_next_event(g->h2, &ev)) {
        struct gstream *gs = ev.user;
        if (ev.kind == H2_OPEN) {
            ok = stream_open(g, &ev, now);
        } else if (gs == NULL) {
            continue;               /* refused at OPEN, or never opened */
        } else if (ev.kind == H2_MESSAGE) {
            ok = stream_message(gs, &ev, now);
        } else if (ev.kind == H2_HALF_CLOSED) {
            ok = stream_half_closed(gs);
        } else {
            stream_drop(gs);        /* GONE */
        }
    }
    return ok;
}

/* Every streaming call's pushes (from cron); false without memory. */
static bool
pump_all(struct gconn *g, int64_t now)
{
    for (struct gstream *gs = TAILQ_FIRST(&g->streams), *next; gs != NULL;
         gs = next) {
        next = TAILQ_NEXT(gs, link);
        if (!stream_pump(gs, now)) {
            return false;
        }
    }
    return true;
}

/* A call that waited on other nodes of the cluster (rls_forward.c); its
 * connection is open (closing one drops its waiting calls). */
static void
answer_late(const struct rls_caller *caller, enum grpc_status status,
            const struct rls_answer *a)
{
    struct gconn *g = caller->ctx;
    if (h2_answer(g->h2, caller->stream, status, a->why, a->message,
                  a->len) != 0) {
        gconn_close(g);
        return;
    }
    flush(g);
}

static void
on_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf)
{
    static char space[65536];       /* consumed before the next read */
    (void)h;
    (void)want;
    *buf = uv_buf_init(space, sizeof(space));
}

static void
on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct gconn *g = s->data;
    if (n == 0 || g->closing) {
        return;
    }
    if (n < 0) {
        gconn_close(g);
        return;
    }
    g->last_ms = clock_loop_ms();
    apply_limits();
    int rc = h2_feed(g->h2, (const unsigned char *)buf->base, (size_t)n,
                     g->last_ms);
    take_counts(g);
    if (rc != 0) {
        log_failure(g);
        flush(g);                   /* a GOAWAY, if there is one */
        gconn_close(g);
        return;
    }
    if (!serve_events(g) || !serve(g)) {
        gconn_close(g);
        return;
    }
    flush(g);
}

/* ---- accepting ----------------------------------------------------------- */

static void
describe_peer(struct gconn *g)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    if (uv_tcp_getpeername(&g->tcp, (struct sockaddr *)&ss, &len) == 0) {
        client_format_addr(&ss, g->addr, sizeof(g->addr));
    }
    len = sizeof(ss);
    if (uv_tcp_getsockname(&g->tcp, (struct sockaddr *)&ss, &len) == 0) {
        client_format_addr(&ss, g->laddr, sizeof(g->laddr));
    }
}

static void
on_connection(uv_stream_t *server, int status)
{
    struct gconn *g;
    if (status != 0 || (g = calloc(1, sizeof(*g))) == NULL) {
        return;
    }
    TAILQ_INIT(&g->streams);
    g->id = ++srv.next_client_id;
    g->created_ms = g->last_ms = clock_loop_ms();
    snprintf(g->addr, sizeof(g->addr), "?:0");
    snprintf(g->laddr, sizeof(g->laddr), "?:0");
    uv_tcp_init(srv.loop, &g->tcp);
    g->tcp.data = g;
    TAILQ_INSERT_HEAD(&conns, g, link);
    srv.grpc_clients++;
    srv.stats.connections_received++;
    if (uv_accept(server, (uv_stream_t *)&g->tcp) != 0) {
        gconn_close(g);
        return;
    }
    if (srv.nclients + srv.grpc_clients > (size_t)srv.conf.maxclients) {
        srv.stats.rejected_connections++;
        gconn_close(g);             /* HTTP/2 has no word for it: close */
        return;
    }
    describe_peer(g);
    g->h2 = h2_new((size_t)srv.conf.grpc_max_message, 100, &budget);
    if (g->h2 == NULL) {
        gconn_close(g);
        return;
    }
    uv_tcp_nodelay(&g->tcp, 1);
    uv_read_start((uv_stream_t *)&g->tcp, on_alloc, on_read);
    flush(g);                       /* the server's SETTINGS */
}

int
grpc_setup(void)
{
    char addr[256];
    struct sockaddr_storage ss;
    if (srv.conf.grpc_port == 0) {
        return 0;
    }
    rls_late_answer(answer_late);
    const char *from = srv.conf.grpc_bind[0] != '\0' ? srv.conf.grpc_bind
                                                     : srv.conf.bind;
    size_t len = strcspn(from, " \t");
    snprintf(addr, sizeof(addr), "%.*s", (int)len, from);
    int port = (int)srv.conf.grpc_port;
    bool v6 = strchr(addr, ':') != NULL;
    int rc = v6 ? uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&ss)
                : uv_ip4_addr(addr, port, (struct sockaddr_in *)&ss);
    if (rc == 0) {
        uv_tcp_init(srv.loop, &listener);
        listening = true;
        rc = uv_tcp_bind(&listener, (struct sockaddr *)&ss,
                         v6 ? UV_TCP_IPV6ONLY : 0);
    }
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *)&listener, (int)srv.conf.tcp_backlog,
                       on_connection);
    }
    if (rc != 0) {
        log_warning("Could not listen for gRPC on %s:%d: %s", addr, port,
                    uv_strerror(rc));
        return -1;
    }
    log_notice("Ready to accept gRPC (Envoy rate limit service) on %s "
               "port %d", addr, port);
    return 0;
}

/* A connection's streaming calls at a cron tick: their idle bound, their
 * pushes, and the events both made. */
static void
cron_streams(struct gconn *g, int64_t now, int64_t stall_ms)
{
    size_t reset = h2_expire(g->h2, now, stall_ms);
    take_counts(g);
    if (!pump_all(g, now) || !serve_events(g)) {
        gconn_close(g);
        return;
    }
    if (reset > 0 || !TAILQ_EMPTY(&g->streams)) {
        flush(g);                   /* the RST_STREAMs, the pushes */
    }
}

void
grpc_cron(void)
{
    int64_t timeout_ms = srv.conf.timeout * MS_PER_SEC, now = clock_loop_ms();
    int64_t stall_ms = srv.conf.grpc_stream_timeout;
    apply_limits();
    for (struct gconn *g = TAILQ_FIRST(&conns), *next; g != NULL; g = next) {
        next = TAILQ_NEXT(g, link);
        if (timeout_ms > 0 && now - g->last_ms > timeout_ms &&
            h2_pending(g->h2) == 0 && h2_streaming(g->h2) == 0) {
            srv.stats.idle_timeout_closes++;
            gconn_close(g);
        } else if (!TAILQ_EMPTY(&g->streams)) {
            cron_streams(g, now, stall_ms);
        } else if (h2_expire(g->h2, now, stall_ms) > 0) {
            take_counts(g);
            (void)serve_events(g);  /* (only GONEs of calls never opened) */
            flush(g);               /* the RST_STREAMs */
        }
    }
}

/* ---- CLIENT LIST and KILL --------------------------------------------- */

static void
describe(const struct gconn *g, struct grpc_client *c)
{
    uv_os_fd_t fd = -1;
    if (uv_fileno((const uv_handle_t *)&g->tcp, &fd) != 0) {
        fd = -1;
    }
    c->id = g->id;
    c->addr = g->addr;
    c->laddr = g->laddr;
    c->fd = (int)fd;
    c->created_ms = g->created_ms;
    c->last_ms = g->last_ms;
    struct h2_usage held = h2_usage(g->h2);
    c->qbuf = held.request_bytes;
    c->qbuf_free = held.request_memory - held.request_bytes;
    c->omem = g->unsent;
    c->tot_mem = held.memory + g->unsent;
}

/* Oldest first, as RESP clients are listed (by id). */
void
grpc_each_client(void (*fn)(const struct grpc_client *c, void *arg),
                 void *arg)
{
    struct gconn *g;
    TAILQ_FOREACH_REVERSE(g, &conns, gconn_list, link) {
        struct grpc_client c;
        describe(g, &c);
        fn(&c, arg);
    }
}

size_t
grpc_kill(bool (*match)(const struct grpc_client *c, void *arg), void *arg)
{
    size_t n = 0;
    for (struct gconn *g = TAILQ_FIRST(&conns), *next; g != NULL; g = next) {
        struct grpc_client c;
        next = TAILQ_NEXT(g, link);
        describe(g, &c);
        if (match(&c, arg)) {
            gconn_close(g);
            n++;
        }
    }
    return n;
}

/* Shutting down: each streaming call's last push (Watch's NOT_SERVING),
 * then UNAVAILABLE, as a gRPC server that stops ends its calls. */
static void
end_streams(struct gconn *g)
{
    int64_t now = clock_loop_ms();
    if (TAILQ_EMPTY(&g->streams)) {
        return;
    }
    for (struct gstream *gs = TAILQ_FIRST(&g->streams), *next; gs != NULL;
         gs = next) {
        const unsigned char *out = NULL;
        size_t out_len = 0;
        const char *why = NULL;
        next = TAILQ_NEXT(gs, link);
        (void)gs->svc->due(gs->st, now, &out, &out_len, &why);
        if (!stream_result(gs, GRPC_UNAVAILABLE, out, out_len,
                           "the server is shutting down")) {
            return;
        }
    }
    flush(g);
}

void
grpc_shutdown(void)
{
    struct gconn *g;
    TAILQ_FOREACH(g, &conns, link) {
        end_streams(g);
    }
    while (!TAILQ_EMPTY(&conns)) {
        gconn_close(TAILQ_FIRST(&conns));
    }
    rls_forward_shutdown();
    if (listening) {
        uv_close((uv_handle_t *)&listener, NULL);
        listening = false;
    }
}
