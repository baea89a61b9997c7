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
 * and so does this file, with the same compressor choices (lib/lzf.h).
 * Reading also takes 0xF6, the 7.0 release candidates' library (name,
 * engine, description, code apart), as Redis does.
 */
#include "server/script/payload.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/crc64.h"
#include "lib/lzf.h"
#include "lib/rdb_read.h"
#include "server/errors.h"
#include "server/script/function.h"

#define OPCODE_FUNCTION 0xF6        /* 7.0 rc1/rc2 */
#define OPCODE_FUNCTION2 0xF5
#define RDB_VERSION 10
#define ENC_INT8 0
#define ENC_INT16 1
#define ENC_INT32 2
#define ENC_LZF 3
#define FOOTER 10

/* ---- writing ------------------------------------------------------------ */

static bool
put_len(struct membuf *b, uint64_t len)
{
    unsigned char buf[9];
    size_t n;
    if (len < 64) {
        buf[0] = (unsigned char)len;
        n = 1;
    } else if (len < 16384) {
        buf[0] = (unsigned char)(0x40 | (len >> 8));
        buf[1] = (unsigned char)len;
        n = 2;
    } else if (len <= UINT32_MAX) {
        buf[0] = 0x80;
        for (int i = 0; i < 4; i++) {
            buf[1 + i] = (unsigned char)(len >> (24 - 8 * i));
        }
        n = 5;
    } else {
        buf[0] = 0x81;
        for (int i = 0; i < 8; i++) {
            buf[1 + i] = (unsigned char)(len >> (56 - 8 * i));
        }
        n = 9;
    }
    return membuf_put(b, buf, n);
}

/* Redis's rdbSaveLzfStringObject(): 1 written, 0 when LZF does not save
 * 4 bytes, -1 when memory ran out. */
static int
put_lzf(struct membuf *b, const char *s, size_t len)
{
    size_t outlen = len - 4;
    unsigned char *out = mem_malloc(outlen + 1);
    if (out == NULL) {
        return -1;
    }
    size_t n = lzf_compress((const uint8_t *)s, len, out, outlen);
    unsigned char mark = 0xC0 | ENC_LZF;
    int rc = n == 0 ? 0
             : membuf_put(b, &mark, 1) && put_len(b, n) && put_len(b, len) &&
                       membuf_put(b, out, n)
                 ? 1
                 : -1;
    mem_free(out);
    return rc;
}

/* A library's code is never an integer's canonical text (it starts with
 * "#!"), so Redis's integer encoding never applies. */
static bool
put_string(struct membuf *b, const char *s, size_t len)
{
    if (len > 20) {
        int rc = put_lzf(b, s, len);
        if (rc != 0) {
            return rc > 0;
        }
    }
    return put_len(b, len) && membuf_put(b, s, len);
}

static bool
dump_one(const char *code, size_t len, void *arg)
{
    unsigned char op = OPCODE_FUNCTION2;
    return membuf_put(arg, &op, 1) && put_string(arg, code, len);
}

bool
payload_dump(struct membuf *out)
{
    unsigned char footer[FOOTER] = { RDB_VERSION & 0xff, RDB_VERSION >> 8 };
    if (!function_each_code(dump_one, out) || !membuf_put(out, footer, 2)) {
        return false;
    }
    uint64_t crc = crc64_update(0, out->p, out->len);
    for (int i = 0; i < 8; i++) {
        footer[2 + i] = (unsigned char)(crc >> (8 * i));
    }
    return membuf_put(out, footer + 2, 8);
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
    struct rdb_cur r = rdb_cur_make(p, len - FOOTER);
    while (rdb_left(&r) > 0) {
        if (!read_library(&r, set, err, errlen)) {
            return -1;
        }
    }
    return 0;
}
