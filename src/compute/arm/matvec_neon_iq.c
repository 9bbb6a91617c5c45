/* NEON TM_MATVEC_Q8 kernels for the grid i-quants: iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s,
 * iq1_s, iq1_m (layouts: FORMATS-more.md; x as q8_K). Baseline ARMv8-A NEON: no dot-product
 * extension, no SVE. Built with -ffp-contract=off like every kernel file; only the table is
 * exported, every function is static.
 *
 * The scheme of x86/matvec_avx2_q8.c's grid kernels on 16-byte vectors. A block's weights are
 * d f (2k + 1) v with v an integer: iq2, iq3: the signed grid byte; iq1: 8g +- 1, g the grid's
 * -1..1 and +-1 its delta of +-1/8 times 8 (matvec_unpack.h's offset dl * delta, folded into
 * the code). The decoders form these products exactly in float (a half times at most five
 * bits), so each block is d f dx times an exact integer sum and enters the row's sum in double
 * with one rounding: W x-hat to float32 rounding, as the scalar kernel's per-group doubles.
 *
 * Per group of 32 elements, two vectors of 16 weight bytes: two 64-bit grid entries (iq2, iq1)
 * or four 32-bit ones (iq3) loaded into lanes; the group's four sign bytes become byte masks
 * (one table lookup spreads each over its 8 bytes, a bit test picks bit j for byte j) that
 * negate the grid bytes (1..62, so never overflowing int8; x's codes are left alone). Each
 * vector against x's 16 codes with vmull_s8 and vpadalq_s16 into int32 (products at most
 * 62 * 127), times its half-group's integer scale 2k + 1 (block sums stay below 2^26). Every
 * field is read where it lies in its block and x's codes 16 at a time inside its block: nothing
 * past the row. The small loops over sub-groups carry #pragma GCC unroll: at -O2 GCC otherwise
 * keeps them as loops and passes the grid indices through a stack array. */
#include "../blocks.h"
#include "../dequant_iq.h"
#include "../kernels.h"
#include "../quant_tables.h"
#include "neon_common.h"

#include <arm_neon.h>
#include <string.h>

/* ---- the pieces every type shares ------------------------------------------------------- */

/* two 64-bit grid entries as 16 bytes (iq2, iq1: eight elements each) */
static inline uint8x16_t grid64(const uint64_t *grid, unsigned i0, unsigned i1)
{
    return vcombine_u8(vld1_u8((const uint8_t *)(const void *)&grid[i0]),
                       vld1_u8((const uint8_t *)(const void *)&grid[i1]));
}

/* four 32-bit grid entries as 16 bytes (iq3: four elements each) */
static inline uint8x16_t grid32(const uint32_t *grid, const unsigned i[4])
{
    uint32x4_t v = vld1q_dup_u32(&grid[i[0]]);
    v = vld1q_lane_u32(&grid[i[1]], v, 1);
    v = vld1q_lane_u32(&grid[i[2]], v, 2);
    return vreinterpretq_u8_u32(vld1q_lane_u32(&grid[i[3]], v, 3));
}

/* mag negated where the sign byte of its sub-group has bit j set for byte j: signs holds the
 * group's four sign bytes, byte l for sub-group l; half picks sub-groups 2 half, 2 half + 1 */
static inline int8x16_t apply_signs(uint8x16_t mag, uint32_t signs, int half_)
{
    static const uint8_t spread[2][16] = { { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 },
                                           { 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 } };
    static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t bytes = vreinterpretq_u8_u32(vdupq_n_u32(signs));
    const uint8x16_t s = vqtbl1q_u8(bytes, vld1q_u8(spread[half_]));
    const uint8x16_t neg = vtstq_u8(s, vld1q_u8(bit));
    return vreinterpretq_s8_u8(vsubq_u8(veorq_u8(mag, neg), neg)); /* -v = (v ^ 0xff) + 1 */
}

/* acc + k_lo (w[0] . xs[0..15]) + k_hi (w[1] . xs[16..31]) */
static inline int32x4_t group_dot(const int8x16_t w[2], const int8_t *xs, int k_lo, int k_hi,
                                  int32x4_t acc)
{
    int32x4_t s[2];
#pragma GCC unroll 8
    for (int h = 0; h < 2; h++) {
        const int8x16_t x = vld1q_s8(xs + 16 * h);
        s[h] = vpaddlq_s16(vmull_s8(vget_low_s8(w[h]), vget_low_s8(x)));
        s[h] = vpadalq_s16(s[h], vmull_high_s8(w[h], x));
    }
    return vmlaq_n_s32(vmlaq_n_s32(acc, s[0], k_lo), s[1], k_hi);
}

/* an iq2 / iq3 group: magnitudes of sub-groups 0, 1 and 2, 3, their sign bytes */
static inline int32x4_t signed_group(uint8x16_t m01, uint8x16_t m23, uint32_t signs,
                                     const int8_t *xs, int k_lo, int k_hi, int32x4_t acc)
{
    const int8x16_t w[2] = { apply_signs(m01, signs, 0), apply_signs(m23, signs, 1) };
    return group_dot(w, xs, k_lo, k_hi, acc);
}

/* the four sign bytes of an iq2_xxs / iq3_xxs group from its 7-bit indices in bits 0..27 */
static inline uint32_t ksigns4(uint32_t a)
{
    return tm__iq_ksign(a, 0) | tm__iq_ksign(a, 1) << 8 | tm__iq_ksign(a, 2) << 16 |
           (uint32_t)tm__iq_ksign(a, 3) << 24;
}

/* 2k + 1 for the 4-bit scale k */
static inline int odd(unsigned k) { return 2 * (int)k + 1; }

/* Per block: acc += dx d f isum, d = d_of(b), isum the block's exact integer sum, built group
 * by group by group(b, g, xs, isum). */
#define DOT_GRID(type, f, group, d_of)                                                      \
    static float dot_##type##_q8_neon(const void *w, const void *xq, size_t n_blocks)      \
    {                                                                                       \
        const uint8_t *b = w;                                                               \
        const tm__q8_Kx *x = xq;                                                            \
        double acc = 0.0;                                                                   \
        for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_##type), x++) {        \
            int32x4_t isum = vdupq_n_s32(0);                                                \
            for (unsigned g = 0; g < 8; g++)                                                \
                isum = group(b, g, x->qs + 32 * g, isum);                                   \
            acc += (double)x->d * (double)d_of(b) * (f) * (double)vaddvq_s32(isum);         \
        }                                                                                   \
        return (float)acc;                                                                  \
    }

/* ---- iq2: 64-bit grid entries, (d (0.5 + k)) 0.25 = d (2k + 1) / 8 ----------------------- */

/* rec: four index bytes, then the u32 of sign indices and scale */
static inline int32x4_t iq2_xxs_group(const uint8_t *b, unsigned g, const int8_t *xs, int32x4_t acc)
{
    const uint8_t *rec = b + 2 + 8 * g;
    const uint32_t a = tm__rd32(rec + 4);
    const int k = odd(a >> 28);
    return signed_group(grid64(tm__iq2xxs_grid, rec[0], rec[1]),
                        grid64(tm__iq2xxs_grid, rec[2], rec[3]), ksigns4(a), xs, k, k, acc);
}

/* a u16 per sub-group: 9-bit index, 7-bit sign index; a scale nibble per half-group */
static inline int32x4_t iq2_xs_group(const uint8_t *b, unsigned g, const int8_t *xs, int32x4_t acc)
{
    unsigned v[4];
    uint32_t s = 0;
#pragma GCC unroll 8
    for (int l = 0; l < 4; l++) {
        v[l] = tm__rd16(b + 2 + 8 * g + 2 * l);
        s |= (uint32_t)tm__ksigns_iq2xs[v[l] >> 9] << 8 * l;
    }
    return signed_group(grid64(tm__iq2xs_grid, v[0] & 511, v[1] & 511),
                        grid64(tm__iq2xs_grid, v[2] & 511, v[3] & 511), s, xs,
                        odd(b[66 + g] & 15u), odd(b[66 + g] >> 4), acc);
}

/* index bytes, two more bits each from qh, the sign bytes as they lie */
static inline int32x4_t iq2_s_group(const uint8_t *b, unsigned g, const int8_t *xs, int32x4_t acc)
{
    const uint8_t *qs = b + 2 + 4 * g;
    const unsigned qh = b[66 + g];
    unsigned i[4];
#pragma GCC unroll 8
    for (unsigned l = 0; l < 4; l++)
        i[l] = qs[l] | (qh >> 2 * l & 3u) << 8;
    return signed_group(grid64(tm__iq2s_grid, i[0], i[1]), grid64(tm__iq2s_grid, i[2], i[3]),
                        tm__rd32(b + 34 + 4 * g), xs, odd(b[74 + g] & 15u), odd(b[74 + g] >> 4),
                        acc);
}

DOT_GRID(iq2_xxs, 0.125, iq2_xxs_group, half)
DOT_GRID(iq2_xs, 0.125, iq2_xs_group, half)
DOT_GRID(iq2_s, 0.125, iq2_s_group, half)

/* ---- iq3: 32-bit grid entries ---------------------------------------------------------------- */

/* (d (0.5 + k)) 0.5 = d (2k + 1) / 4; a as iq2_xxs's */
static inline int32x4_t iq3_xxs_group(const uint8_t *b, unsigned g, const int8_t *xs, int32x4_t acc)
{
    const uint8_t *qs = b + 2 + 8 * g;
    const uint32_t a = tm__rd32(b + 66 + 4 * g);
    const unsigned lo[4] = { qs[0], qs[1], qs[2], qs[3] }, hi[4] = { qs[4], qs[5], qs[6], qs[7] };
    const int k = odd(a >> 28);
    return signed_group(grid32(tm__iq3xxs_grid, lo), grid32(tm__iq3xxs_grid, hi), ksigns4(a), xs,
                        k, k, acc);
}

/* d (2k + 1); index j's ninth bit is bit j of qh */
static inline int32x4_t iq3_s_group(const uint8_t *b, unsigned g, const int8_t *xs, int32x4_t acc)
{
    const uint8_t *qs = b + 2 + 8 * g;
    const unsigned qh = b[66 + g];
    unsigned i[8];
#pragma GCC unroll 8
    for (unsigned j = 0; j < 8; j++)
        i[j] = qs[j] | (qh >> j & 1u) << 8;
    const int k = odd((unsigned)b[106 + g / 2] >> 4 * (g % 2) & 15u);
    return signed_group(grid32(tm__iq3s_grid, i), grid32(tm__iq3s_grid, i + 4),
                        tm__rd32(b + 74 + 4 * g), xs, k, k, acc);
}

DOT_GRID(iq3_xxs, 0.25, iq3_xxs_group, half)
DOT_GRID(iq3_s, 1.0, iq3_s_group, half)

/* ---- iq1: d (2k + 1) (g + delta) = d (2k + 1) (8g + 8 delta) / 8 -------------------------- */

/* +-1 in every byte of a sub-group: the delta times 8, -1 when its bit is set */
static inline int8x8_t delta8(unsigned set) { return vdup_n_s8(set ? -1 : 1); }

/* an iq1 group: grid entries of sub-groups 0..3 (signed bytes -1..1), their deltas */
static inline int32x4_t iq1_group(const unsigned idx[4], const int8x8_t d8[4], const int8_t *xs,
                                  int k_lo, int k_hi, int32x4_t acc)
{
    int8x16_t w[2];
#pragma GCC unroll 8
    for (int h = 0; h < 2; h++) {
        const int8x16_t gv = vreinterpretq_s8_u8(grid64(tm__iq1s_grid, idx[2 * h], idx[2 * h + 1]));
        w[h] = vaddq_s8(vshlq_n_s8(gv, 3), vcombine_s8(d8[2 * h], d8[2 * h + 1]));
    }
    return group_dot(w, xs, k_lo, k_hi, acc);
}

/* a u16 per group: three index bits per sub-group, the scale, one delta bit */
static inline int32x4_t iq1_s_group(const uint8_t *b, unsigned g, const int8_t *xs, int32x4_t acc)
{
    const unsigned w = tm__rd16(b + 34 + 2 * g);
    const uint8_t *qs = b + 2 + 4 * g;
    unsigned idx[4];
#pragma GCC unroll 8
    for (unsigned l = 0; l < 4; l++)
        idx[l] = qs[l] | (w >> 3 * l & 7u) << 8;
    const int8x8_t d = delta8(w & 0x8000u);
    const int8x8_t d8[4] = { d, d, d, d };
    const int k = odd(w >> 12 & 7u);
    return iq1_group(idx, d8, xs, k, k, acc);
}

/* the block's half d from the top nibbles of its four scale words */
static inline float iq1_m_d(const uint8_t *b)
{
    const unsigned sw[4] = { tm__rd16(b + 48), tm__rd16(b + 50), tm__rd16(b + 52),
                             tm__rd16(b + 54) };
    return half_bits(tm__iq1m_scale_bits(sw));
}

/* a nibble per sub-group: three index bits and its delta bit; two 3-bit scales a group */
static inline int32x4_t iq1_m_group(const uint8_t *b, unsigned g, const int8_t *xs, int32x4_t acc)
{
    const unsigned s = tm__rd16(b + 48 + 2 * (g / 2)), c = 6 * (g % 2);
    unsigned idx[4];
    int8x8_t d8[4];
#pragma GCC unroll 8
    for (unsigned l = 0; l < 4; l++) {
        const unsigned nib = (unsigned)b[32 + 2 * g + l / 2] >> 4 * (l % 2);
        idx[l] = b[4 * g + l] | (nib & 7u) << 8;
        d8[l] = delta8(nib & 8u);
    }
    return iq1_group(idx, d8, xs, odd(s >> c & 7u), odd(s >> (c + 3) & 7u), acc);
}

DOT_GRID(iq1_s, 0.125, iq1_s_group, half)
DOT_GRID(iq1_m, 0.125, iq1_m_group, iq1_m_d)
#undef DOT_GRID

const tm__kernels tm__kernels_matvec_neon_iq = {
    .mv_q8 = {
        [TM_TYPE_IQ2_XXS] = dot_iq2_xxs_q8_neon,
        [TM_TYPE_IQ2_XS] = dot_iq2_xs_q8_neon,
        [TM_TYPE_IQ2_S] = dot_iq2_s_q8_neon,
        [TM_TYPE_IQ3_XXS] = dot_iq3_xxs_q8_neon,
        [TM_TYPE_IQ3_S] = dot_iq3_s_q8_neon,
        [TM_TYPE_IQ1_S] = dot_iq1_s_q8_neon,
        [TM_TYPE_IQ1_M] = dot_iq1_m_q8_neon,
    },
};
