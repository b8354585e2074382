#!/usr/bin/env python3
"""sass_hopper.py - the Hopper matmul main loop, counted offline (issue 22).

Compiles, for sm_90 without a GPU, Triton's matmul two ways: the tutorial's
(bench/tt_matmul.py: pointer loads, which Triton 3.9 turns into cp.async
copies feeding wgmma) and with tensor descriptors (bench/tt_matmul_tma.py:
bulk tensor copies, TMA, completing on mbarriers, feeding wgmma); and
tilec's stdlib/matmul.tile for --arch=sm_90 (mma.sync) and --arch=sm_90a
(wgmma, lower/cg_dot_wgmma.c), at tilec's configuration and Triton's, with
warp specialization off (one role: every warp waits, computes and issues)
and on (lower/warp_specialize.c: the consumers' loop, and the producer
warp's, the loop with the bulk copies). Each cubin is
disassembled with cuobjdump -sass and the instructions of its main loop
counted (the loop with the most tensor-core instructions, from the target
of its back-edge branch to the branch): HGMMA (wgmma), HMMA (mma.sync),
UTMALDG (bulk tensor loads), LDGSTS (cp.async), LDSM (ldmatrix), SYNCS
(mbarrier arrive, wait and expect-tx), BAR, WARPGROUP (wgmma's fences,
arrive and wait), and the rest; the total; the total per 128x128x16 of
multiply-adds (the loop's BLOCK_M x BLOCK_N x BLOCK_K scaled: how many issue
slots a unit of tensor work costs); registers a thread and shared memory
(cuobjdump -res-usage, and Triton's metadata or tilec's sidecar).

Triton is not a dependency of the project: install it, with cuobjdump, in a
throwaway environment:

  python3 -m venv /tmp/sassenv
  /tmp/sassenv/bin/pip install triton nvidia-cuda-cuobjdump
  /tmp/sassenv/bin/python bench/sass_hopper.py --tilec build/tilec

Nothing here runs on a GPU: these are instruction counts, not timings.
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns without it; its default
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_loop import count_kinds, count_range, find_tool, parse_sass, sass_of  # noqa: E402  (the same disassembly and counting)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("hgmma", "hmma", "utmaldg", "ldgsts", "ldsm", "syncs", "bar", "warpgroup", "other")
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): Triton's Hopper matmul configurations
CONFIGS = ((128, 256, 64, 8, 3), (128, 128, 64, 4, 4))
# tilec's stdlib configuration for large f16/bf16 products (runtime/stdlib.c's tables): sm_80 and sm_90's,
# and sm_90a's (matmul_wgmma_configs) for calls that are not whole tiles of 128 x 256 x 64; whole tiles of
# row- or column-major operands take its first row, Triton's first configuration above
TILEC_CONFIG = (128, 128, 32, 4, 4)
TILEC_WGMMA_CONFIG = (128, 128, 64, 8, 4)


def classify(op):
    for prefix, kind in (("HGMMA", "hgmma"), ("HMMA", "hmma"), ("UTMALDG", "utmaldg"), ("LDGSTS", "ldgsts"),
                         ("LDSM", "ldsm"), ("SYNCS", "syncs"), ("BAR", "bar"), ("WARPGROUP", "warpgroup")):
        if op.startswith(prefix):
            return kind
    return "other"


def count(cuobjdump, cubin):
    return count_kinds(sass_of(cuobjdump, cubin), KINDS, classify, tensor=("HMMA", "HGMMA"))


def producer_loop(sass_text):
    """{kind: count} over the shortest loop holding bulk tensor loads (UTMALDG) and no wgmma: the producer warp's
    (a back edge's range may span blocks laid out between, so the longest would count the consumers' too)."""
    insns = [x for x in parse_sass(sass_text) if x[1] != "NOP"]
    index = {addr: i for i, (addr, _, _) in enumerate(insns)}
    best = None
    for i, (addr, op, args) in enumerate(insns):
        m = re.search(r"0x([0-9a-f]+)", args) if op.startswith("BRA") else None
        if not m or int(m.group(1), 16) > addr or int(m.group(1), 16) not in index:
            continue
        lo = index[int(m.group(1), 16)]
        ops = [o for _, o, _ in insns[lo:i + 1]]
        if any(o.startswith("UTMALDG") for o in ops) and not any(o.startswith("HGMMA") for o in ops):
            if best is None or i - lo < best[1] - best[0]:
                best = (lo, i)
    return count_range(insns, best, KINDS, classify)


def registers(cuobjdump, cubin):
    r = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True)
    m = re.search(r"REG:(\d+)", r.stdout)
    return int(m.group(1)) if m else 0


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def triton_cubin(tmp, dtype, cfg, tma):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    bm, bn, bk, warps, stages = cfg
    ty = {"f16": "*fp16", "bf16": "*bf16"}[dtype]
    if tma:
        fn = load("tt_matmul_tma").tt_matmul_tma
        sig = {"a": ty, "b": ty, "c": ty, "M": "i32", "N": "i32", "K": "i32", "sam": "i32", "sbk": "i32",
               "scm": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
               "GROUP_M": "constexpr"}
        consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
        div = ("a", "b", "c", "M", "N", "K", "sam", "sbk", "scm")
    else:  # as bench/sass_loop.py specializes it: unit strides, divisibility by 16, K a multiple of BLOCK_K
        fn = load("tt_matmul").tt_matmul
        sig = {"a": ty, "b": ty, "c": ty, "M": "i32", "N": "i32", "K": "i32", "sam": "i32", "sak": "constexpr",
               "sbk": "i32", "sbn": "constexpr", "scm": "i32", "scn": "constexpr", "BLOCK_M": "constexpr",
               "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "EVEN": "constexpr"}
        consts = {"sak": 1, "sbn": 1, "scn": 1, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8,
                  "EVEN": True}
        div = ("a", "b", "c", "M", "N", "K", "sam", "sbk", "scm")
    names = list(sig)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in div}
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})
    cubin = os.path.join(tmp, "tt.cubin")
    with open(cubin, "wb") as f:
        f.write(k.asm["cubin"])
    return cubin, k.metadata.shared


def tilec_cubin(args, tmp, dtype, cfg, arch, ws=None):
    bm, bn, bk, warps, stages = cfg
    cubin = os.path.join(tmp, "k.cubin")
    cmd = [args.tilec, os.path.join(ROOT, "stdlib", "matmul.tile"), "--kernel", "matmul_" + dtype, "-D",
           "BLOCK_M=%d" % bm, "-D", "BLOCK_N=%d" % bn, "-D", "BLOCK_K=%d" % bk, "-D", "GROUP_M=8", "-D",
           "A_LAYOUT=1", "-D", "B_LAYOUT=1", "-D", "C_LAYOUT=1", "-D", "EVEN=1", "--num-warps=%d" % warps,
           "--num-stages=%d" % stages, "--arch=" + arch, "-o", cubin] + (["--warp-specialize=" + ws] if ws else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("tilec failed: %s\n%s" % (" ".join(cmd), r.stderr))
    with open(cubin + ".tir") as f:
        m = re.search(r"dynamic_smem\((\d+)\)", f.read())
    smem = int(m.group(1)) if m else 0
    r = subprocess.run([args.cuobjdump, "-res-usage", cubin], capture_output=True, text=True)
    m = re.search(r"SHARED:(\d+)", r.stdout)
    return cubin, smem + (int(m.group(1)) if m else 0)


def row(who, dtype, cfg, c, regs, smem):
    bm, bn, bk, warps, stages = cfg
    what = "%s %dx%dx%d w%d s%d" % (dtype, bm, bn, bk, warps, stages)
    if c is None:
        return "| %s | %s | no such loop found |" % (who, what)
    per = c["total"] * (128 * 128 * 16) / (bm * bn * bk)
    return "| %s | %s | %s | %d | %.1f | %d | %d |" % (who, what, " | ".join(str(c[k]) for k in KINDS), c["total"],
                                                       per, regs, smem)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tilec", default=os.path.join(ROOT, "build", "tilec"))
    p.add_argument("--cuobjdump", help="default: on PATH, beside this Python's packages, or in /usr/local/cuda")
    p.add_argument("--dtype", action="append", help="f16 or bf16 (default both)")
    args = p.parse_args()
    args.cuobjdump = find_tool("cuobjdump", args.cuobjdump)
    if not args.cuobjdump:
        sys.exit("sass_hopper: no cuobjdump (pip install nvidia-cuda-cuobjdump)")
    print("| who | config | " + " | ".join(KINDS) + " | total | /128x128x16 | regs | smem |")
    print("|---|---|" + "---|" * (len(KINDS) + 4))
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtype or ("f16", "bf16"):
            for cfg in CONFIGS:
                for who, tma in (("Triton, pointers", False), ("Triton, TMA", True)):
                    cubin, smem = triton_cubin(tmp, dtype, cfg, tma)
                    print(row(who, dtype, cfg, count(args.cuobjdump, cubin), registers(args.cuobjdump, cubin), smem),
                          flush=True)
            for who, arch, cfgs, ws in (("tilec sm_90 (mma.sync)", "sm_90", (TILEC_CONFIG,), None),
                                        ("tilec sm_90a (wgmma, one role)", "sm_90a", (TILEC_WGMMA_CONFIG,) + CONFIGS,
                                         "off"),
                                        ("tilec sm_90a (wgmma, consumers)", "sm_90a", (TILEC_WGMMA_CONFIG,) + CONFIGS,
                                         "on")):
                for cfg in cfgs:
                    cubin, smem = tilec_cubin(args, tmp, dtype, cfg, arch, ws)
                    print(row(who, dtype, cfg, count(args.cuobjdump, cubin), registers(args.cuobjdump, cubin), smem),
                          flush=True)
                    if ws == "on":  # the producer warp's loop: the shortest with bulk copies
                        c = producer_loop(sass_of(args.cuobjdump, cubin))
                        print(row("tilec sm_90a (producer warp)", dtype, cfg, c, registers(args.cuobjdump, cubin),
                                  smem), flush=True)


if __name__ == "__main__":
    main()
