/*
 * persist.h - the journal's life around the keyspace: which files hold it,
 * loading them at start-up, writing before replies leave, fsync as
 * appendfsync says, compaction, and what INFO and -MISCONF report.
 *
 * Files, in dir/appenddirname, as Redis 7 lays out its AOF:
 *   <appendfilename>.manifest        which files, in order (text, replaced
 *                                    atomically): "file <name> seq <n>
 *                                    type b|i" per line
 *   <appendfilename>.<n>.base.snap   a snapshot (snapshot.h's format)
 *   <appendfilename>.<n>.incr.journal  the journal after it (journal.h)
 * The state is the base, then each incr file in order. A rewrite opens a
 * new incr file first (so every write after it lands there), lists it in
 * the manifest next to the old ones, then a forked child writes the new
 * base; only when the child succeeded does the manifest name the new base
 * and the new incr alone. A crash at any point leaves a manifest whose
 * files hold every write.
 *
 * Group commit: replies leave in conn.c's flush_all(), which first calls
 * persist_before_replies(). That writes the journal buffer and, under
 * appendfsync always, fsyncs it once for every request of the iteration. A
 * client whose requests wrote something carries the generation they went
 * into (persist_generation()); its replies wait while that generation is
 * not safe (persist_safe()): written under everysec and no, written and
 * fsynced under always. So a disk that fails holds exactly the replies
 * that report unsaved decisions, and the other clients carry on.
 */
#ifndef CELLGATE_PERSIST_H
#define CELLGATE_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

/* Start-up, before the loop runs: the journal's files when appendonly is
 * on and they exist, else the snapshot. 0, or -1 with err. */
int persist_load(char *err, size_t errlen);

/* Start-up, after loading: with appendonly on, make sure a manifest, a
 * base and an incr file exist (writing a base of what was loaded the first
 * time), open the incr file and start journaling writes. 0, or -1. */
int persist_open(char *err, size_t errlen);

/* Clean exit: the buffer written and fsynced, the file closed, a running
 * rewrite stopped. */
void persist_close(void);

/* conn.c, before any reply of this loop iteration is written. */
void persist_before_replies(void);

/* The generation writes made now go into; a generation is safe once its
 * records are in the file as appendfsync requires. */
uint64_t persist_generation(void);
uint64_t persist_safe(void);

/* From cron: fsync every second (everysec), retry a failed write, reap and
 * start rewrites. */
void persist_cron(void);

/* After CONFIG SET: appendonly turned on starts the journal (a new incr
 * file at once, its base written by a child), turned off stops it. 0, or
 * -1 with err. */
int persist_apply_config(char *err, size_t errlen);

/* BGREWRITEAOF: a new base written by a background child (child.h).
 * how: child.h's CHILD_MAY_WAIT, CHILD_IN_EXEC. 0 (started), 1
 * (scheduled: it starts once the running child ended, as Redis 7.0
 * schedules it behind a BGSAVE), or -1 with err (Redis's words when a
 * rewrite runs already). */
int persist_rewrite(unsigned how, char *err, size_t errlen);

/* Are writes refused (-MISCONF)? Then persist_errno() says why (the
 * errno of the failed write or fsync). Read per command: a plain load of
 * srv.persist_refusing, which this file keeps. */
static inline bool
persist_refuses_writes(void)
{
    return srv.persist_refusing;
}
int persist_errno(void);

struct persist_info {
    bool enabled;
    bool rewrite_in_progress;
    bool rewrite_scheduled;
    int64_t last_rewrite_time_sec;      /* -1: none yet */
    int64_t current_rewrite_time_sec;   /* -1: none running */
    bool last_rewrite_ok;
    uint64_t rewrites;
    uint64_t rewrites_consecutive_failures;
    bool last_write_ok;
    uint64_t current_size;              /* base + incr files, bytes */
    uint64_t base_size;                 /* the same, after the last rewrite */
    size_t buffer_length;
    bool fsync_in_progress;
    uint64_t fsyncs;
    int64_t last_fsync_us;
};
void persist_info(struct persist_info *out);

/* As Redis's mem_aof_buffer, which maxmemory does not count: with the
 * journal on, its buffer's allocation; 0 when it is off. */
size_t persist_buffer_memory(void);

#endif
