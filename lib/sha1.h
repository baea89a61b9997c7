/*
 * sha1.h - SHA-1 (FIPS 180-4), for the names scripts are cached under:
 * EVALSHA and SCRIPT LOAD speak of a script by the SHA-1 of its body, and
 * redis.sha1hex() hands the same digest to scripts.
 *
 * SHA-1 is broken as a signature; here it is only a name, as in Redis.
 */
#ifndef CELLGATE_SHA1_H
#define CELLGATE_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define SHA1_DIGEST_LEN 20
#define SHA1_HEX_LEN 40

/* The 20-byte digest of data[0..len). */
void sha1(const void *data, size_t len, uint8_t out[SHA1_DIGEST_LEN]);

/* The digest as 40 lowercase hex digits and a NUL. */
void sha1_hex(const void *data, size_t len, char out[SHA1_HEX_LEN + 1]);

#endif
