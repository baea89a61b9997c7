/*
 * snapshot.h - the keyspace on disk, so a restart continues every limiter
 * where it stood instead of handing every client a fresh burst.
 *
 * File (host byte order, read back by the same build), version 5:
 *   "CGSNAP01", u32 version, u32 0, i64 written_at_ns,
 *   then key records, each database's after its marker:
 *     marker: u8 0, u32 db (before any, records are db 0's)
 *     record: u8 type, u32 keylen, i64 expire_at (ms, store.h),
 *             u32 state_len, key,
 *             state (keytype_encode() of the record, KS_ENCODING),
 *   u64 records (key records, not markers),
 *   u32 CRC-32C of everything before it.
 * Read too: version 4, whose expire_at is the ns a key was dead from and
 * whose states are in encoding 2; versions 1 to 3, whose record count
 * follows written_at and whose check is the IEEE CRC-32; 1 and 2 hold
 * database 0 only, in the state encoding of their number.
 * A file holding a database this server lacks ('databases') is refused.
 * A record loaded after a restart is exactly as fresh or stale as the
 * wall clock says.
 */
#ifndef CELLGATE_SNAPSHOT_H
#define CELLGATE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Write the keyspace to dir/dbfilename now (temp file, fsync, rename).
 * Returns 0, or -1 with err. */
int snapshot_save(char *err, size_t errlen);

/* Write the keyspace to path (path.tmp-<pid>, fsync, rename, fsync of
 * the folder): a crash at any point leaves the old file or the new one.
 * The journal's base files and a full sync's file are written with it
 * too. 0, or -1 with err. */
int snapshot_write(const char *path, char *err, size_t errlen);

/* BGSAVE: a background save in a child (child.h; copy-on-write gives it
 * a frozen keyspace, the loop stalls only for fork()). how: child.h's
 * CHILD_MAY_WAIT (SCHEDULE), CHILD_IN_EXEC. Returns 0 (started), 1
 * (scheduled: it starts when the running child ended) or -1 with err in
 * Redis's words (a snapshot is being written, another child runs) or
 * why fork failed. */
int snapshot_bgsave(unsigned how, char *err, size_t errlen);

/* From cron: start the periodic save when save-interval or a save rule
 * says it is due and no background child runs. */
void snapshot_cron(void);

/* Are periodic snapshots on (save-interval or save rules)? Then the server
 * also saves when it exits. */
bool snapshot_configured(void);

/* Load dir/dbfilename into the (empty) databases at start-up. A missing file
 * is an empty start. Returns 0, or -1 with err (corrupt, truncated, wrong
 * version): the caller refuses to start unless told to start empty. */
int snapshot_load(char *err, size_t errlen);

/* Load the snapshot file at path into the (empty) databases: 0, 1 when
 * there is no such file, -1 with err (then every database is emptied). */
int snapshot_load_file(const char *path, char *err, size_t errlen);

/* For INFO and LASTSAVE. */
int64_t snapshot_last_save(void);       /* unix seconds of the last good save */
bool snapshot_in_progress(void);        /* a child writes one (Redis's RDB
                                         * child: BGSAVE's or a replica's) */
bool snapshot_last_ok(void);
uint64_t snapshot_changes(void);        /* writes since the last save */

#endif
