/*
 * cmd_dump.c - DUMP key: the key's value in Redis 7.0.15's payload format
 * (server/rdb/save.h), which RESTORE on a redis-server or a cellgate takes
 * back; nil for a missing key. cellgate's own limiter types DUMP as their
 * own payload (type 0xC8), which only a cellgate restores.
 */
#include "lib/mem.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/rdb/save.h"

void
dump_command(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    struct store_rec *r =
        keyspace_lookup(&c->hint, req->argv[1], req->argvlen[1], now);
    struct membuf payload = { 0 };
    if (r == NULL) {
        reply_null(&c->out, c->proto);
        return;
    }
    if (!rdb_dump_payload(r, now, &payload)) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_bulk(&c->out, payload.p, payload.len);
    }
    mem_free(payload.p);
}
