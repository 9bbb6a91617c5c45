/* NEON kernels (AArch64, where NEON is always present).
 *
 * The same float32 operations as the scalar kernels, lane by lane, in the same order: the file
 * is built with -ffp-contract=off, so vmulq + vsubq are never fused into vfms. Loads are
 * unaligned byte loads. Types not in the table fall back to the scalar kernel.
 * Only the table is exported; every function is static. */
#include "../blocks.h"
#include "../kernels.h"
#include "neon_common.h"

#include <arm_neon.h>
#include <string.h>

/* 16 signed bytes -> 16 floats times d, into dst[0..15] */
static void s8x16_mul(float *dst, int8x16_t q, float32x4_t d)
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
    vst1q_f32(dst, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
    vst1q_f32(dst + 4, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), d));
    vst1q_f32(dst + 8, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
    vst1q_f32(dst + 12, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), d));
}

/* (float)q * d + m, and d * (float)q - m, for 16 unsigned bytes */
static void u8x16_mul_add(float *dst, uint8x16_t q, float32x4_t d, float32x4_t m, int subtract)
{
    const uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_u8(vget_high_u8(q));
    const float32x4_t v[4] = {
        vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))), vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo))),
        vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))), vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi))),
    };
    for (int k = 0; k < 4; k++) {
        const float32x4_t p = vmulq_f32(v[k], d);
        vst1q_f32(dst + 4 * k, subtract ? vsubq_f32(p, m) : vaddq_f32(p, m));
    }
}

/* ---- plain types --------------------------------------------------------------------------- */

/* f16 and bf16: 4 halves -> 4 floats per step, the tail one at a time through the same
 * conversion (no byte past the input is read). */
static float32x4_t f16x4(uint16x4_t h) { return vcvt_f32_f16(vreinterpret_f16_u16(h)); }
static float32x4_t bf16x4(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }

#define DEQUANT_HALVES(name, widen)                                                              \
    static void name(const void *src, float *dst, size_t n)                                     \
    {                                                                                            \
        const uint8_t *p = src;                                                                  \
        size_t i = 0;                                                                            \
        for (; i + 4 <= n; i += 4)                                                               \
            vst1q_f32(dst + i, widen(vreinterpret_u16_u8(vld1_u8(p + 2 * i))));                  \
        for (; i < n; i++)                                                                       \
            dst[i] = vgetq_lane_f32(widen(vdup_n_u16((uint16_t)(p[2 * i] | p[2 * i + 1] << 8))), 0); \
    }
DEQUANT_HALVES(dequant_f16_neon, f16x4)
DEQUANT_HALVES(dequant_bf16_neon, bf16x4)
#undef DEQUANT_HALVES

/* ---- 32-element blocks --------------------------------------------------------------------- */

static void dequant_q4_0_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const int8x16_t k8 = vdupq_n_s8(8);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_0), dst += 32) {
        const float32x4_t d = vdupq_n_f32(half(b));
        const uint8x16_t x = vld1q_u8(b + 2);
        s8x16_mul(dst, vsubq_s8(vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(15))), k8), d);
        s8x16_mul(dst + 16, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(x, 4)), k8), d);
    }
}

static void dequant_q4_1_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_1), dst += 32) {
        const float32x4_t d = vdupq_n_f32(half(b)), m = vdupq_n_f32(half(b + 2));
        const uint8x16_t x = vld1q_u8(b + 4);
        u8x16_mul_add(dst, vandq_u8(x, vdupq_n_u8(15)), d, m, 0);
        u8x16_mul_add(dst + 16, vshrq_n_u8(x, 4), d, m, 0);
    }
}

/* The fifth bits of q5_0/q5_1 as 0x10 bytes: lane j of the result holds bit j of the 16 bits. */
static uint8x16_t q5_high(uint32_t bits16)
{
    static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t bytes = vcombine_u8(vdup_n_u8((uint8_t)bits16), vdup_n_u8((uint8_t)(bits16 >> 8)));
    return vandq_u8(vtstq_u8(bytes, vld1q_u8(bit)), vdupq_n_u8(16));
}

static void dequant_q5_0_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const int8x16_t k16 = vdupq_n_s8(16);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_0), dst += 32) {
        const float32x4_t d = vdupq_n_f32(half(b));
        const uint32_t qh = tm__rd32(b + 2);
        const uint8x16_t x = vld1q_u8(b + 6);
        const uint8x16_t lo = vorrq_u8(vandq_u8(x, vdupq_n_u8(15)), q5_high(qh & 0xffff));
        const uint8x16_t hi = vorrq_u8(vshrq_n_u8(x, 4), q5_high(qh >> 16));
        s8x16_mul(dst, vsubq_s8(vreinterpretq_s8_u8(lo), k16), d);
        s8x16_mul(dst + 16, vsubq_s8(vreinterpretq_s8_u8(hi), k16), d);
    }
}

static void dequant_q5_1_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_1), dst += 32) {
        const float32x4_t d = vdupq_n_f32(half(b)), m = vdupq_n_f32(half(b + 2));
        const uint32_t qh = tm__rd32(b + 4);
        const uint8x16_t x = vld1q_u8(b + 8);
        u8x16_mul_add(dst, vorrq_u8(vandq_u8(x, vdupq_n_u8(15)), q5_high(qh & 0xffff)), d, m, 0);
        u8x16_mul_add(dst + 16, vorrq_u8(vshrq_n_u8(x, 4), q5_high(qh >> 16)), d, m, 0);
    }
}

static void dequant_q8_0_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q8_0), dst += 32) {
        const float32x4_t d = vdupq_n_f32(half(b));
        s8x16_mul(dst, vreinterpretq_s8_u8(vld1q_u8(b + 2)), d);
        s8x16_mul(dst + 16, vreinterpretq_s8_u8(vld1q_u8(b + 18)), d);
    }
}

/* ---- 256-element super-blocks -------------------------------------------------------------- */

/* q4_K: (d * sc) * q - (dmin * m). */
static void dequant_q4_K_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_K)) {
        const float d = half(b), dmin = half(b + 2);
        const uint8_t *qs = b + 16;
        for (int p = 0; p < 4; p++, qs += 32, dst += 64) {
            unsigned sc, m;
            tm__k4_scale_min(b + 4, 2 * p, &sc, &m);
            const float32x4_t d1 = vdupq_n_f32(d * (float)sc), m1 = vdupq_n_f32(dmin * (float)m);
            tm__k4_scale_min(b + 4, 2 * p + 1, &sc, &m);
            const float32x4_t d2 = vdupq_n_f32(d * (float)sc), m2 = vdupq_n_f32(dmin * (float)m);
            const uint8x16_t x0 = vld1q_u8(qs), x1 = vld1q_u8(qs + 16);
            u8x16_mul_add(dst, vandq_u8(x0, vdupq_n_u8(15)), d1, m1, 1);
            u8x16_mul_add(dst + 16, vandq_u8(x1, vdupq_n_u8(15)), d1, m1, 1);
            u8x16_mul_add(dst + 32, vshrq_n_u8(x0, 4), d2, m2, 1);
            u8x16_mul_add(dst + 48, vshrq_n_u8(x1, 4), d2, m2, 1);
        }
    }
}

/* q5_K: as q4_K, plus 16 when bit 2p (low-nibble group) or 2p+1 (high) of qh[l] is set. */
static void dequant_q5_K_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const uint8x16_t k16 = vdupq_n_u8(16);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_K)) {
        const float d = half(b), dmin = half(b + 2);
        const uint8_t *qh = b + 16, *qs = b + 48;
        for (int p = 0; p < 4; p++, qs += 32, dst += 64) {
            unsigned sc, m;
            tm__k4_scale_min(b + 4, 2 * p, &sc, &m);
            const float32x4_t d1 = vdupq_n_f32(d * (float)sc), m1 = vdupq_n_f32(dmin * (float)m);
            tm__k4_scale_min(b + 4, 2 * p + 1, &sc, &m);
            const float32x4_t d2 = vdupq_n_f32(d * (float)sc), m2 = vdupq_n_f32(dmin * (float)m);
            const uint8x16_t b1 = vdupq_n_u8((uint8_t)(1u << (2 * p))), b2 = vdupq_n_u8((uint8_t)(2u << (2 * p)));
            for (int l = 0; l < 32; l += 16) {
                const uint8x16_t x = vld1q_u8(qs + l), h = vld1q_u8(qh + l);
                const uint8x16_t lo = vorrq_u8(vandq_u8(x, vdupq_n_u8(15)), vandq_u8(vtstq_u8(h, b1), k16));
                const uint8x16_t hi = vorrq_u8(vshrq_n_u8(x, 4), vandq_u8(vtstq_u8(h, b2), k16));
                u8x16_mul_add(dst + l, lo, d1, m1, 1);
                u8x16_mul_add(dst + 32 + l, hi, d2, m2, 1);
            }
        }
    }
}

/* q2_K: group g (16 elements) has D = d * (sc & 15), M = dmin * (sc >> 4); q = (byte >> shift) & 3. */
static void dequant_q2_K_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const uint8x16_t m2 = vdupq_n_u8(3);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q2_K)) {
        const float d = half(b + 80), dmin = half(b + 82);
        for (int h = 0, g = 0; h < 2; h++) {
            const uint8x16_t x[2] = { vld1q_u8(b + 16 + 32 * h), vld1q_u8(b + 32 + 32 * h) };
            for (int step = 0; step < 4; step++) {
                const int8x16_t shift = vdupq_n_s8((int8_t)(-2 * step)); /* vshlq: negative = right */
                for (int r = 0; r < 2; r++, g++, dst += 16)
                    u8x16_mul_add(dst, vandq_u8(vshlq_u8(x[r], shift), m2),
                                  vdupq_n_f32(d * (float)(b[g] & 15)),
                                  vdupq_n_f32(dmin * (float)(b[g] >> 4)), 1);
            }
        }
    }
}

/* q3_K: D * (q - (mask bit clear ? 4 : 0)) with q = (byte >> shift) & 3. */
static void dequant_q3_K_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const uint8x16_t m2 = vdupq_n_u8(3), k4 = vdupq_n_u8(4);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q3_K)) {
        uint32_t w[4];
        tm__q3_K_scale_words(b + 96, w);
        const float d = half(b + 108);
        const uint8x16_t hm[2] = { vld1q_u8(b), vld1q_u8(b + 16) };
        for (int h = 0, g = 0; h < 2; h++) {
            const uint8x16_t x[2] = { vld1q_u8(b + 32 + 32 * h), vld1q_u8(b + 48 + 32 * h) };
            for (int step = 0; step < 4; step++) {
                const int8x16_t shift = vdupq_n_s8((int8_t)(-2 * step));
                const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + step)));
                for (int r = 0; r < 2; r++, g++, dst += 16) {
                    const int sc = (int)(w[g / 4] >> (8 * (g % 4)) & 0xff) - 32;
                    const uint8x16_t q2 = vandq_u8(vshlq_u8(x[r], shift), m2);
                    const uint8x16_t minus = vbicq_u8(k4, vtstq_u8(hm[r], bit));
                    s8x16_mul(dst, vsubq_s8(vreinterpretq_s8_u8(q2), vreinterpretq_s8_u8(minus)),
                              vdupq_n_f32(d * (float)sc));
                }
            }
        }
    }
}

/* q6_K: each run of 16 elements shares a scale; (d * scale) rounded, then times q - 32. */
static void dequant_q6_K_neon(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const uint8x16_t m4 = vdupq_n_u8(15), m2 = vdupq_n_u8(3);
    const int8x16_t k32 = vdupq_n_s8(32);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q6_K)) {
        const float d = half(b + 208);
        const int8_t *sc = (const int8_t *)(const void *)(b + 192);
        for (int h = 0; h < 2; h++, dst += 128, sc += 8) {
            const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
            for (int l = 0; l < 32; l += 16) {
                const uint8x16_t a = vld1q_u8(ql + l), c = vld1q_u8(ql + l + 32), hb = vld1q_u8(qh + l);
                const uint8x16_t q[4] = {
                    vorrq_u8(vandq_u8(a, m4), vshlq_n_u8(vandq_u8(hb, m2), 4)),
                    vorrq_u8(vandq_u8(c, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m2), 4)),
                    vorrq_u8(vshrq_n_u8(a, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m2), 4)),
                    vorrq_u8(vshrq_n_u8(c, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4)),
                };
                for (int k = 0; k < 4; k++)
                    s8x16_mul(dst + 32 * k + l, vsubq_s8(vreinterpretq_s8_u8(q[k]), k32),
                              vdupq_n_f32(d * (float)sc[l / 16 + 2 * k]));
            }
        }
    }
}

const tm__kernels tm__kernels_dequant_neon = {
    .dequant = {
        [TM_TYPE_F16] = dequant_f16_neon,
        [TM_TYPE_BF16] = dequant_bf16_neon,
        [TM_TYPE_Q4_0] = dequant_q4_0_neon,
        [TM_TYPE_Q4_1] = dequant_q4_1_neon,
        [TM_TYPE_Q5_0] = dequant_q5_0_neon,
        [TM_TYPE_Q5_1] = dequant_q5_1_neon,
        [TM_TYPE_Q8_0] = dequant_q8_0_neon,
        [TM_TYPE_Q2_K] = dequant_q2_K_neon,
        [TM_TYPE_Q3_K] = dequant_q3_K_neon,
        [TM_TYPE_Q4_K] = dequant_q4_K_neon,
        [TM_TYPE_Q5_K] = dequant_q5_K_neon,
        [TM_TYPE_Q6_K] = dequant_q6_K_neon,
    },
};
