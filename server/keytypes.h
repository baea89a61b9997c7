/*
 * keytypes.h - the algorithm tag of each store record and its state layout.
 */
#ifndef CELLGATE_KEYTYPES_H
#define CELLGATE_KEYTYPES_H

#include <stdint.h>

#include "server/store.h"

enum key_type {
    KEY_GCRA = 1,   /* CL.THROTTLE: state is the TAT */
    KEY_FIXED,      /* RL.FIXED: struct fwin_state */
    KEY_SLIDING,    /* RL.SLIDING: struct swin_state */
    KEY_LOG,        /* RL.LOG: struct log_state (cmd_log.c) */
    KEY_TIERS       /* RL.TIERS: struct tiers_state (cmd_log.c) */
};

/* Frees what a record's state owns; the store calls it (store_set_release)
 * before freeing any record. */
void keytype_release(struct store_rec *r);

struct gcra_state {
    uint64_t tat;   /* ns since the epoch, as redis-cell stores it */
};

struct conn;
struct resp_request;

/* The live record for argv[i] of the current request, using the key hash
 * prefetched for argv[1] when there is one. Counts keyspace hits/misses. */
struct store_rec *keyspace_lookup(struct conn *c,
                                  const struct resp_request *req, size_t i,
                                  int64_t now);

/* Add argv[1] as a new key of `type`, within maxmemory: evicts first when
 * the policy allows, and replies -OOM (returning NULL) when there is no
 * room or no memory. */
struct store_rec *keyspace_add(struct conn *c, const struct resp_request *req,
                               uint8_t type, size_t state_size);

/* TYPE's answer for a record. */
const char *keytype_name(uint8_t type);

/* A record expiring like a Redis key with PEXPIRE ttl_ms set at now:
 * Redis keeps the key while now_ms <= set_ms + ttl_ms, so it dies at the
 * first ns of the millisecond after. Saturates to STORE_NEVER. */
int64_t keytype_redis_expire_at(int64_t now_ns, int64_t ttl_ms);

/* PTTL of a record (ms; -1 = no expiry): for CL.THROTTLE keys as Redis
 * reports it for the key redis-cell writes, for RL.* keys the time until
 * the state is fresh again, rounded up. */
int64_t keytype_redis_pttl(const struct store_rec *r, int64_t now_ns);

#endif
