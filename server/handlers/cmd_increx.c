/*
 * cmd_increx.c - INCREX, Redis 8.8's bounded counter with an expiry (and
 * Valkey 9.2's NX / XX), so code written for it runs on cellgate:
 *
 *   INCREX key [BYINT n | BYFLOAT f] [LBOUND lo] [UBOUND hi] [SATURATE]
 *          [EX s | PX ms | EXAT unix_s | PXAT unix_ms | PERSIST] [ENX]
 *          [NX | XX]
 *
 * replies [new value, applied increment]; a result outside the bounds
 * changes nothing and replies [current value, 0] unless SATURATE clamps
 * it. The key is a Redis string for GET, TTL and TYPE. The arithmetic is
 * algorithms/increx.c; here are the options, the key and its expiry.
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "algorithms/increx.h"
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
#include "server/server.h"

enum increx_expiry { EXP_KEEP, EXP_EX, EXP_PX, EXP_EXAT, EXP_PXAT,
                     EXP_PERSIST };

struct increx_opts {
    struct increx_params p;
    bool has_inc;
    const char *bound[2];       /* LBOUND, UBOUND as given (NULL: none) */
    size_t bound_len[2];
    enum increx_expiry expiry;
    int64_t expiry_arg;
    bool enx, nx, xx;
};

/* BYINT n or BYFLOAT f (at argv[i], its value next). */
static bool
parse_increment(struct conn *c, const struct resp_request *req, size_t i,
                struct increx_opts *o)
{
    const char *v = req->argv[i + 1];
    size_t len = req->argvlen[i + 1];
    o->has_inc = true;
    o->p.by_float = cmd_arg_is(req, i, "byfloat");
    if (!o->p.by_float) {
        if (!num_parse_i64(v, len, &o->p.inc_i)) {
            cmd_error(c, "ERR Increment is not an integer or out of range");
            return false;
        }
        return true;
    }
    if (!num_parse_long_double(v, len, &o->p.inc_f)) {
        cmd_error(c, "ERR Increment is not a valid float");
        return false;
    }
    if (isinf(o->p.inc_f)) {
        cmd_error(c, "ERR BYFLOAT increment cannot be Infinity");
        return false;
    }
    return true;
}

/* EX, PX, EXAT, PXAT (a positive integer) or PERSIST. */
static bool
parse_expiry(struct conn *c, const struct resp_request *req, size_t i,
             struct increx_opts *o)
{
    static const char *const words[] = { "ex", "px", "exat", "pxat" };
    int which = cmd_arg_which(req, i, words, 4);
    if (which >= 0) {
        o->expiry = (enum increx_expiry)(EXP_EX + which);
    }
    if (!num_parse_i64(req->argv[i + 1], req->argvlen[i + 1],
                       &o->expiry_arg)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (o->expiry_arg <= 0) {
        cmd_errorf(c, ERR_EXPIRE_TIME, "increx");
        return false;
    }
    return true;
}

/* One option at argv[*i] (and its value): false after replying. A
 * repeated or conflicting option is a syntax error, as in Redis. */
static bool
parse_option(struct conn *c, const struct resp_request *req, size_t *i,
             struct increx_opts *o)
{
    bool more = *i + 1 < req->argc;
    bool with_value = cmd_arg_is(req, *i, "byint") || cmd_arg_is(req, *i, "byfloat") ||
                      cmd_arg_is(req, *i, "lbound") || cmd_arg_is(req, *i, "ubound") ||
                      cmd_arg_is(req, *i, "ex") || cmd_arg_is(req, *i, "px") ||
                      cmd_arg_is(req, *i, "exat") || cmd_arg_is(req, *i, "pxat");
    bool ok;
    if (with_value && !more) {
        ok = false;                     /* the value is missing */
    } else if (cmd_arg_is(req, *i, "byint") || cmd_arg_is(req, *i, "byfloat")) {
        ok = !o->has_inc;
        if (ok && !parse_increment(c, req, *i, o)) {
            return false;
        }
    } else if (cmd_arg_is(req, *i, "lbound") || cmd_arg_is(req, *i, "ubound")) {
        int b = cmd_arg_is(req, *i, "ubound");
        ok = o->bound[b] == NULL;
        o->bound[b] = req->argv[*i + 1];
        o->bound_len[b] = req->argvlen[*i + 1];
    } else if (cmd_arg_is(req, *i, "saturate")) {
        ok = !o->p.saturate;
        o->p.saturate = true;
    } else if (with_value) {
        ok = o->expiry == EXP_KEEP;
        if (ok && !parse_expiry(c, req, *i, o)) {
            return false;
        }
    } else if (cmd_arg_is(req, *i, "persist")) {
        ok = o->expiry == EXP_KEEP && !o->enx;
        o->expiry = EXP_PERSIST;
    } else if (cmd_arg_is(req, *i, "enx")) {
        ok = !o->enx && o->expiry != EXP_PERSIST;
        o->enx = true;
    } else if (cmd_arg_is(req, *i, "nx") || cmd_arg_is(req, *i, "xx")) {
        ok = !o->nx && !o->xx;
        *(cmd_arg_is(req, *i, "nx") ? &o->nx : &o->xx) = true;
    } else {
        ok = false;
    }
    if (!ok) {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    *i += with_value ? 2 : 1;
    return true;
}

/* LBOUND and UBOUND, read once the mode is known. */
static bool
parse_bounds(struct conn *c, struct increx_opts *o)
{
    static const char *const name[2] = { "LBOUND", "UBOUND" };
    struct increx_params *p = &o->p;
    p->lb_i = INT64_MIN;
    p->ub_i = INT64_MAX;
    p->lb_f = -LDBL_MAX;
    p->ub_f = LDBL_MAX;
    for (int b = 0; b < 2; b++) {
        bool ok = true;
        if (o->bound[b] == NULL) {
            continue;
        }
        if (p->by_float) {
            ok = num_parse_long_double(o->bound[b], o->bound_len[b],
                                       b ? &p->ub_f : &p->lb_f);
        } else {
            ok = num_parse_i64(o->bound[b], o->bound_len[b],
                               b ? &p->ub_i : &p->lb_i);
        }
        if (!ok) {
            cmd_errorf(c, p->by_float ? "ERR %s is not a valid float"
                                      : "ERR %s is not an integer or out of "
                                        "range", name[b]);
            return false;
        }
    }
    if (p->by_float ? p->lb_f > p->ub_f : p->lb_i > p->ub_i) {
        cmd_error(c, "ERR LBOUND can't be greater than UBOUND");
        return false;
    }
    return true;
}

/* The absolute millisecond the expiry option names; false (after the
 * error) when it does not fit. */
static bool
expiry_ms(struct conn *c, const struct increx_opts *o, int64_t now_ms,
          int64_t *out)
{
    int64_t v = o->expiry_arg;
    bool bad = false;
    if (o->expiry == EXP_EX || o->expiry == EXP_EXAT) {
        bad = __builtin_mul_overflow(v, MS_PER_SEC, &v);
    }
    if (!bad && (o->expiry == EXP_EX || o->expiry == EXP_PX)) {
        bad = __builtin_add_overflow(v, now_ms, &v);
    }
    if (bad) {
        cmd_errorf(c, ERR_EXPIRE_TIME, "increx");
        return false;
    }
    *out = v;
    return true;
}

static bool
parse_increx(struct conn *c, const struct resp_request *req,
             struct increx_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->p.inc_i = 1;
    for (size_t i = 2; i < req->argc;) {
        if (!parse_option(c, req, &i, o)) {
            return false;
        }
    }
    if (o->enx && (o->expiry == EXP_KEEP || o->expiry == EXP_PERSIST)) {
        cmd_error(c, "ERR ENX flag requires an expiration");
        return false;
    }
    return parse_bounds(c, o);
}

static void
reply_value(struct conn *c, bool by_float, const struct increx_value *v)
{
    char text[INCREX_TEXT_MAX];
    if (!by_float) {
        reply_int(&c->out, v->i);
        return;
    }
    size_t n = increx_format(v, text, sizeof(text));
    reply_double_text(&c->out, text, n, c->proto);
}

static void
reply_pair(struct conn *c, bool by_float, const struct increx_value *value,
           const struct increx_value *applied)
{
    reply_array(&c->out, 2);
    reply_value(c, by_float, value);
    reply_value(c, by_float, applied);
}

/* The value a string key holds, read as INCRBY (an int64) or INCRBYFLOAT
 * (a long double) reads it; false (the error sent) when it holds none. */
static bool
counter_value(struct conn *c, const struct store_rec *r, bool by_float,
              struct increx_value *v)
{
    char buf[KS_INT_TEXT];
    size_t len;
    if (!keytype_is_string(r->type)) {
        cmd_error(c, ERR_WRONGTYPE);
        return false;
    }
    const char *s = keytype_string(r, buf, &len);
    if (num_parse_i64(s, len, &v->i)) {
        v->is_float = false;
        v->f = (long double)v->i;
        return true;
    }
    if (!by_float) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (!num_parse_long_double(s, len, &v->f)) {
        cmd_error(c, ERR_NOT_FLOAT);
        return false;
    }
    v->is_float = true;
    return true;
}

/* Write the new value and set the expiry the options say. */
static bool
store_counter(struct conn *c, struct resp_request *req, struct store_rec *r,
              const struct increx_opts *o, const struct increx_value *v,
              int64_t now)
{
    int64_t when = 0;
    if (o->expiry >= EXP_EX && o->expiry <= EXP_PXAT &&
        !expiry_ms(c, o, now / NS_PER_MS, &when)) {
        return false;
    }
    bool had_ttl = r != NULL && r->expire_at != STORE_NEVER;
    if (v->is_float) {
        char text[INCREX_TEXT_MAX];
        size_t n = increx_format(v, text, sizeof(text));
        r = keyspace_set_string(&c->hint, req->argv[1], req->argvlen[1], r,
                                text, n);
    } else {
        r = keyspace_set_int(&c->hint, req->argv[1], req->argvlen[1], r,
                             v->i);
    }
    if (r == NULL) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    int64_t at = r->expire_at;
    if (o->expiry == EXP_PERSIST) {
        at = STORE_NEVER;
    } else if (o->expiry != EXP_KEEP && !(o->enx && had_ttl)) {
        if (when <= now / NS_PER_MS) {
            keyspace_delete(r);     /* already past: as Redis, gone */
            return true;
        }
        at = when;
    }
    /* The value just written leans on no expiry: r stays (keytype.h). */
    if (keyspace_set_expire(r, at) == NULL) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    return true;
}

void
increx_command(struct conn *c, struct resp_request *req)
{
    struct increx_opts o;
    struct increx_value old = { 0 }, value, applied;
    static const struct increx_value zero = { 0 };
    if (!parse_increx(c, req, &o)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = keyspace_lookup_write(&c->hint, req->argv[1],
                                          req->argvlen[1], now);
    if (r != NULL && !counter_value(c, r, o.p.by_float, &old)) {
        return;
    }
    if ((o.nx && r != NULL) || (o.xx && r == NULL)) {
        reply_pair(c, o.p.by_float, &old, &zero);
        return;
    }
    switch (increx_apply(&o.p, &old, &value, &applied)) {
    case INCREX_REFUSED:
        reply_pair(c, o.p.by_float, &old, &zero);
        return;
    case INCREX_APPLIED_OVERFLOWS:
        cmd_error(c, "ERR applied increment would overflow");
        return;
    case INCREX_APPLIED_INFINITE:
        cmd_error(c, "ERR applied increment would be Infinity");
        return;
    case INCREX_APPLIED:
        break;
    }
    if (store_counter(c, req, r, &o, &value, now)) {
        notify_key(NOTIFY_GENERIC, "increx", req->argv[1], req->argvlen[1],
                   srv.db);
        reply_pair(c, o.p.by_float, &value, &applied);
    }
}
