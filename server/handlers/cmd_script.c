/*
 * cmd_script.c - FUNCTION LIST/FLUSH and SCRIPT EXISTS/FLUSH answered as
 * a Redis with no functions or scripts loaded answers them: test
 * harnesses and admin tools call them before and after their work, and
 * cellgate runs no code sent to it.
 */
#include <string.h>
#include <strings.h>

#include "protocol/reply.h"
#include "server/client.h"
#include "server/cmd.h"
#include "server/errors.h"
#include "server/handlers/handlers.h"

void
cmd_function(struct conn *c, struct resp_request *req)
{
    cmd_dispatch_subcommand(c, req, cmd_lookup("function", 8));
}

void
cmd_script(struct conn *c, struct resp_request *req)
{
    cmd_dispatch_subcommand(c, req, cmd_lookup("script", 6));
}

/* FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]: no libraries. */
void
cmd_function_list(struct conn *c, struct resp_request *req)
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
cmd_function_flush(struct conn *c, struct resp_request *req)
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

/* SCRIPT EXISTS sha1 ...: none is cached. */
void
cmd_script_exists(struct conn *c, struct resp_request *req)
{
    reply_array(&c->out, req->argc - 2);
    for (size_t i = 2; i < req->argc; i++) {
        reply_int(&c->out, 0);
    }
}

void
cmd_script_flush(struct conn *c, struct resp_request *req)
{
    if (req->argc > 3 || (req->argc == 3 && !cmd_arg_is(req, 2, "async") &&
                          !cmd_arg_is(req, 2, "sync"))) {
        cmd_error(c, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    } else {
        reply_ok(&c->out);
    }
}
