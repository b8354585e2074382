#!/usr/bin/env python3
"""sass_attention.py - flash attention's forward main loop, counted offline.

Compiles stdlib/attention.tile's attention_fwd_f16 (non-causal, no window,
not varlen: the loop every program runs; ALIGNED and --exp2-ftz, as
tls_attention_fwd compiles it for strides that are multiples of 16 bytes, where Triton's
launcher specializes on divisibility by 16, given here too) and, with --triton,
bench/tt_attention.py (the same math in Triton) for sm_80 at each
configuration below, disassembles the cubins with cuobjdump -sass and counts
the main loop (the loop with the most HMMA: back-edge target to back-edge,
as bench/sass_loop.py finds it): HMMA, LDSM, LDGSTS, BAR, SHFL (the row
max and sum across a row group's lanes), MUFU (exp2), shared loads and
stores (LDS/STS: layout changes through shared memory), register moves,
other integer instructions, the rest, the total and instructions per HMMA,
with ptxas -v's registers and spill bytes and the shared memory the kernel
asks for. With --hopper, the same for sm_90a (Triton: sm_90), at the
stdlib's H100 rows (runtime/stdlib_attention.c's attention_configs): both
compilers' loops are wgmma there, counted as HGMMA and WARPGROUP (its
fences, arrive and wait) instead of HMMA and LDSM (Triton's cubin as it
makes it, its stack bytes for spills: its PTX is newer than the toolkit's
ptxas reads).

  python3 -m venv /tmp/sassenv
  /tmp/sassenv/bin/pip install triton nvidia-cuda-cuobjdump
  /tmp/sassenv/bin/python bench/sass_attention.py --tilec build/tilec --triton

Nothing here runs on a GPU: these are instruction counts, not timings.
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sass_loop  # noqa: E402  (parse_sass, main_loop, ptxas_figures, find_tool)

KINDS = ("hmma", "ldsm", "ldgsts", "bar", "shfl", "mufu", "lds_sts", "moves", "int", "other")
# (HEAD_DIM, BLOCK_M, BLOCK_N, num_warps, num_stages): Triton's tutorial choices on an A100 (128 x 64, 4
# warps, up to D 64; 128 x 32 at 128) and the 8-warp tiles that keep p in registers at D 128
CONFIGS = ((64, 128, 64, 4, 3), (64, 128, 64, 8, 3), (128, 128, 64, 8, 3), (128, 128, 32, 4, 3), (32, 128, 64, 4, 3))
# --hopper: the stdlib's sm_90 rows (D 64 and 128: 128 x 64, 8 warps, 7 stages)
HOPPER_KINDS = ("hgmma", "warpgroup", "ldgsts", "bar", "shfl", "mufu", "lds_sts", "moves", "int", "other")
HOPPER_CONFIGS = ((64, 128, 64, 8, 7), (128, 128, 64, 8, 7))


def classify(op):
    if op.startswith("SHFL"):
        return "shfl"
    if op.startswith("MUFU"):
        return "mufu"
    if op.startswith(("LDS", "STS")) and not op.startswith("LDSM"):
        return "lds_sts"
    return sass_loop.classify(op)


def classify_hopper(op):
    if op.startswith("HGMMA"):
        return "hgmma"
    if op.startswith("WARPGROUP"):
        return "warpgroup"
    kind = classify(op)
    return kind if kind in HOPPER_KINDS else "other"


def count(sass_text, hopper=False):
    if hopper:
        return sass_loop.count_kinds(sass_text, HOPPER_KINDS, classify_hopper, tensor=("HGMMA",))
    return sass_loop.count_kinds(sass_text, KINDS, classify)


def tilec_row(args, tmp, d, bm, bn, warps, stages, hopper=False):
    cubin = os.path.join(tmp, "a.cubin")
    cmd = [args.tilec, os.path.join(ROOT, "stdlib", "attention.tile"), "--kernel", "attention_fwd_f16", "-D",
           "HEAD_DIM=%d" % d, "-D", "BLOCK_M=%d" % bm, "-D", "BLOCK_N=%d" % bn, "-D", "ALIGNED=1", "--num-warps=%d" % warps,
           "--num-stages=%d" % stages, "--arch=" + ("sm_90a" if hopper else "sm_80"), "--exp2-ftz", "-v", "-o", cubin]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("tilec failed: %s\n%s" % (" ".join(cmd), r.stderr))
    regs, spills, smem = sass_loop.ptxas_figures(r.stderr)
    with open(cubin + ".tir") as f:
        m = re.search(r"dynamic_smem\((\d+)\)", f.read())
    smem += int(m.group(1)) if m else 0
    return count(sass_loop.sass_of(args.cuobjdump, cubin), hopper), regs, spills, smem


def triton_row(args, tmp, d, bm, bn, warps, stages, hopper=False):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = importlib.util.spec_from_file_location("tt_attention", os.path.join(ROOT, "bench", "tt_attention.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sig = {"q": "*fp16", "k": "*fp16", "v": "*fp16", "o": "*fp16", "lse": "*fp32", "n_kv": "i32", "sqm": "i32",
           "skn": "i32", "svn": "i32", "som": "i32", "scale": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
           "HEAD_DIM": "constexpr"}
    names = list(sig)
    div16 = [["tt.divisibility", 16]]
    attrs = {(names.index(n),): div16 for n in ("q", "k", "v", "o", "lse", "sqm", "skn", "svn", "som")}
    src = ASTSource(fn=mod.tt_attention, signature=sig, constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "HEAD_DIM": d},
                    attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90 if hopper else 80, 32),
                       options={"num_warps": warps, "num_stages": stages})
    ptx = os.path.join(tmp, "tt.ptx")
    cubin = os.path.join(tmp, "tt.cubin")
    if hopper:  # Triton's PTX for sm_90 is newer than the toolkit's ptxas reads: its own cubin, registers from it
        with open(cubin, "wb") as f:
            f.write(k.asm["cubin"])
        r = subprocess.run([args.cuobjdump, "-res-usage", cubin], capture_output=True, text=True)
        m, st = re.search(r"REG:(\d+)", r.stdout), re.search(r"STACK:(\d+)", r.stdout)
        return (count(sass_loop.sass_of(args.cuobjdump, cubin), hopper), int(m.group(1)) if m else 0,
                int(st.group(1)) if st else 0, k.metadata.shared)
    with open(ptx, "w") as f:
        f.write(k.asm["ptx"])
    r = subprocess.run([args.ptxas, "-v", "--gpu-name", "sm_90a" if hopper else "sm_80", ptx, "-o", cubin],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("ptxas failed on Triton's PTX: " + r.stderr)
    regs, spills, _ = sass_loop.ptxas_figures(r.stderr)
    return count(sass_loop.sass_of(args.cuobjdump, cubin), hopper), regs, spills, k.metadata.shared


def fmt(who, what, c, regs, spills, smem, hopper=False):
    kinds, tensor = (HOPPER_KINDS, "hgmma") if hopper else (KINDS, "hmma")
    if c is None:
        return "| %s | %s | no loop with %s found |" % (who, what, tensor.upper())
    return "| %s | %s | %s | %d | %.2f | %d | %d | %d |" % (who, what, " | ".join(str(c[k]) for k in kinds),
                                                         c["total"], c["total"] / c[tensor], regs, spills, smem)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tilec", default=os.path.join(ROOT, "build", "tilec"))
    p.add_argument("--cuobjdump")
    p.add_argument("--ptxas")
    p.add_argument("--triton", action="store_true", help="also compile bench/tt_attention.py with Triton")
    p.add_argument("--hopper", action="store_true", help="sm_90a (Triton: sm_90) at the stdlib's H100 rows: wgmma")
    args = p.parse_args()
    args.cuobjdump = sass_loop.find_tool("cuobjdump", args.cuobjdump)
    args.ptxas = sass_loop.find_tool("ptxas", args.ptxas)
    if not args.cuobjdump or not args.ptxas:
        sys.exit("cuobjdump and ptxas are needed (see this script's header)")
    hopper = args.hopper
    kinds = HOPPER_KINDS if hopper else KINDS
    print("| who | D BMxBN warps stages | " + " | ".join(kinds) + " | total | /%s | regs | spill bytes | smem |" %
          ("HGMMA" if hopper else "HMMA"))
    print("|" + "---|" * (len(kinds) + 8))
    with tempfile.TemporaryDirectory() as tmp:
        for d, bm, bn, warps, stages in HOPPER_CONFIGS if hopper else CONFIGS:
            what = "D%d %dx%d w%d s%d" % (d, bm, bn, warps, stages)
            print(fmt("tilec", what, *tilec_row(args, tmp, d, bm, bn, warps, stages, hopper), hopper=hopper), flush=True)
            if args.triton:
                print(fmt("Triton", what, *triton_row(args, tmp, d, bm, bn, warps, stages, hopper), hopper=hopper),
                      flush=True)


if __name__ == "__main__":
    main()
