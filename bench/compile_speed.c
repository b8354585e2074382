/* compile_speed - how long tilec takes to compile a kernel to a cubin.
 *
 * usage: tilec-bench-compile [-n RUNS] FILE.tile...
 * For each file: RUNS compilations to a cubin in this process (the first,
 * cold one reported apart), then the median of each phase as libtilec
 * measures it: front end + IR passes, LLVM codegen + PTX, ptxas. Without
 * ptxas the cubin column says so and the goal line is not claimed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"
#include "tilec.h"

enum { DEFAULT_RUNS = 21, MAX_RUNS = 1000 };

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

int main(int argc, char **argv) {
    int runs = DEFAULT_RUNS, first = 1;
    if (argc > 2 && !strcmp(argv[1], "-n")) {
        runs = atoi(argv[2]);
        first = 3;
    }
    if (runs < 1 || runs > MAX_RUNS || first >= argc) {
        fprintf(stderr, "usage: %s [-n RUNS (1-%d)] FILE.tile...\n", argv[0], MAX_RUNS);
        return 2;
    }
    printf("%-28s %5s %9s %12s %12s %10s %10s\n", "kernel file", "lines", "cold ms", "front+IR ms",
           "LLVM+PTX ms", "ptxas ms", "total ms");
    int rc = 0;
    for (int f = first; f < argc; f++) {
        char *text;
        size_t len;
        const char *err;
        if (!tc_read_file(argv[f], &text, &len, &err)) {
            fprintf(stderr, "cannot read %s: %s\n", argv[f], err);
            return 1;
        }
        double *fe = calloc((size_t)runs, sizeof(double)), *ll = calloc((size_t)runs, sizeof(double)),
               *px = calloc((size_t)runs, sizeof(double)), *tot = calloc((size_t)runs, sizeof(double));
        double cold = 0;
        bool have_cubin = true;
        for (int r = -1; r < runs; r++) {
            tilec_options opt;
            tilec_options_init(&opt);
            tilec_output out;
            double t0 = tc_now_ms();
            tilec_status st = tilec_compile(argv[f], text, len, &opt, &out);
            double t = tc_now_ms() - t0;
            if (st == TILEC_ERR_TOOL && strstr(out.diagnostics, "ptxas not found")) {
                /* No ptxas: time up to PTX and say so. */
                tilec_output_free(&out);
                opt.emit = TILEC_EMIT_PTX;
                have_cubin = false;
                t0 = tc_now_ms();
                st = tilec_compile(argv[f], text, len, &opt, &out);
                t = tc_now_ms() - t0;
            }
            if (st != TILEC_OK) {
                fprintf(stderr, "%s: compile failed:\n%s", argv[f], out.diagnostics);
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
            char ptxas[32];
            if (have_cubin)
                snprintf(ptxas, sizeof ptxas, "%10.2f", median(px, runs));
            else
                snprintf(ptxas, sizeof ptxas, "%10s", "no ptxas");
            const char *base = strrchr(argv[f], '/');
            printf("%-28s %5d %9.2f %12.2f %12.2f %s %10.2f\n", base ? base + 1 : argv[f], lines_of(text, len), cold,
                   median(fe, runs), median(ll, runs), ptxas, median(tot, runs));
        }
        free(fe), free(ll), free(px), free(tot), free(text);
        if (rc) break;
    }
    printf("(median of %d warm runs per file; 'cold' is the first compile in the process)\n", runs);
    return rc;
}
