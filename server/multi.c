/*
 * multi.c - see multi.h.
 *
 * WATCH. A registry maps each watched key to the clients watching it (a
 * chained table keyed with the store's SipHash, grown by doubling), and
 * each client keeps the entries it watches. When a key changes, its
 * watchers are marked dirty and stop watching anything (as in Redis: once
 * dirty, further changes cannot matter before EXEC). With nothing watched
 * a change costs one test of srv.watched_keys.
 *
 * Expiry. A key whose record expired but was not yet collected is still
 * in the store; EXEC looks every watched key up, which collects such a
 * record, and collecting it touches the key like any other removal. WATCH
 * looks the key up first for the same reason, so nobody watches a key
 * that is already dead.
 */
#include "server/multi.h"

#include <string.h>

#include "lib/mem.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/server.h"
#include "server/store.h"

struct watched_key {
    struct watched_key *next;       /* bucket chain */
    uint64_t hash;
    int db;
    struct conn **clients;
    size_t nclients;
    size_t cap;
    size_t len;
    char key[];
};

static struct watched_key **buckets;
static size_t nbuckets;             /* a power of two, or 0 */

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

/* Every database hashes with the same key (srv.seed); the number of the
 * database is mixed in so its keys spread apart. */
static uint64_t
key_hash(int db, const char *key, size_t len)
{
    return store_key_hash(srv.store, key, len) ^
           ((uint64_t)db * UINT64_C(0x9e3779b97f4a7c15));
}

static struct watched_key **
bucket_of(uint64_t hash)
{
    return &buckets[hash & (nbuckets - 1)];
}

static struct watched_key *
find_key(int db, const char *key, size_t len, uint64_t hash)
{
    if (nbuckets == 0) {
        return NULL;
    }
    for (struct watched_key *e = *bucket_of(hash); e != NULL; e = e->next) {
        if (e->hash == hash && e->db == db && e->len == len &&
            memcmp(e->key, key, len) == 0) {
            return e;
        }
    }
    return NULL;
}

/* Keep the chains short: double the buckets at one key per bucket. */
static bool
grow_buckets(void)
{
    size_t n = nbuckets ? nbuckets * 2 : 16;
    struct watched_key **b = mem_calloc(n, sizeof(*b));
    if (b == NULL) {
        return false;
    }
    for (size_t i = 0; i < nbuckets; i++) {
        struct watched_key *e = buckets[i];
        while (e != NULL) {
            struct watched_key *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    mem_free(buckets);
    buckets = b;
    nbuckets = n;
    return true;
}

static struct watched_key *
add_key(int db, const char *key, size_t len, uint64_t hash)
{
    if (srv.watched_keys >= nbuckets && !grow_buckets()) {
        return NULL;
    }
    struct watched_key *e = mem_calloc(1, sizeof(*e) + len + 1);
    if (e == NULL) {
        return NULL;
    }
    e->hash = hash;
    e->db = db;
    e->len = len;
    if (len > 0) {
        memcpy(e->key, key, len);
    }
    struct watched_key **b = bucket_of(hash);
    e->next = *b;
    *b = e;
    srv.watched_keys++;
    return e;
}

static void
remove_key(struct watched_key *e)
{
    struct watched_key **p = bucket_of(e->hash);
    while (*p != e) {
        p = &(*p)->next;
    }
    *p = e->next;
    mem_free(e->clients);
    mem_free(e);
    if (--srv.watched_keys == 0) {
        mem_free(buckets);
        buckets = NULL;
        nbuckets = 0;
    }
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
        struct watched_key *e = m->watched[i];
        for (size_t k = 0; k < e->nclients; k++) {
            if (e->clients[k] == c) {
                e->clients[k] = e->clients[--e->nclients];
                break;
            }
        }
        if (e->nclients == 0) {
            remove_key(e);
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
    uint64_t hash = key_hash(srv.db, key, len);
    struct multi *m = state_of(c);
    if (m == NULL) {
        return false;
    }
    /* A dead record is collected now, not counted as a change later. */
    (void)store_lookup(srv.store, key, len, clock_wall_now());
    struct watched_key *e = find_key(srv.db, key, len, hash);
    for (size_t i = 0; e != NULL && i < m->nwatched; i++) {
        if (m->watched[i] == e) {
            return true;        /* already watched */
        }
    }
    if (!grow((void **)&m->watched, &m->capwatched, m->nwatched + 1,
              sizeof(*m->watched))) {
        return false;
    }
    if (e == NULL && (e = add_key(srv.db, key, len, hash)) == NULL) {
        return false;
    }
    if (!grow((void **)&e->clients, &e->cap, e->nclients + 1,
              sizeof(*e->clients))) {
        if (e->nclients == 0) {
            remove_key(e);
        }
        return false;
    }
    e->clients[e->nclients++] = c;
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

void
multi_touch(int db, const char *key, size_t len)
{
    struct watched_key *e = find_key(db, key, len, key_hash(db, key, len));
    /* Each dirty client stops watching, which shrinks e (and frees it with
     * the last one): take them from the end. */
    while (e != NULL && e->nclients > 0) {
        struct conn *c = e->clients[e->nclients - 1];
        bool last = e->nclients == 1;
        c->multi->flags |= MULTI_DIRTY_CAS;
        unwatch_all(c);
        if (last) {
            break;              /* e is gone */
        }
    }
}

/* Does key exist (live) in database db? */
static bool
exists_in(int db, const struct watched_key *e, int64_t now)
{
    return srv.dbs[db] != NULL &&
           store_lookup(srv.dbs[db], e->key, e->len, now) != NULL;
}

void
multi_touch_databases(int a, int b)
{
    /* Copies of the keys watched in a or b first: looking keys up and
     * touching them both change the registry. */
    struct watched_key **keys = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < nbuckets; i++) {
        for (struct watched_key *e = buckets[i]; e != NULL; e = e->next) {
            if (e->db != a && e->db != b) {
                continue;
            }
            struct watched_key *k = mem_malloc(sizeof(*k) + e->len + 1);
            if (k == NULL || !grow((void **)&keys, &cap, n + 1,
                                   sizeof(*keys))) {
                mem_free(k);
                continue;       /* out of memory: that watch is not told */
            }
            memcpy(k, e, sizeof(*k) + e->len + 1);
            keys[n++] = k;
        }
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
        const struct watched_key *e = m->watched[i];
        if (srv.dbs[e->db] != NULL) {
            (void)store_lookup(srv.dbs[e->db], e->key, e->len, now);
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
