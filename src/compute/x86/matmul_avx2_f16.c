/* AVX2 float32-x kernels for tm_matmul: one f16 or bf16 row of W against TM__MM_COLS columns of
 * x at once (kernels.h: tm__mm_f32_fn). Built with the AVX2 flags; only the table is exported.
 *
 * Per column the float operations are those of matvec_avx2.c's dot_f16_avx2 / dot_bf16_avx2
 * (DOT_PLAIN), in its order and lanes: the row in segments of at most PLAIN_SEGMENT (128); in each,
 * float accumulator q (of four) takes the eight elements at offset 8q of every 32 by one
 * multiply-add chain, accumulator 0 then also each whole eight left when fewer than 32 remain
 * after the segment; the four go into double as (a0 + a1) + (a2 + a3); the last n % 8 through a
 * zero-padded copy; the same double sum at the end. What differs is only what is shared and
 * when: each eight weights are widened to float once for all the columns, the four chains of a
 * segment run two at a time (each chain's own order unchanged), so that eight column
 * accumulators, not sixteen, are live at a time, and the rows of a call go a segment at a time
 * (each row's segments still in order), so that the columns' segment is read from L1 by every
 * row. So y[c] is the 1-column kernel's result for column c bit for bit, which
 * tests/test_matmul.c checks against tm_matvec. Loads are unaligned and never leave the row or
 * a column. */
#include "../kernels.h"

#include "avx2_common.h"

#include <string.h>

#define COLS TM__MM_COLS
#define INLINE static inline __attribute__((always_inline))

/* eight halves at p widened to floats (avx2_common.h: f16x8, bf16x8) */
typedef __m256 widen_fn(const uint8_t *p);

/* For k < n_chains (1 or 2): acc[k][c] += w[j, j + 8) x[c][j, j + 8) for j = from + 8k,
 * from + 8k + step, ... while j - 8k is below to: one multiply-add chain per column and k, each
 * eight weights widened once for all the columns (2 bytes a weight). Two chains at a time give
 * eight independent multiply-adds per step, enough to cover their latency, and with the widened
 * weights still fit the sixteen registers; the loops over k and the columns are unrolled so that
 * the accumulators and the column pointers stay in registers. */
INLINE void chains(widen_fn *widen, const uint8_t *w, const float *const x[COLS], size_t from,
                   size_t to, size_t step, int n_chains, __m256 acc[][COLS])
{
    __m256 s[2][COLS];
    const float *xc[COLS];
    _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
    {
        xc[c] = x[c];
        _Pragma("GCC unroll 2") for (int k = 0; k < n_chains; k++)
            s[k][c] = acc[k][c];
    }
    for (size_t j = from; j < to; j += step)
        _Pragma("GCC unroll 2") for (int k = 0; k < n_chains; k++)
        {
            const size_t e = j + 8 * (size_t)k;
            const __m256 wv = widen(w + 2 * e);
            _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
                s[k][c] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xc[c] + e), s[k][c]);
        }
    _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
        _Pragma("GCC unroll 2") for (int k = 0; k < n_chains; k++)
            acc[k][c] = s[k][c];
}

/* The rows a segment at a time (the columns' segment, 2 KiB, stays in L1 for all of them), each
 * row's segments in the 1-column kernel's order; then each row's tail and sum. */
INLINE void dot_halves(widen_fn *widen, const void *w, size_t row_bytes, size_t n_rows,
                       const float *const x[COLS], size_t n, float *y)
{
    const uint8_t *p = w;
    dacc a[TM__MM_ROWS][COLS];
    for (size_t r = 0; r < n_rows; r++)
        for (int c = 0; c < COLS; c++)
            a[r][c] = acc_zero();
    size_t i = 0;
    while (i + 8 <= n) {
        const size_t end = n - i < PLAIN_SEGMENT ? i + (n - i) / 32 * 32 : i + PLAIN_SEGMENT;
        /* fewer than 32 left after the segment's 32s: accumulator 0 takes their whole eights */
        const size_t next = n - end < 32 ? end + (n - end) / 8 * 8 : end;
        for (size_t r = 0; r < n_rows; r++) {
            const uint8_t *row = p + r * row_bytes;
            __m256 l[4][COLS];
            _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
                _Pragma("GCC unroll 8") for (int c = 0; c < COLS; c++)
                    l[q][c] = _mm256_setzero_ps();
            chains(widen, row, x, i, end, 32, 2, l);
            chains(widen, row, x, i + 16, end + 16, 32, 2, l + 2);
            chains(widen, row, x, end, next, 8, 1, l);
            for (int c = 0; c < COLS; c++)
                acc_add(&a[r][c], _mm256_add_ps(_mm256_add_ps(l[0][c], l[1][c]),
                                                _mm256_add_ps(l[2][c], l[3][c])));
        }
        i = next;
    }
    for (size_t r = 0; r < n_rows; r++) {
        if (i < n) {
            uint8_t wt[16] = { 0 };
            memcpy(wt, p + r * row_bytes + 2 * i, 2 * (n - i));
            const __m256 wv = widen(wt);
            for (int c = 0; c < COLS; c++) {
                float xt[8] = { 0 };
                memcpy(xt, x[c] + i, sizeof(float) * (n - i));
                acc_add(&a[r][c], _mm256_mul_ps(wv, _mm256_loadu_ps(xt)));
            }
        }
        for (int c = 0; c < COLS; c++)
            y[r * COLS + (size_t)c] = acc_sum(&a[r][c]);
    }
}

/* n_blocks: the row's elements (a block of f16 or bf16 is one) */
static void mm_f16_avx2(const void *w, size_t row_bytes, size_t n_rows,
                        const float *const x[COLS], size_t n_blocks, float *y)
{
    dot_halves(f16x8, w, row_bytes, n_rows, x, n_blocks, y);
}

static void mm_bf16_avx2(const void *w, size_t row_bytes, size_t n_rows,
                         const float *const x[COLS], size_t n_blocks, float *y)
{
    dot_halves(bf16x8, w, row_bytes, n_rows, x, n_blocks, y);
}

const tm__kernels tm__kernels_matmul_avx2_f16 = {
    .mm_f32 = {
        [TM_TYPE_F16] = mm_f16_avx2,
        [TM_TYPE_BF16] = mm_bf16_avx2,
    },
};
