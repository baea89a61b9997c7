/* fixture.c - see fixture.h. */
#include "tests/unit/fixture.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "server/cmd.h"

struct conn *
fx_client(int proto)
{
    struct conn *c = calloc(1, sizeof(*c));
    ck_assert_ptr_nonnull(c);
    obuf_init(&c->out);
    c->proto = proto;
    c->authenticated = true;
    return c;
}

char *
fx_take(struct obuf *o, size_t *n)
{
    size_t len = obuf_pending(o);
    char *out = malloc(len + 1);
    ck_assert_ptr_nonnull(out);
    struct iovec iov[64];
    size_t got = 0, bytes;
    while (got < len) {
        size_t k = obuf_iov(o, 0, iov, 64, &bytes);
        for (size_t i = 0; i < k; i++) {
            memcpy(out + got, iov[i].iov_base, iov[i].iov_len);
            got += iov[i].iov_len;
        }
        obuf_consume(o, bytes);
    }
    out[len] = '\0';
    if (n != NULL) {
        *n = len;
    }
    return out;
}

char *
fx_vrun(struct conn *c, const char *first, va_list ap)
{
    char *argv[16];
    size_t lens[16];
    size_t argc = 0;
    for (const char *a = first; a != NULL && argc < 16;
         a = va_arg(ap, const char *)) {
        argv[argc] = (char *)a;
        lens[argc++] = strlen(a);
    }
    struct resp_request req = { argc, argv, lens, 0 };
    c->hint.valid = false;
    cmd_batch_begin();
    cmd_execute(c, &req);
    return fx_take(&c->out, NULL);
}

char *
fx_run(struct conn *c, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    char *out = fx_vrun(c, first, ap);
    va_end(ap);
    return out;
}

void
fx_expect(const char *want, char *got)
{
    ck_assert_str_eq(got, want);
    free(got);
}
