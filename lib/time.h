/*
 * time.h - the units of time as int64 constants: the one home of the
 * factors between seconds, milliseconds, microseconds and nanoseconds
 * (the clocks give ns, a key expires in ms, Redis's GCRA counts µs). In
 * lib/, the lowest floor, so every folder may include it (make check-deps).
 */
#ifndef CELLGATE_TIME_H
#define CELLGATE_TIME_H

#include <stdint.h>

#define NS_PER_US  INT64_C(1000)
#define NS_PER_MS  INT64_C(1000000)
#define NS_PER_SEC INT64_C(1000000000)
#define US_PER_MS  INT64_C(1000)
#define US_PER_SEC INT64_C(1000000)
#define MS_PER_SEC INT64_C(1000)

#endif
