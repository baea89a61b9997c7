/*
 * check_tzif.c - the TZif reader (lib/tzif.c), its POSIX TZ rules, the
 * calendar windows over them (lib/calendar.c) and zone names (lib/tzdb.c).
 *
 * The zones are built here byte by byte, so the tests say exactly what a
 * file holds: a "slim" v2 file with no transitions at all (every instant
 * from the footer), a table followed by a footer, a v1-only file, and
 * every truncation and a few corruptions of them, none of which may be
 * read past its end (run under ASan by make test-unit-san).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/fixed_window.h"
#include "lib/calendar.h"
#include "lib/civil.h"
#include "lib/tzdb.h"
#include "lib/tzif.h"
#include "tests/unit/suites.h"

#define DAY 86400
#define HOUR 3600

struct bytes {
    unsigned char b[4096];
    size_t n;
};

static void
put(struct bytes *o, const void *p, size_t n)
{
    ck_assert_uint_le(o->n + n, sizeof(o->b));
    if (n > 0) {            /* p may be NULL then */
        memcpy(o->b + o->n, p, n);
    }
    o->n += n;
}

static void
put32(struct bytes *o, uint32_t v)
{
    unsigned char b[4] = { v >> 24, v >> 16, v >> 8, v };
    put(o, b, 4);
}

static void
put64(struct bytes *o, int64_t v)
{
    put32(o, (uint32_t)((uint64_t)v >> 32));
    put32(o, (uint32_t)v);
}

struct type {
    int32_t off;
    uint8_t dst;
};

static void
header(struct bytes *o, char version, uint32_t ntimes, uint32_t ntypes)
{
    put(o, "TZif", 4);
    put(o, &version, 1);
    put(o, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 15);
    put32(o, 0);            /* isut */
    put32(o, 0);            /* isstd */
    put32(o, 0);            /* leap */
    put32(o, ntimes);
    put32(o, ntypes);
    put32(o, 4);            /* "XXX\0" */
}

/* One data block: times (4 or 8 bytes), their type indexes, the types. */
static void
block(struct bytes *o, unsigned tsize, const int64_t *times,
      const uint8_t *idx, size_t n, const struct type *types, size_t ntypes)
{
    for (size_t i = 0; i < n; i++) {
        if (tsize == 8) {
            put64(o, times[i]);
        } else {
            put32(o, (uint32_t)times[i]);
        }
    }
    put(o, idx, n);
    for (size_t i = 0; i < ntypes; i++) {
        unsigned char t[2] = { types[i].dst, 0 };
        put32(o, (uint32_t)types[i].off);
        put(o, t, 2);
    }
    put(o, "XXX", 4);
}

/* A v2 file: a minimal v1 block, the 64-bit block, the footer. */
static void
v2_file(struct bytes *o, const int64_t *times, const uint8_t *idx, size_t n,
        const struct type *types, size_t ntypes, const char *footer)
{
    static const struct type utc = { 0, 0 };
    o->n = 0;
    header(o, '2', 0, 1);
    block(o, 4, NULL, NULL, 0, &utc, 1);
    header(o, '2', (uint32_t)n, (uint32_t)ntypes);
    block(o, 8, times, idx, n, types, ntypes);
    put(o, "\n", 1);
    put(o, footer, strlen(footer));
    put(o, "\n", 1);
}

static struct tz_zone *
parse_ok(const struct bytes *o)
{
    struct tz_zone *z = NULL;
    const char *why = NULL;
    ck_assert_int_eq(tzif_parse(o->b, o->n, &z, &why), TZIF_OK);
    return z;
}

static int64_t
utc(int64_t y, int m, int d, int h, int mi)
{
    return civil_days(y, m, d) * DAY + h * HOUR + mi * 60;
}

/* Paris as a slim file writes it: one LMT-ish type, the rest the footer. */
static struct tz_zone *
slim_paris(void)
{
    struct bytes o;
    static const struct type t[] = { { 3600, 0 } };
    v2_file(&o, NULL, NULL, 0, t, 1, "CET-1CEST,M3.5.0,M10.5.0/3");
    return parse_ok(&o);
}

START_TEST(test_a_slim_file_gives_every_instant_from_its_footer)
{
    struct tz_zone *z = slim_paris();
    int64_t next;
    /* 2027: DST from March 28th 01:00 UTC to October 31st 01:00 UTC. */
    ck_assert_int_eq(tz_offset_at(z, utc(2027, 1, 10, 12, 0), &next), 3600);
    ck_assert_int_eq(next, utc(2027, 3, 28, 1, 0));
    ck_assert_int_eq(tz_offset_at(z, utc(2027, 3, 28, 1, 0) - 1, &next),
                     3600);
    ck_assert_int_eq(tz_offset_at(z, utc(2027, 3, 28, 1, 0), &next), 7200);
    ck_assert_int_eq(next, utc(2027, 10, 31, 1, 0));
    ck_assert_int_eq(tz_offset_at(z, utc(2027, 10, 31, 1, 0), &next), 3600);
    ck_assert_int_eq(next, utc(2028, 3, 26, 1, 0));
    /* Years far away work the same (2262: the end of int64 ns). */
    ck_assert_int_eq(tz_offset_at(z, utc(2262, 7, 1, 0, 0), &next), 7200);
    ck_assert_int_eq(z->min_off, 3600);
    ck_assert_int_eq(z->max_off, 7200);
    tz_free(z);
}
END_TEST

START_TEST(test_the_table_then_the_footer_and_type_zero_before_it)
{
    /* New York: two transitions in the table, the footer after. */
    static const struct type t[] = { { -17762, 0 }, { -18000, 0 },
                                     { -14400, 1 } };
    int64_t times[] = { utc(2007, 3, 11, 7, 0), utc(2007, 11, 4, 6, 0) };
    uint8_t idx[] = { 2, 1 };
    struct bytes o;
    int64_t next;
    v2_file(&o, times, idx, 2, t, 3, "EST5EDT,M3.2.0,M11.1.0");
    struct tz_zone *z = parse_ok(&o);
    ck_assert_int_eq(tz_offset_at(z, times[0] - 1, &next), -17762);
    ck_assert_int_eq(next, times[0]);
    ck_assert_int_eq(tz_offset_at(z, times[0], &next), -14400);
    ck_assert_int_eq(next, times[1]);
    ck_assert_int_eq(tz_offset_at(z, times[1], &next), -18000);
    ck_assert_int_eq(next, utc(2008, 3, 9, 7, 0));
    ck_assert_int_eq(tz_offset_at(z, utc(2030, 3, 10, 7, 0), &next), -14400);
    ck_assert_int_eq(next, utc(2030, 11, 3, 6, 0));
    ck_assert_int_eq(z->min_off, -18000);
    ck_assert_int_eq(z->max_off, -14400);
    tz_free(z);
}
END_TEST

START_TEST(test_a_v1_file_has_32_bit_times_and_no_footer)
{
    static const struct type t[] = { { 19800, 0 }, { 20700, 0 } };
    int64_t times[] = { utc(1986, 1, 1, 0, 0) - 19800 };
    uint8_t idx[] = { 1 };
    struct bytes o = { .n = 0 };
    int64_t next;
    header(&o, '\0', 1, 2);
    block(&o, 4, times, idx, 1, t, 2);
    struct tz_zone *z = parse_ok(&o);
    ck_assert_int_eq(tz_offset_at(z, times[0] - 1, &next), 19800);
    ck_assert_int_eq(tz_offset_at(z, utc(2028, 1, 1, 0, 0), &next), 20700);
    ck_assert_int_eq(next, INT64_MAX);
    tz_free(z);
}
END_TEST

START_TEST(test_every_truncation_and_corruption_is_refused)
{
    static const struct type t[] = { { -18000, 0 }, { -14400, 1 } };
    int64_t times[] = { 1000, 2000, 3000 };
    uint8_t idx[] = { 1, 0, 1 };
    struct bytes o;
    struct tz_zone *z;
    const char *why;
    v2_file(&o, times, idx, 3, t, 2, "EST5EDT,M3.2.0,M11.1.0");
    for (size_t cut = 0; cut < o.n; cut++) {
        /* A copy of exactly `cut` bytes, so ASan sees any read past it. */
        unsigned char *p = malloc(cut > 0 ? cut : 1);
        memcpy(p, o.b, cut);
        enum tzif_status s = tzif_parse(p, cut, &z, &why);
        free(p);
        /* Only the file without its footer (a v2 file may end there). */
        if (s == TZIF_OK) {
            ck_assert_uint_eq(cut, o.n - strlen("\nEST5EDT,M3.2.0,M11.1.0\n"));
            tz_free(z);
        } else {
            ck_assert_int_eq(s, TZIF_CORRUPT);
        }
    }
    struct bytes bad = o;
    bad.b[0] = 'X';                                     /* magic */
    ck_assert_int_eq(tzif_parse(bad.b, bad.n, &z, &why), TZIF_CORRUPT);
    size_t v2_header = 44 + 10;         /* the v1 block: a type, 4 chars */
    size_t v2_block = v2_header + 44;
    bad = o;
    bad.b[v2_block + 8] = 0x80;                         /* 2nd time < 1st */
    ck_assert_int_eq(tzif_parse(bad.b, bad.n, &z, &why), TZIF_CORRUPT);
    bad = o;
    bad.b[v2_block + 24] = 7;                           /* no such type */
    ck_assert_int_eq(tzif_parse(bad.b, bad.n, &z, &why), TZIF_CORRUPT);
    bad = o;
    bad.b[v2_header + 28 + 3] = 1;                      /* a leap record */
    ck_assert_int_eq(tzif_parse(bad.b, bad.n, &z, &why), TZIF_CORRUPT);
    bad = o;
    bad.b[bad.n - 3] = '!';                             /* footer */
    ck_assert_int_eq(tzif_parse(bad.b, bad.n, &z, &why), TZIF_CORRUPT);
    bad = o;
    bad.b[v2_header + 32] = 0xff;                       /* huge count */
    ck_assert_int_eq(tzif_parse(bad.b, bad.n, &z, &why), TZIF_CORRUPT);
}
END_TEST

START_TEST(test_posix_rules_of_every_form)
{
    struct tz_rule r;
    ck_assert(tz_rule_parse("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", 36, &r));
    ck_assert_int_eq(r.std_off, 37800);
    ck_assert_int_eq(r.dst_off, 39600);
    ck_assert_int_eq(r.start.month, 10);
    ck_assert_int_eq(r.start.time, 7200);
    ck_assert(tz_rule_parse("<+0545>-5:45", 12, &r));
    ck_assert_int_eq(r.std_off, 20700);
    ck_assert(!r.has_dst);
    ck_assert(tz_rule_parse("EST5EDT,M3.2.0/-1,J60/26:30", 27, &r));
    ck_assert_int_eq(r.start.time, -3600);
    ck_assert_int_eq(r.end.kind, 'J');
    ck_assert_int_eq(r.end.day, 60);
    ck_assert_int_eq(r.end.time, 26 * 3600 + 1800);
    ck_assert(tz_rule_parse("AAA3BBB2,59,300/167", 19, &r));
    ck_assert_int_eq(r.dst_off, -7200);
    ck_assert_int_eq(r.start.kind, 'N');
    static const char *const bad[] = {
        "", "E5", "EST", "EST5EDT", "EST5EDT,M3.2.0", "EST5EDT,M13.1.0,M1.1.0",
        "EST5EDT,M3.6.0,M11.1.0", "EST5EDT,M3.2.7,M11.1.0", "EST25",
        "EST5EDT,J0,J365", "EST5EDT,366,1", "<+05-5", "EST5EDT,M3.2.0/168,J1",
        "EST5EDT,M3.2.0,M11.1.0x"
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(!tz_rule_parse(bad[i], strlen(bad[i]), &r), "%s",
                      bad[i]);
    }
}
END_TEST

static struct tz_zone *
footer_zone(const char *footer)
{
    struct bytes o;
    static const struct type t[] = { { 0, 0 } };
    v2_file(&o, NULL, NULL, 0, t, 1, footer);
    return parse_ok(&o);
}

static void
window(const struct tz_zone *z, enum cal_unit u, int ws, int64_t t,
       int64_t start, int64_t end)
{
    struct cal_spec c = { z, u, ws };
    int64_t s, e;
    cal_window(&c, t, &s, &e);
    ck_assert_int_eq(s, start);
    ck_assert_int_eq(e, end);
}

START_TEST(test_days_weeks_months_and_years_in_local_time)
{
    struct tz_zone *z = slim_paris();
    /* 2027-03-28, a Sunday, has 23 hours; October 31st 25. */
    int64_t d28 = utc(2027, 3, 27, 23, 0), d29 = utc(2027, 3, 28, 22, 0);
    window(z, CAL_DAY, 1, d28, d28, d29);
    window(z, CAL_DAY, 1, d29 - 1, d28, d29);
    window(z, CAL_DAY, 1, utc(2027, 10, 31, 12, 0), utc(2027, 10, 30, 22, 0),
           utc(2027, 10, 31, 23, 0));
    /* The week holding that Sunday: from Monday 22nd, or Sunday 28th. */
    window(z, CAL_WEEK, 1, d28, utc(2027, 3, 21, 23, 0), d29);
    window(z, CAL_WEEK, 0, d28, d28, utc(2027, 4, 3, 22, 0));
    /* February of a leap year, and a year. */
    window(z, CAL_MONTH, 1, utc(2028, 2, 29, 12, 0), utc(2028, 1, 31, 23, 0),
           utc(2028, 2, 29, 23, 0));
    window(z, CAL_YEAR, 1, utc(2028, 6, 1, 0, 0), utc(2027, 12, 31, 23, 0),
           utc(2028, 12, 31, 23, 0));
    /* The hour that holds the change is the one from 01:00 UTC. */
    window(z, CAL_HOUR, 1, utc(2027, 3, 28, 1, 0), utc(2027, 3, 28, 1, 0),
           utc(2027, 3, 28, 2, 0));
    window(z, CAL_SECOND, 1, 12345, 12345, 12346);
    tz_free(z);
    z = footer_zone("<+0545>-5:45");
    window(z, CAL_HOUR, 1, utc(2029, 1, 1, 6, 20), utc(2029, 1, 1, 6, 15),
           utc(2029, 1, 1, 7, 15));
    window(z, CAL_MINUTE, 1, 59, 0, 60);
    tz_free(z);
}
END_TEST

START_TEST(test_a_missing_or_doubled_midnight)
{
    /* DST at 24:00 on the first Saturday of September: Sunday's 00:00
     * never happens, its day starts at the change (23 hours long). */
    struct tz_zone *z = footer_zone("<-04>4<-03>,M9.1.6/24,M4.1.6/24");
    int64_t change = utc(2027, 9, 5, 4, 0);     /* Sat 24:00 at -04 */
    window(z, CAL_DAY, 1, change, change, utc(2027, 9, 6, 3, 0));
    window(z, CAL_DAY, 1, change - 1, utc(2027, 9, 4, 4, 0), change);
    tz_free(z);
    /* Back from 01:00 to 00:00: midnight twice, the day from the first. */
    z = footer_zone("AAA0BBB-1,M3.5.0/0,M10.5.0/1");
    int64_t first = utc(2027, 10, 30, 23, 0);   /* 00:00 at +01 */
    window(z, CAL_DAY, 1, first, first, utc(2027, 11, 1, 0, 0));
    window(z, CAL_DAY, 1, utc(2027, 10, 31, 0, 30), first,
           utc(2027, 11, 1, 0, 0));
    tz_free(z);
}
END_TEST

START_TEST(test_units_weekdays_and_zone_names)
{
    enum cal_unit u;
    int d;
    ck_assert(cal_unit_parse("MONTH", 5, &u) && u == CAL_MONTH);
    ck_assert(cal_unit_parse("week", 4, &u) && u == CAL_WEEK);
    ck_assert(!cal_unit_parse("weeks", 5, &u));
    ck_assert(!cal_unit_parse("", 0, &u));
    ck_assert(cal_weekday_parse("Sunday", 6, &d) && d == 0);
    ck_assert(cal_weekday_parse("sat", 3, &d) && d == 6);
    ck_assert(!cal_weekday_parse("su", 2, &d));
    ck_assert(!cal_weekday_parse("sundays", 7, &d));
    static const char *const good[] = { "Europe/Paris", "UTC", "Etc/GMT+5",
                                        "America/Argentina/Buenos_Aires",
                                        "America/Port-au-Prince" };
    static const char *const bad[] = { "", "/etc/passwd", "../x", "Europe/..",
                                       "Europe//Paris", "Europe/", ".hidden",
                                       "a b", "Europe/./Paris", "x\n" };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ck_assert_msg(tzdb_name_valid(good[i], strlen(good[i])), "%s", good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(!tzdb_name_valid(bad[i], strlen(bad[i])), "%s", bad[i]);
    }
    ck_assert(!tzdb_name_valid("Europe/Paris\0x", 14));
}
END_TEST

/* A zone of a footer alone, without bytes: what tzif_parse would make. */
static struct tz_zone
rule_zone(const char *rule)
{
    struct tz_zone z = { .n = 0, .has_rule = true };
    ck_assert(tz_rule_parse(rule, strlen(rule), &z.rule));
    z.first_off = z.min_off = z.rule.std_off;
    z.max_off = z.rule.has_dst ? z.rule.dst_off : z.rule.std_off;
    return z;
}

START_TEST(test_fixed_window_counts_in_calendar_days)
{
    struct tz_zone paris = rule_zone("CET-1CEST,M3.5.0,M10.5.0/3");
    struct tz_zone ny = rule_zone("EST5EDT,M3.2.0,M11.1.0");
    struct cal_spec day = { &paris, CAL_DAY, 1 };
    struct fwin_params p = { 2, 0, 1, false, &day };
    struct fwin_state st, next;
    struct limit_decision d;
    const int64_t s = 1000000000;
    int64_t t = utc(2027, 3, 28, 12, 0) * s;        /* the 23-hour day */
    int64_t end = utc(2027, 3, 28, 22, 0) * s;
    ck_assert_int_eq(fwin_apply(&p, false, NULL, t, &st, &d), LIMIT_OK);
    ck_assert_int_eq(st.start, utc(2027, 3, 27, 23, 0) * s);
    ck_assert_int_eq(d.fresh_at, end);
    ck_assert_int_eq(d.reset_after_ns, end - t);
    ck_assert_int_eq(fwin_apply(&p, true, &st, t, &st, &d), LIMIT_OK);
    ck_assert_int_eq(fwin_apply(&p, true, &st, end - 1, &next, &d),
                     LIMIT_OK);
    ck_assert(d.limited);
    ck_assert_int_eq(d.retry_after_ns, 1);
    ck_assert_int_eq(fwin_apply(&p, true, &st, end, &next, &d), LIMIT_OK);
    ck_assert(!d.limited);
    ck_assert_int_eq(next.start, end);
    ck_assert_int_eq(d.fresh_at, utc(2027, 3, 29, 22, 0) * s);
    /* The same state asked with New York's days: it ends at New York's
     * first midnight after its start (04:00 UTC on the 28th). */
    struct cal_spec ny_day = { &ny, CAL_DAY, 1 };
    p.calendar = &ny_day;
    ck_assert_int_eq(fwin_apply(&p, true, &st, utc(2027, 3, 28, 3, 0) * s,
                                &next, &d), LIMIT_OK);
    ck_assert(d.limited);
    ck_assert_int_eq(d.fresh_at, utc(2027, 3, 28, 4, 0) * s);
    /* Calendar instants past int64 ns: refused, not wrapped. */
    ck_assert_int_eq(fwin_apply(&p, false, NULL, INT64_MAX - 1, &next, &d),
                     LIMIT_EOVERFLOW);
}
END_TEST

Suite *
tzif_suite(void)
{
    Suite *s = suite_create("tzif");
    TCase *tc = tcase_create("read");
    tcase_add_test(tc, test_a_slim_file_gives_every_instant_from_its_footer);
    tcase_add_test(tc, test_the_table_then_the_footer_and_type_zero_before_it);
    tcase_add_test(tc, test_a_v1_file_has_32_bit_times_and_no_footer);
    tcase_add_test(tc, test_every_truncation_and_corruption_is_refused);
    tcase_add_test(tc, test_posix_rules_of_every_form);
    suite_add_tcase(s, tc);
    tc = tcase_create("calendar");
    tcase_add_test(tc, test_days_weeks_months_and_years_in_local_time);
    tcase_add_test(tc, test_a_missing_or_doubled_midnight);
    tcase_add_test(tc, test_units_weekdays_and_zone_names);
    tcase_add_test(tc, test_fixed_window_counts_in_calendar_days);
    suite_add_tcase(s, tc);
    return s;
}
