/* AVX2 (+F16C) kernels, built with their own -m flags.
 *
 * Every kernel performs the scalar kernel's float32 operations, lane by lane, in the same order,
 * so the output is bit-identical (the file is built with -ffp-contract=off: -mfma is on for
 * this file, but no multiply and add may be fused). Loads are unaligned: blocks in a file are
 * only 2-byte aligned. Types not listed in the table fall back to the scalar kernel.
 *
 * Only the table is exported; every function is static. */
#include "../blocks.h"
#include "../kernels.h"

#include <immintrin.h>
#include <string.h>

static float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

static __m128i ld128(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }
static __m256i ld256(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }

/* bytes 0..7 / 8..15 of x as eight int32 lanes */
static __m256 i8lo(__m128i x) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x)); }
static __m256 i8hi(__m128i x) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(x, 8))); }

/* ---- plain types --------------------------------------------------------------------------- */

/* f16 and bf16: 8 halves -> 8 floats per step; the tail one at a time with the same
 * conversion, so no byte past the input is read.
 *
 * Subnormal halves (real weights have them) do not slow vcvtph2ps on the AMD EPYC (Zen 4) this
 * was measured on, 2026-12-01: 64K halves with 0%, 5%, 50% and 100% subnormals decode at the
 * same 0.068 ns per half (median of 501 interleaved calls, L2-resident). The hardware counters
 * that would show a microcode assist are not exposed in that VM (perf stat: "not supported"),
 * so this is a timing result. What does vary is the whole process: the same loop ran at 0.068
 * or 0.13 ns per half from one run to the next, whatever the data (see BENCHMARKS.md). */
static __m256 f16x8(__m128i h) { return _mm256_cvtph_ps(h); }
static __m256 bf16x8(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }

#define DEQUANT_HALVES(name, widen)                                                              \
    static void name(const void *src, float *dst, size_t n)                                     \
    {                                                                                            \
        const uint8_t *p = src;                                                                  \
        size_t i = 0;                                                                            \
        for (; i + 8 <= n; i += 8)                                                               \
            _mm256_storeu_ps(dst + i, widen(ld128(p + 2 * i)));                                  \
        for (; i < n; i++) {                                                                     \
            const uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);                         \
            _mm_store_ss(dst + i, _mm256_castps256_ps128(widen(_mm_cvtsi32_si128(h))));         \
        }                                                                                        \
    }
DEQUANT_HALVES(dequant_f16_avx2, f16x8)
DEQUANT_HALVES(dequant_bf16_avx2, bf16x8)
#undef DEQUANT_HALVES

/* ---- 32-element blocks --------------------------------------------------------------------- */


/* 8 bytes at p as eight int32 lanes, widened straight from memory */
static __m256i u8x8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

static __m256i i8x8(const uint8_t *p)
{
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* The shuffle unit is what limits these kernels: a byte vector widened from a register takes
 * two or three shuffles per 8 values (extract, byte shift, widen), one widened from memory
 * takes one. So bytes are widened from the input where they are, or from a small buffer the
 * kernel first builds them into. */

/* q4_0: (float)(q - 8) * d; each 8 bytes of qs give elements j..j+7 (low nibbles) and
 * j+16..j+23 (high). */
static void dequant_q4_0_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256i m4 = _mm256_set1_epi32(15), k8 = _mm256_set1_epi32(8);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_0), dst += 32) {
        const __m256 d = _mm256_set1_ps(half(b));
        for (int k = 0; k < 2; k++) {
            const __m256i x = u8x8(b + 2 + 8 * k);
            _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(x, m4), k8)), d));
            _mm256_storeu_ps(dst + 16 + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(x, 4), k8)), d));
        }
    }
}

/* q4_1: (float)q * d + m, product rounded first. */
static void dequant_q4_1_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256i m4 = _mm256_set1_epi32(15);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_1), dst += 32) {
        const __m256 d = _mm256_set1_ps(half(b)), m = _mm256_set1_ps(half(b + 2));
        for (int k = 0; k < 2; k++) {
            const __m256i x = u8x8(b + 4 + 8 * k);
            _mm256_storeu_ps(dst + 8 * k, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(x, m4)), d), m));
            _mm256_storeu_ps(dst + 16 + 8 * k, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(x, 4)), d), m));
        }
    }
}

/* The 32 five-bit values of q5_0/q5_1 as bytes: element j (< 16) is the low nibble of qs[j],
 * element j + 16 the high nibble, and bit j of qh is bit 4 of element j. The bits become bytes
 * as in ggml: byte j takes byte j / 8 of qh (vpshufb), ORed with every bit but bit j % 8 set;
 * it is all ones exactly when that bit is set. */
static __m256i q5_bytes(const uint8_t *qs, uint32_t qh)
{
    /* the 16 bytes in both halves (a load, no shuffle); low nibbles kept in the first half,
     * high ones in the second, moved down by a 64-bit shift (the bits it brings in from the
     * next byte are the zeros the mask left) */
    const __m256i x = _mm256_broadcastsi128_si256(ld128(qs));
    const __m256i nib = _mm256_srlv_epi64(_mm256_and_si256(x, _mm256_setr_epi64x(0x0f0f0f0f0f0f0f0f, 0x0f0f0f0f0f0f0f0f,
                                                                                  (long long)0xf0f0f0f0f0f0f0f0, (long long)0xf0f0f0f0f0f0f0f0)),
                                          _mm256_setr_epi64x(0, 0, 4, 4));
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)qh),
        _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i all = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    const __m256i set = _mm256_cmpeq_epi8(all, _mm256_set1_epi8(-1));
    return _mm256_or_si256(nib, _mm256_and_si256(set, _mm256_set1_epi8(16)));
}

/* q5_0 and q5_1 decode up to 8 blocks at a time: their values built as bytes into a buffer
 * first, and their scales converted into a small array, then widened and broadcast from
 * memory (so the second loop's shuffles are the widenings alone). */
enum { Q5_RUN = 8 };

/* q5_0: (float)(q - 16) * d; q - 16 formed as a signed byte (exact). */
static void dequant_q5_0_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    _Alignas(32) uint8_t q[32 * Q5_RUN];
    float d[Q5_RUN];
    for (size_t i = 0; i < n; i += Q5_RUN) {
        const size_t run = n - i < Q5_RUN ? n - i : Q5_RUN;
        for (size_t k = 0; k < run; k++) {
            const uint8_t *bk = b + sizeof(tm__block_q5_0) * k;
            d[k] = half(bk);
            _mm256_store_si256((__m256i *)(void *)(q + 32 * k),
                               _mm256_sub_epi8(q5_bytes(bk + 6, tm__rd32(bk + 2)), _mm256_set1_epi8(16)));
        }
        for (size_t k = 0; k < run; k++, dst += 32) {
            const __m256 dk = _mm256_broadcast_ss(d + k);
            for (int j = 0; j < 4; j++)
                _mm256_storeu_ps(dst + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(i8x8(q + 32 * k + 8 * j)), dk));
        }
        b += sizeof(tm__block_q5_0) * run;
    }
}

/* q5_1: (float)q * d + m. */
static void dequant_q5_1_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    _Alignas(32) uint8_t q[32 * Q5_RUN];
    float d[Q5_RUN], m[Q5_RUN];
    for (size_t i = 0; i < n; i += Q5_RUN) {
        const size_t run = n - i < Q5_RUN ? n - i : Q5_RUN;
        for (size_t k = 0; k < run; k++) {
            const uint8_t *bk = b + sizeof(tm__block_q5_1) * k;
            d[k] = half(bk);
            m[k] = half(bk + 2);
            _mm256_store_si256((__m256i *)(void *)(q + 32 * k), q5_bytes(bk + 8, tm__rd32(bk + 4)));
        }
        for (size_t k = 0; k < run; k++, dst += 32) {
            const __m256 dk = _mm256_broadcast_ss(d + k), mk = _mm256_broadcast_ss(m + k);
            for (int j = 0; j < 4; j++)
                _mm256_storeu_ps(dst + 8 * j, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(u8x8(q + 32 * k + 8 * j)), dk), mk));
        }
        b += sizeof(tm__block_q5_1) * run;
    }
}

/* q8_0: (float)q * d. */
static void dequant_q8_0_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q8_0), dst += 32) {
        const __m256 d = _mm256_set1_ps(half(b));
        const __m128i x0 = ld128(b + 2), x1 = ld128(b + 18);
        _mm256_storeu_ps(dst, _mm256_mul_ps(i8lo(x0), d));
        _mm256_storeu_ps(dst + 8, _mm256_mul_ps(i8hi(x0), d));
        _mm256_storeu_ps(dst + 16, _mm256_mul_ps(i8lo(x1), d));
        _mm256_storeu_ps(dst + 24, _mm256_mul_ps(i8hi(x1), d));
    }
}

/* ---- 256-element super-blocks -------------------------------------------------------------- */

/* The 32 bytes of v reordered so that dword lane L holds, in its byte j, byte 8j + L of v:
 * then lane L of (result >> 8j) starts with byte 8j + L, and four shifts give the four runs
 * of eight elements in order, each byte at the bottom of its lane (vpermps reads bits 0..2,
 * so no widening instruction is needed). A vpermd gathers the dwords of each half, a vpshufb
 * transposes the 4x4 bytes in each 128-bit lane. Every byte-wise operation commutes with it,
 * so it is applied to the packed input once per super-block. */
static __m256i eighths(__m256i v)
{
    const __m256i by_dword = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    return _mm256_shuffle_epi8(by_dword, _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                                          0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
}

/* 32 outputs through 8-entry tables from indices arranged by eighths(): output 8j + L is
 * table[bits 0..2 of lane L of (idx >> (8j + shift))]; outputs 0..15 use t0, 16..31 t1. */
static void lookup32(float *dst, __m256i idx, int shift, __m256 t0, __m256 t1)
{
    _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(t0, _mm256_srli_epi32(idx, shift)));
    _mm256_storeu_ps(dst + 8, _mm256_permutevar8x32_ps(t0, _mm256_srli_epi32(idx, shift + 8)));
    _mm256_storeu_ps(dst + 16, _mm256_permutevar8x32_ps(t1, _mm256_srli_epi32(idx, shift + 16)));
    _mm256_storeu_ps(dst + 24, _mm256_permutevar8x32_ps(t1, _mm256_srli_epi32(idx, shift + 24)));
}

/* q2_K: group g (16 elements) has D = d * (sc & 15), M = dmin * (sc >> 4); the table
 * T[i] = D * (i & 3) - M repeats every 4 lanes, so vpermps may use bits 0..2 of byte >> shift
 * as they are (bit 2 is the next field's, or the next byte's: either picks the same entry).
 * D and M of the 16 groups are computed once per super-block, each as the scalar code does. */
static void dequant_q2_K_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256 q = _mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3);
    const __m256i m4 = _mm256_set1_epi32(15);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q2_K)) {
        const __m256 d = _mm256_set1_ps(half(b + 80)), dmin = _mm256_set1_ps(half(b + 82));
        float dd[16], mm[16]; /* broadcast from memory: loads, not shuffles */
        for (int k = 0; k < 2; k++) {
            const __m256i sc = u8x8(b + 8 * k);
            _mm256_storeu_ps(dd + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sc, m4))));
            _mm256_storeu_ps(mm + 8 * k, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4))));
        }
        for (int h = 0, g = 0; h < 2; h++) {
            const __m256i x = eighths(ld256(b + 16 + 32 * h));
            for (int step = 0; step < 4; step++, g += 2, dst += 32)
                lookup32(dst, x, 2 * step,
                         _mm256_sub_ps(_mm256_mul_ps(_mm256_broadcast_ss(dd + g), q), _mm256_broadcast_ss(mm + g)),
                         _mm256_sub_ps(_mm256_mul_ps(_mm256_broadcast_ss(dd + g + 1), q), _mm256_broadcast_ss(mm + g + 1)));
        }
    }
}

/* q3_K: index (2 bits of qs) | (hmask bit) << 2 selects T[i] = D * (i - 4): a set mask bit
 * means q, a clear one q - 4, exactly the scalar value. The indices are built as bytes, 32 at
 * a time; D = d * (scale - 32) of the 16 groups once per super-block. */
static void dequant_q3_K_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256 q = _mm256_setr_ps(-4, -3, -2, -1, 0, 1, 2, 3);
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q3_K)) {
        uint32_t w[4];
        tm__q3_K_scale_words(b + 96, w);
        const __m256 d = _mm256_set1_ps(half(b + 108));
        float dd[16];
        for (int k = 0; k < 2; k++) {
            const __m256i sc = u8x8((const uint8_t *)w + 8 * k);
            _mm256_storeu_ps(dd + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(
                                                              _mm256_sub_epi32(sc, _mm256_set1_epi32(32)))));
        }
        const __m256i hm = eighths(ld256(b));
        for (int h = 0, g = 0; h < 2; h++) {
            const __m256i x = eighths(ld256(b + 32 + 32 * h));
            for (int step = 0; step < 4; step++, g += 2, dst += 32) {
                /* mask bit 4h + step moved to bit 2 of each byte (16-bit shifts: what crosses
                 * from the neighbouring byte is masked off) */
                const int up = 4 * h + step - 2;
                const __m256i hb = up >= 0 ? _mm256_srli_epi16(hm, up) : _mm256_slli_epi16(hm, -up);
                const __m256i idx = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(x, 2 * step), three),
                                                    _mm256_and_si256(hb, four));
                lookup32(dst, idx, 0, _mm256_mul_ps(_mm256_broadcast_ss(dd + g), q),
                         _mm256_mul_ps(_mm256_broadcast_ss(dd + g + 1), q));
            }
        }
    }
}

/* q4_K/q5_K: D = d * scale of groups 0..7 into dm[0..7], M = dmin * min into dm[8..15], each
 * as the scalar kernel rounds it; the kernels broadcast them from memory. */
static void k4_dm(const uint8_t *b, float dm[16])
{
    uint32_t w[4];
    tm__k4_scale_min_words(b + 4, w);
    const uint8_t *sm = (const uint8_t *)w;
    _mm256_storeu_ps(dm, _mm256_mul_ps(_mm256_set1_ps(half(b)), _mm256_cvtepi32_ps(u8x8(sm))));
    _mm256_storeu_ps(dm + 8, _mm256_mul_ps(_mm256_set1_ps(half(b + 2)), _mm256_cvtepi32_ps(u8x8(sm + 8))));
}

/* 8 values q -> D * q - M */
static __m256 k4_value(__m256 q, const float *d, const float *m)
{
    return _mm256_sub_ps(_mm256_mul_ps(_mm256_broadcast_ss(d), q), _mm256_broadcast_ss(m));
}

/* q4_K: (d * sc) * q - (dmin * m), one scale and min per 32 elements; each 8 bytes of qs are
 * widened once (from memory) and give 8 low nibbles of group 2p and 8 high of group 2p + 1. */
static void dequant_q4_K_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256i m4 = _mm256_set1_epi32(15);
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q4_K)) {
        float dm[16];
        k4_dm(b, dm);
        const uint8_t *qs = b + 16;
        for (int p = 0; p < 4; p++, qs += 32, dst += 64) {
            for (int k = 0; k < 4; k++) {
                const __m256i x = u8x8(qs + 8 * k);
                _mm256_storeu_ps(dst + 8 * k, k4_value(_mm256_cvtepi32_ps(_mm256_and_si256(x, m4)), dm + 2 * p, dm + 8 + 2 * p));
                _mm256_storeu_ps(dst + 32 + 8 * k, k4_value(_mm256_cvtepi32_ps(_mm256_srli_epi32(x, 4)), dm + 2 * p + 1, dm + 9 + 2 * p));
            }
        }
    }
}

/* 16-bit lanes shifted left (n > 0) or right (n < 0) */
static __m256i shift16(__m256i v, int n) { return n >= 0 ? _mm256_slli_epi16(v, n) : _mm256_srli_epi16(v, -n); }

/* q5_K: as q4_K, plus 16 when bit 2p (low-nibble group) or 2p+1 (high) of qh[l] is set. The
 * 256 values are built as bytes, 32 at a time (the qh bit moved to bit 4 by one 16-bit shift;
 * what crosses from the neighbouring byte is masked off), into a buffer from which each 8 are
 * widened straight from memory: one shuffle per 8 values, where widening from a register takes
 * two or three (the shuffle unit is what limits these kernels). */
static void dequant_q5_K_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256i m4 = _mm256_set1_epi8(15), k16 = _mm256_set1_epi8(16);
    _Alignas(32) uint8_t q[256];
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q5_K)) {
        float dm[16];
        k4_dm(b, dm);
        const __m256i qh = ld256(b + 16);
        for (int p = 0; p < 4; p++) {
            const __m256i x = ld256(b + 48 + 32 * p);
            _mm256_store_si256((__m256i *)(void *)(q + 64 * p),
                               _mm256_or_si256(_mm256_and_si256(x, m4), _mm256_and_si256(shift16(qh, 4 - 2 * p), k16)));
            _mm256_store_si256((__m256i *)(void *)(q + 64 * p + 32),
                               _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(x, 4), m4),
                                               _mm256_and_si256(shift16(qh, 3 - 2 * p), k16)));
        }
        for (int g = 0; g < 8; g++, dst += 32)
            for (int k = 0; k < 4; k++)
                _mm256_storeu_ps(dst + 8 * k, k4_value(_mm256_cvtepi32_ps(u8x8(q + 32 * g + 8 * k)), dm + g, dm + 8 + g));
    }
}

/* 32 six-bit values as signed bytes: (nibbles) | ((qh >> shift) & 3) << 4, minus 32. */
static __m256i q6_bytes(__m256i nib, __m256i qh, int shift)
{
    const __m256i h = _mm256_and_si256(shift16(qh, 4 - shift), _mm256_set1_epi8(0x30));
    return _mm256_sub_epi8(_mm256_or_si256(nib, h), _mm256_set1_epi8(32));
}

/* q6_K: per half, the four runs of 32 elements (l, l+32, l+64, l+96) built as 32 bytes each
 * into a buffer (the whole super-block first, so the widening loads find the bytes stored),
 * widened from it; each 16 elements share one scale, (d * scale) computed once per
 * super-block as the scalar code rounds it, then multiplied by q. */
static void dequant_q6_K_avx2(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    const __m256i m4 = _mm256_set1_epi8(15);
    _Alignas(32) uint8_t q[256];
    for (size_t i = 0; i < n; i++, b += sizeof(tm__block_q6_K)) {
        const __m256 d = _mm256_set1_ps(half(b + 208));
        float ds[16];
        const __m128i sc = ld128(b + 192);
        _mm256_storeu_ps(ds, _mm256_mul_ps(d, i8lo(sc)));
        _mm256_storeu_ps(ds + 8, _mm256_mul_ps(d, i8hi(sc)));
        for (int h = 0; h < 2; h++) {
            const __m256i ql0 = ld256(b + 64 * h), ql1 = ld256(b + 64 * h + 32);
            const __m256i qh = ld256(b + 128 + 32 * h);
            const __m256i runs[4] = {
                q6_bytes(_mm256_and_si256(ql0, m4), qh, 0),
                q6_bytes(_mm256_and_si256(ql1, m4), qh, 2),
                q6_bytes(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), qh, 4),
                q6_bytes(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), qh, 6),
            };
            for (int k = 0; k < 4; k++)
                _mm256_store_si256((__m256i *)(void *)(q + 128 * h + 32 * k), runs[k]);
        }
        for (int g = 0; g < 16; g++, dst += 16) {
            const __m256 s = _mm256_broadcast_ss(ds + g);
            _mm256_storeu_ps(dst, _mm256_mul_ps(s, _mm256_cvtepi32_ps(i8x8(q + 16 * g))));
            _mm256_storeu_ps(dst + 8, _mm256_mul_ps(s, _mm256_cvtepi32_ps(i8x8(q + 16 * g + 8))));
        }
    }
}

const tm__kernels tm__kernels_dequant_avx2 = {
    .dequant = {
        [TM_TYPE_F16] = dequant_f16_avx2,
        [TM_TYPE_BF16] = dequant_bf16_avx2,
        [TM_TYPE_Q4_0] = dequant_q4_0_avx2,
        [TM_TYPE_Q4_1] = dequant_q4_1_avx2,
        [TM_TYPE_Q5_0] = dequant_q5_0_avx2,
        [TM_TYPE_Q5_1] = dequant_q5_1_avx2,
        [TM_TYPE_Q8_0] = dequant_q8_0_avx2,
        [TM_TYPE_Q2_K] = dequant_q2_K_avx2,
        [TM_TYPE_Q3_K] = dequant_q3_K_avx2,
        [TM_TYPE_Q4_K] = dequant_q4_K_avx2,
        [TM_TYPE_Q5_K] = dequant_q5_K_avx2,
        [TM_TYPE_Q6_K] = dequant_q6_K_avx2,
    },
};
