/*
 * server.c - the process-wide state (`srv`, see server.h) and what is
 * derived from its configuration. Every module may read it; main.c sets
 * it up and tears it down.
 */
#include "server/server.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Redis's caps: inline requests up to 64 KB; before AUTH at most 10
 * arguments of 16 KB, so an unauthenticated peer cannot make the server
 * buffer much. */
#define INLINE_MAX (64 * 1024)
#define UNAUTH_MAX_ARGS 10
#define UNAUTH_MAX_BULK (16 * 1024)

struct server srv;

void
server_apply_limits(void)
{
    srv.limits.max_query = (size_t)srv.conf.client_query_buffer_limit;
    srv.limits.max_bulk = (size_t)srv.conf.proto_max_bulk_len;
    srv.limits.max_args = (size_t)srv.conf.proto_max_args;
    srv.limits.max_inline = INLINE_MAX;
    srv.limits.unauthenticated = false;
    srv.unauth_limits = srv.limits;
    srv.unauth_limits.max_args = UNAUTH_MAX_ARGS;
    srv.unauth_limits.max_bulk = UNAUTH_MAX_BULK;
    srv.unauth_limits.unauthenticated = true;
}

void
server_request_shutdown(bool save)
{
    srv.shutdown_request = save ? SHUTDOWN_SAVE : SHUTDOWN_NOSAVE;
    if (srv.shutdown_wakeup != NULL) {
        uv_async_send(srv.shutdown_wakeup);
    }
}

void
server_random_bytes(unsigned char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            /* No entropy source: fall back to time and pid (a weaker but
             * still per-process seed). */
            uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
                         (uint64_t)(uintptr_t)buf;
            for (; got < len; got++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                buf[got] = (unsigned char)(x >> 56);
            }
            return;
        }
        got += (size_t)n;
    }
}

void
server_random_id(char out[41])
{
    unsigned char raw[20];
    static const char hex[] = "0123456789abcdef";
    server_random_bytes(raw, sizeof(raw));
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[40] = '\0';
}

static void
close_if_socket(int fd)
{
    struct stat st;
    if (fd > 2 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
        close(fd);
    }
}

void
server_child_close_sockets(void)
{
    /* nodes.conf's lock too: a child outliving its parent's kill -9 would
     * keep the restarted node from taking it. */
    if (srv.cluster_lock_fd > 0) {
        close(srv.cluster_lock_fd);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9' &&
                atoi(e->d_name) != dirfd(d)) {
                close_if_socket(atoi(e->d_name));
            }
        }
        closedir(d);
        return;
    }
    /* Without /proc: every descriptor the limit allows. */
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (max > 0 && max < (1L << 20) ? max : 1L << 20); fd++) {
        close_if_socket((int)fd);
    }
}
