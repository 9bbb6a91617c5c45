/* AVX512-FP16 kernels: TM_MATVEC_Q8 for f16 weights in f16 arithmetic, the 1-column kernel
 * (tm__mv_q8_fn) and its batched form (tm__mm_q8_fn) from one loop. Built with the AVX-512 flags
 * and -mavx512fp16; only the table is exported; run only where the CPU has AVX512-FP16.
 *
 * Why: a float32 multiply-add takes sixteen products, a half one thirty-two, in the same
 * instruction slot. Against several columns (tm_matmul, a prompt) the f16 product is bound by
 * its multiply-adds, not by reading W, and there the halves' rate is what ggml's own f16 product
 * has on these CPUs (x rounded to f16, as ggml pairs f16 weights). x is the tm__f16x of the plan
 * (kernels.h): halves of x / scale, |h| < 2, so the products never overflow a half.
 *
 * The sums: per STEP elements, four vectors of 32 halves, each multiply-added into its own half
 * accumulator; after CHAIN steps (at most CHAIN multiply-adds a lane) the four are added in halves,
 * (a0 + a1) + (a2 + a3), widened to float and added into a float vector; every SEGMENT elements
 * that vector's lanes go into a double sum. So a term goes through at most six half roundings
 * and a few float ones (docs/matvec.md derives the bound from this). A row whose sum comes out infinite or NaN (a
 * half sum of 32 weights above 2047 can overflow; or x or W held an infinity or a NaN) is summed
 * again in float32 arithmetic from the same halves, which overflows only where the float32 result
 * does. The batched kernel runs the same loop with the columns side by side: each column's y is
 * the 1-column kernel's bit for bit (tests/test_matmul.c checks it). */
#include "../kernels.h"

#include "avx512_common.h"
#include "halves_x.h"
#include "prefetch.h"

#include <math.h>
#include <string.h>

#define STEP 128u
#define CHAIN 4u
#define FLUSH (STEP * CHAIN)
#define SEGMENT (8u * FLUSH)

static inline __m512h halves(const uint16_t *p) { return _mm512_castsi512_ph(ld512(p)); }
static inline __m512h halves_masked(const uint16_t *p, __mmask32 k)
{
    return _mm512_castsi512_ph(_mm512_maskz_loadu_epi16(k, p));
}

/* The four half accumulators of a column, (a0 + a1) + (a2 + a3), widened and added into f */
TM__INLINE __m512 widen_add(__m512h a0, __m512h a1, __m512h a2, __m512h a3, __m512 f)
{
    const __m512h sum = _mm512_add_ph(_mm512_add_ph(a0, a1), _mm512_add_ph(a2, a3));
    const __m512i s = _mm512_castph_si512(sum);
    const __m512 lo = _mm512_cvtxph_ps(_mm256_castsi256_ph(_mm512_castsi512_si256(s)));
    const __m512 hi = _mm512_cvtxph_ps(_mm256_castsi256_ph(_mm512_extracti64x4_epi64(s, 1)));
    return _mm512_add_ps(f, _mm512_add_ps(lo, hi));
}

/* Elements [i, end) of the row (end - i <= FLUSH), for the columns, a STEP at a time (the last
 * one's vectors masked to the row), vector q of each step into accumulator q: so no lane takes
 * more than CHAIN multiply-adds; then into f. */
TM__INLINE void chains(const uint16_t *w, const uint16_t *const *h, unsigned cols, size_t i, size_t end,
                       __m512 *f)
{
    __m512h a[4][TM__MM_COLS];
    _Pragma("GCC unroll 4") for (unsigned q = 0; q < 4; q++)
        _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
            a[q][c] = _mm512_setzero_ph();
    for (; end - i >= STEP; i += STEP) {
        prefetch_ahead((const uint8_t *)(w + i), 2 * STEP);
        _Pragma("GCC unroll 4") for (unsigned q = 0; q < 4; q++)
        {
            const __m512h wv = halves(w + i + 32 * q);
            _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
                a[q][c] = _mm512_fmadd_ph(wv, halves(h[c] + i + 32 * q), a[q][c]);
        }
    }
    if (i < end) /* the row's last step, short */
        _Pragma("GCC unroll 4") for (unsigned q = 0; q < 4; q++)
        {
            const size_t e = i + 32 * q, left = end > e ? end - e : 0;
            if (!left)
                break;
            const __mmask32 k = left >= 32 ? ~(__mmask32)0 : ((__mmask32)1 << left) - 1;
            const __m512h wv = halves_masked(w + e, k);
            _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
                a[q][c] = _mm512_fmadd_ph(wv, halves_masked(h[c] + e, k), a[q][c]);
        }
    _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
        f[c] = widen_add(a[0][c], a[1][c], a[2][c], a[3][c], f[c]);
}

/* sixteen floats into a double: the lanes widened, added in double */
static inline double to_double(__m512 f)
{
    return _mm512_reduce_add_pd(_mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(f)),
                                              _mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1))));
}

/* Row w (n halves) against the columns' halves h[c], the sums in double (before the scale) */
TM__INLINE void dot_half(const uint16_t *w, const uint16_t *const *h, unsigned cols, size_t n,
                         double *out)
{
    _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
        out[c] = 0.0;
    for (size_t s = 0; s < n; s += SEGMENT) {
        const size_t s_end = n - s < SEGMENT ? n : s + SEGMENT;
        __m512 f[TM__MM_COLS];
        _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
            f[c] = _mm512_setzero_ps();
        for (size_t i = s; i < s_end; i += FLUSH)
            chains(w, h, cols, i, s_end - i < FLUSH ? s_end : i + FLUSH, f);
        _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
            out[c] += to_double(f[c]);
    }
}

/* The same row and column in float32 arithmetic (each product exact in float, the sums flushed
 * into double every 512 elements): for a row whose half sums overflowed */
static double dot_float(const uint16_t *w, const uint16_t *h, size_t n)
{
    dacc d = acc_zero();
    for (size_t s = 0; s < n; s += 512) {
        __m512 f = _mm512_setzero_ps();
        for (size_t i = s; i < n && i < s + 512; i += 16) {
            const __mmask16 k = (__mmask16)(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1);
            f = _mm512_fmadd_ps(f16x16((const uint8_t *)(w + i), k),
                                f16x16((const uint8_t *)(h + i), k), f);
        }
        acc_add(&d, f);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(d.lo, d.hi));
}

/* Row w against the columns' x (tm__f16x), y[c] */
TM__INLINE void rows_f16(const void *w, const void *const *xq, unsigned cols, size_t n, float *y)
{
    const uint16_t *h[TM__MM_COLS];
    double sum[TM__MM_COLS];
    _Pragma("GCC unroll 4") for (unsigned c = 0; c < cols; c++)
        h[c] = ((const tm__f16x *)xq[c])->h;
    dot_half(w, h, cols, n, sum);
    for (unsigned c = 0; c < cols; c++) {
        const double scale = ((const tm__f16x *)xq[c])->scale;
        if (!isfinite(sum[c]))
            sum[c] = dot_float(w, h[c], n);
        y[c] = (float)(sum[c] * scale);
    }
}

/* n_blocks: the row's elements (an f16 block is one) */
static float mv_f16_q8_avx512fp16(const void *w, const void *xq, size_t n_blocks)
{
    float y;
    rows_f16(w, &xq, 1, n_blocks, &y);
    return y;
}

static void row_f16_q8_avx512fp16(const void *w, const void *const xq[TM__MM_COLS], size_t n_blocks,
                                 float y[TM__MM_COLS])
{
    rows_f16(w, xq, TM__MM_COLS, n_blocks, y);
}

/* the rows of a call one at a time */
TM__MM_Q8_BY_ROW(mm_f16_q8_avx512fp16, row_f16_q8_avx512fp16)

const tm__kernels tm__kernels_matvec_avx512fp16 = {
    .x_q8 = { [TM_TYPE_F16] = x_f16 }, /* halves_x.h */
    .mv_q8 = { [TM_TYPE_F16] = mv_f16_q8_avx512fp16 },
    .mm_q8 = { [TM_TYPE_F16] = mm_f16_q8_avx512fp16 },
};
