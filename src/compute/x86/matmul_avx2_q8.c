/* AVX2 TM_MATVEC_Q8 kernels for tm_matmul: one row of W against TM__MM_COLS columns of x at
 * once, for q8_0, q4_0, q4_K, q6_K (the 1-column kernels of matvec_avx2.c) and q5_K, iq4_xs,
 * mxfp4, q4_1, iq4_nl (those of matvec_avx2_q8.c). Built with their own -m flags; only the table is exported.
 *
 * Each kernel walks the row's blocks once: a block's codes (nibbles split, fifth bits merged,
 * table values looked up, sign taken for maddubs) and its scales are formed once, then dotted
 * with every column's x block. Per column the float operations are the 1-column kernel's, in its
 * order and in the same lanes (one float multiply-add per block into eight lanes and the same
 * horizontal sum for q8_0, q4_0, q4_K, q6_K; eight float lanes per segment of 8 blocks into
 * double for q4_1, iq4_nl; the block's exact integer sums scaled into double for q5_K, iq4_xs,
 * mxfp4); the integer sums are exact, so their order is free. So y[c] is that
 * kernel's result for column c bit for bit, which tests/test_matmul.c checks against tm_matvec
 * on every golden row and on random blocks. Loads are unaligned and never leave the row. */
#include "../blocks.h"
#include "../kernels.h"
#include "../quant_tables.h"

#include "avx2_common.h"

#include <math.h>

#define COLS TM__MM_COLS

/* A block's signed codes c for the sign trick (maddubs wants one unsigned operand): |c| once,
 * then per column x with c's signs: sum c x in int32 lanes. */
typedef struct signed_codes {
    __m256i abs, sign;
} signed_codes;

static signed_codes with_signs(__m256i c) { return (signed_codes){ _mm256_sign_epi8(c, c), c }; }

static __m256i pairs_s(signed_codes c, __m256i x)
{
    return _mm256_maddubs_epi16(c.abs, _mm256_sign_epi8(x, c.sign));
}

static __m256i dot_s(signed_codes c, __m256i x)
{
    return _mm256_madd_epi16(pairs_s(c, x), _mm256_set1_epi16(1));
}

/* the int16 scale k (of 8, in each 128-bit lane of s) in every lane */
static __m256i scale_k(__m256i s, int k)
{
    return _mm256_shuffle_epi8(s, _mm256_set1_epi16((short)(0x0100 + 0x0202 * k)));
}

/* ---- 32-element blocks, one float multiply-add per block (q8_0, q4_0) ----------------------- */

static __m256i q8_0_codes(const uint8_t *b) { return ld256(b + 2); }
static __m256i q4_0_codes(const uint8_t *b)
{
    return _mm256_sub_epi8(nibbles(b + 2), _mm256_set1_epi8(8));
}

/* as matvec_avx2.c: acc += (d dx) (codes . x) per block, eight lanes, summed at the end */
#define MM_FMA32(name, block, codes_of)                                                       \
    static void name(const void *w, const void *const xq[COLS], size_t n_blocks,            \
                     float y[COLS])                                                           \
    {                                                                                         \
        const uint8_t *b = w;                                                                 \
        __m256 acc[COLS];                                                                     \
        for (int c = 0; c < COLS; c++)                                                        \
            acc[c] = _mm256_setzero_ps();                                                     \
        for (size_t i = 0; i < n_blocks; i++, b += sizeof(block)) {                          \
            const signed_codes q = with_signs(codes_of(b));                                   \
            const float d = half(b);                                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)                            \
            {                                                                                 \
                const tm__q8_0x *x = (const tm__q8_0x *)xq[c] + i;                            \
                const __m256 s = _mm256_cvtepi32_ps(dot_s(q, ld256(x->qs)));                  \
                acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), s, acc[c]);                \
            }                                                                                 \
        }                                                                                     \
        for (int c = 0; c < COLS; c++)                                                        \
            y[c] = hsum_ps(acc[c]);                                                           \
    }
MM_FMA32(row_q8_0_q8_avx2, tm__block_q8_0, q8_0_codes)
MM_FMA32(row_q4_0_q8_avx2, tm__block_q4_0, q4_0_codes)
#undef MM_FMA32

/* ---- 32-element blocks, eight float lanes per block into double (q4_1, iq4_nl) -------------- */

/* unsigned codes (q4_1's nibbles) go to maddubs as they are */
static signed_codes unsigned_codes(__m256i u) { return (signed_codes){ u, u }; }
static __m256i pairs_u(signed_codes c, __m256i x) { return _mm256_maddubs_epi16(c.abs, x); }


/* as matvec_avx2_q8.c's 32-element kernels: per column, in segments of Q8_CHAIN blocks,
 * (d dx) (codes . x) multiply-added into eight float lanes [and the offset's m s (x's sums:
 * x_sums) into a float], the segment's lanes [and float] into double, summed at the end. (The
 * 1-column iq4_nl kernel adds a zero vector to its lanes first: that changes no sum, since a
 * -0 added into a double sum begun at +0 leaves it as adding +0 does.) */
#define MM_LANES32(name, block, codes_of, prep, pairs, offset)                                \
    static void name(const void *w, const void *const xq[COLS], size_t n_blocks,            \
                     float y[COLS])                                                           \
    {                                                                                         \
        const uint8_t *b = w;                                                                 \
        const __m256i one16 = _mm256_set1_epi16(1);                                           \
        dacc a[COLS];                                                                         \
        double offsets[COLS];                                                                 \
        for (int c = 0; c < COLS; c++)                                                        \
            a[c] = acc_zero(), offsets[c] = 0;                                                \
        for (size_t i = 0; i < n_blocks;) {                                                   \
            const size_t end = n_blocks - i < Q8_CHAIN ? n_blocks : i + Q8_CHAIN;             \
            __m256 f[COLS];                                                                   \
            float m_s[COLS];                                                                  \
            for (int c = 0; c < COLS; c++)                                                    \
                f[c] = _mm256_setzero_ps(), m_s[c] = 0;                                       \
            for (; i < end; i++, b += sizeof(block)) {                                        \
                const signed_codes q = prep(codes_of(b));                                     \
                const float d = half(b), m = (offset) ? half(b + 2) : 0;                      \
                _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)                        \
                {                                                                             \
                    const tm__q8_0x *x = (const tm__q8_0x *)xq[c] + i;                        \
                    const __m256i p = _mm256_madd_epi16(pairs(q, ld256(x->qs)), one16);       \
                    f[c] = scaled_fma(d * x->d, p, f[c]);                                     \
                    if (offset)                                                               \
                        m_s[c] = fmaf(m, x_sums(xq[c], n_blocks)[i], m_s[c]);                 \
                }                                                                             \
            }                                                                                 \
            for (int c = 0; c < COLS; c++) {                                                  \
                acc_add(&a[c], f[c]);                                                         \
                offsets[c] += m_s[c];                                                         \
            }                                                                                 \
        }                                                                                     \
        for (int c = 0; c < COLS; c++)                                                        \
            y[c] = (float)(acc_sum_pd(&a[c]) + offsets[c]);                                   \
    }
MM_LANES32(row_q4_1_q8_avx2, tm__block_q4_1, q4_1_bytes, unsigned_codes, pairs_u, 1)
MM_LANES32(row_iq4_nl_q8_avx2, tm__block_iq4_nl, iq4_nl_bytes, with_signs, pairs_s, 0)
#undef MM_LANES32

/* ---- mxfp4: the block's integer sum scaled in double ---------------------------------------- */

/* per column as matvec_avx2_q8.c's dot_mxfp4_q8_avx2: four blocks at a time into the column's
 * four double lanes (mxfp4_quad), the last n % 4 into a double of their own, the same final sum */
static void row_mxfp4_q8_avx2(const void *w, const void *const xq[COLS], size_t n_blocks,
                             float y[COLS])
{
    const uint8_t *b = w;
    __m256d acc[COLS];
    double tail[COLS];
    for (int c = 0; c < COLS; c++) {
        acc[c] = _mm256_setzero_pd();
        tail[c] = 0.0;
    }
    size_t i = 0;
    for (; i + 4 <= n_blocks; i += 4, b += 4 * sizeof(tm__block_mxfp4)) {
        signed_codes q[4];
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            q[k] = with_signs(looked_up(tm__kvalues_fp4, b + (size_t)k * sizeof(tm__block_mxfp4) + 1));
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
        {
            const tm__q8_0x *x = (const tm__q8_0x *)xq[c] + i;
            __m256i s[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                s[k] = dot_s(q[k], ld256(x[k].qs));
            acc[c] = mxfp4_quad(acc[c], b, x, s);
        }
    }
    for (; i < n_blocks; i++, b += sizeof(tm__block_mxfp4)) {
        const signed_codes q = with_signs(mxfp4_bytes(b));
        const double e = (double)d_e8m0(b);
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
        {
            const tm__q8_0x *x = (const tm__q8_0x *)xq[c] + i;
            tail[c] += e * (double)x->d * hsum_epi32(dot_s(q, ld256(x->qs)));
        }
    }
    for (int c = 0; c < COLS; c++)
        y[c] = (float)(hsum_pd(acc[c]) + tail[c]);
}

/* ---- 256-element blocks, x as q8_K ---------------------------------------------------------- */

/* q4_K and q5_K's eight 6-bit scales as int16 in both 128-bit lanes, their mins as int16 */
static void k4_scales(const uint8_t *b, __m256i *scales, __m128i *mins)
{
    uint32_t w4[4];
    tm__k4_scale_min_words(b + 4, w4);
    const uint8_t *sm = (const uint8_t *)w4;
    *mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(sm + 8)));
    *scales = _mm256_broadcastsi128_si256(
        _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)sm)));
}

/* x's sums of its eight groups of 32 times the mins, in four int32 lanes */
static __m128i mins_by_bsums(__m128i mins, const tm__q8_Kx *x)
{
    return _mm_madd_epi16(mins, _mm_hadd_epi16(ld128(x->bsums), ld128(x->bsums + 8)));
}

/* q4_K / q5_K: group g's 32 codes (unsigned, 0..31) are u[g]; sum over groups of
 * sc_g (u_g . x_g) as eight int32 lanes */
static __m256i k4_groups_dot(const __m256i u[8], __m256i scales, const tm__q8_Kx *x)
{
    __m256i isum = _mm256_setzero_si256();
    for (int g = 0; g < 8; g++)
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(u[g], ld256(x->qs + 32 * g)),
                                                        scale_k(scales, g)));
    return isum;
}

/* q4_K: as matvec_avx2.c, (d dx) isum and (dmin dx) (mins . sums) into two float vectors */
static void row_q4_K_q8_avx2(const void *w, const void *const xq[COLS], size_t n_blocks,
                            float y[COLS])
{
    const uint8_t *b = w;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc[COLS], accm[COLS];
    for (int c = 0; c < COLS; c++)
        acc[c] = accm[c] = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K)) {
        __m256i scales, u[8];
        __m128i mins;
        k4_scales(b, &scales, &mins);
        for (int j = 0; j < 4; j++) {
            const __m256i q = ld256(b + 16 + 32 * j);
            u[2 * j] = _mm256_and_si256(q, m4);
            u[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        }
        const float d = half(b), dmin = half(b + 2);
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
        {
            const tm__q8_Kx *x = (const tm__q8_Kx *)xq[c] + i;
            const __m256i isum = k4_groups_dot(u, scales, x);
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), _mm256_cvtepi32_ps(isum), acc[c]);
            accm[c] = _mm256_fmadd_ps(_mm256_set1_ps(dmin * x->d),
                                      _mm256_cvtepi32_ps(_mm256_zextsi128_si256(mins_by_bsums(mins, x))),
                                      accm[c]);
        }
    }
    for (int c = 0; c < COLS; c++)
        y[c] = hsum_ps(acc[c]) - hsum_ps(accm[c]);
}

/* q5_K: as q4_K with bit g of qh[l] adding 16 to element l of group g; as matvec_avx2_q8.c,
 * the block's exact integer sums scaled in double */
static void row_q5_K_q8_avx2(const void *w, const void *const xq[COLS], size_t n_blocks,
                            float y[COLS])
{
    const uint8_t *b = w;
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256d acc[COLS];
    for (int c = 0; c < COLS; c++)
        acc[c] = _mm256_setzero_pd();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q5_K)) {
        __m256i scales, u[8];
        __m128i mins;
        k4_scales(b, &scales, &mins);
        const __m256i qh = ld256(b + 16);
        for (int j = 0; j < 4; j++) {
            const __m256i q = ld256(b + 48 + 32 * j);
            const __m256i hlo = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4);
            const __m256i hhi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4);
            u[2 * j] = _mm256_or_si256(_mm256_and_si256(q, m4), hlo);
            u[2 * j + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), hhi);
        }
        const double d = (double)half(b), dmin = (double)half(b + 2);
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
        {
            const tm__q8_Kx *x = (const tm__q8_Kx *)xq[c] + i;
            acc[c] = block_fma_pd(acc[c], (double)x->d * d, k4_groups_dot(u, scales, x));
            acc[c] = block_mins_fma_pd(acc[c], (double)x->d * dmin, mins_by_bsums(mins, x));
        }
    }
    for (int c = 0; c < COLS; c++)
        y[c] = (float)hsum_pd(acc[c]);
}

/* q6_K: as matvec_avx2.c, codes unsigned (q + 32), the 32 sum(sc x) that adds removed with x's
 * 16-sums, one float multiply-add per block */
static void row_q6_K_q8_avx2(const void *w, const void *const xq[COLS], size_t n_blocks,
                            float y[COLS])
{
    const uint8_t *b = w;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    /* byte g eight times, then byte g + 1 eight times */
    const __m128i pair = _mm_set_epi8(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256 acc[COLS];
    for (int c = 0; c < COLS; c++)
        acc[c] = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K)) {
        const __m128i sc8 = ld128(b + 192);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        /* run k of half h: ql nibble | two qh bits << 4, bytes 0..31 of run 4h + k */
        __m256i u[8], s[8];
        for (int h = 0; h < 2; h++) {
            const __m256i l0 = ld256(b + 64 * h), l1 = ld256(b + 64 * h + 32);
            const __m256i qh = ld256(b + 128 + 32 * h);
            for (int k = 0; k < 4; k++) {
                const __m256i l = k & 1 ? l1 : l0;
                const __m256i lo = k < 2 ? l : _mm256_srli_epi16(l, 4);
                u[4 * h + k] = _mm256_or_si256(
                    _mm256_and_si256(lo, m4),
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m2), 4));
                s[4 * h + k] = _mm256_cvtepi8_epi16(
                    _mm_shuffle_epi8(sc8, _mm_add_epi8(pair, _mm_set1_epi8((char)(8 * h + 2 * k)))));
            }
        }
        const float d = half(b + 208);
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
        {
            const tm__q8_Kx *x = (const tm__q8_Kx *)xq[c] + i;
            __m256i isum = _mm256_sub_epi32(_mm256_setzero_si256(),
                                            _mm256_slli_epi32(_mm256_madd_epi16(sc16, ld256(x->bsums)), 5));
            for (int r = 0; r < 8; r++)
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(
                    _mm256_maddubs_epi16(u[r], ld256(x->qs + 32 * r)), s[r]));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), _mm256_cvtepi32_ps(isum), acc[c]);
        }
    }
    for (int c = 0; c < COLS; c++)
        y[c] = hsum_ps(acc[c]);
}

/* iq4_xs: eight groups of 32, table values, signed 6-bit group scales; as matvec_avx2_q8.c,
 * the block's exact integer sum scaled in double */
static void row_iq4_xs_q8_avx2(const void *w, const void *const xq[COLS], size_t n_blocks,
                              float y[COLS])
{
    const uint8_t *b = w;
    __m256d acc[COLS];
    for (int c = 0; c < COLS; c++)
        acc[c] = _mm256_setzero_pd();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_iq4_xs)) {
        signed_codes q[8];
        __m256i sc[8];
        for (unsigned g = 0; g < 8; g++) {
            q[g] = with_signs(looked_up(tm__kvalues_iq4nl, b + 8 + 16 * g));
            sc[g] = _mm256_set1_epi16((short)(tm__iq4_xs_scale(b, g) - 32));
        }
        const double d = (double)half(b);
        _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
        {
            const tm__q8_Kx *x = (const tm__q8_Kx *)xq[c] + i;
            __m256i isum = _mm256_setzero_si256();
            for (unsigned g = 0; g < 8; g++)
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs_s(q[g], ld256(x->qs + 32 * g)), sc[g]));
            acc[c] = block_fma_pd(acc[c], (double)x->d * d, isum);
        }
    }
    for (int c = 0; c < COLS; c++)
        y[c] = (float)hsum_pd(acc[c]);
}

/* the rows of a call one at a time */
TM__MM_Q8_BY_ROW(mm_iq4_nl_q8_avx2, row_iq4_nl_q8_avx2)
TM__MM_Q8_BY_ROW(mm_iq4_xs_q8_avx2, row_iq4_xs_q8_avx2)
TM__MM_Q8_BY_ROW(mm_mxfp4_q8_avx2, row_mxfp4_q8_avx2)
TM__MM_Q8_BY_ROW(mm_q4_0_q8_avx2, row_q4_0_q8_avx2)
TM__MM_Q8_BY_ROW(mm_q4_1_q8_avx2, row_q4_1_q8_avx2)
TM__MM_Q8_BY_ROW(mm_q4_K_q8_avx2, row_q4_K_q8_avx2)
TM__MM_Q8_BY_ROW(mm_q5_K_q8_avx2, row_q5_K_q8_avx2)
TM__MM_Q8_BY_ROW(mm_q6_K_q8_avx2, row_q6_K_q8_avx2)
TM__MM_Q8_BY_ROW(mm_q8_0_q8_avx2, row_q8_0_q8_avx2)

const tm__kernels tm__kernels_matmul_avx2_q8 = {
    .mm_q8 = {
        [TM_TYPE_Q8_0] = mm_q8_0_q8_avx2,
        [TM_TYPE_Q4_0] = mm_q4_0_q8_avx2,
        [TM_TYPE_Q4_K] = mm_q4_K_q8_avx2,
        [TM_TYPE_Q5_K] = mm_q5_K_q8_avx2,
        [TM_TYPE_Q6_K] = mm_q6_K_q8_avx2,
        [TM_TYPE_IQ4_XS] = mm_iq4_xs_q8_avx2,
        [TM_TYPE_MXFP4] = mm_mxfp4_q8_avx2,
        [TM_TYPE_Q4_1] = mm_q4_1_q8_avx2,
        [TM_TYPE_IQ4_NL] = mm_iq4_nl_q8_avx2,
    },
};
