/*
 * log.c - see log.h. Lines are written with one write(2) each so that
 * concurrent writers to the same file never interleave within a line.
 */
#include "server/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lib/time.h"
#include "server/clock.h"

/* Static: only log_set_level() sets it, and no debug or verbose line is
 * on a request's path, so the call to log_enabled() the macros make is no
 * cost to speak of. */
static enum log_level min_level = LOG_NOTICE;
static int log_fd = STDERR_FILENO;
static bool log_json;
/* The file's name, for log_reopen (empty: standard error). */
static char log_path[PATH_MAX];

/* A JSON line's "level": the level as loglevel names it. */
static const char *const level_names[] = { "debug", "verbose", "notice",
                                           "warning" };
static const char level_marks[] = { '.', '-', '*', '#' };

void
log_set_level(enum log_level level)
{
    min_level = level;
}

bool
log_enabled(enum log_level level)
{
    return level >= min_level;
}

int
log_setup(enum log_level level, const char *path, bool json)
{
    log_json = json;
    log_set_level(level);
    if (path != NULL && path[0] != '\0') {
        if (strlen(path) >= sizeof(log_path)) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            return -1;
        }
        log_fd = fd;
        snprintf(log_path, sizeof(log_path), "%s", path);
    }
    return 0;
}

int
log_reopen(void)
{
    if (log_fd == STDERR_FILENO) {
        return 0;
    }
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    /* dup3 swaps the file under the same descriptor in one step, so a
     * line is never written to a closed one. */
    int rc = dup3(fd, log_fd, O_CLOEXEC) < 0 ? -1 : 0;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

bool
log_to_file(void)
{
    return log_fd != STDERR_FILENO;
}

void
log_teardown(void)
{
    if (log_fd != STDERR_FILENO) {
        close(log_fd);
        log_fd = STDERR_FILENO;
        log_path[0] = '\0';
    }
}

/* Append msg to out as a JSON string body (no quotes); returns the new
 * length, never past cap - 1. */
static size_t
json_escape(char *out, size_t n, size_t cap, const char *msg)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        char esc = *p == '"' ? '"' : *p == '\\' ? '\\' : *p == '\n' ? 'n'
                 : *p == '\r' ? 'r' : *p == '\t' ? 't' : 0;
        if (n + 7 >= cap) {
            break;
        }
        if (esc) {
            out[n++] = '\\';
            out[n++] = esc;
        } else if (*p < 0x20) {
            memcpy(out + n, "\\u00", 4);
            out[n + 4] = hex[*p >> 4];
            out[n + 5] = hex[*p & 15];
            n += 6;
        } else {
            out[n++] = (char)*p;
        }
    }
    return n;
}

void
log_write(enum log_level level, const char *fmt, ...)
{
    char msg[1024];
    char line[2300];
    struct timeval tv;
    struct tm tm;
    va_list ap;
    int n;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0) {
        msg[0] = '\0';
    }
    va_end(ap);
    if (log_json) {
        /* One object per line, for container log collectors. */
        n = (int)strftime(line, sizeof(line), "{\"time\":\"%Y-%m-%dT%H:%M:%S",
                          &tm);
        n += snprintf(line + n, sizeof(line) - (size_t)n,
                      ".%03dZ\",\"pid\":%d,\"level\":\"%s\",\"message\":\"",
                      (int)(tv.tv_usec / US_PER_MS), (int)getpid(),
                      level_names[level]);
        n = (int)json_escape(line, (size_t)n, sizeof(line) - 3, msg);
        line[n++] = '"';
        line[n++] = '}';
    } else {
        n = snprintf(line, sizeof(line), "%d:M ", (int)getpid());
        n += (int)strftime(line + n, sizeof(line) - (size_t)n,
                           "%d %b %Y %H:%M:%S", &tm);
        n += snprintf(line + n, sizeof(line) - (size_t)n, ".%03d %c %s",
                      (int)(tv.tv_usec / US_PER_MS), level_marks[level], msg);
        if (n > (int)sizeof(line) - 2) {
            n = (int)sizeof(line) - 2; /* truncated */
        }
    }
    line[n++] = '\n';
    ssize_t w = write(log_fd, line, (size_t)n);
    (void)w; /* nothing sensible to do when logging itself fails */
}

bool
log_ratelimit(int64_t *last_ms, uint64_t *suppressed)
{
    int64_t now = clock_mono_ms();
    if (now - *last_ms < MS_PER_SEC) {
        (*suppressed)++;
        return false;
    }
    *last_ms = now;
    return true;
}
