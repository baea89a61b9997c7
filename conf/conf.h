/*
 * conf.h - configuration: defaults, file, command line (see options.h).
 *
 * Load order: conf_init() (defaults) -> conf_load_file() -> conf_set() for
 * each --name value on the command line. Errors are returned as text in
 * Redis's style ("file:line: what is wrong"); this module never prints.
 */
#ifndef CELLGATE_CONF_H
#define CELLGATE_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/options.h"

enum conf_type { CONF_INT, CONF_BYTES, CONF_BOOL, CONF_STRING, CONF_ENUM,
                 CONF_OCTAL, CONF_BINARY, CONF_SAVE, CONF_PRIMARY,
                 CONF_SPECIAL };

/* A CONF_BINARY value: any bytes, a NUL among them (a password). p is
 * malloc'd, never NULL after conf_init, and NUL-terminated past len. */
struct conf_bytes {
    char *p;
    size_t len;
};

/* One field per option: integers, sizes, booleans and octals as int64_t,
 * enums as int64_t too (the place of the word, options.h's enums), strings,
 * save rules and special values (their canonical text) as malloc'd char * (never NULL after conf_init), binary
 * strings as struct conf_bytes. */
#define CONF_FIELD(field, name, type, def, min, max, desc) CONF_FIELD_##type(field)
#define CONF_FIELD_CONF_INT(f) int64_t f;
#define CONF_FIELD_CONF_BYTES(f) int64_t f;
#define CONF_FIELD_CONF_BOOL(f) int64_t f;
#define CONF_FIELD_CONF_OCTAL(f) int64_t f;
#define CONF_FIELD_CONF_STRING(f) char *f;
#define CONF_FIELD_CONF_ENUM(f) int64_t f;
#define CONF_FIELD_CONF_BINARY(f) struct conf_bytes f;
#define CONF_FIELD_CONF_SAVE(f) char *f;
#define CONF_FIELD_CONF_PRIMARY(f) char *f;
#define CONF_FIELD_CONF_SPECIAL(f) char *f;

struct conf {
    CONF_OPTIONS(CONF_FIELD)
};

struct conf_option {
    const char *name;
    enum conf_type type;
    const char *def;
    int64_t min;
    int64_t max;
    const char *desc;
    size_t offset;          /* of the field in struct conf */
};

#define CONF_ERR_LEN 512

/* Set every option to its default (each default string goes through the
 * same parser as a user's value). Returns 0, or -1 if memory ran out (or a
 * table default is invalid, which the unit test rules out); on -1 the
 * struct is left as conf_deinit leaves it. */
int conf_init(struct conf *c);

/* Free the strings; the pointers are NULLed, so a second call is a no-op. */
void conf_deinit(struct conf *c);

/* Parse a "name value" file (whole-line # comments, blank lines, values
 * quoted as in redis.conf). Later lines override earlier ones.
 * Returns 0, or -1 with err = "path:line: what is wrong" (line 0 when the
 * file cannot be read); the lines before the bad one have been applied. */
int conf_load_file(struct conf *c, const char *path, char *err, size_t errlen);

/* Directives: config lines that are not options but belong to another
 * module (e.g. "cluster-node <id> <address> <slots...>"), so they may
 * repeat and take up to CONF_DIRECTIVE_MAX_WORDS values. conf_load_file
 * skips them; conf_scan_directive hands each line of the named directive
 * to fn (the words after the name, unquoted as option values are), in file
 * order. fn returns 0, or -1 with why set; the scan stops there and err is
 * "path:line: why". Returns 0 or -1. */
#define CONF_DIRECTIVE_MAX_WORDS 512
typedef int (*conf_directive_fn)(void *arg, char **words, size_t nwords,
                                 char *why, size_t whylen);
int conf_scan_directive(const char *path, const char *name,
                        conf_directive_fn fn, void *arg, char *err,
                        size_t errlen);
bool conf_is_directive(const char *word);

/* Set one option from text, as the file or "--name value" would; name may
 * be an alias, which the error then names. A rejected value leaves the
 * option unchanged.
 * Returns 0, or -1 with err = what is wrong (without a location). */
int conf_set(struct conf *c, const char *name, const char *value, char *err,
             size_t errlen);

/* conf_set for a row already looked up (conf_find), e.g. by CONFIG SET. */
int conf_set_option(struct conf *c, const struct conf_option *o,
                    const char *value, char *err, size_t errlen);

/* conf_set_option() for a value of len bytes: a CONF_BINARY option keeps
 * them all; any other refuses a NUL among them. */
int conf_set_bytes(struct conf *c, const struct conf_option *o,
                   const char *value, size_t len, char *err, size_t errlen);

/* Apply command-line arguments: an optional config file path first, then
 * "--name value" pairs, exactly one value each (quote it in the shell if it
 * has spaces; an argument starting with "--" is never taken as a value, so
 * "--port --hz 5" reports the missing port value).
 * Flags that are not options (--help, -h, --version, -v, --test-config,
 * --describe-config) are left to the caller: they are skipped here.
 * Returns 0, or -1 with err ("path:line: ..." or "--name: ...").
 * Checks cross-option constraints at the end (conf_validate). */
int conf_load_args(struct conf *c, int argc, char **argv, char *err,
                   size_t errlen);

/* A primary (CONF_PRIMARY, replicaof) is kept as "<host> <port>": the
 * port is what follows the last space, 0 to 65535 in plain decimal; the
 * host is everything before it, any bytes but NUL, empty and blanks
 * included, shorter than CONF_HOST_MAX, since REPLICAOF takes all of
 * these and CONFIG REWRITE must write what a restart loads back. "" (or
 * "no one" when set) is no primary. */
#define CONF_HOST_MAX 256

/* replicaof's "<host> <port>": true when value is one (host and port
 * filled when host is not NULL; hostlen >= CONF_HOST_MAX holds any). */
bool conf_replicaof(const char *value, char *host, size_t hostlen,
                    int *port);

/* Cross-option checks (e.g. the pause limit below the hard limit) of the
 * state c is in. On -1, err says what is wrong and, when names is not
 * NULL, names[0] and names[1] are the two options the failed rule ties
 * together (CONFIG SET names whichever of them it was given). */
int conf_validate(const struct conf *c, const char *names[2], char *err,
                  size_t errlen);

/* The table (count may be NULL), and lookup by name or alias (options.h's
 * CONF_ALIASES; case-insensitive; NULL if unknown): an alias finds the row
 * of its option. */
const struct conf_option *conf_options(size_t *count);
const struct conf_option *conf_find(const char *name);

/* conf_find(), and in *spelling (when not NULL) the table's spelling of
 * the name found: the row's name, or the alias. Two names of one option
 * are two spellings: Redis keeps them apart where they show (CONFIG GET
 * lists both, CONFIG SET names the one given, and takes both in one call). */
const struct conf_option *conf_lookup(const char *name,
                                      const char **spelling);

/* An alias: its name and the offset of its option's field (the option is
 * the row with that offset). The table (count may be NULL), and option
 * o's alias, or NULL when it has none. */
struct conf_alias {
    const char *name;
    size_t offset;
};
const struct conf_alias *conf_aliases(size_t *count);
const char *conf_alias(const struct conf_option *o);

/* The current value as CONFIG GET prints it (sizes in plain bytes, booleans
 * as yes/no, octal as octal digits). Returns the length written (always
 * NUL-terminated, truncated to buflen - 1). */
size_t conf_format(const struct conf *c, const struct conf_option *o,
                   char *buf, size_t buflen);

/* conf_format() of the whole value into a malloc'd string (free() it),
 * its length in *len (a binary value may hold NULs); NULL when memory ran
 * out. */
char *conf_format_alloc(const struct conf *c, const struct conf_option *o,
                        size_t *len);

/* Why `text` is not a value of o, for callers that word errors their own
 * way (CONFIG SET says it as Redis does); CONF_FAULT_NONE when it is one
 * (cross-option checks are conf_validate()'s). */
enum conf_fault {
    CONF_FAULT_NONE,
    CONF_FAULT_NOT_INTEGER,     /* not a decimal integer, or overflows */
    CONF_FAULT_NOT_SIZE,        /* not a size such as 512mb */
    CONF_FAULT_NOT_BOOL,
    CONF_FAULT_NOT_ENUM,
    CONF_FAULT_RANGE            /* a number outside [min, max] */
};
enum conf_fault conf_fault_of(const struct conf_option *o, const char *text);

/* An enum option's words, "a, b, c", into buf (cut short if need be). */
void conf_enum_list(const struct conf_option *o, char *buf, size_t buflen);

/* The value (options.h's enums) an enum option's word stands for, any
 * case; -1 when text is none of its words. For checks made on a value
 * before it is set (CONFIG SET's). */
int conf_enum_value(const struct conf_option *o, const char *text);

/* Save rules (CONF_SAVE, Redis's "save"): "<seconds> <changes>" pairs, a
 * background snapshot once <seconds> have passed since the last one with
 * at least <changes> writes. Seconds >= 1, changes >= 0, at most
 * CONF_SAVE_RULES_MAX pairs; anything else is "Invalid save parameters".
 * In a file each save line adds its pairs to the lines before it (save ""
 * clears them), as in redis.conf; elsewhere a value replaces the rules.
 * The value is kept as its pairs separated by one space. */
#define CONF_SAVE_RULES_MAX 16
struct conf_save_rule {
    int64_t seconds;
    int64_t changes;
};

/* The rules of a value that was accepted (out has room for
 * CONF_SAVE_RULES_MAX); returns how many. */
size_t conf_save_rules(const char *value, struct conf_save_rule *out);

/* Print every option with its default and description (--describe-config):
 * "name default  (type[, min to max])", the description indented by four
 * spaces, and "    alias: name" under an option Redis also knows by an
 * alias. */
void conf_describe(FILE *out);

#endif
