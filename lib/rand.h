/*
 * rand.h - the random choices Redis makes with random(): which key
 * RANDOMKEY answers. Not for anything an attacker must not guess (SipHash
 * keys and run ids come from the kernel: server_random_bytes()).
 *
 * One splitmix64 sequence per process, seeded from the kernel on first
 * use, so two servers started together choose differently. Main thread
 * only.
 */
#ifndef CELLGATE_RAND_H
#define CELLGATE_RAND_H

#include <stdint.h>

/* The next 64 random bits. */
uint64_t rand_u64(void);

/* A number in [0, n), every one as likely (n > 0). */
uint64_t rand_below(uint64_t n);

#endif
