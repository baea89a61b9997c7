/*
 * busy.c - the busy server. See busy.h for the design.
 *
 * The loop's thread starts it from the script's count hook and stops it
 * (joins it) when the script returns; in between it owns the sockets,
 * parsers and output buffers of the clients it chose at the start, and
 * nothing else. The stop comes through an eventfd in its epoll set.
 */
#include "server/busy.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/mem.h"
#include "protocol/reply.h"
#include "protocol/resp.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/conn.h"
#include "server/listen.h"
#include "server/log.h"
#include "server/pubsub.h"
#include "server/repl/replication.h"
#include "server/script/script.h"
#include "server/server.h"

#define BUSY_READS_PER_EVENT 4
#define BUSY_ACCEPTS_PER_EVENT 16
#define BUSY_REFUSED_CMDS 32

#define ERR_BUSY "BUSY Redis is busy running a script. You can only call " \
                 "SCRIPT KILL or SHUTDOWN NOSAVE."

/* What an epoll event points at: the first member of each. */
enum source_kind { SOURCE_STOP, SOURCE_LISTENER, SOURCE_CLIENT };

struct busy_listener {
    enum source_kind kind;
    int fd;
    bool is_unix;
};

struct busy_client {
    enum source_kind kind;
    struct conn *c;
    int fd;
    bool polled;            /* in the epoll set */
    bool touched;           /* read, answered or held: the loop looks */
    bool writes;            /* its output is ours to write */
    bool protocol_failed;
    bool accepted;          /* accepted here: the loop adopts it */
    struct busy_client *next;
};

static struct busy_listener listeners[LISTEN_MAX_ADDRS + 1];
static size_t nlisteners;
static int unix_listener = -1;
static struct busy_client *clients;
static enum source_kind stop_source = SOURCE_STOP;
static int epfd = -1;
static int stopfd = -1;
static pthread_t thread;
static bool running;
static atomic_bool stopping;

/* What the thread counted, added to the server's statistics once it is
 * joined (they are the loop thread's). */
static uint64_t bytes_in;
static uint64_t requests;
static struct {
    struct cmd *cmd;
    uint64_t n;
} refused[BUSY_REFUSED_CMDS];
static uint64_t refused_other;

/* ---- on the busy thread --------------------------------------------- */

static void
unpoll(struct busy_client *b)
{
    if (b->polled) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, b->fd, NULL);
        b->polled = false;
    }
}

static void
try_write(struct busy_client *b)
{
    struct obuf *o = &b->c->out;
    while (obuf_pending(o) > 0) {
        struct iovec iov[8];
        size_t bytes;
        size_t n = obuf_iov(o, 0, iov, 8, &bytes);
        ssize_t w = writev(b->fd, iov, (int)n);
        if (w <= 0) {
            return;     /* EAGAIN or a broken peer: the loop finds out */
        }
        obuf_consume(o, (size_t)w);
    }
}

static void
reply(struct busy_client *b, const char *msg)
{
    struct conn *c = b->c;
    reply_error(&c->out, msg, strlen(msg));
    if (b->writes) {
        try_write(b);
    }
}

static void
count_refused(struct cmd *cmd)
{
    for (size_t i = 0; i < BUSY_REFUSED_CMDS; i++) {
        if (refused[i].cmd == cmd || refused[i].cmd == NULL) {
            refused[i].cmd = cmd;
            refused[i].n++;
            return;
        }
    }
    refused_other++;
}

static bool
has_word(const struct resp_request *req, const char *word)
{
    for (size_t i = 1; i < req->argc; i++) {
        if (cmd_arg_is(req, i, word)) {
            return true;
        }
    }
    return false;
}

static void
answer_script_kill(struct busy_client *b)
{
    switch (script_request_kill()) {
    case SCRIPT_KILL_OK:
        reply_ok(&b->c->out);
        if (b->writes) {
            try_write(b);
        }
        break;
    case SCRIPT_KILL_NOTBUSY:
        reply(b, "NOTBUSY No scripts in execution right now.");
        break;
    case SCRIPT_KILL_UNKILLABLE:
        reply(b, "UNKILLABLE Sorry the script already executed write "
                 "commands against the dataset. You can either wait the "
                 "script termination or kill the server in a hard way "
                 "using the SHUTDOWN NOSAVE command.");
        break;
    }
}

/* Answer req now, as Redis answers it while a script is busy; false when
 * only the loop can (the request is then held for it). */
static bool
answer(struct busy_client *b, const struct resp_request *req)
{
    struct conn *c = b->c;
    if (c->reply_mode != CLIENT_REPLY_ON || c->multi != NULL ||
        !c->authenticated) {
        return false;
    }
    struct cmd *top = cmd_lookup(req->argv[0], req->argvlen[0]);
    if (top == NULL) {
        return false;
    }
    struct cmd *cmd = cmd_resolve(top, req);
    if (!cmd_arity_ok(cmd, req->argc)) {
        return false;
    }
    requests++;
    if (!(cmd->flags & CMD_ALLOW_BUSY)) {
        count_refused(cmd);
        reply(b, ERR_BUSY);
        return true;
    }
    if (strcmp(cmd->name, "script|kill") == 0) {
        answer_script_kill(b);
        return true;
    }
    if (strcmp(cmd->name, "shutdown") == 0 && !has_word(req, "abort")) {
        if (!has_word(req, "nosave")) {
            count_refused(cmd);
            reply(b, ERR_BUSY);
        } else {
            script_request_shutdown();  /* no reply: the server exits */
        }
        return true;
    }
    requests--;
    return false;
}

/* Every request the parser has framed: answered, or the first one that
 * cannot be is held (false: this client is left for the loop). */
static bool
answer_framed(struct busy_client *b)
{
    struct conn *c = b->c;
    for (;;) {
        struct resp_request req;
        enum resp_status st = resp_next(c->parser, &req);
        if (st == RESP_AGAIN) {
            return true;
        }
        b->touched = true;
        if (st == RESP_ERROR) {
            b->protocol_failed = true;
            unpoll(b);
            return false;
        }
        if (!answer(b, &req)) {
            c->held = req;      /* its argv stays: nothing else is parsed */
            c->state = CONN_POSTPONED;
            unpoll(b);
            return false;
        }
    }
}

static void
serve(struct busy_client *b)
{
    char buf[16384];
    for (int i = 0; i < BUSY_READS_PER_EVENT; i++) {
        ssize_t n = read(b->fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                      errno == EINTR)) {
            return;
        }
        if (n <= 0) {
            unpoll(b);      /* closed: the loop sees it when it reads */
            b->touched = true;
            return;
        }
        bytes_in += (uint64_t)n;
        b->touched = true;
        if (resp_feed(b->c->parser, buf, (size_t)n) < 0) {
            b->protocol_failed = true;
            unpoll(b);
            return;
        }
        if (!answer_framed(b)) {
            return;
        }
    }
}

static bool
watch(struct busy_client *b)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = b };
    b->polled = epoll_ctl(epfd, EPOLL_CTL_ADD, b->fd, &ev) == 0;
    return b->polled;
}

/* A new connection, served here until the loop adopts it. Refused (closed
 * at once) when no memory is left for it. */
static void
accept_one(const struct busy_listener *l)
{
    for (int i = 0; i < BUSY_ACCEPTS_PER_EVENT; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return;
        }
        struct busy_client *b = mem_calloc(1, sizeof(*b));
        struct conn *c = b != NULL ? conn_prepare(l->is_unix) : NULL;
        if (c == NULL) {
            mem_free(b);
            close(fd);
            continue;
        }
        b->kind = SOURCE_CLIENT;
        b->c = c;
        b->fd = fd;
        b->writes = true;
        b->accepted = true;
        b->touched = true;
        b->next = clients;
        clients = b;
        (void)watch(b);
    }
}

static void *
busy_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);    /* the loop's to handle */
    mem_thread_slot(MEM_SLOTS - 1);
    /* Requests already framed and waiting in the clients' buffers. */
    for (struct busy_client *b = clients; b != NULL; b = b->next) {
        (void)answer_framed(b);
    }
    struct epoll_event ev[64];
    while (!atomic_load(&stopping)) {
        int n = epoll_wait(epfd, ev, 64, -1);
        for (int i = 0; i < n; i++) {
            enum source_kind *kind = ev[i].data.ptr;
            if (*kind == SOURCE_LISTENER) {
                accept_one((const struct busy_listener *)kind);
            } else if (*kind == SOURCE_CLIENT) {
                struct busy_client *b = (struct busy_client *)kind;
                if (b->polled) {
                    serve(b);
                }
            }
        }
    }
    return NULL;
}

/* ---- on the loop's thread ---------------------------------------------- */

/* A client the busy thread may own: reading, and none the script's
 * commands can reach (its caller, monitors, subscribers, replicas). */
static bool
eligible(const struct conn *c, const struct conn *caller)
{
    return c != caller && c->state == CONN_READING && !c->monitor &&
           pubsub_count(c, false) + pubsub_count(c, true) == 0 &&
           !repl_is_replica_client(c);
}

static void
add_client(struct conn *c)
{
    struct busy_client *b = mem_calloc(1, sizeof(*b));
    if (b == NULL || uv_fileno(&c->h.handle, &b->fd) != 0) {
        mem_free(b);
        return;     /* it waits for the script, unanswered */
    }
    b->kind = SOURCE_CLIENT;
    b->c = c;
    /* Nothing of the loop's is waiting to be written: the thread may
     * write its replies at once without reordering any byte. */
    b->writes = c->inflight == 0 && !c->write_queued &&
                obuf_pending(&c->out) == 0;
    b->next = clients;
    clients = b;
    (void)watch(b);
}

static void
add_listener(int fd, bool is_unix)
{
    struct busy_listener *l = &listeners[nlisteners];
    l->kind = SOURCE_LISTENER;
    l->fd = fd;
    l->is_unix = is_unix;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = l };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
        nlisteners++;
    }
}

void
busy_unix_listener(int fd)
{
    unix_listener = fd;
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
    while (clients != NULL) {
        struct busy_client *next = clients->next;
        mem_free(clients);
        clients = next;
    }
}

void
busy_start(struct conn *caller)
{
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
    for (struct conn *c = srv.clients; c != NULL; c = c->next) {
        if (eligible(c, caller)) {
            add_client(c);
        }
    }
    int fds[LISTEN_MAX_ADDRS];
    size_t n = listen_tcp_fds(fds, LISTEN_MAX_ADDRS);
    nlisteners = 0;
    for (size_t i = 0; i < n; i++) {
        add_listener(fds[i], false);
    }
    if (unix_listener >= 0) {
        add_listener(unix_listener, true);
    }
    atomic_store(&stopping, false);
    bytes_in = requests = refused_other = 0;
    memset(refused, 0, sizeof(refused));
    int rc = pthread_create(&thread, NULL, busy_main, NULL);
    if (rc != 0) {
        log_warning("Cannot answer clients while the script runs: %s",
                    strerror(rc));
        close_fds();
        free_clients();
        return;
    }
    running = true;
}

static void
add_statistics(void)
{
    srv.stats.net_input_bytes += bytes_in;
    srv.stats.commands_processed += requests;
    for (size_t i = 0; i < BUSY_REFUSED_CMDS && refused[i].cmd != NULL; i++) {
        for (uint64_t k = 0; k < refused[i].n; k++) {
            cmd_count_refusal(refused[i].cmd, ERR_BUSY);
        }
    }
    for (uint64_t k = 0; k < refused_other; k++) {
        cmd_count_refusal(NULL, ERR_BUSY);
    }
}

void
busy_stop(void)
{
    if (!running) {
        return;
    }
    atomic_store(&stopping, true);
    uint64_t one = 1;
    ssize_t w = write(stopfd, &one, sizeof(one));
    (void)w;        /* an eventfd write of 1 only fails past 2^64 - 2 */
    pthread_join(thread, NULL);
    running = false;
    close_fds();
    add_statistics();
    for (struct busy_client *b = clients; b != NULL; b = b->next) {
        if (b->accepted) {
            conn_adopt(b->c, b->fd, b->protocol_failed);
        } else if (b->touched) {
            conn_wake(b->c, b->protocol_failed);
        }
    }
    free_clients();
}
