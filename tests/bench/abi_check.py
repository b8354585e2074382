#!/usr/bin/env python3
"""Checks bench/gpu_bench.py's use of the C API against the headers, here,
without a GPU, torch or triton (they are stubbed out).

    python3 tests/bench/abi_check.py LAYOUT_PROGRAM ROOT

The bench runs only on the GPU machine, where a mistake costs a GPU
session: a ctypes struct missing a field (C then reads past its end), a
function whose argument types disagree with its prototype (ctypes passes
an int where C reads an int64_t), a call with an argument too few, a
kernel or const parameter that stdlib does not have. This finds those:

1. each ctypes struct against LAYOUT_PROGRAM's report (tests/bench/
   abi_layout.c: C's sizes, field names, offsets and sizes) and the constants
   the bench hard-codes against the headers' enum values;
2. each function declare() types, against its prototype in include/:
   the argument count, each argument's type and `const char *` results;
   and every header function the bench names is declared;
3. tc.entry / tc.workspace calls: argument counts against the prototype;
4. tc.kernel calls with literal file and kernel names: the kernel exists,
   each const parameter named exists, and tc.launcher calls of that kernel
   pass as many arguments as it has run-time parameters.
Prints what it checked; exits 1 on the first list of problems.
"""
import ast
import ctypes
import importlib.util
import os
import re
import subprocess
import sys
import types


class Stub:
    """Anything: attributes, calls and items give more stubs (torch and
    triton at import time: decorators, dtypes, annotations)."""

    def __init__(self, name="stub"):
        self._name = name

    def __getattr__(self, name):
        return Stub(self._name + "." + name)

    def __call__(self, *args, **kwargs):
        return Stub(self._name + "()")

    def __getitem__(self, key):
        return Stub(self._name + "[]")

    def __repr__(self):
        return self._name


def stub_module(name):
    mod = types.ModuleType(name)
    mod.__getattr__ = lambda attr: Stub(name + "." + attr)
    return mod


def import_bench(root):
    torch, triton, tl = stub_module("torch"), stub_module("triton"), stub_module("triton.language")
    for dt in ("float32", "float16", "bfloat16"):  # named, so TLS_DTYPE can be checked
        setattr(torch, dt, "torch." + dt)
    triton.language = tl
    sys.modules.update({"torch": torch, "triton": triton, "triton.language": tl})
    spec = importlib.util.spec_from_file_location("gpu_bench", os.path.join(root, "bench", "gpu_bench.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


# ---- the headers ----------------------------------------------------------------

def prototypes(root):
    """{name: (result type, [argument types])} of the TILEC_API functions."""
    out = {}
    for h in ("tilec.h", "tilec_rt.h", "tilec_stdlib.h"):
        text = open(os.path.join(root, "include", h)).read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        for m in re.finditer(r"TILEC_API\s+([^;(]*?)\b(\w+)\s*\(([^;]*?)\)\s*;", text, re.S):
            params = [p.strip() for p in m.group(3).split(",") if p.strip() and p.strip() != "void"]
            out[m.group(2)] = (" ".join(m.group(1).split()), [param_type(p) for p in params])
    return out


def param_type(param):
    """A parameter's type with its name and `const` removed: 'char *',
    'trt_device **', 'int64_t' (an array parameter becomes a pointer)."""
    p = " ".join(param.replace("const", " ").split())
    array = p.endswith("]")
    p = re.sub(r"\[.*\]$", "", p)
    p = re.sub(r"\s*\b\w+$", "", p)  # the name
    p = p.replace(" *", "*").replace("*", " *").strip()
    return p + " *" if array else p


ENUMS = ("trt_device_kind", "trt_arg_kind", "tls_dtype", "tls_activation", "trt_status", "tilec_emit")


def expected(ctype, bench):
    """The ctypes types that pass ctype correctly."""
    base = ctype.replace(" ", "")
    scalars = {"int64_t": [ctypes.c_int64], "uint64_t": [ctypes.c_uint64], "size_t": [ctypes.c_size_t],
               "int32_t": [ctypes.c_int32], "uint32_t": [ctypes.c_uint32], "int": [ctypes.c_int],
               "float": [ctypes.c_float], "double": [ctypes.c_double], "bool": [ctypes.c_bool],
               "tls_mem": [bench.TlsMem], "trt_buffer": [ctypes.c_uint64], "trt_arg": [bench.Arg],
               "trt_compile_options": [bench.CompileOptions], "tilec_define": [bench.Define],
               "tls_attention_problem": [bench.AttnProblem], "tls_attention_tensor": [bench.AttnTensor],
               "tls_options": [bench.TlsOptions]}
    scalars.update({e: [ctypes.c_int] for e in ENUMS})
    if base.endswith("*"):
        pointee = base[:-1]
        ok = [ctypes.c_void_p]
        if pointee == "char":
            ok.append(ctypes.c_char_p)
        if pointee.endswith("*"):
            ok.append(ctypes.POINTER(ctypes.c_void_p))
        for t in scalars.get(pointee, []):
            ok.append(ctypes.POINTER(t))
        return ok
    return scalars.get(base, [])


def check_functions(bench, protos, problems):
    declared = {}

    class Fn:
        def __init__(self):
            self.argtypes, self.restype = None, ctypes.c_int

    class Lib:
        def __getattr__(self, name):
            return declared.setdefault(name, Fn())

    bench.declare(Lib())
    for name, fn in sorted(declared.items()):
        if name not in protos:
            problems.append("%s: declared, but no header declares it" % name)
            continue
        result, params = protos[name]
        if fn.argtypes is None:
            problems.append("%s: no argtypes" % name)
            continue
        if len(fn.argtypes) != len(params):
            problems.append("%s: %d argtypes, the prototype has %d arguments (%s)" %
                            (name, len(fn.argtypes), len(params), ", ".join(params)))
            continue
        for i, (t, c) in enumerate(zip(fn.argtypes, params)):
            if t not in expected(c, bench):
                problems.append("%s: argument %d is C '%s' but ctypes %s" % (name, i + 1, c, t.__name__))
        if "char *" in result.replace("const", "").replace(" ", "").replace("char*", "char *") and \
                fn.restype is not ctypes.c_char_p:
            problems.append("%s: returns '%s' but restype is %s" % (name, result, fn.restype))
    source = open(bench.__file__).read()
    for name in sorted(set(re.findall(r"\b(?:trt|tls)_\w+", source))):
        if name in protos and name not in declared:
            problems.append("%s: the bench names it, but declare() gives it no types" % name)
    return declared


# ---- structs and constants --------------------------------------------------------

def check_layout(bench, layout_program, problems):
    out = subprocess.run([layout_program], capture_output=True, text=True, check=True).stdout
    structs = {"trt_arg": bench.Arg, "tilec_define": bench.Define, "trt_compile_options": bench.CompileOptions,
               "tls_mem": bench.TlsMem, "tls_attention_problem": bench.AttnProblem,
               "tls_attention_tensor": bench.AttnTensor, "tls_options": bench.TlsOptions}
    nstructs = len(structs)
    enums = {}
    for line in out.splitlines():
        words = line.split()
        if words[0] == "enum":
            enums[words[1]] = int(words[2])
            continue
        name, size, fields = words[1], int(words[2]), dict(f.split("=") for f in words[3:])
        cls = structs.pop(name)
        names = [f[0] for f in cls._fields_]
        if names != list(fields):
            problems.append("%s: ctypes fields %s, C fields %s" % (name, names, list(fields)))
        for f in names:
            if f not in fields:
                continue
            offset, fsize = (int(x) for x in fields[f].split(":"))
            if (getattr(cls, f).offset, getattr(cls, f).size) != (offset, fsize):
                problems.append("%s.%s: ctypes offset %d size %d, C offset %d size %d" %
                                (name, f, getattr(cls, f).offset, getattr(cls, f).size, offset, fsize))
        if ctypes.sizeof(cls) != size:
            problems.append("%s: ctypes size %d, C %d" % (name, ctypes.sizeof(cls), size))
    if structs:
        problems.append("no C layout for %s" % ", ".join(structs))
    want = {"DEVICE_CUDA": "TRT_DEVICE_CUDA", "ARG_BUFFER": "TRT_ARG_BUFFER", "ARG_INT": "TRT_ARG_INT",
            "ARG_FLOAT": "TRT_ARG_FLOAT"}
    for py, c in want.items():
        if getattr(bench, py) != enums[c]:
            problems.append("%s is %d, C's %s %d" % (py, getattr(bench, py), c, enums[c]))
    for dt, c in (("torch.float32", "TLS_F32"), ("torch.float16", "TLS_F16"), ("torch.bfloat16", "TLS_BF16")):
        if bench.TLS_DTYPE.get(dt) != enums[c]:
            problems.append("TLS_DTYPE[%s] is %s, C's %s %d" % (dt, bench.TLS_DTYPE.get(dt), c, enums[c]))
    return nstructs


# ---- calls in the bench's source ------------------------------------------------

def tile_kernel(root, path, name):
    """The parameter list of kernel `name` in the .tile file, as
    [(is_const, param name)], or None."""
    text = open(os.path.join(root, path)).read()
    m = re.search(r"\bkernel\s+%s\s*\(" % re.escape(name), text)
    if not m:
        return None
    depth, i = 1, m.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    params = [p.strip() for p in text[m.end():i - 1].split(",") if p.strip()]
    return [(p.startswith("const "), p.replace("const ", "").split(":")[0].strip()) for p in params]


def literal(node):
    return node.value if isinstance(node, ast.Constant) else None


def check_calls(bench, root, declared, problems):
    tree = ast.parse(open(bench.__file__).read())
    counts = {"entry": 0, "workspace": 0, "kernel": 0, "launcher": 0}
    for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        kernels = {}  # variable -> the kernel's parameters, in source order
        calls = sorted((n for n in ast.walk(func) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
        assigned = {id(n.value): n.targets[0].id for n in ast.walk(func)
                    if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        for call in calls:
            if not isinstance(call.func, ast.Attribute) or call.func.attr not in counts:
                continue
            what, args, where = call.func.attr, call.args, "bench/gpu_bench.py:%d" % call.lineno
            if what in ("entry", "workspace"):
                name = literal(args[0]) if args else None
                if name is None:
                    continue
                if name not in declared:
                    problems.append("%s: %s(%r): not declared" % (where, what, name))
                    continue
                # entry(name, dtype, *args) for C's (dev, dtype, *args, opt); workspace(name,
                # rows, cols) for C's (dev, rows, cols, bytes): C has one more than is passed
                given, want = len(args) - 1, len(declared[name].argtypes) - 2
                if given != want:
                    problems.append("%s: %s(%r) passes %d arguments, C takes %d" % (where, what, name, given, want))
                counts[what] += 1
            elif what == "kernel":
                path, name = (literal(a) for a in (args + [None, None])[:2])
                kernels.pop(assigned.get(id(call)), None)  # the variable holds another kernel now
                if path is None or name is None:
                    continue
                if not os.path.exists(os.path.join(root, path)):
                    problems.append("%s: no file %s" % (where, path))
                    continue
                params = tile_kernel(root, path, name)
                if params is None:
                    problems.append("%s: %s has no kernel %s" % (where, path, name))
                    continue
                consts = {p for c, p in params if c}
                for kw in call.keywords:
                    if kw.arg not in ("num_warps", "num_stages", "source") and kw.arg not in consts:
                        problems.append("%s: kernel %s has no const parameter %s" % (where, name, kw.arg))
                if id(call) in assigned:
                    kernels[assigned[id(call)]] = (name, sum(1 for c, _ in params if not c))
                counts[what] += 1
            elif what == "launcher" and args and isinstance(args[0], ast.Name) and args[0].id in kernels:
                name, want = kernels[args[0].id]
                if any(isinstance(a, ast.Starred) for a in args):
                    continue
                if len(args) - 2 != want:
                    problems.append("%s: launches %s with %d arguments, it has %d" % (where, name, len(args) - 2, want))
                counts[what] += 1
    return counts


def main():
    layout_program, root = sys.argv[1], sys.argv[2]
    bench = import_bench(root)
    problems = []
    protos = prototypes(root)
    nstructs = check_layout(bench, layout_program, problems)
    declared = check_functions(bench, protos, problems)
    counts = check_calls(bench, root, declared, problems)
    print("checked: %d structs and 7 constants against C; %d functions against their prototypes; "
          "calls: %d entry, %d workspace, %d kernel, %d launcher" %
          (nstructs, len(declared), counts["entry"], counts["workspace"], counts["kernel"], counts["launcher"]))
    # a check that found nothing to check proves nothing
    if len(declared) < 10 or min(counts.values()) < 2:
        problems.append("too little found to check: has bench/gpu_bench.py changed shape?")
    for p in problems:
        print("error: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
