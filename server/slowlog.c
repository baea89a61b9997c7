/*
 * slowlog.c - see slowlog.h. Entries live in a ring sized by
 * slowlog-max-len; each owns one allocation holding its argument copies.
 */
#include "server/slowlog.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/mem.h"
#include "lib/time.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/redact.h"
#include "server/server.h"

#define SLOWLOG_MAX_ARGS 32     /* as Redis: the rest is summarised */
#define SLOWLOG_MAX_ARGLEN 128

static struct slow_entry **ring;    /* oldest first, newest last */
static size_t ring_len;
static size_t ring_cap;
static uint64_t next_id;

static void
entry_free(struct slow_entry *e)
{
    if (e != NULL) {
        for (int i = 0; i < e->argc; i++) {
            mem_free(e->argv[i]);
        }
        mem_free(e->argv);
        mem_free(e->argvlen);
        mem_free(e);
    }
}

/* Copy one argument, cut as Redis does: "... (N more bytes)". */
static bool
copy_arg(struct slow_entry *e, int i, const char *s, size_t len)
{
    char tail[48] = "";
    size_t keep = len;
    if (len > SLOWLOG_MAX_ARGLEN) {
        keep = SLOWLOG_MAX_ARGLEN;
        snprintf(tail, sizeof(tail), "... (%zu more bytes)",
                 len - SLOWLOG_MAX_ARGLEN);
    }
    size_t tlen = strlen(tail);
    e->argv[i] = mem_malloc(keep + tlen + 1);
    if (e->argv[i] == NULL) {
        return false;
    }
    memcpy(e->argv[i], s, keep);
    memcpy(e->argv[i] + keep, tail, tlen + 1);
    e->argvlen[i] = keep + tlen;
    return true;
}

static struct slow_entry *
entry_create(const struct conn *c, const struct resp_request *req,
             uint64_t usec)
{
    struct slow_entry *e = mem_calloc(1, sizeof(*e));
    size_t argc = req->argc;
    if (e == NULL) {
        return NULL;
    }
    if (argc > SLOWLOG_MAX_ARGS) {
        argc = SLOWLOG_MAX_ARGS;
    }
    e->argv = mem_calloc(argc, sizeof(*e->argv));
    e->argvlen = mem_calloc(argc, sizeof(*e->argvlen));
    if (e->argv == NULL || e->argvlen == NULL) {
        entry_free(e);
        return NULL;
    }
    for (size_t i = 0; i < argc; i++) {
        bool ok;
        if (i == SLOWLOG_MAX_ARGS - 1 && req->argc > SLOWLOG_MAX_ARGS) {
            char more[48];
            int n = snprintf(more, sizeof(more), "... (%zu more arguments)",
                             req->argc - SLOWLOG_MAX_ARGS + 1);
            ok = copy_arg(e, (int)i, more, (size_t)n);
        } else if (redact_arg(req, i)) {
            ok = copy_arg(e, (int)i, "(redacted)", 10);
        } else {
            ok = copy_arg(e, (int)i, req->argv[i], req->argvlen[i]);
        }
        e->argc = (int)i + 1;
        if (!ok) {
            entry_free(e);
            return NULL;
        }
    }
    e->id = next_id++;
    e->time = clock_wall_us() / US_PER_SEC;
    e->usec = usec;
    snprintf(e->addr, sizeof(e->addr), "%s", c->addr);
    snprintf(e->name, sizeof(e->name), "%s", c->name ? c->name : "");
    return e;
}

/* Keep at most `max` entries, dropping the oldest. */
static void
trim(size_t max)
{
    if (ring_len <= max) {
        return;
    }
    size_t drop = ring_len - max;
    for (size_t i = 0; i < drop; i++) {
        entry_free(ring[i]);
    }
    memmove(ring, ring + drop, max * sizeof(*ring));
    ring_len = max;
}

/* Keep the entry of a slow command (out of line: slowlog_note() is on
 * every command's path and should not pay for this part's registers). */
__attribute__((noinline)) static void
record(const struct conn *c, const struct resp_request *req, uint64_t usec,
       size_t max)
{
    trim(max - 1);
    if (ring_cap < max) {
        struct slow_entry **r = mem_realloc(ring, max * sizeof(*r));
        if (r == NULL) {
            return;
        }
        ring = r;
        ring_cap = max;
    }
    struct slow_entry *e = entry_create(c, req, usec);
    if (e != NULL) {
        ring[ring_len++] = e;
    }
}

void
slowlog_note(const struct conn *c, const struct resp_request *req,
             uint64_t usec)
{
    int64_t slower = srv.conf.slowlog_log_slower_than;
    size_t max = (size_t)srv.conf.slowlog_max_len;
    if (slower < 0 || usec < (uint64_t)slower || max == 0) {
        return;
    }
    record(c, req, usec, max);
}

void
slowlog_teardown(void)
{
    trim(0);
    mem_free(ring);
    ring = NULL;
    ring_cap = 0;
}

size_t
slowlog_len(void)
{
    return ring_len;
}

const struct slow_entry *
slowlog_newest(size_t i)
{
    return i < ring_len ? ring[ring_len - 1 - i] : NULL;
}

void
slowlog_reset(void)
{
    trim(0);
}
