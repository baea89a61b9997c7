/*
 * check_cluster_msg.c - the cluster bus's messages (protocol/cluster_msg.c)
 * against frames built here byte by byte at cluster.h's offsets (not by
 * the encoder), the encoder's bytes at those offsets, and every reason
 * clusterProcessPacket has to ignore a frame, plus the stricter ones.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/cluster_msg.h"
#include "suites.h"

static uint8_t frame[8192];

static void
put16(size_t off, unsigned v)
{
    frame[off] = (uint8_t)(v >> 8);
    frame[off + 1] = (uint8_t)v;
}

static void
put32(size_t off, uint32_t v)
{
    put16(off, v >> 16);
    put16(off + 2, v & 0xffff);
}

static void
put64(size_t off, uint64_t v)
{
    put32(off, (uint32_t)(v >> 32));
    put32(off + 4, (uint32_t)v);
}

/* A header as Redis's clusterBuildMessageHdr lays it out. */
static void
build_header(unsigned type, uint32_t totlen)
{
    memset(frame, 0, sizeof(frame));
    memcpy(frame, "RCmb", 4);
    put32(4, totlen);
    put16(8, 1);
    put16(10, 7000);
    put16(12, type);
    put64(16, 12);                          /* currentEpoch */
    put64(24, 7);                           /* configEpoch */
    put64(32, 123456789);                   /* offset */
    memset(frame + 40, 'a', 40);            /* sender */
    frame[80] = 0x81;                       /* slots 0 and 7 */
    frame[80 + 2047] = 0x80;                /* slot 16383 */
    memcpy(frame + 2168, "10.0.0.1", 8);    /* myip */
    put16(2246, 0);                         /* pport */
    put16(2248, 17000);                     /* cport */
    put16(2250, CMSG_NODE_MASTER);
    frame[2252] = 0;
}

static void
build_gossip(unsigned i, char c, const char *ip, unsigned port)
{
    size_t at = 2256 + (size_t)i * 104;
    memset(frame + at, c, 40);
    put32(at + 40, 1700000000);
    put32(at + 44, 1700000001);
    memcpy(frame + at + 48, ip, strlen(ip));
    put16(at + 94, port);
    put16(at + 96, port + 10000);
    put16(at + 98, CMSG_NODE_SLAVE | CMSG_NODE_PFAIL);
    put16(at + 100, 0);
}

START_TEST(test_decodes_a_ping_built_at_redis_offsets)
{
    struct cmsg m;
    struct cmsg_gossip g;
    size_t len = 2256 + 2 * 104 + 8 + 16;
    build_header(CMSG_PING, (uint32_t)len);
    put16(14, 2);
    build_gossip(0, 'b', "127.0.0.1", 7001);
    build_gossip(1, 'c', "::1", 7002);
    put16(2214, 1);                         /* extensions */
    frame[2253] = CMSG_FLAG0_EXT_DATA;
    put32(2256 + 208, 24);
    put16(2256 + 208 + 4, CMSG_EXT_HOSTNAME);
    memcpy(frame + 2256 + 208 + 8, "host-one.example", 16);
    /* 16 bytes of name then its NUL would need 24: make it 15 + NUL */
    frame[2256 + 208 + 8 + 15] = '\0';
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_OK);
    ck_assert_uint_eq(m.type, CMSG_PING);
    ck_assert_uint_eq(m.port, 7000);
    ck_assert_uint_eq(m.current_epoch, 12);
    ck_assert_uint_eq(m.config_epoch, 7);
    ck_assert_uint_eq(m.offset, 123456789);
    ck_assert(memcmp(m.sender, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 40) == 0);
    ck_assert(cmsg_slot_test(m.myslots, 0) && cmsg_slot_test(m.myslots, 7));
    ck_assert(!cmsg_slot_test(m.myslots, 1));
    ck_assert(cmsg_slot_test(m.myslots, 16383));
    ck_assert_str_eq(m.myip, "10.0.0.1");
    ck_assert_uint_eq(m.cport, 17000);
    ck_assert_uint_eq(m.flags, CMSG_NODE_MASTER);
    ck_assert_uint_eq(m.count, 2);
    ck_assert(!m.has_clock);
    cmsg_gossip_get(&m, 1, &g);
    ck_assert(g.name[0] == 'c' && g.name[39] == 'c');
    ck_assert_str_eq(g.ip, "::1");
    ck_assert_uint_eq(g.port, 7002);
    ck_assert_uint_eq(g.cport, 17002);
    ck_assert_uint_eq(g.ping_sent, 1700000000);
    ck_assert_uint_eq(g.pong_received, 1700000001);
    ck_assert_uint_eq(g.flags, CMSG_NODE_SLAVE | CMSG_NODE_PFAIL);
    ck_assert_ptr_nonnull(m.hostname);
    ck_assert_uint_eq(m.hostname_len, 15);
    ck_assert(memcmp(m.hostname, "host-one.exampl", 15) == 0);
}
END_TEST

START_TEST(test_encoder_writes_redis_offsets_and_round_trips)
{
    static uint8_t out[8192];
    struct cmsg m, d;
    struct cmsg_gossip g[1];
    memset(&m, 0, sizeof(m));
    memset(g, 0, sizeof(g));
    m.type = CMSG_MEET;
    m.port = 6379;
    m.cport = 16379;
    m.current_epoch = 5;
    m.config_epoch = 3;
    m.offset = 99;
    memset(m.sender, 'f', 40);
    m.myslots[0] = 1;
    m.flags = CMSG_NODE_MASTER | CMSG_NODE_MYSELF;
    m.has_clock = true;
    m.clock_ms = 1700000000123;
    m.echo_ms = 1700000000000;
    memset(g[0].name, 'e', 40);
    strcpy(g[0].ip, "192.168.1.20");
    g[0].port = 6380;
    m.count = 1;
    m.gossip = g;
    m.hostname = "abc";
    m.hostname_len = 3;
    size_t n = cmsg_encode(&m, out);
    ck_assert_uint_eq(n, 2256 + 104 + 16);
    ck_assert_uint_eq(n, cmsg_size(&m));
    ck_assert(memcmp(out, "RCmb", 4) == 0);
    ck_assert_uint_eq(out[7], (uint8_t)n);
    ck_assert_uint_eq(out[6], (uint8_t)(n >> 8));
    ck_assert_uint_eq(out[9], 1);                   /* version */
    ck_assert_uint_eq(out[13], CMSG_MEET);
    ck_assert_uint_eq(out[15], 1);                  /* count */
    ck_assert_uint_eq(out[2215], 1);                /* extensions */
    ck_assert_uint_eq(out[2253], CMSG_FLAG0_EXT_DATA);
    ck_assert(memcmp(out + 2216, "cgC1", 4) == 0);  /* clock's magic */
    ck_assert(memcmp(out + 2256, "eeee", 4) == 0);
    ck_assert(memcmp(out + 2256 + 48, "192.168.1.20", 12) == 0);
    ck_assert_uint_eq(out[2256 + 104 + 3], 16);     /* extension length */
    ck_assert(memcmp(out + 2256 + 104 + 8, "abc\0\0\0\0\0", 8) == 0);
    ck_assert_int_eq(cmsg_decode(out, n, &d), CMSG_OK);
    ck_assert(d.has_clock);
    ck_assert_int_eq(d.clock_ms, 1700000000123);
    ck_assert_int_eq(d.echo_ms, 1700000000000);
    ck_assert_uint_eq(d.port, 6379);
    ck_assert_uint_eq(d.cport, 16379);
    ck_assert_uint_eq(d.offset, 99);
    ck_assert_uint_eq(d.hostname_len, 3);
}
END_TEST

START_TEST(test_every_other_type_round_trips)
{
    static uint8_t out[8192];
    struct cmsg m, d;
    memset(&m, 0, sizeof(m));
    memset(m.sender, '1', 40);

    m.type = CMSG_FAIL;
    memset(m.about, '2', 40);
    ck_assert_uint_eq(cmsg_encode(&m, out), 2296);
    ck_assert_int_eq(cmsg_decode(out, 2296, &d), CMSG_OK);
    ck_assert(memcmp(d.about, m.about, 40) == 0);

    m.type = CMSG_PUBLISHSHARD;
    m.channel = (const uint8_t *)"chan";
    m.channel_len = 4;
    m.message = (const uint8_t *)"hello";
    m.message_len = 5;
    size_t n = cmsg_encode(&m, out);
    ck_assert_uint_eq(n, 2256 + 8 + 9);
    ck_assert_int_eq(cmsg_decode(out, n, &d), CMSG_OK);
    ck_assert(d.channel_len == 4 && memcmp(d.channel, "chan", 4) == 0);
    ck_assert(d.message_len == 5 && memcmp(d.message, "hello", 5) == 0);

    m.type = CMSG_UPDATE;
    m.update_epoch = 77;
    memset(m.update_name, '3', 40);
    m.update_slots[100] = 0xff;
    n = cmsg_encode(&m, out);
    ck_assert_uint_eq(n, 2256 + 2096);
    ck_assert_int_eq(cmsg_decode(out, n, &d), CMSG_OK);
    ck_assert_uint_eq(d.update_epoch, 77);
    ck_assert(cmsg_slot_test(d.update_slots, 800));
    ck_assert(!cmsg_slot_test(d.update_slots, 799));

    unsigned empty[] = {CMSG_AUTH_REQUEST, CMSG_AUTH_ACK, CMSG_MFSTART};
    for (size_t i = 0; i < 3; i++) {
        m.type = (uint16_t)empty[i];
        m.mflags[0] = CMSG_FLAG0_FORCEACK;
        ck_assert_uint_eq(cmsg_encode(&m, out), 2256);
        ck_assert_int_eq(cmsg_decode(out, 2256, &d), CMSG_OK);
        ck_assert_uint_eq(d.mflags[0], CMSG_FLAG0_FORCEACK);
        ck_assert_int_eq(cmsg_decode(out, 2257, &d), CMSG_ELENGTH);
    }

    m.type = CMSG_MODULE;
    m.module_payload = (const uint8_t *)"xyz";
    m.module_len = 3;
    n = cmsg_encode(&m, out);
    ck_assert_uint_eq(n, 2256 + 16);
    ck_assert_int_eq(cmsg_decode(out, n, &d), CMSG_OK);
    ck_assert_uint_eq(d.module_len, 3);
}
END_TEST

START_TEST(test_frames_redis_ignores_are_refused)
{
    struct cmsg m;
    build_header(CMSG_PING, 2256);
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_OK);
    ck_assert_int_eq(cmsg_decode(frame, 2255, &m), CMSG_ESHORT);
    ck_assert_int_eq(cmsg_decode(frame, 100, &m), CMSG_ESHORT);
    put16(8, 2);
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_EVERSION);
    put16(8, 1);
    put16(14, 1);                   /* one gossip entry that is not there */
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_ELENGTH);
    put16(14, 0xffff);
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_ELENGTH);
    put16(14, 0);
    put32(4, 2300);                 /* totlen over what was read */
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_ESHORT);
    put32(4, 2256);
    ck_assert_int_eq(cmsg_decode(frame, 2300, &m), CMSG_ELENGTH);
    frame[0] = 'X';
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_ESIG);

    build_header(CMSG_FAIL, 2256);  /* FAIL without its name */
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_ELENGTH);
    build_header(CMSG_UPDATE, 2300);
    ck_assert_int_eq(cmsg_decode(frame, 2300, &m), CMSG_ELENGTH);

    build_header(CMSG_PUBLISH, 2256 + 8 + 4);
    put32(2256, 0xffffffff);        /* lengths that wrap 32 bits */
    put32(2260, 0x0000000d);
    ck_assert_int_eq(cmsg_decode(frame, 2256 + 12, &m), CMSG_ELENGTH);
    put32(2256, 2);
    put32(2260, 2);
    ck_assert_int_eq(cmsg_decode(frame, 2256 + 12, &m), CMSG_OK);
    build_header(CMSG_PUBLISH, 2260);
    ck_assert_int_eq(cmsg_decode(frame, 2260, &m), CMSG_ELENGTH);

    build_header(CMSG_MODULE, 2256 + 13);
    put32(2256 + 8, 0xfffffff0);
    ck_assert_int_eq(cmsg_decode(frame, 2256 + 13, &m), CMSG_ELENGTH);

    build_header(200, 2400);        /* unknown type: well formed for 7.0 */
    ck_assert_int_eq(cmsg_decode(frame, 2400, &m), CMSG_OK);
    ck_assert_uint_eq(m.type, 200);
}
END_TEST

START_TEST(test_ping_extensions_are_checked_before_read)
{
    struct cmsg m;
    size_t len = 2256 + 16;
    build_header(CMSG_PONG, (uint32_t)len);
    put16(2214, 1);
    frame[2253] = CMSG_FLAG0_EXT_DATA;
    put32(2256, 16);
    put16(2260, CMSG_EXT_HOSTNAME);
    memcpy(frame + 2264, "h", 2);
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_OK);
    ck_assert_uint_eq(m.hostname_len, 1);

    memset(frame + 2264, 'x', 8);   /* no NUL inside the extension */
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_EEXT);
    frame[2264] = 0;
    put32(2256, 12);                /* not a multiple of 8 */
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_EEXT);
    put32(2256, 24);                /* past the frame */
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_EEXT);
    put32(2256, 0);                 /* no progress */
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_EEXT);
    put32(2256, 0x10010);           /* 7.0 would truncate it to 16 */
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_EEXT);
    put32(2256, 16);
    put16(2214, 2);                 /* a second one that is not there */
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_EEXT);
    put16(2214, 0);                 /* bytes left over */
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_ELENGTH);

    put16(2260, 9);                 /* unknown extension type: skipped */
    put16(2214, 1);
    ck_assert_int_eq(cmsg_decode(frame, len, &m), CMSG_OK);
    ck_assert_ptr_null(m.hostname);

    /* without EXT_DATA the extensions count does not count */
    build_header(CMSG_PING, 2256);
    put16(2214, 5);
    ck_assert_int_eq(cmsg_decode(frame, 2256, &m), CMSG_OK);
    ck_assert_uint_eq(m.extensions, 0);
}
END_TEST

START_TEST(test_frame_length_from_first_bytes)
{
    uint32_t n = 0;
    uint8_t b[8] = {'R', 'C', 'm', 'b', 0, 0, 0x08, 0xd0};
    ck_assert_int_eq(cmsg_frame_len(b, 1 << 20, &n), CMSG_OK);
    ck_assert_uint_eq(n, 2256);
    b[7] = 0xcf;                    /* 2255: under the header */
    ck_assert_int_eq(cmsg_frame_len(b, 1 << 20, &n), CMSG_ESIG);
    b[4] = 0x7f;                    /* over the cap */
    ck_assert_int_eq(cmsg_frame_len(b, 1 << 20, &n), CMSG_ESIG);
    b[4] = 0;
    b[7] = 0xd0;
    b[1] = 'c';
    ck_assert_int_eq(cmsg_frame_len(b, 1 << 20, &n), CMSG_ESIG);
    ck_assert_str_eq(cmsg_type_name(CMSG_AUTH_REQUEST), "auth-req");
    ck_assert_str_eq(cmsg_type_name(CMSG_PUBLISHSHARD), "publishshard");
    ck_assert_str_eq(cmsg_type_name(11), "unknown");
}
END_TEST

/* A MEET redis-server 7.0.15 sent (tests/fuzz/make_bus_seeds.py caught
 * it, cluster-announce-hostname seed-host.example): decoded as 7.0 meant
 * it, and encoded back to the same bytes. */
START_TEST(test_a_real_redis_meet_decodes_and_encodes_back)
{
    static uint8_t real[4096], again[4096];
    struct cmsg m;
    FILE *f = fopen("tests/fuzz/corpus/bus/c1adbfe71f906254", "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(real, 1, sizeof(real), f);
    fclose(f);
    ck_assert_uint_eq(n, 2288);
    ck_assert_int_eq(cmsg_decode(real, n, &m), CMSG_OK);
    ck_assert_uint_eq(m.type, CMSG_MEET);
    ck_assert_uint_eq(m.count, 0);
    ck_assert_uint_eq(m.port, 23998);
    ck_assert_uint_eq(m.cport, 33998);
    ck_assert_uint_eq(m.flags, CMSG_NODE_MASTER | CMSG_NODE_MYSELF);
    ck_assert(m.hostname != NULL && m.hostname_len == 17);
    ck_assert(memcmp(m.hostname, "seed-host.example", 17) == 0);
    ck_assert(!m.has_clock);
    ck_assert_uint_eq(cmsg_encode(&m, again), n);
    ck_assert(memcmp(real, again, n) == 0);
}
END_TEST

/* Random bytes behind a valid header never read outside the frame (ASan
 * in make test-unit SANITIZE=1 and the fuzzer say so; here: no crash). */
START_TEST(test_random_bodies_decode_or_are_refused)
{
    struct cmsg m;
    srand(39);
    for (int round = 0; round < 2000; round++) {
        size_t len = 2256 + (size_t)(rand() % 600);
        uint8_t *buf = malloc(len);
        ck_assert_ptr_nonnull(buf);
        for (size_t i = 0; i < len; i++) {
            buf[i] = (uint8_t)rand();
        }
        memcpy(buf, "RCmb", 4);
        buf[4] = buf[5] = 0;
        buf[6] = (uint8_t)(len >> 8);
        buf[7] = (uint8_t)len;
        buf[8] = 0;
        buf[9] = 1;
        buf[12] = 0;
        buf[13] = (uint8_t)(round % 12);
        buf[14] = 0;
        buf[15] = (uint8_t)(rand() % 4);
        buf[2253] |= CMSG_FLAG0_EXT_DATA;
        if (cmsg_decode(buf, len, &m) == CMSG_OK && m.type <= CMSG_MEET) {
            struct cmsg_gossip g;
            for (unsigned i = 0; i < m.count; i++) {
                cmsg_gossip_get(&m, i, &g);
            }
        }
        free(buf);
    }
}
END_TEST

Suite *
cluster_msg_suite(void)
{
    Suite *s = suite_create("cluster_msg");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_decodes_a_ping_built_at_redis_offsets);
    tcase_add_test(tc, test_encoder_writes_redis_offsets_and_round_trips);
    tcase_add_test(tc, test_every_other_type_round_trips);
    tcase_add_test(tc, test_frames_redis_ignores_are_refused);
    tcase_add_test(tc, test_ping_extensions_are_checked_before_read);
    tcase_add_test(tc, test_frame_length_from_first_bytes);
    tcase_add_test(tc, test_random_bodies_decode_or_are_refused);
    tcase_add_test(tc, test_a_real_redis_meet_decodes_and_encodes_back);
    suite_add_tcase(s, tc);
    return s;
}
