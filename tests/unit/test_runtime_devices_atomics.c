/* test_runtime_devices_atomics.c - the device tests of atomics: histograms,
 * 2-D tiles and scalars, float and integer sums, max and min, xchg and cas.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_atomics cpu|cuda|emu. */
#include "device_harness.h"

/* ---- atomics ------------------------------------------------------------------
 * Every element of a tile is one atomic: lanes of one tile and programs
 * that hit one address all count. Tiles smaller than the threads (and
 * scalars) are held by several threads each: one updates, all get the old
 * value. Masked-off lanes touch no memory and give 0. */

static int32_t *fill_i32s(int n, int32_t v) {
    int32_t *p = malloc(sizeof(int32_t) * (size_t)n + 1);
    for (int i = 0; i < n; i++) p[i] = v;
    return p;
}

/* Active element i added 1 to bin[i]: the counts are exact, the old values
 * one bin handed out are 0 .. count - 1 each once, and inactive elements
 * got 0. */
static void expect_histogram(const char *what, int nbins, int n, const int32_t *bin, const bool *active,
                             const int32_t *olds, const int32_t *counts) {
    int32_t *want = fill_i32s(nbins, 0), *first = fill_i32s(nbins + 1, 0);
    for (int i = 0; i < n; i++) want[bin[i]] += active[i];
    for (int b = 0; b < nbins; b++) {
        if (counts[b] != want[b]) fail_msg("%s on %s: bin %d counts %d, want %d", what, trt_device_name(dev), b, counts[b], want[b]);
        first[b + 1] = first[b] + want[b];
    }
    bool *seen = calloc((size_t)first[nbins] + 1, 1);
    for (int i = 0; i < n; i++) {
        if (!active[i]) {
            if (olds[i] != 0) fail_msg("%s on %s: masked-off lane %d gave %d, want 0", what, trt_device_name(dev), i, olds[i]);
            continue;
        }
        int b = bin[i];
        if (olds[i] < 0 || olds[i] >= want[b] || seen[first[b] + olds[i]])
            fail_msg("%s on %s: element %d got old value %d from bin %d (count %d): not each of 0..count-1 once", what,
                     trt_device_name(dev), i, olds[i], b, want[b]);
        seen[first[b] + olds[i]] = true;
    }
    free(want), free(first), free(seen);
}

static void test_atomic_histogram(void **state) {
    (void)state;
    static const char src[] =
        "kernel hist(x: *i32, bins: *i32, olds: *i32, n: i32, const BLOCK: i32 = 256) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    let m = offs < n;\n"
        "    let old = atomic_add(bins + load(x + offs, m), 1, mask = m);\n"
        "    store(olds + offs, old);\n"
        "}\n"
        "kernel count(x: *i32, bins: *i32, n: i32, const BLOCK: i32 = 256) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    atomic_add(bins + load(x + offs, offs < n), 1, offs < n);\n"
        "}\n";
    enum { NBINS = 37 };
    /* {BLOCK, num_warps}: 16 and 32 elements replicate over 32 and 128 threads */
    const int cfg[][2] = {{256, 0}, {16, 0}, {32, 4}, {1024, 4}};
    const int sizes[] = {1, 1000, 10007};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        int block = cfg[c][0];
        tilec_define d = {"BLOCK", block};
        prog p;
        trt_kernel *hist = compile_with(&p, "hist.tile", src, "hist", &d, 1, cfg[c][1]), *count;
        OK(trt_get_kernel(p.mod, "count", &count));
        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
            int n = sizes[t], total = (int)cdiv(n, block) * block;
            int32_t *x = fill_i32s(total, 0), *olds = fill_i32s(total, 0x5a5a5a5a), *bins = fill_i32s(NBINS, 0);
            bool *active = calloc((size_t)total, 1);
            for (int i = 0; i < n; i++) x[i] = rand() % NBINS, active[i] = true;
            trt_buffer bx = upload(x, sizeof(int32_t) * (size_t)n), bb = upload(bins, sizeof(int32_t) * NBINS),
                       bo = upload(olds, sizeof(int32_t) * (size_t)total);
            trt_arg a[4] = {trt_buf(bx), trt_buf(bb), trt_buf(bo), trt_int(n)};
            launch(hist, cdiv(n, block), 1, 1, a, 4);
            /* the statement form adds the same counts again */
            trt_arg a2[3] = {trt_buf(bx), trt_buf(bb), trt_int(n)};
            launch(count, cdiv(n, block), 1, 1, a2, 3);
            download(bo, olds, sizeof(int32_t) * (size_t)total);
            download(bb, bins, sizeof(int32_t) * NBINS);
            trt_free(dev, bx);
            char what[64];
            snprintf(what, sizeof what, "histogram BLOCK=%d n=%d", block, n);
            for (int b = 0; b < NBINS; b++) bins[b] /= 2; /* counted twice */
            expect_histogram(what, NBINS, total, x, active, olds, bins);
            free(x), free(olds), free(bins), free(active);
        }
        drop(&p);
    }
}

/* A 2-D tile of 32 elements over 128 threads (the general owner rule), and
 * a scalar pointer (thread 0 updates, every thread gets the old value). */
static void test_atomic_2d_and_scalar(void **state) {
    (void)state;
    static const char src[] =
        "kernel grid2(bins: *i32, olds: *i32, const R: i32 = 4, const C: i32 = 8) {\n"
        "    let r = arange(0, R);\n"
        "    let c = arange(0, C);\n"
        "    let old = atomic_add(bins + (r[:, None] * C + c[None, :]) % 5, 1, mask = c[None, :] < C - 1);\n"
        "    store(olds + program_id(0) * R * C + r[:, None] * C + c[None, :], old);\n"
        "}\n"
        "kernel ticket(counter: *i32, odd: *i32, out: *i32, got: *i32, const BLOCK: i32 = 64) {\n"
        "    let pid = program_id(0);\n"
        "    let t = atomic_add(counter, 1);\n"
        "    store(out + pid * BLOCK + arange(0, BLOCK), t * BLOCK + arange(0, BLOCK));\n"
        "    store(got + pid, atomic_add(odd, 5, mask = pid % 2 == 1));\n"
        "}\n";
    enum { R = 4, C = 8, G = 7, BLOCK = 64 };
    prog p;
    trt_kernel *grid2 = compile_with(&p, "atom2.tile", src, "grid2", NULL, 0, 4), *ticket;
    OK(trt_get_kernel(p.mod, "ticket", &ticket));
    int n = G * R * C;
    int32_t *bins = fill_i32s(5, 0), *olds = fill_i32s(n, 0x5a5a5a5a), *bin = fill_i32s(n, 0);
    bool *active = calloc((size_t)n, 1);
    for (int i = 0; i < n; i++) bin[i] = (i % (R * C)) % 5, active[i] = i % C < C - 1;
    trt_buffer bb = upload(bins, sizeof(int32_t) * 5), bo = upload(olds, sizeof(int32_t) * (size_t)n);
    trt_arg a[2] = {trt_buf(bb), trt_buf(bo)};
    launch(grid2, G, 1, 1, a, 2);
    download(bb, bins, sizeof(int32_t) * 5);
    download(bo, olds, sizeof(int32_t) * (size_t)n);
    expect_histogram("2-D atomic_add over 128 threads", 5, n, bin, active, olds, bins);
    free(bins), free(olds), free(bin), free(active);

    int32_t zero[2] = {0, 0}, *out = fill_i32s(G * BLOCK, -1), *got = fill_i32s(G, -1);
    trt_buffer bc = upload(&zero[0], 4), bd = upload(&zero[1], 4), bt = upload(out, sizeof(int32_t) * G * BLOCK),
               bg = upload(got, sizeof(int32_t) * G);
    trt_arg b[4] = {trt_buf(bc), trt_buf(bd), trt_buf(bt), trt_buf(bg)};
    launch(ticket, G, 1, 1, b, 4);
    download(bc, &zero[0], 4);
    download(bd, &zero[1], 4);
    download(bt, out, sizeof(int32_t) * G * BLOCK);
    download(bg, got, sizeof(int32_t) * G);
    assert_int_equal(zero[0], G);
    assert_int_equal(zero[1], 5 * (G / 2));
    bool taken[G] = {false};
    for (int pid = 0; pid < G; pid++) {
        int t = out[pid * BLOCK] / BLOCK;
        if (t < 0 || t >= G || taken[t]) fail_msg("ticket: program %d got ticket %d on %s", pid, t, trt_device_name(dev));
        taken[t] = true;
        for (int k = 0; k < BLOCK; k++) /* every thread has the one old value */
            if (out[pid * BLOCK + k] != t * BLOCK + k)
                fail_msg("ticket: program %d element %d = %d, want %d on %s", pid, k, out[pid * BLOCK + k], t * BLOCK + k,
                         trt_device_name(dev));
        if (pid % 2 == 0 ? got[pid] != 0 : got[pid] < 0 || got[pid] >= 5 * (G / 2) || got[pid] % 5)
            fail_msg("masked scalar atomic: program %d got %d on %s", pid, got[pid], trt_device_name(dev));
    }
    free(out), free(got);
    drop(&p);
}

/* Float sums: each addition rounds once, in an order the device picks, so
 * slot j is within cnt_j * 2^-24 * sum_j |x| of the float64 sum (2^-53 for
 * f64); i64 sums are exact (with wrapping) and need all 64 bits. */
static void test_atomic_add_sums(void **state) {
    (void)state;
    static const char src[] =
        "kernel sums(x: *f32, xd: *f64, xl: *i64, s: *f32, sd: *f64, sl: *i64, n: i32, const NS: i32 = 8,\n"
        "            const BLOCK: i32 = 128) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    let m = offs < n;\n"
        "    atomic_add(s + offs % NS, load(x + offs, m), mask = m);\n"
        "    atomic_add(sd + offs % NS, load(xd + offs, m), mask = m);\n"
        "    atomic_add(sl + offs % NS, load(xl + offs, m), mask = m);\n"
        "}\n";
    enum { NS = 8 };
    const int sizes[] = {5, 3001, 20000};
    prog p;
    trt_kernel *k = compile_text(&p, "sums.tile", src, "sums", NULL, 0);
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        float *x = rand_f32s(n), s[NS];
        double *xd = malloc(sizeof(double) * (size_t)n), sd[NS], want[NS], mag[NS], wantd[NS], magd[NS];
        int64_t *xl = malloc(sizeof(int64_t) * (size_t)n), sl[NS];
        uint64_t wantl[NS];
        int cnt[NS];
        for (int j = 0; j < NS; j++)
            s[j] = (float)j, sd[j] = j, sl[j] = j, want[j] = wantd[j] = j, mag[j] = magd[j] = j, wantl[j] = (uint64_t)j,
            cnt[j] = 0;
        for (int i = 0; i < n; i++) {
            xd[i] = (double)rand_f32() / 3.0;
            xl[i] = (int64_t)((uint64_t)rand_i32() << 31 ^ (uint64_t)rand_i32());
            int j = i % NS;
            want[j] += x[i], mag[j] += fabs(x[i]), wantd[j] += xd[i], magd[j] += fabs(xd[i]);
            wantl[j] += (uint64_t)xl[i], cnt[j]++;
        }
        trt_buffer bx = upload(x, sizeof(float) * (size_t)n), bxd = upload(xd, sizeof(double) * (size_t)n),
                   bxl = upload(xl, sizeof(int64_t) * (size_t)n), bs = upload(s, sizeof s), bsd = upload(sd, sizeof sd),
                   bsl = upload(sl, sizeof sl);
        trt_arg a[7] = {trt_buf(bx), trt_buf(bxd), trt_buf(bxl), trt_buf(bs), trt_buf(bsd), trt_buf(bsl), trt_int(n)};
        launch(k, cdiv(n, 128), 1, 1, a, 7);
        download(bs, s, sizeof s), download(bsd, sd, sizeof sd), download(bsl, sl, sizeof sl);
        trt_free(dev, bx), trt_free(dev, bxd), trt_free(dev, bxl);
        for (int j = 0; j < NS; j++) {
            double tol = (cnt[j] + 1) * 0x1p-24 * mag[j], told = (cnt[j] + 1) * 0x1p-53 * magd[j];
            if (!(fabs(s[j] - want[j]) <= tol))
                fail_msg("f32 atomic_add n=%d slot %d = %.9g, want %.9g within %g on %s", n, j, s[j], want[j], tol,
                         trt_device_name(dev));
            if (!(fabs(sd[j] - wantd[j]) <= told))
                fail_msg("f64 atomic_add n=%d slot %d = %.17g, want %.17g within %g on %s", n, j, sd[j], wantd[j], told,
                         trt_device_name(dev));
            if ((uint64_t)sl[j] != wantl[j])
                fail_msg("i64 atomic_add n=%d slot %d = %lld, want %lld on %s", n, j, (long long)sl[j],
                         (long long)wantl[j], trt_device_name(dev));
        }
        free(x), free(xd), free(xl);
    }
    drop(&p);
}

/* maximum/minimum as the language defines them: NaN if either is NaN, and
 * -0 < +0. */
static float ref_ext_f32(float a, float b, bool want_max) {
    if (isnan(a) || isnan(b)) return NAN;
    if (a == b) return (signbit(a) != 0) == want_max ? b : a;
    return (a > b) == want_max ? a : b;
}

static void test_atomic_max_min(void **state) {
    (void)state;
    static const char src[] =
        "kernel ext(v: *i32, f: *f32, mx: *i32, mn: *i32, fmx: *f32, fmn: *f32, olds: *i32, n: i32,\n"
        "           const NS: i32 = 8, const BLOCK: i32 = 64) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    let m = offs < n;\n"
        "    let s = offs % NS;\n"
        "    store(olds + offs, atomic_max(mx + s, load(v + offs, m), m));\n"
        "    atomic_min(mn + s, load(v + offs, m), m);\n"
        "    atomic_max(fmx + s, load(f + offs, m), m);\n"
        "    atomic_min(fmn + s, load(f + offs, m), m);\n"
        "}\n";
    enum { NS = 8 };
    const int sizes[] = {16, 3001};
    prog p;
    trt_kernel *k = compile_text(&p, "ext.tile", src, "ext", NULL, 0);
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t], total = (int)cdiv(n, 64) * 64;
        int32_t *v = fill_i32s(n, 0), *olds = fill_i32s(total, 0x5a5a5a5a), mx[NS], mn[NS], wmx[NS], wmn[NS];
        float *f = rand_f32s(n), fmx[NS], fmn[NS], wfmx[NS], wfmn[NS];
        for (int i = 0; i < n; i++) v[i] = rand_i32();
        /* slot 0 meets a NaN, slot 1 both zeros (the first run only) */
        if (n == 16) f[0] = NAN, f[1] = -0.0f, f[9] = 0.0f;
        for (int j = 0; j < NS; j++)
            mx[j] = wmx[j] = INT32_MIN + j, mn[j] = wmn[j] = INT32_MAX - j, fmx[j] = wfmx[j] = -INFINITY,
            fmn[j] = wfmn[j] = INFINITY;
        for (int i = 0; i < n; i++) {
            int j = i % NS;
            wmx[j] = v[i] > wmx[j] ? v[i] : wmx[j], wmn[j] = v[i] < wmn[j] ? v[i] : wmn[j];
            wfmx[j] = ref_ext_f32(wfmx[j], f[i], true), wfmn[j] = ref_ext_f32(wfmn[j], f[i], false);
        }
        trt_buffer bv = upload(v, sizeof(int32_t) * (size_t)n), bf = upload(f, sizeof(float) * (size_t)n),
                   bmx = upload(mx, sizeof mx), bmn = upload(mn, sizeof mn), bfmx = upload(fmx, sizeof fmx),
                   bfmn = upload(fmn, sizeof fmn), bo = upload(olds, sizeof(int32_t) * (size_t)total);
        trt_arg a[8] = {trt_buf(bv), trt_buf(bf), trt_buf(bmx), trt_buf(bmn), trt_buf(bfmx), trt_buf(bfmn), trt_buf(bo),
                        trt_int(n)};
        launch(k, cdiv(n, 64), 1, 1, a, 8);
        download(bmx, mx, sizeof mx), download(bmn, mn, sizeof mn), download(bfmx, fmx, sizeof fmx);
        download(bfmn, fmn, sizeof fmn), download(bo, olds, sizeof(int32_t) * (size_t)total);
        trt_free(dev, bv), trt_free(dev, bf);
        for (int j = 0; j < NS; j++) {
            if (mx[j] != wmx[j] || mn[j] != wmn[j])
                fail_msg("i32 atomic_max/min n=%d slot %d: %d, %d, want %d, %d on %s", n, j, mx[j], mn[j], wmx[j], wmn[j],
                         trt_device_name(dev));
            if (!same_f32(fmx[j], wfmx[j]) || !same_f32(fmn[j], wfmn[j]) || signbit(fmx[j]) != signbit(wfmx[j]) ||
                signbit(fmn[j]) != signbit(wfmn[j]))
                fail_msg("f32 atomic_max/min n=%d slot %d: %g, %g, want %g, %g on %s", n, j, fmx[j], fmn[j], wfmx[j],
                         wfmn[j], trt_device_name(dev));
        }
        if (n == 16) assert_true(isnan(fmx[0]) && isnan(fmn[0]) && !signbit(fmx[1]) && fmx[1] == 0 && signbit(fmn[1]));
        /* each old value is the slot's start or an earlier value there, at most the final maximum */
        for (int i = 0; i < total; i++) {
            if (i >= n) {
                if (olds[i] != 0) fail_msg("atomic_max: masked-off lane %d gave %d on %s", i, olds[i], trt_device_name(dev));
                continue;
            }
            int j = i % NS;
            bool known = olds[i] == INT32_MIN + j;
            for (int q = j; q < n && !known; q += NS) known = q != i && v[q] == olds[i];
            if (!known || olds[i] > wmx[j])
                fail_msg("atomic_max: element %d got old value %d, not one slot %d held, on %s", i, olds[i], j,
                         trt_device_name(dev));
        }
        free(v), free(olds), free(f);
    }
    drop(&p);
}

/* xchg: per slot, the old values handed out and the final value are the
 * start value and every value written, each exactly once. */
static void test_atomic_xchg(void **state) {
    (void)state;
    static const char src[] =
        "kernel swap(slots: *i32, fslots: *f32, olds: *i32, folds: *f32, n: i32, const NS: i32 = 4,\n"
        "            const BLOCK: i32 = 64) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    store(olds + offs, atomic_xchg(slots + offs % NS, offs + 1, offs < n));\n"
        "    store(folds + offs, atomic_xchg(fslots + offs % NS, cast(offs + 1, f32) * 0.5, mask = offs < n));\n"
        "}\n";
    enum { NS = 4 };
    const int sizes[] = {3, 1000};
    prog p;
    trt_kernel *k = compile_text(&p, "swap.tile", src, "swap", NULL, 0);
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t], total = (int)cdiv(n, 64) * 64;
        int32_t slots[NS], *olds = fill_i32s(total, 0x5a5a5a5a);
        float fslots[NS], *folds = poison_f32s(total);
        for (int j = 0; j < NS; j++) slots[j] = -(j + 1), fslots[j] = (float)-(j + 1);
        trt_buffer bs = upload(slots, sizeof slots), bf = upload(fslots, sizeof fslots),
                   bo = upload(olds, sizeof(int32_t) * (size_t)total), bfo = upload(folds, sizeof(float) * (size_t)total);
        trt_arg a[5] = {trt_buf(bs), trt_buf(bf), trt_buf(bo), trt_buf(bfo), trt_int(n)};
        launch(k, cdiv(n, 64), 1, 1, a, 5);
        download(bs, slots, sizeof slots), download(bf, fslots, sizeof fslots);
        download(bo, olds, sizeof(int32_t) * (size_t)total), download(bfo, folds, sizeof(float) * (size_t)total);
        /* value v > 0 was written by element v - 1; v = -(j + 1) started in slot j */
        int *seen = calloc((size_t)(n + NS + 1), sizeof(int)), *fseen = calloc((size_t)(n + NS + 1), sizeof(int));
        for (int i = 0; i < total + NS; i++) {
            bool fin = i >= total;
            int j = fin ? i - total : i % NS;
            if (!fin && i >= n) {
                if (olds[i] != 0 || folds[i] != 0)
                    fail_msg("atomic_xchg: masked-off lane %d gave %d, %g on %s", i, olds[i], folds[i], trt_device_name(dev));
                continue;
            }
            int32_t got = fin ? slots[j] : olds[i];
            float fgot = fin ? fslots[j] : folds[i];
            int at = got > 0 ? got : n - got, fat = fgot > 0 ? (int)(fgot * 2) : n - (int)fgot;
            bool ok = got > 0 ? got <= n && (got - 1) % NS == j : got == -(j + 1);
            bool fok = fgot > 0 ? fgot * 2 <= n && ((int)(fgot * 2) - 1) % NS == j : fgot == (float)-(j + 1);
            if (!ok || seen[at]++ || !fok || fseen[fat]++)
                fail_msg("atomic_xchg n=%d: %s %d of slot %d is %d, %g: not each value once on %s", n,
                         fin ? "final value" : "old value", i, j, got, fgot, trt_device_name(dev));
        }
        free(olds), free(folds), free(seen), free(fseen);
    }
    drop(&p);
}

/* cas: each program tries to claim every slot; exactly one wins each, the
 * others see the winner. Floats compare bits, so a -0 slot is not 0. */
static void test_atomic_cas_claims(void **state) {
    (void)state;
    static const char src[] =
        "kernel claim(slots: *i32, fslots: *f32, got: *i32, fgot: *f32, ns: i32, const S: i32 = 16) {\n"
        "    let pid = program_id(0);\n"
        "    let s = arange(0, S);\n"
        "    store(got + pid * S + s, atomic_cas(slots + s, 0, pid + 1, mask = s < ns));\n"
        "    store(fgot + pid * S + s, atomic_cas(fslots + s, 0.0, cast(pid + 1, f32), s < ns));\n"
        "}\n";
    enum { S = 16, G = 9 };
    const int ns_values[] = {S, 11};
    prog p;
    trt_kernel *k = compile_text(&p, "claim.tile", src, "claim", NULL, 0);
    for (size_t t = 0; t < 2; t++) {
        int ns = ns_values[t];
        int32_t slots[S], *got = fill_i32s(G * S, 0x5a5a5a5a);
        float fslots[S], *fgot = poison_f32s(G * S);
        for (int s = 0; s < S; s++) slots[s] = s < ns ? 0 : 0x7777, fslots[s] = s < ns ? 0.0f : 7.0f;
        fslots[1] = -0.0f; /* never claimed: -0 does not have +0's bits */
        trt_buffer bs = upload(slots, sizeof slots), bf = upload(fslots, sizeof fslots),
                   bg = upload(got, sizeof(int32_t) * G * S), bfg = upload(fgot, sizeof(float) * G * S);
        trt_arg a[5] = {trt_buf(bs), trt_buf(bf), trt_buf(bg), trt_buf(bfg), trt_int(ns)};
        launch(k, G, 1, 1, a, 5);
        download(bs, slots, sizeof slots), download(bf, fslots, sizeof fslots);
        download(bg, got, sizeof(int32_t) * G * S), download(bfg, fgot, sizeof(float) * G * S);
        for (int s = 0; s < S; s++) {
            if (s >= ns) {
                assert_true(slots[s] == 0x7777 && fslots[s] == 7.0f);
                for (int pid = 0; pid < G; pid++)
                    if (got[pid * S + s] != 0 || fgot[pid * S + s] != 0)
                        fail_msg("atomic_cas: masked-off slot %d gave %d, %g on %s", s, got[pid * S + s], fgot[pid * S + s],
                                 trt_device_name(dev));
                continue;
            }
            int winners = 0, fwinners = 0;
            for (int pid = 0; pid < G; pid++) {
                int32_t g = got[pid * S + s];
                float fg = fgot[pid * S + s];
                winners += g == 0;
                if (g == 0 ? slots[s] != pid + 1 : g != slots[s])
                    fail_msg("atomic_cas slot %d: program %d saw %d, slot holds %d on %s", s, pid, g, slots[s],
                             trt_device_name(dev));
                if (s == 1) {
                    if (!(fg == 0 && signbit(fg))) fail_msg("atomic_cas: -0 slot gave %g to program %d", fg, pid);
                    continue;
                }
                fwinners += fg == 0;
                if (fg == 0 ? fslots[s] != (float)(pid + 1) : fg != fslots[s])
                    fail_msg("f32 atomic_cas slot %d: program %d saw %g, slot holds %g on %s", s, pid, fg, fslots[s],
                             trt_device_name(dev));
            }
            assert_int_equal(winners, 1);
            assert_int_equal(fwinners, s == 1 ? 0 : 1);
        }
        assert_true(fslots[1] == 0 && signbit(fslots[1]));
        free(got), free(fgot);
    }
    drop(&p);
}


HARNESS_MAIN(
    cmocka_unit_test(test_atomic_histogram),
    cmocka_unit_test(test_atomic_2d_and_scalar),
    cmocka_unit_test(test_atomic_add_sums),
    cmocka_unit_test(test_atomic_max_min),
    cmocka_unit_test(test_atomic_xchg),
    cmocka_unit_test(test_atomic_cas_claims))

