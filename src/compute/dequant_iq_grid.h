/* The kernels of the five grid i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s), written once
 * for every path that handles a sub-group of eight elements as one unit (AVX2: one vector;
 * NEON: two): the scalar unpacking of dequant_iq.h, then per sub-group one grid entry and one
 * sign byte through the path's store_signed. The file that includes this defines first:
 *   IQ_VEC                      a float in every lane (the group's scale)
 *   IQ_SPLAT(f)                 f in every lane, as an IQ_VEC
 *   IQ_NAME(type)               the name of its kernel for type (dequant_iq2_xxs_avx2)
 *   half(p)                     the IEEE half at p as a float
 *   grid_u8x8(entry)            the eight bytes of a 64-bit grid entry
 *   grid_u8x4x2(grid, i1, i2)   the four bytes of two 32-bit entries
 *   store_signed(dst, db, m, s) dst[j] = (db * m[j]) * (bit j of s ? -1.0f : 1.0f), j < 8
 * The loops are unrolled (#pragma GCC unroll), so that every group's shifts and offsets are
 * constants. Not for AVX-512, which stores two sub-groups (sixteen lanes) at once. */
#ifndef TM_DEQUANT_IQ_GRID_H
#define TM_DEQUANT_IQ_GRID_H

#include "blocks.h"
#include "dequant_iq.h"

/* the scale of an iq2_xxs, iq2_xs, iq2_s or iq3_xxs group, in every lane */
static IQ_VEC grid_scale(float d, unsigned k, float f) { return IQ_SPLAT(tm__iq_grid_scale(d, k, f)); }

/* ---- iq2 ------------------------------------------------------------------------------------- */

static void IQ_NAME(iq2_xxs)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_xxs)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *rec = b + 2 + 8 * g;
            const uint32_t a = tm__rd32(rec + 4);
            const IQ_VEC db = grid_scale(d, a >> 28, 0.25f);
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++)
                store_signed(dst + 8 * l, db, grid_u8x8(&tm__iq2xxs_grid[rec[l]]), tm__iq_ksign(a, l));
        }
    }
}

static void IQ_NAME(iq2_xs)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_xs)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *qs = b + 2 + 8 * g;
            const IQ_VEC db[2] = { grid_scale(d, b[66 + g] & 15u, 0.25f), grid_scale(d, b[66 + g] >> 4, 0.25f) };
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++) {
                const unsigned v = tm__rd16(qs + 2 * l);
                store_signed(dst + 8 * l, db[l / 2], grid_u8x8(&tm__iq2xs_grid[v & 511]), tm__ksigns_iq2xs[v >> 9]);
            }
        }
    }
}

static void IQ_NAME(iq2_s)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_s)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const IQ_VEC db[2] = { grid_scale(d, b[74 + g] & 15u, 0.25f), grid_scale(d, b[74 + g] >> 4, 0.25f) };
            const unsigned qh = b[66 + g];
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++) {
                const unsigned idx = b[2 + 4 * g + l] | (qh >> 2 * l & 3u) << 8;
                store_signed(dst + 8 * l, db[l / 2], grid_u8x8(&tm__iq2s_grid[idx]), b[34 + 4 * g + l]);
            }
        }
    }
}

/* ---- iq3 ------------------------------------------------------------------------------------- */

static void IQ_NAME(iq3_xxs)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq3_xxs)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *qs = b + 2 + 8 * g;
            const uint32_t a = tm__rd32(b + 66 + 4 * g);
            const IQ_VEC db = grid_scale(d, a >> 28, 0.5f);
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++)
                store_signed(dst + 8 * l, db, grid_u8x4x2(tm__iq3xxs_grid, qs[2 * l], qs[2 * l + 1]), tm__iq_ksign(a, l));
        }
    }
}

static void IQ_NAME(iq3_s)(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq3_s)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *qs = b + 2 + 8 * g;
            const unsigned qh = b[66 + g];
            const IQ_VEC db = IQ_SPLAT(tm__iq_odd_scale(d, (unsigned)b[106 + g / 2] >> 4 * (g % 2) & 15u));
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++) {
                const unsigned i1 = qs[2 * l] | (qh >> 2 * l & 1u) << 8;
                const unsigned i2 = qs[2 * l + 1] | (qh >> (2 * l + 1) & 1u) << 8;
                store_signed(dst + 8 * l, db, grid_u8x4x2(tm__iq3s_grid, i1, i2), b[74 + 4 * g + l]);
            }
        }
    }
}

#endif /* TM_DEQUANT_IQ_GRID_H */
