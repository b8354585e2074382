#!/usr/bin/env python3
"""sass_loop.py - the matmul main loop's machine code, counted offline.

Compiles stdlib/matmul.tile (rows contiguous: A_LAYOUT = B_LAYOUT =
C_LAYOUT = 1; EVEN and K-masked) at each configuration of issue 19 (f16 and
bf16; 128x128x32 and 64x64x32; 4 and 8 warps; 3 and 4 stages; sm_80 and
sm_90), disassembles each cubin with cuobjdump -sass and counts the SASS
instructions of the main loop: from the target of the back-edge branch to
the branch itself, in the loop with the most HMMA (the innermost, where two
have as many). Prints one markdown table row per configuration: HMMA, LDSM,
LDGSTS, BAR, register moves (MOV, IMAD.MOV, UMOV), other integer
instructions, the rest, the total and instructions per HMMA, with ptxas -v's
registers and spill bytes and the shared memory the kernel asks for, and
"1st HMMA": how many instructions of the loop come before its first HMMA
(small where the trip's first fragments were loaded before the back-edge,
the fragment prefetch; large where the trip's HMMAs wait for ldmatrixes
issued after its barrier).

With --user it also counts bench/kernels/user_matmul.tile, a matmul written
as Triton's tutorial writes it (carried pointers, offs_k masks), compiled
by tilec: the compiler, not stdlib/matmul.tile, is what makes the loop lean.

With --triton it also compiles bench/tt_matmul.py, Triton's tutorial
matmul (grouped order, pointers bumped by BLOCK_K each trip; K masked, or
not for the EVEN rows; strides of 1 and divisibility by 16 specialized as Triton's
launcher would at these shapes) for sm_80 without a GPU, and its sm_80 PTX
assembled by ptxas for sm_90 (Triton would use wgmma there: this row
compares the same mma.sync loop). Triton is not a dependency of the
project: install it, with cuobjdump, in a throwaway environment:

  python3 -m venv /tmp/sassenv
  /tmp/sassenv/bin/pip install triton nvidia-cuda-cuobjdump
  /tmp/sassenv/bin/python bench/sass_loop.py --tilec build/tilec --triton

Nothing here runs on a GPU: these are instruction counts, not timings.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns without it; its default
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOVES = {"MOV", "IMAD.MOV", "IMAD.MOV.U32", "UMOV", "MOV.U32"}
INT_PREFIXES = ("IMAD", "IADD", "LEA", "SHF", "LOP", "ISETP", "SEL", "IABS", "IMNMX", "PRMT", "UIADD", "ULEA",
                "USHF", "ULOP", "UISETP", "USEL", "UIMAD", "USEL", "SGXT", "USGXT", "FLO", "POPC", "BMSK", "UPRMT",
                "R2UR", "S2UR", "S2R", "CS2R", "VIADD", "IDP", "UMOV", "VIMNMX")
INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")


def find_tool(name, explicit):
    if explicit:
        return explicit
    found = shutil.which(name)
    if found:
        return found
    for pattern in (os.path.join(sys.prefix, "lib", "python3*", "site-packages", "nvidia", "*", "bin", name),
                    os.path.join(sys.prefix, "lib", "python3*", "site-packages", "triton", "backends", "nvidia", "bin",
                                 name), "/usr/local/cuda/bin/" + name):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[0]
    return None


def parse_sass(text):
    """The instructions of the first function in cuobjdump -sass output: (address, opcode, operands)."""
    out = []
    for line in text.splitlines():
        m = INSN.search(line)
        if m:
            out.append((int(m.group(1), 16), m.group(3), m.group(4).strip()))
    return out


def main_loop(insns, tensor=("HMMA",)):
    """The (start, end) indices of the loop with the most tensor-core instructions (opcodes starting with one of
    `tensor`): [back-edge target, back-edge]."""
    index = {addr: i for i, (addr, _, _) in enumerate(insns)}
    best = None
    for i, (addr, op, args) in enumerate(insns):
        if not op.startswith("BRA"):
            continue
        m = re.search(r"0x([0-9a-f]+)", args)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target > addr or target not in index:
            continue
        lo = index[target]
        hmma = sum(1 for _, o, _ in insns[lo:i + 1] if o.startswith(tensor))
        key = (hmma, -(i - lo))
        if hmma and (best is None or key > best[0]):
            best = (key, lo, i)
    return (best[1], best[2]) if best else None


def count_range(insns, loop, kinds, classify_op):
    """{kind: count} over insns[loop[0]..loop[1]], each instruction's kind from classify_op, and "total"; None
    without a loop."""
    if loop is None:
        return None
    c = {k: 0 for k in kinds}
    for _, op, _ in insns[loop[0]:loop[1] + 1]:
        c[classify_op(op)] += 1
    c["total"] = loop[1] - loop[0] + 1
    return c


def count_kinds(sass_text, kinds, classify_op, tensor=("HMMA",)):
    """{kind: count} over the main loop (main_loop) of the first function, each instruction's kind from classify_op,
    and "total"; None without a loop holding tensor-core instructions."""
    insns = [x for x in parse_sass(sass_text) if x[1] != "NOP"]
    return count_range(insns, main_loop(insns, tensor), kinds, classify_op)


def classify(op):
    if op.startswith("HMMA"):
        return "hmma"
    if op.startswith("LDSM"):
        return "ldsm"
    if op.startswith("LDGSTS"):
        return "ldgsts"
    if op.startswith("BAR"):
        return "bar"
    if op in MOVES:
        return "moves"
    if op.startswith(INT_PREFIXES):
        return "int"
    return "other"


def count_loop(sass_text):
    insns = [x for x in parse_sass(sass_text) if x[1] != "NOP"]
    loop = main_loop(insns)
    if loop is None:
        return None
    counts = {k: 0 for k in ("hmma", "ldsm", "ldgsts", "bar", "moves", "int", "other")}
    counts["first_hmma"] = None
    for k, (_, op, _) in enumerate(insns[loop[0]:loop[1] + 1]):
        counts[classify(op)] += 1
        if counts["first_hmma"] is None and op.startswith("HMMA"):
            counts["first_hmma"] = k
    counts["total"] = loop[1] - loop[0] + 1
    return counts


def ptxas_figures(log):
    """(registers, spill store bytes + spill load bytes, static smem bytes) from a ptxas -v report."""
    regs = spills = smem = 0
    for line in log.splitlines():
        m = re.search(r"Used (\d+) registers", line)
        if m:
            regs = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            smem = int(m.group(1))
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            spills = int(m.group(1)) + int(m.group(2))
    return regs, spills, smem


def sass_of(cuobjdump, cubin):
    r = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("cuobjdump failed: " + r.stderr)
    return r.stdout


def user_row(args, tmp, bm, bn, bk, warps, stages, arch, even):
    """bench/kernels/user_matmul.tile (f16): a loop written as Triton's tutorial, not the stdlib's."""
    cubin = os.path.join(tmp, "u.cubin")
    cmd = [args.tilec, os.path.join(ROOT, "bench", "kernels", "user_matmul.tile"), "-D", "BM=%d" % bm, "-D",
           "BN=%d" % bn, "-D", "BK=%d" % bk, "-D", "MASKED=%d" % (0 if even else 1), "--num-warps=%d" % warps,
           "--num-stages=%d" % stages, "--arch=" + arch, "-v", "-o", cubin]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("tilec failed: %s\n%s" % (" ".join(cmd), r.stderr))
    regs, spills, smem = ptxas_figures(r.stderr)
    with open(cubin + ".tir") as f:
        m = re.search(r"dynamic_smem\((\d+)\)", f.read())
    smem += int(m.group(1)) if m else 0
    return count_loop(sass_of(args.cuobjdump, cubin)), regs, spills, smem


def tilec_row(args, tmp, dtype, bm, bn, bk, warps, stages, arch, even, sizes_vec=False):
    cubin = os.path.join(tmp, "k.cubin")
    cmd = [args.tilec, os.path.join(ROOT, "stdlib", "matmul.tile"), "--kernel", "matmul_" + dtype, "-D",
           "BLOCK_M=%d" % bm, "-D", "BLOCK_N=%d" % bn, "-D", "BLOCK_K=%d" % bk, "-D", "GROUP_M=8", "-D",
           "A_LAYOUT=1", "-D", "B_LAYOUT=1", "-D", "C_LAYOUT=1", "-D", "EVEN=%d" % even, "--num-warps=%d" % warps,
           "--num-stages=%d" % stages, "--arch=" + arch, "-v", "-o", cubin]
    if sizes_vec:
        cmd[4:4] = ["-D", "SIZES_VEC=1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("tilec failed: %s\n%s" % (" ".join(cmd), r.stderr))
    regs, spills, smem = ptxas_figures(r.stderr)
    with open(cubin + ".tir") as f:  # the sidecar: the kernel's dynamic shared memory
        m = re.search(r"dynamic_smem\((\d+)\)", f.read())
    smem += int(m.group(1)) if m else 0
    return count_loop(sass_of(args.cuobjdump, cubin)), regs, spills, smem


def triton_rows(args, tmp, dtype, bm, bn, bk, warps, stages, even):
    """Triton's loop for sm_80 and, from the same PTX, for sm_90: {arch: (counts, regs, spills, smem)}."""
    import importlib.util
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    spec = importlib.util.spec_from_file_location("tt_matmul", os.path.join(ROOT, "bench", "tt_matmul.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ty = {"f16": "*fp16", "bf16": "*bf16"}[dtype]
    sig = {"a": ty, "b": ty, "c": ty, "M": "i32", "N": "i32", "K": "i32", "sam": "i32", "sak": "constexpr",
           "sbk": "i32", "sbn": "constexpr", "scm": "i32", "scn": "constexpr", "BLOCK_M": "constexpr",
           "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "EVEN": "constexpr"}
    consts = {"sak": 1, "sbn": 1, "scn": 1, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8,
              "EVEN": bool(even)}
    names = list(sig)
    div16 = [["tt.divisibility", 16]]
    attrs = {(names.index(n),): div16 for n in ("a", "b", "c", "M", "N", "K", "sam", "sbk", "scm")}
    src = ASTSource(fn=mod.tt_matmul, signature=sig, constexprs=consts, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 80, 32), options={"num_warps": warps, "num_stages": stages})
    rows = {}
    cubin = os.path.join(tmp, "tt.cubin")
    with open(cubin, "wb") as f:
        f.write(k.asm["cubin"])
    ptx = os.path.join(tmp, "tt.ptx")
    with open(ptx, "w") as f:
        f.write(k.asm["ptx"])
    for arch in ("sm_80", "sm_90"):
        if arch == "sm_90":
            with open(ptx) as f:
                text = re.sub(r"\.target sm_80\w*", ".target sm_90", f.read())
            with open(ptx, "w") as f:
                f.write(text)
        r = subprocess.run([args.ptxas, "-v", "--gpu-name", arch, ptx, "-o", cubin], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("ptxas failed on Triton's PTX: " + r.stderr)
        regs, spills, _ = ptxas_figures(r.stderr)
        rows[arch] = (count_loop(sass_of(args.cuobjdump, cubin)), regs, spills, k.metadata.shared)
    return rows


def fmt(who, what, counts, regs, spills, smem):
    if counts is None:
        return "| %s | %s | no loop with HMMA found |" % (who, what)
    c = counts
    return "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %.2f | %d | %d | %d | %d |" % (
        who, what, c["hmma"], c["ldsm"], c["ldgsts"], c["bar"], c["moves"], c["int"], c["other"], c["total"],
        c["total"] / c["hmma"], regs, spills, smem, c["first_hmma"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tilec", default=os.path.join(ROOT, "build", "tilec"))
    p.add_argument("--cuobjdump", help="default: on PATH, beside this Python's packages, or in /usr/local/cuda")
    p.add_argument("--ptxas", help="default: on PATH or in /usr/local/cuda")
    p.add_argument("--triton", action="store_true", help="add Triton's rows (needs triton importable)")
    p.add_argument("--user", action="store_true",
                   help="add rows (f16) for bench/kernels/user_matmul.tile, a loop written as Triton's tutorial")
    p.add_argument("--quick", action="store_true", help="only 128x128x32, 4 warps, 4 stages")
    p.add_argument("--sizes-vec", action="store_true",
                   help="after each K-masked tilec row, one with SIZES_VEC (sizes multiples of 16 bytes, as "
                        "tls_matmul specializes them and Triton's launcher sizes divisible by 16)")
    p.add_argument("--dtype", action="append", help="f16 or bf16 (default both)")
    p.add_argument("--arch", action="append", help="sm_80 or sm_90 (default both)")
    args = p.parse_args()
    args.cuobjdump = find_tool("cuobjdump", args.cuobjdump)
    args.ptxas = find_tool("ptxas", args.ptxas)
    if not args.cuobjdump or not args.ptxas:
        sys.exit("sass_loop.py: needs cuobjdump and ptxas (pip install nvidia-cuda-cuobjdump in a throwaway venv)")
    tiles = [(128, 128, 32)] if args.quick else [(128, 128, 32), (64, 64, 32)]
    warps_list = [4] if args.quick else [4, 8]
    stages_list = [4] if args.quick else [3, 4]
    print("| who | configuration | HMMA | LDSM | LDGSTS | BAR | moves | other int | rest | loop | per HMMA "
          "| registers | spill bytes | smem | 1st HMMA |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtype or ["f16", "bf16"]:
            for bm, bn, bk in tiles:
                for warps in warps_list:
                    for stages in stages_list:
                        for even in (1, 0):
                            tt = None
                            if args.triton:
                                try:
                                    tt = triton_rows(args, tmp, dtype, bm, bn, bk, warps, stages, even)
                                except Exception as e:  # noqa: BLE001 - reported, the tilec rows go on
                                    print("| triton | %s | failed: %s |" % (dtype, str(e).splitlines()[0][:120]))
                            for arch in args.arch or ["sm_80", "sm_90"]:
                                what = "%s %dx%dx%d w%d s%d %s %s" % (dtype, bm, bn, bk, warps, stages, arch,
                                                                      "EVEN" if even else "K masked")
                                row = tilec_row(args, tmp, dtype, bm, bn, bk, warps, stages, arch, even)
                                bad += row[0] is None
                                print(fmt("tilec", what, *row), flush=True)
                                if args.sizes_vec and not even:
                                    row = tilec_row(args, tmp, dtype, bm, bn, bk, warps, stages, arch, even, True)
                                    bad += row[0] is None
                                    print(fmt("tilec", what + " SIZES_VEC", *row), flush=True)
                                if args.user and dtype == "f16":
                                    print(fmt("user", what, *user_row(args, tmp, bm, bn, bk, warps, stages, arch, even)),
                                          flush=True)
                                if tt:
                                    print(fmt("triton", what, *tt[arch]), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
