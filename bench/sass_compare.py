#!/usr/bin/env python3
"""sass_compare.py - the SASS of two scripts/ptx-snapshot.sh folders, function
by function, for a change meant to make the compiler faster without making
its code slower. No GPU needed.

  python3 bench/sass_compare.py OLD NEW [--cuobjdump PATH] [--ptxas PATH] [-j N] [--skip REGEX]

OLD and NEW are two snapshots of the same files (ptx-snapshot.sh TILEC DIR,
with the old and the new compiler). Every NAME.ptx whose text differs is
assembled on both sides (ptxas -O3 -v, -arch=sm_80 or sm_90a from the
name, as tilec assembles) and disassembled (cuobjdump -sass); per function
it counts the SASS instructions (NOPs aside), the instructions inside
backward branches (loop bodies: where a kernel spends its time), the
registers and the spill-store bytes ptxas reports. It prints the totals,
the same for the stdlib, samples and bench kernels apart from the tests',
and every function whose code got longer, whose loop bodies did, or that
uses more registers or spills more. --skip leaves out files whose name
matches (tests/golden/errors/kernel-code-size.tile's largest kernel takes
ptxas minutes). Exit 1 if a stdlib, sample or bench
function got longer, its loops longer, or it spills more.

cuobjdump is not in this machine's toolkit; pip's has one:
  python3 -m venv /tmp/sassenv && /tmp/sassenv/bin/pip install nvidia-cuda-cuobjdump
"""
import argparse
import concurrent.futures
import filecmp
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH_BACK = re.compile(r"\bBRA\b.*?0x([0-9a-f]+)")
LIBRARY = ("stdlib_", "samples_", "bench_")


def find_cuobjdump(given):
    if given:
        return given
    for pattern in ("/tmp/sassenv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump",
                    "/tmp/sassenv/lib/python3*/site-packages/triton/backends/nvidia/bin/cuobjdump"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[0]
    return shutil.which("cuobjdump")


def functions(ptx_path, ptxas, cuobjdump, scratch):
    """{function: (instructions, loop-body instructions, registers, spill bytes)}, or None."""
    arch = "sm_90a" if "__sm_90__" in os.path.basename(ptx_path) else "sm_80"
    cubin = os.path.join(scratch, os.path.basename(os.path.dirname(ptx_path)) + "." +
                         os.path.basename(ptx_path) + ".cubin")
    r = subprocess.run([ptxas, "-arch=" + arch, "-O3", "-v", ptx_path, "-o", cubin],
                       capture_output=True, text=True)
    if r.returncode:
        return None
    report, current = {}, None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
            report[current] = [0, 0]
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            report[current][0] = int(m.group(1))
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and current:
            report[current][1] = int(m.group(1))
    sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True).stdout
    os.unlink(cubin)
    code, name = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            name = m.group(1)
            code[name] = []
            continue
        m = INSTRUCTION.match(line)
        if m and name and not m.group(2).startswith("NOP"):
            code[name].append((int(m.group(1), 16), m.group(2)))
    out = {}
    for name, ins in code.items():
        loop = 0
        for at, text in ins:
            m = BRANCH_BACK.search(text)
            if m and int(m.group(1), 16) < at:  # a branch to itself is the trap after EXIT
                target = int(m.group(1), 16)
                loop += sum(1 for a, _ in ins if target <= a <= at)
        regs, spill = report.get(name, [0, 0])
        out[name] = (len(ins), loop, regs, spill)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--ptxas", default="/usr/local/cuda/bin/ptxas")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip", help="leave out PTX files whose name matches this regular expression")
    a = ap.parse_args()
    cuobjdump = find_cuobjdump(a.cuobjdump)
    if not cuobjdump:
        sys.exit("no cuobjdump: see --help")
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(a.new, "*.ptx")))
    changed = [n for n in names if os.path.exists(os.path.join(a.old, n)) and
               os.path.getsize(os.path.join(a.new, n)) and
               not filecmp.cmp(os.path.join(a.old, n), os.path.join(a.new, n), shallow=False) and
               not (a.skip and re.search(a.skip, n))]
    print(f"{len(names)} PTX files, {len(changed)} differ")
    rows, failed = [], []
    with tempfile.TemporaryDirectory() as scratch, concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        jobs = {n: (pool.submit(functions, os.path.join(a.old, n), a.ptxas, cuobjdump, scratch),
                    pool.submit(functions, os.path.join(a.new, n), a.ptxas, cuobjdump, scratch)) for n in changed}
        for n in changed:
            old, new = jobs[n][0].result(), jobs[n][1].result()
            if old is None or new is None:
                failed.append(n)
                continue
            for f in sorted(set(old) & set(new)):
                rows.append((n, f, old[f], new[f]))

    def summary(label, rs):
        longer = sum(1 for r in rs if r[3][0] > r[2][0])
        shorter = sum(1 for r in rs if r[3][0] < r[2][0])
        print(f"{label}: {len(rs)} functions, SASS {sum(r[2][0] for r in rs)} -> {sum(r[3][0] for r in rs)} "
              f"({longer} longer, {shorter} shorter); loop bodies {sum(r[2][1] for r in rs)} -> "
              f"{sum(r[3][1] for r in rs)} ({sum(1 for r in rs if r[3][1] > r[2][1])} longer); "
              f"{sum(1 for r in rs if r[3][2] > r[2][2])} with more registers, "
              f"{sum(1 for r in rs if r[3][3] > r[2][3])} spilling more")

    library = [r for r in rows if r[0].startswith(LIBRARY)]
    summary("all", rows)
    summary("stdlib, samples, bench", library)
    worse = [r for r in rows if r[3][0] > r[2][0] or r[3][1] > r[2][1] or r[3][2] > r[2][2] or r[3][3] > r[2][3]]
    if worse:
        print("longer, or more registers or spills (instructions, loop body, registers, spill bytes):")
        for n, f, o, w in sorted(worse):
            print(f"  {n} {f}: {o} -> {w}")
    if failed:
        print("could not assemble: " + " ".join(failed))
    bad = [r for r in library if r[3][0] > r[2][0] or r[3][1] > r[2][1] or r[3][3] > r[2][3]]
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
