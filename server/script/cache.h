/*
 * cache.h - the scripts compiled so far, by the SHA1 of their body.
 *
 * A script is compiled once per body, for EVAL too: its function stays
 * in the Lua registry (a reference, found in O(1) at every call) and its
 * entry here says which flags its #!lua line declared. SCRIPT LOAD's
 * scripts stay until SCRIPT FLUSH; those only EVAL has sent are kept in
 * least-recently-used order and the oldest is forgotten beyond
 * CACHE_EVAL_MAX, as Redis 7.4 does, so a client that builds a new body
 * per call cannot fill the memory (its EVALSHA then answers NOSCRIPT).
 */
#ifndef CELLGATE_SCRIPT_CACHE_H
#define CELLGATE_SCRIPT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <lua.h>

#define CACHE_EVAL_MAX 500

struct script_entry {
    const uint8_t *sha;             /* its 20 bytes: the table's key */
    int ref;                        /* the function, in L's registry */
    unsigned flags;                 /* enum script_flag (api.h) */
    bool loaded;                    /* SCRIPT LOAD: never forgotten */
    TAILQ_ENTRY(script_entry) by_use;   /* EVAL-only scripts (cache.c) */
};

/* 40 hex digits, any case, into the 20 bytes; false if not a SHA1. */
bool cache_sha_parse(const char *hex, size_t len, uint8_t sha[20]);

struct script_entry *cache_find(const uint8_t sha[20]);

/* Keep the function on top of L (popped) under sha. NULL when memory ran
 * out (the function is popped all the same). May forget the oldest
 * EVAL-only script of L. */
struct script_entry *cache_add(lua_State *L, const uint8_t sha[20],
                               unsigned flags, bool loaded);

/* EVAL used it: the newest. */
void cache_touch(struct script_entry *e);

/* SCRIPT LOAD of a script EVAL had sent: kept from now on. */
void cache_keep(struct script_entry *e);

/* Forget every script, its reference in the Lua state dropped (the state
 * is closed apart, or lives on for FUNCTION's libraries). */
void cache_flush(void);

size_t cache_count(void);
size_t cache_memory(void);

#endif
