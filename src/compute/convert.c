/* float32 to the two 16-bit float formats, rounded to nearest with ties to even: what the
 * export to safetensors writes. Integer arithmetic only, so the result does not depend on the
 * FPU's rounding mode, the compiler's contraction choices or flush-to-zero settings. */
#include "../common/internal.h"
#include "blocks.h"

/* Shift right by s (1..31) and round the dropped bits to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t v, unsigned s)
{
    const uint32_t kept = v >> s, rest = v & ((1u << s) - 1u), half = 1u << (s - 1u);
    return kept + (rest > half || (rest == half && (kept & 1u)));
}

static uint16_t f16_of(float f)
{
    const uint32_t x = tm__f32_bits(f), sign = x >> 16 & 0x8000u, mag = x & 0x7fffffffu;
    if (mag > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);          /* NaN: quiet, sign kept */
    if (mag >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);          /* 65520 and up (and inf) round to inf */
    if (mag >= 0x38800000u)                         /* a normal half: rebias 127 -> 15 */
        return (uint16_t)(sign | shift_round_even(mag - 0x38000000u, 13));
    if (mag <= 0x33000000u)
        return (uint16_t)sign;                      /* 2^-25 and below: a tie or less, to 0 */
    /* A subnormal half counts units of 2^-24: the 24-bit significand m times 2^(e - 126). */
    const uint32_t e = mag >> 23, m = (mag & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | shift_round_even(m, 126u - e));
}

static uint16_t bf16_of(float f)
{
    const uint32_t x = tm__f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16 & 0x8000u) | 0x7fc0u); /* NaN: quiet, sign kept */
    return (uint16_t)((x + 0x7fffu + (x >> 16 & 1u)) >> 16);
}

void tm_f32_to_f16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = f16_of(src[i]);
}

void tm_f32_to_bf16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_of(src[i]);
}
