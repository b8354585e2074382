/* erf_f32.h - the f32 erf that codegen emits for the `erf` op, as data and
 * as a C model of the same operations, so a host test can bound its error.
 *
 * Two pieces, picked per element:
 *   |x| < 1:  x * S(x^2), S of degree 5 (relative error 4e-8);
 *   |x| >= 1: copysign(1 - 2^L(min(|x|, 3.95)), x), L of degree 6 fitted to
 *             log2(erfc) weighted by erfc (absolute error 1e-9 in erf); on
 *             the GPU 2^L is ex2.approx.f32. From 3.925 on, 1 - erfc(x)
 *             rounds to 1 in f32 anyway.
 * S and L are minimax (Remez) fits made for tilec, rounded to f32, and
 * evaluated by Horner's rule with one fma a step. NaN fails the ordered
 * compare, takes the first piece and stays NaN; -0 gives -0.
 *
 * Over every normal f32 in [0, 5) the model is within 1.13e-7 of erf, and
 * below 1 within 1.71e-7 relatively (also with its exp2 off by 2^-22 either
 * way, more than ex2.approx is); docs/language.md promises 2e-7 for both.
 * test_lower_erf checks a sample. */
#ifndef TILEC_LOWER_ERF_F32_H
#define TILEC_LOWER_ERF_F32_H

#include <math.h>

#define LOWER_ERF_SPLIT 1.0f  /* |x| from here: the second piece */
#define LOWER_ERF_CLAMP 3.95f /* L's argument stops here */

static const float lower_erf_small[6] = {
    1.128379122e+00f, -3.761232619e-01f, 1.128018011e-01f, -2.671131133e-02f,
    4.917551448e-03f, -5.631422298e-04f};
static const float lower_erf_large[7] = {
    -5.103098103e-04f, -1.625975069e+00f, -9.207650228e-01f, -1.486514981e-01f,
    3.145842324e-02f, -4.240956530e-03f, 2.677266676e-04f};

/* What codegen emits, operation for operation, with exp2f for ex2.approx
 * (scaled by 1 + exp2_error, to model its error). */
static inline float lower_erf_f32_model(float x, float exp2_error) {
    float ax = fabsf(x), u = x * x;
    float s = lower_erf_small[5];
    for (int j = 4; j >= 0; j--) s = fmaf(s, u, lower_erf_small[j]);
    float t = fminf(ax, LOWER_ERF_CLAMP), l = lower_erf_large[6];
    for (int j = 5; j >= 0; j--) l = fmaf(l, t, lower_erf_large[j]);
    float large = copysignf(1.0f - exp2f(l) * (1.0f + exp2_error), x);
    return ax >= LOWER_ERF_SPLIT ? large : x * s;
}

#endif
