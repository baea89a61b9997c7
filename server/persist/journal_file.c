/*
 * journal_file.c - the journal file: appending the records it is handed,
 * fsync (at once or on libuv's thread pool), and switching files (see
 * journal_file.h).
 *
 * The records of each loop pass are copied into this file's own buffer, so
 * they stay there while a write fails (a full disk) without holding up
 * the replicas, which were handed the same pass side by side. A write that
 * fails half way is cut back off the file with ftruncate(), as Redis does,
 * so the file always ends on a record boundary while the disk is full, and
 * the same bytes are written again once it is not.
 */
#include "server/persist/journal_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "lib/mem.h"
#include "server/clock.h"
#include "server/journal.h"
#include "server/server.h"

static int fd = -1;
static uint64_t file_size;
static unsigned char *buf;
static size_t buf_len, buf_cap;
/* A buffer grown past this is given back once written. */
#define BUF_KEEP ((size_t)1 << 20)
static bool buf_broken;             /* records were lost before the buffer */
static int last_errno;

static uv_fs_t sync_req;
static bool sync_running;
static int64_t sync_started_ns;
static int64_t last_sync_ns;
static uint64_t syncs;
static int sync_error;              /* of the last background fsync */

/* ---- the buffer -------------------------------------------------------- */

bool
journal_file_append(const unsigned char *records, size_t len, bool complete)
{
    if (!complete) {
        buf_broken = true;
    }
    if (buf_broken) {
        return false;
    }
    if (!mem_reserve(&buf, &buf_cap, buf_len, len, 64 * 1024)) {
        buf_broken = true;
        return false;
    }
    memcpy(buf + buf_len, records, len);
    buf_len += len;
    return true;
}

size_t
journal_file_buffered(void)
{
    return buf_len;
}

size_t
journal_file_buffer_memory(void)
{
    return buf != NULL ? mem_usable(buf) : 0;
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
journal_file_open(const char *path, char *err, size_t errlen)
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
journal_file_close(void)
{
    close_file();
    mem_free(buf);
    buf = NULL;
    buf_len = buf_cap = 0;
    buf_broken = false;
}

bool
journal_file_is_open(void)
{
    return fd >= 0;
}

int
journal_file_write(void)
{
    if (fd < 0) {
        buf_len = 0;
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
            }
            return -1;
        }
        done += (size_t)n;
    }
    file_size += buf_len;
    buf_len = 0;
    last_errno = 0;
    if (buf_cap > BUF_KEEP) {
        mem_free(buf);      /* written: a huge batch keeps no memory */
        buf = NULL;
        buf_cap = 0;
    }
    return 0;
}

int
journal_file_sync(void)
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
journal_file_sync_background(void)
{
    if (fd < 0 || sync_running) {
        return;
    }
    sync_started_ns = clock_mono_now();
    if (uv_fs_fdatasync(srv.loop, &sync_req, fd, on_sync_done) == 0) {
        sync_running = true;
    } else {
        (void)journal_file_sync();
    }
}

bool
journal_file_sync_running(void)
{
    return sync_running;
}

int
journal_file_sync_error(void)
{
    return sync_running ? 0 : sync_error;
}

int
journal_file_errno(void)
{
    return last_errno;
}

int64_t
journal_file_last_sync_ns(void)
{
    return last_sync_ns;
}

uint64_t
journal_file_syncs(void)
{
    return syncs;
}

