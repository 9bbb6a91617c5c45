/* Blocks as every kernel file reads them: their layouts and sizes, and their fields:
 * little-endian integers, IEEE halves, the fp4 types' scales, and the packed 6-bit scales of the
 * K types and iq4_xs. The readers are all static inline: each kernel file compiles its own copy
 * with its own flags, so no AVX-512 code can be reached from a file that has not checked the CPU
 * (STYLE 2). Loads go through bytes or memcpy, never a cast pointer: blocks in a file are only
 * 2-byte aligned. */
#ifndef TM_BLOCKS_H
#define TM_BLOCKS_H

#include "tensormap.h"

#include <stdint.h>
#include <string.h>

/* ---- little-endian fields ------------------------------------------------------------------ */

static inline uint16_t tm__rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static inline uint32_t tm__rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- float bits and halves (the scalar files; SIMD files convert halves with F16C) --------- */

static inline float tm__f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t tm__f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* IEEE half -> float, exact for every pattern. A NaN keeps its payload (shifted into the top of
 * the float mantissa) and comes out quiet, as F16C's vcvtph2ps and ggml's scalar conversion
 * (whose multiply quiets a signalling NaN) both do. All three cases are computed and one is
 * selected, without branches, so the compiler can vectorize a loop of them. */
static inline float tm__half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    const uint32_t special = 0x7f800000u | man << 13 | (man ? 0x400000u : 0); /* inf, NaN */
    const uint32_t normal = (exp + 112) << 23 | man << 13;
    /* zero or subnormal: man * 2^-24, exact in float32 (man < 2^10, result normal) */
    const uint32_t small = tm__f32_bits((float)man * 0x1p-24f);
    const uint32_t is_special = 0u - (uint32_t)(exp == 0x1f), is_small = 0u - (uint32_t)(exp == 0);
    return tm__f32_from_bits(sign | (special & is_special) | (small & is_small) |
                             (normal & ~(is_special | is_small)));
}

static inline float tm__rdh(const uint8_t *p) { return tm__half_to_float(tm__rd16(p)); }

/* ---- the fp4 types' scales (mxfp4, nvfp4), halved as ggml's decoders use them ------------ */

/* An E8M0 byte as ggml's halved scale: exactly 2^(e - 128) for every e (e = 0, 1 subnormal). */
static inline float tm__e8m0_half(uint8_t e)
{
    return tm__f32_from_bits(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* A UE4M3 byte as ggml's halved scale: bit 7 is ignored, 0x00 and 0x7f are +0 (0xff is not
 * caught by that rule and gives 240); E == 0 gives M * 2^-10, else (8 + M) * 2^(E - 11). */
static inline float tm__ue4m3_half(uint8_t x)
{
    if (x == 0x00 || x == 0x7f)
        return 0.0f;
    const unsigned e = (unsigned)x >> 3 & 15, m = x & 7u;
    if (e == 0)
        return (float)m * 0x1p-10f;
    return (float)(8 + m) * tm__f32_from_bits((e - 11 + 127) << 23); /* exact power of two */
}

/* ---- the packed 6-bit scales (the K types, iq4_xs) --------------------------------------- */

/* The 6-bit scale and min of group g (0..7) of q4_K / q5_K, packed in 12 bytes: groups 0..3
 * in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); groups 4..7 in the nibbles of bytes
 * 8..11 with their top two bits in bits 6..7 of bytes 0..7. */
static inline void tm__k4_scale_min(const uint8_t *s, int g, unsigned *sc, unsigned *m)
{
    if (g < 4) {
        *sc = s[g] & 63u;
        *m = s[g + 4] & 63u;
    } else {
        *sc = (s[g + 4] & 15u) | (unsigned)(s[g - 4] >> 6) << 4;
        *m = (unsigned)(s[g + 4] >> 4) | (unsigned)(s[g] >> 6) << 4;
    }
}

/* The same eight scales and eight mins, all at once with ggml's word arithmetic: bytes 0..7 of
 * w (little-endian, so (const uint8_t *)w reads them in order) are the scales of groups 0..7,
 * bytes 8..15 their mins. */
static inline void tm__k4_scale_min_words(const uint8_t *s12, uint32_t w[4])
{
    const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t a0 = tm__rd32(s12), a1 = tm__rd32(s12 + 4), a2 = tm__rd32(s12 + 8);
    w[0] = a0 & m6;
    w[1] = (a2 & m4) | ((a0 >> 6) & m2) << 4;
    w[2] = a1 & m6;
    w[3] = ((a2 >> 4) & m4) | ((a1 >> 6) & m2) << 4;
}

/* The 6-bit scale of iq4_xs group g (0..7), before ggml's "- 32": a nibble of scales_l (even
 * groups the low one) with its two high bits from the u16 scales_h. b is the block. */
static inline int tm__iq4_xs_scale(const uint8_t *b, unsigned g)
{
    const unsigned sh = tm__rd16(b + 2);
    return (int)(((unsigned)b[4 + g / 2] >> 4 * (g % 2) & 15) | (sh >> 2 * g & 3) << 4);
}

/* The sixteen 6-bit scales of q3_K (0..63, before ggml's "- 32"): low 4 bits in bytes 0..7,
 * high 2 bits in bytes 8..11, unpacked as ggml does with three little-endian words. Byte k of
 * the four result words (little-endian) is scale k. */
static inline void tm__q3_K_scale_words(const uint8_t *s12, uint32_t w[4])
{
    const uint32_t m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t a0 = tm__rd32(s12), a1 = tm__rd32(s12 + 4), a2 = tm__rd32(s12 + 8);
    w[0] = (a0 & m4) | ((a2 >> 0 & m2) << 4);
    w[1] = (a1 & m4) | ((a2 >> 2 & m2) << 4);
    w[2] = (a0 >> 4 & m4) | ((a2 >> 4 & m2) << 4);
    w[3] = (a1 >> 4 & m4) | ((a2 >> 6 & m2) << 4);
}

/* ---- the blocks ----------------------------------------------------------------------------
 * Each block as ggml lays it out (../shared/FORMATS.md, ../shared/formats/FORMATS-more.md), in
 * byte arrays only, so a struct has no padding and its size is the block's size in a file. The
 * kernels step from block to block by it (b += sizeof(tm__block_q4_0)) and read the fields with
 * the readers above: a struct is never laid over the data, whose blocks are 2-byte aligned.
 * Each size is checked against the number ggml gives (from the format texts, not from this
 * library's type list, which the second check holds to the same numbers). */

#define TM__BLOCK_BYTES_OF(name, id, text, block_elems, block_bytes) \
    TM__TYPE_BYTES_##name = (block_bytes),
enum { TM_GGML_TYPE_LIST(TM__BLOCK_BYTES_OF) };
#undef TM__BLOCK_BYTES_OF

/* sizeof(tm__block_<type>) is ggml's bytes, and the type list in tensormap.h agrees */
#define TM__BLOCK_IS(type, TYPE, ggml_bytes)                                                    \
    _Static_assert(sizeof(tm__block_##type) == (ggml_bytes),                                    \
                   "ggml's block_" #type " is " #ggml_bytes " bytes");                          \
    _Static_assert(TM__TYPE_BYTES_##TYPE == (ggml_bytes),                                       \
                   "tensormap.h's " #type " block is not ggml's " #ggml_bytes " bytes")

/* 32-element blocks: a half scale d (and a half min m), 16 bytes of nibbles, q5's fifth bits */
typedef struct { uint8_t d[2], qs[16]; } tm__block_q4_0;
typedef struct { uint8_t d[2], m[2], qs[16]; } tm__block_q4_1;
typedef struct { uint8_t d[2], qh[4], qs[16]; } tm__block_q5_0;
typedef struct { uint8_t d[2], m[2], qh[4], qs[16]; } tm__block_q5_1;
typedef struct { uint8_t d[2], qs[32]; } tm__block_q8_0;
TM__BLOCK_IS(q4_0, Q4_0, 18);
TM__BLOCK_IS(q4_1, Q4_1, 20);
TM__BLOCK_IS(q5_0, Q5_0, 22);
TM__BLOCK_IS(q5_1, Q5_1, 24);
TM__BLOCK_IS(q8_0, Q8_0, 34);

/* 256-element K super-blocks */
typedef struct { uint8_t scales[16], qs[64], d[2], dmin[2]; } tm__block_q2_K;
typedef struct { uint8_t hmask[32], qs[64], scales[12], d[2]; } tm__block_q3_K;
typedef struct { uint8_t d[2], dmin[2], scales[12], qs[128]; } tm__block_q4_K;
typedef struct { uint8_t d[2], dmin[2], scales[12], qh[32], qs[128]; } tm__block_q5_K;
typedef struct { uint8_t ql[128], qh[64], scales[16], d[2]; } tm__block_q6_K;
TM__BLOCK_IS(q2_K, Q2_K, 84);
TM__BLOCK_IS(q3_K, Q3_K, 110);
TM__BLOCK_IS(q4_K, Q4_K, 144);
TM__BLOCK_IS(q5_K, Q5_K, 176);
TM__BLOCK_IS(q6_K, Q6_K, 210);

/* the grid i-quants (256 elements) */
typedef struct { uint8_t d[2], qs[64]; } tm__block_iq2_xxs;
typedef struct { uint8_t d[2], qs[64], scales[8]; } tm__block_iq2_xs;
typedef struct { uint8_t d[2], qs[32], signs[32], qh[8], scales[8]; } tm__block_iq2_s;
typedef struct { uint8_t d[2], qs[64], scales_and_signs[32]; } tm__block_iq3_xxs;
typedef struct { uint8_t d[2], qs[64], qh[8], signs[32], scales[4]; } tm__block_iq3_s;
typedef struct { uint8_t d[2], qs[32], qh[16]; } tm__block_iq1_s;
typedef struct { uint8_t qs[32], qh[16], scales[8]; } tm__block_iq1_m;
TM__BLOCK_IS(iq2_xxs, IQ2_XXS, 66);
TM__BLOCK_IS(iq2_xs, IQ2_XS, 74);
TM__BLOCK_IS(iq2_s, IQ2_S, 82);
TM__BLOCK_IS(iq3_xxs, IQ3_XXS, 98);
TM__BLOCK_IS(iq3_s, IQ3_S, 110);
TM__BLOCK_IS(iq1_s, IQ1_S, 50);
TM__BLOCK_IS(iq1_m, IQ1_M, 56);

/* value-table, fp4, ternary and 1-/2-bit blocks */
typedef struct { uint8_t d[2], qs[16]; } tm__block_iq4_nl;
typedef struct { uint8_t d[2], scales_h[2], scales_l[4], qs[128]; } tm__block_iq4_xs;
typedef struct { uint8_t e, qs[16]; } tm__block_mxfp4;
typedef struct { uint8_t d[4], qs[32]; } tm__block_nvfp4;
typedef struct { uint8_t qs[48], qh[4], d[2]; } tm__block_tq1_0;
typedef struct { uint8_t qs[64], d[2]; } tm__block_tq2_0;
typedef struct { uint8_t d[2], qs[16]; } tm__block_q1_0;
typedef struct { uint8_t d[2], qs[16]; } tm__block_q2_0;
TM__BLOCK_IS(iq4_nl, IQ4_NL, 18);
TM__BLOCK_IS(iq4_xs, IQ4_XS, 136);
TM__BLOCK_IS(mxfp4, MXFP4, 17);
TM__BLOCK_IS(nvfp4, NVFP4, 36);
TM__BLOCK_IS(tq1_0, TQ1_0, 54);
TM__BLOCK_IS(tq2_0, TQ2_0, 66);
TM__BLOCK_IS(q1_0, Q1_0, 18);
TM__BLOCK_IS(q2_0, Q2_0, 18);
#undef TM__BLOCK_IS

#endif /* TM_BLOCKS_H */
