/*
 * cmd_command.c - COMMAND and its subcommands: the command table as Redis 7
 * describes itself, so cluster-aware clients find key positions and
 * redis-cli builds its hints.
 */
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/cmd.h"
#include "server/conn.h"
#include "server/handlers.h"

/* Number of space-separated words in s. */
static size_t
word_count(const char *s)
{
    size_t n = 0;
    while (s != NULL && *s != '\0') {
        while (*s == ' ') {
            s++;
        }
        if (*s == '\0') {
            break;
        }
        n++;
        s += strcspn(s, " ");
    }
    return n;
}

/* Emit each word of s as a simple string (or bulk with prefix '@'). */
static void
reply_words(struct conn *c, const char *s, bool acl)
{
    char word[64];
    while (s != NULL && *s != '\0') {
        while (*s == ' ') {
            s++;
        }
        size_t n = strcspn(s, " ");
        if (n == 0) {
            break;
        }
        if (n > sizeof(word) - 2) {
            n = sizeof(word) - 2;
        }
        size_t off = 0;
        if (acl) {
            word[off++] = '@';
        }
        memcpy(word + off, s, n);
        word[off + n] = '\0';
        reply_status(&c->out, word);
        s += strcspn(s, " ");
    }
}

static size_t
subcommand_count(const struct cmd *cmd)
{
    size_t n = 0;
    for (const struct cmd *s = cmd->subcommands; s != NULL && s->name; s++) {
        n++;
    }
    return n;
}

static void reply_entry(struct conn *c, const struct cmd *cmd);

/* Element 9: key specifications, Redis 7's layout. */
static void
reply_key_specs(struct conn *c, const struct cmd *cmd)
{
    int proto = c->proto;
    if (cmd->first_key == 0) {
        reply_array(&c->out, 0);
        return;
    }
    reply_array(&c->out, 1);
    reply_map(&c->out, 3, proto);
    reply_bulkz(&c->out, "flags");
    reply_set(&c->out, word_count(cmd->key_flags), proto);
    reply_words(c, cmd->key_flags, false);
    reply_bulkz(&c->out, "begin_search");
    reply_map(&c->out, 2, proto);
    reply_bulkz(&c->out, "type");
    reply_bulkz(&c->out, "index");
    reply_bulkz(&c->out, "spec");
    reply_map(&c->out, 1, proto);
    reply_bulkz(&c->out, "index");
    reply_int(&c->out, cmd->first_key);
    reply_bulkz(&c->out, "find_keys");
    reply_map(&c->out, 2, proto);
    reply_bulkz(&c->out, "type");
    reply_bulkz(&c->out, "range");
    reply_bulkz(&c->out, "spec");
    reply_map(&c->out, 3, proto);
    reply_bulkz(&c->out, "lastkey");
    reply_int(&c->out, cmd->last_key < 0 ? -1 : cmd->last_key - cmd->first_key);
    reply_bulkz(&c->out, "keystep");
    reply_int(&c->out, cmd->key_step);
    reply_bulkz(&c->out, "limit");
    reply_int(&c->out, 0);
}

/* The 10-field entry: name, arity, flags, first key, last key, step, ACL
 * categories, tips, key specs, subcommands. */
static void
reply_entry(struct conn *c, const struct cmd *cmd)
{
    reply_array(&c->out, 10);
    reply_bulkz(&c->out, cmd->name);
    reply_int(&c->out, cmd->arity);
    reply_set(&c->out, word_count(cmd->flags), c->proto);
    reply_words(c, cmd->flags, false);
    reply_int(&c->out, cmd->first_key);
    reply_int(&c->out, cmd->last_key);
    reply_int(&c->out, cmd->key_step);
    reply_set(&c->out, word_count(cmd->acl), c->proto);
    reply_words(c, cmd->acl, true);
    reply_array(&c->out, 0);
    reply_key_specs(c, cmd);
    reply_array(&c->out, subcommand_count(cmd));
    for (const struct cmd *s = cmd->subcommands; s != NULL && s->name; s++) {
        reply_entry(c, s);
    }
}

void
cmd_command(struct conn *c, struct resp_request *req)
{
    size_t n;
    struct cmd *t;
    if (req->argc >= 2) {
        cmd_dispatch_subcommand(c, req, cmd_lookup("command", 7));
        return;
    }
    t = cmd_table(&n);
    reply_array(&c->out, n);
    for (size_t i = 0; i < n; i++) {
        reply_entry(c, &t[i]);
    }
}

void
cmd_command_count(struct conn *c, struct resp_request *req)
{
    size_t n;
    (void)req;
    cmd_table(&n);
    reply_int(&c->out, (int64_t)n);
}

/* A top-level command, or "parent|sub" for a subcommand. */
static const struct cmd *
find_any(const char *name, size_t len)
{
    const char *bar = memchr(name, '|', len);
    if (bar == NULL) {
        return cmd_lookup(name, len);
    }
    const struct cmd *parent = cmd_lookup(name, (size_t)(bar - name));
    if (parent == NULL || parent->subcommands == NULL) {
        return NULL;
    }
    for (const struct cmd *s = parent->subcommands; s->name != NULL; s++) {
        if (strlen(s->name) == len && strncasecmp(s->name, name, len) == 0) {
            return s;
        }
    }
    return NULL;
}

void
cmd_command_info(struct conn *c, struct resp_request *req)
{
    size_t n;
    struct cmd *t;
    if (req->argc == 2) {
        t = cmd_table(&n);
        reply_array(&c->out, n);
        for (size_t i = 0; i < n; i++) {
            reply_entry(c, &t[i]);
        }
        return;
    }
    reply_array(&c->out, req->argc - 2);
    for (size_t i = 2; i < req->argc; i++) {
        const struct cmd *cmd = find_any(req->argv[i], req->argvlen[i]);
        if (cmd == NULL) {
            reply_null(&c->out, c->proto);
        } else {
            reply_entry(c, cmd);
        }
    }
}

/* ---- COMMAND DOCS ----------------------------------------------------- */

/* Arguments are "name:type" words; '?' = optional, '*' = multiple. */
static void
reply_doc_args(struct conn *c, const char *args)
{
    int proto = c->proto;
    reply_array(&c->out, word_count(args));
    while (args != NULL && *args != '\0') {
        while (*args == ' ') {
            args++;
        }
        size_t n = strcspn(args, " ");
        if (n == 0) {
            break;
        }
        char word[64];
        if (n >= sizeof(word)) {
            n = sizeof(word) - 1;
        }
        memcpy(word, args, n);
        word[n] = '\0';
        args += strcspn(args, " ");
        char *w = word;
        bool optional = false, multiple = false;
        for (; *w == '?' || *w == '*'; w++) {
            optional |= *w == '?';
            multiple |= *w == '*';
        }
        char *colon = strchr(w, ':');
        const char *type = colon != NULL ? colon + 1 : "string";
        if (colon != NULL) {
            *colon = '\0';
        }
        bool token = strcmp(type, "pure-token") == 0;
        size_t fields = 2 + (token ? 1 : 0) + (optional || multiple ? 1 : 0);
        reply_map(&c->out, fields, proto);
        reply_bulkz(&c->out, "name");
        reply_bulkz(&c->out, w);
        reply_bulkz(&c->out, "type");
        reply_bulkz(&c->out, type);
        if (token) {
            reply_bulkz(&c->out, "token");
            reply_bulkz(&c->out, w);
        }
        if (optional || multiple) {
            reply_bulkz(&c->out, "flags");
            reply_set(&c->out, (size_t)optional + (size_t)multiple, proto);
            if (optional) {
                reply_status(&c->out, "optional");
            }
            if (multiple) {
                reply_status(&c->out, "multiple");
            }
        }
    }
}

static void
reply_doc(struct conn *c, const struct cmd *cmd)
{
    int proto = c->proto;
    size_t subs = subcommand_count(cmd);
    bool has_args = cmd->args != NULL && cmd->args[0] != '\0';
    reply_bulkz(&c->out, cmd->name);
    reply_map(&c->out, 3 + (has_args ? 1 : 0) + (subs ? 1 : 0), proto);
    reply_bulkz(&c->out, "summary");
    reply_bulkz(&c->out, cmd->summary);
    reply_bulkz(&c->out, "since");
    reply_bulkz(&c->out, cmd->since);
    reply_bulkz(&c->out, "group");
    reply_bulkz(&c->out, cmd->group);
    if (has_args) {
        reply_bulkz(&c->out, "arguments");
        reply_doc_args(c, cmd->args);
    }
    if (subs) {
        reply_bulkz(&c->out, "subcommands");
        reply_map(&c->out, subs, proto);
        for (const struct cmd *s = cmd->subcommands; s->name != NULL; s++) {
            reply_doc(c, s);
        }
    }
}

void
cmd_command_docs(struct conn *c, struct resp_request *req)
{
    size_t n;
    struct cmd *t = cmd_table(&n);
    if (req->argc == 2) {
        reply_map(&c->out, n, c->proto);
        for (size_t i = 0; i < n; i++) {
            reply_doc(c, &t[i]);
        }
        return;
    }
    size_t found = 0;
    for (size_t i = 2; i < req->argc; i++) {
        found += find_any(req->argv[i], req->argvlen[i]) != NULL;
    }
    reply_map(&c->out, found, c->proto);
    for (size_t i = 2; i < req->argc; i++) {
        const struct cmd *cmd = find_any(req->argv[i], req->argvlen[i]);
        if (cmd != NULL) {
            reply_doc(c, cmd);
        }
    }
}

void
cmd_command_list(struct conn *c, struct resp_request *req)
{
    size_t n;
    struct cmd *t = cmd_table(&n);
    if (req->argc != 2) {
        conn_error(c, "ERR syntax error");
        return;
    }
    reply_array(&c->out, n);
    for (size_t i = 0; i < n; i++) {
        reply_bulkz(&c->out, t[i].name);
    }
}

void
cmd_command_help(struct conn *c, struct resp_request *req)
{
    static const char *const lines[] = {
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)", "    Return details about all commands.",
        "COUNT", "    Return the total number of commands in this server.",
        "LIST", "    Return a list of all commands in this server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple commands.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple commands.",
        "HELP", "    Print this help.", NULL
    };
    (void)req;
    cmd_reply_help(c, lines);
}
