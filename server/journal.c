/*
 * journal.c - see journal.h.
 *
 * One buffer collects the records of a loop iteration; journal_write()
 * hands it to the kernel in as few write() calls as it takes. A write that
 * fails half way is cut back off the file with ftruncate(), as Redis does,
 * so the file always ends on a record boundary while the disk is full, and
 * the same bytes are written again once it is not.
 */
#include "server/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "lib/crc32.h"
#include "lib/mem.h"
#include "server/clock.h"
#include "server/server.h"

static int fd = -1;
static uint64_t file_size;
static unsigned char *buf;
static size_t buf_len, buf_cap;
static bool buf_broken;             /* an add ran out of memory */
static size_t fed_len;              /* bytes of buf given to replication */
static int last_errno;

static uv_fs_t sync_req;
static bool sync_running;
static int64_t sync_started_ns;
static int64_t last_sync_ns;
static uint64_t syncs;
static int sync_error;              /* of the last background fsync */

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
    size_t cap = buf_cap ? buf_cap : 64 * 1024;
    while (cap - buf_len < n) {
        if (cap > SIZE_MAX / 2) {
            buf_broken = true;
            return false;
        }
        cap *= 2;
    }
    unsigned char *p = mem_realloc(buf, cap);
    if (p == NULL) {
        buf_broken = true;
        return false;
    }
    buf = p;
    buf_cap = cap;
    return true;
}

/* A record whose payload is op, `fixed` bytes of fixed fields, then two
 * tails: reserved whole, filled in place, its CRC taken where it lies. */
static bool
add_record(uint8_t op, const void *fixed, size_t fixed_len, const void *a,
           size_t alen, const void *b, size_t blen)
{
    size_t len = 1 + fixed_len + alen + blen;
    if (len > JOURNAL_RECORD_MAX) {
        buf_broken = true;
        return false;
    }
    if (!reserve(JOURNAL_HEADER_LEN + len)) {
        return false;
    }
    unsigned char *p = buf + buf_len;
    unsigned char *payload = p + JOURNAL_HEADER_LEN;
    uint32_t hdr[3] = { (uint32_t)len, ~(uint32_t)len, 0 };
    payload[0] = op;
    memcpy(payload + 1, fixed, fixed_len);
    memcpy(payload + 1 + fixed_len, a, alen);
    memcpy(payload + 1 + fixed_len + alen, b, blen);
    hdr[2] = crc32c_update(0, payload, len);
    memcpy(p, hdr, sizeof(hdr));
    buf_len += JOURNAL_HEADER_LEN + len;
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
    if (keylen > UINT32_MAX || len > JOURNAL_RECORD_MAX) {
        buf_broken = true;
        return false;
    }
    if (!reserve(JOURNAL_HEADER_LEN + len)) {
        return false;
    }
    unsigned char *p = buf + buf_len;
    unsigned char *q = p + JOURNAL_HEADER_LEN;
    uint32_t hdr[3] = { (uint32_t)len, ~(uint32_t)len, 0 };
    q[0] = JOURNAL_SET;
    memcpy(q + 1, &db, 4);
    q[5] = type;
    memcpy(q + 6, &kl, 4);
    memcpy(q + 10, &expire_at, 8);
    memcpy(q + FIXED, key, keylen);
    memcpy(q + FIXED + keylen, state, state_len);
    hdr[2] = crc32c_update(0, q, len);
    memcpy(p, hdr, sizeof(hdr));
    buf_len += JOURNAL_HEADER_LEN + len;
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

size_t
journal_buffered(void)
{
    return buf_len;
}

const unsigned char *
journal_unfed(size_t *len)
{
    static const unsigned char none[1];
    *len = buf_len - fed_len;
    fed_len = buf_len;
    return buf != NULL ? buf + (buf_len - *len) : none;
}

bool
journal_add_raw(const void *records, size_t len)
{
    if (len == 0) {
        return true;
    }
    if (!reserve(len)) {
        return false;
    }
    memcpy(buf + buf_len, records, len);
    buf_len += len;
    fed_len = buf_len;              /* came from a stream: never sent again */
    return true;
}

/* ---- the file ---------------------------------------------------------- */

static void
close_file(void)
{
    if (fd < 0) {
        return;
    }
    if (sync_running) {
        /* The pool thread holds fd: let it finish first. */
        while (sync_running) {
            uv_run(srv.loop, UV_RUN_ONCE);
        }
    }
    (void)fdatasync(fd);
    close(fd);
    fd = -1;
}

/* A file given up for a new one: fdatasync and close on libuv's thread
 * pool, so switching files during a rewrite does not stall the loop on a
 * flush of everything written since the last fsync. */
struct retired_file {
    uv_work_t work;
    int fd;
};

static void
retire_work(uv_work_t *w)
{
    struct retired_file *f = w->data;
    (void)fdatasync(f->fd);
    close(f->fd);
}

static void
retire_done(uv_work_t *w, int status)
{
    (void)status;
    mem_free(w->data);
}

static void
retire_file(void)
{
    if (fd < 0) {
        return;
    }
    struct retired_file *f = srv.loop != NULL && !sync_running
                                 ? mem_malloc(sizeof(*f)) : NULL;
    if (f != NULL) {
        f->fd = fd;
        f->work.data = f;
        if (uv_queue_work(srv.loop, &f->work, retire_work, retire_done) == 0) {
            fd = -1;
            return;
        }
        mem_free(f);
    }
    close_file();
}

int
journal_open(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int f = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0 || fstat(f, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (f >= 0) {
            close(f);
        }
        return -1;
    }
    /* No fsync here: a new file is named only by a manifest written (and
     * its folder fsynced) after this, and a file cut short of its magic
     * loads as empty. */
    if (st.st_size == 0 &&
        write(f, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN) != JOURNAL_MAGIC_LEN) {
        snprintf(err, errlen, "writing %s: %s", path,
                 errno ? strerror(errno) : "short write");
        /* A file left holding part of its magic is refused at the next
         * start with a clear error, never misread: say so if it stays. */
        if (ftruncate(f, 0) != 0) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n, " (and it could not be emptied: "
                     "%s)", strerror(errno));
        }
        close(f);
        return -1;
    }
    retire_file();
    fd = f;
    file_size = st.st_size == 0 ? JOURNAL_MAGIC_LEN : (uint64_t)st.st_size;
    return 0;
}

void
journal_close(void)
{
    close_file();
    mem_free(buf);
    buf = NULL;
    buf_len = buf_cap = fed_len = 0;
    buf_broken = false;
}

bool
journal_is_open(void)
{
    return fd >= 0;
}

int
journal_write(void)
{
    if (fd < 0) {
        buf_len = fed_len = 0;      /* no file: the records were streamed */
        return 0;
    }
    if (buf_broken) {
        last_errno = ENOMEM;
        return -1;
    }
    size_t done = 0;
    while (done < buf_len) {
        ssize_t n = write(fd, buf + done, buf_len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            last_errno = n < 0 ? errno : ENOSPC;
            /* Never leave half a record: cut what this call wrote. If
             * even that fails, the loader will see a torn tail. */
            if (done > 0 && ftruncate(fd, (off_t)file_size) == 0) {
                done = 0;
            }
            if (done > 0) {
                file_size += done;
                memmove(buf, buf + done, buf_len - done);
                buf_len -= done;
                fed_len = fed_len > done ? fed_len - done : 0;
            }
            return -1;
        }
        done += (size_t)n;
    }
    file_size += buf_len;
    buf_len = fed_len = 0;
    last_errno = 0;
    return 0;
}

int
journal_sync(void)
{
    if (fd < 0) {
        return 0;
    }
    int64_t t0 = clock_mono_now();
    if (fdatasync(fd) != 0) {
        last_errno = errno;
        return -1;
    }
    last_sync_ns = clock_mono_now() - t0;
    syncs++;
    return 0;
}

static void
on_sync_done(uv_fs_t *req)
{
    sync_error = req->result < 0 ? (int)-req->result : 0;
    if (req->result < 0) {
        last_errno = sync_error;
    } else {
        last_sync_ns = clock_mono_now() - sync_started_ns;
        syncs++;
    }
    uv_fs_req_cleanup(req);
    sync_running = false;
}

void
journal_sync_background(void)
{
    if (fd < 0 || sync_running) {
        return;
    }
    sync_started_ns = clock_mono_now();
    if (uv_fs_fdatasync(srv.loop, &sync_req, fd, on_sync_done) == 0) {
        sync_running = true;
    } else {
        (void)journal_sync();
    }
}

bool
journal_sync_running(void)
{
    return sync_running;
}

int
journal_background_sync_error(void)
{
    return sync_running ? 0 : sync_error;
}

int
journal_last_errno(void)
{
    return last_errno;
}

int64_t
journal_last_sync_ns(void)
{
    return last_sync_ns;
}

uint64_t
journal_syncs(void)
{
    return syncs;
}

/* ---- reading ----------------------------------------------------------- */

bool
journal_reader_init(struct journal_reader *r, const unsigned char *b,
                    size_t len)
{
    if (len < JOURNAL_MAGIC_LEN ||
        memcmp(b, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN) != 0) {
        return false;
    }
    *r = (struct journal_reader){ b, len, JOURNAL_MAGIC_LEN };
    return true;
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

/* The payload's fields; false when they do not add up. */
static bool
parse_payload(const unsigned char *p, size_t len, struct journal_record *rec)
{
    uint32_t kl;
    memset(rec, 0, sizeof(*rec));
    rec->op = p[0];
    p++;
    len--;
    switch (rec->op) {
    case JOURNAL_SET:
        if (len < 17) {
            return false;
        }
        memcpy(&rec->db, p, 4);
        rec->type = p[4];
        memcpy(&kl, p + 5, 4);
        memcpy(&rec->expire_at, p + 9, 8);
        if (kl > len - 17) {
            return false;
        }
        rec->key = (const char *)p + 17;
        rec->keylen = kl;
        rec->state = p + 17 + kl;
        rec->state_len = len - 17 - kl;
        return true;
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
    r->off += JOURNAL_HEADER_LEN + hdr[0];
    return JOURNAL_RECORD;
}
