/*
 * cmd_limit.c - limiter commands: argv -> parameters -> one `now` ->
 * algorithm -> state write-back and expiry -> reply.
 *
 * CL.THROTTLE keeps redis-cell's grammar and error texts exactly
 * (shared/spec/cl-throttle.md); the cellgate options PEEK, MS and
 * RESERVE max_wait may follow the optional quantity and change nothing
 * when absent. GCRA is Redis's own command of that name
 * (docs/commands.md), with its checks, texts and arithmetic
 * (algorithms/redis_gcra.h). RL.FIXED and RL.SLIDING are one
 * handler (rl_window) over a table of what differs between the two
 * algorithms, so the two commands cannot drift apart. RL.FIXED's CALENDAR
 * zone makes its window argument a unit name (docs/commands.md); a call
 * without it is parsed exactly as before.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algorithms/fixed_window.h"
#include "algorithms/gcra.h"
#include "algorithms/redis_gcra.h"
#include "algorithms/sliding_window.h"
#include "lib/calendar.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/time.h"
#include "lib/tzdb.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/client.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/handlers/limit_cmd.h"
#include "server/notify.h"
#include "server/server.h"

#define CELL_USAGE                                                            \
    "Cell error: Store error: Usage: cl.throttle <key> <max_burst> "          \
    "<count per period> <period> [<quantity>]"

struct limit_opts {
    bool peek;
    bool ms;
    bool reserve;
    int64_t max_wait;   /* RESERVE's bound, in the reply's unit */
};

static bool
is_word(const char *arg, size_t len, const char *word)
{
    return len == strlen(word) && strcasecmp(arg, word) == 0;
}

/* PEEK / MS / RESERVE max_wait at argv[*i] (moved past RESERVE's value);
 * NOT_OPTION for anything else, BAD_VALUE after replying its error. */
enum opt_parse { OPTION, NOT_OPTION, BAD_VALUE };

static enum opt_parse
parse_option(struct conn *c, const struct resp_request *req, size_t *i,
             struct limit_opts *o)
{
    const char *arg = req->argv[*i];
    size_t len = req->argvlen[*i];
    if (is_word(arg, len, "PEEK")) {
        o->peek = true;
        return OPTION;
    }
    if (is_word(arg, len, "MS")) {
        o->ms = true;
        return OPTION;
    }
    if (!is_word(arg, len, "RESERVE") || *i + 1 >= req->argc) {
        return NOT_OPTION;
    }
    *i += 1;
    if (!num_parse_i64(req->argv[*i], req->argvlen[*i], &o->max_wait)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return BAD_VALUE;
    }
    if (o->max_wait < 0) {
        cmd_error(c, ERR_POSITIVE);
        return BAD_VALUE;
    }
    o->reserve = true;
    return OPTION;
}

static void
reply_cell_parse_error(struct conn *c, const char *arg, size_t len)
{
    /* The raw argument is echoed whole and verbatim, as redis-cell does; it
     * may hold any bytes (reply_error turns CR and LF into spaces). */
    static const char prefix[] =
        "Cell error: Store error: Couldn't parse as integer: ";
    size_t n = sizeof(prefix) - 1;
    char *msg = mem_malloc(n + len);
    if (msg == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    memcpy(msg, prefix, n);
    memcpy(msg + n, arg, len);
    cmd_error_bytes(c, msg, n + len);
    mem_free(msg);
}

/* argv[i] as redis-cell reads an integer (num_parse_i64_rust), inline for
 * plain digits (what nearly every call sends); false after replying its
 * error. */
static inline bool
parse_cell_arg(struct conn *c, const struct resp_request *req, size_t i,
               int64_t *out)
{
    const char *s = req->argv[i];
    size_t len = req->argvlen[i];
    if (len - 1 < 18) {     /* 1 to 18 digits cannot overflow */
        uint64_t v = 0;
        size_t k = 0;
        for (; k < len; k++) {
            unsigned d = (unsigned char)s[k] - (unsigned)'0';
            if (d > 9) {
                break;
            }
            v = v * 10 + d;
        }
        if (k == len) {
            *out = (int64_t)v;
            return true;
        }
    }
    if (!num_parse_i64_rust(s, len, out)) {
        reply_cell_parse_error(c, s, len);
        return false;
    }
    return true;
}

/* Fill p from argv[2..]; the quantity is argv[5] unless it is an option.
 * Returns false after replying the error. */
static bool
parse_throttle_args(struct conn *c, struct resp_request *req,
                    struct gcra_params *p, struct limit_opts *o)
{
    bool quantity = false;  /* max_burst count period [quantity] */
    size_t i = 5;
    o->peek = o->ms = o->reserve = false;
    p->quantity = 1;
    if (req->argc >= 6) {
        enum opt_parse first = parse_option(c, req, &i, o);
        if (first == BAD_VALUE) {
            return false;
        }
        quantity = first == NOT_OPTION;
        i++;
    }
    /* Everything after the quantity must be an option; redis-cell answers
     * its usage error for any other extra argument. */
    for (; i < req->argc; i++) {
        enum opt_parse next = parse_option(c, req, &i, o);
        if (next != OPTION) {
            if (next == NOT_OPTION) {
                cmd_error(c, CELL_USAGE);
            }
            return false;
        }
    }
    return parse_cell_arg(c, req, 2, &p->max_burst) &&
           parse_cell_arg(c, req, 3, &p->count) &&
           parse_cell_arg(c, req, 4, &p->period) &&
           (!quantity || parse_cell_arg(c, req, 5, &p->quantity));
}

static int64_t
reply_duration(gcra_ns_t ns, bool ms)
{
    return ms ? gcra_reply_millis(ns) : gcra_reply_seconds(ns);
}

/* RESERVE's bound in ns; a bound past INT64_MAX ns (292 years) is as good
 * as INT64_MAX, which no wait can exceed. */
static int64_t
max_wait_ns(const struct limit_opts *o)
{
    int64_t unit = o->ms ? NS_PER_MS : NS_PER_SEC;
    return o->max_wait > INT64_MAX / unit ? INT64_MAX : o->max_wait * unit;
}

/* Write the decision back as redis-cell would: StringSet then PEXPIRE. */
static bool
store_decision(struct conn *c, struct resp_request *req,
               struct store_rec *r, const struct gcra_decision *d,
               int64_t now)
{
    if (!keyspace_store_gcra(&c->hint, req->argv[1], req->argvlen[1], r,
                             d->new_tat, d->ttl_ms, now)) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    notify_key(NOTIFY_GENERIC, "cl.throttle", req->argv[1], req->argvlen[1],
               srv.db);
    return true;
}

void
cl_throttle_command(struct conn *c, struct resp_request *req)
{
    struct gcra_params p;
    struct limit_opts o;
    struct gcra_decision d;

    if (req->argc < 5) {
        cmd_error(c, CELL_USAGE);
        return;
    }
    if (!parse_throttle_args(c, req, &p, &o)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = keyspace_lookup_write(&c->hint, req->argv[1],
                                          req->argvlen[1], now);
    uint64_t tat = 0;
    enum ks_tat t = r != NULL ? keytype_gcra_tat(r, &tat) : KS_TAT_OK;
    enum gcra_status st = gcra_throttle(&p, r != NULL && t == KS_TAT_OK, tat,
                                        now, &d);
    bool reserved = false;
    if (o.reserve && st == GCRA_OK && t == KS_TAT_OK) {
        st = gcra_reserve(&p, now, max_wait_ns(&o), &d, &reserved);
    }
    /* As redis-cell: the rate is checked before the key is read. */
    if (st == GCRA_ZERO_RATE) {
        cmd_error(c, "Cell error: Store error: Zero rates are not supported");
        return;
    }
    if (t != KS_TAT_OK) {
        cmd_error(c, t == KS_TAT_WRONGTYPE ? ERR_WRONGTYPE : ERR_NOT_INTEGER);
        return;
    }
    if (d.store && !o.peek && !store_decision(c, req, r, &d, now)) {
        return;
    }
    if (st == GCRA_EXPIRE_ERROR && !o.peek) {
        cmd_error(c, "Cell error: Store error: Error while setting key "
                      "expire");
        return;
    }
    int64_t v[5] = { d.limited ? 1 : 0, d.limit, d.remaining,
                     reserved ? gcra_reply_wait(d.retry_after_ns, o.ms)
                              : reply_duration(d.retry_after_ns, o.ms),
                     reply_duration(d.reset_after_ns, o.ms) };
    cmd_count_decision(c, req, d.limited);
    reply_int5(&c->out, v);
}

/* ---- RL.FIXED and RL.SLIDING ------------------------------------------ */

/* What a windowed limiter's call carries, whichever algorithm it names:
 * the positional "limit window" and the options; with CALENDAR, the
 * calendar its windows follow (window is then unused). */
struct window_call {
    int64_t limit;
    int64_t window;
    struct limit_cmd_opts o;
    const struct cal_spec *calendar;    /* NULL: windows of `window` s */
    struct cal_spec cal;
};

/* The one state buffer either algorithm writes its next state into. */
union window_state {
    struct fwin_state fixed;
    struct swin_state sliding;
};

/* What differs between RL.FIXED and RL.SLIDING: the key type, the options
 * each takes (ALIGN is the fixed window's alone), the state's size and the
 * algorithm (behind its params struct). Everything else is one handler. */
struct window_algo {
    const char *event;          /* its keyspace notification's name */
    uint8_t type;
    unsigned options;
    size_t state_size;
    enum limit_status (*apply)(const struct window_call *w, bool has_state,
                               const void *st, int64_t now,
                               union window_state *next,
                               struct limit_decision *d);
};

static enum limit_status
fixed_apply(const struct window_call *w, bool has_state, const void *st,
            int64_t now, union window_state *next, struct limit_decision *d)
{
    struct fwin_params p = { .limit = w->limit, .window = w->window,
                             .cost = w->o.cost, .align = w->o.align,
                             .calendar = w->calendar };
    return fwin_apply(&p, has_state, st, now, &next->fixed, d);
}

static enum limit_status
sliding_apply(const struct window_call *w, bool has_state, const void *st,
              int64_t now, union window_state *next,
              struct limit_decision *d)
{
    struct swin_params p = { .limit = w->limit, .window = w->window,
                             .cost = w->o.cost };
    return swin_apply(&p, has_state, st, now, &next->sliding, d);
}

static const struct window_algo fixed_window = {
    "rl.fixed", KEY_FIXED,
    LIMIT_CMD_COST | LIMIT_CMD_ALIGN | LIMIT_CMD_PEEK | LIMIT_CMD_MS |
        LIMIT_CMD_CALENDAR,
    sizeof(struct fwin_state), fixed_apply
};

static const struct window_algo sliding_window = {
    "rl.sliding", KEY_SLIDING, LIMIT_CMD_COST | LIMIT_CMD_PEEK | LIMIT_CMD_MS,
    sizeof(struct swin_state), sliding_apply
};

#define ERR_CALENDAR_UNIT                                                     \
    "ERR syntax error, CALENDAR's window must be second, minute, hour, "      \
    "day, week, month or year"
#define ERR_WEEKSTART_UNIT                                                    \
    "ERR syntax error, WEEKSTART needs CALENDAR and the week unit"

/* Does the call name CALENDAR zone among its options? (A scan that
 * replies nothing: the options are parsed for real afterwards.) */
static bool
names_calendar(const struct resp_request *req)
{
    for (size_t i = 4; i + 1 < req->argc; i++) {
        if (is_word(req->argv[i], req->argvlen[i], "CALENDAR")) {
            return true;
        }
        if (is_word(req->argv[i], req->argvlen[i], "COST") ||
            is_word(req->argv[i], req->argvlen[i], "WEEKSTART")) {
            i++;            /* a value, whatever it reads */
        }
    }
    return false;
}

/* The zone of CALENDAR, from the cache; false after replying. */
static bool
calendar_zone(struct conn *c, const struct limit_cmd_opts *o,
              const struct tz_zone **z)
{
    int len = o->zone_len > TZDB_NAME_MAX ? TZDB_NAME_MAX : (int)o->zone_len;
    switch (tzdb_get(o->zone, o->zone_len, z)) {
    case TZDB_OK:
        return true;
    case TZDB_UNKNOWN:
        cmd_errorf(c, "ERR unknown time zone '%.*s'", len, o->zone);
        return false;
    case TZDB_CORRUPT:
        cmd_errorf(c, "ERR time zone '%.*s': its zoneinfo file is not "
                      "valid TZif", len, o->zone);
        return false;
    case TZDB_NOMEM:
        break;
    }
    cmd_error(c, ERR_NOMEM);
    return false;
}

/* key limit unit ... CALENDAR zone [WEEKSTART day]: the limit, the unit,
 * the options, then the zone; false after replying. */
static bool
parse_calendar_call(struct conn *c, struct resp_request *req,
                    const struct window_algo *a, struct window_call *w)
{
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &w->limit)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (w->limit < 1) {
        cmd_error(c, ERR_LIMIT_WINDOW);
        return false;
    }
    if (!cal_unit_parse(req->argv[3], req->argvlen[3], &w->cal.unit)) {
        cmd_error(c, ERR_CALENDAR_UNIT);
        return false;
    }
    if (!limit_cmd_parse_options(c, req, 4, a->options, &w->o)) {
        return false;
    }
    w->cal.week_start = 1;      /* Monday, as ISO 8601 */
    if (w->o.week_start != NULL &&
        (w->cal.unit != CAL_WEEK ||
         !cal_weekday_parse(w->o.week_start, w->o.week_start_len,
                            &w->cal.week_start))) {
        cmd_error(c, w->cal.unit != CAL_WEEK
                         ? ERR_WEEKSTART_UNIT
                         : "ERR syntax error, WEEKSTART must be a day of "
                           "the week (monday ... sunday)");
        return false;
    }
    w->window = 1;
    w->calendar = &w->cal;
    return calendar_zone(c, &w->o, &w->cal.zone);
}

/* The positional arguments and options of either algorithm's call. */
static bool
parse_window_call(struct conn *c, struct resp_request *req,
                  const struct window_algo *a, struct window_call *w)
{
    if ((a->options & LIMIT_CMD_CALENDAR) && names_calendar(req)) {
        return parse_calendar_call(c, req, a, w);
    }
    w->calendar = NULL;
    if (!limit_cmd_parse_limit_window(c, req, &w->limit, &w->window) ||
        !limit_cmd_parse_options(c, req, 4, a->options, &w->o)) {
        return false;
    }
    if (w->o.week_start != NULL) {
        cmd_error(c, ERR_WEEKSTART_UNIT);
        return false;
    }
    return true;
}

/* key limit window [options]: parse, decide at one `now`, write the state
 * back unless PEEK, reply the decision. */
static void
rl_window(struct conn *c, struct resp_request *req,
          const struct window_algo *a)
{
    struct window_call w;
    union window_state next;
    struct limit_decision d;
    bool ok;

    if (!parse_window_call(c, req, a, &w)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = limit_cmd_lookup(c, req, a->type, now, &ok);
    if (!ok) {
        return;
    }
    if (!limit_cmd_check_status(c, a->apply(&w, r != NULL,
                                            r ? store_rec_state(r) : NULL,
                                            now, &next, &d))) {
        return;
    }
    if (!w.o.peek && !limit_cmd_commit_state(c, req, r, a->type, &next,
                                             a->state_size, d.fresh_at,
                                             now)) {
        return;
    }
    if (!w.o.peek) {
        notify_key(NOTIFY_GENERIC, a->event, req->argv[1], req->argvlen[1],
                   srv.db);
    }
    limit_cmd_reply_decision(c, req, &d, w.o.ms);
}

HANDLER_VARIANT(rl_fixed_command, rl_window, &fixed_window)
HANDLER_VARIANT(rl_sliding_command, rl_window, &sliding_window)

/* ---- GCRA (Redis's command) ------------------------------------------- */

/* A count of GCRA (tokens_per_period, TOKENS): 1..INT64_MAX, with Redis's
 * two texts. false after replying. */
static bool
parse_gcra_count(struct conn *c, const struct resp_request *req, size_t i,
                 int64_t *out)
{
    if (!num_parse_i64(req->argv[i], req->argvlen[i], out)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return false;
    }
    if (*out < 1) {
        cmd_error(c, "ERR value is out of range, value must between 1 and "
                     "9223372036854775807");
        return false;
    }
    return true;
}

/* GCRA key max_burst tokens_per_period period [TOKENS count], checked in
 * Redis's order with its texts. */
static bool
parse_gcra_args(struct conn *c, const struct resp_request *req,
                struct redis_gcra_params *p)
{
    int64_t burst;
    if (req->argc > 7) {
        cmd_errorf(c, ERR_WRONG_ARITY, "gcra");
        return false;
    }
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &burst) || burst < 0) {
        cmd_error(c, ERR_POSITIVE);
        return false;
    }
    p->limit = burst < INT64_MAX ? burst + 1 : burst;
    if (!parse_gcra_count(c, req, 3, &p->tokens_per_period)) {
        return false;
    }
    if (!num_parse_double(req->argv[4], req->argvlen[4], &p->period_s)) {
        cmd_error(c, ERR_NOT_FLOAT);
        return false;
    }
    if (!(p->period_s > 0 && p->period_s < 1e12)) {
        cmd_error(c, "ERR period must be > 0 and < 1e12");
        return false;
    }
    p->tokens = 1;
    if (req->argc >= 6 && (req->argvlen[5] != 6 ||
                           strcasecmp(req->argv[5], "tokens") != 0)) {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    if (req->argc == 6) {
        cmd_error(c, "ERR Missing TOKENS value");
        return false;
    }
    return req->argc < 7 || parse_gcra_count(c, req, 6, &p->tokens);
}

/* An allowed request: the TAT, and the expiry Redis sets (PEXPIREAT to the
 * TAT's millisecond: the key lives through it). */
static bool
store_redis_gcra(struct conn *c, struct resp_request *req,
                 struct store_rec *r, int64_t new_tat_us)
{
    r = keyspace_upsert(&c->hint, req->argv[1], req->argvlen[1], r,
                        KEY_REDIS_GCRA);
    if (r == NULL) {
        cmd_error(c, ERR_OOM);
        return false;
    }
    ((struct ks_redis_gcra *)store_rec_state(r))->tat_us = new_tat_us;
    (void)keyspace_set_expire(r, new_tat_us / US_PER_MS); /* no KEY_INT: r */
    notify_key(NOTIFY_GENERIC, "gcra", req->argv[1], req->argvlen[1], srv.db);
    return true;
}

void
gcra_command(struct conn *c, struct resp_request *req)
{
    struct redis_gcra_params p;
    struct redis_gcra_decision d;
    bool ok;
    if (!parse_gcra_args(c, req, &p)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = limit_cmd_lookup(c, req, KEY_REDIS_GCRA, now, &ok);
    if (!ok) {
        return;
    }
    int64_t tat = r != NULL
                      ? ((struct ks_redis_gcra *)store_rec_state(r))->tat_us
                      : 0;
    /* Redis's clock: the command's millisecond, in µs. */
    switch (redis_gcra_decide(&p, r != NULL, tat, now / NS_PER_MS * US_PER_MS,
                              &d)) {
    case REDIS_GCRA_OVERFLOW_TOKENS:
        cmd_error(c, "ERR GCRA limiting uses microsecond accuracy. "
                     "Combination of period, tokens_per_period and TOKENS "
                     "would cause an overflow");
        return;
    case REDIS_GCRA_OVERFLOW_BURST:
        cmd_error(c, "ERR GCRA limiting uses microsecond accuracy. "
                     "Combination of period, tokens_per_period and "
                     "max_burst would cause an overflow");
        return;
    case REDIS_GCRA_OK:
        break;
    }
    if (d.store && !store_redis_gcra(c, req, r, d.new_tat_us)) {
        return;
    }
    int64_t v[5] = { d.limited ? 1 : 0, d.limit, d.remaining,
                     d.retry_after_s, d.reset_after_s };
    cmd_count_decision(c, req, d.limited);
    reply_int5(&c->out, v);
}
