/* tune_cost.c - the tuner's stand-in cost on the host devices (the CPU
 * interpreter and the emulator), whose run times say nothing of the GPU's:
 * a deterministic number from the compiled kernel and its launch, so that
 * the search, its ranking and the tuning file are tested without a GPU.
 * It is NOT a time and predicts none (docs/tuning.md):
 *
 *   cost = programs x (ops + smem / 1024 + 4 x warps)
 *
 * programs: the grid's program instances; ops: the kernel's tile IR ops,
 * an op inside a loop or branch counted once; smem: the bytes of shared
 * memory the compiler planned (slots, buffers and both scratch areas; 0 in
 * the CPU device's IR, which is not laid out); warps: the kernel's
 * num_warps, else the configuration's, else 4. Fewer, larger programs
 * rank first until their shared memory and warps outweigh them. The
 * configuration is launched once first, so that one that fails to run is
 * pruned on these devices as on the GPU. */
#include "runtime/internal.h"

enum { STANDIN_DEFAULT_WARPS = 4, STANDIN_WARP_WEIGHT = 4, STANDIN_SMEM_UNIT = 1024 };

static uint64_t count_ops(const tir_block *b) {
    uint64_t n = 0;
    for (const tir_op *op = b ? b->first : NULL; op; op = op->next) {
        n++;
        if (op->body) n += count_ops(op->body);
        if (op->body2) n += count_ops(op->body2);
    }
    return n;
}

trt_status rt_tune_standin(trt_device *d, const rt_tune_trial *t, double *cost, bool *timed) {
    (void)d;
    trt_status st = trt_launch(t->k, t->grid[0], t->grid[1], t->grid[2], t->args, t->nargs);
    if (st != TRT_OK) return st;
    const tir_func *f = t->k->func;
    double programs = (double)t->grid[0] * (double)t->grid[1] * (double)t->grid[2];
    double smem = (double)f->smem.slots + f->smem.buffers + f->smem.scratch + f->smem.live_scratch;
    int warps = f->num_warps > 0 ? f->num_warps : t->num_warps > 0 ? t->num_warps : STANDIN_DEFAULT_WARPS;
    double ops = (double)count_ops(f->body);
    *cost = programs * (ops + (double)(uint64_t)(smem / STANDIN_SMEM_UNIT) + STANDIN_WARP_WEIGHT * (double)warps);
    *timed = false;
    return TRT_OK;
}
