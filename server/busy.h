/*
 * busy.h - the busy server: other clients answered while a script runs
 * too long.
 *
 * Redis serves clients from inside a long script's hook by re-entering
 * its event loop; libuv's loop cannot be re-entered from one of its own
 * callbacks. So past busy-reply-threshold the script's hook starts a
 * thread that, until the script ends, polls the clients' sockets with an
 * epoll set of its own (the loop's thread is inside Lua and polls
 * nothing). For each request it frames it answers -BUSY, as Redis 7.0
 * does for every command without the allow-busy flag; SCRIPT KILL and
 * SHUTDOWN NOSAVE it hands to the script engine as flags the hook reads;
 * the other allow-busy commands (AUTH, HELLO, MULTI, WATCH, QUIT, ...)
 * and anything it cannot judge alone (an unknown command, a client not
 * authenticated yet, one inside MULTI) it holds, unanswered, for the
 * loop to run once the script is over.
 *
 * What the thread touches is what the loop's thread cannot touch
 * meanwhile: the sockets, parsers and output buffers of the clients it
 * serves. It leaves alone the script's caller, monitors and subscribers
 * (the script's commands feed those), replicas and clients not reading.
 * It writes a reply itself only to a client with nothing else waiting to
 * be written, so bytes never reorder; otherwise the loop writes it. Its
 * allocations are counted apart (mem_side_thread()) and it logs nothing.
 * It accepts new connections too (into connections prepared by conn.c,
 * which the loop adopts afterwards), so a redis-cli started to send
 * SCRIPT KILL gets in.
 */
#ifndef CELLGATE_BUSY_H
#define CELLGATE_BUSY_H

struct conn;

/* The unix socket's listener, if there is one (main.c's). */
void busy_unix_listener(int fd);

/* script_busy_ops's two functions (script.h), which main.c hands over. */
void busy_start(struct conn *caller);
void busy_stop(void);

#endif
