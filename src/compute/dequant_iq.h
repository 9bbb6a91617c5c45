/* Pieces the SIMD kernels of the grid i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s,
 * iq1_m) share: the scalar unpacking of their scales and sign bytes, exactly as FORMATS-more.md
 * gives it, and the initialiser of a table of signs as +-1.0f. static inline, as in blocks.h:
 * every kernel file compiles its own copy with its own flags. */
#ifndef TM_DEQUANT_IQ_H
#define TM_DEQUANT_IQ_H

#include "quant_tables.h"

#include <stdint.h>

/* (d * (0.5f + k)) * f: the scale of an iq2_xxs, iq2_xs, iq2_s (f = 0.25f) or iq3_xxs
 * (f = 0.5f) group or half-group with 4-bit scale k; the add is exact. */
static inline float tm__iq_grid_scale(float d, unsigned k, float f)
{
    return (d * (0.5f + (float)k)) * f;
}

/* d * (float)(2k + 1): the scale of an iq3_s group, an iq1_s group or an iq1_m half-group. */
static inline float tm__iq_odd_scale(float d, unsigned k) { return d * (float)(2 * k + 1); }

/* The sign byte of sub-group l (0..3) from the four 7-bit sign indices in bits 0..27 of a
 * group's u32 (iq2_xxs, iq3_xxs). */
static inline unsigned tm__iq_ksign(uint32_t a, int l)
{
    return tm__ksigns_iq2xs[a >> 7 * l & 127];
}

/* The bit pattern of an iq1_m block's half scale, from the top nibbles of its four u16
 * scale words. */
static inline uint16_t tm__iq1m_scale_bits(const unsigned w[4])
{
    return (uint16_t)(w[0] >> 12 | (w[1] >> 8 & 0x00f0) | (w[2] >> 4 & 0x0f00) | (w[3] & 0xf000));
}

/* The rows of a 256 x 8 table of float bit patterns: row s, lane j is -1.0f when bit j of the
 * sign byte s is set, else +1.0f, so one multiply by a row applies a sign byte the way the
 * scalar kernel does, "* (bit ? -1.0f : 1.0f)". Built by the preprocessor:
 * `static const uint32_t t[256][8] = { TM__SIGN_PM_ROWS };`. */
#define TM__PM_BIT(s, j) (0x3f800000u | ((unsigned)(s) >> (j) & 1u) << 31)
#define TM__PM_ROW(s) { TM__PM_BIT(s, 0), TM__PM_BIT(s, 1), TM__PM_BIT(s, 2), TM__PM_BIT(s, 3), \
                        TM__PM_BIT(s, 4), TM__PM_BIT(s, 5), TM__PM_BIT(s, 6), TM__PM_BIT(s, 7) }
#define TM__PM_4(s) TM__PM_ROW(s), TM__PM_ROW((s) + 1), TM__PM_ROW((s) + 2), TM__PM_ROW((s) + 3)
#define TM__PM_16(s) TM__PM_4(s), TM__PM_4((s) + 4), TM__PM_4((s) + 8), TM__PM_4((s) + 12)
#define TM__PM_64(s) TM__PM_16(s), TM__PM_16((s) + 16), TM__PM_16((s) + 32), TM__PM_16((s) + 48)
#define TM__SIGN_PM_ROWS TM__PM_64(0), TM__PM_64(64), TM__PM_64(128), TM__PM_64(192)

#endif /* TM_DEQUANT_IQ_H */
