/* AVX-512 kernels (F, BW, VL, DQ, VBMI + F16C), built with their own -m flags.
 *
 * Every kernel performs the scalar kernel's float32 operations, lane by lane, in the same order,
 * so the output is bit-identical (the file is built with -ffp-contract=off, so no multiply and
 * add are fused). Loads are unaligned: blocks in a file are only 2-byte aligned.
 *
 * The 2-, 3-, 4- and 5-bit types decode through a lookup table per group: for a group with scale
 * D and min M the 16 (or 32) possible outputs D * q - M are computed once, with exactly the scalar
 * operations, into a register, and each output lane picks its entry with vpermps (vpermi2ps for
 * 32 entries). A lane of the table holds the very float the scalar code computes for that q, so
 * this is the same arithmetic, done once per distinct q instead of once per element.
 *
 * Only the table is exported; every function is static (nothing compiled with -mavx512f may be
 * reached from code that has not checked the CPU). */
#include "../blocks.h"
#include "../kernels.h"

#include <immintrin.h>
#include <string.h>

static float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

static __m128i ld128(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }

/* 16 bytes -> 16 int32 lanes, zero-extended */
static __m512i u8x16(const uint8_t *p) { return _mm512_cvtepu8_epi32(ld128(p)); }

/* 0.0f, 1.0f, ..., 15.0f: the q of each table lane */
static __m512 iota16(void)
{
    return _mm512_cvtepi32_ps(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
}

/* ---- plain types --------------------------------------------------------------------------- */

/* f16 and bf16: 16 halves -> 16 floats per step; the tail through masked loads and stores, so
 * no byte past the input is touched. */
static __m512 f16x16(__m256i h) { return _mm512_cvtph_ps(h); }
static __m512 bf16x16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

#define DEQUANT_HALVES(name, widen)                                                              \
    static void name(const void *src, float *dst, size_t n)                                     \
    {                                                                                            \
        const uint8_t *p = src;                                                                  \
        size_t i = 0;                                                                            \
        for (; i + 16 <= n; i += 16)                                                             \
            _mm512_storeu_ps(dst + i, widen(_mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * i)))); \
        if (i < n) {                                                                             \
            const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                                \
            _mm512_mask_storeu_ps(dst + i, m, widen(_mm256_maskz_loadu_epi16(m, p + 2 * i)));   \
        }                                                                                        \
    }
DEQUANT_HALVES(dequant_f16_avx512, f16x16)
DEQUANT_HALVES(dequant_bf16_avx512, bf16x16)
#undef DEQUANT_HALVES

/* ---- 32-element blocks --------------------------------------------------------------------- */

/* 32 elements from 16 bytes of nibbles through the 16-entry table t: element j is the low
 * nibble of byte j, element j + 16 the high nibble (vpermps reads bits 0..3 of each lane). */
static void q4_store32(float *dst, const uint8_t *qs, __m512 t)
{
    const __m512i x = u8x16(qs);
    _mm512_storeu_ps(dst, _mm512_permutexvar_ps(x, t));
    _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), t));
}

/* q4_0: T[q] = (float)(q - 8) * d. */
static void dequant_q4_0_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q = _mm512_sub_ps(iota16(), _mm512_set1_ps(8.0f)); /* exact: small integers */
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_0), dst += 32)
        q4_store32(dst, b + 2, _mm512_mul_ps(q, _mm512_set1_ps(half(b))));
}

/* q4_1: T[q] = (float)q * d + m. */
static void dequant_q4_1_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q = iota16();
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_1), dst += 32)
        q4_store32(dst, b + 4, _mm512_add_ps(_mm512_mul_ps(q, _mm512_set1_ps(half(b))),
                                             _mm512_set1_ps(half(b + 2))));
}

/* 32 five-bit elements through two 16-entry tables (t_lo for q < 16, t_hi for q >= 16, picked
 * by vpermi2ps with bit 4 of the index): the nibbles as in q4, and bit j of qh, set through a
 * mask register, is bit 4 of element j. */
static void q5_store32(float *dst, const uint8_t *qs, uint32_t qh, __m512 t_lo, __m512 t_hi)
{
    const __m512i x = u8x16(qs), k16 = _mm512_set1_epi32(16);
    const __m512i lo = _mm512_and_si512(x, _mm512_set1_epi32(15)), hi = _mm512_srli_epi32(x, 4);
    _mm512_storeu_ps(dst, _mm512_permutex2var_ps(t_lo, _mm512_mask_or_epi32(lo, (__mmask16)qh, lo, k16), t_hi));
    _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(
                                   t_lo, _mm512_mask_or_epi32(hi, (__mmask16)(qh >> 16), hi, k16), t_hi));
}

/* q5_0: T[q] = (float)(q - 16) * d for q = 0..31. */
static void dequant_q5_0_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q_lo = _mm512_sub_ps(iota16(), _mm512_set1_ps(16.0f)), q_hi = iota16();
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_0), dst += 32) {
        const __m512 d = _mm512_set1_ps(half(b));
        q5_store32(dst, b + 6, tm__rd32(b + 2), _mm512_mul_ps(q_lo, d), _mm512_mul_ps(q_hi, d));
    }
}

/* q5_1: T[q] = (float)q * d + m for q = 0..31. */
static void dequant_q5_1_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q_lo = iota16(), q_hi = _mm512_add_ps(iota16(), _mm512_set1_ps(16.0f));
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_1), dst += 32) {
        const __m512 d = _mm512_set1_ps(half(b)), m = _mm512_set1_ps(half(b + 2));
        q5_store32(dst, b + 8, tm__rd32(b + 4), _mm512_add_ps(_mm512_mul_ps(q_lo, d), m),
                   _mm512_add_ps(_mm512_mul_ps(q_hi, d), m));
    }
}

/* q8_0: 256 possible q, so no table: convert and multiply. */
static void dequant_q8_0_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q8_0), dst += 32) {
        const __m512 d = _mm512_set1_ps(half(b));
        const __m512 v0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(ld128(b + 2)));
        const __m512 v1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(ld128(b + 18)));
        _mm512_storeu_ps(dst, _mm512_mul_ps(v0, d));
        _mm512_storeu_ps(dst + 16, _mm512_mul_ps(v1, d));
    }
}

/* ---- 256-element super-blocks -------------------------------------------------------------- */

/* q2_K: group g (16 elements, g = 8 * half + 2 * step + run) has D = d * (sc & 15) and
 * M = dmin * (sc >> 4); its q = (byte >> 2 * step) & 3. The table T[i] = D * (i & 3) - M
 * repeats every 4 lanes, so vpermps may use bits 0..3 of byte >> shift as they are. */
static void dequant_q2_K_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q = _mm512_cvtepi32_ps(_mm512_and_si512(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(3)));
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q2_K)) {
        const __m512i sc = u8x16(b);
        float dd[16], mm[16]; /* broadcast from memory: loads, not shuffles */
        _mm512_storeu_ps(dd, _mm512_mul_ps(_mm512_set1_ps(half(b + 80)),
                                           _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15)))));
        _mm512_storeu_ps(mm, _mm512_mul_ps(_mm512_set1_ps(half(b + 82)),
                                           _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4))));
        for (int h = 0, g = 0; h < 2; h++) {
            const __m512i x[2] = { u8x16(b + 16 + 32 * h), u8x16(b + 16 + 32 * h + 16) };
            for (int step = 0; step < 4; step++) {
                for (int r = 0; r < 2; r++, g++, dst += 16) {
                    const __m512 t = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dd[g]), q), _mm512_set1_ps(mm[g]));
                    const __m512i idx = _mm512_srlv_epi32(x[r], _mm512_set1_epi32(2 * step));
                    _mm512_storeu_ps(dst, _mm512_permutexvar_ps(idx, t));
                }
            }
        }
    }
}

/* q3_K: the 3-bit index (2 bits of qs) | (hmask bit) << 2 selects T[i] = D * ((i & 7) - 4):
 * a set mask bit means q, a clear one q - 4, exactly the scalar value. */
static void dequant_q3_K_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q = _mm512_cvtepi32_ps(_mm512_sub_epi32(
        _mm512_and_si512(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(7)),
        _mm512_set1_epi32(4)));
    const __m512i three = _mm512_set1_epi32(3), four = _mm512_set1_epi32(4);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q3_K)) {
        uint32_t w[4];
        tm__q3_K_scale_words(b + 96, w);
        const __m128i s6 = _mm_loadu_si128((const __m128i *)(const void *)w);
        float dd[16];
        _mm512_storeu_ps(dd, _mm512_mul_ps(_mm512_set1_ps(half(b + 108)), _mm512_cvtepi32_ps(
            _mm512_sub_epi32(_mm512_cvtepu8_epi32(s6), _mm512_set1_epi32(32)))));
        const __m512i hm[2] = { u8x16(b), u8x16(b + 16) };
        for (int h = 0, g = 0; h < 2; h++) {
            const __m512i x[2] = { u8x16(b + 32 + 32 * h), u8x16(b + 32 + 32 * h + 16) };
            for (int step = 0; step < 4; step++) {
                const __m512i bit = _mm512_set1_epi32(1 << (4 * h + step));
                for (int r = 0; r < 2; r++, g++, dst += 16) {
                    const __m512 t = _mm512_mul_ps(_mm512_set1_ps(dd[g]), q);
                    const __m512i q2 = _mm512_and_si512(_mm512_srlv_epi32(x[r], _mm512_set1_epi32(2 * step)), three);
                    const __m512i idx = _mm512_mask_or_epi32(q2, _mm512_test_epi32_mask(hm[r], bit), q2, four);
                    _mm512_storeu_ps(dst, _mm512_permutexvar_ps(idx, t));
                }
            }
        }
    }
}

/* The eight 6-bit scales and eight mins of q4_K/q5_K as 16 bytes (scales then mins). */
static __m128i k4_scales_mins(const uint8_t *s12)
{
    uint32_t w[4];
    tm__k4_scale_min_words(s12, w);
    return _mm_loadu_si128((const __m128i *)(const void *)w);
}

/* D[g] = d * sc[g] in lanes 0..7 and M[g] = dmin * m[g] in lanes 8..15. */
static __m512 k4_dm(const uint8_t *b)
{
    const __m512 sm = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(k4_scales_mins(b + 4)));
    const __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(half(b)), _mm256_set1_ps(half(b + 2)), 1);
    return _mm512_mul_ps(sm, dd);
}

/* q4_K: per group a table T[q] = D * q - M; the pair's 32 bytes give the low-nibble group
 * (lanes pick bits 0..3 of each byte) and the high-nibble group (bits 4..7). */
static void dequant_q4_K_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q = iota16();
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_K)) {
        float dm[16]; /* broadcast from memory: loads, not shuffles */
        _mm512_storeu_ps(dm, k4_dm(b));
        const uint8_t *qs = b + 16;
        for (int p = 0; p < 4; p++, qs += 32, dst += 64) {
            const __m512 t1 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dm[2 * p]), q), _mm512_set1_ps(dm[8 + 2 * p]));
            const __m512 t2 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dm[2 * p + 1]), q), _mm512_set1_ps(dm[9 + 2 * p]));
            const __m512i x0 = u8x16(qs), x1 = u8x16(qs + 16);
            _mm512_storeu_ps(dst, _mm512_permutexvar_ps(x0, t1));
            _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(x1, t1));
            _mm512_storeu_ps(dst + 32, _mm512_permutexvar_ps(_mm512_srli_epi32(x0, 4), t2));
            _mm512_storeu_ps(dst + 48, _mm512_permutexvar_ps(_mm512_srli_epi32(x1, 4), t2));
        }
    }
}

/* q5_K: as q4_K with 32-entry tables; bit 2p (low group) or 2p+1 (high group) of qh[l] is
 * bit 4 of the index. */
static void dequant_q5_K_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 q_lo = iota16(), q_hi = _mm512_add_ps(iota16(), _mm512_set1_ps(16.0f));
    const __m512i m15 = _mm512_set1_epi32(15), b16 = _mm512_set1_epi32(16);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_K)) {
        float dm[16];
        _mm512_storeu_ps(dm, k4_dm(b));
        const __m512i h0 = u8x16(b + 16), h1 = u8x16(b + 32);
        const uint8_t *qs = b + 48;
        for (int p = 0; p < 4; p++, qs += 32, dst += 64) {
            const __m512 d1 = _mm512_set1_ps(dm[2 * p]), m1 = _mm512_set1_ps(dm[8 + 2 * p]);
            const __m512 d2 = _mm512_set1_ps(dm[2 * p + 1]), m2 = _mm512_set1_ps(dm[9 + 2 * p]);
            const __m512 t1a = _mm512_sub_ps(_mm512_mul_ps(d1, q_lo), m1);
            const __m512 t1b = _mm512_sub_ps(_mm512_mul_ps(d1, q_hi), m1);
            const __m512 t2a = _mm512_sub_ps(_mm512_mul_ps(d2, q_lo), m2);
            const __m512 t2b = _mm512_sub_ps(_mm512_mul_ps(d2, q_hi), m2);
            const __m512i x0 = u8x16(qs), x1 = u8x16(qs + 16);
            /* bit 4 of each index comes from a qh bit, tested into a mask register */
            const __mmask16 l0 = _mm512_test_epi32_mask(h0, _mm512_set1_epi32(1 << (2 * p)));
            const __mmask16 l1 = _mm512_test_epi32_mask(h1, _mm512_set1_epi32(1 << (2 * p)));
            const __mmask16 u0 = _mm512_test_epi32_mask(h0, _mm512_set1_epi32(2 << (2 * p)));
            const __mmask16 u1 = _mm512_test_epi32_mask(h1, _mm512_set1_epi32(2 << (2 * p)));
            const __m512i i0 = _mm512_mask_or_epi32(_mm512_and_si512(x0, m15), l0, _mm512_and_si512(x0, m15), b16);
            const __m512i i1 = _mm512_mask_or_epi32(_mm512_and_si512(x1, m15), l1, _mm512_and_si512(x1, m15), b16);
            const __m512i i2 = _mm512_mask_or_epi32(_mm512_srli_epi32(x0, 4), u0, _mm512_srli_epi32(x0, 4), b16);
            const __m512i i3 = _mm512_mask_or_epi32(_mm512_srli_epi32(x1, 4), u1, _mm512_srli_epi32(x1, 4), b16);
            _mm512_storeu_ps(dst, _mm512_permutex2var_ps(t1a, i0, t1b));
            _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(t1a, i1, t1b));
            _mm512_storeu_ps(dst + 32, _mm512_permutex2var_ps(t2a, i2, t2b));
            _mm512_storeu_ps(dst + 48, _mm512_permutex2var_ps(t2a, i3, t2b));
        }
    }
}

/* q6_K: 64 bytes of ql and 32 of qh build 128 six-bit values at once as bytes:
 *   bytes 0..63 of lo = ql & 15 (elements 0..63), of hi = ql >> 4 (elements 64..127);
 *   qh (broadcast to both 32-byte halves) shifted by 0/2 (lo) or 4/6 (hi) gives bits 4..5.
 * Each 16 bytes share one scale: (d * scale) is computed once (as the scalar code rounds it)
 * and multiplies the converted q - 32. */
static void q6_store16(float *dst, __m128i q8, __m512 ds)
{
    const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8));
    _mm512_storeu_ps(dst, _mm512_mul_ps(ds, v));
}

static void dequant_q6_K_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3), k32 = _mm512_set1_epi8(32);
    /* per-word shifts: the first 32 bytes of a register use one shift, the last 32 another */
    const __m512i sh_lo = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i sh_hi = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q6_K)) {
        const __m512 d = _mm512_set1_ps(half(b + 208));
        float ds[16];
        _mm512_storeu_ps(ds, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(ld128(b + 192)))));
        for (int h = 0; h < 2; h++, dst += 128) {
            const __m512i ql = _mm512_loadu_si512(b + 64 * h);
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(
                (const __m256i *)(const void *)(b + 128 + 32 * h)));
            const __m512i hlo = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh_lo), m2), 4);
            const __m512i hhi = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh_hi), m2), 4);
            const __m512i lo = _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(ql, m4), hlo), k32);
            const __m512i hi = _mm512_sub_epi8(
                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), hhi), k32);
            /* element 16k..16k+15 of this half uses scale 8h + k */
            q6_store16(dst, _mm512_extracti32x4_epi32(lo, 0), _mm512_set1_ps(ds[8 * h + 0]));
            q6_store16(dst + 16, _mm512_extracti32x4_epi32(lo, 1), _mm512_set1_ps(ds[8 * h + 1]));
            q6_store16(dst + 32, _mm512_extracti32x4_epi32(lo, 2), _mm512_set1_ps(ds[8 * h + 2]));
            q6_store16(dst + 48, _mm512_extracti32x4_epi32(lo, 3), _mm512_set1_ps(ds[8 * h + 3]));
            q6_store16(dst + 64, _mm512_extracti32x4_epi32(hi, 0), _mm512_set1_ps(ds[8 * h + 4]));
            q6_store16(dst + 80, _mm512_extracti32x4_epi32(hi, 1), _mm512_set1_ps(ds[8 * h + 5]));
            q6_store16(dst + 96, _mm512_extracti32x4_epi32(hi, 2), _mm512_set1_ps(ds[8 * h + 6]));
            q6_store16(dst + 112, _mm512_extracti32x4_epi32(hi, 3), _mm512_set1_ps(ds[8 * h + 7]));
        }
    }
}

const tm__kernels tm__kernels_dequant_avx512 = {
    .dequant = {
        [TM_TYPE_F16] = dequant_f16_avx512,
        [TM_TYPE_BF16] = dequant_bf16_avx512,
        [TM_TYPE_Q4_0] = dequant_q4_0_avx512,
        [TM_TYPE_Q4_1] = dequant_q4_1_avx512,
        [TM_TYPE_Q5_0] = dequant_q5_0_avx512,
        [TM_TYPE_Q5_1] = dequant_q5_1_avx512,
        [TM_TYPE_Q8_0] = dequant_q8_0_avx512,
        [TM_TYPE_Q2_K] = dequant_q2_K_avx512,
        [TM_TYPE_Q3_K] = dequant_q3_K_avx512,
        [TM_TYPE_Q4_K] = dequant_q4_K_avx512,
        [TM_TYPE_Q5_K] = dequant_q5_K_avx512,
        [TM_TYPE_Q6_K] = dequant_q6_K_avx512,
    },
};
