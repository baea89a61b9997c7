/*
 * args.h - splitting a line into words by Redis's rules (sdssplitargs):
 * what inline commands (protocol/resp.c) and config lines (conf/conf.c)
 * are made of.
 *
 *   - whitespace (space, \t \n \r \v \f) separates words;
 *   - "double quotes" take \xHH, \n \r \t \b \a and \<any byte> escapes;
 *   - 'single quotes' take only \' ;
 *   - a quote may open inside a word, and its closing quote must be
 *     followed by whitespace or the end of the line;
 *   - a NUL byte ends the line.
 */
#ifndef CELLGATE_ARGS_H
#define CELLGATE_ARGS_H

#include <stddef.h>

enum args_status {
    ARGS_WORD,          /* a word was decoded */
    ARGS_END,           /* no more words */
    ARGS_UNBALANCED,    /* a quote never closes */
    ARGS_GLUED          /* a closing quote is followed by more word */
};

/*
 * The next word of s[0..end) from *pos on, decoded into out, and its
 * length in *len; *pos moves past it. A decoded word is never longer than
 * its text, so out may be as small as end - *pos bytes, and may even be
 * s + *pos (decoding in place: writing trails reading).
 */
enum args_status args_next(const char *s, size_t end, size_t *pos, char *out,
                           size_t *len);

/* Decode the escape at s[*i] == '\\' (a byte must follow it) as double
 * quotes do; *i moves past it. */
char args_unescape(const char *s, size_t end, size_t *i);

#endif
