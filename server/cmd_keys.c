/*
 * cmd_keys.c - generic key commands on limiter keys: GET, PTTL, TTL,
 * EXISTS, DEL, TYPE.
 *
 * CL.THROTTLE keys behave as the Redis string key redis-cell would have
 * written: GET returns the stored TAT in decimal, PTTL/TTL follow the
 * millisecond expiry redis-cell sets.
 */
#include <stdbool.h>
#include <string.h>

#include "protocol/reply.h"
#include "server/clock.h"
#include "server/conn.h"
#include "server/handlers.h"
#include "server/keytypes.h"
#include "server/server.h"

#define NS_PER_MS 1000000LL

const char *
keytype_name(uint8_t type)
{
    switch (type) {
    case KEY_GCRA:
        return "gcra";
    default:
        return "none";
    }
}

int64_t
keytype_redis_expire_at(int64_t now_ns, int64_t ttl_ms)
{
    int64_t expire_ms, at;
    if (__builtin_add_overflow(now_ns / NS_PER_MS, ttl_ms, &expire_ms) ||
        __builtin_add_overflow(expire_ms, 1, &expire_ms) ||
        __builtin_mul_overflow(expire_ms, NS_PER_MS, &at)) {
        return STORE_NEVER;
    }
    return at;
}

int64_t
keytype_redis_pttl(const struct store_rec *r, int64_t now_ns)
{
    if (r->expire_at == STORE_NEVER) {
        return -1;
    }
    return (r->expire_at / NS_PER_MS - 1) - now_ns / NS_PER_MS;
}

struct store_rec *
keyspace_lookup(struct conn *c, const struct resp_request *req, size_t i,
                int64_t now)
{
    struct store_rec *r = NULL;
    bool hinted = i == 1 && c->key_hint_valid;
    if (hinted) {
        r = store_lookup_hashed(srv.store, req->argv[1], req->argvlen[1],
                                c->key_hint, now);
    }
    /* A hint can be another key's hash (see conn.c): a miss is retried. */
    if (r == NULL) {
        r = store_lookup(srv.store, req->argv[i], req->argvlen[i], now);
    }
    if (r != NULL) {
        srv.stats.keyspace_hits++;
    } else {
        srv.stats.keyspace_misses++;
    }
    return r;
}

void
cmd_get(struct conn *c, struct resp_request *req)
{
    struct store_rec *r = keyspace_lookup(c, req, 1, clock_wall_now());
    if (r == NULL) {
        reply_null(&c->out, c->proto);
        return;
    }
    if (r->type != KEY_GCRA) {
        conn_error(c, "WRONGTYPE Operation against a key holding the wrong "
                      "kind of value");
        return;
    }
    const struct gcra_state *st = store_rec_state(r);
    reply_bulk_u64(&c->out, st->tat);
}

void
cmd_pttl(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    struct store_rec *r = keyspace_lookup(c, req, 1, now);
    reply_int(&c->out, r == NULL ? -2 : keytype_redis_pttl(r, now));
}

void
cmd_ttl(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    struct store_rec *r = keyspace_lookup(c, req, 1, now);
    if (r == NULL) {
        reply_int(&c->out, -2);
        return;
    }
    int64_t pttl = keytype_redis_pttl(r, now);
    /* Redis rounds the remaining milliseconds to the nearest second. */
    reply_int(&c->out, pttl < 0 ? pttl : (pttl + 500) / 1000);
}

void
cmd_exists(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    int64_t n = 0;
    for (size_t i = 1; i < req->argc; i++) {
        if (store_lookup(srv.store, req->argv[i], req->argvlen[i], now) !=
            NULL) {
            n++;
        }
    }
    reply_int(&c->out, n);
}

void
cmd_del(struct conn *c, struct resp_request *req)
{
    int64_t now = clock_wall_now();
    int64_t n = 0;
    for (size_t i = 1; i < req->argc; i++) {
        struct store_rec *r = store_lookup(srv.store, req->argv[i],
                                           req->argvlen[i], now);
        if (r != NULL) {
            store_remove(srv.store, r);
            n++;
        }
    }
    reply_int(&c->out, n);
}

void
cmd_type(struct conn *c, struct resp_request *req)
{
    struct store_rec *r = keyspace_lookup(c, req, 1, clock_wall_now());
    reply_status(&c->out, r == NULL ? "none" : keytype_name(r->type));
}
