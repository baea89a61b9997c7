/*
 * keytypes.h - the algorithm tag of each store record and its state layout.
 */
#ifndef CELLGATE_KEYTYPES_H
#define CELLGATE_KEYTYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
 * prefetched for argv[1] when there is one (else computing it once for
 * keyspace_add()). Counts keyspace hits/misses. */
struct store_rec *keyspace_lookup(struct conn *c,
                                  const struct resp_request *req, size_t i,
                                  int64_t now);

/* Add argv[1] as a new key of `type`, within maxmemory: evicts first when
 * the policy allows, and replies -OOM (returning NULL) when there is no
 * room or no memory. */
struct store_rec *keyspace_add(struct conn *c, const struct resp_request *req,
                               uint8_t type, size_t state_size);

/* A growable byte buffer (mem_malloc'd). */
struct keytype_buf {
    unsigned char *p;
    size_t len;
    size_t cap;
};

/* A bounds-checked reader over stored bytes (snapshots). */
struct keytype_reader {
    const unsigned char *p;
    size_t left;
};

/* Copy the next n bytes to out; false (nothing read) if fewer remain. */
static inline bool
keytype_read(struct keytype_reader *r, void *out, size_t n)
{
    if (r->left < n) {
        return false;
    }
    memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

/* Snapshots of KEY_LOG and KEY_TIERS records, whose state points to
 * arrays: append the state's bytes to b / rebuild a record's arrays from
 * them (false on malformed bytes or no memory; keytype_release() then
 * frees what was built). Other types are stored as their plain state. */
bool keytype_encode_owned(const struct store_rec *r, struct keytype_buf *b);
bool keytype_decode_owned(struct store_rec *rec, const unsigned char *p,
                          size_t len);

/* The record state size of a type (0 for an unknown one). The store does
 * not keep it per record: the type implies it. */
size_t keytype_state_size(uint8_t type);

static inline bool
keytype_owns_memory(uint8_t type)
{
    return type == KEY_LOG || type == KEY_TIERS;
}

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
