/* device_emu_code.c - the emulator device's module code: running kernels
 * in the emulator of emu/ (emu/emu.h). Built into the compiler's library
 * (tilec_runtime_compile), not the runtime proper, because emu/ links
 * LLVM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "runtime/internal.h"

enum { EMU_REPORT_TOP = 5 }; /* conflicted instructions a bank report names */

/* The emulator device's launch. With TILEC_EMU_SMEM_STATS set (not empty,
 * not "0"), each launch also counts shared-memory bank conflicts
 * (emu/emu.h) and prints the report to stderr: the per-kind wavefronts
 * against the ideal and the worst instructions. */
static emu_result emu_run_counted(const emu_module *m, const emu_launch *l, char *err, size_t err_size) {
    const char *want = getenv("TILEC_EMU_SMEM_STATS");
    if (!want || !*want || !strcmp(want, "0") || l->smem_stats) return emu_run(m, l, err, err_size);
    emu_smem_stats st;
    memset(&st, 0, sizeof st);
    emu_launch counted = *l;
    counted.smem_stats = &st;
    emu_result res = emu_run(m, &counted, err, err_size);
    size_t n = emu_smem_report(&st, EMU_REPORT_TOP, NULL, 0);
    char *text = malloc(n + 1);
    if (text) {
        emu_smem_report(&st, EMU_REPORT_TOP, text, n + 1);
        fprintf(stderr, "tilec emu: kernel '%s', grid (%u, %u, %u): %s", l->kernel, l->grid[0], l->grid[1],
                l->grid[2], text);
        free(text);
    }
    emu_smem_stats_free(&st);
    return res;
}

const rt_emu_ops rt_emu_run = {emu_run_counted, emu_module_free};
