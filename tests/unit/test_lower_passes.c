/* Unit tests for lower/: layouts, axis info, simplify, codegen to PTX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ptx/ptx.h"
#include "lower/lower.h"

static const char vadd_tir[] =
    "kernel @vadd(%x: ptr<f32>, %y: ptr<f32>, %out: ptr<f32>, %n: i32) {\n"
    "  %pid = program_id 0 : i32\n"
    "  %c = const 1024 : i32\n"
    "  %base = mul %pid, %c : i32\n"
    "  %r = arange 0, 1024 : tile<1024xi32>\n"
    "  %b = splat %base : tile<1024xi32>\n"
    "  %offs = add %b, %r : tile<1024xi32>\n"
    "  %nn = splat %n : tile<1024xi32>\n"
    "  %mask = lt %offs, %nn : tile<1024xi1>\n"
    "  %xs = splat %x : tile<1024xptr<f32>>\n"
    "  %xp = addptr %xs, %offs : tile<1024xptr<f32>>\n"
    "  %ys = splat %y : tile<1024xptr<f32>>\n"
    "  %yp = addptr %ys, %offs : tile<1024xptr<f32>>\n"
    "  %os = splat %out : tile<1024xptr<f32>>\n"
    "  %op = addptr %os, %offs : tile<1024xptr<f32>>\n"
    "  %xv = load %xp, %mask : tile<1024xf32>\n"
    "  %yv = load %yp, %mask : tile<1024xf32>\n"
    "  %sum = add %xv, %yv : tile<1024xf32>\n"
    "  store %op, %sum, %mask\n"
    "  return\n"
    "}\n";

typedef struct fx {
    tc_arena *arena;
    tc_diag diag;
    tir_module *m;
} fx;

static tir_module *parse(fx *f, const char *text) {
    f->arena = tc_arena_new();
    tc_diag_init(&f->diag);
    static tc_source src;
    src = (tc_source){"t.tir", text, strlen(text)};
    f->m = tir_parse(f->arena, &src, &f->diag);
    assert_non_null(f->m);
    return f->m;
}

static void done(fx *f) {
    tc_arena_free(f->arena);
    tc_diag_free(&f->diag);
}

static tir_value *find_named(tir_func *fn, const char *name) {
    for (tir_op *op = fn->body->first; op; op = op->next)
        for (uint32_t i = 0; i < op->nresults; i++)
            if (op->results[i]->name && !strcmp(op->results[i]->name, name)) return op->results[i];
    return NULL;
}

static void test_layout_vadd(void **state) {
    (void)state;
    fx f;
    parse(&f, vadd_tir);
    lower_options opt = {.compile.num_warps = 0};
    assert_true(lower_layout(f.m, &opt, &f.diag));
    assert_true(tir_verify(f.m, "layout", &f.diag));
    tir_func *fn = f.m->funcs;
    assert_int_equal(fn->num_warps, LOWER_DEFAULT_NUM_WARPS);
    tir_layout l = find_named(fn, "sum")->type.layout;
    assert_int_equal(l.kind, TIR_LAYOUT_BLOCKED);
    assert_int_equal(l.spt[0], 4);
    assert_int_equal(l.tpw[0], 32);
    assert_int_equal(l.wpc[0], 4);
    /* every tile shares it */
    assert_true(tir_layout_eq(&find_named(fn, "mask")->type.layout, &l));
    done(&f);
}

static void test_layout_num_warps_and_small_tiles(void **state) {
    (void)state;
    fx f;
    parse(&f, "kernel @k(%x: ptr<f64>) {\n  %r = arange 0, 64 : tile<64xi32>\n  %s = splat %x : tile<64xptr<f64>>\n"
              "  %p = addptr %s, %r : tile<64xptr<f64>>\n  %v = load %p : tile<64xf64>\n  store %p, %v\n  return\n}\n");
    lower_options opt = {.compile.num_warps = 1};
    assert_true(lower_layout(f.m, &opt, &f.diag));
    /* f64: 2 per thread for 16 bytes, and 64 elements fill 32 threads x 2 */
    assert_int_equal(find_named(f.m->funcs, "v")->type.layout.spt[0], 2);
    assert_int_equal(find_named(f.m->funcs, "v")->type.layout.wpc[0], 1);
    done(&f);
}

static void test_axis_info_vadd(void **state) {
    (void)state;
    fx f;
    parse(&f, vadd_tir);
    lower_axis_map *map = lower_axis_analyze(f.m->funcs, f.arena);
    tir_func *fn = f.m->funcs;
    lower_axis_info offs = lower_axis_get(map, find_named(fn, "offs"));
    assert_int_equal(offs.contiguity, 1024);
    assert_int_equal(offs.divisibility, 1024); /* pid * 1024 */
    lower_axis_info xp = lower_axis_get(map, find_named(fn, "xp"));
    assert_int_equal(xp.contiguity, 1024);
    assert_int_equal(xp.divisibility, 16); /* the assumed pointer alignment */
    lower_axis_info mask = lower_axis_get(map, find_named(fn, "mask"));
    assert_int_equal(mask.constancy, 1); /* n is unknown */
    lower_axis_info nn = lower_axis_get(map, find_named(fn, "nn"));
    assert_int_equal(nn.constancy, 1024);
    done(&f);
}

static void test_axis_info_unaligned_offset(void **state) {
    (void)state;
    fx f;
    parse(&f, "kernel @k(%x: ptr<f32>, %s: i32) {\n  %r = arange 0, 256 : tile<256xi32>\n"
              "  %ss = splat %s : tile<256xi32>\n  %o = add %r, %ss : tile<256xi32>\n"
              "  %xs = splat %x : tile<256xptr<f32>>\n  %p = addptr %xs, %o : tile<256xptr<f32>>\n"
              "  %v = load %p : tile<256xf32>\n  store %p, %v\n  return\n}\n");
    lower_axis_map *map = lower_axis_analyze(f.m->funcs, f.arena);
    lower_axis_info p = lower_axis_get(map, find_named(f.m->funcs, "p"));
    assert_int_equal(p.contiguity, 256);
    assert_int_equal(p.divisibility, 4); /* only the element size is known */
    done(&f);
}

static void test_simplify_folds_and_removes(void **state) {
    (void)state;
    fx f;
    parse(&f, "kernel @k(%x: ptr<i32>) {\n  %a = const 20 : i32\n  %b = const 22 : i32\n  %c = add %a, %b : i32\n"
              "  %dead = mul %c, %c : i32\n  %p = addptr %x, %c : ptr<i32>\n  store %p, %c\n  return\n}\n");
    lower_options opt = {0};
    assert_true(lower_simplify(f.m, &opt, &f.diag));
    assert_true(tir_verify(f.m, "simplify", &f.diag));
    tir_value *c = find_named(f.m->funcs, "c");
    assert_int_equal(c->def->code, TIR_OP_CONST);
    assert_int_equal(c->def->attr.ival, 42);
    assert_null(find_named(f.m->funcs, "dead"));
    assert_null(find_named(f.m->funcs, "a"));
    done(&f);
}

static void test_codegen_vadd_to_ptx(void **state) {
    (void)state;
    fx f;
    parse(&f, vadd_tir);
    lower_options opt = {.compile = {.opt_level = 2, .arch = "sm_80"}};
    assert_true(lower_run_pipeline(f.m, &opt, &f.diag));
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = lower_codegen(f.m, NULL, ctx, &opt, &f.diag);
    assert_non_null(mod);
    tc_strbuf ptx;
    tc_strbuf_init(&ptx);
    assert_true(ptx_emit(mod, "sm_80", 2, &ptx, &f.diag));
    assert_non_null(strstr(ptx.data, ".visible .entry vadd("));
    assert_non_null(strstr(ptx.data, "ld.global.v4.f32"));
    assert_non_null(strstr(ptx.data, "st.global.v4.f32"));
    char tool[4096];
    if (ptx_find_ptxas(tool, sizeof tool)) {
        char *cubin;
        size_t size;
        assert_true(ptx_assemble(ptx.data, ptx.len, &(ptx_asm_options){.arch = "sm_90", .opt_level = 2, .threads = 1},
                                 &cubin, &size, NULL, &f.diag));
        assert_true(size > 4 && !memcmp(cubin, "\x7f" "ELF", 4));
        free(cubin);
    } else {
        print_message("SKIPPED: ptxas not found, cubin assembly not checked\n");
    }
    tc_strbuf_free(&ptx);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    done(&f);
}

/* Two moves through shared memory: a permute to a layout other than the
 * permuted one, and a reshape. */
static const char moves_tir[] =
    "kernel @k(%x: ptr<f32>) num_warps(4) {\n"
    "  %r = arange 0, 16 : tile<16xi32, #slice<dim=1, spt=[1, 4], tpw=[4, 8], wpc=[4, 1], ord=[1, 0]>>\n"
    "  %e = expand_dims 1, %r : tile<16x1xi32, #blocked<spt=[1, 4], tpw=[4, 8], wpc=[4, 1], ord=[1, 0]>>\n"
    "  %b = broadcast %e : tile<16x32xi32, #blocked<spt=[1, 4], tpw=[4, 8], wpc=[4, 1], ord=[1, 0]>>\n"
    "  %t = permute [1, 0], %b : tile<32x16xi32, #blocked<spt=[1, 4], tpw=[8, 4], wpc=[4, 1], ord=[1, 0]>>\n"
    "  %f = reshape %t : tile<512xi32, #blocked<spt=[4], tpw=[32], wpc=[4], ord=[0]>>\n"
    "  %p = splat %x : tile<512xptr<f32>, #blocked<spt=[4], tpw=[32], wpc=[4], ord=[0]>>\n"
    "  %q = addptr %p, %f : tile<512xptr<f32>, #blocked<spt=[4], tpw=[32], wpc=[4], ord=[0]>>\n"
    "  %v = load %q : tile<512xf32, #blocked<spt=[4], tpw=[32], wpc=[4], ord=[0]>>\n"
    "  store %q, %v\n"
    "  return\n"
    "}\n";

/* The LLVM IR of moves_tir after smem_plan, with the move plans kept in
 * memo (NULL: none kept, codegen makes its own). */
static char *moves_ir(tir_opcode change, lower_memo *memo, size_t *kept) {
    fx f;
    parse(&f, moves_tir);
    lower_options opt = {.compile = {.opt_level = 2, .arch = "sm_80", .passes = "smem_plan"}, .memo = memo};
    assert_true(lower_run_pipeline(f.m, &opt, &f.diag));
    if (memo) *kept = lower_memo_moves(memo);
    if (change == TIR_OP_PERMUTE) { /* after the plans: the permute's result in other rows */
        tir_value *t = find_named(f.m->funcs, "t");
        t->type.layout.tpw[0] = 4, t->type.layout.tpw[1] = 8;
    }
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = lower_codegen(f.m, NULL, ctx, &opt, &f.diag);
    assert_non_null(mod);
    char *s = LLVMPrintModuleToString(mod), *ir = strdup(s);
    LLVMDisposeMessage(s);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    done(&f);
    return ir;
}

/* Codegen emits a move by the plan smem_plan kept for it, and by a plan
 * of its own when the op changed since: the same code as without one. */
static void test_codegen_kept_move_plans(void **state) {
    (void)state;
    tc_arena *a = tc_arena_new();
    size_t kept = 0;
    char *fresh = moves_ir(TIR_OP_CONST, NULL, NULL), *memo = moves_ir(TIR_OP_CONST, lower_memo_new(a), &kept);
    assert_int_equal(kept, 2);
    assert_string_equal(memo, fresh);
    char *fresh2 = moves_ir(TIR_OP_PERMUTE, NULL, NULL), *memo2 = moves_ir(TIR_OP_PERMUTE, lower_memo_new(a), &kept);
    assert_string_not_equal(fresh2, fresh); /* the change changes the move */
    assert_string_equal(memo2, fresh2);
    free(fresh), free(memo), free(fresh2), free(memo2);
    tc_arena_free(a);
}

static void test_ptx_arch_and_missing_ptxas(void **state) {
    (void)state;
    assert_true(ptx_arch_valid("sm_80"));
    assert_true(ptx_arch_valid("sm_90a"));
    assert_false(ptx_arch_valid("sm_75"));
    assert_false(ptx_arch_valid(""));
    /* with no ptxas to be found, asking for a cubin is a clear error */
    char *old = getenv("TILEC_PTXAS") ? strdup(getenv("TILEC_PTXAS")) : NULL;
    setenv("TILEC_PTXAS", "/nonexistent/ptxas", 1);
    char tool[4096];
    assert_false(ptx_find_ptxas(tool, sizeof tool));
    tc_diag d;
    tc_diag_init(&d);
    char *cubin;
    size_t size;
    assert_false(ptx_assemble(".version 8.0\n", 13, &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1},
                              &cubin, &size, NULL, &d));
    assert_non_null(strstr(d.out.data, "ptxas not found: set CUDA_HOME or put ptxas on PATH"));
    tc_diag_free(&d);
    if (old) setenv("TILEC_PTXAS", old, 1);
    else unsetenv("TILEC_PTXAS");
    free(old);
}

static void test_ptxas_reports_bad_ptx(void **state) {
    (void)state;
    char tool[4096];
    if (!ptx_find_ptxas(tool, sizeof tool)) {
        print_message("SKIPPED: ptxas not found\n");
        return;
    }
    tc_diag d;
    tc_diag_init(&d);
    char *cubin;
    size_t size;
    const char junk[] = "this is not ptx";
    assert_false(ptx_assemble(junk, sizeof junk - 1, &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1},
                              &cubin, &size, NULL, &d));
    assert_non_null(strstr(d.out.data, "ptxas failed"));
    tc_diag_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_vadd),         cmocka_unit_test(test_layout_num_warps_and_small_tiles),
        cmocka_unit_test(test_axis_info_vadd),      cmocka_unit_test(test_axis_info_unaligned_offset),
        cmocka_unit_test(test_simplify_folds_and_removes), cmocka_unit_test(test_codegen_vadd_to_ptx),
        cmocka_unit_test(test_codegen_kept_move_plans),
        cmocka_unit_test(test_ptx_arch_and_missing_ptxas), cmocka_unit_test(test_ptxas_reports_bad_ptx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
