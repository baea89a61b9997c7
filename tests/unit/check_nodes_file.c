/*
 * check_nodes_file.c - unit tests for server/cluster/nodes_file.c (Redis's
 * nodes.conf read into the view and written back) and the view rules it
 * relies on (server/cluster/view.c): round trips, Redis's own lines,
 * replicas, migrating/importing slots, old files without @cport, and the
 * lines a corrupt file is refused for.
 */
#include <stdio.h>
#include <string.h>

#include "lib/keyslot.h"
#include "lib/textbuf.h"
#include "server/cluster/nodes_file.h"
#include "server/cluster/view.h"
#include "tests/unit/suites.h"

#define IDA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define IDB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define IDC "cccccccccccccccccccccccccccccccccccccccc"

static char err[512];

static void
teardown(void)
{
    view_free();
}

static int
parse(const char *text)
{
    view_free();
    err[0] = '\0';
    return nodes_file_parse(text, strlen(text), err, sizeof(err));
}

/* The view as the file, NUL-terminated in a static buffer. */
static const char *
format(void)
{
    static char out[8192];
    struct textbuf t = { NULL, 0, 0, false };
    nodes_file_format(&t);
    ck_assert(!t.oom);
    ck_assert_uint_lt(t.len, sizeof(out));
    memcpy(out, t.p, t.len);
    out[t.len] = '\0';
    textbuf_free(&t);
    return out;
}

START_TEST(test_redis_file_reads_back_byte_for_byte)
{
    /* As redis-server 7.0.15 writes it (ping/pong 0, one link down). */
    const char *text =
        IDA " 127.0.0.1:7000@17000 myself,master - 0 0 3 connected 0-5460 "
        "5462 [5461-<-" IDB "] [100->-" IDB "]\n"
        IDB " 127.0.0.1:7001@17001,host-b.example master - 0 0 2 "
        "disconnected 5461 5463-16383\n"
        IDC " 127.0.0.1:7002@17002 slave,fail " IDB " 0 0 2 connected\n"
        "vars currentEpoch 5 lastVoteEpoch 4\n";
    ck_assert_int_eq(parse(text), 0);
    ck_assert_str_eq(cview.myself->name, IDA);
    ck_assert_uint_eq(cview.nnodes, 3);
    ck_assert_uint_eq(cview.current_epoch, 5);
    ck_assert_uint_eq(cview.last_vote_epoch, 4);
    ck_assert_int_eq(cview.myself->numslots, 5462);
    const struct cluster_node_v *b = view_lookup(IDB, 40);
    const struct cluster_node_v *c = view_lookup(IDC, 40);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(b->hostname, "host-b.example");
    ck_assert_int_eq(b->cport, 17001);
    ck_assert_ptr_eq(cview.slots[5461], b);
    ck_assert_ptr_eq(cview.importing_from[5461], b);
    ck_assert_ptr_eq(cview.migrating_to[100], b);
    ck_assert_ptr_eq(c->primary, b);
    ck_assert_int_eq(b->nreplicas, 1);
    ck_assert_uint_eq(c->config_epoch, 0);      /* a replica's: its primary's */
    ck_assert(view_node_failed(c));
    /* The link state is the bus's: no link here, so disconnected. */
    const char *back = format();
    ck_assert_ptr_nonnull(strstr(back, IDC " 127.0.0.1:7002@17002 slave,fail "
                                 IDB " 0 0 2 disconnected\n"));
    ck_assert_ptr_nonnull(strstr(back, IDA " 127.0.0.1:7000@17000 myself,"
                                 "master - 0 0 3 connected 0-5460 5462 "
                                 "[100->-" IDB "] [5461-<-" IDB "]\n"));
    ck_assert_ptr_nonnull(strstr(back, ",host-b.example master - 0 0 2 "
                                 "disconnected 5461 5463-16383\n"));
    ck_assert_ptr_nonnull(strstr(back, "vars currentEpoch 5 lastVoteEpoch 4\n"));
    /* And what was written reads back to the same text. */
    char copy[8192];
    snprintf(copy, sizeof(copy), "%s", back);
    ck_assert_int_eq(parse(copy), 0);
    ck_assert_str_eq(format(), copy);
}
END_TEST

START_TEST(test_fresh_node_file_is_redis_first_save)
{
    ck_assert_int_eq(view_init(IDA), 0);
    ck_assert_str_eq(format(), IDA " :0@0 myself,master - 0 0 0 connected\n"
                     "vars currentEpoch 0 lastVoteEpoch 0\n");
    ck_assert_int_eq(cview.state, VIEW_STATE_FAIL);
}
END_TEST

START_TEST(test_old_file_without_bus_port_and_blank_lines)
{
    ck_assert_int_eq(parse("\n" IDA " 10.0.0.1:6379 myself,master - 0 0 0 "
                           "connected 7\n\n"), 0);
    ck_assert_int_eq(cview.myself->cport, 16379);
    ck_assert_int_eq(cview.myself->numslots, 1);
    /* No vars line: currentEpoch is at least every node's epoch. */
    ck_assert_int_eq(parse(IDA " 1.2.3.4:1@2 myself,master - 0 0 9 "
                           "connected\n"), 0);
    ck_assert_uint_eq(cview.current_epoch, 9);
}
END_TEST

START_TEST(test_handshake_nodes_are_not_saved)
{
    ck_assert_int_eq(view_init(IDA), 0);
    ck_assert_int_eq(view_meet("127.0.0.1", 7000, 17000), 0);
    ck_assert_uint_eq(cview.nnodes, 2);
    ck_assert_ptr_null(strstr(format(), "handshake"));
    /* The same address again is a handshake in progress. */
    ck_assert_int_eq(view_meet("127.0.0.1", 7000, 17000), -1);
    ck_assert_int_eq(view_meet("::ffff:1.2.3.4", 1, 2), 0);
    ck_assert_int_eq(view_meet("1.2.3", 1, 2), -1);
    ck_assert_int_eq(view_meet("1.2.3.4", 0, 2), -1);
}
END_TEST

static void
refused(const char *text, const char *why)
{
    ck_assert_int_eq(parse(text), -1);
    ck_assert_msg(strstr(err, why) != NULL, "%s: %s", why, err);
    ck_assert(!view_enabled());         /* the view is left empty */
}

START_TEST(test_corrupt_lines_are_refused_with_their_number)
{
    refused(IDA " 1.2.3.4:1@2 myself,master - 0 0\n", "line 1: fewer than 8");
    refused("vars currentEpoch\n", "line 1: vars without a value");
    refused("vars currentEpoch x lastVoteEpoch 0\n", "bad vars value");
    refused(IDA " 1.2.3.4:1@2 myself,master - 0 0 0 connected\n"
            IDB " 1.2.3.4 master - 0 0 0 connected\n",
            "line 2: no port in the address");
    refused(IDA " 1.2.3.4:99999@2 myself,master - 0 0 0 connected\n",
            "bad port");
    refused(IDA " 1.2.3.4:1@2 myself,master,weird - 0 0 0 connected\n",
            "unknown flag");
    refused(IDA " 1.2.3.4:1@2 myself,master - 0 0 0 connected\n"
            IDB " 1.2.3.4:1@2 myself,master - 0 0 0 connected\n",
            "line 2: a second myself");
    refused(IDA " 1.2.3.4:1@2 myself,master - 0 0 0 connected 16384\n",
            "bad slot");
    refused(IDA " 1.2.3.4:1@2 myself,master - 0 0 0 connected 5-x\n",
            "bad slot");
    refused(IDA " 1.2.3.4:1@2 myself,master - 0 0 0 connected [5->" IDB "]\n",
            "bad migrating/importing slot");
    refused(IDA " 1.2.3.4:1@2 myself,master - 0 0 0 connected [5->-xyz]\n",
            "bad node id in a migrating");
    refused(IDA " 1.2.3.4:1@2 myself,master " IDA " 0 0 0 connected\n",
            "bad primary id");
    refused(IDA " 1.2.3.4:1@2 myself,master - x 0 0 connected\n",
            "bad ping, pong or epoch");
    refused("ABC 1.2.3.4:1@2 myself,master - 0 0 0 connected\n",
            "bad node id");
    refused(IDB " 1.2.3.4:1@2 master - 0 0 0 connected\n",
            "no node is flagged myself");
    refused(IDA " \"1.2.3.4:1@2 myself,master - 0 0 0 connected\n",
            "unbalanced quotes");
}
END_TEST

START_TEST(test_view_delete_unassigns_and_unlinks)
{
    ck_assert_int_eq(parse(IDA " 1.2.3.4:1@2 myself,master - 0 0 1 "
                           "connected 0-9 [20-<-" IDB "]\n"
                           IDB " 1.2.3.4:3@4 master - 0 0 2 connected 20-29\n"
                           IDC " 1.2.3.4:5@6 slave " IDB " 0 0 0 connected\n"),
                     0);
    struct cluster_node_v *b = view_lookup(IDB, 40);
    struct cluster_node_v *c = view_lookup(IDC, 40);
    ck_assert(view_fail_report_add(c, b, 1000));
    ck_assert(!view_fail_report_add(c, b, 2000));
    ck_assert_int_eq(view_fail_report_count(c, 2000, 15000), 1);
    ck_assert_int_eq(view_fail_report_count(c, 2000 + 30001, 15000), 0);
    ck_assert(view_fail_report_add(c, b, 1000));
    view_node_delete(b);
    ck_assert_ptr_null(view_lookup(IDB, 40));
    ck_assert_ptr_null(cview.slots[20]);
    ck_assert_ptr_null(cview.importing_from[20]);
    ck_assert_ptr_null(c->primary);
    ck_assert_int_eq(c->nfail_reports, 0);
    ck_assert_uint_eq(view_slots_assigned(), 10);
    /* Epochs: myself has 1 of max 1 → STILL; a greater one → BUMPED. */
    cview.current_epoch = 1;
    ck_assert(!view_bump_epoch_without_consensus());
    c->config_epoch = 5;
    ck_assert(view_bump_epoch_without_consensus());
    ck_assert_uint_eq(cview.myself->config_epoch, 2);
    view_reset(true);
    ck_assert_uint_eq(cview.nnodes, 1);
    ck_assert_uint_eq(cview.current_epoch, 0);
    ck_assert_str_ne(cview.myself->name, IDA);
    ck_assert_uint_eq(view_slots_assigned(), 0);
}
END_TEST

/* CRC16-XMODEM bit by bit: the reference for keyslot_crc16()'s slices. */
static uint16_t
crc16_bits(const unsigned char *p, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++) {
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
        }
    }
    return crc;
}

START_TEST(test_keyslot_slices_match_the_bitwise_crc)
{
    unsigned char buf[80];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t len = 0; len <= sizeof(buf); len++) {
        for (int round = 0; round < 20; round++) {
            for (size_t i = 0; i < len; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                buf[i] = (unsigned char)(x >> 56);
            }
            ck_assert_uint_eq(keyslot_crc16((const char *)buf, len),
                              crc16_bits(buf, len));
        }
    }
}
END_TEST

Suite *
nodes_file_suite(void)
{
    Suite *s = suite_create("nodes_file");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_redis_file_reads_back_byte_for_byte);
    tcase_add_test(tc, test_fresh_node_file_is_redis_first_save);
    tcase_add_test(tc, test_old_file_without_bus_port_and_blank_lines);
    tcase_add_test(tc, test_handshake_nodes_are_not_saved);
    tcase_add_test(tc, test_corrupt_lines_are_refused_with_their_number);
    tcase_add_test(tc, test_view_delete_unassigns_and_unlinks);
    tcase_add_test(tc, test_keyslot_slices_match_the_bitwise_crc);
    suite_add_tcase(s, tc);
    return s;
}
