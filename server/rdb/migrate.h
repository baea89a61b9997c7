/*
 * migrate.h - MIGRATE's connections to its targets, as Redis keeps them.
 *
 * MIGRATE moves keys atomically: a key is deleted here only once the
 * target said it restored it, and nothing else may change the key in
 * between. Redis gets that by blocking its one thread for the exchange,
 * bounded by the command's timeout, and so does cellgate: these calls
 * block the main loop, each within timeout_ms, never longer. The
 * connection to a host:port stays open for the next MIGRATE (with the
 * database it last selected) until it has been idle for
 * MIGRATE_IDLE_SECONDS, at most MIGRATE_CACHED at once (a random one
 * closed to make room), and is closed at the first error.
 */
#ifndef CELLGATE_RDB_MIGRATE_H
#define CELLGATE_RDB_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIGRATE_CACHED 64
#define MIGRATE_IDLE_SECONDS 10

struct migrate_target;

/* The connection to host:port (port as the client wrote it), cached or
 * made within timeout_ms; NULL when it cannot be made. */
struct migrate_target *migrate_connect(const char *host, size_t hostlen,
                                       const char *port, size_t portlen,
                                       int64_t timeout_ms);

/* The database the target has selected on this connection: -1 when
 * unknown (new, or after an error reply). */
int64_t migrate_selected_db(const struct migrate_target *t);
void migrate_set_selected_db(struct migrate_target *t, int64_t db);

/* Write all of buf within timeout_ms; false on an error or the timeout
 * (errno ETIMEDOUT). */
bool migrate_write(struct migrate_target *t, const char *buf, size_t len,
                   int64_t timeout_ms);

/* Read one reply line (without its "\r\n", cut to size - 1 bytes) into
 * buf within timeout_ms: its length, or -1 on an error, the peer closing
 * or the timeout (errno ETIMEDOUT). */
int64_t migrate_read_line(struct migrate_target *t, char *buf, size_t size,
                          int64_t timeout_ms);

/* Close t and forget it (after an error on it). */
void migrate_close(struct migrate_target *t);

/* From cron: close the connections idle for more than
 * MIGRATE_IDLE_SECONDS. */
void migrate_cron(void);

/* At exit: every connection closed. */
void migrate_teardown(void);

#endif
