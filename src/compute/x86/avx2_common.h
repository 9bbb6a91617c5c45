/* What the AVX2 product kernels share: a half read from a block, unaligned loads, the
 * horizontal sums, the float-into-double accumulator and the f16/bf16 widening. The batched
 * kernels (matmul_avx2_q8.c, matmul_avx2_f16.c) must sum exactly as the 1-column kernels of
 * matvec_avx2.c and matvec_avx2_q8.c do (tm_matmul's columns are tm_matvec's y bit for
 * bit), so the float sum is defined once, here. Included only by files built with -mavx2
 * -mfma -mf16c. */
#ifndef TM_COMPUTE_X86_AVX2_COMMON_H
#define TM_COMPUTE_X86_AVX2_COMMON_H

#include "../blocks.h"
#include "../quant_tables.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

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

/* The f32/f16/bf16 kernels' segment: elements per flush into double (four products per lane).
 * The 1-column kernel (matvec_avx2.c) and its batched form (matmul_avx2_f16.c) must cut rows
 * alike. */
#define PLAIN_SEGMENT 128

/* Partial sums are kept in float for at most four products per lane, then added into two double
 * vectors: the float rounding stays near one rounding per product even in rows whose terms
 * cancel to a y far smaller than they are. matvec_avx2.c's f32/f16/bf16 and q8_0/q4_0/q4_K/q6_K
 * F32 kernels and matmul_avx2_f16.c's batched f16/bf16 ones flush and sum through these. */
typedef struct dacc {
    __m256d lo, hi;
} dacc;

static inline dacc acc_zero(void) { return (dacc){ _mm256_setzero_pd(), _mm256_setzero_pd() }; }

static inline void acc_add(dacc *a, __m256 f)
{
    a->lo = _mm256_add_pd(a->lo, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    a->hi = _mm256_add_pd(a->hi, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
}

static inline double acc_sum_pd(const dacc *a)
{
    const __m256d s = _mm256_add_pd(a->lo, a->hi);
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

static inline float acc_sum(const dacc *a) { return (float)acc_sum_pd(a); }

/* eight halves at p as floats: IEEE f16 (F16C), bf16 (the top 16 bits of a float) */
static inline __m256 f16x8(const uint8_t *p) { return _mm256_cvtph_ps(ld128(p)); }
static inline __m256 bf16x8(const uint8_t *p)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(ld128(p)), 16));
}

/* the 16 bytes at p as 32 nibbles: low ones in bytes 0..15, high ones in 16..31 (the element
 * order of every 32-element block of nibbles) */
static inline __m256i nibbles(const uint8_t *p)
{
    const __m128i q = ld128(p);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(15));
}

/* table values of the nibbles at p: vpshufb with the 16-entry int8 table in both lanes */
static inline __m256i looked_up(const int8_t table[16], const uint8_t *p)
{
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(ld128(table)), nibbles(p));
}

/* byte j = 0xff when bit j of the u32 at p is set, else 0 */
static inline __m256i bits_set(const uint8_t *p)
{
    uint32_t u;
    memcpy(&u, p, sizeof u);
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                             0x0101010101010101, 0);
    const __m256i v = _mm256_or_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)u), spread),
                                      _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi8(-1));
}

/* byte j = 0x10 when bit j of the u32 at p is set, else 0 (q5's fifth bits) */
static inline __m256i fifth_bits(const uint8_t *p)
{
    return _mm256_and_si256(bits_set(p), _mm256_set1_epi8(0x10));
}

/* A 32-element block's codes as 32 bytes in element order, for the 8-bit kernels (matvec_avx2_q8.c,
 * matmul_avx2_q8.c) and the float32 ones (matvec_avx2.c) alike: q4_1's and q5_1's unsigned,
 * q5_0's less 16, iq4_nl's and mxfp4's the int8 table values of the nibbles; and the scales
 * ggml applies to them. */
static inline __m256i q4_1_bytes(const uint8_t *b) { return nibbles(b + 4); }
static inline __m256i q5_0_bytes(const uint8_t *b)
{
    return _mm256_sub_epi8(_mm256_or_si256(nibbles(b + 6), fifth_bits(b + 2)), _mm256_set1_epi8(16));
}
static inline __m256i q5_1_bytes(const uint8_t *b)
{
    return _mm256_or_si256(nibbles(b + 8), fifth_bits(b + 4));
}
static inline __m256i iq4_nl_bytes(const uint8_t *b) { return looked_up(tm__kvalues_iq4nl, b + 2); }
static inline __m256i mxfp4_bytes(const uint8_t *b) { return looked_up(tm__kvalues_fp4, b + 1); }
static inline float d_half(const uint8_t *b) { return half(b); }
static inline float d_e8m0(const uint8_t *b) { return tm__e8m0_half(b[0]); }

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

/* (lane 0 + lane 1) + (lane 2 + lane 3) */
static inline double hsum_pd(__m256d v)
{
    const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(_mm_unpacklo_pd(t, t), _mm_unpackhi_pd(t, t)));
}

/* mxfp4, four blocks at b against the four q8_0 x blocks at x, s[k] the int32 lanes of block
 * k's codes . x: acc + e_k dx_k (sum of s[k]) in double lane k (e_k dx_k exact: a power of two
 * times a float; one rounding for the product with the sum, one for the add) */
static inline __m256d mxfp4_quad(__m256d acc, const uint8_t *b, const tm__q8_0x *x,
                                 const __m256i s[4])
{
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    /* tm__e8m0_half(e) is 2^(e - 128) for every byte e: written into a double's exponent field
     * (e - 128 + 1023), four at once (four scalar conversions assembled into a vector ran at
     * 0.85-0.87 of ggml's speed, this at 0.92-0.98: Zen 4, W in L3) */
    const size_t bb = sizeof(tm__block_mxfp4);
    const __m256i eb = _mm256_setr_epi64x(b[0], b[bb], b[2 * bb], b[3 * bb]);
    const __m256d e = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(eb, _mm256_set1_epi64x(895)), 52));
    const __m256d d = _mm256_setr_pd(x[0].d, x[1].d, x[2].d, x[3].d);
    return _mm256_add_pd(acc, _mm256_mul_pd(_mm256_mul_pd(e, d), _mm256_cvtepi32_pd(sums)));
}

/* ---- 8-bit codes times x's codes (the integer kernels) ------------------------------------ */
/* the eight bytes at p as eight int32 */
static inline __m256i zx8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* int16 pairs to int32 lanes */
static inline __m256i pairs_i32(__m256i p16) { return _mm256_madd_epi16(p16, _mm256_set1_epi16(1)); }

/* unsigned codes u (0..127) times signed x, in int16 pairs */
static inline __m256i mul_u(__m256i u, __m256i x) { return _mm256_maddubs_epi16(u, x); }

/* signed codes c times signed x, in int16 pairs (ggml's sign trick) */
static inline __m256i mul_s(__m256i c, __m256i x)
{
    return _mm256_maddubs_epi16(_mm256_sign_epi8(c, c), _mm256_sign_epi8(x, c));
}

/* ---- the 8-bit kernels' float sum for blocks under 256 elements ---------------------------- */
/* matvec_avx2_q8.c's kernels for the 32-, 64- and 128-element types and matmul_avx2_q8.c's
 * batched forms of them sum alike: each block's int32 lanes (codes . x) are multiply-added by
 * the float scale (d dx) into eight float lanes (an offset's m dx (sum of x) into a second
 * eight), for a segment of blocks in which no float lane takes more than Q8_CHAIN
 * multiply-adds (the row's last segment shorter); the segment's two vectors are added and go
 * into double (acc_add), summed at the row's end (acc_sum). */
#define Q8_CHAIN 8

static inline __m256 lanes_fma(__m256 s, __m256i isum, __m256 acc)
{
    return _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(isum), acc);
}

static inline __m256 scaled_fma(float s, __m256i isum, __m256 acc)
{
    return lanes_fma(_mm256_set1_ps(s), isum, acc);
}

/* the four halves at p as floats, converted from memory (p + 8 must not pass the block) */
static inline __m128 halves4(const uint8_t *p)
{
    return _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* the half at p as a float */
static inline float half4(const uint8_t *p) { return _mm_cvtss_f32(halves4(p)); }

/* The floats after x's nx q8_0 blocks at x in this path's own x layouts (matvec_avx2_q8.c's
 * x_q8 kernels): the block sums dx (sum of codes) for q4_1 and q5_1, q1_0's h */
static inline const float *x_sums(const tm__q8_0x *x, size_t nx)
{
    return (const float *)(const void *)(x + nx);
}


/* A 256-element block's int32 lanes times s (d dx: a float times a half, exact in double),
 * lanes i and i + 4 added (exact), into four double lanes: one double rounding a block, as
 * good as the exact block sum; hsum_pd at the row's end */
static inline __m256d block_fma_pd(__m256d acc, double s, __m256i isum)
{
    const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(isum), _mm256_extracti128_si256(isum, 1));
    return _mm256_fmadd_pd(_mm256_set1_pd(s), _mm256_cvtepi32_pd(h), acc);
}

/* and its mins: acc - m (the four int32 lanes of mins . x's sums), m (dmin dx) exact in double,
 * one double rounding a lane */
static inline __m256d block_mins_fma_pd(__m256d acc, double m, __m128i pm)
{
    return _mm256_fmadd_pd(_mm256_set1_pd(-m), _mm256_cvtepi32_pd(pm), acc);
}

#endif /* TM_COMPUTE_X86_AVX2_COMMON_H */
