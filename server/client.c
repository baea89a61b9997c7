/*
 * client.c - see client.h: a client's name and library attributes.
 */
#include "server/client.h"

#include <stdio.h>
#include <string.h>

#include "lib/mem.h"

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
        c->next_fed = fed;
        fed = c;
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
    for (struct conn **p = &fed; *p != NULL; p = &(*p)->next_fed) {
        if (*p == c) {
            *p = c->next_fed;
            break;
        }
    }
    c->fed = false;
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
