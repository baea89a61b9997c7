/*
 * effects.c - see effects.h.
 */
#include "server/rdb/effects.h"

#include <stdio.h>
#include <string.h>

#include "lib/num.h"
#include "lib/rdb_write.h"
#include "server/journal.h"
#include "server/keytype.h"
#include "server/rdb/save.h"
#include "server/server.h"

/* One command: its words as a RESP array. */
static bool
put_command(struct membuf *out, size_t argc, const void *const *argv,
            const size_t *lens)
{
    char head[32];
    int k = snprintf(head, sizeof(head), "*%zu\r\n", argc);
    bool ok = membuf_put(out, head, (size_t)k);
    for (size_t i = 0; ok && i < argc; i++) {
        k = snprintf(head, sizeof(head), "$%zu\r\n", lens[i]);
        ok = membuf_put(out, head, (size_t)k) &&
             membuf_put(out, argv[i], lens[i]) && membuf_put(out, "\r\n", 2);
    }
    return ok;
}

static bool
put_words(struct membuf *out, const char *a, const char *b, const char *c)
{
    const void *argv[3] = { a, b, c };
    size_t lens[3] = { strlen(a), b ? strlen(b) : 0, c ? strlen(c) : 0 };
    return put_command(out, c ? 3 : b ? 2 : 1, argv, lens);
}

static bool
select_db(struct membuf *out, uint32_t db, int *at)
{
    char text[NUM_I64_MAXLEN];
    if (*at == (int)db) {
        return true;
    }
    *at = (int)db;
    text[num_fmt_u64(text, db)] = '\0';
    return put_words(out, "SELECT", text, NULL);
}

/* The key's state now: RESTORE ... REPLACE ABSTTL, DEL when it is gone,
 * nothing for a limiter Redis cannot hold. */
static bool
put_key(struct membuf *out, const struct journal_record *rec, int64_t now)
{
    struct store *s = rec->db < srv.ndbs ? srv.dbs[rec->db] : NULL;
    /* now 0: a read that never expires a record here (the publish pass
     * must not write); deadness is checked below. */
    struct store_rec *r =
        s != NULL ? store_lookup(s, rec->key, rec->keylen, 0) : NULL;
    if (r == NULL || store_rec_dead(r, now)) {
        const void *argv[2] = { "DEL", rec->key };
        size_t lens[2] = { 3, rec->keylen };
        return put_command(out, 2, argv, lens);
    }
    if (!rdb_can_hold(r)) {
        return true;
    }
    struct membuf payload = { 0 };
    char ttl[NUM_I64_MAXLEN];
    size_t tn = num_fmt_i64(ttl, r->expire_at == STORE_NEVER ? 0
                                                             : r->expire_at);
    bool ok = rdb_dump_payload(r, now, &payload);
    const void *argv[6] = { "RESTORE", rec->key, ttl, payload.p, "REPLACE",
                            "ABSTTL" };
    size_t lens[6] = { 7, rec->keylen, tn, payload.len, 7, 6 };
    ok = ok && put_command(out, r->expire_at == STORE_NEVER ? 5 : 6, argv,
                           lens);
    mem_free(payload.p);
    return ok;
}

/* FUNCTION RESTORE of the whole set (funcset.h's bytes) as FUNCTION
 * DUMP's payload, or FUNCTION FLUSH for none. */
static bool
put_functions(struct membuf *out, const unsigned char *set, size_t len)
{
    struct membuf payload = { 0 };
    if (len == 0) {
        return put_words(out, "FUNCTION", "FLUSH", NULL);
    }
    bool ok = rdb_put_functions(set, len, &payload) &&
              rdb_put_footer(&payload, 0);
    const void *argv[4] = { "FUNCTION", "RESTORE", payload.p, "FLUSH" };
    size_t lens[4] = { 8, 7, payload.len, 5 };
    ok = ok && put_command(out, 4, argv, lens);
    mem_free(payload.p);
    return ok;
}

static bool put_records(const unsigned char *records, size_t len,
                        int version, int64_t now, int *db,
                        struct membuf *out);

static bool
put_record(const struct journal_record *rec, int64_t now, int *db,
           struct membuf *out)
{
    char a[NUM_I64_MAXLEN], b[NUM_I64_MAXLEN];
    switch (rec->op) {
    case JOURNAL_SET:
    case JOURNAL_ELEM:
    case JOURNAL_DEL:
        return select_db(out, rec->db, db) && put_key(out, rec, now);
    case JOURNAL_FLUSH:
        if (rec->db == JOURNAL_ALL_DBS) {
            return put_words(out, "FLUSHALL", NULL, NULL);
        }
        return select_db(out, rec->db, db) &&
               put_words(out, "FLUSHDB", NULL, NULL);
    case JOURNAL_SWAP:
        a[num_fmt_u64(a, rec->db)] = '\0';
        b[num_fmt_u64(b, rec->db2)] = '\0';
        return put_words(out, "SWAPDB", a, b);
    case JOURNAL_GROUP:
        return put_words(out, "MULTI", NULL, NULL) &&
               put_records(rec->state, rec->state_len, rec->version, now, db,
                           out) &&
               put_words(out, "EXEC", NULL, NULL);
    case JOURNAL_FUNCTIONS:
        return put_functions(out, rec->state, rec->state_len);
    default:
        return true;
    }
}

static bool
put_records(const unsigned char *records, size_t len, int version,
            int64_t now, int *db, struct membuf *out)
{
    struct journal_reader r;
    struct journal_record rec;
    enum journal_read got;
    journal_reader_records(&r, records, len, version);
    while ((got = journal_next(&r, &rec)) == JOURNAL_RECORD) {
        if (!put_record(&rec, now, db, out)) {
            return false;
        }
    }
    return got == JOURNAL_END;
}

bool
rdb_effects_as_commands(const unsigned char *records, size_t len,
                        int64_t now, int *db, struct membuf *out)
{
    return put_records(records, len, JOURNAL_VERSION, now, db, out);
}
