/*
 * lease.c - see lease.h.
 */
#include "algorithms/lease.h"

#include <string.h>

bool
lease_next(const struct lease_set *s, uint32_t *off, struct lease_entry *e)
{
    if (*off + (uint64_t)LEASE_ENTRY_HEAD > s->used) {
        return false;
    }
    const unsigned char *p = s->buf + *off;
    e->off = *off;
    memcpy(&e->end_ms, p, sizeof(e->end_ms));
    memcpy(&e->len, p + sizeof(e->end_ms), sizeof(e->len));
    e->holder = (const char *)p + LEASE_ENTRY_HEAD;
    *off += (uint32_t)lease_entry_size(e->len);
    return true;
}

bool
lease_find(const struct lease_set *s, const char *holder, size_t len,
           struct lease_entry *e)
{
    uint32_t off = 0;
    while (lease_next(s, &off, e)) {
        if (e->len == len && memcmp(e->holder, holder, len) == 0) {
            return true;
        }
    }
    return false;
}

uint32_t
lease_live(const struct lease_set *s, int64_t now_ms, int64_t *first,
           int64_t *last)
{
    struct lease_entry e;
    uint32_t off = 0, live = 0;
    int64_t lo = INT64_MAX, hi = now_ms;
    while (lease_next(s, &off, &e)) {
        if (e.end_ms <= now_ms) {
            continue;
        }
        live++;
        lo = e.end_ms < lo ? e.end_ms : lo;
        hi = e.end_ms > hi ? e.end_ms : hi;
    }
    if (first != NULL) {
        *first = live > 0 ? lo : now_ms;
    }
    if (last != NULL) {
        *last = hi;
    }
    return live;
}

void
lease_remove(struct lease_set *s, uint32_t off)
{
    struct lease_entry e;
    uint32_t next = off;
    if (!lease_next(s, &next, &e)) {
        return;
    }
    memmove(s->buf + off, s->buf + next, s->used - next);
    s->used -= next - off;
    s->n--;
}

uint32_t
lease_prune(struct lease_set *s, int64_t now_ms)
{
    struct lease_entry e;
    uint32_t off = 0, dropped = 0;
    uint32_t to = 0;        /* kept entries slide down to here */
    while (lease_next(s, &off, &e)) {
        uint32_t size = off - e.off;
        if (e.end_ms <= now_ms) {
            dropped++;
            continue;
        }
        if (to != e.off) {
            memmove(s->buf + to, s->buf + e.off, size);
        }
        to += size;
    }
    s->used = to;
    s->n -= dropped;
    return dropped;
}

void
lease_set_end(struct lease_set *s, uint32_t off, int64_t end_ms)
{
    memcpy(s->buf + off, &end_ms, sizeof(end_ms));
}

bool
lease_append(struct lease_set *s, const char *holder, size_t len,
             int64_t end_ms)
{
    if (len < 1 || len > LEASE_HOLDER_MAX ||
        s->used + (uint64_t)lease_entry_size(len) > s->cap) {
        return false;
    }
    uint16_t l16 = (uint16_t)len;
    unsigned char *p = s->buf + s->used;
    memcpy(p, &end_ms, sizeof(end_ms));
    memcpy(p + sizeof(end_ms), &l16, sizeof(l16));
    memcpy(p + LEASE_ENTRY_HEAD, holder, len);
    s->used += (uint32_t)lease_entry_size(len);
    s->n++;
    return true;
}

enum limit_status
lease_decide(const struct lease_set *s, int64_t now_ms, int64_t limit,
             int64_t lease_ms, const char *holder, size_t len,
             struct lease_decision *d)
{
    int64_t end, first, last;
    struct lease_entry e;
    if (limit < 1 || limit > LEASE_LIMIT_MAX || lease_ms < 1) {
        return LIMIT_EINVAL;
    }
    if (!limit_add(now_ms, lease_ms, &end)) {
        return LIMIT_EOVERFLOW;
    }
    uint32_t live = lease_live(s, now_ms, &first, &last);
    bool held = holder != NULL && lease_find(s, holder, len, &e) &&
                e.end_ms > now_ms;
    *d = (struct lease_decision){ .limit = limit, .held_off = -1 };
    if (held) {
        d->held_off = e.off;
        d->end_ms = e.end_ms > end ? e.end_ms : end;
    } else if (live < limit) {
        d->end_ms = end;
        live++;
    } else {
        d->limited = true;
        d->remaining = 0;
        d->retry_after_ms = first - now_ms;
        d->reset_after_ms = last - now_ms;
        return LIMIT_OK;
    }
    d->remaining = limit_remaining(limit, live);
    d->retry_after_ms = -1;
    d->reset_after_ms = d->end_ms - now_ms;
    return LIMIT_OK;
}
