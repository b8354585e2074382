/* Bank conflicts of stdlib/matmul.tile's staged operands, counted by the
 * emulator (emu/emu.h's bank accounting) on the optimized NVPTX LLVM IR the
 * compiler ships (what the runtime's emulator device runs): issue 5 wants
 * dot's operands staged through shared memory in a swizzled layout read
 * by ldmatrix without bank conflicts (lower/stage_operands.c). For
 * matmul_f16 and matmul_bf16 at the runtime's tile configurations
 * (runtime/stdlib.c's matmul_configs) and every pair of fast-path operand
 * layouts, one CTA's product must have ldmatrix wavefronts == ideal,
 * cp.async shared writes wavefronts == ideal, and the epilogue's layout
 * conversion of the accumulator (C's element type through the scratch
 * area, lower/cg_xthread.c's plan_move) in wide accesses at the ideal: its
 * stores 16 bytes a lane at 128x128 (plan_move's gather plan: 4 column
 * pairs one writer and one reader hold), at least 4 (the mma layout's
 * column pairs) at the smaller tiles, where no such 16 bytes exist (the
 * configs' comment), its loads 16 (the store layout's runs), every one
 * wavefronts == ideal (issue 19); the results are checked against a
 * double reference too, so the counted run is a correct one. The other
 * plain shared loads and stores (the index tiles' small conversions,
 * matmul_f32's element-wise tf32 operand loads, its epilogue: 16-byte
 * pieces of 2 f32 pairs at 64x64) are printed, not gated.
 *
 * A conflict found goes in known_conflicts (below) with what it is: such
 * a case prints KNOWN FAILURE loudly and is not counted as passing, and
 * passing while listed fails the test, so the list stays true.
 *
 * Usage: test_emu_matmul_banks [f16|bf16|f32] (default: all); ctest runs
 * each dtype as its own test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "half_float.h"
#include "support/support.h"
#include "tilec.h"

enum {
    ERR = 8192,
    REPORT = 16384,
    LD_ALIGN = 8,    /* leading dims rounded up to this many elements: 16 bytes of f16 (layouts need it) */
    EVEN_K = 256,    /* K of the EVEN runs: 8 steps of BLOCK_K 32, past the 4-stage pipeline's prologue */
    NUM_STAGES = 4,  /* runtime/stdlib.c's matmul_configs */
    GROUP_M = 8,
    REPORT_TOP = 4,  /* conflicted instructions a report names */
    EPILOGUE_PAIR_BYTES = 4,    /* the accumulator's column pairs of 16-bit elements */
    EPILOGUE_GATHER_BYTES = 16, /* 4 of them, one writer's and one reader's (plan_move's gather plan) */
    EPILOGUE_LOAD_BYTES = 16  /* C's store layout: 8 consecutive elements a thread */
};

typedef enum dtype { DT_F16, DT_BF16, DT_F32 } dtype;
static const char *const dtype_name[] = {"f16", "bf16", "f32"};
static const size_t dtype_size[] = {2, 2, 4};

typedef struct mm_case {
    dtype dt;
    int bm, bn, bk, warps;
    int store_bytes; /* the epilogue's shared stores, at least */
    int a_layout, b_layout;
    bool even;
    int M, N, K;
} mm_case;

/* A case known to be conflicted: printed as a KNOWN FAILURE, not as a
 * pass (match: dtype, BLOCK_M, A_LAYOUT, B_LAYOUT, EVEN; kind that is
 * conflicted). Empty: none known. */
typedef struct known_conflict {
    dtype dt;
    int bm, a_layout, b_layout;
    bool even;
    emu_smem_kind kind;
    const char *what; /* which buffer, which instruction, the ratio */
} known_conflict;

static const known_conflict known_conflicts[] = {
    /* none at the last run; the row keeps the array non-empty and matches no case */
    {DT_F16, -1, -1, -1, false, EMU_SMEM_KINDS, "placeholder"},
};

static double elem_get(dtype dt, const void *p, size_t i) {
    return dt == DT_F16 ? get_f16(p, i) : dt == DT_BF16 ? get_bf16(p, i) : get_f32(p, i);
}
static void elem_put(dtype dt, void *p, size_t i, float v) {
    if (dt == DT_F16) put_f16(p, i, v);
    else if (dt == DT_BF16) put_bf16(p, i, v);
    else put_f32(p, i, v);
}
static int round_up(int x, int m) { return (x + m - 1) / m * m; }
static float rand_nonzero(void) { /* +-[1/256, 4], exact in f16 and bf16 */
    float v = (float)(1 + rand() % 1024) / 256.0f;
    return rand() & 1 ? v : -v;
}

static char *read_source(const char *path, size_t *len) {
    char *s;
    const char *err;
    if (!tc_read_file(path, &s, len, &err)) fail_msg("cannot read %s: %s", path, err);
    return s;
}

static const char *source_text(size_t *len) {
    static char *src;
    static size_t n;
    if (!src) src = read_source(TILEC_SOURCE_DIR "/stdlib/matmul.tile", &n);
    *len = n;
    return src;
}

/* The kernel's optimized LLVM IR (*ir, malloc'd) and dynamic shared bytes. */
static void compile_case(const mm_case *c, const char *kernel, char **ir, size_t *ir_len, uint32_t *dynamic_smem) {
    tilec_define defs[] = {{"BLOCK_M", c->bm},       {"BLOCK_N", c->bn},       {"BLOCK_K", c->bk},
                           {"GROUP_M", GROUP_M},     {"A_LAYOUT", c->a_layout}, {"B_LAYOUT", c->b_layout},
                           {"C_LAYOUT", 1},          {"EVEN", c->even}};
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_LLVM;
    opt.llvm_optimized = true; /* what ships, and what the emulator device runs */
    opt.sidecar = true;        /* its tile IR says the dynamic shared memory */
    opt.arch = "sm_80";
    opt.kernel = kernel;
    opt.num_warps = c->warps;
    opt.num_stages = NUM_STAGES;
    opt.defines = defs;
    opt.ndefines = sizeof defs / sizeof defs[0];
    size_t len;
    const char *src = source_text(&len);
    tilec_output out;
    if (tilec_compile("stdlib/matmul.tile", src, len, &opt, &out) != TILEC_OK)
        fail_msg("%s: %s", kernel, out.diagnostics);
    const char *d = out.sidecar ? strstr(out.sidecar, "dynamic_smem(") : NULL;
    *dynamic_smem = d ? (uint32_t)strtoul(d + strlen("dynamic_smem("), NULL, 10) : 0;
    *ir = out.data;
    *ir_len = out.size;
    out.data = NULL;
    tilec_output_free(&out);
}

/* Runs the case's one CTA with bank accounting into *st, checking C. */
static void run_case(const mm_case *c, const char *kernel, emu_smem_stats *st) {
    char *ir;
    size_t ir_len;
    uint32_t dyn;
    compile_case(c, kernel, &ir, &ir_len, &dyn);
    char err[ERR];
    emu_module *m = emu_module_load(ir, ir_len, err, sizeof err);
    if (!m) fail_msg("%s", err);
    free(ir);
    int M = c->M, N = c->N, K = c->K;
    /* the operands as the layouts store them, leading dims padded to LD_ALIGN */
    int lda = c->a_layout == 2 ? round_up(M, LD_ALIGN) : round_up(K, LD_ALIGN);
    int ldb = c->b_layout == 2 ? round_up(K, LD_ALIGN) : round_up(N, LD_ALIGN);
    int ldc = round_up(N, LD_ALIGN);
    size_t an = (size_t)(c->a_layout == 2 ? K : M) * lda, bn = (size_t)(c->b_layout == 2 ? N : K) * ldb,
           cn = (size_t)M * ldc, es = dtype_size[c->dt];
    void *A = malloc(an * es), *B = malloc(bn * es), *C = malloc(cn * es);
    assert_true(A && B && C);
    for (size_t i = 0; i < an; i++) elem_put(c->dt, A, i, rand_nonzero());
    for (size_t i = 0; i < bn; i++) elem_put(c->dt, B, i, rand_nonzero());
    memset(C, 0xff, cn * es); /* poison: NaN in every dtype */
    int64_t sam = c->a_layout == 2 ? 1 : lda, sak = c->a_layout == 2 ? lda : 1;
    int64_t sbk = c->b_layout == 2 ? 1 : ldb, sbn = c->b_layout == 2 ? ldb : 1;
    emu_buffer bufs[3] = {{A, an * es}, {B, bn * es}, {C, cn * es}};
    emu_arg args[16] = {
        {true, 0, 0, 0}, {true, 1, 0, 0}, {true, 2, 0, 0}, {false, 0, 0, (uint64_t)M}, {false, 0, 0, (uint64_t)N},
        {false, 0, 0, (uint64_t)K}, {false, 0, 0, (uint64_t)sam}, {false, 0, 0, (uint64_t)sak},
        {false, 0, 0, (uint64_t)sbk}, {false, 0, 0, (uint64_t)sbn}, {false, 0, 0, (uint64_t)ldc},
        {false, 0, 0, 1}, {false, 0, 0, 0}, {false, 0, 0, 0}, {false, 0, 0, 0},
        {true, 2, 0, 0} /* bias: not read without HAS_BIAS */
    };
    uint32_t grid = (uint32_t)(((M + c->bm - 1) / c->bm) * ((N + c->bn - 1) / c->bn));
    memset(st, 0, sizeof *st);
    emu_launch l = {kernel, {grid, 1, 1}, args, 16, bufs, 3, NULL, NULL, dyn, st, 0};
    if (emu_run(m, &l, err, sizeof err) != EMU_OK) fail_msg("%s", err);
    emu_module_free(m);
    /* C against a double reference: products exact (f16, bf16) or of tf32
     * inputs, summed in f32, C rounded to its dtype */
    double tol_rel = c->dt == DT_BF16 ? 0x1p-7 : 0x1p-9;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double a = elem_get(c->dt, A, c->a_layout == 2 ? (size_t)k * lda + i : (size_t)i * lda + k);
                double b = elem_get(c->dt, B, c->b_layout == 2 ? (size_t)j * ldb + k : (size_t)k * ldb + j);
                ref += a * b, mag += fabs(a * b);
            }
            double got = elem_get(c->dt, C, (size_t)i * ldc + j);
            if (!(fabs(got - ref) <= tol_rel * mag))
                fail_msg("%s C[%d][%d] = %g, expected %g (tolerance %g)", kernel, i, j, got, ref, tol_rel * mag);
        }
    /* the padding past N stays poisoned: nothing is stored outside C */
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++)
            for (size_t b = 0; b < es; b++) assert_int_equal(((uint8_t *)C)[((size_t)i * ldc + j) * es + b], 0xff);
    free(A), free(B), free(C);
}

static const known_conflict *known(const mm_case *c, emu_smem_kind kind) {
    for (size_t i = 0; i < sizeof known_conflicts / sizeof known_conflicts[0]; i++) {
        const known_conflict *k = &known_conflicts[i];
        if (k->dt == c->dt && k->bm == c->bm && k->a_layout == c->a_layout && k->b_layout == c->b_layout &&
            k->even == c->even && k->kind == kind)
            return k;
    }
    return NULL;
}

typedef struct tally {
    int passed, known_failures, failed;
} tally;

static void print_count(const char *what, const emu_smem_count *n) {
    if (!n->instances) return;
    printf("  %s %llu/%llu (%.2fx)", what, (unsigned long long)n->wavefronts, (unsigned long long)n->ideal,
           n->ideal ? (double)n->wavefronts / (double)n->ideal : 1.0);
}

/* The plain accesses (loads, stores, atomics) with excess wavefronts,
 * grouped by kind, width and ratio: one line per group, naming its first
 * instruction. */
static void print_plain_conflicts(const emu_smem_stats *st) {
    bool shown[4096] = {false};
    uint32_t n = st->nsites < 4096 ? st->nsites : 4096;
    for (uint32_t i = 0; i < n; i++) {
        const emu_smem_site *s = &st->sites[i];
        if (shown[i] || s->kind == EMU_SMEM_LDMATRIX || s->kind == EMU_SMEM_CP_ASYNC ||
            s->count.wavefronts == s->count.ideal)
            continue;
        uint32_t same = 0;
        uint64_t wf = 0, ideal = 0;
        for (uint32_t j = i; j < n; j++) {
            const emu_smem_site *o = &st->sites[j];
            if (o->kind != s->kind || o->bytes != s->bytes ||
                o->count.wavefronts * s->count.ideal != s->count.wavefronts * o->count.ideal)
                continue;
            shown[j] = true, same++, wf += o->count.wavefronts, ideal += o->count.ideal;
        }
        printf("    plain %s of %u bytes a lane: %u instructions at %.2fx (%llu / %llu), as pc %u: %s\n",
               emu_smem_kind_name(s->kind), s->bytes, same, (double)wf / (double)ideal, (unsigned long long)wf,
               (unsigned long long)ideal, s->pc, s->text);
    }
}

/* One case: run, print every kind's ratio, gate ldmatrix and cp.async. */
static void check_case(const mm_case *c, tally *t) {
    char kernel[64];
    snprintf(kernel, sizeof kernel, "matmul_%s", dtype_name[c->dt]);
    emu_smem_stats st;
    run_case(c, kernel, &st);
    printf("%s %dx%dx%d w%d layouts (%d,%d) %s %dx%dx%d:", kernel, c->bm, c->bn, c->bk, c->warps, c->a_layout,
           c->b_layout, c->even ? "EVEN" : "masked", c->M, c->N, c->K);
    for (int k = 0; k < EMU_SMEM_KINDS; k++) print_count(emu_smem_kind_name((emu_smem_kind)k), &st.total[k]);
    printf("\n");
    bool conflicted_plain = st.total[EMU_SMEM_LOAD].wavefronts != st.total[EMU_SMEM_LOAD].ideal ||
                            st.total[EMU_SMEM_STORE].wavefronts != st.total[EMU_SMEM_STORE].ideal;
    static const emu_smem_kind gated[] = {EMU_SMEM_LDMATRIX, EMU_SMEM_CP_ASYNC};
    bool case_ok = true, case_known = false;
    for (size_t g = 0; g < sizeof gated / sizeof gated[0]; g++) {
        const emu_smem_count *n = &st.total[gated[g]];
        bool clean = n->wavefronts == n->ideal;
        const known_conflict *k = known(c, gated[g]);
        if (!n->instances) { /* nothing counted passes trivially: the operands must be staged */
            printf("  FAILED: no %s at all (the operands are not staged as issue 5 wants)\n",
                   emu_smem_kind_name(gated[g]));
            case_ok = false;
        }
        if (!clean && k) {
            printf("  *** KNOWN FAILURE (not counted as passing): %s conflicted: %s ***\n",
                   emu_smem_kind_name(gated[g]), k->what);
            case_known = true;
        } else if (!clean) {
            printf("  FAILED: %s wavefronts %llu != ideal %llu\n", emu_smem_kind_name(gated[g]),
                   (unsigned long long)n->wavefronts, (unsigned long long)n->ideal);
            case_ok = false;
        } else if (k) {
            printf("  FAILED: listed as a known %s conflict (%s) but conflict-free now: drop it from "
                   "known_conflicts\n",
                   emu_smem_kind_name(gated[g]), k->what);
            case_ok = false;
        }
    }
    /* the epilogue's conversion of the accumulator to C's layout: the
     * plain accesses of C's element type (LLVM's half or bfloat), wide and
     * at the ideal, and some of each kind (else nothing was checked) */
    const char *elem = c->dt == DT_F16 ? "half" : c->dt == DT_BF16 ? "bfloat" : NULL;
    uint32_t epilogue[EMU_SMEM_KINDS] = {0};
    for (uint32_t i = 0; elem && i < st.nsites; i++) {
        const emu_smem_site *site = &st.sites[i];
        bool store = site->kind == EMU_SMEM_STORE;
        if ((!store && site->kind != EMU_SMEM_LOAD) || !strstr(site->text, elem)) continue;
        epilogue[site->kind]++;
        uint32_t want = store ? (uint32_t)c->store_bytes : EPILOGUE_LOAD_BYTES;
        if (site->bytes < want) {
            printf("  FAILED: epilogue %s of %u bytes a lane (want %u or more), pc %u: %s\n",
                   emu_smem_kind_name(site->kind), site->bytes, want, site->pc, site->text);
            case_ok = false;
        }
        if (site->count.wavefronts != site->count.ideal) {
            printf("  FAILED: epilogue %s conflicted: %llu wavefronts, ideal %llu, pc %u: %s\n",
                   emu_smem_kind_name(site->kind), (unsigned long long)site->count.wavefronts,
                   (unsigned long long)site->count.ideal, site->pc, site->text);
            case_ok = false;
        }
    }
    if (elem && (!epilogue[EMU_SMEM_STORE] || !epilogue[EMU_SMEM_LOAD])) {
        printf("  FAILED: no epilogue %s of %s in shared memory counted\n",
               epilogue[EMU_SMEM_STORE] ? "load" : "store", elem);
        case_ok = false;
    }
    if (conflicted_plain) print_plain_conflicts(&st);
    if (!case_ok || case_known) {
        static char report[REPORT];
        emu_smem_report(&st, REPORT_TOP, report, sizeof report);
        printf("%s", report);
    }
    if (!case_ok) t->failed++;
    else if (case_known) t->known_failures++;
    else t->passed++;
    emu_smem_stats_free(&st);
}

/* runtime/stdlib.c's matmul_configs: BLOCK_M, BLOCK_N, BLOCK_K, num_warps,
 * and the epilogue's shared store width. 16 bytes need two row bits that
 * index a register of the accumulator and of the store layout both (rows
 * r + 8 and r + 16 at 128x128); at 64x64 with 4 warps they share one (r +
 * 16: 8-byte pieces at most, which would make the 16-byte loads 8-byte
 * ones), at 32x32 with 2 warps none. */
static const int configs[][5] = {{128, 128, 32, 4, EPILOGUE_GATHER_BYTES},
                                 {64, 64, 32, 4, EPILOGUE_PAIR_BYTES},
                                 {32, 32, 32, 2, EPILOGUE_PAIR_BYTES}};
static const int layouts[][2] = {{1, 1}, {2, 2}, {1, 2}, {2, 1}};

static dtype only_dtype = DT_F32; /* with all_dtypes false: the one to run */
static bool all_dtypes = true;

static void run_half(dtype dt) {
    tally t = {0, 0, 0};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        for (size_t j = 0; j < sizeof layouts / sizeof layouts[0]; j++) {
            const int *cf = configs[i];
            /* one CTA, K long enough for the pipeline's steady state */
            mm_case c = {dt, cf[0], cf[1], cf[2], cf[3], cf[4], layouts[j][0], layouts[j][1], true, cf[0], cf[1], EVEN_K};
            check_case(&c, &t);
        }
    /* masked: edges in M, N and a K tail, at the middle configuration */
    for (size_t j = 0; j < sizeof layouts / sizeof layouts[0]; j++) {
        mm_case c = {dt, 64, 64, 32, 4, EPILOGUE_PAIR_BYTES, layouts[j][0], layouts[j][1], false, 57, 45, 200};
        check_case(&c, &t);
    }
    printf("%s: %d passed, %d KNOWN FAILURES, %d failed\n", dtype_name[dt], t.passed, t.known_failures, t.failed);
    assert_int_equal(t.failed, 0);
}

static void test_f16(void **state) {
    (void)state;
    run_half(DT_F16);
}
static void test_bf16(void **state) {
    (void)state;
    run_half(DT_BF16);
}

/* matmul_f32 (tf32): printed, not gated (its B operand is loaded from
 * shared memory element-wise, not by ldmatrix). */
static void test_f32_printed(void **state) {
    (void)state;
    for (size_t j = 0; j < sizeof layouts / sizeof layouts[0]; j++) {
        mm_case c = {DT_F32, 64, 64, 32, 4, 0 /* not gated */, layouts[j][0], layouts[j][1], true, 64, 64, 128};
        char kernel[] = "matmul_f32";
        emu_smem_stats st;
        run_case(&c, kernel, &st);
        printf("%s %dx%dx%d w%d layouts (%d,%d) EVEN %dx%dx%d (not gated):", kernel, c.bm, c.bn, c.bk, c.warps,
               c.a_layout, c.b_layout, c.M, c.N, c.K);
        for (int k = 0; k < EMU_SMEM_KINDS; k++) print_count(emu_smem_kind_name((emu_smem_kind)k), &st.total[k]);
        printf("\n");
        print_plain_conflicts(&st);
        emu_smem_stats_free(&st);
    }
}

int main(int argc, char **argv) {
    srand(2026);
    if (argc > 1) {
        all_dtypes = false;
        for (int d = 0; d <= DT_F32; d++)
            if (!strcmp(argv[1], dtype_name[d])) only_dtype = (dtype)d;
        if (strcmp(argv[1], dtype_name[only_dtype])) {
            fprintf(stderr, "usage: %s [f16|bf16|f32]\n", argv[0]);
            return 2;
        }
    }
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_f32_printed),
    };
    if (all_dtypes) return cmocka_run_group_tests(all, NULL, NULL);
    const struct CMUnitTest one[] = {all[only_dtype]};
    return cmocka_run_group_tests(one, NULL, NULL);
}
