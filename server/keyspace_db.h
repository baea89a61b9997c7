/*
 * keyspace_db.h - the databases (SELECT): srv.ndbs stores, each created
 * when first used, all hashing with srv.seed so a key hashes alike in
 * each. Commands use srv.store, the selected one. Everything that changes
 * the keys in them, SWAPDB and the flushes included, is keyspace.h's,
 * which includes this header: its users need name no other.
 */
#ifndef CELLGATE_KEYSPACE_DB_H
#define CELLGATE_KEYSPACE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store.h"

/* The hash every database's table gives key (the same seed): what a
 * request's key hint carries (store.h's struct key_hint). Thread-safe. */
uint64_t keyspace_key_hash(const char *key, size_t len);

/* Database i (0 <= i < srv.ndbs), made when first asked for; NULL when out
 * of memory. */
struct store *keyspace_db(int i);

/* Make database i the one commands use (srv.store, srv.db); false when it
 * could not be made. */
bool keyspace_select(int i);

/* Keys in every database. */
size_t keyspace_total_keys(void);

/* The stores' counters summed over every database (INFO, metrics, the
 * snapshot's count of changes); a SWAPDB counts as a change. */
void keyspace_totals(struct store_usage *t);

/* ---- for keyspace.c only: the databases' lifecycle ---------------------
 *
 * keyspace_init(), keyspace_swap() and keyspace_teardown() (keyspace.h)
 * are the ones to call: they add what the write path owes (the hook, the
 * swap's effect record and watchers, a teardown the journal does not hear).
 */

/* srv.seed and the hash key from seed, srv.dbs for srv.conf.databases,
 * database 0 made and selected; every store made from now on frees its
 * records through fn. 0, or -1 when out of memory. */
int keyspace_db_init(const unsigned char seed[16], store_release_fn fn);

/* Databases a and b (both made, a != b) change places: their stores,
 * srv.store if it was either, and the database number each store's
 * releases are told. Counted as a write in keyspace_totals(). */
void keyspace_db_exchange(int a, int b);

/* keyspace_slots_enable(): database 0's store keeps the per-slot index
 * from now on, made now (O(keys)) if the store is there already, else
 * when it is made; false when out of memory for it now. */
bool keyspace_db_slots_enable(void);

/* Before keyspace_db_exchange(a, b): with the per-slot index on and one of
 * them database 0, the other's store gets the index it is about to need
 * (the store leaving database 0 drops its own in the exchange). false
 * when out of memory: then nothing may change. */
bool keyspace_db_swap_ready(int a, int b);

/* Every store freed (the selected one last), srv.dbs with them. */
void keyspace_db_destroy(void);

#endif
