/*
 * keylog.c - see keylog.h. Each entry: its head, then the key's bytes.
 */
#include "lib/keylog.h"

#include <string.h>

struct keylog_head {
    const char *tag;
    int db;
    size_t len;
};

bool
keylog_put(struct membuf *log, const char *tag, int db, const char *key,
           size_t len)
{
    struct keylog_head h = { tag, db, len };
    size_t mark = log->len;
    if (!membuf_put(log, &h, sizeof(h)) || !membuf_put(log, key, len)) {
        log->len = mark;
        return false;
    }
    return true;
}

bool
keylog_next(const struct membuf *log, size_t *off, struct keylog_entry *e)
{
    struct keylog_head h;
    if (*off + sizeof(h) > log->len) {
        return false;
    }
    memcpy(&h, log->p + *off, sizeof(h));
    *e = (struct keylog_entry){ h.tag, h.db,
                                (const char *)log->p + *off + sizeof(h),
                                h.len };
    *off += sizeof(h) + h.len;
    return true;
}
