/*
 * clock.c - see clock.h.
 */
#include "server/clock.h"

#include <stdbool.h>
#include <time.h>

#include <uv.h>

#include "lib/time.h"
#include "server/server.h"

static wall_ns last_wall;
static wall_ns batch_wall;
static bool batch_open;

wall_ns
clock_clamp(wall_ns *last, wall_ns raw)
{
    if (raw < *last) {
        return *last;
    }
    *last = raw;
    return raw;
}

static wall_ns fake_wall;      /* 0: the real clock */

void
clock_set_fake_wall(wall_ns ns)
{
    fake_wall = ns;
}

void
clock_reset_clamp(void)
{
    last_wall = 0;
}

/* Once per batch of requests, so the fake clock's branch costs nothing
 * per request. */
static wall_ns
read_wall(void)
{
    struct timespec ts;
    if (fake_wall != 0) {
        return clock_clamp(&last_wall, fake_wall);
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    return clock_clamp(&last_wall,
                       (wall_ns)ts.tv_sec * NS_PER_SEC + ts.tv_nsec);
}

wall_ns
clock_wall_now(void)
{
    return batch_open ? batch_wall : read_wall();
}

void
clock_batch_open(void)
{
    batch_wall = read_wall();
    batch_open = true;
}

void
clock_batch_open_at(wall_ns at)
{
    batch_wall = at;
    batch_open = true;
}

void
clock_batch_close(void)
{
    batch_open = false;
}

mono_ns
clock_mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (mono_ns)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

int64_t
clock_mono_ms(void)
{
    return clock_mono_now() / NS_PER_MS;
}

int64_t
clock_loop_ms(void)
{
    return (int64_t)uv_now(srv.loop);
}

int64_t
clock_wall_us(void)
{
    struct timespec ts;
    if (fake_wall != 0) {
        return fake_wall / NS_PER_US;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * US_PER_SEC + ts.tv_nsec / NS_PER_US;
}
