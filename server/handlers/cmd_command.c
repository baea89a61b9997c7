/*
 * cmd_command.c - COMMAND and its subcommands: the command table as Redis 7
 * describes itself, so cluster-aware clients find key positions and
 * redis-cli builds its hints.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/cmd.h"
#include "server/client.h"
#include "server/errors.h"
#include "lib/glob.h"
#include "lib/textbuf.h"
#include "server/handlers/handlers.h"

/* Number of space-separated words in s (NULL: none). */
static size_t
word_count(const char *s)
{
    size_t n = 0;
    while (s != NULL && *s != '\0') {
        s += strspn(s, " ");
        if (*s == '\0') {
            break;
        }
        n++;
        s += strcspn(s, " ");
    }
    return n;
}

/* Emit each word of s (NULL: none) as a simple string (with prefix '@'
 * for acl). */
static void
reply_words(struct conn *c, const char *s, bool acl)
{
    char word[64];
    while (s != NULL && *s != '\0') {
        s += strspn(s, " ");
        size_t n = strcspn(s, " ");
        if (n == 0) {
            break;
        }
        size_t w = n > sizeof(word) - 2 ? sizeof(word) - 2 : n;
        size_t off = 0;
        if (acl) {
            word[off++] = '@';
        }
        memcpy(word + off, s, w);
        word[off + w] = '\0';
        reply_status(&c->out, word);
        s += n;
    }
}

/* Flag bits as Redis shows them: a set of the words[i] of the bits i
 * (i < count) set, in that order. */
static void
reply_flag_words(struct conn *c, unsigned flags, const char *const *words,
                 int count)
{
    flags &= (1u << count) - 1;
    reply_set(&c->out, (size_t)__builtin_popcount(flags), c->proto);
    for (int i = 0; i < count; i++) {
        if (flags & (1u << i)) {
            reply_status(&c->out, words[i]);
        }
    }
}

/* A key spec's flags: Redis's words, in Redis's order (cmd.h). */
static void
reply_key_flags(struct conn *c, unsigned flags)
{
    reply_flag_words(c, flags, cmd_key_flag_words, CMD_KEY_FLAG_COUNT);
}

/* ---- key specs ----------------------------------------------------------
 * A row's key specs (cmd.h): one covers the row's keys (first_key,
 * last_key, key_step); with several, spec i is the one key at first_key +
 * i (RENAME key newkey), the last one running to the end of the line
 * when last_key is -1 (SINTERSTORE destination key...). A keynum row
 * (EVAL's) has one, or its own key's and then the keynum one
 * (ZUNIONSTORE's); a keyword row its own key's and then the keyword one
 * (MIGRATE's). */

/* The key spec that covers argument index `arg` of a command line (a key
 * position of cmd), and its flags as Redis reports them for this line:
 * SET's depend on its GET option, as Redis's setGetKeys() has it; keys
 * found without the spec (cmd_keys.flagged) have none. */
static struct cmd_key_spec
key_spec_of_arg(const struct cmd *cmd, int arg, char **argv, size_t argc,
                bool flagged)
{
    if (!flagged) {
        return (struct cmd_key_spec){ 0, NULL };
    }
    size_t n = cmd_key_spec_count(cmd);
    size_t i = n > 1 && arg > cmd->first_key ? (size_t)(arg - cmd->first_key) : 0;
    if (cmd->keyword != NULL) {
        i = 0;          /* Redis's migrateGetKeys() gives each key spec 0's */
    }
    struct cmd_key_spec ks = cmd->key_specs[i < n ? i : n - 1];
    if (strcmp(cmd->name, "set") == 0) {
        bool get = false;
        for (size_t a = 3; a < argc; a++) {
            get |= strcasecmp(argv[a], "get") == 0;
        }
        ks.flags = get ? CMD_KEY_RW | CMD_KEY_ACCESS | CMD_KEY_UPDATE
                       : CMD_KEY_OW | CMD_KEY_UPDATE;
    }
    return ks;
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

/* Element 8: the command's tips, a set of bulk strings as Redis has it. */
static void
reply_tips(struct conn *c, const char *tips)
{
    reply_set(&c->out, word_count(tips), c->proto);
    while (tips != NULL && *tips != '\0') {
        size_t n = strcspn(tips, " ");
        if (n > 0) {
            reply_bulk(&c->out, tips, n);
        }
        tips += n + (tips[n] == ' ');
    }
}

/* One part of a key spec (begin_search, find_keys): its name, then a map
 * of its type and a spec map of nfields fields (the caller's to write). */
static void
reply_spec_part(struct conn *c, const char *part, const char *type,
                size_t nfields)
{
    reply_bulkz(&c->out, part);
    reply_map(&c->out, 2, c->proto);
    reply_bulkz(&c->out, "type");
    reply_bulkz(&c->out, type);
    reply_bulkz(&c->out, "spec");
    reply_map(&c->out, nfields, c->proto);
}

/* Spec i of n's find_keys: one key of several (RENAME's, ZUNIONSTORE's
 * destination), but the last, which runs to the end of the line when the
 * row's keys do (SINTERSTORE dst key...), or the row's whole range. */
static void
reply_range_spec(struct conn *c, const struct cmd *cmd, size_t n, size_t i)
{
    bool one = n > 1 && (i + 1 < n || cmd->last_key >= 0);
    reply_spec_part(c, "find_keys", "range", 3);
    reply_bulkz(&c->out, "lastkey");
    reply_int(&c->out, one ? 0
                       : cmd->last_key < 0 ? cmd->last_key
                       : cmd->last_key - cmd->first_key);
    reply_bulkz(&c->out, "keystep");
    reply_int(&c->out, n > 1 ? 1 : cmd->key_step);
    reply_bulkz(&c->out, "limit");
    reply_int(&c->out, 0);
}

/* A keyword spec's search and keys: from the argument after the word to
 * the end of the line (MIGRATE's KEYS). */
static void
reply_keyword_spec(struct conn *c, const struct cmd_keyword *kw)
{
    reply_spec_part(c, "begin_search", "keyword", 2);
    reply_bulkz(&c->out, "keyword");
    reply_bulkz(&c->out, kw->word);
    reply_bulkz(&c->out, "startfrom");
    reply_int(&c->out, kw->startfrom);
    reply_spec_part(c, "find_keys", "range", 3);
    reply_bulkz(&c->out, "lastkey");
    reply_int(&c->out, -1);
    reply_bulkz(&c->out, "keystep");
    reply_int(&c->out, 1);
    reply_bulkz(&c->out, "limit");
    reply_int(&c->out, 0);
}

/* Element 9: key specifications, Redis 7's layout. A keynum row's keynum
 * spec is its last (after ZUNIONSTORE's destination). */
static void
reply_key_specs(struct conn *c, const struct cmd *cmd)
{
    int proto = c->proto;
    size_t n = cmd_key_spec_count(cmd);
    struct cmd_keynum kn;
    bool keynum = cmd_keynum_spec(cmd, &kn);
    /* Redis 7.0 answers the key specs as a set in RESP3. */
    reply_set(&c->out, n, proto);
    for (size_t i = 0; i < n; i++) {
        const struct cmd_key_spec *ks = &cmd->key_specs[i];
        reply_map(&c->out, 3 + (ks->notes != NULL), proto);
        if (ks->notes != NULL) {
            reply_bulkz(&c->out, "notes");
            reply_bulkz(&c->out, ks->notes);
        }
        reply_bulkz(&c->out, "flags");
        reply_key_flags(c, ks->flags);
        if (cmd->keyword != NULL && i == n - 1) {
            reply_keyword_spec(c, cmd->keyword);
            continue;
        }
        reply_spec_part(c, "begin_search", "index", 1);
        reply_bulkz(&c->out, "index");
        if (keynum && i == n - 1) {
            reply_int(&c->out, kn.index);
            reply_spec_part(c, "find_keys", "keynum", 3);
            reply_bulkz(&c->out, "keynumidx");
            reply_int(&c->out, kn.keynumidx);
            reply_bulkz(&c->out, "firstkey");
            reply_int(&c->out, kn.firstkey);
            reply_bulkz(&c->out, "keystep");
            reply_int(&c->out, kn.keystep);
            continue;
        }
        reply_int(&c->out, cmd->first_key + (n > 1 ? (int)i : 0));
        reply_range_spec(c, cmd, n, i);
    }
}

/* The 10-field entry: name, arity, flags, first key, last key, step, ACL
 * categories, tips, key specs, subcommands. */
static void
reply_entry(struct conn *c, const struct cmd *cmd)
{
    reply_array(&c->out, 10);
    reply_bulkz(&c->out, cmd->name);
    reply_int(&c->out, cmd->arity);
    reply_flag_words(c, cmd->flags, cmd_flag_words, CMD_FLAG_COUNT);
    reply_int(&c->out, cmd->first_key);
    reply_int(&c->out, cmd->last_key);
    reply_int(&c->out, cmd->key_step);
    reply_set(&c->out, word_count(cmd->acl), c->proto);
    reply_words(c, cmd->acl, true);
    reply_tips(c, cmd->tips);
    reply_key_specs(c, cmd);
    /* In RESP3, as Redis 7.0: no subcommands is an empty set, some are an
     * array. */
    if (cmd->subcommands == NULL) {
        reply_set(&c->out, 0, c->proto);
        return;
    }
    reply_array(&c->out, subcommand_count(cmd));
    for (const struct cmd *s = cmd->subcommands; s != NULL && s->name; s++) {
        reply_entry(c, s);
    }
}

void
command_command(struct conn *c, struct resp_request *req)
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
command_count_command(struct conn *c, struct resp_request *req)
{
    size_t n;
    (void)req;
    cmd_table(&n);
    reply_int(&c->out, (int64_t)n);
}

/* The subcommand `sub` (len bytes, any case) of a container, or NULL. */
static const struct cmd *
find_sub(const struct cmd *parent, const char *sub, size_t len)
{
    if (parent == NULL || parent->subcommands == NULL) {
        return NULL;
    }
    size_t plen = strlen(parent->name);
    for (const struct cmd *s = parent->subcommands; s->name != NULL; s++) {
        const char *sname = s->name + plen + 1;
        if (strlen(sname) == len && strncasecmp(sname, sub, len) == 0) {
            return s;
        }
    }
    return NULL;
}

/* A top-level command, or "parent|sub" for a subcommand. */
static const struct cmd *
find_any(const char *name, size_t len)
{
    const char *bar = memchr(name, '|', len);
    if (bar == NULL) {
        return cmd_lookup(name, len);
    }
    size_t plen = (size_t)(bar - name);
    return find_sub(cmd_lookup(name, plen), bar + 1, len - plen - 1);
}

void
command_info_command(struct conn *c, struct resp_request *req)
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

/* Where the arguments of a command are: which key argument comes next, and
 * how many key specs there are. Redis gives each key argument the index
 * of its key spec; here the i-th key argument has spec i (the last one
 * when there are fewer). */
struct doc_keys {
    size_t next;
    size_t specs;
};

/* The "key_spec_index" field of a key argument, 0 or 1 fields replied. */
static size_t
doc_key_fields(const struct doc_keys *k, const char *type, size_t len)
{
    return k->specs > 0 && len == 3 && memcmp(type, "key", 3) == 0;
}

static void
reply_doc_key_index(struct conn *c, struct doc_keys *k)
{
    reply_bulkz(&c->out, "key_spec_index");
    reply_int(&c->out, (int64_t)(k->next < k->specs ? k->next : k->specs - 1));
    k->next++;
}

/* Redis names a keyword argument after its token, in lower case ("nx"
 * for NX): the len bytes at s so, NUL-terminated in out (size bytes). */
static const char *
token_name(char *out, size_t size, const char *s, size_t len)
{
    if (len >= size) {
        len = size - 1;
    }
    for (size_t i = 0; i < len; i++) {
        out[i] = (char)tolower((unsigned char)s[i]);
    }
    out[len] = '\0';
    return out;
}

static void
reply_doc_flags(struct conn *c, bool optional, bool multiple)
{
    reply_bulkz(&c->out, "flags");
    reply_set(&c->out, (size_t)optional + (size_t)multiple, c->proto);
    if (optional) {
        reply_status(&c->out, "optional");
    }
    if (multiple) {
        reply_status(&c->out, "multiple");
    }
}

/* The nested arguments of a "oneof=..." or "block=..." argument, '|'
 * between two, each "[?][TOKEN=]name[/type]" ('?': optional): a bare
 * word in a oneof, or one of type pure-token, is a
 * keyword (pure token, "oneof=NX|XX"), a value takes its type after '/'
 * ("EX=seconds/integer", "key/key"), integer when none ("block=a|b").
 * redis-cli 7.0 walks the nested arguments of every oneof and block and
 * crashes when they are missing. */
static void
reply_doc_nested(struct conn *c, const char *list, bool oneof,
                 struct doc_keys *keys)
{
    size_t n = 1;
    for (const char *p = list; *p != '\0'; p++) {
        n += *p == '|';
    }
    reply_array(&c->out, n);
    while (n-- > 0) {
        bool optional = *list == '?';
        list += optional;
        size_t len = strcspn(list, "|");
        const char *name = list, *token = NULL, *type = "integer";
        size_t name_len = len, token_len = 0, type_len = strlen(type);
        const char *eq = memchr(list, '=', len);
        if (eq != NULL) {
            token = list;
            token_len = (size_t)(eq - list);
            name = eq + 1;
            name_len = len - token_len - 1;
        }
        const char *slash = memchr(name, '/', name_len);
        if (slash != NULL) {
            type = slash + 1;
            type_len = (size_t)(name + name_len - type);
            name_len = (size_t)(slash - name);
        }
        char lower[64];
        bool pure = type_len == 10 && memcmp(type, "pure-token", 10) == 0;
        if ((oneof && eq == NULL && slash == NULL) || pure) {
            token = list;
            token_len = pure ? name_len : len;
            name = token_name(lower, sizeof(lower), list, token_len);
            name_len = strlen(name);
            type = "pure-token";
            type_len = strlen(type);
        }
        size_t key = doc_key_fields(keys, type, type_len);
        reply_map(&c->out, 2 + key + (token != NULL) + optional, c->proto);
        reply_bulkz(&c->out, "name");
        reply_bulk(&c->out, name, name_len);
        reply_bulkz(&c->out, "type");
        reply_bulk(&c->out, type, type_len);
        if (key) {
            reply_doc_key_index(c, keys);
        }
        if (token != NULL) {
            reply_bulkz(&c->out, "token");
            reply_bulk(&c->out, token, token_len);
        }
        if (optional) {
            reply_doc_flags(c, true, false);
        }
        list += len + (list[len] == '|');
    }
}

/* One argument from its word (modified in place): "name:type", split at
 * the last colon (so "ip:port:string" names ip:port). Prefixes: '?'
 * optional, '*' multiple. "TOKEN=name:type" is a value after a keyword
 * (redis-cli shows [COST n]), "TOKEN:pure-token" a keyword alone (named
 * after it in lower case, as Redis); type "oneof=..." is a choice,
 * "block=..." a group (their members: see reply_doc_nested). */
static void
reply_doc_arg(struct conn *c, char *w, struct doc_keys *keys)
{
    bool optional = false, multiple = false;
    for (; *w == '?' || *w == '*'; w++) {
        optional |= *w == '?';
        multiple |= *w == '*';
    }
    char *colon = strrchr(w, ':');
    const char *type = colon != NULL ? colon + 1 : "string";
    if (colon != NULL) {
        *colon = '\0';
    }
    char *nested = strchr(type, '=');
    if (nested != NULL) {
        *nested++ = '\0';
    }
    const char *token = strcmp(type, "pure-token") == 0 ? w : NULL;
    char *eq = strchr(w, '=');
    if (eq != NULL) {
        *eq = '\0';
        token = w;
        w = eq + 1;
    }
    char lower[64];
    const char *name = token == w ? token_name(lower, sizeof(lower), w,
                                               strlen(w))
                                  : w;
    size_t key = doc_key_fields(keys, type, strlen(type));
    size_t fields = 2 + key + (token != NULL) + (optional || multiple) +
                    (nested != NULL);
    reply_map(&c->out, fields, c->proto);
    reply_bulkz(&c->out, "name");
    reply_bulkz(&c->out, name);
    reply_bulkz(&c->out, "type");
    reply_bulkz(&c->out, type);
    if (key) {
        reply_doc_key_index(c, keys);
    }
    if (token != NULL) {
        reply_bulkz(&c->out, "token");
        reply_bulkz(&c->out, token);
    }
    if (optional || multiple) {
        reply_doc_flags(c, optional, multiple);
    }
    if (nested != NULL) {
        reply_bulkz(&c->out, "arguments");
        reply_doc_nested(c, nested, strcmp(type, "oneof") == 0, keys);
    }
}

/* The space-separated argument words of a command (see reply_doc_arg). */
static void
reply_doc_args(struct conn *c, const struct cmd *cmd)
{
    struct doc_keys keys = { 0, cmd_key_spec_count(cmd) };
    const char *args = cmd->args;
    reply_array(&c->out, word_count(args));
    while (args != NULL && *args != '\0') {
        while (*args == ' ') {
            args++;
        }
        size_t n = strcspn(args, " ");
        if (n == 0) {
            break;
        }
        char word[256];
        if (n >= sizeof(word)) {
            n = sizeof(word) - 1;
        }
        memcpy(word, args, n);
        word[n] = '\0';
        args += strcspn(args, " ");
        reply_doc_arg(c, word, &keys);
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
        reply_doc_args(c, cmd);
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
command_docs_command(struct conn *c, struct resp_request *req)
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

/* ---- COMMAND GETKEYS / GETKEYSANDFLAGS --------------------------------- */

/* The command a full command line names, as Redis looks it up: a container
 * followed by a word means its subcommand, otherwise the command itself. */
static const struct cmd *
lookup_full(char **argv, size_t *argvlen, size_t argc)
{
    const struct cmd *base = cmd_lookup(argv[0], argvlen[0]);
    if (base == NULL || base->subcommands == NULL || argc < 2) {
        return base;
    }
    return find_sub(base, argv[1], argvlen[1]);
}

/* One key of COMMAND GETKEYS[ANDFLAGS]: argv[i] of the line, with its
 * flags. */
static void
reply_key(struct conn *c, const struct cmd *cmd,
          const struct resp_request *line, int i, bool flagged,
          bool with_flags)
{
    if (with_flags) {
        reply_array(&c->out, 2);
    }
    reply_bulk(&c->out, line->argv[i], line->argvlen[i]);
    if (with_flags) {
        struct cmd_key_spec ks = key_spec_of_arg(cmd, i, line->argv,
                                                 line->argc, flagged);
        reply_key_flags(c, ks.flags);
    }
}

#define ERR_BAD_GETKEYS_ARGS "ERR Invalid arguments specified for command"

/* A key the command computes (RL.CHECK's counter): the one key, read and
 * written, as its handler decides on it. */
static void
reply_computed_key(struct conn *c, const struct cmd *cmd, char **argv,
                   size_t *argvlen, size_t argc, bool with_flags)
{
    struct resp_request line = { argc, argv, argvlen, 0 };
    struct textbuf key = { NULL, 0, 0, false };
    if (!cmd->computed_key(&line, &key) || key.oom) {
        cmd_error(c, key.oom ? ERR_OOM
                             : ERR_BAD_GETKEYS_ARGS);
        textbuf_free(&key);
        return;
    }
    reply_array(&c->out, 1);
    if (with_flags) {
        reply_array(&c->out, 2);
    }
    reply_bulk(&c->out, key.p != NULL ? key.p : "", key.len);
    if (with_flags) {
        reply_key_flags(c, CMD_KEY_RW | CMD_KEY_ACCESS | CMD_KEY_UPDATE);
    }
    textbuf_free(&key);
}

/* Keys found by reading the arguments (RL.ALL's parts): each read and
 * written, as the limiter it belongs to. */
static void
reply_key_args(struct conn *c, const struct cmd *cmd, char **argv,
               size_t *argvlen, size_t argc, bool with_flags)
{
    struct resp_request line = { argc, argv, argvlen, 0 };
    int idx[CMD_KEY_ARGS_MAX];
    size_t n = cmd->key_args(&line, idx, CMD_KEY_ARGS_MAX);
    if (n == 0) {
        cmd_error(c, ERR_BAD_GETKEYS_ARGS);
        return;
    }
    reply_array(&c->out, n);
    for (size_t i = 0; i < n; i++) {
        if (with_flags) {
            reply_array(&c->out, 2);
        }
        reply_bulk(&c->out, argv[idx[i]], argvlen[idx[i]]);
        if (with_flags) {
            reply_key_flags(c, CMD_KEY_RW | CMD_KEY_ACCESS | CMD_KEY_UPDATE);
        }
    }
}

static void
getkeys(struct conn *c, struct resp_request *req, bool with_flags)
{
    char **argv = req->argv + 2;
    size_t *argvlen = req->argvlen + 2;
    size_t argc = req->argc - 2;
    const struct cmd *cmd = lookup_full(argv, argvlen, argc);
    if (cmd == NULL) {
        cmd_error(c, "ERR Invalid command specified");
        return;
    }
    if (cmd_key_spec_count(cmd) == 0 && cmd->computed_key == NULL &&
        cmd->key_args == NULL) {
        cmd_error(c, "ERR The command has no key arguments");
        return;
    }
    if (!cmd_arity_ok(cmd, argc)) {
        cmd_error(c, "ERR Invalid number of arguments specified for command");
        return;
    }
    if (cmd->computed_key != NULL) {
        reply_computed_key(c, cmd, argv, argvlen, argc, with_flags);
        return;
    }
    if (cmd->key_args != NULL) {
        reply_key_args(c, cmd, argv, argvlen, argc, with_flags);
        return;
    }
    struct resp_request line = { argc, argv, argvlen, 0 };
    struct cmd_keys keys;
    if (!cmd_request_keys(cmd, &line, &keys)) {
        /* As Redis: none found is no error where keys are optional (EVAL
         * with numkeys 0, or one it would refuse). */
        if (cmd->flags & CMD_NO_MANDATORY_KEYS) {
            reply_array(&c->out, 0);
        } else {
            cmd_error(c, ERR_BAD_GETKEYS_ARGS);
        }
        return;
    }
    reply_array(&c->out, (size_t)((keys.last - keys.first) / keys.step + 1) +
                             (keys.store > 0));
    if (keys.store > 0 && keys.flagged) {
        reply_key(c, cmd, &line, keys.store, true, with_flags);
    }
    for (int i = keys.first; i <= keys.last; i += keys.step) {
        reply_key(c, cmd, &line, i, keys.flagged, with_flags);
    }
    if (keys.store > 0 && !keys.flagged) {
        reply_key(c, cmd, &line, keys.store, false, with_flags);
    }
}

HANDLER_VARIANT(command_getkeys_command, getkeys, false)
HANDLER_VARIANT(command_getkeysandflags_command, getkeys, true)

/* ---- COMMAND LIST ----------------------------------------------------- */

/* The module cellgate stands in for: its commands carry the "module" flag. */
#define MODULE_NAME "redis-cell"

enum list_filter { LIST_ALL, LIST_MODULE, LIST_ACLCAT, LIST_PATTERN };

struct list_query {
    enum list_filter type;
    const char *arg;
    size_t arglen;
};

/* Whether the space-separated words hold word (case-insensitive). */
static bool
has_word(const char *words, const char *word, size_t len)
{
    while (words != NULL && *words != '\0') {
        size_t n = strcspn(words, " ");
        if (n == len && strncasecmp(words, word, len) == 0) {
            return true;
        }
        words += n;
        words += strspn(words, " ");
    }
    return false;
}

static bool
list_wants(const struct cmd *cmd, const struct list_query *q)
{
    switch (q->type) {
    case LIST_MODULE:
        return q->arglen == strlen(MODULE_NAME) &&
               strncasecmp(q->arg, MODULE_NAME, q->arglen) == 0 &&
               (cmd->flags & CMD_MODULE);
    case LIST_ACLCAT:
        return has_word(cmd->acl, q->arg, q->arglen);
    case LIST_PATTERN:
        return glob_match(q->arg, q->arglen, cmd->name, strlen(cmd->name),
                          true);
    case LIST_ALL:
    default:
        return true;
    }
}

/* Walk the commands and their subcommands, as Redis lists them: count the
 * matches, or (emit) also reply with their names. */
static size_t
list_walk(struct conn *c, const struct cmd *t, size_t n,
          const struct list_query *q, bool emit)
{
    size_t found = 0;
    for (size_t i = 0; i < n && t[i].name != NULL; i++) {
        if (list_wants(&t[i], q)) {
            found++;
            if (emit) {
                reply_bulkz(&c->out, t[i].name);
            }
        }
        if (t[i].subcommands != NULL) {
            found += list_walk(c, t[i].subcommands, SIZE_MAX, q, emit);
        }
    }
    return found;
}

void
command_list_command(struct conn *c, struct resp_request *req)
{
    static const char *const kinds[] = { "module", "aclcat", "pattern" };
    struct list_query q = { LIST_ALL, NULL, 0 };
    size_t n;
    const struct cmd *t = cmd_table(&n);
    /* Redis takes exactly one "FILTERBY <type> <arg>" or nothing. */
    if (req->argc != 2) {
        if (req->argc != 5 || strcasecmp(req->argv[2], "filterby") != 0) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
        for (size_t k = 0; k < 3; k++) {
            if (strcasecmp(req->argv[3], kinds[k]) == 0) {
                q.type = (enum list_filter)(LIST_MODULE + k);
            }
        }
        if (q.type == LIST_ALL) {
            cmd_error(c, ERR_SYNTAX);
            return;
        }
        q.arg = req->argv[4];
        q.arglen = req->argvlen[4];
    }
    reply_array(&c->out, list_walk(c, t, n, &q, false));
    list_walk(c, t, n, &q, true);
}

