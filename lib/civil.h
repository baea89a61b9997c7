/*
 * civil.h - days since 1970-01-01 and proleptic Gregorian dates, both
 * ways, and the weekday of a day (the zone rules of tzif.c and the
 * calendar windows of calendar.c count in them). Howard Hinnant's
 * algorithms (public domain "chrono-Compatible Low-Level Date
 * Algorithms"), written anew: exact for every int32 year.
 */
#ifndef CELLGATE_CIVIL_H
#define CELLGATE_CIVIL_H

#include <stdbool.h>
#include <stdint.h>

/* Floor division and its non-negative remainder, for negative instants. */
static inline int64_t
civil_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int64_t
civil_floor_mod(int64_t a, int64_t b)
{
    return a - civil_floor_div(a, b) * b;
}

/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31). */
static inline int64_t
civil_days(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = civil_floor_div(y, 400);
    int64_t yoe = y - era * 400;                            /* 0..399 */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;   /* 0..146096 */
    return era * 146097 + doe - 719468;
}

/* The date of a day since 1970-01-01. */
static inline void
civil_date(int64_t days, int64_t *y, int *m, int *d)
{
    days += 719468;
    int64_t era = civil_floor_div(days, 146097);
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* 0 = Sunday ... 6 = Saturday (1970-01-01 was a Thursday). */
static inline int
civil_weekday(int64_t days)
{
    return (int)civil_floor_mod(days + 4, 7);
}

static inline bool
civil_leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static inline int
civil_month_days(int64_t y, int m)
{
    static const int len[12] = { 31, 28, 31, 30, 31, 30,
                                 31, 31, 30, 31, 30, 31 };
    return m == 2 && civil_leap(y) ? 29 : len[m - 1];
}

#endif
