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

#include "protocol/obuf.h"
#include "protocol/resp.h"

enum conn_state {
    CONN_READING,
    CONN_PAUSED,
    CONN_CLOSE_AFTER_REPLY,
    CONN_CLOSING
};

struct cmd;

struct conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    enum conn_state state;
    struct conn *prev;              /* srv.clients */
    struct conn *next;
    struct conn *next_pending;      /* write list */
    struct conn *next_input;        /* input list */
    bool write_queued;
    bool input_queued;
    bool is_unix;
    bool backlog;                   /* not read until its requests ran */
    bool authenticated;             /* AUTH done, or no requirepass */
    struct resp_parser *parser;
    struct obuf out;
    size_t inflight;                /* bytes handed to uv_write */
    uv_write_t wreq;
    uint64_t id;
    int proto;                      /* 2 or 3 */
    int db;
    char *name;
    char *lib_name;
    char *lib_ver;
    char addr[64];
    char laddr[64];
    int64_t created_ms;             /* monotonic */
    int64_t last_interaction_ms;    /* monotonic */
    int64_t paused_since_ms;        /* monotonic, while CONN_PAUSED */
    struct cmd *last_cmd;
    bool reply_error;               /* the current command replied an error */
    /* Prefetch ring (conn.c prefetch_ahead): hashes of the keys of the
     * next two pipelined requests with their stream offsets, and the hash
     * of the current request's argv[1] once known (from the ring or from
     * keyspace_lookup()), exact whenever key_hint_valid. */
    bool pf_valid[2];
    uint64_t pf_hash[2];
    size_t pf_len[2];
    uint64_t pf_off[2];
    bool key_hint_valid;
    uint64_t key_hint;
};

/* Set up the loop-wide pieces (prepare/idle handles, read buffer). */
int conn_setup(uv_loop_t *loop);
void conn_teardown(void);

/* A listener's connection callback: accept the client, or count and log
 * (at most once a second) the error libuv reported. */
void conn_on_connection(uv_stream_t *server, int status, bool is_unix);

/* Accept a pending connection on `server`. */
void conn_accept(uv_stream_t *server, bool is_unix);

/* The client passed AUTH: lift the small pre-AUTH request limits. */
void conn_authenticated(struct conn *c);

/* Close now (memory goes in the close callback); safe to call from inside
 * a command. */
void conn_close(struct conn *c);

/* Reply what is queued, then close. */
void conn_close_after_reply(struct conn *c);

/* Close clients idle longer than srv.conf.timeout. */
void conn_cron(int64_t now_ms);

/* Close every client (shutdown). */
void conn_close_all(void);

/* Reply an error and count it (INFO errorstats, failed calls). msg starts
 * with the error code, e.g. "ERR syntax error". */
void conn_error(struct conn *c, const char *msg);
void conn_errorf(struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Monotonic milliseconds as the loop last saw them. */
int64_t conn_now_ms(void);

#endif
