/*
 * keyslot.h - the hash slot of a key, as Redis Cluster computes it: CRC16
 * (XMODEM: polynomial 0x1021, initial value 0, no reflection) of the key,
 * or of its first non-empty {hash tag}, mod 16384. The one implementation:
 * routing (server/cluster/), CROSSSLOT checks, scripts' declared keys and
 * the keyspace's per-slot index (server/store.c) all call it. Pure and
 * thread-safe (the table is constant; the hint below is per thread).
 */
#ifndef CELLGATE_KEYSLOT_H
#define CELLGATE_KEYSLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KEYSLOT_SLOTS 16384

/* CRC16-XMODEM of buf[0..len). Check value ("123456789"): 0x31C3. */
uint16_t keyslot_crc16(const char *buf, size_t len);

/* The slot, 0 .. KEYSLOT_SLOTS - 1, of key[0..len): only the bytes between
 * the first '{' and the first '}' after it count, when there are any. */
unsigned keyslot(const char *key, size_t len);

/* Which CRC keyslot() and keyslot_crc16() run: carry-less multiply
 * (x86-64 with PCLMULQDQ, chosen before main() from the CPU's features)
 * or the portable tables. For the tests, which check both: asks for the
 * carry-less one (want, when the CPU has it) or the tables; returns
 * whether the carry-less one now runs. Not while other threads hash. */
bool keyslot_use_clmul(bool want);

/* The slot the cluster's routing computed for the key of the command
 * being run (server/cmd.c sets it just before the handler and clears it
 * just after), so the per-slot index, which needs the slot of every key
 * added, does not hash the same key a second time. It names the key by
 * address and length: the request's bytes stay in place while their
 * command runs, so no other key can be at that address meanwhile. */
struct keyslot_hint {
    const char *key;
    size_t len;
    unsigned slot;
};
extern _Thread_local struct keyslot_hint keyslot_hint;

/* keyslot(key, len), from the hint when it names that key. */
static inline unsigned
keyslot_hinted(const char *key, size_t len)
{
    if (key == keyslot_hint.key && len == keyslot_hint.len) {
        return keyslot_hint.slot;
    }
    return keyslot(key, len);
}

#endif
