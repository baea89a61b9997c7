/*
 * topdenied.h - who is being limited right now: per database, the keys
 * the limiters denied most in the last minutes (lib/topk.h's Space-Saving
 * summary, top-denied-keys slots each, counts halved every
 * TOPDENIED_WINDOW_NS). Read by RL.TOPDENIED, INFO's # Limits and
 * /metrics; never a label per key beyond the top few.
 *
 * A database's summary is allocated the first time one of its keys is
 * denied, at the configured size, and made again (empty) when CONFIG SET
 * changes the size; 0 frees them all. It is statistics, not data: FLUSHDB,
 * FLUSHALL and SWAPDB leave it as it is, CONFIG RESETSTAT empties it, and
 * nothing of it is persisted or replicated.
 */
#ifndef CELLGATE_TOPDENIED_H
#define CELLGATE_TOPDENIED_H

#include <stddef.h>
#include <stdint.h>

#include "lib/topk.h"

#define TOPDENIED_WINDOW_NS (60LL * 1000000000LL)

/* A limiter denied key (len bytes) in database db. hash: the keyspace's
 * hash of the whole key when the caller has it (keyspace_key_hash()),
 * else NULL. */
void topdenied_note(int db, const char *key, size_t len,
                    const uint64_t *hash);

/* Up to max of db's most denied keys into out, most first; how many. */
size_t topdenied_top(int db, struct topk_entry *out, size_t max);

/* How many a report shows of each database: INFO's lines, /metrics'
 * series (bounded by top-denied-keys too). */
#define TOPDENIED_INFO_KEYS 3
#define TOPDENIED_METRIC_KEYS 10

struct textbuf;

/* Append a key for a quoted label or INFO value: \\ and \" escaped,
 * other bytes outside printable ASCII as the text \\xHH, so a line stays
 * one line of valid UTF-8 whatever the key holds. */
void topdenied_quote(struct textbuf *t, const char *key, size_t len);

/* Forget every count (CONFIG RESETSTAT). */
void topdenied_reset(void);

void topdenied_teardown(void);

#endif
