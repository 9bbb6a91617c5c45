/* AVX-512 kernels for the grid i-quants: iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m
 * (layouts and arithmetic: FORMATS-more.md). Built with their own -m flags and -ffp-contract=off.
 *
 * As the AVX2 kernels (dequant_avx2_iq.c), with sixteen lanes: two sub-groups per vector, which
 * in every one of these types share one scale (iq2_xs, iq2_s and iq1_m change scale between
 * sub-groups 1 and 2 only). The two grid entries are loaded into one 128-bit register, widened
 * and converted; the scalar kernel's float32 operations follow lane by lane, in its order. The
 * two sign bytes are a 16-bit mask: the marked lanes are multiplied by -1.0f, as in the scalar
 * kernel.
 *
 * The loops over the eight groups of a block and the four sub-groups of a group are unrolled
 * (#pragma GCC unroll), so every group's shifts and offsets are constants: measured 10-15% faster
 * on x86 for iq3_s and iq1_m (AVX2 and AVX-512), the same within noise for the others.
 *
 * Only the table is exported; every function is static (nothing compiled with -mavx512f may be
 * reached from code that has not checked the CPU). */
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

/* ---- the stores of two sub-groups ------------------------------------------------------------ */

/* Two 64-bit grid entries, or four 32-bit ones, as one 128-bit register. */
static __m128i grid_u64x2(const uint64_t *e1, const uint64_t *e2)
{
    return _mm_set_epi64x((long long)*e2, (long long)*e1);
}

static __m128i grid_u32x4(const uint32_t *grid, const unsigned idx[4])
{
    return _mm_set_epi64x((long long)((uint64_t)grid[idx[3]] << 32 | grid[idx[2]]),
                          (long long)((uint64_t)grid[idx[1]] << 32 | grid[idx[0]]));
}

/* dst[j] = (db * mag[j]) * (bit j of the 16-bit sign mask ? -1.0f : 1.0f), mag the 16 unsigned
 * bytes of x. The lanes the mask leaves out keep the product as it is, which is the product
 * times 1.0f: a product is never a signalling NaN. */
static void store_signed(float *dst, __m512 db, __m128i x, unsigned signs)
{
    const __m512 p = _mm512_mul_ps(db, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(x)));
    _mm512_storeu_ps(dst, _mm512_mask_mul_ps(p, (__mmask16)signs, p, _mm512_set1_ps(-1.0f)));
}

/* the scale of an iq2_xxs, iq2_xs, iq2_s or iq3_xxs group, in every lane */
static __m512 grid_scale(float d, unsigned k, float f) { return _mm512_set1_ps(tm__iq_grid_scale(d, k, f)); }

/* ---- iq2 ------------------------------------------------------------------------------------- */

static void dequant_iq2_xxs_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_xxs)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *rec = b + 2 + 8 * g;
            const uint32_t a = tm__rd32(rec + 4);
            const __m512 db = grid_scale(d, a >> 28, 0.25f);
#pragma GCC unroll 2
            for (int l = 0; l < 4; l += 2)
                store_signed(dst + 8 * l, db, grid_u64x2(&tm__iq2xxs_grid[rec[l]], &tm__iq2xxs_grid[rec[l + 1]]),
                             tm__iq_ksign(a, l) | tm__iq_ksign(a, l + 1) << 8);
        }
    }
}

static void dequant_iq2_xs_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_xs)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *qs = b + 2 + 8 * g;
            const __m512 db[2] = { grid_scale(d, b[66 + g] & 15u, 0.25f), grid_scale(d, b[66 + g] >> 4, 0.25f) };
#pragma GCC unroll 2
            for (int l = 0; l < 4; l += 2) {
                const unsigned v1 = tm__rd16(qs + 2 * l), v2 = tm__rd16(qs + 2 * l + 2);
                store_signed(dst + 8 * l, db[l / 2], grid_u64x2(&tm__iq2xs_grid[v1 & 511], &tm__iq2xs_grid[v2 & 511]),
                             tm__ksigns_iq2xs[v1 >> 9] | (unsigned)tm__ksigns_iq2xs[v2 >> 9] << 8);
            }
        }
    }
}

static void dequant_iq2_s_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq2_s)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const __m512 db[2] = { grid_scale(d, b[74 + g] & 15u, 0.25f), grid_scale(d, b[74 + g] >> 4, 0.25f) };
            const uint8_t *qs = b + 2 + 4 * g;
            const unsigned qh = b[66 + g];
#pragma GCC unroll 2
            for (int l = 0; l < 4; l += 2) {
                const unsigned i1 = qs[l] | (qh >> 2 * l & 3u) << 8, i2 = qs[l + 1] | (qh >> (2 * l + 2) & 3u) << 8;
                store_signed(dst + 8 * l, db[l / 2], grid_u64x2(&tm__iq2s_grid[i1], &tm__iq2s_grid[i2]),
                             tm__rd16(b + 34 + 4 * g + l));
            }
        }
    }
}

/* ---- iq3 ------------------------------------------------------------------------------------- */

static void dequant_iq3_xxs_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq3_xxs)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *qs = b + 2 + 8 * g;
            const uint32_t a = tm__rd32(b + 66 + 4 * g);
            const __m512 db = grid_scale(d, a >> 28, 0.5f);
#pragma GCC unroll 2
            for (int l = 0; l < 4; l += 2) {
                const unsigned idx[4] = { qs[2 * l], qs[2 * l + 1], qs[2 * l + 2], qs[2 * l + 3] };
                store_signed(dst + 8 * l, db, grid_u32x4(tm__iq3xxs_grid, idx), tm__iq_ksign(a, l) | tm__iq_ksign(a, l + 1) << 8);
            }
        }
    }
}

static void dequant_iq3_s_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq3_s)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const uint8_t *qs = b + 2 + 8 * g;
            const unsigned qh = b[66 + g];
            const __m512 db = _mm512_set1_ps(tm__iq_odd_scale(d, (unsigned)b[106 + g / 2] >> 4 * (g % 2) & 15u));
#pragma GCC unroll 2
            for (int l = 0; l < 4; l += 2) {
                const unsigned h = qh >> 2 * l; /* bit k of qh is bit 8 of index k of the group */
                const unsigned idx[4] = { qs[2 * l] | (h & 1u) << 8, qs[2 * l + 1] | (h & 2u) << 7,
                                          qs[2 * l + 2] | (h & 4u) << 6, qs[2 * l + 3] | (h & 8u) << 5 };
                store_signed(dst + 8 * l, db, grid_u32x4(tm__iq3s_grid, idx), tm__rd16(b + 74 + 4 * g + l));
            }
        }
    }
}

/* ---- iq1 ------------------------------------------------------------------------------------- */

/* dst[j] = dl * ((float)gv[j] + delta), gv the signed bytes of iq1s_grid[i1] (lanes 0..7) and
 * iq1s_grid[i2] (8..15); the delta of the first eight lanes is -0.125f when bit 0 of neg is set,
 * else +0.125f, of the last eight the same by bit 1. */
static void store_iq1(float *dst, __m512 dl, unsigned i1, unsigned i2, unsigned neg)
{
    const __m512 gv = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(grid_u64x2(&tm__iq1s_grid[i1], &tm__iq1s_grid[i2])));
    const __mmask16 minus = (__mmask16)((neg & 1u ? 0x00ffu : 0u) | (neg & 2u ? 0xff00u : 0u));
    const __m512 delta = _mm512_mask_blend_ps(minus, _mm512_set1_ps(0.125f), _mm512_set1_ps(-0.125f));
    _mm512_storeu_ps(dst, _mm512_mul_ps(dl, _mm512_add_ps(gv, delta)));
}

static void dequant_iq1_s_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_s)) {
        const float d = half(b);
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const unsigned w = tm__rd16(b + 34 + 2 * g), neg = w & 0x8000u ? 3u : 0u;
            const __m512 dl = _mm512_set1_ps(tm__iq_odd_scale(d, w >> 12 & 7));
            const uint8_t *qs = b + 2 + 4 * g;
            store_iq1(dst, dl, qs[0] | (w & 7u) << 8, qs[1] | (w >> 3 & 7u) << 8, neg);
            store_iq1(dst + 16, dl, qs[2] | (w >> 6 & 7u) << 8, qs[3] | (w >> 9 & 7u) << 8, neg);
        }
    }
}

static void dequant_iq1_m_avx512(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq1_m)) {
        const unsigned w[4] = { tm__rd16(b + 48), tm__rd16(b + 50), tm__rd16(b + 52), tm__rd16(b + 54) };
        const float d = _cvtsh_ss(tm__iq1m_scale_bits(w));
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++, dst += 32) {
            const unsigned sw = w[g / 2], c = 6u * (unsigned)(g % 2);
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) { /* sub-groups 2h, 2h + 1: their scale, and qh byte */
                const __m512 dl = _mm512_set1_ps(tm__iq_odd_scale(d, sw >> (c + 3 * (unsigned)h) & 7));
                const unsigned q = b[32 + 2 * g + h];
                store_iq1(dst + 16 * h, dl, b[4 * g + 2 * h] | (q & 7u) << 8, b[4 * g + 2 * h + 1] | (q >> 4 & 7u) << 8,
                          (q >> 3 & 1u) | (q >> 6 & 2u));
            }
        }
    }
}

const tm__kernels tm__kernels_dequant_avx512_iq = {
    .dequant = {
        [TM_TYPE_IQ2_XXS] = dequant_iq2_xxs_avx512,
        [TM_TYPE_IQ2_XS] = dequant_iq2_xs_avx512,
        [TM_TYPE_IQ2_S] = dequant_iq2_s_avx512,
        [TM_TYPE_IQ3_XXS] = dequant_iq3_xxs_avx512,
        [TM_TYPE_IQ3_S] = dequant_iq3_s_avx512,
        [TM_TYPE_IQ1_S] = dequant_iq1_s_avx512,
        [TM_TYPE_IQ1_M] = dequant_iq1_m_avx512,
    },
};
