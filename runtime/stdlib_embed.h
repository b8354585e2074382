/* stdlib_embed.h (runtime/) - the stdlib's .tile sources, compiled into the
 * library at build time (cmake/embed-stdlib.cmake writes the table from
 * every .tile file of stdlib/), so that the stdlib entry points (runtime/stdlib.c) never
 * look for files at run time. */
#ifndef TILEC_RUNTIME_STDLIB_EMBED_H
#define TILEC_RUNTIME_STDLIB_EMBED_H

#include <stddef.h>

typedef struct rt_embedded_file {
    const char *name; /* "stdlib/softmax.tile", as diagnostics name it */
    const char *text; /* NUL-terminated */
    size_t len;       /* bytes, without the NUL */
} rt_embedded_file;

extern const rt_embedded_file rt_stdlib_files[];
extern const size_t rt_stdlib_nfiles;

#endif
