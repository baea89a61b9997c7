/*
 * glob.c - see glob.h.
 *
 * Why not Redis's algorithm: it tries the rest of the pattern at every
 * position after a '*', so `*aaaa...ab` against a long run of 'a's costs
 * pattern x string steps (seconds for a 100 KB pattern and a 200 KB key,
 * with every client waiting). Here the pattern is cut at its '*' groups
 * into segments; each token of a segment consumes exactly one byte, so a
 * segment has a fixed length, and the leftmost place each middle segment
 * fits after the previous one is the only one worth trying (a later one
 * leaves less room for the rest, never more). The first segment is
 * anchored at the start, the last at the end. A segment of plain bytes is
 * found with memmem() (linear time); others are tried position by
 * position, and a step budget bounds that search.
 *
 * Redis's answers, kept on purpose:
 *  - an empty string matches only the empty pattern (Redis's loop needs
 *    both to be non-empty);
 *  - more than GLOB_MAX_STARS '*' groups followed by more pattern never
 *    match (Redis's nesting limit);
 *  - classes: "\x" is x; "a-z" is a range whenever two bytes follow the
 *    '-' position ("[a-]" takes ']' as the range's end), bounds compared
 *    as signed chars and swapped when reversed; an unterminated class
 *    runs to the end of the pattern.
 */
#include "lib/glob.h"

#include <stdint.h>
#include <string.h>

/* A slice of the pattern: [from, to) holds `len` tokens, no '*'. */
struct seg {
    size_t from;
    size_t to;
    size_t len;
    bool plain;     /* plain bytes only: found with memmem() */
};

struct matcher {
    const char *pat;
    size_t plen;
    const char *str;
    size_t slen;
    bool nocase;
    uint64_t steps;     /* left before the budget runs out */
};

static int
fold(int c, bool nocase)
{
    return nocase && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static bool
same(char a, char b, bool nocase)
{
    return fold((unsigned char)a, nocase) == fold((unsigned char)b, nocase);
}

/* The class starting after '[' at i: does it take c? *end is just past
 * it. Redis's parse, step for step (see the top of the file). */
static bool
class_takes(const struct matcher *m, size_t i, char c, size_t *end)
{
    const char *p = m->pat;
    size_t n = m->plen;
    bool negate = i < n && p[i] == '^';
    bool hit = false;

    i += negate;
    for (;;) {
        if (i + 1 < n && p[i] == '\\') {
            i++;
            hit |= p[i] == c;
        } else if (i < n && p[i] == ']') {
            break;
        } else if (i >= n) {
            i = n - 1;          /* unterminated: ends with the pattern */
            break;
        } else if (i + 2 < n && p[i + 1] == '-') {
            int lo = fold((signed char)p[i], m->nocase);
            int hi = fold((signed char)p[i + 2], m->nocase);
            int x = fold((signed char)c, m->nocase);
            if (lo > hi) {
                int t = lo;
                lo = hi;
                hi = t;
            }
            hit |= x >= lo && x <= hi;
            i += 2;
        } else {
            hit |= same(p[i], c, m->nocase);
        }
        i++;
    }
    *end = i + 1;
    return negate ? !hit : hit;
}

/* Does the token at i take c? *end is just past the token. */
static bool
token_takes(const struct matcher *m, size_t i, char c, size_t *end)
{
    const char *p = m->pat;
    if (p[i] == '?') {
        *end = i + 1;
        return true;
    }
    if (p[i] == '[') {
        return class_takes(m, i + 1, c, end);
    }
    if (p[i] == '\\' && i + 1 < m->plen) {
        i++;
    }
    *end = i + 1;
    return same(p[i], c, m->nocase);
}

/* Does seg match the string at `at`? Counts the pattern bytes looked at
 * against the budget; false once it is spent. */
static bool
seg_matches_at(struct matcher *m, const struct seg *sg, size_t at)
{
    size_t i = sg->from;
    for (size_t k = 0; k < sg->len; k++) {
        size_t end;
        bool ok = token_takes(m, i, m->str[at + k], &end);
        uint64_t cost = end - i;
        if (cost > m->steps) {
            m->steps = 0;
            return false;
        }
        m->steps -= cost;
        if (!ok) {
            return false;
        }
        i = end;
    }
    return true;
}

/* The leftmost position >= from where sg matches, or SIZE_MAX. */
static size_t
seg_find(struct matcher *m, const struct seg *sg, size_t from)
{
    if (from > m->slen || m->slen - from < sg->len) {
        return SIZE_MAX;
    }
    if (sg->plain) {
        const char *hit = memmem(m->str + from, m->slen - from,
                                 m->pat + sg->from, sg->len);
        return hit != NULL ? (size_t)(hit - m->str) : SIZE_MAX;
    }
    for (size_t at = from; at + sg->len <= m->slen; at++) {
        if (seg_matches_at(m, sg, at)) {
            return at;
        }
        if (m->steps == 0) {
            return SIZE_MAX;
        }
    }
    return SIZE_MAX;
}

/* The segment starting at i (not at a '*'); returns its end. */
static size_t
seg_scan(const struct matcher *m, size_t i, struct seg *sg)
{
    sg->from = i;
    sg->len = 0;
    sg->plain = !m->nocase;
    while (i < m->plen && m->pat[i] != '*') {
        size_t end;
        char c = m->pat[i];
        sg->plain &= c != '?' && c != '[' && c != '\\';
        (void)token_takes(m, i, 0, &end);
        i = end;
        sg->len++;
    }
    sg->to = i;
    return i;
}

static size_t
skip_stars(const struct matcher *m, size_t i)
{
    while (i < m->plen && m->pat[i] == '*') {
        i++;
    }
    return i;
}

/* Count the '*' groups followed by more pattern. */
static size_t
inner_stars(const struct matcher *m)
{
    size_t n = 0;
    size_t i = 0;
    while (i < m->plen) {
        if (m->pat[i] == '*') {
            i = skip_stars(m, i);
            n += i < m->plen;
        } else {
            struct seg sg;
            i = seg_scan(m, i, &sg);
        }
    }
    return n;
}

static bool
match(struct matcher *m)
{
    struct seg sg;
    size_t i = seg_scan(m, 0, &sg);
    if (i == m->plen) {             /* no '*': the whole string */
        return sg.len == m->slen && seg_matches_at(m, &sg, 0);
    }
    if (sg.len > m->slen || !seg_matches_at(m, &sg, 0)) {
        return false;
    }
    size_t pos = sg.len;
    for (;;) {
        i = skip_stars(m, i);
        if (i == m->plen) {
            return true;            /* a trailing '*' takes the rest */
        }
        i = seg_scan(m, i, &sg);
        if (i == m->plen) {         /* the last segment: at the end */
            return m->slen - pos >= sg.len &&
                   seg_matches_at(m, &sg, m->slen - sg.len);
        }
        size_t at = seg_find(m, &sg, pos);
        if (at == SIZE_MAX) {
            return false;
        }
        pos = at + sg.len;
    }
}

bool
glob_match(const char *pat, size_t plen, const char *str, size_t slen,
           bool nocase)
{
    if (slen == 0 || plen == 0) {
        return slen == 0 && plen == 0;
    }
    struct matcher m = { pat, plen, str, slen, nocase, 0 };
    /* The budget: GLOB_STEPS_PER_BYTE per byte of both, saturating. */
    uint64_t bytes = (uint64_t)plen + slen + 16;
    m.steps = bytes > UINT64_MAX / GLOB_STEPS_PER_BYTE
                  ? UINT64_MAX : bytes * GLOB_STEPS_PER_BYTE;
    if (inner_stars(&m) > GLOB_MAX_STARS) {
        return false;
    }
    return match(&m);
}
