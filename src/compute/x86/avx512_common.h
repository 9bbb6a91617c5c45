/* What the AVX-512 product kernels share: a half read from a block, unaligned loads, the
 * float-into-double accumulator, the f32/f16/bf16 widening with a mask, q6_K's codes, and
 * TM_MATVEC_Q8's per-block steps for q8_0, q4_K and q6_K. The batched kernels
 * (matmul_avx512_*.c) must sum exactly as the 1-column kernels of matvec_avx512.c do
 * (tm_matmul's columns are tm_matvec's y bit for bit), so these are defined once, here.
 * Included only by files built with the AVX-512 flags of mk/sources.mk. */
#ifndef TM_COMPUTE_X86_AVX512_COMMON_H
#define TM_COMPUTE_X86_AVX512_COMMON_H

#include "../blocks.h"
#include "../kernels.h"

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

/* Float partial sums of at most four products per lane (eight in the f32/f16/bf16 kernels),
 * added into two double vectors. */
/* The f32/f16/bf16 kernels' segment: elements per flush into double (64 a step, so eight
 * products per lane; ten roundings a term, within the F32 bound's sixteen). The 1-column kernel
 * (matvec_avx512.c) and its batched form (matmul_avx512_f16.c) must cut rows alike. */
#define PLAIN_SEGMENT 512
typedef struct dacc {
    __m512d lo, hi;
} dacc;

static inline dacc acc_zero(void) { return (dacc){ _mm512_setzero_pd(), _mm512_setzero_pd() }; }

static inline void acc_add(dacc *a, __m512 f)
{
    a->lo = _mm512_add_pd(a->lo, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
    a->hi = _mm512_add_pd(a->hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1)));
}

static inline double acc_sum_pd(const dacc *a)
{
    return _mm512_reduce_add_pd(_mm512_add_pd(a->lo, a->hi));
}

static inline float acc_sum(const dacc *a) { return (float)acc_sum_pd(a); }

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

/* ---- TM_MATVEC_Q8's blocks ---------------------------------------------------------------- */

/* Each 8-bit kernel is split in two here, used alike by the 1-column kernels (matvec_avx512.c)
 * and the batched ones (matmul_avx512_q8.c), so that the two cannot drift: *_unpack forms a
 * block's codes and scales from W alone, once; *_fma takes them with one column's x block and
 * does every float operation of that column's sum for the block. The 1-column kernel calls
 * both per block; the batched kernel calls *_unpack once and *_fma per column. Their loops are
 * unrolled (GCC unroll): at -O2 a rolled loop over an unpacked block kept it on the stack. */

/* Signed codes c for maddubs (one operand must be unsigned; there is no sign_epi8 on 512 bits):
 * |c| and where c is negative, formed once; per x, |c| times x with c's sign, summed in pairs to
 * int16 (|c| <= 128, |x| <= 127: no pair saturates). */
typedef struct signed_codes {
    __m512i abs;
    __mmask64 neg;
} signed_codes;

static inline signed_codes with_signs(__m512i c)
{
    return (signed_codes){ _mm512_abs_epi8(c), _mm512_movepi8_mask(c) };
}

static inline __m512i pairs_s(signed_codes c, __m512i x)
{
    return _mm512_maddubs_epi16(c.abs, _mm512_mask_sub_epi8(x, c.neg, _mm512_setzero_si512(), x));
}

/* q8_0 two blocks at a time: q8_0_pair_unpack gives the pair's signed codes, block 0 in bytes
 * 0..31 and block 1 in 32..63; the multiply-add of one column is q8_0x_pair_fma's. */
static inline signed_codes q8_0_pair_unpack(const uint8_t *b)
{
    return with_signs(join(ld256(b + 2), ld256(b + sizeof(tm__block_q8_0) + 2)));
}

/* acc + (d dx) (codes . x) for each block of the pair (scales d0, d1), block 0's in lanes 0..7
 * and block 1's in 8..15; x the column's two blocks */
static inline __m512 q8_0x_pair_fma(signed_codes q, float d0, float d1, const tm__q8_0x *x,
                                    __m512 acc)
{
    const __m512i qx = join(ld256(x[0].qs), ld256(x[1].qs));
    const __m512 s = _mm512_cvtepi32_ps(_mm512_madd_epi16(pairs_s(q, qx), _mm512_set1_epi16(1)));
    const __m512 dd =
        _mm512_insertf32x8(_mm512_set1_ps(d0 * x[0].d), _mm256_set1_ps(d1 * x[1].d), 1);
    return _mm512_fmadd_ps(dd, s, acc);
}

/* an odd last block, with 32-byte vectors: its codes |c| and c (for the signs) ... */
typedef struct signed_codes256 {
    __m256i abs, sign;
} signed_codes256;

static inline signed_codes256 with_signs256(__m256i c)
{
    return (signed_codes256){ _mm256_sign_epi8(c, c), c };
}

static inline signed_codes256 q8_0_last_unpack(const uint8_t *b)
{
    return with_signs256(ld256(b + 2));
}

/* ... and its term (d dx) (codes . x), d its scale, added to the column's sum by the caller */
static inline float q8_0x_last_term(signed_codes256 q, float d, const tm__q8_0x *x)
{
    const __m256i p = _mm256_maddubs_epi16(q.abs, _mm256_sign_epi8(ld256(x->qs), q.sign));
    const __m256i s = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
    return d * x->d * (float)_mm512_reduce_add_epi32(_mm512_zextsi256_si512(s)); /* exact */
}

/* int16 lanes: scale a of the eight in s16 (the eight as int16 in every 128-bit lane) in the
 * low 256 bits, scale b in the high; a and b constants, so the pick is one vector constant and
 * this one vpshufb (a broadcast and an insert of each scale cost Zen 4 three) */
static inline __m512i two_scales(__m512i s16, int a, int b)
{
    const __m512i pick = join(_mm256_set1_epi16((short)(0x0100 + 0x0202 * a)),
                              _mm256_set1_epi16((short)(0x0100 + 0x0202 * b)));
    return _mm512_shuffle_epi8(s16, pick);
}

/* q4_K: 64 code bytes (groups 4h .. 4h+3) per half h: the low nibbles are groups 4h and 4h+2,
 * the high nibbles 4h+1 and 4h+3, beside the scales of those groups (two_scales); the eight
 * mins as int16, d and dmin. */
typedef struct q4_K_unpacked {
    __m512i lo[2], hi[2], sc_lo[2], sc_hi[2];
    __m128i mins;
    float d, dmin;
} q4_K_unpacked;

static inline q4_K_unpacked q4_K_unpack(const uint8_t *b)
{
    const __m512i m4 = _mm512_set1_epi8(15);
    uint32_t w4[4];
    tm__k4_scale_min_words(b + 4, w4);
    const uint8_t *sm = (const uint8_t *)w4;
    q4_K_unpacked k;
    k.mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(sm + 8)));
    const __m512i s16 =
        _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)sm)));
    _Pragma("GCC unroll 4") for (int h = 0; h < 2; h++) {
        const __m512i q = ld512(b + 16 + 64 * h);
        k.lo[h] = _mm512_and_si512(q, m4);
        k.hi[h] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        k.sc_lo[h] = two_scales(s16, 4 * h, 4 * h + 2);
        k.sc_hi[h] = two_scales(s16, 4 * h + 1, 4 * h + 3);
    }
    k.d = half(b);
    k.dmin = half(b + 2);
    return k;
}

/* one column: acc + (d dx) (the int32 lanes of sum sc (codes . x)), accm + (dmin dx) (the mins
 * against x's 32-sums, in int16) */
static inline void q4_K_fma(const q4_K_unpacked *k, const tm__q8_Kx *x, __m512 *acc,
                            __m512 *accm)
{
    const __m128i xs32 = _mm_hadd_epi16(ld128(x->bsums), ld128(x->bsums + 8));
    const __m512i pm = _mm512_zextsi128_si512(_mm_madd_epi16(k->mins, xs32));
    __m512i isum = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int h = 0; h < 2; h++) {
        const int8_t *xs = x->qs + 128 * h;
        const __m512i plo = _mm512_maddubs_epi16(k->lo[h], join(ld256(xs), ld256(xs + 64)));
        const __m512i phi = _mm512_maddubs_epi16(k->hi[h], join(ld256(xs + 32), ld256(xs + 96)));
        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(plo, k->sc_lo[h]));
        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(phi, k->sc_hi[h]));
    }
    *acc = _mm512_fmadd_ps(_mm512_set1_ps(k->d * x->d), _mm512_cvtepi32_ps(isum), *acc);
    *accm = _mm512_fmadd_ps(_mm512_set1_ps(k->dmin * x->d), _mm512_cvtepi32_ps(pm), *accm);
}

/* q6_K: codes unsigned (q + 32), 64 per vector (run r: elements 64r .. 64r+63), beside the
 * scale of each int16 lane's 16-element group; the 16 scales as int16, d. */
typedef struct q6_K_unpacked {
    __m512i codes[4], sc[4];
    __m256i sc16;
    float d;
} q6_K_unpacked;

static inline q6_K_unpacked q6_K_unpack(const uint8_t *b)
{
    /* int16 lane j (codes 2j, 2j+1) of a 64-code vector is in group j / 8 of the vector's four */
    const __m512i group_of_lane = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2,
                                                   1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    q6_K_unpacked k;
    k.sc16 = _mm256_cvtepi8_epi16(ld128(b + 192));
    const __m512i scales = join(k.sc16, k.sc16); /* twice: permutexvar indexes 32 lanes */
    _Pragma("GCC unroll 4") for (int h = 0; h < 2; h++)
        q6_K_codes(b + 64 * h, b + 128 + 32 * h, &k.codes[2 * h], &k.codes[2 * h + 1]);
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        k.sc[r] = _mm512_permutexvar_epi16(
            _mm512_add_epi16(group_of_lane, _mm512_set1_epi16((short)(4 * r))), scales);
    k.d = half(b + 208);
    return k;
}

/* one column: acc + (d dx) (the int32 lanes of sum sc (codes . x), less the 32 sum(sc x) the
 * unsigned codes added, from x's 16-sums) */
static inline __m512 q6_K_fma(const q6_K_unpacked *k, const tm__q8_Kx *x, __m512 acc)
{
    const __m256i bias = _mm256_slli_epi32(_mm256_madd_epi16(k->sc16, ld256(x->bsums)), 5);
    __m512i isum = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), bias));
    _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
        const __m512i p = _mm512_maddubs_epi16(k->codes[r], ld512(x->qs + 64 * r));
        isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p, k->sc[r]));
    }
    return _mm512_fmadd_ps(_mm512_set1_ps(k->d * x->d), _mm512_cvtepi32_ps(isum), acc);
}

#endif /* TM_COMPUTE_X86_AVX512_COMMON_H */
