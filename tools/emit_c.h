/* emit_c.h - private to tools/: `tilec --emit=c` (emit_c.c). */
#ifndef TILEC_TOOLS_EMIT_C_H
#define TILEC_TOOLS_EMIT_C_H

#include <stdbool.h>
#include <stddef.h>

#include "tilec.h"

enum { EMIT_C_MAX_ARCHS = 8 }; /* --arch options one --emit=c takes */

/* Compiles `text` (the file `input`, len bytes) with `base`'s options for
 * each of archs (cubins; none with ptx_only) and the PTX of the newest, and
 * writes out_prefix.h and out_prefix.c. Returns the exit status tilec
 * documents: a tilec_status (1 also for a file that cannot be written). */
int tilec_emit_c(const char *input, const char *text, size_t len, const char *out_prefix, const tilec_options *base,
                 const char *const *archs, size_t narchs, bool ptx_only);

#endif
