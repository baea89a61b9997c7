/*
 * funcset.c - see funcset.h.
 */
#include "server/funcset.h"

#include <stdio.h>

#include "server/journal.h"
#include "server/log.h"
#include "server/server.h"

static const struct funcset_ops *ops;
static uint64_t changes;

void
funcset_set_ops(const struct funcset_ops *o)
{
    ops = o;
}

bool
funcset_encode(struct membuf *b)
{
    return ops == NULL || ops->encode(b);
}

int
funcset_replace(const unsigned char *p, size_t len, char *err,
                size_t errlen)
{
    if (ops == NULL) {
        if (len == 0) {
            return 0;
        }
        snprintf(err, errlen, "it holds functions, but scripts are off");
        return -1;
    }
    return ops->replace(p, len, err, errlen);
}

void
funcset_changed(void)
{
    changes++;
    if (!srv.journal_on) {
        return;
    }
    struct membuf b = { 0 };
    srv.journal_effects++;
    bool made = funcset_encode(&b);
    if (!journal_add_functions(made ? b.p : NULL, made ? b.len : 1)) {
        log_warning("No memory for the record of the functions' change: "
                    "the journal and the replicas miss it");
    }
    mem_free(b.p);
}

uint64_t
funcset_changes(void)
{
    return changes;
}
