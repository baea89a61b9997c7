/*
 * convert.h - a script's values to replies and back, with Redis 7.0's
 * rules (script_lua.c: redisProtocolToLuaType and luaReplyToRedisReply).
 *
 * Both directions run inside a protected Lua call of their own, so an
 * out-of-memory error in Lua never escapes them as a longjmp through the
 * caller's C frames: script_reply_to_lua() then returns false, and
 * script_lua_to_reply() marks the reply stream broken (c->out.oom), as
 * any failed append would. Each needs three free Lua stack slots (a C
 * function called from Lua always has LUA_MINSTACK).
 */
#ifndef CELLGATE_SCRIPT_CONVERT_H
#define CELLGATE_SCRIPT_CONVERT_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

struct conn;

/* Push onto L the Lua value of the one complete reply in buf[0..len) (what
 * a command wrote for redis.call, in RESP2 or RESP3 as the script's
 * redis.setresp() chose):
 *   integer -> number; bulk -> string; null bulk, null array -> false;
 *   status -> {ok=s}; error -> {err="CODE msg", ignore_error_stats_update=
 *   true} (a text without a space gets the code ERR; CR and LF trimmed
 *   off the message's ends; a NUL ends the text); array -> a table 1..n;
 *   RESP3: map -> {map={k=v}}, set -> {set={e=true}}, null -> nil,
 *   bool -> true/false, double -> {double=d}, big number ->
 *   {big_number=s}, verbatim -> {verbatim_string={format=f, string=s}};
 *   an attribute is skipped, the reply it annotates converted. A blob
 *   error is taken as an error; a push is refused (no command writes one
 *   for a script).
 * Returns false (pushing nothing) when buf is not exactly one valid reply,
 * or memory or the Lua stack ran out (Redis panics there). */
bool script_reply_to_lua(lua_State *L, const char *buf, size_t len);

/* The value on top of L (a script's return value) written to c->out as
 * the reply to c, in c->proto, as luaReplyToRedisReply writes it; pops it.
 * script_proto is the script's redis.setresp() choice, which decides what
 * a boolean becomes (RESP2: true -> 1, false -> null; RESP3: a boolean,
 * sent as 1 or 0 to a RESP2 client):
 *   string -> bulk; number -> integer (truncated; NaN and out of range
 *   -> INT64_MIN, as x86 converts); table -> by its first field of the
 *   right type, in this order: err (string; an error reply, counted in
 *   errorstats unless its ignore_error_stats_update field is true), ok
 *   (string; status), double (number), big_number (string),
 *   verbatim_string (table with string format and string), map (table),
 *   set (table; its keys); else an array of the values at 1, 2, ... up to
 *   the first nil; anything else -> null.
 * Nesting deeper than the Lua stack allows (Redis checks for 4 free
 * slots per value) becomes "-ERR reached lua stack limit" at that depth,
 * the rest of the reply intact, as Redis does. */
void script_lua_to_reply(lua_State *L, struct conn *c, int script_proto);

#endif
