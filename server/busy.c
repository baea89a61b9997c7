/*
 * busy.c - answering clients while a script runs too long (see busy.h).
 *
 * The lender's thread owns, from busy_lend_start() to busy_lend_stop(),
 * the clients it was lent (their sockets, parsers and output buffers)
 * and those it accepts, nothing else; the stop comes through an eventfd
 * in its epoll set. Answers are counted in per-thread slots (the I/O
 * threads' numbers, the lender's own), each written by its thread alone,
 * and summed by busy_collect() on the main thread.
 */
#include "server/busy.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/mem.h"
#include "protocol/reply.h"
#include "protocol/resp.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/iothread.h"
#include "server/listen.h"
#include "server/log.h"
#include "server/script/script.h"
#include "server/server.h"

#define BUSY_READS_PER_EVENT 4
#define BUSY_ACCEPTS_PER_EVENT 16
#define BUSY_REFUSED_CMDS 32
#define BUSY_FRAME_AHEAD 1024
/* The lender's counting slot: past every I/O thread's. */
#define LENDER_SLOT IOTHREADS_MAX

static atomic_bool active;

/* What each thread answered, per command. */
struct answered {
    uint64_t requests;
    struct {
        struct cmd *cmd;
        uint64_t n;
    } refused[BUSY_REFUSED_CMDS];
    uint64_t refused_other;
};
static struct answered answered[LENDER_SLOT + 1];

/* The calling thread's slot: an I/O thread's number, the lender's own. */
static struct answered *
my_answers(void)
{
    unsigned t = iothread_self();
    return &answered[t <= LENDER_SLOT ? t : 0];
}

void
busy_set(bool on)
{
    atomic_store_explicit(&active, on, memory_order_release);
}

bool
busy_active(void)
{
    return atomic_load_explicit(&active, memory_order_acquire);
}

/* ---- answering --------------------------------------------------------- */

static void
count_refused(struct cmd *cmd)
{
    struct answered *a = my_answers();
    for (size_t i = 0; i < BUSY_REFUSED_CMDS; i++) {
        if (a->refused[i].cmd == cmd || a->refused[i].cmd == NULL) {
            a->refused[i].cmd = cmd;
            a->refused[i].n++;
            return;
        }
    }
    a->refused_other++;
}

/* The -BUSY of what runs: an EVAL's script or a function. */
static const char *
busy_error(void)
{
    return script_busy_function() ? ERR_BUSY_FUNCTION : ERR_BUSY;
}

static void
answer_script_kill(struct conn *c, bool function)
{
    switch (script_request_kill(function)) {
    case SCRIPT_KILL_OTHER_KIND:
        reply_errorz(&c->out, busy_error());
        break;
    case SCRIPT_KILL_OK:
        reply_ok(&c->out);
        break;
    case SCRIPT_KILL_NOTBUSY:
        reply_errorz(&c->out, ERR_NOTBUSY);
        break;
    case SCRIPT_KILL_UNKILLABLE:
        reply_errorz(&c->out,
                     "UNKILLABLE Sorry the script already executed write "
                     "commands against the dataset. You can either wait the "
                     "script termination or kill the server in a hard way "
                     "using the SHUTDOWN NOSAVE command.");
        break;
    }
}

/* Answer req now, as Redis answers it while a script is busy; false when
 * only the main thread can. */
static bool
answer(struct conn *c, const struct resp_request *req)
{
    if (c->reply_mode != CLIENT_REPLY_ON || c->multi != NULL ||
        !c->authenticated) {
        return false;
    }
    struct cmd *cmd = NULL;
    switch (cmd_while_busy(req, &cmd)) {
    case CMD_BUSY_MAIN_THREAD:
        return false;
    case CMD_BUSY_REFUSED:
        count_refused(cmd);
        reply_errorz(&c->out, busy_error());
        break;
    case CMD_BUSY_SCRIPT_KILL:
    case CMD_BUSY_FUNCTION_KILL:
        answer_script_kill(c, cmd_while_busy(req, &cmd) ==
                                  CMD_BUSY_FUNCTION_KILL);
        break;
    case CMD_BUSY_FUNCTION_STATS:
        if (script_busy_function()) {
            script_function_stats(c);
        } else {
            reply_errorz(&c->out, ERR_BUSY);
        }
        break;
    case CMD_BUSY_SHUTDOWN_NOSAVE:
        script_request_shutdown();      /* no reply: the server exits */
        break;
    }
    my_answers()->requests++;
    return true;
}

bool
busy_answer(struct conn *c)
{
    while (resp_queued(c->parser) > 0) {
        struct resp_request req;
        (void)resp_next(c->parser, &req);
        if (!answer(c, &req)) {
            resp_unread(c->parser);
            return false;
        }
    }
    return true;
}

void
busy_collect(void)
{
    for (size_t t = 0; t <= LENDER_SLOT; t++) {
        struct answered *a = &answered[t];
        srv.stats.commands_processed += a->requests;
        for (size_t i = 0; i < BUSY_REFUSED_CMDS && a->refused[i].cmd; i++) {
            for (uint64_t k = 0; k < a->refused[i].n; k++) {
                cmd_count_refusal(a->refused[i].cmd, ERR_BUSY);
            }
        }
        for (uint64_t k = 0; k < a->refused_other; k++) {
            cmd_count_refusal(NULL, ERR_BUSY);
        }
        memset(a, 0, sizeof(*a));
    }
}

/* ---- the lender ---------------------------------------------------------- */

/* What an epoll event points at: the first member of each. */
enum source_kind { SOURCE_STOP, SOURCE_LISTENER, SOURCE_CLIENT };

struct lender_listener {
    enum source_kind kind;
    int fd;
    bool is_unix;
};

struct lent_client {
    enum source_kind kind;
    struct conn *c;
    int fd;
    bool polled;            /* in the epoll set */
    bool protocol_failed;
    bool accepted;          /* accepted here: the main thread adopts it */
    struct lent_client *next;
};

static struct lender_listener listeners[LISTEN_MAX_ADDRS + 1];
static size_t nlisteners;
static int unix_listener = -1;
static struct lent_client *lent_clients;
static enum source_kind stop_source = SOURCE_STOP;
static int epfd = -1;
static int stopfd = -1;
static pthread_t lender;
static bool lending;
static atomic_bool stopping;
static const struct busy_lender_ops *lender_ops;

void
busy_unix_listener(int fd)
{
    unix_listener = fd;
}


static void
unpoll(struct lent_client *b)
{
    if (b->polled) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, b->fd, NULL);
        b->polled = false;
    }
}

static void
write_out(struct lent_client *b)
{
    struct obuf *o = &b->c->out;
    struct io_counters *k = io_counters_mine();
    while (obuf_pending(o) > 0) {
        struct iovec iov[8];
        size_t bytes;
        size_t n = obuf_iov(o, 0, iov, 8, &bytes);
        ssize_t w = writev(b->fd, iov, (int)n);
        if (w <= 0) {
            return;     /* EAGAIN or a broken peer: the main thread sees */
        }
        io_count(&k->writes, 1);
        io_count(&k->bytes_out, (uint64_t)w);
        obuf_consume(o, (size_t)w);
    }
}

/* Frame and answer what c has buffered; false when c is left for the
 * main thread (a request waits, or a protocol error). */
static bool
answer_buffered(struct lent_client *b)
{
    struct conn *c = b->c;
    /* Framing stops where a batch ends (HELLO, AUTH, RESET), so frame
     * again once all is answered, until nothing more is framed: the
     * client waits for those replies and sends nothing more. */
    size_t framed;
    do {
        framed = resp_frame_ahead(c->parser, BUSY_FRAME_AHEAD, &cmd_frame_ops);
        if (!busy_answer(c)) {
            write_out(b);
            unpoll(b);
            return false;
        }
    } while (framed > 0 && !resp_failed(c->parser));
    write_out(b);
    if (resp_failed(c->parser)) {
        b->protocol_failed = true;
        unpoll(b);
        return false;
    }
    return true;
}

static void
serve(struct lent_client *b)
{
    char buf[16384];
    struct io_counters *k = io_counters_mine();
    for (int i = 0; i < BUSY_READS_PER_EVENT; i++) {
        ssize_t n = read(b->fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                      errno == EINTR)) {
            return;
        }
        if (n <= 0) {
            unpoll(b);      /* closed: the main thread sees it reading */
            return;
        }
        io_count(&k->reads, 1);
        io_count(&k->bytes_in, (uint64_t)n);
        if (resp_feed(b->c->parser, buf, (size_t)n) < 0) {
            b->protocol_failed = true;
            unpoll(b);
            return;
        }
        if (!answer_buffered(b)) {
            return;
        }
    }
}

static bool
watch(struct lent_client *b)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = b };
    b->polled = epoll_ctl(epfd, EPOLL_CTL_ADD, b->fd, &ev) == 0;
    return b->polled;
}

static struct lent_client *
add_client(struct conn *c, int fd, bool accepted)
{
    struct lent_client *b = mem_calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->kind = SOURCE_CLIENT;
    b->c = c;
    b->fd = fd;
    b->accepted = accepted;
    b->next = lent_clients;
    lent_clients = b;
    return b;
}

/* New connections, served here until the main thread adopts them;
 * refused (closed at once) when no memory is left for one. */
static void
accept_some(const struct lender_listener *l)
{
    for (int i = 0; i < BUSY_ACCEPTS_PER_EVENT; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return;
        }
        struct conn *c = lender_ops->prepare(l->is_unix);
        struct lent_client *b = c != NULL ? add_client(c, fd, true) : NULL;
        if (b == NULL) {
            if (c != NULL) {
                resp_destroy(&c->parser);
                obuf_deinit(&c->out);
                mem_free(c);
            }
            close(fd);
            continue;
        }
        (void)watch(b);
    }
}

static void *
lender_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);    /* the main loop's */
    pthread_setname_np(pthread_self(),
                       iothreads_count() == 1 ? "io_thd_1" : "io_thd_busy");
    mem_thread_slot(MEM_SLOTS - 1);
    iothread_become(iothreads_count() == 1 ? 1 : LENDER_SLOT);
    /* What the lent clients had framed, and replies they had not sent. */
    for (struct lent_client *b = lent_clients; b != NULL; b = b->next) {
        if (answer_buffered(b)) {
            (void)watch(b);
        }
    }
    struct epoll_event ev[64];
    while (!atomic_load(&stopping)) {
        int n = epoll_wait(epfd, ev, 64, -1);
        for (int i = 0; i < n; i++) {
            enum source_kind *kind = ev[i].data.ptr;
            if (*kind == SOURCE_LISTENER) {
                accept_some((const struct lender_listener *)kind);
            } else if (*kind == SOURCE_CLIENT) {
                struct lent_client *b = (struct lent_client *)kind;
                if (b->polled) {
                    serve(b);
                }
            }
        }
    }
    return NULL;
}

static void
add_listener(int fd, bool is_unix)
{
    struct lender_listener *l = &listeners[nlisteners];
    l->kind = SOURCE_LISTENER;
    l->fd = fd;
    l->is_unix = is_unix;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = l };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
        nlisteners++;
    }
}

static void
close_fds(void)
{
    if (epfd >= 0) {
        close(epfd);
    }
    if (stopfd >= 0) {
        close(stopfd);
    }
    epfd = stopfd = -1;
}

static void
free_clients(void)
{
    while (lent_clients != NULL) {
        struct lent_client *next = lent_clients->next;
        mem_free(lent_clients);
        lent_clients = next;
    }
}

void
busy_lend_start(struct conn **lent, const int *fds, size_t n,
                const struct busy_lender_ops *ops)
{
    lender_ops = ops;
    epfd = epoll_create1(EPOLL_CLOEXEC);
    stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &stop_source };
    if (epfd < 0 || stopfd < 0 ||
        epoll_ctl(epfd, EPOLL_CTL_ADD, stopfd, &ev) != 0) {
        log_warning("Cannot answer clients while the script runs: %s",
                    strerror(errno));
        close_fds();
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (add_client(lent[i], fds[i], false) == NULL) {
            break;      /* the rest wait for the script, unanswered */
        }
    }
    int tcp[LISTEN_MAX_ADDRS];
    size_t ntcp = listen_tcp_fds(tcp, LISTEN_MAX_ADDRS);
    nlisteners = 0;
    for (size_t i = 0; i < ntcp; i++) {
        add_listener(tcp[i], false);
    }
    if (unix_listener >= 0) {
        add_listener(unix_listener, true);
    }
    atomic_store(&stopping, false);
    int rc = pthread_create(&lender, NULL, lender_main, NULL);
    if (rc != 0) {
        log_warning("Cannot answer clients while the script runs: %s",
                    strerror(rc));
        close_fds();
        return;         /* lent_clients go back at busy_lend_stop() */
    }
    lending = true;
}

void
busy_lend_stop(void (*back)(struct conn *c, int fd, bool accepted,
                            bool protocol_failed))
{
    if (lending) {
        atomic_store(&stopping, true);
        uint64_t one = 1;
        ssize_t w = write(stopfd, &one, sizeof(one));
        (void)w;    /* an eventfd write of 1 only fails past 2^64 - 2 */
        pthread_join(lender, NULL);
        lending = false;
    }
    close_fds();
    for (struct lent_client *b = lent_clients; b != NULL; b = b->next) {
        back(b->c, b->fd, b->accepted, b->protocol_failed);
    }
    free_clients();
}
