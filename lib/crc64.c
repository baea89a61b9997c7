/*
 * crc64.c - see crc64.h. The tables are built on first use: slicing by 8
 * (eight bytes a step through eight tables, as Redis's crcspeed does), so
 * a whole RDB file's check at load costs little beside reading it.
 */
#include "lib/crc64.h"

#include <stdbool.h>
#include <string.h>

/* 0xad93d23594c935a9 with its bits reversed, as a reflected CRC uses it. */
#define POLY_REFLECTED UINT64_C(0x95ac9329ac4bc9b5)

static uint64_t table[8][256];
static bool ready;

static void
build(void)
{
    for (uint64_t i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? POLY_REFLECTED ^ (c >> 1) : c >> 1;
        }
        table[0][i] = c;
    }
    for (int t = 1; t < 8; t++) {
        for (int i = 0; i < 256; i++) {
            uint64_t c = table[t - 1][i];
            table[t][i] = table[0][c & 0xff] ^ (c >> 8);
        }
    }
    ready = true;
}

uint64_t
crc64_update(uint64_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (!ready) {
        build();
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);           /* the bytes in stream order */
#endif
        crc ^= w;
        crc = table[7][crc & 0xff] ^ table[6][(crc >> 8) & 0xff] ^
              table[5][(crc >> 16) & 0xff] ^ table[4][(crc >> 24) & 0xff] ^
              table[3][(crc >> 32) & 0xff] ^ table[2][(crc >> 40) & 0xff] ^
              table[1][(crc >> 48) & 0xff] ^ table[0][crc >> 56];
        p += 8;
        n -= 8;
    }
    for (size_t i = 0; i < n; i++) {
        crc = table[0][(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    }
    return crc;
}
