/* AVX2 kernels for tm_matmul and tm_matvec over f16 and bf16 rows, from one loop: the float32-x
 * batched kernels (kernels.h: tm__mm_f32_fn), and TM_MATVEC_Q8's with x rounded to the weights'
 * own type (halves_x.h: f16 x for f16 weights, bf16 x for bf16 ones, as ggml pairs them), both
 * the 1-column kernel (tm__mv_q8_fn) and its batched form (tm__mm_q8_fn). Built with the AVX2
 * flags; only the table is exported.
 *
 * Per column the float operations are those of matvec_avx2.c's dot_f16_avx2 / dot_bf16_avx2
 * (DOT_PLAIN), in its order and lanes: the row in segments of at most PLAIN_SEGMENT (128); in each,
 * float accumulator q (of four) takes the eight elements at offset 8q of every 32 by one
 * multiply-add chain, accumulator 0 then also each whole eight left when fewer than 32 remain
 * after the segment; the four go into double as (a0 + a1) + (a2 + a3); the last n % 8 through a
 * zero-padded copy; the same double sum at the end, times x's scale (a power of two; 1 for float
 * x). What differs is only what is shared and when: each eight weights are widened to float
 * once for all the columns, the four chains of a segment run two at a time (each chain's own
 * order unchanged), so that eight column accumulators, not sixteen, are live at a time, and the
 * rows of a call go a segment at a time (each row's segments still in order), so that the
 * columns' segment is read from L1 by every row. So y[c] is the 1-column kernel's result for
 * column c bit for bit (the F32 one's, or the Q8 one's, which is this loop on one row and one
 * column), which tests/test_matmul.c checks against tm_matvec. Loads are unaligned and never
 * leave the row or a column.
 *
 * Why x as halves in TM_MATVEC_Q8: one column of f16 weights streamed from DRAM reads 2 bytes of
 * W an element and, with x in float32, 4 of x from the cache; as halves x takes 8 KiB a row of
 * 4096, not 16, and stays in L1 beside the stream. On an AMD EPYC (Zen 4, one thread, W from
 * DRAM) the float32-x loop ran at 0.6-0.7 of ggml's f16 vec_dot, the halves one at 0.85-0.97
 * (BENCHMARKS.md). Each product of two halves is exact in float (11 or 8 significant bits
 * each): the error is x's rounding and the float32 sums' (docs/matvec.md). */
#include "../kernels.h"

#include "avx2_common.h"
#include "halves_x.h"
#include "prefetch.h"

#include <stdalign.h>
#include <stdbool.h>
#include <string.h>

#define COLS TM__MM_COLS

/* eight weights (or x values) at p widened to floats (avx2_common.h: f16x8, bf16x8; f32x8 here) */
typedef __m256 widen_fn(const uint8_t *p);
static __m256 f32x8(const uint8_t *p) { return _mm256_loadu_ps((const float *)(const void *)p); }

HALVES_COLUMNS(widen_fn, f32x8)

/* For k < n_chains (1 or 2): acc[k][c] += w[j, j + 8) x[c][j, j + 8) for j = from + 8k,
 * from + 8k + step, ... while j - 8k is below to: one multiply-add chain per column and k, each
 * eight weights widened once for all the columns (2 bytes a weight). Two chains at a time give
 * eight independent multiply-adds per step, enough to cover their latency, and with the widened
 * weights still fit the sixteen registers; the loops over k and the columns are unrolled so that
 * the accumulators and the column pointers stay in registers. W is prefetched as the 1-column
 * F32 kernel prefetches it: the 1-column Q8 kernel streams it from DRAM (a batched call finds
 * it in L2, where a hint costs an instruction a step). */
TM__INLINE void chains(widen_fn *widen, const uint8_t *w, const columns_x *xs, size_t from, size_t to,
                       size_t step, int n_chains, __m256 acc[][COLS])
{
    __m256 s[2][COLS];
    const uint8_t *xc[COLS];
    _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
    {
        xc[c] = xs->x[c];
        _Pragma("GCC unroll 2") for (int k = 0; k < n_chains; k++)
            s[k][c] = acc[k][c];
    }
    for (size_t j = from; j < to; j += step) {
        prefetch_ahead(w + 2 * j, 16 * (size_t)n_chains);
        _Pragma("GCC unroll 2") for (int k = 0; k < n_chains; k++)
        {
            const size_t e = j + 8 * (size_t)k;
            const __m256 wv = widen(w + 2 * e);
            _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
                s[k][c] = _mm256_fmadd_ps(wv, xs->widen(xc[c] + xs->size * (e - xs->origin)),
                                          s[k][c]);
        }
    }
    _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
        _Pragma("GCC unroll 2") for (int k = 0; k < n_chains; k++)
            acc[k][c] = s[k][c];
}

/* Elements [i, next) of every row into a[r]: the 1-column kernel's segment (next is end, or
 * end and the whole eights left after it). Inlined with xs a local of known widening and
 * columns, so that the loops unroll and the widening is no call. */
TM__INLINE void segment_rows(widen_fn *widen, const uint8_t *p, size_t row_bytes, size_t n_rows,
                             const columns_x *xs, size_t i, size_t end, size_t next,
                             dacc a[][COLS])
{
    for (size_t r = 0; r < n_rows; r++) {
        const uint8_t *row = p + r * row_bytes;
        __m256 l[4][COLS];
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
            _Pragma("GCC unroll 8") for (unsigned c = 0; c < xs->cols; c++)
                l[q][c] = _mm256_setzero_ps();
        chains(widen, row, xs, i, end, 32, 2, l);
        chains(widen, row, xs, i + 16, end + 16, 32, 2, l + 2);
        chains(widen, row, xs, end, next, 8, 1, l);
        for (unsigned c = 0; c < xs->cols; c++)
            acc_add(&a[r][c], _mm256_add_ps(_mm256_add_ps(l[0][c], l[1][c]),
                                            _mm256_add_ps(l[2][c], l[3][c])));
    }
}

/* The rows a segment at a time (the columns' segment, at most 2 KiB, stays in L1 for all of
 * them), each row's segments in the 1-column kernel's order; then each row's tail and sum.
 * Several rows against x in 16 bits widen the columns' segment to float once, into seg, for all
 * of them (widening is exact: the same products, the same bits), where one row widens each x
 * vector as it goes: against four columns, widening per row cost a conversion per multiply-add. */
TM__INLINE void dot_halves(widen_fn *widen, const void *w, size_t row_bytes, size_t n_rows,
                           const columns_x *xs, size_t n, float *y)
{
    const uint8_t *p = w;
    const bool widen_once = xs->size == 2 && n_rows > 1;
    alignas(32) float seg[COLS][PLAIN_SEGMENT + 24]; /* a segment: at most 128 + three eights */
    columns_x wide = { .widen = f32x8, .size = 4, .cols = xs->cols };
    for (unsigned c = 0; widen_once && c < xs->cols; c++)
        wide.x[c] = (const uint8_t *)seg[c];
    dacc a[TM__MM_ROWS][COLS];
    for (size_t r = 0; r < n_rows; r++)
        for (unsigned c = 0; c < xs->cols; c++)
            a[r][c] = acc_zero();
    size_t i = 0;
    while (i + 8 <= n) {
        const size_t end = n - i < PLAIN_SEGMENT ? i + (n - i) / 32 * 32 : i + PLAIN_SEGMENT;
        /* fewer than 32 left after the segment's 32s: accumulator 0 takes their whole eights */
        const size_t next = n - end < 32 ? end + (n - end) / 8 * 8 : end;
        if (widen_once) {
            for (unsigned c = 0; c < xs->cols; c++)
                for (size_t e = i; e < next; e += 8)
                    _mm256_store_ps(seg[c] + (e - i), xs->widen(xs->x[c] + 2 * e));
            wide.origin = i;
            segment_rows(widen, p, row_bytes, n_rows, &wide, i, end, next, a);
        } else
            segment_rows(widen, p, row_bytes, n_rows, xs, i, end, next, a);
        i = next;
    }
    for (size_t r = 0; r < n_rows; r++) {
        if (i < n) {
            uint8_t wt[16] = { 0 };
            memcpy(wt, p + r * row_bytes + 2 * i, 2 * (n - i));
            const __m256 wv = widen(wt);
            for (unsigned c = 0; c < xs->cols; c++) {
                uint8_t xt[32] = { 0 };
                memcpy(xt, xs->x[c] + xs->size * i, xs->size * (n - i));
                acc_add(&a[r][c], _mm256_mul_ps(wv, xs->widen(xt)));
            }
        }
        for (unsigned c = 0; c < xs->cols; c++)
            y[r * xs->cols + c] = (float)(acc_sum_pd(&a[r][c]) * xs->scale[c]);
    }
}

/* n_blocks: the row's elements (a block of f16 or bf16 is one) */
#define FLOAT_X(name, widen)                                                                   \
    static void name(const void *w, size_t row_bytes, size_t n_rows,                          \
                     const float *const x[COLS], size_t n_blocks, float *y)                   \
    {                                                                                          \
        const columns_x xs = float_columns(x);                                                 \
        dot_halves(widen, w, row_bytes, n_rows, &xs, n_blocks, y);                             \
    }
FLOAT_X(mm_f16_avx2, f16x8)
FLOAT_X(mm_bf16_avx2, bf16x8)
#undef FLOAT_X

HALVES_KERNELS(mv_f16_q8_avx2, mm_f16_q8_avx2, f16x8, dot_halves)
HALVES_KERNELS(mv_bf16_q8_avx2, mm_bf16_q8_avx2, bf16x8, dot_halves)

const tm__kernels tm__kernels_matmul_avx2_f16 = {
    .mm_f32 = {
        [TM_TYPE_F16] = mm_f16_avx2,
        [TM_TYPE_BF16] = mm_bf16_avx2,
    },
    .x_q8 = { [TM_TYPE_F16] = x_f16, [TM_TYPE_BF16] = x_bf16 },
    .mv_q8 = { [TM_TYPE_F16] = mv_f16_q8_avx2, [TM_TYPE_BF16] = mv_bf16_q8_avx2 },
    .mm_q8 = { [TM_TYPE_F16] = mm_f16_q8_avx2, [TM_TYPE_BF16] = mm_bf16_q8_avx2 },
};
