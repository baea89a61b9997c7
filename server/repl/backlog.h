/*
 * backlog.h - the replication backlog: the last `size` bytes of the
 * stream in a ring, so a replica that lost its link continues from where
 * it stood while the ring still holds that (replication.h).
 *
 * Offsets are the stream's, as Redis counts them: the stream's first byte
 * is offset 1, and after `end` bytes the ring holds offsets
 * end - histlen + 1 to end. A replica asks for the next byte it wants,
 * which may be end + 1 (it has everything). Pure: memory only, no I/O.
 */
#ifndef CELLGATE_BACKLOG_H
#define CELLGATE_BACKLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct obuf;

struct repl_backlog {
    unsigned char *p;               /* size bytes, mem_malloc'd; NULL: none */
    size_t size;
    size_t idx;                     /* where the next byte goes */
    size_t histlen;                 /* bytes held, at most size */
};

/* A ring of size (> 0) bytes, empty. false without memory (b->p NULL). */
bool repl_backlog_init(struct repl_backlog *b, size_t size);
void repl_backlog_free(struct repl_backlog *b);

/* The next n bytes of the stream (nothing without a ring): the oldest go
 * once it is full. */
void repl_backlog_append(struct repl_backlog *b, const void *data, size_t n);

/* After `end` bytes of stream, append the bytes from offset `from` to the
 * end to o: false (nothing appended) when the ring does not hold them all,
 * or there is no ring. */
bool repl_backlog_copy(const struct repl_backlog *b, int64_t end,
                       int64_t from, struct obuf *o);

#endif
