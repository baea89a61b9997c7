/*
 * keyspace_db.c - the databases (see keyspace_db.h).
 *
 * A database is a container, never a writer. The stores made here free
 * their records through the hook the write path hands keyspace_db_init()
 * (keyspace.c's keyspace_release()), so a record freed for any reason,
 * in any database, is still heard of by WATCH and the journal, while this
 * file knows nothing of either. That is why it sits below keyspace.c and
 * not beside it: the write path asks for a database by number (MOVE,
 * COPY, SWAPDB, a key restored) and decides what a swap or a flush
 * writes to the journal; here the stores are only made, exchanged and
 * freed. A database costs its store and timer wheel from the first time
 * it is asked for, so a server configured with 16 databases that uses
 * one pays for one store.
 */
#include "server/keyspace_db.h"

#include <stdint.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/siphash.h"
#include "server/clock.h"
#include "server/server.h"

/* What every store calls before it frees a record (keyspace_db_init()). */
static store_release_fn release;

/* keyspace_slots_enable() was called: database 0's store, whichever it
 * is, keeps the per-slot index (store.h), the others none. */
static bool slots_wanted;

struct store *
keyspace_db(int i)
{
    if (srv.dbs[i] == NULL) {
        struct store *s = store_create(srv.seed, clock_wall_now());
        if (s == NULL) {
            return NULL;
        }
        if (i == 0 && slots_wanted && !store_slots_enable(s)) {
            store_destroy(&s);
            return NULL;
        }
        store_set_release(s, release, (void *)(intptr_t)i);
        srv.dbs[i] = s;
    }
    return srv.dbs[i];
}

bool
keyspace_select(int i)
{
    struct store *s = keyspace_db(i);
    if (s == NULL) {
        return false;
    }
    srv.store = s;
    srv.db = i;
    return true;
}

/* Every database's hash key, from srv.seed: set once at start-up, before
 * any I/O thread, and only read afterwards. */
static uint64_t hash_k0, hash_k1;

uint64_t
keyspace_key_hash(const char *key, size_t len)
{
    return siphash(hash_k0, hash_k1, len == 0 ? "" : key, len, 1, 3);
}

int
keyspace_db_init(const unsigned char seed[16], store_release_fn fn)
{
    release = fn;
    memcpy(srv.seed, seed, sizeof(srv.seed));
    siphash_key(seed, &hash_k0, &hash_k1);
    srv.ndbs = (size_t)srv.conf.databases;
    srv.dbs = mem_calloc(srv.ndbs, sizeof(*srv.dbs));
    return srv.dbs != NULL && keyspace_select(0) ? 0 : -1;
}

void
keyspace_db_destroy(void)
{
    /* The selected store goes last: releasing a watched record hashes its
     * key with srv.store (multi.c), which must still be there. */
    for (size_t i = 0; srv.dbs != NULL && i < srv.ndbs; i++) {
        if (srv.dbs[i] != srv.store) {
            store_destroy(&srv.dbs[i]);
        }
    }
    for (size_t i = 0; srv.dbs != NULL && i < srv.ndbs; i++) {
        store_destroy(&srv.dbs[i]);
    }
    mem_free(srv.dbs);
    srv.dbs = NULL;
    srv.store = NULL;
    srv.ndbs = 0;
}

bool
keyspace_db_slots_enable(void)
{
    slots_wanted = true;
    return srv.dbs == NULL || srv.dbs[0] == NULL ||
           store_slots_enable(srv.dbs[0]);
}

bool
keyspace_db_swap_ready(int a, int b)
{
    if (!slots_wanted || a == b || (a != 0 && b != 0)) {
        return true;
    }
    return store_slots_enable(srv.dbs[a == 0 ? b : a]);
}

/* SWAPDBs done: writes no store counts, since each store is unchanged. */
static uint64_t swaps;

void
keyspace_db_exchange(int a, int b)
{
    struct store *t = srv.dbs[a];
    srv.dbs[a] = srv.dbs[b];
    srv.dbs[b] = t;
    /* Each store tells its releases which database it is now. */
    store_set_release(srv.dbs[a], release, (void *)(intptr_t)a);
    store_set_release(srv.dbs[b], release, (void *)(intptr_t)b);
    if (srv.db == a || srv.db == b) {
        srv.store = srv.dbs[srv.db];
    }
    if (slots_wanted && (a == 0 || b == 0)) {
        /* Database 0's index came along (keyspace_db_swap_ready()); the
         * store that left it needs none. */
        store_slots_disable(srv.dbs[a == 0 ? b : a]);
    }
    swaps++;                /* a write, for the snapshot's count */
}

void
keyspace_totals(struct store_usage *t)
{
    memset(t, 0, sizeof(*t));
    t->changes = swaps;
    for (size_t i = 0; i < srv.ndbs; i++) {
        if (srv.dbs[i] != NULL) {
            store_usage_add(t, srv.dbs[i]);
        }
    }
}

size_t
keyspace_total_keys(void)
{
    size_t n = 0;
    for (size_t i = 0; i < srv.ndbs; i++) {
        n += srv.dbs[i] != NULL ? store_size(srv.dbs[i]) : 0;
    }
    return n;
}
