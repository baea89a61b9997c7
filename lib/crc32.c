/*
 * crc32.c - see crc32.h. The tables are built on first use.
 */
#include "lib/crc32.h"

#include <stdbool.h>
#include <string.h>

struct crc_table {
    uint32_t t[256];
    bool ready;
};

static struct crc_table ieee, castagnoli;

static const uint32_t *
table_for(struct crc_table *tab, uint32_t poly)
{
    if (!tab->ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) {
                c = (c & 1) ? poly ^ (c >> 1) : c >> 1;
            }
            tab->t[i] = c;
        }
        tab->ready = true;
    }
    return tab->t;
}

static uint32_t
bytewise(const uint32_t *t, uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc = t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}

uint32_t
crc32_update(uint32_t crc, const void *data, size_t n)
{
    return bytewise(table_for(&ieee, 0xEDB88320u), crc, data, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t
castagnoli_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        c = __builtin_ia32_crc32di(c, v);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n > 0; p++, n--) {
        c32 = __builtin_ia32_crc32qi(c32, *p);
    }
    return ~c32;
}

static bool
have_sse42(void)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    return have == 1;
}
#endif

uint32_t
crc32c_update(uint32_t crc, const void *data, size_t n)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (have_sse42()) {
        return castagnoli_sse42(crc, data, n);
    }
#endif
    return crc32c_portable(crc, data, n);
}

uint32_t
crc32c_portable(uint32_t crc, const void *data, size_t n)
{
    return bytewise(table_for(&castagnoli, 0x82F63B78u), crc, data, n);
}
