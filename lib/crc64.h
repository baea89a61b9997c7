/*
 * crc64.h - Redis's CRC-64 ("Jones": polynomial 0xad93d23594c935a9,
 * reflected, no final xor), which ends every DUMP and FUNCTION DUMP
 * payload and every RDB file. Check value ("123456789"):
 * 0xe9c6d914c4b8d9ca. Eight bytes a step through eight tables (crc64.c):
 * a whole RDB file is checked at load.
 */
#ifndef CELLGATE_CRC64_H
#define CELLGATE_CRC64_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of crc's data followed by data[0..n): start from 0. */
uint64_t crc64_update(uint64_t crc, const void *data, size_t n);

#endif
