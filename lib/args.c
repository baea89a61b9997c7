/*
 * args.c - see args.h.
 */
#include "lib/args.h"

#include <stdbool.h>

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Does the line go on at i? (It ends at end or at a NUL byte.) */
static bool
more(const char *s, size_t end, size_t i)
{
    return i < end && s[i] != '\0';
}

char
args_unescape(const char *s, size_t end, size_t *i)
{
    size_t j = *i;
    if (j + 3 < end && s[j + 1] == 'x' && hex_value(s[j + 2]) >= 0 &&
        hex_value(s[j + 3]) >= 0) {
        *i = j + 4;
        return (char)(hex_value(s[j + 2]) * 16 + hex_value(s[j + 3]));
    }
    *i = j + 2;
    switch (s[j + 1]) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'b': return '\b';
    case 'a': return '\a';
    default: return s[j + 1];
    }
}

/* One byte of a quoted run at s[*i] (not its closing quote). */
static char
quoted_byte(const char *s, size_t end, size_t *i, char quote)
{
    if (s[*i] == '\\' && more(s, end, *i + 1)) {
        if (quote == '"') {
            return args_unescape(s, end, i);
        }
        if (s[*i + 1] == '\'') {
            *i += 2;
            return '\'';
        }
    }
    return s[(*i)++];
}

enum args_status
args_next(const char *s, size_t end, size_t *pos, char *out, size_t *len)
{
    size_t i = *pos;
    size_t n = 0;
    char quote = 0;

    while (more(s, end, i) && is_space(s[i])) {
        i++;
    }
    if (!more(s, end, i)) {
        *pos = i;
        return ARGS_END;
    }
    for (;;) {
        if (quote == 0) {
            if (!more(s, end, i) || is_space(s[i])) {
                break;
            }
            if (s[i] == '"' || s[i] == '\'') {
                quote = s[i++];
            } else {
                out[n++] = s[i++];
            }
        } else if (!more(s, end, i)) {
            return ARGS_UNBALANCED;
        } else if (s[i] == quote) {
            i++;
            if (more(s, end, i) && !is_space(s[i])) {
                return ARGS_GLUED;
            }
            break;
        } else {
            out[n++] = quoted_byte(s, end, &i, quote);
        }
    }
    *pos = i;
    *len = n;
    return ARGS_WORD;
}
