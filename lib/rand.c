/*
 * rand.c - splitmix64 (Steele, Lea and Flood's generator, as Java's
 * SplittableRandom): one add and three multiply-xorshifts a number, every
 * 64-bit seed a full-period sequence. See rand.h.
 */
#include "lib/rand.h"

#include <stdbool.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t state;
static bool seeded;

static void
seed(void)
{
    if (getrandom(&state, sizeof(state), GRND_NONBLOCK) !=
        (ssize_t)sizeof(state)) {
        /* No entropy yet (early boot): the clock and pid still make two
         * servers differ, which is all these choices need. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        state = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                ((uint64_t)getpid() << 48);
    }
    seeded = true;
}

uint64_t
rand_u64(void)
{
    if (!seeded) {
        seed();
    }
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Lemire's multiply-shift, with the rejection that removes its bias. */
uint64_t
rand_below(uint64_t n)
{
    unsigned __int128 m = (unsigned __int128)rand_u64() * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t floor = -n % n;
        while (low < floor) {
            m = (unsigned __int128)rand_u64() * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}
