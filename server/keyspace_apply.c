/*
 * keyspace_apply.c - keys put back from outside (see keyspace.h): a
 * snapshot's keys and the journal's records read at start-up, and the
 * effect records a primary streams to its replicas.
 *
 * These are the writes that do not take the write path, on purpose. Each
 * record was admitted, watched and journaled where it was first written;
 * here it is decoded straight into its database's store as it was, with
 * no admission under maxmemory, and it makes no effect record of its own:
 * the record is its caller's to journal (a replica's stream) or was read
 * from the journal (start-up), so keyspace_apply_record() tells keyspace.c
 * (keyspace_applying()) to write nothing for the deletions, flushes and
 * swaps it makes; a swap written twice would undo itself when the journal
 * is read back. The transactions watching a key still hear of it, on a
 * replica too. As the records go into the store directly, this is the one
 * file besides keyspace.c that writes records there (make check-deps
 * names it); it sits above keyspace.c, whose flushes and swaps it replays.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/limit.h"
#include "lib/time.h"
#include "server/funcset.h"
#include "server/journal.h"
#include "server/keyspace.h"
#include "server/server.h"

/* ---- restoring from disk ----------------------------------------------- */

/* The expiry of a restored record (ms): as stored, but for a log or
 * tiers state written before expiry could be set by hand (encoding 2 and
 * before), where it follows from what the state holds. */
static int64_t
restored_expiry(struct store_rec *rec, int64_t stored, int encoding,
                int64_t now)
{
    const void *state = store_rec_state(rec);
    if (encoding >= KS_ENCODING_EXPIRY_MS) {
        return stored;
    }
    if (rec->type == KEY_LOG) {
        return keyspace_fresh_ms(keytype_log_fresh_at(state, now));
    }
    if (rec->type == KEY_TIERS) {
        return keyspace_fresh_ms(keytype_tiers_fresh_at(state, now));
    }
    return stored;
}

/* Dead at now (ns) with expiry at (ms)? */
static bool
expired(int64_t at, int64_t now)
{
    return at != STORE_NEVER && now / NS_PER_MS > at;
}

int
keyspace_restore(int db, uint8_t type, const char *key, size_t keylen,
                 int64_t expire_at, const unsigned char *state,
                 size_t state_len, int encoding, bool replace, int64_t now,
                 char *err, size_t errlen)
{
    struct store *s = keyspace_db(db);
    if (type < KEY_TYPE_FIRST || type > KEY_TYPE_LAST) {
        snprintf(err, errlen, "unknown key type %u", type);
        return -1;
    }
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint64_t hash = store_key_hash(s, key, keylen);     /* once for both */
    struct store_rec *rec = store_lookup_hashed(s, key, keylen, hash, now);
    if (rec != NULL && !replace) {
        snprintf(err, errlen, "duplicate key");
        return -1;
    }
    if (rec != NULL) {
        store_remove(s, rec);
    }
    if (expired(expire_at, now)) {
        return 0;                   /* went fresh while we were down */
    }
    unsigned char upgraded[KS_UPGRADE_BUF];
    if (!keytype_upgrade(&type, &state, &state_len, encoding, upgraded)) {
        snprintf(err, errlen, "malformed %s state", keytype_name(type));
        return -1;
    }
    rec = store_add_hashed(s, key, keylen, hash, type,
                           keytype_decoded_state_size(type, state, state_len,
                                                      expire_at));
    if (rec == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* As stored, for the decoder: a KEY_INT's value may lean on it, so it
     * is set to the same again below (restored_expiry() keeps it). */
    rec->expire_at = expire_at;
    enum ks_decode rc = keytype_decode(rec, state, state_len, encoding);
    int64_t fresh_at = rc == KS_DECODED
                           ? restored_expiry(rec, expire_at, encoding, now)
                           : 0;
    rec->expire_at = STORE_NEVER;
    if (rc != KS_DECODED || expired(fresh_at, now)) {
        store_remove(s, rec);
        if (rc == KS_DECODED || rc == KS_EMPTY) {
            return 0;               /* nothing left to keep */
        }
        snprintf(err, errlen, rc == KS_NOMEM ? "out of memory"
                                             : "malformed %s state",
                 keytype_name(type));
        return -1;
    }
    store_set_expire(s, rec, fresh_at);
    return 0;
}

void
keyspace_reserve(int db, size_t n)
{
    struct store *s = keyspace_db(db);
    if (s != NULL) {
        store_reserve(s, n);
    }
}

int
keyspace_restore_coll(int db, uint8_t type, const char *key, size_t keylen,
                      int64_t expire_at, const void *state, int64_t now,
                      char *err, size_t errlen)
{
    struct store *s = keyspace_db(db);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint64_t hash = store_key_hash(s, key, keylen);     /* once for both */
    if (store_lookup_hashed(s, key, keylen, hash, now) != NULL) {
        snprintf(err, errlen, "duplicate key");
        return -1;
    }
    if (expired(expire_at, now)) {
        return 1;
    }
    size_t size = keytype_state_size(type);
    struct store_rec *rec = store_add_hashed(s, key, keylen, hash, type, size);
    if (rec == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(store_rec_state(rec), state, size);
    store_set_expire(s, rec, expire_at);
    return 0;
}

/* ---- applying an effect record ---------------------------------------- */

static int apply_record(const struct journal_record *rec, int64_t now,
                        char *err, size_t errlen);

/* KS_ELEM_RANGE: a long string's bytes from an offset on (APPEND,
 * SETRANGE), the string grown to hold them. A key gone by its expiry
 * since has nothing to change. */
static int
apply_range(const struct journal_record *rec, struct store *s, int64_t now,
            char *err, size_t errlen)
{
    uint64_t off;
    struct store_rec *r = store_lookup(s, rec->key, rec->keylen, now);
    if (rec->state_len < sizeof(off)) {
        snprintf(err, errlen, "a malformed string range");
        return -1;
    }
    memcpy(&off, rec->state, sizeof(off));
    size_t n = rec->state_len - sizeof(off);
    if (r == NULL && expired(rec->expire_at, now)) {
        return 0;
    }
    struct ks_str *st = r != NULL ? store_rec_state(r) : NULL;
    if (st == NULL || r->type != KEY_STR || st->len <= KS_STR_INLINE ||
        off > UINT32_MAX - n) {
        snprintf(err, errlen, "a string range for a key that holds no long "
                 "string");
        return -1;
    }
    size_t end = (size_t)off + n;
    if (end > st->len) {
        if (end > st->u.heap.cap) {
            char *p = keytype_owned_realloc(st->u.heap.p, end);
            if (p == NULL) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            st->u.heap.p = p;
            st->u.heap.cap = (uint32_t)end;
        }
        memset(st->u.heap.p + st->len, 0, end - st->len);
        st->len = (uint32_t)end;
    }
    memcpy(st->u.heap.p + off, rec->state + sizeof(off), n);
    if (srv.watched_keys != 0) {
        multi_touch((int)rec->db, rec->key, rec->keylen);
    }
    return 0;
}

/* A collection's element effect, replayed by its type's module. A key
 * gone by its expiry since has nothing to change; one the effect leaves
 * empty goes, as it went on the primary. */
static int
apply_coll(const struct journal_record *rec, struct store *s, int64_t now,
           char *err, size_t errlen)
{
    struct store_rec *r = store_lookup(s, rec->key, rec->keylen, now);
    if (r == NULL && expired(rec->expire_at, now)) {
        return 0;
    }
    if (r == NULL || r->type != rec->type) {
        snprintf(err, errlen, "a %s element effect for a key that holds "
                 "no %s", keytype_name(rec->type), keytype_name(rec->type));
        return -1;
    }
    int rc = keytype_coll_apply(r, rec->elem_op, rec->state, rec->state_len);
    if (rc != COLL_OK) {
        snprintf(err, errlen, rc == COLL_NOMEM ? "out of memory"
                 : "a malformed %s element effect (op %u)",
                 keytype_name(rec->type), rec->elem_op);
        return -1;
    }
    if (srv.watched_keys != 0) {
        multi_touch((int)rec->db, rec->key, rec->keylen);
    }
    if (keytype_coll_len(r) == 0) {
        store_remove(s, r);
    }
    return 0;
}

/* One element's change to a key (journal.h's JOURNAL_ELEM). */
static int
apply_elem(const struct journal_record *rec, int64_t now, char *err,
           size_t errlen)
{
    struct store *s = keyspace_db((int)rec->db);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (rec->type == KEY_STR && rec->elem_op == KS_ELEM_RANGE) {
        return apply_range(rec, s, now, err, errlen);
    }
    if (keytype_is_coll(rec->type)) {
        return apply_coll(rec, s, now, err, errlen);
    }
    snprintf(err, errlen, "element effect %u for a %s key", rec->elem_op,
             keytype_name(rec->type));
    return -1;
}

/* A group's records, in order. The group's CRC covered them all, so each
 * must read whole: anything else is damage. */
static int
apply_group(const struct journal_record *group, int64_t now, char *err,
            size_t errlen)
{
    struct journal_reader rd;
    struct journal_record rec;
    uint32_t n = 0;
    journal_reader_records(&rd, group->state, group->state_len,
                           group->version);
    for (;;) {
        enum journal_read r = journal_next(&rd, &rec);
        if (r == JOURNAL_END) {
            break;
        }
        if (r != JOURNAL_RECORD || rec.op == JOURNAL_GROUP) {
            snprintf(err, errlen, "a damaged record inside a group");
            return -1;
        }
        if (apply_record(&rec, now, err, errlen) < 0) {
            return -1;
        }
        n++;
    }
    if (n != group->count) {
        snprintf(err, errlen, "a group of %u records holds %u",
                 group->count, n);
        return -1;
    }
    return 0;
}

static int
apply_record(const struct journal_record *rec, int64_t now, char *err,
             size_t errlen)
{
    bool all = rec->op == JOURNAL_FLUSH && rec->db == JOURNAL_ALL_DBS;
    if ((!all && rec->db >= srv.ndbs) ||
        (rec->op == JOURNAL_SWAP && rec->db2 >= srv.ndbs)) {
        snprintf(err, errlen, "it holds keys of database %u, but this "
                 "server has %zu databases (see 'databases')",
                 rec->db >= srv.ndbs ? rec->db : rec->db2, srv.ndbs);
        return -1;
    }
    switch (rec->op) {
    case JOURNAL_SET:
        /* A replica's clients watching the key hear of it, as of any
         * write; one it replaces has told them already, one it creates
         * tells them here. */
        if (srv.watched_keys != 0) {
            multi_touch((int)rec->db, rec->key, rec->keylen);
        }
        return keyspace_restore((int)rec->db, rec->type, rec->key,
                                rec->keylen, rec->expire_at, rec->state,
                                rec->state_len,
                                rec->version >= 3 ? KS_ENCODING
                                                  : KS_ENCODING_V2,
                                true, now, err,
                                errlen);
    case JOURNAL_DEL: {
        struct store *s = keyspace_db((int)rec->db);
        struct store_rec *r =
            s ? store_lookup(s, rec->key, rec->keylen, now) : NULL;
        if (r != NULL) {
            store_remove(s, r);
        }
        return 0;
    }
    case JOURNAL_FLUSH:
        keyspace_flush(all ? -1 : (int)rec->db);
        return 0;
    case JOURNAL_GROUP:
        return apply_group(rec, now, err, errlen);
    case JOURNAL_ELEM:
        return apply_elem(rec, now, err, errlen);
    case JOURNAL_FUNCTIONS:
        return funcset_replace(rec->state, rec->state_len, err, errlen);
    default:
        if (!keyspace_swap((int)rec->db, (int)rec->db2)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        return 0;
    }
}

int
keyspace_apply_record(const struct journal_record *rec, int64_t now,
                      char *err, size_t errlen)
{
    keyspace_applying(true);
    int rc = apply_record(rec, now, err, errlen);
    keyspace_applying(false);
    return rc;
}
