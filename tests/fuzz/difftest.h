/* difftest.h - what the differential tester's generator (difftest_gen.c)
 * hands its driver (difftest.c): one random, well-typed .tile kernel with
 * the buffers it takes, the launch, and for each output the tolerance the
 * generator derived from the ops that computed it (see difftest.c's header
 * for the rule). Private to tests/fuzz. */
#ifndef TILEC_TESTS_FUZZ_DIFFTEST_H
#define TILEC_TESTS_FUZZ_DIFFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    DT_MAX_BUFS = 16, /* kernel pointer parameters, inputs and outputs */
    DT_ATOMIC_SLOTS = 16, /* elements of an atomics output: indices are masked to it */
};

typedef enum dt_type { DT_I8, DT_I16, DT_I32, DT_I64, DT_F16, DT_BF16, DT_F32, DT_NTYPES } dt_type;

/* How an input's random values are drawn (difftest.c fills them). */
typedef enum dt_fill {
    DT_FILL_EXACT, /* floats k/8 with |k| <= 64: sums and products stay exact */
    DT_FILL_ROUGH, /* floats uniform in [-4, 4] with every mantissa bit random */
    DT_FILL_SMALL, /* integers in [-100, 100] */
    DT_FILL_FULL,  /* integers of every bit pattern */
} dt_fill;

typedef struct dt_buf {
    dt_type type;
    size_t count;   /* elements */
    bool output;    /* poisoned before the run and compared after it */
    bool inout;     /* an output that starts filled instead (atomics) */
    dt_fill fill;   /* inputs and in/out buffers */
    double tol;     /* outputs: the largest |cpu - emu| allowed per element; 0: bit for bit */
    char name[16];  /* the kernel parameter: "out" and an int, whatever -O3 assumes of it */
} dt_buf;

/* Features a program uses, for the campaign's mix (bits). */
enum {
    DT_F_ELEM = 1 << 0,
    DT_F_BCAST = 1 << 1,
    DT_F_SHAPE = 1 << 2,
    DT_F_REDUCE = 1 << 3,
    DT_F_SCAN = 1 << 4,
    DT_F_DOT = 1 << 5,
    DT_F_LOOP = 1 << 6,
    DT_F_STAGES = 1 << 7,
    DT_F_IF = 1 << 8,
    DT_F_WHILE = 1 << 9,
    DT_F_ATOMIC = 1 << 10,
    DT_F_CAST = 1 << 11,
    DT_F_MATH = 1 << 12, /* approximate transcendental functions */
    DT_NFEATURES = 13,
};
extern const char *const dt_feature_names[DT_NFEATURES];

typedef struct dt_program {
    char *src; /* the .tile text, kernel `k` */
    dt_buf bufs[DT_MAX_BUFS];
    int nbufs;
    /* the scalar parameters after the pointers, in this order */
    int32_t nr, nc, kt, trips, k;
    float s;
    uint32_t grid[2];
    int num_warps;
    const char *arch; /* the emulator device's target: sm_80 (mma.sync, cp.async) or sm_90 (wgmma too) */
    unsigned features;
} dt_program;

extern const char *const dt_type_names[DT_NTYPES];
size_t dt_type_size(dt_type t);
bool dt_is_float(dt_type t);

/* The program of (seed, iter): everything from those two numbers. */
void dt_generate(uint64_t seed, uint64_t iter, dt_program *p);
void dt_program_free(dt_program *p);

#endif
