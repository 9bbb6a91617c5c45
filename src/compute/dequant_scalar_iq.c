/* Reference kernels for the grid i-quants: iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m.
 *
 * Each 256-element super-block is eight groups of 32, each four sub-groups of 8. A sub-group's
 * eight magnitudes are the bytes of one grid entry (two 4-byte entries for the iq3 types), its
 * signs one byte (set bit = negative). Each kernel performs the float32 operations of ggml's
 * dequantize_row_<type> in the same order (../shared/formats/FORMATS-more.md): the scale is
 * built first, then (scale * magnitude) * (+-1.0f), the sign applied by a multiply as ggml does
 * (a float negation would differ only for a NaN scale). Built with -ffp-contract=off. */
#include "blocks.h"
#include "kernels.h"
#include "quant_tables.h"

/* +1.0f, or -1.0f when bit is 1, built from its bits: as a value the compiler cannot see, the
 * multiply below stays a multiply at every optimisation level (gcc -O2 folds "x * (c ? -1.0f :
 * 1.0f)" into a negation, -O1 does not, and the two differ for a NaN scale: the multiply keeps
 * the NaN's sign, a negation flips it). The SIMD kernels multiply too. */
static float plus_minus_one(unsigned bit) { return tm__f32_from_bits(0x3f800000u | (uint32_t)bit << 31); }

/* Eight elements: (db * byte j of grid) * (bit j of signs ? -1 : 1). */
static void signed8(float *dst, float db, uint64_t grid, unsigned signs)
{
    for (int j = 0; j < 8; j++)
        dst[j] = (db * (float)(grid >> 8 * j & 0xff)) * plus_minus_one(signs >> j & 1);
}

/* The 4-bit-scale of iq2_xxs / iq2_xs / iq2_s: (d * (0.5 + k)) * 0.25. */
static float iq2_scale(float d, unsigned k) { return (d * (0.5f + (float)k)) * 0.25f; }

/* iq2_xxs, 66 bytes: d @0, then eight 8-byte group records: bytes 0..3 the grid indices of the
 * four sub-groups, bytes 4..7 a u32 a holding four 7-bit sign indices (into ksigns) and the
 * group's 4-bit scale in bits 28..31. */
static void dequant_iq2_xxs_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_xxs)) {
        const float d = tm__rdh(b);
        for (int g = 0; g < 8; g++) {
            const uint8_t *rec = b + 2 + 8 * g;
            const uint32_t a = tm__rd32(rec + 4);
            const float db = iq2_scale(d, a >> 28);
            for (int l = 0; l < 4; l++, dst += 8)
                signed8(dst, db, tm__iq2xxs_grid[rec[l]], tm__ksigns_iq2xs[a >> 7 * l & 127]);
        }
    }
}

/* iq2_xs, 74 bytes: d @0, qs 32 x u16 @2 (9-bit grid index, 7-bit sign index), scales[8] @66
 * (two 4-bit scales a group: sub-groups 0, 1 the low nibble, 2, 3 the high). */
static void dequant_iq2_xs_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_xs)) {
        const float d = tm__rdh(b);
        for (int g = 0; g < 8; g++) {
            const float db[2] = { iq2_scale(d, b[66 + g] & 15u), iq2_scale(d, b[66 + g] >> 4u) };
            for (int l = 0; l < 4; l++, dst += 8) {
                const unsigned v = tm__rd16(b + 2 + 8 * g + 2 * l);
                signed8(dst, db[l / 2], tm__iq2xs_grid[v & 511], tm__ksigns_iq2xs[v >> 9]);
            }
        }
    }
}

/* iq2_s, 82 bytes: d @0, qs[32] @2 (low 8 index bits), signs[32] @34 (plain sign bytes),
 * qh[8] @66 (2 high index bits per sub-group), scales[8] @74 (as iq2_xs). */
static void dequant_iq2_s_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_s)) {
        const float d = tm__rdh(b);
        for (int g = 0; g < 8; g++) {
            const float db[2] = { iq2_scale(d, b[74 + g] & 15u), iq2_scale(d, b[74 + g] >> 4u) };
            for (int l = 0; l < 4; l++, dst += 8) {
                const unsigned idx = b[2 + 4 * g + l] | ((unsigned)b[66 + g] >> 2 * l & 3) << 8;
                signed8(dst, db[l / 2], tm__iq2s_grid[idx], b[34 + 4 * g + l]);
            }
        }
    }
}

/* Two 4-magnitude iq3 grid entries as one 8-byte entry: first's bytes, then second's. */
static uint64_t pair(uint32_t first, uint32_t second) { return (uint64_t)second << 32 | first; }

/* iq3_xxs, 98 bytes: d @0, qs[64] @2 (two 8-bit grid indices a sub-group), then eight u32 @66
 * laid out as iq2_xxs's a: four 7-bit sign indices and the scale in bits 28..31; the scale is
 * (d * (0.5 + k)) * 0.5. */
static void dequant_iq3_xxs_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq3_xxs)) {
        const float d = tm__rdh(b);
        for (int g = 0; g < 8; g++) {
            const uint32_t a = tm__rd32(b + 66 + 4 * g);
            const float db = (d * (0.5f + (float)(a >> 28))) * 0.5f;
            const uint8_t *q = b + 2 + 8 * g;
            for (int l = 0; l < 4; l++, dst += 8)
                signed8(dst, db, pair(tm__iq3xxs_grid[q[2 * l]], tm__iq3xxs_grid[q[2 * l + 1]]),
                        tm__ksigns_iq2xs[a >> 7 * l & 127]);
        }
    }
}

/* iq3_s, 110 bytes: d @0, qs[64] @2 (low 8 bits of two indices a sub-group), qh[8] @66 (ninth
 * bits: bit 2l of qh[g] for the first index of sub-group l, 2l + 1 for the second), signs[32]
 * @74 (plain), scales[4] @106 (a nibble a group, even groups low); scale d * (1 + 2k). */
static void dequant_iq3_s_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq3_s)) {
        const float d = tm__rdh(b);
        for (unsigned g = 0; g < 8; g++) {
            const unsigned k = (unsigned)b[106 + g / 2] >> 4 * (g % 2) & 15;
            const float db = d * (float)(1 + 2 * k);
            const uint8_t *q = b + 2 + 8 * g;
            const unsigned qh = b[66 + g];
            for (unsigned l = 0; l < 4; l++, dst += 8) {
                const unsigned i1 = q[2 * l] | (qh >> 2 * l & 1) << 8;
                const unsigned i2 = q[2 * l + 1] | (qh >> (2 * l + 1) & 1) << 8;
                signed8(dst, db, pair(tm__iq3s_grid[i1], tm__iq3s_grid[i2]), b[74 + 4 * g + l]);
            }
        }
    }
}

/* Eight iq1 elements: dl * (g_j + delta), the sum first (never zero), then one multiply; g_j
 * is byte j of the grid entry read as int8 (-1, 0 or +1). */
static void iq1_8(float *dst, float dl, uint64_t grid, float delta)
{
    for (int j = 0; j < 8; j++)
        dst[j] = dl * ((float)(int8_t)(uint8_t)(grid >> 8 * j) + delta);
}

/* The iq1 delta: -0.125 when its bit is set. */
static float iq1_delta(unsigned set) { return set ? -0.125f : 0.125f; }

/* iq1_s, 50 bytes: d @0, qs[32] @2 (low 8 bits of each 11-bit index), qh 8 x u16 @34: bits 3l..
 * 3l+2 the index's high bits for sub-group l, 12..14 the scale k (dl = d * (2k + 1)), 15 the
 * delta's sign. */
static void dequant_iq1_s_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_s)) {
        const float d = tm__rdh(b);
        for (int g = 0; g < 8; g++) {
            const unsigned w = tm__rd16(b + 34 + 2 * g);
            const float dl = d * (float)(2 * (w >> 12 & 7) + 1);
            const float delta = iq1_delta(w & 0x8000);
            for (int l = 0; l < 4; l++, dst += 8)
                iq1_8(dst, dl, tm__iq1s_grid[b[2 + 4 * g + l] | (w >> 3 * l & 7) << 8], delta);
        }
    }
}

/* iq1_m, 56 bytes: qs[32] @0, qh[16] @32 (two bytes a group: per sub-group 3 high index bits
 * and a delta bit in one nibble), scales 4 x u16 @48: four 3-bit sub-scales in bits 0..11 of
 * each word (group 2i's two, then group 2i+1's), and in the top nibbles the bits of the block's
 * half scale d (word i gives bits 4i..4i+3). */
static void dequant_iq1_m_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_m)) {
        unsigned w[4];
        for (int k = 0; k < 4; k++)
            w[k] = tm__rd16(b + 48 + 2 * k);
        const float d = tm__half_to_float(
            (uint16_t)(w[0] >> 12 | (w[1] >> 8 & 0x00f0) | (w[2] >> 4 & 0x0f00) | (w[3] & 0xf000)));
        for (unsigned g = 0; g < 8; g++) {
            const unsigned sw = w[g / 2], c = 6 * (g % 2);
            const float dl[2] = { d * (float)(2 * (sw >> c & 7) + 1),
                                  d * (float)(2 * (sw >> (c + 3) & 7) + 1) };
            for (unsigned l = 0; l < 4; l++, dst += 8) {
                const unsigned nib = (unsigned)b[32 + 2 * g + l / 2] >> 4 * (l % 2);
                const unsigned idx = b[4 * g + l] | (nib & 7) << 8;
                iq1_8(dst, dl[l / 2], tm__iq1s_grid[idx], iq1_delta(nib & 8));
            }
        }
    }
}

const tm__kernels tm__kernels_dequant_scalar_iq = {
    .dequant = {
        [TM_TYPE_IQ2_XXS] = dequant_iq2_xxs_scalar,
        [TM_TYPE_IQ2_XS] = dequant_iq2_xs_scalar,
        [TM_TYPE_IQ2_S] = dequant_iq2_s_scalar,
        [TM_TYPE_IQ3_XXS] = dequant_iq3_xxs_scalar,
        [TM_TYPE_IQ3_S] = dequant_iq3_s_scalar,
        [TM_TYPE_IQ1_S] = dequant_iq1_s_scalar,
        [TM_TYPE_IQ1_M] = dequant_iq1_m_scalar,
    },
};
