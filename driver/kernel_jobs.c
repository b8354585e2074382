/* kernel_jobs.c - a module's kernels to PTX on several threads.
 *
 * LLVM's optimization and PTX emission are most of a compilation to PTX
 * and work on one module at a time, so each kernel gets a module (and an
 * LLVM context, which LLVM asks of concurrent work) of its own; a queue
 * hands kernels to the threads, the calling thread among them, and the
 * PTX modules are merged in the kernels' order. A kernel's PTX does not
 * depend on the other kernels, so the output is the same with one thread
 * or many; codegen only reads the IR (lower/lower.h), and each job writes
 * to its own buffers only. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend/ptx/ptx.h"
#include "driver/kernel_jobs.h"

typedef struct kernel_job {
    const tir_func *f;
    tc_strbuf ptx;
    tc_diag diag;
    kernel_jobs_result result;
    bool over_limit; /* codegen's lower_options.over_limit for this kernel */
} kernel_job;

typedef struct job_queue {
    tir_module *m;
    const lower_options *opt;
    const char *arch;
    kernel_job *jobs;
    size_t n;
    atomic_size_t next;
} job_queue;

int kernel_jobs_threads(int jobs) {
    if (jobs <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = cpus > 0 ? (cpus < TILEC_MAX_JOBS ? (int)cpus : TILEC_MAX_JOBS) : 1;
    }
    return jobs < TILEC_MAX_JOBS ? jobs : TILEC_MAX_JOBS;
}

static void run_job(const job_queue *q, kernel_job *j) {
    LLVMContextRef ctx = LLVMContextCreate();
    lower_options opt = *q->opt; /* the whole struct; a flag of this job's own, not shared among threads */
    opt.over_limit = &j->over_limit;
    LLVMModuleRef lm = lower_codegen(q->m, j->f, ctx, &opt, &j->diag);
    if (!lm)
        j->result = j->over_limit ? KERNEL_JOBS_LIMIT : KERNEL_JOBS_CODEGEN;
    else if (!ptx_emit(lm, q->arch, q->opt->compile.opt_level, &j->ptx, &j->diag))
        j->result = KERNEL_JOBS_PTX;
    if (lm) LLVMDisposeModule(lm);
    LLVMContextDispose(ctx);
}

static void *worker(void *arg) {
    job_queue *q = arg;
    for (size_t i; (i = atomic_fetch_add(&q->next, 1)) < q->n;) run_job(q, &q->jobs[i]);
    return NULL;
}

kernel_jobs_result kernel_jobs_ptx(tir_module *m, const lower_options *opt, const char *arch, tc_strbuf *ptx,
                                   tc_diag *diag) {
    job_queue q = {.m = m, .opt = opt, .arch = arch, .n = m->nfuncs};
    q.jobs = calloc(q.n ? q.n : 1, sizeof *q.jobs);
    if (!q.jobs) {
        tc_error_plain(diag, "out of memory");
        return KERNEL_JOBS_CODEGEN;
    }
    atomic_init(&q.next, 0);
    size_t i = 0;
    for (const tir_func *f = m->funcs; f && i < q.n; f = f->next, i++) {
        q.jobs[i].f = f;
        tc_strbuf_init(&q.jobs[i].ptx);
        tc_diag_init(&q.jobs[i].diag);
        q.jobs[i].diag.echo = diag->echo;
    }
    size_t threads = (size_t)kernel_jobs_threads(opt->compile.jobs);
    if (threads > q.n) threads = q.n;
    pthread_t *tids = threads > 1 ? calloc(threads - 1, sizeof *tids) : NULL;
    size_t started = 0;
    while (tids && started + 1 < threads && !pthread_create(&tids[started], NULL, worker, &q)) started++;
    worker(&q); /* this thread too; with no thread started, it does every kernel */
    for (size_t t = 0; t < started; t++) pthread_join(tids[t], NULL);
    free(tids);

    kernel_jobs_result result = KERNEL_JOBS_OK;
    for (i = 0; i < q.n && result == KERNEL_JOBS_OK; i++) { /* messages as one thread would give them */
        kernel_job *j = &q.jobs[i];
        if (j->diag.out.len) tc_strbuf_putn(&diag->out, j->diag.out.data, j->diag.out.len);
        diag->nerrors += j->diag.nerrors;
        diag->nwarnings += j->diag.nwarnings;
        result = j->result;
    }
    if (result == KERNEL_JOBS_OK) {
        const char **parts = calloc(q.n ? q.n : 1, sizeof *parts);
        size_t *lens = calloc(q.n ? q.n : 1, sizeof *lens);
        for (i = 0; parts && lens && i < q.n; i++) parts[i] = q.jobs[i].ptx.data, lens[i] = q.jobs[i].ptx.len;
        if (!parts || !lens) tc_error_plain(diag, "out of memory");
        if (!parts || !lens || !ptx_merge(parts, lens, q.n, ptx, diag)) result = KERNEL_JOBS_PTX;
        free(parts);
        free(lens);
    }
    for (i = 0; i < q.n; i++) {
        tc_strbuf_free(&q.jobs[i].ptx);
        tc_diag_free(&q.jobs[i].diag);
    }
    free(q.jobs);
    return result;
}
