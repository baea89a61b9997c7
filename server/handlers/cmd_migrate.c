/*
 * cmd_migrate.c - MIGRATE, as Redis 7.0's migrateCommand():
 *
 *   MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
 *           [AUTH2 user pw] [KEYS key...]
 *
 * Each key found here goes to the target as RESTORE (RESTORE-ASKING in
 * cluster mode) with its DUMP payload and the time it has left, all in
 * one write after AUTH and SELECT; each key the target answered +OK for
 * is then deleted here (unless COPY), so a key is never in neither place.
 * The exchange blocks the loop within the timeout, as Redis's does
 * (server/rdb/migrate.h). A connection that fails before any reply is
 * tried once more on a fresh one, unless it timed out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/notify.h"
#include "server/rdb/migrate.h"
#include "server/rdb/save.h"
#include "server/server.h"

#define CHUNK (64 * 1024)
#define LINE_MAX_LEN 1024

struct migrate_args {
    bool copy, replace;
    const char *user, *password;        /* NULL: not given */
    size_t userlen, passlen;
    size_t first_key, nkeys;            /* argv indexes of the keys */
    int64_t timeout_ms, db;
};

/* The options after the timeout, then the timeout and the database, in
 * Redis's order of checks. false when an error was answered. */
static bool
parse_args(struct conn *c, struct resp_request *req, struct migrate_args *a)
{
    *a = (struct migrate_args){ .first_key = 3, .nkeys = 1 };
    for (size_t j = 6; j < req->argc; j++) {
        size_t more = req->argc - 1 - j;
        if (cmd_arg_is(req, j, "copy")) {
            a->copy = true;
        } else if (cmd_arg_is(req, j, "replace")) {
            a->replace = true;
        } else if (cmd_arg_is(req, j, "auth") && more >= 1) {
            a->password = req->argv[++j];
            a->passlen = req->argvlen[j];
        } else if (cmd_arg_is(req, j, "auth2") && more >= 2) {
            a->user = req->argv[++j];
            a->userlen = req->argvlen[j];
            a->password = req->argv[++j];
            a->passlen = req->argvlen[j];
        } else if (cmd_arg_is(req, j, "keys")) {
            if (req->argvlen[3] != 0) {
                cmd_error(c, "ERR When using MIGRATE KEYS option, the key "
                             "argument must be set to the empty string");
                return false;
            }
            a->first_key = j + 1;
            a->nkeys = req->argc - j - 1;
            break;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    if (!num_parse_i64(req->argv[5], req->argvlen[5], &a->timeout_ms) ||
        !num_parse_i64(req->argv[4], req->argvlen[4], &a->db)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (a->timeout_ms <= 0) {
        a->timeout_ms = 1000;
    }
    return true;
}

static bool
put_bulk(struct membuf *b, const void *p, size_t len)
{
    char head[32];
    int n = snprintf(head, sizeof(head), "$%zu\r\n", len);
    return membuf_put(b, head, (size_t)n) && membuf_put(b, p, len) &&
           membuf_put(b, "\r\n", 2);
}

static bool
put_count(struct membuf *b, size_t n)
{
    char head[32];
    int w = snprintf(head, sizeof(head), "*%zu\r\n", n);
    return membuf_put(b, head, (size_t)w);
}

static bool
put_int(struct membuf *b, int64_t v)
{
    char s[24];
    int n = snprintf(s, sizeof(s), "%" PRId64, v);
    return put_bulk(b, s, (size_t)n);
}

/* AUTH and SELECT, as far as the target needs them. */
static bool
put_preamble(struct membuf *b, const struct migrate_args *a, bool select)
{
    if (a->password != NULL &&
        !(put_count(b, a->user != NULL ? 3 : 2) && put_bulk(b, "AUTH", 4) &&
          (a->user == NULL || put_bulk(b, a->user, a->userlen)) &&
          put_bulk(b, a->password, a->passlen))) {
        return false;
    }
    return !select || (put_count(b, 2) && put_bulk(b, "SELECT", 6) &&
                       put_int(b, a->db));
}

/* One key's RESTORE: the time it has left (at least 1 ms; 0 without an
 * expiry) and its payload. */
static bool
put_restore(struct membuf *b, const struct migrate_args *a, const char *key,
            size_t keylen, const struct store_rec *r, int64_t now)
{
    int64_t ttl = 0;
    if (r->expire_at != STORE_NEVER) {
        ttl = r->expire_at - now / NS_PER_MS;
        ttl = ttl < 1 ? 1 : ttl;
    }
    struct membuf payload = { 0 };
    const char *name = server_in_cluster()
                           ? "RESTORE-ASKING" : "RESTORE";
    bool ok = rdb_dump_payload(r, now, &payload) &&
              put_count(b, a->replace ? 5 : 4) &&
              put_bulk(b, name, strlen(name)) && put_bulk(b, key, keylen) &&
              put_int(b, ttl) && put_bulk(b, payload.p, payload.len) &&
              (!a->replace || put_bulk(b, "REPLACE", 7));
    mem_free(payload.p);
    return ok;
}

/* What one attempt came to. */
enum attempt {
    SENT_OK,            /* +OK answered */
    TARGET_ERROR,       /* the target's error answered */
    RETRY,              /* nothing happened: try a fresh connection */
    IO_ERROR            /* -IOERR answered */
};

/* The keys of argv still live here: their indexes in keys[], how many. */
static size_t
live_keys(struct resp_request *req,
          const struct migrate_args *a, size_t *keys, int64_t now)
{
    size_t n = 0;
    for (size_t j = 0; j < a->nkeys; j++) {
        size_t i = a->first_key + j;
        struct key_hint own = { false, 0 };
        if (keyspace_lookup(&own, req->argv[i], req->argvlen[i], now) !=
            NULL) {
            keys[n++] = i;
        }
    }
    return n;
}

/* One exchange with the target over t: the RESTOREs of the keys still
 * live, their replies, each restored key deleted here unless COPY. Sets
 * *timed_out and *writing for the caller's -IOERR. */
struct exchange {
    struct migrate_target *t;
    bool select, timed_out, writing, target_error;
    size_t sent, replied;
};

static bool
send_all(struct exchange *x, const struct membuf *b, int64_t timeout_ms)
{
    for (size_t at = 0; at < b->len; at += CHUNK) {
        size_t n = b->len - at < CHUNK ? b->len - at : CHUNK;
        if (!migrate_write(x->t, (const char *)b->p + at, n, timeout_ms)) {
            x->timed_out = errno == ETIMEDOUT;
            x->writing = true;
            return false;
        }
    }
    return true;
}

static bool
read_line(struct exchange *x, char *line, int64_t timeout_ms)
{
    if (migrate_read_line(x->t, line, LINE_MAX_LEN, timeout_ms) <= 0) {
        x->timed_out = errno == ETIMEDOUT;
        return false;
    }
    return true;
}

/* The first error of the exchange, answered as Redis words it. */
static void
target_error(struct conn *c, struct exchange *x, const char *line)
{
    if (!x->target_error) {
        migrate_set_selected_db(x->t, -1);
        x->target_error = true;
        cmd_errorf(c, "ERR Target instance replied with error: %s", line + 1);
    }
}

/* The replies: AUTH's, SELECT's, one per RESTORE. false on a socket
 * error (x->replied says how many RESTOREs were answered). */
static bool
read_replies(struct conn *c, struct resp_request *req,
             const struct migrate_args *a, struct exchange *x,
             const size_t *keys)
{
    char auth[LINE_MAX_LEN], sel[LINE_MAX_LEN], line[LINE_MAX_LEN];
    if ((a->password != NULL && !read_line(x, auth, a->timeout_ms)) ||
        (x->select && !read_line(x, sel, a->timeout_ms))) {
        return false;
    }
    int64_t now = clock_wall_now();
    for (; x->replied < x->sent; x->replied++) {
        if (!read_line(x, line, a->timeout_ms)) {
            return false;
        }
        if (a->password != NULL && auth[0] == '-') {
            target_error(c, x, auth);
        } else if (x->select && sel[0] == '-') {
            target_error(c, x, sel);
        } else if (line[0] == '-') {
            target_error(c, x, line);
        } else if (!a->copy) {
            size_t k = keys[x->replied];
            if (keyspace_delete_key(srv.db, req->argv[k], req->argvlen[k],
                                    now)) {
                notify_key(NOTIFY_GENERIC, "del", req->argv[k],
                           req->argvlen[k], srv.db);
            }
        }
    }
    return true;
}

/* The commands for the target: AUTH, SELECT, a RESTORE for each key still
 * live (keys[] keeps those, in order, x->sent of them). */
static bool
build(struct resp_request *req, const struct migrate_args *a,
      struct exchange *x, size_t *keys, size_t nkeys, struct membuf *b)
{
    if (!put_preamble(b, a, x->select)) {
        return false;
    }
    int64_t now = clock_wall_now();
    for (size_t j = 0; j < nkeys; j++) {
        struct key_hint own = { false, 0 };
        size_t k = keys[j];
        struct store_rec *r = keyspace_lookup_write(&own, req->argv[k],
                                                    req->argvlen[k], now);
        if (r == NULL) {
            continue;               /* expired since it was looked up */
        }
        if (!put_restore(b, a, req->argv[k], req->argvlen[k], r, now)) {
            return false;
        }
        keys[x->sent++] = k;
    }
    return true;
}

/* One try: keys[] and *nkeys come back as the keys it sent (those still
 * live), for a second try on a fresh connection. */
static enum attempt
attempt(struct conn *c, struct resp_request *req,
        const struct migrate_args *a, size_t *keys, size_t *nkeys,
        bool may_retry)
{
    struct exchange x = { 0 };
    x.t = migrate_connect(req->argv[1], req->argvlen[1], req->argv[2],
                          req->argvlen[2], a->timeout_ms);
    if (x.t == NULL) {
        cmd_error(c, "IOERR error or timeout connecting to the client");
        return TARGET_ERROR;
    }
    x.select = migrate_selected_db(x.t) != a->db;
    struct membuf b = { 0 };
    bool built = build(req, a, &x, keys, *nkeys, &b);
    *nkeys = x.sent;
    if (!built) {
        mem_free(b.p);
        cmd_error(c, ERR_NOMEM);
        return TARGET_ERROR;
    }
    bool sent = send_all(&x, &b, a->timeout_ms);
    mem_free(b.p);
    bool group = !a->copy && x.sent > 1;
    if (group) {
        keyspace_group_begin();     /* one DEL of them all downstream */
    }
    bool read = sent && read_replies(c, req, a, &x, keys);
    if (group) {
        keyspace_group_end();
    }
    if (read) {
        if (!x.target_error) {
            migrate_set_selected_db(x.t, a->db);
            reply_ok(&c->out);
        }
        return x.target_error ? TARGET_ERROR : SENT_OK;
    }
    migrate_close(x.t);
    if (x.target_error) {
        return TARGET_ERROR;
    }
    if (may_retry && !x.timed_out && x.replied == 0) {
        return RETRY;
    }
    cmd_errorf(c, "IOERR error or timeout %s to target instance",
               x.writing ? "writing" : "reading");
    return IO_ERROR;
}

void
migrate_command(struct conn *c, struct resp_request *req)
{
    struct migrate_args a;
    if (!parse_args(c, req, &a)) {
        return;
    }
    size_t *keys = mem_malloc(a.nkeys * sizeof(*keys));
    if (keys == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    size_t n = live_keys(req, &a, keys, clock_wall_now());
    if (n == 0) {
        reply_status(&c->out, "NOKEY");
    } else if (attempt(c, req, &a, keys, &n, true) == RETRY) {
        attempt(c, req, &a, keys, &n, false);
    }
    mem_free(keys);
}
