/*
 * limit_cmd.h - what the limiter command handlers (cmd_limit.c,
 * cmd_log.c, cmd_rlcheck.c) share, in limit_cmd.c: option parsing, typed
 * lookup, state write-back and the reply. Every name here starts with
 * limit_cmd_ (LIMIT_CMD_ for the option bits), so a caller beside
 * cmd_limit.c's own static helpers can tell which file a name comes from.
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

enum limit_cmd_option {
    LIMIT_CMD_COST = 1,
    LIMIT_CMD_ALIGN = 2,
    LIMIT_CMD_PEEK = 4,
    LIMIT_CMD_MS = 8,
    LIMIT_CMD_META = 16,
    LIMIT_CMD_CALENDAR = 32     /* CALENDAR zone and WEEKSTART day */
};

struct limit_cmd_opts {
    int64_t cost;
    bool align;
    bool peek;
    bool ms;
    const char *meta;       /* NULL when not given */
    size_t meta_len;
    const char *zone;       /* CALENDAR's; NULL when not given */
    size_t zone_len;
    const char *week_start; /* WEEKSTART's; NULL when not given */
    size_t week_start_len;
};

/* Keywords from argv[from] on, those in `allowed` only; replies the error
 * and returns false on anything else. */
bool limit_cmd_parse_options(struct conn *c, struct resp_request *req,
                             size_t from, unsigned allowed,
                             struct limit_cmd_opts *o);

/* "limit window" at argv[2..3]: strict integers, both at least 1. */
bool limit_cmd_parse_limit_window(struct conn *c, struct resp_request *req,
                                  int64_t *limit, int64_t *window);

/* Reply the error for a failed algorithm status; false then. */
bool limit_cmd_check_status(struct conn *c, enum limit_status st);

/* argv[1]'s record if it has `type` (NULL if absent); WRONGTYPE sent and
 * *ok cleared for another type. */
struct store_rec *limit_cmd_lookup(struct conn *c, struct resp_request *req,
                                   uint8_t type, int64_t now, bool *ok);

/* Copy a fixed-size state into argv[1]'s record (created if needed) until
 * fresh_at, or drop the key when fresh_at <= now. */
bool limit_cmd_commit_state(struct conn *c, struct resp_request *req,
                            struct store_rec *r, uint8_t type,
                            const void *state, size_t size, int64_t fresh_at,
                            int64_t now);

/* Set when r becomes fresh, or remove it when that is already the case. */
void limit_cmd_keep_until(struct store_rec *r, int64_t fresh_at, int64_t now);

/* The five-integer reply; durations rounded up to s (or ms with MS). */
void limit_cmd_reply_decision(struct conn *c, const struct resp_request *req,
                              const struct limit_decision *d, bool ms);

#endif
