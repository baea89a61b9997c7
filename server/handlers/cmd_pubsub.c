/*
 * cmd_pubsub.c - SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH,
 * PUBSUB: Redis 7's replies, byte for byte (RESP2 arrays, RESP3 pushes).
 */
#include <stdio.h>
#include <string.h>

#include "protocol/reply.h"
#include "server/client.h"
#include "server/cluster/bus.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "lib/glob.h"
#include "server/handlers/handlers.h"
#include "server/pubsub.h"

static size_t
subscriptions(const struct conn *c)
{
    return pubsub_count(c, false) + pubsub_count(c, true);
}

static void
subscribe(struct conn *c, struct resp_request *req, bool pattern)
{
    const char *kind = pattern ? "psubscribe" : "subscribe";
    for (size_t i = 1; i < req->argc; i++) {
        if (pubsub_subscribe(c, req->argv[i], req->argvlen[i], pattern) < 0) {
            cmd_error(c, ERR_NOMEM);
            return;
        }
        pubsub_reply(c, kind, req->argv[i], req->argvlen[i],
                     subscriptions(c));
    }
}

/* Without names: every one of c's, in subscription order (Redis gives
 * its dict's order); a null name when there is none. */
static void
unsubscribe(struct conn *c, struct resp_request *req, bool pattern)
{
    const char *kind = pattern ? "punsubscribe" : "unsubscribe";
    if (req->argc > 1) {
        for (size_t i = 1; i < req->argc; i++) {
            (void)pubsub_unsubscribe(c, req->argv[i], req->argvlen[i],
                                     pattern);
            pubsub_reply(c, kind, req->argv[i], req->argvlen[i],
                         subscriptions(c));
        }
        return;
    }
    if (pubsub_count(c, pattern) == 0) {
        pubsub_reply(c, kind, NULL, 0, subscriptions(c));
        return;
    }
    while (pubsub_count(c, pattern) > 0) {
        size_t len;
        const char *name = pubsub_name(c, pattern, 0, &len);
        /* The reply comes after the subscription (and its name) is gone:
         * as Redis, the count it gives is the one left. */
        pubsub_reply(c, kind, name, len, subscriptions(c) - 1);
        (void)pubsub_unsubscribe(c, name, len, pattern);
    }
}

HANDLER_VARIANT(subscribe_command, subscribe, false)
HANDLER_VARIANT(psubscribe_command, subscribe, true)
HANDLER_VARIANT(unsubscribe_command, unsubscribe, false)
HANDLER_VARIANT(punsubscribe_command, unsubscribe, true)

void
publish_command(struct conn *c, struct resp_request *req)
{
    size_t n = pubsub_publish(req->argv[1], req->argvlen[1], req->argv[2],
                              req->argvlen[2]);
    if (n > 0) {
        c->requests |= CLIENT_FEEDS;
    }
    /* cluster-enabled yes: every node's subscribers hear it (Redis's
     * clusterPropagatePublish); the count is this node's, as Redis's */
    bus_publish(req->argv[1], req->argvlen[1], req->argv[2], req->argvlen[2],
                false);
    reply_int(&c->out, (int64_t)n);
}

HANDLER_VARIANT(pubsub_command, cmd_dispatch_subcommand,
                cmd_lookup("pubsub", 6))

void
pubsub_channels_command(struct conn *c, struct resp_request *req)
{
    struct pubsub_iter it = { 0, NULL };
    const char *name;
    size_t len, n = 0;
    /* Count first: the reply's length comes before its items. */
    while ((name = pubsub_channel_next(&it, &len)) != NULL) {
        n += req->argc < 3 || glob_match(req->argv[2], req->argvlen[2], name,
                                         len, false);
    }
    reply_array(&c->out, n);
    it = (struct pubsub_iter){ 0, NULL };
    while ((name = pubsub_channel_next(&it, &len)) != NULL) {
        if (req->argc < 3 || glob_match(req->argv[2], req->argvlen[2], name,
                                        len, false)) {
            reply_bulk(&c->out, name, len);
        }
    }
}

void
pubsub_numsub_command(struct conn *c, struct resp_request *req)
{
    reply_array(&c->out, 2 * (req->argc - 2));
    for (size_t i = 2; i < req->argc; i++) {
        reply_bulk(&c->out, req->argv[i], req->argvlen[i]);
        reply_int(&c->out,
                  (int64_t)pubsub_numsub(req->argv[i], req->argvlen[i]));
    }
}

void
pubsub_numpat_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_int(&c->out, (int64_t)pubsub_numpat());
}
