#!/usr/bin/env python3
"""compile_vs_triton.py - how long tilec and Triton take to compile the same
kernels for sm_80, on this machine, in one run; no GPU needed.

Kernels (the same computation, block sizes and warps on both sides):
  vadd       samples/vadd.tile (BLOCK 1024, f32; 4 warps, the heuristic's)
             vs tutorial 01's add_kernel (bench/tt_rows.py, 4 warps);
             tilec's kernel has no promise on n, Triton's is specialized
             for n divisible by 16, so
  vadd16     bench/kernels/vadd_aligned.tile (the sample with
             multiple_of(n, 16): the same promise) vs the same add_kernel;
  softmax    stdlib/softmax.tile softmax_f16, BLOCK 4096, ALIGN 8, as
             tls_softmax specializes a contiguous f16 row of 4096 (8 warps,
             the heuristic's) vs tutorial 02's row kernel (8 warps);
  layernorm  stdlib/layernorm.tile layernorm_f16 (forward), likewise vs
             tutorial 05's forward kernel (8 warps: min(max(4096 / 256, 1), 8));
  matmul     stdlib/matmul.tile matmul_f16, 128x128x32, GROUP_M 8, A_, B_
             and C_LAYOUT 1 (row-major, as the runtime specializes a
             contiguous call), K masked, SIZES_VEC (M, N and K multiples
             of 8, as tls_matmul specializes sizes of whole 16-byte runs),
             4 warps, 4 stages vs
             bench/tt_matmul.py (strides of 1 constexpr, the rest divisible
             by 16, as Triton's launcher specializes; EVEN off; 4 warps, 4 stages).
Triton's integer and pointer arguments get tt.divisibility 16, as its
launcher gives contiguous rows of 4096 (tilec's ALIGN 8 is that promise).

Each compile is split into (a) front end to PTX and (b) PTX to cubin:
  tilec, fresh process: `tilec FILE --kernel K -D... --emit=ptx` and
    `--emit=cubin`, wall time of the process (exec, LLVM's start-up and
    all), median of --runs; its PTX to cubin there is the difference.
  tilec, warm: build/bench/tilec-bench-compile (bench/compile_speed.c) with
    -n --runs, which compiles once cold and then times each compile in the
    same process as libtilec measures it: to PTX = front+IR + LLVM+PTX
    medians, PTX to cubin = the asm median (ptxas started as a process,
    TILEC_ASSEMBLER=ptxas).
  Triton: in this process, after importing Triton and compiling an
    unrelated kernel once; each timed triton.compile gets a fresh, empty
    TRITON_CACHE_DIR (a cold compile, cache writes included), median of
    --runs. The CUDA backend's stage callables (ttir, ttgir, llir, ptx,
    cubin: add_stages in triton/backends/nvidia/compiler.py) are wrapped
    with timers, and ASTSource.make_ir (Python AST to TTIR) too; to PTX =
    the whole call less the cubin stage (which writes the PTX to a file
    and runs Triton's bundled ptxas: -lineinfo -v --regAllocOptLevel=2
    --gpu-name=sm_80).
To tell the assembler from its input, the last table runs each PTX through
each ptxas from here (a subprocess each, median of --runs): tilec's
(/usr/local/cuda/bin/ptxas or the one tilec finds, with tilec's flags
-arch=sm_80 -O3, backend/ptx/ptxas.c) and Triton's (its flags).

Usage (Triton is not a dependency of the project: a throwaway venv):
  python3 -m venv /tmp/sassenv && /tmp/sassenv/bin/pip install triton
  /tmp/sassenv/bin/python bench/compile_vs_triton.py [--build build-rel] [--runs 11] [--quick]
Timings are CPU times of a shared machine: the load average is printed at
the start and the end; compare rows of one run, not runs of two machines.
"""
import argparse
import glob
import importlib.util
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns without it; its default
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCH = "sm_80"

# name: (tilec file, kernel, defines, warps or None for the heuristic, stages or None)
TILEC = {
    "vadd": ("samples/vadd.tile", "vadd", {"BLOCK": 1024}, None, None),
    "vadd16": ("bench/kernels/vadd_aligned.tile", "vadd", {"BLOCK": 1024, "ALIGN": 16}, None, None),
    "softmax": ("stdlib/softmax.tile", "softmax_f16", {"BLOCK": 4096, "ALIGN": 8}, None, None),
    "layernorm": ("stdlib/layernorm.tile", "layernorm_f16", {"BLOCK": 4096, "ALIGN": 8}, None, None),
    "matmul": ("stdlib/matmul.tile", "matmul_f16",
               {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "A_LAYOUT": 1, "B_LAYOUT": 1,
                "C_LAYOUT": 1, "SIZES_VEC": 1}, 4, 4),
}
STAGES = ("make_ir", "ttir", "ttgir", "llir", "ptx", "cubin")  # Triton's, timed
# the warps the heuristic gives these (checked against .maxntid below)
TILEC_WARPS = {"vadd": 4, "vadd16": 4, "softmax": 8, "layernorm": 8, "matmul": 4}
# tilec rows compared with another row's Triton kernel
TRITON_JOB = {"vadd16": "vadd"}


def die(msg):
    sys.exit("compile_vs_triton: " + msg)


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def triton_jobs():
    """name: (fn, signature, constexprs, divisible-by-16 argument names, options)."""
    rows, mm = load("tt_rows"), load("tt_matmul")
    return {
        "vadd": (rows.tt_vadd, {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32",
                                "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 1024},
                 ("x_ptr", "y_ptr", "output_ptr", "n_elements"), {"num_warps": 4}),
        "softmax": (rows.tt_softmax, {"output_ptr": "*fp16", "input_ptr": "*fp16", "input_row_stride": "i32",
                                      "output_row_stride": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr"},
                    {"BLOCK_SIZE": 4096}, ("output_ptr", "input_ptr", "input_row_stride", "output_row_stride",
                                           "n_cols"), {"num_warps": 8}),
        "layernorm": (rows.tt_layernorm, {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32",
                                          "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32",
                                          "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 4096},
                      ("X", "Y", "W", "B", "Mean", "Rstd", "stride", "N"), {"num_warps": 8}),
        "matmul": (mm.tt_matmul, {"a": "*fp16", "b": "*fp16", "c": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                                  "sam": "i32", "sak": "constexpr", "sbk": "i32", "sbn": "constexpr", "scm": "i32",
                                  "scn": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
                                  "BLOCK_K": "constexpr", "GROUP_M": "constexpr", "EVEN": "constexpr"},
                   {"sak": 1, "sbn": 1, "scn": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8,
                    "EVEN": False}, ("a", "b", "c", "M", "N", "K", "sam", "sbk", "scm"),
                   {"num_warps": 4, "num_stages": 4}),
    }


def med(xs):
    return statistics.median(xs)


def wall(cmd, **kw):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    t = (time.perf_counter() - t0) * 1e3
    if r.returncode:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return t


def ptx_lines(text):
    """(all lines, code lines: no blank, comment, .loc/.file or debug-section lines)."""
    lines = text.splitlines()
    code, in_debug = 0, False
    for line in lines:
        s = line.strip()
        if s.startswith(".section") and ".debug" in s:
            in_debug = True
            continue
        if in_debug:
            if s == "}":
                in_debug = False
            continue
        if not s or s.startswith("//") or s.startswith(".loc") or s.startswith(".file"):
            continue
        code += 1
    return len(lines), code


def tool_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    m = re.search(r"release ([\d.]+), (V[\d.]+)", out)
    return "%s (%s)" % (m.group(1), m.group(2)) if m else "?"


# ---- tilec ------------------------------------------------------------------------------------------------------

def tilec_fresh(tilec, name, runs, tmp):
    """(to-PTX ms, to-cubin ms, the PTX text): medians of fresh tilec processes."""
    path, kernel, defs, warps, stages = TILEC[name]
    cmd = [tilec, os.path.join(ROOT, path), "--kernel", kernel, "--arch=" + ARCH]
    for k, v in defs.items():
        cmd += ["-D", "%s=%d" % (k, v)]
    if warps:
        cmd.append("--num-warps=%d" % warps)
    if stages:
        cmd.append("--num-stages=%d" % stages)
    ptx_out, cubin_out = os.path.join(tmp, name + ".tilec.ptx"), os.path.join(tmp, name + ".tilec.cubin")
    env = dict(os.environ, TILEC_ASSEMBLER="ptxas")
    to_ptx, to_cubin = [], []
    for _ in range(runs):  # interleaved, so that a burst of load hits both alike
        to_ptx.append(wall(cmd + ["--emit=ptx", "-o", ptx_out], env=env))
        to_cubin.append(wall(cmd + ["--emit=cubin", "-o", cubin_out], env=env))
    with open(ptx_out) as f:
        ptx = f.read()
    m = re.search(r"\.maxntid (\d+)", ptx)
    if m and int(m.group(1)) != 32 * TILEC_WARPS[name]:
        print("note: tilec gave %s %s threads, not %d warps" % (name, m.group(1), TILEC_WARPS[name]))
    return med(to_ptx), med(to_cubin), ptx


def tilec_warm(bench, name, runs):
    """{'front', 'llvm', 'asm', 'total', 'cold', 'assembler'} from tilec-bench-compile."""
    path, kernel, defs, warps, stages = TILEC[name]
    cmd = [bench, "-n", str(runs), "-a", "ptxas", "-k", kernel, "-A", ARCH]
    for k, v in defs.items():
        cmd += ["-D", "%s=%d" % (k, v)]
    if warps:
        cmd += ["-w", str(warps)]
    if stages:
        cmd += ["-s", str(stages)]
    r = subprocess.run(cmd + [os.path.join(ROOT, path)], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s failed: %s%s" % (" ".join(cmd), r.stdout, r.stderr))
    out = {"assembler": "?"}
    base = os.path.basename(path)
    for line in r.stdout.splitlines():
        if line.startswith("PTX to cubin:"):
            out["assembler"] = line.split(":", 1)[1].strip()
        f = line.split()
        if f and f[0] == base:
            out["cold"], out["front"], out["llvm"] = float(f[2]), float(f[3]), float(f[4])
            out["asm"] = float(f[5]) if f[5] != "no" else None
            out["total"] = float(f[-1])
    if "front" not in out:
        raise RuntimeError("cannot read tilec-bench-compile's output:\n" + r.stdout)
    return out


# ---- Triton -----------------------------------------------------------------------------------------------------

class TritonTimer:
    """Wraps the CUDA backend's stages and ASTSource.make_ir with timers."""

    def __init__(self):
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.compiler import CUDABackend
        from triton.compiler import ASTSource
        from triton.compiler import compiler as tc
        self.triton, self.ASTSource, self.target = triton, ASTSource, GPUTarget("cuda", 80, 32)
        self.times = {}
        timer = self

        def timed(key, fn):
            def run(*a, **kw):
                t0 = time.perf_counter()
                try:
                    return fn(*a, **kw)
                finally:
                    timer.times[key] = timer.times.get(key, 0.0) + (time.perf_counter() - t0) * 1e3
            return run

        orig_add_stages = CUDABackend.add_stages

        def add_stages(self, stages, options, language):
            orig_add_stages(self, stages, options, language)
            for k in list(stages):
                stages[k] = timed(k, stages[k])

        CUDABackend.add_stages = add_stages
        tc.ASTSource.make_ir = timed("make_ir", tc.ASTSource.make_ir)

    def compile(self, fn, sig, consts, div16, options):
        names = list(sig)
        attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in div16}
        src = self.ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
        with tempfile.TemporaryDirectory(prefix="tt-cache-") as cache:
            os.environ["TRITON_CACHE_DIR"] = cache
            self.times = {}
            t0 = time.perf_counter()
            k = self.triton.compile(src, target=self.target, options=options)
            total = (time.perf_counter() - t0) * 1e3
        times = dict(self.times, total=total)
        if "cubin" not in times:
            raise RuntimeError("Triton compiled without running its cubin stage (a cache hit?)")
        return k, times


def warmup(tt):
    import triton
    import triton.language as tl

    @triton.jit
    def scale(x, y, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + o, tl.load(x + o, mask=o < n) * 2.0, mask=o < n)

    tt.compile(scale, {"x": "*fp32", "y": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256}, (),
               {"num_warps": 2})


# ---- main -------------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-rel", help="tilec's build folder (default build-rel)")
    ap.add_argument("--runs", type=int, default=11, help="compiles a median is taken of (default 11)")
    ap.add_argument("--quick", action="store_true", help="3 runs, for a look")
    args = ap.parse_args()
    runs = 3 if args.quick else args.runs
    if runs < 1:
        die("--runs must be at least 1")
    build = args.build if os.path.isabs(args.build) else os.path.join(ROOT, args.build)
    tilec, bench = os.path.join(build, "tilec"), os.path.join(build, "bench", "tilec-bench-compile")
    for p in (tilec, bench):
        if not os.access(p, os.X_OK):
            die("no %s: build tilec first (cmake -B %s -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C %s), "
                "or say where with --build DIR" % (p, args.build, args.build))
    try:
        import triton  # noqa: F401
        from triton.backends.nvidia.compiler import get_ptxas
    except ImportError as e:
        die("Triton is not importable from %s (%s): install it in a throwaway venv, "
            "python3 -m venv /tmp/sassenv && /tmp/sassenv/bin/pip install triton, and run this with "
            "/tmp/sassenv/bin/python" % (sys.executable, e))
    tilec_ptxas = shutil.which("ptxas", path=os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")) \
        or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not os.access(tilec_ptxas, os.X_OK):
        die("no ptxas for tilec (set CUDA_HOME or put ptxas on PATH): the PTX-to-cubin columns need one")
    tt_ptxas = get_ptxas(80)

    print("# tilec vs Triton: compile time for %s, on this machine\n" % ARCH)
    print("- load average at start: %.2f %.2f %.2f (%d CPUs)" % (os.getloadavg() + (os.cpu_count(),)))
    print("- %s, Python %s" % (platform.platform(), platform.python_version()))
    print("- tilec: %s (%s), its ptxas %s %s" % (
        subprocess.run([tilec, "--version"], capture_output=True, text=True).stdout.strip(), tilec,
        tilec_ptxas, tool_version(tilec_ptxas)))
    print("- Triton %s, its bundled ptxas %s %s" % (triton.__version__, tt_ptxas.path, tool_version(tt_ptxas.path)))
    print("- median of %d compiles each\n" % runs)
    sys.stdout.flush()

    tt = TritonTimer()
    t0 = time.perf_counter()
    warmup(tt)
    warm_ms = (time.perf_counter() - t0) * 1e3
    jobs = triton_jobs()
    res = {}
    with tempfile.TemporaryDirectory(prefix="cvt-") as tmp:
        for name in TILEC:
            print("compiling %s ..." % name, file=sys.stderr, flush=True)
            r = res[name] = {}
            r["fresh_ptx"], r["fresh_cubin"], r["tilec_ptx"] = tilec_fresh(tilec, name, runs, tmp)
            r["warm"] = tilec_warm(bench, name, runs)
            fn, sig, consts, div16, options = jobs[TRITON_JOB.get(name, name)]
            stage_runs, first = [], None
            for i in range(runs + 1):  # the first compile of each kernel (Triton parses its source) is reported apart
                k, times = tt.compile(fn, sig, consts, div16, options)
                if i == 0:
                    first = times
                else:
                    stage_runs.append(times)
            r["tt_first"] = first
            r["tt"] = {key: med([t.get(key, 0.0) for t in stage_runs]) for key in stage_runs[0]}
            r["tt_to_ptx"] = med([t["total"] - t["cubin"] for t in stage_runs])
            r["tt_other"] = med([t["total"] - sum(t.get(k, 0.0) for k in STAGES) for t in stage_runs])
            r["triton_ptx"] = k.asm["ptx"]
            # each PTX through each ptxas, from here
            files = {}
            for who in ("tilec", "triton"):
                p = os.path.join(tmp, "%s.%s.in.ptx" % (name, who))
                with open(p, "w") as f:
                    f.write(r[who + "_ptx"])
                files[who] = p
            out = os.path.join(tmp, "x.cubin")
            cmds = {}
            for who, p in files.items():
                cmds["asm_tilec_" + who] = [tilec_ptxas, "-arch=" + ARCH, "-O3", p, "-o", out]
                cmds["asm_tt_" + who] = [tt_ptxas.path, "-lineinfo", "-v", "--regAllocOptLevel=2",
                                         "--gpu-name=" + ARCH, p, "-o", out]
            got = {key: [] for key in cmds}
            for _ in range(runs):  # interleaved, so that a burst of load hits each alike
                for key, cmd in cmds.items():
                    if got[key] is not None:
                        try:
                            got[key].append(wall(cmd))
                        except RuntimeError:  # an older ptxas refusing newer PTX
                            got[key] = None
            for key, ts in got.items():
                r[key] = med(ts) if ts else None

    def ms(x):
        return "n/a" if x is None else ("%.1f" % x if x >= 10 else "%.2f" % x)

    print("Front end to PTX and PTX to cubin, ms (ratio: Triton / tilec warm):\n")
    print("| kernel | tilec to PTX (fresh process) | tilec to PTX (warm) | Triton to PTX | ratio "
          "| tilec PTX->cubin (warm) | Triton PTX->cubin (its stage) | ratio "
          "| total: tilec fresh process / tilec warm / Triton | PTX lines (code): tilec / Triton |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for name, r in res.items():
        w, t = r["warm"], r["tt"]
        warm_ptx = w["front"] + w["llvm"]
        tl_all, tl_code = ptx_lines(r["tilec_ptx"])
        tt_all, tt_code = ptx_lines(r["triton_ptx"])
        print("| %s | %s | %s | %s | %.1fx | %s | %s | %s | %s / %s / %s | %d (%d) / %d (%d) |" % (
            name, ms(r["fresh_ptx"]), ms(warm_ptx), ms(r["tt_to_ptx"]), r["tt_to_ptx"] / warm_ptx,
            ms(w["asm"]), ms(t["cubin"]), "%.1fx" % (t["cubin"] / w["asm"]) if w["asm"] else "n/a",
            ms(r["fresh_cubin"]), ms(w["total"]), ms(t["total"]), tl_all, tl_code, tt_all, tt_code))

    print("\nWhere the time goes, ms (medians; Triton's 'other' = total less its stages: cache key and writes, "
          "metadata, CompiledKernel):\n")
    print("| kernel | tilec front+IR | tilec LLVM+PTX | tilec cold 1st compile | Triton make_ir (AST to TTIR) "
          "| ttir | ttgir | llir | ptx | cubin | other | Triton 1st compile |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in res.items():
        w, t = r["warm"], r["tt"]
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, ms(w["front"]), ms(w["llvm"]), ms(w["cold"]), ms(t.get("make_ir")), ms(t.get("ttir")),
            ms(t.get("ttgir")), ms(t.get("llir")), ms(t.get("ptx")), ms(t["cubin"]), ms(r["tt_other"]),
            ms(r["tt_first"]["total"])))

    print("\nPTX to cubin from this script (a subprocess each, median), ms: each PTX through each ptxas\n")
    print("| kernel | tilec PTX, tilec's ptxas (-arch=%s -O3) | Triton PTX, tilec's ptxas | "
          "tilec PTX, Triton's ptxas (its flags) | Triton PTX, Triton's ptxas |" % ARCH)
    print("|---|---:|---:|---:|---:|")
    for name, r in res.items():
        print("| %s | %s | %s | %s | %s |" % (name, ms(r["asm_tilec_tilec"]), ms(r["asm_tilec_triton"]),
                                             ms(r["asm_tt_tilec"]), ms(r["asm_tt_triton"])))

    print("\n- tilec warm: %s; TILEC_ASSEMBLER=ptxas" % res["vadd"]["warm"]["assembler"])
    print("- Triton's flags: -lineinfo -v --regAllocOptLevel=2 --gpu-name=%s; warm-up compile %.0f ms" % (
        ARCH, warm_ms))
    print("- load average at end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
