/*
 * cmd_restore.c - RESTORE key ttl serialized-value [REPLACE] [ABSTTL]
 * [IDLETIME seconds] [FREQ frequency], and RESTORE-ASKING, the same for a
 * cluster's imports (cellgate accepts it as RESTORE).
 *
 * Redis 7.0.15's restoreCommand() in its order: the options (IDLETIME and
 * FREQ exclude each other: the second is a syntax error), the key there
 * without REPLACE (-BUSYKEY), the TTL, the payload's footer
 * (rdb_payload_verified()), the object (server/rdb/load.c; anything it
 * refuses is "Bad data format"). The payload is always checked deeply, as
 * Redis checks it with sanitize-dump-payload yes: cellgate never keeps
 * bytes it has not read through. A TTL already past (ABSTTL, or a relative
 * one that is) creates nothing and deletes the key REPLACE named, as
 * Redis's primary does. IDLETIME and FREQ are checked and dropped:
 * cellgate keeps no access clock. The new key goes in through the write
 * path (keyspace.h), admitted under maxmemory, journaled, watched, and
 * published as "restore".
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lib/num.h"
#include "lib/rdb_read.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/keytype.h"
#include "server/notify.h"
#include "server/rdb/load.h"
#include "server/repl/replication.h"
#include "server/server.h"

#define ERR_BAD_FORMAT "ERR Bad data format"

struct restore_opts {
    bool replace, absttl;
    int64_t idle, freq;         /* -1: not given */
};

static bool
arg_int(struct conn *c, struct resp_request *req, size_t i, int64_t *v)
{
    if (!num_parse_i64(req->argv[i], req->argvlen[i], v)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    return true;
}

/* The options after the payload, in Redis's words. */
static bool
parse_opts(struct conn *c, struct resp_request *req, struct restore_opts *o)
{
    *o = (struct restore_opts){ false, false, -1, -1 };
    for (size_t j = 4; j < req->argc; j++) {
        bool more = j + 1 < req->argc;
        if (cmd_arg_is(req, j, "REPLACE")) {
            o->replace = true;
        } else if (cmd_arg_is(req, j, "ABSTTL")) {
            o->absttl = true;
        } else if (cmd_arg_is(req, j, "IDLETIME") && more && o->freq == -1) {
            if (!arg_int(c, req, ++j, &o->idle)) {
                return false;
            }
            if (o->idle < 0) {
                cmd_error(c, "ERR Invalid IDLETIME value, must be >= 0");
                return false;
            }
        } else if (cmd_arg_is(req, j, "FREQ") && more && o->idle == -1) {
            if (!arg_int(c, req, ++j, &o->freq)) {
                return false;
            }
            if (o->freq < 0 || o->freq > 255) {
                cmd_error(c, "ERR Invalid FREQ value, must be >= 0 and <= "
                             "255");
                return false;
            }
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

/* The payload's object into o: true, or false with the error sent. */
static bool
read_payload(struct conn *c, struct resp_request *req, struct rdb_obj *o)
{
    const unsigned char *p = (const unsigned char *)req->argv[3];
    size_t len = req->argvlen[3];
    uint8_t type;
    if (!rdb_payload_verified(p, len)) {
        cmd_error(c, ERR_DUMP_PAYLOAD);
        return false;
    }
    /* As Redis's rio over the whole buffer, the footer included. */
    struct rdb_cur cur = rdb_cur_make(p, len);
    enum rdb_obj_rc rc = rdb_read_u8(&cur, &type)
                             ? rdb_load_object(&cur, type, false, o)
                             : RDB_OBJ_BAD;
    if (rc != RDB_OBJ_OK) {
        rdb_obj_free(o);
        cmd_error(c, rc == RDB_OBJ_NOMEM ? ERR_NOMEM : ERR_BAD_FORMAT);
        return false;
    }
    return true;
}

/* A limiter of cellgate's own payload, as a new key. */
static struct store_rec *
add_limiter(struct conn *c, struct resp_request *req, struct rdb_obj *o,
            bool *malformed)
{
    size_t size = keytype_decoded_state_size(o->type, o->state, o->state_len,
                                             STORE_NEVER);
    struct store_rec *n = keyspace_add(&c->hint, req->argv[1],
                                       req->argvlen[1], o->type, size);
    if (n == NULL) {
        return NULL;
    }
    if (keytype_decode(n, o->state, o->state_len, o->encoding) !=
        KS_DECODED) {
        keyspace_delete(n);
        *malformed = true;
        return NULL;
    }
    keyspace_written(n);
    return n;
}

/* The object as key's new record (the key is absent); then its expiry.
 * NULL when refused (*malformed: a limiter state keytype_decode()
 * refused; else no room). */
static struct store_rec *
create(struct conn *c, struct resp_request *req, struct rdb_obj *o,
       int64_t expire_at, bool *malformed)
{
    const char *key = req->argv[1];
    size_t len = req->argvlen[1];
    struct store_rec *n;
    if (o->type == KEY_INT) {
        n = keyspace_set_int(&c->hint, key, len, NULL, o->ival);
    } else if (o->type == KEY_STR) {
        n = keyspace_set_string(&c->hint, key, len, NULL,
                                (const char *)o->str.p, o->str.len);
    } else if (keytype_is_coll(o->type)) {
        n = keyspace_set_coll(&c->hint, key, len, NULL, o->type,
                              rdb_obj_coll(o));
        o->handed = n != NULL;
    } else {
        n = add_limiter(c, req, o, malformed);
    }
    return n == NULL ? NULL : keyspace_set_expire(n, expire_at);
}

/* The TTL argument as an expiry (ms, STORE_NEVER for 0); false with the
 * error sent. */
static bool
parse_ttl(struct conn *c, struct resp_request *req, bool absttl, int64_t now,
          int64_t *at)
{
    int64_t ttl;
    if (!arg_int(c, req, 2, &ttl)) {
        return false;
    }
    if (ttl < 0) {
        cmd_error(c, "ERR Invalid TTL value, must be >= 0");
        return false;
    }
    int64_t now_ms = now / NS_PER_MS;
    if (ttl == 0) {
        *at = STORE_NEVER;
    } else if (absttl) {
        *at = ttl;
    } else {
        /* Redis adds mstime() in a long long, which wraps: a TTL past the
         * clock's range makes a time in the past, so no key. */
        *at = (int64_t)((uint64_t)ttl + (uint64_t)now_ms);
    }
    return true;
}

/* RESTORE and RESTORE-ASKING. */
void
restore_command(struct conn *c, struct resp_request *req)
{
    struct restore_opts opt;
    struct rdb_obj o = { 0 };
    int64_t at, now = clock_wall_now();
    if (!parse_opts(c, req, &opt)) {
        return;
    }
    struct store_rec *r = keyspace_lookup_write(&c->hint, req->argv[1],
                                                req->argvlen[1], now);
    if (r != NULL && !opt.replace) {
        cmd_error(c, "BUSYKEY Target key name already exists.");
        return;
    }
    if (!parse_ttl(c, req, opt.absttl, now, &at) ||
        !read_payload(c, req, &o)) {
        return;
    }
    if (at != STORE_NEVER && at <= now / NS_PER_MS && !repl_is_replica()) {
        rdb_obj_free(&o);
        if (r != NULL) {        /* REPLACE of a key that would die at once */
            keyspace_delete(r);
            notify_key(NOTIFY_GENERIC, "del", req->argv[1], req->argvlen[1],
                       srv.db);
        }
        reply_ok(&c->out);
        return;
    }
    /* As Redis: REPLACE deletes the key, then adds the new one (which
     * publishes "new"); one group downstream. */
    bool malformed = false, replaced = r != NULL;
    if (replaced) {
        keyspace_group_begin();
        keyspace_delete(r);
    }
    struct store_rec *n = create(c, req, &o, at, &malformed);
    if (replaced) {
        keyspace_group_end();
    }
    rdb_obj_free(&o);
    if (n == NULL) {
        cmd_error(c, malformed ? ERR_BAD_FORMAT : ERR_OOM);
        return;
    }
    notify_key(NOTIFY_GENERIC, "restore", req->argv[1], req->argvlen[1],
               srv.db);
    reply_ok(&c->out);
}
