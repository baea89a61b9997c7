/*
 * lualibs.h - the script libraries Debian packages for no Lua 5.1, written
 * here with Redis 7.0.15's behaviour: cmsgpack (lualib_cmsgpack.c, over
 * msgpack-c's packer) and struct (lualib_struct.c).
 *
 * Each opener is a lua_CFunction as Lua's own luaopen_* are: called with
 * the library's name, it leaves the library's table on the stack (and
 * sets the global of that name, as Redis's copies do). sandbox.c opens
 * them beside cjson and bit, before it seals the globals read-only.
 */
#ifndef CELLGATE_SCRIPT_LUALIBS_H
#define CELLGATE_SCRIPT_LUALIBS_H

#include <lua.h>

/* cmsgpack: pack(...), unpack(s), unpack_one(s [, offset]),
 * unpack_limit(s, limit [, offset]), and lua-cmsgpack 0.4.0's _NAME,
 * _VERSION, _COPYRIGHT and _DESCRIPTION. */
int lualib_cmsgpack_open(lua_State *L);

/* How pack sees a table through the sandbox's read-only views (the
 * sandbox's function, handed down so that neither file includes the
 * other): it replaces the table on top of the stack by the real one. */
void lualib_cmsgpack_views(void (*see_through_top)(lua_State *L));

/* struct: pack(fmt, ...), unpack(fmt, s [, pos]), size(fmt). */
int lualib_struct_open(lua_State *L);

#endif
