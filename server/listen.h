/*
 * listen.h - the TCP listeners: one per address of the bind option, all
 * on the port option's port (none when it is 0).
 *
 * As Redis 7, CONFIG SET bind and port move them at run time: the new
 * set is opened first (a listener already on the same address and port is
 * kept, not opened again), and only once every one of it listens are the
 * old ones closed; if one cannot be opened, those just opened are closed
 * and the old ones serve on, so a refused change changes nothing. Clients
 * already connected stay connected either way.
 *
 * bind's words are Redis 7's: "-addr" is skipped when the host does not
 * have that address (any IPv6 one is on a host without IPv6),
 * "*" is every IPv4 address and "::*" every IPv6 one (Debian's
 * redis.conf binds "127.0.0.1 -::1").
 */
#ifndef CELLGATE_LISTEN_H
#define CELLGATE_LISTEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

/* Most addresses in bind, as Redis's CONFIG_BINDADDR_MAX. */
#define LISTEN_MAX_ADDRS 16

/* Start-up: listen on srv.conf's bind and port, new connections going to
 * on_connection (now and after every change). 0, or -1 after logging why
 * (bad address, port in use, no address with a port). */
int listen_tcp_start(uv_connection_cb on_connection);

enum listen_change {
    LISTEN_OK,
    LISTEN_TOO_MANY,        /* more than LISTEN_MAX_ADDRS addresses */
    LISTEN_BIND_FAILED,     /* an address cannot be listened on */
};

/* CONFIG SET: listen on bind (addresses between single spaces, as Redis
 * splits the value: an empty one cannot be bound) and port (0 = no TCP;
 * bind "" = no address) instead. Not LISTEN_OK: the listeners are as they
 * were, and the log says why. srv.tcp_port follows the port. */
enum listen_change listen_tcp_change(const char *bind, int64_t port);

/* The TCP listeners' sockets (at most max of them into fds), for the
 * busy server, which accepts while a script runs too long. */
size_t listen_tcp_fds(int *fds, size_t max);

/* Shutdown: close every TCP listener. */
void listen_tcp_close(void);

/* Is a non-loopback address in bind listened on without requirepass?
 * Says so, on `also` (--test-config) or in the log (also NULL). */
bool listen_warn_open_bind(FILE *also);

#endif
