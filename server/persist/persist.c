/*
 * persist.c - see persist.h.
 */
#include "server/persist/persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "lib/file.h"
#include "lib/mem.h"
#include "lib/time.h"
#include "server/child.h"
#include "server/clock.h"
#include "server/journal.h"
#include "server/persist/journal_file.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/persist/manifest.h"
#include "server/rdb/load.h"
#include "server/server.h"
#include "server/snapshot.h"

#define PATH_LEN 4200
#define NAME_LEN MANIFEST_NAME_LEN
#define RETRY_MS 1000               /* a failed write is tried again after */

static struct manifest current;     /* what the manifest on disk says */
static struct aof_file writing;     /* the incr file appended to, if any */
static bool enabling;               /* CONFIG SET appendonly yes: waiting
                                     * for the first base */
static uint64_t next_seq = 1;

static uint64_t gen = 1;            /* writes made now go into this one */
static uint64_t safe_gen;           /* every generation up to it is safe */
static uint64_t effects_at_commit;

static bool write_failing;          /* a write (or an always fsync) failed */
static bool sync_failing;           /* the last everysec fsync failed */
static int write_errno;
static int64_t last_retry_ms;
static int64_t last_fsync_ms;
static uint64_t written_since_fsync;

static uint64_t rewrite_seq;
static int64_t rewrite_started_s;
static int64_t last_rewrite_time_sec = -1;
static bool last_rewrite_ok = true;
static uint64_t rewrites, rewrite_failures;
static uint64_t size_after_rewrite;

/* ---- paths and the manifest -------------------------------------------- */

static bool
enabled(void)
{
    return srv.conf.appendonly != 0;
}

static void
dir_path(char *out, size_t len)
{
    snprintf(out, len, "%s/%s", srv.conf.dir, srv.conf.appenddirname);
}

static void
file_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s/%s", srv.conf.dir, srv.conf.appenddirname, name);
}

static void
file_name(char *out, size_t len, uint64_t seq, char type)
{
    snprintf(out, len, "%s.%llu.%s", srv.conf.appendfilename,
             (unsigned long long)seq, type == 'b' ? "base.snap"
                                                  : "incr.journal");
}

static void
manifest_path(char *out, size_t len)
{
    char name[NAME_LEN];
    snprintf(name, sizeof(name), "%s.manifest", srv.conf.appendfilename);
    file_path(out, len, name);
}

static uint64_t
file_bytes(const char *name)
{
    char path[PATH_LEN];
    struct stat st;
    file_path(path, sizeof(path), name);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static uint64_t
manifest_bytes(const struct manifest *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        n += file_bytes(m->f[i].name);
    }
    return n;
}

/* 1: read into m; 0: there is none; -1: unreadable or malformed. */
static int
manifest_read(struct manifest *m, char *err, size_t errlen)
{
    char path[PATH_LEN], line[MANIFEST_LINE_LEN];
    manifest_path(path, sizeof(path));
    FILE *f = fopen(path, "r");
    memset(m, 0, sizeof(*m));
    if (f == NULL) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t lineno = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        int rc = manifest_add_line(m, line);
        if (rc < 0) {
            snprintf(err, errlen, "%s: line %zu is not a manifest entry",
                     path, lineno);
            fclose(f);
            return -1;
        }
        if (rc > 0 && m->f[m->n - 1].seq >= next_seq) {
            next_seq = m->f[m->n - 1].seq + 1;
        }
    }
    fclose(f);
    return 1;
}

/* Replace the manifest atomically: temporary file, fsync, rename, fsync
 * of the folder. */
static int
manifest_write(const struct manifest *m, char *err, size_t errlen)
{
    char path[PATH_LEN], tmp[PATH_LEN + 16], dir[PATH_LEN];
    char entry[MANIFEST_LINE_LEN];
    manifest_path(path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    bool ok = f != NULL;
    for (size_t i = 0; ok && i < m->n; i++) {
        ok = manifest_format_line(&m->f[i], entry, sizeof(entry)) > 0 &&
             fputs(entry, f) >= 0;
    }
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f != NULL && fclose(f) != 0) {
        ok = false;
    }
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    dir_path(dir, sizeof(dir));
    file_sync_dir(dir);
    return 0;
}

static bool
listed(const struct manifest *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->f[i].name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* Names this file gives (anything else in the folder is left alone). */
static bool
ours(const char *name)
{
    size_t n = strlen(name);
    return (n > 10 && strcmp(name + n - 10, ".base.snap") == 0) ||
           (n > 13 && strcmp(name + n - 13, ".incr.journal") == 0) ||
           strstr(name, ".base.snap.tmp-") != NULL ||
           (n > 13 && strcmp(name + n - 13, ".manifest.tmp") == 0);
}

static void
unlinked(uv_fs_t *req)
{
    if (req->result == 0) {
        log_notice("Removed %s (no longer in the manifest)", req->path);
    }
    uv_fs_req_cleanup(req);
    mem_free(req);
}

/* Unlinking a large file can take the file system many milliseconds: off
 * the loop once it runs. */
static void
remove_file(const char *path, bool in_background)
{
    uv_fs_t *req = in_background ? mem_malloc(sizeof(*req)) : NULL;
    if (req != NULL &&
        uv_fs_unlink(srv.loop, req, path, unlinked) == 0) {
        return;
    }
    mem_free(req);
    if (unlink(path) == 0) {
        log_notice("Removed %s (no longer in the manifest)", path);
    }
}

/* Remove our files the manifest no longer names: history of a finished
 * rewrite, the base of one that died, temporary files; in the background
 * while the loop serves clients, at once at start-up and exit. */
static void
remove_unlisted(const struct manifest *m, bool in_background)
{
    char dir[PATH_LEN], path[PATH_LEN], mname[NAME_LEN];
    size_t plen = strlen(srv.conf.appendfilename);
    dir_path(dir, sizeof(dir));
    snprintf(mname, sizeof(mname), "%s.manifest", srv.conf.appendfilename);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, srv.conf.appendfilename, plen) != 0 ||
            e->d_name[plen] != '.' || strcmp(e->d_name, mname) == 0 ||
            !ours(e->d_name) || listed(m, e->d_name)) {
            continue;
        }
        file_path(path, sizeof(path), e->d_name);
        remove_file(path, in_background);
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* ---- loading ----------------------------------------------------------- */

static const struct aof_file *
last_incr(const struct manifest *m)
{
    return m->n > 0 && m->f[m->n - 1].type == 'i' ? &m->f[m->n - 1] : NULL;
}

/* A torn tail: cut it off (aof-load-truncated yes) or refuse. */
static int
torn_tail(const char *path, size_t off, size_t len, bool last, char *err,
          size_t errlen)
{
    if (!last || !srv.conf.aof_load_truncated) {
        snprintf(err, errlen, "%s: the journal ends in the middle of a "
                 "record at offset %zu%s", path, off,
                 last ? " (aof-load-truncated yes would cut it off)" : "");
        return -1;
    }
    log_warning("!!! Warning: short read while loading the journal %s !!!",
                path);
    if (truncate(path, (off_t)off) != 0) {
        snprintf(err, errlen, "%s: cannot cut off the torn tail: %s", path,
                 strerror(errno));
        return -1;
    }
    log_warning("Journal %s loaded anyway because aof-load-truncated is "
                "enabled: the last %zu bytes (a record that was being "
                "written) were cut off", path, len - off);
    return 0;
}

static int
load_incr(const char *name, bool last, int64_t now, uint64_t *records,
          char *err, size_t errlen)
{
    char path[PATH_LEN];
    size_t len = 0;
    file_path(path, sizeof(path), name);
    unsigned char *buf = file_read_all(path, &len);
    if (buf == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct journal_reader rd;
    struct journal_record rec;
    int rc = 0;
    if (!journal_reader_init(&rd, buf, len)) {
        /* Shorter than its magic: created, then the machine died. */
        if (len < JOURNAL_MAGIC_LEN && last &&
            memcmp(buf, JOURNAL_MAGIC, len) == 0) {
            free(buf);
            return truncate(path, 0) == 0 ? 0 : -1;
        }
        snprintf(err, errlen, "%s: not a cellgate journal", path);
        free(buf);
        return -1;
    }
    for (;;) {
        enum journal_read r = journal_next(&rd, &rec);
        if (r == JOURNAL_RECORD) {
            char why[256];
            (*records)++;
            if (keyspace_apply_record(&rec, now, why, sizeof(why)) < 0) {
                snprintf(err, errlen, "%s: record at offset %zu: %s", path,
                         rd.off, why);
                rc = -1;
                break;
            }
            continue;
        }
        if (r == JOURNAL_TORN) {
            rc = torn_tail(path, rd.off, len, last, err, errlen);
        } else if (r == JOURNAL_DAMAGED) {
            snprintf(err, errlen, "%s: damaged record at offset %zu (the "
                     "file is corrupt)", path, rd.off);
            rc = -1;
        }
        break;
    }
    free(buf);
    return rc;
}

static bool load_failed;            /* persist_load() gave up on the files */

static int
load_manifest_files(const struct manifest *m, char *err, size_t errlen)
{
    char path[PATH_LEN];
    int64_t now = clock_wall_now();
    uint64_t records = 0;
    for (size_t i = 0; i < m->n; i++) {
        const struct aof_file *f = &m->f[i];
        int rc;
        if (f->type == 'b') {
            file_path(path, sizeof(path), f->name);
            rc = snapshot_load_file(path, err, errlen);
            if (rc == 1) {
                snprintf(err, errlen, "%s is in the manifest but missing",
                         path);
                rc = -1;
            }
        } else {
            rc = load_incr(f->name, i + 1 == m->n, now, &records, err,
                           errlen);
        }
        if (rc < 0) {
            keyspace_flush(-1);
            load_failed = true;
            return -1;
        }
    }
    log_notice("Loaded %zu keys from the journal in %s/%s (%llu records "
               "after the base)", keyspace_total_keys(), srv.conf.dir,
               srv.conf.appenddirname, (unsigned long long)records);
    return 0;
}

/* The snapshot file, cellgate's own or Redis's RDB (a file that starts
 * with "REDIS": a Redis's dump.rdb under --dir and --dbfilename). The
 * snapshots written after are cellgate's own. */
static int
load_snapshot_file(char *err, size_t errlen)
{
    char path[PATH_LEN];
    snprintf(path, sizeof(path), "%s/%s", srv.conf.dir, srv.conf.dbfilename);
    if (!rdb_is_rdb_file(path)) {
        return snapshot_load(err, errlen);
    }
    log_notice("%s is a Redis RDB file: loading it (the snapshots written "
               "from now on are cellgate's own)", path);
    if (rdb_load_file(path, err, errlen) < 0) {
        return -1;
    }
    log_notice("Loaded %zu keys from the Redis RDB file %s",
               keyspace_total_keys(), path);
    return 0;
}

int
persist_load(char *err, size_t errlen)
{
    if (!enabled()) {
        return load_snapshot_file(err, errlen);
    }
    int rc = manifest_read(&current, err, errlen);
    if (rc < 0) {
        return -1;
    }
    if (rc == 1 && last_incr(&current) == NULL) {
        /* A base alone is what BGREWRITEAOF leaves with the journal off:
         * an old copy, not a journal. The snapshot is newer. */
        log_notice("The journal's manifest lists no incr file: loading the "
                   "snapshot instead and starting a new journal");
        memset(&current, 0, sizeof(current));
        rc = 0;
    }
    if (rc == 0) {
        /* Turning the journal on keeps what the snapshot holds. */
        return load_snapshot_file(err, errlen);
    }
    return load_manifest_files(&current, err, errlen);
}

/* ---- opening ----------------------------------------------------------- */

/* The journal's sink (server/journal.h): each pass's records into the
 * file's buffer; persist_before_replies() writes them. */
static void
take_records(const unsigned char *records, size_t len, bool complete)
{
    (void)journal_file_append(records, len, complete);
}

static int
open_incr(const char *name, char *err, size_t errlen)
{
    char path[PATH_LEN];
    file_path(path, sizeof(path), name);
    return journal_file_open(path, err, errlen);
}

/* A base of the keyspace as it is now, written in this process. */
static int
write_base_now(const char *name, char *err, size_t errlen)
{
    char path[PATH_LEN];
    file_path(path, sizeof(path), name);
    return snapshot_write(path, err, errlen);
}

/* The first start with the journal on (or a manifest with no incr file):
 * base of what was loaded, an empty incr file, the manifest naming both. */
static int
create_files(char *err, size_t errlen)
{
    struct manifest m = { .n = 2 };
    uint64_t seq = next_seq++;
    file_name(m.f[0].name, NAME_LEN, seq, 'b');
    file_name(m.f[1].name, NAME_LEN, seq, 'i');
    m.f[0].seq = m.f[1].seq = seq;
    m.f[0].type = 'b';
    m.f[1].type = 'i';
    char path[PATH_LEN];
    file_path(path, sizeof(path), m.f[1].name);
    unlink(path);                   /* a leftover no manifest named */
    if (write_base_now(m.f[0].name, err, errlen) < 0 ||
        open_incr(m.f[1].name, err, errlen) < 0 ||
        manifest_write(&m, err, errlen) < 0) {
        return -1;
    }
    current = m;
    writing = m.f[1];
    log_notice("Created the journal's base %s and incr file %s",
               m.f[0].name, m.f[1].name);
    return 0;
}

/* Starting empty after files that would not load (snapshot-load-errors
 * start-empty): they move to a folder of their own, kept for inspection,
 * and a new journal starts. */
static int
set_aside_damaged(char *err, size_t errlen)
{
    char dir[PATH_LEN], aside[PATH_LEN + 64], from[PATH_LEN], to[PATH_LEN * 2];
    char mname[NAME_LEN];
    dir_path(dir, sizeof(dir));
    snprintf(aside, sizeof(aside), "%s/damaged-%lld", dir,
             (long long)(clock_wall_us() / US_PER_SEC));
    if (mkdir(aside, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", aside, strerror(errno));
        return -1;
    }
    snprintf(mname, sizeof(mname), "%s.manifest", srv.conf.appendfilename);
    for (size_t i = 0; i <= current.n; i++) {
        const char *name = i < current.n ? current.f[i].name : mname;
        file_path(from, sizeof(from), name);
        snprintf(to, sizeof(to), "%s/%s", aside, name);
        if (rename(from, to) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "moving %s aside: %s", from, strerror(errno));
            return -1;
        }
    }
    log_warning("The journal that could not be loaded was moved to %s",
                aside);
    memset(&current, 0, sizeof(current));
    return 0;
}

int
persist_open(char *err, size_t errlen)
{
    char dir[PATH_LEN];
    if (!enabled()) {
        return 0;
    }
    dir_path(dir, sizeof(dir));
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (load_failed && set_aside_damaged(err, errlen) < 0) {
        return -1;
    }
    load_failed = false;
    const struct aof_file *incr = last_incr(&current);
    int rc = incr != NULL ? open_incr(incr->name, err, errlen)
                          : create_files(err, errlen);
    if (rc < 0) {
        return -1;
    }
    if (incr != NULL) {
        writing = *incr;
    }
    remove_unlisted(&current, false);
    size_after_rewrite = manifest_bytes(&current);
    effects_at_commit = srv.journal_effects;
    last_fsync_ms = clock_mono_ms();
    journal_attach(JOURNAL_SINK_FILE, take_records);
    return 0;
}

/* ---- writing ----------------------------------------------------------- */

static bool
fsync_always(void)
{
    return srv.conf.appendfsync == APPENDFSYNC_ALWAYS;
}

static bool
fsync_everysec(void)
{
    return srv.conf.appendfsync == APPENDFSYNC_EVERYSEC;
}

/* After write_failing or sync_failing changed. */
static void
update_refusing(void)
{
    srv.persist_refusing = write_failing || sync_failing;
}

static void
note_failure(void)
{
    int e = journal_file_errno();
    if (!write_failing || e != write_errno) {
        log_warning("Error writing to the journal: %s (writes answer "
                    "-MISCONF until it works again)", strerror(e));
    }
    write_failing = true;
    write_errno = e;
    update_refusing();
}

/* Everything the keyspace has not published yet published (to the
 * replicas too, side by side), and what this file was handed written (and
 * fsynced under always). On success every generation so far is safe. */
static bool
commit(void)
{
    keyspace_publish();
    size_t bytes = journal_file_buffered();
    bool ok = journal_file_write() == 0;
    if (ok) {
        written_since_fsync += bytes;
        if (fsync_always() && (bytes > 0 || write_failing)) {
            ok = journal_file_sync() == 0;
            written_since_fsync = 0;
        }
    }
    if (!ok) {
        note_failure();
        return false;
    }
    if (write_failing) {
        log_warning("Journal write error looks solved: writes are accepted "
                    "again");
        write_failing = false;
        write_errno = 0;
        update_refusing();
    }
    safe_gen = gen;
    gen++;
    effects_at_commit = srv.journal_effects;
    return true;
}

void
persist_before_replies(void)
{
    if (!journal_file_is_open()) {
        safe_gen = gen;
        return;
    }
    if (srv.journal_effects == effects_at_commit &&
        journal_file_buffered() == 0) {
        return;
    }
    if (write_failing) {
        return;                     /* the cron retries, once a second */
    }
    (void)commit();
}

uint64_t
persist_generation(void)
{
    return gen;
}

uint64_t
persist_safe(void)
{
    return safe_gen;
}


int
persist_errno(void)
{
    return write_errno;
}

/* ---- rewriting --------------------------------------------------------- */

static void stop_journal(void);

/* The rewrite succeeded: the manifest names the new base and the incr
 * file written since it forked. */
static bool
adopt_new_base(void)
{
    char err[512];
    struct manifest m = { .n = 1 };
    file_name(m.f[0].name, NAME_LEN, rewrite_seq, 'b');
    m.f[0].seq = rewrite_seq;
    m.f[0].type = 'b';
    if (journal_file_is_open()) {
        m.f[m.n++] = writing;
    }
    if (manifest_write(&m, err, sizeof(err)) < 0) {
        log_warning("Journal rewrite: %s", err);
        return false;
    }
    current = m;
    remove_unlisted(&current, true);
    size_after_rewrite = manifest_bytes(&current);
    return true;
}

/* CONFIG SET appendonly yes waited for this rewrite: the journal is on,
 * or, when it failed, off again. */
static void
finish_enabling(bool ok)
{
    enabling = false;
    if (ok) {
        log_notice("The journal is on: its first base is written");
    } else {
        log_warning("Turning the journal on failed: it stays off");
        stop_journal();
        srv.conf.appendonly = 0;
    }
}

static void
log_rewrite_end(const struct child_exit *how)
{
    if (how->ok) {
        log_notice("Background AOF rewrite terminated with success");
    } else if (how->signal != 0) {
        log_warning("Background AOF rewrite terminated by signal %d",
                    how->signal);
    } else {
        log_warning("Background AOF rewrite terminated with error");
    }
}

static void
rewrite_done(const struct child_exit *how)
{
    if (how->killed) {
        /* The server stopped it (shutdown, CONFIG SET appendonly): no
         * failed rewrite; its base goes, and so does a pending enable. */
        enabling = false;
        remove_unlisted(&current, false);
        return;
    }
    log_rewrite_end(how);
    last_rewrite_time_sec = how->seconds;
    bool ok = how->ok && adopt_new_base();
    if (enabling) {
        finish_enabling(ok);
    }
    last_rewrite_ok = ok;
    rewrites += ok;
    rewrite_failures = ok ? 0 : rewrite_failures + 1;
    if (ok) {
        log_notice("Background AOF rewrite finished successfully");
    } else {
        remove_unlisted(&current, true);    /* the dead child's base */
    }
}

/* Switch writes to a new incr file listed after the old ones. */
static int
start_new_incr(uint64_t seq, char *err, size_t errlen)
{
    struct manifest m = current;
    if (m.n >= MANIFEST_MAX) {
        snprintf(err, errlen, "the manifest lists %zu files already", m.n);
        return -1;
    }
    /* Written (and under always fsynced); the old file's fsync under
     * everysec runs off the loop as the file is given up. */
    if (!commit()) {
        snprintf(err, errlen, "writing the journal: %s",
                 strerror(journal_file_errno()));
        return -1;
    }
    struct aof_file *f = &m.f[m.n++];
    file_name(f->name, NAME_LEN, seq, 'i');
    f->seq = seq;
    f->type = 'i';
    const struct aof_file *old = last_incr(&current);
    if (open_incr(f->name, err, errlen) < 0) {
        return -1;
    }
    if (manifest_write(&m, err, errlen) < 0) {
        char ignored[256];
        (void)open_incr(old->name, ignored, sizeof(ignored));
        return -1;
    }
    current = m;
    writing = *f;
    return 0;
}

/* In the child: base number rewrite_seq. */
static int
rewrite_work(void)
{
    char name[NAME_LEN], err[512];
    file_name(name, sizeof(name), rewrite_seq, 'b');
    return write_base_now(name, err, sizeof(err));
}

/* Fork the child that writes base number seq. */
static int
fork_rewrite(const struct child_ops *ops, uint64_t seq, char *err,
             size_t errlen)
{
    rewrite_seq = seq;
    pid_t pid = child_fork(ops, err, errlen);
    if (pid < 0) {
        log_warning("Can't rewrite append only file in background: %s", err);
        return -1;
    }
    rewrite_started_s = clock_wall_us() / US_PER_SEC;
    log_notice("Background append only file rewriting started by pid %d",
               (int)pid);
    return 0;
}

/* child.h's start(): now, or when a scheduled rewrite's turn came. A
 * journal being turned on gets the base of the incr file it opened;
 * otherwise writes move to a new incr file first, so the base the child
 * writes and that file hold every write between them. */
static int
rewrite_start(const struct child_ops *self, char *err, size_t errlen)
{
    if (enabling) {
        return fork_rewrite(self, writing.seq, err, errlen);
    }
    char dir[PATH_LEN];
    dir_path(dir, sizeof(dir));
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    uint64_t seq = next_seq++;
    if (journal_file_is_open() && start_new_incr(seq, err, errlen) < 0) {
        return -1;
    }
    return fork_rewrite(self, seq, err, errlen);
}

/* The journal's child (child.h): it writes base number rewrite_seq. */
static const struct child_ops rewrite_ops = {
    .kind = CHILD_REWRITE,
    .work = rewrite_work,           /* in the child; the rest in the parent */
    .start = rewrite_start, .done = rewrite_done,
};

int
persist_rewrite(unsigned how, char *err, size_t errlen)
{
    switch (child_request(&rewrite_ops, how, err, errlen)) {
    case CHILD_STARTED:
        return 0;
    case CHILD_SCHEDULED:
        /* As Redis: a rewrite asked for starts afresh, whatever failed
         * before. */
        rewrite_failures = 0;
        return 1;
    case CHILD_SAME_RUNS:
        snprintf(err, errlen, "Background append only file rewriting "
                 "already in progress");
        return -1;
    case CHILD_OTHER_RUNS:
        snprintf(err, errlen, "another background child runs");
        return -1;
    default:
        return -1;                  /* err says why */
    }
}

static bool
rewrite_due(void)
{
    uint64_t size = manifest_bytes(&current) + journal_file_buffered();
    uint64_t base = size_after_rewrite ? size_after_rewrite : 1;
    return journal_file_is_open() && !child_running(CHILD_NONE) &&
           srv.conf.auto_aof_rewrite_percentage > 0 &&
           size >= (uint64_t)srv.conf.auto_aof_rewrite_min_size &&
           size > base &&
           (size - base) / base * 100 + (size - base) % base * 100 / base >=
               (uint64_t)srv.conf.auto_aof_rewrite_percentage;
}

/* ---- cron and exit ----------------------------------------------------- */

/* An everysec fsync that failed refuses writes as a failed write does,
 * until one works again (the cron tries every second). */
static void
watch_background_sync(void)
{
    int e = journal_file_sync_error();
    if (journal_file_sync_running() || (e != 0) == sync_failing) {
        return;
    }
    sync_failing = e != 0;
    update_refusing();
    if (sync_failing) {
        write_errno = e;
        log_warning("Error syncing the journal: %s (writes answer -MISCONF "
                    "until an fsync works again)", strerror(e));
    } else {
        log_warning("Journal fsync error looks solved: writes are accepted "
                    "again");
    }
}

void
persist_cron(void)
{
    int64_t now_ms = clock_mono_ms();
    if (!journal_file_is_open()) {
        return;
    }
    if (write_failing && now_ms - last_retry_ms >= RETRY_MS) {
        last_retry_ms = now_ms;
        (void)commit();
    }
    watch_background_sync();
    if (fsync_everysec() && (written_since_fsync > 0 || sync_failing) &&
        now_ms - last_fsync_ms >= MS_PER_SEC && !journal_file_sync_running()) {
        journal_file_sync_background();
        written_since_fsync = 0;
        last_fsync_ms = now_ms;
    }
    if (rewrite_due()) {
        char err[512];
        log_notice("Starting automatic rewriting of the journal: it grew "
                   "%llu%% past its size after the last rewrite",
                   (unsigned long long)srv.conf.auto_aof_rewrite_percentage);
        if (persist_rewrite(0, err, sizeof(err)) < 0) {
            log_warning("Automatic journal rewrite: %s", err);
        }
    }
}

/* Everything written and fsynced, the file closed, writes no longer
 * journaled. */
static void
stop_journal(void)
{
    if (!journal_file_is_open()) {
        return;
    }
    if (!commit()) {
        log_warning("Writing the journal before closing it failed: %s",
                    strerror(journal_file_errno()));
    }
    journal_attach(JOURNAL_SINK_FILE, NULL);
    journal_file_close();
    memset(&writing, 0, sizeof(writing));
    write_failing = sync_failing = false;
    update_refusing();
    safe_gen = gen;
    log_notice("Journal flushed and closed");
}

/* A rewrite running or scheduled is given up: killed (its done() removes
 * its base), or forgotten, as Redis does when the AOF is turned off. */
static void
stop_rewrite(void)
{
    if (child_running(CHILD_REWRITE)) {
        log_notice("Killing running AOF rewrite child: %d", (int)child_pid());
        child_kill();
    }
    child_unschedule(CHILD_REWRITE);
    enabling = false;
}

void
persist_close(void)
{
    stop_rewrite();
    stop_journal();
    memset(&current, 0, sizeof(current));
}

/* CONFIG SET appendonly yes, as Redis: writes are journaled into a new
 * incr file at once, and a forked child writes the base; the manifest
 * names the two once the child succeeded. Until then a crash falls back
 * to the snapshot (an older manifest is removed first, so it cannot be
 * mistaken for the state). */
static int
start_journal(char *err, size_t errlen)
{
    char dir[PATH_LEN], path[PATH_LEN], name[NAME_LEN];
    dir_path(dir, sizeof(dir));
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (manifest_read(&current, err, errlen) < 0) {
        return -1;
    }
    manifest_path(path, sizeof(path));
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "removing %s: %s", path, strerror(errno));
        return -1;
    }
    memset(&current, 0, sizeof(current));
    uint64_t seq = next_seq++;
    file_name(name, sizeof(name), seq, 'i');
    if (open_incr(name, err, errlen) < 0) {
        return -1;
    }
    snprintf(writing.name, sizeof(writing.name), "%s", name);
    writing.seq = seq;
    writing.type = 'i';
    effects_at_commit = srv.journal_effects;
    journal_attach(JOURNAL_SINK_FILE, take_records);
    enabling = true;
    switch (child_request(&rewrite_ops, CHILD_MAY_WAIT, err, errlen)) {
    case CHILD_STARTED:
        return 0;
    case CHILD_SCHEDULED:
        log_warning("AOF was enabled but there is already another "
                    "background operation. An AOF background was scheduled "
                    "to start when possible.");
        return 0;
    default:
        enabling = false;
        stop_journal();
        return -1;
    }
}

int
persist_apply_config(char *err, size_t errlen)
{
    /* The file, not srv.journal_on: a primary with replicas makes records
     * of every write with no journal open. */
    if (srv.conf.appendonly && !journal_file_is_open()) {
        if (child_running(CHILD_REWRITE)) {
            /* A BGREWRITEAOF of the journal off: its base misses the
             * writes the new incr file is about to get. */
            log_warning("AOF was enabled but there is already an AOF "
                        "rewriting in background. Stopping background AOF "
                        "and starting a rewrite now.");
        }
        stop_rewrite();
        return start_journal(err, errlen);
    }
    if (!srv.conf.appendonly && journal_file_is_open()) {
        stop_rewrite();
        stop_journal();
    }
    return 0;
}

size_t
persist_buffer_memory(void)
{
    if (!journal_file_is_open()) {
        return 0;
    }
    return journal_file_buffer_memory();
}

void
persist_info(struct persist_info *out)
{
    memset(out, 0, sizeof(*out));
    out->enabled = journal_file_is_open();
    out->rewrite_in_progress = child_running(CHILD_REWRITE);
    out->rewrite_scheduled = child_scheduled(CHILD_REWRITE);
    out->last_rewrite_time_sec = last_rewrite_time_sec;
    out->current_rewrite_time_sec =
        out->rewrite_in_progress ? clock_wall_us() / US_PER_SEC - rewrite_started_s
                          : -1;
    out->last_rewrite_ok = last_rewrite_ok;
    out->rewrites = rewrites;
    out->rewrites_consecutive_failures = rewrite_failures;
    out->last_write_ok = !write_failing && !sync_failing;
    out->current_size = journal_file_is_open() ? manifest_bytes(&current) : 0;
    out->base_size = size_after_rewrite;
    out->buffer_length = journal_file_buffered();
    out->fsync_in_progress = journal_file_sync_running();
    out->fsyncs = journal_file_syncs();
    out->last_fsync_us = journal_file_last_sync_ns() / NS_PER_US;
}
