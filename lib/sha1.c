/*
 * sha1.c - SHA-1 as FIPS 180-4 (sections 5.1.1, 6.1) states it (lib/sha1.h).
 *
 * The whole message is at hand (a script body), so there is no streaming
 * state: full 64-byte blocks are hashed straight from the caller's bytes,
 * and only the tail, with its padding and the 64-bit bit length, is
 * copied into one or two blocks on the stack. Words are read big-endian
 * byte by byte, so nothing depends on the host's byte order or alignment.
 */
#include "lib/sha1.h"

#include <string.h>

#define BLOCK_LEN 64

static inline uint32_t
rotl(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static inline uint32_t
load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void
store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* f_t and K_t of the standard (4.1.1, 4.2.1): four rounds of 20 steps,
 * Ch, Parity, Maj, Parity. */
static inline uint32_t
round_f(unsigned t, uint32_t b, uint32_t c, uint32_t d)
{
    if (t < 20) {
        return (b & c) ^ (~b & d);
    }
    if (t < 40 || t >= 60) {
        return b ^ c ^ d;
    }
    return (b & c) ^ (b & d) ^ (c & d);
}

static const uint32_t round_k[4] = {
    0x5a827999, 0x6ed9eba1, 0x8f1bbcdc, 0xca62c1d6
};

/* One block into the hash state (6.1.2 steps 1 to 4). The schedule is
 * kept as a 16-word ring, which the standard's W_t recurrence allows. */
static void
compress(uint32_t h[5], const uint8_t block[BLOCK_LEN])
{
    uint32_t w[16];
    for (unsigned t = 0; t < 16; t++) {
        w[t] = load_be32(block + 4 * t);
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (unsigned t = 0; t < 80; t++) {
        if (t >= 16) {
            w[t & 15] = rotl(w[(t - 3) & 15] ^ w[(t - 8) & 15] ^
                             w[(t - 14) & 15] ^ w[t & 15], 1);
        }
        uint32_t tmp = rotl(a, 5) + round_f(t, b, c, d) + e +
                       round_k[t / 20] + w[t & 15];
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void
sha1(const void *data, size_t len, uint8_t out[SHA1_DIGEST_LEN])
{
    uint32_t h[5] = {
        0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0
    };
    const uint8_t *p = data;
    size_t full = len / BLOCK_LEN * BLOCK_LEN;
    for (size_t off = 0; off < full; off += BLOCK_LEN) {
        compress(h, p + off);
    }
    /* Padding (5.1.1): a 1 bit, zeros, the length in bits in the last 8
     * bytes; a tail of 56 bytes or more leaves no room for the length,
     * so the padding spills into a second block. */
    uint8_t tail[2 * BLOCK_LEN] = { 0 };
    size_t rest = len - full;
    if (rest > 0) {
        memcpy(tail, p + full, rest);
    }
    tail[rest] = 0x80;
    size_t tail_len = rest < BLOCK_LEN - 8 ? BLOCK_LEN : 2 * BLOCK_LEN;
    uint64_t bits = (uint64_t)len * 8;
    store_be32(tail + tail_len - 8, (uint32_t)(bits >> 32));
    store_be32(tail + tail_len - 4, (uint32_t)bits);
    for (size_t off = 0; off < tail_len; off += BLOCK_LEN) {
        compress(h, tail + off);
    }
    for (unsigned i = 0; i < 5; i++) {
        store_be32(out + 4 * i, h[i]);
    }
}

void
sha1_hex(const void *data, size_t len, char out[SHA1_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    uint8_t digest[SHA1_DIGEST_LEN];
    sha1(data, len, digest);
    for (unsigned i = 0; i < SHA1_DIGEST_LEN; i++) {
        out[2 * i] = digits[digest[i] >> 4];
        out[2 * i + 1] = digits[digest[i] & 15];
    }
    out[SHA1_HEX_LEN] = '\0';
}
