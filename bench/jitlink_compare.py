#!/usr/bin/env python3
"""jitlink_compare.py - nvJitLink's cubins against ptxas's (issue 23, item 4).

Compiles every stdlib kernel file at its defaults, and stdlib/matmul.tile
at the tile configurations runtime/stdlib.c picks from (128x128x32 w4,
64x64x32 w4, 32x32x32 w2; EVEN, 4 stages), for sm_80, sm_90 and sm_90a,
twice: TILEC_ASSEMBLER=ptxas (the ptxas process) and
TILEC_ASSEMBLER=nvjitlink (in-process). For each kernel it compares the two
cubins: whole files identical or not, the kernel's SASS (.text.KERNEL)
identical or not, how many of its instructions differ (a diff of the two
instruction lists: 16-byte words, or with --nvdisasm the disassembled
lines), registers and spill bytes (tilec -v: ptxas's report, from either).

With --nvdisasm it also assembles tilec's PTX with `ptxas -c` (relocatable
code, what nvJitLink runs before it links) and counts the lines of that
SASS that differ from nvJitLink's, but for operands `ptxas -c` leaves to
the linker (relocations, shown `(...)` by nvdisasm): 0 throughout says
that nvJitLink's cubin is `ptxas -c`'s, linked.

usage: python3 bench/jitlink_compare.py [--tilec build/tilec] [--root .] [--quick]
           [--nvdisasm PATH] [--ptxas PATH]
--quick: the matmul configurations only. Needs ptxas and libnvJitLink; no
GPU. Prints a table and a summary; exit status 0 (the differences are
reported, not judged: docs/design.md, "PTX to a cubin"). nvdisasm is not
in every toolkit install: pip's nvidia-cuda-nvdisasm has one.
"""
import argparse
import difflib
import os
import re
import struct
import subprocess
import sys
import tempfile

MATMUL = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps (runtime/stdlib.c matmul_configs)
    (128, 128, 32, 4),
    (64, 64, 32, 4),
    (32, 32, 32, 2),
]
ARCHES = ["sm_80", "sm_90", "sm_90a"]


def sections(blob):
    """{name: (bytes, sh_info)} of an ELF64 file."""
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    hdrs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", blob, shoff + i * shentsize)
        hdrs.append((name, typ, off, size, info))
    stroff = hdrs[shstrndx][2]
    out = {}
    for name, typ, off, size, info in hdrs[1:]:
        end = blob.index(b"\0", stroff + name)
        data = blob[off:off + size] if typ != 8 else b""  # 8: NOBITS
        out[blob[stroff + name:end].decode()] = (data, info)
    return out


def usage(report):
    """{kernel: (registers, spill store + load bytes)} from a ptxas -v report."""
    out, kernel, spill = {}, None, 0
    for line in report.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            kernel = m.group(1)
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            spill = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and kernel:
            out[kernel] = (int(m.group(1)), spill)
    return out


def run(cmd, env=None):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr}")
    return r.stderr + r.stdout


def compile_one(tilec, path, args, arch, assembler, tmp):
    out = os.path.join(tmp, assembler + ".cubin")
    env = dict(os.environ, TILEC_ASSEMBLER=assembler)
    env.pop("TILEC_PTXAS", None)
    report = run([tilec, path, *args, "--arch=" + arch, "-v", "--no-sidecar", "-o", out], env)
    with open(out, "rb") as f:
        return f.read(), usage(report), out


def sass(nvdisasm, cubin):
    """{kernel: [instruction lines]} of a cubin, addresses and comments dropped."""
    out, kernel = {}, None
    for line in run([nvdisasm, "-c", cubin]).splitlines():
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            kernel = m.group(1)
            out[kernel] = []
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s*(.*?)\s*;", line)
        if m and kernel:
            out[kernel].append(" ".join(m.group(1).split()))
    return out


def differing(a, b):
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return max(len(a), len(b)) - sum(blk.size for blk in sm.get_matching_blocks())


def instructions(text):
    return [text[i:i + 16] for i in range(0, len(text), 16)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", default="build/tilec")
    ap.add_argument("--root", default=".")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--ptxas", default="ptxas")
    a = ap.parse_args()
    runs = []
    for m, n, k, w in MATMUL:
        runs.append(("matmul.tile", f"{m}x{n}x{k} w{w}",
                     ["-D", f"BLOCK_M={m}", "-D", f"BLOCK_N={n}", "-D", f"BLOCK_K={k}", "-D", "EVEN=1",
                      f"--num-warps={w}", "--num-stages=4"]))
    if not a.quick:
        for f in sorted(os.listdir(os.path.join(a.root, "stdlib"))):
            if f.endswith(".tile") and f != "matmul.tile":
                runs.append((f, "default", []))
    print(f"{'file':<20} {'config':<16} {'arch':<7} {'kernel':<28} {'file=':>5} {'sass=':>5} "
          f"{'insns':>6} {'differ':>6} {'vs -c':>5} {'regs px/jl':>10} {'spill px/jl':>11}")
    totals = {"kernels": 0, "files_same": 0, "files": 0, "sass_same": 0, "regs_same": 0, "jl_fewer": 0,
              "jl_more": 0, "spill_same": 0, "insns": 0, "differ": 0, "vs_c": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for f, config, args in runs:
            path = os.path.join(a.root, "stdlib", f)
            for arch in ARCHES:
                px, px_use, px_file = compile_one(a.tilec, path, args, arch, "ptxas", tmp)
                jl, jl_use, jl_file = compile_one(a.tilec, path, args, arch, "nvjitlink", tmp)
                totals["files"] += 1
                totals["files_same"] += px == jl
                ps, js = sections(px), sections(jl)
                if a.nvdisasm:
                    ptx, rel = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "rel.cubin")
                    run([a.tilec, path, *args, "--arch=" + arch, "--emit=ptx", "-o", ptx])
                    run([a.ptxas, "-arch=" + arch, "-O3", "-c", ptx, "-o", rel])
                    p_sass, j_sass, c_sass = sass(a.nvdisasm, px_file), sass(a.nvdisasm, jl_file), sass(a.nvdisasm, rel)
                for name in sorted(s for s in ps if s.startswith(".text.")):
                    kernel = name[len(".text."):]
                    pt, jt = ps[name][0], js[name][0]
                    if a.nvdisasm:
                        pi, ji, ci = p_sass[kernel], j_sass[kernel], c_sass[kernel]
                        # -c's relocated operands are the linker's: compare the rest
                        vs_c = sum(1 for c, j in zip(ci, ji) if c != j and "`(" not in c) + abs(len(ci) - len(ji))
                        totals["vs_c"] += vs_c
                    else:
                        pi, ji, vs_c = instructions(pt), instructions(jt), "-"
                    differ = differing(pi, ji)
                    (preg, psp), (jreg, jsp) = px_use.get(kernel, (0, 0)), jl_use.get(kernel, (0, 0))
                    totals["kernels"] += 1
                    totals["sass_same"] += pt == jt
                    totals["regs_same"] += preg == jreg
                    totals["jl_fewer"] += jreg < preg
                    totals["jl_more"] += jreg > preg
                    totals["spill_same"] += psp == jsp
                    totals["insns"] += len(pi)
                    totals["differ"] += differ
                    print(f"{f:<20} {config:<16} {arch:<7} {kernel[:28]:<28} {'yes' if px == jl else 'no':>5} "
                          f"{'yes' if pt == jt else 'no':>5} {len(pi):>6} {differ:>6} {vs_c:>5} "
                          f"{f'{preg}/{jreg}':>10} {f'{psp}/{jsp}':>11}", flush=True)
    t = totals
    print(f"\n{t['kernels']} kernels in {t['files']} cubins: {t['files_same']} cubins identical, "
          f"{t['sass_same']} kernels' SASS identical; {t['differ']} of {t['insns']} instructions differ; "
          f"registers the same for {t['regs_same']} (nvJitLink fewer {t['jl_fewer']}, more {t['jl_more']}); "
          f"spills the same for {t['spill_same']}" +
          (f"; nvJitLink against ptxas -c: {t['vs_c']} instructions differ beyond relocations" if a.nvdisasm else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
