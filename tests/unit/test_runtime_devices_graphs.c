/* test_runtime_devices_graphs.c - graphs on each device (trt_stream_begin_capture,
 * trt_stream_end_capture, trt_graph_launch): a captured chain of launches
 * runs only when replayed, replays see the buffers' contents of the time
 * (written by copies queued before them), and what a capture cannot hold
 * is refused on every device, the CPU as the GPU. */
#include "device_harness.h"

enum { N = 3000 }; /* three programs of vadd's 1024, the last one ragged */

typedef struct chain {
    prog p;
    trt_kernel *k;
    trt_buffer x, y, t, out;
} chain;

static void chain_open(chain *c) {
    c->k = compile_text(&c->p, "vadd.tile", vadd_src, "vadd", NULL, 0);
    size_t bytes = sizeof(float) * N;
    OK(trt_alloc(dev, bytes, &c->x));
    OK(trt_alloc(dev, bytes, &c->y));
    OK(trt_alloc(dev, bytes, &c->t));
    OK(trt_alloc(dev, bytes, &c->out));
}

static void chain_close(chain *c) {
    OK(trt_free(dev, c->x));
    OK(trt_free(dev, c->y));
    OK(trt_free(dev, c->t));
    if (c->out.handle) OK(trt_free(dev, c->out));
    drop(&c->p);
}

/* t = x + y, then out = t + y, on stream s. */
static void chain_launch(chain *c, trt_stream *s) {
    trt_arg a1[] = {trt_buf(c->x), trt_buf(c->y), trt_buf(c->t), trt_int(N)};
    trt_arg a2[] = {trt_buf(c->t), trt_buf(c->y), trt_buf(c->out), trt_int(N)};
    OK(trt_launch_on(s, c->k, cdiv(N, 1024), 1, 1, a1, 4));
    OK(trt_launch_on(s, c->k, cdiv(N, 1024), 1, 1, a2, 4));
}

static void expect_chain(const char *what, const float *x, const float *y, const float *out) {
    float *want = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) want[i] = (x[i] + y[i]) + y[i];
    expect_f32(what, N, out, want);
    free(want);
}

/* Captured once, nothing runs; replayed three times with new x written
 * before each replay on the stream, and once on the default stream. */
static void test_replays(void **state) {
    (void)state;
    chain c;
    chain_open(&c);
    size_t bytes = sizeof(float) * N;
    float *y = rand_f32s(N), *out = poison_f32s(N), *poison = poison_f32s(N);
    OK(trt_write(dev, c.y, 0, y, bytes));
    OK(trt_write(dev, c.out, 0, poison, bytes));
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    OK(trt_stream_begin_capture(s));
    chain_launch(&c, s);
    trt_graph *g;
    OK(trt_stream_end_capture(s, &g));
    assert_int_equal(trt_graph_num_launches(g), 2);
    OK(trt_read(dev, c.out, 0, out, bytes));
    for (int i = 0; i < N; i++)
        if (!same_f32(out[i], poison[i])) fail_msg("the capture ran: out[%d] = %g", i, out[i]);
    for (int r = 0; r < 3; r++) {
        float *x = rand_f32s(N);
        OK(trt_write_async(s, c.x, 0, x, bytes));
        OK(trt_write_async(s, c.out, 0, poison, bytes));
        OK(trt_graph_launch(g, s));
        OK(trt_read_async(s, c.out, 0, out, bytes));
        OK(trt_stream_sync(s));
        char what[32];
        snprintf(what, sizeof what, "replay %d", r);
        expect_chain(what, x, y, out);
        free(x);
    }
    float *x = rand_f32s(N);
    OK(trt_write(dev, c.x, 0, x, bytes));
    OK(trt_graph_launch(g, NULL));
    OK(trt_read(dev, c.out, 0, out, bytes));
    expect_chain("replay on the default stream", x, y, out);
    trt_graph_destroy(g);
    trt_graph_destroy(NULL);
    trt_stream_destroy(s);
    chain_close(&c);
    free(x), free(y), free(out), free(poison);
}

static void expect_refused(trt_status st, const char *says) {
    if (st != TRT_ERR_INVALID_ARGUMENT) fail_msg("%s: %s, not refused", says, trt_status_name(st));
    if (!strstr(trt_last_error(dev), says)) fail_msg("the message '%s' does not say '%s'", trt_last_error(dev), says);
}

/* While a stream captures: the default stream, copies, waiting,
 * allocating, freeing and loading are refused; a bad launch is an error
 * and stays out of the graph; afterwards all works again. */
static void test_refused_while_capturing(void **state) {
    (void)state;
    chain c;
    chain_open(&c);
    float host[16] = {1};
    trt_stream *s, *other;
    OK(trt_stream_create(dev, &s));
    OK(trt_stream_create(dev, &other));
    OK(trt_stream_begin_capture(s));
    expect_refused(trt_stream_begin_capture(s), "capturing a graph already");
    trt_arg a[] = {trt_buf(c.x), trt_buf(c.y), trt_buf(c.t), trt_int(N)};
    expect_refused(trt_launch(c.k, 3, 1, 1, a, 4), "launch on the default stream");
    expect_refused(trt_write(dev, c.x, 0, host, sizeof host), "write a buffer");
    expect_refused(trt_read(dev, c.x, 0, host, sizeof host), "read a buffer");
    expect_refused(trt_sync(dev), "trt_sync");
    trt_buffer b = {0};
    expect_refused(trt_alloc(dev, 64, &b), "allocate a buffer");
    assert_int_equal(b.handle, 0);
    expect_refused(trt_free(dev, c.x), "free a buffer");
    expect_refused(trt_write_async(s, c.x, 0, host, sizeof host), "a graph holds launches only");
    expect_refused(trt_read_async(s, c.x, 0, host, sizeof host), "a graph holds launches only");
    expect_refused(trt_stream_sync(s), "end the capture first");
    trt_module *m = NULL;
    expect_refused(trt_compile(dev, "vadd.tile", vadd_src, strlen(vadd_src), NULL, &m), "compile a module");
    assert_null(m);
    /* a launch that fails its checks is not recorded, and the capture goes on */
    assert_int_equal(trt_launch_on(s, c.k, 3, 1, 1, a, 3), TRT_ERR_ARGUMENTS);
    OK(trt_launch_on(s, c.k, 3, 1, 1, a, 4));
    /* another stream's work is not the capture's */
    OK(trt_launch_on(other, c.k, 3, 1, 1, a, 4));
    OK(trt_stream_sync(other));
    trt_graph *g;
    OK(trt_stream_end_capture(s, &g));
    assert_int_equal(trt_graph_num_launches(g), 1);
    trt_graph *none = g;
    expect_refused(trt_stream_end_capture(s, &none), "not capturing");
    assert_null(none);
    OK(trt_write(dev, c.x, 0, host, sizeof host));
    OK(trt_graph_launch(g, s));
    OK(trt_sync(dev));
    /* a graph does not nest into a capture */
    OK(trt_stream_begin_capture(s));
    expect_refused(trt_graph_launch(g, s), "capturing one");
    expect_refused(trt_graph_launch(g, NULL), "replay a graph on the default stream");
    OK(trt_stream_end_capture(s, NULL)); /* discarded */
    OK(trt_launch(c.k, 3, 1, 1, a, 4)); /* the discarded capture is over */
    /* a stream destroyed while capturing ends it */
    OK(trt_stream_begin_capture(other));
    OK(trt_launch_on(other, c.k, 3, 1, 1, a, 4));
    trt_stream_destroy(other);
    OK(trt_sync(dev));
    assert_int_equal(trt_stream_begin_capture(NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_stream_end_capture(NULL, &none), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_graph_launch(NULL, s), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_graph_num_launches(NULL), 0);
    trt_graph_destroy(g);
    trt_stream_destroy(s);
    chain_close(&c);
}

/* A buffer freed after the capture: the replay is an error before
 * anything runs (the first launch, whose buffers are live, leaves t as
 * it was). */
static void test_freed_buffer(void **state) {
    (void)state;
    chain c;
    chain_open(&c);
    size_t bytes = sizeof(float) * N;
    float *poison = poison_f32s(N), *t = malloc(bytes);
    OK(trt_write(dev, c.t, 0, poison, bytes));
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    OK(trt_stream_begin_capture(s));
    chain_launch(&c, s);
    trt_graph *g;
    OK(trt_stream_end_capture(s, &g));
    OK(trt_free(dev, c.out));
    c.out.handle = 0;
    assert_int_equal(trt_graph_launch(g, s), TRT_ERR_INVALID_HANDLE);
    if (!strstr(trt_last_error(dev), "launch 1") || !strstr(trt_last_error(dev), "'out'"))
        fail_msg("the message does not name the launch and its argument: %s", trt_last_error(dev));
    OK(trt_stream_sync(s));
    OK(trt_read(dev, c.t, 0, t, bytes));
    for (int i = 0; i < N; i++)
        if (!same_f32(t[i], poison[i])) fail_msg("part of a refused replay ran: t[%d] = %g", i, t[i]);
    trt_graph_destroy(g);
    trt_stream_destroy(s);
    chain_close(&c);
    free(poison), free(t);
}

/* The graph keeps its kernels' module loaded after the owner frees it,
 * and a device closed under a graph makes its replays TRT_ERR_CLOSED;
 * destroying the graph last frees everything (the sanitizers' leak check
 * would say otherwise). */
static void test_lifetimes(void **state) {
    (void)state;
    trt_device *mine;
    char why[512];
    OK(trt_open(kind, &mine, why, sizeof why));
    trt_module *mod;
    assert_int_equal(trt_compile(mine, "vadd.tile", vadd_src, strlen(vadd_src), NULL, &mod), TRT_OK);
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(mod, "vadd", &k), TRT_OK);
    size_t bytes = sizeof(float) * N;
    float *x = rand_f32s(N), *y = rand_f32s(N), *out = poison_f32s(N);
    trt_buffer bx, by, bo;
    assert_int_equal(trt_alloc(mine, bytes, &bx), TRT_OK);
    assert_int_equal(trt_alloc(mine, bytes, &by), TRT_OK);
    assert_int_equal(trt_alloc(mine, bytes, &bo), TRT_OK);
    assert_int_equal(trt_write(mine, bx, 0, x, bytes), TRT_OK);
    assert_int_equal(trt_write(mine, by, 0, y, bytes), TRT_OK);
    trt_stream *s;
    assert_int_equal(trt_stream_create(mine, &s), TRT_OK);
    assert_int_equal(trt_stream_begin_capture(s), TRT_OK);
    trt_arg a[] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(N)};
    assert_int_equal(trt_launch_on(s, k, cdiv(N, 1024), 1, 1, a, 4), TRT_OK);
    trt_graph *g;
    assert_int_equal(trt_stream_end_capture(s, &g), TRT_OK);
    trt_module_free(mod);
    assert_int_equal(trt_graph_launch(g, s), TRT_OK);
    assert_int_equal(trt_read_async(s, bo, 0, out, bytes), TRT_OK);
    assert_int_equal(trt_stream_sync(s), TRT_OK);
    for (int i = 0; i < N; i++)
        if (!same_f32(out[i], x[i] + y[i])) fail_msg("out[%d] = %g, want %g", i, out[i], x[i] + y[i]);
    /* a stream of another device */
    trt_stream *theirs;
    OK(trt_stream_create(dev, &theirs));
    assert_int_equal(trt_graph_launch(g, theirs), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(mine), "another device"));
    trt_stream_destroy(theirs);
    trt_close(mine);
    assert_int_equal(trt_graph_launch(g, s), TRT_ERR_CLOSED);
    trt_stream_destroy(s);
    trt_graph_destroy(g);
    free(x), free(y), free(out);
}

/* Cut short: a module freed while capturing is unloaded when the
 * capture ends (the sanitizers' leak check sees it freed); discarding a
 * capture keeps the last error that made the caller give up; a module
 * cannot be loaded meanwhile; trt_close ends the captures it finds. */
static void test_capture_cut_short(void **state) {
    (void)state;
    trt_device *mine;
    char why[512];
    OK(trt_open(kind, &mine, why, sizeof why));
    trt_module *used, *spare;
    assert_int_equal(trt_compile(mine, "vadd.tile", vadd_src, strlen(vadd_src), NULL, &used), TRT_OK);
    tilec_define other = {"BLOCK", 256};
    trt_compile_options o = {.defines = &other, .ndefines = 1};
    assert_int_equal(trt_compile(mine, "vadd.tile", vadd_src, strlen(vadd_src), &o, &spare), TRT_OK);
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(used, "vadd", &k), TRT_OK);
    trt_buffer b;
    assert_int_equal(trt_alloc(mine, 4096, &b), TRT_OK);
    trt_arg a[] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(1024)};
    trt_stream *s;
    assert_int_equal(trt_stream_create(mine, &s), TRT_OK);
    assert_int_equal(trt_stream_begin_capture(s), TRT_OK);
    assert_int_equal(trt_launch_on(s, k, 1, 1, 1, a, 4), TRT_OK);
    trt_module_free(spare); /* deferred to the capture's end */
    trt_module *m = NULL;
    assert_int_equal(trt_load(mine, "/nonexistent/vadd.cubin", &m), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(mine), "capturing a graph"));
    assert_int_equal(trt_launch_on(s, k, 1, 1, 1, a, 2), TRT_ERR_ARGUMENTS); /* the error the caller gives up on */
    char said[512];
    snprintf(said, sizeof said, "%s", trt_last_error(mine));
    assert_int_equal(trt_stream_end_capture(s, NULL), TRT_OK);
    assert_string_equal(trt_last_error(mine), said);
    /* closed while capturing: the capture ends with the device */
    assert_int_equal(trt_stream_begin_capture(s), TRT_OK);
    assert_int_equal(trt_launch_on(s, k, 1, 1, 1, a, 4), TRT_OK);
    trt_close(mine);
    trt_graph *g = NULL;
    assert_int_equal(trt_stream_end_capture(s, &g), TRT_ERR_INVALID_ARGUMENT);
    assert_null(g);
    trt_stream_destroy(s);
    trt_module_free(used);
}

HARNESS_MAIN(
    cmocka_unit_test(test_replays),
    cmocka_unit_test(test_refused_while_capturing),
    cmocka_unit_test(test_freed_buffer),
    cmocka_unit_test(test_lifetimes),
    cmocka_unit_test(test_capture_cut_short))
