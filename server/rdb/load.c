/*
 * load.c - Redis's RDB objects and files read into cellgate's keyspace.
 *
 * An object becomes a record of the matching type: a string KEY_INT when
 * its bytes are a canonical int64 (as SET makes it), else KEY_STR; a list,
 * set, sorted set or hash built by inserting each element through its
 * lib/ type, so it lands in the encoding cellgate would have given it
 * (Redis's thresholds, the compact order kept), whatever encoding Redis
 * wrote it in: the linked list, set, hash and both sorted-set forms of
 * old, zipmap, ziplist, intset, quicklist 1 and 2, listpack. A packed
 * encoding is checked whole first (lib/rdb_read.h), and a field or member
 * met twice is refused, as Redis 7.0.15's deep sanitizing refuses it.
 * Type 0xC8 is cellgate's own payload for its limiters (docs/migrate.md):
 * the state's keytype encoding and key type, then keytype_encode()'s bytes.
 *
 * A file: "REDIS", the version in 4 digits (1..10 as 7.0.15 reads), then
 * opcodes and keys to EOF and the CRC-64 (checked unless 0, which a Redis
 * with rdbchecksum no writes). AUX fields are logged as Redis logs them
 * (the replication ones kept: rdb_last_load_info()); IDLE and FREQ are
 * read and dropped, cellgate keeping no access clock; FUNCTION2 libraries
 * are gathered and loaded at the end through the journal's path
 * (funcset_replace()); stream keys, module 2 keys and module AUX data are
 * read over and counted, or the file refused, as rdb-unsupported-keys says
 * (a module 1 key cannot be read over: always refused). A key already
 * expired is dropped, as a Redis primary drops it. Any damage refuses the
 * file with its byte offset and empties every database.
 *
 * The file is mapped once and read in place: a key's bytes go from the
 * map straight into its record (keyspace_apply.c, which is the one that
 * writes into the store at load time).
 */
#include "server/rdb/load.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/crc64.h"
#include "lib/num.h"
#include "lib/time.h"
#include "server/clock.h"
#include "server/funcset.h"
#include "server/keyspace.h"
#include "server/keytype.h"
#include "server/log.h"
#include "server/server.h"

/* ---- building a collection ---------------------------------------------- */

static enum rdb_obj_rc
bad(struct rdb_obj *o, const char *why)
{
    o->why = why;
    return RDB_OBJ_BAD;
}

static enum rdb_obj_rc
list_push(struct rdb_obj *o, const unsigned char *p, size_t len)
{
    return qlist_push(&o->coll.list, false, p, len) ? RDB_OBJ_OK
                                                     : RDB_OBJ_NOMEM;
}

static enum rdb_obj_rc
set_push(struct rdb_obj *o, const unsigned char *p, size_t len)
{
    switch (set_add(&o->coll.set, p, len)) {
    case SET_NEW:
        return RDB_OBJ_OK;
    case SET_EXISTS:
        return bad(o, "duplicate set member");
    default:
        return RDB_OBJ_NOMEM;
    }
}

static enum rdb_obj_rc
hash_push(struct rdb_obj *o, const unsigned char *f, size_t flen,
          const unsigned char *v, size_t vlen)
{
    switch (hmap_set(&o->coll.hash, f, flen, v, vlen)) {
    case HMAP_NEW:
        return RDB_OBJ_OK;
    case HMAP_UPDATED:
        return bad(o, "duplicate hash field");
    default:
        return RDB_OBJ_NOMEM;
    }
}

static enum rdb_obj_rc
zset_push(struct rdb_obj *o, const unsigned char *m, size_t len,
          double score)
{
    double ns;
    if (len > UINT32_MAX) {
        return RDB_OBJ_NOMEM;
    }
    switch (zset_add(&o->coll.zset, m, len, score, 0, &ns)) {
    case ZSET_ADDED:
        return RDB_OBJ_OK;
    case ZSET_NAN:
        return bad(o, "sorted set score is NaN");
    case ZSET_NOMEM:
        return RDB_OBJ_NOMEM;
    default:
        return bad(o, "duplicate sorted set member");
    }
}

/* A score held in a ziplist or listpack: an integer, or text read as
 * Redis's zzlStrtod() reads it (at most 127 bytes, strtod). */
static double
packed_score(const struct rdb_elem *e)
{
    char buf[128];
    if (e->is_int) {
        return (double)e->v;
    }
    size_t n = e->len < sizeof(buf) - 1 ? e->len : sizeof(buf) - 1;
    memcpy(buf, e->p, n);
    buf[n] = '\0';
    return strtod(buf, NULL);
}

/* Every element of a checked packed encoding into o's collection: single
 * elements for a list or set, pairs for a hash or sorted set. */
static enum rdb_obj_rc
load_packed(struct rdb_obj *o, struct rdb_pack_iter *it)
{
    struct rdb_elem a, b;
    char ta[24], tb[24];
    enum rdb_obj_rc rc = RDB_OBJ_OK;
    while (rc == RDB_OBJ_OK && rdb_pack_next(it, &a)) {
        size_t alen, blen;
        const unsigned char *ap = rdb_elem_text(&a, ta, &alen);
        if (o->type == KEY_LIST) {
            rc = list_push(o, ap, alen);
            continue;
        }
        if (o->type == KEY_SET) {
            rc = set_push(o, ap, alen);
            continue;
        }
        if (!rdb_pack_next(it, &b)) {
            return bad(o, "odd number of entries in a pairs encoding");
        }
        if (o->type == KEY_ZSET) {
            rc = zset_push(o, ap, alen, packed_score(&b));
        } else {
            const unsigned char *bp = rdb_elem_text(&b, tb, &blen);
            rc = hash_push(o, ap, alen, bp, blen);
        }
    }
    return rc;
}

/* A string holding a packed encoding (ziplist, listpack, intset, zipmap)
 * of RDB type t, into o's collection. */
static enum rdb_obj_rc
load_packed_string(struct rdb_cur *c, uint8_t t, struct rdb_obj *o)
{
    struct rdb_str s = { 0 };
    struct rdb_pack_iter it;
    uint64_t n = 0;
    uint32_t ni = 0;
    enum rdb_obj_rc rc = RDB_OBJ_OK;
    if (!rdb_read_string(c, &s)) {
        rc = bad(o, "short read or bad string");
    } else if (t == RDB_TYPE_SET_INTSET) {
        if (!rdb_intset_check(s.p, s.len, &ni)) {
            rc = bad(o, "intset integrity check failed");
        }
        for (uint32_t i = 0; i < ni && rc == RDB_OBJ_OK; i++) {
            char text[24];
            size_t tn;
            struct rdb_elem e = { .is_int = true,
                                  .v = rdb_intset_get(s.p, i) };
            const unsigned char *m = rdb_elem_text(&e, text, &tn);
            rc = set_push(o, m, tn);
        }
    } else if (t == RDB_TYPE_HASH_ZIPMAP) {
        rc = rdb_zipmap_check(s.p, s.len, &n)
                 ? (rdb_zipmap_iter(&it, s.p), load_packed(o, &it))
                 : bad(o, "zipmap integrity check failed");
    } else if (t == RDB_TYPE_HASH_LISTPACK || t == RDB_TYPE_ZSET_LISTPACK) {
        rc = rdb_listpack_check(s.p, s.len, &n)
                 ? (rdb_listpack_iter(&it, s.p), load_packed(o, &it))
                 : bad(o, "listpack integrity check failed");
    } else {
        rc = rdb_ziplist_check(s.p, s.len, &n)
                 ? (rdb_ziplist_iter(&it, s.p), load_packed(o, &it))
                 : bad(o, "ziplist integrity check failed");
    }
    rdb_str_free(&s);
    return rc;
}

/* quicklist (14): ziplists; quicklist 2 (18): nodes each a plain element
 * or a listpack. Empty nodes are passed over, as Redis passes them. */
static enum rdb_obj_rc
load_quicklist(struct rdb_cur *c, bool v2, struct rdb_obj *o)
{
    uint64_t nodes, container = RDB_QUICKLIST_PACKED, n;
    struct rdb_str s = { 0 };
    struct rdb_pack_iter it;
    enum rdb_obj_rc rc = RDB_OBJ_OK;
    if (!rdb_read_len(c, &nodes)) {
        return bad(o, "bad quicklist length");
    }
    for (uint64_t i = 0; i < nodes && rc == RDB_OBJ_OK; i++) {
        if ((v2 && !rdb_read_len(c, &container)) ||
            (container != RDB_QUICKLIST_PLAIN &&
             container != RDB_QUICKLIST_PACKED) ||
            !rdb_read_string(c, &s)) {
            rc = bad(o, "quicklist integrity check failed");
        } else if (container == RDB_QUICKLIST_PLAIN) {
            rc = list_push(o, s.p, s.len);
        } else if (v2 ? !rdb_listpack_check(s.p, s.len, &n)
                      : !rdb_ziplist_check(s.p, s.len, &n)) {
            rc = bad(o, v2 ? "listpack integrity check failed"
                           : "ziplist integrity check failed");
        } else {
            if (v2) {
                rdb_listpack_iter(&it, s.p);
            } else {
                rdb_ziplist_iter(&it, s.p);
            }
            rc = load_packed(o, &it);
        }
    }
    rdb_str_free(&s);
    return rc;
}

/* The types of old, element by element: list (1), set (2), zset (3),
 * hash (4), zset 2 (5). */
static enum rdb_obj_rc
load_elements(struct rdb_cur *c, uint8_t t, struct rdb_obj *o)
{
    uint64_t n;
    struct rdb_str a = { 0 }, b = { 0 };
    enum rdb_obj_rc rc = RDB_OBJ_OK;
    if (!rdb_read_len(c, &n)) {
        return bad(o, "bad length");
    }
    for (uint64_t i = 0; i < n && rc == RDB_OBJ_OK; i++) {
        double score;
        if (!rdb_read_string(c, &a)) {
            rc = bad(o, "short read or bad string");
        } else if (t == RDB_TYPE_LIST) {
            rc = list_push(o, a.p, a.len);
        } else if (t == RDB_TYPE_SET) {
            rc = set_push(o, a.p, a.len);
        } else if (t == RDB_TYPE_HASH) {
            rc = rdb_read_string(c, &b) ? hash_push(o, a.p, a.len, b.p, b.len)
                                        : bad(o, "short read or bad string");
        } else if (t == RDB_TYPE_ZSET ? !rdb_read_double_text(c, &score)
                                      : !rdb_read_double_bin(c, &score)) {
            rc = bad(o, "bad double value");
        } else {
            rc = zset_push(o, a.p, a.len, score);
        }
    }
    rdb_str_free(&a);
    rdb_str_free(&b);
    return rc;
}

/* ---- what cellgate cannot hold: read over -------------------------------- */

/* A module value's opcodes up to its EOF (Redis's
 * rdbLoadCheckModuleValue()). */
static bool
skip_module_value(struct rdb_cur *c)
{
    enum { M_EOF, M_SINT, M_UINT, M_FLOAT, M_DOUBLE, M_STRING };
    uint64_t op = M_SINT, v;
    const unsigned char *p;
    while (op != M_EOF) {
        if (!rdb_read_len(c, &op)) {
            return false;
        }
        bool ok = op == M_EOF || ((op == M_SINT || op == M_UINT)
                                      ? rdb_read_len(c, &v)
                                  : op == M_FLOAT  ? rdb_read_raw(c, 4, &p)
                                  : op == M_DOUBLE ? rdb_read_raw(c, 8, &p)
                                  : op == M_STRING ? rdb_skip_string(c)
                                                   : false);
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* n lengths read over. */
static bool
skip_lens(struct rdb_cur *c, int n)
{
    uint64_t v;
    for (int i = 0; i < n; i++) {
        if (!rdb_read_len(c, &v)) {
            return false;
        }
    }
    return true;
}

/* A stream's consumer groups (RDB 10's: type 19 adds entries_read). */
static bool
skip_stream_groups(struct rdb_cur *c, bool v2)
{
    uint64_t groups, pel, consumers, cpel;
    const unsigned char *p;
    if (!rdb_read_len(c, &groups)) {
        return false;
    }
    for (uint64_t g = 0; g < groups; g++) {
        if (!rdb_skip_string(c) || !skip_lens(c, v2 ? 3 : 2) ||
            !rdb_read_len(c, &pel)) {
            return false;
        }
        for (uint64_t i = 0; i < pel; i++) {    /* id, delivery time, count */
            if (!rdb_read_raw(c, 16 + 8, &p) || !skip_lens(c, 1)) {
                return false;
            }
        }
        if (!rdb_read_len(c, &consumers)) {
            return false;
        }
        for (uint64_t k = 0; k < consumers; k++) {  /* name, seen, PEL ids */
            if (!rdb_skip_string(c) || !rdb_read_raw(c, 8, &p) ||
                !rdb_read_len(c, &cpel) || cpel > rdb_left(c) / 16 ||
                !rdb_read_raw(c, cpel * 16, &p)) {
                return false;
            }
        }
    }
    return true;
}

/* A stream (15, 19): its listpacks, length, ids, then its groups. */
static bool
skip_stream(struct rdb_cur *c, bool v2)
{
    uint64_t nodes;
    if (!rdb_read_len(c, &nodes)) {
        return false;
    }
    for (uint64_t i = 0; i < nodes; i++) {
        if (!rdb_skip_string(c) || !rdb_skip_string(c)) {
            return false;
        }
    }
    /* length, last id; type 19: first id, max deleted id, entries added */
    return skip_lens(c, v2 ? 8 : 3) && skip_stream_groups(c, v2);
}

static enum rdb_obj_rc
load_unsupported(struct rdb_cur *c, uint8_t t, bool skip,
                 struct rdb_obj *o)
{
    uint64_t id;
    if (t == RDB_TYPE_MODULE || !skip) {
        return RDB_OBJ_UNSUPPORTED;
    }
    bool ok = t == RDB_TYPE_MODULE_2
                  ? rdb_read_len(c, &id) && skip_module_value(c)
                  : skip_stream(c, t == RDB_TYPE_STREAM_LISTPACKS_2);
    return ok ? RDB_OBJ_SKIPPED : bad(o, "bad stream or module value");
}

/* ---- one object ---------------------------------------------------------- */

static enum rdb_obj_rc
load_string(struct rdb_cur *c, struct rdb_obj *o)
{
    if (!rdb_read_string(c, &o->str)) {
        return bad(o, "short read or bad string");
    }
    int64_t v;
    if (o->str.len < NUM_I64_MAXLEN &&
        num_parse_i64((const char *)o->str.p, o->str.len, &v)) {
        o->type = KEY_INT;
        o->ival = v;
    } else {
        o->type = KEY_STR;
    }
    return RDB_OBJ_OK;
}

/* cellgate's own payload: encoding, key type, the state's bytes. */
static enum rdb_obj_rc
load_cellgate(struct rdb_cur *c, struct rdb_obj *o)
{
    uint8_t enc, type;
    uint64_t n;
    if (!rdb_read_u8(c, &enc) || !rdb_read_u8(c, &type) ||
        !rdb_read_len(c, &n) || !rdb_read_raw(c, n, &o->state)) {
        return bad(o, "short read");
    }
    if (enc < KS_ENCODING_V1 || enc > KS_ENCODING ||
        (type != KEY_FIXED && type != KEY_SLIDING && type != KEY_LOG &&
         type != KEY_TIERS && type != KEY_REDIS_GCRA && type != KEY_LEASE)) {
        return bad(o, "unknown cellgate key type or encoding");
    }
    o->type = type;
    o->encoding = enc;
    o->state_len = n;
    return RDB_OBJ_OK;
}

static uint8_t
coll_type(uint8_t t)
{
    switch (t) {
    case RDB_TYPE_LIST:
    case RDB_TYPE_LIST_ZIPLIST:
    case RDB_TYPE_LIST_QUICKLIST:
    case RDB_TYPE_LIST_QUICKLIST_2:
        return KEY_LIST;
    case RDB_TYPE_SET:
    case RDB_TYPE_SET_INTSET:
        return KEY_SET;
    case RDB_TYPE_ZSET:
    case RDB_TYPE_ZSET_2:
    case RDB_TYPE_ZSET_ZIPLIST:
    case RDB_TYPE_ZSET_LISTPACK:
        return KEY_ZSET;
    case RDB_TYPE_HASH:
    case RDB_TYPE_HASH_ZIPMAP:
    case RDB_TYPE_HASH_ZIPLIST:
    case RDB_TYPE_HASH_LISTPACK:
        return KEY_HASH;
    default:
        return 0;
    }
}

static uint64_t
coll_len(const struct rdb_obj *o)
{
    switch (o->type) {
    case KEY_LIST:
        return qlist_len(&o->coll.list);
    case KEY_HASH:
        return hmap_len(&o->coll.hash);
    case KEY_ZSET:
        return zset_len(&o->coll.zset);
    default:
        return set_len(&o->coll.set);
    }
}

enum rdb_obj_rc
rdb_load_object(struct rdb_cur *c, uint8_t t, bool skip_unsupported,
                struct rdb_obj *o)
{
    enum rdb_obj_rc rc;
    o->why = NULL;
    if (t == RDB_TYPE_STRING) {
        return load_string(c, o);
    }
    if (t == RDB_TYPE_CELLGATE) {
        return load_cellgate(c, o);
    }
    o->type = coll_type(t);
    if (o->type == 0) {
        if (t == RDB_TYPE_MODULE || t == RDB_TYPE_MODULE_2 ||
            t == RDB_TYPE_STREAM_LISTPACKS ||
            t == RDB_TYPE_STREAM_LISTPACKS_2) {
            return load_unsupported(c, t, skip_unsupported, o);
        }
        return bad(o, "unknown RDB type");
    }
    o->handed = false;
    memset(&o->coll, 0, sizeof(o->coll));
    if (t <= RDB_TYPE_ZSET_2) {
        rc = load_elements(c, t, o);
    } else if (t == RDB_TYPE_LIST_QUICKLIST ||
               t == RDB_TYPE_LIST_QUICKLIST_2) {
        rc = load_quicklist(c, t == RDB_TYPE_LIST_QUICKLIST_2, o);
    } else {
        rc = load_packed_string(c, t, o);
    }
    if (rc == RDB_OBJ_OK && coll_len(o) == 0) {
        rc = RDB_OBJ_EMPTY;
    }
    return rc;
}

const void *
rdb_obj_coll(const struct rdb_obj *o)
{
    return &o->coll;
}

void
rdb_obj_free(struct rdb_obj *o)
{
    if (keytype_is_coll(o->type) && !o->handed) {
        switch (o->type) {
        case KEY_LIST:
            qlist_free(&o->coll.list);
            break;
        case KEY_HASH:
            hmap_free(&o->coll.hash);
            break;
        case KEY_ZSET:
            zset_free(&o->coll.zset);
            break;
        default:
            set_free(&o->coll.set);
            break;
        }
    }
    o->type = 0;
    o->handed = false;
    rdb_str_free(&o->str);
}

/* ---- a whole file -------------------------------------------------------- */

static struct rdb_load_info last_info = { "", -1, -1 };

const struct rdb_load_info *
rdb_last_load_info(void)
{
    return &last_info;
}

struct loader {
    struct rdb_cur c;
    int db;
    int64_t expire_at;          /* the next key's (ms), STORE_NEVER */
    int64_t now;
    bool skip;                  /* rdb-unsupported-keys skip */
    uint64_t keys, expired, empty, skipped;
    struct membuf funcs;        /* funcset's bytes: u32 length, code */
    struct rdb_str key, aux;
    struct rdb_obj obj;
    char why[300];
};

static int
fail(struct loader *l, const char *what)
{
    snprintf(l->why, sizeof(l->why), "%s at offset %zu", what, l->c.off);
    return -1;
}

/* An AUX field's integer value (0 when it is none). */
static int64_t
aux_int(const struct rdb_str *v)
{
    char buf[32];
    size_t n = v->len < sizeof(buf) - 1 ? v->len : sizeof(buf) - 1;
    memcpy(buf, v->p, n);
    buf[n] = '\0';
    return strtoll(buf, NULL, 10);
}

static bool
aux_is(const struct rdb_str *k, const char *name)
{
    return k->len == strlen(name) && memcmp(k->p, name, k->len) == 0;
}

/* An AUX field: logged as Redis logs it, the replication ones kept. */
static int
load_aux(struct loader *l)
{
    struct rdb_str *k = &l->key, *v = &l->aux;
    if (!rdb_read_string(&l->c, k) || !rdb_read_string(&l->c, v)) {
        return fail(l, "Short read or bad AUX field");
    }
    int vn = v->len > 100 ? 100 : (int)v->len;
    if (aux_is(k, "redis-ver")) {
        log_notice("Loading RDB produced by version %.*s", vn, v->p);
    } else if (aux_is(k, "ctime")) {
        int64_t age = clock_wall_us() / US_PER_SEC - aux_int(v);
        log_notice("RDB age %" PRId64 " seconds", age < 0 ? 0 : age);
    } else if (aux_is(k, "used-mem")) {
        log_notice("RDB memory usage when created %.2f Mb",
                   (double)aux_int(v) / (1024 * 1024));
    } else if (aux_is(k, "repl-id") && v->len == 40) {
        memcpy(last_info.repl_id, v->p, 40);
        last_info.repl_id[40] = '\0';
    } else if (aux_is(k, "repl-offset")) {
        last_info.repl_offset = aux_int(v);
    } else if (aux_is(k, "repl-stream-db")) {
        last_info.repl_stream_db = (int)aux_int(v);
    } else {
        log_debug("RDB AUX field '%.*s' read and not used",
                  k->len > 100 ? 100 : (int)k->len, k->p);
    }
    return 0;
}

/* A library for the set loaded at the end. */
static int
load_function(struct loader *l, uint8_t op)
{
    size_t at = l->funcs.len;
    uint32_t n = 0;
    if (!membuf_put(&l->funcs, &n, 4) ||
        !rdb_read_function(&l->c, op, &l->funcs) ||
        l->funcs.len - at - 4 > UINT32_MAX) {
        return fail(l, "Failed loading library");
    }
    n = (uint32_t)(l->funcs.len - at - 4);
    memcpy(l->funcs.p + at, &n, 4);
    return 0;
}

/* Module AUX data: read over when unsupported keys are skipped. */
static int
load_module_aux(struct loader *l)
{
    uint64_t id, when_op, when;
    if (!l->skip) {
        return fail(l, "The RDB file contains AUX module data cellgate "
                       "cannot load (rdb-unsupported-keys refuse)");
    }
    if (!rdb_read_len(&l->c, &id) || !rdb_read_len(&l->c, &when_op) ||
        !rdb_read_len(&l->c, &when) || !skip_module_value(&l->c)) {
        return fail(l, "Short read or bad module AUX data");
    }
    l->skipped++;
    return 0;
}

/* The object read into o put into the store. */
static int
put_key(struct loader *l, int64_t exp)
{
    struct rdb_obj *o = &l->obj;
    const char *key = (const char *)l->key.p;
    size_t klen = l->key.len;
    char err[128];
    int rc;
    if (keytype_is_coll(o->type)) {
        rc = keyspace_restore_coll(l->db, o->type, key, klen, exp, &o->coll,
                                   l->now, err, sizeof(err));
        o->handed = rc == 0;
    } else if (o->type == KEY_INT) {
        int64_t v = o->ival;
        rc = keyspace_restore(l->db, KEY_INT, key, klen, exp,
                              (const unsigned char *)&v, sizeof(v),
                              KS_ENCODING, false, l->now, err, sizeof(err));
    } else {
        bool s = o->type == KEY_STR;
        rc = keyspace_restore(l->db, o->type, key, klen, exp,
                              s ? o->str.p : o->state,
                              s ? o->str.len : o->state_len,
                              s ? KS_ENCODING : o->encoding, false, l->now,
                              err, sizeof(err));
    }
    rdb_obj_free(o);
    if (rc < 0) {
        return fail(l, err);
    }
    l->keys++;
    return 0;
}

static int
object_failed(struct loader *l, enum rdb_obj_rc rc, uint8_t t)
{
    char what[200];
    if (rc == RDB_OBJ_NOMEM) {
        return fail(l, "Out of memory loading a key");
    }
    if (rc == RDB_OBJ_UNSUPPORTED) {
        snprintf(what, sizeof(what), "A %s key (RDB type %u) cellgate cannot "
                 "serve%s", t == RDB_TYPE_STREAM_LISTPACKS ||
                 t == RDB_TYPE_STREAM_LISTPACKS_2 ? "stream" : "module", t,
                 t == RDB_TYPE_MODULE ? "" : " (rdb-unsupported-keys refuse)");
    } else {
        snprintf(what, sizeof(what), "Corrupt RDB value of type %u (%s)", t,
                 l->obj.why != NULL ? l->obj.why : "bad data");
    }
    return fail(l, what);
}

static int
load_key(struct loader *l, uint8_t t)
{
    int64_t exp = l->expire_at;
    l->expire_at = STORE_NEVER;
    if (!rdb_read_string(&l->c, &l->key)) {
        return fail(l, "Short read or bad key");
    }
    enum rdb_obj_rc rc = rdb_load_object(&l->c, t, l->skip, &l->obj);
    if (rc != RDB_OBJ_OK) {
        rdb_obj_free(&l->obj);
        l->skipped += rc == RDB_OBJ_SKIPPED;
        l->empty += rc == RDB_OBJ_EMPTY;
        return rc == RDB_OBJ_SKIPPED || rc == RDB_OBJ_EMPTY
                   ? 0
                   : object_failed(l, rc, t);
    }
    if (exp != STORE_NEVER && l->now / NS_PER_MS > exp) {
        rdb_obj_free(&l->obj);
        l->expired++;
        return 0;
    }
    return put_key(l, exp);
}

/* An opcode's operands, or a key of that type. 1 at EOF. */
static int
load_item(struct loader *l, uint8_t op)
{
    uint64_t a, b;
    uint32_t s32;
    uint8_t u8;
    switch (op) {
    case RDB_OPCODE_EOF:
        return 1;
    case RDB_OPCODE_SELECTDB:
        if (!rdb_read_len(&l->c, &a) || a >= srv.ndbs) {
            return fail(l, "Bad SELECTDB (a database out of range)");
        }
        l->db = (int)a;
        return 0;
    case RDB_OPCODE_RESIZEDB:
        if (!rdb_read_len(&l->c, &a) || !rdb_read_len(&l->c, &b)) {
            return fail(l, "Short read in RESIZEDB");
        }
        /* Never more than the rest of the file could hold (a key takes
         * 3 bytes at least), whatever a damaged count says. */
        keyspace_reserve(l->db, (size_t)(a < (l->c.len - l->c.off) / 3
                                         ? a : (l->c.len - l->c.off) / 3));
        return 0;
    case RDB_OPCODE_EXPIRETIME:
        if (!rdb_read_le32(&l->c, &s32)) {
            return fail(l, "Short read in EXPIRETIME");
        }
        l->expire_at = (int64_t)(int32_t)s32 * MS_PER_SEC;
        return 0;
    case RDB_OPCODE_EXPIRETIME_MS:
        if (!rdb_read_le64(&l->c, &a)) {
            return fail(l, "Short read in EXPIRETIME_MS");
        }
        l->expire_at = (int64_t)a;
        return 0;
    case RDB_OPCODE_IDLE:       /* no access clock here: read and dropped */
        return rdb_read_len(&l->c, &a) ? 0 : fail(l, "Short read in IDLE");
    case RDB_OPCODE_FREQ:
        return rdb_read_u8(&l->c, &u8) ? 0 : fail(l, "Short read in FREQ");
    case RDB_OPCODE_AUX:
        return load_aux(l);
    case RDB_OPCODE_MODULE_AUX:
        return load_module_aux(l);
    case RDB_OPCODE_FUNCTION:
    case RDB_OPCODE_FUNCTION2:
        return load_function(l, op);
    default:
        return load_key(l, op);
    }
}

/* The header and the items up to EOF, then the checksum. */
static int
load_all(struct loader *l, int *version)
{
    const unsigned char *p;
    uint8_t op;
    char digits[5];
    if (!rdb_read_raw(&l->c, 9, &p) || memcmp(p, "REDIS", 5) != 0) {
        return fail(l, "Wrong signature trying to load DB from file");
    }
    memcpy(digits, p + 5, 4);
    digits[4] = '\0';
    *version = atoi(digits);
    if (*version < 1 || *version > RDB_VERSION) {
        snprintf(l->why, sizeof(l->why), "Can't handle RDB format version "
                 "%d", *version);
        return -1;
    }
    int rc = 0;
    while (rc == 0) {
        rc = rdb_read_u8(&l->c, &op) ? load_item(l, op)
                                     : fail(l, "Unexpected EOF reading RDB "
                                               "file");
    }
    return rc < 0 ? -1 : 0;
}

static int
check_crc(struct loader *l, int version)
{
    uint64_t want;
    size_t end = l->c.off;
    if (version < 5) {
        return 0;
    }
    if (!rdb_read_le64(&l->c, &want)) {
        return fail(l, "Short read of the RDB checksum");
    }
    if (want == 0) {
        log_warning("RDB file was saved with checksum disabled: no check "
                    "performed.");
        return 0;
    }
    uint64_t got = crc64_update(0, l->c.base, end);
    if (got != want) {
        char what[120];
        snprintf(what, sizeof(what), "Wrong RDB checksum expected: (%" PRIx64
                 ") got (%" PRIx64 ")", want, got);
        l->c.off = end;
        return fail(l, what);
    }
    return 0;
}

static void
loader_free(struct loader *l)
{
    rdb_obj_free(&l->obj);
    rdb_str_free(&l->key);
    rdb_str_free(&l->aux);
    mem_free(l->funcs.p);
}

int
rdb_load_buffer(const unsigned char *p, size_t len, const char *path,
                char *err, size_t errlen)
{
    static struct loader l;     /* large: off the stack */
    int version = 0;
    memset(&l, 0, sizeof(l));
    l.c = rdb_cur_make(p, len);
    l.expire_at = STORE_NEVER;
    l.now = clock_wall_now();
    l.skip = srv.conf.rdb_unsupported_keys == RDB_UNSUPPORTED_SKIP;
    last_info = (struct rdb_load_info){ "", -1, -1 };
    int rc = load_all(&l, &version);
    if (rc == 0) {
        rc = check_crc(&l, version);
    }
    if (rc == 0 && funcset_replace(l.funcs.p, l.funcs.len, l.why,
                                   sizeof(l.why)) < 0) {
        rc = -1;
    }
    loader_free(&l);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, l.why);
        keyspace_flush(-1);
        return -1;
    }
    log_notice("Done loading RDB %s, keys loaded: %" PRIu64 ", keys "
               "expired: %" PRIu64 ", empty keys skipped: %" PRIu64
               ", stream and module keys skipped: %" PRIu64, path, l.keys,
               l.expired, l.empty, l.skipped);
    return 0;
}

bool
rdb_is_rdb_file(const char *path)
{
    char magic[5];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    bool yes = read(fd, magic, 5) == 5 && memcmp(magic, "REDIS", 5) == 0;
    close(fd);
    return yes;
}

int
rdb_load_file(const char *path, char *err, size_t errlen)
{
    struct stat st = { 0 };
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            return 1;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) < 0 || st.st_size == 0) {
        bool empty = errno == 0 || st.st_size == 0;
        snprintf(err, errlen, "%s: %s", path,
                 empty ? "Short read: an empty file at offset 0"
                       : strerror(errno));
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        return -1;
    }
    (void)madvise(map, len, MADV_SEQUENTIAL);
    int rc = rdb_load_buffer(map, len, path, err, errlen);
    munmap(map, len);
    return rc;
}
