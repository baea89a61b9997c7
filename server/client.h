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

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "lib/mem.h"
#include "protocol/obuf.h"
#include "protocol/resp.h"
#include "server/store.h"

struct blocked;
struct cmd;
struct multi;
struct pubsub_subs;

/* What a command asks of the connection layer (struct conn.requests). */
enum client_request {
    CLIENT_CLOSE_AFTER_REPLY = 1,   /* QUIT, SHUTDOWN, CLIENT KILL of
                                     * itself */
    CLIENT_KILLS = 4,               /* this one marked others killed
                                     * (struct conn's killed): sweep */
    CLIENT_AUTHENTICATED = 8,       /* AUTH passed: lift the small limits */
    CLIENT_UNPAUSES = 16,           /* CLIENT UNPAUSE: run the postponed */
    CLIENT_FEEDS = 32,              /* MONITOR lines or PUBLISH messages
                                     * were queued to others */
    CLIENT_DEAUTHENTICATED = 64,    /* RESET: the small limits again */
    CLIENT_UNBLOCKED = 128          /* WAIT or a blocking pop is
                                     * answered: read on */
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
    CONN_BLOCKED,                   /* WAIT or a blocking pop has not
                                     * answered yet */
    CONN_CLOSE_AFTER_REPLY,
    CONN_CLOSING
};

/* Who may touch which fields (conn.h says more): the "home" fields are
 * its socket's thread's (its I/O thread, or the main thread for a client
 * homed there); the "main" fields are the main thread's; every other
 * field belongs to whichever thread holds the client, which a hand-off
 * (iothread.h) passes on. The main thread reads the rest of a client it
 * does not hold only while the I/O threads are paused. */
struct conn {
    /* home */
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    size_t inflight;                /* bytes handed to uv_write */
    uv_write_t wreq;
    struct obuf wbuf;               /* home != 0: the replies being
                                     * written, taken from out */
    _Atomic size_t wpending;        /* obuf_held(wbuf), for the main
                                     * thread's output limits */
    bool gone;                      /* the main thread holds it */
    bool eof;                       /* the peer went (or a read failed) */
    bool eof_told;                  /* ... and the main thread was told */
    bool stopped;                   /* not read while gone: side is full */
    bool full;                      /* its parser holds a whole batch not
                                     * framed yet: not read meanwhile */
    bool reading;                   /* its socket is read (uv_read_start) */
    bool migrate_asked;             /* HOP_MIGRATE, once its write is done */
    bool waits_busy;                /* a request waits for the script */
    bool slot_freed;                /* its thread closed its socket before
                                     * the main thread forgot it (conn.c:
                                     * closed_early) */
    int read_error;                 /* the failed read's, for the log */
    struct membuf side;             /* bytes read while gone */
    int64_t last_interaction_ms;    /* its loop's clock (uv_now) */
    struct conn *next_waiting_busy; /* its thread's list of waits_busy */
    /* main */
    unsigned home;                  /* the I/O thread of its socket, 0 =
                                     * the main loop's */
    bool at_main;                   /* home != 0: the main thread holds it */
    bool closing;                   /* home != 0: closed on the main side,
                                     * its socket goes next */
    bool migrating;                 /* its socket moves to the main loop */
    bool killed;                    /* CLIENT KILL, or a replica dropped
                                     * (repl/): closed once the command
                                     * returns */
    bool lent;                      /* to the busy server (busy.h) */
    int adopt_fd;                   /* HOP_ADOPT / HOP_ADOPTED's socket */
    struct conn *prev;              /* srv.clients */
    struct conn *next;
    struct conn *next_pending;      /* write list */
    struct conn *next_input;        /* input list */
    struct conn *next_postponed;    /* CLIENT PAUSE's held clients */
    bool write_queued;
    bool input_queued;
    bool postponed_listed;
    uint64_t id;
    char *name;
    char *lib_name;
    char *lib_ver;
    char addr[64];
    char laddr[64];
    int64_t created_ms;             /* the main loop's clock */
    bool monitor;                   /* MONITOR: gets every command (monitor.c) */
    bool script;                    /* the scripts' client (script/api.c):
                                     * MONITOR names it "lua" */
    bool from_primary;              /* the client a Redis primary's stream
                                     * runs on (handlers/primary_client.c):
                                     * no guard refuses its writes */
    bool runs_parts;                /* RL.ALL runs its parts: none may wait
                                     * (handlers/cmd_all.c) */
    struct conn *next_monitor;
    struct pubsub_subs *subs;       /* channels and patterns (pubsub.c) */
    struct conn *next_fed;          /* client_note_fed(): got output */
    bool fed;
    /* WAIT (repl/primary.c): the stream offset and replica count it waits
     * for, and when it gives up (clock_mono_ms; 0 = never). */
    int64_t wait_offset;
    size_t wait_replicas;
    int64_t wait_deadline_ms;
    struct conn *next_waiting;
    /* BLPOP and the other blocking pops: what it waits on (blocked.c),
     * NULL when it does not. */
    struct blocked *blocked;
    /* Hand-off links (iothread.c: under its queues' mutexes). */
    struct conn *hop_main_next;
    unsigned hop_main_bits;
    bool hop_main_queued;
    struct conn *hop_io_next;
    unsigned hop_io_bits;
    bool hop_io_queued;
    /* the holder's */
    enum conn_state state;
    bool is_unix;
    bool backlog;                   /* not read until its requests ran */
    bool authenticated;             /* AUTH done, or no requirepass */
    bool querybuf_overflow;         /* the parser's error is the query
                                     * buffer limit (logged, counted) */
    struct resp_parser *parser;
    struct obuf out;
    /* While CLIENT REPLY OFF or SKIP mutes a command (its replies go to a
     * buffer conn.c drops), where pushes still go: Redis 7.0 sends
     * (un)subscribe confirmations and messages to a muted client. NULL:
     * c->out. Read it through client_push_out(). */
    struct obuf *unmuted_out;
    int proto;                      /* 2 or 3 */
    int db;
    int64_t paused_since_ms;        /* while CONN_PAUSED */
    struct cmd *last_cmd;
    bool reply_error;               /* the current command replied an error */
    /* The hash of the current request's argv[1] once known (framed ahead
     * with it, or from keyspace_lookup()), exact whenever hint.valid. */
    struct key_hint hint;
    struct multi *multi;            /* MULTI and WATCH state (multi.c) */
    /* The journal generation this client's last write went into: its
     * replies wait until persist_safe() reaches it (persist.h). */
    uint64_t journal_gen;
    unsigned requests;              /* enum client_request bits */
    enum client_reply reply_mode;
    bool replica_reads;             /* READONLY: a cluster replica may answer */
    bool asking;                    /* ASKING: the next command may use an
                                       IMPORTING slot (cleared after it,
                                       but inside MULTI) */
    bool no_evict;                  /* CLIENT NO-EVICT ON: flag e (kept by RESET) */
    /* CLIENT LIST's qbuf of the running client, as Redis counts it: its
     * query buffer as the batch being run began, the requests already run
     * included (Redis trims them only once the batch is done). */
    size_t batch_qbuf;
    struct reply_buf rbuf;          /* CLIENT LIST's rbs= and rbp= */
};

/* Replies not yet sent: composed (out) and being written (wbuf). The
 * main thread reads wbuf only with the I/O threads paused. */
static inline size_t
client_unsent(const struct conn *c)
{
    return obuf_pending(&c->out) + obuf_pending(&c->wbuf);
}

/* CLIENT SETNAME, HELLO SETNAME: 0, 1 when the name holds a space, a
 * newline or a byte outside printable ASCII (Redis's rule), -1 when memory
 * ran out; an empty name clears it. */
int client_set_name(struct conn *c, const char *name, size_t len);

/* A client of the server's own, with no socket (the scripts' client, a
 * Redis primary's stream's): zeroed, its reply buffer ready,
 * authenticated, RESP2, shown as "?:0" (as Redis shows its Lua client).
 * The caller sets what it is (script, from_primary). */
void client_init_internal(struct conn *c);

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

/* The buffer a push to c goes to: its output, also while a command of
 * c's runs muted by CLIENT REPLY OFF or SKIP (unmuted_out). */
static inline struct obuf *
client_push_out(struct conn *c)
{
    return c->unmuted_out != NULL ? c->unmuted_out : &c->out;
}
struct conn *client_take_fed(void);
void client_unfed(struct conn *c);

#endif
