/*
 * cmd_admin.c - connection and server commands: PING, ECHO, QUIT, SELECT,
 * SWAPDB, HELLO, AUTH, READONLY/READWRITE, DBSIZE, FLUSHALL/FLUSHDB, TIME,
 * SHUTDOWN, SAVE/BGSAVE/BGREWRITEAOF/LASTSAVE. Replies and error texts
 * follow Redis 7. CONFIG, which has grown rules of its own (all-or-nothing
 * SET, Redis's spellings), is cmd_config.c's.
 */
#include <string.h>

#include "conf/conf.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "protocol/reply.h"
#include "server/child.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/client.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/multi.h"
#include "server/server.h"
#include "server/persist/persist.h"
#include "server/pubsub.h"
#include "server/snapshot.h"
#include "lib/textbuf.h"
#include "lib/time.h"


void
ping_command(struct conn *c, struct resp_request *req)
{
    if (req->argc > 2) {
        cmd_errorf(c, ERR_WRONG_ARITY, "ping");
    } else if (c->proto == 2 && c->subs != NULL &&
               pubsub_count(c, false) + pubsub_count(c, true) > 0) {
        /* As Redis: a subscriber's PING answers in the shape of a message */
        reply_array(&c->out, 2);
        reply_bulkz(&c->out, "pong");
        reply_bulk(&c->out, req->argc == 2 ? req->argv[1] : "",
                   req->argc == 2 ? req->argvlen[1] : 0);
    } else if (req->argc == 2) {
        reply_bulk(&c->out, req->argv[1], req->argvlen[1]);
    } else {
        obuf_append(&c->out, "+PONG\r\n", 7);
    }
}

void
echo_command(struct conn *c, struct resp_request *req)
{
    reply_bulk(&c->out, req->argv[1], req->argvlen[1]);
}

void
quit_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_ok(&c->out);
    c->requests |= CLIENT_CLOSE_AFTER_REPLY;
}

void
select_command(struct conn *c, struct resp_request *req)
{
    int db;
    if (!cmd_arg_int(c, req, 1, NULL, &db)) {
        return;
    }
    if (db != 0 && server_in_cluster()) {
        cmd_error(c, "ERR SELECT is not allowed in cluster mode");
    } else if (db < 0 || (size_t)db >= srv.ndbs) {
        cmd_error(c, ERR_DB_RANGE);
    } else if (!keyspace_select(db)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        c->db = db;
        reply_ok(&c->out);
    }
}

void
swapdb_command(struct conn *c, struct resp_request *req)
{
    int a, b;
    if (server_in_cluster()) {
        cmd_error(c, "ERR SWAPDB is not allowed in cluster mode");
        return;
    }
    if (!cmd_arg_int(c, req, 1, "ERR invalid first DB index", &a) ||
        !cmd_arg_int(c, req, 2, "ERR invalid second DB index", &b)) {
        return;
    }
    if (a < 0 || b < 0 || (size_t)a >= srv.ndbs || (size_t)b >= srv.ndbs) {
        cmd_error(c, ERR_DB_RANGE);
        return;
    }
    if (!keyspace_swap(a, b)) {     /* the watchers hear of it there */
        cmd_error(c, ERR_NOMEM);
        return;
    }
    reply_ok(&c->out);
}

/* READONLY / READWRITE: may a replica of a cluster answer this client's
 * reads of its primary's slots (cluster.h cluster_route)? ASKING: may
 * the next command use a slot this node is importing? */
void
readonly_command(struct conn *c, struct resp_request *req)
{
    /* As Redis: cluster commands, refused outside cluster mode. */
    if (!server_in_cluster()) {
        cmd_error(c, "ERR This instance has cluster support disabled");
        return;
    }
    if (cmd_arg_is(req, 0, "asking")) {
        c->asking = true;           /* for the next command (cmd.c) */
    } else {
        c->replica_reads = cmd_arg_is(req, 0, "readonly");
    }
    reply_ok(&c->out);
}

/* HELLO ... SETNAME: false after replying the error. */
static bool
set_client_name(struct conn *c, const char *name, size_t len)
{
    int rc = client_set_name(c, name, len);
    if (rc != 0) {
        cmd_error(c, rc < 0 ? ERR_NOMEM : ERR_CLIENT_NAME);
    }
    return rc == 0;
}

/* ---- AUTH and HELLO --------------------------------------------------- */

/* Compare without an early exit, so the time taken does not tell an
 * attacker how many leading bytes of a guess were right (it depends only
 * on the longer length). */
static bool
secure_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen > blen ? alen : blen;
    unsigned char diff = alen != blen;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < alen ? (unsigned char)a[i] : 0;
        unsigned char y = i < blen ? (unsigned char)b[i] : 0;
        diff |= x ^ y;
    }
    return diff == 0;
}

/* As Redis: only the "default" user exists. Without requirepass it has no
 * password and any password is accepted for it; with requirepass it must
 * match. On success the client is authenticated. user may be NULL. */
static bool
check_credentials(struct conn *c, const char *user, size_t ulen,
                  const char *pass, size_t plen)
{
    const struct conf_bytes *want = &srv.conf.requirepass;
    if ((user != NULL && !(ulen == 7 && memcmp(user, "default", 7) == 0)) ||
        (want->len != 0 && !secure_equal(pass, plen, want->p, want->len))) {
        cmd_error(c, "WRONGPASS invalid username-password pair or user is "
                      "disabled.");
        return false;
    }
    c->authenticated = true;
    c->requests |= CLIENT_AUTHENTICATED;
    return true;
}

void
auth_command(struct conn *c, struct resp_request *req)
{
    if (req->argc > 3) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (req->argc == 2 && srv.conf.requirepass.len == 0) {
        cmd_error(c, "ERR AUTH <password> called without any password "
                      "configured for the default user. Are you sure your "
                      "configuration is correct?");
        return;
    }
    bool ok = req->argc == 2
                  ? check_credentials(c, NULL, 0, req->argv[1],
                                      req->argvlen[1])
                  : check_credentials(c, req->argv[1], req->argvlen[1],
                                      req->argv[2], req->argvlen[2]);
    if (ok) {
        reply_ok(&c->out);
    }
}

static void
reply_hello(struct conn *c)
{
    int proto = c->proto;
    reply_map(&c->out, 7, proto);
    reply_bulkz(&c->out, "server");
    reply_bulkz(&c->out, "redis");
    reply_bulkz(&c->out, "version");
    reply_bulkz(&c->out, REDIS_COMPAT_VERSION);
    reply_bulkz(&c->out, "proto");
    reply_int(&c->out, proto);
    reply_bulkz(&c->out, "id");
    reply_int(&c->out, (int64_t)c->id);
    reply_bulkz(&c->out, "mode");
    reply_bulkz(&c->out, "standalone");
    reply_bulkz(&c->out, "role");
    reply_bulkz(&c->out, "master");
    reply_bulkz(&c->out, "modules");
    reply_array(&c->out, 0);
}

void
hello_command(struct conn *c, struct resp_request *req)
{
    int64_t ver = c->proto;
    const char *setname = NULL;
    size_t setname_len = 0;
    size_t i = 1;

    if (req->argc >= 2) {
        if (!num_parse_i64(req->argv[1], req->argvlen[1], &ver)) {
            cmd_error(c, "ERR Protocol version is not an integer or out of "
                          "range");
            return;
        }
        i = 2;
        if (ver < 2 || ver > 3) {
            cmd_error(c, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (; i < req->argc; i++) {
        size_t more = req->argc - i - 1;
        if (cmd_arg_is(req, i, "AUTH") && more >= 2) {
            if (!check_credentials(c, req->argv[i + 1], req->argvlen[i + 1],
                                   req->argv[i + 2], req->argvlen[i + 2])) {
                return;
            }
            i += 2;
        } else if (cmd_arg_is(req, i, "SETNAME") && more >= 1) {
            setname = req->argv[i + 1];
            setname_len = req->argvlen[i + 1];
            i++;
        } else {
            cmd_errorf(c, "ERR Syntax error in HELLO option '%.128s'",
                        req->argv[i]);
            return;
        }
    }
    if (!c->authenticated) {
        cmd_error(c, "NOAUTH HELLO must be called with the client already "
                      "authenticated, otherwise the HELLO AUTH <user> <pass> "
                      "option can be used to authenticate the client "
                      "and select the RESP protocol version at the same "
                      "time");
        return;
    }
    if (setname != NULL && !set_client_name(c, setname, setname_len)) {
        return;
    }
    c->proto = (int)ver;
    reply_hello(c);
}

/* ---- keyspace and server ---------------------------------------------- */

void
dbsize_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_int(&c->out, (int64_t)store_size(srv.store));
}

/* FLUSHALL empties every database, FLUSHDB the selected one. */
static void
flush(struct conn *c, struct resp_request *req, bool all)
{
    if (req->argc > 2 ||
        (req->argc == 2 && !cmd_arg_is(req, 1, "ASYNC") &&
         !cmd_arg_is(req, 1, "SYNC"))) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    keyspace_flush(all ? -1 : srv.db);
    reply_ok(&c->out);
}

HANDLER_VARIANT(flushall_command, flush, true)
HANDLER_VARIANT(flushdb_command, flush, false)

void
time_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    int64_t us = clock_wall_us();
    reply_array(&c->out, 2);
    reply_bulk_i64(&c->out, us / US_PER_SEC);
    reply_bulk_i64(&c->out, us % 1000000);
}

/* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], as Redis 7. The snapshot
 * is written here, while the client can still be told it failed (then the
 * server stays up, unless FORCE); the journal is flushed on the way out.
 * NOW changes nothing: no replicas are waited for. */
void
shutdown_command(struct conn *c, struct resp_request *req)
{
    bool nosave = false, save = false, force = false, abort_req = false;
    for (size_t i = 1; i < req->argc; i++) {
        if (cmd_arg_is(req, i, "NOSAVE")) {
            nosave = true;
        } else if (cmd_arg_is(req, i, "SAVE")) {
            save = true;
        } else if (cmd_arg_is(req, i, "FORCE")) {
            force = true;
        } else if (cmd_arg_is(req, i, "ABORT")) {
            abort_req = true;
        } else if (!cmd_arg_is(req, i, "NOW")) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
    }
    if ((save && nosave) || (abort_req && req->argc > 2)) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    if (abort_req) {
        cmd_error(c, "ERR No shutdown in progress.");
        return;
    }
    log_warning("User requested shutdown...");
    /* As Redis: the child goes first, whatever the save (it could
     * overwrite the file written here). */
    child_kill_at_shutdown();
    if (save || (snapshot_configured() && !nosave)) {
        char err[512];
        log_notice("Saving the final snapshot before exiting.");
        if (snapshot_save(err, sizeof(err)) < 0) {
            if (!force) {
                log_warning("Error trying to save the DB, can't exit.");
                cmd_error(c, "ERR Errors trying to SHUTDOWN. Check logs.");
                return;
            }
            log_warning("Error trying to save the DB. Exit anyway.");
        }
    }
    /* Like Redis, no reply: the client sees the connection close. Nothing
     * after it in this client's pipeline runs. */
    c->requests |= CLIENT_CLOSE_AFTER_REPLY;
    server_request_shutdown(false);
}

void
save_command(struct conn *c, struct resp_request *req)
{
    char err[512];
    (void)req;
    if (snapshot_in_progress()) {
        cmd_error(c, "ERR Background save already in progress");
    } else if (snapshot_save(err, sizeof(err)) < 0) {
        cmd_errorf(c, "ERR %s", err);
    } else {
        reply_ok(&c->out);
    }
}

/* Inside EXEC a background child is scheduled, never started, as Redis
 * does (it starts from the cron, after the transaction). */
static unsigned
child_how(struct conn *c, bool may_wait)
{
    return (may_wait ? CHILD_MAY_WAIT : 0) |
           (multi_open(c, c->multi) ? CHILD_IN_EXEC : 0);
}

/* BGSAVE [SCHEDULE], as Redis 7: refused while a snapshot is written;
 * while a journal rewrite runs, refused or (SCHEDULE) scheduled. */
void
bgsave_command(struct conn *c, struct resp_request *req)
{
    char err[512];
    if (req->argc > 2 || (req->argc == 2 && !cmd_arg_is(req, 1, "SCHEDULE"))) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    switch (snapshot_bgsave(child_how(c, req->argc == 2), err, sizeof(err))) {
    case 0:
        reply_status(&c->out, "Background saving started");
        break;
    case 1:
        reply_status(&c->out, "Background saving scheduled");
        break;
    default:
        cmd_errorf(c, "ERR %s", err);
    }
}

/* As Redis 7: a base of the keyspace written by a child, whether the
 * journal is on or not; scheduled while another child runs. */
void
bgrewriteaof_command(struct conn *c, struct resp_request *req)
{
    char err[512];
    (void)req;
    switch (persist_rewrite(child_how(c, true), err, sizeof(err))) {
    case 0:
        reply_status(&c->out, "Background append only file rewriting "
                              "started");
        break;
    case 1:
        reply_status(&c->out, "Background append only file rewriting "
                              "scheduled");
        break;
    default:
        cmd_errorf(c, "ERR %s", err);
    }
}

void
lastsave_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_int(&c->out, snapshot_last_save());
}
