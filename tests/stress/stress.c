/*
 * stress.c - many concurrent clients against a running cellgate, each
 * checking its own reply stream byte for byte where the answer is
 * deterministic.
 *
 *   stress --port P [--host 127.0.0.1] [--seconds 30] [--seed N]
 *          [--workers 64] [--io-timeout 60] [--reference]
 *
 * --reference runs it against Debian's redis-server 7.0.15 instead (make
 * stress-reference: io-threads 2 with threaded reads, which Redis 7.0
 * really uses), without CL.THROTTLE: the replies it expects are Redis's,
 * and that run shows it.
 *
 * It starts nothing: tests/stress/run.sh starts the daemon (a free
 * loopback port, --io-threads 2, small output limits, busy-reply-threshold
 * 100), runs this for a bounded time and stops the daemon by its PID. The
 * daemon must be fresh: the driver FLUSHALLs it and reads its limits with
 * CONFIG GET (client-output-hard-limit at most 64mb, busy-reply-threshold
 * 1..1000 ms), and refuses to run otherwise.
 *
 * Threads, each with its own sockets and its own random stream (derived
 * from the seed, printed at the start):
 *  - workers: pipelines of 1..200 requests (INCR, GET, SET, ECHO, PING,
 *    EVAL/EVALSHA, CL.THROTTLE, SELECT, WAIT 0 0, PUBLISH, CLIENT INFO) on
 *    keys of their own, each reply checked against a model of those keys;
 *    values over 64 KB; MULTI/EXEC, WATCH (won, lost to another client of
 *    its own, and contested on shared keys), DISCARD, EXECABORT; CLIENT
 *    REPLY OFF/SKIP/ON; CLIENT PAUSE WRITE/ALL with a request held on a
 *    second socket until CLIENT UNPAUSE (from the pauser or another
 *    client); CLIENT KILL of others (ID, ADDR, the old form, TYPE normal)
 *    and of itself; QUIT; disconnects in the middle of a request or of an
 *    unread pipeline (then a CLIENT KILL of that connection as a barrier:
 *    the server may still run what it had read); slow readers past
 *    client-output-pause-limit; a reply past client-output-hard-limit
 *    (closed, nothing of it sent); connect/close churn; INFO and CLIENT
 *    LIST.
 *  - stable subscribers (never killed): SUBSCRIBE st:0..3 and PSUBSCRIBE
 *    st:*; each must get every PUBLISH a worker saw answered, once per
 *    subscription, in each publisher's order, bytes intact.
 *  - churn subscribers: SUBSCRIBE/UNSUBSCRIBE/PSUBSCRIBE/PUNSUBSCRIBE with
 *    exact confirmations, messages only for what they are subscribed to,
 *    in order; now and then one stops reading while 512 KB messages are
 *    published to it, and must be closed at client-output-hard-limit.
 *  - monitors: every line well formed; a marker sent on another socket
 *    must show up.
 *  - the buster: EVAL of a script that spins; once other clients get
 *    -BUSY, SCRIPT KILL; the caller's error is exact. Workers accept -BUSY
 *    only for a request that was in flight while such a script could have
 *    been running (counters busy_begin/busy_end), and their models account
 *    for it not having run. Requests whose order of effects a -BUSY would
 *    make ambiguous (transactions, CLIENT REPLY, CLIENT PAUSE, CLIENT KILL)
 *    run under a read lock the buster takes for writing.
 *
 * A client that loses its connection must have been the target of a
 * CLIENT KILL not done yet when it connected (counters bumped before the
 * kill is sent and after its reply), or have asked for it (QUIT, a reply past the hard limit, a
 * subscriber flooded); what it received must be a prefix of what it
 * expected. Requests whose replies never came make the model uncertain
 * (a counter in a range, a string unknown) until a later reply settles it.
 *
 * At the end: every stable subscriber got every confirmed message, the
 * shared counters add up, a new connection gets PONG, and INFO's
 * connected_clients comes back to what it was before the run. Any
 * violation prints one line (who, op, expected vs got) and the exit status
 * is 1; a hang past the bound prints what each thread was doing and exits
 * 3; bad usage or a daemon configured otherwise exits 2.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "lib/sha1.h"

/* ---- options and shared state ------------------------------------------ */

#define NCTR 4                  /* private counters per worker */
#define NDB 2                   /* databases 0 and 3 */
#define NSTABLE_CH 4            /* st:0..3 */
#define NCHURN_CH 8             /* ch:0..7 */
#define NGROUPS 4               /* shared:0..3 */
#define MAX_DEPTH 200
#define MAX_WORKERS 512
#define BIG_MAX (1 << 20)

static struct {
    const char *host;
    int port;
    uint64_t seed;
    int seconds;
    int workers;
    int stable_subs;
    int churn_subs;
    int monitors;
    int io_timeout_ms;
    bool reference;             /* Debian's redis-server, not cellgate */
} opt = { "127.0.0.1", 0, 0, 30, 64, 2, 6, 2, 60000, false };

static struct {
    long long hard_limit;
    long long pause_limit;
    long long busy_ms;
    long long maxclients;
    char io_threads[64];
} dconf;

static atomic_bool g_stop;
static atomic_int g_failed;
static int64_t g_end_ms;
/* CLIENT KILLs: started is bumped before one is sent, done after its
 * reply (or its failure). A connection opened when done was d can have
 * been reached by a kill only if started passed d. */
struct killc {
    atomic_uint_fast64_t started, done;
};
/* TYPE normal kills (every normal client may lose its socket). */
static struct killc g_kill_all;
/* The buster's windows: begin counts scripts sent, end scripts answered. */
static atomic_uint_fast64_t busy_begin, busy_end;
static pthread_rwlock_t busy_lock;
static pthread_mutex_t pause_token = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t flood_token = PTHREAD_MUTEX_INITIALIZER;
static atomic_int_fast64_t last_kill_all_ms, last_flood_ms, last_hard_ms;
static atomic_int stable_ready;
static atomic_bool workers_done;

static const char BUSY_LINE[] =
    "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
    "SHUTDOWN NOSAVE.\r\n";

static const char S_INCR[] = "return redis.call('INCR', KEYS[1])";
static const char S_PAIR[] = "return {redis.call('INCR', KEYS[1]), ARGV[1]}";
/* Spins until SCRIPT KILL; gives up by itself after 30 s of wall time. */
static const char S_SPIN[] =
    "local t = tonumber(redis.call('TIME')[1]) local i = 0 "
    "while true do i = i + 1 if i % 100000 == 0 and "
    "tonumber(redis.call('TIME')[1]) - t > 30 then return 'timeout' end end";
static char sha_incr[41], sha_pair[41], sha_spin[41];

/* Statistics (summed at the end). */
static atomic_uint_fast64_t st_requests, st_batches, st_lost, st_kills,
    st_kill_all, st_busy_replies, st_busy_windows, st_pauses, st_watch_won,
    st_watch_lost, st_pub_confirmed, st_msgs, st_mon_lines, st_mon_markers,
    st_floods, st_hard, st_big, st_slow, st_quits, st_mid, st_churn_conns,
    st_reply_modes, st_mon_reconnects;

/* What each thread is doing, for the hang report. */
#define MAX_THREADS (MAX_WORKERS + 64)
static const char *_Atomic thread_op[MAX_THREADS];
static char thread_name[MAX_THREADS][24];
static int nthreads;

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static bool
running(void)
{
    return !atomic_load(&g_stop) && now_ms() < g_end_ms;
}

/* ---- random ------------------------------------------------------------- */

struct rng {
    uint64_t s;
};

static uint64_t
rnd(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t
rnd_below(struct rng *r, uint64_t n)
{
    return n == 0 ? 0 : rnd(r) % n;
}

static bool
chance(struct rng *r, unsigned percent_x10)
{
    return rnd_below(r, 1000) < percent_x10;
}

/* ---- growable buffer ---------------------------------------------------- */

struct sbuf {
    char *p;
    size_t len, cap;
};

static void
sb_reserve(struct sbuf *b, size_t more)
{
    if (b->len + more + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + more + 1) {
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            fprintf(stderr, "stress: out of memory\n");
            _exit(2);
        }
        b->p = p;
        b->cap = cap;
    }
}

static void
sb_put(struct sbuf *b, const void *data, size_t n)
{
    sb_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void
sb_puts(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void
sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    sb_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void
sb_free(struct sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* One request in RESP2 multibulk: argv strings (NUL-terminated) except the
 * one at index big_at, whose bytes are big/big_len. */
static void
req_argv(struct sbuf *b, int argc, const char *const *argv, int big_at,
         const char *big, size_t big_len)
{
    sb_printf(b, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        const char *a = i == big_at ? big : argv[i];
        size_t n = i == big_at ? big_len : strlen(a);
        sb_printf(b, "$%zu\r\n", n);
        sb_put(b, a, n);
        sb_put(b, "\r\n", 2);
    }
}

/* req(b, "INCR", key, NULL) */
static void
req(struct sbuf *b, ...)
{
    const char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, b);
    const char *a;
    while (argc < 16 && (a = va_arg(ap, const char *)) != NULL) {
        argv[argc++] = a;
    }
    va_end(ap);
    req_argv(b, argc, argv, -1, NULL, 0);
}

/* Expected replies. */
static void
exp_int(struct sbuf *b, long long v)
{
    sb_printf(b, ":%lld\r\n", v);
}

static void
exp_bulk(struct sbuf *b, const char *s, size_t n)
{
    sb_printf(b, "$%zu\r\n", n);
    sb_put(b, s, n);
    sb_put(b, "\r\n", 2);
}

static void
exp_null(struct sbuf *b, int proto)
{
    sb_puts(b, proto == 3 ? "_\r\n" : "$-1\r\n");
}

static void
exp_null_array(struct sbuf *b, int proto)
{
    sb_puts(b, proto == 3 ? "_\r\n" : "*-1\r\n");
}

/* A value's bytes: printable (MONITOR shows them as they are), a function
 * of (seed, length) so a GET checks them without keeping them. */
static void
fill_value(char *out, size_t len, uint64_t seed)
{
    struct rng r = { seed };
    size_t i = 0;
    while (i < len) {
        uint64_t x = rnd(&r);
        for (int k = 0; k < 8 && i < len; k++, x >>= 8) {
            out[i++] = (char)('a' + (x & 0xff) % 26);
        }
    }
}

/* ---- failure reports ---------------------------------------------------- */

static void
escape(struct sbuf *o, const char *p, size_t n, size_t max)
{
    size_t lim = n < max ? n : max;
    for (size_t i = 0; i < lim; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\r') {
            sb_puts(o, "\\r");
        } else if (ch == '\n') {
            sb_puts(o, "\\n");
        } else if (ch == '"' || ch == '\\') {
            sb_printf(o, "\\%c", ch);
        } else if (ch < 32 || ch >= 127) {
            sb_printf(o, "\\x%02x", ch);
        } else {
            sb_put(o, &p[i], 1);
        }
    }
    if (n > lim) {
        sb_printf(o, "...(%zu bytes)", n);
    }
}

static void
failf(const char *who, const char *op, const char *fmt, ...)
{
    struct sbuf o = { 0 };
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    sb_reserve(&o, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(o.p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    o.len = (size_t)n;
    /* The first failures say what went wrong; what follows is mostly
     * their consequence (threads stopping). */
    static atomic_int printed;
    int k = atomic_fetch_add(&printed, 1);
    if (k < 3) {
        fprintf(stderr, "stress: FAIL %s op %s: %s\n", who, op, o.p);
    } else if (k == 3) {
        fprintf(stderr, "stress: (later failures not shown)\n");
    }
    fflush(stderr);
    sb_free(&o);
    atomic_store(&g_failed, 1);
    atomic_store(&g_stop, true);
}

/* expected vs got, from the first differing byte (with some context). */
static void
fail_mismatch(const char *who, const char *op, const char *exp, size_t en,
              const char *got, size_t gn)
{
    size_t i = 0;
    while (i < en && i < gn && exp[i] == got[i]) {
        i++;
    }
    size_t from = i > 40 ? i - 40 : 0;
    struct sbuf e = { 0 }, g = { 0 };
    escape(&e, exp + from, en - from, 200);
    escape(&g, got + from, gn - from, 200);
    failf(who, op, "expected \"%s\" got \"%s\" (first difference at byte %zu "
          "of %zu/%zu)", e.p ? e.p : "", g.p ? g.p : "", i, en, gn);
    sb_free(&e);
    sb_free(&g);
}

/* ---- RESP ---------------------------------------------------------------- */

static bool
parse_ll(const char *p, const char *end, long long *out)
{
    bool neg = false;
    long long v = 0;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    if (p == end || end - p > 18) {
        return false;
    }
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        v = v * 10 + (*p - '0');
    }
    *out = neg ? -v : v;
    return true;
}

/* The extent of one whole reply at p: 1 (its length in *used), 0 when more
 * bytes are needed, -1 when it is not RESP. */
static int
resp_scan(const char *p, size_t n, size_t *used, int depth)
{
    if (n == 0) {
        return 0;
    }
    if (depth > 16) {
        return -1;
    }
    const char *nl = memchr(p, '\n', n);
    if (nl == NULL) {
        return 0;               /* (MONITOR's lines can be megabytes) */
    }
    if (nl == p || nl[-1] != '\r') {
        return -1;
    }
    size_t line = (size_t)(nl - p) + 1;
    long long len;
    switch (p[0]) {
    case '+': case '-': case ':': case '_': case '#': case ',': case '(':
        *used = line;
        return 1;
    case '$': case '!': case '=':
        if (!parse_ll(p + 1, nl - 1, &len) || len < -1 ||
            (len == -1 && p[0] != '$')) {
            return -1;
        }
        if (len < 0) {
            *used = line;
            return 1;
        }
        if (n < line + (size_t)len + 2) {
            return 0;
        }
        if (p[line + len] != '\r' || p[line + len + 1] != '\n') {
            return -1;
        }
        *used = line + (size_t)len + 2;
        return 1;
    case '*': case '~': case '>': case '%': case '|': {
        if (!parse_ll(p + 1, nl - 1, &len) || len < -1 ||
            (len == -1 && p[0] != '*') || len > 10000000) {
            return -1;
        }
        if (len < 0) {
            *used = line;
            return 1;
        }
        if (p[0] == '%' || p[0] == '|') {
            len *= 2;
        }
        size_t off = line;
        for (long long i = 0; i < len; i++) {
            size_t u;
            int r = resp_scan(p + off, n - off, &u, depth + 1);
            if (r <= 0) {
                return r;
            }
            off += u;
        }
        *used = off;
        return 1;
    }
    default:
        return -1;
    }
}

/* A parsed reply (of bytes resp_scan() accepted). */
struct rv {
    char t;
    long long i;                /* ':' and lengths */
    const char *s;              /* '+', '-', '$', '=' (no "txt:" prefix) */
    size_t len;
    size_t n;                   /* aggregates: elements (maps: 2 per pair) */
    struct rv *el;
    bool null;
};

static size_t
rv_parse(const char *p, struct rv *v)
{
    const char *nl = strchr(p, '\n');
    size_t line = (size_t)(nl - p) + 1;
    memset(v, 0, sizeof(*v));
    v->t = p[0];
    long long len = 0;
    switch (p[0]) {
    case '$': case '=': case '!':
        parse_ll(p + 1, nl - 1, &len);
        if (len < 0) {
            v->null = true;
            return line;
        }
        v->s = p + line;
        v->len = (size_t)len;
        if (p[0] == '=' && len >= 4) {
            v->s += 4;
            v->len -= 4;
        }
        return line + (size_t)len + 2;
    case '*': case '~': case '>': case '%': case '|': {
        parse_ll(p + 1, nl - 1, &len);
        if (len < 0) {
            v->null = true;
            return line;
        }
        if (p[0] == '%' || p[0] == '|') {
            len *= 2;
        }
        v->n = (size_t)len;
        v->el = calloc(v->n ? v->n : 1, sizeof(*v->el));
        size_t off = line;
        for (size_t i = 0; i < v->n; i++) {
            off += rv_parse(p + off, &v->el[i]);
        }
        return off;
    }
    case ':':
        parse_ll(p + 1, nl - 1, &v->i);
        return line;
    case '_':
        v->null = true;
        return line;
    default:
        v->s = p + 1;
        v->len = line - 3;
        return line;
    }
}

static void
rv_free(struct rv *v)
{
    for (size_t i = 0; i < v->n; i++) {
        rv_free(&v->el[i]);
    }
    free(v->el);
    v->el = NULL;
    v->n = 0;
}

static bool
rv_is(const struct rv *v, const char *s)
{
    return (v->t == '$' || v->t == '+') && v->len == strlen(s) &&
           memcmp(v->s, s, v->len) == 0;
}

/* ---- connections -------------------------------------------------------- */

/* Per killable client: what a killer needs, and its kill count. */
struct victim {
    pthread_mutex_t mu;
    long long id;
    char addr[64];
    bool up;
    struct killc kills;
};
static struct victim *victims;
static int nvictims;

struct cx {
    int fd;
    char *buf;
    size_t len, off, cap;
    bool eof;
    int proto;
    long long id;
    char addr[64];
    struct killc *kills;            /* the victim entry's, or NULL */
    uint64_t all_mark, own_mark;    /* kills done at connect */
};

/* A lost connection is excused when a CLIENT KILL that could reach it was
 * not done yet when it connected. */
static bool
cx_kill_excused(const struct cx *c)
{
    return atomic_load(&g_kill_all.started) > c->all_mark ||
           (c->kills != NULL && atomic_load(&c->kills->started) > c->own_mark);
}

static void
cx_close(struct cx *c)
{
    if (c->fd >= 0) {
        close(c->fd);
    }
    c->fd = -1;
    c->len = c->off = 0;
    c->eof = false;
}

static void
cx_init(struct cx *c)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

static void
cx_free(struct cx *c)
{
    cx_close(c);
    free(c->buf);
    c->buf = NULL;
    c->cap = 0;
}

/* Connect (bounded): 0, or -1 with errno's text in why. */
static int
cx_open(struct cx *c, struct killc *kills, char *why, size_t wlen)
{
    cx_close(c);
    c->kills = kills;
    c->all_mark = atomic_load(&g_kill_all.done);
    c->own_mark = kills != NULL ? atomic_load(&kills->done) : 0;
    c->proto = 2;
    c->id = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, wlen, "socket: %s", strerror(errno));
        return -1;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)opt.port);
    inet_pton(AF_INET, opt.host, &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (errno != EINPROGRESS) {
            snprintf(why, wlen, "connect: %s", strerror(errno));
            close(fd);
            return -1;
        }
        struct pollfd pf = { fd, POLLOUT, 0 };
        int r = poll(&pf, 1, opt.io_timeout_ms);
        int err = 0;
        socklen_t el = sizeof(err);
        if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 ||
            err != 0) {
            snprintf(why, wlen, "connect: %s",
                     r <= 0 ? "timed out" : strerror(err));
            close(fd);
            return -1;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in la;
    socklen_t ll = sizeof(la);
    getsockname(fd, (struct sockaddr *)&la, &ll);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &la.sin_addr, ip, sizeof(ip));
    snprintf(c->addr, sizeof(c->addr), "%s:%d", ip, ntohs(la.sin_port));
    c->fd = fd;
    c->len = c->off = 0;
    c->eof = false;
    return 0;
}

static void
cx_compact(struct cx *c)
{
    if (c->off > 0 && (c->off == c->len || c->off > c->cap / 2)) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
}

/* Read what is there (wait up to timeout_ms): 1 bytes came, 0 EOF (or a
 * reset), -1 nothing within the time. */
static int
cx_fill(struct cx *c, int timeout_ms)
{
    if (c->eof) {
        return 0;
    }
    cx_compact(c);
    if (c->cap - c->len < 65536) {
        size_t cap = c->cap ? c->cap * 2 : 131072;
        while (cap - c->len < 65536) {
            cap *= 2;
        }
        char *p = realloc(c->buf, cap + 1);
        if (p == NULL) {
            fprintf(stderr, "stress: out of memory\n");
            _exit(2);
        }
        c->buf = p;
        c->cap = cap;
    }
    struct pollfd pf = { c->fd, POLLIN, 0 };
    int r = poll(&pf, 1, timeout_ms);
    if (r <= 0) {
        return -1;
    }
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (n > 0) {
        c->len += (size_t)n;
        c->buf[c->len] = '\0';
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return -1;
    }
    c->eof = true;
    return 0;
}

/* Send everything (reading meanwhile, so a server that stops reading us
 * until we read cannot deadlock the two): 0, 1 when the peer closed, -1
 * on timeout. */
static int
cx_send(struct cx *c, const char *p, size_t n)
{
    int64_t deadline = now_ms() + opt.io_timeout_ms;
    while (n > 0) {
        if (c->eof) {
            return 1;
        }
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
            return 1;           /* EPIPE, ECONNRESET: the server closed us */
        }
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            return -1;
        }
        struct pollfd pf = { c->fd, POLLOUT | POLLIN, 0 };
        if (poll(&pf, 1, (int)(left < 100 ? left : 100)) > 0 &&
            (pf.revents & (POLLIN | POLLHUP | POLLERR))) {
            cx_fill(c, 0);
        }
    }
    return 0;
}

/* The next whole reply: 1 (*p, *n: its bytes, not consumed), 0 EOF (*p,
 * *n: the partial bytes left), -1 timeout, -2 bytes that are not RESP. */
static int
cx_next(struct cx *c, const char **p, size_t *n, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        size_t used;
        int r = resp_scan(c->buf + c->off, c->len - c->off, &used, 0);
        if (r == 1) {
            *p = c->buf + c->off;
            *n = used;
            return 1;
        }
        if (r < 0) {
            *p = c->buf + c->off;
            *n = c->len - c->off;
            return -2;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            *p = c->buf ? c->buf + c->off : "";
            *n = c->len - c->off;
            return -1;
        }
        int f = cx_fill(c, (int)left);
        if (f == 0) {
            *p = c->buf ? c->buf + c->off : "";
            *n = c->len - c->off;
            return 0;
        }
    }
}

static void
cx_consume(struct cx *c, size_t n)
{
    c->off += n;
}

static size_t
cx_unread(const struct cx *c)
{
    return c->len - c->off;
}

/* EOF within timeout_ms with nothing more: 1; bytes came: 0; timeout -1. */
static int
cx_expect_eof(struct cx *c, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    while (cx_unread(c) == 0) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            return -1;
        }
        if (cx_fill(c, (int)left) == 0) {
            return cx_unread(c) == 0 ? 1 : 0;
        }
    }
    return 0;
}

/* One request, one reply: the reply's bytes in out (consumed). 1 ok, 0
 * EOF, -1 timeout or garbage (reported). */
static int
cx_call(struct cx *c, const char *who, const char *op, struct sbuf *reqb,
        struct sbuf *out)
{
    const char *p;
    size_t n;
    out->len = 0;
    int s = cx_send(c, reqb->p, reqb->len);
    if (s == -1) {
        failf(who, op, "timed out sending a request");
        return -1;
    }
    int r = cx_next(c, &p, &n, opt.io_timeout_ms);
    if (r == 1) {
        sb_put(out, p, n);
        cx_consume(c, n);
        return 1;
    }
    if (r == 0) {
        sb_put(out, p, n);
        return 0;
    }
    struct sbuf e = { 0 };
    escape(&e, p, n, 300);
    failf(who, op, "%s; received so far \"%s\"",
          r == -1 ? "no reply within the I/O timeout" : "not RESP", e.p ? e.p : "");
    sb_free(&e);
    return -1;
}

/* ---- the shared registers ---------------------------------------------- */

/* Stable subscriptions: which seqs of each worker each subscriber got. */
struct bitmap {
    uint8_t *bits;
    size_t nbits;
};

static void
bm_set(struct bitmap *b, uint64_t i)
{
    if (i >= b->nbits) {
        size_t n = b->nbits ? b->nbits : 4096;
        while (n <= i) {
            n *= 2;
        }
        uint8_t *p = realloc(b->bits, n / 8);
        if (p == NULL) {
            _exit(2);
        }
        memset(p + b->nbits / 8, 0, (n - b->nbits) / 8);
        b->bits = p;
        b->nbits = n;
    }
    b->bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

static bool
bm_get(const struct bitmap *b, uint64_t i)
{
    return i < b->nbits && (b->bits[i / 8] & (1u << (i % 8)));
}

/* Per worker: the last seq it sent (before sending), and the seqs of its
 * confirmed stable publishes (read after the join). */
static atomic_uint_fast64_t *pub_sent;

/* The shared WATCH counters: increments known to have run, and those whose
 * fate is unknown (the connection went before the reply). */
static atomic_int_fast64_t shared_done[NGROUPS], shared_maybe[NGROUPS];

/* The payload of message seq from worker w on channel index ch. */
static void
pub_payload(struct sbuf *b, int w, uint64_t seq, int ch)
{
    size_t pad = (size_t)((seq * 7 + (uint64_t)w) % 97);
    sb_printf(b, "w%d:%" PRIu64 ":%d:%zu:", w, seq, ch, pad);
    for (size_t j = 0; j < pad; j++) {
        char ch2 = (char)('a' + (w * 31 + (int)(seq % 1000) * 17 + (int)j) % 26);
        sb_put(b, &ch2, 1);
    }
}

/* Check a message payload; the publisher and seq out. */
static bool
pub_check(const char *s, size_t n, int ch_expected, int *w_out,
          uint64_t *seq_out)
{
    int w, ch;
    unsigned long long seq;
    size_t pad;
    int used = 0;
    char tmp[96];
    size_t cut = n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1;
    memcpy(tmp, s, cut);
    tmp[cut] = '\0';
    if (sscanf(tmp, "w%d:%llu:%d:%zu:%n", &w, &seq, &ch, &pad, &used) != 4 ||
        used <= 0 || w < 0 || w >= opt.workers) {
        return false;
    }
    if (ch_expected >= 0 && ch != ch_expected) {
        return false;
    }
    struct sbuf e = { 0 };
    pub_payload(&e, w, seq, ch);
    bool ok = e.len == n && memcmp(e.p, s, n) == 0;
    sb_free(&e);
    *w_out = w;
    *seq_out = seq;
    return ok;
}

/* ---- workers: the model of their keys ------------------------------------ */

/* A counter: its value is in [lo, hi] (lo == hi once a reply says). */
struct ctr {
    long long lo, hi;
};

enum str_state { STR_ABSENT, STR_KNOWN, STR_UNKNOWN };

struct strm {
    enum str_state st;
    uint64_t seed;
    size_t len;
};

/* Keys have the same names in databases 0 and 3; each has its model. */
struct dbm {
    struct ctr c[NCTR];
    struct strm s;
    int thr_calls;              /* CL.THROTTLE calls on this round's key */
};

enum opk {
    K_INCR, K_EVAL_INCR, K_EVALSHA_INCR, K_EVAL_PAIR, K_GETNUM, K_ECHO,
    K_PING, K_SET, K_GET, K_THROTTLE, K_SELECT, K_WAIT, K_PUBLISH,
    K_SHARED_INCR, K_CINFO, K_CLIST, K_INFO, K_EXISTS0, K_OK, K_ERR, K_EXEC,
    K_EXEC_NIL, K_WATCH_GET, K_EXEC_SHARED, K_QUIT, K_SCRIPT_LOAD, K_MUTED
};

static const char *const kind_name[] = {
    "INCR", "EVAL(INCR)", "EVALSHA(INCR)", "EVAL(pair)", "GET(counter)",
    "ECHO", "PING", "SET", "GET", "CL.THROTTLE", "SELECT", "WAIT", "PUBLISH",
    "INCR(shared)", "CLIENT INFO", "CLIENT LIST", "INFO", "EXISTS", "+OK",
    "error", "EXEC", "EXEC(watch lost)", "GET(watched)", "EXEC(shared)",
    "QUIT", "SCRIPT LOAD", "muted"
};

struct op {
    enum opk k;
    bool muted;                 /* CLIENT REPLY OFF/SKIP: no reply */
    bool queued;                /* inside MULTI: +QUEUED, runs at EXEC */
    int i;                      /* counter, database index, group, channel */
    int n;                      /* EXEC: how many queued ops precede it */
    uint64_t seed;              /* SET's value, PUBLISH's seq */
    size_t len;
    bool stable;                /* PUBLISH to st:* */
    const char *text;           /* K_ERR: the whole expected line */
    char tag[40];
};

#define MAX_OPS (MAX_DEPTH + 32)

struct worker {
    int idx, tid;
    char name[24];
    char who[160];              /* name, server id, address: for reports */
    struct rng r;
    struct cx main, side;
    struct dbm db[NDB];
    int cur_db;                 /* index into db[]: 0 is database 0, 1 is 3 */
    int thr_round;
    bool thr_dirty;
    long long watch_v;          /* GET of the watched shared key */
    int watch_g;
    int txn_seq;                /* numbers this worker's transactions */
    uint64_t pubseq;
    uint64_t *confirmed;        /* seqs of stable publishes answered */
    size_t nconf, capconf;
    struct op ops[MAX_OPS];
    int nops;
    struct sbuf reqb, expb, tmp;
    char *valbuf;               /* BIG_MAX bytes */
    char key_c[NCTR][32], key_s[32], key_t[40], key_tmp[32];
};

static const char *const db_text[NDB] = { "0", "3" };

enum { B_FAIL = -1, B_OK = 0, B_LOST = 1 };

static void
set_op(struct worker *w, const char *what)
{
    atomic_store(&thread_op[w->tid], what);
}

static struct op *
add_op(struct worker *w, enum opk k)
{
    struct op *o = &w->ops[w->nops++];
    memset(o, 0, sizeof(*o));
    o->k = k;
    return o;
}

static struct ctr *
ctr_of(struct worker *w, int i)
{
    return &w->db[w->cur_db].c[i];
}

/* The counter in [lo, hi] was incremented once (a muted INCR that ran). */
static void
ctr_blind(struct ctr *c)
{
    c->lo++;
    c->hi++;
}

/* ---- building requests ---------------------------------------------------- */

static void
b_incr(struct worker *w, int i)
{
    add_op(w, K_INCR)->i = i;
    req(&w->reqb, "INCR", w->key_c[i], NULL);
}

static void
b_eval_incr(struct worker *w, int i, int how)
{
    if (how == 0) {
        add_op(w, K_EVAL_INCR)->i = i;
        req(&w->reqb, "EVAL", S_INCR, "1", w->key_c[i], NULL);
    } else if (how == 1) {
        add_op(w, K_EVALSHA_INCR)->i = i;
        req(&w->reqb, "EVALSHA", sha_incr, "1", w->key_c[i], NULL);
    } else {
        struct op *o = add_op(w, K_EVAL_PAIR);
        o->i = i;
        snprintf(o->tag, sizeof(o->tag), "%s:p%" PRIu64, w->name,
                 rnd_below(&w->r, 1000000));
        if (chance(&w->r, 500)) {
            req(&w->reqb, "EVALSHA", sha_pair, "1", w->key_c[i], o->tag, NULL);
        } else {
            req(&w->reqb, "EVAL", S_PAIR, "1", w->key_c[i], o->tag, NULL);
        }
    }
}

static void
b_getnum(struct worker *w, int i)
{
    add_op(w, K_GETNUM)->i = i;
    req(&w->reqb, "GET", w->key_c[i], NULL);
}

static void
b_echo(struct worker *w, bool ping)
{
    struct op *o = add_op(w, ping ? K_PING : K_ECHO);
    snprintf(o->tag, sizeof(o->tag), "%s:%c%" PRIu64, w->name, ping ? 'p' : 'e',
             rnd(&w->r) % 100000000);
    req(&w->reqb, ping ? "PING" : "ECHO", o->tag, NULL);
}

static size_t
pick_len(struct worker *w, bool big)
{
    if (!big) {
        return chance(&w->r, 100) ? 0 : rnd_below(&w->r, 2000);
    }
    if (chance(&w->r, 80)) {
        return BIG_MAX;
    }
    return 65537 + rnd_below(&w->r, 400000);
}

static void
b_set(struct worker *w, size_t len)
{
    struct op *o = add_op(w, K_SET);
    o->seed = rnd(&w->r);
    o->len = len;
    fill_value(w->valbuf, len, o->seed);
    const char *argv[3] = { "SET", w->key_s, NULL };
    req_argv(&w->reqb, 3, argv, 2, w->valbuf, len);
}

static void
b_get(struct worker *w)
{
    add_op(w, K_GET);
    req(&w->reqb, "GET", w->key_s, NULL);
}

static void
b_throttle(struct worker *w)
{
    add_op(w, K_THROTTLE);
    req(&w->reqb, "CL.THROTTLE", w->key_t, "4", "1", "86400", NULL);
}

static void
b_select(struct worker *w, int dbi)
{
    add_op(w, K_SELECT)->i = dbi;
    req(&w->reqb, "SELECT", db_text[dbi], NULL);
}

static void
b_publish(struct worker *w, bool stable)
{
    struct op *o = add_op(w, K_PUBLISH);
    o->stable = stable;
    o->i = (int)rnd_below(&w->r, stable ? NSTABLE_CH : NCHURN_CH);
    o->seed = ++w->pubseq;
    atomic_store(&pub_sent[w->idx], o->seed);
    char ch[16];
    snprintf(ch, sizeof(ch), "%s:%d", stable ? "st" : "ch", o->i);
    w->tmp.len = 0;
    pub_payload(&w->tmp, w->idx, o->seed, o->i);
    const char *argv[3] = { "PUBLISH", ch, NULL };
    req_argv(&w->reqb, 3, argv, 2, w->tmp.p, w->tmp.len);
}

static void
b_shared_incr(struct worker *w)
{
    struct op *o = add_op(w, K_SHARED_INCR);
    o->i = (int)rnd_below(&w->r, NGROUPS);
    char key[24];
    snprintf(key, sizeof(key), "shared:%d", o->i);
    req(&w->reqb, "INCR", key, NULL);
}

static void
b_ok(struct worker *w, ...)
{
    add_op(w, K_OK);
    const char *argv[8];
    int argc = 0;
    va_list ap;
    va_start(ap, w);
    const char *a;
    while (argc < 8 && (a = va_arg(ap, const char *)) != NULL) {
        argv[argc++] = a;
    }
    va_end(ap);
    req_argv(&w->reqb, argc, argv, -1, NULL, 0);
}

/* ---- checking replies ---------------------------------------------------- */

/* Expected bytes of op's reply when the model makes it exact (true). */
static bool
expect(struct worker *w, const struct op *o, struct sbuf *e)
{
    struct dbm *d = &w->db[w->cur_db];
    struct ctr *c;
    e->len = 0;
    switch (o->k) {
    case K_INCR: case K_EVAL_INCR: case K_EVALSHA_INCR:
        c = ctr_of(w, o->i);
        if (c->lo != c->hi) {
            return false;
        }
        exp_int(e, c->lo + 1);
        return true;
    case K_EVAL_PAIR:
        c = ctr_of(w, o->i);
        if (c->lo != c->hi) {
            return false;
        }
        sb_puts(e, "*2\r\n");
        exp_int(e, c->lo + 1);
        exp_bulk(e, o->tag, strlen(o->tag));
        return true;
    case K_GETNUM:
        c = ctr_of(w, o->i);
        if (c->lo != c->hi) {
            return false;
        }
        if (c->lo == 0) {
            exp_null(e, w->main.proto);
        } else {
            char num[32];
            int n = snprintf(num, sizeof(num), "%lld", c->lo);
            exp_bulk(e, num, (size_t)n);
        }
        return true;
    case K_ECHO: case K_PING:
        exp_bulk(e, o->tag, strlen(o->tag));
        return true;
    case K_SET: case K_OK: case K_SELECT:
        sb_puts(e, "+OK\r\n");
        return true;
    case K_QUIT:
        sb_puts(e, "+OK\r\n");
        return true;
    case K_GET:
        if (d->s.st == STR_UNKNOWN) {
            return false;
        }
        if (d->s.st == STR_ABSENT) {
            exp_null(e, w->main.proto);
        } else {
            sb_printf(e, "$%zu\r\n", d->s.len);
            sb_reserve(e, d->s.len + 2);
            fill_value(e->p + e->len, d->s.len, d->s.seed);
            e->len += d->s.len;
            sb_put(e, "\r\n", 2);
        }
        return true;
    case K_WAIT: case K_EXISTS0:
        sb_puts(e, ":0\r\n");
        return true;
    case K_ERR:
        sb_puts(e, o->text);
        return true;
    case K_EXEC_NIL:
        exp_null_array(e, w->main.proto);
        return true;
    case K_SCRIPT_LOAD:
        exp_bulk(e, o->tag, strlen(o->tag));
        return true;
    default:
        return false;
    }
}

/* A reply that was exactly as expected: the model moves on. */
static void
apply_exact(struct worker *w, const struct op *o)
{
    struct ctr *c;
    switch (o->k) {
    case K_INCR: case K_EVAL_INCR: case K_EVALSHA_INCR: case K_EVAL_PAIR:
        c = ctr_of(w, o->i);
        c->lo = c->hi = c->lo + 1;
        break;
    case K_SET:
        w->db[w->cur_db].s = (struct strm){ STR_KNOWN, o->seed, o->len };
        break;
    case K_SELECT:
        w->cur_db = o->i;
        break;
    default:
        break;
    }
}

/* A muted request that ran (a later reply came). */
static void
apply_blind(struct worker *w, const struct op *o)
{
    switch (o->k) {
    case K_INCR: case K_EVAL_INCR: case K_EVALSHA_INCR:
        ctr_blind(ctr_of(w, o->i));
        break;
    case K_SET: case K_SELECT:
        apply_exact(w, o);
        break;
    default:
        break;
    }
}

/* A request whose reply never came: it may or may not have run, in
 * either database. */
static void
apply_uncertain(struct worker *w, const struct op *o)
{
    switch (o->k) {
    case K_INCR: case K_EVAL_INCR: case K_EVALSHA_INCR: case K_EVAL_PAIR:
        for (int d = 0; d < NDB; d++) {
            w->db[d].c[o->i].hi++;
        }
        break;
    case K_SET:
        for (int d = 0; d < NDB; d++) {
            w->db[d].s.st = STR_UNKNOWN;
        }
        break;
    case K_THROTTLE:
        w->thr_dirty = true;
        break;
    case K_SHARED_INCR:
        atomic_fetch_add(&shared_maybe[o->i], 1);
        break;
    case K_EXEC_SHARED:
        atomic_fetch_add(&shared_maybe[w->watch_g], 1);
        break;
    default:
        break;
    }
}

static bool
rv_int_in(const struct rv *v, long long lo, long long hi)
{
    return v->t == ':' && v->i >= lo && v->i <= hi;
}

/* A bulk (or verbatim) string holding a decimal integer. */
static bool
rv_num(const struct rv *v, long long *out)
{
    if ((v->t != '$' && v->t != '=') || v->null || v->len == 0 || v->len > 19) {
        return false;
    }
    return parse_ll(v->s, v->s + v->len, out);
}

static bool
line_has(const char *s, size_t n, const char *needle)
{
    return memmem(s, n, needle, strlen(needle)) != NULL;
}

/* The replies no model makes exact: shape and bounds, then the model. */
static int
check_parsed(struct worker *w, const struct op *o, const char *p, size_t n)
{
    struct rv v;
    rv_parse(p, &v);
    const char *bad = NULL;
    char want[160];
    struct ctr *c;
    long long x;
    struct dbm *d = &w->db[w->cur_db];
    switch (o->k) {
    case K_INCR: case K_EVAL_INCR: case K_EVALSHA_INCR:
        c = ctr_of(w, o->i);
        if (!rv_int_in(&v, c->lo + 1, c->hi + 1)) {
            snprintf(want, sizeof(want), "an integer in [%lld, %lld]",
                     c->lo + 1, c->hi + 1);
            bad = want;
            break;
        }
        c->lo = c->hi = v.i;
        break;
    case K_EVAL_PAIR:
        c = ctr_of(w, o->i);
        if (v.t != '*' || v.n != 2 || !rv_int_in(&v.el[0], c->lo + 1, c->hi + 1) ||
            !rv_is(&v.el[1], o->tag)) {
            snprintf(want, sizeof(want), "[an integer in [%lld, %lld], \"%s\"]",
                     c->lo + 1, c->hi + 1, o->tag);
            bad = want;
            break;
        }
        c->lo = c->hi = v.el[0].i;
        break;
    case K_GETNUM:
        c = ctr_of(w, o->i);
        x = 0;
        if (!v.null && !rv_num(&v, &x)) {
            x = -1;
        }
        if (x < c->lo || x > c->hi || (x == 0 && !v.null)) {
            snprintf(want, sizeof(want), "a number in [%lld, %lld] (nil for 0)",
                     c->lo, c->hi);
            bad = want;
            break;
        }
        c->lo = c->hi = x;
        break;
    case K_GET:
        if (!v.null && v.t != '$') {
            bad = "a bulk string or nil (value unknown)";
        }
        break;
    case K_THROTTLE: {
        int k = d->thr_calls;
        bool limited = k >= 5;
        long long rem = limited ? 0 : 4 - k;
        long long reset_hi = (long long)(limited ? 5 : k + 1) * 86400;
        if (v.t != '*' || v.n != 5 || v.el[0].t != ':' ||
            v.el[0].i != (limited ? 1 : 0) || v.el[1].t != ':' ||
            v.el[1].i != 5 || v.el[2].t != ':' || v.el[2].i != rem ||
            v.el[3].t != ':' ||
            (limited ? (v.el[3].i < 86400 - 300 || v.el[3].i > 86400)
                     : v.el[3].i != -1) ||
            v.el[4].t != ':' || v.el[4].i < reset_hi - 300 ||
            v.el[4].i > reset_hi) {
            snprintf(want, sizeof(want),
                     "[%d, 5, %lld, %s, %lld-300..%lld] for call %d on %s",
                     limited, rem, limited ? "86100..86400" : "-1", reset_hi,
                     reset_hi, k + 1, w->key_t);
            bad = want;
            break;
        }
        d->thr_calls++;
        break;
    }
    case K_PUBLISH: {
        long long lo = o->stable ? 2LL * opt.stable_subs : 0;
        long long hi = 2LL * (opt.stable_subs + opt.churn_subs);
        if (!rv_int_in(&v, lo, hi)) {
            snprintf(want, sizeof(want), "an integer in [%lld, %lld]", lo, hi);
            bad = want;
            break;
        }
        if (o->stable) {
            if (w->nconf == w->capconf) {
                w->capconf = w->capconf ? w->capconf * 2 : 1024;
                w->confirmed = realloc(w->confirmed,
                                       w->capconf * sizeof(*w->confirmed));
            }
            w->confirmed[w->nconf++] = o->seed;
        }
        atomic_fetch_add(&st_pub_confirmed, 1);
        break;
    }
    case K_SHARED_INCR:
        if (!rv_int_in(&v, 1, LLONG_MAX)) {
            bad = "a positive integer";
            break;
        }
        if (w->cur_db == 0) {
            atomic_fetch_add(&shared_done[o->i], 1);
        }
        break;
    case K_CINFO: case K_CLIST: {
        if ((v.t != '$' && v.t != '=') || v.null || v.len == 0 ||
            v.s[v.len - 1] != '\n') {
            bad = "a bulk string of lines";
            break;
        }
        char self[128];
        snprintf(self, sizeof(self), "id=%lld addr=%s ", w->main.id,
                 w->main.addr);
        char cmd[40], name[40];
        snprintf(cmd, sizeof(cmd), " cmd=client|%s",
                 o->k == K_CINFO ? "info" : "list");
        snprintf(name, sizeof(name), " name=%s ", w->name);
        int mine = 0, lines = 0;
        const char *s = v.s, *end = v.s + v.len;
        while (s < end && !bad) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            size_t ln = (size_t)(nl - s);
            lines++;
            if (ln < 4 || memcmp(s, "id=", 3) != 0) {
                bad = "every line to start with id=";
            } else if (ln >= strlen(self) && memcmp(s, self, strlen(self)) == 0) {
                mine++;
                if (!line_has(s, ln, cmd) || !line_has(s, ln, name)) {
                    snprintf(want, sizeof(want), "our line to hold%s and%s",
                             cmd, name);
                    bad = want;
                }
            }
            s = nl + 1;
        }
        if (!bad && (mine != 1 || (o->k == K_CINFO && lines != 1))) {
            snprintf(want, sizeof(want), "our line (%s) once%s", self,
                     o->k == K_CINFO ? ", alone" : "");
            bad = want;
        }
        if (!bad && lines > dconf.maxclients + 16) {
            bad = "no more lines than maxclients";
        }
        break;
    }
    case K_INFO: {
        const char *f;
        if ((v.t != '$' && v.t != '=') || v.null ||
            (f = memmem(v.s, v.len, "\r\nconnected_clients:", 20)) == NULL ||
            !line_has(v.s, v.len, "# Clients\r\n")) {
            bad = "INFO text with # Clients and connected_clients";
            break;
        }
        x = strtoll(f + 20, NULL, 10);
        if (x < 1 || x > dconf.maxclients) {
            bad = "connected_clients in [1, maxclients]";
        }
        break;
    }
    case K_WATCH_GET:
        x = 0;
        if (!v.null && !rv_num(&v, &x)) {
            bad = "nil or a number";
            break;
        }
        w->watch_v = x;
        break;
    case K_EXEC_SHARED:
        if (v.null && (v.t == '*' || v.t == '_')) {
            atomic_fetch_add(&st_watch_lost, 1);
            break;
        }
        if (v.t != '*' || v.n != 1 || v.el[0].t != ':' ||
            v.el[0].i != w->watch_v + 1) {
            snprintf(want, sizeof(want), "nil, or [%lld] (WATCH saw %lld)",
                     w->watch_v + 1, w->watch_v);
            bad = want;
            break;
        }
        atomic_fetch_add(&shared_done[w->watch_g], 1);
        atomic_fetch_add(&st_watch_won, 1);
        break;
    default:
        bad = "(an op with no parsed check)";
        break;
    }
    rv_free(&v);
    if (bad != NULL) {
        struct sbuf g = { 0 };
        escape(&g, p, n, 300);
        failf(w->who, kind_name[o->k], "expected %s, got \"%s\"", bad,
              g.p ? g.p : "");
        sb_free(&g);
        return -1;
    }
    return 0;
}

static bool
busyable(const struct op *o)
{
    return !o->queued && o->k != K_QUIT && o->k != K_EXEC &&
           o->k != K_EXEC_NIL && o->k != K_EXEC_SHARED && o->k != K_OK;
}

static int check_exec(struct worker *w, int at, const char *p, size_t n);

/* One reply for op o (bytes p, n). busy: a -BUSY is acceptable now. */
static int
check_one(struct worker *w, int at, const char *p, size_t n, bool busy)
{
    const struct op *o = &w->ops[at];
    atomic_fetch_add(&st_requests, 1);
    if (n == sizeof(BUSY_LINE) - 1 && memcmp(p, BUSY_LINE, n) == 0) {
        if (busy && busyable(o)) {
            atomic_fetch_add(&st_busy_replies, 1);
            if (o->k == K_THROTTLE || o->k == K_PUBLISH) {
                /* did not run: nothing to count */
            }
            return 0;
        }
        failf(w->who, kind_name[o->k], "-BUSY while no script could be "
              "running (or for a command that is never refused)");
        return -1;
    }
    if (o->queued) {
        if (n != 9 || memcmp(p, "+QUEUED\r\n", 9) != 0) {
            fail_mismatch(w->who, kind_name[o->k], "+QUEUED\r\n", 9, p, n);
            return -1;
        }
        return 0;
    }
    if (o->k == K_EXEC) {
        return check_exec(w, at, p, n);
    }
    if (expect(w, o, &w->expb)) {
        if (w->expb.len != n || memcmp(w->expb.p, p, n) != 0) {
            fail_mismatch(w->who, kind_name[o->k], w->expb.p, w->expb.len, p, n);
            return -1;
        }
        apply_exact(w, o);
        return 0;
    }
    return check_parsed(w, o, p, n);
}

/* EXEC of the o->n queued ops before it: each element checked as if it
 * were that op's own reply. */
static int
check_exec(struct worker *w, int at, const char *p, size_t n)
{
    struct op *x = &w->ops[at];
    char head[16];
    int hl = snprintf(head, sizeof(head), "*%d\r\n", x->n);
    if (n < (size_t)hl || memcmp(p, head, (size_t)hl) != 0) {
        fail_mismatch(w->who, "EXEC", head, (size_t)hl, p, n < 64 ? n : 64);
        return -1;
    }
    size_t off = (size_t)hl;
    int seen = 0;
    for (int i = 0; i < at && seen < x->n; i++) {
        if (!w->ops[i].queued || w->ops[i].n != x->i) {
            continue;
        }
        size_t used;
        if (resp_scan(p + off, n - off, &used, 0) != 1) {
            failf(w->who, "EXEC", "element %d is not a whole reply", seen);
            return -1;
        }
        w->ops[i].queued = false;       /* now it runs */
        int r = check_one(w, i, p + off, used, false);
        w->ops[i].queued = true;
        if (r != 0) {
            return -1;
        }
        off += used;
        seen++;
    }
    if (off != n || seen != x->n) {
        failf(w->who, "EXEC", "%d elements expected, reply of %zu bytes", x->n, n);
        return -1;
    }
    return 0;
}

/* Mark ops from..to-1 (muted ones, whose later reply came) as run. */
static void
resolve_muted(struct worker *w, int from, int to)
{
    for (int i = from; i < to; i++) {
        if (w->ops[i].muted && !w->ops[i].queued) {
            apply_blind(w, &w->ops[i]);
        }
    }
}

/* The connection went (EOF) while waiting for op at; p, n: the partial
 * reply. Checks the partial bytes, makes the unanswered ops uncertain. */
static int
lost_at(struct worker *w, int from, int at, const char *p, size_t n,
        bool busy, bool expected)
{
    if (at < w->nops && n > 0) {
        const struct op *o = &w->ops[at];
        bool ok = false;
        if (busy && busyable(o) && n <= sizeof(BUSY_LINE) - 1 &&
            memcmp(p, BUSY_LINE, n) == 0) {
            ok = true;
        } else if (o->queued) {
            ok = n <= 9 && memcmp(p, "+QUEUED\r\n", n) == 0;
        } else if (o->k != K_EXEC && expect(w, o, &w->expb)) {
            ok = n <= w->expb.len && memcmp(p, w->expb.p, n) == 0;
            if (!ok) {
                fail_mismatch(w->who, kind_name[o->k], w->expb.p,
                              w->expb.len, p, n);
                return B_FAIL;
            }
        } else {
            ok = true;          /* no exact form: any prefix */
        }
        if (!ok) {
            struct sbuf g = { 0 };
            escape(&g, p, n, 200);
            failf(w->who, kind_name[o->k], "connection closed after \"%s\", "
                  "not a prefix of the reply expected", g.p);
            sb_free(&g);
            return B_FAIL;
        }
    }
    if (!expected && !cx_kill_excused(&w->main)) {
        failf(w->who, at < w->nops ? kind_name[w->ops[at].k] : "(after)",
              "connection closed by the server, and no CLIENT KILL could "
              "have reached it (request %d of %d)", at + 1, w->nops);
        return B_FAIL;
    }
    for (int i = from; i < w->nops; i++) {
        struct op *o = &w->ops[i];
        if (o->queued) {
            continue;           /* its EXEC decides */
        }
        if (o->k == K_EXEC) {
            for (int j = 0; j < i; j++) {
                if (w->ops[j].queued && w->ops[j].n == o->i) {
                    apply_uncertain(w, &w->ops[j]);
                }
            }
        }
        apply_uncertain(w, o);
    }
    atomic_fetch_add(&st_lost, 1);
    return B_LOST;
}

static void victim_down(struct worker *w);

/* Send w->reqb on main and check every reply of w->ops. delay_ms: wait
 * that long before reading (a slow reader). expect_eof: the last request
 * closes the connection (QUIT). */
static int
run_batch(struct worker *w, int delay_ms, bool expect_eof)
{
    uint64_t end0 = atomic_load(&busy_end);
    atomic_fetch_add(&st_batches, 1);
    int s = cx_send(&w->main, w->reqb.p, w->reqb.len);
    if (s < 0) {
        failf(w->who, "send", "timed out sending %zu bytes of requests",
              w->reqb.len);
        return B_FAIL;
    }
    if (delay_ms > 0) {
        sleep_ms(delay_ms);
    }
    int unresolved = 0;
    for (int at = 0; at < w->nops; at++) {
        if (w->ops[at].muted) {
            continue;
        }
        const char *p;
        size_t n;
        int r = cx_next(&w->main, &p, &n, opt.io_timeout_ms);
        bool busy = atomic_load(&busy_begin) > end0;
        if (r == 1) {
            resolve_muted(w, unresolved, at);
            unresolved = at + 1;
            if (check_one(w, at, p, n, busy) != 0) {
                return B_FAIL;
            }
            cx_consume(&w->main, n);
            continue;
        }
        if (r == 0) {
            int l = lost_at(w, unresolved, at, p, n, busy, false);
            victim_down(w);
            cx_close(&w->main);
            return l;
        }
        struct sbuf g = { 0 };
        escape(&g, p, n, 300);
        failf(w->who, kind_name[w->ops[at].k], "%s (request %d of %d); "
              "received \"%s\"", r == -1 ? "no reply within the I/O timeout"
              : "bytes that are not RESP", at + 1, w->nops, g.p ? g.p : "");
        sb_free(&g);
        return B_FAIL;
    }
    if (expect_eof) {
        int e = cx_expect_eof(&w->main, opt.io_timeout_ms);
        if (e != 1) {
            failf(w->who, "QUIT", e == 0 ? "bytes after the last reply "
                  "instead of the connection closing" : "the connection "
                  "stayed open");
            return B_FAIL;
        }
        victim_down(w);
        cx_close(&w->main);
        return B_LOST;
    }
    return B_OK;
}

static void
batch_reset(struct worker *w)
{
    w->nops = 0;
    w->reqb.len = 0;
}

/* Between batches: a throttle key called often enough (or whose fate is
 * unknown) is replaced by a fresh one. */
static void
rotate_throttle(struct worker *w)
{
    bool rot = w->thr_dirty;
    for (int d = 0; d < NDB; d++) {
        rot = rot || w->db[d].thr_calls >= 7;
    }
    if (rot) {
        w->thr_round++;
        w->thr_dirty = false;
        for (int d = 0; d < NDB; d++) {
            w->db[d].thr_calls = 0;
        }
        snprintf(w->key_t, sizeof(w->key_t), "w%d:t:%d", w->idx, w->thr_round);
    }
}

/* ---- workers: connections ------------------------------------------------ */

static void
victim_up(int vi, const struct cx *c)
{
    struct victim *v = &victims[vi];
    pthread_mutex_lock(&v->mu);
    v->id = c->id;
    snprintf(v->addr, sizeof(v->addr), "%s", c->addr);
    v->up = true;
    pthread_mutex_unlock(&v->mu);
}

static void
victim_down(struct worker *w)
{
    struct victim *v = &victims[w->idx];
    pthread_mutex_lock(&v->mu);
    v->up = false;
    pthread_mutex_unlock(&v->mu);
}

/* Connect main, and introduce it (HELLO 3 now and then, CLIENT SETNAME,
 * CLIENT ID), under the busy read lock: B_OK, B_LOST (killed meanwhile,
 * excused), B_FAIL. */
static int
setup_once(struct worker *w)
{
    char why[128];
    if (cx_open(&w->main, &victims[w->idx].kills, why, sizeof(why)) != 0) {
        failf(w->who, "connect", "%s", why);
        return B_FAIL;
    }
    w->cur_db = 0;
    struct sbuf rq = { 0 }, out = { 0 };
    int rc = B_OK;
    bool resp3 = chance(&w->r, 250);
    if (resp3) {
        req(&rq, "HELLO", "3", NULL);
    }
    req(&rq, "CLIENT", "SETNAME", w->name, NULL);
    req(&rq, "CLIENT", "ID", NULL);
    if (cx_send(&w->main, rq.p, rq.len) < 0) {
        failf(w->who, "setup", "timed out sending");
        rc = B_FAIL;
        goto done;
    }
    for (int step = resp3 ? 0 : 1; step < 3 && rc == B_OK; step++) {
        const char *p;
        size_t n;
        int r = cx_next(&w->main, &p, &n, opt.io_timeout_ms);
        if (r == 0) {
            if (!cx_kill_excused(&w->main)) {
                failf(w->who, "setup", "connection closed unexpectedly");
                rc = B_FAIL;
            } else {
                rc = B_LOST;
            }
            break;
        }
        if (r < 0) {
            failf(w->who, "setup", "no reply (or not RESP)");
            rc = B_FAIL;
            break;
        }
        struct rv v;
        rv_parse(p, &v);
        if (step == 0) {
            bool ok = v.t == '%' && v.n == 14;
            for (size_t i = 0; ok && i + 1 < v.n; i += 2) {
                if (rv_is(&v.el[i], "proto") && v.el[i + 1].i != 3) {
                    ok = false;
                }
                if (rv_is(&v.el[i], "id")) {
                    w->main.id = v.el[i + 1].i;
                }
            }
            if (!ok) {
                fail_mismatch(w->who, "HELLO 3", "%7\r\n...", 9, p, n);
                rc = B_FAIL;
            }
            w->main.proto = 3;
        } else if (step == 1) {
            if (n != 5 || memcmp(p, "+OK\r\n", 5) != 0) {
                fail_mismatch(w->who, "CLIENT SETNAME", "+OK\r\n", 5, p, n);
                rc = B_FAIL;
            }
        } else {
            if (v.t != ':' || v.i < 1 || (resp3 && v.i != w->main.id)) {
                failf(w->who, "CLIENT ID", "a positive id (HELLO said %lld)",
                      w->main.id);
                rc = B_FAIL;
            }
            w->main.id = v.i;
        }
        rv_free(&v);
        cx_consume(&w->main, n);
    }
done:
    sb_free(&rq);
    sb_free(&out);
    if (rc == B_OK) {
        victim_up(w->idx, &w->main);
        snprintf(w->who, sizeof(w->who), "%s (client id %lld, %s, RESP%d)",
                 w->name, w->main.id, w->main.addr, w->main.proto);
    } else {
        cx_close(&w->main);
    }
    return rc;
}

static int
setup(struct worker *w)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        pthread_rwlock_rdlock(&busy_lock);
        int rc = setup_once(w);
        pthread_rwlock_unlock(&busy_lock);
        if (rc != B_LOST) {
            return rc;
        }
        sleep_ms(5);
    }
    failf(w->who, "setup", "killed 50 times in a row while connecting");
    return B_FAIL;
}

/* The side socket: no introduction, RESP2, database 0. Only TYPE normal
 * kills reach it. */
/* CLIENT ID on c (a connection of no victim entry): B_OK with c->id set,
 * B_LOST (a TYPE normal kill), B_FAIL. */
static int
conn_id(struct cx *c, const char *who)
{
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "CLIENT", "ID", NULL);
    int r = cx_call(c, who, "CLIENT ID", &rq, &out);
    int rc = B_OK;
    if (r < 0) {
        rc = B_FAIL;
    } else if (r == 0) {
        rc = cx_kill_excused(c) ? B_LOST : B_FAIL;
        if (rc == B_FAIL) {
            failf(who, "CLIENT ID", "connection closed unexpectedly");
        }
    } else {
        struct rv v;
        rv_parse(out.p, &v);
        c->id = v.t == ':' ? v.i : 0;
        rv_free(&v);
        if (c->id <= 0) {
            fail_mismatch(who, "CLIENT ID", ":<id>\r\n", 9, out.p, out.len);
            rc = B_FAIL;
        }
    }
    sb_free(&rq);
    sb_free(&out);
    return rc;
}

/* We closed a connection that may still hold requests the server has not
 * run (an unread pipeline, a request CLIENT PAUSE holds): the server runs
 * them until it notices the close. CLIENT KILL ID (on a connection of its
 * own) ends that: once it answers, nothing more of that client runs. */
static int
barrier_kill(struct worker *w, long long id)
{
    char why[128], idtxt[24];
    snprintf(idtxt, sizeof(idtxt), "%lld", id);
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "CLIENT", "KILL", "ID", idtxt, NULL);
    int rc = B_FAIL;
    for (int attempt = 0; attempt < 5; attempt++) {
        struct cx t;
        cx_init(&t);
        if (cx_open(&t, NULL, why, sizeof(why)) != 0) {
            failf(w->who, "connect (barrier)", "%s", why);
            break;
        }
        int r = cx_call(&t, w->who, "CLIENT KILL ID (barrier)", &rq, &out);
        bool excused = r == 0 && cx_kill_excused(&t);
        cx_free(&t);
        if (r < 0) {
            break;
        }
        if (excused) {
            continue;           /* a TYPE normal kill took it: again */
        }
        if (r == 1 && out.len == 4 && (memcmp(out.p, ":0\r\n", 4) == 0 ||
                                       memcmp(out.p, ":1\r\n", 4) == 0)) {
            rc = B_OK;
        } else {
            fail_mismatch(w->who, "CLIENT KILL ID (barrier)", ":0 or :1", 8,
                          out.p, out.len);
        }
        break;
    }
    sb_free(&rq);
    sb_free(&out);
    return rc;
}

static int
side_open(struct worker *w)
{
    for (int attempt = 0; attempt < 5 && w->side.fd < 0; attempt++) {
        char why[128];
        if (cx_open(&w->side, NULL, why, sizeof(why)) != 0) {
            failf(w->who, "connect (side)", "%s", why);
            return -1;
        }
        int rc = conn_id(&w->side, w->who);
        if (rc == B_FAIL) {
            return -1;
        }
        if (rc == B_LOST) {
            cx_close(&w->side);
        }
    }
    return w->side.fd >= 0 ? 0 : -1;
}

/* Close the side socket, which may hold a request not run yet. */
static int
side_abandon(struct worker *w)
{
    long long id = w->side.id;
    cx_close(&w->side);
    return barrier_kill(w, id);
}

/* One request on the side socket, its reply exactly `want` (NULL: any
 * reply, returned in out). B_OK, B_LOST (excused), B_FAIL. */
static int
side_call(struct worker *w, const char *op, struct sbuf *rq, const char *want,
          struct sbuf *out)
{
    struct sbuf tmp = { 0 };
    struct sbuf *o = out ? out : &tmp;
    int r = cx_call(&w->side, w->who, op, rq, o);
    int rc = B_OK;
    if (r < 0) {
        rc = B_FAIL;
    } else if (r == 0) {
        if (!cx_kill_excused(&w->side)) {
            failf(w->who, op, "side connection closed unexpectedly");
            rc = B_FAIL;
        } else {
            cx_close(&w->side);
            rc = B_LOST;
        }
    } else if (want && (o->len != strlen(want) || memcmp(o->p, want, o->len))) {
        fail_mismatch(w->who, op, want, strlen(want), o->p, o->len);
        rc = B_FAIL;
    }
    sb_free(&tmp);
    return rc;
}

/* ---- workers: the ops ---------------------------------------------------- */

/* A pipeline of 1..200 mixed requests. */
static int
op_mix(struct worker *w)
{
    int depth;
    uint64_t d = rnd_below(&w->r, 100);
    if (d < 50) {
        depth = 1 + (int)rnd_below(&w->r, 10);
    } else if (d < 85) {
        depth = 10 + (int)rnd_below(&w->r, 41);
    } else {
        depth = 50 + (int)rnd_below(&w->r, 151);
    }
    batch_reset(w);
    while (w->nops < depth) {
        uint64_t k = rnd_below(&w->r, 100);
        int i = (int)rnd_below(&w->r, NCTR);
        if (k < 28) {
            b_incr(w, i);
        } else if (k < 33) {
            b_getnum(w, i);
        } else if (k < 42) {
            b_echo(w, false);
        } else if (k < 48) {
            b_echo(w, true);
        } else if (k < 55) {
            b_set(w, pick_len(w, false));
        } else if (k < 62) {
            b_get(w);
        } else if (k < 74) {
            b_eval_incr(w, i, (int)rnd_below(&w->r, 3));
        } else if (k < 80) {
            if (opt.reference) {
                b_echo(w, true);        /* redis-server has no CL.THROTTLE */
            } else {
                b_throttle(w);
            }
        } else if (k < 83 && w->nops + 3 <= MAX_DEPTH) {
            b_select(w, 1);
            b_incr(w, i);
            b_select(w, 0);
        } else if (k < 85) {
            add_op(w, K_WAIT);
            req(&w->reqb, "WAIT", "0", "0", NULL);
        } else if (k < 91) {
            b_publish(w, chance(&w->r, 500));
        } else if (k < 94) {
            b_shared_incr(w);
        } else if (k < 95) {
            add_op(w, K_CINFO);
            req(&w->reqb, "CLIENT", "INFO", NULL);
        } else {
            b_incr(w, i);
        }
    }
    int rc = run_batch(w, 0, false);
    rotate_throttle(w);
    return rc;
}

/* Values over 64 KB: SET, GET, and the counter between. */
static int
op_big(struct worker *w)
{
    batch_reset(w);
    b_set(w, pick_len(w, true));
    b_incr(w, 0);
    b_get(w);
    if (chance(&w->r, 500)) {
        b_set(w, pick_len(w, true));
        b_get(w);
    }
    b_echo(w, true);
    atomic_fetch_add(&st_big, 1);
    return run_batch(w, 0, false);
}

/* A reader slower than its replies: 24 GETs of 256 KB unread for 300 ms
 * (past client-output-pause-limit: the server stops reading us), then all
 * of them, exact. */
static int
op_slow(struct worker *w)
{
    batch_reset(w);
    b_set(w, 256 * 1024);
    for (int i = 0; i < 24; i++) {
        b_get(w);
        if (i % 8 == 0) {
            b_incr(w, 1);
        }
    }
    b_echo(w, false);
    atomic_fetch_add(&st_slow, 1);
    return run_batch(w, 300, false);
}

/* UNWATCH first: a WATCH a lost connection left behind must not fail the
 * next transaction (it cannot: a new connection has none, but an op cut
 * short by a side-socket kill may leave one). */
static void
b_tx_prefix(struct worker *w)
{
    if (w->cur_db != 0) {
        b_select(w, 0);
    }
    b_ok(w, "UNWATCH", NULL);
}

static void
b_queued_begin(struct worker *w)
{
    b_ok(w, "MULTI", NULL);
}

/* Mark the ops from `from` on as queued in transaction t. */
static void
mark_queued(struct worker *w, int from, int t)
{
    for (int i = from; i < w->nops; i++) {
        w->ops[i].queued = true;
        w->ops[i].n = t;
    }
}

static void
b_exec(struct worker *w, int from, int t)
{
    struct op *o = add_op(w, K_EXEC);
    o->i = t;
    o->n = w->nops - 1 - from;
    req(&w->reqb, "EXEC", NULL);
}

/* MULTI, 1..8 requests, EXEC: every element exact. */
static int
op_tx(struct worker *w)
{
    batch_reset(w);
    b_tx_prefix(w);
    b_queued_begin(w);
    int from = w->nops, t = ++w->txn_seq;
    int n = 1 + (int)rnd_below(&w->r, 8);
    for (int j = 0; j < n; j++) {
        uint64_t k = rnd_below(&w->r, 6);
        int i = (int)rnd_below(&w->r, NCTR);
        if (k == 0) {
            b_incr(w, i);
        } else if (k == 1) {
            b_set(w, pick_len(w, false));
        } else if (k == 2) {
            b_get(w);
        } else if (k == 3) {
            b_getnum(w, i);
        } else if (k == 4) {
            b_echo(w, false);
        } else {
            b_eval_incr(w, i, (int)rnd_below(&w->r, 3));
        }
    }
    mark_queued(w, from, t);
    b_exec(w, from, t);
    return run_batch(w, 0, false);
}

/* WATCH a key nobody else writes: EXEC must run. */
static int
op_watch_won(struct worker *w)
{
    batch_reset(w);
    b_tx_prefix(w);
    int i = (int)rnd_below(&w->r, NCTR);
    b_ok(w, "WATCH", w->key_c[i], NULL);
    b_getnum(w, i);
    b_queued_begin(w);
    int from = w->nops, t = ++w->txn_seq;
    b_incr(w, i);
    mark_queued(w, from, t);
    b_exec(w, from, t);
    return run_batch(w, 0, false);
}

/* WATCH, then the same key changed on our side socket: EXEC must be nil. */
static int
op_watch_lost(struct worker *w)
{
    if (side_open(w) != 0) {
        return B_FAIL;
    }
    int i = (int)rnd_below(&w->r, NCTR);
    batch_reset(w);
    b_tx_prefix(w);
    b_ok(w, "WATCH", w->key_c[i], NULL);
    b_getnum(w, i);
    int rc = run_batch(w, 0, false);
    if (rc != B_OK) {
        return rc;
    }
    struct ctr *c = &w->db[0].c[i];
    struct sbuf rq = { 0 }, want = { 0 };
    req(&rq, "INCR", w->key_c[i], NULL);
    exp_int(&want, c->lo + 1);
    rc = side_call(w, "INCR (side)", &rq, want.p, NULL);
    sb_free(&rq);
    sb_free(&want);
    if (rc == B_LOST) {
        c->hi++;
        batch_reset(w);
        b_ok(w, "UNWATCH", NULL);
        return run_batch(w, 0, false);
    }
    if (rc != B_OK) {
        return rc;
    }
    c->lo = c->hi = c->lo + 1;
    batch_reset(w);
    b_queued_begin(w);
    int from = w->nops, t = ++w->txn_seq;
    b_incr(w, i);
    mark_queued(w, from, t);
    add_op(w, K_EXEC_NIL);
    req(&w->reqb, "EXEC", NULL);
    atomic_fetch_add(&st_watch_lost, 1);
    return run_batch(w, 0, false);
}

/* WATCH a shared key others increment too: EXEC nil, or [seen + 1]. */
static int
op_watch_shared(struct worker *w)
{
    w->watch_g = (int)rnd_below(&w->r, NGROUPS);
    char key[24];
    snprintf(key, sizeof(key), "shared:%d", w->watch_g);
    batch_reset(w);
    b_tx_prefix(w);
    b_ok(w, "WATCH", key, NULL);
    add_op(w, K_WATCH_GET);
    req(&w->reqb, "GET", key, NULL);
    int rc = run_batch(w, 0, false);
    if (rc != B_OK) {
        return rc;
    }
    if (chance(&w->r, 500)) {
        sleep_ms((int)rnd_below(&w->r, 3));
    }
    batch_reset(w);
    b_queued_begin(w);
    int from = w->nops, t = ++w->txn_seq;
    struct op *q = add_op(w, K_SHARED_INCR);
    q->i = w->watch_g;
    req(&w->reqb, "INCR", key, NULL);
    mark_queued(w, from, t);
    add_op(w, K_EXEC_SHARED);
    req(&w->reqb, "EXEC", NULL);
    return run_batch(w, 0, false);
}

/* MULTI, INCR, DISCARD: the counter unchanged. */
static int
op_discard(struct worker *w)
{
    batch_reset(w);
    b_tx_prefix(w);
    int i = (int)rnd_below(&w->r, NCTR);
    b_queued_begin(w);
    int from = w->nops, t = ++w->txn_seq;
    b_incr(w, i);
    b_set(w, 10);
    mark_queued(w, from, t);
    b_ok(w, "DISCARD", NULL);
    b_getnum(w, i);
    b_get(w);
    return run_batch(w, 0, false);
}

/* MULTI, INCR, a SET of wrong arity, EXEC: EXECABORT, nothing ran. */
static int
op_execabort(struct worker *w)
{
    batch_reset(w);
    b_tx_prefix(w);
    int i = (int)rnd_below(&w->r, NCTR);
    b_queued_begin(w);
    int from = w->nops, t = ++w->txn_seq;
    b_incr(w, i);
    mark_queued(w, from, t);
    struct op *o = add_op(w, K_ERR);
    o->text = "-ERR wrong number of arguments for 'set' command\r\n";
    req(&w->reqb, "SET", w->key_s, NULL);
    o = add_op(w, K_ERR);
    o->text = "-EXECABORT Transaction discarded because of previous errors.\r\n";
    req(&w->reqb, "EXEC", NULL);
    b_getnum(w, i);
    return run_batch(w, 0, false);
}

/* CLIENT REPLY OFF ... ON, or SKIP: the muted requests ran (the next
 * counter value says so), their replies never came. */
static int
op_reply(struct worker *w)
{
    batch_reset(w);
    int i = (int)rnd_below(&w->r, NCTR);
    atomic_fetch_add(&st_reply_modes, 1);
    if (chance(&w->r, 500)) {
        add_op(w, K_MUTED)->muted = true;
        req(&w->reqb, "CLIENT", "REPLY", "OFF", NULL);
        int n = 1 + (int)rnd_below(&w->r, 20);
        for (int j = 0; j < n; j++) {
            int from = w->nops;
            if (j % 3 == 0) {
                b_echo(w, true);
            } else if (j % 3 == 1) {
                b_set(w, pick_len(w, false));
            } else {
                b_incr(w, i);
            }
            w->ops[from].muted = true;
        }
        b_ok(w, "CLIENT", "REPLY", "ON", NULL);
    } else {
        add_op(w, K_MUTED)->muted = true;
        req(&w->reqb, "CLIENT", "REPLY", "SKIP", NULL);
        b_incr(w, i);
        w->ops[w->nops - 1].muted = true;
    }
    b_incr(w, i);
    b_get(w);
    return run_batch(w, 0, false);
}

/* CLIENT KILL of another client (ID, ADDR, the old form), or of every
 * normal client but us (TYPE normal, at most every 5 s), or TYPE replica
 * and master (none: :0). */
static int
op_kill(struct worker *w)
{
    struct sbuf rq = { 0 };
    const char *op = "CLIENT KILL";
    int form = (int)rnd_below(&w->r, 20);
    int64_t t = now_ms();
    int64_t last = atomic_load(&last_kill_all_ms);
    /* (The first chance after 5 s always takes it: every run has one.) */
    bool kill_all = (form == 0 || atomic_load(&st_kill_all) == 0) &&
                    t - last > 5000 &&
                    atomic_compare_exchange_strong(&last_kill_all_ms, &last, t);
    char idtxt[24], addr[64] = "";
    int vi = -1;
    struct killc *kc = NULL;
    batch_reset(w);
    if (kill_all) {
        kc = &g_kill_all;
        atomic_fetch_add(&kc->started, 1);
        atomic_fetch_add(&st_kill_all, 1);
        req(&rq, "CLIENT", "KILL", "TYPE", "normal", NULL);
        op = "CLIENT KILL TYPE normal";
    } else if (form == 1) {
        req(&rq, "CLIENT", "KILL", "TYPE", chance(&w->r, 500) ? "replica" : "master", NULL);
        op = "CLIENT KILL TYPE replica/master";
    } else {
        vi = (int)rnd_below(&w->r, (uint64_t)nvictims);
        if (vi == w->idx) {
            return B_OK;
        }
        struct victim *v = &victims[vi];
        pthread_mutex_lock(&v->mu);
        bool up = v->up;
        snprintf(idtxt, sizeof(idtxt), "%lld", v->id);
        snprintf(addr, sizeof(addr), "%s", v->addr);
        pthread_mutex_unlock(&v->mu);
        if (!up) {
            return B_OK;
        }
        kc = &v->kills;
        atomic_fetch_add(&kc->started, 1);
        atomic_fetch_add(&st_kills, 1);
        if (form < 10) {
            req(&rq, "CLIENT", "KILL", "ID", idtxt, NULL);
        } else if (form < 16) {
            req(&rq, "CLIENT", "KILL", "ADDR", addr, "SKIPME", "yes", NULL);
        } else {
            req(&rq, "CLIENT", "KILL", addr, NULL);
            op = "CLIENT KILL addr";
        }
    }
    uint64_t end0 = atomic_load(&busy_end);
    struct sbuf out = { 0 };
    int r = cx_call(&w->main, w->who, op, &rq, &out);
    if (kc != NULL) {
        atomic_fetch_add(&kc->done, 1);
    }
    int rc = B_OK;
    if (r < 0) {
        rc = B_FAIL;
    } else if (r == 0) {
        if (!cx_kill_excused(&w->main)) {
            failf(w->who, op, "connection closed unexpectedly");
            rc = B_FAIL;
        } else {
            victim_down(w);
            cx_close(&w->main);
            rc = B_LOST;
        }
    } else if (atomic_load(&busy_begin) > end0 &&
               out.len == sizeof(BUSY_LINE) - 1 &&
               memcmp(out.p, BUSY_LINE, out.len) == 0) {
        rc = B_OK;
    } else {
        struct rv v;
        rv_parse(out.p, &v);
        bool ok;
        if (kill_all) {
            ok = v.t == ':' && v.i >= 0;
        } else if (form == 1) {
            ok = v.t == ':' && v.i == 0;
        } else if (form >= 16) {
            ok = (out.len == 5 && memcmp(out.p, "+OK\r\n", 5) == 0) ||
                 (out.len == 21 &&
                  memcmp(out.p, "-ERR No such client\r\n", 21) == 0);
        } else {
            ok = v.t == ':' && (v.i == 0 || v.i == 1);
        }
        rv_free(&v);
        if (!ok) {
            struct sbuf g = { 0 };
            escape(&g, out.p, out.len, 200);
            failf(w->who, op, "unexpected reply \"%s\"", g.p);
            sb_free(&g);
            rc = B_FAIL;
        }
    }
    sb_free(&rq);
    sb_free(&out);
    return rc;
}

/* CLIENT KILL ID <our own> SKIPME no: :1, then the connection closes
 * (SKIPME yes, the default, would spare us: :0). */
static int
op_self_kill(struct worker *w)
{
    batch_reset(w);
    b_echo(w, false);
    char id[24];
    snprintf(id, sizeof(id), "%lld", w->main.id);
    if (chance(&w->r, 300)) {
        add_op(w, K_ERR)->text = ":0\r\n";
        req(&w->reqb, "CLIENT", "KILL", "ID", id, NULL);
    }
    add_op(w, K_ERR)->text = ":1\r\n";
    req(&w->reqb, "CLIENT", "KILL", "ID", id, "SKIPME", "no", NULL);
    return run_batch(w, 0, true);
}

/* PING, QUIT: +OK, then the connection closes. */
static int
op_quit(struct worker *w)
{
    batch_reset(w);
    b_echo(w, true);
    b_incr(w, 0);
    add_op(w, K_QUIT);
    req(&w->reqb, "QUIT", NULL);
    atomic_fetch_add(&st_quits, 1);
    return run_batch(w, 0, true);
}

/* Half a request on a socket of its own, then close: nothing ran. */
static int
op_mid_request(struct worker *w)
{
    struct cx t;
    cx_init(&t);
    char why[128];
    if (cx_open(&t, NULL, why, sizeof(why)) != 0) {
        failf(w->who, "connect", "%s", why);
        return B_FAIL;
    }
    struct sbuf rq = { 0 };
    size_t len = chance(&w->r, 500) ? 100 : 200000;
    fill_value(w->valbuf, len, 1);
    const char *argv[3] = { "SET", w->key_tmp, NULL };
    req_argv(&rq, 3, argv, 2, w->valbuf, len);
    size_t cut = 1 + rnd_below(&w->r, rq.len - 3);
    int s = cx_send(&t, rq.p, cut);
    cx_close(&t);
    cx_free(&t);
    sb_free(&rq);
    if (s < 0) {
        failf(w->who, "half a request", "timed out sending");
        return B_FAIL;
    }
    atomic_fetch_add(&st_mid, 1);
    batch_reset(w);
    add_op(w, K_EXISTS0);
    req(&w->reqb, "EXISTS", w->key_tmp, NULL);
    return run_batch(w, 0, false);
}

/* Up to 100 INCRs sent on a connection of its own, none read, close: the
 * counter moved by 0..n (once a barrier says that connection is gone). */
static int
op_mid_pipeline(struct worker *w)
{
    struct cx t;
    cx_init(&t);
    char why[128];
    if (cx_open(&t, NULL, why, sizeof(why)) != 0) {
        failf(w->who, "connect", "%s", why);
        return B_FAIL;
    }
    int rc = conn_id(&t, w->who);
    if (rc != B_OK) {
        cx_free(&t);
        return rc == B_LOST ? B_OK : rc;
    }
    int i = (int)rnd_below(&w->r, NCTR);
    int n = 1 + (int)rnd_below(&w->r, 100);
    struct sbuf rq = { 0 };
    for (int j = 0; j < n; j++) {
        req(&rq, "INCR", w->key_c[i], NULL);
    }
    int s = cx_send(&t, rq.p, rq.len);
    sb_free(&rq);
    if (s < 0) {
        cx_free(&t);
        failf(w->who, "unread pipeline", "timed out sending");
        return B_FAIL;
    }
    if (chance(&w->r, 500)) {
        sleep_ms(1);
    }
    long long id = t.id;
    cx_free(&t);
    w->db[0].c[i].hi += n;
    atomic_fetch_add(&st_mid, 1);
    return barrier_kill(w, id);
}

/* A reply past client-output-hard-limit: the connection closes, nothing of
 * that reply is sent (what came before may be). */
static int
op_hard(struct worker *w)
{
    int64_t t = now_ms(), last = atomic_load(&last_hard_ms);
    if (t - last < 1000 ||
        !atomic_compare_exchange_strong(&last_hard_ms, &last, t)) {
        return B_OK;
    }
    atomic_fetch_add(&st_hard, 1);
    batch_reset(w);
    struct sbuf rq = { 0 };
    char tag[40];
    snprintf(tag, sizeof(tag), "%s:hard", w->name);
    req(&rq, "ECHO", tag, NULL);
    req(&rq, "GET", "stress:huge", NULL);
    req(&rq, "ECHO", tag, NULL);
    struct sbuf want = { 0 };
    exp_bulk(&want, tag, strlen(tag));
    int s = cx_send(&w->main, rq.p, rq.len);
    int rc = B_LOST;
    if (s < 0) {
        failf(w->who, "hard limit", "timed out sending");
        rc = B_FAIL;
    } else {
        int64_t deadline = now_ms() + opt.io_timeout_ms;
        while (!w->main.eof && now_ms() < deadline &&
               cx_unread(&w->main) <= want.len) {
            cx_fill(&w->main, 200);
        }
        size_t got = cx_unread(&w->main);
        const char *p = w->main.buf ? w->main.buf + w->main.off : "";
        if (!w->main.eof) {
            struct sbuf g = { 0 };
            escape(&g, p, got, 100);
            failf(w->who, "GET past client-output-hard-limit", "the "
                  "connection stayed open (%s bytes of reply: \"%s\")",
                  got > want.len ? "more than the ECHO's" : "so far", g.p ? g.p : "");
            sb_free(&g);
            rc = B_FAIL;
        } else if (got > want.len || memcmp(p, want.p, got) != 0) {
            fail_mismatch(w->who, "GET past client-output-hard-limit "
                          "(a prefix, then the close)", want.p, want.len, p,
                          got);
            rc = B_FAIL;
        }
    }
    sb_free(&rq);
    sb_free(&want);
    victim_down(w);
    cx_close(&w->main);
    return rc;
}

/* The side socket's GET settles counter i of database 0. */
static int
side_settle(struct worker *w, int i)
{
    struct ctr *c = &w->db[0].c[i];
    if (c->lo == c->hi) {
        return B_OK;
    }
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "GET", w->key_c[i], NULL);
    int rc = side_call(w, "GET (side)", &rq, NULL, &out);
    if (rc == B_OK) {
        struct rv v;
        rv_parse(out.p, &v);
        long long x = 0;
        if ((!v.null && !rv_num(&v, &x)) || x < c->lo || x > c->hi) {
            failf(w->who, "GET (side)", "a number in [%lld, %lld]", c->lo, c->hi);
            rc = B_FAIL;
        } else {
            c->lo = c->hi = x;
        }
        rv_free(&v);
    }
    sb_free(&rq);
    sb_free(&out);
    return rc;
}

/* CLIENT UNPAUSE from main, or from another client (a connection of its
 * own): +OK. B_OK, B_LOST (main was killed), B_FAIL. */
static int
unpause(struct worker *w, bool other)
{
    if (!other) {
        batch_reset(w);
        b_ok(w, "CLIENT", "UNPAUSE", NULL);
        return run_batch(w, 0, false);
    }
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "CLIENT", "UNPAUSE", NULL);
    int rc = B_FAIL;
    for (int attempt = 0; attempt < 5; attempt++) {
        struct cx t;
        char why[128];
        cx_init(&t);
        if (cx_open(&t, NULL, why, sizeof(why)) != 0) {
            failf(w->who, "connect (UNPAUSE)", "%s", why);
            break;
        }
        int r = cx_call(&t, w->who, "CLIENT UNPAUSE (another client)", &rq, &out);
        bool excused = r == 0 && cx_kill_excused(&t);
        cx_free(&t);
        if (excused) {
            continue;
        }
        if (r == 1 && out.len == 5 && memcmp(out.p, "+OK\r\n", 5) == 0) {
            rc = B_OK;
        } else if (r >= 0) {
            fail_mismatch(w->who, "CLIENT UNPAUSE (another client)", "+OK\r\n",
                          5, out.p, out.len);
        }
        break;
    }
    sb_free(&rq);
    sb_free(&out);
    return rc;
}

/* CLIENT PAUSE WRITE (3 s) or ALL (1.5 s) on main; on the side socket a
 * request the pause holds gets no reply until CLIENT UNPAUSE (from main
 * or another client), then its right one. Under ALL the UNPAUSE is held
 * too, as Redis 7.0 holds it, so the pause runs out. */
static int
op_pause(struct worker *w)
{
    if (pthread_mutex_trylock(&pause_token) != 0) {
        return B_OK;
    }
    bool all = chance(&w->r, 400);
    int i = (int)rnd_below(&w->r, NCTR);
    struct ctr *c = &w->db[0].c[i];
    struct sbuf rq = { 0 }, want = { 0 };
    char tag[40];
    int rc = side_open(w) == 0 ? side_settle(w, i) : B_FAIL;
    if (rc != B_OK) {
        rc = rc == B_LOST ? B_OK : rc;
        goto out;
    }
    atomic_fetch_add(&st_pauses, 1);
    batch_reset(w);
    int hold_ms = all ? 1500 : 3000;
    b_ok(w, "CLIENT", "PAUSE", all ? "1500" : "3000", all ? "ALL" : "WRITE", NULL);
    int64_t t_sent = now_ms();
    rc = run_batch(w, 0, false);
    if (rc != B_OK) {
        goto out;
    }
    /* The pause lasts at least until t_sent + hold_ms (the server's loop
     * clock read it after we sent): until 500 ms before, held means held. */
    snprintf(tag, sizeof(tag), "%s:pause", w->name);
    req(&rq, "PING", tag, NULL);
    req(&rq, "INCR", w->key_c[i], NULL);
    req(&rq, "ECHO", tag, NULL);
    size_t early = 0;
    exp_bulk(&want, tag, strlen(tag));
    if (!all) {
        early = want.len;       /* PING is not a write: it is answered */
    }
    exp_int(&want, c->lo + 1);
    exp_bulk(&want, tag, strlen(tag));
    bool side_ok = cx_send(&w->side, rq.p, rq.len) == 0;
    int64_t deadline = now_ms() + opt.io_timeout_ms;
    while (side_ok && cx_unread(&w->side) < early && !w->side.eof &&
           now_ms() < deadline) {
        cx_fill(&w->side, 100);
    }
    int64_t quiet_until = now_ms() + 150;
    while (side_ok && !w->side.eof && now_ms() < quiet_until) {
        cx_fill(&w->side, 20);
    }
    const char *p = w->side.buf ? w->side.buf + w->side.off : "";
    size_t got = cx_unread(&w->side);
    if (side_ok && !w->side.eof && now_ms() < t_sent + hold_ms - 500 &&
        (got != early || memcmp(p, want.p, early) != 0)) {
        fail_mismatch(w->who, all ? "CLIENT PAUSE ALL (replies before "
                      "UNPAUSE)" : "CLIENT PAUSE WRITE (replies before UNPAUSE)",
                      want.p, early, p, got);
        rc = B_FAIL;
        goto out;
    }
    rc = unpause(w, chance(&w->r, 500));
    if (rc == B_FAIL) {
        goto out;
    }
    /* Now everything, exact (unless a kill took one of the sockets: then
     * the pause ends by itself and the INCR's fate is unknown). */
    deadline = now_ms() + opt.io_timeout_ms;
    while (side_ok && cx_unread(&w->side) < want.len && !w->side.eof &&
           now_ms() < deadline) {
        cx_fill(&w->side, 100);
    }
    p = w->side.buf ? w->side.buf + w->side.off : "";
    got = cx_unread(&w->side);
    bool whole = got == want.len && memcmp(p, want.p, got) == 0;
    if (whole) {
        c->lo = c->hi = c->lo + 1;
        cx_consume(&w->side, got);
    } else if (side_ok && !w->side.eof && got >= want.len) {
        fail_mismatch(w->who, "held requests after CLIENT UNPAUSE", want.p,
                      want.len, p, got);
        rc = B_FAIL;
    } else if (side_ok && !w->side.eof) {
        fail_mismatch(w->who, "held requests after CLIENT UNPAUSE (no "
                      "more within the I/O timeout)", want.p, want.len, p, got);
        rc = B_FAIL;
    } else if (memcmp(p, want.p, got < want.len ? got : want.len) != 0 ||
               got > want.len) {
        fail_mismatch(w->who, "held requests after CLIENT UNPAUSE (closed)",
                      want.p, want.len, p, got);
        rc = B_FAIL;
    } else if (side_ok && !cx_kill_excused(&w->side)) {
        failf(w->who, "CLIENT PAUSE", "side connection closed unexpectedly");
        rc = B_FAIL;
    } else {
        c->hi++;
        if (side_abandon(w) == B_FAIL) {
            rc = B_FAIL;
        }
    }
out:
    sb_free(&rq);
    sb_free(&want);
    pthread_mutex_unlock(&pause_token);
    return rc;
}

/* INFO, CLIENT LIST, CLIENT INFO (what reaches across clients). */
static int
op_info(struct worker *w)
{
    batch_reset(w);
    int n = 1 + (int)rnd_below(&w->r, 4);
    for (int j = 0; j < n; j++) {
        uint64_t k = rnd_below(&w->r, 3);
        if (k == 0) {
            add_op(w, K_INFO);
            req(&w->reqb, "INFO", chance(&w->r, 500) ? "clients" : "everything",
                NULL);
        } else if (k == 1) {
            add_op(w, K_CLIST);
            req(&w->reqb, "CLIENT", "LIST", NULL);
        } else {
            add_op(w, K_CINFO);
            req(&w->reqb, "CLIENT", "INFO", NULL);
        }
        b_echo(w, true);
    }
    return run_batch(w, 0, false);
}

/* Connections opened and closed in a hurry: some answered, some closed
 * with requests unread, some QUIT. */
static int
op_churn(struct worker *w)
{
    enum { N = 12 };
    struct cx t[N];
    int n = 2 + (int)rnd_below(&w->r, N - 1);
    int rc = B_OK;
    char why[128];
    for (int j = 0; j < n; j++) {
        cx_init(&t[j]);
    }
    uint64_t end0 = atomic_load(&busy_end);
    for (int j = 0; j < n && rc == B_OK; j++) {
        if (cx_open(&t[j], NULL, why, sizeof(why)) != 0) {
            failf(w->who, "connect (churn)", "%s", why);
            rc = B_FAIL;
            break;
        }
        atomic_fetch_add(&st_churn_conns, 1);
        struct sbuf rq = { 0 };
        req(&rq, "PING", NULL);
        if (j % 3 == 2) {
            req(&rq, "QUIT", NULL);
        }
        cx_send(&t[j], rq.p, rq.len);
        sb_free(&rq);
    }
    for (int j = 0; j < n && rc == B_OK; j++) {
        if (j % 3 == 1) {
            continue;           /* closed unread below */
        }
        const char *p;
        size_t len;
        int r = cx_next(&t[j], &p, &len, opt.io_timeout_ms);
        bool busy = atomic_load(&busy_begin) > end0;
        if (r == 0 && cx_kill_excused(&t[j])) {
            continue;
        }
        if (r != 1 || !((len == 7 && memcmp(p, "+PONG\r\n", 7) == 0) ||
                        (busy && len == sizeof(BUSY_LINE) - 1 &&
                         memcmp(p, BUSY_LINE, len) == 0))) {
            fail_mismatch(w->who, "PING (churn)", "+PONG\r\n", 7, p,
                          r == 1 || r == 0 ? len : 0);
            rc = B_FAIL;
            break;
        }
        cx_consume(&t[j], len);
        if (j % 3 == 2) {
            r = cx_next(&t[j], &p, &len, opt.io_timeout_ms);
            if (r == 0 && cx_kill_excused(&t[j])) {
                continue;
            }
            if (r != 1 || len != 5 || memcmp(p, "+OK\r\n", 5) != 0) {
                fail_mismatch(w->who, "QUIT (churn)", "+OK\r\n", 5, p,
                              r == 1 || r == 0 ? len : 0);
                rc = B_FAIL;
                break;
            }
            cx_consume(&t[j], len);
            if (cx_expect_eof(&t[j], opt.io_timeout_ms) != 1) {
                failf(w->who, "QUIT (churn)", "the connection did not close");
                rc = B_FAIL;
                break;
            }
        }
    }
    for (int j = 0; j < n; j++) {
        cx_free(&t[j]);
    }
    return rc;
}

/* A burst of PUBLISHes. */
static int
op_publish(struct worker *w)
{
    batch_reset(w);
    int n = 1 + (int)rnd_below(&w->r, 20);
    for (int j = 0; j < n; j++) {
        b_publish(w, chance(&w->r, 600));
    }
    return run_batch(w, 0, false);
}

/* The end: every key as the model says (settling what is uncertain). */
static int
final_check(struct worker *w)
{
    batch_reset(w);
    for (int d = NDB - 1; d >= 0; d--) {
        b_select(w, d);
        for (int i = 0; i < NCTR; i++) {
            b_getnum(w, i);
        }
        b_get(w);
    }
    return run_batch(w, 0, false);
}

struct op_entry {
    const char *name;
    int (*fn)(struct worker *);
    int weight;
    bool fragile;               /* under the busy read lock */
};

static const struct op_entry ops_table[] = {
    { "pipeline", op_mix, 300, false },
    { "big values", op_big, 40, false },
    { "slow reader", op_slow, 15, false },
    { "MULTI/EXEC", op_tx, 50, true },
    { "WATCH (won)", op_watch_won, 25, true },
    { "WATCH (lost)", op_watch_lost, 20, true },
    { "WATCH (shared)", op_watch_shared, 70, true },
    { "DISCARD", op_discard, 15, true },
    { "EXECABORT", op_execabort, 15, true },
    { "CLIENT REPLY", op_reply, 35, true },
    { "CLIENT KILL", op_kill, 25, true },
    { "CLIENT KILL self", op_self_kill, 8, true },
    { "QUIT", op_quit, 15, false },
    { "half a request", op_mid_request, 15, false },
    { "unread pipeline", op_mid_pipeline, 15, true },
    { "hard limit", op_hard, 6, true },
    { "CLIENT PAUSE", op_pause, 12, true },
    { "INFO/CLIENT LIST", op_info, 25, false },
    { "connect churn", op_churn, 20, false },
    { "PUBLISH", op_publish, 60, false },
};
#define NOPS_TABLE (sizeof(ops_table) / sizeof(ops_table[0]))

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    int total = 0;
    for (size_t i = 0; i < NOPS_TABLE; i++) {
        total += ops_table[i].weight;
    }
    set_op(w, "connect");
    int rc = setup(w);
    while (rc != B_FAIL && running()) {
        if (w->main.fd < 0) {
            set_op(w, "connect");
            rc = setup(w);
            continue;
        }
        int pick = (int)rnd_below(&w->r, (uint64_t)total);
        size_t k = 0;
        while (pick >= ops_table[k].weight) {
            pick -= ops_table[k].weight;
            k++;
        }
        set_op(w, ops_table[k].name);
        if (ops_table[k].fragile) {
            pthread_rwlock_rdlock(&busy_lock);
        }
        rc = ops_table[k].fn(w);
        if (ops_table[k].fragile) {
            pthread_rwlock_unlock(&busy_lock);
        }
        if (chance(&w->r, 30)) {
            set_op(w, "idle");
            sleep_ms(1 + (int)rnd_below(&w->r, 30));
        }
    }
    /* The end: settle and check every key (kills may still land). */
    for (int attempt = 0; rc != B_FAIL && attempt < 10; attempt++) {
        if (w->main.fd < 0) {
            set_op(w, "connect (final)");
            if ((rc = setup(w)) != B_OK) {
                continue;
            }
        }
        set_op(w, "final check");
        rc = final_check(w);
        if (rc == B_OK) {
            break;
        }
    }
    if (rc == B_LOST) {
        failf(w->who, "final check", "lost the connection 10 times");
    }
    victim_down(w);
    cx_close(&w->main);
    cx_close(&w->side);
    set_op(w, "done");
    return NULL;
}

/* ---- subscribers ---------------------------------------------------------- */

/* A message or pmessage frame: kind 0/1, channel and payload. */
struct frame {
    int kind;                   /* 0 message, 1 pmessage, -1 other */
    const char *ch, *pat, *payload;
    size_t chlen, patlen, plen;
};

static void
frame_of(struct rv *v, struct frame *f)
{
    memset(f, 0, sizeof(*f));
    f->kind = -1;
    if ((v->t == '*' || v->t == '>') && v->n == 3 && rv_is(&v->el[0], "message") &&
        v->el[1].t == '$' && v->el[2].t == '$') {
        f->kind = 0;
        f->ch = v->el[1].s;
        f->chlen = v->el[1].len;
        f->payload = v->el[2].s;
        f->plen = v->el[2].len;
    } else if ((v->t == '*' || v->t == '>') && v->n == 4 &&
               rv_is(&v->el[0], "pmessage") && v->el[1].t == '$' &&
               v->el[2].t == '$' && v->el[3].t == '$') {
        f->kind = 1;
        f->pat = v->el[1].s;
        f->patlen = v->el[1].len;
        f->ch = v->el[2].s;
        f->chlen = v->el[2].len;
        f->payload = v->el[3].s;
        f->plen = v->el[3].len;
    }
}

/* Channel "<prefix>:<k>", k < n: k, else -1. */
static int
channel_index(const char *ch, size_t len, const char *prefix, int n)
{
    size_t pl = strlen(prefix);
    if (len != pl + 2 || memcmp(ch, prefix, pl) != 0 || ch[pl] != ':' ||
        ch[pl + 1] < '0' || ch[pl + 1] >= '0' + n) {
        return -1;
    }
    return ch[pl + 1] - '0';
}

struct stable {
    int idx, tid;
    char name[24];
    struct cx c;
    struct bitmap *got;         /* [kind * workers + w] */
    uint64_t *last;             /* [kind * workers + w] */
    int ends;                   /* END frames seen (4 channels x 2 kinds) */
    bool end_seen[2][NSTABLE_CH];
    bool ok;
};

static void *
stable_main(void *arg)
{
    struct stable *s = arg;
    char why[128];
    atomic_store(&thread_op[s->tid], "subscribe");
    if (cx_open(&s->c, NULL, why, sizeof(why)) != 0) {
        failf(s->name, "connect", "%s", why);
        return NULL;
    }
    struct sbuf rq = { 0 }, want = { 0 };
    req(&rq, "SUBSCRIBE", "st:0", "st:1", "st:2", "st:3", NULL);
    req(&rq, "PSUBSCRIBE", "st:*", NULL);
    for (int k = 0; k < NSTABLE_CH; k++) {
        sb_printf(&want, "*3\r\n$9\r\nsubscribe\r\n$4\r\nst:%d\r\n:%d\r\n", k, k + 1);
    }
    sb_printf(&want, "*3\r\n$10\r\npsubscribe\r\n$4\r\nst:*\r\n:%d\r\n", NSTABLE_CH + 1);
    if (cx_send(&s->c, rq.p, rq.len) != 0) {
        failf(s->name, "SUBSCRIBE", "could not send");
        goto out;
    }
    int64_t deadline = now_ms() + opt.io_timeout_ms;
    while (cx_unread(&s->c) < want.len && !s->c.eof && now_ms() < deadline) {
        cx_fill(&s->c, 100);
    }
    if (cx_unread(&s->c) < want.len ||
        memcmp(s->c.buf + s->c.off, want.p, want.len) != 0) {
        fail_mismatch(s->name, "SUBSCRIBE", want.p, want.len,
                      s->c.buf ? s->c.buf + s->c.off : "", cx_unread(&s->c));
        goto out;
    }
    cx_consume(&s->c, want.len);
    atomic_fetch_add(&stable_ready, 1);
    atomic_store(&thread_op[s->tid], "reading messages");
    int64_t give_up = g_end_ms + 2LL * opt.io_timeout_ms + 60000;
    /* (After a failure elsewhere: until the workers are gone, so their
     * PUBLISHes do not fail for want of us.) */
    while (s->ends < 2 * NSTABLE_CH &&
           !(atomic_load(&g_failed) && atomic_load(&workers_done))) {
        const char *p;
        size_t n;
        int r = cx_next(&s->c, &p, &n, 200);
        if (r == -1) {
            if (now_ms() > give_up) {
                failf(s->name, "messages", "the END messages never came "
                      "(%d of %d)", s->ends, 2 * NSTABLE_CH);
                goto out;
            }
            continue;
        }
        if (r != 1) {
            struct sbuf g = { 0 };
            escape(&g, p, n, 200);
            failf(s->name, "messages", "%s (after \"%s\"): a subscriber no "
                  "one kills lost its connection", r == 0 ? "closed" : "not RESP",
                  g.p ? g.p : "");
            sb_free(&g);
            goto out;
        }
        struct rv v;
        rv_parse(p, &v);
        struct frame f;
        frame_of(&v, &f);
        const char *bad = NULL;
        int k = f.kind < 0 ? -1 : channel_index(f.ch, f.chlen, "st", NSTABLE_CH);
        int wi = -1;
        uint64_t seq = 0;
        if (k < 0) {
            bad = "a message or pmessage on st:0..3";
        } else if (f.kind == 1 && (f.patlen != 4 || memcmp(f.pat, "st:*", 4))) {
            bad = "pmessage from pattern st:*";
        } else if (f.plen == 3 && memcmp(f.payload, "END", 3) == 0) {
            if (s->end_seen[f.kind][k]) {
                bad = "one END per channel and kind";
            } else {
                s->end_seen[f.kind][k] = true;
                s->ends++;
            }
        } else if (s->end_seen[f.kind][k]) {
            bad = "nothing after END on that channel";
        } else if (!pub_check(f.payload, f.plen, k, &wi, &seq)) {
            bad = "a payload as published (intact, on its channel)";
        } else {
            uint64_t *last = &s->last[f.kind * opt.workers + wi];
            if (seq <= *last) {
                bad = "each publisher's messages once, in order";
            } else if (seq > atomic_load(&pub_sent[wi])) {
                bad = "only messages that were published";
            } else {
                *last = seq;
                bm_set(&s->got[f.kind * opt.workers + wi], seq);
                atomic_fetch_add(&st_msgs, 1);
            }
        }
        rv_free(&v);
        if (bad) {
            struct sbuf g = { 0 };
            escape(&g, p, n, 200);
            failf(s->name, "messages", "expected %s, got \"%s\"", bad, g.p);
            sb_free(&g);
            goto out;
        }
        cx_consume(&s->c, n);
    }
    s->ok = true;
out:
    sb_free(&rq);
    sb_free(&want);
    cx_close(&s->c);
    atomic_store(&thread_op[s->tid], "done");
    return NULL;
}

/* Churn subscribers: subscriptions come and go, confirmations exact. */
enum { SUB_NONE, SUB_PENDING, SUB_ON, UNSUB_PENDING };

struct churn {
    int idx, vi, tid;           /* vi: its victim entry */
    char name[24];
    struct rng r;
    struct cx c, side;
    int state[NCHURN_CH + 1];   /* the last: the pattern ch:* */
    int nsubs;                  /* after the confirmations expected */
    /* Confirmations expected, in order: bytes and what they settle. */
    struct {
        char bytes[96];
        size_t len;
        int slot;               /* state index */
        int to;                 /* new state */
    } fifo[64];
    int head, tail;
    uint64_t *last;             /* [kind * workers + w] */
};

static int
churn_fail_frame(struct churn *s, const char *op, const char *bad,
                 const char *p, size_t n)
{
    struct sbuf g = { 0 };
    escape(&g, p, n, 200);
    failf(s->name, op, "expected %s, got \"%s\"", bad, g.p ? g.p : "");
    sb_free(&g);
    return B_FAIL;
}

/* A frame on the churn subscriber: a confirmation (the next expected), or
 * a message it may get now. */
static int
churn_frame(struct churn *s, const char *p, size_t n)
{
    if (s->head != s->tail && n == s->fifo[s->head].len &&
        memcmp(p, s->fifo[s->head].bytes, n) == 0) {
        if (s->fifo[s->head].slot >= 0) {
            s->state[s->fifo[s->head].slot] = s->fifo[s->head].to;
        }
        s->head++;
        return B_OK;
    }
    struct rv v;
    rv_parse(p, &v);
    struct frame f;
    frame_of(&v, &f);
    const char *bad = NULL;
    int k = f.kind < 0 ? -1 : channel_index(f.ch, f.chlen, "ch", NCHURN_CH);
    int wi;
    uint64_t seq;
    if (k < 0) {
        bad = s->head != s->tail ? s->fifo[s->head].bytes
                                 : "a message on ch:0..7";
    } else if (f.kind == 0 && s->state[k] != SUB_ON && s->state[k] != UNSUB_PENDING) {
        bad = "messages only on channels subscribed";
    } else if (f.kind == 1 && (s->state[NCHURN_CH] < SUB_ON || f.patlen != 4 ||
                               memcmp(f.pat, "ch:*", 4) != 0)) {
        bad = "pmessages only while subscribed to ch:*";
    } else if (!pub_check(f.payload, f.plen, k, &wi, &seq)) {
        bad = "a payload as published";
    } else {
        uint64_t *last = &s->last[f.kind * opt.workers + wi];
        if (seq <= *last) {
            bad = "each publisher's messages once, in order";
        } else if (seq > atomic_load(&pub_sent[wi])) {
            bad = "only messages that were published";
        } else {
            *last = seq;
            atomic_fetch_add(&st_msgs, 1);
        }
    }
    rv_free(&v);
    if (bad) {
        return churn_fail_frame(s, "pub/sub", bad, p, n);
    }
    return B_OK;
}

/* Read frames for up to ms (or until the expected confirmations came). */
static int
churn_read(struct churn *s, int ms, bool until_confirmed)
{
    int64_t deadline = now_ms() + ms;
    for (;;) {
        if (until_confirmed && s->head == s->tail) {
            return B_OK;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            if (until_confirmed) {
                struct sbuf g = { 0 };
                escape(&g, s->fifo[s->head].bytes, s->fifo[s->head].len, 200);
                failf(s->name, "pub/sub", "no confirmation \"%s\" within the "
                      "I/O timeout", g.p);
                sb_free(&g);
                return B_FAIL;
            }
            return B_OK;
        }
        const char *p;
        size_t n;
        int r = cx_next(&s->c, &p, &n, (int)(left < 100 ? left : 100));
        if (r == -1) {
            continue;
        }
        if (r == 0) {
            if (!cx_kill_excused(&s->c)) {
                struct sbuf g = { 0 };
                escape(&g, p, n, 100);
                failf(s->name, "pub/sub", "connection closed unexpectedly "
                      "(after \"%s\")", g.p ? g.p : "");
                sb_free(&g);
                return B_FAIL;
            }
            return B_LOST;
        }
        if (r < 0) {
            return churn_fail_frame(s, "pub/sub", "RESP", p, n);
        }
        if (churn_frame(s, p, n) != B_OK) {
            return B_FAIL;
        }
        cx_consume(&s->c, n);
    }
}

static void
churn_expect(struct churn *s, const char *verb, const char *ch, int slot, int to)
{
    s->tail++;
    struct sbuf b = { 0 };
    sb_printf(&b, "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n:%d\r\n", strlen(verb),
              verb, strlen(ch), ch, s->nsubs);
    memcpy(s->fifo[s->tail - 1].bytes, b.p, b.len + 1);
    s->fifo[s->tail - 1].len = b.len;
    s->fifo[s->tail - 1].slot = slot;
    s->fifo[s->tail - 1].to = to;
    sb_free(&b);
}

/* Stop reading while 512 KB messages are published to us: we must be
 * closed at client-output-hard-limit, what came being a prefix. */
static int
churn_flood(struct churn *s)
{
    int64_t t = now_ms(), last = atomic_load(&last_flood_ms);
    if (t - last < 8000 || pthread_mutex_trylock(&flood_token) != 0) {
        return B_OK;
    }
    if (!atomic_compare_exchange_strong(&last_flood_ms, &last, t)) {
        pthread_mutex_unlock(&flood_token);
        return B_OK;
    }
    atomic_fetch_add(&st_floods, 1);
    int rc = B_OK;
    char ch[24], why[128];
    snprintf(ch, sizeof(ch), "flood:%d", s->idx);
    struct sbuf rq = { 0 }, out = { 0 }, msg = { 0 };
    s->nsubs++;
    churn_expect(s, "subscribe", ch, -1, SUB_ON);   /* a state of no slot */
    req(&rq, "SUBSCRIBE", ch, NULL);
    if (cx_send(&s->c, rq.p, rq.len) != 0) {
        rc = B_LOST;
        goto out;
    }
    {
        int64_t deadline = now_ms() + opt.io_timeout_ms;
        while (s->head != s->tail && rc == B_OK) {
            const char *p;
            size_t n;
            int r = cx_next(&s->c, &p, &n, 100);
            if (r == -1) {
                if (now_ms() > deadline) {
                    failf(s->name, "SUBSCRIBE flood", "no confirmation");
                    rc = B_FAIL;
                }
                continue;
            }
            if (r == 0) {
                rc = cx_kill_excused(&s->c) ? B_LOST : B_FAIL;
                if (rc == B_FAIL) {
                    failf(s->name, "SUBSCRIBE flood", "connection closed");
                }
                break;
            }
            if (r < 0) {
                rc = churn_fail_frame(s, "SUBSCRIBE flood", "RESP", p, n);
                break;
            }
            if (n == s->fifo[s->head].len &&
                memcmp(p, s->fifo[s->head].bytes, n) == 0) {
                if (s->fifo[s->head].slot >= 0) {
                    s->state[s->fifo[s->head].slot] = s->fifo[s->head].to;
                }
                s->head++;
            } else if (churn_frame(s, p, n) != B_OK) {
                rc = B_FAIL;
                break;
            }
            cx_consume(&s->c, n);
        }
    }
    if (rc != B_OK) {
        goto out;
    }
    if (cx_open(&s->side, NULL, why, sizeof(why)) != 0) {
        failf(s->name, "connect (flood)", "%s", why);
        rc = B_FAIL;
        goto out;
    }
    enum { MSG = 512 * 1024, MAXMSG = 160 };
    char *val = malloc(MSG);
    int published = 0;
    bool closed = false;
    for (int m = 0; m < MAXMSG && rc == B_OK; m++) {
        snprintf(val, 16, "F%05d:", m);
        fill_value(val + 7, MSG - 7, (uint64_t)m + 77);
        rq.len = 0;
        const char *argv[3] = { "PUBLISH", ch, NULL };
        req_argv(&rq, 3, argv, 2, val, MSG);
        int r = cx_call(&s->side, s->name, "PUBLISH (flood)", &rq, &out);
        if (r < 0) {
            rc = B_FAIL;
        } else if (r == 0) {
            rc = cx_kill_excused(&s->side) ? B_LOST : B_FAIL;
            if (rc == B_FAIL) {
                failf(s->name, "PUBLISH (flood)", "side connection closed");
            }
        } else if (out.len == 4 && memcmp(out.p, ":1\r\n", 4) == 0) {
            published++;
        } else if (out.len == 4 && memcmp(out.p, ":0\r\n", 4) == 0) {
            closed = true;
            break;
        } else {
            rc = churn_fail_frame(s, "PUBLISH (flood)", ":1 or :0", out.p, out.len);
        }
    }
    if (rc == B_OK && !closed) {
        failf(s->name, "flooded subscriber", "still subscribed after %d "
              "messages of %d bytes (client-output-hard-limit %lld)",
              published, MSG, dconf.hard_limit);
        rc = B_FAIL;
    }
    /* What we get now: the messages in order (a prefix), then EOF. */
    int next = 0;
    while (rc == B_OK) {
        const char *p;
        size_t n;
        int r = cx_next(&s->c, &p, &n, opt.io_timeout_ms);
        if (r == 0) {
            break;              /* closed: as it must be */
        }
        if (r < 0) {
            struct sbuf g = { 0 };
            escape(&g, p, n, 100);
            failf(s->name, "flooded subscriber", "%s: \"%s\"", r == -1 ?
                  "not closed at client-output-hard-limit" : "not RESP",
                  g.p ? g.p : "");
            sb_free(&g);
            rc = B_FAIL;
            break;
        }
        struct rv v;
        rv_parse(p, &v);
        struct frame f;
        frame_of(&v, &f);
        if (f.kind == 0 && f.chlen == strlen(ch) && memcmp(f.ch, ch, f.chlen) == 0) {
            snprintf(val, 16, "F%05d:", next);
            fill_value(val + 7, MSG - 7, (uint64_t)next + 77);
            if (f.plen != MSG || memcmp(f.payload, val, MSG) != 0) {
                rc = churn_fail_frame(s, "flooded subscriber", "the flood's "
                                      "messages in order", p, n);
            }
            next++;
        } else if (churn_frame(s, p, n) != B_OK) {
            rc = B_FAIL;
        }
        rv_free(&v);
        cx_consume(&s->c, n);
    }
    /* Unless a CLIENT KILL (churn subscribers are victims too) may have
     * closed it: the server closed it once its output passed the limit,
     * not before, and not with everything delivered. */
    if (rc == B_OK && !cx_kill_excused(&s->c)) {
        if (next >= published) {
            failf(s->name, "flooded subscriber", "got all %d messages "
                  "published to it, yet it was closed for not reading", next);
            rc = B_FAIL;
        } else if ((long long)published * MSG + (1LL << 20) <= dconf.hard_limit) {
            failf(s->name, "flooded subscriber", "closed after %d messages of "
                  "%d bytes, under client-output-hard-limit %lld", published,
                  MSG, dconf.hard_limit);
            rc = B_FAIL;
        }
    }
    free(val);
    if (rc == B_OK) {
        rc = B_LOST;            /* closed, as it had to be */
    }
out:
    cx_close(&s->side);
    sb_free(&rq);
    sb_free(&out);
    sb_free(&msg);
    pthread_mutex_unlock(&flood_token);
    return rc;
}

static int
churn_connect(struct churn *s)
{
    char why[128];
    if (cx_open(&s->c, &victims[s->vi].kills, why, sizeof(why)) != 0) {
        failf(s->name, "connect", "%s", why);
        return B_FAIL;
    }
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "CLIENT", "ID", NULL);
    pthread_rwlock_rdlock(&busy_lock);
    int r = cx_call(&s->c, s->name, "CLIENT ID", &rq, &out);
    pthread_rwlock_unlock(&busy_lock);
    int rc = B_OK;
    if (r < 0) {
        rc = B_FAIL;
    } else if (r == 0) {
        rc = cx_kill_excused(&s->c) ? B_LOST : B_FAIL;
        if (rc == B_FAIL) {
            failf(s->name, "CLIENT ID", "connection closed unexpectedly");
        }
    } else {
        struct rv v;
        rv_parse(out.p, &v);
        s->c.id = v.t == ':' ? v.i : 0;
        rv_free(&v);
        if (s->c.id <= 0) {
            rc = churn_fail_frame(s, "CLIENT ID", "an id", out.p, out.len);
        }
    }
    sb_free(&rq);
    sb_free(&out);
    if (rc == B_OK) {
        victim_up(s->vi, &s->c);
        for (int k = 0; k <= NCHURN_CH; k++) {
            s->state[k] = SUB_NONE;
        }
        s->nsubs = 0;
        s->head = s->tail = 0;
    } else {
        cx_close(&s->c);
    }
    return rc;
}

static void
churn_down(struct churn *s)
{
    struct victim *v = &victims[s->vi];
    pthread_mutex_lock(&v->mu);
    v->up = false;
    pthread_mutex_unlock(&v->mu);
    cx_close(&s->c);
}

/* One change of subscriptions (under the busy read lock: -BUSY would
 * leave the count ambiguous), its confirmation read. */
static int
churn_step(struct churn *s)
{
    struct sbuf rq = { 0 };
    int k = (int)rnd_below(&s->r, NCHURN_CH + 2);
    char ch[8];
    s->head = s->tail = 0;      /* all confirmed before each step */
    if (k == NCHURN_CH + 1) {
        /* PING in subscribed mode (RESP2): [pong, ""]; else +PONG. */
        req(&rq, "PING", NULL);
        s->tail = 1;
        const char *b = s->nsubs > 0 ? "*2\r\n$4\r\npong\r\n$0\r\n\r\n" : "+PONG\r\n";
        snprintf(s->fifo[0].bytes, sizeof(s->fifo[0].bytes), "%s", b);
        s->fifo[0].len = strlen(b);
        s->fifo[0].slot = NCHURN_CH;
        s->fifo[0].to = s->state[NCHURN_CH];
    } else if (k == NCHURN_CH) {
        bool on = s->state[NCHURN_CH] == SUB_ON;
        s->nsubs += on ? -1 : 1;
        churn_expect(s, on ? "punsubscribe" : "psubscribe", "ch:*", NCHURN_CH,
                     on ? SUB_NONE : SUB_ON);
        s->state[NCHURN_CH] = on ? UNSUB_PENDING : SUB_PENDING;
        req(&rq, on ? "PUNSUBSCRIBE" : "PSUBSCRIBE", "ch:*", NULL);
    } else {
        snprintf(ch, sizeof(ch), "ch:%d", k);
        bool on = s->state[k] == SUB_ON;
        s->nsubs += on ? -1 : 1;
        churn_expect(s, on ? "unsubscribe" : "subscribe", ch, k,
                     on ? SUB_NONE : SUB_ON);
        s->state[k] = on ? UNSUB_PENDING : SUB_PENDING;
        req(&rq, on ? "UNSUBSCRIBE" : "SUBSCRIBE", ch, NULL);
    }
    pthread_rwlock_rdlock(&busy_lock);
    int rc = cx_send(&s->c, rq.p, rq.len) == 0 ? churn_read(s, opt.io_timeout_ms, true)
                                               : B_LOST;
    pthread_rwlock_unlock(&busy_lock);
    if (rc == B_LOST && !cx_kill_excused(&s->c)) {
        failf(s->name, "pub/sub", "connection closed unexpectedly");
        rc = B_FAIL;
    }
    sb_free(&rq);
    return rc;
}

static void *
churn_main(void *arg)
{
    struct churn *s = arg;
    int rc = B_LOST;
    while (rc != B_FAIL && running()) {
        if (s->c.fd < 0) {
            atomic_store(&thread_op[s->tid], "connect");
            rc = churn_connect(s);
            continue;
        }
        uint64_t k = rnd_below(&s->r, 100);
        if (k < 2) {
            atomic_store(&thread_op[s->tid], "flood");
            pthread_rwlock_rdlock(&busy_lock);
            rc = churn_flood(s);
            pthread_rwlock_unlock(&busy_lock);
        } else if (k < 40) {
            atomic_store(&thread_op[s->tid], "subscriptions");
            rc = churn_step(s);
        } else {
            atomic_store(&thread_op[s->tid], "reading messages");
            rc = churn_read(s, 20 + (int)rnd_below(&s->r, 200), false);
        }
        if (rc == B_LOST) {
            churn_down(s);
        }
    }
    churn_down(s);
    cx_close(&s->side);
    atomic_store(&thread_op[s->tid], "done");
    return NULL;
}

/* ---- monitors ------------------------------------------------------------- */

struct monitor {
    int idx, tid;
    char name[24];
    struct cx m, k;
    uint64_t marker_n;
    bool outstanding;
    char marker[64];            /* the line part to find */
    int64_t sent_ms;
    int seen;
};

/* "+<sec>.<usec> [<db> <addr>] "<arg>" ..." */
static bool
monitor_line_ok(const char *p, size_t n)
{
    size_t i = 1;
    if (n < 30 || p[0] != '+' || p[n - 2] != '\r' || p[n - 3] != '"') {
        return false;
    }
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        i++;
    }
    if (i < 2 || i >= n || p[i] != '.') {
        return false;
    }
    for (int d = 0; d < 6; d++) {
        if (++i >= n || p[i] < '0' || p[i] > '9') {
            return false;
        }
    }
    if (++i + 2 >= n || p[i] != ' ' || p[i + 1] != '[') {
        return false;
    }
    i += 2;
    size_t d0 = i;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        i++;
    }
    if (i == d0 || i >= n || p[i] != ' ') {
        return false;
    }
    size_t a0 = ++i;
    while (i < n && p[i] != ']' && p[i] != ' ') {
        i++;
    }
    return i > a0 && i + 2 < n && p[i] == ']' && p[i + 1] == ' ' && p[i + 2] == '"';
}

static int
monitor_connect(struct monitor *s)
{
    char why[128];
    if (cx_open(&s->m, NULL, why, sizeof(why)) != 0) {
        failf(s->name, "connect", "%s", why);
        return B_FAIL;
    }
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "MONITOR", NULL);
    pthread_rwlock_rdlock(&busy_lock);
    int r = cx_call(&s->m, s->name, "MONITOR", &rq, &out);
    pthread_rwlock_unlock(&busy_lock);
    int rc = B_OK;
    if (r < 0) {
        rc = B_FAIL;
    } else if (r == 0) {
        rc = B_LOST;
    } else if (out.len != 5 || memcmp(out.p, "+OK\r\n", 5) != 0) {
        fail_mismatch(s->name, "MONITOR", "+OK\r\n", 5, out.p, out.len);
        rc = B_FAIL;
    }
    sb_free(&rq);
    sb_free(&out);
    if (rc != B_OK) {
        cx_close(&s->m);
    }
    s->outstanding = false;
    return rc;
}

static void *
monitor_main(void *arg)
{
    struct monitor *s = arg;
    int rc = B_LOST;
    struct sbuf rq = { 0 }, out = { 0 };
    while (rc != B_FAIL && running()) {
        if (s->m.fd < 0) {
            atomic_store(&thread_op[s->tid], "connect");
            rc = monitor_connect(s);
            if (rc == B_LOST) {
                atomic_fetch_add(&st_mon_reconnects, 1);
                sleep_ms(10);
            }
            continue;
        }
        atomic_store(&thread_op[s->tid], "reading lines");
        if (!s->outstanding && now_ms() - s->sent_ms > 200) {
            char why[128];
            if (s->k.fd < 0 && cx_open(&s->k, NULL, why, sizeof(why)) != 0) {
                failf(s->name, "connect (marker)", "%s", why);
                rc = B_FAIL;
                break;
            }
            uint64_t end0 = atomic_load(&busy_end);
            char arg1[48];
            snprintf(arg1, sizeof(arg1), "mon%d:%" PRIu64, s->idx, ++s->marker_n);
            rq.len = 0;
            req(&rq, "ECHO", arg1, NULL);
            int r = cx_call(&s->k, s->name, "ECHO (marker)", &rq, &out);
            s->sent_ms = now_ms();
            if (r < 0) {
                rc = B_FAIL;
                break;
            }
            if (r == 0) {
                cx_close(&s->k);        /* a TYPE normal kill */
            } else if (atomic_load(&busy_begin) > end0 &&
                       out.len == sizeof(BUSY_LINE) - 1 &&
                       memcmp(out.p, BUSY_LINE, out.len) == 0) {
                /* refused: send another later */
            } else {
                struct sbuf want = { 0 };
                exp_bulk(&want, arg1, strlen(arg1));
                if (out.len != want.len || memcmp(out.p, want.p, want.len) != 0) {
                    fail_mismatch(s->name, "ECHO (marker)", want.p, want.len,
                                  out.p, out.len);
                    sb_free(&want);
                    rc = B_FAIL;
                    break;
                }
                sb_free(&want);
                snprintf(s->marker, sizeof(s->marker), "\"ECHO\" \"%s\"\r\n", arg1);
                s->outstanding = true;
            }
        }
        const char *p;
        size_t n;
        int r = cx_next(&s->m, &p, &n, 50);
        if (r == -1) {
            if (s->outstanding && now_ms() - s->sent_ms > opt.io_timeout_ms) {
                failf(s->name, "MONITOR", "the line of %s did not come within "
                      "the I/O timeout", s->marker);
                rc = B_FAIL;
            }
            continue;
        }
        if (r == 0) {
            /* A TYPE normal kill, or the hard limit (a monitor that fell
             * behind): reconnect. */
            atomic_fetch_add(&st_mon_reconnects, 1);
            cx_close(&s->m);
            rc = B_LOST;
            continue;
        }
        if (r < 0 || !monitor_line_ok(p, n)) {
            struct sbuf g = { 0 };
            escape(&g, p, n, 200);
            failf(s->name, "MONITOR", "a line +<time> [<db> <addr>] \"...\", "
                  "got \"%s\"", g.p ? g.p : "");
            sb_free(&g);
            rc = B_FAIL;
            break;
        }
        atomic_fetch_add(&st_mon_lines, 1);
        size_t ml = strlen(s->marker);
        if (s->outstanding && n >= ml && memcmp(p + n - ml, s->marker, ml) == 0) {
            s->outstanding = false;
            s->seen++;
            atomic_fetch_add(&st_mon_markers, 1);
        }
        cx_consume(&s->m, n);
    }
    sb_free(&rq);
    sb_free(&out);
    cx_close(&s->m);
    cx_close(&s->k);
    atomic_store(&thread_op[s->tid], "done");
    return NULL;
}

/* ---- the buster ---------------------------------------------------------- */

struct buster {
    int tid;
    struct rng r;
    struct cx a, b;
};

/* One window: A runs the spinning script; B PINGs until -BUSY, then
 * SCRIPT KILL (+OK); A's error names the script; B's PING is +PONG. No
 * kill can land meanwhile (killers hold the read lock), so any close is a
 * failure. */
static int
busy_window(struct buster *s)
{
    const char *who = "buster";
    char why[128];
    struct sbuf rq = { 0 }, out = { 0 }, want = { 0 };
    int rc = B_FAIL;
    if ((s->a.fd < 0 && cx_open(&s->a, NULL, why, sizeof(why)) != 0) ||
        (s->b.fd < 0 && cx_open(&s->b, NULL, why, sizeof(why)) != 0)) {
        failf(who, "connect", "%s", why);
        return B_FAIL;
    }
    atomic_fetch_add(&busy_begin, 1);
    atomic_fetch_add(&st_busy_windows, 1);
    req(&rq, "EVAL", S_SPIN, "0", NULL);
    if (cx_send(&s->a, rq.p, rq.len) != 0) {
        failf(who, "EVAL (spin)", "could not send");
        goto out;
    }
    int64_t deadline = now_ms() + opt.io_timeout_ms;
    bool busy = false;
    while (!busy) {
        rq.len = 0;
        req(&rq, "PING", NULL);
        int r = cx_call(&s->b, who, "PING (busy?)", &rq, &out);
        if (r <= 0) {
            if (r == 0) {
                failf(who, "PING (busy?)", "connection closed");
            }
            goto out;
        }
        if (out.len == sizeof(BUSY_LINE) - 1 &&
            memcmp(out.p, BUSY_LINE, out.len) == 0) {
            busy = true;
        } else if (out.len != 7 || memcmp(out.p, "+PONG\r\n", 7) != 0) {
            fail_mismatch(who, "PING (busy?)", BUSY_LINE, sizeof(BUSY_LINE) - 1,
                          out.p, out.len);
            goto out;
        } else if (cx_unread(&s->a) > 0 || now_ms() > deadline) {
            struct sbuf g = { 0 };
            escape(&g, s->a.buf + s->a.off, cx_unread(&s->a), 200);
            failf(who, "EVAL (spin)", "no -BUSY for other clients %s (the "
                  "script's caller got \"%s\")", now_ms() > deadline ?
                  "within the I/O timeout" : "before the script returned",
                  g.p ? g.p : "");
            sb_free(&g);
            goto out;
        } else {
            sleep_ms(10);
        }
    }
    rq.len = 0;
    req(&rq, "SCRIPT", "KILL", NULL);
    int r = cx_call(&s->b, who, "SCRIPT KILL", &rq, &out);
    if (r != 1 || out.len != 5 || memcmp(out.p, "+OK\r\n", 5) != 0) {
        if (r >= 0) {
            fail_mismatch(who, "SCRIPT KILL", "+OK\r\n", 5, out.p, out.len);
        }
        goto out;
    }
    sb_printf(&want, "-ERR Script killed by user with SCRIPT KILL... script: "
              "%s, on @user_script:1.\r\n", sha_spin);
    const char *p;
    size_t n;
    r = cx_next(&s->a, &p, &n, opt.io_timeout_ms);
    if (r != 1 || n != want.len || memcmp(p, want.p, n) != 0) {
        fail_mismatch(who, "EVAL (spin, killed)", want.p, want.len,
                      r >= 0 ? p : "", r >= 0 ? n : 0);
        goto out;
    }
    cx_consume(&s->a, n);
    atomic_fetch_add(&busy_end, 1);
    rq.len = 0;
    req(&rq, "PING", NULL);
    r = cx_call(&s->b, who, "PING (after)", &rq, &out);
    if (r != 1 || out.len != 7 || memcmp(out.p, "+PONG\r\n", 7) != 0) {
        if (r >= 0) {
            fail_mismatch(who, "PING (after the script)", "+PONG\r\n", 7,
                          out.p, out.len);
        }
        goto out;
    }
    rc = B_OK;
out:
    if (rc != B_OK) {
        atomic_fetch_add(&busy_end, 1);
    }
    sb_free(&rq);
    sb_free(&out);
    sb_free(&want);
    return rc;
}

static void *
buster_main(void *arg)
{
    struct buster *s = arg;
    while (running()) {
        atomic_store(&thread_op[s->tid], "between windows");
        int64_t until = now_ms() + 1500 + (int64_t)rnd_below(&s->r, 2500);
        while (running() && now_ms() < until) {
            sleep_ms(50);
        }
        if (!running()) {
            break;
        }
        atomic_store(&thread_op[s->tid], "waiting for the write lock");
        pthread_rwlock_wrlock(&busy_lock);
        atomic_store(&thread_op[s->tid], "busy window");
        int rc = busy_window(s);
        pthread_rwlock_unlock(&busy_lock);
        if (rc != B_OK) {
            break;
        }
        /* TYPE normal kills may take A or B between windows. */
        if (s->a.fd >= 0 && cx_fill(&s->a, 0) == 0) {
            cx_close(&s->a);
        }
        if (s->b.fd >= 0 && cx_fill(&s->b, 0) == 0) {
            cx_close(&s->b);
        }
        cx_close(&s->a);
        cx_close(&s->b);
    }
    cx_free(&s->a);
    cx_free(&s->b);
    atomic_store(&thread_op[s->tid], "done");
    return NULL;
}

/* ---- the hang bound --------------------------------------------------------- */

static atomic_bool all_done;

static void *
watchdog_main(void *arg)
{
    (void)arg;
    int64_t bound = g_end_ms + 3LL * opt.io_timeout_ms + 60000;
    while (!atomic_load(&all_done)) {
        if (now_ms() > bound) {
            fprintf(stderr, "stress: FAIL hang: still running %lld s after the "
                    "end; what each thread was doing:\n",
                    (long long)(now_ms() - g_end_ms) / 1000);
            for (int i = 0; i < nthreads; i++) {
                const char *op = atomic_load(&thread_op[i]);
                if (op && strcmp(op, "done") != 0) {
                    fprintf(stderr, "  %-12s %s\n", thread_name[i], op);
                }
            }
            fflush(stderr);
            _exit(3);
        }
        sleep_ms(200);
    }
    return NULL;
}

/* ---- main ------------------------------------------------------------------ */

static struct cx ctl;

/* A request on the control connection (reconnecting if a TYPE normal kill
 * took it): the reply in out, or exit on failure. */
static void
ctl_call(const char *op, struct sbuf *rq, struct sbuf *out)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        char why[128];
        if (ctl.fd < 0 && cx_open(&ctl, NULL, why, sizeof(why)) != 0) {
            fprintf(stderr, "stress: cannot connect to %s:%d: %s\n", opt.host,
                    opt.port, why);
            exit(2);
        }
        int r = cx_call(&ctl, "control", op, rq, out);
        if (r == 1) {
            return;
        }
        cx_close(&ctl);
        if (r < 0) {
            break;
        }
    }
    fprintf(stderr, "stress: FAIL control op %s: no reply\n", op);
    exit(1);
}

static long long
config_get(const char *name)
{
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "CONFIG", "GET", name, NULL);
    ctl_call("CONFIG GET", &rq, &out);
    struct rv v;
    rv_parse(out.p, &v);
    long long x = -1;
    if (v.t == '*' && v.n == 2 && v.el[1].t == '$') {
        char tmp[64];
        snprintf(tmp, sizeof(tmp), "%.*s", (int)v.el[1].len, v.el[1].s);
        x = strtoll(tmp, NULL, 10);
        if (strcmp(name, "io-threads") == 0) {
            snprintf(dconf.io_threads, sizeof(dconf.io_threads), "%s", tmp);
        }
    }
    rv_free(&v);
    sb_free(&rq);
    sb_free(&out);
    return x;
}

/* redis-server's hard limit: "normal <hard> <soft> <seconds> ..." of
 * client-output-buffer-limit, which must be the same for pubsub. */
static long long
reference_hard_limit(void)
{
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "CONFIG", "GET", "client-output-buffer-limit", NULL);
    ctl_call("CONFIG GET", &rq, &out);
    struct rv v;
    rv_parse(out.p, &v);
    long long normal = -1, pubsub = -2;
    if (v.t == '*' && v.n == 2 && v.el[1].t == '$') {
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%.*s", (int)v.el[1].len, v.el[1].s);
        char *p = strstr(tmp, "normal ");
        char *q = strstr(tmp, "pubsub ");
        normal = p ? strtoll(p + 7, NULL, 10) : -1;
        pubsub = q ? strtoll(q + 7, NULL, 10) : -2;
    }
    rv_free(&v);
    sb_free(&rq);
    sb_free(&out);
    return normal == pubsub ? normal : -1;
}

static long long
info_field(const char *section, const char *field)
{
    struct sbuf rq = { 0 }, out = { 0 };
    req(&rq, "INFO", section, NULL);
    ctl_call("INFO", &rq, &out);
    char pat[64];
    snprintf(pat, sizeof(pat), "\r\n%s:", field);
    const char *f = memmem(out.p, out.len, pat, strlen(pat));
    long long x = f ? strtoll(f + strlen(pat), NULL, 10) : -1;
    sb_free(&rq);
    sb_free(&out);
    return x;
}

static void
ctl_expect(const char *op, struct sbuf *rq, const char *want, size_t wlen)
{
    struct sbuf out = { 0 };
    ctl_call(op, rq, &out);
    if (out.len != wlen || memcmp(out.p, want, wlen) != 0) {
        fail_mismatch("control", op, want, wlen, out.p, out.len);
        exit(1);
    }
    sb_free(&out);
}

static void
usage(void)
{
    fprintf(stderr,
            "usage: stress --port P [--host 127.0.0.1] [--seconds 30] "
            "[--seed N]\n"
            "              [--workers 64] [--io-timeout SECONDS] [--reference]\n"
            "Runs against a fresh cellgate (FLUSHALL first) with "
            "client-output-hard-limit\n"
            "<= 64mb and busy-reply-threshold 1..1000 (tests/stress/run.sh "
            "starts one).\n"
            "--reference: against Debian's redis-server instead (no "
            "CL.THROTTLE; the hard limit\n"
            "is client-output-buffer-limit's, the same for normal and "
            "pubsub).\n");
    exit(2);
}

static long long
arg_num(const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        usage();
    }
    return v;
}

int
main(int argc, char **argv)
{
    bool seeded = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--reference") == 0) {
            opt.reference = true;
            continue;
        }
        if (v == NULL) {
            usage();
        }
        i++;
        if (strcmp(a, "--port") == 0) {
            opt.port = (int)arg_num(v, 1, 65535);
        } else if (strcmp(a, "--host") == 0) {
            opt.host = v;
        } else if (strcmp(a, "--seconds") == 0) {
            opt.seconds = (int)arg_num(v, 1, 86400);
        } else if (strcmp(a, "--seed") == 0) {
            opt.seed = (uint64_t)arg_num(v, 0, LLONG_MAX);
            seeded = true;
        } else if (strcmp(a, "--workers") == 0) {
            opt.workers = (int)arg_num(v, 2, MAX_WORKERS);
        } else if (strcmp(a, "--io-timeout") == 0) {
            opt.io_timeout_ms = (int)arg_num(v, 1, 3600) * 1000;
        } else {
            usage();
        }
    }
    if (opt.port == 0) {
        usage();
    }
    struct in_addr probe;
    if (inet_pton(AF_INET, opt.host, &probe) != 1) {
        fprintf(stderr, "stress: --host wants an IPv4 address\n");
        exit(2);
    }
    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        opt.seed = ((uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^
                    (uint64_t)getpid()) % 1000000000ULL;
    }
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    sha1_hex(S_INCR, strlen(S_INCR), sha_incr);
    sha1_hex(S_PAIR, strlen(S_PAIR), sha_pair);
    sha1_hex(S_SPIN, strlen(S_SPIN), sha_spin);
    cx_init(&ctl);

    /* The daemon as it must be for this run. */
    if (opt.reference) {
        dconf.hard_limit = reference_hard_limit();
        dconf.pause_limit = 0;
    } else {
        dconf.hard_limit = config_get("client-output-hard-limit");
        dconf.pause_limit = config_get("client-output-pause-limit");
    }
    dconf.busy_ms = config_get("busy-reply-threshold");
    dconf.maxclients = config_get("maxclients");
    config_get("io-threads");
    if (dconf.hard_limit <= 0 || dconf.hard_limit > 64LL << 20 ||
        dconf.busy_ms <= 0 || dconf.busy_ms > 1000 || dconf.maxclients < 400) {
        fprintf(stderr, "stress: the daemon has an output hard limit of %lld, "
                "busy-reply-threshold %lld, maxclients %lld: this run needs a "
                "hard limit of at most 64mb, a threshold of 1..1000 ms and "
                "maxclients of at least 400\n", dconf.hard_limit, dconf.busy_ms,
                dconf.maxclients);
        exit(2);
    }
    printf("stress: seed %" PRIu64 " (--seed to repeat), %d s, %d workers, "
           "%d stable + %d churn subscribers, %d monitors; daemon io-threads %s, "
           "client-output-pause-limit %lld, client-output-hard-limit %lld, "
           "busy-reply-threshold %lld ms\n", opt.seed, opt.seconds, opt.workers,
           opt.stable_subs, opt.churn_subs, opt.monitors, dconf.io_threads,
           dconf.pause_limit, dconf.hard_limit, dconf.busy_ms);

    struct sbuf rq = { 0 }, want = { 0 };
    req(&rq, "FLUSHALL", NULL);
    ctl_expect("FLUSHALL", &rq, "+OK\r\n", 5);
    const char *const bodies[3] = { S_INCR, S_PAIR, S_SPIN };
    const char *const shas[3] = { sha_incr, sha_pair, sha_spin };
    for (int i = 0; i < 3; i++) {
        rq.len = want.len = 0;
        req(&rq, "SCRIPT", "LOAD", bodies[i], NULL);
        exp_bulk(&want, shas[i], 40);
        ctl_expect("SCRIPT LOAD", &rq, want.p, want.len);
    }
    /* A value whose GET passes the hard limit. */
    size_t huge = (size_t)dconf.hard_limit + (1u << 20);
    char *hv = malloc(huge);
    fill_value(hv, huge, 5);
    rq.len = 0;
    const char *sargv[3] = { "SET", "stress:huge", NULL };
    req_argv(&rq, 3, sargv, 2, hv, huge);
    free(hv);
    ctl_expect("SET stress:huge", &rq, "+OK\r\n", 5);
    long long baseline = info_field("clients", "connected_clients");

    int64_t start = now_ms();
    g_end_ms = start + (int64_t)opt.seconds * 1000;
    /* The first TYPE normal kill 5 s in, the first flood 2 s in. */
    atomic_store(&last_kill_all_ms, start);
    atomic_store(&last_flood_ms, start - 6000);
    atomic_store(&last_hard_ms, start);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&busy_lock, &ra);

    int nw = opt.workers, ns = opt.stable_subs, nc = opt.churn_subs,
        nm = opt.monitors;
    nvictims = nw + nc;
    victims = calloc((size_t)nvictims, sizeof(*victims));
    for (int i = 0; i < nvictims; i++) {
        pthread_mutex_init(&victims[i].mu, NULL);
    }
    pub_sent = calloc((size_t)nw, sizeof(*pub_sent));
    struct worker *ws = calloc((size_t)nw, sizeof(*ws));
    struct stable *ss = calloc((size_t)ns, sizeof(*ss));
    struct churn *cs = calloc((size_t)nc, sizeof(*cs));
    struct monitor *ms = calloc((size_t)nm, sizeof(*ms));
    struct buster bs;
    memset(&bs, 0, sizeof(bs));
    pthread_t *th = calloc((size_t)(nw + ns + nc + nm + 2), sizeof(*th));
    int nt = 0;
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog_main, NULL);

    for (int i = 0; i < ns; i++) {
        struct stable *s = &ss[i];
        s->idx = i;
        s->tid = nthreads++;
        snprintf(s->name, sizeof(s->name), "stable%d", i);
        snprintf(thread_name[s->tid], sizeof(thread_name[0]), "%s", s->name);
        cx_init(&s->c);
        s->got = calloc(2 * (size_t)nw, sizeof(*s->got));
        s->last = calloc(2 * (size_t)nw, sizeof(*s->last));
        pthread_create(&th[nt++], NULL, stable_main, s);
    }
    while (atomic_load(&stable_ready) < ns && !atomic_load(&g_failed) &&
           now_ms() < start + opt.io_timeout_ms) {
        sleep_ms(10);
    }
    if (atomic_load(&stable_ready) < ns && !atomic_load(&g_failed)) {
        failf("stable", "SUBSCRIBE", "the subscribers did not get going");
    }
    for (int i = 0; i < nm; i++) {
        struct monitor *s = &ms[i];
        s->idx = i;
        s->tid = nthreads++;
        snprintf(s->name, sizeof(s->name), "monitor%d", i);
        snprintf(thread_name[s->tid], sizeof(thread_name[0]), "%s", s->name);
        cx_init(&s->m);
        cx_init(&s->k);
        pthread_create(&th[nt++], NULL, monitor_main, s);
    }
    for (int i = 0; i < nc; i++) {
        struct churn *s = &cs[i];
        s->idx = i;
        s->vi = nw + i;
        s->tid = nthreads++;
        s->r.s = opt.seed * 1000003u + 7777u + (uint64_t)i;
        snprintf(s->name, sizeof(s->name), "churn%d", i);
        snprintf(thread_name[s->tid], sizeof(thread_name[0]), "%s", s->name);
        cx_init(&s->c);
        cx_init(&s->side);
        s->last = calloc(2 * (size_t)nw, sizeof(*s->last));
        pthread_create(&th[nt++], NULL, churn_main, s);
    }
    int first_worker = nt;
    for (int i = 0; i < nw; i++) {
        struct worker *w = &ws[i];
        w->idx = i;
        w->tid = nthreads++;
        w->r.s = opt.seed * 1000003u + (uint64_t)i;
        snprintf(w->name, sizeof(w->name), "w%d", i);
        snprintf(w->who, sizeof(w->who), "w%d", i);
        snprintf(thread_name[w->tid], sizeof(thread_name[0]), "%s", w->name);
        cx_init(&w->main);
        cx_init(&w->side);
        w->valbuf = malloc(BIG_MAX + 64);
        for (int k = 0; k < NCTR; k++) {
            snprintf(w->key_c[k], sizeof(w->key_c[k]), "w%d:c%d", i, k);
        }
        snprintf(w->key_s, sizeof(w->key_s), "w%d:s", i);
        snprintf(w->key_t, sizeof(w->key_t), "w%d:t:0", i);
        snprintf(w->key_tmp, sizeof(w->key_tmp), "w%d:never", i);
        pthread_create(&th[nt++], NULL, worker_main, w);
    }
    int worker_end = nt;
    bs.tid = nthreads++;
    bs.r.s = opt.seed * 1000003u + 99991u;
    snprintf(thread_name[bs.tid], sizeof(thread_name[0]), "buster");
    cx_init(&bs.a);
    cx_init(&bs.b);
    pthread_create(&th[nt++], NULL, buster_main, &bs);

    while (running()) {
        sleep_ms(100);
    }
    atomic_store(&g_stop, true);
    /* Workers, the buster, churn subscribers and monitors end on their
     * own (each finishing its op; workers check their keys). */
    for (int i = first_worker; i < worker_end; i++) {
        pthread_join(th[i], NULL);
    }
    pthread_join(th[worker_end], NULL);
    for (int i = ns; i < first_worker; i++) {
        pthread_join(th[i], NULL);
    }
    atomic_store(&workers_done, true);
    /* Then END on each stable channel: it comes after everything the
     * workers published. */
    cx_close(&ctl);
    if (!atomic_load(&g_failed)) {
        for (int k = 0; k < NSTABLE_CH; k++) {
            char ch[8];
            snprintf(ch, sizeof(ch), "st:%d", k);
            rq.len = 0;
            req(&rq, "PUBLISH", ch, "END", NULL);
            struct sbuf out = { 0 };
            ctl_call("PUBLISH END", &rq, &out);
            struct rv v;
            rv_parse(out.p, &v);
            if (v.t != ':' || v.i < 2LL * ns) {
                fail_mismatch("control", "PUBLISH END", ":<2 per stable "
                              "subscriber>\r\n", 29, out.p, out.len);
            }
            rv_free(&v);
            sb_free(&out);
        }
    }
    for (int i = 0; i < ns; i++) {
        pthread_join(th[i], NULL);
    }

    /* Every confirmed publish reached every stable subscriber, twice. */
    uint64_t missing = 0;
    for (int i = 0; i < nw && !atomic_load(&g_failed); i++) {
        for (size_t j = 0; j < ws[i].nconf; j++) {
            for (int s = 0; s < ns; s++) {
                for (int kind = 0; kind < 2; kind++) {
                    if (!bm_get(&ss[s].got[kind * nw + i], ws[i].confirmed[j])) {
                        if (missing++ == 0) {
                            failf(ss[s].name, kind ? "pmessage" : "message",
                                  "never got seq %" PRIu64 " of w%d, whose "
                                  "PUBLISH was answered", ws[i].confirmed[j], i);
                        }
                    }
                }
            }
        }
    }
    /* The shared counters: every EXEC and INCR that ran, no more than
     * those whose fate is unknown besides. */
    for (int g = 0; g < NGROUPS && !atomic_load(&g_failed); g++) {
        char key[24];
        snprintf(key, sizeof(key), "shared:%d", g);
        rq.len = 0;
        req(&rq, "GET", key, NULL);
        struct sbuf out = { 0 };
        ctl_call("GET shared", &rq, &out);
        struct rv v;
        rv_parse(out.p, &v);
        long long x = 0;
        if (!v.null) {
            rv_num(&v, &x);
        }
        long long lo = atomic_load(&shared_done[g]);
        long long hi = lo + atomic_load(&shared_maybe[g]);
        if (x < lo || x > hi) {
            failf("control", "GET shared", "%s is %lld; the increments known "
                  "to have run say %lld..%lld", key, x, lo, hi);
        }
        rv_free(&v);
        sb_free(&out);
    }
    /* The daemon answers, and every client of ours is gone from it. */
    struct cx fresh;
    cx_init(&fresh);
    char why[128];
    struct sbuf out = { 0 };
    rq.len = 0;
    req(&rq, "PING", NULL);
    if (cx_open(&fresh, NULL, why, sizeof(why)) != 0 ||
        cx_call(&fresh, "control", "PING", &rq, &out) != 1 || out.len != 7 ||
        memcmp(out.p, "+PONG\r\n", 7) != 0) {
        failf("control", "PING (a new connection at the end)", "+PONG");
    }
    cx_free(&fresh);
    long long clients = -1;
    int64_t cdeadline = now_ms() + 20000;
    while (!atomic_load(&g_failed)) {
        clients = info_field("clients", "connected_clients");
        if (clients == baseline || now_ms() > cdeadline) {
            break;
        }
        sleep_ms(50);
    }
    if (!atomic_load(&g_failed) && clients != baseline) {
        failf("control", "INFO clients", "connected_clients %lld 20 s after "
              "every client closed; %lld before the run", clients, baseline);
    }
    long long received = info_field("stats", "total_connections_received");
    long long cmds = info_field("stats", "total_commands_processed");
    atomic_store(&all_done, true);
    pthread_join(wd, NULL);

    for (int i = 0; i < nm && !atomic_load(&g_failed); i++) {
        if (ms[i].seen < 1) {
            failf(ms[i].name, "MONITOR", "saw none of its markers");
        }
    }
    int64_t took = now_ms() - start;
    printf("stress: %.1f s; %" PRIuFAST64 " replies checked in %" PRIuFAST64
           " batches; %" PRIuFAST64 " -BUSY in %" PRIuFAST64 " script windows; "
           "%" PRIuFAST64 " kills (+%" PRIuFAST64 " TYPE normal), %" PRIuFAST64
           " connections lost and checked; WATCH %" PRIuFAST64 " won %"
           PRIuFAST64 " lost; %" PRIuFAST64 " pauses, %" PRIuFAST64
           " CLIENT REPLY, %" PRIuFAST64 " QUIT, %" PRIuFAST64 " cut requests, %"
           PRIuFAST64 " big, %" PRIuFAST64 " slow readers, %" PRIuFAST64
           " hard-limit closes, %" PRIuFAST64 " floods; %" PRIuFAST64
           " publishes answered, %" PRIuFAST64 " messages checked; %" PRIuFAST64
           " MONITOR lines, %" PRIuFAST64 " markers, %" PRIuFAST64
           " monitor reconnects; %" PRIuFAST64 " churn connections; daemon: "
           "%lld connections, %lld commands\n",
           took / 1000.0, atomic_load(&st_requests), atomic_load(&st_batches),
           atomic_load(&st_busy_replies), atomic_load(&st_busy_windows),
           atomic_load(&st_kills), atomic_load(&st_kill_all),
           atomic_load(&st_lost), atomic_load(&st_watch_won),
           atomic_load(&st_watch_lost), atomic_load(&st_pauses),
           atomic_load(&st_reply_modes), atomic_load(&st_quits),
           atomic_load(&st_mid), atomic_load(&st_big), atomic_load(&st_slow),
           atomic_load(&st_hard), atomic_load(&st_floods),
           atomic_load(&st_pub_confirmed), atomic_load(&st_msgs),
           atomic_load(&st_mon_lines), atomic_load(&st_mon_markers),
           atomic_load(&st_mon_reconnects), atomic_load(&st_churn_conns),
           received, cmds);
    if (atomic_load(&g_failed)) {
        printf("stress: FAILED (seed %" PRIu64 ")\n", opt.seed);
        return 1;
    }
    printf("stress: passed (seed %" PRIu64 ")\n", opt.seed);
    return 0;
}
