/*
 * bench/handoff.c - the BLPOP/LPUSH hand-off, for the server CPU it costs.
 *
 *   bench-handoff [-h HOST] [-p PORT] [-c CLIENTS] [-P PIPELINE] [-n HANDOFFS]
 *                 [-r ignored] [--prefix P] [--check] [--csv] [-q]
 *
 * A worker waiting on a queue and a producer feeding it: CLIENTS
 * connections (at least 2) each wait in `BLPOP <P><i> 0` on a key of their
 * own (P, "hb:" by default, and i as 12 zero-padded digits: 16-byte names);
 * a producer connection `LPUSH`es one value to each of those keys, PIPELINE
 * commands per write, reading each write's replies before the next. Every
 * LPUSH hands its value to the client waiting on the key (the list never
 * holds it), and that client sends its BLPOP again. HANDOFFS counts the
 * values handed over.
 *
 * Every push must find its client parked, not on its way: a server reads
 * its clients' bytes in no promised order (measured: with the BLPOPs
 * written just before the LPUSHes, Redis 7.0 had not parked them all in 1
 * round of 10, cellgate in 8). So the clients are two halves that take
 * turns: a round pushes to one half (its last round to as many as are
 * left) while the other, served the round before, parks again, a whole
 * round of the server's work ahead of the pushes that will serve it; and
 * before the first round the producer waits (INFO clients) until every
 * client is parked. --check names the clients (CLIENT SETNAME) and, before
 * each round, counts the rounds in which CLIENT LIST shows one of its
 * clients not parked (flags=b); it prints the count on stderr, and its
 * runs' CPU includes the CLIENT LISTs. The socket I/O is blocking and in
 * one thread: the server's CPU per hand-off, not the driver's speed, is
 * the figure this is for (bench/run.sh reads it from /proc around the run).
 *
 * --csv prints redis-benchmark 7's --csv header and one row ("rps" is
 * hand-offs per second, the latency the producer's, from a write to its
 * last reply); -q a one-line summary. An error reply or a reply of another
 * shape exits 1.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>  /* redisReaderCreate, redisReply */

struct conn {
    int fd;
    redisReader *reader;
};

static const char *prefix = "hb:";
static int check;
static long rounds_checked, rounds_short;   /* --check */
static long long lat_sum_us, lat_count, lat_min_us = -1, lat_max_us;
static long long *lat_all;      /* every producer latency, for the percentiles */

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
    fprintf(stderr, "bench-handoff: %s\n", what);
    exit(1);
}

static void
connect_to(struct conn *c, const char *host, const char *port)
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
    c->fd = fd;
    c->reader = redisReaderCreate();
    if (c->reader == NULL) {
        die("out of memory");
    }
}

static void
write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            die("write failed: connection lost");
        }
        buf += w;
        len -= (size_t)w;
    }
}

/* The next reply on c, read as it comes; exits on an error reply. */
static redisReply *
read_reply(struct conn *c)
{
    char buf[16384];
    void *reply = NULL;
    for (;;) {
        if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {
            die("bad reply stream");
        }
        if (reply != NULL) {
            break;
        }
        ssize_t r = read(c->fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            fprintf(stderr, "Error: Server closed the connection\n");
            exit(1);
        }
        if (redisReaderFeed(c->reader, buf, (size_t)r) != REDIS_OK) {
            die("bad reply stream");
        }
    }
    redisReply *rep = reply;
    if (rep->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "Error from server: %s\n", rep->str);
        exit(1);
    }
    return rep;
}

/* Append `CMD <prefix><i as 12 digits> [ARG]` in RESP to buf at *len. */
static void
append_cmd(char *buf, size_t *len, const char *cmd, long i, const char *arg)
{
    char key[64];
    int klen = snprintf(key, sizeof(key), "%s%012ld", prefix, i);
    *len += (size_t)sprintf(buf + *len, "*3\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n$%zu\r\n%s\r\n",
                            strlen(cmd), cmd, klen, key, strlen(arg), arg);
}

static void
send_blpop(struct conn *c, long i)
{
    char buf[256];
    size_t len = 0;
    append_cmd(buf, &len, "BLPOP", i, "0");
    write_all(c->fd, buf, len);
}

/* --check: CLIENT SETNAME hb<i>, for CLIENT LIST to tell the clients apart. */
static void
name_client(struct conn *c, long i)
{
    char name[32], buf[128];
    int nlen = snprintf(name, sizeof(name), "hb%ld", i);
    int len = snprintf(buf, sizeof(buf), "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$%d\r\n%s\r\n",
                       nlen, name);
    write_all(c->fd, buf, (size_t)len);
    freeReplyObject(read_reply(c));
}

static void
record(long long us, long n)
{
    for (long k = 0; k < n; k++) {
        lat_all[lat_count++] = us;
    }
    lat_sum_us += us * n;
    if (lat_min_us < 0 || us < lat_min_us) {
        lat_min_us = us;
    }
    if (us > lat_max_us) {
        lat_max_us = us;
    }
}

/* The reply to one command of two arguments on the producer's connection. */
static redisReply *
ask(struct conn *producer, const char *cmd, const char *arg)
{
    char buf[128];
    int len = snprintf(buf, sizeof(buf), "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                       strlen(cmd), cmd, strlen(arg), arg);
    write_all(producer->fd, buf, (size_t)len);
    redisReply *r = read_reply(producer);
    if (r->type != REDIS_REPLY_STRING) {
        die("an INFO or CLIENT LIST reply that is not a string");
    }
    return r;
}

/* Wait until every client is parked (INFO clients's blocked_clients),
 * before the first round; bounded. */
static void
wait_parked(struct conn *producer, long clients)
{
    for (int tries = 0; tries < 100000; tries++) {
        redisReply *r = ask(producer, "INFO", "clients");
        const char *at = strstr(r->str, "blocked_clients:");
        long parked = at ? strtol(at + strlen("blocked_clients:"), NULL, 10) : -1;
        freeReplyObject(r);
        if (parked < 0) {
            die("INFO clients has no blocked_clients");
        }
        if (parked >= clients) {
            return;
        }
    }
    die("the clients' BLPOPs were never all parked");
}

/* --check: is every client lo .. lo+n-1 (named hb<i>) parked, CLIENT
 * LIST's flags=b, when the producer's next command is read? */
static void
check_parked(struct conn *producer, long lo, long n)
{
    redisReply *r = ask(producer, "CLIENT", "LIST");
    long parked = 0;
    char *save = NULL;
    for (char *line = strtok_r(r->str, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        const char *name = strstr(line, " name=hb"), *flags = strstr(line, " flags=");
        if (name == NULL || flags == NULL) {
            continue;
        }
        long i = strtol(name + strlen(" name=hb"), NULL, 10);
        size_t flen = strcspn(flags + strlen(" flags="), " ");
        if (i >= lo && i < lo + n && memchr(flags + strlen(" flags="), 'b', flen) != NULL) {
            parked++;
        }
    }
    freeReplyObject(r);
    rounds_checked++;
    rounds_short += parked < n;
}

/* One round: LPUSH to the keys of clients lo .. lo+n-1, pipeline at a
 * time, then take each one's value and send its BLPOP again. */
static void
round_of(struct conn *producer, struct conn *blocked, long lo, long n, long pipeline)
{
    static const char value[] = "1700000000.123";
    char *buf = malloc((size_t)pipeline * 128 + 64);
    if (buf == NULL) {
        die("out of memory");
    }
    if (check) {
        check_parked(producer, lo, n);
    }
    for (long first = lo; first < lo + n; first += pipeline) {
        long batch = lo + n - first < pipeline ? lo + n - first : pipeline;
        size_t len = 0;
        for (long i = first; i < first + batch; i++) {
            append_cmd(buf, &len, "LPUSH", i, value);
        }
        long long t0 = now_us();
        write_all(producer->fd, buf, len);
        for (long k = 0; k < batch; k++) {
            redisReply *r = read_reply(producer);
            if (r->type != REDIS_REPLY_INTEGER) {
                die("LPUSH answered other than an integer");
            }
            freeReplyObject(r);
        }
        record(now_us() - t0, batch);
    }
    free(buf);
    for (long i = lo; i < lo + n; i++) {
        redisReply *r = read_reply(&blocked[i]);
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
            || strcmp(r->element[1]->str, value) != 0) {
            die("BLPOP answered other than [key, value]");
        }
        freeReplyObject(r);
        send_blpop(&blocked[i], i);
    }
}

static int
cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static double
percentile(double q)
{
    long long at = (long long)(q * (double)lat_count);
    if (at >= lat_count) {
        at = lat_count - 1;
    }
    return at < 0 ? 0 : (double)lat_all[at] / 1000.0;
}

static void
report(int csv, int quiet, long clients, long pipeline, long handoffs, double secs)
{
    qsort(lat_all, (size_t)lat_count, sizeof(*lat_all), cmp_ll);
    double rps = secs > 0 ? (double)handoffs / secs : 0;
    double avg = lat_count ? (double)lat_sum_us / (double)lat_count / 1000.0 : 0;
    if (csv) {
        printf("\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\","
               "\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n");
        printf("\"BLPOP/LPUSH hand-off\",\"%.2f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\","
               "\"%.3f\",\"%.3f\"\n", rps, avg, (double)lat_min_us / 1000.0,
               percentile(0.50), percentile(0.95), percentile(0.99),
               (double)lat_max_us / 1000.0);
    } else if (quiet) {
        printf("BLPOP/LPUSH hand-off: %.2f hand-offs per second, p50=%.3f msec\n", rps,
               percentile(0.50));
    } else {
        printf("====== BLPOP/LPUSH hand-off ======\n  %ld hand-offs in %.2f seconds\n"
               "  %ld blocked clients, pipeline %ld\n  %.2f hand-offs per second\n",
               handoffs, secs, clients, pipeline, rps);
    }
}

static int
usage(void)
{
    fprintf(stderr,
            "usage: bench-handoff [-h host] [-p port] [-c clients] [-P pipeline] "
            "[-n handoffs] [--prefix p] [--check] [--csv] [-q]\n");
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
    long clients = 50, pipeline = 1, handoffs = 100000;
    int csv = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
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
            handoffs = num_arg(argc, argv, &i);
        } else if (strcmp(o, "-r") == 0) {
            num_arg(argc, argv, &i);   /* accepted as bench/run.sh passes it */
        } else if (strcmp(o, "--prefix") == 0 && i + 1 < argc && strlen(argv[i + 1]) < 32) {
            prefix = argv[++i];
        } else if (strcmp(o, "--check") == 0) {
            check = 1;
        } else if (strcmp(o, "--csv") == 0) {
            csv = 1;
        } else if (strcmp(o, "-q") == 0) {
            quiet = 1;
        } else {
            usage();
        }
    }
    if (clients < 2 || pipeline < 1 || handoffs < 1) {
        usage();
    }
    struct conn producer, *blocked = calloc((size_t)clients, sizeof(*blocked));
    lat_all = calloc((size_t)handoffs, sizeof(*lat_all));
    if (blocked == NULL || lat_all == NULL) {
        die("out of memory");
    }
    connect_to(&producer, host, port);
    for (long i = 0; i < clients; i++) {
        connect_to(&blocked[i], host, port);
        if (check) {
            name_client(&blocked[i], i);
        }
        send_blpop(&blocked[i], i);
    }
    long long t0 = now_us();
    wait_parked(&producer, clients);
    /* The halves in turn: a round serves one while the other, served the
     * round before, is parked again. */
    long half[2] = { clients / 2, clients - clients / 2 };
    for (long done = 0, r = 0; done < handoffs; r++) {
        long lo = r % 2 ? half[0] : 0, size = half[r % 2];
        long n = handoffs - done < size ? handoffs - done : size;
        round_of(&producer, blocked, lo, n, pipeline);
        done += n;
    }
    double secs = (double)(now_us() - t0) / 1e6;
    report(csv, quiet, clients, pipeline, handoffs, secs);
    if (check) {
        fprintf(stderr, "bench-handoff: %ld of %ld rounds found fewer clients parked "
                "than they pushed to\n", rounds_short, rounds_checked);
    }
    for (long i = 0; i < clients; i++) {
        close(blocked[i].fd);
        redisReaderFree(blocked[i].reader);
    }
    close(producer.fd);
    redisReaderFree(producer.reader);
    free(blocked);
    free(lat_all);
    return 0;
}
