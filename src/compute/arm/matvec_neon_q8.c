/* NEON TM_MATVEC_Q8 row-dot kernels (aarch64, baseline ARMv8-A NEON: no dot-product extension,
 * no SVE) for the block types matvec_neon.c has none for: q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4,
 * nvfp4, q1_0, q2_0, with x as q8_0 (nvfp4's 64 elements take two x blocks, q1_0's 128 four), and
 * q6_K, q2_K, q3_K, q5_K, iq4_xs, tq1_0, tq2_0, with x as q8_K: the layouts the scalar kernels
 * (matvec_scalar.c, matvec_scalar_q8.c) take. Built with -ffp-contract=off like every kernel
 * file; only the table is exported, every function is static.
 *
 * The integer side: a block's codes as signed bytes in element order, sixteen to a register
 * (nibbles by mask and shift; q5's fifth bits and q1_0's bits by a byte spread and a bit test;
 * the 16-entry value tables by vqtbl1q_s8; 2-bit planes by shifts; trits by ggml's base-3
 * multiplies), times x's codes by vmull_s8 into int16 products (at most 128 * 127), added in
 * pairs into int32 lanes by vpadalq_s16: exact, in any order.
 *
 * The float side, as x86/matvec_avx2_q8.c's: no float sum runs across blocks. A 32-element x
 * block's int32 lanes are widened to double and multiplied-added by (weight scale * dx) formed
 * in double, where it is exact (a half, UE4M3 or E8M0 scale times a float), into two double
 * vectors: one rounding per lane and x block (AVX2 rounds the scale product and the lanes in
 * float; double lanes cost no more here and keep mxfp4's 2^-127 scales out of subnormal floats).
 * A 256-element block's sums, its group scales applied in integers, are reduced to one int32
 * (exact) and the block enters the row's sum in double. So the result is W x-hat to float32
 * rounding even where its terms cancel. Every scale is what the decoders use (half, tm__e8m0_half,
 * tm__ue4m3_half, the packed 6-bit scales of blocks.h) and its products with the integer group
 * scales are exact in float, so W is ggml's decoded W. Loads are of whole blocks, never past the
 * row; the code assumes a little-endian host (as aarch64 Linux is) where it reads scale words
 * as bytes. */
#include "../blocks.h"
#include "../kernels.h"
#include "../quant_tables.h"
#include "neon_common.h"

#include <arm_neon.h>
#include <stdbool.h>
#include <string.h>

/* ---- the pieces every type shares --------------------------------------------------------- */

static int32x4_t zero4(void) { return vdupq_n_s32(0); }

/* 32 codes in element order: lo elements 0..15, hi 16..31 */
typedef struct codes32 {
    int8x16_t lo, hi;
} codes32;

/* sum over 32 elements of codes c times x's codes at xs, in int32 lanes (two halves apart: two
 * short chains of pairwise accumulates instead of one of four) */
static int32x4_t dot32(codes32 c, const int8_t *xs)
{
    return vaddq_s32(dot_s8(c.lo, vld1q_s8(xs), zero4()), dot_s8(c.hi, vld1q_s8(xs + 16), zero4()));
}

/* the 16 bytes at p as 32 nibbles: the low ones first (every 32-element block's order) */
static codes32 nibbles(const uint8_t *p)
{
    const uint8x16_t q = vld1q_u8(p);
    return (codes32){ vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))),
                      vreinterpretq_s8_u8(vshrq_n_u8(q, 4)) };
}

static codes32 minus(codes32 c, int8_t bias)
{
    return (codes32){ vsubq_s8(c.lo, vdupq_n_s8(bias)), vsubq_s8(c.hi, vdupq_n_s8(bias)) };
}

/* the int8 values of a 16-entry table at the codes (0..15) */
static codes32 looked_up(const int8_t table[16], codes32 c)
{
    const int8x16_t t = vld1q_s8(table);
    return (codes32){ vqtbl1q_s8(t, vreinterpretq_u8_s8(c.lo)),
                      vqtbl1q_s8(t, vreinterpretq_u8_s8(c.hi)) };
}

/* lane j of lo: 0xff where bit j of the little-endian u32 at p is set, else 0; of hi: bit 16 + j
 * (each byte spread over eight lanes, then one bit tested per lane) */
static void bit_masks(const uint8_t *p, uint8x16_t *lo, uint8x16_t *hi)
{
    static const uint8_t spread[2][16] = { { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 },
                                           { 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 } };
    static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    uint32_t u;
    memcpy(&u, p, sizeof u);
    const uint8x16_t v = vreinterpretq_u8_u32(vdupq_n_u32(u)), b = vld1q_u8(bit);
    *lo = vtstq_u8(vqtbl1q_u8(v, vld1q_u8(spread[0])), b);
    *hi = vtstq_u8(vqtbl1q_u8(v, vld1q_u8(spread[1])), b);
}

/* q5: nibbles plus 16 where the element's bit of the u32 qh at p is set */
static codes32 fifth_bits(codes32 c, const uint8_t *p)
{
    uint8x16_t lo, hi;
    bit_masks(p, &lo, &hi);
    const uint8x16_t s = vdupq_n_u8(16);
    return (codes32){ vorrq_s8(c.lo, vreinterpretq_s8_u8(vandq_u8(lo, s))),
                      vorrq_s8(c.hi, vreinterpretq_s8_u8(vandq_u8(hi, s))) };
}

/* ---- 32-element x blocks (q8_0) ----------------------------------------------------------- */

typedef struct dacc {
    float64x2_t lo, hi;
} dacc;

/* acc + s f lane by lane: s's int32 lanes are exact in double, f is formed in double, so one
 * rounding each */
static void acc_fma(dacc *a, int32x4_t s, double f)
{
    a->lo = vfmaq_n_f64(a->lo, vcvtq_f64_s64(vmovl_s32(vget_low_s32(s))), f);
    a->hi = vfmaq_n_f64(a->hi, vcvtq_f64_s64(vmovl_high_s32(s)), f);
}

/* the sum of x's 32 codes at xs, as four int32 lanes (four codes to an int16 lane first) */
static int32x4_t x_sum(const int8_t *xs)
{
    return vpaddlq_s16(vpadalq_s8(vpaddlq_s8(vld1q_s8(xs)), vld1q_s8(xs + 16)));
}

/* A type's 32 codes for x block `part` of block b; its scale for 16-element group g of b; its
 * offset (w = scale code + offset), one per block. */
typedef codes32 codes_fn(const uint8_t *b, unsigned part);
typedef float scale_fn(const uint8_t *b, unsigned g);
typedef float offset_fn(const uint8_t *b);

/* Blocks of 32 * parts elements (bb bytes) against x as q8_0: per x block, the codes times x's
 * in int32 lanes, into the double lanes times scale * dx, the two 16-element halves apart when
 * per16 (nvfp4's scale per 16), the offset times x's sum when there is one. Inlined into each
 * type's kernel, so its codes, scale and offset are inlined too. */
TM__INLINE float
dot_x32(const uint8_t *b, const tm__q8_0x *x, size_t n_blocks, size_t bb, unsigned parts,
        bool per16, codes_fn *codes, scale_fn *scale, offset_fn *offset)
{
    dacc a = { vdupq_n_f64(0), vdupq_n_f64(0) };
    for (size_t i = 0; i < n_blocks; i++, b += bb) {
        for (unsigned p = 0; p < parts; p++, x++) {
            const codes32 c = codes(b, p);
            const double dx = x->d;
            if (per16) {
                acc_fma(&a, dot_s8(c.lo, vld1q_s8(x->qs), zero4()), (double)scale(b, 2 * p) * dx);
                acc_fma(&a, dot_s8(c.hi, vld1q_s8(x->qs + 16), zero4()),
                        (double)scale(b, 2 * p + 1) * dx);
            } else {
                acc_fma(&a, dot32(c, x->qs), (double)scale(b, 0) * dx);
            }
            if (offset)
                acc_fma(&a, x_sum(x->qs), (double)offset(b) * dx);
        }
    }
    return (float)vaddvq_f64(vaddq_f64(a.lo, a.hi));
}

/* q4_0: d @0, qs[16] @2, value d (q - 8). q4_1: d, m @2, qs @4, value d q + m. */
static codes32 q4_0_codes(const uint8_t *b, unsigned p)
{
    (void)p;
    return minus(nibbles(b + 2), 8);
}
static codes32 q4_1_codes(const uint8_t *b, unsigned p)
{
    (void)p;
    return nibbles(b + 4);
}

/* q5_0: d, qh @2, qs @6, value d (q - 16). q5_1: d, m, qh @4, qs @8, value d q + m. */
static codes32 q5_0_codes(const uint8_t *b, unsigned p)
{
    (void)p;
    return minus(fifth_bits(nibbles(b + 6), b + 2), 16);
}
static codes32 q5_1_codes(const uint8_t *b, unsigned p)
{
    (void)p;
    return fifth_bits(nibbles(b + 8), b + 4);
}

/* iq4_nl: d, qs @2, value d kv[q]. mxfp4: e @0, qs @1, value kv_fp4[q] 2^(e - 128). */
static codes32 iq4_nl_codes(const uint8_t *b, unsigned p)
{
    (void)p;
    return looked_up(tm__kvalues_iq4nl, nibbles(b + 2));
}
static codes32 mxfp4_codes(const uint8_t *b, unsigned p)
{
    (void)p;
    return looked_up(tm__kvalues_fp4, nibbles(b + 1));
}

/* nvfp4 (64): d[4] @0 a UE4M3 scale per 16, qs[32] @4: sub-block s's eight bytes hold its
 * elements 0..7 in the low nibbles, 8..15 in the high ones. x block p is sub-blocks 2p, 2p + 1. */
static codes32 nvfp4_codes(const uint8_t *b, unsigned p)
{
    const codes32 n = nibbles(b + 4 + 16 * p);
    const uint64x2_t lo = vreinterpretq_u64_s8(n.lo), hi = vreinterpretq_u64_s8(n.hi);
    const codes32 c = { vreinterpretq_s8_u64(vzip1q_u64(lo, hi)),
                        vreinterpretq_s8_u64(vzip2q_u64(lo, hi)) };
    return looked_up(tm__kvalues_fp4, c);
}

/* q1_0 (128): d, a bit per element @2 (element j: bit j % 8 of byte j / 8), set +1, clear -1 */
static codes32 q1_0_codes(const uint8_t *b, unsigned p)
{
    uint8x16_t lo, hi;
    bit_masks(b + 2 + 4 * p, &lo, &hi);
    const uint8x16_t two = vdupq_n_u8(2), one = vdupq_n_u8(1);
    return (codes32){ vreinterpretq_s8_u8(vsubq_u8(vandq_u8(lo, two), one)),
                      vreinterpretq_s8_u8(vsubq_u8(vandq_u8(hi, two), one)) };
}

/* q2_0 (64): d, four 2-bit codes a byte @2 (element j: bits 2 (j % 4) of byte j / 4), value
 * d (q - 1): each byte spread over four lanes, shifted right by 0, 2, 4, 6 */
static codes32 q2_0_codes(const uint8_t *b, unsigned p)
{
    static const uint8_t spread[2][16] = { { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 },
                                           { 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7 } };
    static const int8_t right[16] = { 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6 };
    const uint8x8_t q = vld1_u8(b + 2 + 8 * p);
    const uint8x16_t v = vcombine_u8(q, q), m3 = vdupq_n_u8(3);
    const int8x16_t sh = vld1q_s8(right);
    const uint8x16_t lo = vandq_u8(vshlq_u8(vqtbl1q_u8(v, vld1q_u8(spread[0])), sh), m3);
    const uint8x16_t hi = vandq_u8(vshlq_u8(vqtbl1q_u8(v, vld1q_u8(spread[1])), sh), m3);
    return minus((codes32){ vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi) }, 1);
}

static float d_half(const uint8_t *b, unsigned g) { (void)g; return half(b); }
static float d_e8m0(const uint8_t *b, unsigned g) { (void)g; return tm__e8m0_half(b[0]); }
static float d_ue4m3(const uint8_t *b, unsigned g) { return tm__ue4m3_half(b[g]); }
static float m_half(const uint8_t *b) { return half(b + 2); }

#define DOT_X32(type, parts, per16, codes, scale, offset)                                     \
    static float dot_##type##_q8_neon(const void *w, const void *xq, size_t n_blocks)        \
    {                                                                                         \
        return dot_x32(w, xq, n_blocks, sizeof(tm__block_##type), parts, per16, codes, scale, \
                       offset);                                                               \
    }
DOT_X32(q4_0, 1, false, q4_0_codes, d_half, NULL)
DOT_X32(q4_1, 1, false, q4_1_codes, d_half, m_half)
DOT_X32(q5_0, 1, false, q5_0_codes, d_half, NULL)
DOT_X32(q5_1, 1, false, q5_1_codes, d_half, m_half)
DOT_X32(iq4_nl, 1, false, iq4_nl_codes, d_half, NULL)
DOT_X32(mxfp4, 1, false, mxfp4_codes, d_e8m0, NULL)
DOT_X32(nvfp4, 2, true, nvfp4_codes, d_ue4m3, NULL)
DOT_X32(q1_0, 4, false, q1_0_codes, d_half, NULL)
DOT_X32(q2_0, 2, false, q2_0_codes, d_half, NULL)
#undef DOT_X32

/* ---- 256-element blocks, x as q8_K ------------------------------------------------------- */

/* A block's exact integer sums: isum (codes times x, each group times its integer scale) and
 * msum (each group's integer min times x's sum over the group), which the block's d and dmin
 * scale. */
typedef struct ksums {
    int32_t isum, msum;
} ksums;
typedef ksums kblock_fn(const uint8_t *b, const tm__q8_Kx *x);

/* Per block: dx (d isum - dmin msum) in double, d the half at d_at, dmin the one at dmin_at
 * (none when negative). Inlined into each type's kernel, as dot_x32. */
TM__INLINE float
dot_xk(const uint8_t *b, const tm__q8_Kx *x, size_t n_blocks, size_t bb, kblock_fn *sums,
       int d_at, int dmin_at)
{
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += bb, x++) {
        const ksums s = sums(b, x);
        double v = (double)half(b + d_at) * s.isum;
        if (dmin_at >= 0)
            v -= (double)half(b + dmin_at) * s.msum;
        acc += (double)x->d * v;
    }
    return (float)acc;
}

/* sum over the sixteen groups of 16 of v[g] * bsums[g] */
static int32_t with_bsums(int8x16_t v, const int16_t *bsums)
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_high_s8(v);
    const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
    int32x4_t s = vmull_s16(vget_low_s16(lo), vget_low_s16(b0));
    s = vmlal_high_s16(s, lo, b0);
    s = vmlal_s16(s, vget_low_s16(hi), vget_low_s16(b1));
    return vaddvq_s32(vmlal_high_s16(s, hi, b1));
}

/* q6_K: ql[128] @0, qh[64] @128, scales[16] int8 @192, d @208. In half h (ql + 64h, qh + 32h),
 * run k (32 elements, 128h + 32k ..) takes nibble k / 2 of ql[32 (k & 1) + l] and bits 2k, 2k+1
 * of qh[l], less 32; group g (16 elements) is scaled by sc[g]. Sixteen bytes at a time (s): the
 * four runs' halves s, groups 8h + 2k + s. */
static ksums q6_K_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    const int8_t *sc = (const int8_t *)(const void *)(b + 192);
    const uint8x16_t m2 = vdupq_n_u8(3);
    int32x4_t isum = zero4();
    for (int h = 0; h < 2; h++) {
        for (int s = 0; s < 2; s++) {
            const uint8_t *ql = b + 64 * h + 16 * s;
            const uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 32);
            const uint8x16_t qh = vld1q_u8(b + 128 + 32 * h + 16 * s);
            /* vsli keeps the low nibble of its first operand under the second shifted by 4 */
            const uint8x16_t q[4] = {
                vsliq_n_u8(l0, vandq_u8(qh, m2), 4),
                vsliq_n_u8(l1, vandq_u8(vshrq_n_u8(qh, 2), m2), 4),
                vsliq_n_u8(vshrq_n_u8(l0, 4), vandq_u8(vshrq_n_u8(qh, 4), m2), 4),
                vsliq_n_u8(vshrq_n_u8(l1, 4), vshrq_n_u8(qh, 6), 4),
            };
            for (int k = 0; k < 4; k++) {
                const int8x16_t c = vsubq_s8(vreinterpretq_s8_u8(q[k]), vdupq_n_s8(32));
                const int32x4_t d = dot_s8(c, vld1q_s8(x->qs + 128 * h + 32 * k + 16 * s), zero4());
                isum = vmlaq_n_s32(isum, d, sc[8 * h + 2 * k + s]);
            }
        }
    }
    return (ksums){ vaddvq_s32(isum), 0 };
}

/* q2_K and q3_K: sixteen runs of 16, for half h and shift step s the 16-byte rows qs + 32h and
 * qs + 32h + 16 shifted right by 2s: runs 8h + 2s and 8h + 2s + 1, against x's elements
 * 128h + 32s ... With hm (q3_K's hmask[32]), a clear bit 4h + s of the row's mask byte takes 4.
 * Returns the sum over runs of sc[r] (codes . x). Inlined, so that q2_K's copy has no mask. */
TM__INLINE int32_t
runs_dot(const uint8_t *qs, const uint8_t *hm, const int8_t *xqs, const int8_t sc[16])
{
    const uint8x16_t m3 = vdupq_n_u8(3);
    const int8x16_t four = vdupq_n_s8(4);
    int32x4_t isum = zero4();
    for (int h = 0; h < 2; h++) {
        const uint8x16_t q[2] = { vld1q_u8(qs + 32 * h), vld1q_u8(qs + 32 * h + 16) };
        for (int s = 0; s < 4; s++) {
            const int8x16_t right = vdupq_n_s8((int8_t)(-2 * s));
            const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + s)));
            for (int o = 0; o < 2; o++) {
                int8x16_t c = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q[o], right), m3));
                if (hm) {
                    const uint8x16_t set = vtstq_u8(vld1q_u8(hm + 16 * o), bit);
                    c = vsubq_s8(c, vbicq_s8(four, vreinterpretq_s8_u8(set)));
                }
                const int r = 8 * h + 2 * s + o;
                const int32x4_t d = dot_s8(c, vld1q_s8(xqs + 128 * h + 32 * s + 16 * o), zero4());
                isum = vmlaq_n_s32(isum, d, sc[r]);
            }
        }
    }
    return vaddvq_s32(isum);
}

/* q2_K: scales[16] @0 (low nibble the run's scale, high its min), qs[64] @16, d @80, dmin @82 */
static ksums q2_K_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    const uint8x16_t sm = vld1q_u8(b);
    int8_t sc[16];
    vst1q_s8(sc, vreinterpretq_s8_u8(vandq_u8(sm, vdupq_n_u8(15))));
    return (ksums){ runs_dot(b + 16, NULL, x->qs, sc),
                    with_bsums(vreinterpretq_s8_u8(vshrq_n_u8(sm, 4)), x->bsums) };
}

/* q3_K: hmask[32] @0, qs[64] @32, scales[12] @96 (6-bit, less 32), d @108 */
static ksums q3_K_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    uint32_t w4[4];
    tm__q3_K_scale_words(b + 96, w4);
    int8_t sc[16];
    vst1q_s8(sc, vsubq_s8(vreinterpretq_s8_u32(vld1q_u32(w4)), vdupq_n_s8(32)));
    return (ksums){ runs_dot(b + 32, b, x->qs, sc), 0 };
}

/* q5_K: d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48. Group g (32 elements) takes the
 * low (g even) or high nibbles of qs[48 + 32 (g / 2) ..], bit g of qh[l] adds 16; its min
 * against x's sum over the group (two bsums). */
static ksums q5_K_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    uint32_t w4[4];
    tm__k4_scale_min_words(b + 4, w4);
    uint8_t sm[16]; /* scales of groups 0..7, then their mins */
    vst1q_u8(sm, vreinterpretq_u8_u32(vld1q_u32(w4)));
    const uint8x16_t h[2] = { vld1q_u8(b + 16), vld1q_u8(b + 32) }, m4 = vdupq_n_u8(15);
    const uint8x16_t sixteen = vdupq_n_u8(16);
    int32x4_t isum = zero4();
    for (int j = 0; j < 4; j++) {
        const uint8x16_t q[2] = { vld1q_u8(b + 48 + 32 * j), vld1q_u8(b + 64 + 32 * j) };
        for (int n = 0; n < 2; n++) {
            const int g = 2 * j + n;
            const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << g));
            int8x16_t c[2];
            for (int o = 0; o < 2; o++) {
                const uint8x16_t nib = n ? vshrq_n_u8(q[o], 4) : vandq_u8(q[o], m4);
                c[o] = vreinterpretq_s8_u8(vorrq_u8(nib, vandq_u8(vtstq_u8(h[o], bit), sixteen)));
            }
            isum = vmlaq_n_s32(isum, dot32((codes32){ c[0], c[1] }, x->qs + 32 * g), sm[g]);
        }
    }
    /* x's sums over the groups of 32: pairs of its 16-sums (at most 32 * 127) */
    const int16x8_t xs32 = vpaddq_s16(vld1q_s16(x->bsums), vld1q_s16(x->bsums + 8));
    const int16x8_t mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(sm + 8)));
    const int32x4_t ms = vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(xs32)), mins,
                                        xs32);
    return (ksums){ vaddvq_s32(isum), vaddvq_s32(ms) };
}

/* iq4_xs: d @0, scales_h @2, scales_l @4 (6-bit group scales, less 32), qs @8: group g (32
 * elements) is the 16 bytes qs + 16g in iq4_nl's order */
static ksums iq4_xs_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    int32x4_t isum = zero4();
    for (unsigned g = 0; g < 8; g++) {
        const codes32 c = looked_up(tm__kvalues_iq4nl, nibbles(b + 8 + 16 * g));
        isum = vmlaq_n_s32(isum, dot32(c, x->qs + 32 * g), tm__iq4_xs_scale(b, g) - 32);
    }
    return (ksums){ vaddvq_s32(isum), 0 };
}

/* tq2_0: qs[64] @0, d @64: element 128k + 32l + m is bits 2l.. of qs[32k + m], value d (q - 1) */
static ksums tq2_0_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    const uint8x16_t m3 = vdupq_n_u8(3);
    const int8x16_t one = vdupq_n_s8(1);
    int32x4_t isum = zero4();
    for (int k = 0; k < 2; k++) {
        const uint8x16_t q[2] = { vld1q_u8(b + 32 * k), vld1q_u8(b + 32 * k + 16) };
        for (int l = 0; l < 4; l++) {
            const int8x16_t right = vdupq_n_s8((int8_t)(-2 * l));
            codes32 c;
            c.lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q[0], right), m3)), one);
            c.hi = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q[1], right), m3)), one);
            isum = vaddq_s32(isum, dot32(c, x->qs + 128 * k + 32 * l));
        }
    }
    return (ksums){ vaddvq_s32(isum), 0 };
}

/* trit - 1 of each byte of q, p (per lane) the trit's power of 3: ggml's ((q p mod 256) 3) >> 8,
 * the high byte of a widening multiply */
static int8x16_t trits(uint8x16_t q, uint8x16_t p)
{
    const uint8x16_t qp = vmulq_u8(q, p), three = vdupq_n_u8(3);
    const uint8x16_t t = vcombine_u8(vshrn_n_u16(vmull_u8(vget_low_u8(qp), vget_low_u8(three)), 8),
                                     vshrn_n_u16(vmull_high_u8(qp, three), 8));
    return vsubq_s8(vreinterpretq_s8_u8(t), vdupq_n_s8(1));
}

/* tq1_0: qs[48] @0 (five trits a byte), qh[4] @48 (four), d @52: trit t of qs[0..31] is element
 * 32t + m, of qs[32..47] element 160 + 16t + m, of qh[m] element 240 + 4t + m */
static ksums tq1_0_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    static const uint8_t qh_pow[16] = { 1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27 };
    const uint8x16_t q0 = vld1q_u8(b), q1 = vld1q_u8(b + 16), q2 = vld1q_u8(b + 32);
    uint32_t u;
    memcpy(&u, b + 48, sizeof u);
    int32x4_t isum = zero4();
    for (int t = 0; t < 5; t++) {
        const uint8x16_t p = vdupq_n_u8(pow3[t]);
        isum = vaddq_s32(isum, dot32((codes32){ trits(q0, p), trits(q1, p) }, x->qs + 32 * t));
        isum = dot_s8(trits(q2, p), vld1q_s8(x->qs + 160 + 16 * t), isum);
    }
    isum = dot_s8(trits(vreinterpretq_u8_u32(vdupq_n_u32(u)), vld1q_u8(qh_pow)),
                  vld1q_s8(x->qs + 240), isum);
    return (ksums){ vaddvq_s32(isum), 0 };
}

#define DOT_XK(type, d_at, dmin_at)                                                           \
    static float dot_##type##_q8_neon(const void *w, const void *xq, size_t n_blocks)        \
    {                                                                                         \
        return dot_xk(w, xq, n_blocks, sizeof(tm__block_##type), type##_sums, d_at, dmin_at); \
    }
DOT_XK(q6_K, 208, -1)
DOT_XK(q2_K, 80, 82)
DOT_XK(q3_K, 108, -1)
DOT_XK(q5_K, 0, 2)
DOT_XK(iq4_xs, 0, -1)
DOT_XK(tq1_0, 52, -1)
DOT_XK(tq2_0, 64, -1)
#undef DOT_XK

const tm__kernels tm__kernels_matvec_neon_q8 = {
    .mv_q8 = {
        [TM_TYPE_Q4_0] = dot_q4_0_q8_neon,
        [TM_TYPE_Q4_1] = dot_q4_1_q8_neon,
        [TM_TYPE_Q5_0] = dot_q5_0_q8_neon,
        [TM_TYPE_Q5_1] = dot_q5_1_q8_neon,
        [TM_TYPE_IQ4_NL] = dot_iq4_nl_q8_neon,
        [TM_TYPE_MXFP4] = dot_mxfp4_q8_neon,
        [TM_TYPE_NVFP4] = dot_nvfp4_q8_neon,
        [TM_TYPE_Q1_0] = dot_q1_0_q8_neon,
        [TM_TYPE_Q2_0] = dot_q2_0_q8_neon,
        [TM_TYPE_Q6_K] = dot_q6_K_q8_neon,
        [TM_TYPE_Q2_K] = dot_q2_K_q8_neon,
        [TM_TYPE_Q3_K] = dot_q3_K_q8_neon,
        [TM_TYPE_Q5_K] = dot_q5_K_q8_neon,
        [TM_TYPE_IQ4_XS] = dot_iq4_xs_q8_neon,
        [TM_TYPE_TQ1_0] = dot_tq1_0_q8_neon,
        [TM_TYPE_TQ2_0] = dot_tq2_0_q8_neon,
    },
};
