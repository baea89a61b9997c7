/*
 * cmd.c - dispatch (see cmd.h): the lookup over the table commands.c hands
 * in (cmd_setup), arity, auth, cluster verdicts, MULTI's queue, running,
 * timing and counting a handler, and the error replies. The rules that
 * refuse a write for the server's state are guard.c's; the handlers,
 * handlers/.
 *
 * Lookup is an open-addressed index built once at start-up, probed from
 * the name's length and first and last bytes: no lower-casing copy and
 * no hash over the whole name, usually one case-folding comparison.
 */
#include "server/cmd.h"
#include "server/keyspace.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/keyslot.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/client.h"
#include "server/errors.h"
#include "server/monitor.h"
#include "server/guard.h"
#include "server/pubsub.h"
#include "server/multi.h"
#include "server/server.h"
#include "server/slowlog.h"
#include "server/topdenied.h"

#define NAME_MAX_LEN 32
#define INDEX_SIZE 256       /* power of two, well above the command count */
#define ERROR_CODES_MAX 128  /* as Redis: beyond this, errors are not split */

const char *const cmd_flag_words[CMD_FLAG_COUNT] = {
    "write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
    "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking",
    "fast", "no_auth",
    "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
    "allow_busy"
};

const char *const cmd_key_flag_words[CMD_KEY_FLAG_COUNT] = {
    "RO", "RW", "OW", "RM", "access", "update", "insert", "delete",
    "not_key", "incomplete", "variable_flags"
};

const uint64_t cmd_hist_bounds_us[CMD_HIST_BUCKETS] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 100000
};

/* The table, handed over by cmd_setup(). */
static struct cmd *table;
static size_t table_len;

/* One index slot: the command and its name folded for matching. A table
 * name is lower case; fold[i] is 0x20 where name[i] is a letter, so an
 * input byte b matches iff (b | fold[i]) == name[i]: either case of a
 * letter, any other byte exactly (what tolower() gives for ASCII). */
struct index_slot {
    struct cmd *cmd;
    size_t len;
    unsigned char name[NAME_MAX_LEN];
    unsigned char fold[NAME_MAX_LEN];
};

static struct index_slot index_slots[INDEX_SIZE];

struct error_stat {
    char code[NAME_MAX_LEN];
    uint64_t count;
};
static struct error_stat error_stats[ERROR_CODES_MAX];
static size_t error_stats_len;

/* Where a name starts probing: its length and its first and last bytes
 * with the case bit set, which tell every command in the table apart. */
static uint32_t
name_hash(const char *name, size_t len)
{
    uint32_t h = (uint32_t)len * 0x9e3779b1u;
    h ^= ((uint32_t)((unsigned char)name[0] | 0x20) << 8) |
         ((unsigned char)name[len - 1] | 0x20);
    return (h * 0x85ebca6bu) >> 24;
}

bool
cmd_keynum_spec(const struct cmd *cmd, struct cmd_keynum *out)
{
    if (cmd->keynum == NULL) {
        return false;
    }
    *out = *cmd->keynum;
    return true;
}

size_t
cmd_key_spec_count(const struct cmd *cmd)
{
    size_t n = 0;
    while (n < CMD_KEY_SPECS_MAX && cmd->key_specs[n].flags != 0) {
        n++;
    }
    return n;
}

/* Do a row's keys and key specs agree, as struct cmd has them? The types
 * rule out a misspelt flag or a malformed keynum; this, what they cannot:
 * specs for a row with keys only, one for a keynum row, which shows no
 * legacy positions (or two, its own key's shown as them), and keynum
 * numbers Redis could follow. A keynum row is flagged movablekeys. */
static bool
setup_key_specs(struct cmd *cmd)
{
    const struct cmd_keynum *kn = cmd->keynum;
    size_t n = cmd_key_spec_count(cmd);
    if (cmd->computed_key != NULL || cmd->key_args != NULL) {
        cmd->flags |= CMD_MOVABLE_KEYS;
        return kn == NULL && cmd->keyword == NULL && n == 0 &&
               cmd->first_key == 0;
    }
    if (cmd->keyword != NULL) {
        /* Its own key (MIGRATE's), then the keys after the keyword. */
        if (kn != NULL || n != 2 || cmd->first_key < 1 ||
            cmd->last_key != cmd->first_key || cmd->key_step != 1 ||
            cmd->keyword->startfrom >= 0) {
            return false;
        }
        cmd->flags |= CMD_MOVABLE_KEYS;
        return true;
    }
    if (kn == NULL) {
        return (n > 0) == (cmd->first_key != 0);
    }
    /* The keynum spec is the last; a row with two has its own key first
     * (ZUNIONSTORE's destination), shown as its legacy range. */
    bool own_key = n == 2 && cmd->first_key > 0 &&
                   cmd->last_key == cmd->first_key && cmd->key_step == 1 &&
                   kn->index > cmd->first_key;
    bool none = n == 1 && cmd->first_key == 0 && cmd->last_key == 0 &&
                cmd->key_step == 0;
    if ((!own_key && !none) || kn->index < 1 || kn->keynumidx < 0 ||
        kn->firstkey < 1 || kn->keystep < 1) {
        return false;
    }
    cmd->flags |= CMD_MOVABLE_KEYS;
    return true;
}

/* struct cmd's one_key, once CMD_MOVABLE_KEYS is settled. */
static void
setup_one_key(struct cmd *cmd)
{
    bool one = cmd->first_key > 0 && cmd->last_key == cmd->first_key &&
               cmd->keyword == NULL && !(cmd->flags & CMD_MOVABLE_KEYS);
    cmd->one_key = one ? cmd->first_key : 0;
}

int
cmd_setup(struct cmd *commands, size_t count)
{
    table = commands;
    table_len = count;
    _Static_assert(INDEX_SIZE == 256, "name_hash yields 8 bits");
    memset(index_slots, 0, sizeof(index_slots));
    for (size_t i = 0; i < table_len; i++) {
        if (!setup_key_specs(&table[i])) {
            return -1;
        }
        setup_one_key(&table[i]);
        for (struct cmd *s = table[i].subcommands; s != NULL && s->name;
             s++) {
            if (!setup_key_specs(s)) {
                return -1;
            }
            setup_one_key(s);
        }
        size_t len = strlen(table[i].name);
        if (len == 0 || len >= NAME_MAX_LEN) {
            return -1;
        }
        uint32_t slot = name_hash(table[i].name, len) & (INDEX_SIZE - 1);
        while (index_slots[slot].cmd != NULL) {
            slot = (slot + 1) & (INDEX_SIZE - 1);
        }
        struct index_slot *e = &index_slots[slot];
        e->cmd = &table[i];
        e->len = len;
        memcpy(e->name, table[i].name, len);
        for (size_t k = 0; k < len; k++) {
            e->fold[k] = islower((unsigned char)table[i].name[k]) ? 0x20 : 0;
        }
    }
    return 0;
}

/* Bytes [at, at + size) of an input name against the slot's name; size
 * is a constant 4 or 8 where it is inlined, so this is one load each. */
static inline bool
chunk_matches(const struct index_slot *e, const char *name, size_t at,
              size_t size)
{
    uint64_t in = 0, fold = 0, want = 0;
    memcpy(&in, name + at, size);
    memcpy(&fold, e->fold + at, size);
    memcpy(&want, e->name + at, size);
    return (in | fold) == want;
}

/* Whole words at a time, the last word overlapping the one before. */
static bool
name_matches(const struct index_slot *e, const char *name, size_t len)
{
    if (e->len != len) {
        return false;
    }
    if (len < 4) {
        for (size_t i = 0; i < len; i++) {
            if (((unsigned char)name[i] | e->fold[i]) != e->name[i]) {
                return false;
            }
        }
        return true;
    }
    if (len < 8) {
        return chunk_matches(e, name, 0, 4) &&
               chunk_matches(e, name, len - 4, 4);
    }
    for (size_t i = 0; i + 8 < len; i += 8) {
        if (!chunk_matches(e, name, i, 8)) {
            return false;
        }
    }
    return chunk_matches(e, name, len - 8, 8);
}

struct cmd *
cmd_lookup(const char *name, size_t len)
{
    if (len == 0 || len >= NAME_MAX_LEN) {
        return NULL;
    }
    uint32_t slot = name_hash(name, len);
    while (index_slots[slot].cmd != NULL) {
        if (name_matches(&index_slots[slot], name, len)) {
            return index_slots[slot].cmd;
        }
        slot = (slot + 1) & (INDEX_SIZE - 1);
    }
    return NULL;
}

/* AUTH, HELLO and RESET change the limits the requests after them are
 * framed with. Only 4- and 5-letter names qualify: most requests answer
 * false on their length alone. */
static bool
ends_batch(const struct resp_request *req, void *arg)
{
    (void)arg;
    size_t len = req->argc > 0 ? req->argvlen[0] : 0;
    return (len == 4 && cmd_arg_is(req, 0, "auth")) ||
           (len == 5 && (cmd_arg_is(req, 0, "hello") ||
                         cmd_arg_is(req, 0, "reset")));
}

static uint64_t
key_hash(const char *key, size_t len, void *arg)
{
    (void)arg;
    return keyspace_key_hash(key, len);
}

const struct resp_frame_ops cmd_frame_ops = { key_hash, ends_batch, NULL };

struct cmd *
cmd_table(size_t *count)
{
    *count = table_len;
    return table;
}

int
cmd_last_key(const struct cmd *cmd, size_t argc)
{
    int64_t first = cmd->first_key;
    int64_t last = cmd->last_key >= 0 ? cmd->last_key
                                      : (int64_t)argc + cmd->last_key;
    if (first <= 0 || first >= (int64_t)argc || last >= (int64_t)argc ||
        last < first) {
        return -1;
    }
    return (int)last;
}

/* A keynum spec's keys, as Redis's getKeysUsingKeySpecs() finds them:
 * numkeys a strict integer >= 0 (truncated to an int, as Redis does), the
 * keys inside the line. False when it cannot tell. */
static bool
keynum_spec_keys(const struct cmd_keynum *kn, const struct resp_request *req,
                 struct cmd_keys *out)
{
    int64_t argc = (int64_t)req->argc, numkeys;
    int64_t at = (int64_t)kn->index + kn->keynumidx;
    if (!num_parse_i64(req->argv[at], req->argvlen[at], &numkeys) ||
        numkeys < 0) {
        return false;
    }
    int64_t n = (int64_t)(uint32_t)(uint64_t)numkeys;   /* (int)numkeys */
    if (n > INT_MAX) {
        n -= (int64_t)UINT32_MAX + 1;
    }
    int64_t first = (int64_t)kn->index + kn->firstkey;
    int64_t last = first + n - 1;
    if (last >= argc || last < first || first >= argc) {
        return false;
    }
    *out = (struct cmd_keys){ (int)first, (int)last, kn->keystep, true, 0 };
    return true;
}

/* What Redis does when the spec cannot tell: its getkeys function
 * (genericGetKeys) reads numkeys with atoi() and takes that many keys if
 * the line holds them, without flags. */
static bool
keynum_getkeys(const struct cmd_keynum *kn, const struct resp_request *req,
               struct cmd_keys *out)
{
    int64_t argc = (int64_t)req->argc;
    int64_t at = (int64_t)kn->index + kn->keynumidx;
    int64_t first = (int64_t)kn->index + kn->firstkey;
    int num = num_atoi(req->argv[at]);   /* NUL-terminated (resp.h) */
    if (num < 1 || num > (argc - first) / kn->keystep) {
        return false;
    }
    *out = (struct cmd_keys){ (int)first,
                              (int)(first + (int64_t)(num - 1) * kn->keystep),
                              kn->keystep, false, 0 };
    return true;
}

/* Does the line hold the keyword row's word where its key spec looks for
 * it (from argument argc + startfrom back to argument 2)? */
static bool
keyword_found(const struct cmd_keyword *kw, const struct resp_request *req)
{
    for (int64_t i = (int64_t)req->argc + kw->startfrom; i >= 2; i--) {
        if (i < (int64_t)req->argc && strcasecmp(req->argv[i], kw->word) == 0) {
            return true;
        }
    }
    return false;
}

/* The keyword row's keys (MIGRATE's), as Redis finds them: without the
 * keyword, its key spec's own key; with it, the keyword spec is
 * incomplete and Redis asks migrateGetKeys(): the keys after KEYS (the
 * options before it skipped with their values) when the key argument is
 * empty, none when it is not. */
static bool
keyword_keys(const struct cmd *cmd, const struct resp_request *req,
             struct cmd_keys *out)
{
    int first = cmd->first_key, last = cmd->first_key;
    for (size_t i = (size_t)cmd->first_key + 3;
         keyword_found(cmd->keyword, req) && i < req->argc; i++) {
        if (strcasecmp(req->argv[i], cmd->keyword->word) == 0) {
            first = (int)i + 1;
            last = req->argvlen[cmd->first_key] > 0 ? first - 1
                                                   : (int)req->argc - 1;
            break;
        }
        i += strcasecmp(req->argv[i], "auth") == 0    ? 1
           : strcasecmp(req->argv[i], "auth2") == 0 ? 2 : 0;
    }
    if (last < first || first >= (int)req->argc) {
        return false;
    }
    *out = (struct cmd_keys){ first, last, 1, true, 0 };
    return true;
}

bool
cmd_request_keys(const struct cmd *cmd, const struct resp_request *req,
                 struct cmd_keys *out)
{
    const struct cmd_keynum *kn = cmd->keynum;
    if (cmd->keyword != NULL) {
        return keyword_keys(cmd, req, out);
    }
    if (!(cmd->flags & CMD_MOVABLE_KEYS) || kn == NULL) {
        int last = cmd_last_key(cmd, req->argc);
        if (last < 0) {
            return false;
        }
        *out = (struct cmd_keys){ cmd->first_key, last,
                                  cmd->key_step > 0 ? cmd->key_step : 1,
                                  true, 0 };
        return true;
    }
    if ((int64_t)kn->index + kn->keynumidx >= (int64_t)req->argc) {
        return false;                   /* shorter than its arity allows */
    }
    if (!keynum_spec_keys(kn, req, out) && !keynum_getkeys(kn, req, out)) {
        return false;
    }
    out->store = cmd->first_key;
    return true;
}

bool
cmd_arity_ok(const struct cmd *cmd, size_t argc)
{
    if (cmd->arity >= 0) {
        return argc == (size_t)cmd->arity;
    }
    return argc >= (size_t)-cmd->arity;
}

/* Redis's text: "unknown command 'x', with args beginning with: 'a' 'b' "
 * (each piece cut so the list stays near 128 bytes). */
static void
reply_unknown_command(struct conn *c, struct resp_request *req)
{
    char args[512];
    size_t n = 0;
    args[0] = '\0';
    for (size_t i = 1; i < req->argc && n < 128; i++) {
        int room = 128 - (int)n;
        int w = snprintf(args + n, sizeof(args) - n, "'%.*s' ",
                         room < (int)req->argvlen[i] ? room
                                                     : (int)req->argvlen[i],
                         req->argv[i]);
        if (w < 0) {
            break;
        }
        n += (size_t)w;
        if (n >= sizeof(args)) {
            n = sizeof(args) - 1;
            break;
        }
    }
    cmd_errorf(c, "ERR unknown command '%.128s', with args beginning with: %s",
                req->argv[0], args);
    multi_flag_refused(c);
}

/* Commands are timed back to back: one clock read per command, whose end
 * is the next command's start (so a command's time also holds the framing
 * of its request). cmd_batch_begin() opens each batch. */
static mono_ns batch_mark;

void
cmd_batch_begin(void)
{
    batch_mark = clock_mono_now();
}

static void (*clients_enter)(void);
static void (*clients_leave)(void);

void
cmd_set_clients_guard(void (*enter)(void), void (*leave)(void))
{
    clients_enter = enter;
    clients_leave = leave;
}

/* Run the handler; one that reads other clients' buffers while the I/O
 * threads, which hold them, wait. */
static void
run_proc(struct conn *c, struct cmd *cmd, struct resp_request *req)
{
    if (!(cmd->flags & CMD_READS_CLIENTS) || clients_enter == NULL) {
        cmd->proc(c, req);
        return;
    }
    clients_enter();
    cmd->proc(c, req);
    clients_leave();
}

static void
run(struct conn *c, struct cmd *cmd, struct resp_request *req)
{
    c->reply_error = false;
    c->last_cmd = cmd;
    if (cmd->subcommands != NULL) {
        /* A container: its subcommand is run, timed and counted. */
        cmd->proc(c, req);
        return;
    }
    run_proc(c, cmd, req);
    mono_ns end = clock_mono_now();
    uint64_t nsec = (uint64_t)(end - batch_mark);
    /* Summed in ns: a CL.THROTTLE takes well under a µs, and whole µs per
     * call would sum to nothing. */
    cmd->stats.calls++;
    cmd->stats.nsec += nsec;
    for (size_t k = 0; k < CMD_HIST_BUCKETS; k++) {
        if (nsec <= cmd_hist_bounds_us[k] * NS_PER_US) {
            cmd->stats.hist[k]++;
            break;
        }
    }
    batch_mark = end;
    if (c->reply_error) {
        cmd->stats.failed_calls++;
    }
    if (!(cmd->flags & CMD_SKIP_SLOWLOG)) {
        slowlog_note(c, req, nsec / NS_PER_US);
    }
    /* As Redis: after the command ran; admin commands are never shown,
     * and a skip_monitor one (EVAL) feeds MONITOR itself. */
    if (srv.monitors != 0 && !(cmd->flags & (CMD_ADMIN | CMD_SKIP_MONITOR))) {
        monitor_feed(c, req);
    }
}

struct cmd *
cmd_resolve(struct cmd *cmd, const struct resp_request *req)
{
    if (cmd->subcommands == NULL || req->argc < 2) {
        return cmd;
    }
    size_t plen = strlen(cmd->name);
    for (struct cmd *s = cmd->subcommands; s->name != NULL; s++) {
        const char *sname = s->name + plen + 1;
        if (strlen(sname) == req->argvlen[1] &&
            strcasecmp(sname, req->argv[1]) == 0) {
            return s;
        }
    }
    return cmd;
}

void
cmd_call(struct conn *c, struct cmd *cmd, struct resp_request *req)
{
    /* Timed from its own start; the outer command (EVAL) keeps its mark,
     * so its time includes the commands it ran, as Redis counts it. */
    mono_ns outer = batch_mark;
    batch_mark = clock_mono_now();
    srv.stats.commands_processed++;
    run(c, cmd, req);
    batch_mark = outer;
}

/* A command refused before it ran (arity, auth, not in a transaction):
 * inside MULTI the transaction is then dirty, and a refused EXEC ends it
 * with -EXECABORT and the reason, as Redis's rejectCommand (which says
 * EXECABORT even outside MULTI). */
static void
reject(struct conn *c, struct cmd *cmd, const char *msg)
{
    cmd->stats.rejected_calls++;
    c->last_cmd = cmd;          /* CLIENT LIST's cmd=, as Redis */
    if (cmd->flags & CMD_EXEC) {
        multi_discard(c);
        /* Redis's reason reads without the ERR code. */
        cmd_errorf(c, "EXECABORT Transaction discarded because of: %s",
                   strncmp(msg, "ERR ", 4) == 0 ? msg + 4 : msg);
        return;
    }
    multi_flag_refused(c);
    cmd_error(c, msg);
}

#define ERR_CROSSSLOT "CROSSSLOT Keys in request don't hash to the same slot"

/* The client is told where the keys are (MOVED, ASK) or why not served:
 * Redis's clusterRedirectClient() texts. False unless HERE. */
bool
cmd_reply_route(struct conn *c, enum cluster_verdict v,
                const struct cluster_redirect *to)
{
    switch (v) {
    case CLUSTER_HERE:
        return true;
    case CLUSTER_MOVED:
    case CLUSTER_ASK:
        cmd_errorf(c, "%s %u %s:%u", v == CLUSTER_ASK ? "ASK" : "MOVED",
                   to->slot, to->host, to->port);
        return false;
    case CLUSTER_CROSSSLOT:
        cmd_error(c, ERR_CROSSSLOT);
        return false;
    case CLUSTER_TRYAGAIN:
        cmd_error(c, "TRYAGAIN Multiple keys request during rehashing of "
                  "slot");
        return false;
    case CLUSTER_DOWN_STATE:
        cmd_error(c, "CLUSTERDOWN The cluster is down");
        return false;
    case CLUSTER_DOWN_RO_STATE:
        cmd_error(c, "CLUSTERDOWN The cluster is down and only accepts read "
                  "commands");
        return false;
    default:
        cmd_error(c, "CLUSTERDOWN Hash slot not served");
        return false;
    }
}

/* CLUSTER_Q_* for this command of this client. */
static unsigned
route_flags(const struct conn *c, const struct cmd *cmd, bool writes)
{
    unsigned f = writes ? CLUSTER_Q_WRITE : 0;
    if (c->replica_reads) {
        f |= CLUSTER_Q_READONLY;
    }
    if (c->asking || (cmd->flags & CMD_ASKING)) {
        f |= CLUSTER_Q_ASKING;
    }
    if (strcmp(cmd->name, "migrate") == 0) {
        f |= CLUSTER_Q_MIGRATE;
    }
    return f;
}

/* cluster-mode yes: are the keys of argv[first..last] (every step) served
 * here? If not, the client is told where (MOVED) or why not. */
static bool
keys_served_here(struct conn *c, const struct resp_request *req, int first,
                 int last, int step, unsigned flags)
{
    struct cluster_redirect to;
    return cmd_reply_route(c, cluster_route(req, first, last, step, flags, &to),
                          &to);
}

static bool peeks(const struct cmd *cmd, const struct resp_request *req);

/* cluster-enabled yes: the command's keys, its destination first, routed
 * as one request. */
static bool
live_served_here(struct conn *c, const struct resp_request *req,
                 const struct cmd_keys *keys, unsigned flags)
{
    struct cluster_query q;
    struct cluster_redirect to;
    cluster_query_start(&q);
    if (keys->store > 0) {
        cluster_query_keys(&q, req, keys->store, keys->store, 1);
    }
    cluster_query_keys(&q, req, keys->first, keys->last, keys->step);
    return cmd_reply_route(c, cluster_query_end(&q, flags, &to), &to);
}

bool
cmd_key_args_line(const struct cmd *cmd, const struct resp_request *req,
                  struct cmd_key_args *out)
{
    int idx[CMD_KEY_ARGS_MAX];
    size_t n = cmd->key_args(req, idx, CMD_KEY_ARGS_MAX);
    for (size_t i = 0; i < n; i++) {
        out->argv[i] = req->argv[idx[i]];
        out->argvlen[i] = req->argvlen[idx[i]];
    }
    out->keys = (struct resp_request){ n, out->argv, out->argvlen, 0 };
    return n > 0;
}

/* A row whose keys are found by reading its arguments (RL.ALL's parts):
 * routed as one request, all in one slot. A line that names none is the
 * handler's to refuse. */
static bool
key_args_served_here(struct conn *c, const struct cmd *cmd,
                     const struct resp_request *req)
{
    struct cmd_key_args k;
    struct cluster_redirect to;
    if (!cmd_key_args_line(cmd, req, &k)) {
        return true;
    }
    return cmd_reply_route(c, cluster_route(&k.keys, 0, (int)k.keys.argc - 1,
                                            1, route_flags(c, cmd, true),
                                            &to),
                           &to);
}

/* A replica answers a READONLY client's reads (PEEKs included). *hint
 * is the slot of the command's one key when the common case below served
 * it (else left alone): execute() hands it to the per-slot index. */
static bool
served_here(struct conn *c, const struct cmd *cmd,
            const struct resp_request *req, unsigned *hint)
{
    struct cmd_keys keys;
    /* The common case first: a command of one fixed key (CL.THROTTLE, GET,
     * INCR...) of a slot this node serves, stable, the cluster up: one
     * CRC16 and a few loads. */
    bool live = cluster_live();
    int k = cmd->one_key;
    if (live && k > 0 && (size_t)k < req->argc) {
        unsigned slot = keyslot(req->argv[k], req->argvlen[k]);
        if (cluster_slot_here(slot)) {
            *hint = slot;
            return true;
        }
    }
    if (cmd->key_args != NULL) {
        return key_args_served_here(c, cmd, req);
    }
    if (!cmd_request_keys(cmd, req, &keys)) {
        return true;
    }
    bool reads = !(cmd->flags & CMD_WRITE) || peeks(cmd, req);
    unsigned flags = route_flags(c, cmd, !reads);
    if (live) {
        return live_served_here(c, req, &keys, flags);
    }
    if (keys.store > 0) {
        /* The own key first, as Redis walks the keys; then all in its
         * slot. */
        if (!keys_served_here(c, req, keys.store, keys.store, 1, flags)) {
            return false;
        }
        if (keyslot(req->argv[keys.store], req->argvlen[keys.store]) !=
            keyslot(req->argv[keys.first], req->argvlen[keys.first])) {
            cmd_error(c, ERR_CROSSSLOT);
            return false;
        }
    }
    return keys_served_here(c, req, keys.first, keys.last, keys.step, flags);
}

/* Inside MULTI: queue the command (+QUEUED) unless it may not be, or its
 * keys are served elsewhere; either refusal makes EXEC abort. */
static void upper_name(const char *name, char out[NAME_MAX_LEN]);

static void
queue(struct conn *c, struct cmd *cmd, struct resp_request *req)
{
    if (cmd->flags & CMD_NO_MULTI) {
        reject(c, cmd, "ERR Command not allowed inside a transaction");
        return;
    }
    /* A container's subcommand is looked up and its arity checked before
     * it is queued, as Redis does: a wrong one makes EXEC abort. */
    struct cmd *sub = cmd_resolve(cmd, req);
    char msg[256];
    if (cmd->subcommands != NULL && sub == cmd) {
        char upper[NAME_MAX_LEN];
        upper_name(cmd->name, upper);
        snprintf(msg, sizeof(msg), ERR_UNKNOWN_SUBCOMMAND, req->argv[1],
                 upper);
        reject(c, cmd, msg);
        c->last_cmd = NULL;     /* no such command: cmd=NULL, as Redis */
        return;
    }
    if (sub != cmd && !cmd_arity_ok(sub, req->argc)) {
        snprintf(msg, sizeof(msg), ERR_WRONG_ARITY, sub->name);
        reject(c, sub, msg);
        return;
    }
    c->last_cmd = sub;          /* CLIENT LIST: cmd=set while queued */
    if (!multi_queue(c, cmd, req)) {
        cmd_error(c, ERR_NOMEM);
        return;
    }
    reply_status(&c->out, "QUEUED");
}

/* A limiter call with PEEK (an argument after the key) changes nothing. */
static bool
peeks(const struct cmd *cmd, const struct resp_request *req)
{
    if (!(cmd->flags & CMD_PEEKS)) {
        return false;   /* "PEEK" is any other command's data */
    }
    for (size_t i = 2; i < req->argc; i++) {
        if (req->argvlen[i] == 4 && strncasecmp(req->argv[i], "PEEK", 4) == 0) {
            return true;
        }
    }
    return false;
}

bool
cmd_queue_has(const struct conn *c, unsigned flags)
{
    const struct multi *m = c->multi;
    for (size_t i = 0; m != NULL && i < m->ncmds; i++) {
        if (m->cmds[i].cmd->flags & flags) {
            return true;
        }
    }
    return false;
}

bool
cmd_queue_writes(const struct conn *c)
{
    return cmd_queue_has(c, CMD_WRITE);
}

static bool
has_word(const struct resp_request *req, const char *word)
{
    for (size_t i = 1; i < req->argc; i++) {
        if (cmd_arg_is(req, i, word)) {
            return true;
        }
    }
    return false;
}

enum cmd_busy_answer
cmd_while_busy(const struct resp_request *req, struct cmd **out)
{
    struct cmd *top = cmd_lookup(req->argv[0], req->argvlen[0]);
    if (top == NULL) {
        return CMD_BUSY_MAIN_THREAD;
    }
    struct cmd *cmd = cmd_resolve(top, req);
    *out = cmd;
    if (!cmd_arity_ok(cmd, req->argc)) {
        return CMD_BUSY_MAIN_THREAD;
    }
    if (!(cmd->flags & CMD_ALLOW_BUSY)) {
        return CMD_BUSY_REFUSED;
    }
    if (strcmp(cmd->name, "script|kill") == 0) {
        return CMD_BUSY_SCRIPT_KILL;
    }
    if (strcmp(cmd->name, "function|kill") == 0) {
        return CMD_BUSY_FUNCTION_KILL;
    }
    if (strcmp(cmd->name, "function|stats") == 0) {
        return CMD_BUSY_FUNCTION_STATS;
    }
    if (strcmp(cmd->name, "shutdown") == 0 && !has_word(req, "abort")) {
        return has_word(req, "nosave") ? CMD_BUSY_SHUTDOWN_NOSAVE
                                       : CMD_BUSY_REFUSED;
    }
    return CMD_BUSY_MAIN_THREAD;
}

/* As Redis: under PAUSE ALL every command waits, under PAUSE WRITE a write
 * or may-replicate command (EVAL, unless its script says no-writes) or an
 * EXEC holding one; one Redis refuses before (unknown, wrong arity) never
 * waits. */
bool
cmd_pause_holds(const struct conn *c, const struct resp_request *req)
{
    struct cmd *top = cmd_lookup(req->argv[0], req->argvlen[0]);
    if (top == NULL || !cmd_arity_ok(top, req->argc)) {
        return false;
    }
    /* A container's write subcommand (FUNCTION LOAD) is held too. */
    const struct cmd *cmd = cmd_resolve(top, req);
    unsigned replicates = CMD_WRITE | CMD_MAY_REPLICATE;
    unsigned flags = cmd->request_flags != NULL ? cmd->request_flags(cmd, req)
                                                : cmd->flags;
    return srv.pause_all || (flags & replicates) ||
           ((cmd->flags & CMD_EXEC) && cmd_queue_has(c, replicates));
}

/* The server's state against the command (guard.h), as Redis's
 * processCommand() asks: a write (not a PEEK) meets MISCONF, NOREPLICAS
 * and READONLY; PING and an EXEC holding a write meet MISCONF alone. */
static enum guard_verdict
state_refuses(const struct conn *c, const struct cmd *cmd,
              const struct resp_request *req)
{
    if (c->from_primary) {
        /* A Redis primary's stream is obeyed, as Redis obeys its master
         * client (and as a cellgate replica applies its primary's effects
         * whatever its journal says). */
        return GUARD_RUN;
    }
    if (cmd->flags & CMD_WRITE) {
        /* PEEK looked for only when a rule refuses: never on the path of
         * a write that runs. */
        enum guard_verdict v = guard_write(GUARD_AS_COMMAND, false);
        return v != GUARD_RUN && peeks(cmd, req) ? GUARD_RUN : v;
    }
    if (!guard_disk_refuses()) {
        return GUARD_RUN;
    }
    bool misconf_too = (cmd->flags & CMD_EXEC) ? cmd_queue_writes(c)
                                               : strcmp(cmd->name, "ping") == 0;
    return misconf_too ? GUARD_MISCONF : GUARD_RUN;
}

/* A RESP2 client subscribed to something may only (un)subscribe, PING,
 * QUIT and RESET, as Redis: its replies would mix with the messages. */
static bool
refused_while_subscribed(const struct conn *c, const struct cmd *cmd)
{
    static const char *const allowed[] = {
        "subscribe", "unsubscribe", "psubscribe", "punsubscribe",
        "ssubscribe", "sunsubscribe", "ping", "quit", "reset", NULL
    };
    if (c->subs == NULL || c->proto != 2 ||
        pubsub_count(c, false) + pubsub_count(c, true) == 0) {
        return false;
    }
    for (size_t i = 0; allowed[i] != NULL; i++) {
        if (strcmp(cmd->name, allowed[i]) == 0) {
            return false;
        }
    }
    return true;
}

static void execute(struct conn *c, struct resp_request *req);

/* ASKING holds for the one command after it (all of a transaction's,
 * MULTI to EXEC), as Redis's resetClient() clears CLIENT_ASKING. */
void
cmd_execute(struct conn *c, struct resp_request *req)
{
    execute(c, req);
    if (c->asking && !(req->argvlen[0] == 6 &&
                       strncasecmp(req->argv[0], "asking", 6) == 0) &&
        (c->multi == NULL || !multi_open(c, c->multi))) {
        c->asking = false;
    }
}

static void
execute(struct conn *c, struct resp_request *req)
{
    char msg[256];
    struct cmd *cmd = cmd_lookup(req->argv[0], req->argvlen[0]);
    srv.stats.commands_processed++;
    if (cmd == NULL) {
        c->last_cmd = NULL;     /* CLIENT LIST: cmd=NULL, as Redis */
        reply_unknown_command(c, req);
        return;
    }
    if (!cmd_arity_ok(cmd, req->argc)) {
        snprintf(msg, sizeof(msg), ERR_WRONG_ARITY, cmd->name);
        reject(c, cmd, msg);
        return;
    }
    if (!c->authenticated && !(cmd->flags & CMD_NO_AUTH)) {
        reject(c, cmd, ERR_NOAUTH);
        return;
    }
    if (c->monitor &&
        (cmd->flags & (CMD_WRITE | CMD_READONLY | CMD_MAY_REPLICATE))) {
        /* Redis flags a monitor as a replica, which may not. */
        reject(c, cmd, "ERR Replica can't interact with the keyspace");
        return;
    }
    /* As Redis, redirection comes first: a write to a cluster replica is
     * MOVED to its primary, not refused as READONLY. */
    unsigned hint = KEYSLOT_SLOTS;     /* none */
    if (cluster_routing() && !served_here(c, cmd, req, &hint)) {
        cmd->stats.rejected_calls++;    /* MOVED and the like, as Redis */
        multi_flag_refused(c);          /* inside MULTI, EXEC aborts */
        return;
    }
    /* A container's write subcommand (FUNCTION LOAD) is a write. */
    enum guard_verdict v = state_refuses(
        c, cmd->subcommands != NULL ? cmd_resolve(cmd, req) : cmd, req);
    if (v != GUARD_RUN) {
        reject(c, cmd, guard_error(v, msg, sizeof(msg)));
        return;
    }
    if (refused_while_subscribed(c, cmd)) {
        snprintf(msg, sizeof(msg), "ERR Can't execute '%s': only "
                 "(P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
                 "are allowed in this context", cmd->name);
        reject(c, cmd, msg);
        return;
    }
    if (c->multi != NULL && multi_open(c, c->multi) &&
        !(cmd->flags & CMD_NOT_QUEUED)) {
        queue(c, cmd, req);
        return;
    }
    if (hint == KEYSLOT_SLOTS) {
        run(c, cmd, req);
        return;
    }
    /* The routing hashed the key: the per-slot index takes its slot from
     * the hint rather than hashing it again (lib/keyslot.h). */
    int k = cmd->first_key;
    keyslot_hint = (struct keyslot_hint){ req->argv[k], req->argvlen[k], hint };
    run(c, cmd, req);
    keyslot_hint.key = NULL;
}

/* cluster-enabled yes: every key of every queued command, as Redis
 * routes an EXEC. */
static bool
live_queue_served_here(struct conn *c)
{
    const struct multi *m = c->multi;
    struct cluster_query q;
    struct cluster_redirect to;
    bool writes = cmd_queue_writes(c);
    unsigned flags = writes ? CLUSTER_Q_WRITE : 0;
    flags |= c->replica_reads ? CLUSTER_Q_READONLY : 0;
    flags |= c->asking ? CLUSTER_Q_ASKING : 0;
    cluster_query_start(&q);
    for (size_t i = 0; i < m->ncmds; i++) {
        const struct multi_cmd *mc = &m->cmds[i];
        struct cmd_keys k;
        struct cmd_key_args ka;
        if (mc->cmd->key_args != NULL &&
            cmd_key_args_line(mc->cmd, &mc->req, &ka)) {
            cluster_query_keys(&q, &ka.keys, 0, (int)ka.keys.argc - 1, 1);
            continue;
        }
        if (!cmd_request_keys(mc->cmd, &mc->req, &k)) {
            continue;
        }
        if (k.store > 0) {
            cluster_query_keys(&q, &mc->req, k.store, k.store, 1);
        }
        cluster_query_keys(&q, &mc->req, k.first, k.last, k.step);
    }
    return cmd_reply_route(c, cluster_query_end(&q, flags, &to), &to);
}

/* The keys of every queued command in one slot served here (cluster-mode
 * yes), as Redis checks an EXEC. */
static bool
queue_served_here(struct conn *c)
{
    const struct multi *m = c->multi;
    struct resp_request keys = { 0, NULL, NULL, 0 };
    if (cluster_live()) {
        return live_queue_served_here(c);
    }
    char **argv = mem_malloc(sizeof(char *) * 2 * (m->ncmds + 1));
    size_t *lens = mem_malloc(sizeof(size_t) * 2 * (m->ncmds + 1));
    bool ok = argv != NULL && lens != NULL;
    /* One key of each command suffices: each was routed when queued. */
    for (size_t i = 0; ok && i < m->ncmds; i++) {
        const struct multi_cmd *q = &m->cmds[i];
        struct cmd_keys k;
        struct cmd_key_args ka;
        if (q->cmd->key_args != NULL &&
            cmd_key_args_line(q->cmd, &q->req, &ka)) {
            argv[keys.argc] = ka.argv[0];
            lens[keys.argc++] = ka.argvlen[0];
        } else if (cmd_request_keys(q->cmd, &q->req, &k)) {
            argv[keys.argc] = q->req.argv[k.first];
            lens[keys.argc++] = q->req.argvlen[k.first];
        }
    }
    keys.argv = argv;
    keys.argvlen = lens;
    if (!ok) {
        cmd_error(c, ERR_NOMEM);
    } else if (keys.argc > 0) {
        bool writes = cmd_queue_writes(c);
        ok = keys_served_here(c, &keys, 0, (int)keys.argc - 1, 1,
                              (writes ? CLUSTER_Q_WRITE : 0) |
                              (c->replica_reads ? CLUSTER_Q_READONLY : 0));
    }
    mem_free(argv);
    mem_free(lens);
    return ok;
}

void
cmd_run_queued(struct conn *c)
{
    struct multi *m = c->multi;
    if (cluster_routing() && !queue_served_here(c)) {
        multi_discard(c);
        return;
    }
    multi_unwatch(c);           /* nothing watched can matter any more */
    m = c->multi;
    /* CLIENT LIST shows EXEC as the command, during the run and after
     * it, as Redis's lastcmd; run() points last_cmd at each queued one. */
    struct cmd *exec = c->last_cmd;
    m->flags |= MULTI_RUNNING;
    reply_array(&c->out, m->ncmds);
    for (size_t i = 0; i < m->ncmds; i++) {
        /* The key hint describes the request being read (EXEC), and the
         * first queued lookup sets it: the next command's key is another
         * key, and a stale hash would add it to the wrong bucket. */
        c->hint.valid = false;
        run(c, m->cmds[i].cmd, &m->cmds[i].req);
    }
    multi_discard(c);
    c->last_cmd = exec;
}

/* A command name in capitals, cut at NAME_MAX_LEN - 1. */
static void
upper_name(const char *name, char out[NAME_MAX_LEN])
{
    size_t i;
    for (i = 0; name[i] != '\0' && i < NAME_MAX_LEN - 1; i++) {
        out[i] = (char)toupper((unsigned char)name[i]);
    }
    out[i] = '\0';
}

void
cmd_dispatch_subcommand(struct conn *c, struct resp_request *req,
                        struct cmd *parent)
{
    const char *sub = req->argv[1];
    size_t plen = strlen(parent->name);
    for (struct cmd *s = parent->subcommands; s->name != NULL; s++) {
        const char *sname = s->name + plen + 1;
        if (strlen(sname) == req->argvlen[1] && strcasecmp(sname, sub) == 0) {
            if (!cmd_arity_ok(s, req->argc)) {
                s->stats.rejected_calls++;
                cmd_errorf(c, ERR_WRONG_ARITY, s->name);
                return;
            }
            run(c, s, req);
            return;
        }
    }
    char upper[NAME_MAX_LEN];
    upper_name(parent->name, upper);
    c->last_cmd = NULL;         /* Redis knows no such command: cmd=NULL */
    cmd_errorf(c, ERR_UNKNOWN_SUBCOMMAND, sub, upper);
}

void
cmd_error_subcommand_syntax(struct conn *c, const struct resp_request *req)
{
    char upper[NAME_MAX_LEN];
    upper_name(c->last_cmd != NULL ? c->last_cmd->name : "", upper);
    char *bar = strchr(upper, '|');
    if (bar != NULL) {
        *bar = '\0';                   /* the container's name */
    }
    cmd_errorf(c, "ERR unknown subcommand or wrong number of arguments for "
               "'%.128s'. Try %s HELP.", req->argv[1], upper);
}

bool
cmd_arg_int(struct conn *c, const struct resp_request *req, size_t i,
            const char *msg, int *out)
{
    int64_t v;
    if (!num_parse_i64(req->argv[i], req->argvlen[i], &v)) {
        cmd_error(c, msg != NULL ? msg : ERR_NOT_INTEGER);
        return false;
    }
    if (v < INT_MIN || v > INT_MAX) {
        if (msg != NULL) {
            cmd_error(c, msg);
        } else {
            cmd_errorf(c, "ERR value is out of range, value must between "
                       "%d and %d", INT_MIN, INT_MAX);
        }
        return false;
    }
    *out = (int)v;
    return true;
}

bool
cmd_arg_nonneg(struct conn *c, const struct resp_request *req, size_t i,
               const char *nan_err, const char *neg_err, int64_t *out)
{
    if (!num_parse_i64(req->argv[i], req->argvlen[i], out)) {
        cmd_error(c, nan_err);
        return false;
    }
    if (*out < 0) {
        cmd_error(c, neg_err);
        return false;
    }
    return true;
}

bool
cmd_arg_timeout(struct conn *c, const struct resp_request *req, size_t i,
                int64_t *out)
{
    return cmd_arg_nonneg(c, req, i, ERR_TIMEOUT_NOT_INTEGER,
                          ERR_TIMEOUT_NEGATIVE, out);
}

void
cmd_reply_reload(struct conn *c, int (*reload)(char *err, size_t len))
{
    char err[CONF_ERR_LEN + 64];
    if (reload(err, sizeof(err)) != 0) {
        cmd_errorf(c, "ERR %s", err);
        return;
    }
    reply_ok(&c->out);
}

void
cmd_reply_help(struct conn *c, const char *const *lines)
{
    size_t n = 0;
    while (lines[n] != NULL) {
        n++;
    }
    reply_array(&c->out, n);
    for (size_t i = 0; i < n; i++) {
        reply_status(&c->out, lines[i]);
    }
}

void
cmd_count_decision(struct conn *c, const struct resp_request *req,
                   bool limited)
{
    if (c->last_cmd == NULL) {
        return;
    }
    if (limited) {
        c->last_cmd->stats.denied++;
        /* The hint is argv[1]'s hash unless the command's key is one it
         * computes (RL.CHECK's): then the summary hashes argv[1] itself. */
        bool argv1_hint = c->hint.valid && c->last_cmd->computed_key == NULL;
        if (req->argc > 1) {
            topdenied_note(c->db, req->argv[1], req->argvlen[1],
                           argv1_hint ? &c->hint.hash : NULL);
        }
    } else {
        c->last_cmd->stats.allowed++;
    }
}

static void count_error(const char *msg);

void
cmd_count_refusal(struct cmd *cmd, const char *msg)
{
    if (cmd != NULL) {
        cmd->stats.rejected_calls++;
    }
    count_error(msg);
}

void
cmd_error(struct conn *c, const char *msg)
{
    c->reply_error = true;
    count_error(msg);
    reply_errorz(&c->out, msg);
}

/* A message longer than the stack's buffer (Redis quotes a client's
 * argument whole) is formatted again into a block of its size; out of
 * memory, it is cut to the buffer. */
void
cmd_errorf(struct conn *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char *big = n >= (int)sizeof(msg) ? mem_malloc((size_t)n + 1) : NULL;
    if (big != NULL) {
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    cmd_error(c, big != NULL ? big : msg);
    mem_free(big);
}

void
cmd_error_bytes(struct conn *c, const char *msg, size_t len)
{
    c->reply_error = true;
    count_error(msg);
    reply_error(&c->out, msg, len);
}

/* Count an error under code[0..len), for INFO errorstats. */
static void
count_error_code(const char *code, size_t len)
{
    srv.stats.total_error_replies++;
    if (len >= NAME_MAX_LEN) {
        len = NAME_MAX_LEN - 1;
    }
    for (size_t i = 0; i < error_stats_len; i++) {
        if (strncmp(error_stats[i].code, code, len) == 0 &&
            error_stats[i].code[len] == '\0') {
            error_stats[i].count++;
            return;
        }
    }
    if (error_stats_len < ERROR_CODES_MAX) {
        /* Kept in byte order, as Redis's radix tree lists them in INFO. */
        size_t at = 0;
        while (at < error_stats_len &&
               strncmp(error_stats[at].code, code, len) < 0) {
            at++;
        }
        memmove(&error_stats[at + 1], &error_stats[at],
                (error_stats_len - at) * sizeof(error_stats[0]));
        error_stats_len++;
        struct error_stat *e = &error_stats[at];
        memcpy(e->code, code, len);
        e->code[len] = '\0';
        e->count = 1;
    }
}

/* Count an error reply by its code (first word). */
static void
count_error(const char *msg)
{
    count_error_code(msg, strcspn(msg, " "));
}

/* Redis looks for the code's end only in the first 32 bytes of "-msg"
 * (afterErrorReply): a code of up to 30 bytes. */
#define SCRIPT_CODE_MAX 30

void
cmd_error_script(struct conn *c, const char *msg, size_t len, bool counted)
{
    c->reply_error = true;
    reply_error(&c->out, msg, len);
    if (!counted) {
        return;
    }
    /* The code is read from the text as sent: CR and LF went out as
     * spaces, so they end it too. */
    size_t scan = len < SCRIPT_CODE_MAX + 1 ? len : SCRIPT_CODE_MAX + 1;
    size_t end = 0;
    while (end < scan && msg[end] != ' ' && msg[end] != '\r' &&
           msg[end] != '\n') {
        end++;
    }
    if (end < scan) {
        count_error_code(msg, end);
    } else {
        count_error_code("ERR", 3);
    }
}

const char *
cmd_error_stat(size_t i, uint64_t *count)
{
    if (i >= error_stats_len) {
        return NULL;
    }
    *count = error_stats[i].count;
    return error_stats[i].code;
}

static void
reset_table_stats(struct cmd *t, size_t n)
{
    for (size_t i = 0; i < n && t[i].name != NULL; i++) {
        memset(&t[i].stats, 0, sizeof(t[i].stats));
        if (t[i].subcommands != NULL) {
            reset_table_stats(t[i].subcommands, SIZE_MAX);
        }
    }
}

void
cmd_reset_stats(void)
{
    reset_table_stats(table, table_len);
    error_stats_len = 0;
}

bool
cmd_arg_is(const struct resp_request *req, size_t i, const char *word)
{
    return req->argvlen[i] == strlen(word) &&
           strcasecmp(req->argv[i], word) == 0;
}

int
cmd_arg_which(const struct resp_request *req, size_t i,
              const char *const *words, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (cmd_arg_is(req, i, words[k])) {
            return (int)k;
        }
    }
    return -1;
}

