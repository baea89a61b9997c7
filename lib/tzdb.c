/*
 * tzdb.c - zones by name, read from the zone folder, cached (see tzdb.h).
 *
 * Design. The cache is a small array searched linearly (64 names compare
 * in less time than one file's open), each entry stamped with a use
 * counter; a miss fills a free slot or the oldest stamp's. Nothing is
 * cached for a name that fails, so a junk name costs one failed open()
 * each time and never evicts a good zone.
 */
#include "lib/tzdb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/file.h"
#include "lib/mem.h"

struct entry {
    char *name;             /* NULL: a free slot */
    size_t len;
    struct tz_zone *zone;
    unsigned long long used;
};

static struct entry cache[TZDB_CACHE];
static unsigned long long clock_ticks;

static bool
name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '_' || ch == '+' || ch == '-';
}

bool
tzdb_name_valid(const char *name, size_t len)
{
    if (len == 0 || len > TZDB_NAME_MAX) {
        return false;
    }
    bool component_start = true;
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];
        if (ch == '/') {
            if (component_start) {
                return false;       /* leading '/' or "//" */
            }
            component_start = true;
        } else if (name_char(ch) || (ch == '.' && !component_start)) {
            component_start = false;
        } else {
            return false;           /* a '.' first: "." and ".." */
        }
    }
    return !component_start;       /* no trailing '/' */
}

static const char *
zone_dir(void)
{
    const char *d = getenv("TZDIR");
    return d != NULL && d[0] != '\0' ? d : "/usr/share/zoneinfo";
}

enum tzdb_status
tzdb_load(const char *name, size_t len, struct tz_zone **out)
{
    char path[4096];
    struct stat st;
    size_t flen;
    const char *why;
    if (!tzdb_name_valid(name, len) ||
        snprintf(path, sizeof(path), "%s/%.*s", zone_dir(), (int)len,
                 name) >= (int)sizeof(path) ||
        stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        return TZDB_UNKNOWN;
    }
    if (st.st_size > TZDB_FILE_MAX) {
        return TZDB_CORRUPT;
    }
    unsigned char *bytes = file_read_all(path, &flen);
    if (bytes == NULL) {
        return errno == ENOMEM ? TZDB_NOMEM : TZDB_UNKNOWN;
    }
    enum tzif_status s = tzif_parse(bytes, flen, out, &why);
    free(bytes);
    return s == TZIF_OK ? TZDB_OK
           : s == TZIF_ENOMEM ? TZDB_NOMEM : TZDB_CORRUPT;
}

static void
drop(struct entry *e)
{
    mem_free(e->name);
    tz_free(e->zone);
    memset(e, 0, sizeof(*e));
}

/* A free slot, or the least recently used one emptied. */
static struct entry *
victim(void)
{
    struct entry *v = &cache[0];
    for (size_t i = 0; i < TZDB_CACHE; i++) {
        if (cache[i].name == NULL) {
            return &cache[i];
        }
        if (cache[i].used < v->used) {
            v = &cache[i];
        }
    }
    drop(v);
    return v;
}

enum tzdb_status
tzdb_get(const char *name, size_t len, const struct tz_zone **out)
{
    for (size_t i = 0; i < TZDB_CACHE; i++) {
        struct entry *e = &cache[i];
        if (e->name != NULL && e->len == len &&
            memcmp(e->name, name, len) == 0) {
            e->used = ++clock_ticks;
            *out = e->zone;
            return TZDB_OK;
        }
    }
    struct tz_zone *z;
    enum tzdb_status s = tzdb_load(name, len, &z);
    if (s != TZDB_OK) {
        return s;
    }
    char *copy = mem_malloc(len);
    if (copy == NULL) {
        tz_free(z);
        return TZDB_NOMEM;
    }
    memcpy(copy, name, len);
    struct entry *e = victim();
    *e = (struct entry){ copy, len, z, ++clock_ticks };
    *out = z;
    return TZDB_OK;
}

void
tzdb_flush(void)
{
    for (size_t i = 0; i < TZDB_CACHE; i++) {
        if (cache[i].name != NULL) {
            drop(&cache[i]);
        }
    }
}
