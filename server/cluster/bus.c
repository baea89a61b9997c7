/*
 * bus.c - the cluster bus's sockets (cluster-enabled yes): the listener on
 * the cluster port, links to and from other nodes, frames in and out, the
 * cron timer, and the counters CLUSTER INFO and CLUSTER LINKS show.
 *
 * As Redis's: each node has at most one outbound link (node->link, made
 * by the cron, which sends the PINGs and gets their PONGs) and one
 * inbound link (node->inbound_link, accepted, tied to its node once a
 * message names a known sender). A frame is read whole before it is
 * processed: its first 8 bytes give the signature and length (checked
 * against BUS_FRAME_MAX, since the port takes anyone), the rest is
 * gathered in the link's buffer. A frame that fails its checks is
 * ignored; a bad signature or length closes the link, as Redis does.
 *
 * Sending never blocks: each message is one libuv write, and the bytes
 * not yet written are the link's send buffer. When they pass
 * cluster-link-sendbuf-limit the cron frees the link (Redis's
 * total_cluster_links_buffer_limit_exceeded); the cron makes a new one.
 *
 * A freed link is closed through uv_close: its memory goes in the close
 * callback, after libuv has called back every pending write, so nothing
 * refers to it after.
 */
#include <stdio.h>
#include <string.h>
#include <sys/queue.h>
#include <uv.h>

#include "lib/mem.h"
#include "lib/textbuf.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cluster/bus.h"
#include "server/cluster/bus_link.h"
#include "server/cluster/view.h"
#include "server/log.h"
#include "server/server.h"

#define BUS_CRON_MS 100
#define BUS_FRAME_MAX (64u << 20)       /* a frame longer closes the link */
#define BUS_READ_CHUNK 65536
#define BUS_MAX_LISTENERS 16

struct bus_link {
    uv_tcp_t tcp;
    uv_connect_t creq;
    struct cluster_node_v *node;
    bool inbound;
    bool closing;
    int64_t ctime;                      /* ms, CLUSTER LINKS' create-time */
    uint8_t *rbuf;                      /* a frame being gathered */
    size_t rlen;
    size_t rcap;
    size_t queued;                      /* bytes written but not done */
    TAILQ_ENTRY(bus_link) all;
};

struct bus_write {
    uv_write_t req;
    struct bus_link *link;
    size_t len;
    uint8_t data[];
};

static TAILQ_HEAD(, bus_link) links = TAILQ_HEAD_INITIALIZER(links);
static uv_tcp_t listeners[BUS_MAX_LISTENERS];
static size_t nlisteners;
static uv_timer_t cron_timer;
static uv_prepare_t before_sleep;
static bool running;
static const struct bus_events *above;
static uint8_t read_chunk[BUS_READ_CHUNK];

static struct {
    long long sent[CMSG_TYPE_COUNT];
    long long received[CMSG_TYPE_COUNT];
    unsigned long long limit_exceeded;
} stats;

static int64_t
now_ms(void)
{
    return clock_wall_us() / 1000;
}

/* ---- links ----------------------------------------------------------- */

struct cluster_node_v *
bus_link_node(const struct bus_link *l)
{
    return l->node;
}

bool
bus_link_inbound(const struct bus_link *l)
{
    return l->inbound;
}

bool
bus_link_closing(const struct bus_link *l)
{
    return l->closing;
}

int64_t
bus_link_ctime(const struct bus_link *l)
{
    return l->ctime;
}

static struct bus_link *
link_new(struct cluster_node_v *node)
{
    struct bus_link *l = mem_calloc(1, sizeof(*l));
    if (l == NULL) {
        return NULL;
    }
    l->node = node;
    l->inbound = node == NULL;
    l->ctime = now_ms();
    uv_tcp_init(srv.loop, &l->tcp);
    l->tcp.data = l;
    TAILQ_INSERT_TAIL(&links, l, all);
    if (node != NULL) {
        node->link = l;
    }
    return l;
}

static void
on_link_closed(uv_handle_t *h)
{
    struct bus_link *l = h->data;
    mem_free(l->rbuf);
    mem_free(l);
}

void
bus_link_free(struct bus_link *l)
{
    if (l->closing) {
        return;
    }
    l->closing = true;
    if (l->node != NULL) {
        if (l->node->link == l) {
            l->node->link = NULL;
        } else if (l->node->inbound_link == l) {
            l->node->inbound_link = NULL;
        }
        l->node = NULL;
    }
    TAILQ_REMOVE(&links, l, all);
    uv_close((uv_handle_t *)&l->tcp, on_link_closed);
}

void
bus_link_set_inbound_node(struct bus_link *l, struct cluster_node_v *n)
{
    if (n->inbound_link != NULL && n->inbound_link != l) {
        bus_link_free(n->inbound_link);
    }
    n->inbound_link = l;
    l->node = n;
}

static int
addr_text(const struct sockaddr_storage *ss, char *ip, size_t len)
{
    if (ss->ss_family == AF_INET6) {
        return uv_ip6_name((const struct sockaddr_in6 *)ss, ip, len);
    }
    return uv_ip4_name((const struct sockaddr_in *)ss, ip, len);
}

/* The local (this node's, as the peer reached it) or the peer's address
 * of l's socket. */
static int
link_addr(const struct bus_link *l, bool local, char *ip, size_t len)
{
    struct sockaddr_storage ss;
    int n = sizeof(ss);
    int rc = local ? uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &n)
                   : uv_tcp_getpeername(&l->tcp, (struct sockaddr *)&ss, &n);
    if (rc != 0) {
        return -1;
    }
    return addr_text(&ss, ip, len) == 0 ? 0 : -1;
}

int
bus_link_sockname(const struct bus_link *l, char *ip, size_t len)
{
    return link_addr(l, true, ip, len);
}

int
bus_link_peername(const struct bus_link *l, char *ip, size_t len)
{
    return link_addr(l, false, ip, len);
}

/* ---- writing --------------------------------------------------------- */

static void
on_written(uv_write_t *req, int status)
{
    struct bus_write *w = (struct bus_write *)req;
    struct bus_link *l = w->link;
    l->queued -= w->len;
    mem_free(w);
    if (status < 0 && status != UV_ECANCELED && !l->closing) {
        log_debug("I/O error writing to node link: %s", uv_strerror(status));
        bus_link_free(l);
    }
}

void
bus_send(struct bus_link *l, const struct cmsg *m)
{
    if (l == NULL || l->closing) {
        return;
    }
    size_t len = cmsg_size(m);
    struct bus_write *w = mem_malloc(sizeof(*w) + len);
    if (w == NULL) {
        return;                     /* as a lost message: the cron retries */
    }
    w->link = l;
    w->len = cmsg_encode(m, w->data);
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->len);
    if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &b, 1, on_written) != 0) {
        mem_free(w);
        bus_link_free(l);
        return;
    }
    l->queued += w->len;
    if (m->type < CMSG_TYPE_COUNT) {
        stats.sent[m->type]++;
    }
}

void
bus_broadcast(const struct cmsg *m)
{
    for (size_t i = 0; i < cview.nnodes; i++) {
        struct cluster_node_v *n = cview.nodes[i];
        if (n->flags & (VIEW_NODE_MYSELF | VIEW_NODE_HANDSHAKE)) {
            continue;
        }
        bus_send(n->link, m);
    }
}

/* ---- reading --------------------------------------------------------- */

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    *buf = uv_buf_init((char *)read_chunk, sizeof(read_chunk));
}

/* Room for n more bytes in l's frame buffer. */
static bool
rbuf_reserve(struct bus_link *l, size_t n)
{
    if (l->rcap - l->rlen >= n) {
        return true;
    }
    size_t cap = l->rlen + n < 4096 ? 4096 : (l->rlen + n) * 2;
    uint8_t *p = mem_realloc(l->rbuf, cap);
    if (p == NULL) {
        return false;
    }
    l->rbuf = p;
    l->rcap = cap;
    return true;
}

/* Take bytes into the frame being gathered, processing each frame once
 * whole. false when the link was freed (bad frame, or by processing). */
static bool
take_bytes(struct bus_link *l, const uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t want = 8;
        uint32_t totlen = 0;
        if (l->rlen >= 8) {
            if (cmsg_frame_len(l->rbuf, BUS_FRAME_MAX, &totlen) != CMSG_OK) {
                log_warning("Bad message length or signature received "
                            "from Cluster bus.");
                bus_link_free(l);
                return false;
            }
            want = totlen;
        }
        size_t take = want - l->rlen < n ? want - l->rlen : n;
        if (!rbuf_reserve(l, take)) {
            bus_link_free(l);
            return false;
        }
        memcpy(l->rbuf + l->rlen, p, take);
        l->rlen += take;
        p += take;
        n -= take;
        if (l->rlen >= 8 && l->rlen == totlen) {
            l->rlen = 0;
            if (!above->process(l, l->rbuf, totlen) || l->closing) {
                return false;
            }
            if (l->rcap > 65536) {      /* a big frame's room goes back */
                mem_free(l->rbuf);
                l->rbuf = NULL;
                l->rcap = 0;
            }
        }
    }
    return true;
}

static void
on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct bus_link *l = s->data;
    if (l->closing) {
        return;
    }
    if (nread < 0) {
        log_debug("I/O error reading from node link: %s",
                  nread == UV_EOF ? "connection closed" : uv_strerror((int)nread));
        bus_link_free(l);
        return;
    }
    take_bytes(l, (const uint8_t *)buf->base, (size_t)nread);
}

void
bus_count_received(unsigned type)
{
    if (type < CMSG_TYPE_COUNT) {
        stats.received[type]++;
    }
}

/* ---- connecting and accepting ------------------------------------------ */

static void
on_connected(uv_connect_t *req, int status)
{
    struct bus_link *l = req->data;
    if (l->closing) {
        return;
    }
    if (status != 0) {
        log_verbose("Connection with Node %.40s at %s:%d failed: %s",
                    l->node->name, l->node->ip, l->node->cport,
                    uv_strerror(status));
        bus_link_free(l);
        return;
    }
    uv_tcp_nodelay(&l->tcp, 1);
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
    above->connected(l);
}

bool
bus_connect(struct cluster_node_v *n)
{
    struct sockaddr_storage ss;
    int rc = strchr(n->ip, ':') != NULL
                 ? uv_ip6_addr(n->ip, n->cport, (struct sockaddr_in6 *)&ss)
                 : uv_ip4_addr(n->ip, n->cport, (struct sockaddr_in *)&ss);
    if (rc != 0 || n->cport <= 0 || n->cport > 65535) {
        return false;
    }
    struct bus_link *l = link_new(n);
    if (l == NULL) {
        return false;
    }
    l->creq.data = l;
    rc = uv_tcp_connect(&l->creq, &l->tcp, (struct sockaddr *)&ss,
                        on_connected);
    if (rc != 0) {
        log_verbose("Connection with Node %.40s at %s:%d failed: %s",
                    n->name, n->ip, n->cport, uv_strerror(rc));
        bus_link_free(l);
        return false;
    }
    return true;
}

static void
on_accept(uv_stream_t *server, int status)
{
    if (status != 0) {
        return;
    }
    struct bus_link *l = link_new(NULL);
    if (l == NULL) {
        return;
    }
    if (uv_accept(server, (uv_stream_t *)&l->tcp) != 0) {
        bus_link_free(l);
        return;
    }
    uv_tcp_nodelay(&l->tcp, 1);
    uv_tcp_keepalive(&l->tcp, 1,
                     (unsigned)(srv.conf.cluster_node_timeout / 1000 * 2 + 1));
    uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read);
}

/* ---- the listener ---------------------------------------------------- */

/* The cluster port: cluster-port, or the client port + 10000. */
static int
cluster_port(void)
{
    if (srv.conf.cluster_port != 0) {
        return (int)srv.conf.cluster_port;
    }
    return (int)srv.conf.port + VIEW_PORT_INCR;
}

/* One listener per bind address, as Redis binds its cluster port. */
static int
listen_on(const char *word, int port, char *err, size_t errlen)
{
    bool optional = word[0] == '-';
    const char *addr = optional ? word + 1 : word;
    struct sockaddr_storage ss;
    if (strcmp(addr, "*") == 0) {
        addr = "0.0.0.0";
    } else if (strcmp(addr, "::*") == 0) {
        addr = "::";
    }
    bool v6 = strchr(addr, ':') != NULL;
    int rc = v6 ? uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&ss)
                : uv_ip4_addr(addr, port, (struct sockaddr_in *)&ss);
    if (rc != 0 || nlisteners == BUS_MAX_LISTENERS) {
        return 0;
    }
    uv_tcp_t *t = &listeners[nlisteners];
    uv_tcp_init(srv.loop, t);
    rc = uv_tcp_bind(t, (struct sockaddr *)&ss, v6 ? UV_TCP_IPV6ONLY : 0);
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *)t, 511, on_accept);
    }
    if (rc != 0) {
        uv_close((uv_handle_t *)t, NULL);
        if (optional || v6) {
            return 0;
        }
        snprintf(err, errlen, "Could not bind the cluster bus port %s:%d: %s",
                 addr, port, uv_strerror(rc));
        return -1;
    }
    nlisteners++;
    return 0;
}

static void
on_cron(uv_timer_t *t)
{
    (void)t;
    above->cron();
    uint64_t limit = (uint64_t)srv.conf.cluster_link_sendbuf_limit;
    struct bus_link *l, *next;
    for (l = TAILQ_FIRST(&links); l != NULL; l = next) {
        next = TAILQ_NEXT(l, all);
        if (limit != 0 && l->node != NULL && l->queued > limit) {
            log_warning("Freeing cluster link(%s node %.40s, used memory: "
                        "%zu) due to exceeding send buffer memory limit.",
                        l->inbound ? "from" : "to", l->node->name, l->queued);
            bus_link_free(l);
            stats.limit_exceeded++;
        }
    }
}

static void
on_before_sleep(uv_prepare_t *p)
{
    (void)p;
    above->before_sleep();
}

int
bus_listen(const struct bus_events *ev, char *err, size_t errlen)
{
    char words[1024];
    above = ev;
    int port = cluster_port();
    if (port <= 0 || port > 65535) {
        snprintf(err, errlen, "Redis port number too high. Cluster "
                 "communication port is 10,000 port numbers higher than "
                 "your Redis port. Your Redis port number must be 55535 or "
                 "less.");
        return -1;
    }
    snprintf(words, sizeof(words), "%s", srv.conf.bind);
    char *save = NULL;
    for (char *w = strtok_r(words, " ", &save); w != NULL;
         w = strtok_r(NULL, " ", &save)) {
        if (listen_on(w, port, err, errlen) != 0) {
            bus_close();
            return -1;
        }
    }
    uv_timer_init(srv.loop, &cron_timer);
    uv_timer_start(&cron_timer, on_cron, BUS_CRON_MS, BUS_CRON_MS);
    uv_prepare_init(srv.loop, &before_sleep);
    uv_prepare_start(&before_sleep, on_before_sleep);
    running = true;
    return 0;
}

void
bus_close(void)
{
    while (!TAILQ_EMPTY(&links)) {
        bus_link_free(TAILQ_FIRST(&links));
    }
    for (size_t i = 0; i < nlisteners; i++) {
        uv_close((uv_handle_t *)&listeners[i], NULL);
    }
    nlisteners = 0;
    if (running) {
        uv_close((uv_handle_t *)&cron_timer, NULL);
        uv_close((uv_handle_t *)&before_sleep, NULL);
        running = false;
    }
}

/* ---- what the rest of the server calls --------------------------------- */

void
bus_meet(const char *ip, unsigned port, unsigned cport)
{
    (void)port;
    for (size_t i = 0; i < cview.nnodes; i++) {
        struct cluster_node_v *n = cview.nodes[i];
        if ((n->flags & VIEW_NODE_MEET) && n->link == NULL &&
            (unsigned)n->cport == cport && strcmp(n->ip, ip) == 0) {
            n->ping_sent = 0;
            bus_connect(n);
        }
    }
}

void
bus_forget_node(struct cluster_node_v *n)
{
    if (n->link != NULL) {
        bus_link_free(n->link);
    }
    if (n->inbound_link != NULL) {
        bus_link_free(n->inbound_link);
    }
    /* an inbound link not tied to it cannot name it: nothing else to do */
}

static void
link_reply(struct obuf *o, int proto, const struct bus_link *l)
{
    char events[3];
    size_t e = 0;
    events[e++] = 'r';
    if (l->queued > 0) {
        events[e++] = 'w';
    }
    events[e] = '\0';
    reply_map(o, 6, proto);
    reply_bulkz(o, "direction");
    reply_bulkz(o, l->inbound ? "from" : "to");
    reply_bulkz(o, "node");
    reply_bulk(o, l->node->name, CLUSTER_ID_LEN);
    reply_bulkz(o, "create-time");
    reply_int(o, l->ctime);
    reply_bulkz(o, "events");
    reply_bulkz(o, events);
    reply_bulkz(o, "send-buffer-allocated");
    reply_int(o, (int64_t)l->queued);
    reply_bulkz(o, "send-buffer-used");
    reply_int(o, (int64_t)l->queued);
}

void
bus_links_reply(struct obuf *o, int proto)
{
    size_t n = 0;
    for (size_t i = 0; i < cview.nnodes; i++) {
        n += (cview.nodes[i]->link != NULL) +
             (cview.nodes[i]->inbound_link != NULL);
    }
    reply_array(o, n);
    for (size_t i = 0; i < cview.nnodes; i++) {
        const struct cluster_node_v *node = cview.nodes[i];
        if (node->link != NULL) {
            link_reply(o, proto, node->link);
        }
        if (node->inbound_link != NULL) {
            link_reply(o, proto, node->inbound_link);
        }
    }
}

static void
stats_lines(struct textbuf *out, const long long *counts, const char *dir)
{
    long long total = 0;
    for (unsigned i = 0; i < CMSG_TYPE_COUNT; i++) {
        if (counts[i] == 0) {
            continue;
        }
        total += counts[i];
        textbuf_printf(out, "cluster_stats_messages_%s_%s:%lld\r\n",
                       cmsg_type_name(i), dir, counts[i]);
    }
    textbuf_printf(out, "cluster_stats_messages_%s:%lld\r\n", dir, total);
}

void
bus_counters_info(struct textbuf *out)
{
    stats_lines(out, stats.sent, "sent");
    stats_lines(out, stats.received, "received");
    textbuf_printf(out, "total_cluster_links_buffer_limit_exceeded:%llu\r\n",
                   stats.limit_exceeded);
}

void
bus_reset_stats(void)
{
    memset(&stats, 0, sizeof(stats));
}
