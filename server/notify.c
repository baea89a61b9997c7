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

struct held_event {
    const char *event;          /* a handler's or the write path's literal */
    char *key;
    size_t len;
    int db;
};

static bool holding;
static struct held_event *held;
static size_t nheld, held_cap;

void
notify_hold(void)
{
    holding = true;
}

/* Keep one event; false when memory ran out (then it goes out now). */
static bool
hold_one(const char *event, const char *key, size_t len, int db)
{
    if (nheld == held_cap) {
        size_t cap = held_cap ? held_cap * 2 : 8;
        struct held_event *h = mem_realloc(held, cap * sizeof(*h));
        if (h == NULL) {
            return false;
        }
        held = h;
        held_cap = cap;
    }
    char *copy = mem_malloc(len > 0 ? len : 1);
    if (copy == NULL) {
        return false;
    }
    memcpy(copy, key, len);
    held[nheld++] = (struct held_event){ event, copy, len, db };
    return true;
}

void
notify_unhold(bool publish)
{
    holding = false;
    for (size_t i = 0; i < nheld; i++) {
        const struct held_event *e = &held[i];
        if (publish || strcmp(e->event, "expired") == 0 ||
            strcmp(e->event, "evicted") == 0) {
            notify_publish(e->event, e->key, e->len, e->db);
        }
        mem_free(e->key);
    }
    mem_free(held);
    held = NULL;
    nheld = held_cap = 0;
}

void
notify_publish(const char *event, const char *key, size_t len, int db)
{
    if (holding && hold_one(event, key, len, db)) {
        return;
    }
    size_t elen = strlen(event);
    if (notify_flags & CONF_EVENT_KEYSPACE) {
        publish_on("__keyspace@", db, key, len, event, elen);
    }
    if (notify_flags & CONF_EVENT_KEYEVENT) {
        publish_on("__keyevent@", db, event, elen, key, len);
    }
}
