/*
 * save.h - the keyspace in Redis's RDB format, written: one record as
 * DUMP's payload, the whole keyspace as an RDB file that redis-server
 * 7.0.15 loads (the way back from cellgate to Redis: `redis-cli --rdb`,
 * SYNC). Each value is written with the RDB type Redis 7.0 itself would
 * write for it under the running configuration:
 *
 *   strings      0 (RDB_TYPE_STRING); CL.THROTTLE's TAT and INCREX's
 *                counters are strings, written as such
 *   lists        18 (quicklist 2): listpack nodes of up to 8 KB, as
 *                list-max-listpack-size -2 fills them
 *   sets         11 (intset) while every member is an integer and there
 *                are at most set-max-intset-entries; else 2 (7.0 has no
 *                listpack set)
 *   hashes       16 (listpack) within hash-max-listpack-entries and
 *                -value; else 4
 *   sorted sets  17 (listpack) within zset-max-listpack-entries and
 *                -value; else 5 (ZSET_2: binary doubles)
 *   limiters     0xC8, cellgate's own payload (DUMP only; Redis answers
 *                its RESTORE "ERR Bad data format"):
 *                  0xC8, KS_ENCODING (1 byte), the key type (1 byte),
 *                  keytype_encode()'s bytes as an RDB length and bytes
 *                An RDB file leaves such keys out, and counts them.
 */
#ifndef CELLGATE_RDB_SAVE_H
#define CELLGATE_RDB_SAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"
#include "lib/rdb.h"
#include "server/store.h"

/* Append DUMP's payload of record r at now to out: the RDB type byte, the
 * object, RDB version 10 in 2 bytes little-endian, the CRC-64 of all
 * before it in 8 bytes little-endian. false when memory ran out. */
bool rdb_dump_payload(const struct store_rec *r, int64_t now,
                      struct membuf *out);

/* Can Redis hold r (a string or one of its collections), or is it one of
 * cellgate's limiter types? */
bool rdb_can_hold(const struct store_rec *r);

/* FUNCTION's libraries (funcset.h's bytes: u32 length and code, per
 * library) as RDB's FUNCTION2 records, appended to out: what an RDB file
 * and FUNCTION DUMP's payload hold. false when memory ran out. */
bool rdb_put_functions(const unsigned char *set, size_t len,
                       struct membuf *out);

/* What a file for a replica says of replication (its repl-* aux fields),
 * and what it leaves out. */
struct rdb_repl_info {
    int stream_db;
    const char *replid;
    int64_t offset;
    bool functions_only;        /* REPLCONF rdb-filter-only functions */
};

/* Write every database, expiry and function library at now as an RDB
 * file at path (through a temporary file, renamed; fsynced), as a forked
 * child does; repl: NULL for a file no replica asked for, as Redis writes
 * it, else its aux fields and filter. *left_out: the limiter keys Redis
 * cannot hold, not written (also logged). 0, or -1 with err. */
int rdb_save_file(const char *path, const struct rdb_repl_info *repl,
                  uint64_t *left_out, char *err, size_t errlen);

#endif
