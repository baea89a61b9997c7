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

/* The text CONFIG GET and CONFIG REWRITE show for a kept value (at most
 * buflen - 1 bytes of it; its length): the value itself, but where Redis
 * keeps more than it prints: notify-keyspace-events keeps n beside A as
 * "An" and shows "A". */
size_t conf_special_show(const char *name, const char *kept, char *buf,
                         size_t buflen);

/* notify-keyspace-events' classes, as the bits Redis 7.0.15 gives them
 * (server.h's NOTIFY_*), and the bits of a value this module kept (its
 * canonical text; 0 for NULL). */
#define CONF_EVENT_KEYSPACE (1u << 0)   /* K */
#define CONF_EVENT_KEYEVENT (1u << 1)   /* E */
#define CONF_EVENT_GENERIC (1u << 2)    /* g */
#define CONF_EVENT_STRING (1u << 3)     /* $ */
#define CONF_EVENT_LIST (1u << 4)       /* l */
#define CONF_EVENT_SET (1u << 5)        /* s */
#define CONF_EVENT_HASH (1u << 6)       /* h */
#define CONF_EVENT_ZSET (1u << 7)       /* z */
#define CONF_EVENT_EXPIRED (1u << 8)    /* x */
#define CONF_EVENT_EVICTED (1u << 9)    /* e */
#define CONF_EVENT_STREAM (1u << 10)    /* t */
#define CONF_EVENT_KEY_MISS (1u << 11)  /* m: not in A */
#define CONF_EVENT_MODULE (1u << 13)    /* d */
#define CONF_EVENT_NEW (1u << 14)       /* n: not in A */
#define CONF_EVENT_ALL                                                   \
    (CONF_EVENT_GENERIC | CONF_EVENT_STRING | CONF_EVENT_LIST |          \
     CONF_EVENT_SET | CONF_EVENT_HASH | CONF_EVENT_ZSET |                \
     CONF_EVENT_EXPIRED | CONF_EVENT_EVICTED | CONF_EVENT_STREAM |       \
     CONF_EVENT_MODULE)
unsigned conf_events_flags(const char *text);

#endif
