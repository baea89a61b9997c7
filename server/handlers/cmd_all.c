/*
 * cmd_all.c - RL.ALL: several limiter calls, changed all or none
 * (docs/commands.md, "RL.ALL").
 *
 *   RL.ALL numparts argc command arg... [argc command arg...]... [PEEK]
 *
 * Each part is a limiter command as a client writes it (CL.THROTTLE,
 * GCRA, RL.FIXED, RL.SLIDING, RL.LOG, RL.TIERS, RL.ACQUIRE, whose WAIT
 * never waits here, as in MULTI), counted by its argc so
 * that no key or META byte can be mistaken for a separator.
 *
 * Design: each part runs through its own handler, unchanged, so its
 * reply is byte for byte what the command alone answers against the
 * state the earlier parts left (two parts may name the same key), and no
 * limiter's arithmetic or grammar is written twice. Before the first part
 * runs, each part's key's state as the call finds it is kept
 * (keytype_encode(): the same bytes the journal and DUMP carry). When a part is denied or fails,
 * or the call ends in PEEK, every key the parts changed is put back
 * through the write path (the same type, bytes and expiry), so a
 * replica and a journal replay reach the same keys; the call's effects
 * are one journal group, so a restart or a replica sees all of it or
 * none. The parts run at the batch's one `now` (clock.h). Their keyspace
 * events and the WATCH touches of their keys are held (notify_hold(),
 * multi_touch_hold()) and let go only when the changes are kept, so a
 * call put back is seen by nobody (but a key it evicted, which no undo
 * takes back).
 *
 * The parts' replies are caught in a buffer of their own (the client's
 * output buffer swapped aside), then written inside RL.ALL's reply:
 * [limited, denied_part, reply1, reply2, ...]. A part's error is the
 * call's, with " (part N)" after it. Statistics: the call counts once,
 * as RL.ALL (commandstats, its allowed/denied), and a denied call counts
 * the denying part's key for RL.TOPDENIED; the parts count nothing of
 * their own (c->last_cmd is cleared while they run).
 */
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "lib/mem.h"
#include "lib/num.h"
#include "protocol/obuf.h"
#include "protocol/reply.h"
#include "protocol/reply_read.h"
#include "server/clock.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/multi.h"
#include "server/notify.h"
#include "server/server.h"

#define ALL_PARTS_MAX CMD_KEY_ARGS_MAX
#define ERR_PART_ARGC "ERR argc must be at least 2 and within the arguments"

/* The limiter commands a part may name: each answers five integers (six:
 * RL.ACQUIRE's, its holder after them), the first 1 when denied, and
 * names its key first. */
static const char *const limiters[] = {
    "cl.throttle", "gcra", "rl.fixed", "rl.sliding", "rl.log", "rl.tiers",
    "rl.acquire"
};

/* A call, framed: each part a request of its own over the call's
 * arguments. */
struct all_call {
    size_t nparts;
    bool peek;
    struct resp_request parts[ALL_PARTS_MAX];
    struct cmd *cmds[ALL_PARTS_MAX];
    int key_at[ALL_PARTS_MAX];      /* the part's key, an index of argv */
};

enum frame_rc { FRAME_OK, FRAME_NUMPARTS, FRAME_ARGC, FRAME_SYNTAX };

/* numparts, then each part's argc and words, then an optional PEEK;
 * *bad is the part (0-based) a FRAME_ARGC names. Pure: the key finder
 * (COMMAND GETKEYS, cluster routing) and the handler share it. */
static enum frame_rc
frame(const struct resp_request *req, struct all_call *a, size_t *bad)
{
    int64_t n;
    if (req->argc < 2 || !num_parse_i64(req->argv[1], req->argvlen[1], &n) ||
        n < 1 || n > ALL_PARTS_MAX) {
        return FRAME_NUMPARTS;
    }
    a->nparts = (size_t)n;
    a->peek = false;
    size_t i = 2;
    for (size_t p = 0; p < a->nparts; p++) {
        int64_t k;
        *bad = p;
        if (i >= req->argc ||
            !num_parse_i64(req->argv[i], req->argvlen[i], &k) || k < 2 ||
            (uint64_t)k > req->argc - i - 1) {
            return FRAME_ARGC;
        }
        a->parts[p] = (struct resp_request){ (size_t)k, req->argv + i + 1,
                                             req->argvlen + i + 1, 0 };
        a->key_at[p] = (int)(i + 2);
        i += 1 + (size_t)k;
    }
    if (i + 1 == req->argc && cmd_arg_is(req, i, "PEEK")) {
        a->peek = true;
        i++;
    }
    return i == req->argc ? FRAME_OK : FRAME_SYNTAX;
}

/* The row's key_args: each part's key, for COMMAND GETKEYS and routing. */
size_t
rl_all_keys(const struct resp_request *req, int *idx, size_t max)
{
    struct all_call a;
    size_t bad;
    if (frame(req, &a, &bad) != FRAME_OK || a.nparts > max) {
        return 0;
    }
    for (size_t p = 0; p < a.nparts; p++) {
        idx[p] = a.key_at[p];
    }
    return a.nparts;
}

/* ---- errors ------------------------------------------------------------ */

/* msg (len bytes, without its '-') with " (part N)" after it, counted
 * under msg's code unless the part's handler counted it already. */
static void
part_error(struct conn *c, const char *msg, size_t len, size_t part,
           bool counted)
{
    char suffix[32];
    int n = snprintf(suffix, sizeof(suffix), " (part %zu)", part + 1);
    char *text = mem_malloc(len + (size_t)n);
    if (text == NULL) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    memcpy(text, msg, len);
    memcpy(text + len, suffix, (size_t)n);
    if (counted) {
        c->reply_error = true;
        reply_error(&c->out, text, len + (size_t)n);
    } else {
        cmd_error_bytes(c, text, len + (size_t)n);
    }
    mem_free(text);
}

/* A part's error of our own: fmt with the part's command name. */
static void
part_errorf(struct conn *c, size_t part, const char *fmt, const char *name,
            size_t namelen)
{
    char msg[256];
    int n = snprintf(msg, sizeof(msg), fmt, (int)namelen, name);
    if (n < 0) {
        n = 0;
    }
    part_error(c, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1,
               part, false);
}

/* The part's command, a limiter with the arity it needs; NULL after
 * replying why not. */
static struct cmd *
part_command(struct conn *c, const struct resp_request *part, size_t p)
{
    const char *name = part->argv[0];
    size_t len = part->argvlen[0] > 128 ? 128 : part->argvlen[0];
    struct cmd *cmd = cmd_lookup(part->argv[0], part->argvlen[0]);
    if (cmd != NULL && cmd->proc == rl_all_command) {
        part_errorf(c, p, "ERR %.*s cannot be a part of RL.ALL", name, len);
        return NULL;
    }
    for (size_t i = 0; cmd != NULL && i < sizeof(limiters) / sizeof(*limiters);
         i++) {
        if (strcmp(cmd->name, limiters[i]) != 0) {
            continue;
        }
        if (!cmd_arity_ok(cmd, part->argc)) {
            part_errorf(c, p,
                        "ERR wrong number of arguments for '%.*s' command",
                        cmd->name, strlen(cmd->name));
            return NULL;
        }
        return cmd;
    }
    part_errorf(c, p, "ERR '%.*s' is not a limiter command", name, len);
    return NULL;
}

/* The call framed and each part's command checked, or false after
 * replying the first error. */
static bool
parse_call(struct conn *c, const struct resp_request *req, struct all_call *a)
{
    size_t bad = 0;
    switch (frame(req, a, &bad)) {
    case FRAME_NUMPARTS:
        cmd_errorf(c, "ERR numparts must be between 1 and %d", ALL_PARTS_MAX);
        return false;
    case FRAME_ARGC:
        part_error(c, ERR_PART_ARGC, strlen(ERR_PART_ARGC), bad, false);
        return false;
    case FRAME_SYNTAX:
        cmd_error(c, ERR_SYNTAX);
        return false;
    case FRAME_OK:
        break;
    }
    for (size_t p = 0; p < a->nparts; p++) {
        a->cmds[p] = part_command(c, &a->parts[p], p);
        if (a->cmds[p] == NULL) {
            return false;
        }
    }
    return true;
}

/* ---- the keys as the call found them ------------------------------------ */

/* A key's state before the call: absent, one no limiter changes (each
 * refuses it: a collection, a string that is no CL.THROTTLE TAT, which
 * may be long and is not copied), or its type, expiry and encoded bytes
 * (bytes[off, off + n) of the undo's buffer). */
struct all_before {
    const char *key;
    size_t len;
    bool present;
    bool refused;
    uint8_t type;
    int64_t expire_at;
    size_t off;
    size_t n;
};

struct all_undo {
    size_t nkeys;
    struct all_before keys[ALL_PARTS_MAX];
    struct membuf bytes;
    struct membuf scratch;          /* a key's state now, to compare */
};

/* Keep key's state unless an earlier part kept it; false when memory ran
 * out encoding it. */
static bool
undo_keep(struct all_undo *u, const char *key, size_t len, int64_t now)
{
    for (size_t i = 0; i < u->nkeys; i++) {
        if (u->keys[i].len == len && memcmp(u->keys[i].key, key, len) == 0) {
            return true;
        }
    }
    struct key_hint h = { false, 0 };
    struct store_rec *r = keyspace_lookup_write(&h, key, len, now);
    struct all_before *b = &u->keys[u->nkeys++];
    *b = (struct all_before){ key, len, r != NULL, false, 0, 0,
                              u->bytes.len, 0 };
    if (r == NULL) {
        return true;
    }
    uint64_t tat;
    b->type = r->type;
    b->expire_at = r->expire_at;
    b->refused = keytype_is_coll(r->type) ||
                 (r->type == KEY_STR &&
                  keytype_gcra_tat_text(r, &tat) != KS_TAT_OK);
    if (b->refused) {
        return true;
    }
    if (!keytype_encode(r, now, &u->bytes)) {
        return false;
    }
    b->n = u->bytes.len - b->off;
    return true;
}

/* Does r hold exactly the state b kept? */
static bool
unchanged(struct all_undo *u, const struct all_before *b,
          const struct store_rec *r, int64_t now)
{
    if (r->type != b->type || r->expire_at != b->expire_at) {
        return false;
    }
    u->scratch.len = 0;
    return keytype_encode(r, now, &u->scratch) && u->scratch.len == b->n &&
           (b->n == 0 ||
            memcmp(u->scratch.p, u->bytes.p + b->off, b->n) == 0);
}

/* b's key made again from its kept bytes (it is absent now). */
static struct store_rec *
remake(struct key_hint *h, const struct all_before *b,
       const unsigned char *p)
{
    struct store_rec *n;
    if (b->type == KEY_INT) {
        int64_t v;
        memcpy(&v, p, sizeof(v));
        n = keyspace_set_int(h, b->key, b->len, NULL, v);
    } else if (b->type == KEY_STR) {
        n = keyspace_set_string(h, b->key, b->len, NULL, (const char *)p,
                                b->n);
    } else {
        size_t size = keytype_decoded_state_size(b->type, p, b->n,
                                                 b->expire_at);
        n = keyspace_add(h, b->key, b->len, b->type, size);
        if (n != NULL &&
            keytype_decode(n, p, b->n, KS_ENCODING) != KS_DECODED) {
            keyspace_delete(n);
            return NULL;
        }
        if (n != NULL) {
            keyspace_written(n);
        }
    }
    return n == NULL ? NULL : keyspace_set_expire(n, b->expire_at);
}

/* r, of b's type, given b's state again in place: an integer (CL.THROTTLE's
 * TAT) or a fixed-size struct (RL.FIXED, RL.SLIDING, GCRA). NULL when r's
 * state is of another kind (or memory ran out for an integer's 8 bytes):
 * then the caller makes the key again. */
static struct store_rec *
put_back_in_place(struct key_hint *h, const struct all_before *b,
                  struct store_rec *r, const unsigned char *p)
{
    if (r->type != b->type || !keytype_is_fixed_size(b->type)) {
        return NULL;
    }
    if (b->type == KEY_INT) {
        int64_t v;
        memcpy(&v, p, sizeof(v));
        r = keyspace_set_int(h, b->key, b->len, r, v);
    } else if (b->n == keytype_state_size(b->type)) {
        memcpy(store_rec_state(r), p, b->n);
        keyspace_written(r);
    } else {
        return NULL;
    }
    return r == NULL ? NULL : keyspace_set_expire(r, b->expire_at);
}

/* b's key as the call found it; false when it could not be made again. */
static bool
undo_one(struct all_undo *u, const struct all_before *b, int64_t now)
{
    struct key_hint h = { false, 0 };
    struct store_rec *r = keyspace_lookup_write(&h, b->key, b->len, now);
    if (b->refused || (r != NULL && b->present && unchanged(u, b, r, now))) {
        return true;
    }
    if (r != NULL && b->present &&
        put_back_in_place(&h, b, r, u->bytes.p + b->off) != NULL) {
        return true;
    }
    r = keyspace_lookup_write(&h, b->key, b->len, now);
    if (r != NULL) {
        keyspace_delete(r);
    }
    if (!b->present) {
        return true;
    }
    (void)keyspace_lookup_write(&h, b->key, b->len, now);
    return remake(&h, b, u->bytes.p + b->off) != NULL;
}

/* Every part's key as the call finds it, before any part runs (a key found
 * dead goes now, as any lookup's would); false when memory ran out. */
static bool
keep_keys(const struct all_call *a, struct all_undo *u, int64_t now)
{
    for (size_t p = 0; p < a->nparts; p++) {
        const struct resp_request *part = &a->parts[p];
        if (!undo_keep(u, part->argv[1], part->argvlen[1], now)) {
            return false;
        }
    }
    return true;
}

/* For the held events and touches: was this key put back as it was? */
static bool
was_undone(int db, const char *key, size_t len, void *arg)
{
    const struct all_undo *u = arg;
    for (size_t i = 0; db == srv.db && i < u->nkeys; i++) {
        if (u->keys[i].len == len && memcmp(u->keys[i].key, key, len) == 0) {
            return true;
        }
    }
    return false;
}

/* Every kept key back as the call found it. */
static bool
undo_all(struct all_undo *u, int64_t now)
{
    bool ok = true;
    for (size_t i = 0; i < u->nkeys; i++) {
        ok &= undo_one(u, &u->keys[i], now);
    }
    return ok;
}

/* ---- running the parts -------------------------------------------------- */

/* What the parts answered: their replies' bytes one after another. */
struct all_run {
    struct membuf replies;
    size_t off[ALL_PARTS_MAX + 1];
    size_t denied;                  /* first denied part, 1-based; 0: none */
    size_t failed;                  /* the part that erred, 1-based; 0 */
    bool nomem;
};

/* Move what o holds to the end of b. */
static bool
take_output(struct obuf *o, struct membuf *b)
{
    struct iovec iov[8];
    size_t bytes;
    bool ok = !o->oom;
    while (obuf_pending(o) > 0) {
        size_t n = obuf_iov(o, 0, iov, 8, &bytes);
        for (size_t i = 0; i < n; i++) {
            ok &= membuf_put(b, iov[i].iov_base, iov[i].iov_len);
        }
        obuf_consume(o, bytes);
    }
    return ok;
}

/* Read part p's reply: an error (failed), or five integers (six) whose
 * first says whether it was denied. */
static void
judge(struct all_run *run, size_t p)
{
    struct reply_reader rd;
    struct reply_token t;
    size_t at = run->off[p];
    reply_reader_init(&rd, (const char *)run->replies.p + at,
                      run->off[p + 1] - at);
    if (!reply_reader_next(&rd, &t) || t.type != RT_ARRAY || t.n < 5 ||
        t.n > 6 ||
        !reply_reader_next(&rd, &t) || t.type != RT_INT) {
        run->failed = p + 1;
        return;
    }
    if (t.n != 0 && run->denied == 0) {
        run->denied = p + 1;
    }
}

/* Each part through its own handler, in order, its reply caught apart;
 * stops at the first error. */
static void
run_parts(struct conn *c, struct all_call *a, struct all_run *run)
{
    struct cmd *self = c->last_cmd;
    struct obuf client_out = c->out;
    obuf_init(&c->out);
    c->last_cmd = NULL;             /* the parts count no decision */
    c->runs_parts = true;           /* none waits (RL.ACQUIRE's WAIT) */
    for (size_t p = 0; p < a->nparts && run->failed == 0; p++) {
        c->hint.valid = false;      /* it was argv[1]'s: the call's numparts */
        a->cmds[p]->proc(c, &a->parts[p]);
        if (!take_output(&c->out, &run->replies)) {
            run->nomem = true;
            break;
        }
        run->off[p + 1] = run->replies.len;
        judge(run, p);
    }
    c->hint.valid = false;
    c->runs_parts = false;
    c->last_cmd = self;
    obuf_deinit(&c->out);
    c->out = client_out;
}

/* [limited, denied_part, reply1, reply2...], the call's decision counted
 * (a denied one under the denying part's key). */
static void
reply_parts(struct conn *c, const struct all_call *a,
            const struct all_run *run)
{
    size_t counted = run->denied > 0 ? run->denied - 1 : 0;
    cmd_count_decision(c, &a->parts[counted], run->denied > 0);
    reply_array(&c->out, 2 + a->nparts);
    reply_int(&c->out, run->denied > 0);
    reply_int(&c->out, (int64_t)run->denied);
    obuf_append(&c->out, run->replies.p, run->replies.len);
}

/* The failed part's error, " (part N)" after it (its handler counted it). */
static void
reply_failed(struct conn *c, const struct all_run *run)
{
    size_t p = run->failed - 1;
    const char *at = (const char *)run->replies.p + run->off[p];
    size_t len = run->off[p + 1] - run->off[p];
    if (len < 3 || at[0] != '-') {
        static const char none[] = "ERR the part answered no decision";
        part_error(c, none, sizeof(none) - 1, p, false);
        return;
    }
    part_error(c, at + 1, len - 3, p, true);   /* without '-' and CRLF */
}

void
rl_all_command(struct conn *c, struct resp_request *req)
{
    struct all_call a;
    struct all_undo u = { 0 };
    struct all_run run = { 0 };
    if (!parse_call(c, req, &a)) {
        return;
    }
    int64_t now = clock_wall_now();
    keyspace_group_begin();
    if (keep_keys(&a, &u, now)) {
        notify_hold();
        multi_touch_hold();
        run_parts(c, &a, &run);
        bool keep = run.failed == 0 && run.denied == 0 && !run.nomem &&
                    !a.peek;
        bool undone = !keep && undo_all(&u, now);
        run.nomem |= !keep && !undone;
        notify_unhold(undone ? was_undone : NULL, &u);
        multi_touch_unhold(undone ? was_undone : NULL, &u);
    } else {
        run.nomem = true;
    }
    keyspace_group_end();
    if (run.nomem) {
        cmd_error(c, ERR_NOMEM);
    } else if (run.failed > 0) {
        reply_failed(c, &run);
    } else {
        reply_parts(c, &a, &run);
    }
    mem_free(u.bytes.p);
    mem_free(u.scratch.p);
    mem_free(run.replies.p);
}
