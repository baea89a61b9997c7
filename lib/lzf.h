/*
 * lzf.h - LZF, the compression Redis applies to the strings of its RDB
 * format (and so of DUMP and FUNCTION DUMP payloads) when they are longer
 * than 20 bytes and shrink by 4 or more. The compressor takes the same
 * choices as Redis's (liblzf 3.6 as Redis builds it: a 2^16-slot table,
 * VERY_FAST, matches up to 8 KiB back, never at offset 0), so a payload
 * cellgate writes is byte for byte the one redis-server writes.
 *
 * The format: a control byte 000LLLLL starts L+1 literal bytes; LLLooooo
 * oooooooo copies L+2 bytes (L 1..6) from o+1 bytes back; 111ooooo
 * LLLLLLLL oooooooo copies L+9 bytes.
 */
#ifndef CELLGATE_LZF_H
#define CELLGATE_LZF_H

#include <stddef.h>
#include <stdint.h>

/* Compress in[0..in_len) into out[0..out_len): the compressed length, or 0
 * when it does not fit (out must have room for out_len + 1 bytes, as
 * Redis's buffer has). Not thread-safe (one table). */
size_t lzf_compress(const uint8_t *in, size_t in_len, uint8_t *out,
                    size_t out_len);

/* Decompress exactly into out[0..out_len): the bytes written, or 0 when the
 * input is malformed or does not fill out exactly. */
size_t lzf_decompress(const uint8_t *in, size_t in_len, uint8_t *out,
                      size_t out_len);

#endif
