/*
 * cache.c - the scripts compiled so far. See cache.h.
 *
 * A lib/dict from the SHA1 to the script's entry (the dict entry's owner
 * word; the entry's sha points at the dict's copy of the key), of the
 * server's memory: in used_memory, not in the keys' memory eviction
 * estimates from, since scripts are not keys. The entries EVAL alone
 * sent are also on a list by last use, the oldest forgotten first.
 */
#include "server/script/cache.h"

#include <string.h>

#include <lauxlib.h>

#include "lib/dict.h"
#include "lib/mem.h"

static struct dict scripts = DICT_SERVER;
static size_t eval_only;
/* The EVAL-only scripts by last use, the newest first. */
static TAILQ_HEAD(script_lru, script_entry) lru = TAILQ_HEAD_INITIALIZER(lru);
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

struct script_entry *
cache_find(const uint8_t sha[20])
{
    const struct dict_entry *d = dict_find(&scripts, sha, 20);
    return d != NULL ? d->owner.p : NULL;
}

static void
remove_entry(struct script_entry *e)
{
    if (!e->loaded) {
        TAILQ_REMOVE(&lru, e, by_use);
        eval_only--;
    }
    luaL_unref(owner, LUA_REGISTRYINDEX, e->ref);
    dict_remove(&scripts, dict_find(&scripts, e->sha, 20));
    mem_free(e);
}

struct script_entry *
cache_add(lua_State *L, const uint8_t sha[20], unsigned flags, bool loaded)
{
    struct script_entry *e = mem_calloc(1, sizeof(*e));
    struct dict_entry *d = NULL;
    if (e == NULL || (d = dict_add(&scripts, sha, 20, NULL, 0)) == NULL) {
        mem_free(e);
        lua_pop(L, 1);
        return NULL;
    }
    e->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    if (e->ref == LUA_REFNIL || e->ref == LUA_NOREF) {
        dict_remove(&scripts, d);
        mem_free(e);
        return NULL;
    }
    owner = L;
    d->owner.p = e;
    e->sha = dict_key(d);
    e->flags = flags;
    e->loaded = loaded;
    if (!loaded) {
        TAILQ_INSERT_HEAD(&lru, e, by_use);
        if (++eval_only > CACHE_EVAL_MAX) {
            remove_entry(TAILQ_LAST(&lru, script_lru));
        }
    }
    return e;
}

void
cache_touch(struct script_entry *e)
{
    if (!e->loaded && TAILQ_FIRST(&lru) != e) {
        TAILQ_REMOVE(&lru, e, by_use);
        TAILQ_INSERT_HEAD(&lru, e, by_use);
    }
}

void
cache_keep(struct script_entry *e)
{
    if (!e->loaded) {
        TAILQ_REMOVE(&lru, e, by_use);
        eval_only--;
        e->loaded = true;
    }
}

void
cache_flush(void)
{
    struct dict_iter it = { 0, NULL };
    const struct dict_entry *d;
    while ((d = dict_next(&scripts, &it)) != NULL) {
        const struct script_entry *e = d->owner.p;
        luaL_unref(owner, LUA_REGISTRYINDEX, e->ref);
        mem_free(d->owner.p);
    }
    dict_free(&scripts);
    eval_only = 0;
    TAILQ_INIT(&lru);
    owner = NULL;
}

size_t
cache_count(void)
{
    return scripts.used;
}

size_t
cache_memory(void)
{
    return scripts.owned + scripts.used * sizeof(struct script_entry);
}
