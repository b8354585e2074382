"""tt_matmul_tma.py - matmul as Triton writes it for Hopper with tensor
descriptors (tl.make_tensor_descriptor: the bulk tensor copy engine, TMA):
the peer bench/sass_hopper.py disassembles for issue 22. The program order
is tt_matmul.py's (grouped); a and b are read through descriptors of
[M, K] and [K, N] row-major matrices, c written through one. Needs Triton
(pip; not a dependency of the project).
"""
import triton
import triton.language as tl


@triton.jit
def tt_matmul_tma(a, b, c, M, N, K, sam, sbk, scm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % group_m)
    pid_n = (pid % in_group) // group_m
    da = tl.make_tensor_descriptor(a, shape=[M, K], strides=[sam, 1], block_shape=[BLOCK_M, BLOCK_K])
    db = tl.make_tensor_descriptor(b, shape=[K, N], strides=[sbk, 1], block_shape=[BLOCK_K, BLOCK_N])
    dc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[scm, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        x = da.load([pid_m * BLOCK_M, k * BLOCK_K])
        y = db.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(x, y, acc)
    dc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c.dtype.element_ty))
