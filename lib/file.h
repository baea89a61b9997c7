/*
 * file.h - a whole file into memory, for the loaders of the snapshot and
 * the journal (both check every byte, so they read it all first).
 */
#ifndef CELLGATE_FILE_H
#define CELLGATE_FILE_H

#include <stddef.h>

/* path's bytes in a malloc'd buffer (free() it), *len their count; NULL
 * with errno set (ENOENT for a missing file) when it cannot be read. */
unsigned char *file_read_all(const char *path, size_t *len);

/* fsync a folder, or the folder holding path, so a file created or renamed
 * in it survives a crash of the machine (errors ignored: the data itself
 * was fsynced; this is the name). */
void file_sync_dir(const char *dir);
void file_sync_parent(const char *path);

#endif
