/* AVX2 (+FMA, F16C) row-dot kernels for tm_matvec, built with their own -m flags.
 *
 * TM_MATVEC_F32: the codes of a block are widened to float in registers and multiplied by x,
 * the scale applied to each group's partial dot (q4_K: each weight formed as ggml rounds it);
 * no decoded float is ever stored.
 * TM_MATVEC_Q8: ggml's integer scheme (maddubs of unsigned codes by signed 8-bit x, madd by the
 * group scales), one float multiply-add per block.
 * Loads are unaligned (blocks in a file are 2-byte aligned) and never leave the row.
 * Only the table is exported; every function is static. */
#include "../blocks.h"
#include "../kernels.h"

#include "avx2_common.h"
#include "prefetch.h"

#include <immintrin.h>
#include <string.h>

/* ---- TM_MATVEC_F32 ------------------------------------------------------------------------- */

/* f32, f16, bf16: eight elements at a time into four float accumulators, into doubles every
 * PLAIN_SEGMENT (128) elements (dacc: avx2_common.h); the last n % 8 through a zero-padded copy,
 * so nothing past the row is read. */
static __m256 f32x8(const uint8_t *p) { return _mm256_loadu_ps((const float *)(const void *)p); }

#define DOT_PLAIN(name, widen, size)                                                          \
    static float name(const void *w, const float *x, size_t n)                               \
    {                                                                                         \
        const uint8_t *p = w;                                                                 \
        dacc a = acc_zero();                                                                   \
        const bool hints = plain_row_hints(size);                                             \
        size_t i = 0;                                                                         \
        while (i + 8 <= n) {                                                                  \
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                       \
            const size_t end = n - i < PLAIN_SEGMENT ? i + (n - i) / 32 * 32 : i + PLAIN_SEGMENT; \
            for (; i < end; i += 32) {                                                        \
                if (hints)                                                                    \
                    prefetch_ahead(p + (size) * i, 32 * (size));                              \
                a0 = _mm256_fmadd_ps(widen(p + (size) * i), _mm256_loadu_ps(x + i), a0);      \
                a1 = _mm256_fmadd_ps(widen(p + (size) * (i + 8)), _mm256_loadu_ps(x + i + 8), a1); \
                a2 = _mm256_fmadd_ps(widen(p + (size) * (i + 16)), _mm256_loadu_ps(x + i + 16), a2); \
                a3 = _mm256_fmadd_ps(widen(p + (size) * (i + 24)), _mm256_loadu_ps(x + i + 24), a3); \
            }                                                                                 \
            if (end == i && n - i < 32)                                                       \
                for (; i + 8 <= n; i += 8)                                                    \
                    a0 = _mm256_fmadd_ps(widen(p + (size) * i), _mm256_loadu_ps(x + i), a0);  \
            acc_add(&a, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));         \
        }                                                                                     \
        if (i < n) {                                                                          \
            uint8_t wt[8 * (size)] = { 0 };                                                   \
            float xt[8] = { 0 };                                                              \
            memcpy(wt, p + (size) * i, (size) * (n - i));                                     \
            memcpy(xt, x + i, sizeof(float) * (n - i));                                       \
            acc_add(&a, _mm256_mul_ps(widen(wt), _mm256_loadu_ps(xt)));                       \
        }                                                                                     \
        return acc_sum(&a);                                                                   \
    }
DOT_PLAIN(dot_f32_avx2, f32x8, 4)
DOT_PLAIN(dot_f16_avx2, f16x8, 2)
DOT_PLAIN(dot_bf16_avx2, bf16x8, 2)
#undef DOT_PLAIN

/* The quantized rows below widen eight codes at a time straight from a load (vpmovzxbd /
 * vpmovsxbd with a memory operand: no shuffle to pick the bytes out of a register) and sum in
 * four float lanes of eight, which go into double once per 256 elements. Every term w_j x_j
 * passes through at most 10 float roundings before it reaches double (counted at each kernel),
 * which is the bound's 2^-20 sum |w_j x_j| (docs/matvec.md). */
typedef struct lanes4 {
    __m256 v[4];
} lanes4;

static lanes4 lanes4_zero(void)
{
    const __m256 z = _mm256_setzero_ps();
    return (lanes4){ { z, z, z, z } };
}

/* two roundings */
static void lanes4_flush(const lanes4 *l, dacc *a)
{
    acc_add(a, _mm256_add_ps(_mm256_add_ps(l->v[0], l->v[1]), _mm256_add_ps(l->v[2], l->v[3])));
}

/* the eight bytes at p as eight signed int32 (zx8, avx2_common.h: unsigned) */
static __m256i sx8(const uint8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)); }
static __m256 cvt(__m256i v) { return _mm256_cvtepi32_ps(v); }

/* sum over 32 int32 codes c[0..3] times x[0..31] as eight lanes: three roundings */
static __m256 dot32(const __m256i c[4], const float *x)
{
    const __m256 p0 = _mm256_fmadd_ps(cvt(c[1]), _mm256_loadu_ps(x + 8),
                                      _mm256_mul_ps(cvt(c[0]), _mm256_loadu_ps(x)));
    const __m256 p1 = _mm256_fmadd_ps(cvt(c[3]), _mm256_loadu_ps(x + 24),
                                      _mm256_mul_ps(cvt(c[2]), _mm256_loadu_ps(x + 16)));
    return _mm256_add_ps(p0, p1);
}

/* q8_0 and q4_0: d sum(q x) per 32-element block (three roundings), the block multiplied by its
 * d into lane (i % 4) of the four (two more: eight blocks make 256 elements), flushed (two):
 * seven. ggml's weights d q are exact products, so this is their dot. */
static void q8_0_codes(const uint8_t *b, __m256i c[4])
{
    for (int k = 0; k < 4; k++)
        c[k] = sx8(b + 2 + 8 * k);
}

/* q - 8: the low nibbles are elements 0..15, the high ones 16..31 */
static void q4_0_codes(const uint8_t *b, __m256i c[4])
{
    const __m256i m4 = _mm256_set1_epi32(15), eight = _mm256_set1_epi32(8);
    for (int k = 0; k < 2; k++) {
        const __m256i v = zx8(b + 2 + 8 * k);
        c[k] = _mm256_sub_epi32(_mm256_and_si256(v, m4), eight);
        c[k + 2] = _mm256_sub_epi32(_mm256_srli_epi32(v, 4), eight);
    }
}

/* A row of 32-element blocks, eight blocks at a time, so that the four lanes stay in registers
 * (a lane indexed by i % 4 at run time lives on the stack); the last n_blocks % 8 likewise, then
 * the same flush. name##_block(b, x, &l, j) adds block j of the eight into the lanes. */
#define ROW_OF_32(name, block)                                                                \
    static float name(const void *w, const float *x, size_t n_blocks)                        \
    {                                                                                         \
        const uint8_t *b = w;                                                                 \
        dacc a = acc_zero();                                                                  \
        size_t i = 0;                                                                         \
        for (; i + 8 <= n_blocks; i += 8) {                                                   \
            lanes4 l = lanes4_zero();                                                         \
            _Pragma("GCC unroll 8") for (size_t j = 0; j < 8; j++)                            \
                name##_block(b + sizeof(block) * (i + j), x + 32 * (i + j), &l, j);           \
            lanes4_flush(&l, &a);                                                             \
        }                                                                                     \
        if (i < n_blocks) {                                                                   \
            lanes4 l = lanes4_zero();                                                         \
            for (size_t j = 0; i + j < n_blocks; j++)                                         \
                name##_block(b + sizeof(block) * (i + j), x + 32 * (i + j), &l, j);           \
            lanes4_flush(&l, &a);                                                             \
        }                                                                                     \
        return acc_sum(&a);                                                                   \
    }

/* d sum(q x) into lane j % 4: q8_0, q4_0, q5_0, iq4_nl, mxfp4 (their d q exact) */
#define DOT_32(name, block, codes, scale)                                                     \
    TM__INLINE void name##_block(                                                            \
        const uint8_t *b, const float *x, lanes4 *l, size_t j)                               \
    {                                                                                         \
        __m256i c[4];                                                                         \
        prefetch_ahead(b, sizeof(block));                                                     \
        codes(b, c);                                                                          \
        l->v[j % 4] = _mm256_fmadd_ps(_mm256_set1_ps(scale(b)), dot32(c, x), l->v[j % 4]);    \
    }                                                                                         \
    ROW_OF_32(name, block)

/* q4_1, q5_1: each weight d q + m formed by one multiply-add (d q is exact: ggml's rounding),
 * then one multiply-add by x, element 8k.. into lane k: eight per lane, flushed (two): ten */
#define DOT_32_MIN(name, block, codes)                                                        \
    TM__INLINE void name##_block(                                                            \
        const uint8_t *b, const float *x, lanes4 *l, size_t j)                               \
    {                                                                                         \
        (void)j;                                                                              \
        __m256i c[4];                                                                         \
        prefetch_ahead(b, sizeof(block));                                                     \
        codes(b, c);                                                                          \
        const __m256 d = _mm256_set1_ps(half(b)), m = _mm256_set1_ps(half(b + 2));            \
        for (int k = 0; k < 4; k++)                                                           \
            l->v[k] = _mm256_fmadd_ps(_mm256_fmadd_ps(d, cvt(c[k]), m),                       \
                                      _mm256_loadu_ps(x + 8 * k), l->v[k]);                   \
    }                                                                                         \
    ROW_OF_32(name, block)

/* 32 int8 codes as four vectors of eight int32 */
static void byte_codes(__m256i v, __m256i c[4])
{
    const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    c[0] = _mm256_cvtepi8_epi32(lo);
    c[1] = _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8));
    c[2] = _mm256_cvtepi8_epi32(hi);
    c[3] = _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8));
}
/* the codes of a block as byte_codes's four vectors (avx2_common.h: *_bytes); iq4_nl's and
 * mxfp4's d kv is exact (an 11-bit half times an int8, a power of two times one) */
#define BYTE_CODES(type)                                                                      \
    static void type##_codes(const uint8_t *b, __m256i c[4]) { byte_codes(type##_bytes(b), c); }
BYTE_CODES(q4_1)
BYTE_CODES(q5_0)
BYTE_CODES(q5_1)
BYTE_CODES(iq4_nl)
BYTE_CODES(mxfp4)
#undef BYTE_CODES

DOT_32(dot_q8_0_avx2, tm__block_q8_0, q8_0_codes, d_half)
DOT_32(dot_q4_0_avx2, tm__block_q4_0, q4_0_codes, d_half)
DOT_32(dot_q5_0_avx2, tm__block_q5_0, q5_0_codes, d_half)
DOT_32(dot_iq4_nl_avx2, tm__block_iq4_nl, iq4_nl_codes, d_half)
DOT_32(dot_mxfp4_avx2, tm__block_mxfp4, mxfp4_codes, d_e8m0)
DOT_32_MIN(dot_q4_1_avx2, tm__block_q4_1, q4_1_codes)
DOT_32_MIN(dot_q5_1_avx2, tm__block_q5_1, q5_1_codes)
#undef DOT_32
#undef DOT_32_MIN
#undef ROW_OF_32

/* iq4_xs: each 32-element group as an iq4_nl block (its sum, three roundings), times its exact
 * d (ls - 32) into lane g % 4 (two a lane), flushed (two): seven, and one more for ggml's
 * rounding of each weight d (ls - 32) kv, which this leaves exact: eight. */
static float dot_iq4_xs_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_iq4_xs), x += 256) {
        prefetch_ahead(b, sizeof(tm__block_iq4_xs));
        const float d = half(b);
        lanes4 l = lanes4_zero();
        _Pragma("GCC unroll 8") for (unsigned g = 0; g < 8; g++) {
            __m256i c[4];
            byte_codes(looked_up(tm__kvalues_iq4nl, b + 8 + 16 * g), c);
            const __m256 dl = _mm256_set1_ps(d * (float)(tm__iq4_xs_scale(b, g) - 32));
            l.v[g % 4] = _mm256_fmadd_ps(dl, dot32(c, x + 32 * g), l.v[g % 4]);
        }
        lanes4_flush(&l, &a);
    }
    return acc_sum(&a);
}

/* The eight floats f * (v[0..7] + add), v the low eight bytes of b unsigned: a K block's group
 * scales as floats (exact products: an 11-bit half times a 6-bit integer) */
static __m256 scaled8(__m128i b, int add, float f)
{
    const __m256i v = _mm256_add_epi32(_mm256_cvtepu8_epi32(b), _mm256_set1_epi32(add));
    return _mm256_mul_ps(_mm256_set1_ps(f), cvt(v));
}

/* float g of the vectors v (g / 8 of them), in every lane */
static __m256 lane_of(const __m256 *v, int g)
{
    return _mm256_permutevar8x32_ps(v[g / 8], _mm256_set1_epi32(g % 8));
}

/* q4_K and q5_K: each weight formed in a register exactly as ggml's decoder rounds it,
 * (d sc) q - dmin m (d sc q is exact in float, q < 32: so one fused multiply-subtract is ggml's
 * rounding, the weights are exactly ggml's; d sc and dmin m are exact products too, formed for
 * the eight groups at once), then one multiply-add by x into lane k of the four: four per lane,
 * flushed every half block (two): six roundings (with ten, flushed once a block, a golden q5_K
 * row broke 1e-6 of max|y|). Factoring the min out (dmin m sum(x)) would cancel
 * against the scaled codes, which the bound in terms of |w x| does not allow. Bytes 8k..8k+7 of
 * pair j's 32 code bytes hold elements 8k.. of group 2j (low nibbles) and of group 2j + 1 (high
 * ones); q5_K's fifth bit of each is bit 2j, resp. 2j + 1, of qh[8k..8k+7] (blocks.h). */
TM__INLINE float
dot_k4_avx2(const uint8_t *b, const float *x, size_t n_blocks, size_t block_bytes, bool five)
{
    const __m256i m4 = _mm256_set1_epi32(15), bit4 = _mm256_set1_epi32(16);
    const size_t codes = five ? 48 : 16;
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += block_bytes, x += 256) {
        prefetch_ahead(b, block_bytes);
        uint32_t w4[4];
        tm__k4_scale_min_words(b + 4, w4);
        const __m128i sm = ld128(w4); /* bytes: scales of groups 0..7, then their mins */
        const __m256 ds = scaled8(sm, 0, half(b));
        const __m256 ms = scaled8(_mm_srli_si128(sm, 8), 0, half(b + 2));
        lanes4 l = lanes4_zero();
        for (int j = 0; j < 4; j++) {
            const __m256 d0 = lane_of(&ds, 2 * j), m0 = lane_of(&ms, 2 * j);
            const __m256 d1 = lane_of(&ds, 2 * j + 1), m1 = lane_of(&ms, 2 * j + 1);
            const float *x0 = x + 64 * j, *x1 = x0 + 32;
            for (int k = 0; k < 4; k++) {
                const __m256i v = zx8(b + codes + 32 * j + 8 * k);
                __m256i q0 = _mm256_and_si256(v, m4), q1 = _mm256_srli_epi32(v, 4);
                if (five) { /* the qh bits moved to bit 4 */
                    const __m256i h = _mm256_slli_epi32(zx8(b + 16 + 8 * k), 4);
                    q0 = _mm256_or_si256(q0, _mm256_and_si256(_mm256_srli_epi32(h, 2 * j), bit4));
                    q1 = _mm256_or_si256(q1,
                                         _mm256_and_si256(_mm256_srli_epi32(h, 2 * j + 1), bit4));
                }
                const __m256 w0 = _mm256_fmsub_ps(d0, cvt(q0), m0);
                const __m256 w1 = _mm256_fmsub_ps(d1, cvt(q1), m1);
                l.v[k] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x0 + 8 * k), l.v[k]);
                l.v[k] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x1 + 8 * k), l.v[k]);
            }
            if (j % 2 == 1) { /* every half block */
                lanes4_flush(&l, &a);
                l = lanes4_zero();
            }
        }
    }
    return acc_sum(&a);
}

static float dot_q4_K_avx2(const void *w, const float *x, size_t n_blocks)
{
    return dot_k4_avx2(w, x, n_blocks, sizeof(tm__block_q4_K), false);
}

static float dot_q5_K_avx2(const void *w, const float *x, size_t n_blocks)
{
    return dot_k4_avx2(w, x, n_blocks, sizeof(tm__block_q5_K), true);
}

/* q2_K: group g (16 elements) of half h, shift 2j and run r (g = 8h + 2j + r) is bits 2j..2j+1
 * of qs[32h + 16r ..]; each weight (d sc) q - dmin m formed as ggml rounds it (as q4_K's), then
 * one multiply-add by x, elements 8k.. of run r into lane 2r + k: four per lane, flushed every
 * half (two): six roundings, as q4_K's (with ten a golden row against a smooth x broke 1e-6 of
 * max|y|). */
static float dot_q2_K_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    const __m128i m4 = _mm_set1_epi8(15);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q2_K), x += 256) {
        prefetch_ahead(b, sizeof(tm__block_q2_K));
        const __m128i sc = ld128(b), lo = _mm_and_si128(sc, m4);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(sc, 4), m4);
        const float d = half(b + 80), dmin = half(b + 82);
        const __m256 dl[2] = { scaled8(lo, 0, d), scaled8(_mm_srli_si128(lo, 8), 0, d) };
        const __m256 ml[2] = { scaled8(hi, 0, dmin), scaled8(_mm_srli_si128(hi, 8), 0, dmin) };
        for (int h = 0; h < 2; h++) {
            lanes4 l = lanes4_zero();
            for (int j = 0; j < 4; j++)
                _Pragma("GCC unroll 2") for (int r = 0; r < 2; r++) {
                    const int g = 8 * h + 2 * j + r;
                    const __m256 dg = lane_of(dl, g), mg = lane_of(ml, g);
                    _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++) {
                        const __m256i v = zx8(b + 16 + 32 * h + 16 * r + 8 * k);
                        const __m256i q = _mm256_and_si256(_mm256_srli_epi32(v, 2 * j),
                                                           _mm256_set1_epi32(3));
                        const __m256 wv = _mm256_fmsub_ps(dg, cvt(q), mg);
                        const float *xk = x + 128 * h + 32 * j + 16 * r + 8 * k;
                        l.v[2 * r + k] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xk), l.v[2 * r + k]);
                    }
                }
            lanes4_flush(&l, &a);
        }
    }
    return acc_sum(&a);
}

/* q3_K: laid out as q2_K, each code less 4 where its bit 4h + j of hmask[16r ..] is clear;
 * (d (sc - 32)) q is exact, so, as q6_K: each 16-element group's sum in float (two roundings),
 * times its d (sc - 32) into lane g % 4 (four a lane), flushed (two): eight. */
static float dot_q3_K_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q3_K), x += 256) {
        prefetch_ahead(b, sizeof(tm__block_q3_K));
        uint32_t w4[4];
        tm__q3_K_scale_words(b + 96, w4);
        const __m128i sc = ld128(w4);
        const float d = half(b + 108);
        const __m256 dl[2] = { scaled8(sc, -32, d), scaled8(_mm_srli_si128(sc, 8), -32, d) };
        lanes4 l = lanes4_zero();
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                _Pragma("GCC unroll 2") for (int r = 0; r < 2; r++) {
                    const int g = 8 * h + 2 * j + r;
                    __m256 c[2];
                    _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++) {
                        const __m256i v = zx8(b + 32 + 32 * h + 16 * r + 8 * k);
                        const __m256i m = zx8(b + 16 * r + 8 * k);
                        const __m256i q2 = _mm256_and_si256(_mm256_srli_epi32(v, 2 * j),
                                                            _mm256_set1_epi32(3));
                        const __m256i hb = _mm256_and_si256(_mm256_srli_epi32(m, 4 * h + j),
                                                            _mm256_set1_epi32(1));
                        c[k] = cvt(_mm256_sub_epi32(_mm256_add_epi32(q2, _mm256_slli_epi32(hb, 2)),
                                                    _mm256_set1_epi32(4)));
                    }
                    const float *xg = x + 128 * h + 32 * j + 16 * r;
                    const __m256 s = _mm256_fmadd_ps(c[1], _mm256_loadu_ps(xg + 8),
                                                     _mm256_mul_ps(c[0], _mm256_loadu_ps(xg)));
                    l.v[g % 4] = _mm256_fmadd_ps(lane_of(dl, g), s, l.v[g % 4]);
                }
        lanes4_flush(&l, &a);
    }
    return acc_sum(&a);
}

/* q6_K: the four 32-element runs of each 128-element half as bytes 0..63 (ql nibble | two qh
 * bits << 4). */
static void q6_K_codes(const uint8_t *ql, const uint8_t *qh, __m256i q[4])
{
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    const __m256i l0 = ld256(ql), l1 = ld256(ql + 32), h = ld256(qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
}

/* q6_K: (d sc) sum((q - 32) x) per 16-element group: the group's sum in float (two roundings),
 * multiplied by its d sc (exact in float, as ggml's weights (d sc) q are) into lane (g % 4)
 * (four per lane per block), flushed (two): eight roundings. The codes go through a stack copy
 * so that each eight are widened by a load. */
static float dot_q6_K_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x += 256) {
        prefetch_ahead(b, sizeof(tm__block_q6_K));
        const float d = half(b + 208);
        const int8_t *sc = (const int8_t *)(const void *)(b + 192);
        int8_t codes[256]; /* q - 32 */
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6_K_codes(b + 64 * h, b + 128 + 32 * h, q);
            for (int k = 0; k < 4; k++)
                _mm256_storeu_si256((__m256i *)(void *)(codes + 128 * h + 32 * k),
                                    _mm256_sub_epi8(q[k], _mm256_set1_epi8(32)));
        }
        lanes4 l = lanes4_zero();
        for (int g = 0; g < 16; g++) {
            const uint8_t *c = (const uint8_t *)codes + 16 * g;
            const float *xg = x + 16 * g;
            const __m256 s = _mm256_fmadd_ps(cvt(sx8(c + 8)), _mm256_loadu_ps(xg + 8),
                                             _mm256_mul_ps(cvt(sx8(c)), _mm256_loadu_ps(xg)));
            l.v[g % 4] = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[g]), s, l.v[g % 4]);
        }
        lanes4_flush(&l, &a);
    }
    return acc_sum(&a);
}

/* ---- TM_MATVEC_Q8 -------------------------------------------------------------------------- */

/* sum of signed bytes a * b in 32-bit lanes (ggml's sign trick: maddubs wants one unsigned) */
static __m256i dot_i8(__m256i a, __m256i b)
{
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static float dot_q8_0_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q8_0), x++) {
        prefetch_ahead(b, sizeof(tm__block_q8_0));
        const __m256 s = _mm256_cvtepi32_ps(dot_i8(ld256(b + 2), ld256(x->qs)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * x->d), s, acc);
    }
    return hsum_ps(acc);
}

static float dot_q4_0_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_0), x++) {
        prefetch_ahead(b, sizeof(tm__block_q4_0));
        const __m128i q = ld128(b + 2);
        const __m256i codes = _mm256_sub_epi8(
            _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4)),
            _mm256_set1_epi8(8));
        const __m256 s = _mm256_cvtepi32_ps(dot_i8(codes, ld256(x->qs)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * x->d), s, acc);
    }
    return hsum_ps(acc);
}

/* q4_K: per block, sum over groups of sc * (codes . x) as eight int32 lanes, one float
 * multiply-add by d dx; the mins against x's pair sums in int16 (madd), into a second float
 * vector. No horizontal sum until the row ends. */
static float dot_q4_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps(), accm = acc;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q4_K));
        uint32_t w4[4];
        tm__k4_scale_min_words(b + 4, w4);
        const uint8_t *sm = (const uint8_t *)w4;
        /* x's sums of groups of 32 (pairs of its 16-sums) times the mins */
        const __m128i xs32 = _mm_hadd_epi16(ld128(x->bsums), ld128(x->bsums + 8));
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(sm + 8)));
        const __m128i pm = _mm_madd_epi16(mins, xs32);
        /* the eight scales as int16 in both halves; vpshufb broadcasts scale s with the byte
         * pair (2s, 2s + 1) */
        const __m256i scales = _mm256_broadcastsi128_si256(
            _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)sm)));
        __m256i isum = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = ld256(b + 16 + 32 * j);
            const __m256i plo = _mm256_maddubs_epi16(_mm256_and_si256(q, m4), ld256(x->qs + 64 * j));
            const __m256i phi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                                                     ld256(x->qs + 64 * j + 32));
            const __m256i slo = _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)(0x0100 + 0x0202 * 2 * j)));
            const __m256i shi = _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * j + 1))));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(plo, slo));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(phi, shi));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * x->d), _mm256_cvtepi32_ps(isum), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(half(b + 2) * x->d),
                               _mm256_cvtepi32_ps(_mm256_castsi128_si256(pm)), accm);
    }
    return hsum_ps(acc) - hsum_ps(accm);
}

/* q6_K: codes taken unsigned (q + 32), each 16-element group times its int8 scale; the
 * 32 sum(sc x) that adds is removed with x's 16-sums (one madd), before the float multiply. */
static float dot_q6_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q6_K));
        const __m128i sc8 = ld128(b + 192);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        __m256i isum = _mm256_slli_epi32(_mm256_madd_epi16(sc16, ld256(x->bsums)), 5);
        isum = _mm256_sub_epi32(_mm256_setzero_si256(), isum);
        /* byte g eight times, then byte g + 1 eight times */
        const __m128i pair = _mm_set_epi8(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6_K_codes(b + 64 * h, b + 128 + 32 * h, q);
            for (int k = 0; k < 4; k++) {
                const int g = 8 * h + 2 * k;
                const __m256i p = _mm256_maddubs_epi16(q[k], ld256(x->qs + 128 * h + 32 * k));
                const __m256i s = _mm256_cvtepi8_epi16(
                    _mm_shuffle_epi8(sc8, _mm_add_epi8(pair, _mm_set1_epi8((char)g))));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, s));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b + 208) * x->d), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum_ps(acc);
}

const tm__kernels tm__kernels_matvec_avx2 = {
    .mv_f32 = {
        [TM_TYPE_F32] = dot_f32_avx2,
        [TM_TYPE_F16] = dot_f16_avx2,
        [TM_TYPE_BF16] = dot_bf16_avx2,
        [TM_TYPE_Q8_0] = dot_q8_0_avx2,
        [TM_TYPE_Q4_0] = dot_q4_0_avx2,
        [TM_TYPE_Q4_1] = dot_q4_1_avx2,
        [TM_TYPE_Q5_0] = dot_q5_0_avx2,
        [TM_TYPE_Q5_1] = dot_q5_1_avx2,
        [TM_TYPE_IQ4_NL] = dot_iq4_nl_avx2,
        [TM_TYPE_IQ4_XS] = dot_iq4_xs_avx2,
        [TM_TYPE_MXFP4] = dot_mxfp4_avx2,
        [TM_TYPE_Q2_K] = dot_q2_K_avx2,
        [TM_TYPE_Q3_K] = dot_q3_K_avx2,
        [TM_TYPE_Q4_K] = dot_q4_K_avx2,
        [TM_TYPE_Q5_K] = dot_q5_K_avx2,
        [TM_TYPE_Q6_K] = dot_q6_K_avx2,
    },
    .mv_q8 = {
        [TM_TYPE_Q8_0] = dot_q8_0_q8_avx2,
        [TM_TYPE_Q4_0] = dot_q4_0_q8_avx2,
        [TM_TYPE_Q4_K] = dot_q4_K_q8_avx2,
        [TM_TYPE_Q6_K] = dot_q6_K_q8_avx2,
    },
};
