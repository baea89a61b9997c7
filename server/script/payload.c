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

#include "lib/crc64.h"
#include "lib/lzf.h"
#include "lib/rdb_write.h"
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

/* Redis's verifyDumpPayload(): a version this side reads, the CRC right. */
static bool
verified(const unsigned char *p, size_t len)
{
    if (len < FOOTER) {
        return false;
    }
    const unsigned char *footer = p + len - FOOTER;
    unsigned version = (unsigned)footer[1] << 8 | footer[0];
    if (version > RDB_VERSION) {
        return false;
    }
    uint64_t crc = crc64_update(0, p, len - 8), want = 0;
    for (int i = 0; i < 8; i++) {
        want |= (uint64_t)footer[2 + i] << (8 * i);
    }
    return crc == want;
}

/* A length, or an encoding (*encoded set). false past the end. */
static bool
read_len(struct membuf_reader *r, uint64_t *len, bool *encoded)
{
    unsigned char b0;
    *encoded = false;
    if (!membuf_read(r, &b0, 1)) {
        return false;
    }
    unsigned char buf[8];
    switch (b0 >> 6) {
    case 0:
        *len = b0 & 0x3f;
        return true;
    case 1:
        if (!membuf_read(r, buf, 1)) {
            return false;
        }
        *len = (uint64_t)(b0 & 0x3f) << 8 | buf[0];
        return true;
    case 3:
        *encoded = true;
        *len = b0 & 0x3f;
        return true;
    default:
        break;
    }
    size_t n = b0 == 0x80 ? 4 : b0 == 0x81 ? 8 : 0;
    if (n == 0 || !membuf_read(r, buf, n)) {
        return false;
    }
    *len = 0;
    for (size_t i = 0; i < n; i++) {
        *len = *len << 8 | buf[i];
    }
    return true;
}

/* An integer-encoded string: its decimal text into out. */
static bool
read_int(struct membuf_reader *r, uint64_t enc, struct membuf *out)
{
    unsigned char buf[4];
    size_t n = enc == ENC_INT8 ? 1 : enc == ENC_INT16 ? 2 : 4;
    if (!membuf_read(r, buf, n)) {
        return false;
    }
    int64_t v = n == 1 ? (int8_t)buf[0]
                : n == 2 ? (int16_t)(buf[0] | buf[1] << 8)
                         : (int32_t)((uint32_t)buf[0] | (uint32_t)buf[1] << 8 |
                                     (uint32_t)buf[2] << 16 |
                                     (uint32_t)buf[3] << 24);
    char text[24];
    int tn = snprintf(text, sizeof(text), "%" PRId64, v);
    return membuf_put(out, text, (size_t)tn);
}

static bool
read_lzf(struct membuf_reader *r, struct membuf *out)
{
    uint64_t clen, plen;
    bool enc;
    const unsigned char *c;
    if (!read_len(r, &clen, &enc) || enc || !read_len(r, &plen, &enc) ||
        enc || plen == 0 || plen > (1u << 30) || !membuf_skip(r, clen, &c)) {
        return false;
    }
    size_t at = out->len;
    if (!mem_reserve(&out->p, &out->cap, out->len, plen, 64)) {
        return false;
    }
    if (lzf_decompress(c, clen, out->p + at, plen) != plen) {
        return false;
    }
    out->len += plen;
    return true;
}

/* An RDB string, appended to out. */
static bool
read_string(struct membuf_reader *r, struct membuf *out)
{
    uint64_t len;
    bool encoded;
    const unsigned char *s;
    if (!read_len(r, &len, &encoded)) {
        return false;
    }
    if (!encoded) {
        return membuf_skip(r, len, &s) && membuf_put(out, s, len);
    }
    if (len == ENC_LZF) {
        return read_lzf(r, out);
    }
    return len <= ENC_INT32 && read_int(r, len, out);
}

/* A 7.0 rc library: "#!<engine> name=<name>\n" then its code. */
static bool
read_old_library(struct membuf_reader *r, struct membuf *code)
{
    struct membuf name = { 0 }, engine = { 0 }, skip = { 0 };
    uint64_t has_desc;
    bool enc;
    bool ok = read_string(r, &name) && read_string(r, &engine) &&
              read_len(r, &has_desc, &enc) && !enc &&
              (has_desc == 0 || read_string(r, &skip)) &&
              membuf_put(code, "#!", 2) &&
              membuf_put(code, engine.p, engine.len) &&
              membuf_put(code, " name=", 6) &&
              membuf_put(code, name.p, name.len) &&
              membuf_put(code, "\n", 1) && read_string(r, code);
    mem_free(name.p);
    mem_free(engine.p);
    mem_free(skip.p);
    return ok;
}

/* One library into set as u32 len then code; false with err. */
static bool
read_library(struct membuf_reader *r, struct membuf *set, char *err,
             size_t errlen)
{
    unsigned char type;
    struct membuf code = { 0 };
    if (!membuf_read(r, &type, 1)) {
        snprintf(err, errlen, "ERR can not read data type");
        return false;
    }
    if (type != OPCODE_FUNCTION && type != OPCODE_FUNCTION2) {
        snprintf(err, errlen, "ERR given type is not a function");
        return false;
    }
    bool ok = type == OPCODE_FUNCTION2 ? read_string(r, &code)
                                       : read_old_library(r, &code);
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
    if (!verified(p, len)) {
        snprintf(err, errlen, "ERR DUMP payload version or checksum are "
                 "wrong");
        return -1;
    }
    /* As Redis: libraries until the last 10 bytes (version and CRC). */
    struct membuf_reader r = { p, len - FOOTER };
    while (r.left > 0) {
        if (!read_library(&r, set, err, errlen)) {
            return -1;
        }
    }
    return 0;
}
