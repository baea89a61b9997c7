/*
 * slowlog.h - the slow log's recorder: the commands that took longer than
 * slowlog-log-slower-than microseconds, at most slowlog-max-len of them,
 * with their arguments cut as Redis cuts them. The SLOWLOG command that
 * reads it is cmd_slowlog.c.
 */
#ifndef CELLGATE_SLOWLOG_H
#define CELLGATE_SLOWLOG_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/resp.h"

struct conn;

struct slow_entry {
    uint64_t id;
    int64_t time;               /* unix seconds */
    uint64_t usec;
    int argc;
    char **argv;                /* argc strings, NUL-terminated */
    size_t *argvlen;
    char addr[64];
    char name[64];
};

/* Record the command if it was slow enough (called after each command but
 * those flagged skip_slowlog: AUTH, HELLO carry passwords). */
void slowlog_note(const struct conn *c, const struct resp_request *req,
                  uint64_t usec);

/* Entries kept, and the i-th from the newest (NULL past the end). */
size_t slowlog_len(void);
const struct slow_entry *slowlog_newest(size_t i);

/* Forget every entry (SLOWLOG RESET). */
void slowlog_reset(void);

void slowlog_teardown(void);

#endif
