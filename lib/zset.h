/*
 * zset.h - a Redis sorted set.
 *
 * (The type's module: its helper writes this comment and the API the
 * handlers use; below, what the keyspace needs of every collection.)
 */
#ifndef CELLGATE_ZSET_H
#define CELLGATE_ZSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"
#include "lib/pack.h"

struct zset_big;

struct zset {
    struct pack pk;             /* the compact encoding */
    struct zset_big *big;   /* the large one; NULL while compact */
};

uint64_t zset_len(const struct zset *x);
size_t zset_owned(const struct zset *x);
void zset_free(struct zset *x);
bool zset_encode(const struct zset *x, struct membuf *b);
int zset_decode(struct zset *x, const unsigned char *p, size_t len);
int zset_apply(struct zset *x, uint8_t op, const unsigned char *p,
                size_t len);

#endif
