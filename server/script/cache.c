/*
 * cache.c - the scripts compiled so far. See cache.h.
 *
 * A small chained hash table of its own rather than lib/dict.c: the dict
 * counts its memory as keys' memory, which eviction estimates from, and
 * scripts are not keys. A SHA1 is already uniform, so its first bytes are
 * the hash.
 */
#include "server/script/cache.h"

#include <string.h>

#include <lauxlib.h>

#include "lib/mem.h"

static struct script_entry **buckets;
static size_t nbuckets;             /* a power of two, or 0 */
static size_t count;
static size_t eval_only;
static struct script_entry *newest; /* EVAL-only scripts by last use */
static struct script_entry *oldest;
static lua_State *owner;            /* the state the references are in */

static int
hex_value(char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    ch = (char)(ch | 0x20);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

bool
cache_sha_parse(const char *hex, size_t len, uint8_t sha[20])
{
    if (len != 40) {
        return false;
    }
    for (size_t i = 0; i < 20; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        sha[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static size_t
bucket_of(const uint8_t sha[20], size_t n)
{
    uint64_t h;
    memcpy(&h, sha, sizeof(h));
    return (size_t)(h & (n - 1));
}

struct script_entry *
cache_find(const uint8_t sha[20])
{
    if (nbuckets == 0) {
        return NULL;
    }
    for (struct script_entry *e = buckets[bucket_of(sha, nbuckets)];
         e != NULL; e = e->chain) {
        if (memcmp(e->sha, sha, 20) == 0) {
            return e;
        }
    }
    return NULL;
}

static bool
grow(void)
{
    size_t n = nbuckets == 0 ? 16 : nbuckets * 2;
    struct script_entry **b = mem_calloc(n, sizeof(*b));
    if (b == NULL) {
        return false;
    }
    for (size_t i = 0; i < nbuckets; i++) {
        struct script_entry *e = buckets[i];
        while (e != NULL) {
            struct script_entry *next = e->chain;
            size_t j = bucket_of(e->sha, n);
            e->chain = b[j];
            b[j] = e;
            e = next;
        }
    }
    mem_free(buckets);
    buckets = b;
    nbuckets = n;
    return true;
}

static void
lru_unlink(struct script_entry *e)
{
    if (e->newer != NULL) {
        e->newer->older = e->older;
    } else {
        newest = e->older;
    }
    if (e->older != NULL) {
        e->older->newer = e->newer;
    } else {
        oldest = e->newer;
    }
    e->newer = e->older = NULL;
}

static void
lru_push(struct script_entry *e)
{
    e->older = newest;
    e->newer = NULL;
    if (newest != NULL) {
        newest->newer = e;
    }
    newest = e;
    if (oldest == NULL) {
        oldest = e;
    }
}

static void
remove_entry(struct script_entry *e)
{
    struct script_entry **p = &buckets[bucket_of(e->sha, nbuckets)];
    while (*p != e) {
        p = &(*p)->chain;
    }
    *p = e->chain;
    if (!e->loaded) {
        lru_unlink(e);
        eval_only--;
    }
    luaL_unref(owner, LUA_REGISTRYINDEX, e->ref);
    count--;
    mem_free(e);
}

struct script_entry *
cache_add(lua_State *L, const uint8_t sha[20], unsigned flags, bool loaded)
{
    struct script_entry *e = NULL;
    if ((count < nbuckets || grow()) &&
        (e = mem_calloc(1, sizeof(*e))) != NULL) {
        e->ref = luaL_ref(L, LUA_REGISTRYINDEX);
        if (e->ref == LUA_REFNIL || e->ref == LUA_NOREF) {
            mem_free(e);
            return NULL;
        }
    } else {
        lua_pop(L, 1);
        return NULL;
    }
    owner = L;
    memcpy(e->sha, sha, 20);
    e->flags = flags;
    e->loaded = loaded;
    size_t b = bucket_of(sha, nbuckets);
    e->chain = buckets[b];
    buckets[b] = e;
    count++;
    if (!loaded) {
        lru_push(e);
        if (++eval_only > CACHE_EVAL_MAX) {
            remove_entry(oldest);
        }
    }
    return e;
}

void
cache_touch(struct script_entry *e)
{
    if (!e->loaded && newest != e) {
        lru_unlink(e);
        lru_push(e);
    }
}

void
cache_keep(struct script_entry *e)
{
    if (!e->loaded) {
        lru_unlink(e);
        eval_only--;
        e->loaded = true;
    }
}

void
cache_flush(void)
{
    for (size_t i = 0; i < nbuckets; i++) {
        struct script_entry *e = buckets[i];
        while (e != NULL) {
            struct script_entry *next = e->chain;
            mem_free(e);
            e = next;
        }
    }
    mem_free(buckets);
    buckets = NULL;
    nbuckets = count = eval_only = 0;
    newest = oldest = NULL;
    owner = NULL;
}

size_t
cache_count(void)
{
    return count;
}

size_t
cache_memory(void)
{
    return count * sizeof(struct script_entry) +
           nbuckets * sizeof(struct script_entry *);
}
