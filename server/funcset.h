/*
 * funcset.h - FUNCTION's libraries as the journal, the snapshot and the
 * replicas keep them: the whole set, each library's code, in one record.
 *
 * The libraries live in the script wing (script/function.c), above the
 * core; the core's writers and loaders reach them through the two calls
 * the wing hands over at start-up (funcset_set_ops()). A change to the set
 * (FUNCTION LOAD, DELETE, FLUSH, RESTORE) is rare and small, so its record
 * holds the whole set after it (JOURNAL_FUNCTIONS, journal.h): replaying
 * it twice changes nothing, and no record kind per command is needed.
 *
 * The set's bytes: for each library, u32 len (host order) then its code,
 * the "#!lua name=..." line included; nothing for an empty set.
 */
#ifndef CELLGATE_FUNCSET_H
#define CELLGATE_FUNCSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"

struct funcset_ops {
    /* The set's bytes appended to b; false when memory ran out. */
    bool (*encode)(struct membuf *b);
    /* The set replaced by the one in p; 0, or -1 with err. */
    int (*replace)(const unsigned char *p, size_t len, char *err,
                   size_t errlen);
};

void funcset_set_ops(const struct funcset_ops *ops);

/* The set's bytes (nothing without the wing). */
bool funcset_encode(struct membuf *b);

/* A snapshot's or a record's set applied. 0, or -1 with err. */
int funcset_replace(const unsigned char *p, size_t len, char *err,
                    size_t errlen);

/* The set changed: its record for the journal and the replicas (while
 * they take records), and one change for the save rules. */
void funcset_changed(void);

/* The changes so far (the save rules add them to the keys'). */
uint64_t funcset_changes(void);

#endif
