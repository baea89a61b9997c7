/*
 * conn.h - a client connection and its state machine.
 *
 *   READING ──(unsent output > pause limit)──> PAUSED ──(drained)──> READING
 *      │                                         │
 *      └──(QUIT, protocol error, limit)──> CLOSE_AFTER_REPLY ──(flushed)──┐
 *      └──(peer gone, write error, hard output limit)──> CLOSING <────────┘
 *
 * Requests are executed as soon as they are framed and their replies are
 * appended to the output buffer in order; the buffer is flushed once per
 * loop iteration (conn_flush_pending() from the loop's prepare handle), so a
 * pipeline of N requests costs one write. Memory is freed only in the libuv
 * close callback.
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

/* Close clients idle longer than srv.conf.timeout. */
void conn_cron(int64_t now_ms);

/* Close every client (shutdown). */
void conn_close_all(void);

#endif
