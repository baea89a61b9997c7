/*
 * log.h - leveled logging in Redis's format and level names.
 *
 *   12345:M 22 Nov 2026 02:19:20.123 * Ready to accept connections
 *
 * The level is checked before the arguments are evaluated or anything is
 * formatted, so a disabled debug line costs one call (no debug or verbose
 * line is on a request's path). Only server/ logs; lower layers return errors.
 */
#ifndef CELLGATE_LOG_H
#define CELLGATE_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "conf/options.h"

/* The loglevel option's values, so srv.conf.loglevel is one. */
enum log_level {
    LOG_DEBUG = LOGLEVEL_DEBUG,
    LOG_VERBOSE = LOGLEVEL_VERBOSE,
    LOG_NOTICE = LOGLEVEL_NOTICE,
    LOG_WARNING = LOGLEVEL_WARNING
};

/* path "" = stderr; json: one object per line instead of Redis's layout
 * (log-format). Returns 0, or -1 if the file cannot be opened (errno
 * set). */
int log_setup(enum log_level level, const char *path, bool json);
void log_teardown(void);

/* Open the log file's name again (after logrotate moved the file away),
 * as SIGHUP asks. Returns 0 (also when logging to standard error), or -1
 * with errno set, the old file still in use. */
int log_reopen(void);
bool log_to_file(void);
void log_set_level(enum log_level level);

/* Is a line of this level logged (at or above loglevel)? */
bool log_enabled(enum log_level level);

void log_write(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_at(level, ...)                                                    \
    do {                                                                      \
        if (log_enabled(level)) {                                             \
            log_write((level), __VA_ARGS__);                                  \
        }                                                                     \
    } while (0)

#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)
#define log_verbose(...) log_at(LOG_VERBOSE, __VA_ARGS__)
#define log_notice(...) log_at(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_at(LOG_WARNING, __VA_ARGS__)

/* For warnings one client can trigger over and over: true at most once per
 * second per *last (a caller-owned timestamp), and counts what it drops. */
bool log_ratelimit(int64_t *last_ms, uint64_t *suppressed);

#endif
