/* test_runtime_devices_math.c - the device tests of arithmetic: the math
 * builtins and integer casts exactly, the transcendentals and erf within a
 * stated tolerance, and rand bit for bit against Philox in C.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_math cpu|cuda|emu. */
#include "device_harness.h"

/* ---- exactly defined arithmetic ----------------------------------------- */

static void test_math_builtins_exact(void **state) {
    (void)state;
    static const char src[] =
        "kernel m(a: *f32, b: *f32, c: *f32, out: *f32, n: i32, const B: i32 = 256) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    let x = load(a + o, k);\n"
        "    let y = load(b + o, k);\n"
        "    let z = load(c + o, k);\n"
        "    store(out + o, minimum(x, y), k);\n"
        "    store(out + n + o, maximum(x, y), k);\n"
        "    store(out + 2 * n + o, where(x < y, abs(x), floor(y)), k);\n"
        "    store(out + 3 * n + o, ceil(x) + sqrt(abs(y)), k);\n"
        "    store(out + 4 * n + o, fma(x, y, z), k);\n"
        "    store(out + 5 * n + o, x / y - x % y, k);\n"
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "m.tile", src, "m", NULL, 0);
    int n = 3001;
    float *a = rand_f32s(n), *b = rand_f32s(n), *c = rand_f32s(n), *out = poison_f32s(6 * n), *want = malloc(24 * (size_t)n);
    /* the awkward values: NaN, signed zeros, infinities, equal pairs */
    const float special[] = {NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 1.0f, -1.0f};
    for (int i = 0; i < 64; i++) a[i] = special[i % 7], b[i] = special[i / 7 % 7];
    a[100] = b[100] = 2.5f;
    for (int i = 0; i < n; i++) {
        float x = a[i], y = b[i], z = c[i];
        want[i] = isnan(x) || isnan(y) ? NAN : (x == y ? (signbit(x) ? x : y) : fminf(x, y));
        want[n + i] = isnan(x) || isnan(y) ? NAN : (x == y ? (signbit(x) ? y : x) : fmaxf(x, y));
        want[2 * n + i] = x < y ? fabsf(x) : floorf(y);
        volatile float s = sqrtf(fabsf(y));
        want[3 * n + i] = ceilf(x) + s;
        want[4 * n + i] = fmaf(x, y, z);
        volatile float q = x / y, r = fmodf(x, y);
        want[5 * n + i] = q - r;
    }
    size_t bytes = 4 * (size_t)n;
    trt_buffer ba = upload(a, bytes), bb = upload(b, bytes), bc = upload(c, bytes), bo = upload(out, 6 * bytes);
    trt_arg args[5] = {trt_buf(ba), trt_buf(bb), trt_buf(bc), trt_buf(bo), trt_int(n)};
    launch(k, cdiv(n, 256), 1, 1, args, 5);
    download(bo, out, 6 * bytes);
    const char *names[] = {"minimum", "maximum", "where/abs/floor", "ceil+sqrt", "fma", "x/y - x%y"};
    for (int j = 0; j < 6; j++) {
        for (int i = 0; i < n; i++) {
            float g = out[j * n + i], w = want[j * n + i];
            /* min/max of +0 and -0 must pick the sign too */
            bool same = same_f32(g, w) && (g != 0 || signbit(g) == signbit(w) || j > 1);
            if (!same) fail_msg("%s on %s: [%d] (x=%g y=%g) = %g, want %g", names[j], trt_device_name(dev), i, a[i], b[i], g, w);
        }
    }
    trt_free(dev, ba), trt_free(dev, bb), trt_free(dev, bc);
    free(a), free(b), free(c), free(out), free(want);
    drop(&p);
}

/* Integer widths and conversions, all defined exactly. */
static void test_integers_and_casts(void **state) {
    (void)state;
    static const char src[] =
        "kernel ints(a: *i32, b: *i32, f: *f32, o8: *i8, o16: *i16, o32: *i32, o64: *i64, oh: *f16, obf: *bf16,\n"
        "            n: i32, const B: i32 = 128) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    let x = load(a + o, k);\n"
        "    let y = load(b + o, k, other = 1);\n"
        "    let v = load(f + o, k);\n"
        "    store(o8 + o, cast(x, i8) + cast(y, i8), k);\n"
        "    store(o16 + o, cast(x >> 3, i16) * cast(y, i16), k);\n"
        "    store(o32 + o, x / y + x % y + (x << 3) + (y >> 5) + (x ^ y) + (!x & 255), k);\n"
        "    store(o64 + o, cast(x, i64) * cast(y, i64) + cast(v, i64), k);\n"
        "    store(oh + o, v, k);\n"
        "    store(obf + o, v, k);\n"
        "    store(o32 + n + o, cast(v * 3.0e6, i32), k);\n"
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "ints.tile", src, "ints", NULL, 0);
    int n = 1500;
    int32_t *a = malloc(4 * (size_t)n), *b = malloc(4 * (size_t)n);
    float *f = malloc(4 * (size_t)n);
    for (int i = 0; i < n; i++) {
        a[i] = rand_i32();
        b[i] = rand_i32() >> (rand() % 31);
        if (b[i] == 0 || (b[i] == -1 && a[i] == INT32_MIN)) b[i] = 3; /* defined differently per device */
        f[i] = rand_f32() * (float)(1 << (rand() % 12));
    }
    f[0] = NAN, f[1] = INFINITY, f[2] = -INFINITY, f[3] = 65520.0f, f[4] = 1e-7f, a[5] = INT32_MIN, a[6] = INT32_MAX;
    int8_t *o8 = malloc((size_t)n);
    int16_t *o16 = malloc(2 * (size_t)n);
    int32_t *o32 = malloc(8 * (size_t)n);
    int64_t *o64 = malloc(8 * (size_t)n);
    uint16_t *oh = malloc(2 * (size_t)n), *obf = malloc(2 * (size_t)n);
    memset(o8, 0x55, (size_t)n), memset(o16, 0x55, 2 * (size_t)n), memset(o32, 0x55, 8 * (size_t)n);
    memset(o64, 0x55, 8 * (size_t)n), memset(oh, 0x55, 2 * (size_t)n), memset(obf, 0x55, 2 * (size_t)n);
    trt_buffer ba = upload(a, 4 * (size_t)n), bb = upload(b, 4 * (size_t)n), bf = upload(f, 4 * (size_t)n),
               b8 = upload(o8, (size_t)n), b16 = upload(o16, 2 * (size_t)n), b32 = upload(o32, 8 * (size_t)n),
               b64 = upload(o64, 8 * (size_t)n), bh = upload(oh, 2 * (size_t)n), bbf = upload(obf, 2 * (size_t)n);
    trt_arg args[10] = {trt_buf(ba), trt_buf(bb),  trt_buf(bf), trt_buf(b8),  trt_buf(b16),
                        trt_buf(b32), trt_buf(b64), trt_buf(bh), trt_buf(bbf), trt_int(n)};
    launch(k, cdiv(n, 128), 1, 1, args, 10);
    download(b8, o8, (size_t)n), download(b16, o16, 2 * (size_t)n), download(b32, o32, 8 * (size_t)n);
    download(b64, o64, 8 * (size_t)n), download(bh, oh, 2 * (size_t)n), download(bbf, obf, 2 * (size_t)n);
    for (int i = 0; i < n; i++) {
        int32_t x = a[i], y = b[i];
        float v = f[i];
        int8_t w8 = (int8_t)(uint8_t)((uint8_t)x + (uint8_t)y);
        int16_t w16 = (int16_t)(uint16_t)((uint32_t)(uint16_t)(x >> 3) * (uint32_t)(uint16_t)y);
        uint32_t w32 = (uint32_t)(x / y) + (uint32_t)(x % y) + ((uint32_t)x << 3) + (uint32_t)(y >> 5) +
                       (uint32_t)(x ^ y) + (uint32_t)(~x & 255);
        int64_t vi = isnan(v) ? 0 : v >= 9.2233720368547758e18f ? INT64_MAX : v <= -9.2233720368547758e18f ? INT64_MIN : (int64_t)v;
        int64_t w64 = (int64_t)((uint64_t)((int64_t)x * (int64_t)y) + (uint64_t)vi);
        double big = (double)(v * 3.0e6f);
        int32_t wsat = isnan(big) ? 0 : big >= 2147483647.0 ? INT32_MAX : big <= -2147483648.0 ? INT32_MIN : (int32_t)big;
        uint32_t fb;
        memcpy(&fb, &v, 4);
        uint16_t wbf = isnan(v) ? 0 : (uint16_t)((fb + 0x7fff + ((fb >> 16) & 1)) >> 16);
        if (o8[i] != w8) fail_msg("i8 [%d] = %d, want %d", i, o8[i], w8);
        if (o16[i] != w16) fail_msg("i16 [%d] = %d, want %d", i, o16[i], w16);
        if ((uint32_t)o32[i] != w32) fail_msg("i32 [%d] (x=%d y=%d) = %d, want %d", i, x, y, o32[i], (int32_t)w32);
        if (o64[i] != w64) fail_msg("i64 [%d] = %lld, want %lld", i, (long long)o64[i], (long long)w64);
        if (o32[n + i] != wsat) fail_msg("saturating cast [%d] of %g = %d, want %d", i, big, o32[n + i], wsat);
        if (isnan(v) ? (oh[i] & 0x7fff) <= 0x7c00 : oh[i] != f16_bits(v))
            fail_msg("f16 [%d] of %g = %#x, want %#x", i, (double)v, oh[i], f16_bits(v));
        if (isnan(v) ? (obf[i] & 0x7fff) <= 0x7f80 : obf[i] != wbf)
            fail_msg("bf16 [%d] of %g = %#x, want %#x", i, (double)v, obf[i], wbf);
    }
    trt_free(dev, ba), trt_free(dev, bb), trt_free(dev, bf);
    free(a), free(b), free(f), free(o8), free(o16), free(o32), free(o64), free(oh), free(obf);
    drop(&p);
}


/* ---- loop-carried min/max/mul/xor of narrow types ------------------------------
 * Found by tests/fuzz/difftest.c: a value carried through a loop and combined
 * each trip with a loop-invariant one (`hi = maximum(hi, v)`) of f16, bf16,
 * i8 or i16 is vectorized by LLVM across two trips, leaving an
 * llvm.vector.reduce.{fmaximum,fminimum,smin,smax,mul,xor} after the loop,
 * which the emulator did not know. Inputs are k/8 (floats) or any bits
 * (integers); 3 trips over a ragged 13 of 16 elements. */
static void run_loop_carried(const char *type, bool is_float) {
    char src[1024];
    if (is_float)
        snprintf(src, sizeof src,
                 "kernel lc(x: *%s, out: *%s, n: i32, t: i32) {\n"
                 "    let c = arange(0, 16);\n"
                 "    let v = load(x + c, c < n);\n"
                 "    var hi = v;\n"
                 "    var lo = v;\n"
                 "    for i in range(0, t) {\n"
                 "        hi = maximum(hi, v);\n"
                 "        lo = minimum(lo, v * 0.5);\n"
                 "    }\n"
                 "    store(out + c, hi, c < n);\n"
                 "    store(out + n + c, lo, c < n);\n"
                 "}\n",
                 type, type);
    else
        snprintf(src, sizeof src,
                 "kernel lc(x: *%s, out: *%s, n: i32, t: i32) {\n"
                 "    let c = arange(0, 16);\n"
                 "    let v = load(x + c, c < n);\n"
                 "    var hi = v;\n"
                 "    var lo = v;\n"
                 "    var p = v;\n"
                 "    var q = v;\n"
                 "    for i in range(0, t) {\n"
                 "        hi = maximum(hi, v);\n"
                 "        lo = minimum(lo, v * 3);\n"
                 "        p = p * v;\n"
                 "        q = q ^ v;\n"
                 "    }\n"
                 "    store(out + c, hi, c < n);\n"
                 "    store(out + n + c, lo, c < n);\n"
                 "    store(out + 2 * n + c, p, c < n);\n"
                 "    store(out + 3 * n + c, q, c < n);\n"
                 "}\n",
                 type, type);
    prog p;
    trt_kernel *k = compile_text(&p, "lc.tile", src, "lc", NULL, 0);
    const int n = 13, trips = 3, outs = is_float ? 2 : 4;
    size_t es = !strcmp(type, "i8") ? 1 : 2;
    unsigned char x[2 * 16], out[4 * 2 * 16];
    int64_t xv[16];
    for (int i = 0; i < n; i++) {
        if (is_float) {
            float f = (float)(rand() % 129 - 64) / 8.0f;
            if (!strcmp(type, "f16")) put_f16(x, (size_t)i, f);
            else put_bf16(x, (size_t)i, f);
            xv[i] = (int64_t)(f * 8);
        } else {
            int32_t r = rand_i32();
            xv[i] = es == 1 ? (int8_t)r : (int16_t)r;
            memcpy(x + (size_t)i * es, es == 1 ? (void *)&(int8_t){(int8_t)r} : (void *)&(int16_t){(int16_t)r}, es);
        }
    }
    memset(out, 0xff, sizeof out);
    trt_buffer bx = upload(x, es * (size_t)n), bo = upload(out, es * (size_t)(outs * n));
    trt_arg args[4] = {trt_buf(bx), trt_buf(bo), trt_int(n), trt_int(trips)};
    launch(k, 1, 1, 1, args, 4);
    download(bo, out, es * (size_t)(outs * n));
    trt_free(dev, bx);
    for (int i = 0; i < n; i++) {
        if (is_float) {
            float v = (float)xv[i] / 8.0f, half = v * 0.5f;
            float (*get)(const void *, size_t) = !strcmp(type, "f16") ? get_f16 : get_bf16;
            float hi = get(out, (size_t)i), lo = get(out, (size_t)(n + i));
            if (hi != v) fail_msg("%s maximum [%d] = %g, want %g on %s", type, i, (double)hi, (double)v, trt_device_name(dev));
            if (lo != (half < v ? half : v))
                fail_msg("%s minimum [%d] = %g, want %g on %s", type, i, (double)lo, (double)(half < v ? half : v),
                         trt_device_name(dev));
            continue;
        }
        int bits = (int)es * 8;
        int64_t v = xv[i], v3 = (int64_t)((uint64_t)v * 3), pw = v;
        v3 = bits == 8 ? (int8_t)v3 : (int16_t)v3;
        for (int tr = 0; tr < trips; tr++) pw = bits == 8 ? (int8_t)(uint8_t)((uint64_t)pw * (uint64_t)v) : (int16_t)(uint16_t)((uint64_t)pw * (uint64_t)v);
        int64_t want[4] = {v, v3 < v ? v3 : v, pw, trips % 2 ? 0 : v};
        for (int o = 0; o < 4; o++) {
            size_t at = (size_t)(o * n + i);
            int64_t got = es == 1 ? ((int8_t *)out)[at] : ((int16_t *)(void *)out)[at];
            if (got != want[o])
                fail_msg("%s loop-carried %s [%d] = %lld, want %lld on %s", type, (const char *[]){"maximum", "minimum", "*", "^"}[o],
                         i, (long long)got, (long long)want[o], trt_device_name(dev));
        }
    }
    drop(&p);
}

static void test_loop_carried_narrow_types(void **state) {
    (void)state;
    run_loop_carried("f16", true);
    run_loop_carried("bf16", true);
    run_loop_carried("i8", false);
    run_loop_carried("i16", false);
}


/* ---- abs of integer vectors ---------------------------------------------------
 * Found by tests/fuzz/difftest.c under ASan: llvm.abs on a vector takes a
 * scalar i1 flag as its second operand, which the emulator read as a
 * vector (one slot a lane), past the end of the thread's frame. abs of
 * i8, i16, i32 and i64 runs of consecutive elements, with the minimum. */
static void test_abs_integer_vectors(void **state) {
    (void)state;
    static const char *const types[] = {"i8", "i16", "i32", "i64"};
    static const size_t sizes[] = {1, 2, 4, 8};
    for (int t = 0; t < 4; t++) {
        char src[512];
        snprintf(src, sizeof src,
                 "kernel ab(x: *%s, out: *%s) {\n"
                 "    let r = arange(0, 16);\n"
                 "    let c = arange(0, 64);\n"
                 "    let off = r[:, None] * 64 + c[None, :];\n"
                 "    store(out + off, abs(load(x + off)));\n"
                 "}\n",
                 types[t], types[t]);
        for (int warps = 1; warps <= 4; warps *= 2) {
            prog p;
            trt_kernel *k = compile_with(&p, "ab.tile", src, "ab", NULL, 0, warps);
            enum { N = 16 * 64 };
            size_t es = sizes[t];
            unsigned char x[8 * N], out[8 * N];
            for (size_t i = 0; i < es * N; i++) x[i] = (unsigned char)rand();
            memset(x, 0, es), x[es - 1] = 0x80; /* the minimum, little-endian: abs gives itself */
            memset(out, 0x55, sizeof out);
            trt_buffer bx = upload(x, es * N), bo = upload(out, es * N);
            trt_arg args[2] = {trt_buf(bx), trt_buf(bo)};
            launch(k, 1, 1, 1, args, 2);
            download(bo, out, es * N);
            trt_free(dev, bx);
            for (int i = 0; i < N; i++) {
                int64_t v = 0, got = 0;
                memcpy(&v, x + (size_t)i * es, es);
                memcpy(&got, out + (size_t)i * es, es);
                int bits = (int)es * 8;
                if (bits < 64) v = (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits), got = (int64_t)((uint64_t)got << (64 - bits)) >> (64 - bits);
                int64_t want = v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
                if (bits < 64) want = (int64_t)((uint64_t)want << (64 - bits)) >> (64 - bits);
                if (got != want)
                    fail_msg("abs %s, %d warps: [%d] of %lld = %lld, want %lld on %s", types[t], warps, i, (long long)v,
                             (long long)got, (long long)want, trt_device_name(dev));
            }
            drop(&p);
        }
    }
}

/* ---- float remainders across f16 and bf16 ----------------------------------------
 * Found by tests/fuzz/difftest.c: LLVM 19's InstCombine shrinks
 * fptrunc(frem(fpext x)) to the narrow type, and between f16 and bf16 it
 * bitcasts (f16 bits read as bf16: wrong values, or LLVM's fatal
 * "Cannot select" when the bf16 is used in arithmetic) or rounds a bf16
 * operand to f16 first (infinite beyond f16's range: NaN). The remainder
 * of f16 values stored as bf16 and of bf16 values (some beyond f16's
 * range) stored as f16, against fmodf; and one fed to maximum on bf16. */
static void test_float_remainder_across_halves(void **state) {
    (void)state;
    static const char src[] =
        "kernel rm(xh: *f16, xb: *bf16, ob: *bf16, oh: *f16, om: *bf16) {\n"
        "    let c = arange(0, 64);\n"
        "    store(ob + c, cast(cast(load(xh + c), f32) % 3.0, bf16));\n"
        "    store(oh + c, cast(cast(load(xb + c), f32) % 3.0, f16));\n"
        "    store(om + c, maximum(cast(cast(load(xh + c), f32) % 3.0, bf16), cast(1.0, bf16)));\n"
        "}\n";
    enum { N = 64 };
    prog p;
    trt_kernel *k = compile_with(&p, "rm.tile", src, "rm", NULL, 0, 1);
    uint16_t xh[N], xb[N], ob[N], oh[N], om[N];
    for (int i = 0; i < N; i++) {
        put_f16(xh, (size_t)i, (float)(i * 5 - 150) / 8.0f);
        put_bf16(xb, (size_t)i, i % 4 == 3 ? ldexpf(1.5f, 20 + i % 9) : (float)(i * 7 - 200) / 4.0f); /* up to 2^28 */
    }
    memset(ob, 0xff, sizeof ob), memset(oh, 0xff, sizeof oh), memset(om, 0xff, sizeof om);
    trt_buffer bxh = upload(xh, sizeof xh), bxb = upload(xb, sizeof xb), bob = upload(ob, sizeof ob),
               boh = upload(oh, sizeof oh), bom = upload(om, sizeof om);
    trt_arg args[5] = {trt_buf(bxh), trt_buf(bxb), trt_buf(bob), trt_buf(boh), trt_buf(bom)};
    launch(k, 1, 1, 1, args, 5);
    download(bob, ob, sizeof ob), download(boh, oh, sizeof oh), download(bom, om, sizeof om);
    trt_free(dev, bxh), trt_free(dev, bxb);
    for (int i = 0; i < N; i++) {
        float rh = fmodf(get_f16(xh, (size_t)i), 3.0f), rb = fmodf(get_bf16(xb, (size_t)i), 3.0f);
        float wb = get_bf16((uint16_t[]){bf16_bits(rh)}, 0), wh = get_f16((uint16_t[]){f16_bits(rb)}, 0);
        float wm = get_bf16((uint16_t[]){bf16_bits(rh > 1.0f ? rh : 1.0f)}, 0);
        if (!same_f32(get_bf16(ob, (size_t)i), wb))
            fail_msg("cast(f16 %% 3, bf16) [%d] of %g = %g, want %g on %s", i, (double)get_f16(xh, (size_t)i),
                     (double)get_bf16(ob, (size_t)i), (double)wb, trt_device_name(dev));
        if (!same_f32(get_f16(oh, (size_t)i), wh))
            fail_msg("cast(bf16 %% 3, f16) [%d] of %g = %g, want %g on %s", i, (double)get_bf16(xb, (size_t)i),
                     (double)get_f16(oh, (size_t)i), (double)wh, trt_device_name(dev));
        if (!same_f32(get_bf16(om, (size_t)i), wm))
            fail_msg("maximum(f16 %% 3 as bf16, 1) [%d] = %g, want %g on %s", i, (double)get_bf16(om, (size_t)i), (double)wm,
                     trt_device_name(dev));
    }
    drop(&p);
}

/* ---- approximate on the GPU: within a stated tolerance ---------------------- */

static void test_transcendentals_within_tolerance(void **state) {
    (void)state;
    static const char src[] =
        "kernel t(x: *f32, out: *f32, n: i32, const B: i32 = 256) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    let v = load(x + o, k);\n"
        "    store(out + o, exp(v), k);\n"
        "    store(out + n + o, log(abs(v) + 0.5), k);\n"
        "    store(out + 2 * n + o, sin(v), k);\n"
        "    store(out + 3 * n + o, cos(v), k);\n"
        "    store(out + 4 * n + o, tanh(v), k);\n"
        "    store(out + 5 * n + o, sigmoid(v), k);\n"
        "    store(out + 6 * n + o, rsqrt(abs(v) + 0.25), k);\n"
        "    store(out + 7 * n + o, exp2(v) + log2(abs(v) + 1.0), k);\n"
        "}\n";
    enum { FUNCS = 8 };
    prog p;
    trt_kernel *k = compile_text(&p, "t.tile", src, "t", NULL, 0);
    int n = 4099;
    float *x = malloc(4 * (size_t)n), *out = poison_f32s(FUNCS * n);
    for (int i = 0; i < n; i++) x[i] = (float)((rand() % 2000001 - 1000000) * (3.14159 / 1e6)); /* [-pi, pi] */
    trt_buffer bx = upload(x, 4 * (size_t)n), bo = upload(out, FUNCS * 4 * (size_t)n);
    trt_arg a[3] = {trt_buf(bx), trt_buf(bo), trt_int(n)};
    launch(k, cdiv(n, 256), 1, 1, a, 3);
    download(bo, out, FUNCS * 4 * (size_t)n);
    /* PTX's approximations are within a few f32 ulps relatively (ex2, lg2,
     * rsqrt) or 2^-20 absolutely on [-pi, pi] (sin, cos); the composed
     * functions add a rounding or two. The interpreter is exact. */
    const double rel_tol = 1e-5, abs_tol = 4e-6;
    const char *names[FUNCS] = {"exp", "log", "sin", "cos", "tanh", "sigmoid", "rsqrt", "exp2+log2"};
    double worst[FUNCS] = {0};
    for (int i = 0; i < n; i++) {
        double v = x[i], want[FUNCS] = {exp(v), log(fabs(v) + 0.5), sin(v), cos(v), tanh(v), 1 / (1 + exp(-v)),
                                        1 / sqrt(fabs(v) + 0.25), exp2(v) + log2(fabs(v) + 1)};
        for (int j = 0; j < FUNCS; j++) {
            double g = out[j * n + i], err = fabs(g - want[j]), lim = abs_tol + rel_tol * fabs(want[j]);
            if (!(err <= lim)) fail_msg("%s(%.9g) on %s = %.9g, want %.9g (error %.3g > %.3g)", names[j], v,
                                        trt_device_name(dev), g, want[j], err, lim);
            if (err / lim > worst[j]) worst[j] = err / lim;
        }
    }
    print_message("transcendentals on %s: worst error / tolerance: exp %.2f log %.2f sin %.2f cos %.2f tanh %.2f "
                  "sigmoid %.2f rsqrt %.2f exp2+log2 %.2f\n",
                  trt_device_name(dev), worst[0], worst[1], worst[2], worst[3], worst[4], worst[5], worst[6], worst[7]);
    trt_free(dev, bx);
    free(x), free(out);
    drop(&p);
}

/* erf against float64: on the GPU an f32 approximation documented (and
 * modelled by test_lower_erf) to be within 2e-7 absolutely; the interpreter
 * rounds C's erf. f16 adds its own rounding: half an ulp, at most 2^-11
 * relative, of a value that may be off by the f32 error already. */
static void test_erf_within_tolerance(void **state) {
    (void)state;
    static const char src[] =
        "kernel e(x: *f32, out: *f32, h: *f16, hout: *f16, n: i32, const B: i32 = 256) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    store(out + o, erf(load(x + o, k)), k);\n"
        "    store(hout + o, erf(load(h + o, k)), k);\n"
        "}\n";
    const double tol = 2e-7;
    prog p;
    trt_kernel *k = compile_text(&p, "erf.tile", src, "e", NULL, 0);
    int n = 20011;
    float *x = malloc(4 * (size_t)n), *out = poison_f32s(n);
    uint16_t *h = malloc(2 * (size_t)n), *hout = malloc(2 * (size_t)n);
    const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.99999994f, 1.0000001f, 3.95f, 3.9499998f, 4.0f, 10.0f,
                             1e-30f, -1e-38f, INFINITY, -INFINITY, NAN};
    for (int i = 0; i < n; i++) x[i] = (float)((rand() % 2000001 - 1000000) * 5e-6); /* [-5, 5] */
    for (int i = 0; i < 2000; i++) x[i] = (float)((rand() % 2000001 - 1000000) * 1e-6); /* [-1, 1]: first piece */
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[i] = special[i];
    for (int i = 0; i < n; i++) h[i] = f16_bits(x[i]), hout[i] = 0x7e00;
    trt_buffer bx = upload(x, 4 * (size_t)n), bo = upload(out, 4 * (size_t)n), bh = upload(h, 2 * (size_t)n),
               bho = upload(hout, 2 * (size_t)n);
    trt_arg a[5] = {trt_buf(bx), trt_buf(bo), trt_buf(bh), trt_buf(bho), trt_int(n)};
    launch(k, cdiv(n, 256), 1, 1, a, 5);
    download(bo, out, 4 * (size_t)n);
    download(bho, hout, 2 * (size_t)n);
    double worst = 0, worst_h = 0;
    for (int i = 0; i < n; i++) {
        double want = erf(x[i]), err = fabs(out[i] - want);
        if (isnan(x[i]) ? !isnan(out[i]) : !(err <= tol) || (x[i] == 0 && signbit(out[i]) != signbit(x[i])))
            fail_msg("erf(%.9g) on %s = %.9g, want %.9g (error %.3g > %.3g)", x[i], trt_device_name(dev), out[i], want,
                     err, tol);
        if (err > worst) worst = err;
        float hx = f16_value(h[i]), hy = f16_value(hout[i]);
        double hwant = erf(hx), herr = fabs(hy - hwant), hlim = 2 * tol + ldexp(fabs(hwant), -11);
        if (isnan(hx) ? !isnan(hy) : !(herr <= hlim))
            fail_msg("erf(%.9g) in f16 on %s = %.9g, want %.9g", hx, trt_device_name(dev), hy, hwant);
        if (!isnan(hx) && herr / hlim > worst_h) worst_h = herr / hlim;
    }
    print_message("erf on %s: worst f32 error %.3g (tolerance %.3g), f16 error / tolerance %.2f\n",
                  trt_device_name(dev), worst, tol, worst_h);
    trt_free(dev, bx), trt_free(dev, bh);
    free(x), free(out), free(h), free(hout);
    drop(&p);
}

/* ---- random numbers: bit for bit against C --------------------------------- */

static void test_rand_is_philox(void **state) {
    (void)state;
    /* the reference against Random123's known answers for Philox4x32-10 */
    static const uint32_t kat[3][6][4] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}};
    for (int t = 0; t < 3; t++) {
        uint32_t ctr[4];
        memcpy(ctr, kat[t][0], sizeof ctr);
        philox4x32_10(ctr, kat[t][1][0], kat[t][1][1]);
        assert_memory_equal(ctr, kat[t][2], sizeof ctr);
    }
    static const char src[] =
        "kernel r(f: *f32, u: *i32, g: *f32, n: i32, seed: i64, s32: i32, const B: i32 = 512) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    store(f + o, rand(seed, o), k);\n"
        "    store(u + o, randint(s32, o), k);\n"
        "    store(g + o, rand(s32, cast(o - 3, i16)), k);\n" /* offsets widened from i16, negative ones too */
        "    store(g + n, rand(seed, n));\n"                    /* a scalar offset gives one number */
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "rand.tile", src, "r", NULL, 0);
    const int64_t seeds[][2] = {{0, 0}, {0x123456789abcdef0LL, -5}, {-1, 2147483647}, {42, -2147483647 - 1}};
    int n = 100003;
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        int64_t seed = seeds[s][0], s32 = seeds[s][1];
        float *f = poison_f32s(n), *g = poison_f32s(n + 1);
        int32_t *u = malloc(4 * (size_t)n);
        for (int i = 0; i < n; i++) u[i] = -1;
        trt_buffer bf = upload(f, 4 * (size_t)n), bu = upload(u, 4 * (size_t)n), bg = upload(g, 4 * (size_t)(n + 1));
        trt_arg a[6] = {trt_buf(bf), trt_buf(bu), trt_buf(bg), trt_int(n), trt_int(seed), trt_int(s32)};
        launch(k, cdiv(n, 512), 1, 1, a, 6);
        download(bf, f, 4 * (size_t)n), download(bu, u, 4 * (size_t)n), download(bg, g, 4 * (size_t)(n + 1));
        enum { BINS = 16 };
        int bins[BINS] = {0};
        double sum = 0;
        for (int i = 0; i < n; i++) {
            float want = rand_ref(seed, i), wantg = rand_ref(s32, (int16_t)(i - 3));
            uint32_t wantu = randint_ref(s32, i);
            if (memcmp(&f[i], &want, 4) || (uint32_t)u[i] != wantu || memcmp(&g[i], &wantg, 4))
                fail_msg("seed %lld/%lld offset %d on %s: rand %a randint %08x rand(i16) %a, want %a %08x %a",
                         (long long)seed, (long long)s32, i, trt_device_name(dev), (double)f[i], (unsigned)u[i],
                         (double)g[i], (double)want, (unsigned)wantu, (double)wantg);
            if (!(f[i] >= 0 && f[i] < 1)) fail_msg("rand gave %a, outside [0, 1)", (double)f[i]);
            bins[(int)(f[i] * BINS)]++;
            sum += f[i];
        }
        float last = rand_ref(seed, n);
        if (memcmp(&g[n], &last, 4)) fail_msg("rand(seed, n) = %a, want %a", (double)g[n], (double)last);
        /* uniform: the mean within 5 standard deviations (sqrt(1/12n)) of
         * 1/2, and chi-square over 16 bins below 37.7 (15 degrees of
         * freedom: exceeded with probability 0.001 by chance) */
        double chi2 = 0, expect = (double)n / BINS;
        for (int b = 0; b < BINS; b++) chi2 += (bins[b] - expect) * (bins[b] - expect) / expect;
        double mean = sum / n;
        if (!(fabs(mean - 0.5) <= 5 * sqrt(1.0 / (12.0 * n))) || !(chi2 < 37.7))
            fail_msg("seed %lld: mean %.5f, chi-square %.2f over %d bins: not uniform", (long long)seed, mean, chi2, BINS);
        free(f), free(u), free(g);
    }
    drop(&p);
}

/* exp2_ftz (trt_compile_options): on the GPU and the emulator exp2 and
 * sigmoid flush results below 2^-126 to zero with it and keep them
 * without; the CPU interpreter computes exact values either way (the
 * option names a PTX instruction). The two compiles of one source are two
 * modules (the option is in the cache key). */
static void test_exp2_ftz(void **state) {
    (void)state;
    static const char src[] = "kernel e(x: *f32, out: *f32) {\n"
                              "    let i = arange(0, 8);\n"
                              "    let v = load(x + i);\n"
                              "    store(out + i, exp2(v));\n"
                              "    store(out + 8 + i, sigmoid(v * -0.6931471805599453));\n" /* 1 / (1 + 2^v) */
                              "}\n";
    const float x[8] = {-130.0f, -127.5f, -126.0f, -149.0f, -150.5f, -1.0f, 0.0f, 3.0f};
    for (int ftz = 0; ftz < 2; ftz++) {
        trt_compile_options o = {.exp2_ftz = ftz};
        trt_module *m;
        if (trt_compile(dev, "e.tile", src, strlen(src), &o, &m) != TRT_OK)
            fail_msg("e.tile does not compile: %s", trt_last_error(dev));
        trt_kernel *k;
        OK(trt_get_kernel(m, "e", &k));
        float *out = poison_f32s(16);
        trt_buffer bx = upload(x, sizeof x), bo = upload(out, 16 * sizeof(float));
        trt_arg args[2] = {trt_buf(bx), trt_buf(bo)};
        launch(k, 1, 1, 1, args, 2);
        download(bo, out, 16 * sizeof(float));
        bool flushes = ftz && kind != TRT_DEVICE_CPU;
        for (int i = 0; i < 8; i++) {
            double want = exp2((double)x[i]);
            if (flushes && want < 0x1p-126) want = 0;
            /* within 2^-22 relatively, as test_transcendentals_within_tolerance, and subnormals within 2^-149 */
            if (!(fabs(out[i] - want) <= fmax(ldexp(want, -22), 0x1p-149)))
                fail_msg("exp2(%g) with exp2_ftz %d on %s = %a, want %a", (double)x[i], ftz, trt_device_name(dev),
                         (double)out[i], want);
            double s = 1 / (1 + exp2((double)x[i])); /* the flushed term is below 1's ulp: the same either way */
            if (!(fabs(out[8 + i] - s) <= 4 * 0x1p-24 * s))
                fail_msg("sigmoid with exp2_ftz %d on %s: [%d] = %g, want %g", ftz, trt_device_name(dev), i,
                         (double)out[8 + i], s);
        }
        trt_free(dev, bx); /* download freed bo */
        trt_module_free(m);
        free(out);
    }
}

HARNESS_MAIN(
    cmocka_unit_test(test_math_builtins_exact),
    cmocka_unit_test(test_integers_and_casts),
    cmocka_unit_test(test_loop_carried_narrow_types),
    cmocka_unit_test(test_abs_integer_vectors),
    cmocka_unit_test(test_float_remainder_across_halves),
    cmocka_unit_test(test_transcendentals_within_tolerance),
    cmocka_unit_test(test_erf_within_tolerance),
    cmocka_unit_test(test_rand_is_philox),
    cmocka_unit_test(test_exp2_ftz))

