/*
 * sandbox.h - what a script's Lua sees: the libraries and the read-only
 * globals of Redis 7.0.15, on Debian's stock Lua 5.1 (no patched Lua).
 *
 * The order: sandbox_open() on a new lua_State, then the engine sets the
 * globals of its own (redis, and what else it adds) with lua_setglobal,
 * then sandbox_seal(). From then on the thread's globals table is the
 * read-only view: every chunk loaded afterwards (sandbox_load(), and
 * loadstring() inside scripts) runs in it. Per-call globals (KEYS, ARGV)
 * go into the table behind the view, sandbox_push_globals().
 */
#ifndef CELLGATE_SCRIPT_SANDBOX_H
#define CELLGATE_SCRIPT_SANDBOX_H

#include <stddef.h>

#include <lua.h>

/* Open the libraries a script sees, as Redis 7.0.15 loads them (base,
 * table, string, math, cjson, bit, and lualibs.h's struct and cmsgpack),
 * hide what it hides (print, dofile, loadfile,
 * setfenv, getfenv, newproxy; debug, os, io and package are never
 * opened), math.random as 7.0's, loadstring and load refusing bytecode.
 * 0, or -1 when memory ran out (L is then unusable for scripts). */
int sandbox_open(lua_State *L);

/* After the engine has set its globals (redis, ...): make the globals and
 * every table reachable from them read-only as Redis 7.0.15 does, with its
 * error texts, and make that read-only view the thread's globals. Once
 * only. 0, or -1 when memory ran out. */
int sandbox_seal(lua_State *L);

/* Push the table behind the sealed view, for the engine's per-call
 * globals (KEYS and ARGV, as Redis sets them for each EVAL, unprotected):
 * lua_setfield on it. Never hand it to a script. Before the seal, pushes
 * the thread's globals. Allocates nothing, so it cannot fail. */
void sandbox_push_globals(lua_State *L);

/* luaL_loadbuffer() for script text: source only, never a precompiled
 * chunk (Redis's Lua has no bytecode loader; stock Lua's would run
 * forged bytecode). A chunk that starts with the bytecode mark gets the
 * parser's error, as in Redis ("unexpected symbol near 'char(27)'"). */
int sandbox_load(lua_State *L, const char *buf, size_t len,
                 const char *chunkname);

/* FUNCTION LOAD's environments (function.c), inside a protected call (both
 * raise when memory runs out). sandbox_undefined_raises(): reading a
 * missing field of the table on top raises Redis's error for an undefined
 * global, as the globals' do. sandbox_view(): the table on top replaced by
 * its read-only view (every table it reaches viewed too), whose writes
 * raise Redis's "Attempt to modify a readonly table". */
void sandbox_undefined_raises(lua_State *L);
void sandbox_view(lua_State *L);

#endif
