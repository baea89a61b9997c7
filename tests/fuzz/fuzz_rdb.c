/*
 * fuzz_rdb.c - libFuzzer driver for Redis's RDB format as cellgate reads
 * it (lib/rdb_read.c, server/rdb/load.c). The first byte picks the way in:
 *   0: the rest is one object, its RDB type first, as RESTORE reads one
 *      after the payload's footer checked (rdb_load_object()): strings,
 *      every collection encoding, cellgate's own limiter payload, streams
 *      and module values read over or refused (bit 2 of the first byte
 *      chooses which);
 *   1: the rest is an RDB file after "REDIS0010" (rdb_load_buffer()):
 *      opcodes, keys, expiries, databases, AUX fields, functions (refused
 *      here: no script wing), EOF and a checksum (a zero one is not
 *      checked, so the loader's paths past EOF are reached).
 * The keyspace is made anew for each input. Nothing may crash or read
 * out of bounds, and the counted allocator must be back where it started
 * after each input and the keyspace's teardown (a refused load empties
 * every database; a built collection not handed over is freed).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/rdb_read.h"
#include "server/clock.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/rdb/load.h"
#include "server/server.h"

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "fuzz_rdb: %s failed\n", #x); abort(); } } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    CHECK(conf_init(&srv.conf) == 0);
    srv.conf.loglevel = LOGLEVEL_WARNING;
    log_set_level(LOG_WARNING);
    clock_set_fake_wall(1700000000LL * 1000000000LL);
    return 0;
}

static void
one_object(const uint8_t *data, size_t size, bool skip)
{
    struct rdb_obj o = { 0 };
    if (size == 0) {
        return;
    }
    struct rdb_cur c = rdb_cur_make(data + 1, size - 1);
    (void)rdb_load_object(&c, data[0], skip, &o);
    CHECK(c.off <= c.len);
    rdb_obj_free(&o);
}

static void
one_file(const uint8_t *data, size_t size)
{
    char err[512];
    unsigned char *buf = malloc(size + 9);
    CHECK(buf != NULL);
    memcpy(buf, "REDIS0010", 9);
    memcpy(buf + 9, data, size);
    (void)rdb_load_buffer(buf, size + 9, "fuzz", err, sizeof(err));
    free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char seed[16] = { 7 };
    if (size == 0) {
        return 0;
    }
    size_t baseline = mem_used();
    CHECK(keyspace_init(seed, clock_wall_now()) == 0);
    srv.conf.rdb_unsupported_keys = data[0] & 4 ? RDB_UNSUPPORTED_SKIP
                                                : RDB_UNSUPPORTED_REFUSE;
    if (data[0] % 2 == 0) {
        one_object(data + 1, size - 1, data[0] & 4);
    } else {
        one_file(data + 1, size - 1);
        keyspace_flush(-1);
    }
    keyspace_teardown();
    CHECK(mem_used() == baseline);
    return 0;
}
