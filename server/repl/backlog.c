/*
 * backlog.c - see backlog.h.
 */
#include "server/repl/backlog.h"

#include <string.h>

#include "lib/mem.h"
#include "protocol/obuf.h"

bool
repl_backlog_init(struct repl_backlog *b, size_t size)
{
    b->size = size;
    b->p = mem_malloc(b->size);
    b->idx = b->histlen = 0;
    return b->p != NULL;
}

void
repl_backlog_free(struct repl_backlog *b)
{
    mem_free(b->p);
    b->p = NULL;
}

void
repl_backlog_append(struct repl_backlog *b, const void *data, size_t n)
{
    const unsigned char *s = data;
    while (b->p != NULL && n > 0) {
        size_t k = b->size - b->idx;
        k = k < n ? k : n;
        memcpy(b->p + b->idx, s, k);
        b->idx = (b->idx + k) % b->size;
        b->histlen += k;
        if (b->histlen > b->size) {
            b->histlen = b->size;
        }
        s += k;
        n -= k;
    }
}

bool
repl_backlog_copy(const struct repl_backlog *b, int64_t end, int64_t from,
                  struct obuf *o)
{
    int64_t first = end - (int64_t)b->histlen + 1;
    if (b->p == NULL || from < first || from > end + 1) {
        return false;
    }
    size_t want = (size_t)(end + 1 - from);
    size_t at = (b->idx + b->size - want) % b->size;
    while (want > 0) {
        size_t k = b->size - at;
        k = k < want ? k : want;
        obuf_append(o, b->p + at, k);
        at = (at + k) % b->size;
        want -= k;
    }
    return true;
}
