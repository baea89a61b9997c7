/*
 * check_backlog.c - the replication backlog (server/repl/backlog.c) on its
 * own: appends, wrap-around, reading from an offset inside or outside
 * what it holds, its size bound, checked against the whole stream kept
 * aside. Then the primary's stream through replication.h with in-process
 * replicas and no sockets: what PSYNC continues with, the bytes of a
 * CG.EFFECTS and a GETACK, ACKs and WAIT. (Only partial resyncs: a full
 * one forks a snapshot child.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/textbuf.h"
#include "protocol/obuf.h"
#include "server/client.h"
#include "server/journal.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/repl/backlog.h"
#include "server/repl/replication.h"
#include "server/server.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

/* Copy from `from` after `end` bytes: the bytes, or NULL when refused. */
static char *
copy(const struct repl_backlog *b, int64_t end, int64_t from, size_t *n)
{
    struct obuf o;
    obuf_init(&o);
    bool ok = repl_backlog_copy(b, end, from, &o);
    char *got = fx_take(&o, n);
    obuf_deinit(&o);
    if (!ok) {
        ck_assert_uint_eq(*n, 0);   /* nothing appended when refused */
        free(got);
        return NULL;
    }
    return got;
}

/* ------------------------------------------------------------------------
 * The ring
 * --------------------------------------------------------------------- */

START_TEST(test_offsets_inside_are_served_and_outside_refused)
{
    struct repl_backlog b;
    size_t n;
    ck_assert(repl_backlog_init(&b, 16));
    ck_assert_uint_eq(b.histlen, 0);
    /* Empty: only the next byte (offset 1) can be asked for. */
    char *got = copy(&b, 0, 1, &n);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(n, 0);
    free(got);
    ck_assert_ptr_null(copy(&b, 0, 2, &n));
    ck_assert_ptr_null(copy(&b, 0, 0, &n));

    repl_backlog_append(&b, "abcdefghij", 10);
    ck_assert_uint_eq(b.histlen, 10);
    got = copy(&b, 10, 1, &n);
    ck_assert_str_eq(got, "abcdefghij");
    free(got);
    got = copy(&b, 10, 5, &n);
    ck_assert_str_eq(got, "efghij");
    free(got);
    got = copy(&b, 10, 10, &n);
    ck_assert_str_eq(got, "j");
    free(got);
    got = copy(&b, 10, 11, &n);                 /* has it all already */
    ck_assert_str_eq(got, "");
    free(got);
    ck_assert_ptr_null(copy(&b, 10, 12, &n));   /* the future */
    ck_assert_ptr_null(copy(&b, 10, 0, &n));    /* before the stream */
    ck_assert_ptr_null(copy(&b, 10, -5, &n));
    repl_backlog_free(&b);
    ck_assert_ptr_null(b.p);
}
END_TEST

START_TEST(test_a_wrapped_ring_holds_the_last_size_bytes)
{
    struct repl_backlog b;
    size_t n;
    ck_assert(repl_backlog_init(&b, 16));
    /* 40 bytes in pieces of 7 (the last of 5): wraps twice. */
    const char *stream = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcd";
    for (size_t off = 0; off < 40; off += 7) {
        repl_backlog_append(&b, stream + off, off + 7 <= 40 ? 7 : 40 - off);
    }
    ck_assert_uint_eq(b.histlen, 16);
    ck_assert_uint_eq(b.idx, 40 % 16);
    char *got = copy(&b, 40, 25, &n);           /* the first byte held */
    ck_assert_str_eq(got, "OPQRSTUVWXYZabcd");
    free(got);
    got = copy(&b, 40, 33, &n);
    ck_assert_str_eq(got, "WXYZabcd");
    free(got);
    ck_assert_ptr_null(copy(&b, 40, 24, &n));   /* overwritten */
    ck_assert_ptr_null(copy(&b, 40, 1, &n));
    /* One append larger than the ring keeps its last 16 bytes. */
    repl_backlog_append(&b, "the quick brown fox jumps over", 30);
    got = copy(&b, 70, 55, &n);
    ck_assert_str_eq(got, "n fox jumps over");
    free(got);
    ck_assert_ptr_null(copy(&b, 70, 54, &n));
    repl_backlog_free(&b);
}
END_TEST

/* Against the whole stream kept aside: for rings of several sizes and
 * appends of every size up to past the ring, every offset from before the
 * stream to past its end is served exactly when held, with those bytes. */
START_TEST(test_every_offset_against_the_stream_kept_aside)
{
    static unsigned char stream[4096];
    size_t checked = 0, refused = 0;
    for (size_t size = 1; size <= 33; size += 4) {
        for (size_t chunk = 1; chunk <= size + 3; chunk += 2) {
            struct repl_backlog b;
            ck_assert(repl_backlog_init(&b, size));
            size_t end = 0;
            for (int step = 0; step < 12; step++) {
                for (size_t i = 0; i < chunk; i++) {
                    stream[end + i] = (unsigned char)(end + i) * 31 + 7;
                }
                repl_backlog_append(&b, stream + end, chunk);
                end += chunk;
                ck_assert_uint_eq(b.histlen, end < size ? end : size);
                size_t first = end - b.histlen + 1;
                for (int64_t from = -1; from <= (int64_t)end + 2; from++) {
                    size_t n;
                    char *got = copy(&b, (int64_t)end, from, &n);
                    bool held = from >= (int64_t)first &&
                                from <= (int64_t)end + 1;
                    ck_assert_msg((got != NULL) == held,
                                  "size %zu chunk %zu end %zu from %lld",
                                  size, chunk, end, (long long)from);
                    if (got != NULL) {
                        ck_assert_uint_eq(n, end + 1 - (size_t)from);
                        if (n > 0) {
                            ck_assert_mem_eq(got, stream + from - 1, n);
                        }
                        checked++;
                    } else {
                        refused++;
                    }
                    free(got);
                }
            }
            repl_backlog_free(&b);
        }
    }
    ck_assert_uint_gt(checked, 10000);
    ck_assert_uint_gt(refused, 10000);
}
END_TEST

START_TEST(test_without_a_ring_nothing_is_kept_or_served)
{
    struct repl_backlog b = { 0 };
    size_t n;
    repl_backlog_append(&b, "abc", 3);
    ck_assert_uint_eq(b.histlen, 0);
    ck_assert_ptr_null(copy(&b, 3, 1, &n));
    ck_assert_ptr_null(copy(&b, 0, 1, &n));
    repl_backlog_free(&b);
}
END_TEST

/* The ring is memory the server counts (INFO used_memory, maxmemory). */
START_TEST(test_the_ring_is_counted_memory)
{
    struct repl_backlog b;
    size_t before = mem_used();
    ck_assert(repl_backlog_init(&b, 1 << 20));
    ck_assert_uint_ge(mem_used(), before + (1 << 20));
    repl_backlog_free(&b);
    ck_assert_uint_eq(mem_used(), before);
}
END_TEST

/* ------------------------------------------------------------------------
 * The stream, through replication.h
 * --------------------------------------------------------------------- */

/* What the journal's other sink, attached by these tests beside the
 * replicas', was handed: the same bytes the stream carries. */
static unsigned char *pass;
static size_t pass_len;

static void
capture(const unsigned char *records, size_t len, bool complete)
{
    ck_assert(complete);
    free(pass);
    pass = malloc(len + 1);
    ck_assert_ptr_nonnull(pass);
    memcpy(pass, records, len);
    pass_len = len;
}

/* One DEL record of key, published to both sinks: the CG.EFFECTS command
 * the replicas get for it, in *cmd (malloc'd), its length returned. */
static size_t
feed_del(const char *key, char **cmd)
{
    ck_assert(journal_add_del(0, key, strlen(key)));
    journal_publish();
    char head[64];
    int h = snprintf(head, sizeof(head), "*2\r\n$10\r\nCG.EFFECTS\r\n$%zu\r\n",
                     pass_len);
    *cmd = malloc((size_t)h + pass_len + 2);
    ck_assert_ptr_nonnull(*cmd);
    memcpy(*cmd, head, (size_t)h);
    memcpy(*cmd + h, pass, pass_len);
    memcpy(*cmd + h + pass_len, "\r\n", 2);
    return (size_t)h + pass_len + 2;
}

static struct conn *
new_client(const char *addr)
{
    struct conn *c = fx_client(2);
    snprintf(c->addr, sizeof(c->addr), "%s", addr);
    return c;
}

static void
free_client(struct conn *c)
{
    repl_forget(c);
    client_unfed(c);
    obuf_deinit(&c->out);
    free(c);
}

static void
stream_setup(void)
{
    unsigned char seed[16] = { 0x7e };
    log_set_level(LOG_WARNING);         /* no PSYNC notices in the output */
    journal_attach(JOURNAL_SINK_FILE, capture);
    ck_assert_int_eq(conf_init(&srv.conf), 0);
    server_apply_limits();
    ck_assert_int_eq(keyspace_init(seed, 0), 0);
    server_random_id(srv.replid);
}

static void
stream_teardown(void)
{
    repl_teardown();
    keyspace_teardown();
    journal_attach(JOURNAL_SINK_FILE, NULL);
    free(pass);
    pass = NULL;
    pass_len = 0;
    conf_deinit(&srv.conf);
    (void)client_take_fed();
    log_set_level(LOG_NOTICE);
}

static char *
info(void)
{
    struct textbuf t = { 0 };
    repl_info(&t);
    ck_assert(!t.oom);
    char *s = strndup(t.p, t.len);
    textbuf_free(&t);
    ck_assert_ptr_nonnull(s);
    return s;
}

static void
expect_info(const char *field)
{
    char *s = info();
    ck_assert_msg(strstr(s, field) != NULL, "no \"%s\" in\n%s", field, s);
    free(s);
}

/* The effect records of two writes, published: what the sinks got. */
static const unsigned char *
two_records(size_t *len)
{
    ck_assert(journal_add_set(0, KEY_INT, "k", 1, 123, "\1\2\3\4\5\6\7\10",
                              8));
    ck_assert(journal_add_del(3, "gone", 4));
    journal_publish();
    *len = pass_len;
    return pass;
}

START_TEST(test_psync_continues_and_the_stream_carries_effects)
{
    struct conn *r1 = new_client("10.0.0.1:6379");
    char want[256];
    size_t n;
    ck_assert(!repl_streaming());
    /* A replica that asks for the stream from its first byte continues. */
    ck_assert(repl_psync(r1, srv.replid, 40, 1));
    ck_assert(repl_streaming());
    ck_assert(srv.journal_on);           /* every write a record from now */
    ck_assert_uint_eq(repl_replica_count(), 1);
    ck_assert(repl_is_replica_client(r1));
    snprintf(want, sizeof(want), "+CONTINUE %s\r\n", srv.replid);
    char *got = fx_take(&r1->out, &n);
    ck_assert_str_eq(got, want);
    free(got);
    expect_info("master_repl_offset:0\r\n");
    expect_info("repl_backlog_active:1\r\n");

    size_t rlen;
    const unsigned char *recs = two_records(&rlen);
    unsigned char *copy_of = malloc(rlen);
    ck_assert_ptr_nonnull(copy_of);
    memcpy(copy_of, recs, rlen);
    journal_publish();                  /* nothing new: no command */
    int head = snprintf(want, sizeof(want),
                        "*2\r\n$10\r\nCG.EFFECTS\r\n$%zu\r\n", rlen);
    size_t first_len = (size_t)head + rlen + 2;
    got = fx_take(&r1->out, &n);
    ck_assert_uint_eq(n, first_len);
    ck_assert_mem_eq(got, want, (size_t)head);
    ck_assert_mem_eq(got + head, copy_of, rlen);
    ck_assert_mem_eq(got + head + rlen, "\r\n", 2);
    /* The payload is the records, as a replica applies them. */
    struct journal_reader rd;
    journal_reader_records(&rd, (const unsigned char *)got + head, rlen,
                           JOURNAL_VERSION);
    struct journal_record rec;
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert(rec.op == JOURNAL_SET && rec.keylen == 1 && rec.key[0] == 'k');
    ck_assert_int_eq(rec.expire_at, 123);
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_RECORD);
    ck_assert(rec.op == JOURNAL_DEL && rec.db == 3);
    ck_assert_int_eq(journal_next(&rd, &rec), JOURNAL_END);
    char line[64];
    snprintf(line, sizeof(line), "master_repl_offset:%zu\r\n", first_len);
    expect_info(line);
    snprintf(line, sizeof(line), "repl_backlog_histlen:%zu\r\n", first_len);
    expect_info(line);
    expect_info("repl_backlog_first_byte_offset:1\r\n");

    /* A second command, then replicas that continue from inside. */
    char *second;
    size_t second_len = feed_del("xyz", &second);
    char *all = malloc(first_len + second_len);
    ck_assert_ptr_nonnull(all);
    memcpy(all, got, first_len);
    memcpy(all + first_len, second, second_len);
    free(got);
    size_t total = first_len + second_len;
    got = fx_take(&r1->out, &n);                  /* online: it came live */
    ck_assert_uint_eq(n, second_len);
    ck_assert_mem_eq(got, second, second_len);
    free(got);

    struct conn *r2 = new_client("10.0.0.2:6379");
    ck_assert(repl_psync(r2, srv.replid, 40, 1));
    got = fx_take(&r2->out, &n);
    size_t cont = strlen("+CONTINUE \r\n") + 40;
    ck_assert_uint_eq(n, cont + total);
    ck_assert_mem_eq(got + cont, all, total);
    free(got);

    struct conn *r3 = new_client("10.0.0.3:6379");
    ck_assert(repl_psync(r3, srv.replid, 40, (int64_t)first_len + 1));
    got = fx_take(&r3->out, &n);
    ck_assert_uint_eq(n, cont + second_len);
    ck_assert_mem_eq(got + cont, second, second_len);
    free(got);

    struct conn *r4 = new_client("10.0.0.4:6379");
    ck_assert(repl_psync(r4, srv.replid, 40, (int64_t)total + 1));
    got = fx_take(&r4->out, &n);
    ck_assert_uint_eq(n, cont);                 /* up to date */
    free(got);
    ck_assert_uint_eq(repl_replica_count(), 4);

    /* Each online replica gets what comes next, once. */
    char *third;
    size_t third_len = feed_del("!", &third);
    struct conn *rs[4] = { r1, r2, r3, r4 };
    expect_info("connected_slaves:4\r\n");
    for (int i = 0; i < 4; i++) {
        got = fx_take(&rs[i]->out, &n);
        ck_assert_uint_eq(n, third_len);
        ck_assert_mem_eq(got, third, third_len);
        free(got);
    }
    free(second);
    free(third);
    (void)client_take_fed();
    free(all);
    free(copy_of);
    for (int i = 0; i < 4; i++) {
        free_client(rs[i]);
    }
    ck_assert_uint_eq(repl_replica_count(), 0);
}
END_TEST

/* WAIT: a client waits for ACKs; the stream asks the replicas for them
 * (REPLCONF GETACK *), and an ACK up to the offset answers it. */
START_TEST(test_wait_asks_for_acks_and_an_ack_answers_it)
{
    struct conn *r = new_client("10.0.0.9:6380");
    struct conn *w = new_client("127.0.0.1:5000");
    size_t n;
    ck_assert(repl_psync(r, srv.replid, 40, 1));
    free(fx_take(&r->out, &n));
    char *cmd;
    (void)feed_del("abc", &cmd);
    free(cmd);
    free(fx_take(&r->out, &n));
    int64_t offset = (int64_t)n;
    ck_assert_uint_eq(repl_acked_now(), 0);

    ck_assert(repl_wait(w, 1, 0));              /* it waits */
    static const char getack[] =
        "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";
    char *got = fx_take(&r->out, &n);
    ck_assert_str_eq(got, getack);
    free(got);
    ck_assert_uint_eq(obuf_pending(&w->out), 0);

    /* An ACK short of the WAIT's offset answers nothing. */
    char num[24];
    snprintf(num, sizeof(num), "%lld", (long long)offset - 1);
    repl_replconf(r, "ACK", 3, num, strlen(num));
    ck_assert_uint_eq(obuf_pending(&w->out), 0);
    snprintf(num, sizeof(num), "%lld", (long long)offset);
    repl_replconf(r, "ack", 3, num, strlen(num));
    got = fx_take(&w->out, &n);
    ck_assert_str_eq(got, ":1\r\n");
    free(got);
    ck_assert(w->requests & CLIENT_UNBLOCKED);
    /* The GETACK is stream too: acked up to before it. */
    ck_assert_uint_eq(repl_acked_now(), 0);
    snprintf(num, sizeof(num), "%lld",
             (long long)offset + (long long)sizeof(getack) - 1);
    repl_replconf(r, "ack", 3, num, strlen(num));
    ck_assert_uint_eq(repl_acked_now(), 1);
    /* Already met: no waiting. */
    ck_assert(!repl_wait(w, 1, 0));
    (void)client_take_fed();
    free_client(w);
    free_client(r);
}
END_TEST

Suite *
backlog_suite(void)
{
    Suite *s = suite_create("backlog");
    TCase *tc = tcase_create("ring");
    tcase_add_test(tc, test_offsets_inside_are_served_and_outside_refused);
    tcase_add_test(tc, test_a_wrapped_ring_holds_the_last_size_bytes);
    tcase_add_test(tc, test_every_offset_against_the_stream_kept_aside);
    tcase_add_test(tc, test_without_a_ring_nothing_is_kept_or_served);
    tcase_add_test(tc, test_the_ring_is_counted_memory);
    suite_add_tcase(s, tc);

    tc = tcase_create("stream");
    tcase_add_checked_fixture(tc, stream_setup, stream_teardown);
    tcase_add_test(tc, test_psync_continues_and_the_stream_carries_effects);
    tcase_add_test(tc, test_wait_asks_for_acks_and_an_ack_answers_it);
    suite_add_tcase(s, tc);
    return s;
}
