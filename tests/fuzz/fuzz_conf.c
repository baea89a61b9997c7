/*
 * fuzz_conf.c - libFuzzer driver for the configuration parser
 * (conf/conf.c): the input is a config file; then, split at the first NUL,
 * a "--name value" command line is tried as well.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
try_file(const uint8_t *data, size_t size)
{
    char path[64];
    char err[CONF_ERR_LEN];
    struct conf c;
    int fd = memfd_create("fuzz.conf", 0);
    if (fd < 0) {
        return;
    }
    if (write(fd, data, size) == (ssize_t)size && conf_init(&c) == 0) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (conf_load_file(&c, path, err, sizeof(err)) < 0 &&
            memchr(err, '\0', sizeof(err)) == NULL) {
            abort();
        }
        (void)conf_validate(&c, NULL, err, sizeof(err));
        size_t n;
        const struct conf_option *o = conf_options(&n);
        for (size_t i = 0; i < n; i++) {
            char buf[256];
            if (conf_format(&c, &o[i], buf, sizeof(buf)) >= sizeof(buf)) {
                abort();
            }
        }
    }
    conf_deinit(&c);
    close(fd);
}

/* Up to 8 words separated by NULs become argv[1..]. */
static void
try_args(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1);
    char *argv[10] = { (char *)"cellgate" };
    int argc = 1;
    char err[CONF_ERR_LEN];
    struct conf c;
    if (copy == NULL) {
        return;
    }
    memcpy(copy, data, size);
    copy[size] = '\0';
    for (char *s = copy; argc < 9 && s < copy + size; s += strlen(s) + 1) {
        argv[argc++] = s;
    }
    argv[argc] = NULL;
    if (conf_init(&c) == 0) {
        (void)conf_load_args(&c, argc, argv, err, sizeof(err));
    }
    conf_deinit(&c);
    free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) {
        return 0;
    }
    try_file(data, size);
    if (memchr(data, '\0', size) != NULL) {
        try_args(data, size);
    }
    return 0;
}
