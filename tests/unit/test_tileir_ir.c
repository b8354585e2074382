/* Unit tests for tileir/: types, the builder, printer, reader and verifier. */
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
    tc_strbuf out;
} fixture;

static int setup(void **state) {
    static fixture fx; /* one test at a time */
    fx.arena = tc_arena_new();
    tc_diag_init(&fx.diag);
    tc_strbuf_init(&fx.out);
    *state = &fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    tc_arena_free(fx->arena);
    tc_diag_free(&fx->diag);
    tc_strbuf_free(&fx->out);
    return 0;
}

static void test_types(void **state) {
    (void)state;
    tir_type f = tir_scalar(TIR_F32), p = tir_ptr(TIR_F16);
    uint32_t shape[2] = {16, 8};
    tir_type t = tir_tile(p, 2, shape);
    assert_int_equal(tir_type_numel(t), 128);
    assert_true(tir_type_eq(tir_element_of(t), p));
    assert_false(tir_type_eq(f, tir_scalar(TIR_F16)));
    assert_false(tir_type_eq(tir_ptr(TIR_F32), p));
    assert_int_equal(tir_elem_bits(TIR_BF16), 16);
    assert_true(tir_elem_is_int(TIR_I1));
    assert_false(tir_elem_is_float(TIR_PTR));
    tir_elem e;
    assert_true(tir_elem_from_name("bf16", 4, &e));
    assert_int_equal(e, TIR_BF16);
    assert_false(tir_elem_from_name("ptr", 3, &e));
    tc_strbuf b;
    tc_strbuf_init(&b);
    tir_print_type(&b, t);
    assert_string_equal(b.data, "tile<16x8xptr<f16>>");
    tc_strbuf_free(&b);
}

static void test_op_table(void **state) {
    (void)state;
    tir_opcode op;
    assert_true(tir_opcode_from_name("addptr", 6, &op));
    assert_int_equal(op, TIR_OP_ADDPTR);
    assert_false(tir_opcode_from_name("addp", 4, &op));
    assert_int_equal(tir_ops[TIR_OP_STORE].results, 0);
    assert_true(tir_ops[TIR_OP_RETURN].flags & TIR_F_TERMINATOR);
    assert_true(tir_ops[TIR_OP_LT].flags & TIR_F_COMPARE);
    assert_int_equal(tir_ops[TIR_OP_ARANGE].attr, TIR_ATTR_RANGE);
}

/* vadd built by hand; returns the module. */
static tir_module *build_vadd(tc_arena *a) {
    tir_module *m = tir_module_new(a, "vadd.tile");
    tir_func *f = tir_func_new(m, "vadd", (tc_loc){.line = 1, .col = 8});
    tir_value *x = tir_func_add_param(f, tir_ptr(TIR_F32), "x");
    tir_value *n = tir_func_add_param(f, tir_scalar(TIR_I32), "n");
    tir_builder b = {0};
    tir_builder_at_end(&b, f->body);
    tir_value *r = tir_build_arange(&b, 0, 256);
    tir_value *p = tir_build_binary(&b, TIR_OP_ADDPTR, tir_build_splat(&b, x, r->type), r);
    tir_value *mask = tir_build_binary(&b, TIR_OP_LT, r, tir_build_splat(&b, n, r->type));
    tir_value *ops[2] = {p, mask};
    tir_value *v = tir_build1(&b, TIR_OP_LOAD, tir_tile1(tir_scalar(TIR_F32), 256), 2, ops);
    v->name = "v";
    tir_value *st[3] = {p, v, mask};
    tir_build_op(&b, TIR_OP_STORE, 3, st, 0, NULL);
    tir_build_op(&b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    return m;
}

static void test_build_and_print(void **state) {
    fixture *fx = *state;
    tir_module *m = build_vadd(fx->arena);
    assert_true(tir_verify(m, NULL, &fx->diag));
    tir_print_module(&fx->out, m, 0);
    assert_string_equal(fx->out.data, "kernel @vadd(%x: ptr<f32>, %n: i32) {\n"
                                      "  %0 = arange 0, 256 : tile<256xi32>\n"
                                      "  %1 = splat %x : tile<256xptr<f32>>\n"
                                      "  %2 = addptr %1, %0 : tile<256xptr<f32>>\n"
                                      "  %3 = splat %n : tile<256xi32>\n"
                                      "  %4 = lt %0, %3 : tile<256xi1>\n"
                                      "  %v = load %2, %4 : tile<256xf32>\n"
                                      "  store %2, %v, %4\n"
                                      "  return\n"
                                      "}\n");
}

static void test_print_parse_round_trip(void **state) {
    fixture *fx = *state;
    tir_module *m = build_vadd(fx->arena);
    tir_print_module(&fx->out, m, TIR_PRINT_LOCS);
    tc_source src = {.name = "rt.tir", .text = fx->out.data, .len = fx->out.len};
    tir_module *back = tir_parse(fx->arena, &src, &fx->diag);
    assert_non_null(back);
    assert_int_equal(fx->diag.nerrors, 0);
    tc_strbuf again;
    tc_strbuf_init(&again);
    tir_print_module(&again, back, TIR_PRINT_LOCS);
    assert_string_equal(again.data, fx->out.data);
    tc_strbuf_free(&again);
}

static void test_edit_replace_and_remove(void **state) {
    fixture *fx = *state;
    tir_module *m = build_vadd(fx->arena);
    tir_func *f = m->funcs;
    tir_value *n = f->params[1];
    assert_true(tir_value_has_uses(f, n));
    tir_op *splat_n = f->body->first->next->next->next; /* %3 = splat %n */
    assert_int_equal(splat_n->code, TIR_OP_SPLAT);
    tir_builder b = {0};
    tir_builder_before(&b, splat_n);
    tir_value *k = tir_build_const_int(&b, splat_n->results[0]->type, 100);
    tir_replace_all_uses(f, splat_n->results[0], k);
    tir_op_remove(splat_n);
    assert_false(tir_value_has_uses(f, n));
    assert_true(tir_verify(m, "test", &fx->diag));
    tir_print_module(&fx->out, m, 0);
    assert_non_null(strstr(fx->out.data, "const 100 : tile<256xi32>"));
}

/* Each verifier rule fails on IR that breaks it. */
static tir_func *new_func(tc_arena *a, tir_module **m, tir_builder *b) {
    *m = tir_module_new(a, "t.tir");
    tir_func *f = tir_func_new(*m, "k", (tc_loc){.line = 0, .col = 0});
    tir_builder_at_end(b, f->body);
    return f;
}

static void expect_verify_error(fixture *fx, tir_module *m, const char *what) {
    assert_false(tir_verify(m, "p", &fx->diag));
    if (!strstr(fx->diag.out.data, what)) fail_msg("expected '%s' in:\n%s", what, fx->diag.out.data);
}

static void test_verify_missing_return(void **state) {
    fixture *fx = *state;
    tir_module *m;
    tir_builder b = {0};
    new_func(fx->arena, &m, &b);
    tir_build_const_int(&b, tir_scalar(TIR_I32), 1);
    expect_verify_error(fx, m, "kernel body must end with return");
}

static void test_verify_type_mismatch(void **state) {
    fixture *fx = *state;
    tir_module *m;
    tir_builder b = {0};
    new_func(fx->arena, &m, &b);
    tir_value *i = tir_build_const_int(&b, tir_scalar(TIR_I32), 1);
    tir_value *f = tir_build_const_float(&b, tir_scalar(TIR_F32), 1);
    tir_value *ops[2] = {i, f};
    tir_build1(&b, TIR_OP_ADD, tir_scalar(TIR_I32), 2, ops);
    tir_build_op(&b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    expect_verify_error(fx, m, "operands and result must have one type");
}

static void test_verify_use_before_def(void **state) {
    fixture *fx = *state;
    tir_module *m;
    tir_builder b = {0};
    new_func(fx->arena, &m, &b);
    tir_value *a = tir_build_const_int(&b, tir_scalar(TIR_I32), 1);
    tir_op *later = a->def;
    tir_builder_before(&b, later); /* insert a user before the definition */
    tir_build_unary(&b, TIR_OP_NEG, a);
    tir_builder_at_end(&b, later->parent);
    tir_build_op(&b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    expect_verify_error(fx, m, "operand used before its definition");
}

static void test_verify_arange_and_layout(void **state) {
    fixture *fx = *state;
    tir_module *m;
    tir_builder b = {0};
    tir_func *f = new_func(fx->arena, &m, &b);
    f->num_warps = 4;
    tir_value *r = tir_build_arange(&b, 0, 128);
    r->def->attr.range.hi = 100; /* length no longer a power of two */
    tir_value *s = tir_build_arange(&b, 0, 64);
    s->type.layout = (tir_layout){.kind = TIR_LAYOUT_BLOCKED, .rank = 1, .spt = {4}, .tpw = {16}, .wpc = {4}}; /* 16 threads a warp */
    tir_build_op(&b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    expect_verify_error(fx, m, "arange length must be a positive power of two");
    expect_verify_error(fx, m, "layout threads per warp must multiply to 32");
    expect_verify_error(fx, m, "some tiles have layouts and others do not");
}

/* Every element of a tile in an mma or dot_op layout is held by exactly
 * one owning thread, every thread's registers hold elements of the tile,
 * and copies are held by non-owners only. */
static void check_mma_cover(const tir_layout *l, uint32_t m, uint32_t n, unsigned num_warps) {
    uint32_t shape[2] = {m, n};
    uint32_t regs = tir_mma_regs(l, shape);
    uint8_t *owned = calloc((size_t)m * n, 1), *held = calloc((size_t)m * n, 1);
    assert_non_null(owned);
    assert_non_null(held);
    for (uint32_t t = 0; t < 32 * num_warps; t++) {
        bool own = tir_mma_owner(l, shape, t);
        for (uint32_t r = 0; r < regs; r++) {
            uint32_t xy[2];
            tir_mma_coord(l, shape, t, r, xy);
            assert_true(xy[0] < m && xy[1] < n);
            held[(size_t)xy[0] * n + xy[1]] = 1;
            if (own) owned[(size_t)xy[0] * n + xy[1]]++;
        }
    }
    for (size_t i = 0; i < (size_t)m * n; i++) {
        assert_int_equal(owned[i], 1);
        assert_int_equal(held[i], 1);
    }
    free(owned);
    free(held);
}

/* An accumulator of 16-bit elements is the next dot's a by renaming
 * registers where the warps are all along M (each holds whole rows),
 * and not where warps split its columns (another warp holds the rest of
 * a row of a). */
static void test_mma_rename_map(void **state) {
    (void)state;
    static const uint32_t rows[] = {64, 128};
    for (size_t i = 0; i < 2; i++) {
        uint32_t shape[2] = {rows[i], 64};
        tir_type acc = tir_tile(tir_scalar(TIR_F16), 2, shape), a = acc;
        acc.layout = tir_layout_mma(4, 1);
        a.layout = tir_layout_dot_op(&acc.layout, 0, 2);
        uint32_t n = tir_mma_regs(&a.layout, shape), *map = malloc(sizeof(uint32_t) * n);
        assert_non_null(map);
        assert_true(tir_mma_rename_map(&acc, &a, 128, map));
        for (uint32_t t = 0; t < 128; t++) /* the map holds for every thread */
            for (uint32_t r = 0; r < n; r++) {
                uint32_t x[2], y[2];
                tir_mma_coord(&a.layout, shape, t, r, x);
                tir_mma_coord(&acc.layout, shape, t, map[r], y);
                assert_true(x[0] == y[0] && x[1] == y[1]);
            }
        acc.layout = tir_layout_mma(2, 2);
        a.layout = tir_layout_dot_op(&acc.layout, 0, 2);
        assert_false(tir_mma_rename_map(&acc, &a, 128, map));
        free(map);
    }
}

static void test_mma_layouts_cover(void **state) {
    (void)state;
    static const uint32_t shapes[][3] = {{16, 16, 16}, {64, 32, 16}, {128, 128, 64}, {16, 64, 32}, {256, 16, 128}};
    static const unsigned warps[] = {1, 2, 4, 8};
    static const unsigned kws[] = {1, 2, 4};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            uint32_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            tir_layout c = tir_layout_mma_for(m, n, warps[w]);
            assert_int_equal(c.wpc[0] * c.wpc[1], warps[w]);
            check_mma_cover(&c, m, n, warps[w]);
            for (size_t i = 0; i < 3; i++) {
                tir_layout a = tir_layout_dot_op(&c, 0, kws[i]), b = tir_layout_dot_op(&c, 1, kws[i]);
                check_mma_cover(&a, m, k, warps[w]);
                check_mma_cover(&b, k, n, warps[w]);
            }
        }
}

/* A slice of an mma layout (a row or column reduction's result): every
 * element held by exactly one owner and by every thread whose mma
 * registers hold its row (column), at the register codegen combines
 * them into, (rm, h) from the accumulator's (rm, rn, 2h + j) (a column's:
 * (rn, j)); and expand_dims back to an mma tile with a dim of 1 reads
 * the slice register holding the same element (tir_mma_slice_source). */
static void check_mma_slice(uint32_t m, uint32_t n, const tir_layout *c, unsigned num_warps) {
    uint32_t shape[2] = {m, n};
    for (unsigned dim = 0; dim < 2; dim++) {
        tir_layout s = tir_layout_slice(c, dim);
        assert_int_equal(s.kind, TIR_LAYOUT_MMA_SLICE);
        tir_layout back = tir_layout_parent(&s);
        assert_true(tir_layout_eq(&back, c));
        uint32_t len = shape[1 - dim], sshape[1] = {len}, ns = tir_mma_regs(&s, sshape);
        uint32_t es[2] = {dim == 1 ? m : 1, dim == 1 ? 1 : n}; /* expand_dims's shape */
        uint8_t *owned = calloc(len, 1);
        assert_non_null(owned);
        for (uint32_t t = 0; t < 32 * num_warps; t++) {
            bool own = tir_mma_owner(&s, sshape, t);
            for (uint32_t r = 0; r < ns; r++) {
                uint32_t x[2];
                tir_mma_coord(&s, sshape, t, r, x);
                assert_true(x[0] < len);
                if (own) owned[x[0]]++;
            }
            for (uint32_t r = 0; r < tir_mma_regs(c, shape); r++) {
                uint32_t i = r % 4, x[2], y[2];
                uint32_t reps_n = n > 8u * c->wpc[1] ? n / (8u * c->wpc[1]) : 1;
                uint32_t rm = r / 4 / reps_n, rn = r / 4 % reps_n;
                uint32_t k = dim == 1 ? rm * 2 + (i >> 1) : rn * 2 + (i & 1);
                tir_mma_coord(c, shape, t, r, x);
                tir_mma_coord(&s, sshape, t, k, y);
                assert_int_equal(x[1 - dim], y[0]);
            }
            for (uint32_t r = 0; r < tir_mma_regs(c, es); r++) {
                uint32_t x[2], y[2];
                tir_mma_coord(c, es, t, r, x);
                tir_mma_coord(&s, sshape, t, tir_mma_slice_source(&s, es, r), y);
                assert_int_equal(x[1 - dim], y[0]);
            }
        }
        for (uint32_t i = 0; i < len; i++) assert_int_equal(owned[i], 1);
        free(owned);
    }
}

static void test_mma_slices(void **state) {
    (void)state;
    static const uint32_t shapes[][2] = {{16, 16}, {64, 64}, {128, 32}, {16, 128}, {256, 16}};
    static const unsigned warps[] = {1, 2, 4, 8};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            tir_layout c = tir_layout_mma_for(shapes[s][0], shapes[s][1], warps[w]);
            check_mma_slice(shapes[s][0], shapes[s][1], &c, warps[w]);
            c = tir_layout_mma(warps[w], 1); /* attention's: warps all along M */
            check_mma_slice(shapes[s][0], shapes[s][1], &c, warps[w]);
        }
}

/* The fragments of the PTX ISA for one warp (wpc [1, 1]): lane l holds
 * c0..c3 at (g, 2q), (g, 2q+1), (g+8, 2q), (g+8, 2q+1); for m16n8k16 f16,
 * a0..a7 at (g, 2q), (g, 2q+1), (g+8, 2q), (g+8, 2q+1), then the same 8
 * columns on, and b0..b3 at (2q, g), (2q+1, g), (2q+8, g), (2q+9, g). */
static void test_mma_layouts_match_ptx_fragments(void **state) {
    (void)state;
    tir_layout c = tir_layout_mma(1, 1), a = tir_layout_dot_op(&c, 0, 2), b = tir_layout_dot_op(&c, 1, 2);
    tir_layout a8 = tir_layout_dot_op(&c, 0, 4), t32 = tir_layout_dot_op(&c, 0, 1);
    uint32_t sc[2] = {16, 16}, sa[2] = {16, 16}, sb[2] = {16, 16}, sa8[2] = {16, 32};
    for (uint32_t l = 0; l < 32; l++) {
        uint32_t g = l >> 2, q = l & 3, xy[2];
        const uint32_t cx[4][2] = {{g, 2 * q}, {g, 2 * q + 1}, {g + 8, 2 * q}, {g + 8, 2 * q + 1}};
        for (uint32_t r = 0; r < 4; r++) {
            tir_mma_coord(&c, sc, l, r, xy);
            assert_int_equal(xy[0], cx[r][0]);
            assert_int_equal(xy[1], cx[r][1]);
        }
        for (uint32_t r = 0; r < 8; r++) {
            tir_mma_coord(&a, sa, l, r, xy);
            assert_int_equal(xy[0], cx[r % 4][0]);
            assert_int_equal(xy[1], cx[r % 4][1] + (r >= 4 ? 8 : 0));
        }
        const uint32_t bx[4] = {2 * q, 2 * q + 1, 2 * q + 8, 2 * q + 9};
        for (uint32_t j = 0; j < 4; j++) { /* b's registers: (kc, rn, e); rn 0 of 2 here */
            tir_mma_coord(&b, sb, l, (j / 2) * 4 + j % 2, xy);
            assert_int_equal(xy[0], bx[j]);
            assert_int_equal(xy[1], g);
        }
        /* tf32 m16n8k8: a0..a3 at (g, q), (g+8, q), (g, q+4), (g+8, q+4) */
        const uint32_t tx[4][2] = {{g, q}, {g + 8, q}, {g, q + 4}, {g + 8, q + 4}};
        for (uint32_t r = 0; r < 4; r++) {
            tir_mma_coord(&t32, sa, l, r, xy);
            assert_int_equal(xy[0], tx[r][0]);
            assert_int_equal(xy[1], tx[r][1]);
        }
        /* s8 m16n8k32: a0..a3 at (g, 4q..4q+3), a4..a7 at row g+8, a8..a15 16 columns on */
        for (uint32_t r = 0; r < 16; r++) {
            tir_mma_coord(&a8, sa8, l, r, xy);
            assert_int_equal(xy[0], g + ((r / 4) & 1) * 8);
            assert_int_equal(xy[1], 4 * q + r % 4 + (r >= 8 ? 16 : 0));
        }
    }
}

static void test_verify_loop(void **state) {
    fixture *fx = *state;
    tir_module *m;
    tir_builder b = {0};
    new_func(fx->arena, &m, &b);
    tir_value *lo = tir_build_const_int(&b, tir_scalar(TIR_I32), 0);
    tir_value *init = tir_build_const_float(&b, tir_scalar(TIR_F32), 0);
    tir_op *loop = tir_build_for(&b, lo, lo, lo, 1, &init);
    tir_builder in = {0};
    tir_builder_at_end(&in, loop->body);
    tir_value *bad = tir_build_const_int(&in, tir_scalar(TIR_I32), 3);
    tir_build_op(&in, TIR_OP_YIELD, 1, &bad, 0, NULL); /* i32 where f32 is carried */
    tir_build_op(&b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    expect_verify_error(fx, m, "yielded value type differs from the loop result");
    /* and the same loop yielding a carried f32 passes */
    tc_diag_free(&fx->diag);
    tc_diag_init(&fx->diag);
    tir_builder b2 = {0};
    new_func(fx->arena, &m, &b2);
    lo = tir_build_const_int(&b2, tir_scalar(TIR_I32), 0);
    init = tir_build_const_float(&b2, tir_scalar(TIR_F32), 0);
    loop = tir_build_for(&b2, lo, lo, lo, 1, &init);
    tir_builder_at_end(&in, loop->body);
    tir_value *sum = tir_build_binary(&in, TIR_OP_ADD, loop->body->args[1], loop->body->args[1]);
    tir_build_op(&in, TIR_OP_YIELD, 1, &sum, 0, NULL);
    tir_build_op(&b2, TIR_OP_RETURN, 0, NULL, 0, NULL);
    assert_true(tir_verify(m, "p", &fx->diag));
}

static void test_reader_rejects_junk(void **state) {
    fixture *fx = *state;
    static const char *const inputs[] = {
        "", "kernel", "kernel @k(", "kernel @k() { %a = nope : i32 }", "kernel @k() { %a = const 1 : tile<0xi32> }",
        "kernel @k() { %a = const 1 : tile<4x4x4x4xi32> }", "\x01\x02\x03", "kernel @k(%x: ptr<ptr<f32>>) {}",
        "kernel @k() { %a, %b = const 1 : i32 }", "kernel @k() { %a = const 1 : i32\n %a = const 2 : i32 }",
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        tc_source src = {.name = "junk.tir", .text = inputs[i], .len = strlen(inputs[i])};
        tir_module *m = tir_parse(fx->arena, &src, &fx->diag);
        if (i == 0) assert_non_null(m); /* empty: an empty module */
        else assert_null(m);
    }
    assert_int_equal(fx->diag.nerrors, 9);
    assert_non_null(strstr(fx->diag.out.data, "junk.tir:1:"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_op_table),
        cmocka_unit_test_setup_teardown(test_build_and_print, setup, teardown),
        cmocka_unit_test_setup_teardown(test_print_parse_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edit_replace_and_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_missing_return, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_type_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_use_before_def, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_arange_and_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_loop, setup, teardown),
        cmocka_unit_test(test_mma_layouts_cover),
        cmocka_unit_test(test_mma_rename_map),
        cmocka_unit_test(test_mma_slices),
        cmocka_unit_test(test_mma_layouts_match_ptx_fragments),
        cmocka_unit_test_setup_teardown(test_reader_rejects_junk, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
