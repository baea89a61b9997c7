/*
 * primary.c - the primary's replicas (peers): the handshake's REPLCONFs,
 * PSYNC answered with +CONTINUE and the backlog or +FULLRESYNC and a
 * snapshot, the snapshot written by a background child (child.h) and
 * sent in slices cron by cron, the live stream after it, ACKs and the
 * clients in WAIT for them, keepalives. See primary.h.
 *
 * A peer is a client (conn.c owns its socket); this file owns only what
 * makes it a replica. Its states: HANDSHAKE (REPLCONFs so far), then
 * WAIT_SNAPSHOT and SEND_SNAPSHOT through a full sync, keeping the
 * stream meanwhile in its `pending`, then ONLINE. The stream reaches the
 * peers through the tap this file gives stream.c; it knows nothing of
 * this node's own link to a primary (replica.c), beyond srv's flag.
 */
#include "server/repl/primary.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/textbuf.h"
#include "lib/time.h"
#include "protocol/obuf.h"
#include "protocol/reply.h"
#include "server/child.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/log.h"
#include "server/server.h"
#include "server/rdb/effects.h"
#include "server/rdb/save.h"
#include "server/snapshot.h"
#include "server/repl/stream.h"

/* ---- the state --------------------------------------------------------- */

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
    bool redis;                     /* SYNC: Redis's RDB, no +FULLRESYNC */
    bool rdb_only;                  /* REPLCONF rdb-only 1: no stream */
    bool functions_only;            /* rdb-filter-only functions: no keys */
    int db;                         /* redis: the database it selected */
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
/* The running child writes Redis's RDB file (for SYNC), not a snapshot;
 * with the function libraries only (rdb-filter-only functions). */
static bool sync_redis;
static bool sync_functions_only;
static int64_t last_ping_ms;
static int64_t last_newline_ms;

/* ---- the stream to them ------------------------------------------------ */

/* Bytes of a CG.EFFECTS still to come that SYNC's clients get in Redis's
 * words instead (feed_redis_peers()). */
static size_t redis_skip;

static void
feed_peer(struct peer *p, const void *data, size_t n)
{
    if (n == 0 || p->rdb_only) {
        return;
    }
    if (p->state == PEER_ONLINE) {
        obuf_append(&p->c->out, data, n);
        client_note_fed(p->c);
    } else if (p->state != PEER_HANDSHAKE) {
        obuf_append(&p->pending, data, n);
    }
}

/* The stream's tap: every replica past its snapshot gets the bytes, the
 * others keep them until it is sent; SYNC's clients, all but the
 * CG.EFFECTS they had in their own words. */
static void
feed_peers(const void *data, size_t n)
{
    size_t skip = redis_skip < n ? redis_skip : n;
    redis_skip -= skip;
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->redis) {
            feed_peer(p, (const char *)data + skip, n - skip);
        } else {
            feed_peer(p, data, n);
        }
    }
}

/* A pass of effect records, for SYNC's clients: the Redis commands that
 * bring a Redis replica to the same keys (server/rdb/effects.h), from
 * the database each has selected. One that cannot have them (out of
 * memory) is dropped, as a lost pass drops every replica. */
static void
feed_redis_peers(const void *records, size_t len, size_t bytes)
{
    struct membuf cmds = { 0 };
    int64_t now = clock_wall_now();
    redis_skip = bytes;
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (!p->redis || p->rdb_only || p->state == PEER_HANDSHAKE ||
            (p->state == PEER_WAIT_SNAPSHOT && !p->syncing)) {
            continue;               /* nothing, or a file not yet begun */
        }
        cmds.len = 0;
        if (!rdb_effects_as_commands(records, len, now, &p->db, &cmds)) {
            log_warning("Replica %s:%d: the stream in Redis's commands "
                        "could not be made; dropping it", p->ip, p->port);
            p->c->killed = true;
            client_note_fed(p->c);
            continue;
        }
        feed_peer(p, cmds.p, cmds.len);
    }
    mem_free(cmds.p);
}

void
primary_drop_replicas(void)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        p->c->killed = true;
        client_note_fed(p->c);
    }
}

static const struct stream_tap peers_tap = {
    .bytes = feed_peers,
    .lost = primary_drop_replicas,
    .effects = feed_redis_peers,
};

bool
primary_open_stream(void)
{
    return stream_open(&peers_tap);
}

/* All of from's bytes appended to to, in order (from is left empty). */
static void
move_all(struct obuf *from, struct obuf *to)
{
    struct iovec iov[16];
    size_t bytes;
    while (obuf_pending(from) > 0) {
        size_t n = obuf_iov(from, 0, iov, 16, &bytes);
        for (size_t i = 0; i < n; i++) {
            obuf_append(to, iov[i].iov_base, iov[i].iov_len);
        }
        obuf_consume(from, bytes);
    }
}

/* ---- replicas ---------------------------------------------------------- */

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
primary_is_replica_client(const struct conn *c)
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
primary_forget(struct conn *c)
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
primary_replconf(struct conn *c, const char *key, size_t klen,
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
    } else if (klen == 8 && strncasecmp(key, "rdb-only", 8) == 0) {
        p->rdb_only = vlen == 1 && value[0] == '1';
    } else if (klen == 15 && strncasecmp(key, "rdb-filter-only", 15) == 0) {
        p->functions_only = vlen == 9 && strncasecmp(value, "functions", 9) == 0;
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
    if (!p->redis) {                /* SYNC has no such line */
        obuf_append(&p->c->out, line, (size_t)k);
        client_note_fed(p->c);
    }
    p->syncing = true;
}

/* ---- the snapshot child ------------------------------------------------ */

/* In the child: cellgate's snapshot, or Redis's RDB file for SYNC (the
 * limiter keys Redis cannot hold left out, counted in the log). */
static int
sync_work(void)
{
    char err[256];
    uint64_t left_out;
    if (!sync_redis) {
        return snapshot_write(sync_path, err, sizeof(err));
    }
    struct rdb_repl_info repl = { 0, srv.replid, stream_offset(),
                                  sync_functions_only };
    if (rdb_save_file(sync_path, &repl, &left_out, err, sizeof(err)) < 0) {
        log_warning("Writing the RDB file for SYNC failed: %s", err);
        return 1;
    }
    return 0;
}

/* Replicas that wait for a snapshot not yet started. */
static struct peer *
first_waiting(void)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_WAIT_SNAPSHOT && !p->syncing) {
            return p;
        }
    }
    return NULL;
}

/* No snapshot can be written for them: as Redis, they are dropped (and
 * connect again). */
static void
drop_waiting_peers(void)
{
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_WAIT_SNAPSHOT && !p->syncing) {
            p->c->killed = true;
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
sync_start(const struct child_ops *self, char *err, size_t errlen)
{
    struct peer *first = first_waiting();
    if (first == NULL) {
        return 0;
    }
    /* One child writes one format: the first waiting replica's; the
     * others wait for the next (sync_done()). */
    sync_redis = first->redis;
    sync_functions_only = first->functions_only;
    snprintf(sync_path, sizeof(sync_path), "%s/temp-repl-%d.%s",
             srv.conf.dir, (int)getpid(), sync_redis ? "rdb" : "snap");
    pid_t pid = child_fork(self, err, errlen);
    if (pid < 0) {
        log_warning("Cannot fork for a replica's snapshot: %s", err);
        drop_waiting_peers();
        return -1;
    }
    sync_offset = stream_offset();
    memcpy(sync_replid, srv.replid, sizeof(sync_replid));
    for (struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_WAIT_SNAPSHOT && !p->syncing &&
            p->redis == sync_redis &&
            p->functions_only == sync_functions_only) {
            obuf_deinit(&p->pending);       /* the snapshot holds it all */
            p->db = -1;
            obuf_init(&p->pending);
            send_fullresync(p, sync_replid, sync_offset);
        }
    }
    log_notice("Starting a snapshot for replication (pid %d) at offset "
               "%" PRId64, (int)pid, stream_offset());
    return 0;
}

/* Below, with the sending: it may start the next snapshot, through this
 * table (start_snapshot()). */
static void sync_done(const struct child_exit *how);
static void send_slices(bool redis_only);
static void start_top_up(void);

/* A replica's full sync is a background child of its own kind (child.h):
 * it waits behind a BGSAVE or a journal rewrite, as Redis's does. */
static const struct child_ops sync_ops = {
    .kind = CHILD_REPL_SNAPSHOT,
    .work = sync_work,              /* in the child; the rest in the parent */
    .start = sync_start, .done = sync_done,
};

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
    /* A SYNC client shares none (the backlog holds CG.EFFECTS, and it
     * wants Redis's commands since its file), nor does a replica share
     * SYNC's file. */
    if (!child_running(CHILD_REPL_SNAPSHOT) || p->redis || sync_redis ||
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
                   "waiting for the next snapshot (%s)", p->ip, p->port,
                   p->redis || sync_redis
                       ? "SYNC's RDB file and a replica's snapshot differ"
                       : "the backlog lacks the stream since the running "
                         "one started");
    }
    return true;
}

/* ---- PSYNC ------------------------------------------------------------- */

/* +CONTINUE: the replica has the stream up to offset - 1 and gets the
 * rest from the backlog; false (nothing sent) when that lacks it. */
static bool
continue_stream(struct peer *p, int64_t offset)
{
    char line[128];
    struct obuf tail;
    obuf_init(&tail);
    if (!stream_copy_from(offset, &tail)) {
        obuf_deinit(&tail);
        return false;
    }
    snprintf(line, sizeof(line), "+CONTINUE %s\r\n", srv.replid);
    obuf_append(&p->c->out, line, strlen(line));
    move_all(&tail, &p->c->out);
    obuf_deinit(&tail);
    p->state = PEER_ONLINE;
    log_notice("Partial resynchronization request from %s:%d "
               "accepted: sending %" PRId64 " bytes of backlog",
               p->ip, p->port, stream_offset() + 1 - offset);
    return true;
}

bool
primary_psync(struct conn *c, const char *id, size_t idlen, int64_t offset)
{
    struct peer *p = peer_get(c);
    if (p == NULL || !primary_open_stream()) {
        return false;
    }
    if (stream_knows(id, idlen, offset) && continue_stream(p, offset)) {
        return true;
    }
    return full_resync(p);
}

/* SYNC (Redis's replicas before 2.8; `redis-cli --rdb` and `--replica`):
 * always a full sync, in Redis's RDB format rather than cellgate's
 * snapshot, without +FULLRESYNC: the keep-alive newlines while the child
 * writes, the file as $<length> and its bytes, then the stream (none
 * after REPLCONF rdb-only 1). A replica's second SYNC is ignored, as
 * Redis ignores it. */
bool
primary_sync(struct conn *c)
{
    struct peer *p = peer_get(c);
    if (p == NULL || !primary_open_stream()) {
        return false;
    }
    if (p->state != PEER_HANDSHAKE) {
        return true;
    }
    p->redis = true;
    p->db = -1;                     /* its first command selects one */
    return full_resync(p);
}

/* ---- the snapshot, sent ------------------------------------------------ */

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
            p->c->killed = true;
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
    send_slices(false);             /* the first slices now, not a tick on */
    start_top_up();
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

/* One slice of the snapshot to each replica receiving one (redis_only:
 * to each SYNC client), while its output holds less than a slice: bounded
 * work per call. */
static void
send_slices(bool redis_only)
{
    static char chunk[64 * 1024];
    for (struct peer *p = peers; p != NULL; p = p->next) {
        size_t sent = 0;
        if (redis_only && !p->redis) {
            continue;
        }
        while (p->state == PEER_SEND_SNAPSHOT && p->left > 0 &&
               sent < SNAPSHOT_SLICE &&
               obuf_pending(&p->c->out) < SNAPSHOT_SLICE) {
            size_t want = p->left < (int64_t)sizeof(chunk) ? (size_t)p->left
                                                           : sizeof(chunk);
            ssize_t n = read(p->fd, chunk, want);
            if (n <= 0) {
                log_warning("Reading the snapshot for replica %s:%d failed",
                            p->ip, p->port);
                p->c->killed = true;
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
            move_all(&p->pending, &p->c->out);  /* the stream since */
            p->state = PEER_ONLINE;
            log_notice("Synchronization with replica %s:%d succeeded",
                       p->ip, p->port);
        }
        if (sent > 0 || p->c->killed) {
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

/* A SYNC client's file goes out at its socket's pace: while one is being
 * sent, a timer tops its output up every millisecond, as Redis writes a
 * replica's file whenever its socket takes more (a cellgate replica's
 * goes cron by cron). */
static uv_timer_t *top_up;

static bool
redis_peer_sending(void)
{
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        if (p->redis && p->state == PEER_SEND_SNAPSHOT) {
            return true;
        }
    }
    return false;
}

static void
top_up_closed(uv_handle_t *h)
{
    mem_free(h);
}

static void
on_top_up(uv_timer_t *t)
{
    send_slices(true);
    if (!redis_peer_sending()) {
        uv_timer_stop(t);
        uv_close((uv_handle_t *)t, top_up_closed);
        top_up = NULL;
    }
}

/* No memory for the timer: the cron sends the file, as a replica's. */
static void
start_top_up(void)
{
    if (top_up != NULL || !redis_peer_sending() ||
        (top_up = mem_malloc(sizeof(*top_up))) == NULL) {
        return;
    }
    uv_timer_init(srv.loop, top_up);
    uv_timer_start(top_up, on_top_up, 1, 1);
}

void
primary_cron(int64_t now)
{
    send_slices(false);
    if (waiting != NULL) {
        check_waiting(now);
    }
    if (now - last_newline_ms >= MS_PER_SEC) {
        last_newline_ms = now;
        keep_waiting_replicas_alive();
    }
    /* A replica passes its primary's PINGs on; its own would shift its
     * replicas' offsets from the primary's. */
    if (peers != NULL && !srv.repl_following &&
        now - last_ping_ms >=
            srv.conf.repl_ping_replica_period * MS_PER_SEC) {
        static const char ping[] = "*1\r\n$4\r\nPING\r\n";
        last_ping_ms = now;
        stream_append(ping, sizeof(ping) - 1);
    }
}

/* ---- WAIT and ACKs ----------------------------------------------------- */

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
primary_wait(struct conn *c, size_t replicas, int64_t timeout_ms)
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

bool
primary_unwait(struct conn *c, bool answer)
{
    for (struct conn **w = &waiting; *w != NULL; w = &(*w)->next_waiting) {
        if (*w == c) {
            *w = c->next_waiting;
            c->next_waiting = NULL;
            if (answer) {
                answer_wait(c, acked(c->wait_offset));
            } else {
                c->requests |= CLIENT_UNBLOCKED;
                client_note_fed(c);
            }
            return true;
        }
    }
    return false;
}

size_t
primary_acked_now(void)
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
primary_good_replicas(void)
{
    int64_t now = clock_mono_ms();
    size_t n = 0;
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        n += p->state == PEER_ONLINE &&
             now - p->ack_ms <= srv.conf.min_replicas_max_lag * MS_PER_SEC;
    }
    return n;
}

/* As Redis's mem_clients_slaves, which maxmemory does not count: each
 * replica's output buffer, and the stream it keeps while its snapshot is
 * made and sent (a client that has only sent REPLCONF is no replica yet).
 * An I/O thread's part is the byte count it publishes. */
size_t
primary_output_memory(void)
{
    size_t n = 0;
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        if (p->state == PEER_HANDSHAKE) {
            continue;
        }
        n += obuf_memory(&p->c->out) + obuf_memory(&p->pending);
        if (p->c->home != 0) {
            n += atomic_load_explicit(&p->c->wpending, memory_order_relaxed);
        }
    }
    return n;
}

size_t
primary_replica_count(void)
{
    size_t n = 0;
    for (const struct peer *p = peers; p != NULL; p = p->next) {
        n += p->state != PEER_HANDSHAKE;
    }
    return n;
}

/* ---- INFO, ROLE, the end ----------------------------------------------- */

void
primary_info(struct textbuf *t, int64_t now)
{
    textbuf_printf(t, "connected_slaves:%zu\r\n", primary_replica_count());
    if (srv.conf.min_replicas_to_write > 0 && !srv.repl_following) {
        textbuf_printf(t, "min_slaves_good_slaves:%zu\r\n",
                       primary_good_replicas());
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
                       p->ack_offset,
                       (long long)((now - p->ack_ms) / MS_PER_SEC));
    }
}

void
primary_role(struct conn *c)
{
    char num[24];
    reply_array(&c->out, 3);
    reply_bulkz(&c->out, "master");
    reply_int(&c->out, stream_offset());
    reply_array(&c->out, primary_replica_count());
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
}

void
primary_shutdown(void)
{
    if (child_running(CHILD_REPL_SNAPSHOT)) {
        child_kill();               /* its done() removes the file */
    }
    child_unschedule(CHILD_REPL_SNAPSHOT);
}

void
primary_teardown(void)
{
    while (peers != NULL) {
        primary_forget(peers->c);
    }
}
