/*
 * replica.c - this node's link to its primary: its own TCP client, the
 * primary's name resolved off the loop, the handshake (PING, AUTH,
 * REPLCONF, PSYNC) and its replies, the snapshot received into a file
 * and loaded, then the stream: CG.EFFECTS applied to the keyspace, every
 * command counted and passed on to replicas of our own as it came, ACKs.
 * See replica.h.
 *
 * A Redis 7.0 primary (replication.h) is followed the same way, but for
 * what comes after the handshake: its snapshot is an RDB file (sent with
 * its length, or diskless, ended by a 40-byte mark), loaded by rdb/'s
 * loader, and its stream is commands, run by the dispatcher on the link's
 * own client (struct repl_command_ops) with no reply sent. The offset
 * counts the stream's bytes as Redis's replica counts its reploff: a
 * command once it ran, a MULTI's commands only with their EXEC; a
 * REPLCONF GETACK is answered with the offset before it. A command that
 * does not apply stops the link (LINK_STOPPED) rather than let the data
 * drift from the primary's: the log and INFO's master_link_down_reason say
 * which and where; REPLICAOF starts over with a full sync.
 *
 * The link is one state machine (link_state) that any error sends back
 * to LINK_CONNECT, to try again a second later. What it takes from the
 * primary goes into the stream (stream.h), which primary.c's replicas
 * hear: this side sits on top of the primary's and never the reverse.
 */
#include "server/repl/replica.h"

#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <uv.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/textbuf.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "protocol/resp.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/journal.h"
#include "server/keyspace.h"
#include "server/funcset.h"
#include "server/log.h"
#include "server/server.h"
#include "server/snapshot.h"
#include "server/store.h"
#include "server/rdb/load.h"
#include "server/repl/primary.h"
#include "server/repl/stream.h"

enum link_state {
    LINK_NONE,                      /* a primary */
    LINK_CONNECT,                   /* to (re)connect */
    LINK_RESOLVING,                 /* the host asked of the resolver */
    LINK_CONNECTING,
    LINK_HANDSHAKE,
    LINK_TRANSFER,                  /* receiving the snapshot */
    LINK_CONNECTED,                 /* streaming */
    LINK_STOPPED                    /* a command that did not apply: no
                                     * reconnecting (stop_reason) */
};

/* What the primary is, as its snapshot (or first command) tells. */
enum primary_kind {
    KIND_UNKNOWN,
    KIND_CELLGATE,                  /* snapshot files, CG.EFFECTS */
    KIND_REDIS                      /* RDB files, Redis's commands */
};

static struct {
    enum link_state state;
    char host[256];
    int port;
    int step;                       /* handshake step */
    uv_tcp_t tcp;
    uv_connect_t creq;
    bool open;                      /* tcp is initialised */
    char *in;                       /* bytes read, not yet used */
    size_t in_len, in_cap;
    int64_t transfer_left;          /* -1: the $len line is still due */
    /* What +FULLRESYNC said, ours once its snapshot is loaded: until
     * then the data is the old one, and so must be the id and offset we
     * answer PSYNC with or continue from after a dropped link. */
    char full_replid[41];
    int64_t full_offset;
    int transfer_fd;
    char transfer_path[4300];
    /* Diskless ($EOF:<mark>): the transfer ends with these 40 bytes,
     * held back in `in` until they are seen whole. */
    bool eof_mark;
    char mark[40];
    int64_t transfer_size;          /* $len; 0 diskless, as Redis shows */
    int64_t transfer_read;
    enum primary_kind kind;
    /* A Redis primary's MULTI ... EXEC: the bytes run but not counted yet
     * (Redis's replica moves its offset at the EXEC). */
    bool in_multi;
    struct textbuf multi_bytes;
    char stop_reason[320];
    bool full_sync_wanted;          /* REPLICAOF after a stop: PSYNC ? -1 */
    struct resp_parser *parser;
    int64_t last_io_ms;
    int64_t down_since_s;
    int64_t retry_ms;
    bool closing;                   /* tcp closed, its callback not run yet */
    int64_t ack_ms;
} upstream = { .transfer_fd = -1 };

/* ---- sending to the primary -------------------------------------------- */

static void link_drop(const char *why);
static void link_close_stopped(void);

static void
on_link_write(uv_write_t *req, int status)
{
    (void)status;
    mem_free(req);
}

/* A command as RESP, the bytes a primary sends and a replica counts. */
static void
encode_command(struct textbuf *t, size_t argc, const char *const *argv,
               const size_t *lens)
{
    textbuf_printf(t, "*%zu\r\n", argc);
    for (size_t i = 0; i < argc; i++) {
        textbuf_printf(t, "$%zu\r\n", lens[i]);
        textbuf_append(t, argv[i], lens[i]);
        textbuf_append(t, "\r\n", 2);
    }
}

/* Send a command to the primary (RESP). */
static void
link_send(int argc, const char *const *argv, const size_t *lens)
{
    struct textbuf t = { 0 };
    encode_command(&t, (size_t)argc, argv, lens);
    uv_write_t *req = t.oom ? NULL : mem_malloc(sizeof(*req) + t.len);
    if (req != NULL) {
        memcpy(req + 1, t.p, t.len);
        uv_buf_t b = uv_buf_init((char *)(req + 1), (unsigned)t.len);
        if (uv_write(req, (uv_stream_t *)&upstream.tcp, &b, 1, on_link_write) != 0) {
            mem_free(req);
        }
    }
    textbuf_free(&t);
}

static void
link_send_words(const char *a, const char *b, const char *c)
{
    const char *argv[3] = { a, b, c };
    size_t lens[3] = { strlen(a), b ? strlen(b) : 0, c ? strlen(c) : 0 };
    link_send(c ? 3 : b ? 2 : 1, argv, lens);
}

static void
send_ack(void)
{
    char off[24];
    snprintf(off, sizeof(off), "%" PRId64, stream_offset());
    link_send_words("REPLCONF", "ACK", off);
}

static const struct repl_command_ops *command_ops;

/* What the primary is; a Redis primary's replica keeps its keys past
 * their expiry until the primary's DEL, as Redis's (keyspace.c). */
static void
set_kind(enum primary_kind kind)
{
    upstream.kind = kind;
    store_keep_dead = kind == KIND_REDIS;
}

void
replica_set_command_ops(const struct repl_command_ops *ops)
{
    command_ops = ops;
}

bool
replica_follows_redis(void)
{
    return upstream.state != LINK_NONE && upstream.kind == KIND_REDIS;
}

/* The Redis primary's MULTI left open by a dropped link is discarded, as
 * Redis's replica discards its cached master's: the primary sends it
 * again from the offset before it. */
static void
forget_open_multi(bool full)
{
    upstream.in_multi = false;
    upstream.multi_bytes.len = 0;
    if (command_ops != NULL) {
        command_ops->reset(full);
    }
}

/* What a replica says its address is when replica-announce-ip/-port are
 * not set (replica_announce_default): "" and 0 = the address it connects
 * from and its own port. */
static char default_ip[256];
static int default_port;

void
replica_announce_default(const char *host, int port)
{
    snprintf(default_ip, sizeof(default_ip), "%s", host);
    default_port = port;
}

static const char *
announce_ip(void)
{
    return srv.conf.replica_announce_ip[0] != '\0'
           ? srv.conf.replica_announce_ip : default_ip;
}

static int
announce_port(void)
{
    return srv.conf.replica_announce_port ? (int)srv.conf.replica_announce_port
           : default_port ? default_port : (int)srv.tcp_port;
}

/* ---- the handshake ----------------------------------------------------- */

/* The next handshake command (step: 0 PING, 1 AUTH, 2 port, 3 ip-address
 * (replica-announce-ip), 4 capa, 5 PSYNC). */
static void
handshake_send(void)
{
    char port[16], off[24];
    switch (upstream.step) {
    case 0:
        link_send_words("PING", NULL, NULL);
        break;
    case 1: {
        /* AUTH [masteruser] masterauth, as Redis's replica sends it. */
        const char *user = srv.conf.masteruser;
        bool named = user != NULL && user[0] != '\0';
        const char *argv[3] = { "AUTH", named ? user : srv.conf.masterauth.p,
                                srv.conf.masterauth.p };
        size_t lens[3] = { 4, named ? strlen(user) : srv.conf.masterauth.len,
                           srv.conf.masterauth.len };
        link_send(named ? 3 : 2, argv, lens);
        break;
    }
    case 2:
        snprintf(port, sizeof(port), "%d", announce_port());
        link_send_words("REPLCONF", "listening-port", port);
        break;
    case 3:
        link_send_words("REPLCONF", "ip-address", announce_ip());
        break;
    case 4: {
        /* As Redis's replica: a Redis primary may then send its RDB
         * diskless; a cellgate primary ignores the capa it has not. */
        const char *argv[5] = { "REPLCONF", "capa", "eof", "capa", "psync2" };
        size_t lens[5] = { 8, 4, 3, 4, 6 };
        link_send(5, argv, lens);
        break;
    }
    default:
        if (upstream.full_sync_wanted) {
            /* Continuing would meet the command that stopped it again. */
            link_send_words("PSYNC", "?", "-1");
            break;
        }
        snprintf(off, sizeof(off), "%" PRId64, stream_offset() + 1);
        link_send_words("PSYNC", srv.replid, off);
        break;
    }
}

static void
handshake_next(void)
{
    upstream.step++;
    if (upstream.step == 1 && srv.conf.masterauth.len == 0) {
        upstream.step++;
    }
    if (upstream.step == 3 && announce_ip()[0] == '\0') {
        upstream.step++;
    }
    handshake_send();
}

/* ---- the snapshot loaded, the stream applied --------------------------- */

/* The snapshot at transfer_path into the emptied keyspace: an RDB file
 * from a Redis primary (its function libraries replace ours), else
 * cellgate's own. The file tells which primary this is. */
static int
load_snapshot(char *err, size_t errlen)
{
    keyspace_flush(-1);
    if (!rdb_is_rdb_file(upstream.transfer_path)) {
        set_kind(KIND_CELLGATE);
        return snapshot_load_file(upstream.transfer_path, err, errlen);
    }
    set_kind(KIND_REDIS);
    forget_open_multi(true);
    if (funcset_replace((const unsigned char *)"", 0, err, errlen) < 0) {
        return -1;
    }
    return rdb_load_file(upstream.transfer_path, err, errlen) == 0 ? 0 : -1;
}

/* Become a fresh replica of the data in the snapshot at transfer_path. */
static void
load_transfer(void)
{
    char err[512];
    if (load_snapshot(err, sizeof(err)) < 0) {
        log_warning("Failed loading the primary's snapshot: %s", err);
        unlink(upstream.transfer_path);
        if (upstream.kind == KIND_REDIS) {
            /* What it holds (a stream key, say) would fail the next full
             * sync too: stop, rather than have Redis fork for each. */
            snprintf(upstream.stop_reason, sizeof(upstream.stop_reason),
                     "the primary's RDB did not load: %.280s", err);
            log_warning("Replication from the Redis primary %s:%d stopped: "
                        "%s", upstream.host, upstream.port,
                        upstream.stop_reason);
            link_close_stopped();
            return;
        }
        link_drop("bad snapshot");
        return;
    }
    unlink(upstream.transfer_path);
    /* The stream restarts here. */
    stream_restart_at(upstream.full_replid, upstream.full_offset);
    /* Our own journal (appendonly) gets the loaded keys as records. */
    for (size_t i = 0; journal_attached(JOURNAL_SINK_FILE) && i < srv.ndbs;
         i++) {
        keyspace_journal_mark_all((int)i);
    }
    /* Replicas of ours followed the old data: they start over. */
    primary_drop_replicas();
    log_notice("MASTER <-> REPLICA sync: finished with success (%zu keys)",
               keyspace_total_keys());
    (void)primary_open_stream();
    upstream.state = LINK_CONNECTED;
    upstream.ack_ms = 0;
    upstream.full_sync_wanted = false;
    if (upstream.eof_mark) {
        /* A diskless primary starts the stream on this first ACK. */
        upstream.ack_ms = clock_mono_ms();
        send_ack();
    }
}

static void
apply_effects(const unsigned char *p, size_t len)
{
    struct journal_reader rd;
    struct journal_record rec;
    journal_reader_records(&rd, p, len, JOURNAL_VERSION);
    int64_t now = clock_wall_now();
    char err[256];
    /* What waits for our journal goes first: the keys a full sync just
     * loaded (load_transfer() listed them) must reach the file as they
     * were loaded, before the stream's records that follow them change
     * them (a list push replayed on top of a pushed state twice). */
    keyspace_publish();
    while (journal_next(&rd, &rec) == JOURNAL_RECORD) {
        if (keyspace_apply_record(&rec, now, err, sizeof(err)) < 0) {
            log_warning("Applying the primary's stream: %s", err);
        }
    }
    journal_publish_upstream(p, len);      /* our own journal's */
}

static bool
arg_is(const struct resp_request *req, size_t i, const char *word)
{
    return i < req->argc && req->argvlen[i] == strlen(word) &&
           strncasecmp(req->argv[i], word, req->argvlen[i]) == 0;
}

/* A Redis primary's command that did not apply: the link stops here, so
 * nothing after it applies either, with where and why in the log and in
 * INFO (master_link_down_reason). */
static void
link_stop(const struct resp_request *req, const char *why)
{
    int n = snprintf(upstream.stop_reason, sizeof(upstream.stop_reason),
                     "command '%.*s' at offset %" PRId64 " did not apply: "
                     "%s", (int)(req->argvlen[0] < 64 ? req->argvlen[0] : 64),
                     req->argv[0], stream_offset() + 1 +
                     (int64_t)upstream.multi_bytes.len, why);
    for (int i = 0; i < n && i < (int)sizeof(upstream.stop_reason); i++) {
        char *ch = &upstream.stop_reason[i];
        *ch = *ch == '\r' || *ch == '\n' ? ' ' : *ch;
    }
    log_warning("Replication from the Redis primary %s:%d stopped: %s",
                upstream.host, upstream.port, upstream.stop_reason);
    link_close_stopped();
}

/* Counted once applied, as Redis's replica counts: a MULTI's bytes with
 * its EXEC (or DISCARD). */
static void
count_redis_command(const struct resp_request *req, const struct textbuf *t)
{
    if (arg_is(req, 0, "multi")) {
        upstream.in_multi = true;
    }
    if (!upstream.in_multi) {
        stream_append(t->p, t->len);
        return;
    }
    textbuf_append(&upstream.multi_bytes, t->p, t->len);
    if (arg_is(req, 0, "exec") || arg_is(req, 0, "discard")) {
        stream_append(upstream.multi_bytes.p, upstream.multi_bytes.len);
        upstream.multi_bytes.len = 0;
        upstream.in_multi = false;
    }
}

/* One command of a Redis primary's stream, run as Redis's replica runs
 * its master client. */
static void
redis_request(struct resp_request *req, const struct textbuf *t)
{
    char err[256];
    if (arg_is(req, 0, "replconf")) {
        if (arg_is(req, 1, "getack")) {
            send_ack();         /* the offset before it, as Redis's */
        }
        count_redis_command(req, t);
        return;
    }
    if (command_ops == NULL) {
        link_stop(req, "no dispatcher");
        return;
    }
    if (!command_ops->run(req, err, sizeof(err))) {
        link_stop(req, err);
        return;
    }
    if (upstream.multi_bytes.oom) {
        link_stop(req, "out of memory");
        return;
    }
    count_redis_command(req, t);
}

/* One command of the stream: applied, counted, passed on to our own
 * replicas as it came. */
static void
stream_request(struct resp_request *req)
{
    if (req->argc == 2 && arg_is(req, 0, "CG.EFFECTS")) {
        set_kind(KIND_CELLGATE);
        apply_effects((const unsigned char *)req->argv[1], req->argvlen[1]);
        stream_command("CG.EFFECTS", req->argv[1], req->argvlen[1]);
        return;
    }
    bool getack = arg_is(req, 0, "replconf") && arg_is(req, 1, "getack");
    if (upstream.kind == KIND_UNKNOWN && !arg_is(req, 0, "replconf") &&
        !arg_is(req, 0, "ping")) {
        set_kind(KIND_REDIS);     /* a +CONTINUE before any sync */
    }
    struct textbuf t = { 0 };
    encode_command(&t, req->argc, (const char *const *)req->argv,
                   req->argvlen);
    if (t.oom) {
        link_drop("out of memory");
    } else if (upstream.kind == KIND_REDIS) {
        redis_request(req, &t);
    } else {
        /* PING and anything else: only its bytes count. */
        stream_append(t.p, t.len);
        if (getack) {
            send_ack();
        }
    }
    textbuf_free(&t);
}

static void
link_stream(const char *data, size_t n)
{
    struct resp_request req;
    if (n > 0 && resp_feed(upstream.parser, data, n) < 0) {
        link_drop("stream too large");
        return;
    }
    for (;;) {
        enum resp_status st = resp_next(upstream.parser, &req);
        if (st == RESP_AGAIN) {
            return;
        }
        if (st != RESP_REQUEST) {
            link_drop("protocol error in the stream");
            return;
        }
        stream_request(&req);
        if (upstream.state != LINK_CONNECTED) {
            return;             /* stopped or dropped: the parser is gone */
        }
    }
}

/* ---- what the primary sends -------------------------------------------- */

/* A whole line at the start of upstream.in, or NULL. */
static char *
take_line(size_t *consumed)
{
    char *nl = memchr(upstream.in, '\n', upstream.in_len);
    if (nl == NULL) {
        return NULL;
    }
    *nl = '\0';
    if (nl > upstream.in && nl[-1] == '\r') {
        nl[-1] = '\0';
    }
    *consumed = (size_t)(nl - upstream.in) + 1;
    return upstream.in;
}

static void
consume(size_t n)
{
    memmove(upstream.in, upstream.in + n, upstream.in_len - n);
    upstream.in_len -= n;
}

/* A handshake reply; false when the link was dropped. */
static bool
handshake_reply(const char *line)
{
    if (upstream.step == 0) {
        if (line[0] != '+' && strncmp(line, "-NOAUTH", 7) != 0) {
            link_drop("the primary did not answer PING");
            return false;
        }
    } else if (upstream.step < 5) {
        if (line[0] != '+') {
            log_warning("The primary refused the handshake: %s", line);
            link_drop("handshake refused");
            return false;
        }
    } else if (line[0] == '\0') {
        return true;                /* a keepalive while the primary waits */
    } else if (strncmp(line, "+FULLRESYNC ", 12) == 0 && strlen(line) > 53) {
        memcpy(upstream.full_replid, line + 12, 40);
        upstream.full_replid[40] = '\0';
        if (!num_parse_i64(line + 53, strlen(line + 53),
                           &upstream.full_offset)) {
            link_drop("bad +FULLRESYNC");
            return false;
        }
        upstream.state = LINK_TRANSFER;
        upstream.transfer_left = -1;
        log_notice("Full resync from the primary: %s:%" PRId64,
                   upstream.full_replid, upstream.full_offset);
        return true;
    } else if (strncmp(line, "+CONTINUE", 9) == 0) {
        if (strlen(line) >= 50 && memcmp(line + 10, srv.replid, 40) != 0) {
            stream_switch_id(line + 10);
        }
        upstream.state = LINK_CONNECTED;
        (void)primary_open_stream();
        log_notice("Successful partial resynchronization with the primary");
        return true;
    } else {
        log_warning("The primary refused PSYNC: %s", line);
        link_drop("PSYNC refused");
        return false;
    }
    handshake_next();
    return true;
}

/* The transfer's first line: $<len> (from disk) or $EOF:<40-byte mark>
 * (diskless), then the file it is saved to. false when the link was
 * dropped. */
static bool
transfer_begin(const char *line)
{
    upstream.eof_mark = strncmp(line, "$EOF:", 5) == 0 && strlen(line) == 45;
    if (upstream.eof_mark) {
        memcpy(upstream.mark, line + 5, 40);
        upstream.transfer_size = 0;
        upstream.transfer_left = INT64_MAX;
    } else if (line[0] != '$' ||
               !num_parse_i64(line + 1, strlen(line + 1),
                              &upstream.transfer_left) ||
               upstream.transfer_left < 0) {
        link_drop("no snapshot from the primary");
        return false;
    } else {
        upstream.transfer_size = upstream.transfer_left;
    }
    upstream.transfer_read = 0;
    snprintf(upstream.transfer_path, sizeof(upstream.transfer_path),
             "%s/temp-replica-%d.snap", srv.conf.dir, (int)getpid());
    upstream.transfer_fd = open(upstream.transfer_path,
                                O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (upstream.transfer_fd < 0) {
        link_drop("cannot write the snapshot");
        return false;
    }
    return true;
}

/* The snapshot's bytes in `in` to the file; diskless, all but the last
 * 40, which may be the mark. Loaded once whole. */
static void
transfer_bytes(void)
{
    size_t used;
    if (upstream.transfer_left < 0) {
        char *line = take_line(&used);
        if (line == NULL) {
            return;
        }
        if (line[0] == '\0') {
            consume(used);              /* keepalive newlines */
            return;
        }
        if (!transfer_begin(line)) {
            return;
        }
        consume(used);
    }
    size_t k = upstream.eof_mark
                   ? (upstream.in_len > 40 ? upstream.in_len - 40 : 0)
               : upstream.in_len < (size_t)upstream.transfer_left
                   ? upstream.in_len : (size_t)upstream.transfer_left;
    if (k > 0 && write(upstream.transfer_fd, upstream.in, k) != (ssize_t)k) {
        link_drop("cannot write the snapshot");
        return;
    }
    consume(k);
    upstream.transfer_read += (int64_t)k;
    bool done;
    if (upstream.eof_mark) {
        done = upstream.in_len == 40 &&
               memcmp(upstream.in, upstream.mark, 40) == 0;
        if (done) {
            consume(40);
            upstream.transfer_read += 40;
        }
    } else {
        upstream.transfer_left -= (int64_t)k;
        done = upstream.transfer_left == 0;
    }
    if (done) {
        close(upstream.transfer_fd);
        upstream.transfer_fd = -1;
        load_transfer();
    }
}

static void
link_input(void)
{
    size_t used;
    while (upstream.in_len > 0) {
        if (upstream.state == LINK_HANDSHAKE) {
            char *line = take_line(&used);
            if (line == NULL) {
                return;
            }
            bool ok = handshake_reply(line);
            if (!ok) {
                return;
            }
            consume(used);
        } else if (upstream.state == LINK_TRANSFER) {
            size_t before = upstream.in_len;
            transfer_bytes();
            if (upstream.state == LINK_TRANSFER && upstream.in_len == before) {
                return;
            }
        } else if (upstream.state == LINK_CONNECTED) {
            size_t n = upstream.in_len;
            upstream.in_len = 0;
            link_stream(upstream.in, n);
            return;
        } else {
            return;
        }
    }
}

static void
on_link_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    if (upstream.in_cap - upstream.in_len < suggested) {
        size_t cap = upstream.in_len + suggested;
        char *p = mem_realloc(upstream.in, cap);
        if (p == NULL) {
            *buf = uv_buf_init(NULL, 0);
            return;
        }
        upstream.in = p;
        upstream.in_cap = cap;
    }
    *buf = uv_buf_init(upstream.in + upstream.in_len,
                       (unsigned)(upstream.in_cap - upstream.in_len));
}

static void
on_link_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)s;
    (void)buf;
    if (n < 0) {
        link_drop(n == UV_EOF ? "the primary closed the connection"
                              : uv_strerror((int)n));
        return;
    }
    upstream.in_len += (size_t)n;
    upstream.last_io_ms = clock_mono_ms();
    link_input();
}

/* ---- connecting, dropping ---------------------------------------------- */

static void
on_link_connect(uv_connect_t *req, int status)
{
    (void)req;
    if (upstream.state != LINK_CONNECTING) {
        return;
    }
    if (status != 0) {
        link_drop(uv_strerror(status));
        return;
    }
    log_notice("MASTER <-> REPLICA sync started");
    upstream.state = LINK_HANDSHAKE;
    upstream.step = 0;
    upstream.last_io_ms = clock_mono_ms();
    uv_read_start((uv_stream_t *)&upstream.tcp, on_link_alloc, on_link_read);
    handshake_send();
}

static void
on_link_closed(uv_handle_t *h)
{
    (void)h;
    upstream.closing = false;
}

/* A resolver answer for an older link (closed, or REPLICAOF changed)
 * finds a newer generation and is dropped. */
static uint64_t link_generation;

static void
link_close(void)
{
    link_generation++;
    if (upstream.open) {
        uv_close((uv_handle_t *)&upstream.tcp, on_link_closed);
        upstream.open = false;
        upstream.closing = true;
    }
    if (upstream.transfer_fd >= 0) {
        close(upstream.transfer_fd);
        upstream.transfer_fd = -1;
        unlink(upstream.transfer_path);
    }
    resp_destroy(&upstream.parser);
    upstream.in_len = 0;
    forget_open_multi(false);
}

static void
link_close_stopped(void)
{
    link_close();
    upstream.state = LINK_STOPPED;
    upstream.down_since_s = clock_wall_us() / US_PER_SEC;
}

static void
link_drop(const char *why)
{
    if (upstream.state == LINK_NONE) {
        return;
    }
    if (upstream.state == LINK_CONNECTED || upstream.state == LINK_TRANSFER) {
        upstream.down_since_s = clock_wall_us() / US_PER_SEC;
    }
    log_warning("Connection with the primary lost: %s", why);
    link_close();
    upstream.state = LINK_CONNECT;
    upstream.retry_ms = clock_mono_ms() + MS_PER_SEC;
}

/* Could host be a name or an address at all? REPLICAOF takes any bytes
 * (as Redis does), but one that is empty or holds a blank, a quote or a
 * control byte names no host: it is not worth a blocking query to the
 * resolver, which could only answer that it does not exist. */
static bool
may_resolve(const char *host)
{
    if (host[0] == '\0') {
        return false;
    }
    for (const char *p = host; *p != '\0'; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || strchr(".-_:%[]", *p) != NULL;
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* The resolver's request with the generation of the link it was made
 * for: the answer comes on the loop, from a thread of libuv's pool. */
struct link_resolve {
    uv_getaddrinfo_t req;
    uint64_t generation;
};

static struct link_resolve *resolving;  /* the one under way, if any */

static void
link_connect_to(const struct sockaddr *addr)
{
    /* The old link's handle is still closing (a new primary set from a
     * timer, the resolver answering before the loop's close phase): the
     * cron connects on its next tick, once the handle is free. */
    if (upstream.closing) {
        upstream.state = LINK_CONNECT;
        upstream.retry_ms = 0;
        return;
    }
    upstream.parser = resp_create(&srv.limits);
    if (upstream.parser == NULL || uv_tcp_init(srv.loop, &upstream.tcp) != 0) {
        link_drop("out of memory");
        return;
    }
    upstream.open = true;
    upstream.state = LINK_CONNECTING;
    log_notice("Connecting to MASTER %s:%d", upstream.host, upstream.port);
    if (uv_tcp_connect(&upstream.creq, &upstream.tcp, addr,
                       on_link_connect) != 0) {
        link_drop("cannot connect");
    }
}

static void
on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct link_resolve *r = (struct link_resolve *)req;
    bool current = r->generation == link_generation &&
                   upstream.state == LINK_RESOLVING;
    resolving = NULL;
    mem_free(r);
    if (!current) {
        uv_freeaddrinfo(res);
        return;
    }
    if (status != 0 || res == NULL) {
        uv_freeaddrinfo(res);
        link_drop("cannot resolve the primary's address");
        return;
    }
    struct sockaddr_storage addr;
    memcpy(&addr, res->ai_addr, res->ai_addrlen);
    uv_freeaddrinfo(res);
    link_connect_to((const struct sockaddr *)&addr);
}

/* The primary's name is resolved off the loop: a resolver that takes
 * seconds to answer (or to time out) must not hold every client. */
static void
link_connect(void)
{
    char port[16];
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
    if (!may_resolve(upstream.host)) {
        link_drop("cannot resolve the primary's address");
        return;
    }
    struct link_resolve *r = mem_malloc(sizeof(*r));
    if (r == NULL) {
        link_drop("out of memory");
        return;
    }
    r->generation = link_generation;
    upstream.state = LINK_RESOLVING;
    snprintf(port, sizeof(port), "%d", upstream.port);
    int rc = uv_getaddrinfo(srv.loop, &r->req, on_resolved, upstream.host,
                            port, &hints);
    if (rc != 0) {
        mem_free(r);
        link_drop(uv_strerror(rc));
        return;
    }
    resolving = r;
}

/* ---- cron, REPLICAOF --------------------------------------------------- */

void
replica_cron(int64_t now)
{
    if (upstream.state == LINK_CONNECT && now >= upstream.retry_ms) {
        link_connect();
        return;
    }
    if ((upstream.state == LINK_HANDSHAKE || upstream.state == LINK_CONNECTED ||
         upstream.state == LINK_TRANSFER) &&
        now - upstream.last_io_ms > srv.conf.repl_timeout * MS_PER_SEC) {
        link_drop("timeout");
        return;
    }
    if (upstream.state == LINK_CONNECTED &&
        now - upstream.ack_ms >= MS_PER_SEC) {
        upstream.ack_ms = now;
        send_ack();
    }
}

/* REPLICAOF NO ONE: the link closed, and the stream goes on under a new
 * ID (PSYNC2: replicas of the old primary may continue with us). */
static void
become_primary(void)
{
    char id[41];
    link_close();
    upstream.state = LINK_NONE;
    set_kind(KIND_UNKNOWN);
    srv.repl_following = false;
    upstream.host[0] = '\0';
    server_random_id(id);
    stream_switch_id(id);
    (void)primary_open_stream();
    log_notice("MASTER MODE enabled (user request)");
}

void
replica_set_primary(const char *host, int port)
{
    if (host == NULL) {
        if (upstream.state != LINK_NONE) {
            become_primary();
        }
        return;
    }
    bool was_primary = upstream.state == LINK_NONE;
    upstream.full_sync_wanted = upstream.state == LINK_STOPPED ||
                                (upstream.full_sync_wanted &&
                                 upstream.state != LINK_NONE);
    link_close();
    set_kind(KIND_UNKNOWN);
    upstream.stop_reason[0] = '\0';
    snprintf(upstream.host, sizeof(upstream.host), "%s", host);
    upstream.port = port;
    upstream.state = LINK_CONNECT;
    srv.repl_following = true;
    upstream.retry_ms = 0;
    /* As Redis: a primary that becomes a replica was never down (-1). */
    upstream.down_since_s = was_primary ? 0 : clock_wall_us() / US_PER_SEC;
    log_notice("REPLICAOF %s:%d enabled (user request)", host, port);
    /* At once, as Redis 7.0 connects: a failover's new link waits for
     * no cron tick. */
    link_connect();
}

int64_t
replica_data_age_ms(void)
{
    if (replica_link_up()) {
        return clock_mono_ms() - upstream.last_io_ms;
    }
    int64_t down = upstream.down_since_s;
    return down == 0 ? 0 : clock_wall_us() / 1000 - down * MS_PER_SEC;
}

bool
replica_link_up(void)
{
    return upstream.state == LINK_CONNECTED;
}

bool
replica_same_primary(const char *host, int port)
{
    /* A stopped link is no connection: REPLICAOF starts it over. */
    return upstream.state != LINK_NONE && upstream.state != LINK_STOPPED &&
           upstream.port == port &&
           strcasecmp(upstream.host, host) == 0;
}

bool
replica_active(void)
{
    return upstream.state != LINK_NONE;
}

/* ---- INFO, ROLE, the end ----------------------------------------------- */

/* A transfer's progress, as Redis's replica shows it: its size -1 until
 * the primary's $<len> line, 0 for a diskless one (what is left then goes
 * negative). */
static void
transfer_info(struct textbuf *t, int64_t now)
{
    bool sized = upstream.transfer_left >= 0;
    int64_t size = sized ? upstream.transfer_size : -1;
    int64_t read = sized ? upstream.transfer_read : 0;
    textbuf_printf(t, "master_sync_total_bytes:%" PRId64 "\r\n"
                   "master_sync_read_bytes:%" PRId64 "\r\n"
                   "master_sync_left_bytes:%" PRId64 "\r\n"
                   "master_sync_perc:%.2f\r\n"
                   "master_sync_last_io_seconds_ago:%lld\r\n",
                   size, read, size - read,
                   size != 0 ? (double)read / (double)size * 100 : 0.0,
                   (long long)((now - upstream.last_io_ms) / MS_PER_SEC));
}

void
replica_info(struct textbuf *t, int64_t now)
{
    bool up = upstream.state == LINK_CONNECTED;
    textbuf_printf(t, "role:slave\r\nmaster_host:%s\r\nmaster_port:%d\r\n"
                   "master_link_status:%s\r\n"
                   "master_last_io_seconds_ago:%lld\r\n"
                   "master_sync_in_progress:%d\r\n"
                   "slave_read_repl_offset:%" PRId64 "\r\n"
                   "slave_repl_offset:%" PRId64 "\r\n",
                   upstream.host, upstream.port, up ? "up" : "down",
                   up ? (long long)((now - upstream.last_io_ms) / MS_PER_SEC)
                      : -1LL,
                   upstream.state == LINK_TRANSFER,
                   stream_offset() + (int64_t)upstream.multi_bytes.len,
                   stream_offset());
    if (upstream.state == LINK_TRANSFER) {
        transfer_info(t, now);
    }
    if (!up) {
        textbuf_printf(t, "master_link_down_since_seconds:%lld\r\n",
                       upstream.down_since_s == 0 ? -1LL
                       : (long long)(clock_wall_us() / US_PER_SEC -
                                     upstream.down_since_s));
    }
    if (upstream.state == LINK_STOPPED) {
        textbuf_printf(t, "master_link_down_reason:%s\r\n",
                       upstream.stop_reason);
    }
    textbuf_printf(t, "slave_priority:%lld\r\nslave_read_only:%d\r\n"
                   "replica_announced:1\r\n",
                   (long long)srv.conf.replica_priority,
                   srv.conf.replica_read_only ? 1 : 0);
}

static const char *
link_state_word(void)
{
    switch (upstream.state) {
    case LINK_CONNECT:
    case LINK_STOPPED: return "connect";
    case LINK_RESOLVING:
    case LINK_CONNECTING: return "connecting";
    case LINK_HANDSHAKE: return "handshake";
    case LINK_TRANSFER: return "sync";
    default: return "connected";
    }
}

void
replica_role(struct conn *c)
{
    reply_array(&c->out, 5);
    reply_bulkz(&c->out, "slave");
    reply_bulkz(&c->out, upstream.host);
    reply_int(&c->out, upstream.port);
    reply_bulkz(&c->out, link_state_word());
    reply_int(&c->out, stream_offset());
}

void
replica_shutdown(void)
{
    link_close();
    if (resolving != NULL) {
        /* Not yet asked: the loop need not wait for it at exit. */
        (void)uv_cancel((uv_req_t *)&resolving->req);
    }
    if (upstream.state != LINK_NONE) {
        upstream.state = LINK_CONNECT;      /* no reconnecting from here */
        upstream.retry_ms = INT64_MAX;
    }
}

void
replica_teardown(void)
{
    upstream.state = LINK_NONE;
    srv.repl_following = false;
    set_kind(KIND_UNKNOWN);
    mem_free(upstream.in);
    upstream.in = NULL;
    textbuf_free(&upstream.multi_bytes);
    upstream.in_cap = upstream.in_len = 0;
}
