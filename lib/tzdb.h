/*
 * tzdb.h - the system's time zones by IANA name ("Europe/Paris"), read
 * from $TZDIR or /usr/share/zoneinfo (Debian's tzdata) and parsed by
 * tzif.c.
 *
 * A name is checked before any file is opened: 1 to TZDB_NAME_MAX bytes of
 * letters, digits and "_+-", components separated by single '/', none
 * starting with '.', no leading or trailing '/': nothing outside the
 * zone folder can be named. The cache keeps up to TZDB_CACHE zones
 * (memory through lib/mem.h), the least recently used dropped first;
 * tzdb_flush() empties it, so the next use reads the files again (an
 * upgraded tzdata without a restart). Main thread only.
 */
#ifndef CELLGATE_TZDB_H
#define CELLGATE_TZDB_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/tzif.h"

#define TZDB_NAME_MAX 128
#define TZDB_CACHE 64
#define TZDB_FILE_MAX (1024 * 1024)

enum tzdb_status {
    TZDB_OK = 0,
    TZDB_UNKNOWN,       /* not a zone name, or no such file */
    TZDB_CORRUPT,       /* a file that is no valid TZif */
    TZDB_NOMEM
};

/* Is name a zone name tzdb would look for? */
bool tzdb_name_valid(const char *name, size_t len);

/* The zone, read afresh: the caller owns it (tz_free). */
enum tzdb_status tzdb_load(const char *name, size_t len,
                           struct tz_zone **out);

/* The zone from the cache, read on a miss; valid until the next
 * tzdb_get() or tzdb_flush(). */
enum tzdb_status tzdb_get(const char *name, size_t len,
                          const struct tz_zone **out);

void tzdb_flush(void);

#endif
