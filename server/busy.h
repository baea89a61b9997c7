/*
 * busy.h - other clients answered while a script runs too long.
 *
 * Redis serves clients from inside a long script's hook by re-entering
 * its event loop; libuv's loop cannot be re-entered from one of its own
 * callbacks. So past busy-reply-threshold the main thread, inside Lua,
 * raises the busy flag (busy_set()), and the threads that do client I/O
 * answer the requests they frame themselves, as Redis 7.0 answers them
 * while busy: -BUSY for every command without the allow-busy flag,
 * SCRIPT KILL and SHUTDOWN NOSAVE turned into flags the script's hook
 * reads (busy_answer()). The other allow-busy commands (AUTH, HELLO,
 * MULTI, WATCH, QUIT...) and what cannot be judged alone (an unknown
 * command, a client not authenticated yet, one inside MULTI or with
 * CLIENT REPLY off) wait, unanswered, for the main thread, and so does
 * everything after them: a client's replies never reorder.
 *
 * Which threads: with io-threads > 1, every I/O thread answers for the
 * clients it holds. The main loop's own sockets (all of them with
 * io-threads 1; the listeners always) are polled by nobody while the
 * main thread is inside Lua, so the connection layer lends them to the
 * lender thread (busy_lend_start()): one more I/O thread for the
 * duration, io_thd_1 when io-threads is 1, with an epoll set of its own,
 * which reads them, frames, answers with the same busy_answer() and
 * writes, and accepts new connections so a redis-cli started to send
 * SCRIPT KILL gets in. When the script returns, the main thread stops and
 * joins it and takes every lent or accepted client back before it polls.
 *
 * It leaves alone what the script's commands can reach: the caller,
 * monitors, subscribers and replicas are never lent, and a client whose
 * replies wait for the journal is not lent either. The answers are
 * counted (INFO commandstats, errorstats) per thread and added to the
 * main thread's statistics by busy_collect() once the script is over.
 */
#ifndef CELLGATE_BUSY_H
#define CELLGATE_BUSY_H

#include <stdbool.h>
#include <stddef.h>

struct conn;

/* The flag: raised by the main thread inside Lua, read by the threads
 * that answer (acquire). */
void busy_set(bool on);
bool busy_active(void);

/* Answer, into c->out, the requests framed ahead in c's parser, in
 * order, as Redis answers them while busy: true when all were answered,
 * false when the one at the head of the queue waits for the main thread
 * (it stays there, with all behind it). Called by the thread that holds
 * c; thread-safe otherwise. */
bool busy_answer(struct conn *c);

/* The lender. prepare(is_unix) makes a client for a socket it accepts
 * (the connection layer's; NULL when memory ran out). */
struct busy_lender_ops {
    struct conn *(*prepare)(bool is_unix);
};

/* The unix socket's listener, if there is one (main.c's). */
void busy_unix_listener(int fd);

/* Start lending: lent[i] reads fds[i]; the listeners are polled too. */
void busy_lend_start(struct conn **lent, const int *fds, size_t n,
                     const struct busy_lender_ops *ops);

/* Stop and join; back(c, fd, accepted, protocol_failed) is called for
 * each client it touched (accepted: a new one, not yet known to the
 * server, on socket fd). */
void busy_lend_stop(void (*back)(struct conn *c, int fd, bool accepted,
                                 bool protocol_failed));

/* Add what the threads answered while busy to the main thread's
 * statistics (main thread, the I/O threads paused or idle). */
void busy_collect(void);

#endif
