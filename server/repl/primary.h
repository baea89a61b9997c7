/*
 * primary.h - the primary's side of replication: its replicas (the
 * clients that sent REPLCONF and PSYNC), each from its handshake through
 * a full sync or a continuation to the live stream, and the clients in
 * WAIT for their ACKs. replication.h is the face the server calls; these
 * are what it calls here.
 *
 * A replica of our own is fed from the stream (stream.h), which this
 * side opens with its replicas as the tap: a replica of a primary
 * (replica.h) opens it the same way to pass its primary's stream on.
 */
#ifndef CELLGATE_PRIMARY_H
#define CELLGATE_PRIMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct textbuf;

/* stream_open() with our replicas hearing every byte. */
bool primary_open_stream(void);

/* As repl_psync, repl_replconf, repl_forget, repl_is_replica_client,
 * repl_replica_count, repl_wait, repl_unwait, repl_acked_now,
 * repl_good_replicas, repl_output_memory (replication.h). */
bool primary_psync(struct conn *c, const char *replid, size_t idlen,
                   int64_t offset);
bool primary_sync(struct conn *c);
void primary_replconf(struct conn *c, const char *key, size_t klen,
                      const char *value, size_t vlen);
void primary_forget(struct conn *c);
bool primary_is_replica_client(const struct conn *c);
size_t primary_replica_count(void);
bool primary_wait(struct conn *c, size_t replicas, int64_t timeout_ms);
bool primary_unwait(struct conn *c, bool answer);
size_t primary_acked_now(void);
size_t primary_good_replicas(void);
size_t primary_output_memory(void);

/* Every replica is dropped (it comes back for a full sync): the data it
 * followed is gone. */
void primary_drop_replicas(void);

/* From cron (now: monotonic ms): snapshot slices, WAIT timeouts,
 * keepalives, PINGs. */
void primary_cron(int64_t now);

/* INFO replication's lines about our replicas (connected_slaves to the
 * slaveN lines), ROLE's reply as a primary. */
void primary_info(struct textbuf *t, int64_t now);
void primary_role(struct conn *c);

/* Shutdown: the snapshot child stopped and none scheduled. Teardown:
 * every replica forgotten. */
void primary_shutdown(void);
void primary_teardown(void);

#endif
