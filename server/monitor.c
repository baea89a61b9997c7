/*
 * monitor.c - see monitor.h.
 */
#include "server/monitor.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "protocol/obuf.h"
#include "server/client.h"
#include "server/clock.h"
#include "server/redact.h"
#include "server/server.h"
#include "lib/textbuf.h"
#include "lib/time.h"

static struct conn *monitors;

void
monitor_add(struct conn *c)
{
    c->monitor = true;
    c->next_monitor = monitors;
    monitors = c;
    srv.monitors++;
}

void
monitor_remove(struct conn *c)
{
    for (struct conn **p = &monitors; *p != NULL; p = &(*p)->next_monitor) {
        if (*p == c) {
            *p = c->next_monitor;
            c->next_monitor = NULL;
            c->monitor = false;
            srv.monitors--;
            return;
        }
    }
}

struct conn *
monitor_first(void)
{
    return monitors;
}

/* One argument as sdscatrepr() writes it. */
static void
append_repr(struct textbuf *t, const char *s, size_t len)
{
    textbuf_append(t, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '\\': textbuf_append(t, "\\\\", 2); break;
        case '"': textbuf_append(t, "\\\"", 2); break;
        case '\n': textbuf_append(t, "\\n", 2); break;
        case '\r': textbuf_append(t, "\\r", 2); break;
        case '\t': textbuf_append(t, "\\t", 2); break;
        case '\a': textbuf_append(t, "\\a", 2); break;
        case '\b': textbuf_append(t, "\\b", 2); break;
        default:
            if (ch >= ' ' && ch <= '~') {
                textbuf_append(t, (const char *)&ch, 1);
            } else {
                textbuf_printf(t, "\\x%02x", ch);
            }
        }
    }
    textbuf_append(t, "\"", 1);
}

void
monitor_feed(struct conn *c, const struct resp_request *req)
{
    struct textbuf t = { 0 };
    int64_t us = clock_wall_us();
    textbuf_printf(&t, "+%" PRId64 ".%06" PRId64 " [%d %s%s] ",
                   us / US_PER_SEC, us % US_PER_SEC, c->db,
                   c->is_unix ? "unix:" : "",
                   c->script ? "lua"
                   : c->is_unix ? srv.conf.unixsocket : c->addr);
    for (size_t i = 0; i < req->argc; i++) {
        if (redact_arg(req, i)) {
            textbuf_append(&t, "\"(redacted)\"", 12);
        } else {
            append_repr(&t, req->argv[i], req->argvlen[i]);
        }
        if (i + 1 < req->argc) {
            textbuf_append(&t, " ", 1);
        }
    }
    textbuf_append(&t, "\r\n", 2);
    if (!t.oom) {
        for (struct conn *m = monitors; m != NULL; m = m->next_monitor) {
            obuf_append(&m->out, t.p, t.len);
        }
        c->requests |= CLIENT_FEEDS;
    }
    textbuf_free(&t);
}
