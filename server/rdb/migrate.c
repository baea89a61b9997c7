/*
 * migrate.c - see migrate.h. Plain blocking sockets with poll() for the
 * timeouts: the exchange is meant to hold the loop (migrate.h), so libuv
 * has no part in it.
 */
#include "server/rdb/migrate.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/num.h"
#include "lib/rand.h"
#include "lib/time.h"

#define NAME_MAX_LEN 300
#define RBUF_SIZE 4096

struct migrate_target {
    int fd;                         /* -1: a free slot */
    char name[NAME_MAX_LEN];        /* "host:port" as the client wrote it */
    int64_t selected_db;
    int64_t last_use_ms;
    char rbuf[RBUF_SIZE];           /* read, not yet returned */
    size_t rlen, rpos;
};

static struct migrate_target cache[MIGRATE_CACHED];
static bool cache_ready;

static int64_t
mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * MS_PER_SEC + ts.tv_nsec / NS_PER_MS;
}

static void
cache_init(void)
{
    if (!cache_ready) {
        for (size_t i = 0; i < MIGRATE_CACHED; i++) {
            cache[i].fd = -1;
        }
        cache_ready = true;
    }
}

void
migrate_close(struct migrate_target *t)
{
    if (t->fd >= 0) {
        close(t->fd);
    }
    t->fd = -1;
}

/* Wait until fd is ready for `events` or deadline (monotonic ms) passes:
 * false with errno ETIMEDOUT on the deadline, or poll's error. */
static bool
wait_ready(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return false;
        }
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n > 0) {
            return true;
        }
        if (n < 0 && errno != EINTR) {
            return false;
        }
    }
}

/* One address tried: a socket that became writable (no Nagle), or -1.
 * As Redis's connBlockingConnect(), a connection refused after the
 * connect began counts as made: the write that follows fails, and
 * MIGRATE answers "writing", as Redis does. */
static int
connect_addr(const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
                                       SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 &&
        (errno != EINPROGRESS || !wait_ready(fd, POLLOUT, deadline))) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Redis resolves the host and connects within the timeout (its port read
 * with atoi(), so "abc" is port 0 and fails to connect). */
static int
connect_to(const char *host, size_t hostlen, const char *port,
           int64_t timeout_ms)
{
    char hbuf[NAME_MAX_LEN], pbuf[16];
    if (hostlen >= sizeof(hbuf) || memchr(host, '\0', hostlen) != NULL) {
        return -1;
    }
    memcpy(hbuf, host, hostlen);
    hbuf[hostlen] = '\0';
    snprintf(pbuf, sizeof(pbuf), "%d", num_atoi(port));
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM }, *res;
    if (getaddrinfo(hbuf, pbuf, &hints, &res) != 0) {
        return -1;
    }
    int64_t deadline = mono_ms() + timeout_ms;
    int fd = -1;
    for (const struct addrinfo *ai = res; ai != NULL && fd < 0;
         ai = ai->ai_next) {
        fd = connect_addr(ai, deadline);
    }
    freeaddrinfo(res);
    return fd;
}

static struct migrate_target *
cache_find(const char *name)
{
    for (size_t i = 0; i < MIGRATE_CACHED; i++) {
        if (cache[i].fd >= 0 && strcmp(cache[i].name, name) == 0) {
            return &cache[i];
        }
    }
    return NULL;
}

/* A free slot, or a random one closed to make room, as Redis drops a
 * random cached socket when its cache is full. */
static struct migrate_target *
cache_slot(void)
{
    for (size_t i = 0; i < MIGRATE_CACHED; i++) {
        if (cache[i].fd < 0) {
            return &cache[i];
        }
    }
    struct migrate_target *t = &cache[rand_below(MIGRATE_CACHED)];
    migrate_close(t);
    return t;
}

struct migrate_target *
migrate_connect(const char *host, size_t hostlen, const char *port,
                size_t portlen, int64_t timeout_ms)
{
    cache_init();
    char name[NAME_MAX_LEN];
    int n = snprintf(name, sizeof(name), "%.*s:%.*s", (int)hostlen, host,
                     (int)portlen, port);
    if (n < 0 || (size_t)n >= sizeof(name)) {
        return NULL;
    }
    struct migrate_target *t = cache_find(name);
    if (t == NULL) {
        int fd = connect_to(host, hostlen, port, timeout_ms);
        if (fd < 0) {
            return NULL;
        }
        t = cache_slot();
        *t = (struct migrate_target){ .fd = fd, .selected_db = -1 };
        memcpy(t->name, name, (size_t)n + 1);
    }
    t->last_use_ms = mono_ms();
    return t;
}

int64_t
migrate_selected_db(const struct migrate_target *t)
{
    return t->selected_db;
}

void
migrate_set_selected_db(struct migrate_target *t, int64_t db)
{
    t->selected_db = db;
}

bool
migrate_write(struct migrate_target *t, const char *buf, size_t len,
              int64_t timeout_ms)
{
    int64_t deadline = mono_ms() + timeout_ms;
    while (len > 0) {
        if (!wait_ready(t->fd, POLLOUT, deadline)) {
            return false;
        }
        ssize_t n = send(t->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return false;
        }
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        }
    }
    return true;
}

/* One byte of the reply, reading more when none is left: the byte, or -1
 * (errno says why; 0 when the peer closed). */
static int
read_byte(struct migrate_target *t, int64_t deadline)
{
    while (t->rpos == t->rlen) {
        if (!wait_ready(t->fd, POLLIN, deadline)) {
            return -1;
        }
        ssize_t n = recv(t->fd, t->rbuf, sizeof(t->rbuf), MSG_DONTWAIT);
        if (n == 0) {
            errno = 0;
            return -1;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        }
        t->rlen = n > 0 ? (size_t)n : 0;
        t->rpos = 0;
    }
    return (unsigned char)t->rbuf[t->rpos++];
}

int64_t
migrate_read_line(struct migrate_target *t, char *buf, size_t size,
                  int64_t timeout_ms)
{
    int64_t deadline = mono_ms() + timeout_ms;
    size_t n = 0;
    for (;;) {
        int ch = read_byte(t, deadline);
        if (ch < 0) {
            return -1;
        }
        if (ch == '\n') {
            break;
        }
        if (n + 1 < size) {
            buf[n++] = (char)ch;
        }
    }
    if (n > 0 && buf[n - 1] == '\r') {
        n--;
    }
    buf[n] = '\0';
    return (int64_t)n;
}

void
migrate_cron(void)
{
    if (!cache_ready) {
        return;
    }
    int64_t now = mono_ms();
    for (size_t i = 0; i < MIGRATE_CACHED; i++) {
        if (cache[i].fd >= 0 &&
            now - cache[i].last_use_ms > MIGRATE_IDLE_SECONDS * MS_PER_SEC) {
            migrate_close(&cache[i]);
        }
    }
}

void
migrate_teardown(void)
{
    for (size_t i = 0; cache_ready && i < MIGRATE_CACHED; i++) {
        migrate_close(&cache[i]);
    }
}
