/*
 * pubsub.h - channels and patterns: who hears a PUBLISH.
 *
 * Redis Sentinel finds its peers by publishing hello messages on the
 * primary and its replicas and subscribing to them, and failover-aware
 * clients listen for +switch-master the same way; so the pub/sub of Redis
 * is part of speaking to that machinery. Messages are nothing to the
 * keyspace: they are written into the subscribers' output buffers at once
 * and never stored.
 *
 * A channel maps to the clients subscribed to it, and a pattern to its
 * clients, as Redis 7 keeps them: two lib/dict tables of the server's
 * memory, keyed SipHash with the process's seed, so nobody can pile
 * names into one bucket. Every PUBLISH matches each pattern once with
 * glob.c, walking the patterns in the table's order as Redis walks its
 * dict (a client of two matching patterns hears the two in that order);
 * a channel's or a pattern's clients hear in the order they subscribed.
 * A client's own subscriptions sit in c->subs, in order, so UNSUBSCRIBE
 * without arguments, a disconnect and RESET can drop them all.
 *
 * Commands never call the connection layer: pubsub_publish() appends to
 * each subscriber's output buffer and lists it (client_note_fed); conn.c
 * takes the list after the command and queues their writes.
 */
#ifndef CELLGATE_PUBSUB_H
#define CELLGATE_PUBSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;

/* Subscribe c to a channel (pattern: a glob pattern). 1 when new, 0 when
 * it was subscribed already, -1 when memory ran out. */
int pubsub_subscribe(struct conn *c, const char *name, size_t len,
                     bool pattern);

/* 1 when c was subscribed and no longer is, 0 when it was not. */
int pubsub_unsubscribe(struct conn *c, const char *name, size_t len,
                       bool pattern);

/* c's channels (pattern false) or patterns, in subscription order. */
size_t pubsub_count(const struct conn *c, bool pattern);
const char *pubsub_name(const struct conn *c, bool pattern, size_t i,
                        size_t *len);

/* Drop every subscription of c without a word (disconnect, RESET). */
void pubsub_forget(struct conn *c);

/* The reply to (P)(UN)SUBSCRIBE for one name: [kind, name, count] as an
 * array (RESP2) or a push (RESP3); name NULL gives a null. */
void pubsub_reply(struct conn *c, const char *kind, const char *name,
                  size_t len, size_t count);

/* Deliver msg on channel to its subscribers and the clients of matching
 * patterns, each in its own protocol. Returns how many received it. */
size_t pubsub_publish(const char *channel, size_t clen, const char *msg,
                      size_t mlen);

/* PUBSUB and INFO: channels with at least one subscriber, walked in table
 * order (start with a zeroed iterator; NULL at the end; each name is
 * followed by a NUL); the subscriber count of one channel; the patterns
 * subscribed (unique, as Redis counts them). */
struct dict_entry;
struct pubsub_iter {
    uint64_t bucket;            /* a struct dict_iter's, kept apart */
    struct dict_entry *at;
};
size_t pubsub_channel_total(void);
const char *pubsub_channel_next(struct pubsub_iter *it, size_t *len);
size_t pubsub_numsub(const char *channel, size_t len);
size_t pubsub_numpat(void);

void pubsub_teardown(void);

#endif
