/*
 * journal.c - effect records: built, grouped, handed to the sinks, read
 * back (see journal.h).
 *
 * One buffer collects the records of a loop pass; journal_publish() hands
 * it to every sink at once and empties it, so a record is built once
 * however many sinks take it. Records are built in place with their CRC
 * taken where they lie: the one record every limiter write makes
 * (journal_add_set()) costs a few constant-size copies.
 */
#include "server/journal.h"

#include "server/store.h"

#include <string.h>

#include "lib/crc32.h"
#include "lib/mem.h"
#include "server/server.h"
#include "server/store.h"

static unsigned char *buf;
static size_t buf_len, buf_cap;
/* A buffer grown past this by one pass is given back after it. */
#define JOURNAL_BUF_KEEP ((size_t)1 << 20)
static bool buf_broken;             /* an add ran out of memory */
static size_t group_start = SIZE_MAX;   /* offset of the open group's records */
static int group_depth;

static journal_sink_fn sinks[JOURNAL_SINKS];

/* redis.set_repl(): where the records from an offset of the pass's buffer
 * on go (a mask of sinks, JOURNAL_TO_ALL until a script narrows it). Kept
 * as boundaries rather than per record, so the common pass pays nothing:
 * only a pass that has some is filtered per sink at publish. */
#define JOURNAL_BOUNDS_MAX 256
static struct {
    size_t off;
    unsigned sinks;
} bounds[JOURNAL_BOUNDS_MAX];
static size_t nbounds;
static unsigned current_sinks = JOURNAL_TO_ALL;

/* ---- the buffer -------------------------------------------------------- */

static bool grow(size_t n);

/* Room for n more bytes: the common case is one compare. */
static inline bool
reserve(size_t n)
{
    return (buf_cap - buf_len >= n && !buf_broken) || grow(n);
}

static bool
grow(size_t n)
{
    if (buf_broken) {
        return false;
    }
    if (!mem_reserve(&buf, &buf_cap, buf_len, n, 64 * 1024)) {
        buf_broken = true;
        return false;
    }
    return true;
}

/* Room for a record of len payload bytes (too_big, or len over the
 * limit, breaks the buffer): its payload, NULL when there is none. */
static inline unsigned char *
record_open(size_t len, bool too_big)
{
    if (too_big || len > JOURNAL_RECORD_MAX) {
        buf_broken = true;
        return NULL;
    }
    if (!reserve(JOURNAL_HEADER_LEN + len)) {
        return NULL;
    }
    return buf + buf_len + JOURNAL_HEADER_LEN;
}

/* The record record_open() made room for, its payload written: its
 * header (length, its complement, the payload's CRC) and into the buffer. */
static inline void
record_close(size_t len)
{
    unsigned char *p = buf + buf_len;
    uint32_t hdr[3] = { (uint32_t)len, ~(uint32_t)len,
                        crc32c_update(0, p + JOURNAL_HEADER_LEN, len) };
    memcpy(p, hdr, sizeof(hdr));
    buf_len += JOURNAL_HEADER_LEN + len;
}

/* A record whose payload is op, `fixed` bytes of fixed fields, then two
 * tails: reserved whole, filled in place, its CRC taken where it lies. */
static bool
add_record(uint8_t op, const void *fixed, size_t fixed_len, const void *a,
           size_t alen, const void *b, size_t blen)
{
    size_t len = 1 + fixed_len + alen + blen;
    unsigned char *payload = record_open(len, false);
    if (payload == NULL) {
        return false;
    }
    payload[0] = op;
    memcpy(payload + 1, fixed, fixed_len);
    memcpy(payload + 1 + fixed_len, a, alen);
    memcpy(payload + 1 + fixed_len + alen, b, blen);
    record_close(len);
    return true;
}

/* The record of every limiter write, so built in place without the
 * generic path: fixed fields by constant-size copies, CRC where it lies. */
bool
journal_add_set(uint32_t db, uint8_t type, const char *key, size_t keylen,
                int64_t expire_at, const void *state, size_t state_len)
{
    enum { FIXED = 1 + 4 + 1 + 4 + 8 };
    size_t len = FIXED + keylen + state_len;
    uint32_t kl = (uint32_t)keylen;
    unsigned char *q = record_open(len, keylen > UINT32_MAX);
    if (q == NULL) {
        return false;
    }
    q[0] = JOURNAL_SET;
    memcpy(q + 1, &db, 4);
    q[5] = type;
    memcpy(q + 6, &kl, 4);
    memcpy(q + 10, &expire_at, 8);
    memcpy(q + FIXED, key, keylen);
    memcpy(q + FIXED + keylen, state, state_len);
    record_close(len);
    return true;
}

bool
journal_add_del(uint32_t db, const char *key, size_t keylen)
{
    return add_record(JOURNAL_DEL, &db, 4, key, keylen, "", 0);
}

bool
journal_add_flush(uint32_t db)
{
    return add_record(JOURNAL_FLUSH, &db, 4, "", 0, "", 0);
}

bool
journal_add_swap(uint32_t a, uint32_t b)
{
    uint32_t ab[2] = { a, b };
    return add_record(JOURNAL_SWAP, ab, sizeof(ab), "", 0, "", 0);
}

bool
journal_add_elem(uint32_t db, uint8_t type, const char *key, size_t keylen,
                 int64_t expire_at, uint8_t elem_op, const void *elem,
                 size_t elem_len)
{
    unsigned char fixed[4 + 1 + 4 + 8 + 1];
    uint32_t kl = (uint32_t)keylen;
    if (keylen > UINT32_MAX) {
        buf_broken = true;
        return false;
    }
    memcpy(fixed, &db, 4);
    fixed[4] = type;
    memcpy(fixed + 5, &kl, 4);
    memcpy(fixed + 9, &expire_at, 8);
    fixed[17] = elem_op;
    return add_record(JOURNAL_ELEM, fixed, sizeof(fixed), key, keylen, elem,
                      elem_len);
}

bool
journal_add_functions(const void *set, size_t len)
{
    unsigned char *q = record_open(1 + len, set == NULL && len != 0);
    if (q == NULL) {
        return false;
    }
    q[0] = JOURNAL_FUNCTIONS;
    if (len > 0) {
        memcpy(q + 1, set, len);
    }
    record_close(1 + len);
    return true;
}

size_t
journal_pending(void)
{
    return buf_len;
}

size_t
journal_buffer_memory(void)
{
    return buf != NULL ? mem_usable(buf) : 0;
}

/* ---- groups -------------------------------------------------------------- */

void
journal_group_begin(void)
{
    if (group_depth++ == 0) {
        group_start = buf_len;
    }
}

/* How many whole records the bytes from `from` to the end hold. */
static uint32_t
count_records(size_t from)
{
    uint32_t n = 0;
    for (size_t off = from; off < buf_len; n++) {
        uint32_t len;
        memcpy(&len, buf + off, 4);
        off += JOURNAL_HEADER_LEN + len;
    }
    return n;
}

/* The records from group_start on, moved behind a GROUP header: one
 * record, one CRC over all of them. */
static void
wrap_group(void)
{
    enum { HEAD = JOURNAL_HEADER_LEN + 1 + 4 };
    size_t inner = buf_len - group_start;
    uint32_t n = count_records(group_start);
    if (n < 2) {
        return;                 /* one record is all or nothing already */
    }
    if (1 + 4 + inner > JOURNAL_RECORD_MAX) {
        buf_broken = true;      /* the group cannot be kept whole */
        return;
    }
    if (!reserve(HEAD)) {
        return;
    }
    unsigned char *p = buf + group_start;
    memmove(p + HEAD, p, inner);
    uint32_t len = (uint32_t)(1 + 4 + inner);
    p[JOURNAL_HEADER_LEN] = JOURNAL_GROUP;
    memcpy(p + JOURNAL_HEADER_LEN + 1, &n, 4);
    for (size_t i = 0; i < nbounds; i++) {
        if (bounds[i].off >= group_start) {
            bounds[i].off += HEAD;      /* its record moved behind the head */
        }
    }
    uint32_t hdr[3] = { len, ~len,
                        crc32c_update(0, p + JOURNAL_HEADER_LEN, len) };
    memcpy(p, hdr, sizeof(hdr));
    buf_len += HEAD;
}

void
journal_group_end(void)
{
    if (group_depth == 0 || --group_depth > 0) {
        return;
    }
    if (!buf_broken) {
        wrap_group();
    }
    group_start = SIZE_MAX;
}

/* ---- sinks --------------------------------------------------------------- */

void
journal_attach(enum journal_sink which, journal_sink_fn fn)
{
    sinks[which] = fn;
    srv.journal_on = false;
    for (int i = 0; i < JOURNAL_SINKS; i++) {
        srv.journal_on |= sinks[i] != NULL;
    }
    if (!srv.journal_on) {
        /* Nobody takes records: drop what waits, and the memory. */
        mem_free(buf);
        buf = NULL;
        buf_len = buf_cap = 0;
        buf_broken = false;
    }
}

bool
journal_attached(enum journal_sink which)
{
    return sinks[which] != NULL;
}

void
journal_set_sinks(unsigned to)
{
    if (to == current_sinks) {
        return;
    }
    if (nbounds > 0 && bounds[nbounds - 1].off == buf_len) {
        nbounds--;                      /* nothing was added under it */
    }
    if (nbounds == JOURNAL_BOUNDS_MAX) {
        buf_broken = true;              /* the pass cannot be told apart */
    } else {
        bounds[nbounds].off = buf_len;
        bounds[nbounds].sinks = to;
        nbounds++;
    }
    current_sinks = to;
}

/* The sinks the record at off goes to. */
static unsigned
sinks_at(size_t off)
{
    unsigned to = JOURNAL_TO_ALL;
    for (size_t i = 0; i < nbounds && bounds[i].off <= off; i++) {
        to = bounds[i].sinks;
    }
    return to;
}

static size_t
record_end(size_t off)
{
    uint32_t len;
    memcpy(&len, buf + off, 4);
    return off + JOURNAL_HEADER_LEN + len;
}

/* A group's records that go to sink `which`, appended to out: as a group
 * again when they are two or more. */
static bool
filter_group(struct membuf *out, size_t off, enum journal_sink which)
{
    enum { HEAD = JOURNAL_HEADER_LEN + 1 + 4 };
    size_t end = record_end(off), mark = out->len;
    uint32_t n = 0;
    unsigned char head[HEAD] = { 0 };
    if (!membuf_put(out, head, HEAD)) {
        return false;
    }
    for (size_t r = off + HEAD; r < end; r = record_end(r)) {
        if ((sinks_at(r) >> which) & 1) {
            if (!membuf_put(out, buf + r, record_end(r) - r)) {
                return false;
            }
            n++;
        }
    }
    unsigned char *p = out->p + mark;
    if (n < 2) {
        memmove(p, p + HEAD, out->len - mark - HEAD);   /* bare, or none */
        out->len -= HEAD;
        return true;
    }
    uint32_t len = (uint32_t)(out->len - mark - JOURNAL_HEADER_LEN);
    p[JOURNAL_HEADER_LEN] = JOURNAL_GROUP;
    memcpy(p + JOURNAL_HEADER_LEN + 1, &n, 4);
    uint32_t hdr[3] = { len, ~len,
                        crc32c_update(0, p + JOURNAL_HEADER_LEN, len) };
    memcpy(p, hdr, sizeof(hdr));
    return true;
}

/* The pass's records for sink `which` alone, when set_repl narrowed some. */
static void
publish_filtered(enum journal_sink which)
{
    struct membuf out = { 0 };
    bool ok = !buf_broken;
    for (size_t off = 0; ok && off < buf_len; off = record_end(off)) {
        if (buf[off + JOURNAL_HEADER_LEN] == JOURNAL_GROUP) {
            ok = filter_group(&out, off, which);
        } else if ((sinks_at(off) >> which) & 1) {
            ok = membuf_put(&out, buf + off, record_end(off) - off);
        }
    }
    static const unsigned char none[1];
    sinks[which](out.p != NULL ? out.p : none, out.len, ok);
    mem_free(out.p);
}

void
journal_publish(void)
{
    static const unsigned char none[1];
    if (buf_len == 0 && !buf_broken) {
        nbounds = 0;
        return;
    }
    for (int i = 0; i < JOURNAL_SINKS; i++) {
        if (sinks[i] == NULL) {
            continue;
        }
        if (nbounds > 0) {
            publish_filtered((enum journal_sink)i);
        } else {
            sinks[i](buf != NULL ? buf : none, buf_len, !buf_broken);
        }
    }
    buf_len = 0;
    buf_broken = false;
    nbounds = 0;
    if (current_sinks != JOURNAL_TO_ALL) {
        bounds[nbounds].off = 0;        /* a script's narrowing goes on */
        bounds[nbounds].sinks = current_sinks;
        nbounds = 1;
    }
    if (buf_cap > JOURNAL_BUF_KEEP) {
        mem_free(buf);      /* a huge pass (a big key written whole) */
        buf = NULL;         /* keeps no memory after it */
        buf_cap = 0;
    }
}

void
journal_publish_upstream(const void *records, size_t len)
{
    journal_publish();
    if (sinks[JOURNAL_SINK_FILE] != NULL && len > 0) {
        sinks[JOURNAL_SINK_FILE](records, len, true);
    }
}

/* ---- reading ----------------------------------------------------------- */

bool
journal_reader_init(struct journal_reader *r, const unsigned char *b,
                    size_t len)
{
    static const char *const magic[] = { JOURNAL_MAGIC_V1, JOURNAL_MAGIC_V2,
                                         JOURNAL_MAGIC };
    for (int v = 0; len >= JOURNAL_MAGIC_LEN && v < 3; v++) {
        if (memcmp(b, magic[v], JOURNAL_MAGIC_LEN) == 0) {
            *r = (struct journal_reader){ b, len, JOURNAL_MAGIC_LEN, v + 1 };
            return true;
        }
    }
    return false;
}

static bool
all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            return false;
        }
    }
    return true;
}

/* A SET's or ELEM's payload after the op: db, type, key length and
 * expiry, `fixed` bytes in all, then the key and the state. */
static bool
keyed(const unsigned char *p, size_t len, size_t fixed,
      struct journal_record *rec)
{
    uint32_t kl;
    if (len < fixed) {
        return false;
    }
    memcpy(&rec->db, p, 4);
    rec->type = p[4];
    memcpy(&kl, p + 5, 4);
    memcpy(&rec->expire_at, p + 9, 8);
    if (kl > len - fixed) {
        return false;
    }
    rec->key = (const char *)p + fixed;
    rec->keylen = kl;
    rec->state = p + fixed + kl;
    rec->state_len = len - fixed - kl;
    return true;
}

/* The payload's fields; false when they do not add up. */
static bool
parse_payload(const unsigned char *p, size_t len, struct journal_record *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->op = p[0];
    p++;
    len--;
    switch (rec->op) {
    case JOURNAL_SET:
        return keyed(p, len, 17, rec);
    case JOURNAL_DEL:
        if (len < 4) {
            return false;
        }
        memcpy(&rec->db, p, 4);
        rec->key = (const char *)p + 4;
        rec->keylen = len - 4;
        return true;
    case JOURNAL_FLUSH:
        memcpy(&rec->db, p, 4);
        return len == 4;
    case JOURNAL_SWAP:
        if (len != 8) {
            return false;
        }
        memcpy(&rec->db, p, 4);
        memcpy(&rec->db2, p + 4, 4);
        return true;
    case JOURNAL_GROUP:
        if (len < 4) {
            return false;
        }
        memcpy(&rec->count, p, 4);
        rec->state = p + 4;
        rec->state_len = len - 4;
        return true;
    case JOURNAL_ELEM:
        if (!keyed(p, len, 18, rec)) {
            return false;
        }
        rec->elem_op = p[17];
        return true;
    case JOURNAL_FUNCTIONS:
        rec->state = p;
        rec->state_len = len;
        return true;
    default:
        return false;
    }
}

enum journal_read
journal_next(struct journal_reader *r, struct journal_record *rec)
{
    size_t left = r->len - r->off;
    const unsigned char *p = r->buf + r->off;
    uint32_t hdr[3];
    if (left == 0) {
        return JOURNAL_END;
    }
    if (left < JOURNAL_HEADER_LEN) {
        return JOURNAL_TORN;
    }
    memcpy(hdr, p, sizeof(hdr));
    if (hdr[1] != ~hdr[0] || hdr[0] == 0 || hdr[0] > JOURNAL_RECORD_MAX) {
        /* A crash can leave zeros where the file grew: a tail of them is
         * torn; anything else is damage. */
        return all_zero(p, left) ? JOURNAL_TORN : JOURNAL_DAMAGED;
    }
    if (hdr[0] > left - JOURNAL_HEADER_LEN) {
        return JOURNAL_TORN;                 /* runs past the end */
    }
    const unsigned char *payload = p + JOURNAL_HEADER_LEN;
    bool last = hdr[0] == left - JOURNAL_HEADER_LEN;
    if (crc32c_update(0, payload, hdr[0]) != hdr[2] ||
        !parse_payload(payload, hdr[0], rec)) {
        /* The last record, checksum wrong: the write did not finish. */
        return last ? JOURNAL_TORN : JOURNAL_DAMAGED;
    }
    rec->version = r->version;
    if (r->version < 3 &&
        (rec->op == JOURNAL_SET || rec->op == JOURNAL_ELEM)) {
        rec->expire_at = store_expiry_from_ns(rec->expire_at);
    }
    r->off += JOURNAL_HEADER_LEN + hdr[0];
    return JOURNAL_RECORD;
}
