/*
 * child.c - see child.h.
 */
#include "server/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/time.h"
#include "server/clock.h"
#include "server/keyspace.h"
#include "server/log.h"
#include "server/server.h"

/* What a child sends up its pipe: small enough for one atomic write, so
 * the parent reads whole messages or none. */
enum { REPORT_PROGRESS, REPORT_FINAL };
struct report {
    uint32_t type;
    uint64_t keys;
    uint64_t cow;               /* Private_Dirty bytes: pages copied so far */
};
_Static_assert(sizeof(struct report) <= PIPE_BUF, "an atomic write");

/* Every 1,024 keys a child looks at the clock; it reports at most once
 * a second (Redis's rate). */
#define REPORT_EVERY_KEYS 1024
#define REPORT_EVERY_MS 1000

/* The running child (pid -1: none). */
static struct {
    pid_t pid;
    const struct child_ops *ops;
    int64_t started_s;
    int report_fd;              /* the pipe's read end, or -1 */
    uint64_t keys_total, keys_processed;
    uint64_t cow_size, cow_peak;
    int64_t cow_at_ms;          /* monotonic, 0: never measured */
} run = { .pid = -1, .report_fd = -1 };

static const struct child_ops *scheduled[CHILD_KINDS];

static struct {
    uint64_t forks, snapshot_forks;
    int64_t fork_usec;
    uint64_t last_cow[CHILD_KINDS];
    int64_t last_snapshot_seconds;
} stats = { .last_snapshot_seconds = -1 };

/* In a child: the pipe's write end (-1 in the parent). */
static int report_out = -1;

static int64_t
mono_ms(void)
{
    return clock_mono_now() / NS_PER_MS;
}

static int64_t
wall_s(void)
{
    return clock_wall_us() / US_PER_SEC;
}

static bool
is_snapshot(enum child_kind kind)
{
    return kind == CHILD_SNAPSHOT || kind == CHILD_REPL_SNAPSHOT;
}

bool
child_running(enum child_kind kind)
{
    return run.pid > 0 && (kind == CHILD_NONE || run.ops->kind == kind);
}

pid_t
child_pid(void)
{
    return run.pid;
}

bool
child_saving(void)
{
    return run.pid > 0 && is_snapshot(run.ops->kind);
}

bool
child_scheduled(enum child_kind kind)
{
    return scheduled[kind] != NULL;
}

void
child_unschedule(enum child_kind kind)
{
    scheduled[kind] = NULL;
}

/* ---- in the child ------------------------------------------------------ */

/* Bytes of this process's pages that are its own copies (Private_Dirty):
 * after a fork, the pages the parent changed since. 0 when unknown. */
static uint64_t
private_dirty_bytes(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    unsigned long long kb, total = 0;
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "Private_Dirty: %llu kB", &kb) == 1) {
            total += kb;
        }
    }
    fclose(f);
    return (uint64_t)total * 1024;
}

static void
send_report(uint32_t type, uint64_t keys)
{
    struct report r = { .type = type, .keys = keys,
                        .cow = private_dirty_bytes() };
    /* A full pipe (the parent stopped reading) costs a report, never
     * the save: the write end is non-blocking. */
    if (report_out >= 0 && write(report_out, &r, sizeof(r)) < 0) {
        return;
    }
}

void
child_report_progress(uint64_t keys)
{
    static int64_t last_ms;
    if (report_out < 0 || (keys - 1) % REPORT_EVERY_KEYS != 0) {
        return;
    }
    int64_t now = mono_ms();
    if (last_ms == 0 || now - last_ms >= REPORT_EVERY_MS) {
        last_ms = now;
        send_report(REPORT_PROGRESS, keys);
    }
}

/* The signals the parent handles through libuv would, in the child, be
 * written to the parent's signal pipe: a SIGTERM sent to the child would
 * shut the server down. The child takes the default actions instead. */
static void
reset_signals(void)
{
    static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGPIPE };
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        (void)signal(sigs[i], sigs[i] == SIGPIPE ? SIG_IGN : SIG_DFL);
    }
}

static _Noreturn void
run_child(const struct child_ops *ops, int pipe_out)
{
    reset_signals();
    server_child_close_sockets();
    report_out = pipe_out;
    int rc = ops->work();
    if (rc == 0) {
        send_report(REPORT_FINAL, 0);
    }
    _exit(rc == 0 ? 0 : 1);
}

/* ---- forking ------------------------------------------------------------ */

/* The progress pipe: non-blocking at both ends, so neither process ever
 * waits on the other. Without one the child runs unreported. */
static void
open_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        log_warning("Cannot open a pipe for a background child's progress: "
                    "%s", strerror(errno));
        fds[0] = fds[1] = -1;
    }
}

static void
close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

pid_t
child_fork(const struct child_ops *ops, char *err, size_t errlen)
{
    int fds[2];
    if (run.pid > 0) {
        snprintf(err, errlen, "another background child (pid %d) runs",
                 (int)run.pid);
        return -1;
    }
    open_pipe(fds);
    int64_t t0 = clock_mono_now();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close_fd(&fds[0]);
        close_fd(&fds[1]);
        return -1;
    }
    if (pid == 0) {
        close_fd(&fds[0]);
        run_child(ops, fds[1]);
    }
    close_fd(&fds[1]);
    stats.forks++;
    stats.snapshot_forks += is_snapshot(ops->kind);
    stats.fork_usec = (clock_mono_now() - t0) / NS_PER_US;
    run.pid = pid;
    run.ops = ops;
    run.started_s = wall_s();
    run.report_fd = fds[0];
    run.keys_total = keyspace_total_keys();
    run.keys_processed = run.cow_size = run.cow_peak = 0;
    run.cow_at_ms = 0;
    scheduled[ops->kind] = NULL;
    return pid;
}

/* ---- requests ----------------------------------------------------------- */

/* Is the running child one a request of this kind is refused for? A
 * BGSAVE meets Redis's RDB child (its own or a replica's); a replica's
 * snapshot waits behind a BGSAVE rather than being refused. */
static bool
same_kind_runs(enum child_kind kind)
{
    if (run.pid <= 0) {
        return false;
    }
    return kind == CHILD_SNAPSHOT ? is_snapshot(run.ops->kind)
                                  : run.ops->kind == kind;
}

enum child_answer
child_request(const struct child_ops *ops, unsigned how, char *err,
              size_t errlen)
{
    if (same_kind_runs(ops->kind)) {
        return CHILD_SAME_RUNS;
    }
    if (run.pid > 0 || (how & CHILD_IN_EXEC)) {
        if (!(how & (CHILD_MAY_WAIT | CHILD_IN_EXEC))) {
            return CHILD_OTHER_RUNS;
        }
        scheduled[ops->kind] = ops;
        return CHILD_SCHEDULED;
    }
    return ops->start(ops, err, errlen) == 0 ? CHILD_STARTED : CHILD_FAILED;
}

/* ---- reaping ------------------------------------------------------------ */

static void
read_reports(void)
{
    struct report r;
    while (run.report_fd >= 0 &&
           read(run.report_fd, &r, sizeof(r)) == (ssize_t)sizeof(r)) {
        if (r.cow > run.cow_peak) {
            run.cow_peak = r.cow;
        }
        if (r.type == REPORT_PROGRESS) {
            run.keys_processed = r.keys;
            run.cow_size = r.cow;
            run.cow_at_ms = mono_ms();
        } else {
            /* Redis keeps one size for its RDB child, one for its AOF. */
            enum child_kind k = run.ops->kind;
            stats.last_cow[is_snapshot(k) ? CHILD_SNAPSHOT : k] = run.cow_peak;
        }
    }
}

/* The child is gone: forget it, then tell its owner (who may start the
 * next one from done()). */
static void
ended(int status, bool killed)
{
    const struct child_ops *ops = run.ops;
    struct child_exit how = {
        .kind = ops->kind,
        .pid = run.pid,
        .ok = !killed && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        .code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
        .killed = killed,
        .seconds = wall_s() - run.started_s,
    };
    if (how.ok) {
        read_reports();             /* the final one: its copy-on-write */
    }
    if (is_snapshot(ops->kind)) {
        stats.last_snapshot_seconds = how.seconds;
    }
    close_fd(&run.report_fd);
    run.pid = -1;
    run.ops = NULL;
    ops->done(&how);
}

static void
reap(void)
{
    int status;
    pid_t got = waitpid(run.pid, &status, WNOHANG);
    if (got == run.pid) {
        ended(status, false);
    } else if (got < 0 && errno != EINTR) {
        /* ECHILD: someone else reaped it, and nothing will ever say how
         * it ended: a failure, as an exit status of 255. */
        log_warning("waitpid() returned an error: %s. child pid = %d",
                    strerror(errno), (int)run.pid);
        ended(255 << 8, false);
    }
}

/* A scheduled request whose start failed (fork, a full disk) stays
 * scheduled and is tried again this much later, not every cron tick. */
#define RETRY_FAILED_START_MS 5000

/* A scheduled request whose turn came, in Redis's order. */
static void
start_scheduled(void)
{
    static const enum child_kind order[] = {
        CHILD_REPL_SNAPSHOT, CHILD_REWRITE, CHILD_SNAPSHOT
    };
    static int64_t retry_at_ms[CHILD_KINDS];
    int64_t now = mono_ms();
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && run.pid < 0;
         i++) {
        enum child_kind kind = order[i];
        const struct child_ops *ops = scheduled[kind];
        char err[512];
        if (ops == NULL || now < retry_at_ms[kind] ||
            (ops->due != NULL && !ops->due())) {
            continue;
        }
        if (ops->start(ops, err, sizeof(err)) == 0) {
            scheduled[kind] = NULL;         /* child_fork() did, or no need */
        } else {
            retry_at_ms[kind] = now + RETRY_FAILED_START_MS;
        }
    }
}

void
child_cron(void)
{
    if (run.pid > 0) {
        read_reports();
        reap();
    }
    if (run.pid < 0) {
        start_scheduled();
    }
}

void
child_kill(void)
{
    int status = 0;
    if (run.pid <= 0) {
        return;
    }
    if (kill(run.pid, SIGKILL) != 0 && errno != ESRCH) {
        log_warning("Cannot kill the background child %d: %s", (int)run.pid,
                    strerror(errno));
    }
    /* SIGKILL cannot be caught: the wait is short, and it leaves no
     * zombie and nothing writing behind the owner's cleanup. */
    while (waitpid(run.pid, &status, 0) < 0) {
        if (errno != EINTR) {
            log_warning("waitpid() on the killed child %d: %s", (int)run.pid,
                        strerror(errno));
            break;
        }
    }
    ended(status, true);
}

void
child_kill_at_shutdown(void)
{
    if (child_saving()) {
        log_warning("There is a child saving an .rdb. Killing it!");
    } else if (child_running(CHILD_REWRITE)) {
        log_warning("There is a child rewriting the AOF. Killing it!");
    }
    child_kill();
    memset(scheduled, 0, sizeof(scheduled));
}

/* ---- INFO --------------------------------------------------------------- */

void
child_info(struct child_info *out)
{
    memset(out, 0, sizeof(*out));
    out->total_forks = stats.forks;
    out->snapshot_forks = stats.snapshot_forks;
    out->latest_fork_usec = stats.fork_usec;
    out->last_snapshot_cow = stats.last_cow[CHILD_SNAPSHOT];
    out->last_rewrite_cow = stats.last_cow[CHILD_REWRITE];
    out->last_snapshot_seconds = stats.last_snapshot_seconds;
    out->current_snapshot_seconds = child_saving() ? wall_s() - run.started_s
                                                   : -1;
    if (run.pid <= 0) {
        return;
    }
    out->cow_peak = run.cow_peak;
    out->cow_size = run.cow_size;
    out->cow_size_age = run.cow_at_ms
                            ? (mono_ms() - run.cow_at_ms) / MS_PER_SEC
                            : 0;
    out->keys_processed = run.keys_processed;
    out->keys_total = run.keys_total;
    out->fork_perc = run.keys_total ? (double)run.keys_processed /
                                          (double)run.keys_total * 100.0
                                    : 0.0;
}
