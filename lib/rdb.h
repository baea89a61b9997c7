/*
 * rdb.h - the numbers of Redis's RDB format that its reader
 * (lib/rdb_read.h) and its writer (lib/rdb_write.h) share: object types,
 * opcodes, the version, a payload's footer.
 */
#ifndef CELLGATE_RDB_H
#define CELLGATE_RDB_H

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

#endif
