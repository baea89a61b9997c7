/*
 * errors.h - the error replies more than one command gives, spelled once,
 * in Redis's words (as Redis's shared.* objects hold its common replies).
 * Sent with cmd_error() (cmd.h), which also counts them for INFO.
 */
#ifndef CELLGATE_ERRORS_H
#define CELLGATE_ERRORS_H

#define ERR_SYNTAX "ERR syntax error"
#define ERR_NOT_INTEGER "ERR value is not an integer or out of range"
#define ERR_NOT_FLOAT "ERR value is not a valid float"
#define ERR_NOMEM "ERR out of memory"
#define ERR_WRONGTYPE                                                         \
    "WRONGTYPE Operation against a key holding the wrong kind of value"
#define ERR_OOM "OOM command not allowed when used memory > 'maxmemory'."
#define ERR_NOAUTH "NOAUTH Authentication required."
#define ERR_LIMIT_WINDOW "ERR limit and window must be positive"
#define ERR_WRONG_ARITY "ERR wrong number of arguments for '%s' command"
#define ERR_DB_RANGE "ERR DB index is out of range"
#define ERR_CLIENT_NAME                                                       \
    "ERR Client names cannot contain spaces, newlines or special characters."

#endif
