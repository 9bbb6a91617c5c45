/* The kernels of the 16-entry value-table types with 32 elements a scale (iq4_nl, iq4_xs,
 * mxfp4), written once for AVX2 and AVX-512: per scale, the table times the scale with the
 * scalar kernel's own float32 multiply (operands in its order), then each element looked up by
 * its nibble. The file that includes this defines first:
 *   LUT_TABLE                 the 16 possible outputs, in registers
 *   LUT_SPLAT(f)              f in every lane
 *   LUT_NAME(type)            the name of its kernel for type (dequant_iq4_nl_avx2)
 *   half(p)                   the IEEE half at p as a float
 *   values16(kv)              the 16 int8 values kv as a LUT_TABLE (exact)
 *   scaled(s, t), times(t, s) s * t and t * s, lane by lane (s a LUT_SPLAT)
 *   nibbles32(dst, qs, t)     dst[j] = t[low nibble of qs[j]], dst[16 + j] = t[high nibble],
 *                             j < 16
 * nvfp4 (16 elements a scale) stays in each file: AVX-512 stores a scale's 16 in one vector. */
#ifndef TM_DEQUANT_LUT16_H
#define TM_DEQUANT_LUT16_H

#include "blocks.h"
#include "quant_tables.h"

/* iq4_nl: table d * kv. */
static void LUT_NAME(iq4_nl)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const LUT_TABLE kv = values16(tm__kvalues_iq4nl);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq4_nl), dst += 32)
        nibbles32(dst, b + 2, scaled(LUT_SPLAT(half(b)), kv));
}

/* iq4_xs: per group, dl = d * (ls - 32) (one scalar multiply, as the scalar kernel), table
 * dl * kv. */
static void LUT_NAME(iq4_xs)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const LUT_TABLE kv = values16(tm__kvalues_iq4nl);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq4_xs)) {
        const float d = half(b);
        for (unsigned g = 0; g < 8; g++, dst += 32) {
            const float dl = d * (float)(tm__iq4_xs_scale(b, g) - 32);
            nibbles32(dst, b + 8 + 16 * g, scaled(LUT_SPLAT(dl), kv));
        }
    }
}

/* mxfp4: table kv * d. */
static void LUT_NAME(mxfp4)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const LUT_TABLE kv = values16(tm__kvalues_fp4);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_mxfp4), dst += 32)
        nibbles32(dst, b + 1, times(kv, LUT_SPLAT(tm__e8m0_half(b[0]))));
}

#endif /* TM_DEQUANT_LUT16_H */
