/*
 * check_reply.c - unit tests for protocol/reply.c.
 *
 * Every reply function is checked for the exact bytes it appends, in RESP2
 * and, where the two differ, RESP3. The obuf is read back through
 * obuf_iov(), the way the connection sends it, so a header written into the
 * wrong chunk or a miscounted commit shows up as wrong bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "protocol/obuf.h"
#include "protocol/reply.h"
#include "tests/unit/suites.h"

#define MAX_IOV 64

static struct obuf ob;
static size_t baseline;

static void
setup(void)
{
    baseline = mem_used();
    obuf_init(&ob);
}

static void
teardown(void)
{
    obuf_deinit(&ob);
}

/* The whole unsent stream as one malloc'd buffer; *len gets its size. */
static char *
contents(size_t *len)
{
    struct iovec iov[MAX_IOV];
    size_t total;
    size_t n = obuf_iov(&ob, 0, iov, MAX_IOV, &total);
    char *out = malloc(total + 1);
    size_t at = 0;

    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < n; i++) {
        memcpy(out + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    ck_assert_uint_eq(at, total);
    ck_assert_uint_eq(obuf_pending(&ob), total);
    out[at] = '\0';
    *len = at;
    return out;
}

/* The stream is exactly want[0..n). */
static void
expect_n(const char *want, size_t n)
{
    size_t len;
    char *got = contents(&len);
    /* On failure show at most the first 200 bytes of each. */
    ck_assert_msg(len == n && memcmp(got, want, n) == 0,
                  "got %zu bytes \"%.*s\", want %zu bytes \"%.*s\"",
                  len, (int)(len < 200 ? len : 200), got,
                  n, (int)(n < 200 ? n : 200), want);
    free(got);
}

static void
expect(const char *want)
{
    expect_n(want, strlen(want));
}

/* Drop everything sent so far so the next check starts from nothing. */
static void
clear(void)
{
    obuf_consume(&ob, obuf_pending(&ob));
}

/* ------------------------------------------------------------------------
 * Simple strings and errors
 * --------------------------------------------------------------------- */

START_TEST(test_status_is_plus_text_crlf)
{
    ck_assert_int_eq(reply_status(&ob, "PONG"), 0);
    expect("+PONG\r\n");
}
END_TEST

START_TEST(test_empty_status_is_plus_crlf)
{
    ck_assert_int_eq(reply_status(&ob, ""), 0);
    expect("+\r\n");
}
END_TEST

START_TEST(test_ok_is_plus_ok_crlf)
{
    ck_assert_int_eq(reply_ok(&ob), 0);
    expect("+OK\r\n");
}
END_TEST

START_TEST(test_error_is_minus_message_crlf)
{
    ck_assert_int_eq(reply_error(&ob, "ERR unknown command", 19), 0);
    expect("-ERR unknown command\r\n");
}
END_TEST

START_TEST(test_error_uses_only_len_bytes)
{
    ck_assert_int_eq(reply_error(&ob, "ERR syntax error, really", 16), 0);
    expect("-ERR syntax error\r\n");
}
END_TEST

START_TEST(test_errorz_takes_a_c_string)
{
    ck_assert_int_eq(reply_errorz(&ob, "WRONGTYPE Operation against a key"),
                     0);
    expect("-WRONGTYPE Operation against a key\r\n");
}
END_TEST

START_TEST(test_error_turns_cr_and_lf_into_spaces)
{
    ck_assert_int_eq(reply_errorz(&ob, "ERR a\r\nb\nc\rd"), 0);
    expect("-ERR a  b c d\r\n");
}
END_TEST

START_TEST(test_error_with_cr_lf_at_both_ends_stays_one_line)
{
    ck_assert_int_eq(reply_errorz(&ob, "\r\nERR x\r\n"), 0);
    expect("-  ERR x  \r\n");
}
END_TEST

START_TEST(test_error_of_only_newlines_is_all_spaces)
{
    ck_assert_int_eq(reply_error(&ob, "\n\n\n", 3), 0);
    expect("-   \r\n");
}
END_TEST

START_TEST(test_empty_error_is_minus_crlf)
{
    ck_assert_int_eq(reply_error(&ob, "", 0), 0);
    expect("-\r\n");
}
END_TEST

/* ------------------------------------------------------------------------
 * Integers
 * --------------------------------------------------------------------- */

START_TEST(test_int_zero_positive_negative)
{
    ck_assert_int_eq(reply_int(&ob, 0), 0);
    ck_assert_int_eq(reply_int(&ob, 42), 0);
    ck_assert_int_eq(reply_int(&ob, -1), 0);
    expect(":0\r\n:42\r\n:-1\r\n");
}
END_TEST

START_TEST(test_int_extremes)
{
    ck_assert_int_eq(reply_int(&ob, INT64_MAX), 0);
    ck_assert_int_eq(reply_int(&ob, INT64_MIN), 0);
    expect(":9223372036854775807\r\n:-9223372036854775808\r\n");
}
END_TEST

START_TEST(test_int5_is_a_five_integer_array)
{
    const int64_t v[5] = { 0, 10, 9, -1, 60 };
    ck_assert_int_eq(reply_int5(&ob, v), 0);
    expect("*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:60\r\n");
}
END_TEST

START_TEST(test_int5_with_extremes)
{
    const int64_t v[5] = { INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX,
                           INT64_MIN };
    ck_assert_int_eq(reply_int5(&ob, v), 0);
    expect("*5\r\n"
           ":-9223372036854775808\r\n"
           ":9223372036854775807\r\n"
           ":-9223372036854775808\r\n"
           ":9223372036854775807\r\n"
           ":-9223372036854775808\r\n");
}
END_TEST

START_TEST(test_int5_matches_array_header_plus_five_ints)
{
    const int64_t v[5] = { 1, 15, 0, 3, -7 };
    size_t a_len;
    size_t b_len;

    ck_assert_int_eq(reply_int5(&ob, v), 0);
    char *a = contents(&a_len);
    clear();
    ck_assert_int_eq(reply_array(&ob, 5), 0);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(reply_int(&ob, v[i]), 0);
    }
    char *b = contents(&b_len);
    ck_assert_uint_eq(a_len, b_len);
    ck_assert_mem_eq(a, b, a_len);
    free(a);
    free(b);
}
END_TEST

/* ------------------------------------------------------------------------
 * Bulk strings
 * --------------------------------------------------------------------- */

START_TEST(test_bulk_is_length_header_then_bytes)
{
    ck_assert_int_eq(reply_bulk(&ob, "hello", 5), 0);
    expect("$5\r\nhello\r\n");
}
END_TEST

START_TEST(test_empty_bulk_is_dollar_zero)
{
    ck_assert_int_eq(reply_bulk(&ob, "", 0), 0);
    expect("$0\r\n\r\n");
}
END_TEST

START_TEST(test_bulk_is_binary_safe)
{
    ck_assert_int_eq(reply_bulk(&ob, "a\0b\r\nc", 6), 0);
    expect_n("$6\r\na\0b\r\nc\r\n", 12);
}
END_TEST

START_TEST(test_bulkz_takes_a_c_string)
{
    ck_assert_int_eq(reply_bulkz(&ob, "key:1"), 0);
    ck_assert_int_eq(reply_bulkz(&ob, ""), 0);
    expect("$5\r\nkey:1\r\n$0\r\n\r\n");
}
END_TEST

START_TEST(test_bulk_i64_formats_the_number_as_a_bulk)
{
    ck_assert_int_eq(reply_bulk_i64(&ob, 0), 0);
    ck_assert_int_eq(reply_bulk_i64(&ob, -42), 0);
    ck_assert_int_eq(reply_bulk_i64(&ob, INT64_MIN), 0);
    expect("$1\r\n0\r\n$3\r\n-42\r\n$20\r\n-9223372036854775808\r\n");
}
END_TEST

START_TEST(test_bulk_u64_formats_the_number_as_a_bulk)
{
    ck_assert_int_eq(reply_bulk_u64(&ob, 0), 0);
    ck_assert_int_eq(reply_bulk_u64(&ob, UINT64_MAX), 0);
    expect("$1\r\n0\r\n$20\r\n18446744073709551615\r\n");
}
END_TEST

START_TEST(test_bulk_of_100kb_spans_chunks_intact)
{
    size_t n = 100 * 1024;
    char *body = malloc(n);
    char *want = malloc(n + 16);
    ck_assert_ptr_nonnull(body);
    ck_assert_ptr_nonnull(want);
    for (size_t i = 0; i < n; i++) {
        body[i] = (char)(i * 7 + i / 251);
    }
    memcpy(want, "$102400\r\n", 9);
    memcpy(want + 9, body, n);
    memcpy(want + 9 + n, "\r\n", 2);
    ck_assert_int_eq(reply_bulk(&ob, body, n), 0);
    expect_n(want, n + 11);
    free(body);
    free(want);
}
END_TEST

/* ------------------------------------------------------------------------
 * Null and aggregates, RESP2 vs RESP3
 * --------------------------------------------------------------------- */

START_TEST(test_null_is_dollar_minus_one_in_resp2)
{
    ck_assert_int_eq(reply_null(&ob, 2), 0);
    expect("$-1\r\n");
}
END_TEST

START_TEST(test_null_is_underscore_in_resp3)
{
    ck_assert_int_eq(reply_null(&ob, 3), 0);
    expect("_\r\n");
}
END_TEST

START_TEST(test_array_header)
{
    ck_assert_int_eq(reply_array(&ob, 0), 0);
    ck_assert_int_eq(reply_array(&ob, 3), 0);
    ck_assert_int_eq(reply_array(&ob, 1000000), 0);
    expect("*0\r\n*3\r\n*1000000\r\n");
}
END_TEST

START_TEST(test_map_is_flat_array_of_twice_the_pairs_in_resp2)
{
    ck_assert_int_eq(reply_map(&ob, 2, 2), 0);
    ck_assert_int_eq(reply_map(&ob, 0, 2), 0);
    expect("*4\r\n*0\r\n");
}
END_TEST

START_TEST(test_map_is_percent_pairs_in_resp3)
{
    ck_assert_int_eq(reply_map(&ob, 2, 3), 0);
    ck_assert_int_eq(reply_map(&ob, 0, 3), 0);
    expect("%2\r\n%0\r\n");
}
END_TEST

START_TEST(test_set_is_an_array_in_resp2)
{
    ck_assert_int_eq(reply_set(&ob, 3, 2), 0);
    expect("*3\r\n");
}
END_TEST

START_TEST(test_set_is_tilde_in_resp3)
{
    ck_assert_int_eq(reply_set(&ob, 3, 3), 0);
    ck_assert_int_eq(reply_set(&ob, 0, 3), 0);
    expect("~3\r\n~0\r\n");
}
END_TEST

START_TEST(test_verbatim_is_txt_prefixed_in_resp3)
{
    ck_assert_int_eq(reply_verbatim(&ob, "hello world", 11, 3), 0);
    expect("=15\r\ntxt:hello world\r\n");
}
END_TEST

START_TEST(test_verbatim_is_a_plain_bulk_in_resp2)
{
    ck_assert_int_eq(reply_verbatim(&ob, "hello world", 11, 2), 0);
    expect("$11\r\nhello world\r\n");
}
END_TEST

START_TEST(test_empty_verbatim_in_both_protocols)
{
    ck_assert_int_eq(reply_verbatim(&ob, "", 0, 3), 0);
    ck_assert_int_eq(reply_verbatim(&ob, "", 0, 2), 0);
    expect("=4\r\ntxt:\r\n$0\r\n\r\n");
}
END_TEST

START_TEST(test_verbatim_keeps_newlines_inside)
{
    ck_assert_int_eq(reply_verbatim(&ob, "a\r\nb\n", 5, 3), 0);
    expect("=9\r\ntxt:a\r\nb\n\r\n");
}
END_TEST

START_TEST(test_verbatim_as_takes_its_format)
{
    ck_assert_int_eq(reply_verbatim_as(&ob, "# x", 3, "mkd", 3), 0);
    expect("=7\r\nmkd:# x\r\n");
    clear();
    ck_assert_int_eq(reply_verbatim_as(&ob, "# x", 3, "mkd", 2), 0);
    expect("$3\r\n# x\r\n");
}
END_TEST

START_TEST(test_status_bytes_stays_one_line)
{
    ck_assert_int_eq(reply_status_bytes(&ob, "a\r\nb\0c\n", 7), 0);
    expect_n("+a  b\0c \r\n", 10);
}
END_TEST

START_TEST(test_big_number_in_both_protocols)
{
    ck_assert_int_eq(reply_big_number(&ob, "-12345678901234567890", 21, 3), 0);
    expect("(-12345678901234567890\r\n");
    clear();
    ck_assert_int_eq(reply_big_number(&ob, "1\r\n2", 4, 3), 0);
    expect("(1  2\r\n");
    clear();
    ck_assert_int_eq(reply_big_number(&ob, "1\r\n2", 4, 2), 0);
    expect("$4\r\n1  2\r\n");
}
END_TEST

START_TEST(test_map_reply_composes_in_order_in_both_protocols)
{
    /* A HELLO-like map: RESP2 flattens it, RESP3 keeps its type bytes. */
    ck_assert_int_eq(reply_map(&ob, 2, 2), 0);
    ck_assert_int_eq(reply_bulkz(&ob, "proto"), 0);
    ck_assert_int_eq(reply_int(&ob, 2), 0);
    ck_assert_int_eq(reply_bulkz(&ob, "modules"), 0);
    ck_assert_int_eq(reply_set(&ob, 0, 2), 0);
    ck_assert_int_eq(reply_null(&ob, 2), 0);
    expect("*4\r\n$5\r\nproto\r\n:2\r\n$7\r\nmodules\r\n*0\r\n$-1\r\n");
    clear();
    ck_assert_int_eq(reply_map(&ob, 2, 3), 0);
    ck_assert_int_eq(reply_bulkz(&ob, "proto"), 0);
    ck_assert_int_eq(reply_int(&ob, 3), 0);
    ck_assert_int_eq(reply_bulkz(&ob, "modules"), 0);
    ck_assert_int_eq(reply_set(&ob, 0, 3), 0);
    ck_assert_int_eq(reply_null(&ob, 3), 0);
    expect("%2\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n~0\r\n_\r\n");
}
END_TEST

/* ------------------------------------------------------------------------
 * Chunk boundaries and out of memory
 * --------------------------------------------------------------------- */

/* Fill the obuf with `used` bytes of 'x' so the tail chunk has
 * OBUF_CHUNK_SIZE - used bytes left, and return the filler. */
static char *
fill_to(size_t used)
{
    char *f = malloc(used);
    ck_assert_ptr_nonnull(f);
    memset(f, 'x', used);
    ck_assert_int_eq(obuf_append(&ob, f, used), 0);
    return f;
}

START_TEST(test_headers_near_the_end_of_a_chunk_stay_in_order)
{
    /* For every amount of room left from 0 to 30 bytes, an integer and a
     * bulk header land right after the filler. */
    static const char tail[] = ":-9223372036854775808\r\n$3\r\nabc\r\n";
    for (size_t room = 0; room <= 30; room++) {
        size_t used = OBUF_CHUNK_SIZE - room;
        char *f = fill_to(used);
        char *want = malloc(used + sizeof(tail));
        ck_assert_ptr_nonnull(want);
        memcpy(want, f, used);
        memcpy(want + used, tail, sizeof(tail) - 1);
        ck_assert_int_eq(reply_int(&ob, INT64_MIN), 0);
        ck_assert_int_eq(reply_bulk(&ob, "abc", 3), 0);
        expect_n(want, used + sizeof(tail) - 1);
        clear();
        free(f);
        free(want);
    }
}
END_TEST

START_TEST(test_int5_near_the_end_of_a_chunk_stays_in_order)
{
    static const char tail[] = "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n";
    const int64_t v[5] = { 1, 2, 3, 4, 5 };
    for (size_t room = 0; room <= 130; room += 13) {
        size_t used = OBUF_CHUNK_SIZE - room;
        char *f = fill_to(used);
        char *want = malloc(used + sizeof(tail));
        ck_assert_ptr_nonnull(want);
        memcpy(want, f, used);
        memcpy(want + used, tail, sizeof(tail) - 1);
        ck_assert_int_eq(reply_int5(&ob, v), 0);
        expect_n(want, used + sizeof(tail) - 1);
        clear();
        free(f);
        free(want);
    }
}
END_TEST

START_TEST(test_every_reply_fails_once_the_obuf_is_out_of_memory)
{
    const int64_t v[5] = { 0, 0, 0, 0, 0 };
    ck_assert_int_eq(reply_ok(&ob), 0);
    /* A reservation larger than a chunk is refused and poisons the obuf,
     * exactly like a failed allocation. */
    ck_assert_ptr_null(obuf_reserve(&ob, OBUF_CHUNK_SIZE + 1));
    ck_assert(ob.oom);
    ck_assert_int_eq(reply_status(&ob, "PONG"), -1);
    ck_assert_int_eq(reply_ok(&ob), -1);
    ck_assert_int_eq(reply_errorz(&ob, "ERR x\ny"), -1);
    ck_assert_int_eq(reply_int(&ob, 1), -1);
    ck_assert_int_eq(reply_bulk(&ob, "a", 1), -1);
    ck_assert_int_eq(reply_bulkz(&ob, "a"), -1);
    ck_assert_int_eq(reply_bulk_i64(&ob, 1), -1);
    ck_assert_int_eq(reply_bulk_u64(&ob, 1), -1);
    ck_assert_int_eq(reply_null(&ob, 2), -1);
    ck_assert_int_eq(reply_null(&ob, 3), -1);
    ck_assert_int_eq(reply_array(&ob, 1), -1);
    ck_assert_int_eq(reply_map(&ob, 1, 3), -1);
    ck_assert_int_eq(reply_set(&ob, 1, 3), -1);
    ck_assert_int_eq(reply_verbatim(&ob, "a", 1, 3), -1);
    ck_assert_int_eq(reply_int5(&ob, v), -1);
    /* Nothing after the failure reached the stream. */
    expect("+OK\r\n");
}
END_TEST

START_TEST(test_replies_leave_no_memory_behind_after_deinit)
{
    const int64_t v[5] = { 1, 2, 3, 4, 5 };
    for (int i = 0; i < 5000; i++) {
        ck_assert_int_eq(reply_int5(&ob, v), 0);
        ck_assert_int_eq(reply_bulkz(&ob, "value"), 0);
    }
    ck_assert_uint_gt(mem_used(), baseline);
    obuf_deinit(&ob);
    ck_assert_uint_eq(mem_used(), baseline);
}
END_TEST

Suite *
reply_suite(void)
{
    Suite *s = suite_create("reply");

    TCase *tc = tcase_create("simple");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_status_is_plus_text_crlf);
    tcase_add_test(tc, test_empty_status_is_plus_crlf);
    tcase_add_test(tc, test_ok_is_plus_ok_crlf);
    tcase_add_test(tc, test_error_is_minus_message_crlf);
    tcase_add_test(tc, test_error_uses_only_len_bytes);
    tcase_add_test(tc, test_errorz_takes_a_c_string);
    tcase_add_test(tc, test_error_turns_cr_and_lf_into_spaces);
    tcase_add_test(tc, test_error_with_cr_lf_at_both_ends_stays_one_line);
    tcase_add_test(tc, test_error_of_only_newlines_is_all_spaces);
    tcase_add_test(tc, test_empty_error_is_minus_crlf);
    suite_add_tcase(s, tc);

    tc = tcase_create("integer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_int_zero_positive_negative);
    tcase_add_test(tc, test_int_extremes);
    tcase_add_test(tc, test_int5_is_a_five_integer_array);
    tcase_add_test(tc, test_int5_with_extremes);
    tcase_add_test(tc, test_int5_matches_array_header_plus_five_ints);
    suite_add_tcase(s, tc);

    tc = tcase_create("bulk");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_bulk_is_length_header_then_bytes);
    tcase_add_test(tc, test_empty_bulk_is_dollar_zero);
    tcase_add_test(tc, test_bulk_is_binary_safe);
    tcase_add_test(tc, test_bulkz_takes_a_c_string);
    tcase_add_test(tc, test_bulk_i64_formats_the_number_as_a_bulk);
    tcase_add_test(tc, test_bulk_u64_formats_the_number_as_a_bulk);
    tcase_add_test(tc, test_bulk_of_100kb_spans_chunks_intact);
    suite_add_tcase(s, tc);

    tc = tcase_create("resp2_resp3");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_null_is_dollar_minus_one_in_resp2);
    tcase_add_test(tc, test_null_is_underscore_in_resp3);
    tcase_add_test(tc, test_array_header);
    tcase_add_test(tc, test_map_is_flat_array_of_twice_the_pairs_in_resp2);
    tcase_add_test(tc, test_map_is_percent_pairs_in_resp3);
    tcase_add_test(tc, test_set_is_an_array_in_resp2);
    tcase_add_test(tc, test_set_is_tilde_in_resp3);
    tcase_add_test(tc, test_verbatim_is_txt_prefixed_in_resp3);
    tcase_add_test(tc, test_verbatim_is_a_plain_bulk_in_resp2);
    tcase_add_test(tc, test_empty_verbatim_in_both_protocols);
    tcase_add_test(tc, test_verbatim_keeps_newlines_inside);
    tcase_add_test(tc, test_verbatim_as_takes_its_format);
    tcase_add_test(tc, test_status_bytes_stays_one_line);
    tcase_add_test(tc, test_big_number_in_both_protocols);
    tcase_add_test(tc, test_map_reply_composes_in_order_in_both_protocols);
    suite_add_tcase(s, tc);

    tc = tcase_create("buffer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_headers_near_the_end_of_a_chunk_stay_in_order);
    tcase_add_test(tc, test_int5_near_the_end_of_a_chunk_stays_in_order);
    tcase_add_test(tc, test_every_reply_fails_once_the_obuf_is_out_of_memory);
    tcase_add_test(tc, test_replies_leave_no_memory_behind_after_deinit);
    suite_add_tcase(s, tc);

    return s;
}
