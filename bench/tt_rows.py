"""tt_rows.py - vadd, softmax and layernorm (forward) as Triton's tutorials
write them: the peers of samples/vadd.tile, stdlib/softmax.tile and
stdlib/layernorm.tile that bench/compile_vs_triton.py compiles.

tt_vadd is tutorial 01's add_kernel (BLOCK_SIZE 1024, 4 warps). tt_softmax
is tutorial 02's one-program-per-row kernel (the row in one BLOCK_SIZE
tile, masked columns loaded as -inf), the math in f32 as
stdlib/softmax.tile does it. tt_layernorm is tutorial 05's
_layer_norm_fwd_fused with its three column loops collapsed to the one
trip they make when the row fits in BLOCK_SIZE (N <= BLOCK_SIZE, as the
tutorial picks it up to 64 KB): the row is loaded once, as
stdlib/layernorm.tile loads it. Needs Triton (pip; not a dependency of the
project).
"""
import triton
import triton.language as tl


@triton.jit
def tt_vadd(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def tt_softmax(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float("inf")).to(tl.float32)
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    output_ptrs = output_row_start_ptr + col_offsets
    tl.store(output_ptrs, softmax_output.to(output_ptr.dtype.element_ty), mask=col_offsets < n_cols)


@triton.jit
def tt_layernorm(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xm = tl.where(mask, x - mean, 0.)
    var = tl.sum(xm * xm, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    x_hat = (x - mean) * rstd
    y = x_hat * w + b
    tl.store(Y + cols, y, mask=mask)
