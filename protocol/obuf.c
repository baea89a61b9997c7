/*
 * obuf.c - chunked output buffer (see obuf.h).
 *
 * Every chunk has the same capacity, so a drained chunk can be reused for the
 * next reply without a trip through the allocator: a pipelining client keeps
 * cycling through one or two chunks.
 *
 * A chunk an obuf gives back (its second drained chunk, the spare that
 * obuf_shrink() releases, what obuf_deinit() finds) goes to a small pool
 * of the thread's instead of free(), and the next obuf of the thread that
 * needs one takes it from there. Unpipelined, every reply used to cost a
 * 16 KB malloc() and free() (a client's reply is written and its spare
 * released in the same loop pass); now it costs a list push and pop. A
 * pooled chunk is uncounted (mem_uncharge()), as a freed one is: the
 * allocator would keep those bytes in its bins all the same. So used_memory
 * and every obuf's accounting are what they were.
 *
 * A chunk a full pool has no room for goes to the depot, shared by the
 * threads under a mutex, and an empty pool takes from there before it
 * allocates. With I/O threads the pools are never balanced: the main
 * thread takes a chunk for each client's replies, the client's I/O thread
 * gives it back once they are written. Without the depot the main thread
 * would malloc() 16 KB per unpipelined reply and the I/O thread free() it,
 * and glibc, seeing the heap's top free, gave it back to the kernel and
 * took it again thousands of times a second (brk() and page faults).
 */
#include "protocol/obuf.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/slist.h"

/* Chunks a thread keeps for reuse: one per client written in a loop pass
 * is what a busy unpipelined server cycles through. */
#define POOL_MAX 16
/* Chunks the depot keeps (1 MB): the replies of a few hundred clients in
 * flight between the threads. */
#define DEPOT_MAX 64

struct obuf_chunk {
    struct obuf_chunk *next;
    size_t used;
    char data[OBUF_CHUNK_SIZE];
};

/* Per thread: the loop's, and any other that writes replies (the busy
 * server), each with its own, so no lock. A thread that ends (the busy
 * server's does) frees its pool on the way out. */
static _Thread_local struct obuf_chunk *pool;
static _Thread_local unsigned pool_len;
static _Thread_local int pool_state;   /* 0: not known yet, 1: on, -1: off */
static pthread_key_t pool_key;
static bool pool_key_made;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t depot_mu = PTHREAD_MUTEX_INITIALIZER;
static struct obuf_chunk *depot;
static unsigned depot_len;

static void
pool_drain(void *unused)
{
    (void)unused;
    while (pool != NULL) {
        struct obuf_chunk *next = pool->next;
        free(pool);                     /* uncounted already */
        pool = next;
    }
    pool_len = 0;
}

static void
pool_key_create(void)
{
    pool_key_made = pthread_key_create(&pool_key, pool_drain) == 0;
}

/* Pool in this thread only if it will be drained when the thread ends
 * (the key's value just has to be non-NULL for that). */
static bool
pool_on(void)
{
    if (pool_state == 0) {
        pool_state = pthread_once(&pool_once, pool_key_create) == 0 &&
                             pool_key_made &&
                             pthread_setspecific(pool_key, &pool_state) == 0
                         ? 1
                         : -1;
    }
    return pool_state > 0;
}

static bool
depot_put(struct obuf_chunk *c)
{
    pthread_mutex_lock(&depot_mu);
    bool room = depot_len < DEPOT_MAX;
    if (room) {
        c->next = depot;
        depot = c;
        depot_len++;
    }
    pthread_mutex_unlock(&depot_mu);
    return room;
}

static struct obuf_chunk *
depot_take(void)
{
    pthread_mutex_lock(&depot_mu);
    struct obuf_chunk *c = depot;
    if (c != NULL) {
        depot = c->next;
        depot_len--;
    }
    pthread_mutex_unlock(&depot_mu);
    return c;
}

/* A chunk no obuf holds any more. In the pool or the depot its `used`
 * holds the bytes mem_malloc() counted for it (malloc_usable_size()), to
 * count them again when it is taken. */
static void
chunk_release(struct obuf_chunk *c)
{
    size_t size = malloc_usable_size(c);
    c->used = size;
    if (pool_len < POOL_MAX && pool_on()) {
        c->next = pool;
        pool = c;
        pool_len++;
    } else if (!depot_put(c)) {
        mem_free(c);
        return;
    }
    mem_uncharge(size);
}

/* A chunk for an obuf, counted as mem_malloc() counts it. */
static struct obuf_chunk *
chunk_acquire(void)
{
    struct obuf_chunk *c = pool;
    if (c != NULL) {
        pool = c->next;
        pool_len--;
    } else if ((c = depot_take()) == NULL) {
        return mem_malloc(sizeof(*c));
    }
    mem_charge(c->used);
    return c;
}

size_t
obuf_depot_len(void)
{
    pthread_mutex_lock(&depot_mu);
    size_t n = depot_len;
    pthread_mutex_unlock(&depot_mu);
    return n;
}

void
obuf_init(struct obuf *o)
{
    memset(o, 0, sizeof(*o));
}

void
obuf_deinit(struct obuf *o)
{
    SL_DRAIN(struct obuf_chunk, c, o->head, next) {
        chunk_release(c);
    }
    if (o->spare != NULL) {
        chunk_release(o->spare);
    }
    memset(o, 0, sizeof(*o));
}

static struct obuf_chunk *
chunk_get(struct obuf *o)
{
    struct obuf_chunk *c = o->spare;
    if (c != NULL) {
        o->spare = NULL;
    } else {
        c = chunk_acquire();
        if (c == NULL) {
            o->oom = true;
            return NULL;
        }
    }
    c->next = NULL;
    c->used = 0;
    return c;
}

static void
chunk_put(struct obuf *o, struct obuf_chunk *c)
{
    if (o->spare == NULL) {
        o->spare = c;
    } else {
        chunk_release(c);
    }
}

/* The tail chunk if it has n free bytes, else a new tail chunk. */
static struct obuf_chunk *
tail_with_room(struct obuf *o, size_t n)
{
    struct obuf_chunk *t = o->tail;
    if (t != NULL && OBUF_CHUNK_SIZE - t->used >= n) {
        return t;
    }
    struct obuf_chunk *c = chunk_get(o);
    if (c == NULL) {
        return NULL;
    }
    if (t == NULL) {
        o->head = o->tail = c;
        o->head_sent = 0;
    } else {
        t->next = c;
        o->tail = c;
    }
    o->chunks++;
    return c;
}

int
obuf_append(struct obuf *o, const void *data, size_t n)
{
    const char *p = data;
    if (o->oom) {
        return -1;
    }
    while (n > 0) {
        struct obuf_chunk *t = tail_with_room(o, 1);
        if (t == NULL) {
            return -1;
        }
        size_t room = OBUF_CHUNK_SIZE - t->used;
        size_t take = n < room ? n : room;
        memcpy(t->data + t->used, p, take);
        t->used += take;
        o->pending += take;
        p += take;
        n -= take;
    }
    return 0;
}

char *
obuf_reserve(struct obuf *o, size_t n)
{
    if (o->oom || n > OBUF_CHUNK_SIZE) {
        o->oom = true;
        return NULL;
    }
    struct obuf_chunk *t = tail_with_room(o, n);
    return t != NULL ? t->data + t->used : NULL;
}

void
obuf_commit(struct obuf *o, size_t used)
{
    o->tail->used += used;
    o->pending += used;
}

size_t
obuf_iov(const struct obuf *o, size_t skip, struct iovec *iov, size_t max,
         size_t *bytes)
{
    size_t n = 0;
    size_t total = 0;
    size_t off = o->head_sent + skip;

    for (struct obuf_chunk *c = o->head; c != NULL && n < max; c = c->next) {
        if (off >= c->used) {
            off -= c->used;
            continue;
        }
        iov[n].iov_base = c->data + off;
        iov[n].iov_len = c->used - off;
        total += c->used - off;
        off = 0;
        n++;
    }
    *bytes = total;
    return n;
}

void
obuf_consume(struct obuf *o, size_t n)
{
    o->pending -= n;
    while (n > 0) {
        struct obuf_chunk *h = o->head;
        size_t left = h->used - o->head_sent;
        if (n < left) {
            o->head_sent += n;
            return;
        }
        n -= left;
        o->head = h->next;
        o->head_sent = 0;
        o->chunks--;
        if (o->head == NULL) {
            o->tail = NULL;
        }
        chunk_put(o, h);
    }
}

void
obuf_move(struct obuf *dst, struct obuf *src)
{
    if (src->pending == 0) {
        return;
    }
    struct obuf_chunk *t = dst->tail;
    if (t != NULL && src->head == src->tail &&
        OBUF_CHUNK_SIZE - t->used >= src->pending) {
        /* A few replies: copied behind dst's, src's chunk kept for the
         * next ones. */
        memcpy(t->data + t->used, src->head->data + src->head_sent,
               src->pending);
        t->used += src->pending;
        dst->pending += src->pending;
        chunk_put(src, src->head);
    } else if (src->head_sent == 0) {
        /* Linked: the room left in dst's last chunk stays unused
         * (obuf_held() counts it). */
        if (t == NULL) {
            dst->head = src->head;
            dst->head_sent = 0;
        } else {
            t->next = src->head;
        }
        dst->tail = src->tail;
        dst->pending += src->pending;
        dst->chunks += src->chunks;
    } else {
        (void)obuf_append(dst, src->head->data + src->head_sent,
                          src->head->used - src->head_sent);
        for (struct obuf_chunk *c = src->head->next; c != NULL; c = c->next) {
            (void)obuf_append(dst, c->data, c->used);
        }
        struct obuf_chunk *c = src->head;
        while (c != NULL) {
            struct obuf_chunk *next = c->next;
            chunk_put(src, c);
            c = next;
        }
    }
    src->head = src->tail = NULL;
    src->head_sent = 0;
    src->pending = 0;
    src->chunks = 0;
}

void
obuf_pass_spare(struct obuf *to, struct obuf *from)
{
    if (to->spare == NULL && from->spare != NULL) {
        to->spare = from->spare;
        from->spare = NULL;
    }
}

void
obuf_stats(const struct obuf *o, struct obuf_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (o->head == NULL) {
        return;
    }
    st->obl = o->head->used - o->head_sent;
    for (const struct obuf_chunk *c = o->head->next; c != NULL; c = c->next) {
        st->oll++;
        st->omem += sizeof(*c);
    }
}

size_t
obuf_held(const struct obuf *o)
{
    if (o->head == NULL) {
        return 0;
    }
    return (o->chunks - 1) * OBUF_CHUNK_SIZE + o->tail->used - o->head_sent;
}

size_t
obuf_memory(const struct obuf *o)
{
    return (o->chunks + (o->spare != NULL)) * sizeof(struct obuf_chunk);
}

void
obuf_shrink(struct obuf *o)
{
    if (o->spare != NULL) {
        chunk_release(o->spare);
        o->spare = NULL;
    }
}
