/*
 * glob.c - see glob.h. Iterative with one backtrack point for '*', so a
 * hostile pattern costs O(plen * slen) at worst, never exponential time.
 */
#include "server/glob.h"

#include <ctype.h>

static bool
same_char(char a, char b, bool nocase)
{
    if (nocase) {
        return tolower((unsigned char)a) == tolower((unsigned char)b);
    }
    return a == b;
}

/* Match one [...] class at pat[*pi] (just past '[') against c; advances
 * *pi past the closing ']'. */
static bool
match_class(const char *pat, size_t plen, size_t *pi, char c, bool nocase)
{
    size_t i = *pi;
    bool negate = false;
    bool hit = false;
    if (i < plen && pat[i] == '^') {
        negate = true;
        i++;
    }
    while (i < plen && pat[i] != ']') {
        if (pat[i] == '\\' && i + 1 < plen) {
            hit |= same_char(pat[i + 1], c, nocase);
            i += 2;
        } else if (i + 2 < plen && pat[i + 1] == '-' && pat[i + 2] != ']') {
            unsigned char lo = (unsigned char)pat[i];
            unsigned char hi = (unsigned char)pat[i + 2];
            unsigned char x = (unsigned char)c;
            if (lo > hi) {
                unsigned char t = lo;
                lo = hi;
                hi = t;
            }
            if (nocase) {
                x = (unsigned char)tolower(x);
                lo = (unsigned char)tolower(lo);
                hi = (unsigned char)tolower(hi);
            }
            hit |= x >= lo && x <= hi;
            i += 3;
        } else {
            hit |= same_char(pat[i], c, nocase);
            i++;
        }
    }
    *pi = i < plen ? i + 1 : i; /* an unterminated class ends the pattern */
    return negate ? !hit : hit;
}

bool
glob_match(const char *pat, size_t plen, const char *str, size_t slen,
           bool nocase)
{
    size_t p = 0, s = 0;
    size_t star_p = (size_t)-1, star_s = 0;

    while (s < slen) {
        if (p < plen && pat[p] == '*') {
            while (p < plen && pat[p] == '*') {
                p++;
            }
            if (p == plen) {
                return true;
            }
            star_p = p;
            star_s = s;
            continue;
        }
        if (p < plen) {
            size_t np = p;
            bool ok;
            if (pat[p] == '?') {
                ok = true;
                np = p + 1;
            } else if (pat[p] == '[') {
                np = p + 1;
                ok = match_class(pat, plen, &np, str[s], nocase);
            } else if (pat[p] == '\\' && p + 1 < plen) {
                ok = same_char(pat[p + 1], str[s], nocase);
                np = p + 2;
            } else {
                ok = same_char(pat[p], str[s], nocase);
                np = p + 1;
            }
            if (ok) {
                p = np;
                s++;
                continue;
            }
        }
        if (star_p == (size_t)-1) {
            return false;
        }
        p = star_p;
        s = ++star_s;
    }
    while (p < plen && pat[p] == '*') {
        p++;
    }
    return p == plen;
}
