"""tt_attention.py - flash attention's forward written in Triton, the same
math as stdlib/attention.tile's non-causal path (key columns masked past
n_kv, scores scaled by scale * log2(e) and exponentiated with exp2, a row
with no key yet rescaled from a max of 0, p cast to f16 before the second
dot, o divided by the row sum, lse in natural log), for bench/sass_attention.py
to compile for sm_80 without a GPU and compare its main loop's SASS with
tilec's. Not part of the project's build: Triton is not a dependency."""
import triton
import triton.language as tl


@triton.jit
def tt_attention(q, k, v, o, lse, n_kv, sqm, skn, svn, som, scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 HEAD_DIM: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    pid = tl.program_id(0)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, HEAD_DIM)
    qt = tl.load(q + rm[:, None] * sqm + rd[None, :])
    qk_scale = scale * LOG2E
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start in range(0, n_kv, BLOCK_N):
        cols = start + rn
        kt = tl.load(k + cols[:, None] * skn + rd[None, :], mask=cols[:, None] < n_kv, other=0.0)
        s = tl.dot(qt, tl.trans(kt)) * qk_scale
        s = tl.where(cols[None, :] < n_kv, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_use)
        p = tl.math.exp2(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        vt = tl.load(v + cols[:, None] * svn + rd[None, :], mask=cols[:, None] < n_kv, other=0.0)
        acc = tl.dot(p.to(tl.float16), vt, acc * alpha[:, None])
        m_i = m_new
    seen = l_i > 0.0
    inv = tl.where(seen, 1.0 / tl.where(seen, l_i, 1.0), 0.0)
    tl.store(o + rm[:, None] * som + rd[None, :], (acc * inv[:, None]).to(tl.float16))
    tl.store(lse + rm, tl.where(seen, (m_i + tl.math.log2(tl.where(seen, l_i, 1.0))) / LOG2E, float("-inf")))
