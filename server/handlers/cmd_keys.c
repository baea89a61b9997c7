/*
 * cmd_keys.c - the generic key commands, on keys of every type: EXISTS,
 * DEL, UNLINK, TOUCH, TYPE, RENAME, RENAMENX, COPY, MOVE, KEYS, SCAN.
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/client.h"
#include "server/errors.h"
#include "lib/glob.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/notify.h"
#include "server/server.h"

/* argv[1]'s live record, or NULL, looked up as a read (counted in INFO's
 * keyspace hits and misses) or a write (not), as Redis does. */
static struct store_rec *
lookup_key(struct conn *c, const struct resp_request *req, int64_t now)
{
    return keyspace_lookup(&c->hint, req->argv[1], req->argvlen[1], now);
}

static struct store_rec *
lookup_key_write(struct conn *c, const struct resp_request *req, int64_t now)
{
    return keyspace_lookup_write(&c->hint, req->argv[1], req->argvlen[1], now);
}

void
exists_command(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    int64_t n = 0;
    for (size_t i = 1; i < req->argc; i++) {
        struct key_hint own = { false, 0 };
        if (keyspace_lookup(i == 1 ? &c->hint : &own, req->argv[i],
                            req->argvlen[i], now) != NULL) {
            n++;
        }
    }
    reply_int(&c->out, n);
}

void
del_command(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    int64_t n = 0;
    /* Several keys, one record: a restart or a replica has all of them
     * gone or none (one key is one record already). */
    bool group = req->argc > 2;
    if (group) {
        keyspace_group_begin();
    }
    for (size_t i = 1; i < req->argc; i++) {
        if (keyspace_delete_key(srv.db, req->argv[i], req->argvlen[i], now)) {
            n++;
            notify_key(NOTIFY_GENERIC, "del", req->argv[i], req->argvlen[i],
                       srv.db);
        }
    }
    if (group) {
        keyspace_group_end();
    }
    reply_int(&c->out, n);
}

void
unlink_command(struct conn *c, struct resp_request *req)
{
    del_command(c, req);    /* a key's memory goes at once either way */
}

void
touch_command(struct conn *c, struct resp_request *req)
{
    exists_command(c, req); /* no LRU clock to touch: the count is the reply */
}

/* Redis's renameGenericCommand(). */
static void
rename_generic(struct conn *c, struct resp_request *req, bool nx)
{
    int64_t now = clock_wall_now();
    struct store_rec *r = lookup_key_write(c, req, now);
    if (r == NULL) {
        cmd_error(c, ERR_NO_SUCH_KEY);
        return;
    }
    if (req->argvlen[1] == req->argvlen[2] &&
        memcmp(req->argv[1], req->argv[2], req->argvlen[1]) == 0) {
        if (nx) {
            reply_int(&c->out, 0);
        } else {
            reply_ok(&c->out);
        }
        return;
    }
    if (nx && store_lookup(srv.store, req->argv[2], req->argvlen[2], now)) {
        reply_int(&c->out, 0);
        return;
    }
    bool ok = keyspace_rename(r, req->argv[2], req->argvlen[2], now);
    if (ok) {
        notify_key(NOTIFY_GENERIC, "rename_from", req->argv[1],
                   req->argvlen[1], srv.db);
        notify_key(NOTIFY_GENERIC, "rename_to", req->argv[2],
                   req->argvlen[2], srv.db);
    }
    coll_reply_nx_write(c, ok, nx);
}

HANDLER_VARIANT(rename_command, rename_generic, false)
HANDLER_VARIANT(renamenx_command, rename_generic, true)

/* COPY's and MOVE's database argument i: an int, then in range. */
static bool
arg_db(struct conn *c, const struct resp_request *req, size_t i, int *db)
{
    if (!cmd_arg_int(c, req, i, NULL, db)) {
        return false;
    }
    if (*db < 0 || (size_t)*db >= srv.ndbs) {
        cmd_error(c, ERR_DB_RANGE);
        return false;
    }
    return true;
}

/* COPY's and MOVE's checks past the arguments: -ERR when source and
 * destination are the same object, then argv[1]'s record into *r (looked
 * up for writing when `write`) and database db; NULL after an error. */
static struct store *
copy_target(struct conn *c, const struct resp_request *req, int db,
            bool same, bool write, int64_t now, struct store_rec **r)
{
    if (same) {
        cmd_error(c, ERR_SAME_OBJECT);
        return NULL;
    }
    *r = write ? lookup_key_write(c, req, now) : lookup_key(c, req, now);
    struct store *dst = keyspace_db(db);
    if (dst == NULL) {
        cmd_error(c, ERR_NOMEM);
    }
    return dst;
}

/* COPY source destination [DB destination-db] [REPLACE]. */
void
copy_command(struct conn *c, struct resp_request *req)
{
    int db = srv.db;
    bool replace = false;
    for (size_t j = 3; j < req->argc; j++) {
        if (cmd_arg_is(req, j, "REPLACE")) {
            replace = true;
        } else if (cmd_arg_is(req, j, "DB") && j + 1 < req->argc) {
            if (!arg_db(c, req, ++j, &db)) {
                return;
            }
        } else {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
    }
    if (server_in_cluster() && (srv.db != 0 || db != 0)) {
        cmd_error(c, "ERR Copying to another database is not allowed in "
                     "cluster mode");
        return;
    }
    bool same = db == srv.db && req->argvlen[1] == req->argvlen[2] &&
                memcmp(req->argv[1], req->argv[2], req->argvlen[1]) == 0;
    int64_t now = clock_wall_now();
    struct store_rec *r;
    struct store *dst = copy_target(c, req, db, same, false, now, &r);
    if (dst == NULL) {
        return;
    }
    if (r == NULL || (!replace && store_lookup(dst, req->argv[2],
                                               req->argvlen[2], now))) {
        reply_int(&c->out, 0);
        return;
    }
    if (!keyspace_copy(r, db, req->argv[2], req->argvlen[2], now)) {
        cmd_error(c, ERR_OOM);
        return;
    }
    notify_key(NOTIFY_GENERIC, "copy_to", req->argv[2], req->argvlen[2], db);
    reply_int(&c->out, 1);
}

/* MOVE key db: :1 when moved, :0 when the key is not here or already
 * there; Redis's errors in Redis's order. */
void
move_command(struct conn *c, struct resp_request *req)
{
    int db;
    if (server_in_cluster()) {
        cmd_error(c, "ERR MOVE is not allowed in cluster mode");
        return;
    }
    if (!arg_db(c, req, 2, &db)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r;
    struct store *dst = copy_target(c, req, db, db == srv.db, true, now, &r);
    if (dst == NULL) {
        return;
    }
    if (r == NULL ||
        store_lookup(dst, req->argv[1], req->argvlen[1], now) != NULL) {
        reply_int(&c->out, 0);
        return;
    }
    if (!keyspace_move(r, db, now)) {
        cmd_error(c, ERR_OOM);
        return;
    }
    notify_key(NOTIFY_GENERIC, "move_from", req->argv[1], req->argvlen[1],
               srv.db);
    notify_key(NOTIFY_GENERIC, "move_to", req->argv[1], req->argvlen[1], db);
    reply_int(&c->out, 1);
}

void
type_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r = lookup_key(c, req, clock_wall_now());
    reply_status(&c->out, r == NULL ? "none" : keytype_name(r->type));
}

/* ---- SCAN and KEYS ----------------------------------------------------- */

struct key_list {
    const char *pattern;        /* NULL = every key */
    size_t plen;
    const char *type;           /* NULL = every type */
    int64_t now;
    struct store_rec **recs;    /* matching live records of this batch */
    size_t len;
    size_t cap;
    bool oom;
};

static void
collect_key(struct store_rec *r, void *arg)
{
    struct key_list *l = arg;
    if (store_rec_dead(r, l->now) ||
        (l->type != NULL && strcasecmp(l->type, keytype_name(r->type)) != 0) ||
        (l->pattern != NULL &&
         !glob_match(l->pattern, l->plen, store_rec_key(r), store_rec_keylen(r),
                     false))) {
        return;
    }
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct store_rec **recs = mem_realloc(l->recs, cap * sizeof(*recs));
        if (recs == NULL) {
            l->oom = true;
            return;
        }
        l->recs = recs;
        l->cap = cap;
    }
    l->recs[l->len++] = r;
}

/* The records stay valid while the reply is built: nothing in between
 * looks up, adds or expires keys. */
static void
reply_key_list(struct conn *c, const struct key_list *l)
{
    reply_array(&c->out, l->len);
    for (size_t i = 0; i < l->len; i++) {
        reply_bulk(&c->out, store_rec_key(l->recs[i]),
                   store_rec_keylen(l->recs[i]));
    }
}

void
keys_command(struct conn *c, struct resp_request *req)
{
    struct key_list l = { .pattern = req->argv[1], .plen = req->argvlen[1],
                          .now = clock_wall_now() };
    uint64_t cursor = 0;
    if (l.plen == 1 && l.pattern[0] == '*') {
        l.pattern = NULL;
    }
    do {
        cursor = store_scan(srv.store, cursor, collect_key, &l);
    } while (cursor != 0 && !l.oom);
    if (l.oom) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_key_list(c, &l);
    }
    mem_free(l.recs);
}

/* ---- RANDOMKEY --------------------------------------------------------- */

/* Draws that may meet dead keys (expired, not yet collected) before
 * RANDOMKEY looks for a live one by walking the table instead. */
#define RANDOMKEY_DRAWS 100

struct first_live {
    int64_t now;
    struct store_rec *found;
};

static void
note_first_live(struct store_rec *r, void *arg)
{
    struct first_live *f = arg;
    if (f->found == NULL && !store_rec_dead(r, f->now)) {
        f->found = r;
    }
}

/* A live key of the selected database, drawn at random (store_random()),
 * or nil. Redis deletes the expired keys it draws; here a read writes
 * nothing, so dead ones are drawn past, and when every draw met one, a
 * walk finds a live key if there is any. */
void
randomkey_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    struct first_live f = { clock_wall_now(), NULL };
    for (int draw = 0; draw < RANDOMKEY_DRAWS && f.found == NULL; draw++) {
        struct store_rec *r = store_random(srv.store);
        if (r == NULL) {
            break;
        }
        note_first_live(r, &f);
    }
    if (f.found == NULL && store_size(srv.store) > 0) {
        uint64_t cursor = 0;
        do {
            cursor = store_scan(srv.store, cursor, note_first_live, &f);
        } while (cursor != 0 && f.found == NULL);
    }
    if (f.found == NULL) {
        reply_null(&c->out, c->proto);
        return;
    }
    reply_bulk(&c->out, store_rec_key(f.found), store_rec_keylen(f.found));
}

/* SCAN cursor [MATCH pattern] [COUNT n] [TYPE type], as in Redis: the
 * cursor is the store's reverse-binary bucket cursor, so a scan survives
 * table resizes; COUNT is the amount of work (buckets) per call. */
void
scan_command(struct conn *c, struct resp_request *req)
{
    struct key_list l = { .now = clock_wall_now() };
    uint64_t cursor;
    struct scan_opts o;

    if (!coll_scan_cursor(c, req->argv[1], req->argvlen[1], &cursor) ||
        !coll_scan_opts(c, req, 2, true, &o)) {
        return;
    }
    l.pattern = o.match;
    l.plen = o.match_len;
    l.type = o.type;
    int64_t count = o.count;
    /* As Redis: visit buckets until count keys are collected, at most
     * count * 10 buckets per call. */
    int64_t visits = 0;
    int64_t max_visits = count > INT64_MAX / 10 ? INT64_MAX : count * 10;
    do {
        cursor = store_scan(srv.store, cursor, collect_key, &l);
        visits++;
    } while (cursor != 0 && !l.oom && visits < max_visits &&
             (int64_t)l.len < count);
    if (l.oom) {
        cmd_error(c, ERR_NOMEM);
        mem_free(l.recs);
        return;
    }
    reply_array(&c->out, 2);
    reply_bulk_u64(&c->out, cursor);
    reply_key_list(c, &l);
    mem_free(l.recs);
}
