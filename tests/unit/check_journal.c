/*
 * check_journal.c - journal records: what goes in comes out, a cut
 * anywhere in the last record is a torn tail, damage before it is damage.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/journal.h"
#include "server/store.h"
#include "server/server.h"
#include "tests/unit/suites.h"

/* What the two sinks were handed by the last journal_publish(). */
struct capture {
    unsigned char *p;
    size_t len;
    bool complete;
    int calls;
};
static struct capture to_file, to_replicas;

static void
keep(struct capture *c, const unsigned char *records, size_t len,
     bool complete)
{
    free(c->p);
    c->p = malloc(len + 1);
    ck_assert_ptr_nonnull(c->p);
    memcpy(c->p, records, len);
    c->len = len;
    c->complete = complete;
    c->calls++;
}

static void
file_sink(const unsigned char *records, size_t len, bool complete)
{
    keep(&to_file, records, len, complete);
}

static void
replicas_sink(const unsigned char *records, size_t len, bool complete)
{
    keep(&to_replicas, records, len, complete);
}

static void
attach_sinks(void)
{
    journal_attach(JOURNAL_SINK_FILE, file_sink);
}

static void
detach_sinks(void)
{
    journal_attach(JOURNAL_SINK_FILE, NULL);
    journal_attach(JOURNAL_SINK_REPLICAS, NULL);
    free(to_file.p);
    free(to_replicas.p);
    memset(&to_file, 0, sizeof(to_file));
    memset(&to_replicas, 0, sizeof(to_replicas));
}

/* The magic (of version `magic`) and the records published, as a file
 * holds them. */
static unsigned char *
file_with_magic(const char *magic, size_t *len)
{
    journal_publish();
    unsigned char *f = malloc(JOURNAL_MAGIC_LEN + to_file.len);
    ck_assert_ptr_nonnull(f);
    memcpy(f, magic, JOURNAL_MAGIC_LEN);
    memcpy(f + JOURNAL_MAGIC_LEN, to_file.p, to_file.len);
    *len = JOURNAL_MAGIC_LEN + to_file.len;
    return f;
}

static unsigned char *
file_of_buffer(size_t *len)
{
    return file_with_magic(JOURNAL_MAGIC, len);
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
    free(f);
    free(g);
}
END_TEST

START_TEST(test_both_sinks_get_the_same_pass_once)
{
    journal_attach(JOURNAL_SINK_REPLICAS, replicas_sink);
    ck_assert(srv.journal_on);
    three_records();
    ck_assert_uint_gt(journal_pending(), 0);
    journal_publish();
    ck_assert_int_eq(to_file.calls, 1);
    ck_assert_int_eq(to_replicas.calls, 1);
    ck_assert(to_file.complete && to_replicas.complete);
    ck_assert_uint_eq(to_file.len, to_replicas.len);
    ck_assert_mem_eq(to_file.p, to_replicas.p, to_file.len);
    ck_assert_uint_eq(journal_pending(), 0);
    journal_publish();                  /* nothing new: nobody called */
    ck_assert_int_eq(to_file.calls, 1);
    journal_publish_upstream("abc", 3); /* a primary's: the file only */
    ck_assert_int_eq(to_file.calls, 2);
    ck_assert_int_eq(to_replicas.calls, 1);
    ck_assert_mem_eq(to_file.p, "abc", 3);
}
END_TEST

/* The ops of the records (a group's inner ones after a 'G') one sink got. */
static void
ops_of(const struct capture *c, char *out)
{
    struct journal_reader r, in;
    struct journal_record rec, x;
    journal_reader_records(&r, c->p, c->len, JOURNAL_VERSION);
    while (journal_next(&r, &rec) == JOURNAL_RECORD) {
        if (rec.op != JOURNAL_GROUP) {
            *out++ = (char)('0' + rec.op);
            continue;
        }
        *out++ = 'G';
        journal_reader_records(&in, rec.state, rec.state_len, rec.version);
        while (journal_next(&in, &x) == JOURNAL_RECORD) {
            *out++ = (char)('0' + x.op);
        }
    }
    *out = '\0';
}

START_TEST(test_set_sinks_narrows_records_and_groups_per_sink)
{
    char file[32], replicas[32];
    journal_attach(JOURNAL_SINK_REPLICAS, replicas_sink);
    ck_assert(journal_add_flush(0));                    /* 3: to both */
    journal_group_begin();
    ck_assert(journal_add_del(0, "a", 1));              /* 2: both */
    journal_set_sinks(1u << JOURNAL_SINK_FILE);
    ck_assert(journal_add_swap(1, 2));                  /* 4: file */
    journal_set_sinks(1u << JOURNAL_SINK_REPLICAS);
    ck_assert(journal_add_flush(1));                    /* 3: replicas */
    journal_set_sinks(0);
    ck_assert(journal_add_del(0, "b", 1));              /* 2: neither */
    journal_set_sinks(JOURNAL_TO_ALL);
    ck_assert(journal_add_swap(3, 4));                  /* 4: both */
    journal_group_end();
    journal_group_begin();
    journal_set_sinks(1u << JOURNAL_SINK_FILE);
    ck_assert(journal_add_del(0, "c", 1));              /* 2: file, alone */
    journal_set_sinks(JOURNAL_TO_ALL);
    journal_group_end();
    journal_publish();
    ops_of(&to_file, file);
    ops_of(&to_replicas, replicas);
    ck_assert_str_eq(file, "3G2442");
    ck_assert_str_eq(replicas, "3G234");
    ck_assert(to_file.complete && to_replicas.complete);
    /* The next pass goes to both again, whole. */
    ck_assert(journal_add_del(0, "d", 1));
    journal_publish();
    ck_assert_uint_eq(to_file.len, to_replicas.len);
    ck_assert_mem_eq(to_file.p, to_replicas.p, to_file.len);
}
END_TEST

START_TEST(test_no_sink_no_records)
{
    journal_attach(JOURNAL_SINK_FILE, NULL);
    ck_assert(!srv.journal_on);
    ck_assert(!journal_attached(JOURNAL_SINK_FILE));
}
END_TEST

START_TEST(test_a_groups_records_are_one_record)
{
    size_t len;
    ck_assert(journal_add_del(0, "before", 6));
    journal_group_begin();
    three_records();
    journal_group_begin();              /* nested: part of the outer */
    ck_assert(journal_add_flush(JOURNAL_ALL_DBS));
    journal_group_end();
    journal_group_end();
    unsigned char *f = file_of_buffer(&len);
    struct journal_reader r, in;
    struct journal_record rec;
    ck_assert(journal_reader_init(&r, f, len));
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert(rec.op == JOURNAL_DEL && rec.keylen == 6);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(rec.op, JOURNAL_GROUP);
    ck_assert_uint_eq(rec.count, 4);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_END);
    /* Inside: the four records as written. */
    ck_assert(journal_reader_init(&r, f, len));
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    journal_reader_records(&in, rec.state, rec.state_len, rec.version);
    uint8_t ops[] = { JOURNAL_SET, JOURNAL_DEL, JOURNAL_SWAP, JOURNAL_FLUSH };
    for (int i = 0; i < 4; i++) {
        struct journal_record x;
        ck_assert_int_eq(journal_next(&in, &x), JOURNAL_RECORD);
        ck_assert_int_eq(x.op, ops[i]);
    }
    ck_assert_int_eq(journal_next(&in, &rec), JOURNAL_END);
    free(f);
}
END_TEST

START_TEST(test_a_group_of_one_stays_a_plain_record)
{
    size_t len;
    journal_group_begin();
    ck_assert(journal_add_swap(4, 5));
    journal_group_end();
    journal_group_begin();              /* an empty group leaves nothing */
    journal_group_end();
    unsigned char *f = file_of_buffer(&len);
    struct journal_reader r;
    struct journal_record rec;
    ck_assert(journal_reader_init(&r, f, len));
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert(rec.op == JOURNAL_SWAP && rec.db == 4 && rec.db2 == 5);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_END);
    free(f);
}
END_TEST

/* A cut anywhere inside a group loses the whole group, never a part. */
START_TEST(test_a_torn_group_is_lost_whole)
{
    size_t len;
    ck_assert(journal_add_del(0, "before", 6));
    journal_group_begin();
    three_records();
    journal_group_end();
    unsigned char *f = file_of_buffer(&len);
    size_t group_at = JOURNAL_MAGIC_LEN + JOURNAL_HEADER_LEN + 1 + 4 + 6;
    for (size_t cut = group_at + 1; cut < len; cut++) {
        struct journal_reader r;
        struct journal_record rec;
        ck_assert(journal_reader_init(&r, f, cut));
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(rec.op, JOURNAL_DEL);
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_TORN);
        ck_assert_uint_eq(r.off, group_at);
    }
    free(f);
}
END_TEST

START_TEST(test_an_element_effect_reads_back)
{
    size_t len;
    ck_assert(journal_add_elem(2, 9, "list", 4, 777, 3, "elem", 4));
    unsigned char *f = file_of_buffer(&len);
    struct journal_reader r;
    struct journal_record rec;
    ck_assert(journal_reader_init(&r, f, len));
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
    ck_assert_int_eq(rec.op, JOURNAL_ELEM);
    ck_assert(rec.db == 2 && rec.type == 9 && rec.expire_at == 777 &&
              rec.elem_op == 3);
    ck_assert(rec.keylen == 4 && memcmp(rec.key, "list", 4) == 0);
    ck_assert(rec.state_len == 4 && memcmp(rec.state, "elem", 4) == 0);
    ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_END);
    free(f);
}
END_TEST

/* Files of versions 1 and 2 read as they always did, their expiry (the
 * ns a key was dead from) handed over as the ms it lives through. */
START_TEST(test_version_1_and_2_files_read)
{
    static const char *const magic[] = { JOURNAL_MAGIC_V1, JOURNAL_MAGIC_V2 };
    for (int v = 0; v < 2; v++) {
        size_t len;
        /* Dead from 1700000000123.000001 ms: lives through ...123. */
        ck_assert(journal_add_set(3, 1, "key", 3, INT64_C(1700000000123000001),
                                  "\x01", 1));
        ck_assert(journal_add_set(3, 1, "exact", 5,
                                  INT64_C(1700000000124000000), "\x01", 1));
        ck_assert(journal_add_set(3, 1, "never", 5, INT64_MAX, "\x01", 1));
        ck_assert(journal_add_swap(1, 2));
        unsigned char *f = file_with_magic(magic[v], &len);
        struct journal_reader r;
        struct journal_record rec;
        ck_assert(journal_reader_init(&r, f, len));
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(rec.version, v + 1);
        ck_assert_int_eq(rec.expire_at, INT64_C(1700000000123));
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(rec.expire_at, INT64_C(1700000000123));
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(rec.expire_at, STORE_NEVER);
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_RECORD);
        ck_assert_int_eq(journal_next(&r, &rec), JOURNAL_END);
        memcpy(f, "CGJRNL04", 8);           /* a version this build lacks */
        ck_assert(!journal_reader_init(&r, f, len));
        free(f);
    }
}
END_TEST

Suite *
journal_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc = tcase_create("records");
    tcase_add_checked_fixture(tc, attach_sinks, detach_sinks);
    tcase_add_test(tc, test_records_read_back_as_written);
    tcase_add_test(tc, test_a_cut_anywhere_in_the_last_record_is_torn);
    tcase_add_test(tc, test_a_flipped_byte_before_the_last_record_is_damage);
    tcase_add_test(tc, test_zeros_where_the_file_grew_are_a_torn_tail);
    tcase_add_test(tc, test_both_sinks_get_the_same_pass_once);
    tcase_add_test(tc, test_no_sink_no_records);
    tcase_add_test(tc, test_a_groups_records_are_one_record);
    tcase_add_test(tc, test_a_group_of_one_stays_a_plain_record);
    tcase_add_test(tc, test_a_torn_group_is_lost_whole);
    tcase_add_test(tc, test_an_element_effect_reads_back);
    tcase_add_test(tc, test_version_1_and_2_files_read);
    tcase_add_test(tc, test_set_sinks_narrows_records_and_groups_per_sink);
    suite_add_tcase(s, tc);
    return s;
}
