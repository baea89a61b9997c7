/*
 * check_multi.c - MULTI/EXEC and WATCH (server/multi.c, run by the real
 * dispatcher and handlers) with two in-process clients and no sockets:
 * requests built by hand, replies read back as bytes, the clock set by
 * hand so expiry is exact.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "protocol/obuf.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/keyspace.h"
#include "server/multi.h"
#include "server/server.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

#define MS   INT64_C(1000000)
#define SEC  (1000 * MS)
#define T0   (INT64_C(1700000000) * SEC)

static struct conn *a, *b;

static struct conn *
new_client(void)
{
    return fx_client(2);
}

static void
free_client(struct conn *c)
{
    multi_discard(c);
    multi_unwatch(c);
    obuf_deinit(&c->out);
    mem_free(c->name);
    free(c);
}

static void
setup(void)
{
    unsigned char seed[16] = { 0x3c };
    ck_assert_int_eq(conf_init(&srv.conf), 0);
    server_apply_limits();
    ck_assert_int_eq(cmd_setup(command_table, command_count), 0);
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    ck_assert_int_eq(keyspace_init(seed, T0), 0);
    srv.loop = uv_default_loop();
    a = new_client();
    b = new_client();
}

static void
teardown(void)
{
    free_client(a);
    free_client(b);
    ck_assert_uint_eq(srv.watched_keys, 0);
    keyspace_teardown();
    conf_deinit(&srv.conf);
    clock_set_fake_wall(0);
    clock_reset_clamp();
}

/* Run one command for c (NULL-terminated words); its reply as a string
 * the caller frees. The dispatcher leaves the selected database to the
 * client, as conn.c does. */
static char *
run(struct conn *c, const char *first, ...)
{
    ck_assert(keyspace_select(c->db));
    va_list ap;
    va_start(ap, first);
    char *out = fx_vrun(c, first, ap);
    va_end(ap);
    return out;
}

#define OK      "+OK\r\n"
#define QUEUED  "+QUEUED\r\n"
#define NULLARR "*-1\r\n"
/* INCREX's reply: the new value and the increment applied. */
#define INCR1   "*2\r\n:1\r\n:1\r\n"

static bool
key_exists(int db, const char *key)
{
    return store_lookup(keyspace_db(db), key, strlen(key),
                        clock_wall_now()) != NULL;
}

/* ------------------------------------------------------------------------
 * The queue
 * --------------------------------------------------------------------- */

START_TEST(test_exec_runs_the_queue_in_order_and_answers_every_reply)
{
    fx_expect(OK, run(a, "MULTI", NULL));
    ck_assert(multi_open(a, a->multi));
    fx_expect(QUEUED, run(a, "INCREX", "n", "BYINT", "5", NULL));
    fx_expect(QUEUED, run(a, "INCREX", "n", "BYINT", "2", NULL));
    fx_expect(QUEUED, run(a, "GET", "n", NULL));
    ck_assert_uint_eq(a->multi->ncmds, 3);
    ck_assert(!key_exists(0, "n"));             /* nothing ran yet */
    fx_expect("*3\r\n*2\r\n:5\r\n:5\r\n*2\r\n:7\r\n:2\r\n$1\r\n7\r\n",
           run(a, "EXEC", NULL));
    ck_assert_ptr_null(a->multi);               /* no state left */
    ck_assert_uint_eq(multi_memory(a), 0);
    fx_expect("$1\r\n7\r\n", run(b, "GET", "n", NULL));
}
END_TEST

START_TEST(test_discard_runs_nothing)
{
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(QUEUED, run(a, "INCREX", "n", NULL));
    fx_expect(OK, run(a, "DISCARD", NULL));
    ck_assert_ptr_null(a->multi);
    ck_assert(!key_exists(0, "n"));
    fx_expect("-ERR EXEC without MULTI\r\n", run(a, "EXEC", NULL));
    fx_expect("-ERR DISCARD without MULTI\r\n", run(a, "DISCARD", NULL));
}
END_TEST

START_TEST(test_an_empty_transaction_answers_an_empty_array)
{
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect("*0\r\n", run(a, "EXEC", NULL));
}
END_TEST

START_TEST(test_control_commands_inside_multi_are_answered_not_queued)
{
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect("-ERR MULTI calls can not be nested\r\n", run(a, "MULTI", NULL));
    fx_expect("-ERR WATCH inside MULTI is not allowed\r\n",
           run(a, "WATCH", "k", NULL));
    fx_expect(QUEUED, run(a, "INCREX", "k", NULL));
    ck_assert_uint_eq(a->multi->ncmds, 1);
    /* Neither refusal dirtied the transaction: it runs. */
    fx_expect("*1\r\n" INCR1, run(a, "EXEC", NULL));
}
END_TEST

/* A command refused while queuing (unknown, wrong arity, not allowed in a
 * transaction) makes EXEC abort and run nothing, as Redis 7. */
START_TEST(test_a_refused_command_aborts_the_transaction)
{
    static const char *const refused[][3] = {
        { "NOSUCH", "x", NULL },
        { "GET", NULL, NULL },
        { "SAVE", NULL, NULL },
    };
    static const char *const why[] = {
        "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n",
        "-ERR wrong number of arguments for 'get' command\r\n",
        "-ERR Command not allowed inside a transaction\r\n",
    };
    for (size_t i = 0; i < 3; i++) {
        fx_expect(OK, run(a, "MULTI", NULL));
        fx_expect(QUEUED, run(a, "INCREX", "n", NULL));
        fx_expect(why[i], run(a, refused[i][0], refused[i][1], NULL));
        ck_assert(a->multi->flags & MULTI_DIRTY_EXEC);
        /* Once dirty, nothing more is kept. */
        fx_expect(QUEUED, run(a, "INCREX", "m", NULL));
        ck_assert_uint_eq(a->multi->ncmds, 1);
        fx_expect("-EXECABORT Transaction discarded because of previous "
               "errors.\r\n", run(a, "EXEC", NULL));
        ck_assert_ptr_null(a->multi);
        ck_assert(!key_exists(0, "n") && !key_exists(0, "m"));
    }
}
END_TEST

/* The queue's memory is counted (CLIENT LIST's multi-mem, and the query
 * buffer limit conn.c applies with it) and given back by EXEC. */
START_TEST(test_the_queue_memory_is_counted_and_released)
{
    char big[1001];
    memset(big, 'v', 1000);
    big[1000] = '\0';
    ck_assert_uint_eq(multi_memory(a), 0);
    fx_expect(OK, run(a, "MULTI", NULL));
    size_t empty = multi_memory(a);
    ck_assert_uint_gt(empty, 0);
    size_t last = empty;
    for (int i = 0; i < 10; i++) {
        fx_expect(QUEUED, run(a, "ECHO", big, NULL));
        size_t now = multi_memory(a);
        /* Each holds at least its argument bytes. */
        ck_assert_uint_ge(now, last + 1000 + 4);
        last = now;
    }
    ck_assert_uint_ge(a->multi->bytes, 10 * (1000 + 1 + 4 + 1));
    char *got = run(a, "EXEC", NULL);
    ck_assert_uint_eq(strlen(got), 5 + 10 * (7 + 1000 + 2));
    ck_assert(strncmp(got, "*10\r\n$1000\r\nvvv", 15) == 0);
    free(got);
    ck_assert_uint_eq(multi_memory(a), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * WATCH
 * --------------------------------------------------------------------- */

START_TEST(test_a_key_written_by_another_client_fails_exec)
{
    fx_expect(OK, run(a, "WATCH", "k", NULL));
    fx_expect(INCR1, run(b, "INCREX", "k", NULL));
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(QUEUED, run(a, "INCREX", "k", "BYINT", "10", NULL));
    fx_expect(NULLARR, run(a, "EXEC", NULL));
    fx_expect("$1\r\n1\r\n", run(b, "GET", "k", NULL));    /* not run */
    ck_assert_ptr_null(a->multi);
    ck_assert_uint_eq(srv.watched_keys, 0);
}
END_TEST

START_TEST(test_an_untouched_watch_lets_exec_run)
{
    fx_expect(INCR1, run(b, "INCREX", "k", NULL));
    fx_expect(OK, run(a, "WATCH", "k", "other", NULL));
    ck_assert_uint_eq(srv.watched_keys, 2);
    fx_expect(INCR1, run(b, "INCREX", "unrelated", NULL));
    /* The same name in another database is another key. */
    b->db = 1;
    fx_expect(INCR1, run(b, "INCREX", "k", NULL));
    b->db = 0;
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(QUEUED, run(a, "INCREX", "k", NULL));
    fx_expect("*1\r\n*2\r\n:2\r\n:1\r\n", run(a, "EXEC", NULL));
    ck_assert_uint_eq(srv.watched_keys, 0);       /* EXEC unwatches */
}
END_TEST

START_TEST(test_unwatch_forgets_a_change)
{
    fx_expect(OK, run(a, "WATCH", "k", NULL));
    fx_expect(INCR1, run(b, "INCREX", "k", NULL));
    ck_assert(a->multi->flags & MULTI_DIRTY_CAS);
    fx_expect(OK, run(a, "UNWATCH", NULL));
    ck_assert_ptr_null(a->multi);
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(QUEUED, run(a, "INCREX", "k", NULL));
    fx_expect("*1\r\n*2\r\n:2\r\n:1\r\n", run(a, "EXEC", NULL));
}
END_TEST

/* A client's own write after its WATCH dirties it too (Redis). */
START_TEST(test_a_clients_own_write_dirties_its_watch)
{
    fx_expect(OK, run(a, "WATCH", "k", NULL));
    fx_expect(INCR1, run(a, "INCREX", "k", NULL));
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(QUEUED, run(a, "INCREX", "k", NULL));
    fx_expect(NULLARR, run(a, "EXEC", NULL));
}
END_TEST

START_TEST(test_two_watchers_of_a_key_both_hear_and_others_do_not)
{
    struct conn *c = new_client();
    fx_expect(OK, run(a, "WATCH", "k", NULL));
    fx_expect(OK, run(b, "WATCH", "k", NULL));
    fx_expect(OK, run(c, "WATCH", "j", NULL));
    fx_expect(OK, run(a, "WATCH", "k", NULL));         /* again: once */
    ck_assert_uint_eq(a->multi->nwatched, 1);
    ck_assert_uint_eq(srv.watched_keys, 2);
    struct conn *w = new_client();
    fx_expect(INCR1, run(w, "INCREX", "k", NULL));
    ck_assert(a->multi->flags & MULTI_DIRTY_CAS);
    ck_assert(b->multi->flags & MULTI_DIRTY_CAS);
    ck_assert(!(c->multi->flags & MULTI_DIRTY_CAS));
    ck_assert_uint_eq(srv.watched_keys, 1);       /* only j */
    free_client(c);
    free_client(w);
}
END_TEST

/* Deleting, expiring, flushing and swapping a watched key each count as a
 * change, as the code defines them. */
START_TEST(test_delete_expiry_flush_and_swap_dirty_the_watch)
{
    /* DEL */
    fx_expect(INCR1, run(b, "INCREX", "k", NULL));
    fx_expect(OK, run(a, "WATCH", "k", NULL));
    fx_expect(":1\r\n", run(b, "DEL", "k", NULL));
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(NULLARR, run(a, "EXEC", NULL));

    /* Expiry, found when EXEC looks (no write at all). */
    fx_expect(INCR1, run(b, "INCREX", "e", "BYINT", "1", "PX", "100", NULL));
    fx_expect(OK, run(a, "WATCH", "e", NULL));
    clock_set_fake_wall(T0 + 101 * MS);
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(NULLARR, run(a, "EXEC", NULL));

    /* A key already dead when watched is no change later. */
    fx_expect(OK, run(a, "WATCH", "e", NULL));
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect("*0\r\n", run(a, "EXEC", NULL));

    /* FLUSHDB of the key's database; FLUSHDB of another one is not. */
    fx_expect(INCR1, run(b, "INCREX", "f", NULL));
    fx_expect(OK, run(a, "WATCH", "f", NULL));
    b->db = 2;
    fx_expect(OK, run(b, "FLUSHDB", NULL));
    b->db = 0;
    ck_assert(!(a->multi->flags & MULTI_DIRTY_CAS));
    fx_expect(OK, run(b, "FLUSHALL", NULL));
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(NULLARR, run(a, "EXEC", NULL));

    /* SWAPDB: the watched name exists in one of the two databases. */
    b->db = 4;
    fx_expect(INCR1, run(b, "INCREX", "s", NULL));
    b->db = 0;
    fx_expect(OK, run(a, "WATCH", "s", "absent", NULL));
    fx_expect(OK, run(b, "SWAPDB", "0", "5", NULL));
    ck_assert(!(a->multi->flags & MULTI_DIRTY_CAS));    /* not in 0 or 5 */
    fx_expect(OK, run(b, "SWAPDB", "0", "4", NULL));
    ck_assert(a->multi->flags & MULTI_DIRTY_CAS);
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(NULLARR, run(a, "EXEC", NULL));
    ck_assert(key_exists(0, "s"));
}
END_TEST

START_TEST(test_a_failed_exec_answers_null_in_resp3_too)
{
    a->proto = 3;
    fx_expect(OK, run(a, "WATCH", "k", NULL));
    fx_expect(INCR1, run(b, "INCREX", "k", NULL));
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect("_\r\n", run(a, "EXEC", NULL));
}
END_TEST

/* Watching many keys, none changed: one registry entry per key, all gone
 * after EXEC; and DISCARD forgets the watched keys too. */
START_TEST(test_many_watched_keys_are_registered_and_released)
{
    char key[16];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "w%d", i);
        fx_expect(OK, run(a, "WATCH", key, NULL));
    }
    ck_assert_uint_eq(srv.watched_keys, 200);
    ck_assert_uint_eq(a->multi->nwatched, 200);
    fx_expect(INCR1, run(b, "INCREX", "w199x", NULL));
    ck_assert(!(a->multi->flags & MULTI_DIRTY_CAS));
    fx_expect(OK, run(a, "MULTI", NULL));
    fx_expect(OK, run(a, "DISCARD", NULL));
    ck_assert_uint_eq(srv.watched_keys, 0);
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "w%d", i);
        fx_expect(OK, run(a, "WATCH", key, NULL));
    }
    fx_expect(INCR1, run(b, "INCREX", "w123", NULL));
    ck_assert(a->multi->flags & MULTI_DIRTY_CAS);
    ck_assert_uint_eq(srv.watched_keys, 0);  /* a dirty client unwatches */
}
END_TEST

Suite *
multi_suite(void)
{
    Suite *s = suite_create("multi");
    TCase *tc = tcase_create("queue");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_exec_runs_the_queue_in_order_and_answers_every_reply);
    tcase_add_test(tc, test_discard_runs_nothing);
    tcase_add_test(tc, test_an_empty_transaction_answers_an_empty_array);
    tcase_add_test(tc, test_control_commands_inside_multi_are_answered_not_queued);
    tcase_add_test(tc, test_a_refused_command_aborts_the_transaction);
    tcase_add_test(tc, test_the_queue_memory_is_counted_and_released);
    suite_add_tcase(s, tc);

    tc = tcase_create("watch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_a_key_written_by_another_client_fails_exec);
    tcase_add_test(tc, test_an_untouched_watch_lets_exec_run);
    tcase_add_test(tc, test_unwatch_forgets_a_change);
    tcase_add_test(tc, test_a_clients_own_write_dirties_its_watch);
    tcase_add_test(tc, test_two_watchers_of_a_key_both_hear_and_others_do_not);
    tcase_add_test(tc, test_delete_expiry_flush_and_swap_dirty_the_watch);
    tcase_add_test(tc, test_a_failed_exec_answers_null_in_resp3_too);
    tcase_add_test(tc, test_many_watched_keys_are_registered_and_released);
    suite_add_tcase(s, tc);
    return s;
}
