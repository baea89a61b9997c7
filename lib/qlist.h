/*
 * qlist.h - a Redis list.
 *
 * A short list is one pack (lib/pack.h); a longer one is an array of
 * packs, its nodes, each of at most QLIST_NODE_BYTES bytes (one larger
 * element alone excepted) and QLIST_NODE_COUNT elements, kept with room
 * on both sides so a push or a pop at either end touches one small node:
 * what Redis's quicklist of listpacks is to Redis. The bound on a node's
 * elements bounds the forward-only walks of a pack: the offset of a
 * node's last element, a walk backwards through one node. The encoding
 * is invisible to clients.
 *
 * Indexes are from the head, 0 first; the handlers turn Redis's negative
 * ones into these. Elements are handed out as pointers into the list,
 * valid until it next changes.
 *
 * Element effects (the journal's and the replicas' JOURNAL_ELEM records,
 * lib/qlist.c's encoders, replayed by qlist_apply):
 *   QLIST_OP_PUSH_HEAD, QLIST_OP_PUSH_TAIL: values, in the order pushed
 *   QLIST_OP_POP_HEAD, QLIST_OP_POP_TAIL:   how many
 *   QLIST_OP_TRIM:   keep [start, stop] (start > stop: nothing)
 *   QLIST_OP_SET:    index, value
 *   QLIST_OP_INSERT: before or after the first pivot, pivot, value
 *   QLIST_OP_REM:    count as LREM takes it, value
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

/* A node's bounds (the compact pack's too): Redis's default
 * list-max-listpack-size -2 is 8 KB; the element bound keeps walks short
 * when elements are small. */
#define QLIST_NODE_BYTES 8192
#define QLIST_NODE_COUNT 128

enum qlist_op {
    QLIST_OP_PUSH_HEAD = 1,
    QLIST_OP_PUSH_TAIL = 2,
    QLIST_OP_POP_HEAD = 3,
    QLIST_OP_POP_TAIL = 4,
    QLIST_OP_TRIM = 5,
    QLIST_OP_SET = 6,
    QLIST_OP_INSERT = 7,
    QLIST_OP_REM = 8,
};

/* ---- what the keyspace needs of every collection ---------------------- */

uint64_t qlist_len(const struct qlist *x);
size_t qlist_owned(const struct qlist *x);
void qlist_free(struct qlist *x);
bool qlist_encode(const struct qlist *x, struct membuf *b);
int qlist_decode(struct qlist *x, const unsigned char *p, size_t len);
int qlist_apply(struct qlist *x, uint8_t op, const unsigned char *p,
                size_t len);

/* ---- the handlers' ------------------------------------------------------ */

/* An element visited: its index, its bytes. Return false to stop. */
typedef bool (*qlist_fn)(void *arg, uint64_t index, const unsigned char *p,
                         size_t len);

/* Bytes about an element of len bytes adds (for admission). */
size_t qlist_elem_cost(size_t len);

/* Push v at the head or the tail. false (unchanged) when memory runs out
 * or the element is longer than a pack can hold. */
bool qlist_push(struct qlist *x, bool head, const void *v, size_t len);

/* Pop up to n elements from the head or the tail, each shown to fn (may
 * be NULL; its return is ignored) before it goes, in the order popped.
 * Returns how many went. */
uint64_t qlist_pop(struct qlist *x, bool head, uint64_t n, qlist_fn fn,
                   void *arg);

/* Element i (< qlist_len) into *it. */
void qlist_index(const struct qlist *x, uint64_t i, struct pack_item *it);

/* Element i (< qlist_len) becomes v. false (unchanged) when memory runs
 * out. */
bool qlist_set(struct qlist *x, uint64_t i, const void *v, size_t len);

/* Visit the elements from index `from` (< qlist_len) towards the tail,
 * or towards the head when reverse, until fn says stop or none is left. */
void qlist_walk(const struct qlist *x, uint64_t from, bool reverse,
                qlist_fn fn, void *arg);

/* Keep elements [start, stop] (stop < qlist_len), drop the others; start >
 * stop drops all. */
void qlist_trim(struct qlist *x, uint64_t start, uint64_t stop);

/* LREM: the elements equal to v, the first count of them from the head
 * (count > 0), the last -count (count < 0) or all (0). Returns how many
 * went. Never needs memory. */
uint64_t qlist_rem(struct qlist *x, int64_t count, const void *v,
                   size_t len);

/* LINSERT: v before (or after) the first element equal to pivot.
 * 1 inserted, 0 no such pivot, -1 memory ran out (unchanged). */
int qlist_insert(struct qlist *x, bool after, const void *pivot, size_t plen,
                 const void *v, size_t len);

/* ---- element effects: appended to b; false when memory runs out ------- */

/* One value of a PUSH_HEAD or PUSH_TAIL (call once per value pushed). */
bool qlist_effect_push(struct membuf *b, const void *v, size_t len);
bool qlist_effect_pop(struct membuf *b, uint64_t n);
bool qlist_effect_trim(struct membuf *b, uint64_t start, uint64_t stop);
bool qlist_effect_set(struct membuf *b, uint64_t i, const void *v,
                      size_t len);
bool qlist_effect_insert(struct membuf *b, bool after, const void *pivot,
                         size_t plen, const void *v, size_t len);
bool qlist_effect_rem(struct membuf *b, int64_t count, const void *v,
                      size_t len);

#endif
