/*
 * pack.h - a compact sequence of byte strings in one block: the small
 * encoding of lists, hashes, sorted sets and sets, as Redis's listpack is
 * theirs.
 *
 * An entry is its length as a varint (7 bits a byte, low bits first, the
 * high bit set on every byte but the last) and then its bytes, so an entry
 * of up to 127 bytes costs one byte more than its bytes. Entries are found
 * by their byte offset in the block; walking is forward only (every user
 * keeps its packs small: pack_bytes() bounded by its own limits). The
 * block is mem_owned_realloc'd (lib/mem.h) and grows and shrinks with its
 * entries; an empty pack owns nothing.
 *
 * Callers keep a struct pack in place (16 bytes, inside a key's record);
 * a zeroed one is an empty pack.
 */
#ifndef CELLGATE_PACK_H
#define CELLGATE_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pack {
    unsigned char *p;   /* the entries; NULL when empty */
    uint32_t bytes;     /* bytes of p in use */
    uint32_t count;     /* entries */
};

/* How decoding or replaying a collection's bytes went (lib/qlist.h,
 * lib/hmap.h, lib/zset.h). */
enum coll_rc { COLL_OK = 0, COLL_MALFORMED = -1, COLL_NOMEM = -2 };

/* The largest block a pack may grow to: an insert past it is refused. */
#define PACK_MAX_BYTES (UINT32_MAX - 16)

/* One entry: where its bytes start and how many. */
struct pack_item {
    const unsigned char *data;
    uint32_t len;
};

/* The entry at byte offset off (< pk->bytes) into it; returns the offset
 * of the next entry. */
static inline uint32_t
pack_at(const struct pack *pk, uint32_t off, struct pack_item *it)
{
    uint32_t len = 0;
    unsigned shift = 0;
    unsigned char b;
    do {
        b = pk->p[off++];
        len |= (uint32_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    it->data = pk->p + off;
    it->len = len;
    return off + len;
}

/* Bytes an entry of len bytes takes in a pack. */
size_t pack_entry_size(size_t len);

/* Byte offset of entry index (<= count: count gives pk->bytes, the end). */
uint32_t pack_offset(const struct pack *pk, uint32_t index);

/* Insert n entries (items[0..n)) before the entry at byte offset off
 * (pk->bytes appends), in that order. false (the pack unchanged) when
 * memory runs out or the block would pass PACK_MAX_BYTES. */
bool pack_insert(struct pack *pk, uint32_t off, const struct pack_item *items,
                 uint32_t n);

/* Remove the n entries starting at byte offset off. */
void pack_delete(struct pack *pk, uint32_t off, uint32_t n);

/* Replace the entry at byte offset off by data. false (unchanged) when
 * memory runs out. */
bool pack_replace(struct pack *pk, uint32_t off, const void *data,
                  uint32_t len);

/* Free the block: an empty pack again. */
void pack_free(struct pack *pk);

/* Bytes the block holds (malloc's usable size: MEMORY USAGE). */
size_t pack_owned(const struct pack *pk);

/* A copy of src into dst (an empty pack). false when memory runs out. */
bool pack_copy(struct pack *dst, const struct pack *src);

/* Check a block read from a file or a stream: every entry whole, count
 * entries in exactly bytes. */
bool pack_valid(const unsigned char *p, size_t bytes, uint32_t count);

#endif
