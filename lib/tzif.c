/*
 * tzif.c - TZif bytes into a zone, and a zone's offset at an instant (see
 * tzif.h).
 *
 * Design. The file is read over a bounds-checked cursor: the v1 header and
 * block (skipped in a v2+ file, whose second header and 64-bit block say
 * the same with wider times), then the footer between two newlines. Every
 * count comes from the file, so every size is computed in 64 bits before
 * it is compared with what is left; transition times must ascend and name
 * a time type that exists, as RFC 8536 requires, so a lookup can binary
 * search them. The zone keeps one block: the struct, then the times, then
 * the offsets.
 *
 * An instant before the first transition has time type 0's offset; one at
 * or after the last has the footer's (when the file has one, else the last
 * transition's). The footer's rule is evaluated for the years around the
 * instant: the two changes of each year are instants in UTC (the start
 * written in standard time, the end in DST), sorted, and the last one at or
 * before t decides.
 */
#include "lib/tzif.h"

#include <string.h>

#include "lib/civil.h"
#include "lib/mem.h"

#define HEADER_LEN 44
#define SECS_PER_DAY 86400
#define MAX_RULE_TIME (167 * 3600)  /* RFC 8536's extension of POSIX */
#define MAX_UTOFF (25 * 3600)       /* beyond any offset a zone has had */

struct cursor {
    const unsigned char *p;
    size_t left;
};

struct counts {
    uint32_t isut, isstd, leap, time, type, chars;
};

static uint32_t
be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int64_t
be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static bool
take(struct cursor *c, uint64_t n, const unsigned char **out)
{
    if (n > c->left) {
        return false;
    }
    *out = c->p;
    c->p += n;
    c->left -= (size_t)n;
    return true;
}

/* A header: its version byte and counts. */
static bool
read_header(struct cursor *c, char *version, struct counts *k)
{
    const unsigned char *h;
    if (!take(c, HEADER_LEN, &h) || memcmp(h, "TZif", 4) != 0) {
        return false;
    }
    *version = (char)h[4];
    k->isut = be32(h + 20);
    k->isstd = be32(h + 24);
    k->leap = be32(h + 28);
    k->time = be32(h + 32);
    k->type = be32(h + 36);
    k->chars = be32(h + 40);
    return true;
}

/* The bytes of a data block with times of tsize bytes. */
static uint64_t
block_len(const struct counts *k, unsigned tsize)
{
    return (uint64_t)k->time * tsize + k->time + (uint64_t)k->type * 6 +
           k->chars + (uint64_t)k->leap * (tsize + 4) + k->isstd + k->isut;
}

/* ---- the data block ------------------------------------------------------ */

static const char *
check_counts(const struct counts *k)
{
    if (k->type == 0 || k->chars == 0) {
        return "no time types";
    }
    if ((k->isstd != 0 && k->isstd != k->type) ||
        (k->isut != 0 && k->isut != k->type)) {
        return "indicator counts differ from the time types";
    }
    if (k->leap != 0) {
        return "leap-second records (a \"right/\" zone) are not supported";
    }
    return NULL;
}

/* The time types' offsets (k->type of them) into offs, checked. */
static const char *
read_types(const unsigned char *t, const struct counts *k, int32_t *offs)
{
    for (uint32_t i = 0; i < k->type; i++) {
        const unsigned char *e = t + (size_t)i * 6;
        int64_t off = (int32_t)be32(e);
        if (off < -MAX_UTOFF || off > MAX_UTOFF) {
            return "a time type's offset is out of range";
        }
        if (e[4] > 1 || e[5] >= k->chars) {
            return "a time type is malformed";
        }
        offs[i] = (int32_t)off;
    }
    return NULL;
}

/* The block at b (already known to be whole) into z's arrays. */
static const char *
read_block(const unsigned char *b, const struct counts *k, unsigned tsize,
           struct tz_zone *z, int32_t *type_offs)
{
    const unsigned char *idx = b + (size_t)k->time * tsize;
    const unsigned char *types = idx + k->time;
    const char *why = read_types(types, k, type_offs);
    if (why != NULL) {
        return why;
    }
    for (uint32_t i = 0; i < k->time; i++) {
        const unsigned char *at = b + (size_t)i * tsize;
        int64_t t = tsize == 8 ? be64(at) : (int32_t)be32(at);
        if (i > 0 && t <= z->times[i - 1]) {
            return "transition times do not ascend";
        }
        if (idx[i] >= k->type) {
            return "a transition names no time type";
        }
        z->times[i] = t;
        z->offs[i] = type_offs[idx[i]];
    }
    z->n = k->time;
    z->first_off = type_offs[0];
    return NULL;
}

/* ---- the footer's POSIX TZ rule ------------------------------------------ */

struct text {
    const char *p, *end;
};

static bool
digits(struct text *s, int max, int *out)
{
    int v = 0;
    const char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9' && v <= max) {
        v = v * 10 + (*s->p++ - '0');
    }
    *out = v;
    return s->p > start && v <= max;
}

/* [+-]hh[:mm[:ss]] with hh <= max_h, in seconds. */
static bool
hms(struct text *s, int max_h, int32_t *out)
{
    int sign = 1, h, m = 0, sec = 0;
    if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
        sign = *s->p++ == '-' ? -1 : 1;
    }
    if (!digits(s, max_h, &h)) {
        return false;
    }
    if (s->p < s->end && *s->p == ':') {
        s->p++;
        if (!digits(s, 59, &m)) {
            return false;
        }
        if (s->p < s->end && *s->p == ':') {
            s->p++;
            if (!digits(s, 59, &sec)) {
                return false;
            }
        }
    }
    *out = sign * (h * 3600 + m * 60 + sec);
    return true;
}

/* An abbreviation: letters, or <anything but '>'>; at least 3 chars. */
static bool
zone_name(struct text *s)
{
    const char *start = s->p;
    if (s->p < s->end && *s->p == '<') {
        while (s->p < s->end && *s->p != '>') {
            s->p++;
        }
        if (s->p == s->end) {
            return false;
        }
        s->p++;
        return s->p - start >= 5;
    }
    while (s->p < s->end && ((*s->p >= 'A' && *s->p <= 'Z') ||
                             (*s->p >= 'a' && *s->p <= 'z'))) {
        s->p++;
    }
    return s->p - start >= 3;
}

static bool
rule_date(struct text *s, struct tz_date *d)
{
    int a, b, c;
    memset(d, 0, sizeof(*d));
    d->time = 2 * 3600;
    if (s->p < s->end && *s->p == 'M') {
        s->p++;
        if (!digits(s, 12, &a) || a < 1 || s->p >= s->end || *s->p++ != '.' ||
            !digits(s, 5, &b) || b < 1 || s->p >= s->end ||
            *s->p++ != '.' || !digits(s, 6, &c)) {
            return false;
        }
        d->kind = 'M';
        d->month = (int8_t)a;
        d->week = (int8_t)b;
        d->wday = (int8_t)c;
    } else if (s->p < s->end && *s->p == 'J') {
        s->p++;
        if (!digits(s, 365, &a) || a < 1) {
            return false;
        }
        d->kind = 'J';
        d->day = (int16_t)a;
    } else {
        if (!digits(s, 365, &a)) {
            return false;
        }
        d->kind = 'N';
        d->day = (int16_t)a;
    }
    if (s->p < s->end && *s->p == '/') {
        s->p++;
        return hms(s, MAX_RULE_TIME / 3600, &d->time);
    }
    return true;
}

bool
tz_rule_parse(const char *str, size_t len, struct tz_rule *r)
{
    struct text s = { str, str + len };
    int32_t off;
    memset(r, 0, sizeof(*r));
    if (!zone_name(&s) || !hms(&s, 24, &off)) {
        return false;
    }
    r->std_off = -off;      /* POSIX counts west of UTC */
    if (s.p == s.end) {
        return true;
    }
    if (!zone_name(&s)) {
        return false;
    }
    r->dst_off = r->std_off + 3600;
    if (s.p < s.end && *s.p != ',') {
        if (!hms(&s, 24, &off)) {
            return false;
        }
        r->dst_off = -off;
    }
    /* TZif footers always give the dates (RFC 8536 section 3.3). */
    if (s.p == s.end || *s.p++ != ',' || !rule_date(&s, &r->start) ||
        s.p == s.end || *s.p++ != ',' || !rule_date(&s, &r->end)) {
        return false;
    }
    r->has_dst = true;
    return s.p == s.end;
}

/* The day (since the epoch) a rule's date falls on in year y. */
static int64_t
date_day(const struct tz_date *d, int64_t y)
{
    int64_t jan1 = civil_days(y, 1, 1);
    if (d->kind == 'N') {
        return jan1 + d->day;
    }
    if (d->kind == 'J') {   /* 1..365, Feb 29 never counted */
        return jan1 + d->day - 1 + (civil_leap(y) && d->day >= 60);
    }
    int64_t first = civil_days(y, d->month, 1);
    int64_t day = first + (d->wday - civil_weekday(first) + 7) % 7 +
                  (int64_t)(d->week - 1) * 7;
    while (day - first >= civil_month_days(y, d->month)) {
        day -= 7;           /* week 5: the last such weekday */
    }
    return day;
}

struct change {
    int64_t at;
    int32_t off;            /* the offset from `at` on */
    bool start;             /* DST starts (sorts after an end at a tie) */
};

/* The rule's changes of years y-1 .. y+1, sorted. */
static void
rule_changes(const struct tz_rule *r, int64_t y, struct change ch[6])
{
    for (int i = 0; i < 3; i++) {
        int64_t yy = y - 1 + i;
        ch[2 * i] = (struct change){
            date_day(&r->start, yy) * SECS_PER_DAY + r->start.time -
                r->std_off, r->dst_off, true };
        ch[2 * i + 1] = (struct change){
            date_day(&r->end, yy) * SECS_PER_DAY + r->end.time - r->dst_off,
            r->std_off, false };
    }
    for (int i = 1; i < 6; i++) {   /* insertion sort of six */
        struct change c = ch[i];
        int j = i;
        while (j > 0 && (ch[j - 1].at > c.at ||
                         (ch[j - 1].at == c.at && ch[j - 1].start &&
                          !c.start))) {
            ch[j] = ch[j - 1];
            j--;
        }
        ch[j] = c;
    }
}

static int32_t
rule_offset_at(const struct tz_rule *r, int64_t t, int64_t *next)
{
    struct change ch[6];
    int64_t y;
    int m, d;
    if (!r->has_dst) {
        *next = INT64_MAX;
        return r->std_off;
    }
    civil_date(civil_floor_div(t + r->std_off, SECS_PER_DAY), &y, &m, &d);
    rule_changes(r, y, ch);
    /* Before every change of y-1 (impossible for real rules): the
     * standard offset until the first. */
    int32_t off = r->std_off;
    *next = INT64_MAX;
    for (int i = 0; i < 6; i++) {
        if (ch[i].at <= t) {
            off = ch[i].off;
        } else {
            *next = ch[i].at;
            break;
        }
    }
    return off;
}

/* ---- parse and look up ----------------------------------------------------- */

static const char *
read_footer(struct cursor *c, struct tz_zone *z)
{
    const unsigned char *nl;
    if (c->left == 0) {
        return NULL;                    /* a v2+ file may end without one */
    }
    if (!take(c, 1, &nl) || *nl != '\n') {
        return "the footer does not start with a newline";
    }
    const unsigned char *end = memchr(c->p, '\n', c->left);
    if (end == NULL) {
        return "the footer does not end with a newline";
    }
    size_t len = (size_t)(end - c->p);
    if (len == 0) {
        return NULL;                    /* an empty footer: no rule */
    }
    if (!tz_rule_parse((const char *)c->p, len, &z->rule)) {
        return "the footer is not a POSIX TZ rule";
    }
    z->has_rule = true;
    return NULL;
}

static void
offset_bounds(struct tz_zone *z, const int32_t *type_offs, uint32_t ntypes)
{
    z->min_off = z->max_off = z->first_off;
    for (uint32_t i = 0; i < ntypes; i++) {
        z->min_off = type_offs[i] < z->min_off ? type_offs[i] : z->min_off;
        z->max_off = type_offs[i] > z->max_off ? type_offs[i] : z->max_off;
    }
    if (z->has_rule) {
        int32_t a = z->rule.std_off, b = z->rule.has_dst ? z->rule.dst_off : a;
        z->min_off = a < z->min_off ? a : z->min_off;
        z->min_off = b < z->min_off ? b : z->min_off;
        z->max_off = a > z->max_off ? a : z->max_off;
        z->max_off = b > z->max_off ? b : z->max_off;
    }
}

/* The block that counts (v1's, or the 64-bit one of a v2+ file), whole. */
static const char *
locate_block(struct cursor *c, struct counts *k, unsigned *tsize,
             const unsigned char **block)
{
    char version;
    if (!read_header(c, &version, k)) {
        return "not a TZif file";
    }
    if (version != '\0' && version < '2') {
        return "unknown TZif version";
    }
    *tsize = 4;
    if (version != '\0') {
        const unsigned char *v1;
        char v2;
        if (!take(c, block_len(k, 4), &v1) || !read_header(c, &v2, k)) {
            return "truncated";
        }
        *tsize = 8;
    }
    const char *why = check_counts(k);
    if (why == NULL && !take(c, block_len(k, *tsize), block)) {
        why = "truncated";
    }
    return why;
}

enum tzif_status
tzif_parse(const unsigned char *p, size_t len, struct tz_zone **out,
           const char **why)
{
    struct cursor c = { p, len };
    struct counts k;
    unsigned tsize;
    const unsigned char *block;
    *why = locate_block(&c, &k, &tsize, &block);
    if (*why != NULL) {
        return TZIF_CORRUPT;
    }
    size_t bytes = sizeof(struct tz_zone) + (size_t)k.time * 12 +
                   (size_t)k.type * 4;
    struct tz_zone *z = mem_calloc(1, bytes);
    if (z == NULL) {
        return TZIF_ENOMEM;
    }
    z->bytes = bytes;
    z->times = (int64_t *)(z + 1);
    z->offs = (int32_t *)(z->times + k.time);
    int32_t *type_offs = z->offs + k.time;  /* scratch, kept for bounds */
    *why = read_block(block, &k, tsize, z, type_offs);
    if (*why == NULL && tsize == 8) {
        *why = read_footer(&c, z);
    }
    if (*why != NULL) {
        mem_free(z);
        return TZIF_CORRUPT;
    }
    offset_bounds(z, type_offs, k.type);
    *out = z;
    return TZIF_OK;
}

void
tz_free(struct tz_zone *z)
{
    mem_free(z);
}

size_t
tz_size(const struct tz_zone *z)
{
    return z->bytes;
}

int32_t
tz_offset_at(const struct tz_zone *z, int64_t t, int64_t *next)
{
    if (z->n > 0 && t < z->times[0]) {
        *next = z->times[0];
        return z->first_off;
    }
    if (z->n == 0 || t >= z->times[z->n - 1]) {
        if (z->has_rule) {
            return rule_offset_at(&z->rule, t, next);
        }
        *next = INT64_MAX;
        return z->n == 0 ? z->first_off : z->offs[z->n - 1];
    }
    size_t lo = 0, hi = z->n - 1;   /* times[lo] <= t < times[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->times[mid] <= t) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    *next = z->times[hi];
    return z->offs[lo];
}
