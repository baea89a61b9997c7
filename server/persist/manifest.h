/*
 * manifest.h - the journal's manifest as text (persist.h): which files
 * hold the keyspace, in order, one "file <name> seq <n> type b|i" line
 * each, the base (b) first if there is one, then the incr files (i).
 *
 * Pure: lines in, entries out, and back. Reading and replacing the file
 * itself is persist.c's.
 */
#ifndef CELLGATE_MANIFEST_H
#define CELLGATE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MANIFEST_NAME_LEN 512       /* a name is at most 511 bytes */
#define MANIFEST_MAX 64             /* files one manifest may list */
/* A line as read or written: an entry's words around its name. */
#define MANIFEST_LINE_LEN (MANIFEST_NAME_LEN + 64)

struct aof_file {
    char name[MANIFEST_NAME_LEN];   /* one word, no '/' */
    uint64_t seq;
    char type;                      /* 'b' base, 'i' incr */
};

struct manifest {
    struct aof_file f[MANIFEST_MAX];
    size_t n;
};

/* One line of a manifest into m: 0 for a line to skip (empty, or a
 * comment: '#' first), 1 when an entry was added to m, -1 when the line
 * is no entry, m is full, or it names a base after the first entry (m
 * unchanged then). */
int manifest_add_line(struct manifest *m, const char *line);

/* The line of f, newline included, into out (snprintf's rules: the
 * length it needs, which fits when below len). */
int manifest_format_line(const struct aof_file *f, char *out, size_t len);

#endif
