/*
 * redact.h - the arguments Redis never shows: MONITOR and SLOWLOG print
 * them as "(redacted)".
 */
#ifndef CELLGATE_REDACT_H
#define CELLGATE_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/resp.h"

/* Is argument i of a command a secret? AUTH's arguments, the two after
 * HELLO's AUTH, and the values CONFIG SET gives requirepass and
 * masterauth. */
bool redact_arg(const struct resp_request *req, size_t i);

#endif
