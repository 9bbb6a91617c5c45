/* AVX2 TM_MATVEC_Q8 kernels for the grid i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s,
 * iq1_s, iq1_m) and the ternary types (tq1_0, tq2_0), x as q8_K: ggml's integer scheme, each
 * 256-element block's integer sums reduced to one exact int32 that enters the row's sum in
 * double with one rounding (see matvec_avx2_q8.c). Built with the AVX2 flags; only the table
 * is exported. */
#include "../blocks.h"
#include "../kernels.h"
#include "../matvec_unpack.h"
#include "../quant_tables.h"
#include "avx2_common.h"
#include "prefetch.h"

#include <immintrin.h>
#include <string.h>

/* ---- the grid i-quants: grid lookup and signs in registers (ggml's scheme) ---------------- */

/* A block's weights are d f (2k + 1) (+-grid byte) (iq1: d (2k + 1) (g + delta), g in -1..1 and
 * delta +-1/8, i.e. d (2k + 1) (8g +- 1) / 8), exact in float as the decoders form them: so
 * the block is d f dx times an exact integer sum over its groups of (2k + 1) (codes . x), one
 * rounding in double. Each group of 32 is four 8-byte grid entries set into one register; the
 * four sign bytes (iq2, iq3) are expanded to byte masks in the register and go onto x's codes
 * (negated where set), the magnitudes stay unsigned for maddubs (pairs at most 2 * 62 * 127). */
static __m256i entries(uint64_t e0, uint64_t e1, uint64_t e2, uint64_t e3)
{
    return _mm256_set_epi64x((long long)e3, (long long)e2, (long long)e1, (long long)e0);
}

/* int16 scales: lo for elements 0..15 of the group, hi for 16..31 */
static __m256i half_scales(int lo, int hi)
{
    return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
}

/* 0xff in byte j of sub-group l where bit j of byte l of the u32 signs is set: the byte
 * broadcast over its sub-group, its bits picked out, compared */
static __m256i sign_masks(uint32_t signs)
{
    const __m256i rep = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202,
                                           0x0303030303030303);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201u);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)signs), rep);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* (mag . (x negated where neg is 0xff)) per half-group, times the half-group scales, as int32
 * lanes */
static __m256i grid_group(__m256i mag, __m256i neg, const int8_t *xs, __m256i scales)
{
    const __m256i sx = _mm256_sub_epi8(_mm256_xor_si256(ld256(xs), neg), neg);
    return _mm256_madd_epi16(mul_u(mag, sx), scales);
}

/* iq2_xxs, iq3_xxs: the byte masks of tm__ksigns_iq2xs[i] (i and its parity as bit 7) for each
 * 7-bit index i, built by the preprocessor with matvec_unpack.h's MASK_ROW: one load per
 * sub-group instead of a sign byte to look up and expand */
#define KSIGN(i) ((i) | (((i) ^ (i) >> 1 ^ (i) >> 2 ^ (i) >> 3 ^ (i) >> 4 ^ (i) >> 5 ^ (i) >> 6) & 1) << 7)
#define KMASK_4(i) MASK_ROW(KSIGN(i)), MASK_ROW(KSIGN((i) + 1)), MASK_ROW(KSIGN((i) + 2)), \
                   MASK_ROW(KSIGN((i) + 3))
#define KMASK_16(i) KMASK_4(i), KMASK_4((i) + 4), KMASK_4((i) + 8), KMASK_4((i) + 12)
#define KMASK_64(i) KMASK_16(i), KMASK_16((i) + 16), KMASK_16((i) + 32), KMASK_16((i) + 48)
static const uint64_t ksign_mask[128] = { KMASK_64(0), KMASK_64(64) };
#undef KMASK_64
#undef KMASK_16
#undef KMASK_4
#undef KSIGN

/* the sign masks of an iq2_xxs / iq3_xxs group from the 7-bit indices in bits 0..27 of a */
static __m256i ksign_masks(uint32_t a)
{
    return entries(ksign_mask[a & 127], ksign_mask[a >> 7 & 127], ksign_mask[a >> 14 & 127],
                   ksign_mask[a >> 21 & 127]);
}

/* Per block: acc += dx d f isum, d = d_of(b), isum the block's exact integer sum from
 * group(b, g, xs). */
#define DOT_GRID(type, f, group, d_of)                                                        \
    static float dot_##type##_q8_avx2(const void *w, const void *xq, size_t n_blocks)        \
    {                                                                                         \
        const uint8_t *b = w;                                                                 \
        const tm__q8_Kx *x = xq;                                                              \
        double acc = 0.0;                                                                     \
        for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_##type), x++) {          \
            prefetch_ahead(b, sizeof(tm__block_##type));                                      \
            __m256i isum = _mm256_setzero_si256();                                            \
            for (unsigned g = 0; g < 8; g++)                                                  \
                isum = _mm256_add_epi32(isum, group(b, g, x->qs + 32 * g));                   \
            acc += (double)x->d * (double)d_of(b) * (f) * hsum_epi32(isum);                     \
        }                                                                                     \
        return (float)acc;                                                                    \
    }

static __m256i iq2_xxs_group(const uint8_t *b, unsigned g, const int8_t *xs)
{
    const uint8_t *rec = b + 2 + 8 * g;
    const uint32_t a = tm__rd32(rec + 4);
    const int k = 2 * (int)(a >> 28) + 1;
    return grid_group(entries(tm__iq2xxs_grid[rec[0]], tm__iq2xxs_grid[rec[1]],
                              tm__iq2xxs_grid[rec[2]], tm__iq2xxs_grid[rec[3]]),
                      ksign_masks(a),
                      xs, half_scales(k, k));
}

static __m256i iq2_xs_group(const uint8_t *b, unsigned g, const int8_t *xs)
{
    unsigned v[4];
    for (int l = 0; l < 4; l++)
        v[l] = tm__rd16(b + 2 + 8 * g + 2 * l);
    return grid_group(entries(tm__iq2xs_grid[v[0] & 511], tm__iq2xs_grid[v[1] & 511],
                              tm__iq2xs_grid[v[2] & 511], tm__iq2xs_grid[v[3] & 511]),
                      entries(ksign_mask[v[0] >> 9], ksign_mask[v[1] >> 9], ksign_mask[v[2] >> 9],
                              ksign_mask[v[3] >> 9]),
                      xs, half_scales(2 * (b[66 + g] & 15) + 1, 2 * (b[66 + g] >> 4) + 1));
}

static __m256i iq2_s_group(const uint8_t *b, unsigned g, const int8_t *xs)
{
    const unsigned qh = b[66 + g];
    const uint8_t *qs = b + 2 + 4 * g, *sg = b + 34 + 4 * g;
    return grid_group(entries(tm__iq2s_grid[qs[0] | (qh & 3u) << 8],
                              tm__iq2s_grid[qs[1] | (qh >> 2 & 3u) << 8],
                              tm__iq2s_grid[qs[2] | (qh >> 4 & 3u) << 8],
                              tm__iq2s_grid[qs[3] | (qh >> 6 & 3u) << 8]),
                      sign_masks(tm__rd32(sg)), xs,
                      half_scales(2 * (b[74 + g] & 15) + 1, 2 * (b[74 + g] >> 4) + 1));
}

static __m256i iq3_xxs_group(const uint8_t *b, unsigned g, const int8_t *xs)
{
    const uint8_t *qs = b + 2 + 8 * g;
    const uint32_t a = tm__rd32(b + 66 + 4 * g);
    const int k = 2 * (int)(a >> 28) + 1;
    const uint32_t *grid = tm__iq3xxs_grid;
    return grid_group(entries(pair(grid[qs[0]], grid[qs[1]]), pair(grid[qs[2]], grid[qs[3]]),
                              pair(grid[qs[4]], grid[qs[5]]), pair(grid[qs[6]], grid[qs[7]])),
                      ksign_masks(a),
                      xs, half_scales(k, k));
}

/* iq3_s: the eight indices formed in a register (qs[j] | bit j of qh << 8) and looked up with
 * one gather: measured about 1.7 times faster than eight scalar indices and loads (AMD EPYC,
 * in cache); for iq3_xxs, whose indices are plain bytes, the loads were faster */
static __m256i iq3_s_group(const uint8_t *b, unsigned g, const int8_t *xs)
{
    const __m256i hi = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(b[66 + g]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
        _mm256_set1_epi32(1));
    const __m256i idx = _mm256_or_si256(zx8(b + 2 + 8 * g), _mm256_slli_epi32(hi, 8));
    const __m256i mag = _mm256_i32gather_epi32((const int *)(const void *)tm__iq3s_grid, idx, 4);
    const int k = 2 * (int)((unsigned)b[106 + g / 2] >> 4 * (g % 2) & 15) + 1;
    return grid_group(mag, sign_masks(tm__rd32(b + 74 + 4 * g)), xs, half_scales(k, k));
}

DOT_GRID(iq2_xxs, 0.125, iq2_xxs_group, half)
DOT_GRID(iq2_xs, 0.125, iq2_xs_group, half)
DOT_GRID(iq2_s, 0.125, iq2_s_group, half)
DOT_GRID(iq3_xxs, 0.25, iq3_xxs_group, half)
DOT_GRID(iq3_s, 1.0, iq3_s_group, half)

/* iq1: codes 8g + delta8 (delta8 = -1 where the sub-group's delta bit is set, else +1), signed:
 * the sign trick */
static __m256i iq1_group(__m256i grid, __m256i delta8, const int8_t *xs, __m256i scales)
{
    const __m256i g2 = _mm256_add_epi8(grid, grid), g4 = _mm256_add_epi8(g2, g2);
    const __m256i c = _mm256_add_epi8(_mm256_add_epi8(g4, g4), delta8);
    return _mm256_madd_epi16(mul_s(c, ld256(xs)), scales);
}

/* +-1 in every byte of an 8-byte sub-group: -1 when set */
static long long delta8(unsigned set) { return set ? -1LL : 0x0101010101010101LL; }

static __m256i iq1_s_group(const uint8_t *b, unsigned g, const int8_t *xs)
{
    const unsigned w = tm__rd16(b + 34 + 2 * g);
    const uint8_t *qs = b + 2 + 4 * g;
    const int k = 2 * (int)(w >> 12 & 7) + 1;
    const __m256i grid = entries(tm__iq1s_grid[qs[0] | (w & 7u) << 8],
                                 tm__iq1s_grid[qs[1] | (w >> 3 & 7u) << 8],
                                 tm__iq1s_grid[qs[2] | (w >> 6 & 7u) << 8],
                                 tm__iq1s_grid[qs[3] | (w >> 9 & 7u) << 8]);
    return iq1_group(grid, _mm256_set1_epi64x(delta8(w & 0x8000)), xs, half_scales(k, k));
}

DOT_GRID(iq1_s, 0.125, iq1_s_group, half)

/* iq1_m: the block's half d from the top nibbles of its four scale words */
static float iq1_m_d(const uint8_t *b)
{
    const unsigned sw[4] = { tm__rd16(b + 48), tm__rd16(b + 50), tm__rd16(b + 52), tm__rd16(b + 54) };
    return tm__half_to_float(tm__iq1m_scale_bits(sw));
}

/* iq1_m: two 3-bit scales a group, a delta bit per sub-group */
static __m256i iq1_m_group(const uint8_t *b, unsigned g, const int8_t *xs)
{
    const unsigned s = tm__rd16(b + 48 + 2 * (g / 2)), c = 6 * (g % 2);
    unsigned nib[4];
    for (unsigned l = 0; l < 4; l++)
        nib[l] = (unsigned)b[32 + 2 * g + l / 2] >> 4 * (l % 2);
    const __m256i grid = entries(tm__iq1s_grid[b[4 * g] | (nib[0] & 7) << 8],
                                 tm__iq1s_grid[b[4 * g + 1] | (nib[1] & 7) << 8],
                                 tm__iq1s_grid[b[4 * g + 2] | (nib[2] & 7) << 8],
                                 tm__iq1s_grid[b[4 * g + 3] | (nib[3] & 7) << 8]);
    const __m256i d8 = _mm256_set_epi64x(delta8(nib[3] & 8), delta8(nib[2] & 8),
                                         delta8(nib[1] & 8), delta8(nib[0] & 8));
    return iq1_group(grid, d8, xs,
                     half_scales(2 * (int)(s >> c & 7) + 1, 2 * (int)(s >> (c + 3) & 7) + 1));
}

DOT_GRID(iq1_m, 0.125, iq1_m_group, iq1_m_d)

/* ---- tq1_0, tq2_0: trits in registers ------------------------------------------------------ */

/* Eight vectors of 32 codes c in 0..2 (the weight is d (c - 1)), in x's order: sum (c - 1) x is
 * sum c x minus the block's x sum (its sixteen bsums), exact in integers; one rounding in
 * double per block. */
static double ternary_block(const __m256i c[8], const tm__q8_Kx *x, float d)
{
    __m256i isum = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++)
        isum = _mm256_add_epi32(isum, pairs_i32(mul_u(c[k], ld256(x->qs + 32 * k))));
    const int32_t xsum = hsum_epi32(pairs_i32(ld256(x->bsums)));
    return (double)x->d * (double)d * (double)(hsum_epi32(isum) - xsum);
}

/* tq2_0: element 128k + 32l + m is bits 2l.. of qs[32k + m] */
static float dot_tq2_0_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m256i m3 = _mm256_set1_epi8(3);
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_tq2_0), x++) {
        prefetch_ahead(b, sizeof(tm__block_tq2_0));
        __m256i c[8];
        for (int k = 0; k < 2; k++) {
            const __m256i q = ld256(b + 32 * k);
            for (int l = 0; l < 4; l++)
                c[4 * k + l] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * l), m3);
        }
        acc += ternary_block(c, x, half(b + 64));
    }
    return (float)acc;
}

/* trit(q, p) of every byte, ggml's base-3 unpacking ((q p mod 256) 3) >> 8, p the power of 3 of
 * the byte's 16-bit lane: each byte moved to the high half of its lane (so the product's high
 * byte is q p mod 256 and the low one 0), then the high half of that times 3 */
static __m256i trits(__m256i q, __m256i p)
{
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i even = _mm256_mullo_epi16(_mm256_slli_epi16(q, 8), p);
    const __m256i odd = _mm256_mullo_epi16(_mm256_andnot_si256(_mm256_set1_epi16(0x00ff), q), p);
    return _mm256_or_si256(_mm256_mulhi_epu16(even, three),
                           _mm256_slli_epi16(_mm256_mulhi_epu16(odd, three), 8));
}

/* tq1_0: trit t of qs[0..31] is element 32t + m, of qs[32..47] element 160 + 16t + m, of
 * qh[0..3] (bytes 48..51) element 240 + 4t + m */
static float dot_tq1_0_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m256i p01 = _mm256_set_m128i(_mm_set1_epi16(3), _mm_set1_epi16(1));
    const __m256i p23 = _mm256_set_m128i(_mm_set1_epi16(27), _mm_set1_epi16(9));
    const __m256i p4h = _mm256_set_m128i(_mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27), _mm_set1_epi16(81));
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_tq1_0), x++) {
        prefetch_ahead(b, sizeof(tm__block_tq1_0));
        const __m256i q0 = ld256(b), q1 = _mm256_broadcastsi128_si256(ld128(b + 32));
        const __m256i q2 = _mm256_set_m128i(_mm_set1_epi32((int)tm__rd32(b + 48)), ld128(b + 32));
        __m256i c[8];
        for (int t = 0, pw = 1; t < 5; t++, pw *= 3)
            c[t] = trits(q0, _mm256_set1_epi16((short)pw));
        c[5] = trits(q1, p01);
        c[6] = trits(q1, p23);
        c[7] = trits(q2, p4h);
        acc += ternary_block(c, x, half(b + 52));
    }
    return (float)acc;
}

const tm__kernels tm__kernels_matvec_avx2_iq = {
    .mv_q8 = {
        [TM_TYPE_TQ1_0] = dot_tq1_0_q8_avx2,
        [TM_TYPE_TQ2_0] = dot_tq2_0_q8_avx2,
        [TM_TYPE_IQ2_XXS] = dot_iq2_xxs_q8_avx2,
        [TM_TYPE_IQ2_XS] = dot_iq2_xs_q8_avx2,
        [TM_TYPE_IQ2_S] = dot_iq2_s_q8_avx2,
        [TM_TYPE_IQ3_XXS] = dot_iq3_xxs_q8_avx2,
        [TM_TYPE_IQ3_S] = dot_iq3_s_q8_avx2,
        [TM_TYPE_IQ1_S] = dot_iq1_s_q8_avx2,
        [TM_TYPE_IQ1_M] = dot_iq1_m_q8_avx2,
    },
};
