/*
 * blocked.c - see blocked.h.
 *
 * A registry per database maps each key someone waits on to its waiters
 * in the order they blocked (a lib/dict of the server's memory, keyed
 * SipHash as every table whose names clients choose; the entry's owner
 * word holds the queue, a TAILQ, so a client leaving any place of it
 * costs O(1)). A blocked client owns a struct blocked (c->blocked): its
 * database, its kind, its own copy of the request's arguments (the
 * parser's go with the next request), the handler's serve function, a
 * queue node per distinct key, and its timer.
 *
 * Readiness. The write path (keyspace.c) signals a key that may now hold
 * a list or a sorted set: a collection made, a key renamed, moved or
 * copied in, a database swapped. With nobody blocked that is one test of
 * blocked_nclients; else a key somebody waits on is listed once (its
 * queue's ready flag) with a copy of its name, as Redis's ready_keys.
 * Nothing is served inside the command: the connection layer calls
 * blocked_serve() once the command, the whole EXEC or the whole script
 * has returned, as Redis's handleClientsBlockedOnKeys() runs after
 * call(). Serving takes the ready keys in the order they were signalled,
 * and each key's waiters first come, first served, through the handler's
 * serve function (the pop itself and its reply, through the one write
 * path, so the journal and the replicas see the pop's effect and never
 * the blocking command) until the key is gone; a BLMOVE's push makes its
 * destination ready in turn, served in the same call.
 *
 * Answers. A served or timed out client's reply is appended to its output
 * and the client is marked (CLIENT_UNBLOCKED, client_note_fed()): the
 * connection layer writes it and runs the rest of its pipeline, as for
 * WAIT, so nothing here calls the connection layer. A client waits for
 * nothing in its sleep: its timeout is a libuv timer on the main loop
 * (none for 0), stopped and closed when the wait ends for any reason.
 */
#include "server/blocked.h"

#include <string.h>
#include <sys/queue.h>

#include <uv.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/keyspace_db.h"
#include "server/server.h"

size_t blocked_nclients;
size_t blocked_nready;

/* One client in one key's queue. */
struct waiter {
    TAILQ_ENTRY(waiter) link;
    struct conn *c;
    struct dict_entry *e;       /* the key's entry in its registry */
};

TAILQ_HEAD(waiter_queue, waiter);

/* The owner of a registry entry: the key's waiters. */
struct waiters {
    int db;
    bool ready;                 /* listed in `ready` already */
    struct waiter_queue q;
};

struct blocked {
    int db;
    enum blocked_kind kind;
    blocked_serve_fn serve;
    uv_timer_t *timer;          /* NULL: no timeout */
    const struct blocked_timed *timed;  /* NULL: a pop's wait */
    uv_timer_t *wake;           /* timed's wake-up, or NULL */
    struct resp_request req;    /* a copy of the arguments (in `bytes`) */
    size_t nkeys;               /* distinct keys, one waiter each */
    bool counted;               /* in blocked_nclients */
    struct waiter w[];
};

/* A key signalled ready: its database and a copy of its name. */
struct ready_key {
    struct ready_key *next;
    int db;
    size_t len;
    char key[];
};

static struct dict *registry;   /* srv.ndbs of them, or NULL */
static void (*served_hook)(struct conn *c);
static struct ready_key *ready, **ready_tail = &ready;
static size_t ntimed;

/* ---- the registry ------------------------------------------------------ */

static struct dict_entry *
find_key(int db, const char *key, size_t len)
{
    if (registry == NULL || db < 0 || (size_t)db >= srv.ndbs) {
        return NULL;
    }
    return dict_find(&registry[db], key, len);
}

/* key's queue in db, made when absent; NULL when memory runs out. */
static struct dict_entry *
queue_of(int db, const char *key, size_t len)
{
    struct dict_entry *e = find_key(db, key, len);
    if (e != NULL) {
        return e;
    }
    if (registry == NULL) {
        registry = mem_malloc(srv.ndbs * sizeof(*registry));
        if (registry == NULL) {
            return NULL;
        }
        for (size_t i = 0; i < srv.ndbs; i++) {
            registry[i] = (struct dict)DICT_SERVER;
        }
    }
    struct waiters *ws = mem_malloc(sizeof(*ws));
    if (ws == NULL || len > UINT32_MAX ||
        (e = dict_add(&registry[db], key, (uint32_t)len, NULL, 0)) == NULL) {
        mem_free(ws);
        return NULL;
    }
    ws->db = db;
    ws->ready = false;
    TAILQ_INIT(&ws->q);
    e->owner.p = ws;
    return e;
}

/* Take w out of its key's queue; the key goes with its last waiter. */
static void
leave_queue(struct waiter *w)
{
    struct waiters *ws = w->e->owner.p;
    TAILQ_REMOVE(&ws->q, w, link);
    if (TAILQ_EMPTY(&ws->q)) {
        dict_remove(&registry[ws->db], w->e);
        mem_free(ws);
    }
}

/* ---- blocking ----------------------------------------------------------- */

/* A copy of req's arguments in one block after b's waiters. */
static struct blocked *
new_blocked(const struct resp_request *req, size_t nkeys)
{
    size_t bytes = 0;
    for (size_t i = 0; i < req->argc; i++) {
        bytes += req->argvlen[i] + 1;
    }
    size_t head = sizeof(struct blocked) + nkeys * sizeof(struct waiter);
    size_t vec = req->argc * (sizeof(char *) + sizeof(size_t));
    struct blocked *b = mem_calloc(1, head + vec + bytes);
    if (b == NULL) {
        return NULL;
    }
    char **argv = (char **)((char *)b + head);
    size_t *argvlen = (size_t *)(argv + req->argc);
    char *p = (char *)(argvlen + req->argc);
    for (size_t i = 0; i < req->argc; i++) {
        memcpy(p, req->argv[i], req->argvlen[i]);
        p[req->argvlen[i]] = '\0';
        argv[i] = p;
        argvlen[i] = req->argvlen[i];
        p += req->argvlen[i] + 1;
    }
    b->req = (struct resp_request){ req->argc, argv, argvlen, 0 };
    return b;
}

static void
free_timer(uv_handle_t *h)
{
    mem_free(h);
}

static void
on_timeout(uv_timer_t *t)
{
    blocked_time_out(t->data);
}

/* c's timer for timeout_ms (0: none); false when memory runs out. */
static bool
start_timer(struct conn *c, struct blocked *b, int64_t timeout_ms)
{
    if (timeout_ms <= 0) {
        return true;
    }
    b->timer = mem_malloc(sizeof(*b->timer));
    if (b->timer == NULL) {
        return false;
    }
    uv_timer_init(srv.loop, b->timer);
    b->timer->data = c;
    /* libuv clamps a deadline past its clock's range: for ever, as a
     * timeout past Redis's is. */
    uv_timer_start(b->timer, on_timeout, (uint64_t)timeout_ms, 0);
    ntimed++;
    return true;
}

static bool
seen_before(const struct resp_request *req, size_t first, size_t i)
{
    for (size_t j = first; j < i; j++) {
        if (req->argvlen[j] == req->argvlen[i] &&
            memcmp(req->argv[j], req->argv[i], req->argvlen[i]) == 0) {
            return true;
        }
    }
    return false;
}

bool
blocked_wait(struct conn *c, const struct resp_request *req, size_t first,
             size_t nkeys, int64_t timeout_ms, enum blocked_kind kind,
             blocked_serve_fn serve)
{
    struct blocked *b = new_blocked(req, nkeys);
    if (b == NULL) {
        return false;
    }
    *b = (struct blocked){ .db = c->db, .kind = kind, .serve = serve,
                           .req = b->req };
    c->blocked = b;
    for (size_t i = first; i < first + nkeys; i++) {
        if (seen_before(req, first, i)) {
            continue;       /* BLPOP k k: one place in k's queue */
        }
        struct dict_entry *e = queue_of(c->db, req->argv[i], req->argvlen[i]);
        if (e == NULL) {
            blocked_forget(c);
            return false;
        }
        struct waiter *w = &b->w[b->nkeys++];
        *w = (struct waiter){ .c = c, .e = e };
        TAILQ_INSERT_TAIL(&((struct waiters *)e->owner.p)->q, w, link);
    }
    if (!start_timer(c, b, timeout_ms)) {
        blocked_forget(c);
        return false;
    }
    b->counted = true;
    blocked_nclients++;
    c->state = CONN_BLOCKED;
    return true;
}

bool
blocked_on_keys(const struct conn *c)
{
    return c->blocked != NULL;
}

const struct resp_request *
blocked_request(const struct conn *c)
{
    return c->blocked != NULL ? &c->blocked->req : NULL;
}

/* ---- ending a wait ------------------------------------------------------- */

static void
release(struct conn *c)
{
    struct blocked *b = c->blocked;
    for (size_t i = 0; i < b->nkeys; i++) {
        leave_queue(&b->w[i]);
    }
    if (b->timer != NULL) {
        uv_timer_stop(b->timer);
        uv_close((uv_handle_t *)b->timer, free_timer);
        ntimed--;
    }
    if (b->wake != NULL) {
        uv_timer_stop(b->wake);
        uv_close((uv_handle_t *)b->wake, free_timer);
    }
    mem_free(b);
    c->blocked = NULL;
    if (registry != NULL && blocked_nclients == 0) {
        /* Every queue went with its last waiter: the tables go too. */
        for (size_t i = 0; i < srv.ndbs; i++) {
            dict_free(&registry[i]);
        }
        mem_free(registry);
        registry = NULL;
    }
}

void
blocked_forget(struct conn *c)
{
    if (c->blocked == NULL) {
        return;
    }
    if (c->blocked->counted) {
        blocked_nclients--;
    }
    release(c);
}

void
blocked_end(struct conn *c)
{
    blocked_forget(c);
    c->requests |= CLIENT_UNBLOCKED;
    client_note_fed(c);
}

void
blocked_time_out(struct conn *c)
{
    struct blocked *b = c->blocked;
    int db = srv.db;
    if (b != NULL && b->timed != NULL && keyspace_select(b->db)) {
        /* Its answer reads its keys, in its database: a timer (or
         * CLIENT UNBLOCK on another client) runs in any. */
        c->hint.valid = false;
        b->timed->timed_out(c, &b->req);
        (void)keyspace_select(db);
    } else {
        reply_null_array(&c->out, c->proto);
    }
    blocked_end(c);
}

/* ---- timed waits ---------------------------------------------------------- */

static void arm_wake(struct conn *c);

/* Time may have made c's keys ready: signal them, serve them (c among
 * their waiters, in their order), and look again while c waits. */
static void
on_wake(uv_timer_t *t)
{
    struct conn *c = t->data;
    struct blocked *b = c->blocked;
    if (srv.pause_end_ms != 0) {
        /* CLIENT PAUSE holds writes, a waiter's grant too: look again
         * once it ends. */
        int64_t ms = srv.pause_end_ms - clock_loop_ms();
        uv_timer_start(b->wake, on_wake, (uint64_t)(ms > 0 ? ms : 0) + 1, 0);
        return;
    }
    for (size_t i = 0; i < b->nkeys; i++) {
        const struct dict_entry *e = b->w[i].e;
        blocked_signal(b->db, (const char *)dict_key(e), e->klen);
    }
    blocked_serve(served_hook);
    if (c->blocked != NULL) {       /* not served: it cannot block anew */
        arm_wake(c);
    }
}

static void
arm_wake(struct conn *c)
{
    struct blocked *b = c->blocked;
    int db = srv.db;
    int64_t ms = -1;
    if (keyspace_select(b->db)) {
        ms = b->timed->wake(c, &b->req);
    }
    (void)keyspace_select(db);
    if (ms >= 0) {
        uv_timer_start(b->wake, on_wake, (uint64_t)(ms > 0 ? ms : 1), 0);
    }
}

bool
blocked_set_timed(struct conn *c, const struct blocked_timed *t)
{
    struct blocked *b = c->blocked;
    b->timed = t;
    b->wake = mem_malloc(sizeof(*b->wake));
    if (b->wake == NULL) {
        return false;
    }
    uv_timer_init(srv.loop, b->wake);
    b->wake->data = c;
    arm_wake(c);
    return true;
}

void
blocked_set_served(void (*served)(struct conn *c))
{
    served_hook = served;
}

size_t
blocked_with_timeout(void)
{
    return ntimed;
}

/* ---- readiness and serving ------------------------------------------------ */

void
blocked_signal(int db, const char *key, size_t len)
{
    struct dict_entry *e = find_key(db, key, len);
    if (e == NULL) {
        return;
    }
    struct waiters *ws = e->owner.p;
    if (ws->ready) {
        return;
    }
    struct ready_key *k = mem_malloc(sizeof(*k) + len);
    if (k == NULL) {
        return;     /* its waiters wait on: the next write tells again */
    }
    ws->ready = true;
    k->next = NULL;
    k->db = db;
    k->len = len;
    memcpy(k->key, key, len);
    *ready_tail = k;
    ready_tail = &k->next;
    blocked_nready++;
}

void
blocked_signal_db(int db)
{
    if (registry == NULL || db < 0 || (size_t)db >= srv.ndbs) {
        return;
    }
    /* Listed first, signalled after: signalling does not change the
     * registry, but a dict must not change while walked. */
    struct dict_iter it = { 0 };
    struct dict_entry *e;
    while ((e = dict_next(&registry[db], &it)) != NULL) {
        blocked_signal(db, (const char *)dict_key(e), e->klen);
    }
}

/* Serve key's waiters in order until it is gone. */
static void
serve_key(const struct ready_key *k, void (*served)(struct conn *c))
{
    struct dict_entry *e = find_key(k->db, k->key, k->len);
    if (e == NULL) {
        return;
    }
    struct waiters *ws = e->owner.p;
    ws->ready = false;
    struct waiter *w = TAILQ_FIRST(&ws->q);
    while (w != NULL) {
        /* Another client's node: serving w's client leaves it in place
         * (and the queue with it). */
        struct waiter *next = TAILQ_NEXT(w, link);
        struct conn *c = w->c;
        struct blocked *b = c->blocked;
        enum blocked_served s = BLOCKED_NOT_SERVED;
        if (!c->killed) {
            c->hint.valid = false;
            s = b->serve(c, &b->req, k->key, k->len);
        }
        if (s == BLOCKED_ABSENT) {
            break;
        }
        if (s != BLOCKED_NOT_SERVED) {
            blocked_end(c);
            served(c);
        }
        if (s == BLOCKED_SERVED_GONE) {
            break;
        }
        w = next;
    }
}

void
blocked_serve(void (*served)(struct conn *c))
{
    int db = srv.db;
    while (ready != NULL) {
        struct ready_key *k = ready;
        ready = k->next;
        if (ready == NULL) {
            ready_tail = &ready;
        }
        blocked_nready--;
        if (keyspace_select(k->db)) {
            serve_key(k, served);
        }
        mem_free(k);
    }
    (void)keyspace_select(db);
}
