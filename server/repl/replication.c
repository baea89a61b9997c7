/*
 * replication.c - see replication.h: the wing's one face for the rest of
 * the server, over its three parts, each with its own state:
 *   replica.c   our link to a primary (REPLICAOF)
 *   primary.c   our replicas, full syncs, WAIT
 *   stream.c    the replication IDs, the offset, the backlog (backlog.c)
 * Each depends only on the ones below it. What answers for both roles at
 * once (cron, INFO, ROLE, shutdown) is here, in the order the single
 * file had it.
 */
#include "server/repl/replication.h"

#include "lib/textbuf.h"
#include "server/clock.h"
#include "server/repl/primary.h"
#include "server/repl/replica.h"
#include "server/repl/stream.h"

/* ---- either role ------------------------------------------------------- */

void
repl_cron(void)
{
    int64_t now = clock_mono_ms();
    primary_cron(now);
    if (replica_active()) {
        replica_cron(now);
    }
}

void
repl_info(struct textbuf *t)
{
    int64_t now = clock_mono_ms();
    if (!replica_active()) {
        textbuf_printf(t, "role:master\r\n");
    } else {
        replica_info(t, now);
    }
    primary_info(t, now);
    stream_info(t);
}

void
repl_role(struct conn *c)
{
    if (replica_active()) {
        replica_role(c);
    } else {
        primary_role(c);
    }
}

void
repl_shutdown(void)
{
    primary_shutdown();
    replica_shutdown();
}

void
repl_teardown(void)
{
    repl_shutdown();
    replica_teardown();
    primary_teardown();
    stream_close();
}

/* ---- the primary ------------------------------------------------------- */

bool
repl_streaming(void)
{
    return stream_active();
}

bool
repl_psync(struct conn *c, const char *replid, size_t idlen, int64_t offset)
{
    return primary_psync(c, replid, idlen, offset);
}

bool
repl_sync(struct conn *c)
{
    return primary_sync(c);
}

void
repl_replconf(struct conn *c, const char *key, size_t klen,
              const char *value, size_t vlen)
{
    primary_replconf(c, key, klen, value, vlen);
}

void
repl_forget(struct conn *c)
{
    primary_forget(c);
}

bool
repl_is_replica_client(const struct conn *c)
{
    return primary_is_replica_client(c);
}

size_t
repl_replica_count(void)
{
    return primary_replica_count();
}

size_t
repl_output_memory(void)
{
    return primary_output_memory();
}

bool
repl_wait(struct conn *c, size_t replicas, int64_t timeout_ms)
{
    return primary_wait(c, replicas, timeout_ms);
}

bool
repl_unwait(struct conn *c, bool answer)
{
    return primary_unwait(c, answer);
}

size_t
repl_acked_now(void)
{
    return primary_acked_now();
}

size_t
repl_good_replicas(void)
{
    return primary_good_replicas();
}

/* ---- the replica ------------------------------------------------------- */

void
repl_set_primary(const char *host, int port)
{
    replica_set_primary(host, port);
}

void
repl_announce_default(const char *host, int port)
{
    replica_announce_default(host, port);
}

int64_t
repl_data_age_ms(void)
{
    return replica_data_age_ms();
}

bool
repl_link_up(void)
{
    return replica_link_up();
}

bool
repl_same_primary(const char *host, int port)
{
    return replica_same_primary(host, port);
}

void
repl_set_command_ops(const struct repl_command_ops *ops)
{
    replica_set_command_ops(ops);
}

bool
repl_follows_redis(void)
{
    return replica_follows_redis();
}

int64_t
repl_offset(void)
{
    return stream_offset();
}
