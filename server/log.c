/*
 * log.c - see log.h. Lines are written with one write(2) each so that
 * concurrent writers to the same file never interleave within a line.
 */
#include "server/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum log_level log_min_level = LOG_NOTICE;
static int log_fd = STDERR_FILENO;

static const char *const level_names[] = { "debug", "verbose", "notice",
                                           "warning" };
static const char level_marks[] = { '.', '-', '*', '#' };

int
log_set_level(const char *level)
{
    for (int i = 0; i <= LOG_WARNING; i++) {
        if (strcasecmp(level, level_names[i]) == 0) {
            log_min_level = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

int
log_setup(const char *level, const char *path)
{
    if (log_set_level(level) < 0) {
        errno = EINVAL;
        return -1;
    }
    if (path != NULL && path[0] != '\0') {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            return -1;
        }
        log_fd = fd;
    }
    return 0;
}

void
log_teardown(void)
{
    if (log_fd != STDERR_FILENO) {
        close(log_fd);
        log_fd = STDERR_FILENO;
    }
}

void
log_write(enum log_level level, const char *fmt, ...)
{
    char line[1024];
    struct timeval tv;
    struct tm tm;
    va_list ap;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%d:M ", (int)getpid());
    n += (int)strftime(line + n, sizeof(line) - (size_t)n,
                       "%d %b %Y %H:%M:%S", &tm);
    n += snprintf(line + n, sizeof(line) - (size_t)n, ".%03d %c ",
                  (int)(tv.tv_usec / 1000), level_marks[level]);
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0) {
        m = 0;
    }
    n += m;
    if (n > (int)sizeof(line) - 2) {
        n = (int)sizeof(line) - 2; /* truncated */
    }
    line[n++] = '\n';
    ssize_t w = write(log_fd, line, (size_t)n);
    (void)w; /* nothing sensible to do when logging itself fails */
}

bool
log_ratelimit(int64_t *last_ms, uint64_t *suppressed)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (now - *last_ms < 1000) {
        (*suppressed)++;
        return false;
    }
    *last_ms = now;
    return true;
}
