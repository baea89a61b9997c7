/*
 * redact.c - see redact.h.
 */
#include "server/redact.h"

#include <string.h>
#include <strings.h>

static bool
arg_is(const struct resp_request *req, size_t i, const char *word)
{
    size_t n = strlen(word);
    return i < req->argc && req->argvlen[i] == n &&
           strncasecmp(req->argv[i], word, n) == 0;
}

static bool
is_password_option(const struct resp_request *req, size_t i)
{
    /* Redis's SENSITIVE_CONFIG options */
    return arg_is(req, i, "requirepass") || arg_is(req, i, "masterauth") ||
           arg_is(req, i, "masteruser");
}

bool
redact_arg(const struct resp_request *req, size_t i)
{
    if (i == 0 || i >= req->argc) {
        return false;
    }
    if (arg_is(req, 0, "auth")) {
        return true;
    }
    if (arg_is(req, 0, "hello")) {
        for (size_t j = 2; j < i; j++) {
            if (arg_is(req, j, "auth") && i <= j + 2) {
                return true;
            }
        }
        return false;
    }
    /* MIGRATE ... AUTH password, AUTH2 username password (before KEYS). */
    if (arg_is(req, 0, "migrate")) {
        for (size_t j = 6; j < i && !arg_is(req, j, "keys"); j++) {
            size_t n = arg_is(req, j, "auth") ? 1
                     : arg_is(req, j, "auth2") ? 2 : 0;
            if (i <= j + n && j + n < req->argc) {
                return true;
            }
            j += j + n < req->argc ? n : 0;
        }
        return false;
    }
    /* CONFIG SET name value ...: the values of the passwords. */
    return arg_is(req, 0, "config") && arg_is(req, 1, "set") && i >= 3 &&
           i % 2 == 1 && is_password_option(req, i - 1);
}
