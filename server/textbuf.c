/*
 * textbuf.c - see textbuf.h.
 */
#include "server/textbuf.h"

#include <stdarg.h>
#include <stdio.h>

#include "protocol/mem.h"

void
textbuf_printf(struct textbuf *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        if (t->oom) {
            return;
        }
        size_t room = t->cap - t->len;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            return;
        }
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        /* Too small: grow (at least doubling) and format again. */
        size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)n;
        char *p = mem_realloc(t->p, cap);
        if (p == NULL) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
}

void
textbuf_free(struct textbuf *t)
{
    mem_free(t->p);
    t->p = NULL;
    t->len = t->cap = 0;
    t->oom = false;
}
