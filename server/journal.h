/*
 * journal.h - effect records: what the keyspace's writes did, as the bytes
 * the journal file keeps and the replication stream carries, and the one
 * place that hands them to both.
 *
 * A record says what a key became, never which command made it so: the
 * key, its database, its type, its new state and expiry (absolute: the
 * Unix ms it lives through). Replaying a record twice therefore changes nothing,
 * except SWAP, which is only ever written once, in order. keyspace.c is the
 * only producer: it decides what goes in (and coalesces a key written many
 * times in one loop pass into one record). Once per pass,
 * keyspace_publish() hands the pass's records to every attached sink side
 * by side, as Redis's propagate() feeds the AOF and the replicas: the
 * journal file (persist/) and the replication stream (repl/). Neither
 * feeds the other, and this file knows neither: each attaches its own
 * function.
 *
 * Record (host byte order, like the snapshot):
 *   u32 len, u32 ~len, u32 CRC-32C of the payload, payload of len bytes:
 *     u8 op, then
 *       JOURNAL_SET    u32 db, u8 type, u32 keylen, i64 expire_at (ms), key,
 *                      state (keytype_encode(), KS_ENCODING): the rest
 *       JOURNAL_DEL    u32 db, key: the rest
 *       JOURNAL_FLUSH  u32 db, or JOURNAL_ALL_DBS
 *       JOURNAL_SWAP   u32 a, u32 b
 *       JOURNAL_GROUP  u32 n, then n whole records (version 2): effects
 *                      that reach a restart or a replica together or not
 *                      at all (a transaction's; a script's), as Redis
 *                      wraps them in MULTI/EXEC. One record, one CRC, so a
 *                      torn group is dropped whole.
 *       JOURNAL_ELEM   u32 db, u8 type, u32 keylen, i64 expire_at,
 *                      u8 elem_op, key, then the element's bytes: the rest
 *                      (version 2): a change to part of a key (a long
 *                      string's bytes an APPEND wrote; one element of a
 *                      list or sorted set), so a key that grows is not
 *                      written whole; keyspace_apply_record() hands it to
 *                      the type's element codec.
 *       JOURNAL_FUNCTIONS  FUNCTION's whole set of libraries after a change
 *                      (funcset.h's bytes): the rest; an empty rest, none.
 * The header's ~len tells a torn tail (a prefix of a good record: the
 * header is whole and the record runs past the end of the file) from a
 * damaged one (the header disagrees with itself).
 *
 * A journal file is JOURNAL_MAGIC then records. Version 3 keeps expire_at
 * as the Unix ms the key lives through (store.h); versions 1 ("CGJRNL01",
 * no GROUP or ELEM records) and 2 kept the ns it was dead from, and the
 * reader hands theirs over converted (store_expiry_from_ns()).
 */
#ifndef CELLGATE_JOURNAL_H
#define CELLGATE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOURNAL_MAGIC "CGJRNL03"
#define JOURNAL_MAGIC_V2 "CGJRNL02"
#define JOURNAL_MAGIC_V1 "CGJRNL01"
#define JOURNAL_VERSION 3
#define JOURNAL_MAGIC_LEN 8
#define JOURNAL_HEADER_LEN 12
#define JOURNAL_ALL_DBS UINT32_MAX
/* The largest payload a record may claim (a full RL.LOG of META, with
 * room): a larger len is damage, not a record. */
#define JOURNAL_RECORD_MAX (2u << 30)

enum journal_op {
    JOURNAL_SET = 1,
    JOURNAL_DEL = 2,
    JOURNAL_FLUSH = 3,
    JOURNAL_SWAP = 4,
    JOURNAL_GROUP = 5,
    JOURNAL_ELEM = 6,
    JOURNAL_FUNCTIONS = 7,
};

/* ---- the pass's records ------------------------------------------------ */

/* Append a record to the pass's buffer (no I/O). false when memory ran
 * out: the pass is marked incomplete, and its sinks hear so (a hole must
 * never be written or streamed as if nothing were missing). */
bool journal_add_set(uint32_t db, uint8_t type, const char *key,
                     size_t keylen, int64_t expire_at, const void *state,
                     size_t state_len);
bool journal_add_del(uint32_t db, const char *key, size_t keylen);
bool journal_add_flush(uint32_t db);
bool journal_add_swap(uint32_t a, uint32_t b);
/* The function set's bytes (funcset.h); set NULL with len nonzero: they
 * could not be made, and the pass is marked incomplete. */
bool journal_add_functions(const void *set, size_t len);
bool journal_add_elem(uint32_t db, uint8_t type, const char *key,
                      size_t keylen, int64_t expire_at, uint8_t elem_op,
                      const void *elem, size_t elem_len);

/* The records added from journal_group_begin() to journal_group_end()
 * become one JOURNAL_GROUP record (left as they are when there is only
 * one). Groups do not nest: an inner begin/end pair is part of the outer
 * group. */
void journal_group_begin(void);
void journal_group_end(void);

/* redis.set_repl(): the records added from now on go only to the sinks
 * of the mask `to` (bit i = enum journal_sink i; JOURNAL_TO_ALL, the
 * default, or none at all), until the next call. A group holding records
 * for different sinks reaches each sink holding only its own. */
void journal_set_sinks(unsigned to);

/* Bytes of records waiting for journal_publish(); the bytes the pass's
 * buffer takes (kept between passes, up to a bound), which maxmemory does
 * not count (keyspace.h: keyspace_set_not_counted()). */
size_t journal_pending(void);
size_t journal_buffer_memory(void);

/* ---- sinks --------------------------------------------------------------- */

/* A sink gets each pass's records (whole records, possibly none); complete
 * is false when some of them could not be built (out of memory). */
typedef void (*journal_sink_fn)(const unsigned char *records, size_t len,
                                bool complete);

enum journal_sink {
    JOURNAL_SINK_FILE,          /* appendonly: the journal file */
    JOURNAL_SINK_REPLICAS,      /* a primary's replication stream */
    JOURNAL_SINKS
};
#define JOURNAL_TO_ALL ((1u << JOURNAL_SINKS) - 1)   /* journal_set_sinks() */

/* Attach fn as sink `which` (NULL detaches it). While any sink is
 * attached, srv.journal_on is true and the keyspace makes records. */
void journal_attach(enum journal_sink which, journal_sink_fn fn);
bool journal_attached(enum journal_sink which);

/* The pass's records to every attached sink, in the order of
 * enum journal_sink, then the buffer is empty. */
void journal_publish(void);

/* Whole records a primary streamed (a replica's): to the file sink only,
 * after the pass's own; the stream itself is passed on to our replicas
 * byte for byte as it came, so their offsets stay the primary's. */
void journal_publish_upstream(const void *records, size_t len);

/* ---- reading ----------------------------------------------------------- */

struct journal_record {
    uint8_t op;
    uint32_t db;                /* SWAP: a */
    uint32_t db2;               /* SWAP: b */
    uint8_t type;               /* SET, ELEM */
    uint8_t elem_op;            /* ELEM */
    uint32_t count;             /* GROUP: records in it */
    int64_t expire_at;          /* SET, ELEM: ms (store.h) */
    int version;                /* of the file or stream it came from */
    const char *key;            /* SET, DEL, ELEM */
    size_t keylen;
    const unsigned char *state; /* SET: the state; ELEM: the element's
                                 * bytes; GROUP: its records; FUNCTIONS:
                                 * the set */
    size_t state_len;
};

struct journal_reader {
    const unsigned char *buf;
    size_t len;
    size_t off;                 /* of the next record, or of the bad one */
    int version;                /* JOURNAL_VERSION, or the file's */
};

enum journal_read {
    JOURNAL_RECORD,             /* *rec filled, off moved past it */
    JOURNAL_END,                /* every byte read */
    JOURNAL_TORN,               /* the bytes from off on are a torn tail */
    JOURNAL_DAMAGED,            /* the record at off is damaged */
};

/* A reader over a whole journal file's bytes: false when they do not
 * start with the magic of a version this build reads. */
bool journal_reader_init(struct journal_reader *r, const unsigned char *buf,
                         size_t len);

/* A reader over bare records of the given version (a stream's:
 * JOURNAL_VERSION; a group's: its record's). */
static inline void
journal_reader_records(struct journal_reader *r, const unsigned char *buf,
                       size_t len, int version)
{
    *r = (struct journal_reader){ buf, len, 0, version };
}

enum journal_read journal_next(struct journal_reader *r,
                               struct journal_record *rec);

#endif
