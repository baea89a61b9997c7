/*
 * blocked.h - clients blocked on keys (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH,
 * BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP), as Redis 7.0's blocked.c keeps
 * them: which clients wait on which key of which database, first come
 * first served, the keys a write made ready, and the timeouts. See
 * blocked.c for the design.
 */
#ifndef CELLGATE_BLOCKED_H
#define CELLGATE_BLOCKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/resp.h"

struct conn;

/* What a client waits for: a list or a sorted set at one of its keys, or
 * a lease's slot (RL.ACQUIRE ... WAIT). A ready key serves only the
 * clients waiting for its type. */
enum blocked_kind { BLOCKED_LIST, BLOCKED_ZSET, BLOCKED_LEASE };

/* What serving one waiting client on a ready key came to. */
enum blocked_served {
    BLOCKED_NOT_SERVED,     /* the key is not of its kind: it waits on */
    BLOCKED_SERVED,         /* answered (an element, or an error) */
    BLOCKED_SERVED_GONE,    /* answered, and the key is gone (emptied) */
    BLOCKED_ABSENT          /* the key is gone: nobody can be served */
};

/* The handler's part: answer c's blocked request (req, its own copy of
 * the arguments) from key of c's database, selected meanwhile. */
typedef enum blocked_served (*blocked_serve_fn)(struct conn *c,
                                                const struct resp_request *req,
                                                const char *key, size_t len);

/* Clients blocked on keys now, and keys waiting to be served: a write's
 * and a command's whole test when nobody waits. */
extern size_t blocked_nclients;
extern size_t blocked_nready;

/* c waits on req's nkeys keys from argv[first] (its database's), for
 * timeout_ms (0: for ever) or until serve() answers it; c's state is
 * CONN_BLOCKED from then on. false (nothing changed) when memory runs
 * out. */
bool blocked_wait(struct conn *c, const struct resp_request *req,
                  size_t first, size_t nkeys, int64_t timeout_ms,
                  enum blocked_kind kind, blocked_serve_fn serve);

/* A wait that time may end before its timeout, with an answer of its own
 * at the timeout (RL.ACQUIRE ... WAIT: a lease ends, and no write says
 * so). wake(c, req): in how many ms (>= 1) c's keys may be ready by time
 * alone, or -1 for never; then they are signalled and served as after a
 * write (blocked_set_served()'s function told of each client answered),
 * and asked again while c waits. timed_out(c, req): c's answer at its
 * timeout (and CLIENT UNBLOCK TIMEOUT), instead of a null array. */
struct blocked_timed {
    int64_t (*wake)(struct conn *c, const struct resp_request *req);
    void (*timed_out)(struct conn *c, const struct resp_request *req);
};

/* After blocked_wait(): c's wait is timed so (t outlives the wait).
 * false when memory runs out (c still waits, untimed). */
bool blocked_set_timed(struct conn *c, const struct blocked_timed *t);

/* The function told of a client served outside a command (a timed wake),
 * as blocked_serve()'s: the connection layer's, set once at start. */
void blocked_set_served(void (*served)(struct conn *c));

/* Is c waiting on keys? */
bool blocked_on_keys(const struct conn *c);

/* The blocking command c waits in (CLIENT LIST's argv-mem), or NULL. */
const struct resp_request *blocked_request(const struct conn *c);

/* Answer c as a timeout does (a null array), and end its wait. */
void blocked_time_out(struct conn *c);

/* End c's wait, its answer written already (CLIENT UNBLOCK ERROR). */
void blocked_end(struct conn *c);

/* c goes (closed, killed): out of every queue, nothing answered. */
void blocked_forget(struct conn *c);

/* The write path: key of database db may now hold a list or a sorted
 * set (made, renamed, moved, copied); every key of db may (SWAPDB). */
void blocked_signal(int db, const char *key, size_t len);
void blocked_signal_db(int db);

/* After a command (an EXEC, a script) ran: serve the clients waiting on
 * the keys it made ready, each in the order they blocked, until the keys
 * run out; served(c) is told of each client answered (the connection
 * layer ties its reply to the journal). */
void blocked_serve(void (*served)(struct conn *c));

/* INFO: clients blocked on keys, and those of them with a timeout. */
size_t blocked_with_timeout(void);

#endif
