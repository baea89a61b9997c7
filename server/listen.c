/*
 * listen.c - see listen.h.
 */
#include "server/listen.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "lib/mem.h"
#include "server/log.h"
#include "server/server.h"

/* A listener is freed by its close callback: libuv owns the handle until
 * then, so it cannot live in an array that a change rewrites. */
struct listener {
    uv_tcp_t h;
    char addr[64];
    int port;
};

static struct listener *live[LISTEN_MAX_ADDRS];
static size_t nlive;
/* The connection layer's, given at start-up: this module is below it. */
static uv_connection_cb on_tcp_connection;

static void
free_listener(uv_handle_t *h)
{
    mem_free(h->data);
}

static void
close_listener(struct listener *l)
{
    if (!uv_is_closing((uv_handle_t *)&l->h)) {
        uv_close((uv_handle_t *)&l->h, free_listener);
    }
}

static bool
is_ipv6(const char *addr)
{
    return strchr(addr, ':') != NULL;
}

/* Redis's spellings of a bind word: a leading - makes it optional, *
 * is every IPv4 address, ::* every IPv6 one. The address to bind. */
static const char *
bind_address(const char *word)
{
    const char *addr = word[0] == '-' ? word + 1 : word;
    if (strcmp(addr, "*") == 0) {
        return "0.0.0.0";
    }
    return strcmp(addr, "::*") == 0 ? "::" : addr;
}

/* Failures Redis 7.0 steps over: an address the host does not have, for
 * an optional (-) one, and no support for its family (no IPv6) for any:
 * that address is skipped, the others listen. */
static bool
is_skippable(int rc, const char *word)
{
    return (rc == UV_EADDRNOTAVAIL && word[0] == '-') ||
           rc == UV_EAFNOSUPPORT || rc == UV_EPROTONOSUPPORT ||
           rc == UV_ENOPROTOOPT || rc == UV_ESOCKTNOSUPPORT;
}

/* A listener on the address of the bind word, or NULL after logging
 * why; *skipped when the failure is one Redis steps over. */
static struct listener *
open_listener(const char *word, int port, bool *skipped)
{
    struct sockaddr_storage ss;
    const char *addr = bind_address(word);
    int rc = is_ipv6(addr) ? uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&ss)
                           : uv_ip4_addr(addr, port, (struct sockaddr_in *)&ss);
    *skipped = false;
    if (rc != 0 || strlen(word) >= sizeof(((struct listener *)0)->addr)) {
        log_warning("Invalid bind address '%s'", word);
        return NULL;
    }
    struct listener *l = mem_calloc(1, sizeof(*l));
    if (l == NULL) {
        log_warning("Could not create server TCP listening socket %s:%d: "
                    "out of memory", addr, port);
        return NULL;
    }
    snprintf(l->addr, sizeof(l->addr), "%s", word);
    l->port = port;
    l->h.data = l;
    uv_tcp_init(srv.loop, &l->h);
    rc = uv_tcp_bind(&l->h, (struct sockaddr *)&ss,
                     is_ipv6(addr) ? UV_TCP_IPV6ONLY : 0);
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *)&l->h, (int)srv.conf.tcp_backlog,
                       on_tcp_connection);
    }
    if (rc != 0) {
        log_warning("Could not create server TCP listening socket %s:%d: %s",
                    addr, port, uv_strerror(rc));
        close_listener(l);
        *skipped = is_skippable(rc, word);
        return NULL;
    }
    return l;
}

/* The live listener on addr:port, taken out of the live set; NULL if
 * there is none. */
static struct listener *
take_live(const char *addr, int port)
{
    for (size_t i = 0; i < nlive; i++) {
        if (live[i] != NULL && live[i]->port == port &&
            strcmp(live[i]->addr, addr) == 0) {
            struct listener *l = live[i];
            live[i] = NULL;
            return l;
        }
    }
    return NULL;
}

/* Put back what take_live() took (the change failed). */
static void
give_back(struct listener *l)
{
    for (size_t i = 0; i < nlive; i++) {
        if (live[i] == NULL) {
            live[i] = l;
            return;
        }
    }
}

/* Listeners for each of the n addresses into next[]: the live one on the
 * same address and port, or a new one (NULL for one skipped). False when
 * one cannot be opened: the new ones are closed and the live ones are
 * live again. */
static bool
open_set(char *const *addrs, size_t n, int port, struct listener **next,
         bool *reused)
{
    for (size_t i = 0; i < n; i++) {
        bool skipped = false;
        next[i] = take_live(addrs[i], port);
        reused[i] = next[i] != NULL;
        if (next[i] == NULL) {
            next[i] = open_listener(addrs[i], port, &skipped);
        }
        if (next[i] == NULL && !skipped) {
            for (size_t j = 0; j < i; j++) {
                if (next[j] == NULL) {
                    continue;
                } else if (reused[j]) {
                    give_back(next[j]);
                } else {
                    close_listener(next[j]);
                }
            }
            return false;
        }
    }
    return true;
}

/* Make next[0..n) the live set; what is left of the old one closes. */
static void
install_set(struct listener **next, size_t n, int port)
{
    for (size_t i = 0; i < nlive; i++) {
        if (live[i] != NULL) {
            close_listener(live[i]);
        }
    }
    memcpy(live, next, n * sizeof(*next));
    nlive = n;
    srv.tcp_port = (unsigned)port;
}

/* Split bind as Redis splits it for CONFIG SET: at every single space.
 * Returns the number of addresses (words points into buf), or -1 when
 * there are more than LISTEN_MAX_ADDRS. "" has none. */
static int
split_bind(char *buf, char **words)
{
    size_t n = 0;
    if (buf[0] == '\0') {
        return 0;
    }
    for (char *p = buf;; p++) {
        if (n == LISTEN_MAX_ADDRS) {
            return -1;
        }
        words[n++] = p;
        p = strchr(p, ' ');
        if (p == NULL) {
            return (int)n;
        }
        *p = '\0';
    }
}

enum listen_change
listen_tcp_change(const char *bind, int64_t port)
{
    char *buf = mem_malloc(strlen(bind) + 1);
    char *addrs[LISTEN_MAX_ADDRS];
    struct listener *next[LISTEN_MAX_ADDRS];
    bool reused[LISTEN_MAX_ADDRS];
    if (buf == NULL) {
        log_warning("Failed to bind: out of memory");
        return LISTEN_BIND_FAILED;
    }
    strcpy(buf, bind);
    int n = port == 0 ? 0 : split_bind(buf, addrs);
    enum listen_change rc = LISTEN_OK;
    if (n < 0) {
        rc = LISTEN_TOO_MANY;
    } else if (!open_set(addrs, (size_t)n, (int)port, next, reused)) {
        log_warning("Failed to bind, the listeners stay as they were");
        rc = LISTEN_BIND_FAILED;
    } else {
        install_set(next, (size_t)n, (int)port);
        log_notice("Listening on TCP %s port %lld", n > 0 ? bind : "(no "
                   "address)", (long long)port);
    }
    mem_free(buf);
    return rc;
}

int
listen_tcp_start(uv_connection_cb on_connection)
{
    char addrs[1024];
    char *words[LISTEN_MAX_ADDRS];
    struct listener *next[LISTEN_MAX_ADDRS];
    bool reused[LISTEN_MAX_ADDRS];
    size_t n = 0;
    char *save = NULL;
    on_tcp_connection = on_connection;
    if (srv.conf.port == 0) {
        return 0;
    }
    /* A file's bind may be any blanks apart, as redis.conf's words are. */
    snprintf(addrs, sizeof(addrs), "%s", srv.conf.bind);
    for (char *a = strtok_r(addrs, " \t", &save); a != NULL;
         a = strtok_r(NULL, " \t", &save)) {
        if (n == LISTEN_MAX_ADDRS) {
            log_warning("Too many bind addresses, ignoring '%s'", a);
            continue;
        }
        words[n++] = a;
    }
    if (n == 0) {
        log_warning("No bind address given for port %lld",
                    (long long)srv.conf.port);
        return -1;
    }
    if (!open_set(words, n, (int)srv.conf.port, next, reused)) {
        return -1;
    }
    install_set(next, n, (int)srv.conf.port);
    return 0;
}

void
listen_tcp_close(void)
{
    for (size_t i = 0; i < nlive; i++) {
        if (live[i] != NULL) {
            close_listener(live[i]);
            live[i] = NULL;
        }
    }
    nlive = 0;
}

static bool
is_loopback(const char *word)
{
    const char *addr = bind_address(word);
    return strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0;
}

bool
listen_warn_open_bind(FILE *also)
{
    char addrs[1024];
    char *save = NULL;
    bool open_bind = false;
    if (srv.conf.requirepass.len != 0 || srv.conf.port == 0) {
        return false;
    }
    snprintf(addrs, sizeof(addrs), "%s", srv.conf.bind);
    for (char *a = strtok_r(addrs, " \t", &save); a != NULL;
         a = strtok_r(NULL, " \t", &save)) {
        open_bind |= !is_loopback(a);
    }
    if (open_bind) {
        static const char msg[] =
            "WARNING: listening on a non-loopback address (bind %s) without "
            "requirepass: any host that can connect can spend or reset every "
            "rate limit. Set requirepass or bind 127.0.0.1.";
        if (also != NULL) {
            fprintf(also, msg, srv.conf.bind);
            fputc('\n', also);
        } else {
            log_warning(msg, srv.conf.bind);
        }
    }
    return open_bind;
}

size_t
listen_tcp_fds(int *fds, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < nlive && n < max; i++) {
        uv_os_fd_t fd;
        if (live[i] != NULL &&
            uv_fileno((const uv_handle_t *)&live[i]->h, &fd) == 0) {
            fds[n++] = fd;
        }
    }
    return n;
}
