/* device_harness.c - the device tests' shared helpers (device_harness.h):
 * the device under test and its opening, compiling, buffers, launches,
 * random and poisoned data, comparisons, and the random numbers' C
 * reference. Moved verbatim from test_runtime_devices.c when it was split
 * by concern. */
#include "device_harness.h"

trt_device_kind kind;
trt_device *dev;

/* ---- helpers ----------------------------------------------------------- */

/* The kernel `name` of `src` compiled for this device (with name NULL,
 * only the module); num_warps 0 leaves it to the compiler. */
trt_kernel *compile_with(prog *p, const char *file, const char *src, const char *name,
                         const tilec_define *defs, size_t ndefs, int num_warps) {
    trt_compile_options o = {.num_warps = num_warps, .defines = defs, .ndefines = ndefs};
    p->text = NULL;
    if (trt_compile(dev, file, src, strlen(src), &o, &p->mod) != TRT_OK)
        fail_msg("%s does not compile: %s", file, trt_last_error(dev));
    trt_kernel *k = NULL;
    if (name) OK(trt_get_kernel(p->mod, name, &k));
    return k;
}

trt_kernel *compile_text(prog *p, const char *file, const char *src, const char *name,
                         const tilec_define *defs, size_t ndefs) {
    return compile_with(p, file, src, name, defs, ndefs, 0);
}

/* A kernel from a .tile file in the source tree (stdlib/, samples/,
 * tests/kernels/); with name NULL, only the module; num_warps 0 leaves it
 * to the compiler. */
trt_kernel *compile_file_with(prog *p, const char *rel, const char *name, const tilec_define *defs, size_t ndefs,
                              int num_warps) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = 0;
    fclose(f);
    trt_kernel *k = compile_with(p, rel, text, name, defs, ndefs, num_warps);
    p->text = text;
    return k;
}

trt_kernel *compile_file(prog *p, const char *rel, const char *name, const tilec_define *defs, size_t ndefs) {
    return compile_file_with(p, rel, name, defs, ndefs, 0);
}

void drop(prog *p) {
    trt_module_free(p->mod);
    free(p->text);
}

trt_buffer upload(const void *host, size_t bytes) {
    trt_buffer b;
    OK(trt_alloc(dev, bytes, &b));
    OK(trt_write(dev, b, 0, host, bytes));
    return b;
}

void download(trt_buffer b, void *host, size_t bytes) {
    OK(trt_read(dev, b, 0, host, bytes));
    OK(trt_free(dev, b));
}

void launch(trt_kernel *k, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args, size_t nargs) {
    trt_status st = trt_launch(k, gx, gy, gz, args, nargs);
    if (st == TRT_OK) st = trt_sync(dev);
    if (st != TRT_OK) fail_msg("launch: %s: %s", trt_status_name(st), trt_last_error(dev));
}

uint32_t cdiv(int n, int b) { return (uint32_t)((n + b - 1) / b); }

/* Random values with a fractional part, both signs, never all zero. */
float rand_f32(void) { return (float)(rand() % 2000001 - 1000000) / 1021.0f; }
float *rand_f32s(int n) {
    float *p = malloc(sizeof(float) * (size_t)n + 1);
    for (int i = 0; i < n; i++) p[i] = rand_f32();
    return p;
}
float *poison_f32s(int n) {
    float *p = malloc(sizeof(float) * (size_t)n + 1);
    for (int i = 0; i < n; i++) p[i] = NAN;
    return p;
}
int32_t rand_i32(void) { return (int32_t)((uint32_t)rand() << 16 ^ (uint32_t)rand()); }

bool same_f32(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

void expect_f32(const char *what, int n, const float *got, const float *want) {
    for (int i = 0; i < n; i++)
        if (!same_f32(got[i], want[i]))
            fail_msg("%s on %s: [%d] = %.9g, want %.9g", what, trt_device_name(dev), i, got[i], want[i]);
}

/* ---- elementwise, tails and grid sizes ----------------------------------- */

const char vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
    "}\n";

const char vsub_as_vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) - load(y + offs, mask), mask);\n"
    "}\n";

float vadd_first(trt_device *d, trt_module *m) {
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(m, "vadd", &k), TRT_OK);
    float x = 5, y = 3, out = NAN;
    trt_buffer b[3];
    for (int i = 0; i < 3; i++) assert_int_equal(trt_alloc(d, 4, &b[i]), TRT_OK);
    trt_write(d, b[0], 0, &x, 4), trt_write(d, b[1], 0, &y, 4), trt_write(d, b[2], 0, &out, 4);
    trt_arg a[4] = {trt_buf(b[0]), trt_buf(b[1]), trt_buf(b[2]), trt_int(1)};
    assert_int_equal(trt_launch(k, 1, 1, 1, a, 4), TRT_OK);
    assert_int_equal(trt_read(d, b[2], 0, &out, 4), TRT_OK);
    for (int i = 0; i < 3; i++) trt_free(d, b[i]);
    return out;
}

/* Storage of one element type: bytes, to and from float. */
const dtype dtypes[3] = {{"f32", 4, put_f32, get_f32, 1e-5}, {"f16", 2, put_f16, get_f16, 2e-3},
                               {"bf16", 2, put_bf16, get_bf16, 1.6e-2}};

/* ---- random numbers: the C reference -------------------------------------------- */

/* Philox4x32-10 as docs/language.md spells it out, all four words. */
void philox4x32_10(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p2 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t c0 = (uint32_t)(p2 >> 32) ^ ctr[1] ^ k0, c2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
        ctr[0] = c0, ctr[1] = (uint32_t)p2, ctr[2] = c2, ctr[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
}

/* randint(seed, offset): the first word for counter (offset, 0, 0, 0) and
 * key (the seed's low and high 32 bits, an i32 seed sign-extended). */
uint32_t randint_ref(int64_t seed, int32_t offset) {
    uint32_t ctr[4] = {(uint32_t)offset, 0, 0, 0};
    philox4x32_10(ctr, (uint32_t)(uint64_t)seed, (uint32_t)((uint64_t)seed >> 32));
    return ctr[0];
}

/* rand: the word as i32, folded to [0, 2^31) (negative u to -u - 1, that
 * is ~u), converted to f32 and scaled by the f32 0x1.fffffep-32. */
float rand_ref(int64_t seed, int32_t offset) {
    uint32_t u = randint_ref(seed, offset);
    if (u >> 31) u = ~u;
    return (float)u * 0x1.fffffep-32f;
}

/* ---- opening the device named on the command line ------------------------- */

int harness_open(int argc, char **argv, const char **which_out) {
    const char *which = argc > 1 ? argv[1] : "cpu", *emu_arch = NULL;
    if (!strcmp(which, "cpu")) kind = TRT_DEVICE_CPU;
    else if (!strcmp(which, "cuda")) kind = TRT_DEVICE_CUDA;
    else if (!strcmp(which, "emu")) kind = TRT_DEVICE_EMU;
    else if (!strncmp(which, "emu:", 4)) kind = TRT_DEVICE_EMU, emu_arch = which + 4; /* emu:sm_90a */
    else {
        fprintf(stderr, "usage: %s cpu|cuda|emu|emu:ARCH\n", argv[0]);
        return 2;
    }
    char why[512];
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        const char *req = getenv("TILEC_TEST_REQUIRE_CUDA");
        bool required = req && *req && strcmp(req, "0") != 0;
        fprintf(stderr, "%s: %s device tests %s: %s\n", argv[0], which, required ? "FAILED" : "SKIPPED", why);
        return required ? 1 : 77; /* 77: ctest's SKIP_RETURN_CODE */
    }
    if (emu_arch && trt_emu_set_arch(dev, emu_arch) != TRT_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], trt_last_error(dev));
        trt_close(dev);
        return 2;
    }
    printf("device: %s%s%s\n", trt_device_name(dev), emu_arch ? ", compiling for " : "", emu_arch ? emu_arch : "");
    srand(2026);
    *which_out = which;
    return 0;
}

int harness_main(int argc, char **argv, const struct CMUnitTest *tests, size_t ntests) {
    const char *which;
    int rc = harness_open(argc, argv, &which);
    if (rc) return rc;
    /* TILEC_TEST_SKIP: tests to leave out (cmocka's pattern, '*' and '?'):
     * scripts/gpu-check.sh's memcheck runs skip those whose device-side
     * assert or trap is the point, which the sanitizer counts as errors */
    const char *skip = getenv("TILEC_TEST_SKIP");
    if (skip && *skip) cmocka_set_skip_filter(skip);
    int failed = _cmocka_run_group_tests(which, tests, ntests, NULL, NULL);
    trt_close(dev);
    return failed ? 1 : 0;
}
