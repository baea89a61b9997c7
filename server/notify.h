/*
 * notify.h - keyspace notifications (notify-keyspace-events): what Redis
 * 7.0 publishes when a key changes, `__keyspace@<db>__:<key>` with the
 * event's name and `__keyevent@<db>__:<event>` with the key.
 *
 * The event's name is the command's (Redis names "lpush", "rename_from",
 * "zincr" per command), so each handler says it right after its write,
 * in Redis's order; the write path says what no handler sees: "new"
 * when a key is made, "expired" when the wheel or a lookup frees one
 * whose time came, "evicted" under maxmemory, "keymiss" when a read
 * finds nothing. Messages go out at once (pubsub_publish() into each
 * subscriber's output buffer), so a transaction's or a script's come in
 * the order of their commands, as Redis's do.
 *
 * Off, it costs one test of notify_flags per call: notify_configure()
 * leaves it 0 unless K or E is set (without either Redis publishes
 * nothing), and the test is inline. Keys put back from the journal or a
 * primary's stream go in through keyspace_apply.c and publish nothing.
 */
#ifndef CELLGATE_NOTIFY_H
#define CELLGATE_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/special.h"

/* The classes, Redis's bits (conf/special.h). */
#define NOTIFY_GENERIC CONF_EVENT_GENERIC    /* g */
#define NOTIFY_STRING CONF_EVENT_STRING      /* $ */
#define NOTIFY_LIST CONF_EVENT_LIST          /* l */
#define NOTIFY_SET CONF_EVENT_SET            /* s */
#define NOTIFY_HASH CONF_EVENT_HASH          /* h */
#define NOTIFY_ZSET CONF_EVENT_ZSET          /* z */
#define NOTIFY_EXPIRED CONF_EVENT_EXPIRED    /* x */
#define NOTIFY_EVICTED CONF_EVENT_EVICTED    /* e */
#define NOTIFY_KEY_MISS CONF_EVENT_KEY_MISS  /* m */
#define NOTIFY_NEW CONF_EVENT_NEW            /* n */

/* The classes published now: 0 when notifications are off. */
extern unsigned notify_flags;

/* notify-keyspace-events changed (start-up, CONFIG SET). */
void notify_configure(const char *events);

/* Publish event for key in database db (its class is on). */
void notify_publish(const char *event, const char *key, size_t len, int db);

/* RL.ALL's parts: from notify_hold() on, events are kept in order instead
 * of published; notify_unhold() publishes them, but those of the keys
 * undone(db, key, len, arg) says were put back as they were (NULL:
 * none). */
void notify_hold(void);
void notify_unhold(bool (*undone)(int db, const char *key, size_t len,
                                  void *arg),
                   void *arg);

/* A key of database db had event (of class type): published when that
 * class is on. */
static inline void
notify_key(unsigned type, const char *event, const char *key, size_t len,
           int db)
{
    if (__builtin_expect((notify_flags & type) != 0, 0)) {
        notify_publish(event, key, len, db);
    }
}

#endif
