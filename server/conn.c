/*
 * conn.c - client connections (see conn.h for the states and who holds
 * what).
 *
 * Two sides, one file: the socket side (reading, framing ahead, writing,
 * closing the socket) runs on the client's home thread, an I/O thread or
 * the main thread; the main side (running requests, the states CLIENT
 * PAUSE and WAIT hold, the request bits commands set, the journal's rule
 * for replies, the clients' cron) runs on the main thread. A client homed
 * on the main loop (every client with io-threads 1) has both sides on one
 * thread, and nothing is handed over: its socket side calls the main side
 * directly.
 *
 * Fairness and limits, all enforced here:
 *  - at most CONN_MAX_REQS_PER_EVENT requests run per turn of a client;
 *    a client with more buffered requests is queued and resumed on the
 *    next loop iteration (an active idle handle keeps poll from blocking);
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

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/mem.h"
#include "lib/slist.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/blocked.h"
#include "server/busy.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/iothread.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/persist/persist.h"
#include "server/pubsub.h"
#include "server/repl/replication.h"
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
/* Bytes an I/O thread reads for a client the main thread holds before it
 * stops reading it (the kernel then holds the rest). */
#define CONN_SIDE_MAX ((size_t)64 << 10)

static uv_prepare_t flush_handle;
static uv_idle_t input_handle;
static struct conn *write_list;      /* clients with output to flush */
static struct conn *input_list;      /* clients with requests left to run */
static struct conn *postponed;       /* held by CLIENT PAUSE */
/* One read buffer per thread: its bytes are fed to the parser (or kept
 * aside) before the read callback returns. */
static _Thread_local char read_buf[CONN_READ_BUF];
static _Thread_local bool read_buf_busy;
/* An I/O thread's clients whose next request waits for a script. */
static _Thread_local struct conn *waiting_busy;
static int64_t warn_last_ms;
/* Clients whose I/O thread closed their socket (the peer went, or the
 * reply before a close was written) and that the main thread has not
 * forgotten yet: they hold no slot under maxclients, so a client that
 * reconnects the moment it sees its socket closed is let in as it would
 * be without threads. (If the main thread forgets one meanwhile too, it
 * is subtracted twice until its HOP_CLOSED: a moment, at worst one more
 * client than maxclients.) */
static _Atomic size_t closed_early;
static uint64_t warn_suppressed;

static void flush_all(uv_prepare_t *h);
static void on_close(uv_handle_t *h);
static void run_pending_input(uv_idle_t *h);
static void process_input(struct conn *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void at_thread(struct conn *c, unsigned hops);
static void at_main(struct conn *c, unsigned hops);
static void close_handle(uv_handle_t *h);
static void thread_woken(void);
static void warm_up(struct conn *c, int phase);

#ifdef __SANITIZE_THREAD__
/* sanitizer_common's syscall hook (libtsan exports it; GCC ships no
 * header for it). */
void __sanitizer_syscall_pre_impl_close(long fd);
#endif

/* Close a client's socket handle. libuv closes the descriptor with a raw
 * syscall(SYS_close) (uv__close_nocancel), which ThreadSanitizer does not
 * see: when the main thread's next accept() got the same number, TSan took
 * the new socket for the old one an I/O thread had used. libuv's own TSan
 * build reports the close through the sanitizer's syscall hook; so does
 * this, for every client socket, on whichever thread closes it. */
static void
close_socket(uv_handle_t *h, uv_close_cb cb)
{
#ifdef __SANITIZE_THREAD__
    uv_os_fd_t fd;
    if (uv_fileno(h, &fd) == 0) {
        __sanitizer_syscall_pre_impl_close(fd);
    }
#endif
    uv_close(h, cb);
}

static const struct iothread_ops hand_offs = {
    at_thread, at_main, close_handle, thread_woken, warm_up
};

/* ---- framing ------------------------------------------------------------ */


/* Frame what c has buffered, as far as the limits it is framed with may
 * hold: a client before AUTH (requirepass) gets the smaller limits, which
 * its AUTH lifts, so it is framed a request at a time. */
static void
frame_ahead(struct conn *c, size_t max)
{
    if (!c->authenticated && max > 1) {
        max = resp_queued(c->parser) == 0 ? 1 : 0;
    }
    if (max > 0) {
        (void)resp_frame_ahead(c->parser, max, &cmd_frame_ops);
    }
}

/* ---- set-up ------------------------------------------------------------ */

static void served_blocked(struct conn *c);

int
conn_setup(uv_loop_t *loop)
{
    blocked_set_served(served_blocked);
    if (uv_prepare_init(loop, &flush_handle) != 0 ||
        uv_idle_init(loop, &input_handle) != 0) {
        return -1;
    }
    uv_prepare_start(&flush_handle, flush_all);
    return iothreads_start(loop, (unsigned)srv.conf.io_threads, &hand_offs);
}

/* Close a client that sits on the write or input queue at shutdown: the
 * prepare and idle handles that would have drained those queues are gone. */
static void
close_queued(struct conn *c)
{
    c->write_queued = false;
    c->input_queued = false;
    if (c->home != 0) {
        return;                 /* its thread closes it: iothreads_stop() */
    }
    c->state = CONN_CLOSING;
    if (!uv_is_closing(&c->h.handle)) {
        close_socket(&c->h.handle, on_close);
    }
}

void
conn_teardown(void)
{
    SL_DRAIN(struct conn, c, write_list, next_pending) {
        close_queued(c);
    }
    SL_DRAIN(struct conn, c, input_list, next_input) {
        close_queued(c);
    }
    iothreads_stop();
    uv_prepare_stop(&flush_handle);
    uv_idle_stop(&input_handle);
    uv_close((uv_handle_t *)&flush_handle, NULL);
    uv_close((uv_handle_t *)&input_handle, NULL);
}

/* ---- the main thread's lists -------------------------------------------- */

/* Does the main thread hold c (its socket side aside)? */
static inline bool
main_holds(const struct conn *c)
{
    return c->home == 0 || c->at_main;
}

static void
list_write(struct conn *c)
{
    if (!c->write_queued) {
        c->write_queued = true;
        /* Order does not matter between clients; push front. */
        SL_PUSH(write_list, c, next_pending);
    }
}

static void
queue_write(struct conn *c)
{
    if (c->state != CONN_CLOSING) {
        list_write(c);
    }
}

static void
queue_input(struct conn *c)
{
    if (c->input_queued || c->state != CONN_READING) {
        return;
    }
    c->input_queued = true;
    SL_PUSH(input_list, c, next_input);
    /* An active idle handle makes the loop poll without blocking, so the
     * queued requests run on the next iteration even if no byte arrives. */
    uv_idle_start(&input_handle, run_pending_input);
}

static void
unlist_postponed(struct conn *c)
{
    if (!c->postponed_listed) {
        return;
    }
    SL_UNLINK(struct conn, postponed, c, next_postponed);
    c->postponed_listed = false;
    c->next_postponed = NULL;
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

/* ---- memory ------------------------------------------------------------- */

/* Take c off the main thread's write and input lists, those it is on (the
 * lender holds it now, or it goes). */
static void
unlist_queued(struct conn *c)
{
    if (c->write_queued) {
        SL_UNLINK(struct conn, write_list, c, next_pending);
        c->write_queued = false;
    }
    if (c->input_queued) {
        SL_UNLINK(struct conn, input_list, c, next_input);
        c->input_queued = false;
    }
}

static void
free_conn(struct conn *c)
{
    /* Still listed when something let it go while it waited there (a
     * migrating client's socket arrived after it closed, say). */
    unlist_queued(c);
    multi_discard(c);               /* a disconnect discards the MULTI */
    resp_destroy(&c->parser);
    obuf_deinit(&c->out);
    obuf_deinit(&c->wbuf);
    mem_free(c->side.p);
    mem_free(c->name);
    mem_free(c->lib_name);
    mem_free(c->lib_ver);
    mem_free(c);
}

static void
on_close(uv_handle_t *h)
{
    free_conn(h->data);
}

/* ---- closing (main thread) ---------------------------------------------- */

/* What the main thread forgets of a client that goes: its registries,
 * the client list and counts. Once. */
static void
forget_client(struct conn *c)
{
    bool counted = c->prev != NULL || srv.clients == c;
    if (c->monitor) {
        monitor_remove(c);
    }
    pubsub_forget(c);
    repl_forget(c);
    blocked_forget(c);
    client_unfed(c);
    unlist_postponed(c);
    if (counted) {
        client_list_remove(c);
        srv.nclients--;
        io_clients_add(c->home, -1);
    }
}

/* Close a homed client's socket side: the main thread holds it (and hands
 * it back to be closed at the flush, once done with it: the command that
 * closed it, and the batch it was in, still read it), or its thread does
 * (which then closes it), or it is on its way to the main thread (which
 * then hands it back to be closed: at_main()). */
static void
close_homed(struct conn *c)
{
    c->closing = true;
    if (c->migrating) {
        return;                 /* its socket comes: at_main() closes it */
    }
    if (c->at_main) {
        c->state = CONN_CLOSING;
        list_write(c);          /* flush_one() hands it */
    } else {
        iothread_hand(c, c->home, HOP_KILL);
    }
}

/* Close now (memory goes once the socket is closed); safe to call from
 * inside a command. */
static void
conn_close(struct conn *c)
{
    /* (A client homed on an I/O thread that the main thread does not hold:
     * its state is its thread's to read.) */
    if (c->closing || (main_holds(c) && c->state == CONN_CLOSING)) {
        return;
    }
    forget_client(c);
    if (c->home != 0) {
        close_homed(c);
        return;
    }
    c->state = CONN_CLOSING;
    /* Still on write_list or input queue: those walkers skip CLOSING
     * clients and drop them; memory goes only when libuv calls on_close,
     * after any in-flight write was cancelled. */
    uv_read_stop(&c->h.stream);
    if (!c->write_queued && !c->input_queued && !c->lent) {
        close_socket(&c->h.handle, on_close);
    }
}

/* Called when a CLOSING client leaves the last queue it was on. */
static void
finish_close(struct conn *c)
{
    if (c->home == 0 && c->state == CONN_CLOSING && !c->write_queued &&
        !c->input_queued && !c->lent && !uv_is_closing(&c->h.handle)) {
        close_socket(&c->h.handle, on_close);
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
    if (c->home == 0) {
        uv_read_stop(&c->h.stream);
    }
    queue_write(c);
}

void
conn_close_all(void)
{
    struct conn *c = srv.clients;
    while (c != NULL) {
        struct conn *next = c->next;
        conn_close(c);
        c = next;
    }
}

/* ---- accept ------------------------------------------------------------- */

/* Name the peer and the local end, as CLIENT LIST shows them, from the
 * handle that accepted c's socket. */
static void
describe_peer(struct conn *c, uv_tcp_t *tcp)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    if (c->is_unix) {
        snprintf(c->addr, sizeof(c->addr), "/unixsocket:0");
        snprintf(c->laddr, sizeof(c->laddr), "%s", srv.conf.unixsocket);
        return;
    }
    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) == 0) {
        client_format_addr(&ss, c->addr, sizeof(c->addr));
    }
    len = sizeof(ss);
    if (uv_tcp_getsockname(tcp, (struct sockaddr *)&ss, &len) == 0) {
        client_format_addr(&ss, c->laddr, sizeof(c->laddr));
    }
}

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
    c->adopt_fd = -1;
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

/* Open c's socket fd on loop (c->h is free). */
static int
open_handle(struct conn *c, uv_loop_t *loop, int fd)
{
    int rc = c->is_unix ? uv_pipe_init(loop, &c->h.pipe, 0)
                        : uv_tcp_init(loop, &c->h.tcp);
    if (rc != 0) {
        return rc;
    }
    c->h.handle.data = c;
    rc = c->is_unix ? uv_pipe_open(&c->h.pipe, fd)
                    : uv_tcp_open(&c->h.tcp, fd);
    return rc;
}

/* Counted, named, numbered and listed; false (and its error queued, to be
 * sent before it closes) past maxclients. */
static bool
admit(struct conn *c)
{
    srv.stats.connections_received++;
    c->created_ms = c->last_interaction_ms = clock_loop_ms();
    size_t gone = atomic_load_explicit(&closed_early, memory_order_relaxed);
    size_t held = srv.nclients > gone ? srv.nclients - gone : 0;
    if (held + srv.grpc_clients >= (size_t)srv.conf.maxclients) {
        srv.stats.rejected_connections++;
        c->state = CONN_CLOSE_AFTER_REPLY;
        reply_errorz(&c->out, "ERR max number of clients reached");
        return false;
    }
    c->id = ++srv.next_client_id;
    c->next = srv.clients;
    if (srv.clients != NULL) {
        srv.clients->prev = c;
    }
    srv.clients = c;
    srv.nclients++;
    io_clients_add(0, 1);       /* the main loop's, until handed over */
    c->state = CONN_READING;
    log_debug("Accepted %s (id=%llu)", c->addr, (unsigned long long)c->id);
    return true;
}

/* A client's TCP socket as Redis's tcp-keepalive sets it (anetKeepAlive):
 * probes after that many idle seconds, then every third of it, three
 * unanswered ones close it; a dead peer frees its client. 0 = none. A
 * socket that refuses is served all the same. */
static void
set_keepalive(uv_tcp_t *tcp)
{
    int64_t idle = srv.conf.tcp_keepalive;
    uv_os_fd_t fd;
    if (idle <= 0 || uv_fileno((const uv_handle_t *)tcp, &fd) != 0) {
        return;
    }
    int yes = 1, secs = (int)idle, every = secs / 3 > 0 ? secs / 3 : 1,
        count = 3;
    (void)(setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &yes, sizeof(yes)) ||
           setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &secs, sizeof(secs)) ||
           setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &every,
                      sizeof(every)) ||
           setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count)));
}

/* A connection the main loop holds (accepted, or by the busy server):
 * admitted and read from. */
static void
attach(struct conn *c)
{
    if (!c->is_unix) {
        uv_tcp_nodelay(&c->h.tcp, 1);
        set_keepalive(&c->h.tcp);
    }
    describe_peer(c, &c->h.tcp);
    if (!admit(c)) {
        queue_write(c);
        return;
    }
    uv_read_start(&c->h.stream, on_alloc, on_read);
}

static void
free_handle(uv_handle_t *h)
{
    mem_free(h);
}

/* With I/O threads, a client accepted goes to the one with the fewest
 * clients: the main loop accepts it on a handle of its own, which hands a
 * copy of the socket over and closes (the thread opens the copy on its
 * loop: HOP_ADOPT), in the order the clients came. */
static void
accept_for_thread(uv_stream_t *server, struct conn *c)
{
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } *a = mem_malloc(sizeof(*a));
    int rc = a == NULL ? UV_ENOMEM
             : c->is_unix ? uv_pipe_init(srv.loop, &a->pipe, 0)
                          : uv_tcp_init(srv.loop, &a->tcp);
    if (rc != 0) {
        log_accept_error(rc);
        mem_free(a);
        free_conn(c);
        return;
    }
    uv_os_fd_t fd;
    int copy = -1;
    rc = uv_accept(server, &a->stream);
    if (rc == 0 && uv_fileno(&a->handle, &fd) == 0) {
        copy = dup(fd);
        rc = copy < 0 ? uv_translate_sys_error(errno) : 0;
    }
    if (rc == 0 && !c->is_unix) {
        uv_tcp_nodelay(&a->tcp, 1);
        set_keepalive(&a->tcp);
        describe_peer(c, &a->tcp);
    } else if (rc == 0) {
        describe_peer(c, NULL);
    }
    close_socket(&a->handle, free_handle);
    if (rc != 0) {
        log_accept_error(rc);
        free_conn(c);
        return;
    }
    if (!admit(c)) {
        /* The error goes from the main loop. */
        if (open_handle(c, srv.loop, copy) != 0) {
            close(copy);
            free_conn(c);
            return;
        }
        queue_write(c);
        return;
    }
    c->adopt_fd = copy;
    io_clients_add(0, -1);
    c->home = iothread_assign();
    iothread_hand(c, c->home, HOP_ADOPT);
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
    if (iothreads_count() > 1) {
        accept_for_thread(server, c);
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
            close_socket(&c->h.handle, on_close);
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

void
conn_on_connection(uv_stream_t *server, int status, bool is_unix)
{
    if (status < 0) {
        log_accept_error(status);
        return;
    }
    conn_accept(server, is_unix);
}

/* ---- reading (the home thread) -------------------------------------------- */

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    /* One buffer serves every client of the thread: its bytes are fed to
     * the parser before on_read returns. */
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
    if (c->querybuf_overflow) {
        srv.stats.querybuf_limit_closes++;
        log_warning("Closing client %s: %s", c->addr, msg);
    } else if (log_ratelimit(&warn_last_ms, &warn_suppressed)) {
        log_verbose("Closing client %s after protocol error: %s", c->addr,
                    msg);
    }
    cmd_error(c, msg);
    conn_close_after_reply(c);
}

/* An I/O thread reads a client's socket exactly when there is room for
 * what it sends: not once the peer is gone, not while the side buffer is
 * full or the parser holds a whole batch not framed yet (the kernel then
 * holds the rest, and TCP pushes back), and, while this thread holds it,
 * only when it is READING (not PAUSED by its output, not closing). */
static void
io_set_reading(struct conn *c)
{
    bool want = !c->eof && !c->stopped && !c->full &&
                (c->gone || c->state == CONN_READING);
    if (want == c->reading || uv_is_closing(&c->h.handle)) {
        return;
    }
    c->reading = want;
    if (want) {
        uv_read_start(&c->h.stream, on_alloc, on_read);
    } else {
        uv_read_stop(&c->h.stream);
    }
}

/* Bytes for a client its thread does not hold: kept aside until it comes
 * back, up to CONN_SIDE_MAX, then the socket waits. */
static void
keep_aside(struct conn *c, const char *buf, size_t n)
{
    if (!membuf_put(&c->side, buf, n)) {
        c->eof = true;          /* out of memory: the client goes */
        c->read_error = UV_ENOMEM;
    }
    if (c->side.len >= CONN_SIDE_MAX || c->eof) {
        c->stopped = true;
        io_set_reading(c);
    }
}

static void io_close(struct conn *c);
static void io_dispatch(struct conn *c);

/* The peer is gone (or a read failed). */
static void
read_ended(struct conn *c, ssize_t nread)
{
    if (nread != UV_EOF) {
        c->read_error = (int)nread;
    }
    if (c->home == 0) {
        if (c->read_error != 0) {
            log_verbose("Reading from client %s: %s", c->addr,
                        uv_strerror(c->read_error));
        }
        conn_close(c);
        return;
    }
    c->eof = true;
    io_set_reading(c);
    if (!c->gone) {
        io_close(c);
    } else if (!c->eof_told) {
        c->eof_told = true;
        iothread_hand(c, 0, HOP_EOF);
    }
}

static void
on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    if (buf->base == read_buf) {
        read_buf_busy = false;
    }
    /* (Held by the main thread, a client's state is not ours to read.) */
    if (nread == 0 || (!c->gone && c->state == CONN_CLOSING)) {
        return;
    }
    if (nread < 0) {
        read_ended(c, nread);
        return;
    }
    struct io_counters *k = io_counters_mine();
    io_count(&k->reads, 1);
    io_count(&k->bytes_in, (uint64_t)nread);
    c->last_interaction_ms = (int64_t)uv_now(s->loop);
    if (c->gone) {
        keep_aside(c, buf->base, (size_t)nread);
        return;
    }
    bool waits = c->state == CONN_BLOCKED && c->blocked != NULL;
    if (c->state != CONN_READING && c->state != CONN_PAUSED && !waits) {
        return; /* closing after a reply: ignore further input */
    }
    if (resp_feed(c->parser, buf->base, (size_t)nread) < 0) {
        c->querybuf_overflow = true;    /* answered once what came runs */
    }
    if (waits) {
        return;     /* run once its blocking pop is answered */
    }
    if (c->home == 0) {
        process_input(c);
    } else {
        io_dispatch(c);
    }
}

/* ---- an I/O thread's side ------------------------------------------------ */

static void
on_io_close(uv_handle_t *h)
{
    struct conn *c = h->data;
    iothread_hand(c, 0, HOP_CLOSED);    /* the main thread frees it */
}

/* Close the socket of a client this thread holds; the main thread frees
 * the client once told (HOP_CLOSED). */
static void
io_close(struct conn *c)
{
    if (!c->slot_freed) {
        c->slot_freed = true;
        atomic_fetch_add_explicit(&closed_early, 1, memory_order_relaxed);
    }
    c->state = CONN_CLOSING;
    io_set_reading(c);
    if (!uv_is_closing(&c->h.handle)) {
        close_socket(&c->h.handle, on_io_close);
    }
}

static void
close_handle(uv_handle_t *h)
{
    struct conn *c = h->data;
    c->state = CONN_CLOSING;
    close_socket(h, on_io_close);
}

static void io_write(struct conn *c);
static void note_unsent(struct conn *c);
static bool after_drain(struct conn *c);

/* The replies left in out are this thread's to write now. */
static void
take_replies(struct conn *c)
{
    obuf_move(&c->wbuf, &c->out);
    note_unsent(c);
}

/* A script runs too long: answer what c framed as Redis does then; a
 * request only the main thread can answer waits, with c, until the
 * script is over (the thread is then woken: conn_busy_stop()). */
static bool
answer_while_busy(struct conn *c)
{
    bool all = busy_answer(c);
    take_replies(c);
    io_write(c);
    if (!all && !c->waits_busy) {
        c->waits_busy = true;
        SL_PUSH(waiting_busy, c, next_waiting_busy);
    }
    return all;
}

/* Frame what c has buffered and hand it to the main thread to run. */
static void
io_dispatch(struct conn *c)
{
    for (;;) {
        if (c->state != CONN_READING || c->waits_busy) {
            return;     /* the drain or the script's end calls again */
        }
        frame_ahead(c, CONN_MAX_REQS_PER_EVENT);
        /* A whole batch: more may wait unframed, so read no more now. */
        c->full = resp_queued(c->parser) >= CONN_MAX_REQS_PER_EVENT;
        io_set_reading(c);
        if (resp_queued(c->parser) == 0 && !resp_failed(c->parser)) {
            if (resp_memory(c->parser) > CONN_SHRINK_AFTER) {
                resp_shrink(c->parser);
            }
            return;
        }
        if (busy_active()) {
            if (!answer_while_busy(c)) {
                return;
            }
            if (resp_queued(c->parser) == 0 && !resp_failed(c->parser)) {
                /* All answered while busy: framing stopped where the
                 * batch ended (HELLO, AUTH, RESET: ends_batch()), or at a
                 * limit, so what follows is framed now; the client waits
                 * for those replies and sends nothing more. */
                continue;
            }
        }
        obuf_pass_spare(&c->out, &c->wbuf);
        c->gone = true;
        iothread_hand(c, 0, HOP_RUN);
        return;
    }
}

/* Bytes read while the main thread held c go to its parser now. */
static void
take_aside(struct conn *c)
{
    if (c->side.len > 0) {
        if (resp_feed(c->parser, (const char *)c->side.p, c->side.len) < 0) {
            c->querybuf_overflow = true;
        }
        c->side.len = 0;
        if (c->side.cap > CONN_SIDE_MAX) {
            mem_free(c->side.p);
            c->side = (struct membuf){ 0 };
        }
    }
    c->stopped = false;
}

/* c is this thread's again: write what the main thread left, then read
 * and frame on. */
static void
io_resume(struct conn *c)
{
    c->gone = false;
    take_replies(c);
    io_write(c);
    if (c->state == CONN_CLOSING) {
        return;
    }
    if (c->eof) {
        io_close(c);
        return;
    }
    take_aside(c);
    if (c->state == CONN_PAUSED) {
        if (!after_drain(c)) {      /* written at once, maybe: read on */
            io_set_reading(c);
        }
        return;
    }
    io_set_reading(c);
    io_dispatch(c);
}

/* The main thread wants c's socket on its own loop: a copy of it goes
 * over once this loop has let go of it (HOP_ADOPTED). */
static void
on_migrated(uv_handle_t *h)
{
    struct conn *c = h->data;
    iothread_hand(c, 0, HOP_ADOPTED);
}

static void
io_migrate(struct conn *c)
{
    uv_os_fd_t fd;
    c->adopt_fd = uv_fileno(&c->h.handle, &fd) == 0 ? dup(fd) : -1;
    c->stopped = true;
    io_set_reading(c);
    c->stopped = false;         /* (the main loop reads it from now on) */
    c->reading = false;
    close_socket(&c->h.handle, on_migrated);
}

/* A new client's socket, for this loop. */
static void
io_adopt(struct conn *c)
{
    int fd = c->adopt_fd;
    c->adopt_fd = -1;
    int rc = open_handle(c, iothread_loop(iothread_self()), fd);
    if (rc != 0) {
        close(fd);
        c->state = CONN_CLOSING;
        if (uv_is_active(&c->h.handle) || rc != UV_EINVAL) {
            close_socket(&c->h.handle, on_io_close);
        } else {
            iothread_hand(c, 0, HOP_CLOSED);
        }
        return;
    }
    c->last_interaction_ms = (int64_t)uv_now(c->h.handle.loop);
    c->reading = false;
    io_set_reading(c);
}

static void
at_thread(struct conn *c, unsigned hops)
{
    if (hops & HOP_ADOPT) {
        io_adopt(c);
        if (c->state == CONN_CLOSING) {
            return;
        }
    }
    if (hops & HOP_RELEASE) {
        iothread_hand(c, 0, HOP_FREED);     /* the last this loop does */
        return;
    }
    if (hops & HOP_BACK) {
        c->gone = false;
    }
    if (hops & HOP_KILL) {
        if (!c->gone && !uv_is_closing(&c->h.handle)) {
            /* (The main thread forgot it: its slot is free already.) */
            c->state = CONN_CLOSING;
            io_set_reading(c);
            close_socket(&c->h.handle, on_io_close);
        }   /* gone: it is on its way to the main thread, which hands it
             * back to be closed */
        return;
    }
    if (hops & HOP_MIGRATE) {
        if (c->inflight > 0) {
            c->migrate_asked = true;    /* on_write does it: a cancelled
                                         * write would lose its bytes */
        } else {
            io_migrate(c);
        }
        return;
    }
    if (hops & (HOP_BACK | HOP_ADOPT)) {
        io_resume(c);
    }
}

/* ---- writing (the home thread) -------------------------------------------- */

static void on_write(uv_write_t *req, int status);

/* The buffer c's socket side writes from: a client homed on the main loop
 * writes its replies as they are; an I/O thread writes what it took from
 * them (wbuf), so more may be appended meanwhile. */
static inline struct obuf *
writing(struct conn *c)
{
    return c->home == 0 ? &c->out : &c->wbuf;
}

static size_t
fill_bufs(struct obuf *o, uv_buf_t *bufs, size_t *bytes)
{
    struct iovec iov[CONN_MAX_IOV];
    size_t n = obuf_iov(o, 0, iov, CONN_MAX_IOV, bytes);
    for (size_t i = 0; i < n; i++) {
        bufs[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
    }
    return n;
}

/* A write failed: the client goes (from its home thread). */
static void
write_failed(struct conn *c, int err)
{
    if (c->home == 0) {
        log_verbose("Writing to client %s: %s", c->addr, uv_strerror(err));
        conn_close(c);
    } else {
        read_ended(c, err);     /* as a read that failed */
    }
}

static void
note_unsent(struct conn *c)
{
    if (c->home != 0) {
        atomic_store_explicit(&c->wpending, obuf_held(&c->wbuf),
                              memory_order_relaxed);
    }
}

/* Write what is queued: try a direct write first; hand the rest to
 * uv_write, whose bytes stay untouched until on_write. */
static void
write_out(struct conn *c)
{
    uv_buf_t bufs[CONN_MAX_IOV];
    size_t bytes;
    struct io_counters *k = io_counters_mine();
    struct obuf *o = writing(c);

    if (!c->gone) {
        c->rbuf.peak = reply_buf_peak(&c->rbuf, obuf_pending(o));
    }
    while (obuf_pending(o) > 0) {
        size_t n = fill_bufs(o, bufs, &bytes);
        int w = uv_try_write(&c->h.stream, bufs, (unsigned)n);
        if (w == UV_EAGAIN || w == UV_ENOSYS) {
            break;
        }
        if (w < 0) {
            write_failed(c, w);
            return;
        }
        io_count(&k->writes, 1);
        io_count(&k->bytes_out, (uint64_t)w);
        obuf_consume(o, (size_t)w);
        if ((size_t)w < bytes) {
            break; /* the kernel buffer is full */
        }
    }
    if (obuf_pending(o) > 0) {
        size_t n = fill_bufs(o, bufs, &bytes);
        int rc = uv_write(&c->wreq, &c->h.stream, bufs, (unsigned)n, on_write);
        if (rc != 0) {
            write_failed(c, rc);
            return;
        }
        c->inflight = bytes;
        note_unsent(c);
        return;
    }
    /* The drained chunk goes back now (to the thread's pool of chunks,
     * obuf.c), so used_memory holds no buffer of an idle client. */
    note_unsent(c);
    obuf_shrink(o);
    if (!c->gone && c->state == CONN_CLOSE_AFTER_REPLY) {
        if (c->home == 0) {
            conn_close(c);
        } else {
            io_close(c);
        }
    }
}

/* An I/O thread writes c, which it holds. */
static void
io_write(struct conn *c)
{
    if (c->inflight == 0 && c->state != CONN_CLOSING) {
        write_out(c);
    }
}

/* The main thread writes a client homed on it, once its decisions are
 * saved as appendfsync asks. */
static void
flush_conn(struct conn *c)
{
    if (c->inflight > 0 || c->state == CONN_CLOSING) {
        return;
    }
    write_out(c);
}

static void
resume_reading(struct conn *c)
{
    c->state = CONN_READING;
    if (c->home != 0) {
        take_aside(c);
        io_set_reading(c);
        io_dispatch(c);
        return;
    }
    if (!c->backlog) {
        uv_read_start(&c->h.stream, on_alloc, on_read);
    }
    queue_input(c);
}

/* A paused client whose output drained below half the pause limit reads
 * on: true when it did (an I/O thread's client may be the main thread's
 * by then, handed over with what it framed: touch it no more). */
static bool
after_drain(struct conn *c)
{
    if (c->state == CONN_PAUSED &&
        obuf_pending(writing(c)) <= (size_t)srv.conf.output_pause_limit / 2) {
        resume_reading(c);
        return true;
    }
    return false;
}

static void
on_write(uv_write_t *req, int status)
{
    struct conn *c = req->handle->data;
    size_t sent = c->inflight;
    c->inflight = 0;
    if (uv_is_closing(&c->h.handle) || c->eof ||
        (!c->gone && c->state == CONN_CLOSING)) {
        return; /* cancelled by uv_close; on_close frees */
    }
    if (status < 0) {
        write_failed(c, status);
        return;
    }
    struct io_counters *k = io_counters_mine();
    io_count(&k->writes, 1);
    io_count(&k->bytes_out, sent);
    obuf_consume(writing(c), sent);
    note_unsent(c);
    if (c->gone) {
        /* The main thread holds it: only what was taken is written. */
        if (c->migrate_asked) {
            io_migrate(c);
        } else {
            write_out(c);
        }
        return;
    }
    if (c->home == 0) {
        after_drain(c);
        if (c->state != CONN_CLOSING) {
            queue_write(c);
        }
        return;
    }
    /* Written on first: the rest may go at once (the kernel's buffer can
     * take a paused client's whole backlog), and only then is it known
     * whether a paused client reads on. */
    write_out(c);
    if (c->state == CONN_PAUSED) {
        (void)after_drain(c);   /* reading on dispatches what it has */
    } else if (c->state != CONN_CLOSING) {
        io_dispatch(c);
    }
}

/* ---- running requests (the main thread) ----------------------------------- */

static void
pause_reading(struct conn *c)
{
    c->state = CONN_PAUSED;
    c->paused_since_ms = clock_loop_ms();
    if (c->home == 0) {
        uv_read_stop(&c->h.stream);
    }
}

/* Enforce the output limits after each command. Returns false when the
 * client must not run more commands now. */
static bool
check_output_limits(struct conn *c)
{
    size_t pending = obuf_pending(&c->out);
    if (c->home != 0) {
        pending += atomic_load_explicit(&c->wpending, memory_order_relaxed);
    }
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

/* Warm the cache for the keys of the requests framed ahead, so their store
 * lookups do not each wait for two cache misses (bucket, then record), a
 * window of PREFETCH_AHEAD requests: as a batch starts, the buckets of its
 * first requests, then their records (loaded side by side, the misses
 * overlap); after each request, the bucket of the one entering the window
 * and the record of the one before it (its bucket prefetched a request
 * ago). The request just taken hands its key's hash to keyspace_lookup()
 * and keyspace_add() through c->hint. */
#define PREFETCH_AHEAD 8

static void
prefetch_batch(struct conn *c)
{
    uint64_t h[PREFETCH_AHEAD];
    size_t n = 0;
    while (n < PREFETCH_AHEAD && resp_queued_hash(c->parser, n, &h[n])) {
        store_prefetch_hash(srv.store, h[n++]);
    }
    for (size_t i = 0; i < n; i++) {
        store_prefetch_record(srv.store, h[i]);
    }
}

static void
prefetch_ahead(struct conn *c)
{
    uint64_t h;
    c->hint.valid = resp_taken_hash(c->parser, &c->hint.hash);
    if (resp_queued_hash(c->parser, PREFETCH_AHEAD - 2, &h)) {
        store_prefetch_record(srv.store, h);
    }
    if (resp_queued_hash(c->parser, PREFETCH_AHEAD - 1, &h)) {
        store_prefetch_hash(srv.store, h);
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
    protocol_error(c, RESP_ERR_QUERYBUF);
    return false;
}

/* Close the clients a CLIENT KILL marked. */
static void
close_killed(void)
{
    struct conn *x = srv.clients;
    while (x != NULL) {
        struct conn *next = x->next;
        if (x->killed) {
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
 * replication stream, a WAIT's answer). */
static void
flush_fed(void)
{
    struct conn *list = client_take_fed();
    SL_DRAIN(struct conn, m, list, next_fed) {
        if (m->killed) {
            conn_close(m);          /* a replica whose sync failed */
            continue;
        }
        if ((m->requests & CLIENT_UNBLOCKED) && m->state == CONN_BLOCKED) {
            m->requests &= ~(unsigned)CLIENT_UNBLOCKED;
            m->state = CONN_READING;
            queue_input(m);         /* its pipeline goes on */
        }
        queue_feed(m, m->subs != NULL ? "pub/sub" : "fed");
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

/* Hold the request just taken (it goes back to the head of the parser's
 * queue, its argv untouched: nothing is framed meanwhile) until the pause
 * ends. */
static void
postpone(struct conn *c)
{
    resp_unread(c->parser);
    c->state = CONN_POSTPONED;
    if (!c->postponed_listed) {
        c->postponed_listed = true;
        SL_PUSH(postponed, c, next_postponed);
    }
    if (c->home == 0 && !c->backlog) {
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
    SL_DRAIN(struct conn, x, postponed, next_postponed) {
        x->postponed_listed = false;
        if (x->state == CONN_POSTPONED) {
            x->state = CONN_READING;
            queue_input(x);
        }
    }
}

/* ---- CLIENT REPLY ----------------------------------------------------- */

/* Run a command whose reply CLIENT REPLY OFF or SKIP drops: it writes to
 * a buffer of its own, kept only when it was CLIENT REPLY ON (its +OK is
 * sent, as Redis sends it). Pushes go to the kept buffer meanwhile
 * (client_push_out()): Redis sends them to a muted client too. */
static void
run_muted(struct conn *c, struct resp_request *req)
{
    struct obuf kept = c->out;
    if (c->reply_mode == CLIENT_REPLY_SKIP_NEXT) {
        c->reply_mode = CLIENT_REPLY_SKIP;
    }
    obuf_init(&c->out);
    c->unmuted_out = &kept;
    cmd_execute(c, req);
    c->unmuted_out = NULL;
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

/* The next request to run: the head of the parser's queue, framed ahead
 * (by the client's I/O thread, or here for a client homed on the main
 * thread). A homed client's thread frames for it: with its queue taken,
 * it goes back to that thread (AGAIN) rather than be parsed here. */
static enum resp_status
next_request(struct conn *c, struct resp_request *req)
{
    if (resp_queued(c->parser) == 0) {
        if (c->home != 0) {
            return resp_failed(c->parser) ? RESP_ERROR : RESP_AGAIN;
        }
        if (resp_drained(c->parser)) {
            return RESP_AGAIN;      /* the common end of a batch */
        }
        frame_ahead(c, CONN_MAX_REQS_PER_EVENT);
        if (resp_queued(c->parser) == 0) {
            /* Short of bytes, a protocol error, or no memory to queue one
             * more: resp_next() frames it then, or says why not. */
            return resp_next(c->parser, req);
        }
        prefetch_batch(c);
    }
    return resp_next(c->parser, req);
}

/* Fairness: let other clients run. Stop reading this one until its
 * backlog is done, so complete requests do not pile up in its query
 * buffer (and trip its limit) meanwhile. */
static void
hold_backlog(struct conn *c)
{
    if (c->home == 0 && !c->backlog) {
        c->backlog = true;
        uv_read_stop(&c->h.stream);
    }
    queue_input(c);
}

/* All its input is served: read again, and give back a big parser. */
static void
input_drained(struct conn *c)
{
    if (c->home != 0) {
        return;                 /* its thread reads and shrinks */
    }
    if (c->backlog) {
        c->backlog = false;
        uv_read_start(&c->h.stream, on_alloc, on_read);
    }
    if (resp_memory(c->parser) > CONN_SHRINK_AFTER) {
        resp_shrink(c->parser);     /* no-op mid-request */
    }
}

/* A client blocked on keys was served: its reply waits for the journal
 * to hold the pop, as the reply of the command itself would. */
static void
served_blocked(struct conn *c)
{
    c->journal_gen = persist_generation();
}

/* Run one request taken; false when the client must not run more now. */
static bool
run_one(struct conn *c, struct resp_request *req)
{
    uint64_t effects = srv.journal_effects;
    run_request(c, req);
    if (blocked_nready != 0) {
        /* The keys it made ready, once it (its EXEC, its script) ran. */
        blocked_serve(served_blocked);
    }
    if (srv.journal_effects != effects) {
        c->journal_gen = persist_generation();
    }
    if (c->requests != 0) {
        carry_out_requests(c);
    }
    if (c->state == CONN_BLOCKED) {
        /* WAIT, a blocking pop: nothing after it runs before its answer.
         * A blocking pop's socket is still read (on_read keeps what
         * comes), so a client that goes leaves its keys' queues at once,
         * as in Redis. */
        if (c->home == 0 && !c->backlog && c->blocked == NULL) {
            c->backlog = true;
            uv_read_stop(&c->h.stream);
        }
        return false;
    }
    if (c->multi != NULL && !within_query_limit(c)) {
        return false;
    }
    return check_output_limits(c);
}

/* A client homed on an I/O thread that waits in a blocking pop with
 * replies before it still unsent (a pipeline's): the main thread holds it
 * while it waits, so its socket moves to the main loop, which writes them
 * now, as Redis does. */
static bool
waits_with_replies(const struct conn *c)
{
    return c->home != 0 && c->state == CONN_BLOCKED && c->blocked != NULL &&
           obuf_pending(&c->out) > 0;
}

/* The main thread is done with c for now: a homed client goes back to its
 * thread at the next flush (after the journal, replies or not), unless
 * something still holds it here. */
static void
after_batch(struct conn *c)
{
    if (c->state == CONN_CLOSING || c->closing) {
        return;
    }
    if (c->home == 0) {
        if (obuf_pending(&c->out) > 0) {
            queue_write(c);
        }
        return;
    }
    if ((c->state != CONN_POSTPONED && c->state != CONN_BLOCKED &&
         !c->input_queued) || waits_with_replies(c)) {
        queue_write(c);
    }
}

/* Also without maxmemory (a few calls a batch): a CONFIG SET maxmemory
 * followed by writes in the same batch finds the figure fresh. */
void
conn_note_not_counted(void)
{
    keyspace_set_not_counted(repl_output_memory() + persist_buffer_memory());
}

static void
process_input(struct conn *c)
{
    struct resp_request req;
    unsigned budget = CONN_MAX_REQS_PER_EVENT;

    cmd_batch_begin();
    conn_note_not_counted();
    clock_batch_open();
    (void)keyspace_select(c->db);   /* it exists: SELECT made it */
    if (c->home == 0) {
        frame_ahead(c, budget);
    }
    prefetch_batch(c);
    c->batch_qbuf = resp_buffered(c->parser);
    while (c->state == CONN_READING) {
        if (budget-- == 0) {
            hold_backlog(c);
            break;
        }
        bool queued = resp_queued(c->parser) > 0;
        enum resp_status st = next_request(c, &req);
        if (st == RESP_AGAIN) {
            input_drained(c);
            break;
        }
        if (st == RESP_ERROR) {
            protocol_error(c, resp_error(c->parser));
            break;
        }
        if (srv.pause_end_ms != 0 && cmd_pause_holds(c, &req)) {
            if (queued || resp_queued(c->parser) > 0 ||
                c->home != 0) {
                postpone(c);
            } else {
                /* Framed outside the queue (no memory to queue it): it
                 * cannot be held, so it runs. */
                prefetch_ahead(c);
                (void)run_one(c, &req);
            }
            break;
        }
        prefetch_ahead(c);
        if (!run_one(c, &req)) {
            break;
        }
    }
    clock_batch_close();
    after_batch(c);
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
        if (!main_holds(c) || c->closing) {
            continue;           /* handed on meanwhile (closed) */
        }
        if (c->state == CONN_READING) {
            process_input(c);   /* may queue it again */
        } else {
            after_batch(c);
            finish_close(c);
        }
    }
}

/* ---- hand-offs to the main thread ------------------------------------------ */

/* Must c's socket be on the main loop? The main thread appends to these
 * clients' output outside their own requests (messages, MONITOR lines,
 * the replication stream), which it may only do to a client it holds. */
static bool
needs_main_loop(const struct conn *c)
{
    return c->monitor || pubsub_count(c, false) + pubsub_count(c, true) > 0 ||
           repl_is_replica_client(c);
}

/* A homed client the main thread is done with: back to its thread, or
 * its socket brought over when it must live here now. */
static void
hand_back(struct conn *c)
{
    if (needs_main_loop(c)) {
        if (!c->migrating) {
            c->migrating = true;
            iothread_hand(c, c->home, HOP_MIGRATE);
        }
        return;
    }
    c->at_main = false;
    iothread_hand(c, c->home, HOP_BACK);
}

/* The socket of a client the main thread holds arrived (HOP_ADOPTED): it
 * is homed here from now on. */
static void
adopt_here(struct conn *c)
{
    int fd = c->adopt_fd;
    c->adopt_fd = -1;
    iothread_forget(c->home);
    io_clients_add(0, 1);
    c->home = 0;
    c->at_main = false;
    c->migrating = false;
    c->gone = false;
    if (c->closing || fd < 0) {
        if (fd >= 0) {
            close(fd);
        }
        if (!c->closing) {
            forget_client(c);
        }
        free_conn(c);
        return;
    }
    /* What its thread had not written yet goes first. */
    obuf_move(&c->wbuf, &c->out);
    struct obuf taken = c->out;
    c->out = c->wbuf;
    c->wbuf = taken;
    int rc = open_handle(c, srv.loop, fd);
    if (rc != 0) {
        log_warning("Moving client %s to the main thread: %s", c->addr,
                    uv_strerror(rc));
        close(fd);
        forget_client(c);
        free_conn(c);
        return;
    }
    if (c->eof) {
        conn_close(c);
        return;
    }
    c->stopped = false;
    if (c->side.len > 0) {
        if (resp_feed(c->parser, (const char *)c->side.p, c->side.len) < 0) {
            c->querybuf_overflow = true;
        }
        c->side.len = 0;
    }
    /* Read from now on, or once what holds it (a pause, WAIT, its output)
     * lets go and its input drains. */
    if (c->state == CONN_READING ||
        (c->state == CONN_BLOCKED && c->blocked != NULL)) {
        uv_read_start(&c->h.stream, on_alloc, on_read);
    } else {
        c->backlog = true;
    }
    queue_write(c);
    queue_input(c);
}

static void
at_main(struct conn *c, unsigned hops)
{
    if (hops & HOP_CLOSED) {
        if (c->slot_freed) {
            atomic_fetch_sub_explicit(&closed_early, 1, memory_order_relaxed);
        }
        if (!c->closing) {
            if (c->read_error != 0) {
                log_verbose("Client %s: %s", c->addr,
                            uv_strerror(c->read_error));
            }
            c->closing = true;
            forget_client(c);
        }
        /* A HOP_KILL (or HOP_MIGRATE) may have crossed the HOP_CLOSED:
         * its thread may still hold it queued or be acting on it, so the
         * memory goes once the thread has let go of it. */
        if (iothreads_running()) {
            iothread_hand(c, c->home, HOP_RELEASE);
        } else {
            free_conn(c);
        }
        return;
    }
    if (hops & HOP_FREED) {
        free_conn(c);
        return;
    }
    if (hops & HOP_ADOPTED) {
        adopt_here(c);
        return;
    }
    if (hops & HOP_RUN) {
        c->at_main = true;
        if (c->closing) {
            c->at_main = false;
            iothread_hand(c, c->home, HOP_BACK | HOP_KILL);
            return;
        }
        if (c->state == CONN_READING) {
            process_input(c);
        } else {
            after_batch(c);
        }
    }
    if ((hops & HOP_EOF) && c->at_main) {
        conn_close(c);
    }
}

/* A group of clients handed over at once (iothreads_drain()): the key of
 * each one's first request is fetched into the cache before any runs, the
 * buckets first (phase 0), then the records they lead to (phase 1), so
 * one client's cache misses overlap another's, as a pipeline's do. */
static void
warm_up(struct conn *c, int phase)
{
    uint64_t h;
    if (c->parser == NULL || c->db < 0 || (size_t)c->db >= srv.ndbs ||
        srv.dbs[c->db] == NULL || !resp_queued_hash(c->parser, 0, &h)) {
        return;
    }
    if (phase == 0) {
        store_prefetch_hash(srv.dbs[c->db], h);
    } else {
        store_prefetch_record(srv.dbs[c->db], h);
    }
}

/* ---- the flush pass (the main thread) ------------------------------------- */

/* Replies leave once the journal has their decisions as appendfsync asks;
 * a client homed on an I/O thread goes back to it, to be written there. */
static void
flush_one(struct conn *c)
{
    if (c->home != 0 && !c->at_main) {
        return;                 /* handed on already (closed) */
    }
    if (c->home != 0 && c->closing) {
        if (c->input_queued) {
            list_write(c);      /* the input walker drops it first */
            return;
        }
        c->at_main = false;
        iothread_hand(c, c->home, HOP_BACK | HOP_KILL);
        return;
    }
    if (c->state == CONN_CLOSING) {
        finish_close(c);
        return;
    }
    if (c->journal_gen > persist_safe()) {
        queue_write(c);             /* its decisions are not saved yet */
        return;
    }
    if (c->home != 0) {
        if (!c->migrating && !c->input_queued &&
            c->state != CONN_POSTPONED && c->state != CONN_BLOCKED) {
            hand_back(c);       /* (a migrating one waits for its socket) */
        } else if (!c->migrating && waits_with_replies(c)) {
            c->migrating = true;
            iothread_hand(c, c->home, HOP_MIGRATE);
        }
        return;
    }
    flush_conn(c);
    if (c->state != CONN_CLOSING) {
        after_drain(c);
    } else {
        finish_close(c);
    }
}

static void
flush_all(uv_prepare_t *h)
{
    (void)h;
    (void)iothreads_drain();        /* what the I/O threads handed over */
    keyspace_publish();             /* the pass's effects, to every sink */
    persist_before_replies();       /* the journal's written (and fsynced) */
    flush_fed();                    /* the replication stream it fed */
    SL_DRAIN(struct conn, c, write_list, next_pending) {
        c->write_queued = false;
        flush_one(c);
    }
    iothreads_before_poll();
}

/* ---- cron ------------------------------------------------------------- */

static void
cron_one(struct conn *c, int64_t now_ms, int64_t timeout_ms,
         int64_t pause_ms)
{
    /* Redis resizes a few clients per tick; all of them here. */
    reply_buf_cron(&c->rbuf, client_unsent(c), now_ms);
    if (pause_ms > 0 && c->state == CONN_PAUSED &&
        now_ms - c->paused_since_ms > pause_ms) {
        srv.stats.output_limit_closes++;
        log_warning("Closing client %s: it has not read its replies for "
                    "%lld s (client-output-pause-timeout)", c->addr,
                    (long long)srv.conf.output_pause_timeout);
        conn_close(c);
    } else if (timeout_ms > 0 && c->state != CONN_POSTPONED &&
               c->state != CONN_BLOCKED && !c->monitor &&
               now_ms - c->last_interaction_ms > timeout_ms &&
               c->inflight == 0) {
        /* As Redis: blocked clients and monitors never time out. */
        srv.stats.idle_timeout_closes++;
        log_verbose("Closing idle client %s", c->addr);
        conn_close(c);
    } else if (c->state == CONN_READING && c->inflight == 0 &&
               client_unsent(c) == 0 && resp_queued(c->parser) == 0 &&
               !c->gone) {
        resp_shrink(c->parser);
        obuf_shrink(&c->out);
        obuf_shrink(&c->wbuf);
    }
}

void
conn_cron(int64_t now_ms)
{
    if (srv.pause_end_ms != 0 && now_ms >= srv.pause_end_ms) {
        wake_postponed();
    }
    int64_t timeout_ms = srv.conf.timeout * MS_PER_SEC;
    int64_t pause_ms = srv.conf.output_pause_timeout * MS_PER_SEC;
    /* The I/O threads hold most clients: they wait while this reads and
     * resizes them. */
    iothreads_pause();
    struct conn *c = srv.clients;
    while (c != NULL) {
        struct conn *next = c->next;
        if (!c->lent && !c->migrating) {
            cron_one(c, now_ms, timeout_ms, pause_ms);
        }
        c = next;
    }
    iothreads_resume();
}

/* ---- a script that runs too long -------------------------------------------- */

/* A client the lender may take: homed here, reading, with nothing the
 * journal still holds, and none the script's commands can reach. */
static bool
lendable(const struct conn *c, const struct conn *caller)
{
    return c != caller && c->home == 0 && c->state == CONN_READING &&
           !c->monitor && !c->lent &&
           pubsub_count(c, false) + pubsub_count(c, true) == 0 &&
           !repl_is_replica_client(c) && c->inflight == 0 &&
           c->journal_gen <= persist_safe();
}

static size_t
choose_lent(struct conn *caller, struct conn ***lent, int **fds)
{
    size_t n = 0, cap = 0;
    *lent = NULL;
    *fds = NULL;
    for (struct conn *c = srv.clients; c != NULL; c = c->next) {
        uv_os_fd_t fd;
        if (!lendable(c, caller) || uv_fileno(&c->h.handle, &fd) != 0) {
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct conn **l = mem_realloc(*lent, ncap * sizeof(*l));
            int *f = l != NULL ? mem_realloc(*fds, ncap * sizeof(*f)) : NULL;
            if (l != NULL) {
                *lent = l;
            }
            if (f == NULL) {
                break;          /* the rest wait for the script */
            }
            *fds = f;
            cap = ncap;
        }
        unlist_queued(c);
        c->lent = true;
        (*lent)[n] = c;
        (*fds)[n] = fd;
        n++;
    }
    return n;
}

static struct conn *
prepare_for_lender(bool is_unix)
{
    return conn_create(is_unix);
}

static const struct busy_lender_ops lender_ops = { prepare_for_lender };

/* Homed clients the main thread holds and has not started: their threads
 * answer them while the script runs. */
static void
return_idle_homed(void)
{
    for (struct conn *c = srv.clients; c != NULL; c = c->next) {
        if (c->home != 0 && c->at_main && !c->migrating &&
            c->state == CONN_READING && c->journal_gen <= persist_safe() &&
            (c->input_queued || c->write_queued)) {
            unlist_queued(c);
            hand_back(c);
        }
    }
}

/* Handed over, not started: back to its thread, which answers it. */
static void
unrun(struct conn *c)
{
    iothread_hand(c, c->home, HOP_BACK);
}

void
conn_busy_start(struct conn *caller)
{
    struct conn **lent;
    int *fds;
    iothreads_unrun(unrun);
    return_idle_homed();
    size_t n = choose_lent(caller, &lent, &fds);
    busy_lend_start(lent, fds, n, &lender_ops);
    mem_free(lent);
    mem_free(fds);
    busy_set(true);
    /* The I/O threads answer what they frame from now on, and take back,
     * unstarted, what waits in the main thread's queues. */
    iothreads_poke();
}

/* The lender gives a client back (the main thread's again). */
static void
take_back(struct conn *c, int fd, bool accepted, bool protocol_failed)
{
    if (accepted) {
        int rc = open_handle(c, srv.loop, fd);
        if (rc != 0) {
            log_accept_error(rc);
            close(fd);
            c->state = CONN_CLOSING;
            if (rc == UV_EINVAL) {
                free_conn(c);
            } else {
                close_socket(&c->h.handle, on_close);
            }
            return;
        }
        attach(c);
        if (c->home != 0 || c->state != CONN_READING) {
            return;     /* an I/O thread reads it on: its queue goes along */
        }
    }
    c->lent = false;
    if (protocol_failed && c->state == CONN_READING) {
        protocol_error(c, resp_error(c->parser));
    }
    if (c->state == CONN_CLOSING) {
        finish_close(c);
        return;
    }
    if (c->state == CONN_READING) {
        queue_input(c);
    }
    if (obuf_pending(&c->out) > 0) {
        queue_write(c);
    }
}

void
conn_busy_stop(void)
{
    busy_set(false);
    busy_lend_stop(take_back);
    /* Parking the I/O threads wakes each; they send on, at once, what
     * waited for the script (busy_over() at their next wake-up), and what
     * they answered is added up meanwhile. */
    iothreads_pause();
    busy_collect();
    iothreads_resume();
}

/* Handed to the main thread, not started, and a script now runs too
 * long: this thread answers it after all. */
static void
reclaimed(struct conn *c)
{
    c->gone = false;
    take_aside(c);
    io_set_reading(c);
    io_dispatch(c);
}

/* On an I/O thread, at each wake-up: while a script runs too long, take
 * back what waits unstarted for the main thread and answer it; once it is
 * over, send on what waited for it. */
static void
thread_woken(void)
{
    if (busy_active()) {
        iothread_reclaim(HOP_RUN, reclaimed);
        return;
    }
    SL_DRAIN(struct conn, c, waiting_busy, next_waiting_busy) {
        c->waits_busy = false;
        if (c->state != CONN_CLOSING) {
            io_dispatch(c);
        }
    }
}

void
conn_clients_enter(void)
{
    iothreads_pause();
}

void
conn_clients_leave(void)
{
    iothreads_resume();
}
