/*
 * monitor.h - MONITOR: the clients that see every command the server
 * runs but the admin ones (as Redis), one line each in Redis's format
 * (replicationFeedMonitors() in Redis's replication.c):
 *
 *   +<unix seconds>.<microseconds> [<db> <client address>] "CMD" "arg" ...
 *
 * each argument quoted as Redis's sdscatrepr() quotes it (\" \\ \n \r \t
 * \a \b, other bytes outside printable ASCII as \xhh), the secrets
 * (redact.h: passwords of AUTH, HELLO ... AUTH and CONFIG SET) shown as
 * "(redacted)".
 *
 * The lines are appended to the monitors' output buffers here; the client
 * whose command was fed gets CLIENT_FEEDS, and conn.c then sends them and
 * enforces the monitors' output limits.
 */
#ifndef CELLGATE_MONITOR_H
#define CELLGATE_MONITOR_H

#include <stddef.h>

#include "protocol/resp.h"

struct conn;

/* MONITOR: c gets every later command. */
void monitor_add(struct conn *c);

/* c stops being a monitor (RESET, a disconnect). */
void monitor_remove(struct conn *c);

/* The monitors, as a list through conn.next_monitor. */
struct conn *monitor_first(void);

/* Feed a command that ran (req: its arguments as sent, the secrets of
 * redact_arg() shown as "(redacted)") for client c, in c's
 * database. */
void monitor_feed(struct conn *c, const struct resp_request *req);

#endif
