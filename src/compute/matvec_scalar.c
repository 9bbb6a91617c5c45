/* Portable row-dot kernels for tm_matvec: the definition of TM_MATVEC_Q8, and the float32 dot
 * every path's decode + dot fallback ends in.
 *
 * The TM_MATVEC_Q8 kernels follow ggml's reference vec_dot_<type>_q8_<K|0>: integer sums of
 * weight codes times x's 8-bit codes per scale group, then one float multiply-add per block.
 * Types without a kernel here are computed by src/compute/matvec.c (decode a few blocks, then dot). */
#include "blocks.h"
#include "kernels.h"

#include <string.h>

/* f32 rows (the fallback's dot too): accumulated in double, in order. */
static float dot_f32_scalar(const void *w, const float *x, size_t n)
{
    const uint8_t *p = w;
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        float v;
        memcpy(&v, p + 4 * i, sizeof v);
        acc += (double)v * (double)x[i];
    }
    return (float)acc;
}

/* q8_0, 34 bytes: d half @0, qs[32] int8 @2. */
static float dot_q8_0_q8_scalar(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    float sum = 0.0f;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q8_0), x++) {
        int32_t isum = 0;
        for (int j = 0; j < 32; j++)
            isum += (int8_t)b[2 + j] * x->qs[j];
        sum += tm__rdh(b) * x->d * (float)isum;
    }
    return sum;
}

/* q4_0, 18 bytes: d half @0, qs[16] @2; element j = low nibble of qs[j] - 8, j + 16 = high. */
static float dot_q4_0_q8_scalar(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_0x *x = xq;
    float sum = 0.0f;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_0), x++) {
        int32_t isum = 0;
        for (int j = 0; j < 16; j++)
            isum += ((b[2 + j] & 15) - 8) * x->qs[j] + ((b[2 + j] >> 4) - 8) * x->qs[j + 16];
        sum += tm__rdh(b) * x->d * (float)isum;
    }
    return sum;
}

/* q4_K, 144 bytes: d half @0, dmin half @2, scales[12] @4, qs[128] @16. Group g (32 elements)
 * is the low (g even) or high (g odd) nibbles of qs[32 (g / 2) ..]; value d sc q - dmin m. */
static float dot_q4_K_q8_scalar(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    float sum = 0.0f;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q4_K), x++) {
        int32_t isum = 0, msum = 0;
        for (int g = 0; g < 8; g++) {
            unsigned sc, m;
            tm__k4_scale_min(b + 4, g, &sc, &m);
            const uint8_t *q = b + 16 + 32 * (g / 2);
            const int shift = 4 * (g & 1);
            int32_t s = 0;
            for (int l = 0; l < 32; l++)
                s += ((q[l] >> shift) & 15) * x->qs[32 * g + l];
            isum += (int32_t)sc * s;
            msum += (int32_t)m * (x->bsums[2 * g] + x->bsums[2 * g + 1]);
        }
        sum += tm__rdh(b) * x->d * (float)isum - tm__rdh(b + 2) * x->d * (float)msum;
    }
    return sum;
}

/* q6_K, 210 bytes: ql[128] @0, qh[64] @128, scales[16] int8 @192, d half @208. In each half of
 * 128 elements (ql += 64, qh += 32), element l + 32 k (l < 32, k < 4) takes nibble k / 2 of
 * ql[l + 32 (k & 1)] and bits 2k, 2k+1 of qh[l], minus 32; element e has scale e / 16. */
static float dot_q6_K_q8_scalar(const void *w, const void *xq, size_t n_blocks)
{
    const uint8_t *b = w;
    const tm__q8_Kx *x = xq;
    float sum = 0.0f;
    for (size_t i = 0; i < n_blocks; i++, b += sizeof(tm__block_q6_K), x++) {
        int32_t isum = 0;
        for (int e = 0; e < 256; e += 16) {
            int32_t s = 0;
            for (int j = e; j < e + 16; j++) {
                const int half = j / 128, k = (j % 128) / 32, l = j % 32;
                const uint8_t ql = b[64 * half + l + 32 * (k & 1)];
                const uint8_t qh = b[128 + 32 * half + l];
                const int q = ((ql >> (4 * (k / 2))) & 15) | ((qh >> (2 * k)) & 3) << 4;
                s += (q - 32) * x->qs[j];
            }
            isum += (int8_t)b[192 + e / 16] * s;
        }
        sum += tm__rdh(b + 208) * x->d * (float)isum;
    }
    return sum;
}

const tm__kernels tm__kernels_matvec_scalar = {
    .mv_f32 = {
        [TM_TYPE_F32] = dot_f32_scalar,
    },
    .mv_q8 = {
        [TM_TYPE_Q8_0] = dot_q8_0_q8_scalar,
        [TM_TYPE_Q4_0] = dot_q4_0_q8_scalar,
        [TM_TYPE_Q4_K] = dot_q4_K_q8_scalar,
        [TM_TYPE_Q6_K] = dot_q6_K_q8_scalar,
    },
};
