/*
 * rls_forward.c - ShouldRateLimit in cluster-mode yes: each descriptor is
 * decided by the node that serves its counter's slot, as RL.CHECK is.
 *
 * The receiving node does the first pass of the call itself (every
 * descriptor's rule, and which rules the others replace: every node loads
 * the same limits-file), decides the descriptors whose counters it serves,
 * and asks the owners of the others, one RL.CHECK ... STATUS each (the
 * decision as Envoy's DescriptorStatus, cmd_rlcheck.c), then answers when
 * every reply is in. So the call gets the statuses one node would give if
 * it held every counter; the owners count the statistics of theirs.
 *
 * The owners are asked over RESP on the loop (libuv TCP, never a blocking
 * socket): a pool of at most POOL_LINKS connections per peer, requests
 * pipelined on them (the replies come in order, so each connection keeps
 * its requests in a FIFO), at most MAX_INFLIGHT per connection, those of
 * one loop iteration in one write. A reply
 * -MOVED or -ASK is followed once (ASK with ASKING first); a second
 * redirect, an error, a peer that cannot be reached, a call past
 * MAX_CALLS, or no reply within rls-forward-timeout gives the descriptor
 * the failure answer: OK (rls-failure-mode-deny no, as Envoy's
 * failure_mode_deny false lets a request through when the service fails)
 * or OVER_LIMIT (yes: the call is refused, by a status Envoy enforces
 * whatever its own failure_mode_deny). Neither has a current_limit: the
 * owner's figures are unknown.
 *
 * A peer that does not answer in time is assumed broken: the connections
 * that held the late requests are closed (their other requests get the
 * failure answer at once), and so is one that sends bytes that are not a
 * reply or more than MAX_INBUF unparsed. A peer that refused a connection
 * is not dialled again for rls-forward-timeout ms; its descriptors get
 * the failure answer meanwhile, so a dead node costs no waiting.
 */
#include "server/envoy/rls_forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <uv.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/textbuf.h"
#include "protocol/reply_read.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/log.h"
#include "server/server.h"

#define POOL_LINKS 2
#define MAX_INFLIGHT 4096       /* requests on one connection */
#define MAX_CALLS 10000         /* calls waiting at once */
#define MAX_INBUF (1 << 20)     /* unparsed reply bytes on one connection */
#define MAX_DEPTH 8             /* nesting of a reply we skip */

struct link;

/* One descriptor asked of a peer; on its link's FIFO until its reply. */
struct fwd_req {
    struct fwd_call *call;      /* NULL: abandoned, its reply discarded */
    size_t index;               /* the descriptor's */
    struct link *link;
    int redirects;
    char *cmd;                  /* the RL.CHECK, kept for a redirect */
    size_t len;
    STAILQ_ENTRY(fwd_req) next;
};
STAILQ_HEAD(req_fifo, fwd_req);

struct peer {
    char host[256];
    unsigned port;
    struct link *links[POOL_LINKS];
    int64_t down_until_ms;      /* refused: not dialled before */
    struct sockaddr_storage addr;
    bool have_addr;             /* an IP, or a name resolved */
    bool resolving;
    TAILQ_ENTRY(peer) next;
};

struct link {
    uv_tcp_t tcp;
    uv_connect_t connect;
    struct peer *peer;          /* NULL once closing */
    size_t slot;                /* in peer->links */
    bool waiting_addr;          /* its peer's name is being resolved */
    bool up;
    struct textbuf out;         /* requests of this loop iteration */
    bool dirty;                 /* out waits for flush_links() */
    TAILQ_ENTRY(link) dirty_next;
    struct req_fifo inflight;   /* sent (or queued), reply not read */
    size_t ninflight;
    struct textbuf queued;      /* written once connected */
    char *in;                   /* reply bytes not parsed yet */
    size_t inlen, incap;
};

struct fwd_call {
    struct rls_caller caller;
    rls_finish_fn finish;
    uv_timer_t timer;
    size_t n, waiting;
    /* n of each, in the call's own allocation (a call is as large as
     * its descriptors need). */
    struct nl_status *st;
    char **names;                   /* st[i].name's copies */
    struct fwd_req **req;           /* descriptor i's request on a link */
    TAILQ_ENTRY(fwd_call) next;
};

struct fwd_write {
    uv_write_t req;
    struct link *link;
    char data[];
};

static TAILQ_HEAD(, peer) peers = TAILQ_HEAD_INITIALIZER(peers);
/* Links with requests to write: once per loop iteration, after its I/O
 * callbacks (a uv_check), so the requests of every call the iteration
 * read go out in one write a link. */
static TAILQ_HEAD(, link) dirty = TAILQ_HEAD_INITIALIZER(dirty);
static uv_check_t flusher;
static bool flusher_open;
static TAILQ_HEAD(, fwd_call) calls = TAILQ_HEAD_INITIALIZER(calls);
static size_t ncalls;

static void link_close(struct link *l);
static void send_req(struct fwd_req *r, const char *host, unsigned port,
                     bool asking);

/* ---- statuses --------------------------------------------------------------- */

/* The failure answer (rls-failure-mode-deny), without a current_limit;
 * the descriptor's quota mode and metadata (this node's rules) stay. */
static void
failure_status(struct nl_status *st)
{
    bool quota = st->quota;
    const struct limits_meta *meta = st->meta;
    memset(st, 0, sizeof(*st));
    st->quota = quota;
    st->meta = meta;
    st->code = srv.conf.rls_failure_mode_deny ? NL_OVER_LIMIT : NL_OK;
    st->exceeded = st->code == NL_OVER_LIMIT;
    st->name = "";
    st->retry_ns = -1;
}

static void
finish_call(struct fwd_call *call);

/* Descriptor i of call has its status (the failure one when ok is
 * false); the call finishes with its last one. */
static void
settle(struct fwd_call *call, size_t i, bool ok)
{
    struct fwd_req *r = call->req[i];
    if (r != NULL) {
        r->call = NULL;
        call->req[i] = NULL;
    }
    if (!ok) {
        failure_status(&call->st[i]);
        srv.stats.rls_forward_failures++;
    }
    if (--call->waiting == 0) {
        finish_call(call);
    }
}

/* ---- calls ------------------------------------------------------------------ */

static void
free_call(uv_handle_t *h)
{
    struct fwd_call *call = h->data;
    for (size_t i = 0; i < call->n; i++) {
        mem_free(call->names[i]);
    }
    mem_free(call);
}

static void
drop_call(struct fwd_call *call)
{
    for (size_t i = 0; i < call->n; i++) {
        if (call->req[i] != NULL) {
            call->req[i]->call = NULL;      /* its reply is discarded */
            call->req[i] = NULL;
        }
    }
    TAILQ_REMOVE(&calls, call, next);
    ncalls--;
    uv_timer_stop(&call->timer);
    uv_close((uv_handle_t *)&call->timer, free_call);
}

static void
finish_call(struct fwd_call *call)
{
    struct rls_caller caller = call->caller;
    rls_finish_fn finish = call->finish;
    for (size_t i = 0; i < call->n; i++) {
        call->st[i].name = call->names[i] != NULL ? call->names[i] : "";
    }
    enum nl_code overall = named_limits_overall(call->st, call->n);
    /* Out of the list first: finish() may close the caller's connection,
     * which cancels what it still has waiting. */
    TAILQ_REMOVE(&calls, call, next);
    ncalls--;
    uv_timer_stop(&call->timer);
    finish(&caller, call->st, call->n, overall);
    uv_close((uv_handle_t *)&call->timer, free_call);
}

/* rls-forward-timeout: the descriptors still waiting get the failure
 * answer, and the connections that hold them, late, are closed. */
static void
on_timeout(uv_timer_t *t)
{
    struct fwd_call *call = t->data;
    struct link *late[NL_MAX_DESCRIPTORS];
    size_t nlate = 0;
    for (size_t i = 0; i < call->n; i++) {
        if (call->req[i] != NULL) {
            late[nlate++] = call->req[i]->link;
        }
    }
    srv.stats.rls_forward_timeouts += nlate;
    for (size_t i = 0; i < call->n && call->waiting > 0; i++) {
        if (call->req[i] != NULL) {
            settle(call, i, false);     /* the last one finishes it */
        }
    }
    for (size_t i = 0; i < nlate; i++) {
        /* A link may be listed twice, and closed by the first. */
        for (size_t j = i + 1; j < nlate; j++) {
            if (late[j] == late[i]) {
                late[j] = NULL;
            }
        }
        if (late[i] != NULL && late[i]->peer != NULL) {
            log_warning("Closing the connection to %s:%u: no reply within "
                        "rls-forward-timeout (%lld ms)", late[i]->peer->host,
                        late[i]->peer->port,
                        (long long)srv.conf.rls_forward_timeout);
            link_close(late[i]);
        }
    }
}

/* ---- the RESP request ------------------------------------------------------- */

static void
put_bulk(struct textbuf *t, const char *s, size_t len)
{
    textbuf_printf(t, "$%zu\r\n", len);
    textbuf_append(t, s, len);
    textbuf_append(t, "\r\n", 2);
}

static void
put_uint(struct textbuf *t, uint64_t v)
{
    char num[24];
    int len = snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    put_bulk(t, num, (size_t)len);
}

/* RL.CHECK <domain> ENTRY <k> <v>... HITS n [NEGATIVE] [LIMIT r u]
 * STATUS [SHARE member demand interval] (an RLQS fold's Envoy: rlqs.c). */
static void
encode_check(struct textbuf *t, const char *domain, size_t dlen,
             const struct nl_descriptor *d)
{
    bool limit = d->has_override &&
                 limits_unit_seconds(d->override_unit) > 0;
    textbuf_printf(t, "*%zu\r\n", 2 + 3 * d->n + 2 + (size_t)d->negative +
                          (limit ? 3 : 0) + 1 + (d->share != NULL ? 4 : 0));
    put_bulk(t, "RL.CHECK", 8);
    put_bulk(t, domain, dlen);
    for (size_t i = 0; i < d->n; i++) {
        put_bulk(t, "ENTRY", 5);
        put_bulk(t, d->entries[i].key, d->entries[i].klen);
        put_bulk(t, d->entries[i].value, d->entries[i].vlen);
    }
    put_bulk(t, "HITS", 4);
    put_uint(t, d->hits);
    if (d->negative) {
        put_bulk(t, "NEGATIVE", 8);
    }
    if (limit) {
        put_bulk(t, "LIMIT", 5);
        put_uint(t, d->override_requests);
        put_uint(t, (uint64_t)d->override_unit);
    }
    put_bulk(t, "STATUS", 6);
    if (d->share != NULL) {
        put_bulk(t, "SHARE", 5);
        put_bulk(t, d->share->member, d->share->mlen);
        put_uint(t, d->share->demand_milli);
        put_uint(t, (uint64_t)d->share->interval_ms);
    }
}

/* ---- replies ---------------------------------------------------------------- */

enum reply_kind { R_STATUS, R_MOVED, R_ASK, R_OTHER };

struct owner_reply {
    enum reply_kind kind;
    struct nl_status st;
    const char *name;           /* into the link's buffer */
    size_t namelen;
    char host[256];             /* MOVED / ASK */
    unsigned port;
};

/* Past one whole value (aggregates with their elements); false when it is
 * not all there, or nests too deep. */
static bool
skip_value(struct reply_reader *r, int depth)
{
    struct reply_token t;
    if (depth > MAX_DEPTH || !reply_reader_next(r, &t)) {
        return false;
    }
    int64_t n = t.type == RT_ARRAY || t.type == RT_SET || t.type == RT_PUSH
                ? t.n : t.type == RT_MAP ? 2 * t.n
                : t.type == RT_ATTRIBUTE ? 2 * t.n + 1 : 0;
    for (int64_t i = 0; i < n; i++) {
        if (!skip_value(r, depth + 1)) {
            return false;
        }
    }
    return true;
}

/* "MOVED <slot> <host>:<port>" or "ASK ..." into out. */
static void
parse_redirect(const char *s, size_t len, struct owner_reply *out)
{
    char text[320];
    unsigned slot;
    int64_t port;
    snprintf(text, sizeof(text), "%.*s", (int)(len < 319 ? len : 319), s);
    char *colon = strrchr(text, ':');
    char *space = strrchr(text, ' ');
    out->kind = R_OTHER;
    if (colon == NULL || space == NULL || colon < space ||
        sscanf(text + (text[0] == 'M' ? 6 : 4), "%u", &slot) != 1 ||
        !num_parse_i64(colon + 1, strlen(colon + 1), &port) || port <= 0 ||
        port > 65535 || (size_t)(colon - space - 1) >= sizeof(out->host)) {
        return;
    }
    memcpy(out->host, space + 1, (size_t)(colon - space - 1));
    out->host[colon - space - 1] = '\0';
    out->port = (unsigned)port;
    out->kind = text[0] == 'M' ? R_MOVED : R_ASK;
}

/* The eight values of RL.CHECK ... STATUS, and SHARE's ninth when
 * withshare. */
static bool
read_status(struct reply_reader *r, struct owner_reply *out, bool withshare)
{
    struct reply_token t;
    int64_t v[7];
    for (int i = 0; i < 7; i++) {
        if (!reply_reader_next(r, &t) || t.type != RT_INT) {
            return false;
        }
        v[i] = t.n;
    }
    if (!reply_reader_next(r, &t) || t.type != RT_BULK ||
        (v[0] != NL_OK && v[0] != NL_OVER_LIMIT) || v[3] < 0 ||
        v[3] > UINT32_MAX || v[4] < 0 || v[4] > LIMITS_YEAR || v[5] < 0 ||
        v[5] > UINT32_MAX) {
        return false;
    }
    memset(&out->st, 0, sizeof(out->st));
    out->st.code = (enum nl_code)v[0];
    out->st.has_limit = v[1] != 0;
    out->st.unlimited = v[2] != 0;
    out->st.requests_per_unit = (uint32_t)v[3];
    out->st.unit = (enum limits_unit)v[4];
    out->st.remaining = (uint32_t)v[5];
    out->st.reset_ns = v[6];
    out->st.retry_ns = -1;
    out->name = t.str;
    out->namelen = t.len;
    if (withshare) {
        if (!reply_reader_next(r, &t) || t.type != RT_INT || t.n < -1) {
            return false;
        }
        out->st.has_share = t.n >= 0;
        out->st.share_milli = t.n >= 0 ? (uint64_t)t.n : 0;
    }
    out->kind = R_STATUS;
    return true;
}

/* The first bytes of RESP2 and RESP3 replies. */
#define RESP_TYPES "+-:$*_,#!=(%~>|"

/* One whole reply from buf: 1 (out, *used bytes), 0 when it is not all
 * there yet; -1 when it is no reply. */
static int
take_reply(const char *buf, size_t len, size_t *used, struct owner_reply *out)
{
    struct reply_reader r, probe;
    struct reply_token t;
    if (len > 0 && (buf[0] == '\0' || strchr(RESP_TYPES, buf[0]) == NULL)) {
        return -1;          /* no reply starts so */
    }
    reply_reader_init(&r, buf, len);
    probe = r;
    if (!skip_value(&probe, 0)) {
        return 0;           /* not all there (or malformed: the bounds end it) */
    }
    *used = (size_t)(probe.p - buf);
    out->kind = R_OTHER;
    struct reply_reader copy = r;
    if (!reply_reader_next(&copy, &t)) {
        return -1;
    }
    if (t.type == RT_ARRAY && (t.n == 8 || t.n == 9)) {
        if (!read_status(&copy, out, t.n == 9)) {
            out->kind = R_OTHER;
        }
    } else if (t.type == RT_ERROR && t.len > 6 &&
               (memcmp(t.str, "MOVED ", 6) == 0 ||
                memcmp(t.str, "ASK ", 4) == 0)) {
        parse_redirect(t.str, t.len, out);
    }
    return 1;
}

/* A reply for the oldest request of l. */
static void
handle_reply(struct link *l, const struct owner_reply *rep)
{
    struct fwd_req *r = STAILQ_FIRST(&l->inflight);
    STAILQ_REMOVE_HEAD(&l->inflight, next);
    l->ninflight--;
    struct fwd_call *call = r->call;
    if (call == NULL) {
        mem_free(r->cmd);
        mem_free(r);
        return;
    }
    size_t i = r->index;
    if ((rep->kind == R_MOVED || rep->kind == R_ASK) && r->redirects == 0) {
        srv.stats.rls_forward_redirects++;
        r->redirects++;
        send_req(r, rep->host, rep->port, rep->kind == R_ASK);
        return;
    }
    call->req[i] = NULL;
    mem_free(r->cmd);
    mem_free(r);
    if (rep->kind == R_STATUS) {
        bool quota = call->st[i].quota;     /* this node's rules say */
        call->st[i] = rep->st;
        call->st[i].quota = quota;
        char *name = mem_malloc(rep->namelen + 1);
        if (name != NULL) {
            memcpy(name, rep->name, rep->namelen);
            name[rep->namelen] = '\0';
        }
        call->names[i] = name;
    }
    settle(call, i, rep->kind == R_STATUS);
}

/* Every whole reply l has; false when l was closed (bytes that are not
 * replies to its requests). */
static bool
parse_replies(struct link *l)
{
    size_t at = 0;
    while (at < l->inlen) {
        struct owner_reply rep;
        size_t used = 0;
        int rc = take_reply(l->in + at, l->inlen - at, &used, &rep);
        if (rc == 0) {
            break;
        }
        if (rc < 0 || STAILQ_EMPTY(&l->inflight)) {
            log_warning("Closing the connection to %s:%u: it sent what is "
                        "not a reply to cellgate's requests",
                        l->peer->host, l->peer->port);
            link_close(l);
            return false;
        }
        at += used;
        handle_reply(l, &rep);
        if (l->peer == NULL) {
            return false;               /* closed meanwhile */
        }
    }
    memmove(l->in, l->in + at, l->inlen - at);
    l->inlen -= at;
    return true;
}

/* ---- links ------------------------------------------------------------------ */

static void
free_link(uv_handle_t *h)
{
    struct link *l = h->data;
    textbuf_free(&l->out);
    textbuf_free(&l->queued);
    mem_free(l->in);
    mem_free(l);
}

/* Close l: every request on it fails (its call gets the failure answer). */
static void
link_close(struct link *l)
{
    if (l->peer == NULL) {
        return;
    }
    l->peer->links[l->slot] = NULL;
    l->peer = NULL;
    if (l->dirty) {
        TAILQ_REMOVE(&dirty, l, dirty_next);
        l->dirty = false;
    }
    while (!STAILQ_EMPTY(&l->inflight)) {
        struct fwd_req *r = STAILQ_FIRST(&l->inflight);
        STAILQ_REMOVE_HEAD(&l->inflight, next);
        struct fwd_call *call = r->call;
        size_t i = r->index;
        mem_free(r->cmd);
        mem_free(r);
        if (call != NULL) {
            call->req[i] = NULL;
            settle(call, i, false);
        }
    }
    l->ninflight = 0;
    uv_close((uv_handle_t *)&l->tcp, free_link);
}

static void
on_written(uv_write_t *req, int status)
{
    struct fwd_write *w = (struct fwd_write *)req;
    struct link *l = w->link;
    mem_free(w);
    if (status != 0 && status != UV_ECANCELED && l->peer != NULL) {
        link_close(l);
    }
}

static bool
link_write(struct link *l, const char *data, size_t len)
{
    struct fwd_write *w = mem_malloc(sizeof(*w) + len);
    if (w == NULL) {
        return false;
    }
    w->link = l;
    memcpy(w->data, data, len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &b, 1, on_written) != 0) {
        mem_free(w);
        return false;
    }
    return true;
}

static void
on_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf)
{
    struct link *l = h->data;
    (void)want;
    unsigned char *p = (unsigned char *)l->in;
    if (l->incap - l->inlen < 4096 &&
        !mem_reserve(&p, &l->incap, l->inlen, 16384, 16384)) {
        *buf = uv_buf_init(NULL, 0);    /* UV_ENOBUFS: closed */
        return;
    }
    l->in = (char *)p;
    *buf = uv_buf_init(l->in + l->inlen, (unsigned)(l->incap - l->inlen));
}

static void
on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct link *l = s->data;
    (void)buf;
    if (n == 0 || l->peer == NULL) {
        return;
    }
    if (n < 0) {
        link_close(l);
        return;
    }
    l->inlen += (size_t)n;
    if (parse_replies(l) && l->inlen > MAX_INBUF) {
        log_warning("Closing the connection to %s:%u: a reply past %d "
                    "bytes", l->peer->host, l->peer->port, MAX_INBUF);
        link_close(l);
    }
}

/* AUTH [masteruser] masterauth, as a replica of this cluster sends it. */
static void
encode_auth(struct textbuf *t)
{
    const char *user = srv.conf.masteruser;
    bool named = user != NULL && user[0] != '\0';
    textbuf_printf(t, "*%d\r\n", named ? 3 : 2);
    put_bulk(t, "AUTH", 4);
    if (named) {
        put_bulk(t, user, strlen(user));
    }
    put_bulk(t, srv.conf.masterauth.p, srv.conf.masterauth.len);
}

static void
on_connect(uv_connect_t *req, int status)
{
    struct link *l = req->data;
    if (l->peer == NULL) {
        return;                         /* closed while connecting */
    }
    if (status != 0) {
        log_verbose("Cannot reach %s:%u for a forwarded rate limit call: %s",
                    l->peer->host, l->peer->port, uv_strerror(status));
        l->peer->down_until_ms = clock_loop_ms() +
                                 srv.conf.rls_forward_timeout;
        l->peer->have_addr = false;     /* a name is resolved again */
        link_close(l);
        return;
    }
    l->up = true;
    uv_tcp_nodelay(&l->tcp, 1);
    if (uv_read_start((uv_stream_t *)&l->tcp, on_alloc, on_read) != 0 ||
        (l->queued.len > 0 && !link_write(l, l->queued.p, l->queued.len))) {
        link_close(l);
        return;
    }
    textbuf_free(&l->queued);
}

static void
link_connect(struct link *l)
{
    struct peer *p = l->peer;
    l->waiting_addr = false;
    if (uv_tcp_connect(&l->connect, &l->tcp, (struct sockaddr *)&p->addr,
                       on_connect) != 0) {
        p->down_until_ms = clock_loop_ms() + srv.conf.rls_forward_timeout;
        link_close(l);
    }
}

/* A name's lookup: by host and port, as the peer may be gone when the
 * answer comes (shutdown). */
struct peer_resolve {
    uv_getaddrinfo_t req;
    unsigned port;
    char host[256];
};

static struct peer *peer_lookup(const char *host, unsigned port);

/* The peer's name resolved (or not): its waiting connections connect. */
static void
on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct peer_resolve *r = (struct peer_resolve *)req;
    struct peer *p = peer_lookup(r->host, r->port);
    mem_free(r);
    if (p == NULL || !p->resolving) {
        uv_freeaddrinfo(res);
        return;
    }
    p->resolving = false;
    p->have_addr = status == 0 && res != NULL &&
                   res->ai_addrlen <= sizeof(p->addr);
    if (p->have_addr) {
        memcpy(&p->addr, res->ai_addr, res->ai_addrlen);
    } else {
        p->down_until_ms = clock_loop_ms() + srv.conf.rls_forward_timeout;
    }
    uv_freeaddrinfo(res);
    for (size_t i = 0; i < POOL_LINKS; i++) {
        struct link *l = p->links[i];
        if (l != NULL && l->waiting_addr) {
            if (p->have_addr) {
                link_connect(l);
            } else {
                link_close(l);
            }
        }
    }
}

/* The peer's address, or its name's lookup under way (off the loop: a
 * slow resolver must hold no client). false when neither can be. */
static bool
peer_address(struct peer *p)
{
    char port[16];
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
    if (p->have_addr || p->resolving) {
        return true;
    }
    if (uv_ip4_addr(p->host, (int)p->port,
                    (struct sockaddr_in *)&p->addr) == 0 ||
        uv_ip6_addr(p->host, (int)p->port,
                    (struct sockaddr_in6 *)&p->addr) == 0) {
        p->have_addr = true;
        return true;
    }
    struct peer_resolve *r = mem_malloc(sizeof(*r));
    if (r == NULL) {
        return false;
    }
    r->port = p->port;
    snprintf(r->host, sizeof(r->host), "%s", p->host);
    snprintf(port, sizeof(port), "%u", p->port);
    if (uv_getaddrinfo(srv.loop, &r->req, on_resolved, p->host, port,
                       &hints) != 0) {
        mem_free(r);
        return false;
    }
    p->resolving = true;
    return true;
}

/* A new connection in p's pool slot i, connecting (or waiting for the
 * peer's address); NULL when it cannot start (the peer is marked down). */
static struct link *
link_open(struct peer *p, size_t i)
{
    struct link *l = mem_calloc(1, sizeof(*l));
    if (l == NULL) {
        return NULL;
    }
    STAILQ_INIT(&l->inflight);
    l->peer = p;
    l->slot = i;
    l->tcp.data = l;
    l->connect.data = l;
    uv_tcp_init(srv.loop, &l->tcp);
    if (srv.conf.masterauth.len > 0) {
        encode_auth(&l->queued);
    }
    if (!peer_address(p)) {
        p->down_until_ms = clock_loop_ms() + srv.conf.rls_forward_timeout;
        uv_close((uv_handle_t *)&l->tcp, free_link);
        return NULL;
    }
    p->links[i] = l;
    l->waiting_addr = true;
    if (p->have_addr) {
        link_connect(l);
        if (p->links[i] != l) {
            return NULL;                /* closed at once */
        }
    }
    return l;
}

/* The AUTH sent first is a reply to skip: a request without a call. */
static bool
expect_auth_reply(struct link *l)
{
    if (srv.conf.masterauth.len == 0) {
        return true;
    }
    struct fwd_req *r = mem_calloc(1, sizeof(*r));
    if (r == NULL) {
        return false;
    }
    r->link = l;
    STAILQ_INSERT_TAIL(&l->inflight, r, next);
    l->ninflight++;
    return true;
}

static struct peer *
peer_lookup(const char *host, unsigned port)
{
    struct peer *p;
    TAILQ_FOREACH(p, &peers, next) {
        if (p->port == port && strcmp(p->host, host) == 0) {
            return p;
        }
    }
    return NULL;
}

static struct peer *
peer_find(const char *host, unsigned port)
{
    struct peer *p = peer_lookup(host, port);
    if (p != NULL) {
        return p;
    }
    if (strlen(host) >= sizeof(p->host) ||
        (p = mem_calloc(1, sizeof(*p))) == NULL) {
        return NULL;
    }
    snprintf(p->host, sizeof(p->host), "%s", host);
    p->port = port;
    TAILQ_INSERT_TAIL(&peers, p, next);
    return p;
}

/* The pool's connection with the fewest requests waiting, a new one while
 * the pool has room; NULL when the peer is down or every one is full. */
static struct link *
pick_link(struct peer *p)
{
    struct link *best = NULL;
    if (clock_loop_ms() < p->down_until_ms) {
        return NULL;
    }
    for (size_t i = 0; i < POOL_LINKS; i++) {
        struct link *l = p->links[i];
        if (l == NULL) {
            l = link_open(p, i);
            if (l == NULL || !expect_auth_reply(l)) {
                if (l != NULL) {
                    link_close(l);
                }
                return NULL;
            }
            return l;
        }
        if (best == NULL || l->ninflight < best->ninflight) {
            best = l;
        }
    }
    return best != NULL && best->ninflight < MAX_INFLIGHT ? best : NULL;
}

/* Every dirty link's requests, one write each. */
static void
flush_links(uv_check_t *h)
{
    while (!TAILQ_EMPTY(&dirty)) {
        struct link *l = TAILQ_FIRST(&dirty);
        TAILQ_REMOVE(&dirty, l, dirty_next);
        l->dirty = false;
        bool ok = link_write(l, l->out.p, l->out.len);
        l->out.len = 0;
        if (!ok) {
            link_close(l);
        }
    }
    uv_check_stop(h);
}

/* Bytes onto l: for this iteration's write once it is connected, or
 * queued until it is. false when memory ran out: l is closed then (the
 * bytes before would go out without these, and the replies would no
 * longer match the requests). */
static bool
link_send(struct link *l, const char *data, size_t len)
{
    struct textbuf *t = l->up ? &l->out : &l->queued;
    textbuf_append(t, data, len);
    if (t->oom) {
        link_close(l);
        return false;
    }
    if (!l->up) {
        return true;
    }
    if (!l->dirty) {
        if (!flusher_open) {
            uv_check_init(srv.loop, &flusher);
            flusher_open = true;
        }
        l->dirty = true;
        TAILQ_INSERT_TAIL(&dirty, l, dirty_next);
        uv_check_start(&flusher, flush_links);
    }
    return true;
}

/* ---- requests --------------------------------------------------------------- */

/* Ask host:port for r's descriptor (after ASKING when asking); on failure
 * the descriptor gets the failure answer. */
static void
send_req(struct fwd_req *r, const char *host, unsigned port, bool asking)
{
    static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
    struct fwd_call *call = r->call;
    struct peer *p = peer_find(host, port);
    struct link *l = p != NULL ? pick_link(p) : NULL;
    struct fwd_req *skip = NULL;
    if (l != NULL && asking) {
        skip = mem_calloc(1, sizeof(*skip));
        if (skip == NULL || !link_send(l, asking_cmd, sizeof(asking_cmd) - 1)) {
            mem_free(skip);
            l = NULL;
        } else {
            skip->link = l;
            STAILQ_INSERT_TAIL(&l->inflight, skip, next);
            l->ninflight++;
        }
    }
    if (l == NULL || !link_send(l, r->cmd, r->len)) {
        /* (An ASKING already on l is answered and discarded.) */
        size_t i = r->index;
        call->req[i] = NULL;
        mem_free(r->cmd);
        mem_free(r);
        settle(call, i, false);
        return;
    }
    r->link = l;
    call->req[r->index] = r;
    STAILQ_INSERT_TAIL(&l->inflight, r, next);
    l->ninflight++;
    srv.stats.rls_forwarded++;
}

/* Descriptor i of call to the node at host:port (after ASKING when
 * asking: its slot is being moved there). */
static void
forward(struct fwd_call *call, size_t i, const char *domain, size_t dlen,
        const struct nl_descriptor *d, const struct cluster_redirect *to,
        bool asking)
{
    struct textbuf t = { NULL, 0, 0, false };
    struct fwd_req *r = mem_calloc(1, sizeof(*r));
    encode_check(&t, domain, dlen, d);
    if (r == NULL || t.oom) {
        mem_free(r);
        textbuf_free(&t);
        settle(call, i, false);
        return;
    }
    r->call = call;
    r->index = i;
    r->cmd = t.p;
    r->len = t.len;
    send_req(r, to->host, to->port, asking);
}

/* ---- a call ----------------------------------------------------------------- */

/* Where each descriptor is decided: here (away false), elsewhere (away,
 * with the node in to[i]: its owner, or, ask[i], the node its slot is
 * moving to), or nowhere (away, to[i].host NULL: no node serves its slot
 * now). -1 with err, as named_limits_check(). */
static int
route_all(const char *domain, size_t dlen, const struct nl_descriptor *d,
          size_t n, bool *away, bool *ask, struct cluster_redirect *to,
          size_t *naway, char *err, size_t errlen)
{
    struct textbuf names = { NULL, 0, 0, false };
    struct nl_counter k[NL_MAX_DESCRIPTORS];
    if (named_limits_counters(domain, dlen, d, n, &names, k, err,
                              errlen) != 0) {
        textbuf_free(&names);
        return -1;
    }
    *naway = 0;
    for (size_t i = 0; i < n; i++) {
        enum cluster_verdict v = CLUSTER_HERE;
        to[i].host = NULL;
        if (k[i].decides) {
            v = cluster_route_key(names.p + k[i].off, k[i].len, false, &to[i]);
        }
        away[i] = v != CLUSTER_HERE;
        /* A verdict with a node is MOVED, or ASK (cluster-enabled yes);
         * the others (CROSSSLOT cannot be: one key) have none. */
        ask[i] = away[i] && v != CLUSTER_MOVED && to[i].host != NULL;
        if (v != CLUSTER_MOVED && !ask[i]) {
            to[i].host = NULL;
        }
        *naway += away[i];
    }
    textbuf_free(&names);
    return 0;
}

static struct fwd_call *
new_call(const struct rls_caller *caller, rls_finish_fn finish,
         const struct nl_status *st, size_t n, const bool *away)
{
    struct fwd_call *call = mem_calloc(1, sizeof(*call) + n * (sizeof(*st) +
                                           sizeof(char *) +
                                           sizeof(struct fwd_req *)));
    if (call == NULL) {
        return NULL;
    }
    call->st = (struct nl_status *)(call + 1);
    call->names = (char **)(call->st + n);
    call->req = (struct fwd_req **)(call->names + n);
    call->caller = *caller;
    call->finish = finish;
    call->n = n;
    for (size_t i = 0; i < n; i++) {
        call->st[i] = st[i];
        if (!away[i] && st[i].name != NULL && st[i].name[0] != '\0') {
            size_t len = strlen(st[i].name);
            call->names[i] = mem_malloc(len + 1);
            if (call->names[i] == NULL) {
                for (size_t j = 0; j < i; j++) {
                    mem_free(call->names[j]);
                }
                mem_free(call);
                return NULL;
            }
            memcpy(call->names[i], st[i].name, len + 1);
        }
    }
    uv_timer_init(srv.loop, &call->timer);
    call->timer.data = call;
    TAILQ_INSERT_TAIL(&calls, call, next);
    ncalls++;
    return call;
}

/* Every away descriptor of call asked of its owner; one that cannot be is
 * settled at once with the failure answer (perhaps the last: the call
 * finishes then, so the caller hears it at once). */
static void
send_all(struct fwd_call *call, const char *domain, size_t dlen,
         const struct nl_descriptor *d, const bool *away, const bool *ask,
         const struct cluster_redirect *to)
{
    call->waiting = 1;                  /* held until every one is sent */
    for (size_t i = 0; i < call->n; i++) {
        if (away[i]) {
            call->waiting++;
        }
    }
    for (size_t i = 0; i < call->n; i++) {
        if (!away[i]) {
            continue;
        }
        if (to[i].host == NULL) {
            settle(call, i, false);     /* no node serves its slot */
        } else {
            forward(call, i, domain, dlen, &d[i], &to[i], ask[i]);
        }
    }
}

/* A call none of whose descriptors went out: the failure answers of the
 * away ones into st, beside the ones decided here, and the call is gone. */
static void
take_back(struct fwd_call *call, const bool *away, struct nl_status *st,
          enum nl_code *overall)
{
    for (size_t i = 0; i < call->n; i++) {
        if (away[i]) {
            st[i] = call->st[i];
            st[i].name = "";
        }
    }
    *overall = named_limits_overall(st, call->n);
    drop_call(call);
}

enum rls_outcome
rls_forward_decide(const char *domain, size_t dlen,
                   const struct nl_descriptor *d, size_t n, int64_t now,
                   struct nl_status *st, enum nl_code *overall,
                   const struct rls_caller *caller, rls_finish_fn finish,
                   char *err, size_t errlen)
{
    bool away[NL_MAX_DESCRIPTORS], ask[NL_MAX_DESCRIPTORS];
    struct cluster_redirect to[NL_MAX_DESCRIPTORS];
    size_t naway;
    memset(st, 0, n * sizeof(*st));     /* the away ones: set later */
    if (route_all(domain, dlen, d, n, away, ask, to, &naway, err,
                  errlen) != 0 ||
        named_limits_check(domain, dlen, d, n, naway > 0 ? away : NULL,
                           false, now, st, overall, err, errlen) != 0) {
        return RLS_FAILED;
    }
    if (naway == 0) {
        return RLS_DECIDED;
    }
    struct fwd_call *call = ncalls < MAX_CALLS
                            ? new_call(caller, finish, st, n, away) : NULL;
    if (call == NULL) {
        for (size_t i = 0; i < n; i++) {
            if (away[i]) {
                failure_status(&st[i]);
                srv.stats.rls_forward_failures++;
            }
        }
        *overall = named_limits_overall(st, n);
        return RLS_DECIDED;
    }
    send_all(call, domain, dlen, d, away, ask, to);
    if (call->waiting == 1) {
        /* Nothing went out: the answer is now, and the caller's. */
        take_back(call, away, st, overall);
        return RLS_DECIDED;
    }
    call->waiting--;
    uv_timer_start(&call->timer, on_timeout,
                   (uint64_t)srv.conf.rls_forward_timeout, 0);
    return RLS_WAITING;
}

void
rls_forward_cancel(void *ctx)
{
    for (struct fwd_call *c = TAILQ_FIRST(&calls), *next; c != NULL;
         c = next) {
        next = TAILQ_NEXT(c, next);
        if (c->caller.ctx == ctx) {
            drop_call(c);
        }
    }
}

size_t
rls_forward_waiting(void)
{
    return ncalls;
}

void
rls_forward_shutdown(void)
{
    while (!TAILQ_EMPTY(&calls)) {
        drop_call(TAILQ_FIRST(&calls));
    }
    while (!TAILQ_EMPTY(&peers)) {
        struct peer *p = TAILQ_FIRST(&peers);
        for (size_t i = 0; i < POOL_LINKS; i++) {
            if (p->links[i] != NULL) {
                link_close(p->links[i]);
            }
        }
        TAILQ_REMOVE(&peers, p, next);
        mem_free(p);
    }
    if (flusher_open) {
        uv_close((uv_handle_t *)&flusher, NULL);
        flusher_open = false;
    }
}
