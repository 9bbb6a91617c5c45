/* AVX-512 TM_MATVEC_Q8 kernels for tm_matmul: one row of W against TM__MM_COLS columns of x at
 * once, for q8_0, q4_K and q6_K (the 1-column kernels of matvec_avx512.c; AVX-512 runs
 * AVX2's 1-column and batched kernels for the other 8-bit types). Built with their own -m
 * flags; only the table is exported.
 *
 * Each kernel walks the row's blocks once: a block's codes (signs taken for maddubs, nibbles
 * split, q6_K's high bits merged) and its scales are unpacked once by avx512_common.h's
 * *_unpack, then each column's x block goes through its *_fma, the step the 1-column kernel
 * takes with the same unpacked block. Per column the accumulators, their lanes and their final
 * sums are the 1-column kernel's, so y[c] is that kernel's result for column c bit for bit,
 * which tests/test_matmul.c checks against tm_matvec on every golden row and on random blocks.
 * Per column one accumulator (q4_K: two, its mins apart) stays in a register beside the block's
 * unpacked vectors (q4_K: 8 + 8 of the 32 zmm registers). Loads are unaligned and never leave
 * the row or a column. */
#include "../kernels.h"

#include "avx512_common.h"

#define COLS TM__MM_COLS
/* every loop over the columns, unrolled: at -O2 the accumulators of a loop left rolled live on
 * the stack */
#define UNROLLED _Pragma("GCC unroll 8")

/* as dot_q8_0_q8_avx512: pairs of blocks into one float vector per column, its sum, then an
 * odd last block's term */
static void row_q8_0_q8_avx512(const void *w, const void *const xq[COLS], size_t n_blocks,
                              float y[COLS])
{
    const uint8_t *b = w;
    const tm__q8_0x *x[COLS];
    __m512 acc[COLS];
    UNROLLED for (int c = 0; c < COLS; c++) {
        x[c] = xq[c];
        acc[c] = _mm512_setzero_ps();
    }
    size_t i = 0;
    for (; i + 2 <= n_blocks; i += 2, b += 2 * sizeof(tm__block_q8_0)) {
        const signed_codes q = q8_0_pair_unpack(b);
        const float d0 = half(b), d1 = half(b + sizeof(tm__block_q8_0));
        UNROLLED for (int c = 0; c < COLS; c++)
            acc[c] = q8_0x_pair_fma(q, d0, d1, x[c] + i, acc[c]);
    }
    UNROLLED for (int c = 0; c < COLS; c++)
        y[c] = _mm512_reduce_add_ps(acc[c]);
    if (i < n_blocks) {
        const signed_codes256 q = q8_0_last_unpack(b);
        const float d = half(b);
        UNROLLED for (int c = 0; c < COLS; c++)
            y[c] += q8_0x_last_term(q, d, x[c] + i);
    }
}

/* as dot_q4_K_q8_avx512: the int32 lanes and the mins into two float vectors per column */
static void row_q4_K_q8_avx512(const void *w, const void *const xq[COLS], size_t n_blocks,
                              float y[COLS])
{
    const uint8_t *b = w;
    const tm__q8_Kx *x[COLS];
    __m512 acc[COLS], accm[COLS];
    UNROLLED for (int c = 0; c < COLS; c++) {
        x[c] = xq[c];
        acc[c] = accm[c] = _mm512_setzero_ps();
    }
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K)) {
        const q4_K_unpacked k = q4_K_unpack(b);
        UNROLLED for (int c = 0; c < COLS; c++)
            q4_K_fma(&k, x[c] + i, &acc[c], &accm[c]);
    }
    UNROLLED for (int c = 0; c < COLS; c++)
        y[c] = _mm512_reduce_add_ps(acc[c]) - _mm512_reduce_add_ps(accm[c]);
}

/* as dot_q6_K_q8_avx512: the int32 lanes into one float vector per column */
static void row_q6_K_q8_avx512(const void *w, const void *const xq[COLS], size_t n_blocks,
                              float y[COLS])
{
    const uint8_t *b = w;
    const tm__q8_Kx *x[COLS];
    __m512 acc[COLS];
    UNROLLED for (int c = 0; c < COLS; c++) {
        x[c] = xq[c];
        acc[c] = _mm512_setzero_ps();
    }
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K)) {
        const q6_K_unpacked k = q6_K_unpack(b);
        UNROLLED for (int c = 0; c < COLS; c++)
            acc[c] = q6_K_fma(&k, x[c] + i, acc[c]);
    }
    UNROLLED for (int c = 0; c < COLS; c++)
        y[c] = _mm512_reduce_add_ps(acc[c]);
}

/* the rows of a call one at a time */
TM__MM_Q8_BY_ROW(mm_q4_K_q8_avx512, row_q4_K_q8_avx512)
TM__MM_Q8_BY_ROW(mm_q6_K_q8_avx512, row_q6_K_q8_avx512)
TM__MM_Q8_BY_ROW(mm_q8_0_q8_avx512, row_q8_0_q8_avx512)

const tm__kernels tm__kernels_matmul_avx512_q8 = {
    .mm_q8 = {
        [TM_TYPE_Q8_0] = mm_q8_0_q8_avx512,
        [TM_TYPE_Q4_K] = mm_q4_K_q8_avx512,
        [TM_TYPE_Q6_K] = mm_q6_K_q8_avx512,
    },
};
