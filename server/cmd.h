/*
 * cmd.h - the dispatcher: the shape of the command table (struct cmd),
 * lookup, arity check, dispatch, error replies, statistics.
 *
 * Every command is one row of struct cmd (commands.c writes them with
 * designated initializers): name, Redis arity rule (N = exactly N
 * arguments including the name, -N = at least N), flags, keys and their
 * key specs (data, as Redis's commands.def has them), docs and handler.
 * Container commands (CLIENT, COMMAND, CONFIG) have a subcommand table of
 * the same shape, named "client|setname" like Redis 7.
 */
#ifndef CELLGATE_CMD_H
#define CELLGATE_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/resp.h"

struct conn;

typedef void (*cmd_proc)(struct conn *c, struct resp_request *req);

/* Upper bounds (microseconds) of the command duration histogram buckets;
 * a last, implicit bucket takes the rest. */
#define CMD_HIST_BUCKETS 12
extern const uint64_t cmd_hist_bounds_us[CMD_HIST_BUCKETS];

struct cmd_stats {
    uint64_t calls;
    uint64_t nsec;           /* summed in ns, shown in µs (INFO) */
    uint64_t failed_calls;
    uint64_t rejected_calls;
    uint64_t allowed;        /* limiter commands: requests let through */
    uint64_t denied;         /* limiter commands: requests refused */
    uint64_t hist[CMD_HIST_BUCKETS]; /* calls per duration bucket */
};

/* Command flags. The shown ones are bits 0 .. CMD_FLAG_COUNT - 1, in the
 * order COMMAND shows their words (Redis 7.0's); then cellgate's hidden
 * ones. No bit is stored anywhere: the layout may change. */
enum cmd_flag {
    CMD_WRITE = 1 << 0,
    CMD_READONLY = 1 << 1,
    CMD_DENYOOM = 1 << 2,
    CMD_MODULE = 1 << 3,
    CMD_ADMIN = 1 << 4,
    CMD_PUBSUB = 1 << 5,
    CMD_NOSCRIPT = 1 << 6,
    CMD_BLOCKING = 1 << 7,          /* may wait (BLPOP...): blocked.h */
    CMD_LOADING = 1 << 8,
    CMD_STALE = 1 << 9,
    CMD_SKIP_MONITOR = 1 << 10,     /* not fed to MONITOR after it ran */
    CMD_SKIP_SLOWLOG = 1 << 11,     /* AUTH, HELLO: passwords */
    CMD_ASKING = 1 << 12,           /* runs on a cluster's importing
                                     * slot after ASKING (RESTORE-ASKING) */
    CMD_FAST = 1 << 13,
    CMD_NO_AUTH = 1 << 14,          /* runs before AUTH */
    CMD_NO_MANDATORY_KEYS = 1 << 15, /* may have no keys (EVAL ... 0) */
    CMD_NO_ASYNC_LOADING = 1 << 16,
    CMD_NO_MULTI = 1 << 17,
    CMD_MOVABLE_KEYS = 1 << 18,     /* set by cmd_setup(): keynum key spec */
    CMD_ALLOW_BUSY = 1 << 19,
    /* Hidden, as Redis hides it: may replicate without being a write
     * (EVAL, EVALSHA): CLIENT PAUSE WRITE holds it, a MONITOR may not. */
    CMD_MAY_REPLICATE = 1 << 20,
    /* cellgate's own, never shown: */
    CMD_NOT_QUEUED = 1 << 21,       /* runs at once inside MULTI (EXEC...) */
    CMD_EXEC = 1 << 22,             /* EXEC: a refusal aborts the MULTI */
    CMD_PEEKS = 1 << 23,            /* a write that PEEK makes a read */
    CMD_SCRIPT_SHA = 1 << 24,       /* EVALSHA, EVALSHA_RO: the script
                                     * is named by its SHA1 (for their
                                     * request_flags, script.h) */
    CMD_READS_CLIENTS = 1 << 25     /* reads other clients' buffers (CLIENT
                                     * LIST): runs with the I/O threads
                                     * paused (cmd_set_clients_guard) */
};
#define CMD_FLAG_COUNT 20           /* the shown ones: bits 0..19 */
#define CMD_SHOWN_FLAGS ((1u << CMD_FLAG_COUNT) - 1)

/* The word of flag bit i (0 <= i < CMD_FLAG_COUNT). */
extern const char *const cmd_flag_words[CMD_FLAG_COUNT];

/* Key spec flags, as Redis spells them (RW, access, update...): bit i is
 * the word cmd_key_flag_words[i], the order COMMAND shows them in
 * (Redis 7.0's). Like the command flags, no bit is stored anywhere. */
enum cmd_key_flag {
    CMD_KEY_RO = 1 << 0,
    CMD_KEY_RW = 1 << 1,
    CMD_KEY_OW = 1 << 2,
    CMD_KEY_RM = 1 << 3,
    CMD_KEY_ACCESS = 1 << 4,
    CMD_KEY_UPDATE = 1 << 5,
    CMD_KEY_INSERT = 1 << 6,
    CMD_KEY_DELETE = 1 << 7,
    CMD_KEY_NOT_KEY = 1 << 8,
    CMD_KEY_INCOMPLETE = 1 << 9,
    CMD_KEY_VARIABLE_FLAGS = 1 << 10
};
#define CMD_KEY_FLAG_COUNT 11

extern const char *const cmd_key_flag_words[CMD_KEY_FLAG_COUNT];

/* One key spec as COMMAND INFO shows it: its flags and Redis's notes on
 * it. Where its keys are is the row's (struct cmd). */
struct cmd_key_spec {
    unsigned flags;          /* enum cmd_key_flag bits; 0: no spec */
    const char *notes;       /* NULL: none */
};

/* Most key specs a row has (RENAME's two). */
#define CMD_KEY_SPECS_MAX 2

/* Redis's keynum key spec (EVAL's: index 2, keynumidx 0, firstkey 1,
 * keystep 1): the search begins at argument `index`; argument index +
 * keynumidx counts the keys, which start at index + firstkey, every
 * keystep arguments. */
struct cmd_keynum {
    int index;
    int keynumidx;
    int firstkey;
    int keystep;
};

/* Redis's keyword key spec, as COMMAND INFO shows it (MIGRATE's KEYS
 * ...): the keys run from the argument after `word` to the end of the
 * line, the word searched for from argument argc + startfrom (backwards
 * when negative). Redis marks MIGRATE's incomplete and finds its keys
 * otherwise (cmd_request_keys()). */
struct cmd_keyword {
    const char *word;
    int startfrom;
};

/* A row of the table; the fields a row leaves out are 0 or NULL. */
struct textbuf;

struct cmd {
    const char *name;        /* lower case, "parent|sub" for subcommands */
    int arity;
    unsigned flags;          /* enum cmd_flag bits */
    /* The keys, Redis's legacy range: argv[first_key], then every
     * key_step arguments up to last_key (-1 = the last argument); 0 0 0
     * for none, and for a keynum row, as Redis shows them (but a keynum
     * row's own key before its numkeys: ZUNIONSTORE's destination, 1 1 1). */
    int first_key;
    int last_key;
    int key_step;
    /* first_key when it is the command's one fixed key (last_key the
     * same, no keyword, not movable: GET, CL.THROTTLE...), else 0; set by
     * cmd_setup(), for the routing's common case (cmd.c served_here()). */
    int one_key;
    /* The keys counted by an argument (EVAL's numkeys), or NULL. */
    const struct cmd_keynum *keynum;
    /* The keys after a keyword, or NULL: such a row has two key specs,
     * its own key's (first_key, shown as its legacy range) and then the
     * keyword one. */
    const struct cmd_keyword *keyword;
    /* The key specs, one for each row with keys: it covers all of them;
     * with two, spec i is the one key at first_key + i (RENAME key
     * newkey). A keynum row has one, the keynum spec, or two: its own
     * key's, then the keynum one (ZUNIONSTORE destination numkeys key...).
     * cmd_setup() refuses others. */
    struct cmd_key_spec key_specs[CMD_KEY_SPECS_MAX];
    const char *acl;         /* ACL categories without '@', space separated */
    const char *group;
    const char *since;
    const char *summary;
    /* Arguments for COMMAND DOCS: "name:type" words (see reply_doc_arg in
     * cmd_command.c for tokens, oneof and block), '?' prefix =
     * optional, '*' prefix = multiple, type "pure-token" for keywords. */
    const char *args;
    cmd_proc proc;
    struct cmd *subcommands; /* terminated by a row with name NULL */
    const char *tips;        /* Redis's command tips, space separated */
    struct cmd_stats stats;
    /* The flags one request runs with when they are not the row's, as
     * Redis's getCommandFlags() asks EVAL's script (its #!lua line); NULL
     * for the row's own. */
    unsigned (*request_flags)(const struct cmd *cmd,
                              const struct resp_request *req);
    /* A key the command computes from its arguments instead of naming it
     * (RL.CHECK's counter), or NULL: its bytes appended to key, false
     * when the arguments give none. COMMAND GETKEYS answers it, so
     * cluster clients (redis-py's RedisCluster asks GETKEYS for a
     * movablekeys command) route by it; the row has no key specs and is
     * flagged movablekeys; its handler routes itself. */
    bool (*computed_key)(const struct resp_request *req, struct textbuf *key);
    /* Keys found by reading the arguments, at positions no key spec can
     * say (RL.ALL's parts), or NULL: their argv indices into idx (at most
     * max), how many, 0 when the line holds none. COMMAND GETKEYS answers
     * them; the row has no key specs and is flagged movablekeys; its
     * handler routes itself. */
    size_t (*key_args)(const struct resp_request *req, int *idx, size_t max);
};

/* Most keys a key_args row names (RL.ALL's parts). */
#define CMD_KEY_ARGS_MAX 16

/* A key_args row's keys as a line of their own, keys.argv[0 ..
 * keys.argc - 1], for the routing of the dispatcher and of scripts. */
struct cmd_key_args {
    struct resp_request keys;
    char *argv[CMD_KEY_ARGS_MAX];
    size_t argvlen[CMD_KEY_ARGS_MAX];
};

/* Fill out from req; false when the line names none (the handler refuses
 * it). */
bool cmd_key_args_line(const struct cmd *cmd, const struct resp_request *req,
                       struct cmd_key_args *out);

/* Take the command table (commands.c) and build its lookup index; flag
 * the rows with a keynum key spec CMD_MOVABLE_KEYS, as Redis derives it.
 * Returns 0, or -1 for a bad name or a row whose keys and key specs do
 * not agree (see struct cmd). */
int cmd_setup(struct cmd *table, size_t count);

/* What the dispatcher calls around a CMD_READS_CLIENTS command (main.c
 * gives the connection layer's pause and resume of the I/O threads). */
void cmd_set_clients_guard(void (*enter)(void), void (*leave)(void));

/* Start timing a batch of requests from one read (see cmd.c). */
void cmd_batch_begin(void);

/* Run one request: lookup, arity, handler, statistics; inside MULTI,
 * queue it instead. */
void cmd_execute(struct conn *c, struct resp_request *req);

/* The row whose flags count for req: a container's subcommand (CONFIG
 * GET, SCRIPT KILL), or cmd itself when argv[1] names none. Reads the
 * table only, so any thread may call it. */
struct cmd *cmd_resolve(struct cmd *cmd, const struct resp_request *req);

/* Run a command a script called (redis.call) on the script's client c,
 * cmd found and checked by the caller: timed, counted, slow-logged and
 * fed to MONITOR as any command, without the checks of a client's
 * request (the script engine makes Redis's own for scripts). */
void cmd_call(struct conn *c, struct cmd *cmd, struct resp_request *req);

/* A command a script called was refused before it ran (msg: "CODE
 * text"): count it as Redis does, in INFO errorstats and the command's
 * rejected calls (cmd may be NULL: an unknown command). */
void cmd_count_refusal(struct cmd *cmd, const char *msg);

/* EXEC's work once the transaction may run: check the queued keys' slot
 * (cluster-mode yes), then run every queued command, their replies in one
 * array, and end the transaction. */
void cmd_run_queued(struct conn *c);

/* Does the transaction c would EXEC hold a write command? (A failing
 * journal refuses such an EXEC.) */
bool cmd_queue_writes(const struct conn *c);

/* How a request is answered while a script runs past busy-reply-threshold
 * (Redis's processCommand() with a busy script): -BUSY unless its command
 * may run then, SCRIPT KILL and SHUTDOWN NOSAVE at once; the rest of the
 * allow-busy commands (AUTH, HELLO, ...) and what Redis refuses before
 * (unknown, wrong arity) on the main thread. Reads the table only, so
 * any thread may ask. */
enum cmd_busy_answer {
    CMD_BUSY_MAIN_THREAD,   /* only the main thread can answer it */
    CMD_BUSY_REFUSED,       /* -BUSY (ERR_BUSY) */
    CMD_BUSY_SCRIPT_KILL,
    CMD_BUSY_SHUTDOWN_NOSAVE,
    CMD_BUSY_FUNCTION_KILL,
    CMD_BUSY_FUNCTION_STATS,
};
enum cmd_busy_answer cmd_while_busy(const struct resp_request *req,
                                    struct cmd **cmd);

/* Must req wait for CLIENT PAUSE to end? (srv.pause_all: PAUSE ALL.) */
bool cmd_pause_holds(const struct conn *c, const struct resp_request *req);

/* Does it hold a command with any of these flags? (CLIENT PAUSE WRITE
 * holds an EXEC of a write or a may-replicate command, as Redis.) */
bool cmd_queue_has(const struct conn *c, unsigned flags);

/* For container commands: dispatch req->argv[1] in the subcommand table
 * of `parent`, with the arity check and Redis's unknown-subcommand error. */
void cmd_dispatch_subcommand(struct conn *c, struct resp_request *req,
                             struct cmd *parent);

/* Redis's range key spec over a command line of argc words (argv[0] the
 * name): the index of the last key, or -1 when the command has no keys or
 * the line is too short to hold them. Keys are argv[first_key], then every
 * key_step words up to that index. */
int cmd_last_key(const struct cmd *cmd, size_t argc);

/* cmd's keynum spec in *out, or false when it has none. */
bool cmd_keynum_spec(const struct cmd *cmd, struct cmd_keynum *out);

/* How many key specs cmd has (0 without keys): its leading ones with
 * flags. */
size_t cmd_key_spec_count(const struct cmd *cmd);

/* The keys of one command line: argv[first], argv[first + step], ...
 * up to argv[last]. */
struct cmd_keys {
    int first;
    int last;
    int step;
    /* false: found as Redis's getkeys function finds them when the key
     * spec cannot (EVAL's numkeys " 1" or "01", read by atoi()), which
     * gives them no flags (COMMAND GETKEYSANDFLAGS shows none) */
    bool flagged;
    /* A keynum row's own key before its numkeys (ZUNIONSTORE's
     * destination): its argv index, 0 for none. Redis lists it before
     * the range when flagged, after it when not. */
    int store;
};

/* The keys of the command line req (argv[0] the command's name) for cmd,
 * by its key spec, range or keynum, as Redis finds them for cluster
 * routing and COMMAND GETKEYS: false when there are none (no key spec, a
 * line too short for its range, EVAL's numkeys 0, negative, not a number
 * or beyond the line's arguments). The dispatcher routes by them
 * (cluster-mode yes); the handler still checks the numkeys it reads. */
bool cmd_request_keys(const struct cmd *cmd, const struct resp_request *req,
                      struct cmd_keys *out);

/* Does argc (the name included) fit cmd's arity (N exactly, -N at
 * least)? */
bool cmd_arity_ok(const struct cmd *cmd, size_t argc);

/* How requests are framed ahead for this dispatcher (resp.h): with the
 * hash keyspace_lookup() takes for argv[1], and stopping after AUTH,
 * HELLO and RESET, which change the limits the requests after them are
 * framed with. Any thread may use it. */
extern const struct resp_frame_ops cmd_frame_ops;

/* Case-insensitive lookup of a top-level command. */
struct cmd *cmd_lookup(const char *name, size_t len);

/* Iterate the top-level table (COMMAND, INFO commandstats). */
struct cmd *cmd_table(size_t *count);

/* Reply an error to c and count it (INFO errorstats, the command's failed
 * calls). msg starts with the error code, e.g. "ERR syntax error"; the
 * texts several commands share are in errors.h. */
void cmd_error(struct conn *c, const char *msg);
void cmd_errorf(struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* cmd_error() for an error of len bytes that may hold any byte (CR and LF
 * become spaces, as reply_error() does). */
void cmd_error_bytes(struct conn *c, const char *msg, size_t len);

/* The error reply a script returned ({err=...}, luaReplyToRedisReply):
 * -msg with CR and LF turned into spaces (msg holds no leading '-'), the
 * command counted as failed, and, when counted, the error counted as
 * Redis counts one: under its first word when that ends within msg's
 * first 31 bytes, else under ERR. counted is false for an error a
 * redis.call or redis.pcall returned (its command already counted it:
 * Redis's ignore_error_stats_update). */
void cmd_error_script(struct conn *c, const char *msg, size_t len,
                      bool counted);

/* Error statistics: the i-th code and count; NULL past the end. */
const char *cmd_error_stat(size_t i, uint64_t *count);

void cmd_reset_stats(void);

/* Is argument i the word (ASCII, any case)? The one keyword test of the
 * handlers. */
bool cmd_arg_is(const struct resp_request *req, size_t i, const char *word);

/* Which of the n words argument i is (cmd_arg_is() of each): its index,
 * or -1 for none. */
int cmd_arg_which(const struct resp_request *req, size_t i,
                  const char *const *words, size_t n);

/* Argument i as a C int, as Redis's getIntFromObjectOrReply() reads one:
 * false after replying its error (msg, when not NULL, for both a
 * non-integer and one beyond int). */
bool cmd_arg_int(struct conn *c, const struct resp_request *req, size_t i,
                 const char *msg, int *out);

/* Argument i as a 64-bit integer that may not be negative: false after
 * replying nan_err (not an integer) or neg_err (below 0), in that order. */
bool cmd_arg_nonneg(struct conn *c, const struct resp_request *req, size_t i,
                    const char *nan_err, const char *neg_err, int64_t *out);

/* A timeout argument (CLIENT PAUSE, WAIT): Redis's two errors for one
 * that is not an integer or is negative. */
bool cmd_arg_timeout(struct conn *c, const struct resp_request *req,
                     size_t i, int64_t *out);

/* A cluster routing verdict (cluster.h) answered: true for HERE; else the
 * client got -MOVED, -CROSSSLOT or -CLUSTERDOWN, as for its argv keys. */
enum cluster_verdict;
struct cluster_redirect;
bool cmd_reply_route(struct conn *c, enum cluster_verdict v,
                     const struct cluster_redirect *to);

/* Run a reload that fills err on failure: "-ERR <err>" then, else +OK. */
void cmd_reply_reload(struct conn *c, int (*reload)(char *err, size_t len));

/* Redis's addReplySubcommandSyntaxError(): a subcommand called with
 * arguments it does not take ("... for 'PAUSE'. Try CLIENT HELP."). */
void cmd_error_subcommand_syntax(struct conn *c,
                                 const struct resp_request *req);

/* A HELP reply: the NULL-terminated lines as an array of simple strings. */
void cmd_reply_help(struct conn *c, const char *const *lines);

/* A limiter command decided: count it for INFO's # Limits section, and a
 * denial of req's argv[1] (the key; RL.CHECK's domain) for RL.TOPDENIED. */
void cmd_count_decision(struct conn *c, const struct resp_request *req,
                        bool limited);

#endif
