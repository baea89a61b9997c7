/*
 * calendar.h - windows that follow the calendar of a time zone: the day
 * from local midnight to the next, the week from its first day, the month
 * from the 1st, the year from January 1st, and the local second, minute
 * and hour (an hour of Asia/Kathmandu starts at :15 UTC).
 *
 * A window starts at the first instant whose local time is at or past its
 * boundary: on a day whose midnight does not exist (a DST change at 00:00)
 * that is the change itself; a midnight that happens twice counts the
 * first time. So windows never overlap and leave no gap, and a DST day
 * lasts 23 or 25 hours. Pure: the zone comes in (tzif.h).
 */
#ifndef CELLGATE_CALENDAR_H
#define CELLGATE_CALENDAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/tzif.h"

enum cal_unit {
    CAL_SECOND,
    CAL_MINUTE,
    CAL_HOUR,
    CAL_DAY,
    CAL_WEEK,
    CAL_MONTH,
    CAL_YEAR
};

struct cal_spec {
    const struct tz_zone *zone;
    enum cal_unit unit;
    int week_start;             /* 0 = Sunday ... 6; CAL_WEEK only */
};

/* A unit's name, envoyproxy/ratelimit's (second ... year), any case;
 * false when it is none. */
bool cal_unit_parse(const char *s, size_t len, enum cal_unit *out);

/* A weekday's English name or its first three letters, any case, into
 * 0 (Sunday) ... 6; false when it is none. */
bool cal_weekday_parse(const char *s, size_t len, int *out);

/* The window holding instant t (seconds since the epoch): [*start, *end),
 * start <= t < end. */
void cal_window(const struct cal_spec *c, int64_t t, int64_t *start,
                int64_t *end);

/* The first instant whose local time in z is at or past `local` (local
 * seconds since the epoch, as if the zone were UTC). */
int64_t cal_first_instant(const struct tz_zone *z, int64_t local);

#endif
