/*
 * payload.h - FUNCTION DUMP's payload in Redis 7.0's bytes, and reading
 * Redis's back for FUNCTION RESTORE. See payload.c.
 */
#ifndef CELLGATE_SCRIPT_PAYLOAD_H
#define CELLGATE_SCRIPT_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/mem.h"

/* Every library, then the RDB version and the CRC64, into out. false when
 * memory ran out. */
bool payload_dump(struct membuf *out);

/* The libraries of a payload, as function.h's set bytes into set: 0, or
 * -1 with Redis's error reply in err. */
int payload_read(const unsigned char *p, size_t len, struct membuf *set,
                 char *err, size_t errlen);

#endif
