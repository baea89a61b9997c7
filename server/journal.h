/*
 * journal.h - the append-only journal file: effect records, checked one by
 * one, written in batches.
 *
 * A record says what a key became, never which command made it so: the key,
 * its database, its type, its new state and expiry (absolute wall-clock
 * ns). Replaying a record twice therefore changes nothing, except SWAP,
 * which is only ever written once, in order. keyspace.c decides what goes
 * in (and coalesces a key written many times between two writes into one
 * record); persist.c decides which file and when to fsync; this file only
 * frames, buffers, writes and reads records.
 *
 * File (host byte order, like the snapshot): "CGJRNL01", then records:
 *   u32 len, u32 ~len, u32 CRC-32C of the payload, payload of len bytes:
 *     u8 op, then
 *       JOURNAL_SET    u32 db, u8 type, u32 keylen, i64 expire_at, key,
 *                      state (keyspace_encode(), KS_ENCODING): the rest
 *       JOURNAL_DEL    u32 db, key: the rest
 *       JOURNAL_FLUSH  u32 db, or JOURNAL_ALL_DBS
 *       JOURNAL_SWAP   u32 a, u32 b
 * The header's ~len tells a torn tail (a prefix of a good record: the
 * header is whole and the record runs past the end of the file) from a
 * damaged one (the header disagrees with itself).
 */
#ifndef CELLGATE_JOURNAL_H
#define CELLGATE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOURNAL_MAGIC "CGJRNL01"
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
};

/* ---- writing ----------------------------------------------------------- */

/* Open path for appending (created with its magic when new or empty).
 * Records added before stay in the buffer for the new file. 0, or -1 with
 * err. */
int journal_open(const char *path, char *err, size_t errlen);

/* fsync and close the file, and drop the buffer: journal_write() first. */
void journal_close(void);
bool journal_is_open(void);

/* Append a record to the in-memory buffer (no I/O). false when memory ran
 * out: the buffer is marked broken (journal_write() then fails with
 * ENOMEM) so no later record can be written after a hole. */
bool journal_add_set(uint32_t db, uint8_t type, const char *key,
                     size_t keylen, int64_t expire_at, const void *state,
                     size_t state_len);
bool journal_add_del(uint32_t db, const char *key, size_t keylen);
bool journal_add_flush(uint32_t db);
bool journal_add_swap(uint32_t a, uint32_t b);

/* Bytes buffered and not yet written to the file. */
size_t journal_buffered(void);

/* The records added since the last call (for the replication stream);
 * they count as given from then on. */
const unsigned char *journal_unfed(size_t *len);

/* Whole records read from a primary's stream, appended as they are (a
 * replica's own journal); never handed to journal_unfed(). */
bool journal_add_raw(const void *records, size_t len);

/* Write the buffer to the file. A short or failed write is cut back off
 * the file (so it never holds half a record) and the bytes stay buffered
 * for the next try. 0, or -1 with errno kept for journal_last_errno(). */
int journal_write(void);

/* fdatasync the file now. 0, or -1 (errno kept). */
int journal_sync(void);

/* Start an fdatasync on libuv's thread pool unless one is running; cb-less:
 * journal_sync_running() and journal_last_sync_ns() tell how it went. */
void journal_sync_background(void);
bool journal_sync_running(void);

/* The errno of the last background fdatasync once it ended, 0 if it
 * worked (or one is running). */
int journal_background_sync_error(void);

/* The errno of the last failed write or sync (0 after a good one), how
 * long the last fsync took. */
int journal_last_errno(void);
int64_t journal_last_sync_ns(void);
uint64_t journal_syncs(void);

/* ---- reading ----------------------------------------------------------- */

struct journal_record {
    uint8_t op;
    uint32_t db;                /* SWAP: a */
    uint32_t db2;               /* SWAP: b */
    uint8_t type;               /* SET */
    int64_t expire_at;          /* SET */
    const char *key;            /* SET, DEL */
    size_t keylen;
    const unsigned char *state; /* SET */
    size_t state_len;
};

struct journal_reader {
    const unsigned char *buf;
    size_t len;
    size_t off;                 /* of the next record, or of the bad one */
};

enum journal_read {
    JOURNAL_RECORD,             /* *rec filled, off moved past it */
    JOURNAL_END,                /* every byte read */
    JOURNAL_TORN,               /* the bytes from off on are a torn tail */
    JOURNAL_DAMAGED,            /* the record at off is damaged */
};

/* A reader over a whole file's bytes: false when they do not start with
 * the magic. */
bool journal_reader_init(struct journal_reader *r, const unsigned char *buf,
                         size_t len);
enum journal_read journal_next(struct journal_reader *r,
                               struct journal_record *rec);

#endif
