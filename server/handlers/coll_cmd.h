/*
 * coll_cmd.h - what the handlers of Redis's key types share (cmd_keys.c,
 * cmd_list.c, cmd_hash.c, cmd_zset.c, cmd_set.c, cmd_zalg.c), in
 * coll_cmd.c: the typed lookup with Redis's -WRONGTYPE, a collection made
 * ready for an insert under maxmemory, the arguments of the SCAN family
 * and HSCAN's and SSCAN's page, a range of ranks, the pops of several
 * keys and the blocking pops, a STORE form's end, and ZRANDMEMBER's and
 * HRANDFIELD's arguments and draws.
 */
#ifndef CELLGATE_COLL_CMD_H
#define CELLGATE_COLL_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/pack.h"
#include "protocol/resp.h"
#include "server/blocked.h"
#include "server/store.h"

struct conn;

/* How a command looks its key up: as a read (counted in INFO's keyspace
 * hits and misses) or as a write (not), as Redis's lookupKeyRead() and
 * lookupKeyWrite(). */
enum lookup_kind { LOOKUP_READ, LOOKUP_WRITE };

/* The live record of key into *r (NULL when absent); false (-WRONGTYPE
 * sent) when it holds another type than `type`. Through c's key hint:
 * key must be the request's first key. */
bool coll_lookup(struct conn *c, const char *key, size_t len, uint8_t type,
                 enum lookup_kind kind, int64_t now, struct store_rec **r);

/* Collection r of `type` at key (NULL: absent, then a new empty one is
 * added) with room for about `need` more bytes under maxmemory. NULL
 * (-OOM sent, nothing changed) when refused. */
struct store_rec *coll_reserve(struct conn *c, const char *key, size_t len,
                               uint8_t type, struct store_rec *r,
                               size_t need);

/* A SCAN cursor as Redis reads it (strtoul: an optional sign, digits, an
 * empty string for 0); false (-ERR invalid cursor sent) otherwise. */
bool coll_scan_cursor(struct conn *c, const char *s, size_t len,
                      uint64_t *cursor);

/* [MATCH pattern] [COUNT n] (and [TYPE type] for SCAN itself) from
 * argv[from] on, as Redis's scanGenericCommand() reads them; false with
 * the error sent. match is NULL for none or "*". */
struct scan_opts {
    const char *match;
    size_t match_len;
    const char *type;       /* SCAN only; NULL when not given */
    size_t type_len;
    int64_t count;          /* 10 unless given */
};
bool coll_scan_opts(struct conn *c, const struct resp_request *req,
                    size_t from, bool allow_type, struct scan_opts *o);

/* HSCAN's, ZSCAN's and SSCAN's start: the cursor (argv[2]), key's record
 * of `type` into *r and the options (argv[3] on). False when answered
 * already: an error, or an absent key's empty page (its options are not
 * read, as Redis does not). */
bool coll_scan_start(struct conn *c, const struct resp_request *req,
                     uint8_t type, uint64_t *cursor, struct store_rec **r,
                     struct scan_opts *o);

/* A SCAN page's head: the next cursor, then an array of n elements. */
void coll_scan_reply_head(struct conn *c, uint64_t cursor, size_t n);

/* Does an element's name pass MATCH (NULL: everything does)? */
bool coll_scan_match(const struct scan_opts *o, const void *s, size_t len);

/* HSCAN and SSCAN, whose collections are lib/packdict.h's: the page of
 * key argv[1] from cursor argv[2], options after (coll_scan_start()),
 * step() calling the type's scan with coll_scan_collect() and its last
 * argument while more is wanted. A compact collection answers whole with
 * cursor 0; a large one visits buckets until COUNT elements were visited
 * (MATCH filters after, as in Redis), at most `bound` times COUNT steps
 * more. Each element gives `per` strings to the reply (a member; a field
 * and its value). */
typedef uint64_t (*coll_scan_step)(struct store_rec *r, uint64_t cursor,
                                   void *collect_arg);
void coll_scan_command(struct conn *c, struct resp_request *req,
                       uint8_t type, unsigned per, uint64_t bound,
                       coll_scan_step step);
void coll_scan_collect(const struct pack_item *k, const struct pack_item *v,
                       void *arg);

/* A range of ranks as LRANGE, LTRIM, ZRANGE and ZREMRANGEBYRANK read
 * it (a negative index counts from the end): [*s, *e] within len
 * elements, false when it holds none. */
bool coll_rank_range(int64_t start, int64_t end, uint64_t len, uint64_t *s,
                     uint64_t *e);

/* value + incr as INCRBYFLOAT and HINCRBYFLOAT store it and reply with it
 * (ld2string's human form) in text, INCREX_TEXT_MAX bytes, its length in
 * *n; false after the error when the sum is NaN or infinite. */
bool coll_add_float(struct conn *c, long double value, long double incr,
                    char *text, size_t *n);

/* The end of a write with an NX variant (RENAME/RENAMENX, MSET/MSETNX):
 * -OOM when it failed, else :1 for the NX form and +OK for the other. */
void coll_reply_nx_write(struct conn *c, bool ok, bool nx);

/* ---- the pops of several keys, blocking or not (cmd_list.c, cmd_zset.c) */

/* A blocking pop's timeout in seconds (argv[i]) as Redis reads it: a
 * long double, in ms rounded up, 0 for ever; false after Redis's error
 * for one that is not a number or is negative. */
bool coll_block_timeout(struct conn *c, const struct resp_request *req,
                        size_t i, int64_t *ms);

/* May c wait for a key? Not inside EXEC nor from a script (Redis's
 * CLIENT_DENY_BLOCKING), nor as a part of RL.ALL: they are answered as a
 * timeout at once. */
bool coll_may_block(const struct conn *c);

/* As coll_lookup() for a write, of a key that need not be argv[1] (no
 * key hint). */
bool coll_lookup_key(struct conn *c, const char *key, size_t len,
                     uint8_t type, struct store_rec **r);

/* LMPOP's and ZMPOP's arguments from numkeys (argv[at]): the keys, the
 * side (first: the word w0, LEFT or MIN, rather than w1) and COUNT (1
 * unless given); false after Redis's error. */
struct coll_mpop {
    size_t first_key;
    size_t nkeys;
    bool first;
    int64_t count;
};
bool coll_mpop_args(struct conn *c, const struct resp_request *req,
                    size_t at, const char *w0, const char *w1,
                    struct coll_mpop *o);
/* LMPOP, ZMPOP and the blocking pops of lists and sorted sets differ
 * only in what a struct coll_pops says: the type, the side's words, the
 * blocking commands' names and the type's pop and serve functions. */
struct coll_pops {
    uint8_t type;               /* KEY_LIST, KEY_ZSET */
    enum blocked_kind kind;
    const char *w0, *w1;        /* the side: LEFT RIGHT, MIN MAX */
    const char *bpop_first;     /* the one-key blocking pop from w0's side
                                 * (BLPOP, BZPOPMIN) */
    const char *bmpop;          /* BLMPOP, BZMPOP */
    /* Pop from r (key's record), from w0's side (first) or w1's: BLPOP's
     * [key, element] (count -1), or LMPOP's [key, [up to count]]. */
    void (*pop)(struct conn *c, struct store_rec *r, const char *key,
                size_t len, bool first, int64_t count);
    /* A waiting client's turn: coll_pops_serve() with these pops. */
    blocked_serve_fn serve;
};

/* LMPOP, ZMPOP: numkeys key... side [COUNT n]; a nil array when every
 * key is empty. */
void coll_mpop_command(struct conn *c, struct resp_request *req,
                       const struct coll_pops *p);

/* BLMPOP, BZMPOP: timeout numkeys key... side [COUNT n]; waiting when
 * every key is empty. */
void coll_bmpop_command(struct conn *c, struct resp_request *req,
                        const struct coll_pops *p);

/* BLPOP, BRPOP, BZPOPMIN, BZPOPMAX: key... timeout, from one side. */
void coll_bpop_command(struct conn *c, struct resp_request *req,
                       const struct coll_pops *p, bool first);

/* The turn of a client waiting in one of the blocking pops above on key,
 * ready now (its request says which pop). */
enum blocked_served coll_pops_serve(struct conn *c,
                                    const struct resp_request *req,
                                    const char *key, size_t len,
                                    const struct coll_pops *p);

/* A ready key for a waiting client: BLOCKED_ABSENT, BLOCKED_NOT_SERVED
 * (another type), or BLOCKED_SERVED with its record of `type` in *r. */
enum blocked_served coll_ready(const char *key, size_t len, uint8_t type,
                               struct store_rec **r);

/* What serving key came to: BLOCKED_SERVED_GONE when it is gone. */
enum blocked_served coll_served(const char *key, size_t len);

/* Every key empty: c waits on them (nkeys from argv[first]), or, where it
 * may not wait, is answered as a timeout at once (a nil array, or a nil
 * when not array). */
void coll_wait_or_nil(struct conn *c, struct resp_request *req,
                      size_t first, size_t nkeys, int64_t ms,
                      enum blocked_kind kind, blocked_serve_fn serve,
                      bool array);

/* The end of a STORE form (ZUNIONSTORE, ZRANGESTORE...): key (the
 * request's first key) becomes the collection `state` of `type` holding n
 * elements, whatever it held before, and :n is the reply; with n == 0 the
 * key is deleted instead (:0), as Redis's setKey() and dbDelete(). false
 * when state was not taken (n == 0, or -OOM sent): the caller frees it. */
bool coll_store(struct conn *c, const char *key, size_t len, uint8_t type,
                const void *state, uint64_t n);

/* count distinct random indexes below n (count < n) into out, in random
 * order; false when out of memory. */
bool coll_random_distinct(uint64_t n, uint64_t count, uint64_t *out);

/* ZRANDMEMBER and HRANDFIELD: key [count [word]] (word: WITHSCORES,
 * WITHVALUES) read in Redis's order of checks, the key of `type` looked
 * up as a read; an absent key answers nil (no count) or an empty array,
 * a present one one() (no count) or many() (a count, 0 answering an
 * empty array; with: the word given). */
typedef void (*coll_rand_one_fn)(struct conn *c, struct store_rec *r);
typedef void (*coll_rand_many_fn)(struct conn *c, struct store_rec *r,
                                  int64_t count, bool with);
void coll_rand_command(struct conn *c, struct resp_request *req,
                       uint8_t type, const char *word, coll_rand_one_fn one,
                       coll_rand_many_fn many);

/* Has c's reply passed what a client may hold (client-output-hard-limit)?
 * A draw of a huge negative count stops there, as Redis's stops when the
 * client is to be closed; the client is then closed. */
bool coll_reply_full(const struct conn *c);

#endif
