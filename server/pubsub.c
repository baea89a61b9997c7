/*
 * pubsub.c - see pubsub.h.
 */
#include "server/pubsub.h"

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "lib/dict.h"
#include "lib/mem.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "lib/glob.h"

/* The clients subscribed to one channel or pattern, in the order they
 * subscribed: the owner block of its name's entry (one allocation, grown
 * by doubling). */
struct subscribers {
    size_t n, cap;
    struct conn *c[];
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

/* Each channel, and each pattern, to its subscribers. */
static struct dict channels = DICT_SERVER;
static struct dict patterns = DICT_SERVER;

/* ---- helpers ----------------------------------------------------------- */

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

/* ---- the tables ------------------------------------------------------ */

static struct dict *
table_of(bool pattern)
{
    return pattern ? &patterns : &channels;
}

static struct subscribers *
subs_of(const struct dict_entry *e)
{
    return e != NULL ? e->owner.p : NULL;
}

/* c subscribed to name in d (the name added if new); false, d as it was,
 * when memory runs out. A name's value is a NUL, so the names PUBSUB
 * CHANNELS walks (pubsub_channel_next) are C strings too. */
static bool
table_add(struct dict *d, const char *name, size_t len, struct conn *c)
{
    struct dict_entry *e = dict_find(d, name, len);
    struct subscribers *s = subs_of(e);
    if (s == NULL || s->n == s->cap) {
        size_t cap = s != NULL ? s->cap * 2 : 4;
        struct subscribers *g = mem_realloc(s, sizeof(*g) +
                                               cap * sizeof(*g->c));
        if (g == NULL) {
            return false;
        }
        if (s == NULL) {
            g->n = 0;
            if (len > UINT32_MAX ||
                (e = dict_add(d, name, (uint32_t)len, "", 1)) == NULL) {
                mem_free(g);
                return false;
            }
        }
        g->cap = cap;
        e->owner.p = s = g;
    }
    s->c[s->n++] = c;
    return true;
}

/* c no longer subscribed to name in d (the name gone with its last). */
static void
table_drop(struct dict *d, const char *name, size_t len, struct conn *c)
{
    struct dict_entry *e = dict_find(d, name, len);
    struct subscribers *s = subs_of(e);
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        if (s->c[i] == c) {
            memmove(&s->c[i], &s->c[i + 1], (s->n - i - 1) * sizeof(*s->c));
            s->n--;
            break;
        }
    }
    if (s != NULL && s->n == 0) {
        mem_free(s);
        dict_remove(d, e);
    }
}

static void
table_free(struct dict *d)
{
    struct dict_iter it = { 0, NULL };
    const struct dict_entry *e;
    while ((e = dict_next(d, &it)) != NULL) {
        mem_free(e->owner.p);
    }
    dict_free(d);
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
    if (!table_add(table_of(pattern), name, len, c)) {
        return -1;
    }
    if (!list_add(l, name, len)) {
        table_drop(table_of(pattern), name, len, c);
        return -1;
    }
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
    table_drop(table_of(pattern), name, len, c);
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
    struct obuf *out = client_push_out(c);
    if (c->proto == 3) {
        char head[24];
        int k = snprintf(head, sizeof(head), ">%zu\r\n", n);
        obuf_append(out, head, (size_t)k);
    } else {
        reply_array(out, n);
    }
    for (size_t i = 0; i < n; i++) {
        reply_bulk(out, s[i], len[i]);
    }
    client_note_fed(c);
}

void
pubsub_reply(struct conn *c, const char *kind, const char *name, size_t len,
             size_t count)
{
    struct obuf *out = client_push_out(c);
    if (c->proto == 3) {
        obuf_append(out, ">3\r\n", 4);
    } else {
        reply_array(out, 3);
    }
    reply_bulkz(out, kind);
    if (name != NULL) {
        reply_bulk(out, name, len);
    } else {
        reply_null(out, c->proto);
    }
    reply_int(out, (int64_t)count);
}

size_t
pubsub_publish(const char *channel, size_t clen, const char *msg,
               size_t mlen)
{
    size_t receivers = 0;
    const struct subscribers *s = subs_of(dict_find(&channels, channel, clen));
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        const char *str[3] = { "message", channel, msg };
        const size_t l[3] = { 7, clen, mlen };
        push(s->c[i], 3, str, l);
        receivers++;
    }
    /* Delivering changes no table: walking one meanwhile is safe. */
    struct dict_iter it = { 0, NULL };
    const struct dict_entry *e;
    while ((e = dict_next(&patterns, &it)) != NULL) {
        const char *p = (const char *)dict_key(e);
        if (!glob_match(p, e->klen, channel, clen, false)) {
            continue;
        }
        s = subs_of(e);
        for (size_t i = 0; i < s->n; i++) {
            const char *str[4] = { "pmessage", p, channel, msg };
            const size_t l[4] = { 8, e->klen, clen, mlen };
            push(s->c[i], 4, str, l);
            receivers++;
        }
    }
    return receivers;
}

/* ---- PUBSUB ------------------------------------------------------------ */

size_t
pubsub_channel_total(void)
{
    return channels.used;
}

const char *
pubsub_channel_next(struct pubsub_iter *it, size_t *len)
{
    struct dict_iter di = { it->bucket, it->at };
    const struct dict_entry *e = dict_next(&channels, &di);
    it->bucket = di.bucket;
    it->at = di.next;
    if (e == NULL) {
        return NULL;
    }
    *len = e->klen;
    return (const char *)dict_key(e);
}

size_t
pubsub_numsub(const char *channel, size_t len)
{
    const struct subscribers *s = subs_of(dict_find(&channels, channel, len));
    return s != NULL ? s->n : 0;
}

size_t
pubsub_numpat(void)
{
    return patterns.used;
}

void
pubsub_teardown(void)
{
    table_free(&channels);
    table_free(&patterns);
}
