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
 */
#include "server/grpc.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "protocol/h2.h"
#include "server/log.h"
#include "server/rls.h"
#include "server/server.h"

struct gconn {
    uv_tcp_t tcp;
    struct h2_conn *h2;
    size_t unsent;                  /* bytes handed to uv_write, unsent */
    int64_t last_ms;
    bool paused;
    bool closing;
    struct gconn *prev, *next;
};

struct gwrite {
    uv_write_t req;
    struct gconn *g;
    size_t len;
    unsigned char data[];
};

static uv_tcp_t listener;
static bool listening;
static struct gconn *conns;

static int64_t
now_ms(void)
{
    return (int64_t)(uv_now(srv.loop));
}

/* ---- closing ------------------------------------------------------------ */

static void
on_closed(uv_handle_t *h)
{
    struct gconn *g = h->data;
    h2_free(g->h2);
    free(g);
}

static void
gconn_close(struct gconn *g)
{
    if (g->closing) {
        return;
    }
    g->closing = true;
    if (g->prev != NULL) {
        g->prev->next = g->next;
    } else {
        conns = g->next;
    }
    if (g->next != NULL) {
        g->next->prev = g->prev;
    }
    srv.grpc_clients--;
    uv_close((uv_handle_t *)&g->tcp, on_closed);
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

/* Answer every call the session completed. */
static bool
serve(struct gconn *g)
{
    struct h2_call call;
    while (h2_next_call(g->h2, &call)) {
        struct rls_answer a = { NULL, 0, NULL };
        enum grpc_status st = call.refused != GRPC_OK
                              ? call.refused
                              : rls_serve(call.path, call.message, call.len,
                                          &a);
        const char *why = call.refused != GRPC_OK ? call.why : a.why;
        int rc = h2_answer(g->h2, call.stream, st, why, a.message, a.len);
        if (rc != 0) {
            return false;
        }
    }
    return true;
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
    g->last_ms = now_ms();
    if (h2_feed(g->h2, (const unsigned char *)buf->base, (size_t)n) != 0) {
        log_verbose("Closing gRPC client: not HTTP/2, or a protocol error");
        flush(g);                   /* a GOAWAY, if there is one */
        gconn_close(g);
        return;
    }
    if (!serve(g)) {
        gconn_close(g);
        return;
    }
    flush(g);
}

/* ---- accepting ----------------------------------------------------------- */

static void
on_connection(uv_stream_t *server, int status)
{
    struct gconn *g;
    if (status != 0 || (g = calloc(1, sizeof(*g))) == NULL) {
        return;
    }
    uv_tcp_init(srv.loop, &g->tcp);
    g->tcp.data = g;
    g->next = conns;
    if (conns != NULL) {
        conns->prev = g;
    }
    conns = g;
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
    g->h2 = h2_new((size_t)srv.conf.grpc_max_message, 100);
    if (g->h2 == NULL) {
        gconn_close(g);
        return;
    }
    uv_tcp_nodelay(&g->tcp, 1);
    g->last_ms = now_ms();
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

void
grpc_cron(void)
{
    int64_t timeout_ms = srv.conf.timeout * 1000, now = now_ms();
    for (struct gconn *g = conns, *next; g != NULL; g = next) {
        next = g->next;
        if (timeout_ms > 0 && now - g->last_ms > timeout_ms &&
            h2_pending(g->h2) == 0) {
            srv.stats.idle_timeout_closes++;
            gconn_close(g);
        }
    }
}

void
grpc_shutdown(void)
{
    while (conns != NULL) {
        gconn_close(conns);
    }
    if (listening) {
        uv_close((uv_handle_t *)&listener, NULL);
        listening = false;
    }
}
