/*
 * cmd.h - the command table: lookup, arity check, dispatch, statistics.
 *
 * Every command is one row: name, Redis arity rule (N = exactly N
 * arguments including the name, -N = at least N), COMMAND metadata, docs
 * and handler. Container commands (CLIENT, COMMAND, CONFIG) have a
 * subcommand table of the same shape, named "client|setname" like Redis 7.
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
    uint64_t usec;
    uint64_t failed_calls;
    uint64_t rejected_calls;
    uint64_t allowed;        /* limiter commands: requests let through */
    uint64_t denied;         /* limiter commands: requests refused */
    uint64_t hist[CMD_HIST_BUCKETS]; /* calls per duration bucket */
};

struct cmd {
    const char *name;        /* lower case, "parent|sub" for subcommands */
    int arity;
    const char *flags;       /* COMMAND flags, space separated */
    int first_key;
    int last_key;            /* -1 = last argument */
    int key_step;
    const char *key_flags;   /* key spec flags as Redis spells them, "RW access update" */
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
    struct cmd_stats stats;
};

/* Build the lookup index. Returns 0 or -1. */
int cmd_setup(void);

/* Start timing a batch of requests from one read (see cmd.c). */
void cmd_batch_begin(void);

/* Run one request: lookup, arity, handler, statistics. */
void cmd_execute(struct conn *c, struct resp_request *req);

/* For container commands: dispatch req->argv[1] in the subcommand table
 * of `parent`, with the arity check and Redis's unknown-subcommand error. */
void cmd_dispatch_subcommand(struct conn *c, struct resp_request *req,
                             struct cmd *parent);

/* Redis's range key spec over a command line of argc words (argv[0] the
 * name): the index of the last key, or -1 when the command has no keys or
 * the line is too short to hold them. Keys are argv[first_key], then every
 * key_step words up to that index. */
int cmd_last_key(const struct cmd *cmd, size_t argc);

/* Case-insensitive lookup of a top-level command. */
struct cmd *cmd_lookup(const char *name, size_t len);

/* Iterate the top-level table (COMMAND, INFO commandstats). */
struct cmd *cmd_table(size_t *count);

/* Count an error reply by its code (first word), for INFO errorstats. */
void cmd_count_error(const char *msg);

/* Error statistics: the i-th code and count; NULL past the end. */
const char *cmd_error_stat(size_t i, uint64_t *count);

void cmd_reset_stats(void);

/* A HELP reply: the NULL-terminated lines as an array of simple strings. */
void cmd_reply_help(struct conn *c, const char *const *lines);

/* A limiter command decided: count it for INFO's # Limits section. */
void cmd_count_decision(struct conn *c, bool limited);

#endif
