/*
 * conn.h - a client connection and its state machine (enum conn_state,
 * client.h). A client accepted starts READING (CLOSE_AFTER_REPLY with an
 * error past maxclients); only a READING client runs requests.
 *
 *   READING ──(unsent output > pause limit)──────────────> PAUSED
 *   PAUSED ──(output drained to half the limit)──────────> READING
 *   READING ──(CLIENT PAUSE holds its next request)──────> POSTPONED
 *   POSTPONED ──(the pause ends)─────────────────────────> READING
 *   READING ──(WAIT not answered at once)────────────────> BLOCKED
 *   BLOCKED ──(the replicas acknowledged, or timed out)──> READING
 *   READING, PAUSED ──(QUIT, SHUTDOWN, CLIENT KILL of itself, a protocol
 *                      error, the query buffer limit)───> CLOSE_AFTER_REPLY
 *   CLOSE_AFTER_REPLY ──(its output written)─────────────> CLOSING
 *   PAUSED ──(client-output-pause-timeout)───────────────> CLOSING
 *   READING, PAUSED, CLOSE_AFTER_REPLY ──(timeout)───────> CLOSING
 *   any ──(peer gone, read or write error, hard output limit, out of
 *          memory for replies, CLIENT KILL, shutdown)────> CLOSING
 *
 * Threads. Each client's socket has a home: the main loop, or one I/O
 * thread's loop (io-threads > 1: every client but subscribers, monitors
 * and replicas, whose sockets move to the main loop because the main
 * thread writes to them outside their own requests). One thread holds a
 * client at a time, and only it touches the client's state, parser and
 * output buffer; a hand-off (iothread.h) passes the client on:
 *
 *   home thread: read, frame requests ahead ──(HOP_RUN)──> main thread
 *   main thread: run them, replies appended, then the journal
 *                ──(HOP_BACK, once the replies may leave)──> home thread
 *   home thread: write the replies, read on
 *
 * POSTPONED and BLOCKED clients stay with the main thread until released;
 * a PAUSED one with its home thread until its output drains. While the
 * main thread holds a client, its home thread keeps reading its socket
 * into a side buffer (up to 64 KB, then it stops), fed to the parser when
 * the client comes back. The socket itself, its in-flight write and the
 * side buffer are always the home thread's; the client list, the
 * registries (monitors, subscribers, replicas) and the kill marks always
 * the main thread's, which reads the rest of a client it does not hold
 * only with the I/O threads paused (CLIENT LIST, the cron). With
 * io-threads 1 every client is homed on the main loop and nothing is
 * handed over.
 *
 * Requests are executed as soon as they are framed and their replies are
 * appended to the output buffer in order; the buffer is flushed once per
 * loop iteration (flush_all(), the loop's prepare handle), so a pipeline
 * of N requests costs one write. A reply waits while the journal has not
 * made its writes as safe as appendfsync asks (persist.h). Memory is
 * freed once the socket is closed (libuv's close callback; for a client
 * homed on an I/O thread, once that thread has said the socket is closed,
 * HOP_CLOSED, and then, asked, that it holds nothing more of the client,
 * HOP_RELEASE answered by HOP_FREED: a hand-off made before the main
 * thread learnt of the close may still be on its way).
 */
#ifndef CELLGATE_CONN_H
#define CELLGATE_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "server/client.h"

/* Set up the loop-wide pieces (prepare/idle handles) and start the I/O
 * threads io-threads asks for; -1 when one cannot be made. */
int conn_setup(uv_loop_t *loop);
/* Once every client is closed: stop the I/O threads, release the rest. */
void conn_teardown(void);

/* A listener's connection callback: accept the client, or count and log
 * (at most once a second) the error libuv reported. */
void conn_on_connection(uv_stream_t *server, int status, bool is_unix);

/* From cron, now_ms on the loop's clock: end a CLIENT PAUSE whose time is
 * up, close clients idle past timeout or PAUSED past
 * client-output-pause-timeout, resize reply buffers, shrink idle query
 * buffers (the I/O threads paused meanwhile). */
void conn_cron(int64_t now_ms);

/* Hand the keyspace what maxmemory does not count now, the replicas'
 * output buffers and the journal's buffer
 * (keyspace_set_not_counted()). Before each batch of requests here, and
 * by main.c before the cron's evictions. */
void conn_note_not_counted(void);

/* Close every client (shutdown). */
void conn_close_all(void);

/* The script engine's busy ops (script.h; main.c hands them over): a
 * script ran past busy-reply-threshold, on the main thread inside Lua.
 * start: clients homed on an I/O thread that the main thread holds but
 * has not started go back to be answered there; those homed on the main
 * loop are lent to the busy server's lender (busy.h); the busy flag goes
 * up. stop: the flag goes down, the lender is joined and what it held is
 * taken back, the answers are counted. */
void conn_busy_start(struct conn *caller);
void conn_busy_stop(void);

/* The dispatcher's guard around commands that read other clients
 * (CMD_READS_CLIENTS): the I/O threads paused, then resumed. */
void conn_clients_enter(void);
void conn_clients_leave(void);

#endif
