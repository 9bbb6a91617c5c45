/* AVX-512 (F, BW, VL, DQ) row-dot kernels for tm_matvec, built with their own -m flags.
 *
 * The AVX2 file's schemes on 16 lanes: TM_MATVEC_F32 widens the codes to float in registers
 * (q4_K's weights decoded exactly as ggml rounds them), float partial sums of at most four
 * products per lane, then double; TM_MATVEC_Q8 is ggml's maddubs/madd integer scheme on 64 bytes at a
 * time. Types missing here (q4_0 in TM_MATVEC_Q8) run the AVX2 kernel.
 * Only the table is exported; every function is static. */
#include "../kernels.h"

#include "avx512_common.h"

/* ---- TM_MATVEC_F32 ------------------------------------------------------------------------- */

/* f32, f16, bf16: 64 elements per step, into doubles every 256 (four products per lane); the
 * tail through masked loads. */
#define ALL 0xffffu
#define DOT_PLAIN(name, widen, size)                                                          \
    static float name(const void *w, const float *x, size_t n)                               \
    {                                                                                         \
        const uint8_t *p = w;                                                                 \
        dacc a = acc_zero();                                                                  \
        size_t i = 0;                                                                         \
        while (i + 64 <= n) {                                                                 \
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                       \
            const size_t end = n - i < 256 ? i + (n - i) / 64 * 64 : i + 256;                 \
            for (; i < end; i += 64) {                                                        \
                a0 = _mm512_fmadd_ps(widen(p + (size) * i, ALL), _mm512_loadu_ps(x + i), a0); \
                a1 = _mm512_fmadd_ps(widen(p + (size) * (i + 16), ALL), _mm512_loadu_ps(x + i + 16), a1); \
                a2 = _mm512_fmadd_ps(widen(p + (size) * (i + 32), ALL), _mm512_loadu_ps(x + i + 32), a2); \
                a3 = _mm512_fmadd_ps(widen(p + (size) * (i + 48), ALL), _mm512_loadu_ps(x + i + 48), a3); \
            }                                                                                 \
            acc_add(&a, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));         \
        }                                                                                     \
        __m512 t = _mm512_setzero_ps();                                                       \
        for (; i < n; i += 16) {                                                              \
            const __mmask16 k = (__mmask16)(n - i >= 16 ? ALL : (1u << (n - i)) - 1);         \
            t = _mm512_fmadd_ps(widen(p + (size) * i, k), _mm512_maskz_loadu_ps(k, x + i), t); \
        }                                                                                     \
        acc_add(&a, t);                                                                       \
        return acc_sum(&a);                                                                   \
    }
DOT_PLAIN(dot_f32_avx512, f32x16, 4)
DOT_PLAIN(dot_f16_avx512, f16x16, 2)
DOT_PLAIN(dot_bf16_avx512, bf16x16, 2)
#undef DOT_PLAIN
#undef ALL

/* q8_0: d sum(q x) per 34-byte block, into double every two blocks. */
static float dot_q8_0_avx512(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    dacc a = acc_zero();
    __m512 part = _mm512_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q8_0), x += 32) {
        const __m512 v = _mm512_fmadd_ps(i8x16(ld128(b + 18)), _mm512_loadu_ps(x + 16),
                                         _mm512_mul_ps(i8x16(ld128(b + 2)), _mm512_loadu_ps(x)));
        part = _mm512_fmadd_ps(_mm512_set1_ps(half(b)), v, part);
        if (i % 2 == 1 || i + 1 == n_blocks) { /* four products per lane */
            acc_add(&a, part);
            part = _mm512_setzero_ps();
        }
    }
    return acc_sum(&a);
}

/* q4_0: d sum((q - 8) x); q - 8 formed as a byte. */
static float dot_q4_0_avx512(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    dacc a = acc_zero();
    __m512 part = _mm512_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_0), x += 32) {
        const __m128i q = ld128(b + 2);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, m4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);
        const __m512 v = _mm512_fmadd_ps(i8x16(hi), _mm512_loadu_ps(x + 16),
                                         _mm512_mul_ps(i8x16(lo), _mm512_loadu_ps(x)));
        part = _mm512_fmadd_ps(_mm512_set1_ps(half(b)), v, part);
        if (i % 2 == 1 || i + 1 == n_blocks) { /* four products per lane */
            acc_add(&a, part);
            part = _mm512_setzero_ps();
        }
    }
    return acc_sum(&a);
}

/* The eight (d sc) and (dmin m) of a q4_K block as floats (each product rounded, as ggml's
 * decoder forms them), for broadcast loads. */
static void q4_K_scales(const uint8_t *b, float d1[8], float m1[8])
{
    uint32_t w4[4];
    tm__k4_scale_min_words(b + 4, w4);
    const __m128i v = ld128(w4);
    _mm256_storeu_ps(d1, _mm256_mul_ps(_mm256_set1_ps(half(b)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))));
    _mm256_storeu_ps(m1, _mm256_mul_ps(_mm256_set1_ps(half(b + 2)),
                                       _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)))));
}

/* q4_K: the sixteen values a group's weights can take, (d sc) q - (dmin m) for q = 0..15, are
 * formed once per group exactly as ggml's decoder rounds them, and each weight is looked up with
 * vpermps, whose index is the low four bits of a lane: the code bytes widened to 32 bits are
 * the low nibbles' indices as they stand and, shifted right by 4, the high nibbles'. Into
 * double every 64 elements (four products per lane). */
static float dot_q4_K_avx512(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    const __m512 iota = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x += 256) {
        float d1[8], m1[8];
        q4_K_scales(b, d1, m1);
        for (int j = 0; j < 4; j++) {
            const float *xj = x + 64 * j;
            const __m512 lo = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(d1[2 * j]), iota),
                                            _mm512_set1_ps(m1[2 * j]));
            const __m512 hi = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(d1[2 * j + 1]), iota),
                                            _mm512_set1_ps(m1[2 * j + 1]));
            const __m512i c0 = _mm512_cvtepu8_epi32(ld128(b + 16 + 32 * j));
            const __m512i c1 = _mm512_cvtepu8_epi32(ld128(b + 32 + 32 * j));
            __m512 p0 = _mm512_mul_ps(_mm512_permutexvar_ps(c0, lo), _mm512_loadu_ps(xj));
            __m512 p1 = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(c0, 4), hi),
                                      _mm512_loadu_ps(xj + 32));
            p0 = _mm512_fmadd_ps(_mm512_permutexvar_ps(c1, lo), _mm512_loadu_ps(xj + 16), p0);
            p1 = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(c1, 4), hi),
                                 _mm512_loadu_ps(xj + 48), p1);
            acc_add(&a, _mm512_add_ps(p0, p1));
        }
    }
    return acc_sum(&a);
}

/* q6_K: (d sc) (q - 32) x per 16-element group. The codes are built 64 at a time in registers,
 * stored once to the stack and widened to 32 bits from there (a load, not a shuffle per 16). */
static float dot_q6_K_avx512(const void *w, const float *x, size_t n_blocks)
{
    const uint8_t *b = w;
    const __m512i bias = _mm512_set1_epi8(32);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x += 256) {
        float ds[16];
        const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(ld128(b + 192)));
        _mm512_storeu_ps(ds, _mm512_mul_ps(_mm512_set1_ps(half(b + 208)), sc));
        int8_t q[256];
        for (int h = 0; h < 2; h++) {
            __m512i codes[2];
            q6_K_codes(b + 64 * h, b + 128 + 32 * h, &codes[0], &codes[1]);
            _mm512_storeu_si512(q + 128 * h, _mm512_sub_epi8(codes[0], bias));
            _mm512_storeu_si512(q + 128 * h + 64, _mm512_sub_epi8(codes[1], bias));
        }
        for (int g = 0; g < 16; g += 4) {
            __m512 p0 = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(ds[g]), i8x16(ld128(q + 16 * g))),
                                      _mm512_loadu_ps(x + 16 * g));
            __m512 p1 = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(ds[g + 1]), i8x16(ld128(q + 16 * g + 16))),
                                      _mm512_loadu_ps(x + 16 * g + 16));
            p0 = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(ds[g + 2]), i8x16(ld128(q + 16 * g + 32))),
                                 _mm512_loadu_ps(x + 16 * g + 32), p0);
            p1 = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(ds[g + 3]), i8x16(ld128(q + 16 * g + 48))),
                                 _mm512_loadu_ps(x + 16 * g + 48), p1);
            acc_add(&a, _mm512_add_ps(p0, p1));
        }
    }
    return acc_sum(&a);
}

/* ---- TM_MATVEC_Q8 -------------------------------------------------------------------------- */

/* q8_0: two blocks per 64-byte vector; an odd last block with 32-byte vectors. */
static float dot_q8_0_q8_avx512(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    const __m512i ones = _mm512_set1_epi16(1);
    __m512 acc = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 2 <= n_blocks; i += 2, b += 2 * sizeof(tm__block_q8_0), x += 2) {
        const uint8_t *b1 = b + sizeof(tm__block_q8_0);
        const __m512i qw = join(ld256(b + 2), ld256(b1 + 2));
        const __m512i qx = join(ld256(x[0].qs), ld256(x[1].qs));
        const __m512 s = _mm512_cvtepi32_ps(_mm512_madd_epi16(maddubs_signed(qw, qx), ones));
        const __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(half(b) * x[0].d),
                                             _mm256_set1_ps(half(b1) * x[1].d), 1);
        acc = _mm512_fmadd_ps(dd, s, acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    if (i < n_blocks) {
        const __m256i qw = ld256(b + 2), qx = ld256(x->qs);
        const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
        const __m256i s = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
        sum += half(b) * x->d * (float)_mm_cvtsi128_si32(t);
    }
    return sum;
}

/* q4_K: 64 code bytes (groups 4k .. 4k+3) per step: the low nibbles are groups 4k and 4k+2, the
 * high nibbles 4k+1 and 4k+3. Per block one float multiply-add of the int32 lanes by d dx, and
 * one of the mins (against x's 32-sums, in int16) by dmin dx; no horizontal sum until the end. */
static float dot_q4_K_q8_avx512(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512 acc = _mm512_setzero_ps(), accm = acc;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x++) {
        uint32_t w4[4];
        tm__k4_scale_min_words(b + 4, w4);
        const uint8_t *sm = (const uint8_t *)w4;
        const __m128i xs32 = _mm_hadd_epi16(ld128(x->bsums), ld128(x->bsums + 8));
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(sm + 8)));
        const __m512i pm = _mm512_zextsi128_si512(_mm_madd_epi16(mins, xs32));
        __m512i isum = _mm512_setzero_si512();
        for (int k = 0; k < 2; k++) {
            const __m512i q = ld512(b + 16 + 64 * k);
            const int8_t *xs = x->qs + 128 * k;
            const __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
            const __m512i plo = _mm512_maddubs_epi16(lo, join(ld256(xs), ld256(xs + 64)));
            const __m512i phi = _mm512_maddubs_epi16(hi, join(ld256(xs + 32), ld256(xs + 96)));
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(plo, two_scales(sm[4 * k], sm[4 * k + 2])));
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(phi, two_scales(sm[4 * k + 1], sm[4 * k + 3])));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(half(b) * x->d), _mm512_cvtepi32_ps(isum), acc);
        accm = _mm512_fmadd_ps(_mm512_set1_ps(half(b + 2) * x->d), _mm512_cvtepi32_ps(pm), accm);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(accm);
}

/* q6_K: codes unsigned (q + 32), 64 per vector, each 16-element group times its int8 scale;
 * the 32 sum(sc x) the unsigned codes added is removed with x's 16-sums (one madd). */
static float dot_q6_K_q8_avx512(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    /* int16 lane j (codes 2j, 2j+1) of a 64-code vector is in group j / 8 of the vector's four */
    const __m512i group_of_lane = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2,
                                                   1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512 acc = _mm512_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x++) {
        /* the 16 scales as int16, twice (permutexvar indexes 32 lanes) */
        const __m256i sc16 = _mm256_cvtepi8_epi16(ld128(b + 192));
        const __m512i scales = join(sc16, sc16);
        const __m256i bias = _mm256_slli_epi32(_mm256_madd_epi16(sc16, ld256(x->bsums)), 5);
        __m512i isum = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), bias));
        for (int h = 0; h < 2; h++) {
            __m512i codes[2];
            q6_K_codes(b + 64 * h, b + 128 + 32 * h, &codes[0], &codes[1]);
            for (int k = 0; k < 2; k++) {
                const __m512i p = _mm512_maddubs_epi16(codes[k], ld512(x->qs + 128 * h + 64 * k));
                const __m512i idx = _mm512_add_epi16(group_of_lane, _mm512_set1_epi16((short)(8 * h + 4 * k)));
                isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p, _mm512_permutexvar_epi16(idx, scales)));
            }
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(half(b + 208) * x->d), _mm512_cvtepi32_ps(isum), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

const tm__kernels tm__kernels_matvec_avx512 = {
    .mv_f32 = {
        [TM_TYPE_F32] = dot_f32_avx512,
        [TM_TYPE_F16] = dot_f16_avx512,
        [TM_TYPE_BF16] = dot_bf16_avx512,
        [TM_TYPE_Q8_0] = dot_q8_0_avx512,
        [TM_TYPE_Q4_0] = dot_q4_0_avx512,
        [TM_TYPE_Q4_K] = dot_q4_K_avx512,
        [TM_TYPE_Q6_K] = dot_q6_K_avx512,
    },
    .mv_q8 = {
        [TM_TYPE_Q8_0] = dot_q8_0_q8_avx512,
        [TM_TYPE_Q4_K] = dot_q4_K_q8_avx512,
        [TM_TYPE_Q6_K] = dot_q6_K_q8_avx512,
    },
};
