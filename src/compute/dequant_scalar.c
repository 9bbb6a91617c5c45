/* Portable reference kernels: the definition of correct.
 *
 * Each kernel performs the float32 operations of ggml's dequantize_row_<type>, each rounded, in
 * the same order (see ../shared/FORMATS.md), so the output matches ggml's bit for bit. The file
 * is built with -ffp-contract=off: "a * b - c" must round the product before the subtraction.
 * Blocks are read byte by byte (they are only 2-byte aligned in a file); no pointer casts. */
#include "blocks.h"
#include "kernels.h"

#include <pthread.h>
#include <string.h>

/* ---- plain types --------------------------------------------------------------------------- */

static void dequant_f32_scalar(const void *src, float *dst, size_t n)
{
    memcpy(dst, src, n * sizeof(float));
}

static void dequant_f16_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = tm__rdh(p + 2 * i);
}

/* bf16 is the top half of a float32: exact, NaN payloads (signalling too) kept as they are. */
static void dequant_bf16_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = tm__f32_from_bits((uint32_t)tm__rd16(p + 2 * i) << 16);
}

/* ---- 32-element blocks --------------------------------------------------------------------- */

/* q4_0, 18 bytes: d half @0, qs[16] @2. Element j = low nibble of qs[j], j+16 = high nibble. */
static void dequant_q4_0_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_0), dst += 32) {
        const float d = tm__rdh(b);
        for (int j = 0; j < 16; j++) {
            dst[j] = (float)((b[2 + j] & 15) - 8) * d;
            dst[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
        }
    }
}

/* q4_1, 20 bytes: d @0, m @2, qs[16] @4. Value q * d + m, product rounded first. */
static void dequant_q4_1_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_1), dst += 32) {
        const float d = tm__rdh(b), m = tm__rdh(b + 2);
        for (int j = 0; j < 16; j++) {
            dst[j] = (float)(b[4 + j] & 15) * d + m;
            dst[j + 16] = (float)(b[4 + j] >> 4) * d + m;
        }
    }
}

/* q5_0, 22 bytes: d @0, qh u32 @2 (bit j = fifth bit of element j), qs[16] @6. */
static void dequant_q5_0_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_0), dst += 32) {
        const float d = tm__rdh(b);
        const uint32_t qh = tm__rd32(b + 2);
        for (int j = 0; j < 16; j++) {
            const int lo = (int)((b[6 + j] & 15) | ((qh >> j) & 1) << 4) - 16;
            const int hi = (int)((b[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16;
            dst[j] = (float)lo * d;
            dst[j + 16] = (float)hi * d;
        }
    }
}

/* q5_1, 24 bytes: d @0, m @2, qh u32 @4, qs[16] @8. Value q * d + m. */
static void dequant_q5_1_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_1), dst += 32) {
        const float d = tm__rdh(b), m = tm__rdh(b + 2);
        const uint32_t qh = tm__rd32(b + 4);
        for (int j = 0; j < 16; j++) {
            const uint32_t lo = (b[8 + j] & 15u) | ((qh >> j) & 1) << 4;
            const uint32_t hi = (b[8 + j] >> 4u) | ((qh >> (j + 16)) & 1) << 4;
            dst[j] = (float)lo * d + m;
            dst[j + 16] = (float)hi * d + m;
        }
    }
}

/* q8_0, 34 bytes: d @0, qs 32 x i8 @2. */
static void dequant_q8_0_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q8_0), dst += 32) {
        const float d = tm__rdh(b);
        for (int j = 0; j < 32; j++)
            dst[j] = (float)(int8_t)b[2 + j] * d;
    }
}

/* ---- 256-element super-blocks -------------------------------------------------------------- */

/* q2_K, 84 bytes: scales[16] @0, qs[64] @16, d @80, dmin @82. Two halves of 128 elements, each
 * over 32 bytes of qs; four 2-bit shifts x two runs of 16 bytes, one scale byte per run
 * (low nibble scales d, high nibble scales dmin). */
static void dequant_q2_K_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q2_K)) {
        const float d = tm__rdh(b + 80), dmin = tm__rdh(b + 82);
        const uint8_t *sc = b, *q = b + 16;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int run = 0; run < 2; run++, sc++, dst += 16) {
                    const float dl = d * (float)(*sc & 15), ml = dmin * (float)(*sc >> 4);
                    for (int l = 0; l < 16; l++)
                        dst[l] = dl * (float)((q[16 * run + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

/* The sixteen signed scales of q3_K. */
static void q3_K_scales(const uint8_t *s12, int8_t out[16])
{
    uint32_t w[4];
    tm__q3_K_scale_words(s12, w);
    for (int k = 0; k < 16; k++)
        out[k] = (int8_t)((int)(w[k / 4] >> (8 * (k % 4)) & 0xff) - 32);
}

/* q3_K, 110 bytes: hmask[32] @0, qs[64] @32, scales[12] @96, d @108. Walked as q2_K; the mask
 * bit doubles after every shift step across both halves; a clear mask bit subtracts 4. */
static void dequant_q3_K_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q3_K)) {
        const float d = tm__rdh(b + 108);
        const uint8_t *hm = b, *q = b + 32;
        int8_t sc[16];
        q3_K_scales(b + 96, sc);
        int is = 0;
        unsigned m = 1;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int run = 0; run < 2; run++, is++, dst += 16) {
                    const float dl = d * (float)sc[is];
                    for (int l = 0; l < 16; l++) {
                        const int v = ((q[16 * run + l] >> shift) & 3) - ((hm[16 * run + l] & m) ? 0 : 4);
                        dst[l] = dl * (float)v;
                    }
                }
            }
        }
    }
}

/* q4_K, 144 bytes: d @0, dmin @2, scales[12] @4, qs[128] @16. Pair p of groups reads
 * qs[32p..32p+31]: group 2p the low nibbles, 2p+1 the high. Value (d*sc) * q - (dmin*m). */
static void dequant_q4_K_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_K)) {
        const float d = tm__rdh(b), dmin = tm__rdh(b + 2);
        const uint8_t *q = b + 16;
        for (int p = 0; p < 4; p++, q += 32, dst += 64) {
            unsigned sc, m;
            tm__k4_scale_min(b + 4, 2 * p, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            tm__k4_scale_min(b + 4, 2 * p + 1, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                dst[l] = d1 * (float)(q[l] & 15) - m1;
            for (int l = 0; l < 32; l++)
                dst[32 + l] = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

/* q5_K, 176 bytes: d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48. As q4_K; bit 2p of
 * qh[l] adds 16 to the low-nibble group of pair p, bit 2p+1 to the high-nibble group. */
static void dequant_q5_K_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_K)) {
        const float d = tm__rdh(b), dmin = tm__rdh(b + 2);
        const uint8_t *qh = b + 16, *q = b + 48;
        for (int p = 0; p < 4; p++, q += 32, dst += 64) {
            unsigned sc, m;
            tm__k4_scale_min(b + 4, 2 * p, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            tm__k4_scale_min(b + 4, 2 * p + 1, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                dst[l] = d1 * (float)((q[l] & 15) + ((qh[l] >> (2 * p)) & 1) * 16) - m1;
            for (int l = 0; l < 32; l++)
                dst[32 + l] = d2 * (float)((q[l] >> 4) + ((qh[l] >> (2 * p + 1)) & 1) * 16) - m2;
        }
    }
}

/* q6_K, 210 bytes: ql[128] @0, qh[64] @128, scales 16 x i8 @192, d @208. Two halves of 128;
 * in each, element l + 32k (k = 0..3) takes a nibble of ql and two bits of qh[l].
 * Value (d * scale) * (q - 32). */
static void dequant_q6_K_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q6_K)) {
        const float d = tm__rdh(b + 208);
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(const void *)(b + 192);
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, dst += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = (int)((ql[l] & 15) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = (int)((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = (int)((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = (int)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                dst[l] = d * (float)sc[is + 0] * (float)q1;
                dst[l + 32] = d * (float)sc[is + 2] * (float)q2;
                dst[l + 64] = d * (float)sc[is + 4] * (float)q3;
                dst[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

/* ---- storage types (safetensors; ggml has no decoder for them) ----------------------------- */

static void dequant_f64_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    for (size_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, p + 8 * i, sizeof v);
        dst[i] = (float)v; /* round to nearest; out-of-range values become infinities */
    }
}

/* FP8, both OCP formats, by 256-entry tables built once from the bit layout:
 *   E4M3: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN.
 *   E5M2: sign, 5 exponent bits (bias 15), 2 mantissa bits: the top byte of an IEEE half, so
 *         it inherits the half's infinities and NaNs. */
static float fp8_e4m3[256], fp8_e5m2[256];
static pthread_once_t fp8_once = PTHREAD_ONCE_INIT;

static void fp8_build(void)
{
    for (unsigned b = 0; b < 256; b++) {
        const uint32_t sign = (uint32_t)(b & 0x80) << 24;
        const uint32_t exp = (b >> 3) & 15, man = b & 7;
        float v;
        if (exp == 15 && man == 7)
            v = tm__f32_from_bits(sign | 0x7fc00000u);
        else if (exp == 0)
            v = tm__f32_from_bits(sign | tm__f32_bits((float)man * 0x1p-9f)); /* man/8 * 2^(1-7) */
        else
            v = tm__f32_from_bits(sign | (exp - 7 + 127) << 23 | man << 20);
        fp8_e4m3[b] = v;
        fp8_e5m2[b] = tm__half_to_float((uint16_t)(b << 8));
    }
}

static void dequant_f8_e4m3_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    pthread_once(&fp8_once, fp8_build);
    for (size_t i = 0; i < n; i++)
        dst[i] = fp8_e4m3[p[i]];
}

static void dequant_f8_e5m2_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    pthread_once(&fp8_once, fp8_build);
    for (size_t i = 0; i < n; i++)
        dst[i] = fp8_e5m2[p[i]];
}

/* Integers to float: exact up to 2^24 in magnitude, rounded to nearest beyond. Fixed-width
 * little-endian values read with memcpy (the library assumes a little-endian host, as GGUF
 * files written by ggml do). */
#define DEQUANT_INT(name, ctype)                                                    \
    static void dequant_##name##_scalar(const void *src, float *dst, size_t n)     \
    {                                                                               \
        const uint8_t *p = src;                                                     \
        for (size_t i = 0; i < n; i++) {                                            \
            ctype v;                                                                \
            memcpy(&v, p + sizeof v * i, sizeof v);                                 \
            dst[i] = (float)v;                                                      \
        }                                                                           \
    }
DEQUANT_INT(i8, int8_t)
DEQUANT_INT(i16, int16_t)
DEQUANT_INT(i32, int32_t)
DEQUANT_INT(i64, int64_t)
DEQUANT_INT(u8, uint8_t)
DEQUANT_INT(u16, uint16_t)
DEQUANT_INT(u32, uint32_t)
DEQUANT_INT(u64, uint64_t)
#undef DEQUANT_INT

/* safetensors BOOL: one byte each; any non-zero byte is true. */
static void dequant_bool_scalar(const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = p[i] ? 1.0f : 0.0f;
}

const tm__kernels tm__kernels_dequant_scalar = {
    .dequant = {
        [TM_TYPE_F32] = dequant_f32_scalar,
        [TM_TYPE_F16] = dequant_f16_scalar,
        [TM_TYPE_BF16] = dequant_bf16_scalar,
        [TM_TYPE_Q4_0] = dequant_q4_0_scalar,
        [TM_TYPE_Q4_1] = dequant_q4_1_scalar,
        [TM_TYPE_Q5_0] = dequant_q5_0_scalar,
        [TM_TYPE_Q5_1] = dequant_q5_1_scalar,
        [TM_TYPE_Q8_0] = dequant_q8_0_scalar,
        [TM_TYPE_Q2_K] = dequant_q2_K_scalar,
        [TM_TYPE_Q3_K] = dequant_q3_K_scalar,
        [TM_TYPE_Q4_K] = dequant_q4_K_scalar,
        [TM_TYPE_Q5_K] = dequant_q5_K_scalar,
        [TM_TYPE_Q6_K] = dequant_q6_K_scalar,
        [TM_TYPE_F64] = dequant_f64_scalar,
        [TM_TYPE_I8] = dequant_i8_scalar,
        [TM_TYPE_I16] = dequant_i16_scalar,
        [TM_TYPE_I32] = dequant_i32_scalar,
        [TM_TYPE_I64] = dequant_i64_scalar,
        [TM__SLOT(TM_TYPE_U8)] = dequant_u8_scalar,
        [TM__SLOT(TM_TYPE_BOOL)] = dequant_bool_scalar,
        [TM__SLOT(TM_TYPE_F8_E4M3)] = dequant_f8_e4m3_scalar,
        [TM__SLOT(TM_TYPE_F8_E5M2)] = dequant_f8_e5m2_scalar,
        [TM__SLOT(TM_TYPE_U16)] = dequant_u16_scalar,
        [TM__SLOT(TM_TYPE_U32)] = dequant_u32_scalar,
        [TM__SLOT(TM_TYPE_U64)] = dequant_u64_scalar,
    },
};
