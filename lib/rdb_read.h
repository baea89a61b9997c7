/*
 * rdb_read.h - Redis's RDB format read: the pieces every RDB object and
 * file is made of, over a bounds-checked cursor on bytes in memory (a DUMP
 * payload, a whole RDB file mapped or read once). Nothing here allocates
 * but an LZF string's plain bytes (into the string's own buffer, reused
 * from one string to the next), and nothing reads past the span it was
 * given: every malformed input is a false, never a crash.
 *
 * The packed encodings (intset, ziplist, listpack, zipmap) are checked
 * whole first, as Redis 7.0.15 checks them with sanitize-dump-payload yes
 * (intsetValidateIntegrity(), ziplistValidateIntegrity(),
 * lpValidateIntegrity(), zipmapValidateIntegrity() with deep set: every
 * entry's header, length and back-length, the count in the header), then
 * walked with an iterator that trusts what the check accepted. Duplicate
 * fields and members are the loader's to find (server/rdb/load.c: the
 * collection it builds says when an insert found one already there).
 */
#ifndef CELLGATE_RDB_READ_H
#define CELLGATE_RDB_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"

/* The RDB types and opcodes Redis 7.0.15 writes or reads (rdb.h). */
enum {
    RDB_TYPE_STRING = 0,
    RDB_TYPE_LIST = 1,
    RDB_TYPE_SET = 2,
    RDB_TYPE_ZSET = 3,
    RDB_TYPE_HASH = 4,
    RDB_TYPE_ZSET_2 = 5,
    RDB_TYPE_MODULE = 6,
    RDB_TYPE_MODULE_2 = 7,
    RDB_TYPE_HASH_ZIPMAP = 9,
    RDB_TYPE_LIST_ZIPLIST = 10,
    RDB_TYPE_SET_INTSET = 11,
    RDB_TYPE_ZSET_ZIPLIST = 12,
    RDB_TYPE_HASH_ZIPLIST = 13,
    RDB_TYPE_LIST_QUICKLIST = 14,
    RDB_TYPE_STREAM_LISTPACKS = 15,
    RDB_TYPE_HASH_LISTPACK = 16,
    RDB_TYPE_ZSET_LISTPACK = 17,
    RDB_TYPE_LIST_QUICKLIST_2 = 18,
    RDB_TYPE_STREAM_LISTPACKS_2 = 19,
    RDB_TYPE_CELLGATE = 0xC8,       /* cellgate's limiters (docs/migrate.md) */
    RDB_OPCODE_FUNCTION2 = 0xF5,
    RDB_OPCODE_FUNCTION = 0xF6,     /* 7.0 release candidates */
    RDB_OPCODE_MODULE_AUX = 0xF7,
    RDB_OPCODE_IDLE = 0xF8,
    RDB_OPCODE_FREQ = 0xF9,
    RDB_OPCODE_AUX = 0xFA,
    RDB_OPCODE_RESIZEDB = 0xFB,
    RDB_OPCODE_EXPIRETIME_MS = 0xFC,
    RDB_OPCODE_EXPIRETIME = 0xFD,
    RDB_OPCODE_SELECTDB = 0xFE,
    RDB_OPCODE_EOF = 0xFF,
};

/* The newest RDB version read (Redis 7.0's), and a payload's footer: the
 * version in 2 bytes, the CRC-64 in 8, both little-endian. */
#define RDB_VERSION 10
#define RDB_FOOTER 10

/* quicklist 2's node containers. */
#define RDB_QUICKLIST_PLAIN 1
#define RDB_QUICKLIST_PACKED 2

/* A cursor over [base, base + len): off is where the next read starts,
 * which an error names ("at offset N"). */
struct rdb_cur {
    const unsigned char *base;
    size_t len;
    size_t off;
};

static inline struct rdb_cur
rdb_cur_make(const void *p, size_t len)
{
    struct rdb_cur c = { p, len, 0 };
    return c;
}

static inline size_t
rdb_left(const struct rdb_cur *c)
{
    return c->len - c->off;
}

/* The next n bytes where they lie; false (nothing read) if fewer remain. */
bool rdb_read_raw(struct rdb_cur *c, size_t n, const unsigned char **at);
bool rdb_read_u8(struct rdb_cur *c, uint8_t *v);
/* Little-endian integers (EXPIRETIME's seconds, EXPIRETIME_MS...). */
bool rdb_read_le32(struct rdb_cur *c, uint32_t *v);
bool rdb_read_le64(struct rdb_cur *c, uint64_t *v);

/* A length: 6 bits, 14 bits, 0x80 then 32 bits, 0x81 then 64 bits (big-
 * endian), or a special encoding 11xxxxxx (*encoded set, its 6 bits in
 * *len). false past the end or on 0x82..0xBF. */
bool rdb_read_len_enc(struct rdb_cur *c, uint64_t *len, bool *encoded);
/* A plain length (an encoding is an error). */
bool rdb_read_len(struct rdb_cur *c, uint64_t *len);

/* An RDB string: raw bytes (pointing into the span), an integer of 8, 16
 * or 32 bits (its decimal text in `text`), or LZF (decompressed into
 * `lzf`, owned: rdb_str_free()). p and len are the string's bytes until
 * the next read into the same struct. A zeroed struct is ready. */
struct rdb_str {
    const unsigned char *p;
    size_t len;
    bool is_int;                /* an integer encoding: v holds it */
    int64_t v;
    char text[24];
    struct membuf lzf;
};
bool rdb_read_string(struct rdb_cur *c, struct rdb_str *s);
void rdb_str_free(struct rdb_str *s);
/* Skip a string without decoding it (an LZF one's lengths checked). */
bool rdb_skip_string(struct rdb_cur *c);

/* A function library after its opcode: FUNCTION2's code, or the 7.0
 * release candidates' FUNCTION (name, engine, an optional description,
 * code) made into the code's "#!<engine> name=<name>" form, as Redis
 * makes it. Appended to code; false when malformed or memory ran out. */
bool rdb_read_function(struct rdb_cur *c, uint8_t opcode,
                       struct membuf *code);

/* RDB_TYPE_ZSET's score: a length byte then its text, 253 nan, 254 +inf,
 * 255 -inf. ZSET_2's: 8 bytes, a little-endian IEEE double. */
bool rdb_read_double_text(struct rdb_cur *c, double *v);
bool rdb_read_double_bin(struct rdb_cur *c, double *v);

/* A DUMP payload's footer as Redis's verifyDumpPayload() checks it: at
 * least 10 bytes, a version up to RDB_VERSION, the CRC-64 of all before
 * the CRC right. */
bool rdb_payload_verified(const unsigned char *p, size_t len);

/* ---- packed encodings --------------------------------------------------- */

/* One element of a packed encoding: bytes, or an integer (is_int: v; its
 * text is the caller's to make when it needs one, rdb_elem_text()). */
struct rdb_elem {
    const unsigned char *p;
    size_t len;
    bool is_int;
    int64_t v;
};

/* The element's bytes: its own, or an integer's decimal text in buf
 * (at least 24 bytes). */
const unsigned char *rdb_elem_text(const struct rdb_elem *e, char *buf,
                                   size_t *len);

/* intset: encoding (2, 4, 8), count, values little-endian, strictly
 * increasing and at least one. */
bool rdb_intset_check(const unsigned char *p, size_t len, uint32_t *count);
int64_t rdb_intset_get(const unsigned char *p, uint32_t i);

/* ziplist, listpack and zipmap: checked whole (the number of entries in
 * *count), then walked by an iterator made over the same bytes. */
bool rdb_ziplist_check(const unsigned char *p, size_t len, uint64_t *count);
bool rdb_listpack_check(const unsigned char *p, size_t len, uint64_t *count);
/* A zipmap's entries are pairs: *count is the number of pairs. */
bool rdb_zipmap_check(const unsigned char *p, size_t len, uint64_t *count);

struct rdb_pack_iter {
    const unsigned char *p;     /* the next entry */
    int kind;
    bool value;                 /* zipmap: the next is a value */
};
void rdb_ziplist_iter(struct rdb_pack_iter *it, const unsigned char *zl);
void rdb_listpack_iter(struct rdb_pack_iter *it, const unsigned char *lp);
void rdb_zipmap_iter(struct rdb_pack_iter *it, const unsigned char *zm);
/* The next element; false at the end. */
bool rdb_pack_next(struct rdb_pack_iter *it, struct rdb_elem *e);

#endif
