/*
 * stream.c - the replication stream: the IDs, the offset, the backlog
 * (over backlog.c) and the sink that turns a primary's effect records
 * into CG.EFFECTS commands. See stream.h.
 *
 * It owns what a primary and a replica both keep of the stream, so that
 * neither side's state machine owns the other's history: primary.c feeds
 * its replicas from it (as its tap), replica.c appends its primary's
 * stream to it and moves its IDs. It knows neither of them.
 */
#include "server/repl/stream.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/textbuf.h"
#include "server/journal.h"
#include "server/log.h"
#include "server/server.h"
#include "server/repl/backlog.h"

#define NO_REPLID "0000000000000000000000000000000000000000"

static int64_t repl_offset;         /* bytes of the stream so far */
static char replid2[41] = NO_REPLID;
static int64_t second_offset = -1;

static struct repl_backlog backlog;
static const struct stream_tap *tap;

static void feed_effects(const unsigned char *records, size_t len,
                         bool complete);

bool
stream_open(const struct stream_tap *t)
{
    tap = t;
    if (backlog.p != NULL) {
        return true;
    }
    if (repl_backlog_init(&backlog, (size_t)srv.conf.repl_backlog_size)) {
        journal_attach(JOURNAL_SINK_REPLICAS, feed_effects);
    }
    return backlog.p != NULL;
}

bool
stream_active(void)
{
    return backlog.p != NULL;
}

/* Back to the state before the first stream_open() (at exit, and
 * between the unit tests that run one after another in one process). */
void
stream_close(void)
{
    repl_backlog_free(&backlog);
    journal_attach(JOURNAL_SINK_REPLICAS, NULL);
    tap = NULL;
    repl_offset = 0;
    memcpy(replid2, NO_REPLID, sizeof(replid2));
    second_offset = -1;
}

int64_t
stream_offset(void)
{
    return repl_offset;
}

/* Bytes of the stream: the backlog, then the tap. */
void
stream_append(const void *data, size_t n)
{
    repl_backlog_append(&backlog, data, n);
    repl_offset += (int64_t)n;
    if (tap != NULL) {
        tap->bytes(data, n);
    }
}

void
stream_command(const char *name, const void *arg, size_t alen)
{
    char head[96];
    int k = snprintf(head, sizeof(head), "*2\r\n$%zu\r\n%s\r\n$%zu\r\n",
                     strlen(name), name, alen);
    if (tap != NULL && tap->effects != NULL) {
        tap->effects(arg, alen, (size_t)k + alen + 2);
    }
    stream_append(head, (size_t)k);
    stream_append(arg, alen);
    stream_append("\r\n", 2);
}

bool
stream_copy_from(int64_t from, struct obuf *o)
{
    return repl_backlog_copy(&backlog, repl_offset, from, o);
}

bool
stream_knows(const char *id, size_t idlen, int64_t offset)
{
    bool ours = idlen == 40 && memcmp(id, srv.replid, 40) == 0;
    bool old = idlen == 40 && memcmp(id, replid2, 40) == 0 &&
               offset <= second_offset;
    return ours || old;
}

void
stream_switch_id(const char *id)
{
    memcpy(replid2, srv.replid, 41);
    second_offset = repl_offset + 1;
    memcpy(srv.replid, id, 40);
}

/* No second ID, and an empty backlog: nothing before here continues. */
static void
forget_history(void)
{
    memcpy(replid2, NO_REPLID, 41);
    second_offset = -1;
    backlog.idx = backlog.histlen = 0;
}

void
stream_restart_at(const char *id, int64_t offset)
{
    memcpy(srv.replid, id, 41);
    repl_offset = offset;
    forget_history();
}

/* The replicas' sink (server/journal.h): a primary's pass of records, as
 * one CG.EFFECTS. A pass that lost records (out of memory) must not reach
 * the replicas as if whole: the stream starts a new history (a new
 * replication ID, as Redis's changeReplicationId()) and the replicas are
 * dropped (the tap's lost()), so they come back for a full sync. A
 * replica's own records are not its stream: it passes its primary's on. */
static void
feed_effects(const unsigned char *records, size_t len, bool complete)
{
    if (backlog.p == NULL || srv.repl_following) {
        return;
    }
    if (!complete) {
        log_warning("Records of a write were lost (out of memory): the "
                    "replicas start over with a full sync");
        forget_history();
        server_random_id(srv.replid);
        if (tap != NULL) {
            tap->lost();
        }
        return;
    }
    if (len > 0) {
        stream_command("CG.EFFECTS", records, len);
    }
}

void
stream_info(struct textbuf *t)
{
    int64_t first = backlog.p ? repl_offset - (int64_t)backlog.histlen + 1 : 0;
    textbuf_printf(t, "master_failover_state:no-failover\r\n"
                   "master_replid:%s\r\nmaster_replid2:%s\r\n"
                   "master_repl_offset:%" PRId64 "\r\n"
                   "second_repl_offset:%" PRId64 "\r\n"
                   "repl_backlog_active:%d\r\n"
                   "repl_backlog_size:%lld\r\n"
                   "repl_backlog_first_byte_offset:%" PRId64 "\r\n"
                   "repl_backlog_histlen:%zu\r\n",
                   srv.replid, replid2, repl_offset, second_offset,
                   backlog.p != NULL,
                   (long long)srv.conf.repl_backlog_size,
                   first, backlog.histlen);
}
