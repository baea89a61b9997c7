/*
 * api.h - the `redis` table a script calls (redis.call, redis.pcall, ...)
 * and the script client its commands run on.
 *
 * A script's command runs as a client's would: through the dispatcher
 * (cmd.c), on a connection without a socket (the script client), whose
 * reply bytes are then read back into Lua values (convert.c), as Redis
 * runs them on its Lua client. The checks Redis makes only for scripts
 * (commands flagged noscript, writes from a read-only script, keys of
 * another node) are made here first.
 */
#ifndef CELLGATE_SCRIPT_API_H
#define CELLGATE_SCRIPT_API_H

#include <stdbool.h>
#include <stdint.h>

#include <lua.h>

struct conn;

/* What a script declared and did: the flags of its #!lua line, the
 * verdicts of EVAL_RO, and what its commands have done so far. */
enum script_flag {
    SCRIPT_NO_WRITES = 1 << 0,          /* #!lua flags=no-writes */
    SCRIPT_ALLOW_OOM = 1 << 1,
    SCRIPT_ALLOW_STALE = 1 << 2,
    SCRIPT_NO_CLUSTER = 1 << 3,
    SCRIPT_ALLOW_CROSS_SLOT = 1 << 4,
    SCRIPT_COMPAT = 1 << 5              /* no #! line: Redis 6's rules */
};

/* The flags' words, in Redis's order (scripts_flags_def): a #!lua line's,
 * register_function's (any case there) and FUNCTION LIST's. */
struct script_flag_word {
    const char *word;
    unsigned flag;
};
#define SCRIPT_FLAG_WORDS 5
extern const struct script_flag_word script_flag_words[SCRIPT_FLAG_WORDS];

/* redis.set_repl()'s flags, Redis's values (REPL_AOF, REPL_REPLICA). */
enum script_repl {
    SCRIPT_REPL_NONE = 0,
    SCRIPT_REPL_AOF = 1,
    SCRIPT_REPL_REPLICA = 2,
    SCRIPT_REPL_ALL = 3
};

struct script_run {
    struct conn *caller;
    unsigned flags;             /* enum script_flag of the script */
    bool read_only;             /* EVAL_RO, or no-writes */
    _Atomic bool wrote;         /* a write command ran: SCRIPT KILL may
                                 * not (the busy server's thread reads it) */
    bool oom_at_start;          /* used memory was over maxmemory */
    int slot;                   /* cluster: the slot its keys use; -1 */
    unsigned repl;              /* enum script_repl */
    const char *function;       /* FCALL's function; NULL: EVAL's script */
};

/* Register the `redis` table (and Valkey's `server` alias) in L's
 * globals. 0, or -1 when memory ran out. */
int api_register(lua_State *L);

/* The run commands are checked against until api_end(); NULL outside a
 * script (redis.call then raises Redis's error). */
void api_begin(struct script_run *run);
void api_end(void);

/* The protocol the running script chose with redis.setresp() (2 by
 * default): its own value's reply follows Redis's rules for it. */
int api_script_proto(void);

/* The script client: its memory is given back (SCRIPT FLUSH, exit). */
void api_teardown(void);

#endif
