/*
 * check_obuf.c - unit tests for protocol/obuf.c.
 *
 * The contract under test is what a writer relies on: the iovecs describe
 * exactly the appended bytes in order, starting at the first unsent byte
 * (plus `skip`); consuming part of them leaves the rest in place; bytes
 * already handed out never move while more are appended; pending is exact;
 * and every chunk goes back to the allocator (mem_used() returns to its
 * baseline). Byte patterns are pseudo-random and include NUL, CR and LF so
 * a shifted or repeated byte cannot go unnoticed.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "protocol/obuf.h"
#include "tests/unit/suites.h"

#define BLOB_SIZE (100 * 1024)
#define MAX_IOV   64

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

/* n deterministic bytes; different seeds give different streams. */
static void
fill(char *buf, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (char)(x >> 16);
    }
}

static char *
blob(size_t n, uint32_t seed)
{
    char *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    fill(b, n, seed);
    return b;
}

/* Concatenate what obuf_iov() describes (up to MAX_IOV iovecs) into a new
 * buffer; *len gets its size, which must match the reported total. */
static char *
gather(const struct obuf *o, size_t skip, size_t *len)
{
    struct iovec iov[MAX_IOV];
    size_t total = SIZE_MAX;
    size_t n = obuf_iov(o, skip, iov, MAX_IOV, &total);
    char *out = malloc(total + 1);
    size_t at = 0;

    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_gt(iov[i].iov_len, 0);
        memcpy(out + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    ck_assert_uint_eq(at, total);
    *len = at;
    return out;
}

/* The unsent bytes (skip 0) are exactly want[0..n). */
static void
assert_unsent(const struct obuf *o, const char *want, size_t n)
{
    size_t len;
    char *got = gather(o, 0, &len);
    ck_assert_uint_eq(len, n);
    ck_assert_uint_eq(obuf_pending(o), n);
    ck_assert(memcmp(got, want, n) == 0);
    free(got);
}

/* ------------------------------------------------------------------------
 * Append and iovecs
 * --------------------------------------------------------------------- */

START_TEST(test_new_obuf_has_nothing_pending_and_no_iov)
{
    struct iovec iov[4];
    size_t bytes = 99;
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 0);
    ck_assert_uint_eq(bytes, 0);
    ck_assert(!ob.oom);
    ck_assert_uint_eq(mem_used(), baseline);
}
END_TEST

START_TEST(test_small_appends_form_one_iovec_in_order)
{
    struct iovec iov[4];
    size_t bytes;
    ck_assert_int_eq(obuf_append(&ob, "+OK\r\n", 5), 0);
    ck_assert_int_eq(obuf_append(&ob, ":1\r\n", 4), 0);
    ck_assert_int_eq(obuf_append(&ob, "$1\r\n\0\r\n", 7), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 1);
    ck_assert_uint_eq(bytes, 16);
    ck_assert_uint_eq(iov[0].iov_len, 16);
    ck_assert_mem_eq(iov[0].iov_base, "+OK\r\n:1\r\n$1\r\n\0\r\n", 16);
    ck_assert_uint_eq(obuf_pending(&ob), 16);
}
END_TEST

START_TEST(test_append_of_zero_bytes_changes_nothing)
{
    struct iovec iov[4];
    size_t bytes;
    ck_assert_int_eq(obuf_append(&ob, "", 0), 0);
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 0);
    ck_assert_int_eq(obuf_append(&ob, "ab", 2), 0);
    ck_assert_int_eq(obuf_append(&ob, "", 0), 0);
    assert_unsent(&ob, "ab", 2);
}
END_TEST

START_TEST(test_append_across_a_chunk_boundary_splits_into_two_iovecs)
{
    char *b = blob(OBUF_CHUNK_SIZE + 7, 1);
    struct iovec iov[4];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, OBUF_CHUNK_SIZE - 3), 0);
    ck_assert_int_eq(obuf_append(&ob, b + OBUF_CHUNK_SIZE - 3, 10), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 2);
    ck_assert_uint_eq(bytes, OBUF_CHUNK_SIZE + 7);
    ck_assert_uint_eq(iov[0].iov_len, OBUF_CHUNK_SIZE);
    ck_assert_uint_eq(iov[1].iov_len, 7);
    ck_assert(memcmp(iov[0].iov_base, b, OBUF_CHUNK_SIZE) == 0);
    ck_assert(memcmp(iov[1].iov_base, b + OBUF_CHUNK_SIZE, 7) == 0);
    free(b);
}
END_TEST

START_TEST(test_append_filling_a_chunk_exactly_starts_no_empty_chunk)
{
    char *b = blob(OBUF_CHUNK_SIZE + 1, 2);
    struct iovec iov[4];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, OBUF_CHUNK_SIZE), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 1);
    ck_assert_uint_eq(bytes, OBUF_CHUNK_SIZE);
    ck_assert_int_eq(obuf_append(&ob, b + OBUF_CHUNK_SIZE, 1), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 2);
    ck_assert_uint_eq(iov[1].iov_len, 1);
    assert_unsent(&ob, b, OBUF_CHUNK_SIZE + 1);
    free(b);
}
END_TEST

START_TEST(test_100kb_blob_in_one_append_reassembles_exactly)
{
    char *b = blob(BLOB_SIZE, 3);
    ck_assert_int_eq(obuf_append(&ob, b, BLOB_SIZE), 0);
    assert_unsent(&ob, b, BLOB_SIZE);
    free(b);
}
END_TEST

START_TEST(test_100kb_blob_in_uneven_pieces_reassembles_exactly)
{
    /* Piece sizes chosen to straddle chunk boundaries at odd offsets. */
    static const size_t sizes[] = { 1, 2, 5, 4093, 16384, 3, 12000, 16383,
                                    17, 1, 30000, 8191 };
    char *b = blob(BLOB_SIZE, 4);
    size_t at = 0;
    for (size_t i = 0; at < BLOB_SIZE; i++) {
        size_t n = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
        if (n > BLOB_SIZE - at) {
            n = BLOB_SIZE - at;
        }
        ck_assert_int_eq(obuf_append(&ob, b + at, n), 0);
        at += n;
        ck_assert_uint_eq(obuf_pending(&ob), at);
    }
    assert_unsent(&ob, b, BLOB_SIZE);
    free(b);
}
END_TEST

START_TEST(test_iov_stops_at_max_and_reports_only_those_bytes)
{
    char *b = blob(3 * OBUF_CHUNK_SIZE, 5);
    struct iovec iov[2];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, 3 * OBUF_CHUNK_SIZE), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 2, &bytes), 2);
    ck_assert_uint_eq(bytes, 2 * OBUF_CHUNK_SIZE);
    ck_assert(memcmp(iov[1].iov_base, b + OBUF_CHUNK_SIZE,
                     OBUF_CHUNK_SIZE) == 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 0, &bytes), 0);
    ck_assert_uint_eq(bytes, 0);
    free(b);
}
END_TEST

START_TEST(test_iov_skip_inside_the_first_chunk_starts_past_them)
{
    char *b = blob(2 * OBUF_CHUNK_SIZE + 100, 6);
    size_t len;

    ck_assert_int_eq(obuf_append(&ob, b, 2 * OBUF_CHUNK_SIZE + 100), 0);
    char *got = gather(&ob, 10, &len);
    ck_assert_uint_eq(len, 2 * OBUF_CHUNK_SIZE + 90);
    ck_assert(memcmp(got, b + 10, len) == 0);
    free(got);
    /* Skipping never consumes. */
    ck_assert_uint_eq(obuf_pending(&ob), 2 * OBUF_CHUNK_SIZE + 100);
    free(b);
}
END_TEST

START_TEST(test_iov_skip_to_a_chunk_boundary_starts_at_the_next_chunk)
{
    char *b = blob(2 * OBUF_CHUNK_SIZE + 100, 7);
    struct iovec iov[4];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, 2 * OBUF_CHUNK_SIZE + 100), 0);
    ck_assert_uint_eq(obuf_iov(&ob, OBUF_CHUNK_SIZE, iov, 4, &bytes), 2);
    ck_assert_uint_eq(bytes, OBUF_CHUNK_SIZE + 100);
    ck_assert_uint_eq(iov[0].iov_len, OBUF_CHUNK_SIZE);
    ck_assert(memcmp(iov[0].iov_base, b + OBUF_CHUNK_SIZE,
                     OBUF_CHUNK_SIZE) == 0);
    ck_assert_uint_eq(obuf_iov(&ob, OBUF_CHUNK_SIZE + 1, iov, 4, &bytes), 2);
    ck_assert_uint_eq(bytes, OBUF_CHUNK_SIZE + 99);
    ck_assert_uint_eq(iov[0].iov_len, OBUF_CHUNK_SIZE - 1);
    free(b);
}
END_TEST

START_TEST(test_iov_skip_of_everything_describes_nothing)
{
    struct iovec iov[4];
    size_t bytes = 99;
    ck_assert_int_eq(obuf_append(&ob, "hello", 5), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 5, iov, 4, &bytes), 0);
    ck_assert_uint_eq(bytes, 0);
}
END_TEST

START_TEST(test_iov_skip_counts_from_the_first_unsent_byte)
{
    char *b = blob(OBUF_CHUNK_SIZE + 500, 8);
    size_t len;

    ck_assert_int_eq(obuf_append(&ob, b, OBUF_CHUNK_SIZE + 500), 0);
    obuf_consume(&ob, 100);
    char *got = gather(&ob, 50, &len);
    ck_assert_uint_eq(len, OBUF_CHUNK_SIZE + 350);
    ck_assert(memcmp(got, b + 150, len) == 0);
    free(got);
    free(b);
}
END_TEST

START_TEST(test_bytes_handed_out_do_not_move_while_more_are_appended)
{
    char *b = blob(BLOB_SIZE, 9);
    struct iovec before[4];
    struct iovec after[MAX_IOV];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, 1000), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, before, 4, &bytes), 1);
    /* The writer holds before[0] in flight; more replies arrive. */
    ck_assert_int_eq(obuf_append(&ob, b + 1000, BLOB_SIZE - 1000), 0);
    ck_assert(memcmp(before[0].iov_base, b, 1000) == 0);
    ck_assert_uint_ge(obuf_iov(&ob, 0, after, MAX_IOV, &bytes), 2);
    ck_assert_ptr_eq(after[0].iov_base, before[0].iov_base);
    ck_assert_uint_eq(bytes, BLOB_SIZE);
    free(b);
}
END_TEST

/* ------------------------------------------------------------------------
 * Consume
 * --------------------------------------------------------------------- */

START_TEST(test_partial_consume_mid_chunk_then_append_keeps_order)
{
    ck_assert_int_eq(obuf_append(&ob, "hello world", 11), 0);
    obuf_consume(&ob, 6);
    assert_unsent(&ob, "world", 5);
    ck_assert_int_eq(obuf_append(&ob, "!\r\n", 3), 0);
    assert_unsent(&ob, "world!\r\n", 8);
    obuf_consume(&ob, 1);
    assert_unsent(&ob, "orld!\r\n", 7);
}
END_TEST

START_TEST(test_partial_consumes_across_chunks_then_appends_keep_order)
{
    char *b = blob(BLOB_SIZE, 10);
    size_t appended = 0;
    size_t consumed = 0;

    /* Interleave appends and short writes the way a slow socket would. */
    while (appended < BLOB_SIZE) {
        size_t n = 7777;
        if (n > BLOB_SIZE - appended) {
            n = BLOB_SIZE - appended;
        }
        ck_assert_int_eq(obuf_append(&ob, b + appended, n), 0);
        appended += n;
        size_t w = (appended - consumed) / 3 + 1;
        obuf_consume(&ob, w);
        consumed += w;
        assert_unsent(&ob, b + consumed, appended - consumed);
    }
    free(b);
}
END_TEST

START_TEST(test_consume_to_a_chunk_boundary_drops_that_chunk)
{
    char *b = blob(OBUF_CHUNK_SIZE + 10, 11);
    struct iovec iov[4];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, OBUF_CHUNK_SIZE + 10), 0);
    obuf_consume(&ob, OBUF_CHUNK_SIZE);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 1);
    ck_assert_uint_eq(bytes, 10);
    ck_assert(memcmp(iov[0].iov_base, b + OBUF_CHUNK_SIZE, 10) == 0);
    ck_assert_uint_eq(obuf_pending(&ob), 10);
    free(b);
}
END_TEST

START_TEST(test_consume_everything_leaves_pending_0_and_no_iov)
{
    char *b = blob(BLOB_SIZE, 12);
    struct iovec iov[4];
    size_t bytes = 99;

    ck_assert_int_eq(obuf_append(&ob, b, BLOB_SIZE), 0);
    obuf_consume(&ob, BLOB_SIZE);
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 0);
    ck_assert_uint_eq(bytes, 0);
    free(b);
}
END_TEST

START_TEST(test_consume_all_of_one_chunk_then_append_starts_clean)
{
    ck_assert_int_eq(obuf_append(&ob, "first", 5), 0);
    obuf_consume(&ob, 5);
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    ck_assert_int_eq(obuf_append(&ob, "second", 6), 0);
    assert_unsent(&ob, "second", 6);
}
END_TEST

START_TEST(test_consume_in_single_bytes_walks_every_byte)
{
    char *b = blob(OBUF_CHUNK_SIZE + 3, 13);
    struct iovec iov[4];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, OBUF_CHUNK_SIZE + 3), 0);
    for (size_t i = 0; i < OBUF_CHUNK_SIZE + 3; i++) {
        ck_assert_uint_ge(obuf_iov(&ob, 0, iov, 4, &bytes), 1);
        ck_assert_uint_eq(bytes, OBUF_CHUNK_SIZE + 3 - i);
        ck_assert_int_eq(((char *)iov[0].iov_base)[0], b[i]);
        obuf_consume(&ob, 1);
    }
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 0);
    free(b);
}
END_TEST

START_TEST(test_consume_of_zero_bytes_changes_nothing)
{
    ck_assert_int_eq(obuf_append(&ob, "abc", 3), 0);
    obuf_consume(&ob, 0);
    assert_unsent(&ob, "abc", 3);
}
END_TEST

START_TEST(test_pending_is_exact_through_random_appends_and_consumes)
{
    char *b = blob(4 * BLOB_SIZE, 14);
    size_t appended = 0;
    size_t consumed = 0;
    uint32_t x = 12345;

    for (int step = 0; step < 2000; step++) {
        x = x * 1103515245u + 12345u;
        size_t r = (x >> 8) % 3000;
        if ((x >> 4) % 3 != 0 && appended + r <= 4 * BLOB_SIZE) {
            ck_assert_int_eq(obuf_append(&ob, b + appended, r), 0);
            appended += r;
        } else {
            size_t c = r < appended - consumed ? r : appended - consumed;
            obuf_consume(&ob, c);
            consumed += c;
        }
        ck_assert_uint_eq(obuf_pending(&ob), appended - consumed);
    }
    assert_unsent(&ob, b + consumed, appended - consumed);
    free(b);
}
END_TEST

/* ------------------------------------------------------------------------
 * Reserve / commit
 * --------------------------------------------------------------------- */

START_TEST(test_reserve_then_commit_counts_only_the_committed_bytes)
{
    char *p = obuf_reserve(&ob, 24);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    memcpy(p, ":42\r\n", 5);
    obuf_commit(&ob, 5);
    assert_unsent(&ob, ":42\r\n", 5);
    ck_assert_int_eq(obuf_append(&ob, "+OK\r\n", 5), 0);
    assert_unsent(&ob, ":42\r\n+OK\r\n", 10);
}
END_TEST

START_TEST(test_reserve_continues_the_tail_chunk_when_it_has_room)
{
    struct iovec iov[4];
    size_t bytes;
    ck_assert_int_eq(obuf_append(&ob, "abc", 3), 0);
    char *p = obuf_reserve(&ob, 10);
    ck_assert_ptr_nonnull(p);
    memcpy(p, "def", 3);
    obuf_commit(&ob, 3);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 1);
    ck_assert_mem_eq(iov[0].iov_base, "abcdef", 6);
}
END_TEST

START_TEST(test_reserve_without_room_in_the_tail_opens_a_new_chunk)
{
    char *b = blob(OBUF_CHUNK_SIZE - 5, 15);
    struct iovec iov[4];
    size_t bytes;

    ck_assert_int_eq(obuf_append(&ob, b, OBUF_CHUNK_SIZE - 5), 0);
    char *p = obuf_reserve(&ob, 10);
    ck_assert_ptr_nonnull(p);
    memcpy(p, "0123456789", 10);
    obuf_commit(&ob, 10);
    ck_assert_uint_eq(obuf_pending(&ob), OBUF_CHUNK_SIZE + 5);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 2);
    ck_assert_uint_eq(bytes, OBUF_CHUNK_SIZE + 5);
    /* The five unused bytes of the first chunk are not part of the stream. */
    ck_assert_uint_eq(iov[0].iov_len, OBUF_CHUNK_SIZE - 5);
    ck_assert(memcmp(iov[0].iov_base, b, OBUF_CHUNK_SIZE - 5) == 0);
    ck_assert_uint_eq(iov[1].iov_len, 10);
    ck_assert_mem_eq(iov[1].iov_base, "0123456789", 10);
    /* Later appends follow the reserved bytes. */
    ck_assert_int_eq(obuf_append(&ob, "!", 1), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 2);
    ck_assert_mem_eq(iov[1].iov_base, "0123456789!", 11);
    free(b);
}
END_TEST

START_TEST(test_reserve_then_commit_zero_adds_nothing)
{
    struct iovec iov[4];
    size_t bytes;
    ck_assert_ptr_nonnull(obuf_reserve(&ob, 100));
    obuf_commit(&ob, 0);
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    ck_assert_uint_eq(obuf_iov(&ob, 0, iov, 4, &bytes), 0);
    ck_assert_uint_eq(bytes, 0);
    ck_assert_int_eq(obuf_append(&ob, "x", 1), 0);
    assert_unsent(&ob, "x", 1);
}
END_TEST

START_TEST(test_reserve_of_a_whole_chunk_succeeds)
{
    char *p = obuf_reserve(&ob, OBUF_CHUNK_SIZE);
    ck_assert_ptr_nonnull(p);
    memset(p, 'z', OBUF_CHUNK_SIZE);
    obuf_commit(&ob, OBUF_CHUNK_SIZE);
    ck_assert_uint_eq(obuf_pending(&ob), OBUF_CHUNK_SIZE);
    ck_assert(!ob.oom);
}
END_TEST

START_TEST(test_reserve_over_a_chunk_fails_and_the_failure_is_sticky)
{
    ck_assert_int_eq(obuf_append(&ob, "ab", 2), 0);
    ck_assert_ptr_null(obuf_reserve(&ob, OBUF_CHUNK_SIZE + 1));
    ck_assert(ob.oom);
    ck_assert_int_eq(obuf_append(&ob, "cd", 2), -1);
    ck_assert_ptr_null(obuf_reserve(&ob, 1));
    /* What was appended before the failure is still there to send. */
    assert_unsent(&ob, "ab", 2);
}
END_TEST

/* ------------------------------------------------------------------------
 * Memory
 * --------------------------------------------------------------------- */

START_TEST(test_drained_chunk_is_kept_as_spare_and_reused)
{
    ck_assert_int_eq(obuf_append(&ob, "abc", 3), 0);
    size_t one_chunk = mem_used();
    ck_assert_uint_gt(one_chunk, baseline);
    obuf_consume(&ob, 3);
    /* The drained chunk stays as the spare ... */
    ck_assert_uint_eq(mem_used(), one_chunk);
    /* ... and the next append takes it instead of allocating. */
    ck_assert_int_eq(obuf_append(&ob, "def", 3), 0);
    ck_assert_uint_eq(mem_used(), one_chunk);
    assert_unsent(&ob, "def", 3);
}
END_TEST

START_TEST(test_at_most_one_drained_chunk_is_kept)
{
    char *b = blob(4 * OBUF_CHUNK_SIZE, 16);
    ck_assert_int_eq(obuf_append(&ob, b, 1), 0);
    size_t one_chunk = mem_used() - baseline;
    ck_assert_int_eq(obuf_append(&ob, b + 1, 4 * OBUF_CHUNK_SIZE - 1), 0);
    ck_assert_uint_eq(mem_used(), baseline + 4 * one_chunk);
    obuf_consume(&ob, 4 * OBUF_CHUNK_SIZE);
    ck_assert_uint_eq(mem_used(), baseline + one_chunk);
    free(b);
}
END_TEST

START_TEST(test_shrink_releases_the_spare_chunk)
{
    ck_assert_int_eq(obuf_append(&ob, "abc", 3), 0);
    obuf_consume(&ob, 3);
    ck_assert_uint_gt(mem_used(), baseline);
    obuf_shrink(&ob);
    ck_assert_uint_eq(mem_used(), baseline);
    obuf_shrink(&ob);   /* nothing left to release: a no-op */
    ck_assert_uint_eq(mem_used(), baseline);
    ck_assert_int_eq(obuf_append(&ob, "xyz", 3), 0);
    assert_unsent(&ob, "xyz", 3);
}
END_TEST

/* What INFO's mem_clients_slaves adds up: every chunk, the spare too, and
 * never more than the allocator handed out for them. */
START_TEST(test_memory_counts_every_chunk_and_the_spare)
{
    ck_assert_uint_eq(obuf_memory(&ob), 0);
    char *b = blob(3 * OBUF_CHUNK_SIZE, 23);
    ck_assert_int_eq(obuf_append(&ob, b, 3 * OBUF_CHUNK_SIZE), 0);
    ck_assert_uint_ge(obuf_memory(&ob), 3 * OBUF_CHUNK_SIZE);
    ck_assert_uint_le(obuf_memory(&ob), mem_used() - baseline);
    obuf_consume(&ob, 3 * OBUF_CHUNK_SIZE);
    ck_assert_uint_ge(obuf_memory(&ob), OBUF_CHUNK_SIZE);     /* the spare */
    ck_assert_uint_le(obuf_memory(&ob), mem_used() - baseline);
    obuf_shrink(&ob);
    ck_assert_uint_eq(obuf_memory(&ob), 0);
    free(b);
}
END_TEST

START_TEST(test_shrink_keeps_pending_bytes)
{
    char *b = blob(2 * OBUF_CHUNK_SIZE, 17);
    ck_assert_int_eq(obuf_append(&ob, b, 2 * OBUF_CHUNK_SIZE), 0);
    obuf_consume(&ob, OBUF_CHUNK_SIZE + 1);
    obuf_shrink(&ob);
    assert_unsent(&ob, b + OBUF_CHUNK_SIZE + 1, OBUF_CHUNK_SIZE - 1);
    free(b);
}
END_TEST

START_TEST(test_deinit_returns_mem_used_to_baseline)
{
    char *b = blob(BLOB_SIZE, 18);
    ck_assert_int_eq(obuf_append(&ob, b, BLOB_SIZE), 0);
    obuf_consume(&ob, OBUF_CHUNK_SIZE + 17);   /* leaves a spare too */
    ck_assert_uint_gt(mem_used(), baseline);
    obuf_deinit(&ob);
    ck_assert_uint_eq(mem_used(), baseline);
    ck_assert_uint_eq(obuf_pending(&ob), 0);
    free(b);
}
END_TEST

START_TEST(test_deinit_of_an_unused_obuf_frees_nothing)
{
    obuf_deinit(&ob);
    ck_assert_uint_eq(mem_used(), baseline);
}
END_TEST

/* ------------------------------------------------------------------------
 * Moving one obuf's bytes behind another's (an I/O thread's writer)
 * --------------------------------------------------------------------- */

START_TEST(test_move_of_a_few_bytes_copies_them_behind)
{
    struct obuf src;
    obuf_init(&src);
    ck_assert_int_eq(obuf_append(&ob, "abc", 3), 0);
    ck_assert_int_eq(obuf_append(&src, "def", 3), 0);
    obuf_move(&ob, &src);
    assert_unsent(&ob, "abcdef", 6);
    ck_assert_uint_eq(obuf_pending(&src), 0);
    ck_assert_uint_eq(obuf_held(&ob), 6);
    ck_assert_uint_eq(obuf_held(&src), 0);
    obuf_deinit(&src);
}
END_TEST

START_TEST(test_move_of_chunks_links_them_and_held_counts_the_gap)
{
    struct obuf src;
    obuf_init(&src);
    char *b = blob(3 * OBUF_CHUNK_SIZE, 21);
    ck_assert_int_eq(obuf_append(&ob, b, 100), 0);
    ck_assert_int_eq(obuf_append(&src, b + 100, 2 * OBUF_CHUNK_SIZE), 0);
    obuf_move(&ob, &src);
    assert_unsent(&ob, b, 100 + 2 * OBUF_CHUNK_SIZE);
    /* The first chunk's room after its 100 bytes is held, unused. */
    ck_assert_uint_eq(obuf_held(&ob), 3 * OBUF_CHUNK_SIZE);
    obuf_consume(&ob, 100);
    ck_assert_uint_eq(obuf_held(&ob), 2 * OBUF_CHUNK_SIZE);
    obuf_consume(&ob, OBUF_CHUNK_SIZE + 5);
    ck_assert_uint_eq(obuf_held(&ob), OBUF_CHUNK_SIZE - 5);
    assert_unsent(&ob, b + 100 + OBUF_CHUNK_SIZE + 5, OBUF_CHUNK_SIZE - 5);
    obuf_deinit(&src);
    free(b);
}
END_TEST

START_TEST(test_move_from_a_partly_sent_obuf_copies_the_rest)
{
    struct obuf src;
    obuf_init(&src);
    char *b = blob(2 * OBUF_CHUNK_SIZE, 22);
    ck_assert_int_eq(obuf_append(&src, b, 2 * OBUF_CHUNK_SIZE), 0);
    obuf_consume(&src, 7);
    ck_assert_int_eq(obuf_append(&ob, "x", 1), 0);
    obuf_move(&ob, &src);
    ck_assert_uint_eq(obuf_pending(&ob), 2 * OBUF_CHUNK_SIZE - 6);
    ck_assert_uint_eq(obuf_held(&ob), obuf_pending(&ob));
    obuf_consume(&ob, 1);
    assert_unsent(&ob, b + 7, 2 * OBUF_CHUNK_SIZE - 7);
    obuf_deinit(&src);
    free(b);
}
END_TEST

START_TEST(test_held_equals_pending_without_gaps)
{
    char *b = blob(BLOB_SIZE, 23);
    ck_assert_uint_eq(obuf_held(&ob), 0);
    ck_assert_int_eq(obuf_append(&ob, b, BLOB_SIZE), 0);
    ck_assert_uint_eq(obuf_held(&ob), BLOB_SIZE);
    obuf_consume(&ob, OBUF_CHUNK_SIZE + 3);
    ck_assert_uint_eq(obuf_held(&ob), BLOB_SIZE - OBUF_CHUNK_SIZE - 3);
    obuf_consume(&ob, obuf_pending(&ob));
    ck_assert_uint_eq(obuf_held(&ob), 0);
    free(b);
}
END_TEST

/* ------------------------------------------------------------------------
 * The depot: chunks one thread's pool has no room for, for another's
 * (an I/O thread gives back what the main thread took)
 * --------------------------------------------------------------------- */

#define THREAD_CHUNKS 20
#define POOL_MAX      16    /* obuf.c's: what a thread keeps for itself */

static void *
release_many(void *unused)
{
    (void)unused;
    struct obuf o;
    obuf_init(&o);
    char *b = blob(THREAD_CHUNKS * OBUF_CHUNK_SIZE, 31);
    ck_assert_int_eq(obuf_append(&o, b, THREAD_CHUNKS * OBUF_CHUNK_SIZE), 0);
    obuf_deinit(&o);
    free(b);
    return NULL;
}

static void *
take_one(void *unused)
{
    (void)unused;
    struct obuf o;
    obuf_init(&o);
    ck_assert_int_eq(obuf_append(&o, "x", 1), 0);
    obuf_deinit(&o);
    return NULL;
}

START_TEST(test_chunks_past_a_full_pool_go_to_the_depot_for_another_thread)
{
    size_t before = obuf_depot_len();
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, release_many, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(obuf_depot_len(), before + THREAD_CHUNKS - POOL_MAX);
    /* A thread with an empty pool takes from the depot before malloc(). */
    ck_assert_int_eq(pthread_create(&t, NULL, take_one, NULL), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(obuf_depot_len(), before + THREAD_CHUNKS - POOL_MAX - 1);
}
END_TEST

Suite *
obuf_suite(void)
{
    Suite *s = suite_create("obuf");

    TCase *tc = tcase_create("append");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_new_obuf_has_nothing_pending_and_no_iov);
    tcase_add_test(tc, test_small_appends_form_one_iovec_in_order);
    tcase_add_test(tc, test_append_of_zero_bytes_changes_nothing);
    tcase_add_test(tc,
                   test_append_across_a_chunk_boundary_splits_into_two_iovecs);
    tcase_add_test(tc,
                   test_append_filling_a_chunk_exactly_starts_no_empty_chunk);
    tcase_add_test(tc, test_100kb_blob_in_one_append_reassembles_exactly);
    tcase_add_test(tc, test_100kb_blob_in_uneven_pieces_reassembles_exactly);
    suite_add_tcase(s, tc);

    tc = tcase_create("iov");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_iov_stops_at_max_and_reports_only_those_bytes);
    tcase_add_test(tc,
                   test_iov_skip_inside_the_first_chunk_starts_past_them);
    tcase_add_test(tc,
                   test_iov_skip_to_a_chunk_boundary_starts_at_the_next_chunk);
    tcase_add_test(tc, test_iov_skip_of_everything_describes_nothing);
    tcase_add_test(tc, test_iov_skip_counts_from_the_first_unsent_byte);
    tcase_add_test(tc,
                   test_bytes_handed_out_do_not_move_while_more_are_appended);
    suite_add_tcase(s, tc);

    tc = tcase_create("consume");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_partial_consume_mid_chunk_then_append_keeps_order);
    tcase_add_test(tc,
                   test_partial_consumes_across_chunks_then_appends_keep_order);
    tcase_add_test(tc, test_consume_to_a_chunk_boundary_drops_that_chunk);
    tcase_add_test(tc, test_consume_everything_leaves_pending_0_and_no_iov);
    tcase_add_test(tc,
                   test_consume_all_of_one_chunk_then_append_starts_clean);
    tcase_add_test(tc, test_consume_in_single_bytes_walks_every_byte);
    tcase_add_test(tc, test_consume_of_zero_bytes_changes_nothing);
    tcase_add_test(tc,
                   test_pending_is_exact_through_random_appends_and_consumes);
    suite_add_tcase(s, tc);

    tc = tcase_create("reserve");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc,
                   test_reserve_then_commit_counts_only_the_committed_bytes);
    tcase_add_test(tc, test_reserve_continues_the_tail_chunk_when_it_has_room);
    tcase_add_test(tc,
                   test_reserve_without_room_in_the_tail_opens_a_new_chunk);
    tcase_add_test(tc, test_reserve_then_commit_zero_adds_nothing);
    tcase_add_test(tc, test_reserve_of_a_whole_chunk_succeeds);
    tcase_add_test(tc,
                   test_reserve_over_a_chunk_fails_and_the_failure_is_sticky);
    suite_add_tcase(s, tc);

    tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_drained_chunk_is_kept_as_spare_and_reused);
    tcase_add_test(tc, test_at_most_one_drained_chunk_is_kept);
    tcase_add_test(tc, test_shrink_releases_the_spare_chunk);
    tcase_add_test(tc, test_shrink_keeps_pending_bytes);
    tcase_add_test(tc, test_memory_counts_every_chunk_and_the_spare);
    tcase_add_test(tc, test_deinit_returns_mem_used_to_baseline);
    tcase_add_test(tc, test_deinit_of_an_unused_obuf_frees_nothing);
    suite_add_tcase(s, tc);

    tc = tcase_create("move");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_move_of_a_few_bytes_copies_them_behind);
    tcase_add_test(tc, test_move_of_chunks_links_them_and_held_counts_the_gap);
    tcase_add_test(tc, test_move_from_a_partly_sent_obuf_copies_the_rest);
    tcase_add_test(tc, test_held_equals_pending_without_gaps);
    suite_add_tcase(s, tc);

    tc = tcase_create("depot");
    tcase_add_test(tc,
                   test_chunks_past_a_full_pool_go_to_the_depot_for_another_thread);
    suite_add_tcase(s, tc);

    return s;
}
