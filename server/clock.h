/*
 * clock.h - the server's clocks, typed apart, one reader each:
 *
 *   the limiter clock   clock_wall_now()   wall_ns, see below
 *   the calendar        clock_wall_us()    the wall clock as it is, in us
 *   the monotonic clock clock_mono_now()   mono_ns; clock_mono_ms() in ms
 *   the loop's clock    clock_loop_ms()    libuv's uv_now(): the monotonic
 *                                          time the loop read at the start
 *                                          of this iteration, in ms
 *
 * Durations and deadlines the code checks itself (replication's timeouts,
 * the journal's fsync, slow commands, time slices) read the monotonic
 * clock; those kept beside libuv's timers and compared once per loop
 * iteration (a client's idle time, CLIENT PAUSE, gRPC stream timeouts)
 * read the loop's, which costs no system call. A value of one is never
 * compared with a value of another.
 *
 * The limiter clock is the wall clock (CLOCK_REALTIME through libc, as
 * redis-cell reads it, and as the conformance fake-clock shim intercepts
 * it), in ns since the epoch. It never goes below the last value handed
 * out, so a wall clock stepped backwards (NTP) freezes limiter time until
 * real time catches up instead of refilling buckets.
 *
 * Requests framed from one read of one connection arrived together, so they
 * are decided at one instant: between clock_batch_open() and
 * clock_batch_close() clock_wall_now() returns the time read at the open.
 * That is one clock read per batch instead of one per request (on a VM the
 * read is a paravirtual clock, a few percent of a request's CPU).
 */
#ifndef CELLGATE_CLOCK_H
#define CELLGATE_CLOCK_H

#include <stdint.h>

typedef int64_t wall_ns;   /* ns since the Unix epoch, never decreasing */
typedef int64_t mono_ns;   /* CLOCK_MONOTONIC ns */

wall_ns clock_wall_now(void);

/* Open a batch (reads the clock once) and close it. Not nested. */
void clock_batch_open(void);
void clock_batch_close(void);

/* Open a batch at the instant `at`, past the clamp, which it leaves as
 * it was: the commands of a Redis primary's stream run at time 0, so that
 * they find every key the primary sent (it sends a DEL for a key it saw
 * expire before any other command on it). */
void clock_batch_open_at(wall_ns at);

/* The clamp clock_wall_now() applies: `raw` unless it is below *last (the
 * clock stepped back), then *last; *last follows the result. */
wall_ns clock_clamp(wall_ns *last, wall_ns raw);
mono_ns clock_mono_now(void);

/* clock_mono_now() in milliseconds. */
int64_t clock_mono_ms(void);

/* The loop's clock (srv.loop's uv_now) in milliseconds. */
int64_t clock_loop_ms(void);

/* Raw wall clock in microseconds (TIME, INFO), not clamped. */
int64_t clock_wall_us(void);

/* Tests and fuzzers: read the wall clock from here instead of
 * CLOCK_REALTIME, until called again with 0. The clamp still applies, so a
 * fake clock set back behaves like a real one stepped back. */
void clock_set_fake_wall(wall_ns ns);

/* Forget the last time handed out, as a new process would (tests only). */
void clock_reset_clamp(void);

#endif
