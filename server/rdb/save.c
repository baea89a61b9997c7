/*
 * save.c - the keyspace in Redis's RDB format, written (see save.h). The
 * bytes of each value come from lib/rdb_write.h; this file chooses the RDB
 * type Redis 7.0.15 would, walks cellgate's collections in their order
 * (a small hash's or sorted set's listpack then equals the one Redis
 * DUMPs for the same writes, byte for byte), and lays out the file as
 * rdbSaveRio() does:
 *
 *   "REDIS0010"
 *   AUX redis-ver, redis-bits, ctime, used-mem, [repl-stream-db, repl-id,
 *       repl-offset: a file for a replica], aof-base
 *   FUNCTION2 and the code, for each function library
 *   per database with keys: SELECTDB n, RESIZEDB keys expires, then each
 *       key: [EXPIRETIME_MS ms (8 bytes LE)], type, key, object
 *   EOF, the CRC-64 of every byte before it (8 bytes LE)
 */
#include "server/rdb/save.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/crc64.h"
#include "lib/num.h"
#include "lib/rdb_write.h"
#include "server/child.h"
#include "server/clock.h"
#include "server/funcset.h"
#include "server/keytype.h"
#include "server/log.h"
#include "server/server.h"

/* The Redis whose files these are (the redis-ver aux field). */
#define REDIS_VERSION "7.0.15"
/* A PLAIN quicklist node: an element this large is a node of its own,
 * not in a listpack (Redis 7.0's packed_threshold, 1 GB). */
#define LIST_PLAIN_MIN (UINT64_C(1) << 30)
/* Redis's estimate of an entry's overhead when it fills a node. */
#define LIST_ENTRY_OVERHEAD 8
/* list-max-listpack-size's negative values: node sizes, -1 to -5. */
static const size_t list_node_bytes[] = { 4096, 8192, 16384, 32768, 65536 };
#define LIST_SAFETY_BYTES 8192

/* An object's type byte, then, in a file, its key (kr: the record; NULL
 * for DUMP's payload, which has none). */
static bool
put_head(struct membuf *out, uint8_t type, const struct store_rec *kr)
{
    return rdb_put_byte(out, type) &&
           (kr == NULL ||
            rdb_put_string(out, store_rec_key((struct store_rec *)kr),
                           store_rec_keylen(kr)));
}

/* An object Redis keeps as one blob (a listpack, an intset): its type byte
 * (and key), then the blob's bytes as an RDB string; the blob is freed.
 * ok: whether the blob was made. */
static bool
put_blob(struct membuf *out, uint8_t type, const struct store_rec *kr,
         struct membuf *blob, bool ok)
{
    ok = ok && put_head(out, type, kr) &&
         rdb_put_string(out, blob->p, blob->len);
    mem_free(blob->p);
    return ok;
}

/* ---- lists ------------------------------------------------------------- */

/* A list as quicklist 2 nodes: each node's container and listpack go
 * into `nodes` as the node ends, counted, so the count can lead them. */
struct list_writer {
    struct membuf nodes;
    struct membuf node;             /* the listpack being filled */
    struct rdb_listpack lp;
    uint64_t count;
    size_t max_bytes;               /* a node's bound, or ... */
    int64_t max_entries;            /* ... its count (a positive fill) */
    bool open, failed;
};

static bool
list_end_node(struct list_writer *w)
{
    if (!w->open) {
        return true;
    }
    w->open = false;
    w->count++;
    return rdb_lp_end(&w->lp) &&
           rdb_put_len(&w->nodes, RDB_QUICKLIST_PACKED) &&
           rdb_put_string(&w->nodes, w->node.p, w->node.len);
}

/* Redis's _quicklistNodeAllowInsert() under list-max-listpack-size. */
static bool
list_node_has_room(const struct list_writer *w, size_t len)
{
    size_t grown = w->node.len + 1 + len + LIST_ENTRY_OVERHEAD;
    if (w->max_entries > 0) {
        return (int64_t)w->lp.count < w->max_entries &&
               grown <= LIST_SAFETY_BYTES;
    }
    return grown <= w->max_bytes;
}

static bool
list_add(void *arg, uint64_t index, const unsigned char *p, size_t len)
{
    struct list_writer *w = arg;
    (void)index;
    if (len >= LIST_PLAIN_MIN) {
        w->failed = !list_end_node(w) ||
                    !rdb_put_len(&w->nodes, RDB_QUICKLIST_PLAIN) ||
                    !rdb_put_string(&w->nodes, p, len);
        w->count++;
        return !w->failed;
    }
    if (w->open && !list_node_has_room(w, len)) {
        w->failed = !list_end_node(w);
    }
    if (!w->open && !w->failed) {
        w->node.len = 0;
        w->open = true;
        w->failed = !rdb_lp_begin(&w->lp, &w->node);
    }
    w->failed = w->failed || !rdb_lp_add(&w->lp, p, len);
    return !w->failed;
}

static bool
put_list(const struct qlist *x, struct membuf *out,
         const struct store_rec *kr)
{
    int64_t fill = srv.conf.list_max_listpack_size;
    struct list_writer w = {
        .max_bytes = list_node_bytes[fill >= -5 && fill <= -1 ? -fill - 1
                                                              : 1],
        .max_entries = fill > 0 ? fill : fill == 0 ? 1 : 0,
    };
    qlist_walk(x, 0, false, list_add, &w);
    bool ok = !w.failed && list_end_node(&w) &&
              put_head(out, RDB_TYPE_LIST_QUICKLIST_2, kr) &&
              rdb_put_len(out, w.count) &&
              membuf_put(out, w.nodes.p, w.nodes.len);
    mem_free(w.nodes.p);
    mem_free(w.node.p);
    return ok;
}

/* ---- hashes ------------------------------------------------------------ */

/* Would Redis 7.0 keep this hash a listpack (hashTypeTryConversion())? */
static bool
hash_is_listpack(const struct hmap *x)
{
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    int64_t max = srv.conf.hash_max_listpack_value;
    if ((int64_t)hmap_len(x) > srv.conf.hash_max_listpack_entries) {
        return false;
    }
    while (hmap_next(x, &it, &f, &v)) {
        if ((int64_t)f.len > max || (int64_t)v.len > max) {
            return false;
        }
    }
    return true;
}

static bool
put_hash_listpack(const struct hmap *x, struct membuf *out,
         const struct store_rec *kr)
{
    struct membuf lpbuf = { 0 };
    struct rdb_listpack lp;
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    bool ok = rdb_lp_begin(&lp, &lpbuf);
    while (ok && hmap_next(x, &it, &f, &v)) {
        ok = rdb_lp_add(&lp, f.data, f.len) && rdb_lp_add(&lp, v.data, v.len);
    }
    return put_blob(out, RDB_TYPE_HASH_LISTPACK, kr, &lpbuf,
                    ok && rdb_lp_end(&lp));
}

static bool
put_hash(const struct hmap *x, struct membuf *out,
         const struct store_rec *kr)
{
    if (hash_is_listpack(x)) {
        return put_hash_listpack(x, out, kr);
    }
    struct hmap_iter it = { 0 };
    struct pack_item f, v;
    bool ok = put_head(out, RDB_TYPE_HASH, kr) &&
              rdb_put_len(out, hmap_len(x));
    while (ok && hmap_next(x, &it, &f, &v)) {
        ok = rdb_put_string(out, f.data, f.len) &&
             rdb_put_string(out, v.data, v.len);
    }
    return ok;
}

/* ---- sorted sets ------------------------------------------------------- */

static void
member_fits(const unsigned char *m, size_t len, double score, void *arg)
{
    (void)m;
    (void)score;
    if ((int64_t)len > srv.conf.zset_max_listpack_value) {
        *(bool *)arg = false;
    }
}

/* Would Redis 7.0 keep this sorted set a listpack (zsetTypeCreate())? */
static bool
zset_is_listpack(const struct zset *x)
{
    bool fits = true;
    uint64_t cursor = 0;
    if ((int64_t)zset_len(x) > srv.conf.zset_max_listpack_entries) {
        return false;
    }
    do {
        cursor = zset_scan(x, cursor, member_fits, &fits);
    } while (fits && cursor != 0);
    return fits;
}

/* Member, score pairs in increasing order, each score as zzlInsertAt()
 * writes it: its d2string() text, which a listpack may store as an
 * integer. */
static bool
put_zset_listpack(const struct zset *x, struct membuf *out,
         const struct store_rec *kr)
{
    struct membuf lpbuf = { 0 };
    struct rdb_listpack lp;
    struct zset_iter it;
    bool ok = rdb_lp_begin(&lp, &lpbuf);
    zset_iter_at(&it, x, 0);
    do {
        const unsigned char *m;
        size_t len;
        double score;
        char text[64];
        zset_iter_get(&it, &m, &len, &score);
        size_t tn = num_score_text(text, sizeof(text), score);
        ok = ok && rdb_lp_add(&lp, m, len) && rdb_lp_add(&lp, text, tn);
    } while (ok && zset_iter_next(&it));
    return put_blob(out, RDB_TYPE_ZSET_LISTPACK, kr, &lpbuf,
                    ok && rdb_lp_end(&lp));
}

/* ZSET_2 from the highest score down, as Redis writes its skiplist (so
 * that loading inserts each at the head). */
static bool
put_zset(const struct zset *x, struct membuf *out,
         const struct store_rec *kr)
{
    if (zset_is_listpack(x)) {
        return put_zset_listpack(x, out, kr);
    }
    uint64_t n = zset_len(x);
    struct zset_iter it;
    bool ok = put_head(out, RDB_TYPE_ZSET_2, kr) && rdb_put_len(out, n);
    zset_iter_at(&it, x, n - 1);
    do {
        const unsigned char *m;
        size_t len;
        double score;
        zset_iter_get(&it, &m, &len, &score);
        ok = ok && rdb_put_string(out, m, len) && rdb_put_double(out, score);
    } while (ok && zset_iter_prev(&it));
    return ok;
}

/* ---- sets -------------------------------------------------------------- */

static bool
put_intset(const struct set *x, struct membuf *out,
         const struct store_rec *kr)
{
    uint64_t n = set_len(x);
    int64_t *v = mem_malloc(n * sizeof(*v));
    struct set_iter it = { 0 };
    struct pack_item m;
    struct membuf blob = { 0 };
    if (v == NULL) {
        return false;
    }
    for (size_t i = 0; i < n && set_next(x, &it, &m); i++) {
        if (!num_parse_i64((const char *)m.data, m.len, &v[i])) {
            v[i] = 0;               /* an intset holds integers only */
        }
    }
    bool ok = rdb_put_intset(&blob, v, n);
    mem_free(v);
    return put_blob(out, RDB_TYPE_SET_INTSET, kr, &blob, ok);
}

static bool
put_set(const struct set *x, struct membuf *out,
         const struct store_rec *kr)
{
    if (set_is_intset(x) &&
        (int64_t)set_len(x) <= srv.conf.set_max_intset_entries) {
        return put_intset(x, out, kr);
    }
    struct set_iter it = { 0 };
    struct pack_item m;
    bool ok = put_head(out, RDB_TYPE_SET, kr) && rdb_put_len(out, set_len(x));
    while (ok && set_next(x, &it, &m)) {
        ok = rdb_put_string(out, m.data, m.len);
    }
    return ok;
}

/* ---- one record -------------------------------------------------------- */

static bool
put_cellgate(const struct store_rec *r, int64_t now, struct membuf *out)
{
    struct membuf state = { 0 };
    bool ok = keytype_encode(r, now, &state) &&
              rdb_put_byte(out, RDB_TYPE_CELLGATE) &&
              rdb_put_byte(out, KS_ENCODING) && rdb_put_byte(out, r->type) &&
              rdb_put_len(out, state.len) &&
              membuf_put(out, state.p, state.len);
    mem_free(state.p);
    return ok;
}

bool
rdb_can_hold(const struct store_rec *r)
{
    return keytype_is_string(r->type) || keytype_is_coll(r->type);
}

/* r's type byte, its key when kr is r (a file), and its object. */
static bool
put_object(const struct store_rec *r, int64_t now, struct membuf *out,
           const struct store_rec *kr)
{
    const void *state = store_rec_state((struct store_rec *)r);
    char buf[KS_INT_TEXT];
    size_t len;
    const char *s;
    switch (r->type) {
    case KEY_INT:
    case KEY_STR:
        s = keytype_string(r, buf, &len);
        return put_head(out, RDB_TYPE_STRING, kr) &&
               rdb_put_string(out, s, len);
    case KEY_LIST:
        return put_list(state, out, kr);
    case KEY_HASH:
        return put_hash(state, out, kr);
    case KEY_ZSET:
        return put_zset(state, out, kr);
    case KEY_SET:
        return put_set(state, out, kr);
    default:
        return put_cellgate(r, now, out);
    }
}

bool
rdb_dump_payload(const struct store_rec *r, int64_t now, struct membuf *out)
{
    size_t from = out->len;
    return put_object(r, now, out, NULL) && rdb_put_footer(out, from);
}

/* ---- the file ---------------------------------------------------------- */

struct file_writer {
    FILE *f;
    uint64_t crc;
    struct membuf buf;          /* bytes not yet written */
    int64_t now;
    uint64_t keys, left_out;
    bool failed;
};

#define FLUSH_AT (256u << 10)

static void
file_flush(struct file_writer *w)
{
    if (!w->failed && w->buf.len > 0) {
        w->crc = crc64_update(w->crc, w->buf.p, w->buf.len);
        w->failed = fwrite(w->buf.p, 1, w->buf.len, w->f) != w->buf.len;
    }
    w->buf.len = 0;
}

static void
put_aux(struct file_writer *w, const char *name, const char *value)
{
    w->failed = w->failed || !rdb_put_byte(&w->buf, RDB_OPCODE_AUX) ||
                !rdb_put_string(&w->buf, name, strlen(name)) ||
                !rdb_put_string(&w->buf, value, strlen(value));
}

/* rdbSaveAuxFieldStrInt(): the integer's text, which rdb_put_string()
 * encodes as an integer when it fits 32 bits. */
static void
put_aux_int(struct file_writer *w, const char *name, int64_t v)
{
    char text[NUM_I64_MAXLEN];
    text[num_fmt_i64(text, v)] = '\0';
    put_aux(w, name, text);
}

static void
put_header(struct file_writer *w, const struct rdb_repl_info *repl)
{
    char magic[16];
    snprintf(magic, sizeof(magic), "REDIS%04d", RDB_VERSION);
    w->failed = !membuf_put(&w->buf, magic, 9);
    put_aux(w, "redis-ver", REDIS_VERSION);
    put_aux_int(w, "redis-bits", (int64_t)sizeof(void *) * 8);
    put_aux_int(w, "ctime", w->now / NS_PER_SEC);
    put_aux_int(w, "used-mem", (int64_t)mem_used());
    if (repl != NULL) {
        put_aux_int(w, "repl-stream-db", repl->stream_db);
        put_aux(w, "repl-id", repl->replid);
        put_aux_int(w, "repl-offset", repl->offset);
    }
    put_aux_int(w, "aof-base", 0);
}

bool
rdb_put_functions(const unsigned char *set, size_t len, struct membuf *out)
{
    struct membuf_reader r = { set, len };
    uint32_t n;
    const unsigned char *code;
    while (membuf_read(&r, &n, sizeof(n)) && membuf_skip(&r, n, &code)) {
        if (!rdb_put_byte(out, RDB_OPCODE_FUNCTION2) ||
            !rdb_put_string(out, code, n)) {
            return false;
        }
    }
    return true;
}

static void
put_functions(struct file_writer *w)
{
    struct membuf set = { 0 };
    w->failed = w->failed || !funcset_encode(&set) ||
                !rdb_put_functions(set.p, set.len, &w->buf);
    mem_free(set.p);
}

static void
put_record(struct store_rec *r, void *arg)
{
    struct file_writer *w = arg;
    if (w->failed || store_rec_dead(r, w->now)) {
        return;
    }
    if (!rdb_can_hold(r)) {
        w->left_out++;
        return;
    }
    if (r->expire_at != STORE_NEVER) {
        unsigned char ms[8];
        for (int i = 0; i < 8; i++) {
            ms[i] = (unsigned char)((uint64_t)r->expire_at >> (8 * i));
        }
        w->failed = !rdb_put_byte(&w->buf, RDB_OPCODE_EXPIRETIME_MS) ||
                    !membuf_put(&w->buf, ms, 8);
    }
    w->failed = w->failed || !put_object(r, w->now, &w->buf, r);
    w->keys++;
    child_report_progress(w->keys);
    if (w->buf.len >= FLUSH_AT) {
        file_flush(w);
    }
    if (srv.conf.rdb_key_save_delay > 0) {
        usleep((useconds_t)srv.conf.rdb_key_save_delay);
    }
}

/* Database i: SELECTDB, RESIZEDB (the sizes Redis's loader presizes its
 * tables with), its live keys. Nothing for an empty one. */
static void
put_db(struct file_writer *w, size_t i)
{
    struct store *s = srv.dbs[i];
    uint64_t cursor = 0;
    if (s == NULL || store_size(s) == 0) {
        return;
    }
    struct store_usage u = store_usage(s);
    w->failed = w->failed || !rdb_put_byte(&w->buf, RDB_OPCODE_SELECTDB) ||
                !rdb_put_len(&w->buf, i) ||
                !rdb_put_byte(&w->buf, RDB_OPCODE_RESIZEDB) ||
                !rdb_put_len(&w->buf, u.keys) ||
                !rdb_put_len(&w->buf, u.volatile_keys);
    do {
        cursor = store_scan(s, cursor, put_record, w);
    } while (cursor != 0 && !w->failed);
}

/* The end: EOF, then the CRC-64 of everything before it (itself not
 * covered), flushed and fsynced. */
static void
put_end(struct file_writer *w)
{
    unsigned char crc[8];
    w->failed = w->failed || !rdb_put_byte(&w->buf, RDB_OPCODE_EOF);
    file_flush(w);
    for (int i = 0; i < 8; i++) {
        crc[i] = (unsigned char)(w->crc >> (8 * i));
    }
    w->failed = w->failed || fwrite(crc, 1, 8, w->f) != 8 ||
                fflush(w->f) != 0 || fsync(fileno(w->f)) != 0;
}

static int
write_file(const char *tmp, const struct rdb_repl_info *repl,
           struct file_writer *w, char *err, size_t errlen)
{
    w->f = fopen(tmp, "wb");
    if (w->f == NULL) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    (void)setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    put_header(w, repl);
    put_functions(w);
    for (size_t i = 0; i < srv.ndbs && !w->failed; i++) {
        if (repl == NULL || !repl->functions_only) {
            put_db(w, i);
        }
    }
    put_end(w);
    mem_free(w->buf.p);
    if (fclose(w->f) != 0 || w->failed) {
        snprintf(err, errlen, "writing %s: %s", tmp,
                 errno ? strerror(errno) : "out of memory or short write");
        unlink(tmp);
        return -1;
    }
    return 0;
}

int
rdb_save_file(const char *path, const struct rdb_repl_info *repl,
              uint64_t *left_out, char *err, size_t errlen)
{
    char tmp[4300];
    struct file_writer w = { .now = clock_wall_now() };
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
    errno = 0;
    if (write_file(tmp, repl, &w, err, errlen) < 0) {
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "renaming %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    *left_out = w.left_out;
    log_notice("RDB file for Redis written: %" PRIu64 " keys; %" PRIu64
               " limiter keys left out (cellgate's own types, which Redis "
               "cannot hold)", w.keys, w.left_out);
    return 0;
}
