/*
 * cmd_log.c - the limiters whose state grows with use: RL.LOG (exact
 * sliding log with per-request metadata), RL.ENTRIES, and RL.TIERS
 * (several windows over per-second buckets, all or nothing).
 *
 * Their records hold a small fixed header (struct log_state, struct
 * tiers_state) pointing at separately allocated arrays; keytype_release()
 * frees those when the store drops the record. The arrays are bounded by
 * log-max-entries and tiers-max-window.
 */
#include <string.h>
#include <strings.h>

#include "algorithms/fixed_window.h"
#include "algorithms/sliding_log.h"
#include "algorithms/sliding_window.h"
#include "algorithms/tiers.h"
#include "protocol/mem.h"
#include "protocol/num.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/conn.h"
#include "server/handlers.h"
#include "server/keytypes.h"
#include "server/limit_cmd.h"
#include "server/server.h"

#define META_MAX 1024           /* bytes of META per logged request */
#define TIERS_MAX 16            /* limit/window pairs per RL.TIERS call */

struct log_state {
    struct slog_ring ring;      /* ring.e: mem_malloc'd */
    char *meta;                 /* META bytes of the entries, mem_malloc'd */
    uint32_t meta_len;
    uint32_t meta_cap;
    int64_t window_ms;          /* of the last call, for RL.ENTRIES */
};

struct tiers_state {
    struct tier_state st;       /* st.b: mem_malloc'd */
};

void
keytype_release(struct store_rec *r)
{
    if (r->type == KEY_LOG) {
        struct log_state *ls = store_rec_state(r);
        mem_free(ls->ring.e);
        mem_free(ls->meta);
    } else if (r->type == KEY_TIERS) {
        struct tiers_state *ts = store_rec_state(r);
        mem_free(ts->st.b);
    }
}

/* ---- RL.LOG ----------------------------------------------------------- */

static bool
log_grow_ring(struct slog_ring *ring, int64_t limit)
{
    uint32_t cap = ring->cap ? ring->cap * 2 : 4;
    if ((int64_t)cap > limit) {
        cap = (uint32_t)limit;      /* entries cost >= 1: never more */
    }
    if (cap <= ring->cap) {
        cap = ring->cap + 1;
    }
    struct slog_entry *e = mem_realloc(ring->e, cap * sizeof(*e));
    if (e == NULL) {
        return false;
    }
    ring->e = e;
    slog_grown(ring, cap);
    return true;
}

/* Drop the META bytes of entries that left the log by copying the live
 * ones to a fresh buffer with room for `more`. */
static bool
log_compact_meta(struct log_state *ls, uint32_t more)
{
    uint32_t live = 0;
    for (uint32_t i = 0; i < ls->ring.len; i++) {
        live += slog_newest(&ls->ring, i)->meta_len;
    }
    uint32_t cap = (live + more) * 2 > 64 ? (live + more) * 2 : 64;
    char *buf = mem_malloc(cap);
    if (buf == NULL) {
        return false;
    }
    uint32_t off = 0;
    for (uint32_t i = ls->ring.len; i-- > 0;) {
        struct slog_entry *e =
            (struct slog_entry *)slog_newest(&ls->ring, i);
        memcpy(buf + off, ls->meta + e->meta_off, e->meta_len);
        e->meta_off = off;
        off += e->meta_len;
    }
    mem_free(ls->meta);
    ls->meta = buf;
    ls->meta_len = off;
    ls->meta_cap = cap;
    return true;
}

/* Record one accepted request: ring slot and META bytes. */
static bool
log_append(struct log_state *ls, int64_t limit, int64_t now, int64_t cost,
           const char *meta, size_t mlen)
{
    if (ls->ring.len == ls->ring.cap && !log_grow_ring(&ls->ring, limit)) {
        return false;
    }
    if (ls->meta_cap - ls->meta_len < mlen &&
        !log_compact_meta(ls, (uint32_t)mlen)) {
        return false;
    }
    if (mlen > 0) {
        memcpy(ls->meta + ls->meta_len, meta, mlen);
    }
    slog_append(&ls->ring, now, cost, ls->meta_len, (uint32_t)mlen);
    ls->meta_len += (uint32_t)mlen;
    return true;
}

static bool
parse_log_args(struct conn *c, struct resp_request *req,
               struct slog_params *p, struct rl_opts *o)
{
    if (!parse_limit_window(c, req, &p->limit, &p->window) ||
        !parse_rl_options(c, req, 4, RL_COST | RL_META | RL_PEEK | RL_MS,
                          o)) {
        return false;
    }
    if (p->limit > srv.conf.log_max_entries) {
        conn_errorf(c, "ERR limit is above log-max-entries (%lld): use "
                    "RL.SLIDING for large limits",
                    (long long)srv.conf.log_max_entries);
        return false;
    }
    if (o->meta_len > META_MAX) {
        conn_errorf(c, "ERR META is longer than %d bytes", META_MAX);
        return false;
    }
    p->cost = o->cost;
    return true;
}

void
cmd_rl_log(struct conn *c, struct resp_request *req)
{
    static const struct slog_ring empty;
    struct slog_params p;
    struct rl_opts o;
    struct limit_decision d;
    bool ok;

    if (!parse_log_args(c, req, &p, &o)) {
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = lookup_typed(c, req, KEY_LOG, now, &ok);
    if (!ok) {
        return;
    }
    struct log_state *ls = r != NULL ? store_rec_state(r) : NULL;
    if (ls != NULL && p.window <= INT64_MAX / 1000) {
        /* Only drops entries no request can see any more. */
        slog_expire(&ls->ring, p.window * 1000, now);
    }
    if (!check_status(c, slog_decide(&p, ls ? &ls->ring : &empty, now,
                                     &d))) {
        return;
    }
    if (!o.peek && !d.limited && (p.cost > 0 || ls != NULL)) {
        if (r == NULL) {
            r = keyspace_add(c, req, KEY_LOG, sizeof(struct log_state));
            if (r == NULL) {
                return;
            }
            ls = store_rec_state(r);
        }
        ls->window_ms = p.window * 1000;
        if (p.cost > 0 &&
            !log_append(ls, p.limit, now, p.cost, o.meta, o.meta_len)) {
            conn_error(c, OOM_ERROR);
            limit_keep_until(r, ls->ring.len > 0 ? d.fresh_at : now, now);
            return;
        }
        if (p.cost < 0) {
            slog_refund(&ls->ring, -p.cost);
        }
        limit_keep_until(r, ls->ring.len > 0 ? d.fresh_at : now, now);
    }
    reply_decision(c, &d, o.ms);
}

/* RL.ENTRIES key [COUNT n]: newest first, [time_ms, cost, meta|nil]. */
void
cmd_rl_entries(struct conn *c, struct resp_request *req)
{
    int64_t count = INT64_MAX;
    bool ok;
    if (req->argc == 4 && req->argvlen[2] == 5 &&
        strncasecmp(req->argv[2], "COUNT", 5) == 0) {
        if (!num_parse_i64(req->argv[3], req->argvlen[3], &count)) {
            conn_error(c, NOT_INTEGER);
            return;
        }
        if (count < 0) {
            conn_error(c, "ERR COUNT must be positive");
            return;
        }
    } else if (req->argc != 2) {
        conn_error(c, "ERR syntax error");
        return;
    }
    int64_t now = clock_wall_now();
    struct store_rec *r = lookup_typed(c, req, KEY_LOG, now, &ok);
    if (!ok) {
        return;
    }
    if (r == NULL) {
        reply_array(&c->out, 0);
        return;
    }
    struct log_state *ls = store_rec_state(r);
    slog_expire(&ls->ring, ls->window_ms, now);
    uint32_t n = ls->ring.len;
    if ((int64_t)n > count) {
        n = (uint32_t)count;
    }
    reply_array(&c->out, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct slog_entry *e = slog_newest(&ls->ring, i);
        reply_array(&c->out, 3);
        reply_int(&c->out, e->t_ms);
        reply_int(&c->out, e->cost);
        if (e->meta_len == 0) {
            reply_null(&c->out, c->proto);
        } else {
            reply_bulk(&c->out, ls->meta + e->meta_off, e->meta_len);
        }
    }
}

/* ---- RL.TIERS --------------------------------------------------------- */

/* limit/window pairs from argv[2] while the argument is a number. */
static bool
parse_tiers(struct conn *c, struct resp_request *req,
            struct tier_limit *tiers, uint32_t *ntiers, size_t *next,
            int64_t *max_window)
{
    size_t i = 2;
    int64_t v;
    *ntiers = 0;
    *max_window = 0;
    while (i + 1 < req->argc && num_parse_i64(req->argv[i], req->argvlen[i],
                                               &v)) {
        struct tier_limit *t = &tiers[*ntiers];
        if (*ntiers == TIERS_MAX) {
            conn_errorf(c, "ERR at most %d tiers", TIERS_MAX);
            return false;
        }
        t->limit = v;
        if (!num_parse_i64(req->argv[i + 1], req->argvlen[i + 1],
                           &t->window)) {
            conn_error(c, NOT_INTEGER);
            return false;
        }
        if (t->limit < 1 || t->window < 1) {
            conn_error(c, "ERR limit and window must be positive");
            return false;
        }
        if (t->window > srv.conf.tiers_max_window) {
            conn_errorf(c, "ERR window is above tiers-max-window (%lld)",
                        (long long)srv.conf.tiers_max_window);
            return false;
        }
        if (t->window > *max_window) {
            *max_window = t->window;
        }
        (*ntiers)++;
        i += 2;
    }
    if (*ntiers == 0) {
        conn_error(c, i + 1 < req->argc ? NOT_INTEGER : "ERR syntax error");
        return false;
    }
    *next = i;
    return true;
}

static bool
tiers_grow(struct tier_state *st)
{
    uint32_t cap = st->cap ? st->cap * 2 : 4;
    struct tier_bucket *b = mem_realloc(st->b, cap * sizeof(*b));
    if (b == NULL) {
        return false;
    }
    st->b = b;
    st->cap = cap;
    return true;
}

void
cmd_rl_tiers(struct conn *c, struct resp_request *req)
{
    static const struct tier_state empty;
    struct tier_limit tiers[TIERS_MAX];
    struct tier_params p;
    struct rl_opts o;
    struct limit_decision d;
    size_t next;
    int64_t max_window;
    bool ok;

    if (!parse_tiers(c, req, tiers, &p.ntiers, &next, &max_window) ||
        !parse_rl_options(c, req, next, RL_COST | RL_PEEK | RL_MS, &o)) {
        return;
    }
    p.tiers = tiers;
    p.cost = o.cost;
    int64_t now = clock_wall_now();
    struct store_rec *r = lookup_typed(c, req, KEY_TIERS, now, &ok);
    if (!ok) {
        return;
    }
    struct tiers_state *ts = r != NULL ? store_rec_state(r) : NULL;
    if (ts != NULL) {
        tier_expire(&ts->st, max_window, now);
    }
    if (!check_status(c, tier_decide(&p, ts ? &ts->st : &empty, now, &d))) {
        return;
    }
    if (!o.peek && !d.limited && p.cost != 0 && (p.cost > 0 || ts)) {
        if (r == NULL) {
            r = keyspace_add(c, req, KEY_TIERS, sizeof(struct tiers_state));
            if (r == NULL) {
                return;
            }
            ts = store_rec_state(r);
        }
        if (p.cost > 0 && tier_needs_bucket(&ts->st, now) &&
            ts->st.len == ts->st.cap && !tiers_grow(&ts->st)) {
            conn_error(c, OOM_ERROR);
            limit_keep_until(r, ts->st.len > 0 ? d.fresh_at : now, now);
            return;
        }
        tier_commit(&ts->st, now, p.cost);
        limit_keep_until(r, ts->st.len > 0 ? d.fresh_at : now, now);
    }
    reply_decision(c, &d, o.ms);
}

/* ---- snapshots -------------------------------------------------------- */

/* The bytes of a log or tiers state in a snapshot (see snapshot.c):
 *   log:   window_ms i64, n u32, n x (t_ms i64, cost i64, meta_len u32),
 *          then the META bytes of the entries, oldest first;
 *   tiers: n u32, n x (sec i64, count i64).
 * Host byte order: a snapshot is read back by the same build. */
static bool
put(struct keytype_buf *b, const void *p, size_t n)
{
    if (n == 0) {
        return true;    /* e.g. no META at all: p may be NULL */
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n) {
            cap *= 2;
        }
        unsigned char *q = mem_realloc(b->p, cap);
        if (q == NULL) {
            return false;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return true;
}

bool
keytype_encode_owned(const struct store_rec *r, struct keytype_buf *b)
{
    bool ok = true;
    if (r->type == KEY_LOG) {
        const struct log_state *ls = store_rec_state((struct store_rec *)r);
        uint32_t n = ls->ring.len;
        ok &= put(b, &ls->window_ms, sizeof(ls->window_ms));
        ok &= put(b, &n, sizeof(n));
        for (uint32_t i = n; i-- > 0;) {
            const struct slog_entry *e = slog_newest(&ls->ring, i);
            ok &= put(b, &e->t_ms, sizeof(e->t_ms));
            ok &= put(b, &e->cost, sizeof(e->cost));
            ok &= put(b, &e->meta_len, sizeof(e->meta_len));
        }
        for (uint32_t i = n; i-- > 0;) {
            const struct slog_entry *e = slog_newest(&ls->ring, i);
            ok &= put(b, ls->meta + e->meta_off, e->meta_len);
        }
    } else {
        const struct tiers_state *ts =
            store_rec_state((struct store_rec *)r);
        ok &= put(b, &ts->st.len, sizeof(ts->st.len));
        ok &= put(b, ts->st.b, ts->st.len * sizeof(*ts->st.b));
    }
    return ok;
}

static bool
decode_log(struct log_state *ls, struct keytype_reader *r)
{
    uint32_t n;
    if (!keytype_read(r, &ls->window_ms, sizeof(ls->window_ms)) ||
        !keytype_read(r, &n, sizeof(n)) || n == 0 ||
        (size_t)n > r->left / (2 * sizeof(int64_t) + sizeof(uint32_t))) {
        return false;
    }
    ls->ring.e = mem_calloc(n, sizeof(*ls->ring.e));
    if (ls->ring.e == NULL) {
        return false;
    }
    ls->ring.cap = ls->ring.len = n;
    uint32_t meta_total = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct slog_entry *e = &ls->ring.e[i];
        if (!keytype_read(r, &e->t_ms, sizeof(e->t_ms)) ||
            !keytype_read(r, &e->cost, sizeof(e->cost)) ||
            !keytype_read(r, &e->meta_len, sizeof(e->meta_len)) || e->cost < 1 ||
            e->meta_len > META_MAX ||
            __builtin_add_overflow(ls->ring.sum, e->cost, &ls->ring.sum)) {
            return false;
        }
        e->meta_off = meta_total;
        meta_total += e->meta_len;
    }
    if (r->left != meta_total) {
        return false;
    }
    ls->meta = mem_malloc(meta_total > 0 ? meta_total : 1);
    if (ls->meta == NULL) {
        return false;
    }
    ls->meta_len = ls->meta_cap = meta_total;
    return keytype_read(r, ls->meta, meta_total);
}

static bool
decode_tiers(struct tiers_state *ts, struct keytype_reader *r)
{
    uint32_t n;
    if (!keytype_read(r, &n, sizeof(n)) || n == 0 ||
        r->left != (size_t)n * sizeof(*ts->st.b)) {
        return false;
    }
    ts->st.b = mem_malloc(r->left);
    if (ts->st.b == NULL) {
        return false;
    }
    ts->st.cap = ts->st.len = n;
    return keytype_read(r, ts->st.b, r->left);
}

size_t
keytype_state_size(uint8_t type)
{
    switch (type) {
    case KEY_GCRA:
        return sizeof(struct gcra_state);
    case KEY_FIXED:
        return sizeof(struct fwin_state);
    case KEY_SLIDING:
        return sizeof(struct swin_state);
    case KEY_LOG:
        return sizeof(struct log_state);
    case KEY_TIERS:
        return sizeof(struct tiers_state);
    default:
        return 0;
    }
}

bool
keytype_decode_owned(struct store_rec *rec, const unsigned char *p,
                     size_t len)
{
    struct keytype_reader r = { p, len };
    if (rec->type == KEY_LOG) {
        return decode_log(store_rec_state(rec), &r);
    }
    return decode_tiers(store_rec_state(rec), &r);
}
