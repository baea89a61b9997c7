/*
 * snapshot.c - see snapshot.h.
 */
#include "server/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/crc32.h"
#include "lib/file.h"
#include "lib/mem.h"
#include "lib/time.h"
#include "server/child.h"
#include "server/clock.h"
#include "server/funcset.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/server.h"

#define MAGIC "CGSNAP01"
/* File versions: 1 and 2 hold database 0 in the state encoding of the same
 * number; 3 adds database markers, states in KS_ENCODING; 4 (written)
 * moves the record count to a trailer and checks with CRC-32C, so a file
 * is written in one pass, checksummed as it goes, never read back; 5
 * (written) keeps expiry as the ms a key lives through (store.h) and
 * states in KS_ENCODING 3; before, the ns it was dead from, encoding 2;
 * 6 (written) may hold FUNCTION's libraries (MARK_FUNCTIONS). */
#define VERSION_FIRST 1u
#define VERSION_DBS 3u
#define VERSION_TRAILER 4u
#define VERSION_EXPIRY_MS 5u
#define VERSION_FUNCTIONS 6u
#define VERSION VERSION_FUNCTIONS
/* The type byte of a database marker: the records after it, up to the
 * next marker, belong to database u32 db (database 0 before any). */
#define MARK_DB 0
_Static_assert(KEY_TYPE_FIRST > MARK_DB, "a marker is no key type");
/* The type byte of FUNCTION's libraries, before the first database's
 * marker when there are any: u32 len, then the set's bytes (funcset.h).
 * Redis's RDB opcode for a library, from the top of the byte's range,
 * where no key type will reach. Not counted as a record. */
#define MARK_FUNCTIONS 0xF5
#define KEY_MAX_LOAD (512u << 20)
/* The largest state a running server can hold: a full log of META. */
#define STATE_MAX_LOAD                                                        \
    (12 + (uint64_t)KS_LOG_ENTRIES_MAX *                                      \
              (2 * sizeof(int64_t) + sizeof(uint32_t) + KS_META_MAX))
_Static_assert(STATE_MAX_LOAD <= UINT32_MAX, "state_len is 32-bit");

static int64_t last_save_s;
static int64_t last_attempt_s;
static bool last_ok = true;
static uint64_t changes_at_save;
static uint64_t changes_at_fork;

/* ---- paths ------------------------------------------------------------- */

static void
snap_path(char *out, size_t len, const char *suffix)
{
    snprintf(out, len, "%s/%s%s", srv.conf.dir, srv.conf.dbfilename, suffix);
}

/* ---- writing ------------------------------------------------------------ */

struct writer {
    FILE *f;
    uint64_t records;
    int64_t now;
    uint32_t crc;               /* CRC-32C of every byte so far */
    bool failed;
    struct membuf scratch;
};

static void
w_put(struct writer *w, const void *p, size_t n)
{
    if (!w->failed && n > 0) {
        w->failed = fwrite(p, 1, n, w->f) != n;
        w->crc = crc32c_update(w->crc, p, n);
    }
}

/* A record's fixed fields go out in one piece: type, keylen, expire_at,
 * state_len. */
#define RECORD_HEAD (1 + 4 + 8 + 4)

static void
write_record(struct store_rec *r, void *arg)
{
    struct writer *w = arg;
    unsigned char head[RECORD_HEAD];
    uint32_t keylen = (uint32_t)store_rec_keylen(r);
    if (store_rec_dead(r, w->now) || w->failed) {
        return;                         /* fresh already: nothing to keep */
    }
    w->scratch.len = 0;
    if (!keytype_encode(r, w->now, &w->scratch)) {
        w->failed = true;
        return;
    }
    uint32_t state_len = (uint32_t)w->scratch.len;
    head[0] = r->type;
    memcpy(head + 1, &keylen, 4);
    memcpy(head + 5, &r->expire_at, 8);
    memcpy(head + 13, &state_len, 4);
    w_put(w, head, sizeof(head));
    w_put(w, store_rec_key(r), keylen);
    w_put(w, w->scratch.p, state_len);
    w->records++;
    child_report_progress(w->records);
    if (srv.conf.rdb_key_save_delay > 0) {
        usleep((useconds_t)srv.conf.rdb_key_save_delay);
    }
}

/* Database i's live records after its marker (nothing when empty). */
static void
write_db(struct writer *w, size_t i)
{
    uint8_t mark = MARK_DB;
    uint32_t db = (uint32_t)i;
    uint64_t cursor = 0;
    if (srv.dbs[i] == NULL || store_size(srv.dbs[i]) == 0) {
        return;
    }
    w_put(w, &mark, sizeof(mark));
    w_put(w, &db, sizeof(db));
    do {
        cursor = store_scan(srv.dbs[i], cursor, write_record, w);
    } while (cursor != 0 && !w->failed);
}

/* The libraries, when there are any (the set's bytes could not be made:
 * the file fails, as a key that cannot be encoded does). */
static void
write_functions(struct writer *w)
{
    w->scratch.len = 0;
    if (!funcset_encode(&w->scratch)) {
        w->failed = true;
        return;
    }
    if (w->scratch.len == 0) {
        return;
    }
    uint8_t mark = MARK_FUNCTIONS;
    uint32_t len = (uint32_t)w->scratch.len;
    w_put(w, &mark, sizeof(mark));
    w_put(w, &len, sizeof(len));
    w_put(w, w->scratch.p, w->scratch.len);
}

/* One pass: header, the libraries, every database's live records, the
 * record count, the CRC of it all; then fsync. */
static int
write_file(const char *tmp, char *err, size_t errlen)
{
    struct writer w = { .now = clock_wall_now() };
    uint32_t version = VERSION, zero = 0;

    w.f = fopen(tmp, "wb");
    if (w.f == NULL) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    (void)setvbuf(w.f, NULL, _IOFBF, 1 << 20);
    w_put(&w, MAGIC, 8);
    w_put(&w, &version, sizeof(version));
    w_put(&w, &zero, sizeof(zero));
    w_put(&w, &w.now, sizeof(w.now));
    write_functions(&w);
    for (size_t i = 0; i < srv.ndbs && !w.failed; i++) {
        write_db(&w, i);
    }
    mem_free(w.scratch.p);
    w_put(&w, &w.records, sizeof(w.records));
    uint32_t crc = w.crc;
    w_put(&w, &crc, sizeof(crc));
    w.failed |= fflush(w.f) != 0 || fsync(fileno(w.f)) != 0;
    if (fclose(w.f) != 0 || w.failed) {
        snprintf(err, errlen, "writing %s: %s", tmp,
                 errno ? strerror(errno) : "short write");
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The temporary file the process `pid` writes a snapshot to. */
static void
tmp_path(char *out, size_t len, pid_t pid)
{
    char suffix[32];
    snprintf(suffix, sizeof(suffix), ".tmp-%d", (int)pid);
    snap_path(out, len, suffix);
}

/* A child that died (killed, out of disk) may leave its temporary file:
 * remove it, as Redis does, or every failed BGSAVE leaves one behind. */
static void
remove_child_tmp(pid_t pid)
{
    char tmp[4300];
    tmp_path(tmp, sizeof(tmp), pid);
    if (unlink(tmp) == 0) {
        log_notice("Removed the temporary file %s of a failed background "
                   "save", tmp);
    }
}

int
snapshot_write(const char *path, char *err, size_t errlen)
{
    char tmp[4300];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
    if (write_file(tmp, err, errlen) < 0) {
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "renaming %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    file_sync_parent(path);
    return 0;
}

static int
save_to_disk(char *err, size_t errlen)
{
    char path[4200];
    snap_path(path, sizeof(path), "");
    return snapshot_write(path, err, errlen);
}

/* Writes to every database since the start. */
static uint64_t
changes_now(void)
{
    struct store_usage t;
    keyspace_totals(&t);
    return t.changes + funcset_changes();
}

int
snapshot_save(char *err, size_t errlen)
{
    uint64_t changes = changes_now();
    int64_t t0 = clock_mono_now();
    int rc = save_to_disk(err, errlen);
    last_attempt_s = clock_wall_us() / US_PER_SEC;
    last_ok = rc == 0;
    if (rc == 0) {
        last_save_s = last_attempt_s;
        changes_at_save = changes;
        log_notice("DB saved on disk (%zu keys, %lld ms)",
                   keyspace_total_keys(),
                   (long long)((clock_mono_now() - t0) / NS_PER_MS));
    } else {
        log_warning("Snapshot failed: %s", err);
    }
    return rc;
}

/* ---- the background save ------------------------------------------------ */

/* In the child: it only reads its copy of the keyspace, and writes. */
static int
bgsave_work(void)
{
    char err[256];
    return save_to_disk(err, sizeof(err));
}

static int
bgsave_start(const struct child_ops *self, char *err, size_t errlen)
{
    uint64_t changes = changes_now();
    last_attempt_s = clock_wall_us() / US_PER_SEC;
    pid_t pid = child_fork(self, err, errlen);
    if (pid < 0) {
        last_ok = false;
        log_warning("Can't save in background: %s", err);
        return -1;
    }
    changes_at_fork = changes;
    log_notice("Background saving started by pid %d", (int)pid);
    return 0;
}

/* A scheduled BGSAVE, as Redis: at once after a good save, else only
 * SAVE_RETRY_DELAY_S after the failed attempt. */
#define SAVE_RETRY_DELAY_S 5
static bool
bgsave_due(void)
{
    return last_ok ||
           clock_wall_us() / US_PER_SEC - last_attempt_s > SAVE_RETRY_DELAY_S;
}

static void
bgsave_done(const struct child_exit *how)
{
    if (how->killed) {
        /* Stopped by the server itself (shutdown): no failed save, as
         * Redis does not count a child it stops; its file goes. */
        remove_child_tmp(how->pid);
        return;
    }
    last_attempt_s = clock_wall_us() / US_PER_SEC;
    last_ok = how->ok;
    if (how->ok) {
        last_save_s = last_attempt_s;
        changes_at_save = changes_at_fork;
        log_notice("Background saving terminated with success");
    } else if (how->signal != 0) {
        log_warning("Background saving terminated by signal %d", how->signal);
        remove_child_tmp(how->pid);
    } else {
        log_warning("Background saving error");
        remove_child_tmp(how->pid);
    }
}

/* BGSAVE's and the save rules' child (child.h). */
static const struct child_ops bgsave_ops = {
    .kind = CHILD_SNAPSHOT,
    .work = bgsave_work,            /* in the child; the rest in the parent */
    .start = bgsave_start, .due = bgsave_due, .done = bgsave_done,
};

int
snapshot_bgsave(unsigned how, char *err, size_t errlen)
{
    switch (child_request(&bgsave_ops, how, err, errlen)) {
    case CHILD_STARTED:
        return 0;
    case CHILD_SCHEDULED:
        return 1;
    case CHILD_SAME_RUNS:
        snprintf(err, errlen, "Background save already in progress");
        return -1;
    case CHILD_OTHER_RUNS:
        snprintf(err, errlen, "Another child process is active (AOF?): "
                 "can't BGSAVE right now. Use BGSAVE SCHEDULE in order to "
                 "schedule a BGSAVE whenever possible.");
        return -1;
    default:
        return -1;                  /* err says why */
    }
}

/* save-interval: keys changed and the interval passed since the last
 * attempt (or the start). */
static bool
interval_due(int64_t now_s)
{
    int64_t since = last_attempt_s ? last_attempt_s
                                   : srv.start_wall_us / US_PER_SEC;
    return srv.conf.save_interval > 0 && snapshot_changes() > 0 &&
           now_s - since >= srv.conf.save_interval;
}

/* A save rule is met as Redis meets one: enough changes, more than its
 * seconds since the last good save, and after a failed attempt at least
 * SAVE_RETRY_DELAY_S before the next. */
static bool
save_rule_due(int64_t now_s)
{
    struct conf_save_rule rules[CONF_SAVE_RULES_MAX];
    size_t n = conf_save_rules(srv.conf.save, rules);
    uint64_t changes = snapshot_changes();
    if (!last_ok && now_s - last_attempt_s <= SAVE_RETRY_DELAY_S) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (changes >= (uint64_t)rules[i].changes &&
            now_s - snapshot_last_save() > rules[i].seconds) {
            return true;
        }
    }
    return false;
}

void
snapshot_cron(void)
{
    int64_t now_s = clock_wall_us() / US_PER_SEC;
    if (!child_running(CHILD_NONE) &&
        (interval_due(now_s) || save_rule_due(now_s))) {
        char err[256];
        if (snapshot_bgsave(0, err, sizeof(err)) < 0) {
            log_warning("Periodic snapshot: %s", err);
        }
    }
}

bool
snapshot_configured(void)
{
    return srv.conf.save_interval > 0 || srv.conf.save[0] != '\0';
}

int64_t
snapshot_last_save(void)
{
    return last_save_s ? last_save_s : srv.start_wall_us / US_PER_SEC;
}

bool
snapshot_in_progress(void)
{
    return child_saving();
}

bool
snapshot_last_ok(void)
{
    return last_ok;
}

uint64_t
snapshot_changes(void)
{
    return changes_now() - changes_at_save;
}

/* ---- loading ----------------------------------------------------------- */

/* Where records go while loading: the database of the last marker. */
struct loader {
    struct membuf_reader r;
    int encoding;               /* of the states */
    bool markers;               /* the version has them */
    bool expiry_ns;             /* before version 5 */
    bool functions;             /* the version may hold them */
    int db;
    int64_t now;
};

/* A database marker (its type byte read): later records go to its
 * database, which this server must have. */
static int
load_marker(struct loader *l, char *err, size_t errlen)
{
    uint32_t db;
    if (!l->markers || !membuf_read(&l->r, &db, 4)) {
        snprintf(err, errlen, "truncated or malformed record");
        return -1;
    }
    if (db >= srv.ndbs) {
        snprintf(err, errlen, "it holds keys of database %u, but this "
                 "server has %zu databases (see 'databases')", db, srv.ndbs);
        return -1;
    }
    l->db = (int)db;
    return 0;
}

static int
load_record(struct loader *l, uint8_t type, char *err, size_t errlen)
{
    struct membuf_reader *r = &l->r;
    uint32_t keylen, state_len;
    int64_t expire_at;
    if (!membuf_read(r, &keylen, 4) ||
        !membuf_read(r, &expire_at, 8) || !membuf_read(r, &state_len, 4) ||
        keylen > KEY_MAX_LOAD || state_len > STATE_MAX_LOAD ||
        r->left < (size_t)keylen + state_len) {
        snprintf(err, errlen, "truncated or malformed record");
        return -1;
    }
    if (l->expiry_ns) {
        expire_at = store_expiry_from_ns(expire_at);
    }
    const char *key = (const char *)r->p;
    const unsigned char *state = r->p + keylen;
    r->p += (size_t)keylen + state_len;
    r->left -= (size_t)keylen + state_len;
    return keyspace_restore(l->db, type, key, keylen, expire_at, state,
                            state_len, l->encoding, false, l->now, err,
                            errlen);
}

/* The libraries' item (its type byte read). */
static int
load_functions(struct loader *l, char *err, size_t errlen)
{
    uint32_t len;
    const unsigned char *set;
    if (!l->functions || !membuf_read(&l->r, &len, 4) ||
        !membuf_skip(&l->r, len, &set)) {
        snprintf(err, errlen, "truncated or malformed record");
        return -1;
    }
    return funcset_replace(set, len, err, errlen);
}

/* The next item: a marker, or a record (counted in *records). */
static int
load_item(struct loader *l, uint64_t *records, char *err, size_t errlen)
{
    uint8_t type;
    if (!membuf_read(&l->r, &type, 1)) {
        snprintf(err, errlen, "truncated or malformed record");
        return -1;
    }
    if (type == MARK_DB) {
        return load_marker(l, err, errlen);
    }
    if (type == MARK_FUNCTIONS) {
        return load_functions(l, err, errlen);
    }
    (*records)++;
    return load_record(l, type, err, errlen);
}

/* Version and CRC of a whole file: the version sits at offset 8, and
 * picks the CRC (IEEE before 4, Castagnoli from 4). */
static int
check_file(const unsigned char *buf, size_t len, uint32_t *version,
           char *err, size_t errlen)
{
    uint32_t crc;
    if (len < 8 + 4 + 4 + 8 + 8 + 4) {
        snprintf(err, errlen, "truncated (%zu bytes)", len);
        return -1;
    }
    memcpy(version, buf + 8, 4);
    if (memcmp(buf, MAGIC, 8) != 0 || *version < VERSION_FIRST ||
        *version > VERSION) {
        snprintf(err, errlen, "not a cellgate snapshot of version %u to %u",
                 VERSION_FIRST, VERSION);
        return -1;
    }
    memcpy(&crc, buf + len - 4, 4);
    uint32_t want = *version >= VERSION_TRAILER
                        ? crc32c_update(0, buf, len - 4)
                        : crc32_update(0, buf, len - 4);
    if (want != crc) {
        snprintf(err, errlen, "checksum mismatch: the file is corrupt or "
                 "truncated");
        return -1;
    }
    return 0;
}

static int
load_buffer(const unsigned char *buf, size_t len, char *err, size_t errlen)
{
    uint32_t version;
    int64_t written;
    uint64_t records;
    if (check_file(buf, len, &version, err, errlen) < 0) {
        return -1;
    }
    /* Header: magic, version, 0, written_at; the count after it before
     * version 4, in the trailer (before the CRC) from 4 on. */
    struct membuf_reader r = { buf + 24, len - 24 - 4 };
    memcpy(&written, buf + 16, 8);
    (void)written;
    if (version >= VERSION_TRAILER) {
        memcpy(&records, buf + len - 12, 8);
        r.left -= 8;
    } else {
        (void)membuf_read(&r, &records, 8);     /* the size check covers it */
    }
    struct loader l = {
        .r = r,
        .encoding = version == 1   ? KS_ENCODING_V1
                    : version < VERSION_EXPIRY_MS ? KS_ENCODING_V2
                                                  : KS_ENCODING,
        .markers = version >= VERSION_DBS,
        .expiry_ns = version < VERSION_EXPIRY_MS,
        .functions = version >= VERSION_FUNCTIONS,
        .db = 0,
        .now = clock_wall_now(),
    };
    /* Up to the count or checksum: a database's marker may end the
     * records when every key of it went fresh while it was written. */
    uint64_t loaded = 0;
    if (funcset_replace(NULL, 0, err, errlen) < 0) {    /* the file's only */
        return -1;
    }
    while (l.r.left > 0) {
        if (load_item(&l, &loaded, err, errlen) < 0) {
            return -1;
        }
    }
    if (loaded != records) {
        snprintf(err, errlen, "%llu records, but the file says %llu",
                 (unsigned long long)loaded, (unsigned long long)records);
        return -1;
    }
    return 0;
}

int
snapshot_load_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t got = 0;
    unsigned char *buf = file_read_all(path, &got);
    if (buf == NULL) {
        if (errno == ENOENT) {
            return 1;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char why[256];
    int rc = load_buffer(buf, got, why, sizeof(why));
    free(buf);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        keyspace_flush(-1);
        return -1;
    }
    last_save_s = stat(path, &st) == 0 ? (int64_t)st.st_mtime
                                       : clock_wall_us() / US_PER_SEC;
    changes_at_save = changes_now();
    return 0;
}

int
snapshot_load(char *err, size_t errlen)
{
    char path[4200];
    snap_path(path, sizeof(path), "");
    int rc = snapshot_load_file(path, err, errlen);
    if (rc == 0) {
        log_notice("Loaded %zu keys from %s", keyspace_total_keys(), path);
    }
    return rc < 0 ? -1 : 0;
}
