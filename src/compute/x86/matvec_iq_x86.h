/* TM_MATVEC_Q8 kernels for the grid i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s,
 * iq1_m) and the ternary types (tq1_0, tq2_0), x as q8_K: ggml's integer scheme, each
 * 256-element block's integer sums reduced to one exact int32 that enters the row's sum in
 * double with one rounding (see matvec_avx2_q8.c). A template in AVX2 intrinsics: included by
 * matvec_avx2_iq.c (IQ_ISA avx2, the AVX2 flags) and matvec_avx512_iq.c (IQ_ISA avx512, the
 * AVX-512 flags: the same instructions with 32 vector registers and EVEX forms), each under its
 * own table and kernel names, with the same results bit for bit. */
#ifndef IQ_ISA
#error "define IQ_ISA (avx2, avx512) before including matvec_iq_x86.h"
#endif
#include "../blocks.h"
#include "../kernels.h"
#include "../matvec_unpack.h"
#include "../quant_tables.h"
#include "avx2_common.h"
#include "prefetch.h"

#include <immintrin.h>
#include <string.h>

#define IQ_CAT_(a, b) a##b
#define IQ_CAT(a, b) IQ_CAT_(a, b)
/* the kernel of type on this file's path: dot_iq2_xs_q8_avx2 */
#define IQ_KERNEL(type) IQ_CAT(dot_##type##_q8_, IQ_ISA)

/* ---- the grid i-quants: grid lookup and signs in registers (ggml's scheme) ---------------- */

/* A block's weights are d f (2k + 1) (+-grid byte) (iq1: d (2k + 1) (g + delta), g in -1..1 and
 * delta +-1/8, i.e. d (2k + 1) (8g +- 1) / 8), exact in float as the decoders form them: so
 * the block is d f dx times an exact integer sum over its groups of (2k + 1) (codes . x), one
 * rounding in double. Each group of 32 is four 8-byte grid entries (iq3: eight 4-byte ones)
 * put into one register by scalar index arithmetic, broadcasts from memory and blends (one
 * vpgather a group, and one for iq3_xxs's four sign rows, ran at 0.67-0.89 of ggml's speed on
 * an AMD EPYC (Zen 4), whose gathers are slow, this at 0.93-1.13; W from DRAM, BENCHMARKS.md);
 * the signs (iq2, iq3) go onto x's codes as +-1 bytes (vpsignb), the magnitudes stay unsigned
 * for maddubs (pairs at most 2 * 62 * 127), and the group's scales come from a vector of the
 * block's eight (or sixteen) 2k + 1 formed once per block: S holds in word g of its low lane the
 * scale of elements 0..15 of group g, in word g of its high lane that of elements 16..31. */

/* the four bytes at p in every 32-bit lane (a broadcast from memory, no port-5 shuffle) */
static __m256i bcast32(const uint8_t *p) { return _mm256_set1_epi32((int)tm__rd32(p)); }

/* the four 8-byte entries t[i0..i3] as one register: a load and three broadcasts from memory,
 * blended (no port-5 inserts) */
static __m256i entries4(const uint64_t *t, unsigned i0, unsigned i1, unsigned i2, unsigned i3)
{
    __m256i v = _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(const void *)(t + i0)));
    v = _mm256_blend_epi32(v, _mm256_set1_epi64x((long long)t[i1]), 0x0c);
    v = _mm256_blend_epi32(v, _mm256_set1_epi64x((long long)t[i2]), 0x30);
    return _mm256_blend_epi32(v, _mm256_set1_epi64x((long long)t[i3]), 0xc0);
}

/* the eight 4-byte entries t[q[j] | (bit j of h) << 8] (j = 0..7) as one register, the same way */
static __m256i entries8(const uint32_t *t, const uint8_t *q, unsigned h)
{
#define ENTRY(j) ((int)t[q[j] | (h << (8 - (j)) & 256)])
    __m256i v = _mm256_castsi128_si256(_mm_cvtsi32_si128(ENTRY(0)));
    v = _mm256_blend_epi32(v, _mm256_set1_epi32(ENTRY(1)), 0x02);
    v = _mm256_blend_epi32(v, _mm256_set1_epi32(ENTRY(2)), 0x04);
    v = _mm256_blend_epi32(v, _mm256_set1_epi32(ENTRY(3)), 0x08);
    v = _mm256_blend_epi32(v, _mm256_set1_epi32(ENTRY(4)), 0x10);
    v = _mm256_blend_epi32(v, _mm256_set1_epi32(ENTRY(5)), 0x20);
    v = _mm256_blend_epi32(v, _mm256_set1_epi32(ENTRY(6)), 0x40);
    return _mm256_blend_epi32(v, _mm256_set1_epi32(ENTRY(7)), 0x80);
#undef ENTRY
}

/* group g's scales from the block's S: word g of each lane in every word of that lane */
static __m256i group_scales(__m256i s, unsigned g)
{
    return _mm256_shuffle_epi8(s, _mm256_set1_epi16((short)(0x0100 + 0x0202 * g)));
}

/* (mag . (x signed by sgn)) per half-group, times the half-group scales, as int32 lanes */
static __m256i grid_group(__m256i mag, __m256i sgn, const int8_t *xs, __m256i scales)
{
    return _mm256_madd_epi16(mul_u(mag, _mm256_sign_epi8(ld256(xs), sgn)), scales);
}

/* 2k + 1 of eight int16 k as S (the same scale for a whole group): in both lanes */
static __m256i odd_uniform(__m128i k)
{
    return _mm256_broadcastsi128_si256(_mm_add_epi16(_mm_add_epi16(k, k), _mm_set1_epi16(1)));
}

/* S of iq2_xs and iq2_s: the low nibbles of the eight bytes at p for elements 0..15, the high
 * ones for 16..31, each 2k + 1 */
static __m256i odd_nibble_scales(const uint8_t *p)
{
    const __m128i q = _mm_loadl_epi64((const __m128i *)(const void *)p), m4 = _mm_set1_epi8(15);
    const __m256i k = _mm256_cvtepu8_epi16(
        _mm_unpacklo_epi64(_mm_and_si128(q, m4), _mm_and_si128(_mm_srli_epi16(q, 4), m4)));
    return _mm256_add_epi16(_mm256_add_epi16(k, k), _mm256_set1_epi16(1));
}

/* S of iq2_xxs and iq3_xxs from the eight group words A (in group order): 2 (a >> 28) + 1 */
static __m256i odd_top_nibbles(__m256i a)
{
    const __m256i k = _mm256_srli_epi32(a, 28);
    const __m256i s = _mm256_permute4x64_epi64(_mm256_packs_epi32(k, k), 0x88);
    return _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
}

/* +-1 bytes from the 32 sign bits broadcast in v: -1 at element j where bit j is set */
static __m256i bit_signs(__m256i v)
{
    const __m256i rep = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                           0x0303030303030303);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201u);
    const __m256i m = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, rep), bit), bit);
    return _mm256_or_si256(m, _mm256_set1_epi8(1));
}

/* iq2_xxs, iq3_xxs: the +-1 bytes of tm__ksigns_iq2xs[i] (i and its parity as bit 7) for each
 * 7-bit index i, built by the preprocessor with matvec_unpack.h's MASK_ROW */
#define KSIGN(i) ((i) | (((i) ^ (i) >> 1 ^ (i) >> 2 ^ (i) >> 3 ^ (i) >> 4 ^ (i) >> 5 ^ (i) >> 6) & 1) << 7)
#define KSIGN_PM(i) (MASK_ROW(KSIGN(i)) | 0x0101010101010101u)
#define KSIGN_4(i) KSIGN_PM(i), KSIGN_PM((i) + 1), KSIGN_PM((i) + 2), KSIGN_PM((i) + 3)
#define KSIGN_16(i) KSIGN_4(i), KSIGN_4((i) + 4), KSIGN_4((i) + 8), KSIGN_4((i) + 12)
#define KSIGN_64(i) KSIGN_16(i), KSIGN_16((i) + 16), KSIGN_16((i) + 32), KSIGN_16((i) + 48)
static const uint64_t ksign_pm[128] = { KSIGN_64(0), KSIGN_64(64) };
#undef KSIGN_64
#undef KSIGN_16
#undef KSIGN_4
#undef KSIGN_PM
#undef KSIGN

/* the four sign rows of a group from the 7-bit indices in bits 0..27 of its word a */
static __m256i ksigns(uint32_t a)
{
    return entries4(ksign_pm, a & 127, a >> 7 & 127, a >> 14 & 127, a >> 21 & 127);
}

/* y = sum over blocks of dx d f isum, d the half whose bits are h_of(b), isum the block's exact
 * integer sum (of the int32 lanes block(b, x)): four blocks at a time, their four sums in one
 * vector (hadds), each times its exact dx d f in a double lane (one rounding for the product,
 * one for the add); the last n mod 4 blocks in a double of their own, added last. */
static __m256d quad_add(__m256d acc, const __m256i s[4], __m128 dx, __m128i dh, double f)
{
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    const __m256d scale = _mm256_mul_pd(_mm256_mul_pd(_mm256_cvtps_pd(dx), _mm256_cvtps_pd(_mm_cvtph_ps(dh))),
                                        _mm256_set1_pd(f));
    return _mm256_add_pd(acc, _mm256_mul_pd(scale, _mm256_cvtepi32_pd(sums)));
}

#define DOT_BLOCKS(type, f, block, h_of)                                                      \
    static float IQ_KERNEL(type)(const void *w, const void *xq, size_t n_blocks)             \
    {                                                                                         \
        const size_t bb = sizeof(tm__block_##type);                                           \
        const uint8_t *b = w;                                                                 \
        const tm__q8_Kx *x = xq;                                                              \
        __m256d acc4 = _mm256_setzero_pd();                                                   \
        size_t i = 0;                                                                         \
        for (; i + 4 <= n_blocks; i += 4, b += 4 * bb, x += 4) {                              \
            prefetch_ahead(b, 4 * bb);                                                        \
            const __m256i s[4] = { block(b, x), block(b + bb, x + 1), block(b + 2 * bb, x + 2), \
                                   block(b + 3 * bb, x + 3) };                                \
            acc4 = quad_add(acc4, s, _mm_setr_ps(x[0].d, x[1].d, x[2].d, x[3].d),             \
                            _mm_setr_epi16((short)h_of(b), (short)h_of(b + bb), (short)h_of(b + 2 * bb), \
                                           (short)h_of(b + 3 * bb), 0, 0, 0, 0), (f));       \
        }                                                                                     \
        double acc = 0.0;                                                                     \
        for (; i < n_blocks; i++, b += bb, x++) {                                             \
            prefetch_ahead(b, bb);                                                            \
            acc += (double)x->d * (double)_cvtsh_ss(h_of(b)) * (f) * hsum_epi32(block(b, x)); \
        }                                                                                     \
        return (float)(hsum_pd(acc4) + acc);                                                  \
    }

/* iq2_xxs: group g at 2 + 8g, four grid bytes and a u32 of four sign indices and the scale */
TM__INLINE __m256i iq2_xxs_block(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m256i a = _mm256_i32gather_epi32((const int *)(const void *)(b + 6),
                                             _mm256_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56), 1);
    const __m256i s = odd_top_nibbles(a);
    __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; g++) {
        const uint8_t *rec = b + 2 + 8 * g;
        isum = _mm256_add_epi32(isum, grid_group(entries4(tm__iq2xxs_grid, rec[0], rec[1], rec[2], rec[3]),
                                                 ksigns(tm__rd32(rec + 4)),
                                                 x->qs + 32 * g, group_scales(s, g)));
    }
    return isum;
}

/* iq2_xs: sixteen u16 (9-bit grid index, 7-bit sign index) in q, as sign bytes (the index and
 * its parity as bit 7) in the low byte of each u16: the parity of the 7 bits is that of the
 * low nibble of (bits ^ bits >> 4), looked up */
static __m256i iq2_xs_sign_bytes(__m256i q)
{
    const __m256i parity = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,
                                            0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i s7 = _mm256_srli_epi16(q, 9);
    return _mm256_or_si256(s7, _mm256_shuffle_epi8(parity, _mm256_xor_si256(s7, _mm256_srli_epi16(q, 13))));
}

TM__INLINE __m256i iq2_xs_block(const uint8_t *b, const tm__q8_Kx *x)
{
    /* the 32 sign bytes: lane 0 groups 0, 1, 4, 5, lane 1 groups 2, 3, 6, 7 (packus) */
    const __m256i p = _mm256_packus_epi16(iq2_xs_sign_bytes(ld256(b + 2)), iq2_xs_sign_bytes(ld256(b + 34)));
    const __m256i plo = _mm256_permute4x64_epi64(p, 0x44), phi = _mm256_permute4x64_epi64(p, 0xee);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201u);
    const __m256i s = odd_nibble_scales(b + 66);
    __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; g++) {
        const uint8_t *q = b + 2 + 8 * g;
        const __m256i mag = entries4(tm__iq2xs_grid, tm__rd16(q) & 511, tm__rd16(q + 2) & 511,
                                     tm__rd16(q + 4) & 511, tm__rd16(q + 6) & 511);
        const char o = (char)(4 * (g % 2 + 2 * (g / 4)));
        const __m256i rep = _mm256_setr_epi8(o, o, o, o, o, o, o, o, o + 1, o + 1, o + 1, o + 1, o + 1, o + 1, o + 1, o + 1,
                                             o + 2, o + 2, o + 2, o + 2, o + 2, o + 2, o + 2, o + 2, o + 3, o + 3, o + 3, o + 3, o + 3, o + 3, o + 3, o + 3);
        const __m256i sb = _mm256_shuffle_epi8(g % 4 < 2 ? plo : phi, rep);
        const __m256i sgn = _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(sb, bit), bit), _mm256_set1_epi8(1));
        isum = _mm256_add_epi32(isum, grid_group(mag, sgn, x->qs + 32 * g, group_scales(s, g)));
    }
    return isum;
}

/* iq2_s, iq1_s, iq1_m: a block's 32 grid indices as u16, idx[4g + l] for sub-group l of group
 * g: the bytes at qs, each with high bits from the block's qh (16 bytes in both lanes of qh):
 * a shuffle (pick0 for indices 0..15, pick1 for 16..31) puts the qh byte or bytes of each
 * index in its u16 lane, a multiply by mul shifts each left by its own count, then masked and
 * shifted right by shift */
static void grid_indices(uint16_t idx[32], const uint8_t *qs, __m256i qh, __m256i pick0,
                         __m256i pick1, __m256i mul, int mask, int shift)
{
    for (int h = 0; h < 2; h++) {
        const __m256i hi = _mm256_mullo_epi16(_mm256_shuffle_epi8(qh, h ? pick1 : pick0), mul);
        const __m256i v = _mm256_or_si256(_mm256_cvtepu8_epi16(ld128(qs + 16 * h)),
            _mm256_srli_epi16(_mm256_and_si256(hi, _mm256_set1_epi16((short)mask)), shift));
        _mm256_store_si256((__m256i *)(void *)(idx + 16 * h), v);
    }
}

/* iq2_s: qs[4g + l] | (qh[g] >> 2l & 3) << 8, signs as bits at 34 + 4g */
TM__INLINE __m256i iq2_s_block(const uint8_t *b, const tm__q8_Kx *x)
{
    alignas(32) uint16_t idx[32];
    grid_indices(idx, b + 2, _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *)(const void *)(b + 66))),
                 _mm256_setr_epi8(0, -1, 0, -1, 0, -1, 0, -1, 1, -1, 1, -1, 1, -1, 1, -1,
                                  2, -1, 2, -1, 2, -1, 2, -1, 3, -1, 3, -1, 3, -1, 3, -1),
                 _mm256_setr_epi8(4, -1, 4, -1, 4, -1, 4, -1, 5, -1, 5, -1, 5, -1, 5, -1,
                                  6, -1, 6, -1, 6, -1, 6, -1, 7, -1, 7, -1, 7, -1, 7, -1),
                 _mm256_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4),
                 0x300, 0);
    const __m256i s = odd_nibble_scales(b + 74);
    __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; g++)
        isum = _mm256_add_epi32(isum, grid_group(entries4(tm__iq2s_grid, idx[4 * g], idx[4 * g + 1], idx[4 * g + 2], idx[4 * g + 3]),
                                                 bit_signs(bcast32(b + 34 + 4 * g)), x->qs + 32 * g,
                                                 group_scales(s, g)));
    return isum;
}

/* iq3_xxs: eight grid bytes a group at 2 + 8g, the group words (signs, scale) at 66 */
TM__INLINE __m256i iq3_xxs_block(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m256i s = odd_top_nibbles(ld256(b + 66));
    __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; g++) {
        isum = _mm256_add_epi32(isum, grid_group(entries8(tm__iq3xxs_grid, b + 2 + 8 * g, 0),
                                                 ksigns(tm__rd32(b + 66 + 4 * g)),
                                                 x->qs + 32 * g, group_scales(s, g)));
    }
    return isum;
}

/* iq3_s: the eight indices of group g qs[8g + j] | bit j of qh[g] << 8 */
TM__INLINE __m256i iq3_s_block(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m128i q = _mm_cvtsi32_si128((int)tm__rd32(b + 106)), m4 = _mm_set1_epi8(15);
    const __m256i s = odd_uniform(_mm_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_and_si128(q, m4),
                                                                       _mm_and_si128(_mm_srli_epi16(q, 4), m4))));
    __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; g++)
        isum = _mm256_add_epi32(isum, grid_group(entries8(tm__iq3s_grid, b + 2 + 8 * g, b[66 + g]),
                                                 bit_signs(bcast32(b + 74 + 4 * g)), x->qs + 32 * g,
                                                 group_scales(s, g)));
    return isum;
}

DOT_BLOCKS(iq2_xxs, 0.125, iq2_xxs_block, tm__rd16)
DOT_BLOCKS(iq2_xs, 0.125, iq2_xs_block, tm__rd16)
DOT_BLOCKS(iq2_s, 0.125, iq2_s_block, tm__rd16)
DOT_BLOCKS(iq3_xxs, 0.25, iq3_xxs_block, tm__rd16)
DOT_BLOCKS(iq3_s, 1.0, iq3_s_block, tm__rd16)

/* iq1: the grid's g in -1..1 goes in as u = g + 1 (unsigned, for maddubs) and the rest by x's
 * sums: the block's sum of (2k + 1) (8g + delta) x is sum k' (8u x) plus sum k' (delta - 8) x
 * (iq1_s, delta per group: the 16-element sums bsums), or, delta per sub-group of 8 (iq1_m),
 * sum k' (8u + delta + 1) x minus 9 sum k' x (codes at most 18: maddubs pairs within
 * 2 * 18 * 127). x's sums go in through bsums_by_half: the block's bsums with those of elements
 * 0..15 of each group in the low lane, 16..31 in the high one (S's order). */
static __m256i bsums_by_half(const tm__q8_Kx *x)
{
    const __m256i even_odd = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                              0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(ld256(x->bsums), even_odd), 0xd8);
}

/* iq1_s: qs[4g + l] | (qh[g] >> 3l & 7) << 8, qh[g] the u16 at 34 + 2g (bits 12..14 the scale,
 * 15 the delta's sign) */
TM__INLINE __m256i iq1_s_block(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m128i qh = ld128(b + 34);
    const __m128i k = _mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7));
    const __m128i k2 = _mm_add_epi16(_mm_add_epi16(k, k), _mm_set1_epi16(1));
    /* (2k + 1) (delta - 8): delta - 8 = -7 - 2 (bit 15) */
    const __m128i dm = _mm_sub_epi16(_mm_set1_epi16(-7), _mm_slli_epi16(_mm_srli_epi16(qh, 15), 1));
    __m256i isum = _mm256_madd_epi16(bsums_by_half(x), _mm256_broadcastsi128_si256(_mm_mullo_epi16(k2, dm)));
    const __m256i s8 = _mm256_broadcastsi128_si256(_mm_slli_epi16(k2, 3));
    alignas(32) uint16_t idx[32];
    grid_indices(idx, b + 2, _mm256_broadcastsi128_si256(qh),
                 _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3,
                                  4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7),
                 _mm256_setr_epi8(8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11,
                                  12, 13, 12, 13, 12, 13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15),
                 _mm256_setr_epi16(512, 64, 8, 1, 512, 64, 8, 1, 512, 64, 8, 1, 512, 64, 8, 1),
                 0xe00, 1);
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; g++) {
        const __m256i u = _mm256_add_epi8(entries4(tm__iq1s_grid, idx[4 * g], idx[4 * g + 1], idx[4 * g + 2], idx[4 * g + 3]), _mm256_set1_epi8(1));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(mul_u(u, ld256(x->qs + 32 * g)), group_scales(s8, g)));
    }
    return isum;
}

DOT_BLOCKS(iq1_s, 0.125, iq1_s_block, tm__rd16)

/* iq1_m: the bits of the block's half d, the top nibbles of its four scale words */
static uint16_t iq1_m_d(const uint8_t *b)
{
    const unsigned sw[4] = { tm__rd16(b + 48), tm__rd16(b + 50), tm__rd16(b + 52), tm__rd16(b + 54) };
    return tm__iq1m_scale_bits(sw);
}

/* iq1_m: qs[32] @0, qh[16] @32 (a nibble per sub-group: 3 index bits, the delta's sign), four
 * scale words @48 (half-group h = 4k + i: bits 3i.. of word k) */

/* delta + 1 and the code: a sub-group's code 8 (g + 1) + delta + 1 is T[g + 1] where its delta
 * is +1, T[g + 4] where it is -1: dsel[n] adds 1 or 4 to each sub-group l by bit l of n */
#define DSEL(n, l) ((n) >> (l) & 1 ? 0x0404040404040404u : 0x0101010101010101u)
#define DSEL_ROW(n) { DSEL(n, 0), DSEL(n, 1), DSEL(n, 2), DSEL(n, 3) }
static const uint64_t iq1m_dsel[16][4] = {
    DSEL_ROW(0), DSEL_ROW(1), DSEL_ROW(2), DSEL_ROW(3), DSEL_ROW(4), DSEL_ROW(5), DSEL_ROW(6), DSEL_ROW(7),
    DSEL_ROW(8), DSEL_ROW(9), DSEL_ROW(10), DSEL_ROW(11), DSEL_ROW(12), DSEL_ROW(13), DSEL_ROW(14), DSEL_ROW(15),
};
#undef DSEL_ROW
#undef DSEL

TM__INLINE __m256i iq1_m_block(const uint8_t *b, const tm__q8_Kx *x)
{
    /* S: word g/2 of the scales in word g of both lanes, shifted by 6 (g % 2) (low lane) and
     * that + 3 (high lane) with a multiply and a shift, masked to 3 bits */
    const __m256i w = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *)(const void *)(b + 48)));
    const __m256i wg = _mm256_shuffle_epi8(w, _mm256_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7,
                                                               0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7));
    const __m256i k = _mm256_srli_epi16(_mm256_mullo_epi16(wg, _mm256_setr_epi16(
        1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7,
        1 << 10, 1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4)), 13);
    const __m256i s = _mm256_add_epi16(_mm256_add_epi16(k, k), _mm256_set1_epi16(1));
    __m256i isum = _mm256_madd_epi16(bsums_by_half(x), _mm256_mullo_epi16(s, _mm256_set1_epi16(-9)));
    /* sub-group 4g + l's index: qs[4g + l] | (qh[2g + l / 2] >> 4 (l % 2) & 7) << 8 */
    alignas(32) uint16_t idx[32];
    const __m256i qh = _mm256_broadcastsi128_si256(ld128(b + 32));
    grid_indices(idx, b, qh,
                 _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,
                                  4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1),
                 _mm256_setr_epi8(8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1, 11, -1,
                                  12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14, -1, 15, -1, 15, -1),
                 _mm256_setr_epi16(256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16, 256, 16),
                 0x700, 0);
    const __m256i table = _mm256_setr_epi8(2, 10, 18, 0, 8, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           2, 10, 18, 0, 8, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
#pragma GCC unroll 8
    for (unsigned g = 0; g < 8; g++) {
        const __m256i mag = entries4(tm__iq1s_grid, idx[4 * g], idx[4 * g + 1], idx[4 * g + 2], idx[4 * g + 3]);
        const __m256i dsel = ld256(iq1m_dsel[_pext_u32(tm__rd16(b + 32 + 2 * g), 0x8888)]);
        const __m256i c = _mm256_shuffle_epi8(table, _mm256_add_epi8(mag, dsel));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(mul_u(c, ld256(x->qs + 32 * g)), group_scales(s, g)));
    }
    return isum;
}

DOT_BLOCKS(iq1_m, 0.125, iq1_m_block, iq1_m_d)

/* ---- tq1_0, tq2_0: trits in registers ------------------------------------------------------ */

/* Eight vectors of 32 codes c in 0..2 (the weight is d (c - 1)), in x's order: sum (c - 1) x is
 * sum c x minus the block's x sum (its sixteen bsums), exact in integers (the int16 pair sums
 * of the eight vectors stay within 8 * 508, less the bsums within 2032 more). */
static __m256i ternary_sum(const __m256i c[8], const tm__q8_Kx *x)
{
    __m256i s16 = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++)
        s16 = _mm256_add_epi16(s16, mul_u(c[k], ld256(x->qs + 32 * k)));
    return pairs_i32(_mm256_sub_epi16(s16, ld256(x->bsums)));
}

/* tq2_0: element 128k + 32l + m is bits 2l.. of qs[32k + m] */
TM__INLINE __m256i tq2_0_block(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256i c[8];
    for (int k = 0; k < 2; k++) {
        const __m256i q = ld256(b + 32 * k);
        for (int l = 0; l < 4; l++)
            c[4 * k + l] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * l), m3);
    }
    return ternary_sum(c, x);
}

/* tq1_0's trits: trit n of a byte q is ((q 3^n mod 256) 3) >> 8, ggml's base-3 unpacking, formed
 * two ways so that the work spreads over the vector ports: by multiplies (trits: for qs[32..51])
 * and by adds and compares (trit_of: for qs[0..31]); either alone was 7-8 % slower (Intel Xeon,
 * Sapphire Rapids class, in cache). */

/* trit(q, p) of every byte, p the power of 3 of the byte's 16-bit lane: each byte moved to the
 * high half of its lane (so the product's high byte is q p mod 256 and the low one 0), then the
 * high half of that times 3 */
static __m256i trits(__m256i q, __m256i p)
{
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i even = _mm256_mullo_epi16(_mm256_slli_epi16(q, 8), p);
    const __m256i odd = _mm256_mullo_epi16(_mm256_andnot_si256(_mm256_set1_epi16(0x00ff), q), p);
    return _mm256_or_si256(_mm256_mulhi_epu16(even, three),
                           _mm256_slli_epi16(_mm256_mulhi_epu16(odd, three), 8));
}

/* q 3^n mod 256 in every byte by adds (3y = y + y + y, 9y = (y << 3) + y, the shift masked to
 * its byte), biased by 128 (the top bit flipped, carried through the adds as an add of 128) so
 * that the unsigned "(3y) >> 8", 1 above 85 and 2 above 170, is two signed compares */
static __m256i times3(__m256i y, __m256i yb) { return _mm256_add_epi8(_mm256_add_epi8(y, y), yb); }
static __m256i shl3(__m256i y) { return _mm256_and_si256(_mm256_slli_epi16(y, 3), _mm256_set1_epi8((char)0xf8)); }

/* the trit of every byte of the biased yb (y + 128) */
static __m256i trit_of(__m256i yb)
{
    const __m256i n = _mm256_add_epi8(_mm256_cmpgt_epi8(yb, _mm256_set1_epi8(85 - 128)),
                                      _mm256_cmpgt_epi8(yb, _mm256_set1_epi8(170 - 128)));
    return _mm256_sub_epi8(_mm256_setzero_si256(), n);
}

/* the five biased powers q 3^n + 128 (n = 0..4) of every byte of q */
static void powers5(__m256i q, __m256i pb[5])
{
    const __m256i qb = _mm256_xor_si256(q, _mm256_set1_epi8(-128));
    const __m256i q8 = shl3(q), q9 = _mm256_add_epi8(q8, q), q9b = _mm256_add_epi8(q8, qb);
    pb[0] = qb;
    pb[1] = times3(q, qb);
    pb[2] = q9b;
    pb[3] = times3(q9, q9b);
    pb[4] = _mm256_add_epi8(shl3(q9), q9b);
}

/* tq1_0: trit t of qs[0..31] is element 32t + m, of qs[32..47] element 160 + 16t + m, of
 * qh[0..3] (bytes 48..51) element 240 + 4t + m */
TM__INLINE __m256i tq1_0_block(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m256i p01 = _mm256_set_m128i(_mm_set1_epi16(3), _mm_set1_epi16(1));
    const __m256i p23 = _mm256_set_m128i(_mm_set1_epi16(27), _mm_set1_epi16(9));
    const __m256i p4h = _mm256_set_m128i(_mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27), _mm_set1_epi16(81));
    const __m256i q1 = _mm256_broadcastsi128_si256(ld128(b + 32));
    const __m256i q2 = _mm256_set_m128i(_mm_set1_epi32((int)tm__rd32(b + 48)), ld128(b + 32));
    __m256i c[8], pb[5];
    powers5(ld256(b), pb);
    for (int t = 0; t < 5; t++)
        c[t] = trit_of(pb[t]);
    c[5] = trits(q1, p01);
    c[6] = trits(q1, p23);
    c[7] = trits(q2, p4h);
    return ternary_sum(c, x);
}

static uint16_t tq1_0_d(const uint8_t *b) { return tm__rd16(b + 52); }
static uint16_t tq2_0_d(const uint8_t *b) { return tm__rd16(b + 64); }

DOT_BLOCKS(tq1_0, 1.0, tq1_0_block, tq1_0_d)
DOT_BLOCKS(tq2_0, 1.0, tq2_0_block, tq2_0_d)

const tm__kernels IQ_CAT(tm__kernels_matvec_, IQ_CAT(IQ_ISA, _iq)) = {
    .mv_q8 = {
        [TM_TYPE_TQ1_0] = IQ_KERNEL(tq1_0),
        [TM_TYPE_TQ2_0] = IQ_KERNEL(tq2_0),
        [TM_TYPE_IQ2_XXS] = IQ_KERNEL(iq2_xxs),
        [TM_TYPE_IQ2_XS] = IQ_KERNEL(iq2_xs),
        [TM_TYPE_IQ2_S] = IQ_KERNEL(iq2_s),
        [TM_TYPE_IQ3_XXS] = IQ_KERNEL(iq3_xxs),
        [TM_TYPE_IQ3_S] = IQ_KERNEL(iq3_s),
        [TM_TYPE_IQ1_S] = IQ_KERNEL(iq1_s),
        [TM_TYPE_IQ1_M] = IQ_KERNEL(iq1_m),
    },
};
