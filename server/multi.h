/*
 * multi.h - transactions: the commands a client queues between MULTI and
 * EXEC, and the keys it WATCHes, with Redis 7's semantics (multi.c in
 * Redis): a command refused while queuing (unknown, wrong arity, not
 * allowed in a transaction, not served here) makes EXEC answer
 * -EXECABORT and run nothing; a watched key written, deleted, expired,
 * evicted or flushed since the WATCH makes EXEC answer a null array.
 *
 * The dispatcher (cmd.c) queues and runs; the MULTI/EXEC/DISCARD/WATCH/
 * UNWATCH commands are cmd_multi.c; the keyspace reports every change of
 * a key through multi_touch() (cheap when nothing is watched).
 */
#ifndef CELLGATE_MULTI_H
#define CELLGATE_MULTI_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/resp.h"

struct conn;
struct cmd;

enum multi_flag {
    MULTI_OPEN = 1,         /* between MULTI and EXEC/DISCARD */
    MULTI_DIRTY_EXEC = 2,   /* a command was refused while queuing */
    MULTI_DIRTY_CAS = 4,    /* a watched key changed */
    MULTI_RUNNING = 8       /* EXEC runs the queue (CLIENT LIST: cmd=exec) */
};

/* One queued command: its table row and a copy of its arguments (one
 * allocation, each argument NUL-terminated like a parsed request's). */
struct multi_cmd {
    struct cmd *cmd;
    struct resp_request req;
};

struct dict_entry;

struct multi {
    unsigned flags;
    struct multi_cmd *cmds;
    size_t ncmds;
    size_t cap;
    size_t bytes;               /* the queue's memory (query-buffer limit) */
    struct dict_entry **watched;    /* the keys' entries in the registry */
    size_t nwatched;
    size_t capwatched;
};

/* Is c between MULTI and EXEC? */
static inline bool
multi_open(const struct conn *c, const struct multi *m)
{
    (void)c;
    return m != NULL && (m->flags & MULTI_OPEN);
}

/* MULTI: open a transaction on c. false when memory ran out. */
bool multi_begin(struct conn *c);

/* Queue a command (its arguments copied). false when memory ran out (the
 * transaction is then flagged dirty, as a refused command). A transaction
 * already dirty queues nothing, as Redis: it will not run. */
bool multi_queue(struct conn *c, struct cmd *cmd,
                 const struct resp_request *req);

/* A command was refused while c was queuing: EXEC will abort. */
void multi_flag_refused(struct conn *c);

/* End the transaction: free the queue, forget the watched keys and the
 * flags (EXEC, DISCARD, RESET, a disconnect). */
void multi_discard(struct conn *c);

/* WATCH key (in the selected database): false when memory ran out. */
bool multi_watch(struct conn *c, const char *key, size_t len);

/* UNWATCH: forget every watched key (and the dirty mark). */
void multi_unwatch(struct conn *c);

/* Have c's watched keys changed? Also looks each key up, so one that has
 * expired since the WATCH is found (and counts as changed). */
bool multi_watched_changed(struct conn *c);

/* A key of database db changed (written, deleted, expired, evicted,
 * flushed): mark the clients watching it. */
void multi_touch(int db, const char *key, size_t len);

/* RL.ALL's parts: from multi_touch_hold() on, the touches of watched keys
 * are kept instead of marking their watchers; multi_touch_unhold() then
 * marks them, but for the keys undone(db, key, len, arg) says were put
 * back as they were (NULL: none). */
void multi_touch_hold(void);
void multi_touch_unhold(bool (*undone)(int db, const char *key, size_t len,
                                       void *arg),
                        void *arg);

/* SWAPDB a b: the watchers of keys that exist in either database hear
 * (the key now holds the other database's state), as Redis. */
void multi_touch_databases(int a, int b);

/* The memory a client's transaction holds (CLIENT LIST, the query-buffer
 * limit). */
size_t multi_memory(const struct conn *c);

#endif
