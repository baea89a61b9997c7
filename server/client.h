/*
 * client.h - what a command sees of the client it runs for: its protocol,
 * name, output buffer, authentication and the statistics CLIENT LIST
 * shows. The connection machinery that owns it (reading, writing, closing:
 * conn.c) is above the commands; a command that needs something of it
 * sets a request bit here, and conn.c carries it out once the command has
 * returned, so commands never call back into the connection layer.
 * client.c keeps the attributes a client names itself with.
 */
#ifndef CELLGATE_CLIENT_H
#define CELLGATE_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "protocol/obuf.h"
#include "protocol/resp.h"
#include "server/store.h"

struct cmd;
struct multi;
struct pubsub_subs;

/* What a command asks of the connection layer (struct conn.requests). */
enum client_request {
    CLIENT_CLOSE_AFTER_REPLY = 1,   /* QUIT, SHUTDOWN, CLIENT KILL of
                                     * itself */
    CLIENT_KILLED = 2,              /* CLIENT KILL, or a replica dropped
                                     * (repl/): close it now */
    CLIENT_KILLS = 4,               /* this one killed others: sweep */
    CLIENT_AUTHENTICATED = 8,       /* AUTH passed: lift the small limits */
    CLIENT_UNPAUSES = 16,           /* CLIENT UNPAUSE: run the postponed */
    CLIENT_FEEDS = 32,              /* MONITOR lines or PUBLISH messages
                                     * were queued to others */
    CLIENT_DEAUTHENTICATED = 64,    /* RESET: the small limits again */
    CLIENT_UNBLOCKED = 128          /* WAIT is answered: read on */
};

/* CLIENT REPLY: whether a command's reply is sent (conn.c drops it). */
enum client_reply {
    CLIENT_REPLY_ON,
    CLIENT_REPLY_OFF,               /* none until CLIENT REPLY ON */
    CLIENT_REPLY_SKIP_NEXT,         /* not the next command's */
    CLIENT_REPLY_SKIP               /* not this one's (conn.c sets it) */
};

/* Redis 7.0's reply buffer as CLIENT LIST shows it (rbs= its size, rbp=
 * its peak): cellgate's output buffer is another design, so this models
 * Redis's: 16kb at first; the peak is the most reply bytes the buffer held
 * between two writes (at most its size); every 5 s the peak restarts,
 * and the cron shrinks a buffer whose peak stayed under half its size, or
 * doubles (up to 16kb) one the peak filled, sizes rounded as jemalloc
 * rounds them. */
struct reply_buf {
    size_t size;
    size_t peak;
    int64_t peak_reset_ms;          /* the loop's clock (clock.h) */
};

/* A new client's (created at now_ms): Redis restarts its peak at the
 * first cron, so it starts as if the last restart were long ago. */
void reply_buf_init(struct reply_buf *b, int64_t now_ms);

/* pending reply bytes are about to be written (or are counted by CLIENT
 * LIST): the peak they make. */
static inline size_t
reply_buf_peak(const struct reply_buf *b, size_t pending)
{
    size_t held = pending < b->size ? pending : b->size;
    return held > b->peak ? held : b->peak;
}

/* Resize as Redis's cron does (clients cron, once per tick); pending is
 * what waits to be written, which a restarted peak starts from. */
void reply_buf_cron(struct reply_buf *b, size_t pending, int64_t now_ms);

enum conn_state {
    CONN_READING,
    CONN_PAUSED,                    /* its output is over the pause limit */
    CONN_POSTPONED,                 /* CLIENT PAUSE holds its next request */
    CONN_BLOCKED,                   /* WAIT has not answered yet */
    CONN_CLOSE_AFTER_REPLY,
    CONN_CLOSING
};

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
    /* On the loop's clock (clock_loop_ms). */
    int64_t created_ms;
    int64_t last_interaction_ms;
    int64_t paused_since_ms;        /* while CONN_PAUSED */
    struct cmd *last_cmd;
    bool reply_error;               /* the current command replied an error */
    /* Prefetch ring (conn.c prefetch_ahead): hashes of the keys of the
     * next two pipelined requests with their stream offsets, and the hash
     * of the current request's argv[1] once known (from the ring or from
     * keyspace_lookup()), exact whenever hint.valid. */
    bool pf_valid[2];
    uint64_t pf_hash[2];
    size_t pf_len[2];
    uint64_t pf_off[2];
    struct key_hint hint;
    struct multi *multi;            /* MULTI and WATCH state (multi.c) */
    /* The journal generation this client's last write went into: its
     * replies wait until persist_safe() reaches it (persist.h). */
    uint64_t journal_gen;
    unsigned requests;              /* enum client_request bits */
    enum client_reply reply_mode;
    bool monitor;                   /* MONITOR: gets every command (monitor.c) */
    bool script;                    /* the scripts' client (script/api.c):
                                     * MONITOR names it "lua" */
    bool replica_reads;             /* READONLY: a cluster replica may answer */
    struct conn *next_monitor;
    struct pubsub_subs *subs;       /* channels and patterns (pubsub.c) */
    struct conn *next_fed;          /* client_note_fed(): got output */
    /* WAIT (repl/primary.c): the stream offset and replica count it waits
     * for, and when it gives up (clock_mono_ms; 0 = never). */
    int64_t wait_offset;
    size_t wait_replicas;
    int64_t wait_deadline_ms;
    struct conn *next_waiting;
    bool fed;
    struct resp_request held;       /* CONN_POSTPONED: the request held */
    /* CLIENT LIST's qbuf of the running client, as Redis counts it: its
     * query buffer as the batch being run began, the requests already run
     * included (Redis trims them only once the batch is done). */
    size_t batch_qbuf;
    struct reply_buf rbuf;          /* CLIENT LIST's rbs= and rbp= */
};

/* CLIENT SETNAME, HELLO SETNAME: 0, 1 when the name holds a space, a
 * newline or a byte outside printable ASCII (Redis's rule), -1 when memory
 * ran out; an empty name clears it. */
int client_set_name(struct conn *c, const char *name, size_t len);

/* Redis's "local" client (enable-debug-command, enable-protected-configs
 * local): on the unix socket, or from a loopback address. */
bool client_is_local(const struct conn *c);

/* CLIENT SETINFO LIB-NAME / LIB-VER (version true): as client_set_name. */
int client_set_lib(struct conn *c, bool version, const char *s, size_t len);

/* "ip:port" of a socket address, as CLIENT LIST's addr and laddr (RESP
 * and gRPC connections alike). */
void client_format_addr(const struct sockaddr_storage *ss, char *out,
                        size_t len);

/* Output appended to another client than the one running (a PUBLISH
 * message, a replication stream): list it once; conn.c takes the list
 * (client_take_fed, linked by next_fed) and queues their writes, so no
 * module below the connection layer calls into it. client_unfed() takes a
 * closing client off the list. */
void client_note_fed(struct conn *c);
struct conn *client_take_fed(void);
void client_unfed(struct conn *c);

#endif
