/* Unit tests for support/half.c, the f16 and bf16 conversions of the CPU
 * interpreter and the emulator. The expected bits are IEEE 754 facts
 * (binary16: 5 exponent bits, bias 15, 10 mantissa bits; bfloat16: the top
 * half of binary32, 8 exponent bits, bias 127, 7 mantissa bits), worked out
 * by hand, not taken from the code's output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "support/support.h"

#define F16(x) tc_half_bits((x), false)
#define BF16(x) tc_half_bits((x), true)

static void test_f16_exact_values(void **state) {
    (void)state;
    assert_int_equal(F16(0.0), 0x0000);
    assert_int_equal(F16(-0.0), 0x8000);
    assert_int_equal(F16(1.0), 0x3c00);
    assert_int_equal(F16(-2.0), 0xc000);
    assert_int_equal(F16(0.5), 0x3800);
    assert_int_equal(F16(65504.0), 0x7bff);           /* the largest finite */
    assert_int_equal(F16(ldexp(1.0, -14)), 0x0400);   /* the smallest normal */
    assert_int_equal(F16(ldexp(1.0, -24)), 0x0001);   /* the smallest subnormal */
    assert_int_equal(F16(ldexp(1023.0, -24)), 0x03ff); /* the largest subnormal */
    assert_int_equal(F16(INFINITY), 0x7c00);
    assert_int_equal(F16(-INFINITY), 0xfc00);
}

static void test_f16_rounds_to_nearest_even(void **state) {
    (void)state;
    /* 1 + 2^-11 lies halfway between 1 (0x3c00, even) and 1 + 2^-10 */
    assert_int_equal(F16(1.0 + ldexp(1.0, -11)), 0x3c00);
    /* 1 + 3*2^-11 lies halfway between 0x3c01 and 0x3c02 (even) */
    assert_int_equal(F16(1.0 + 3 * ldexp(1.0, -11)), 0x3c02);
    /* just above a halfway point goes up */
    assert_int_equal(F16(1.0 + ldexp(1.0, -11) + ldexp(1.0, -30)), 0x3c01);
    /* just below, down */
    assert_int_equal(F16(1.0 + ldexp(1.0, -11) - ldexp(1.0, -30)), 0x3c00);
    /* 2^-25, half the smallest subnormal: a tie, to zero (even) */
    assert_int_equal(F16(ldexp(1.0, -25)), 0x0000);
    assert_int_equal(F16(-ldexp(1.0, -25)), 0x8000);
    /* 3*2^-25: halfway between subnormals 1 and 2 (even) */
    assert_int_equal(F16(3 * ldexp(1.0, -25)), 0x0002);
    assert_int_equal(F16(ldexp(1.0, -25) + ldexp(1.0, -40)), 0x0001);
    /* halfway between the largest subnormal and the smallest normal (even) */
    assert_int_equal(F16(ldexp(1.0, -14) - ldexp(1.0, -25)), 0x0400);
    /* 2 - 2^-11: halfway between 0x3bff (odd) and 2, up across the binade */
    assert_int_equal(F16(2.0 - ldexp(1.0, -11)), 0x4000);
}

static void test_f16_overflow(void **state) {
    (void)state;
    /* 65520 lies halfway between 65504 (odd mantissa 0x3ff) and 65536,
     * which is past the largest finite: ties to even give infinity */
    assert_int_equal(F16(65520.0), 0x7c00);
    assert_int_equal(F16(65519.0), 0x7bff);
    assert_int_equal(F16(-65520.0), 0xfc00);
    assert_int_equal(F16(1e6), 0x7c00);
    assert_int_equal(F16(-1e300), 0xfc00);
}

static void test_f16_nan(void **state) {
    (void)state;
    uint16_t h = F16(NAN);
    /* a NaN: all-ones exponent, mantissa not zero; quiet: its top bit set */
    assert_int_equal(h & 0x7c00, 0x7c00);
    assert_int_equal(h & 0x0200, 0x0200);
    assert_true(isnan(tc_half_value(0x7e00, false)));
    assert_true(isnan(tc_half_value(0x7c01, false)));  /* signalling */
    assert_true(isnan(tc_half_value(0xfe00, false)));
}

static void test_f16_values(void **state) {
    (void)state;
    assert_true(tc_half_value(0x7bff, false) == 65504.0);
    assert_true(tc_half_value(0x0001, false) == ldexp(1.0, -24));
    assert_true(tc_half_value(0x03ff, false) == ldexp(1023.0, -24));
    assert_true(tc_half_value(0x0400, false) == ldexp(1.0, -14));
    assert_true(tc_half_value(0x3555, false) == 0.333251953125);
    assert_true(tc_half_value(0xc000, false) == -2.0);
    double z = tc_half_value(0x8000, false);
    assert_true(z == 0.0 && signbit(z));
    assert_true(isinf(tc_half_value(0x7c00, false)) && tc_half_value(0x7c00, false) > 0);
    assert_true(isinf(tc_half_value(0xfc00, false)) && tc_half_value(0xfc00, false) < 0);
}

/* Every f16 and bf16 that is not a NaN is a double exactly, and back. */
static void test_round_trip(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) != 0x7c00 || !(h & 0x3ff)) assert_int_equal(F16(tc_half_value((uint16_t)h, false)), h);
        if ((h & 0x7f80) != 0x7f80 || !(h & 0x7f)) assert_int_equal(BF16(tc_half_value((uint16_t)h, true)), h);
    }
}

static void test_bf16(void **state) {
    (void)state;
    assert_int_equal(BF16(1.0), 0x3f80);
    assert_int_equal(BF16(-2.0), 0xc000);
    assert_int_equal(BF16(-0.0), 0x8000);
    assert_int_equal(BF16(ldexp(255.0, 120)), 0x7f7f); /* the largest finite, (2 - 2^-7) * 2^127 */
    assert_int_equal(BF16(ldexp(1.0, -126)), 0x0080);  /* the smallest normal */
    assert_int_equal(BF16(ldexp(1.0, -133)), 0x0001);  /* the smallest subnormal */
    assert_int_equal(BF16(INFINITY), 0x7f80);
    assert_int_equal(BF16(-INFINITY), 0xff80);
    assert_true(tc_half_value(0x7f7f, true) == ldexp(255.0, 120));
    assert_true(tc_half_value(0x0001, true) == ldexp(1.0, -133));
    assert_true(tc_half_value(0x4049, true) == 3.140625);
}

/* bf16 is rounded to nearest even, not cut from the float's bits. */
static void test_bf16_rounds_not_truncates(void **state) {
    (void)state;
    /* 1 + 2^-8: halfway between 0x3f80 (even) and 0x3f81 */
    assert_int_equal(BF16(1.0 + ldexp(1.0, -8)), 0x3f80);
    /* 1 + 3*2^-8: halfway between 0x3f81 and 0x3f82 (even) */
    assert_int_equal(BF16(1.0 + 3 * ldexp(1.0, -8)), 0x3f82);
    /* the float 0x3f80ffff: truncation would give 0x3f80, rounding 0x3f81 */
    assert_int_equal(BF16(1.0 + ldexp(65535.0, -23)), 0x3f81);
    /* pi = 0x40490fdb as a float: 0x4049 either way */
    assert_int_equal(BF16(3.14159265358979), 0x4049);
    /* halfway between the two smallest subnormals: 3*2^-134, to 2 (even) */
    assert_int_equal(BF16(3 * ldexp(1.0, -134)), 0x0002);
    /* FLT_MAX (2^128 - 2^104) is past the halfway point 2^128 - 2^119
     * between bf16's largest finite and 2^128: infinity (truncation: 0x7f7f) */
    assert_int_equal(BF16(ldexp(16777215.0, 104)), 0x7f80);
    assert_int_equal(BF16(ldexp(1.0, 128) - ldexp(1.0, 119)), 0x7f80); /* the tie itself, to even */
    assert_int_equal(BF16(ldexp(1.0, 128) - ldexp(1.0, 119) - ldexp(1.0, 100)), 0x7f7f);
    assert_int_equal(BF16(-1e300), 0xff80);
}

static void test_bf16_nan(void **state) {
    (void)state;
    uint16_t h = BF16(NAN);
    assert_int_equal(h & 0x7f80, 0x7f80);
    assert_int_equal(h & 0x0040, 0x0040);
    assert_true(isnan(tc_half_value(0x7fc0, true)));
    assert_true(isnan(tc_half_value(0x7f81, true)));
    assert_false(isnan(tc_half_value(0x7f80, true)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_exact_values), cmocka_unit_test(test_f16_rounds_to_nearest_even),
        cmocka_unit_test(test_f16_overflow),     cmocka_unit_test(test_f16_nan),
        cmocka_unit_test(test_f16_values),       cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bf16),             cmocka_unit_test(test_bf16_rounds_not_truncates),
        cmocka_unit_test(test_bf16_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
