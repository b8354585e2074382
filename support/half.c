/* half.c - f16 and bf16 to and from double, written once for the CPU
 * interpreter (runtime/interp.c) and the emulator (emu/arith.c, emu/mma.c),
 * which both keep their 16-bit floats as doubles between memory accesses.
 * One routine serves both formats: they differ only in the widths of the
 * exponent and the mantissa. */
#include "support/support.h"

#include <math.h>

/* x rounded to nearest even into a binary format with `mant` stored
 * mantissa bits and exponent bias `bias` (f16: 10, 15; bf16: 7, 127). */
static uint16_t round_small(double x, int mant, int bias) {
    uint16_t sign = signbit(x) ? (uint16_t)(1u << 15) : 0;
    int emax = 2 * bias + 1; /* the all-ones exponent */
    uint16_t inf = (uint16_t)(emax << mant);
    if (isnan(x)) return (uint16_t)(sign | inf | (1u << (mant - 1)));
    double a = fabs(x);
    if (isinf(a)) return sign | inf;
    if (a < ldexp(1.0, 1 - bias)) { /* subnormal: units of 2^(1-bias-mant) */
        double q = nearbyint(ldexp(a, bias - 1 + mant));
        return (uint16_t)(sign | (uint16_t)q); /* q == 2^mant is the smallest normal: right bits */
    }
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint(ldexp(m, mant + 1));
    int E = e - 1 + bias;
    if (q == ldexp(1.0, mant + 1)) q = ldexp(1.0, mant), E++;
    if (E >= emax) return sign | inf;
    return (uint16_t)(sign | (uint16_t)(E << mant) | (uint16_t)((uint32_t)q - (1u << mant)));
}
static double small_value(uint16_t h, int mant, int bias) {
    int emax = 2 * bias + 1;
    int e = (h >> mant) & emax;
    uint32_t m = h & ((1u << mant) - 1);
    double v = e == 0 ? ldexp((double)m, 1 - bias - mant)
               : e == emax ? (m ? NAN : INFINITY)
                           : ldexp((double)(m | (1u << mant)), e - bias - mant);
    return (h >> 15) ? -v : v;
}

uint16_t tc_half_bits(double x, bool bf16) { return bf16 ? round_small(x, 7, 127) : round_small(x, 10, 15); }
double tc_half_value(uint16_t h, bool bf16) { return bf16 ? small_value(h, 7, 127) : small_value(h, 10, 15); }
