/*
 * file.c - see file.h.
 */
#include "lib/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

unsigned char *
file_read_all(const char *path, size_t *len)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    unsigned char *buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    size_t got = 0;
    while (buf != NULL && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    if (buf == NULL || got != (size_t)st.st_size) {
        int e = buf == NULL ? ENOMEM : EIO;
        free(buf);
        errno = e;
        return NULL;
    }
    *len = got;
    return buf;
}

void
file_sync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
}

void
file_sync_parent(const char *path)
{
    char dir[4200];
    const char *slash = strrchr(path, '/');
    size_t n = slash == NULL ? 0 : (size_t)(slash - path);
    if (slash == NULL) {
        file_sync_dir(".");
    } else if (n == 0) {
        file_sync_dir("/");
    } else if (n < sizeof(dir)) {
        memcpy(dir, path, n);
        dir[n] = '\0';
        file_sync_dir(dir);
    }
}
