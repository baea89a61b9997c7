/*
 * client.c - see client.h: a client's name and library attributes.
 */
#include "server/client.h"

#include <stdio.h>
#include <string.h>

#include "lib/mem.h"
#include "lib/slist.h"

/* Redis allows names of printable ASCII without spaces ('!'..'~'). */
static bool
valid_name(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '!' || s[i] > '~') {
            return false;
        }
    }
    return true;
}

/* Replace *slot with a copy of s (empty = none). */
static int
set_attr(char **slot, const char *s, size_t len)
{
    char *copy = NULL;
    if (!valid_name(s, len)) {
        return 1;
    }
    if (len > 0) {
        copy = mem_malloc(len + 1);
        if (copy == NULL) {
            return -1;
        }
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    mem_free(*slot);
    *slot = copy;
    return 0;
}

void
client_init_internal(struct conn *c)
{
    memset(c, 0, sizeof(*c));
    obuf_init(&c->out);
    c->authenticated = true;
    c->proto = 2;
    snprintf(c->addr, sizeof(c->addr), "?:0");
}

bool
client_is_local(const struct conn *c)
{
    return c->is_unix || strncmp(c->addr, "127.", 4) == 0 ||
           strncmp(c->addr, "::1:", 4) == 0;      /* conn.c's "ip:port" */
}

int
client_set_name(struct conn *c, const char *name, size_t len)
{
    return set_attr(&c->name, name, len);
}

int
client_set_lib(struct conn *c, bool version, const char *s, size_t len)
{
    return set_attr(version ? &c->lib_ver : &c->lib_name, s, len);
}

/* ---- output for others ------------------------------------------------- */

static struct conn *fed;

void
client_note_fed(struct conn *c)
{
    if (!c->fed) {
        c->fed = true;
        SL_PUSH(fed, c, next_fed);
    }
}

struct conn *
client_take_fed(void)
{
    struct conn *list = fed;
    for (struct conn *c = list; c != NULL; c = c->next_fed) {
        c->fed = false;
    }
    fed = NULL;
    return list;
}

void
client_unfed(struct conn *c)
{
    if (!c->fed) {
        return;
    }
    SL_UNLINK(struct conn, fed, c, next_fed);
    c->fed = false;
}

/* ---- Redis's reply buffer, for CLIENT LIST ------------------------------ */

#define REPLY_BUF_MIN 1024              /* PROTO_REPLY_MIN_BYTES */
#define REPLY_BUF_MAX (16 * 1024)       /* PROTO_REPLY_CHUNK_BYTES */
#define REPLY_BUF_PEAK_RESET_MS 5000

/* The usable size jemalloc gives an allocation of n bytes, 1kb to 16kb:
 * four size classes between two powers of two. */
static size_t
jemalloc_usable(size_t n)
{
    if (n <= REPLY_BUF_MIN) {
        return REPLY_BUF_MIN;
    }
    size_t pow = REPLY_BUF_MIN;
    while (pow * 2 < n) {
        pow *= 2;
    }
    size_t step = pow / 4;
    return (n + step - 1) / step * step;
}

void
reply_buf_init(struct reply_buf *b, int64_t now_ms)
{
    b->size = REPLY_BUF_MAX;
    b->peak = REPLY_BUF_MAX;
    b->peak_reset_ms = now_ms - REPLY_BUF_PEAK_RESET_MS;
}

void
reply_buf_cron(struct reply_buf *b, size_t pending, int64_t now_ms)
{
    size_t resized = 0;
    if (b->size / 2 >= REPLY_BUF_MIN && b->peak < b->size / 2) {
        resized = b->peak + 1 > REPLY_BUF_MIN ? b->peak + 1 : REPLY_BUF_MIN;
    } else if (b->size * 2 < REPLY_BUF_MAX * 2 && b->peak == b->size) {
        resized = b->size * 2 < REPLY_BUF_MAX ? b->size * 2 : REPLY_BUF_MAX;
    }
    if (now_ms - b->peak_reset_ms >= REPLY_BUF_PEAK_RESET_MS) {
        b->peak = pending < b->size ? pending : b->size;
        b->peak_reset_ms = now_ms;
    }
    if (resized != 0) {
        b->size = jemalloc_usable(resized);
    }
}

void
client_format_addr(const struct sockaddr_storage *ss, char *out, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port;
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        uv_ip6_name(a, ip, sizeof(ip));
        port = ntohs(a->sin6_port);
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        uv_ip4_name(a, ip, sizeof(ip));
        port = ntohs(a->sin_port);
    }
    snprintf(out, len, "%s:%d", ip, port);
}
