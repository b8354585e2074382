/* The tuner (include/tilec_rt.h, autotuning; docs/tuning.md) on the device
 * the argument names (cpu or emu; no GPU here): compile-only pruning with
 * its reasons, the stand-in search's deterministic winner, the tuning
 * file's round trip and its strict reading, and misuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/internal.h" /* the device's table, for the timed measure on the host */
#include "tilec_rt.h"

static trt_device *dev;
static const char *device_arg = "cpu";

static const char vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
    "}\n";

/* A reduction across threads whose shared memory grows with A x B: 256 x
 * 1024 on 32 warps needs 262144 bytes, over sm_80's 166912 (the
 * compiler's error, tests/golden/codegen/smem-limit.tile). */
static const char partials_src[] =
    "kernel partials(x: *f64, y: *f64, const A: i32 = 4, const B: i32 = 32) {\n"
    "    let v = load(x + reshape(arange(0, A * B * 4), (A, B, 4)));\n"
    "    store(y + reshape(arange(0, A * 4), (A, 4)), sum(v, axis = 1));\n"
    "}\n";

enum { N = 4096 };

/* A temporary file's path, removed at exit of the test that made it. */
static void temp_path(char *buf, size_t size, const char *what) {
    snprintf(buf, size, "%s/tilec-tune-%s-%s-%ld.txt", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", device_arg, what,
             (long)getpid());
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    char *s = malloc(n + 1);
    memcpy(s, buf, n + 1);
    return s;
}

static void vadd_grid(void *user, const trt_tune_config *cfg, uint32_t grid[3]) {
    int64_t n = *(const int64_t *)user, block = cfg->defines[0].value;
    grid[0] = (uint32_t)((n + block - 1) / block);
}

/* vadd's buffers and arguments. */
typedef struct vadd_fx {
    trt_buffer x, y, out;
    trt_arg args[4];
    int64_t n;
} vadd_fx;

static void vadd_setup(vadd_fx *f) {
    static float hx[N], hy[N];
    for (int i = 0; i < N; i++) hx[i] = (float)i, hy[i] = 0.5f;
    assert_int_equal(trt_alloc(dev, sizeof hx, &f->x), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof hy, &f->y), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof hx, &f->out), TRT_OK);
    assert_int_equal(trt_write(dev, f->x, 0, hx, sizeof hx), TRT_OK);
    assert_int_equal(trt_write(dev, f->y, 0, hy, sizeof hy), TRT_OK);
    f->n = N;
    f->args[0] = trt_buf(f->x), f->args[1] = trt_buf(f->y), f->args[2] = trt_buf(f->out), f->args[3] = trt_int(N);
}

static void vadd_teardown(vadd_fx *f) {
    trt_free(dev, f->x), trt_free(dev, f->y), trt_free(dev, f->out);
}

static const tilec_define blocks[] = {{"BLOCK", 64}, {"BLOCK", 100}, {"BLOCK", 1024}, {"BLOCK", 256}};
static const trt_tune_config vadd_configs[] = {
    {&blocks[0], 1, 2, 0}, {&blocks[1], 1, 4, 0}, {&blocks[2], 1, 4, 0}, {&blocks[3], 1, 4, 0}};

static trt_tune_space vadd_space(vadd_fx *f) {
    return (trt_tune_space){.file = "vadd.tile", .source = vadd_src, .len = strlen(vadd_src), .kernel = "vadd",
                            .configs = vadd_configs, .nconfigs = 4, .bucket = "N=4096", .grid = vadd_grid,
                            .user = &f->n, .args = f->args, .nargs = 4};
}

/* The stand-in search: BLOCK 100 pruned by the compiler with its reason,
 * the others launched (the output is right) and ranked by a cost that is
 * not a time, the same on every run; fewer, larger programs win. */
static void test_standin_winner(void **state) {
    (void)state;
    vadd_fx f;
    vadd_setup(&f);
    trt_tune_space sp = vadd_space(&f);
    trt_tune_outcome o1[4], o2[4];
    size_t best1 = 99, best2 = 98;
    if (trt_tune(dev, &sp, NULL, o1, &best1) != TRT_OK) fail_msg("%s", trt_last_error(dev));
    assert_int_equal(trt_tune(dev, &sp, NULL, o2, &best2), TRT_OK);
    assert_int_equal(best1, 2); /* BLOCK 1024: 4 programs */
    assert_int_equal(best2, best1);
    assert_true(o1[1].pruned);
    assert_non_null(strstr(o1[1].reason, "arange length 100 is not a power of two"));
    assert_non_null(strstr(o1[1].reason, "vadd.tile:2:"));
    for (int i = 0; i < 4; i++) {
        if (i == 1) continue;
        assert_false(o1[i].pruned);
        assert_false(o1[i].timed); /* a stand-in, never a time, off the GPU */
        assert_true(o1[i].cost > 0);
        assert_true(o1[i].cost == o2[i].cost);
    }
    /* cost = programs x (ops + smem / 1024 + 4 x warps): 64 programs at
     * BLOCK 64, 16 at 256 (the same kernel but for its tile size) */
    assert_true(o1[0].cost > o1[3].cost && o1[3].cost > o1[2].cost);
    float out[N];
    assert_int_equal(trt_read(dev, f.out, 0, out, sizeof out), TRT_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == (float)i + 0.5f);
    vadd_teardown(&f);
}

/* Only the tuned kernel is compiled for each configuration: another
 * kernel of the file that no configuration compiles (its tile is BLOCK x
 * 65536 elements, over the limit at every BLOCK here) prunes nothing, and
 * the search is the one above. */
static void test_other_kernels_not_compiled(void **state) {
    (void)state;
    static const char other[] = "kernel huge(x: *f32, const BLOCK: i32 = 1024) {\n"
                                "    store(x + arange(0, BLOCK * 65536), 1.0);\n"
                                "}\n";
    char src[sizeof vadd_src + sizeof other];
    snprintf(src, sizeof src, "%s%s", vadd_src, other);
    vadd_fx f;
    vadd_setup(&f);
    trt_tune_space sp = vadd_space(&f);
    sp.source = src, sp.len = strlen(src);
    trt_tune_outcome o[4];
    size_t best = 99;
    if (trt_tune(dev, &sp, NULL, o, &best) != TRT_OK) fail_msg("%s", trt_last_error(dev));
    assert_int_equal(best, 2);
    for (int i = 0; i < 4; i++) assert_true(o[i].pruned == (i == 1));
    assert_non_null(strstr(o[1].reason, "arange length 100 is not a power of two"));
    /* the file compiled whole fails too, so a kernel it lacks cannot be
     * told from one that fails: every configuration is pruned */
    sp.kernel = "vsub";
    assert_int_equal(trt_tune(dev, &sp, NULL, NULL, NULL), TRT_ERR_COMPILE);
    vadd_teardown(&f);
}

static void partials_grid(void *user, const trt_tune_config *cfg, uint32_t grid[3]) {
    (void)user, (void)cfg;
    grid[0] = 1;
}

/* A configuration over the target's shared-memory budget is pruned by
 * compiling alone, with the compiler's reason; the emulator compiles for
 * sm_80. The CPU device's tile IR has no shared memory to budget. */
static void test_prune_shared_memory(void **state) {
    (void)state;
    if (strcmp(device_arg, "emu") != 0) skip();
    static const tilec_define small[] = {{"A", 4}, {"B", 32}}, big[] = {{"A", 256}, {"B", 1024}};
    const trt_tune_config cfgs[] = {{big, 2, 32, 0}, {small, 2, 4, 0}};
    trt_buffer x, y;
    assert_int_equal(trt_alloc(dev, 4 * 32 * 4 * 8, &x), TRT_OK);
    assert_int_equal(trt_alloc(dev, 4 * 4 * 8, &y), TRT_OK);
    double zeros[4 * 32 * 4] = {0};
    assert_int_equal(trt_write(dev, x, 0, zeros, sizeof zeros), TRT_OK);
    trt_arg args[] = {trt_buf(x), trt_buf(y)};
    trt_tune_space sp = {.file = "partials.tile", .source = partials_src, .len = strlen(partials_src),
                         .kernel = "partials", .configs = cfgs, .nconfigs = 2, .bucket = "A=any", .grid = partials_grid,
                         .args = args, .nargs = 2};
    trt_tune_outcome o[2];
    size_t best = 99;
    if (trt_tune(dev, &sp, NULL, o, &best) != TRT_OK) fail_msg("%s", trt_last_error(dev));
    assert_int_equal(best, 1);
    assert_true(o[0].pruned);
    assert_false(o[1].pruned);
    assert_non_null(strstr(o[0].reason, "262144 bytes of shared memory"));
    assert_non_null(strstr(o[0].reason, "limit is 166912 on sm_80"));
    /* every configuration pruned: an error naming each reason */
    sp.nconfigs = 1;
    assert_int_equal(trt_tune(dev, &sp, NULL, o, &best), TRT_ERR_COMPILE);
    assert_non_null(strstr(trt_last_error(dev), "every configuration of partials was pruned"));
    assert_non_null(strstr(trt_last_error(dev), "configuration 0: partials.tile:3:"));
    trt_free(dev, x), trt_free(dev, y);
}

/* Every value of the tile lives across the reduction: 16384 on one warp
 * (512 a thread) spill, 1024 (32) do not (ptxas -v for sm_80). */
static const char scale_src[] = "kernel scale(x: *f32, y: *f32, const BLOCK: i32 = 1024) {\n"
                                "    let offs = arange(0, BLOCK);\n"
                                "    let v = load(x + offs);\n"
                                "    store(y + offs, v / sum(v, axis = 0));\n"
                                "}\n";

/* A configuration that spills is pruned where ptxas can say so (the
 * emulator's sm_80 code; skipped without ptxas); on the CPU device, whose
 * code is tile IR, nothing is asked and both run. */
static void test_prune_spills(void **state) {
    (void)state;
    static const tilec_define big = {"BLOCK", 16384}, small = {"BLOCK", 1024};
    const trt_tune_config cfgs[] = {{&big, 1, 1, 0}, {&small, 1, 1, 0}};
    enum { MAX = 16384 };
    static float ones[MAX];
    for (int i = 0; i < MAX; i++) ones[i] = 1;
    trt_buffer x, y;
    assert_int_equal(trt_alloc(dev, sizeof ones, &x), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof ones, &y), TRT_OK);
    assert_int_equal(trt_write(dev, x, 0, ones, sizeof ones), TRT_OK);
    trt_arg args[] = {trt_buf(x), trt_buf(y)};
    trt_tune_space sp = {.file = "scale.tile", .source = scale_src, .len = strlen(scale_src), .kernel = "scale",
                         .configs = cfgs, .nconfigs = 2, .bucket = "one", .grid = partials_grid, .args = args,
                         .nargs = 2};
    trt_tune_outcome o[2];
    size_t best = 99;
    if (trt_tune(dev, &sp, NULL, o, &best) != TRT_OK) fail_msg("%s", trt_last_error(dev));
    trt_free(dev, x), trt_free(dev, y);
    if (!strcmp(device_arg, "cpu")) {
        assert_false(o[0].spills_checked || o[1].spills_checked);
        assert_false(o[0].pruned || o[1].pruned);
        return;
    }
    if (!o[1].spills_checked) skip(); /* no ptxas here */
    assert_true(o[0].spills_checked);
    assert_true(o[0].pruned);
    if (!strstr(o[0].reason, "it spills to local memory on sm_80 (ptxas -v: ")) fail_msg("reason: %s", o[0].reason);
    assert_false(o[1].pruned);
    assert_int_equal(best, 1);
}

/* The winner goes into a tuning under its key; saved, loaded into another
 * and saved again, the file is the same bytes, and the entry is found. */
static void test_file_round_trip(void **state) {
    (void)state;
    vadd_fx f;
    vadd_setup(&f);
    trt_tune_space sp = vadd_space(&f);
    trt_tuning *t, *u;
    assert_int_equal(trt_tuning_create(&t), TRT_OK);
    assert_int_equal(trt_tuning_create(&u), TRT_OK);
    if (trt_tune(dev, &sp, t, NULL, NULL) != TRT_OK) fail_msg("%s", trt_last_error(dev));
    /* a second entry, put by hand, to show the order */
    static const tilec_define b128 = {"BLOCK", 128};
    trt_tune_config c128 = {&b128, 1, 4, 0};
    assert_int_equal(trt_tuning_put(t, dev, vadd_src, strlen(vadd_src), "vadd", "N=1024", &c128), TRT_OK);
    assert_int_equal(trt_tuning_num_entries(t), 2);
    char p1[512], p2[512];
    temp_path(p1, sizeof p1, "a"), temp_path(p2, sizeof p2, "b");
    if (trt_tuning_save(t, p1) != TRT_OK) fail_msg("%s", trt_tuning_error(t));
    if (trt_tuning_load(u, p1) != TRT_OK) fail_msg("%s", trt_tuning_error(u));
    assert_int_equal(trt_tuning_save(u, p2), TRT_OK);
    char *a = read_file(p1), *b = read_file(p2);
    assert_string_equal(a, b);
    assert_true(strncmp(a, "tilec-tuning 1\n", 15) == 0);
    char *l1 = strstr(a, "\nvadd "), *l2 = l1 ? strstr(l1 + 1, "\nvadd ") : NULL;
    assert_non_null(l2);
    assert_non_null(strstr(l1, "N=1024 num_warps=4 num_stages=0 BLOCK=128\n")); /* "N=1024" < "N=4096" */
    assert_non_null(strstr(l2, "N=4096 num_warps=4 num_stages=0 BLOCK=1024  # cost "));
    assert_non_null(strstr(l2, " stand-in\n"));
    char hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)trt_tune_source_hash(vadd_src, strlen(vadd_src)));
    assert_non_null(strstr(l2, hash));
    trt_tune_config got;
    assert_int_equal(trt_tuning_find(u, dev, vadd_src, strlen(vadd_src), "vadd", "N=4096", &got), TRT_OK);
    assert_int_equal(got.ndefines, 1);
    assert_string_equal(got.defines[0].name, "BLOCK");
    assert_int_equal(got.defines[0].value, 1024);
    assert_int_equal(got.num_warps, 4);
    /* another bucket, source or kernel is another key */
    assert_int_equal(trt_tuning_find(u, dev, vadd_src, strlen(vadd_src), "vadd", "N=8192", &got), TRT_ERR_NOT_FOUND);
    assert_int_equal(trt_tuning_find(u, dev, vadd_src, strlen(vadd_src) - 1, "vadd", "N=4096", &got), TRT_ERR_NOT_FOUND);
    assert_int_equal(trt_tuning_find(u, dev, vadd_src, strlen(vadd_src), "vsub", "N=4096", &got), TRT_ERR_NOT_FOUND);
    free(a), free(b);
    remove(p1), remove(p2);
    trt_tuning_free(t), trt_tuning_free(u);
    vadd_teardown(&f);
}

/* Each malformed file is an error naming file:line and what is wrong, and
 * leaves the tuning as it was. */
static void test_malformed_lines(void **state) {
    (void)state;
    static const char good[] = "vadd 0123456789abcdef sm_80 \"some gpu\" N=4096 num_warps=4 num_stages=2 BLOCK=1024";
    static const struct {
        const char *text;
        int line;
        const char *says;
    } cases[] = {
        {"tilec-tuning 2\n", 1, "version 2; this tilec reads version 1"},
        {"# no header\n", 1, "expected the header line 'tilec-tuning 1'"},
        {"", 1, "expected the header line"},
        {"tilec-tuning 1\n# fine\n\nvadd 0123 sm_80 \"g\" N=1 num_warps=4 num_stages=0\n", 4, "expected the source hash"},
        {"tilec-tuning 1\nvadd 0123456789abcdef sm_80 g N=1 num_warps=4 num_stages=0\n", 2, "in double quotes"},
        {"tilec-tuning 1\nvadd 0123456789abcdef sm_80 \"g\" N=1 num_warps=4\n", 2, "expected num_warps=N and num_stages=N"},
        {"tilec-tuning 1\nvadd 0123456789abcdef sm_80 \"g\" N=1 num_warps=3 num_stages=0\n", 2, "num_warps 3 must be"},
        {"tilec-tuning 1\nvadd 0123456789abcdef sm_80 \"g\" N=1 num_warps=4 num_stages=0 BLOCK=12x\n", 2,
         "expected NAME=INTEGER, not 'BLOCK=12x'"},
        {"tilec-tuning 1\nvadd 0123456789abcdef sm_80 \"g\" N=1 num_warps=4 num_stages=0 B=1 B=2\n", 2,
         "const 'B' is given twice"},
        {"tilec-tuning 1\n9vadd 0123456789abcdef sm_80 \"g\" N=1 num_warps=4 num_stages=0\n", 2, "expected a kernel name"},
        {"tilec-tuning 1\nvadd 0123456789abcdef sm_80 \"g\"\n", 2, "expected a shape bucket"},
    };
    trt_tuning *t;
    assert_int_equal(trt_tuning_create(&t), TRT_OK);
    char path[512], text[1024], want[1024];
    temp_path(path, sizeof path, "bad");
    /* a good file first: what every failed load must leave alone */
    snprintf(text, sizeof text, "tilec-tuning 1\n%s\n", good);
    write_file(path, text);
    if (trt_tuning_load(t, path) != TRT_OK) fail_msg("%s", trt_tuning_error(t));
    assert_int_equal(trt_tuning_num_entries(t), 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].text);
        assert_int_equal(trt_tuning_load(t, path), TRT_ERR_INVALID_ARGUMENT);
        snprintf(want, sizeof want, "%s:%d: error: ", path, cases[i].line);
        if (strncmp(trt_tuning_error(t), want, strlen(want)) || !strstr(trt_tuning_error(t), cases[i].says))
            fail_msg("case %zu: got '%s', want '%s...%s'", i, trt_tuning_error(t), want, cases[i].says);
        assert_int_equal(trt_tuning_num_entries(t), 1);
    }
    /* a duplicate key names the first line; an entry before it is not kept */
    snprintf(text, sizeof text,
             "tilec-tuning 1\nvadd 0123456789abcdef sm_80 \"other\" N=1 num_warps=4 num_stages=0\n%s\n%s  # again\n",
             good, good);
    write_file(path, text);
    assert_int_equal(trt_tuning_load(t, path), TRT_ERR_INVALID_ARGUMENT);
    snprintf(want, sizeof want, "%s:4: error: a second entry for the key of line 3", path);
    assert_string_equal(trt_tuning_error(t), want);
    assert_int_equal(trt_tuning_num_entries(t), 1);
    /* a missing file */
    remove(path);
    assert_int_equal(trt_tuning_load(t, path), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_tuning_error(t), "cannot read"));
    trt_tuning_free(t);
}

/* Misuse: a status and a message, never a crash. */
static void test_misuse(void **state) {
    (void)state;
    vadd_fx f;
    vadd_setup(&f);
    trt_tune_space sp = vadd_space(&f);
    assert_int_equal(trt_tune(NULL, &sp, NULL, NULL, NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_tune(dev, NULL, NULL, NULL, NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(dev), "trt_tune: space is NULL"));
    sp.nconfigs = 0;
    assert_int_equal(trt_tune(dev, &sp, NULL, NULL, NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(dev), "0 configurations; give 1 to 64"));
    sp.nconfigs = TRT_TUNE_MAX_CONFIGS + 1;
    assert_int_equal(trt_tune(dev, &sp, NULL, NULL, NULL), TRT_ERR_INVALID_ARGUMENT);
    sp = vadd_space(&f);
    sp.bucket = "N = 4096";
    assert_int_equal(trt_tune(dev, &sp, NULL, NULL, NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(dev), "the bucket must be"));
    sp = vadd_space(&f);
    sp.kernel = "vsub";
    assert_int_equal(trt_tune(dev, &sp, NULL, NULL, NULL), TRT_ERR_NOT_FOUND);
    assert_non_null(strstr(trt_last_error(dev), "no kernel 'vsub' in vadd.tile"));
    sp = vadd_space(&f);
    sp.grid = NULL;
    assert_int_equal(trt_tune(dev, &sp, NULL, NULL, NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(dev), "grid function is NULL"));
    /* a launch that fails (too few arguments) prunes, with the runtime's reason */
    sp = vadd_space(&f);
    sp.nargs = 3;
    trt_tune_outcome o[4];
    assert_int_equal(trt_tune(dev, &sp, NULL, o, NULL), TRT_ERR_COMPILE);
    assert_true(o[0].pruned);
    assert_non_null(strstr(o[0].reason, "the launch failed: "));
    /* the tuning's own */
    trt_tuning *t;
    assert_int_equal(trt_tuning_create(NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_tuning_create(&t), TRT_OK);
    assert_int_equal(trt_tuning_load(t, NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_tuning_error(t), "path is NULL"));
    assert_int_equal(trt_tuning_load(NULL, "x"), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_tuning_save(t, "/nonexistent-dir/tune.txt"), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_tuning_error(t), "/nonexistent-dir/tune.txt: error: cannot write"));
    static const tilec_define bad = {"num_warps", 8};
    trt_tune_config cb = {&bad, 1, 4, 0};
    assert_int_equal(trt_tuning_put(t, dev, vadd_src, 10, "vadd", "N=1", &cb), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_tuning_error(t), "'num_warps' is a setting of the configuration, not a const"));
    trt_tune_config c6 = {NULL, 0, 6, 0};
    assert_int_equal(trt_tuning_put(t, dev, vadd_src, 10, "vadd", "N=1", &c6), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_tuning_error(t), "num_warps 6 must be 0"));
    assert_int_equal(trt_tuning_put(t, dev, vadd_src, 10, "v add", "N=1", &c6), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_tuning_put(t, NULL, vadd_src, 10, "vadd", "N=1", &c6), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_tuning_num_entries(t), 0);
    assert_int_equal(trt_use_tuning(NULL, t), TRT_ERR_INVALID_ARGUMENT);
    assert_string_equal(trt_tuning_last_used(t), "");
    trt_tuning_free(t);
    trt_tuning_free(NULL);
    vadd_teardown(&f);
}

/* The GPU's timed measure (runtime/tune_time.c: warm-up, an L2 flush
 * before each timed launch, the median of a host clock) is what a device
 * whose table has no tune_cost gets; run here on a copy of the CPU
 * device's table without its stand-in, so that its code runs somewhere
 * in CI: the costs are times (timed), the flush kernel compiles and runs
 * (256 MB, interpreted: slow, so one timed run), and the winner is
 * recorded as measured. */
static void test_timed_measure_on_host(void **state) {
    (void)state;
    if (strcmp(device_arg, "cpu") != 0) skip(); /* the emulator would take minutes over 256 MB */
    vadd_fx f;
    vadd_setup(&f);
    trt_tune_space sp = vadd_space(&f);
    sp.configs = &vadd_configs[2], sp.nconfigs = 1; /* BLOCK 1024 */
    sp.warmup = 1, sp.reps = 1;
    const rt_device_ops *ops = dev->ops;
    rt_device_ops timed = *ops;
    timed.tune_cost = NULL;
    dev->ops = &timed;
    trt_tuning *t;
    assert_int_equal(trt_tuning_create(&t), TRT_OK);
    trt_tune_outcome o;
    trt_status st = trt_tune(dev, &sp, t, &o, NULL);
    dev->ops = ops;
    if (st != TRT_OK) fail_msg("%s", trt_last_error(dev));
    assert_false(o.pruned);
    assert_true(o.timed);
    assert_true(o.cost > 0);
    char path[512];
    temp_path(path, sizeof path, "timed");
    assert_int_equal(trt_tuning_save(t, path), TRT_OK);
    char *text = read_file(path);
    remove(path);
    assert_non_null(strstr(text, " us\n"));
    free(text);
    trt_tuning_free(t);
    vadd_teardown(&f);
}

/* Buckets: each size up to a power of two. */
static void test_bucket(void **state) {
    (void)state;
    const char *names[] = {"M", "N", "K"};
    int64_t sizes[] = {4000, 1, 3};
    char b[32];
    assert_int_equal(trt_tune_bucket(b, sizeof b, names, sizes, 3), TRT_OK);
    assert_string_equal(b, "M=4096,N=1,K=4");
    assert_int_equal(trt_tune_bucket(b, 8, names, sizes, 3), TRT_ERR_INVALID_ARGUMENT); /* does not fit */
    assert_string_equal(b, "");
    sizes[1] = 0;
    assert_int_equal(trt_tune_bucket(b, sizeof b, names, sizes, 3), TRT_ERR_INVALID_ARGUMENT);
    const char *spaced[] = {"M M"};
    assert_int_equal(trt_tune_bucket(b, sizeof b, spaced, sizes, 1), TRT_ERR_INVALID_ARGUMENT);
}

/* The tuner compiles on rt_parallel_for's threads: every index once, none
 * past n (an atomic count each, from whichever thread ran it). */
static void count_index(void *ctx, size_t i) { atomic_fetch_add(&((atomic_int *)ctx)[i], 1); }

static void test_parallel_for(void **state) {
    (void)state;
    enum { MANY = 1000 };
    static atomic_int seen[MANY + 1];
    for (size_t n = 0; n <= MANY; n += n < 3 ? 1 : MANY - 3) {
        for (int i = 0; i <= MANY; i++) atomic_init(&seen[i], 0);
        rt_parallel_for(n, count_index, seen);
        for (size_t i = 0; i <= MANY; i++)
            if (atomic_load(&seen[i]) != (i < n)) fail_msg("n %zu: index %zu ran %d times", n, i, atomic_load(&seen[i]));
    }
}

int main(int argc, char **argv) {
    device_arg = argc > 1 ? argv[1] : "cpu";
    trt_device_kind kind = !strcmp(device_arg, "emu") ? TRT_DEVICE_EMU : TRT_DEVICE_CPU;
    if (strcmp(device_arg, "emu") && strcmp(device_arg, "cpu")) {
        fprintf(stderr, "usage: %s cpu|emu\n", argv[0]);
        return 2;
    }
    char why[256];
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], why);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standin_winner), cmocka_unit_test(test_other_kernels_not_compiled),
        cmocka_unit_test(test_prune_shared_memory),
        cmocka_unit_test(test_prune_spills),
        cmocka_unit_test(test_file_round_trip), cmocka_unit_test(test_malformed_lines),
        cmocka_unit_test(test_misuse),         cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_timed_measure_on_host), cmocka_unit_test(test_parallel_for),
    };
    int failed = _cmocka_run_group_tests(device_arg, tests, sizeof tests / sizeof tests[0], NULL, NULL);
    trt_close(dev);
    return failed ? 1 : 0;
}
