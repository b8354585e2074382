/* compile_speed - how long tilec takes to compile a kernel to a cubin.
 *
 * usage: tilec-bench-compile [-n RUNS] [-a auto|ptxas|nvjitlink|both]
 *            [-k KERNEL] [-D NAME=VALUE]... [-w WARPS] [-s STAGES] [-A ARCH] FILE.tile...
 * For each file: RUNS compilations to a cubin in this process (the first,
 * cold one reported apart: with nvJitLink it loads the library), then the
 * median of each phase as libtilec measures it: front end + IR passes,
 * LLVM codegen + PTX, PTX to cubin (the assembler: -a sets
 * TILEC_ASSEMBLER, "both" times each in turn; the line above the table
 * says which ran). Without an assembler the cubin column says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/ptx/ptx.h"
#include "support/support.h"
#include "tilec.h"

enum { DEFAULT_RUNS = 21, MAX_RUNS = 1000, MAX_DEFINES = 32 };

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int lines_of(const char *s, size_t n) {
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += s[i] == '\n';
    return lines;
}

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [-n RUNS (1-%d)] [-a auto|ptxas|nvjitlink|both] [-k KERNEL] [-D NAME=VALUE]... "
            "[-w WARPS] [-s STAGES] [-A ARCH] FILE.tile...\n",
            argv0, MAX_RUNS);
    return 2;
}

/* Times each file with the options; 0, or 1 when a compile failed. */
static int bench_files(char **files, int nfiles, int runs, const tilec_options *base) {
    int rc = 0;
    for (int f = 0; f < nfiles; f++) {
        char *text;
        size_t len;
        const char *err;
        if (!tc_read_file(files[f], &text, &len, &err)) {
            fprintf(stderr, "cannot read %s: %s\n", files[f], err);
            return 1;
        }
        double *fe = calloc((size_t)runs, sizeof(double)), *ll = calloc((size_t)runs, sizeof(double)),
               *px = calloc((size_t)runs, sizeof(double)), *tot = calloc((size_t)runs, sizeof(double));
        double cold = 0;
        bool have_cubin = true;
        for (int r = -1; r < runs; r++) {
            tilec_options opt = *base;
            tilec_output out;
            double t0 = tc_now_ms();
            tilec_status st = tilec_compile(files[f], text, len, &opt, &out);
            double t = tc_now_ms() - t0;
            if (st == TILEC_ERR_TOOL &&
                (strstr(out.diagnostics, "ptxas not found") || strstr(out.diagnostics, "nvJitLink not available"))) {
                /* No assembler: time up to PTX and say so. */
                tilec_output_free(&out);
                opt.emit = TILEC_EMIT_PTX;
                have_cubin = false;
                t0 = tc_now_ms();
                st = tilec_compile(files[f], text, len, &opt, &out);
                t = tc_now_ms() - t0;
            }
            if (st != TILEC_OK) {
                fprintf(stderr, "%s: compile failed:\n%s", files[f], out.diagnostics);
                tilec_output_free(&out);
                rc = 1;
                break;
            }
            if (r < 0) {
                cold = t;
            } else {
                fe[r] = out.ms_frontend;
                ll[r] = out.ms_llvm;
                px[r] = out.ms_ptxas;
                tot[r] = t;
            }
            tilec_output_free(&out);
        }
        if (!rc) {
            char asm_ms[32];
            if (have_cubin)
                snprintf(asm_ms, sizeof asm_ms, "%10.2f", median(px, runs));
            else
                snprintf(asm_ms, sizeof asm_ms, "%10s", "no asm");
            const char *name = strrchr(files[f], '/');
            printf("%-28s %5d %9.2f %12.2f %12.2f %s %10.2f\n", name ? name + 1 : files[f], lines_of(text, len), cold,
                   median(fe, runs), median(ll, runs), asm_ms, median(tot, runs));
        }
        free(fe), free(ll), free(px), free(tot), free(text);
        if (rc) break;
    }
    return rc;
}

int main(int argc, char **argv) {
    int runs = DEFAULT_RUNS;
    const char *assembler = NULL;
    tilec_define defines[MAX_DEFINES];
    tilec_options opt;
    tilec_options_init(&opt);
    opt.defines = defines;
    for (int c; (c = getopt(argc, argv, "n:a:k:D:w:s:A:")) != -1;) {
        switch (c) {
        case 'n': runs = atoi(optarg); break;
        case 'a': assembler = optarg; break;
        case 'k': opt.kernel = optarg; break;
        case 'w': opt.num_warps = atoi(optarg); break;
        case 's': opt.num_stages = atoi(optarg); break;
        case 'A': opt.arch = optarg; break;
        case 'D': {
            char *eq = strchr(optarg, '=');
            if (!eq || opt.ndefines == MAX_DEFINES) return usage(argv[0]);
            *eq = 0;
            defines[opt.ndefines++] = (tilec_define){.name = optarg, .value = atoll(eq + 1)};
            break;
        }
        default: return usage(argv[0]);
        }
    }
    if (runs < 1 || runs > MAX_RUNS || optind >= argc) return usage(argv[0]);
    const char *const both[] = {"ptxas", "nvjitlink"};
    bool two = assembler && !strcmp(assembler, "both");
    int rc = 0;
    for (int a = 0; a < (two ? 2 : 1) && !rc; a++) {
        if (assembler) setenv("TILEC_ASSEMBLER", two ? both[a] : assembler, 1);
        char which[4096 + 256];
        ptx_assembler_describe(which, sizeof which);
        printf("PTX to cubin: %s\n", which);
        printf("%-28s %5s %9s %12s %12s %10s %10s\n", "kernel file", "lines", "cold ms", "front+IR ms",
               "LLVM+PTX ms", "asm ms", "total ms");
        rc = bench_files(argv + optind, argc - optind, runs, &opt);
    }
    printf("(median of %d warm runs per file; 'cold' is the first compile in the process)\n", runs);
    return rc;
}
