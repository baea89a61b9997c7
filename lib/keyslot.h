/*
 * keyslot.h - the hash slot of a key, as Redis Cluster computes it: CRC16
 * (XMODEM: polynomial 0x1021, initial value 0, no reflection) of the key,
 * or of its first non-empty {hash tag}, mod 16384. The one implementation:
 * routing (server/cluster/), CROSSSLOT checks, scripts' declared keys and
 * the keyspace's per-slot index (server/store.c) all call it. Pure and
 * thread-safe (the table is constant).
 */
#ifndef CELLGATE_KEYSLOT_H
#define CELLGATE_KEYSLOT_H

#include <stddef.h>
#include <stdint.h>

#define KEYSLOT_SLOTS 16384

/* CRC16-XMODEM of buf[0..len). Check value ("123456789"): 0x31C3. */
uint16_t keyslot_crc16(const char *buf, size_t len);

/* The slot, 0 .. KEYSLOT_SLOTS - 1, of key[0..len): only the bytes between
 * the first '{' and the first '}' after it count, when there are any. */
unsigned keyslot(const char *key, size_t len);

#endif
