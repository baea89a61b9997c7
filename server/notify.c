/*
 * notify.c - see notify.h.
 */
#include "server/notify.h"

#include <stdio.h>
#include <string.h>

#include "lib/keylog.h"
#include "lib/mem.h"
#include "server/pubsub.h"

unsigned notify_flags;

void
notify_configure(const char *events)
{
    unsigned flags = conf_events_flags(events);
    notify_flags = flags & (CONF_EVENT_KEYSPACE | CONF_EVENT_KEYEVENT)
                       ? flags : 0;
}

/* "<prefix><db>__:" then tail, into buf when it fits (NUL-free bytes),
 * else into a block the caller frees; NULL when memory ran out. */
static char *
channel(char *buf, size_t cap, const char *prefix, int db,
        const char *tail, size_t tlen, size_t *len, char **owned)
{
    char head[48];
    int hlen = snprintf(head, sizeof(head), "%s%d__:", prefix, db);
    size_t n = (size_t)hlen + tlen;
    char *p = buf;
    *owned = NULL;
    if (n > cap) {
        p = *owned = mem_malloc(n);
        if (p == NULL) {
            return NULL;
        }
    }
    memcpy(p, head, (size_t)hlen);
    memcpy(p + hlen, tail, tlen);
    *len = n;
    return p;
}

/* One message on <prefix><db>__:<name>, a channel of both families. */
static void
publish_on(const char *prefix, int db, const char *name, size_t nlen,
           const char *msg, size_t mlen)
{
    char buf[256];
    char *owned;
    size_t clen;
    const char *ch = channel(buf, sizeof(buf), prefix, db, name, nlen, &clen,
                             &owned);
    if (ch != NULL) {
        (void)pubsub_publish(ch, clen, msg, mlen);
    }
    mem_free(owned);
}

/* ---- held events ---------------------------------------------------- */

/* Held: each event's name (a handler's or the write path's literal) as
 * its entry's tag. */
static bool holding;
static struct membuf held;

void
notify_hold(void)
{
    holding = true;
}

void
notify_unhold(bool (*undone)(int db, const char *key, size_t len, void *arg),
              void *arg)
{
    struct keylog_entry e;
    holding = false;
    for (size_t off = 0; keylog_next(&held, &off, &e);) {
        if (undone == NULL || !undone(e.db, e.key, e.len, arg)) {
            notify_publish(e.tag, e.key, e.len, e.db);
        }
    }
    mem_free(held.p);
    held = (struct membuf){ 0 };
}

void
notify_publish(const char *event, const char *key, size_t len, int db)
{
    if (holding && keylog_put(&held, event, db, key, len)) {
        return;             /* (out of memory, it goes out now) */
    }
    size_t elen = strlen(event);
    if (notify_flags & CONF_EVENT_KEYSPACE) {
        publish_on("__keyspace@", db, key, len, event, elen);
    }
    if (notify_flags & CONF_EVENT_KEYEVENT) {
        publish_on("__keyevent@", db, event, elen, key, len);
    }
}
