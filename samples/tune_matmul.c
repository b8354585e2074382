/* tune_matmul - tunes the stdlib's f16 matrix product for one shape on a
 * device and keeps the winner in a tuning file, which tls_matmul then
 * takes (docs/tuning.md).
 *
 *   usage: tune_matmul [M N K] [cpu|emu|cuda|auto] [FILE]
 * FILE (default tuning.txt) is read first when it exists and written
 * back with the new entry. Each configuration is a row of Triton's matmul
 * tutorial list, compiled with the layout consts tls_matmul gives
 * row-major operands; the output says which were pruned and why, and
 * each one's cost: microseconds on a GPU, and on the CPU and emulator
 * devices a stand-in that is not a time. Then one tls_matmul of the shape
 * runs with the tuning and is checked. Exit status 0 when all went well. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilec_stdlib.h"

#define CHECK(call)                                                           \
    do {                                                                      \
        if ((call) != TRT_OK) {                                               \
            fprintf(stderr, "%s failed:\n%s\n", #call, trt_last_error(dev)); \
            return 1;                                                         \
        }                                                                     \
    } while (0)

enum { NCONFIGS = 8, NCONSTS = 8 };

/* BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages */
static const int rows[NCONFIGS][6] = {
    {128, 128, 32, 8, 4, 4}, {128, 64, 32, 8, 4, 4}, {64, 128, 32, 8, 4, 4}, {64, 64, 32, 8, 4, 4},
    {64, 32, 32, 8, 2, 4},   {32, 64, 32, 8, 2, 4},  {32, 32, 32, 8, 2, 4},  {16, 16, 16, 4, 1, 2},
};

typedef struct shape {
    int64_t M, N, K;
} shape;

static void grid(void *user, const trt_tune_config *cfg, uint32_t g[3]) {
    const shape *s = user;
    int64_t bm = cfg->defines[0].value, bn = cfg->defines[1].value;
    g[0] = (uint32_t)(((s->M + bm - 1) / bm) * ((s->N + bn - 1) / bn));
    g[1] = 1; /* the batch */
}

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) == (size_t)n) s[n] = 0, *len = (size_t)n;
    else free(s), s = NULL;
    fclose(f);
    return s;
}

/* f16 from float (normal values and zero only here), round to nearest even; and back */
static uint16_t to_f16(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    uint32_t sign = (u >> 16) & 0x8000, mant = u & 0x7fffff;
    int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (uint16_t)sign;
    uint32_t r = (uint32_t)e << 10 | mant >> 13, rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}
static float from_f16(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e ? ldexpf((float)(1024 + m), e - 25) : ldexpf((float)m, -24);
    return (h & 0x8000) ? -v : v;
}

int main(int argc, char **argv) {
    shape s = {argc > 3 ? atoll(argv[1]) : 64, argc > 3 ? atoll(argv[2]) : 64, argc > 3 ? atoll(argv[3]) : 64};
    const char *kind_name = argc > 4 ? argv[4] : argc == 2 ? argv[1] : "auto";
    const char *path = argc > 5 ? argv[5] : "tuning.txt";
    trt_device_kind kind = !strcmp(kind_name, "cpu")    ? TRT_DEVICE_CPU
                           : !strcmp(kind_name, "emu")  ? TRT_DEVICE_EMU
                           : !strcmp(kind_name, "cuda") ? TRT_DEVICE_CUDA
                                                        : TRT_DEVICE_AUTO;
    if (s.M < 1 || s.N < 1 || s.K < 1 || s.M > 65536 || s.N > 65536 || s.K > 65536) {
        fprintf(stderr, "usage: tune_matmul [M N K] [cpu|emu|cuda|auto] [FILE] (sizes 1 to 65536)\n");
        return 2;
    }
    size_t len;
    char *src = read_text(TILEC_STDLIB_DIR "/matmul.tile", &len);
    if (!src) {
        fprintf(stderr, "cannot read %s\n", TILEC_STDLIB_DIR "/matmul.tile");
        return 1;
    }
    char why[512];
    trt_device *dev;
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    /* a (M x K), b (K x N) and c (M x N), row-major f16 */
    size_t na = (size_t)(s.M * s.K), nb = (size_t)(s.K * s.N), nc = (size_t)(s.M * s.N);
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2), *c = malloc(nc * 2);
    for (size_t i = 0; i < na; i++) a[i] = to_f16((float)((int)(i % 7) - 3) / 4);
    for (size_t i = 0; i < nb; i++) b[i] = to_f16((float)((int)(i % 5) - 2) / 4);
    trt_buffer A, B, C;
    CHECK(trt_alloc(dev, na * 2, &A));
    CHECK(trt_alloc(dev, nb * 2, &B));
    CHECK(trt_alloc(dev, nc * 2, &C));
    CHECK(trt_write(dev, A, 0, a, na * 2));
    CHECK(trt_write(dev, B, 0, b, nb * 2));

    /* the configurations, with the consts tls_matmul gives row-major
     * operands (stdlib/matmul.tile's header): rows contiguous (layout 1),
     * no bias, no activation, EVEN when the tiles divide the shape */
    static tilec_define defs[NCONFIGS][NCONSTS];
    trt_tune_config cfgs[NCONFIGS];
    for (int i = 0; i < NCONFIGS; i++) {
        const int *r = rows[i];
        bool even = s.M % r[0] == 0 && s.N % r[1] == 0 && s.K % r[2] == 0;
        const tilec_define d[NCONSTS] = {{"BLOCK_M", r[0]}, {"BLOCK_N", r[1]}, {"BLOCK_K", r[2]}, {"GROUP_M", r[3]},
                                         {"A_LAYOUT", 1},   {"B_LAYOUT", 1},   {"C_LAYOUT", 1},   {"EVEN", even}};
        memcpy(defs[i], d, sizeof d);
        cfgs[i] = (trt_tune_config){defs[i], NCONSTS, r[4], r[5]};
    }
    trt_arg args[] = {trt_buf(A),    trt_buf(B), trt_buf(C), trt_int(s.M), trt_int(s.N), trt_int(s.K),
                      trt_int(s.K),  trt_int(1), trt_int(s.N), trt_int(1), trt_int(s.N), trt_int(1),
                      trt_int(0),    trt_int(0), trt_int(0), trt_buf(C)};
    const char *names[] = {"M", "N", "K"};
    int64_t sizes[] = {s.M, s.N, s.K};
    char bucket[TRT_TUNE_MAX_BUCKET];
    CHECK(trt_tune_bucket(bucket, sizeof bucket, names, sizes, 3));
    trt_tune_space sp = {.file = "stdlib/matmul.tile", .source = src, .len = len, .kernel = "matmul_f16",
                         .configs = cfgs, .nconfigs = NCONFIGS, .bucket = bucket, .grid = grid, .user = &s,
                         .args = args, .nargs = sizeof args / sizeof args[0]};

    trt_tuning *t;
    if (trt_tuning_create(&t) != TRT_OK) return 1;
    if (access(path, F_OK) == 0 && trt_tuning_load(t, path) != TRT_OK) {
        fprintf(stderr, "%s\n", trt_tuning_error(t));
        return 1;
    }
    trt_tune_outcome o[NCONFIGS];
    size_t best;
    printf("device: %s; matmul_f16 %s\n", trt_device_name(dev), bucket);
    CHECK(trt_tune(dev, &sp, t, o, &best));
    for (int i = 0; i < NCONFIGS; i++) {
        printf("  %3d x %3d x %2d, GROUP_M %d, %d warps, %d stages: ", rows[i][0], rows[i][1], rows[i][2], rows[i][3],
               rows[i][4], rows[i][5]);
        if (o[i].pruned) printf("pruned: %s\n", o[i].reason);
        else printf("%.6g %s%s\n", o[i].cost, o[i].timed ? "us" : "(stand-in, not a time)", (size_t)i == best ? "  <- best" : "");
    }
    if (trt_tuning_save(t, path) != TRT_OK) {
        fprintf(stderr, "%s\n", trt_tuning_error(t));
        return 1;
    }
    printf("wrote %s (%zu entries)\n", path, trt_tuning_num_entries(t));

    /* the stdlib takes the entry */
    CHECK(trt_use_tuning(dev, t));
    CHECK(tls_matmul(dev, TLS_F16, tls_mem_of(A), tls_mem_of(B), tls_mem_of(C), s.M, s.N, s.K, s.K, 1, s.N, 1, s.N, 1,
                     NULL));
    CHECK(trt_read(dev, C, 0, c, nc * 2));
    int bad = 0;
    for (int64_t i = 0; i < s.M && !bad; i++)
        for (int64_t j = 0; j < s.N; j++) {
            double want = 0;
            for (int64_t k = 0; k < s.K; k++) want += (double)from_f16(a[i * s.K + k]) * from_f16(b[k * s.N + j]);
            if (fabs(from_f16(c[i * s.N + j]) - want) > 1e-2 * (1 + fabs(want))) {
                fprintf(stderr, "c[%lld][%lld] is %g, not %g\n", (long long)i, (long long)j, from_f16(c[i * s.N + j]),
                        want);
                bad = 1;
                break;
            }
        }
    const char *used = trt_tuning_last_used(t);
    printf("tls_matmul took: %s\n", *used ? used : "(the built-in table)");
    if (!*used) fprintf(stderr, "tls_matmul did not take the tuned entry: %s\n", trt_tuning_last_note(t));
    int failed = bad || !*used;
    trt_close(dev);
    trt_tuning_free(t);
    free(a), free(b), free(c), free(src);
    return failed;
}
