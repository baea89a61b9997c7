/*
 * primary_client.c - see primary_client.h.
 *
 * The client is one static struct conn, never on a socket: authenticated,
 * RESP2, flagged `from_primary` (no guard of the dispatcher refuses its
 * writes: READONLY, MISCONF, as Redis obeys its master). It keeps its selected
 * database and its open MULTI between commands, as the stream goes on
 * across reads; a dropped link discards the MULTI (the primary sends it
 * again), a full sync also selects database 0.
 *
 * A command applied is one that replied no error: Redis's replica would
 * have run it without one (the primary did), so an error here means this
 * node cannot follow (an unknown command, a type it has not, memory), and
 * the link stops instead of going on with other data than the primary's.
 * Errors are counted as any (INFO errorstats), so the count of error
 * replies before and after tells, EXEC's nested ones included.
 *
 * Its commands run at time 0 (clock_batch_open_at()): they find every key
 * as the primary did, one past its expiry included, as Redis's replica
 * lets its master client see them. The primary sends absolute times only
 * (SET ... PXAT, PEXPIREAT, RESTORE ... ABSTTL), so no expiry it sets
 * depends on this node's clock; store_keep_dead keeps this node from
 * freeing a key itself until the primary's DEL (keyspace.c).
 */
#include "server/handlers/primary_client.h"

#include <stdio.h>
#include <string.h>

#include "protocol/obuf.h"
#include "server/blocked.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/keyspace.h"
#include "server/multi.h"
#include "server/persist/persist.h"
#include "server/server.h"

static struct conn link_client;
static bool ready;

static void
ensure_client(void)
{
    if (ready) {
        return;
    }
    client_init_internal(&link_client);
    link_client.from_primary = true;
    ready = true;
}

/* A client a write of the stream served (a blocking pop): its reply
 * waits for the journal, as any served one's. */
static void
served_blocked(struct conn *c)
{
    c->journal_gen = persist_generation();
}

/* The first error line of the dropped reply into err (its '-' left out):
 * the reason the log and INFO give. */
static void
first_error(char *err, size_t errlen)
{
    char buf[512];
    struct iovec iov[4];
    size_t bytes, n = obuf_iov(&link_client.out, 0, iov, 4, &bytes), len = 0;
    for (size_t i = 0; i < n && len < sizeof(buf) - 1; i++) {
        size_t k = iov[i].iov_len < sizeof(buf) - 1 - len
                       ? iov[i].iov_len : sizeof(buf) - 1 - len;
        memcpy(buf + len, iov[i].iov_base, k);
        len += k;
    }
    buf[len] = '\0';
    const char *e = buf + 1;
    if (buf[0] != '-') {            /* nested in EXEC's array */
        e = strstr(buf, "\r\n-");
        e = e != NULL ? e + 3 : "error";
    }
    const char *end = strstr(e, "\r\n");
    snprintf(err, errlen, "%.*s",
             end != NULL ? (int)(end - e) : (int)strlen(e), e);
}

static bool
run_command(struct resp_request *req, char *err, size_t errlen)
{
    ensure_client();
    uint64_t errors = srv.stats.total_error_replies;
    int db = srv.db;
    (void)keyspace_select(link_client.db);
    link_client.hint.valid = false;
    clock_batch_open_at(0);
    cmd_execute(&link_client, req);
    clock_batch_close();
    if (blocked_nready != 0) {
        blocked_serve(served_blocked);
    }
    link_client.requests = 0;       /* the connection layer's own passes
                                     * flush what it fed others */
    bool ok = srv.stats.total_error_replies == errors;
    if (!ok) {
        first_error(err, errlen);
    }
    obuf_consume(&link_client.out, obuf_pending(&link_client.out));
    (void)keyspace_select(db);
    return ok;
}

static void
reset_client(bool full)
{
    ensure_client();
    if (link_client.multi != NULL) {
        multi_discard(&link_client);
    }
    if (full) {
        link_client.db = 0;
    }
}

const struct repl_command_ops primary_client_ops = {
    .run = run_command,
    .reset = reset_client,
};

void
primary_client_teardown(void)
{
    if (!ready) {
        return;
    }
    if (link_client.multi != NULL) {
        multi_discard(&link_client);
    }
    obuf_deinit(&link_client.out);
    ready = false;
}
