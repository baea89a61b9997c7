/*
 * fuzz_resp.c - libFuzzer driver for the request parser (protocol/resp.c).
 *
 * The first input byte picks how the rest is cut into feeds (the parser
 * must give the same requests whatever the read boundaries), the second
 * how far ahead to frame; the rest is the client's byte stream. Two
 * parsers take the same feeds: one frames a request at a time, the other
 * frames ahead as an I/O thread does (resp_frame_ahead()), takes part of
 * its queue, sometimes puts a request back (resp_unread()), and keeps the
 * argv of everything it took from one batch to check them all at its
 * end. Both must give the same requests, with the same hashes of argv[1],
 * and end with the same error. Every framed request is checked against
 * the limits, and the parsers are destroyed, so ASan/UBSan/LeakSanitizer
 * see every path.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct resp_limits limits = {
    .max_query = 1 << 20,
    .max_bulk = 4096,
    .max_args = 64,
    .max_inline = 1024,
    .unauthenticated = false,
};

/* A request as one flat string: argc, then each argument's length and
 * bytes, and the inline flag. */
#define FLAT_MAX (64 * (4096 + 8) + 16)
static unsigned char flat_one[FLAT_MAX];
static unsigned char flat_ahead[FLAT_MAX];

static size_t
flatten(const struct resp_request *req, unsigned char *out)
{
    size_t n = 0;
    memcpy(out + n, &req->argc, sizeof(req->argc));
    n += sizeof(req->argc);
    out[n++] = (unsigned char)req->is_inline;
    for (size_t i = 0; i < req->argc; i++) {
        memcpy(out + n, &req->argvlen[i], sizeof(req->argvlen[i]));
        n += sizeof(req->argvlen[i]);
        memcpy(out + n, req->argv[i], req->argvlen[i]);
        n += req->argvlen[i];
    }
    return n;
}

static void
check_request(const struct resp_request *req)
{
    if (req->argc == 0 || req->argc > limits.max_args) {
        abort();
    }
    for (size_t i = 0; i < req->argc; i++) {
        if (req->argvlen[i] > limits.max_bulk ||
            req->argv[i][req->argvlen[i]] != '\0') {
            abort();
        }
    }
}

static uint64_t
fnv(const char *key, size_t len, void *arg)
{
    (void)arg;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    }
    return h;
}

static const struct resp_frame_ops ops = { fnv, NULL, NULL };

/* What the frame-ahead parser took since it last framed: requests whose
 * argv must all still be intact until it frames again. */
#define TAKEN_MAX 64
static struct resp_request taken[TAKEN_MAX];
static uint64_t taken_sum[TAKEN_MAX];
static size_t ntaken;

static uint64_t
checksum(const struct resp_request *req)
{
    uint64_t h = req->argc;
    for (size_t i = 0; i < req->argc; i++) {
        h = h * 31 + fnv(req->argv[i], req->argvlen[i], NULL);
    }
    return h;
}

static void
check_taken(void)
{
    for (size_t i = 0; i < ntaken; i++) {
        if (checksum(&taken[i]) != taken_sum[i]) {
            abort();
        }
    }
    ntaken = 0;
}

/* The next request of each; both must agree. Returns the status. */
static enum resp_status
next_pair(struct resp_parser *one, struct resp_parser *ahead, unsigned *rng)
{
    struct resp_request a, b;
    enum resp_status sa = resp_next(one, &a);
    if (resp_queued(ahead) == 0) {
        check_taken();
        *rng = *rng * 1103515245u + 12345u;
        (void)resp_frame_ahead(ahead, 1 + (*rng >> 16) % 9, &ops);
    }
    enum resp_status sb = resp_next(ahead, &b);
    if (sa != sb) {
        abort();
    }
    if (sa == RESP_ERROR && strcmp(resp_error(one), resp_error(ahead)) != 0) {
        abort();
    }
    if (sa != RESP_REQUEST) {
        return sa;
    }
    check_request(&a);
    check_request(&b);
    size_t na = flatten(&a, flat_one), nb = flatten(&b, flat_ahead);
    if (na != nb || memcmp(flat_one, flat_ahead, na) != 0) {
        abort();
    }
    uint64_t h;
    if (a.argc >= 2 && (!resp_taken_hash(ahead, &h) ||
                        h != fnv(a.argv[1], a.argvlen[1], NULL))) {
        abort();
    }
    *rng = *rng * 1103515245u + 12345u;
    if ((*rng >> 16) % 7 == 0) {
        /* Held (CLIENT PAUSE): back to the head, taken again next. */
        resp_unread(ahead);
        struct resp_request again;
        if (resp_next(ahead, &again) != RESP_REQUEST ||
            checksum(&again) != checksum(&b)) {
            abort();
        }
        b = again;
    }
    if (ntaken < TAKEN_MAX) {
        taken[ntaken] = b;
        taken_sum[ntaken] = checksum(&b);
        ntaken++;
    }
    return sa;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    size_t chunk = (size_t)data[0] % 17 + 1;
    unsigned rng = data[1];
    struct resp_parser *one = resp_create(&limits);
    struct resp_parser *ahead = resp_create(&limits);
    ntaken = 0;
    if (one != NULL && ahead != NULL) {
        for (size_t off = 2; off < size; off += chunk) {
            size_t n = size - off < chunk ? size - off : chunk;
            int fa = resp_feed(one, (const char *)data + off, n);
            int fb = resp_feed(ahead, (const char *)data + off, n);
            if (fa != fb) {
                abort();
            }
            enum resp_status st;
            while ((st = next_pair(one, ahead, &rng)) == RESP_REQUEST) {
            }
            if (st == RESP_ERROR || fa < 0) {
                break;
            }
            if (rng % 5 == 0) {
                resp_shrink(ahead);     /* an idle client's cron */
                ntaken = 0;
            }
        }
    }
    check_taken();
    resp_destroy(&one);
    resp_destroy(&ahead);
    return 0;
}
