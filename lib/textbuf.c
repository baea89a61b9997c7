/*
 * textbuf.c - see textbuf.h.
 */
#include "lib/textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/mem.h"

/* Room for need more bytes (at least doubling); false (and oom) if
 * memory ran out. */
static bool
reserve(struct textbuf *t, size_t need)
{
    if (t->oom) {
        return false;
    }
    if (t->cap - t->len > need) {
        return true;
    }
    size_t cap = (t->cap ? t->cap * 2 : 4096) + need;
    char *p = cap > need ? mem_realloc(t->p, cap) : NULL;
    if (p == NULL) {
        t->oom = true;
        return false;
    }
    t->p = p;
    t->cap = cap;
    return true;
}

void
textbuf_append(struct textbuf *t, const void *data, size_t len)
{
    if (reserve(t, len)) {
        memcpy(t->p + t->len, data, len);
        t->len += len;
    }
}

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
        /* Too small: grow and format again. */
        if (!reserve(t, (size_t)n)) {
            return;
        }
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

void
textbuf_label(struct textbuf *t, const char *s, size_t len)
{
    size_t i, from = 0;             /* s[from..i) still to copy as is */
    for (i = 0; i < len && s[i] != '\0'; i++) {
        const char *esc = s[i] == '\\' ? "\\\\" : s[i] == '"' ? "\\\""
                        : s[i] == '\n' ? "\\n" : NULL;
        if (esc != NULL) {
            textbuf_append(t, s + from, i - from);
            textbuf_append(t, esc, 2);
            from = i + 1;
        }
    }
    textbuf_append(t, s + from, i - from);
}
