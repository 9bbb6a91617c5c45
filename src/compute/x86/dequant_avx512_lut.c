/* AVX-512 kernels for the small-code types: iq4_nl, iq4_xs, mxfp4, nvfp4 (16-entry value
 * tables), tq1_0, tq2_0, q2_0 (2-bit and ternary codes), q1_0 (one bit a weight).
 *
 * Every type here decodes as value = table[code] * scale. For each scale the 16 (or 4) possible
 * outputs are computed once with the scalar kernel's own float32 multiply, operands in the
 * scalar order, into one register; each output lane then picks its entry with vpermps
 * (_mm512_permutexvar_ps, which reads bits 0..3 of the lane's index). A lane of the table is the
 * very float the scalar code computes for that code, so the output is bit-identical. Tables of
 * 4 entries are repeated four times, so a 2-bit code may carry garbage above its two bits.
 * iq4_nl, iq4_xs and mxfp4 are dequant_lut16.h's text, shared with the AVX2 file. Built with
 * the AVX-512 flags of mk/sources.mk; only the table is exported. */
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

static __m128i ld128(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }

/* A 16-entry int8 value table as floats (exact). */
static __m512 values16(const int8_t kv[16])
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(ld128((const uint8_t *)kv)));
}

/* The 2-bit codes' values q - 1 (-1, 0, 1, 2), repeated four times. */
static __m512 codes4(void)
{
    return _mm512_set_ps(2, 1, 0, -1, 2, 1, 0, -1, 2, 1, 0, -1, 2, 1, 0, -1);
}

/* 32 elements from 16 bytes of nibbles: element j the low nibble of byte j, j + 16 the high. */
static void nibbles32(float *dst, const uint8_t *qs, __m512 t)
{
    const __m512i x = _mm512_cvtepu8_epi32(ld128(qs));
    _mm512_storeu_ps(dst, _mm512_permutexvar_ps(x, t));
    _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), t));
}

/* s * table and table * s: the scalar kernels' operand orders. */
static __m512 scaled(__m512 s, __m512 t) { return _mm512_mul_ps(s, t); }
static __m512 times(__m512 t, __m512 s) { return _mm512_mul_ps(t, s); }

#define LUT_TABLE __m512
#define LUT_SPLAT(f) _mm512_set1_ps(f)
#define LUT_NAME(type) dequant_##type##_avx512
#include "../dequant_lut16.h"

/* nvfp4: four sub-blocks of 16, each its own scale; 8 bytes give elements 0..7 (low nibbles)
 * and 8..15 (high): the two halves side by side as 16 byte indices. */
static void dequant_nvfp4_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512 kv = values16(tm__kvalues_fp4);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_nvfp4))
        for (int s = 0; s < 4; s++, dst += 16) {
            const __m128i x = _mm_loadl_epi64((const __m128i *)(const void *)(b + 4 + 8 * s));
            const __m128i idx = _mm_unpacklo_epi64(x, _mm_srli_epi16(x, 4));
            const __m512 t = times(kv, _mm512_set1_ps(tm__ue4m3_half(b[s])));
            _mm512_storeu_ps(dst, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(idx), t));
        }
}

/* q2_0: element j of each 16 is bits 2j..2j+1 of the little-endian u32 of bytes 4k..4k+3. */
static void dequant_q2_0_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m512i shifts = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q2_0)) {
        const __m512 t = _mm512_mul_ps(codes4(), _mm512_set1_ps(half(b)));
        for (int k = 0; k < 4; k++, dst += 16) {
            const __m512i w = _mm512_set1_epi32((int)tm__rd32(b + 2 + 4 * k));
            _mm512_storeu_ps(dst, _mm512_permutexvar_ps(_mm512_srlv_epi32(w, shifts), t));
        }
    }
}

/* tq2_0: for each half and shift step, 32 bytes shifted right by 2l give 32 codes. */
static void dequant_tq2_0_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_tq2_0)) {
        const __m512 t = _mm512_mul_ps(codes4(), _mm512_set1_ps(half(b + 64)));
        for (int k = 0; k < 2; k++) {
            const __m512i x0 = _mm512_cvtepu8_epi32(ld128(b + 32 * k));
            const __m512i x1 = _mm512_cvtepu8_epi32(ld128(b + 32 * k + 16));
            for (int l = 0; l < 4; l++, dst += 32) {
                const __m512i s = _mm512_set1_epi32(2 * l);
                _mm512_storeu_ps(dst, _mm512_permutexvar_ps(_mm512_srlv_epi32(x0, s), t));
                _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srlv_epi32(x1, s), t));
            }
        }
    }
}

/* Trits of 16 bytes (one per 32-bit lane), trit n of each lane given by pow3_8 = 3^n * 256:
 * the scalar kernel's ((b * 3^n) mod 256 * 3) >> 8, in 16-bit arithmetic: the low 16 bits of
 * b * 3^n * 256 are (b * 3^n mod 256) << 8, and the high half of that times 3 is the trit (the
 * lanes' upper 16 bits are 0 throughout). Then the table of (t - 1) * d. */
static __m512 trits16(__m512i bytes, __m512i pow3_8, __m512 t)
{
    const __m512i tr = _mm512_mulhi_epu16(_mm512_mullo_epi16(bytes, pow3_8), _mm512_set1_epi32(3));
    return _mm512_permutexvar_ps(tr, t);
}

/* tq1_0: qs[0..31] give elements 32n + m, qs[32..47] give 160 + 16n + m (trit n of each byte);
 * the four qh bytes give 240 + 4n + m, so that lane L takes byte L % 4, trit L / 4. */
static void dequant_tq1_0_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    static const int pow3_8[5] = { 1 << 8, 3 << 8, 9 << 8, 27 << 8, 81 << 8 };
    const __m512i qh_pow3_8 = _mm512_set_epi32(6912, 6912, 6912, 6912, 2304, 2304, 2304, 2304,
                                               768, 768, 768, 768, 256, 256, 256, 256);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_tq1_0), dst += 256) {
        const __m512 t = _mm512_mul_ps(codes4(), _mm512_set1_ps(half(b + 52)));
        const __m512i x0 = _mm512_cvtepu8_epi32(ld128(b));
        const __m512i x1 = _mm512_cvtepu8_epi32(ld128(b + 16));
        const __m512i x2 = _mm512_cvtepu8_epi32(ld128(b + 32));
        for (int k = 0; k < 5; k++) {
            const __m512i p = _mm512_set1_epi32(pow3_8[k]);
            _mm512_storeu_ps(dst + 32 * k, trits16(x0, p, t));
            _mm512_storeu_ps(dst + 32 * k + 16, trits16(x1, p, t));
            _mm512_storeu_ps(dst + 160 + 16 * k, trits16(x2, p, t));
        }
        const __m512i qh = _mm512_cvtepu8_epi32(_mm_set1_epi32((int)tm__rd32(b + 48)));
        _mm512_storeu_ps(dst + 240, trits16(qh, qh_pow3_8, t));
    }
}

/* q1_0: 16 bits of qs choose d (set) or -d (clear) for 16 elements. */
static void dequant_q1_0_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q1_0)) {
        const float d = half(b);
        const __m512 pos = _mm512_set1_ps(d), neg = _mm512_set1_ps(-d);
        for (int k = 0; k < 8; k++, dst += 16)
            _mm512_storeu_ps(dst, _mm512_mask_blend_ps((__mmask16)tm__rd16(b + 2 + 2 * k), neg, pos));
    }
}

const tm__kernels tm__kernels_dequant_avx512_lut = {
    .dequant = {
        [TM_TYPE_IQ4_NL] = dequant_iq4_nl_avx512,
        [TM_TYPE_IQ4_XS] = dequant_iq4_xs_avx512,
        [TM_TYPE_MXFP4] = dequant_mxfp4_avx512,
        [TM_TYPE_NVFP4] = dequant_nvfp4_avx512,
        [TM_TYPE_Q2_0] = dequant_q2_0_avx512,
        [TM_TYPE_TQ2_0] = dequant_tq2_0_avx512,
        [TM_TYPE_TQ1_0] = dequant_tq1_0_avx512,
        [TM_TYPE_Q1_0] = dequant_q1_0_avx512,
    },
};
