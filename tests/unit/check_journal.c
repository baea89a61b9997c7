/*
 * check_journal.c - journal records: what goes in comes out, a cut
 * anywhere in the last record is a torn tail, damage before it is damage.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/journal.h"
#include "tests/unit/suites.h"

/* The magic and the records buffered so far, as a file holds them. */
static unsigned char *
file_of_buffer(size_t *len)
{
    size_t n;
    const unsigned char *recs = journal_unfed(&n);
    unsigned char *f = malloc(JOURNAL_MAGIC_LEN + n);
    ck_assert_ptr_nonnull(f);
    memcpy(f, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN);
    memcpy(f + JOURNAL_MAGIC_LEN, recs, n);
    *len = JOURNAL_MAGIC_LEN + n;
    return f;
}

static void
three_records(void)
{
    ck_assert(journal_add_set(3, 1, "key", 3, 123456789, "\x01\x02", 2));
    ck_assert(journal_add_del(0, "gone", 4));
    ck_assert(journal_add_swap(1, 2));
}

START_TEST(test_records_read_back_as_written)
{
    size_t len;
    three_records();
    unsigned char *f = file_of_buffer(&len);
    struct journal_reader r;
    struct journal_record rec;
    ck_assert(journal_reader_init(&r, f, len));
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(rec.op, JOURNAL_SET);
    ck_assert_uint_eq(rec.db, 3);
    ck_assert_int_eq(rec.expire_at, 123456789);
    ck_assert(rec.keylen == 3 && memcmp(rec.key, "key", 3) == 0);
    ck_assert(rec.state_len == 2 && rec.state[1] == 2);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert(rec.op == JOURNAL_DEL && rec.keylen == 4);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert(rec.op == JOURNAL_SWAP && rec.db == 1 && rec.db2 == 2);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_END);
    journal_close();                    /* drops the buffer */
    free(f);
}
END_TEST

START_TEST(test_a_cut_anywhere_in_the_last_record_is_torn)
{
    size_t len;
    three_records();
    unsigned char *f = file_of_buffer(&len);
    size_t last = len - (JOURNAL_HEADER_LEN + 9);   /* the SWAP record */
    for (size_t cut = last + 1; cut < len; cut++) {
        struct journal_reader r;
        struct journal_record rec;
        ck_assert(journal_reader_init(&r, f, cut));
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_TORN);
        ck_assert_uint_eq(r.off, last);
    }
    journal_close();
    free(f);
}
END_TEST

START_TEST(test_a_flipped_byte_before_the_last_record_is_damage)
{
    size_t len;
    three_records();
    unsigned char *f = file_of_buffer(&len);
    size_t second = JOURNAL_MAGIC_LEN + JOURNAL_HEADER_LEN + 1 + 17 + 3 + 2;
    /* Its length, its length's complement, its CRC, its payload. */
    const size_t at[] = { second, second + 5, second + 9, second + 14 };
    for (size_t i = 0; i < 4; i++) {
        struct journal_reader r;
        struct journal_record rec;
        f[at[i]] ^= 0x10;
        ck_assert(journal_reader_init(&r, f, len));
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_DAMAGED);
        ck_assert_uint_eq(r.off, second);
        f[at[i]] ^= 0x10;
    }
    journal_close();
    free(f);
}
END_TEST

START_TEST(test_zeros_where_the_file_grew_are_a_torn_tail)
{
    size_t len;
    three_records();
    unsigned char *f = file_of_buffer(&len);
    unsigned char *g = calloc(1, len + 100);
    memcpy(g, f, len);
    struct journal_reader r;
    struct journal_record rec;
    ck_assert(journal_reader_init(&r, g, len + 100));
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    }
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_TORN);
    ck_assert(!journal_reader_init(&r, (const unsigned char *)"CGSNAP01", 8));
    journal_close();
    free(f);
    free(g);
}
END_TEST

Suite *
journal_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc = tcase_create("records");
    tcase_add_test(tc, test_records_read_back_as_written);
    tcase_add_test(tc, test_a_cut_anywhere_in_the_last_record_is_torn);
    tcase_add_test(tc, test_a_flipped_byte_before_the_last_record_is_damage);
    tcase_add_test(tc, test_zeros_where_the_file_grew_are_a_torn_tail);
    suite_add_tcase(s, tc);
    return s;
}
