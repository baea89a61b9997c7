/*
 * check_pubsub.c - channels and patterns (server/pubsub.c, with the real
 * SUBSCRIBE/PUBLISH/PUBSUB handlers) among in-process clients, no
 * sockets: who is subscribed to what, which clients a PUBLISH reaches and
 * the exact bytes each gets, the counts PUBSUB gives, and the channel
 * table's keyed hash.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "protocol/obuf.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/keyspace.h"
#include "server/pubsub.h"
#include "server/server.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

#define NCLIENTS 4

static const unsigned char seed_a[16] = { 0xa1, 0xa2, 0xa3 };
static const unsigned char seed_b[16] = { 0xb1, 0xb2, 0xb3 };
static struct conn *cl[NCLIENTS];

static struct conn *
new_client(int proto)
{
    return fx_client(proto);
}

static void
free_client(struct conn *c)
{
    pubsub_forget(c);
    client_unfed(c);
    obuf_deinit(&c->out);
    free(c);
}

static void
setup(void)
{
    ck_assert_int_eq(conf_init(&srv.conf), 0);
    server_apply_limits();
    ck_assert_int_eq(cmd_setup(command_table, command_count), 0);
    ck_assert_int_eq(keyspace_init(seed_a, 0), 0);
    srv.loop = uv_default_loop();
    for (int i = 0; i < NCLIENTS; i++) {
        cl[i] = new_client(2);
    }
}

static void
teardown(void)
{
    for (int i = 0; i < NCLIENTS; i++) {
        free_client(cl[i]);
    }
    ck_assert_uint_eq(pubsub_channel_total(), 0);
    ck_assert_uint_eq(pubsub_numpat(), 0);
    pubsub_teardown();
    keyspace_teardown();
    conf_deinit(&srv.conf);
}

/* Everything in c's output buffer, as a string the caller frees. */
static char *
take_output(struct conn *c)
{
    return fx_take(&c->out, NULL);
}

/* The clients client_note_fed() listed since the last call, as a bit
 * mask of cl[] (a client not in cl[] fails). */
static unsigned
fed_mask(void)
{
    unsigned mask = 0;
    int guard = 0;
    for (struct conn *c = client_take_fed(); c != NULL && guard++ < 64;
         c = c->next_fed) {
        int i = 0;
        while (i < NCLIENTS && cl[i] != c) {
            i++;
        }
        ck_assert_int_lt(i, NCLIENTS);
        ck_assert_msg(!(mask & (1u << i)), "client %d listed twice", i);
        mask |= 1u << i;
    }
    return mask;
}

/* ------------------------------------------------------------------------
 * Bookkeeping
 * --------------------------------------------------------------------- */

START_TEST(test_subscribe_answers_each_name_with_the_running_count)
{
    fx_expect("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
           "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n",
           fx_run(cl[0], "SUBSCRIBE", "a", "b", NULL));
    /* Again: no new subscription, the same count. */
    fx_expect("*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n",
           fx_run(cl[0], "SUBSCRIBE", "a", NULL));
    fx_expect("*3\r\n$10\r\npsubscribe\r\n$2\r\nn*\r\n:3\r\n",
           fx_run(cl[0], "PSUBSCRIBE", "n*", NULL));
    ck_assert_uint_eq(pubsub_count(cl[0], false), 2);
    ck_assert_uint_eq(pubsub_count(cl[0], true), 1);
    size_t len;
    ck_assert_str_eq(pubsub_name(cl[0], false, 0, &len), "a");
    ck_assert_str_eq(pubsub_name(cl[0], false, 1, &len), "b");
    ck_assert_str_eq(pubsub_name(cl[0], true, 0, &len), "n*");
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(pubsub_subscribe(cl[0], "a", 1, false), 0);
    ck_assert_int_eq(pubsub_subscribe(cl[0], "a", 1, true), 1);
    ck_assert_uint_eq(pubsub_count(cl[0], true), 2);
    ck_assert_uint_eq(pubsub_channel_total(), 2);
    ck_assert_uint_eq(fed_mask(), 0);   /* replies are no feeds */
}
END_TEST

START_TEST(test_unsubscribe_without_names_drops_all_in_order)
{
    free(fx_run(cl[0], "SUBSCRIBE", "x", "y", "z", NULL));
    free(fx_run(cl[0], "PSUBSCRIBE", "p*", NULL));
    fx_expect("*3\r\n$11\r\nunsubscribe\r\n$1\r\nx\r\n:3\r\n"
           "*3\r\n$11\r\nunsubscribe\r\n$1\r\ny\r\n:2\r\n"
           "*3\r\n$11\r\nunsubscribe\r\n$1\r\nz\r\n:1\r\n",
           fx_run(cl[0], "UNSUBSCRIBE", NULL));
    ck_assert_uint_eq(pubsub_count(cl[0], false), 0);
    ck_assert_uint_eq(pubsub_channel_total(), 0);
    /* Nothing left: a null name. */
    fx_expect("*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n",
           fx_run(cl[0], "UNSUBSCRIBE", NULL));
    /* A name never subscribed: answered, the count unchanged. */
    fx_expect("*3\r\n$12\r\npunsubscribe\r\n$2\r\nq*\r\n:1\r\n",
           fx_run(cl[0], "PUNSUBSCRIBE", "q*", NULL));
    ck_assert_int_eq(pubsub_unsubscribe(cl[0], "q*", 2, true), 0);
    fx_expect("*3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:0\r\n",
           fx_run(cl[0], "PUNSUBSCRIBE", NULL));
    ck_assert_uint_eq(pubsub_numpat(), 0);
}
END_TEST

/* A RESP2 client with subscriptions may only (un)subscribe, PING, QUIT
 * and RESET; a RESP3 one may do anything. */
START_TEST(test_a_subscribed_resp2_client_is_limited)
{
    free(fx_run(cl[0], "SUBSCRIBE", "c", NULL));
    fx_expect("-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE "
           "/ PING / QUIT / RESET are allowed in this context\r\n",
           fx_run(cl[0], "GET", "k", NULL));
    char *pong = fx_run(cl[0], "PING", NULL);
    ck_assert_int_ne(pong[0], '-');
    free(pong);
    cl[1]->proto = 3;
    free(fx_run(cl[1], "SUBSCRIBE", "c", NULL));
    fx_expect("_\r\n", fx_run(cl[1], "GET", "k", NULL));
}
END_TEST

/* ------------------------------------------------------------------------
 * Delivery
 * --------------------------------------------------------------------- */

START_TEST(test_publish_reaches_exactly_the_subscribers_in_their_protocol)
{
    cl[2]->proto = 3;
    free(fx_run(cl[0], "SUBSCRIBE", "news", NULL));
    free(fx_run(cl[1], "SUBSCRIBE", "other", NULL));
    free(fx_run(cl[2], "SUBSCRIBE", "news", NULL));
    free(fx_run(cl[2], "PSUBSCRIBE", "n*", NULL));
    ck_assert_uint_eq(fed_mask(), 0);
    fx_expect(":3\r\n", fx_run(cl[3], "PUBLISH", "news", "hello", NULL));
    ck_assert(cl[3]->requests & CLIENT_FEEDS);
    ck_assert_uint_eq(fed_mask(), (1u << 0) | (1u << 2));
    fx_expect("*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n",
           take_output(cl[0]));
    fx_expect("", take_output(cl[1]));
    fx_expect(">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
           ">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$5\r\nhello\r\n",
           take_output(cl[2]));
    /* Binary-safe: the message as given, NULs included. */
    ck_assert_uint_eq(pubsub_publish("other", 5, "a\0b", 3), 1);
    ck_assert_uint_eq(fed_mask(), 1u << 1);
    char *got = take_output(cl[1]);
    ck_assert_mem_eq(got, "*3\r\n$7\r\nmessage\r\n$5\r\nother\r\n$3\r\na\0b\r\n",
                     36);
    free(got);
    /* Nobody listens: nobody is fed. */
    fx_expect(":0\r\n", fx_run(cl[3], "PUBLISH", "silence", "x", NULL));
    ck_assert_uint_eq(fed_mask(), 0);
}
END_TEST

/* Patterns are Redis's globs, matched on every PUBLISH. */
START_TEST(test_patterns_match_as_redis_globs)
{
    static const struct {
        const char *pattern;
        const char *yes[3];
        const char *no[3];
    } cases[] = {
        { "h?llo", { "hello", "hallo", "hxllo" }, { "hllo", "heello", "Hello" } },
        { "h*llo", { "hllo", "heeeello", "hello" }, { "hell", "ahllo", "hllo!" } },
        { "h[ae]llo", { "hello", "hallo", "hello" }, { "hillo", "hllo", "haello" } },
        { "h[^e]llo", { "hallo", "hbllo", "h-llo" }, { "hello", "hllo", "haallo" } },
        { "h[a-c]llo", { "hallo", "hbllo", "hcllo" }, { "hdllo", "hello", "h-llo" } },
        { "h\\*llo", { "h*llo", "h*llo", "h*llo" }, { "hello", "hllo", "h**llo" } },
        /* As Redis: an empty name matches no pattern but the empty one. */
        { "*", { "x", "anything", "a.b.c" }, { "", NULL, NULL } },
    };
    size_t checked = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        ck_assert_int_eq(pubsub_subscribe(cl[0], cases[i].pattern,
                                          strlen(cases[i].pattern), true), 1);
        for (int k = 0; k < 3; k++) {
            const char *y = cases[i].yes[k], *n = cases[i].no[k];
            ck_assert_msg(pubsub_publish(y, strlen(y), "m", 1) == 1,
                          "%s should match %s", cases[i].pattern, y);
            char *got = take_output(cl[0]);
            ck_assert_ptr_nonnull(strstr(got, cases[i].pattern));
            free(got);
            checked++;
            if (n != NULL) {
                ck_assert_msg(pubsub_publish(n, strlen(n), "m", 1) == 0,
                              "%s should not match %s", cases[i].pattern, n);
                fx_expect("", take_output(cl[0]));
                checked++;
            }
        }
        ck_assert_int_eq(pubsub_unsubscribe(cl[0], cases[i].pattern,
                                            strlen(cases[i].pattern), true),
                         1);
    }
    ck_assert_uint_eq(checked, 40);
    (void)fed_mask();
}
END_TEST

/* A client matched by a channel and by patterns gets one message for each:
 * receivers counts deliveries, as Redis. */
START_TEST(test_one_client_gets_a_message_per_subscription_that_matches)
{
    ck_assert_int_eq(pubsub_subscribe(cl[0], "a.b", 3, false), 1);
    ck_assert_int_eq(pubsub_subscribe(cl[0], "a.*", 3, true), 1);
    ck_assert_int_eq(pubsub_subscribe(cl[0], "*.b", 3, true), 1);
    ck_assert_int_eq(pubsub_subscribe(cl[1], "a.*", 3, true), 1);
    ck_assert_uint_eq(pubsub_publish("a.b", 3, "m", 1), 4);
    ck_assert_uint_eq(fed_mask(), 3);
    char *got = take_output(cl[0]);
    size_t msgs = 0;
    for (const char *p = got; (p = strstr(p, "message\r\n")) != NULL; p++) {
        msgs++;
    }
    ck_assert_uint_eq(msgs, 3);
    free(got);
    ck_assert_uint_eq(pubsub_numpat(), 2);      /* "a.*" once */
}
END_TEST

/* A client that goes away is taken off every channel and pattern. */
START_TEST(test_a_forgotten_client_hears_nothing_more)
{
    free(fx_run(cl[0], "SUBSCRIBE", "c1", "c2", NULL));
    free(fx_run(cl[0], "PSUBSCRIBE", "c*", NULL));
    free(fx_run(cl[1], "SUBSCRIBE", "c1", NULL));
    ck_assert_uint_eq(pubsub_numsub("c1", 2), 2);
    pubsub_forget(cl[0]);
    ck_assert_ptr_null(cl[0]->subs);
    ck_assert_uint_eq(pubsub_numsub("c1", 2), 1);
    ck_assert_uint_eq(pubsub_numsub("c2", 2), 0);
    ck_assert_uint_eq(pubsub_channel_total(), 1);
    ck_assert_uint_eq(pubsub_numpat(), 0);
    ck_assert_uint_eq(pubsub_publish("c1", 2, "m", 1), 1);
    ck_assert_uint_eq(pubsub_publish("c2", 2, "m", 1), 0);
    ck_assert_uint_eq(fed_mask(), 1u << 1);
}
END_TEST

/* ------------------------------------------------------------------------
 * PUBSUB's counts
 * --------------------------------------------------------------------- */

START_TEST(test_pubsub_counts_channels_subscribers_and_unique_patterns)
{
    free(fx_run(cl[0], "SUBSCRIBE", "news.1", "news.2", "sport", NULL));
    free(fx_run(cl[1], "SUBSCRIBE", "news.1", NULL));
    free(fx_run(cl[1], "PSUBSCRIBE", "news.*", "x*", NULL));
    free(fx_run(cl[2], "PSUBSCRIBE", "news.*", NULL));
    fx_expect("*6\r\n$6\r\nnews.1\r\n:2\r\n$6\r\nnews.2\r\n:1\r\n"
           "$4\r\nnone\r\n:0\r\n",
           fx_run(cl[3], "PUBSUB", "NUMSUB", "news.1", "news.2", "none", NULL));
    fx_expect(":2\r\n", fx_run(cl[3], "PUBSUB", "NUMPAT", NULL));
    ck_assert_uint_eq(pubsub_channel_total(), 3);
    /* CHANNELS: each once, in table order; a pattern filters them. */
    char *all = fx_run(cl[3], "PUBSUB", "CHANNELS", NULL);
    ck_assert(strncmp(all, "*3\r\n", 4) == 0);
    ck_assert_ptr_nonnull(strstr(all, "$6\r\nnews.1\r\n"));
    ck_assert_ptr_nonnull(strstr(all, "$6\r\nnews.2\r\n"));
    ck_assert_ptr_nonnull(strstr(all, "$5\r\nsport\r\n"));
    free(all);
    char *news = fx_run(cl[3], "PUBSUB", "CHANNELS", "news.*", NULL);
    ck_assert(strncmp(news, "*2\r\n", 4) == 0);
    ck_assert_ptr_null(strstr(news, "sport"));
    free(news);
    struct pubsub_iter it = { 0, NULL };
    size_t len, seen = 0;
    while (pubsub_channel_next(&it, &len) != NULL && seen < 100) {
        seen++;
    }
    ck_assert_uint_eq(seen, 3);
}
END_TEST

/* ------------------------------------------------------------------------
 * The keyed hash
 * --------------------------------------------------------------------- */

#define NCHAN 64

/* Subscribe cl[0] to NCHAN channels (in order, or reversed) under seed
 * (the process's dict key, which main.c sets once), and the order the
 * table walks them in (indexes into the names). */
static void
walk_order(const unsigned char *seed, bool reversed, int order[NCHAN])
{
    keyspace_teardown();
    ck_assert_int_eq(keyspace_init(seed, 0), 0);
    dict_seed(seed);
    for (int i = 0; i < NCHAN; i++) {
        char name[16];
        int k = reversed ? NCHAN - 1 - i : i;
        snprintf(name, sizeof(name), "channel:%d", k);
        ck_assert_int_eq(pubsub_subscribe(cl[0], name, strlen(name), false),
                         1);
    }
    struct pubsub_iter it = { 0, NULL };
    const char *name;
    size_t len;
    int n = 0;
    while ((name = pubsub_channel_next(&it, &len)) != NULL && n < NCHAN + 1) {
        ck_assert_uint_gt(len, 8);
        order[n++] = atoi(name + 8);
    }
    ck_assert_int_eq(n, NCHAN);
    pubsub_forget(cl[0]);
    pubsub_teardown();
}

/* How far name `name` sits in walk y from where it sits in walk x. */
static int
displacement(const int x[NCHAN], const int y[NCHAN], int name)
{
    int px = -1, py = -1;
    for (int i = 0; i < NCHAN; i++) {
        px = x[i] == name ? i : px;
        py = y[i] == name ? i : py;
    }
    ck_assert(px >= 0 && py >= 0);
    return px > py ? px - py : py - px;
}

/* Within a process (one seed) a name always lands in the same bucket:
 * the table walks the same names in the same order, whichever order they
 * came in, but for names sharing a bucket. Another seed (another process)
 * places them elsewhere. */
START_TEST(test_channel_buckets_follow_the_seed)
{
    int a1[NCHAN], a2[NCHAN], ar[NCHAN], b1[NCHAN];
    walk_order(seed_a, false, a1);
    walk_order(seed_a, false, a2);
    walk_order(seed_a, true, ar);
    walk_order(seed_b, false, b1);
    ck_assert_mem_eq(a1, a2, sizeof(a1));
    ck_assert(memcmp(a1, b1, sizeof(a1)) != 0);
    /* Reversed insertion only reorders the names that share a bucket,
     * which stay together: each name moves a few places at most; under
     * another seed names land far from where they were. */
    int moved_a = 0, moved_b = 0, differ_b = 0;
    for (int i = 0; i < NCHAN; i++) {
        int d_a = displacement(a1, ar, i), d_b = displacement(a1, b1, i);
        moved_a = d_a > moved_a ? d_a : moved_a;
        moved_b = d_b > moved_b ? d_b : moved_b;
        differ_b += a1[i] != b1[i];
    }
    ck_assert_int_le(moved_a, 6);
    ck_assert_int_ge(moved_b, 16);
    ck_assert_int_ge(differ_b, NCHAN / 2);
    /* Neither walk is the order the names came in. */
    int in_order = 0;
    for (int i = 0; i < NCHAN; i++) {
        in_order += a1[i] == i;
    }
    ck_assert_int_lt(in_order, NCHAN / 2);
}
END_TEST

/* Each process draws its own seed (main.c: server_random_bytes): two
 * processes get two seeds. */
START_TEST(test_two_processes_draw_different_seeds)
{
    unsigned char got[2][16];
    for (int p = 0; p < 2; p++) {
        int fd[2];
        ck_assert_int_eq(pipe(fd), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            unsigned char s[16];
            close(fd[0]);
            server_random_bytes(s, sizeof(s));
            _exit(write(fd[1], s, sizeof(s)) == (ssize_t)sizeof(s) ? 0 : 1);
        }
        close(fd[1]);
        ck_assert_int_eq(read(fd[0], got[p], 16), 16);
        close(fd[0]);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    ck_assert(memcmp(got[0], got[1], 16) != 0);
    static const unsigned char zero[16];
    ck_assert(memcmp(got[0], zero, 16) != 0);
}
END_TEST

Suite *
pubsub_suite(void)
{
    Suite *s = suite_create("pubsub");
    TCase *tc = tcase_create("bookkeeping");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_subscribe_answers_each_name_with_the_running_count);
    tcase_add_test(tc, test_unsubscribe_without_names_drops_all_in_order);
    tcase_add_test(tc, test_a_subscribed_resp2_client_is_limited);
    tcase_add_test(tc, test_pubsub_counts_channels_subscribers_and_unique_patterns);
    suite_add_tcase(s, tc);

    tc = tcase_create("delivery");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_publish_reaches_exactly_the_subscribers_in_their_protocol);
    tcase_add_test(tc, test_patterns_match_as_redis_globs);
    tcase_add_test(tc, test_one_client_gets_a_message_per_subscription_that_matches);
    tcase_add_test(tc, test_a_forgotten_client_hears_nothing_more);
    suite_add_tcase(s, tc);

    tc = tcase_create("hash");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_channel_buckets_follow_the_seed);
    tcase_add_test(tc, test_two_processes_draw_different_seeds);
    suite_add_tcase(s, tc);
    return s;
}
