/*
 * errors.h - the error replies more than one command gives, spelled once,
 * in Redis's words (as Redis's shared.* objects hold its common replies).
 * Sent with cmd_error() (cmd.h), which also counts them for INFO.
 * `make check-deps` runs tests/check_errors.py, which fails when an error
 * text stands in two places of the server's code.
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
#define ERR_UNKNOWN_SUBCOMMAND "ERR unknown subcommand '%.128s'. Try %s HELP."
#define ERR_WRONG_ARITY "ERR wrong number of arguments for '%s' command"
#define ERR_DB_RANGE "ERR DB index is out of range"
/* The server's state refusing a write (guard.c). */
#define ERR_MISCONF_FMT "MISCONF Errors writing to the AOF file: %s"
#define ERR_NOREPLICAS "NOREPLICAS Not enough good replicas to write."
#define ERR_READONLY "READONLY You can't write against a read only replica."
/* A script running past busy-reply-threshold (busy.c, SCRIPT KILL). */
#define ERR_BUSY "BUSY Redis is busy running a script. You can only call " \
                 "SCRIPT KILL or SHUTDOWN NOSAVE."
#define ERR_BUSY_FUNCTION "BUSY Redis is busy running a script. You can "  \
                          "only call FUNCTION KILL or SHUTDOWN NOSAVE."
#define ERR_NOTBUSY "NOTBUSY No scripts in execution right now."
#define ERR_POSITIVE "ERR value is out of range, must be positive"
#define ERR_NOSCRIPT "NOSCRIPT No matching script. Please use EVAL."
#define ERR_NO_SUCH_KEY "ERR no such key"
/* EVAL's numkeys and SINTERCARD's. */
#define ERR_NUMKEYS_OVER_ARGS                                                 \
    "ERR Number of keys can't be greater than number of args"
#define ERR_SAME_OBJECT "ERR source and destination objects are the same"
#define ERR_INCR_OVERFLOW "ERR increment or decrement would overflow"
#define ERR_INCR_NAN "ERR increment would produce NaN or Infinity"
#define ERR_EXPIRE_TIME "ERR invalid expire time in '%s' command"
#define ERR_TIMEOUT_NOT_INTEGER "ERR timeout is not an integer or out of range"
#define ERR_TIMEOUT_NEGATIVE "ERR timeout is negative"
#define ERR_CLIENT_TYPE "ERR Unknown client type '%.128s'"
#define ERR_CLIENT_NAME                                                       \
    "ERR Client names cannot contain spaces, newlines or special characters."
/* FUNCTION RESTORE's payload that does not hold libraries. */
#define ERR_FUNCTIONS_PAYLOAD "ERR failed loading the given functions payload"
#define ERR_NUMKEYS_POSITIVE "ERR numkeys should be greater than 0"
#define ERR_LIMIT_NEGATIVE "ERR LIMIT can't be negative"
/* A random count of INT64_MIN: SRANDMEMBER's, ZRANDMEMBER's, HRANDFIELD's. */
#define ERR_COUNT_RANGE "ERR value is out of range, value must between "    \
                        "-9223372036854775807 and 9223372036854775807"

/* RESTORE's and FUNCTION RESTORE's payload footer refused (Redis's
 * verifyDumpPayload()). */
#define ERR_DUMP_PAYLOAD "ERR DUMP payload version or checksum are wrong"

#endif
