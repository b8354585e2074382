"""tt_matmul.py - matmul as Triton's tutorial writes it: the peer that
bench/gpu_bench.py times and bench/sass_loop.py disassembles.

Grouped program order, rows of a and columns of b past the edge wrapped
back into the matrix, pointers advanced along K each trip, the K tail
masked (unless EVEN: K a multiple of BLOCK_K, no masks), c stored in its
own type. Needs Triton (pip; not a dependency of the project).
"""
import triton
import triton.language as tl


@triton.jit
def tt_matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
              EVEN: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % group_m)
    pid_n = (pid % in_group) // group_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    pa = a + rm[:, None] * sam + rk[None, :] * sak
    pb = b + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN:
            x = tl.load(pa)
            y = tl.load(pb)
        else:
            x = tl.load(pa, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
            y = tl.load(pb, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc += tl.dot(x, y)
        pa += BLOCK_K * sak
        pb += BLOCK_K * sbk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c + cm[:, None] * scm + cn[None, :] * scn, acc.to(c.dtype.element_ty),
             mask=(cm[:, None] < M) & (cn[None, :] < N))
