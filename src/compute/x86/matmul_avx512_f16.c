/* AVX-512 kernels for tm_matmul and tm_matvec over f32, f16 and bf16 rows, from one loop: the
 * float32-x batched kernels (kernels.h: tm__mm_f32_fn), and for f16 and bf16 TM_MATVEC_Q8's with x
 * rounded to the weights' own type (halves_x.h; why: matmul_avx2_f16.c), the 1-column kernel
 * (tm__mv_q8_fn) and its batched form (tm__mm_q8_fn). Built with the AVX-512 flags; only the
 * table is exported.
 *
 * Per column the float operations are those of matvec_avx512.c's dot_f32_avx512 /
 * dot_f16_avx512 / dot_bf16_avx512 (DOT_PLAIN), in its order and lanes: the row in segments of
 * at most PLAIN_SEGMENT (512) elements, whole 64s only; in each, float accumulator q (of four) takes the sixteen
 * elements at offset 16q of every 64 by one multiply-add chain, and the four go into double as
 * (a0 + a1) + (a2 + a3); the last n % 64 by one chain t of sixteen at a time, the last sixteen
 * or fewer through masked loads; t into double; the same double sum at the end, times x's scale
 * (a power of two; 1 for float x). What differs
 * is only what is shared and when: each sixteen weights are loaded (and widened) once for all
 * the columns, and the rows of a call go a segment at a time (each row's segments still in
 * order), so that the columns' segment is read from L1 by every row. The four chains of the four
 * columns, sixteen accumulators, run together: with the four widened weight vectors they fit
 * the 32 registers (AVX2's two-at-a-time split is for its
 * sixteen). So y[c] is the 1-column kernel's result for column c bit for bit (the F32 one's, or
 * the Q8 one's, which is this loop on one row and one column), which
 * tests/test_matmul.c checks against tm_matvec. Loads are unaligned and never leave the row or
 * a column (the tail's masked loads read nothing outside the mask). f32 is here too because it
 * is the same code with a load for the widening. */
#include "../kernels.h"

#include "avx512_common.h"
#include "halves_x.h"

#include <stdalign.h>
#include <stdbool.h>

#define COLS TM__MM_COLS
#define ALL 0xffffu

/* sixteen weights (or x values) at p as floats, the lanes outside k zero (avx512_common.h:
 * f32x16, f16x16, bf16x16) */
typedef __m512 widen_fn(const uint8_t *p, __mmask16 k);

HALVES_COLUMNS(widen_fn, f32x16)

/* Row r's segment [i, end) (whole 64s) against the columns, into a[c] as the 1-column kernel's
 * segment: four chains per column, (a0 + a1) + (a2 + a3) into double. size: bytes per weight.
 * The loops over the chains and the columns are unrolled so that the accumulators and the column
 * pointers stay in registers. */
TM__INLINE void segment(widen_fn *widen, size_t size, const uint8_t *p, const columns_x *xs,
                        size_t i, size_t end, dacc a[COLS])
{
    __m512 s[4][COLS];
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
        _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
            s[q][c] = _mm512_setzero_ps();
    for (; i < end; i += 64)
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
        {
            const size_t e = i + 16 * (size_t)q;
            const __m512 wv = widen(p + size * e, ALL);
            _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
                s[q][c] = _mm512_fmadd_ps(
                    wv, xs->widen(xs->x[c] + xs->size * (e - xs->origin), ALL), s[q][c]);
        }
    _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
        acc_add(&a[c], _mm512_add_ps(_mm512_add_ps(s[0][c], s[1][c]),
                                     _mm512_add_ps(s[2][c], s[3][c])));
}

/* The rows a segment at a time (the columns' segment, at most 8 KiB, stays in L1 for all of
 * them), each row's segments in the 1-column kernel's order; then each row's tail and sum.
 * Several rows against x in 16 bits widen the columns' segment to float once, into seg, for all
 * of them (exact: the same products, the same bits; matmul_avx2_f16.c's dot_halves). */
TM__INLINE void dot_plain(widen_fn *widen, size_t size, const void *w, size_t row_bytes,
                          size_t n_rows, const columns_x *xs, size_t n, float *y)
{
    const uint8_t *p = w;
    const bool widen_once = xs->size == 2 && n_rows > 1;
    alignas(64) float seg[COLS][PLAIN_SEGMENT];
    columns_x wide = { .widen = f32x16, .size = 4, .cols = xs->cols };
    for (unsigned c = 0; widen_once && c < xs->cols; c++)
        wide.x[c] = (const uint8_t *)seg[c];
    dacc a[TM__MM_ROWS][COLS];
    for (size_t r = 0; r < n_rows; r++)
        _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
            a[r][c] = acc_zero();
    size_t i = 0;
    while (i + 64 <= n) {
        const size_t end = n - i < PLAIN_SEGMENT ? i + (n - i) / 64 * 64 : i + PLAIN_SEGMENT;
        if (widen_once) {
            for (unsigned c = 0; c < xs->cols; c++)
                for (size_t e = i; e < end; e += 16)
                    _mm512_store_ps(seg[c] + (e - i), xs->widen(xs->x[c] + 2 * e, ALL));
            wide.origin = i;
            for (size_t r = 0; r < n_rows; r++) /* two calls: each inlined with a known xs */
                segment(widen, size, p + r * row_bytes, &wide, i, end, a[r]);
        } else
            for (size_t r = 0; r < n_rows; r++)
                segment(widen, size, p + r * row_bytes, xs, i, end, a[r]);
        i = end;
    }
    for (size_t r = 0; r < n_rows; r++) {
        const uint8_t *row = p + r * row_bytes;
        __m512 t[COLS];
        _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
            t[c] = _mm512_setzero_ps();
        for (size_t e = i; e < n; e += 16) {
            const __mmask16 k = (__mmask16)(n - e >= 16 ? ALL : (1u << (n - e)) - 1);
            const __m512 wv = widen(row + size * e, k);
            _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
                t[c] = _mm512_fmadd_ps(wv, xs->widen(xs->x[c] + xs->size * e, k), t[c]);
        }
        _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
        {
            acc_add(&a[r][c], t[c]);
            y[r * xs->cols + c] = (float)(acc_sum_pd(&a[r][c]) * xs->scale[c]);
        }
    }
}

/* n_blocks: the row's elements (a block of f32, f16 or bf16 is one) */
#define FLOAT_X(name, widen, size)                                                             \
    static void name(const void *w, size_t row_bytes, size_t n_rows,                          \
                     const float *const x[COLS], size_t n_blocks, float *y)                   \
    {                                                                                          \
        const columns_x xs = float_columns(x);                                                 \
        dot_plain(widen, size, w, row_bytes, n_rows, &xs, n_blocks, y);                        \
    }
FLOAT_X(mm_f32_avx512, f32x16, 4)
FLOAT_X(mm_f16_avx512, f16x16, 2)
FLOAT_X(mm_bf16_avx512, bf16x16, 2)
#undef FLOAT_X

/* the loop for 16-bit weights (HALVES_KERNELS' dot) */
TM__INLINE void dot_halves(widen_fn *widen, const void *w, size_t row_bytes, size_t n_rows,
                           const columns_x *xs, size_t n, float *y)
{
    dot_plain(widen, 2, w, row_bytes, n_rows, xs, n, y);
}

HALVES_KERNELS(mv_f16_q8_avx512, mm_f16_q8_avx512, f16x16, dot_halves)
HALVES_KERNELS(mv_bf16_q8_avx512, mm_bf16_q8_avx512, bf16x16, dot_halves)

const tm__kernels tm__kernels_matmul_avx512_f16 = {
    .mm_f32 = {
        [TM_TYPE_F32] = mm_f32_avx512,
        [TM_TYPE_F16] = mm_f16_avx512,
        [TM_TYPE_BF16] = mm_bf16_avx512,
    },
    .x_q8 = { [TM_TYPE_F16] = x_f16, [TM_TYPE_BF16] = x_bf16 },
    .mv_q8 = { [TM_TYPE_F16] = mv_f16_q8_avx512, [TM_TYPE_BF16] = mv_bf16_q8_avx512 },
    .mm_q8 = { [TM_TYPE_F16] = mm_f16_q8_avx512, [TM_TYPE_BF16] = mm_bf16_q8_avx512 },
};
