/*
 * cmd_string.c - Redis's string commands, byte for byte as Redis 7.0
 * answers them: GET, SET (NX|XX, GET, EX|PX|EXAT|PXAT|KEEPTTL), SETNX,
 * SETEX, PSETEX, GETSET, GETDEL, GETEX, MGET, MSET, MSETNX, INCR, INCRBY,
 * DECR, DECRBY, INCRBYFLOAT, APPEND, STRLEN, GETRANGE, SETRANGE.
 *
 * A string is what keytype.h says (KEY_INT or KEY_STR; CL.THROTTLE's keys
 * among them, as redis-cell's are); every write goes through the
 * keyspace's string functions, which replace a key of any type as Redis's
 * setKey() does. Checks come in Redis's order, since which error a bad
 * request gets is part of the reply.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "algorithms/increx.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/coll_cmd.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/notify.h"
#include "server/server.h"

#define ERR_TOO_LONG "ERR string exceeds maximum allowed size " \
                     "(proto-max-bulk-len)"

/* ---- reading ----------------------------------------------------------- */

/* argv[1]'s live record into *r (NULL when absent); false (WRONGTYPE
 * sent) when it holds no string. */
static bool
lookup_string(struct conn *c, const struct resp_request *req,
              enum lookup_kind kind, int64_t now, struct store_rec **r)
{
    *r = kind == LOOKUP_READ
             ? keyspace_lookup(&c->hint, req->argv[1], req->argvlen[1], now)
             : keyspace_lookup_write(&c->hint, req->argv[1], req->argvlen[1],
                                     now);
    if (*r != NULL && !keytype_is_string((*r)->type)) {
        cmd_error(c, ERR_WRONGTYPE);
        return false;
    }
    return true;
}

/* GET's, GETDEL's and GETEX's read of argv[1]: true with its string in
 * *r, false when answered already (WRONGTYPE, or a null when absent). */
static bool
lookup_string_found(struct conn *c, const struct resp_request *req,
                    int64_t now, struct store_rec **r)
{
    if (!lookup_string(c, req, LOOKUP_READ, now, r)) {
        return false;
    }
    if (*r == NULL) {
        reply_null(&c->out, c->proto);
        return false;
    }
    return true;
}

static void
reply_string(struct conn *c, const struct store_rec *r)
{
    char buf[KS_INT_TEXT];
    size_t len;
    const char *s = keytype_string(r, buf, &len);
    reply_bulk(&c->out, s, len);
}

void
get_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (lookup_string_found(c, req, clock_wall_now(), &r)) {
        reply_string(c, r);
    }
}

void
strlen_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    char buf[KS_INT_TEXT];
    size_t len = 0;
    if (!lookup_string(c, req, LOOKUP_READ, clock_wall_now(), &r)) {
        return;
    }
    if (r != NULL) {
        (void)keytype_string(r, buf, &len);
    }
    reply_int(&c->out, (int64_t)len);
}

void
mget_command(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    reply_array(&c->out, req->argc - 1);
    for (size_t i = 1; i < req->argc; i++) {
        struct key_hint own = { false, 0 };
        struct store_rec *r = keyspace_lookup(i == 1 ? &c->hint : &own,
                                              req->argv[i], req->argvlen[i],
                                              now);
        if (r == NULL || !keytype_is_string(r->type)) {
            reply_null(&c->out, c->proto);
        } else {
            reply_string(c, r);
        }
    }
}

/* GETRANGE key start end, Redis's index arithmetic included. */
void
getrange_command(struct conn *c, struct resp_request *req)
{
    int64_t start, end;
    struct store_rec *r;
    char buf[KS_INT_TEXT];
    size_t len;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &start) ||
        !num_parse_i64(req->argv[3], req->argvlen[3], &end)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    if (!lookup_string(c, req, LOOKUP_READ, clock_wall_now(), &r)) {
        return;
    }
    if (r == NULL) {
        reply_bulk(&c->out, "", 0);
        return;
    }
    const char *s = keytype_string(r, buf, &len);
    int64_t n = (int64_t)len;
    if (start < 0 && end < 0 && start > end) {
        reply_bulk(&c->out, "", 0);
        return;
    }
    if (start < 0) {
        start = n + start;
    }
    if (end < 0) {
        end = n + end;
    }
    if (start < 0) {
        start = 0;
    }
    if (end < 0) {
        end = 0;
    }
    if (end >= n) {
        end = n - 1;
    }
    if (start > end || n == 0) {
        reply_bulk(&c->out, "", 0);
    } else {
        reply_bulk(&c->out, s + start, (size_t)(end - start + 1));
    }
}

/* ---- expiry arguments --------------------------------------------------- */

/* Options of SET (and SETEX, PSETEX) and GETEX, as Redis's
 * parseExtendedStringArgumentsOrReply() takes them. */
enum {
    OPT_NX = 1 << 0,
    OPT_XX = 1 << 1,
    OPT_EX = 1 << 2,
    OPT_PX = 1 << 3,
    OPT_KEEPTTL = 1 << 4,
    OPT_GET = 1 << 5,
    OPT_EXAT = 1 << 6,
    OPT_PXAT = 1 << 7,
    OPT_PERSIST = 1 << 8,
};
#define OPT_EXPIRY (OPT_EX | OPT_PX | OPT_EXAT | OPT_PXAT)

struct str_opts {
    unsigned flags;
    size_t expire_arg;          /* argv index of the time, 0: none */
    const char *name;           /* the command, for the expire error */
};

/* An option word w is allowed when none of `not` is set yet (and, for the
 * timed ones, a value follows). */
static bool
opt_ok(const struct str_opts *o, unsigned not)
{
    return (o->flags & not) == 0;
}

/* The flag of a timed option word at argv[j] (EX, PX, EXAT, PXAT), 0 for
 * any other word. Each excludes KEEPTTL, PERSIST and the other three. */
static unsigned
timed_opt(const struct resp_request *req, size_t j)
{
    static const struct {
        const char *word;
        unsigned flag;
    } timed[] = {
        { "EX", OPT_EX }, { "PX", OPT_PX },
        { "EXAT", OPT_EXAT }, { "PXAT", OPT_PXAT },
    };
    for (size_t i = 0; i < sizeof(timed) / sizeof(timed[0]); i++) {
        if (cmd_arg_is(req, j, timed[i].word)) {
            return timed[i].flag;
        }
    }
    return 0;
}

/* Parse options from argv[first] on; is_set: SET's (NX, XX, GET,
 * KEEPTTL), else GETEX's (PERSIST). false after the syntax error. */
static bool
parse_str_opts(struct conn *c, const struct resp_request *req, size_t first,
               bool is_set, struct str_opts *o)
{
    for (size_t j = first; j < req->argc; j++) {
        bool next = j + 1 < req->argc;
        unsigned t;
        if (is_set && cmd_arg_is(req, j, "NX") && opt_ok(o, OPT_XX)) {
            o->flags |= OPT_NX;
        } else if (is_set && cmd_arg_is(req, j, "XX") && opt_ok(o, OPT_NX)) {
            o->flags |= OPT_XX;
        } else if (is_set && cmd_arg_is(req, j, "GET")) {
            o->flags |= OPT_GET;
        } else if (is_set && cmd_arg_is(req, j, "KEEPTTL") &&
                   opt_ok(o, OPT_PERSIST | OPT_EXPIRY)) {
            o->flags |= OPT_KEEPTTL;
        } else if (!is_set && cmd_arg_is(req, j, "PERSIST") &&
                   opt_ok(o, OPT_EXPIRY | OPT_KEEPTTL)) {
            o->flags |= OPT_PERSIST;
        } else if ((t = timed_opt(req, j)) != 0 && next &&
                   opt_ok(o, OPT_KEEPTTL | OPT_PERSIST | (OPT_EXPIRY & ~t))) {
            o->flags |= t;
            o->expire_arg = ++j;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

static void
error_expire_time(struct conn *c, const char *name)
{
    cmd_errorf(c, ERR_EXPIRE_TIME, name);
}

/* The expiry argument as the Unix ms the key lives through (Redis's
 * getExpireMillisecondsOrReply()); false after the error. */
static bool
expire_when(struct conn *c, const struct resp_request *req,
            const struct str_opts *o, int64_t now, int64_t *when)
{
    size_t i = o->expire_arg;
    int64_t v;
    if (!num_parse_i64(req->argv[i], req->argvlen[i], &v)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    bool seconds = o->flags & (OPT_EX | OPT_EXAT);
    if (v <= 0 || (seconds && v > INT64_MAX / MS_PER_SEC)) {
        error_expire_time(c, o->name);
        return false;
    }
    if (seconds) {
        v *= MS_PER_SEC;
    }
    if ((o->flags & (OPT_EX | OPT_PX)) &&
        __builtin_add_overflow(v, now / NS_PER_MS, &v)) {
        error_expire_time(c, o->name);
        return false;
    }
    *when = v;
    return true;
}

/* ---- SET and its kin ------------------------------------------------------ */

/* A copy of a string key's value, for SET ... GET and GETSET, whose reply
 * is the value the write replaces (the write may free it, and may still
 * be refused). */
struct old_value {
    bool present;
    char *p;                    /* mem_malloc'd, or buf */
    size_t len;
    char buf[64];
};

static bool
keep_old_value(struct conn *c, const struct store_rec *r, struct old_value *v)
{
    char ibuf[KS_INT_TEXT];
    v->present = r != NULL;
    v->p = v->buf;
    v->len = 0;
    if (r == NULL) {
        return true;
    }
    const char *s = keytype_string(r, ibuf, &v->len);
    if (v->len > sizeof(v->buf)) {
        v->p = mem_malloc(v->len);
        if (v->p == NULL) {
            cmd_error(c, ERR_NOMEM);
            return false;
        }
    }
    memcpy(v->p, s, v->len);
    return true;
}

static void
reply_old_value(struct conn *c, struct old_value *v)
{
    if (v->present) {
        reply_bulk(&c->out, v->p, v->len);
    } else {
        reply_null(&c->out, c->proto);
    }
    if (v->p != v->buf) {
        mem_free(v->p);
    }
}

/* What a SET that did not happen (NX, XX) and one that did reply. */
enum set_reply { SET_REPLY_OK, SET_REPLY_NUMBER };

/* Redis's setGenericCommand(): the value argv[vi] for argv[1] under the
 * options. */
static void
set_generic(struct conn *c, struct resp_request *req, size_t vi,
            struct str_opts *o, enum set_reply kind)
{
    int64_t now = clock_wall_now();
    int64_t when = 0;
    struct store_rec *r;
    struct old_value old = { 0 };
    if (o->expire_arg != 0 && !expire_when(c, req, o, now, &when)) {
        return;
    }
    /* SET reads the old value only for GET (a read, as Redis counts it). */
    r = (o->flags & OPT_GET)
            ? keyspace_lookup(&c->hint, req->argv[1], req->argvlen[1], now)
            : keyspace_lookup_write(&c->hint, req->argv[1], req->argvlen[1],
                                    now);
    if (o->flags & OPT_GET) {
        /* GET reads the old value first: another type refuses the SET. */
        if (r != NULL && !keytype_is_string(r->type)) {
            cmd_error(c, ERR_WRONGTYPE);
            return;
        }
        if (!keep_old_value(c, r, &old)) {
            return;
        }
    }
    bool found = r != NULL;
    if (((o->flags & OPT_NX) && found) || ((o->flags & OPT_XX) && !found)) {
        if (o->flags & OPT_GET) {
            reply_old_value(c, &old);
        } else if (kind == SET_REPLY_NUMBER) {
            reply_int(&c->out, 0);
        } else {
            reply_null(&c->out, c->proto);
        }
        return;
    }
    r = keyspace_set_string(&c->hint, req->argv[1], req->argvlen[1], r,
                            req->argv[vi], req->argvlen[vi]);
    if (r == NULL) {
        if (old.p != old.buf) {
            mem_free(old.p);
        }
        cmd_error(c, ERR_OOM);
        return;
    }
    /* The value just written leans on no expiry: r stays (keytype.h). */
    if (o->expire_arg != 0) {
        /* One already past is dead at once, as in Redis. */
        r = keyspace_set_expire(r, when);
    } else if (!(o->flags & OPT_KEEPTTL) && r->expire_at != STORE_NEVER) {
        r = keyspace_set_expire(r, STORE_NEVER);
    }
    if (r == NULL) {
        if (old.p != old.buf) {
            mem_free(old.p);
        }
        cmd_error(c, ERR_OOM);
        return;
    }
    notify_key(NOTIFY_STRING, "set", req->argv[1], req->argvlen[1], srv.db);
    if (o->expire_arg != 0) {
        notify_key(NOTIFY_GENERIC, "expire", req->argv[1], req->argvlen[1],
                   srv.db);
    }
    if (o->flags & OPT_GET) {
        reply_old_value(c, &old);
    } else if (kind == SET_REPLY_NUMBER) {
        reply_int(&c->out, 1);
    } else {
        reply_ok(&c->out);
    }
}

void
set_command(struct conn *c, struct resp_request *req)
{
    struct str_opts o = { .name = "set" };
    if (parse_str_opts(c, req, 3, true, &o)) {
        set_generic(c, req, 2, &o, SET_REPLY_OK);
    }
}

/* SETNX, SETEX, PSETEX and GETSET: SET with its options fixed, the value
 * at argv[vi] and the time (if any) at argv[expire_arg]. */
static void
set_fixed(struct conn *c, struct resp_request *req, unsigned flags,
          size_t expire_arg, const char *name, size_t vi,
          enum set_reply kind)
{
    struct str_opts o = { .flags = flags, .expire_arg = expire_arg,
                          .name = name };
    set_generic(c, req, vi, &o, kind);
}

HANDLER_VARIANT(setnx_command, set_fixed, OPT_NX, 0, "setnx", 2,
                SET_REPLY_NUMBER)
HANDLER_VARIANT(setex_command, set_fixed, OPT_EX, 2, "setex", 3, SET_REPLY_OK)
HANDLER_VARIANT(psetex_command, set_fixed, OPT_PX, 2, "psetex", 3,
                SET_REPLY_OK)
HANDLER_VARIANT(getset_command, set_fixed, OPT_GET, 0, "getset", 2,
                SET_REPLY_OK)

void
getdel_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    if (!lookup_string_found(c, req, clock_wall_now(), &r)) {
        return;
    }
    reply_string(c, r);
    keyspace_delete(r);
    notify_key(NOTIFY_GENERIC, "del", req->argv[1], req->argvlen[1], srv.db);
}

/* GETEX key [EX s | PX ms | EXAT unix_s | PXAT unix_ms | PERSIST]. */
void
getex_command(struct conn *c, struct resp_request *req)
{
    struct str_opts o = { .name = "getex" };
    struct store_rec *r;
    int64_t now = clock_wall_now();
    int64_t when = 0;
    if (!parse_str_opts(c, req, 2, false, &o) ||
        !lookup_string_found(c, req, now, &r)) {
        return;
    }
    if (o.expire_arg != 0 && !expire_when(c, req, &o, now, &when)) {
        return;
    }
    if ((o.flags & (OPT_EXAT | OPT_PXAT)) && when <= now / NS_PER_MS) {
        reply_string(c, r);
        keyspace_delete(r);     /* a time already past: gone, as Redis */
        notify_key(NOTIFY_GENERIC, "del", req->argv[1], req->argvlen[1],
                   srv.db);
        return;
    }
    /* First, as the expiry may move the value to another record (a TAT
     * that leaned on the old one, keytype.h), or find no memory for it. */
    const char *event = NULL;
    if (o.expire_arg != 0) {
        r = keyspace_set_expire(r, when);
        event = "expire";
    } else if ((o.flags & OPT_PERSIST) && r->expire_at != STORE_NEVER) {
        r = keyspace_set_expire(r, STORE_NEVER);
        event = "persist";
    }
    if (r == NULL) {
        cmd_error(c, ERR_OOM);
        return;
    }
    reply_string(c, r);
    if (event != NULL) {
        notify_key(NOTIFY_GENERIC, event, req->argv[1], req->argvlen[1],
                   srv.db);
    }
}

/* ---- MSET and MSETNX ------------------------------------------------------ */

static void
mset_generic(struct conn *c, struct resp_request *req, bool nx)
{
    int64_t now = clock_wall_now();
    if (req->argc % 2 == 0) {
        cmd_errorf(c, ERR_WRONG_ARITY, nx ? "msetnx" : "mset");
        return;
    }
    if (nx) {
        for (size_t i = 1; i < req->argc; i += 2) {
            struct key_hint own = { false, 0 };
            if (keyspace_lookup_write(i == 1 ? &c->hint : &own, req->argv[i],
                                req->argvlen[i], now) != NULL) {
                reply_int(&c->out, 0);
                return;
            }
        }
    }
    /* Room for them all first, so an -OOM leaves none written. */
    size_t need = 0;
    for (size_t i = 1; i < req->argc; i += 2) {
        need += keyspace_string_bytes(req->argvlen[i], req->argvlen[i + 1]);
    }
    if (!keyspace_admit(need, NULL)) {
        cmd_error(c, ERR_OOM);
        return;
    }
    /* All the keys or none reach a restart or a replica. */
    keyspace_group_begin();
    bool ok = true;
    for (size_t i = 1; ok && i < req->argc; i += 2) {
        struct key_hint own = { false, 0 };
        struct key_hint *h = i == 1 ? &c->hint : &own;
        struct store_rec *r = keyspace_lookup_write(h, req->argv[i],
                                                    req->argvlen[i], now);
        r = keyspace_set_string(h, req->argv[i], req->argvlen[i], r,
                                req->argv[i + 1], req->argvlen[i + 1]);
        if (r != NULL && r->expire_at != STORE_NEVER) {
            r = keyspace_set_expire(r, STORE_NEVER);
        }
        ok = r != NULL;
        if (ok) {
            notify_key(NOTIFY_STRING, "set", req->argv[i], req->argvlen[i],
                       srv.db);
        }
    }
    keyspace_group_end();
    coll_reply_nx_write(c, ok, nx);
}

HANDLER_VARIANT(mset_command, mset_generic, false)
HANDLER_VARIANT(msetnx_command, mset_generic, true)

/* ---- counters ------------------------------------------------------------- */

/* A string key's value as INCRBY reads it (0 when absent); false after
 * the error. */
static bool
int_value(struct conn *c, const struct store_rec *r, int64_t *v)
{
    char buf[KS_INT_TEXT];
    size_t len;
    *v = 0;
    if (r == NULL) {
        return true;
    }
    if (r->type == KEY_INT) {
        *v = keytype_int(r);
        return true;
    }
    const char *s = keytype_string(r, buf, &len);
    if (!num_parse_i64(s, len, v)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    return true;
}

/* Redis's incrDecrCommand(): argv[1] moved by incr. */
static void
incr_generic(struct conn *c, struct resp_request *req, int64_t incr)
{
    struct store_rec *r;
    int64_t v;
    if (!lookup_string(c, req, LOOKUP_WRITE, clock_wall_now(), &r) ||
        !int_value(c, r, &v)) {
        return;
    }
    if (__builtin_add_overflow(v, incr, &v)) {
        cmd_error(c, ERR_INCR_OVERFLOW);
        return;
    }
    if (r != NULL && r->type == KEY_INT && keytype_int_set(r, v, true)) {
        /* The hot path of every counter: the value in place (INCR keeps
         * the expiry, so a TAT may lean on it). */
        keyspace_written(r);
    } else if (keyspace_set_int(&c->hint, req->argv[1], req->argvlen[1], r,
                                v) == NULL) {
        cmd_error(c, ERR_OOM);
        return;
    }
    notify_key(NOTIFY_STRING, "incrby", req->argv[1], req->argvlen[1], srv.db);
    reply_int(&c->out, v);
}

HANDLER_VARIANT(incr_command, incr_generic, 1)
HANDLER_VARIANT(decr_command, incr_generic, -1)

/* INCRBY and DECRBY: the amount argv[2], negated for DECRBY (whose
 * INT64_MIN has no negation). */
static void
incrby_generic(struct conn *c, struct resp_request *req, bool negate)
{
    int64_t incr;
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &incr)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    if (negate) {
        if (incr == INT64_MIN) {
            cmd_error(c, "ERR decrement would overflow");
            return;
        }
        incr = -incr;
    }
    incr_generic(c, req, incr);
}

HANDLER_VARIANT(incrby_command, incrby_generic, false)
HANDLER_VARIANT(decrby_command, incrby_generic, true)

/* INCRBYFLOAT: long double arithmetic, the result kept as the text Redis
 * keeps (ld2string's human form), which is also the reply. */
void
incrbyfloat_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    char buf[KS_INT_TEXT];
    size_t len;
    long double value = 0, incr;
    if (!lookup_string(c, req, LOOKUP_WRITE, clock_wall_now(), &r)) {
        return;
    }
    if (r != NULL) {
        const char *s = keytype_string(r, buf, &len);
        if (!num_parse_long_double(s, len, &value)) {
            cmd_error(c, ERR_NOT_FLOAT);
            return;
        }
    }
    if (!num_parse_long_double(req->argv[2], req->argvlen[2], &incr)) {
        cmd_error(c, ERR_NOT_FLOAT);
        return;
    }
    char text[INCREX_TEXT_MAX];
    size_t n;
    if (!coll_add_float(c, value, incr, text, &n)) {
        return;
    }
    if (keyspace_set_string(&c->hint, req->argv[1], req->argvlen[1], r, text,
                            n) == NULL) {
        cmd_error(c, ERR_OOM);
        return;
    }
    notify_key(NOTIFY_STRING, "incrbyfloat", req->argv[1], req->argvlen[1],
               srv.db);
    reply_bulk(&c->out, text, n);
}

/* ---- APPEND and SETRANGE --------------------------------------------------- */

/* Redis's checkStringLength(): may a string grow to size + more bytes? */
static bool
length_ok(struct conn *c, uint64_t size, uint64_t more)
{
    if (size + more > (uint64_t)srv.conf.proto_max_bulk_len) {
        cmd_error(c, ERR_TOO_LONG);
        return false;
    }
    return true;
}

/* Short strings are rebuilt whole on the stack. */
#define SPLICE_SMALL 64

/* argv[1] (r, a string, or NULL) becomes newlen bytes long: its bytes,
 * zeros up to off, then the n bytes at off. false after -OOM. */
static bool
splice_string(struct conn *c, struct resp_request *req, struct store_rec *r,
       size_t off, const char *bytes, size_t n, size_t newlen)
{
    char ibuf[KS_INT_TEXT];
    size_t oldlen = 0;
    const char *old = r != NULL ? keytype_string(r, ibuf, &oldlen) : "";
    if (r != NULL && r->type == KEY_STR && oldlen > KS_STR_INLINE) {
        /* A long string grows in place. */
        char *p = keyspace_string_grow(r, newlen);
        if (p == NULL) {
            cmd_error(c, ERR_OOM);
            return false;
        }
        memcpy(p + off, bytes, n);
        keyspace_string_written(r, off, n);
        return true;
    }
    /* The old value is at most 20 bytes (an int's text, or inline). */
    char buf[SPLICE_SMALL];
    memcpy(buf, old, oldlen);
    if (newlen <= sizeof(buf)) {
        memset(buf + oldlen, 0, newlen - oldlen);
        memcpy(buf + off, bytes, n);
        r = keyspace_set_string(&c->hint, req->argv[1], req->argvlen[1], r,
                                buf, newlen);
    } else {
        r = keyspace_set_string(&c->hint, req->argv[1], req->argvlen[1], r,
                                NULL, newlen);
        if (r != NULL) {
            char *p = keytype_str_bytes(store_rec_state(r));
            memcpy(p, buf, oldlen);
            memcpy(p + off, bytes, n);
        }
    }
    if (r == NULL) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    return true;
}

void
append_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    char buf[KS_INT_TEXT];
    size_t oldlen = 0;
    size_t n = req->argvlen[2];
    if (!lookup_string(c, req, LOOKUP_WRITE, clock_wall_now(), &r)) {
        return;
    }
    if (r != NULL) {
        (void)keytype_string(r, buf, &oldlen);
        if (!length_ok(c, oldlen, n)) {
            return;
        }
    }
    if (splice_string(c, req, r, oldlen, req->argv[2], n, oldlen + n)) {
        notify_key(NOTIFY_STRING, "append", req->argv[1], req->argvlen[1],
                   srv.db);
        reply_int(&c->out, (int64_t)(oldlen + n));
    }
}

void
setrange_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r;
    char buf[KS_INT_TEXT];
    int64_t offset;
    size_t oldlen = 0;
    size_t n = req->argvlen[3];
    /* Redis reads the offset as a long: 64 bits here. */
    if (!cmd_arg_nonneg(c, req, 2, ERR_NOT_INTEGER,
                        "ERR offset is out of range", &offset)) {
        return;
    }
    if (!lookup_string(c, req, LOOKUP_WRITE, clock_wall_now(), &r)) {
        return;
    }
    if (r != NULL) {
        (void)keytype_string(r, buf, &oldlen);
    }
    if (n == 0) {
        reply_int(&c->out, (int64_t)oldlen);    /* nothing set */
        return;
    }
    if (!length_ok(c, (uint64_t)offset, n)) {
        return;
    }
    size_t end = (size_t)offset + n;
    size_t newlen = end > oldlen ? end : oldlen;
    if (splice_string(c, req, r, (size_t)offset, req->argv[3], n, newlen)) {
        notify_key(NOTIFY_STRING, "setrange", req->argv[1], req->argvlen[1],
                   srv.db);
        reply_int(&c->out, (int64_t)newlen);
    }
}
