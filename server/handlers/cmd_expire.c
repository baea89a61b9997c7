/*
 * cmd_expire.c - expiry on keys of every type, as Redis 7.0 answers it:
 * EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (NX|XX|GT|LT), TTL, PTTL,
 * EXPIRETIME, PEXPIRETIME, PERSIST.
 *
 * A key's expiry is the Unix ms it lives through (store.h), any value
 * Redis accepts. A limiter key's own calls set it again whenever they
 * change its state (to when the state is fresh), as redis-cell's
 * CL.THROTTLE sets its key's TTL on every allowed call; in between, an
 * EXPIRE or PERSIST holds (docs/commands.md).
 */
#include <stdbool.h>
#include <stdint.h>
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
#include "server/server.h"

enum { EXPIRE_NX = 1, EXPIRE_XX = 2, EXPIRE_GT = 4, EXPIRE_LT = 8 };

/* "Unsupported option <opt>", the option whole (of any length) as Redis's
 * addReplyErrorFormat() makes it: up to a NUL (a C string), CRs and LFs
 * at its end trimmed, the others made spaces. */
static void
error_option(struct conn *c, const char *opt, size_t len)
{
    static const char prefix[] = "ERR Unsupported option ";
    size_t n = strnlen(opt, len);
    while (n > 0 && (opt[n - 1] == '\r' || opt[n - 1] == '\n')) {
        n--;
    }
    char *msg = mem_malloc(sizeof(prefix) - 1 + n);
    if (msg == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    memcpy(msg, prefix, sizeof(prefix) - 1);
    memcpy(msg + sizeof(prefix) - 1, opt, n);
    cmd_error_bytes(c, msg, sizeof(prefix) - 1 + n);
    mem_free(msg);
}

/* NX | XX | GT | LT from argv[3] on, with Redis's errors. */
static bool
parse_expire_flags(struct conn *c, const struct resp_request *req,
                   unsigned *flags)
{
    static const char *const words[] = { "nx", "xx", "gt", "lt" };
    *flags = 0;
    for (size_t j = 3; j < req->argc; j++) {
        size_t w = 0;
        while (w < 4 && !cmd_arg_is(req, j, words[w])) {
            w++;
        }
        if (w == 4) {
            error_option(c, req->argv[j], req->argvlen[j]);
            return false;
        }
        *flags |= 1u << w;
    }
    if ((*flags & EXPIRE_NX) && (*flags & (EXPIRE_XX | EXPIRE_GT | EXPIRE_LT))) {
        cmd_error(c, "ERR NX and XX, GT or LT options at the same time are "
                     "not compatible");
        return false;
    }
    if ((*flags & EXPIRE_GT) && (*flags & EXPIRE_LT)) {
        cmd_error(c, "ERR GT and LT options at the same time are not "
                     "compatible");
        return false;
    }
    return true;
}

/* Does the condition let the new expiry `when` replace `current`
 * (STORE_NEVER: none, an infinite TTL for GT and LT)? */
static bool
expire_allowed(unsigned flags, int64_t current, int64_t when)
{
    bool none = current == STORE_NEVER;
    return !((flags & EXPIRE_NX) && !none) &&
           !((flags & EXPIRE_XX) && none) &&
           !((flags & EXPIRE_GT) && (none || when <= current)) &&
           !((flags & EXPIRE_LT) && !none && when >= current);
}

/* Redis's expireGenericCommand(): base (ms) 0 for the *AT forms. */
static void
expire_generic(struct conn *c, struct resp_request *req, int64_t base,
               bool seconds, const char *name)
{
    unsigned flags;
    int64_t when;
    int64_t now = clock_wall_now();
    if (!parse_expire_flags(c, req, &flags)) {
        return;
    }
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &when)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    bool bad = seconds && (when > INT64_MAX / MS_PER_SEC ||
                           when < INT64_MIN / MS_PER_SEC);
    if (!bad && seconds) {
        when *= MS_PER_SEC;
    }
    if (bad || __builtin_add_overflow(when, base, &when)) {
        cmd_errorf(c, ERR_EXPIRE_TIME, name);
        return;
    }
    struct store_rec *r = keyspace_lookup_write(&c->hint, req->argv[1],
                                                req->argvlen[1], now);
    if (r == NULL || !expire_allowed(flags, r->expire_at, when)) {
        reply_int(&c->out, 0);
        return;
    }
    bool past = when <= now / NS_PER_MS;
    if (past) {
        keyspace_delete(r);     /* already past: gone, as Redis */
    } else if (keyspace_set_expire(r, when) == NULL) {
        cmd_error(c, ERR_OOM);  /* a TAT needed 8 bytes: see keytype.h */
        return;
    }
    notify_key(NOTIFY_GENERIC, past ? "del" : "expire", req->argv[1],
               req->argvlen[1], srv.db);
    reply_int(&c->out, 1);
}

HANDLER_VARIANT(expire_command, expire_generic,
                clock_wall_now() / NS_PER_MS, true, "expire")
HANDLER_VARIANT(pexpire_command, expire_generic,
                clock_wall_now() / NS_PER_MS, false, "pexpire")
HANDLER_VARIANT(expireat_command, expire_generic, 0, true, "expireat")
HANDLER_VARIANT(pexpireat_command, expire_generic, 0, false, "pexpireat")

/* Redis's ttlGenericCommand(): the time left (or the time, absolute) in
 * ms or rounded to seconds; -2 for no key, -1 for no expiry. */
static void
ttl_generic(struct conn *c, struct resp_request *req, bool ms, bool absolute)
{
    int64_t now = clock_wall_now();
    struct store_rec *r = keyspace_lookup(&c->hint, req->argv[1],
                                          req->argvlen[1], now);
    if (r == NULL) {
        reply_int(&c->out, -2);
        return;
    }
    if (r->expire_at == STORE_NEVER) {
        reply_int(&c->out, -1);
        return;
    }
    int64_t t = absolute ? r->expire_at : keyspace_redis_pttl(r, now);
    if (ms) {
        reply_int(&c->out, t);
    } else if (!absolute && !keytype_redis_expiry(r->type)) {
        /* A limiter key: the seconds until it is fresh, rounded up. */
        reply_int(&c->out, t / MS_PER_SEC + (t % MS_PER_SEC != 0));
    } else {
        /* Redis's (t + 500) / 1000, without its overflow near INT64_MAX
         * (Redis's build gives the true quotient there too). */
        reply_int(&c->out, t / MS_PER_SEC + (t % MS_PER_SEC >= 500));
    }
}

HANDLER_VARIANT(ttl_command, ttl_generic, false, false)
HANDLER_VARIANT(pttl_command, ttl_generic, true, false)
HANDLER_VARIANT(expiretime_command, ttl_generic, false, true)
HANDLER_VARIANT(pexpiretime_command, ttl_generic, true, true)

void
persist_command(struct conn *c, struct resp_request *req)
{
    struct store_rec *r = keyspace_lookup_write(&c->hint, req->argv[1],
                                                req->argvlen[1],
                                                clock_wall_now());
    if (r == NULL || r->expire_at == STORE_NEVER) {
        reply_int(&c->out, 0);
        return;
    }
    if (keyspace_set_expire(r, STORE_NEVER) == NULL) {
        cmd_error(c, ERR_OOM);  /* a TAT needed 8 bytes: see keytype.h */
        return;
    }
    notify_key(NOTIFY_GENERIC, "persist", req->argv[1], req->argvlen[1],
               srv.db);
    reply_int(&c->out, 1);
}
