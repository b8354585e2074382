/* abi_layout.c - prints, for tests/bench/abi_check.py, the C side of what
 * bench/gpu_bench.py declares over ctypes: each struct's size and field
 * offsets, and the enum values it hard-codes. One line per struct or enum:
 *   struct NAME SIZE FIELD=OFFSET:SIZE ...
 *   enum NAME VALUE */
#include <stddef.h>
#include <stdio.h>

#include "tilec_rt.h"
#include "tilec_stdlib.h"

#define FIELD(T, f) printf(" %s=%zu:%zu", #f, offsetof(T, f), sizeof(((T *)0)->f))

int main(void) {
    printf("struct trt_arg %zu", sizeof(trt_arg));
    FIELD(trt_arg, kind), FIELD(trt_arg, buffer), FIELD(trt_arg, offset), FIELD(trt_arg, i), FIELD(trt_arg, f);
    printf("\nstruct tilec_define %zu", sizeof(tilec_define));
    FIELD(tilec_define, name), FIELD(tilec_define, value);
    printf("\nstruct trt_compile_options %zu", sizeof(trt_compile_options));
    FIELD(trt_compile_options, arch), FIELD(trt_compile_options, num_warps), FIELD(trt_compile_options, defines);
    FIELD(trt_compile_options, ndefines), FIELD(trt_compile_options, no_asserts);
    FIELD(trt_compile_options, num_stages), FIELD(trt_compile_options, exp2_ftz);
    FIELD(trt_compile_options, warp_specialize), FIELD(trt_compile_options, kernel);
    printf("\nstruct tls_mem %zu", sizeof(tls_mem));
    FIELD(tls_mem, buffer), FIELD(tls_mem, offset);
    printf("\nstruct tls_attention_problem %zu", sizeof(tls_attention_problem));
    FIELD(tls_attention_problem, batch), FIELD(tls_attention_problem, heads);
    FIELD(tls_attention_problem, kv_heads), FIELD(tls_attention_problem, n_q), FIELD(tls_attention_problem, n_kv);
    FIELD(tls_attention_problem, head_dim), FIELD(tls_attention_problem, scale);
    FIELD(tls_attention_problem, causal), FIELD(tls_attention_problem, window);
    FIELD(tls_attention_problem, window_left), FIELD(tls_attention_problem, window_right);
    FIELD(tls_attention_problem, cu_q), FIELD(tls_attention_problem, cu_k);
    FIELD(tls_attention_problem, total_q), FIELD(tls_attention_problem, total_kv);
    printf("\nstruct tls_options %zu", sizeof(tls_options));
    FIELD(tls_options, num_warps), FIELD(tls_options, stream), FIELD(tls_options, precision), FIELD(tls_options, search);
    printf("\nstruct tls_attention_tensor %zu", sizeof(tls_attention_tensor));
    FIELD(tls_attention_tensor, mem), FIELD(tls_attention_tensor, stride_batch);
    FIELD(tls_attention_tensor, stride_head), FIELD(tls_attention_tensor, stride_row);
    printf("\n");
    printf("enum TRT_DEVICE_CUDA %d\n", (int)TRT_DEVICE_CUDA);
    printf("enum TRT_ARG_BUFFER %d\nenum TRT_ARG_INT %d\nenum TRT_ARG_FLOAT %d\n", (int)TRT_ARG_BUFFER,
           (int)TRT_ARG_INT, (int)TRT_ARG_FLOAT);
    printf("enum TLS_F32 %d\nenum TLS_F16 %d\nenum TLS_BF16 %d\n", (int)TLS_F32, (int)TLS_F16, (int)TLS_BF16);
    return 0;
}
