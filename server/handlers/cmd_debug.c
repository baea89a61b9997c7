/*
 * cmd_debug.c - DEBUG: the few of Redis's test hooks cellgate has, behind
 * enable-debug-command as in Redis 7 (off by default: DEBUG changes how
 * the server behaves, so only whoever runs it may open it).
 *
 * DEBUG is one command in Redis's table, not a container: its
 * subcommands are words it reads itself, and an unknown one is answered
 * with the container's error text.
 */
#include <string.h>
#include <strings.h>

#include "lib/num.h"
#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/handlers/handlers.h"
#include "server/server.h"

static bool
debug_allowed(const struct conn *c)
{
    return srv.conf.enable_debug_command == ALLOWED_YES ||
           (srv.conf.enable_debug_command == ALLOWED_LOCAL &&
            client_is_local(c));
}

static void
debug_help(struct conn *c)
{
    static const char *const lines[] = {
        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Setting it to 0 disables expiring keys in background when they "
        "are not",
        "    accessed (otherwise the Redis behavior). Setting it to 1 "
        "reenables back the",
        "    default.",
        "HELP",
        "    Print this help.",
        NULL
    };
    cmd_reply_help(c, lines);
}

void
debug_command(struct conn *c, struct resp_request *req)
{
    if (!debug_allowed(c)) {
        cmd_error(c, "ERR DEBUG command not allowed. If the "
                     "enable-debug-command option is set to \"local\", you "
                     "can run it from a local connection, otherwise you need "
                     "to set this option in the configuration file, and then "
                     "restart the server.");
        return;
    }
    if (req->argc == 2 && strcasecmp(req->argv[1], "help") == 0) {
        debug_help(c);
    } else if (req->argc == 3 &&
               strcasecmp(req->argv[1], "set-active-expire") == 0) {
        /* Redis reads the flag with atoi(): a word that is no number is
         * 0. Read whole (num_atoll, no cut to 32 bits): 4294967296 is on,
         * as it always was here, where glibc's atoi would read 0. */
        srv.active_expire_off = num_atoll(req->argv[2]) == 0;
        reply_ok(&c->out);
    } else {
        cmd_errorf(c, "ERR unknown subcommand or wrong number of arguments "
                      "for '%.128s'. Try DEBUG HELP.", req->argv[1]);
    }
}
