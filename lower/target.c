/* target.c - what each NVPTX target allows a kernel: the shared memory of
 * one CTA.
 *
 * Static shared memory is at most 48 KB on every target; more needs the
 * dynamic (extern) array and the launch's opt-in
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), up to the "maximum
 * amount of shared memory per thread block" of the CUDA C++ Programming
 * Guide's table of compute capabilities, which is also what
 * CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN reports (an SM's
 * shared memory less the 1 KB the system keeps per block). The passes
 * that add shared-memory buffers (pipeline_loops, stage_operands) share
 * one budget per kernel, this limit less LOWER_PIPELINE_SMEM_RESERVE. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

enum {
    SMEM_LIMIT_SM80 = 163 * 1024, /* 8.0 (A100) and 8.7: 164 KB an SM */
    SMEM_LIMIT_SM86 = 99 * 1024,  /* 8.6 and 8.9 (consumer Ampere, Ada): 100 KB an SM */
    SMEM_LIMIT_SM90 = 227 * 1024  /* 9.0 (H100, H200): 228 KB an SM */
};

uint64_t lower_buffer_bytes(tir_type t) {
    uint64_t eb = t.elem == TIR_PTR ? 8 : (tir_elem_bits(tir_type_elem(t)) + 7) / 8;
    return (tir_type_numel(t) * eb + 15) & ~(uint64_t)15;
}

static void add_buffer(tir_op *op, void *p) {
    if (op->code == TIR_OP_LOCAL_ALLOC) *(uint64_t *)p += lower_buffer_bytes(op->results[0]->type);
}

uint64_t lower_func_buffer_bytes(tir_func *f) {
    uint64_t n = 0;
    tir_walk(f, add_buffer, &n);
    return n;
}

uint64_t lower_buffer_budget(const char *arch) {
    uint32_t limit = lower_smem_limit(arch);
    return limit > LOWER_PIPELINE_SMEM_RESERVE ? limit - LOWER_PIPELINE_SMEM_RESERVE : 0;
}

uint32_t lower_smem_limit(const char *arch) {
    if (!arch || strncmp(arch, "sm_", 3) != 0) return SMEM_LIMIT_SM80;
    long cc = strtol(arch + 3, NULL, 10); /* "sm_90a": 90 */
    switch (cc) {
    case 86: case 89: return SMEM_LIMIT_SM86;
    case 90: return SMEM_LIMIT_SM90;
    default: return SMEM_LIMIT_SM80; /* 80, 87, and targets not in the table */
    }
}

bool lower_has_wgmma(const char *arch) { return arch && strcmp(arch, "sm_90a") == 0; }

/* wgmma's K (32 bytes of each row) for dot inputs of type e; 0: none.
 * f32 keeps mma.sync: `dot` rounds f32 inputs to tf32 (cvt.rna), and
 * wgmma reading them from shared memory would not. */
static uint32_t wgmma_k(tir_elem e) {
    switch (e) {
    case TIR_F16: case TIR_BF16: return 16;
    case TIR_I8: return 32;
    default: return 0;
    }
}

bool lower_wgmma_shape_ok(tir_elem in, const uint32_t *mnk, unsigned num_warps) {
    uint32_t k = wgmma_k(in), rows = (uint32_t)TIR_MMA_TILE_M * num_warps;
    return k && num_warps % LOWER_WARPGROUP_WARPS == 0 && mnk[0] % rows == 0 && mnk[2] % k == 0 && mnk[1] % 8 == 0 &&
           (in != TIR_I8 || mnk[1] <= 32 || mnk[1] % 16 == 0);
}

bool lower_wgmma_dot_ok(const tir_op *dot, unsigned num_warps) {
    const tir_type *r = &dot->results[0]->type, *a = &dot->operands[0]->type;
    if ((dot->code != TIR_OP_DOT && dot->code != TIR_OP_DOT_ASYNC) || r->rank != 2 || r->layout.kind != TIR_LAYOUT_MMA || r->layout.wpc[1] != 1 ||
        r->layout.wpc[0] != num_warps)
        return false;
    uint32_t mnk[3] = {r->shape[0], r->shape[1], a->shape[1]};
    return lower_wgmma_shape_ok(tir_type_elem(*a), mnk, num_warps);
}
