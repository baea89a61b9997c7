/*
 * load.h - Redis's RDB format into cellgate's keyspace: one object (what
 * RESTORE takes) and a whole RDB file (start-up with Redis's --dir and
 * --dbfilename). See load.c.
 */
#ifndef CELLGATE_RDB_LOAD_H
#define CELLGATE_RDB_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/hmap.h"
#include "lib/qlist.h"
#include "lib/rdb_read.h"
#include "lib/set.h"
#include "lib/zset.h"

/* Does the file at path start with Redis's magic "REDIS"? */
bool rdb_is_rdb_file(const char *path);

/* Load the RDB file at path into the (empty) databases: every database,
 * key, expiry and function library. 0; 1 when there is no such file; -1
 * with err (naming the byte offset where it went wrong: "... at offset
 * N") and every database emptied. */
int rdb_load_file(const char *path, char *err, size_t errlen);

/* The same over bytes in memory (a file read by someone else: a full
 * sync's transfer); path only names them in the log. */
int rdb_load_buffer(const unsigned char *p, size_t len, const char *path,
                    char *err, size_t errlen);

/* What the last load read of the replication AUX fields (Redis writes
 * them for a replica's PSYNC): repl-id ("" when absent), repl-offset and
 * repl-stream-db (-1 when absent). */
struct rdb_load_info {
    char repl_id[41];
    int64_t repl_offset;
    int repl_stream_db;
};
const struct rdb_load_info *rdb_last_load_info(void);

/* ---- one object --------------------------------------------------------- */

/* How reading an object went. */
enum rdb_obj_rc {
    RDB_OBJ_OK,
    RDB_OBJ_EMPTY,          /* a collection with no element: Redis skips it */
    RDB_OBJ_SKIPPED,        /* a stream or module key, read over (skip) */
    RDB_OBJ_UNSUPPORTED,    /* a stream or module key cellgate cannot hold */
    RDB_OBJ_BAD,            /* malformed: why says how */
    RDB_OBJ_NOMEM,
};

/* An object read: a string (KEY_INT with its value, or KEY_STR with its
 * bytes in str), a collection built in cellgate's own encodings (coll,
 * owned until handed over: then set handed), or a limiter of cellgate's
 * own payload (its state's bytes, pointing into the input, and their
 * encoding). Zeroed before the first read; rdb_obj_free() after each. */
struct rdb_obj {
    uint8_t type;               /* enum key_type; 0 when skipped */
    int64_t ival;               /* KEY_INT */
    struct rdb_str str;         /* KEY_STR */
    union {
        struct qlist list;
        struct hmap hash;
        struct zset zset;
        struct set set;
    } coll;
    bool handed;                /* coll now belongs to a record */
    uint8_t encoding;           /* a limiter's state: */
    const unsigned char *state;
    size_t state_len;
    const char *why;            /* RDB_OBJ_BAD: what was wrong */
};

/* Read one object of RDB type rdbtype at c. skip_unsupported: read a
 * stream or module 2 key over (RDB_OBJ_SKIPPED) instead of answering
 * RDB_OBJ_UNSUPPORTED. */
enum rdb_obj_rc rdb_load_object(struct rdb_cur *c, uint8_t rdbtype,
                                bool skip_unsupported, struct rdb_obj *o);

/* Free what o holds (a collection not handed over, a string's buffer),
 * ready for the next read. */
void rdb_obj_free(struct rdb_obj *o);

/* The state a record of o's type holds (coll's struct), for
 * keyspace_set_coll() and keyspace_restore_coll(). */
const void *rdb_obj_coll(const struct rdb_obj *o);

#endif
