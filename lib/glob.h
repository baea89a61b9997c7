/*
 * glob.h - Redis's glob-style pattern matching (KEYS, SCAN MATCH, CONFIG
 * GET, COMMAND LIST): * ? [abc] [^a-z] and \ escapes, binary-safe, with
 * the answers of Redis 7's stringmatchlen(), quirks included.
 *
 * Bounded: a match costs O(pattern + string) for patterns whose runs
 * between two '*' are plain bytes, and at most GLOB_STEPS_PER_BYTE steps
 * per byte of pattern and string for any other; a match that would need
 * more is answered "no match", as Redis answers a pattern nested more
 * than 1000 '*' deep. So KEYS and SCAN cost at most a constant per byte of
 * the keys they visit, whatever the pattern.
 */
#ifndef CELLGATE_GLOB_H
#define CELLGATE_GLOB_H

#include <stdbool.h>
#include <stddef.h>

#define GLOB_STEPS_PER_BYTE 64
#define GLOB_MAX_STARS 1000

bool glob_match(const char *pat, size_t plen, const char *str, size_t slen,
                bool nocase);

#endif
