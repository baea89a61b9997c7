/*
 * failover.c - replica elections and CLUSTER FAILOVER (stub).
 */
#include <stdio.h>

#include "server/cluster/failover.h"

int
failover_manual(int mode, char *err, size_t errlen)
{
    (void)mode;
    snprintf(err, errlen, "You should send CLUSTER FAILOVER to a replica");
    return -1;
}

void
failover_reset_manual(void)
{
}

void
failover_info(struct textbuf *out)
{
    (void)out;
}
