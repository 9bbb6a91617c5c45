/* Half and bfloat16 to float32: all 65,536 patterns of each, on every instruction-set path,
 * against references written here from the IEEE definitions (with ldexp, no bit tricks shared
 * with the library). NaNs must come out as NaN with their payload: a half NaN's 10 payload bits
 * land in the top of the float mantissa and the result is quiet (as F16C's vcvtph2ps and
 * ggml's scalar conversion both give); a bf16 NaN is kept exactly, signalling or not. */
#include "tensormap.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static uint32_t half_reference(uint16_t h)
{
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    if (e == 31) {
        if (m == 0)
            return bits_of(s ? -INFINITY : INFINITY);
        return (uint32_t)s << 31 | 0x7f800000u | 0x400000u | (uint32_t)m << 13;
    }
    const double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return bits_of((float)(s ? -v : v)); /* exact: every half is a float */
}

/* bfloat16: 1 sign, 8 exponent (bias 127), 7 fraction bits. */
static uint32_t bf16_reference(uint16_t h)
{
    const int s = h >> 15, e = (h >> 7) & 255, m = h & 127;
    if (e == 255)
        return (uint32_t)h << 16; /* infinities and NaNs: the bits as they are */
    const double v = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    return bits_of((float)(s ? -v : v));
}

static void exhaustive(tm_type type, uint32_t (*reference)(uint16_t))
{
    uint16_t *in = malloc(65536 * sizeof *in);
    float *out = malloc(65536 * sizeof *out);
    cr_assert(in && out);
    for (uint32_t i = 0; i < 65536; i++)
        in[i] = (uint16_t)i;
    int paths = 0;
    for (unsigned k = 0; tm_isa_built(k); k++) {
        if (!tm_isa_available(tm_isa_built(k)))
            continue;
        tm_error err = {0};
        cr_assert_eq(tm_set_isa(tm_isa_built(k), &err), TM_OK, "%s", err.message);
        /* odd element counts too: the SIMD tails are converted the same way */
        memset(out, 0, 65536 * sizeof *out);
        cr_assert_eq(tm_dequant_raw(type, in, 65536, out, &err), TM_OK, "%s", err.message);
        cr_assert_eq(tm_dequant_raw(type, in + 1, 65535 - 7, out + 1, &err), TM_OK, "%s", err.message);
        for (uint32_t i = 0; i < 65536; i++) {
            const uint32_t want = reference((uint16_t)i), got = bits_of(out[i]);
            if (got != want)
                cr_assert_fail("%s on %s: pattern %04x gives %08x, want %08x", tm_type_name(type),
                               tm_isa_built(k), i, got, want);
        }
        paths++;
    }
    cr_assert(paths >= 1);
    free(in);
    free(out);
}

Test(fp16, all_half_patterns) { exhaustive(TM_TYPE_F16, half_reference); }

Test(fp16, all_bf16_patterns) { exhaustive(TM_TYPE_BF16, bf16_reference); }

/* The references themselves, on values known without any formula. */
Test(fp16, references_agree_with_known_values)
{
    cr_assert_eq(half_reference(0x3c00), bits_of(1.0f));
    cr_assert_eq(half_reference(0xc000), bits_of(-2.0f));
    cr_assert_eq(half_reference(0x7bff), bits_of(65504.0f));
    cr_assert_eq(half_reference(0x0001), bits_of(5.9604644775390625e-08f));
    cr_assert_eq(half_reference(0x7c01), 0x7fc02000u); /* signalling NaN, payload 1, quieted */
    cr_assert_eq(bf16_reference(0x3f80), bits_of(1.0f));
    cr_assert_eq(bf16_reference(0x0001), bits_of(9.18354961579912e-41f));
}
