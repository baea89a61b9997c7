/*
 * conn.c - client connections (see conn.h for the state machine).
 *
 * Fairness and limits, all enforced here:
 *  - at most CONN_MAX_REQS_PER_EVENT requests run per read callback; a
 *    client with more buffered requests is queued and resumed on the next
 *    loop iteration (an active idle handle keeps poll from blocking);
 *  - a client whose unsent output passes client-output-pause-limit stops
 *    being read (the kernel's TCP window then pushes back on it) until its
 *    output drains below half of that;
 *  - a client whose unsent output passes client-output-hard-limit is closed;
 *  - the query buffer, bulk length, argument count and inline length limits
 *    are the parser's (resp.h), reported here as protocol errors; a MULTI's
 *    queued commands count toward the query buffer limit too;
 *  - maxclients refuses new clients with an error; timeout closes idle ones.
 */
#include "server/conn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/mem.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/persist/persist.h"
#include "server/pubsub.h"
#include "server/repl/replication.h"
#include "server/script/script.h"
#include "server/monitor.h"
#include "server/multi.h"
#include "server/server.h"

#define CONN_MAX_REQS_PER_EVENT 1024
#define CONN_READ_BUF (64 * 1024)
/* A parser holding more than this once its input is all served gives it
 * back at once (a big SET's argument is otherwise kept, and counted in
 * used_memory, until the idle client's cron). */
#define CONN_SHRINK_AFTER ((size_t)1 << 20)
#define CONN_MAX_IOV 64

static uv_prepare_t flush_handle;
static uv_idle_t input_handle;
static struct conn *write_list;      /* clients with output to flush */
static struct conn *input_list;      /* clients with requests left to run */
static char read_buf[CONN_READ_BUF]; /* hiredis copies what we feed it */
static bool read_buf_busy;
static int64_t warn_last_ms;
static uint64_t warn_suppressed;

static void flush_all(uv_prepare_t *h);
static void on_close(uv_handle_t *h);
static void run_pending_input(uv_idle_t *h);
static void process_input(struct conn *c);

int
conn_setup(uv_loop_t *loop)
{
    if (uv_prepare_init(loop, &flush_handle) != 0 ||
        uv_idle_init(loop, &input_handle) != 0) {
        return -1;
    }
    uv_prepare_start(&flush_handle, flush_all);
    return 0;
}

/* Close a client that sits on the write or input queue at shutdown: the
 * prepare and idle handles that would have drained those queues are gone. */
static void
close_queued(struct conn *c)
{
    c->write_queued = false;
    c->input_queued = false;
    c->state = CONN_CLOSING;
    if (!uv_is_closing(&c->h.handle)) {
        uv_close(&c->h.handle, on_close);
    }
}

void
conn_teardown(void)
{
    while (write_list != NULL) {
        struct conn *c = write_list;
        write_list = c->next_pending;
        close_queued(c);
    }
    while (input_list != NULL) {
        struct conn *c = input_list;
        input_list = c->next_input;
        close_queued(c);
    }
    uv_prepare_stop(&flush_handle);
    uv_idle_stop(&input_handle);
    uv_close((uv_handle_t *)&flush_handle, NULL);
    uv_close((uv_handle_t *)&input_handle, NULL);
}

/* ---- lists ------------------------------------------------------------ */

static void
queue_write(struct conn *c)
{
    if (!c->write_queued && c->state != CONN_CLOSING) {
        c->write_queued = true;
        c->next_pending = NULL;
        /* Order does not matter between clients; push front. */
        c->next_pending = write_list;
        write_list = c;
    }
}

static void
queue_input(struct conn *c)
{
    if (c->input_queued || c->state != CONN_READING) {
        return;
    }
    c->input_queued = true;
    c->next_input = input_list;
    input_list = c;
    /* An active idle handle makes the loop poll without blocking, so the
     * queued requests run on the next iteration even if no byte arrives. */
    uv_idle_start(&input_handle, run_pending_input);
}

static void protocol_error(struct conn *c, const char *msg);

void
conn_wake(struct conn *c, bool protocol_failed)
{
    if (protocol_failed) {
        protocol_error(c, resp_error(c->parser));
    }
    if (c->state == CONN_POSTPONED) {
        /* Its held request runs first (or waits again for CLIENT PAUSE,
         * as process_input() checks every request). */
        c->state = CONN_READING;
    }
    if (c->state == CONN_READING) {
        queue_input(c);
    }
    if (obuf_pending(&c->out) > 0) {
        queue_write(c);
    }
}

static void
client_list_remove(struct conn *c)
{
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else if (srv.clients == c) {
        srv.clients = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    c->prev = c->next = NULL;
}

/* ---- closing ---------------------------------------------------------- */

static void
on_close(uv_handle_t *h)
{
    struct conn *c = h->data;
    multi_discard(c);               /* a disconnect discards the MULTI */
    resp_destroy(&c->parser);
    obuf_deinit(&c->out);
    mem_free(c->name);
    mem_free(c->lib_name);
    mem_free(c->lib_ver);
    mem_free(c);
}

/* Close now (memory goes in the close callback); safe to call from inside
 * a command. */
static void
conn_close(struct conn *c)
{
    if (c->state == CONN_CLOSING) {
        return;
    }
    bool counted = c->prev != NULL || srv.clients == c;
    c->state = CONN_CLOSING;
    if (c->monitor) {
        monitor_remove(c);
    }
    pubsub_forget(c);
    repl_forget(c);
    client_unfed(c);
    if (counted) {
        client_list_remove(c);
        srv.nclients--;
    }
    /* Still on write_list or input queue: those walkers skip CLOSING
     * clients and drop them; memory goes only when libuv calls on_close,
     * after any in-flight write was cancelled. */
    uv_read_stop(&c->h.stream);
    if (!c->write_queued && !c->input_queued) {
        uv_close(&c->h.handle, on_close);
    }
}

/* Called when a CLOSING client leaves the last queue it was on. */
static void
finish_close(struct conn *c)
{
    if (c->state == CONN_CLOSING && !c->write_queued && !c->input_queued &&
        !uv_is_closing(&c->h.handle)) {
        uv_close(&c->h.handle, on_close);
    }
}

/* Reply what is queued, then close. */
static void
conn_close_after_reply(struct conn *c)
{
    if (c->state == CONN_CLOSING) {
        return;
    }
    c->state = CONN_CLOSE_AFTER_REPLY;
    uv_read_stop(&c->h.stream);
    queue_write(c);
}

void
conn_close_all(void)
{
    while (srv.clients != NULL) {
        conn_close(srv.clients);
    }
}

/* ---- accept ----------------------------------------------------------- */

static void
describe_peer(struct conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    if (c->is_unix) {
        snprintf(c->addr, sizeof(c->addr), "/unixsocket:0");
        snprintf(c->laddr, sizeof(c->laddr), "%s", srv.conf.unixsocket);
        return;
    }
    if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) == 0) {
        client_format_addr(&ss, c->addr, sizeof(c->addr));
    }
    len = sizeof(ss);
    if (uv_tcp_getsockname(&c->h.tcp, (struct sockaddr *)&ss, &len) == 0) {
        client_format_addr(&ss, c->laddr, sizeof(c->laddr));
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static struct conn *
conn_create(bool is_unix)
{
    struct conn *c = mem_calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->authenticated = srv.conf.requirepass.len == 0;
    c->parser = resp_create(c->authenticated ? &srv.limits
                                             : &srv.unauth_limits);
    if (c->parser == NULL) {
        mem_free(c);
        return NULL;
    }
    obuf_init(&c->out);
    reply_buf_init(&c->rbuf, clock_loop_ms());
    c->is_unix = is_unix;
    c->proto = 2;
    c->h.handle.data = c;
    return c;
}

static void
log_accept_error(int err)
{
    srv.stats.accept_errors++;
    if (log_ratelimit(&srv.stats.accept_error_logged_ms,
                      &srv.stats.accept_errors_suppressed)) {
        log_warning("Accepting client connection: %s", uv_strerror(err));
    }
}

/* A connection just opened (accepted by the loop, or adopted from the
 * busy server): counted, named, numbered, listed and read from. */
static void
attach(struct conn *c)
{
    srv.stats.connections_received++;
    c->created_ms = c->last_interaction_ms = clock_loop_ms();
    if (!c->is_unix) {
        uv_tcp_nodelay(&c->h.tcp, 1);
    }
    describe_peer(c);
    if (srv.nclients + srv.grpc_clients >= (size_t)srv.conf.maxclients) {
        srv.stats.rejected_connections++;
        c->state = CONN_CLOSE_AFTER_REPLY;
        reply_errorz(&c->out, "ERR max number of clients reached");
        queue_write(c);
        return;
    }
    c->id = ++srv.next_client_id;
    c->next = srv.clients;
    if (srv.clients != NULL) {
        srv.clients->prev = c;
    }
    srv.clients = c;
    srv.nclients++;
    log_debug("Accepted %s (id=%llu)", c->addr, (unsigned long long)c->id);
    c->state = CONN_READING;
    uv_read_start(&c->h.stream, on_alloc, on_read);
}

/* Accept a pending connection on `server`. */
static void
conn_accept(uv_stream_t *server, bool is_unix)
{
    struct conn *c = conn_create(is_unix);
    int rc;
    if (c == NULL) {
        /* Accept and drop it, or the listener stays readable forever. */
        log_accept_error(UV_ENOMEM);
        return;
    }
    rc = is_unix ? uv_pipe_init(srv.loop, &c->h.pipe, 0)
                 : uv_tcp_init(srv.loop, &c->h.tcp);
    if (rc == 0) {
        c->h.handle.data = c;
        rc = uv_accept(server, &c->h.stream);
        if (rc != 0) {
            log_accept_error(rc);
            c->state = CONN_CLOSING;
            uv_close(&c->h.handle, on_close);
            return;
        }
    } else {
        log_accept_error(rc);
        resp_destroy(&c->parser);
        mem_free(c);
        return;
    }
    attach(c);
}

struct conn *
conn_prepare(bool is_unix)
{
    return conn_create(is_unix);
}

void
conn_adopt(struct conn *c, int fd, bool protocol_failed)
{
    int rc = c->is_unix ? uv_pipe_init(srv.loop, &c->h.pipe, 0)
                        : uv_tcp_init(srv.loop, &c->h.tcp);
    if (rc != 0) {
        log_accept_error(rc);
        close(fd);
        resp_destroy(&c->parser);
        obuf_deinit(&c->out);
        mem_free(c);
        return;
    }
    c->h.handle.data = c;
    rc = c->is_unix ? uv_pipe_open(&c->h.pipe, fd)
                    : uv_tcp_open(&c->h.tcp, fd);
    if (rc != 0) {
        log_accept_error(rc);
        close(fd);
        c->state = CONN_CLOSING;
        uv_close(&c->h.handle, on_close);
        return;
    }
    /* What the busy server framed and held, or answered and could not
     * write, is the connection's first business. */
    struct resp_request held = c->held;
    attach(c);
    if (c->state == CONN_READING && held.argc != 0) {
        c->state = CONN_POSTPONED;
    }
    conn_wake(c, protocol_failed);
}

void
conn_on_connection(uv_stream_t *server, int status, bool is_unix)
{
    if (status < 0) {
        log_accept_error(status);
        return;
    }
    conn_accept(server, is_unix);
}

/* ---- reading ---------------------------------------------------------- */

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    /* One buffer serves every client: its bytes are fed to the parser
     * before on_read returns. */
    if (read_buf_busy) {
        buf->base = NULL;
        buf->len = 0;
        return;
    }
    read_buf_busy = true;
    buf->base = read_buf;
    buf->len = sizeof(read_buf);
}

static void
protocol_error(struct conn *c, const char *msg)
{
    srv.stats.protocol_errors++;
    if (log_ratelimit(&warn_last_ms, &warn_suppressed)) {
        log_verbose("Closing client %s after protocol error: %s", c->addr, msg);
    }
    cmd_error(c, msg);
    conn_close_after_reply(c);
}

static void
on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    if (buf->base == read_buf) {
        read_buf_busy = false;
    }
    if (nread == 0 || c->state == CONN_CLOSING) {
        return;
    }
    if (nread < 0) {
        if (nread != UV_EOF) {
            log_verbose("Reading from client %s: %s", c->addr,
                        uv_strerror((int)nread));
        }
        conn_close(c);
        return;
    }
    srv.stats.net_input_bytes += (uint64_t)nread;
    c->last_interaction_ms = clock_loop_ms();
    if (c->state != CONN_READING && c->state != CONN_PAUSED) {
        return; /* closing after a reply: ignore further input */
    }
    if (resp_feed(c->parser, buf->base, (size_t)nread) < 0) {
        srv.stats.querybuf_limit_closes++;
        log_warning("Closing client %s: %s", c->addr, resp_error(c->parser));
        /* Replies to what was framed already go first. */
        process_input(c);
        if (c->state == CONN_READING || c->state == CONN_PAUSED) {
            protocol_error(c, resp_error(c->parser));
        }
        return;
    }
    process_input(c);
}

static void
pause_reading(struct conn *c)
{
    c->state = CONN_PAUSED;
    c->paused_since_ms = clock_loop_ms();
    uv_read_stop(&c->h.stream);
}

static void
resume_reading(struct conn *c)
{
    c->state = CONN_READING;
    if (!c->backlog) {
        uv_read_start(&c->h.stream, on_alloc, on_read);
    }
    queue_input(c);
}

/* Enforce the output limits after each command. Returns false when the
 * client must not run more commands now. */
static bool
check_output_limits(struct conn *c)
{
    size_t pending = obuf_pending(&c->out);
    if (c->out.oom) {
        log_warning("Closing client %s: out of memory for its replies",
                    c->addr);
        conn_close(c);
        return false;
    }
    if (pending > (size_t)srv.conf.output_hard_limit) {
        srv.stats.output_limit_closes++;
        log_warning("Closing client %s: output buffer of %zu bytes passed "
                    "client-output-hard-limit", c->addr, pending);
        conn_close(c);
        return false;
    }
    if (pending > (size_t)srv.conf.output_pause_limit) {
        pause_reading(c);
        return false;
    }
    return true;
}

/* Pipelined requests are already in the buffer: warm the cache for the
 * keys of the next two while this one runs, so their store lookups do not
 * each wait for two cache misses (bucket, then record). A two-slot ring
 * carries each key's hash from its bucket prefetch (two requests ahead)
 * to its record prefetch (one ahead) to its lookup (c->hint). A peeked
 * key is a hint for this request only if it sits at the stream offset of
 * this request's argv[1]: then it is the same bytes, the hash is exact,
 * and the lookup and an add after it need no hash of their own. */
static void
prefetch_ahead(struct conn *c, const struct resp_request *req)
{
    const char *key;
    size_t len;

    c->hint.valid = c->pf_valid[0] && req->argc >= 2 &&
                        c->pf_len[0] == req->argvlen[1] &&
                        c->pf_off[0] == resp_key_offset(c->parser);
    c->hint.hash = c->pf_hash[0];
    c->pf_valid[0] = c->pf_valid[1];
    c->pf_hash[0] = c->pf_hash[1];
    c->pf_len[0] = c->pf_len[1];
    c->pf_off[0] = c->pf_off[1];
    if (c->pf_valid[0]) {
        store_prefetch_record(srv.store, c->pf_hash[0]);
    }
    c->pf_valid[1] = resp_peek_ahead(c->parser, &key, &len, &c->pf_off[1]);
    if (c->pf_valid[1]) {
        c->pf_hash[1] = store_prefetch_bucket(srv.store, key, len);
        c->pf_len[1] = len;
    }
}

/* Unparsed input and queued MULTI commands within client-query-buffer-
 * limit; otherwise the client is closed as the parser's limit closes it. */
static bool
within_query_limit(struct conn *c)
{
    if (resp_buffered(c->parser) + multi_memory(c) <= srv.limits.max_query) {
        return true;
    }
    srv.stats.querybuf_limit_closes++;
    log_warning("Closing client %s: its MULTI queue passed "
                "client-query-buffer-limit", c->addr);
    protocol_error(c, "ERR Protocol error: client query buffer limit "
                      "reached");
    return false;
}

/* Close the clients a CLIENT KILL marked. */
static void
close_killed(void)
{
    struct conn *x = srv.clients;
    while (x != NULL) {
        struct conn *next = x->next;
        if (x->requests & CLIENT_KILLED) {
            conn_close(x);
        }
        x = next;
    }
}

/* A client that got lines or messages it does not read: closed at the
 * hard output limit, as a MONITOR or a subscriber in Redis. */
static void
queue_feed(struct conn *m, const char *what)
{
    if (obuf_pending(&m->out) > (size_t)srv.conf.output_hard_limit ||
        m->out.oom) {
        srv.stats.output_limit_closes++;
        log_warning("Closing %s client %s: it does not read its output fast "
                    "enough", what, m->addr);
        conn_close(m);
    } else {
        queue_write(m);
    }
}

/* Send what was appended for other clients (PUBLISH messages, the
 * replication stream). */
static void
flush_fed(void)
{
    struct conn *m = client_take_fed();
    while (m != NULL) {
        struct conn *next = m->next_fed;
        m->next_fed = NULL;
        if (m->requests & CLIENT_KILLED) {
            conn_close(m);          /* a replica whose sync failed */
            m = next;
            continue;
        }
        if ((m->requests & CLIENT_UNBLOCKED) && m->state == CONN_BLOCKED) {
            m->requests &= ~(unsigned)CLIENT_UNBLOCKED;
            m->state = CONN_READING;
            queue_input(m);         /* its pipeline goes on */
        }
        queue_feed(m, m->subs != NULL ? "pub/sub" : "fed");
        m = next;
    }
}

/* Send the MONITOR lines a command queued, within the output limit. */
static void
flush_monitors(void)
{
    struct conn *m = monitor_first();
    while (m != NULL) {
        struct conn *next = m->next_monitor;
        queue_feed(m, "MONITOR");
        m = next;
    }
}

/* ---- CLIENT PAUSE ----------------------------------------------------- */

/* Must this request wait for the pause to end? As Redis: under PAUSE ALL
 * every command, under PAUSE WRITE a write or may-replicate command (EVAL)
 * or an EXEC holding one; one Redis refuses before (unknown, wrong arity)
 * never waits. */
static bool
must_wait(const struct conn *c, const struct resp_request *req)
{
    const struct cmd *cmd = cmd_lookup(req->argv[0], req->argvlen[0]);
    if (cmd == NULL || !cmd_arity_ok(cmd, req->argc)) {
        return false;
    }
    unsigned replicates = CMD_WRITE | CMD_MAY_REPLICATE;
    unsigned flags = cmd->flags;
    if (cmd->flags & (CMD_SCRIPT_BODY | CMD_SCRIPT_SHA)) {
        flags = script_request_flags(flags, req,
                                     (cmd->flags & CMD_SCRIPT_SHA) != 0);
    }
    return srv.pause_all || (flags & replicates) ||
           ((cmd->flags & CMD_EXEC) && cmd_queue_has(c, replicates));
}

/* Hold req (its argv stays valid: nothing is read or parsed meanwhile)
 * until the pause ends. */
static void
postpone(struct conn *c, const struct resp_request *req)
{
    c->held = *req;
    c->state = CONN_POSTPONED;
    if (!c->backlog) {
        c->backlog = true;
        uv_read_stop(&c->h.stream);
    }
}

/* The pause is over: the held requests run (first in each client's
 * queue), in no particular order between clients. */
static void
wake_postponed(void)
{
    srv.pause_end_ms = 0;
    srv.pause_all = false;
    for (struct conn *x = srv.clients; x != NULL; x = x->next) {
        if (x->state == CONN_POSTPONED) {
            x->state = CONN_READING;
            queue_input(x);
        }
    }
}

/* ---- CLIENT REPLY ----------------------------------------------------- */

/* Run a command whose reply CLIENT REPLY OFF or SKIP drops: it writes to
 * a buffer of its own, kept only when it was CLIENT REPLY ON (its +OK is
 * sent, as Redis sends it). */
static void
run_muted(struct conn *c, struct resp_request *req)
{
    struct obuf kept = c->out;
    if (c->reply_mode == CLIENT_REPLY_SKIP_NEXT) {
        c->reply_mode = CLIENT_REPLY_SKIP;
    }
    obuf_init(&c->out);
    cmd_execute(c, req);
    struct obuf muted = c->out;
    c->out = kept;
    if (c->reply_mode == CLIENT_REPLY_ON) {
        struct iovec iov[8];
        size_t n, bytes, skip = 0;
        while ((n = obuf_iov(&muted, skip, iov, 8, &bytes)) > 0) {
            for (size_t i = 0; i < n; i++) {
                obuf_append(&c->out, iov[i].iov_base, iov[i].iov_len);
            }
            skip += bytes;
        }
    } else if (c->reply_mode == CLIENT_REPLY_SKIP) {
        c->reply_mode = CLIENT_REPLY_ON;        /* the one skipped */
    }
    obuf_deinit(&muted);
}

static void
run_request(struct conn *c, struct resp_request *req)
{
    if (c->reply_mode == CLIENT_REPLY_ON) {
        cmd_execute(c, req);
    } else {
        run_muted(c, req);
    }
}

/* What the command asked of the connection (client.h). */
static void
carry_out_requests(struct conn *c)
{
    unsigned r = c->requests;
    c->requests = 0;
    if (r & CLIENT_AUTHENTICATED) {
        resp_set_limits(c->parser, &srv.limits);    /* lift pre-AUTH caps */
    }
    if ((r & CLIENT_DEAUTHENTICATED) && !c->authenticated) {
        resp_set_limits(c->parser, &srv.unauth_limits);
    }
    if (r & CLIENT_FEEDS) {
        flush_monitors();
        flush_fed();
    }
    if (r & CLIENT_UNPAUSES) {
        wake_postponed();
    }
    if (r & CLIENT_KILLS) {
        close_killed();
    }
    if (r & CLIENT_CLOSE_AFTER_REPLY) {
        conn_close_after_reply(c);
    }
}

static void
process_input(struct conn *c)
{
    struct resp_request req;
    unsigned budget = CONN_MAX_REQS_PER_EVENT;

    cmd_batch_begin();
    clock_batch_open();
    (void)keyspace_select(c->db);   /* it exists: SELECT made it */
    c->batch_qbuf = resp_buffered(c->parser);
    while (c->state == CONN_READING) {
        if (budget-- == 0) {
            /* Fairness: let other clients run. Stop reading this one until
             * its backlog is done, so complete requests do not pile up in
             * its query buffer (and trip its limit) meanwhile. */
            if (!c->backlog) {
                c->backlog = true;
                uv_read_stop(&c->h.stream);
            }
            queue_input(c);
            break;
        }
        enum resp_status st = RESP_REQUEST;
        if (c->held.argc != 0) {
            req = c->held;                  /* postponed by CLIENT PAUSE */
            c->held.argc = 0;
        } else {
            st = resp_next(c->parser, &req);
        }
        if (st == RESP_AGAIN) {
            if (c->backlog) {
                c->backlog = false;
                uv_read_start(&c->h.stream, on_alloc, on_read);
            }
            if (resp_memory(c->parser) > CONN_SHRINK_AFTER) {
                resp_shrink(c->parser);     /* no-op mid-request */
            }
            break;
        }
        if (st == RESP_ERROR) {
            protocol_error(c, resp_error(c->parser));
            break;
        }
        /* For every framed request: it also sets (or clears) this
         * request's key hash, which keyspace_lookup()/keyspace_add()
         * trust; skipping it would leave the previous request's. */
        if (srv.pause_end_ms != 0 && must_wait(c, &req)) {
            postpone(c, &req);
            break;
        }
        prefetch_ahead(c, &req);
        uint64_t effects = srv.journal_effects;
        run_request(c, &req);
        if (srv.journal_effects != effects) {
            c->journal_gen = persist_generation();
        }
        if (c->requests != 0) {
            carry_out_requests(c);
        }
        if (c->state == CONN_BLOCKED) {
            /* WAIT: nothing after it runs before its answer. */
            if (!c->backlog) {
                c->backlog = true;
                uv_read_stop(&c->h.stream);
            }
            break;
        }
        if (c->multi != NULL && !within_query_limit(c)) {
            break;
        }
        if (!check_output_limits(c)) {
            break;
        }
    }
    clock_batch_close();
    if (c->state != CONN_CLOSING && obuf_pending(&c->out) > 0) {
        queue_write(c);
    }
}

static void
run_pending_input(uv_idle_t *h)
{
    (void)h;
    struct conn *list = input_list;
    input_list = NULL;
    uv_idle_stop(&input_handle);
    while (list != NULL) {
        struct conn *c = list;
        list = c->next_input;
        c->next_input = NULL;
        c->input_queued = false;
        if (c->state == CONN_READING) {
            process_input(c); /* may queue it again */
        } else {
            finish_close(c);
        }
    }
}

/* ---- writing ---------------------------------------------------------- */

static void on_write(uv_write_t *req, int status);

static size_t
fill_bufs(struct conn *c, uv_buf_t *bufs, size_t *bytes)
{
    struct iovec iov[CONN_MAX_IOV];
    size_t n = obuf_iov(&c->out, 0, iov, CONN_MAX_IOV, bytes);
    for (size_t i = 0; i < n; i++) {
        bufs[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
    }
    return n;
}

/* Write what is queued: try a direct write first; hand the rest to
 * uv_write, whose bytes stay untouched until on_write. */
static void
flush_conn(struct conn *c)
{
    uv_buf_t bufs[CONN_MAX_IOV];
    size_t bytes;

    if (c->inflight > 0 || c->state == CONN_CLOSING) {
        return;
    }
    if (c->journal_gen > persist_safe()) {
        queue_write(c);             /* its decisions are not saved yet */
        return;
    }
    c->rbuf.peak = reply_buf_peak(&c->rbuf, obuf_pending(&c->out));
    while (obuf_pending(&c->out) > 0) {
        size_t n = fill_bufs(c, bufs, &bytes);
        int w = uv_try_write(&c->h.stream, bufs, (unsigned)n);
        if (w == UV_EAGAIN || w == UV_ENOSYS) {
            break;
        }
        if (w < 0) {
            log_verbose("Writing to client %s: %s", c->addr, uv_strerror(w));
            conn_close(c);
            return;
        }
        srv.stats.net_output_bytes += (uint64_t)w;
        obuf_consume(&c->out, (size_t)w);
        if ((size_t)w < bytes) {
            break; /* the kernel buffer is full */
        }
    }
    if (obuf_pending(&c->out) > 0) {
        size_t n = fill_bufs(c, bufs, &bytes);
        int rc = uv_write(&c->wreq, &c->h.stream, bufs, (unsigned)n, on_write);
        if (rc != 0) {
            log_verbose("Writing to client %s: %s", c->addr, uv_strerror(rc));
            conn_close(c);
            return;
        }
        c->inflight = bytes;
        return;
    }
    obuf_shrink(&c->out);
    if (c->state == CONN_CLOSE_AFTER_REPLY) {
        conn_close(c);
    }
}

static void
after_drain(struct conn *c)
{
    if (c->state == CONN_PAUSED &&
        obuf_pending(&c->out) <= (size_t)srv.conf.output_pause_limit / 2) {
        resume_reading(c);
    }
}

static void
on_write(uv_write_t *req, int status)
{
    struct conn *c = req->handle->data;
    size_t sent = c->inflight;
    c->inflight = 0;
    if (c->state == CONN_CLOSING) {
        return; /* cancelled by uv_close; on_close frees */
    }
    if (status < 0) {
        log_verbose("Writing to client %s: %s", c->addr, uv_strerror(status));
        conn_close(c);
        return;
    }
    srv.stats.net_output_bytes += sent;
    obuf_consume(&c->out, sent);
    after_drain(c);
    if (c->state != CONN_CLOSING) {
        queue_write(c);
    }
}

static void
flush_all(uv_prepare_t *h)
{
    (void)h;
    keyspace_publish();             /* the pass's effects, to every sink */
    persist_before_replies();       /* the journal's written (and fsynced) */
    flush_fed();                    /* the replication stream it fed */
    struct conn *list = write_list;
    write_list = NULL;
    while (list != NULL) {
        struct conn *c = list;
        list = c->next_pending;
        c->write_queued = false;
        c->next_pending = NULL;
        if (c->state == CONN_CLOSING) {
            finish_close(c);
            continue;
        }
        flush_conn(c);
        if (c->state != CONN_CLOSING) {
            after_drain(c);
        } else {
            finish_close(c);
        }
    }
}

/* ---- cron ------------------------------------------------------------- */

void
conn_cron(int64_t now_ms)
{
    if (srv.pause_end_ms != 0 && now_ms >= srv.pause_end_ms) {
        wake_postponed();
    }
    int64_t timeout_ms = srv.conf.timeout * 1000;
    int64_t pause_ms = srv.conf.output_pause_timeout * 1000;
    struct conn *c = srv.clients;
    while (c != NULL) {
        struct conn *next = c->next;
        /* Redis resizes a few clients per tick; all of them here. */
        reply_buf_cron(&c->rbuf, obuf_pending(&c->out), now_ms);
        if (pause_ms > 0 && c->state == CONN_PAUSED &&
            now_ms - c->paused_since_ms > pause_ms) {
            srv.stats.output_limit_closes++;
            log_warning("Closing client %s: it has not read its replies for "
                        "%lld s (client-output-pause-timeout)", c->addr,
                        (long long)srv.conf.output_pause_timeout);
            conn_close(c);
        } else if (timeout_ms > 0 && c->state != CONN_POSTPONED &&
                   c->state != CONN_BLOCKED &&
                   !c->monitor &&
                   now_ms - c->last_interaction_ms > timeout_ms &&
                   c->inflight == 0) {
            /* As Redis: blocked clients and monitors never time out. */
            srv.stats.idle_timeout_closes++;
            log_verbose("Closing idle client %s", c->addr);
            conn_close(c);
        } else if (c->state == CONN_READING && c->inflight == 0 &&
                   obuf_pending(&c->out) == 0 && c->held.argc == 0) {
            /* (A held request's argv lives in the parser's buffer.) */
            resp_shrink(c->parser);
        }
        c = next;
    }
}
