/* file.c - whole-file reads and a monotonic clock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "support/support.h"

bool tc_read_file(const char *path, char **data, size_t *len, const char **err) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *err = strerror(errno);
        return false;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        *err = "is a directory";
        return false;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) abort();
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            cap *= 2;
            char *p = realloc(buf, cap);
            if (!p) abort();
            buf = p;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        *err = "read error";
        return false;
    }
    *data = buf;
    *len = n;
    return true;
}

double tc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
