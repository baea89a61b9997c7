/*
 * payload.c - FUNCTION DUMP and FUNCTION RESTORE's payload, as Redis 7.0
 * writes it (cluster tools copy functions to a new node this way, from
 * redis-server to cellgate and back):
 *
 *   for each library: 0xF5 (RDB_OPCODE_FUNCTION2), its code as an RDB
 *   string; then the RDB version, 10, in 2 bytes little-endian, and the
 *   CRC-64 (lib/crc64.h) of everything before it, 8 bytes little-endian.
 *
 * An RDB string is its length (6 bits; 14 bits; 0x80 and 32 bits; 0x81 and
 * 64 bits, big-endian) then its bytes, or an encoded value (11xxxxxx): an
 * integer of 8, 16 or 32 bits, or LZF (its compressed and its plain length,
 * then the compressed bytes). Redis compresses a string longer than 20
 * bytes when LZF saves 4 bytes or more (rdbcompression yes, its default),
 * and so does this file, through lib/rdb_write.h (the same compressor
 * choices, lib/lzf.h).
 * Reading also takes 0xF6, the 7.0 release candidates' library (name,
 * engine, description, code apart), as Redis does.
 */
#include "server/script/payload.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/rdb_read.h"
#include "lib/rdb_write.h"
#include "server/errors.h"
#include "server/script/function.h"

#define OPCODE_FUNCTION 0xF6        /* 7.0 rc1/rc2 */
#define OPCODE_FUNCTION2 0xF5

/* ---- writing ------------------------------------------------------------ */

/* A library's code is never an integer's canonical text (it starts with
 * "#!"), so rdb_put_string() writes it plain or LZF-compressed. */
static bool
dump_one(const char *code, size_t len, void *arg)
{
    return rdb_put_byte(arg, RDB_OPCODE_FUNCTION2) &&
           rdb_put_string(arg, code, len);
}

bool
payload_dump(struct membuf *out)
{
    size_t from = out->len;
    return function_each_code(dump_one, out) && rdb_put_footer(out, from);
}

/* ---- reading ------------------------------------------------------------ */

/* One library into set as u32 len then code; false with err. The RDB
 * reading is lib/rdb_read.h's. */
static bool
read_library(struct rdb_cur *r, struct membuf *set, char *err, size_t errlen)
{
    uint8_t type;
    struct membuf code = { 0 };
    if (!rdb_read_u8(r, &type)) {
        snprintf(err, errlen, "ERR can not read data type");
        return false;
    }
    if (type != OPCODE_FUNCTION && type != OPCODE_FUNCTION2) {
        snprintf(err, errlen, "ERR given type is not a function");
        return false;
    }
    bool ok = rdb_read_function(r, type, &code);
    uint32_t n = (uint32_t)code.len;
    if (!ok || code.len > UINT32_MAX) {
        snprintf(err, errlen, type == OPCODE_FUNCTION2
                                  ? "ERR Failed loading library payload"
                                  : ERR_FUNCTIONS_PAYLOAD);
        ok = false;
    } else if (!membuf_put(set, &n, 4) || !membuf_put(set, code.p, n)) {
        snprintf(err, errlen, ERR_NOMEM);
        ok = false;
    }
    mem_free(code.p);
    return ok;
}

int
payload_read(const unsigned char *p, size_t len, struct membuf *set,
             char *err, size_t errlen)
{
    if (!rdb_payload_verified(p, len)) {
        snprintf(err, errlen, ERR_DUMP_PAYLOAD);
        return -1;
    }
    /* As Redis: libraries until the last 10 bytes (version and CRC). */
    struct rdb_cur r = rdb_cur_make(p, len - RDB_FOOTER);
    while (rdb_left(&r) > 0) {
        if (!read_library(&r, set, err, errlen)) {
            return -1;
        }
    }
    return 0;
}
