/*
 * fakeclock.c - an LD_PRELOAD shim that makes the wall clock of a process
 * whatever a file says, so tests can step cellgate's limiter clock exactly
 * (the redis-cell vectors were recorded under such a clock).
 *
 *   FAKECLOCK_FILE=/path/clock LD_PRELOAD=fakeclock.so ./cellgate ...
 *
 * The file holds nanoseconds since the Unix epoch in decimal; the test
 * replaces it (write, then rename) to move time. Every read of the wall
 * clock through libc reads the file again: clock_gettime() for
 * CLOCK_REALTIME and CLOCK_REALTIME_COARSE, gettimeofday() and time().
 * Other clocks (CLOCK_MONOTONIC: libuv's timers) run for real. A file that
 * cannot be read is fatal: a test on a silently real clock would pass or
 * fail by chance.
 *
 * Built by the integration harness: gcc -shared -fPIC -o fakeclock.so
 * fakeclock.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

/* The ns in FAKECLOCK_FILE; exits the process when it cannot be read. */
static int64_t
fake_now_ns(void)
{
    const char *path = getenv("FAKECLOCK_FILE");
    char buf[64];
    int fd = path != NULL ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0) {
        close(fd);
    }
    int64_t ns = 0;
    ssize_t i = 0;
    for (; n > 0 && i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
        ns = ns * 10 + (buf[i] - '0');
    }
    if (n <= 0 || i == 0) {
        static const char msg[] = "fakeclock: cannot read FAKECLOCK_FILE\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(98);
    }
    return ns;
}

int
clock_gettime(clockid_t id, struct timespec *ts)
{
    if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
        int64_t ns = fake_now_ns();
        ts->tv_sec = (time_t)(ns / 1000000000);
        ts->tv_nsec = (long)(ns % 1000000000);
        return 0;
    }
    static clock_gettime_fn real;
    if (real == NULL) {
        real = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    }
    return real(id, ts);
}

int
gettimeofday(struct timeval *tv, void *tz)
{
    /* glibc declares tv non-null, so it is not checked. */
    int64_t ns = fake_now_ns();
    (void)tz;
    tv->tv_sec = (time_t)(ns / 1000000000);
    tv->tv_usec = (suseconds_t)(ns % 1000000000 / 1000);
    return 0;
}

time_t
time(time_t *out)
{
    time_t t = (time_t)(fake_now_ns() / 1000000000);
    if (out != NULL) {
        *out = t;
    }
    return t;
}
