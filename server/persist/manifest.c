/*
 * manifest.c - see manifest.h.
 */
#include "server/persist/manifest.h"

#include <stdio.h>
#include <string.h>

/* One "file <name> seq <n> type b|i" line; false when it is not one. */
static bool
parse_line(const char *line, struct aof_file *f)
{
    char name[MANIFEST_NAME_LEN], type[4];
    unsigned long long seq;
    if (sscanf(line, "file %511s seq %llu type %3s", name, &seq, type) != 3 ||
        strchr(name, '/') != NULL || (type[0] != 'b' && type[0] != 'i') ||
        type[1] != '\0') {
        return false;
    }
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->seq = seq;
    f->type = type[0];
    return true;
}

int
manifest_add_line(struct manifest *m, const char *line)
{
    if (line[0] == '\n' || line[0] == '#') {
        return 0;
    }
    if (m->n == MANIFEST_MAX || !parse_line(line, &m->f[m->n]) ||
        (m->f[m->n].type == 'b' && m->n > 0)) {
        return -1;
    }
    m->n++;
    return 1;
}

int
manifest_format_line(const struct aof_file *f, char *out, size_t len)
{
    return snprintf(out, len, "file %s seq %llu type %c\n", f->name,
                    (unsigned long long)f->seq, f->type);
}
