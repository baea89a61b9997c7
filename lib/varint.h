/*
 * varint.h - unsigned LEB128 varints: 7 bits a byte, low bits first, the
 * high bit set on every byte but the last. The lengths of lib/pack.c's
 * entries and protobuf's varints (server/envoy/rls_wire.c) are written so.
 */
#ifndef CELLGATE_VARINT_H
#define CELLGATE_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of the varint for v. */
static inline size_t
varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Write v as a varint at p; returns the byte after it. */
static inline unsigned char *
varint_put(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

#endif
