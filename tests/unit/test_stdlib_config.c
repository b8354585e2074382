/* The stdlib matmul's choice of tile configuration (runtime/stdlib.c,
 * rt_matmul_config_for): by the shape's minimums, and on a GPU the largest
 * tile whose count fills the multiprocessors; flash attention's
 * (rt_attention_config_for) and its backward's (rt_attention_bwd_config_for),
 * and their f32 tables (rt_attention_f32_config_for, _bwd_f32_): by head
 * dim and arch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "runtime/stdlib_internal.h"

enum { H100_SMS = 132 };

static int tile(int64_t M, int64_t N, int64_t batch, int sms) {
    const rt_matmul_config *c = rt_matmul_config_for(M, N, 64, batch, sms, true, RT_MATMUL_MMA);
    assert_non_null(c);
    assert_int_equal(c->block_m, c->block_n); /* the table's tiles are square: one number says which */
    return c->block_m;
}

static void test_large_products_take_the_largest_tile(void **state) {
    (void)state;
    assert_int_equal(tile(4096, 4096, 1, H100_SMS), 128);
    assert_int_equal(tile(8192, 8192, 1, H100_SMS), 128);
    assert_int_equal(tile(2048, 2048, 1, H100_SMS), 128); /* 256 tiles */
    assert_int_equal(tile(8192, 8192, 1, 0), 128);
}

static void test_the_shape_minimums_hold(void **state) {
    (void)state;
    assert_int_equal(tile(100, 100, 1, 0), 64);
    assert_int_equal(tile(4096, 100, 1, 0), 64);
    assert_int_equal(tile(4096, 63, 1, 0), 32);
    assert_int_equal(tile(1, 1, 1, 0), 32);
    assert_int_equal(tile(1, 1, 1, H100_SMS), 32);
}

static void test_tiles_fill_the_multiprocessors(void **state) {
    (void)state;
    /* 64 tiles of 128 would leave half of 132 SMs idle: 256 of 64 */
    assert_int_equal(tile(1024, 1024, 1, H100_SMS), 64);
    assert_int_equal(tile(1024, 1024, 1, 0), 128); /* not a GPU: by the shape alone */
    assert_int_equal(tile(1024, 1024, 1, 64), 128); /* exactly one tile a multiprocessor */
    assert_int_equal(tile(1024, 1024, 1, 65), 64);
    /* a batch counts: 4 x 64 tiles of 128 */
    assert_int_equal(tile(1024, 1024, 4, H100_SMS), 128);
    /* 1536 x 512: 12 x 4 = 48 tiles of 128, 24 x 8 = 192 of 64 */
    assert_int_equal(tile(1536, 512, 1, H100_SMS), 64);
    /* no row fills them: the smallest (256 x 256: 16 tiles of 64, 64 of 32) */
    assert_int_equal(tile(256, 256, 1, H100_SMS), 32);
}

/* matmul_f32_ieee's table (FMAs) picks its tiles by the same rules */
static void test_the_fma_table_picks_the_same_way(void **state) {
    (void)state;
    const rt_matmul_config *big = rt_matmul_config_for(4096, 4096, 64, 1, H100_SMS, true, RT_MATMUL_FMA),
                           *mid = rt_matmul_config_for(100, 100, 64, 1, 0, true, RT_MATMUL_FMA),
                           *small = rt_matmul_config_for(1, 1, 64, 1, H100_SMS, true, RT_MATMUL_FMA);
    assert_int_equal(big->block_m, 128);
    assert_int_equal(mid->block_m, 64);
    assert_int_equal(small->block_m, 32);
    assert_ptr_not_equal(big, rt_matmul_config_for(4096, 4096, 64, 1, H100_SMS, true, RT_MATMUL_MMA));
    assert_int_equal(rt_matmul_config_for(1024, 1024, 64, 1, H100_SMS, true, RT_MATMUL_FMA)->block_m, 64);
}

/* sm_90a's f16/bf16 table (wgmma): Triton's Hopper tile 128 x 256 x 64
 * for whole tiles of row- or column-major operands, else 128 x 128 x 64,
 * by the same rules */
static const rt_matmul_config *hopper(int64_t M, int64_t N, int64_t K, int sms, bool fast) {
    return rt_matmul_config_for(M, N, K, 1, sms, fast, RT_MATMUL_WGMMA);
}

static void test_the_wgmma_table_takes_hopper_tiles(void **state) {
    (void)state;
    const rt_matmul_config *big = hopper(8192, 8192, 8192, H100_SMS, true);
    assert_int_equal(big->block_m, 128);
    assert_int_equal(big->block_n, 256);
    assert_int_equal(big->block_k, 64);
    assert_int_equal(big->num_warps, 8); /* two consumer warpgroups */
    assert_true(big->even_only);
    assert_ptr_equal(hopper(4096, 4096, 4096, H100_SMS, true), big);
    assert_ptr_not_equal(big, rt_matmul_config_for(8192, 8192, 8192, 1, H100_SMS, true, RT_MATMUL_MMA));
    /* not whole tiles, or a strided operand: 128 x 128 x 64 */
    const rt_matmul_config *edge[] = {hopper(8192, 8192, 8192, H100_SMS, false), hopper(8192 + 64, 8192, 8192, H100_SMS, true),
                                      hopper(8192, 8192 + 128, 8192, H100_SMS, true), hopper(8192, 8192, 8192 + 32, H100_SMS, true),
                                      hopper(4096, 4000, 4096, H100_SMS, true)};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        assert_int_equal(edge[i]->block_m, 128);
        assert_int_equal(edge[i]->block_n, 128);
        assert_int_equal(edge[i]->block_k, 64);
        assert_false(edge[i]->even_only);
    }
    /* 2048 x 2048: 128 tiles of 128 x 256 under 132 SMs: 256 of 128 x 128 */
    assert_int_equal(hopper(2048, 2048, 2048, H100_SMS, true)->block_n, 128);
    assert_int_equal(hopper(2048, 4096, 2048, H100_SMS, true)->block_n, 256);
    /* 1024 x 1024: 64 tiles of 128 under 132 SMs: 256 of 64 */
    assert_int_equal(hopper(1024, 1024, 1024, H100_SMS, true)->block_m, 64);
    assert_int_equal(hopper(1, 1, 1, H100_SMS, true)->block_m, 32);
    /* where a row runs on wgmma (4 warps or more), its M is whole 64-row pieces of its warpgroups */
    for (int64_t m = 1; m <= 8192; m *= 2)
        for (int fast = 0; fast < 2; fast++) {
            const rt_matmul_config *c = hopper(m, m, m, 0, fast);
            if (c->num_warps >= 4) assert_int_equal(c->block_m % (16 * c->num_warps), 0);
        }
    /* the other tables have no whole-tile rows: their last row serves any call */
    for (int t = 0; t < 2; t++)
        assert_false(rt_matmul_config_for(8192, 8192, 8192, 1, 0, true, t ? RT_MATMUL_FMA : RT_MATMUL_MMA)->even_only);
    assert_false(hopper(1, 1, 1, 0, false)->even_only);
}

static void test_huge_shapes_do_not_overflow(void **state) {
    (void)state;
    assert_int_equal(tile(INT64_C(1) << 40, INT64_C(1) << 40, INT64_C(1) << 40, H100_SMS), 128);
}

/* Every head dim the call takes has a row for every arch, sm_90 its own
 * at head dim 128; others have none. */
static void test_attention_rows_by_head_dim_and_arch(void **state) {
    (void)state;
    const int dims[] = {32, 64, 128}, sms[] = {0, 80, 86, 89, 90, 100};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 6; s++) {
            const rt_attention_config *c = rt_attention_config_for(dims[d], sms[s]);
            assert_non_null(c);
            assert_int_equal(c->head_dim, dims[d]);
            assert_true(c->min_sm <= sms[s]);
            assert_true(c->block_m >= 16 * (c->num_warps < 4 ? c->num_warps : 4)); /* an mma row block a warp */
        }
    /* sm_90 takes its own rows (Triton's H100 stages), the rest sm_80's */
    assert_int_equal(rt_attention_config_for(128, 90)->num_stages, 7);
    assert_int_equal(rt_attention_config_for(128, 89)->num_stages, 3);
    /* 16 rows a warp at least, where p stays in registers (the layout pass's dot chain) */
    for (int d = 0; d < 3; d++)
        assert_true(rt_attention_config_for(dims[d], 80)->block_m >= 16 * rt_attention_config_for(dims[d], 80)->num_warps);
    assert_ptr_equal(rt_attention_config_for(128, 0), rt_attention_config_for(128, 80));
    assert_null(rt_attention_config_for(16, 90));
    assert_null(rt_attention_config_for(80, 80));
    assert_non_null(rt_attention_config_for(256, 90));
    assert_null(rt_attention_config_for(512, 90));
}

/* The backward's table the same way, each pass with an mma row block a
 * warp along its program's rows (dK/dV's keys, dQ's query rows); sm_86
 * and sm_89 (99 KB of shared memory) take rows of their own where sm_80's
 * ask stages that do not fit. */
static void test_attention_bwd_rows_by_head_dim_and_arch(void **state) {
    (void)state;
    const int dims[] = {32, 64, 128}, sms[] = {0, 80, 86, 89, 90, 100};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 6; s++) {
            const rt_attention_bwd_config *c = rt_attention_bwd_config_for(dims[d], sms[s]);
            assert_non_null(c);
            assert_int_equal(c->head_dim, dims[d]);
            assert_true(c->min_sm <= sms[s]);
            assert_true(c->dkdv.block_n >= 16 * (c->dkdv.num_warps < 4 ? c->dkdv.num_warps : 4));
            assert_true(c->dq.block_m >= 16 * (c->dq.num_warps < 4 ? c->dq.num_warps : 4));
            assert_true(c->dkdv.num_stages >= 1 && c->dq.num_stages >= 1);
        }
    assert_int_equal(rt_attention_bwd_config_for(64, 86)->dkdv.num_stages, 2);
    assert_int_equal(rt_attention_bwd_config_for(64, 89)->dkdv.num_stages, 2);
    assert_int_equal(rt_attention_bwd_config_for(64, 90)->dkdv.num_stages, 3);
    assert_int_equal(rt_attention_bwd_config_for(64, 80)->dkdv.num_stages, 3);
    assert_int_equal(rt_attention_bwd_config_for(128, 0)->dkdv.block_m, 16);
    assert_int_equal(rt_attention_bwd_config_for(128, 90)->dkdv.block_m, 16);
    assert_ptr_equal(rt_attention_bwd_config_for(128, 0), rt_attention_bwd_config_for(128, 80));
    /* sm_90a's dK/dV on wgmma: keys in whole warpgroups (64 a warpgroup), head dims 32, 64 and 128 */
    for (int d = 0; d < 3; d++) {
        const rt_attention_bwd_config *w = rt_attention_bwd_wgmma_config_for(dims[d]);
        assert_non_null(w);
        assert_int_equal(w->head_dim, dims[d]);
        assert_int_equal(w->dkdv.block_n, 64 * (w->dkdv.num_warps / 4));
        assert_int_equal(w->dq.block_m, 64 * (w->dq.num_warps / 4));
    }
    assert_int_equal(rt_attention_bwd_wgmma_config_for(128)->dkdv.block_m, 32); /* 64 rows a step spill */
    assert_null(rt_attention_bwd_wgmma_config_for(256));
    assert_null(rt_attention_bwd_config_for(16, 90));
    assert_null(rt_attention_bwd_config_for(96, 80));
    /* head dim 256 on every arch, the one row whose dK/dV has fewer keys than warps x 16 (p^T and dS^T cross
     * shared memory: every larger dK/dV tile spills) */
    for (int s = 0; s < 6; s++) {
        const rt_attention_bwd_config *c = rt_attention_bwd_config_for(256, sms[s]);
        assert_non_null(c);
        assert_int_equal(c->head_dim, 256);
        assert_int_equal(c->dkdv.block_n, 16);
        assert_true(c->dq.block_m >= 16 && c->dkdv.num_stages >= 1 && c->dq.num_stages >= 1);
    }
}

/* f32's tables (an f32 tile takes twice the registers and shared memory):
 * a row of each for head dims 32, 64 and 128 on every arch, none at 256
 * (every f32 tile there spills: tls_attention_fwd and _bwd refuse it), 2
 * stages; sm_86 and sm_89 take rows of their own where sm_80's spill
 * there. */
static void test_attention_f32_rows(void **state) {
    (void)state;
    const int dims[] = {32, 64, 128}, sms[] = {0, 80, 86, 89, 90, 100};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 6; s++) {
            const rt_attention_config *c = rt_attention_f32_config_for(dims[d], sms[s]);
            const rt_attention_bwd_config *b = rt_attention_bwd_f32_config_for(dims[d], sms[s]);
            assert_non_null(c);
            assert_non_null(b);
            assert_int_equal(c->head_dim, dims[d]);
            assert_int_equal(b->head_dim, dims[d]);
            assert_true(c->min_sm <= sms[s] && b->min_sm <= sms[s]);
            assert_true(c->block_m >= 16 * (c->num_warps < 4 ? c->num_warps : 4)); /* an mma row block a warp */
            assert_int_equal(c->num_stages, 2);
            assert_true(b->dkdv.block_m >= 16 && b->dkdv.block_n >= 16 && b->dq.block_m >= 16 && b->dq.block_n >= 16);
            assert_true(b->dkdv.num_stages == 2 && b->dq.num_stages == 2);
            /* never larger than f16's tile: f32's take twice the registers */
            const rt_attention_config *h = rt_attention_config_for(dims[d], sms[s]);
            assert_true(c->block_m * c->block_n <= h->block_m * h->block_n);
        }
    assert_ptr_equal(rt_attention_f32_config_for(64, 0), rt_attention_f32_config_for(64, 80));
    assert_ptr_equal(rt_attention_f32_config_for(64, 89), rt_attention_f32_config_for(64, 86));
    assert_true(rt_attention_f32_config_for(64, 86) != rt_attention_f32_config_for(64, 80));
    assert_true(rt_attention_bwd_f32_config_for(128, 86) != rt_attention_bwd_f32_config_for(128, 80));
    /* 16 rows a warp, p in registers, but at head dim 128 (64 x 32 on 8 warps: 4 warps spill) */
    for (int d = 0; d < 2; d++) {
        const rt_attention_config *c = rt_attention_f32_config_for(dims[d], 80);
        assert_true(c->block_m >= 16 * c->num_warps);
    }
    assert_null(rt_attention_f32_config_for(256, 90));
    assert_null(rt_attention_f32_config_for(256, 0));
    assert_null(rt_attention_bwd_f32_config_for(256, 80));
    assert_null(rt_attention_f32_config_for(16, 90));
    assert_null(rt_attention_bwd_f32_config_for(96, 80));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_products_take_the_largest_tile),
        cmocka_unit_test(test_the_fma_table_picks_the_same_way),
        cmocka_unit_test(test_the_shape_minimums_hold),
        cmocka_unit_test(test_tiles_fill_the_multiprocessors),
        cmocka_unit_test(test_the_wgmma_table_takes_hopper_tiles),
        cmocka_unit_test(test_huge_shapes_do_not_overflow),
        cmocka_unit_test(test_attention_rows_by_head_dim_and_arch),
        cmocka_unit_test(test_attention_bwd_rows_by_head_dim_and_arch),
        cmocka_unit_test(test_attention_f32_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
