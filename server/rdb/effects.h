/*
 * effects.h - cellgate's effect records (journal.h) as the Redis commands
 * a Redis replica applies: the stream cellgate sends after SYNC's RDB file
 * (redis-cli --replica, or any client of Redis's replication protocol),
 * in place of the CG.EFFECTS commands only a cellgate replica reads.
 *
 * A record says what a key became, not which command made it so; the
 * commands say the same in Redis's words, from the keyspace as it stands
 * when the pass of records is published (each key's final state then):
 *
 *   a key written        RESTORE key <expire_at ms, or 0> <DUMP payload>
 *                        REPLACE ABSTTL; a limiter key Redis cannot hold
 *                        is left out, as the RDB file leaves it out
 *   a key gone           DEL key (also a written key no longer there)
 *   FLUSHDB / FLUSHALL, SWAPDB a b
 *   a group (MULTI/EXEC, a script's effects)   MULTI ... EXEC
 *   the function libraries   FUNCTION RESTORE <payload> FLUSH, or
 *                        FUNCTION FLUSH when none is left
 *   SELECT db before a key's command when the replica's database differs
 */
#ifndef CELLGATE_RDB_EFFECTS_H
#define CELLGATE_RDB_EFFECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"

/* Append to out the commands for the pass of records (a stream's, of
 * JOURNAL_VERSION) at now. *db: the database the replica has selected
 * (-1 before any), updated. false when memory ran out or a record is
 * damaged (out then holds a part). */
bool rdb_effects_as_commands(const unsigned char *records, size_t len,
                             int64_t now, int *db, struct membuf *out);

#endif
