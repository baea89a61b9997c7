/*
 * gcra_replay.c - replays shared/conformance/cl_throttle_vectors.jsonl
 * against gcra_throttle() offline, without a server.
 *
 *   gcra_replay path/to/cl_throttle_vectors.jsonl
 *
 * It stands in for everything around the pure function that the real
 * module's replies depend on: the argc check and Rust-style integer parsing
 * of CL.THROTTLE, the error texts, and a model of the Redis keyspace (a
 * string value plus an optional expiry in ms, expired lazily when now_ms >
 * expire_ms) answering GET, PTTL, EXISTS, DEL and SET key value [PX ms|EX s]
 * (the scenarios tagged needs_string_cmds plant raw strings that way). Every
 * vector is replayed; none is skipped.
 *
 * CL.THROTTLE reads a planted string as redis-cell does, with Rust's
 * str::parse::<u64> (an optional '+', then ASCII digits, within u64). On
 * anything else redis-cell panics and takes Redis down with it; cellgate
 * answers ERR_NOT_INT instead, after the checks redis-cell makes before it
 * reads the key (usage, the numbers, a zero rate), and leaves the key as it
 * was. No recorded vector plants such a value (they plant "0", "5", "+1",
 * TATs and u64::MAX): gcra_replay_model.jsonl beside this file holds the
 * cases for that branch and for SET's and DEL's edges, in the same format
 * (its SET/GET/DEL/PTTL replies are Redis 7.0.15's), and `make test-unit`
 * replays it after the recording.
 *
 * The JSON reader understands just this file's shape: one flat object per
 * line whose values are integers, strings, null, arrays of those, or
 * {"error": ...} / {"status": ...} objects. Strings are decoded (including
 * \uXXXX and surrogate pairs) into a per-line scratch buffer, so a record
 * never outlives its line and nothing else is allocated per record.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "algorithms/gcra.h"

#define MAX_ARGS     16
#define MAX_ITEMS    8
#define MAX_REPORTED 20

#define ERR_PREFIX "Cell error: Store error: "
#define ERR_USAGE  ERR_PREFIX "Usage: cl.throttle <key> <max_burst> " \
                   "<count per period> <period> [<quantity>]"
#define ERR_PARSE  ERR_PREFIX "Couldn't parse as integer: "
#define ERR_ZERO   ERR_PREFIX "Zero rates are not supported"
#define ERR_EXPIRE ERR_PREFIX "Error while setting key expire"
#define ERR_NOT_INT "ERR value is not an integer or out of range"
#define ERR_SET_EXPIRE "ERR invalid expire time in 'set' command"
#define ERR_NOT_MODELLED "replay: command not modelled"

struct str {
    const char *p;
    size_t len;
};

enum atom_kind { A_NULL, A_INT, A_STR, A_ERROR, A_STATUS, A_ARRAY };

struct atom {
    enum atom_kind kind;
    int64_t i;
    struct str s;
};

/* A reply: one atom, or an array of atoms (top.kind == A_ARRAY). */
struct reply {
    struct atom top;
    size_t n;
    struct atom items[MAX_ITEMS];
};

struct record {
    long n;
    long scenario;
    int64_t t_ns;
    int64_t t_ms;
    size_t argc;
    struct str argv[MAX_ARGS];
    struct reply want;
};

/* Cursor over one line; decoded strings go to scratch (never longer than
 * their JSON form, so a line-sized scratch is enough). */
struct cursor {
    const char *p;
    const char *end;
    char *scratch;
    const char *error;
};

/* A Redis string key: the bytes GET answers (a planted value as SET wrote
 * it, "+1" included; a TAT as decimal ns once CL.THROTTLE wrote it). */
struct key {
    char *name;
    size_t len;
    char *value;
    size_t value_len;
    bool persistent;
    int64_t expire_ms;
};

struct keyspace {
    struct key *keys;
    size_t n;
    size_t cap;
};

/* ---- JSON reading ------------------------------------------------------- */

static void
skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'
                             || *c->p == '\n')) {
        c->p++;
    }
}

static bool
fail(struct cursor *c, const char *why)
{
    if (c->error == NULL) {
        c->error = why;
    }
    return false;
}

static bool
expect(struct cursor *c, char ch)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch) {
        return fail(c, "unexpected character");
    }
    c->p++;
    return true;
}

static bool
peek_is(struct cursor *c, char ch)
{
    skip_ws(c);
    return c->p < c->end && *c->p == ch;
}

static int
hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    if (ch >= 'A' && ch <= 'F') {
        return ch - 'A' + 10;
    }
    return -1;
}

static bool
read_hex4(struct cursor *c, uint32_t *out)
{
    uint32_t v = 0;

    if (c->end - c->p < 4) {
        return fail(c, "short \\u escape");
    }
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(c->p[i]);
        if (d < 0) {
            return fail(c, "bad \\u escape");
        }
        v = v << 4 | (uint32_t)d;
    }
    c->p += 4;
    *out = v;
    return true;
}

static char *
put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | cp >> 12);
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | cp >> 18);
        *o++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *o++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* \uD83D\uDE80 is one code point (🚀): join a surrogate pair. */
static bool
read_unicode_escape(struct cursor *c, char **o)
{
    uint32_t cp;
    uint32_t lo;

    if (!read_hex4(c, &cp)) {
        return false;
    }
    if (cp >= 0xD800 && cp <= 0xDBFF && c->end - c->p >= 6 && c->p[0] == '\\'
        && c->p[1] == 'u') {
        c->p += 2;
        if (!read_hex4(c, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
            return fail(c, "bad surrogate pair");
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    *o = put_utf8(*o, cp);
    return true;
}

static bool
read_escape(struct cursor *c, char **o)
{
    static const char from[] = "\"\\/bfnrt";
    static const char to[] = "\"\\/\b\f\n\r\t";
    const char *hit;

    if (c->p >= c->end) {
        return fail(c, "unterminated escape");
    }
    char ch = *c->p++;
    if (ch == 'u') {
        return read_unicode_escape(c, o);
    }
    hit = strchr(from, ch);
    if (ch == '\0' || hit == NULL) {
        return fail(c, "unknown escape");
    }
    *(*o)++ = to[hit - from];
    return true;
}

static bool
read_string(struct cursor *c, struct str *out)
{
    char *o = c->scratch;

    if (!expect(c, '"')) {
        return false;
    }
    out->p = o;
    while (c->p < c->end && *c->p != '"') {
        if (*c->p != '\\') {
            *o++ = *c->p++;
        } else {
            c->p++;
            if (!read_escape(c, &o)) {
                return false;
            }
        }
    }
    if (c->p >= c->end) {
        return fail(c, "unterminated string");
    }
    c->p++;
    out->len = (size_t)(o - out->p);
    c->scratch = o;
    return true;
}

static bool
read_int(struct cursor *c, int64_t *out)
{
    bool neg = false;
    uint64_t v = 0;
    const char *start;

    skip_ws(c);
    if (c->p < c->end && *c->p == '-') {
        neg = true;
        c->p++;
    }
    start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        v = v * 10 + (uint64_t)(*c->p++ - '0');
    }
    if (c->p == start || c->p - start > 19) {
        return fail(c, "bad integer");
    }
    /* Two's complement: -9223372036854775808 round-trips via uint64. */
    *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
    return true;
}

static bool
read_literal(struct cursor *c, const char *word)
{
    size_t len = strlen(word);

    skip_ws(c);
    if ((size_t)(c->end - c->p) < len || memcmp(c->p, word, len) != 0) {
        return fail(c, "bad literal");
    }
    c->p += len;
    return true;
}

static bool skip_value(struct cursor *c);

/* Skips an array or an object, whatever it holds. */
static bool
skip_container(struct cursor *c, char open, char close)
{
    struct str ignored;

    if (!expect(c, open)) {
        return false;
    }
    if (peek_is(c, close)) {
        return expect(c, close);
    }
    do {
        if (open == '{' && (!read_string(c, &ignored) || !expect(c, ':'))) {
            return false;
        }
        if (!skip_value(c)) {
            return false;
        }
    } while (peek_is(c, ',') && expect(c, ','));
    return expect(c, close);
}

static bool
skip_value(struct cursor *c)
{
    struct str ignored_s;
    int64_t ignored_i;

    skip_ws(c);
    if (c->p >= c->end) {
        return fail(c, "missing value");
    }
    switch (*c->p) {
    case '"':
        return read_string(c, &ignored_s);
    case '[':
        return skip_container(c, '[', ']');
    case '{':
        return skip_container(c, '{', '}');
    case 'n':
        return read_literal(c, "null");
    case 't':
        return read_literal(c, "true");
    case 'f':
        return read_literal(c, "false");
    default:
        return read_int(c, &ignored_i);
    }
}

static bool
read_string_array(struct cursor *c, struct str *items, size_t max,
                  size_t *n)
{
    *n = 0;
    if (!expect(c, '[')) {
        return false;
    }
    if (peek_is(c, ']')) {
        return expect(c, ']');
    }
    do {
        if (*n == max) {
            return fail(c, "too many strings");
        }
        if (!read_string(c, &items[(*n)++])) {
            return false;
        }
    } while (peek_is(c, ',') && expect(c, ','));
    return expect(c, ']');
}

/* {"error": "..."} or {"status": "..."} */
static bool
read_reply_object(struct cursor *c, struct atom *a)
{
    struct str name;

    if (!expect(c, '{') || !read_string(c, &name) || !expect(c, ':')) {
        return false;
    }
    if (name.len == 5 && memcmp(name.p, "error", 5) == 0) {
        a->kind = A_ERROR;
    } else if (name.len == 6 && memcmp(name.p, "status", 6) == 0) {
        a->kind = A_STATUS;
    } else {
        return fail(c, "unknown reply object");
    }
    return read_string(c, &a->s) && expect(c, '}');
}

static bool
read_atom(struct cursor *c, struct atom *a)
{
    skip_ws(c);
    memset(a, 0, sizeof(*a));
    if (c->p >= c->end) {
        return fail(c, "missing reply");
    }
    if (*c->p == 'n') {
        a->kind = A_NULL;
        return read_literal(c, "null");
    }
    if (*c->p == '"') {
        a->kind = A_STR;
        return read_string(c, &a->s);
    }
    if (*c->p == '{') {
        return read_reply_object(c, a);
    }
    a->kind = A_INT;
    return read_int(c, &a->i);
}

static bool
read_reply(struct cursor *c, struct reply *r)
{
    r->n = 0;
    if (!peek_is(c, '[')) {
        return read_atom(c, &r->top);
    }
    memset(&r->top, 0, sizeof(r->top));
    r->top.kind = A_ARRAY;
    expect(c, '[');
    if (peek_is(c, ']')) {
        return expect(c, ']');
    }
    do {
        if (r->n == MAX_ITEMS) {
            return fail(c, "reply array too long");
        }
        if (!read_atom(c, &r->items[r->n++])) {
            return false;
        }
    } while (peek_is(c, ',') && expect(c, ','));
    return expect(c, ']');
}

static bool
str_is(struct str s, const char *lit)
{
    return s.len == strlen(lit) && memcmp(s.p, lit, s.len) == 0;
}

static bool
read_member(struct cursor *c, struct record *rec)
{
    struct str name;
    int64_t v;

    if (!read_string(c, &name) || !expect(c, ':')) {
        return false;
    }
    if (str_is(name, "n") || str_is(name, "scenario")) {
        if (!read_int(c, &v)) {
            return false;
        }
        *(str_is(name, "n") ? &rec->n : &rec->scenario) = (long)v;
        return true;
    }
    if (str_is(name, "t_ns")) {
        return read_int(c, &rec->t_ns);
    }
    if (str_is(name, "t_ms")) {
        return read_int(c, &rec->t_ms);
    }
    if (str_is(name, "argv")) {
        return read_string_array(c, rec->argv, MAX_ARGS, &rec->argc);
    }
    if (str_is(name, "reply")) {
        return read_reply(c, &rec->want);
    }
    return skip_value(c);
}

static bool
parse_record(const char *line, size_t len, char *scratch, struct record *rec,
             const char **error)
{
    struct cursor c = { line, line + len, scratch, NULL };

    memset(rec, 0, sizeof(*rec));
    rec->n = -1;
    if (expect(&c, '{') && !peek_is(&c, '}')) {
        do {
            if (!read_member(&c, rec)) {
                break;
            }
        } while (peek_is(&c, ',') && expect(&c, ','));
    }
    if (c.error == NULL) {
        expect(&c, '}');
    }
    *error = c.error;
    return c.error == NULL;
}

/* ---- the Redis keyspace model ------------------------------------------- */

static void
key_remove(struct keyspace *ks, size_t i)
{
    free(ks->keys[i].name);
    free(ks->keys[i].value);
    ks->keys[i] = ks->keys[--ks->n];
}

/* The live key, or NULL; an expired one is removed (Redis lazy expiry). */
static struct key *
key_lookup(struct keyspace *ks, struct str name, int64_t now_ms)
{
    for (size_t i = 0; i < ks->n; i++) {
        struct key *k = &ks->keys[i];
        if (k->len != name.len || memcmp(k->name, name.p, name.len) != 0) {
            continue;
        }
        if (!k->persistent && now_ms > k->expire_ms) {
            key_remove(ks, i);
            return NULL;
        }
        return k;
    }
    return NULL;
}

static struct key *
key_create(struct keyspace *ks, struct str name)
{
    if (ks->n == ks->cap) {
        size_t cap = ks->cap ? ks->cap * 2 : 64;
        struct key *keys = realloc(ks->keys, cap * sizeof(*keys));
        if (keys == NULL) {
            perror("realloc");
            exit(2);
        }
        ks->keys = keys;
        ks->cap = cap;
    }
    struct key *k = &ks->keys[ks->n];
    k->name = malloc(name.len + 1);
    if (k->name == NULL) {
        perror("malloc");
        exit(2);
    }
    memcpy(k->name, name.p, name.len);
    k->len = name.len;
    k->value = NULL;
    k->value_len = 0;
    k->persistent = true;
    k->expire_ms = 0;
    ks->n++;
    return k;
}

/* The live key, created (empty, persistent) when missing. */
static struct key *
key_lookup_or_create(struct keyspace *ks, struct str name, int64_t now_ms)
{
    struct key *k = key_lookup(ks, name, now_ms);

    return k != NULL ? k : key_create(ks, name);
}

static void
key_set_value(struct key *k, const char *p, size_t len)
{
    char *v = malloc(len ? len : 1);

    if (v == NULL) {
        perror("malloc");
        exit(2);
    }
    memcpy(v, p, len);
    free(k->value);
    k->value = v;
    k->value_len = len;
}

static void
keyspace_free(struct keyspace *ks)
{
    while (ks->n > 0) {
        key_remove(ks, ks->n - 1);
    }
    free(ks->keys);
}

/* ---- commands ----------------------------------------------------------- */

/* Rust's str::parse::<i64>: [+-]?[0-9]+, in range, nothing else. */
static bool
parse_i64(struct str s, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0;

    if (s.len > 0 && (s.p[0] == '+' || s.p[0] == '-')) {
        neg = s.p[0] == '-';
        i = 1;
    }
    if (i == s.len) {
        return false;
    }
    uint64_t max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < s.len; i++) {
        unsigned d = (unsigned)((unsigned char)s.p[i] - '0');
        if (d > 9 || v > (max - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = neg && v > 0 ? -(int64_t)(v - 1) - 1 : (int64_t)v;
    return true;
}

/* Rust's str::parse::<u64>, as redis-cell reads a stored TAT: an optional
 * '+', then one or more ASCII digits, within u64; nothing else ("-0", "",
 * " 1" and "18446744073709551616" fail). */
static bool
parse_u64(const char *p, size_t len, uint64_t *out)
{
    size_t i = len > 0 && p[0] == '+' ? 1 : 0;
    uint64_t v = 0;

    if (i == len) {
        return false;
    }
    for (; i < len; i++) {
        unsigned d = (unsigned)((unsigned char)p[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Redis's string2ll (SET's EX/PX argument): "0", or an optional '-' and a
 * first digit 1-9, then digits, within long long; no '+', no spaces. */
static bool
parse_redis_ll(struct str s, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0;

    if (s.len == 1 && s.p[0] == '0') {
        *out = 0;
        return true;
    }
    if (s.len > 0 && s.p[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == s.len || s.p[i] < '1' || s.p[i] > '9') {
        return false;
    }
    uint64_t max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < s.len; i++) {
        unsigned d = (unsigned)((unsigned char)s.p[i] - '0');
        if (d > 9 || v > (max - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
    return true;
}

static bool
name_is(struct str s, const char *lit)
{
    return s.len == strlen(lit) && strncasecmp(s.p, lit, s.len) == 0;
}

static void
reply_error(struct reply *r, const char *text)
{
    memset(r, 0, sizeof(*r));
    r->top.kind = A_ERROR;
    r->top.s.p = text;
    r->top.s.len = strlen(text);
}

static void
reply_int(struct reply *r, int64_t v)
{
    memset(r, 0, sizeof(*r));
    r->top.kind = A_INT;
    r->top.i = v;
}

/* "Couldn't parse as integer: <arg>", built in errbuf (big enough: the
 * argument came from the same line). */
static void
reply_parse_error(struct reply *r, struct str arg, char *errbuf)
{
    size_t plen = strlen(ERR_PARSE);

    memcpy(errbuf, ERR_PARSE, plen);
    memcpy(errbuf + plen, arg.p, arg.len);
    memset(r, 0, sizeof(*r));
    r->top.kind = A_ERROR;
    r->top.s.p = errbuf;
    r->top.s.len = plen + arg.len;
}

static bool
parse_params(const struct record *rec, struct gcra_params *p,
             struct reply *got, char *errbuf)
{
    int64_t *fields[] = { &p->max_burst, &p->count, &p->period,
                          &p->quantity };

    p->quantity = 1;
    for (size_t i = 2; i < rec->argc; i++) {
        if (!parse_i64(rec->argv[i], fields[i - 2])) {
            reply_parse_error(got, rec->argv[i], errbuf);
            return false;
        }
    }
    return true;
}

static void
store_decision(struct keyspace *ks, struct str name, int64_t now_ms,
               const struct gcra_decision *d, enum gcra_status st)
{
    struct key *k = key_lookup_or_create(ks, name, now_ms);
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%llu",
                       (unsigned long long)d->new_tat);

    key_set_value(k, digits, (size_t)len);
    /* SET drops the TTL; a failed PEXPIRE leaves the key persistent. */
    k->persistent = st == GCRA_EXPIRE_ERROR || d->ttl_ms == -1;
    k->expire_ms = k->persistent ? 0 : now_ms + d->ttl_ms;
}

static void
reply_decision(struct reply *got, const struct gcra_decision *d)
{
    int64_t v[5] = { d->limited ? 1 : 0, d->limit, d->remaining,
                     gcra_reply_seconds(d->retry_after_ns),
                     gcra_reply_seconds(d->reset_after_ns) };

    memset(got, 0, sizeof(*got));
    got->top.kind = A_ARRAY;
    got->n = 5;
    for (size_t i = 0; i < 5; i++) {
        got->items[i].kind = A_INT;
        got->items[i].i = v[i];
    }
}

static void
cmd_throttle(struct keyspace *ks, const struct record *rec,
             struct reply *got, char *errbuf)
{
    struct gcra_params p;
    struct gcra_decision d;

    if (rec->argc != 5 && rec->argc != 6) {
        reply_error(got, ERR_USAGE);
        return;
    }
    if (!parse_params(rec, &p, got, errbuf)) {
        return;
    }
    struct key *k = key_lookup(ks, rec->argv[1], rec->t_ms);
    uint64_t tat = 0;
    bool tat_ok = k == NULL || parse_u64(k->value, k->value_len, &tat);
    /* redis-cell refuses a zero rate before it reads the key, so for a
     * value it cannot read the zero-rate error still comes first. */
    enum gcra_status st = gcra_throttle(&p, k != NULL && tat_ok, tat,
                                        rec->t_ns, &d);
    if (st == GCRA_ZERO_RATE) {
        reply_error(got, ERR_ZERO);
        return;
    }
    if (!tat_ok) {
        reply_error(got, ERR_NOT_INT);
        return;
    }
    if (d.store) {
        store_decision(ks, rec->argv[1], rec->t_ms, &d, st);
    }
    if (st == GCRA_EXPIRE_ERROR) {
        reply_error(got, ERR_EXPIRE);
        return;
    }
    reply_decision(got, &d);
}

/* The reply points into the key, which lives until the next command. */
static void
cmd_get(struct keyspace *ks, const struct record *rec, struct reply *got)
{
    struct key *k = key_lookup(ks, rec->argv[1], rec->t_ms);

    memset(got, 0, sizeof(*got));
    if (k == NULL) {
        got->top.kind = A_NULL;
        return;
    }
    got->top.kind = A_STR;
    got->top.s.p = k->value;
    got->top.s.len = k->value_len;
}

/* SET key value [PX ms|EX s]: the value replaces whatever was there and
 * the TTL with it (none without PX/EX). Other options are not modelled. */
static void
cmd_set(struct keyspace *ks, const struct record *rec, struct reply *got)
{
    int64_t ms = -1;

    if (rec->argc == 5 && (name_is(rec->argv[3], "px")
                           || name_is(rec->argv[3], "ex"))) {
        bool seconds = name_is(rec->argv[3], "ex");
        if (!parse_redis_ll(rec->argv[4], &ms)) {
            reply_error(got, ERR_NOT_INT);
            return;
        }
        if (ms <= 0 || (seconds && ms > INT64_MAX / 1000)) {
            reply_error(got, ERR_SET_EXPIRE);
            return;
        }
        ms *= seconds ? 1000 : 1;
        if (ms > INT64_MAX - rec->t_ms) {
            reply_error(got, ERR_SET_EXPIRE);
            return;
        }
    } else if (rec->argc != 3) {
        reply_error(got, ERR_NOT_MODELLED);
        return;
    }
    struct key *k = key_lookup_or_create(ks, rec->argv[1], rec->t_ms);
    key_set_value(k, rec->argv[2].p, rec->argv[2].len);
    k->persistent = ms < 0;
    k->expire_ms = ms < 0 ? 0 : rec->t_ms + ms;
    memset(got, 0, sizeof(*got));
    got->top.kind = A_STATUS;
    got->top.s.p = "OK";
    got->top.s.len = 2;
}

/* DEL key [key ...]: how many live keys went away. */
static void
cmd_del(struct keyspace *ks, const struct record *rec, struct reply *got)
{
    int64_t n = 0;

    for (size_t i = 1; i < rec->argc; i++) {
        struct key *k = key_lookup(ks, rec->argv[i], rec->t_ms);
        if (k != NULL) {
            key_remove(ks, (size_t)(k - ks->keys));
            n++;
        }
    }
    reply_int(got, n);
}

static void
cmd_pttl(struct keyspace *ks, const struct record *rec, struct reply *got)
{
    struct key *k = key_lookup(ks, rec->argv[1], rec->t_ms);

    if (k == NULL) {
        reply_int(got, -2);
    } else {
        reply_int(got, k->persistent ? -1 : k->expire_ms - rec->t_ms);
    }
}

static void
cmd_exists(struct keyspace *ks, const struct record *rec, struct reply *got)
{
    int64_t n = 0;

    for (size_t i = 1; i < rec->argc; i++) {
        n += key_lookup(ks, rec->argv[i], rec->t_ms) != NULL;
    }
    reply_int(got, n);
}

static void
execute(struct keyspace *ks, const struct record *rec, struct reply *got,
        char *errbuf)
{
    struct str cmd = rec->argc > 0 ? rec->argv[0] : (struct str){ "", 0 };

    if (name_is(cmd, "cl.throttle")) {
        cmd_throttle(ks, rec, got, errbuf);
    } else if (name_is(cmd, "get") && rec->argc == 2) {
        cmd_get(ks, rec, got);
    } else if (name_is(cmd, "pttl") && rec->argc == 2) {
        cmd_pttl(ks, rec, got);
    } else if (name_is(cmd, "exists") && rec->argc >= 2) {
        cmd_exists(ks, rec, got);
    } else if (name_is(cmd, "set") && rec->argc >= 3) {
        cmd_set(ks, rec, got);
    } else if (name_is(cmd, "del") && rec->argc >= 2) {
        cmd_del(ks, rec, got);
    } else {
        reply_error(got, ERR_NOT_MODELLED);
    }
}

/* ---- comparing and reporting -------------------------------------------- */

static bool
atom_eq(const struct atom *a, const struct atom *b)
{
    if (a->kind != b->kind) {
        return false;
    }
    switch (a->kind) {
    case A_INT:
        return a->i == b->i;
    case A_STR:
    case A_ERROR:
    case A_STATUS:
        return a->s.len == b->s.len && memcmp(a->s.p, b->s.p, a->s.len) == 0;
    default:
        return true;
    }
}

static bool
reply_eq(const struct reply *a, const struct reply *b)
{
    if (!atom_eq(&a->top, &b->top) || a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (!atom_eq(&a->items[i], &b->items[i])) {
            return false;
        }
    }
    return true;
}

static void
print_str(struct str s)
{
    putchar('"');
    for (size_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch == '"' || ch == '\\') {
            printf("\\%c", ch);
        } else if (ch < 0x20) {
            printf("\\u%04x", ch);
        } else {
            putchar(ch);
        }
    }
    putchar('"');
}

static void
print_atom(const struct atom *a)
{
    switch (a->kind) {
    case A_NULL:
        fputs("null", stdout);
        break;
    case A_INT:
        printf("%lld", (long long)a->i);
        break;
    case A_STR:
        print_str(a->s);
        break;
    case A_ERROR:
    case A_STATUS:
        printf("{\"%s\": ", a->kind == A_ERROR ? "error" : "status");
        print_str(a->s);
        putchar('}');
        break;
    case A_ARRAY:
        break;
    }
}

static void
print_reply(const struct reply *r)
{
    if (r->top.kind != A_ARRAY) {
        print_atom(&r->top);
        return;
    }
    putchar('[');
    for (size_t i = 0; i < r->n; i++) {
        fputs(i ? ", " : "", stdout);
        print_atom(&r->items[i]);
    }
    putchar(']');
}

static void
report_failure(const struct record *rec, const struct reply *got)
{
    printf("FAIL n=%ld scenario=%ld t_ns=%lld argv=[", rec->n, rec->scenario,
           (long long)rec->t_ns);
    for (size_t i = 0; i < rec->argc; i++) {
        fputs(i ? ", " : "", stdout);
        print_str(rec->argv[i]);
    }
    fputs("]\n  want=", stdout);
    print_reply(&rec->want);
    fputs("\n  got =", stdout);
    print_reply(got);
    putchar('\n');
}

/* ---- main --------------------------------------------------------------- */

struct totals {
    long passed;
    long failed;
};

/* The scratch holds the decoded strings of the line, then the error text
 * of our own reply: twice the line plus room for fixed texts. */
static char *
grow_scratch(char *scratch, size_t *cap, size_t line_len)
{
    size_t need = 2 * line_len + 256;

    if (need <= *cap) {
        return scratch;
    }
    free(scratch);
    scratch = malloc(need);
    if (scratch == NULL) {
        perror("malloc");
        exit(2);
    }
    *cap = need;
    return scratch;
}

static void
replay_line(struct keyspace *ks, const struct record *rec, char *errbuf,
            struct totals *t)
{
    struct reply got;

    execute(ks, rec, &got, errbuf);
    if (reply_eq(&rec->want, &got)) {
        t->passed++;
        return;
    }
    if (++t->failed <= MAX_REPORTED) {
        report_failure(rec, &got);
    }
}

static int
replay_file(FILE *f, const char *path)
{
    struct keyspace ks = { NULL, 0, 0 };
    struct totals t = { 0, 0 };
    char *line = NULL;
    size_t line_cap = 0;
    char *scratch = NULL;
    size_t scratch_cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = 0;

    while ((len = getline(&line, &line_cap, f)) >= 0) {
        struct record rec;
        const char *error;

        lineno++;
        if (strspn(line, " \t\r\n") == (size_t)len) {
            continue;
        }
        scratch = grow_scratch(scratch, &scratch_cap, (size_t)len);
        if (!parse_record(line, (size_t)len, scratch, &rec, &error)) {
            fprintf(stderr, "%s:%ld: %s\n", path, lineno, error);
            rc = 2;
            break;
        }
        /* Strings decoded so far take at most len bytes of scratch. */
        replay_line(&ks, &rec, scratch + len, &t);
    }
    if (rc == 0) {
        printf("%ld passed, %ld failed (all replayed, none skipped)\n",
               t.passed, t.failed);
        rc = t.failed > 0 ? 1 : 0;
    }
    free(line);
    free(scratch);
    keyspace_free(&ks);
    return rc;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s cl_throttle_vectors.jsonl\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (f == NULL) {
        perror(argv[1]);
        return 2;
    }
    int rc = replay_file(f, argv[1]);
    fclose(f);
    return rc;
}
