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
 * runs on the CPU device captures on the GPU too; on the GPU a capture
 * another device (or other code) opened on the same context refuses them
 * as well (rt_device_ops.capturing_elsewhere). Modules freed while a
 * capture is open are unloaded when the last one ends; trt_close ends
 * the open captures first (rt_end_captures). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

enum { RT_MAX_GRAPH_NODES = 1 << 20 }; /* launches in one graph */

trt_status rt_refuse_capturing(trt_device *d, const char *what) {
    if (d->capturing)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "cannot %s while a stream is capturing a graph (trt_stream_begin_capture): end the capture "
                       "first; inside it, only launches on the capturing stream are recorded",
                       what);
    if (d->ops->capturing_elsewhere && d->ops->capturing_elsewhere(d))
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "cannot %s while a stream of another device on this GPU (or other code in the process) is "
                       "capturing a graph: the GPU's default stream waits for it",
                       what);
    return TRT_OK;
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
    s->next_capture = d->captures;
    d->captures = s;
    d->capturing++;
    return TRT_OK;
}

/* Takes s off the device's list of capturing streams; when it was the
 * last, unloads the modules freed during the captures. */
static void capture_over(trt_device *d, trt_stream *s) {
    for (trt_stream **p = &d->captures; *p; p = &(*p)->next_capture)
        if (*p == s) {
            *p = s->next_capture;
            break;
        }
    s->next_capture = NULL;
    s->capture = NULL;
    if (--d->capturing) return;
    for (trt_module *m = d->deferred, *next; m; m = next) {
        next = m->next_deferred;
        rt_module_unload(m);
    }
    d->deferred = NULL;
}

void rt_end_captures(trt_device *d) {
    d->refs++; /* the graphs' releases must not free d under us */
    while (d->captures) trt_stream_end_capture(d->captures, NULL);
    rt_release(d);
}

trt_status trt_stream_end_capture(trt_stream *s, trt_graph **out) {
    if (out) *out = NULL;
    if (!s) return TRT_ERR_INVALID_ARGUMENT;
    trt_device *d = s->dev;
    trt_graph *g = s->capture;
    if (!g) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "the stream is not capturing a graph");
    if (!out) { /* discarded, and d->err left as it was: it may say why the caller gives up */
        char keep[RT_ERR_MAX];
        memcpy(keep, d->err, sizeof keep);
        if (d->ops->capture_end) d->ops->capture_end(d, s->handle, NULL); /* so that the stream is usable */
        memcpy(d->err, keep, sizeof keep);
        capture_over(d, s);
        trt_graph_destroy(g);
        return TRT_OK;
    }
    /* the driver's capture ends in any case, so that the stream is usable */
    trt_status st = d->ops->capture_end ? d->ops->capture_end(d, s->handle, g->broken ? NULL : &g->exec) : TRT_OK;
    capture_over(d, s); /* after the driver's: it may unload modules freed meanwhile */
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
    if (g->exec) {
        d->ops->graph_destroy(d, g->exec); /* a replay in flight finishes; the driver frees it then */
        /* but a module the graph holds last would be unloaded under that
         * replay's kernels: wait for the GPU first (not while a capture
         * is open, when the unload waits anyway: trt_module_free) */
        bool last = false;
        for (uint32_t i = 0; i < g->nmods; i++) last |= g->mods[i]->refs == 1;
        if (last && !d->capturing) d->ops->sync(d);
    }
    for (uint32_t i = 0; i < g->nmods; i++) trt_module_free(g->mods[i]);
    free(g->mods);
    free(g->nodes);
    free(g);
    rt_release(d);
}
