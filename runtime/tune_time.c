/* tune_time.c - the tuner's measure on the GPU (rt_device_ops.tune_cost
 * NULL): warm-up launches, then `reps` launches each after an L2 flush
 * (a kernel writing a buffer larger than any L2, which the search
 * compiles: tune.c), each timed by the host clock around the launch and a
 * wait for the device; the cost is their median in microseconds. The
 * host clock counts the launch's overhead (a few microseconds) too: it
 * ranks configurations of the same kernel, and every one pays the same.
 * Through the runtime's API and the device's table only, so it is the
 * same code on any device that times. Not run in CI (no GPU there). */
#include <stdlib.h>
#include <time.h>

#include "runtime/internal.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

trt_status rt_tune_time(trt_device *d, const rt_tune_trial *t, double *cost, bool *timed) {
    trt_status st = TRT_OK;
    for (int i = 0; i < t->warmup && st == TRT_OK; i++)
        st = trt_launch(t->k, t->grid[0], t->grid[1], t->grid[2], t->args, t->nargs);
    if (st != TRT_OK) return st;
    if (t->reps < 1) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "no timed runs (reps is %d)", t->reps);
    double *us = malloc((size_t)t->reps * sizeof *us);
    if (!us) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < t->reps && st == TRT_OK; i++) {
        if ((st = t->flush_l2(t->flush_ctx)) != TRT_OK || (st = trt_sync(d)) != TRT_OK) break;
        double t0 = now_us();
        st = trt_launch(t->k, t->grid[0], t->grid[1], t->grid[2], t->args, t->nargs);
        if (st == TRT_OK) st = trt_sync(d);
        us[i] = now_us() - t0;
    }
    if (st == TRT_OK) {
        qsort(us, (size_t)t->reps, sizeof *us, cmp_double);
        *cost = t->reps % 2 ? us[t->reps / 2] : (us[t->reps / 2 - 1] + us[t->reps / 2]) / 2;
        *timed = true;
    }
    free(us);
    return st;
}
