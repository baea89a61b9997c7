/*
 * check_cluster.c - unit tests for server/cluster/cluster_topo.c (the static
 * topology of cluster-mode yes: parsing and validating cluster-node lines,
 * finding this node, slot lookup) and for the config file's directive
 * lines that carry it (conf_scan_directive).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "lib/keyslot.h"
#include "server/cluster/cluster_topo.h"
#include "lib/textbuf.h"
#include "tests/unit/suites.h"

#define ID1 "1111111111111111111111111111111111111111"
#define ID2 "2222222222222222222222222222222222222222"
#define ID3 "3333333333333333333333333333333333333333"
#define ID4 "4444444444444444444444444444444444444444"
#define ID5 "5555555555555555555555555555555555555555"

static struct cluster_topo *t;
static char why[512];

static void
setup(void)
{
    t = cluster_topo_create();
    ck_assert_ptr_nonnull(t);
    why[0] = '\0';
}

static void
teardown(void)
{
    cluster_topo_free(t);
    t = NULL;
    keyslot_use_clmul(true);    /* the start-up choice, for the next test */
}

/* Add a node from one line of words (split on spaces); returns the rc. */
static int
add(const char *line)
{
    char buf[512], *words[16];
    size_t n = 0;
    snprintf(buf, sizeof(buf), "%s", line);
    for (char *w = strtok(buf, " "); w != NULL && n < 16;
         w = strtok(NULL, " ")) {
        words[n++] = w;
    }
    return cluster_topo_add(t, words, n, why, sizeof(why));
}

static void
add_ok(const char *line)
{
    ck_assert_msg(add(line) == 0, "'%s' rejected: %s", line, why);
}

/* The line must be rejected with a message containing want, and leave the
 * topology as it was. */
static void
add_fails(const char *line, const char *want)
{
    size_t nodes = t->nnodes;
    unsigned assigned = cluster_topo_assigned(t);
    uint16_t owner0 = t->owner[0], owner_last = t->owner[CLUSTER_SLOTS - 1];
    ck_assert_msg(add(line) == -1, "'%s' accepted", line);
    ck_assert_msg(strstr(why, want) != NULL, "'%s': got '%s', want '%s'",
                  line, why, want);
    ck_assert_uint_eq(t->nnodes, nodes);
    ck_assert_uint_eq(cluster_topo_assigned(t), assigned);
    ck_assert_uint_eq(t->owner[0], owner0);
    ck_assert_uint_eq(t->owner[CLUSTER_SLOTS - 1], owner_last);
}

static void
three_nodes(void)
{
    add_ok(ID1 " 127.0.0.1:7001 0-5460");
    add_ok(ID2 " 127.0.0.1:7002 5461-10922");
    add_ok(ID3 " 127.0.0.1:7003 10923-16383");
}

/* CRC16-XMODEM bit by bit, as the polynomial defines it. */
static uint16_t
crc16_bitwise(const unsigned char *p, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++) {
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                                 : (uint16_t)(crc << 1);
        }
    }
    return crc;
}

/* Both implementations (carry-less multiply where the CPU has it, the
 * tables: _i of a loop test) agree with the definition at every length
 * and alignment. */
START_TEST(test_crc16_four_bytes_a_step_equals_bit_by_bit)
{
    keyslot_use_clmul(_i == 1);
    unsigned char buf[64];
    uint32_t x = 2463534242u;
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof(buf); i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            buf[i] = (unsigned char)x;
        }
        for (size_t off = 0; off < 4; off++) {
            for (size_t len = 0; len + off <= sizeof(buf); len++) {
                ck_assert_uint_eq(keyslot_crc16((const char *)buf + off, len),
                                  crc16_bitwise(buf + off, len));
            }
        }
    }
}
END_TEST

START_TEST(test_keyslot_matches_redis_cluster)
{
    keyslot_use_clmul(_i == 1);
    ck_assert_uint_eq(keyslot("foo", 3), 12182);
    ck_assert_uint_eq(keyslot("{user1000}.following", 20), 3443);
    ck_assert_uint_eq(keyslot("user1000", 8), 3443);
    ck_assert_uint_eq(keyslot("", 0), 0);
    /* An empty tag does not count: the whole key is hashed. */
    ck_assert_uint_ne(keyslot("{}foo", 5), keyslot("foo", 3));
    ck_assert_uint_eq(keyslot("a{foo}b{x}", 10),
                      keyslot("foo", 3));
    ck_assert_uint_eq(keyslot("{ratelimit:1.2.3.4:}login", 25),
                      keyslot("{ratelimit:1.2.3.4:}signup", 26));
    /* The CRC's check value; an unclosed '{' and "{}" hash the whole key;
     * "{{a}}" tags "{a"; a tag may hold any byte. */
    ck_assert_uint_eq(keyslot_crc16("123456789", 9), 0x31C3);
    ck_assert_uint_eq(keyslot("{abc", 4), keyslot_crc16("{abc", 4) & 16383);
    ck_assert_uint_eq(keyslot("x{}{a}", 6), keyslot_crc16("x{}{a}", 6) & 16383);
    ck_assert_uint_eq(keyslot("{{a}}", 5), keyslot("{a", 2));
    ck_assert_uint_eq(keyslot("{\0\xff}z", 5), keyslot("\0\xff", 2));
    for (unsigned i = 0; i < 100000; i++) {
        char k[16];
        int n = snprintf(k, sizeof(k), "k%u", i);
        ck_assert_uint_lt(keyslot(k, (size_t)n), KEYSLOT_SLOTS);
    }
}
END_TEST

/* The slot as Redis's keyHashSlot() finds it, by its words: the first
 * '{', the first '}' after it, a non-empty tag in between. */
static unsigned
slot_by_the_rule(const unsigned char *key, size_t len)
{
    size_t open = 0;
    while (open < len && key[open] != '{') {
        open++;
    }
    size_t close = open + 1;
    while (close < len && key[close] != '}') {
        close++;
    }
    if (open < len && close < len && close > open + 1) {
        return crc16_bitwise(key + open + 1, close - open - 1) & 16383;
    }
    return crc16_bitwise(key, len) & 16383;
}

/* The carry-less multiply and the tables agree on a million random keys
 * of 0 to 300 bytes, with and without braces; each key alone in a block
 * of its exact size, so that AddressSanitizer sees any load outside it.
 * Every 64th is checked against the rule itself. (Elsewhere than x86-64
 * both runs are the tables.) */
START_TEST(test_clmul_and_tables_agree_on_random_keys)
{
#if defined(__x86_64__)
    /* Every x86-64 CPU since 2010 has it; an older one fails here rather
     * than leave the carry-less code untested. */
    ck_assert(keyslot_use_clmul(true));
#endif
    uint64_t x = 88172645463325252u;
    for (unsigned round = 0; round < 1000000; round++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t len = (size_t)(x % 301);
        if (round % 4 == 0) {
            len %= 24;          /* more of the short keys' load paths */
        }
        unsigned char *key = malloc(len > 0 ? len : 1);
        ck_assert_ptr_nonnull(key);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* One byte in 64 a brace, when the round wants some. */
            unsigned b = (unsigned)(x >> 24) & 63;
            key[i] = (round % 3 == 0 && b == 0)   ? '{'
                     : (round % 3 == 0 && b == 1) ? '}'
                                                  : (unsigned char)(x >> 32);
        }
        keyslot_use_clmul(true);
        unsigned fast = keyslot((const char *)key, len);
        uint16_t fast_crc = keyslot_crc16((const char *)key, len);
        keyslot_use_clmul(false);
        ck_assert_uint_eq(keyslot((const char *)key, len), fast);
        ck_assert_uint_eq(keyslot_crc16((const char *)key, len), fast_crc);
        if (round % 64 == 0) {
            ck_assert_uint_eq(fast, slot_by_the_rule(key, len));
        }
        free(key);
    }
}
END_TEST

START_TEST(test_three_nodes_own_their_ranges)
{
    three_nodes();
    ck_assert_uint_eq(t->nnodes, 3);
    ck_assert_uint_eq(cluster_topo_assigned(t), CLUSTER_SLOTS);
    ck_assert_str_eq(cluster_topo_owner(t, 0)->id, ID1);
    ck_assert_str_eq(cluster_topo_owner(t, 5460)->id, ID1);
    ck_assert_str_eq(cluster_topo_owner(t, 5461)->id, ID2);
    ck_assert_str_eq(cluster_topo_owner(t, 10922)->id, ID2);
    ck_assert_str_eq(cluster_topo_owner(t, 10923)->id, ID3);
    ck_assert_str_eq(cluster_topo_owner(t, 16383)->id, ID3);
    ck_assert_str_eq(cluster_topo_owner(t, 16383)->host, "127.0.0.1");
    ck_assert_uint_eq(cluster_topo_owner(t, 16383)->port, 7003);
    ck_assert_uint_eq(t->nodes[1].nslots, 5462);
}
END_TEST

START_TEST(test_ranges_single_slots_gaps_and_names)
{
    add_ok(ID1 " cellgate-0.cellgate:6379 0-99 200 300-300");
    add_ok(ID2 " ::1:6380 100-199");
    add_ok(ID3 " 10.0.0.3:6381");              /* a node with no slots */
    ck_assert_uint_eq(cluster_topo_assigned(t), 202);
    ck_assert_str_eq(t->nodes[0].host, "cellgate-0.cellgate");
    ck_assert_str_eq(t->nodes[1].host, "::1");
    ck_assert_uint_eq(t->nodes[1].port, 6380);
    ck_assert_ptr_null(cluster_topo_owner(t, 201));
    ck_assert_ptr_null(cluster_topo_owner(t, 16383));
    ck_assert_str_eq(cluster_topo_owner(t, 300)->id, ID1);

    /* Runs in slot order: 0-99 (1), 100-199 (2), 200 (1), 300 (1). */
    unsigned slot = 0, first, last;
    size_t node;
    static const unsigned want[][3] = {
        { 0, 99, 0 }, { 100, 199, 1 }, { 200, 200, 0 }, { 300, 300, 0 }
    };
    for (size_t i = 0; i < 4; i++) {
        ck_assert(cluster_topo_next_range(t, &slot, &first, &last, &node));
        ck_assert_uint_eq(first, want[i][0]);
        ck_assert_uint_eq(last, want[i][1]);
        ck_assert_uint_eq(node, want[i][2]);
    }
    ck_assert(!cluster_topo_next_range(t, &slot, &first, &last, &node));
}
END_TEST

START_TEST(test_bad_lines_are_rejected_and_change_nothing)
{
    add_ok(ID1 " 127.0.0.1:7001 0-100");
    add_fails(ID2, "wants <id> <host>:<port>");
    add_fails("12345 127.0.0.1:7002 200", "40 lower-case hex digits");
    add_fails("ABCDEF1111111111111111111111111111111111 127.0.0.1:7002",
              "40 lower-case hex digits");
    add_fails(ID2 " 127.0.0.1 200", "must be host:port");
    add_fails(ID2 " :7002 200", "must be host:port");
    add_fails(ID2 " 127.0.0.1:0 200", "must be host:port");
    add_fails(ID2 " 127.0.0.1:65536 200", "must be host:port");
    add_fails(ID2 " 127.0.0.1:70x 200", "must be host:port");
    add_fails(ID2 " 127.0.0.1:7002 16384", "slots from 0 to 16383");
    add_fails(ID2 " 127.0.0.1:7002 16000-16384", "slots from 0 to 16383");
    add_fails(ID2 " 127.0.0.1:7002 -5", "slots from 0 to 16383");
    add_fails(ID2 " 127.0.0.1:7002 5-", "slots from 0 to 16383");
    add_fails(ID2 " 127.0.0.1:7002 007", "slots from 0 to 16383");
    add_fails(ID2 " 127.0.0.1:7002 300-200", "ends before it starts");
    add_fails(ID1 " 127.0.0.1:7002 200", "id " ID1 " is listed twice");
    add_fails(ID2 " 127.0.0.1:7001 200", "127.0.0.1:7001 is listed twice");
}
END_TEST

START_TEST(test_overlapping_ranges_name_the_owner)
{
    add_ok(ID1 " 127.0.0.1:7001 0-100");
    /* The part claimed before the clash is released again. */
    add_fails(ID2 " 127.0.0.1:7002 16000-16383 50-60",
              "slot 50 of cluster-node " ID2 " is already owned by " ID1);
    ck_assert_ptr_null(cluster_topo_owner(t, 16000));
    add_fails(ID2 " 127.0.0.1:7002 200-300 250",
              "slot 250 of cluster-node " ID2 " is already owned by the "
              "same node");
    ck_assert_ptr_null(cluster_topo_owner(t, 200));
    add_ok(ID2 " 127.0.0.1:7002 101-200");
    ck_assert_uint_eq(cluster_topo_assigned(t), 201);
}
END_TEST

START_TEST(test_find_myself_by_id_or_address)
{
    three_nodes();
    ck_assert_int_eq(cluster_topo_find_myself(t, ID2, "", 1, why,
                                              sizeof(why)), 0);
    ck_assert_uint_eq(t->myself, 1);
    ck_assert_int_eq(cluster_topo_find_myself(t, "", "", 7003, why,
                                              sizeof(why)), 0);
    ck_assert_uint_eq(t->myself, 2);
    ck_assert_int_eq(cluster_topo_find_myself(t, "", "127.0.0.1", 7001, why,
                                              sizeof(why)), 0);
    ck_assert_uint_eq(t->myself, 0);
    ck_assert_int_eq(cluster_topo_find_myself(t, ID1 "x", "", 7001, why,
                                              sizeof(why)), -1);
    ck_assert_str_eq(why, "cluster-node-id " ID1 "x is not among the "
                     "cluster-node lines");
    ck_assert_int_eq(cluster_topo_find_myself(t, "", "10.0.0.9", 7001, why,
                                              sizeof(why)), -1);
    ck_assert_str_eq(why, "no cluster-node has this node's address "
                     "10.0.0.9:7001: set cluster-node-id");
}
END_TEST

START_TEST(test_find_myself_ambiguous_port_or_empty_topology)
{
    ck_assert_int_eq(cluster_topo_find_myself(t, "", "", 6379, why,
                                              sizeof(why)), -1);
    ck_assert_str_eq(why, "cluster-mode yes needs cluster-node lines in the "
                     "config file");
    add_ok(ID1 " 10.0.0.1:6379 0-8191");
    add_ok(ID2 " 10.0.0.2:6379 8192-16383");
    ck_assert_int_eq(cluster_topo_find_myself(t, "", "", 6379, why,
                                              sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "more than one cluster-node has port "
                                 "6379"));
    ck_assert_int_eq(cluster_topo_find_myself(t, "", "10.0.0.2", 6379, why,
                                              sizeof(why)), 0);
    ck_assert_uint_eq(t->myself, 1);
}
END_TEST

/* ---- cluster-node lines in a config file ---- */

static char path[64];

static void
write_file(const char *text)
{
    strcpy(path, "/tmp/check_cluster_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int
add_words(void *arg, char **words, size_t nwords, char *whybuf,
          size_t whylen)
{
    return cluster_topo_add(arg, words, nwords, whybuf, whylen);
}

START_TEST(test_config_file_lines_are_read_and_skipped_by_options)
{
    struct conf c;
    char err[CONF_ERR_LEN];
    write_file("port 7001\n"
               "# cluster-node " ID3 " 127.0.0.1:7003 0\n"
               "cluster-node " ID1 " 127.0.0.1:7001 0-8191\n"
               "cluster-mode yes\n"
               "CLUSTER-NODE \"" ID2 "\" 127.0.0.1:7002 8192-16000 "
               "16001-16383\n");
    ck_assert_int_eq(conf_init(&c), 0);
    ck_assert_int_eq(conf_load_file(&c, path, err, sizeof(err)), 0);
    ck_assert_int_eq(c.cluster_mode, CLUSTER_MODE_YES);
    conf_deinit(&c);
    ck_assert_int_eq(conf_scan_directive(path, "cluster-node", add_words, t,
                                         err, sizeof(err)), 0);
    ck_assert_uint_eq(t->nnodes, 2);
    ck_assert_uint_eq(cluster_topo_assigned(t), CLUSTER_SLOTS);
    ck_assert_str_eq(cluster_topo_owner(t, 16383)->id, ID2);
    unlink(path);
}
END_TEST

START_TEST(test_config_file_errors_say_where)
{
    char err[CONF_ERR_LEN], want[CONF_ERR_LEN];
    write_file("port 7001\n"
               "cluster-node " ID1 " 127.0.0.1:7001 0-8191\n"
               "cluster-node " ID2 " 127.0.0.1:7002 8000-16383\n");
    ck_assert_int_eq(conf_scan_directive(path, "cluster-node", add_words, t,
                                         err, sizeof(err)), -1);
    snprintf(want, sizeof(want), "%s:3: slot 8000 of cluster-node " ID2
             " is already owned by " ID1, path);
    ck_assert_str_eq(err, want);
    unlink(path);
    ck_assert_int_eq(conf_scan_directive(path, "cluster-node", add_words, t,
                                         err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, ":0: cannot open"));
}
END_TEST


/* Two shards; the first has two replicas, listed before and after it. */
static void
shards_with_replicas(void)
{
    add_ok(ID4 " 127.0.0.1:7004 replicaof " ID1);
    add_ok(ID1 " 127.0.0.1:7001 0-8191");
    add_ok(ID2 " 127.0.0.1:7002 8192-16383");
    add_ok(ID5 " 127.0.0.1:7005 REPLICAOF " ID1);
    ck_assert_int_eq(cluster_topo_link(t, why, sizeof(why)), 0);
}

START_TEST(test_replica_lines_join_their_primarys_shard)
{
    shards_with_replicas();
    ck_assert_uint_eq(t->nnodes, 4);
    ck_assert_uint_eq(cluster_topo_shard(t, 0), 1);
    ck_assert_uint_eq(cluster_topo_shard(t, 1), 1);
    ck_assert_uint_eq(cluster_topo_shard(t, 2), 2);
    ck_assert_uint_eq(cluster_topo_shard(t, 3), 1);
    ck_assert_uint_eq(t->nodes[0].nslots, 0);
    ck_assert_str_eq(cluster_topo_owner(t, 0)->id, ID1);
    ck_assert_uint_eq(cluster_topo_assigned(t), CLUSTER_SLOTS);
    ck_assert_uint_eq(cluster_topo_find(t, "127.0.0.1", 7005), 3);
    ck_assert_uint_eq(cluster_topo_find(t, "127.0.0.1", 7009), 4);
}
END_TEST

START_TEST(test_bad_replica_lines_are_rejected)
{
    add_ok(ID1 " 127.0.0.1:7001 0-100");
    add_fails(ID2 " 127.0.0.1:7002 replicaof " ID1 " 200-300",
              "a replica owns no slots");
    add_fails(ID2 " 127.0.0.1:7002 replicaof", "a replica owns no slots");
    add_fails(ID2 " 127.0.0.1:7002 replicaof 12ab", "must be 40 lower-case");
    add_fails(ID2 " 127.0.0.1:7002 replicaof " ID2, "replica of itself");
    add_fails(ID2 " 127.0.0.1:7001 replicaof " ID1, "listed twice");
}
END_TEST

START_TEST(test_replica_of_unknown_node_or_of_a_replica_is_refused)
{
    add_ok(ID1 " 127.0.0.1:7001 0-100");
    add_ok(ID2 " 127.0.0.1:7002 replicaof " ID3);
    ck_assert_int_eq(cluster_topo_link(t, why, sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "replica of " ID3 ", which is not "
                                      "among the cluster-node lines"));
    teardown();
    setup();
    add_ok(ID1 " 127.0.0.1:7001 0-100");
    add_ok(ID2 " 127.0.0.1:7002 replicaof " ID1);
    add_ok(ID3 " 127.0.0.1:7003 replicaof " ID2);
    ck_assert_int_eq(cluster_topo_link(t, why, sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "which is a replica itself: name its "
                                      "primary " ID1));
}
END_TEST

START_TEST(test_promotion_moves_slots_and_replicas_to_the_new_primary)
{
    shards_with_replicas();
    ck_assert(cluster_topo_promote(t, 3));          /* ID5 */
    ck_assert_str_eq(cluster_topo_owner(t, 0)->id, ID5);
    ck_assert_str_eq(cluster_topo_owner(t, 8191)->id, ID5);
    ck_assert_str_eq(cluster_topo_owner(t, 8192)->id, ID2);
    ck_assert_uint_eq(t->nodes[3].nslots, 8192);
    ck_assert_uint_eq(t->nodes[1].nslots, 0);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_uint_eq(cluster_topo_shard(t, i), i == 2 ? 2 : 3);
    }
    ck_assert_str_eq(t->nodes[0].primary_id, ID5);
    ck_assert_str_eq(t->nodes[1].primary_id, ID5);
    ck_assert_str_eq(t->nodes[3].primary_id, "");
    /* Again, or a primary: nothing changes. */
    ck_assert(!cluster_topo_promote(t, 3));
    ck_assert(!cluster_topo_promote(t, 2));
    ck_assert_uint_eq(cluster_topo_assigned(t), CLUSTER_SLOTS);
}
END_TEST

START_TEST(test_format_writes_lines_that_read_back_the_same)
{
    struct textbuf out = { NULL, 0, 0, false };
    shards_with_replicas();
    ck_assert(cluster_topo_promote(t, 0));
    cluster_topo_format(t, &out);
    textbuf_append(&out, "", 1);
    ck_assert_str_eq(out.p,
        "cluster-node " ID4 " 127.0.0.1:7004 0-8191\n"
        "cluster-node " ID1 " 127.0.0.1:7001 replicaof " ID4 "\n"
        "cluster-node " ID2 " 127.0.0.1:7002 8192-16383\n"
        "cluster-node " ID5 " 127.0.0.1:7005 replicaof " ID4 "\n");
    /* Read back (add() splits with strtok, so lines are cut by hand). */
    struct cluster_topo *old = t;
    t = cluster_topo_create();
    for (char *line = out.p, *nl; (nl = strchr(line, '\n')) != NULL;
         line = nl + 1) {
        *nl = '\0';
        ck_assert_int_eq(add(line + strlen("cluster-node ")), 0);
    }
    ck_assert_int_eq(cluster_topo_link(t, why, sizeof(why)), 0);
    ck_assert_mem_eq(t->owner, old->owner, sizeof(t->owner));
    cluster_topo_free(old);
    textbuf_free(&out);
}
END_TEST

Suite *
cluster_suite(void)
{
    Suite *s = suite_create("cluster");
    TCase *tc = tcase_create("topology");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_keyslot_matches_redis_cluster, 0, 2);
    tcase_add_loop_test(tc, test_crc16_four_bytes_a_step_equals_bit_by_bit,
                        0, 2);
    tcase_add_test(tc, test_three_nodes_own_their_ranges);
    tcase_add_test(tc, test_ranges_single_slots_gaps_and_names);
    tcase_add_test(tc, test_bad_lines_are_rejected_and_change_nothing);
    tcase_add_test(tc, test_overlapping_ranges_name_the_owner);
    tcase_add_test(tc, test_find_myself_by_id_or_address);
    tcase_add_test(tc, test_find_myself_ambiguous_port_or_empty_topology);
    tcase_add_test(tc, test_config_file_lines_are_read_and_skipped_by_options);
    tcase_add_test(tc, test_config_file_errors_say_where);
    tcase_add_test(tc, test_replica_lines_join_their_primarys_shard);
    tcase_add_test(tc, test_bad_replica_lines_are_rejected);
    tcase_add_test(tc, test_replica_of_unknown_node_or_of_a_replica_is_refused);
    tcase_add_test(tc, test_promotion_moves_slots_and_replicas_to_the_new_primary);
    tcase_add_test(tc, test_format_writes_lines_that_read_back_the_same);
    suite_add_tcase(s, tc);

    /* A million keys: a few seconds under AddressSanitizer. */
    tc = tcase_create("keyslot");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_clmul_and_tables_agree_on_random_keys);
    suite_add_tcase(s, tc);
    return s;
}
