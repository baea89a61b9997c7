/*
 * notify.c - see notify.h.
 */
#include "server/notify.h"

#include <stdio.h>
#include <string.h>

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

void
notify_publish(const char *event, const char *key, size_t len, int db)
{
    char buf[256];
    char *owned;
    size_t clen;
    size_t elen = strlen(event);
    if (notify_flags & CONF_EVENT_KEYSPACE) {
        const char *ch = channel(buf, sizeof(buf), "__keyspace@", db, key,
                                 len, &clen, &owned);
        if (ch != NULL) {
            (void)pubsub_publish(ch, clen, event, elen);
        }
        mem_free(owned);
    }
    if (notify_flags & CONF_EVENT_KEYEVENT) {
        const char *ch = channel(buf, sizeof(buf), "__keyevent@", db, event,
                                 elen, &clen, &owned);
        if (ch != NULL) {
            (void)pubsub_publish(ch, clen, key, len);
        }
        mem_free(owned);
    }
}
