/* interp_speed - the CPU interpreter on vadd over 2^24 f32 elements.
 *
 * usage: tilec-bench-interp [RUNS]
 * Compiles samples/vadd.tile's IR, runs it over the whole grid RUNS times
 * (BLOCK 1024, 16384 program instances), checks the result against C and
 * prints the median time and the rate in elements per second. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "lower/lower.h"
#include "parser/parser.h"
#include "runtime/interp.h"

enum { N = 1 << 24, BLOCK = 1024, DEFAULT_RUNS = 5 };

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : DEFAULT_RUNS;
    if (runs < 1 || runs > 100) runs = DEFAULT_RUNS;
    char *text;
    size_t len;
    const char *err;
    if (!tc_read_file(TILEC_SOURCE_DIR "/samples/vadd.tile", &text, &len, &err)) {
        fprintf(stderr, "cannot read samples/vadd.tile: %s\n", err);
        return 1;
    }
    tc_arena *arena = tc_arena_new();
    tc_diag diag;
    tc_diag_init(&diag);
    tc_source src = {.name = "samples/vadd.tile", .text = text, .len = len};
    ast_module *ast = parse_module(arena, &src, &diag);
    tir_module *m = diag.nerrors ? NULL : lang_to_tir(ast, NULL, arena, &diag);
    lower_options opt = {0};
    if (!m || !lower_simplify(m, &opt, &diag)) {
        fprintf(stderr, "%s", diag.out.data);
        return 1;
    }
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *out = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 1000) * 0.5f, y[i] = (float)(i % 777) - 3.0f;
    rt_buffer bufs[3] = {{x, sizeof(float) * N}, {y, sizeof(float) * N}, {out, sizeof(float) * N}};
    rt_arg args[4] = {{.kind = RT_ARG_PTR, .buffer = 0}, {.kind = RT_ARG_PTR, .buffer = 1},
                      {.kind = RT_ARG_PTR, .buffer = 2}, {.kind = RT_ARG_INT, .i = N}};
    rt_launch l = {.func = m->funcs, .file = src.name, .buffers = bufs, .nbuffers = 3, .args = args, .nargs = 4,
                   .grid = {N / BLOCK, 1, 1}};
    double *t = calloc((size_t)runs, sizeof(double));
    int rc = 0;
    for (int r = 0; r < runs && !rc; r++) {
        for (int i = 0; i < N; i++) out[i] = NAN;
        double t0 = tc_now_ms();
        if (!rt_interp_run(&l, &diag)) {
            fprintf(stderr, "%s", diag.out.data);
            rc = 1;
        }
        t[r] = tc_now_ms() - t0;
        for (int i = 0; i < N && !rc; i++)
            if (out[i] != x[i] + y[i]) {
                fprintf(stderr, "wrong result at %d\n", i);
                rc = 1;
            }
    }
    if (!rc) {
        qsort(t, (size_t)runs, sizeof(double), cmp);
        double med = t[runs / 2];
        printf("interpreter vadd, 2^24 f32 elements, BLOCK %d: median %.1f ms over %d runs (%.1f M elements/s)\n",
               BLOCK, med, runs, N / med / 1e3);
    }
    free(t), free(x), free(y), free(out), free(text);
    tc_diag_free(&diag);
    tc_arena_free(arena);
    return rc;
}
