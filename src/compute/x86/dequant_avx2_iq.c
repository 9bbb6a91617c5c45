/* AVX2 (+F16C) kernels for the grid i-quants: iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s,
 * iq1_m (layouts and arithmetic: FORMATS-more.md). Built with their own -m flags and
 * -ffp-contract=off, like every kernel file.
 *
 * Every 8-element sub-group is one grid entry (two for the iq3 types) whose bytes are the
 * magnitudes (for iq1: the values -1, 0, +1) of its eight elements. Scales, indices and sign
 * bytes are unpacked with scalar code, as the scalar kernel computes them; then the eight
 * elements are one vector: the entry's bytes loaded and widened by one vpmovzxbd/vpmovsxbd
 * straight from the grid, converted, and put through the scalar kernel's float32 operations lane
 * by lane, in its order:
 *   iq2, iq3: (db * (float)mag[j]) * (bit j of the sign byte ? -1.0f : 1.0f)
 *   iq1:      dl * ((float)gv[j] + delta)
 * The +-1.0f of a sign byte is a row of an 8 KiB table: a real multiply, as in the scalar kernel
 * (a negation would give the same bits except for a NaN scale, whose sign a multiply keeps).
 *
 * Grid lookups: one load per entry, not gathers. Measured on this machine (AMD EPYC, Zen 4
 * class; gcc 12.2 -O2; 64 blocks = 64 KiB of output, the fastest of 15 samples of 200 calls,
 * thread CPU time): iq3_xxs decoded at 34 GB/s with the eight entries of a group loaded one by
 * one (vmovd + vpinsrd per pair) against 20 GB/s with one vpgatherdd per group and the
 * sub-groups widened from the gathered register (measured while the signs were still applied
 * with an XOR; the lookups are the same today).
 *
 * The loops over the eight groups of a block and the four sub-groups of a group are unrolled
 * (#pragma GCC unroll), so every group's shifts and offsets are constants: measured 10-15% faster
 * on x86 for iq3_s and iq1_m (AVX2 and AVX-512), the same within noise for the others.
 *
 * Only the table is exported; every function is static. */
#include "../blocks.h"
#include "../kernels.h"
#include "../dequant_iq.h"

#include <immintrin.h>
#include <string.h>

static float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* ---- the sub-group stores -------------------------------------------------------------------- */

/* The eight bytes of a 64-bit grid entry, and of two 32-bit ones, as floats (unsigned). */
static __m256 grid_u8x8(const uint64_t *entry)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)entry)));
}

static __m256 grid_u8x4x2(const uint32_t *grid, unsigned i1, unsigned i2)
{
    const __m128i x = _mm_insert_epi32(_mm_cvtsi32_si128((int)grid[i1]), (int)grid[i2], 1);
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(x));
}

static const _Alignas(32) uint32_t sign_pm[256][8] = { TM__SIGN_PM_ROWS };

/* dst[j] = (db * mag[j]) * (bit j of the sign byte s ? -1.0f : 1.0f), the +-1.0f a row of an
 * 8 KiB table. */
static void store_signed(float *dst, __m256 db, __m256 mag, unsigned s)
{
    const __m256 pm = _mm256_load_ps((const float *)(const void *)sign_pm[s]);
    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_mul_ps(db, mag), pm));
}

/* ---- iq2, iq3: the shared text ------------------------------------------------------------ */

#define IQ_VEC __m256
#define IQ_SPLAT(f) _mm256_set1_ps(f)
#define IQ_NAME(type) dequant_##type##_avx2
#include "../dequant_iq_grid.h"

/* ---- iq1 ------------------------------------------------------------------------------------- */

/* dst[j] = dl * ((float)gv[j] + delta), gv the eight signed bytes of iq1s_grid[idx]; delta is
 * -0.125f in the lanes where minus is all ones, else +0.125f. */
static void store_iq1(float *dst, __m256 dl, unsigned idx, __m256 minus)
{
    const __m256 gv = _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)&tm__iq1s_grid[idx])));
    const __m256 delta = _mm256_blendv_ps(_mm256_set1_ps(0.125f), _mm256_set1_ps(-0.125f), minus);
    _mm256_storeu_ps(dst, _mm256_mul_ps(dl, _mm256_add_ps(gv, delta)));
}

/* all ones in every lane when the bit of w is set */
static __m256 bit_set(__m256i w, int bit)
{
    const __m256i m = _mm256_set1_epi32(1 << bit);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(w, m), m));
}

static void dequant_iq1_s_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_s)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const unsigned w = tm__rd16(b + 34 + 2 * g);
            const __m256 dl = _mm256_set1_ps(tm__iq_odd_scale(d, w >> 12 & 7));
            const __m256 minus = bit_set(_mm256_set1_epi32((int)w), 15);
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++)
                store_iq1(dst + 8 * l, dl, b[2 + 4 * g + l] | (w >> 3 * l & 7u) << 8, minus);
        }
    }
}

static void dequant_iq1_m_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_m)) {
        const unsigned w[4] = { tm__rd16(b + 48), tm__rd16(b + 50), tm__rd16(b + 52), tm__rd16(b + 54) };
        const float d = _cvtsh_ss(tm__iq1m_scale_bits(w));
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const unsigned sw = w[g / 2], c = 6u * (unsigned)(g % 2);
            const __m256i qh = _mm256_set1_epi32((int)tm__rd16(b + 32 + 2 * g));
            const __m256 dl[2] = { _mm256_set1_ps(tm__iq_odd_scale(d, sw >> c & 7)),
                                   _mm256_set1_ps(tm__iq_odd_scale(d, sw >> (c + 3) & 7)) };
#pragma GCC unroll 4
            for (int l = 0; l < 4; l++) {
                const unsigned q = (unsigned)b[32 + 2 * g + l / 2] >> 4 * (l % 2);
                store_iq1(dst + 8 * l, dl[l / 2], b[4 * g + l] | (q & 7u) << 8, bit_set(qh, 3 + 4 * l));
            }
        }
    }
}

const tm__kernels tm__kernels_dequant_avx2_iq = {
    .dequant = {
        [TM_TYPE_IQ2_XXS] = dequant_iq2_xxs_avx2,
        [TM_TYPE_IQ2_XS] = dequant_iq2_xs_avx2,
        [TM_TYPE_IQ2_S] = dequant_iq2_s_avx2,
        [TM_TYPE_IQ3_XXS] = dequant_iq3_xxs_avx2,
        [TM_TYPE_IQ3_S] = dequant_iq3_s_avx2,
        [TM_TYPE_IQ1_S] = dequant_iq1_s_avx2,
        [TM_TYPE_IQ1_M] = dequant_iq1_m_avx2,
    },
};
