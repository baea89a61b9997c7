/*
 * limit_cmd.h - what the limiter command handlers (cmd_limit.c,
 * cmd_log.c, cmd_increx.c, cmd_rlcheck.c) share, in limit_cmd.c:
 * option parsing, typed lookup, state write-back and the reply.
 */
#ifndef CELLGATE_LIMIT_CMD_H
#define CELLGATE_LIMIT_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algorithms/limit.h"
#include "protocol/resp.h"
#include "server/store.h"

struct conn;

enum rl_option {
    RL_COST = 1,
    RL_ALIGN = 2,
    RL_PEEK = 4,
    RL_MS = 8,
    RL_META = 16
};

struct rl_opts {
    int64_t cost;
    bool align;
    bool peek;
    bool ms;
    const char *meta;       /* NULL when not given */
    size_t meta_len;
};

/* Keywords from argv[from] on, those in `allowed` only; replies the error
 * and returns false on anything else. */
bool parse_rl_options(struct conn *c, struct resp_request *req, size_t from,
                      unsigned allowed, struct rl_opts *o);

/* "limit window" at argv[2..3]: strict integers, both at least 1. */
bool parse_limit_window(struct conn *c, struct resp_request *req,
                        int64_t *limit, int64_t *window);

/* Reply the error for a failed algorithm status; false then. */
bool check_status(struct conn *c, enum limit_status st);

/* argv[1]'s record if it has `type` (NULL if absent); WRONGTYPE sent and
 * *ok cleared for another type. */
struct store_rec *lookup_typed(struct conn *c, struct resp_request *req,
                               uint8_t type, int64_t now, bool *ok);

/* Copy a fixed-size state into argv[1]'s record (created if needed) until
 * fresh_at, or drop the key when fresh_at <= now. */
bool commit_state(struct conn *c, struct resp_request *req,
                  struct store_rec *r, uint8_t type, const void *state,
                  size_t size, int64_t fresh_at, int64_t now);

/* Set when r becomes fresh, or remove it when that is already the case. */
void limit_keep_until(struct store_rec *r, int64_t fresh_at, int64_t now);

/* The five-integer reply; durations rounded up to s (or ms with MS). */
void reply_decision(struct conn *c, const struct limit_decision *d, bool ms);

#endif
