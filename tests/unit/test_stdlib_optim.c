/* The training step's entry points (include/tilec_stdlib.h, "training":
 * tls_sum_squares, tls_adamw, tls_add, tls_sum_rows, tls_convert) on one
 * device.
 *
 *   test_stdlib_optim cpu|cuda|emu
 *
 * Every call runs for f32, f16 and bf16 on random non-zero inputs at n 1,
 * 17, 1031 (a prime above the 1024-element block) and 20011 (a prime
 * giving three partial sums of squares of 8192), tensors at byte offsets
 * into their buffers. Every buffer starts poisoned (all bits set: NaN in
 * every type), so an output that is not written shows, and so does a
 * write past a tensor: fetch checks every byte outside it is still
 * poison. Results are compared with float64 references of the stored
 * inputs within the tolerances each test states; the sums of squares and
 * column sums must also give the same bits on a second run; conversions
 * are exact (round to nearest even, ties included). Misuse is a status, a
 * message and untouched outputs. The whole program takes about a second
 * on the emulator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_stdlib.h"
#include "stdlib_test_main.h"
#include "half_float.h"

static trt_device *dev;

#define OK(call)                                                                                        \
    do {                                                                                                \
        trt_status st_ = (call);                                                                        \
        if (st_ != TRT_OK) fail_msg("%s: %s: %s", #call, trt_status_name(st_), trt_last_error(dev)); \
    } while (0)

/* ---- storage types and poisoned tensors ------------------------------------------ */

typedef struct dtype {
    tls_dtype id;
    const char *name;
    size_t size;
    void (*put)(void *p, size_t i, float v);
    float (*get)(const void *p, size_t i);
    double tol; /* half a unit in the last place, relative: the storage's rounding */
} dtype;
static const dtype dtypes[] = {{TLS_F32, "f32", 4, put_f32, get_f32, 0x1p-24},
                               {TLS_F16, "f16", 2, put_f16, get_f16, 0x1p-11},
                               {TLS_BF16, "bf16", 2, put_bf16, get_bf16, 0x1p-8}};
static const dtype *const f32_type = &dtypes[0];

/* Random values with a fractional part, both signs, never all zero: about
 * [-1, 1] times `scale`. */
static float rnd(float scale) { return (float)(rand() % 2000001 - 1000000) / 1000000.0f * scale + 0x1p-10f * scale; }

/* rows x cols elements, rows `stride` apart, `off` bytes into a buffer of
 * exactly off + rows * stride elements; host holds the whole buffer. */
typedef struct tensor {
    const dtype *dt;
    int64_t rows, cols, stride;
    size_t off, bytes;
    unsigned char *host;
    trt_buffer buf;
} tensor;

static tensor make(const dtype *dt, int64_t rows, int64_t cols, int64_t stride, size_t off) {
    tensor t = {dt, rows, cols, stride, off, off + (size_t)(rows * stride) * dt->size, NULL, {0}};
    t.host = malloc(t.bytes);
    assert_non_null(t.host);
    memset(t.host, 0xff, t.bytes); /* NaN in every type */
    return t;
}
static tensor vec(const dtype *dt, int64_t n, size_t off) { return make(dt, 1, n, n, off); }
static size_t ix(const tensor *t, int64_t r, int64_t i) { return (size_t)(r * t->stride + i); }
static float get2(const tensor *t, int64_t r, int64_t i) { return t->dt->get(t->host + t->off, ix(t, r, i)); }
static void put2(tensor *t, int64_t r, int64_t i, float v) { t->dt->put(t->host + t->off, ix(t, r, i), v); }
static float get(const tensor *t, int64_t i) { return get2(t, 0, i); }
static void put(tensor *t, int64_t i, float v) { put2(t, 0, i, v); }
static tls_mem mem(const tensor *t) { return tls_mem_at(t->buf, t->off); }

static void send(tensor *t) {
    OK(trt_alloc(dev, t->bytes, &t->buf));
    OK(trt_write(dev, t->buf, 0, t->host, t->bytes));
}
/* Reads the buffer back; everything outside the tensor must still be
 * poison. */
static void fetch(tensor *t, const char *what) {
    OK(trt_sync(dev));
    OK(trt_read(dev, t->buf, 0, t->host, t->bytes));
    for (size_t b = 0; b < t->bytes; b++) {
        bool inside = false;
        if (b >= t->off) {
            size_t e = (b - t->off) / t->dt->size;
            inside = (int64_t)(e % (size_t)t->stride) < t->cols;
        }
        if (!inside && t->host[b] != 0xff)
            fail_msg("%s: byte %zu of its buffer, outside the tensor, was written (%#x) on %s", what, b, t->host[b],
                     trt_device_name(dev));
    }
}
static void drop(tensor *t) {
    OK(trt_free(dev, t->buf));
    free(t->host);
}
/* That t's bytes on the device are still `want` (an input, or an output of
 * a refused call). */
static void unchanged(tensor *t, const unsigned char *want, const char *what) {
    fetch(t, what);
    if (memcmp(t->host, want, t->bytes)) fail_msg("%s was written on %s", what, trt_device_name(dev));
}

static const int64_t sizes[] = {1, 17, 1031, 20011};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };
static size_t offset_of(size_t s) { return 16 * (s % 3); }

/* ---- the sum of squares ------------------------------------------------------------ */

/* out = sum x^2 against float64. Tolerance 1e-5 relative: each of 1024
 * lanes adds at most 8 squares, a tree sums the lanes, one program the
 * partials (about 20 f32 roundings deep, 2^-24 each). Then: the same bits
 * again (into another out, through a workspace of other contents); and
 * with accumulate, out += the squares of a second tensor. */
static void test_sum_squares(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < NSIZES; s++) {
            const dtype *dt = &dtypes[t];
            int64_t n = sizes[s];
            char what[64];
            snprintf(what, sizeof what, "sum_squares %s n=%lld", dt->name, (long long)n);
            size_t ws_bytes;
            OK(tls_sum_squares_workspace(dev, n, &ws_bytes));
            assert_int_equal(ws_bytes, (4 * (size_t)((n + 8191) / 8192) + 15) / 16 * 16); /* 16 at least */
            tensor x = vec(dt, n, offset_of(s)), y = vec(dt, n, 16), out = vec(f32_type, 1, 16),
                   out2 = vec(f32_type, 1, 0), ws = vec(f32_type, (int64_t)ws_bytes / 4, 32);
            double want_x = 0, want_y = 0;
            for (int64_t i = 0; i < n; i++) {
                put(&x, i, rnd(2)), put(&y, i, rnd(3));
                want_x += (double)get(&x, i) * get(&x, i), want_y += (double)get(&y, i) * get(&y, i);
            }
            send(&x), send(&y), send(&out), send(&out2), send(&ws);
            tls_mem W = mem(&ws);
            OK(tls_sum_squares(dev, dt->id, mem(&x), n, mem(&out), false, W, NULL));
            fetch(&out, what), fetch(&ws, what);
            for (size_t b = 0; n <= 8192 && b < ws.bytes; b++) /* one chunk: its program writes out itself */
                if (ws.host[b] != 0xff) fail_msg("%s: the workspace was written (byte %zu)", what, b);
            double got = get(&out, 0);
            if (!(fabs(got - want_x) <= 1e-5 * want_x))
                fail_msg("%s: %.9g, want %.9g on %s", what, got, want_x, trt_device_name(dev));
            /* the same bits again, the workspace holding the last run's partials */
            OK(tls_sum_squares(dev, dt->id, mem(&x), n, mem(&out2), false, W, NULL));
            fetch(&out2, what);
            if (memcmp(out.host + out.off, out2.host + out2.off, 4))
                fail_msg("%s: %.9g on a second run, %.9g on the first, on %s", what, (double)get(&out2, 0), got,
                         trt_device_name(dev));
            /* out += the squares of y */
            OK(tls_sum_squares(dev, dt->id, mem(&y), n, mem(&out), true, W, NULL));
            fetch(&out, what);
            got = get(&out, 0);
            if (!(fabs(got - (want_x + want_y)) <= 1e-5 * (want_x + want_y)))
                fail_msg("%s: accumulated %.9g, want %.9g on %s", what, got, want_x + want_y, trt_device_name(dev));
            drop(&x), drop(&y), drop(&out), drop(&out2), drop(&ws);
        }
}

/* ---- AdamW ------------------------------------------------------------------------- */

/* A float64 AdamW (torch.optim.AdamW's formulas) on the stored gradients. */
typedef struct adamw_ref {
    double *p, *m, *v;
} adamw_ref;

/* One step over n parameters; clip_sumsq: the gradients' sum of squares
 * when h->max_norm > 0. */
static void adamw_ref_step(adamw_ref *r, const tensor *g, int64_t n, const tls_adamw_params *h, double sumsq) {
    double scale = h->grad_scale;
    if (h->max_norm > 0) scale *= fmin(1.0, h->max_norm / (h->grad_scale * sqrt(sumsq)));
    double bc1 = 1 - pow(h->beta1, (double)h->step), bc2 = 1 - pow(h->beta2, (double)h->step);
    for (int64_t i = 0; i < n; i++) {
        double gi = get(g, i) * scale;
        r->m[i] = h->beta1 * r->m[i] + (1 - (double)h->beta1) * gi;
        r->v[i] = h->beta2 * r->v[i] + (1 - (double)h->beta2) * gi * gi;
        double mh = r->m[i] / bc1, vh = r->v[i] / bc2;
        r->p[i] -= (double)h->lr * (h->weight_decay * r->p[i] + mh / (sqrt(vh) + h->eps));
    }
}

/* STEPS steps of AdamW over n parameters in dt's gradients, against the
 * float64 reference: m to 1e-5 relative to max |m| (the f32 moments
 * accumulate a rounding a step, the clip factor one more from the f32
 * sum of squares), v likewise to max |v|, p to 1e-5 (|p| + lr * step):
 * the update, lr m_hat / (sqrt(v_hat) + eps), is about lr a step, known
 * to the moments' relative error. p_copy is p rounded to dt, exactly;
 * the gradients and grad_sumsq are not written. */
enum { STEPS = 4 };
static void run_adamw(const dtype *dt, int64_t n, size_t s, tls_adamw_params h, bool copy, const char *label) {
    char what[96];
    snprintf(what, sizeof what, "adamw %s n=%lld (%s)", dt->name, (long long)n, label);
    tensor p = vec(f32_type, n, offset_of(s)), g = vec(dt, n, 16), m = vec(f32_type, n, 0), v = vec(f32_type, n, 32),
           pc = vec(dt, n, offset_of(s + 1)), ss = vec(f32_type, 1, 0);
    size_t ws_bytes;
    OK(tls_sum_squares_workspace(dev, n, &ws_bytes));
    tensor ws = vec(f32_type, (int64_t)ws_bytes / 4, 0);
    adamw_ref r = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double)),
                   calloc((size_t)n, sizeof(double))};
    for (int64_t i = 0; i < n; i++) put(&p, i, rnd(1)), r.p[i] = get(&p, i), put(&m, i, 0), put(&v, i, 0);
    send(&p), send(&g), send(&m), send(&v), send(&pc), send(&ss), send(&ws);
    for (int step = 1; step <= STEPS; step++) {
        h.step = step;
        double sumsq = 0;
        for (int64_t i = 0; i < n; i++) put(&g, i, rnd(step % 2 ? 1 : 0.25f)), sumsq += (double)get(&g, i) * get(&g, i);
        OK(trt_write(dev, g.buf, 0, g.host, g.bytes));
        if (h.max_norm > 0)
            OK(tls_sum_squares(dev, dt->id, mem(&g), n, mem(&ss), false, mem(&ws), NULL));
        unsigned char *ss_before = NULL;
        if (h.max_norm > 0) {
            fetch(&ss, what);
            ss_before = malloc(ss.bytes);
            memcpy(ss_before, ss.host, ss.bytes);
        }
        unsigned char *g_before = malloc(g.bytes);
        memcpy(g_before, g.host, g.bytes);
        OK(tls_adamw(dev, dt->id, mem(&p), mem(&g), mem(&m), mem(&v), copy ? mem(&pc) : tls_mem_of((trt_buffer){0}),
                     h.max_norm > 0 ? mem(&ss) : tls_mem_of((trt_buffer){0}), n, &h, NULL));
        adamw_ref_step(&r, &g, n, &h, sumsq);
        fetch(&p, what), fetch(&m, what), fetch(&v, what), fetch(&pc, what);
        unchanged(&g, g_before, "adamw's g");
        free(g_before);
        if (ss_before) unchanged(&ss, ss_before, "adamw's grad_sumsq"), free(ss_before);
        double mmax = 0, vmax = 0;
        for (int64_t i = 0; i < n; i++) mmax = fmax(mmax, fabs(r.m[i])), vmax = fmax(vmax, r.v[i]);
        for (int64_t i = 0; i < n; i++) {
            double gm = get(&m, i), gv = get(&v, i), gp = get(&p, i);
            double tp = 1e-5 * (fabs(r.p[i]) + h.lr * step);
            if (!(fabs(gm - r.m[i]) <= 1e-5 * mmax) || !(fabs(gv - r.v[i]) <= 1e-5 * vmax) ||
                !(fabs(gp - r.p[i]) <= tp))
                fail_msg("%s: step %d [%lld]: p %.9g m %.9g v %.9g, want %.9g %.9g %.9g on %s", what, step,
                         (long long)i, gp, gm, gv, r.p[i], r.m[i], r.v[i], trt_device_name(dev));
            if (copy) {
                unsigned char want[4];
                dt->put(want, 0, get(&p, i));
                if (memcmp(want, pc.host + pc.off + (size_t)i * dt->size, dt->size))
                    fail_msg("%s: step %d: p_copy[%lld] = %.9g is not p = %.9g rounded to %s on %s", what, step,
                             (long long)i, (double)get(&pc, i), gp, dt->name, trt_device_name(dev));
            }
        }
        if (!copy) /* never written */
            for (size_t b = 0; b < pc.bytes; b++)
                if (pc.host[b] != 0xff) fail_msg("%s: p_copy written without being asked for", what);
    }
    free(r.p), free(r.m), free(r.v);
    drop(&p), drop(&g), drop(&m), drop(&v), drop(&pc), drop(&ss), drop(&ws);
}

static void test_adamw(void **state) {
    (void)state;
    const tls_adamw_params plain = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                                    .grad_scale = 1};
    tls_adamw_params clipped = plain, loose = plain;
    clipped.grad_scale = 0.5f, clipped.max_norm = 0.5f; /* the norm is about 0.3 sqrt(n): clips from n 17 */
    loose.weight_decay = 0, loose.max_norm = 1e6f, loose.beta1 = 0; /* clipping on, never scaling */
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < NSIZES; s++) {
            run_adamw(&dtypes[t], sizes[s], s, plain, false, "weight decay, no clipping");
            run_adamw(&dtypes[t], sizes[s], s, clipped, true, "grad_scale 0.5, clipped to 0.5, p_copy");
            run_adamw(&dtypes[t], sizes[s], s, loose, s % 2, "beta1 0, no decay, max_norm above the norm");
        }
}

/* A training step's optimizer captured in a graph and replayed (each
 * step's gradients, then its lr and bias corrections through
 * tls_adamw_params.schedule, written before the replay), against the
 * same steps called one by one with lr and step as arguments: the same
 * bits, for every dtype, with a warmup's lr changing each step. The
 * graph holds tls_sum_squares (two launches past 8192 values) and
 * tls_adamw, both on the capturing stream. */
enum { GRAPH_N = 20011, GRAPH_STEPS = 3 };
static void test_adamw_schedule_in_a_graph(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        char what[64];
        snprintf(what, sizeof what, "adamw in a graph, %s", dt->name);
        int64_t n = GRAPH_N;
        size_t ws_bytes;
        OK(tls_sum_squares_workspace(dev, n, &ws_bytes));
        /* [0]: called one by one; [1]: the graph's */
        tensor p[2], g[2], m[2], v[2], pc[2], ss[2], ws[2];
        tensor sched = vec(f32_type, TLS_ADAMW_SCHEDULE, 0);
        send(&sched);
        for (int k = 0; k < 2; k++) {
            p[k] = vec(f32_type, n, 0), g[k] = vec(dt, n, 16), m[k] = vec(f32_type, n, 0), v[k] = vec(f32_type, n, 0);
            pc[k] = vec(dt, n, 0), ss[k] = vec(f32_type, 1, 0), ws[k] = vec(f32_type, (int64_t)ws_bytes / 4, 0);
            for (int64_t i = 0; i < n; i++) put(&p[k], i, k ? get(&p[0], i) : rnd(1)), put(&m[k], i, 0), put(&v[k], i, 0);
            send(&p[k]), send(&g[k]), send(&m[k]), send(&v[k]), send(&pc[k]), send(&ss[k]), send(&ws[k]);
        }
        tls_adamw_params h = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                              .grad_scale = 1, .max_norm = 1, .step = 1};
        trt_stream *s;
        OK(trt_stream_create(dev, &s));
        tls_options on_s = {.stream = s};
        trt_graph *graph = NULL;
        for (int step = 1; step <= GRAPH_STEPS; step++) {
            h.step = step;
            h.lr = 1e-2f * (float)step / GRAPH_STEPS; /* a warmup */
            for (int64_t i = 0; i < n; i++) put(&g[0], i, rnd(step % 2 ? 1 : 0.25f));
            OK(trt_write(dev, g[0].buf, 0, g[0].host, g[0].bytes));
            tls_adamw_params eager = h;
            OK(tls_sum_squares(dev, dt->id, mem(&g[0]), n, mem(&ss[0]), false, mem(&ws[0]), NULL));
            OK(tls_adamw(dev, dt->id, mem(&p[0]), mem(&g[0]), mem(&m[0]), mem(&v[0]), mem(&pc[0]), mem(&ss[0]), n,
                         &eager, NULL));
            if (!graph) { /* the kernels ran once above: nothing to compile while capturing */
                tls_adamw_params captured = h;
                captured.schedule = mem(&sched);
                OK(trt_stream_begin_capture(s));
                OK(tls_sum_squares(dev, dt->id, mem(&g[1]), n, mem(&ss[1]), false, mem(&ws[1]), &on_s));
                OK(tls_adamw(dev, dt->id, mem(&p[1]), mem(&g[1]), mem(&m[1]), mem(&v[1]), mem(&pc[1]), mem(&ss[1]),
                             n, &captured, &on_s));
                OK(trt_stream_end_capture(s, &graph));
                assert_int_equal(trt_graph_num_launches(graph), 3);
            }
            float sv[TLS_ADAMW_SCHEDULE];
            OK(tls_adamw_schedule(dev, &h, sv));
            OK(trt_write_async(s, g[1].buf, 0, g[0].host, g[0].bytes));
            OK(trt_write_async(s, sched.buf, 0, sv, sizeof sv));
            OK(trt_graph_launch(graph, s));
            OK(trt_stream_sync(s));
            tensor *outs[][2] = {{&p[0], &p[1]}, {&m[0], &m[1]}, {&v[0], &v[1]}, {&pc[0], &pc[1]}};
            const char *names[] = {"p", "m", "v", "p_copy"};
            for (size_t o = 0; o < 4; o++) {
                fetch(outs[o][0], what), fetch(outs[o][1], what);
                if (memcmp(outs[o][0]->host, outs[o][1]->host, outs[o][0]->bytes))
                    fail_msg("%s: step %d: %s differs from the calls' one by one on %s", what, step, names[o],
                             trt_device_name(dev));
            }
        }
        trt_graph_destroy(graph);
        trt_stream_destroy(s);
        for (int k = 0; k < 2; k++)
            drop(&p[k]), drop(&g[k]), drop(&m[k]), drop(&v[k]), drop(&pc[k]), drop(&ss[k]), drop(&ws[k]);
        drop(&sched);
    }
}

/* ---- y = value ------------------------------------------------------------------------ */

/* y = value rounded to the storage type, exactly, and nothing outside y
 * written; values of both signs, one rounding inexact in f16 and bf16. */
static void test_fill(void **state) {
    (void)state;
    const float values[] = {0.0f, -1.5f, 1.0f / 3.0f};
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < NSIZES; s++)
            for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
                const dtype *dt = &dtypes[t];
                int64_t n = sizes[s];
                char what[64];
                snprintf(what, sizeof what, "fill %s n=%lld value %g", dt->name, (long long)n, (double)values[k]);
                tensor y = vec(dt, n, offset_of(s));
                send(&y);
                OK(tls_fill(dev, dt->id, mem(&y), n, values[k], NULL));
                fetch(&y, what);
                unsigned char want[4];
                dt->put(want, 0, values[k]);
                for (int64_t i = 0; i < n; i++)
                    if (memcmp(y.host + y.off + (size_t)i * dt->size, want, dt->size))
                        fail_msg("%s: y[%lld] = %.9g, want %.9g on %s", what, (long long)i, (double)get(&y, i),
                                 (double)dt->get(want, 0), trt_device_name(dev));
                drop(&y);
            }
}

/* ---- y = a + b ------------------------------------------------------------------------- */

/* Against the float64 sum: within the storage's rounding of it (one f32
 * add, exact for f16 and bf16 inputs but for the far-apart, then one
 * rounding to storage). Into a third tensor, then in place into a, then
 * into b. */
static void test_add(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < NSIZES; s++) {
            const dtype *dt = &dtypes[t];
            int64_t n = sizes[s];
            char what[64];
            snprintf(what, sizeof what, "add %s n=%lld", dt->name, (long long)n);
            tensor a = vec(dt, n, offset_of(s)), b = vec(dt, n, 16), y = vec(dt, n, offset_of(s + 2));
            double *want = malloc(sizeof(double) * (size_t)n);
            for (int64_t i = 0; i < n; i++) put(&a, i, rnd(100)), put(&b, i, rnd(i % 3 ? 1 : 1000));
            send(&a), send(&b), send(&y);
            for (int round = 0; round < 3; round++) {
                tls_mem Y = round == 0 ? mem(&y) : round == 1 ? mem(&a) : mem(&b);
                tensor *out = round == 0 ? &y : round == 1 ? &a : &b;
                for (int64_t i = 0; i < n; i++) want[i] = (double)get(&a, i) + get(&b, i);
                OK(tls_add(dev, dt->id, mem(&a), mem(&b), Y, n, NULL));
                fetch(out, what);
                for (int64_t i = 0; i < n; i++) {
                    double got = get(out, i);
                    if (!(fabs(got - want[i]) <= (dt->tol + 0x1p-24) * fabs(want[i])))
                        fail_msg("%s (%s): y[%lld] = %.9g, want %.9g on %s", what,
                                 round ? (round == 1 ? "in place into a" : "in place into b") : "apart", (long long)i,
                                 got, want[i], trt_device_name(dev));
                }
            }
            free(want);
            drop(&a), drop(&b), drop(&y);
        }
}

/* ---- column sums ------------------------------------------------------------------------- */

/* rows x cols at a stride wider than the row (the padding poisoned: a
 * kernel that read it would give NaN), against float64: within the
 * storage's rounding of the result plus 1e-6 of the sum of |x| (f32
 * additions, at most rows / 64 + 6 deep). Then the same bits again, and
 * accumulate into an out holding other values. */
static void run_sum_rows(const dtype *dt, int64_t rows, int64_t cols, int64_t pad, size_t off) {
    char what[96];
    snprintf(what, sizeof what, "sum_rows %s %lldx%lld stride %lld", dt->name, (long long)rows, (long long)cols,
             (long long)(cols + pad));
    tensor x = make(dt, rows, cols, cols + pad, off), out = vec(dt, cols, 16), out2 = vec(dt, cols, 0);
    double *want = calloc((size_t)cols, sizeof(double)), *mag = calloc((size_t)cols, sizeof(double));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++) {
            put2(&x, r, j, rnd(r % 5 ? 1 : 20));
            want[j] += get2(&x, r, j), mag[j] += fabs(get2(&x, r, j));
        }
    send(&x), send(&out), send(&out2);
    OK(tls_sum_rows(dev, dt->id, mem(&x), mem(&out), rows, cols, cols + pad, false, NULL));
    OK(tls_sum_rows(dev, dt->id, mem(&x), mem(&out2), rows, cols, cols + pad, false, NULL));
    fetch(&out, what), fetch(&out2, what);
    if (memcmp(out.host + out.off, out2.host + out2.off, (size_t)cols * dt->size)) fail_msg("%s: another result on a second run on %s", what,
                                                        trt_device_name(dev));
    for (int64_t j = 0; j < cols; j++) {
        double got = get(&out, j);
        if (!(fabs(got - want[j]) <= dt->tol * fabs(want[j]) + 1e-6 * mag[j]))
            fail_msg("%s: out[%lld] = %.9g, want %.9g on %s", what, (long long)j, got, want[j], trt_device_name(dev));
    }
    /* out2 += the column sums, from other values */
    for (int64_t j = 0; j < cols; j++) put(&out2, j, rnd(50)), want[j] += get(&out2, j), mag[j] += fabs(get(&out2, j));
    OK(trt_write(dev, out2.buf, 0, out2.host, out2.bytes));
    OK(tls_sum_rows(dev, dt->id, mem(&x), mem(&out2), rows, cols, cols + pad, true, NULL));
    fetch(&out2, what);
    for (int64_t j = 0; j < cols; j++) {
        double got = get(&out2, j);
        if (!(fabs(got - want[j]) <= dt->tol * fabs(want[j]) + 1e-6 * mag[j]))
            fail_msg("%s: accumulated out[%lld] = %.9g, want %.9g on %s", what, (long long)j, got, want[j],
                     trt_device_name(dev));
    }
    free(want), free(mag);
    drop(&x), drop(&out), drop(&out2);
}

static void test_sum_rows(void **state) {
    (void)state;
    /* rows, cols, padding: one element; ragged under a trip of 64 rows and
     * a program's 32 columns; several trips and programs, with a row
     * group's tail */
    static const int64_t shapes[][3] = {{1, 1, 0}, {17, 17, 3}, {1, 1031, 0}, {131, 33, 5}, {200, 100, 0}};
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            run_sum_rows(&dtypes[t], shapes[s][0], shapes[s][1], shapes[s][2], offset_of(s));
}

/* ---- conversions ------------------------------------------------------------------------- */

/* Bits of element i of a host array of dt. */
static uint32_t bits_of(const dtype *dt, const unsigned char *p, size_t i) {
    uint32_t u = 0;
    memcpy(&u, p + i * dt->size, dt->size); /* little-endian */
    return u;
}
static bool is_nan_bits(const dtype *dt, uint32_t u) {
    return dt->size == 4 ? (u & 0x7fffffffu) > 0x7f800000u
                         : dt->id == TLS_F16 ? (u & 0x7fffu) > 0x7c00u : (u & 0x7fffu) > 0x7f80u;
}

/* Values of `from` that test the rounding: ties to even both ways (f32 to
 * bf16: low 16 bits 0x8000; f32 to f16: low 13 bits 0x1000; f16 to bf16:
 * low 3 bits 100b; bf16 to f16 in f16's subnormals: 0.5 and 1.5 and 2.5
 * of 2^-24), just beside the ties, overflow to infinity (f16's largest
 * is 65504; 65520 is the tie above it), infinities, -0 and a NaN. */
static size_t special_values(const dtype *from, float *out) {
    static const uint32_t f32_bits[] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0xbf818000u, 0x3f801000u,
                                        0x3f803000u, 0x3f801001u, 0xbf803000u, 0x477fef00u, 0x477ff000u,
                                        0xc77ff000u, 0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x80000000u,
                                        0x7fc00000u, 0x33c00000u, 0x33000000u};
    static const uint16_t f16_bits_list[] = {0x3c04, 0x3c0c, 0x3c05, 0xbc0c, 0x7bff, 0xfc00, 0x8000, 0x0001, 0x7e00};
    static const uint16_t bf16_bits_list[] = {0x3300, 0x33c0, 0x3420, 0x3440, 0x3340, 0x4780,
                                              0xc77f, 0x477f, 0x7f80, 0x8000, 0x2f80, 0x7fc0};
    size_t k = 0;
    if (from->id == TLS_F32)
        for (size_t i = 0; i < sizeof f32_bits / sizeof f32_bits[0]; i++) memcpy(&out[k++], &f32_bits[i], 4);
    else if (from->id == TLS_F16)
        for (size_t i = 0; i < sizeof f16_bits_list / sizeof f16_bits_list[0]; i++) out[k++] = f16_value(f16_bits_list[i]);
    else
        for (size_t i = 0; i < sizeof bf16_bits_list / sizeof bf16_bits_list[0]; i++)
            out[k++] = bf16_value(bf16_bits_list[i]);
    return k;
}

/* y = x converted, exactly: y's bits must be the C reference's rounding
 * (half_float.h, nearest even) of the stored x (NaN to a NaN). The
 * specials sit at the tensor's end, in the last block's tail. */
static void run_convert(const dtype *from, const dtype *to, int64_t n, size_t s, bool in_place) {
    char what[96];
    snprintf(what, sizeof what, "convert %s to %s n=%lld%s", from->name, to->name, (long long)n,
             in_place ? " in place" : "");
    tensor x = vec(from, n, offset_of(s)), y = vec(to, n, offset_of(s + 1));
    float special[32];
    size_t nspecial = special_values(from, special);
    for (int64_t i = 0; i < n; i++) {
        size_t last = (size_t)(n - 1 - i);
        put(&x, i, n > 1 && last < nspecial ? special[last] : rnd(i % 2 ? 3 : 3000));
    }
    send(&x);
    if (!in_place) send(&y);
    unsigned char *want = malloc(y.bytes);
    memset(want, 0xff, y.bytes);
    for (int64_t i = 0; i < n; i++) to->put(want + y.off, (size_t)i, get(&x, i));
    OK(tls_convert(dev, from->id, mem(&x), to->id, in_place ? mem(&x) : mem(&y), n, NULL));
    tensor *out = in_place ? &x : &y;
    out->dt = to; /* in place: the same bytes, read as `to` */
    fetch(out, what);
    for (int64_t i = 0; i < n; i++) {
        uint32_t got = bits_of(to, out->host + out->off, (size_t)i), exp = bits_of(to, want + y.off, (size_t)i);
        if (got != exp && !(is_nan_bits(to, got) && is_nan_bits(to, exp)))
            fail_msg("%s: y[%lld] has bits %#x, want %#x (x = %.9g) on %s", what, (long long)i, got, exp,
                     (double)get(&x, i), trt_device_name(dev));
    }
    free(want);
    drop(&x);
    if (!in_place) drop(&y);
    else free(y.host);
}

static void test_convert(void **state) {
    (void)state;
    for (size_t f = 0; f < 3; f++)
        for (size_t t = 0; t < 3; t++)
            for (size_t s = 0; s < NSIZES; s++) run_convert(&dtypes[f], &dtypes[t], sizes[s], s, false);
    /* in place where the sizes match */
    run_convert(&dtypes[1], &dtypes[2], 1031, 0, true);
    run_convert(&dtypes[2], &dtypes[1], 17, 1, true);
    run_convert(&dtypes[0], &dtypes[0], 1031, 2, true);
}

/* ---- compiled once ---------------------------------------------------------------------- */

/* Every call of the family, every dtype, compiles its kernel once: a
 * training step's later calls compile nothing. */
static void test_one_module(void **state) {
    (void)state;
    tensor a = vec(f32_type, 64, 0), b = vec(f32_type, 64, 0), c = vec(f32_type, 64, 0), d = vec(f32_type, 64, 0),
           e = vec(f32_type, 4, 0);
    for (int64_t i = 0; i < 64; i++) put(&a, i, rnd(1)), put(&b, i, rnd(1)), put(&c, i, 0), put(&d, i, 0);
    send(&a), send(&b), send(&c), send(&d), send(&e);
    tls_mem none = tls_mem_of((trt_buffer){0});
    const tls_adamw_params h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .step = 1, .grad_scale = 1};
    size_t n = 0;
    for (int step = 0; step < 2; step++) { /* the first step compiles, the second not */
        if (step) n = tls_num_modules(dev);
        for (size_t t = 0; t < 3; t++) {
            tls_dtype dt = dtypes[t].id;
            OK(tls_sum_squares(dev, dt, mem(&a), 64, mem(&d), t > 0, mem(&e), NULL));
            OK(tls_adamw(dev, dt, mem(&a), mem(&b), mem(&c), mem(&d), none, none, 32, &h, NULL));
            OK(tls_add(dev, dt, mem(&a), mem(&b), mem(&b), 64, NULL));
            OK(tls_sum_rows(dev, dt, mem(&a), mem(&b), 4, 8, 16, t > 0, NULL));
            OK(tls_convert(dev, dt, mem(&a), dtypes[(t + 1) % 3].id, mem(&b), 32, NULL));
        }
    }
    assert_int_equal(tls_num_modules(dev), n);
    drop(&a), drop(&b), drop(&c), drop(&d), drop(&e);
}

/* num_warps and a stream from tls_options: the sum of squares (its
 * partials at 2 warps, their sum at the compiler's) and an add on a
 * stream, within the tolerances above. */
static void test_options(void **state) {
    (void)state;
    const dtype *dt = &dtypes[2];
    const int64_t n = 20011;
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    size_t ws_bytes;
    OK(tls_sum_squares_workspace(dev, n, &ws_bytes));
    tensor x = vec(dt, n, 16), y = vec(dt, n, 0), out = vec(f32_type, 1, 0), ws = vec(f32_type, (int64_t)ws_bytes / 4, 0);
    double want = 0;
    for (int64_t i = 0; i < n; i++) put(&x, i, rnd(1)), want += (double)get(&x, i) * get(&x, i);
    send(&x), send(&y), send(&out), send(&ws);
    tls_options o = {.num_warps = 2, .stream = s};
    OK(tls_sum_squares(dev, dt->id, mem(&x), n, mem(&out), false, mem(&ws), &o));
    o.num_warps = 8;
    OK(tls_add(dev, dt->id, mem(&x), mem(&x), mem(&y), n, &o));
    OK(trt_stream_sync(s));
    fetch(&out, "sum_squares on a stream"), fetch(&y, "add on a stream");
    if (!(fabs(get(&out, 0) - want) <= 1e-5 * want))
        fail_msg("sum_squares at 2 warps on a stream: %.9g, want %.9g on %s", (double)get(&out, 0), want,
                 trt_device_name(dev));
    for (int64_t i = 0; i < n; i++)
        if (get(&y, i) != 2 * get(&x, i)) /* doubling is exact */
            fail_msg("add at 8 warps on a stream: y[%lld] = %.9g, want %.9g on %s", (long long)i, (double)get(&y, i),
                     2.0 * get(&x, i), trt_device_name(dev));
    drop(&x), drop(&y), drop(&out), drop(&ws);
    trt_stream_destroy(s);
}

/* ---- misuse ---------------------------------------------------------------------------- */

static void expect_error(trt_status st, trt_status want, const char *says, const char *call) {
    if (st != want)
        fail_msg("%s: %s (%s), want %s", call, trt_status_name(st), trt_last_error(dev), trt_status_name(want));
    if (!strstr(trt_last_error(dev), says))
        fail_msg("%s: the message \"%s\" does not say \"%s\"", call, trt_last_error(dev), says);
}
#define EXPECT(call, want, says) expect_error((call), (want), (says), #call)

/* Every check: a status and a message naming the call and the argument,
 * and nothing written (every buffer still all poison). */
static void test_misuse_is_an_error(void **state) {
    (void)state;
    const trt_status BAD = TRT_ERR_INVALID_ARGUMENT;
    tensor x = vec(f32_type, 256, 0), y = vec(f32_type, 256, 0), z = vec(f32_type, 256, 0),
           w = vec(f32_type, 256, 0), o = vec(f32_type, 4, 0);
    send(&x), send(&y), send(&z), send(&w), send(&o);
    tls_mem X = mem(&x), Y = mem(&y), Z = mem(&z), W = mem(&w), O = mem(&o), none = tls_mem_of((trt_buffer){0});
    size_t bytes;
    trt_buffer gone_early;
    OK(trt_alloc(dev, 64, &gone_early));
    OK(trt_free(dev, gone_early));

    /* the workspace query */
    assert_int_equal(tls_sum_squares_workspace(NULL, 16, &bytes), BAD);
    EXPECT(tls_sum_squares_workspace(dev, 16, NULL), BAD, "tls_sum_squares_workspace: bytes is NULL");
    EXPECT(tls_sum_squares_workspace(dev, 0, &bytes), BAD, "tls_sum_squares_workspace: n is 0; it must be from 1");

    /* tls_sum_squares */
    assert_int_equal(tls_sum_squares(NULL, TLS_F32, X, 16, O, false, W, NULL), BAD);
    EXPECT(tls_sum_squares(dev, (tls_dtype)7, X, 16, O, false, W, NULL), BAD, "tls_sum_squares: unknown dtype 7");
    EXPECT(tls_sum_squares(dev, TLS_F32, X, -1, O, false, W, NULL), BAD, "tls_sum_squares: n is -1");
    EXPECT(tls_sum_squares(dev, TLS_F32, X, (int64_t)TLS_MAX_ELEMENTS + 1, O, false, W, NULL), BAD,
           "n is 2147482625; it must be from 1 to 2147482624");
    EXPECT(tls_sum_squares(dev, TLS_F32, X, 257, O, false, W, NULL), BAD,
           "tls_sum_squares: x: the buffer holds 1024 bytes");
    EXPECT(tls_sum_squares(dev, TLS_F32, X, 16, tls_mem_at(o.buf, 8), false, W, NULL), BAD,
           "out: offset 8 is not a multiple of 16");
    EXPECT(tls_sum_squares(dev, TLS_F32, X, 16, tls_mem_at(x.buf, 48), false, W, NULL), BAD,
           "tls_sum_squares: out and x overlap in memory");
    EXPECT(tls_sum_squares(dev, TLS_F32, X, 16, none, false, W, NULL), TRT_ERR_INVALID_HANDLE, "out:");
    EXPECT(tls_sum_squares(dev, TLS_F32, X, 16, O, false, none, NULL), TRT_ERR_INVALID_HANDLE,
           "tls_sum_squares: workspace:"); /* one chunk: not read, but checked as the query says */
    /* 4 bytes a chunk of 8192 values, rounded up to 16: 32769 f16 need 20, so 32 */
    tensor big = vec(&dtypes[1], 32769, 0);
    send(&big);
    OK(tls_sum_squares_workspace(dev, 32769, &bytes));
    assert_int_equal(bytes, 32);
    EXPECT(tls_sum_squares(dev, TLS_F16, mem(&big), 32769, O, false, tls_mem_at(w.buf, 1008), NULL), BAD,
           "workspace: the buffer holds 1024 bytes; 32 values need 32 from offset 1008");
    EXPECT(tls_sum_squares(dev, TLS_F16, mem(&big), 32769, O, false, none, NULL), TRT_ERR_INVALID_HANDLE,
           "tls_sum_squares: workspace:");
    EXPECT(tls_sum_squares(dev, TLS_F16, mem(&big), 32769, O, false, tls_mem_at(big.buf, 16), NULL), BAD,
           "workspace and x overlap");
    EXPECT(tls_sum_squares(dev, TLS_F16, mem(&big), 32769, tls_mem_at(w.buf, 16), false, W, NULL), BAD,
           "out and workspace overlap");

    /* tls_adamw */
    const tls_adamw_params good = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f,
                                   .step = 1, .grad_scale = 1, .max_norm = 1};
    tls_adamw_params h;
#define ADAMW(field, value, says)                                                                          \
    do {                                                                                                   \
        h = good, h.field = (value);                                                                       \
        EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 64, &h, NULL), BAD, "tls_adamw: " says); \
    } while (0)
    assert_int_equal(tls_adamw(NULL, TLS_F32, X, Y, Z, W, none, O, 64, &good, NULL), BAD);
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 64, NULL, NULL), BAD, "tls_adamw: h is NULL");
    EXPECT(tls_adamw(dev, (tls_dtype)3, X, Y, Z, W, none, O, 64, &good, NULL), BAD, "unknown dtype 3");
    ADAMW(lr, -1e-3f, "lr is -0.001; it must be finite and >= 0");
    ADAMW(lr, NAN, "lr is nan");
    ADAMW(beta1, 1, "beta1 is 1; it must be from 0 to less than 1");
    ADAMW(beta2, -0.5f, "beta2 is -0.5");
    ADAMW(eps, 0, "eps is 0; it must be finite and > 0");
    ADAMW(weight_decay, INFINITY, "weight_decay is inf");
    ADAMW(grad_scale, 0, "grad_scale is 0; it must be finite and > 0");
    ADAMW(max_norm, -1, "max_norm is -1; it must be finite and >= 0 (0: no clipping)");
    ADAMW(step, 0, "step is 0; it must be >= 1");
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 0, &good, NULL), BAD, "tls_adamw: n is 0");
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 257, &good, NULL), BAD, "tls_adamw: p: the buffer holds 1024");
    EXPECT(tls_adamw(dev, TLS_F32, Z, tls_mem_at(y.buf, 32), X, W, none, O, 252, &good, NULL), BAD,
           "tls_adamw: g: the buffer holds 1024 bytes");
    EXPECT(tls_adamw(dev, TLS_F16, X, Y, Z, tls_mem_at(w.buf, 32), none, O, 256, &good, NULL), BAD, "tls_adamw: v:");
    EXPECT(tls_adamw(dev, TLS_F16, X, Y, Z, W, tls_mem_at(y.buf, 528), O, 256, &good, NULL), BAD, "p_copy: the buffer");
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, none, 64, &good, NULL), TRT_ERR_INVALID_HANDLE, "grad_sumsq:");
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, X, 64, &good, NULL), BAD, "p and grad_sumsq overlap");
    EXPECT(tls_adamw(dev, TLS_F32, X, X, Z, W, none, O, 64, &good, NULL), BAD, "p and g overlap");
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, tls_mem_at(z.buf, 128), none, O, 64, &good, NULL), BAD, "m and v overlap");
    EXPECT(tls_adamw(dev, TLS_F16, X, Y, Z, W, tls_mem_at(x.buf, 240), O, 64, &good, NULL), BAD,
           "p and p_copy overlap");
    EXPECT(tls_adamw(dev, TLS_F16, X, Y, Z, W, tls_mem_at(y.buf, 64), O, 64, &good, NULL), BAD,
           "p_copy and g overlap");
    tls_options bad_warps = {.num_warps = 3};
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 64, &good, &bad_warps), BAD, "num_warps 3");
    h = good, h.schedule = tls_mem_at(o.buf, 16);
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 64, &h, NULL), BAD,
           "tls_adamw: schedule: the buffer holds 16 bytes; 3 values need 12 from offset 16");
    h.schedule = tls_mem_at(x.buf, 64);
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 64, &h, NULL), BAD, "p and schedule overlap");
    h.schedule = tls_mem_of(gone_early);
    EXPECT(tls_adamw(dev, TLS_F32, X, Y, Z, W, none, O, 64, &h, NULL), TRT_ERR_INVALID_HANDLE, "schedule:");
    float sv[TLS_ADAMW_SCHEDULE];
    h = good, h.step = 0;
    EXPECT(tls_adamw_schedule(dev, &h, sv), BAD, "tls_adamw_schedule: step is 0");
    EXPECT(tls_adamw_schedule(dev, &good, NULL), BAD, "tls_adamw_schedule: out is NULL");
    EXPECT(tls_adamw_schedule(dev, NULL, sv), BAD, "tls_adamw_schedule: h is NULL");
    assert_int_equal(tls_adamw_schedule(NULL, &good, sv), BAD);
    OK(tls_adamw_schedule(dev, &good, sv)); /* step 1: 1 - lr wd, lr / (1 - beta1), 1 / sqrt(1 - beta2), in double */
    if (sv[0] != (float)(1 - (double)good.lr * good.weight_decay) || sv[1] != (float)((double)good.lr / (1 - (double)good.beta1)) ||
        sv[2] != (float)(1 / sqrt(1 - (double)good.beta2)))
        fail_msg("tls_adamw_schedule at step 1: %.9g %.9g %.9g", (double)sv[0], (double)sv[1], (double)sv[2]);
#undef ADAMW

    /* tls_fill */
    EXPECT(tls_fill(dev, TLS_F16, X, 0, 1, NULL), BAD, "tls_fill: n is 0");
    EXPECT(tls_fill(dev, TLS_F16, tls_mem_at(x.buf, 512), 257, 1, NULL), BAD, "tls_fill: y: the buffer holds 1024");
    EXPECT(tls_fill(dev, (tls_dtype)4, X, 4, 1, NULL), BAD, "tls_fill: unknown dtype 4");

    /* tls_add */
    EXPECT(tls_add(dev, TLS_BF16, X, Y, Z, 0, NULL), BAD, "tls_add: n is 0");
    EXPECT(tls_add(dev, TLS_BF16, X, Y, tls_mem_at(z.buf, 512), 257, NULL), BAD, "tls_add: y: the buffer holds 1024");
    EXPECT(tls_add(dev, TLS_F32, X, Y, tls_mem_at(x.buf, 16), 64, NULL), BAD,
           "tls_add: y and a overlap in memory: an output must not share memory with another tensor of the call "
           "unless it is exactly that tensor (in place)");
    EXPECT(tls_add(dev, TLS_F32, X, tls_mem_at(y.buf, 32), Y, 64, NULL), BAD, "y and b overlap");

    /* tls_sum_rows */
    EXPECT(tls_sum_rows(dev, TLS_F32, X, Y, 0, 16, 16, false, NULL), BAD, "tls_sum_rows: rows is 0");
    EXPECT(tls_sum_rows(dev, TLS_F32, X, Y, 4, 0, 16, false, NULL), BAD, "tls_sum_rows: cols is 0");
    EXPECT(tls_sum_rows(dev, TLS_F32, X, Y, 4, 16, 15, false, NULL), BAD,
           "tls_sum_rows: stride is 15, less than cols (16): rows would overlap");
    EXPECT(tls_sum_rows(dev, TLS_F32, X, Y, 3, 16, INT64_MAX / 2, false, NULL), BAD,
           "x: 3 rows 4611686018427387903 elements apart do not fit in memory");
    EXPECT(tls_sum_rows(dev, TLS_F32, X, Y, 16, 16, 17, false, NULL), BAD,
           "tls_sum_rows: x: the buffer holds 1024 bytes");
    EXPECT(tls_sum_rows(dev, TLS_F32, X, tls_mem_at(y.buf, 1008), 4, 16, 16, false, NULL), BAD, "out: the buffer");
    EXPECT(tls_sum_rows(dev, TLS_F32, X, tls_mem_at(x.buf, 64), 4, 16, 32, false, NULL), BAD, "out and x overlap");

    /* tls_convert */
    EXPECT(tls_convert(dev, (tls_dtype)5, X, TLS_F16, Y, 16, NULL), BAD, "tls_convert: unknown dtype 5");
    EXPECT(tls_convert(dev, TLS_F32, X, (tls_dtype)9, Y, 16, NULL), BAD, "tls_convert: unknown dtype 9 for `to`");
    EXPECT(tls_convert(dev, TLS_F32, X, TLS_F16, Y, 0, NULL), BAD, "tls_convert: n is 0");
    EXPECT(tls_convert(dev, TLS_F16, X, TLS_F32, Y, 257, NULL), BAD, "tls_convert: y: the buffer holds 1024");
    EXPECT(tls_convert(dev, TLS_F32, X, TLS_F16, X, 64, NULL), BAD,
           "y and x overlap in memory"); /* same start, other sizes: not in place */
    EXPECT(tls_convert(dev, TLS_F16, X, TLS_BF16, tls_mem_at(x.buf, 16), 64, NULL), BAD, "y and x overlap");

    /* a freed buffer */
    trt_buffer gone;
    OK(trt_alloc(dev, 1024, &gone));
    OK(trt_free(dev, gone));
    EXPECT(tls_add(dev, TLS_F32, X, tls_mem_of(gone), Z, 16, NULL), TRT_ERR_INVALID_HANDLE, "tls_add: b: buffer handle");

    /* nothing ran: every buffer is still all poison */
    tensor *all[] = {&x, &y, &z, &w, &o, &big};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        fetch(all[i], "a buffer after refused calls");
        for (size_t b = 0; b < all[i]->bytes; b++)
            if (all[i]->host[b] != 0xff) fail_msg("a refused call wrote buffer %zu (byte %zu)", i, b);
    }
    /* and the calls with the arguments right run */
    h = good, h.max_norm = 0;
    OK(tls_add(dev, TLS_F32, X, Y, X, 64, NULL));
    OK(tls_adamw(dev, TLS_F16, X, Y, Z, W, tls_mem_at(y.buf, 512), O, 64, &h, NULL));
    drop(&x), drop(&y), drop(&z), drop(&w), drop(&o), drop(&big);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sum_squares), cmocka_unit_test(test_adamw),   cmocka_unit_test(test_add),
        cmocka_unit_test(test_sum_rows),    cmocka_unit_test(test_convert), cmocka_unit_test(test_one_module),
        cmocka_unit_test(test_options),     cmocka_unit_test(test_misuse_is_an_error),
        cmocka_unit_test(test_adamw_schedule_in_a_graph), cmocka_unit_test(test_fill),
    };
    return stdlib_test_main(argc, argv, &dev, tests, sizeof tests / sizeof tests[0]);
}
