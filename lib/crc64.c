/*
 * crc64.c - see crc64.h. The table is built on first use.
 */
#include "lib/crc64.h"

#include <stdbool.h>

/* 0xad93d23594c935a9 with its bits reversed, as a reflected CRC uses it. */
#define POLY_REFLECTED UINT64_C(0x95ac9329ac4bc9b5)

static uint64_t table[256];
static bool ready;

static void
build(void)
{
    for (uint64_t i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? POLY_REFLECTED ^ (c >> 1) : c >> 1;
        }
        table[i] = c;
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
    for (size_t i = 0; i < n; i++) {
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    }
    return crc;
}
