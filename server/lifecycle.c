/*
 * lifecycle.c - see lifecycle.h.
 *
 * daemonize: one fork and setsid, as Redis does, with one difference that
 * scripts notice: the starting process does not exit at once. It waits on
 * a pipe until the server is ready (exit 0) or gone (the pipe closes: exit
 * 1), so `cellgate --daemonize yes && redis-cli PING` works, and a start
 * that fails (a port in use, a snapshot that will not load) fails the
 * command that started it. Until then standard error is still the
 * terminal's, so the reason is printed where it was asked for; after it,
 * the standard streams go to /dev/null (and so does the log when
 * `logfile` is empty, as in Redis).
 *
 * supervised: systemd's sd_notify protocol spoken directly: one datagram
 * of "NAME=value" lines to the socket named by $NOTIFY_SOCKET (a path, or
 * "@name" for the abstract namespace). No libsystemd: these few lines are
 * the whole protocol, and a daemon that is not under systemd pays nothing.
 * Under a supervisor the process stays in the foreground (systemd tracks
 * the main pid), so `daemonize` is then ignored, as Redis ignores it.
 */
#include "server/lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "conf/conf.h"
#include "server/log.h"
#include "server/server.h"

/* Redis's default when daemonized without a pidfile. */
#define DEFAULT_PIDFILE "/var/run/cellgate.pid"

static int ready_pipe = -1;        /* the waiting parent's, in the child */
static bool notify_systemd;
static char pidfile[PATH_MAX];     /* written by us, removed at exit */

/* ---- systemd ---------------------------------------------------------- */

/* Send one sd_notify datagram; failures are logged, never fatal (a
 * supervisor that went away must not stop the server). */
static void
notify(const char *message)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    size_t len = path != NULL ? strlen(path) : 0;

    if (!notify_systemd || len == 0) {
        return;
    }
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path)) {
        log_warning("NOTIFY_SOCKET '%s' is not a socket path; systemd is "
                    "not told", path);
        notify_systemd = false;
        return;
    }
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@') {
        sa.sun_path[0] = '\0';          /* the abstract namespace */
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    if (fd < 0 || sendto(fd, message, strlen(message), MSG_NOSIGNAL,
                         (struct sockaddr *)&sa, salen) < 0) {
        log_warning("Cannot notify systemd at %s: %s", path,
                    strerror(errno));
    }
    if (fd >= 0) {
        close(fd);
    }
}

/* `supervised`: systemd when asked, or for auto when systemd set us up. */
static void
choose_supervisor(void)
{
    bool has_socket = getenv("NOTIFY_SOCKET") != NULL;

    if (srv.conf.supervised == SUPERVISED_SYSTEMD) {
        notify_systemd = true;
        if (!has_socket) {
            log_warning("systemd supervision requested, but the "
                        "NOTIFY_SOCKET environment variable was not found");
        }
    } else if (srv.conf.supervised == SUPERVISED_AUTO) {
        notify_systemd = has_socket;
    }
    if (notify_systemd) {
        log_notice("Supervised by systemd: it is told READY and STOPPING "
                   "through NOTIFY_SOCKET");
    }
}

/* ---- daemonize and pidfile -------------------------------------------- */

/* The starting process: wait for the server's word, then leave. */
static void
wait_for_child(int fd)
{
    char byte;
    ssize_t n;
    do {
        n = read(fd, &byte, 1);
    } while (n < 0 && errno == EINTR);
    _exit(n == 1 ? 0 : 1);
}

static int
daemonize(void)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(fds[0]);
        close(fds[1]);
        errno = saved;
        return -1;
    }
    if (pid > 0) {
        close(fds[1]);
        wait_for_child(fds[0]);
    }
    close(fds[0]);
    ready_pipe = fds[1];
    (void)setsid();          /* cannot fail: a fresh child leads nothing */
    return 0;
}

/* Stand the standard streams on /dev/null (dup2 keeps their numbers, so
 * a log on standard error quietly goes nowhere, as Redis's does). */
static void
detach_stdio(void)
{
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    for (int std = STDIN_FILENO; std <= STDERR_FILENO; std++) {
        (void)dup2(fd, std);
    }
    if (fd > STDERR_FILENO) {
        close(fd);
    }
}

/* As Redis: a pidfile that cannot be written is a warning, not a failure
 * (the server itself is fine; whoever reads the file will say so). */
static void
write_pidfile(const char *path)
{
    FILE *f = fopen(path, "we");
    if (f == NULL) {
        log_warning("Failed to write PID file %s: %s", path, strerror(errno));
        return;
    }
    fprintf(f, "%d\n", (int)getpid());
    if (fclose(f) != 0) {
        log_warning("Failed to write PID file %s: %s", path, strerror(errno));
        unlink(path);
        return;
    }
    snprintf(pidfile, sizeof(pidfile), "%s", path);
}

/* ---- the lifecycle ---------------------------------------------------- */

int
lifecycle_start(void)
{
    choose_supervisor();
    bool background = srv.conf.daemonize && !notify_systemd;
    if (srv.conf.daemonize && notify_systemd) {
        log_notice("daemonize yes is ignored under systemd supervision: "
                   "the service manager keeps the process");
    }
    if (background && daemonize() < 0) {
        fprintf(stderr, "cellgate: cannot daemonize: %s\n", strerror(errno));
        log_warning("Cannot daemonize: %s", strerror(errno));
        return -1;
    }
    if (background && srv.conf.pidfile[0] == '\0') {
        /* As Redis: the default becomes the option's value (CONFIG GET
         * pidfile names the file); only memory can fail here. */
        char err[CONF_ERR_LEN];
        if (conf_set(&srv.conf, "pidfile", DEFAULT_PIDFILE, err,
                     sizeof(err)) < 0) {
            log_warning("Failed to write PID file: %s", err);
        }
    }
    if (srv.conf.pidfile[0] != '\0') {
        write_pidfile(srv.conf.pidfile);
    }
    notify("STATUS=Loading the data set\n");
    return 0;
}

void
lifecycle_ready(void)
{
    notify(srv.conf.replicaof[0] != '\0'
               ? "READY=1\nSTATUS=Ready to accept connections in read-only "
                 "mode, as a replica\n"
               : "READY=1\nSTATUS=Ready to accept connections\n");
    if (ready_pipe >= 0) {
        detach_stdio();
        ssize_t w;
        do {
            w = write(ready_pipe, "1", 1);
        } while (w < 0 && errno == EINTR);
        close(ready_pipe);
        ready_pipe = -1;
    }
}

void
lifecycle_stopping(void)
{
    notify("STOPPING=1\nSTATUS=Shutting down\n");
}

void
lifecycle_exit(void)
{
    if (pidfile[0] != '\0') {
        unlink(pidfile);
        pidfile[0] = '\0';
    }
}
