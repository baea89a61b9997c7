/*
 * limit_cmd.c - what the limiter commands share (see limit_cmd.h): their
 * option keywords, the checked lookup of a key of one type, writing a
 * state back with its expiry, and the five-integer reply.
 */
#include "server/handlers/limit_cmd.h"

#include <string.h>
#include <strings.h>

#include "lib/num.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/keyspace.h"
#include "server/server.h"

static bool
is_word(const char *arg, size_t len, const char *word)
{
    return len == strlen(word) && strcasecmp(arg, word) == 0;
}

/* A keyword that takes a value, with one there: the value's index. */
static bool
valued(struct resp_request *req, size_t *i, unsigned allowed, unsigned bit,
       const char *word, const char **value, size_t *len)
{
    if (!(allowed & bit) || *i + 1 >= req->argc ||
        !is_word(req->argv[*i], req->argvlen[*i], word)) {
        return false;
    }
    *i += 1;
    *value = req->argv[*i];
    *len = req->argvlen[*i];
    return true;
}

/* Keywords after the positional arguments, in any order, any case. */
bool
limit_cmd_parse_options(struct conn *c, struct resp_request *req,
                        size_t from, unsigned allowed,
                        struct limit_cmd_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->cost = 1;
    for (size_t i = from; i < req->argc; i++) {
        const char *a = req->argv[i];
        size_t len = req->argvlen[i];
        if ((allowed & LIMIT_CMD_COST) && is_word(a, len, "COST") &&
            i + 1 < req->argc) {
            i++;
            if (!num_parse_i64(req->argv[i], req->argvlen[i], &o->cost)) {
                cmd_error(c, ERR_NOT_INTEGER);
                return false;
            }
        } else if ((allowed & LIMIT_CMD_ALIGN) && is_word(a, len, "ALIGN")) {
            o->align = true;
        } else if ((allowed & LIMIT_CMD_PEEK) && is_word(a, len, "PEEK")) {
            o->peek = true;
        } else if ((allowed & LIMIT_CMD_MS) && is_word(a, len, "MS")) {
            o->ms = true;
        } else if (valued(req, &i, allowed, LIMIT_CMD_META, "META", &o->meta,
                          &o->meta_len) ||
                   valued(req, &i, allowed, LIMIT_CMD_CALENDAR, "CALENDAR",
                          &o->zone, &o->zone_len) ||
                   valued(req, &i, allowed, LIMIT_CMD_CALENDAR, "WEEKSTART",
                          &o->week_start, &o->week_start_len)) {
            continue;
        } else {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
    }
    return true;
}

/* "limit window" at argv[2..3]: strict integers, both at least 1. */
bool
limit_cmd_parse_limit_window(struct conn *c, struct resp_request *req,
                             int64_t *limit, int64_t *window)
{
    if (!num_parse_i64(req->argv[2], req->argvlen[2], limit) ||
        !num_parse_i64(req->argv[3], req->argvlen[3], window)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (*limit < 1 || *window < 1) {
        cmd_error(c, ERR_LIMIT_WINDOW);
        return false;
    }
    return true;
}

bool
limit_cmd_check_status(struct conn *c, enum limit_status st)
{
    if (st == LIMIT_OK) {
        return true;
    }
    cmd_error(c, st == LIMIT_EOVERFLOW
                      ? "ERR window or cost too large: time would overflow"
                      : "ERR invalid limit parameters");
    return false;
}

/* The looked-up record of argv[1] if it has `type`; on another type the
 * ERR_WRONGTYPE error is sent and *ok cleared. */
struct store_rec *
limit_cmd_lookup(struct conn *c, struct resp_request *req, uint8_t type,
                 int64_t now, bool *ok)
{
    struct store_rec *r = keyspace_lookup_write(&c->hint, req->argv[1],
                                          req->argvlen[1], now);
    *ok = true;
    if (r != NULL && r->type != type) {
        cmd_error(c, ERR_WRONGTYPE);
        *ok = false;
    }
    return r;
}

/* Store the new state until it is fresh again, or drop the key when the
 * state already equals "no key". */
bool
limit_cmd_commit_state(struct conn *c, struct resp_request *req,
                       struct store_rec *r, uint8_t type, const void *state,
                       size_t size, int64_t fresh_at, int64_t now)
{
    if (!keyspace_store_state(&c->hint, req->argv[1], req->argvlen[1], r,
                              type, state, size, fresh_at, now)) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    return true;
}

void
limit_cmd_keep_until(struct store_rec *r, int64_t fresh_at, int64_t now)
{
    keyspace_keep_until(r, fresh_at, now);
}

static int64_t
rl_duration(int64_t ns, bool ms)
{
    return limit_ceil_div(ns, ms ? NS_PER_MS : NS_PER_SEC);
}

void
limit_cmd_reply_decision(struct conn *c, const struct resp_request *req,
                         const struct limit_decision *d, bool ms)
{
    int64_t v[5] = { d->limited ? 1 : 0, d->limit, d->remaining,
                     d->limited ? rl_duration(d->retry_after_ns, ms) : -1,
                     rl_duration(d->reset_after_ns, ms) };
    cmd_count_decision(c, req, d->limited);
    reply_int5(&c->out, v);
}

