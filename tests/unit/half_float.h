/* half_float.h - f16 and bf16 storage for the tests' host buffers: float
 * to bits with round-to-nearest-even (as the compiler's casts round), bits
 * to float, and put/get of element i of a buffer of each type. Shared by
 * the device tests (device_harness.h) and test_stdlib_api.c. */
#ifndef TILEC_TESTS_HALF_FLOAT_H
#define TILEC_TESTS_HALF_FLOAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t f16_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, mant = u & 0x7fffff;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) { /* subnormal f16 */
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000;
        int shift = 14 - e;
        uint32_t r = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = (uint32_t)e << 10 | mant >> 13, rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}
static inline float f16_value(uint16_t h) {
    int exp = (h >> 10) & 31, mant = h & 1023;
    float v = exp == 0 ? ldexpf((float)mant, -24) : exp == 31 ? (mant ? NAN : INFINITY) : ldexpf((float)(1024 + mant), exp - 25);
    return (h & 0x8000) ? -v : v;
}
static inline uint16_t bf16_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static inline float bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float v;
    memcpy(&v, &u, 4);
    return v;
}
static inline void put_f32(void *p, size_t i, float v) { ((float *)p)[i] = v; }
static inline float get_f32(const void *p, size_t i) { return ((const float *)p)[i]; }
static inline void put_f16(void *p, size_t i, float v) { ((uint16_t *)p)[i] = f16_bits(v); }
static inline float get_f16(const void *p, size_t i) { return f16_value(((const uint16_t *)p)[i]); }
static inline void put_bf16(void *p, size_t i, float v) { ((uint16_t *)p)[i] = bf16_bits(v); }
static inline float get_bf16(const void *p, size_t i) { return bf16_value(((const uint16_t *)p)[i]); }

#endif
