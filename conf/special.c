/*
 * special.c - see special.h.
 *
 * One parser per option, in a table by name. A parser gets the value's
 * words (split at every single space, as Redis's CONFIG SET splits a
 * multi-word value: two spaces make an empty word) and writes the
 * canonical text into a buffer, or says why not in Redis's words. The
 * facts (bounds, letters, class names, the form printed back) are Redis
 * 7.0.15's config.c and notify.c.
 */
#include "conf/special.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/num.h"

#define SPECIAL_WORDS_MAX 64        /* more is refused by every parser */
#define SPECIAL_OUT_MAX 1024

struct words {
    char *w[SPECIAL_WORDS_MAX];
    size_t n;
    bool too_many;
};

typedef int (*special_fn)(const char *old, const struct words *in,
                          char *out, size_t outlen, const char **why);

/* Split value (copied into buf) at single spaces; "" has no word. */
static void
split_words(char *buf, struct words *in)
{
    in->n = 0;
    in->too_many = false;
    if (buf[0] == '\0') {
        return;
    }
    for (char *p = buf;;) {
        if (in->n == SPECIAL_WORDS_MAX) {
            in->too_many = true;
            return;
        }
        in->w[in->n++] = p;
        p = strchr(p, ' ');
        if (p == NULL) {
            return;
        }
        *p++ = '\0';
    }
}

bool
conf_memtoull(const char *text, unsigned long long *out)
{
    static const struct {
        const char *unit;
        unsigned long long mult;
    } units[] = { { "", 1 }, { "b", 1 }, { "k", 1000 }, { "kb", 1024 },
                  { "m", 1000 * 1000 }, { "mb", 1024 * 1024 },
                  { "g", 1000ULL * 1000 * 1000 },
                  { "gb", 1024ULL * 1024 * 1024 } };
    size_t digits = strspn(text, "0123456789");
    char buf[128];
    if (digits >= sizeof(buf)) {
        return false;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(text + digits, units[i].unit) == 0) {
            memcpy(buf, text, digits);
            buf[digits] = '\0';
            /* As Redis: strtoull's value, an overflow saturating. */
            *out = strtoull(buf, NULL, 10) * units[i].mult;
            return true;
        }
    }
    return false;
}

/* bind: up to 16 addresses, kept as given (the listener reads them). */
static int
parse_bind(const char *old, const struct words *in, char *out, size_t outlen,
           const char **why)
{
    size_t len = 0;
    (void)old;
    if (in->too_many || in->n > 16) {
        *why = "Too many bind addresses specified.";
        return -1;
    }
    out[0] = '\0';
    for (size_t i = 0; i < in->n; i++) {
        len += (size_t)snprintf(out + len, outlen - len, "%s%s",
                                i ? " " : "", in->w[i]);
        if (len >= outlen) {
            *why = "Too many bind addresses specified.";
            return -1;
        }
    }
    return 0;
}

/* client-output-buffer-limit's three classes, in Redis's order and
 * names (CONFIG GET says slave, and takes replica too). */
static const char *const obuf_class[3] = { "normal", "slave", "pubsub" };

struct obuf_limit {
    unsigned long long hard, soft;
    long long seconds;
};

static int
obuf_class_of(const char *name)
{
    if (strcasecmp(name, "replica") == 0) {
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(name, obuf_class[i]) == 0) {
            return i;
        }
    }
    return -1;          /* master too: Redis refuses it */
}

/* One "<class> <hard> <soft> <seconds>" group into lim[]. */
static int
obuf_group(char *const *g, struct obuf_limit *lim, const char **why)
{
    int cls = obuf_class_of(g[0]);
    struct obuf_limit l;
    char *end;
    if (cls < 0) {
        *why = "Invalid client class specified in buffer limit "
               "configuration.";
        return -1;
    }
    errno = 0;
    l.seconds = strtoll(g[3], &end, 10);
    if (!conf_memtoull(g[1], &l.hard) || !conf_memtoull(g[2], &l.soft) ||
        l.seconds < 0 || l.seconds > INT_MAX || *end != '\0') {
        *why = "Error in hard, soft or soft_seconds setting in buffer "
               "limit configuration.";
        return -1;
    }
    lim[cls] = l;
    return 0;
}

/* Only the classes named change, as in Redis (a file's three lines add
 * up); the old value is this parser's own canonical text. */
static int
parse_obuf(const char *old, const struct words *in, char *out, size_t outlen,
           const char **why)
{
    struct obuf_limit lim[3] = { { 0, 0, 0 } };
    if (in->too_many || in->n % 4 != 0) {
        *why = "Wrong number of arguments in buffer limit configuration.";
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        const char *at = strstr(old, obuf_class[i]);
        if (at != NULL) {
            sscanf(at + strlen(obuf_class[i]), " %llu %llu %lld",
                   &lim[i].hard, &lim[i].soft, &lim[i].seconds);
        }
    }
    struct obuf_limit next[3];
    memcpy(next, lim, sizeof(next));
    for (size_t i = 0; i < in->n; i += 4) {
        if (obuf_group(in->w + i, next, why) != 0) {
            return -1;
        }
    }
    snprintf(out, outlen, "%s %llu %llu %lld %s %llu %llu %lld %s %llu %llu "
             "%lld", obuf_class[0], next[0].hard, next[0].soft,
             next[0].seconds, obuf_class[1], next[1].hard, next[1].soft,
             next[1].seconds, obuf_class[2], next[2].hard, next[2].soft,
             next[2].seconds);
    return 0;
}

/* oom-score-adj-values: three integers, -2000 to 2000. */
static int
parse_oom(const char *old, const struct words *in, char *out, size_t outlen,
          const char **why)
{
    long long v[3];
    (void)old;
    if (in->too_many || in->n != 3) {
        *why = "wrong number of arguments";
        return -1;
    }
    for (size_t i = 0; i < 3; i++) {
        char *end;
        v[i] = strtoll(in->w[i], &end, 10);
        if (*end != '\0' || v[i] < -2000 || v[i] > 2000) {
            *why = "Invalid oom-score-adj-values, elements must be between "
                   "-2000 and 2000.";
            return -1;
        }
    }
    snprintf(out, outlen, "%lld %lld %lld", v[0], v[1], v[2]);
    return 0;
}

/* latency-tracking-info-percentiles: doubles 0 to 100, printed "%f"
 * with the trailing zeros (and a bare point) cut, as Redis does. */
static int
parse_percentiles(const char *old, const struct words *in, char *out,
                  size_t outlen, const char **why)
{
    size_t len = 0;
    (void)old;
    out[0] = '\0';
    for (size_t i = 0; i < in->n && !in->too_many; i++) {
        double d;
        char num[400];
        if (!num_parse_double(in->w[i], strlen(in->w[i]), &d)) {
            *why = "Invalid latency-tracking-info-percentiles parameters";
            return -1;
        }
        if (d > 100.0 || d < 0.0) {
            *why = "latency-tracking-info-percentiles parameters should "
                   "sit between [0.0,100.0]";
            return -1;
        }
        size_t n = (size_t)snprintf(num, sizeof(num), "%f", d);
        while (strchr(num, '.') != NULL && num[n - 1] == '0') {
            num[--n] = '\0';
        }
        if (num[n - 1] == '.') {
            num[--n] = '\0';
        }
        len += (size_t)snprintf(out + len, outlen - len, "%s%s",
                                i ? " " : "", num);
        if (len >= outlen) {
            break;
        }
    }
    if (in->too_many || len >= outlen) {
        *why = "Invalid latency-tracking-info-percentiles parameters";
        return -1;
    }
    return 0;
}

/* notify-keyspace-events: Redis's class letters (notify.c), each the
 * bit Redis gives it (special.h's CONF_EVENT_*), in Redis's printing
 * order: the classes, then K, E and m. A stands for every class but n
 * (g$lshzxetd); a value holding them all prints as A, n unsaid. */
static const struct {
    char letter;
    unsigned bit;
} event_letters[] = {
    { 'g', CONF_EVENT_GENERIC }, { '$', CONF_EVENT_STRING },
    { 'l', CONF_EVENT_LIST }, { 's', CONF_EVENT_SET },
    { 'h', CONF_EVENT_HASH }, { 'z', CONF_EVENT_ZSET },
    { 'x', CONF_EVENT_EXPIRED }, { 'e', CONF_EVENT_EVICTED },
    { 't', CONF_EVENT_STREAM }, { 'd', CONF_EVENT_MODULE },
    { 'n', CONF_EVENT_NEW }, { 'K', CONF_EVENT_KEYSPACE },
    { 'E', CONF_EVENT_KEYEVENT }, { 'm', CONF_EVENT_KEY_MISS },
};
#define N_EVENT_LETTERS (sizeof(event_letters) / sizeof(event_letters[0]))
static const char events_refused[] =
    "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/* The bits of a run of letters; -1 at a letter Redis does not know. */
static long
events_of(const char *p)
{
    unsigned flags = 0;
    for (; *p != '\0'; p++) {
        size_t i = 0;
        while (i < N_EVENT_LETTERS && event_letters[i].letter != *p) {
            i++;
        }
        if (*p == 'A') {
            flags |= CONF_EVENT_ALL;
        } else if (i < N_EVENT_LETTERS) {
            flags |= event_letters[i].bit;
        } else {
            return -1;
        }
    }
    return (long)flags;
}

size_t
conf_special_show(const char *name, const char *kept, char *buf,
                  size_t buflen)
{
    bool hide_n = strcasecmp(name, "notify-keyspace-events") == 0 &&
                  kept[0] == 'A' && kept[1] == 'n';
    int n = hide_n ? snprintf(buf, buflen, "A%s", kept + 2)
                   : snprintf(buf, buflen, "%s", kept);
    return n < 0 ? 0 : (size_t)n;
}

unsigned
conf_events_flags(const char *text)
{
    long flags = text != NULL ? events_of(text) : 0;
    return flags < 0 ? 0 : (unsigned)flags;
}

static int
parse_events(const char *old, const struct words *in, char *out,
             size_t outlen, const char **why)
{
    (void)old;
    /* One word, as a rule: a space is no letter. */
    long flags = in->n == 1 ? events_of(in->w[0]) : in->n == 0 ? 0 : -1;
    if (flags < 0) {
        *why = events_refused;
        return -1;
    }
    size_t len = 0;
    if (((unsigned)flags & CONF_EVENT_ALL) == CONF_EVENT_ALL) {
        /* Redis prints A alone but keeps n: kept as "An", shown as "A"
         * (conf_special_show()). */
        out[len++] = 'A';
        if ((unsigned)flags & CONF_EVENT_NEW) {
            out[len++] = 'n';
        }
        flags &= ~(long)(CONF_EVENT_ALL | CONF_EVENT_NEW);
    }
    for (size_t i = 0; i < N_EVENT_LETTERS && len + 1 < outlen; i++) {
        if ((unsigned)flags & event_letters[i].bit) {
            out[len++] = event_letters[i].letter;
        }
    }
    out[len] = '\0';
    return 0;
}

/* shutdown-on-sigint/sigterm: flags, printed in this order. */
static const char *const shutdown_words[] = { "default", "save", "nosave",
                                              "now", "force" };

static int
parse_shutdown(const char *old, const struct words *in, char *out,
               size_t outlen, const char **why)
{
    unsigned flags = 0;
    size_t len = 0;
    (void)old;
    for (size_t i = 0; i < in->n || in->n == 0; i++) {
        size_t k = 0;
        while (in->n > 0 && k < 5 && strcasecmp(in->w[i], shutdown_words[k])) {
            k++;
        }
        if (in->n == 0 || k == 5 || in->too_many) {
            *why = "argument(s) must be one of the following: default, "
                   "save, nosave, now, force";
            return -1;
        }
        flags |= k == 0 ? 0 : 1u << (k - 1);
    }
    if ((flags & 3u) == 3u) {
        *why = "shutdown options SAVE and NOSAVE can't be used "
               "simultaneously";
        return -1;
    }
    snprintf(out, outlen, "default");
    for (size_t k = 1; k < 5 && flags != 0; k++) {
        if (flags & (1u << (k - 1))) {
            len += (size_t)snprintf(out + len, outlen - len, "%s%s",
                                    len ? " " : "", shutdown_words[k]);
        }
    }
    return 0;
}

/* maxmemory-clients: a size, or a percentage of maxmemory ("10%"). */
static int
parse_mem_or_percent(const char *old, const struct words *in, char *out,
                     size_t outlen, const char **why)
{
    const char *v = in->n == 1 ? in->w[0] : "";
    size_t len = strlen(v);
    unsigned long long bytes;
    int64_t pct;
    (void)old;
    if (in->n > 1) {
        *why = "argument must be a memory or percent value";
        return -1;
    }
    if (conf_memtoull(v, &bytes)) {
        if (bytes > (unsigned long long)INT64_MAX) {
            *why = "argument must be between -100 and 9223372036854775807 "
                   "inclusive";
            return -1;
        }
        snprintf(out, outlen, "%llu", bytes);
        return 0;
    }
    if (len > 1 && v[len - 1] == '%' && num_parse_i64(v, len - 1, &pct) &&
        pct >= 0) {
        if (pct > 100) {
            *why = "percentage argument must be less or equal to 100";
            return -1;
        }
        snprintf(out, outlen, "%" PRId64 "%%", pct);
        return 0;
    }
    *why = "argument must be a memory or percent value";
    return -1;
}

/* proc-title-template: Redis's sdstemplate() over its variables ({{ is
 * a brace), which must not come out empty when the title is (run-time
 * variables, the config file and the socket, count as set). */
static int
parse_proc_title(const char *old, const struct words *in, char *out,
                 size_t outlen, const char **why)
{
    static const char *const vars[] = { "title", "listen-addr",
                                        "server-mode", "config-file", "port",
                                        "tls-port", "unixsocket" };
    const char *p = in->n == 1 ? in->w[0] : "";
    bool filled = false;
    (void)old;
    while (*p != '\0') {
        const char *brace = strchr(p, '{');
        size_t var = 0;
        for (const char *q = p; q < (brace ? brace : p + strlen(p)); q++) {
            filled |= *q != ' ';
        }
        if (brace == NULL) {
            break;
        }
        if (brace[1] == '{') {
            filled = true;
            p = brace + 2;
            continue;
        }
        const char *end = strchr(brace + 1, '}');
        size_t len = end != NULL ? (size_t)(end - brace - 1) : 0;
        while (end != NULL && var < 7 && (strlen(vars[var]) != len ||
               strncmp(brace + 1, vars[var], len) != 0)) {
            var++;
        }
        if (end == NULL || var == 7) {
            filled = false;
            break;
        }
        filled |= var != 0 && var != 2;     /* title and server-mode: "" */
        p = end + 1;
    }
    if (!filled) {
        *why = "template format is invalid or contains unknown variables";
        return -1;
    }
    snprintf(out, outlen, "%s", in->w[0]);
    return 0;
}

/* cluster-announce-hostname: letters, digits, - and ., shorter than 256
 * bytes (Redis's NET_HOST_STR_LEN); "" is none. */
static int
parse_hostname(const char *old, const struct words *in, char *out,
               size_t outlen, const char **why)
{
    const char *v = in->n == 1 ? in->w[0] : "";
    (void)old;
    if (strlen(v) >= 256) {
        *why = "Hostnames must be less than 256 characters";
        return -1;
    }
    if (v[strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789-.")] != '\0') {
        *why = "Hostnames may only contain alphanumeric characters, "
               "hyphens or dots";
        return -1;
    }
    snprintf(out, outlen, "%s", v);
    return 0;
}

static const struct special {
    const char *name;
    bool multi;             /* Redis's MULTI_ARG_CONFIG */
    special_fn parse;
} specials[] = {
    { "bind", true, parse_bind },
    { "client-output-buffer-limit", true, parse_obuf },
    { "oom-score-adj-values", true, parse_oom },
    { "latency-tracking-info-percentiles", true, parse_percentiles },
    { "notify-keyspace-events", false, parse_events },
    { "shutdown-on-sigint", true, parse_shutdown },
    { "shutdown-on-sigterm", true, parse_shutdown },
    { "maxmemory-clients", false, parse_mem_or_percent },
    { "proc-title-template", false, parse_proc_title },
    { "cluster-announce-hostname", false, parse_hostname },
};

static const struct special *
special_of(const char *name)
{
    for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
        if (strcasecmp(name, specials[i].name) == 0) {
            return &specials[i];
        }
    }
    return NULL;
}

bool
conf_special_multi(const char *name)
{
    const struct special *s = special_of(name);
    return s != NULL && s->multi;
}

int
conf_special_parse(const char *name, const char *old, const char *value,
                   char **out, char *err, size_t errlen)
{
    const struct special *s = special_of(name);
    char *buf = strdup(value);
    char *text = malloc(SPECIAL_OUT_MAX);
    const char *why = NULL;
    struct words in;
    int rc = -1;
    *out = NULL;
    if (buf == NULL || text == NULL) {
        why = "out of memory";
    } else if (s == NULL) {
        free(text);
        text = strdup(value);
        why = "out of memory";
        rc = text != NULL ? 0 : -1;
    } else {
        if (s->multi) {
            split_words(buf, &in);
        } else {                        /* one word, spaces and all */
            in.w[0] = buf;
            in.n = 1;
            in.too_many = false;
        }
        rc = s->parse(old != NULL ? old : "", &in, text, SPECIAL_OUT_MAX,
                      &why);
    }
    free(buf);
    if (rc != 0) {
        snprintf(err, errlen, "%s", why);
        free(text);
        return -1;
    }
    *out = text;
    return 0;
}
