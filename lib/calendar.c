/*
 * calendar.c - calendar windows in a time zone (see calendar.h).
 *
 * Design. A window is found in local time first: the local time of t
 * floored to the unit's boundary B (midnight, the week's first day, the
 * 1st, January 1st). Its instants are then [first(B), first(next(B))),
 * first() being the earliest instant whose local time reaches a boundary.
 * first() is monotonic in its argument, so these windows tile the line;
 * when a local time that happens twice puts t outside the window its local
 * time named (a fall-back across a boundary), or a skipped day makes a
 * window empty, the neighbouring windows are tried, a bounded few.
 *
 * first(L) walks the zone's stretches of constant offset from L - max_off
 * (whose local time is at most L) until one reaches L: in the stretch
 * [a, b) with offset o, the instants at or past L are those from L - o.
 */
#include "lib/calendar.h"

#include <string.h>
#include <strings.h>

#include "lib/civil.h"

#define SECS_PER_DAY 86400
#define MAX_STEPS 64    /* stretches walked, windows tried: far beyond need */

static const char *const unit_names[] = {
    "second", "minute", "hour", "day", "week", "month", "year"
};

static const char *const weekday_names[] = {
    "sunday", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday"
};

bool
cal_unit_parse(const char *s, size_t len, enum cal_unit *out)
{
    for (size_t i = 0; i < sizeof(unit_names) / sizeof(unit_names[0]); i++) {
        if (len == strlen(unit_names[i]) &&
            strncasecmp(s, unit_names[i], len) == 0) {
            *out = (enum cal_unit)i;
            return true;
        }
    }
    return false;
}

bool
cal_weekday_parse(const char *s, size_t len, int *out)
{
    for (int i = 0; i < 7; i++) {
        if ((len == strlen(weekday_names[i]) || len == 3) &&
            strncasecmp(s, weekday_names[i], len) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

int64_t
cal_first_instant(const struct tz_zone *z, int64_t local)
{
    int64_t a = local - z->max_off;
    for (int i = 0; i < MAX_STEPS; i++) {
        int64_t b;
        int64_t o = tz_offset_at(z, a, &b);
        int64_t from = local - o > a ? local - o : a;
        if (from < b) {
            return from;
        }
        a = b;
    }
    return local - z->min_off;  /* unreachable for a valid zone */
}

/* The boundary at or before local time l, in local seconds. */
static int64_t
floor_local(const struct cal_spec *c, int64_t l)
{
    static const int64_t len[] = { 1, 60, 3600, SECS_PER_DAY };
    int64_t day = civil_floor_div(l, SECS_PER_DAY);
    int64_t y;
    int m, d;
    switch (c->unit) {
    case CAL_SECOND:
    case CAL_MINUTE:
    case CAL_HOUR:
    case CAL_DAY:
        return civil_floor_div(l, len[c->unit]) * len[c->unit];
    case CAL_WEEK:
        day -= (civil_weekday(day) - c->week_start + 7) % 7;
        return day * SECS_PER_DAY;
    case CAL_MONTH:
    case CAL_YEAR:
        break;
    }
    civil_date(day, &y, &m, &d);
    return civil_days(y, c->unit == CAL_YEAR ? 1 : m, 1) * SECS_PER_DAY;
}

/* The boundary after boundary b. */
static int64_t
next_local(const struct cal_spec *c, int64_t b)
{
    static const int64_t len[] = { 1, 60, 3600, SECS_PER_DAY,
                                   7 * SECS_PER_DAY };
    int64_t y;
    int m, d;
    if (c->unit <= CAL_WEEK) {
        return b + len[c->unit];
    }
    civil_date(civil_floor_div(b, SECS_PER_DAY), &y, &m, &d);
    if (c->unit == CAL_YEAR || m == 12) {
        return civil_days(y + 1, 1, 1) * SECS_PER_DAY;
    }
    return civil_days(y, m + 1, 1) * SECS_PER_DAY;
}

void
cal_window(const struct cal_spec *c, int64_t t, int64_t *start,
           int64_t *end)
{
    int64_t ignored;
    int64_t b = floor_local(c, t + tz_offset_at(c->zone, t, &ignored));
    for (int i = 0; i < MAX_STEPS; i++) {
        int64_t nb = next_local(c, b);
        *start = cal_first_instant(c->zone, b);
        *end = cal_first_instant(c->zone, nb);
        if (t < *start) {
            b = floor_local(c, b - 1);
        } else if (t >= *end) {
            b = nb;
        } else {
            return;
        }
    }
}
