/*
 * cmd_script.c - EVAL, EVALSHA and their _RO forms, SCRIPT, FUNCTION and
 * FCALL/FCALL_RO: their arguments read here, the work done by the script/
 * wing.
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

/* FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern], in any order. */
void
function_list_command(struct conn *c, struct resp_request *req)
{
    bool withcode = false;
    const char *pattern = NULL;
    size_t plen = 0;
    for (size_t i = 2; i < req->argc; i++) {
        if (!withcode && cmd_arg_is(req, i, "withcode")) {
            withcode = true;
        } else if (pattern == NULL && cmd_arg_is(req, i, "libraryname")) {
            if (i + 1 >= req->argc) {
                cmd_error(c, "ERR library name argument was not given");
                return;
            }
            i++;
            pattern = req->argv[i];
            plen = req->argvlen[i];
        } else {
            cmd_errorf(c, "ERR Unknown argument %s", req->argv[i]);
            return;
        }
    }
    script_function_list(c, withcode, pattern, plen);
}

/* FUNCTION FLUSH [ASYNC|SYNC]: both at once (the libraries are small). */
void
function_flush_command(struct conn *c, struct resp_request *req)
{
    if (req->argc > 3) {
        cmd_error_subcommand_syntax(c, req);
    } else if (req->argc == 3 && !cmd_arg_is(req, 2, "async") &&
               !cmd_arg_is(req, 2, "sync")) {
        cmd_error(c, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    } else {
        script_function_flush(c);
    }
}

/* FUNCTION LOAD [REPLACE] code: every word before the last an option. */
void
function_load_command(struct conn *c, struct resp_request *req)
{
    bool replace = false;
    size_t i = 2;
    while (i < req->argc - 1) {
        if (!cmd_arg_is(req, i, "replace")) {
            cmd_errorf(c, "ERR Unknown option given: %s", req->argv[i]);
            return;
        }
        replace = true;
        i++;
    }
    if (i >= req->argc) {
        cmd_error(c, "ERR Function code is missing");
        return;
    }
    script_function_load(c, req->argv[i], req->argvlen[i], replace);
}

void
function_delete_command(struct conn *c, struct resp_request *req)
{
    script_function_delete(c, req->argv[2], req->argvlen[2]);
}

HANDLER_NO_ARGS(function_dump_command, script_function_dump)

/* FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]. */
void
function_restore_command(struct conn *c, struct resp_request *req)
{
    static const char *const policies[] = { "append", "replace", "flush" };
    int policy = 0;
    if (req->argc > 4) {
        cmd_error_subcommand_syntax(c, req);
        return;
    }
    if (req->argc == 4) {
        for (policy = 0; policy < 3; policy++) {
            if (cmd_arg_is(req, 3, policies[policy])) {
                break;
            }
        }
        if (policy == 3) {
            cmd_error(c, "ERR Wrong restore policy given, value should be "
                         "either FLUSH, APPEND or REPLACE.");
            return;
        }
    }
    script_function_restore(c, req->argv[2], req->argvlen[2], policy);
}

HANDLER_NO_ARGS(function_stats_command, script_function_stats)

HANDLER_NO_ARGS(function_kill_command, script_function_kill)

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

HANDLER_NO_ARGS(script_kill_command, script_kill)

HANDLER_VARIANT(eval_command, script_eval, false, false)
HANDLER_VARIANT(evalsha_command, script_eval, true, false)
HANDLER_VARIANT(eval_ro_command, script_eval, false, true)
HANDLER_VARIANT(evalsha_ro_command, script_eval, true, true)
HANDLER_VARIANT(fcall_command, script_fcall, false)
HANDLER_VARIANT(fcall_ro_command, script_fcall, true)
