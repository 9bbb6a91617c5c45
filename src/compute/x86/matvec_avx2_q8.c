/* AVX2 TM_MATVEC_Q8 kernels for the block types real files carry beside the four of
 * matvec_avx2.c and the grid and ternary ones of matvec_avx2_iq.c: q4_1, q5_0, q5_1, iq4_nl,
 * mxfp4, nvfp4, q1_0, q2_0 (x as q8_0), q2_K, q3_K, q5_K, iq4_xs (x as q8_K). Built with their
 * own -m flags; only the table is exported.
 *
 * ggml's integer scheme: a block's codes as bytes (nibbles split, fifth bits spread with a
 * shuffle and a compare, table values by vpshufb, q1_0's bits as 0 / 1, q2_0's 2-bit codes by
 * a variable shift), maddubs by x's codes (unsigned codes directly, signed ones with the sign
 * trick), madd by the group scales; x's code sums, where q4_1, q5_1 and q1_0 want them, formed
 * once per call in layouts of this path's own (x_q8). A 256-element block's integer sums are
 * reduced exactly (to one int32, or to four int32 lanes for q3_K, q5_K and iq4_xs) and scaled into
 * a double row sum, so the result is W x-hat to float32 rounding even where its terms cancel
 * (golden q2_K rows sum to 15,000 times their y).
 * The smaller blocks are scaled in eight float lanes, one multiply-add per block or x block as
 * ggml's, the lanes added into double every 8 multiply-adds (avx2_common.h: Q8_CHAIN): ggml's
 * cost, and at most about ten float roundings a term. Loads are unaligned and never leave the
 * row. */
#include "../blocks.h"
#include "../kernels.h"
#include "../quant_tables.h"
#include "../quantize_x.h"
#include "avx2_common.h"
#include "prefetch.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

/* ---- blocks of 32, 64 and 128 elements, x as q8_0 ------------------------------------------ */

/* A row of blocks of the type, each XS x blocks, in segments of Q8_CHAIN blocks: per block,
 * type##_fma(b, x, f) multiply-adds its scaled sums once into each of the segment's two float
 * vectors f[0], f[1] (two chains: the offset's, or alternate x blocks), or into f[0] alone;
 * then the two go into double. */
#define DOT_SEGMENTS(type, xs)                                                                \
    static float dot_##type##_q8_avx2(const void *w, const void *xq, size_t n_blocks)        \
    {                                                                                         \
        const uint8_t *b = w;                                                                 \
        const tm__q8_0x *x = xq;                                                              \
        dacc a = acc_zero();                                                                  \
        for (size_t i = 0; i < n_blocks;) {                                                   \
            const size_t end = n_blocks - i < Q8_CHAIN ? n_blocks : i + Q8_CHAIN;             \
            __m256 f[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };                       \
            prefetch_ahead(b, (end - i) * sizeof(tm__block_##type));                          \
            for (; i < end; i++, b += sizeof(tm__block_##type), x += (xs))                    \
                type##_fma(b, x, f);                                                          \
            acc_add(&a, _mm256_add_ps(f[0], f[1]));                                           \
        }                                                                                     \
        return acc_sum(&a);                                                                   \
    }

/* ---- x in layouts of this path's own (x_q8): sums of x's codes formed once per call --------- */

/* x's nx q8_0 blocks at q as matvec.c forms them (tm__quantize_block: the same codes) */
static void q8_0_blocks(const float *x, size_t nx, tm__q8_0x *q)
{
    for (size_t i = 0; i < nx; i++)
        tm__quantize_block(x + 32 * i, 32, &q[i].d, q[i].qs);
}

static int code_sum(const int8_t qs[32])
{
    int t = 0;
    for (int j = 0; j < 32; j++)
        t += qs[j];
    return t;
}

/* For q4_1 and q5_1: the q8_0 blocks, then per x block s = dx (sum of its codes), rounded once
 * (ggml's q8_1 keeps it as a half). A NaN or an infinity in the block makes s NaN, so the rows'
 * y come out NaN, as from the q8_0 blocks alone. */
static size_t x_q8_sums(const float *x, size_t n, void *out)
{
    const size_t nx = n / 32, bytes = nx * (sizeof(tm__q8_0x) + sizeof(float));
    if (!out)
        return bytes;
    tm__q8_0x *q = out;
    q8_0_blocks(x, nx, q);
    float *s = (float *)(void *)(q + nx);
    for (size_t i = 0; i < nx; i++)
        s[i] = q[i].d * (float)code_sum(q[i].qs);
    return bytes;
}

/* For q1_0 (dot_q1_0_q8_avx2): the q8_0 blocks, then per 128 elements h = -1/2 sum_k dx_k T_k, T_k
 * x block k's code sum (in double, rounded once); NaN where x has a NaN or an infinity. */
static size_t x_q1_0(const float *x, size_t n, void *out)
{
    const size_t nx = n / 32, bytes = nx * sizeof(tm__q8_0x) + n / 128 * sizeof(float);
    if (!out)
        return bytes;
    tm__q8_0x *q = out;
    q8_0_blocks(x, nx, q);
    float *h = (float *)(void *)(q + nx);
    for (size_t i = 0; i < n / 128; i++) {
        double c = 0;
        for (size_t k = 0; k < 4; k++)
            c += (double)q[4 * i + k].d * code_sum(q[4 * i + k].qs);
        h[i] = (float)(-0.5 * c);
    }
    return bytes;
}

/* q5_0's codes q - 16: the nibble where the fifth bit is set, the nibble | 0xf0 (= nibble - 16)
 * where it is clear */
static inline __m256i q5_0_codes(const uint8_t *b)
{
    return _mm256_or_si256(nibbles(b + 6), _mm256_andnot_si256(bits_set(b + 2), _mm256_set1_epi8(-16)));
}

/* 32-element blocks: (d dx) (codes . x) into f[0] */
#define BLOCK32(type, codes_of, mul)                                                          \
    static inline void type##_fma(const uint8_t *b, const tm__q8_0x *x, __m256 f[2])        \
    {                                                                                         \
        f[0] = scaled_fma(half4(b) * x->d, pairs_i32(mul(codes_of(b), ld256(x->qs))), f[0]); \
    }                                                                                         \
    DOT_SEGMENTS(type, 1)
/* with the offset m (the half at b + 2), x as x_q8_sums lays it out: (d dx) (codes . x) into the
 * lanes, and m s (s = dx (sum of x's codes), x's alone) as ggml's q8_1 has it, one scalar
 * multiply-add a block, where forming the sum in every row took four vector operations; the
 * segment's scalar goes into double beside its lanes */
#define BLOCK32_OFFSET(type, codes_of)                                                        \
    static float dot_##type##_q8_avx2(const void *w, const void *xq, size_t n_blocks)        \
    {                                                                                         \
        const uint8_t *b = w;                                                                 \
        const tm__q8_0x *x = xq;                                                              \
        const float *s = x_sums(x, n_blocks);                                                 \
        dacc a = acc_zero();                                                                  \
        double offsets = 0;                                                                   \
        for (size_t i = 0; i < n_blocks;) {                                                   \
            const size_t end = n_blocks - i < Q8_CHAIN ? n_blocks : i + Q8_CHAIN;             \
            __m256 f = _mm256_setzero_ps();                                                   \
            float m_s = 0;                                                                    \
            prefetch_ahead(b, (end - i) * sizeof(tm__block_##type));                          \
            for (; i < end; i++, b += sizeof(tm__block_##type), x++) {                        \
                const __m128 dm = halves4(b);                                                 \
                f = scaled_fma(_mm_cvtss_f32(dm) * x->d,                                      \
                               pairs_i32(mul_u(codes_of(b), ld256(x->qs))), f);               \
                m_s = fmaf(_mm_cvtss_f32(_mm_movehdup_ps(dm)), s[i], m_s);                    \
            }                                                                                 \
            acc_add(&a, f);                                                                   \
            offsets += m_s;                                                                   \
        }                                                                                     \
        return (float)(acc_sum_pd(&a) + offsets);                                             \
    }

BLOCK32_OFFSET(q4_1, q4_1_bytes)
BLOCK32(q5_0, q5_0_codes, mul_s)
BLOCK32_OFFSET(q5_1, q5_1_bytes)
BLOCK32(iq4_nl, iq4_nl_bytes, mul_s)
#undef BLOCK32
#undef BLOCK32_OFFSET

/* nvfp4, 64 elements against two x blocks: sub-block s (16 elements, scale D_s) is the 8 bytes
 * qs[8s..8s+7], low nibbles its first 8 elements, high nibbles its last 8. With the 64-bit
 * words of qs taken in the order 0, 2, 1, 3, word k of the low nibbles' values pairs with word
 * k of unpacklo(x0, x1) (elements 0-7, 32-39, 16-23, 48-55), of the high nibbles' with
 * unpackhi's (8-15, 40-47, 24-31, 56-63): the int32 lanes are sub-blocks 0 0 2 2 1 1 3 3.
 * D_s as ggml rounds it (a UE4M3 byte, halved): its 7 low bits shifted into a half's exponent
 * and mantissa are D_s / 128 exactly (E = 0: a half subnormal), 0x7f is 0; D_s dx rounded once. */
static inline __m128 ue4m3_x4(const uint8_t *p)
{
    const __m128i v = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)tm__rd32(p)));
    const __m128i h = _mm_andnot_si128(_mm_cmpeq_epi16(v, _mm_set1_epi16(0x7f)),
                                       _mm_and_si128(_mm_slli_epi16(v, 7), _mm_set1_epi16(0x3f80)));
    return _mm_mul_ps(_mm_cvtph_ps(h), _mm_set1_ps(128.0f));
}

static inline void nvfp4_fma(const uint8_t *b, const tm__q8_0x *x, __m256 f[2])
{
    const __m256i t = _mm256_broadcastsi128_si256(ld128(tm__kvalues_fp4)), m4 = _mm256_set1_epi8(15);
    const __m256i q = _mm256_permute4x64_epi64(ld256(b + 4), 0xd8);
    const __m256i lo = _mm256_shuffle_epi8(t, _mm256_and_si256(q, m4));
    const __m256i hi = _mm256_shuffle_epi8(t, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
    const __m256i x0 = ld256(x[0].qs), x1 = ld256(x[1].qs);
    const __m256i p = _mm256_add_epi16(mul_s(lo, _mm256_unpacklo_epi64(x0, x1)),
                                       mul_s(hi, _mm256_unpackhi_epi64(x0, x1)));
    const __m128 dx0 = _mm_set1_ps(x[0].d), dx1 = _mm_set1_ps(x[1].d);
    const __m128 s4 = _mm_mul_ps(ue4m3_x4(b), _mm_shuffle_ps(dx0, dx1, 0)); /* D0 D1 dx0, D2 D3 dx1 */
    const __m256 s8 = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(s4),
                                               _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3));
    f[0] = _mm256_fmadd_ps(s8, _mm256_cvtepi32_ps(pairs_i32(p)), f[0]);
}

/* q1_0, 128 elements against four x blocks. Its weights are +-d, so the block's dot with x
 * block k is d (2 S_k - T_k): S_k the sum of x's codes where the bit is set, T_k that of all 32.
 * T_k is x's alone, so x_q1_0 forms -1/2 sum_k dx_k T_k once per call for every row to share
 * (the layout's h, after the q8_0 blocks). A row then costs, per x block, its 32 bits spread
 * to bytes (shuffle, and) and made 0 or 1 (min), maddubs with x's codes, madd, and dx_k's
 * multiply-add: seven vector operations where ggml's sign trick (compare, xor, subtract,
 * maddubs with ones) takes nine. Per block h starts the float lanes and d multiply-adds them
 * into the segment's; the row's sum is doubled at the end (exact). */
static float dot_q1_0_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                             0x0101010101010101, 0);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201u);
    const __m256i one = _mm256_set1_epi8(1);
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    const float *h = x_sums(x, 4 * n_blocks);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks;) {
        const size_t end = n_blocks - i < Q8_CHAIN ? n_blocks : i + Q8_CHAIN;
        __m256 f = _mm256_setzero_ps();
        prefetch_ahead(b, (end - i) * sizeof(tm__block_q1_0));
        for (; i < end; i++, b += sizeof(tm__block_q1_0), x += 4) {
            __m256 g = _mm256_zextps128_ps256(_mm_load_ss(h + i));
            for (int k = 0; k < 4; k++) {
                const __m256i r = _mm256_shuffle_epi8(_mm256_set1_epi32((int)tm__rd32(b + 2 + 4 * k)), spread);
                const __m256i set = _mm256_min_epu8(_mm256_and_si256(r, bit), one);
                g = lanes_fma(_mm256_broadcast_ss(&x[k].d), pairs_i32(mul_u(set, ld256(x[k].qs))), g);
            }
            f = _mm256_fmadd_ps(_mm256_set1_ps(half4(b)), g, f);
        }
        acc_add(&a, f);
    }
    return 2.0f * acc_sum(&a);
}

/* q2_0, 64 elements against two x blocks: element 4i + s is bits 2s of qs[i]. Dword j of qs
 * shifted by 0, 2, 4, 6 gives, byte m, the codes of elements 4(4j + m) + s; x's bytes are dealt
 * to match (dword s of each 128-bit lane: the lane's bytes s, s + 4, s + 8, s + 12). Codes u - 1
 * by maddubs(u, x) - maddubs(1, x); d dx_k rounded once. */
static inline void q2_0_fma(const uint8_t *b, const tm__q8_0x *x, __m256 f[2])
{
    const __m256i q = _mm256_castsi128_si256(ld128(b + 2));
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    const __m256i deal = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    const float d = half4(b);
    for (int k = 0; k < 2; k++) {
        const __m256i words = _mm256_permutevar8x32_epi32(
            q, _mm256_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1));
        const __m256i u = _mm256_and_si256(_mm256_srlv_epi32(words, shifts), _mm256_set1_epi8(3));
        const __m256i xv = ld256(x[k].qs);
        const __m256i p = _mm256_sub_epi16(mul_u(u, _mm256_shuffle_epi8(xv, deal)),
                                           mul_u(_mm256_set1_epi8(1), xv));
        f[k] = scaled_fma(d * x[k].d, pairs_i32(p), f[k]);
    }
}

DOT_SEGMENTS(nvfp4, 2)
DOT_SEGMENTS(q2_0, 2)
#undef DOT_SEGMENTS

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
    const __m256i m3 = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    const __m256i paired = runs_paired(sc);
    __m256i isum = _mm256_setzero_si256();
    const __m256i h = hm ? ld256(hm) : _mm256_setzero_si256();
    for (int half_ = 0; half_ < 2; half_++) {
        const __m256i q = ld256(qs + 32 * half_);
        for (int s = 0; s < 4; s++) {
            __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), m3);
            if (hm) { /* q3_K: mask bit k = 4h + s moved to bit 2 (4), so u = q + 4h in 0..7; a
                       * 16-bit shift by at most 5 brings the other byte's bits no lower than 3 */
                const int k = 4 * half_ + s;
                const __m256i hk = k >= 2 ? _mm256_srli_epi16(h, k - 2) : _mm256_slli_epi16(h, 2 - k);
                u = _mm256_or_si256(u, _mm256_and_si256(hk, four));
            }
            const __m256i p = mul_u(u, ld256(xqs + 128 * half_ + 32 * s));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, scale_k(paired, 4 * half_ + s)));
        }
    }
    return isum;
}

/* v_r * bsums_r over the 16 runs in int32 lanes, v the sixteen int8 bytes */
static __m256i by_bsums(__m128i v, const int16_t *bsums)
{
    return _mm256_madd_epi16(_mm256_cvtepi8_epi16(v), ld256(bsums));
}

/* q2_K: d sc q - dmin m: sum sc (q . x) against sum m bsums. Two blocks a step, their four
 * integer sums reduced together into int32 lanes (isum0, msum0, isum1, msum1), each times its
 * exact dx d or -dx dmin in double (two int32 hsums a block ran at 0.73 of ggml's speed in
 * L2, this at 0.89, AMD EPYC) */
TM__INLINE __m256i q2_K_sums(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m128i m4 = _mm_set1_epi8(15), sm = ld128(b);
    return _mm256_hadd_epi32(runs_dot(b + 16, NULL, x->qs, _mm_and_si128(sm, m4)),
                             by_bsums(_mm_and_si128(_mm_srli_epi16(sm, 4), m4), x->bsums));
}

static __m128d q2_K_scales(const uint8_t *b, const tm__q8_Kx *x)
{
    const __m128d dm = _mm_cvtps_pd(_mm_cvtph_ps(_mm_cvtsi32_si128((int)tm__rd32(b + 80))));
    return _mm_xor_pd(_mm_mul_pd(_mm_set1_pd((double)x->d), dm), _mm_setr_pd(0.0, -0.0));
}

static float dot_q2_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const size_t bb = sizeof(tm__block_q2_K);
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    __m256d acc = _mm256_setzero_pd();
    size_t i = 0;
    for (; i + 2 <= n_blocks; i += 2, b += 2 * bb, x += 2) {
        prefetch_ahead(b, 2 * bb);
        const __m256i h = _mm256_hadd_epi32(q2_K_sums(b, x), q2_K_sums(b + bb, x + 1));
        const __m128i v = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const __m256d scale = _mm256_set_m128d(q2_K_scales(b + bb, x + 1), q2_K_scales(b, x));
        acc = _mm256_add_pd(acc, _mm256_mul_pd(scale, _mm256_cvtepi32_pd(v)));
    }
    double tail = 0.0;
    if (i < n_blocks) {
        const __m256i h = q2_K_sums(b, x);
        __m128i v = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const __m128d p = _mm_mul_pd(q2_K_scales(b, x), _mm_cvtepi32_pd(_mm_hadd_epi32(v, v)));
        tail = _mm_cvtsd_f64(p) + _mm_cvtsd_f64(_mm_unpackhi_pd(p, p));
    }
    return (float)(hsum_pd(acc) + tail);
}

/* q3_K's sixteen 6-bit scales less 32 as int8 (tm__q3_K_scale_words' bytes, formed in a
 * register: low nibbles of bytes 0..7 then their high nibbles, each | 2 bits of bytes 8..11
 * shifted by 0, 2, 4, 6) */
static __m128i q3_K_scales(const uint8_t *s12)
{
    const __m128i m4 = _mm_set1_epi8(15), a01 = _mm_loadl_epi64((const __m128i *)(const void *)s12);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(a01, m4), _mm_and_si128(_mm_srli_epi32(a01, 4), m4));
    const __m128i a2 = _mm_srlv_epi32(_mm_set1_epi32((int)tm__rd32(s12 + 8)), _mm_setr_epi32(0, 2, 4, 6));
    const __m128i hi = _mm_and_si128(_mm_slli_epi32(a2, 4), _mm_set1_epi8(0x30));
    return _mm_sub_epi8(_mm_or_si128(lo, hi), _mm_set1_epi8(32));
}

/* q3_K: codes q + 4h - 4, taken as u = q + 4h; the 4 sum sc x that adds is removed with the
 * bsums, in integers */
static float dot_q3_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    __m256d acc = _mm256_setzero_pd();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q3_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q3_K));
        const __m128i sc = q3_K_scales(b + 96);
        const __m256i isum = _mm256_sub_epi32(runs_dot(b + 32, b, x->qs, sc),
                                              _mm256_slli_epi32(by_bsums(sc, x->bsums), 2));
        acc = block_fma_pd(acc, (double)x->d * (double)half(b + 108), isum);
    }
    return (float)hsum_pd(acc);
}

/* q5_K: as matvec_avx2.c's q4_K, with bit g of qh[l] adding 16 to element l of group g; the
 * block's int32 lanes and its mins' into four double lanes (its sums reduced to two int32 into
 * a scalar double ran at 0.85-0.87 of ggml's speed, these lanes at 1.03: Zen 4, W in L3) */
static float dot_q5_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256d acc = _mm256_setzero_pd();
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
        acc = block_fma_pd(acc, (double)x->d * (double)half(b), isum);
        acc = block_mins_fma_pd(acc, (double)x->d * (double)half(b + 2), pm);
    }
    return (float)hsum_pd(acc);
}

/* iq4_xs's eight 6-bit group scales less 32 as int16, in both 128-bit lanes: the low nibbles
 * (scales_l, 4 bytes) and the 2-bit high parts (scales_h, 16 bits) each spread to one byte a
 * group by three shift-or-mask steps */
static __m256i iq4_xs_scales(const uint8_t *b)
{
    uint64_t lo = tm__rd32(b + 4), hi = tm__rd16(b + 2);
    lo = (lo | lo << 16) & 0x0000ffff0000ffffu;
    lo = (lo | lo << 8) & 0x00ff00ff00ff00ffu;
    lo = (lo | lo << 4) & 0x0f0f0f0f0f0f0f0fu;
    hi = (hi | hi << 24) & 0x000000ff000000ffu;
    hi = (hi | hi << 12) & 0x000f000f000f000fu;
    hi = (hi | hi << 6) & 0x0303030303030303u;
    const __m128i s = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)(lo | hi << 4)));
    return _mm256_broadcastsi128_si256(_mm_sub_epi16(s, _mm_set1_epi16(32)));
}

/* iq4_xs: groups 2p and 2p + 1 (the 32 bytes of qs at 32p) at once: their low nibbles' values
 * in the two 128-bit lanes against x's elements 64p + 0..15 and 64p + 32..47, the high ones'
 * against 64p + 16..31 and 64p + 48..63; the lanes scaled by the two groups' scales */
static float dot_iq4_xs_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m256i t = _mm256_broadcastsi128_si256(ld128(tm__kvalues_iq4nl)), m4 = _mm256_set1_epi8(15);
    __m256d acc = _mm256_setzero_pd();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_iq4_xs), x++) {
        prefetch_ahead(b, sizeof(tm__block_iq4_xs));
        const __m256i scales = iq4_xs_scales(b);
        __m256i isum = _mm256_setzero_si256();
        for (int p = 0; p < 4; p++) {
            const __m256i q = ld256(b + 8 + 32 * p);
            const __m256i lo = _mm256_shuffle_epi8(t, _mm256_and_si256(q, m4));
            const __m256i hi = _mm256_shuffle_epi8(t, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
            const int8_t *xs = x->qs + 64 * p;
            const __m256i xlo = _mm256_set_m128i(ld128(xs + 32), ld128(xs));
            const __m256i xhi = _mm256_set_m128i(ld128(xs + 48), ld128(xs + 16));
            const __m256i sc = _mm256_shuffle_epi8(scales, _mm256_set_m128i(
                _mm_set1_epi16((short)(0x0100 + 0x0202 * (2 * p + 1))), _mm_set1_epi16((short)(0x0100 + 0x0202 * 2 * p))));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(mul_s(lo, xlo), sc));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(mul_s(hi, xhi), sc));
        }
        acc = block_fma_pd(acc, (double)x->d * (double)half(b), isum);
    }
    return (float)hsum_pd(acc);
}

const tm__kernels tm__kernels_matvec_avx2_q8 = {
    .x_q8 = { [TM_TYPE_Q4_1] = x_q8_sums, [TM_TYPE_Q5_1] = x_q8_sums, [TM_TYPE_Q1_0] = x_q1_0 },
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
