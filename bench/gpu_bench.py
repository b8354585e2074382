#!/usr/bin/env python3
"""GPU benchmark: tilec's stdlib kernels against PyTorch and Triton.

    python3 bench/gpu_bench.py --lib build-gpu/libtilec.so [--quick]

Run by scripts/gpu-check.sh on the GPU machine (it needs torch and triton,
which the users of tilec do not: this is the only Python in the project,
and it exists to compare with those peers). tilec kernels are compiled at
run time and launched through the C runtime API (include/tilec_rt.h) over
ctypes (layernorm and rmsnorm through their stdlib entry points,
include/tilec_stdlib.h, with the library's own launch choices), on the same torch tensors as the peers (trt_wrap), on the default
stream that torch also uses. Every operation is checked against torch
before it is timed; one that fails or is wrong is left out of the tables
and listed after them as FAILED (exit status 1), and the run goes on with
the next section (matrix products last: a kernel that faults leaves the
CUDA context unusable for everything after it). Times are medians of triton.testing.do_bench, which
flushes the L2 cache before every run; GB/s counts each input read once
and each output written once. The table ends with each tilec row's ratio
to the faster peer. Peers are measured in the same run.

Flash attention has two tables of its own, forward and backward, in
TFLOP/s: tilec through its C entry points tls_attention_fwd and
tls_attention_bwd (their configuration table), torch's
scaled_dot_product_attention with its FlashAttention-2 ("flash") and
cuDNN backends, and bench/tt_flash.py (Triton, in the structure of its
fused-attention tutorial), each checked against SDPA's flash backend
before it is timed. The default run times D 128 at N 4096 (f16 and bf16,
causal and not) and D 64 at N 1024; --sweep the whole grid (N 1024, 4096,
16384; D 64, 128; f16 and bf16; causal and not); --quick one shape.

Matrix products have their own table, in TFLOP/s (2 M N K flops): tilec
through its C entry point tls_matmul (include/tilec_stdlib.h: its
configuration table and layout choice, as a C caller gets them), cuBLAS
(torch.matmul) and Triton's tutorial matmul at one fixed configuration,
with each tilec row's ratio to cuBLAS.

Last, the tuner on the GPU: a tls_matmul (f16, 4096 cubed) and a
tls_attention_fwd (f16, 4 x 16 x 4096 x 128) each search their
configurations from the call (tls_options.search: every candidate timed
by the tuner with the L2 flushed), then each is timed at its table's
configuration and at the searched one (docs/tuning.md).
"""
import argparse
import ctypes
import os
import signal
import sys

import torch
import triton
import triton.language as tl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = 1024  # BLOCK of the 1-D kernels, tilec's and Triton's


class OutOfTime(BaseException):
    """SIGTERM (scripts/gpu-check.sh's time budget ran out): stop timing
    and print the tables so far."""


class Failed(Exception):
    """A tilec call failed or a result is wrong: its section's rows are
    left out and listed as failed, and the run goes on."""


# ---- the tilec runtime over ctypes -------------------------------------------

class Arg(ctypes.Structure):  # trt_arg
    _fields_ = [("kind", ctypes.c_int), ("buffer", ctypes.c_uint64), ("offset", ctypes.c_size_t),
                ("i", ctypes.c_int64), ("f", ctypes.c_double)]


ARG_BUFFER, ARG_INT, ARG_FLOAT = 0, 1, 2
DEVICE_CUDA = 2


class Define(ctypes.Structure):  # tilec_define
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


class CompileOptions(ctypes.Structure):  # trt_compile_options: every field, in order
    _fields_ = [("arch", ctypes.c_char_p), ("num_warps", ctypes.c_int), ("defines", ctypes.POINTER(Define)),
                ("ndefines", ctypes.c_size_t), ("no_asserts", ctypes.c_bool), ("num_stages", ctypes.c_int),
                ("exp2_ftz", ctypes.c_bool), ("warp_specialize", ctypes.c_int), ("kernel", ctypes.c_char_p)]


class TlsMem(ctypes.Structure):  # tls_mem: a trt_buffer and a byte offset
    _fields_ = [("buffer", ctypes.c_uint64), ("offset", ctypes.c_size_t)]


class AttnProblem(ctypes.Structure):  # tls_attention_problem
    _fields_ = [("batch", ctypes.c_int64), ("heads", ctypes.c_int64), ("kv_heads", ctypes.c_int64),
                ("n_q", ctypes.c_int64), ("n_kv", ctypes.c_int64), ("head_dim", ctypes.c_int64),
                ("scale", ctypes.c_float), ("causal", ctypes.c_bool), ("window", ctypes.c_bool),
                ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64), ("cu_q", TlsMem),
                ("cu_k", TlsMem), ("total_q", ctypes.c_int64), ("total_kv", ctypes.c_int64)]


class TlsOptions(ctypes.Structure):  # tls_options: every field, in order
    _fields_ = [("num_warps", ctypes.c_int), ("stream", ctypes.c_void_p), ("precision", ctypes.c_int),
                ("search", ctypes.c_void_p)]


class AttnTensor(ctypes.Structure):  # tls_attention_tensor
    _fields_ = [("mem", TlsMem), ("stride_batch", ctypes.c_int64), ("stride_head", ctypes.c_int64),
                ("stride_row", ctypes.c_int64)]


TLS_DTYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}  # tls_dtype


def declare(L):
    """The argument and result types of every C function the bench calls,
    on the ctypes library L (checked against the headers by
    tests/bench-abi.py, which runs in CI)."""
    vp, u64, sz = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t
    L.trt_open.argtypes = [ctypes.c_int, ctypes.POINTER(vp), ctypes.c_char_p, sz]
    L.trt_last_error.argtypes = [vp]
    L.trt_last_error.restype = ctypes.c_char_p
    L.trt_device_name.argtypes = [vp]
    L.trt_device_name.restype = ctypes.c_char_p
    L.trt_compile.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p, sz, ctypes.POINTER(CompileOptions),
                              ctypes.POINTER(vp)]
    L.trt_get_kernel.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(vp)]
    L.trt_wrap.argtypes = [vp, u64, sz, ctypes.POINTER(u64)]
    L.trt_launch.argtypes = [vp, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(Arg), sz]
    L.tls_matmul.argtypes = [vp, ctypes.c_int, TlsMem, TlsMem, TlsMem] + [ctypes.c_int64] * 9 + [vp]
    i64, f32, ws = ctypes.c_int64, ctypes.c_float, [vp, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(sz)]
    L.tls_layernorm.argtypes = [vp, ctypes.c_int] + [TlsMem] * 6 + [i64] * 3 + [f32, vp]
    L.tls_layernorm_bwd_workspace.argtypes = ws
    L.tls_layernorm_bwd.argtypes = [vp, ctypes.c_int] + [TlsMem] * 8 + [i64] * 3 + [TlsMem, vp]
    L.tls_rmsnorm.argtypes = [vp, ctypes.c_int] + [TlsMem] * 4 + [i64] * 3 + [f32, vp]
    L.tls_rmsnorm_bwd_workspace.argtypes = ws
    L.tls_rmsnorm_bwd.argtypes = [vp, ctypes.c_int] + [TlsMem] * 6 + [i64] * 3 + [TlsMem, vp]
    ap = ctypes.POINTER(AttnProblem)
    L.tls_attention_fwd.argtypes = [vp, ctypes.c_int, ap] + [AttnTensor] * 5 + [vp]
    L.tls_attention_bwd_workspace.argtypes = [vp, ap, ctypes.POINTER(sz)]
    L.tls_attention_bwd.argtypes = [vp, ctypes.c_int, ap] + [AttnTensor] * 9 + [TlsMem, vp]
    L.trt_tuning_create.argtypes = [ctypes.POINTER(vp)]
    L.trt_tuning_free.argtypes = [vp]
    L.trt_tuning_num_entries.argtypes = [vp]
    L.trt_tuning_num_entries.restype = sz
    L.trt_use_tuning.argtypes = [vp, vp]
    L.trt_tuning_last_used.argtypes = [vp]
    L.trt_tuning_last_used.restype = ctypes.c_char_p


class Tilec:
    def __init__(self, lib_path):
        self.lib = L = ctypes.CDLL(lib_path)
        declare(L)
        why = ctypes.create_string_buffer(512)
        self.dev = ctypes.c_void_p()
        if L.trt_open(DEVICE_CUDA, ctypes.byref(self.dev), why, 512) != 0:
            sys.exit("tilec: cannot open the GPU: " + why.value.decode())
        self.name = L.trt_device_name(self.dev).decode()
        self.buffers = {}

    def check(self, status, what):
        if status != 0:
            raise Failed("tilec: %s failed: %s" % (what, self.lib.trt_last_error(self.dev).decode()))

    def kernel(self, path, name, num_warps=0, source=None, num_stages=0, **defines):
        src = source.encode() if source else open(os.path.join(ROOT, path), "rb").read()
        defs = (Define * max(1, len(defines)))(*[Define(k.encode(), v) for k, v in defines.items()])
        opt = CompileOptions(None, num_warps, defs, len(defines), False, num_stages, False)
        mod, k = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.trt_compile(self.dev, path.encode(), src, len(src), ctypes.byref(opt), ctypes.byref(mod)),
                   "compiling " + path)
        self.check(self.lib.trt_get_kernel(mod, name.encode(), ctypes.byref(k)), "finding " + name)
        return k

    def buf(self, t):
        key = (t.data_ptr(), t.numel() * t.element_size())
        if key not in self.buffers:
            h = ctypes.c_uint64()
            self.check(self.lib.trt_wrap(self.dev, key[0], key[1], ctypes.byref(h)), "wrapping a tensor")
            self.buffers[key] = h.value
        return self.buffers[key]

    def entry(self, name, dtype, *args):
        """A function that calls the stdlib entry point `name` (tls_*) for
        tensors of dtype with args: tensors pass as tls_mem, the rest as
        they are (its argtypes convert them); default options."""
        f, dev, dt = getattr(self.lib, name), self.dev, TLS_DTYPE[dtype]
        conv = [TlsMem(self.buf(a), 0) if isinstance(a, torch.Tensor) else a for a in args]

        def run():
            if f(dev, dt, *conv, None) != 0:
                raise Failed("tilec: %s failed: %s" % (name, self.lib.trt_last_error(dev).decode()))
        return run

    def workspace(self, name, rows, cols):
        """The workspace a stdlib backward pass asks for, as a byte tensor."""
        n = ctypes.c_size_t()
        self.check(getattr(self.lib, name)(self.dev, rows, cols, ctypes.byref(n)), name)
        return torch.empty(max(n.value, 1), device="cuda", dtype=torch.uint8)

    def matmul(self, a, b, c, search=None):
        """A function that runs tls_matmul: c = a . b (2-D tensors, any
        strides); with search (a trt_tuning), tls_options.search: the call
        searches its configurations into it."""
        dt = TLS_DTYPE[a.dtype]
        ma, mb, mc = (TlsMem(self.buf(t), 0) for t in (a, b, c))
        (M, K), N = a.shape, b.shape[1]
        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        call, dev = self.lib.tls_matmul, self.dev
        opt = TlsOptions(search=search) if search else None

        def run():
            if call(dev, dt, ma, mb, mc, M, N, K, *strides, ctypes.byref(opt) if opt is not None else None) != 0:
                raise Failed("tilec: tls_matmul failed: " + self.lib.trt_last_error(dev).decode())
        run()
        run.keep = opt
        return run

    def tuning(self):
        """A new, empty trt_tuning (a handle; free it with tuning_free)."""
        t = ctypes.c_void_p()
        self.check(self.lib.trt_tuning_create(ctypes.byref(t)), "trt_tuning_create")
        return t

    def use_tuning(self, t):
        self.check(self.lib.trt_use_tuning(self.dev, t), "trt_use_tuning")

    def attention(self, q, k, v, o, lse, causal, grads=None, search=None):
        """A function that runs tls_attention_fwd (o and lse from q, k, v:
        [batch, heads, rows, head dim], any strides; lse [batch, heads,
        rows] f32), or with grads = (d_o, dq, dk, dv) tls_attention_bwd
        (its workspace allocated here); the default scale, the library's
        own configuration table. With search (a trt_tuning), the forward
        searches its configurations into it (tls_options.search)."""
        B, H, N, D = q.shape
        p = AttnProblem(batch=B, heads=H, kv_heads=k.shape[1], n_q=N, n_kv=k.shape[2], head_dim=D, scale=0.0,
                        causal=causal, window=False, window_left=-1, window_right=-1)
        t = [AttnTensor(TlsMem(self.buf(x), 0), *x.stride()[:3]) for x in (q, k, v, o, lse)]
        dev, dt, L = self.dev, TLS_DTYPE[q.dtype], self.lib
        opt = TlsOptions(search=search) if search else None
        if grads is None:
            call, args = L.tls_attention_fwd, (dev, dt, ctypes.byref(p), *t, ctypes.byref(opt) if opt is not None else None)
        else:
            n = ctypes.c_size_t()
            self.check(L.tls_attention_bwd_workspace(dev, ctypes.byref(p), ctypes.byref(n)), "tls_attention_bwd_workspace")
            ws = torch.empty(max(n.value, 16), device="cuda", dtype=torch.uint8)
            g = [AttnTensor(TlsMem(self.buf(x), 0), *x.stride()[:3]) for x in grads]
            # q, k, v, o, d_o, lse, dq, dk, dv, workspace
            call, args = L.tls_attention_bwd, (dev, dt, ctypes.byref(p), *t[:4], g[0], t[4], *g[1:],
                                               TlsMem(self.buf(ws), 0), None)

        def run():
            if call(*args) != 0:
                raise Failed("tilec: %s failed: %s" % (call.__name__, L.trt_last_error(dev).decode()))
        run.keep = (p, ws) if grads is not None else (p, opt)  # what args point to lives as long as run
        return run

    def launcher(self, k, grid, *args):
        """A function that launches k with args (tensors, ints, floats) over
        grid (programs along x, or an (x, y, z) tuple)."""
        gx, gy, gz = grid if isinstance(grid, tuple) else (grid, 1, 1)
        arr = (Arg * len(args))()
        for a, v in zip(arr, args):
            if isinstance(v, torch.Tensor):
                a.kind, a.buffer = ARG_BUFFER, self.buf(v)
            elif isinstance(v, float):
                a.kind, a.f = ARG_FLOAT, v
            else:
                a.kind, a.i = ARG_INT, v
        launch, dev, n = self.lib.trt_launch, self.dev, len(args)

        def run():
            if launch(k, gx, gy, gz, arr, n) != 0:
                raise Failed("tilec: launch failed: " + self.lib.trt_last_error(dev).decode())
        return run


# ---- Triton peers, tutorial style ---------------------------------------------

@triton.jit
def tt_add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def tt_scale(x, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x + offs, alpha * tl.load(x + offs, mask=m), mask=m)


@triton.jit
def tt_fill(out, value, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.full((BLOCK,), value, tl.float32), mask=offs < n)


@triton.jit
def tt_softmax(x, out, n_cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    v = tl.load(x + row * x_stride + cols, mask=m, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + row * out_stride + cols, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def tt_layernorm(x, y, w, b, mean, rstd, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    mu = tl.sum(v, axis=0) / n_cols
    d = tl.where(m, v - mu, 0.0)
    rs = 1 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    wv = tl.load(w + cols, mask=m).to(tl.float32)
    bv = tl.load(b + cols, mask=m).to(tl.float32)
    tl.store(y + row * stride + cols, (d * rs * wv + bv).to(y.dtype.element_ty), mask=m)
    tl.store(mean + row, mu)
    tl.store(rstd + row, rs)


@triton.jit
def tt_layernorm_bwd(x, dy, dx, w, mean, rstd, dw_part, db_part, n_rows, n_cols, stride, per, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    wv = tl.load(w + cols, mask=m).to(tl.float32)
    dw = tl.zeros((BLOCK,), tl.float32)
    db = tl.zeros((BLOCK,), tl.float32)
    for row in range(g * per, tl.minimum(g * per + per, n_rows)):
        rs = tl.load(rstd + row)
        xv = tl.load(x + row * stride + cols, mask=m, other=0.0).to(tl.float32)
        xhat = tl.where(m, (xv - tl.load(mean + row)) * rs, 0.0)
        gy = tl.load(dy + row * stride + cols, mask=m, other=0.0).to(tl.float32)
        wdy = wv * gy
        c1 = tl.sum(xhat * wdy, axis=0) / n_cols
        c2 = tl.sum(wdy, axis=0) / n_cols
        tl.store(dx + row * stride + cols, ((wdy - (xhat * c1 + c2)) * rs).to(dx.dtype.element_ty), mask=m)
        dw += gy * xhat
        db += gy
    tl.store(dw_part + g * n_cols + cols, dw, mask=m)
    tl.store(db_part + g * n_cols + cols, db, mask=m)


@triton.jit
def tt_layernorm_dwdb(dw_part, db_part, dw, db, n_groups, n_cols, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    sw = tl.zeros((BLOCK,), tl.float32)
    sb = tl.zeros((BLOCK,), tl.float32)
    for g in range(0, n_groups):
        sw += tl.load(dw_part + g * n_cols + cols, mask=m, other=0.0)
        sb += tl.load(db_part + g * n_cols + cols, mask=m, other=0.0)
    tl.store(dw + cols, sw.to(dw.dtype.element_ty), mask=m)
    tl.store(db + cols, sb.to(db.dtype.element_ty), mask=m)


@triton.jit
def tt_rmsnorm(x, y, w, rstd, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    rs = 1 / tl.sqrt(tl.sum(v * v, axis=0) / n_cols + eps)
    wv = tl.load(w + cols, mask=m).to(tl.float32)
    tl.store(y + row * stride + cols, (v * rs * wv).to(y.dtype.element_ty), mask=m)
    tl.store(rstd + row, rs)


@triton.jit
def tt_rmsnorm_bwd(x, dy, dx, w, rstd, dw_part, n_rows, n_cols, stride, per, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    wv = tl.load(w + cols, mask=m).to(tl.float32)
    dw = tl.zeros((BLOCK,), tl.float32)
    for row in range(g * per, tl.minimum(g * per + per, n_rows)):
        rs = tl.load(rstd + row)
        xhat = tl.load(x + row * stride + cols, mask=m, other=0.0).to(tl.float32) * rs
        gy = tl.load(dy + row * stride + cols, mask=m, other=0.0).to(tl.float32)
        wdy = wv * gy
        c = tl.sum(xhat * wdy, axis=0) / n_cols
        tl.store(dx + row * stride + cols, ((wdy - xhat * c) * rs).to(dx.dtype.element_ty), mask=m)
        dw += gy * xhat
    tl.store(dw_part + g * n_cols + cols, dw, mask=m)


@triton.jit
def tt_rmsnorm_dw(dw_part, dw, n_groups, n_cols, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    sw = tl.zeros((BLOCK,), tl.float32)
    for g in range(0, n_groups):
        sw += tl.load(dw_part + g * n_cols + cols, mask=m, other=0.0)
    tl.store(dw + cols, sw.to(dw.dtype.element_ty), mask=m)


# GELU, tanh form: 0.5 x (1 + tanh(u)) = x sigmoid(2u) (tl.sigmoid, as tanh
# is not spelled the same in every Triton version)
@triton.jit
def tt_gelu(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m).to(tl.float32)
    u = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    tl.store(y + offs, (v * tl.sigmoid(2.0 * u)).to(y.dtype.element_ty), mask=m)


@triton.jit
def tt_gelu_bwd(x, dy, dx, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m).to(tl.float32)
    u = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * v * v)
    s = tl.sigmoid(2.0 * u)
    d = s + v * s * (1.0 - s) * 2.0 * du
    tl.store(dx + offs, (tl.load(dy + offs, mask=m).to(tl.float32) * d).to(dx.dtype.element_ty), mask=m)


# dropout as Triton's tutorial writes it (low-memory dropout: the mask is
# tl.rand of the seed and offset, never stored); it keeps rand > p where
# tilec keeps rand >= p, the same mask unless a draw equals p exactly
@triton.jit
def tt_dropout(x, y, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    keep = tl.rand(seed, offs) > p
    tl.store(y + offs, tl.where(keep, v / (1 - p), 0.0).to(y.dtype.element_ty), mask=m)


# matmul as Triton's tutorial writes it (bench/tt_matmul.py, which
# bench/sass_loop.py disassembles too), at one fixed configuration: the
# tutorial autotuner's first for CUDA, its best f16 choice on an H100 at
# large sizes
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tt_matmul import tt_matmul  # noqa: E402 - beside this file, found through the path above


TT_MATMUL_CONFIG = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, EVEN=False, num_warps=8, num_stages=3)


def tt_matmul_run(a, b, c):
    (M, K), N = a.shape, b.shape[1]
    cfg = TT_MATMUL_CONFIG
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    return lambda: tt_matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                   c.stride(0), c.stride(1), **cfg)


def matmul_bench(tc, quick, rows, failed):
    """tilec's tls_matmul against cuBLAS and Triton: f16 and bf16, square
    sizes and M = N = 8192 with K from 512 up; each result checked against
    an f32 product first. Appends the rows of the TFLOP/s table to rows; a
    shape whose tilec product fails or is wrong goes to failed instead."""
    squares = [(n, n, n) for n in ((4096,) if quick else (1024, 2048, 4096, 8192))]
    ks = [] if quick else [(8192, 8192, k) for k in (512, 1024, 2048, 4096)]
    for dt, name, rel in ((torch.float16, "f16", 4e-3), (torch.bfloat16, "bf16", 2e-2)):
        for M, N, K in squares + ks:
            a = torch.randn(M, K, device="cuda", dtype=dt)
            b = torch.randn(K, N, device="cuda", dtype=dt)
            c = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
            try:
                run = tc.matmul(a, b, c)  # runs it once
                torch.cuda.synchronize()
                # within rel of the largest |c|: the storage's rounding (f16
                # 2^-11, bf16 2^-8) with room for f32 sums in another order
                ref = torch.matmul(a.float(), b.float())
                err = (c.float() - ref).abs().max().item()
                if not err <= rel * ref.abs().max().item():
                    raise Failed("WRONG: differs from torch by %g (largest |c| %g)" % (err, ref.abs().max().item()))
                del ref
            except Failed as e:
                print("FAILED: matmul %s %dx%dx%d: %s" % (name, M, N, K, e), file=sys.stderr)
                failed.append(("matmul %s %dx%dx%d" % (name, M, N, K), str(e)))
                continue
            tt = tt_matmul_run(a, b, c)
            t = {"tilec": median_ms(run),
                 "cublas": median_ms(lambda: torch.matmul(a, b, out=c)),
                 "triton": peer_ms(tt, "triton matmul")}
            rows.append(("matmul %s" % name, (M, N, K), t))
            del a, b, c


def row_align(cols, *strides):
    """runtime/stdlib.c's row_align: the largest power of two up to 8
    dividing the row length and the strides (each the row length here
    unless given), the ALIGN the library passes its row kernels."""
    a = 8
    while a > 1 and any(v % a for v in (cols,) + strides):
        a //= 2
    return a


def tt_softmax_warps(block):  # the tutorial's choice
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


# ---- measuring ------------------------------------------------------------------

def median_ms(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")


def peer_ms(fn, what):
    """A peer's time, or None (said on stderr) if it fails: a broken peer
    must not cost the rest of the table."""
    try:
        return median_ms(fn)
    except Exception as e:  # noqa: BLE001 - any failure of a peer
        print("peer failed: %s: %s" % (what, str(e).splitlines()[0] if str(e) else type(e).__name__), file=sys.stderr)
        return None


def near(a, b, what, rtol=1e-5, atol=1e-7):
    if not torch.allclose(a, b, rtol=rtol, atol=atol):
        bad = (~torch.isclose(a, b, rtol=rtol, atol=atol)).nonzero()[:3].tolist()
        raise Failed("WRONG: %s differs from torch at %s" % (what, bad))


def close(a, b, what):
    if not torch.equal(a, b):
        bad = (a != b).nonzero()[:3].flatten().tolist()
        raise Failed("WRONG: %s differs from torch at %s" % (what, bad))


def torch_rms_norm(x, w, eps):
    """torch.nn.functional.rms_norm where this torch has it (2.4 on), else
    the expression it stands for."""
    if hasattr(torch.nn.functional, "rms_norm"):
        return torch.nn.functional.rms_norm(x, [x.shape[-1]], w, eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


# matmul tile configurations the sweep times: BLOCK_M, BLOCK_N, BLOCK_K,
# num_warps, num_stages (the first is runtime/stdlib.c's large-shape row;
# the others Triton's tutorial list for recent GPUs)
MATMUL_SWEEP = [(128, 128, 32, 4, 4), (128, 128, 32, 8, 4), (128, 128, 64, 4, 3), (128, 256, 64, 8, 3),
                (256, 128, 64, 8, 3), (128, 256, 32, 8, 4), (64, 256, 32, 4, 4), (128, 64, 32, 4, 4),
                (64, 128, 32, 4, 4)]


# and at 1024^3 and 2048^3, runtime/stdlib.c's three rows: whether a tile
# count below the SMs' (64 tiles of 128 x 128 at 1024^2) is worth a
# smaller tile, as rt_matmul_config_for assumes
MATMUL_SWEEP_SMALL = [(128, 128, 32, 4, 4), (64, 64, 32, 4, 4), (32, 32, 32, 2, 4)]


def matmul_sweep(tc):
    """stdlib matmul_f16 (row-major, EVEN) over MATMUL_SWEEP at 4096^3 and
    8192^3 and MATMUL_SWEEP_SMALL at 1024^3 and 2048^3, each checked, then
    timed with cuBLAS in the same run."""
    print()
    print("== tilec matmul sweep (f16, row-major; TFLOP/s, median of do_bench)")
    print("%-16s %-18s %9s %9s %9s" % ("shape", "config", "tilec", "cublas", "ratio"))
    wrong = 0
    for n, configs in ((1024, MATMUL_SWEEP_SMALL), (2048, MATMUL_SWEEP_SMALL), (4096, MATMUL_SWEEP),
                       (8192, MATMUL_SWEEP)):
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        c = torch.empty(n, n, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a.float(), b.float())
        flops = 2.0 * n * n * n
        cublas = flops / median_ms(lambda: torch.matmul(a, b, out=c)) / 1e9
        for bm, bn, bk, nw, ns in configs:
            config = "%dx%dx%d w%d s%d" % (bm, bn, bk, nw, ns)
            try:
                k = tc.kernel("stdlib/matmul.tile", "matmul_f16", num_warps=nw, num_stages=ns, BLOCK_M=bm, BLOCK_N=bn,
                              BLOCK_K=bk, A_LAYOUT=1, B_LAYOUT=1, C_LAYOUT=1, EVEN=1)
                grid = triton.cdiv(n, bm) * triton.cdiv(n, bn)
                run = tc.launcher(k, grid, a, b, c, n, n, n, n, 1, n, 1, n, 1, 0, 0, 0, c)
                c.fill_(float("nan"))
                run()
                torch.cuda.synchronize()
            except Failed as e:
                print("%-16s %-18s FAILED: %s" % ("%d^3" % n, config, e))
                wrong += 1
                continue
            err = (c.float() - ref).abs().max().item()
            if not err <= 4e-3 * ref.abs().max().item():
                print("%-16s %-18s WRONG: off by %g" % ("%d^3" % n, config, err))
                wrong += 1
                continue
            t = flops / median_ms(run) / 1e9
            print("%-16s %-18s %9.0f %9.0f %9.3f" % ("%d^3" % n, config, t, cublas, t / cublas))
        del a, b, c, ref
    print()
    if wrong:
        raise Failed("%d matmul sweep rows failed or were wrong (in its table)" % wrong)


def sweep(tc):
    """tilec's row kernels over num_warps (and rows per program), to choose
    the defaults from measurements: a table of GB/s per configuration."""
    out = []
    rows = 4096
    x = torch.randn(rows, 16384, device="cuda")
    y = torch.empty_like(x)
    src = open(os.path.join(ROOT, "stdlib/softmax.tile")).read()
    divided = src.replace("e * (1.0 / sum(e))", "e / sum(e)")
    for variant, source in (("softmax f32 16384 (reciprocal)", None), ("softmax f32 16384 (divide)", divided)):
        for nw in (4, 8, 16, 32):
            k = tc.kernel("stdlib/softmax.tile", "softmax_f32", num_warps=nw, source=source, BLOCK=16384, ALIGN=8)
            out.append((variant, nw, "-", 8 * rows * 16384 / median_ms(tc.launcher(k, rows, x, y, 16384, 16384, 16384)) / 1e6))
    del x, y
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    h = torch.float16
    for cols in (1024, 4096, 8192):
        block = triton.next_power_of_2(cols)
        x = torch.randn(rows, cols, device="cuda", dtype=h)
        y, dx = torch.empty_like(x), torch.empty_like(x)
        w, b = torch.ones(cols, device="cuda", dtype=h), torch.zeros(cols, device="cuda", dtype=h)
        mean, rstd = torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda")
        for nw in (2, 4, 8, 16):
            for align in (8, 1):  # what tls_layernorm passes here, and no multiple_of promise
                kf = tc.kernel("stdlib/layernorm.tile", "layernorm_f16", num_warps=nw, BLOCK=block, ALIGN=align)
                ms = median_ms(tc.launcher(kf, rows, x, y, w, b, mean, rstd, cols, cols, 1e-5))
                out.append(("layernorm f16 %d (ALIGN %d)" % (cols, align), nw, "-", 4 * rows * cols / ms / 1e6))
        for nw in (2, 4, 8, 16):
            kb = tc.kernel("stdlib/layernorm.tile", "layernorm_bwd_f16", num_warps=nw, BLOCK=block, ALIGN=row_align(cols))
            for per in (triton.cdiv(rows, 4 * sms), triton.cdiv(rows, 2 * sms), triton.cdiv(rows, sms), 64):
                groups = triton.cdiv(rows, per)
                dwp = torch.empty(groups, cols, device="cuda")
                dbp = torch.empty(groups, cols, device="cuda")
                ms = median_ms(tc.launcher(kb, groups, x, x, dx, w, mean, rstd, dwp, dbp, rows, cols, cols, per))
                out.append(("layernorm bwd f16 %d (dx part)" % cols, nw, per, 6 * rows * cols / ms / 1e6))
        # the column sums alone, over the partial sums of 2 groups per SM
        groups = 2 * sms
        dwp, dbp = torch.randn(groups, cols, device="cuda"), torch.randn(groups, cols, device="cuda")
        dw, db = torch.empty_like(w), torch.empty_like(b)
        for bl, gr, nw in ((32, 64, 8), (32, 64, 4), (32, 32, 4), (32, 128, 8), (64, 64, 8), (64, 32, 8), (16, 64, 4)):
            ks = tc.kernel("stdlib/layernorm.tile", "layernorm_dwdb_f16", num_warps=nw, BLOCK=bl, GROUPS=gr,
                           ALIGN=row_align(cols))
            ms = median_ms(tc.launcher(ks, triton.cdiv(cols, bl), dwp, dbp, dw, db, groups, cols))
            out.append(("layernorm dwdb f16 %d (%dx%d)" % (cols, gr, bl), nw, groups, 8 * groups * cols / ms / 1e6))
        del x, y, dx, dwp, dbp
    print()
    print("== tilec sweep (tilec only; GB/s, median of do_bench, L2 flushed)")
    print("%-34s %9s %9s %9s" % ("kernel", "num_warps", "rows/prog", "GB/s"))
    for name, nw, per, gbs in out:
        print("%-34s %9d %9s %9.0f" % (name, nw, per, gbs))


def bench_elementwise(tc, quick, table):
    """add, scale and fill over 1-D f32 arrays, and torch's copy: the bandwidth ceiling of the run."""
    sizes = [1 << 24] if quick else [1 << 20, 1 << 24, 1 << 26]
    stdlib = "stdlib/elementwise.tile"
    k_add, k_scale, k_fill = (tc.kernel(stdlib, name) for name in ("add_f32", "scale_f32", "fill_f32"))
    for n in sizes:
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        grid = triton.cdiv(n, B)

        # copy: the bandwidth ceiling of this run (torch only)
        table.append(("copy (torch)", n, 8 * n, {"torch": median_ms(lambda: out.copy_(x))}))

        run = tc.launcher(k_add, grid, x, y, out, n)
        out.fill_(float("nan")); run(); torch.cuda.synchronize(); close(out, x + y, "add_f32")
        t = {"tilec": median_ms(run),
             "torch": median_ms(lambda: torch.add(x, y, out=out)),
             "triton": peer_ms(lambda: tt_add[(grid,)](x, y, out, n, BLOCK=B), "triton")}
        table.append(("add f32", n, 12 * n, t))

        z = x.clone()
        run = tc.launcher(k_scale, grid, z, -1.75, n)
        run(); torch.cuda.synchronize(); close(z, x * -1.75, "scale_f32")
        t = {"tilec": median_ms(run),
             "torch": median_ms(lambda: z.mul_(-1.0)),
             "triton": peer_ms(lambda: tt_scale[(grid,)](z, -1.0, n, BLOCK=B), "triton")}
        table.append(("scale f32 (in place)", n, 8 * n, t))

        run = tc.launcher(k_fill, grid, out, 3.25, n)
        out.fill_(float("nan")); run(); torch.cuda.synchronize(); close(out, torch.full_like(out, 3.25), "fill_f32")
        t = {"tilec": median_ms(run),
             "torch": median_ms(lambda: out.fill_(3.25)),
             "triton": peer_ms(lambda: tt_fill[(grid,)](out, 3.25, n, BLOCK=B), "triton")}
        table.append(("fill f32", n, 4 * n, t))
        del x, y, out, z



def bench_softmax(tc, quick, table):
    """softmax_f32 over rows."""
    # softmax over rows: one program per row, the row in one tile
    widths = [4096] if quick else [1024, 4096, 16384, 32768]
    for cols in widths:
        rows = 4096
        block = triton.next_power_of_2(cols)
        k = tc.kernel("stdlib/softmax.tile", "softmax_f32", BLOCK=block, ALIGN=row_align(cols))
        x = torch.randn(rows, cols, device="cuda")
        out = torch.full_like(x, float("nan"))
        run = tc.launcher(k, rows, x, out, cols, cols, cols)
        run(); torch.cuda.synchronize(); near(out, torch.softmax(x, dim=1), "softmax_f32 %dx%d" % (rows, cols))
        tw = tt_softmax_warps(block)
        t = {"tilec": median_ms(run),
             "torch": median_ms(lambda: torch.softmax(x, dim=1)),
             "triton": peer_ms(lambda: tt_softmax[(rows,)](x, out, cols, cols, cols, BLOCK=block, num_warps=tw), "triton")}
        table.append(("softmax f32 %dx%d" % (rows, cols), rows * cols, 2 * rows * cols * 4, t))
        del x, out



def bench_layernorm(tc, quick, table):
    """layernorm f16, forward and backward, through tls_layernorm*."""
    # layernorm fp16, forward and backward
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for cols in ([4096] if quick else [1024, 4096, 8192]):
        rows, eps, h = 4096, 1e-5, torch.float16
        block = triton.next_power_of_2(cols)
        x = torch.randn(rows, cols, device="cuda", dtype=h) + 1
        w = torch.rand(cols, device="cuda", dtype=h) + 0.5
        b = torch.randn(cols, device="cuda", dtype=h)
        dy = torch.randn(rows, cols, device="cuda", dtype=h) / 10
        y = torch.full_like(x, float("nan"))
        mean = torch.empty(rows, device="cuda")
        rstd = torch.empty(rows, device="cuda")
        per = triton.cdiv(rows, 2 * sms)
        groups = triton.cdiv(rows, per)
        dwp = torch.empty(groups, cols, device="cuda")
        dbp = torch.empty(groups, cols, device="cuda")
        dx = torch.full_like(x, float("nan"))
        dw = torch.empty_like(w)
        db = torch.empty_like(b)

        # tilec through its C entry points: what a user calls, with the
        # library's own choices (BLOCK, num_warps, rows per program)
        run_f = tc.entry("tls_layernorm", h, x, y, w, b, mean, rstd, rows, cols, cols, eps)
        run_bwd = tc.entry("tls_layernorm_bwd", h, x, dy, dx, w, mean, rstd, dw, db, rows, cols, cols,
                           tc.workspace("tls_layernorm_bwd_workspace", rows, cols))
        ry, rmean, rrstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, eps)
        run_f(); run_bwd(); torch.cuda.synchronize()
        near(y.float(), ry.float(), "layernorm_f16 %dx%d" % (rows, cols), rtol=1e-2, atol=1e-2)
        near(mean, rmean.flatten(), "layernorm mean", rtol=1e-4, atol=1e-4)
        near(rstd, rrstd.flatten(), "layernorm rstd", rtol=1e-4, atol=1e-4)
        rdx, rdw, rdb = torch.ops.aten.native_layer_norm_backward(dy, x, [cols], rmean, rrstd, w, b, [True, True, True])
        near(dx.float(), rdx.float(), "layernorm_bwd_f16 dx", rtol=2e-2, atol=2e-2)
        near(dw.float(), rdw.float(), "layernorm dw", rtol=2e-2, atol=5e-1)
        near(db.float(), rdb.float(), "layernorm db", rtol=2e-2, atol=5e-1)

        tw = min(max(block // 256, 1), 8)
        t = {"tilec": median_ms(run_f),
             "torch": median_ms(lambda: torch.ops.aten.native_layer_norm(x, [cols], w, b, eps)),
             "triton": peer_ms(lambda: tt_layernorm[(rows,)](x, y, w, b, mean, rstd, cols, cols, eps, BLOCK=block,
                                                            num_warps=tw), "triton")}
        table.append(("layernorm f16 %dx%d" % (rows, cols), rows * cols, 4 * rows * cols, t))

        def tt_bwd():
            tt_layernorm_bwd[(groups,)](x, dy, dx, w, mean, rstd, dwp, dbp, rows, cols, cols, per, BLOCK=block,
                                        num_warps=tw)
            tt_layernorm_dwdb[(triton.cdiv(cols, 256),)](dwp, dbp, dw, db, groups, cols, BLOCK=256)
        t = {"tilec": median_ms(run_bwd),
             "torch": median_ms(lambda: torch.ops.aten.native_layer_norm_backward(
                 dy, x, [cols], rmean, rrstd, w, b, [True, True, True])),
             "triton": peer_ms(tt_bwd, "triton")}
        table.append(("layernorm bwd f16 %dx%d" % (rows, cols), rows * cols, 6 * rows * cols, t))
        del x, y, dy, dx, dwp, dbp



def bench_rmsnorm(tc, quick, table):
    """rmsnorm f16, forward and backward, through tls_rmsnorm*."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    # rmsnorm fp16, forward and backward
    for cols in ([4096] if quick else [1024, 4096, 8192]):
        rows, eps, h = 4096, 1e-5, torch.float16
        block = triton.next_power_of_2(cols)
        x = torch.randn(rows, cols, device="cuda", dtype=h) + 1
        w = torch.rand(cols, device="cuda", dtype=h) + 0.5
        dy = torch.randn(rows, cols, device="cuda", dtype=h) / 10
        y = torch.full_like(x, float("nan"))
        rstd = torch.empty(rows, device="cuda")
        per = triton.cdiv(rows, 2 * sms)
        groups = triton.cdiv(rows, per)
        dwp = torch.empty(groups, cols, device="cuda")
        dx = torch.full_like(x, float("nan"))
        dw = torch.empty_like(w)

        run_f = tc.entry("tls_rmsnorm", h, x, y, w, rstd, rows, cols, cols, eps)
        run_bwd = tc.entry("tls_rmsnorm_bwd", h, x, dy, dx, w, rstd, dw, rows, cols, cols,
                           tc.workspace("tls_rmsnorm_bwd_workspace", rows, cols))
        run_f(); run_bwd(); torch.cuda.synchronize()
        # the reference in f32 from the same f16 inputs, its gradients by autograd
        xr = x.float().requires_grad_()
        wr = w.float().requires_grad_()
        ry = torch_rms_norm(xr, wr, eps)
        ry.backward(dy.float())
        near(y.float(), ry.detach(), "rmsnorm_f16 %dx%d" % (rows, cols), rtol=1e-2, atol=1e-2)
        near(rstd, torch.rsqrt(x.float().pow(2).mean(-1) + eps), "rmsnorm rstd", rtol=1e-4, atol=1e-4)
        near(dx.float(), xr.grad, "rmsnorm_bwd_f16 dx", rtol=2e-2, atol=2e-2)
        near(dw.float(), wr.grad, "rmsnorm dw", rtol=2e-2, atol=5e-1)
        del xr, wr, ry

        tw = min(max(block // 256, 1), 8)
        t = {"tilec": median_ms(run_f),
             "torch": median_ms(lambda: torch_rms_norm(x, w, eps)),
             "triton": peer_ms(lambda: tt_rmsnorm[(rows,)](x, y, w, rstd, cols, cols, eps, BLOCK=block,
                                                          num_warps=tw), "triton")}
        table.append(("rmsnorm f16 %dx%d" % (rows, cols), rows * cols, 4 * rows * cols, t))

        # torch's backward: autograd through its forward, recorded once
        xg = x.detach().requires_grad_()
        wg = w.detach().requires_grad_()
        yg = torch_rms_norm(xg, wg, eps)

        def tt_bwd():
            tt_rmsnorm_bwd[(groups,)](x, dy, dx, w, rstd, dwp, rows, cols, cols, per, BLOCK=block, num_warps=tw)
            tt_rmsnorm_dw[(triton.cdiv(cols, 256),)](dwp, dw, groups, cols, BLOCK=256)
        t = {"tilec": median_ms(run_bwd),
             "torch": median_ms(lambda: torch.autograd.grad(yg, (xg, wg), dy, retain_graph=True)),
             "triton": peer_ms(tt_bwd, "triton")}
        table.append(("rmsnorm bwd f16 %dx%d" % (rows, cols), rows * cols, 6 * rows * cols, t))
        del x, y, dy, dx, dwp, xg, wg, yg



def bench_gelu(tc, quick, table):
    """gelu (tanh form) f16 and f32, forward and backward."""
    # GELU (tanh form), forward and backward, elementwise
    for n in ([1 << 24] if quick else [1 << 24, 1 << 26]):
        for dt, name, tol in ((torch.float16, "f16", 1e-2), (torch.float32, "f32", 1e-4)):
            size = torch.finfo(dt).bits // 8
            grid = triton.cdiv(n, B)
            kf = tc.kernel("stdlib/gelu.tile", "gelu_" + name)
            kb = tc.kernel("stdlib/gelu.tile", "gelu_bwd_" + name)
            x = torch.randn(n, device="cuda", dtype=dt) * 3
            dy = torch.randn(n, device="cuda", dtype=dt)
            y = torch.full_like(x, float("nan"))
            dx = torch.full_like(x, float("nan"))
            run_f = tc.launcher(kf, grid, x, y, n)
            run_b = tc.launcher(kb, grid, x, dy, dx, n)
            run_f(); run_b(); torch.cuda.synchronize()
            near(y.float(), torch.nn.functional.gelu(x.float(), approximate="tanh"), "gelu_%s %d" % (name, n),
                 rtol=tol, atol=tol / 10)
            near(dx.float(), torch.ops.aten.gelu_backward(dy.float(), x.float(), approximate="tanh"),
                 "gelu_bwd_%s %d" % (name, n), rtol=tol, atol=tol / 10)
            t = {"tilec": median_ms(run_f),
                 "torch": median_ms(lambda: torch.nn.functional.gelu(x, approximate="tanh")),
                 "triton": peer_ms(lambda: tt_gelu[(grid,)](x, y, n, BLOCK=B), "triton")}
            table.append(("gelu %s" % name, n, 2 * size * n, t))
            t = {"tilec": median_ms(run_b),
                 "torch": median_ms(lambda: torch.ops.aten.gelu_backward(dy, x, approximate="tanh")),
                 "triton": peer_ms(lambda: tt_gelu_bwd[(grid,)](x, dy, dx, n, BLOCK=B), "triton")}
            table.append(("gelu bwd %s" % name, n, 3 * size * n, t))
            del x, dy, y, dx



def bench_dropout(tc, quick, table):
    """dropout f16 and f32."""
    # dropout, elementwise; the mask from (seed, offset), as Triton's
    for n in ([1 << 24] if quick else [1 << 24, 1 << 26]):
        for dt, name in ((torch.float16, "f16"), (torch.float32, "f32")):
            size = torch.finfo(dt).bits // 8
            grid = triton.cdiv(n, B)
            p, seed = 0.25, 1234
            k = tc.kernel("stdlib/dropout.tile", "dropout_" + name)
            x = torch.randn(n, device="cuda", dtype=dt)
            y = torch.full_like(x, float("nan"))
            run = tc.launcher(k, grid, x, y, n, p, seed)
            run(); torch.cuda.synchronize()
            kept = y != 0  # randn gives no exact zeros worth counting at this size
            frac = kept.float().mean().item()
            sd = (p * (1 - p) / n) ** 0.5
            if abs(frac - (1 - p)) > 5 * sd:
                raise Failed("WRONG: dropout_%s kept %.6f of %d, expected %.2f" % (name, frac, n, 1 - p))
            # f16: x / (1 - p) rounded to f16, whose subnormals (below
            # 2^-14, about 800 of randn's 2^24 values) are 2^-24 apart: that
            # absolute error there, not a relative one (the H200's run on
            # 2026-11-29 failed a relative-only check at 3 such elements)
            near(y[kept].float(), x[kept].float() / (1 - p), "dropout_%s %d" % (name, n),
                 rtol=1e-5 if name == "f32" else 1e-3, atol=0 if name == "f32" else 2.0 ** -24)
            t = {"tilec": median_ms(run),
                 "torch": median_ms(lambda: torch.nn.functional.dropout(x, p, training=True)),
                 "triton": peer_ms(lambda: tt_dropout[(grid,)](x, y, n, p, seed, BLOCK=B), "triton")}
            table.append(("dropout %s p=%g" % (name, p), n, 2 * size * n, t))
            del x, y



# flash attention's shapes: (B, H, N, D, causal, dtype); the default run
# times the bar's (D 128, N 4096) and one small shape (each shape costs
# about 20 s, most of it compiling the peers), --sweep the grid
ATTENTION_QUICK = [(4, 16, 4096, 128, False, torch.float16)]
ATTENTION_DEFAULT = [(4, 16, 4096, 128, c, dt) for c in (False, True) for dt in (torch.float16, torch.bfloat16)] + \
                    [(4, 16, 1024, 64, False, torch.float16)]
ATTENTION_GRID = [(4, 16, N, D, c, dt) for N in (1024, 4096, 16384) for D in (64, 128)
                  for c in (False, True) for dt in (torch.float16, torch.bfloat16)]
ATTENTION_PEERS = ("flash", "cudnn", "triton")


def attention_peers(q, k, v, do, causal):
    """{peer: (forward fn, backward fn, (o, dq, dk, dv) of one run) or the
    reason it cannot run}: torch's SDPA with the FlashAttention-2 and
    cuDNN backends (the backward through autograd, which runs the
    backend's own backward kernel), and bench/tt_flash.py in Triton."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    import tt_flash
    out = {}
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
            with sdpa_kernel(backend):
                o = sdpa(qg, kg, vg, is_causal=causal)

            def fwd(backend=backend):
                with sdpa_kernel(backend):
                    sdpa(q, k, v, is_causal=causal)

            def bwd(o=o, leaves=(qg, kg, vg)):
                return torch.autograd.grad(o, leaves, do, retain_graph=True)
            out[name] = (fwd, bwd, (o.detach(),) + bwd())
        except Exception as e:  # noqa: BLE001 - a backend this torch or GPU lacks
            out[name] = str(e).splitlines()[0] if str(e) else type(e).__name__
    try:
        B, H, N, D = q.shape
        scale = D ** -0.5
        o, dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(4))
        lse2, delta = (torch.empty(B, H, N, device="cuda") for _ in range(2))

        def fwd():
            tt_flash.fwd(q, k, v, causal, scale, o, lse2)  # the first call autotunes

        def bwd():
            tt_flash.bwd(q, k, v, o, do, lse2, causal, scale, dq, dk, dv, delta)
        fwd(); bwd()
        out["triton"] = (fwd, bwd, (o, dq, dk, dv))
    except Exception as e:  # noqa: BLE001
        out["triton"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    return out


def attention_error(got, ref, rel, what):
    """None, or why got (o, dq, dk, dv) is not within rel of the largest
    |ref| element of each."""
    for name, g, r in zip(("o", "dq", "dk", "dv"), got, ref):
        scale = r.float().abs().max().item()
        err = (g.float() - r.float()).abs().max().item()
        if not err <= rel * scale:  # NaN too
            return "WRONG: %s %s differs from the reference by %g (largest |%s| %g)" % (what, name, err, name, scale)
    return None


def bench_attention(tc, shapes, rows, failed):
    """Flash attention forward and backward: tilec's C entry points
    (tls_attention_fwd, tls_attention_bwd, with the library's configuration
    table) against SDPA's flash and cuDNN backends and Triton
    (bench/tt_flash.py), on the same contiguous [B, H, N, D] tensors. Each
    result is checked first against SDPA's flash backend (cuDNN's where
    flash cannot run): within 1% (f16) or 3% (bf16) of the largest |value|
    of o, dq, dk, dv; a wrong peer is left out of the table and said."""
    for B, H, N, D, causal, dt in shapes:
        what = "%s %s%dx%dx%dx%d" % ("f16" if dt == torch.float16 else "bf16", "causal " if causal else "", B, H, N, D)
        rel = 1e-2 if dt == torch.float16 else 3e-2
        q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=dt) for _ in range(4))
        o, dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(4))
        lse = torch.full((B, H, N), float("nan"), device="cuda")
        peers = attention_peers(q, k, v, do, causal)
        ref = next((peers[p][2] for p in ("flash", "cudnn") if isinstance(peers[p], tuple)), None)
        try:
            fwd = tc.attention(q, k, v, o, lse, causal)
            bwd = tc.attention(q, k, v, o, lse, causal, grads=(do, dq, dk, dv))
            fwd(); bwd(); torch.cuda.synchronize()
            if ref is None:
                raise Failed("no SDPA backend ran to check against: %s" % peers["flash"])
            why = attention_error((o, dq, dk, dv), ref, rel, "tilec")
            if why:
                raise Failed(why)
        except Failed as e:
            print("FAILED: attention %s: %s" % (what, e), file=sys.stderr)
            failed.append(("attention " + what, str(e)))
            continue
        t = {"tilec": (median_ms(fwd), median_ms(bwd))}
        for name in ATTENTION_PEERS:
            peer = peers[name]
            why = attention_error(peer[2], ref, rel, name) if isinstance(peer, tuple) else peer
            if why:
                print("peer left out: attention %s %s: %s" % (what, name, why), file=sys.stderr)
                continue
            t[name] = (peer_ms(peer[0], name + " forward"), peer_ms(peer[1], name + " backward"))
        rows.append((what, (B, H, N, D), causal, t))
        del q, k, v, do, o, dq, dk, dv, lse, peers, ref
        torch.cuda.empty_cache()


def bench_search(tc, quick, rows):
    """tls_options.search on the GPU (docs/tuning.md, "Searching from a
    call"): a tls_matmul (f16, square) and a tls_attention_fwd (f16, head
    dim 128, not causal) each search their configurations once from the
    call (the tuner times every candidate with the L2 flushed: its GPU
    measure, issue 23 item 3), then the same call is timed with the
    table's configuration and with the winner (trt_use_tuning). Every
    result is checked against torch first (matmul within 4e-3, attention
    within 1e-2 of the largest |value|). Appends (op, table ms, searched ms,
    the entry taken) to rows; a failure raises Failed (guarded: it costs
    this section only)."""
    t = tc.tuning()
    try:
        n = 2048 if quick else 4096
        a, b = (torch.randn(n, n, device="cuda", dtype=torch.float16) for _ in range(2))
        c = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)
        ref = torch.matmul(a.float(), b.float())

        def check_mm(what):
            torch.cuda.synchronize()
            err = (c.float() - ref).abs().max().item()
            if not err <= 4e-3 * ref.abs().max().item():
                raise Failed("WRONG: %s differs from torch by %g" % (what, err))

        table = tc.matmul(a, b, c)  # runs it once
        check_mm("tls_matmul")
        ms_table = median_ms(table)
        c.fill_(float("nan"))
        tc.matmul(a, b, c, search=t)  # the search, once
        check_mm("tls_matmul searching")
        tc.use_tuning(t)
        try:
            c.fill_(float("nan"))
            tuned = tc.matmul(a, b, c)
            check_mm("tls_matmul tuned")
            used = tc.lib.trt_tuning_last_used(t).decode()
            ms_tuned = median_ms(tuned)
        finally:
            tc.use_tuning(None)
        rows.append(("matmul f16 %dx%dx%d" % (n, n, n), ms_table, ms_tuned, used))
        del a, b, c, ref

        B, H, N, D = (1, 16, 2048, 128) if quick else (4, 16, 4096, 128)
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        lse = torch.full((B, H, N), float("nan"), device="cuda")
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)

        def check_att(what):
            torch.cuda.synchronize()
            err = (o.float() - ref.float()).abs().max().item()
            if not err <= 1e-2 * ref.float().abs().max().item():
                raise Failed("WRONG: %s o differs from SDPA by %g" % (what, err))

        fwd = tc.attention(q, k, v, o, lse, False)
        fwd()
        check_att("tls_attention_fwd")
        ms_table = median_ms(fwd)
        o.fill_(float("nan"))
        tc.attention(q, k, v, o, lse, False, search=t)()  # the search, once
        check_att("tls_attention_fwd searching")
        tc.use_tuning(t)
        try:
            o.fill_(float("nan"))
            tuned = tc.attention(q, k, v, o, lse, False)
            tuned()
            check_att("tls_attention_fwd tuned")
            used = tc.lib.trt_tuning_last_used(t).decode()
            ms_tuned = median_ms(tuned)
        finally:
            tc.use_tuning(None)
        rows.append(("attention fwd f16 %dx%dx%dx%d" % (B, H, N, D), ms_table, ms_tuned, used))
    finally:
        tc.lib.trt_tuning_free(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(ROOT, "build-gpu", "libtilec.so"))
    ap.add_argument("--quick", action="store_true", help="one size, fewer runs")
    ap.add_argument("--sweep", action="store_true", help="also time tilec's row kernels over num_warps")
    opt = ap.parse_args()
    tc = Tilec(opt.lib)
    torch.manual_seed(0)
    failed = []  # (what, why): a failure costs its own rows, not the run's

    def guarded(what, fn, *args):
        # each section's rows as they come, raw (ms), in the log: a kernel
        # that hangs is killed at the budget's end with the tables unprinted
        lists = [a for a in args if isinstance(a, list) and a is not failed]
        before = [len(rows) for rows in lists]
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - Failed, or torch / CUDA errors
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            print("FAILED: %s: %s" % (what, why), file=sys.stderr)
            failed.append((what, why))
        finally:
            for rows, n in zip(lists, before):
                for r in rows[n:]:
                    print("row %s: %r" % (what, r), flush=True)

    def out_of_time(signum, frame):
        raise OutOfTime()
    signal.signal(signal.SIGTERM, out_of_time)

    # kernels new to the GPU go last: a kernel that faults leaves the CUDA
    # context unusable for everything after it
    table = []  # (op, elements or rows, bytes moved, {impl: ms})
    mm_rows = []  # matrix products (TFLOP/s, a table of their own)
    att_rows = []  # attention (TFLOP/s, a table of their own)
    search_rows = []  # tls_options.search: (op, table ms, searched ms, entry)
    try:
        for section in (bench_elementwise, bench_softmax, bench_layernorm, bench_rmsnorm, bench_gelu, bench_dropout):
            guarded(section.__name__, section, tc, opt.quick, table)
        guarded("matmul_bench", matmul_bench, tc, opt.quick, mm_rows, failed)
        shapes = ATTENTION_QUICK if opt.quick else ATTENTION_GRID if opt.sweep else ATTENTION_DEFAULT
        guarded("bench_attention", bench_attention, tc, shapes, att_rows, failed)
        guarded("bench_search", bench_search, tc, opt.quick, search_rows)
        if opt.sweep:
            guarded("sweep", sweep, tc)
            guarded("matmul_sweep", matmul_sweep, tc)
    except OutOfTime:
        failed.append(("(the rest)", "out of time: SIGTERM; rows not in the tables were not timed"))
    gpu = torch.cuda.get_device_name()
    print()
    print("== tilec GPU bench: %s, %s; GB/s (median of do_bench, L2 flushed)" % (gpu, tc.name))
    print("%-27s %10s %9s %9s %9s %10s %10s" % ("op", "elements", "tilec", "torch", "triton", "best peer", "tilec/best"))
    for op, n, nbytes, t in table:
        gbs = {k: nbytes / (ms * 1e-3) / 1e9 for k, ms in t.items() if ms}
        peers = {k: v for k, v in gbs.items() if k != "tilec"}
        best = max(peers, key=peers.get)
        cells = ["%9.0f" % gbs[k] if k in gbs else "%9s" % "-" for k in ("tilec", "torch", "triton")]
        ratio = "%10.3f" % (gbs["tilec"] / peers[best]) if "tilec" in gbs else "%10s" % "-"
        print("%-27s %10d %s %10s %s" % (op, n, " ".join(cells), best, ratio))

    print()
    print("== tilec matmul: TFLOP/s (2 M N K flops; median of do_bench, L2 flushed); triton: the tutorial kernel at %s"
          % ", ".join("%s=%s" % kv for kv in TT_MATMUL_CONFIG.items()))
    print("%-12s %20s %9s %9s %9s %12s" % ("op", "M x N x K", "tilec", "cublas", "triton", "tilec/cublas"))
    for op, (M, N, K), t in mm_rows:
        tf = {k: 2 * M * N * K / (ms * 1e-3) / 1e12 for k, ms in t.items() if ms}
        cells = ["%9.1f" % tf[k] if k in tf else "%9s" % "-" for k in ("tilec", "cublas", "triton")]
        ratio = "%12.3f" % (tf["tilec"] / tf["cublas"])  # a failed tilec shape is in `failed`, not here
        print("%-12s %20s %s %s" % (op, "%dx%dx%d" % (M, N, K), " ".join(cells), ratio))
    print()
    for pas, i, times in (("forward", 0, 1), ("backward", 1, 2.5)):
        print("== tilec attention %s: TFLOP/s (%s4 B H N^2 D flops, half that causal; median of do_bench, "
              "L2 flushed); flash, cudnn: torch SDPA's backends; triton: bench/tt_flash.py"
              % (pas, "2.5 x " if times != 1 else ""))
        print("%-32s %8s %8s %8s %8s %12s %11s" % ("op", "tilec", "flash", "cudnn", "triton", "tilec/flash",
                                                    "tilec/best"))
        for op, (B, H, N, D), causal, t in att_rows:
            flops = times * 4 * B * H * N * N * D / (2 if causal else 1)
            tf = {k: flops / (ms[i] * 1e-3) / 1e12 for k, ms in t.items() if ms[i]}
            cells = ["%8.1f" % tf[k] if k in tf else "%8s" % "-" for k in ("tilec",) + ATTENTION_PEERS]
            best = max((tf[k] for k in ATTENTION_PEERS if k in tf), default=None)
            r_flash = "%12.3f" % (tf["tilec"] / tf["flash"]) if "flash" in tf else "%12s" % "-"
            r_best = "%11.3f" % (tf["tilec"] / best) if best else "%11s" % "-"
            print("%-32s %s %s %s" % (op, " ".join(cells), r_flash, r_best))
        print()
    print("== tilec search from the call (tls_options.search): the call at its table's configuration and at the "
          "searched one; ms, median of do_bench, L2 flushed")
    print("%-32s %10s %10s %15s  %s" % ("op", "table", "searched", "table/searched", "entry taken"))
    for op, ms_table, ms_tuned, used in search_rows:
        print("%-32s %10.3f %10.3f %15.3f  %s" % (op, ms_table, ms_tuned, ms_table / ms_tuned, used))
    if failed:
        print()
        print("== FAILED (not in the tables above): %d" % len(failed))
        for what, why in failed:
            print("%-27s %s" % (what, why))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
