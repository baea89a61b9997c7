/*
 * lifecycle.h - what the world outside the process is told about its
 * start and its end: `daemonize` (the starting process exits once the
 * server is ready), `pidfile`, and `supervised` (systemd's readiness
 * protocol: READY=1 once the data is loaded and the ports are open,
 * STOPPING=1 when the shutdown begins).
 *
 * The order main.c keeps:
 *   lifecycle_start()     after the configuration and the log, before
 *                         the event loop and any thread exist (fork);
 *   lifecycle_ready()     after the snapshot/journal is loaded and every
 *                         listener is open;
 *   lifecycle_stopping()  when the shutdown begins;
 *   lifecycle_exit()      last, whatever happened.
 */
#ifndef CELLGATE_LIFECYCLE_H
#define CELLGATE_LIFECYCLE_H

/* Returns 0, or -1 after saying why on standard error and in the log (the
 * fork failed). In the starting process of `daemonize yes` it never
 * returns: that process exits 0 when the server is ready, 1 if it failed. */
int lifecycle_start(void);
void lifecycle_ready(void);
void lifecycle_stopping(void);
void lifecycle_exit(void);

#endif
