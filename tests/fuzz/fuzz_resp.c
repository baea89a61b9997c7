/*
 * fuzz_resp.c - libFuzzer driver for the request parser (protocol/resp.c).
 *
 * The first input byte picks how the rest is cut into feeds (the parser
 * must give the same requests whatever the read boundaries); the rest is
 * the client's byte stream. Every framed request is checked against the
 * limits, the prefetch peek is exercised, and the parser is destroyed, so
 * ASan/UBSan/LeakSanitizer see every path.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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
    for (size_t off = 1; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (resp_feed(p, (const char *)data + off, n) < 0 || !drain(p)) {
            break;
        }
    }
    resp_destroy(&p);
    return 0;
}
