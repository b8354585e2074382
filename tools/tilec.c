/* tilec - the command-line compiler: `tilec kernel.tile -o kernel.cubin`.
 *
 * A thin shell over libtilec (include/tilec.h): parse the command line, read
 * the file, call tilec_compile, write the artifact and print diagnostics.
 * Exit status: the tilec_status of the compilation (include/tilec.h): 0
 * success, 1 errors in the input (or it cannot be read, or the output
 * cannot be written), 2 a bad command line or options, 3 a tool missing or
 * failing (the assembler: ptxas or nvJitLink), 4 an internal compiler error. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"
#include "tilec.h"
#include "tools/emit_c.h"

/* a printf format: the defaults and limits come from tilec.h */
static const char usage[] =
    "usage: tilec [options] FILE.tile|FILE.tir\n"
    "\n"
    "Compiles tile-language kernels to a CUDA cubin (or to tile IR, LLVM IR or PTX).\n"
    "\n"
    "options:\n"
    "  -o FILE               write the output to FILE ('-' for stdout); default: a cubin\n"
    "                        goes to the input's name with .cubin, in the current folder\n"
    "                        (k.tile: ./k.cubin), text to stdout\n"
    "  --emit=KIND           tir, llvm, llvm-opt, ptx, cubin or c (default cubin); llvm-opt is\n"
    "                        the LLVM IR after the backend's optimization: what becomes\n"
    "                        PTX, and what the runtime's emulator device runs; c: a C\n"
    "                        header and source (-o PREFIX: PREFIX.h, PREFIX.c) embedding\n"
    "                        a cubin for each --arch (repeat it) and PTX for newer GPUs,\n"
    "                        with a typed launcher per kernel (docs/aot.md)\n"
    "  --ptx-only            with --emit=c: embed only PTX, for the newest --arch (where\n"
    "                        there is no assembler: libnvJitLink or ptxas)\n"
    "  -D NAME=VALUE         value of the const parameter NAME (an integer)\n"
    "  --kernel NAME         compile only the kernel NAME\n"
    "  --arch=sm_XX          target GPU: sm_80, sm_86, sm_87, sm_89, sm_90 or sm_90a\n"
    "                        (default %s)\n"
    "  --num-warps=N         warps per program instance (power of two, 1 to %d); default:\n"
    "                        from the bytes of the largest tile a kernel loads or stores:\n"
    "                        1 below 1 KB, 2 below 2 KB, 4 below 8 KB, 8 below 16 KB,\n"
    "                        16 below 128 KB, else 32\n"
    "  --num-stages=N        software-pipelining depth of loops that name none\n"
    "                        (range(..., num_stages = N)), 1 to %d; default: the compiler's\n"
    "  --warp-specialize=W   sm_90a: auto, on or off: a producer warpgroup for the bulk\n"
    "                        copies of loops that name none (range(..., warp_specialize =\n"
    "                        true/false)); default auto: with 8 warps or more\n"
    "  -O0, -O2              optimization level (default -O2)\n"
    "  -j N, --jobs=N        threads compiling the file's kernels (one LLVM module each;\n"
    "                        ptxas's --split-compile with several kernels), 1 to %d;\n"
    "                        default: one a CPU. The output does not depend on it\n"
    "  --no-asserts          check assert(...) statements but leave them out of the code\n"
    "                        (by default they are compiled in)\n"
    "  --exp2-ftz            exp2, exp, sigmoid and tanh flush f32 results below 2^-126\n"
    "                        to zero (ex2.approx.ftz.f32, as Triton's exp2: 3 instructions\n"
    "                        fewer each); by default they keep them\n"
    "  --lineinfo            each op's .tile line in the LLVM IR and the PTX (.loc), for\n"
    "                        profilers' source view (as nvcc -lineinfo)\n"
    "  --passes=LIST         with --emit=tir: run only these passes (comma list, or none)\n"
    "  --dump-after=PASS     print the tile IR after PASS to stderr\n"
    "  --dump-all            print the tile IR after every pass to stderr\n"
    "  --print-locs          --emit=tir: show source locations as loc(line:col)\n"
    "  --time                print compile phase timings to stderr\n"
    "  --no-sidecar          with -o FILE and --emit=ptx|cubin, do not write FILE.tir\n"
    "                        (the kernels' signatures and IR, which the runtime's\n"
    "                        trt_load reads next to the cubin)\n"
    "  -v, --verbose         print notes (a loop's software pipelining cut to fit\n"
    "                        shared memory) and ptxas's resource report to stderr\n"
    "  --help                show this help\n"
    "  --version             show the version\n"
    "\n"
    "exit status: 0 compiled; 1 errors in the input (or it cannot be read, or the output\n"
    "cannot be written); 2 bad options; 3 a tool missing or failing (the assembler: ptxas,\n"
    "else libnvJitLink in-process; TILEC_ASSEMBLER=auto|ptxas|nvjitlink); 4 an internal\n"
    "compiler error\n";

typedef struct cli {
    tilec_options opt;
    tilec_define defines[TILEC_MAX_DEFINES];
    const char *input, *output;
    bool time;
    bool no_sidecar;
    bool emit_c; /* --emit=c: PREFIX.h and PREFIX.c (tools/emit_c.c) */
    bool ptx_only; /* --ptx-only: with --emit=c, no cubins */
    const char *archs[EMIT_C_MAX_ARCHS];
    size_t narchs;
} cli;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tilec: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see tilec --help)\n");
    va_end(ap);
    return 2;
}

/* "--name=value" or "--name value": returns the value or NULL. */
static const char *take_value(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n] == 0 && *i + 1 < argc) return argv[++*i];
    return NULL;
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out) {
    if (!s || !*s) return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 0);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static int parse_args(cli *c, int argc, char **argv) {
    tilec_options_init(&c->opt);
    c->opt.defines = c->defines;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(usage, TILEC_DEFAULT_ARCH, TILEC_MAX_NUM_WARPS, TILEC_MAX_NUM_STAGES, TILEC_MAX_JOBS);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("tilec %s\n", TILEC_VERSION);
            exit(0);
        } else if (!strcmp(a, "-o")) {
            if (i + 1 >= argc) return usage_error("%s needs a file name", a);
            c->output = argv[++i];
        } else if ((v = take_value(argc, argv, &i, "--emit"))) {
            if (!strcmp(v, "tir")) c->opt.emit = TILEC_EMIT_TIR;
            else if (!strcmp(v, "llvm")) c->opt.emit = TILEC_EMIT_LLVM;
            else if (!strcmp(v, "llvm-opt")) c->opt.emit = TILEC_EMIT_LLVM, c->opt.llvm_optimized = true;
            else if (!strcmp(v, "ptx")) c->opt.emit = TILEC_EMIT_PTX;
            else if (!strcmp(v, "cubin")) c->opt.emit = TILEC_EMIT_CUBIN;
            else if (!strcmp(v, "c")) c->emit_c = true, c->opt.emit = TILEC_EMIT_CUBIN;
            else return usage_error("unknown --emit kind '%s' (expected tir, llvm, llvm-opt, ptx, cubin or c)", v);
        } else if (!strncmp(a, "-D", 2)) {
            const char *def = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!def) return usage_error("%s needs NAME=VALUE", a);
            const char *eq = strchr(def, '=');
            if (!eq || eq == def) return usage_error("-D expects NAME=VALUE, got '%s'", def);
            if (!parse_int(eq + 1, INT64_MIN, INT64_MAX, &n))
                return usage_error("-D value must be an integer: '%s'", def);
            if (c->opt.ndefines == TILEC_MAX_DEFINES)
                return usage_error("too many -D options (limit is %d)", TILEC_MAX_DEFINES);
            /* argv outlives the compilation, so NAME can point into it */
            char *name = strndup(def, (size_t)(eq - def));
            if (!name) abort();
            c->defines[c->opt.ndefines].name = name;
            c->defines[c->opt.ndefines++].value = n;
        } else if ((v = take_value(argc, argv, &i, "--kernel"))) {
            c->opt.kernel = v;
        } else if ((v = take_value(argc, argv, &i, "--arch"))) {
            if (c->narchs == EMIT_C_MAX_ARCHS) return usage_error("too many --arch options (limit is %d)", EMIT_C_MAX_ARCHS);
            c->opt.arch = c->archs[c->narchs++] = v;
        } else if ((v = take_value(argc, argv, &i, "--num-warps"))) {
            if (!parse_int(v, 1, 1 << 20, &n)) return usage_error("--num-warps needs a number, got '%s'", v);
            c->opt.num_warps = (int)n;
        } else if ((v = take_value(argc, argv, &i, "--num-stages"))) {
            if (!parse_int(v, 0, 1 << 20, &n)) return usage_error("--num-stages needs a number, got '%s'", v);
            c->opt.num_stages = (int)n;
        } else if ((v = take_value(argc, argv, &i, "--warp-specialize"))) {
            if (!strcmp(v, "auto")) c->opt.warp_specialize = TILEC_WARP_SPECIALIZE_AUTO;
            else if (!strcmp(v, "on")) c->opt.warp_specialize = TILEC_WARP_SPECIALIZE_ON;
            else if (!strcmp(v, "off")) c->opt.warp_specialize = TILEC_WARP_SPECIALIZE_OFF;
            else return usage_error("--warp-specialize takes auto, on or off, not '%s'", v);
        } else if (!strncmp(a, "-j", 2) || !strncmp(a, "--jobs", 6)) {
            if (a[1] == '-')
                v = take_value(argc, argv, &i, "--jobs");
            else
                v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!parse_int(v, 1, TILEC_MAX_JOBS, &n))
                return usage_error("-j (--jobs) needs a number from 1 to %d, got '%s'", TILEC_MAX_JOBS,
                                   v ? v : "nothing");
            c->opt.jobs = (int)n;
        } else if (!strcmp(a, "-O0") || !strcmp(a, "-O2")) {
            c->opt.opt_level = a[2] - '0';
        } else if ((v = take_value(argc, argv, &i, "--passes"))) {
            c->opt.passes = v;
        } else if ((v = take_value(argc, argv, &i, "--dump-after"))) {
            c->opt.dump_after = v;
        } else if (!strcmp(a, "--dump-all")) {
            c->opt.dump_all = true;
        } else if (!strcmp(a, "--print-locs")) {
            c->opt.print_locs = true;
        } else if (!strcmp(a, "--no-asserts")) {
            c->opt.no_asserts = true;
        } else if (!strcmp(a, "--exp2-ftz")) {
            c->opt.exp2_ftz = true;
        } else if (!strcmp(a, "--lineinfo")) {
            c->opt.line_info = true;
        } else if (!strcmp(a, "--time")) {
            c->time = true;
        } else if (!strcmp(a, "--ptx-only")) {
            c->ptx_only = true;
        } else if (!strcmp(a, "--no-sidecar")) {
            c->no_sidecar = true;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            c->opt.verbose = true;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (c->input) {
            return usage_error("only one input file is accepted (got a second: '%s')", a);
        } else {
            c->input = a;
        }
    }
    if (!c->input) return usage_error("no input file");
    if (c->opt.passes && c->opt.emit != TILEC_EMIT_TIR) return usage_error("--passes needs --emit=tir");
    if (c->narchs > 1 && !c->emit_c) return usage_error("more than one --arch needs --emit=c");
    if (c->ptx_only && !c->emit_c) return usage_error("--ptx-only needs --emit=c");
    if (c->emit_c && c->output && !strcmp(c->output, "-"))
        return usage_error("--emit=c writes two files, PREFIX.h and PREFIX.c: -o PREFIX, not '-'");
    return 0;
}

static char *default_output(const char *input) {
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    const char *dot = strrchr(base, '.');
    size_t n = dot ? (size_t)(dot - base) : strlen(base);
    char *out = malloc(n + 7);
    if (!out) abort();
    memcpy(out, base, n);
    strcpy(out + n, ".cubin");
    return out;
}

static bool write_output(const char *path, const char *data, size_t size) {
    if (!strcmp(path, "-")) return fwrite(data, 1, size, stdout) == size && fflush(stdout) == 0;
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        return false;
    }
    bool ok = fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok) fprintf(stderr, "tilec: error: cannot write '%s'\n", path);
    return ok;
}

static void free_cli(cli *c) {
    for (size_t i = 0; i < c->opt.ndefines; i++) free((char *)c->defines[i].name);
}

int main(int argc, char **argv) {
    cli c;
    memset(&c, 0, sizeof c);
    int rc = parse_args(&c, argc, argv);
    if (rc) {
        free_cli(&c);
        return rc;
    }
    char *text;
    size_t len;
    const char *err;
    if (!tc_read_file(c.input, &text, &len, &err)) {
        fprintf(stderr, "tilec: error: cannot read '%s': %s\n", c.input, err);
        free_cli(&c);
        return 1;
    }
    if (c.emit_c) {
        const char *def_arch[1] = {TILEC_DEFAULT_ARCH};
        char *prefix = NULL;
        if (!c.output) { /* the input's name without its extension, here */
            prefix = default_output(c.input);
            *strrchr(prefix, '.') = 0;
        }
        rc = tilec_emit_c(c.input, text, len, c.output ? c.output : prefix, &c.opt, c.narchs ? c.archs : def_arch,
                          c.narchs ? c.narchs : 1, c.ptx_only);
        free(prefix);
        free(text);
        free_cli(&c);
        return rc;
    }
    tilec_output out;
    c.opt.sidecar = !c.no_sidecar && (c.opt.emit == TILEC_EMIT_PTX || c.opt.emit == TILEC_EMIT_CUBIN);
    tilec_status st = tilec_compile(c.input, text, len, &c.opt, &out);
    free(text);
    fputs(out.dumps, stderr);
    fputs(out.diagnostics, stderr);
    if (c.opt.verbose) fputs(out.info, stderr);
    if (c.time)
        fprintf(stderr, "tilec: time: front end + IR %.2f ms, LLVM codegen + PTX %.2f ms, PTX to cubin %.2f ms\n",
                out.ms_frontend, out.ms_llvm, out.ms_ptxas);
    rc = (int)st; /* the exit status is the status (tilec.h) */
    if (st == TILEC_OK) {
        char *path = NULL;
        if (!c.output) path = c.opt.emit == TILEC_EMIT_CUBIN ? default_output(c.input) : NULL;
        const char *dest = c.output ? c.output : path ? path : "-";
        if (!write_output(dest, out.data, out.size)) rc = 1;
        if (rc == 0 && out.sidecar && strcmp(dest, "-") && strcmp(dest, "/dev/null")) {
            size_t n = strlen(dest);
            char *side = malloc(n + 5);
            if (!side) abort();
            memcpy(side, dest, n);
            strcpy(side + n, ".tir");
            if (!write_output(side, out.sidecar, strlen(out.sidecar))) rc = 1;
            free(side);
        }
        free(path);
    }
    tilec_output_free(&out);
    free_cli(&c);
    return rc;
}
