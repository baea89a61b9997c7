/*
 * function.h - FUNCTION's libraries and the functions they register, in
 * the scripts' Lua state (engine.c runs them). See function.c.
 */
#ifndef CELLGATE_SCRIPT_FUNCTION_H
#define CELLGATE_SCRIPT_FUNCTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "lib/mem.h"

struct conn;
struct fn_library;

struct fn_function {
    struct fn_library *lib;
    char *desc;                 /* NULL: none given */
    size_t desc_len;
    unsigned flags;             /* enum script_flag (api.h) */
    int ref;                    /* the callback, in L's registry */
    size_t name_len;
    char name[];                /* NUL-terminated */
};

/* How function_load() treats a library of the same name, and whether the
 * load may run 500 ms (a client's) or as long as it takes (a replay's). */
enum fn_load {
    FN_LOAD = 0,
    FN_REPLACE = 1 << 0,
    FN_NO_TIMEOUT = 1 << 1
};

/* FUNCTION LOAD: compile and run code (its #!lua name=... line first),
 * keep the functions it registers. The library's name (valid until the
 * set changes) in *name, or false with Redis's error reply in err. */
bool function_load(lua_State *L, const char *code, size_t len, unsigned how,
                   const char **name, size_t *name_len, char *err,
                   size_t errlen);

struct fn_function *function_find(const char *name, size_t len);

/* FUNCTION DELETE: false when there is no such library. */
bool function_delete(lua_State *L, const char *name, size_t len);

/* FUNCTION FLUSH; L NULL when the state is gone already (teardown). */
void function_flush(lua_State *L);

/* The state the libraries lived in was closed: their environment with
 * it (the libraries are gone already, function_flush()). */
void function_state_closed(void);

/* FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]: its reply to c. */
void function_list(struct conn *c, bool withcode, const char *pattern,
                   size_t plen);

/* Every library's code, as u32 len (host order) then the bytes, one after
 * another (nothing when there is none): what the journal, the snapshot
 * and the replicas keep. false when memory ran out. */
bool function_encode_set(struct membuf *b);

/* fn on each library's code in turn (FUNCTION DUMP); stops at the first
 * false it answers, and answers false then. */
bool function_each_code(bool (*fn)(const char *code, size_t len, void *arg),
                        void *arg);

/* The set replaced by the libraries of function_encode_set()'s bytes,
 * loaded without a time limit. 0, or -1 with err (the set then holds the
 * libraries that loaded). */
int function_replace_set(lua_State *L, const unsigned char *p, size_t len,
                         char *err, size_t errlen);

/* FUNCTION RESTORE's policies. */
enum fn_restore {
    FN_RESTORE_APPEND,
    FN_RESTORE_REPLACE,
    FN_RESTORE_FLUSH
};

/* FUNCTION RESTORE of the libraries in function_encode_set()'s bytes:
 * 0, or -1 with Redis's error reply in err and the set as it was. */
int function_restore(lua_State *L, const unsigned char *p, size_t len,
                     enum fn_restore policy, char *err, size_t errlen);

size_t function_library_count(void);
size_t function_count(void);
/* The libraries' code, names and bookkeeping (used_memory_functions). */
size_t function_memory(void);

#endif
