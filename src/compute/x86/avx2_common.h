/* What the AVX2 product kernels share: a half read from a block, unaligned loads, and the
 * horizontal sums. matmul_avx2_q8.c's batched kernels must sum exactly as the 1-column kernels
 * of matvec_avx2.c and matvec_avx2_q8.c do (tm_matmul's columns are tm_matvec's y bit for
 * bit), so the float sum is defined once, here. Included only by files built with -mavx2
 * -mfma -mf16c. */
#ifndef TM_COMPUTE_X86_AVX2_COMMON_H
#define TM_COMPUTE_X86_AVX2_COMMON_H

#include "../blocks.h"

#include <immintrin.h>
#include <stdint.h>

static inline float half(const uint8_t *p) { return _cvtsh_ss(tm__rd16(p)); }
static inline __m128i ld128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
static inline __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* the eight float lanes: (low half + high half), then pairs, then the last two */
static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* an integer sum is exact in any order */
static inline int32_t hsum128(__m128i s)
{
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

static inline int32_t hsum_epi32(__m256i v)
{
    return hsum128(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

#endif /* TM_COMPUTE_X86_AVX2_COMMON_H */
