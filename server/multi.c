/*
 * multi.c - see multi.h.
 *
 * WATCH. A registry per database maps each watched key to the clients
 * watching it (a lib/dict of the server's memory, so keyed SipHash: a
 * client cannot pile the keys it watches into one bucket; the key as it
 * is, so a change looks it up without copying it), and each client keeps
 * the entries it watches (a dict entry stays where it is until removed).
 * When a key changes, its watchers are marked dirty and stop watching
 * anything (as in Redis: once dirty, further changes cannot matter before
 * EXEC). With nothing watched a change costs one test of
 * srv.watched_keys, and the registries are freed.
 *
 * Expiry. A key whose record expired but was not yet collected is still
 * in the store; EXEC looks every watched key up, which collects such a
 * record, and collecting it touches the key like any other removal. WATCH
 * looks the key up first for the same reason, so nobody watches a key
 * that is already dead.
 */
#include "server/multi.h"

#include <string.h>

#include "lib/dict.h"
#include "lib/keylog.h"
#include "lib/mem.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/server.h"
#include "server/store.h"

/* The clients watching one key: the owner block of the key's entry in
 * its database's registry (one allocation, grown by doubling). */
struct watched_key {
    int db;
    size_t n, cap;
    struct conn *c[];
};

/* A registry per database, made with the first WATCH and freed with the
 * last UNWATCH: nregistry of them (srv.ndbs then), or NULL. */
static struct dict *registry;
static size_t nregistry;

/* ---- the client's state ------------------------------------------------ */

static struct multi *
state_of(struct conn *c)
{
    if (c->multi == NULL) {
        c->multi = mem_calloc(1, sizeof(*c->multi));
    }
    return c->multi;
}

/* Nothing queued, nothing watched, not open: back to no state at all, so
 * the dispatcher's test stays one load for clients without transactions. */
static void
state_release_if_idle(struct conn *c)
{
    struct multi *m = c->multi;
    if (m != NULL && m->flags == 0 && m->ncmds == 0 && m->nwatched == 0) {
        mem_free(m->cmds);
        mem_free(m->watched);
        mem_free(m);
        c->multi = NULL;
    }
}

/* ---- the registry ------------------------------------------------------ */

static struct watched_key *
watchers(const struct dict_entry *e)
{
    return e->owner.p;
}

static struct dict_entry *
find_key(int db, const char *key, size_t len)
{
    if (registry == NULL || (size_t)db >= nregistry) {
        return NULL;
    }
    return dict_find(&registry[db], key, len);
}

/* Nothing watched any more: the registries go (each owns nothing). */
static void
registry_release_if_idle(void)
{
    if (srv.watched_keys == 0) {
        mem_free(registry);
        registry = NULL;
        nregistry = 0;
    }
}

/* A registry entry for key of db, watched by nobody yet; NULL when memory
 * runs out. */
static struct dict_entry *
add_key(int db, const char *key, size_t len)
{
    if (registry == NULL) {
        registry = mem_malloc(srv.ndbs * sizeof(*registry));
        if (registry == NULL) {
            return NULL;
        }
        nregistry = srv.ndbs;
        for (size_t i = 0; i < nregistry; i++) {
            registry[i] = (struct dict)DICT_SERVER;
        }
    }
    struct watched_key *w = mem_malloc(sizeof(*w));
    struct dict_entry *e = NULL;
    if (w == NULL || len > UINT32_MAX ||
        (e = dict_add(&registry[db], key, (uint32_t)len, NULL, 0)) == NULL) {
        mem_free(w);
        registry_release_if_idle();
        return NULL;
    }
    *w = (struct watched_key){ .db = db };
    e->owner.p = w;
    srv.watched_keys++;
    return e;
}

static void
remove_key(struct dict_entry *e)
{
    struct watched_key *w = watchers(e);
    dict_remove(&registry[w->db], e);
    mem_free(w);
    srv.watched_keys--;
    registry_release_if_idle();
}

/* One more client watching e's key; false when memory runs out. */
static bool
add_watcher(struct dict_entry *e, struct conn *c)
{
    struct watched_key *w = watchers(e);
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4;
        w = mem_realloc(w, sizeof(*w) + cap * sizeof(*w->c));
        if (w == NULL) {
            return false;
        }
        w->cap = cap;
        e->owner.p = w;
    }
    w->c[w->n++] = c;
    return true;
}

static bool
grow(void **array, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) {
        return true;
    }
    size_t n = *cap ? *cap * 2 : 4;
    void *a = mem_realloc(*array, n * size);
    if (a == NULL) {
        return false;
    }
    *array = a;
    *cap = n;
    return true;
}

/* Forget every key c watches (the registry's entries too). */
static void
unwatch_all(struct conn *c)
{
    struct multi *m = c->multi;
    for (size_t i = 0; m != NULL && i < m->nwatched; i++) {
        struct watched_key *w = watchers(m->watched[i]);
        for (size_t k = 0; k < w->n; k++) {
            if (w->c[k] == c) {
                w->c[k] = w->c[--w->n];
                break;
            }
        }
        if (w->n == 0) {
            remove_key(m->watched[i]);
        }
    }
    if (m != NULL) {
        m->nwatched = 0;
    }
}

/* ---- WATCH ------------------------------------------------------------- */

bool
multi_watch(struct conn *c, const char *key, size_t len)
{
    struct multi *m = state_of(c);
    if (m == NULL) {
        return false;
    }
    /* A dead record is collected now, not counted as a change later. */
    (void)store_lookup(srv.store, key, len, clock_wall_now());
    struct dict_entry *e = find_key(srv.db, key, len);
    for (size_t i = 0; e != NULL && i < m->nwatched; i++) {
        if (m->watched[i] == e) {
            return true;        /* already watched */
        }
    }
    if (!grow((void **)&m->watched, &m->capwatched, m->nwatched + 1,
              sizeof(*m->watched))) {
        return false;
    }
    if (e == NULL && (e = add_key(srv.db, key, len)) == NULL) {
        return false;
    }
    if (!add_watcher(e, c)) {
        if (watchers(e)->n == 0) {
            remove_key(e);
        }
        return false;
    }
    m->watched[m->nwatched++] = e;
    return true;
}

void
multi_unwatch(struct conn *c)
{
    unwatch_all(c);
    if (c->multi != NULL) {
        c->multi->flags &= ~(unsigned)MULTI_DIRTY_CAS;
    }
    state_release_if_idle(c);
}

/* Touches held (see multi_touch_hold()), their tags unused. */
static bool touch_holding;
static struct membuf touches_held;

void
multi_touch_hold(void)
{
    touch_holding = true;
}

void
multi_touch_unhold(bool (*undone)(int db, const char *key, size_t len,
                                  void *arg),
                   void *arg)
{
    struct keylog_entry e;
    touch_holding = false;
    for (size_t off = 0; keylog_next(&touches_held, &off, &e);) {
        if (undone == NULL || !undone(e.db, e.key, e.len, arg)) {
            multi_touch(e.db, e.key, e.len);
        }
    }
    mem_free(touches_held.p);
    touches_held = (struct membuf){ 0 };
}

void
multi_touch(int db, const char *key, size_t len)
{
    struct dict_entry *e = find_key(db, key, len);
    if (e != NULL && touch_holding &&
        keylog_put(&touches_held, NULL, db, key, len)) {
        return;             /* (out of memory, it marks now) */
    }
    /* Each dirty client stops watching, which shrinks the watchers (and
     * frees e with the last one): take them from the end. */
    while (e != NULL && watchers(e)->n > 0) {
        struct watched_key *w = watchers(e);
        struct conn *c = w->c[w->n - 1];
        bool last = w->n == 1;
        c->multi->flags |= MULTI_DIRTY_CAS;
        unwatch_all(c);
        if (last) {
            break;              /* e is gone */
        }
    }
}

/* A watched key, copied out of the registry. */
struct key_copy {
    int db;
    uint32_t len;
    char key[];
};

/* Does key k exist (live) in database db? */
static bool
exists_in(int db, const struct key_copy *k, int64_t now)
{
    return srv.dbs[db] != NULL &&
           store_lookup(srv.dbs[db], k->key, k->len, now) != NULL;
}

/* Append copies of the keys watched in db to *keys (out of memory: that
 * key is left out, its watchers not told). */
static void
copy_keys(int db, struct key_copy ***keys, size_t *n, size_t *cap)
{
    struct dict_iter it = { 0, NULL };
    const struct dict_entry *e;
    while (db < (int)nregistry &&
           (e = dict_next(&registry[db], &it)) != NULL) {
        struct key_copy *k = mem_malloc(sizeof(*k) + e->klen);
        if (k == NULL || !grow((void **)keys, cap, *n + 1, sizeof(**keys))) {
            mem_free(k);
            continue;
        }
        k->db = db;
        k->len = e->klen;
        memcpy(k->key, dict_key(e), e->klen);
        (*keys)[(*n)++] = k;
    }
}

void
multi_touch_databases(int a, int b)
{
    /* Copies of the keys watched in a or b first: looking keys up and
     * touching them both change the registry. */
    struct key_copy **keys = NULL;
    size_t n = 0, cap = 0;
    copy_keys(a, &keys, &n, &cap);
    if (b != a) {
        copy_keys(b, &keys, &n, &cap);
    }
    int64_t now = clock_wall_now();
    for (size_t i = 0; i < n; i++) {
        if (exists_in(a, keys[i], now) || exists_in(b, keys[i], now)) {
            multi_touch(keys[i]->db, keys[i]->key, keys[i]->len);
        }
        mem_free(keys[i]);
    }
    mem_free(keys);
}

bool
multi_watched_changed(struct conn *c)
{
    struct multi *m = c->multi;
    int64_t now = clock_wall_now();
    for (size_t i = 0; i < m->nwatched && !(m->flags & MULTI_DIRTY_CAS);
         i++) {
        /* Collecting an expired record touches the key. */
        const struct dict_entry *e = m->watched[i];
        int db = watchers(e)->db;
        if (srv.dbs[db] != NULL) {
            (void)store_lookup(srv.dbs[db], (const char *)dict_key(e),
                               e->klen, now);
        }
    }
    return (m->flags & MULTI_DIRTY_CAS) != 0;
}

/* ---- the queue --------------------------------------------------------- */

bool
multi_begin(struct conn *c)
{
    struct multi *m = state_of(c);
    if (m == NULL) {
        return false;
    }
    m->flags |= MULTI_OPEN;
    return true;
}

/* A copy of req in one allocation: argv, argvlen, then the bytes. */
static bool
copy_request(const struct resp_request *req, struct resp_request *out,
             size_t *bytes)
{
    size_t n = req->argc * (sizeof(char *) + sizeof(size_t));
    for (size_t i = 0; i < req->argc; i++) {
        n += req->argvlen[i] + 1;
    }
    unsigned char *block = mem_malloc(n);
    if (block == NULL) {
        return false;
    }
    out->argc = req->argc;
    out->argv = (char **)(void *)block;
    out->argvlen = (size_t *)(void *)(block + req->argc * sizeof(char *));
    out->is_inline = req->is_inline;
    char *p = (char *)(out->argvlen + req->argc);
    for (size_t i = 0; i < req->argc; i++) {
        memcpy(p, req->argv[i], req->argvlen[i]);
        p[req->argvlen[i]] = '\0';
        out->argv[i] = p;
        out->argvlen[i] = req->argvlen[i];
        p += req->argvlen[i] + 1;
    }
    *bytes = n;
    return true;
}

bool
multi_queue(struct conn *c, struct cmd *cmd, const struct resp_request *req)
{
    struct multi *m = c->multi;
    size_t bytes;
    if (m->flags & (MULTI_DIRTY_EXEC | MULTI_DIRTY_CAS)) {
        return true;            /* it will not run: keep no memory for it */
    }
    if (!grow((void **)&m->cmds, &m->cap, m->ncmds + 1, sizeof(*m->cmds)) ||
        !copy_request(req, &m->cmds[m->ncmds].req, &bytes)) {
        m->flags |= MULTI_DIRTY_EXEC;
        return false;
    }
    m->cmds[m->ncmds++].cmd = cmd;
    m->bytes += bytes;
    return true;
}

void
multi_flag_refused(struct conn *c)
{
    if (multi_open(c, c->multi)) {
        c->multi->flags |= MULTI_DIRTY_EXEC;
    }
}

void
multi_discard(struct conn *c)
{
    struct multi *m = c->multi;
    if (m == NULL) {
        return;
    }
    for (size_t i = 0; i < m->ncmds; i++) {
        mem_free(m->cmds[i].req.argv);
    }
    m->ncmds = 0;
    m->bytes = 0;
    unwatch_all(c);
    m->flags = 0;
    state_release_if_idle(c);
}

size_t
multi_memory(const struct conn *c)
{
    const struct multi *m = c->multi;
    if (m == NULL) {
        return 0;
    }
    return sizeof(*m) + m->bytes + m->cap * sizeof(*m->cmds) +
           m->capwatched * sizeof(*m->watched);
}
