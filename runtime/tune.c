/* tune.c - trt_tune: the search over a kernel's configurations
 * (docs/tuning.md). In the compiler's library beside trt_compile, since
 * it compiles; the tuning file (tune_file.c) and the measures
 * (tune_cost.c, tune_time.c) are the runtime's own.
 *
 * 1. Every configuration is compiled for the device's target (the GPU's
 *    arch, the emulator's, tile IR on the CPU device), all of them at
 *    once on threads (rt_batch, with the spill checks below); those the
 *    compiler rejects (shared memory over the target's budget, a compile
 *    error) are pruned without running, with the compiler's first line as
 *    the reason.
 *    Where the device's code is GPU code (the GPU's, and the emulator's,
 *    which is what the GPU would run) and ptxas is found, each is also
 *    compiled to a cubin with ptxas -v, and one that spills to local
 *    memory is pruned (a second ptxas run on the GPU: trt_compile keeps
 *    no report; without ptxas the check is skipped, never an error).
 * 2. Each survivor is measured by the device's tune_cost (device.h): on
 *    the GPU timed launches with the L2 flushed between them
 *    (tune_time.c), on the host devices one launch and the stand-in cost
 *    (tune_cost.c). One that fails to launch is pruned with the
 *    runtime's message.
 * 3. The lowest cost wins (the first on a tie) and goes into the caller's
 *    trt_tuning under (kernel, source hash, arch, device, bucket). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/tune.h"

enum {
    TUNE_FLUSH_BYTES = 256 << 20, /* written between timed runs: more than any GPU's L2 (50 MB on an H100) */
    TUNE_FLUSH_BLOCK = 1024,      /* i32 values a program of the flush kernel writes */
    TUNE_MAX_SUMMARY = 4096       /* bytes of the all-pruned message's reasons */
};

static const char flush_src[] = "kernel tilec_l2_flush(p: *i32, n: i32, const BLOCK: i32 = 1024) {\n"
                                "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                                "    store(p + offs, offs, offs < n);\n"
                                "}\n";

/* The L2 flush's kernel and buffer, made at its first use (only the GPU's
 * measure flushes). */
typedef struct flush_state {
    trt_device *d;
    trt_module *mod;
    trt_kernel *k;
    trt_buffer buf;
} flush_state;

static trt_status flush_l2(void *ctx) {
    flush_state *f = ctx;
    trt_status st;
    if (!f->k) {
        tilec_define block = {"BLOCK", TUNE_FLUSH_BLOCK};
        trt_compile_options o = {.defines = &block, .ndefines = 1};
        if ((st = trt_compile(f->d, "<tilec_l2_flush>", flush_src, sizeof flush_src - 1, &o, &f->mod)) != TRT_OK ||
            (st = trt_get_kernel(f->mod, "tilec_l2_flush", &f->k)) != TRT_OK ||
            (st = trt_alloc(f->d, TUNE_FLUSH_BYTES, &f->buf)) != TRT_OK) {
            f->k = NULL;
            return rt_fail(f->d, st, "trt_tune: the L2 flush: %s", f->d->err);
        }
    }
    int64_t n = TUNE_FLUSH_BYTES / 4;
    trt_arg a[] = {trt_buf(f->buf), trt_int(n)};
    return trt_launch(f->k, (uint32_t)(n / TUNE_FLUSH_BLOCK), 1, 1, a, 2);
}

static void flush_free(flush_state *f) {
    if (f->buf.handle) trt_free(f->d, f->buf);
    trt_module_free(f->mod);
}

/* The first line of a message, into a reason. */
static void first_line(char *dst, size_t size, const char *prefix, const char *msg) {
    size_t n = strcspn(msg, "\n");
    snprintf(dst, size, "%s%.*s", prefix, (int)n, msg);
}

static trt_status check_space(trt_device *d, const trt_tune_space *s) {
    if (!s) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_tune: space is NULL");
    if (!s->source || !s->kernel || !s->grid)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_tune: the space's %s is NULL",
                       !s->source ? "source" : !s->kernel ? "kernel" : "grid function");
    if (!s->configs || s->nconfigs < 1 || s->nconfigs > TRT_TUNE_MAX_CONFIGS)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_tune: %zu configurations; give 1 to %d", s->configs ? s->nconfigs : 0,
                       TRT_TUNE_MAX_CONFIGS);
    if (!s->bucket || !*s->bucket || strlen(s->bucket) >= TRT_TUNE_MAX_BUCKET || strpbrk(s->bucket, " \t\n\"#"))
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "trt_tune: the bucket must be 1 to %d bytes without spaces, '\"' or '#' (trt_tune_bucket makes one)",
                       TRT_TUNE_MAX_BUCKET - 1);
    if (s->nargs && !s->args) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_tune: %zu arguments but args is NULL", s->nargs);
    if (s->warmup < 0 || s->reps < 0)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_tune: warmup %d and reps %d must be >= 0 (0: the defaults)",
                       s->warmup, s->reps);
    for (size_t i = 0; i < s->nconfigs; i++)
        if (s->configs[i].ndefines > TRT_TUNE_MAX_DEFINES || (s->configs[i].ndefines && !s->configs[i].defines))
            return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_tune: configuration %zu: %zu consts (limit is %d)", i,
                           s->configs[i].ndefines, TRT_TUNE_MAX_DEFINES);
    return TRT_OK;
}

/* ptxas -v's spills of the configuration's code for arch into *o
 * (spills_checked; pruned with the figures when the kernel spills);
 * nothing where arch is NULL (the device runs tile IR) or ptxas cannot be
 * run. Touches no device: it runs on the batch's threads. */
static void check_spills(const char *arch, const trt_tune_space *s, const trt_tune_config *cfg, trt_tune_outcome *o) {
    if (!arch) return;
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_CUBIN;
    opt.arch = arch;
    opt.kernel = s->kernel;
    opt.verbose = true;
    opt.num_warps = cfg->num_warps;
    opt.num_stages = cfg->num_stages;
    opt.defines = cfg->defines;
    opt.ndefines = cfg->ndefines;
    opt.exp2_ftz = s->exp2_ftz;
    opt.jobs = 1; /* one kernel; the batch's threads are the parallelism */
    tilec_output out;
    if (tilec_compile(s->file ? s->file : "<source>", s->source, s->len, &opt, &out) == TILEC_OK && out.info) {
        o->spills_checked = true;
        /* "N bytes stack frame, S bytes spill stores, L bytes spill loads" */
        for (const char *p = out.info; (p = strstr(p, "bytes stack frame,")) != NULL; p++) {
            const char *line = p;
            while (line > out.info && line[-1] != '\n') line--;
            unsigned frame, stores, loads;
            if (sscanf(line, " %u bytes stack frame, %u bytes spill stores, %u bytes spill loads", &frame, &stores,
                       &loads) == 3 && (stores || loads)) {
                o->pruned = true;
                snprintf(o->reason, sizeof o->reason,
                         "it spills to local memory on %s (ptxas -v: %u bytes spill stores, %u bytes spill loads)", arch,
                         stores, loads);
                break;
            }
        }
    }
    tilec_output_free(&out);
}

/* Every compile of a search, before anything runs: job i < nconfigs is
 * configuration i's module for the device (the batch), job nconfigs + i
 * its spill check into spill[i]. */
typedef struct tune_compiles {
    const trt_tune_space *s;
    rt_batch *batch;
    const char *arch; /* the spill checks' target; NULL: none */
    trt_tune_outcome *spill;
} tune_compiles;

static void compile_job(void *ctx, size_t i) {
    tune_compiles *t = ctx;
    size_t n = t->s->nconfigs;
    if (i < n) rt_batch_work(t->batch, i);
    else check_spills(t->arch, t->s, &t->s->configs[i - n], &t->spill[i - n]);
}

/* Whether the source defines the kernel s names, compiled whole at
 * configuration cfg: asked only when compiling the kernel alone failed,
 * which a kernel missing from the source does too. Unknown (a whole
 * source that does not compile either) counts as present: the
 * configuration is then pruned with its error. */
static bool kernel_missing(trt_device *d, const trt_tune_space *s, const trt_tune_config *cfg) {
    trt_compile_options co = {.num_warps = cfg->num_warps, .num_stages = cfg->num_stages, .defines = cfg->defines,
                              .ndefines = cfg->ndefines, .exp2_ftz = s->exp2_ftz};
    trt_module *m;
    if (trt_compile(d, s->file ? s->file : "<source>", s->source, s->len, &co, &m) != TRT_OK) return false;
    trt_kernel *k;
    bool missing = trt_get_kernel(m, s->kernel, &k) != TRT_OK;
    trt_module_free(m);
    return missing;
}

/* What configuration cfg compiles with: the tuned kernel alone (a file's
 * other kernels would be compiled for each configuration and never
 * launched). */
static trt_compile_options tune_compile_options(const trt_tune_space *s, const trt_tune_config *cfg) {
    return (trt_compile_options){.num_warps = cfg->num_warps, .num_stages = cfg->num_stages,
                                 .defines = cfg->defines, .ndefines = cfg->ndefines, .kernel = s->kernel,
                                 .exp2_ftz = s->exp2_ftz};
}

/* Measures configuration i into *o, compiled by the batch (its module
 * now in the memory cache, or its error in the batch) with its spill
 * check in *spill; a status other than OK only where the search must stop
 * (the kernel is not in the source). */
static trt_status try_config(trt_device *d, const trt_tune_space *s, size_t i, const rt_batch *batch,
                             const trt_tune_outcome *spill, flush_state *fl, trt_tune_outcome *o) {
    const trt_tune_config *cfg = &s->configs[i];
    trt_compile_options co = tune_compile_options(s, cfg);
    memset(o, 0, sizeof *o);
    trt_module *m;
    const char *error = rt_batch_error(batch, i);
    if (error || trt_compile(d, s->file ? s->file : "<source>", s->source, s->len, &co, &m) != TRT_OK) {
        char reason[sizeof o->reason];
        first_line(reason, sizeof reason, "", error ? error : d->err);
        if (kernel_missing(d, s, cfg))
            return rt_fail(d, TRT_ERR_NOT_FOUND, "trt_tune: no kernel '%s' in %s", s->kernel,
                           s->file ? s->file : "the source");
        o->pruned = true;
        memcpy(o->reason, reason, sizeof reason);
        return TRT_OK;
    }
    trt_kernel *k;
    trt_status st = trt_get_kernel(m, s->kernel, &k);
    if (st != TRT_OK) { /* the module of the one kernel asked for: not expected */
        trt_module_free(m);
        return rt_fail(d, TRT_ERR_NOT_FOUND, "trt_tune: no kernel '%s' in %s", s->kernel, s->file ? s->file : "the source");
    }
    o->spills_checked = spill->spills_checked;
    if (spill->pruned) {
        o->pruned = true;
        memcpy(o->reason, spill->reason, sizeof o->reason);
        trt_module_free(m);
        return TRT_OK;
    }
    rt_tune_trial t = {.k = k, .args = s->args, .nargs = s->nargs, .num_warps = cfg->num_warps,
                       .num_stages = cfg->num_stages,
                       .warmup = s->warmup ? s->warmup : TRT_TUNE_DEFAULT_WARMUP,
                       .reps = s->reps ? s->reps : TRT_TUNE_DEFAULT_REPS, .flush_l2 = flush_l2, .flush_ctx = fl};
    t.grid[0] = t.grid[1] = t.grid[2] = 1;
    s->grid(s->user, cfg, t.grid);
    st = d->ops->tune_cost ? d->ops->tune_cost(d, &t, &o->cost, &o->timed) : rt_tune_time(d, &t, &o->cost, &o->timed);
    if (st != TRT_OK) {
        o->pruned = true;
        first_line(o->reason, sizeof o->reason, "the launch failed: ", d->err);
    }
    trt_module_free(m);
    return TRT_OK;
}

trt_status trt_tune(trt_device *d, const trt_tune_space *s, trt_tuning *tuning, trt_tune_outcome *outcomes,
                    size_t *best) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "trt_tune: the device was closed");
    trt_status st = check_space(d, s);
    if (st != TRT_OK) return st;
    st = rt_refuse_capturing(d, "tune (it compiles and launches)");
    if (st != TRT_OK) return st;
    trt_tune_outcome *o = outcomes ? outcomes : calloc(s->nconfigs, sizeof *o);
    if (!o) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    /* compile every configuration at once, then measure one at a time */
    size_t n = s->nconfigs;
    trt_compile_request *reqs = calloc(n, sizeof *reqs);
    trt_compile_options *cos = calloc(n, sizeof *cos);
    trt_tune_outcome *spill = calloc(n, sizeof *spill);
    rt_batch *batch = NULL;
    if (reqs && cos && spill) {
        for (size_t i = 0; i < n; i++) {
            cos[i] = tune_compile_options(s, &s->configs[i]);
            reqs[i] = (trt_compile_request){.filename = s->file ? s->file : "<source>", .source = s->source,
                                            .len = s->len, .options = &cos[i]};
        }
        batch = rt_batch_begin(d, reqs, n);
    }
    if (!batch) {
        free(reqs), free(cos), free(spill);
        if (o != outcomes) free(o);
        return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    tune_compiles tc = {.s = s, .batch = batch, .arch = d->ops->code_arch ? d->ops->code_arch(d) : NULL,
                        .spill = spill};
    rt_parallel_for(tc.arch ? 2 * n : n, compile_job, &tc);
    rt_batch_end(batch);
    flush_state fl = {.d = d};
    size_t win = n;
    for (size_t i = 0; i < n && st == TRT_OK; i++) {
        st = try_config(d, s, i, batch, &spill[i], &fl, &o[i]);
        if (st == TRT_OK && !o[i].pruned && (win == n || o[i].cost < o[win].cost)) win = i;
    }
    flush_free(&fl);
    rt_batch_free(batch);
    free(reqs), free(cos), free(spill);
    if (st == TRT_OK && win == s->nconfigs) {
        char sum[TUNE_MAX_SUMMARY];
        size_t at = 0;
        sum[0] = 0;
        for (size_t i = 0; i < s->nconfigs && at < sizeof sum; i++) {
            int w = snprintf(sum + at, sizeof sum - at, "\n  configuration %zu: %s", i, o[i].reason);
            if (w < 0) break;
            at += (size_t)w;
        }
        st = rt_fail(d, TRT_ERR_COMPILE, "trt_tune: every configuration of %s was pruned:%s", s->kernel, sum);
    }
    if (st == TRT_OK && tuning &&
        !rt_tuning_put(tuning, d, rt_tune_hash(s->source, s->len), s->kernel, s->bucket, &s->configs[win], &o[win]))
        st = rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_tune: %s", trt_tuning_error(tuning));
    if (st == TRT_OK && best) *best = win;
    if (o != outcomes) free(o);
    return st;
}
