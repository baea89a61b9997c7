/*
 * packdict.h - what the collections kept as a pack while small and a dict
 * once large share (lib/hmap.h's hashes, lib/set.h's sets): the large
 * encoding's dict made, grown from the pack and freed, the whole state's
 * bytes and the strings of their effects.
 *
 * Each caller keeps its own struct (a struct pack and a struct dict *,
 * NULL while compact) and says how many pack entries make one element
 * (`per`: 1 for a set's member, 2 for a hash's field and value); in the
 * dict an element is an entry, its first string the key and its second,
 * if any, the value.
 *
 * The whole state (packdict_encode) is one byte for the encoding, then
 *  - compact: the pack's entry count and byte count (uint32 each) and its
 *    block as it is;
 *  - large: the number of elements (uint64), then each element's strings
 *    as a uint32 length and the bytes.
 * An effect's payload (packdict_put_strings) is a uint32 count of strings,
 * then each as a uint32 length and its bytes. Host byte order throughout.
 */
#ifndef CELLGATE_PACKDICT_H
#define CELLGATE_PACKDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "lib/pack.h"

/* Bytes the pack, the dict and its header hold (MEMORY USAGE). */
size_t packdict_owned(const struct pack *pk, const struct dict *big);

/* Free both encodings: an empty collection again. */
void packdict_free(struct pack *pk, struct dict **big);

/* Every element once: compact in the pack's order, large in the dict's.
 * A zeroed iterator starts; false at the end. The collection must not
 * change while walking (the strings are its own). */
struct packdict_iter {
    uint32_t off;               /* compact: the next element's offset */
    struct dict_iter di;        /* large */
};
bool packdict_next(const struct pack *pk, const struct dict *big,
                   unsigned per, struct packdict_iter *it,
                   struct pack_item *k, struct pack_item *v);

/* One step of a scan (HSCAN, SSCAN): fn on each element of the step (v
 * empty for per 1); the next cursor, 0 at the end. A compact collection
 * is one step, whatever the cursor (Redis answers a listpack or an intset
 * whole); a large one is dict_scan's. */
typedef void (*packdict_scan_fn)(const struct pack_item *k,
                                 const struct pack_item *v, void *arg);
uint64_t packdict_scan(const struct pack *pk, const struct dict *big,
                       unsigned per, uint64_t cursor, packdict_scan_fn fn,
                       void *arg);

/* The pack's elements moved into a new dict sized for `size` of them,
 * the pack freed. false (both unchanged) when memory runs out. */
bool packdict_convert(struct pack *pk, struct dict **big, unsigned per,
                      uint64_t size);

/* A copy of a collection into an empty one. false when memory runs out
 * (the copy then holds a part: freeable). */
bool packdict_copy(struct pack *pk, struct dict **big,
                   const struct pack *src_pk, const struct dict *src_big);

/* The whole state appended to b. false when memory runs out. */
bool packdict_encode(const struct pack *pk, const struct dict *big,
                     unsigned per, struct membuf *b);

/* Bytes read back into an empty collection: COLL_OK, COLL_MALFORMED or
 * COLL_NOMEM (what was read stays: freeable). compact_valid checks a
 * compact block against the type's own rules (bounds, order, no element
 * twice). */
int packdict_decode(struct pack *pk, struct dict **big, unsigned per,
                    bool (*compact_valid)(const struct pack *pk),
                    const unsigned char *p, size_t len);

/* An effect's payload: the n strings s[i] of len[i] bytes appended to b.
 * false when memory runs out. */
bool packdict_put_strings(struct membuf *b, const char *const *s,
                          const size_t *len, size_t n);

/* One string (a uint32 length, its bytes) appended to b; false when
 * memory runs out or it passes 4 GiB. */
bool packdict_put_string(struct membuf *b, const void *p, size_t len);

/* The next string of r; false when r ends first. */
bool packdict_take_string(struct membuf_reader *r, struct pack_item *s);

/* An effect's payload checked whole (its count, every length, nothing
 * after): its count, its longest string and their sum. */
bool packdict_strings_valid(const unsigned char *p, size_t len, uint32_t *n,
                            size_t *longest, size_t *sum);

#endif
