/* AVX2 TM_MATVEC_Q8 kernels for the block types real files carry beside the four of
 * matvec_avx2.c: q4_1, q5_0, q5_1, iq4_nl, mxfp4 (x as q8_0), q2_K, q3_K, q5_K, iq4_xs, the grid
 * i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m), tq1_0 and tq2_0 (x as q8_K);
 * and for nvfp4, q1_0, q2_0, whose codes are unpacked by matvec_unpack.h as the scalar kernels'
 * are, then dotted here. Built with their own -m flags; only the table is exported.
 *
 * ggml's integer scheme: a block's codes as 32 bytes (nibbles split, fifth bits spread with a
 * shuffle and a compare, table values by vpshufb, grid entries set into a register with their
 * signs put on x's codes, trits by multiplies), maddubs by x's codes (unsigned codes
 * directly, signed ones with the sign trick), madd by the group scales. Unlike matvec_avx2.c,
 * no float sum runs across blocks: a 256-element block's integer sums are reduced to one int32
 * (exact), a 32-element block's are scaled in eight float lanes (one rounding each), and either
 * enters the row's sum in double, so the result is W x-hat to float32 rounding even where its
 * terms cancel (golden q2_K rows sum to 15,000 times their y). Loads are unaligned and never
 * leave the row. */
#include "../blocks.h"
#include "../kernels.h"
#include "../matvec_unpack.h"
#include "../quant_tables.h"
#include "avx2_common.h"
#include "prefetch.h"

#include <immintrin.h>
#include <string.h>


/* the eight bytes at p as eight int32 */
static __m256i zx8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* int16 pairs to int32 lanes */
static __m256i widen(__m256i p16) { return _mm256_madd_epi16(p16, _mm256_set1_epi16(1)); }

/* unsigned codes u (0..127) times signed x, in int16 pairs */
static __m256i mul_u(__m256i u, __m256i x) { return _mm256_maddubs_epi16(u, x); }

/* signed codes c times signed x, in int16 pairs (ggml's sign trick) */
static __m256i mul_s(__m256i c, __m256i x)
{
    return _mm256_maddubs_epi16(_mm256_sign_epi8(c, c), _mm256_sign_epi8(x, c));
}

/* ---- 32-element blocks, x as q8_0 ---------------------------------------------------------- */

/* Per block, d dx (codes . x) + m dx (sum of x) as eight float lanes (one rounding each, as
 * ggml's float multiply-add per block), added into two double vectors: no horizontal sum until
 * the row ends, and no float sum across blocks. */
static void add_lanes(__m256d acc[2], __m256 f)
{
    acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
}

static float lanes_sum(const __m256d acc[2])
{
    const __m256d s = _mm256_add_pd(acc[0], acc[1]);
    const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return (float)_mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

#define DOT32(name, block, codes_of, mul, d_of, m_of)                                        \
    static float name(const void *w, const void *xq, size_t n_blocks)                        \
    {                                                                                         \
        const uint8_t *b = w;                                                                 \
        const tm__q8_0x *x = xq;                                                              \
        __m256d acc[2] = { _mm256_setzero_pd(), _mm256_setzero_pd() };                        \
        for (size_t i = 0; i < n_blocks; i++, b += sizeof(block), x++) {                     \
            prefetch_ahead(b, sizeof(block));                                                 \
            const __m256i xv = ld256(x->qs);                                                  \
            __m256 f = _mm256_mul_ps(_mm256_set1_ps(d_of(b) * x->d),                          \
                                     _mm256_cvtepi32_ps(widen(mul(codes_of(b), xv))));        \
            if (m_of) /* the offset against x's sum */                                        \
                f = _mm256_fmadd_ps(_mm256_set1_ps(half(b + 2) * x->d),                       \
                                    _mm256_cvtepi32_ps(widen(mul_u(_mm256_set1_epi8(1), xv))), f); \
            add_lanes(acc, f);                                                                \
        }                                                                                     \
        return lanes_sum(acc);                                                                \
    }

DOT32(dot_q4_1_q8_avx2, tm__block_q4_1, q4_1_bytes, mul_u, d_half, 1)
DOT32(dot_q5_0_q8_avx2, tm__block_q5_0, q5_0_bytes, mul_s, d_half, 0)
DOT32(dot_q5_1_q8_avx2, tm__block_q5_1, q5_1_bytes, mul_u, d_half, 1)
DOT32(dot_iq4_nl_q8_avx2, tm__block_iq4_nl, iq4_nl_bytes, mul_s, d_half, 0)

/* mxfp4: its E8M0 scales go down to 2^-127 (e = 1), and their float products with dx are then
 * subnormal, a microcode assist per multiply (measured on the corpus rows: 0.22 of the read
 * ceiling in float lanes, 0.54 in double): each block's exact integer sum is scaled in double,
 * four blocks at a time (avx2_common.h: mxfp4_quad), block i into double lane i mod 4; the last
 * n % 4 blocks one by one into a double of their own; then (lane 0 + lane 1) + (lane 2 +
 * lane 3) + that. matmul_avx2_q8.c sums each column so. */
static float dot_mxfp4_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    __m256d acc = _mm256_setzero_pd();
    size_t i = 0;
    for (; i + 4 <= n_blocks; i += 4, b += 4 * sizeof(tm__block_mxfp4), x += 4) {
        prefetch_ahead(b, 4 * sizeof(tm__block_mxfp4));
        __m256i s[4];
        for (int k = 0; k < 4; k++)
            s[k] = widen(mul_s(mxfp4_bytes(b + (size_t)k * sizeof(tm__block_mxfp4)), ld256(x[k].qs)));
        acc = mxfp4_quad(acc, b, x, s);
    }
    double tail = 0.0;
    for (; i < n_blocks; i++, b += sizeof(tm__block_mxfp4), x++)
        tail += (double)d_e8m0(b) * (double)x->d * hsum_epi32(widen(mul_s(mxfp4_bytes(b), ld256(x->qs))));
    return (float)(hsum_pd(acc) + tail);
}
#undef DOT32

/* ---- 256-element blocks, x as q8_K --------------------------------------------------------- */

/* The sixteen run scales (int8 bytes of sc) as int16, even runs in the low 128-bit lane, odd
 * ones in the high: scale_k(v, k) is then run 2k's scale in the low lane, 2k + 1's in the high,
 * the two halves of one 32-byte step below. */
static __m256i runs_paired(__m128i sc)
{
    const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc, even_odd));
}

/* the int16 scale k (of 8, in each lane of s) in every lane */
static __m256i scale_k(__m256i s, int k)
{
    return _mm256_shuffle_epi8(s, _mm256_set1_epi16((short)(0x0100 + 0x0202 * k)));
}

/* q2_K and q3_K walk 16 runs of 16: for half h and shift step s, the 32 bytes at qs (+32 h)
 * shifted by 2s give runs 8h + 2s (bytes 0..15) and 8h + 2s + 1 (16..31), against x's elements
 * 128 h + 32 s. With hm (q3_K), the mask bit 4h + s of each byte adds 4. Returns the int32
 * lanes of sum over runs of sc_r (codes . x); sc: the sixteen int8 run scales. */
static __m256i runs_dot(const uint8_t *qs, const uint8_t *hm, const int8_t *xqs, __m128i sc)
{
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const __m256i paired = runs_paired(sc);
    __m256i isum = _mm256_setzero_si256();
    const __m256i h = hm ? ld256(hm) : _mm256_setzero_si256();
    for (int half_ = 0; half_ < 2; half_++) {
        const __m256i q = ld256(qs + 32 * half_);
        for (int s = 0; s < 4; s++) {
            __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), m3);
            if (hm) /* q3_K: the mask bit as 4, so u = q + 4h in 0..7 */
                u = _mm256_or_si256(u, _mm256_slli_epi16(
                    _mm256_and_si256(_mm256_srli_epi16(h, 4 * half_ + s), one), 2));
            const __m256i p = mul_u(u, ld256(xqs + 128 * half_ + 32 * s));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, scale_k(paired, 4 * half_ + s)));
        }
    }
    return isum;
}

/* sum over the 16 runs of v_r * bsums_r, v the sixteen int8 bytes */
static int32_t with_bsums(__m128i v, const int16_t *bsums)
{
    return hsum_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(v), ld256(bsums)));
}

/* q2_K: d sc q - dmin m: sum sc (q . x) against sum m bsums */
static float dot_q2_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m128i m4 = _mm_set1_epi8(15);
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q2_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q2_K));
        const __m128i sm = ld128(b);
        const int32_t isum = hsum_epi32(runs_dot(b + 16, NULL, x->qs, _mm_and_si128(sm, m4)));
        const int32_t msum = with_bsums(_mm_and_si128(_mm_srli_epi16(sm, 4), m4), x->bsums);
        acc += (double)x->d * ((double)half(b + 80) * isum - (double)half(b + 82) * msum);
    }
    return (float)acc;
}

/* q3_K: codes q + 4h - 4, taken as u = q + 4h; the 4 sum sc x that adds is removed with the
 * bsums, in integers */
static float dot_q3_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q3_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q3_K));
        uint32_t w4[4];
        tm__q3_K_scale_words(b + 96, w4);
        const __m128i sc = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)w4),
                                        _mm_set1_epi8(32));
        const int32_t isum = hsum_epi32(runs_dot(b + 32, b, x->qs, sc)) - 4 * with_bsums(sc, x->bsums);
        acc += (double)x->d * (double)half(b + 108) * isum;
    }
    return (float)acc;
}


/* q5_K: as matvec_avx2.c's q4_K, with bit g of qh[l] adding 16 to element l of group g */
static float dot_q5_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q5_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q5_K));
        uint32_t w4[4];
        tm__k4_scale_min_words(b + 4, w4);
        const uint8_t *sm = (const uint8_t *)w4;
        const __m128i xs32 = _mm_hadd_epi16(ld128(x->bsums), ld128(x->bsums + 8));
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(sm + 8)));
        const __m128i pm = _mm_madd_epi16(mins, xs32);
        const __m256i scales = _mm256_broadcastsi128_si256(
            _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)sm)));
        const __m256i qh = ld256(b + 16);
        __m256i isum = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = ld256(b + 48 + 32 * j);
            const __m256i hlo = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4);
            const __m256i hhi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), hlo);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), hhi);
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(mul_u(lo, ld256(x->qs + 64 * j)),
                                                            scale_k(scales, 2 * j)));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(mul_u(hi, ld256(x->qs + 64 * j + 32)),
                                                            scale_k(scales, 2 * j + 1)));
        }
        acc += (double)x->d * ((double)half(b) * hsum_epi32(isum) - (double)half(b + 2) * hsum128(pm));
    }
    return (float)acc;
}

/* iq4_xs: eight groups of 32, table values, signed 6-bit group scales */
static float dot_iq4_xs_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    double acc = 0.0;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_iq4_xs), x++) {
        prefetch_ahead(b, sizeof(tm__block_iq4_xs));
        __m256i isum = _mm256_setzero_si256();
        for (unsigned g = 0; g < 8; g++) {
            const __m256i p = mul_s(looked_up(tm__kvalues_iq4nl, b + 8 + 16 * g), ld256(x->qs + 32 * g));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(
                p, _mm256_set1_epi16((short)(tm__iq4_xs_scale(b, g) - 32))));
        }
        acc += (double)x->d * (double)half(b) * hsum_epi32(isum);
    }
    return (float)acc;
}

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
        isum = _mm256_add_epi32(isum, widen(mul_u(c[k], ld256(x->qs + 32 * k))));
    const int32_t xsum = hsum_epi32(widen(ld256(x->bsums)));
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

/* ---- the other block types: codes unpacked to the stack (matvec_unpack.h), dotted here ---- */

/* Per block: the codes in a stack buffer (the unpacking, not the dot, is what these cost);
 * per 32 elements one maddubs against x, the two groups of 16 in the low and high 128-bit
 * lanes scaled by sc_g dx in float lanes, the block's lanes into double. x as q8_K
 * (256-element blocks), else q8_0. None of these types has an offset (mn is 0). */
static inline float dot_unpacked(const uint8_t *w, const void *xq, size_t n_blocks, size_t bb,
                                 size_t be, tm__unpack_fn *unpack)
{
    int8_t q[256];
    float sc[16], mn[16];
    __m256d acc[2] = { _mm256_setzero_pd(), _mm256_setzero_pd() };
    for (size_t i = 0; i < n_blocks; i++, w += bb) {
        prefetch_ahead(w, bb);
        unpack(w, q, sc, mn);
        __m256 f = _mm256_setzero_ps();
        for (size_t p = 0; p < be / 32; p++) {
            const size_t e = i * be + 32 * p;
            const int8_t *xs;
            float dx;
            if (be == 256) {
                const tm__q8_Kx *x = (const tm__q8_Kx *)xq + i;
                xs = x->qs + 32 * p;
                dx = x->d;
            } else {
                const tm__q8_0x *x = (const tm__q8_0x *)xq + e / 32;
                xs = x->qs;
                dx = x->d;
            }
            const __m256i xv = ld256(xs);
            const __m256 s = _mm256_set_m128(_mm_set1_ps(sc[2 * p + 1] * dx), _mm_set1_ps(sc[2 * p] * dx));
            f = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(widen(mul_s(ld256(q + 32 * p), xv))), f);
        }
        add_lanes(acc, f);
    }
    return lanes_sum(acc);
}

#define DOT_UNPACKED(type, block_elems)                                              \
    static float dot_##type##_q8_avx2(const void *w, const void *xq, size_t n)              \
    {                                                                                         \
        return dot_unpacked(w, xq, n, sizeof(tm__block_##type), block_elems, unpack_##type); \
    }
DOT_UNPACKED(nvfp4, 64)
DOT_UNPACKED(q1_0, 128)
DOT_UNPACKED(q2_0, 64)
#undef DOT_UNPACKED

const tm__kernels tm__kernels_matvec_avx2_q8 = {
    .mv_q8 = {
        [TM_TYPE_Q4_1] = dot_q4_1_q8_avx2,
        [TM_TYPE_Q5_0] = dot_q5_0_q8_avx2,
        [TM_TYPE_Q5_1] = dot_q5_1_q8_avx2,
        [TM_TYPE_IQ4_NL] = dot_iq4_nl_q8_avx2,
        [TM_TYPE_MXFP4] = dot_mxfp4_q8_avx2,
        [TM_TYPE_Q2_K] = dot_q2_K_q8_avx2,
        [TM_TYPE_Q3_K] = dot_q3_K_q8_avx2,
        [TM_TYPE_Q5_K] = dot_q5_K_q8_avx2,
        [TM_TYPE_IQ4_XS] = dot_iq4_xs_q8_avx2,
        [TM_TYPE_NVFP4] = dot_nvfp4_q8_avx2,
        [TM_TYPE_Q1_0] = dot_q1_0_q8_avx2,
        [TM_TYPE_Q2_0] = dot_q2_0_q8_avx2,
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
