/* assemble.c - which assembler turns PTX into a cubin: the ptxas program
 * (ptxas.c) where it is found, else libnvJitLink in this process
 * (jitlink.c); TILEC_ASSEMBLER forces one.
 *
 * ptxas comes first because nvJitLink's cubins are not ptxas's: it
 * compiles relocatable code (ptxas -c) and links it, which on the stdlib
 * takes more registers in half the kernels, spills where ptxas does not,
 * ignores setmaxnreg (C7504: warp specialization's register split on
 * sm_90a) and serializes wgmmas in a function with calls (C7509):
 * tests/stdlib-no-spills.sh fails 52 of its 794 compilations through it.
 * docs/design.md, "PTX to a cubin", has the comparison and the timings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ptx/ptx.h"

enum { ASM_WHY_MAX = 4096 + 128 };

ptx_assembler ptx_pick_assembler(const char *choice, bool ptxas_named, bool (*ptxas_found)(void),
                                 bool (*jitlink_found)(void)) {
    if (choice && *choice && strcmp(choice, "auto"))
        return !strcmp(choice, "nvjitlink") ? PTX_ASM_NVJITLINK
               : !strcmp(choice, "ptxas")   ? PTX_ASM_PTXAS
                                            : PTX_ASM_UNKNOWN;
    if (ptxas_named || ptxas_found()) return PTX_ASM_PTXAS; /* TILEC_PTXAS: that one, or its "not found" */
    return jitlink_found() ? PTX_ASM_NVJITLINK : PTX_ASM_PTXAS;
}

static bool have_ptxas(void) {
    char path[ASM_WHY_MAX];
    return ptx_find_ptxas(path, sizeof path);
}

static bool have_jitlink(void) {
    char why[ASM_WHY_MAX];
    return ptx_jitlink_find(why, sizeof why);
}

static ptx_assembler choose(void) {
    return ptx_pick_assembler(getenv("TILEC_ASSEMBLER"), getenv("TILEC_PTXAS") != NULL, have_ptxas, have_jitlink);
}

bool ptx_assembler_describe(char *buf, size_t bufsize) {
    char where[ASM_WHY_MAX];
    switch (choose()) {
    case PTX_ASM_NVJITLINK: {
        bool ok = ptx_jitlink_find(where, sizeof where);
        snprintf(buf, bufsize, "%s%s", ok ? "in-process: " : "none: ", where);
        return ok;
    }
    case PTX_ASM_PTXAS: {
        bool ok = ptx_find_ptxas(where, sizeof where);
        if (ok) snprintf(buf, bufsize, "a process: %s", where);
        else snprintf(buf, bufsize, "none: ptxas not found");
        return ok;
    }
    case PTX_ASM_UNKNOWN: break;
    }
    snprintf(buf, bufsize, "TILEC_ASSEMBLER must be auto, nvjitlink or ptxas, not '%s'", getenv("TILEC_ASSEMBLER"));
    return false;
}

bool ptx_assemble(const char *ptx, size_t len, const ptx_asm_options *o, char **cubin, size_t *cubin_size,
                  tc_strbuf *info, tc_diag *diag) {
    switch (choose()) {
    case PTX_ASM_NVJITLINK: return ptx_jitlink_assemble(ptx, len, o, cubin, cubin_size, info, diag);
    case PTX_ASM_PTXAS: return ptx_ptxas_assemble(ptx, len, o, cubin, cubin_size, info, diag);
    case PTX_ASM_UNKNOWN: break;
    }
    *cubin = NULL;
    *cubin_size = 0;
    tc_error_plain(diag, "TILEC_ASSEMBLER must be auto, nvjitlink or ptxas, not '%s'", getenv("TILEC_ASSEMBLER"));
    return false;
}
