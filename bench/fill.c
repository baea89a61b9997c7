/*
 * bench/fill.c - create many limiter keys fast, for the memory and
 * flat-cost measurements of bench/run.sh.
 *
 *   bench-fill PORT PREFIX FIRST COUNT COMMAND ARG...
 *
 * sends COMMAND ARG... once for each i in [FIRST, FIRST + COUNT) to
 * 127.0.0.1:PORT, with every argument "__key__" replaced by PREFIX and i
 * as 12 zero-padded digits, the key format of redis-benchmark's
 * __rand_int__ (so `-r FIRST+COUNT` later hits exactly these keys).
 * Requests go out pipelined in batches; every reply is read with hiredis's
 * reader, and an error reply or a short count fails the run (exit 1).
 */
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>  /* redisReaderCreate, redisReply */

#define BATCH 2000
#define MAX_ARGS 32

static int
connect_port(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        perror("bench-fill: connect");
        exit(1);
    }
    return fd;
}

static void
write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            perror("bench-fill: write");
            exit(1);
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* Append one request in RESP to buf (which has room: see main). */
static size_t
format_request(char *buf, int argc, char **argv, const char *key)
{
    size_t n = (size_t)sprintf(buf, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        const char *a = strcmp(argv[i], "__key__") == 0 ? key : argv[i];
        n += (size_t)sprintf(buf + n, "$%zu\r\n%s\r\n", strlen(a), a);
    }
    return n;
}

/* Read until `want` replies have been parsed; any error reply is fatal. */
static void
read_replies(int fd, redisReader *r, long want)
{
    char buf[1 << 16];
    while (want > 0) {
        void *reply = NULL;
        if (redisReaderGetReply(r, &reply) != REDIS_OK) {
            fprintf(stderr, "bench-fill: bad reply stream: %s\n", r->errstr);
            exit(1);
        }
        if (reply != NULL) {
            redisReply *rep = reply;
            if (rep->type == REDIS_REPLY_ERROR) {
                fprintf(stderr, "bench-fill: error reply: %s\n", rep->str);
                exit(1);
            }
            freeReplyObject(reply);
            want--;
            continue;
        }
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fprintf(stderr, "bench-fill: connection closed with %ld replies "
                            "missing\n", want);
            exit(1);
        }
        if (redisReaderFeed(r, buf, (size_t)n) != REDIS_OK) {
            fprintf(stderr, "bench-fill: reader: %s\n", r->errstr);
            exit(1);
        }
    }
}

int
main(int argc, char **argv)
{
    if (argc < 6 || argc - 5 > MAX_ARGS) {
        fprintf(stderr, "usage: bench-fill PORT PREFIX FIRST COUNT COMMAND "
                        "ARG...   (\"__key__\" becomes PREFIX + 12 digits)\n");
        return 2;
    }
    int port = atoi(argv[1]);
    const char *prefix = argv[2];
    long first = atol(argv[3]), count = atol(argv[4]);
    int cargc = argc - 5;
    char **cargv = argv + 5;
    size_t per = 16;
    for (int i = 0; i < cargc; i++) {
        per += strlen(cargv[i]) + strlen(prefix) + 40;
    }
    if (port <= 0 || first < 0 || count <= 0 || strlen(prefix) > 200) {
        fprintf(stderr, "bench-fill: bad PORT, FIRST, COUNT or PREFIX\n");
        return 2;
    }
    char *out = malloc(per * BATCH);
    redisReader *r = redisReaderCreate();
    if (out == NULL || r == NULL) {
        fprintf(stderr, "bench-fill: out of memory\n");
        return 1;
    }
    int fd = connect_port(port);
    char key[256];
    for (long done = 0; done < count;) {
        long batch = count - done < BATCH ? count - done : BATCH;
        size_t len = 0;
        for (long i = 0; i < batch; i++) {
            snprintf(key, sizeof(key), "%s%012ld", prefix, first + done + i);
            len += format_request(out + len, cargc, cargv, key);
        }
        write_all(fd, out, len);
        read_replies(fd, r, batch);
        done += batch;
    }
    close(fd);
    redisReaderFree(r);
    free(out);
    return 0;
}
