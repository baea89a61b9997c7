/*
 * qlist.h - a Redis list.
 *
 * (The type's module: its helper writes this comment and the API the
 * handlers use; below, what the keyspace needs of every collection.)
 */
#ifndef CELLGATE_QLIST_H
#define CELLGATE_QLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"
#include "lib/pack.h"

struct qlist_big;

struct qlist {
    struct pack pk;             /* the compact encoding */
    struct qlist_big *big;   /* the large one; NULL while compact */
};

uint64_t qlist_len(const struct qlist *x);
size_t qlist_owned(const struct qlist *x);
void qlist_free(struct qlist *x);
bool qlist_encode(const struct qlist *x, struct membuf *b);
int qlist_decode(struct qlist *x, const unsigned char *p, size_t len);
int qlist_apply(struct qlist *x, uint8_t op, const unsigned char *p,
                size_t len);

#endif
