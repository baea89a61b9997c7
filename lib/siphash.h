/*
 * siphash.h - SipHash-c-d (Aumasson and Bernstein, 2012), the keyed hash of
 * every table whose names a client chooses (the key table, WATCH's
 * registry, pub/sub channels, the gRPC statistics, lib/dict.c's tables): with a random key per process, no
 * client can make its names collide in one bucket. Written from the
 * paper: the state is four 64-bit words initialised from the key and four
 * constants;
 * each 8-byte little-endian message word m is absorbed as v3 ^= m, c
 * SipRounds, v0 ^= m; the last word holds the remaining bytes and the
 * length mod 256 in its top byte; finalisation is v2 ^= 0xff, d SipRounds
 * and the xor of the four words. The round counts are arguments so that
 * the test vectors of SipHash-2-4 can check the code (check_siphash.c);
 * the tables call it with constants (1, 3), which the compiler unrolls.
 * Inline: the key table hashes on every request.
 */
#ifndef CELLGATE_SIPHASH_H
#define CELLGATE_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct sip_state {
    uint64_t v0, v1, v2, v3;
};

static inline uint64_t
rotl64(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t
load64_le(const unsigned char *p)
{
    /* Byte by byte so it is endian- and alignment-independent; compilers
     * turn this into one load on little-endian machines. */
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16
           | (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32
           | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48
           | (uint64_t)p[7] << 56;
}

static inline void
sip_round(struct sip_state *st)
{
    st->v0 += st->v1;
    st->v1 = rotl64(st->v1, 13);
    st->v1 ^= st->v0;
    st->v0 = rotl64(st->v0, 32);
    st->v2 += st->v3;
    st->v3 = rotl64(st->v3, 16);
    st->v3 ^= st->v2;
    st->v0 += st->v3;
    st->v3 = rotl64(st->v3, 21);
    st->v3 ^= st->v0;
    st->v2 += st->v1;
    st->v1 = rotl64(st->v1, 17);
    st->v1 ^= st->v2;
    st->v2 = rotl64(st->v2, 32);
}

static inline void
sip_absorb(struct sip_state *st, uint64_t m, int crounds)
{
    st->v3 ^= m;
    for (int i = 0; i < crounds; i++) {
        sip_round(st);
    }
    st->v0 ^= m;
}

static inline uint64_t
siphash(uint64_t k0, uint64_t k1, const void *data, size_t len,
        int crounds, int drounds)
{
    const unsigned char *p = data;
    struct sip_state st = {
        .v0 = k0 ^ UINT64_C(0x736f6d6570736575),    /* "somepseu" */
        .v1 = k1 ^ UINT64_C(0x646f72616e646f6d),    /* "dorandom" */
        .v2 = k0 ^ UINT64_C(0x6c7967656e657261),    /* "lygenera" */
        .v3 = k1 ^ UINT64_C(0x7465646279746573),    /* "tedbytes" */
    };
    size_t whole = len & ~(size_t)7;

    for (size_t off = 0; off < whole; off += 8) {
        sip_absorb(&st, load64_le(p + off), crounds);
    }
    uint64_t last = (uint64_t)(len & 0xff) << 56;
    size_t rest = len & 7;
    if (rest != 0 && len >= 8) {
        /* The last rest bytes as the top of the word ending the key. */
        last |= load64_le(p + len - 8) >> (64 - 8 * rest);
    } else {
        for (size_t i = 0; i < rest; i++) {
            last |= (uint64_t)p[whole + i] << (8 * i);
        }
    }
    sip_absorb(&st, last, crounds);
    st.v2 ^= 0xff;
    for (int i = 0; i < drounds; i++) {
        sip_round(&st);
    }
    return st.v0 ^ st.v1 ^ st.v2 ^ st.v3;
}

/* The two key words of 16 random bytes (little-endian, as the paper). */
static inline void
siphash_key(const unsigned char seed[16], uint64_t *k0, uint64_t *k1)
{
    *k0 = load64_le(seed);
    *k1 = load64_le(seed + 8);
}

#endif
