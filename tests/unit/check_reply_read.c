/*
 * check_reply_read.c - the reply reader (protocol/reply_read.h) over what
 * protocol/reply.c writes, in RESP2 and RESP3, and over the RESP3 types no
 * cellgate command writes (push, attribute, big number, blob error) typed
 * by hand. Then strictness: every cut of a valid stream is refused, and so
 * is each malformed token, with the reader left where it was. Buffers are
 * malloc'd to their exact size, so a read past the end shows under ASan.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/obuf.h"
#include "protocol/reply.h"
#include "protocol/reply_read.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

static struct obuf ob;

static void
setup(void)
{
    obuf_init(&ob);
}

static void
teardown(void)
{
    obuf_deinit(&ob);
}

/* The next token must be of type `type`; returns it. */
static struct reply_token
expect_token(struct reply_reader *r, enum reply_token_type type)
{
    struct reply_token t;
    ck_assert_msg(reply_reader_next(r, &t), "no token where %d expected",
                  (int)type);
    ck_assert_int_eq(t.type, type);
    return t;
}

static void
expect_text(struct reply_reader *r, enum reply_token_type type,
            const char *want)
{
    struct reply_token t = expect_token(r, type);
    ck_assert_uint_eq(t.len, strlen(want));
    ck_assert_mem_eq(t.str, want, t.len);
}

static void
expect_int(struct reply_reader *r, enum reply_token_type type, int64_t n)
{
    struct reply_token t = expect_token(r, type);
    ck_assert_int_eq(t.n, n);
}

/* A copy of s[0..n) in a buffer of exactly n bytes. */
static char *
exact(const char *s, size_t n)
{
    char *p = malloc(n > 0 ? n : 1);
    ck_assert_ptr_nonnull(p);
    memcpy(p, s, n);
    return p;
}

START_TEST(test_reads_what_reply_writes_in_resp2)
{
    reply_status(&ob, "OK");
    reply_errorz(&ob, "ERR bad\r\nthing");
    reply_int(&ob, INT64_MIN);
    reply_bulk(&ob, "a\r\nb\0c", 6);
    reply_bulk(&ob, "", 0);
    reply_null(&ob, 2);
    reply_null_array(&ob, 2);
    reply_array(&ob, 2);
    reply_int(&ob, 7);
    reply_map(&ob, 1, 2);
    reply_bulkz(&ob, "k");
    reply_double(&ob, 1.5, 2);
    reply_set(&ob, 0, 2);
    reply_verbatim(&ob, "text", 4, 2);
    size_t n;
    char *buf = fx_take(&ob, &n);
    struct reply_reader r;
    reply_reader_init(&r, buf, n);
    expect_text(&r, RT_STATUS, "OK");
    expect_text(&r, RT_ERROR, "ERR bad  thing");
    expect_int(&r, RT_INT, INT64_MIN);
    struct reply_token t = expect_token(&r, RT_BULK);
    ck_assert_uint_eq(t.len, 6);
    ck_assert_mem_eq(t.str, "a\r\nb\0c", 6);
    expect_text(&r, RT_BULK, "");
    expect_token(&r, RT_NULL_BULK);
    expect_token(&r, RT_NULL_ARRAY);
    expect_int(&r, RT_ARRAY, 2);
    expect_int(&r, RT_INT, 7);
    expect_int(&r, RT_ARRAY, 2);        /* a map in RESP2 */
    expect_text(&r, RT_BULK, "k");
    expect_text(&r, RT_BULK, "1.5");
    expect_int(&r, RT_ARRAY, 0);
    expect_text(&r, RT_BULK, "text");
    ck_assert(reply_reader_done(&r));
    ck_assert(!reply_reader_next(&r, &t));
    free(buf);
}
END_TEST

START_TEST(test_reads_what_reply_writes_in_resp3)
{
    reply_null(&ob, 3);
    reply_null_array(&ob, 3);
    reply_map(&ob, 2, 3);
    reply_set(&ob, 3, 3);
    reply_double(&ob, -0.25, 3);
    reply_double(&ob, INFINITY, 3);
    reply_double(&ob, -INFINITY, 3);
    reply_double_text(&ob, "3.0000000000000000001", 21, 3);
    reply_verbatim(&ob, "line\r\n", 6, 3);
    size_t n;
    char *buf = fx_take(&ob, &n);
    struct reply_reader r;
    reply_reader_init(&r, buf, n);
    expect_token(&r, RT_NULL);
    expect_token(&r, RT_NULL);
    expect_int(&r, RT_MAP, 2);
    expect_int(&r, RT_SET, 3);
    /* Counts are believed only as far as the bytes back them; these are
     * read flat, as tokens. */
    struct reply_token t = expect_token(&r, RT_DOUBLE);
    ck_assert(t.d == -0.25);
    ck_assert_uint_eq(t.len, 5);
    t = expect_token(&r, RT_DOUBLE);
    ck_assert(isinf(t.d) && t.d > 0);
    t = expect_token(&r, RT_DOUBLE);
    ck_assert(isinf(t.d) && t.d < 0);
    t = expect_token(&r, RT_DOUBLE);
    ck_assert(t.d == 3.0);
    ck_assert_uint_eq(t.len, 21);
    t = expect_token(&r, RT_VERBATIM);
    ck_assert_str_eq(t.format, "txt");
    ck_assert_uint_eq(t.len, 6);
    ck_assert_mem_eq(t.str, "line\r\n", 6);
    ck_assert(reply_reader_done(&r));
    free(buf);
}
END_TEST

START_TEST(test_resp3_types_no_command_writes)
{
    static const char s[] =
        ">2\r\n+message\r\n$2\r\nhi\r\n"
        "|1\r\n+ttl\r\n:3\r\n#t\r\n"
        "#f\r\n"
        "(-12345678901234567890123\r\n"
        "!9\r\nERR x\r\n y\r\n"
        ",nan\r\n"
        ",1e3\r\n"
        "=7\r\nmkd:a b\r\n";
    char *buf = exact(s, sizeof(s) - 1);
    struct reply_reader r;
    reply_reader_init(&r, buf, sizeof(s) - 1);
    expect_int(&r, RT_PUSH, 2);
    expect_text(&r, RT_STATUS, "message");
    expect_text(&r, RT_BULK, "hi");
    expect_int(&r, RT_ATTRIBUTE, 1);
    expect_text(&r, RT_STATUS, "ttl");
    expect_int(&r, RT_INT, 3);
    expect_int(&r, RT_BOOL, 1);
    expect_int(&r, RT_BOOL, 0);
    expect_text(&r, RT_BIG_NUMBER, "-12345678901234567890123");
    expect_text(&r, RT_BLOB_ERROR, "ERR x\r\n y");
    struct reply_token t = expect_token(&r, RT_DOUBLE);
    ck_assert(isnan(t.d));
    t = expect_token(&r, RT_DOUBLE);
    ck_assert(t.d == 1000.0);
    t = expect_token(&r, RT_VERBATIM);
    ck_assert_str_eq(t.format, "mkd");
    ck_assert_uint_eq(t.len, 3);
    ck_assert(reply_reader_done(&r));
    free(buf);
}
END_TEST

/* A nested stream: maps in arrays, an attribute before a set, empty
 * aggregates, blobs whose bytes look like protocol. */
static const char nested[] =
    "*4\r\n"
    "%2\r\n$1\r\na\r\n*2\r\n:1\r\n_\r\n+b\r\n~1\r\n#t\r\n"
    "|1\r\n+key\r\n*0\r\n~2\r\n$4\r\n*1\r\n\r\n,2.5\r\n"
    "*0\r\n"
    "=8\r\ntxt:*3\r\n\r\n";

START_TEST(test_skip_steps_over_whole_replies)
{
    size_t n = sizeof(nested) - 1;
    char *buf = exact(nested, n);
    struct reply_reader r;
    reply_reader_init(&r, buf, n);
    ck_assert(reply_reader_skip(&r));
    ck_assert(reply_reader_done(&r));
    /* Inside: the map's pairs, then the attributed set as one reply. */
    reply_reader_init(&r, buf, n);
    expect_int(&r, RT_ARRAY, 4);
    expect_int(&r, RT_MAP, 2);
    ck_assert(reply_reader_skip(&r));   /* "a" */
    ck_assert(reply_reader_skip(&r));   /* [1, null] */
    expect_text(&r, RT_STATUS, "b");
    ck_assert(reply_reader_skip(&r));   /* ~1 #t */
    ck_assert(reply_reader_skip(&r));   /* |1 ... ~2 ... */
    expect_int(&r, RT_ARRAY, 0);
    struct reply_token t = expect_token(&r, RT_VERBATIM);
    ck_assert_uint_eq(t.len, 4);
    ck_assert_mem_eq(t.str, "*3\r\n", 4);
    ck_assert(reply_reader_done(&r));
    free(buf);
}
END_TEST

START_TEST(test_every_cut_is_refused)
{
    size_t n = sizeof(nested) - 1;
    for (size_t k = 0; k < n; k++) {
        char *buf = exact(nested, k);
        struct reply_reader r;
        reply_reader_init(&r, buf, k);
        ck_assert_msg(!reply_reader_skip(&r), "cut at %zu read whole", k);
        free(buf);
    }
}
END_TEST

START_TEST(test_malformed_tokens_are_refused_in_place)
{
    static const char *const bad[] = {
        "",
        "+ok\n",                /* LF without CR */
        "+o\nk\r\n",            /* LF inside the line */
        "+ok\r",                /* CR at the very end */
        "+ok\rx",
        ":\r\n",
        ":12a\r\n",
        ":+1\r\n",
        ":-0\r\n",
        ":99999999999999999999\r\n",
        "$3\r\nab\r\n",          /* payload shorter than said */
        "$2\r\nabc\r\n",         /* longer */
        "$2\r\nab",              /* no CRLF after it */
        "$-2\r\n",
        "$x\r\n",
        "!-1\r\n",
        "*-2\r\n",
        "*2\r\n:1\r\n",          /* two elements cannot fit in 4 bytes */
        "%2\r\n:1\r\n:2\r\n",
        "~9223372036854775807\r\n",
        "_x\r\n",
        "#\r\n",
        "#x\r\n",
        "#tt\r\n",
        ",\r\n",
        ",abc\r\n",
        ", 1\r\n",
        ",1.5x\r\n",
        "(\r\n",
        "(-\r\n",
        "(12a\r\n",
        "=3\r\ntxt\r\n",         /* shorter than a format */
        "=5\r\ntxtx1\r\n",       /* no ':' after the format */
        "?\r\n",
        "\xff\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = strlen(bad[i]);
        char *buf = exact(bad[i], n);
        struct reply_reader r;
        struct reply_token t;
        reply_reader_init(&r, buf, n);
        ck_assert_msg(!reply_reader_next(&r, &t), "accepted %zu: %s", i,
                      bad[i]);
        ck_assert_ptr_eq(r.p, buf);
        free(buf);
    }
}
END_TEST

START_TEST(test_counts_are_checked_against_the_bytes_left)
{
    /* Three elements in nine bytes: believed; four: not. */
    static const char three[] = "*3\r\n_\r\n_\r\n_\r\n";
    char *buf = exact(three, sizeof(three) - 1);
    struct reply_reader r;
    reply_reader_init(&r, buf, sizeof(three) - 1);
    ck_assert(reply_reader_skip(&r));
    ck_assert(reply_reader_done(&r));
    free(buf);
    static const char four[] = "*4\r\n_\r\n_\r\n_\r\n";
    buf = exact(four, sizeof(four) - 1);
    struct reply_token t;
    reply_reader_init(&r, buf, sizeof(four) - 1);
    ck_assert(!reply_reader_next(&r, &t));
    free(buf);
}
END_TEST

Suite *
reply_read_suite(void)
{
    Suite *s = suite_create("reply_read");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_reads_what_reply_writes_in_resp2);
    tcase_add_test(tc, test_reads_what_reply_writes_in_resp3);
    tcase_add_test(tc, test_resp3_types_no_command_writes);
    tcase_add_test(tc, test_skip_steps_over_whole_replies);
    tcase_add_test(tc, test_every_cut_is_refused);
    tcase_add_test(tc, test_malformed_tokens_are_refused_in_place);
    tcase_add_test(tc, test_counts_are_checked_against_the_bytes_left);
    suite_add_tcase(s, tc);
    return s;
}
