/*
 * special.h - the options whose values have a syntax of their own
 * (options.h's CONF_SPECIAL): bind's addresses, client-output-buffer-
 * limit's classes, oom-score-adj-values, notify-keyspace-events' letters,
 * latency-tracking-info-percentiles, shutdown-on-sigint/sigterm's flags,
 * maxmemory-clients' size or percentage.
 *
 * Each is checked as Redis 7.0.15 checks it, with Redis's error texts (so
 * CONFIG SET answers its bytes), and kept in the one canonical form
 * CONFIG GET answers, as Redis prints it back: "0 200 800", "normal 0 0 0
 * slave 268435456 67108864 60 pubsub ...", "10%". conf.c stores that text
 * in the option's char * field; this module never sees struct conf.
 */
#ifndef CELLGATE_SPECIAL_H
#define CELLGATE_SPECIAL_H

#include <stdbool.h>
#include <stddef.h>

/* Does the named option take several words (Redis's MULTI_ARG_CONFIG)?
 * A file line's or a command line's words are then joined with a space,
 * as Redis splits one quoted value into words. */
bool conf_special_multi(const char *name);

/* The canonical text of `value` for the named option, malloc'd, into
 * *out; old is the running value (client-output-buffer-limit sets only
 * the classes it names). Returns 0, or -1 with err = Redis's words (or
 * "out of memory"); *out is then NULL. A name without a parser here
 * takes any text as it is. */
int conf_special_parse(const char *name, const char *old, const char *value,
                       char **out, char *err, size_t errlen);

/* Redis's memtoull(): digits, then an optional unit (b k kb m mb g gb, in
 * any case); no sign; "" is 0. False when text is not one. For
 * client-output-buffer-limit and maxmemory-clients, which read sizes as
 * Redis does. */
bool conf_memtoull(const char *text, unsigned long long *out);

#endif
