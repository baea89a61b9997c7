/*
 * check_snapshot.c - the snapshot file (server/snapshot.c) in-process: a
 * keyspace built with the real commands (no sockets, the clock set by
 * hand) written to a file in a temporary folder and loaded into a fresh
 * keyspace; damaged files refused with the loader's words and nothing
 * left loaded; the older versions the loader still reads, built here
 * byte by byte from the format snapshot.h describes.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithms/fixed_window.h"
#include "lib/crc32.h"
#include "lib/file.h"
#include "lib/mem.h"
#include "protocol/obuf.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/commands.h"
#include "server/keyspace.h"
#include "server/server.h"
#include "server/snapshot.h"
#include "tests/unit/suites.h"

#define MS   INT64_C(1000000)
#define SEC  (1000 * MS)
#define T0   (INT64_C(1700000000) * SEC)
#define ERRLEN 512
#define MAGIC "CGSNAP01"
#define HEADER 24                   /* magic, version, 0, written_at */

static const unsigned char seed[16] = { 0x51, 0x4a, 0x90 };
static struct conn *client;
static char dir[64];
static char path[128];

static void
setup(void)
{
    ck_assert_int_eq(conf_init(&srv.conf), 0);
    server_apply_limits();
    ck_assert_int_eq(cmd_setup(command_table, command_count), 0);
    clock_reset_clamp();
    clock_set_fake_wall(T0);
    ck_assert_int_eq(keyspace_init(seed, T0), 0);
    srv.loop = uv_default_loop();
    client = calloc(1, sizeof(*client));
    ck_assert_ptr_nonnull(client);
    obuf_init(&client->out);
    client->proto = 2;
    client->authenticated = true;
    snprintf(dir, sizeof(dir), "/tmp/check_snapshot.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/dump.snap", dir);
}

static void
teardown(void)
{
    unlink(path);
    rmdir(dir);
    obuf_deinit(&client->out);
    mem_free(client->name);
    free(client);
    keyspace_teardown();
    conf_deinit(&srv.conf);
    clock_set_fake_wall(0);
    clock_reset_clamp();
}

/* Run one command (NULL-terminated words) and return its reply's first
 * byte; the reply must not be an error. */
static char
run(const char *first, ...)
{
    char *argv[16];
    size_t lens[16];
    size_t argc = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a != NULL && argc < 16;
         a = va_arg(ap, const char *)) {
        argv[argc] = (char *)a;
        lens[argc++] = strlen(a);
    }
    va_end(ap);
    struct resp_request req = { argc, argv, lens, 0 };
    client->hint.valid = false;
    cmd_batch_begin();
    cmd_execute(client, &req);
    struct iovec iov[4];
    size_t bytes;
    ck_assert_uint_gt(obuf_pending(&client->out), 0);
    ck_assert_uint_ge(obuf_iov(&client->out, 0, iov, 4, &bytes), 1);
    char first_byte = *(const char *)iov[0].iov_base;
    ck_assert_msg(first_byte != '-', "%s: %.*s", first,
                  (int)iov[0].iov_len, (const char *)iov[0].iov_base);
    obuf_consume(&client->out, obuf_pending(&client->out));
    return first_byte;
}

/* Keys of every type, in databases 0, 3 and 15, made by their commands at
 * several times; the number of keys. */
static size_t
build_keyspace(void)
{
    static const int dbs[] = { 0, 3, 15 };
    size_t n = 0;
    for (size_t d = 0; d < 3; d++) {
        char db[8];
        snprintf(db, sizeof(db), "%d", dbs[d]);
        run("SELECT", db, NULL);
        for (int step = 0; step < 3; step++) {
            clock_set_fake_wall(T0 + step * 1500 * MS + (int64_t)d * MS);
            run("CL.THROTTLE", "cl", "15", "30", "60", NULL);
            run("RL.FIXED", "fixed", "10", "60", NULL);
            run("RL.SLIDING", "sliding", "10", "60", "COST", "2", NULL);
            run("RL.LOG", "log", "10", "60", "META", step ? "bob" : "al",
                NULL);
            run("RL.TIERS", "tiers", "10", "1", "100", "60", NULL);
            run("GCRA", "gcra", "10", "5", "60", NULL);
            run("INCREX", "int", "BYINT", "5", "EX", "100", NULL);
            run("INCREX", "float", "BYFLOAT", "1.25", NULL);
        }
        n += 8;
    }
    run("SELECT", "0", NULL);
    clock_set_fake_wall(T0 + 5 * SEC);
    ck_assert_uint_eq(keyspace_total_keys(), n);
    return n;
}

static const char *const key_names[] = {
    "cl", "fixed", "sliding", "log", "tiers", "gcra", "int", "float",
};
#define NKEYS (sizeof(key_names) / sizeof(*key_names))

/* What a database holds, key by key: type, expiry, encoding. */
struct image {
    uint8_t type[NKEYS];
    int64_t expire_at[NKEYS];
    struct membuf b[NKEYS];
    size_t size;
};

static void
take_image(int db, int64_t now, struct image *im)
{
    memset(im, 0, sizeof(*im));
    struct store *s = keyspace_db(db);
    ck_assert_ptr_nonnull(s);
    im->size = store_size(s);
    for (size_t i = 0; i < NKEYS; i++) {
        struct store_rec *r = store_lookup(s, key_names[i],
                                           strlen(key_names[i]), now);
        if (r == NULL) {
            continue;
        }
        im->type[i] = r->type;
        im->expire_at[i] = r->expire_at;
        ck_assert(keytype_encode(r, now, &im->b[i]));
    }
}

static void
free_image(struct image *im)
{
    for (size_t i = 0; i < NKEYS; i++) {
        mem_free(im->b[i].p);
    }
}

static void
assert_same_image(const struct image *a, const struct image *b)
{
    ck_assert_uint_eq(a->size, b->size);
    for (size_t i = 0; i < NKEYS; i++) {
        ck_assert_msg(a->type[i] == b->type[i], "%s: type %u, then %u",
                      key_names[i], a->type[i], b->type[i]);
        ck_assert_int_eq(a->expire_at[i], b->expire_at[i]);
        ck_assert_uint_eq(a->b[i].len, b->b[i].len);
        if (a->b[i].len > 0) {
            ck_assert_mem_eq(a->b[i].p, b->b[i].p, a->b[i].len);
        }
    }
}

static void
fresh_keyspace(void)
{
    keyspace_teardown();
    ck_assert_int_eq(keyspace_init(seed, T0), 0);
    ck_assert_uint_eq(keyspace_total_keys(), 0);
}

static void
write_snapshot(void)
{
    char err[ERRLEN] = "";
    ck_assert_msg(snapshot_write(path, err, sizeof(err)) == 0, "%s", err);
}

static unsigned char *
read_file(size_t *len)
{
    unsigned char *f = file_read_all(path, len);
    ck_assert_ptr_nonnull(f);
    return f;
}

static void
write_bytes(const unsigned char *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* Load the file, expecting a refusal with the loader's words (after the
 * path) and no key left in any database. */
static void
expect_refused(const char *why)
{
    char err[ERRLEN] = "", want[ERRLEN];
    ck_assert_int_eq(snapshot_load_file(path, err, sizeof(err)), -1);
    snprintf(want, sizeof(want), "%s: %s", path, why);
    ck_assert_str_eq(err, want);
    ck_assert_uint_eq(keyspace_total_keys(), 0);
}

static void
load_ok(void)
{
    char err[ERRLEN] = "";
    ck_assert_msg(snapshot_load_file(path, err, sizeof(err)) == 0, "%s", err);
}

/* ------------------------------------------------------------------------
 * Round trip
 * --------------------------------------------------------------------- */

START_TEST(test_every_type_in_several_databases_loads_back_as_written)
{
    static const int dbs[] = { 0, 3, 15 };
    size_t n = build_keyspace();
    int64_t now = clock_wall_now();
    struct image before[3], after[3];
    for (size_t d = 0; d < 3; d++) {
        take_image(dbs[d], now, &before[d]);
        ck_assert_uint_eq(before[d].size, NKEYS);
        for (size_t i = 0; i < NKEYS; i++) {
            ck_assert_uint_gt(before[d].b[i].len, 0);
        }
    }
    ck_assert_uint_eq(before[0].type[0], KEY_INT);
    ck_assert_uint_eq(before[0].type[3], KEY_LOG);
    ck_assert_uint_eq(before[0].type[4], KEY_TIERS);
    ck_assert_uint_eq(before[0].type[5], KEY_REDIS_GCRA);
    ck_assert_uint_eq(before[0].type[6], KEY_INT);
    ck_assert_uint_eq(before[0].type[7], KEY_STR);
    ck_assert_int_eq(before[0].expire_at[7], STORE_NEVER);
    write_snapshot();
    fresh_keyspace();
    load_ok();
    ck_assert_uint_eq(keyspace_total_keys(), n);
    for (size_t d = 0; d < 3; d++) {
        take_image(dbs[d], now, &after[d]);
        assert_same_image(&before[d], &after[d]);
        free_image(&before[d]);
        free_image(&after[d]);
    }
    ck_assert_uint_eq(store_size(keyspace_db(1)), 0);
}
END_TEST

/* Keys fresh when the file is written are left out of it; keys that go
 * fresh before it is loaded are not loaded. */
START_TEST(test_keys_gone_fresh_are_neither_written_nor_loaded)
{
    run("CL.THROTTLE", "short", "1", "1", "1", NULL);    /* about 1 s */
    run("RL.FIXED", "long", "10", "3600", NULL);
    run("INCREX", "forever", "BYINT", "1", NULL);
    run("INCREX", "ex", "BYINT", "1", "PX", "500", NULL);
    clock_set_fake_wall(T0 + 600 * MS);     /* "ex" is fresh, not removed */
    write_snapshot();
    size_t len;
    unsigned char *f = read_file(&len);
    uint64_t records;
    memcpy(&records, f + len - 12, 8);
    ck_assert_uint_eq(records, 3);
    free(f);
    fresh_keyspace();
    clock_set_fake_wall(T0 + 10 * SEC);
    load_ok();
    ck_assert_uint_eq(keyspace_total_keys(), 2);
    ck_assert_ptr_nonnull(store_lookup(srv.store, "long", 4, T0 + 10 * SEC));
    ck_assert_ptr_nonnull(store_lookup(srv.store, "forever", 7,
                                       T0 + 10 * SEC));
}
END_TEST

START_TEST(test_a_missing_file_is_an_empty_start)
{
    char err[ERRLEN] = "";
    ck_assert_int_eq(snapshot_load_file(path, err, sizeof(err)), 1);
    ck_assert_str_eq(err, "");
    ck_assert_uint_eq(keyspace_total_keys(), 0);
}
END_TEST

START_TEST(test_a_file_that_cannot_be_created_is_an_error)
{
    char err[ERRLEN] = "", bad[160];
    run("RL.FIXED", "k", "10", "60", NULL);
    snprintf(bad, sizeof(bad), "%s/no/such/dir/dump.snap", dir);
    ck_assert_int_eq(snapshot_write(bad, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot create"));
    ck_assert_ptr_nonnull(strstr(err, "No such file or directory"));
    ck_assert_int_ne(access(bad, F_OK), 0);
}
END_TEST

/* ------------------------------------------------------------------------
 * Damaged files
 * --------------------------------------------------------------------- */

/* Cut after any byte (a torn write), the file is refused and nothing of it
 * is loaded. */
START_TEST(test_a_file_cut_anywhere_is_refused)
{
    build_keyspace();
    write_snapshot();
    size_t len;
    unsigned char *f = read_file(&len);
    ck_assert_uint_gt(len, 200);
    fresh_keyspace();
    size_t cuts = 0;
    for (size_t cut = 0; cut < len; cut += 3) {
        char why[96];
        write_bytes(f, cut);
        if (cut < HEADER + 8 + 4) {
            snprintf(why, sizeof(why), "truncated (%zu bytes)", cut);
        } else {
            snprintf(why, sizeof(why), "checksum mismatch: the file is "
                     "corrupt or truncated");
        }
        expect_refused(why);
        cuts++;
    }
    ck_assert_uint_ge(cuts, len / 3);
    free(f);
}
END_TEST

/* A flipped bit anywhere (one that makes no known version of 5): in the
 * magic or version the file is no
 * snapshot; anywhere else the checksum says so. */
START_TEST(test_a_flipped_bit_anywhere_is_refused)
{
    build_keyspace();
    write_snapshot();
    size_t len;
    unsigned char *f = read_file(&len);
    fresh_keyspace();
    for (size_t at = 0; at < len; at++) {
        f[at] ^= 0x08;
        write_bytes(f, len);
        expect_refused(at < 12 ? "not a cellgate snapshot of version 1 to 6"
                               : "checksum mismatch: the file is corrupt "
                                 "or truncated");
        f[at] ^= 0x08;
    }
    write_bytes(f, len);                /* and the file itself loads */
    load_ok();
    ck_assert_uint_eq(keyspace_total_keys(), 3 * NKEYS);
    free(f);
}
END_TEST

/* ------------------------------------------------------------------------
 * Files built by hand
 * --------------------------------------------------------------------- */

struct fbuf {
    unsigned char p[4096];
    size_t len;
};

static void
fput(struct fbuf *b, const void *p, size_t n)
{
    ck_assert_uint_le(b->len + n, sizeof(b->p));
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void
fput_u8(struct fbuf *b, uint8_t v)
{
    fput(b, &v, 1);
}

static void
fput_u32(struct fbuf *b, uint32_t v)
{
    fput(b, &v, 4);
}

static void
fput_u64(struct fbuf *b, uint64_t v)
{
    fput(b, &v, 8);
}

/* Header of a file of this version; before version 4 the record count
 * follows it. */
static void
fheader(struct fbuf *b, uint32_t version, uint64_t records)
{
    b->len = 0;
    fput(b, MAGIC, 8);
    fput_u32(b, version);
    fput_u32(b, 0);
    fput_u64(b, (uint64_t)T0);
    if (version < 4) {
        fput_u64(b, records);
    }
}

static void
fmarker(struct fbuf *b, uint32_t db)
{
    fput_u8(b, 0);
    fput_u32(b, db);
}

static void
frecord(struct fbuf *b, uint8_t type, const char *key, int64_t expire_at,
        const void *state, uint32_t state_len)
{
    fput_u8(b, type);
    fput_u32(b, (uint32_t)strlen(key));
    fput_u64(b, (uint64_t)expire_at);
    fput_u32(b, state_len);
    fput(b, key, strlen(key));
    fput(b, state, state_len);
}

/* The trailer: from version 4 the count, then the CRC of its kind. */
static void
ffinish(struct fbuf *b, uint32_t version, uint64_t records)
{
    if (version >= 4) {
        fput_u64(b, records);
        fput_u32(b, crc32c_update(0, b->p, b->len));
    } else {
        fput_u32(b, crc32_update(0, b->p, b->len));
    }
    write_bytes(b->p, b->len);
}

/* A tiers state in encoding version 1 (no retention) or 2. */
static uint32_t
tiers_state(unsigned char *out, int version, int64_t keep)
{
    uint32_t n = 2, len = 0;
    int64_t b[4] = { T0 / SEC - 3, 2, T0 / SEC - 1, 5 };
    if (version >= 2) {
        memcpy(out, &keep, 8);
        len = 8;
    }
    memcpy(out + len, &n, 4);
    memcpy(out + len + 4, b, sizeof(b));
    return len + 4 + (uint32_t)sizeof(b);
}

START_TEST(test_older_versions_still_load)
{
    struct fbuf b;
    unsigned char st[64];
    struct fwin_state fw = { T0, 4 };
    int64_t tiers_expire = (T0 / SEC - 1 + 30) * SEC;
    for (uint32_t v = 1; v <= 4; v++) {
        fresh_keyspace();
        uint64_t n = v >= 3 ? 3 : 2;
        fheader(&b, v, n);
        frecord(&b, KEY_FIXED, "fw", T0 + 60 * SEC, &fw, sizeof(fw));
        /* Version 1 states are encoding 1: tiers without their keep. */
        frecord(&b, KEY_TIERS, "tiers", tiers_expire, st,
                tiers_state(st, v == 1 ? 1 : 2, 30));
        if (v >= 3) {
            fmarker(&b, 7);
            frecord(&b, KEY_FIXED, "in7", T0 + 60 * SEC, &fw, sizeof(fw));
        }
        ffinish(&b, v, n);
        load_ok();
        ck_assert_uint_eq(keyspace_total_keys(), n);
        struct store_rec *r = store_lookup(srv.store, "tiers", 5, T0);
        ck_assert_ptr_nonnull(r);
        const struct ks_tiers *ts = store_rec_state(r);
        ck_assert_int_eq(ts->keep, 30);
        ck_assert_uint_eq(ts->st.len, 2);
        ck_assert_int_eq(ts->st.b[1].count, 5);
        /* A tiers key's follows from its buckets: it lives through the
         * ms it goes fresh in. */
        ck_assert_int_eq(r->expire_at, tiers_expire / MS);
        r = store_lookup(srv.store, "fw", 2, T0);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(((struct fwin_state *)store_rec_state(r))->count, 4);
        /* The others' was the ns a key was dead from: now the ms it
         * lives through, the one before. */
        ck_assert_int_eq(r->expire_at, (T0 + 60 * SEC) / MS - 1);
        if (v >= 3) {
            ck_assert_ptr_nonnull(store_lookup(keyspace_db(7), "in7", 3, T0));
        }
    }
}
END_TEST

START_TEST(test_versions_the_loader_does_not_know_are_refused)
{
    static const uint32_t versions[] = { 0, 7, 0xffffffffu };
    struct fbuf b;
    struct fwin_state fw = { T0, 4 };
    for (size_t i = 0; i < 3; i++) {
        /* Either checksum, right for the bytes: the version is refused. */
        for (uint32_t like = 3; like <= 4; like++) {
            fheader(&b, like, 1);
            memcpy(b.p + 8, &versions[i], 4);
            frecord(&b, KEY_FIXED, "fw", T0 + 60 * SEC, &fw, sizeof(fw));
            ffinish(&b, like, 1);
            expect_refused("not a cellgate snapshot of version 1 to 6");
        }
    }
    /* Another magic, likewise. */
    fheader(&b, 4, 0);
    memcpy(b.p, "CGJRNL01", 8);
    ffinish(&b, 4, 0);
    expect_refused("not a cellgate snapshot of version 1 to 6");
    /* Versions 1 and 2 have no database markers. */
    for (uint32_t v = 1; v <= 2; v++) {
        fheader(&b, v, 0);
        fmarker(&b, 0);
        ffinish(&b, v, 0);
        expect_refused("truncated or malformed record");
    }
}
END_TEST

/* A file whose checksum holds but whose records do not: refused, and what
 * was loaded before the fault is gone again. */
START_TEST(test_bad_records_behind_a_good_checksum_leave_nothing_loaded)
{
    struct fbuf b;
    struct fwin_state fw = { T0, 4 };
    int64_t exp = T0 + 60 * SEC;

    fheader(&b, 4, 0);
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    fmarker(&b, 16);
    frecord(&b, KEY_FIXED, "b", exp, &fw, sizeof(fw));
    ffinish(&b, 4, 2);
    expect_refused("it holds keys of database 16, but this server has 16 "
                   "databases (see 'databases')");

    fheader(&b, 4, 0);
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    frecord(&b, KEY_FIXED, "b", exp, &fw, sizeof(fw));
    ffinish(&b, 4, 3);
    expect_refused("2 records, but the file says 3");

    fheader(&b, 4, 0);
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    ffinish(&b, 4, 2);
    expect_refused("duplicate key");

    fheader(&b, 4, 0);
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    frecord(&b, KEY_FIXED, "short", exp, &fw, sizeof(fw) - 1);
    ffinish(&b, 4, 2);
    expect_refused("malformed fixed state");

    fheader(&b, 4, 0);
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    frecord(&b, KEY_TYPE_LAST + 2, "x", exp, &fw, sizeof(fw));
    ffinish(&b, 4, 2);
    expect_refused("unknown key type 15");

    /* A record whose lengths run past the records. */
    fheader(&b, 4, 0);
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    fput_u8(&b, KEY_FIXED);
    fput_u32(&b, 1);
    fput_u64(&b, (uint64_t)exp);
    fput_u32(&b, 1000);
    fput(&b, "k", 1);
    ffinish(&b, 4, 2);
    expect_refused("truncated or malformed record");

    /* The same records, right, load. */
    fheader(&b, 4, 0);
    frecord(&b, KEY_FIXED, "a", exp, &fw, sizeof(fw));
    fmarker(&b, 15);
    frecord(&b, KEY_FIXED, "b", exp, &fw, sizeof(fw));
    ffinish(&b, 4, 2);
    load_ok();
    ck_assert_uint_eq(keyspace_total_keys(), 2);
    ck_assert_ptr_nonnull(store_lookup(keyspace_db(15), "b", 1, T0));
}
END_TEST

Suite *
snapshot_suite(void)
{
    Suite *s = suite_create("snapshot");
    TCase *tc = tcase_create("file");
    tcase_add_checked_fixture(tc, setup, teardown);
    /* The cut and flipped files are written and loaded once per byte of
     * the snapshot: Check's 4 s default catches hangs, not this work,
     * which a loaded machine under ASan takes longer over. */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_every_type_in_several_databases_loads_back_as_written);
    tcase_add_test(tc, test_keys_gone_fresh_are_neither_written_nor_loaded);
    tcase_add_test(tc, test_a_missing_file_is_an_empty_start);
    tcase_add_test(tc, test_a_file_that_cannot_be_created_is_an_error);
    tcase_add_test(tc, test_a_file_cut_anywhere_is_refused);
    tcase_add_test(tc, test_a_flipped_bit_anywhere_is_refused);
    tcase_add_test(tc, test_older_versions_still_load);
    tcase_add_test(tc, test_versions_the_loader_does_not_know_are_refused);
    tcase_add_test(tc, test_bad_records_behind_a_good_checksum_leave_nothing_loaded);
    suite_add_tcase(s, tc);
    return s;
}
