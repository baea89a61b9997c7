/*
 * journal_file.h - the journal file: the records persist.c hands it each
 * loop pass (as the journal's sink, see server/journal.h), written in
 * batches, fsynced, switched when a rewrite starts a new incr file.
 * It knows nothing of what the records say.
 */
#ifndef CELLGATE_JOURNAL_FILE_H
#define CELLGATE_JOURNAL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copy a pass's records into the buffer (no I/O). complete false (the
 * pass lost records) or no memory marks the buffer broken: every later
 * journal_file_write() fails with ENOMEM, so nothing is written after a
 * hole. false then. */
bool journal_file_append(const unsigned char *records, size_t len,
                         bool complete);

/* Bytes buffered and not yet written to the file; the bytes the
 * buffer's allocation takes (kept between passes, up to a bound). */
size_t journal_file_buffered(void);
size_t journal_file_buffer_memory(void);

/* Open path for appending (created with JOURNAL_MAGIC when new or empty);
 * the file open before is fsynced and closed in the background. Buffered
 * records stay for the new file. 0, or -1 with err. */
int journal_file_open(const char *path, char *err, size_t errlen);

/* fsync and close the file, and drop the buffer: journal_file_write()
 * first. */
void journal_file_close(void);
bool journal_file_is_open(void);

/* Write the buffer to the file. A short or failed write is cut back off
 * the file (so it never holds half a record) and the bytes stay buffered
 * for the next try. Without a file the buffer is dropped. 0, or -1 with
 * errno kept for journal_file_errno(). */
int journal_file_write(void);

/* fdatasync the file now. 0, or -1 (errno kept). */
int journal_file_sync(void);

/* Start an fdatasync on libuv's thread pool unless one is running; cb-less:
 * journal_file_sync_running() and journal_file_last_sync_ns() tell how it
 * went. */
void journal_file_sync_background(void);
bool journal_file_sync_running(void);

/* The errno of the last background fdatasync once it ended, 0 if it
 * worked (or one is running). */
int journal_file_sync_error(void);

/* The errno of the last failed write or sync (0 after a good one), how
 * long the last fsync took, fsyncs done. */
int journal_file_errno(void);
int64_t journal_file_last_sync_ns(void);
uint64_t journal_file_syncs(void);

#endif
