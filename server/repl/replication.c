/*
 * replication.c - see replication.h.
 */
#include "server/repl/replication.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "protocol/obuf.h"
#include "protocol/reply.h"
#include "protocol/resp.h"
#include "server/child.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/journal.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/server.h"
#include "server/snapshot.h"
#include "server/repl/stream.h"
#include "lib/textbuf.h"

/* ---- the primary's replicas -------------------------------------------- */

enum peer_state {
    PEER_HANDSHAKE,
    PEER_WAIT_SNAPSHOT,             /* the child is writing it */
    PEER_SEND_SNAPSHOT,             /* sent in slices, cron by cron */
    PEER_ONLINE
};

/* How much of a snapshot a replica is sent per cron tick, and how much of
 * it may wait in its output buffer: bounded work, so the primary's loop
 * never stalls on a large copy. */
#define SNAPSHOT_SLICE (4u << 20)

struct peer {
    struct conn *c;
    enum peer_state state;
    bool syncing;                   /* waits on the running snapshot */
    int port;
    char ip[64];
    int64_t ack_offset;
    int64_t ack_ms;                 /* monotonic */
    struct obuf pending;            /* the stream while the snapshot goes */
    int fd;                         /* PEER_SEND_SNAPSHOT: the file */
    int64_t left;                   /* its bytes still to send */
    struct peer *next;
};

static struct peer *peers;
static struct conn *waiting;        /* clients in WAIT */
static void check_waiting(int64_t now);
static void close_snapshot(int fd);
static char sync_path[4300];
/* The stream position and id the running snapshot stands at: a replica
 * that asks while it runs is told this offset, never the current one. */
static int64_t sync_offset;
static char sync_replid[41];
static int64_t last_ping_ms;
static int64_t last_newline_ms;

/* ---- the replica's link ------------------------------------------------ */

enum link_state {
    LINK_NONE,                      /* a primary */
    LINK_CONNECT,                   /* to (re)connect */
    LINK_RESOLVING,                 /* the host asked of the resolver */
    LINK_CONNECTING,
    LINK_HANDSHAKE,
    LINK_TRANSFER,                  /* receiving the snapshot */
    LINK_CONNECTED                  /* streaming */
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
    struct resp_parser *parser;
    int64_t last_io_ms;
    int64_t down_since_s;
    int64_t retry_ms;
    int64_t ack_ms;
} upstream = { .transfer_fd = -1 };

bool
repl_streaming(void)
{
    return stream_active();
}

/* ---- the stream to the replicas ---------------------------------------- */

/* The stream's tap: every replica past its snapshot gets the bytes, the
 * others keep them until it is sent. */
static void
feed_peers(const void *data, size_t n)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_ONLINE) {
            obuf_append(&p->c->out, data, n);
            client_note_fed(p->c);
        } else if (p->state != PEER_HANDSHAKE) {
            obuf_append(&p->pending, data, n);
        }
    }
}

/* Every replica is dropped (it comes back for a full sync): the data it
 * followed is gone. */
static void
drop_replicas(void)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        p->c->requests |= CLIENT_KILLED;
        client_note_fed(p->c);
    }
}

static const struct stream_tap peers_tap = {
    .bytes = feed_peers,
    .lost = drop_replicas,
};

/* ---- the primary: replicas --------------------------------------------- */

static struct peer *
peer_of(const struct conn *c)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->c == c) {
            return p;
        }
    }
    return NULL;
}

bool
repl_is_replica_client(const struct conn *c)
{
    const struct peer *p = peer_of(c);
    return p != NULL && p->state != PEER_HANDSHAKE;
}

static struct peer *
peer_get(struct conn *c)
{
    struct peer *p = peer_of(c);
    if (p == NULL && (p = mem_calloc(1, sizeof(*p))) != NULL) {
        p->c = c;
        p->fd = -1;
        obuf_init(&p->pending);
        p->ack_ms = clock_mono_ms();
        const char *colon = strrchr(c->addr, ':');
        size_t n = colon ? (size_t)(colon - c->addr) : strlen(c->addr);
        snprintf(p->ip, sizeof(p->ip), "%.*s", (int)n, c->addr);
        p->next = peers;
        peers = p;
    }
    return p;
}

void
repl_forget(struct conn *c)
{
    for (struct conn **w = &waiting; *w != NULL; w = &(*w)->next_waiting) {
        if (*w == c) {
            *w = c->next_waiting;
            break;
        }
    }
    for (struct peer **pp = &peers; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->c == c) {
            struct peer *p = *pp;
            *pp = p->next;
            if (p->state != PEER_HANDSHAKE) {
                log_notice("Connection with replica %s:%d lost.", p->ip,
                           p->port);
            }
            obuf_deinit(&p->pending);
            if (p->fd >= 0) {
                close_snapshot(p->fd);
            }
            mem_free(p);
            return;
        }
    }
}

void
repl_replconf(struct conn *c, const char *key, size_t klen,
              const char *value, size_t vlen)
{
    struct peer *p = peer_get(c);
    int64_t v = 0;
    if (p == NULL) {
        return;
    }
    if (klen == 14 && strncasecmp(key, "listening-port", 14) == 0 &&
        num_parse_i64(value, vlen, &v)) {
        p->port = (int)v;
    } else if (klen == 10 && strncasecmp(key, "ip-address", 10) == 0) {
        snprintf(p->ip, sizeof(p->ip), "%.*s", (int)(vlen < 63 ? vlen : 63),
                 value);
    } else if (klen == 3 && strncasecmp(key, "ack", 3) == 0 &&
               num_parse_i64(value, vlen, &v)) {
        p->ack_offset = v;
        p->ack_ms = clock_mono_ms();
        if (waiting != NULL) {
            check_waiting(p->ack_ms);
        }
    }
}

/* +FULLRESYNC: the replica loads a snapshot standing at `offset`, then
 * the stream from the byte after it. */
static void
send_fullresync(struct peer *p, const char *replid, int64_t offset)
{
    char line[128];
    int k = snprintf(line, sizeof(line), "+FULLRESYNC %s %" PRId64 "\r\n",
                     replid, offset);
    obuf_append(&p->c->out, line, (size_t)k);
    client_note_fed(p->c);
    p->syncing = true;
}

/* ---- the primary: the snapshot child ------------------------------------ */

static int sync_work(void);
static int sync_start(char *err, size_t errlen);
static void sync_done(const struct child_exit *how);

/* A replica's full sync is a background child of its own kind (child.h):
 * it waits behind a BGSAVE or a journal rewrite, as Redis's does. */
static const struct child_ops sync_ops = {
    .kind = CHILD_REPL_SNAPSHOT,
    .work = sync_work,
    .start = sync_start,
    .done = sync_done,
};

/* In the child. */
static int
sync_work(void)
{
    char err[256];
    return snapshot_write(sync_path, err, sizeof(err));
}

/* Replicas that wait for a snapshot not yet started. */
static bool
peers_waiting(void)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_WAIT_SNAPSHOT && !p->syncing) {
            return true;
        }
    }
    return false;
}

/* No snapshot can be written for them: as Redis, they are dropped (and
 * connect again). */
static void
drop_waiting_peers(void)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_WAIT_SNAPSHOT && !p->syncing) {
            p->c->requests |= CLIENT_KILLED;
            client_note_fed(p->c);
        }
    }
}

/* child.h's start(): fork the child that writes the snapshot, and tell
 * every replica that waited for one (PEER_WAIT_SNAPSHOT, not syncing)
 * that it stands at the stream's offset now: the stream they keep starts
 * here. Nothing when none waits any more (a scheduled one whose replicas
 * left). */
static int
sync_start(char *err, size_t errlen)
{
    if (!peers_waiting()) {
        return 0;
    }
    snprintf(sync_path, sizeof(sync_path), "%s/temp-repl-%d.snap",
             srv.conf.dir, (int)getpid());
    pid_t pid = child_fork(&sync_ops, err, errlen);
    if (pid < 0) {
        log_warning("Cannot fork for a replica's snapshot: %s", err);
        drop_waiting_peers();
        return -1;
    }
    sync_offset = stream_offset();
    memcpy(sync_replid, srv.replid, sizeof(sync_replid));
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_WAIT_SNAPSHOT && !p->syncing) {
            obuf_deinit(&p->pending);       /* the snapshot holds it all */
            obuf_init(&p->pending);
            send_fullresync(p, sync_replid, sync_offset);
        }
    }
    log_notice("Starting a snapshot for replication (pid %d) at offset "
               "%" PRId64, (int)pid, stream_offset());
    return 0;
}

/* A snapshot for the replicas waiting: now, or once the running child
 * (a BGSAVE, a journal rewrite, the previous replica snapshot) ended. */
static bool
start_snapshot(void)
{
    char err[256];
    return child_request(&sync_ops, CHILD_MAY_WAIT, err, sizeof(err)) !=
           CHILD_FAILED;
}

/* A replica that asks while a snapshot is being written shares it, as
 * Redis attaches a replica to the BGSAVE under way: it is told the
 * snapshot's offset and keeps the stream since then, from the backlog.
 * false when the backlog no longer holds all of that (it waits for the
 * next snapshot) or the stream's id changed since. */
static bool
attach_to_running_snapshot(struct peer *p)
{
    if (!child_running(CHILD_REPL_SNAPSHOT) ||
        memcmp(sync_replid, srv.replid, 41) != 0) {
        return false;
    }
    obuf_deinit(&p->pending);
    obuf_init(&p->pending);
    if (!stream_copy_from(sync_offset + 1, &p->pending)) {
        obuf_deinit(&p->pending);
        obuf_init(&p->pending);
        return false;
    }
    send_fullresync(p, sync_replid, sync_offset);
    return true;
}

/* Another kind of child runs (child.h): the replica's snapshot starts
 * after it, with Redis's words for why. */
static bool
full_resync_after_other_child(struct peer *p)
{
    log_notice("Replica %s:%d asks for synchronization: full resync; %s",
               p->ip, p->port,
               child_saving()
                   ? "Can't attach the replica to the current BGSAVE. "
                     "Waiting for next BGSAVE for SYNC"
                   : "No BGSAVE in progress, but another BG operation is "
                     "active. BGSAVE for replication delayed");
    return start_snapshot();
}

static bool
full_resync(struct peer *p)
{
    p->state = PEER_WAIT_SNAPSHOT;
    p->syncing = false;
    if (child_running(CHILD_NONE) && !child_running(CHILD_REPL_SNAPSHOT)) {
        return full_resync_after_other_child(p);
    }
    if (!child_running(CHILD_REPL_SNAPSHOT)) {
        log_notice("Replica %s:%d asks for synchronization: full resync",
                   p->ip, p->port);
        return start_snapshot();
    }
    if (attach_to_running_snapshot(p)) {
        log_notice("Replica %s:%d asks for synchronization: full resync, "
                   "with the snapshot under way (offset %" PRId64 ")",
                   p->ip, p->port, sync_offset);
    } else {
        log_notice("Replica %s:%d asks for synchronization: full resync; "
                   "waiting for the next snapshot (the backlog lacks the "
                   "stream since the running one started)", p->ip, p->port);
    }
    return true;
}

bool
repl_psync(struct conn *c, const char *id, size_t idlen, int64_t offset)
{
    struct peer *p = peer_get(c);
    char line[128];
    if (p == NULL || !stream_open(&peers_tap)) {
        return false;
    }
    if (stream_knows(id, idlen, offset)) {
        struct obuf tail;
        obuf_init(&tail);
        if (stream_copy_from(offset, &tail)) {
            snprintf(line, sizeof(line), "+CONTINUE %s\r\n", srv.replid);
            obuf_append(&c->out, line, strlen(line));
            size_t bytes;
            struct iovec iov[16];
            while (obuf_pending(&tail) > 0) {
                size_t n = obuf_iov(&tail, 0, iov, 16, &bytes);
                for (size_t i = 0; i < n; i++) {
                    obuf_append(&c->out, iov[i].iov_base, iov[i].iov_len);
                }
                obuf_consume(&tail, bytes);
            }
            obuf_deinit(&tail);
            p->state = PEER_ONLINE;
            log_notice("Partial resynchronization request from %s:%d "
                       "accepted: sending %" PRId64 " bytes of backlog",
                       p->ip, p->port, stream_offset() + 1 - offset);
            return true;
        }
        obuf_deinit(&tail);
    }
    return full_resync(p);
}

/* A child that died before renaming its file leaves snapshot_write()'s
 * temporary one, named after it: removed, as a failed BGSAVE's is. */
static void
remove_sync_temp(pid_t pid)
{
    char tmp[4400];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", sync_path, (int)pid);
    if (unlink(tmp) == 0) {
        log_notice("Removed the temporary file %s of a failed snapshot for "
                   "replication", tmp);
    }
}

/* The snapshot child ended: each replica that waited for it starts
 * receiving it (send_slices); the ones that came later get the next one. */
static void
sync_done(const struct child_exit *how)
{
    if (!how->ok) {
        remove_sync_temp(how->pid);
    }
    if (how->killed) {
        unlink(sync_path);          /* the server is stopping */
        return;
    }
    bool ok = how->ok;
    struct stat st;
    bool have = ok && stat(sync_path, &st) == 0;
    bool again = false;
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state != PEER_WAIT_SNAPSHOT) {
            continue;
        }
        if (!p->syncing) {
            again = true;
            continue;
        }
        p->fd = have ? open(sync_path, O_RDONLY | O_CLOEXEC) : -1;
        if (p->fd < 0) {
            log_warning("Replica %s:%d: no snapshot to send", p->ip, p->port);
            p->c->requests |= CLIENT_KILLED;
            client_note_fed(p->c);
            continue;
        }
        char head[32];
        int k = snprintf(head, sizeof(head), "$%lld\r\n",
                         (long long)st.st_size);
        obuf_append(&p->c->out, head, (size_t)k);
        p->left = st.st_size;
        p->state = PEER_SEND_SNAPSHOT;
        p->syncing = false;
    }
    unlink(sync_path);              /* the open descriptors keep it */
    if (again) {
        (void)start_snapshot();
    }
}

static void
closed_in_background(uv_fs_t *req)
{
    uv_fs_req_cleanup(req);
    mem_free(req);
}

/* The last descriptor of the unlinked snapshot: closing it frees the
 * file, which takes the file system milliseconds per 50 MB: off the loop. */
static void
close_snapshot(int fd)
{
    uv_fs_t *req = mem_malloc(sizeof(*req));
    if (req == NULL ||
        uv_fs_close(srv.loop, req, fd, closed_in_background) != 0) {
        mem_free(req);
        close(fd);
    }
}

/* The stream kept while the snapshot went: after it, in order. */
static void
append_pending(struct peer *p)
{
    struct iovec iov[16];
    size_t bytes;
    while (obuf_pending(&p->pending) > 0) {
        size_t n = obuf_iov(&p->pending, 0, iov, 16, &bytes);
        for (size_t i = 0; i < n; i++) {
            obuf_append(&p->c->out, iov[i].iov_base, iov[i].iov_len);
        }
        obuf_consume(&p->pending, bytes);
    }
}

/* One slice of the snapshot to each replica receiving one, while its
 * output holds less than a slice: bounded work per cron tick. */
static void
send_slices(void)
{
    static char chunk[64 * 1024];
    for (struct peer *p = peers; p != NULL; p = p->next) {
        size_t sent = 0;
        while (p->state == PEER_SEND_SNAPSHOT && p->left > 0 &&
               sent < SNAPSHOT_SLICE &&
               obuf_pending(&p->c->out) < SNAPSHOT_SLICE) {
            size_t want = p->left < (int64_t)sizeof(chunk) ? (size_t)p->left
                                                           : sizeof(chunk);
            ssize_t n = read(p->fd, chunk, want);
            if (n <= 0) {
                log_warning("Reading the snapshot for replica %s:%d failed",
                            p->ip, p->port);
                p->c->requests |= CLIENT_KILLED;
                p->left = -1;
                break;
            }
            obuf_append(&p->c->out, chunk, (size_t)n);
            p->left -= n;
            sent += (size_t)n;
        }
        if (p->state == PEER_SEND_SNAPSHOT && p->left == 0) {
            close_snapshot(p->fd);
            p->fd = -1;
            append_pending(p);
            p->state = PEER_ONLINE;
            log_notice("Synchronization with replica %s:%d succeeded",
                       p->ip, p->port);
        }
        if (sent > 0 || (p->c->requests & CLIENT_KILLED)) {
            client_note_fed(p->c);
        }
    }
}

/* A replica waiting for its snapshot hears nothing else for as long as
 * the child writes: a newline a second keeps its repl-timeout from
 * firing, as Redis sends (replicas skip them before +FULLRESYNC and
 * before the snapshot's $<length>). */
static void
keep_waiting_replicas_alive(void)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_WAIT_SNAPSHOT) {
            obuf_append(&p->c->out, "\n", 1);
            client_note_fed(p->c);
        }
    }
}

static void
primary_cron(int64_t now)
{
    send_slices();
    if (waiting != NULL) {
        check_waiting(now);
    }
    if (now - last_newline_ms >= 1000) {
        last_newline_ms = now;
        keep_waiting_replicas_alive();
    }
    /* A replica passes its primary's PINGs on; its own would shift its
     * replicas' offsets from the primary's. */
    if (peers != NULL && upstream.state == LINK_NONE &&
        now - last_ping_ms >= srv.conf.repl_ping_replica_period * 1000) {
        static const char ping[] = "*1\r\n$4\r\nPING\r\n";
        last_ping_ms = now;
        stream_append(ping, sizeof(ping) - 1);
    }
}

/* ---- the replica's link ------------------------------------------------ */

static void link_drop(const char *why);

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

/* What a replica says its address is when replica-announce-ip/-port are
 * not set (repl_announce_default): "" and 0 = the address it connects
 * from and its own port. */
static char default_ip[256];
static int default_port;

void
repl_announce_default(const char *host, int port)
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
        const char *argv[2] = { "AUTH", srv.conf.masterauth.p };
        size_t lens[2] = { 4, srv.conf.masterauth.len };
        link_send(2, argv, lens);
        break;
    }
    case 2:
        snprintf(port, sizeof(port), "%d", announce_port());
        link_send_words("REPLCONF", "listening-port", port);
        break;
    case 3:
        link_send_words("REPLCONF", "ip-address", announce_ip());
        break;
    case 4:
        link_send_words("REPLCONF", "capa", "psync2");
        break;
    default:
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

/* Become a fresh replica of the data in the snapshot at transfer_path. */
static void
load_transfer(void)
{
    char err[512];
    keyspace_flush(-1);
    if (snapshot_load_file(upstream.transfer_path, err, sizeof(err)) < 0) {
        log_warning("Failed loading the primary's snapshot: %s", err);
        unlink(upstream.transfer_path);
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
    drop_replicas();
    log_notice("MASTER <-> REPLICA sync: finished with success (%zu keys)",
               keyspace_total_keys());
    (void)stream_open(&peers_tap);
    upstream.state = LINK_CONNECTED;
    upstream.ack_ms = 0;
}

static void
apply_effects(const unsigned char *p, size_t len)
{
    struct journal_reader rd;
    struct journal_record rec;
    journal_reader_records(&rd, p, len);
    int64_t now = clock_wall_now();
    char err[256];
    while (journal_next(&rd, &rec) == JOURNAL_RECORD) {
        if (keyspace_apply_record(&rec, now, err, sizeof(err)) < 0) {
            log_warning("Applying the primary's stream: %s", err);
        }
    }
    journal_publish_upstream(p, len);      /* our own journal's */
}

/* One command of the stream: applied, counted, passed on to our own
 * replicas as it came. */
static void
stream_request(const struct resp_request *req)
{
    if (req->argc == 2 && req->argvlen[0] == 10 &&
        strncasecmp(req->argv[0], "CG.EFFECTS", 10) == 0) {
        apply_effects((const unsigned char *)req->argv[1], req->argvlen[1]);
        stream_command("CG.EFFECTS", req->argv[1], req->argvlen[1]);
        return;
    }
    bool getack = req->argc >= 2 && req->argvlen[0] == 8 &&
                  strncasecmp(req->argv[0], "REPLCONF", 8) == 0 &&
                  strncasecmp(req->argv[1], "GETACK", 6) == 0;
    /* PING and anything else: only its bytes count. */
    struct textbuf t = { 0 };
    encode_command(&t, req->argc, (const char *const *)req->argv,
                   req->argvlen);
    if (!t.oom) {
        stream_append(t.p, t.len);
    }
    textbuf_free(&t);
    if (getack) {
        send_ack();
    }
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
    }
}

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
        (void)stream_open(&peers_tap);
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
        if (line[0] != '$' || !num_parse_i64(line + 1, strlen(line + 1),
                                             &upstream.transfer_left)) {
            link_drop("no snapshot from the primary");
            return;
        }
        consume(used);
        snprintf(upstream.transfer_path, sizeof(upstream.transfer_path),
                 "%s/temp-replica-%d.snap", srv.conf.dir, (int)getpid());
        upstream.transfer_fd = open(upstream.transfer_path,
                                O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (upstream.transfer_fd < 0) {
            link_drop("cannot write the snapshot");
            return;
        }
    }
    size_t k = upstream.in_len < (size_t)upstream.transfer_left
                   ? upstream.in_len : (size_t)upstream.transfer_left;
    if (k > 0 && write(upstream.transfer_fd, upstream.in, k) != (ssize_t)k) {
        link_drop("cannot write the snapshot");
        return;
    }
    consume(k);
    upstream.transfer_left -= (int64_t)k;
    if (upstream.transfer_left == 0) {
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
    }
    if (upstream.transfer_fd >= 0) {
        close(upstream.transfer_fd);
        upstream.transfer_fd = -1;
        unlink(upstream.transfer_path);
    }
    resp_destroy(&upstream.parser);
    upstream.in_len = 0;
}

static void
link_drop(const char *why)
{
    if (upstream.state == LINK_NONE) {
        return;
    }
    if (upstream.state == LINK_CONNECTED || upstream.state == LINK_TRANSFER) {
        upstream.down_since_s = clock_wall_us() / 1000000;
    }
    log_warning("Connection with the primary lost: %s", why);
    link_close();
    upstream.state = LINK_CONNECT;
    upstream.retry_ms = clock_mono_ms() + 1000;
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

static void
replica_cron(int64_t now)
{
    if (upstream.state == LINK_CONNECT && now >= upstream.retry_ms) {
        link_connect();
        return;
    }
    if ((upstream.state == LINK_HANDSHAKE || upstream.state == LINK_CONNECTED ||
         upstream.state == LINK_TRANSFER) &&
        now - upstream.last_io_ms > srv.conf.repl_timeout * 1000) {
        link_drop("timeout");
        return;
    }
    if (upstream.state == LINK_CONNECTED && now - upstream.ack_ms >= 1000) {
        upstream.ack_ms = now;
        send_ack();
    }
}

void
repl_set_primary(const char *host, int port)
{
    if (host == NULL) {
        char id[41];
        if (upstream.state == LINK_NONE) {
            return;
        }
        link_close();
        upstream.state = LINK_NONE;
        srv.repl_following = false;
        upstream.host[0] = '\0';
        /* PSYNC2: replicas of the old primary may continue with us. */
        server_random_id(id);
        stream_switch_id(id);
        (void)stream_open(&peers_tap);
        log_notice("MASTER MODE enabled (user request)");
        return;
    }
    link_close();
    snprintf(upstream.host, sizeof(upstream.host), "%s", host);
    upstream.port = port;
    upstream.state = LINK_CONNECT;
    srv.repl_following = true;
    upstream.retry_ms = 0;
    upstream.down_since_s = clock_wall_us() / 1000000;
    log_notice("REPLICAOF %s:%d enabled (user request)", host, port);
}

bool
repl_link_up(void)
{
    return upstream.state == LINK_CONNECTED;
}

bool
repl_same_primary(const char *host, int port)
{
    return upstream.state != LINK_NONE && upstream.port == port &&
           strcasecmp(upstream.host, host) == 0;
}

/* ---- both -------------------------------------------------------------- */

void
repl_cron(void)
{
    int64_t now = clock_mono_ms();
    primary_cron(now);
    if (upstream.state != LINK_NONE) {
        replica_cron(now);
    }
}

/* Replicas that acknowledged the stream up to offset. */
static size_t
acked(int64_t offset)
{
    size_t n = 0;
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        n += p->state == PEER_ONLINE && p->ack_offset >= offset;
    }
    return n;
}

static void
answer_wait(struct conn *c, size_t n)
{
    reply_int(&c->out, (int64_t)n);
    c->requests |= CLIENT_UNBLOCKED;
    client_note_fed(c);
}

bool
repl_wait(struct conn *c, size_t replicas, int64_t timeout_ms)
{
    int64_t target = stream_offset();
    size_t n = acked(target);
    if (n >= replicas) {
        return false;               /* answered at once by the caller */
    }
    if (peers != NULL) {
        /* Ask for ACKs now rather than at the replicas' next second. */
        static const char getack[] =
            "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";
        stream_append(getack, sizeof(getack) - 1);
    }
    c->wait_offset = target;
    c->wait_replicas = replicas;
    /* A timeout past the clock's range is no timeout: Redis 7.0 blocks
     * there too (0 = as long as it takes). */
    int64_t deadline = 0;
    if (timeout_ms > 0 &&
        __builtin_add_overflow(clock_mono_ms(), timeout_ms, &deadline)) {
        deadline = 0;
    }
    c->wait_deadline_ms = deadline;
    c->next_waiting = waiting;
    waiting = c;
    return true;
}

size_t
repl_acked_now(void)
{
    return acked(stream_offset());
}

/* After an ACK or on cron: answer the WAITs that are met or timed out. */
static void
check_waiting(int64_t now)
{
    for (struct conn **pp = &waiting; *pp != NULL;) {
        struct conn *c = *pp;
        size_t n = acked(c->wait_offset);
        if (n >= c->wait_replicas ||
            (c->wait_deadline_ms != 0 && now >= c->wait_deadline_ms)) {
            *pp = c->next_waiting;
            c->next_waiting = NULL;
            answer_wait(c, n);
        } else {
            pp = &c->next_waiting;
        }
    }
}

size_t
repl_good_replicas(void)
{
    int64_t now = clock_mono_ms();
    size_t n = 0;
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        n += p->state == PEER_ONLINE &&
             now - p->ack_ms <= srv.conf.min_replicas_max_lag * 1000;
    }
    return n;
}

size_t
repl_replica_count(void)
{
    size_t n = 0;
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        n += p->state != PEER_HANDSHAKE;
    }
    return n;
}

static const char *
link_state_word(void)
{
    switch (upstream.state) {
    case LINK_CONNECT: return "connect";
    case LINK_RESOLVING:
    case LINK_CONNECTING: return "connecting";
    case LINK_HANDSHAKE: return "handshake";
    case LINK_TRANSFER: return "sync";
    default: return "connected";
    }
}

void
repl_info(struct textbuf *t)
{
    int64_t now = clock_mono_ms();
    if (upstream.state == LINK_NONE) {
        textbuf_printf(t, "role:master\r\n");
    } else {
        bool up = upstream.state == LINK_CONNECTED;
        textbuf_printf(t, "role:slave\r\nmaster_host:%s\r\nmaster_port:%d\r\n"
                       "master_link_status:%s\r\n"
                       "master_last_io_seconds_ago:%lld\r\n"
                       "master_sync_in_progress:%d\r\n"
                       "slave_read_repl_offset:%" PRId64 "\r\n"
                       "slave_repl_offset:%" PRId64 "\r\n",
                       upstream.host, upstream.port, up ? "up" : "down",
                       up ? (long long)((now - upstream.last_io_ms) / 1000) : -1LL,
                       upstream.state == LINK_TRANSFER, stream_offset(),
                       stream_offset());
        if (!up) {
            textbuf_printf(t, "master_link_down_since_seconds:%lld\r\n",
                           (long long)(clock_wall_us() / 1000000 -
                                       upstream.down_since_s));
        }
        textbuf_printf(t, "slave_priority:%lld\r\nslave_read_only:%d\r\n"
                       "replica_announced:1\r\n",
                       (long long)srv.conf.replica_priority,
                       srv.conf.replica_read_only ? 1 : 0);
    }
    textbuf_printf(t, "connected_slaves:%zu\r\n", repl_replica_count());
    if (srv.conf.min_replicas_to_write > 0 && upstream.state == LINK_NONE) {
        textbuf_printf(t, "min_slaves_good_slaves:%zu\r\n",
                       repl_good_replicas());
    }
    size_t i = 0;
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_HANDSHAKE) {
            continue;
        }
        textbuf_printf(t, "slave%zu:ip=%s,port=%d,state=%s,offset=%" PRId64
                       ",lag=%lld\r\n", i++, p->ip, p->port,
                       p->state == PEER_ONLINE ? "online"
                       : p->state == PEER_SEND_SNAPSHOT ? "send_bulk"
                                                        : "wait_bgsave",
                       p->ack_offset, (long long)((now - p->ack_ms) / 1000));
    }
    stream_info(t);
}

void
repl_role(struct conn *c)
{
    char num[24];
    if (upstream.state == LINK_NONE) {
        reply_array(&c->out, 3);
        reply_bulkz(&c->out, "master");
        reply_int(&c->out, stream_offset());
        reply_array(&c->out, repl_replica_count());
        for (const struct peer *p = peers; p != NULL; p = p->next) {
            if (p->state == PEER_HANDSHAKE) {
                continue;
            }
            reply_array(&c->out, 3);
            reply_bulkz(&c->out, p->ip);
            snprintf(num, sizeof(num), "%d", p->port);
            reply_bulkz(&c->out, num);
            snprintf(num, sizeof(num), "%" PRId64, p->ack_offset);
            reply_bulkz(&c->out, num);
        }
        return;
    }
    reply_array(&c->out, 5);
    reply_bulkz(&c->out, "slave");
    reply_bulkz(&c->out, upstream.host);
    reply_int(&c->out, upstream.port);
    reply_bulkz(&c->out, link_state_word());
    reply_int(&c->out, stream_offset());
}

void
repl_shutdown(void)
{
    if (child_running(CHILD_REPL_SNAPSHOT)) {
        child_kill();               /* its done() removes the file */
    }
    child_unschedule(CHILD_REPL_SNAPSHOT);
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
repl_teardown(void)
{
    repl_shutdown();
    upstream.state = LINK_NONE;
    srv.repl_following = false;
    mem_free(upstream.in);
    upstream.in = NULL;
    upstream.in_cap = upstream.in_len = 0;
    while (peers != NULL) {
        repl_forget(peers->c);
    }
    stream_close();
}
