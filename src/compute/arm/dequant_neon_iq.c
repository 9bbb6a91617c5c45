/* NEON kernels for the grid i-quants: iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m
 * (layouts and arithmetic: FORMATS-more.md). Built with -ffp-contract=off like every kernel file.
 *
 * As the AVX2 kernels (src/compute/x86/dequant_avx2_iq.c): scales, indices and sign bytes unpacked with
 * scalar code as the scalar kernel does; each 8-element sub-group's grid bytes loaded with one
 * 8-byte load, widened, converted, and put through the scalar kernel's float32 operations lane by
 * lane, in its order, four lanes at a time:
 *   iq2, iq3: (db * (float)mag[j]) * (sign bit j ? -1.0f : 1.0f), the +-1.0f a table row
 *   iq1:      dl * ((float)gv[j] + delta)
 *
 * The loops over the eight groups of a block and the four sub-groups of a group are unrolled
 * (#pragma GCC unroll), so every group's shifts and offsets are constants: measured 10-15% faster
 * on x86 for iq3_s and iq1_m (AVX2 and AVX-512), the same within noise for the others.
 *
 * Only the table is exported; every function is static. */
#include "../blocks.h"
#include "../kernels.h"
#include "../dequant_iq.h"

#include <arm_neon.h>
#include <string.h>

/* IEEE half -> float with the hardware conversion (exact, NaN payloads kept). */
static float half_bits(uint16_t h)
{
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

static float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return half_bits(h);
}

static const uint32_t sign_pm[256][8] = { TM__SIGN_PM_ROWS };

/* dst[j] = (db * mag[j]) * (bit j of the sign byte s ? -1.0f : 1.0f) for the eight unsigned
 * bytes m. */
static void store_signed(float *dst, float32x4_t db, uint8x8_t m, unsigned s)
{
    const uint16x8_t m16 = vmovl_u8(m);
    const float32x4_t lo = vmulq_f32(db, vcvtq_f32_u32(vmovl_u16(vget_low_u16(m16))));
    const float32x4_t hi = vmulq_f32(db, vcvtq_f32_u32(vmovl_u16(vget_high_u16(m16))));
    vst1q_f32(dst, vmulq_f32(lo, vreinterpretq_f32_u32(vld1q_u32(sign_pm[s]))));
    vst1q_f32(dst + 4, vmulq_f32(hi, vreinterpretq_f32_u32(vld1q_u32(sign_pm[s] + 4))));
}

/* The eight bytes of a 64-bit grid entry, and of two 32-bit ones. */
static uint8x8_t grid_u8x8(const uint64_t *entry) { return vld1_u8((const uint8_t *)(const void *)entry); }

static uint8x8_t grid_u8x4x2(const uint32_t *grid, unsigned i1, unsigned i2)
{
    return vreinterpret_u8_u32(vset_lane_u32(grid[i2], vdup_n_u32(grid[i1]), 1));
}

/* ---- iq2, iq3: the shared text ------------------------------------------------------------ */

#define IQ_VEC float32x4_t
#define IQ_SPLAT(f) vdupq_n_f32(f)
#define IQ_NAME(type) dequant_##type##_neon
#include "../dequant_iq_grid.h"

/* ---- iq1 ------------------------------------------------------------------------------------- */

/* dst[j] = dl * ((float)gv[j] + delta), gv the eight signed bytes of iq1s_grid[idx]; the delta
 * is -0.125f when neg is set, else +0.125f. */
static void store_iq1(float *dst, float32x4_t dl, unsigned idx, unsigned neg)
{
    const int16x8_t gv = vmovl_s8(vld1_s8((const int8_t *)(const void *)&tm__iq1s_grid[idx]));
    const float32x4_t delta = vdupq_n_f32(neg ? -0.125f : 0.125f);
    vst1q_f32(dst, vmulq_f32(dl, vaddq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(gv))), delta)));
    vst1q_f32(dst + 4, vmulq_f32(dl, vaddq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(gv))), delta)));
}

static void dequant_iq1_s_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_s)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const unsigned w = tm__rd16(b + 34 + 2 * g);
            const float32x4_t dl = vdupq_n_f32(tm__iq_odd_scale(d, w >> 12 & 7));
            for (int l = 0; l < 4; l++)
                store_iq1(dst + 8 * l, dl, b[2 + 4 * g + l] | (w >> 3 * l & 7u) << 8, w & 0x8000u);
        }
    }
}

static void dequant_iq1_m_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_m)) {
        const unsigned w[4] = { tm__rd16(b + 48), tm__rd16(b + 50), tm__rd16(b + 52), tm__rd16(b + 54) };
        const float d = half_bits(tm__iq1m_scale_bits(w));
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const unsigned sw = w[g / 2], c = 6u * (unsigned)(g % 2);
            const float32x4_t dl[2] = { vdupq_n_f32(tm__iq_odd_scale(d, sw >> c & 7)),
                                        vdupq_n_f32(tm__iq_odd_scale(d, sw >> (c + 3) & 7)) };
            for (int l = 0; l < 4; l++) {
                const unsigned q = (unsigned)b[32 + 2 * g + l / 2] >> 4 * (l % 2);
                store_iq1(dst + 8 * l, dl[l / 2], b[4 * g + l] | (q & 7u) << 8, q & 8u);
            }
        }
    }
}

const tm__kernels tm__kernels_dequant_neon_iq = {
    .dequant = {
        [TM_TYPE_IQ2_XXS] = dequant_iq2_xxs_neon,
        [TM_TYPE_IQ2_XS] = dequant_iq2_xs_neon,
        [TM_TYPE_IQ2_S] = dequant_iq2_s_neon,
        [TM_TYPE_IQ3_XXS] = dequant_iq3_xxs_neon,
        [TM_TYPE_IQ3_S] = dequant_iq3_s_neon,
        [TM_TYPE_IQ1_S] = dequant_iq1_s_neon,
        [TM_TYPE_IQ1_M] = dequant_iq1_m_neon,
    },
};
