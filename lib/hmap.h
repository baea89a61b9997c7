/*
 * hmap.h - a Redis hash.
 *
 * (The type's module: its helper writes this comment and the API the
 * handlers use; below, what the keyspace needs of every collection.)
 */
#ifndef CELLGATE_HMAP_H
#define CELLGATE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"
#include "lib/pack.h"

struct hmap_big;
struct dict;

struct hmap {
    struct pack pk;             /* the compact encoding */
    struct dict *big;   /* the large one; NULL while compact */
};

uint64_t hmap_len(const struct hmap *x);
size_t hmap_owned(const struct hmap *x);
void hmap_free(struct hmap *x);
bool hmap_encode(const struct hmap *x, struct membuf *b);
int hmap_decode(struct hmap *x, const unsigned char *p, size_t len);
int hmap_apply(struct hmap *x, uint8_t op, const unsigned char *p,
                size_t len);

#endif
