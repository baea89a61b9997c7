/*
 * child.h - the one owner of background children: the forked processes
 * that write a snapshot of the keyspace while the loop keeps serving
 * (copy-on-write gives each a frozen copy). `daemonize`'s start-up fork
 * (lifecycle.c) is no background child and stays there.
 *
 * Kinds, as Redis 7.0 tells its children apart:
 *   CHILD_SNAPSHOT       BGSAVE and the save rules: dir/dbfilename
 *   CHILD_REPL_SNAPSHOT  the snapshot a replica's full sync is sent
 *   CHILD_REWRITE        the journal's new base (BGREWRITEAOF)
 * The first two are Redis's RDB child (INFO rdb_bgsave_in_progress), the
 * third its AOF child.
 *
 * At most one child runs, as in Redis: a fork doubles the pages the
 * kernel may have to copy, and two writers compete for the same disk.
 * What a second request meets (child_request()):
 *   - one of its own kind runs: refused (BGSAVE: "Background save already
 *     in progress"); a full sync decides itself whether it joins it;
 *   - another kind runs: scheduled when the caller may wait (BGSAVE
 *     SCHEDULE, BGREWRITEAOF, a full sync), else refused;
 *   - inside EXEC: scheduled even when none runs (Redis's in_exec).
 * A scheduled request starts from child_cron() once no child runs, in
 * Redis's order: a replica's snapshot first, then the rewrite, then the
 * BGSAVE.
 *
 * The owner of each kind (snapshot.c, persist/persist.c,
 * repl/primary.c) hands in a struct child_ops: what the child does,
 * how to start one (the owner's own preparation, then child_fork()), and
 * what to do once it ended. This file calls back only through those
 * pointers, never an owner by name, so the core does not depend on the
 * wings. The owners keep their post-child work (renaming, the manifest,
 * sending the snapshot to replicas).
 *
 * A child reports its progress (keys written, copy-on-write bytes) up a
 * pipe, as Redis's childinfo.c does: INFO's current_fork_perc,
 * current_save_keys_processed, current_cow_size and the last sizes.
 */
#ifndef CELLGATE_CHILD_H
#define CELLGATE_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum child_kind {
    CHILD_NONE,
    CHILD_SNAPSHOT,
    CHILD_REPL_SNAPSHOT,
    CHILD_REWRITE,
    CHILD_KINDS
};

/* How a child ended, for its owner's done(). */
struct child_exit {
    enum child_kind kind;
    pid_t pid;
    bool ok;                    /* exited 0 */
    int code;                   /* its exit status, or -1 (a signal) */
    int signal;                 /* the signal that ended it, or 0 */
    bool killed;                /* by child_kill(): not the child's fault */
    int64_t seconds;            /* it ran (wall clock, as Redis times it) */
};

struct child_ops {
    enum child_kind kind;
    /* In the child, once it closed its parent's sockets: 0 = success. */
    int (*work)(void);
    /* In the parent: the owner's preparation, child_fork(self), its log
     * line. 0 when started (or when nothing is needed any more), -1 with
     * err. Called by child_request(), and by child_cron() for a scheduled
     * one; self is the table it was called through. */
    int (*start)(const struct child_ops *self, char *err, size_t errlen);
    /* May a scheduled one start now (NULL: yes)? BGSAVE waits after a
     * failed attempt, as Redis does. */
    bool (*due)(void);
    /* In the parent, once the child is reaped or killed; no child runs
     * any more, so it may start the next one. */
    void (*done)(const struct child_exit *how);
};

enum child_answer {
    CHILD_STARTED,
    CHILD_SCHEDULED,            /* starts once the running one ended */
    CHILD_SAME_RUNS,            /* one of this kind runs: refused */
    CHILD_OTHER_RUNS,           /* another kind runs: refused */
    CHILD_FAILED                /* start() failed: err says why */
};

/* child_request()'s how: */
#define CHILD_MAY_WAIT 1u       /* another kind runs: schedule, not refuse */
#define CHILD_IN_EXEC 2u        /* inside EXEC: schedule, as Redis does */

/* A request for a child of ops->kind, met as Redis 7.0 meets it (above). */
enum child_answer child_request(const struct child_ops *ops, unsigned how,
                                char *err, size_t errlen);

/* The fork itself, for an owner's start(): the child closes its parent's
 * sockets, runs ops->work and exits with its result. Returns the child's
 * pid, or -1 with err (a child runs already, fork failed). */
pid_t child_fork(const struct child_ops *ops, char *err, size_t errlen);

/* From cron: read the child's progress, reap it (calling its done()),
 * start a scheduled one when none runs. */
void child_cron(void);

/* Stop the running child (SIGKILL, then wait for it, so no orphan is
 * left writing); its done() runs with killed set. No child: nothing. */
void child_kill(void);

/* Shutdown (SHUTDOWN, SIGTERM): child_kill() with Redis's log line. */
void child_kill_at_shutdown(void);

/* Is a child of this kind running (CHILD_NONE: of any kind)? */
bool child_running(enum child_kind kind);

/* The running child's pid, or -1. */
pid_t child_pid(void);

/* Redis's RDB child: a snapshot for BGSAVE or for a replica. */
bool child_saving(void);

/* Is one of this kind scheduled? Forget it (its reason went away). */
bool child_scheduled(enum child_kind kind);
void child_unschedule(enum child_kind kind);

/* In a child: the snapshot writer's count of keys written so far. Sent to
 * the parent at most once a second (checked every 1,024 keys). */
void child_report_progress(uint64_t keys);

/* INFO persistence and stats. */
struct child_info {
    uint64_t cow_peak, cow_size;        /* bytes, of the running child */
    int64_t cow_size_age;               /* seconds since measured */
    double fork_perc;
    uint64_t keys_processed, keys_total;
    uint64_t snapshot_forks;            /* rdb_saves: background ones */
    uint64_t last_snapshot_cow;         /* rdb_last_cow_size */
    uint64_t last_rewrite_cow;          /* aof_last_cow_size */
    int64_t last_snapshot_seconds;      /* rdb_last_bgsave_time_sec: -1 */
    int64_t current_snapshot_seconds;   /* rdb_current_bgsave_time_sec */
    uint64_t total_forks;
    int64_t latest_fork_usec;
};
void child_info(struct child_info *out);

#endif
