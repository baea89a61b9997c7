/*
 * cmd_script.c - EVAL, EVALSHA and their _RO forms, SCRIPT (the engine is
 * the script/ wing), and FUNCTION LIST/FLUSH answered as a Redis with no
 * functions loaded answers them: test harnesses and admin tools call
 * them, and cellgate has no FUNCTION LOAD.
 */
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"
#include "server/script/script.h"

HANDLER_VARIANT(function_command, cmd_dispatch_subcommand,
                cmd_lookup("function", 8))
HANDLER_VARIANT(script_command, cmd_dispatch_subcommand,
                cmd_lookup("script", 6))

/* FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]: no libraries. */
void
function_list_command(struct conn *c, struct resp_request *req)
{
    bool withcode = false, name = false;
    for (size_t i = 2; i < req->argc; i++) {
        if (!withcode && cmd_arg_is(req, i, "withcode")) {
            withcode = true;
        } else if (!name && cmd_arg_is(req, i, "libraryname")) {
            if (i + 1 >= req->argc) {
                cmd_error(c, "ERR library name argument was not given");
                return;
            }
            name = true;
            i++;
        } else {
            cmd_errorf(c, "ERR Unknown argument %.128s", req->argv[i]);
            return;
        }
    }
    reply_array(&c->out, 0);
}

void
function_flush_command(struct conn *c, struct resp_request *req)
{
    if (req->argc > 3) {
        cmd_error_subcommand_syntax(c, req);
    } else if (req->argc == 3 && !cmd_arg_is(req, 2, "async") &&
               !cmd_arg_is(req, 2, "sync")) {
        cmd_error(c, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    } else {
        reply_ok(&c->out);
    }
}

/* SCRIPT EXISTS sha1 ...: 1 or 0 for each. */
void
script_exists_command(struct conn *c, struct resp_request *req)
{
    reply_array(&c->out, req->argc - 2);
    for (size_t i = 2; i < req->argc; i++) {
        reply_int(&c->out, script_exists(req->argv[i], req->argvlen[i]));
    }
}

/* SCRIPT FLUSH [ASYNC|SYNC]: both forget every script at once (the Lua
 * state is small; there is nothing to hand to a thread). */
void
script_flush_command(struct conn *c, struct resp_request *req)
{
    if (req->argc > 3 || (req->argc == 3 && !cmd_arg_is(req, 2, "async") &&
                          !cmd_arg_is(req, 2, "sync"))) {
        cmd_error(c, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
        return;
    }
    script_flush();
    reply_ok(&c->out);
}

void
script_load_command(struct conn *c, struct resp_request *req)
{
    script_load(c, req->argv[2], req->argvlen[2]);
}

void
script_kill_command(struct conn *c, struct resp_request *req)
{
    (void)req;
    script_kill(c);
}


HANDLER_VARIANT(eval_command, script_eval, false, false)
HANDLER_VARIANT(evalsha_command, script_eval, true, false)
HANDLER_VARIANT(eval_ro_command, script_eval, false, true)
HANDLER_VARIANT(evalsha_ro_command, script_eval, true, true)
