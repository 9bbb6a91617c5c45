/* NEON row-dot kernels for tm_matvec (aarch64; no dot-product extension assumed).
 *
 * The x86 files' schemes on 4 lanes: TM_MATVEC_F32 widens the codes to float in registers,
 * float partial sums for at most 64 elements, then double; TM_MATVEC_Q8 multiplies 8-bit codes
 * by 8-bit x with vmull_s8 and pairwise-accumulates into 32 bits. Types missing here run the
 * scalar kernels (or decode + dot). Only the table is exported; every function is static. */
#include "../blocks.h"
#include "../kernels.h"
#include "neon_common.h"

#include <arm_neon.h>
#include <string.h>

typedef struct dacc {
    float64x2_t lo, hi;
} dacc;

static void acc_add(dacc *a, float32x4_t f)
{
    a->lo = vaddq_f64(a->lo, vcvt_f64_f32(vget_low_f32(f)));
    a->hi = vaddq_f64(a->hi, vcvt_high_f64_f32(f));
}

static float acc_sum(const dacc *a) { return (float)vaddvq_f64(vaddq_f64(a->lo, a->hi)); }

/* ---- TM_MATVEC_F32 ------------------------------------------------------------------------- */

static float32x4_t f32x4(const uint8_t *p) { return vld1q_f32((const float *)(const void *)p); }
static float32x4_t f16x4(const uint8_t *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p)));
}
static float32x4_t bf16x4(const uint8_t *p)
{
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)(const void *)p), 16));
}

/* four elements at a time, each product formed and summed in double (exact products: on 4-lane
 * vectors this costs little, and this dot is also what every decode + dot type ends in, where
 * golden rows whose terms sum to 300 times max|y| broke 1e-6 with float products); the last
 * n % 4 through a zero-padded copy, so nothing past the row is read */
static void fma_f64(dacc *a, float32x4_t w, float32x4_t x)
{
    a->lo = vfmaq_f64(a->lo, vcvt_f64_f32(vget_low_f32(w)), vcvt_f64_f32(vget_low_f32(x)));
    a->hi = vfmaq_f64(a->hi, vcvt_high_f64_f32(w), vcvt_high_f64_f32(x));
}

#define DOT_PLAIN(name, widen, size)                                                          \
    static float name(const void *w, const float *x, size_t n)                               \
    {                                                                                         \
        const uint8_t *p = w;                                                                 \
        dacc a = { vdupq_n_f64(0), vdupq_n_f64(0) };                                          \
        size_t i = 0;                                                                         \
        for (; i + 4 <= n; i += 4)                                                            \
            fma_f64(&a, widen(p + (size) * i), vld1q_f32(x + i));                             \
        if (i < n) {                                                                          \
            uint8_t wt[4 * (size)] = { 0 };                                                   \
            float xt[4] = { 0 };                                                              \
            memcpy(wt, p + (size) * i, (size) * (n - i));                                     \
            memcpy(xt, x + i, sizeof(float) * (n - i));                                       \
            fma_f64(&a, widen(wt), vld1q_f32(xt));                                            \
        }                                                                                     \
        return acc_sum(&a);                                                                   \
    }
DOT_PLAIN(dot_f32_neon, f32x4, 4)
DOT_PLAIN(dot_f16_neon, f16x4, 2)
DOT_PLAIN(dot_bf16_neon, bf16x4, 2)
#undef DOT_PLAIN

/* sum over 16 signed codes times x[0..15], as four lanes */
static float32x4_t dot16(int8x16_t q, const float *x, float32x4_t acc)
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    acc = vfmaq_f32(acc, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vld1q_f32(x));
    acc = vfmaq_f32(acc, vcvtq_f32_s32(vmovl_high_s16(lo)), vld1q_f32(x + 4));
    acc = vfmaq_f32(acc, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vld1q_f32(x + 8));
    return vfmaq_f32(acc, vcvtq_f32_s32(vmovl_high_s16(hi)), vld1q_f32(x + 12));
}

/* q8_0: d sum(q x) per 34-byte block, into double per block. */
static float dot_q8_0_neon(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    dacc a = { vdupq_n_f64(0), vdupq_n_f64(0) };
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q8_0), x += 32) {
        float32x4_t v = dot16(vld1q_s8((const int8_t *)(const void *)(b + 2)), x, vdupq_n_f32(0));
        v = dot16(vld1q_s8((const int8_t *)(const void *)(b + 18)), x + 16, v);
        acc_add(&a, vmulq_n_f32(v, half(b)));
    }
    return acc_sum(&a);
}

/* ---- TM_MATVEC_Q8 -------------------------------------------------------------------------- */

static float dot_q8_0_q8_neon(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    float32x4_t acc = vdupq_n_f32(0);
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q8_0), x++) {
        int32x4_t s = dot_s8(vld1q_s8((const int8_t *)(const void *)(b + 2)), vld1q_s8(x->qs), vdupq_n_s32(0));
        s = dot_s8(vld1q_s8((const int8_t *)(const void *)(b + 18)), vld1q_s8(x->qs + 16), s);
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), half(b) * x->d);
    }
    return vaddvq_f32(acc);
}

/* q4_K: per 32-element group, the nibbles (as signed bytes 0..15) times x's codes, times sc. */
static float dot_q4_K_q8_neon(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const uint8x16_t m4 = vdupq_n_u8(15);
    float sum = 0.0f;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x++) {
        int32x4_t isum = vdupq_n_s32(0);
        int32_t msum = 0;
        for (int j = 0; j < 4; j++) {
            const uint8x16_t q0 = vld1q_u8(b + 16 + 32 * j), q1 = vld1q_u8(b + 32 + 32 * j);
            for (int h = 0; h < 2; h++) {
                const int g = 2 * j + h;
                unsigned sc, m;
                tm__k4_scale_min(b + 4, g, &sc, &m);
                const int8x16_t c0 = vreinterpretq_s8_u8(h ? vshrq_n_u8(q0, 4) : vandq_u8(q0, m4));
                const int8x16_t c1 = vreinterpretq_s8_u8(h ? vshrq_n_u8(q1, 4) : vandq_u8(q1, m4));
                int32x4_t s = dot_s8(c0, vld1q_s8(x->qs + 32 * g), vdupq_n_s32(0));
                s = dot_s8(c1, vld1q_s8(x->qs + 32 * g + 16), s);
                isum = vmlaq_n_s32(isum, s, (int32_t)sc);
                msum += (int32_t)m * (x->bsums[2 * g] + x->bsums[2 * g + 1]);
            }
        }
        sum += half(b) * x->d * (float)vaddvq_s32(isum) - half(b + 2) * x->d * (float)msum;
    }
    return sum;
}

const tm__kernels tm__kernels_matvec_neon = {
    .mv_f32 = {
        [TM_TYPE_F32] = dot_f32_neon,
        [TM_TYPE_F16] = dot_f16_neon,
        [TM_TYPE_BF16] = dot_bf16_neon,
        [TM_TYPE_Q8_0] = dot_q8_0_neon,
    },
    .mv_q8 = {
        [TM_TYPE_Q8_0] = dot_q8_0_q8_neon,
        [TM_TYPE_Q4_K] = dot_q4_K_q8_neon,
    },
};
