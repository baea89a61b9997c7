/*
 * guard.c - the texts of the verdicts guard.h's rules give (the rules
 * themselves are inline there: every write asks them).
 */
#include "server/guard.h"

#include <stdio.h>
#include <string.h>

#include "server/errors.h"
#include "server/persist/persist.h"

const char *
guard_error(enum guard_verdict v, char *buf, size_t len)
{
    switch (v) {
    case GUARD_MISCONF:
        snprintf(buf, len, ERR_MISCONF_FMT, strerror(persist_errno()));
        return buf;
    case GUARD_NOREPLICAS:
        return ERR_NOREPLICAS;
    case GUARD_READONLY:
        return ERR_READONLY;
    case GUARD_RUN:
        break;
    }
    return NULL;
}
