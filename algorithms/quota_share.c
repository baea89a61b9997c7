/*
 * quota_share.c - RLQS's sharing rule (see quota_share.h).
 */
#include "algorithms/quota_share.h"

#include <math.h>
#include <stdlib.h>

#include "lib/time.h"

/* A fill interval past a year is as good as none. */
#define QS_MAX_FILL_NS ((int64_t)365 * 86400 * NS_PER_SEC)

void
qs_member_init(struct qs_member *m, int64_t now_ms)
{
    m->strategy = QS_TOKEN_BUCKET;
    m->demand = 0;
    m->share = 0;
    m->interval_ms = QS_DEFAULT_INTERVAL_MS;
    m->reported_ms = now_ms;
    m->acc_count = 0;
    m->acc_ms = 0;
    m->sent.deny_all = false;
    m->sent.allow_all = false;
    m->sent.max_tokens = 0;
    m->sent.fill_ns = 0;
    m->sent.per_unit = 0;
    m->sent.unit_s = 0;
    m->sent_ms = -1;
    m->changed_ms = -1;
}

void
qs_report(struct qs_member *m, uint64_t allowed, uint64_t denied,
          int64_t elapsed_ms, int64_t now_ms)
{
    if (elapsed_ms < 0) {
        /* Unknown: the time since its last report, as seen here. */
        elapsed_ms = now_ms > m->reported_ms ? now_ms - m->reported_ms : 0;
    }
    if (elapsed_ms > QS_MAX_INTERVAL_MS) {
        elapsed_ms = QS_MAX_INTERVAL_MS;
    }
    /* Summed as doubles: counts near 2^64 do not wrap. */
    m->acc_count += (double)allowed + (double)denied;
    m->acc_ms += elapsed_ms;
    m->reported_ms = now_ms;
    /* A report much shorter than the interval (Envoy reports at once
     * when it applies a new assignment) is added to the next: a rate over
     * a few ms says little, and a share moved by it would bring another
     * such report. */
    if (m->acc_ms < m->interval_ms / 2) {
        return;
    }
    int64_t span = m->acc_ms < QS_MIN_INTERVAL_MS ? QS_MIN_INTERVAL_MS
                   : m->acc_ms > QS_MAX_INTERVAL_MS ? QS_MAX_INTERVAL_MS
                   : m->acc_ms;
    m->demand = m->acc_count * MS_PER_SEC / (double)span;
    m->interval_ms = span;
    m->acc_count = 0;
    m->acc_ms = 0;
}

double
qs_pool(enum qs_strategy strategy, uint64_t limit, int64_t unit_s,
        uint64_t others)
{
    if (unit_s <= 0 || others >= limit) {
        return 0;
    }
    if (strategy == QS_PER_UNIT) {
        /* No bucket's contents to leave room for: (N - others) over U,
         * less the slack. */
        return (double)(limit - others) * (1 - QS_SLACK) / (double)unit_s;
    }
    /* (N - others) over U plus the tenth of U the buckets hold, less the
     * slack a share may be above its part. */
    return (double)(limit - others) * QS_BURST_DIV * (1 - QS_SLACK) /
           ((double)unit_s * (QS_BURST_DIV + 1));
}

static int
by_demand(const void *a, const void *b)
{
    const struct qs_member *x = *(const struct qs_member *const *)a;
    const struct qs_member *y = *(const struct qs_member *const *)b;
    return (x->demand > y->demand) - (x->demand < y->demand);
}

void
qs_split(struct qs_member **m, size_t n, double pool)
{
    if (n == 0) {
        return;
    }
    double base = pool * QS_FLOOR / (double)n;
    double rest = pool - base * (double)n;
    qsort(m, n, sizeof(*m), by_demand);
    /* Water-filling, smallest demand first: each takes what it wants up
     * to an equal part of what is left. */
    for (size_t i = 0; i < n; i++) {
        double want = m[i]->demand > base ? m[i]->demand - base : 0;
        double level = rest / (double)(n - i);
        double give = want < level ? want : level;
        m[i]->share = base + give;
        rest -= give;
    }
    for (size_t i = 0; i < n; i++) {
        m[i]->share += rest / (double)n;    /* what nobody wanted */
    }
}

static void
assignment_clear(struct qs_assignment *a)
{
    a->allow_all = false;
    a->deny_all = false;
    a->max_tokens = 0;
    a->fill_ns = 0;
    a->per_unit = 0;
    a->unit_s = 0;
}

void
qs_bucket_for(double share, int64_t unit_s, struct qs_assignment *a)
{
    assignment_clear(a);
    /* A share of less than a request in a year is none. */
    if (!(share > 0) || unit_s <= 0 ||
        share * (double)QS_MAX_FILL_NS / NS_PER_SEC < 1) {
        a->deny_all = true;
        return;
    }
    /* A tenth of a unit's worth of tokens, filled back at the share's
     * rate: max_tokens / fill_interval = share. Two at least (one when the
     * share is under two a unit): a bucket of one token denies a request
     * that comes a moment before the token, though the rate is met. */
    double tokens = floor(share * (double)unit_s / QS_BURST_DIV);
    double least = share * (double)unit_s >= 2 ? 2 : 1;
    if (tokens < least) {
        tokens = least;
    } else if (tokens > UINT32_MAX) {
        tokens = UINT32_MAX;
    }
    double fill = tokens / share * NS_PER_SEC;
    a->max_tokens = (uint32_t)tokens;
    a->fill_ns = fill >= (double)QS_MAX_FILL_NS ? QS_MAX_FILL_NS
                 : fill < 1 ? 1 : (int64_t)fill;
}

void
qs_per_unit_for(double share, int64_t unit_s, struct qs_assignment *a)
{
    assignment_clear(a);
    if (!(share > 0) || unit_s <= 0) {
        a->deny_all = true;             /* a share of nothing */
        return;
    }
    /* Rounded down, so the shares never sum past the pool (a millionth
     * of a request spared for the split's rounding: 97.99999999999999 is
     * 98), but one at least: a share that is not 0 lets its client
     * through now and then (the rounding a bound counts, one per client). */
    double n = floor(share * (double)unit_s + 1e-6);
    a->per_unit = n < 1 ? 1 : n > (double)UINT32_MAX ? UINT32_MAX
                                                      : (uint64_t)n;
    a->unit_s = unit_s;
}

void
qs_assignment_for(const struct qs_member *m, int64_t unit_s,
                  struct qs_assignment *a)
{
    if (m->strategy == QS_PER_UNIT) {
        qs_per_unit_for(m->share, unit_s, a);
    } else {
        qs_bucket_for(m->share, unit_s, a);
    }
}

double
qs_rate(const struct qs_assignment *a)
{
    if (a->allow_all) {
        return -1;
    }
    if (a->per_unit > 0 && a->unit_s > 0) {
        return (double)a->per_unit / (double)a->unit_s;
    }
    if (a->deny_all || a->fill_ns <= 0) {
        return 0;
    }
    return (double)a->max_tokens * NS_PER_SEC / (double)a->fill_ns;
}

bool
qs_differs(const struct qs_assignment *want, const struct qs_assignment *sent,
           bool *fell)
{
    double x = qs_rate(want), y = qs_rate(sent);
    *fell = false;
    if (want->allow_all != sent->allow_all ||
        want->deny_all != sent->deny_all) {
        *fell = x < y || want->deny_all;
        return true;
    }
    if (want->allow_all || want->deny_all) {
        return false;
    }
    if ((want->per_unit > 0) != (sent->per_unit > 0)) {
        *fell = x < y;                  /* the strategy changed */
        return true;
    }
    *fell = x < y * (1 - QS_SLACK);
    return *fell || x > y * (1 + QS_CHANGE);
}

/* May m get a new bucket now: never sent one, or the last change is an
 * interval old (a tenth of it spared for the reports' jitter)? */
static bool
may_change(const struct qs_member *m, int64_t now_ms)
{
    return m->changed_ms < 0 ||
           now_ms - m->changed_ms >= m->interval_ms - m->interval_ms / 10;
}

void
qs_choose(const struct qs_member *m, int64_t unit_s, int64_t now_ms,
          struct qs_assignment *out)
{
    struct qs_assignment want;
    bool fell;
    qs_assignment_for(m, unit_s, &want);
    if (m->sent_ms < 0 || (qs_differs(&want, &m->sent, &fell) &&
                           (fell || may_change(m, now_ms)))) {
        *out = want;
    } else {
        *out = m->sent;
    }
}

bool
qs_same(const struct qs_assignment *a, const struct qs_assignment *b)
{
    return a->allow_all == b->allow_all && a->deny_all == b->deny_all &&
           a->max_tokens == b->max_tokens && a->fill_ns == b->fill_ns &&
           a->per_unit == b->per_unit && a->unit_s == b->unit_s;
}

void
qs_sent(struct qs_member *m, const struct qs_assignment *a, int64_t now_ms)
{
    if (m->sent_ms < 0 || !qs_same(a, &m->sent)) {
        m->changed_ms = now_ms;
    }
    m->sent = *a;
    m->sent_ms = now_ms;
}

int64_t
qs_ttl_ms(const struct qs_member *m)
{
    return m->interval_ms * QS_TTL_INTERVALS;
}

bool
qs_push_due(const struct qs_member *m, int64_t unit_s, int64_t now_ms)
{
    struct qs_assignment want;
    bool fell;
    if (m->sent_ms < 0) {
        return false;                   /* its first comes with a reply */
    }
    if (now_ms - m->sent_ms >= qs_ttl_ms(m) / 2) {
        return true;                    /* refreshed before it lapses */
    }
    qs_assignment_for(m, unit_s, &want);
    return qs_differs(&want, &m->sent, &fell) &&
           (fell || may_change(m, now_ms));
}

bool
qs_stale(const struct qs_member *m, int64_t now_ms)
{
    return now_ms - m->reported_ms > m->interval_ms * QS_STALE_INTERVALS;
}
