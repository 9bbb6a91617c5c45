/* AVX-512 (F, BW, VL, DQ) row-dot kernels for tm_matvec, built with their own -m flags.
 *
 * The AVX2 file's schemes on 16 lanes: TM_MATVEC_F32 widens the codes to float in registers
 * (q4_K's weights decoded exactly as ggml rounds them), float partial sums of at most four
 * products per lane, then double; TM_MATVEC_Q8 is ggml's maddubs/madd integer scheme on 64 bytes at a
 * time. Types missing here (TM_MATVEC_Q8's other types) run the AVX2 kernel.
 * Only the table is exported; every function is static. */
#include "../kernels.h"

#include "avx512_common.h"
#include "prefetch.h"

#include <string.h>

/* ---- TM_MATVEC_F32 ------------------------------------------------------------------------- */

/* f32, f16, bf16: 64 elements per step, into doubles every PLAIN_SEGMENT (512: the flush costs
 * about as many vector operations as the multiply-adds it follows, so a shorter segment slows
 * the compute-bound batched form; BENCHMARKS.md); the tail through masked loads. */
#define ALL 0xffffu
#define DOT_PLAIN(name, widen, size)                                                          \
    static float name(const void *w, const float *x, size_t n)                               \
    {                                                                                         \
        const uint8_t *p = w;                                                                 \
        dacc a = acc_zero();                                                                  \
        const bool hints = plain_row_hints(size);                                             \
        size_t i = 0;                                                                         \
        while (i + 64 <= n) {                                                                 \
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                       \
            const size_t end = n - i < PLAIN_SEGMENT ? i + (n - i) / 64 * 64 : i + PLAIN_SEGMENT; \
            for (; i < end; i += 64) {                                                        \
                if (hints)                                                                    \
                    prefetch_ahead(p + (size) * i, 64 * (size));                              \
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
        prefetch_ahead(b, sizeof(tm__block_q8_0));
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
        prefetch_ahead(b, sizeof(tm__block_q4_0));
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
        prefetch_ahead(b, sizeof(tm__block_q4_K));
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
        prefetch_ahead(b, sizeof(tm__block_q6_K));
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

/* The blocks' steps are avx512_common.h's, shared with matmul_avx512_q8.c's batched kernels:
 * per block, its codes and scales unpacked, then the multiply-add of this x. */

/* q8_0 (x as q8_0 blocks): two blocks per 64-byte vector, one float multiply-add per pair
 * (lanes 0..7 block 0's, 8..15 block 1's), the sixteen lanes summed at the end (the
 * reduction's order); an odd last block with 32-byte vectors, its term added to that sum.
 * (q4_0's 8-bit rows run AVX2's kernel: this scheme with its nibbles split was no faster on an
 * Intel Xeon and slower on AMD's Zen 4, 0.75-0.80 of ggml against AVX2's 0.87-0.88, W in L3,
 * 2026-12-03.) */
static float dot_q8_0_q8_avx512(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    __m512 acc = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 2 <= n_blocks; i += 2, b += 2 * sizeof(tm__block_q8_0), x += 2) {
        prefetch_ahead(b, 2 * sizeof(tm__block_q8_0));
        acc = q8_0x_pair_fma(q8_0_pair_unpack(b), half(b), half(b + sizeof(tm__block_q8_0)), x, acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    if (i < n_blocks)
        sum += q8_0x_last_term(q8_0_last_unpack(b), half(b), x);
    return sum;
}

/* q4_K: per block one float multiply-add of the int32 lanes by d dx, and one of the mins by
 * dmin dx; no horizontal sum until the end. */
static float dot_q4_K_q8_avx512(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    __m512 acc = _mm512_setzero_ps(), accm = acc;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q4_K));
        const q4_K_unpacked k = q4_K_unpack(b);
        q4_K_fma(&k, x, &acc, &accm);
    }
    return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(accm);
}

/* q6_K: per block one float multiply-add of the int32 lanes by d dx. */
static float dot_q6_K_q8_avx512(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    __m512 acc = _mm512_setzero_ps();
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x++) {
        prefetch_ahead(b, sizeof(tm__block_q6_K));
        const q6_K_unpacked k = q6_K_unpack(b);
        acc = q6_K_fma(&k, x, acc);
    }
    return _mm512_reduce_add_ps(acc);
}

/* q1_0 (128 elements, a bit each: set +d, clear -d) against four x blocks, two to a vector:
 * the 64 bits of two x blocks are a mask register as they lie, x negated where a bit is clear
 * by one masked subtract (AVX2 spreads each bit to a byte with a shuffle, an and and a compare);
 * summed by maddubs with ones, each x block's eight int32 lanes times its dx in float, times d
 * into f; f into double every 8 blocks (as AVX2's Q8_CHAIN). */
static float dot_q1_0_q8_avx512(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    const __m512i ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
    dacc a = acc_zero();
    for (size_t i = 0; i < n_blocks;) {
        const size_t end = n_blocks - i < 8 ? n_blocks : i + 8;
        __m512 f = _mm512_setzero_ps();
        prefetch_ahead(b, (end - i) * sizeof(tm__block_q1_0));
        for (; i < end; i++, b += sizeof(tm__block_q1_0), x += 4) {
            __m512 g = _mm512_setzero_ps();
            for (int h = 0; h < 2; h++) {
                uint64_t bits;
                memcpy(&bits, b + 2 + 8 * h, sizeof bits);
                const __m512i xv = join(ld256(x[2 * h].qs), ld256(x[2 * h + 1].qs));
                const __m512i sx = _mm512_mask_sub_epi8(xv, _cvtu64_mask64(~bits),
                                                        _mm512_setzero_si512(), xv);
                const __m512i s = _mm512_madd_epi16(_mm512_maddubs_epi16(ones8, sx), ones16);
                const __m512 dx = _mm512_insertf32x8(_mm512_set1_ps(x[2 * h].d),
                                                     _mm256_set1_ps(x[2 * h + 1].d), 1);
                g = _mm512_fmadd_ps(dx, _mm512_cvtepi32_ps(s), g);
            }
            f = _mm512_fmadd_ps(_mm512_set1_ps(half(b)), g, f);
        }
        acc_add(&a, f);
    }
    return acc_sum(&a);
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
        [TM_TYPE_Q1_0] = dot_q1_0_q8_avx512,
    },
};
