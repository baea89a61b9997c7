/*
 * bench/seq.c - redis-benchmark for a sequence of commands on one key.
 *
 *   bench-seq [-h HOST] [-p PORT] [-c CLIENTS] [-P PIPELINE] [-n REQUESTS]
 *             [-r KEYSPACE] [--iter-base N] [--csv] [-q]
 *             CMD ARG... [';' CMD ARG...]...
 *
 * redis-benchmark draws a new random number for every `__rand_int__` of a
 * request, so it cannot send `INCR k` followed by `EXPIRE k 3600` on the
 * same k. bench-seq sends the commands separated by ';' in turn, as one
 * iteration, and every `__rand_int__` of one iteration is the same number
 * below KEYSPACE, written as 12 zero-padded digits like redis-benchmark's
 * (so `key:__rand_int__` is a 16-byte name).
 *
 * `__iter__` is the iteration's number, counted over all connections from
 * N (--iter-base, 0 by default), and `__iter-W__` (W decimal) that number
 * minus W: the score and the cutoff of a sliding log whose entries live W
 * iterations. With keys drawn from KEYSPACE, such a log holds W / KEYSPACE
 * entries on average once W iterations have run (Poisson). A later run
 * continues the logs when its base is the previous run's base plus its
 * iterations (REQUESTS / commands per iteration). `__iter%M__` (M decimal,
 * at least 1) is the number modulo M: a member drawn from M, so that a set
 * fed `SADD k m__iter%M__` stays at most M members whatever the run's length.
 *
 * Counting is redis-benchmark's: REQUESTS is the number of commands (an
 * INCR+EXPIRE pair is two; REQUESTS is rounded up to whole iterations, and
 * every iteration is sent whole), and each of the CLIENTS connections writes
 * PIPELINE commands at a time, then reads their PIPELINE replies before it
 * writes again. An iteration may straddle two batches: at -P 1 the EXPIRE
 * of a pair goes out after the INCR's reply, on the same connection.
 * Latency, as redis-benchmark 7 counts it, is from the write of a batch to
 * the arrival of its first reply, recorded once per reply of the batch.
 *
 * --csv prints redis-benchmark 7's --csv header and one row ("test" is the
 * command line, ';'-separated); -q a one-line summary. Any error reply ends
 * the run with "Error from server: ..." on stderr and exit status 1, as
 * redis-benchmark 7 does; a dropped connection also exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>  /* redisReaderCreate, redisReply */

#define MAX_CMDS 16
#define MAX_ARGS 32
#define RAND_TAG "__rand_int__"
#define ITER_TAG "__iter"
#define HIST_US 1000000       /* latency buckets of 1 us up to 1 s */

struct cmd {
    int argc;
    char *argv[MAX_ARGS];
};

struct conn {
    int fd;
    redisReader *reader;
    char *out;              /* the batch being written */
    size_t out_len, out_off;
    long pending;           /* replies of the batch still to read */
    long long start_us;     /* when the batch's write began */
    long long latency_us;   /* -1 until the batch's first reply */
    int pos;                /* next command of the sequence */
    int want_out;           /* registered for EPOLLOUT */
    char key[13];           /* the iteration's 12 digits */
    long long iter;         /* the iteration's number (__iter__) */
};

static struct cmd cmds[MAX_CMDS];
static int ncmds;
static long keyspace;
static long long iter_next;    /* the next iteration's number */
static long long *hist;     /* HIST_US + 1 buckets: the last one is >= 1 s */
static long long lat_max_us, lat_min_us = -1, lat_sum_us, lat_count;

static long long
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
die(const char *what)
{
    fprintf(stderr, "bench-seq: %s\n", what);
    exit(1);
}

static void
record(long long us)
{
    hist[us < HIST_US ? us : HIST_US]++;
    if (us > lat_max_us) {
        lat_max_us = us;
    }
    if (lat_min_us < 0 || us < lat_min_us) {
        lat_min_us = us;
    }
    lat_sum_us += us;
    lat_count++;
}

/* The latency (ms) below which a share q of the replies arrived. */
static double
percentile(double q)
{
    long long want = (long long)(q * (double)lat_count + 0.5), seen = 0;
    if (want < 1) {
        want = 1;
    }
    for (long i = 0; i <= HIST_US; i++) {
        seen += hist[i];
        if (seen >= want) {
            return (i == HIST_US ? (double)lat_max_us : (double)i) / 1000.0;
        }
    }
    return (double)lat_max_us / 1000.0;
}

/* The next tag of a (__rand_int__, __iter__, __iter-W__ or __iter%M__) at
 * or after a: its start, its length in *len and what replaces it in out
 * (NUL ended); NULL when there is none. */
static const char *
next_tag(const char *a, const struct conn *c, size_t *len, char out[32])
{
    for (const char *t = strstr(a, "__"); t != NULL; t = strstr(t + 1, "__")) {
        if (strncmp(t, RAND_TAG, strlen(RAND_TAG)) == 0) {
            *len = strlen(RAND_TAG);
            memcpy(out, c->key, 13);
            return t;
        }
        if (strncmp(t, ITER_TAG, strlen(ITER_TAG)) != 0) {
            continue;
        }
        const char *p = t + strlen(ITER_TAG);
        long long minus = 0, mod = 0;
        if (*p == '-' && p[1] >= '0' && p[1] <= '9') {
            char *end;
            minus = strtoll(p + 1, &end, 10);
            p = end;
        } else if (*p == '%' && p[1] >= '1' && p[1] <= '9') {
            char *end;
            mod = strtoll(p + 1, &end, 10);
            p = end;
        }
        if (strncmp(p, "__", 2) == 0) {
            *len = (size_t)(p + 2 - t);
            snprintf(out, 32, "%lld", mod > 0 ? c->iter % mod : c->iter - minus);
            return t;
        }
    }
    return NULL;
}

/* Append one command in RESP to c->out, its tags replaced (next_tag). */
static void
append_cmd(struct conn *c, const struct cmd *cmd)
{
    char arg[512], rep[32];
    size_t need = 16;
    for (int i = 0; i < cmd->argc; i++) {
        need += strlen(cmd->argv[i]) + 64;
    }
    c->out = realloc(c->out, c->out_len + need);
    if (c->out == NULL) {
        die("out of memory");
    }
    c->out_len += (size_t)sprintf(c->out + c->out_len, "*%d\r\n", cmd->argc);
    for (int i = 0; i < cmd->argc; i++) {
        const char *a = cmd->argv[i];
        size_t tlen;
        const char *tag = next_tag(a, c, &tlen, rep);
        if (tag != NULL) {
            /* Every occurrence in the argument, as redis-benchmark does. */
            size_t n = 0;
            while (tag != NULL
                   && n + (size_t)(tag - a) + strlen(rep) + 1 < sizeof(arg)) {
                memcpy(arg + n, a, (size_t)(tag - a));
                n += (size_t)(tag - a);
                memcpy(arg + n, rep, strlen(rep));
                n += strlen(rep);
                a = tag + tlen;
                tag = next_tag(a, c, &tlen, rep);
            }
            snprintf(arg + n, sizeof(arg) - n, "%s", a);
            a = arg;
        }
        c->out_len += (size_t)sprintf(c->out + c->out_len, "$%zu\r\n%s\r\n",
                                      strlen(a), a);
    }
}

/* Build c's next batch: up to `pipeline` commands, while the budget lasts.
 * An iteration takes its ncmds commands from the budget when it starts, so
 * every started iteration is finished (at -P 1, over several batches) and
 * exactly `requests` commands go out in all. Returns the batch's size. */
static long
next_batch(struct conn *c, long pipeline, long *budget)
{
    long n = 0;
    c->out_len = c->out_off = 0;
    while (n < pipeline) {
        if (c->pos == 0) {
            if (*budget < ncmds) {
                break;
            }
            *budget -= ncmds;
            /* redis-benchmark's draw: random() below the keyspace, its
             * last 12 decimal digits. */
            unsigned long r = keyspace > 0 ? (unsigned long)(random() % keyspace) : 0;
            for (int d = 11; d >= 0; d--) {
                c->key[d] = (char)('0' + r % 10);
                r /= 10;
            }
            c->key[12] = '\0';
            c->iter = iter_next++;
        }
        append_cmd(c, &cmds[c->pos]);
        c->pos = (c->pos + 1) % ncmds;
        n++;
    }
    c->pending = n;
    c->latency_us = -1;
    c->start_us = now_us();
    return n;
}

/* Write what the socket takes of c's batch; wait for EPOLLOUT only while
 * some of it is left. */
static void
flush(int ep, struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0 && errno == EAGAIN) {
            break;
        }
        if (w <= 0) {
            die("write failed: connection lost");
        }
        c->out_off += (size_t)w;
    }
    int want_out = c->out_off < c->out_len;
    if (want_out != c->want_out) {
        struct epoll_event ev = { .events = EPOLLIN | (want_out ? EPOLLOUT : 0),
                                  .data.ptr = c };
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want_out;
    }
}

static int
connect_to(const char *host, const char *port)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res, *ai;
    int fd = -1;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        die("cannot resolve the host");
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            break;
        }
        if (fd >= 0) {
            close(fd);
        }
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "Could not connect to Redis at %s:%s: %s\n", host, port,
                strerror(errno));
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void
usage(void)
{
    fprintf(stderr,
            "usage: bench-seq [-h host] [-p port] [-c clients] [-P pipeline] "
            "[-n requests] [-r keyspace] [--iter-base n] [--csv] [-q]\n"
            "                 CMD ARG... [';' CMD ARG...]\n");
    exit(2);
}

static long
num_arg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        usage();
    }
    char *end;
    long v = strtol(argv[++*i], &end, 10);
    if (*end != '\0' || v < 0) {
        usage();
    }
    return v;
}

int
main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *port = "6379";
    long clients = 50, pipeline = 1, requests = 100000;
    int csv = 0, quiet = 0, i;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        const char *o = argv[i];
        if (strcmp(o, "-h") == 0 && i + 1 < argc) {
            host = argv[++i];
        } else if (strcmp(o, "-p") == 0 && i + 1 < argc) {
            port = argv[++i];
        } else if (strcmp(o, "-c") == 0) {
            clients = num_arg(argc, argv, &i);
        } else if (strcmp(o, "-P") == 0) {
            pipeline = num_arg(argc, argv, &i);
        } else if (strcmp(o, "-n") == 0) {
            requests = num_arg(argc, argv, &i);
        } else if (strcmp(o, "-r") == 0) {
            keyspace = num_arg(argc, argv, &i);
        } else if (strcmp(o, "--iter-base") == 0) {
            iter_next = num_arg(argc, argv, &i);
        } else if (strcmp(o, "--csv") == 0) {
            csv = 1;
        } else if (strcmp(o, "-q") == 0) {
            quiet = 1;
        } else {
            usage();
        }
    }
    if (clients < 1 || pipeline < 1 || requests < 1 || i >= argc) {
        usage();
    }
    /* The commands, ';' between them; and the test name for the CSV. */
    char name[2048] = "";
    size_t nlen = 0;
    for (; i < argc; i++) {
        if (strcmp(argv[i], ";") == 0) {
            if (ncmds < MAX_CMDS && cmds[ncmds].argc > 0) {
                ncmds++;
            }
            continue;
        }
        if (ncmds >= MAX_CMDS || cmds[ncmds].argc >= MAX_ARGS || strlen(argv[i]) > 256) {
            die("too many commands or arguments, or an argument over 256 bytes");
        }
        cmds[ncmds].argv[cmds[ncmds].argc++] = argv[i];
        nlen += (size_t)snprintf(name + nlen, sizeof(name) - nlen, "%s%s",
                                 nlen == 0 ? "" : (cmds[ncmds].argc == 1 ? "; " : " "),
                                 argv[i]);
        if (nlen >= sizeof(name)) {
            nlen = sizeof(name) - 1;
        }
    }
    if (ncmds < MAX_CMDS && cmds[ncmds].argc > 0) {
        ncmds++;
    }
    if (ncmds == 0) {
        usage();
    }
    hist = calloc(HIST_US + 1, sizeof(*hist));
    struct conn *conns = calloc((size_t)clients, sizeof(*conns));
    if (hist == NULL || conns == NULL) {
        die("out of memory");
    }
    srandom((unsigned)(time(NULL) ^ getpid()));
    int ep = epoll_create1(0);
    if (ep < 0) {
        die("epoll_create1 failed");
    }

    /* Whole iterations only: REQUESTS rounded up to a multiple of them. */
    requests = (requests + ncmds - 1) / ncmds * ncmds;
    long budget = requests, done = 0;
    long long t0 = now_us();
    for (long k = 0; k < clients; k++) {
        struct conn *c = &conns[k];
        c->fd = connect_to(host, port);
        c->reader = redisReaderCreate();
        if (c->reader == NULL) {
            die("out of memory");
        }
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
            die("epoll_ctl failed");
        }
    }
    t0 = now_us();
    for (long k = 0; k < clients; k++) {
        if (next_batch(&conns[k], pipeline, &budget) > 0) {
            flush(ep, &conns[k]);
        }
    }

    struct epoll_event evs[64];
    char buf[1 << 16];
    while (done < requests) {
        int nev = epoll_wait(ep, evs, 64, 1000);
        if (nev < 0 && errno == EINTR) {
            continue;
        }
        if (nev < 0) {
            die("epoll_wait failed");
        }
        for (int e = 0; e < nev; e++) {
            struct conn *c = evs[e].data.ptr;
            if (c->out_off < c->out_len && (evs[e].events & (EPOLLOUT | EPOLLERR))) {
                flush(ep, c);
            }
            if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || c->pending == 0) {
                continue;
            }
            ssize_t r = read(c->fd, buf, sizeof(buf));
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
                continue;
            }
            if (r <= 0) {
                fprintf(stderr, "Error: Server closed the connection\n");
                exit(1);
            }
            if (redisReaderFeed(c->reader, buf, (size_t)r) != REDIS_OK) {
                die("bad reply stream");
            }
            void *reply;
            while (c->pending > 0) {
                reply = NULL;
                if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {
                    die("bad reply stream");
                }
                if (reply == NULL) {
                    break;
                }
                redisReply *rep = reply;
                if (rep->type == REDIS_REPLY_ERROR) {
                    fprintf(stderr, "Error from server: %s\n", rep->str);
                    exit(1);
                }
                freeReplyObject(reply);
                if (c->latency_us < 0) {
                    c->latency_us = now_us() - c->start_us;
                }
                record(c->latency_us);
                c->pending--;
                done++;
            }
            if (c->pending == 0 && next_batch(c, pipeline, &budget) > 0) {
                flush(ep, c);
            }
        }
    }
    double secs = (double)(now_us() - t0) / 1e6;
    double rps = secs > 0 ? (double)requests / secs : 0;
    double avg = lat_count ? (double)lat_sum_us / (double)lat_count / 1000.0 : 0;
    if (csv) {
        printf("\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\","
               "\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n");
        printf("\"%s\",\"%.2f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\"\n",
               name, rps, avg, (double)lat_min_us / 1000.0, percentile(0.50),
               percentile(0.95), percentile(0.99), (double)lat_max_us / 1000.0);
    } else if (quiet) {
        printf("%s: %.2f requests per second, p50=%.3f msec\n", name, rps,
               percentile(0.50));
    } else {
        printf("====== %s ======\n  %ld requests completed in %.2f seconds\n"
               "  %ld parallel clients, pipeline %ld, %d command(s) per iteration\n"
               "  %.2f requests per second\n  latency ms: avg %.3f min %.3f p50 %.3f "
               "p95 %.3f p99 %.3f max %.3f\n", name, requests, secs, clients, pipeline,
               ncmds, rps, avg, (double)lat_min_us / 1000.0, percentile(0.50),
               percentile(0.95), percentile(0.99), (double)lat_max_us / 1000.0);
    }
    for (long k = 0; k < clients; k++) {
        close(conns[k].fd);
        redisReaderFree(conns[k].reader);
        free(conns[k].out);
    }
    free(conns);
    free(hist);
    return 0;
}
