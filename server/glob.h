/*
 * glob.h - Redis's glob-style pattern matching (KEYS, SCAN MATCH, CONFIG
 * GET): * ? [abc] [^a-z] and \ escapes, binary-safe.
 */
#ifndef CELLGATE_GLOB_H
#define CELLGATE_GLOB_H

#include <stdbool.h>
#include <stddef.h>

bool glob_match(const char *pat, size_t plen, const char *str, size_t slen,
                bool nocase);

#endif
