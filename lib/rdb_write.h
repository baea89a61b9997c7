/*
 * rdb_write.h - Redis's RDB format, written: the bytes Redis 7.0.15's
 * rdb.c, listpack.c and intset.c write for the same values, so that
 * redis-server reads what cellgate writes (DUMP's payload, the RDB file
 * of the way back, FUNCTION DUMP's payload).
 *
 *   a length      6 bits (00xxxxxx); 14 bits (01xxxxxx, then 8 more);
 *                 0x80 and 32 bits; 0x81 and 64 bits (big-endian)
 *   a string      a canonical integer of at most 11 characters that fits
 *                 32 bits as 0xC0 + 1, 0xC1 + 2 or 0xC2 + 4 bytes (LE);
 *                 else, longer than 20 bytes and when LZF saves 4 bytes
 *                 or more (rdbcompression yes), 0xC3, the compressed and
 *                 the plain length, the compressed bytes; else the length
 *                 and the bytes (rdbSaveRawString())
 *   a double      8 bytes, IEEE 754 little-endian (ZSET_2's scores)
 *   a listpack    total bytes (u32 LE), count (u16 LE, 65535 = unknown),
 *                 the entries, 0xFF; each entry as lpAppend() encodes it:
 *                 a canonical int64 in 7, 13, 16, 24, 32 or 64 bits, any
 *                 other string with a 6, 12 or 32-bit length, then its
 *                 back-length (the entry's size, 7 bits a byte, the last
 *                 byte first when read backwards)
 *   an intset     encoding (u32 LE: 2, 4 or 8 bytes a member), count (u32
 *                 LE), the members in increasing order (LE)
 *   a footer      RDB version 10 (u16 LE), the CRC-64 of every byte
 *                 before it (u64 LE): DUMP's and FUNCTION DUMP's payloads
 *
 * Every function appends to a membuf and returns false (b perhaps holding
 * a part) when memory ran out.
 */
#ifndef CELLGATE_RDB_WRITE_H
#define CELLGATE_RDB_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"
#include "lib/rdb.h"

bool rdb_put_byte(struct membuf *b, uint8_t v);
bool rdb_put_len(struct membuf *b, uint64_t len);

/* A string as rdbSaveRawString() writes it (integer, LZF or plain). */
bool rdb_put_string(struct membuf *b, const void *s, size_t len);

/* An int64 as Redis writes a string object holding it
 * (rdbSaveLongLongAsStringObject()): encoded when it fits 32 bits, else
 * its decimal text. */
bool rdb_put_int_string(struct membuf *b, int64_t v);

/* A double as rdbSaveBinaryDoubleValue() writes it. */
bool rdb_put_double(struct membuf *b, double d);

/* The RDB version and the CRC-64 of b's bytes from `from` on. */
bool rdb_put_footer(struct membuf *b, size_t from);

/* ---- a listpack, built entry by entry ------------------------------------
 *
 *   struct rdb_listpack lp;
 *   rdb_lp_begin(&lp, &buf);   then rdb_lp_add() per entry,
 *   rdb_lp_end(&lp);           the header and the end byte
 *
 * The listpack's bytes go into buf from where it stood at begin.
 */
struct rdb_listpack {
    struct membuf *b;
    size_t start;               /* where its header is in b */
    uint64_t count;
};

bool rdb_lp_begin(struct rdb_listpack *lp, struct membuf *b);
bool rdb_lp_add(struct rdb_listpack *lp, const void *s, size_t len);
bool rdb_lp_add_int(struct rdb_listpack *lp, int64_t v);
bool rdb_lp_end(struct rdb_listpack *lp);

/* The bytes an entry of s takes in a listpack (for splitting nodes). */
size_t rdb_lp_entry_size(const void *s, size_t len);

/* ---- an intset ---------------------------------------------------------- */

/* The n members v (increasing) as an intset of the narrowest encoding
 * that holds them all. */
bool rdb_put_intset(struct membuf *b, const int64_t *v, size_t n);

#endif
