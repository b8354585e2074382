/* Unit tests for tileir/verify.c: the rules no .tir file can break, because
 * the reader refuses such IR before the verifier sees it (a layout of the
 * wrong rank or kind, a tile too large, an op with the wrong arity or a
 * broken block), yet a pass building IR with the builder API could. Each
 * test builds one such function and checks the verifier's message; the
 * rules a .tir file can reach are tested by tests/golden/tir/verifier-*.tir
 * (tests/verifier-messages.sh checks that every message is expected
 * somewhere). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "tileir/tileir.h"

typedef struct fixture {
    tc_arena *arena;
    tc_diag diag;
    tir_module *m;
    tir_func *f;
    tir_builder b;
} fixture;

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    fx->arena = tc_arena_new();
    tc_diag_init(&fx->diag);
    fx->m = tir_module_new(fx->arena, "t.tir");
    fx->f = tir_func_new(fx->m, "k", (tc_loc){.line = 1, .col = 1});
    tir_builder_at_end(&fx->b, fx->f->body);
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    tc_arena_free(fx->arena);
    tc_diag_free(&fx->diag);
    free(fx);
    return 0;
}

/* Ends the body with return and checks that the verifier fails with `what`. */
static void expect(fixture *fx, const char *what) {
    tir_build_op(&fx->b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    assert_false(tir_verify(fx->m, "p", &fx->diag));
    if (!fx->diag.out.data || !strstr(fx->diag.out.data, what))
        fail_msg("expected '%s' in:\n%s", what, fx->diag.out.data ? fx->diag.out.data : "(nothing)");
}

static tir_type tile2(tir_elem e, uint32_t m, uint32_t n) {
    uint32_t shape[2] = {m, n};
    return tir_tile(tir_scalar(e), 2, shape);
}

static tir_layout blocked1(unsigned warps) {
    return (tir_layout){.kind = TIR_LAYOUT_BLOCKED, .rank = 1, .spt = {1}, .tpw = {32}, .wpc = {(uint16_t)warps}};
}

/* ---- layouts ------------------------------------------------------------ */

static void test_tile_too_large(void **state) {
    fixture *fx = *state;
    tir_build_const_int(&fx->b, tile2(TIR_I32, 2048, 1024), 0); /* 2^21 elements */
    expect(fx, "a tile may hold at most 1048576 (TIR_MAX_TILE_ELEMS) elements");
}

static void test_dot_smem_layout_on_a_1d_tile(void **state) {
    fixture *fx = *state;
    tir_type t = tir_tile1(tir_scalar(TIR_F16), 32);
    t.layout = (tir_layout){.kind = TIR_LAYOUT_DOT_SMEM, .rank = 2, .wpc = {1, 1}};
    tir_build_const_float(&fx->b, t, 0);
    expect(fx, "a dot_smem layout is for a dot's a or b, 2-D with dims of at least 16");
}

static void test_slice_parent_rank(void **state) {
    fixture *fx = *state;
    tir_type t = tir_tile1(tir_scalar(TIR_I32), 32);
    t.layout = blocked1(1);
    t.layout.kind = TIR_LAYOUT_SLICE; /* a parent of rank 1 for a 1-D tile: one dim short */
    tir_build_const_int(&fx->b, t, 0);
    expect(fx, "a slice layout's parent must have one dim more than the tile");
}

static void test_layout_rank(void **state) {
    fixture *fx = *state;
    tir_type t = tir_tile1(tir_scalar(TIR_I32), 32);
    t.layout = (tir_layout){.kind = TIR_LAYOUT_BLOCKED, .rank = 2, .spt = {1, 1}, .tpw = {1, 32}, .wpc = {1, 1},
                            .ord = {1, 0}};
    tir_build_const_int(&fx->b, t, 0);
    expect(fx, "layout rank differs from the tile's rank");
}

static void test_buffer_layout_not_shared(void **state) {
    fixture *fx = *state;
    uint32_t shape[3] = {2, 16, 16};
    tir_type t = tir_smem(tir_scalar(TIR_F16), 3, shape);
    t.layout = (tir_layout){.kind = TIR_LAYOUT_BLOCKED, .rank = 2, .spt = {1, 1}, .tpw = {1, 32}, .wpc = {1, 1},
                            .ord = {1, 0}};
    tir_build1(&fx->b, TIR_OP_LOCAL_ALLOC, t, 0, NULL);
    expect(fx, "a buffer's layout is a shared layout over its slot dims");
}

static void test_shared_swizzle_not_powers_of_two(void **state) {
    fixture *fx = *state;
    uint32_t shape[3] = {2, 16, 16};
    tir_type t = tir_smem(tir_scalar(TIR_F16), 3, shape);
    uint8_t ord[2] = {1, 0};
    t.layout = tir_layout_shared(2, ord, 8, 1, 1);
    t.layout.sw_vec = 3;
    tir_build1(&fx->b, TIR_OP_LOCAL_ALLOC, t, 0, NULL);
    expect(fx, "a shared layout's vec, per_phase and max_phase must be powers of two");
}

/* A dot's result in a dot_op layout (its kw right for f32, so the layout
 * itself passes): only mma and blocked results have a lowering. */
static void test_dot_result_layout(void **state) {
    fixture *fx = *state;
    tir_type a = tile2(TIR_F16, 32, 16), b = tile2(TIR_F16, 16, 32), acc = tile2(TIR_F32, 32, 32);
    acc.layout = (tir_layout){.kind = TIR_LAYOUT_DOT_OP, .rank = 2, .wpc = {1, 1}, .dot_kw = 1};
    a.layout = (tir_layout){.kind = TIR_LAYOUT_DOT_OP, .rank = 2, .wpc = {1, 1}, .dot_kw = 2};
    b.layout = a.layout;
    b.layout.dot_idx = 1;
    tir_value *ops[3] = {tir_build_const_float(&fx->b, a, 1), tir_build_const_float(&fx->b, b, 1),
                         tir_build_const_float(&fx->b, acc, 0)};
    tir_build1(&fx->b, TIR_OP_DOT, acc, 3, ops);
    expect(fx, "dot's result needs an mma or a blocked layout");
}

/* ---- ops and blocks --------------------------------------------------------- */

static void test_print_without_message(void **state) {
    fixture *fx = *state;
    tir_value *x = tir_build_const_int(&fx->b, tir_scalar(TIR_I32), 1);
    tir_op *p = tir_build_print(&fx->b, "x", 1, &x);
    p->attr.text = NULL;
    expect(fx, "print and assert need a message string");
}

static void test_wrong_number_of_operands(void **state) {
    fixture *fx = *state;
    tir_value *x = tir_build_const_int(&fx->b, tir_scalar(TIR_I32), 1);
    tir_value *ops[3] = {x, x, x};
    tir_build1(&fx->b, TIR_OP_ADD, tir_scalar(TIR_I32), 3, ops);
    expect(fx, "wrong number of operands");
}

static void test_wrong_number_of_results(void **state) {
    fixture *fx = *state;
    tir_value *x = tir_build_const_int(&fx->b, tir_scalar(TIR_I32), 1);
    tir_value *ops[2] = {x, x};
    tir_build_op(&fx->b, TIR_OP_ADD, 2, ops, 0, NULL);
    expect(fx, "wrong number of results");
}

/* an op whose code is past the table: said before anything reads its row */
static void test_unknown_opcode(void **state) {
    fixture *fx = *state;
    tir_op *op = tir_build_op(&fx->b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    op->code = (tir_opcode)(TIR_OP_COUNT + 3);
    expect(fx, "unknown opcode");
}

static void test_region_op_without_body(void **state) {
    fixture *fx = *state;
    tir_value *c = tir_build_const_int(&fx->b, tir_scalar(TIR_I1), 1);
    tir_op *op = tir_build_if(&fx->b, c, 0, NULL);
    op->body = NULL;
    expect(fx, "region op without a body");
}

static void test_parent_link(void **state) {
    fixture *fx = *state;
    tir_value *c = tir_build_const_int(&fx->b, tir_scalar(TIR_I1), 1);
    tir_op *op = tir_build_if(&fx->b, c, 0, NULL);
    tir_builder in = {0};
    tir_builder_at_end(&in, op->body);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    tir_builder_at_end(&in, op->body2);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    c->def->parent = op->body; /* in the kernel body, claiming the then block */
    expect(fx, "op's parent link is wrong");
}

static void test_terminator_in_the_middle(void **state) {
    fixture *fx = *state;
    tir_build_op(&fx->b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    tir_build_const_int(&fx->b, tir_scalar(TIR_I32), 1);
    expect(fx, "terminator in the middle of a block");
}

static void test_region_without_yield(void **state) {
    fixture *fx = *state;
    tir_value *c = tir_build_const_int(&fx->b, tir_scalar(TIR_I1), 1);
    tir_op *op = tir_build_if(&fx->b, c, 0, NULL);
    tir_builder in = {0};
    tir_builder_at_end(&in, op->body);
    tir_build_const_int(&in, tir_scalar(TIR_I32), 1); /* then: no yield at its end */
    tir_builder_at_end(&in, op->body2);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    expect(fx, "a region must end with yield");
}

/* And an empty region (no op at all) is the same error. */
static void test_empty_region(void **state) {
    fixture *fx = *state;
    tir_value *c = tir_build_const_int(&fx->b, tir_scalar(TIR_I1), 1);
    tir_op *op = tir_build_if(&fx->b, c, 0, NULL);
    tir_builder in = {0};
    tir_builder_at_end(&in, op->body2);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    expect(fx, "a region must end with yield");
}

/* ---- tensor maps ---------------------------------------------------------
 * What the reader refuses in `tensor_map(...)` (a base that is not a
 * pointer, a rank past 1 to 5, a swizzle other than 0/32/64/128, a size or
 * stride naming a non-integer parameter, a box past 1 to 256) a pass could
 * still build: tir_func.tmaps set by hand. The well-formed map: a: ptr<f16>,
 * dims [%K, *], strides [1, %K], box [64, 64], swizzle 128. */

static tir_tmap good_tmap(fixture *fx) {
    tir_func_add_param(fx->f, tir_ptr(TIR_F16), "a"); /* 0 */
    tir_func_add_param(fx->f, tir_scalar(TIR_I32), "K"); /* 1 */
    tir_func_add_param(fx->f, tir_scalar(TIR_F32), "x"); /* 2 */
    tir_tmap m;
    memset(&m, 0, sizeof m);
    m.base = 0;
    m.rank = 2;
    m.swizzle = 128;
    m.dim[0] = (tir_tmap_term){.scale = 1, .param = 1};
    m.dim[1] = (tir_tmap_term){.scale = TIR_TMAP_UNBOUNDED, .param = TIR_TMAP_CONST};
    m.stride[0] = (tir_tmap_term){.scale = 1, .param = TIR_TMAP_CONST};
    m.stride[1] = (tir_tmap_term){.scale = 1, .param = 1};
    m.box[0] = m.box[1] = 64;
    return m;
}

static void set_tmaps(fixture *fx, const tir_tmap *m, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) assert_int_equal(tir_func_add_tmap(fx->f, &m[i]), (int)i);
}

static void test_tmap_well_formed_passes(void **state) {
    fixture *fx = *state;
    tir_tmap m[2] = {good_tmap(fx)};
    m[1] = m[0];
    m[1].rank = 5; /* every dim the copy engine has, the last ones boxes of 1 */
    for (unsigned d = 2; d < 5; d++) {
        m[1].dim[d] = (tir_tmap_term){.scale = 3, .param = TIR_TMAP_CONST};
        m[1].stride[d] = (tir_tmap_term){.scale = 8, .param = 1};
        m[1].box[d] = d == 4 ? 256 : 1;
    }
    set_tmaps(fx, m, 2);
    tir_build_op(&fx->b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    if (!tir_verify(fx->m, "p", &fx->diag)) fail_msg("%s", fx->diag.out.data);
}

static void test_tmap_base_not_pointer(void **state) {
    fixture *fx = *state;
    tir_tmap m[2] = {good_tmap(fx)};
    m[0].base = 1; /* K: i32 */
    m[1] = m[0];
    m[1].base = 99; /* past the parameters */
    set_tmaps(fx, m, 2);
    expect(fx, "tensor map 1's base is not a pointer parameter");
    assert_non_null(strstr(fx->diag.out.data, "tensor map 0's base is not a pointer parameter"));
}

static void test_tmap_rank(void **state) {
    fixture *fx = *state;
    tir_tmap m[2] = {good_tmap(fx)};
    m[0].rank = 0;
    m[1] = m[0];
    m[1].rank = 6;
    set_tmaps(fx, m, 2);
    expect(fx, "tensor map 0 has 0 dimensions (1 to 5)");
    assert_non_null(strstr(fx->diag.out.data, "tensor map 1 has 6 dimensions (1 to 5)"));
}

static void test_tmap_swizzle_value(void **state) {
    fixture *fx = *state;
    tir_tmap m = good_tmap(fx);
    m.swizzle = 16; /* a box of 16 bytes along dim 0 is the swizzle's span: only the value is wrong */
    m.box[0] = 8;
    set_tmaps(fx, &m, 1);
    expect(fx, "tensor map 0's swizzle is 16 bytes (0, 32, 64 or 128)");
    assert_null(strstr(fx->diag.out.data, "bytes along dim 0"));
}

static void test_tmap_term_not_integer_parameter(void **state) {
    fixture *fx = *state;
    tir_tmap m[3] = {good_tmap(fx)};
    m[1] = m[2] = m[0];
    m[0].dim[0].param = 2; /* x: f32 */
    m[1].stride[1] = (tir_tmap_term){.scale = 8, .param = 0}; /* a: a pointer */
    m[2].dim[1] = (tir_tmap_term){.scale = 1, .param = 7}; /* past the parameters */
    set_tmaps(fx, m, 3);
    expect(fx, "tensor map 0's dim 0 is not an integer parameter");
    assert_non_null(strstr(fx->diag.out.data, "tensor map 1's stride 1 is not an integer parameter"));
    assert_non_null(strstr(fx->diag.out.data, "tensor map 2's dim 1 is not an integer parameter"));
}

static void test_tmap_box_range(void **state) {
    fixture *fx = *state;
    tir_tmap m[2] = {good_tmap(fx)};
    m[1] = m[0];
    m[0].box[1] = 0;
    m[1].box[1] = 257;
    set_tmaps(fx, m, 2);
    expect(fx, "tensor map 0's box is 0 elements along dim 1 (1 to 256)");
    assert_non_null(strstr(fx->diag.out.data, "tensor map 1's box is 257 elements along dim 1 (1 to 256)"));
}

/* The well-formed version of the functions above passes, so the errors
 * come from what each test broke. */
static void test_well_formed_passes(void **state) {
    fixture *fx = *state;
    tir_value *c = tir_build_const_int(&fx->b, tir_scalar(TIR_I1), 1);
    tir_op *op = tir_build_if(&fx->b, c, 0, NULL);
    tir_builder in = {0};
    tir_builder_at_end(&in, op->body);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    tir_builder_at_end(&in, op->body2);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    tir_value *x = tir_build_const_int(&fx->b, tir_scalar(TIR_I32), 1);
    tir_build_print(&fx->b, "x", 1, &x);
    tir_build_op(&fx->b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    if (!tir_verify(fx->m, "p", &fx->diag)) fail_msg("%s", fx->diag.out.data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tile_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dot_smem_layout_on_a_1d_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slice_parent_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffer_layout_not_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_swizzle_not_powers_of_two, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dot_result_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_print_without_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_number_of_operands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_number_of_results, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_opcode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_region_op_without_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parent_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminator_in_the_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_region_without_yield, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_region, setup, teardown),
        cmocka_unit_test_setup_teardown(test_well_formed_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmap_well_formed_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmap_base_not_pointer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmap_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmap_swizzle_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmap_term_not_integer_parameter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmap_box_range, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
