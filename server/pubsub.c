/*
 * pubsub.c - see pubsub.h.
 */
#include "server/pubsub.h"

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "lib/mem.h"
#include "lib/siphash.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "lib/glob.h"
#include "server/server.h"

struct channel {
    struct channel *next;       /* hash chain */
    struct conn **subs;
    size_t nsubs, cap;
    size_t len;
    char name[];
};

struct pattern {
    struct conn *c;
    size_t len;
    char *name;
};

/* A client's subscriptions, by name, in order. */
struct name_list {
    char **name;
    size_t *len;
    size_t n, cap;
};

struct pubsub_subs {
    struct name_list channels;
    struct name_list patterns;
};

static struct channel **table;
static size_t nbuckets, nchannels;
static struct pattern *patterns;
static size_t npatterns, patterns_cap;

/* ---- helpers ----------------------------------------------------------- */

/* Channel names are the client's: keyed as the key table is (srv.seed),
 * so nobody can pile them into one bucket. */
static uint64_t
hash_name(const char *s, size_t len)
{
    uint64_t k0, k1;
    siphash_key(srv.seed, &k0, &k1);
    return siphash(k0, k1, s, len, 1, 3);
}

static bool
grow_array(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) {
        return true;
    }
    size_t n = *cap ? *cap * 2 : 4;
    while (n < need) {
        n *= 2;
    }
    void *q = mem_realloc(*p, n * size);
    if (q == NULL) {
        return false;
    }
    *p = q;
    *cap = n;
    return true;
}

static bool
same(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}

/* ---- a client's own list ----------------------------------------------- */

static struct name_list *
list_of(struct conn *c, bool pattern)
{
    if (c->subs == NULL) {
        c->subs = mem_calloc(1, sizeof(*c->subs));
        if (c->subs == NULL) {
            return NULL;
        }
    }
    return pattern ? &c->subs->patterns : &c->subs->channels;
}

static ssize_t
list_find(const struct name_list *l, const char *name, size_t len)
{
    for (size_t i = 0; l != NULL && i < l->n; i++) {
        if (same(l->name[i], l->len[i], name, len)) {
            return (ssize_t)i;
        }
    }
    return -1;
}

static bool
list_add(struct name_list *l, const char *name, size_t len)
{
    size_t cap_n = l->cap, cap_l = l->cap;
    char *copy = mem_malloc(len + 1);
    if (copy == NULL ||
        !grow_array((void **)&l->name, &cap_n, l->n + 1, sizeof(*l->name)) ||
        !grow_array((void **)&l->len, &cap_l, l->n + 1, sizeof(*l->len))) {
        mem_free(copy);
        return false;
    }
    l->cap = cap_n < cap_l ? cap_n : cap_l;
    memcpy(copy, name, len);
    copy[len] = '\0';
    l->name[l->n] = copy;
    l->len[l->n++] = len;
    return true;
}

static void
list_remove(struct name_list *l, size_t i)
{
    mem_free(l->name[i]);
    memmove(&l->name[i], &l->name[i + 1], (l->n - i - 1) * sizeof(*l->name));
    memmove(&l->len[i], &l->len[i + 1], (l->n - i - 1) * sizeof(*l->len));
    l->n--;
}

static void
list_free(struct name_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        mem_free(l->name[i]);
    }
    mem_free(l->name);
    mem_free(l->len);
}

/* ---- the channel table ------------------------------------------------- */

static struct channel **
slot_of(const char *name, size_t len)
{
    struct channel **p = &table[hash_name(name, len) & (nbuckets - 1)];
    while (*p != NULL && !same((*p)->name, (*p)->len, name, len)) {
        p = &(*p)->next;
    }
    return p;
}

static bool
grow_table(void)
{
    size_t n = nbuckets ? nbuckets * 2 : 16;
    struct channel **t = mem_calloc(n, sizeof(*t));
    if (t == NULL) {
        return false;
    }
    for (size_t i = 0; i < nbuckets; i++) {
        for (struct channel *ch = table[i], *next; ch != NULL; ch = next) {
            next = ch->next;
            struct channel **b = &t[hash_name(ch->name, ch->len) & (n - 1)];
            ch->next = *b;
            *b = ch;
        }
    }
    mem_free(table);
    table = t;
    nbuckets = n;
    return true;
}

static struct channel *
channel_get(const char *name, size_t len)
{
    if (nchannels >= nbuckets && !grow_table() && nbuckets == 0) {
        return NULL;
    }
    struct channel **p = slot_of(name, len);
    if (*p == NULL) {
        struct channel *ch = mem_calloc(1, sizeof(*ch) + len + 1);
        if (ch == NULL) {
            return NULL;
        }
        memcpy(ch->name, name, len);
        ch->len = len;
        *p = ch;
        nchannels++;
    }
    return *p;
}

static void
channel_drop_sub(const char *name, size_t len, struct conn *c)
{
    struct channel **p = nbuckets ? slot_of(name, len) : NULL;
    struct channel *ch = p ? *p : NULL;
    for (size_t i = 0; ch != NULL && i < ch->nsubs; i++) {
        if (ch->subs[i] == c) {
            memmove(&ch->subs[i], &ch->subs[i + 1],
                    (ch->nsubs - i - 1) * sizeof(*ch->subs));
            ch->nsubs--;
            break;
        }
    }
    if (ch != NULL && ch->nsubs == 0) {
        *p = ch->next;
        mem_free(ch->subs);
        mem_free(ch);
        nchannels--;
    }
}

static void
pattern_drop(const char *name, size_t len, struct conn *c)
{
    for (size_t i = 0; i < npatterns; i++) {
        if (patterns[i].c == c &&
            same(patterns[i].name, patterns[i].len, name, len)) {
            memmove(&patterns[i], &patterns[i + 1],
                    (npatterns - i - 1) * sizeof(*patterns));
            npatterns--;
            return;
        }
    }
}

/* ---- subscribing ------------------------------------------------------- */

int
pubsub_subscribe(struct conn *c, const char *name, size_t len, bool pattern)
{
    struct name_list *l = list_of(c, pattern);
    if (l == NULL) {
        return -1;
    }
    if (list_find(l, name, len) >= 0) {
        return 0;
    }
    if (pattern) {
        if (!grow_array((void **)&patterns, &patterns_cap, npatterns + 1,
                        sizeof(*patterns)) ||
            !list_add(l, name, len)) {
            return -1;
        }
        patterns[npatterns++] = (struct pattern){ c, len, l->name[l->n - 1] };
        return 1;
    }
    struct channel *ch = channel_get(name, len);
    if (ch == NULL ||
        !grow_array((void **)&ch->subs, &ch->cap, ch->nsubs + 1,
                    sizeof(*ch->subs))) {
        if (ch != NULL && ch->nsubs == 0) {
            channel_drop_sub(name, len, c);
        }
        return -1;
    }
    if (!list_add(l, name, len)) {
        if (ch->nsubs == 0) {
            channel_drop_sub(name, len, c);
        }
        return -1;
    }
    ch->subs[ch->nsubs++] = c;
    return 1;
}

int
pubsub_unsubscribe(struct conn *c, const char *name, size_t len,
                   bool pattern)
{
    struct name_list *l = c->subs == NULL ? NULL
                          : pattern       ? &c->subs->patterns
                                          : &c->subs->channels;
    ssize_t i = list_find(l, name, len);
    if (i < 0) {
        return 0;
    }
    if (pattern) {
        pattern_drop(name, len, c);
    } else {
        channel_drop_sub(name, len, c);
    }
    list_remove(l, (size_t)i);
    return 1;
}

size_t
pubsub_count(const struct conn *c, bool pattern)
{
    if (c->subs == NULL) {
        return 0;
    }
    return pattern ? c->subs->patterns.n : c->subs->channels.n;
}

const char *
pubsub_name(const struct conn *c, bool pattern, size_t i, size_t *len)
{
    const struct name_list *l =
        pattern ? &c->subs->patterns : &c->subs->channels;
    *len = l->len[i];
    return l->name[i];
}

void
pubsub_forget(struct conn *c)
{
    if (c->subs == NULL) {
        return;
    }
    while (c->subs->channels.n > 0) {
        size_t n = c->subs->channels.n - 1;
        (void)pubsub_unsubscribe(c, c->subs->channels.name[n],
                                 c->subs->channels.len[n], false);
    }
    while (c->subs->patterns.n > 0) {
        size_t n = c->subs->patterns.n - 1;
        (void)pubsub_unsubscribe(c, c->subs->patterns.name[n],
                                 c->subs->patterns.len[n], true);
    }
    list_free(&c->subs->channels);
    list_free(&c->subs->patterns);
    mem_free(c->subs);
    c->subs = NULL;
}

/* ---- publishing -------------------------------------------------------- */

/* RESP2 array or RESP3 push of n bulk strings. */
static void
push(struct conn *c, size_t n, const char *const *s, const size_t *len)
{
    if (c->proto == 3) {
        char head[24];
        int k = snprintf(head, sizeof(head), ">%zu\r\n", n);
        obuf_append(&c->out, head, (size_t)k);
    } else {
        reply_array(&c->out, n);
    }
    for (size_t i = 0; i < n; i++) {
        reply_bulk(&c->out, s[i], len[i]);
    }
    client_note_fed(c);
}

void
pubsub_reply(struct conn *c, const char *kind, const char *name, size_t len,
             size_t count)
{
    if (c->proto == 3) {
        obuf_append(&c->out, ">3\r\n", 4);
    } else {
        reply_array(&c->out, 3);
    }
    reply_bulkz(&c->out, kind);
    if (name != NULL) {
        reply_bulk(&c->out, name, len);
    } else {
        reply_null(&c->out, c->proto);
    }
    reply_int(&c->out, (int64_t)count);
}

size_t
pubsub_publish(const char *channel, size_t clen, const char *msg,
               size_t mlen)
{
    size_t receivers = 0;
    struct channel *ch = nbuckets ? *slot_of(channel, clen) : NULL;
    for (size_t i = 0; ch != NULL && i < ch->nsubs; i++) {
        const char *s[3] = { "message", channel, msg };
        const size_t l[3] = { 7, clen, mlen };
        push(ch->subs[i], 3, s, l);
        receivers++;
    }
    for (size_t i = 0; i < npatterns; i++) {
        const struct pattern *p = &patterns[i];
        if (glob_match(p->name, p->len, channel, clen, false)) {
            const char *s[4] = { "pmessage", p->name, channel, msg };
            const size_t l[4] = { 8, p->len, clen, mlen };
            push(p->c, 4, s, l);
            receivers++;
        }
    }
    return receivers;
}

/* ---- PUBSUB ------------------------------------------------------------ */

size_t
pubsub_channel_total(void)
{
    return nchannels;
}

const char *
pubsub_channel_next(struct pubsub_iter *it, size_t *len)
{
    const struct channel *ch = it->at;
    if (ch != NULL) {
        ch = ch->next;
    }
    while (ch == NULL && it->bucket < nbuckets) {
        ch = table[it->bucket++];
    }
    it->at = ch;
    if (ch == NULL) {
        return NULL;
    }
    *len = ch->len;
    return ch->name;
}

size_t
pubsub_numsub(const char *channel, size_t len)
{
    const struct channel *ch = nbuckets ? *slot_of(channel, len) : NULL;
    return ch != NULL ? ch->nsubs : 0;
}

size_t
pubsub_numpat(void)
{
    size_t unique = 0;
    for (size_t i = 0; i < npatterns; i++) {
        size_t j = 0;
        while (j < i && !same(patterns[j].name, patterns[j].len,
                              patterns[i].name, patterns[i].len)) {
            j++;
        }
        unique += j == i;
    }
    return unique;
}

void
pubsub_teardown(void)
{
    mem_free(table);
    mem_free(patterns);
    table = NULL;
    patterns = NULL;
    nbuckets = nchannels = npatterns = patterns_cap = 0;
}
