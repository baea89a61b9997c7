/*
 * iothread.c - the I/O threads and their hand-offs (see iothread.h).
 *
 * Each thread t has two queues: to_io[t] (the main thread pushes, t pops)
 * and to_main[t] (t pushes, the main thread pops). A client sits at most
 * once on each (it has a link per direction), and a push to a client
 * already queued adds its hop bits. Receivers pop one client at a time
 * under the queue's mutex and act on it outside the lock, at most as many
 * as were queued when they started, so a producer never waits for a
 * consumer's work and a drain always ends.
 *
 * Sleeping: a loop that acted on hand-offs since it last polled polls once
 * more without blocking (more tend to follow, and being woken costs a
 * write, a read and two context switches). Otherwise it raises its
 * `sleeping` flag just before it polls, then looks at its queues under
 * their mutexes; a producer pushes under the mutex, then takes the flag
 * down (an atomic exchange). Whichever order the two critical sections
 * take, one of them sees the other (the mutex orders them), so either the
 * consumer finds the client before it polls, or the producer finds the
 * flag up and wakes it; only the producer that took it down wakes it, so
 * a sleep costs one wake-up however many push. The check callback, right
 * after the poll, lowers the flag.
 */
#include "server/iothread.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lib/mem.h"
#include "server/client.h"
#include "server/log.h"

struct hopq {
    pthread_mutex_t mu;
    struct conn *head;
    struct conn *tail;
    size_t len;
};

/* A wake-up one thread sends another's loop: an eventfd the loop polls.
 * Not libuv's uv_async_t: its receiver spins, then calls sched_yield(),
 * while a send it sees begun has not finished, and with a client on the
 * other core that is a wake-up in ten, each a context switch more. */
struct waker {
    int fd;
    uv_poll_t poll;
    void (*woken)(void *arg);
    void *arg;
};

struct iothread {
    unsigned id;
    pthread_t tid;
    uv_loop_t loop;
    struct waker wake;
    uv_prepare_t before_poll;
    uv_check_t after_poll;
    uv_idle_t spin;             /* active: the next poll does not block */
    bool worked;                /* hand-offs were acted on since it polled */
    bool batching;              /* in its poll's callbacks: wake main after */
    bool owes_main;             /* handed main clients while batching */
    _Atomic bool sleeping;
    _Atomic bool stopping;
    bool started;
    struct hopq to_io;          /* main -> this thread */
    struct hopq to_main;        /* this thread -> main */
};

static struct iothread threads[IOTHREADS_MAX];
static unsigned nthreads = 1;           /* io-threads: 1 = none */
static bool joined;                     /* iothreads_stop() ended them */
static const struct iothread_ops *hop_ops;
static struct waker main_wake;
static uv_check_t main_after_poll;
static uv_idle_t main_spin;
static bool main_worked;
static _Atomic bool main_sleeping;

static _Thread_local unsigned self_id;

/* Pausing: the main thread raises `requested`; each thread parks (counted
 * in `parked`) until it is lowered. depth lets pauses nest. */
static pthread_mutex_t pause_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pause_cv = PTHREAD_COND_INITIALIZER;
static bool pause_requested;
static unsigned parked;
static unsigned pause_depth;

/* ---- wake-ups ---------------------------------------------------------- */

static void
waker_readable(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    struct waker *w = h->data;
    uint64_t n;
    /* Reset the count; sends that land after it poll readable again. */
    while (read(w->fd, &n, sizeof(n)) < 0 && errno == EINTR) {
    }
    w->woken(w->arg);
}

static int
waker_init(struct waker *w, uv_loop_t *loop, void (*woken)(void *arg),
           void *arg)
{
    w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->fd < 0) {
        return -1;
    }
    w->woken = woken;
    w->arg = arg;
    w->poll.data = w;
    if (uv_poll_init(loop, &w->poll, w->fd) != 0 ||
        uv_poll_start(&w->poll, UV_READABLE, waker_readable) != 0) {
        close(w->fd);
        w->fd = -1;
        return -1;
    }
    return 0;
}

static void
waker_send(struct waker *w)
{
    uint64_t one = 1;
    /* Fails only with EAGAIN once the count nears 2^64: it is readable
     * then already. */
    while (write(w->fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
}

/* The poll handle is closed by whoever walks the loop's handles; the
 * descriptor only once the loop has stopped using it. */
static void
waker_close_fd(struct waker *w)
{
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
}

/* ---- queues ------------------------------------------------------------ */

static void
hopq_init(struct hopq *q)
{
    pthread_mutex_init(&q->mu, NULL);
    q->head = q->tail = NULL;
    q->len = 0;
}

/* The link fields of c for one direction. */
struct hoplink {
    struct conn **next;
    unsigned *hops;
    bool *queued;
};

static struct hoplink
link_of(struct conn *c, bool to_main)
{
    if (to_main) {
        return (struct hoplink){ &c->hop_main_next, &c->hop_main_bits,
                                 &c->hop_main_queued };
    }
    return (struct hoplink){ &c->hop_io_next, &c->hop_io_bits,
                             &c->hop_io_queued };
}

static void
hopq_push(struct hopq *q, struct conn *c, unsigned hops, bool to_main)
{
    struct hoplink l = link_of(c, to_main);
    pthread_mutex_lock(&q->mu);
    if (*l.queued) {
        *l.hops |= hops;
    } else {
        *l.queued = true;
        *l.hops = hops;
        *l.next = NULL;
        if (q->tail != NULL) {
            *link_of(q->tail, to_main).next = c;
        } else {
            q->head = c;
        }
        q->tail = c;
        q->len++;
    }
    pthread_mutex_unlock(&q->mu);
}

static struct conn *
hopq_pop(struct hopq *q, unsigned *hops, bool to_main)
{
    pthread_mutex_lock(&q->mu);
    struct conn *c = q->head;
    if (c != NULL) {
        struct hoplink l = link_of(c, to_main);
        q->head = *l.next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        q->len--;
        *hops = *l.hops;
        *l.hops = 0;
        *l.queued = false;
        *l.next = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    return c;
}

static size_t
hopq_len(struct hopq *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Act on what was queued when the drain began, no more; how many. The
 * clients are taken a group at a time and prepare()d as a group first
 * (their keys' cache lines fetched while the others' are), then acted on
 * in order. */
#define DRAIN_GROUP 16

/* The group a thread is acting on (a thread's drains never nest): on the
 * main thread, what an act() that runs for long (a script past
 * busy-reply-threshold) has not reached yet may be given back
 * (iothreads_unrun()). */
static _Thread_local struct {
    struct conn *c;
    unsigned hops;
} group[DRAIN_GROUP];
static _Thread_local size_t group_next, group_len;

static size_t
hopq_drain(struct hopq *q, bool to_main,
           void (*act)(struct conn *c, unsigned hops),
           void (*prepare)(struct conn *c, int phase))
{
    size_t done = 0;
    for (size_t n = hopq_len(q); n > 0;) {
        size_t k = 0;
        while (k < DRAIN_GROUP && n > 0 &&
               (group[k].c = hopq_pop(q, &group[k].hops, to_main)) != NULL) {
            k++;
            n--;
        }
        if (k == 0) {
            break;
        }
        group_len = k;
        for (int phase = 0; prepare != NULL && phase < 2; phase++) {
            for (size_t i = 0; i < k; i++) {
                prepare(group[i].c, phase);
            }
        }
        for (group_next = 0; group_next < group_len;) {
            size_t i = group_next++;
            if (group[i].hops != 0) {
                act(group[i].c, group[i].hops);
            }
        }
        group_len = 0;
        done += k;
        if (k < DRAIN_GROUP) {
            break;
        }
    }
    return done;
}

void
iothreads_unrun(void (*back)(struct conn *c))
{
    for (size_t i = group_next; i < group_len; i++) {
        if (group[i].hops == HOP_RUN) {
            group[i].hops = 0;
            back(group[i].c);
        }
    }
}

/* Poll once more without blocking: work just came, more may follow, and a
 * poll that returns at once costs far less than sleeping and being woken
 * (Redis 8's I/O threads do the same). */
static void
spin_once(uv_idle_t *h)
{
    uv_idle_stop(h);
}

/* ---- pausing ----------------------------------------------------------- */

/* On an I/O thread, between callbacks: park while a pause is asked. */
static void
park_if_asked(void)
{
    pthread_mutex_lock(&pause_mu);
    if (pause_requested) {
        parked++;
        pthread_cond_broadcast(&pause_cv);
        while (pause_requested) {
            pthread_cond_wait(&pause_cv, &pause_mu);
        }
        parked--;
    }
    pthread_mutex_unlock(&pause_mu);
}

void
iothreads_pause(void)
{
    if (nthreads <= 1 || pause_depth++ > 0) {
        return;
    }
    pthread_mutex_lock(&pause_mu);
    pause_requested = true;
    pthread_mutex_unlock(&pause_mu);
    for (unsigned t = 1; t < nthreads; t++) {
        waker_send(&threads[t].wake);
    }
    pthread_mutex_lock(&pause_mu);
    while (parked < nthreads - 1) {
        pthread_cond_wait(&pause_cv, &pause_mu);
    }
    pthread_mutex_unlock(&pause_mu);
}

void
iothreads_resume(void)
{
    if (nthreads <= 1 || pause_depth == 0 || --pause_depth > 0) {
        return;
    }
    pthread_mutex_lock(&pause_mu);
    pause_requested = false;
    pthread_cond_broadcast(&pause_cv);
    pthread_mutex_unlock(&pause_mu);
}

/* ---- an I/O thread ------------------------------------------------------ */

static void
close_own(uv_handle_t *h, void *arg)
{
    struct iothread *t = arg;
    if (uv_is_closing(h)) {
        return;
    }
    if (h == (uv_handle_t *)&t->wake.poll ||
        h == (uv_handle_t *)&t->before_poll ||
        h == (uv_handle_t *)&t->after_poll || h == (uv_handle_t *)&t->spin) {
        uv_close(h, NULL);
    } else {
        hop_ops->close_handle(h);
    }
}

static void
thread_act(struct conn *c, unsigned hops)
{
    hop_ops->at_thread(c, hops);
}

static void
thread_wake(void *arg)
{
    struct iothread *t = arg;
    park_if_asked();
    t->worked |= hopq_drain(&t->to_io, false, thread_act, NULL) > 0;
    if (atomic_load(&t->stopping)) {
        uv_walk(&t->loop, close_own, t);
        return;
    }
    hop_ops->woken();
}

static void
thread_ready_to_poll(struct iothread *t)
{
    park_if_asked();
    t->worked |= hopq_drain(&t->to_io, false, thread_act, NULL) > 0;
    if (atomic_load(&t->stopping)) {
        return;
    }
    if (t->worked) {
        t->worked = false;
        uv_idle_start(&t->spin, spin_once);
        return;
    }
    atomic_store(&t->sleeping, true);
    if (hopq_len(&t->to_io) > 0) {
        atomic_store(&t->sleeping, false);
        uv_idle_start(&t->spin, spin_once);     /* poll must not block */
    }
}

/* Between its prepare and check callbacks a thread's loop only polls and
 * runs what the poll found: the clients read there are handed to the main
 * thread with one wake-up after the last, not one each (the main thread
 * would wake for the first, run it alone and sleep again). */
static void
thread_before_poll(uv_prepare_t *h)
{
    struct iothread *t = h->data;
    thread_ready_to_poll(t);
    t->batching = true;
}

static void
wake_main(void)
{
    if (atomic_exchange(&main_sleeping, false)) {
        waker_send(&main_wake);
    }
}

static void
thread_after_poll(uv_check_t *h)
{
    struct iothread *t = h->data;
    atomic_store_explicit(&t->sleeping, false, memory_order_relaxed);
    t->batching = false;
    if (t->owes_main) {
        t->owes_main = false;
        wake_main();
    }
}

static void *
thread_main(void *arg)
{
    struct iothread *t = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);     /* the main loop's */
    mem_thread_slot(t->id);
    self_id = t->id;
    io_counters_use(t->id);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    return NULL;
}

static int
thread_setup(struct iothread *t, unsigned id)
{
    t->id = id;
    hopq_init(&t->to_io);
    hopq_init(&t->to_main);
    if (uv_loop_init(&t->loop) != 0) {
        return -1;
    }
    if (waker_init(&t->wake, &t->loop, thread_wake, t) != 0) {
        (void)uv_loop_close(&t->loop);
        return -1;
    }
    uv_prepare_init(&t->loop, &t->before_poll);
    uv_check_init(&t->loop, &t->after_poll);
    uv_idle_init(&t->loop, &t->spin);
    t->before_poll.data = t->after_poll.data = t;
    uv_prepare_start(&t->before_poll, thread_before_poll);
    uv_check_start(&t->after_poll, thread_after_poll);
    /* Neither keeps the loop alive: only clients and the wake-up do. */
    uv_unref((uv_handle_t *)&t->before_poll);
    uv_unref((uv_handle_t *)&t->after_poll);
    int rc = pthread_create(&t->tid, NULL, thread_main, t);
    if (rc != 0) {
        log_warning("Cannot start I/O thread %u: %s", id, strerror(rc));
        return -1;
    }
    t->started = true;
    /* Named here rather than by the thread itself, so the name is there
     * once the server says it is ready (a thread may not have run yet). */
    char name[16];
    snprintf(name, sizeof(name), "io_thd_%u", id);
    pthread_setname_np(t->tid, name);
    return 0;
}

/* ---- the main thread ---------------------------------------------------- */

static void
main_act(struct conn *c, unsigned hops)
{
    hop_ops->at_main(c, hops);
}

size_t
iothreads_drain(void)
{
    size_t n = 0;
    for (unsigned t = 1; t < nthreads; t++) {
        n += hopq_drain(&threads[t].to_main, true, main_act, hop_ops->prepare);
    }
    main_worked |= n > 0;
    return n;
}

static bool
main_has_work(void)
{
    for (unsigned t = 1; t < nthreads; t++) {
        if (hopq_len(&threads[t].to_main) > 0) {
            return true;
        }
    }
    return false;
}

static void
main_wake_cb(void *arg)
{
    (void)arg;
    (void)iothreads_drain();
}

void
iothreads_before_poll(void)
{
    if (nthreads <= 1) {
        return;
    }
    if (main_worked) {
        main_worked = false;
        uv_idle_start(&main_spin, spin_once);
        return;
    }
    atomic_store(&main_sleeping, true);
    if (main_has_work()) {
        atomic_store(&main_sleeping, false);
        uv_idle_start(&main_spin, spin_once);
    }
}

static void
main_after_poll_cb(uv_check_t *h)
{
    (void)h;
    atomic_store_explicit(&main_sleeping, false, memory_order_relaxed);
}

int
iothreads_start(uv_loop_t *main_loop, unsigned n,
                const struct iothread_ops *ops)
{
    hop_ops = ops;
    if (n <= 1) {
        return 0;
    }
    if (n > IOTHREADS_MAX) {
        n = IOTHREADS_MAX;
    }
    if (waker_init(&main_wake, main_loop, main_wake_cb, NULL) != 0) {
        log_warning("Cannot start the I/O threads: %s", strerror(errno));
        return -1;
    }
    uv_check_init(main_loop, &main_after_poll);
    uv_idle_init(main_loop, &main_spin);
    uv_check_start(&main_after_poll, main_after_poll_cb);
    uv_unref((uv_handle_t *)&main_after_poll);
    nthreads = n;
    for (unsigned t = 1; t < n; t++) {
        if (thread_setup(&threads[t], t) < 0) {
            nthreads = t;       /* stop what started */
            return -1;
        }
    }
    io_threads_set(n);
    log_notice("Started %u I/O threads", n - 1);
    return 0;
}

void
iothreads_stop(void)
{
    if (nthreads <= 1) {
        return;
    }
    for (unsigned t = 1; t < nthreads; t++) {
        atomic_store(&threads[t].stopping, true);
        waker_send(&threads[t].wake);
    }
    for (unsigned t = 1; t < nthreads; t++) {
        if (threads[t].started) {
            pthread_join(threads[t].tid, NULL);
            (void)uv_loop_close(&threads[t].loop);
            waker_close_fd(&threads[t].wake);
        }
    }
    joined = true;
    (void)iothreads_drain();    /* their clients' last hand-offs */
    uv_close((uv_handle_t *)&main_wake.poll, NULL);
    waker_close_fd(&main_wake);
    uv_close((uv_handle_t *)&main_after_poll, NULL);
    uv_close((uv_handle_t *)&main_spin, NULL);
    nthreads = 1;
    io_threads_set(1);
}

unsigned
iothreads_count(void)
{
    return nthreads;
}

bool
iothreads_running(void)
{
    return nthreads > 1 && !joined;
}

unsigned
iothread_self(void)
{
    return self_id;
}

void
iothread_become(unsigned id)
{
    self_id = id <= IOTHREADS_MAX ? id : IOTHREADS_MAX;
    io_counters_use(self_id);
}

uv_loop_t *
iothread_loop(unsigned t)
{
    return &threads[t].loop;
}

unsigned
iothread_assign(void)
{
    unsigned best = 1;
    for (unsigned t = 2; t < nthreads; t++) {
        if (io_clients_of(t) < io_clients_of(best)) {
            best = t;
        }
    }
    io_clients_add(best, 1);
    return best;
}

void
iothread_forget(unsigned t)
{
    io_clients_add(t, -1);
}

void
iothreads_poke(void)
{
    for (unsigned t = 1; t < nthreads; t++) {
        waker_send(&threads[t].wake);
    }
}

/* Unlink, under q's mutex, every client queued with exactly hops; their
 * count, *out then owning an array of them (NULL when none or when memory
 * ran out, which leaves them queued). */
static size_t
take_matching(struct hopq *q, unsigned hops, struct conn ***out)
{
    size_t n = 0;
    pthread_mutex_lock(&q->mu);
    *out = q->len > 0 ? mem_malloc(q->len * sizeof(**out)) : NULL;
    struct conn **link = &q->head;
    struct conn *prev = NULL;
    while (*out != NULL && *link != NULL) {
        struct conn *c = *link;
        if (c->hop_main_bits != hops) {
            prev = c;
            link = &c->hop_main_next;
            continue;
        }
        *link = c->hop_main_next;
        if (q->tail == c) {
            q->tail = prev;
        }
        q->len--;
        c->hop_main_queued = false;
        c->hop_main_bits = 0;
        c->hop_main_next = NULL;
        (*out)[n++] = c;
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

void
iothread_reclaim(unsigned hops, void (*act)(struct conn *c))
{
    struct conn **taken;
    size_t n = take_matching(&threads[self_id].to_main, hops, &taken);
    for (size_t i = 0; i < n; i++) {
        act(taken[i]);
    }
    mem_free(taken);
}

void
iothread_hand(struct conn *c, unsigned t, unsigned hops)
{
    if (t == 0) {
        struct iothread *from = &threads[self_id];
        hopq_push(&from->to_main, c, hops, true);
        if (from->batching) {
            from->owes_main = true;
        } else {
            wake_main();
        }
        return;
    }
    struct iothread *to = &threads[t];
    hopq_push(&to->to_io, c, hops, false);
    if (atomic_exchange(&to->sleeping, false)) {
        waker_send(&to->wake);
    }
}

