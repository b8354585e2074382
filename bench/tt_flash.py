"""tt_flash.py - flash attention forward and backward written in Triton, in
the structure of Triton's fused-attention tutorial, as a peer for
bench/gpu_bench.py (it needs torch and triton, which tilec's users do not;
not part of the build).

Written here from the FlashAttention-2 algorithm, not copied: the GPU
machine cannot fetch the tutorial, and the bench needs a backward too.
What it shares with the tutorial, so that its times stand for it:
 - forward: one program per 128 or 64 query rows and (batch, head),
   k read transposed, exp2 with log2(e) folded into the scale, the
   causal loop split into the blocks wholly below the diagonal (no mask)
   and the diagonal blocks (masked), a small autotuned list of tiles;
 - backward: delta = rowsum(dO o O) first, then one kernel whose program
   computes dK and dV for 128 keys (stepping 32 query rows at a time) and
   then dQ for 128 query rows (stepping 32 keys), 4 warps and 5 stages,
   no atomics;
 - contiguous [batch, heads, rows, head dim] tensors with the rows a
   multiple of 128 (the bench's N are).
lse is kept in log2 units between the passes (m + log2 l, of the scaled
scores), as the tutorial keeps it.
"""
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _fwd_blocks(acc, l_i, m_i, q, k_base, v_base, lo, hi, rows, cols0, dims, qk_scale,
                MASK: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    for start in range(lo, hi, BLOCK_N):
        start = tl.multiple_of(start, BLOCK_N)
        cols = start + cols0
        kt = tl.load(k_base + cols[None, :] * HEAD_DIM + dims[:, None])  # [HEAD_DIM, BLOCK_N]
        s = tl.dot(q, kt) * qk_scale
        if MASK:
            s = tl.where(rows[:, None] >= cols[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        vt = tl.load(v_base + cols[:, None] * HEAD_DIM + dims[None, :])
        acc = tl.dot(p.to(vt.dtype), vt, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def tt_flash_fwd_kernel(Q, K, V, O, LSE2, qk_scale, N_CTX, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * N_CTX * HEAD_DIM
    rows = start_m + tl.arange(0, BLOCK_M)
    cols0 = tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + rows[:, None] * HEAD_DIM + dims[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        # keys below the block's first row need no mask; the diagonal's do
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, K + base, V + base, 0, start_m, rows, cols0, dims, qk_scale,
                                    False, HEAD_DIM, BLOCK_N)
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, K + base, V + base, start_m, start_m + BLOCK_M, rows, cols0,
                                    dims, qk_scale, True, HEAD_DIM, BLOCK_N)
    else:
        acc, l_i, m_i = _fwd_blocks(acc, l_i, m_i, q, K + base, V + base, 0, N_CTX, rows, cols0, dims, qk_scale,
                                    False, HEAD_DIM, BLOCK_N)
    tl.store(LSE2 + bh * N_CTX + rows, m_i + tl.math.log2(l_i))
    tl.store(O + base + rows[:, None] * HEAD_DIM + dims[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty))


# the tutorial autotunes its forward over tiles like these (a shorter list:
# each compiles once per head dim, causality and dtype during the bench)
FWD_CONFIGS = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
               for bm, bn, w, s in ((64, 64, 4, 4), (128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3))]
tt_flash_fwd_tuned = triton.autotune(configs=FWD_CONFIGS, key=["N_CTX", "HEAD_DIM", "CAUSAL"])(tt_flash_fwd_kernel)


@triton.jit
def tt_flash_delta_kernel(O, DO, DELTA, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    bh = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    at = bh.to(tl.int64) * N_CTX * HEAD_DIM + rows[:, None] * HEAD_DIM + dims[None, :]
    o = tl.load(O + at).to(tl.float32)
    do = tl.load(DO + at).to(tl.float32)
    tl.store(DELTA + bh * N_CTX + rows, tl.sum(o * do, 1))


@triton.jit
def _bwd_dkdv(dk, dv, k, v, Q, DO, LSE2, DELTA, lo, hi, keys, dims, qk_scale,
              MASK: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """dK and dV of one key block over query rows lo to hi, working on the
    transposed scores (keys by rows) so that no tile is turned in registers."""
    for start in range(lo, hi, BLOCK_M):
        start = tl.multiple_of(start, BLOCK_M)
        rows = start + tl.arange(0, BLOCK_M)
        qt = tl.load(Q + rows[None, :] * HEAD_DIM + dims[:, None])  # [HEAD_DIM, BLOCK_M]
        lse2 = tl.load(LSE2 + rows)
        pt = tl.math.exp2(tl.dot(k, qt) * qk_scale - lse2[None, :])  # [BLOCK_N, BLOCK_M]
        if MASK:
            pt = tl.where(rows[None, :] >= keys[:, None], pt, 0.0)
        do = tl.load(DO + rows[:, None] * HEAD_DIM + dims[None, :])  # [BLOCK_M, HEAD_DIM]
        dv = tl.dot(pt.to(do.dtype), do, dv)
        dpt = tl.dot(v, tl.trans(do))
        dst = pt * (dpt - tl.load(DELTA + rows)[None, :])
        dk = tl.dot(dst.to(qt.dtype), tl.trans(qt), dk)
    return dk, dv


@triton.jit
def _bwd_dq(dq, q, do, lse2, delta, K, V, lo, hi, rows, dims, qk_scale,
            MASK: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    """dQ of one query block over keys lo to hi."""
    for start in range(lo, hi, BLOCK_N):
        start = tl.multiple_of(start, BLOCK_N)
        keys = start + tl.arange(0, BLOCK_N)
        kt = tl.load(K + keys[None, :] * HEAD_DIM + dims[:, None])  # [HEAD_DIM, BLOCK_N]
        vt = tl.load(V + keys[None, :] * HEAD_DIM + dims[:, None])
        p = tl.math.exp2(tl.dot(q, kt) * qk_scale - lse2[:, None])
        if MASK:
            p = tl.where(rows[:, None] >= keys[None, :], p, 0.0)
        ds = p * (tl.dot(do, vt) - delta[:, None])
        dq = tl.dot(ds.to(kt.dtype), tl.trans(kt), dq)
    return dq


@triton.jit
def tt_flash_bwd_kernel(Q, K, V, DO, DQ, DK, DV, LSE2, DELTA, sm_scale, qk_scale, N_CTX,
                        HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M1: tl.constexpr,
                        BLOCK_N1: tl.constexpr, BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr):
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * N_CTX * HEAD_DIM
    Q, K, V, DO = Q + base, K + base, V + base, DO + base
    LSE2, DELTA = LSE2 + bh * N_CTX, DELTA + bh * N_CTX
    dims = tl.arange(0, HEAD_DIM)

    # dK and dV for keys start_n to start_n + BLOCK_N1
    start_n = tl.program_id(0) * BLOCK_N1
    keys = start_n + tl.arange(0, BLOCK_N1)
    k = tl.load(K + keys[:, None] * HEAD_DIM + dims[None, :])
    v = tl.load(V + keys[:, None] * HEAD_DIM + dims[None, :])
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N1, HEAD_DIM], tl.float32)
    if CAUSAL:
        # rows before the block see none of its keys; the diagonal's rows are masked
        dk, dv = _bwd_dkdv(dk, dv, k, v, Q, DO, LSE2, DELTA, start_n, start_n + BLOCK_N1, keys, dims, qk_scale,
                           True, HEAD_DIM, BLOCK_M1)
        dk, dv = _bwd_dkdv(dk, dv, k, v, Q, DO, LSE2, DELTA, start_n + BLOCK_N1, N_CTX, keys, dims, qk_scale,
                           False, HEAD_DIM, BLOCK_M1)
    else:
        dk, dv = _bwd_dkdv(dk, dv, k, v, Q, DO, LSE2, DELTA, 0, N_CTX, keys, dims, qk_scale,
                           False, HEAD_DIM, BLOCK_M1)
    at = base + keys[:, None] * HEAD_DIM + dims[None, :]
    tl.store(DK + at, (dk * sm_scale).to(DK.dtype.element_ty))
    tl.store(DV + at, dv.to(DV.dtype.element_ty))

    # dQ for query rows start_m to start_m + BLOCK_M2
    start_m = tl.program_id(0) * BLOCK_M2
    rows = start_m + tl.arange(0, BLOCK_M2)
    q = tl.load(Q + rows[:, None] * HEAD_DIM + dims[None, :])
    do = tl.load(DO + rows[:, None] * HEAD_DIM + dims[None, :])
    lse2 = tl.load(LSE2 + rows)
    delta = tl.load(DELTA + rows)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], tl.float32)
    if CAUSAL:
        dq = _bwd_dq(dq, q, do, lse2, delta, K, V, 0, start_m, rows, dims, qk_scale, False, HEAD_DIM, BLOCK_N2)
        dq = _bwd_dq(dq, q, do, lse2, delta, K, V, start_m, start_m + BLOCK_M2, rows, dims, qk_scale,
                     True, HEAD_DIM, BLOCK_N2)
    else:
        dq = _bwd_dq(dq, q, do, lse2, delta, K, V, 0, N_CTX, rows, dims, qk_scale, False, HEAD_DIM, BLOCK_N2)
    tl.store(DQ + base + rows[:, None] * HEAD_DIM + dims[None, :], (dq * sm_scale).to(DQ.dtype.element_ty))


BWD_BLOCKS = dict(BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32)  # the tutorial's, with 4 warps, 5 stages
ROW_MULTIPLE = 128


def check_shape(q):
    B, H, N, D = q.shape
    if N % ROW_MULTIPLE or not q.is_contiguous():
        raise ValueError("tt_flash: rows must be a multiple of %d and tensors contiguous" % ROW_MULTIPLE)
    return B, H, N, D


def fwd(q, k, v, causal, sm_scale, o, lse2, config=None):
    """o (and lse2, [B, H, N] f32 in log2 units) from q, k, v [B, H, N, D]
    contiguous. config: a dict of BLOCK_M, BLOCK_N, num_warps, num_stages
    to skip the autotuner (the interpreter cannot time)."""
    B, H, N, D = check_shape(q)
    args = (q, k, v, o, lse2, sm_scale * LOG2E, N, D, causal)
    if config is None:
        tt_flash_fwd_tuned[lambda meta: (triton.cdiv(N, meta["BLOCK_M"]), B * H)](*args)
    else:
        tt_flash_fwd_kernel[(triton.cdiv(N, config["BLOCK_M"]), B * H)](*args, **config)


def bwd(q, k, v, o, do, lse2, causal, sm_scale, dq, dk, dv, delta):
    """dq, dk, dv from the forward's o and lse2 and do (delta: [B, H, N] f32
    scratch)."""
    B, H, N, D = check_shape(q)
    tt_flash_delta_kernel[(N // ROW_MULTIPLE, B * H)](o, do, delta, N, D, ROW_MULTIPLE)
    tt_flash_bwd_kernel[(N // BWD_BLOCKS["BLOCK_N1"], B * H)](q, k, v, do, dq, dk, dv, lse2, delta, sm_scale,
                                                              sm_scale * LOG2E, N, D, causal, **BWD_BLOCKS,
                                                              num_warps=4, num_stages=5)


if __name__ == "__main__":
    # a check of the peer itself against float64 autograd, at small sizes
    # (on the CPU: TRITON_INTERPRET=1 python3 bench/tt_flash.py). f16 only
    # there: Triton 3.9's interpreter multiplies bf16 tiles wrongly (a 16 x
    # 16 tl.dot off by 1e10); on a GPU, gpu_bench.py checks the bf16 runs.
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    worst = 0.0
    dts = (torch.float16,) if dev == "cpu" else (torch.float16, torch.bfloat16)
    shapes = ((1, 2, 128, 32, False), (1, 1, 256, 64, True), (2, 1, 256, 32, True))  # B, H, N, D, causal
    for (B, H, N, D, causal), dt in ((shape, dt) for dt in dts for shape in shapes):
        q, k, v, do = (torch.randn(B, H, N, D, device=dev).to(dt) for _ in range(4))
        scale = D ** -0.5
        o, dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(4))
        lse2, delta = (torch.empty(B, H, N, device=dev) for _ in range(2))
        fwd(q, k, v, causal, scale, o, lse2, config=dict(BLOCK_M=64, BLOCK_N=32))
        bwd(q, k, v, o, do, lse2, causal, scale, dq, dk, dv, delta)
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        s = (q64 @ k64.transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(torch.ones(N, N, dtype=torch.bool, device=dev).triu(1), float("-inf"))
        ref = torch.softmax(s, -1) @ v64
        gq, gk, gv = torch.autograd.grad(ref, (q64, k64, v64), do.double())
        tol = 2e-2 if dt == torch.bfloat16 else 4e-3
        for name, got, want in (("o", o, ref), ("dq", dq, gq), ("dk", dk, gk), ("dv", dv, gv)):
            err = (got.double() - want).abs().max().item() / want.abs().max().item()
            worst = max(worst, err / tol)
            print("%s B%d H%d N%d D%d causal=%d %s: error %.2e of the largest, tolerance %.0e" %
                  (str(dt)[6:], B, H, N, D, causal, name, err, tol))
            assert err <= tol, name
    print("tt_flash: ok (worst error / tolerance %.2f)" % worst)
