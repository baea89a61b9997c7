/*
 * check_cmd.c - the dispatcher (server/cmd.c) with the real command table
 * (commands.c), driven without sockets: a client that is only its state
 * (client.h), requests built by hand, replies read back from its output
 * buffer as bytes.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "protocol/obuf.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/keyspace.h"
#include "server/server.h"
#include "tests/unit/fixture.h"
#include "tests/unit/suites.h"

static struct conn *client;

static void
setup(void)
{
    unsigned char seed[16] = { 0 };
    ck_assert_int_eq(conf_init(&srv.conf), 0);
    server_apply_limits();
    ck_assert_int_eq(cmd_setup(command_table, command_count), 0);
    cmd_reset_stats();
    ck_assert_int_eq(keyspace_init(seed, 0), 0);
    srv.loop = uv_default_loop();
    client = calloc(1, sizeof(*client));
    ck_assert_ptr_nonnull(client);
    obuf_init(&client->out);
    client->proto = 2;
    client->authenticated = true;
}

static void
teardown(void)
{
    obuf_deinit(&client->out);
    mem_free(client->name);
    free(client);
    keyspace_teardown();
    conf_deinit(&srv.conf);
}

/* Run one command for the suite's client (NULL-terminated words); its
 * reply, which the caller frees. */
static char *
run(const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    char *out = fx_vrun(client, first, ap);
    va_end(ap);
    return out;
}

START_TEST(test_unknown_command_in_redis_words)
{
    fx_expect("-ERR unknown command 'nosuch', with args beginning with: 'a' "
           "'b' \r\n", run("nosuch", "a", "b", NULL));
}
END_TEST

START_TEST(test_names_are_case_insensitive)
{
    fx_expect("+PONG\r\n", run("pInG", NULL));
    fx_expect("*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n",
           run("cl.THROTTLE", "user123", "15", "30", "60", NULL));
}
END_TEST

START_TEST(test_arity_is_checked_before_the_handler)
{
    fx_expect("-ERR wrong number of arguments for 'get' command\r\n",
           run("GET", NULL));
    fx_expect("-ERR wrong number of arguments for 'rl.fixed' command\r\n",
           run("RL.FIXED", "k", "1", NULL));
    size_t n;
    struct cmd *t = cmd_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].name, "get") == 0) {
            ck_assert_uint_eq(t[i].stats.rejected_calls, 1);
            ck_assert_uint_eq(t[i].stats.calls, 0);
        }
    }
}
END_TEST

START_TEST(test_subcommands_have_their_own_table_and_arity)
{
    fx_expect("-ERR unknown subcommand 'nosuch'. Try CONFIG HELP.\r\n",
           run("CONFIG", "nosuch", NULL));
    fx_expect("-ERR wrong number of arguments for 'client|setname' command\r\n",
           run("CLIENT", "SETNAME", NULL));
    fx_expect("+OK\r\n", run("client", "setname", "me", NULL));
    fx_expect("$2\r\nme\r\n", run("CLIENT", "GETNAME", NULL));
}
END_TEST

START_TEST(test_flags_gate_commands_before_auth)
{
    client->authenticated = false;
    fx_expect("-NOAUTH Authentication required.\r\n", run("GET", "k", NULL));
    /* no_auth commands run; AUTH without requirepass says so, as Redis. */
    fx_expect("-ERR AUTH <password> called without any password configured for "
           "the default user. Are you sure your configuration is correct?"
           "\r\n", run("AUTH", "x", NULL));
    char *got = run("HELLO", "3", NULL);
    ck_assert_ptr_nonnull(strstr(got, "-NOAUTH HELLO must be called"));
    free(got);
    ck_assert_int_eq(client->proto, 2);
}
END_TEST

START_TEST(test_flags_show_as_words_in_redis_order)
{
    char *got = run("COMMAND", "INFO", "quit", NULL);
    ck_assert_ptr_nonnull(strstr(got, "*6\r\n+noscript\r\n+loading\r\n"
                                      "+stale\r\n+fast\r\n+no_auth\r\n"
                                      "+allow_busy\r\n"));
    free(got);
}
END_TEST

START_TEST(test_every_shown_flag_has_its_word)
{
    for (int i = 0; i < CMD_FLAG_COUNT; i++) {
        ck_assert_ptr_nonnull(cmd_flag_words[i]);
    }
    ck_assert_str_eq(cmd_flag_words[7], "blocking");
    ck_assert_str_eq(cmd_flag_words[10], "skip_monitor");
    ck_assert_str_eq(cmd_flag_words[12], "asking");
    ck_assert_str_eq(cmd_flag_words[15], "no_mandatory_keys");
    ck_assert_str_eq(cmd_flag_words[18], "movablekeys");
    ck_assert_str_eq(cmd_flag_words[CMD_FLAG_COUNT - 1], "allow_busy");
    ck_assert_uint_eq(CMD_BLOCKING, 1u << 7);
    ck_assert_uint_eq(CMD_SKIP_MONITOR, 1u << 10);
    ck_assert_uint_eq(CMD_MOVABLE_KEYS, 1u << 18);
    ck_assert_uint_eq(CMD_SHOWN_FLAGS & (CMD_MAY_REPLICATE | CMD_NOT_QUEUED |
                                         CMD_EXEC | CMD_PEEKS), 0);
}
END_TEST

/* A request of the NULL-terminated words (copied), for the key finders. */
static struct resp_request
line_of(const char *const *words)
{
    static char store[16][32];
    static char *argv[16];
    static size_t lens[16];
    size_t n = 0;
    for (; words[n] != NULL; n++) {
        lens[n] = strlen(words[n]);
        memcpy(store[n], words[n], lens[n] + 1);
        argv[n] = store[n];
    }
    return (struct resp_request){ n, argv, lens, 0 };
}

START_TEST(test_keynum_specs_find_the_keys_numkeys_counts)
{
    static const struct cmd_keynum keynum = { 2, 0, 1, 1 };
    struct cmd rows[] = {
        { .name = "k", .arity = -3, .keynum = &keynum,
          .key_specs = { { .flags = CMD_KEY_RW | CMD_KEY_ACCESS,
                           .notes = "n" } } },
        { .name = "r", .arity = -2, .first_key = 1, .last_key = -1,
          .key_step = 1, .key_specs = { { .flags = CMD_KEY_RO } } },
    };
    ck_assert_int_eq(cmd_setup(rows, 2), 0);
    ck_assert(rows[0].flags & CMD_MOVABLE_KEYS);
    ck_assert(!(rows[1].flags & CMD_MOVABLE_KEYS));
    struct cmd_keynum kn;
    ck_assert(cmd_keynum_spec(&rows[0], &kn));
    ck_assert_int_eq(kn.index, 2);
    ck_assert_int_eq(kn.keynumidx, 0);
    ck_assert_int_eq(kn.firstkey, 1);
    ck_assert_int_eq(kn.keystep, 1);
    ck_assert(!cmd_keynum_spec(&rows[1], &kn));

    struct cmd_keys k;
    const char *two[] = { "k", "s", "2", "a", "b", "c", NULL };
    struct resp_request req = line_of(two);
    ck_assert(cmd_request_keys(&rows[0], &req, &k));
    ck_assert_int_eq(k.first, 3);
    ck_assert_int_eq(k.last, 4);
    ck_assert_int_eq(k.step, 1);
    ck_assert(k.flagged);
    /* None: 0, negative, past the line, not a number, beyond an int. */
    const char *none[] = { "0", "-1", "4", "abc", "-0", "2147483648",
                           "99999999999999999999", "" };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        const char *w[] = { "k", "s", none[i], "a", "b", "c", NULL };
        req = line_of(w);
        ck_assert_msg(!cmd_request_keys(&rows[0], &req, &k), "%s", none[i]);
    }
    /* Redis's numkeys is an int: 4294967297 is 1. */
    const char *wrap[] = { "k", "s", "4294967297", "a", NULL };
    req = line_of(wrap);
    ck_assert(cmd_request_keys(&rows[0], &req, &k));
    ck_assert_int_eq(k.first, 3);
    ck_assert_int_eq(k.last, 3);
    ck_assert(k.flagged);
    /* What the spec refuses, atoi() reads: the keys come without flags. */
    const char *atoi_one[] = { " 1", "01", "+1", "1.0", "1x" };
    for (size_t i = 0; i < sizeof(atoi_one) / sizeof(atoi_one[0]); i++) {
        const char *w[] = { "k", "s", atoi_one[i], "a", NULL };
        req = line_of(w);
        ck_assert_msg(cmd_request_keys(&rows[0], &req, &k), "%s", atoi_one[i]);
        ck_assert_int_eq(k.first, 3);
        ck_assert_int_eq(k.last, 3);
        ck_assert(!k.flagged);
    }
    /* Range specs as before. */
    const char *range[] = { "r", "x", "y", NULL };
    req = line_of(range);
    ck_assert(cmd_request_keys(&rows[1], &req, &k));
    ck_assert_int_eq(k.first, 1);
    ck_assert_int_eq(k.last, 2);
    ck_assert(k.flagged);
}
END_TEST

START_TEST(test_eval_shows_its_keynum_spec_as_redis)
{
    char *got = run("COMMAND", "INFO", "eval", NULL);
    ck_assert_ptr_nonnull(strstr(got, "$4\r\neval\r\n:-3\r\n*5\r\n"
                                      "+noscript\r\n+stale\r\n"
                                      "+skip_monitor\r\n"
                                      "+no_mandatory_keys\r\n"
                                      "+movablekeys\r\n:0\r\n:0\r\n:0\r\n"));
    ck_assert_ptr_nonnull(strstr(got, "$9\r\nfind_keys\r\n*4\r\n"
                                      "$4\r\ntype\r\n$6\r\nkeynum\r\n"
                                      "$4\r\nspec\r\n*6\r\n"
                                      "$9\r\nkeynumidx\r\n:0\r\n"
                                      "$8\r\nfirstkey\r\n:1\r\n"
                                      "$7\r\nkeystep\r\n:1\r\n"));
    free(got);
    fx_expect("*2\r\n$1\r\na\r\n$1\r\nb\r\n",
              run("COMMAND", "GETKEYS", "EVAL", "s", "2", "a", "b", "c", NULL));
    fx_expect("*0\r\n", run("COMMAND", "GETKEYS", "EVAL", "s", "0", NULL));
    fx_expect("*0\r\n", run("COMMAND", "GETKEYS", "EVAL", "s", "x", NULL));
    fx_expect("*1\r\n*2\r\n$1\r\na\r\n*0\r\n",
              run("COMMAND", "GETKEYSANDFLAGS", "EVAL", "s", "01", "a", NULL));
    fx_expect("-ERR Invalid number of arguments specified for command\r\n",
              run("COMMAND", "GETKEYS", "EVAL", "s", NULL));
    fx_expect("-ERR The command has no key arguments\r\n",
              run("COMMAND", "GETKEYS", "SCRIPT", "LOAD", "s", NULL));
}
END_TEST

START_TEST(test_bad_keynum_specs_are_refused_at_setup)
{
    /* A misspelt flag or a malformed keynum no longer compiles; what
     * the types allow and Redis could not follow: */
    static const struct cmd_keynum bad[] = {
        { 2, 0, 1, 0 }, { 0, 0, 1, 1 }, { 2, 0, 0, 1 }, { 2, -1, 1, 1 }
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cmd row[] = {
            { .name = "k", .arity = -3, .keynum = &bad[i],
              .key_specs = { { .flags = CMD_KEY_RW } } },
        };
        ck_assert_msg(cmd_setup(row, 1) == -1, "%zu", i);
    }
    /* A keynum spec is the row's only one ("RW|RO"). */
    static const struct cmd_keynum good = { 2, 0, 1, 1 };
    struct cmd two[] = {
        { .name = "k", .arity = -3, .keynum = &good,
          .key_specs = { { .flags = CMD_KEY_RW }, { .flags = CMD_KEY_RO } } },
    };
    ck_assert_int_eq(cmd_setup(two, 1), -1);
    /* Its legacy key positions are 0 0 0, as Redis shows them. */
    struct cmd legacy[] = {
        { .name = "k", .arity = -3, .first_key = 2, .last_key = 2,
          .key_step = 1, .keynum = &good,
          .key_specs = { { .flags = CMD_KEY_RW } } },
    };
    ck_assert_int_eq(cmd_setup(legacy, 1), -1);
    /* Keys without a spec, a spec without keys. */
    struct cmd unspecified[] = {
        { .name = "k", .arity = 2, .first_key = 1, .last_key = 1,
          .key_step = 1 },
    };
    ck_assert_int_eq(cmd_setup(unspecified, 1), -1);
    struct cmd keyless[] = {
        { .name = "k", .arity = 1, .key_specs = { { .flags = CMD_KEY_RO } } },
    };
    ck_assert_int_eq(cmd_setup(keyless, 1), -1);
}
END_TEST

START_TEST(test_errors_are_counted_by_code)
{
    free(run("GET", NULL));
    free(run("GET", NULL));
    free(run("nosuch", NULL));
    uint64_t count = 0;
    const char *code = NULL;
    for (size_t i = 0; (code = cmd_error_stat(i, &count)) != NULL; i++) {
        if (strcmp(code, "ERR") == 0) {
            break;
        }
    }
    ck_assert_ptr_nonnull(code);
    ck_assert_uint_eq(count, 3);
}
END_TEST

START_TEST(test_commands_ask_the_connection_through_request_bits)
{
    fx_expect("+OK\r\n", run("QUIT", NULL));
    ck_assert_uint_eq(client->requests & CLIENT_CLOSE_AFTER_REPLY,
                      CLIENT_CLOSE_AFTER_REPLY);
}
END_TEST

Suite *
cmd_suite(void)
{
    Suite *s = suite_create("cmd");
    TCase *tc = tcase_create("dispatch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_unknown_command_in_redis_words);
    tcase_add_test(tc, test_names_are_case_insensitive);
    tcase_add_test(tc, test_arity_is_checked_before_the_handler);
    tcase_add_test(tc, test_subcommands_have_their_own_table_and_arity);
    tcase_add_test(tc, test_flags_gate_commands_before_auth);
    tcase_add_test(tc, test_flags_show_as_words_in_redis_order);
    tcase_add_test(tc, test_every_shown_flag_has_its_word);
    tcase_add_test(tc, test_keynum_specs_find_the_keys_numkeys_counts);
    tcase_add_test(tc, test_bad_keynum_specs_are_refused_at_setup);
    tcase_add_test(tc, test_eval_shows_its_keynum_spec_as_redis);
    tcase_add_test(tc, test_errors_are_counted_by_code);
    tcase_add_test(tc, test_commands_ask_the_connection_through_request_bits);
    suite_add_tcase(s, tc);
    return s;
}
