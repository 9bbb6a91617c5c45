/* AVX2 (+FMA, F16C) row-dot kernels for tm_matvec, built with their own -m flags.
 *
 * TM_MATVEC_F32: the codes of a block are widened to float in registers and multiplied by x,
 * the scale applied to each group's partial dot (q4_K: each weight formed as ggml rounds it);
 * no decoded float is ever stored.
 * TM_MATVEC_Q8: ggml's integer scheme (maddubs of unsigned codes by signed 8-bit x, madd by the
 * group scales), one float multiply-add per block.
 * Loads are unaligned (blocks in a file are 2-byte aligned) and never leave the row.
 * Only the table is exported; every function is static. */
#include "../blocks.h"
#include "../kernels.h"

#include <immintrin.h>
#include <string.h>

static float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

static __m128i ld128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
static __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

static float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* bytes 0..7 / 8..15 of v as eight floats */
static __m256 u8lo(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }
static __m256 u8hi(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8))); }
static __m256 i8lo(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
static __m256 i8hi(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8))); }

/* sum over 16 codes (bytes of v, widened by lo/hi) times x[0..15], as eight lanes */
#define DOT16(lo, hi, v, x) _mm256_fmadd_ps(hi(v), _mm256_loadu_ps((x) + 8), \
                                            _mm256_mul_ps(lo(v), _mm256_loadu_ps(x)))

/* ---- TM_MATVEC_F32 ------------------------------------------------------------------------- */

/* Partial sums are kept in float for at most four products per lane, then added into two double
 * vectors: the float rounding stays near one rounding per product even in rows whose terms
 * cancel to a y far smaller than they are. */
typedef struct dacc {
    __m256d lo, hi;
} dacc;

static dacc acc_zero(void) { return (dacc){ _mm256_setzero_pd(), _mm256_setzero_pd() }; }

static void acc_add(dacc *a, __m256 f)
{
    a->lo = _mm256_add_pd(a->lo, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    a->hi = _mm256_add_pd(a->hi, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
}

static float acc_sum(const dacc *a)
{
    const __m256d s = _mm256_add_pd(a->lo, a->hi);
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return (float)_mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

/* f32, f16, bf16: eight elements at a time into four float accumulators, into doubles every 128
 * elements; the last n % 8 through a zero-padded copy, so nothing past the row is read. */
static __m256 f32x8(const uint8_t *p) { return _mm256_loadu_ps((const float *)(const void *)p); }
static __m256 f16x8(const uint8_t *p) { return _mm256_cvtph_ps(ld128(p)); }
static __m256 bf16x8(const uint8_t *p)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(ld128(p)), 16));
}

#define DOT_PLAIN(name, widen, size)                                                          \
    static float name(const void *w, const float *x, size_t n)                               \
    {                                                                                         \
        const uint8_t *p = w;                                                                 \
        dacc a = acc_zero();                                                                   \
        size_t i = 0;                                                                         \
        while (i + 8 <= n) {                                                                  \
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                       \
            const size_t end = n - i < 128 ? i + (n - i) / 32 * 32 : i + 128;                 \
            for (; i < end; i += 32) {                                                        \
                a0 = _mm256_fmadd_ps(widen(p + (size) * i), _mm256_loadu_ps(x + i), a0);      \
                a1 = _mm256_fmadd_ps(widen(p + (size) * (i + 8)), _mm256_loadu_ps(x + i + 8), a1); \
                a2 = _mm256_fmadd_ps(widen(p + (size) * (i + 16)), _mm256_loadu_ps(x + i + 16), a2); \
                a3 = _mm256_fmadd_ps(widen(p + (size) * (i + 24)), _mm256_loadu_ps(x + i + 24), a3); \
            }                                                                                 \
            if (end == i && n - i < 32)                                                       \
                for (; i + 8 <= n; i += 8)                                                    \
                    a0 = _mm256_fmadd_ps(widen(p + (size) * i), _mm256_loadu_ps(x + i), a0);  \
            acc_add(&a, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));         \
        }                                                                                     \
        if (i < n) {                                                                          \
            uint8_t wt[8 * (size)] = { 0 };                                                   \
            float xt[8] = { 0 };                                                              \
            memcpy(wt, p + (size) * i, (size) * (n - i));                                     \
            memcpy(xt, x + i, sizeof(float) * (n - i));                                       \
            acc_add(&a, _mm256_mul_ps(widen(wt), _mm256_loadu_ps(xt)));                       \
        }                                                                                     \
        return acc_sum(&a);                                                                   \
    }
DOT_PLAIN(dot_f32_avx2, f32x8, 4)
DOT_PLAIN(dot_f16_avx2, f16x8, 2)
DOT_PLAIN(dot_bf16_avx2, bf16x8, 2)
#undef DOT_PLAIN

/* q8_0: d sum(q x) per 34-byte block, into double per block. */
static float dot_q8_0_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q8_0), x += 32) {
        const __m256 v = _mm256_add_ps(DOT16(i8lo, i8hi, ld128(b + 2), x),
                                       DOT16(i8lo, i8hi, ld128(b + 18), x + 16));
        acc_add(&a, _mm256_mul_ps(_mm256_set1_ps(half(b)), v));
    }
    return acc_sum(&a);
}

/* q4_0: d sum((q - 8) x); q - 8 formed as a byte. */
static float dot_q4_0_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_0), x += 32) {
        const __m128i q = ld128(b + 2);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, m4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);
        const __m256 v = _mm256_add_ps(DOT16(i8lo, i8hi, lo, x), DOT16(i8lo, i8hi, hi, x + 16));
        acc_add(&a, _mm256_mul_ps(_mm256_set1_ps(half(b)), v));
    }
    return acc_sum(&a);
}

/* q4_K: each weight decoded in a register exactly as ggml does, (d sc) q - (dmin m) rounded,
 * then multiplied by x: factoring the min out (dmin m sum(x)) would cancel against the scaled
 * codes and lose the float32 accuracy promised. */
static __m256 q4_K_group(__m128i codes, const float *x, __m256 d1, __m256 m1, __m256 part)
{
    part = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_mul_ps(d1, u8lo(codes)), m1),
                           _mm256_loadu_ps(x), part);
    return _mm256_fmadd_ps(_mm256_sub_ps(_mm256_mul_ps(d1, u8hi(codes)), m1),
                           _mm256_loadu_ps(x + 8), part);
}

static float dot_q4_K_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    const __m256i m4 = _mm256_set1_epi8(15);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x += 256) {
        const float d = half(b), dmin = half(b + 2);
        for (int j = 0; j < 4; j++) {
            const __m256i q = ld256(b + 16 + 32 * j);
            const __m256i nib[2] = { _mm256_and_si256(q, m4),
                                     _mm256_and_si256(_mm256_srli_epi16(q, 4), m4) };
            for (int h = 0; h < 2; h++) {
                const int g = 2 * j + h;
                unsigned sc, m;
                tm__k4_scale_min(b + 4, g, &sc, &m);
                const __m256 d1 = _mm256_set1_ps(d * (float)sc), m1 = _mm256_set1_ps(dmin * (float)m);
                const __m256 p = q4_K_group(_mm256_castsi256_si128(nib[h]), x + 32 * g, d1, m1,
                                            _mm256_setzero_ps());
                acc_add(&a, q4_K_group(_mm256_extracti128_si256(nib[h], 1), x + 32 * g + 16, d1,
                                       m1, p));
            }
        }
    }
    return acc_sum(&a);
}

/* q6_K: the four 32-element runs of each 128-element half as bytes 0..63 (ql nibble | two qh
 * bits << 4). */
static void q6_K_codes(const uint8_t *ql, const uint8_t *qh, __m256i q[4])
{
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    const __m256i l0 = ld256(ql), l1 = ld256(ql + 32), h = ld256(qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
}

/* q6_K: (d sc) sum((q - 32) x) per 16-element group. */
static float dot_q6_K_avx2(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    const __m256i bias = _mm256_set1_epi8(32);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x += 256) {
        const float d = half(b + 208);
        const int8_t *sc = (const int8_t *)(const void *)(b + 192);
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6_K_codes(b + 64 * h, b + 128 + 32 * h, q);
            for (int k = 0; k < 4; k++) {
                const __m256i s = _mm256_sub_epi8(q[k], bias);
                const float *xk = x + 128 * h + 32 * k;
                const int g = 8 * h + 2 * k;
                const __m256 p = _mm256_mul_ps(_mm256_set1_ps(d * (float)sc[g]),
                                               DOT16(i8lo, i8hi, _mm256_castsi256_si128(s), xk));
                acc_add(&a, _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[g + 1]),
                                            DOT16(i8lo, i8hi, _mm256_extracti128_si256(s, 1), xk + 16),
                                            p));
            }
        }
    }
    return acc_sum(&a);
}

/* ---- TM_MATVEC_Q8 -------------------------------------------------------------------------- */

/* sum of signed bytes a * b in 32-bit lanes (ggml's sign trick: maddubs wants one unsigned) */
static __m256i dot_i8(__m256i a, __m256i b)
{
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static float dot_q8_0_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q8_0), x++) {
        const __m256 s = _mm256_cvtepi32_ps(dot_i8(ld256(b + 2), ld256(x->qs)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * x->d), s, acc);
    }
    return hsum(acc);
}

static float dot_q4_0_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_0), x++) {
        const __m128i q = ld128(b + 2);
        const __m256i codes = _mm256_sub_epi8(
            _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4)),
            _mm256_set1_epi8(8));
        const __m256 s = _mm256_cvtepi32_ps(dot_i8(codes, ld256(x->qs)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * x->d), s, acc);
    }
    return hsum(acc);
}

/* q4_K: per block, sum over groups of sc * (codes . x) as eight int32 lanes, one float
 * multiply-add by d dx; the mins against x's pair sums in int16 (madd), into a second float
 * vector. No horizontal sum until the row ends. */
static float dot_q4_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps(), accm = acc;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x++) {
        uint32_t w4[4];
        tm__k4_scale_min_words(b + 4, w4);
        const uint8_t *sm = (const uint8_t *)w4;
        /* x's sums of groups of 32 (pairs of its 16-sums) times the mins */
        const __m128i xs32 = _mm_hadd_epi16(ld128(x->bsums), ld128(x->bsums + 8));
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(sm + 8)));
        const __m128i pm = _mm_madd_epi16(mins, xs32);
        /* the eight scales as int16 in both halves; vpshufb broadcasts scale s with the byte
         * pair (2s, 2s + 1) */
        const __m256i scales = _mm256_broadcastsi128_si256(
            _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)sm)));
        __m256i isum = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = ld256(b + 16 + 32 * j);
            const __m256i plo = _mm256_maddubs_epi16(_mm256_and_si256(q, m4), ld256(x->qs + 64 * j));
            const __m256i phi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                                                     ld256(x->qs + 64 * j + 32));
            const __m256i slo = _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)(0x0100 + 0x0202 * 2 * j)));
            const __m256i shi = _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)(0x0100 + 0x0202 * (2 * j + 1))));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(plo, slo));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(phi, shi));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b) * x->d), _mm256_cvtepi32_ps(isum), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(half(b + 2) * x->d),
                               _mm256_cvtepi32_ps(_mm256_castsi128_si256(pm)), accm);
    }
    return hsum(acc) - hsum(accm);
}

/* q6_K: codes taken unsigned (q + 32), each 16-element group times its int8 scale; the
 * 32 sum(sc x) that adds is removed with x's 16-sums (one madd), before the float multiply. */
static float dot_q6_K_q8_avx2(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x++) {
        const __m128i sc8 = ld128(b + 192);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        __m256i isum = _mm256_slli_epi32(_mm256_madd_epi16(sc16, ld256(x->bsums)), 5);
        isum = _mm256_sub_epi32(_mm256_setzero_si256(), isum);
        /* byte g eight times, then byte g + 1 eight times */
        const __m128i pair = _mm_set_epi8(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6_K_codes(b + 64 * h, b + 128 + 32 * h, q);
            for (int k = 0; k < 4; k++) {
                const int g = 8 * h + 2 * k;
                const __m256i p = _mm256_maddubs_epi16(q[k], ld256(x->qs + 128 * h + 32 * k));
                const __m256i s = _mm256_cvtepi8_epi16(
                    _mm_shuffle_epi8(sc8, _mm_add_epi8(pair, _mm_set1_epi8((char)g))));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, s));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b + 208) * x->d), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum(acc);
}

const tm__kernels tm__kernels_matvec_avx2 = {
    .mv_f32 = {
        [TM_TYPE_F32] = dot_f32_avx2,
        [TM_TYPE_F16] = dot_f16_avx2,
        [TM_TYPE_BF16] = dot_bf16_avx2,
        [TM_TYPE_Q8_0] = dot_q8_0_avx2,
        [TM_TYPE_Q4_0] = dot_q4_0_avx2,
        [TM_TYPE_Q4_K] = dot_q4_K_avx2,
        [TM_TYPE_Q6_K] = dot_q6_K_avx2,
    },
    .mv_q8 = {
        [TM_TYPE_Q8_0] = dot_q8_0_q8_avx2,
        [TM_TYPE_Q4_0] = dot_q4_0_q8_avx2,
        [TM_TYPE_Q4_K] = dot_q4_K_q8_avx2,
        [TM_TYPE_Q6_K] = dot_q6_K_q8_avx2,
    },
};
