/*
 * script.h - Lua scripts (EVAL, EVALSHA, SCRIPT): the wing's face.
 *
 * One Lua state (Debian's Lua 5.1) for every script, as Redis keeps one.
 * A script runs on the loop thread, inside its EVAL, as any command runs:
 * a rate limiter's script must stay as cheap as Redis's, and a script is
 * atomic because nothing else runs meanwhile. Its commands run through
 * the dispatcher on a script client (api.h); its effects reach the
 * journal and the replicas as one group, as EXEC's do. The Lua heap is
 * its own (used_memory_lua), bounded by lua-memory-limit and outside
 * maxmemory, so a script's tables never evict a limiter's key.
 */
#ifndef CELLGATE_SCRIPT_H
#define CELLGATE_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/resp.h"

struct cmd;

struct conn;

/* Make the Lua state. 0, or -1 when memory ran out. */
int script_init(void);
void script_teardown(void);

/* EVAL / EVALSHA (by_sha) and their _RO forms (read_only): run the
 * script with the request's keys and arguments, its reply to c. */
void script_eval(struct conn *c, struct resp_request *req, bool by_sha,
                 bool read_only);

/* Redis's evalGetCommandFlags(), the EVAL family's rows' request_flags
 * (cmd.h): the flags a request has once its script's #!lua flags are
 * known (a cached script's, or an EVAL body's shebang; EVALSHA's rows
 * carry CMD_SCRIPT_SHA): with flags, write and deny-oom unless no-writes
 * (or allow-oom) says otherwise, stale with allow-stale, and never
 * may-replicate; without, the row's flags unchanged. CLIENT PAUSE WRITE
 * holds a request by these. */
unsigned script_request_flags(const struct cmd *cmd,
                              const struct resp_request *req);

/* SCRIPT LOAD: compile and keep body until SCRIPT FLUSH; its SHA1 (or the
 * compile error) to c. */
void script_load(struct conn *c, const char *body, size_t len);

/* SCRIPT EXISTS: is the script of this SHA1 (40 hex digits, any case)
 * cached? */
bool script_exists(const char *sha, size_t len);

/* SCRIPT FLUSH: forget every script, with a new Lua state. */
void script_flush(void);

/* SCRIPT KILL: its reply to c. */
void script_kill(struct conn *c);

/* ---- functions (function.c) -------------------------------------------
 * FUNCTION LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE, STATS, KILL and
 * FCALL/FCALL_RO: each its reply to c; a change to the libraries is
 * recorded for the journal and the replicas (funcset.h). */
void script_fcall(struct conn *c, struct resp_request *req, bool read_only);
/* The FCALL rows' request_flags, as script_request_flags() for EVAL's:
 * the function's flags make the command's (fcallGetCommandFlags). */
unsigned script_fcall_request_flags(const struct cmd *cmd,
                                    const struct resp_request *req);
void script_function_load(struct conn *c, const char *code, size_t len,
                          bool replace);
void script_function_delete(struct conn *c, const char *name, size_t len);
void script_function_flush(struct conn *c);
void script_function_list(struct conn *c, bool withcode, const char *pattern,
                          size_t plen);
void script_function_dump(struct conn *c);
/* policy: 0 APPEND, 1 REPLACE, 2 FLUSH (function.h's enum fn_restore). */
void script_function_restore(struct conn *c, const char *payload, size_t len,
                             int policy);
void script_function_stats(struct conn *c);
void script_function_kill(struct conn *c);

/* INFO: the libraries, their functions, their bookkeeping. */
size_t script_library_count(void);
size_t script_function_count(void);
size_t script_function_memory(void);

/* ---- a script that runs too long ----------------------------------------
 * Past busy-reply-threshold the count hook starts the busy server, which
 * answers other clients while the loop's thread is inside Lua; it lives
 * in the connection layer, above this wing, which main.c hands it to. */
struct script_busy_ops {
    void (*start)(struct conn *caller);     /* on the loop's thread */
    void (*stop)(void);                     /* joins the busy thread */
};
void script_set_busy_ops(const struct script_busy_ops *ops);

/* What the busy server's thread may ask (thread-safe). SCRIPT KILL
 * (function false) and FUNCTION KILL (true): */
enum script_kill_verdict {
    SCRIPT_KILL_OK,
    SCRIPT_KILL_NOTBUSY,
    SCRIPT_KILL_UNKILLABLE,         /* it wrote: stopping would tear it */
    SCRIPT_KILL_OTHER_KIND          /* SCRIPT KILL of a function, or the
                                     * reverse: Redis's -BUSY */
};
enum script_kill_verdict script_request_kill(bool function);

/* Is what runs too long a function (FCALL) rather than an EVAL's script?
 * Its -BUSY names FUNCTION KILL. */
bool script_busy_function(void);

/* SHUTDOWN NOSAVE: the script stops (written or not) and the server
 * shuts down without saving once it has. */
void script_request_shutdown(void);

/* INFO: the Lua heap, the scripts cached and their bookkeeping. */
size_t script_lua_memory(void);
size_t script_count(void);
size_t script_cache_memory(void);

#endif
