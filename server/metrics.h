/*
 * metrics.h - the Prometheus endpoint (metrics-port, 0 = off): GET /metrics
 * in the text exposition format and GET /healthz.
 *
 * HTTP is served by libmicrohttpd on its own thread, which never touches
 * the server's state: the event loop renders a snapshot of the metrics on
 * every cron tick and swaps it in under a mutex, so the loop is never
 * blocked by a scraper and the scraper never sees half-updated numbers.
 */
#ifndef CELLGATE_METRICS_H
#define CELLGATE_METRICS_H

/* Start the HTTP thread when metrics-port is set. Returns 0, or -1 (logged)
 * when the port cannot be opened. */
int metrics_setup(void);

/* Render a fresh snapshot (event loop thread, from cron). */
void metrics_publish(void);

void metrics_teardown(void);

#endif
