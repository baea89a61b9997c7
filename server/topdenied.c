/*
 * topdenied.c - the most denied keys per database (see topdenied.h).
 *
 * Only the deny path pays: one keyed hash of the key (the keyspace's
 * SipHash, so a client cannot aim keys at one index run) and one record;
 * an allowed request never reaches here.
 */
#include "server/topdenied.h"

#include "lib/mem.h"
#include "lib/textbuf.h"
#include "server/clock.h"
#include "server/keyspace_db.h"
#include "server/server.h"

static struct topk **tables;    /* ntables summaries, NULL until denied */
static size_t ntables;          /* srv.ndbs when tables was made */

static size_t
wanted_capacity(void)
{
    return srv.conf.top_denied_keys > 0 ? (size_t)srv.conf.top_denied_keys
                                        : 0;
}

void
topdenied_teardown(void)
{
    if (tables == NULL) {
        return;
    }
    for (size_t i = 0; i < ntables; i++) {
        topk_destroy(tables[i]);
    }
    mem_free(tables);
    tables = NULL;
    ntables = 0;
}

/* db's summary at the configured size, made (again) if needed; NULL when
 * off, out of range or out of memory (then denials go uncounted). */
static struct topk *
table_of(int db, bool create)
{
    size_t cap = wanted_capacity();
    if (cap == 0) {
        topdenied_teardown();
        return NULL;
    }
    if (tables == NULL) {
        if (!create || srv.ndbs == 0) {
            return NULL;
        }
        tables = mem_calloc(srv.ndbs, sizeof(*tables));
        if (tables == NULL) {
            return NULL;
        }
        ntables = srv.ndbs;
    }
    if (db < 0 || (size_t)db >= ntables) {
        return NULL;
    }
    struct topk *t = tables[db];
    if (t != NULL && topk_capacity(t) != cap) {
        topk_destroy(t);
        tables[db] = t = NULL;
    }
    if (t == NULL && create) {
        tables[db] = t = topk_create(cap, TOPDENIED_WINDOW_NS,
                                     clock_wall_now());
    }
    return t;
}

void
topdenied_note(int db, const char *key, size_t len, const uint64_t *hash)
{
    /* Most denials find their summary made at the configured size. */
    struct topk *t = tables != NULL && db >= 0 && (size_t)db < ntables
                         ? tables[db] : NULL;
    if (t == NULL || topk_capacity(t) != wanted_capacity()) {
        t = table_of(db, true);
        if (t == NULL) {
            return;
        }
    }
    /* The summary hashes the bytes it keeps: the whole key's hash (the
     * one the lookup already made) serves when it keeps them all. */
    uint64_t h = hash != NULL && len <= TOPK_KEY_MAX
                     ? *hash
                     : keyspace_key_hash(key, len > TOPK_KEY_MAX
                                                  ? TOPK_KEY_MAX : len);
    topk_record(t, key, len, h, clock_wall_now());
}

size_t
topdenied_top(int db, struct topk_entry *out, size_t max)
{
    struct topk *t = table_of(db, false);
    if (t == NULL) {
        return 0;
    }
    topk_decay(t, clock_wall_now());
    return topk_top(t, out, max);
}

void
topdenied_reset(void)
{
    if (tables == NULL) {
        return;
    }
    for (size_t i = 0; i < ntables; i++) {
        if (tables[i] != NULL) {
            topk_clear(tables[i]);
        }
    }
}

void
topdenied_quote(struct textbuf *t, const char *key, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)key[i];
        if (ch == '\\' || ch == '"') {
            textbuf_printf(t, "\\%c", ch);
        } else if (ch < 0x20 || ch > 0x7e) {
            textbuf_printf(t, "\\\\x%02x", ch);
        } else {
            textbuf_append(t, &key[i], 1);
        }
    }
}
