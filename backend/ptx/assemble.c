/* assemble.c - which assembler turns PTX into a cubin: nvJitLink in this
 * process where the library loads (jitlink.c), else the ptxas program
 * (ptxas.c); TILEC_ASSEMBLER forces one, and a TILEC_PTXAS naming a
 * ptxas (or none) keeps the process, as tests and scripts that set it
 * expect. */
#include <stdlib.h>
#include <string.h>

#include "backend/ptx/ptx.h"

enum { ASM_WHY_MAX = 4096 + 128 };

bool ptx_assemble(const char *ptx, size_t len, const char *arch, int opt_level, bool verbose, char **cubin,
                  size_t *cubin_size, tc_strbuf *info, tc_diag *diag) {
    const char *choice = getenv("TILEC_ASSEMBLER");
    if (!choice || !*choice) choice = "auto";
    bool jitlink;
    if (!strcmp(choice, "nvjitlink")) {
        jitlink = true;
    } else if (!strcmp(choice, "ptxas")) {
        jitlink = false;
    } else if (!strcmp(choice, "auto")) {
        char why[ASM_WHY_MAX];
        jitlink = !getenv("TILEC_PTXAS") && ptx_jitlink_find(why, sizeof why);
    } else {
        *cubin = NULL;
        *cubin_size = 0;
        tc_error_plain(diag, "TILEC_ASSEMBLER must be auto, nvjitlink or ptxas, not '%s'", choice);
        return false;
    }
    return (jitlink ? ptx_jitlink_assemble : ptx_ptxas_assemble)(ptx, len, arch, opt_level, verbose, cubin,
                                                                 cubin_size, info, diag);
}
