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
 * Requests are executed as soon as they are framed and their replies are
 * appended to the output buffer in order; the buffer is flushed once per
 * loop iteration (flush_all(), the loop's prepare handle), so a pipeline
 * of N requests costs one write. A reply waits while the journal has not
 * made its writes as safe as appendfsync asks (persist.h). Memory is
 * freed only in the libuv close callback.
 */
#ifndef CELLGATE_CONN_H
#define CELLGATE_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "server/client.h"

/* Set up the loop-wide pieces (prepare/idle handles, read buffer). */
int conn_setup(uv_loop_t *loop);
void conn_teardown(void);

/* A listener's connection callback: accept the client, or count and log
 * (at most once a second) the error libuv reported. */
void conn_on_connection(uv_stream_t *server, int status, bool is_unix);

/* From cron, now_ms on the loop's clock: end a CLIENT PAUSE whose time is
 * up, close clients idle past timeout or PAUSED past
 * client-output-pause-timeout, resize reply buffers, shrink idle query
 * buffers. */
void conn_cron(int64_t now_ms);

/* Close every client (shutdown). */
void conn_close_all(void);

/* The busy server (busy.c) read or answered for c while the loop's thread
 * ran a script: the loop takes it back (a request it held runs first,
 * output it left is written, buffered requests are read; a protocol
 * error it met is answered and the client closed, as on_read() does). */
void conn_wake(struct conn *c, bool protocol_failed);

/* For the busy server's thread: a connection not yet on the loop (its
 * parser and output buffer made, no handle), NULL when memory ran out. */
struct conn *conn_prepare(bool is_unix);

/* Back on the loop's thread: the connection the busy server accepted on
 * fd (conn_prepare()'s c) joins the loop, then as conn_wake(). */
void conn_adopt(struct conn *c, int fd, bool protocol_failed);

#endif
