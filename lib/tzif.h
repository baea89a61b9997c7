/*
 * tzif.h - a time zone read from the bytes of a TZif file (RFC 8536,
 * versions 1 to 4: what /usr/share/zoneinfo holds), and the UTC offset it
 * gives at an instant.
 *
 * Only what a calendar needs is kept: the transitions (64-bit times in a
 * v2+ file, 32-bit in a v1-only one) with the offset each one starts, the
 * offset before the first, and the POSIX TZ footer ("CET-1CEST,M3.5.0,
 * M10.5.0/3") that gives the instants past the table: a "slim" file ends
 * its table early and leaves the later years to the footer. Abbreviations
 * and the std/ut indicators are checked, not kept. A file with leap-second
 * records ("right/" zones) is refused: their times are not POSIX seconds.
 *
 * Pure: bytes in, a zone out (allocated through lib/mem.h); no I/O, no
 * libc time zone state (localtime_r and TZ are process-global).
 */
#ifndef CELLGATE_TZIF_H
#define CELLGATE_TZIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A footer's date rule: Jn (1..365, no Feb 29), n (0..365), Mm.w.d. */
struct tz_date {
    char kind;                  /* 'J', 'N' or 'M' */
    int16_t day;                /* J and N */
    int8_t month, week, wday;   /* M: 1..12, 1..5, 0..6 (Sunday 0) */
    int32_t time;               /* seconds after local midnight (-167h..167h) */
};

/* A POSIX TZ rule: standard offset, and DST between two dates if any.
 * Offsets are seconds east of UTC (POSIX writes them west). */
struct tz_rule {
    int32_t std_off;
    int32_t dst_off;
    bool has_dst;
    struct tz_date start, end;  /* start in standard time, end in DST */
};

struct tz_zone {
    size_t n;                   /* transitions */
    int64_t *times;             /* ascending, seconds since the epoch */
    int32_t *offs;              /* the offset each transition starts */
    int32_t first_off;          /* before the first (time type 0) */
    bool has_rule;              /* a footer with a rule */
    struct tz_rule rule;
    int32_t min_off, max_off;   /* over every offset the zone can give */
    size_t bytes;               /* the one block the zone is */
};

enum tzif_status {
    TZIF_OK = 0,
    TZIF_ENOMEM,
    TZIF_CORRUPT                /* not TZif, truncated, or inconsistent */
};

/* Parse len bytes; *out is the zone (tz_free it) on TZIF_OK. On
 * TZIF_CORRUPT, *why says what (a static text). */
enum tzif_status tzif_parse(const unsigned char *p, size_t len,
                            struct tz_zone **out, const char **why);

void tz_free(struct tz_zone *z);

/* Parse a POSIX TZ string (a footer's text, without its newlines); false
 * when it is not one. */
bool tz_rule_parse(const char *s, size_t len, struct tz_rule *r);

/* The offset (seconds east of UTC) at instant t (seconds since the epoch),
 * and *next, the first instant after t at which the zone's table or rule
 * may change it (INT64_MAX when it never does). */
int32_t tz_offset_at(const struct tz_zone *z, int64_t t, int64_t *next);

/* Bytes the zone holds (for memory accounting of a cache). */
size_t tz_size(const struct tz_zone *z);

#endif
