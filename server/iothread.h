/*
 * iothread.h - the I/O threads (io-threads N > 1), Redis 8's shape.
 *
 * N - 1 threads, named io_thd_1 ... io_thd_<N-1> as Redis names them, each
 * run a libuv loop of their own for the client connections they are
 * given: they read, frame requests and write replies. The main thread
 * (thread 0) executes every command, in order, so transactions, scripts,
 * replication and the journal keep their single-threaded meaning.
 *
 * A client moves between its thread and the main thread by hand-offs: the
 * client is pushed on the receiver's queue with what the receiver is to
 * do (enum hop bits). Each thread has two queues, one each way, each a
 * mutex and a list linked through the client (struct conn's hop fields),
 * so ThreadSanitizer sees every hand-off. A receiver is woken
 * (an eventfd write) only when it sleeps in its poll or is about to: each
 * loop raises an atomic flag before it polls and lowers it after, and
 * looks at its queues again once the flag is up, so no push is missed and
 * a busy receiver is never woken. What a hand-off means to the client is
 * conn.c's, given to iothreads_start() as two callbacks: iothread.c knows
 * of a client only its queue links.
 *
 * The main thread may pause every I/O thread (iothreads_pause()): each
 * parks at its next wake-up, where it is inside no client's callback,
 * until iothreads_resume(); meanwhile the main thread may read any
 * client's fields (CLIENT LIST, the clients' cron).
 *
 * The threads count their reads and writes in iostats.h's per-thread
 * slots (thread t in slot t).
 */
#ifndef CELLGATE_IOTHREAD_H
#define CELLGATE_IOTHREAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "server/iostats.h"

struct conn;

/* What the receiver of a hand-off is asked (bits; pushes to a client
 * already queued the same way add theirs). */
enum hop {
    /* to the main thread */
    HOP_RUN = 1 << 0,           /* you hold it now: run what it framed */
    HOP_EOF = 1 << 1,           /* its peer went while you hold it */
    HOP_CLOSED = 1 << 2,        /* its socket is closed: free it */
    HOP_ADOPTED = 1 << 3,       /* its socket, moved to your loop */
    HOP_FREED = 1 << 8,         /* its thread let go of it for good */
    /* to an I/O thread */
    HOP_BACK = 1 << 4,          /* you hold it again: write, read on */
    HOP_KILL = 1 << 5,          /* close its socket */
    HOP_ADOPT = 1 << 6,         /* a new client's socket, for your loop */
    HOP_MIGRATE = 1 << 7,       /* move its socket to the main loop */
    HOP_RELEASE = 1 << 9        /* its socket is closed and the main thread
                                 * forgot it: answer HOP_FREED, touch it no
                                 * more (a hand-off made before the main
                                 * thread learnt of the close may still be
                                 * queued behind, or being acted on) */
};

/* conn.c's side of a hand-off, called on the receiving thread. stop is
 * called on each I/O thread as it ends, for every client handle of its
 * loop (uv_walk), to close it. */
struct iothread_ops {
    void (*at_thread)(struct conn *c, unsigned hops);
    void (*at_main)(struct conn *c, unsigned hops);
    void (*close_handle)(uv_handle_t *h);
    void (*woken)(void);        /* on an I/O thread, at each wake-up */
    /* On the main thread, for a group of clients about to be acted on,
     * phase 0 then 1 for each: warm the cache for what they will touch. */
    void (*prepare)(struct conn *c, int phase);
};

/* Start n - 1 I/O threads (n = io-threads; nothing for 1) beside the main
 * loop. -1 (logged) when one cannot be made. */
int iothreads_start(uv_loop_t *main_loop, unsigned n,
                    const struct iothread_ops *ops);

/* At shutdown, once conn.c has closed every client: each thread closes
 * what is left on its loop and ends; the main thread joins them and runs
 * the hand-offs they made on the way (their clients' CLOSED). */
void iothreads_stop(void);

/* io-threads as running: 1 when there are no I/O threads. */
unsigned iothreads_count(void);

/* Whether the I/O threads still run their loops (false once
 * iothreads_stop() has joined them, and without threads). */
bool iothreads_running(void);

/* The calling thread's number: 0 for the main thread. */
unsigned iothread_self(void);

/* The busy server's lender thread counts as I/O thread `id` while it
 * runs (busy.h). */
void iothread_become(unsigned id);

/* Thread t's loop (t >= 1). */
uv_loop_t *iothread_loop(unsigned t);

/* The I/O thread with the fewest clients, as Redis 8 assigns them; its
 * count (iostats.h) then counts the client, until iothread_forget(). */
unsigned iothread_assign(void);
void iothread_forget(unsigned t);

/* The main thread's side of each loop iteration, called by the connection
 * layer's flush pass: first act on what the I/O threads handed over (how
 * many), last (right before the poll) decide whether the poll may sleep. */
size_t iothreads_drain(void);
void iothreads_before_poll(void);

/* From inside an act of iothreads_drain() that runs long (a script past
 * busy-reply-threshold): the clients handed over with HOP_RUN in the same
 * group, not reached yet, are given to back() instead (the main thread
 * holds them; back() hands them back to be answered). */
void iothreads_unrun(void (*back)(struct conn *c));

/* Hand c over: from the main thread to thread t (HOP_BACK...), or from an
 * I/O thread to the main thread (t = 0, HOP_RUN...). */
void iothread_hand(struct conn *c, unsigned t, unsigned hops);

/* Wake every I/O thread (iothread_ops.woken runs on each). */
void iothreads_poke(void);

/* On an I/O thread: take back, from its queue to the main thread, the
 * clients handed over with exactly `hops` and not taken yet, calling
 * act(c) for each (this thread holds them again). */
void iothread_reclaim(unsigned hops, void (*act)(struct conn *c));

/* Pause every I/O thread until iothreads_resume() (main thread; nests). */
void iothreads_pause(void);
void iothreads_resume(void);

#endif
