/* AVX2 TM_MATVEC_Q8 kernels for the block types real files carry beside the four of
 * matvec_avx2.c and the grid and ternary ones of matvec_avx2_iq.c: q4_1, q5_0, q5_1, iq4_nl,
 * mxfp4 (x as q8_0), q2_K, q3_K, q5_K, iq4_xs (x as q8_K); and for nvfp4, q1_0, q2_0, whose
 * codes are unpacked by matvec_unpack.h as the scalar kernels' are, then dotted here. Built with their own -m flags; only the table is exported.
 *
 * ggml's integer scheme: a block's codes as 32 bytes (nibbles split, fifth bits spread with a
 * shuffle and a compare, table values by vpshufb), maddubs by x's codes (unsigned codes
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
                                     _mm256_cvtepi32_ps(pairs_i32(mul(codes_of(b), xv))));        \
            if (m_of) /* the offset against x's sum */                                        \
                f = _mm256_fmadd_ps(_mm256_set1_ps(half(b + 2) * x->d),                       \
                                    _mm256_cvtepi32_ps(pairs_i32(mul_u(_mm256_set1_epi8(1), xv))), f); \
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
            s[k] = pairs_i32(mul_s(mxfp4_bytes(b + (size_t)k * sizeof(tm__block_mxfp4)), ld256(x[k].qs)));
        acc = mxfp4_quad(acc, b, x, s);
    }
    double tail = 0.0;
    for (; i < n_blocks; i++, b += sizeof(tm__block_mxfp4), x++)
        tail += (double)d_e8m0(b) * (double)x->d * hsum_epi32(pairs_i32(mul_s(mxfp4_bytes(b), ld256(x->qs))));
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
            f = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(pairs_i32(mul_s(ld256(q + 32 * p), xv))), f);
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
    },
};
