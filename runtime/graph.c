/* graph.c - graphs: launches recorded on a stream and replayed with one
 * call (include/tilec_rt.h, trt_graph_*).
 *
 * While a stream captures, runtime.c checks each launch on it as usual
 * and hands it here instead of running it: the node keeps the kernel and
 * the caller's arguments (buffer handles, not addresses), and the graph
 * takes a reference to the kernel's module so that it stays loaded. A
 * device that captures by itself (the GPU: CUDA stream capture, then an
 * executable graph) also gets the launch, which its driver records; a
 * replay checks every node's arguments again, so that a buffer freed
 * since is an error before anything runs, then launches the executable
 * graph whole. A device that does not (the CPU and the emulator, whose
 * launches run to completion when called) replays the nodes one by one.
 *
 * What a capture cannot hold is refused while any stream of the device
 * captures (rt_refuse_capturing, called by runtime.c and compile.c): on
 * the GPU the default stream would wait for the capturing one, which
 * breaks the capture; a copy from pageable host memory cannot be a graph
 * node; freeing and loading may wait for the device. Refusing them on
 * every device, not only where the driver would, means a program that
 * runs on the CPU device captures on the GPU too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

enum { RT_MAX_GRAPH_NODES = 1 << 20 }; /* launches in one graph */

trt_status rt_refuse_capturing(trt_device *d, const char *what) {
    if (!d->capturing) return TRT_OK;
    return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                   "cannot %s while a stream is capturing a graph (trt_stream_begin_capture): end the capture "
                   "first; inside it, only launches on the capturing stream are recorded",
                   what);
}

/* Grows an array of n elements of `size` bytes to hold one more. */
static bool grow(void **a, uint32_t n, uint32_t *cap, size_t size) {
    if (n < *cap) return true;
    uint32_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*a, size * c);
    if (!p) return false;
    *a = p;
    *cap = c;
    return true;
}

/* One reference to m, once per graph. */
static bool hold_module(trt_graph *g, trt_module *m) {
    for (uint32_t i = 0; i < g->nmods; i++)
        if (g->mods[i] == m) return true;
    if (!grow((void **)&g->mods, g->nmods, &g->capmods, sizeof *g->mods)) return false;
    g->mods[g->nmods++] = m;
    m->refs++;
    return true;
}

trt_status rt_graph_record(trt_stream *s, trt_kernel *k, const uint32_t grid[3], const trt_arg *args, uint32_t nargs,
                           const rt_arg *ra) {
    trt_device *d = s->dev;
    trt_graph *g = s->capture;
    if (g->nnodes == RT_MAX_GRAPH_NODES)
        return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "too many launches in one graph (limit is %d)", RT_MAX_GRAPH_NODES);
    if (!grow((void **)&g->nodes, g->nnodes, &g->capnodes, sizeof *g->nodes) || !hold_module(g, k->mod))
        return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory recording a launch into a graph");
    if (d->ops->capture_begin) {
        trt_status st = k->mod->ops->launch(k, s->handle, grid, ra, nargs);
        if (st != TRT_OK) { /* the driver's capture is broken too: ending it fails */
            if (!g->broken) snprintf(g->why, sizeof g->why, "%s", d->err);
            g->broken = true;
            return st;
        }
    }
    rt_graph_node *n = &g->nodes[g->nnodes++];
    *n = (rt_graph_node){.k = k, .grid = {grid[0], grid[1], grid[2]}, .nargs = nargs};
    if (nargs) memcpy(n->args, args, sizeof *args * nargs);
    return TRT_OK;
}

trt_status trt_stream_begin_capture(trt_stream *s) {
    if (!s) return TRT_ERR_INVALID_ARGUMENT;
    trt_device *d = s->dev;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (s->capture) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "the stream is capturing a graph already");
    trt_graph *g = calloc(1, sizeof *g);
    if (!g) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    if (d->ops->capture_begin) {
        trt_status st = d->ops->capture_begin(d, s->handle);
        if (st != TRT_OK) {
            free(g);
            return st;
        }
    }
    g->dev = d;
    d->refs++;
    s->capture = g;
    d->capturing++;
    return TRT_OK;
}

trt_status trt_stream_end_capture(trt_stream *s, trt_graph **out) {
    if (out) *out = NULL;
    if (!s) return TRT_ERR_INVALID_ARGUMENT;
    trt_device *d = s->dev;
    trt_graph *g = s->capture;
    if (!g) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "the stream is not capturing a graph");
    s->capture = NULL;
    d->capturing--;
    /* the driver's capture ends in any case, so that the stream is usable */
    trt_status st = d->ops->capture_end ? d->ops->capture_end(d, s->handle, out && !g->broken ? &g->exec : NULL)
                                        : TRT_OK;
    if (!out) { /* discarded, and d->err left as it was: it may say why the caller gives up */
        trt_graph_destroy(g);
        return st;
    }
    if (g->broken)
        st = rt_fail(d, TRT_ERR_LAUNCH, "the capture failed: a launch in it failed on the device: %s", g->why);
    else if (st == TRT_OK && d->closed)
        st = rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (st != TRT_OK) {
        trt_graph_destroy(g);
        return st;
    }
    *out = g;
    return TRT_OK;
}

trt_status trt_graph_launch(trt_graph *g, trt_stream *s) {
    if (!g) return TRT_ERR_INVALID_ARGUMENT;
    trt_device *d = g->dev;
    if (s && s->dev != d)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "the stream belongs to another device than the graph");
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (s && s->capture)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "replaying a graph into a stream that is capturing one");
    trt_status st;
    if (!s && (st = rt_refuse_capturing(d, "replay a graph on the default stream")) != TRT_OK) return st;
    rt_arg ra[RT_MAX_ARGS];
    /* every node checked before any runs: a replay runs whole or not at all */
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const rt_graph_node *n = &g->nodes[i];
        if ((st = rt_check_launch(n->k, n->grid, n->args, n->nargs, ra)) != TRT_OK)
            return rt_fail(d, st, "the graph's launch %u (kernel '%s'): %s", i, n->k->func->name, d->err);
    }
    void *stream = s ? s->handle : NULL;
    if (g->exec) return d->ops->graph_launch(d, g->exec, stream);
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const rt_graph_node *n = &g->nodes[i];
        if ((st = rt_check_launch(n->k, n->grid, n->args, n->nargs, ra)) != TRT_OK ||
            (st = n->k->mod->ops->launch(n->k, stream, n->grid, ra, n->nargs)) != TRT_OK)
            return rt_fail(d, st, "the graph's launch %u (kernel '%s'): %s", i, n->k->func->name, d->err);
    }
    return TRT_OK;
}

size_t trt_graph_num_launches(const trt_graph *g) { return g ? g->nnodes : 0; }

void trt_graph_destroy(trt_graph *g) {
    if (!g) return;
    trt_device *d = g->dev;
    if (g->exec) d->ops->graph_destroy(d, g->exec);
    for (uint32_t i = 0; i < g->nmods; i++) trt_module_free(g->mods[i]);
    free(g->mods);
    free(g->nodes);
    free(g);
    rt_release(d);
}
