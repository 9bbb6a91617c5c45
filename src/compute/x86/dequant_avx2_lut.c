/* AVX2 kernels for the small-code types: iq4_nl, iq4_xs, mxfp4, nvfp4 (16-entry value tables),
 * tq1_0, tq2_0, q2_0 (2-bit and ternary codes), q1_0 (one bit a weight).
 *
 * As in dequant_avx512_lut.c: for each scale the possible outputs table[code] * scale are
 * computed once with the scalar kernel's own float32 multiply (operands in its order), and each
 * lane picks its entry, so the output is bit-identical. vpermps reads 3 index bits, so a
 * 16-entry table is two registers, chosen between by bit 3 of the code (vblendvps on the lane's
 * sign after a shift); 4-entry tables are repeated twice, so a 2-bit code may carry garbage
 * above its two bits. iq4_nl, iq4_xs and mxfp4 are dequant_lut16.h's text, shared with the
 * AVX-512 file. Built with the AVX2 flags of mk/sources.mk; only the table is exported. */
#include "../blocks.h"
#include "../kernels.h"
#include "../quant_tables.h"

#include <immintrin.h>
#include <string.h>

static float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

static __m128i ld64(const uint8_t *p) { return _mm_loadl_epi64((const __m128i *)(const void *)p); }

/* A 16-entry table in two halves: entries 0..7 and 8..15. */
typedef struct table16 {
    __m256 lo, hi;
} table16;

TM__INLINE table16 values16(const int8_t kv[16])
{
    const uint8_t *p = (const uint8_t *)kv;
    return (table16){ _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(ld64(p))),
                      _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(ld64(p + 8))) };
}

/* table * s and s * table: the scalar kernels' operand orders. */
TM__INLINE table16 times(table16 t, __m256 s) { return (table16){ _mm256_mul_ps(t.lo, s), _mm256_mul_ps(t.hi, s) }; }
TM__INLINE table16 scaled(__m256 s, table16 t) { return (table16){ _mm256_mul_ps(s, t.lo), _mm256_mul_ps(s, t.hi) }; }

/* Entry (bits 0..3 of each lane of idx) of a 16-entry table. */
TM__INLINE __m256 lookup16(__m256i idx, table16 t)
{
    const __m256 sel = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(t.lo, idx), _mm256_permutevar8x32_ps(t.hi, idx), sel);
}

/* 8 + 8 elements from 8 bytes of nibbles: dst[j] the low nibble of byte j, dst[far + j] the
 * high one. */
TM__INLINE void nibbles8(float *dst, size_t far, const uint8_t *q, table16 t)
{
    const __m256i x = _mm256_cvtepu8_epi32(ld64(q));
    _mm256_storeu_ps(dst, lookup16(x, t));
    _mm256_storeu_ps(dst + far, lookup16(_mm256_srli_epi32(x, 4), t));
}

/* 32 elements from 16 bytes (q4_0's order: low nibbles 0..15, high nibbles 16..31). */
TM__INLINE void nibbles32(float *dst, const uint8_t *qs, table16 t)
{
    nibbles8(dst, 16, qs, t);
    nibbles8(dst + 8, 16, qs + 8, t);
}

/* The 2-bit codes' values q - 1 (-1, 0, 1, 2), twice. */
static __m256 codes4(void) { return _mm256_set_ps(2, 1, 0, -1, 2, 1, 0, -1); }

#define LUT_TABLE table16
#define LUT_SPLAT(f) _mm256_set1_ps(f)
#define LUT_NAME(type) dequant_##type##_avx2
#include "../dequant_lut16.h"

/* nvfp4: per 16-element sub-block, 8 bytes: low nibbles elements 0..7, high 8..15. */
static void dequant_nvfp4_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const table16 kv = values16(tm__kvalues_fp4);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_nvfp4))
        for (int s = 0; s < 4; s++, dst += 16)
            nibbles8(dst, 8, b + 4 + 8 * s, times(kv, _mm256_set1_ps(tm__ue4m3_half(b[s]))));
}

/* q2_0: element j of each 8 is bits 2j..2j+1 of the little-endian u16 of bytes 2k, 2k + 1. */
static void dequant_q2_0_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256i shifts = _mm256_set_epi32(14, 12, 10, 8, 6, 4, 2, 0);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q2_0)) {
        const __m256 t = _mm256_mul_ps(codes4(), _mm256_set1_ps(half(b)));
        for (int k = 0; k < 8; k++, dst += 8) {
            const __m256i w = _mm256_set1_epi32(tm__rd16(b + 2 + 2 * k));
            _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(t, _mm256_srlv_epi32(w, shifts)));
        }
    }
}

/* tq2_0: for each half and shift step, 32 bytes shifted right by 2l give 32 codes. */
static void dequant_tq2_0_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_tq2_0)) {
        const __m256 t = _mm256_mul_ps(codes4(), _mm256_set1_ps(half(b + 64)));
        for (int k = 0; k < 2; k++) {
            __m256i x[4];
            for (int h = 0; h < 4; h++)
                x[h] = _mm256_cvtepu8_epi32(ld64(b + 32 * k + 8 * h));
            for (int l = 0; l < 4; l++, dst += 32) {
                const __m128i s = _mm_cvtsi32_si128(2 * l);
                for (int h = 0; h < 4; h++)
                    _mm256_storeu_ps(dst + 8 * h, _mm256_permutevar8x32_ps(t, _mm256_srl_epi32(x[h], s)));
            }
        }
    }
}

/* Trits of 8 bytes (one per 32-bit lane), trit n of each lane given by pow3_8 = 3^n * 256:
 * the scalar kernel's ((b * 3^n) mod 256 * 3) >> 8, in 16-bit arithmetic: the low 16 bits of
 * b * 3^n * 256 are (b * 3^n mod 256) << 8, and the high half of that times 3 is the trit (the
 * lanes' upper 16 bits are 0 throughout). Then the table of (t - 1) * d. */
static __m256 trits8(__m256i bytes, __m256i pow3_8, __m256 t)
{
    const __m256i tr = _mm256_mulhi_epu16(_mm256_mullo_epi16(bytes, pow3_8), _mm256_set1_epi32(3));
    return _mm256_permutevar8x32_ps(t, tr);
}

/* tq1_0: qs[0..31] give elements 32n + m, qs[32..47] give 160 + 16n + m; the four qh bytes give
 * 240 + 4n + m (lane L of two registers of 8: byte L % 4, trit L / 4). */
static void dequant_tq1_0_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    static const int pow3_8[5] = { 1 << 8, 3 << 8, 9 << 8, 27 << 8, 81 << 8 };
    const __m256i qh_pow3_8_lo = _mm256_set_epi32(768, 768, 768, 768, 256, 256, 256, 256);
    const __m256i qh_pow3_8_hi = _mm256_set_epi32(6912, 6912, 6912, 6912, 2304, 2304, 2304, 2304);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_tq1_0), dst += 256) {
        const __m256 t = _mm256_mul_ps(codes4(), _mm256_set1_ps(half(b + 52)));
        __m256i x[6];
        for (int h = 0; h < 6; h++)
            x[h] = _mm256_cvtepu8_epi32(ld64(b + 8 * h));
        for (int k = 0; k < 5; k++) {
            const __m256i p = _mm256_set1_epi32(pow3_8[k]);
            for (int h = 0; h < 4; h++)
                _mm256_storeu_ps(dst + 32 * k + 8 * h, trits8(x[h], p, t));
            for (int h = 0; h < 2; h++)
                _mm256_storeu_ps(dst + 160 + 16 * k + 8 * h, trits8(x[4 + h], p, t));
        }
        const __m256i qh = _mm256_cvtepu8_epi32(_mm_set1_epi32((int)tm__rd32(b + 48)));
        _mm256_storeu_ps(dst + 240, trits8(qh, qh_pow3_8_lo, t));
        _mm256_storeu_ps(dst + 248, trits8(qh, qh_pow3_8_hi, t));
    }
}

/* q1_0: each byte's 8 bits choose d (set) or -d (clear) for 8 elements. */
static void dequant_q1_0_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256i bit = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q1_0)) {
        const float d = half(b);
        const __m256 pos = _mm256_set1_ps(d), neg = _mm256_set1_ps(-d);
        for (int k = 0; k < 16; k++, dst += 8) {
            const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(b[2 + k]), bit), bit);
            _mm256_storeu_ps(dst, _mm256_blendv_ps(neg, pos, _mm256_castsi256_ps(set)));
        }
    }
}

const tm__kernels tm__kernels_dequant_avx2_lut = {
    .dequant = {
        [TM_TYPE_IQ4_NL] = dequant_iq4_nl_avx2,
        [TM_TYPE_IQ4_XS] = dequant_iq4_xs_avx2,
        [TM_TYPE_MXFP4] = dequant_mxfp4_avx2,
        [TM_TYPE_NVFP4] = dequant_nvfp4_avx2,
        [TM_TYPE_Q2_0] = dequant_q2_0_avx2,
        [TM_TYPE_TQ2_0] = dequant_tq2_0_avx2,
        [TM_TYPE_TQ1_0] = dequant_tq1_0_avx2,
        [TM_TYPE_Q1_0] = dequant_q1_0_avx2,
    },
};
