/*
 * slowlog.h - SLOWLOG: the commands that took longer than
 * slowlog-log-slower-than microseconds, newest first, at most
 * slowlog-max-len of them, with their arguments cut as Redis cuts them.
 */
#ifndef CELLGATE_SLOWLOG_H
#define CELLGATE_SLOWLOG_H

#include <stdint.h>

#include "protocol/resp.h"

struct conn;

/* Record the command if it was slow enough (called after each command);
 * commands whose flags hold "skip_slowlog" (AUTH, HELLO: passwords) are
 * never recorded. */
void slowlog_note(const struct conn *c, const char *flags,
                  const struct resp_request *req, uint64_t usec);

void slowlog_teardown(void);

#endif
