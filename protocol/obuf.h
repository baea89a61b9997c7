/*
 * obuf.h - a connection's output buffer: a list of fixed-size chunks.
 *
 * Replies are appended at the tail; bytes are sent from the head. Chunks
 * never move or grow once allocated, so bytes handed to an in-flight write
 * stay valid while more replies are appended behind them; the sender calls
 * obuf_consume() only once the kernel took them. An allocation failure is
 * sticky (obuf->oom) so the caller can check once per batch and close the
 * connection instead of sending a reply stream with a hole in it.
 */
#ifndef CELLGATE_OBUF_H
#define CELLGATE_OBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#define OBUF_CHUNK_SIZE (16 * 1024)

struct obuf_chunk;

struct obuf {
    struct obuf_chunk *head;
    struct obuf_chunk *tail;
    struct obuf_chunk *spare;   /* one drained chunk kept for reuse */
    size_t head_sent;           /* bytes of head already consumed */
    size_t pending;             /* bytes appended and not yet consumed */
    size_t chunks;              /* in the list (the spare aside) */
    bool oom;                   /* an append failed: the stream is broken */
};

void obuf_init(struct obuf *o);
void obuf_deinit(struct obuf *o);

/* Append n bytes. Returns 0, or -1 (and sets oom) if memory ran out. */
int obuf_append(struct obuf *o, const void *data, size_t n);

/* Contiguous room for n <= OBUF_CHUNK_SIZE bytes at the tail, or NULL (oom
 * set). The bytes count once obuf_commit(o, used) is called. */
char *obuf_reserve(struct obuf *o, size_t n);
void obuf_commit(struct obuf *o, size_t used);

/* Describe up to max iovecs of unsent bytes, starting `skip` bytes past the
 * first unsent byte (skip = bytes already in flight). Returns the iovec
 * count; *bytes gets their total. */
size_t obuf_iov(const struct obuf *o, size_t skip, struct iovec *iov,
                size_t max, size_t *bytes);

/* n bytes from the head were sent: drop them. */
void obuf_consume(struct obuf *o, size_t n);

static inline size_t
obuf_pending(const struct obuf *o)
{
    return o->pending;
}

/* Append every unsent byte of src to dst and leave src empty: its chunks
 * are moved, not copied (a few bytes are copied into dst's last chunk
 * instead); src keeps its spare chunk. An I/O thread takes the replies a
 * client's commands left this way, and writes them while more are
 * appended to src. */
void obuf_move(struct obuf *dst, struct obuf *src);

/* Give from's spare chunk to `to` if it has none (the writer's drained
 * chunk goes back to the reply buffer: no allocation per batch). */
void obuf_pass_spare(struct obuf *to, struct obuf *from);

/* Chunks waiting in the depot shared by the threads (obuf.c): for tests. */
size_t obuf_depot_len(void);

/* What CLIENT LIST reports, in Redis's terms: obl = bytes waiting in the
 * head chunk (Redis's fixed reply buffer), oll = the chunks behind it (its
 * reply list), omem = the bytes those chunks take. */
struct obuf_stats {
    size_t obl;
    size_t oll;
    size_t omem;
};
void obuf_stats(const struct obuf *o, struct obuf_stats *st);

/* The unsent bytes with the room left between them (obuf_move() and
 * obuf_reserve() may leave a chunk's end unused before the next one):
 * what the chunks from the first unsent byte to the last one hold. */
size_t obuf_held(const struct obuf *o);

/* The bytes its chunks take, the spare one included (O(1)): what
 * INFO's mem_clients_slaves and maxmemory's not-counted memory add up
 * for a replica's buffer, as Redis counts its replicas' buffers. */
size_t obuf_memory(const struct obuf *o);

/* Release the spare chunk (idle connections hold no buffer memory). */
void obuf_shrink(struct obuf *o);

#endif
