/*
 * check_manifest.c - the journal's manifest as text
 * (server/persist/manifest.c): entries written as lines read back the
 * same, every kind of malformed line refused, the names and lines it
 * takes.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "server/persist/manifest.h"
#include "tests/unit/suites.h"

static struct aof_file
entry(const char *name, uint64_t seq, char type)
{
    struct aof_file f;
    memset(&f, 0, sizeof(f));
    snprintf(f.name, sizeof(f.name), "%s", name);
    f.seq = seq;
    f.type = type;
    return f;
}

/* One line into an empty manifest: manifest_add_line's answer. */
static int
add_one(const char *line, struct aof_file *out)
{
    static struct manifest m;
    memset(&m, 0, sizeof(m));
    int rc = manifest_add_line(&m, line);
    ck_assert_uint_eq(m.n, rc == 1 ? 1 : 0);
    if (rc == 1 && out != NULL) {
        *out = m.f[0];
    }
    return rc;
}

START_TEST(test_entries_written_as_lines_read_back_the_same)
{
    static struct manifest m, back;
    memset(&m, 0, sizeof(m));
    memset(&back, 0, sizeof(back));
    m.f[0] = entry("appendonly.aof.7.base.snap", 7, 'b');
    m.f[1] = entry("appendonly.aof.7.incr.journal", 7, 'i');
    m.f[2] = entry("appendonly.aof.8.incr.journal", 8, 'i');
    m.f[3] = entry("x", UINT64_MAX, 'i');
    m.n = 4;
    char text[4 * MANIFEST_LINE_LEN] = "";
    size_t used = 0;
    for (size_t i = 0; i < m.n; i++) {
        char line[MANIFEST_LINE_LEN];
        int k = manifest_format_line(&m.f[i], line, sizeof(line));
        ck_assert_int_gt(k, 0);
        ck_assert_uint_lt((size_t)k, sizeof(line));
        ck_assert_int_eq(line[k - 1], '\n');
        ck_assert_int_eq(manifest_add_line(&back, line), 1);
        memcpy(text + used, line, (size_t)k + 1);
        used += (size_t)k;
    }
    ck_assert_str_eq(text,
                     "file appendonly.aof.7.base.snap seq 7 type b\n"
                     "file appendonly.aof.7.incr.journal seq 7 type i\n"
                     "file appendonly.aof.8.incr.journal seq 8 type i\n"
                     "file x seq 18446744073709551615 type i\n");
    ck_assert_uint_eq(back.n, m.n);
    for (size_t i = 0; i < m.n; i++) {
        ck_assert_str_eq(back.f[i].name, m.f[i].name);
        ck_assert_uint_eq(back.f[i].seq, m.f[i].seq);
        ck_assert_int_eq(back.f[i].type, m.f[i].type);
    }
}
END_TEST

/* The longest name (511 bytes) fits a line both ways. */
START_TEST(test_the_longest_name_round_trips)
{
    struct aof_file f, g;
    char name[MANIFEST_NAME_LEN];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    f = entry(name, 3, 'b');
    char line[MANIFEST_LINE_LEN];
    int k = manifest_format_line(&f, line, sizeof(line));
    ck_assert_uint_lt((size_t)k, sizeof(line));
    ck_assert_int_eq(add_one(line, &g), 1);
    ck_assert_str_eq(g.name, name);
    ck_assert_uint_eq(g.seq, 3);
    /* One byte more is no entry. */
    char longer[MANIFEST_LINE_LEN + 8];
    snprintf(longer, sizeof(longer), "file n%s seq 3 type b\n", name);
    ck_assert_int_eq(add_one(longer, NULL), -1);
}
END_TEST

START_TEST(test_blank_lines_and_comments_are_skipped)
{
    static struct manifest m;
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(manifest_add_line(&m, "\n"), 0);
    ck_assert_int_eq(manifest_add_line(&m, "# written by cellgate\n"), 0);
    ck_assert_int_eq(manifest_add_line(&m, "#file a seq 1 type b\n"), 0);
    ck_assert_uint_eq(m.n, 0);
    ck_assert_int_eq(manifest_add_line(&m, "file a seq 1 type b\n"), 1);
    ck_assert_int_eq(manifest_add_line(&m, "\n"), 0);
    ck_assert_int_eq(manifest_add_line(&m, "file b seq 2 type i"), 1);
    ck_assert_uint_eq(m.n, 2);
    ck_assert_str_eq(m.f[1].name, "b");
}
END_TEST

/* Every way a line can fail to be an entry. */
START_TEST(test_every_malformed_line_is_refused)
{
    static const char *const bad[] = {
        "",                                     /* nothing (no newline) */
        " \n",                                  /* only a space */
        " file a seq 1 type b\n",               /* indented */
        "file\n",
        "file a\n",
        "file a seq\n",
        "file a seq 1\n",
        "file a seq 1 type\n",
        "files a seq 1 type b\n",               /* other words */
        "File a seq 1 type b\n",
        "file a sequence 1 type b\n",
        "file a seq 1 kind b\n",
        "file a seq x type b\n",                /* not a number */
        "file a seq  type b\n",
        "file a seq 1 type c\n",                /* no such type */
        "file a seq 1 type B\n",
        "file a seq 1 type bi\n",
        "file a seq 1 type base\n",
        "file dir/a seq 1 type b\n",            /* a path, not a name */
        "file /a seq 1 type b\n",
        "file ../a seq 1 type i\n",
        "file a/ seq 1 type i\n",
        "type b seq 1 file a\n",                /* another order */
        "seq 1 file a type b\n",
    };
    size_t n = sizeof(bad) / sizeof(*bad);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(add_one(bad[i], NULL) == -1, "took \"%s\"", bad[i]);
    }
    ck_assert_uint_eq(n, 24);
}
END_TEST

/* A base only first; at most MANIFEST_MAX entries. */
START_TEST(test_a_late_base_and_a_full_manifest_are_refused)
{
    static struct manifest m;
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(manifest_add_line(&m, "file i1 seq 1 type i\n"), 1);
    ck_assert_int_eq(manifest_add_line(&m, "file b2 seq 2 type b\n"), -1);
    ck_assert_uint_eq(m.n, 1);
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(manifest_add_line(&m, "file b1 seq 1 type b\n"), 1);
    ck_assert_int_eq(manifest_add_line(&m, "file b2 seq 2 type b\n"), -1);
    for (int i = 1; i < MANIFEST_MAX; i++) {
        char line[64];
        snprintf(line, sizeof(line), "file i%d seq %d type i\n", i, i);
        ck_assert_int_eq(manifest_add_line(&m, line), 1);
    }
    ck_assert_uint_eq(m.n, MANIFEST_MAX);
    ck_assert_int_eq(manifest_add_line(&m, "file one.more seq 99 type i\n"),
                     -1);
    ck_assert_uint_eq(m.n, MANIFEST_MAX);
    ck_assert_str_eq(m.f[MANIFEST_MAX - 1].name, "i63");
    ck_assert_int_eq(manifest_add_line(&m, "# still a comment\n"), 0);
}
END_TEST

/* What it takes: a name is one word of any bytes but '/', whitespace
 * around the words is free, and what follows the type is not read. */
START_TEST(test_the_names_and_lines_it_takes)
{
    static const struct {
        const char *line;
        const char *name;
        uint64_t seq;
        char type;
    } good[] = {
        { "file appendonly.aof.1.base.snap seq 1 type b\n",
          "appendonly.aof.1.base.snap", 1, 'b' },
        { "file a seq 0 type i\n", "a", 0, 'i' },
        { "file my-journal_2.incr seq 2 type i\n", "my-journal_2.incr", 2,
          'i' },
        { "file caf\xc3\xa9.snap seq 3 type b\n", "caf\xc3\xa9.snap", 3, 'b' },
        { "file a:b@c seq 4 type i\n", "a:b@c", 4, 'i' },
        { "file  a   seq\t5  type  i  \n", "a", 5, 'i' },
        { "file a seq 007 type i\n", "a", 7, 'i' },
        { "file a seq 6 type b trailing words\n", "a", 6, 'b' },
        { "file a seq 18446744073709551615 type i\n", "a", UINT64_MAX, 'i' },
    };
    size_t n = sizeof(good) / sizeof(*good);
    for (size_t i = 0; i < n; i++) {
        struct aof_file f;
        ck_assert_msg(add_one(good[i].line, &f) == 1, "refused \"%s\"",
                      good[i].line);
        ck_assert_str_eq(f.name, good[i].name);
        ck_assert_uint_eq(f.seq, good[i].seq);
        ck_assert_int_eq(f.type, good[i].type);
    }
    ck_assert_uint_eq(n, 9);
}
END_TEST

Suite *
manifest_suite(void)
{
    Suite *s = suite_create("manifest");
    TCase *tc = tcase_create("lines");
    tcase_add_test(tc, test_entries_written_as_lines_read_back_the_same);
    tcase_add_test(tc, test_the_longest_name_round_trips);
    tcase_add_test(tc, test_blank_lines_and_comments_are_skipped);
    tcase_add_test(tc, test_every_malformed_line_is_refused);
    tcase_add_test(tc, test_a_late_base_and_a_full_manifest_are_refused);
    tcase_add_test(tc, test_the_names_and_lines_it_takes);
    suite_add_tcase(s, tc);
    return s;
}
