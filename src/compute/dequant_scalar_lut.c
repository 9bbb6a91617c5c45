/* Reference kernels for the small-code types: iq4_nl and iq4_xs (a 16-entry value table), the
 * fp4 types mxfp4 and nvfp4, the ternary tq1_0 and tq2_0, and q1_0, q2_0.
 *
 * Each performs the float32 operations of ggml's dequantize_row_<type>, in the same order
 * (../shared/formats/FORMATS-more.md). Every product here is exact for finite scales, so the
 * order decides only the sign of a zero and which NaN comes out: a zero code times a negative
 * scale is -0, and never a literal 0.0f. Built with -ffp-contract=off; blocks read byte by byte. */
#include "blocks.h"
#include "kernels.h"
#include "quant_tables.h"

/* ---- 16-entry value tables --------------------------------------------------------------- */

/* iq4_nl, 18 bytes: d half @0, qs[16] @2 (q4_0's nibble order). Element j = d * kv[low nibble
 * of qs[j]], element j + 16 = d * kv[high nibble]. */
static void dequant_iq4_nl_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq4_nl), dst += 32) {
        const float d = tm__rdh(b);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)tm__kvalues_iq4nl[b[2 + j] & 15];
            dst[j + 16] = d * (float)tm__kvalues_iq4nl[b[2 + j] >> 4];
        }
    }
}

/* iq4_xs, 136 bytes: d @0, scales_h u16 @2, scales_l[4] @4, qs[128] @8. Group g's 6-bit scale
 * is a nibble of scales_l (even groups the low one) with two high bits from scales_h; its 16
 * bytes of qs hold elements 32g + j (low nibbles) and 32g + 16 + j (high). */
static void dequant_iq4_xs_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_iq4_xs)) {
        const float d = tm__rdh(b);
        for (unsigned g = 0; g < 8; g++, dst += 32) {
            const float dl = d * (float)(tm__iq4_xs_scale(b, g) - 32);
            const uint8_t *q = b + 8 + 16 * g;
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * (float)tm__kvalues_iq4nl[q[j] & 15];
                dst[j + 16] = dl * (float)tm__kvalues_iq4nl[q[j] >> 4];
            }
        }
    }
}

/* ---- fp4 ------------------------------------------------------------------------------------ */

/* mxfp4, 17 bytes: e @0, qs[16] @1. Element j = kv[low nibble of qs[j]] * d, j + 16 the high. */
static void dequant_mxfp4_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_mxfp4), dst += 32) {
        const float d = tm__e8m0_half(b[0]);
        for (int j = 0; j < 16; j++) {
            dst[j] = (float)tm__kvalues_fp4[b[1 + j] & 15] * d;
            dst[j + 16] = (float)tm__kvalues_fp4[b[1 + j] >> 4] * d;
        }
    }
}

/* nvfp4, 36 bytes: d[4] @0 (one UE4M3 scale per 16 elements), qs[32] @4, 8 bytes per 16
 * elements: element 16s + j the low nibble of qs[8s + j], 16s + 8 + j the high. */
static void dequant_nvfp4_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_nvfp4)) {
        for (int s = 0; s < 4; s++, dst += 16) {
            const float d = tm__ue4m3_half(b[s]);
            const uint8_t *q = b + 4 + 8 * s;
            for (int j = 0; j < 8; j++) {
                dst[j] = (float)tm__kvalues_fp4[q[j] & 15] * d;
                dst[j + 8] = (float)tm__kvalues_fp4[q[j] >> 4] * d;
            }
        }
    }
}

/* ---- ternary ------------------------------------------------------------------------------- */

/* Trit n of a tq1_0 byte: the byte is a base-3 fixed-point fraction; multiplying by 3^n
 * (mod 256) brings trit n to the top, and (q * 3) >> 8 reads it: 0, 1 or 2. */
static int trit(uint8_t byte, int n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    const unsigned q = (unsigned)(uint8_t)(byte * pow3[n]);
    return (int)((q * 3) >> 8);
}

/* tq1_0, 54 bytes: qs[48] @0 (five trits a byte), qh[4] @48 (four), d @52. The trit index is
 * the outer loop: qs[0..31] give elements 32n + m, qs[32..47] give 160 + 16n + m, qh gives
 * 240 + 4n + m. Value (t - 1) * d. */
static void dequant_tq1_0_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_tq1_0), dst += 256) {
        const float d = tm__rdh(b + 52);
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 32; m++)
                dst[32 * t + m] = (float)(trit(b[m], t) - 1) * d;
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 16; m++)
                dst[160 + 16 * t + m] = (float)(trit(b[32 + m], t) - 1) * d;
        for (int t = 0; t < 4; t++)
            for (int m = 0; m < 4; m++)
                dst[240 + 4 * t + m] = (float)(trit(b[48 + m], t) - 1) * d;
    }
}

/* tq2_0, 66 bytes: qs[64] @0, d @64. Half k, shift step l: element 128k + 32l + m is bits 2l..
 * 2l+1 of qs[32k + m]; value (q - 1) * d. */
static void dequant_tq2_0_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_tq2_0)) {
        const float d = tm__rdh(b + 64);
        for (int k = 0; k < 2; k++)
            for (int l = 0; l < 4; l++, dst += 32)
                for (int m = 0; m < 32; m++)
                    dst[m] = (float)((b[32 * k + m] >> 2 * l & 3) - 1) * d;
    }
}

/* ---- 1- and 2-bit -------------------------------------------------------------------------- */

/* q1_0, 18 bytes: d @0, qs[16] @2, one bit per element, least significant first: set is d,
 * clear is -d (a sign flip: d = +0 gives -0). */
static void dequant_q1_0_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q1_0), dst += 128) {
        const float d = tm__rdh(b);
        for (int j = 0; j < 128; j++)
            dst[j] = b[2 + j / 8] >> (j % 8) & 1 ? d : -d;
    }
}

/* q2_0, 18 bytes: d @0, qs[16] @2, four 2-bit codes a byte, lowest first; value (q - 1) * d. */
static void dequant_q2_0_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q2_0), dst += 64) {
        const float d = tm__rdh(b);
        for (int j = 0; j < 64; j++)
            dst[j] = (float)((b[2 + j / 4] >> 2 * (j % 4) & 3) - 1) * d;
    }
}

const tm__kernels tm__kernels_dequant_scalar_lut = {
    .dequant = {
        [TM_TYPE_IQ4_NL] = dequant_iq4_nl_scalar,
        [TM_TYPE_IQ4_XS] = dequant_iq4_xs_scalar,
        [TM_TYPE_MXFP4] = dequant_mxfp4_scalar,
        [TM_TYPE_NVFP4] = dequant_nvfp4_scalar,
        [TM_TYPE_TQ1_0] = dequant_tq1_0_scalar,
        [TM_TYPE_TQ2_0] = dequant_tq2_0_scalar,
        [TM_TYPE_Q1_0] = dequant_q1_0_scalar,
        [TM_TYPE_Q2_0] = dequant_q2_0_scalar,
    },
};
