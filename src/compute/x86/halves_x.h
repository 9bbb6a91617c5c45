/* x rounded to 16 bits for TM_MATVEC_Q8 of f16 and bf16 weights, as ggml pairs them (f16 x for
 * f16 weights, bf16 x for bf16 ones): the x_q8 kernels (tm__x_q8_fn) of the AVX2 and AVX-512 f16
 * product files (matmul_avx2_f16.c, matmul_avx512_f16.c) and of avx512fp16's
 * (matvec_avx512fp16.c), which include this with their own flags; AVX2 and F16C intrinsics, so
 * every path rounds alike, bit for bit. Static functions only: each file puts them in its own
 * table. Also the x of those files' loops (HALVES_COLUMNS). */
#ifndef TM_COMPUTE_X86_HALVES_X_H
#define TM_COMPUTE_X86_HALVES_X_H

#include "../kernels.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* the largest |x| as the bits of a float (as integers every NaN is above the infinity, which is
 * above every finite value, so one unsigned max finds a NaN too) */
static inline uint32_t max_magnitude(const float *x, size_t n)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256i m = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(x + i)), abs_mask));
    uint32_t lanes[8], top = 0;
    _mm256_storeu_si256((__m256i *)lanes, m);
    for (unsigned k = 0; k < 8; k++)
        top = lanes[k] > top ? lanes[k] : top;
    for (; i < n; i++) {
        uint32_t b;
        memcpy(&b, x + i, sizeof b);
        b &= 0x7fffffffu;
        top = b > top ? b : top;
    }
    return top;
}

/* Eight floats at x (count of them, the rest read as 0) to eight 16-bit values at out (count of
 * them written) by round8; the tail of a row goes through a zero-padded copy. */
typedef __m128i round8_fn(__m256 v, __m256 f1, __m256 f2);

TM__INLINE void round_x(round8_fn *round8, const float *x, size_t n, uint16_t *out, __m256 f1,
                        __m256 f2)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i), round8(_mm256_loadu_ps(x + i), f1, f2));
    if (i < n) {
        float t[8] = { 0 };
        uint16_t o[8];
        memcpy(t, x + i, sizeof(float) * (n - i));
        _mm_storeu_si128((__m128i *)o, round8(_mm256_loadu_ps(t), f1, f2));
        memcpy(out + i, o, 2 * (n - i));
    }
}

/* x / scale to halves, to nearest even (written into the instruction: the MXCSR rounding mode
 * cannot change it). The quotient is x times 2^k1 times 2^k2 (k1 + k2 = -log2 scale, each a
 * normal float's exponent): both products are exact, except where one falls below float's
 * normal range, and there the quotient is below half's smallest subnormal by far and rounds
 * to 0 (of x's sign) whether exact or not. */
static inline __m128i f16_of(__m256 v, __m256 f1, __m256 f2)
{
    return _mm256_cvtps_ph(_mm256_mul_ps(_mm256_mul_ps(v, f1), f2), _MM_FROUND_TO_NEAREST_INT);
}

/* x as tm__f16x (kernels.h) */
static inline size_t x_f16(const float *x, size_t n, void *out)
{
    tm__f16x *hx = out;
    if (!out)
        return sizeof *hx + n * sizeof hx->h[0];
    const uint32_t top = max_magnitude(x, n);
    int e = 1; /* scale 1 for a zero, infinite or NaN max */
    if (top != 0 && top < 0x7f800000u) {
        float amax;
        memcpy(&amax, &top, sizeof amax);
        (void)frexpf(amax, &e); /* amax = m 2^e, m in [0.5, 1): scale 2^(e - 1) */
    }
    hx->scale = ldexpf(1.0f, e - 1);
    const int k = 1 - e, k1 = k / 2; /* k in [-127, 149] */
    round_x(f16_of, x, n, hx->h, _mm256_set1_ps(ldexpf(1.0f, k1)),
            _mm256_set1_ps(ldexpf(1.0f, k - k1)));
    return sizeof *hx + n * sizeof hx->h[0];
}

/* floats to bf16, to nearest even (ggml's rounding): a NaN stays a NaN (made quiet, as ggml
 * does, so that cutting its low bits cannot leave an infinity) */
static inline __m128i bf16_of(__m256 v, __m256 f1, __m256 f2)
{
    (void)f1, (void)f2;
    const __m256i b = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    /* the low 16 bits of each 32-bit lane, in order (packus cannot overflow: r < 2^16) */
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* x as bf16 in a tm__f16x with scale 1 (kernels.h): bf16 keeps float's range */
static inline size_t x_bf16(const float *x, size_t n, void *out)
{
    tm__f16x *hx = out;
    if (!out)
        return sizeof *hx + n * sizeof hx->h[0];
    hx->scale = 1.0f;
    const __m256 one = _mm256_set1_ps(1.0f);
    round_x(bf16_of, x, n, hx->h, one, one);
    return sizeof *hx + n * sizeof hx->h[0];
}


/* The x of a product loop, for a file whose widening is widen_type (eight or sixteen 16-bit or
 * 32-bit values to floats) and whose float32 load is load_floats: columns_x, cols columns (1 or
 * TM__MM_COLS) at x[c], element origin + e at x[c] + size * e, widened by widen, y of column c
 * times scale[c]; float_columns (x in float32, scale 1) and half_columns (tm__f16x). */
#define HALVES_COLUMNS(widen_type, load_floats)                                              \
    typedef struct columns_x {                                                                \
        const uint8_t *x[TM__MM_COLS];                                                        \
        widen_type *widen;                                                                    \
        size_t size, origin;                                                                  \
        unsigned cols;                                                                        \
        double scale[TM__MM_COLS];                                                            \
    } columns_x;                                                                              \
    TM__INLINE columns_x                                                                      \
    float_columns(const float *const x[TM__MM_COLS])                                          \
    {                                                                                         \
        columns_x xs = { .widen = load_floats, .size = 4, .cols = TM__MM_COLS };              \
        for (unsigned c = 0; c < TM__MM_COLS; c++)                                            \
            xs.x[c] = (const uint8_t *)x[c], xs.scale[c] = 1.0;                               \
        return xs;                                                                            \
    }                                                                                         \
    TM__INLINE columns_x                                                                      \
    half_columns(const void *const xq[], unsigned cols, widen_type *widen)                    \
    {                                                                                         \
        columns_x xs = { .widen = widen, .size = 2, .cols = cols };                           \
        for (unsigned c = 0; c < cols; c++) {                                                 \
            const tm__f16x *hx = xq[c];                                                       \
            xs.x[c] = (const uint8_t *)hx->h, xs.scale[c] = (double)hx->scale;                \
        }                                                                                     \
        return xs;                                                                            \
    }

/* TM_MATVEC_Q8's kernels against x in 16 bits from a file's loop dot(widen, w, row_bytes,
 * n_rows, &xs, n_blocks, y): mv the 1-column one (one row, one column), mm its batched form;
 * widen: the weights' widening (f16 or bf16) */
#define HALVES_KERNELS(mv, mm, widen, dot)                                                    \
    static float mv(const void *w, const void *xq, size_t n_blocks)                          \
    {                                                                                         \
        const columns_x xs = half_columns(&xq, 1, widen);                                     \
        float y;                                                                              \
        dot(widen, w, 0, 1, &xs, n_blocks, &y);                                               \
        return y;                                                                             \
    }                                                                                         \
    static void mm(const void *w, size_t row_bytes, size_t n_rows,                          \
                   const void *const xq[TM__MM_COLS], size_t n_blocks, float *y)            \
    {                                                                                         \
        const columns_x xs = half_columns(xq, TM__MM_COLS, widen);                            \
        dot(widen, w, row_bytes, n_rows, &xs, n_blocks, y);                                   \
    }

#endif
