/*
 * conf.c - configuration: the table in options.h applied to struct conf.
 *
 * Design
 * ------
 * Everything is driven by one table. Each X-macro row of options.h becomes
 * a struct conf_option {name, type, default, min, max, description, offset
 * of the field}, and one parser per type turns text into a field. The same
 * parser reads the table's default string (conf_init), a file line
 * (conf_load_file) and a "--name value" argument (conf_load_args), so a
 * default can never be something a user could not write, and the table is
 * the only place a default lives.
 *
 * Setting an option is all-or-nothing: text is parsed into a temporary and
 * the field is written only when it is valid, so a rejected value leaves
 * the old one. A string is copied before the old copy is freed, so a failed
 * malloc also leaves the old value.
 *
 * The file syntax is Redis's: one "name value" per line, whole-line #
 * comments, blank lines, names case-insensitive, words split on blanks and
 * quoted as sdssplitargs quotes them ("..." with \n \r \t \b \a \\ \" \xHH
 * escapes, '...' with only \'). That is how an empty value is written:
 * logfile "". A config file is small, so it is read whole and split and
 * unquoted in place (unquoting only ever shortens a word): one allocation
 * per file.
 *
 * Numbers are strict, like Redis's string2ll: digits only, no '+', no
 * leading zero, no blanks, with an overflow check at every digit; a number
 * too large for int64_t is reported as out of range, not as malformed.
 * Sizes take Redis memtoll's units (b, k, m, g in thousands; kb, mb, gb in
 * 1024s; any case).
 *
 * This module never prints, except conf_describe: every error is text in
 * the caller's buffer. The parsers say what is wrong; the loaders add where
 * ("path:line: " or "--name: ").
 */
#include "conf/conf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf/special.h"
#include "lib/args.h"
#include "lib/num.h"

#define CONF_ROW(field, name, type, def, min, max, desc)                     \
    { name, type, def, min, max, desc, offsetof(struct conf, field) },

static const struct conf_option options[] = {
    CONF_OPTIONS(CONF_ROW)
};

static const size_t noptions = sizeof(options) / sizeof(options[0]);

#define CONF_ALIAS_ROW(field, alias) { alias, offsetof(struct conf, field) },

static const struct conf_alias aliases[] = {
    CONF_ALIASES(CONF_ALIAS_ROW)
};

static const size_t naliases = sizeof(aliases) / sizeof(aliases[0]);

/* Size units, as Redis memtoll accepts them. */
static const struct {
    const char *suffix;
    int64_t mult;
} units[] = {
    { "", 1 },
    { "b", 1 },
    { "k", 1000 },
    { "kb", 1024 },
    { "m", 1000 * 1000 },
    { "mb", 1024 * 1024 },
    { "g", 1000LL * 1000 * 1000 },
    { "gb", 1024LL * 1024 * 1024 },
};

#if defined(__GNUC__)
#define CONF_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CONF_PRINTF(fmt, args)
#endif

static void err_set(char *err, size_t errlen, const char *fmt, ...)
    CONF_PRINTF(3, 4);

/* Every error goes through here, so a NULL or empty buffer is tolerated
 * once rather than at each call. */
static void
err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- character helpers (ASCII only: <ctype.h> depends on the locale) ---- */

static bool
is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' ||
           ch == '\v' || ch == '\f';
}

static char
ascii_lower(char ch)
{
    return (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
}

/* Does the NUL-terminated s equal the n bytes at word, ignoring case? */
static bool
ascii_ieq(const char *s, const char *word, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\0' || ascii_lower(s[i]) != ascii_lower(word[i])) {
            return false;
        }
    }
    return s[n] == '\0';
}

static bool
is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* The value of a digit in any base up to 16, or 16 for a non-digit. */
static unsigned
digit_value(char ch)
{
    if (is_digit(ch)) {
        return (unsigned)(ch - '0');
    }
    ch = ascii_lower(ch);
    if (ch >= 'a' && ch <= 'f') {
        return (unsigned)(ch - 'a' + 10);
    }
    return 16;
}

static char *
skip_blanks(char *p)
{
    while (is_blank(*p)) {
        p++;
    }
    return p;
}

/* ---- fields ---- */

static int64_t *
num_field(struct conf *c, const struct conf_option *o)
{
    return (int64_t *)(void *)((char *)c + o->offset);
}

static char **
str_field(struct conf *c, const struct conf_option *o)
{
    return (char **)(void *)((char *)c + o->offset);
}

static int64_t
num_value(const struct conf *c, const struct conf_option *o)
{
    return *(const int64_t *)(const void *)((const char *)c + o->offset);
}

static const char *
str_value(const struct conf *c, const struct conf_option *o)
{
    const char *s =
        *(char *const *)(const void *)((const char *)c + o->offset);

    return s != NULL ? s : "";
}

static struct conf_bytes *
bytes_field(struct conf *c, const struct conf_option *o)
{
    return (struct conf_bytes *)(void *)((char *)c + o->offset);
}

static const struct conf_bytes *
bytes_value(const struct conf *c, const struct conf_option *o)
{
    return (const struct conf_bytes *)(const void *)((const char *)c +
                                                     o->offset);
}

/* Types whose field is (or starts with) a malloc'd char *. */
static bool
is_string_type(enum conf_type t)
{
    return t == CONF_STRING || t == CONF_BINARY || t == CONF_SAVE ||
           t == CONF_PRIMARY || t == CONF_SPECIAL;
}

/* ---- numbers ---- */

/* Consume every digit of the base at s into *out (octal values). Digits
 * keep being consumed after an overflow, so an overlong value is seen
 * whole and reported as too large rather than as malformed. */
static const char *
scan_digits(const char *s, unsigned base, int64_t *out, bool *overflow)
{
    int64_t v = 0;

    *overflow = false;
    for (; digit_value(*s) < base; s++) {
        int64_t d = digit_value(*s);

        if (v > (INT64_MAX - d) / (int64_t)base) {
            *overflow = true;
        } else {
            v = v * (int64_t)base + d;
        }
    }
    *out = v;
    return s;
}

static int
range_error(const struct conf_option *o, const char *text, char *err,
            size_t errlen)
{
    if (o->type == CONF_OCTAL) {
        err_set(err, errlen,
                "'%s' must be between %" PRIo64 " and %" PRIo64
                " (octal), got '%s'",
                o->name, (uint64_t)o->min, (uint64_t)o->max, text);
    } else {
        err_set(err, errlen,
                "'%s' must be between %" PRId64 " and %" PRId64 "%s, got '%s'",
                o->name, o->min, o->max,
                o->type == CONF_BYTES ? " bytes" : "", text);
    }
    return -1;
}

static int
check_bounds(const struct conf_option *o, const char *text, int64_t v,
             char *err, size_t errlen)
{
    if (v < o->min || v > o->max) {
        return range_error(o, text, err, errlen);
    }
    return 0;
}

static int
parse_int(const struct conf_option *o, const char *text, int64_t *out,
          char *err, size_t errlen)
{
    size_t len = strlen(text);

    if (!num_parse_i64(text, len, out)) {
        if (num_decimal_syntax(text, len)) {
            return range_error(o, text, err, errlen);
        }
        err_set(err, errlen, "'%s' must be an integer, got '%s'", o->name,
                text);
        return -1;
    }
    return check_bounds(o, text, *out, err, errlen);
}

/* The multiplier of a unit suffix, or 0 if it is not one. */
static int64_t
unit_multiplier(const char *suffix)
{
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (ascii_ieq(suffix, units[i].suffix, strlen(units[i].suffix))) {
            return units[i].mult;
        }
    }
    return 0;
}

/* A size: a decimal (no sign, no leading zero) and a unit suffix. */
static int
parse_bytes(const struct conf_option *o, const char *text, int64_t *out,
            char *err, size_t errlen)
{
    size_t digits = strspn(text, "0123456789");
    int64_t mult = digits > 0 ? unit_multiplier(text + digits) : 0;
    int64_t n;

    if (mult == 0 || !num_decimal_syntax(text, digits)) {
        err_set(err, errlen,
                "'%s' must be a size such as 512mb (units k kb m mb g gb), "
                "got '%s'", o->name, text);
        return -1;
    }
    if (!num_parse_i64(text, digits, &n) || n > INT64_MAX / mult) {
        return range_error(o, text, err, errlen);
    }
    *out = n * mult;
    return check_bounds(o, text, *out, err, errlen);
}

static int
parse_octal(const struct conf_option *o, const char *text, int64_t *out,
            char *err, size_t errlen)
{
    bool overflow = false;

    /* Leading zeros are fine here: chmod-style 0700 is common. */
    if (digit_value(text[0]) >= 8 ||
        *scan_digits(text, 8, out, &overflow) != '\0') {
        err_set(err, errlen,
                "'%s' must be octal digits such as 700, got '%s'", o->name,
                text);
        return -1;
    }
    if (overflow) {
        return range_error(o, text, err, errlen);
    }
    return check_bounds(o, text, *out, err, errlen);
}

static int
parse_bool(const struct conf_option *o, const char *text, int64_t *out,
           char *err, size_t errlen)
{
    if (ascii_ieq(text, "yes", 3)) {
        *out = 1;
        return 0;
    }
    if (ascii_ieq(text, "no", 2)) {
        *out = 0;
        return 0;
    }
    err_set(err, errlen, "'%s' must be yes or no, got '%s'", o->name, text);
    return -1;
}

static int
parse_number(const struct conf_option *o, const char *text, int64_t *out,
             char *err, size_t errlen)
{
    switch (o->type) {
    case CONF_INT:
        return parse_int(o, text, out, err, errlen);
    case CONF_BYTES:
        return parse_bytes(o, text, out, err, errlen);
    case CONF_BOOL:
        return parse_bool(o, text, out, err, errlen);
    case CONF_OCTAL:
        return parse_octal(o, text, out, err, errlen);
    case CONF_STRING:
    case CONF_ENUM:
    case CONF_BINARY:
    case CONF_SAVE:
    case CONF_PRIMARY:
    case CONF_SPECIAL:
        break;
    }
    err_set(err, errlen, "'%s' is not a numeric option", o->name);
    return -1;
}

/* ---- strings and enums ---- */

/* Replace a string field with a copy of n bytes of text. The copy is made
 * before the old value is freed, so running out of memory keeps it. */
static int
set_string(struct conf *c, const struct conf_option *o, const char *text,
           size_t n, char *err, size_t errlen)
{
    char **field = str_field(c, o);
    char *copy = malloc(n + 1);

    if (copy == NULL) {
        err_set(err, errlen, "out of memory setting '%s'", o->name);
        return -1;
    }
    memcpy(copy, text, n);
    copy[n] = '\0';
    free(*field);
    *field = copy;
    if (o->type == CONF_BINARY) {
        bytes_field(c, o)->len = n;
    }
    return 0;
}

/* ---- save rules ---- */

/* Parse save rules (see conf.h) into out (may be NULL); the number of
 * rules, or -1 when the value is not rules. */
static int
parse_save(const char *text, struct conf_save_rule *out)
{
    int64_t v[2 * CONF_SAVE_RULES_MAX];
    size_t n = 0;
    const char *p = text;

    /* Words between single spaces, as Redis splits the value: an empty
     * one (two spaces, a leading or trailing one) is no number. */
    while (*text != '\0') {
        const char *w = p;
        while (*p != '\0' && *p != ' ') {
            p++;
        }
        if (n == 2 * CONF_SAVE_RULES_MAX ||
            !num_parse_i64(w, (size_t)(p - w), &v[n]) ||
            v[n] < (n % 2 == 0 ? 1 : 0)) {
            return -1;
        }
        n++;
        if (*p == '\0') {
            break;
        }
        p++;                            /* the space */
    }
    if (n % 2 != 0) {
        return -1;
    }
    for (size_t i = 0; out != NULL && i < n / 2; i++) {
        out[i].seconds = v[2 * i];
        out[i].changes = v[2 * i + 1];
    }
    return (int)(n / 2);
}

size_t
conf_save_rules(const char *value, struct conf_save_rule *out)
{
    int n = parse_save(value, out);
    return n > 0 ? (size_t)n : 0;
}

/* Set save rules: kept as "s c s c" (one space between words). */
static int
set_save(struct conf *c, const struct conf_option *o, const char *text,
         char *err, size_t errlen)
{
    struct conf_save_rule r[CONF_SAVE_RULES_MAX];
    char buf[CONF_SAVE_RULES_MAX * 2 * 21 + 1];
    size_t len = 0;
    int n = parse_save(text, r);

    if (n < 0) {
        err_set(err, errlen, "Invalid save parameters");   /* Redis's words */
        return -1;
    }
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%" PRId64
                                " %" PRId64, i ? " " : "", r[i].seconds,
                                r[i].changes);
    }
    return set_string(c, o, buf, len, err, errlen);
}

/* A save line of a file: its rules after those of earlier lines. */
static int
append_save(struct conf *c, const struct conf_option *o, const char *text,
            char *err, size_t errlen)
{
    const char *old = str_value(c, o);
    size_t need = strlen(old) + 1 + strlen(text) + 1;
    char *joined;
    int rc;

    if (text[0] == '\0' || old[0] == '\0') {
        return set_save(c, o, text, err, errlen);
    }
    joined = malloc(need);
    if (joined == NULL) {
        err_set(err, errlen, "out of memory setting '%s'", o->name);
        return -1;
    }
    snprintf(joined, need, "%s %s", old, text);
    rc = set_save(c, o, joined, err, errlen);
    free(joined);
    return rc;
}

/* The words an enum allows are the blank-separated words between the
 * braces of its description, e.g. "log verbosity {debug verbose}": the
 * words are written once, where --describe-config shows them too.
 * Start with *cursor = NULL; each call yields the next word. */
static bool
enum_next(const struct conf_option *o, const char **cursor,
          const char **word, size_t *len)
{
    const char *p = *cursor;

    if (p == NULL) {
        p = strchr(o->desc, '{');
        if (p == NULL) {
            return false;
        }
        p++;
    }
    while (is_blank(*p)) {
        p++;
    }
    *word = p;
    while (*p != '\0' && *p != '}' && !is_blank(*p)) {
        p++;
    }
    *len = (size_t)(p - *word);
    *cursor = p;
    return *len > 0;
}

/* "debug, verbose, notice, warning" into buf, cut short if it must be. */
void
conf_enum_list(const struct conf_option *o, char *buf, size_t buflen)
{
    const char *cursor = NULL;
    const char *word;
    size_t len;
    size_t pos = 0;

    buf[0] = '\0';
    while (enum_next(o, &cursor, &word, &len)) {
        int n = snprintf(buf + pos, buflen - pos, "%s%.*s",
                         pos > 0 ? ", " : "", (int)len, word);

        if (n < 0 || (size_t)n >= buflen - pos) {
            return;
        }
        pos += (size_t)n;
    }
}

int
conf_enum_value(const struct conf_option *o, const char *text)
{
    const char *cursor = NULL;
    const char *word;
    size_t len;

    for (int v = 0; enum_next(o, &cursor, &word, &len); v++) {
        if (ascii_ieq(text, word, len)) {
            return v;
        }
    }
    return -1;
}

/* The word of value v, or false when v is none. */
static bool
enum_word(const struct conf_option *o, int64_t v, const char **word,
          size_t *len)
{
    const char *cursor = NULL;

    for (int64_t i = 0; enum_next(o, &cursor, word, len); i++) {
        if (i == v) {
            return true;
        }
    }
    return false;
}

/* The word's place is kept, not the text: code compares options.h's enums,
 * and CONFIG GET prints the table's spelling whatever case was typed. */
static int
set_enum(struct conf *c, const struct conf_option *o, const char *text,
         char *err, size_t errlen)
{
    int v = conf_enum_value(o, text);
    char allowed[CONF_ERR_LEN / 2];

    if (v >= 0) {
        *num_field(c, o) = v;
        return 0;
    }
    conf_enum_list(o, allowed, sizeof(allowed));
    err_set(err, errlen, "'%s' must be one of %s, got '%s'", o->name,
            allowed, text);
    return -1;
}

/* ---- values with a syntax of their own (special.h) ---- */

/* The canonical text replaces the old one; the parser sees the old one
 * (client-output-buffer-limit changes only the classes it names). */
static int
set_special(struct conf *c, const struct conf_option *o, const char *text,
            char *err, size_t errlen)
{
    char *canonical;
    char **field = str_field(c, o);

    if (conf_special_parse(o->name, *field, text, &canonical, err,
                           errlen) != 0) {
        return -1;
    }
    free(*field);
    *field = canonical;
    return 0;
}

/* ---- primaries (replicaof) ---- */

/* "<host> <port>" (conf.h), or "" / "no one" for none, kept as given. */
static int
set_primary(struct conf *c, const struct conf_option *o, const char *text,
            char *err, size_t errlen)
{
    if (ascii_ieq(text, "no one", 6)) {
        text = "";
    }
    if (text[0] != '\0' && !conf_replicaof(text, NULL, 0, NULL)) {
        err_set(err, errlen, "'%s' wants \"<host> <port>\" (port 0 to "
                "65535), got \"%s\"", o->name, text);
        return -1;
    }
    return set_string(c, o, text, strlen(text), err, errlen);
}

/* A file's "replicaof <host> <port>" (Redis's spelling, two words): the
 * host may be empty or hold blanks once unquoted, so the words are
 * joined, not the line. */
static int
set_primary_words(struct conf *c, const struct conf_option *o,
                  const char *host, const char *port, char *err,
                  size_t errlen)
{
    size_t hlen = strlen(host);
    size_t plen = strlen(port);
    char *joined;
    int rc;

    if (hlen >= CONF_HOST_MAX || plen > 5) {
        err_set(err, errlen, "'%s' wants \"<host> <port>\" (a host shorter "
                "than %d bytes, a port 0 to 65535)", o->name, CONF_HOST_MAX);
        return -1;
    }
    joined = malloc(hlen + plen + 2);
    if (joined == NULL) {
        err_set(err, errlen, "out of memory setting '%s'", o->name);
        return -1;
    }
    memcpy(joined, host, hlen);
    joined[hlen] = ' ';
    memcpy(joined + hlen + 1, port, plen + 1);
    rc = set_primary(c, o, joined, err, errlen);
    free(joined);
    return rc;
}

/* ---- the table ---- */

const struct conf_option *
conf_options(size_t *count)
{
    if (count != NULL) {
        *count = noptions;
    }
    return options;
}

/* The row whose field is at offset (an alias's option). */
static const struct conf_option *
option_at(size_t offset)
{
    for (size_t i = 0; i < noptions; i++) {
        if (options[i].offset == offset) {
            return &options[i];
        }
    }
    return NULL;
}

const struct conf_option *
conf_lookup(const char *name, const char **spelling)
{
    if (name == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < noptions; i++) {
        if (ascii_ieq(name, options[i].name, strlen(options[i].name))) {
            if (spelling != NULL) {
                *spelling = options[i].name;
            }
            return &options[i];
        }
    }
    for (size_t i = 0; i < naliases; i++) {
        if (ascii_ieq(name, aliases[i].name, strlen(aliases[i].name))) {
            if (spelling != NULL) {
                *spelling = aliases[i].name;
            }
            return option_at(aliases[i].offset);
        }
    }
    return NULL;
}

const struct conf_option *
conf_find(const char *name)
{
    return conf_lookup(name, NULL);
}

const struct conf_alias *
conf_aliases(size_t *count)
{
    if (count != NULL) {
        *count = naliases;
    }
    return aliases;
}

const char *
conf_alias(const struct conf_option *o)
{
    for (size_t i = 0; i < naliases; i++) {
        if (aliases[i].offset == o->offset) {
            return aliases[i].name;
        }
    }
    return NULL;
}

/* The row of the option the user named, under the name they used: for an
 * alias a copy of its option's row in *tmp with the alias as its name, so
 * every error the setters word names what the file or command line said.
 * The copy sets the same field (the offset is the option's). */
static const struct conf_option *
as_named(const struct conf_option *o, const char *spelling,
         struct conf_option *tmp)
{
    if (spelling == NULL || spelling == o->name) {
        return o;
    }
    *tmp = *o;
    tmp->name = spelling;
    return tmp;
}

/* ---- setting ---- */

int
conf_set_option(struct conf *c, const struct conf_option *o,
                const char *value, char *err, size_t errlen)
{
    int64_t v;

    if (value == NULL) {
        err_set(err, errlen, "'%s' wants a value", o->name);
        return -1;
    }
    if (o->type == CONF_STRING && strcmp(o->name, "dbfilename") == 0 &&
        strchr(value, '/') != NULL) {
        /* Redis's rule and words: the file lives in dir, nowhere else. */
        err_set(err, errlen, "dbfilename can't be a path, just a filename");
        return -1;
    }
    if (o->type == CONF_STRING || o->type == CONF_BINARY) {
        return set_string(c, o, value, strlen(value), err, errlen);
    }
    if (o->type == CONF_ENUM) {
        return set_enum(c, o, value, err, errlen);
    }
    if (o->type == CONF_SAVE) {
        return set_save(c, o, value, err, errlen);
    }
    if (o->type == CONF_PRIMARY) {
        return set_primary(c, o, value, err, errlen);
    }
    if (o->type == CONF_SPECIAL) {
        return set_special(c, o, value, err, errlen);
    }
    if (parse_number(o, value, &v, err, errlen) != 0) {
        return -1;
    }
    *num_field(c, o) = v;
    return 0;
}

int
conf_set_bytes(struct conf *c, const struct conf_option *o,
               const char *value, size_t len, char *err, size_t errlen)
{
    if (o->type == CONF_BINARY) {
        return set_string(c, o, value, len, err, errlen);
    }
    if (memchr(value, '\0', len) != NULL) {
        err_set(err, errlen, "a value of '%s' cannot contain a NUL byte",
                o->name);
        return -1;
    }
    return conf_set_option(c, o, value, err, errlen);
}

int
conf_set(struct conf *c, const char *name, const char *value, char *err,
         size_t errlen)
{
    const char *spelling = NULL;
    const struct conf_option *o = conf_lookup(name, &spelling);
    struct conf_option tmp;

    if (o == NULL) {
        err_set(err, errlen, "unknown option '%s'",
                name != NULL ? name : "");
        return -1;
    }
    return conf_set_option(c, as_named(o, spelling, &tmp), value, err,
                           errlen);
}

int
conf_init(struct conf *c)
{
    char err[CONF_ERR_LEN];

    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < noptions; i++) {
        /* memset's zero bits need not be a null pointer: say it. */
        if (is_string_type(options[i].type)) {
            *str_field(c, &options[i]) = NULL;
        }
    }
    for (size_t i = 0; i < noptions; i++) {
        if (conf_set_option(c, &options[i], options[i].def, err,
                            sizeof(err)) != 0) {
            conf_deinit(c);
            return -1;
        }
    }
    return 0;
}

void
conf_deinit(struct conf *c)
{
    for (size_t i = 0; i < noptions; i++) {
        if (is_string_type(options[i].type)) {
            char **field = str_field(c, &options[i]);

            free(*field);
            *field = NULL;
        }
        if (options[i].type == CONF_BINARY) {
            bytes_field(c, &options[i])->len = 0;
        }
    }
}

/* ---- the file ---- */

/* Split the next word off *pos, decoding it in place (lib/args.h: a word
 * is never longer than its text). Returns 1 with *word and its length set
 * (it may hold a NUL, from "\x00"; a NUL ends it as well), 0 at the end
 * of the line, or -1 with *why. */
static int
split_word(char **pos, char **word, size_t *wordlen, const char **why)
{
    char *line = *pos;
    size_t end = strlen(line);
    size_t at = 0;
    size_t len;

    switch (args_next(line, end, &at, line, &len)) {
    case ARGS_END:
        return 0;
    case ARGS_UNBALANCED:
        *why = "unbalanced quotes";
        return -1;
    case ARGS_GLUED:
        *why = "a closing quote must be followed by a space or the end of "
               "the line";
        return -1;
    case ARGS_WORD:
        break;
    }
    /* Step past the separator before the NUL may overwrite it. */
    *pos = line + at + (at < end);
    line[len] = '\0';
    *word = line;
    *wordlen = len;
    return 1;
}

/* Lines that are not options but belong to another module, which reads
 * them with conf_scan_directive(): they may repeat and take many values. */
static const char *const directives[] = { "cluster-node" };

bool
conf_is_directive(const char *word)
{
    for (size_t i = 0; i < sizeof(directives) / sizeof(directives[0]); i++) {
        if (ascii_ieq(directives[i], word, strlen(word))) {
            return true;
        }
    }
    return false;
}

/* Names Redis 7.0.15 still reads from a file and ignores (config.c's
 * deprecated_configs, each with exactly one value): so a redis.conf of an
 * older Redis loads here as it does there. */
static bool
is_deprecated(const char *name, size_t nvalues)
{
    static const char *const names[] = { "list-max-ziplist-entries",
                                         "list-max-ziplist-value",
                                         "lua-replicate-commands" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (nvalues == 1 && ascii_ieq(names[i], name, strlen(name))) {
            return true;
        }
    }
    return false;
}

/* Words of a line kept: a name and a value, or a name and the words of
 * the most save rules, plus one to tell a trailing # comment apart. */
#define LINE_WORDS_MAX (2 * CONF_SAVE_RULES_MAX + 2)

/* A file being loaded. */
struct file_load {
    struct conf *c;
    bool save_seen;         /* a save line came before: the next adds */
};

/* The words of a save line ("save 3600 1 300 100") or of an option that
 * takes several (bind 127.0.0.1 -::1, client-output-buffer-limit normal 0
 * 0 0): joined with a space, as Redis splits one quoted value into its
 * words. A save line adds to the rules of the file's earlier ones. */
static int
set_joined_words(struct file_load *f, const struct conf_option *o,
                 char *const *words, const size_t *lens, size_t n,
                 char *why, size_t whylen)
{
    bool save = o->type == CONF_SAVE;
    char joined[LINE_WORDS_MAX * 64];
    size_t size = save ? LINE_WORDS_MAX * 24 : sizeof(joined), len = 0;

    joined[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i >= LINE_WORDS_MAX - 1 || strlen(words[i]) != lens[i] ||
            len + lens[i] + 2 > size) {
            if (save) {
                err_set(why, whylen, "Invalid save parameters");
            } else {
                err_set(why, whylen, "'%s' takes at most %d words", o->name,
                        LINE_WORDS_MAX - 2);
            }
            return -1;
        }
        len += (size_t)snprintf(joined + len, size - len, "%s%s",
                                i ? " " : "", words[i]);
    }
    if (!save) {
        return conf_set_option(f->c, o, joined, why, whylen);
    }
    if (f->save_seen) {
        return append_save(f->c, o, joined, why, whylen);
    }
    f->save_seen = true;
    return set_save(f->c, o, joined, why, whylen);
}

/* A special value's error is Redis's text, which CONFIG SET answers
 * as it is; a file's line names the option before it. */
static int
named_error(const struct conf_option *o, int rc, char *why, size_t whylen)
{
    if (rc != 0 && o->type == CONF_SPECIAL) {
        char text[CONF_ERR_LEN];
        snprintf(text, sizeof(text), "%s", why);
        err_set(why, whylen, "'%s': %s", o->name, text);
    }
    return rc;
}

/* Apply the words of a line: a name and exactly one value (save rules
 * and Redis's multi-word options: any number). */
static int
set_words(struct file_load *f, char *const *words, const size_t *lens,
          size_t nwords, bool comment_after, char *why, size_t whylen)
{
    struct conf *c = f->c;
    const struct conf_option *o;
    const char *spelling = NULL;
    struct conf_option tmp;

    if (strlen(words[0]) != lens[0]) {
        err_set(why, whylen, "an option name cannot contain a NUL byte");
        return -1;
    }
    if (conf_is_directive(words[0])) {
        return 0;               /* its owner reads it */
    }
    o = conf_lookup(words[0], &spelling);
    if (o == NULL && is_deprecated(words[0], nwords - 1)) {
        return 0;
    }
    if (o == NULL) {
        err_set(why, whylen, "unknown option '%s'", words[0]);
        return -1;
    }
    o = as_named(o, spelling, &tmp);
    if (nwords == 1) {
        err_set(why, whylen, "'%s' wants a value", o->name);
        return -1;
    }
    if (o->type == CONF_SAVE) {
        return set_joined_words(f, o, words + 1, lens + 1, nwords - 1, why,
                                whylen);
    }
    if (o->type == CONF_SPECIAL && conf_special_multi(o->name)) {
        return named_error(o, set_joined_words(f, o, words + 1, lens + 1,
                                               nwords - 1, why, whylen),
                           why, whylen);
    }
    if (o->type == CONF_PRIMARY && nwords == 3 && !comment_after) {
        if (strlen(words[1]) != lens[1] || strlen(words[2]) != lens[2]) {
            err_set(why, whylen, "a value of '%s' cannot contain a NUL byte",
                    o->name);
            return -1;
        }
        return set_primary_words(c, o, words[1], words[2], why, whylen);
    }
    if (comment_after) {
        /* Redis has no comments after a value either; say so rather than
         * "too many values", which would puzzle. */
        err_set(why, whylen,
                "'%s' takes one value; a # comment must be on its own line",
                o->name);
        return -1;
    }
    if (nwords > 2) {
        err_set(why, whylen,
                "'%s' takes one value, got %zu (quote a value that has "
                "spaces)", o->name, nwords - 1);
        return -1;
    }
    return named_error(o, conf_set_bytes(c, o, words[1], lens[1], why,
                                         whylen), why, whylen);
}

/* Split a NUL-terminated line into words, keeping the first max of them
 * in words[] and their lengths in lens[], and counting all in *nwords (0
 * for a blank or comment line). Returns 0, or -1 with why set (unbalanced
 * quotes). */
static int
split_line(char *line, char **words, size_t *lens, size_t max,
           size_t *nwords, char *why, size_t whylen)
{
    char *p = skip_blanks(line);
    const char *bad;
    char *w;
    size_t wlen;
    int r;

    *nwords = 0;
    if (*p == '\0' || *p == '#') {
        return 0;
    }
    while ((r = split_word(&p, &w, &wlen, &bad)) == 1) {
        if (*nwords < max) {
            words[*nwords] = w;
            lens[*nwords] = wlen;
        }
        (*nwords)++;
    }
    if (r < 0) {
        err_set(why, whylen, "%s", bad);
        return -1;
    }
    return 0;
}

/* Apply one NUL-terminated line; why gets what is wrong. */
static int
load_line(void *arg, char *line, char *why, size_t whylen)
{
    char *words[LINE_WORDS_MAX];
    size_t lens[LINE_WORDS_MAX];
    size_t nwords;

    if (split_line(line, words, lens, LINE_WORDS_MAX, &nwords, why,
                   whylen) != 0) {
        return -1;
    }
    if (nwords == 0) {
        return 0;
    }
    return set_words(arg, words, lens, nwords,
                     nwords > 2 && words[2][0] == '#', why, whylen);
}

/* Read all of path into a NUL-terminated malloc'd buffer. */
static int
read_file(const char *path, char **out, size_t *outlen, char *err,
          size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;
    size_t cap = 0;

    if (f == NULL) {
        err_set(err, errlen, "%s:0: cannot open: %s", path, strerror(errno));
        return -1;
    }
    for (;;) {
        size_t want;
        size_t n;

        if (cap - len < 2) {
            char *bigger = (cap <= SIZE_MAX / 2) ?
                           realloc(buf, cap == 0 ? 4096 : cap * 2) : NULL;

            if (bigger == NULL) {
                err_set(err, errlen, "%s:0: out of memory while reading",
                        path);
                goto fail;
            }
            buf = bigger;
            cap = cap == 0 ? 4096 : cap * 2;
        }
        want = cap - len - 1;           /* room for the final NUL */
        errno = 0;
        n = fread(buf + len, 1, want, f);
        len += n;
        if (n < want) {
            break;
        }
    }
    if (ferror(f)) {
        /* e.g. a directory: fopen succeeds, reading fails with EISDIR */
        err_set(err, errlen, "%s:0: cannot read: %s", path,
                errno != 0 ? strerror(errno) : "read error");
        goto fail;
    }
    fclose(f);
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;

fail:
    free(buf);
    fclose(f);
    return -1;
}

typedef int (*line_fn)(void *arg, char *line, char *why, size_t whylen);

/* Hand every line of text (text[len] is NUL) to fn, in order. */
static int
load_text(line_fn fn, void *arg, const char *path, char *text, size_t len,
          char *err, size_t errlen)
{
    char why[CONF_ERR_LEN];
    char *line = text;
    char *end = text + len;
    unsigned long lineno = 0;

    while (line < end) {
        char *stop = memchr(line, '\n', (size_t)(end - line));
        int rc;

        if (stop == NULL) {
            stop = end;                 /* a last line without a newline */
        }
        lineno++;
        if (memchr(line, '\0', (size_t)(stop - line)) != NULL) {
            err_set(why, sizeof(why), "the line contains a NUL byte");
            rc = -1;
        } else {
            *stop = '\0';
            rc = fn(arg, line, why, sizeof(why));
        }
        if (rc != 0) {
            err_set(err, errlen, "%s:%lu: %s", path, lineno, why);
            return -1;
        }
        line = stop + 1;
    }
    return 0;
}

int
conf_load_file(struct conf *c, const char *path, char *err, size_t errlen)
{
    char *text;
    size_t len;
    int rc;

    if (read_file(path, &text, &len, err, errlen) != 0) {
        return -1;
    }
    struct file_load f = { c, false };
    rc = load_text(load_line, &f, path, text, len, err, errlen);
    free(text);
    return rc;
}

/* ---- directives ---- */

struct directive_scan {
    const char *name;
    conf_directive_fn fn;
    void *arg;
};

/* One line for conf_scan_directive: split it whole, pass it on if its
 * first word is the directive looked for. */
static int
scan_line(void *arg, char *line, char *why, size_t whylen)
{
    struct directive_scan *d = arg;
    char *words[CONF_DIRECTIVE_MAX_WORDS + 1];
    size_t lens[CONF_DIRECTIVE_MAX_WORDS + 1];
    size_t nwords;

    if (split_line(line, words, lens, CONF_DIRECTIVE_MAX_WORDS + 1, &nwords,
                   why, whylen) != 0) {
        return -1;
    }
    for (size_t i = 0; i < nwords && i <= CONF_DIRECTIVE_MAX_WORDS; i++) {
        if (strlen(words[i]) != lens[i]) {
            err_set(why, whylen, "a value cannot contain a NUL byte");
            return -1;
        }
    }
    if (nwords == 0 || !ascii_ieq(d->name, words[0], strlen(words[0]))) {
        return 0;
    }
    if (nwords > CONF_DIRECTIVE_MAX_WORDS + 1) {
        err_set(why, whylen, "'%s' takes at most %d values", d->name,
                CONF_DIRECTIVE_MAX_WORDS);
        return -1;
    }
    return d->fn(d->arg, words + 1, nwords - 1, why, whylen);
}

int
conf_scan_directive(const char *path, const char *name, conf_directive_fn fn,
                    void *arg, char *err, size_t errlen)
{
    struct directive_scan d = { name, fn, arg };
    char *text;
    size_t len;
    int rc;

    if (read_file(path, &text, &len, err, errlen) != 0) {
        return -1;
    }
    rc = load_text(scan_line, &d, path, text, len, err, errlen);
    free(text);
    return rc;
}

/* ---- the command line ---- */

/* Flags the caller acts on; they take no value and are skipped here. */
static bool
is_caller_flag(const char *arg)
{
    static const char *const flags[] = {
        "--help", "-h", "--version", "-v", "--test-config",
        "--describe-config",
    };

    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        if (strcmp(arg, flags[i]) == 0) {
            return true;
        }
    }
    return false;
}

static bool
is_long_option(const char *arg)
{
    return arg[0] == '-' && arg[1] == '-';
}

/* "--save 3600 1 300 100" (as redis-server takes it) or "--save ''", and
 * so every option of several words ("--bind 127.0.0.1 ::1"): every
 * argument up to the next --option, joined. Returns how many arguments it
 * used, or -1 with err. */
static int
load_multi_args(struct conf *c, const struct conf_option *o, int argc,
               char **argv, int i, char *err, size_t errlen)
{
    char joined[LINE_WORDS_MAX * 24] = "";
    size_t len = 0;
    int j = i + 1;
    char why[CONF_ERR_LEN];

    for (; j < argc && !is_long_option(argv[j]); j++) {
        size_t n = strlen(argv[j]);
        if (len + n + 2 > sizeof(joined)) {
            err_set(err, errlen, "--%s: too many words", o->name);
            return -1;
        }
        len += (size_t)snprintf(joined + len, sizeof(joined) - len, "%s%s",
                                j > i + 1 ? " " : "", argv[j]);
    }
    if (conf_set_option(c, o, joined, why, sizeof(why)) != 0) {
        err_set(err, errlen, "--%s: %s", o->name, why);
        return -1;
    }
    return j - i;
}

/* "--replicaof <host> <port>", Redis's form on its command line (the
 * words joined, as Redis joins an option's arguments): 3 arguments used,
 * or -1 with err. */
static int
load_primary_args(struct conf *c, const struct conf_option *o, char **argv,
                  int i, char *err, size_t errlen)
{
    char joined[CONF_HOST_MAX + 32], why[CONF_ERR_LEN];
    int n = snprintf(joined, sizeof(joined), "%s %s", argv[i + 1],
                     argv[i + 2]);
    if (n < 0 || (size_t)n >= sizeof(joined)) {
        err_set(err, errlen, "--%s: the host is too long", o->name);
        return -1;
    }
    if (conf_set_option(c, o, joined, why, sizeof(why)) != 0) {
        err_set(err, errlen, "--%s: %s", o->name, why);
        return -1;
    }
    return 3;
}

/* Apply "--name value" at argv[i]; returns how many arguments it used
 * (2, or more for save rules), or -1 with err. */
static int
load_pair(struct conf *c, int argc, char **argv, int i, char *err,
          size_t errlen)
{
    const char *name = argv[i] + 2;
    const char *value = NULL;
    char why[CONF_ERR_LEN];

    /* An unknown name is reported even when its value is missing too:
     * it is the likelier mistake. */
    if (i + 1 < argc && !is_long_option(argv[i + 1])) {
        value = argv[i + 1];
    }
    const char *spelling = NULL;
    struct conf_option tmp;
    const struct conf_option *o = conf_lookup(name, &spelling);
    if (o != NULL) {
        o = as_named(o, spelling, &tmp);
    }
    if (o == NULL && value != NULL && is_deprecated(name, 1)) {
        return 2;
    }
    if (o != NULL && value != NULL && (o->type == CONF_SAVE ||
                                       (o->type == CONF_SPECIAL &&
                                        conf_special_multi(o->name)))) {
        return load_multi_args(c, o, argc, argv, i, err, errlen);
    }
    if (o != NULL && o->type == CONF_PRIMARY && value != NULL &&
        strchr(value, ' ') == NULL && i + 2 < argc &&
        !is_long_option(argv[i + 2])) {
        return load_primary_args(c, o, argv, i, err, errlen);
    }
    if (conf_set(c, name, value, why, sizeof(why)) != 0) {
        err_set(err, errlen, "--%s: %s", name, why);
        return -1;
    }
    return 2;
}

int
conf_load_args(struct conf *c, int argc, char **argv, char *err,
               size_t errlen)
{
    bool file_allowed = true;
    int i = 1;

    while (i < argc) {
        const char *arg = argv[i];

        if (is_caller_flag(arg)) {
            i++;
        } else if (is_long_option(arg)) {
            int used = load_pair(c, argc, argv, i, err, errlen);

            if (used < 0) {
                return -1;
            }
            file_allowed = false;       /* the file must not undo them */
            i += used;
        } else if (file_allowed && arg[0] != '-') {
            if (conf_load_file(c, arg, err, errlen) != 0) {
                return -1;
            }
            file_allowed = false;
            i++;
        } else {
            err_set(err, errlen,
                    "unexpected argument '%s' (usage: [config-file] "
                    "[--name value ...])", arg);
            return -1;
        }
    }
    return conf_validate(c, NULL, err, errlen);
}

/* ---- checks and output ---- */

/* Names of the options a broken rule ties together, for the caller. */
static int
rule_broken(const char *names[2], const char *a, const char *b)
{
    if (names != NULL) {
        names[0] = a;
        names[1] = b;
    }
    return -1;
}

/* Options that must stay in order: small below big, or (may_equal) not
 * above it. A row a rule, so the next one is a line here. */
static const struct order_rule {
    const char *small, *big;
    size_t small_at, big_at;        /* offsetof their int64_t fields */
    bool may_equal;
} order_rules[] = {
    { "client-output-pause-limit", "client-output-hard-limit",
      offsetof(struct conf, output_pause_limit),
      offsetof(struct conf, output_hard_limit), false },
    { "proto-max-bulk-len", "client-query-buffer-limit",
      offsetof(struct conf, proto_max_bulk_len),
      offsetof(struct conf, client_query_buffer_limit), true },
};

static int64_t
field_at(const struct conf *c, size_t at)
{
    int64_t v;
    memcpy(&v, (const char *)c + at, sizeof(v));
    return v;
}

int
conf_validate(const struct conf *c, const char *names[2], char *err,
              size_t errlen)
{
    for (size_t i = 0; i < sizeof(order_rules) / sizeof(order_rules[0]);
         i++) {
        const struct order_rule *o = &order_rules[i];
        int64_t small = field_at(c, o->small_at), big = field_at(c, o->big_at);
        if (o->may_equal ? small > big : small >= big) {
            err_set(err, errlen, "'%s' (%" PRId64 ") must %s '%s' (%" PRId64
                    ")", o->small, small,
                    o->may_equal ? "not exceed" : "be below", o->big, big);
            return rule_broken(names, o->small, o->big);
        }
    }
    return 0;
}

/* The port is after the last space, so a host may hold spaces too. */
bool
conf_replicaof(const char *value, char *host, size_t hostlen, int *port)
{
    const char *sp = strrchr(value, ' ');
    int64_t p;

    if (sp == NULL || (size_t)(sp - value) >= CONF_HOST_MAX ||
        !num_parse_i64(sp + 1, strlen(sp + 1), &p) || p < 0 || p > 65535) {
        return false;
    }
    if (host != NULL) {
        snprintf(host, hostlen, "%.*s", (int)(sp - value), value);
        *port = (int)p;
    }
    return true;
}

size_t
conf_format(const struct conf *c, const struct conf_option *o, char *buf,
            size_t buflen)
{
    int n = 0;

    if (buf == NULL || buflen == 0) {
        return 0;
    }
    buf[0] = '\0';
    switch (o->type) {
    case CONF_INT:
    case CONF_BYTES:
        n = snprintf(buf, buflen, "%" PRId64, num_value(c, o));
        break;
    case CONF_BOOL:
        n = snprintf(buf, buflen, "%s", num_value(c, o) ? "yes" : "no");
        break;
    case CONF_OCTAL:
        n = snprintf(buf, buflen, "%" PRIo64, (uint64_t)num_value(c, o));
        break;
    case CONF_ENUM: {
        const char *word = "";
        size_t len = 0;
        enum_word(o, num_value(c, o), &word, &len);
        n = snprintf(buf, buflen, "%.*s", (int)len, word);
        break;
    }
    case CONF_STRING:
    case CONF_SAVE:
    case CONF_PRIMARY:
        n = snprintf(buf, buflen, "%s", str_value(c, o));
        break;
    case CONF_SPECIAL:
        n = (int)conf_special_show(o->name, str_value(c, o), buf, buflen);
        break;
    case CONF_BINARY: {
        const struct conf_bytes *b = bytes_value(c, o);
        size_t k = b->len < buflen ? b->len : buflen - 1;
        if (k > 0) {
            memcpy(buf, b->p, k);
        }
        buf[k] = '\0';
        return k;
    }
    }
    if (n < 0) {
        buf[0] = '\0';
        return 0;
    }
    return (size_t)n < buflen ? (size_t)n : buflen - 1;
}

static const char *
type_name(enum conf_type t)
{
    switch (t) {
    case CONF_INT: return "int";
    case CONF_BYTES: return "bytes";
    case CONF_BOOL: return "bool";
    case CONF_STRING: return "string";
    case CONF_ENUM: return "enum";
    case CONF_OCTAL: return "octal";
    case CONF_BINARY: return "string";
    case CONF_SAVE: return "save rules";
    case CONF_PRIMARY: return "host port";
    case CONF_SPECIAL: return "words";
    }
    return "?";
}

/* The accepted range in words, or "" where the type has none. */
static void
describe_range(const struct conf_option *o, char *buf, size_t buflen)
{
    buf[0] = '\0';
    if (o->type == CONF_INT || o->type == CONF_BYTES) {
        snprintf(buf, buflen, ", %" PRId64 " to %" PRId64, o->min, o->max);
    } else if (o->type == CONF_OCTAL) {
        snprintf(buf, buflen, ", %" PRIo64 " to %" PRIo64,
                 (uint64_t)o->min, (uint64_t)o->max);
    }
}

void
conf_describe(FILE *out)
{
    for (size_t i = 0; i < noptions; i++) {
        const struct conf_option *o = &options[i];
        const char *quote = o->type == CONF_STRING ||
                                    o->type == CONF_BINARY ||
                                    o->type == CONF_SAVE ||
                                    o->type == CONF_PRIMARY ||
                                    o->type == CONF_SPECIAL ? "\"" : "";
        char range[64];

        describe_range(o, range, sizeof(range));
        fprintf(out, "%s %s%s%s  (%s%s)\n    %s\n", o->name, quote, o->def,
                quote, type_name(o->type), range, o->desc);
        if (conf_alias(o) != NULL) {
            fprintf(out, "    alias: %s\n", conf_alias(o));
        }
    }
}

char *
conf_format_alloc(const struct conf *c, const struct conf_option *o,
                  size_t *len)
{
    size_t size = o->type == CONF_BINARY ? bytes_value(c, o)->len + 1
                  : is_string_type(o->type) ? strlen(str_value(c, o)) + 1
                  : o->type == CONF_ENUM ? strlen(o->desc) + 1 /* a word */
                  : 32;         /* any int64 in decimal or octal */
    char *buf = malloc(size);
    if (buf != NULL) {
        *len = conf_format(c, o, buf, size);
    }
    return buf;
}

enum conf_fault
conf_fault_of(const struct conf_option *o, const char *text)
{
    char err[CONF_ERR_LEN];
    int64_t v;

    switch (o->type) {
    case CONF_INT:
        if (!num_parse_i64(text, strlen(text), &v)) {
            return CONF_FAULT_NOT_INTEGER;
        }
        return v < o->min || v > o->max ? CONF_FAULT_RANGE : CONF_FAULT_NONE;
    case CONF_BYTES:
        if (parse_bytes(o, text, &v, err, sizeof(err)) == 0) {
            return CONF_FAULT_NONE;
        }
        /* A size that parses but is out of bounds is a range fault. */
        return strstr(err, "must be between") != NULL ? CONF_FAULT_RANGE
                                                       : CONF_FAULT_NOT_SIZE;
    case CONF_BOOL:
        return parse_bool(o, text, &v, err, sizeof(err)) == 0
                   ? CONF_FAULT_NONE : CONF_FAULT_NOT_BOOL;
    case CONF_ENUM:
        return conf_enum_value(o, text) >= 0 ? CONF_FAULT_NONE
                                             : CONF_FAULT_NOT_ENUM;
    case CONF_OCTAL:
        return parse_octal(o, text, &v, err, sizeof(err)) == 0
                   ? CONF_FAULT_NONE : CONF_FAULT_NOT_INTEGER;
    default:
        return CONF_FAULT_NONE;
    }
}
