/*
 * cmd_client.c - the CLIENT family (SETNAME, GETNAME, SETINFO, ID, LIST,
 * INFO, KILL, REPLY, PAUSE, UNPAUSE, UNBLOCK, NO-EVICT, HELP), RESET and
 * MONITOR, with Redis 7's replies and error texts (networking.c in Redis).
 *
 * What a subcommand asks of the connections it does not run on (close
 * them, wake the postponed ones) is a request bit (client.h) that conn.c
 * carries out once the command has returned.
 *
 * LIST and KILL reach grpc-port's connections too (grpc.c), as clients of
 * type normal: LIST shows what each one holds, KILL closes it at once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/num.h"
#include "lib/time.h"
#include "protocol/reply.h"
#include "server/blocked.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/envoy/grpc.h"
#include "server/handlers/handlers.h"
#include "server/keyspace.h"
#include "server/monitor.h"
#include "server/pubsub.h"
#include "server/repl/replication.h"
#include "server/multi.h"
#include "server/server.h"
#include "lib/textbuf.h"

HANDLER_VARIANT(client_command, cmd_dispatch_subcommand,
                cmd_lookup("client", 6))

/* ---- names ------------------------------------------------------------ */

void
client_setname_command(struct conn *c, struct resp_request *req)
{
    int rc = client_set_name(c, req->argv[2], req->argvlen[2]);
    if (rc != 0) {
        cmd_error(c, rc < 0 ? ERR_NOMEM : ERR_CLIENT_NAME);
    } else {
        reply_ok(&c->out);
    }
}

void
client_getname_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    if (c->name == NULL) {
        reply_null(&c->out, c->proto);
    } else {
        reply_bulkz(&c->out, c->name);
    }
}

void
client_setinfo_command(struct conn *c, struct resp_request *req)
{
    bool version = cmd_arg_is(req, 2, "lib-ver");
    if (!version && !cmd_arg_is(req, 2, "lib-name")) {
        cmd_errorf(c, "ERR Unrecognized option '%.128s'", req->argv[2]);
        return;
    }
    int rc = client_set_lib(c, version, req->argv[3], req->argvlen[3]);
    if (rc < 0) {
        cmd_error(c, ERR_NOMEM);
    } else if (rc > 0) {
        cmd_errorf(c, "ERR %s cannot contain spaces, newlines or special "
                   "characters.", version ? "lib-ver" : "lib-name");
    } else {
        reply_ok(&c->out);
    }
}

void
client_id_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    reply_int(&c->out, (int64_t)c->id);
}

/* Redis's client types (getClientType): a replica that sent PSYNC is
 * "replica", a client subscribed to a channel or pattern "pubsub", every
 * other one "normal", monitors too. */
enum client_type { TYPE_NORMAL, TYPE_REPLICA, TYPE_MASTER, TYPE_PUBSUB };

static enum client_type
type_of(const struct conn *x)
{
    if (repl_is_replica_client(x)) {
        return TYPE_REPLICA;
    }
    return pubsub_count(x, false) + pubsub_count(x, true) > 0 ? TYPE_PUBSUB
                                                               : TYPE_NORMAL;
}

/* ---- LIST and INFO ---------------------------------------------------- */

/* Redis's flag letters for what cellgate has, in Redis's order: O
 * monitor, S replica, P subscribed, x MULTI, b postponed by CLIENT PAUSE
 * or waiting (a blocking pop, WAIT), d a watched key changed, c closing
 * after its reply, U on the unix socket, r READONLY, e NO-EVICT; N for
 * none. */
static void
client_flags(const struct conn *x, char *out)
{
    char *p = out;
    if (x->monitor) {
        *p++ = 'O';
    }
    if (type_of(x) == TYPE_REPLICA) {
        *p++ = 'S';
    }
    if (type_of(x) == TYPE_PUBSUB) {
        *p++ = 'P';
    }
    if (multi_open(x, x->multi)) {
        *p++ = 'x';
    }
    if (x->state == CONN_POSTPONED || x->state == CONN_BLOCKED) {
        *p++ = 'b';
    }
    if (x->multi != NULL && (x->multi->flags & MULTI_DIRTY_CAS)) {
        *p++ = 'd';
    }
    if (x->state == CONN_CLOSE_AFTER_REPLY ||
        (x->requests & CLIENT_CLOSE_AFTER_REPLY)) {
        *p++ = 'c';
    }
    if (x->is_unix) {
        *p++ = 'U';
    }
    if (x->replica_reads) {
        *p++ = 'r';
    }
    if (x->no_evict) {
        *p++ = 'e';
    }
    if (p == out) {
        *p++ = 'N';
    }
    *p = '\0';
}

static size_t
argv_bytes(const struct resp_request *req)
{
    size_t n = 0;
    for (size_t i = 0; req != NULL && i < req->argc; i++) {
        n += req->argvlen[i];
    }
    return n;
}

/* multi-mem as Redis counts it (mstate.argv_len_sums): each queued
 * command's argument bytes and a pointer per argument; the queue's real
 * memory is in tot-mem. */
static size_t
queued_argv_bytes(const struct conn *x)
{
    size_t n = 0;
    for (size_t i = 0; x->multi != NULL && i < x->multi->ncmds; i++) {
        const struct resp_request *q = &x->multi->cmds[i].req;
        n += argv_bytes(q) + q->argc * sizeof(void *);
    }
    return n;
}

/* cmd=: Redis's lastcmd, the command last read from the client (EXEC
 * while and after it runs the queue, the one CLIENT PAUSE holds, NULL
 * after an unknown one). */
static const char *
shown_command(const struct conn *x, const struct resp_request *held)
{
    if (x->multi != NULL && (x->multi->flags & MULTI_RUNNING)) {
        return "exec";
    }
    if (held != NULL) {
        struct cmd *cmd = cmd_lookup(held->argv[0], held->argvlen[0]);
        return cmd != NULL ? cmd_resolve(cmd, held)->name : "NULL";
    }
    return x->last_cmd != NULL ? x->last_cmd->name : "NULL";
}

/* The request CLIENT PAUSE holds: Redis has read it (its bytes left the
 * query buffer, its argv and command are the client's); NULL if none. */
static const struct resp_request *
held_request(const struct conn *x, struct resp_request *held, size_t *raw)
{
    *raw = 0;
    return x->state == CONN_POSTPONED && resp_peek(x->parser, held, raw)
               ? held
               : NULL;
}

/* argv-mem: the running command's argument bytes, or those of the
 * blocking pop a client waits in (Redis keeps its argv); while EXEC runs
 * the queue Redis still counts EXEC's own (one argument, 4 bytes). */
static size_t
shown_argv_bytes(const struct conn *x, const struct resp_request *req)
{
    if (req != NULL && x->multi != NULL && (x->multi->flags & MULTI_RUNNING)) {
        return sizeof("exec") - 1;
    }
    return argv_bytes(req != NULL ? req : blocked_request(x));
}

/* events=w: a write waits for the socket to take it (Redis's write
 * handler); replies composed in this round and not yet tried are not. */
static bool
write_waiting(const struct conn *x)
{
    return x->home == 0 ? x->inflight > 0 : obuf_pending(&x->wbuf) > 0;
}

/* Append one CLIENT LIST line, whole whatever its length, in Redis's field
 * order; req is the running command's when x is its client (argv-mem). */
static void
describe_client(const struct conn *x, const struct resp_request *req,
                struct textbuf *t, int64_t now)
{
    struct obuf_stats ob;
    uv_os_fd_t fd = -1;
    struct resp_request hold;
    size_t held_raw;
    const struct resp_request *held = held_request(x, &hold, &held_raw);
    size_t qbuf = req != NULL ? x->batch_qbuf
                              : resp_buffered(x->parser) - held_raw;
    size_t qmem = resp_memory(x->parser);
    size_t mmem = multi_memory(x);
    char flags[16];
    struct obuf_stats wb;
    client_flags(x, flags);
    obuf_stats(&x->out, &ob);
    obuf_stats(&x->wbuf, &wb);      /* an I/O thread writes these */
    ob.obl += wb.obl;
    ob.oll += wb.oll;
    ob.omem += wb.omem;
    if (uv_fileno(&x->h.handle, &fd) != 0) {
        fd = -1;
    }
    textbuf_printf(t,
        "id=%" PRIu64 " addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld "
        "flags=%s db=%d sub=%zu psub=%zu ssub=0 multi=%lld qbuf=%zu "
        "qbuf-free=%zu argv-mem=%zu multi-mem=%zu rbs=%zu rbp=%zu obl=%zu "
        "oll=%zu omem=%zu "
        "tot-mem=%zu events=r%s cmd=%s user=default redir=-1 resp=%d "
        "lib-name=%s lib-ver=%s\n",
        x->id, x->addr, x->laddr, (int)fd, x->name ? x->name : "",
        (long long)((now - x->created_ms) / MS_PER_SEC),
        (long long)((now - x->last_interaction_ms) / MS_PER_SEC), flags,
        x->db,
        pubsub_count(x, false), pubsub_count(x, true),
        multi_open(x, x->multi) ? (long long)x->multi->ncmds : -1LL, qbuf,
        qmem > qbuf ? qmem - qbuf : 0,
        shown_argv_bytes(x, req != NULL ? req : held),
        queued_argv_bytes(x),
        x->rbuf.size,
        reply_buf_peak(&x->rbuf, client_unsent(x)), ob.obl, ob.oll,
        ob.omem, qmem + mmem + ob.omem + (x->out.head != NULL
                                              ? OBUF_CHUNK_SIZE : 0),
        write_waiting(x) ? "w" : "", shown_command(x, held), x->proto,
        x->lib_name ? x->lib_name : "", x->lib_ver ? x->lib_ver : "");
}

static void
reply_text(struct conn *c, struct textbuf *text)
{
    if (text->oom) {
        cmd_error(c, ERR_NOMEM);
    } else {
        reply_verbatim(&c->out, text->p != NULL ? text->p : "", text->len,
                       c->proto);
    }
    textbuf_free(text);
}

/* Redis's names for them (getClientTypeByName); false for another word. */
static bool
type_name(const struct resp_request *req, size_t i, enum client_type *t)
{
    static const struct {
        const char *name;
        enum client_type type;
    } names[] = { { "normal", TYPE_NORMAL }, { "slave", TYPE_REPLICA },
                  { "replica", TYPE_REPLICA }, { "master", TYPE_MASTER },
                  { "pubsub", TYPE_PUBSUB } };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if (cmd_arg_is(req, i, names[k].name)) {
            *t = names[k].type;
            return true;
        }
    }
    return false;
}

static bool
id_listed(const struct resp_request *req, size_t from, uint64_t id)
{
    for (size_t i = from; i < req->argc; i++) {
        int64_t v;
        if (num_parse_i64(req->argv[i], req->argvlen[i], &v) &&
            (uint64_t)v == id) {
            return true;
        }
    }
    return false;
}

/* A gRPC connection's line: the fields of a RESP client's, with what
 * HTTP/2 has: qbuf is the bytes of its request bodies and qbuf-free the
 * room left in their buffers, omem its answers not sent yet, tot-mem all
 * it holds (streams and HTTP/2 state too); it runs no command, has no
 * name and speaks no RESP (resp=0). */
static void
describe_grpc_client(const struct grpc_client *g, struct textbuf *t,
                     int64_t now)
{
    textbuf_printf(t,
        "id=%" PRIu64 " addr=%s laddr=%s fd=%d name= age=%lld idle=%lld "
        "flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=%zu qbuf-free=%zu "
        "argv-mem=0 multi-mem=0 obl=0 oll=0 omem=%zu tot-mem=%zu "
        "events=r%s cmd=NULL user=default redir=-1 resp=0 lib-name= "
        "lib-ver=\n",
        g->id, g->addr, g->laddr, g->fd,
        (long long)((now - g->created_ms) / MS_PER_SEC),
        (long long)((now - g->last_ms) / MS_PER_SEC), g->qbuf, g->qbuf_free,
        g->omem,
        g->tot_mem, g->omem > 0 ? "w" : "");
}

struct list_filter {
    const struct resp_request *req;
    bool by_id, by_type;
    enum client_type type;
    struct textbuf *text;
    int64_t now;
};

static void
list_grpc_client(const struct grpc_client *g, void *arg)
{
    struct list_filter *f = arg;
    if ((!f->by_id || id_listed(f->req, 3, g->id)) &&
        (!f->by_type || f->type == TYPE_NORMAL)) {
        describe_grpc_client(g, f->text, f->now);
    }
}

void
client_list_command(struct conn *c, struct resp_request *req)
{
    bool by_id = false, by_type = false;
    enum client_type type = TYPE_NORMAL;
    if (req->argc >= 4 && cmd_arg_is(req, 2, "ID")) {
        for (size_t i = 3; i < req->argc; i++) {
            int64_t v;
            if (!num_parse_i64(req->argv[i], req->argvlen[i], &v) || v <= 0) {
                cmd_error(c, "ERR Invalid client ID");
                return;
            }
        }
        by_id = true;
    } else if (req->argc == 4 && cmd_arg_is(req, 2, "TYPE")) {
        if (!type_name(req, 3, &type)) {
            cmd_errorf(c, ERR_CLIENT_TYPE, req->argv[3]);
            return;
        }
        by_type = true;
    } else if (req->argc != 2) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    struct textbuf text = { 0 };
    int64_t now = clock_loop_ms();
    /* Oldest first, as Redis lists them (srv.clients has the newest
     * first). */
    struct conn *last = srv.clients;
    while (last != NULL && last->next != NULL) {
        last = last->next;
    }
    for (struct conn *x = last; x != NULL; x = x->prev) {
        if ((!by_id || id_listed(req, 3, x->id)) &&
            (!by_type || type_of(x) == type)) {
            describe_client(x, x == c ? req : NULL, &text, now);
        }
    }
    struct list_filter f = { req, by_id, by_type, type, &text, now };
    grpc_each_client(list_grpc_client, &f);
    reply_text(c, &text);
}

void
client_info_command(struct conn *c, struct resp_request *req)
{
    struct textbuf text = { 0 };
    describe_client(c, req, &text, clock_loop_ms());
    reply_text(c, &text);
}

/* ---- KILL ------------------------------------------------------------- */

/* CLIENT KILL filters, as Redis 7.4: ID, TYPE, ADDR, LADDR, USER, SKIPME,
 * MAXAGE. */
struct kill_filter {
    uint64_t id;                /* 0 = any */
    enum client_type type;
    bool has_type;
    const char *addr;
    const char *laddr;
    int64_t max_age;            /* seconds; 0 = any */
    bool skipme;
};

static bool
kill_matches(const struct kill_filter *f, const struct conn *self,
             const struct conn *x, int64_t now)
{
    return (f->id == 0 || x->id == f->id) &&
           (!f->has_type || type_of(x) == f->type) &&
           (f->addr == NULL || strcmp(f->addr, x->addr) == 0) &&
           (f->laddr == NULL || strcmp(f->laddr, x->laddr) == 0) &&
           (!f->skipme || x != self) &&
           (f->max_age == 0 ||
            (now - x->created_ms) / MS_PER_SEC >= f->max_age);
}

struct grpc_kill {
    const struct kill_filter *f;
    int64_t now;
};

/* A gRPC connection is of type normal and never the caller (SKIPME). */
static bool
grpc_kill_matches(const struct grpc_client *g, void *arg)
{
    const struct grpc_kill *k = arg;
    const struct kill_filter *f = k->f;
    return (f->id == 0 || g->id == f->id) &&
           (!f->has_type || f->type == TYPE_NORMAL) &&
           (f->addr == NULL || strcmp(f->addr, g->addr) == 0) &&
           (f->laddr == NULL || strcmp(f->laddr, g->laddr) == 0) &&
           (f->max_age == 0 ||
            (k->now - g->created_ms) / MS_PER_SEC >= f->max_age);
}

/* One "option value" pair of the new form: false after replying. */
static bool
parse_kill_option(struct conn *c, const struct resp_request *req, size_t i,
                  struct kill_filter *f)
{
    const char *val = req->argv[i + 1];
    size_t len = req->argvlen[i + 1];
    int64_t v;
    if (cmd_arg_is(req, i, "ID")) {
        if (!num_parse_i64(val, len, &v) || v <= 0) {
            cmd_error(c, "ERR client-id should be greater than 0");
            return false;
        }
        f->id = (uint64_t)v;
    } else if (cmd_arg_is(req, i, "MAXAGE")) {
        if (!num_parse_i64(val, len, &v)) {
            cmd_error(c, "ERR maxage is not an integer or out of range");
            return false;
        }
        if (v <= 0) {
            cmd_error(c, "ERR maxage should be greater than 0");
            return false;
        }
        f->max_age = v;
    } else if (cmd_arg_is(req, i, "TYPE")) {
        if (!type_name(req, i + 1, &f->type)) {
            cmd_errorf(c, ERR_CLIENT_TYPE, val);
            return false;
        }
        f->has_type = true;
    } else if (cmd_arg_is(req, i, "ADDR")) {
        f->addr = val;
    } else if (cmd_arg_is(req, i, "LADDR")) {
        f->laddr = val;
    } else if (cmd_arg_is(req, i, "USER")) {
        if (strcmp(val, "default") != 0) {
            cmd_errorf(c, "ERR No such user '%.128s'", val);
            return false;
        }
    } else if (cmd_arg_is(req, i, "SKIPME") &&
               (cmd_arg_is(req, i + 1, "yes") || cmd_arg_is(req, i + 1, "no"))) {
        f->skipme = cmd_arg_is(req, i + 1, "yes");
    } else {
        cmd_error(c, ERR_SYNTAX);
        return false;
    }
    return true;
}

static bool
parse_kill_filter(struct conn *c, const struct resp_request *req,
                  struct kill_filter *f)
{
    memset(f, 0, sizeof(*f));
    f->skipme = true;
    for (size_t i = 2; i < req->argc; i += 2) {
        if (i + 1 >= req->argc) {
            cmd_error(c, ERR_SYNTAX);
            return false;
        }
        if (!parse_kill_option(c, req, i, f)) {
            return false;
        }
    }
    return true;
}

void
client_kill_command(struct conn *c, struct resp_request *req)
{
    struct kill_filter f;
    bool old_form = req->argc == 3;
    if (old_form) {
        /* CLIENT KILL addr:port: +OK or an error; may kill itself. */
        memset(&f, 0, sizeof(f));
        f.addr = req->argv[2];
    } else if (!parse_kill_filter(c, req, &f)) {
        return;
    }
    /* Marked here, closed by conn.c once this command returns; the
     * caller itself only after its reply. */
    int64_t killed = 0, now = clock_loop_ms();
    for (struct conn *x = srv.clients; x != NULL; x = x->next) {
        if (!x->killed && kill_matches(&f, c, x, now)) {
            if (x == c) {
                c->requests |= CLIENT_CLOSE_AFTER_REPLY;
            } else {
                x->killed = true;
            }
            c->requests |= CLIENT_KILLS;
            killed++;
        }
    }
    struct grpc_kill k = { &f, now };
    killed += (int64_t)grpc_kill(grpc_kill_matches, &k);
    if (!old_form) {
        reply_int(&c->out, killed);
    } else if (killed == 0) {
        cmd_error(c, "ERR No such client");
    } else {
        reply_ok(&c->out);
    }
}

/* ---- REPLY, PAUSE, UNPAUSE, UNBLOCK, NO-EVICT ------------------------- */

/* conn.c drops the replies the mode says; OFF and SKIP answer nothing
 * themselves, ON answers +OK (sent even after OFF). */
void
client_reply_command(struct conn *c, struct resp_request *req)
{
    if (cmd_arg_is(req, 2, "on")) {
        c->reply_mode = CLIENT_REPLY_ON;
        reply_ok(&c->out);
    } else if (cmd_arg_is(req, 2, "off")) {
        c->reply_mode = CLIENT_REPLY_OFF;
    } else if (cmd_arg_is(req, 2, "skip")) {
        if (c->reply_mode != CLIENT_REPLY_OFF) {
            c->reply_mode = CLIENT_REPLY_SKIP_NEXT;
        }
    } else {
        cmd_error(c, ERR_SYNTAX);
    }
}

/* CLIENT PAUSE ms [WRITE|ALL]: until then conn.c holds the commands of
 * every client (ALL) or those that write (WRITE); a second pause only
 * lengthens it or makes it stricter, as Redis. */
void
client_pause_command(struct conn *c, struct resp_request *req)
{
    bool all = true;
    int64_t ms;
    if (req->argc > 4) {
        cmd_error_subcommand_syntax(c, req);
        return;
    }
    if (req->argc == 4) {
        if (!cmd_arg_is(req, 3, "write") && !cmd_arg_is(req, 3, "all")) {
            cmd_error(c, "ERR CLIENT PAUSE mode must be WRITE or ALL");
            return;
        }
        all = cmd_arg_is(req, 3, "all");
    }
    if (!cmd_arg_timeout(c, req, 2, &ms)) {
        return;
    }
    /* Redis 7.0 answers +OK to a pause past the clock's range too; it
     * pauses until CLIENT UNPAUSE here (the end saturates), where Redis's
     * end wraps negative and it does not pause at all. */
    int64_t end;
    if (__builtin_add_overflow(clock_loop_ms(), ms, &end)) {
        end = INT64_MAX;
    }
    if (ms > 0) {
        srv.pause_all = srv.pause_end_ms == 0 ? all : srv.pause_all || all;
        if (end > srv.pause_end_ms) {
            srv.pause_end_ms = end;
        }
    }
    reply_ok(&c->out);
}

void
client_unpause_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    srv.pause_end_ms = 0;
    srv.pause_all = false;
    c->requests |= CLIENT_UNPAUSES;
    reply_ok(&c->out);
}

/* A client blocked on keys (BLPOP...) or in WAIT is answered as its
 * timeout would (a null array, WAIT's count of replicas) or with
 * -UNBLOCKED, and its pipeline goes on; :0 for any other. */
void
client_unblock_command(struct conn *c, struct resp_request *req)
{
    int64_t id;
    if (req->argc > 4) {
        cmd_error_subcommand_syntax(c, req);
        return;
    }
    if (req->argc == 4 && !cmd_arg_is(req, 3, "timeout") &&
        !cmd_arg_is(req, 3, "error")) {
        cmd_error(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        return;
    }
    if (!num_parse_i64(req->argv[2], req->argvlen[2], &id)) {
        cmd_error(c, ERR_NOT_INTEGER);
        return;
    }
    struct conn *x = srv.clients;
    while (x != NULL && x->id != (uint64_t)id) {
        x = x->next;
    }
    bool error = req->argc == 4 && cmd_arg_is(req, 3, "error");
    if (x == NULL || x == c || x->state != CONN_BLOCKED) {
        reply_int(&c->out, 0);
        return;
    }
    if (error) {
        cmd_error(x, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
    }
    if (blocked_on_keys(x)) {
        if (error) {
            blocked_end(x);
        } else {
            blocked_time_out(x);
        }
    } else {
        (void)repl_unwait(x, !error);   /* WAIT: CONN_BLOCKED's other use */
    }
    reply_int(&c->out, 1);
}

void
client_no_evict_command(struct conn *c, struct resp_request *req)
{
    /* cellgate never evicts clients; the flag is kept for CLIENT LIST. */
    if (!cmd_arg_is(req, 2, "on") && !cmd_arg_is(req, 2, "off")) {
        cmd_error(c, ERR_SYNTAX);
        return;
    }
    c->no_evict = cmd_arg_is(req, 2, "on");     /* shown as flag e */
    reply_ok(&c->out);
}

/* ---- RESET ------------------------------------------------------------ */

/* RESET: the connection as new, as Redis's clearClientConnectionState():
 * no transaction or watched keys, out of MONITOR and every channel and
 * pattern, database 0, RESP2, no
 * name, replies on, and authenticated again only without requirepass. */
void
reset_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    multi_discard(c);
    if (c->monitor) {
        monitor_remove(c);
    }
    pubsub_forget(c);
    c->db = 0;
    (void)keyspace_select(0);
    c->proto = 2;
    (void)client_set_name(c, "", 0);
    c->reply_mode = CLIENT_REPLY_ON;
    c->authenticated = srv.conf.requirepass.len == 0;
    c->requests |= CLIENT_DEAUTHENTICATED;
    reply_status(&c->out, "RESET");
}

/* ---- MONITOR ---------------------------------------------------------- */

void
monitor_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    if (c->monitor) {
        return;                 /* as Redis: ignored, no reply */
    }
    if (multi_open(c, c->multi)) {
        /* Redis: a transaction expects one reply per command. */
        cmd_error(c, "ERR MONITOR isn't allowed for DENY BLOCKING client");
        return;
    }
    monitor_add(c);
    reply_ok(&c->out);
}
