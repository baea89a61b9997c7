/*
 * crc32.h - the two CRC-32s of the tree, both reflected:
 *   crc32_update   IEEE 802.3 (polynomial 0xEDB88320, zlib's): snapshot
 *                  files of versions 1 to 3, read back;
 *   crc32c_update  Castagnoli (0x82F63B78, iSCSI's): snapshot files since
 *                  and journal records, one per write, so it must cost next to nothing: x86-64's
 *                  SSE4.2 crc32 instruction does 8 bytes a step where the
 *                  CPU has it, a table a byte at a time where not.
 * Check values ("123456789"): 0xCBF43926 and 0xE3069283.
 */
#ifndef CELLGATE_CRC32_H
#define CELLGATE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of crc's data followed by data[0..n): start from 0. */
uint32_t crc32_update(uint32_t crc, const void *data, size_t n);
uint32_t crc32c_update(uint32_t crc, const void *data, size_t n);

/* crc32c_update() without the instruction: what other CPUs run (and what
 * the unit test holds the fast path to). */
uint32_t crc32c_portable(uint32_t crc, const void *data, size_t n);

#endif
