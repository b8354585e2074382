/* difftest.c - differential testing of the code generator: random
 * well-typed kernels (difftest_gen.c) run on the CPU device (the tile-IR
 * interpreter) and the emulator device (the generated NVPTX LLVM IR run on
 * the host) with the same random inputs; their outputs must agree.
 *
 *   difftest [--seed N] [--count N] [--seconds S] [--replay SEED:ITER]
 *            [-o DIR] [--keep] [--self-check] [-v] [--tile FILE] [--print]
 *
 * Everything is deterministic from (seed, iteration): the program, its
 * launch and its inputs, so `--replay SEED:ITER` redoes one exactly.
 * Inputs are random and never all zero; outputs are poisoned (all bits set:
 * NaN for floats, -1 for integers) before each run, except the buffers of
 * atomics, which start from the same random values on both devices.
 *
 * The tolerance rule. Each output element must satisfy |cpu - emu| <= tol,
 * NaN matching NaN; tol 0 means bit for bit. The generator derives tol from
 * the ops that computed the value, carrying for every value a bound `mag`
 * of its magnitude (from the inputs' ranges) and a bound `err` of the
 * difference between the devices:
 *   - integers: err 0 (wrapping, shifts, division, casts are defined);
 *   - floats: err 0 where both devices must round the same way: loads,
 *     stores, casts, select, min/max, neg/abs, floor/ceil, and add, mul,
 *     sums, scans and dots whose every partial result is exact (values
 *     that are multiples of 2^-q with mag * 2^q <= 2^precision, as the
 *     k/8 inputs give): then no reduction order, fma contraction or tf32
 *     rounding can change a bit;
 *   - otherwise err propagates as first-order error analysis (a+b: ea+eb;
 *     a*b: ea|b|+eb|a|+ea*eb; max/min/select: max(ea, eb); sqrt, log, rsqrt
 *     of arguments >= 1: their slopes), plus one ulp of the result's type
 *     at mag for each add that may be contracted into an fma or each op
 *     whose operands already differ;
 *   - a sum, running sum or dot of n terms (a dot's acc one more): n*err of a term plus 2n ulps at
 *     the sum's mag (the interpreter's order and the GPU's tree differ by
 *     at most (n-1) 2^-p sum|x| each way), in the accumulation type (f32
 *     for f16/bf16); f32 dot inputs round to tf32 on both devices, so only
 *     inputs that already differ may round differently (+ 2^-10 |x|);
 *   - exp2, exp, log2, log, sin, cos, rsqrt, sigmoid, tanh, erf (PTX's
 *     .approx instructions on the GPU, exact in the interpreter): 2^-19 of
 *     the result's mag (absolutely for results of magnitude <= 1), plus
 *     the argument's err times the slope, plus an ulp of f16/bf16 where the
 *     f32 result is rounded to them; arguments are scaled into the ranges
 *     where the approximations hold (sin/cos |x| <= 3, exp2 |x| <= 8).
 *     The emulator computes the .approx instructions correctly rounded,
 *     so against it they differ by nothing: the budget is for a GPU.
 * A decision on a float (a comparison, a cast to an integer, floor) is
 * generated only on values with err 0, so it cannot flip. Each output gets
 * the err of the value stored, plus one ulp of its type at its mag where
 * err is not 0.
 *
 * On a mismatch (or an error on one device and not the other, or a program
 * that does not compile or fails on both devices: the generator's bug) it writes
 * DIR/diff-SEED-ITER.tile and a .txt (the launch, the inputs' seed, the
 * first differing elements with both values and the tolerance), goes on,
 * and exits 1 at the end; a mismatch whose message is one of KNOWN (below:
 * reproducers under tests/fuzz/found/ left for another change) is counted
 * as known instead. --keep writes every program. --self-check runs a
 * `--print` writes the programs and their launches without running them;
 * while one runs, DIR/running-SEED.tile holds it, so a crash (LLVM's fatal
 * errors exit the process) leaves it behind. `--replay SEED:ITER --tile FILE` runs FILE's kernel instead of the generated
 * one, with that iteration's buffers and launch: for reducing a mismatch by
 * hand (keep the signature, delete statements). --self-check runs a
 * few programs, then perturbs one output element of the CPU run by more than
 * its tolerance and fails unless the comparison reports it. Exit status: 0
 * all agree, 1 a mismatch, 2 usage. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "difftest.h"
#include "half_float.h"
#include "tilec_rt.h"

enum {
    SELF_CHECK_PROGRAMS = 6,
    MAX_REPORTED = 8,       /* differing elements written per output */
    LAUNCH_TIME_LIMIT = 120, /* seconds: a generated loop never runs long */
    PROGRESS_EVERY = 500,   /* programs between progress lines */
};

/* Mismatches already reduced to a reproducer under tests/fuzz/found/ and
 * left for another change: recognized by the emulator side's message,
 * counted as known, not failed, so a campaign goes on finding new ones.
 * Remove a row when its bug is fixed. */
typedef struct known_issue {
    const char *message, *reproducer;
} known_issue;
static const known_issue KNOWN[] = {
    {NULL, NULL}, /* the end: none now (dot_ieee_expand_dims.tile became test_dot_ieee_expanded) */
};

typedef struct options {
    uint64_t seed, count;
    double seconds;
    bool replay, keep, self_check, verbose, print_only;
    uint64_t replay_iter;
    const char *dir;
    const char *tile; /* --tile: the kernel text to run instead */
} options;

typedef struct devices {
    trt_device *cpu, *emu;
} devices;

/* Buffers of one run: host copies, in kernel order. */
typedef struct host_bufs {
    unsigned char *data[DT_MAX_BUFS];
} host_bufs;

typedef struct stats {
    uint64_t programs, mismatches, invalid, known;
    uint64_t exact_outputs, tol_outputs; /* outputs compared bit for bit, within a tolerance */
    uint64_t differing_elems;            /* elements within tolerance that are not equal */
    double worst;                        /* the largest |cpu - emu| / tolerance seen */
    char worst_at[64];                   /* where */
    uint64_t feature[DT_NFEATURES];
    uint64_t warps[9];
    uint64_t sm90, sm90a; /* programs compiled for sm_90, sm_90a on the emulator */
} stats;

/* ---- values ---------------------------------------------------------------- */
static uint64_t mix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void put_value(dt_type t, void *p, size_t i, double v) {
    switch (t) {
    case DT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case DT_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case DT_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case DT_F16: put_f16(p, i, (float)v); break;
    case DT_BF16: put_bf16(p, i, (float)v); break;
    case DT_F32: put_f32(p, i, (float)v); break;
    default: abort();
    }
}
static int64_t get_int(dt_type t, const void *p, size_t i) {
    switch (t) {
    case DT_I8: return ((const int8_t *)p)[i];
    case DT_I16: return ((const int16_t *)p)[i];
    case DT_I32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}
static double get_float(dt_type t, const void *p, size_t i) {
    return t == DT_F16 ? get_f16(p, i) : t == DT_BF16 ? get_bf16(p, i) : get_f32(p, i);
}

/* A buffer's initial contents: inputs (and atomics' buffers) random by
 * their fill, never all zero; outputs poisoned. */
static void fill(const dt_buf *b, unsigned char *d, uint64_t *rng) {
    size_t sz = dt_type_size(b->type);
    if (b->output && !b->inout) {
        memset(d, 0xff, sz * b->count);
        return;
    }
    for (size_t i = 0; i < b->count; i++) {
        uint64_t x = mix(rng);
        switch (b->fill) {
        case DT_FILL_EXACT: put_value(b->type, d, i, (double)((int)(x % 129) - 64) / 8.0); break;
        case DT_FILL_ROUGH: put_value(b->type, d, i, ((double)(x >> 11) * 0x1p-53 * 8.0 - 4.0)); break;
        case DT_FILL_SMALL: put_value(b->type, d, i, (double)((int)(x % 201) - 100)); break;
        case DT_FILL_FULL: memcpy(d + i * sz, &x, sz); break;
        }
    }
    if (b->count) put_value(b->type, d, 0, dt_is_float(b->type) ? 1.5 : 3); /* never all zero */
}

/* ---- running ----------------------------------------------------------------- */
/* Runs p on dev with the initial contents `init`, reading the outputs back
 * into `out`; false with the error in `why`. */
static bool run_on(trt_device *dev, const dt_program *p, const host_bufs *init, host_bufs *out, char *why,
                   size_t nwhy) {
    trt_compile_options o = {.num_warps = p->num_warps, .arch = p->arch}; /* the CPU device ignores arch */
    trt_module *mod = NULL;
    trt_kernel *k = NULL;
    trt_buffer bufs[DT_MAX_BUFS] = {{0}};
    trt_arg args[DT_MAX_BUFS + 6];
    bool ok = false;
    trt_status st = trt_compile(dev, "difftest.tile", p->src, strlen(p->src), &o, &mod);
    if (st == TRT_OK) st = trt_get_kernel(mod, "dt", &k);
    if (st != TRT_OK) {
        snprintf(why, nwhy, "compile: %s: %s", trt_status_name(st), trt_last_error(dev));
        goto done;
    }
    for (int i = 0; i < p->nbufs; i++) {
        size_t bytes = dt_type_size(p->bufs[i].type) * p->bufs[i].count;
        st = trt_alloc(dev, bytes ? bytes : 1, &bufs[i]);
        if (st == TRT_OK && bytes) st = trt_write(dev, bufs[i], 0, init->data[i], bytes);
        if (st != TRT_OK) {
            snprintf(why, nwhy, "buffer %d: %s: %s", i, trt_status_name(st), trt_last_error(dev));
            goto done;
        }
        args[i] = trt_buf(bufs[i]);
    }
    int n = p->nbufs;
    args[n++] = trt_int(p->nr), args[n++] = trt_int(p->nc), args[n++] = trt_int(p->kt);
    args[n++] = trt_int(p->trips), args[n++] = trt_int(p->k), args[n++] = trt_float(p->s);
    st = trt_launch(k, p->grid[0], p->grid[1], 1, args, (size_t)n);
    if (st == TRT_OK) st = trt_sync(dev);
    if (st != TRT_OK) {
        snprintf(why, nwhy, "launch: %s: %s", trt_status_name(st), trt_last_error(dev));
        goto done;
    }
    for (int i = 0; i < p->nbufs; i++) {
        size_t bytes = dt_type_size(p->bufs[i].type) * p->bufs[i].count;
        if (p->bufs[i].output && bytes && (st = trt_read(dev, bufs[i], 0, out->data[i], bytes)) != TRT_OK) {
            snprintf(why, nwhy, "read: %s: %s", trt_status_name(st), trt_last_error(dev));
            goto done;
        }
    }
    ok = true;
done:
    for (int i = 0; i < p->nbufs; i++)
        if (bufs[i].handle) trt_free(dev, bufs[i]);
    trt_module_free(mod);
    return ok;
}

/* Element i of output b on both devices within its tolerance? */
static bool agree(const dt_buf *b, const void *x, const void *y, size_t i) {
    if (!dt_is_float(b->type)) return get_int(b->type, x, i) == get_int(b->type, y, i);
    double u = get_float(b->type, x, i), v = get_float(b->type, y, i);
    if (isnan(u) || isnan(v)) return isnan(u) && isnan(v);
    if (b->tol == 0) return memcmp((const char *)x + i * dt_type_size(b->type), (const char *)y + i * dt_type_size(b->type),
                                   dt_type_size(b->type)) == 0;
    return u == v || fabs(u - v) <= b->tol;
}

/* Writes the differing elements (up to MAX_REPORTED an output) to f (may
 * be NULL); the number of outputs that differ. */
static int compare(const dt_program *p, const host_bufs *cpu, const host_bufs *emu, FILE *f) {
    int bad = 0;
    for (int i = 0; i < p->nbufs; i++) {
        const dt_buf *b = &p->bufs[i];
        if (!b->output) continue;
        int shown = 0;
        size_t ndiff = 0;
        for (size_t e = 0; e < b->count; e++) {
            if (agree(b, cpu->data[i], emu->data[i], e)) continue;
            ndiff++;
            if (!f || shown++ >= MAX_REPORTED) continue;
            if (dt_is_float(b->type))
                fprintf(f, "%s[%zu] (%s): cpu %.9g emu %.9g (difference %.3g, tolerance %.3g)\n", b->name, e,
                        dt_type_names[b->type], get_float(b->type, cpu->data[i], e), get_float(b->type, emu->data[i], e),
                        fabs(get_float(b->type, cpu->data[i], e) - get_float(b->type, emu->data[i], e)), b->tol);
            else
                fprintf(f, "%s[%zu] (%s): cpu %lld emu %lld (exact)\n", b->name, e, dt_type_names[b->type],
                        (long long)get_int(b->type, cpu->data[i], e), (long long)get_int(b->type, emu->data[i], e));
        }
        if (ndiff) {
            bad++;
            if (f) fprintf(f, "%s: %zu of %zu elements differ\n", b->name, ndiff, b->count);
        }
    }
    return bad;
}

/* How close the agreeing outputs came to their tolerances. */
static void measure(const dt_program *p, uint64_t iter, const host_bufs *cpu, const host_bufs *emu, stats *st) {
    for (int i = 0; i < p->nbufs; i++) {
        const dt_buf *b = &p->bufs[i];
        if (!b->output) continue;
        if (b->tol == 0) {
            st->exact_outputs++;
            continue;
        }
        st->tol_outputs++;
        for (size_t e = 0; e < b->count; e++) {
            double u = get_float(b->type, cpu->data[i], e), v = get_float(b->type, emu->data[i], e);
            if (u == v || isnan(u) || isnan(v)) continue;
            st->differing_elems++;
            if (fabs(u - v) / b->tol > st->worst) {
                st->worst = fabs(u - v) / b->tol;
                snprintf(st->worst_at, sizeof st->worst_at, "%s[%zu] of iteration %llu", b->name, e, (unsigned long long)iter);
            }
        }
    }
}

static void alloc_bufs(const dt_program *p, host_bufs *h) {
    for (int i = 0; i < p->nbufs; i++) {
        h->data[i] = calloc(p->bufs[i].count + 1, dt_type_size(p->bufs[i].type));
        if (!h->data[i]) abort();
    }
}
static void free_bufs(const dt_program *p, host_bufs *h) {
    for (int i = 0; i < p->nbufs; i++) free(h->data[i]);
}

static void describe(FILE *f, const dt_program *p, uint64_t seed, uint64_t iter) {
    fprintf(f, "difftest --replay %llu:%llu\n", (unsigned long long)seed, (unsigned long long)iter);
    fprintf(f, "launch: grid (%u, %u, 1), num_warps %d, %s; NR=%d NC=%d KT=%d T=%d k=%d s=%g\n", p->grid[0], p->grid[1],
            p->num_warps, p->arch, p->nr, p->nc, p->kt, p->trips, p->k, (double)p->s);
    fprintf(f, "inputs: splitmix64 from the program's (seed, iter) as in difftest.c fill(); buffers:\n");
    static const char *const fills[] = {"k/8, |k| <= 64", "uniform [-4, 4]", "integers [-100, 100]", "every bit pattern"};
    for (int i = 0; i < p->nbufs; i++) {
        const dt_buf *b = &p->bufs[i];
        fprintf(f, "  %s: *%s, %zu elements, %s", b->name, dt_type_names[b->type], b->count,
                b->output && !b->inout ? "output (poisoned)" : fills[b->fill]);
        if (b->output) fprintf(f, ", tolerance %.3g", b->tol);
        fprintf(f, "\n");
    }
}

static void save(const options *o, const dt_program *p, uint64_t iter, const char *what, const host_bufs *cpu,
                 const host_bufs *emu) {
    if (!o->dir) return;
    mkdir(o->dir, 0777);
    char path[4096];
    snprintf(path, sizeof path, "%s/diff-%llu-%llu.tile", o->dir, (unsigned long long)o->seed, (unsigned long long)iter);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "difftest: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    fputs(p->src, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/diff-%llu-%llu.txt", o->dir, (unsigned long long)o->seed, (unsigned long long)iter);
    if (!(f = fopen(path, "w"))) return;
    describe(f, p, o->seed, iter);
    fprintf(f, "%s\n", what);
    if (cpu && emu) compare(p, cpu, emu, f);
    fclose(f);
}

/* One iteration: 0 agree, 1 mismatch, 2 the program is invalid. With
 * `perturb`, the CPU's first output is changed first (the self-check):
 * then 1 is the right answer. */
static int one(const options *o, const devices *d, uint64_t iter, stats *st, bool perturb) {
    dt_program p;
    dt_generate(o->seed, iter, &p);
    if (o->tile) {
        FILE *f = fopen(o->tile, "rb");
        if (!f) {
            fprintf(stderr, "difftest: cannot open %s\n", o->tile);
            exit(2);
        }
        free(p.src);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        p.src = calloc((size_t)n + 1, 1);
        if (!p.src || fread(p.src, 1, (size_t)n, f) != (size_t)n) abort();
        fclose(f);
    }
    if (o->print_only) {
        describe(stdout, &p, o->seed, iter);
        fputs(p.src, stdout);
        dt_program_free(&p);
        return 0;
    }
    if (o->dir) { /* a crash (LLVM's fatal errors exit the process) leaves the program it was on */
        mkdir(o->dir, 0777);
        char path[4096];
        snprintf(path, sizeof path, "%s/running-%llu.tile", o->dir, (unsigned long long)o->seed);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "// difftest --replay %llu:%llu\n%s", (unsigned long long)o->seed, (unsigned long long)iter, p.src);
            fclose(f);
        }
    }
    host_bufs init = {{0}}, cpu = {{0}}, emu = {{0}};
    alloc_bufs(&p, &init), alloc_bufs(&p, &cpu), alloc_bufs(&p, &emu);
    uint64_t rng = o->seed * 0x2545f4914f6cdd1dull ^ iter;
    for (int i = 0; i < p.nbufs; i++) fill(&p.bufs[i], init.data[i], &rng);
    char why_c[2048] = "", why_e[2048] = "";
    bool ok_c = run_on(d->cpu, &p, &init, &cpu, why_c, sizeof why_c);
    bool ok_e = run_on(d->emu, &p, &init, &emu, why_e, sizeof why_e);
    int rc = 0;
    char what[4200];
    if (!ok_c || !ok_e) {
        /* the interpreter's front end rejecting it, or both devices
         * failing the launch (an access out of bounds both report), is the
         * generator's bug; the emulator alone failing is the code
         * generator's or the emulator's */
        bool compile = !strncmp(why_c, "compile", 7) || (!ok_e && !strncmp(why_c, "launch", 6) && !strncmp(why_e, "launch", 6));
        snprintf(what, sizeof what, "%s\ncpu: %s\nemu: %s", compile ? "the program is invalid (a generator bug?)"
                 : "a device failed", ok_c ? "ok" : why_c, ok_e ? "ok" : why_e);
        rc = compile ? 2 : 1;
        for (const known_issue *k = KNOWN; k->message && rc == 1; k++)
            if (strstr(why_e, k->message)) {
                if (o->verbose) fprintf(stderr, "difftest: %llu:%llu: known: %s\n", (unsigned long long)o->seed,
                                        (unsigned long long)iter, k->reproducer);
                rc = 3;
            }
    } else {
        if (perturb) {
            for (int i = 0; i < p.nbufs; i++) {
                const dt_buf *b = &p.bufs[i];
                if (!b->output) continue;
                if (dt_is_float(b->type)) {
                    double v = get_float(b->type, cpu.data[i], 0);
                    put_value(b->type, cpu.data[i], 0, isnan(v) ? 1.0 : v + 4 * b->tol + fabs(v) / 16 + 1);
                } else {
                    put_value(b->type, cpu.data[i], 0, (double)(get_int(b->type, cpu.data[i], 0) ^ 1));
                }
                break;
            }
        }
        if (compare(&p, &cpu, &emu, NULL)) {
            snprintf(what, sizeof what, "the outputs differ");
            rc = 1;
        } else if (!perturb) {
            measure(&p, iter, &cpu, &emu, st);
        }
    }
    if (rc == 3) {
        st->known++;
        rc = 0;
    } else if (rc && !perturb) {
        save(o, &p, iter, what, ok_c && ok_e ? &cpu : NULL, ok_c && ok_e ? &emu : NULL);
        fprintf(stderr, "difftest: %llu:%llu: %s\n", (unsigned long long)o->seed, (unsigned long long)iter, what);
        if (o->verbose) compare(&p, &cpu, &emu, stderr);
    } else if (o->keep) {
        save(o, &p, iter, rc ? what : "the outputs agree", ok_c && ok_e ? &cpu : NULL, ok_c && ok_e ? &emu : NULL);
    }
    if (o->verbose && !perturb) {
        describe(stdout, &p, o->seed, iter);
        fputs(p.src, stdout);
    }
    st->programs++;
    st->mismatches += rc == 1;
    st->invalid += rc == 2;
    for (int f = 0; f < DT_NFEATURES; f++) st->feature[f] += (p.features >> f) & 1;
    st->warps[p.num_warps]++;
    st->sm90 += !strcmp(p.arch, "sm_90");
    st->sm90a += !strcmp(p.arch, "sm_90a");
    free_bufs(&p, &init), free_bufs(&p, &cpu), free_bufs(&p, &emu);
    dt_program_free(&p);
    return rc;
}

static int usage(void) {
    fprintf(stderr, "usage: difftest [--seed N] [--count N] [--seconds S] [--replay SEED:ITER] [-o DIR] [--keep] "
                    "[--self-check] [-v] [--tile FILE] [--print]\n");
    return 2;
}

int main(int argc, char **argv) {
    options o = {.seed = 1, .count = 100, .dir = "difftest-out"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--seed") && more) o.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--count") && more) o.count = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--seconds") && more) o.seconds = strtod(argv[++i], NULL);
        else if (!strcmp(a, "-o") && more) o.dir = argv[++i];
        else if (!strcmp(a, "--keep")) o.keep = true;
        else if (!strcmp(a, "--self-check")) o.self_check = true;
        else if (!strcmp(a, "-v")) o.verbose = true;
        else if (!strcmp(a, "--print")) o.print_only = true;
        else if (!strcmp(a, "--tile") && more) o.tile = argv[++i];
        else if (!strcmp(a, "--replay") && more) {
            unsigned long long s, it;
            if (sscanf(argv[++i], "%llu:%llu", &s, &it) != 2) return usage();
            o.seed = s, o.replay_iter = it, o.replay = true;
        } else return usage();
    }
    devices d = {0};
    char why[512];
    if (trt_open(TRT_DEVICE_CPU, &d.cpu, why, sizeof why) != TRT_OK ||
        trt_open(TRT_DEVICE_EMU, &d.emu, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "difftest: cannot open the devices: %s\n", why);
        if (d.cpu) trt_close(d.cpu);
        return 1;
    }
    trt_set_time_limit(d.cpu, LAUNCH_TIME_LIMIT);
    trt_set_time_limit(d.emu, LAUNCH_TIME_LIMIT);
    stats st = {0};
    int failed = 0;
    clock_t t0 = clock();
    time_t start = time(NULL);
    if (o.self_check) {
        /* the comparison must pass unperturbed and fail perturbed */
        for (uint64_t it = 0; it < SELF_CHECK_PROGRAMS; it++) {
            int plain = one(&o, &d, it, &st, false), bent = one(&o, &d, it, &st, true);
            printf("self-check %llu:%llu: unperturbed %s, perturbed %s\n", (unsigned long long)o.seed,
                   (unsigned long long)it, plain ? "DIFFER" : "agree", bent == 1 ? "differ" : "AGREE");
            if (plain || bent != 1) failed = 1;
        }
    } else if (o.replay) {
        failed = one(&o, &d, o.replay_iter, &st, false) != 0;
    } else {
        for (uint64_t it = 0; it < o.count; it++) {
            if (o.seconds > 0 && difftime(time(NULL), start) >= o.seconds) break;
            failed |= one(&o, &d, it, &st, false) != 0;
            if ((it + 1) % PROGRESS_EVERY == 0) { /* a campaign stopped early still says what it reached */
                printf("progress: seed %llu: %llu programs, %llu mismatches, %llu invalid, %llu known, %.1f CPU s\n",
                       (unsigned long long)o.seed, (unsigned long long)st.programs, (unsigned long long)st.mismatches,
                       (unsigned long long)st.invalid, (unsigned long long)st.known,
                       (double)(clock() - t0) / CLOCKS_PER_SEC);
                fflush(stdout);
            }
        }
    }
    double cpu_s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("difftest: seed %llu: %llu programs, %llu mismatches, %llu invalid, %llu known, %.1f CPU s\n",
           (unsigned long long)o.seed, (unsigned long long)st.programs, (unsigned long long)st.mismatches,
           (unsigned long long)st.invalid, (unsigned long long)st.known, cpu_s);
    printf("outputs: %llu bit for bit, %llu within a tolerance (%llu elements not equal, worst |cpu - emu| / "
           "tolerance %.3g%s%s)\n",
           (unsigned long long)st.exact_outputs, (unsigned long long)st.tol_outputs,
           (unsigned long long)st.differing_elems, st.worst, st.worst > 0 ? " at " : "", st.worst_at);
    printf("features:");
    for (int f = 0; f < DT_NFEATURES; f++) printf(" %s %llu", dt_feature_names[f], (unsigned long long)st.feature[f]);
    printf("\nnum_warps: 1: %llu, 2: %llu, 4: %llu, 8: %llu; sm_90: %llu, sm_90a: %llu\n",
           (unsigned long long)st.warps[1], (unsigned long long)st.warps[2], (unsigned long long)st.warps[4],
           (unsigned long long)st.warps[8], (unsigned long long)st.sm90, (unsigned long long)st.sm90a);
    trt_close(d.cpu);
    trt_close(d.emu);
    return failed ? 1 : 0;
}
