/*
 * textbuf.h - a growable text buffer filled printf-style (INFO, metrics).
 * An allocation failure is sticky (oom) so callers check once at the end.
 */
#ifndef CELLGATE_TEXTBUF_H
#define CELLGATE_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

struct textbuf {
    char *p;        /* mem_malloc'd; NULL until the first append */
    size_t len;
    size_t cap;
    bool oom;
};

void textbuf_printf(struct textbuf *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Append len raw bytes (no NUL is added). */
void textbuf_append(struct textbuf *t, const void *data, size_t len);

/* Append a Prometheus label value: \\, \" and newline escaped, the
 * other bytes as they are; it ends at a NUL, which the text format
 * cannot escape. */
void textbuf_label(struct textbuf *t, const char *s, size_t len);

/* Free the text and reset t to empty. */
void textbuf_free(struct textbuf *t);

#endif
