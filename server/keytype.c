/*
 * keytype.c - what each key type is (see keytype.h): its state's size and
 * name, the arrays it owns, when a log or tiers state is fresh, and its
 * bytes.
 *
 * Encoding. keytype_encode() writes a log or tiers state with only the
 * entries the key still keeps at `now`, so the bytes do not depend on when
 * a call last expired the arrays, and a reader never sees an empty state
 * for a live key (a live key's newest entry is kept, by the definition of
 * its expiry).
 */
#include "server/keytype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/fixed_window.h"
#include "algorithms/sliding_window.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/time.h"

/* Bytes of the arrays keys own, by malloc's count. */

/* ---- types ------------------------------------------------------------- */

size_t
keytype_state_size(uint8_t type)
{
    switch (type) {
    case KEY_INT:
        return sizeof(struct ks_int);
    case KEY_STR:
        return sizeof(struct ks_str);
    case KEY_FIXED:
        return sizeof(struct fwin_state);
    case KEY_SLIDING:
        return sizeof(struct swin_state);
    case KEY_LOG:
        return sizeof(struct ks_log);
    case KEY_TIERS:
        return sizeof(struct ks_tiers);
    case KEY_LEASE:
        return sizeof(struct ks_lease);
    case KEY_REDIS_GCRA:
        return sizeof(struct ks_redis_gcra);
    case KEY_LIST:
        return sizeof(struct qlist);
    case KEY_HASH:
        return sizeof(struct hmap);
    case KEY_ZSET:
        return sizeof(struct zset);
    case KEY_SET:
        return sizeof(struct set);
    default:
        return 0;
    }
}

const char *
keytype_name(uint8_t type)
{
    switch (type) {
    case KEY_INT:
    case KEY_STR:
        return "string";
    case KEY_REDIS_GCRA:
        return "gcra";
    case KEY_FIXED:
        return "fixed";
    case KEY_SLIDING:
        return "sliding";
    case KEY_LOG:
        return "log";
    case KEY_TIERS:
        return "tiers";
    case KEY_LEASE:
        return "lease";
    case KEY_LIST:
        return "list";
    case KEY_HASH:
        return "hash";
    case KEY_ZSET:
        return "zset";
    case KEY_SET:
        return "set";
    default:
        return "none";
    }
}

size_t
keytype_decoded_state_size(uint8_t type, const unsigned char *p, size_t len,
                           int64_t expire_at)
{
    struct ks_int k;
    if (type != KEY_INT || len != sizeof(k)) {
        return keytype_state_size(type);
    }
    memcpy(&k, p, sizeof(k));
    return keytype_int_state_size(k.v, expire_at);
}

const char *
keytype_string(const struct store_rec *r, char *buf, size_t *len)
{
    struct store_rec *w = (struct store_rec *)r;
    if (r->type == KEY_INT) {
        *len = num_fmt_i64(buf, keytype_int(r));
        return buf;
    }
    struct ks_str *st = store_rec_state(w);
    *len = st->len;
    return keytype_str_bytes(st);
}

enum ks_tat
keytype_gcra_tat_text(const struct store_rec *r, uint64_t *tat)
{
    char buf[KS_INT_TEXT];
    size_t len;
    if (!keytype_is_string(r->type)) {
        return KS_TAT_WRONGTYPE;
    }
    const char *s = keytype_string(r, buf, &len);
    size_t plus = len > 0 && s[0] == '+';
    return num_parse_u64_digits(s + plus, len - plus, tat) ? KS_TAT_OK
                                                           : KS_TAT_NOT_U64;
}

/* ---- owned arrays ------------------------------------------------------ */

void *
keytype_owned_realloc(void *p, size_t size)
{
    return mem_owned_realloc(p, size);
}

void
keytype_free(void *p)
{
    mem_owned_free(p);
}

size_t
keytype_owned_bytes(void)
{
    return mem_owned_bytes();
}

size_t
keytype_rec_owned(const struct store_rec *r)
{
    const void *state = store_rec_state((struct store_rec *)r);
    switch (r->type) {
    case KEY_LOG: {
        const struct ks_log *ls = state;
        return mem_usable(ls->ring.e) + mem_usable(ls->meta);
    }
    case KEY_TIERS:
        return mem_usable(((const struct ks_tiers *)state)->st.b);
    case KEY_LEASE:
        return mem_usable(((const struct ks_lease *)state)->set.buf);
    case KEY_STR: {
        const struct ks_str *st = state;
        return st->len > KS_STR_INLINE ? mem_usable(st->u.heap.p) : 0;
    }
    case KEY_LIST:
        return qlist_owned(state);
    case KEY_HASH:
        return hmap_owned(state);
    case KEY_ZSET:
        return zset_owned(state);
    case KEY_SET:
        return set_owned(state);
    default:
        return 0;
    }
}

void
keytype_release(struct store_rec *r)
{
    void *state = store_rec_state(r);
    switch (r->type) {
    case KEY_LOG: {
        struct ks_log *ls = state;
        keytype_free(ls->ring.e);
        keytype_free(ls->meta);
        break;
    }
    case KEY_TIERS:
        keytype_free(((struct ks_tiers *)state)->st.b);
        break;
    case KEY_LEASE:
        keytype_free(((struct ks_lease *)state)->set.buf);
        break;
    case KEY_STR: {
        struct ks_str *st = state;
        if (st->len > KS_STR_INLINE) {
            keytype_free(st->u.heap.p);
        }
        break;
    }
    case KEY_LIST:
        qlist_free(state);
        break;
    case KEY_HASH:
        hmap_free(state);
        break;
    case KEY_ZSET:
        zset_free(state);
        break;
    case KEY_SET:
        set_free(state);
        break;
    default:
        break;
    }
}

uint64_t
keytype_coll_len(const struct store_rec *r)
{
    const void *state = store_rec_state((struct store_rec *)r);
    switch (r->type) {
    case KEY_LIST:
        return qlist_len(state);
    case KEY_HASH:
        return hmap_len(state);
    case KEY_ZSET:
        return zset_len(state);
    case KEY_SET:
        return set_len(state);
    default:
        return 0;
    }
}

int
keytype_coll_apply(struct store_rec *r, uint8_t op, const unsigned char *p,
                   size_t len)
{
    void *state = store_rec_state(r);
    switch (r->type) {
    case KEY_LIST:
        return qlist_apply(state, op, p, len);
    case KEY_HASH:
        return hmap_apply(state, op, p, len);
    case KEY_ZSET:
        return zset_apply(state, op, p, len);
    case KEY_SET:
        return set_apply(state, op, p, len);
    default:
        return COLL_MALFORMED;
    }
}

/* ---- when a log or tiers state is fresh --------------------------------- */

/* (a + b) * unit in ns, saturating to the end of the ns clock. */
static int64_t
departure_ns(int64_t a, int64_t b, int64_t unit)
{
    int64_t sum, ns;
    if (__builtin_add_overflow(a, b, &sum) ||
        __builtin_mul_overflow(sum, unit, &ns)) {
        return INT64_MAX;
    }
    return ns;
}

int64_t
keytype_log_fresh_at(const struct ks_log *ls, int64_t now)
{
    const struct slog_entry *e = slog_newest(&ls->ring, 0);
    return e == NULL ? now : departure_ns(e->t_ms, ls->keep_ms, NS_PER_MS);
}

int64_t
keytype_tiers_fresh_at(const struct ks_tiers *ts, int64_t now)
{
    if (ts->st.len == 0) {
        return now;
    }
    return departure_ns(ts->st.b[ts->st.len - 1].sec, ts->keep, NS_PER_SEC);
}

int64_t
keytype_lease_fresh_at(const struct ks_lease *ls, int64_t now)
{
    int64_t last;
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    if (lease_live(&ls->set, now_ms, NULL, &last) == 0) {
        return now;
    }
    return departure_ns(last, 0, NS_PER_MS);
}

/* ---- encoding ---------------------------------------------------------- */

/* The live entries at now, oldest first, as lease.h packs them. */
static bool
encode_lease(const struct ks_lease *ls, int64_t now, struct membuf *b)
{
    int64_t now_ms = limit_floor_div(now, NS_PER_MS);
    uint32_t n = lease_live(&ls->set, now_ms, NULL, NULL);
    struct lease_entry e;
    uint32_t off = 0;
    bool ok = membuf_put(b, &n, sizeof(n));
    while (ok && lease_next(&ls->set, &off, &e)) {
        ok = e.end_ms <= now_ms ||
             membuf_put(b, ls->set.buf + e.off, off - e.off);
    }
    return ok;
}

/* Entries kept at now: the suffix after those older than keep_ms. */
static uint32_t
log_first_kept(const struct ks_log *ls, int64_t now)
{
    struct slog_params keep = { 1, 1, 0, ls->keep_ms };
    /* The window never cuts first. */
    keep.window = ls->keep_ms / MS_PER_SEC + 1;
    return slog_uncounted(&keep, &ls->ring, now, NULL);
}

static bool
encode_log(const struct ks_log *ls, int64_t now, struct membuf *b)
{
    uint32_t first = log_first_kept(ls, now);
    uint32_t n = ls->ring.len - first;
    bool ok = membuf_put(b, &ls->keep_ms, sizeof(ls->keep_ms)) &&
              membuf_put(b, &n, sizeof(n));
    for (uint32_t i = n; ok && i-- > 0;) {
        const struct slog_entry *e = slog_newest(&ls->ring, i);
        ok = membuf_put(b, &e->t_ms, sizeof(e->t_ms)) &&
             membuf_put(b, &e->cost, sizeof(e->cost)) &&
             membuf_put(b, &e->meta_len, sizeof(e->meta_len));
    }
    for (uint32_t i = n; ok && i-- > 0;) {
        const struct slog_entry *e = slog_newest(&ls->ring, i);
        /* No META at all: no arena either (meta may be NULL). */
        ok = e->meta_len == 0 ||
             membuf_put(b, ls->meta + e->meta_off, e->meta_len);
    }
    return ok;
}

static bool
encode_tiers(const struct ks_tiers *ts, int64_t now, struct membuf *b)
{
    int64_t now_s = limit_floor_div(now, NS_PER_SEC);
    uint32_t first = 0;
    while (first < ts->st.len &&
           departure_ns(ts->st.b[first].sec, ts->keep, 1) <= now_s) {
        first++;
    }
    uint32_t n = ts->st.len - first;
    /* No bucket at all (a key loaded empty): st.b is NULL, no offset. */
    return membuf_put(b, &ts->keep, sizeof(ts->keep)) &&
           membuf_put(b, &n, sizeof(n)) &&
           (n == 0 ||
            membuf_put(b, ts->st.b + first, (size_t)n * sizeof(*ts->st.b)));
}

bool
keytype_encode(const struct store_rec *r, int64_t now, struct membuf *b)
{
    const void *state = store_rec_state((struct store_rec *)r);
    if (r->type == KEY_LOG) {
        return encode_log(state, now, b);
    }
    if (r->type == KEY_TIERS) {
        return encode_tiers(state, now, b);
    }
    if (r->type == KEY_LEASE) {
        return encode_lease(state, now, b);
    }
    switch (r->type) {
    case KEY_INT: {
        struct ks_int k = { keytype_int(r) };
        return membuf_put(b, &k, sizeof(k));
    }
    case KEY_STR: {
        struct ks_str *st = (struct ks_str *)state;
        return membuf_put(b, keytype_str_bytes(st), st->len);
    }
    case KEY_LIST:
        return qlist_encode(state, b);
    case KEY_HASH:
        return hmap_encode(state, b);
    case KEY_ZSET:
        return zset_encode(state, b);
    case KEY_SET:
        return set_encode(state, b);
    default:
        return membuf_put(b, state, keytype_state_size(r->type));
    }
}

/* A string's bytes: inside the state when short, else in a block. */
static enum ks_decode
decode_str(struct ks_str *st, const unsigned char *p, size_t len)
{
    if (len > UINT32_MAX) {
        return KS_MALFORMED;
    }
    if (len > KS_STR_INLINE) {
        st->u.heap.p = keytype_owned_realloc(NULL, len);
        if (st->u.heap.p == NULL) {
            return KS_NOMEM;
        }
        st->u.heap.cap = (uint32_t)len;
    }
    st->len = (uint32_t)len;
    if (len > 0) {
        memcpy(keytype_str_bytes(st), p, len);
    }
    return KS_DECODED;
}

/* A log or tiers state holding nothing: before encoding 3 its key was
 * fresh, so it goes (KS_EMPTY); since, an EXPIRE or PERSIST may keep such
 * a key, which loads as it was. */
static enum ks_decode
empty_state(int version)
{
    return version >= KS_ENCODING_EXPIRY_MS ? KS_DECODED : KS_EMPTY;
}

/* One logged entry: time order, cost >= 1, META within its bound. */
static bool
read_log_entry(struct membuf_reader *rd, struct slog_entry *e, int64_t prev_t)
{
    return membuf_read(rd, &e->t_ms, sizeof(e->t_ms)) &&
           membuf_read(rd, &e->cost, sizeof(e->cost)) &&
           membuf_read(rd, &e->meta_len, sizeof(e->meta_len)) && e->cost >= 1 &&
           e->t_ms >= prev_t && e->meta_len <= KS_META_MAX;
}

static enum ks_decode
decode_log(struct ks_log *ls, struct membuf_reader *rd, int version)
{
    uint32_t n;
    if (!membuf_read(rd, &ls->keep_ms, sizeof(ls->keep_ms)) ||
        !membuf_read(rd, &n, sizeof(n)) || ls->keep_ms < MS_PER_SEC ||
        n > KS_LOG_ENTRIES_MAX ||
        (size_t)n > rd->left / (2 * sizeof(int64_t) + sizeof(uint32_t))) {
        return KS_MALFORMED;
    }
    if (n == 0) {
        return rd->left != 0 ? KS_MALFORMED : empty_state(version);
    }
    ls->ring.e = keytype_owned_realloc(NULL, (size_t)n * sizeof(*ls->ring.e));
    if (ls->ring.e == NULL) {
        return KS_NOMEM;
    }
    ls->ring.cap = n;
    uint32_t meta_total = 0;
    int64_t prev_t = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        struct slog_entry *e = &ls->ring.e[i];
        if (!read_log_entry(rd, e, prev_t) ||
            __builtin_add_overflow(ls->ring.sum, e->cost, &ls->ring.sum)) {
            return KS_MALFORMED;
        }
        prev_t = e->t_ms;
        e->meta_off = meta_total;
        meta_total += e->meta_len;  /* <= n * KS_META_MAX: fits */
        ls->ring.len++;
    }
    if (rd->left != meta_total) {
        return KS_MALFORMED;
    }
    ls->meta = keytype_owned_realloc(NULL, meta_total > 0 ? meta_total : 1);
    if (ls->meta == NULL) {
        return KS_NOMEM;
    }
    ls->meta_len = ls->meta_cap = meta_total;
    return membuf_read(rd, ls->meta, meta_total) ? KS_DECODED : KS_MALFORMED;
}

/* Buckets in strictly rising seconds, each holding units. */
static bool
tiers_buckets_valid(const struct tier_state *st)
{
    for (uint32_t i = 0; i < st->len; i++) {
        if (st->b[i].count < 1 || (i > 0 && st->b[i].sec <= st->b[i - 1].sec)) {
            return false;
        }
    }
    return true;
}

/* Version 1 kept no retention; the record's expiry (read back as the ms
 * it lives through) was the newest bucket's departure from it. */
static int64_t
tiers_keep_from_expiry(const struct tier_state *st, int64_t expire_ms)
{
    int64_t end_s = expire_ms / MS_PER_SEC + 1;
    int64_t keep;
    if (__builtin_sub_overflow(end_s, st->b[st->len - 1].sec, &keep) ||
        keep < 1) {
        return 1;
    }
    return keep;
}

static enum ks_decode
decode_tiers(struct ks_tiers *ts, struct membuf_reader *rd, int version,
             int64_t expire_at)
{
    uint32_t n;
    if ((version >= 2 && !membuf_read(rd, &ts->keep, sizeof(ts->keep))) ||
        !membuf_read(rd, &n, sizeof(n)) ||
        rd->left != (size_t)n * sizeof(*ts->st.b) ||
        (version >= 2 && ts->keep < 1)) {
        return KS_MALFORMED;
    }
    if (n == 0) {
        return rd->left != 0 ? KS_MALFORMED : empty_state(version);
    }
    ts->st.b = keytype_owned_realloc(NULL, rd->left);
    if (ts->st.b == NULL) {
        return KS_NOMEM;
    }
    ts->st.cap = ts->st.len = n;
    if (!membuf_read(rd, ts->st.b, rd->left) || !tiers_buckets_valid(&ts->st)) {
        return KS_MALFORMED;
    }
    if (version < 2) {
        ts->keep = tiers_keep_from_expiry(&ts->st, expire_at);
    }
    return KS_DECODED;
}

/* n entries as lease.h packs them, each holder 1..LEASE_HOLDER_MAX bytes,
 * at most LEASE_LIMIT_MAX of them. A holder twice is not looked for (it
 * would cost n^2): its first entry is the one RL.REFRESH and RL.RELEASE
 * find, and the other ends by itself. */
static enum ks_decode
decode_lease(struct ks_lease *ls, struct membuf_reader *rd)
{
    uint32_t n;
    struct lease_entry e;
    if (!membuf_read(rd, &n, sizeof(n)) || n > LEASE_LIMIT_MAX ||
        rd->left > (size_t)n * lease_entry_size(LEASE_HOLDER_MAX)) {
        return KS_MALFORMED;
    }
    if (n == 0 || rd->left == 0) {
        return rd->left != 0 || n != 0 ? KS_MALFORMED : KS_DECODED;
    }
    ls->set.buf = keytype_owned_realloc(NULL, rd->left);
    if (ls->set.buf == NULL) {
        return KS_NOMEM;
    }
    ls->set.cap = ls->set.used = (uint32_t)rd->left;
    if (!membuf_read(rd, ls->set.buf, rd->left)) {
        return KS_MALFORMED;
    }
    uint32_t off = 0;
    while (lease_next(&ls->set, &off, &e)) {
        if (e.len < 1 || e.len > LEASE_HOLDER_MAX || off > ls->set.used) {
            return KS_MALFORMED;
        }
        ls->set.n++;
    }
    return off == ls->set.used && ls->set.n == n ? KS_DECODED : KS_MALFORMED;
}

/* A collection's elements; an empty one is no key (Redis writes none). */
static enum ks_decode
decode_coll(struct store_rec *r, const unsigned char *p, size_t len)
{
    void *state = store_rec_state(r);
    int rc = r->type == KEY_LIST   ? qlist_decode(state, p, len)
             : r->type == KEY_HASH ? hmap_decode(state, p, len)
             : r->type == KEY_SET  ? set_decode(state, p, len)
                                   : zset_decode(state, p, len);
    if (rc == COLL_NOMEM) {
        return KS_NOMEM;
    }
    if (rc != COLL_OK || keytype_coll_len(r) == 0) {
        return KS_MALFORMED;
    }
    return KS_DECODED;
}

enum ks_decode
keytype_decode(struct store_rec *r, const unsigned char *p, size_t len,
                int version)
{
    struct membuf_reader rd = { p, len };
    void *state = store_rec_state(r);
    if (r->type == KEY_LOG) {
        return decode_log(state, &rd, version);
    }
    if (r->type == KEY_TIERS) {
        return decode_tiers(state, &rd, version, r->expire_at);
    }
    if (r->type == KEY_STR) {
        return decode_str(state, p, len);
    }
    if (r->type == KEY_LEASE) {
        return decode_lease(state, &rd);
    }
    if (keytype_is_coll(r->type)) {
        return decode_coll(r, p, len);
    }
    if (len != keytype_state_size(r->type) || r->type == KEY_COUNTER_V2) {
        return KS_MALFORMED;
    }
    if (r->type == KEY_INT) {
        /* Into a record sized by keytype_decoded_state_size() for the
         * expiry it has now. */
        struct ks_int k;
        memcpy(&k, p, sizeof(k));
        return keytype_int_set(r, k.v, true) ? KS_DECODED : KS_MALFORMED;
    }
    memcpy(state, p, len);
    if (r->type == KEY_REDIS_GCRA &&
        ((const struct ks_redis_gcra *)state)->tat_us < 0) {
        return KS_MALFORMED;        /* Redis refuses a negative TAT too */
    }
    return KS_DECODED;
}

/* ---- older encodings --------------------------------------------------- */

/* INCREX's counter as encodings 1 and 2 kept it. */
struct counter_v2 {
    int64_t i;
    uint8_t is_float;
    unsigned char f[sizeof(long double)];
};

/* The string Redis holds for an old counter: its decimal, or the human
 * text of its long double. */
static bool
upgrade_counter(uint8_t *type, const unsigned char **p, size_t *len,
                unsigned char *buf)
{
    struct counter_v2 k;
    long double f;
    if (*len != sizeof(k)) {
        return false;
    }
    memcpy(&k, *p, sizeof(k));
    memcpy(&f, k.f, sizeof(f));
    if (!k.is_float) {
        *type = KEY_INT;
        memcpy(buf, &k.i, sizeof(k.i));
        *len = sizeof(k.i);
    } else {
        if (!isfinite(f)) {
            return false;
        }
        *type = KEY_STR;
        *len = increx_format_float(f, (char *)buf, KS_UPGRADE_BUF);
        if (*len == 0) {
            return false;
        }
    }
    *p = buf;
    return true;
}

bool
keytype_upgrade(uint8_t *type, const unsigned char **p, size_t *len,
                int encoding, unsigned char *buf)
{
    if (encoding >= KS_ENCODING_EXPIRY_MS) {
        return true;
    }
    if (*type == KEY_COUNTER_V2) {
        return upgrade_counter(type, p, len, buf);
    }
    if (*type == KEY_INT) {
        /* CL.THROTTLE's TAT, a u64: a string of its decimal. */
        uint64_t tat;
        if (*len != sizeof(tat)) {
            return false;
        }
        memcpy(&tat, *p, sizeof(tat));
        if (tat > INT64_MAX) {
            *type = KEY_STR;
            *len = num_fmt_u64((char *)buf, tat);
            *p = buf;
        }
    }
    return true;
}

