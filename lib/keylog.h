/*
 * keylog.h - a log of keys, each with a tag and a database, kept in one
 * membuf (lib/mem.h) in the order they were put: what a held change names
 * until it is let go (the keyspace events and WATCH touches held while
 * RL.ALL's parts run, server/notify.c and server/multi.c).
 */
#ifndef CELLGATE_KEYLOG_H
#define CELLGATE_KEYLOG_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/mem.h"

struct keylog_entry {
    const char *tag;            /* the caller's, kept by pointer */
    int db;
    const char *key;            /* into the log */
    size_t len;
};

/* Append one entry; false (the log unchanged) when memory ran out. */
bool keylog_put(struct membuf *log, const char *tag, int db, const char *key,
                size_t len);

/* The entry at *off, and *off past it; false at the end. */
bool keylog_next(const struct membuf *log, size_t *off,
                 struct keylog_entry *e);

#endif
