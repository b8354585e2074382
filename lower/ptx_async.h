/* ptx_async.h - the inline-asm contract between codegen and the emulator for
 * Hopper's asynchronous copies: mbarriers, bulk and bulk tensor copies (TMA),
 * their fences. Codegen emits these strings with these LLVM constraint
 * strings, verbatim; emu/async.c recognizes exactly them (emu/ may include
 * lower/ headers; this header includes nothing). PTX ISA 8.x sections (by
 * name): "mbarrier"; "cp.async.bulk", "cp.async.bulk.tensor",
 * "cp.async.bulk.commit_group", "cp.async.bulk.wait_group"; "Tensors"
 * (tensor maps, tile mode); "membar/fence" (fence.proxy.async,
 * fence.mbarrier_init).
 *
 * Operands: "l" registers. A shared-memory operand is a `ptr addrspace(3)`
 * value (64-bit in tilec's data layout; a shared::cta address is also the
 * CTA's own shared::cluster address); a tensor map is a `ptr addrspace(1)`
 * or generic `ptr` to the 128-byte, 64-byte-aligned map in global memory
 * (the runtime puts it there at launch); a global source is `ptr
 * addrspace(1)` or generic. "r" operands are i32: arrival and tx counts,
 * tensor coordinates (signed, innermost dimension first), the phase parity
 * (0 or 1). try_wait/test_wait return an i32 that is 1 when the phase of
 * that parity has completed. wait_group.read takes its count as an
 * immediate ("n").
 *
 * Each row: X(name, PTX text, constraints). */
#ifndef TILEC_PTX_ASYNC_H
#define TILEC_PTX_ASYNC_H

/* the tensor copies' text, by rank and coordinate operands */
#define PTX_TENSOR_G2S(d, coords) \
    "cp.async.bulk.tensor." #d "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {" coords "}], [$2];"
#define PTX_TENSOR_S2G(d, coords) "cp.async.bulk.tensor." #d "d.global.shared::cta.tile.bulk_group [$0, {" coords "}], [$1];"

#define PTX_ASYNC_ASMS(X)                                                                                         \
    /* $0 mbarrier, $1 expected arrival count */                                                                 \
    X(MBAR_INIT, "mbarrier.init.shared::cta.b64 [$0], $1;", "l,r,~{memory}")                                     \
    /* $0 mbarrier */                                                                                            \
    X(MBAR_INVAL, "mbarrier.inval.shared::cta.b64 [$0];", "l,~{memory}")                                         \
    /* $0 mbarrier: one arrival (release, cta) */                                                                \
    X(MBAR_ARRIVE, "mbarrier.arrive.shared::cta.b64 _, [$0];", "l,~{memory}")                                    \
    /* $0 mbarrier, $1 tx bytes: expect_tx then one arrival */                                                   \
    X(MBAR_ARRIVE_EXPECT_TX, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "l,r,~{memory}")          \
    /* $0 mbarrier, $1 tx bytes */                                                                               \
    X(MBAR_EXPECT_TX, "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", "l,r,~{memory}")              \
    /* result: 1 when the phase of parity $2 of mbarrier $1 completed */                                         \
    X(MBAR_TRY_WAIT_PARITY,                                                                                      \
      "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.b32 $0, 1, 0, p; }",          \
      "=r,l,r,~{memory}")                                                                                        \
    X(MBAR_TEST_WAIT_PARITY,                                                                                     \
      "{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [$1], $2; selp.b32 $0, 1, 0, p; }",         \
      "=r,l,r,~{memory}")                                                                                        \
    /* $0 shared destination, $1 global source, $2 bytes, $3 mbarrier */                                         \
    X(BULK_G2S, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",     \
      "l,l,r,l,~{memory}")                                                                                       \
    /* $0 shared destination, $1 tensor map, $2 mbarrier, $3.. coordinates */                                   \
    X(TENSOR_G2S_1D, PTX_TENSOR_G2S(1, "$3"), "l,l,l,r,~{memory}")                                               \
    X(TENSOR_G2S_2D, PTX_TENSOR_G2S(2, "$3, $4"), "l,l,l,r,r,~{memory}")                                         \
    X(TENSOR_G2S_3D, PTX_TENSOR_G2S(3, "$3, $4, $5"), "l,l,l,r,r,r,~{memory}")                                   \
    X(TENSOR_G2S_4D, PTX_TENSOR_G2S(4, "$3, $4, $5, $6"), "l,l,l,r,r,r,r,~{memory}")                             \
    X(TENSOR_G2S_5D, PTX_TENSOR_G2S(5, "$3, $4, $5, $6, $7"), "l,l,l,r,r,r,r,r,~{memory}")                       \
    /* $0 tensor map, $1 shared source, $2.. coordinates; in the open bulk group */                             \
    X(TENSOR_S2G_1D, PTX_TENSOR_S2G(1, "$2"), "l,l,r,~{memory}")                                                 \
    X(TENSOR_S2G_2D, PTX_TENSOR_S2G(2, "$2, $3"), "l,l,r,r,~{memory}")                                           \
    X(TENSOR_S2G_3D, PTX_TENSOR_S2G(3, "$2, $3, $4"), "l,l,r,r,r,~{memory}")                                     \
    X(TENSOR_S2G_4D, PTX_TENSOR_S2G(4, "$2, $3, $4, $5"), "l,l,r,r,r,r,~{memory}")                               \
    X(TENSOR_S2G_5D, PTX_TENSOR_S2G(5, "$2, $3, $4, $5, $6"), "l,l,r,r,r,r,r,~{memory}")                         \
    X(BULK_COMMIT, "cp.async.bulk.commit_group;", "~{memory}")                                                   \
    /* $0 immediate N: wait until at most N bulk groups still read their sources */                             \
    X(BULK_WAIT_READ, "cp.async.bulk.wait_group.read $0;", "n,~{memory}")                                        \
    X(FENCE_PROXY_ASYNC, "fence.proxy.async.shared::cta;", "~{memory}")                                          \
    /* result: 1 in the one lane elect.sync elects among the whole warp (a warp collective: every lane */       \
    /* runs it), else 0; ptxas then knows one lane issues what it guards (no ELECT loop around UTMALDG) */      \
    X(ELECT_SYNC, "{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.b32 $0, 1, 0, p; }", "=r,~{memory}")        \
    X(FENCE_MBAR_INIT, "fence.mbarrier_init.release.cluster;", "~{memory}")

typedef enum ptx_async_asm {
#define PTX_ASYNC_ENUM(name, text, cons) PTX_ASYNC_##name,
    PTX_ASYNC_ASMS(PTX_ASYNC_ENUM)
#undef PTX_ASYNC_ENUM
    PTX_ASYNC_COUNT
} ptx_async_asm;

#endif
