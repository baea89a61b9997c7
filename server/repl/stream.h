/*
 * stream.h - the replication stream as state: its ID and the second ID a
 * failover leaves, its offset, and its backlog (backlog.h) that PSYNC
 * continues from (replication.h says what the stream carries).
 *
 * Bytes enter it two ways: the journal's effect records of a primary,
 * through the replicas' sink (journal.h, JOURNAL_SINK_REPLICAS) that
 * stream_open() attaches, each pass as one CG.EFFECTS; and whatever its
 * owner appends (PINGs, GETACKs, a replica's primary's stream passed on).
 * Each is counted, kept in the backlog, then handed to the tap its owner
 * gave (the primary's replicas). Pure state: no sockets, no files; the
 * tap is how it speaks to whoever feeds on it, without naming it.
 *
 * The ID itself is srv.replid (server.h), set at start-up and read by
 * the rest of the server.
 */
#ifndef CELLGATE_STREAM_H
#define CELLGATE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct obuf;
struct textbuf;

/* Who hears the stream past the backlog. */
struct stream_tap {
    /* The next n bytes, counted and kept in the backlog already. */
    void (*bytes)(const void *data, size_t n);
    /* A pass of records was lost: the stream started a new history, and
     * whoever followed the old one must start over. */
    void (*lost)(void);
    /* The next `bytes` bytes are a CG.EFFECTS command carrying these
     * records, for followers that want them in other words (NULL: none). */
    void (*effects)(const void *records, size_t len, size_t bytes);
};

/* Keep the stream from here on: the backlog (repl-backlog-size) and the
 * sink of effect records, once; tap hears every byte appended. false
 * without memory for the backlog. */
bool stream_open(const struct stream_tap *tap);

/* Is it kept (stream_open() succeeded)? */
bool stream_active(void);

/* Shutdown (and between unit tests): the backlog freed, the sink
 * detached, the offsets and the second replid back to their start. */
void stream_close(void);

/* Bytes of the stream so far (its offset, as Redis counts). */
int64_t stream_offset(void);

/* Append bytes to the stream, or one command of two arguments as its
 * RESP bytes (name and one bulk argument). */
void stream_append(const void *data, size_t n);
void stream_command(const char *name, const void *arg, size_t alen);

/* Append the stream from offset `from` (the next byte wanted) to its end
 * to o; false when the backlog no longer holds all of it. */
bool stream_copy_from(int64_t from, struct obuf *o);

/* May a replica that asks PSYNC id offset continue this stream: id is
 * ours, or the one before it up to the offset where it was left? */
bool stream_knows(const char *id, size_t idlen, int64_t offset);

/* The stream goes on under a new ID (40 characters): the old one becomes
 * the second, valid up to here (PSYNC2, after a failover). */
void stream_switch_id(const char *id);

/* The stream starts over at `offset` under `id` (a replica loaded its
 * primary's snapshot): no second ID, an empty backlog. */
void stream_restart_at(const char *id, int64_t offset);

/* INFO replication's lines about the stream, from
 * master_failover_state to repl_backlog_histlen. */
void stream_info(struct textbuf *t);

#endif
