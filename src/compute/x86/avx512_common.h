/* What the AVX-512 product kernels share: a half read from a block, unaligned loads, the
 * float-into-double accumulator, the f32/f16/bf16 widening with a mask, q6_K's codes and the
 * signed maddubs. The batched kernels (matmul_avx512_*.c) must sum exactly as the 1-column
 * kernels of matvec_avx512.c do (tm_matmul's columns are tm_matvec's y bit for bit), so these
 * are defined once, here. Included only by files built with the AVX-512 flags of mk/sources.mk. */
#ifndef TM_COMPUTE_X86_AVX512_COMMON_H
#define TM_COMPUTE_X86_AVX512_COMMON_H

#include "../blocks.h"

#include <immintrin.h>
#include <stdint.h>

static inline float half(const uint8_t *p) { return _cvtsh_ss(tm__rd16(p)); }
static inline __m128i ld128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline __m512i ld512(const void *p) { return _mm512_loadu_si512(p); }
/* a at bytes 0..31, b at 32..63 */
static inline __m512i join(__m256i a, __m256i b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

static inline __m512 i8x16(__m128i v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v)); }

/* Float partial sums of at most four products per lane, added into two double vectors. */
typedef struct dacc {
    __m512d lo, hi;
} dacc;

static inline dacc acc_zero(void) { return (dacc){ _mm512_setzero_pd(), _mm512_setzero_pd() }; }

static inline void acc_add(dacc *a, __m512 f)
{
    a->lo = _mm512_add_pd(a->lo, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
    a->hi = _mm512_add_pd(a->hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1)));
}

static inline float acc_sum(const dacc *a)
{
    return (float)_mm512_reduce_add_pd(_mm512_add_pd(a->lo, a->hi));
}

/* sixteen f32, f16 or bf16 at p as floats, the lanes outside k zero (a masked load reads
 * nothing there: a row's tail never reads past the row) */
static inline __m512 f32x16(const uint8_t *p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }
static inline __m512 f16x16(const uint8_t *p, __mmask16 k)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p));
}
static inline __m512 bf16x16(const uint8_t *p, __mmask16 k)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, p)), 16));
}

/* q6_K: the codes of one 128-element half as two 64-byte vectors, bytes 0..63:
 * lo = elements 0..63 (low ql nibbles), hi = elements 64..127 (high nibbles). */
static inline void q6_K_codes(const uint8_t *ql, const uint8_t *qh, __m512i *lo, __m512i *hi)
{
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
    const __m512i l = ld512(ql);
    const __m256i h = ld256(qh);
    const __m512i hb = join(h, _mm256_srli_epi16(h, 2)); /* bits 0-1 of each byte: runs 0, 1 */
    *lo = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(hb, m2), 4));
    *hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                          _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), m2), 4));
}

/* |a| (unsigned) times b with a's sign, summed in pairs to int16 (no sign_epi8 on 512 bits) */
static inline __m512i maddubs_signed(__m512i a, __m512i b)
{
    const __m512i sb = _mm512_mask_sub_epi8(b, _mm512_movepi8_mask(a), _mm512_setzero_si512(), b);
    return _mm512_maddubs_epi16(_mm512_abs_epi8(a), sb);
}

/* int16 lanes: a in the low 256 bits, b in the high */
static inline __m512i two_scales(unsigned a, unsigned b)
{
    return join(_mm256_set1_epi16((short)a), _mm256_set1_epi16((short)b));
}

#endif /* TM_COMPUTE_X86_AVX512_COMMON_H */
