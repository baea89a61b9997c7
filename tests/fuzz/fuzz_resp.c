/*
 * fuzz_resp.c - libFuzzer driver for the request parser (protocol/resp.c).
 *
 * The first input byte picks how the rest is cut into feeds (the parser
 * must give the same requests whatever the read boundaries); the rest is
 * the client's byte stream. Every framed request is checked against the
 * limits, the prefetch peeks are exercised (a key peeked at the offset of
 * a framed argv[1] must be its bytes), and the parser is destroyed, so
 * ASan/UBSan/LeakSanitizer see every path.
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

/* The keys resp_peek_ahead() found for the next two requests, as
 * conn.c keeps them: a framed request whose argv[1] sits at a peeked
 * key's stream offset, with its length, must have exactly its bytes. */
struct peeked_key {
    int valid;
    uint64_t off;
    size_t len;
    char bytes[4096];
};
static struct peeked_key ring[2];

static void
check_peek_ahead(struct resp_parser *p, const struct resp_request *req)
{
    if (ring[0].valid && req->argc >= 2 &&
        ring[0].off == resp_key_offset(p) && ring[0].len == req->argvlen[1] &&
        memcmp(ring[0].bytes, req->argv[1], ring[0].len) != 0) {
        abort();
    }
    ring[0] = ring[1];
    const char *key;
    size_t keylen;
    ring[1].valid = resp_peek_ahead(p, &key, &keylen, &ring[1].off);
    if (ring[1].valid) {
        if (keylen > sizeof(ring[1].bytes)) {
            ring[1].valid = 0;  /* longer than max_bulk: never framed */
            return;
        }
        memcpy(ring[1].bytes, key, keylen);
        ring[1].len = keylen;
    }
}

/* Frame everything buffered; false once the parser reported an error. */
static int
drain(struct resp_parser *p)
{
    struct resp_request req;
    const char *key;
    size_t keylen;
    for (;;) {
        (void)resp_peek_key(p, 0, &key, &keylen);
        (void)resp_peek_key(p, 1, &key, &keylen);
        enum resp_status st = resp_next(p, &req);
        if (st == RESP_AGAIN) {
            return 1;
        }
        if (st == RESP_ERROR) {
            return 0;
        }
        check_request(&req);
        check_peek_ahead(p, &req);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    size_t chunk = (size_t)data[0] % 17 + 1;
    struct resp_parser *p = resp_create(&limits);
    if (p == NULL) {
        return 0;
    }
    memset(ring, 0, sizeof(ring));
    for (size_t off = 1; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (resp_feed(p, (const char *)data + off, n) < 0 || !drain(p)) {
            break;
        }
    }
    resp_destroy(&p);
    return 0;
}
